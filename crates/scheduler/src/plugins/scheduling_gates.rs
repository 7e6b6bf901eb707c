//! SchedulingGates (upstream `plugins/schedulinggates`): a pod with
//! `spec.schedulingGates` stays out of the active queue until they are
//! all removed.

use std::sync::Arc;

use crate::framework::{action, ClusterEvent, EventResource, ExtensionPoint, Handle, Plugin, PodInfo, Status};

use super::names;

/// The plugin.
pub struct SchedulingGates;

/// Builds the plugin; it takes no args.
pub fn new(_args: Option<&serde_json::Value>, _handle: &Handle) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(SchedulingGates))
}

impl Plugin for SchedulingGates {
    fn name(&self) -> &'static str {
        names::SCHEDULING_GATES
    }
    fn extension_points(&self) -> &'static [ExtensionPoint] {
        &[ExtensionPoint::PreEnqueue]
    }
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![ClusterEvent { resource: EventResource::Pod, actions: action::UPDATE_POD_SCHEDULING_GATES_ELIMINATED }]
    }
    /// UnschedulableAndUnresolvable `waiting for scheduling gates: [a b]` (Go's `%v` of the names).
    fn pre_enqueue(&self, pod: &PodInfo) -> Status {
        let gates: Vec<&str> = pod
            .pod
            .spec
            .as_ref()
            .and_then(|s| s.scheduling_gates.as_ref())
            .into_iter()
            .flatten()
            .map(|g| g.name.as_str())
            .collect();
        if gates.is_empty() {
            return Status::success();
        }
        Status::unresolvable(format!("waiting for scheduling gates: [{}]", gates.join(" ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::plugins::testing::pod_info;
    use serde_json::json;

    #[test]
    fn gated_pods_wait() {
        let pl = SchedulingGates;
        assert!(pl.pre_enqueue(&pod_info("p", json!({}))).is_success());
        let s = pl.pre_enqueue(&pod_info("p", json!({"schedulingGates": [{"name": "foo"}, {"name": "bar"}]})));
        assert_eq!(s.code, Code::UnschedulableAndUnresolvable);
        assert_eq!(s.message(), "waiting for scheduling gates: [foo bar]");
    }
}
