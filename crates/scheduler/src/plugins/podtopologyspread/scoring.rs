//! `ScheduleAnyway` constraints (upstream `podtopologyspread/scoring.go`):
//! a node's raw score is, over the constraints, `matching pods in its
//! domain × log(domains + 2) + (maxSkew − 1)`; normalization inverts it so
//! the least crowded node gets 100.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::common::{count_pods_match_selector, node_labels, node_labels_match, Constraint};
use super::PodTopologySpread;
use crate::framework::{CycleState, NodeInfo, NodeScore, PodInfo, Snapshot, Status, MAX_NODE_SCORE};

const PRE_SCORE_STATE_KEY: &str = "PreScorePodTopologySpread";
/// Every node of the snapshot, left by PreFilter for PreScore (which only
/// gets the feasible nodes, while upstream counts pods on all of them).
const NODES_KEY: &str = "PreScorePodTopologySpread/nodes";
const HOSTNAME: &str = "kubernetes.io/hostname";

struct PreScoreState {
    constraints: Vec<Constraint>,
    /// Feasible nodes missing a topology key (scored 0).
    ignored_nodes: HashSet<String>,
    /// Matching pods by topology value, per constraint (not for hostname:
    /// counted in Score).
    topology_value_to_pod_counts: Vec<HashMap<String, i64>>,
    /// `log(domains + 2)` per constraint.
    topology_normalizing_weight: Vec<f64>,
}

fn score_for_count(cnt: i64, max_skew: i64, weight: f64) -> f64 {
    cnt as f64 * weight + (max_skew - 1) as f64
}

impl PodTopologySpread {
    /// Called from PreFilter: keeps the node list when the pod has
    /// ScheduleAnyway constraints. Err: a selector does not parse.
    pub(super) fn stash_nodes_for_scoring(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> Result<(), String> {
        if !self.constraints(&pod.pod, "ScheduleAnyway")?.is_empty() {
            state.write(NODES_KEY, Arc::new(snapshot.nodes.clone()));
        }
        Ok(())
    }

    /// Upstream PreScore: Skip without feasible nodes or soft constraints.
    pub(super) fn compute_pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        feasible: &[Arc<NodeInfo>],
    ) -> Status {
        let stashed = state.read::<Arc<Vec<Arc<NodeInfo>>>>(NODES_KEY).cloned();
        let all: &[Arc<NodeInfo>] = stashed.as_deref().map(Vec::as_slice).unwrap_or(feasible);
        if feasible.is_empty() || all.is_empty() {
            return Status::skip();
        }
        let constraints = match self.constraints(&pod.pod, "ScheduleAnyway") {
            Ok(c) => c,
            Err(e) => return Status::error(e),
        };
        if constraints.is_empty() {
            return Status::skip();
        }
        // Only the pod's own constraints need every topology key: with the
        // system defaults, nodes without a zone label still spread by host.
        let own =
            pod.pod.spec.as_ref().and_then(|s| s.topology_spread_constraints.as_ref()).is_some_and(|c| !c.is_empty());
        let require_all = own || !self.system_defaulted();

        let mut ignored = HashSet::new();
        let mut counts: Vec<HashMap<String, i64>> = vec![HashMap::new(); constraints.len()];
        for n in feasible {
            let labels = node_labels(n);
            if require_all && !node_labels_match(labels, &constraints) {
                ignored.insert(n.node_name().to_string());
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if c.topology_key == HOSTNAME {
                    continue;
                }
                // A node without the key sits in the "" domain, as upstream.
                let v = labels.get(&c.topology_key).cloned().unwrap_or_default();
                counts[i].entry(v).or_insert(0);
            }
        }
        let weights = constraints
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let size = if c.topology_key == HOSTNAME { feasible.len() - ignored.len() } else { counts[i].len() };
                ((size + 2) as f64).ln()
            })
            .collect();

        let ns = pod.pod.metadata.namespace.as_deref().unwrap_or("");
        for n in all {
            let Some(node) = n.node.as_deref() else { continue };
            let labels = node_labels(n);
            if require_all && !node_labels_match(labels, &constraints) {
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if !c.matches_node_inclusion_policies(&pod.pod, node) {
                    continue;
                }
                let v = labels.get(&c.topology_key).map(String::as_str).unwrap_or("");
                // Only domains of feasible nodes are counted (hostname: in Score).
                if let Some(cnt) = counts[i].get_mut(v) {
                    *cnt += count_pods_match_selector(&n.pods, &c.selector, ns);
                }
            }
        }
        state.write(
            PRE_SCORE_STATE_KEY,
            PreScoreState {
                constraints,
                ignored_nodes: ignored,
                topology_value_to_pod_counts: counts,
                topology_normalizing_weight: weights,
            },
        );
        Status::success()
    }
}

/// Upstream Score (rounded to the nearest integer).
pub(super) fn score(state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> (i64, Status) {
    let Some(s) = state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) else {
        return (0, Status::error(format!("reading {PRE_SCORE_STATE_KEY:?} from cycleState: not found")));
    };
    if s.ignored_nodes.contains(node.node_name()) {
        return (0, Status::success());
    }
    let labels = node_labels(node);
    let ns = pod.pod.metadata.namespace.as_deref().unwrap_or("");
    let mut score = 0.0;
    for (i, c) in s.constraints.iter().enumerate() {
        if let Some(v) = labels.get(&c.topology_key) {
            let cnt = if c.topology_key == HOSTNAME {
                count_pods_match_selector(&node.pods, &c.selector, ns)
            } else {
                s.topology_value_to_pod_counts[i].get(v).copied().unwrap_or(0)
            };
            score += score_for_count(cnt, c.max_skew, s.topology_normalizing_weight[i]);
        }
    }
    (score.round() as i64, Status::success())
}

/// Upstream NormalizeScore: `100 × (max + min − s) / max` over the nodes
/// not ignored (all 100 when max is 0); ignored nodes get 0.
pub(super) fn normalize_score(state: &CycleState, scores: &mut [NodeScore]) -> Status {
    let Some(s) = state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) else { return Status::success() };
    let mut min = i64::MAX;
    let mut max = 0;
    for sc in scores.iter().filter(|sc| !s.ignored_nodes.contains(&sc.name)) {
        min = min.min(sc.score);
        max = max.max(sc.score);
    }
    for sc in scores.iter_mut() {
        if s.ignored_nodes.contains(&sc.name) {
            sc.score = 0;
        } else if max == 0 {
            sc.score = MAX_NODE_SCORE;
        } else {
            sc.score = MAX_NODE_SCORE * (max + min - sc.score) / max;
        }
    }
    Status::success()
}
