//! The resource plugins (upstream `plugins/noderesources`): NodeResourcesFit
//! (filter on allocatable, score by a strategy) and
//! NodeResourcesBalancedAllocation, sharing upstream's
//! `resourceAllocationScorer`: per configured resource, the node's
//! allocatable and what would be requested with the pod on it.

pub mod balanced_allocation;
pub mod fit;
pub mod strategies;

use serde::Deserialize;

use crate::framework::{NodeInfo, PodInfo};

/// A resource a score considers, with its weight (upstream `ResourceSpec`).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSpec {
    /// The resource name (`cpu`, `memory`, an extended resource, …).
    #[serde(default)]
    pub name: String,
    /// Its weight; 0 (unset) defaults to 1 as upstream's v1 defaulting does.
    #[serde(default)]
    pub weight: i64,
}

/// Upstream's default scored resources: cpu and memory, weight 1 each.
pub fn default_resources() -> Vec<ResourceSpec> {
    vec![ResourceSpec { name: "cpu".into(), weight: 1 }, ResourceSpec { name: "memory".into(), weight: 1 }]
}

/// Upstream v1 defaulting of a resource list: empty → cpu/memory; weight 0 → 1.
pub(crate) fn default_weights(mut resources: Vec<ResourceSpec>) -> Vec<ResourceSpec> {
    if resources.is_empty() {
        return default_resources();
    }
    for r in &mut resources {
        if r.weight == 0 {
            r.weight = 1;
        }
    }
    resources
}

/// Whether `name` is a scalar resource as upstream's `IsScalarResourceName`
/// counts them: extended (`domain/name` outside `kubernetes.io`),
/// `hugepages-*`, containing `kubernetes.io/`, or `attachable-volumes-*`.
pub fn is_scalar_resource_name(name: &str) -> bool {
    is_extended_resource_name(name)
        || name.starts_with("hugepages-")
        || name.contains("kubernetes.io/")
        || name.starts_with("attachable-volumes-")
}

/// Whether `name` is an extended resource (upstream
/// `IsExtendedResourceName`): it has a domain prefix, is not
/// containing `kubernetes.io/` (native) and is not a `requests.` quota name.
pub fn is_extended_resource_name(name: &str) -> bool {
    name.contains('/') && !name.contains("kubernetes.io/") && !name.starts_with("requests.")
}

/// The pod's request of each of `resources` (upstream
/// `calculatePodResourceRequestList`): with `use_requested` the plain
/// requests; otherwise cpu and memory use the non-zero defaults (100m,
/// 200 MiB for containers that set none).
pub fn pod_request_list(pod: &PodInfo, resources: &[ResourceSpec], use_requested: bool) -> Vec<i64> {
    resources
        .iter()
        .map(|r| match r.name.as_str() {
            "cpu" | "memory" if !use_requested => pod.non_zero_requests.get(&r.name),
            name => pod.requests.get(name),
        })
        .collect()
}

/// `(allocatable, requested-with-the-pod)` of `resource` on `node`
/// (upstream `calculateResourceAllocatableRequest`): cpu and memory from
/// the non-zero sums unless `use_requested`; ephemeral storage and scalar
/// resources always from the plain sums; a scalar resource the pod does not
/// request, or the node does not offer, is `(0, 0)` (left out of scoring).
fn allocatable_and_requested(node: &NodeInfo, resource: &str, pod_request: i64, use_requested: bool) -> (i64, i64) {
    let requested = if use_requested { &node.requested } else { &node.non_zero_requested };
    if pod_request == 0 && is_scalar_resource_name(resource) {
        return (0, 0);
    }
    match resource {
        "cpu" => (node.allocatable.milli_cpu, requested.milli_cpu + pod_request),
        "memory" => (node.allocatable.memory, requested.memory + pod_request),
        "ephemeral-storage" => (node.allocatable.ephemeral_storage, node.requested.ephemeral_storage + pod_request),
        other => match node.allocatable.scalar.get(other) {
            Some(&alloc) => (alloc, node.requested.get(other) + pod_request),
            None => (0, 0),
        },
    }
}

/// Builds the `(requested, allocatable)` vectors upstream's scorers take;
/// resources with zero allocatable are left at `(0, 0)`.
pub fn requested_and_allocatable(
    node: &NodeInfo,
    resources: &[ResourceSpec],
    pod_requests: &[i64],
    use_requested: bool,
) -> (Vec<i64>, Vec<i64>) {
    let mut requested = vec![0; resources.len()];
    let mut allocatable = vec![0; resources.len()];
    for (i, r) in resources.iter().enumerate() {
        let (alloc, req) = allocatable_and_requested(node, &r.name, pod_requests[i], use_requested);
        if alloc == 0 {
            continue;
        }
        allocatable[i] = alloc;
        requested[i] = req;
    }
    (requested, allocatable)
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Builders for the resource plugins' tables.
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::{Node, Pod};
    use serde_json::{json, Value};

    use crate::framework::{NodeInfo, PodInfo, Snapshot};

    /// A node with `allocatable` (a ResourceList JSON object).
    pub fn node(name: &str, allocatable: Value) -> Node {
        serde_json::from_value(json!({"metadata": {"name": name}, "status": {"allocatable": allocatable}})).unwrap()
    }

    /// A pod whose containers request each of `requests` (ResourceList JSON objects).
    pub fn pod(name: &str, requests: &[Value]) -> Pod {
        let containers: Vec<Value> = requests
            .iter()
            .enumerate()
            .map(|(i, r)| json!({"name": format!("c{i}"), "image": "i", "resources": {"requests": r}}))
            .collect();
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "default", "uid": name},
            "spec": {"containers": containers}
        }))
        .unwrap()
    }

    /// `pod` bound to `node`.
    pub fn on(mut p: Pod, node: &str) -> Pod {
        p.spec.as_mut().unwrap().node_name = Some(node.to_string());
        p
    }

    /// PodInfo of `p`.
    pub fn info(p: Pod) -> PodInfo {
        PodInfo::new(Arc::new(p)).unwrap()
    }

    /// The NodeInfo of `name` in a snapshot of `nodes` and `pods`.
    pub fn node_info(nodes: &[Node], pods: &[Pod], name: &str) -> Arc<NodeInfo> {
        Snapshot::from_objects(nodes, pods).get(name).unwrap().clone()
    }
}
