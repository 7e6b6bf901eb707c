//! The ResourceQuota controller (upstream
//! `pkg/controller/resourcequota`): every quota's `status.hard` mirrors
//! `spec.hard` and `status.used` is recomputed from the live objects of
//! its namespace with the shared evaluators
//! ([`rkube_apimachinery::quota`]). A quota is synced when it changes,
//! when a pod, service, claim, config map, secret or replication
//! controller, deployment, replica set, stateful set, daemon set, job or
//! cron job of its namespace changes or goes away (upstream's
//! replenishment controllers, so released usage returns promptly), and
//! in any case every `--resource-quota-sync-period` ([`RESYNC`] by
//! default) — the only replenishment of `count/` quotas on other resources.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{
    ConfigMap, PersistentVolumeClaim, Pod, ReplicationController, ResourceQuota, Secret, Service,
};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::Resource;
use rkube_apimachinery::quota::{self, evaluator, Usage};
use serde_json::Value;

use crate::runtime::{self, is_conflict, is_not_found, Ctx, Error, Stop};

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "resourcequota-controller";
/// The older name `--controllers` also accepts.
pub const ALIAS: &str = "resourcequota";
/// The kube-system ServiceAccount it runs as.
pub const SERVICE_ACCOUNT: &str = "resourcequota-controller";
/// Upstream `--resource-quota-sync-period` default: the full resync.
pub const RESYNC: Duration = Duration::from_secs(5 * 60);

/// The quotas of the changed object's namespace.
fn quotas_of(store: &Store<ResourceQuota>, namespace: Option<String>) -> Vec<ObjectRef<ResourceQuota>> {
    let Some(ns) = namespace else { return Vec::new() };
    store
        .state()
        .iter()
        .filter(|q| q.metadata.namespace.as_deref() == Some(ns.as_str()))
        .map(|q| ObjectRef::from_obj(q.as_ref()))
        .collect()
}

/// Runs until `stop`.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    let c = ctx.reader.clone();
    let controller = Controller::new(Api::<ResourceQuota>::all(c.clone()), watcher::Config::default());
    let store = controller.store();
    macro_rules! replenish {
        ($controller:expr, $kind:ty) => {{
            let store = store.clone();
            $controller.watches(Api::<$kind>::all(c.clone()), watcher::Config::default(), move |o: $kind| {
                quotas_of(&store, o.meta().namespace.clone())
            })
        }};
    }
    let controller = replenish!(controller, Pod);
    let controller = replenish!(controller, Service);
    let controller = replenish!(controller, PersistentVolumeClaim);
    let controller = replenish!(controller, ConfigMap);
    let controller = replenish!(controller, Secret);
    let controller = replenish!(controller, ReplicationController);
    // Upstream replenishes every quotable resource through dynamic informers; here the common workloads.
    let controller = replenish!(controller, Deployment);
    let controller = replenish!(controller, ReplicaSet);
    let controller = replenish!(controller, StatefulSet);
    let controller = replenish!(controller, DaemonSet);
    let controller = replenish!(controller, Job);
    let controller = replenish!(controller, CronJob);
    let controller = controller.graceful_shutdown_on(runtime::stopped(stop));
    runtime::drive(NAME, controller.run(reconcile, runtime::error_policy, ctx)).await;
}

/// The resource a `count/<plural>[.<group>]` name counts, if not a core kind.
fn counted_resource(name: &str) -> Option<(String, String)> {
    let rest = name.strip_prefix("count/")?;
    let (plural, group) = rest.split_once('.').unwrap_or((rest, ""));
    let known = evaluator::CORE_KINDS.iter().any(|(g, p)| *g == group && *p == plural);
    (!known).then(|| (group.to_string(), plural.to_string()))
}

/// The list endpoint of `group`/`plural`, resolving the group's preferred
/// version by discovery; `None` when the server does not serve it.
async fn resource(ctx: &Ctx, group: &str, plural: &str) -> Option<ApiResource> {
    if group.is_empty() {
        let gvk = kube::api::GroupVersionKind::gvk("", "v1", "");
        return Some(ApiResource::from_gvk_with_plural(&gvk, plural));
    }
    let discovered = kube::discovery::group(&ctx.client, group).await.ok()?;
    discovered.recommended_resources().into_iter().map(|(ar, _)| ar).find(|ar| ar.plural == plural)
}

