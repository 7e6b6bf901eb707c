//! The `endpoints.kubernetes.io/last-change-trigger-time` value (upstream
//! `TriggerTimeTracker`): per Service, the earliest of the trigger times
//! that changed since its last sync — a pod's is its Ready condition's
//! lastTransitionTime, the Service's its creationTimestamp.

use std::collections::HashMap;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::jiff::Timestamp;

#[derive(Default)]
struct State {
    pods: HashMap<String, Timestamp>,
    service: Option<Timestamp>,
}

/// Trigger times seen per Service (`namespace/name`).
#[derive(Default)]
pub struct TriggerTimeTracker {
    states: Mutex<HashMap<String, State>>,
}

fn pod_trigger_time(pod: &Pod) -> Option<Timestamp> {
    let conds = pod.status.as_ref()?.conditions.as_ref()?;
    conds.iter().find(|c| c.type_ == "Ready")?.last_transition_time.as_ref().map(|t| t.0)
}

impl TriggerTimeTracker {
    /// The trigger time for this sync of `svc` with `pods` (none: nothing
    /// with a trigger time changed), remembering what was seen.
    pub fn compute(&self, svc: &Service, pods: &[&Pod]) -> Option<Timestamp> {
        let key = crate::runtime::key_of(svc);
        let mut states = self.states.lock().unwrap_or_else(|e| e.into_inner());
        let state = states.entry(key).or_default();
        let mut min: Option<Timestamp> = None;
        let mut seen = HashMap::new();
        for pod in pods {
            let Some(t) = pod_trigger_time(pod) else { continue };
            let name = pod.metadata.name.clone().unwrap_or_default();
            if state.pods.get(&name).is_none_or(|last| t > *last) {
                min = Some(min.map_or(t, |m| m.min(t)));
            }
            seen.insert(name, t);
        }
        let svc_time = svc.metadata.creation_timestamp.as_ref().map(|t| t.0);
        if let Some(t) = svc_time {
            if state.service.is_none_or(|last| t > last) {
                min = Some(min.map_or(t, |m| m.min(t)));
            }
        }
        state.pods = seen;
        state.service = svc_time;
        min
    }

    /// Forgets a deleted Service.
    pub fn delete(&self, svc_key: &str) {
        self.states.lock().unwrap_or_else(|e| e.into_inner()).remove(svc_key);
    }
}

/// Go's `time.RFC3339Nano` in UTC (fraction without trailing zeros).
pub fn format(t: Timestamp) -> String {
    t.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn earliest_changed_time_then_nothing_until_something_changes() {
        let svc: Service = serde_json::from_value(
            json!({"metadata": {"name": "s", "namespace": "n", "creationTimestamp": "2024-01-01T00:00:10Z"}}),
        )
        .unwrap();
        let pod = |name: &str, t: &str| -> Pod {
            serde_json::from_value(json!({"metadata": {"name": name}, "status": {"conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": t}]}}))
            .unwrap()
        };
        let tr = TriggerTimeTracker::default();
        let (a, b) = (pod("a", "2024-01-01T00:00:20Z"), pod("b", "2024-01-01T00:00:05Z"));
        assert_eq!(format(tr.compute(&svc, &[&a, &b]).unwrap()), "2024-01-01T00:00:05Z");
        assert_eq!(tr.compute(&svc, &[&a, &b]), None);
        let a2 = pod("a", "2024-01-01T00:00:30.5Z");
        assert_eq!(format(tr.compute(&svc, &[&a2, &b]).unwrap()), "2024-01-01T00:00:30.5Z");
    }
}
