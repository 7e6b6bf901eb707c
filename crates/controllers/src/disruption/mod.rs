//! The disruption controller (upstream `pkg/controller/disruption`):
//! keeps every PodDisruptionBudget's status — `expectedPods`,
//! `desiredHealthy`, `currentHealthy`, `disruptionsAllowed`,
//! `observedGeneration`, the `DisruptionAllowed` condition
//! (`SufficientPods` / `InsufficientPods` / `SyncFailed`) and
//! `disruptedPods` (evictions the pods' deletion has not confirmed,
//! dropped after 2 minutes). The eviction subresource reads this status.

pub mod budget;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Pod, ReplicationController};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, Time};
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;

use crate::events::{NORMAL, WARNING};
use crate::runtime::{self, is_conflict, is_not_found, Ctx, Error, Stop};

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "disruption-controller";
/// The older name `--controllers` also accepts.
pub const ALIAS: &str = "disruption";
/// The kube-system ServiceAccount it runs as.
pub const SERVICE_ACCOUNT: &str = "disruption-controller";
/// The condition type.
pub const CONDITION: &str = "DisruptionAllowed";

/// A label selector in the `?labelSelector=` syntax; `None` for the null
/// selector, which selects nothing (an empty one selects everything).
pub fn selector_string(sel: Option<&LabelSelector>) -> Option<String> {
    let sel = sel?;
    let mut parts: Vec<String> = sel.match_labels.iter().flatten().map(|(k, v)| format!("{k}={v}")).collect();
    for e in sel.match_expressions.iter().flatten() {
        let values = e.values.clone().unwrap_or_default().join(",");
        parts.push(match e.operator.as_str() {
            "In" => format!("{} in ({values})", e.key),
            "NotIn" => format!("{} notin ({values})", e.key),
            "Exists" => e.key.clone(),
            _ => format!("!{}", e.key),
        });
    }
    Some(parts.join(","))
}

fn budgets_of(store: &Store<PodDisruptionBudget>, pod: &Pod) -> Vec<ObjectRef<PodDisruptionBudget>> {
    let ns = pod.metadata.namespace.as_deref();
    store
        .state()
        .iter()
        .filter(|b| b.metadata.namespace.as_deref() == ns)
        .map(|b| ObjectRef::from_obj(b.as_ref()))
        .collect()
}

/// Runs until `stop`: budgets are the keys; a pod change requeues the
/// budgets of its namespace.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    let c = ctx.reader.clone();
    let controller = Controller::new(Api::<PodDisruptionBudget>::all(c.clone()), watcher::Config::default());
    let store = controller.store();
    let controller = controller
        .watches(Api::<Pod>::all(c), watcher::Config::default(), move |pod| budgets_of(&store, &pod))
        .graceful_shutdown_on(runtime::stopped(stop));
    runtime::drive(NAME, controller.run(reconcile, runtime::error_policy, ctx)).await;
}

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The replicas the pods' controllers want, summed once per controller
/// (upstream's finders: a ReplicaSet owned by a Deployment counts as the
/// Deployment; ReplicationControllers; StatefulSets). `Err` when a pod
/// has no controller, as upstream's `found no controllers for pod`.
async fn scale(ctx: &Ctx, namespace: &str, pods: &[Pod]) -> Result<i32, String> {
    // The controller's own role may read workloads (upstream reads them through its listers).
    let c = ctx.client.clone();
    let mut seen = HashSet::new();
    let mut total = 0;
    for pod in pods {
        let owner = pod.metadata.owner_references.iter().flatten().find(|o| o.controller == Some(true));
        let Some(owner) = owner else {
            return Err(format!("found no controllers for pod {:?}", pod.metadata.name.clone().unwrap_or_default()));
        };
        let err = |e: kube::Error| e.to_string();
        let (uid, replicas) = match (owner.api_version.as_str(), owner.kind.as_str()) {
            ("apps/v1", "ReplicaSet") => {
                let rs = Api::<ReplicaSet>::namespaced(c.clone(), namespace).get(&owner.name).await.map_err(err)?;
                let dep = rs
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .find(|o| o.controller == Some(true) && o.kind == "Deployment");
                match dep {
                    Some(d) => {
                        let d = Api::<Deployment>::namespaced(c.clone(), namespace).get(&d.name).await.map_err(err)?;
                        (d.metadata.uid.clone(), d.spec.and_then(|s| s.replicas).unwrap_or(1))
                    }
                    None => (rs.metadata.uid.clone(), rs.spec.and_then(|s| s.replicas).unwrap_or(1)),
                }
            }
            ("v1", "ReplicationController") => {
                let rc = Api::<ReplicationController>::namespaced(c.clone(), namespace)
                    .get(&owner.name)
                    .await
                    .map_err(err)?;
                (rc.metadata.uid.clone(), rc.spec.and_then(|s| s.replicas).unwrap_or(1))
            }
            ("apps/v1", "StatefulSet") => {
                let ss = Api::<StatefulSet>::namespaced(c.clone(), namespace).get(&owner.name).await.map_err(err)?;
                (ss.metadata.uid.clone(), ss.spec.and_then(|s| s.replicas).unwrap_or(1))
            }
            (_, kind) => {
                return Err(format!(
                    "found no controllers for pod {:?} ({kind})",
                    pod.metadata.name.clone().unwrap_or_default()
                ))
            }
        };
        if seen.insert(uid) {
            total += replicas;
        }
    }
    Ok(total)
}

