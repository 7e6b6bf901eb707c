//! Validation of JSON values against a structural CRD schema, and of the
//! `default` values inside a CRD schema.
//!
//! [`validate_value`] follows upstream's kube-openapi `SchemaValidator`
//! (`k8s.io/kube-openapi/pkg/validation/validate`, with `in` = `body` and
//! an empty root path) and apiextensions-apiserver's conversion of its
//! result into field errors (`kubeOpenAPIResultToFieldErrors`): the same
//! checks in the same order, the same message texts (`spec.replicas in
//! body must be of type integer: "string"`) and error types. It can serve
//! custom resources as well as defaults.
//!
//! [`validate_defaults`] follows upstream's `ValidateDefaults`
//! (`pkg/apiserver/schema/defaulting/validation.go`): every `default` under
//! `properties` and `items` (not under `additionalProperties`, as upstream)
//! must have no fields pruning would drop (`must not have unknown fields`)
//! and must validate against its own sub-schema.
//!
//! `allOf`/`anyOf`/`oneOf`/`not` are evaluated; where several alternatives
//! fail, upstream reports the errors of the one with most passing checks,
//! this module those of the first failing one.
//!
//! Defaults of embedded resources, and defaults inside their `apiVersion`,
//! `kind` and `metadata` (placed in a surrounding object, as upstream
//! does: `must result in valid metadata: …`), pass upstream's
//! `objectmeta.Validate` first ([`validate_embedded_meta`]).
//!
//! Not done: `x-kubernetes-validations` rules on defaults (needs a CEL
//! evaluator), `objectmeta.Coerce`'s decoding errors for wrongly typed
//! metadata fields (a wrongly typed `name` is reported by the value
//! validator instead), the formats beyond `byte`, `ipv4`, `ipv6`,
//! `cidr` and `date` (upstream knows more, e.g. `uuid`, `email`,
//! `date-time`; those are accepted unchecked here), and the int32/float range
//! checks of `format`ted numbers.

use serde_json::{Map, Value};

use super::super::field::{go_quote, BadValue, ErrorList, FieldError, Path};
use super::{is_true, map_of, str_of};

/// Validates `value` against `schema` (a JSON `JSONSchemaProps`), reporting
/// errors under `path` as upstream's `ValidateCustomResource(path, value,
/// validator)` does: each error's field is `path` plus the failing value's
/// location (`path.spec.replicas`), its message names that location
/// relative to `value` (empty for `value` itself, so the message then
/// starts with ` in body`).
pub fn validate_value(schema: &Value, value: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    walk(schema, value, "", path, &mut errs);
    errs
}

/// `ValidateDefaults` for the root `openAPIV3Schema` at `path`: pruning,
/// embedded `apiVersion`/`kind`/`metadata` and value errors of every
/// `default`, at `<path>...default`.
pub fn validate_defaults(schema: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    defaults_walk(schema, path, schema, &[], true, &mut errs);
    errs
}

/// One step from the nearest embedded resource down to a schema node.
#[derive(Clone)]
enum Step {
    Child(String),
    Index,
}

/// The recursive step of `ValidateDefaults`. `root` is the nearest
/// embedded resource (or the resource root) and `steps` lead from it to
/// `s`; both serve defaults inside `apiVersion`, `kind` or `metadata`,
/// which upstream validates within a surrounding object.
fn defaults_walk(s: &Value, path: &Path, root: &Value, steps: &[Step], resource_root: bool, errs: &mut ErrorList) {
    let embedded = resource_root || is_true(s, "x-kubernetes-embedded-resource");
    let (root, steps): (&Value, &[Step]) = if embedded { (s, &[]) } else { (root, steps) };
    let inside_meta =
        matches!(steps.first(), Some(Step::Child(k)) if matches!(k.as_str(), "metadata" | "apiVersion" | "kind"));
    if let Some(d) = s.get("default").filter(|d| !d.is_null()) {
        let dpath = path.child("default");
        if inside_meta {
            let obj = surrounding_object(d, steps);
            let meta_errs = validate_embedded_meta(&Path::nil(), &obj, Some(root), true);
            if let Some(agg) = meta_errs.aggregate_message() {
                errs.push(FieldError::invalid(&dpath, bad_value(d), &format!("must result in valid metadata: {agg}")));
            } else {
                errs.extend(validate_value(s, d, &dpath));
            }
        } else {
            if prune(d, Some(s), embedded) != *d {
                errs.push(FieldError::invalid(&dpath, bad_value(d), "must not have unknown fields"));
            }
            let meta_errs = validate_embedded_meta(&dpath, d, Some(s), embedded);
            if meta_errs.is_empty() {
                errs.extend(validate_value(s, d, &dpath));
            } else {
                errs.extend(meta_errs);
            }
        }
    }
    if let Some(items) = s.get("items").filter(|i| i.is_object()) {
        let mut sub = steps.to_vec();
        sub.push(Step::Index);
        defaults_walk(items, &path.child("items"), root, &sub, false, errs);
    }
    if let Some(props) = map_of(s, "properties") {
        for (k, p) in props {
            let mut sub = steps.to_vec();
            sub.push(Step::Child(k.clone()));
            defaults_walk(p, &path.child("properties").key(k), root, &sub, false, errs);
        }
    }
}

