//! Writing scheduling outcomes back to the pod (upstream
//! `util.PatchPodStatus` via `updatePod`): the `PodScheduled` condition and
//! `status.nominatedNodeName`, as a strategic merge patch of
//! `pods/status`, sent only when something changes.

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

/// What to write to a pod after a failed cycle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodScheduledFalse {
    /// `Unschedulable` or `SchedulerError`.
    pub reason: String,
    /// The FitError summary or the error.
    pub message: String,
    /// `Some(node)` to set `nominatedNodeName` (empty = clear).
    pub nominated_node_name: Option<String>,
}

/// The strategic merge patch for `update`, or `None` when the pod already
/// shows it (upstream skips the call when `UpdatePodCondition` changes
/// nothing and the nominated node stays).
pub fn status_patch(pod: &Pod, update: &PodScheduledFalse, now: jiff::Timestamp) -> Option<serde_json::Value> {
    let status = pod.status.as_ref();
    let current = status.and_then(|s| s.conditions.as_ref()).and_then(|c| c.iter().find(|c| c.type_ == "PodScheduled"));
    let nnn_now = status.and_then(|s| s.nominated_node_name.as_deref()).unwrap_or("");
    let nnn_changed = update.nominated_node_name.as_deref().is_some_and(|n| n != nnn_now);
    let same = current.is_some_and(|c| {
        c.status == "False"
            && c.reason.as_deref() == Some(update.reason.as_str())
            && c.message.as_deref() == Some(update.message.as_str())
    });
    if same && !nnn_changed {
        return None;
    }
    // The transition time moves only when the status flips (upstream UpdatePodCondition).
    let transition = match current {
        Some(c) if c.status == "False" => c.last_transition_time.as_ref().map(|t| json!(t.0)).unwrap_or(json!(now)),
        _ => json!(now),
    };
    let mut status = json!({"conditions": [{
        "type": "PodScheduled",
        "status": "False",
        "reason": update.reason,
        "message": update.message,
        "lastProbeTime": null,
        "lastTransitionTime": transition,
    }]});
    if let Some(n) = &update.nominated_node_name {
        status["nominatedNodeName"] = if n.is_empty() { serde_json::Value::Null } else { json!(n) };
    }
    Some(json!({"status": status}))
}

/// Sends [`status_patch`] for `pod` when there is one.
pub async fn patch_pod_status(client: &kube::Client, pod: &Pod, update: &PodScheduledFalse) -> Result<(), kube::Error> {
    let Some(patch) = status_patch(pod, update, jiff::Timestamp::now()) else { return Ok(()) };
    let api: Api<Pod> = Api::namespaced(client.clone(), pod.metadata.namespace.as_deref().unwrap_or("default"));
    api.patch_status(pod.metadata.name.as_deref().unwrap_or(""), &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(status: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "ns"}, "status": status})).unwrap()
    }

    #[test]
    fn patches_only_changes_and_keeps_the_transition_time() {
        let now: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let u = PodScheduledFalse {
            reason: "Unschedulable".into(),
            message: "0/1 nodes are available: 1 Insufficient cpu.".into(),
            nominated_node_name: None,
        };
        let p = status_patch(&pod(json!({})), &u, now).unwrap();
        assert_eq!(p["status"]["conditions"][0]["lastTransitionTime"], json!("2026-01-01T00:00:00Z"));
        assert_eq!(p["status"]["conditions"][0]["reason"], json!("Unschedulable"));
        let already = pod(json!({"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": "0/1 nodes are available: 1 Insufficient cpu.", "lastTransitionTime": "2025-01-01T00:00:00Z"}]}));
        assert!(status_patch(&already, &u, now).is_none());
        let changed = PodScheduledFalse { message: "0/2 nodes are available: 2 Insufficient cpu.".into(), ..u.clone() };
        let p = status_patch(&already, &changed, now).unwrap();
        assert_eq!(p["status"]["conditions"][0]["lastTransitionTime"], json!("2025-01-01T00:00:00Z"));
        let nominated = PodScheduledFalse { nominated_node_name: Some("n1".into()), ..u };
        assert_eq!(status_patch(&already, &nominated, now).unwrap()["status"]["nominatedNodeName"], json!("n1"));
    }
}
