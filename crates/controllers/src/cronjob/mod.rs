//! The CronJob controller (upstream `pkg/controller/cronjob/cronjob_controllerv2.go`):
//! creates a Job from `spec.jobTemplate` at each activation of the schedule
//! ([`schedule`]), honouring `concurrencyPolicy`, `startingDeadlineSeconds`,
//! `suspend` and `timeZone`, keeps `status.active`, `lastScheduleTime` and
//! `lastSuccessfulTime`, and deletes finished Jobs beyond the history limits
//! ([`sync`]). The clock is injectable ([`clock`]) so tests drive schedules
//! deterministically.

pub mod clock;
pub mod schedule;
pub mod sync;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::batch::v1::{CronJob, Job};
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;

use crate::runtime::{self, is_conflict, Ctx, Error, HasBackoff, Stop};
use clock::{Clock, SystemClock};

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "cronjob-controller";
/// The older name `--controllers` also accepts.
pub const ALIAS: &str = "cronjob";
/// The kube-system ServiceAccount it runs as.
pub const SERVICE_ACCOUNT: &str = "cronjob-controller";

/// The controller's state: its context and clock.
pub struct CronJobController {
    /// The shared controller context.
    pub ctx: Arc<Ctx>,
    /// Where "now" comes from.
    pub clock: Arc<dyn Clock>,
}

impl HasBackoff for CronJobController {
    fn backoff(&self) -> &runtime::Backoff {
        &self.ctx.backoff
    }
    fn name(&self) -> &'static str {
        NAME
    }
}

/// Runs until `stop`: CronJobs are the keys; changes to the Jobs a CronJob
/// controls requeue it, and each sync requeues at the next activation.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    let client = ctx.reader.clone();
    let cc = Arc::new(CronJobController { ctx, clock: Arc::new(SystemClock) });
    let controller = Controller::new(Api::<CronJob>::all(client.clone()), watcher::Config::default())
        .owns(Api::<Job>::all(client), watcher::Config::default())
        .graceful_shutdown_on(runtime::stopped(stop));
    runtime::drive(NAME, controller.run(reconcile, runtime::error_policy, cc)).await;
}

async fn reconcile(cj: Arc<CronJob>, cc: Arc<CronJobController>) -> Result<Action, Error> {
    let key = runtime::key_of(cj.as_ref());
    let ns = cj.metadata.namespace.clone().unwrap_or_default();
    let uid = cj.metadata.uid.clone().unwrap_or_default();
    let jobs: Vec<Job> = Api::<Job>::namespaced(cc.ctx.reader.clone(), &ns)
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|j| j.metadata.owner_references.iter().flatten().any(|r| r.controller == Some(true) && r.uid == uid))
        .collect();
    let mut cj = (*cj).clone();
    let outcome = sync::sync_cronjob(&cc, &mut cj, &jobs).await?;
    let mut update = outcome.update_status;
    if sync::cleanup_finished_jobs(&cc, &mut cj, &jobs).await {
        update = true;
    }
    if update {
        let name = cj.metadata.name.clone().unwrap_or_default();
        match Api::<CronJob>::namespaced(cc.ctx.client.clone(), &ns)
            .replace_status(&name, &PostParams::default(), &cj)
            .await
        {
            Ok(_) => {}
            // A newer CronJob is coming through the watch; it will be synced.
            Err(e) if is_conflict(&e) => return cc.ctx.done(&key, Action::requeue(Duration::from_secs(1))),
            Err(e) => return Err(e.into()),
        }
    }
    let action = match outcome.requeue {
        Some(d) => Action::requeue(d),
        None => Action::await_change(),
    };
    cc.ctx.done(&key, action)
}