/// The budget's status as computed from its pods, or the sync error.
async fn compute(
    ctx: &Ctx,
    pdb: &PodDisruptionBudget,
    now: i64,
) -> Result<(PodDisruptionBudgetStatus, Option<i64>), String> {
    let namespace = pdb.metadata.namespace.clone().unwrap_or_default();
    let spec = pdb.spec.clone().unwrap_or_default();
    let pods: Vec<Pod> = match selector_string(spec.selector.as_ref()) {
        None => Vec::new(),
        Some(sel) => {
            Api::<Pod>::namespaced(ctx.reader.clone(), &namespace)
                .list(&ListParams::default().labels(&sel))
                .await
                .map_err(|e| e.to_string())?
                .items
        }
    };
    if pods.is_empty() {
        ctx.recorder.event(pdb, NORMAL, "NoPods", "No matching pods found");
    }
    let needs_scale = spec.max_unavailable.is_some()
        || matches!(spec.min_available, Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(_)));
    let expectation = async {
        let scale = match (needs_scale, pods.is_empty()) {
            (false, _) => None,
            (true, true) => Some(0),
            (true, false) => Some(scale(ctx, &namespace, &pods).await?),
        };
        budget::expectations(spec.min_available.as_ref(), spec.max_unavailable.as_ref(), pods.len() as i32, scale)
    };
    let (expected, desired) = expectation.await.inspect_err(|e| {
        let message = format!("Failed to calculate the number of expected pods: {e}");
        ctx.recorder.event(pdb, WARNING, "CalculateExpectedPodCountFailed", message);
    })?;
    let old = pdb.status.clone().unwrap_or_default();
    let disrupted: BTreeMap<String, i64> =
        old.disrupted_pods.iter().flatten().map(|(k, t)| (k.clone(), t.0.as_second())).collect();
    let live: HashSet<&str> = pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| p.metadata.name.as_deref())
        .collect();
    let (kept, next) = budget::prune_disrupted(&disrupted, &|n| live.contains(n), now);
    let healthy = pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none() && is_ready(p))
        .filter(|p| !kept.contains_key(p.metadata.name.as_deref().unwrap_or("")))
        .count() as i32;
    let allowed = budget::disruptions_allowed(healthy, desired, expected);
    let disrupted_pods =
        old.disrupted_pods.clone().map(|m| m.into_iter().filter(|(k, _)| kept.contains_key(k)).collect());
    let status = PodDisruptionBudgetStatus {
        current_healthy: healthy,
        desired_healthy: desired,
        expected_pods: expected,
        disruptions_allowed: allowed,
        disrupted_pods,
        observed_generation: pdb.metadata.generation,
        conditions: old.conditions.clone(),
    };
    Ok((status, next))
}

