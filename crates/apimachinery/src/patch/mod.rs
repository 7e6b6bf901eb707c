//! PATCH bodies: JSON patch (RFC 6902), JSON merge patch (RFC 7386) and
//! strategic merge patch, applied to an object as upstream's
//! `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go` does
//! (Kubernetes 1.33), with the same errors.
//!
//! Entry points:
//! - [`PatchType::from_content_type`] / [`patch_type_for_request`]: the
//!   `Content-Type` of a PATCH, with upstream's 415 for anything else (and for
//!   strategic merge patch on custom resources).
//! - [`apply_patch`] / [`apply_patch_detailed`]: apply a JSON, merge or
//!   strategic merge patch to the current object. Server-side apply
//!   (`application/apply-patch+yaml`) is handled by [`crate::apply`].
//! - [`metadata`]: the patch strategies and merge keys of the built-in types
//!   (also what OpenAPI publishes as `x-kubernetes-patch-strategy` /
//!   `x-kubernetes-patch-merge-key`).
//!
//! Status codes, as upstream maps them:
//!
//! | failure | status |
//! |---|---|
//! | body is not valid JSON, or not of the patch type's shape (not an array of ops / not an object) | 400 BadRequest (`error decoding patch: …` for JSON and merge patches) |
//! | merge patch body `null` | 400 BadRequest `Invalid JSON Patch` |
//! | JSON patch with more than 10 000 operations | 413 RequestEntityTooLarge |
//! | a JSON patch operation that does not apply (missing path, failed `test`, bad index, unknown op) | 422 Invalid, message `the server rejected our request due to an error in our request`, empty details |
//! | SMP: bad `$deleteFromPrimitiveList`, `$retainKeys` or `$setElementOrder` format | 400 BadRequest |
//! | SMP: lists of lists | 422 Invalid (generic message as above) |
//! | SMP: any other failure (missing merge key, unknown `$patch` value, mismatched list element types, …) | 500 with an empty reason and the error text as message (upstream returns a plain Go error) |
//! | SMP on a custom resource | 415 UnsupportedMediaType |
//! | patched document is not an object | 422 Invalid on field `patch` |

pub mod json_patch;
pub mod merge_patch;
pub mod metadata;
pub mod strategic;

use serde_json::Value;

use crate::errors::{ApiError, StatusCause};
use crate::registry::GroupVersionKind;

/// Upstream caps the number of operations in one JSON patch.
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// The message upstream's `NewGenericServerResponse` gives a 422: what a
/// client sees when a JSON patch does not apply.
pub const GENERIC_INVALID_MESSAGE: &str = "the server rejected our request due to an error in our request";

