//! JSON patch (RFC 6902, `application/json-patch+json`) with the semantics
//! of the library upstream uses (`gopkg.in/evanphx/json-patch.v4` v4.12),
//! including where it departs from the RFC:
//!
//! - negative array indices count from the end (`-1` is the last item; for
//!   `add`, `-1` appends, as the index is taken against the grown array);
//!   `-` appends for `add` only;
//! - `replace` of a missing object member adds it (arrays still need an
//!   existing index);
//! - `copy` from a missing object member copies `null`;
//! - `test` of a missing member passes when `value` is `null`;
//! - a path without a leading `/` ignores its first segment; an empty path
//!   means the whole document only for `replace` and `test`;
//! - an absent `value` is `null`.
//!
//! Any failure while applying is upstream's 422 with a generic message; the
//! [`JsonPatchError`] text (the library's message) is for logs.

use serde_json::{Map, Value};

use super::{go_json_syntax_error, json_kind};
use crate::errors::ApiError;

/// Why an operation did not apply (the message evanphx/json-patch gives).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonPatchError(pub String);

impl std::fmt::Display for JsonPatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for JsonPatchError {}

/// One decoded operation: the op object as sent (`null` items decode to an
/// empty object, which fails as an unknown op when applied).
pub type Operation = Map<String, Value>;

/// Decodes a JSON patch body as upstream does with its default field
/// validation: a JSON array of objects whose `op`, `path` and `from` are
/// strings. Errors are 400 BadRequest `error decoding patch: …`. A `null`
/// body decodes to no operations.
pub fn decode(body: &[u8]) -> Result<Vec<Operation>, ApiError> {
    let bad = |m: String| ApiError::BadRequest(format!("error decoding patch: {}", m));
    let v: Value = serde_json::from_slice(body).map_err(|e| bad(go_json_syntax_error(body, &e)))?;
    let items = match v {
        Value::Array(a) => a,
        Value::Null => return Ok(Vec::new()),
        other => {
            return Err(bad(format!(
                "json: cannot unmarshal {} into Go value of type []handlers.jsonPatchOp",
                json_kind(&other)
            )))
        }
    };
    let mut ops = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Value::Object(m) => {
                for field in ["op", "path", "from"] {
                    if let Some(v) = m.get(field) {
                        if !(v.is_string() || v.is_null()) {
                            return Err(bad(format!(
                                "json: cannot unmarshal {} into Go struct field jsonPatchOp.{} of type string",
                                json_kind(v),
                                field
                            )));
                        }
                    }
                }
                ops.push(m);
            }
            Value::Null => ops.push(Map::new()),
            other => {
                return Err(bad(format!(
                    "json: cannot unmarshal {} into Go value of type handlers.jsonPatchOp",
                    json_kind(&other)
                )))
            }
        }
    }
    Ok(ops)
}

/// How much `copy` operations may grow a document in total (bytes of the
/// copied values' JSON): the API server's `JSONPatchMaxCopyBytes`, 3 MiB.
pub const ACCUMULATED_COPY_SIZE_LIMIT: usize = 3 * 1024 * 1024;

/// Applies decoded operations to a copy of `doc`, with the API server's
/// copy-size limit.
pub fn apply(doc: &Value, ops: &[Operation]) -> Result<Value, JsonPatchError> {
    apply_with_copy_limit(doc, ops, Some(ACCUMULATED_COPY_SIZE_LIMIT))
}

/// Applies decoded operations with a given limit on the total size of
/// copied values (`None`: unlimited).
pub fn apply_with_copy_limit(
    doc: &Value,
    ops: &[Operation],
    copy_limit: Option<usize>,
) -> Result<Value, JsonPatchError> {
    let mut doc = doc.clone();
    let mut copied = 0usize;
    for op in ops {
        apply_op(&mut doc, op, &mut copied, copy_limit)?;
    }
    Ok(doc)
}

/// Decodes and applies a JSON patch given as a JSON value (an array of ops).
pub fn apply_value(doc: &Value, patch: &Value) -> Result<Value, JsonPatchError> {
    let body = patch.to_string();
    let ops = decode(body.as_bytes()).map_err(|e| JsonPatchError(e.to_string()))?;
    apply(doc, &ops)
}

fn err<T>(msg: impl Into<String>) -> Result<T, JsonPatchError> {
    Err(JsonPatchError(msg.into()))
}

fn str_field<'a>(op: &'a Operation, name: &str) -> Option<&'a str> {
    op.get(name).and_then(Value::as_str)
}

fn kind(op: &Operation) -> &str {
    str_field(op, "op").unwrap_or("unknown")
}

/// `value`, with an absent member read as `null`.
fn value(op: &Operation) -> Value {
    op.get("value").cloned().unwrap_or(Value::Null)
}