/// The object upstream's `SurroundingObjectFunc` builds around a default
/// inside resource metadata: the default placed at `steps` in an object
/// with `apiVersion: validation/v1` and `kind: Validation`.
fn surrounding_object(d: &Value, steps: &[Step]) -> Value {
    let mut obj = d.clone();
    for step in steps.iter().rev() {
        obj = match step {
            Step::Child(k) => Value::Object(Map::from_iter([(k.clone(), obj)])),
            Step::Index => Value::Array(vec![obj]),
        };
    }
    if let Value::Object(m) = &mut obj {
        m.entry("apiVersion").or_insert_with(|| Value::String("validation/v1".into()));
        m.entry("kind").or_insert_with(|| Value::String("Validation".into()));
    }
    obj
}

/// Upstream's `objectmeta.Validate`: in every embedded resource of `x`
/// (and `x` itself when `resource_root`), `apiVersion` and `kind` are
/// required strings (a group/version; a DNS-1035 label in any case) and
/// `metadata` passes `ValidateObjectMeta` with path-segment names (a
/// missing name counts as set).
pub fn validate_embedded_meta(path: &Path, x: &Value, s: Option<&Value>, resource_root: bool) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(s) = s else { return errs };
    match x {
        Value::Object(m) => {
            if resource_root || is_true(s, "x-kubernetes-embedded-resource") {
                validate_embedded_resource(path, m, &mut errs);
            }
            let props = map_of(s, "properties");
            let ap = s.get("additionalProperties").filter(|a| a.is_object());
            for (k, v) in m {
                if let Some(p) = props.and_then(|p| p.get(k)) {
                    errs.extend(validate_embedded_meta(&path.child(k), v, Some(p), false));
                } else if ap.is_some() {
                    errs.extend(validate_embedded_meta(&path.key(k), v, ap, false));
                }
            }
        }
        Value::Array(items) => {
            let is = s.get("items").filter(|i| i.is_object());
            for (i, v) in items.iter().enumerate() {
                errs.extend(validate_embedded_meta(&path.index(i), v, is, false));
            }
        }
        _ => {}
    }
    errs
}

fn validate_embedded_resource(path: &Path, m: &Map<String, Value>, errs: &mut ErrorList) {
    use super::super::meta::validate_object_meta;
    use super::super::names::{is_dns1035_label, NameValidation};
    for key in ["apiVersion", "kind"] {
        if !m.contains_key(key) {
            errs.push(FieldError::required(&path.child(key), ""));
        }
    }
    for (k, v) in m {
        let p = path.child(k);
        match (k.as_str(), v) {
            ("apiVersion" | "kind", v) if !v.is_string() => {
                errs.push(FieldError::invalid(&p, bad_value(v), "must be a string"))
            }
            ("apiVersion" | "kind", Value::String(t)) if t.is_empty() => errs.push(FieldError::required(&p, "")),
            ("apiVersion", Value::String(t)) if t.matches('/').count() > 1 => {
                errs.push(FieldError::invalid(&p, t.as_str(), &format!("unexpected GroupVersion string: {t}")))
            }
            ("kind", Value::String(t)) => {
                let problems = is_dns1035_label(&t.to_lowercase());
                if !problems.is_empty() {
                    let msg = format!("may have mixed case, but should otherwise match: {}", problems.join(","));
                    errs.push(FieldError::invalid(&p, t.as_str(), &msg));
                }
            }
            ("metadata", Value::Object(meta)) => {
                let mut meta = meta.clone();
                if meta.get("name").and_then(Value::as_str).unwrap_or("").is_empty() {
                    meta.insert("name".into(), Value::String("fakename".into()));
                }
                let namespaced = meta.get("namespace").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
                errs.extend(validate_object_meta(&Value::Object(meta), namespaced, &NameValidation::PathSegment, &p));
            }
            ("metadata", v) => errs.push(FieldError::invalid(
                &p,
                bad_value(v),
                &format!("invalid metadata: expected object, got {}", go_type(v)),
            )),
            _ => {}
        }
    }
}

