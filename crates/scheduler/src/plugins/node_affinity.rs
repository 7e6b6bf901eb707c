//! NodeAffinity (upstream `plugins/nodeaffinity`): Filter on
//! `spec.nodeSelector` and required node affinity (plus the profile's
//! `addedAffinity`); PreFilter narrows the nodes when every required term
//! names nodes by `metadata.name`; Score sums the weights of the matching
//! preferred terms, normalized to 0–100.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{NodeAffinity as NodeAffinitySpec, PreferredSchedulingTerm};

use crate::framework::{
    action, ClusterEvent, CycleState, EventResource, ExtensionPoint, Handle, NodeInfo, NodeScore, Plugin, PodInfo,
    PreFilterResult, Snapshot, Status,
};

use super::{helper, names};

/// Upstream `ErrReasonPod`.
pub const ERR_REASON_POD: &str = "node(s) didn't match Pod's node affinity/selector";
/// Upstream `ErrReasonEnforced` (the profile's addedAffinity).
pub const ERR_REASON_ENFORCED: &str = "node(s) didn't match scheduler-enforced node affinity";
/// Upstream `errReasonConflict`.
pub const ERR_REASON_CONFLICT: &str = "pod affinity terms conflict";

/// The plugin with its `NodeAffinityArgs.addedAffinity`.
pub struct NodeAffinity {
    added: Option<NodeAffinitySpec>,
}

/// Builds the plugin from `NodeAffinityArgs` (`{"addedAffinity": {...}}`).
pub fn new(args: Option<&serde_json::Value>, _handle: &Handle) -> Result<Arc<dyn Plugin>, String> {
    let added = match args.and_then(|a| a.get("addedAffinity")) {
        None | Some(serde_json::Value::Null) => None,
        Some(v) => {
            Some(serde_json::from_value::<NodeAffinitySpec>(v.clone()).map_err(|e| format!("addedAffinity: {e}"))?)
        }
    };
    Ok(Arc::new(NodeAffinity { added }))
}

const PRE_SCORE_KEY: &str = "PreScoreNodeAffinity";

struct PreScoreState(Vec<PreferredSchedulingTerm>);

fn pod_node_affinity(pod: &PodInfo) -> Option<&NodeAffinitySpec> {
    pod.pod.spec.as_ref()?.affinity.as_ref()?.node_affinity.as_ref()
}

