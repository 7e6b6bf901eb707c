//! Validation of a CustomResourceDefinition's OpenAPI v3 schema, following
//! upstream's `validateCustomResourceDefinitionValidation`,
//! `ValidateCustomResourceDefinitionOpenAPISchema` and the structural schema
//! rules (`apiextensions-apiserver/pkg/apiserver/schema`: `ValidateStructural`
//! with its invariants and completeness checks), messages and field paths
//! word for word.
//!
//! The input is the `CustomResourceValidation` JSON (`{"openAPIV3Schema":
//! {...}}`) of one version, or of all versions when they are identical
//! (upstream then validates it at `spec.validation`).
//!
//! `pattern`s must parse as Go regular expressions (RE2 syntax, Go's error
//! text; [`super::go_regexp`]). `x-kubernetes-validations` rules are
//! compiled for syntax only. When the schema is structural, every
//! `default` is checked against its sub-schema ([`defaults`]:
//! `ValidateDefaults`, with a general value validator, [`validate_value`]).
//!
//! Not done (upstream needs a CEL type checker for these): the rules'
//! types and cost limits, `fieldPath` resolution of rules, evaluating
//! rules on defaults.

use serde_json::{Map, Value};

use super::field::{go_quote, go_string_slice, BadValue, ErrorList, FieldError, Path};

pub mod defaults;
pub use defaults::{validate_defaults, validate_value};

/// The `type` values upstream accepts (`openapiV3Types`, sorted).
pub const OPENAPI_V3_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

/// The `reason` values a validation rule may name (`supportedValidationReason`, sorted).
pub const VALIDATION_RULE_REASONS: [&str; 4] =
    ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"];

/// The root-schema fields allowed when the status subresource is enabled,
/// as upstream names them (Go field names) with their JSON keys.
const ALLOWED_AT_ROOT: [(&str, &str); 22] = [
    ("Description", "description"),
    ("Type", "type"),
    ("Format", "format"),
    ("Title", "title"),
    ("Maximum", "maximum"),
    ("ExclusiveMaximum", "exclusiveMaximum"),
    ("Minimum", "minimum"),
    ("ExclusiveMinimum", "exclusiveMinimum"),
    ("MaxLength", "maxLength"),
    ("MinLength", "minLength"),
    ("Pattern", "pattern"),
    ("MaxItems", "maxItems"),
    ("MinItems", "minItems"),
    ("UniqueItems", "uniqueItems"),
    ("MultipleOf", "multipleOf"),
    ("Required", "required"),
    ("Items", "items"),
    ("Properties", "properties"),
    ("ExternalDocs", "externalDocs"),
    ("Example", "example"),
    ("XPreserveUnknownFields", "x-kubernetes-preserve-unknown-fields"),
    ("XValidations", "x-kubernetes-validations"),
];

/// The JSON keys of upstream's internal `JSONSchemaProps`, in Go field order
/// (the root check stops at the first offending field in this order).
const SCHEMA_FIELD_ORDER: [&str; 44] = [
    "id",
    "$schema",
    "$ref",
    "description",
    "type",
    "format",
    "title",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "enum",
    "maxProperties",
    "minProperties",
    "required",
    "items",
    "allOf",
    "oneOf",
    "anyOf",
    "not",
    "properties",
    "additionalProperties",
    "patternProperties",
    "dependencies",
    "additionalItems",
    "definitions",
    "externalDocs",
    "example",
    "nullable",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
];

/// Fields upstream's structural schema (`Structural`) keeps; anything else
/// (`example`, `externalDocs`, …) does not count for the metadata rule.
const STRUCTURAL_FIELDS: [&str; 35] = [
    "items",
    "properties",
    "description",
    "type",
    "title",
    "default",
    "additionalProperties",
    "nullable",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
    "format",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "enum",
    "maxProperties",
    "minProperties",
    "required",
    "allOf",
    "oneOf",
    "anyOf",
    "not",
];

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn is_true(v: &Value, key: &str) -> bool {
    v.get(key) == Some(&Value::Bool(true))
}

fn present(v: &Value, key: &str) -> bool {
    v.get(key).is_some_and(|x| !x.is_null())
}

fn map_of<'a>(v: &'a Value, key: &str) -> Option<&'a Map<String, Value>> {
    v.get(key).and_then(Value::as_object)
}

fn non_empty_map(v: &Value, key: &str) -> bool {
    map_of(v, key).is_some_and(|m| !m.is_empty())
}

fn list_of<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

