//! Preferred pod (anti-)affinity scoring (upstream `interpodaffinity/scoring.go`).
//!
//! PreScore sums, per topology pair, the weights of every preferred term
//! that an (incoming, existing) pod pair satisfies — the incoming pod's
//! preferred terms against existing pods (+weight / −weight for
//! anti-affinity), existing pods' required affinity terms matching the
//! incoming pod (`hardPodAffinityWeight`) and their preferred terms — then
//! a node scores the sum over its topology labels.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::{node_labels, InterPodAffinity};
use crate::framework::{AffinityTerm, CycleState, NodeInfo, NodeScore, PodInfo, Snapshot, Status, MAX_NODE_SCORE};
use k8s_openapi::api::core::v1::Pod;

const PRE_SCORE_STATE_KEY: &str = "PreScoreInterPodAffinity";
/// Where PreFilter leaves the nodes PreScore must walk (PreScore only gets
/// the feasible nodes, but upstream counts pods on every node).
const NODES_KEY: &str = "PreScoreInterPodAffinity/nodes";

/// Score by topology key, then value.
type TopologyScore = HashMap<String, HashMap<String, i64>>;

struct PreScoreState {
    topology_score: TopologyScore,
}

fn process_term(
    m: &mut TopologyScore,
    term: &AffinityTerm,
    weight: i64,
    pod: &Pod,
    ns_labels: &BTreeMap<String, String>,
    node_labels: &BTreeMap<String, String>,
) {
    if term.matches(pod, ns_labels) {
        if let Some(v) = node_labels.get(&term.topology_key) {
            *m.entry(term.topology_key.clone()).or_default().entry(v.clone()).or_default() += weight;
        }
    }
}

fn has_preferred_terms(pod: &PodInfo) -> bool {
    !pod.preferred_affinity_terms.is_empty() || !pod.preferred_anti_affinity_terms.is_empty()
}

impl InterPodAffinity {
    /// Called from PreFilter: remembers which nodes PreScore walks — every
    /// node when the pod has preferred terms, else only nodes with pods
    /// that have affinity terms (nothing when existing pods' terms are
    /// ignored and the pod has none).
    pub(super) fn stash_nodes_for_scoring(&self, state: &mut CycleState, pod: &PodInfo, snapshot: &Snapshot) {
        let has = has_preferred_terms(pod);
        if self.args.ignore_preferred_terms_of_existing_pods && !has {
            return;
        }
        let nodes = if has { snapshot.nodes.clone() } else { snapshot.have_pods_with_affinity.clone() };
        state.write(NODES_KEY, Arc::new(nodes));
    }

    /// Upstream PreScore: Skip when there are no nodes, when only the
    /// incoming pod's terms count and it has none, or when no term scores
    /// anywhere.
    pub(super) fn compute_pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        feasible: &[Arc<NodeInfo>],
    ) -> Status {
        if feasible.is_empty() {
            return Status::skip();
        }
        let has = has_preferred_terms(pod);
        if self.args.ignore_preferred_terms_of_existing_pods && !has {
            return Status::skip();
        }
        let stashed = state.read::<Arc<Vec<Arc<NodeInfo>>>>(NODES_KEY).cloned();
        let all: &[Arc<NodeInfo>] = match &stashed {
            Some(n) => n,
            // PreFilter was not run (the plugin is only enabled for scoring):
            // the feasible nodes are what we have.
            None => feasible,
        };
        let mut pi = pod.clone();
        for t in pi.preferred_affinity_terms.iter_mut().chain(pi.preferred_anti_affinity_terms.iter_mut()) {
            self.merge_namespaces(&mut t.term);
        }
        let ns_labels = self.namespace_labels(pod.pod.metadata.namespace.as_deref().unwrap_or(""));
        static EMPTY: BTreeMap<String, String> = BTreeMap::new();
        let hard = self.args.hard_pod_affinity_weight as i64;

        let mut m = TopologyScore::new();
        for node in all {
            let labels = node_labels(node);
            if labels.is_empty() {
                continue;
            }
            let pods = if has { &node.pods } else { &node.pods_with_affinity };
            for existing in pods {
                for t in &pi.preferred_affinity_terms {
                    process_term(&mut m, &t.term, t.weight as i64, &existing.pod, &EMPTY, labels);
                }
                for t in &pi.preferred_anti_affinity_terms {
                    process_term(&mut m, &t.term, -(t.weight as i64), &existing.pod, &EMPTY, labels);
                }
                if hard > 0 {
                    for t in &existing.required_affinity_terms {
                        process_term(&mut m, t, hard, &pod.pod, &ns_labels, labels);
                    }
                }
                for t in &existing.preferred_affinity_terms {
                    process_term(&mut m, &t.term, t.weight as i64, &pod.pod, &ns_labels, labels);
                }
                for t in &existing.preferred_anti_affinity_terms {
                    process_term(&mut m, &t.term, -(t.weight as i64), &pod.pod, &ns_labels, labels);
                }
            }
        }
        if m.is_empty() {
            return Status::skip();
        }
        state.write(PRE_SCORE_STATE_KEY, PreScoreState { topology_score: m });
        Status::success()
    }
}

/// Upstream Score: the sum of the node's topology pairs' scores.
pub(super) fn score(state: &CycleState, node: &NodeInfo) -> (i64, Status) {
    let Some(s) = state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) else {
        return (0, Status::error(format!("reading {PRE_SCORE_STATE_KEY:?} from cycleState: not found")));
    };
    let labels = node_labels(node);
    let score = s.topology_score.iter().filter_map(|(k, values)| labels.get(k).and_then(|v| values.get(v))).sum();
    (score, Status::success())
}

/// Upstream NormalizeScore: min-max onto 0..=100 (all 0 when every node
/// scored the same), truncating.
pub(super) fn normalize_score(state: &CycleState, scores: &mut [NodeScore]) -> Status {
    let Some(s) = state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) else { return Status::success() };
    if s.topology_score.is_empty() || scores.is_empty() {
        return Status::success();
    }
    let min = scores.iter().map(|s| s.score).min().unwrap_or(0);
    let max = scores.iter().map(|s| s.score).max().unwrap_or(0);
    let diff = max - min;
    for s in scores.iter_mut() {
        s.score = if diff > 0 { (MAX_NODE_SCORE as f64 * ((s.score - min) as f64 / diff as f64)) as i64 } else { 0 };
    }
    Status::success()
}
