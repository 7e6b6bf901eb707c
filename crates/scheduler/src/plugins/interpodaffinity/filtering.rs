//! Required pod (anti-)affinity (upstream `interpodaffinity/filtering.go`).
//!
//! PreFilter counts, per topology pair (`topologyKey`, value), how many
//! pods make each of the three rules bite, so Filter is a few map lookups
//! per node:
//! - existing pods' required anti-affinity terms that match the incoming pod;
//! - existing pods matching *all* the incoming pod's required affinity terms;
//! - existing pods matching each of its required anti-affinity terms.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use super::{node_labels, InterPodAffinity};
use crate::framework::{AffinityTerm, Code, CycleState, NodeInfo, PodInfo, Snapshot, Status};

/// The incoming pod's required affinity is not satisfied on the node
/// (UnschedulableAndUnresolvable).
pub const ERR_REASON_AFFINITY_RULES_NOT_MATCH: &str = "node(s) didn't match pod affinity rules";
/// The incoming pod's required anti-affinity is violated on the node.
pub const ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH: &str = "node(s) didn't match pod anti-affinity rules";
/// An existing pod's required anti-affinity rejects the incoming pod.
pub const ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";

pub(super) const PRE_FILTER_STATE_KEY: &str = "PreFilterInterPodAffinity";

/// Matching-pod counts by topology key, then topology value (nested so
/// Filter looks pairs up without allocating); zero counts are removed, so
/// an empty map means no pod matched anywhere.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Counts(HashMap<String, HashMap<String, i64>>);

impl Counts {
    fn update(&mut self, labels: &BTreeMap<String, String>, key: &str, delta: i64) {
        let Some(v) = labels.get(key) else { return };
        let values = self.0.entry(key.to_string()).or_default();
        let e = values.entry(v.clone()).or_default();
        *e += delta;
        if *e == 0 {
            values.remove(v);
            if values.is_empty() {
                self.0.remove(key);
            }
        }
    }

    /// Adds `delta` for every term's topology pair on the node when `pod`
    /// matches all the terms.
    fn update_with_affinity_terms(
        &mut self,
        terms: &[AffinityTerm],
        pod: &Pod,
        labels: &BTreeMap<String, String>,
        delta: i64,
    ) {
        if pod_matches_all_terms(terms, pod) {
            for t in terms {
                self.update(labels, &t.topology_key, delta);
            }
        }
    }

    /// Adds `delta` for each term `pod` matches.
    fn update_with_anti_affinity_terms(
        &mut self,
        terms: &[AffinityTerm],
        pod: &Pod,
        ns_labels: &BTreeMap<String, String>,
        labels: &BTreeMap<String, String>,
        delta: i64,
    ) {
        for t in terms {
            if t.matches(pod, ns_labels) {
                self.update(labels, &t.topology_key, delta);
            }
        }
    }