fn strings_of(v: &Value, key: &str) -> Vec<String> {
    list_of(v, key).iter().filter_map(Value::as_str).map(str::to_string).collect()
}

/// The single schema of `items` (`None` when absent or an array).
fn items_schema(v: &Value) -> Option<&Value> {
    v.get("items").filter(|i| i.is_object())
}

/// Whether a field holds Go's zero value in the internal struct: absent,
/// null, `false`, or an empty string for the plain string fields.
fn is_zero(key: &str, v: &Value) -> bool {
    match v {
        Value::Null | Value::Bool(false) => true,
        Value::String(s) => {
            s.is_empty() && matches!(key, "id" | "description" | "type" | "format" | "title" | "pattern")
        }
        _ => false,
    }
}

/// Validates one `CustomResourceValidation` (`validation` is its JSON, or
/// null) at `path` (`spec.validation` or `spec.versions[i].schema`):
/// the root rules with the status subresource, `nullable` at the root, the
/// structural schema rules, then the per-node rules of
/// [`validate_schema_node`]. Structural-schema construction errors are only
/// reported when nothing else is wrong, as upstream does.
pub fn validate_custom_resource_validation(validation: &Value, status_enabled: bool, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(schema) = validation.get("openAPIV3Schema").filter(|s| s.is_object()) else { return errs };
    let schema_path = path.child("openAPIV3Schema");
    if status_enabled {
        errs.extend(validate_root_with_status(schema, path));
    }
    if is_true(schema, "nullable") {
        errs.push(FieldError::forbidden(
            &path.child("openAPIV3Schema.nullable"),
            "nullable cannot be true at the root",
        ));
    }
    let init_err = structural_init_error(schema);
    let mut structural_errs = None;
    if init_err.is_none() {
        let s_errs = validate_structural(schema, &schema_path);
        structural_errs = Some(s_errs.len());
        errs.extend(s_errs);
    }
    errs.extend(validate_schema_node(schema, &schema_path, &Context::root(), true));
    // Upstream validates defaults only when the schema is structural.
    if structural_errs == Some(0) {
        errs.extend(validate_defaults(schema, &schema_path));
    }
    if errs.is_empty() {
        if let Some(msg) = init_err {
            errs.push(FieldError::invalid(&schema_path, "", &msg));
        }
    }
    errs
}

/// With the status subresource, only some fields may be set at the root and
/// `type` must be `object`; upstream stops at the first offender.
fn validate_root_with_status(schema: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for key in SCHEMA_FIELD_ORDER {
        let Some(v) = schema.get(key) else { continue };
        if is_zero(key, v) {
            continue;
        }
        if key == "type" {
            if v.as_str() != Some("object") {
                let ty = v.as_str().unwrap_or("");
                errs.push(FieldError::invalid(
                    &path.child("openAPIV3Schema.type"),
                    ty,
                    r#"only "object" is allowed as the type at the root of the schema if the status subresource is enabled"#,
                ));
                break;
            }
            continue;
        }
        if !ALLOWED_AT_ROOT.iter().any(|(_, k)| *k == key) {
            let names: Vec<&str> = ALLOWED_AT_ROOT.iter().map(|(n, _)| *n).collect();
            // The offending value is upstream's %#v of the whole schema
            // struct, which has no stable rendering; it is left out.
            errs.push(FieldError::invalid(
                &path.child("openAPIV3Schema"),
                BadValue::Omitted,
                &format!(
                    "only [{}] fields are allowed at the root of the schema if the status subresource is enabled",
                    names.join(" ")
                ),
            ));
            break;
        }
    }
    errs
}

/// The error upstream's `NewStructural` returns for a schema it cannot
/// represent (unsupported fields, `items` as an array, a `false`
/// `x-kubernetes-preserve-unknown-fields`), depth first.
fn structural_init_error(s: &Value) -> Option<String> {
    for (key, name) in [
        ("id", "id"),
        ("$schema", "schema"),
        ("$ref", "$ref"),
        ("patternProperties", "patternProperties"),
        ("dependencies", "dependencies"),
        ("additionalItems", "additionalItems"),
        ("definitions", "definitions"),
    ] {
        let set = match s.get(key) {
            Some(Value::String(v)) => !v.is_empty(),
            Some(Value::Object(m)) => key == "dependencies" || key == "additionalItems" || !m.is_empty(),
            Some(Value::Null) | None => false,
            Some(_) => true,
        };
        if set {
            return Some(format!("OpenAPIV3Schema '{name}' is not supported"));
        }
    }
    if s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        return Some("internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined".into());
    }
    let mut children: Vec<&Value> = Vec::new();
    for key in ["allOf", "oneOf", "anyOf"] {
        children.extend(list_of(s, key));
    }
    children.extend(s.get("not").filter(|n| n.is_object()));
    match s.get("items") {
        Some(Value::Array(_)) => return Some("OpenAPIV3Schema 'items' must be a schema, but is an array".into()),
        Some(i @ Value::Object(_)) => children.push(i),
        _ => {}
    }
    if let Some(props) = map_of(s, "properties") {
        children.extend(props.values());
    }
    children.extend(s.get("additionalProperties").filter(|a| a.is_object()));
    children.into_iter().find_map(structural_init_error)
}

