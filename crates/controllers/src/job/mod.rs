//! The Job controller (upstream `pkg/controller/job/job_controller.go`):
//! runs a Job's pods until enough succeed (NonIndexed or Indexed
//! completion), replaces failed ones after an exponential back-off, fails
//! the Job past its backoffLimit, activeDeadlineSeconds or a FailJob rule
//! of its pod failure policy, honours suspend, and counts every finished pod
//! exactly once through the `batch.kubernetes.io/job-tracking` finalizer and
//! `status.uncountedTerminatedPods`.
//!
//! Terminal conditions come in two steps, as upstream 1.33: first the interim
//! `FailureTarget` or `SuccessCriteriaMet`, then — once no pod is left
//! terminating and every result is counted — `Failed` or `Complete` with the
//! same reason and message.
//!
//! Pods are read with a live LIST of the Job's namespace on each sync,
//! then claimed, so no expectations are needed: the LIST already sees the
//! pods this controller created or deleted.
//! With `backoffLimitPerIndex` (Indexed Jobs) each index has its own
//! failure budget and back-off (see [`indexed`]): an index past its limit,
//! or hit by a FailIndex rule of the pod failure policy, is listed in
//! `status.failedIndexes` and not retried; the Job fails with
//! `MaxFailedIndexesExceeded` once more than `maxFailedIndexes` indexes
//! failed (its remaining pods are deleted), or with `FailedIndexes` once
//! every index succeeded or failed and at least one failed. The Job-wide
//! `backoffLimit` then only applies when set explicitly (upstream's API
//! server defaults it to MaxInt32 when backoffLimitPerIndex is set).
//!
//! Pods are claimed as upstream's `ControllerRefManager` does (see
//! [`claim`]): orphans matching the selector are adopted (with the
//! tracking finalizer), owned pods that no longer match are released.
//! Pods that keep the tracking finalizer while no running Job counts them
//! (their Job deleted, replaced or finished) lose it in [`orphans`].
//! Not implemented: `managedBy` other than this controller (such Jobs are
//! left alone, as upstream).

pub mod claim;
pub mod failure;
pub mod indexed;
pub mod manage;
pub mod orphans;
mod status;
pub mod success;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;

use crate::cronjob::clock::{Clock, SystemClock};
use crate::runtime::{self, Ctx, Error, HasBackoff, Stop};

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "job-controller";
/// The older name `--controllers` also accepts.
pub const ALIAS: &str = "job";
/// The kube-system ServiceAccount it runs as.
pub const SERVICE_ACCOUNT: &str = "job-controller";
/// The `spec.managedBy` value meaning this controller.
pub const MANAGED_BY: &str = "kubernetes.io/job-controller";

/// The controller's state: its context, the pod-failure back-off of every
/// Job (in memory, as upstream's `podBackoffStore`) and its clock.
pub struct JobController {
    /// The shared controller context.
    pub ctx: Arc<Ctx>,
    /// Back-off records by `namespace/name`.
    pub backoffs: Mutex<HashMap<String, failure::BackoffRecord>>,
    /// Where "now" comes from.
    pub clock: Arc<dyn Clock>,
}

impl HasBackoff for JobController {
    fn backoff(&self) -> &runtime::Backoff {
        &self.ctx.backoff
    }
    fn name(&self) -> &'static str {
        NAME
    }
}

/// Runs until `stop`: Jobs are the keys; a change to a pod requeues the
/// Job controlling it or, for an orphan, every Job whose selector matches
/// it (see [`claim::jobs_for_pod`]).
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    let client = ctx.reader.clone();
    let jc = Arc::new(JobController { ctx, backoffs: Mutex::default(), clock: Arc::new(SystemClock) });
    let controller = Controller::new(Api::<Job>::all(client.clone()), watcher::Config::default());
    let jobs = controller.store();
    let (hints, hinted) = tokio::sync::mpsc::unbounded_channel();
    let orphans = tokio::spawn(orphans::run(jc.clone(), hinted));
    let deleted_jobs = tokio::spawn(orphans::watch_deleted_jobs(jc.clone(), hints.clone()));
    let controller = controller
        .watches(Api::<Pod>::all(client), watcher::Config::default(), move |pod: Pod| {
            if orphans::maybe_orphan(&jobs, &pod) {
                let key =
                    (pod.metadata.namespace.clone().unwrap_or_default(), pod.metadata.name.clone().unwrap_or_default());
                let _ = hints.send(key);
            }
            claim::jobs_for_pod(&jobs, &pod)
        })
        .graceful_shutdown_on(runtime::stopped(stop));
    runtime::drive(NAME, controller.run(reconcile, runtime::error_policy, jc)).await;
    orphans.abort();
    deleted_jobs.abort();
}

/// Whether the Job has a True `Complete` or `Failed` condition.
pub fn is_finished(job: &Job) -> bool {
    status::find_condition(job, "Complete").is_some_and(|c| c.status == "True")
        || status::find_condition(job, "Failed").is_some_and(|c| c.status == "True")
}

async fn reconcile(job: Arc<Job>, jc: Arc<JobController>) -> Result<Action, Error> {
    let key = runtime::key_of(job.as_ref());
    let ns = job.metadata.namespace.clone().unwrap_or_default();
    let managed_by = job.spec.as_ref().and_then(|s| s.managed_by.as_deref());
    if managed_by.is_some_and(|m| m != MANAGED_BY) {
        return jc.ctx.done(&key, Action::await_change());
    }
    if is_finished(&job) {
        let pods = list_pods(&jc, &job, &ns).await?;
        // Finished: nothing to count any more; let leftover pods go.
        jc.backoffs.lock().unwrap_or_else(|e| e.into_inner()).remove(&key);
        let with_finalizer: Vec<&Pod> = pods.iter().filter(|p| manage::has_tracking_finalizer(p)).collect();
        status::remove_finalizers(&jc, &ns, &with_finalizer).await?;
        return jc.ctx.done(&key, Action::await_change());
    }
    let pods = claim::claim_pods(&jc, &job).await?;
    let requeue = status::sync(&jc, (*job).clone(), pods).await?;
    let action = match requeue {
        Some(d) => Action::requeue(d.max(Duration::from_millis(100))),
        None => Action::await_change(),
    };
    jc.ctx.done(&key, action)
}

/// The pods a finished Job still controls, by its selector (no adoption:
/// upstream does not claim pods for finished Jobs).
async fn list_pods(jc: &JobController, job: &Job, ns: &str) -> Result<Vec<Pod>, Error> {
    let Some(selector) = job.spec.as_ref().and_then(|s| s.selector.as_ref()) else {
        return Ok(Vec::new());
    };
    let lp = ListParams::default().labels(&manage::selector_string(selector));
    let pods = Api::<Pod>::namespaced(jc.ctx.reader.clone(), ns).list(&lp).await?;
    Ok(pods.items.into_iter().filter(|p| manage::is_owned_by(p, job)).collect())
}
