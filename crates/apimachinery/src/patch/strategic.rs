//! Strategic merge patch, applied server-side as upstream's
//! `strategicpatch.StrategicMergeMapPatch` (apimachinery v0.33) does:
//!
//! - maps merge recursively; `null` deletes a key; a value for a key the
//!   original lacks is taken with its `null`s and `$patch` maps removed;
//! - lists follow the field's strategy ([`super::metadata`]): `merge` with a
//!   merge key matches items by key and merges them, `merge` without one is a
//!   set union of primitives, anything else replaces the list; the merged
//!   order is patch items in patch order interleaved with server-only items
//!   in server order;
//! - fields with the `replace` strategy are replaced whole;
//! - directives: `$patch: replace|delete` on maps, `$patch: delete|replace` as
//!   list items, `$retainKeys`, `$setElementOrder/<list>`,
//!   `$deleteFromPrimitiveList/<list>`.
//!
//! Errors carry upstream's messages and status class ([`SmpError`]).

use std::cmp::Ordering;

use serde_json::{Map, Value};

use super::metadata::{FieldShape, PatchStrategy, TypeInfo, NONE};
use super::{go_json_syntax_error, go_type_name, go_v, json_kind};
use crate::errors::ApiError;

const DIRECTIVE_MARKER: &str = "$patch";
const DELETE_DIRECTIVE: &str = "delete";
const REPLACE_DIRECTIVE: &str = "replace";
const MERGE_DIRECTIVE: &str = "merge";
const RETAIN_KEYS_DIRECTIVE: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST_PREFIX: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER_PREFIX: &str = "$setElementOrder";

/// `mergepatch.ErrBadPatchFormatForPrimitiveList`.
pub const ERR_BAD_PATCH_FORMAT_FOR_PRIMITIVE_LIST: &str = "invalid patch format of primitive list";
/// `mergepatch.ErrBadPatchFormatForRetainKeys`.
pub const ERR_BAD_PATCH_FORMAT_FOR_RETAIN_KEYS: &str = "invalid patch format of retainKeys";
/// `mergepatch.ErrBadPatchFormatForSetElementOrderList`.
pub const ERR_BAD_PATCH_FORMAT_FOR_SET_ELEMENT_ORDER_LIST: &str = "invalid patch format of setElementOrder list";
/// `mergepatch.ErrNoListOfLists`.
pub const ERR_NO_LIST_OF_LISTS: &str = "lists of lists are not supported";

/// A strategic merge patch failure, classed as upstream's
/// `interpretStrategicMergePatchError` classes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SmpError {
    /// 400 BadRequest: malformed directive (`$deleteFromPrimitiveList`,
    /// `$retainKeys`, `$setElementOrder` format), or a body that is not a
    /// JSON object.
    BadRequest(String),
    /// 422 Invalid with the generic message (lists of lists).
    Invalid(String),
    /// Any other failure: upstream returns the plain Go error, which the
    /// handler turns into a 500 with an empty reason and this message.
    Internal(String),
}

impl std::fmt::Display for SmpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SmpError::BadRequest(m) | SmpError::Invalid(m) | SmpError::Internal(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for SmpError {}

impl SmpError {
    /// The API error upstream answers with.
    pub fn into_api_error(self) -> ApiError {
        match self {
            SmpError::BadRequest(m) => ApiError::BadRequest(m),
            SmpError::Invalid(_) => super::generic_invalid(),
            SmpError::Internal(m) => ApiError::Generic { code: 500, reason: "", message: m },
        }
    }
}

type Res<T> = Result<T, SmpError>;

fn internal<T>(msg: String) -> Res<T> {
    Err(SmpError::Internal(msg))
}

fn err_bad_arg_type_map(actual: &Value) -> SmpError {
    SmpError::Internal(format!("expected a map[string]interface {{}}, but received a {}", go_type_name(actual)))
}

fn err_bad_arg_type_slice(actual: &Value) -> SmpError {
    SmpError::Internal(format!("expected a []interface {{}}, but received a {}", go_type_name(actual)))
}

fn err_no_merge_key(m: &Map<String, Value>, key: &str) -> SmpError {
    SmpError::Internal(format!("map: {} does not contain declared merge key: {}", go_v(&Value::Object(m.clone())), key))
}

fn err_bad_patch_type(t: &Value, m: &Map<String, Value>) -> SmpError {
    let ts = match t {
        Value::String(s) => s.clone(),
        other => format!("%!s({}={})", go_type_name(other), go_v(other)),
    };
    SmpError::Internal(format!("unknown patch type: {} in map: {}", ts, go_v(&Value::Object(m.clone()))))
}

/// Decodes a strategic merge patch body as upstream does before merging:
/// it must be a JSON object (`null` is accepted and changes nothing, so it
/// decodes to `None`). Failures are 400 BadRequest with Go's decoder message.
pub fn decode(body: &[u8]) -> Result<Option<Map<String, Value>>, ApiError> {
    let v: Value = serde_json::from_slice(body).map_err(|e| ApiError::BadRequest(go_json_syntax_error(body, &e)))?;
    match v {
        Value::Object(m) => Ok(Some(m)),
        Value::Null => Ok(None),
        other => Err(ApiError::BadRequest(format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            json_kind(&other)
        ))),
    }
}