/// The new `status.used` of `q`: the usage of every object of the
/// namespace the quota matches, for each resource it limits (upstream
/// `CalculateUsage`, masked to `spec.hard`; resources no evaluator knows
/// keep their previous value).
async fn compute_used(ctx: &Ctx, q: &Value, namespace: &str, hard: &Usage) -> Result<Usage, Error> {
    let mut kinds: Vec<(String, String)> =
        evaluator::CORE_KINDS.iter().map(|(g, p)| (g.to_string(), p.to_string())).collect();
    kinds.extend(hard.keys().filter_map(|n| counted_resource(n)));
    let now = jiff::Timestamp::now().as_second();
    let mut used = quota::mask(&quota::parse_list(q.pointer("/status/used")), hard.keys());
    for (group, plural) in kinds {
        let matched = evaluator::matching(&group, &plural, hard.keys());
        if matched.is_empty() {
            continue;
        }
        let Some(ar) = resource(ctx, &group, &plural).await else { continue };
        // The controller's own role lists every resource (upstream: list/watch on `*`).
        let api = Api::<DynamicObject>::namespaced_with(ctx.client.clone(), namespace, &ar);
        let items = match api.list(&ListParams::default()).await {
            Ok(list) => list.items,
            Err(e) if is_not_found(&e) => continue,
            Err(e) => return Err(e.into()),
        };
        let mut sum: Usage = matched.iter().map(|n| (n.clone(), quota::Amount::default())).collect();
        for item in items {
            let obj = serde_json::to_value(&item).unwrap_or(Value::Null);
            if evaluator::quota_matches(q, &group, &plural, &obj) {
                sum = quota::add(&sum, &quota::mask(&evaluator::usage(&group, &plural, &obj, now), &matched));
            }
        }
        used.extend(sum);
    }
    Ok(used)
}

async fn reconcile(rq: Arc<ResourceQuota>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let key = runtime::key_of(rq.as_ref());
    let namespace = rq.metadata.namespace.clone().unwrap_or_default();
    let name = rq.metadata.name.clone().unwrap_or_default();
    let q = serde_json::to_value(rq.as_ref()).unwrap_or(Value::Null);
    let hard = quota::parse_list(q.pointer("/spec/hard"));
    let used = compute_used(&ctx, &q, &namespace, &hard).await?;
    let old_hard = quota::parse_list(q.pointer("/status/hard"));
    let old_used = quota::parse_list(q.pointer("/status/used"));
    let dirty = q.pointer("/status/hard").is_none()
        || q.pointer("/status/used").is_none()
        || !quota::equals(&old_hard, &hard)
        || !quota::equals(&old_used, &used);
    if dirty {
        let mut updated = (*rq).clone();
        let mut status = updated.status.take().unwrap_or_default();
        status.hard = Some(serde_json::from_value(quota::to_json(&hard)).unwrap_or_default());
        status.used = Some(serde_json::from_value(quota::to_json(&used)).unwrap_or_default());
        updated.status = Some(status);
        let api = Api::<ResourceQuota>::namespaced(ctx.client.clone(), &namespace);
        match api.replace_status(&name, &PostParams::default(), &updated).await {
            Ok(_) => tracing::debug!(component = NAME, quota = %key, used = %quota::pretty(&used), "updated usage"),
            // Deleted meanwhile: nothing to keep.
            Err(e) if is_not_found(&e) => return ctx.done(&key, Action::await_change()),
            // Admission charged it meanwhile: recompute at once.
            Err(e) if is_conflict(&e) => return ctx.done(&key, Action::requeue(Duration::from_millis(100))),
            Err(e) => return Err(e.into()),
        }
    }
    ctx.done(&key, Action::requeue(ctx.settings.resource_quota_sync_period))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_count_names_resolve_to_resources() {
        assert_eq!(counted_resource("count/deployments.apps"), Some(("apps".into(), "deployments".into())));
        assert_eq!(counted_resource("count/events"), Some(("".into(), "events".into())));
        assert_eq!(counted_resource("count/pods"), None, "pods have their own evaluator");
        assert_eq!(counted_resource("pods"), None);
        assert_eq!(counted_resource("count/widgets.example.com"), Some(("example.com".into(), "widgets".into())));
    }
}
