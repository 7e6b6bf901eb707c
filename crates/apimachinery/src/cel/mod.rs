//! CEL as Kubernetes admission uses it (ValidatingAdmissionPolicy
//! validations, messageExpressions, variables and audit annotations;
//! webhook and policy matchConditions), over the `cel` crate.
//!
//! The environment is upstream's 1.33 base environment
//! (`k8s.io/apiserver/pkg/cel/environment/base.go`) as far as the cel
//! crate carries it: the CEL standard library with its macros (`has`,
//! `all`, `exists`, `exists_one`, `map`, `filter`) and optional types,
//! the strings extension, cel-go's [`sets`], and the Kubernetes libraries:
//! [`quantity`], [`semver`], [`url`], IP and CIDR ([`net`]), regex and
//! lists ([`lists`]), [`format`] and the `authorizer` ([`authz`]). Like
//! upstream, there is no math extension, no cel-go lists extension and no
//! `cel.bind`. Compiling refuses a call to an undeclared function as
//! cel-go's checker does, and, where the caller declares its variables,
//! an undeclared identifier ([`check`]); the rest of cel-go's type checker
//! (a misspelt field or a wrong type shows at evaluation, not at compile
//! time) and the cost budget are not modelled, nor are timestamps,
//! durations, two-variable comprehensions and the image library
//! (they compile and fail at evaluation). The strings extension is the
//! crate's; its `reverse`, which Kubernetes 1.33 lacks, does not compile.
//!
//! Compile errors read as upstream's: `compilation failed: ERROR:
//! <input>:L:C: …` with the source line and a caret under the column.

pub mod authz;
pub mod check;
pub mod format;
pub mod lists;
pub mod net;
pub mod quantity;
pub mod semver;
pub mod sets;
pub mod url;
mod values;

use std::sync::{Arc, OnceLock};

use serde_json::Value;

/// The shared CEL environment (standard library, extensions and the
/// Kubernetes libraries).
fn env() -> &'static Arc<cel::Env> {
    static ENV: OnceLock<Arc<cel::Env>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = cel::Env::stdlib();
        // The libraries register disjoint overloads; a failure would be a
        // programming error, which debug builds (the tests) report.
        type Library = fn(&mut cel::Env) -> Result<(), cel::DeclarationError>;
        let libraries: [(&str, Library); 9] = [
            ("strings", cel::extensions::strings),
            ("sets", sets::register),
            ("quantity", quantity::register),
            ("semver", semver::register),
            ("url", url::register),
            ("net", net::register),
            ("kubernetes lists", lists::register),
            ("format", format::register),
            ("authz", authz::register),
        ];
        for (name, library) in libraries {
            let registered = env.add_extension(library);
            debug_assert!(registered.is_ok(), "CEL library {name}: {registered:?}");
        }
        Arc::new(env)
    })
}

/// One compiled expression with the source it came from.
#[derive(Debug)]
pub struct Expression {
    program: cel::Program,
    source: String,
}

/// What an expression evaluated to, as the admission code needs it.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// A boolean.
    Bool(bool),
    /// A string.
    String(String),
    /// `null`.
    Null,
    /// Anything else, by its CEL type name (`int`, `list`, …).
    Other(String),
}

impl Expression {
    /// Compiles `source`; the error is upstream's
    /// `compilation failed: ERROR: <input>:L:C: …` text.
    pub fn compile(source: &str) -> Result<Expression, String> {
        Self::compile_checked(source, None)
    }

    /// [`Expression::compile`] that also refuses an identifier other than
    /// the `variables` declared (and comprehension variables and type
    /// names), with cel-go's `undeclared reference to 'x'` error.
    pub fn compile_with_variables(source: &str, variables: &[&str]) -> Result<Expression, String> {
        Self::compile_checked(source, Some(variables))
    }

