//! ImageLocality (upstream `plugins/imagelocality`): favors nodes that
//! already have the pod's container images (init containers included),
//! weighting each image's size by the share of nodes that have it so
//! that an image on every node does not pull pods together:
//! sum = Σ size × (nodes with it / all nodes); the sum is clamped to
//! [23 MiB, 1000 MiB × containers] and scaled to 0–100.

use std::sync::Arc;

use crate::framework::*;
use crate::plugins::names;

const MB: i64 = 1024 * 1024;
/// Below this sum a node scores 0 (upstream `minThreshold`, 23 MiB).
pub const MIN_THRESHOLD: i64 = 23 * MB;
/// Per container, the sum that scores 100 (upstream `maxContainerThreshold`, 1000 MiB).
pub const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

/// Where the total node count is kept for Score.
const TOTAL_NODES_KEY: &str = "PreFilterImageLocality";

/// The ImageLocality plugin.
pub struct ImageLocality;

/// Builds ImageLocality (no args).
pub fn new(_args: Option<&serde_json::Value>, _handle: &Handle) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(ImageLocality))
}

/// Upstream `normalizedImageName`: appends `:latest` when the name has
/// neither tag nor digest (no `:` after the last `/`).
pub fn normalized_image_name(name: &str) -> String {
    let colon = name.rfind(':').map_or(-1, |i| i as i64);
    let slash = name.rfind('/').map_or(-1, |i| i as i64);
    if colon <= slash {
        format!("{name}:latest")
    } else {
        name.to_string()
    }
}

/// Upstream `sumImageScores`: each init and regular container's image
/// present on the node adds `size × num_nodes / total_nodes`.
pub fn sum_image_scores(node: &NodeInfo, pod: &k8s_openapi::api::core::v1::Pod, total_nodes: usize) -> i64 {
    let Some(spec) = pod.spec.as_ref() else { return 0 };
    spec.init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter())
        .filter_map(|c| node.image_states.get(&normalized_image_name(c.image.as_deref().unwrap_or(""))))
        .map(|s| (s.size as f64 * (s.num_nodes as f64 / total_nodes.max(1) as f64)) as i64)
        .sum()
}

/// Upstream `calculatePriority`: clamps the sum and scales it to 0–100.
pub fn calculate_priority(sum: i64, num_containers: usize) -> i64 {
    let max = MAX_CONTAINER_THRESHOLD * num_containers as i64;
    let sum = if sum < MIN_THRESHOLD { MIN_THRESHOLD } else { sum.min(max) };
    if max <= MIN_THRESHOLD {
        return 0;
    }
    MAX_NODE_SCORE * (sum - MIN_THRESHOLD) / (max - MIN_THRESHOLD)
}

