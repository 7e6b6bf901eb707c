//! InterPodAffinity (upstream `plugins/interpodaffinity`): required pod
//! affinity and anti-affinity as a Filter (both the incoming pod's terms and
//! the required anti-affinity of pods already running), and preferred terms
//! (plus existing pods' required affinity at `hardPodAffinityWeight`) as a
//! Score, min-max normalized to 0..=100.
//!
//! - [`filtering`]: PreFilter counts per topology pair, AddPod/RemovePod, Filter;
//! - [`scoring`]: PreScore, Score, NormalizeScore.

mod filtering;
mod scoring;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;

use crate::framework::{
    action, AffinityTerm, ClusterEvent, CycleState, EventResource, ExtensionPoint, Handle, Lister, NodeInfo, NodeScore,
    Plugin, PodInfo, PreFilterResult, Snapshot, Status,
};
use crate::plugins::names;
use k8s_openapi::api::core::v1::Namespace;

pub use filtering::{
    ERR_REASON_AFFINITY_RULES_NOT_MATCH, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
};

/// `InterPodAffinityArgs` (kubescheduler.config.k8s.io/v1), camelCase.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct InterPodAffinityArgs {
    /// Score weight (0–100) of an existing pod's required affinity term the
    /// incoming pod matches; default 1.
    pub hard_pod_affinity_weight: i32,
    /// Score only the incoming pod's preferred terms (skip existing pods'
    /// terms when the incoming pod has none); default false.
    pub ignore_preferred_terms_of_existing_pods: bool,
}

impl Default for InterPodAffinityArgs {
    fn default() -> Self {
        InterPodAffinityArgs { hard_pod_affinity_weight: 1, ignore_preferred_terms_of_existing_pods: false }
    }
}

/// The InterPodAffinity plugin.
pub struct InterPodAffinity {
    args: InterPodAffinityArgs,
    namespaces: Arc<dyn Lister<Namespace>>,
}

/// Builds the plugin from `InterPodAffinityArgs`. Err: upstream's
/// validation message (`hardPodAffinityWeight: Invalid value: 101: not in
/// valid range [0-100]`) or a decoding error.
pub fn new(args: Option<&serde_json::Value>, handle: &Handle) -> Result<Arc<dyn Plugin>, String> {
    let args: InterPodAffinityArgs = match args {
        Some(v) => serde_json::from_value(v.clone()).map_err(|e| e.to_string())?,
        None => InterPodAffinityArgs::default(),
    };
    if !(0..=100).contains(&args.hard_pod_affinity_weight) {
        return Err(format!(
            "hardPodAffinityWeight: Invalid value: {}: not in valid range [0-100]",
            args.hard_pod_affinity_weight
        ));
    }
    Ok(Arc::new(InterPodAffinity { args, namespaces: handle.listers.namespaces.clone() }))
}

impl InterPodAffinity {
    /// The labels of namespace `ns` (empty when unknown), as upstream's
    /// `GetNamespaceLabelsSnapshot`.
    fn namespace_labels(&self, ns: &str) -> BTreeMap<String, String> {
        self.namespaces.get("", ns).and_then(|n| n.metadata.labels.clone()).unwrap_or_default()
    }

    /// Upstream `mergeAffinityTermNamespacesIfNotEmpty`: a non-empty
    /// namespaceSelector is resolved now into the namespaces it selects, so
    /// matching existing pods needs no namespace lookups; an empty selector
    /// (`{}`, all namespaces) is kept.
    fn merge_namespaces(&self, term: &mut AffinityTerm) {
        if term.namespace_selector.is_empty() {
            return;
        }
        if !term.namespace_selector.matches_nothing() {
            for ns in self.namespaces.list() {
                let labels = ns.metadata.labels.clone().unwrap_or_default();
                if term.namespace_selector.matches(&labels) {
                    term.namespaces.insert(ns.metadata.name.clone().unwrap_or_default());
                }
            }
        }
        term.namespace_selector = rkube_apimachinery::selector::labels::LabelSelector::nothing();
    }
}

/// A node's labels (empty when the node object is unknown).
fn node_labels(node: &NodeInfo) -> &BTreeMap<String, String> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    node.node.as_ref().and_then(|n| n.metadata.labels.as_ref()).unwrap_or(&EMPTY)
}

#[async_trait::async_trait]
impl Plugin for InterPodAffinity {
    fn name(&self) -> &'static str {
        names::INTER_POD_AFFINITY
    }

    fn extension_points(&self) -> &'static [ExtensionPoint] {
        &[ExtensionPoint::PreFilter, ExtensionPoint::Filter, ExtensionPoint::PreScore, ExtensionPoint::Score]
    }

    /// Upstream: assigned pods added, deleted or relabelled; nodes added or
    /// relabelled.
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![
            ClusterEvent {
                resource: EventResource::Pod,
                actions: action::ADD | action::UPDATE_POD_LABEL | action::DELETE,
            },
            ClusterEvent { resource: EventResource::Node, actions: action::ADD | action::UPDATE_NODE_LABEL },
        ]
    }

    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        self.stash_nodes_for_scoring(state, pod, snapshot);
        (None, self.compute_pre_filter(state, pod, snapshot))
    }

    fn add_pod(&self, state: &mut CycleState, _pod: &PodInfo, to_add: &Arc<PodInfo>, node: &NodeInfo) -> Status {
        filtering::update_with_pod(state, to_add, node, 1)
    }

    fn remove_pod(&self, state: &mut CycleState, _pod: &PodInfo, to_remove: &PodInfo, node: &NodeInfo) -> Status {
        filtering::update_with_pod(state, to_remove, node, -1)
    }

    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        filtering::filter(state, node)
    }

    fn pre_score(&self, state: &mut CycleState, pod: &PodInfo, nodes: &[Arc<NodeInfo>]) -> Status {
        self.compute_pre_score(state, pod, nodes)
    }

    fn score(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> (i64, Status) {
        scoring::score(state, node)
    }

    fn normalize_score(&self, state: &CycleState, _pod: &PodInfo, scores: &mut [NodeScore]) -> Status {
        scoring::normalize_score(state, scores)
    }
}
