//! The DaemonSet controller (upstream `pkg/controller/daemon`).
//!
//! One sync of a DaemonSet, keyed by `namespace/name`, over live reads of
//! the nodes and of its pods (claimed as upstream's `ClaimPods`):
//! 1. its current ControllerRevision: `<ds>-<hash>`, the hash of the pod
//!    template and `status.collisionCount`, labelled
//!    `controller-revision-hash` = the hash; an equal older revision is
//!    renumbered to the next number, otherwise one is created
//!    (upstream `constructHistory`); revisions beyond
//!    `revisionHistoryLimit` (default 10) no pod uses are deleted;
//! 2. per node ([`placement`]): a node that should run the pod and has
//!    none gets one (pinned by node affinity, with the default
//!    tolerations and the revision hash label); failed pods are deleted;
//!    (event `FailedDaemonPod` "Found failed daemon pod ns/p on node n,
//!    will try to kill it"); extra pods are deleted (oldest kept); a node that should no longer
//!    run it loses its pods;
//! 3. when nothing was created or deleted, `RollingUpdate` replaces pods
//!    of older revisions: without `maxSurge`, an unavailable old pod is
//!    deleted at once and available ones while fewer than
//!    `maxUnavailable` (default 1, percentages of the desired count
//!    rounded up) pods are unavailable; with `maxSurge`, a new pod is
//!    started beside an available old one (up to `maxSurge` nodes at a
//!    time) and the old one deleted once the new is available.
//!    `OnDelete` only replaces deleted pods;
//! 4. the status is written when it changed.
//!
//! Events as upstream's `RealPodControl`: `SuccessfulCreate` "Created pod:
//! NAME", `FailedCreate` "Error creating: ERR", `SuccessfulDelete`
//! "Deleted pod: NAME", `FailedDelete` "Error deleting: ERR".

pub mod placement;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet, DaemonSetStatus};
use k8s_openapi::api::core::v1::{Node, Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use rkube_apimachinery::selector::labels::LabelSelector;
use serde_json::json;

use crate::events::{NORMAL, WARNING};
use crate::replicaset::adoption::{self, Claim, Owner};
use crate::replicaset::status::{is_pod_available, is_pod_ready};
use crate::runtime::{self, api_code, Ctx, Error, Stop};

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "daemonset-controller";
/// Its older name.
pub const ALIAS: &str = "daemonset";
/// The kube-system ServiceAccount it runs as.
pub const SERVICE_ACCOUNT: &str = "daemon-set-controller";

/// The pod and revision label carrying the revision hash.
pub const HASH_LABEL: &str = "controller-revision-hash";

/// Runs the DaemonSet controller until `stop`.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    let name = ctx.name;
    let controller = Controller::new(Api::<DaemonSet>::all(ctx.reader.clone()), watcher::Config::default());
    let store = controller.store();
    let controller = controller
        .owns(Api::<Pod>::all(ctx.reader.clone()), watcher::Config::default())
        // Any node change may change where every DaemonSet runs.
        .watches(Api::<Node>::all(ctx.reader.clone()), watcher::Config::default(), move |_node: Node| {
            store.state().iter().map(|ds| ObjectRef::from_obj(ds.as_ref())).collect::<Vec<_>>()
        })
        .graceful_shutdown_on(runtime::stopped(stop));
    runtime::drive(name, controller.run(reconcile, runtime::error_policy, ctx)).await;
}

async fn reconcile(ds: Arc<DaemonSet>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let key = runtime::key_of(ds.as_ref());
    let next = sync(&ctx, &ds).await?;
    ctx.done(&key, next.map_or_else(Action::await_change, Action::requeue))
}