/// The Go type name of a decoded JSON value.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::String(_) => "string",
        Value::Number(n) if n.is_i64() => "int64",
        Value::Number(_) => "float64",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// Upstream's `pruning.Prune` on a copy: drops object fields the schema
/// does not specify, unless `x-kubernetes-preserve-unknown-fields` is set;
/// `apiVersion`, `kind` and `metadata` are kept in embedded resources.
pub fn prune(v: &Value, s: Option<&Value>, resource_root: bool) -> Value {
    let preserve = s.is_some_and(|s| is_true(s, "x-kubernetes-preserve-unknown-fields"));
    match v {
        Value::Object(m) => {
            let Some(s) = s else { return Value::Object(Map::new()) };
            let embedded = resource_root || is_true(s, "x-kubernetes-embedded-resource");
            let props = map_of(s, "properties");
            let ap = s.get("additionalProperties").filter(|a| !a.is_null() && *a != &Value::Bool(false));
            let mut out = Map::new();
            for (k, x) in m {
                if embedded && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    out.insert(k.clone(), x.clone());
                } else if let Some(p) = props.and_then(|p| p.get(k)) {
                    out.insert(k.clone(), prune(x, Some(p), false));
                } else if let Some(ap) = ap {
                    out.insert(k.clone(), prune(x, ap.as_object().map(|_| ap), false));
                } else if preserve {
                    out.insert(k.clone(), x.clone());
                }
            }
            Value::Object(out)
        }
        Value::Array(a) => {
            let items = s.and_then(|s| s.get("items")).filter(|i| i.is_object());
            if s.is_some() && items.is_none() && preserve {
                return v.clone();
            }
            Value::Array(a.iter().map(|x| prune(x, items, false)).collect())
        }
        _ => v.clone(),
    }
}

/// The JSON type name kube-openapi infers for a decoded value.
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::String(_) => "string",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The error path: `base` plus the location without its leading dot.
fn at(base: &Path, name: &str) -> Path {
    let n = name.strip_prefix('.').unwrap_or(name);
    if n.is_empty() {
        base.clone()
    } else {
        base.child(n)
    }
}

fn in_body(name: &str, rest: &str) -> String {
    format!("{name} in body {rest}")
}

fn walk(s: &Value, v: &Value, name: &str, base: &Path, errs: &mut ErrorList) {
    let types: Vec<&str> = if is_true(s, "x-kubernetes-int-or-string") {
        vec!["integer", "string"]
    } else {
        Some(str_of(s, "type")).filter(|t| !t.is_empty()).into_iter().collect()
    };
    let format = str_of(s, "format");
    let type_err = |errs: &mut ErrorList, want: &str, got: &str| {
        errs.push(FieldError::type_invalid(
            &at(base, name),
            got,
            &in_body(name, &format!("must be of type {want}: {}", go_quote(got))),
        ))
    };
    if v.is_null() {
        if !types.is_empty() && !is_true(s, "nullable") {
            type_err(errs, &types.join(","), "null");
        }
        check_enum(s, v, name, base, errs);
        return;
    }
    // typeValidator
    let got = json_type(v);
    if !types.is_empty() || !format.is_empty() {
        let is_float_int =
            got == "number" && v.as_f64().is_some_and(|f| f.fract() == 0.0) && types.contains(&"integer");
        let is_int_float = got == "integer" && types.contains(&"number");
        let data_format = match got {
            "integer" => "int64",
            "number" => "double",
            _ => "",
        };
        let stringish = matches!(v, Value::String(_) | Value::Array(_));
        let numeric_type = types.contains(&"number") || types.contains(&"integer");
        let type_ok = types.contains(&got) || is_float_int || is_int_float;
        // A formatted non-numeric type takes strings and arrays unchecked.
        let format_only = !numeric_type && !format.is_empty() && stringish;
        let format_ok = stringish || format.is_empty() || type_ok || data_format == format;
        if !format_ok {
            type_err(errs, format, data_format);
        } else if !format_only && !types.is_empty() && !type_ok {
            type_err(errs, &types.join(","), got);
        }
    }
    check_combinators(s, v, name, base, errs);
    match v {
        Value::String(text) => {
            check_string(s, text, name, base, errs);
            check_format(format, text, name, base, errs);
        }
        Value::Number(_) => check_number(s, v, name, base, errs),
        Value::Array(items) => check_array(s, items, name, base, errs),
        _ => {}
    }
    check_enum(s, v, name, base, errs);
    if let Value::Object(m) = v {
        check_object(s, m, name, base, errs);
    }
}