#[async_trait::async_trait]
impl Plugin for ImageLocality {
    fn name(&self) -> &'static str {
        names::IMAGE_LOCALITY
    }

    /// PreFilter only records the snapshot's node count (upstream reads it
    /// from the snapshot lister in Score; our Score sees only its node).
    fn extension_points(&self) -> &'static [ExtensionPoint] {
        &[ExtensionPoint::PreFilter, ExtensionPoint::PreScore, ExtensionPoint::Score]
    }

    fn pre_filter(
        &self,
        state: &mut CycleState,
        _pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        state.write(TOTAL_NODES_KEY, snapshot.len());
        (None, Status::success())
    }

    fn pre_score(&self, state: &mut CycleState, _pod: &PodInfo, nodes: &[Arc<NodeInfo>]) -> Status {
        // Without PreFilter (disabled there), fall back to the most nodes
        // any image is known on, at least the feasible nodes.
        if state.read::<usize>(TOTAL_NODES_KEY).is_none() {
            let most = nodes.iter().flat_map(|n| n.image_states.values().map(|s| s.num_nodes)).max().unwrap_or(0);
            state.write(TOTAL_NODES_KEY, most.max(nodes.len()));
        }
        Status::success()
    }

    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> (i64, Status) {
        let total = state.read::<usize>(TOTAL_NODES_KEY).copied().unwrap_or(1);
        let spec = pod.pod.spec.as_ref();
        let containers = spec.map_or(0, |s| s.containers.len() + s.init_containers.as_ref().map_or(0, Vec::len));
        (calculate_priority(sum_image_scores(node, &pod.pod, total), containers), Status::success())
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Node, Pod};
    use serde_json::{json, Value};

    use super::*;

    fn node(name: &str, images: Value) -> Node {
        serde_json::from_value(json!({"metadata": {"name": name}, "status": {"images": images}})).unwrap()
    }

    fn pod(images: &[&str], init: &[&str]) -> Pod {
        let c = |v: &[&str]| {
            v.iter().enumerate().map(|(i, im)| json!({"name": format!("c{i}"), "image": im})).collect::<Vec<_>>()
        };
        serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": c(images), "initContainers": c(init)}}))
        .unwrap()
    }

    fn scores(p: &Pod, nodes: &[Node]) -> Vec<i64> {
        let snap = Snapshot::from_objects(nodes, &[]);
        let pi = PodInfo::new(Arc::new(p.clone())).unwrap();
        let mut state = CycleState::default();
        ImageLocality.pre_filter(&mut state, &pi, &snap);
        ImageLocality.pre_score(&mut state, &pi, &snap.nodes);
        snap.nodes.iter().map(|n| ImageLocality.score(&state, &pi, n).0).collect()
    }

    /// The three machines of upstream TestImageLocalityPriority.
    fn machines() -> Vec<Node> {
        vec![
            node(
                "node1",
                json!([
                    {"names": ["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], "sizeBytes": 40 * MB},
                    {"names": ["gcr.io/300:latest", "gcr.io/300:v1"], "sizeBytes": 300 * MB},
                    {"names": ["gcr.io/2000:latest"], "sizeBytes": 2000 * MB}
                ]),
            ),
            node(
                "node2",
                json!([
                    {"names": ["gcr.io/250:latest"], "sizeBytes": 250 * MB},
                    {"names": ["gcr.io/10:latest", "gcr.io/10:v1"], "sizeBytes": 10 * MB}
                ]),
            ),
            node(
                "node3",
                json!([
                    {"names": ["gcr.io/600:latest"], "sizeBytes": 600 * MB},
                    {"names": ["gcr.io/300:latest"], "sizeBytes": 300 * MB}
                ]),
            ),
        ]
    }

    #[test]
    fn scores_match_upstream_image_locality_table() {
        let m = machines();
        // gcr.io/40 only on node1: 40 MiB × 1/3 = 13.3 MiB < 23 → 0; gcr.io/250 on node2: 250/3 = 83.3 MiB
        // → 100 × (83.3 − 23) / (2000 − 23) = 3.
        assert_eq!(scores(&pod(&["gcr.io/40", "gcr.io/250"], &[]), &m), vec![0, 3, 0]);
        // 3 containers → 3000 MiB max. node1: 40/3 + 300 × 2/3 = 213.3 MiB → 100 × 190.3 / 2977 = 6;
        // node3: 200 MiB → 5; node2: 10/3 MiB → 0.
        assert_eq!(scores(&pod(&["gcr.io/40", "gcr.io/300", "gcr.io/10"], &[]), &m), vec![6, 0, 5]);
        // node1: 2000/3 = 666.7 MiB → 100 × 643.7 / 1977 = 32.
        assert_eq!(scores(&pod(&["gcr.io/2000", "gcr.io/10"], &[]), &m), vec![32, 0, 0]);
        // Tags: "gcr.io/10:v1" matches; node2 (250 + 10)/3 = 86.7 MiB → 3.
        assert_eq!(scores(&pod(&["gcr.io/250:latest", "gcr.io/10:v1"], &[]), &m), vec![0, 3, 0]);
        // Init containers count and raise the threshold: 3 containers → max 3000 MiB.
        // node3: 600/3 + 300 × 2/3 = 400 MiB → 100 × 377 / 2977 = 12; node1 (300 only) → 5.
        assert_eq!(scores(&pod(&["gcr.io/600", "gcr.io/10"], &["gcr.io/300"]), &m), vec![5, 0, 12]);
    }

    fn images(sizes_mb: &[i64]) -> Value {
        Value::Array(
            sizes_mb.iter().map(|s| json!({"names": [format!("gcr.io/{s}:latest")], "sizeBytes": s * MB})).collect(),
        )
    }

    /// Rows of upstream TestImageLocalityPriority (per-container thresholds, init containers counted).
    #[test]
    fn upstream_image_locality_rows() {
        // "pod with multiple large images, node2 is preferred": 32, 36, 0.
        let nodes =
            [node("node1", images(&[600, 40, 900])), node("node2", images(&[300, 600, 900])), node("node3", json!([]))];
        assert_eq!(scores(&pod(&["gcr.io/300", "gcr.io/600", "gcr.io/900"], &[]), &nodes), vec![32, 36, 0]);
        // "pod with multiple small images": 1, 0.
        let nodes = [node("node1", images(&[20, 30, 40])), node("node2", images(&[400, 30]))];
        assert_eq!(scores(&pod(&["gcr.io/30", "gcr.io/40"], &[]), &nodes), vec![1, 0]);
        // Init container gcr.io/300 counts: 100 × (300/2 − 23) / (2000 − 23) = 6, 0.
        let nodes = [node("node1", images(&[40, 300, 2000])), node("node2", images(&[20, 30, 40]))];
        assert_eq!(scores(&pod(&["gcr.io/30"], &["gcr.io/300"]), &nodes), vec![6, 0]);
    }

    #[test]
    fn normalized_names_add_latest_only_without_tag_or_digest() {
        assert_eq!(normalized_image_name("nginx"), "nginx:latest");
        assert_eq!(normalized_image_name("nginx:1.25"), "nginx:1.25");
        assert_eq!(normalized_image_name("localhost:5000/nginx"), "localhost:5000/nginx:latest");
        assert_eq!(normalized_image_name("gcr.io/x@sha256:abc"), "gcr.io/x@sha256:abc");
    }
}