fn apply_op(
    doc: &mut Value,
    op: &Operation,
    copied: &mut usize,
    copy_limit: Option<usize>,
) -> Result<(), JsonPatchError> {
    match kind(op) {
        "add" => {
            let Some(path) = str_field(op, "path") else {
                return err("add operation failed to decode path: missing value");
            };
            let Some((con, key)) = find_object(doc, path) else {
                return err(format!("add operation does not apply: doc is missing path: \"{}\": missing value", path));
            };
            add(con, &key, value(op)).map_err(|e| JsonPatchError(format!("error in add for path: '{}': {}", path, e.0)))
        }
        "remove" => {
            let Some(path) = str_field(op, "path") else {
                return err("remove operation failed to decode path: missing value");
            };
            let Some((con, key)) = find_object(doc, path) else {
                return err(format!(
                    "remove operation does not apply: doc is missing path: \"{}\": missing value",
                    path
                ));
            };
            remove(con, &key)
                .map(|_| ())
                .map_err(|e| JsonPatchError(format!("error in remove for path: '{}': {}", path, e.0)))
        }
        "replace" => {
            let Some(path) = str_field(op, "path") else {
                return err("replace operation failed to decode path: missing value");
            };
            if path.is_empty() {
                let v = value(op);
                if !(v.is_object() || v.is_array()) {
                    return err("replace operation value must be object or array");
                }
                *doc = v;
                return Ok(());
            }
            let Some((con, key)) = find_object(doc, path) else {
                return err(format!("replace operation does not apply: doc is missing path: {}: missing value", path));
            };
            if get(con, &key).is_err() {
                return err(format!("replace operation does not apply: doc is missing key: {}: missing value", path));
            }
            set(con, &key, value(op))
                .map_err(|e| JsonPatchError(format!("error in remove for path: '{}': {}", path, e.0)))
        }
        "move" => {
            let Some(from) = str_field(op, "from") else {
                return err("move operation failed to decode from: operation, missing from field: missing value");
            };
            let Some((con, key)) = find_object(doc, from) else {
                return err(format!(
                    "move operation does not apply: doc is missing from path: {}: missing value",
                    from
                ));
            };
            let val = get(con, &key)
                .map_err(|e| JsonPatchError(format!("error in move for path: '{}': {}", key, e.0)))?
                .cloned()
                .unwrap_or(Value::Null);
            remove(con, &key).map_err(|e| JsonPatchError(format!("error in move for path: '{}': {}", key, e.0)))?;
            let Some(path) = str_field(op, "path") else {
                return err("move operation failed to decode path: operation missing path field: missing value");
            };
            let Some((con, key)) = find_object(doc, path) else {
                return err(format!(
                    "move operation does not apply: doc is missing destination path: {}: missing value",
                    path
                ));
            };
            add(con, &key, val).map_err(|e| JsonPatchError(format!("error in move for path: '{}': {}", path, e.0)))
        }
        "test" => {
            let Some(path) = str_field(op, "path") else {
                return err("test operation failed to decode path: operation missing path field: missing value");
            };
            let expected = op.get("value");
            if path.is_empty() {
                return if Some(&*doc) == expected {
                    Ok(())
                } else {
                    err(format!("testing value {} failed: test failed", path))
                };
            }
            let Some((con, key)) = find_object(doc, path) else {
                return err(format!("test operation does not apply: is missing path: {}: missing value", path));
            };
            let actual =
                get(con, &key).map_err(|e| JsonPatchError(format!("error in test for path: '{}': {}", path, e.0)))?;
            let pass = match (actual.filter(|v| !v.is_null()), expected) {
                (None, None) | (None, Some(Value::Null)) => true,
                (None, Some(_)) | (Some(_), None) => false,
                (Some(a), Some(e)) => a == e,
            };
            if pass {
                Ok(())
            } else {
                err(format!("testing value {} failed: test failed", path))
            }
        }
        "copy" => {
            let Some(from) = str_field(op, "from") else {
                return err("copy operation failed to decode from: operation, missing from field: missing value");
            };
            let Some((con, key)) = find_object(doc, from) else {
                return err(format!(
                    "copy operation does not apply: doc is missing from path: {}: missing value",
                    from
                ));
            };
            let val = get(con, &key)
                .map_err(|e| JsonPatchError(format!("error in copy for from: '{}': {}", from, e.0)))?
                .cloned()
                .unwrap_or(Value::Null);
            let Some(path) = str_field(op, "path") else {
                return err("copy operation failed to decode path: missing value");
            };
            let Some((con, key)) = find_object(doc, path) else {
                return err(format!(
                    "copy operation does not apply: doc is missing destination path: {}: missing value",
                    path
                ));
            };
            *copied += val.to_string().len();
            if let Some(limit) = copy_limit {
                if *copied > limit {
                    return err(format!(
                        "Unable to complete the copy, the accumulated size increase of copy is {}, exceeding the limit {}",
                        copied, limit
                    ));
                }
            }
            add(con, &key, val).map_err(|e| JsonPatchError(format!("error while adding value during copy: {}", e.0)))
        }
        other => err(format!("Unexpected kind: {}", other)),
    }
}

