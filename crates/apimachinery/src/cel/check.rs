//! The part of cel-go's type checker Kubernetes' compile step relies on
//! most: every function an expression calls must be declared. A call to an
//! unknown function fails compilation with upstream's
//! `ERROR: <input>:L:C: undeclared reference to 'f' (in container '')`.
//!
//! Functions of upstream's 1.33 environment that the cel crate lacks
//! ([`KNOWN_ELSEWHERE`]) still compile, and fail at evaluation, as before
//! this check existed.
//!
//! A `matches` with a literal pattern that is not a regular expression
//! fails too ([`invalid_regex_literal`]).
//!
//! Where the caller knows its variables (ValidatingAdmissionPolicy),
//! [`undeclared_variable`] finds an identifier that is neither one of them,
//! a comprehension's variable, nor a type name, as cel-go reports it.

use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};
use cel::{Context, Env, Program};

/// Functions of Kubernetes' 1.33 CEL environment the cel crate does not
/// provide (timestamps, durations, the image library, two-variable
/// comprehensions): accepted at compile time, failing at evaluation.
const KNOWN_ELSEWHERE: [&str; 26] = [
    "timestamp",
    "duration",
    "getDate",
    "getDayOfMonth",
    "getDayOfWeek",
    "getDayOfYear",
    "getFullYear",
    "getHours",
    "getMilliseconds",
    "getMinutes",
    "getMonth",
    "getSeconds",
    "image",
    "isImage",
    "containsDigest",
    "registry",
    "repository",
    "identifier",
    "tag",
    "digest",
    "all",
    "exists",
    "existsOne",
    "transformList",
    "transformMap",
    "transformMapEntry",
];

/// Functions the cel crate declares that Kubernetes' 1.33 environment does
/// not have (strings extension version 3's `reverse`): undeclared, as
/// upstream.
const NOT_IN_KUBERNETES: [&str; 1] = ["reverse"];

/// The first call in `program` to a function `env` does not declare, as
/// `(name, byte offset of the call)`.
pub fn undeclared_function(env: &std::sync::Arc<Env>, program: &Program) -> Option<(String, u32)> {
    let mut probe = Context::with_env(env.clone());
    let mut declared = |name: &str| -> bool {
        // `add_function` refuses exactly the names the `Env` declares.
        name.starts_with(['_', '@', '!', '-'])
            || KNOWN_ELSEWHERE.contains(&name)
            || (!NOT_IN_KUBERNETES.contains(&name) && probe.add_function(name, || false).is_err())
    };
    let mut found = None;
    walk(program.expression(), &mut |e| {
        if found.is_some() {
            return;
        }
        if let Expr::Call(call) = &e.expr {
            // `ip.isCanonical(x)` parses as a member call on `ip`.
            let qualified =
                call.target.as_ref().and_then(|t| qualified_name(&t.expr)).map(|q| format!("{q}.{}", call.func_name));
            let ok = declared(&call.func_name) || qualified.as_deref().is_some_and(&mut declared);
            if !ok {
                let offset = program.source_info().offset_for(e.id).map(|(start, _)| start).unwrap_or(0);
                found = Some((call.func_name.clone(), offset));
            }
        }
    });
    found
}

/// Identifiers that name types (`type(x) == int`).
const TYPE_NAMES: [&str; 12] =
    ["int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type", "dyn", "optional_type"];

/// The first identifier in `program` that is not in `declared`, bound by a
/// comprehension (macros), a type name, or the namespace of a declared
/// function (`math` in `math.greatest(…)`), as `(name, byte offset)`.
pub fn undeclared_variable(env: &std::sync::Arc<Env>, program: &Program, declared: &[&str]) -> Option<(String, u32)> {
    let mut probe = Context::with_env(env.clone());
    let mut is_function = |name: &str| KNOWN_ELSEWHERE.contains(&name) || probe.add_function(name, || false).is_err();
    let mut scope: Vec<String> = Vec::new();
    let found = scoped(program.expression(), &mut scope, declared, &mut is_function)?;
    let offset = program.source_info().offset_for(found.0).map(|(start, _)| start).unwrap_or(0);
    Some((found.1, offset))
}

