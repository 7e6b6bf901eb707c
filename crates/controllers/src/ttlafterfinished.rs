//! The TTL-after-finished controller (upstream
//! `pkg/controller/ttlafterfinished`): a finished Job (condition `Complete`
//! or `Failed` True) with `spec.ttlSecondsAfterFinished` is deleted once
//! that many seconds passed since it finished (the condition's
//! lastTransitionTime), with foreground cascading deletion so its pods go
//! first, and a UID precondition so a recreated Job of the same name is spared.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, DeleteParams, Preconditions};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;

use crate::runtime::{self, is_not_found, Ctx, Error, Stop};

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "ttl-after-finished-controller";
/// The older name `--controllers` also accepts.
pub const ALIAS: &str = "ttl-after-finished";
/// The kube-system ServiceAccount it runs as.
pub const SERVICE_ACCOUNT: &str = "ttl-after-finished-controller";

/// Runs until `stop`.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    let client = ctx.reader.clone();
    let controller = Controller::new(Api::<Job>::all(client), watcher::Config::default())
        .graceful_shutdown_on(runtime::stopped(stop));
    runtime::drive(NAME, controller.run(reconcile, runtime::error_policy, ctx)).await;
}

/// When the Job finished: the lastTransitionTime of its True `Complete`
/// or `Failed` condition (upstream `jobFinishTime`).
pub fn finish_time(job: &Job) -> Option<jiff::Timestamp> {
    let conds = job.status.as_ref()?.conditions.as_ref()?;
    conds
        .iter()
        .find(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
        .and_then(|c| c.last_transition_time.as_ref().map(|t| t.0))
}

/// How long until the Job expires at `now` (zero: expired), or `None` when
/// it has no TTL, is not finished or is already being deleted (upstream
/// `needsCleanup` + `timeLeft`).
pub fn time_left(job: &Job, now: jiff::Timestamp) -> Option<Duration> {
    if job.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let ttl = job.spec.as_ref()?.ttl_seconds_after_finished?;
    let finished = finish_time(job)?;
    let expire_at = finished.checked_add(jiff::SignedDuration::from_secs(ttl.into())).ok()?;
    Some(Duration::try_from(expire_at.duration_since(now)).unwrap_or(Duration::ZERO))
}

async fn reconcile(job: Arc<Job>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let key = runtime::key_of(job.as_ref());
    let Some(left) = time_left(&job, jiff::Timestamp::now()) else {
        return ctx.done(&key, Action::await_change());
    };
    if left > Duration::ZERO {
        return ctx.done(&key, Action::requeue(left));
    }
    let ns = job.metadata.namespace.clone().unwrap_or_default();
    let name = job.metadata.name.clone().unwrap_or_default();
    // Re-read: the TTL may have been changed after the cache saw the Job.
    let fresh = match Api::<Job>::namespaced(ctx.client.clone(), &ns).get(&name).await {
        Ok(j) => j,
        Err(e) if is_not_found(&e) => return ctx.done(&key, Action::await_change()),
        Err(e) => return Err(e.into()),
    };
    match time_left(&fresh, jiff::Timestamp::now()) {
        None => return ctx.done(&key, Action::await_change()),
        Some(left) if left > Duration::ZERO => return ctx.done(&key, Action::requeue(left)),
        Some(_) => {}
    }
    let dp = DeleteParams {
        propagation_policy: Some(kube::api::PropagationPolicy::Foreground),
        preconditions: Some(Preconditions { uid: fresh.metadata.uid.clone(), resource_version: None }),
        ..Default::default()
    };
    match Api::<Job>::namespaced(ctx.client.clone(), &ns).delete(&name, &dp).await {
        Ok(_) => tracing::info!(component = NAME, job = %key, "cleaning up the finished Job"),
        Err(e) if is_not_found(&e) => {}
        Err(e) => return Err(e.into()),
    }
    ctx.done(&key, Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(ttl: Option<i32>, cond: Option<(&str, &str)>) -> Job {
        let mut j = json!({"metadata": {"name": "j"}, "spec": {"template": {}}});
        if let Some(t) = ttl {
            j["spec"]["ttlSecondsAfterFinished"] = json!(t);
        }
        if let Some((t, s)) = cond {
            j["status"] =
                json!({"conditions": [{"type": t, "status": s, "lastTransitionTime": "2024-01-01T00:00:00Z"}]});
        }
        serde_json::from_value(j).unwrap()
    }

    #[test]
    fn expiry_as_upstream() {
        // Upstream TestTimeLeft cases.
        let t0: jiff::Timestamp = "2024-01-01T00:00:00Z".parse().unwrap();
        let at = |s: i64| t0.checked_add(jiff::SignedDuration::from_secs(s)).unwrap();
        assert_eq!(time_left(&job(None, Some(("Complete", "True"))), t0), None);
        assert_eq!(time_left(&job(Some(10), None), t0), None);
        assert_eq!(time_left(&job(Some(10), Some(("Complete", "False"))), t0), None);
        assert_eq!(time_left(&job(Some(10), Some(("Complete", "True"))), at(3)), Some(Duration::from_secs(7)));
        assert_eq!(time_left(&job(Some(10), Some(("Failed", "True"))), at(10)), Some(Duration::ZERO));
        assert_eq!(time_left(&job(Some(0), Some(("Complete", "True"))), at(20)), Some(Duration::ZERO));
    }
}