/// The `specStandardValidatorV3` state while walking the schema.
#[derive(Clone, Debug)]
struct Context {
    allow_defaults: bool,
    disallow_defaults_reason: String,
    inside_resource_meta: bool,
}

impl Context {
    fn root() -> Context {
        Context { allow_defaults: true, disallow_defaults_reason: String::new(), inside_resource_meta: false }
    }
    fn with_forbidden_defaults(&self, reason: &str) -> Context {
        Context { allow_defaults: false, disallow_defaults_reason: reason.into(), ..self.clone() }
    }
    fn with_inside_resource_meta(&self) -> Context {
        Context { inside_resource_meta: true, ..self.clone() }
    }
}

/// `specStandardValidatorV3.validate`: the OpenAPI features CRDs do not support.
fn validate_standard(s: &Value, path: &Path, ctx: &Context) -> ErrorList {
    let mut errs = ErrorList::new();
    let ty = str_of(s, "type");
    if !ty.is_empty() && !OPENAPI_V3_TYPES.contains(&ty) {
        errs.push(FieldError::not_supported(&path.child("type"), ty, &OPENAPI_V3_TYPES));
    }
    if present(s, "default") && !ctx.allow_defaults {
        let mut detail = "must not be set".to_string();
        if !ctx.disallow_defaults_reason.is_empty() {
            detail.push(' ');
            detail.push_str(&ctx.disallow_defaults_reason);
        }
        errs.push(FieldError::forbidden(&path.child("default"), &detail));
    }
    if !str_of(s, "id").is_empty() {
        errs.push(FieldError::forbidden(&path.child("id"), "id is not supported"));
    }
    if present(s, "additionalItems") {
        errs.push(FieldError::forbidden(&path.child("additionalItems"), "additionalItems is not supported"));
    }
    if non_empty_map(s, "patternProperties") {
        errs.push(FieldError::forbidden(&path.child("patternProperties"), "patternProperties is not supported"));
    }
    if non_empty_map(s, "definitions") {
        errs.push(FieldError::forbidden(&path.child("definitions"), "definitions is not supported"));
    }
    if present(s, "dependencies") {
        errs.push(FieldError::forbidden(&path.child("dependencies"), "dependencies is not supported"));
    }
    if present(s, "$ref") {
        errs.push(FieldError::forbidden(&path.child("$ref"), "$ref is not supported"));
    }
    if ty == "null" {
        errs.push(FieldError::forbidden(
            &path.child("type"),
            "type cannot be set to null, use nullable as an alternative",
        ));
    }
    if s.get("items").and_then(Value::as_array).is_some_and(|a| !a.is_empty()) {
        errs.push(FieldError::forbidden(&path.child("items"), "items must be a schema object and not an array"));
    }
    if ctx.inside_resource_meta && is_true(s, "x-kubernetes-embedded-resource") {
        errs.push(FieldError::forbidden(
            &path.child("x-kubernetes-embedded-resource"),
            "must not be used inside of resource meta",
        ));
    }
    errs
}