/// The kind of a PATCH body, from its `Content-Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PatchType {
    /// `application/json-patch+json` (RFC 6902).
    Json,
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/strategic-merge-patch+json` (built-in kinds only).
    StrategicMerge,
    /// `application/apply-patch+yaml` (server-side apply, see [`crate::apply`]).
    Apply,
}

impl PatchType {
    /// Parses a `Content-Type` header value. Parameters after `;` (such as
    /// `charset=utf-8`) are ignored, as upstream does; the media type itself
    /// must match exactly.
    pub fn from_content_type(content_type: &str) -> Option<PatchType> {
        let media = content_type.split(';').next().unwrap_or("").trim();
        match media {
            "application/json-patch+json" => Some(PatchType::Json),
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/strategic-merge-patch+json" => Some(PatchType::StrategicMerge),
            "application/apply-patch+yaml" => Some(PatchType::Apply),
            _ => None,
        }
    }

    /// The media type (`application/json-patch+json`, …).
    pub fn media_type(self) -> &'static str {
        match self {
            PatchType::Json => "application/json-patch+json",
            PatchType::Merge => "application/merge-patch+json",
            PatchType::StrategicMerge => "application/strategic-merge-patch+json",
            PatchType::Apply => "application/apply-patch+yaml",
        }
    }
}

/// The 415 upstream answers for a PATCH whose `Content-Type` the resource
/// does not accept. Built-in resources accept all four patch types; custom
/// resources all but strategic merge patch:
/// `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml`.
pub fn unsupported_patch_media_type(builtin: bool) -> ApiError {
    let accepted: &[&str] = if builtin {
        &[
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
            "application/apply-patch+yaml",
        ]
    } else {
        &["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"]
    };
    ApiError::UnsupportedMediaType(format!(
        "the body of the request was in an unknown format - accepted media types include: {}",
        accepted.join(", ")
    ))
}

/// The patch type of a PATCH request to a built-in (`builtin = true`) or
/// custom resource, or upstream's 415 (see [`unsupported_patch_media_type`]).
/// Upstream checks this before reading the body.
pub fn patch_type_for_request(content_type: &str, builtin: bool) -> Result<PatchType, ApiError> {
    match PatchType::from_content_type(content_type) {
        Some(PatchType::StrategicMerge) if !builtin => Err(unsupported_patch_media_type(false)),
        Some(t) => Ok(t),
        None => Err(unsupported_patch_media_type(builtin)),
    }
}

/// The result of [`apply_patch_detailed`].
#[derive(Clone, Debug, PartialEq)]
pub struct PatchOutcome {
    /// The patched object.
    pub object: Value,
    /// Paths (`spec.template.spec.containers[0].$setElementOrder/env`) of
    /// strategic-merge-patch directives that ended up in the object (e.g.
    /// inside a list item the patch added whole) and were dropped. Upstream
    /// drops them when decoding into the typed object and reports each as
    /// `unknown field "<path>"`: a warning under `fieldValidation=Warn`
    /// (the default), a 422 under `Strict`.
    pub unknown_fields: Vec<String>,
}

/// Applies a JSON, merge or strategic merge patch (`patch`, the raw request
/// body) to `original` (the current object, in the request's version).
///
/// `gvk` is the kind of a built-in resource; `None` means a custom resource,
/// for which strategic merge patch is refused with 415 as upstream does. A
/// built-in kind not in [`metadata`] patches with the default rules.
/// [`PatchType::Apply`] is refused: server-side apply is handled elsewhere.
///
/// Body decoding follows upstream's default `fieldValidation` (Warn): the
/// body is decoded strictly as the patch type's shape first.
pub fn apply_patch(
    patch_type: PatchType,
    original: &Value,
    patch: &[u8],
    gvk: Option<&GroupVersionKind>,
) -> Result<Value, ApiError> {
    apply_patch_detailed(patch_type, original, patch, gvk).map(|o| o.object)
}

/// [`apply_patch`], also reporting the directive keys dropped from the
/// result (see [`PatchOutcome::unknown_fields`]).
pub fn apply_patch_detailed(
    patch_type: PatchType,
    original: &Value,
    patch: &[u8],
    gvk: Option<&GroupVersionKind>,
) -> Result<PatchOutcome, ApiError> {
    let (object, unknown_fields) = match patch_type {
        PatchType::Json => {
            let ops = json_patch::decode(patch)?;
            if ops.len() > MAX_JSON_PATCH_OPERATIONS {
                return Err(ApiError::RequestEntityTooLarge(format!(
                    "Request entity too large: The allowed maximum operations in a JSON patch is {}, got {}",
                    MAX_JSON_PATCH_OPERATIONS,
                    ops.len()
                )));
            }
            let out = json_patch::apply(original, &ops).map_err(|_| generic_invalid())?;
            (out, Vec::new())
        }
        PatchType::Merge => {
            let p = merge_patch::decode(patch)?;
            (merge_patch::apply(original, &p), Vec::new())
        }
        PatchType::StrategicMerge => {
            let Some(gvk) = gvk else {
                return Err(unsupported_patch_media_type(false));
            };
            let p = strategic::decode(patch)?;
            let Some(p) = p else {
                // `null`: nothing to merge.
                return Ok(PatchOutcome { object: original.clone(), unknown_fields: Vec::new() });
            };
            let schema = metadata::kind_schema(gvk.group, gvk.version, gvk.kind);
            let mut out = strategic::apply(original, p, schema).map_err(|e| e.into_api_error())?;
            let dropped = strategic::strip_directives(&mut out);
            (out, dropped)
        }
        PatchType::Apply => {
            return Err(ApiError::Internal(
                "apply patches (application/apply-patch+yaml) are handled by server-side apply, not by apply_patch"
                    .into(),
            ))
        }
    };
    if !object.is_object() {
        let detail =
            format!("json: cannot unmarshal {} into Go value of type map[string]interface {{}}", json_kind(&object));
        return Err(ApiError::Invalid {
            group: String::new(),
            kind: String::new(),
            name: String::new(),
            causes: vec![StatusCause {
                reason: "FieldValueInvalid".into(),
                message: format!("Invalid value: {}: {}", go_quote(&object.to_string()), detail),
                field: "patch".into(),
            }],
        });
    }
    Ok(PatchOutcome { object, unknown_fields })
}

/// Upstream's 422 for a patch that does not apply: reason `Invalid`, the
/// generic message, empty details.
pub fn generic_invalid() -> ApiError {
    ApiError::Generic { code: 422, reason: "Invalid", message: GENERIC_INVALID_MESSAGE.to_string() }
}

// ---- helpers shared by the submodules: Go-compatible messages ----

/// JSON type name as Go's `UnmarshalTypeError` spells it.
pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A Go-like message for a body that is not valid JSON (what
/// `encoding/json` says: `unexpected end of JSON input`,
/// `invalid character 'x' looking for beginning of value`, …).
pub(crate) fn go_json_syntax_error(body: &[u8], err: &serde_json::Error) -> String {
    if err.is_eof() {
        return "unexpected end of JSON input".into();
    }
    // Locate the offending byte from serde's 1-based line/column.
    let (line, col) = (err.line(), err.column());
    let mut offset = None;
    let mut cur_line = 1;
    let mut line_start = 0;
    for (i, b) in body.iter().enumerate() {
        if cur_line == line {
            offset = Some(line_start + col.saturating_sub(1));
            break;
        }
        if *b == b'\n' {
            cur_line += 1;
            line_start = i + 1;
        }
    }
    if offset.is_none() && cur_line == line {
        offset = Some(line_start + col.saturating_sub(1));
    }
    let msg = err.to_string();
    let context = if msg.starts_with("trailing characters") {
        "after top-level value"
    } else if msg.starts_with("key must be a string") {
        "looking for beginning of object key string"
    } else if msg.starts_with("expected `:`") {
        "after object key"
    } else if msg.starts_with("expected `,` or `}`") {
        "after object key:value pair"
    } else if msg.starts_with("expected `,` or `]`") {
        "after array element"
    } else {
        "looking for beginning of value"
    };
    match offset.and_then(|o| body.get(o)) {
        Some(b) if b.is_ascii_graphic() => format!("invalid character '{}' {}", *b as char, context),
        Some(b) => format!("invalid character {:?} {}", *b as char, context),
        None => "unexpected end of JSON input".into(),
    }
}

/// Go's `%q` of a string (close enough: JSON escaping).
pub(crate) fn go_quote(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// Go's name of the dynamic type of a decoded JSON value (as `reflect.TypeOf`
/// prints it), for upstream's `expected a X, but received a Y` messages.
pub(crate) fn go_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "%!s(<nil>)",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// Go's `%v` of a decoded JSON value: `map[a:1 b:[x y]]`, `<nil>`, …
pub(crate) fn go_v(v: &Value) -> String {
    let mut s = String::new();
    write_go_v(&mut s, v);
    s
}

fn write_go_v(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if let Some(f) = n.as_f64().filter(|_| n.is_f64()) {
                out.push_str(&go_float(f));
            } else {
                out.push_str(&n.to_string());
            }
        }
        Value::String(s) => out.push_str(s),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_go_v(out, x);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push_str("map[");
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                write_go_v(out, &m[k.as_str()]);
            }
            out.push(']');
        }
    }
}

/// Go's `%v` of a float64 (`strconv.FormatFloat(f, 'g', -1, 64)`).
fn go_float(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    if !f.is_finite() {
        return if f.is_nan() {
            "NaN".into()
        } else if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    // Shortest round-trip digits and decimal exponent.
    let e = format!("{:e}", f);
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let sign = if neg { "-" } else { "" };
    if !(-4..6).contains(&exp) {
        // %e form: d.ddde±XX
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() { String::new() } else { format!(".{}", rest) };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{}{}{}e{}{:02}", sign, first, frac, esign, exp.abs())
    } else if exp < 0 {
        format!("{}0.{}{}", sign, "0".repeat((-exp - 1) as usize), digits)
    } else {
        let exp = exp as usize;
        if digits.len() > exp + 1 {
            format!("{}{}.{}", sign, &digits[..exp + 1], &digits[exp + 1..])
        } else {
            format!("{}{}{}", sign, digits, "0".repeat(exp + 1 - digits.len()))
        }
    }
}

#[cfg(test)]
mod tests;