/// Where the walk is in the type tree.
#[derive(Clone, Copy, Debug)]
enum Schema {
    /// No patch metadata below here: default rules.
    None,
    /// A listed struct type.
    Struct(&'static TypeInfo),
    /// A map whose values are of this listed type.
    MapOf(&'static TypeInfo),
}

impl Schema {
    fn of(t: Option<&'static TypeInfo>) -> Schema {
        t.map(Schema::Struct).unwrap_or(Schema::None)
    }

    /// The schema of the value under `key`, its strategy and merge key. For
    /// list fields the schema is that of the list's items.
    fn lookup(self, key: &str) -> (Schema, PatchStrategy, Option<&'static str>) {
        match self {
            Schema::None => (Schema::None, NONE, None),
            Schema::MapOf(t) => (Schema::Struct(t), NONE, None),
            Schema::Struct(t) => match t.field(key) {
                None => (Schema::None, NONE, None),
                Some(f) => {
                    let child = match (f.shape, f.value_type()) {
                        (FieldShape::Map, Some(t)) => Schema::MapOf(t),
                        (_, t) => Schema::of(t),
                    };
                    (child, f.strategy, f.merge_key)
                }
            },
        }
    }

    /// Go's `Kind()` name of the item type, for one error message.
    fn item_kind_name(self) -> &'static str {
        match self {
            Schema::None => "string",
            _ => "struct",
        }
    }
}

/// Applies `patch` to `original` with the root type `root` (the kind's type;
/// `None` for a built-in kind without patch metadata). The result may still
/// contain directive keys inside values the patch added whole, as upstream's
/// does; [`strip_directives`] removes them (upstream drops them when decoding
/// into the typed object).
pub fn apply(original: &Value, patch: Map<String, Value>, root: Option<&'static TypeInfo>) -> Result<Value, SmpError> {
    let original = match original {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    merge_map(original, patch, Schema::of(root)).map(Value::Object)
}

/// Applies a strategic merge patch given as JSON to `original` for the
/// built-in kind `(group, version, kind)`, like upstream's
/// `StrategicMergePatch`. Directive keys left in the result are removed.
pub fn strategic_merge_patch(
    original: &Value,
    patch: &Value,
    group: &str,
    version: &str,
    kind: &str,
) -> Result<Value, SmpError> {
    let p = match patch {
        Value::Object(m) => m.clone(),
        Value::Null => return Ok(original.clone()),
        other => {
            return Err(SmpError::BadRequest(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                json_kind(other)
            )))
        }
    };
    let mut out = apply(original, p, super::metadata::kind_schema(group, version, kind))?;
    strip_directives(&mut out);
    Ok(out)
}

fn is_directive_key(k: &str) -> bool {
    k == DIRECTIVE_MARKER
        || k == RETAIN_KEYS_DIRECTIVE
        || k.starts_with(&format!("{}/", SET_ELEMENT_ORDER_PREFIX))
        || k.starts_with(&format!("{}/", DELETE_FROM_PRIMITIVE_LIST_PREFIX))
}

/// Removes strategic-merge-patch directive keys (`$patch`, `$retainKeys`,
/// `$setElementOrder/…`, `$deleteFromPrimitiveList/…`) left anywhere in a
/// patched object and returns their paths in upstream's field-path form
/// (`spec.containers[0].$setElementOrder/env`), sorted.
pub fn strip_directives(v: &mut Value) -> Vec<String> {
    let mut out = Vec::new();
    strip_at(v, String::new(), &mut out);
    out.sort();
    out
}

fn strip_at(v: &mut Value, path: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            let dirs: Vec<String> = m.keys().filter(|k| is_directive_key(k)).cloned().collect();
            for k in dirs {
                m.remove(&k);
                out.push(if path.is_empty() { k } else { format!("{}.{}", path, k) });
            }
            for (k, child) in m.iter_mut() {
                let p = if path.is_empty() { k.clone() } else { format!("{}.{}", path, k) };
                strip_at(child, p, out);
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter_mut().enumerate() {
                strip_at(child, format!("{}[{}]", path, i), out);
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------
// Go value semantics

/// The dynamic Go type of a decoded JSON value (`reflect.TypeOf`): numbers
/// decode to int64 or float64.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum GoType {
    Nil,
    Bool,
    Int,
    Float,
    String,
    Slice,
    Map,
}

fn go_type(v: &Value) -> GoType {
    match v {
        Value::Null => GoType::Nil,
        Value::Bool(_) => GoType::Bool,
        Value::Number(n) if n.is_f64() => GoType::Float,
        Value::Number(_) => GoType::Int,
        Value::String(_) => GoType::String,
        Value::Array(_) => GoType::Slice,
        Value::Object(_) => GoType::Map,
    }
}

/// A merge key's value as Go sees it (a missing key and JSON `null` are both nil).
fn key_of<'a>(item: &'a Value, key: &str) -> Option<&'a Value> {
    match item {
        Value::Object(m) => m.get(key).filter(|v| !v.is_null()),
        _ => None,
    }
}

fn is_string(v: &Value, s: &str) -> bool {
    matches!(v, Value::String(x) if x == s)
}

/// `$setElementOrder/x` → `x`, as upstream's `extractKey`.
fn extract_key<'a>(s: &'a str, prefix: &str, err: &'static str) -> Res<&'a str> {
    match s.split_once('/') {
        Some((p, rest)) if p == prefix => Ok(rest),
        _ => Err(SmpError::BadRequest(err.to_string())),
    }
}

// ---------------------------------------------------------------------------
// maps

fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    schema: Schema,
) -> Res<Map<String, Value>> {
    if let Some(d) = patch.get(DIRECTIVE_MARKER) {
        if is_string(d, REPLACE_DIRECTIVE) {
            patch.remove(DIRECTIVE_MARKER);
            return Ok(patch);
        }
        if is_string(d, DELETE_DIRECTIVE) {
            return Ok(Map::new());
        }
        return Err(err_bad_patch_type(d, &patch));
    }

    apply_retain_keys_directive(&mut original, &mut patch)?;
    merge_patch_into_original(&mut original, &mut patch, schema)?;

    let mut keys: Vec<String> = patch.keys().cloned().collect();
    keys.sort();
    for k in keys {
        let patch_v = patch.remove(&k).unwrap_or(Value::Null);
        let (key, is_delete_list) = if k.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX) {
            (
                extract_key(&k, DELETE_FROM_PRIMITIVE_LIST_PREFIX, ERR_BAD_PATCH_FORMAT_FOR_PRIMITIVE_LIST)?
                    .to_string(),
                true,
            )
        } else {
            (k.clone(), false)
        };

        if patch_v.is_null() {
            original.remove(&key);
            continue;
        }

        let same_type = original.get(&key).map(|o| go_type(o) == go_type(&patch_v));
        match same_type {
            None | Some(false) => {
                if !is_delete_list {
                    let mut v = patch_v;
                    discard_null_values(&mut v);
                    match remove_directives(v) {
                        Some(v) => {
                            original.insert(key, v);
                        }
                        None => {
                            original.remove(&key);
                        }
                    }
                }
                continue;
            }
            Some(true) => {}
        }

        let orig_v = original.remove(&key).unwrap_or(Value::Null);
        let merged = match (orig_v, patch_v) {
            (Value::Object(o), Value::Object(p)) => {
                let (sub, strategy, _) = schema.lookup(&key);
                if strategy.is_replace() {
                    Value::Object(p)
                } else {
                    Value::Object(merge_map(o, p, sub)?)
                }
            }
            (Value::Array(o), Value::Array(p)) => {
                let (sub, strategy, mk) = schema.lookup(&key);
                Value::Array(merge_slice_handler(o, p, sub, strategy, mk, is_delete_list)?.0)
            }
            (_, p) => match remove_directives(p) {
                Some(v) => v,
                None => continue,
            },
        };
        original.insert(key, merged);
    }
    Ok(original)
}

