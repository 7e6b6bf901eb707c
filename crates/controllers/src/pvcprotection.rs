//! The PVC protection controller (upstream
//! `pkg/controller/volume/pvcprotection`): claims carry the
//! `kubernetes.io/pvc-protection` finalizer (added here when the admission
//! plugin did not), and a claim being deleted keeps it until no scheduled,
//! not shut-down pod of its namespace uses it — checked against a live pod
//! list before the finalizer is removed, as upstream asks the API server.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;

use crate::runtime::{self, is_conflict, is_not_found, Ctx, Error, Stop};

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "persistentvolumeclaim-protection-controller";
/// The older name `--controllers` also accepts.
pub const ALIAS: &str = "pvc-protection";
/// The kube-system ServiceAccount it runs as.
pub const SERVICE_ACCOUNT: &str = "pvc-protection-controller";
/// The finalizer that keeps an in-use claim.
pub const FINALIZER: &str = "kubernetes.io/pvc-protection";

/// Upstream `podIsShutDown`: deleted with a zero grace period (kubelet is
/// done with it, or it was force-deleted).
pub fn pod_is_shut_down(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some() && pod.metadata.deletion_grace_period_seconds == Some(0)
}

/// The claims a pod's volumes name: `persistentVolumeClaim.claimName`, and
/// `<pod>-<volume>` for generic ephemeral volumes.
pub fn pod_claims(pod: &Pod) -> Vec<String> {
    let pod_name = pod.metadata.name.as_deref().unwrap_or("");
    let volumes = pod.spec.as_ref().and_then(|s| s.volumes.as_deref()).unwrap_or(&[]);
    volumes
        .iter()
        .filter_map(|v| {
            if let Some(c) = &v.persistent_volume_claim {
                Some(c.claim_name.clone())
            } else {
                v.ephemeral.as_ref().map(|_| format!("{pod_name}-{}", v.name))
            }
        })
        .collect()
}

/// Upstream `podUsesPVC`: only scheduled pods count (the kubelet refuses
/// to start a pod whose claim is being deleted), and shut-down ones do not.
pub fn pod_uses_claim(pod: &Pod, claim: &str) -> bool {
    let scheduled = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).is_some_and(|n| !n.is_empty());
    scheduled && !pod_is_shut_down(pod) && pod_claims(pod).iter().any(|c| c == claim)
}

fn has_finalizer(pvc: &PersistentVolumeClaim) -> bool {
    pvc.metadata.finalizers.as_ref().is_some_and(|f| f.iter().any(|x| x == FINALIZER))
}

/// Runs until `stop`: claims are the keys; a pod change requeues the claims it names.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    let client = ctx.reader.clone();
    let controller = Controller::new(Api::<PersistentVolumeClaim>::all(client.clone()), watcher::Config::default())
        .watches(Api::<Pod>::all(client), watcher::Config::default(), |pod| {
            let ns = pod.metadata.namespace.clone().unwrap_or_default();
            pod_claims(&pod)
                .into_iter()
                .map(move |c| ObjectRef::<PersistentVolumeClaim>::new(&c).within(&ns))
                .collect::<Vec<_>>()
        })
        .graceful_shutdown_on(runtime::stopped(stop));
    runtime::drive(NAME, controller.run(reconcile, runtime::error_policy, ctx)).await;
}

async fn reconcile(pvc: Arc<PersistentVolumeClaim>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let key = runtime::key_of(pvc.as_ref());
    let ns = pvc.metadata.namespace.clone().unwrap_or_default();
    let name = pvc.metadata.name.clone().unwrap_or_default();
    let deleting = pvc.metadata.deletion_timestamp.is_some();
    let api = Api::<PersistentVolumeClaim>::namespaced(ctx.client.clone(), &ns);
    let mut updated = pvc.as_ref().clone();
    if !deleting && !has_finalizer(&pvc) {
        updated.metadata.finalizers.get_or_insert_with(Vec::new).push(FINALIZER.into());
    } else if deleting && has_finalizer(&pvc) {
        // Ask the API server, not a cache: a pod created a moment ago must count.
        let pods = Api::<Pod>::namespaced(ctx.reader.clone(), &ns).list(&ListParams::default()).await?;
        if pods.items.iter().any(|p| pod_uses_claim(p, &name)) {
            tracing::debug!(component = NAME, claim = %key, "claim in use: keeping the finalizer");
            return ctx.done(&key, Action::await_change());
        }
        updated.metadata.finalizers.get_or_insert_with(Vec::new).retain(|f| f != FINALIZER);
    } else {
        return ctx.done(&key, Action::await_change());
    }
    match api.replace(&name, &PostParams::default(), &updated).await {
        Ok(_) => {
            tracing::info!(component = NAME, claim = %key, removed = deleting, "updated the pvc-protection finalizer")
        }
        Err(e) if is_not_found(&e) => {}
        Err(e) if is_conflict(&e) => return Ok(Action::requeue(std::time::Duration::from_millis(100))),
        Err(e) => return Err(e.into()),
    }
    ctx.done(&key, Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(v: serde_json::Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn only_scheduled_running_pods_hold_the_claim() {
        let vols = json!([{"name": "d", "persistentVolumeClaim": {"claimName": "data"}},
                          {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]);
        let scheduled =
            pod(json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n1", "containers": [], "volumes": vols}}));
        assert!(pod_uses_claim(&scheduled, "data"));
        assert!(pod_uses_claim(&scheduled, "p-scratch"));
        assert!(!pod_uses_claim(&scheduled, "other"));
        let pending = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [], "volumes": vols}}));
        assert!(!pod_uses_claim(&pending, "data"));
        let terminating = pod(json!({"metadata": {"name": "p", "deletionTimestamp": "2024-01-01T00:00:00Z",
            "deletionGracePeriodSeconds": 30}, "spec": {"nodeName": "n1", "containers": [], "volumes": vols}}));
        assert!(pod_uses_claim(&terminating, "data"), "a pod still shutting down uses its claim");
        let shut_down = pod(json!({"metadata": {"name": "p", "deletionTimestamp": "2024-01-01T00:00:00Z",
            "deletionGracePeriodSeconds": 0}, "spec": {"nodeName": "n1", "containers": [], "volumes": vols}}));
        assert!(!pod_uses_claim(&shut_down, "data"));
    }
}
