//! Evicting the chosen candidate's victims (upstream `prepareCandidate` /
//! `PreemptPod`): for each victim, the `DisruptionTarget` condition
//! (reason `PreemptionByScheduler`) through `pods/status`, then a delete,
//! then a `Preempted` event; finally lower-priority pods nominated to the
//! node lose their nomination so they are scheduled elsewhere.

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use serde_json::json;

use super::candidates::{priority, Candidate};
use crate::events;
use crate::framework::PodInfo;

const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

fn scheduler_name(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.scheduler_name.as_deref())
        .filter(|s| !s.is_empty())
        .unwrap_or(DEFAULT_SCHEDULER_NAME)
}

/// The DisruptionTarget condition preemption sets (upstream wording).
pub(super) fn disruption_condition(preemptor: &Pod) -> serde_json::Value {
    json!({
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": format!("{}: preempting to accommodate a higher priority pod", scheduler_name(preemptor)),
    })
}

/// Whether `victim` already has the condition with the same status,
/// reason and message (upstream `UpdatePodCondition` then writes nothing).
fn has_condition(victim: &Pod, cond: &serde_json::Value) -> bool {
    victim.status.as_ref().and_then(|s| s.conditions.as_ref()).is_some_and(|cs| {
        cs.iter().any(|c| {
            c.type_ == "DisruptionTarget"
                && c.status == cond["status"]
                && c.reason.as_deref() == cond["reason"].as_str()
                && c.message.as_deref() == cond["message"].as_str()
        })
    })
}

/// Evicts one victim. Err: an API error other than the victim being gone.
async fn preempt_pod(client: &kube::Client, node: &str, preemptor: &Pod, victim: &Pod) -> Result<(), String> {
    let ns = victim.metadata.namespace.as_deref().unwrap_or("default");
    let name = victim.metadata.name.as_deref().unwrap_or("");
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let mut cond = disruption_condition(preemptor);
    if !has_condition(victim, &cond) {
        cond["lastTransitionTime"] = json!(jiff::Timestamp::now().to_string());
        let patch = json!({"status": {"conditions": [cond]}});
        match pods.patch_status(name, &PatchParams::default(), &Patch::Strategic(patch)).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => return Ok(()),
            Err(e) => return Err(format!("patching the status of pod {ns}/{name}: {e}")),
        }
    }
    match pods.delete(name, &DeleteParams::default()).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 404 => {
            tracing::debug!(component = "kube-scheduler", pod = %format!("{ns}/{name}"), "victim pod is already deleted");
            return Ok(());
        }
        Err(e) => return Err(format!("deleting pod {ns}/{name}: {e}")),
    }
    record_preempted_event(client, node, preemptor, victim).await;
    Ok(())
}

/// `Preempted` (action `Preempting`) on the victim, related to the
/// preemptor: "Preempted by pod <uid> on node <node>". Best effort.
async fn record_preempted_event(client: &kube::Client, node: &str, preemptor: &Pod, victim: &Pod) {
    let note = format!("Preempted by pod {} on node {node}", preemptor.metadata.uid.as_deref().unwrap_or(""));
    let host = events::hostname();
    let event = events::new_event(
        scheduler_name(preemptor),
        &host,
        victim,
        Some(preemptor),
        "Normal",
        "Preempted",
        "Preempting",
        note,
    );
    events::post(client.clone(), event).await;
}

/// Clears `status.nominatedNodeName` of the pods nominated to `node` with
/// a lower priority than `preemptor` (they may no longer fit there).
/// rkube's framework does not hand the queue's nominator to PostFilter, so
/// the pods are listed from the API by `status.nominatedNodeName`. Errors
/// are logged only (upstream: not critical).
async fn clear_lower_priority_nominations(client: &kube::Client, node: &str, preemptor: &Pod) {
    let all: Api<Pod> = Api::all(client.clone());
    let lp = ListParams::default().fields(&format!("status.nominatedNodeName={node}"));
    let list = match all.list(&lp).await {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!(component = "kube-scheduler", error = %e, "listing pods nominated to {node}");
            return;
        }
    };
    let prio = priority(preemptor);
    for p in list.items.iter().filter(|p| priority(p) < prio && p.metadata.uid != preemptor.metadata.uid) {
        let ns = p.metadata.namespace.as_deref().unwrap_or("default");
        let name = p.metadata.name.as_deref().unwrap_or("");
        let api: Api<Pod> = Api::namespaced(client.clone(), ns);
        let patch = json!({"status": {"nominatedNodeName": null}});
        if let Err(e) = api.patch_status(name, &PatchParams::default(), &Patch::Merge(patch)).await {
            tracing::warn!(component = "kube-scheduler", error = %e, pod = %format!("{ns}/{name}"), "clearing nominatedNodeName");
        }
    }
}

/// Evicts every victim of `c` (concurrently, as upstream), then clears
/// lower-priority nominations on the node. Err: the first eviction error.
pub(super) async fn prepare_candidate(client: &kube::Client, c: &Candidate, preemptor: &PodInfo) -> Result<(), String> {
    let results =
        futures::future::join_all(c.victims.iter().map(|v| preempt_pod(client, &c.name, &preemptor.pod, &v.pod))).await;
    results.into_iter().collect::<Result<Vec<()>, String>>()?;
    clear_lower_priority_nominations(client, &c.name, &preemptor.pod).await;
    Ok(())
}