fn owner_ref(ds: &DaemonSet) -> OwnerReference {
    OwnerReference {
        api_version: "apps/v1".into(),
        kind: "DaemonSet".into(),
        name: ds.metadata.name.clone().unwrap_or_default(),
        uid: ds.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

fn template(ds: &DaemonSet) -> PodTemplateSpec {
    ds.spec.as_ref().map(|s| s.template.clone()).unwrap_or_default()
}

fn pod_hash(p: &Pod) -> &str {
    p.metadata.labels.as_ref().and_then(|l| l.get(HASH_LABEL)).map(String::as_str).unwrap_or("")
}

fn is_finished(p: &Pod) -> bool {
    matches!(p.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Failed") | Some("Succeeded"))
}

/// What one node's pass decided.
enum Act {
    Create(String),
    Delete(String),
}

async fn sync(ctx: &Ctx, ds: &DaemonSet) -> Result<Option<Duration>, Error> {
    let sel_json = serde_json::to_value(ds.spec.as_ref().map(|s| &s.selector)).unwrap_or_default();
    let selector = match LabelSelector::from_label_selector_json(&sel_json) {
        Ok(s) if !s.is_empty() => s,
        _ => return Ok(None),
    };
    let oref = owner_ref(ds);
    let hash = current_revision(ctx, ds, &oref).await?;
    let nodes = Api::<Node>::all(ctx.reader.clone()).list(&ListParams::default()).await?.items;
    let pods = claim_pods(ctx, ds, &selector, &oref).await?;
    let mut by_node: BTreeMap<String, Vec<&Pod>> = BTreeMap::new();
    for p in &pods {
        if let Some(n) = placement::target_node(p) {
            by_node.entry(n).or_default().push(p);
        }
    }
    for v in by_node.values_mut() {
        v.sort_by_key(|p| p.metadata.creation_timestamp.as_ref().map(|t| t.0));
    }
    let mut spec = template(ds).spec.unwrap_or_default();
    placement::add_default_tolerations(&mut spec);
    let min_ready = ds.spec.as_ref().and_then(|s| s.min_ready_seconds).unwrap_or(0);
    let now = jiff::Timestamp::now();
    let available = |p: &Pod| p.metadata.deletion_timestamp.is_none() && is_pod_available(p, min_ready, now);
    let strategy = ds.spec.as_ref().and_then(|s| s.update_strategy.clone()).unwrap_or_default();
    let rolling = strategy.type_.as_deref().is_none_or(|t| t == "RollingUpdate");
    let ru = strategy.rolling_update.unwrap_or_default();
    let deleting = ds.metadata.deletion_timestamp.is_some();
    let mut acts = Vec::new();
    let mut status = DaemonSetStatus::default();
    let mut should_run_nodes = Vec::new();
    for node in &nodes {
        let node_name = node.metadata.name.clone().unwrap_or_default();
        let (run, cont) = placement::should_run(&spec, node);
        let on: Vec<&Pod> = by_node.get(&node_name).cloned().unwrap_or_default();
        let active: Vec<&Pod> = on.iter().copied().filter(|p| p.metadata.deletion_timestamp.is_none()).collect();
        if run {
            status.desired_number_scheduled += 1;
            should_run_nodes.push(node_name.clone());
            if let Some(p) = active.first() {
                status.current_number_scheduled += 1;
                if is_pod_ready(p) {
                    status.number_ready += 1;
                }
                if available(p) {
                    *status.number_available.get_or_insert(0) += 1;
                }
                if active.iter().any(|p| pod_hash(p) == hash) {
                    *status.updated_number_scheduled.get_or_insert(0) += 1;
                }
            }
        } else if !active.is_empty() {
            status.number_misscheduled += 1;
        }
        if deleting {
            continue;
        }
        if cont {
            let failed: Vec<&Pod> = active.iter().copied().filter(|p| is_finished(p)).collect();
            for p in &failed {
                let pod_name = p.metadata.name.clone().unwrap_or_default();
                let ns = ds.metadata.namespace.as_deref().unwrap_or("");
                let msg = format!("Found failed daemon pod {ns}/{pod_name} on node {node_name}, will try to kill it");
                ctx.recorder.event(ds, WARNING, "FailedDaemonPod", msg);
                acts.push(Act::Delete(pod_name));
            }
            let running: Vec<&Pod> = active.iter().copied().filter(|p| !is_finished(p)).collect();
            if run && running.is_empty() && on.iter().all(|p| p.metadata.deletion_timestamp.is_none() || is_finished(p))
            {
                acts.push(Act::Create(node_name.clone()));
            }
            // Surge leaves an old and a new pod side by side: the update handles those.
            let surging = rolling && running.len() == 2 && running.iter().any(|p| pod_hash(p) == hash);
            if running.len() > 1 && !surging {
                for p in &running[1..] {
                    acts.push(Act::Delete(p.metadata.name.clone().unwrap_or_default()));
                }
            }
        } else {
            for p in &active {
                acts.push(Act::Delete(p.metadata.name.clone().unwrap_or_default()));
            }
        }
    }
    if acts.is_empty() && rolling && !deleting {
        acts = rolling_update(&should_run_nodes, &by_node, &hash, &ru, status.desired_number_scheduled, &available);
    }
    let mut failure = None;
    for act in acts {
        let r = match act {
            Act::Create(node) => create_pod(ctx, ds, &oref, &hash, &node).await,
            Act::Delete(pod) => delete_pod(ctx, ds, &pod).await,
        };
        if let Err(e) = r {
            failure.get_or_insert(e);
        }
    }
    status.number_unavailable =
        Some(status.desired_number_scheduled - status.number_available.unwrap_or(0)).filter(|n| *n > 0);
    status.observed_generation = ds.metadata.generation;
    status.collision_count = ds.status.as_ref().and_then(|s| s.collision_count);
    status.conditions = ds.status.as_ref().and_then(|s| s.conditions.clone());
    write_status(ctx, ds, status.clone()).await?;
    let live: HashSet<String> = pods.iter().map(|p| pod_hash(p).to_string()).chain([hash.clone()]).collect();
    truncate_history(ctx, ds, &oref, &live).await?;
    if let Some(e) = failure {
        return Err(e);
    }
    if min_ready > 0 && status.number_ready != status.number_available.unwrap_or(0) {
        return Ok(Some(Duration::from_secs(min_ready as u64)));
    }
    Ok(None)
}

/// Upstream `rollingUpdate` (see the module docs).
fn rolling_update(
    nodes: &[String],
    by_node: &BTreeMap<String, Vec<&Pod>>,
    hash: &str,
    ru: &k8s_openapi::api::apps::v1::RollingUpdateDaemonSet,
    desired: i32,
    available: &dyn Fn(&Pod) -> bool,
) -> Vec<Act> {
    let scaled = |v: Option<&IntOrString>, default: i32| match v {
        None => default,
        Some(IntOrString::Int(i)) => *i,
        Some(IntOrString::String(s)) => {
            let pct: i64 = s.trim_end_matches('%').parse().unwrap_or(0);
            ((pct * i64::from(desired) + 99) / 100) as i32
        }
    };
    let max_surge = scaled(ru.max_surge.as_ref(), 0);
    let mut max_unavailable = scaled(ru.max_unavailable.as_ref(), 1);
    if max_surge == 0 && max_unavailable == 0 {
        max_unavailable = 1;
    }
    let mut acts = Vec::new();
    let active = |n: &String| -> Vec<&Pod> {
        by_node.get(n).into_iter().flatten().copied().filter(|p| p.metadata.deletion_timestamp.is_none()).collect()
    };
    let name = |p: &Pod| p.metadata.name.clone().unwrap_or_default();
    if max_surge == 0 {
        let mut unavailable = nodes.iter().filter(|n| !active(n).iter().any(|p| available(p))).count() as i32;
        for n in nodes {
            let pods = active(n);
            let Some(old) = pods.iter().find(|p| pod_hash(p) != hash) else { continue };
            if !available(old) {
                acts.push(Act::Delete(name(old)));
            } else if unavailable < max_unavailable {
                acts.push(Act::Delete(name(old)));
                unavailable += 1;
            }
        }
        return acts;
    }
    let mut surging = nodes.iter().filter(|n| active(n).len() > 1).count() as i32;
    for n in nodes {
        let pods = active(n);
        let Some(old) = pods.iter().find(|p| pod_hash(p) != hash) else { continue };
        match pods.iter().find(|p| pod_hash(p) == hash) {
            Some(new) if available(new) => acts.push(Act::Delete(name(old))),
            Some(_) => {}
            None if !available(old) => acts.push(Act::Delete(name(old))),
            None if surging < max_surge => {
                acts.push(Act::Create(n.clone()));
                surging += 1;
            }
            None => {}
        }
    }
    acts
}

async fn claim_pods(
    ctx: &Ctx,
    ds: &DaemonSet,
    selector: &LabelSelector,
    oref: &OwnerReference,
) -> Result<Vec<Pod>, Error> {
    let ns = ds.metadata.namespace.as_deref().unwrap_or("");
    let all = Api::<Pod>::namespaced(ctx.reader.clone(), ns).list(&ListParams::default()).await?;
    let owner = Owner { uid: &oref.uid, namespace: ns, deleting: ds.metadata.deletion_timestamp.is_some(), selector };
    let writer = Api::<Pod>::namespaced(ctx.client.clone(), ns);
    let mut owned = Vec::new();
    for p in all.items {
        let (pod_name, pod_uid) =
            (p.metadata.name.clone().unwrap_or_default(), p.metadata.uid.clone().unwrap_or_default());
        match adoption::decide(&owner, &p) {
            Claim::Keep => owned.push(p),
            Claim::Ignore => {}
            Claim::Release => adoption::release(&writer, &pod_name, &pod_uid, &oref.uid).await?,
            Claim::Adopt => {
                if adoption::adopt(&writer, &pod_name, &pod_uid, oref).await? {
                    let mut adopted = p;
                    adopted.metadata.owner_references.get_or_insert_with(Vec::new).push(oref.clone());
                    owned.push(adopted);
                }
            }
        }
    }
    Ok(owned)
}

async fn owned_revisions(ctx: &Ctx, ds: &DaemonSet, oref: &OwnerReference) -> Result<Vec<ControllerRevision>, Error> {
    let ns = ds.metadata.namespace.as_deref().unwrap_or("");
    let mut revs: Vec<ControllerRevision> = Api::<ControllerRevision>::namespaced(ctx.reader.clone(), ns)
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|r| adoption::controller_of(r.metadata.owner_references.as_ref()).is_some_and(|c| c.uid == oref.uid))
        .collect();
    crate::history::sort(&mut revs);
    Ok(revs)
}

/// Upstream `constructHistory`: the current revision's hash.
async fn current_revision(ctx: &Ctx, ds: &DaemonSet, oref: &OwnerReference) -> Result<String, Error> {
    let ns = ds.metadata.namespace.as_deref().unwrap_or("");
    let name = ds.metadata.name.as_deref().unwrap_or("");
    let revs = owned_revisions(ctx, ds, oref).await?;
    let tpl = template(ds);
    let mut data = json!({"spec": {"template": serde_json::to_value(&tpl).unwrap_or_default()}});
    data["spec"]["template"]["$patch"] = json!("replace");
    let next = crate::history::next_revision(&revs);
    let api = Api::<ControllerRevision>::namespaced(ctx.client.clone(), ns);
    if let Some(existing) = revs.iter().rev().find(|r| r.data.as_ref().map(|d| &d.0) == Some(&data)) {
        let h = existing.metadata.labels.as_ref().and_then(|l| l.get(HASH_LABEL)).cloned().unwrap_or_default();
        if existing.revision != revs.last().map(|r| r.revision).unwrap_or(0) {
            crate::history::renumber(&api, existing, next).await?;
        }
        return Ok(h);
    }
    let mut collision = ds.status.as_ref().and_then(|s| s.collision_count);
    for _ in 0..10 {
        let h = crate::deployment::sync::compute_hash(&tpl, collision);
        let mut labels = tpl.metadata.as_ref().and_then(|m| m.labels.clone()).unwrap_or_default();
        labels.insert(HASH_LABEL.into(), h.clone());
        let rev = ControllerRevision {
            metadata: ObjectMeta {
                name: Some(crate::history::revision_name(name, &h)),
                namespace: Some(ns.into()),
                labels: Some(labels),
                // As upstream: kubectl shows the change-cause from these.
                annotations: ds.metadata.annotations.clone(),
                owner_references: Some(vec![oref.clone()]),
                ..Default::default()
            },
            data: Some(RawExtension(data.clone())),
            revision: next,
        };
        match api.create(&PostParams::default(), &rev).await {
            Ok(_) => return Ok(h),
            Err(e) if api_code(&e) == Some(409) => {
                let existing = api.get(rev.metadata.name.as_deref().unwrap_or("")).await?;
                let ours = adoption::controller_of(existing.metadata.owner_references.as_ref())
                    .is_some_and(|c| c.uid == oref.uid);
                if ours && existing.data.as_ref().map(|d| &d.0) == Some(&data) {
                    return Ok(h);
                }
                // A hash collision: upstream raises status.collisionCount.
                collision = Some(collision.unwrap_or(0) + 1);
                let mut fresh = ds.clone();
                fresh.status.get_or_insert_with(Default::default).collision_count = collision;
                let _ = Api::<DaemonSet>::namespaced(ctx.client.clone(), ns)
                    .replace_status(name, &PostParams::default(), &fresh)
                    .await;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(Error::Other(format!("no free revision name for DaemonSet {ns}/{name}")))
}

async fn create_pod(ctx: &Ctx, ds: &DaemonSet, oref: &OwnerReference, hash: &str, node: &str) -> Result<(), Error> {
    let ns = ds.metadata.namespace.as_deref().unwrap_or("");
    let name = ds.metadata.name.as_deref().unwrap_or("");
    let tpl = template(ds);
    let tm = tpl.metadata.unwrap_or_default();
    let mut labels = tm.labels.unwrap_or_default();
    labels.insert(HASH_LABEL.into(), hash.into());
    let mut spec = tpl.spec.unwrap_or_default();
    placement::add_default_tolerations(&mut spec);
    placement::pin_to_node(&mut spec, node);
    let pod = Pod {
        metadata: ObjectMeta {
            generate_name: Some(format!("{name}-")),
            namespace: Some(ns.into()),
            labels: Some(labels),
            annotations: tm.annotations,
            finalizers: tm.finalizers,
            owner_references: Some(vec![oref.clone()]),
            ..Default::default()
        },
        spec: Some(spec),
        status: None,
    };
    match Api::<Pod>::namespaced(ctx.client.clone(), ns).create(&PostParams::default(), &pod).await {
        Ok(p) => {
            let pod_name = p.metadata.name.unwrap_or_default();
            ctx.recorder.event(ds, NORMAL, "SuccessfulCreate", format!("Created pod: {pod_name}"));
            Ok(())
        }
        Err(e) if runtime::is_namespace_gone(&e) => Ok(()),
        Err(e) => {
            ctx.recorder.event(ds, WARNING, "FailedCreate", format!("Error creating: {}", msg(&e)));
            Err(e.into())
        }
    }
}

fn msg(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => s.message.clone(),
        other => other.to_string(),
    }
}

async fn delete_pod(ctx: &Ctx, ds: &DaemonSet, pod: &str) -> Result<(), Error> {
    let ns = ds.metadata.namespace.as_deref().unwrap_or("");
    match Api::<Pod>::namespaced(ctx.client.clone(), ns).delete(pod, &DeleteParams::default()).await {
        Ok(_) => {
            ctx.recorder.event(ds, NORMAL, "SuccessfulDelete", format!("Deleted pod: {pod}"));
            Ok(())
        }
        Err(e) if api_code(&e) == Some(404) => Ok(()),
        Err(e) => {
            ctx.recorder.event(ds, WARNING, "FailedDelete", format!("Error deleting: {}", msg(&e)));
            Err(e.into())
        }
    }
}

async fn write_status(ctx: &Ctx, ds: &DaemonSet, new: DaemonSetStatus) -> Result<(), Error> {
    let norm = |mut s: DaemonSetStatus| {
        for f in [&mut s.number_available, &mut s.updated_number_scheduled, &mut s.number_unavailable] {
            if *f == Some(0) {
                *f = None;
            }
        }
        s
    };
    let new = norm(new);
    if norm(ds.status.clone().unwrap_or_default()) == new {
        return Ok(());
    }
    let ns = ds.metadata.namespace.as_deref().unwrap_or("");
    let name = ds.metadata.name.as_deref().unwrap_or("");
    let api = Api::<DaemonSet>::namespaced(ctx.client.clone(), ns);
    let mut target = DaemonSet { status: Some(new.clone()), ..ds.clone() };
    for attempt in 0..2 {
        match api.replace_status(name, &PostParams::default(), &target).await {
            Ok(_) => return Ok(()),
            Err(e) if runtime::is_not_found(&e) => return Ok(()),
            Err(e) if attempt == 1 => return Err(e.into()),
            Err(_) => {
                let Some(fresh) = api.get_opt(name).await? else { return Ok(()) };
                if fresh.metadata.uid != ds.metadata.uid {
                    return Ok(());
                }
                target = DaemonSet { status: Some(new.clone()), ..fresh };
            }
        }
    }
    Ok(())
}

/// Upstream `cleanupHistory`: keeps `revisionHistoryLimit` (default 10)
/// revisions besides those pods use and the current one.
async fn truncate_history(
    ctx: &Ctx,
    ds: &DaemonSet,
    oref: &OwnerReference,
    live: &HashSet<String>,
) -> Result<(), Error> {
    let ns = ds.metadata.namespace.as_deref().unwrap_or("");
    let limit = ds.spec.as_ref().and_then(|s| s.revision_history_limit).unwrap_or(10).max(0) as usize;
    let old: Vec<ControllerRevision> = owned_revisions(ctx, ds, oref)
        .await?
        .into_iter()
        .filter(|r| {
            !live.contains(r.metadata.labels.as_ref().and_then(|l| l.get(HASH_LABEL)).map_or("", |s| s.as_str()))
        })
        .collect();
    let api = Api::<ControllerRevision>::namespaced(ctx.client.clone(), ns);
    for r in old.iter().take(old.len().saturating_sub(limit)) {
        match api.delete(r.metadata.name.as_deref().unwrap_or(""), &DeleteParams::default()).await {
            Ok(_) => {}
            Err(e) if api_code(&e) == Some(404) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::RollingUpdateDaemonSet;

    fn pod(name: &str, hash: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some([(HASH_LABEL.to_string(), hash.to_string())].into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn names(acts: &[Act]) -> Vec<String> {
        acts.iter()
            .map(|a| match a {
                Act::Create(n) => format!("create on {n}"),
                Act::Delete(p) => format!("delete {p}"),
            })
            .collect()
    }

    #[test]
    fn rolling_update_respects_max_unavailable_and_max_surge() {
        let (a_old, b_old, c_old) = (pod("a-old", "h1"), pod("b-old", "h1"), pod("c-old", "h1"));
        let nodes: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let mut by_node: BTreeMap<String, Vec<&Pod>> = BTreeMap::new();
        by_node.insert("a".into(), vec![&a_old]);
        by_node.insert("b".into(), vec![&b_old]);
        by_node.insert("c".into(), vec![&c_old]);
        let all_available = |_: &Pod| true;
        // Default maxUnavailable 1: one available old pod at a time.
        let acts = rolling_update(&nodes, &by_node, "h2", &RollingUpdateDaemonSet::default(), 3, &all_available);
        assert_eq!(names(&acts), ["delete a-old"]);
        // Unavailable old pods go at once, beyond the budget.
        let unavailable_b = |p: &Pod| p.metadata.name.as_deref() != Some("b-old");
        let acts = rolling_update(&nodes, &by_node, "h2", &RollingUpdateDaemonSet::default(), 3, &unavailable_b);
        assert_eq!(names(&acts), ["delete b-old"]);
        // 50% of 3 rounds up to 2.
        let ru =
            RollingUpdateDaemonSet { max_unavailable: Some(IntOrString::String("50%".into())), ..Default::default() };
        let acts = rolling_update(&nodes, &by_node, "h2", &ru, 3, &all_available);
        assert_eq!(names(&acts), ["delete a-old", "delete b-old"]);
        // maxSurge 1: start a new pod beside an old one; delete the old one
        // once the new one is available.
        let ru =
            RollingUpdateDaemonSet { max_surge: Some(IntOrString::Int(1)), max_unavailable: Some(IntOrString::Int(0)) };
        let acts = rolling_update(&nodes, &by_node, "h2", &ru, 3, &all_available);
        assert_eq!(names(&acts), ["create on a"]);
        let a_new = pod("a-new", "h2");
        by_node.insert("a".into(), vec![&a_old, &a_new]);
        let acts = rolling_update(&nodes, &by_node, "h2", &ru, 3, &all_available);
        assert_eq!(names(&acts), ["delete a-old"]);
        let new_unavailable = |p: &Pod| p.metadata.name.as_deref() != Some("a-new");
        let acts = rolling_update(&nodes, &by_node, "h2", &ru, 3, &new_unavailable);
        assert!(acts.is_empty());
    }
}
