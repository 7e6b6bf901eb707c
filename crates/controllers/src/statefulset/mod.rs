//! The StatefulSet controller (upstream `pkg/controller/statefulset`).
//!
//! One sync of a set, keyed by `namespace/name`:
//! 1. its pods are read live (so a pod just created is never created
//!    twice) and claimed as upstream's `ClaimPods` does, counting only
//!    pods named `<set>-<ordinal>`;
//! 2. its ControllerRevisions ([`crate::history`]) are listed; the update
//!    revision is the current template's (an equal older revision is
//!    renumbered to the next revision, a new one created, raising
//!    `status.collisionCount` on a hash collision); the current revision
//!    is the one `status.currentRevision` names, else the update one;
//! 3. [`plan`] decides creations and deletions; a pod is created after its
//!    claims ([`identity`]) from the current revision's template when its
//!    ordinal is below the partition, from the update revision's
//!    otherwise;
//! 4. the status ([`status`]) is written when it changed, and revisions
//!    beyond `revisionHistoryLimit` (default 10) that no pod uses and that
//!    are neither current nor update are deleted, oldest first.
//!
//! `persistentVolumeClaimRetentionPolicy` (upstream
//! `updateClaimOwnerRefForSetAndPod`): with `whenDeleted: Delete` new
//! claims get the set as controller owner; with `whenScaled: Delete` a
//! claim of a pod removed by a scale-down gets that pod as its controller
//! owner instead, before the pod is deleted (the garbage collector then
//! removes it). Revisions carry the set's annotations, as upstream's. Events as upstream's `StatefulPodControl`:
//! `SuccessfulCreate` "create Pod web-0 in StatefulSet web successful",
//! "create Claim www-web-0 for Pod web-0 in StatefulSet web successful",
//! `SuccessfulDelete` "delete Pod web-2 in StatefulSet web successful",
//! `Failed…` "… failed error: ERR", `RecreatingFailedPod` "StatefulSet
//! ns/web is recreating failed Pod web-0" (`RecreatingTerminatedPod`
//! "… terminated Pod …" for a Succeeded one).

pub mod identity;
pub mod plan;
pub mod status;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet, StatefulSetStatus};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use rkube_apimachinery::selector::labels::LabelSelector;

use crate::events::{NORMAL, WARNING};
use crate::history::{self, Created};
use crate::replicaset::adoption::{self, Claim, Owner};
use crate::runtime::{self, api_code, Ctx, Error, Stop};
use plan::{PodView, SetView, Step};

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "statefulset-controller";
/// Its older name.
pub const ALIAS: &str = "statefulset";
/// The kube-system ServiceAccount it runs as.
pub const SERVICE_ACCOUNT: &str = "statefulset-controller";

/// Upstream's default `revisionHistoryLimit`.
const DEFAULT_HISTORY_LIMIT: i32 = 10;

/// Runs the StatefulSet controller until `stop`.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    let name = ctx.name;
    let controller = Controller::new(Api::<StatefulSet>::all(ctx.reader.clone()), watcher::Config::default())
        .owns(Api::<Pod>::all(ctx.reader.clone()), watcher::Config::default())
        .graceful_shutdown_on(runtime::stopped(stop));
    runtime::drive(name, controller.run(reconcile, runtime::error_policy, ctx)).await;
}

async fn reconcile(set: Arc<StatefulSet>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let key = runtime::key_of(set.as_ref());
    let next = sync(&ctx, &set).await?;
    ctx.done(&key, next.map_or_else(Action::await_change, Action::requeue))
}

fn selector_of(set: &StatefulSet) -> Result<LabelSelector, String> {
    let v = serde_json::to_value(set.spec.as_ref().map(|s| &s.selector)).map_err(|e| e.to_string())?;
    LabelSelector::from_label_selector_json(&v)
}