/// schemaPropsValidator: `anyOf`, `oneOf`, `allOf`, `not`. Their own
/// errors are kube-openapi composite errors, which apiextensions reports
/// at `base` with an empty value (`"spec.x" must validate at least one
/// schema (anyOf)`). Of failing alternatives, upstream keeps the errors of
/// the one with most passing checks; here the first failing one stands in.
fn check_combinators(s: &Value, v: &Value, name: &str, base: &Path, errs: &mut ErrorList) {
    let run = |alt: &Value| {
        let mut e = ErrorList::new();
        walk(alt, v, name, base, &mut e);
        e
    };
    let composite = |errs: &mut ErrorList, msg: String| errs.push(FieldError::invalid(base, "", &msg));
    let any_of = super::list_of(s, "anyOf");
    if !any_of.is_empty() {
        let mut first_failure = None;
        let mut ok = false;
        for alt in any_of {
            let e = run(alt);
            if e.is_empty() {
                ok = true;
                break;
            }
            first_failure.get_or_insert(e);
        }
        if !ok {
            composite(errs, format!("{} must validate at least one schema (anyOf)", go_quote(name)));
            errs.extend(first_failure.unwrap_or_default());
        }
    }
    let one_of = super::list_of(s, "oneOf");
    if !one_of.is_empty() {
        let mut valid = 0;
        let mut first_failure = None;
        for alt in one_of {
            let e = run(alt);
            if e.is_empty() {
                valid += 1;
                first_failure = None;
            } else if valid == 0 && first_failure.is_none() {
                first_failure = Some(e);
            }
        }
        if valid != 1 {
            let why =
                if valid == 0 { "Found none valid".to_string() } else { format!("Found {valid} valid alternatives") };
            composite(errs, format!("{} must validate one and only one schema (oneOf). {why}", go_quote(name)));
            errs.extend(first_failure.unwrap_or_default());
        }
    }
    let all_of = super::list_of(s, "allOf");
    if !all_of.is_empty() {
        let mut valid = 0;
        for alt in all_of {
            let e = run(alt);
            if e.is_empty() {
                valid += 1;
            }
            errs.extend(e);
        }
        if valid != all_of.len() {
            let why = if valid == 0 { ". None validated" } else { "" };
            composite(errs, format!("{} must validate all the schemas (allOf){why}", go_quote(name)));
        }
    }
    if let Some(not) = s.get("not").filter(|n| n.is_object()) {
        if run(not).is_empty() {
            composite(errs, format!("{} must not validate the schema (not)", go_quote(name)));
        }
    }
}

fn int_of(s: &Value, key: &str) -> Option<i64> {
    s.get(key).and_then(|n| n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)))
}

/// stringValidator: maxLength, minLength, pattern; the first failure only.
fn check_string(s: &Value, text: &str, name: &str, base: &Path, errs: &mut ErrorList) {
    let len = text.chars().count() as i64;
    if let Some(max) = int_of(s, "maxLength").filter(|m| len > *m) {
        errs.push(FieldError::too_long(&at(base, name), max));
    } else if let Some(min) = int_of(s, "minLength").filter(|m| len < *m) {
        let msg = in_body(name, &format!("should be at least {min} chars long"));
        errs.push(FieldError::invalid(&at(base, name), text, &msg));
    } else {
        let pattern = str_of(s, "pattern");
        if !pattern.is_empty() {
            // A pattern Go refuses was reported on the schema already.
            let matches = regex::Regex::new(pattern).map(|re| re.is_match(text)).unwrap_or(true);
            if !matches {
                let msg = in_body(name, &format!("should match '{pattern}'"));
                errs.push(FieldError::invalid(&at(base, name), text, &msg));
            }
        }
    }
}