    fn compile_checked(source: &str, variables: Option<&[&str]>) -> Result<Expression, String> {
        let program = match env().compile(source) {
            Ok(program) => program,
            // cel-go indents the source snippet lines as ` | `.
            Err(e) => return Err(format!("compilation failed: {e}").replace("\n| ", "\n | ")),
        };
        let undeclared = check::undeclared_function(env(), &program)
            .or_else(|| variables.and_then(|vars| check::undeclared_variable(env(), &program, vars)))
            .map(|(name, offset)| (format!("undeclared reference to '{name}' (in container '')"), offset));
        if let Some((message, offset)) = undeclared.or_else(|| check::invalid_regex_literal(&program)) {
            let (line, column) = check::line_column(source, offset);
            let text = source.lines().nth(line - 1).unwrap_or("");
            return Err(format!(
                "compilation failed: ERROR: <input>:{line}:{column}: {message}\n | {text}\n | {}^",
                ".".repeat(column - 1)
            ));
        }
        Ok(Expression { program, source: source.to_string() })
    }

    /// The source text.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Evaluates like [`Expression::eval`], giving the result as JSON.
    pub fn eval_json(&self, variables: &[(&str, &Value)]) -> Result<Value, String> {
        Ok(from_cel(&self.execute(variables, None, None)?))
    }

    fn execute(
        &self,
        variables: &[(&str, &Value)],
        composited: Option<&Composited>,
        authz: Option<&authz::Binding>,
    ) -> Result<cel::Value, String> {
        let mut ctx = cel::Context::with_env(env().clone());
        for (name, value) in variables {
            ctx.add_variable_from_value(*name, to_cel(value));
        }
        if let Some(c) = composited {
            ctx.add_variable_from_value("variables", cel::Value::from(c.values.clone()));
        }
        if let Some(binding) = authz {
            for (name, value) in binding.variables() {
                ctx.add_variable_from_value(name, value);
            }
        }
        self.program.execute(&ctx).map_err(|e| match e {
            // The libraries' errors are upstream's messages as they are.
            cel::ExecutionError::FunctionError { function, message } if function.is_empty() => message,
            e => lower_first(&e.to_string()),
        })
    }

    /// Evaluates with the `variables` bound (JSON values, `null` for an
    /// absent object). The error is the evaluation error's text.
    pub fn eval(&self, variables: &[(&str, &Value)]) -> Result<Outcome, String> {
        self.eval_with(variables, None)
    }

    /// [`Expression::eval`] with `authorizer` (and
    /// `authorizer.requestResource`) bound when `authz` is given.
    pub fn eval_with(&self, variables: &[(&str, &Value)], authz: Option<&authz::Binding>) -> Result<Outcome, String> {
        self.eval_in(variables, None, authz)
    }

    /// [`Expression::eval_with`] with the policy's `variables` bound to
    /// `composited` when given.
    pub fn eval_in(
        &self,
        variables: &[(&str, &Value)],
        composited: Option<&Composited>,
        authz: Option<&authz::Binding>,
    ) -> Result<Outcome, String> {
        Ok(outcome(self.execute(variables, composited, authz)?))
    }

    /// Evaluates as [`Expression::eval_in`] and keeps the result, typed
    /// (a quantity stays a quantity), as `variables.<name>` in
    /// `composited`.
    pub fn eval_into(
        &self,
        name: &str,
        variables: &[(&str, &Value)],
        composited: &mut Composited,
        authz: Option<&authz::Binding>,
    ) -> Result<(), String> {
        let value = self.execute(variables, Some(composited), authz)?;
        composited.values.insert(name.to_string(), value);
        Ok(())
    }
}

/// The values of a policy's `spec.variables` so far (upstream's
/// composited variables), bound as `variables`.
#[derive(Clone, Debug, Default)]
pub struct Composited {
    values: std::collections::HashMap<String, cel::Value>,
}

impl Composited {
    /// No variables yet.
    pub fn new() -> Composited {
        Composited::default()
    }
}

fn outcome(v: cel::Value) -> Outcome {
    match v {
        cel::Value::Bool(b) => Outcome::Bool(b),
        cel::Value::String(s) => Outcome::String(s.to_string()),
        cel::Value::Null => Outcome::Null,
        other => Outcome::Other(format!("{:?}", other.type_of()).to_lowercase()),
    }
}

