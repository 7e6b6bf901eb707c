//! JSON merge patch (RFC 7386, `application/merge-patch+json`) with the
//! semantics of the library upstream uses (`gopkg.in/evanphx/json-patch.v4`
//! v4.12 `MergePatch`):
//!
//! - objects merge recursively; a `null` value deletes the key;
//! - any other value (arrays included) replaces the target whole;
//! - a value set where the target had nothing (or `null`), or replacing a
//!   non-object, has its `null` object members removed recursively (also
//!   inside arrays; `null` array items themselves stay);
//! - a non-object replacing an object is taken as is.

use serde_json::{Map, Value};

use super::{go_json_syntax_error, json_kind};
use crate::errors::ApiError;

/// Decodes a merge patch body as upstream does (default field validation):
/// it must be a JSON object. Errors are 400 BadRequest:
/// `error decoding patch: <decoder message>`, or `Invalid JSON Patch` for a
/// `null` body.
pub fn decode(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::BadRequest(format!("error decoding patch: {}", go_json_syntax_error(body, &e))))?;
    match v {
        Value::Object(m) => Ok(m),
        Value::Null => Err(ApiError::BadRequest("Invalid JSON Patch".into())),
        other => Err(ApiError::BadRequest(format!(
            "error decoding patch: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            json_kind(&other)
        ))),
    }
}

/// Applies a decoded merge patch to `original` (an object; anything else is
/// treated as an empty object).
pub fn apply(original: &Value, patch: &Map<String, Value>) -> Value {
    let mut doc = match original {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    merge_docs(&mut doc, patch.clone());
    Value::Object(doc)
}

/// RFC 7386 on arbitrary values: an object patch merges into an object
/// target; any other patch replaces the target (with `null` object members
/// pruned).
pub fn merge_patch(original: &Value, patch: &Value) -> Value {
    match patch {
        Value::Object(p) => apply(original, p),
        other => {
            let mut v = other.clone();
            prune_nulls(&mut v);
            v
        }
    }
}

fn merge_docs(doc: &mut Map<String, Value>, patch: Map<String, Value>) {
    for (k, v) in patch {
        if v.is_null() {
            doc.remove(&k);
            continue;
        }
        match doc.get_mut(&k) {
            None | Some(Value::Null) => {
                let mut v = v;
                prune_nulls(&mut v);
                doc.insert(k, v);
            }
            Some(cur) => {
                let merged = merge(std::mem::take(cur), v);
                *cur = merged;
            }
        }
    }
}

fn merge(cur: Value, patch: Value) -> Value {
    match (cur, patch) {
        (Value::Object(mut c), Value::Object(p)) => {
            merge_docs(&mut c, p);
            Value::Object(c)
        }
        // The target is an object but the patch is not: taken as is.
        (Value::Object(_), p) => p,
        // The target is not an object: the patch replaces it, nulls pruned.
        (_, mut p) => {
            prune_nulls(&mut p);
            p
        }
    }
}

fn prune_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, x| !x.is_null());
            for x in m.values_mut() {
                prune_nulls(x);
            }
        }
        Value::Array(a) => {
            for x in a.iter_mut() {
                prune_nulls(x);
            }
        }
        _ => {}
    }
}
