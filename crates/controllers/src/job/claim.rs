//! Which pods a Job controls (upstream `getPodsForJob` with
//! `ControllerRefManager.ClaimPods` and the Job's tracking finalizer):
//! every pod of the Job's namespace is looked at, so that pods still
//! pointing at the Job but no longer matching its selector are found too.
//! The decision is the shared one of [`crate::replicaset::adoption`]:
//! - owned and matching: kept;
//! - owned but no longer matching: released (the ownerReference is removed,
//!   unless the Job is being deleted) and, as upstream's orphan-pod worker
//!   does, its `batch.kubernetes.io/job-tracking` finalizer is removed;
//! - an orphan matching the selector, not being deleted, while the Job is
//!   not being deleted: adopted — one strategic-merge patch adds the
//!   controller ownerReference and the tracking finalizer. Before the first
//!   adoption the Job is read again from the API (upstream
//!   `RecheckDeletionTimestamp`): a Job being deleted, or replaced by
//!   another with the same name (other uid), adopts nothing.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::runtime::reflector::{ObjectRef, Store};
use rkube_apimachinery::selector::labels::LabelSelector;
use serde_json::json;

use super::manage::{self, TRACKING_FINALIZER};
use super::JobController;
use crate::replicaset::adoption::{self, Claim, Owner};
use crate::runtime::{api_code, Error};

/// The Job's selector; `Err` says why it cannot be used.
pub fn selector_of(job: &Job) -> Result<LabelSelector, String> {
    let sel = job.spec.as_ref().and_then(|s| s.selector.as_ref());
    let v = serde_json::to_value(sel).map_err(|e| e.to_string())?;
    LabelSelector::from_label_selector_json(&v)
}

/// The Jobs to sync after `pod` changed (upstream's pod event handlers):
/// its controller when that is a Job; for an orphan, every Job of its
/// namespace whose (non-empty) selector matches its labels.
pub fn jobs_for_pod(jobs: &Store<Job>, pod: &Pod) -> Vec<ObjectRef<Job>> {
    let ns = pod.metadata.namespace.clone().unwrap_or_default();
    if let Some(c) = adoption::controller_of(pod.metadata.owner_references.as_ref()) {
        if c.kind == "Job" && c.api_version == "batch/v1" {
            return vec![ObjectRef::new(&c.name).within(&ns)];
        }
        return Vec::new();
    }
    if pod.metadata.deletion_timestamp.is_some() {
        return Vec::new();
    }
    let empty = Default::default();
    let labels = pod.metadata.labels.as_ref().unwrap_or(&empty);
    jobs.state()
        .iter()
        .filter(|j| j.metadata.namespace.as_deref() == Some(ns.as_str()))
        .filter(|j| selector_of(j).is_ok_and(|s| !s.is_empty() && s.matches(labels)))
        .map(|j| ObjectRef::new(j.metadata.name.as_deref().unwrap_or("")).within(&ns))
        .collect()
}

/// Claims the namespace's pods for `job` (see the module docs); returns the
/// pods it controls afterwards (adopted ones with the reference and
/// finalizer already added to the returned copy).
pub async fn claim_pods(jc: &JobController, job: &Job) -> Result<Vec<Pod>, Error> {
    let ns = job.metadata.namespace.as_deref().unwrap_or("");
    let Ok(selector) = selector_of(job) else {
        // The API server validates the selector; an unusable one claims nothing.
        return Ok(Vec::new());
    };
    let all = Api::<Pod>::namespaced(jc.ctx.reader.clone(), ns).list(&ListParams::default()).await?;
    let oref = manage::owner_reference(job);
    let owner = Owner {
        uid: &oref.uid,
        namespace: ns,
        deleting: job.metadata.deletion_timestamp.is_some(),
        selector: &selector,
    };
    let writer = Api::<Pod>::namespaced(jc.ctx.client.clone(), ns);
    let key = crate::runtime::key_of(job);
    let mut owned = Vec::new();
    let mut rechecked = false;
    let mut errors = Vec::new();
    for p in all.items {
        let name = p.metadata.name.clone().unwrap_or_default();
        let pod_uid = p.metadata.uid.clone().unwrap_or_default();
        match adoption::decide(&owner, &p) {
            Claim::Keep => owned.push(p),
            Claim::Ignore => {}
            Claim::Release => {
                tracing::info!(component = super::NAME, job = %key, pod = %name, "releasing pod that no longer matches the selector");
                let released = adoption::release(&writer, &name, &pod_uid, &oref.uid).await;
                let res = match released {
                    Ok(()) if manage::has_tracking_finalizer(&p) => {
                        super::status::remove_finalizers(jc, ns, &[&p]).await.map(|_| ())
                    }
                    other => other,
                };
                if let Err(e) = res {
                    errors.push(e.to_string());
                }
            }
            Claim::Adopt => {
                if !rechecked {
                    recheck_deletion(jc, job).await?;
                    rechecked = true;
                }
                tracing::info!(component = super::NAME, job = %key, pod = %name, "adopting orphan pod");
                match adopt(&writer, &name, &pod_uid, &oref).await {
                    Ok(true) => {
                        let mut adopted = p;
                        adopted.metadata.owner_references.get_or_insert_with(Vec::new).push(oref.clone());
                        let fin = adopted.metadata.finalizers.get_or_insert_with(Vec::new);
                        if !fin.iter().any(|f| f == TRACKING_FINALIZER) {
                            fin.push(TRACKING_FINALIZER.into());
                        }
                        owned.push(adopted);
                    }
                    Ok(false) => {}
                    Err(e) => errors.push(e.to_string()),
                }
            }
        }
    }
    if !errors.is_empty() {
        return Err(Error::Other(format!("claiming pods of Job {key}: {}", errors.join(", "))));
    }
    Ok(owned)
}