impl Plugin for NodeAffinity {
    fn name(&self) -> &'static str {
        names::NODE_AFFINITY
    }
    fn extension_points(&self) -> &'static [ExtensionPoint] {
        &[ExtensionPoint::PreFilter, ExtensionPoint::Filter, ExtensionPoint::PreScore, ExtensionPoint::Score]
    }
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![ClusterEvent { resource: EventResource::Node, actions: action::ADD | action::UPDATE_NODE_LABEL }]
    }
    /// Narrows to the nodes named by `metadata.name` In matchFields when
    /// every required term has one (terms are ORed, fields within a term
    /// ANDed); conflicting names reject the pod.
    fn pre_filter(&self, _state: &mut CycleState, pod: &PodInfo, _s: &Snapshot) -> (Option<PreFilterResult>, Status) {
        let spec = pod.pod.spec.as_ref();
        let required =
            pod_node_affinity(pod).and_then(|a| a.required_during_scheduling_ignored_during_execution.as_ref());
        let no_selector = spec.and_then(|s| s.node_selector.as_ref()).is_none_or(|m| m.is_empty());
        let added_required =
            self.added.as_ref().and_then(|a| a.required_during_scheduling_ignored_during_execution.as_ref());
        if no_selector && required.is_none() && added_required.is_none() {
            return (None, Status::skip());
        }
        let Some(required) = required else { return (None, Status::success()) };
        let mut node_names: Option<BTreeSet<String>> = None;
        for term in &required.node_selector_terms {
            let mut term_names: Option<BTreeSet<String>> = None;
            for r in term.match_fields.iter().flatten() {
                if r.key == "metadata.name" && r.operator == "In" {
                    let s: BTreeSet<String> = r.values.iter().flatten().cloned().collect();
                    term_names = Some(match term_names {
                        None => s,
                        Some(prev) => prev.intersection(&s).cloned().collect(),
                    });
                }
            }
            let Some(term_names) = term_names else { return (None, Status::success()) };
            node_names.get_or_insert_with(BTreeSet::new).extend(term_names);
        }
        match node_names {
            Some(n) if n.is_empty() => (None, Status::unresolvable(ERR_REASON_CONFLICT)),
            Some(n) => (Some(PreFilterResult { node_names: Some(n) }), Status::success()),
            None => (None, Status::success()),
        }
    }
    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(n) = node.node.as_ref() else { return Status::error("node not found") };
        if let Some(req) =
            self.added.as_ref().and_then(|a| a.required_during_scheduling_ignored_during_execution.as_ref())
        {
            if !helper::node_selector_matches(req, n) {
                return Status::unresolvable(ERR_REASON_ENFORCED);
            }
        }
        if !helper::pod_matches_node_selector_and_affinity(&pod.pod, n) {
            return Status::unresolvable(ERR_REASON_POD);
        }
        Status::success()
    }
    fn pre_score(&self, state: &mut CycleState, pod: &PodInfo, _nodes: &[Arc<NodeInfo>]) -> Status {
        let mut terms: Vec<PreferredSchedulingTerm> = Vec::new();
        for a in [self.added.as_ref(), pod_node_affinity(pod)].into_iter().flatten() {
            terms.extend(a.preferred_during_scheduling_ignored_during_execution.iter().flatten().cloned());
        }
        if terms.is_empty() {
            return Status::skip();
        }
        state.write(PRE_SCORE_KEY, PreScoreState(terms));
        Status::success()
    }
    /// The sum of the weights of the preferred terms the node matches.
    fn score(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> (i64, Status) {
        let Some(n) = node.node.as_ref() else { return (0, Status::error("node not found")) };
        let Some(s) = state.read::<PreScoreState>(PRE_SCORE_KEY) else { return (0, Status::success()) };
        let total =
            s.0.iter()
                .filter(|t| t.weight != 0 && helper::term_matches(&t.preference, n))
                .map(|t| t.weight as i64)
                .sum();
        (total, Status::success())
    }
    fn normalize_score(&self, _state: &CycleState, _pod: &PodInfo, scores: &mut [NodeScore]) -> Status {
        helper::normalize(false, scores)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::plugins::testing::{node_info, pod_info};
    use serde_json::json;

    fn plugin(args: Option<serde_json::Value>) -> Arc<dyn Plugin> {
        new(args.as_ref(), &Handle::default()).unwrap()
    }

    #[test]
    fn filter_on_selector_and_required_terms() {
        let req = |terms: serde_json::Value| json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}});
        let cases = [
            (json!({}), json!({"foo": "bar"}), true),
            (json!({"nodeSelector": {"foo": "bar"}}), json!({"foo": "bar"}), true),
            (json!({"nodeSelector": {"foo": "bar"}}), json!({"foo": "baz"}), false),
            (json!({"nodeSelector": {"foo": "bar"}}), json!({}), false),
            (
                req(json!([{"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar", "value2"]}]}])),
                json!({"foo": "bar"}),
                true,
            ),
            (
                req(json!([{"matchExpressions": [{"key": "kernel-version", "operator": "Gt", "values": ["0204"]}]}])),
                json!({"kernel-version": "0206"}),
                true,
            ),
            (
                req(
                    json!([{"matchExpressions": [{"key": "mem-type", "operator": "NotIn", "values": ["DDR", "DDR2"]}]}]),
                ),
                json!({"mem-type": "DDR3"}),
                true,
            ),
            (
                req(json!([{"matchExpressions": [{"key": "GPU", "operator": "Exists"}]}])),
                json!({"GPU": "NVIDIA-GRID-K1"}),
                true,
            ),
            (
                req(json!([{"matchExpressions": [{"key": "foo", "operator": "In", "values": ["value1", "value2"]}]}])),
                json!({"foo": "bar"}),
                false,
            ),
            // An empty term matches nothing.
            (req(json!([{}])), json!({"foo": "bar"}), false),
            // Terms are ORed.
            (
                req(
                    json!([{"matchExpressions": [{"key": "foo", "operator": "In", "values": ["x"]}]}, {"matchExpressions": [{"key": "diffkey", "operator": "In", "values": ["wrong", "value2"]}]}]),
                ),
                json!({"diffkey": "value2"}),
                true,
            ),
            // nodeSelector and affinity must both hold.
            (
                json!({"nodeSelector": {"foo": "bar"}, "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "foo", "operator": "Exists"}]}]}}}}),
                json!({"foo": "baz"}),
                false,
            ),
            (
                req(json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}])),
                json!({}),
                true,
            ),
            (
                req(json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["other"]}]}])),
                json!({}),
                false,
            ),
        ];
        let pl = plugin(None);
        for (pod, labels, fits) in cases {
            let s = pl.filter(&CycleState::default(), &pod_info("p", pod.clone()), &node_info("n", labels, json!({})));
            if fits {
                assert!(s.is_success(), "{pod}: {s:?}");
            } else {
                assert_eq!(
                    (s.code, s.message().as_str()),
                    (Code::UnschedulableAndUnresolvable, ERR_REASON_POD),
                    "{pod}"
                );
            }
        }
    }

    #[test]
    fn added_affinity_is_enforced() {
        let pl = plugin(Some(
            json!({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["foo"]}]}]}}}),
        ));
        let p = pod_info("p", json!({}));
        assert!(pl.filter(&CycleState::default(), &p, &node_info("n", json!({"zone": "foo"}), json!({}))).is_success());
        let s = pl.filter(&CycleState::default(), &p, &node_info("n", json!({"zone": "bar"}), json!({})));
        assert_eq!(s.message(), ERR_REASON_ENFORCED);
    }

    #[test]
    fn pre_filter_narrows_by_metadata_name() {
        let pl = plugin(None);
        let req = |terms: serde_json::Value| {
            pod_info(
                "p",
                json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}}),
            )
        };
        let snap = Snapshot::default();
        let (_, s) = pl.pre_filter(&mut CycleState::default(), &pod_info("p", json!({})), &snap);
        assert!(s.is_skip());
        let (r, _) = pl.pre_filter(
            &mut CycleState::default(),
            &req(json!([
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]},
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["c"]}]}
            ])),
            &snap,
        );
        assert_eq!(r.unwrap().node_names.unwrap(), BTreeSet::from(["a".into(), "b".into(), "c".into()]));
        // A term without a name field leaves every node eligible.
        let (r, s) = pl.pre_filter(
            &mut CycleState::default(),
            &req(json!([
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a"]}]},
                {"matchExpressions": [{"key": "x", "operator": "Exists"}]}
            ])),
            &snap,
        );
        assert!(r.is_none() && s.is_success());
        let (_, s) = pl.pre_filter(
            &mut CycleState::default(),
            &req(json!([{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["a"]},
                {"key": "metadata.name", "operator": "In", "values": ["b"]}
            ]}])),
            &snap,
        );
        assert_eq!((s.code, s.message().as_str()), (Code::UnschedulableAndUnresolvable, ERR_REASON_CONFLICT));
    }

    #[test]
    fn preferred_terms_score_normalized() {
        // Upstream's "all nodes matches the preferred scheduling requirements" style case with weights 2/4/5.
        let pod = pod_info(
            "p",
            json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 2, "preference": {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]}},
                {"weight": 4, "preference": {"matchExpressions": [{"key": "key", "operator": "In", "values": ["value"]}]}},
                {"weight": 5, "preference": {"matchExpressions": [
                    {"key": "foo", "operator": "In", "values": ["bar"]},
                    {"key": "key", "operator": "In", "values": ["value"]},
                    {"key": "az", "operator": "In", "values": ["az1"]}
                ]}}
            ]}}}),
        );
        let nodes = [
            node_info("n1", json!({"foo": "bar"}), json!({})),
            node_info("n2", json!({"foo": "bar", "key": "value", "az": "az1"}), json!({})),
            node_info("n3", json!({"foo": "bar", "key": "value"}), json!({})),
        ];
        let pl = plugin(None);
        let mut state = CycleState::default();
        assert!(pl.pre_score(&mut state, &pod, &[]).is_success());
        let mut scores: Vec<NodeScore> = nodes
            .iter()
            .map(|n| NodeScore { name: n.node_name().into(), score: pl.score(&state, &pod, n).0 })
            .collect();
        pl.normalize_score(&state, &pod, &mut scores);
        assert_eq!(scores.iter().map(|s| s.score).collect::<Vec<_>>(), vec![18, 100, 54]);
        assert!(pl.pre_score(&mut CycleState::default(), &pod_info("q", json!({})), &[]).is_skip());
    }
}
