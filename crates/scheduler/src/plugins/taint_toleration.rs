//! TaintToleration (upstream `plugins/tainttoleration`): Filter rejects a
//! node with a `NoSchedule`/`NoExecute` taint the pod does not tolerate;
//! Score prefers nodes with fewer untolerated `PreferNoSchedule` taints.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Toleration;

use crate::framework::{
    action, ClusterEvent, CycleState, EventResource, ExtensionPoint, Handle, NodeInfo, NodeScore, Plugin, PodInfo,
    Status,
};

use super::{helper, names};

/// The plugin.
pub struct TaintToleration;

/// Builds the plugin; it takes no args.
pub fn new(_args: Option<&serde_json::Value>, _handle: &Handle) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(TaintToleration))
}

const PRE_SCORE_KEY: &str = "PreScoreTaintToleration";

/// The pod's tolerations that can matter for `PreferNoSchedule` taints.
struct PreScoreState(Vec<Toleration>);

impl Plugin for TaintToleration {
    fn name(&self) -> &'static str {
        names::TAINT_TOLERATION
    }
    fn extension_points(&self) -> &'static [ExtensionPoint] {
        &[ExtensionPoint::Filter, ExtensionPoint::PreScore, ExtensionPoint::Score]
    }
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![
            ClusterEvent { resource: EventResource::Node, actions: action::ADD | action::UPDATE_NODE_TAINT },
            ClusterEvent { resource: EventResource::Pod, actions: action::UPDATE_POD_TOLERATIONS },
        ]
    }
    /// UnschedulableAndUnresolvable `node(s) had untolerated taint {key: value}`.
    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(n) = node.node.as_ref() else { return Status::error("node not found") };
        let taint = helper::find_untolerated_taint(helper::node_taints(n), helper::pod_tolerations(&pod.pod), |t| {
            t.effect == "NoSchedule" || t.effect == "NoExecute"
        });
        match taint {
            None => Status::success(),
            Some(t) => Status::unresolvable(format!(
                "node(s) had untolerated taint {{{}: {}}}",
                t.key,
                t.value.as_deref().unwrap_or("")
            )),
        }
    }
    fn pre_score(&self, state: &mut CycleState, pod: &PodInfo, _nodes: &[Arc<NodeInfo>]) -> Status {
        let tolerations = helper::pod_tolerations(&pod.pod)
            .iter()
            .filter(|t| matches!(t.effect.as_deref(), None | Some("") | Some("PreferNoSchedule")))
            .cloned()
            .collect();
        state.write(PRE_SCORE_KEY, PreScoreState(tolerations));
        Status::success()
    }
    /// The number of `PreferNoSchedule` taints not tolerated.
    fn score(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> (i64, Status) {
        let Some(s) = state.read::<PreScoreState>(PRE_SCORE_KEY) else {
            return (0, Status::error(format!("reading {PRE_SCORE_KEY:?} from cycleState: not found")));
        };
        let Some(n) = node.node.as_ref() else { return (0, Status::error("node not found")) };
        let count = helper::node_taints(n)
            .iter()
            .filter(|t| t.effect == "PreferNoSchedule" && !helper::tolerations_tolerate(&s.0, t))
            .count();
        (count as i64, Status::success())
    }
    fn normalize_score(&self, _state: &CycleState, _pod: &PodInfo, scores: &mut [NodeScore]) -> Status {
        helper::normalize(true, scores)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::plugins::testing::{node_info, pod_info};
    use serde_json::json;

    #[test]
    fn filter_rejects_untolerated_hard_taints() {
        let taints = |t: serde_json::Value| json!({"taints": t});
        let cases = [
            (json!({}), taints(json!([])), None),
            (
                json!({}),
                taints(json!([{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}])),
                Some("node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"),
            ),
            (
                json!({"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "user1", "effect": "NoSchedule"}]}),
                taints(json!([{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}])),
                None,
            ),
            (
                json!({"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}]}),
                taints(json!([{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}])),
                Some("node(s) had untolerated taint {dedicated: user1}"),
            ),
            (json!({}), taints(json!([{"key": "soft", "effect": "PreferNoSchedule"}])), None),
            (
                json!({"tolerations": [{"key": "x", "operator": "Exists", "effect": "NoSchedule"}]}),
                taints(json!([{"key": "x", "value": "1", "effect": "NoExecute"}])),
                Some("node(s) had untolerated taint {x: 1}"),
            ),
        ];
        for (pod, spec, want) in cases {
            let s =
                TaintToleration.filter(&CycleState::default(), &pod_info("p", pod), &node_info("n", json!({}), spec));
            match want {
                None => assert!(s.is_success(), "{s:?}"),
                Some(m) => {
                    assert_eq!(s.code, Code::UnschedulableAndUnresolvable);
                    assert_eq!(s.message(), m);
                }
            }
        }
    }

    #[test]
    fn score_prefers_fewer_intolerable_prefer_no_schedule_taints() {
        // Upstream's "the more intolerable taints a node has, the lower its score" case.
        let pod = pod_info(
            "p",
            json!({"tolerations": [{"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}]}),
        );
        let nodes = [
            node_info("n1", json!({}), json!({})),
            node_info(
                "n2",
                json!({}),
                json!({"taints": [{"key": "cpu-type", "value": "arm64", "effect": "PreferNoSchedule"}]}),
            ),
            node_info(
                "n3",
                json!({}),
                json!({"taints": [
                    {"key": "cpu-type", "value": "arm64", "effect": "PreferNoSchedule"},
                    {"key": "disk-type", "value": "ssd", "effect": "PreferNoSchedule"},
                    {"key": "foo", "value": "bar", "effect": "PreferNoSchedule"}
                ]}),
            ),
        ];
        let mut state = CycleState::default();
        assert!(TaintToleration.pre_score(&mut state, &pod, &[]).is_success());
        let mut scores: Vec<NodeScore> = nodes
            .iter()
            .map(|n| NodeScore { name: n.node_name().into(), score: TaintToleration.score(&state, &pod, n).0 })
            .collect();
        TaintToleration.normalize_score(&state, &pod, &mut scores);
        assert_eq!(scores.iter().map(|s| s.score).collect::<Vec<_>>(), vec![100, 50, 0]);
    }
}