/// Removes `null` map entries, recursively through maps and lists (list
/// items that are `null` stay), as upstream's `discardNullValuesFromPatch`.
fn discard_null_values(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, x| !x.is_null());
            for x in m.values_mut() {
                discard_null_values(x);
            }
        }
        Value::Array(a) => {
            for x in a.iter_mut() {
                discard_null_values(x);
            }
        }
        _ => {}
    }
}

/// Drops maps carrying `$patch` (and the keys or list items holding them),
/// recursively, as upstream's `removeDirectives`. `None`: drop the value.
fn remove_directives(v: Value) -> Option<Value> {
    match v {
        Value::Object(m) => {
            if m.contains_key(DIRECTIVE_MARKER) {
                return None;
            }
            let mut out = Map::new();
            for (k, x) in m {
                if let Some(x) = remove_directives(x) {
                    out.insert(k, x);
                }
            }
            Some(Value::Object(out))
        }
        Value::Array(a) => Some(Value::Array(a.into_iter().filter_map(remove_directives).collect())),
        other => Some(other),
    }
}

fn apply_retain_keys_directive(original: &mut Map<String, Value>, patch: &mut Map<String, Value>) -> Res<()> {
    let Some(retain) = patch.remove(RETAIN_KEYS_DIRECTIVE) else {
        return Ok(());
    };
    let Value::Array(list) = retain else {
        return Err(SmpError::BadRequest(ERR_BAD_PATCH_FORMAT_FOR_RETAIN_KEYS.into()));
    };
    let keep = |k: &str| list.iter().any(|v| is_string(v, k));
    for (k, v) in patch.iter() {
        if v.is_null() || k.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX) || k.starts_with(SET_ELEMENT_ORDER_PREFIX) {
            continue;
        }
        if !keep(k) {
            return Err(SmpError::BadRequest(ERR_BAD_PATCH_FORMAT_FOR_RETAIN_KEYS.into()));
        }
    }
    original.retain(|k, _| keep(k));
    Ok(())
}

