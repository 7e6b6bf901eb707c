//! `meta.k8s.io` Tables (what `kubectl get` prints) and
//! PartialObjectMetadata.
//!
//! Built-in kinds get upstream's per-kind columns from
//! [`rkube_apimachinery::printers`] (Pod: Ready, Status, Restarts, …, with
//! the wide columns always rendered, as upstream's server does); other
//! kinds (custom resources) get the generic `Name` and `Age` columns.

use rkube_apimachinery::printers::{self, Printer};
use rkube_apimachinery::registry::ResourceInfo;
use serde_json::{json, Value};

use super::negotiate::IncludeObject;

/// The column definitions of the generic table.
fn generic_column_definitions() -> Value {
    json!([
        {"name": "Name", "type": "string", "format": "name", "description": printers::NAME_DOC, "priority": 0},
        {"name": "Age", "type": "date", "format": "", "description": printers::AGE_DOC, "priority": 0}
    ])
}

/// A Table of `items` (objects of `info`) with `list_meta` as its metadata.
pub fn list_table(
    info: &ResourceInfo,
    items: &[Value],
    list_meta: &Value,
    include: IncludeObject,
    v1beta1: bool,
) -> Value {
    let printer = printers::printer_for(info.group, info.kind);
    let now = jiff::Timestamp::now();
    let mut ordered: Vec<&Value> = items.iter().collect();
    printers::sort_list(info.group, info.kind, &mut ordered);
    let rows = ordered.into_iter().map(|o| row(info, printer, o, include, now)).collect();
    table(printer, rows, list_meta.clone(), true, v1beta1)
}

/// A Table with one row for `obj` (an object of `info`); `columns` says
/// whether it carries the column definitions (watch events after the
/// first omit them).
pub fn object_table(info: &ResourceInfo, obj: &Value, include: IncludeObject, v1beta1: bool, columns: bool) -> Value {
    let printer = printers::printer_for(info.group, info.kind);
    let meta = json!({"resourceVersion": obj["metadata"]["resourceVersion"].as_str().unwrap_or("")});
    let rows = vec![row(info, printer, obj, include, jiff::Timestamp::now())];
    table(printer, rows, meta, columns, v1beta1)
}

fn table(printer: Option<Printer>, rows: Vec<Value>, metadata: Value, columns: bool, v1beta1: bool) -> Value {
    let api_version = if v1beta1 { "meta.k8s.io/v1beta1" } else { "meta.k8s.io/v1" };
    let mut t = json!({"kind": "Table", "apiVersion": api_version, "metadata": metadata, "rows": rows});
    if columns {
        t["columnDefinitions"] = match printer {
            Some(p) => printers::column_definitions(p.columns),
            None => generic_column_definitions(),
        };
    }
    t
}

fn row(
    info: &ResourceInfo,
    printer: Option<Printer>,
    obj: &Value,
    include: IncludeObject,
    now: jiff::Timestamp,
) -> Value {
    let cells = match printer {
        Some(p) => (p.row)(obj, now),
        None => {
            let name = obj["metadata"]["name"].as_str().unwrap_or("");
            vec![json!(name), json!(printers::since(&obj["metadata"]["creationTimestamp"], now))]
        }
    };
    let mut row = json!({"cells": cells});
    if let Some(conditions) = printers::row_conditions(info.group, info.kind, obj) {
        row["conditions"] = conditions;
    }
    match include {
        IncludeObject::None => {}
        IncludeObject::Metadata => row["object"] = partial_metadata(obj),
        IncludeObject::Object => {
            let mut full = obj.clone();
            // List items of built-in kinds carry no kind/apiVersion; the
            // row object is a complete object, as upstream encodes it.
            if full.get("kind").is_none() {
                if let Some(m) = full.as_object_mut() {
                    m.insert("kind".into(), json!(info.kind));
                    m.insert("apiVersion".into(), json!(info.api_version()));
                }
            }
            row["object"] = full;
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use rkube_apimachinery::registry::Registry;

    fn info(group: &str, plural: &str) -> ResourceInfo {
        Registry::builtin().lookup(group, "v1", plural).cloned().expect("built-in resource")
    }

    #[test]
    fn generic_rows_carry_partial_metadata_by_default() {
        let obj = json!({"metadata": {"name": "a", "namespace": "ns", "creationTimestamp": "2020-01-01T00:00:00Z"}});
        let mut custom = info("", "configmaps");
        custom.group = "example.com";
        custom.kind = "Widget";
        let t = list_table(&custom, &[obj], &json!({"resourceVersion": "5"}), IncludeObject::Metadata, false);
        assert_eq!(t["rows"][0]["cells"][0], "a");
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(t["rows"][0]["object"]["metadata"]["namespace"], "ns");
        assert_eq!(t["columnDefinitions"][0]["format"], "name");
        assert_eq!(t["columnDefinitions"][1]["name"], "Age");
    }

    #[test]
    fn built_in_kinds_use_their_printer() {
        let pod = json!({"metadata": {"name": "p", "creationTimestamp": "2020-01-01T00:00:00Z"},
            "spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Succeeded"}});
        let t = list_table(&info("", "pods"), &[pod], &json!({}), IncludeObject::Object, false);
        let names: Vec<&str> =
            t["columnDefinitions"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            ["Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node", "Readiness Gates"]
        );
        assert_eq!(t["columnDefinitions"][5]["priority"], 1);
        assert_eq!(t["rows"][0]["cells"][1], "0/1");
        assert_eq!(t["rows"][0]["conditions"][0]["type"], "Completed");
        assert_eq!(t["rows"][0]["object"]["kind"], "Pod");
        assert_eq!(t["rows"][0]["object"]["apiVersion"], "v1");
    }

    #[test]
    fn watch_tables_carry_columns_only_when_asked() {
        let cm = json!({"metadata": {"name": "c", "resourceVersion": "7"}, "data": {"k": "v"}});
        let first = object_table(&info("", "configmaps"), &cm, IncludeObject::None, false, true);
        assert_eq!(first["columnDefinitions"][1]["name"], "Data");
        assert_eq!(first["rows"][0]["cells"][1], 1);
        assert!(first["rows"][0].get("object").is_none());
        let next = object_table(&info("", "configmaps"), &cm, IncludeObject::Metadata, true, false);
        assert!(next.get("columnDefinitions").is_none());
        assert_eq!(next["apiVersion"], "meta.k8s.io/v1beta1");
        assert_eq!(next["metadata"]["resourceVersion"], "7");
    }
}