/// `ValidateCustomResourceDefinitionOpenAPISchema` for one node and its
/// children: unsupported features, `properties` vs `additionalProperties`,
/// defaults in resource metadata, the `x-kubernetes-*` list and map rules
/// and the syntax of `x-kubernetes-validations` entries.
fn validate_schema_node(s: &Value, path: &Path, ctx: &Context, is_root: bool) -> ErrorList {
    let mut errs = validate_standard(s, path, ctx);
    if is_true(s, "uniqueItems") {
        errs.push(FieldError::forbidden(
            &path.child("uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    let has_props = non_empty_map(s, "properties");
    if let Some(ap) = s.get("additionalProperties").filter(|a| !a.is_null()) {
        if has_props && (ap == &Value::Bool(false) || ap.is_object()) {
            errs.push(FieldError::forbidden(
                &path.child("additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        if ap.is_object() {
            let sub = if ctx.inside_resource_meta {
                ctx.with_forbidden_defaults("inside additionalProperties applying to object metadata")
            } else {
                ctx.clone()
            };
            errs.extend(validate_schema_node(ap, &path.child("additionalProperties"), &sub, false));
        }
    }
    if let Some(props) = map_of(s, "properties") {
        let embedded = is_true(s, "x-kubernetes-embedded-resource");
        for (name, prop) in props {
            let mut sub = ctx.clone();
            if (is_root || embedded) && matches!(name.as_str(), "metadata" | "kind" | "apiVersion") {
                sub = sub.with_inside_resource_meta();
                if is_root {
                    sub = sub.with_forbidden_defaults(&format!("in top-level {name}"));
                }
            }
            errs.extend(validate_schema_node(prop, &path.child("properties").key(name), &sub, false));
        }
    }
    if let Some(not) = s.get("not").filter(|n| n.is_object()) {
        errs.extend(validate_schema_node(not, &path.child("not"), ctx, false));
    }
    for key in ["allOf", "oneOf", "anyOf"] {
        for (i, sub) in list_of(s, key).iter().enumerate() {
            errs.extend(validate_schema_node(sub, &path.child(key).index(i), ctx, false));
        }
    }
    if let Some(defs) = map_of(s, "definitions") {
        for (name, d) in defs {
            errs.extend(validate_schema_node(d, &path.child("definitions").key(name), ctx, false));
        }
    }
    match s.get("items") {
        Some(i @ Value::Object(_)) => errs.extend(validate_schema_node(i, &path.child("items"), ctx, false)),
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                errs.extend(validate_schema_node(item, &path.child("items").index(i), ctx, false));
            }
        }
        _ => {}
    }
    if let Some(deps) = map_of(s, "dependencies") {
        for (name, d) in deps.iter().filter(|(_, d)| d.is_object()) {
            errs.extend(validate_schema_node(d, &path.child("dependencies").key(name), ctx, false));
        }
    }
    if s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        errs.push(FieldError::invalid(
            &path.child("x-kubernetes-preserve-unknown-fields"),
            false,
            "must be true or undefined",
        ));
    }
    errs.extend(validate_list_and_map_types(s, path));
    errs.extend(validate_map_list_keys_map_set(s, path));
    errs.extend(validate_rule_syntax(s, path));
    errs
}

fn type_must_be(s: &Value, path: &Path, want: &str, detail: &str) -> Option<FieldError> {
    let ty = str_of(s, "type");
    if ty == want {
        None
    } else if ty.is_empty() {
        Some(FieldError::required(&path.child("type"), detail))
    } else {
        Some(FieldError::invalid(&path.child("type"), ty, detail))
    }
}

/// The `x-kubernetes-map-type`, `x-kubernetes-list-type` and
/// `x-kubernetes-list-map-keys` rules.
fn validate_list_and_map_types(s: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let map_type = s.get("x-kubernetes-map-type").and_then(Value::as_str);
    let list_type = s.get("x-kubernetes-list-type").and_then(Value::as_str);
    if map_type.is_some() {
        errs.0.extend(type_must_be(s, path, "object", "must be object if x-kubernetes-map-type is specified"));
    }
    if let Some(mt) = map_type.filter(|t| !matches!(*t, "atomic" | "granular")) {
        errs.push(FieldError::not_supported(&path.child("x-kubernetes-map-type"), mt, &["atomic", "granular"]));
    }
    if list_type.is_some() && str_of(s, "type") != "array" {
        errs.0.extend(type_must_be(s, path, "array", "must be array if x-kubernetes-list-type is specified"));
    } else if list_type == Some("set") {
        if let Some(is) = items_schema(s) {
            // The offending value upstream prints is the item's list type in both cases.
            let item_list_type = match is.get("x-kubernetes-list-type").and_then(Value::as_str) {
                Some(t) => BadValue::Str(t.into()),
                None => BadValue::Null,
            };
            let msg = "must be atomic as item of a list with x-kubernetes-list-type=set";
            let item_list = is.get("x-kubernetes-list-type").and_then(Value::as_str);
            let item_map = is.get("x-kubernetes-map-type").and_then(Value::as_str);
            match str_of(is, "type") {
                "array" if item_list.is_some_and(|t| t != "atomic") => errs.push(FieldError::invalid(
                    &path.child("items").child("x-kubernetes-list-type"),
                    item_list_type,
                    msg,
                )),
                "object" if item_map != Some("atomic") => errs.push(FieldError::invalid(
                    &path.child("items").child("x-kubernetes-map-type"),
                    item_list_type,
                    msg,
                )),
                _ => {}
            }
        }
    }
    if let Some(lt) = list_type.filter(|t| !matches!(*t, "atomic" | "set" | "map")) {
        errs.push(FieldError::not_supported(&path.child("x-kubernetes-list-type"), lt, &["atomic", "set", "map"]));
    }
    let keys = strings_of(s, "x-kubernetes-list-map-keys");
    if !keys.is_empty() {
        match list_type {
            None => errs.push(FieldError::required(
                &path.child("x-kubernetes-list-type"),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            Some("map") => {}
            Some(other) => errs.push(FieldError::invalid(
                &path.child("x-kubernetes-list-type"),
                other,
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
        }
    }
    if list_type == Some("map") {
        if keys.is_empty() {
            errs.push(FieldError::required(
                &path.child("x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        match s.get("items").filter(|i| !i.is_null()) {
            None => errs.push(FieldError::required(
                &path.child("items"),
                "must have a schema if x-kubernetes-list-type is map",
            )),
            Some(Value::Object(_)) => {}
            Some(other) => errs.push(FieldError::invalid(
                &path.child("items"),
                BadValue::Raw(other.to_string()),
                "must only have a single schema if x-kubernetes-list-type is map",
            )),
        }
        if let Some(is) = items_schema(s) {
            let item_type = str_of(is, "type");
            if item_type != "object" {
                errs.push(FieldError::invalid(
                    &path.child("items").child("type"),
                    item_type,
                    "must be object if parent array's x-kubernetes-list-type is map",
                ));
            } else {
                let keys_value = BadValue::Raw(go_string_slice(&keys, false));
                let mut seen = std::collections::HashSet::new();
                for k in &keys {
                    match map_of(is, "properties").and_then(|p| p.get(k)) {
                        Some(prop) => {
                            if matches!(str_of(prop, "type"), "array" | "object") {
                                // Upstream reports the item's type as the value.
                                errs.push(FieldError::invalid(
                                    &path.child("items").child("properties").key(k).child("type"),
                                    item_type,
                                    "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                ));
                            }
                        }
                        None => errs.push(FieldError::invalid(
                            &path.child("x-kubernetes-list-map-keys"),
                            keys_value.clone(),
                            "entries must all be names of item properties",
                        )),
                    }
                    if !seen.insert(k.as_str()) {
                        errs.push(FieldError::invalid(
                            &path.child("x-kubernetes-list-map-keys"),
                            keys_value.clone(),
                            "must not contain duplicate entries",
                        ));
                    }
                }
            }
        }
    }
    errs
}

/// `validateMapListKeysMapSet`: items of set and map lists are not nullable;
/// map keys are required or defaulted and not nullable.
fn validate_map_list_keys_map_set(s: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(is) = items_schema(s) else { return errs };
    let Some(lt) = s.get("x-kubernetes-list-type").and_then(Value::as_str).filter(|t| matches!(*t, "set" | "map"))
    else {
        return errs;
    };
    if is_true(is, "nullable") {
        errs.push(FieldError::forbidden(
            &path.child("items").child("nullable"),
            &format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
        ));
    }
    if lt == "map" {
        let required = strings_of(is, "required");
        for k in strings_of(s, "x-kubernetes-list-map-keys") {
            let Some(prop) = map_of(is, "properties").and_then(|p| p.get(&k)) else { continue };
            let prop_path = path.child("items").child("properties").key(&k);
            if !required.contains(&k) && !present(prop, "default") {
                errs.push(FieldError::required(
                    &prop_path.child("default"),
                    "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                ));
            }
            if is_true(prop, "nullable") {
                errs.push(FieldError::forbidden(
                    &prop_path.child("nullable"),
                    "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                ));
            }
        }
    }
    errs
}

fn has_newlines(s: &str) -> bool {
    s.contains('\n') || s.contains('\r')
}

/// The rules of `x-kubernetes-validations` entries, their CEL rules and
/// message expressions compiled.
fn validate_rule_syntax(s: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for (i, rule) in list_of(s, "x-kubernetes-validations").iter().enumerate() {
        let p = path.child("x-kubernetes-validations").index(i);
        let (r, msg, msg_expr) = (str_of(rule, "rule"), str_of(rule, "message"), str_of(rule, "messageExpression"));
        let (trimmed_rule, trimmed_msg) = (r.trim(), msg.trim());
        if trimmed_rule.is_empty() {
            errs.push(FieldError::required(&p.child("rule"), "rule is not specified"));
        } else if !msg.is_empty() && trimmed_msg.is_empty() {
            errs.push(FieldError::invalid(&p.child("message"), msg, "message must be non-empty if specified"));
        } else if has_newlines(trimmed_msg) {
            errs.push(FieldError::invalid(&p.child("message"), msg, "message must not contain line breaks"));
        } else if has_newlines(trimmed_rule) && trimmed_msg.is_empty() {
            errs.push(FieldError::required(
                &p.child("message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        if !msg_expr.is_empty() && msg_expr.trim().is_empty() {
            errs.push(FieldError::required(
                &p.child("messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        // Compiled with the shared CEL parser (no cel-go type checking:
        // only syntax errors are caught here).
        if !trimmed_rule.is_empty() {
            if let Err(e) = crate::cel::Expression::compile(r) {
                errs.push(FieldError::invalid(&p.child("rule"), go_validation_rule(rule), &e));
            }
        }
        if !msg_expr.trim().is_empty() {
            if let Err(e) = crate::cel::Expression::compile(msg_expr) {
                let detail = format!("messageExpression {e}");
                errs.push(FieldError::invalid(&p.child("messageExpression"), go_validation_rule(rule), &detail));
            }
        }
        if let Some(reason) = rule.get("reason").and_then(Value::as_str) {
            if !VALIDATION_RULE_REASONS.contains(&reason) {
                errs.push(FieldError::not_supported(&p.child("reason"), reason, &VALIDATION_RULE_REASONS));
            }
        }
        let fp = str_of(rule, "fieldPath");
        if !fp.is_empty() && fp.trim().is_empty() {
            errs.push(FieldError::invalid(&p.child("fieldPath"), fp, "fieldPath must be non-empty if specified"));
        }
        if has_newlines(fp) {
            errs.push(FieldError::invalid(&p.child("fieldPath"), fp, "fieldPath must not contain line breaks"));
        }
    }
    errs
}

/// Go's `%#v` of an `apiextensions.ValidationRule`, the bad value upstream
/// reports with CEL compile errors. Set pointers print as an address in
/// Go; a fixed one stands in for it.
fn go_validation_rule(rule: &Value) -> BadValue {
    let pointer = |key: &str, ty: &str, render: &dyn Fn(&Value) -> bool| match rule.get(key) {
        Some(v) if !v.is_null() && render(v) => format!("(*{ty})(0xc000010000)"),
        _ => format!("(*{ty})(nil)"),
    };
    BadValue::Raw(format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{}, FieldPath:{}, OptionalOldSelf:{}}}",
        go_quote(str_of(rule, "rule")),
        go_quote(str_of(rule, "message")),
        go_quote(str_of(rule, "messageExpression")),
        pointer("reason", "apiextensions.FieldValueErrorReason", &|_| true),
        go_quote(str_of(rule, "fieldPath")),
        pointer("optionalOldSelf", "bool", &|_| true),
    ))
}

/// The level of a node in the structural checks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// `ValidateStructural`: invariants and completeness, sorted by their
/// rendered text as upstream sorts them.
pub fn validate_structural(schema: &Value, path: &Path) -> ErrorList {
    let mut errs = structural_invariants(schema, Level::Root, path);
    errs.extend(value_validation_completeness(schema, Some(schema), path, path));
    errs.0.sort_by_key(|e| e.to_string());
    errs
}

/// `anyOf: [{type: integer}, {type: string}]` exactly — the int-or-string
/// pattern, whose `type`s are allowed.
fn is_int_or_string_any_of(any_of: Option<&Value>) -> bool {
    let Some(Value::Array(a)) = any_of else { return false };
    a.len() == 2 && a[0] == serde_json::json!({"type": "integer"}) && a[1] == serde_json::json!({"type": "string"})
}

fn structural_invariants(s: &Value, lvl: Level, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let ty = str_of(s, "type");
    if ty == "array" && items_schema(s).is_none() {
        errs.push(FieldError::required(&path.child("items"), "must be specified"));
    }
    if let Some(items) = items_schema(s) {
        errs.extend(structural_invariants(items, Level::Item, &path.child("items")));
    }
    if let Some(props) = map_of(s, "properties") {
        for (k, v) in props {
            errs.extend(structural_invariants(v, Level::Field, &path.child("properties").key(k)));
        }
    }
    let ap = s.get("additionalProperties").filter(|a| !a.is_null());
    if let Some(ap) = ap {
        if lvl == Level::Root {
            errs.push(FieldError::forbidden(&path.child("additionalProperties"), "must not be used at the root"));
        }
        if ap.is_object() {
            errs.extend(structural_invariants(ap, Level::Field, &path.child("additionalProperties")));
        }
    }
    let (int_or_string, preserve, embedded) = (
        is_true(s, "x-kubernetes-int-or-string"),
        is_true(s, "x-kubernetes-preserve-unknown-fields"),
        is_true(s, "x-kubernetes-embedded-resource"),
    );
    if int_or_string && preserve {
        errs.push(FieldError::invalid(
            &path.child("x-kubernetes-preserve-unknown-fields"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if int_or_string && embedded {
        errs.push(FieldError::invalid(
            &path.child("x-kubernetes-embedded-resource"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    let skip_any_of = is_int_or_string_any_of(s.get("anyOf"));
    let skip_first_all_of_any_of =
        list_of(s, "allOf").first().is_some_and(|first| is_int_or_string_any_of(first.get("anyOf")));
    errs.extend(value_validation(s, skip_any_of, skip_first_all_of_any_of, path));

    let check_metadata = lvl == Level::Root || embedded;
    if embedded && ty != "object" {
        errs.0.extend(type_must_be(s, path, "object", "must be object if x-kubernetes-embedded-resource is true"));
    } else if ty.is_empty() && !int_or_string && !preserve {
        let detail = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(FieldError::required(&path.child("type"), detail));
    }
    if embedded && ap.is_some() {
        errs.push(FieldError::forbidden(
            &path.child("additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !ty.is_empty() && ty != "object" {
        errs.push(FieldError::invalid(&path.child("type"), ty, "must be object at the root"));
    }
    let props = map_of(s, "properties");
    for name in ["kind", "apiVersion"] {
        if let Some(p) = props.and_then(|m| m.get(name)).filter(|_| check_metadata) {
            let t = str_of(p, "type");
            if t != "string" {
                errs.push(FieldError::invalid(&path.child("properties").key(name).child("type"), t, "must be string"));
            }
        }
    }
    if let Some(meta) = props.and_then(|m| m.get("metadata")) {
        let meta_path = path.child("properties").key("metadata");
        let t = str_of(meta, "type");
        if check_metadata && t != "object" {
            errs.push(FieldError::invalid(&meta_path.child("type"), t, "must be object"));
        }
        if lvl == Level::Root && !metadata_schema_is_implicit(meta) {
            errs.push(FieldError::forbidden(
                &meta_path,
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
    if embedded && !preserve && props.is_none_or(|m| m.is_empty()) {
        errs.push(FieldError::required(
            &path.child("properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
    errs
}

/// Whether a root `metadata` schema says nothing but its type, a default
/// and (only) `name`/`generateName` properties.
fn metadata_schema_is_implicit(meta: &Value) -> bool {
    let Some(m) = meta.as_object() else { return true };
    m.iter().all(|(k, v)| {
        if !STRUCTURAL_FIELDS.contains(&k.as_str()) || matches!(k.as_str(), "type" | "default") || is_zero(k, v) {
            return true;
        }
        if k == "properties" {
            let Some(p) = v.as_object() else { return true };
            return p.is_empty() || p.keys().all(|n| n == "name" || n == "generateName");
        }
        false
    })
}

/// `validateValueValidation`: the `anyOf`/`allOf`/`oneOf`/`not` of a node
/// may only hold value validations.
fn value_validation(s: &Value, skip_any_of: bool, skip_first_all_of_any_of: bool, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if !skip_any_of {
        for (i, v) in list_of(s, "anyOf").iter().enumerate() {
            errs.extend(nested_value_validation(v, false, &path.child("anyOf").index(i)));
        }
    }
    for (i, v) in list_of(s, "allOf").iter().enumerate() {
        errs.extend(nested_value_validation(v, skip_first_all_of_any_of && i == 0, &path.child("allOf").index(i)));
    }
    for (i, v) in list_of(s, "oneOf").iter().enumerate() {
        errs.extend(nested_value_validation(v, false, &path.child("oneOf").index(i)));
    }
    if let Some(not) = s.get("not").filter(|n| n.is_object()) {
        errs.extend(nested_value_validation(not, false, &path.child("not")));
    }
    // `regexp.Compile(v.Pattern)`: Go's RE2 syntax and Go's error text.
    let pattern = str_of(s, "pattern");
    if !pattern.is_empty() {
        if let Some(e) = super::go_regexp::compile_error(pattern) {
            errs.push(FieldError::invalid(
                &path.child("pattern"),
                pattern,
                &format!("must be a valid regular expression, but isn't: {e}"),
            ));
        }
    }
    errs
}

fn nested_value_validation(v: &Value, skip_any_of: bool, path: &Path) -> ErrorList {
    let mut errs = value_validation(v, skip_any_of, false, path);
    if let Some(items) = items_schema(v) {
        errs.extend(nested_value_validation(items, false, &path.child("items")));
    }
    if let Some(props) = map_of(v, "properties") {
        for (k, p) in props {
            errs.extend(nested_value_validation(p, false, &path.child("properties").key(k)));
        }
    }
    if !str_of(v, "type").is_empty() {
        errs.push(FieldError::forbidden(&path.child("type"), "must be empty to be structural"));
    }
    match v.get("additionalProperties") {
        Some(Value::Bool(true)) | Some(Value::Object(_)) => {
            errs.push(FieldError::forbidden(&path.child("additionalProperties"), "must be undefined to be structural"))
        }
        _ => {}
    }
    if present(v, "default") {
        errs.push(FieldError::forbidden(&path.child("default"), "must be undefined to be structural"));
    }
    if !str_of(v, "title").is_empty() {
        errs.push(FieldError::forbidden(&path.child("title"), "must be empty to be structural"));
    }
    if !str_of(v, "description").is_empty() {
        errs.push(FieldError::forbidden(&path.child("description"), "must be empty to be structural"));
    }
    if is_true(v, "nullable") {
        errs.push(FieldError::forbidden(&path.child("nullable"), "must be false to be structural"));
    }
    for key in ["x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource", "x-kubernetes-int-or-string"]
    {
        if is_true(v, key) {
            errs.push(FieldError::forbidden(&path.child(key), "must be false to be structural"));
        }
    }
    if !list_of(v, "x-kubernetes-list-map-keys").is_empty() {
        errs.push(FieldError::forbidden(&path.child("x-kubernetes-list-map-keys"), "must be empty to be structural"));
    }
    for key in ["x-kubernetes-list-type", "x-kubernetes-map-type"] {
        if present(v, key) {
            errs.push(FieldError::forbidden(&path.child(key), "must be undefined to be structural"));
        }
    }
    if !list_of(v, "x-kubernetes-validations").is_empty() {
        errs.push(FieldError::forbidden(&path.child("x-kubernetes-validations"), "must be empty to be structural"));
    }
    if map_of(v, "properties").is_some_and(|p| p.contains_key("metadata")) {
        errs.push(FieldError::forbidden(
            &path.child("properties").key("metadata"),
            "must not be specified in a nested context",
        ));
    }
    errs
}

/// `validateValueValidationCompleteness`: every field a value validation
/// mentions must also be specified in the structural part of the schema.
fn value_validation_completeness(v: &Value, s: Option<&Value>, s_path: &Path, v_path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if let Some(not) = v.get("not").filter(|n| n.is_object()) {
        errs.extend(nested_completeness(not, s, s_path, &v_path.child("not")));
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for (i, n) in list_of(v, key).iter().enumerate() {
            errs.extend(nested_completeness(n, s, s_path, &v_path.child(key).index(i)));
        }
    }
    errs
}

fn nested_completeness(v: &Value, s: Option<&Value>, s_path: &Path, v_path: &Path) -> ErrorList {
    let Some(s) = s else {
        let detail = format!("because it is defined in {v_path}");
        return ErrorList(vec![FieldError::required(s_path, &detail)]);
    };
    let mut errs = value_validation_completeness(v, Some(s), s_path, v_path);
    if let Some(items) = items_schema(v) {
        errs.extend(nested_completeness(items, items_schema(s), &s_path.child("items"), &v_path.child("items")));
    }
    if let Some(props) = map_of(v, "properties") {
        for (k, p) in props {
            let sp = s_path.child("properties").key(k);
            let vp = v_path.child("properties").key(k);
            match map_of(s, "properties").and_then(|m| m.get(k)) {
                Some(sf) => errs.extend(nested_completeness(p, Some(sf), &sp, &vp)),
                None => errs.push(FieldError::required(&sp, &format!("because it is defined in {vp}"))),
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests;