/// Handles every `$setElementOrder/<list>` in `patch` together with the
/// list it orders (upstream's `mergePatchIntoOriginal`).
fn merge_patch_into_original(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    schema: Schema,
) -> Res<()> {
    let mut keys: Vec<String> = patch.keys().filter(|k| k.starts_with(SET_ELEMENT_ORDER_PREFIX)).cloned().collect();
    keys.sort();
    for key in keys {
        let set_order_v = patch.remove(&key).unwrap_or(Value::Null);
        let Value::Array(set_order) = set_order_v else {
            return Err(err_bad_arg_type_slice(&set_order_v));
        };
        let original_key =
            extract_key(&key, SET_ELEMENT_ORDER_PREFIX, ERR_BAD_PATCH_FORMAT_FOR_SET_ELEMENT_ORDER_LIST)?.to_string();

        let original_list = match original.get(&original_key) {
            None => None,
            Some(Value::Array(a)) => Some(a.clone()),
            Some(other) => return Err(err_bad_arg_type_slice(other)),
        };
        let patch_list = match patch.get(&original_key) {
            None => None,
            Some(Value::Array(a)) => Some(a.clone()),
            Some(other) => return Err(err_bad_arg_type_slice(other)),
        };
        let (sub, strategy, mk) = schema.lookup(&original_key);
        let merge_key = mk.unwrap_or("");
        validate_patch_with_set_order_list(patch_list.as_deref().unwrap_or(&[]), &set_order, merge_key)?;

        let original_field: Vec<Value> = original_list.clone().unwrap_or_default();
        let patch_field: Vec<Value> = patch_list.clone().unwrap_or_default();
        // Upstream orders server-only items by the live list as its Go
        // slice reads after merging, which deletions and additions of the
        // merge may have overwritten in place (they share the backing array).
        let mut server_order = original_field.clone();
        let merged = match (original_list, patch_list) {
            (Some(o), None) => o,
            (None, Some(p)) => match remove_directives(Value::Array(p)) {
                Some(Value::Array(a)) => a,
                _ => continue,
            },
            (Some(o), Some(p)) => {
                let (merged, view) = merge_slice_handler(o, p, sub, strategy, mk, false)?;
                if let Some(view) = view {
                    server_order = view;
                }
                merged
            }
            (None, None) => continue,
        };

        let (patch_items, server_only) = if merge_key.is_empty() {
            partition_primitives(merged, &set_order)
        } else {
            partition_maps(merged, &set_order, merge_key)?
        };
        let kind = slice_element_type(&[&original_field, &patch_field])?;
        let both = normalize_element_order(patch_items, server_only, &set_order, &server_order, merge_key, kind)?;
        original.insert(original_key.clone(), Value::Array(both));
        patch.remove(&original_key);
    }
    Ok(())
}

fn validate_patch_with_set_order_list(patch_list: &[Value], set_order: &[Value], merge_key: &str) -> Res<()> {
    if set_order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let non_delete: Vec<&Value> = if !merge_key.is_empty() {
        if let Some(bad) = patch_list.iter().find(|v| !v.is_object()) {
            return Err(err_bad_arg_type_map(bad));
        }
        patch_list.iter().filter(|v| !is_delete_item(v)).collect()
    } else {
        patch_list.iter().collect()
    };
    let (mut pi, mut si) = (0, 0);
    while pi < non_delete.len() && si < set_order.len() {
        if contains_directive_marker(non_delete[pi]) {
            pi += 1;
            continue;
        }
        if merge_key_value_equal(non_delete[pi], &set_order[si], merge_key)? {
            pi += 1;
        }
        si += 1;
    }
    if pi < non_delete.len() && si >= set_order.len() {
        return internal(format!(
            "The order in patch list:\n{}\n doesn't match {} list:\n{}\n",
            go_v(&Value::Array(patch_list.to_vec())),
            SET_ELEMENT_ORDER_PREFIX,
            go_v(&Value::Array(set_order.to_vec()))
        ));
    }
    Ok(())
}

