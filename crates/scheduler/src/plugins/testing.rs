//! Builders for plugin table tests: objects from JSON, as upstream's
//! `st.MakePod()`/`st.MakeNode()` wrappers.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::{json, Value};

use crate::framework::{NodeInfo, PodInfo};

/// A pod `ns/name` with `spec` (containers default to one named `c`).
pub fn pod(name: &str, mut spec: Value) -> Pod {
    if spec.get("containers").is_none() {
        spec["containers"] = json!([{"name": "c", "image": "i"}]);
    }
    serde_json::from_value(
        json!({"metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")}, "spec": spec}),
    )
    .unwrap()
}

/// [`PodInfo`] of [`pod`].
pub fn pod_info(name: &str, spec: Value) -> PodInfo {
    PodInfo::new(Arc::new(pod(name, spec))).unwrap()
}

/// A node with `labels`, `spec` and allocatable `cpu`/`memory`/`pods` 32/64Gi/110.
pub fn node(name: &str, labels: Value, spec: Value) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {"allocatable": {"cpu": "32", "memory": "64Gi", "pods": "110"}}
    }))
    .unwrap()
}

/// [`NodeInfo`] of [`node`].
pub fn node_info(name: &str, labels: Value, spec: Value) -> NodeInfo {
    NodeInfo::new(Arc::new(node(name, labels, spec)))
}