/// formatValidator for the formats checked here (see the module doc).
fn check_format(format: &str, text: &str, name: &str, base: &Path, errs: &mut ErrorList) {
    use base64::Engine as _;
    let ok = match format {
        "byte" => base64::engine::general_purpose::STANDARD.decode(text).is_ok(),
        "ipv4" => text.contains('.') && text.parse::<std::net::IpAddr>().is_ok(),
        "ipv6" => text.contains(':') && text.parse::<std::net::IpAddr>().is_ok(),
        "cidr" => text.split_once('/').is_some_and(|(ip, bits)| {
            let max = match ip.parse::<std::net::IpAddr>() {
                Ok(std::net::IpAddr::V4(_)) => 32,
                Ok(std::net::IpAddr::V6(_)) => 128,
                Err(_) => return false,
            };
            !bits.is_empty()
                && bits.len() <= 3
                && bits.bytes().all(|b| b.is_ascii_digit())
                && bits.parse::<u32>().is_ok_and(|b| b <= max)
        }),
        "date" => is_date(text),
        _ => true,
    };
    if !ok {
        let msg = in_body(name, &format!("must be of type {format}: {}", go_quote(text)));
        errs.push(FieldError::type_invalid(&at(base, name), text, &msg));
    }
}

fn is_date(t: &str) -> bool {
    let b = t.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num =
        |r: std::ops::Range<usize>| t.get(r).filter(|x| x.bytes().all(|c| c.is_ascii_digit()))?.parse::<u32>().ok();
    let (Some(y), Some(m), Some(d)) = (num(0..4), num(5..7), num(8..10)) else { return false };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// numberValidator: multipleOf, maximum, minimum (each reported).
fn check_number(s: &Value, v: &Value, name: &str, base: &Path, errs: &mut ErrorList) {
    let x = v.as_f64().unwrap_or(0.0);
    if let Some(m) = s.get("multipleOf").and_then(Value::as_f64).filter(|m| *m > 0.0) {
        // go-openapi's MultipleOf: a factor below 1 is inverted first, and
        // the quotient is an integer within a relative 1e-9.
        let q = if m < 1.0 { (1.0 / m) * x } else { x / m };
        let r = q.round();
        let integral = q.is_finite() && (q == r || ((q - r).abs() / (q.abs() + r.abs())) < 1e-9);
        if !integral {
            let msg = in_body(name, &format!("should be a multiple of {}", go_float(m)));
            errs.push(FieldError::invalid(&at(base, name), bad_value(v), &msg));
        }
    }
    if let Some(max) = s.get("maximum").and_then(Value::as_f64) {
        let exclusive = is_true(s, "exclusiveMaximum");
        if x > max || (exclusive && x >= max) {
            let op = if exclusive { "less than" } else { "less than or equal to" };
            let msg = in_body(name, &format!("should be {op} {}", go_float(max)));
            errs.push(FieldError::invalid(&at(base, name), bad_value(v), &msg));
        }
    }
    if let Some(min) = s.get("minimum").and_then(Value::as_f64) {
        let exclusive = is_true(s, "exclusiveMinimum");
        if x < min || (exclusive && x <= min) {
            let op = if exclusive { "greater than" } else { "greater than or equal to" };
            let msg = in_body(name, &format!("should be {op} {}", go_float(min)));
            errs.push(FieldError::invalid(&at(base, name), bad_value(v), &msg));
        }
    }
}

/// schemaSliceValidator: the items, then minItems, maxItems, uniqueItems.
fn check_array(s: &Value, items: &[Value], name: &str, base: &Path, errs: &mut ErrorList) {
    if let Some(is) = s.get("items").filter(|i| i.is_object()) {
        for (i, x) in items.iter().enumerate() {
            walk(is, x, &format!("{name}[{i}]"), base, errs);
        }
    }
    let size = items.len() as i64;
    if let Some(min) = int_of(s, "minItems").filter(|m| size < *m) {
        let msg = in_body(name, &format!("should have at least {min} items"));
        errs.push(FieldError::invalid(&at(base, name), size, &msg));
    }
    if let Some(max) = int_of(s, "maxItems").filter(|m| size > *m) {
        errs.push(FieldError::too_many(&at(base, name), size, max));
    }
    if is_true(s, "uniqueItems") && items.iter().enumerate().any(|(i, a)| items[..i].iter().any(|b| json_eq(a, b))) {
        errs.push(FieldError::invalid(&at(base, name), "", &in_body(name, "shouldn't contain duplicates")));
    }
}

/// basicCommonValidator: `enum`, an `Unsupported value` error.
fn check_enum(s: &Value, v: &Value, name: &str, base: &Path, errs: &mut ErrorList) {
    let Some(Value::Array(allowed)) = s.get("enum") else { return };
    if allowed.is_empty() || allowed.iter().any(|a| json_eq(a, v)) {
        return;
    }
    let values: Vec<String> =
        allowed.iter().map(|a| a.as_str().map(str::to_string).unwrap_or_else(|| a.to_string())).collect();
    let refs: Vec<&str> = values.iter().map(String::as_str).collect();
    let value = if v.is_null() { BadValue::Str(String::new()) } else { bad_value(v) };
    errs.push(FieldError::not_supported(&at(base, name), value, &refs));
}

/// objectValidator: min/maxProperties (stopping there), additional
/// properties, properties, then `required`.
fn check_object(s: &Value, m: &Map<String, Value>, name: &str, base: &Path, errs: &mut ErrorList) {
    let n = m.len() as i64;
    if let Some(min) = int_of(s, "minProperties").filter(|x| n < *x) {
        let msg = in_body(name, &format!("should have at least {min} properties"));
        errs.push(FieldError::invalid(&at(base, name), n, &msg));
        return;
    }
    if let Some(max) = int_of(s, "maxProperties").filter(|x| n > *x) {
        errs.push(FieldError::too_many(&at(base, name), n, max));
        return;
    }
    let props = map_of(s, "properties");
    if s.get("additionalProperties") == Some(&Value::Bool(false)) {
        for k in m.keys().filter(|k| props.is_none_or(|p| !p.contains_key(*k))) {
            let msg = format!("{name}.{k} in body is a forbidden property");
            errs.push(FieldError::invalid(&at(base, name), k.as_str(), &msg));
        }
    } else if let Some(ap) = s.get("additionalProperties").filter(|a| a.is_object()) {
        for (k, x) in m.iter().filter(|(k, _)| props.is_none_or(|p| !p.contains_key(*k))) {
            walk(ap, x, &format!("{name}.{k}"), base, errs);
        }
    }
    if let Some(props) = props {
        for (k, p) in props {
            if let Some(x) = m.get(k) {
                let child = if name.is_empty() { k.clone() } else { format!("{name}.{k}") };
                walk(p, x, &child, base, errs);
            }
        }
    }
    for k in super::strings_of(s, "required") {
        if !m.contains_key(&k) {
            errs.push(FieldError::required(&at(base, &format!("{name}.{k}")), ""));
        }
    }
}

/// JSON equality with numbers compared by value (`1` equals `1.0`).
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, a)| y.get(k).is_some_and(|b| json_eq(a, b)))
        }
        _ => a == b,
    }
}