/// Sets the `DisruptionAllowed` condition, keeping its transition time
/// when the status does not change (upstream `apimeta.SetStatusCondition`).
fn set_condition(
    status: &mut PodDisruptionBudgetStatus,
    ok: bool,
    reason: &str,
    message: &str,
    generation: Option<i64>,
) {
    let value = if ok { "True" } else { "False" };
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    let previous = conditions.iter().find(|c| c.type_ == CONDITION).cloned();
    conditions.retain(|c| c.type_ != CONDITION);
    let last_transition_time = match previous {
        Some(p) if p.status == value => p.last_transition_time,
        _ => Time(jiff::Timestamp::now()),
    };
    conditions.push(Condition {
        type_: CONDITION.into(),
        status: value.into(),
        reason: reason.into(),
        message: message.into(),
        observed_generation: generation,
        last_transition_time,
    });
}

async fn reconcile(pdb: Arc<PodDisruptionBudget>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let key = runtime::key_of(pdb.as_ref());
    let namespace = pdb.metadata.namespace.clone().unwrap_or_default();
    let name = pdb.metadata.name.clone().unwrap_or_default();
    let now = jiff::Timestamp::now().as_second();
    let (mut status, next) = match compute(&ctx, &pdb, now).await {
        Ok((mut s, next)) => {
            let ok = s.disruptions_allowed > 0;
            let reason = if ok { "SufficientPods" } else { "InsufficientPods" };
            set_condition(&mut s, ok, reason, "", pdb.metadata.generation);
            (s, next)
        }
        Err(message) => {
            // Upstream's failSafe: no disruption allowed while the budget cannot be computed.
            tracing::warn!(component = NAME, pdb = %key, %message, "sync failed");
            let mut s = pdb.status.clone().unwrap_or_default();
            s.disruptions_allowed = 0;
            s.observed_generation = pdb.metadata.generation;
            set_condition(&mut s, false, "SyncFailed", &message, pdb.metadata.generation);
            (s, None)
        }
    };
    if status.disrupted_pods.as_ref().is_some_and(|m| m.is_empty()) {
        status.disrupted_pods = None;
    }
    let mut old = pdb.status.clone().unwrap_or_default();
    if old.disrupted_pods.as_ref().is_some_and(|m| m.is_empty()) {
        old.disrupted_pods = None;
    }
    if old != status {
        let mut updated = (*pdb).clone();
        updated.status = Some(status);
        let api = Api::<PodDisruptionBudget>::namespaced(ctx.client.clone(), &namespace);
        match api.replace_status(&name, &PostParams::default(), &updated).await {
            Ok(_) => {}
            Err(e) if is_not_found(&e) => return ctx.done(&key, Action::await_change()),
            // An eviction wrote meanwhile: recompute from the new status.
            Err(e) if is_conflict(&e) => return ctx.done(&key, Action::requeue(Duration::from_millis(100))),
            Err(e) => return Err(e.into()),
        }
    }
    let action = match next {
        Some(at) => Action::requeue(Duration::from_secs((at - now).max(1) as u64)),
        None => Action::await_change(),
    };
    ctx.done(&key, action)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    #[test]
    fn selectors_render_in_query_syntax() {
        assert_eq!(selector_string(None), None);
        assert_eq!(selector_string(Some(&LabelSelector::default())), Some(String::new()));
        let sel = LabelSelector {
            match_labels: Some([("app".to_string(), "web".to_string())].into()),
            match_expressions: Some(vec![
                LabelSelectorRequirement {
                    key: "tier".into(),
                    operator: "In".into(),
                    values: Some(vec!["a".into(), "b".into()]),
                },
                LabelSelectorRequirement { key: "x".into(), operator: "DoesNotExist".into(), values: None },
            ]),
        };
        assert_eq!(selector_string(Some(&sel)).unwrap(), "app=web,tier in (a,b),!x");
    }
}