fn contains_directive_marker(v: &Value) -> bool {
    matches!(v, Value::Object(m) if m.contains_key(DIRECTIVE_MARKER))
}

fn is_delete_item(v: &Value) -> bool {
    matches!(v, Value::Object(m) if m.get(DIRECTIVE_MARKER).is_some_and(|d| is_string(d, DELETE_DIRECTIVE)))
}

fn merge_key_value_equal(left: &Value, right: &Value, merge_key: &str) -> Res<bool> {
    if merge_key.is_empty() {
        return Ok(left == right);
    }
    let Value::Object(l) = left else { return Err(err_bad_arg_type_map(left)) };
    let Value::Object(r) = right else { return Err(err_bad_arg_type_map(right)) };
    let Some(lk) = l.get(merge_key) else { return Err(err_no_merge_key(l, merge_key)) };
    let Some(rk) = r.get(merge_key) else { return Err(err_no_merge_key(r, merge_key)) };
    Ok(lk == rk)
}

// ---------------------------------------------------------------------------
// lists

/// Merges or replaces a list per its strategy. The second value, for
/// merged lists of maps, is how the original list reads afterwards when
/// the merge rewrote its storage in place (see [`merge_slice`]).
fn merge_slice_handler(
    original: Vec<Value>,
    patch: Vec<Value>,
    items: Schema,
    strategy: PatchStrategy,
    merge_key: Option<&'static str>,
    is_delete_list: bool,
) -> Res<(Vec<Value>, Option<Vec<Value>>)> {
    if strategy.is_merge() || is_delete_list {
        merge_slice(original, patch, items, merge_key.unwrap_or(""), is_delete_list)
    } else {
        Ok((patch, None))
    }
}

/// Merges two lists (upstream's `mergeSlice`). Upstream deletes items by
/// shifting the rest left within the same backing array and then appends new
/// items into the freed slots; a caller still holding the original slice
/// sees those writes. The second value reproduces that view (for lists of
/// maps), which upstream then uses to order server-only items.
fn merge_slice(
    original: Vec<Value>,
    patch: Vec<Value>,
    items: Schema,
    merge_key: &str,
    is_delete_list: bool,
) -> Res<(Vec<Value>, Option<Vec<Value>>)> {
    if original.is_empty() && patch.is_empty() {
        return Ok((original, None));
    }
    let kind = slice_element_type(&[&original, &patch])?;

    let (original, patch, merged, view) = if kind != GoType::Map {
        if is_delete_list {
            return Ok((delete_from_slice(original, &patch), None));
        }
        let mut both = original.clone();
        both.extend(patch.iter().cloned());
        let merged = deduplicate_scalars(both);
        (original, patch, merged, None)
    } else {
        if merge_key.is_empty() {
            return internal(format!("cannot merge lists without merge key for {}", items.item_kind_name()));
        }
        let special = merge_slice_with_special_elements(original, patch, merge_key)?;
        let mut view = special.backing;
        let merged = merge_slice_without_special_elements(special.original.clone(), &special.patch, merge_key, items)?;
        if !special.replaced {
            let end = merged.len().min(view.len()).max(special.live);
            view[special.live..end].clone_from_slice(&merged[special.live..end]);
        }
        (special.original, special.patch, merged, Some(view))
    };

    let (patch_items, server_only) = if merge_key.is_empty() {
        partition_primitives(merged, &patch)
    } else {
        partition_maps(merged, &patch, merge_key)?
    };
    let out = normalize_element_order(patch_items, server_only, &patch, &original, merge_key, kind)?;
    Ok((out, view))
}

/// The outcome of [`merge_slice_with_special_elements`].
struct Special {
    /// The original list after deletions (or the patch items, after a
    /// `$patch: replace` item).
    original: Vec<Value>,
    /// The patch without directive items (empty after `replace`).
    patch: Vec<Value>,
    /// The original list's storage after deletions shifted items left.
    backing: Vec<Value>,
    /// How many items of `backing` are still live.
    live: usize,
    /// Whether a `$patch: replace` item was seen.
    replaced: bool,
}

