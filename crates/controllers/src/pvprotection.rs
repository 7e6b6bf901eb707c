//! The PV protection controller (upstream
//! `pkg/controller/volume/pvprotection`): volumes carry the
//! `kubernetes.io/pv-protection` finalizer (added here when the admission
//! plugin did not), and a volume being deleted keeps it while it is Bound.

use std::sync::Arc;

use k8s_openapi::api::core::v1::PersistentVolume;
use kube::api::{Api, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;

use crate::runtime::{self, is_conflict, is_not_found, Ctx, Error, Stop};

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "persistentvolume-protection-controller";
/// The older name `--controllers` also accepts.
pub const ALIAS: &str = "pv-protection";
/// The kube-system ServiceAccount it runs as.
pub const SERVICE_ACCOUNT: &str = "pv-protection-controller";
/// The finalizer that keeps a bound volume.
pub const FINALIZER: &str = "kubernetes.io/pv-protection";

/// Upstream `isBeingUsed`: a volume is in use while its phase is Bound.
pub fn is_in_use(pv: &PersistentVolume) -> bool {
    pv.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound")
}

/// What the controller does to a volume's finalizers: `Some(true)` add,
/// `Some(false)` remove, `None` nothing.
pub fn decide(pv: &PersistentVolume) -> Option<bool> {
    let has = pv.metadata.finalizers.as_ref().is_some_and(|f| f.iter().any(|x| x == FINALIZER));
    match (pv.metadata.deletion_timestamp.is_some(), has) {
        (false, false) => Some(true),
        (true, true) if !is_in_use(pv) => Some(false),
        _ => None,
    }
}

/// Runs until `stop`: volumes are the keys.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    let controller = Controller::new(Api::<PersistentVolume>::all(ctx.reader.clone()), watcher::Config::default())
        .graceful_shutdown_on(runtime::stopped(stop));
    runtime::drive(NAME, controller.run(reconcile, runtime::error_policy, ctx)).await;
}

async fn reconcile(pv: Arc<PersistentVolume>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let name = pv.metadata.name.clone().unwrap_or_default();
    let Some(add) = decide(&pv) else { return ctx.done(&name, Action::await_change()) };
    let mut updated = pv.as_ref().clone();
    let finalizers = updated.metadata.finalizers.get_or_insert_with(Vec::new);
    if add {
        finalizers.push(FINALIZER.into());
    } else {
        finalizers.retain(|f| f != FINALIZER);
    }
    match Api::<PersistentVolume>::all(ctx.client.clone()).replace(&name, &PostParams::default(), &updated).await {
        Ok(_) => tracing::info!(component = NAME, volume = %name, added = add, "updated the pv-protection finalizer"),
        Err(e) if is_not_found(&e) => {}
        Err(e) if is_conflict(&e) => return Ok(Action::requeue(std::time::Duration::from_millis(100))),
        Err(e) => return Err(e.into()),
    }
    ctx.done(&name, Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finalizer_kept_while_bound() {
        let pv = |v: serde_json::Value| -> PersistentVolume { serde_json::from_value(v).unwrap() };
        assert_eq!(decide(&pv(json!({"metadata": {"name": "a"}}))), Some(true));
        let fin = json!(["kubernetes.io/pv-protection"]);
        let ts = "2024-01-01T00:00:00Z";
        assert_eq!(decide(&pv(json!({"metadata": {"name": "a", "finalizers": fin}}))), None);
        let bound = pv(json!({"metadata": {"name": "a", "finalizers": fin, "deletionTimestamp": ts},
                              "status": {"phase": "Bound"}}));
        assert_eq!(decide(&bound), None);
        for phase in ["Released", "Available", "Failed"] {
            let v = pv(json!({"metadata": {"name": "a", "finalizers": fin, "deletionTimestamp": ts},
                              "status": {"phase": phase}}));
            assert_eq!(decide(&v), Some(false), "{phase}");
        }
    }
}