/// A JSON value as Kubernetes hands objects to CEL: integers are `int`
/// (`uint` only beyond `i64`), other numbers `double`.
fn to_cel(v: &Value) -> cel::Value {
    match v {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => cel::Value::Int(i),
            (None, Some(u)) => cel::Value::UInt(u),
            _ => cel::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => cel::Value::String(Arc::new(s.clone())),
        Value::Array(items) => cel::Value::List(Arc::new(items.iter().map(to_cel).collect())),
        Value::Object(m) => {
            let map: std::collections::HashMap<String, cel::Value> =
                m.iter().map(|(k, v)| (k.clone(), to_cel(v))).collect();
            cel::Value::from(map)
        }
    }
}

/// A CEL value back as JSON; values JSON cannot carry (bytes, functions,
/// opaque) become `null`.
fn from_cel(v: &cel::Value) -> Value {
    match v {
        cel::Value::Null => Value::Null,
        cel::Value::Bool(b) => Value::Bool(*b),
        cel::Value::Int(i) => Value::from(*i),
        cel::Value::UInt(u) => Value::from(*u),
        cel::Value::Float(f) => serde_json::Number::from_f64(*f).map(Value::Number).unwrap_or(Value::Null),
        cel::Value::String(s) => Value::String(s.to_string()),
        cel::Value::List(items) => Value::Array(items.iter().map(from_cel).collect()),
        cel::Value::Map(m) => Value::Object(
            m.map
                .iter()
                .map(|(k, v)| {
                    let key = match k {
                        cel::objects::Key::String(s) => s.to_string(),
                        other => format!("{other:?}"),
                    };
                    (key, from_cel(v))
                })
                .collect(),
        ),
        _ => Value::Null,
    }
}

