//! NodeName (upstream `plugins/nodename`): a pod that names a node in
//! `spec.nodeName` fits only there.

use std::sync::Arc;

use crate::framework::{
    action, ClusterEvent, CycleState, EventResource, ExtensionPoint, Handle, NodeInfo, Plugin, PodInfo, Status,
};

use super::names;

/// Upstream `ErrReason`.
pub const ERR_REASON: &str = "node(s) didn't match the requested node name";

/// The plugin.
pub struct NodeName;

/// Builds the plugin; it takes no args.
pub fn new(_args: Option<&serde_json::Value>, _handle: &Handle) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(NodeName))
}

impl Plugin for NodeName {
    fn name(&self) -> &'static str {
        names::NODE_NAME
    }
    fn extension_points(&self) -> &'static [ExtensionPoint] {
        &[ExtensionPoint::Filter]
    }
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![ClusterEvent { resource: EventResource::Node, actions: action::ADD }]
    }
    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let wanted = pod.pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or("");
        if wanted.is_empty() || wanted == node.node_name() {
            Status::success()
        } else {
            Status::unresolvable(ERR_REASON)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::plugins::testing::{node_info, pod_info};
    use serde_json::json;

    #[test]
    fn only_the_named_node_fits() {
        for (spec, want) in [
            (json!({}), Code::Success),
            (json!({"nodeName": "n"}), Code::Success),
            (json!({"nodeName": "other"}), Code::UnschedulableAndUnresolvable),
        ] {
            let s =
                NodeName.filter(&CycleState::default(), &pod_info("p", spec), &node_info("n", json!({}), json!({})));
            assert_eq!(s.code, want);
        }
    }
}
