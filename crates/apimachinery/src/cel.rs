//! CEL as Kubernetes admission uses it (ValidatingAdmissionPolicy
//! validations, messageExpressions, variables and audit annotations;
//! webhook and policy matchConditions), over the `cel` crate.
//!
//! The environment is the CEL standard library with its macros (`has`,
//! `all`, `exists`, `exists_one`, `map`, `filter`), plus the strings,
//! lists and math extension libraries Kubernetes enables. Not modelled:
//! cel-go's type checker (so a misspelt field or a wrong type shows at
//! evaluation, not at compile time), the cost budget, and the Kubernetes
//! libraries `authorizer`, `quantity`, `url`, `ip`/`cidr` and `format`.
//!
//! Compile errors read as upstream's: `compilation failed: ERROR:
//! <input>:L:C: Syntax error: …`.

use std::sync::{Arc, OnceLock};

use serde_json::Value;

/// The shared CEL environment (standard library and extensions).
fn env() -> &'static Arc<cel::Env> {
    static ENV: OnceLock<Arc<cel::Env>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = cel::Env::stdlib();
        // The extension libraries register disjoint overloads; a failure
        // would be a programming error in the crate, so it is skipped.
        let _ = env.add_extension(cel::extensions::strings);
        let _ = env.add_extension(cel::extensions::lists);
        let _ = env.add_extension(cel::extensions::math);
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
        match env().compile(source) {
            Ok(program) => Ok(Expression { program, source: source.to_string() }),
            // cel-go indents the source snippet lines as ` | `.
            Err(e) => Err(format!("compilation failed: {e}").replace("\n| ", "\n | ")),
        }
    }

    /// The source text.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Evaluates like [`Expression::eval`], giving the result as JSON.
    pub fn eval_json(&self, variables: &[(&str, &Value)]) -> Result<Value, String> {
        Ok(from_cel(&self.execute(variables)?))
    }

    fn execute(&self, variables: &[(&str, &Value)]) -> Result<cel::Value, String> {
        let mut ctx = cel::Context::with_env(env().clone());
        for (name, value) in variables {
            ctx.add_variable_from_value(*name, to_cel(value));
        }
        self.program.execute(&ctx).map_err(|e| lower_first(&e.to_string()))
    }

    /// Evaluates with the `variables` bound (JSON values, `null` for an
    /// absent object). The error is the evaluation error's text.
    pub fn eval(&self, variables: &[(&str, &Value)]) -> Result<Outcome, String> {
        Ok(match self.execute(variables)? {
            cel::Value::Bool(b) => Outcome::Bool(b),
            cel::Value::String(s) => Outcome::String(s.to_string()),
            cel::Value::Null => Outcome::Null,
            other => Outcome::Other(format!("{:?}", other.type_of()).to_lowercase()),
        })
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

/// A CEL value back as JSON (variables hold their results this way);
/// values JSON cannot carry (bytes, functions, opaque) become `null`.
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
mod tests {
    use super::*;
    use serde_json::json;

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
        assert_eq!(eval("[3, 1].sort()[0] == 1", d.clone()), Ok(Outcome::Bool(true)));
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