/// RFC 6901 unescaping, left to right (`~1` → `/`, `~0` → `~`).
fn decode_key(k: &str) -> String {
    let mut out = String::with_capacity(k.len());
    let mut chars = k.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.peek() {
                Some('1') => {
                    chars.next();
                    out.push('/');
                    continue;
                }
                Some('0') => {
                    chars.next();
                    out.push('~');
                    continue;
                }
                _ => {}
            }
        }
        out.push(c);
    }
    out
}

/// The container holding the last segment of `path`, and that segment.
/// Intermediate segments must name existing objects or arrays.
fn find_object<'a>(doc: &'a mut Value, path: &str) -> Option<(&'a mut Value, String)> {
    let split: Vec<&str> = path.split('/').collect();
    if split.len() < 2 {
        return None;
    }
    let key = decode_key(split[split.len() - 1]);
    let mut cur = doc;
    for part in &split[1..split.len() - 1] {
        let part = decode_key(part);
        let next = match cur {
            Value::Object(m) => m.get_mut(&part)?,
            Value::Array(a) => {
                let i = array_index(a.len(), &part).ok()?;
                &mut a[i]
            }
            _ => return None,
        };
        if !(next.is_object() || next.is_array()) {
            return None;
        }
        cur = next;
    }
    if !(cur.is_object() || cur.is_array()) {
        return None;
    }
    Some((cur, key))
}

fn atoi(key: &str) -> Result<i64, JsonPatchError> {
    let digits = key.strip_prefix(['+', '-']).unwrap_or(key);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return err(format!("strconv.Atoi: parsing {:?}: invalid syntax", key));
    }
    key.parse::<i64>().map_err(|_| JsonPatchError(format!("strconv.Atoi: parsing {:?}: value out of range", key)))
}

fn invalid_index(idx: i64) -> JsonPatchError {
    JsonPatchError(format!("Unable to access invalid index: {}: invalid index referenced", idx))
}

/// An existing index for get/replace: negative counts from the end.
fn array_index(len: usize, key: &str) -> Result<usize, JsonPatchError> {
    let mut idx = atoi(key)?;
    let n = len as i64;
    if idx < 0 {
        if idx < -n {
            return Err(invalid_index(idx));
        }
        idx += n;
    }
    if idx >= n {
        return Err(invalid_index(idx));
    }
    Ok(idx as usize)
}

/// The member or item at `key`; `Ok(None)` for a missing object member.
fn get<'a>(con: &'a Value, key: &str) -> Result<Option<&'a Value>, JsonPatchError> {
    match con {
        Value::Object(m) => Ok(m.get(key)),
        Value::Array(a) => Ok(Some(&a[array_index(a.len(), key)?])),
        _ => err("unknown object type"),
    }
}

fn set(con: &mut Value, key: &str, val: Value) -> Result<(), JsonPatchError> {
    match con {
        Value::Object(m) => {
            m.insert(key.to_string(), val);
            Ok(())
        }
        Value::Array(a) => {
            let i = array_index(a.len(), key)?;
            a[i] = val;
            Ok(())
        }
        _ => err("unknown object type"),
    }
}

fn add(con: &mut Value, key: &str, val: Value) -> Result<(), JsonPatchError> {
    match con {
        Value::Object(m) => {
            m.insert(key.to_string(), val);
            Ok(())
        }
        Value::Array(a) => {
            if key == "-" {
                a.push(val);
                return Ok(());
            }
            let mut idx = atoi(key)
                .map_err(|e| JsonPatchError(format!("value was not a proper array index: '{}': {}", key, e.0)))?;
            let size = a.len() as i64 + 1;
            if idx >= size {
                return Err(invalid_index(idx));
            }
            if idx < 0 {
                if idx < -size {
                    return Err(invalid_index(idx));
                }
                idx += size;
            }
            a.insert(idx as usize, val);
            Ok(())
        }
        _ => err("unknown object type"),
    }
}

fn remove(con: &mut Value, key: &str) -> Result<Value, JsonPatchError> {
    match con {
        Value::Object(m) => match m.remove(key) {
            Some(v) => Ok(v),
            None => err(format!("Unable to remove nonexistent key: {}: missing value", key)),
        },
        Value::Array(a) => {
            let mut idx = atoi(key)?;
            let n = a.len() as i64;
            if idx >= n {
                return Err(invalid_index(idx));
            }
            if idx < 0 {
                if idx < -n {
                    return Err(invalid_index(idx));
                }
                idx += n;
            }
            Ok(a.remove(idx as usize))
        }
        _ => err("unknown object type"),
    }
}