fn owner_ref(set: &StatefulSet) -> OwnerReference {
    OwnerReference {
        api_version: "apps/v1".into(),
        kind: "StatefulSet".into(),
        name: set.metadata.name.clone().unwrap_or_default(),
        uid: set.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// One sync (see the module docs); returns when to look again, if earlier
/// than the next event.
async fn sync(ctx: &Ctx, set: &StatefulSet) -> Result<Option<Duration>, Error> {
    let ns = set.metadata.namespace.clone().unwrap_or_default();
    let name = set.metadata.name.clone().unwrap_or_default();
    let selector = match selector_of(set) {
        Ok(s) if !s.is_empty() => s,
        Ok(_) => return Ok(None),
        Err(e) => {
            tracing::warn!(component = ctx.name, set = %format!("{ns}/{name}"), error = %e, "invalid selector");
            return Ok(None);
        }
    };
    let oref = owner_ref(set);
    let pods = claim_pods(ctx, set, &selector, &oref).await?;
    let (current, update, collision_count) = revisions(ctx, set, &oref).await?;
    let min_ready = set.spec.as_ref().and_then(|s| s.min_ready_seconds).unwrap_or(0);
    let now = jiff::Timestamp::now();
    let views: Vec<PodView> = pods
        .iter()
        .filter_map(|p| {
            let ordinal = identity::parse_ordinal(&name, p.metadata.name.as_deref()?)?;
            let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
            Some(PodView {
                ordinal,
                revision: identity::pod_revision(p).to_string(),
                finished: matches!(phase, Some("Failed") | Some("Succeeded")),
                terminating: p.metadata.deletion_timestamp.is_some(),
                healthy: status::running_and_available(p, min_ready, now),
            })
        })
        .collect();
    let spec = set.spec.clone().unwrap_or_default();
    let strategy = spec.update_strategy.clone().unwrap_or_default();
    let rolling = strategy.type_.as_deref().is_none_or(|t| t == "RollingUpdate");
    let partition = strategy.rolling_update.as_ref().and_then(|r| r.partition).unwrap_or(0);
    let view = SetView {
        replicas: identity::replicas(set),
        start: identity::start_ordinal(set),
        monotonic: spec.pod_management_policy.as_deref() != Some("Parallel"),
        rolling_partition: rolling.then_some(partition),
        deleting: set.metadata.deletion_timestamp.is_some(),
        update_revision: update.metadata.name.clone().unwrap_or_default(),
    };
    let steps = plan::plan(&view, &views);
    let mut failure = None;
    for step in steps {
        let r = match step {
            Step::Create(o) => {
                // Below the partition, a pod comes back on the current revision.
                let on_current = rolling && o < view.start + partition;
                let rev = if on_current { &current } else { &update };
                create_pod(ctx, set, &oref, rev, o).await
            }
            Step::DeleteFailed(o) => {
                let pod = identity::pod_name(&name, o);
                let failed = pods.iter().any(|p| {
                    p.metadata.name.as_deref() == Some(pod.as_str())
                        && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Failed")
                });
                if failed {
                    let msg = format!("StatefulSet {ns}/{name} is recreating failed Pod {pod}");
                    ctx.recorder.event(set, WARNING, "RecreatingFailedPod", msg);
                } else {
                    let msg = format!("StatefulSet {ns}/{name} is recreating terminated Pod {pod}");
                    ctx.recorder.event(set, NORMAL, "RecreatingTerminatedPod", msg);
                }
                delete_pod(ctx, set, &pod).await
            }
            Step::DeleteCondemned(o) => {
                let pod = pods.iter().find(|p| p.metadata.name.as_deref() == Some(&identity::pod_name(&name, o)));
                match pod {
                    Some(p) => match retain_on_scale_down(ctx, set, p, o).await {
                        Ok(()) => delete_pod(ctx, set, p.metadata.name.as_deref().unwrap_or("")).await,
                        Err(e) => Err(e),
                    },
                    None => Ok(()),
                }
            }
            Step::DeleteForUpdate(o) => delete_pod(ctx, set, &identity::pod_name(&name, o)).await,
        };
        if let Err(e) = r {
            failure = Some(e);
            break;
        }
    }
    let refs: Vec<&Pod> = pods
        .iter()
        .filter(|p| identity::parse_ordinal(&name, p.metadata.name.as_deref().unwrap_or("")).is_some())
        .collect();
    let current_name = current.metadata.name.clone().unwrap_or_default();
    let update_name = update.metadata.name.clone().unwrap_or_default();
    let new_status = status::calculate(set, &refs, &current_name, &update_name, collision_count, now);
    write_status(ctx, set, new_status.clone()).await?;
    truncate_history(ctx, set, &oref, &pods, &new_status).await?;
    if let Some(e) = failure {
        return Err(e);
    }
    let ready = new_status.ready_replicas.unwrap_or(0);
    if min_ready > 0 && ready != new_status.available_replicas.unwrap_or(0) {
        return Ok(Some(Duration::from_secs(min_ready as u64)));
    }
    Ok(None)
}

/// The set's pods after adoption and release (upstream `getPodsForStatefulSet`:
/// only pods named as members of the set are claimed).
async fn claim_pods(
    ctx: &Ctx,
    set: &StatefulSet,
    selector: &LabelSelector,
    oref: &OwnerReference,
) -> Result<Vec<Pod>, Error> {
    let ns = set.metadata.namespace.as_deref().unwrap_or("");
    let name = set.metadata.name.as_deref().unwrap_or("");
    let all = Api::<Pod>::namespaced(ctx.reader.clone(), ns).list(&ListParams::default()).await?;
    let owner = Owner { uid: &oref.uid, namespace: ns, deleting: set.metadata.deletion_timestamp.is_some(), selector };
    let writer = Api::<Pod>::namespaced(ctx.client.clone(), ns);
    let mut owned = Vec::new();
    for p in all.items {
        let pod_name = p.metadata.name.clone().unwrap_or_default();
        let pod_uid = p.metadata.uid.clone().unwrap_or_default();
        let member = identity::parse_ordinal(name, &pod_name).is_some();
        match adoption::decide(&owner, &p) {
            Claim::Keep => owned.push(p),
            Claim::Ignore => {}
            Claim::Release => adoption::release(&writer, &pod_name, &pod_uid, &oref.uid).await?,
            Claim::Adopt if member => {
                if adoption::adopt(&writer, &pod_name, &pod_uid, oref).await? {
                    let mut adopted = p;
                    adopted.metadata.owner_references.get_or_insert_with(Vec::new).push(oref.clone());
                    owned.push(adopted);
                }
            }
            Claim::Adopt => {}
        }
    }
    Ok(owned)
}

/// Upstream `getStatefulSetRevisions`: `(current, update, collisionCount)`.
async fn revisions(
    ctx: &Ctx,
    set: &StatefulSet,
    oref: &OwnerReference,
) -> Result<(ControllerRevision, ControllerRevision, Option<i32>), Error> {
    let ns = set.metadata.namespace.as_deref().unwrap_or("");
    let name = set.metadata.name.as_deref().unwrap_or("");
    let mut revs: Vec<ControllerRevision> = Api::<ControllerRevision>::namespaced(ctx.reader.clone(), ns)
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|r| adoption::controller_of(r.metadata.owner_references.as_ref()).is_some_and(|c| c.uid == oref.uid))
        .collect();
    history::sort(&mut revs);
    let api = Api::<ControllerRevision>::namespaced(ctx.client.clone(), ns);
    let labels =
        set.spec.as_ref().and_then(|s| s.template.metadata.as_ref()).and_then(|m| m.labels.clone()).unwrap_or_default();
    let data = identity::revision_data(set);
    let mut collision_count = set.status.as_ref().and_then(|s| s.collision_count);
    let next = history::next_revision(&revs);
    let candidate = history::new_revision(name, ns, oref, &labels, data.clone(), next, collision_count);
    let equal = history::find_equal(&revs, &candidate);
    let update = if let Some(last) = equal.last() {
        if last.revision == revs.last().map(|r| r.revision).unwrap_or(0) {
            (*last).clone()
        } else {
            history::renumber(&api, last, next).await?
        }
    } else {
        loop {
            let mut rev = history::new_revision(name, ns, oref, &labels, data.clone(), next, collision_count);
            // Upstream copies the set's annotations (kubectl's change-cause).
            rev.metadata.annotations = set.metadata.annotations.clone();
            match history::create(&api, &rev).await? {
                Created::Stored(r) => break r,
                Created::Collision => collision_count = Some(collision_count.unwrap_or(0) + 1),
            }
        }
    };
    let current_name = set.status.as_ref().and_then(|s| s.current_revision.clone());
    let current = revs
        .iter()
        .find(|r| r.metadata.name.is_some() && r.metadata.name == current_name)
        .cloned()
        .unwrap_or_else(|| update.clone());
    Ok((current, update, collision_count))
}

/// Creates the claims of ordinal `o`, then its pod from revision `rev`.
async fn create_pod(
    ctx: &Ctx,
    set: &StatefulSet,
    oref: &OwnerReference,
    rev: &ControllerRevision,
    o: i32,
) -> Result<(), Error> {
    let ns = set.metadata.namespace.as_deref().unwrap_or("");
    let set_name = set.metadata.name.as_deref().unwrap_or("");
    let pod_name = identity::pod_name(set_name, o);
    let template: PodTemplateSpec = rev
        .data
        .as_ref()
        .and_then(|d| identity::template_of(&d.0))
        .or_else(|| set.spec.as_ref().map(|s| s.template.clone()))
        .unwrap_or_default();
    let claims = Api::<PersistentVolumeClaim>::namespaced(ctx.client.clone(), ns);
    let delete_with_set = retention(set).0 == "Delete";
    for mut claim in identity::claims(set, o) {
        let claim_name = claim.metadata.name.clone().unwrap_or_default();
        if claims.get_opt(&claim_name).await?.is_some() {
            continue;
        }
        if delete_with_set {
            claim.metadata.owner_references = Some(vec![oref.clone()]);
        }
        let what = format!("Claim {claim_name} for Pod {pod_name} in StatefulSet {set_name}");
        match claims.create(&PostParams::default(), &claim).await {
            Ok(_) => ctx.recorder.event(set, NORMAL, "SuccessfulCreate", format!("create {what} successful")),
            Err(e) if api_code(&e) == Some(409) => {}
            Err(e) => {
                ctx.recorder.event(set, WARNING, "FailedCreate", format!("create {what} failed error: {}", msg(&e)));
                return Err(e.into());
            }
        }
    }
    let pod = identity::new_pod(set, &template, oref, o, rev.metadata.name.as_deref().unwrap_or(""));
    let what = format!("Pod {pod_name} in StatefulSet {set_name}");
    match Api::<Pod>::namespaced(ctx.client.clone(), ns).create(&PostParams::default(), &pod).await {
        Ok(_) => {
            ctx.recorder.event(set, NORMAL, "SuccessfulCreate", format!("create {what} successful"));
            Ok(())
        }
        // Our read was stale: the next sync sees it.
        Err(e) if api_code(&e) == Some(409) => Ok(()),
        Err(e) if runtime::is_namespace_gone(&e) => Ok(()),
        Err(e) => {
            ctx.recorder.event(set, WARNING, "FailedCreate", format!("create {what} failed error: {}", msg(&e)));
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

/// `(whenDeleted, whenScaled)`, `Retain` by default.
fn retention(set: &StatefulSet) -> (String, String) {
    let p = set.spec.as_ref().and_then(|s| s.persistent_volume_claim_retention_policy.as_ref());
    let get = |v: Option<&String>| v.cloned().unwrap_or_else(|| "Retain".into());
    (get(p.and_then(|p| p.when_deleted.as_ref())), get(p.and_then(|p| p.when_scaled.as_ref())))
}

/// With `whenScaled: Delete`, makes the condemned pod own its claims so
/// they go with it (upstream `updateClaimOwnerRefForSetAndPod`).
async fn retain_on_scale_down(ctx: &Ctx, set: &StatefulSet, pod: &Pod, o: i32) -> Result<(), Error> {
    if retention(set).1 != "Delete" {
        return Ok(());
    }
    let ns = set.metadata.namespace.as_deref().unwrap_or("");
    let api = Api::<PersistentVolumeClaim>::namespaced(ctx.client.clone(), ns);
    let pod_ref = OwnerReference {
        api_version: "v1".into(),
        kind: "Pod".into(),
        name: pod.metadata.name.clone().unwrap_or_default(),
        uid: pod.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    let set_uid = set.metadata.uid.as_deref().unwrap_or("");
    for c in identity::claims(set, o) {
        let name = c.metadata.name.unwrap_or_default();
        let Some(mut live) = api.get_opt(&name).await? else { continue };
        let refs = live.metadata.owner_references.get_or_insert_with(Vec::new);
        if refs.iter().any(|r| r.uid == pod_ref.uid) {
            continue;
        }
        // A scaled-down claim belongs to its pod only (upstream scrubs the set's ref).
        refs.retain(|r| r.uid != set_uid);
        refs.push(pod_ref.clone());
        api.replace(&name, &PostParams::default(), &live).await?;
    }
    Ok(())
}

async fn delete_pod(ctx: &Ctx, set: &StatefulSet, pod: &str) -> Result<(), Error> {
    let ns = set.metadata.namespace.as_deref().unwrap_or("");
    let set_name = set.metadata.name.as_deref().unwrap_or("");
    let what = format!("Pod {pod} in StatefulSet {set_name}");
    match Api::<Pod>::namespaced(ctx.client.clone(), ns).delete(pod, &DeleteParams::default()).await {
        Ok(_) => {
            ctx.recorder.event(set, NORMAL, "SuccessfulDelete", format!("delete {what} successful"));
            Ok(())
        }
        Err(e) if api_code(&e) == Some(404) => Ok(()),
        Err(e) => {
            ctx.recorder.event(set, WARNING, "FailedDelete", format!("delete {what} failed error: {}", msg(&e)));
            Err(e.into())
        }
    }
}

/// Zero counters are omitted on the wire (upstream's `omitempty`).
fn normalized(mut s: StatefulSetStatus) -> StatefulSetStatus {
    for f in [&mut s.ready_replicas, &mut s.available_replicas, &mut s.current_replicas, &mut s.updated_replicas] {
        if *f == Some(0) {
            *f = None;
        }
    }
    if s.conditions.as_ref().is_some_and(Vec::is_empty) {
        s.conditions = None;
    }
    s
}

/// Writes `new` unless unchanged (one retry on a fresh read, as upstream's
/// `updateStatefulSetStatus`).
async fn write_status(ctx: &Ctx, set: &StatefulSet, new: StatefulSetStatus) -> Result<(), Error> {
    let new = normalized(new);
    if normalized(set.status.clone().unwrap_or_default()) == new {
        return Ok(());
    }
    let ns = set.metadata.namespace.as_deref().unwrap_or("");
    let name = set.metadata.name.as_deref().unwrap_or("");
    let api = Api::<StatefulSet>::namespaced(ctx.client.clone(), ns);
    let mut target = StatefulSet { status: Some(new.clone()), ..set.clone() };
    for attempt in 0..2 {
        match api.replace_status(name, &PostParams::default(), &target).await {
            Ok(_) => return Ok(()),
            Err(e) if runtime::is_not_found(&e) => return Ok(()),
            Err(e) if attempt == 1 => return Err(e.into()),
            Err(_) => {
                let Some(fresh) = api.get_opt(name).await? else { return Ok(()) };
                if fresh.metadata.uid != set.metadata.uid {
                    return Ok(());
                }
                target = StatefulSet { status: Some(new.clone()), ..fresh };
            }
        }
    }
    Ok(())
}

/// Upstream `truncateHistory`: keeps `revisionHistoryLimit` revisions
/// besides the live ones (current, update, any a pod is on).
async fn truncate_history(
    ctx: &Ctx,
    set: &StatefulSet,
    oref: &OwnerReference,
    pods: &[Pod],
    status: &StatefulSetStatus,
) -> Result<(), Error> {
    let ns = set.metadata.namespace.as_deref().unwrap_or("");
    let limit = set.spec.as_ref().and_then(|s| s.revision_history_limit).unwrap_or(DEFAULT_HISTORY_LIMIT).max(0);
    let mut live: HashSet<String> = pods.iter().map(|p| identity::pod_revision(p).to_string()).collect();
    live.extend(status.current_revision.clone());
    live.extend(status.update_revision.clone());
    let mut revs: Vec<ControllerRevision> = Api::<ControllerRevision>::namespaced(ctx.reader.clone(), ns)
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|r| adoption::controller_of(r.metadata.owner_references.as_ref()).is_some_and(|c| c.uid == oref.uid))
        .filter(|r| !live.contains(r.metadata.name.as_deref().unwrap_or("")))
        .collect();
    history::sort(&mut revs);
    let excess = revs.len().saturating_sub(limit as usize);
    let api = Api::<ControllerRevision>::namespaced(ctx.client.clone(), ns);
    for r in revs.iter().take(excess) {
        match api.delete(r.metadata.name.as_deref().unwrap_or(""), &DeleteParams::default()).await {
            Ok(_) => {}
            Err(e) if api_code(&e) == Some(404) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