/// Upstream `NewPodControllerRefManager(..., JobTrackingFinalizer)`'s adopt
/// patch: the controller reference and the tracking finalizer, guarded by
/// the pod's uid. `Ok(false)`: the pod is gone.
async fn adopt(pods: &Api<Pod>, name: &str, pod_uid: &str, owner: &OwnerReference) -> Result<bool, Error> {
    let patch = json!({"metadata": {"ownerReferences": [owner], "finalizers": [TRACKING_FINALIZER], "uid": pod_uid}});
    match pods.patch(name, &PatchParams::default(), &Patch::Strategic(patch)).await {
        Ok(_) => Ok(true),
        Err(e) if api_code(&e) == Some(404) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Upstream `RecheckDeletionTimestamp` with the Job's fresh read: the live
/// Job must be the same object (uid) and not being deleted.
async fn recheck_deletion(jc: &JobController, job: &Job) -> Result<(), Error> {
    let ns = job.metadata.namespace.as_deref().unwrap_or("");
    let name = job.metadata.name.as_deref().unwrap_or("");
    let fresh = Api::<Job>::namespaced(jc.ctx.client.clone(), ns).get(name).await?;
    if fresh.metadata.uid != job.metadata.uid {
        return Err(Error::Other(format!(
            "original Job {ns}/{name} is gone: got uid {}, wanted {}",
            fresh.metadata.uid.as_deref().unwrap_or(""),
            job.metadata.uid.as_deref().unwrap_or("")
        )));
    }
    if fresh.metadata.deletion_timestamp.is_some() {
        return Err(Error::Other(format!("Job {ns}/{name} has just been deleted: not adopting pods")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::reflector;
    use kube::runtime::watcher::Event;

    fn job(name: &str, labels: serde_json::Value) -> Job {
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": "ns", "uid": name},
            "spec": {"selector": {"matchLabels": labels}, "template": {}}}))
        .unwrap()
    }

    fn pod(labels: serde_json::Value, owner: Option<(&str, &str)>) -> Pod {
        let mut v = json!({"metadata": {"name": "p", "namespace": "ns", "labels": labels}});
        if let Some((kind, name)) = owner {
            v["metadata"]["ownerReferences"] = json!([{"apiVersion": if kind == "Job" {"batch/v1"} else {"apps/v1"},
                "kind": kind, "name": name, "uid": name, "controller": true}]);
        }
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn pod_events_reach_the_owner_or_the_matching_jobs() {
        // Upstream addPod/updatePod: a controlled pod syncs its controller
        // (if a Job); an orphan syncs every Job whose selector matches it.
        let (store, mut writer) = reflector::store::<Job>();
        writer.apply_watcher_event(&Event::Apply(job("a", json!({"app": "x"}))));
        writer.apply_watcher_event(&Event::Apply(job("b", json!({"app": "y"}))));
        let names = |refs: Vec<ObjectRef<Job>>| refs.into_iter().map(|r| r.name).collect::<Vec<_>>();
        assert_eq!(names(jobs_for_pod(&store, &pod(json!({"app": "x"}), None))), ["a"]);
        assert_eq!(names(jobs_for_pod(&store, &pod(json!({"app": "x"}), Some(("Job", "b"))))), ["b"]);
        assert!(jobs_for_pod(&store, &pod(json!({"app": "x"}), Some(("ReplicaSet", "r")))).is_empty());
        assert!(jobs_for_pod(&store, &pod(json!({"app": "z"}), None)).is_empty());
    }
}
