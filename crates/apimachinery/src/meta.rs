//! Accessors for the `metadata` of objects held as `serde_json::Value`
//! (upstream's `meta.Accessor`), and the generated parts of metadata:
//! uids and timestamps (`generateName` is [`crate::validation::generate_name`]).

use serde_json::{json, Map, Value};

/// `metadata.name`, or `""`.
pub fn name(obj: &Value) -> &str {
    str_at(obj, "name")
}

/// `metadata.namespace`, or `""`.
pub fn namespace(obj: &Value) -> &str {
    str_at(obj, "namespace")
}

/// `metadata.uid`, or `""`.
pub fn uid(obj: &Value) -> &str {
    str_at(obj, "uid")
}

/// `metadata.resourceVersion`, or `""`.
pub fn resource_version(obj: &Value) -> &str {
    str_at(obj, "resourceVersion")
}

/// `metadata.generateName`, or `""`.
pub fn generate_name(obj: &Value) -> &str {
    str_at(obj, "generateName")
}

/// `metadata.deletionTimestamp`, if set.
pub fn deletion_timestamp(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/deletionTimestamp").and_then(Value::as_str)
}

/// `metadata.finalizers` (empty when absent).
pub fn finalizers(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|f| f.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// `metadata.labels` as a map (empty when absent).
pub fn labels(obj: &Value) -> std::collections::BTreeMap<String, String> {
    obj.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| m.iter().filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string()))).collect())
        .unwrap_or_default()
}

fn str_at<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get("metadata").and_then(|m| m.get(field)).and_then(Value::as_str).unwrap_or("")
}

/// `metadata` as a mutable map, created (replacing a non-object) if needed.
pub fn metadata_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = json!({});
    }
    let m = obj.as_object_mut().expect("just made an object");
    let meta = m.entry("metadata").or_insert_with(|| json!({}));
    if !meta.is_object() {
        *meta = json!({});
    }
    meta.as_object_mut().expect("just made an object")
}

/// Sets `metadata.<field>`; `Value::Null` removes it.
pub fn set(obj: &mut Value, field: &str, value: Value) {
    let meta = metadata_mut(obj);
    if value.is_null() {
        meta.remove(field);
    } else {
        meta.insert(field.to_string(), value);
    }
}

/// Sets `metadata.finalizers` (removing the field when empty, as Go's
/// `omitempty` does).
pub fn set_finalizers(obj: &mut Value, finalizers: &[String]) {
    set(obj, "finalizers", if finalizers.is_empty() { Value::Null } else { json!(finalizers) });
}

/// A new random (version 4) uid.
pub fn new_uid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A timestamp as the API writes `metav1.Time` (RFC 3339, seconds, UTC).
pub fn format_time(t: jiff::Timestamp) -> String {
    jiff::fmt::strtime::format("%Y-%m-%dT%H:%M:%SZ", t).unwrap_or_else(|_| t.to_string())
}

/// The current time as [`format_time`] writes it.
pub fn now() -> String {
    format_time(jiff::Timestamp::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accessors_read_metadata() {
        let obj = json!({"metadata": {"name": "a", "namespace": "ns", "finalizers": ["x"], "labels": {"k": "v"}}});
        assert_eq!(name(&obj), "a");
        assert_eq!(namespace(&obj), "ns");
        assert_eq!(resource_version(&obj), "");
        assert_eq!(finalizers(&obj), vec!["x"]);
        assert_eq!(labels(&obj)["k"], "v");
    }

    #[test]
    fn times_are_rfc3339_seconds() {
        let t: jiff::Timestamp = "2024-05-01T10:00:00.123Z".parse().unwrap();
        assert_eq!(format_time(t), "2024-05-01T10:00:00Z");
    }
}
