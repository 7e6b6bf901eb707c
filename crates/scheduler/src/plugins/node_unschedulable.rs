//! NodeUnschedulable (upstream `plugins/nodeunschedulable`): a node with
//! `spec.unschedulable` (cordoned) takes only pods tolerating the
//! `node.kubernetes.io/unschedulable:NoSchedule` taint.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Taint;

use crate::framework::{
    action, ClusterEvent, CycleState, EventResource, ExtensionPoint, Handle, NodeInfo, Plugin, PodInfo, Status,
};

use super::{helper, names};

/// Upstream `ErrReasonUnschedulable`.
pub const ERR_REASON_UNSCHEDULABLE: &str = "node(s) were unschedulable";
/// Upstream `ErrReasonUnknownCondition`.
pub const ERR_REASON_UNKNOWN_CONDITION: &str = "node(s) had unknown conditions";

/// The plugin.
pub struct NodeUnschedulable;

/// Builds the plugin; it takes no args.
pub fn new(_args: Option<&serde_json::Value>, _handle: &Handle) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(NodeUnschedulable))
}

impl Plugin for NodeUnschedulable {
    fn name(&self) -> &'static str {
        names::NODE_UNSCHEDULABLE
    }
    fn extension_points(&self) -> &'static [ExtensionPoint] {
        &[ExtensionPoint::Filter]
    }
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![
            ClusterEvent { resource: EventResource::Node, actions: action::ADD | action::UPDATE_NODE_TAINT },
            ClusterEvent { resource: EventResource::Pod, actions: action::UPDATE_POD_TOLERATIONS },
        ]
    }
    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(n) = node.node.as_ref() else { return Status::unresolvable(ERR_REASON_UNKNOWN_CONDITION) };
        if !n.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false) {
            return Status::success();
        }
        let taint =
            Taint { key: "node.kubernetes.io/unschedulable".into(), effect: "NoSchedule".into(), ..Default::default() };
        if helper::tolerations_tolerate(helper::pod_tolerations(&pod.pod), &taint) {
            return Status::success();
        }
        Status::unresolvable(ERR_REASON_UNSCHEDULABLE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::plugins::testing::{node_info, pod_info};
    use serde_json::json;

    #[test]
    fn cordoned_nodes_take_only_tolerating_pods() {
        let cases = [
            (json!({}), json!({}), Code::Success),
            (json!({}), json!({"unschedulable": false}), Code::Success),
            (json!({}), json!({"unschedulable": true}), Code::UnschedulableAndUnresolvable),
            (
                json!({"tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]}),
                json!({"unschedulable": true}),
                Code::Success,
            ),
        ];
        for (pod, spec, want) in cases {
            let s =
                NodeUnschedulable.filter(&CycleState::default(), &pod_info("p", pod), &node_info("n", json!({}), spec));
            assert_eq!(s.code, want);
            if want != Code::Success {
                assert_eq!(s.message(), ERR_REASON_UNSCHEDULABLE);
            }
        }
    }
}