    fn get(&self, key: &str, value: &str) -> i64 {
        self.0.get(key).and_then(|m| m.get(value)).copied().unwrap_or(0)
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Whether `pod` matches every term (false for no terms). The incoming
/// pod's terms have their namespace selectors merged, so no namespace
/// labels are needed.
pub(super) fn pod_matches_all_terms(terms: &[AffinityTerm], pod: &Pod) -> bool {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    !terms.is_empty() && terms.iter().all(|t| t.matches(pod, &EMPTY))
}

/// What PreFilter computed (upstream `preFilterState`).
#[derive(Clone, Debug)]
pub(super) struct PreFilterState {
    pub(super) existing_anti_affinity_counts: Counts,
    pub(super) affinity_counts: Counts,
    pub(super) anti_affinity_counts: Counts,
    /// The incoming pod with namespace selectors merged into namespaces.
    pub(super) pod_info: Arc<PodInfo>,
    pub(super) namespace_labels: BTreeMap<String, String>,
}

impl InterPodAffinity {
    /// Upstream PreFilter: builds the counts, or Skip when no rule can bite.
    pub(super) fn compute_pre_filter(&self, state: &mut CycleState, pod: &PodInfo, snapshot: &Snapshot) -> Status {
        let mut pi = pod.clone();
        for t in pi.required_affinity_terms.iter_mut().chain(pi.required_anti_affinity_terms.iter_mut()) {
            self.merge_namespaces(t);
        }
        let ns = pod.pod.metadata.namespace.as_deref().unwrap_or("");
        let namespace_labels = self.namespace_labels(ns);

        let mut existing = Counts::default();
        for node in &snapshot.have_pods_with_required_anti_affinity {
            let labels = node_labels(node);
            for existing_pod in &node.pods_with_required_anti_affinity {
                existing.update_with_anti_affinity_terms(
                    &existing_pod.required_anti_affinity_terms,
                    &pod.pod,
                    &namespace_labels,
                    labels,
                    1,
                );
            }
        }

        let mut affinity = Counts::default();
        let mut anti_affinity = Counts::default();
        if !pi.required_affinity_terms.is_empty() || !pi.required_anti_affinity_terms.is_empty() {
            static EMPTY: BTreeMap<String, String> = BTreeMap::new();
            for node in &snapshot.nodes {
                let labels = node_labels(node);
                for p in &node.pods {
                    affinity.update_with_affinity_terms(&pi.required_affinity_terms, &p.pod, labels, 1);
                    anti_affinity.update_with_anti_affinity_terms(
                        &pi.required_anti_affinity_terms,
                        &p.pod,
                        &EMPTY,
                        labels,
                        1,
                    );
                }
            }
        }

        if existing.is_empty() && pi.required_affinity_terms.is_empty() && pi.required_anti_affinity_terms.is_empty() {
            return Status::skip();
        }
        state.write(
            PRE_FILTER_STATE_KEY,
            PreFilterState {
                existing_anti_affinity_counts: existing,
                affinity_counts: affinity,
                anti_affinity_counts: anti_affinity,
                pod_info: Arc::new(pi),
                namespace_labels,
            },
        );
        Status::success()
    }
}

/// AddPod (`delta` 1) / RemovePod (`delta` -1): writes a new state with
/// `changed`'s contribution on `node` added or taken away.
pub(super) fn update_with_pod(state: &mut CycleState, changed: &PodInfo, node: &NodeInfo, delta: i64) -> Status {
    let Some(s) = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY) else {
        // PreFilter skipped: nothing to keep up to date.
        return Status::success();
    };
    let mut s = s.clone();
    let labels = node_labels(node);
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    s.existing_anti_affinity_counts.update_with_anti_affinity_terms(
        &changed.required_anti_affinity_terms,
        &s.pod_info.pod,
        &s.namespace_labels,
        labels,
        delta,
    );
    s.affinity_counts.update_with_affinity_terms(&s.pod_info.required_affinity_terms, &changed.pod, labels, delta);
    s.anti_affinity_counts.update_with_anti_affinity_terms(
        &s.pod_info.required_anti_affinity_terms,
        &changed.pod,
        &EMPTY,
        labels,
        delta,
    );
    state.write(PRE_FILTER_STATE_KEY, s);
    Status::success()
}

/// Whether the node has every topology key of the incoming pod's required
/// affinity terms and a matching pod in each term's domain; or — the first
/// pod of a group that selects itself — no pod anywhere matches and the pod
/// matches its own terms.
fn satisfy_pod_affinity(s: &PreFilterState, labels: &BTreeMap<String, String>) -> bool {
    let mut pods_exist = true;
    for t in &s.pod_info.required_affinity_terms {
        let Some(v) = labels.get(&t.topology_key) else { return false };
        if s.affinity_counts.get(&t.topology_key, v) <= 0 {
            pods_exist = false;
        }
    }
    pods_exist
        || (s.affinity_counts.is_empty() && pod_matches_all_terms(&s.pod_info.required_affinity_terms, &s.pod_info.pod))
}

fn satisfy_pod_anti_affinity(s: &PreFilterState, labels: &BTreeMap<String, String>) -> bool {
    if s.anti_affinity_counts.is_empty() {
        return true;
    }
    s.pod_info.required_anti_affinity_terms.iter().all(|t| match labels.get(&t.topology_key) {
        Some(v) => s.anti_affinity_counts.get(&t.topology_key, v) <= 0,
        None => true,
    })
}

fn satisfy_existing_pods_anti_affinity(s: &PreFilterState, labels: &BTreeMap<String, String>) -> bool {
    if s.existing_anti_affinity_counts.is_empty() {
        return true;
    }
    labels.iter().all(|(k, v)| s.existing_anti_affinity_counts.get(k, v) <= 0)
}

/// Upstream Filter: affinity first (unresolvable), then the pod's
/// anti-affinity, then existing pods' anti-affinity (both unschedulable:
/// preempting the matching pods can help).
pub(super) fn filter(state: &CycleState, node: &NodeInfo) -> Status {
    let Some(s) = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY) else {
        return Status::error(format!("reading {PRE_FILTER_STATE_KEY:?} from cycleState: not found"));
    };
    let labels = node_labels(node);
    if !satisfy_pod_affinity(s, labels) {
        return Status::new(Code::UnschedulableAndUnresolvable, ERR_REASON_AFFINITY_RULES_NOT_MATCH);
    }
    if !satisfy_pod_anti_affinity(s, labels) {
        return Status::new(Code::Unschedulable, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH);
    }
    if !satisfy_existing_pods_anti_affinity(s, labels) {
        return Status::new(Code::Unschedulable, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH);
    }
    Status::success()
}
