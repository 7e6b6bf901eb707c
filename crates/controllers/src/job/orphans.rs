//! Upstream's orphan-pod worker (`syncOrphanPod`): a pod that still carries
//! the `batch.kubernetes.io/job-tracking` finalizer while no running Job
//! counts it loses the finalizer, so that its deletion can complete. That is
//! a pod with no controller, or whose controller Job is gone (deleted with
//! `kubectl delete job`, its pods then deleted by the garbage collector),
//! replaced by another Job of the same name, finished, or being deleted.
//! Pods controlled by something other than a batch/v1 Job, and pods of a Job
//! managed by another controller (`spec.managedBy`), are left alone.
//!
//! Hints come from the pod watch (its Job store may lag or be empty at
//! start) and, as upstream's Job delete handler, from a deleted Job's own
//! pods; the decision is taken on a fresh read of the pod and of its Job.

use std::collections::BTreeSet;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use tokio::sync::mpsc;

use super::manage::has_tracking_finalizer;
use super::JobController;
use crate::replicaset::adoption;

/// `(namespace, name)` of a pod to look at.
pub type PodKey = (String, String);

/// Whether a pod seen on the watch may be an orphan holding the finalizer
/// (judged against the controller's Job store, so only a hint).
pub fn maybe_orphan(jobs: &Store<Job>, pod: &Pod) -> bool {
    if !has_tracking_finalizer(pod) {
        return false;
    }
    let Some(c) = adoption::controller_of(pod.metadata.owner_references.as_ref()) else {
        return true;
    };
    if c.kind != "Job" || c.api_version != "batch/v1" {
        return false;
    }
    let ns = pod.metadata.namespace.clone().unwrap_or_default();
    match jobs.get(&ObjectRef::new(&c.name).within(&ns)) {
        None => true,
        Some(job) => job.metadata.uid.as_deref() != Some(c.uid.as_str()) || !counts_pods(&job),
    }
}

/// Whether `job` still counts its pods: not finished, not being deleted.
fn counts_pods(job: &Job) -> bool {
    !super::is_finished(job) && job.metadata.deletion_timestamp.is_none()
}

/// Upstream's decision on a fresh read: the finalizer goes unless the pod's
/// controller is a batch/v1 Job that exists with the referenced uid and
/// either still counts its pods or is managed by another controller.
/// `job` is the controller Job as read from the API (None: not found).
pub fn should_release(pod: &Pod, job: Option<&Job>) -> bool {
    if !has_tracking_finalizer(pod) {
        return false;
    }
    let Some(c) = adoption::controller_of(pod.metadata.owner_references.as_ref()) else {
        return true;
    };
    if c.kind != "Job" || c.api_version != "batch/v1" {
        return false;
    }
    match job.filter(|j| j.metadata.uid.as_deref() == Some(c.uid.as_str())) {
        None => true,
        Some(j) => {
            let external =
                j.spec.as_ref().and_then(|s| s.managed_by.as_deref()).is_some_and(|m| m != super::MANAGED_BY);
            !external && !counts_pods(j)
        }
    }
}

/// Works through the hinted pods until the channel closes: a fresh read of
/// each, then the finalizer removed when [`should_release`] says so.
/// Failures are logged and the pod is looked at again at its next event.
pub async fn run(jc: Arc<JobController>, mut hints: mpsc::UnboundedReceiver<PodKey>) {
    while let Some(first) = hints.recv().await {
        // Coalesce a burst (a deleted Job's pods arrive together).
        let mut batch = BTreeSet::from([first]);
        while let Ok(k) = hints.try_recv() {
            batch.insert(k);
        }
        for (ns, name) in batch {
            if let Err(e) = sync_one(&jc, &ns, &name).await {
                tracing::warn!(component = super::NAME, pod = %format!("{ns}/{name}"), "cannot release the job-tracking finalizer of an orphan pod: {e}; retried at the pod's next change");
            }
        }
    }
}