/// Go's `%v` of a float64 (`10`, `2.5`, `1e+21`, `1e-05`).
pub fn go_float(f: f64) -> String {
    if f == 0.0 {
        return "0".into();
    }
    let a = f.abs();
    if !(1e-4..1e21).contains(&a) {
        // Rust writes `1e21` / `1e-5`; Go writes `1e+21` / `1e-05`.
        let s = format!("{f:e}");
        let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let (sign, digits) = exp.strip_prefix('-').map(|d| ('-', d)).unwrap_or(('+', exp));
        return format!("{mant}e{sign}{digits:0>2}");
    }
    format!("{f}")
}

/// Go's `%#v` of a decoded JSON value (`map[string]interface {}{"a":1}`,
/// `[]interface {}{"x"}`), keys sorted as Go prints maps.
pub fn go_sharp_v(v: &Value) -> String {
    match v {
        Value::Null => "interface {}(nil)".into(),
        Value::Bool(b) => b.to_string(),
        Value::String(s) => go_quote(s),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => go_float(n.as_f64().unwrap_or(0.0)),
        },
        Value::Array(a) => {
            format!("[]interface {{}}{{{}}}", a.iter().map(go_sharp_v).collect::<Vec<_>>().join(", "))
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys.iter().map(|k| format!("{}:{}", go_quote(k), go_sharp_v(&m[*k]))).collect();
            format!("map[string]interface {{}}{{{}}}", parts.join(", "))
        }
    }
}

/// The bad value of a field error for a decoded JSON value: strings quoted,
/// numbers and booleans plain, objects and arrays as Go's `%#v`.
fn bad_value(v: &Value) -> BadValue {
    match v {
        Value::Null => BadValue::Null,
        Value::Bool(b) => BadValue::Bool(*b),
        Value::String(s) => BadValue::Str(s.clone()),
        Value::Number(n) => match n.as_i64() {
            Some(i) => BadValue::Int(i),
            None => BadValue::Raw(go_float(n.as_f64().unwrap_or(0.0))),
        },
        _ => BadValue::Raw(go_sharp_v(v)),
    }
}