/// [`undeclared_variable`]'s walk: `(id, name)` of the first undeclared
/// identifier, with `scope` the comprehension variables in force.
fn scoped(
    e: &IdedExpr,
    scope: &mut Vec<String>,
    declared: &[&str],
    is_function: &mut dyn FnMut(&str) -> bool,
) -> Option<(u64, String)> {
    match &e.expr {
        Expr::Ident(name) => {
            let known = declared.contains(&name.as_str())
                || scope.iter().any(|s| s == name)
                || TYPE_NAMES.contains(&name.as_str())
                || name.starts_with(['@', '#']);
            (!known).then(|| (e.id, name.clone()))
        }
        Expr::Call(call) => {
            if let Some(t) = &call.target {
                let namespace =
                    qualified_name(&t.expr).is_some_and(|q| is_function(&format!("{q}.{}", call.func_name)));
                if !namespace {
                    if let Some(found) = scoped(t, scope, declared, is_function) {
                        return Some(found);
                    }
                }
            }
            call.args.iter().find_map(|a| scoped(a, scope, declared, is_function))
        }
        Expr::Comprehension(c) => {
            if let Some(found) = scoped(&c.iter_range, scope, declared, is_function)
                .or_else(|| scoped(&c.accu_init, scope, declared, is_function))
            {
                return Some(found);
            }
            let depth = scope.len();
            scope.push(c.iter_var.clone());
            scope.extend(c.iter_var2.clone());
            scope.push(c.accu_var.clone());
            let found = [&c.loop_cond, &c.loop_step, &c.result]
                .into_iter()
                .find_map(|sub| scoped(sub, scope, declared, is_function));
            scope.truncate(depth);
            found
        }
        Expr::List(l) => l.elements.iter().find_map(|a| scoped(a, scope, declared, is_function)),
        Expr::Map(m) => m.entries.iter().find_map(|entry| match &entry.expr {
            EntryExpr::StructField(field) => scoped(&field.value, scope, declared, is_function),
            EntryExpr::MapEntry(me) => scoped(&me.key, scope, declared, is_function)
                .or_else(|| scoped(&me.value, scope, declared, is_function)),
        }),
        Expr::Select(s) => scoped(&s.operand, scope, declared, is_function),
        _ => None,
    }
}

/// cel-go's `ValidateRegexLiterals` (in Kubernetes' environment since
/// 1.29): the first `matches` whose pattern is a string literal that does
/// not compile, as `(message, byte offset of the pattern)`.
pub fn invalid_regex_literal(program: &Program) -> Option<(String, u32)> {
    let mut found = None;
    walk(program.expression(), &mut |e| {
        let Expr::Call(call) = &e.expr else { return };
        if found.is_some() || call.func_name != "matches" {
            return;
        }
        let pattern = if call.target.is_some() { call.args.first() } else { call.args.get(1) };
        if let Some(IdedExpr { id, expr: Expr::Literal(LiteralValue::String(p)) }) = pattern {
            if regex::Regex::new(p.inner()).is_err() {
                let offset = program.source_info().offset_for(*id).map(|(start, _)| start).unwrap_or(0);
                found = Some(("invalid matches argument".to_string(), offset));
            }
        }
    });
    found
}

/// `a.b.c` as written, if `e` is an identifier or selections on one.
fn qualified_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Ident(name) => Some(name.clone()),
        Expr::Select(s) if !s.test => Some(format!("{}.{}", qualified_name(&s.operand.expr)?, s.field)),
        _ => None,
    }
}

/// Visits `e` and every expression under it, outermost first.
fn walk(e: &IdedExpr, f: &mut dyn FnMut(&IdedExpr)) {
    f(e);
    match &e.expr {
        Expr::Call(call) => {
            if let Some(t) = &call.target {
                walk(t, f);
            }
            call.args.iter().for_each(|a| walk(a, f));
        }
        Expr::Comprehension(c) => {
            for sub in [&c.iter_range, &c.accu_init, &c.loop_cond, &c.loop_step, &c.result] {
                walk(sub, f);
            }
        }
        Expr::List(l) => l.elements.iter().for_each(|a| walk(a, f)),
        Expr::Map(m) => m.entries.iter().for_each(|entry| walk_entry(&entry.expr, f)),
        Expr::Struct(s) => s.entries.iter().for_each(|entry| walk_entry(&entry.expr, f)),
        Expr::Select(s) => walk(&s.operand, f),
        _ => {}
    }
}

fn walk_entry(e: &EntryExpr, f: &mut dyn FnMut(&IdedExpr)) {
    match e {
        EntryExpr::StructField(field) => walk(&field.value, f),
        EntryExpr::MapEntry(entry) => {
            walk(&entry.key, f);
            walk(&entry.value, f);
        }
    }
}

/// `offset` (in characters) as cel-go's 1-based `line:column`.
pub fn line_column(source: &str, offset: u32) -> (usize, usize) {
    let mut line = 1;
    let mut column = 1;
    for c in source.chars().take(offset as usize) {
        if c == '\n' {
            line += 1;
            column = 1;
        } else {
            column += 1;
        }
    }
    (line, column)
}