/// Go error strings start lower-case (`no such key: x`).
fn lower_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// Compiles and evaluates `src` without variables, as JSON (opaque
    /// values as `null`).
    pub(crate) fn eval_str(src: &str) -> Result<Value, String> {
        Expression::compile(src)?.eval_json(&[])
    }

    #[test]
    fn undeclared_variables_fail_compilation_when_variables_are_known() {
        let vars = ["object", "oldObject", "request", "authorizer"];
        assert_eq!(
            Expression::compile_with_variables("objct.spec.replicas < 5", &vars).unwrap_err(),
            "compilation failed: ERROR: <input>:1:1: undeclared reference to 'objct' (in container '')\n | objct.spec.replicas < 5\n | ^"
        );
        let err = Expression::compile_with_variables("object.x == params.y", &vars).unwrap_err();
        assert!(err.starts_with("compilation failed: ERROR: <input>:1:13: undeclared reference to 'params'"), "{err}");
        for ok in [
            "object.spec.containers.all(c, c.name.startsWith('a')) && [1, 2].map(x, x * 2).exists(y, y == 4)",
            "type(object) == map && sets.contains([1], [1]) && ip.isCanonical('::1') && format.named('uuid').hasValue()",
            "authorizer.requestResource.check('get').allowed()",
            "optional.of(1).hasValue() && strings.quote('a') != ''",
        ] {
            let r = Expression::compile_with_variables(ok, &vars);
            assert!(r.is_ok(), "{ok}: {:?}", r.err());
        }
    }

    #[test]
    fn unknown_functions_fail_compilation_as_upstream() {
        assert_eq!(
            Expression::compile("ipx(self).family() == 6").unwrap_err(),
            "compilation failed: ERROR: <input>:1:4: undeclared reference to 'ipx' (in container '')\n | ipx(self).family() == 6\n | ...^"
        );
        // Not in Kubernetes' 1.33 environment.
        for src in ["math.greatest(1, 2) == 2", "[2, 1].sort() == [1, 2]", "cel.bind(x, 1, x) == 1", "'ab'.reverse()"] {
            let err = Expression::compile(src).unwrap_err();
            assert!(err.contains("undeclared reference to '"), "{src}: {err}");
        }
        assert_eq!(
            Expression::compile("object.x.matches('(a')").unwrap_err(),
            "compilation failed: ERROR: <input>:1:18: invalid matches argument\n | object.x.matches('(a')\n | .................^"
        );
        assert!(Expression::compile("matches(object.x, '[')").unwrap_err().contains("invalid matches argument"));
        assert!(Expression::compile("object.x.matches(object.pattern)").is_ok());
        let err = Expression::compile("object.metadata.name.nope()").unwrap_err();
        assert!(err.contains("undeclared reference to 'nope' (in container '')"), "{err}");
        for ok in [
            "size(object.x) > 0 && object.x.startsWith('a') && object.x.matches('^a') && int('1') == 1",
            "string(1) == '1' && double(1) == 1.0 && uint(1) == 1u && type(1) == int && dyn(1) == 1",
            "[1].exists(x, x > 0) && [1].all(x, x > 0) && [1].map(x, x + 1) == [2] && has(object.x)",
            "'a'.contains('a') && 'a'.endsWith('a') && bytes('a') == b'a' && bool('true')",
            "optional.of(1).hasValue() && optional.none().orValue(2) == 2 && [1].filter(x, x > 0).size() == 1",
            "quantity('1').isInteger() && isURL('/x') && ip.isCanonical('::1') && cidr('10.0.0.0/8').prefixLength() == 8",
            "format.named('uuid').hasValue() && format.dns1123Label().validate('x').hasValue()",
            "authorizer.group('').resource('pods').check('get').allowed()",
            "authorizer.requestResource.check('get').allowed()",
            "'a,b'.split(',').size() == 2 && sets.intersects([1], [1, 2])",
            "timestamp('2024-01-01T00:00:00Z') > timestamp('2023-01-01T00:00:00Z')",
        ] {
            assert!(Expression::compile(ok).is_ok(), "{ok}: {:?}", Expression::compile(ok).err());
        }
    }

    fn eval(src: &str, obj: Value) -> Result<Outcome, String> {
        Expression::compile(src).unwrap().eval(&[("object", &obj), ("oldObject", &Value::Null)])
    }

    #[test]
    fn kubernetes_style_expressions() {
        let d = json!({"metadata": {"name": "web", "labels": {"app": "x"}}, "spec": {"replicas": 6}});
        assert_eq!(eval("object.spec.replicas <= 5", d.clone()), Ok(Outcome::Bool(false)));
        assert_eq!(eval("has(object.spec.paused)", d.clone()), Ok(Outcome::Bool(false)));
        assert_eq!(eval("object.metadata.name.startsWith('we')", d.clone()), Ok(Outcome::Bool(true)));
        assert_eq!(eval("object.metadata.name.matches('^w.b$')", d.clone()), Ok(Outcome::Bool(true)));
        assert_eq!(eval("object.metadata.labels.all(k, k == 'app')", d.clone()), Ok(Outcome::Bool(true)));
        assert_eq!(eval("oldObject == null", d.clone()), Ok(Outcome::Bool(true)));
        assert_eq!(eval("object.metadata.name.upperAscii()", d.clone()), Ok(Outcome::String("WEB".into())));
        assert_eq!(eval("object.spec.replicas <= int('5')", d.clone()), Ok(Outcome::Bool(false)));
        assert_eq!(eval("[3, 1].isSorted()", d.clone()), Ok(Outcome::Bool(false)));
        let e = Expression::compile("{'a': [1, 'x']}").unwrap();
        assert_eq!(e.eval_json(&[]), Ok(serde_json::json!({"a": [1, "x"]})));
        assert_eq!(eval("object.spec.replicas", d.clone()), Ok(Outcome::Other("int".into())));
        assert_eq!(eval("object.spec.replicas + 1 == 7", d.clone()), Ok(Outcome::Bool(true)));
        let err = eval("object.spec.missing > 1", d).unwrap_err();
        assert!(err.contains("missing"), "{err}");
    }

    #[test]
    fn syntax_errors_read_as_upstream() {
        let err = Expression::compile("object.spec ==").unwrap_err();
        assert_eq!(
            err,
            "compilation failed: ERROR: <input>:1:15: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | object.spec ==\n | ..............^"
        );
    }
}
