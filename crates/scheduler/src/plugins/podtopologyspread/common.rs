//! Constraints as the plugin uses them (upstream `podtopologyspread/common.go`).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod, TopologySpreadConstraint};
use rkube_apimachinery::selector::labels::LabelSelector;

use super::PodTopologySpread;
use crate::framework::{NodeInfo, PodInfo};
use crate::plugins::helper;

/// One constraint with its selector parsed and policies defaulted.
#[derive(Clone, Debug)]
pub(super) struct Constraint {
    pub(super) max_skew: i64,
    pub(super) topology_key: String,
    pub(super) selector: LabelSelector,
    /// Defaults to 1.
    pub(super) min_domains: i64,
    /// `nodeAffinityPolicy: Honor` (the default): only nodes matching the
    /// pod's nodeSelector/required node affinity count.
    pub(super) honor_node_affinity: bool,
    /// `nodeTaintsPolicy: Honor` (default Ignore): only nodes whose
    /// NoSchedule/NoExecute taints the pod tolerates count.
    pub(super) honor_node_taints: bool,
}

impl Constraint {
    fn from_api(c: &TopologySpreadConstraint, selector: LabelSelector) -> Constraint {
        Constraint {
            max_skew: c.max_skew as i64,
            topology_key: c.topology_key.clone(),
            selector,
            min_domains: c.min_domains.unwrap_or(1) as i64,
            honor_node_affinity: c.node_affinity_policy.as_deref() != Some("Ignore"),
            honor_node_taints: c.node_taints_policy.as_deref() == Some("Honor"),
        }
    }

    /// Whether `node` counts for this constraint under its inclusion
    /// policies (upstream `matchNodeInclusionPolicies`).
    pub(super) fn matches_node_inclusion_policies(&self, pod: &Pod, node: &Node) -> bool {
        if self.honor_node_affinity && !helper::pod_matches_node_selector_and_affinity(pod, node) {
            return false;
        }
        if self.honor_node_taints {
            let untolerated =
                helper::find_untolerated_taint(helper::node_taints(node), helper::pod_tolerations(pod), |t| {
                    t.effect == "NoSchedule" || t.effect == "NoExecute"
                });
            if untolerated.is_some() {
                return false;
            }
        }
        true
    }
}

/// A node's labels (empty when unknown).
pub(super) fn node_labels(node: &NodeInfo) -> &BTreeMap<String, String> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    node.node.as_ref().and_then(|n| n.metadata.labels.as_ref()).unwrap_or(&EMPTY)
}

/// Whether the node has every constraint's topology key.
pub(super) fn node_labels_match(labels: &BTreeMap<String, String>, constraints: &[Constraint]) -> bool {
    constraints.iter().all(|c| labels.contains_key(&c.topology_key))
}

/// Pods on a node in `ns` that `selector` selects, not terminating
/// (upstream `countPodsMatchSelector`; an empty selector counts nothing).
pub(super) fn count_pods_match_selector(pods: &[Arc<PodInfo>], selector: &LabelSelector, ns: &str) -> i64 {
    if selector.is_empty() {
        return 0;
    }
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    pods.iter()
        .filter(|p| {
            let m = &p.pod.metadata;
            m.deletion_timestamp.is_none()
                && m.namespace.as_deref().unwrap_or("") == ns
                && selector.matches(m.labels.as_ref().unwrap_or(&EMPTY))
        })
        .count() as i64
}

/// A pod's labels.
pub(super) fn pod_labels(pod: &Pod) -> &BTreeMap<String, String> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    pod.metadata.labels.as_ref().unwrap_or(&EMPTY)
}

impl PodTopologySpread {
    /// The pod's constraints with `whenUnsatisfiable == action`, or — when
    /// it sets none — the default constraints with the selector of what
    /// owns the pod (upstream `getConstraints` / `buildDefaultConstraints`).
    /// `matchLabelKeys` are already merged into the selector by the API
    /// server. Err: a selector does not parse.
    pub(super) fn constraints(&self, pod: &Pod, action: &str) -> Result<Vec<Constraint>, String> {
        let own = pod.spec.as_ref().and_then(|s| s.topology_spread_constraints.as_deref()).unwrap_or(&[]);
        if !own.is_empty() {
            return own
                .iter()
                .filter(|c| c.when_unsatisfiable == action)
                .map(|c| {
                    let sel = match &c.label_selector {
                        Some(s) => LabelSelector::from_label_selector_json(
                            &serde_json::to_value(s).map_err(|e| e.to_string())?,
                        )?,
                        None => LabelSelector::nothing(),
                    };
                    Ok(Constraint::from_api(c, sel))
                })
                .collect();
        }
        let defaults: Vec<&TopologySpreadConstraint> =
            self.default_constraints.iter().filter(|c| c.when_unsatisfiable == action).collect();
        if defaults.is_empty() {
            return Ok(Vec::new());
        }
        let Some(selector) = self.selector_source.as_ref().and_then(|s| s.selector(pod)) else { return Ok(Vec::new()) };
        if selector.is_empty() || selector.matches_nothing() {
            return Ok(Vec::new());
        }
        Ok(defaults.into_iter().map(|c| Constraint::from_api(c, selector.clone())).collect())
    }

    /// Whether the default constraints are the system ones (see
    /// [`PodTopologySpread`]).
    pub(super) fn system_defaulted(&self) -> bool {
        self.system_defaulted
    }
}
