//! `meta.k8s.io` Tables (what `kubectl get` prints) and
//! PartialObjectMetadata.
//!
//! Every kind gets the generic columns for now — `Name` and `Age`, the
//! columns upstream gives custom resources without printer columns; the
//! per-kind columns (Pod: Ready, Status, Restarts, …) come with the Table
//! printers item.

use rkube_apimachinery::registry::ResourceInfo;
use serde_json::{json, Value};

use super::negotiate::IncludeObject;

/// The column definitions of the generic table.
fn column_definitions() -> Value {
    json!([
        {"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names", "priority": 0},
        {"name": "Age", "type": "date", "format": "", "description": "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata", "priority": 0}
    ])
}

/// A Table of `items` with `list_meta` as its metadata.
pub fn list_table(items: &[Value], list_meta: &Value, include: IncludeObject, v1beta1: bool) -> Value {
    table(items.iter().map(|o| row(o, include)).collect(), list_meta.clone(), true, v1beta1)
}

/// A Table with one row for `obj`; `columns` says whether it carries the
/// column definitions (watch events after the first omit them).
pub fn object_table(obj: &Value, include: IncludeObject, v1beta1: bool, columns: bool) -> Value {
    let meta = json!({"resourceVersion": obj["metadata"]["resourceVersion"].as_str().unwrap_or("")});
    table(vec![row(obj, include)], meta, columns, v1beta1)
}

fn table(rows: Vec<Value>, metadata: Value, columns: bool, v1beta1: bool) -> Value {
    let api_version = if v1beta1 { "meta.k8s.io/v1beta1" } else { "meta.k8s.io/v1" };
    let mut t = json!({"kind": "Table", "apiVersion": api_version, "metadata": metadata, "rows": rows});
    if columns {
        t["columnDefinitions"] = column_definitions();
    }
    t
}

fn row(obj: &Value, include: IncludeObject) -> Value {
    let name = obj["metadata"]["name"].as_str().unwrap_or("");
    let age = obj["metadata"]["creationTimestamp"].as_str().map_or("<unknown>".to_string(), age);
    let mut row = json!({"cells": [name, age]});
    match include {
        IncludeObject::None => {}
        IncludeObject::Metadata => row["object"] = partial_metadata(obj),
        IncludeObject::Object => row["object"] = obj.clone(),
    }
    row
}

/// `PartialObjectMetadata` of `obj` (meta.k8s.io/v1).
pub fn partial_metadata(obj: &Value) -> Value {
    json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"].clone()})
}

/// `PartialObjectMetadataList` of `items`.
pub fn partial_metadata_list(items: &[Value], list_meta: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadataList",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "items": items.iter().map(partial_metadata).collect::<Vec<_>>(),
    })
}

/// Whether `body` is an object or list of `info`'s kind (Status bodies
/// and others are sent as they are).
pub fn is_list(info: &ResourceInfo, body: &Value) -> Option<bool> {
    match body["kind"].as_str() {
        Some(k) if k == info.list_kind && !k.is_empty() => Some(true),
        Some(k) if k == info.kind => Some(false),
        _ => None,
    }
}

/// The age of an object created at `created` (RFC 3339), as the API
/// server renders it (`5m`, `3h12m`, `45d`).
fn age(created: &str) -> String {
    match created.parse::<jiff::Timestamp>() {
        Ok(t) => human_duration((jiff::Timestamp::now() - t).get_seconds()),
        Err(_) => "<unknown>".into(),
    }
}

/// apimachinery's `duration.HumanDuration` of `secs` seconds.
pub fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    let s = secs.max(0);
    if s < 120 {
        return format!("{s}s");
    }
    let m = s / 60;
    if m < 10 {
        return if s % 60 == 0 { format!("{m}m") } else { format!("{m}m{}s", s % 60) };
    }
    if m < 180 {
        return format!("{m}m");
    }
    let h = s / 3600;
    if h < 8 {
        return if m % 60 == 0 { format!("{h}h") } else { format!("{h}h{}m", m % 60) };
    }
    if h < 48 {
        return format!("{h}h");
    }
    let d = h / 24;
    if h < 24 * 8 {
        return if h % 24 == 0 { format!("{d}d") } else { format!("{d}d{}h", h % 24) };
    }
    if h < 24 * 365 * 2 {
        return format!("{d}d");
    }
    let y = d / 365;
    if h < 24 * 365 * 8 {
        return if d % 365 == 0 { format!("{y}y") } else { format!("{y}y{}d", d % 365) };
    }
    format!("{y}y")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations_follow_apimachinery() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(119), "119s");
        assert_eq!(human_duration(130), "2m10s");
        assert_eq!(human_duration(600), "10m");
        assert_eq!(human_duration(3 * 3600 + 120), "3h2m");
        assert_eq!(human_duration(30 * 3600), "30h");
        assert_eq!(human_duration(3 * 86400 + 3600), "3d1h");
        assert_eq!(human_duration(45 * 86400), "45d");
        assert_eq!(human_duration(3 * 365 * 86400), "3y");
    }

    #[test]
    fn rows_carry_partial_metadata_by_default() {
        let obj = json!({"metadata": {"name": "a", "namespace": "ns", "creationTimestamp": "2020-01-01T00:00:00Z"}});
        let t = list_table(&[obj], &json!({"resourceVersion": "5"}), IncludeObject::Metadata, false);
        assert_eq!(t["rows"][0]["cells"][0], "a");
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(t["rows"][0]["object"]["metadata"]["namespace"], "ns");
        assert_eq!(t["columnDefinitions"][0]["format"], "name");
    }
}
