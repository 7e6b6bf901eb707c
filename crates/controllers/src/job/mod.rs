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
//! Pods are read with a live LIST on each sync (by the Job's selector,
//! filtered to the pods it controls), so no expectations are needed: the
//! LIST already sees the pods this controller created or deleted.
//! Not implemented: backoffLimitPerIndex/maxFailedIndexes, adoption of
//! orphan pods that match the selector, and `managedBy` other than this
//! controller (such Jobs are left alone, as upstream).

pub mod failure;
pub mod indexed;
pub mod manage;
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

/// Runs until `stop`: Jobs are the keys; changes to the pods a Job controls
/// requeue it.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    let client = ctx.reader.clone();
    let jc = Arc::new(JobController { ctx, backoffs: Mutex::default(), clock: Arc::new(SystemClock) });
    let controller = Controller::new(Api::<Job>::all(client.clone()), watcher::Config::default())
        .owns(Api::<Pod>::all(client), watcher::Config::default())
        .graceful_shutdown_on(runtime::stopped(stop));
    runtime::drive(NAME, controller.run(reconcile, runtime::error_policy, jc)).await;
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
    let pods = list_pods(&jc, &job, &ns).await?;
    if is_finished(&job) {
        // Finished: nothing to count any more; let leftover pods go.
        jc.backoffs.lock().unwrap_or_else(|e| e.into_inner()).remove(&key);
        let with_finalizer: Vec<&Pod> = pods.iter().filter(|p| manage::has_tracking_finalizer(p)).collect();
        status::remove_finalizers(&jc, &ns, &with_finalizer).await?;
        return jc.ctx.done(&key, Action::await_change());
    }
    let requeue = status::sync(&jc, (*job).clone(), pods).await?;
    let action = match requeue {
        Some(d) => Action::requeue(d.max(Duration::from_millis(100))),
        None => Action::await_change(),
    };
    jc.ctx.done(&key, action)
}

/// The pods the Job controls, by its selector.
async fn list_pods(jc: &JobController, job: &Job, ns: &str) -> Result<Vec<Pod>, Error> {
    let Some(selector) = job.spec.as_ref().and_then(|s| s.selector.as_ref()) else {
        return Ok(Vec::new());
    };
    let lp = ListParams::default().labels(&manage::selector_string(selector));
    let pods = Api::<Pod>::namespaced(jc.ctx.reader.clone(), ns).list(&lp).await?;
    Ok(pods.items.into_iter().filter(|p| manage::is_owned_by(p, job)).collect())
}