/// Hints the pods of every Job deleted from now on (upstream's
/// `deleteJob` → `cleanupPodFinalizers`): their pod events may all have
/// come while the Job was still in the store. Runs until the watch ends.
pub async fn watch_deleted_jobs(jc: Arc<JobController>, hints: mpsc::UnboundedSender<PodKey>) {
    let mut events = watcher(Api::<Job>::all(jc.ctx.reader.clone()), watcher::Config::default()).boxed();
    while let Some(event) = events.next().await {
        let Ok(watcher::Event::Delete(job)) = event else { continue };
        let ns = job.metadata.namespace.clone().unwrap_or_default();
        let Some(selector) = job.spec.as_ref().and_then(|s| s.selector.as_ref()) else { continue };
        let lp = ListParams::default().labels(&super::manage::selector_string(selector));
        match Api::<Pod>::namespaced(jc.ctx.reader.clone(), &ns).list(&lp).await {
            Ok(pods) => {
                for p in pods.items.iter().filter(|p| has_tracking_finalizer(p) && super::manage::is_owned_by(p, &job))
                {
                    let _ = hints.send((ns.clone(), p.metadata.name.clone().unwrap_or_default()));
                }
            }
            Err(e) => {
                tracing::warn!(component = super::NAME, job = %format!("{ns}/{}", job.metadata.name.as_deref().unwrap_or("")), "cannot list the pods of a deleted Job to release their job-tracking finalizer: {e}")
            }
        }
    }
}

async fn sync_one(jc: &JobController, ns: &str, name: &str) -> Result<(), crate::runtime::Error> {
    // Read as upstream's roles allow: the manager lists pods, the
    // job-controller gets Jobs.
    let lp = ListParams::default().fields(&format!("metadata.name={name}"));
    let Some(pod) = Api::<Pod>::namespaced(jc.ctx.reader.clone(), ns).list(&lp).await?.items.pop() else {
        return Ok(());
    };
    let controller = adoption::controller_of(pod.metadata.owner_references.as_ref());
    let job = match controller {
        Some(c) if c.kind == "Job" && c.api_version == "batch/v1" => {
            Api::<Job>::namespaced(jc.ctx.client.clone(), ns).get_opt(&c.name).await?
        }
        _ => None,
    };
    if should_release(&pod, job.as_ref()) {
        super::status::remove_finalizers(jc, ns, &[&pod]).await?;
        tracing::info!(component = super::NAME, pod = %format!("{ns}/{name}"), "removed the job-tracking finalizer of a pod no running Job counts");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(uid: &str, extra: serde_json::Value) -> Job {
        let mut v = json!({"metadata": {"name": "j", "namespace": "ns", "uid": uid}, "spec": {"template": {}}});
        if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            for (k, val) in e {
                o.insert(k.clone(), val.clone());
            }
        }
        serde_json::from_value(v).unwrap()
    }

    fn pod(owner: Option<(&str, &str, &str)>, finalizer: bool) -> Pod {
        let refs: Vec<_> = owner
            .map(|(kind, api, uid)| json!({"apiVersion": api, "kind": kind, "name": "j", "uid": uid, "controller": true}))
            .into_iter()
            .collect();
        let fins: Vec<&str> = if finalizer { vec![super::super::manage::TRACKING_FINALIZER] } else { vec![] };
        serde_json::from_value(
            json!({"metadata": {"name": "p", "namespace": "ns", "ownerReferences": refs, "finalizers": fins}}),
        )
        .unwrap()
    }

    #[test]
    fn the_finalizer_stays_while_a_running_job_counts_the_pod() {
        let running = job("u1", json!({}));
        assert!(!should_release(&pod(Some(("Job", "batch/v1", "u1")), true), Some(&running)));
        // Nothing to do without the finalizer.
        assert!(!should_release(&pod(Some(("Job", "batch/v1", "u1")), false), None));
        // Another kind of controller: not ours.
        assert!(!should_release(&pod(Some(("ReplicaSet", "apps/v1", "u1")), true), None));
    }

    #[test]
    fn the_finalizer_goes_when_no_running_job_counts_the_pod() {
        let owned = pod(Some(("Job", "batch/v1", "u1")), true);
        assert!(should_release(&pod(None, true), None), "an orphan");
        assert!(should_release(&owned, None), "its Job is gone");
        assert!(should_release(&owned, Some(&job("u2", json!({})))), "a new Job with the same name");
        let finished = job("u1", json!({"status": {"conditions": [{"type": "Complete", "status": "True"}]}}));
        assert!(should_release(&owned, Some(&finished)), "its Job finished");
        let deleting = job(
            "u1",
            json!({"metadata": {"name": "j", "namespace": "ns", "uid": "u1", "deletionTimestamp": "2026-12-02T10:00:00Z"}}),
        );
        assert!(should_release(&owned, Some(&deleting)), "its Job is being deleted");
    }

    #[test]
    fn pods_of_a_job_managed_elsewhere_keep_the_finalizer() {
        let finished_elsewhere = job(
            "u1",
            json!({"spec": {"template": {}, "managedBy": "example.com/queue"},
                   "status": {"conditions": [{"type": "Failed", "status": "True"}]}}),
        );
        assert!(!should_release(&pod(Some(("Job", "batch/v1", "u1")), true), Some(&finished_elsewhere)));
    }
}