/// Applies `$patch: delete` and `$patch: replace` items; returns the
/// remaining original and the patch without such items.
fn merge_slice_with_special_elements(original: Vec<Value>, patch: Vec<Value>, merge_key: &str) -> Res<Special> {
    let mut without = Vec::with_capacity(patch.len());
    let mut replaced = false;
    let mut backing = original;
    let mut live = backing.len();
    for v in patch {
        let Value::Object(m) = &v else {
            return Err(err_bad_arg_type_map(&v));
        };
        match m.get(DIRECTIVE_MARKER) {
            None => without.push(v),
            Some(d) if is_string(d, DELETE_DIRECTIVE) => match m.get(merge_key) {
                Some(kv) => {
                    // Delete every match, shifting the rest left in place.
                    while let Some(i) = find_map_in_slice(&backing[..live], merge_key, kv)? {
                        for j in i..live - 1 {
                            backing[j] = backing[j + 1].clone();
                        }
                        live -= 1;
                    }
                }
                None => return Err(err_no_merge_key(m, merge_key)),
            },
            Some(d) if is_string(d, REPLACE_DIRECTIVE) => replaced = true,
            Some(d) if is_string(d, MERGE_DIRECTIVE) => {
                return internal("merging lists cannot yet be specified in the patch".into());
            }
            Some(d) => return Err(err_bad_patch_type(d, m)),
        }
    }
    if replaced {
        return Ok(Special { original: without, patch: Vec::new(), backing, live, replaced });
    }
    let original = backing[..live].to_vec();
    Ok(Special { original, patch: without, backing, live, replaced })
}

fn merge_slice_without_special_elements(
    mut original: Vec<Value>,
    patch: &[Value],
    merge_key: &str,
    items: Schema,
) -> Res<Vec<Value>> {
    for v in patch {
        let Value::Object(m) = v else {
            return Err(err_bad_arg_type_map(v));
        };
        let Some(kv) = m.get(merge_key) else {
            return Err(err_no_merge_key(m, merge_key));
        };
        match find_map_in_slice(&original, merge_key, kv)? {
            Some(i) => {
                let Value::Object(o) = std::mem::take(&mut original[i]) else { unreachable!() };
                original[i] = Value::Object(merge_map(o, m.clone(), items)?);
            }
            None => original.push(v.clone()),
        }
    }
    Ok(original)
}

/// Index of the first map in `list` whose `key` equals `value`; every item
/// must be a map.
fn find_map_in_slice(list: &[Value], key: &str, value: &Value) -> Res<Option<usize>> {
    for (i, v) in list.iter().enumerate() {
        let Value::Object(m) = v else {
            return internal(format!("value for key {} is not a map", i));
        };
        if m.get(key) == Some(value) {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

fn delete_from_slice(current: Vec<Value>, to_delete: &[Value]) -> Vec<Value> {
    current.into_iter().filter(|v| !to_delete.contains(v)).collect()
}

/// Upstream's `deduplicateScalars`, including the order it leaves behind.
fn deduplicate_scalars(mut s: Vec<Value>) -> Vec<Value> {
    if s.is_empty() {
        return s;
    }
    let mut length = s.len() as isize - 1;
    let mut i: isize = 0;
    while i < length {
        let mut j = i + 1;
        while j <= length {
            if s[i as usize] == s[j as usize] {
                s[j as usize] = s[length as usize].clone();
                s.truncate(length as usize);
                length -= 1;
                j -= 1;
            }
            j += 1;
        }
        i += 1;
    }
    s
}

/// The common Go type of the items of all lists (upstream's
/// `sliceElementType`).
fn slice_element_type(lists: &[&[Value]]) -> Res<GoType> {
    let mut prev: Option<GoType> = None;
    for l in lists {
        for v in l.iter() {
            let t = go_type(v);
            match prev {
                None => {
                    if t == GoType::Slice {
                        return Err(SmpError::Invalid(ERR_NO_LIST_OF_LISTS.into()));
                    }
                    prev = Some(t);
                }
                Some(p) if p != t => {
                    let all: Vec<Value> = lists.iter().map(|l| Value::Array(l.to_vec())).collect();
                    return internal(format!("list element types are not identical: {}", go_v(&Value::Array(all))));
                }
                Some(_) => {}
            }
        }
    }
    prev.ok_or_else(|| SmpError::Internal("no elements in any of the given slices".into()))
}

fn partition_primitives(list: Vec<Value>, by: &[Value]) -> (Vec<Value>, Vec<Value>) {
    list.into_iter().partition(|v| by.contains(v))
}

fn partition_maps(list: Vec<Value>, by: &[Value], merge_key: &str) -> Res<(Vec<Value>, Vec<Value>)> {
    let mut patch = Vec::new();
    let mut server_only = Vec::new();
    for v in list {
        let Value::Object(m) = &v else {
            return Err(err_bad_arg_type_map(&v));
        };
        let Some(kv) = m.get(merge_key) else {
            return Err(err_no_merge_key(m, merge_key));
        };
        if find_map_in_slice(by, merge_key, kv)?.is_some() {
            patch.push(v);
        } else {
            server_only.push(v);
        }
    }
    Ok((patch, server_only))
}

fn extract_to_delete_items(l: Vec<Value>) -> Res<(Vec<Value>, Vec<Value>)> {
    let mut keep = Vec::new();
    let mut delete = Vec::new();
    for v in l {
        if !v.is_object() {
            return Err(err_bad_arg_type_map(&v));
        }
        if is_delete_item(&v) {
            delete.push(v);
        } else {
            keep.push(v);
        }
    }
    Ok((keep, delete))
}

fn validate_merge_key_in_lists(merge_key: &str, lists: &[&[Value]]) -> Res<()> {
    for l in lists {
        for item in l.iter() {
            let Value::Object(m) = item else {
                return Err(err_bad_arg_type_map(item));
            };
            if !m.contains_key(merge_key) {
                return Err(err_no_merge_key(m, merge_key));
            }
        }
    }
    Ok(())
}

/// Position of `item` in `order` (by merge key for maps), as upstream's `index`.
fn index_of(order: &[Value], item: &Value, merge_key: &str, kind: GoType) -> Option<usize> {
    if kind == GoType::Map {
        let k = key_of(item, merge_key);
        order.iter().position(|v| key_of(v, merge_key) == k)
    } else {
        order.iter().position(|v| v == item)
    }
}

/// Sorts `to_sort` by position in `order` (upstream's `normalizeSliceOrder`):
/// items to delete go last.
fn normalize_slice_order(to_sort: Vec<Value>, order: &[Value], merge_key: &str, kind: GoType) -> Res<Vec<Value>> {
    let (mut to_sort, to_delete) = if kind == GoType::Map {
        validate_merge_key_in_lists(merge_key, &[&to_sort, order])?;
        extract_to_delete_items(to_sort)?
    } else {
        (to_sort, Vec::new())
    };
    let idx: Vec<Option<usize>> = to_sort.iter().map(|v| index_of(order, v, merge_key, kind)).collect();
    if idx.iter().all(Option::is_some) {
        // A consistent order: any stable sort gives Go's result.
        let mut pairs: Vec<(usize, Value)> = idx.into_iter().map(Option::unwrap).zip(to_sort).collect();
        pairs.sort_by_key(|(i, _)| *i);
        to_sort = pairs.into_iter().map(|(_, v)| v).collect();
    } else {
        // Go's `less` treats an item missing from `order` as less than
        // anything; replay Go's insertion sort so the result matches.
        let mut pairs: Vec<(Option<usize>, Value)> = idx.into_iter().zip(to_sort).collect();
        let less = |a: Option<usize>, b: Option<usize>| match (a, b) {
            (Some(x), Some(y)) => x < y,
            _ => true,
        };
        go_stable_sort(&mut pairs, &|a, b| less(a.0, b.0));
        to_sort = pairs.into_iter().map(|(_, v)| v).collect();
    }
    to_sort.extend(to_delete);
    Ok(to_sort)
}

/// Go's `sort.SliceStable` (insertion sort on blocks of 20, then in-place
/// merges), so results match even for inconsistent `less` functions.
fn go_stable_sort<T>(data: &mut [T], less: &dyn Fn(&T, &T) -> bool) {
    let n = data.len();
    let mut block = 20;
    let (mut a, mut b) = (0, block);
    while b <= n {
        insertion_sort(data, a, b, less);
        a = b;
        b += block;
    }
    insertion_sort(data, a, n, less);
    while block < n {
        a = 0;
        b = 2 * block;
        while b <= n {
            sym_merge(data, a, a + block, b, less);
            a = b;
            b += 2 * block;
        }
        let m = a + block;
        if m < n {
            sym_merge(data, a, m, n, less);
        }
        block *= 2;
    }
}

fn insertion_sort<T>(data: &mut [T], a: usize, b: usize, less: &dyn Fn(&T, &T) -> bool) {
    for i in a + 1..b {
        let mut j = i;
        while j > a && less(&data[j], &data[j - 1]) {
            data.swap(j, j - 1);
            j -= 1;
        }
    }
}

fn sym_merge<T>(data: &mut [T], a: usize, m: usize, b: usize, less: &dyn Fn(&T, &T) -> bool) {
    if m - a == 1 {
        let (mut i, mut j) = (m, b);
        while i < j {
            let h = (i + j) / 2;
            if less(&data[h], &data[a]) {
                i = h + 1;
            } else {
                j = h;
            }
        }
        for k in a..i - 1 {
            data.swap(k, k + 1);
        }
        return;
    }
    if b - m == 1 {
        let (mut i, mut j) = (a, m);
        while i < j {
            let h = (i + j) / 2;
            if !less(&data[m], &data[h]) {
                i = h + 1;
            } else {
                j = h;
            }
        }
        let mut k = m;
        while k > i {
            data.swap(k, k - 1);
            k -= 1;
        }
        return;
    }
    let mid = (a + b) / 2;
    let n = mid + m;
    let (mut start, mut r) = if m > mid { (n - b, mid) } else { (a, m) };
    let p = n - 1;
    while start < r {
        let c = (start + r) / 2;
        if !less(&data[p - c], &data[c]) {
            start = c + 1;
        } else {
            r = c;
        }
    }
    let end = n - start;
    if start < m && m < end {
        rotate(data, start, m, end);
    }
    if a < start && start < mid {
        sym_merge(data, a, start, mid, less);
    }
    if mid < end && end < b {
        sym_merge(data, mid, end, b, less);
    }
}

fn rotate<T>(data: &mut [T], a: usize, m: usize, b: usize) {
    data[a..b].rotate_left(m - a);
}

/// Orders patch items by `patch_order` and server-only items by
/// `server_order`, then interleaves them (upstream's `normalizeElementOrder`
/// and `mergeSortedSlice`).
fn normalize_element_order(
    patch: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    kind: GoType,
) -> Res<Vec<Value>> {
    let patch = normalize_slice_order(patch, patch_order, merge_key, kind)?;
    let server_only = normalize_slice_order(server_only, server_order, merge_key, kind)?;
    Ok(merge_sorted_slice(server_only, patch, server_order, merge_key, kind))
}

fn merge_sorted_slice(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &[Value],
    merge_key: &str,
    kind: GoType,
) -> Vec<Value> {
    let li: Vec<Option<usize>> = left.iter().map(|v| index_of(server_order, v, merge_key, kind)).collect();
    let ri: Vec<Option<usize>> = right.iter().map(|v| index_of(server_order, v, merge_key, kind)).collect();
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().zip(li).peekable();
    let mut right = right.into_iter().zip(ri).peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some((_, Some(l))), Some((_, Some(r)))) => l.cmp(r) == Ordering::Less,
            _ => false,
        };
        let next = if take_left { left.next() } else { right.next() };
        out.push(next.unwrap().0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_stable_sort_is_a_stable_sort_for_consistent_orders() {
        // (key, original position): sort by key only, positions must stay ascending within a key.
        let mut v: Vec<(u32, usize)> = (0..137).map(|i| ((i * 7919 % 13) as u32, i)).collect();
        let mut want = v.clone();
        want.sort_by_key(|x| x.0);
        go_stable_sort(&mut v, &|a, b| a.0 < b.0);
        assert_eq!(v, want);
    }

    #[test]
    fn go_stable_sort_replays_go_for_always_true_less() {
        // Go's insertion sort moves every item to the front when `less` is always true.
        let mut v: Vec<u32> = (0..5).collect();
        go_stable_sort(&mut v, &|_, _| true);
        assert_eq!(v, vec![4, 3, 2, 1, 0]);
    }

    #[test]
    fn deduplicate_scalars_keeps_go_order() {
        let v = vec![json_num(1), json_num(2), json_num(1), json_num(3), json_num(2)];
        // Go replaces each duplicate with the current last item.
        assert_eq!(deduplicate_scalars(v), vec![json_num(1), json_num(2), json_num(3)]);
        let v = vec![json_num(1), json_num(1), json_num(2)];
        assert_eq!(deduplicate_scalars(v), vec![json_num(1), json_num(2)]);
    }

    fn json_num(n: u64) -> Value {
        Value::from(n)
    }

    #[test]
    fn strip_directives_reports_paths() {
        let mut v = serde_json::json!({"$patch":"x","a":{"$retainKeys":["b"],"l":[{"$setElementOrder/env":[]},{"$deleteFromPrimitiveList/f":[]}]},"$ref":"kept"});
        let paths = strip_directives(&mut v);
        assert_eq!(
            paths,
            vec!["$patch", "a.$retainKeys", "a.l[0].$setElementOrder/env", "a.l[1].$deleteFromPrimitiveList/f"]
        );
        assert_eq!(v, serde_json::json!({"a":{"l":[{},{}]},"$ref":"kept"}));
    }
}
