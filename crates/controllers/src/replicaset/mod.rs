//! The ReplicaSet and ReplicationController controllers (upstream
//! `pkg/controller/replicaset`; upstream's `pkg/controller/replication`
//! runs the same logic over ReplicationControllers converted to
//! ReplicaSets, and so does this module: [`Workload`]).
//!
//! One sync of an owner (a ReplicaSet or ReplicationController), keyed by
//! `namespace/name`:
//! 1. its namespace's active pods ([`status::is_pod_active`]) are claimed
//!    ([`adoption`]): orphans matching the selector adopted, owned pods no
//!    longer matching released;
//! 2. unless the owner is being deleted, or pods it created or deleted
//!    have not all been seen yet ([`crate::expectations`], keyed by the
//!    owner's uid), pods are created or deleted to reach `spec.replicas`
//!    ([`manage`], deletion order [`ranking`]);
//! 3. the status is written when it changed ([`status`]), with
//!    `observedGeneration` = the owner's generation; with
//!    `minReadySeconds`, the owner is looked at again once ready pods
//!    should have become available.
//!
//! The controller keeps its own pod informer: its events lower the
//! expectations (a new pod of an owner = one creation seen; a pod of an
//! owner being deleted or gone = one deletion seen) and trigger syncs of
//! the pod's controller (and of the one it just left, [`informer`]), or,
//! for an orphan, of every owner whose selector matches it.
//!
//! Reads go through the manager's informers; writes, and the few live
//! reads upstream makes (the adoption recheck, a fresh owner after a
//! failed status write), go through the controller's own ServiceAccount.
//! ReplicationController events come from `replication-controller`, as
//! upstream records them.

pub mod adoption;
pub mod informer;
pub mod manage;
pub mod ranking;
pub mod status;

use std::collections::HashSet;
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use futures::TryStreamExt;
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec, ReplicaSetStatus};
use k8s_openapi::api::core::v1::{
    Pod, ReplicationController, ReplicationControllerCondition, ReplicationControllerStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector as MetaSelector, OwnerReference};
use kube::api::{Api, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::Resource;
use rkube_apimachinery::selector::labels::LabelSelector;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::events::Recorder;
use crate::expectations::Expectations;
use crate::runtime::{self, Backoff, Ctx, Error, HasBackoff, Stop};
use adoption::{Claim, Owner};
use manage::Owned;

/// The ReplicaSet controller's name (`--controllers`), also its log component.
pub const NAME: &str = "replicaset-controller";
/// Its older name.
pub const ALIAS: &str = "replicaset";
/// The kube-system ServiceAccount it runs as.
pub const SERVICE_ACCOUNT: &str = "replicaset-controller";

/// The ReplicationController controller's name.
pub const RC_NAME: &str = "replicationcontroller-controller";
/// Its older name.
pub const RC_ALIAS: &str = "replicationcontroller";
/// The kube-system ServiceAccount it runs as.
pub const RC_SERVICE_ACCOUNT: &str = "replication-controller";
/// The event source of the ReplicationController controller (upstream
/// records its events as `replication-controller`).
pub const RC_EVENT_COMPONENT: &str = "replication-controller";

/// An owner kind the controller manages, seen as a ReplicaSet (upstream's
/// `replication/conversion.go` adapter for ReplicationControllers).
pub trait Workload:
    Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
    + Clone
    + DeserializeOwned
    + Serialize
    + Debug
    + Send
    + Sync
    + 'static
{
    /// The object as a ReplicaSet (metadata, spec and status carried over).
    fn as_replica_set(&self) -> ReplicaSet;
    /// A copy with `status` (converted back).
    fn with_status(&self, status: ReplicaSetStatus) -> Self;
}

impl Workload for ReplicaSet {
    fn as_replica_set(&self) -> ReplicaSet {
        self.clone()
    }
    fn with_status(&self, status: ReplicaSetStatus) -> Self {
        ReplicaSet { status: Some(status), ..self.clone() }
    }
}

impl Workload for ReplicationController {
    fn as_replica_set(&self) -> ReplicaSet {
        let spec = self.spec.clone().unwrap_or_default();
        let status = self.status.clone().map(|s| ReplicaSetStatus {
            replicas: s.replicas,
            fully_labeled_replicas: s.fully_labeled_replicas,
            ready_replicas: s.ready_replicas,
            available_replicas: s.available_replicas,
            observed_generation: s.observed_generation,
            conditions: s.conditions.map(|cs| {
                cs.into_iter()
                    .map(|c| k8s_openapi::api::apps::v1::ReplicaSetCondition {
                        type_: c.type_,
                        status: c.status,
                        reason: c.reason,
                        message: c.message,
                        last_transition_time: c.last_transition_time,
                    })
                    .collect()
            }),
            terminating_replicas: None,
        });
        ReplicaSet {
            metadata: self.metadata.clone(),
            spec: Some(ReplicaSetSpec {
                replicas: spec.replicas,
                min_ready_seconds: spec.min_ready_seconds,
                selector: MetaSelector { match_labels: spec.selector, match_expressions: None },
                template: spec.template,
            }),
            status,
        }
    }
    fn with_status(&self, s: ReplicaSetStatus) -> Self {
        let status = ReplicationControllerStatus {
            replicas: s.replicas,
            fully_labeled_replicas: s.fully_labeled_replicas,
            ready_replicas: s.ready_replicas,
            available_replicas: s.available_replicas,
            observed_generation: s.observed_generation,
            conditions: s.conditions.map(|cs| {
                cs.into_iter()
                    .map(|c| ReplicationControllerCondition {
                        type_: c.type_,
                        status: c.status,
                        reason: c.reason,
                        message: c.message,
                        last_transition_time: c.last_transition_time,
                    })
                    .collect()
            }),
        };
        ReplicationController { status: Some(status), ..self.clone() }
    }
}

/// The selector of `rs` as a matcher (upstream `LabelSelectorAsSelector`).
pub fn selector_of(rs: &ReplicaSet) -> Result<LabelSelector, String> {
    let sel = rs.spec.as_ref().map(|s| &s.selector);
    let v = serde_json::to_value(sel).map_err(|e| e.to_string())?;
    LabelSelector::from_label_selector_json(&v)
}

/// The owners of a namespace, as ReplicaSets (from the owner informer).
type OwnersIn = Box<dyn Fn(&str) -> Vec<ReplicaSet> + Send + Sync>;

/// What a running controller shares between its pod informer and syncs.
pub struct State {
    ctx: Arc<Ctx>,
    kind: &'static str,
    pods: Store<Pod>,
    /// The pod store's initial sync, awaited by every reconcile.
    pods_ready: runtime::StoreReady,
    owners: OwnersIn,
    expectations: Expectations,
    recorder: Recorder,
    tracker: informer::PodTracker,
}

impl HasBackoff for State {
    fn backoff(&self) -> &Backoff {
        &self.ctx.backoff
    }
    fn name(&self) -> &'static str {
        self.ctx.name
    }
}

impl State {
    /// The uid of the pod's controller if it is of our kind.
    fn controller_uid(&self, pod: &Pod) -> Option<String> {
        self.tracker.controller_uid(pod)
    }

    /// The owners to sync after a pod changed (upstream's pod handlers).
    fn owners_of<K: Workload>(&self, pod: &Pod) -> Vec<ObjectRef<K>> {
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let mut out: Vec<ObjectRef<K>> = Vec::new();
        if let Some(previous) = self.tracker.take_previous_controller(pod) {
            out.push(ObjectRef::new(&previous).within(&ns));
        }
        if let Some(c) = adoption::controller_of(pod.metadata.owner_references.as_ref()) {
            if c.kind == self.kind {
                out.push(ObjectRef::new(&c.name).within(&ns));
            }
            return out;
        }
        let empty = Default::default();
        let labels = pod.metadata.labels.as_ref().unwrap_or(&empty);
        out.extend(
            (self.owners)(&ns)
                .into_iter()
                .filter(|rs| selector_of(rs).is_ok_and(|s| !s.is_empty() && s.matches(labels)))
                .map(|rs| ObjectRef::new(rs.metadata.name.as_deref().unwrap_or("")).within(&ns)),
        );
        out
    }
}

/// Runs the ReplicaSet controller until `stop`.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    let recorder = ctx.recorder.clone();
    run_kind::<ReplicaSet>(ctx, recorder, stop).await
}

/// Runs the ReplicationController controller until `stop`.
pub async fn run_rc(ctx: Arc<Ctx>, stop: Stop) {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default();
    let recorder = Recorder::new(ctx.client.clone(), RC_EVENT_COMPONENT, &host);
    run_kind::<ReplicationController>(ctx, recorder, stop).await
}

async fn run_kind<K: Workload>(ctx: Arc<Ctx>, recorder: Recorder, stop: Stop) {
    let name = ctx.name;
    let controller = Controller::new(Api::<K>::all(ctx.reader.clone()), watcher::Config::default());
    let owner_store = controller.store();
    let (pods, writer) = reflector::store::<Pod>();
    let pods_ready = runtime::StoreReady::new(&pods);
    let state = Arc::new(State {
        ctx: ctx.clone(),
        kind: kind_name::<K>(),
        pods,
        pods_ready,
        owners: Box::new(move |ns: &str| {
            owner_store
                .state()
                .iter()
                .filter(|o| o.meta().namespace.as_deref() == Some(ns))
                .map(|o| o.as_replica_set())
                .collect()
        }),
        expectations: Expectations::new(),
        recorder,
        tracker: informer::PodTracker::new(kind_name::<K>()),
    });
    let observer = state.clone();
    let pod_events = watcher::watcher(Api::<Pod>::all(ctx.reader.clone()), watcher::Config::default())
        .default_backoff()
        .reflect(writer)
        .inspect_ok(move |ev| observer.tracker.observe(ev, &observer.expectations))
        .touched_objects();
    let mapper = state.clone();
    let controller = controller
        .watches_stream(pod_events, move |pod: Pod| mapper.owners_of::<K>(&pod))
        .graceful_shutdown_on(runtime::stopped(stop));
    runtime::drive(name, controller.run(reconcile::<K>, runtime::error_policy, state)).await;
}

fn kind_name<K: Workload>() -> &'static str {
    match K::kind(&()).as_ref() {
        "ReplicationController" => "ReplicationController",
        _ => "ReplicaSet",
    }
}

async fn reconcile<K: Workload>(obj: Arc<K>, st: Arc<State>) -> Result<Action, Error> {
    let key = runtime::key_of(obj.as_ref());
    tracing::debug!(component = st.ctx.name, owner = %key, "sync start");
    // Upstream waits for its informers to sync: acting on a pod cache not
    // yet filled would create every replica again. (Not the store's own
    // `wait_until_ready`: see `runtime::StoreReady`.)
    if !st.pods_ready.wait().await {
        return Err(Error::Other("the pod informer stopped".into()));
    }
    let rs = obj.as_replica_set();
    let next = sync(&st, obj.as_ref(), &rs).await?;
    tracing::debug!(component = st.ctx.name, owner = %key, "sync done");
    st.ctx.done(&key, next.map_or_else(Action::await_change, Action::requeue))
}

/// One sync (see the module docs); returns when to look again, if earlier
/// than the next event.
async fn sync<K: Workload>(st: &State, obj: &K, rs: &ReplicaSet) -> Result<Option<Duration>, Error> {
    let ns = rs.metadata.namespace.clone().unwrap_or_default();
    let name = rs.metadata.name.clone().unwrap_or_default();
    let uid = rs.metadata.uid.clone().unwrap_or_default();
    let needs_sync = st.expectations.satisfied(&uid);
    let selector = match selector_of(rs) {
        Ok(s) => s,
        Err(e) => {
            // Upstream logs and gives up: validation keeps such selectors out.
            tracing::warn!(component = st.ctx.name, owner = %format!("{ns}/{name}"), error = %e, "invalid selector");
            return Ok(None);
        }
    };
    let all: Vec<Arc<Pod>> = st
        .pods
        .state()
        .into_iter()
        .filter(|p| p.metadata.namespace.as_deref() == Some(ns.as_str()) && status::is_pod_active(p))
        .collect();
    let owner_ref = OwnerReference {
        api_version: K::api_version(&()).into_owned(),
        kind: K::kind(&()).into_owned(),
        name: name.clone(),
        uid: uid.clone(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    let owned = claim(st, obj, rs, &selector, &owner_ref, &all).await?;
    let owned_refs: Vec<&Pod> = owned.iter().collect();
    let wanted = rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1).max(0) as usize;
    let mut manage_err = None;
    if needs_sync && rs.metadata.deletion_timestamp.is_none() {
        let target = Owned {
            namespace: ns.clone(),
            name: name.clone(),
            template: rs.spec.as_ref().and_then(|s| s.template.clone()),
            owner_ref,
            reference: crate::events::reference(obj),
        };
        if owned.len() < wanted {
            manage_err = manage::create_pods(st, &target, wanted - owned.len(), &uid).await;
        } else if owned.len() > wanted {
            let related = related_pods(st, rs, &all);
            let related: Vec<&Pod> = related.iter().map(|p| p.as_ref()).collect();
            manage_err = manage::delete_pods(st, &target, &owned_refs, &related, owned.len() - wanted, &uid).await;
        }
    }
    let now = jiff::Timestamp::now();
    let new_status = status::calculate(rs, &owned_refs, manage_err.as_deref(), now);
    let written = write_status(st, obj, rs, new_status).await?;
    if let Some(e) = manage_err {
        return Err(Error::Other(e));
    }
    let min_ready = rs.spec.as_ref().and_then(|s| s.min_ready_seconds).unwrap_or(0);
    let ready = written.ready_replicas.unwrap_or(0);
    let available = written.available_replicas.unwrap_or(0);
    if min_ready > 0 && ready as usize == wanted && available as usize != wanted {
        return Ok(Some(Duration::from_secs(min_ready as u64)));
    }
    Ok(None)
}

/// Upstream ranks by the pods of every ReplicaSet sharing this one's
/// controller (a Deployment's); a ReplicaSet without a controller ranks
/// nothing (all ranks 0).
/// Active pods controlled by any owner of our kind sharing `rs`'s controller.
fn related_pods(st: &State, rs: &ReplicaSet, all: &[Arc<Pod>]) -> Vec<Arc<Pod>> {
    let Some(ctrl) = adoption::controller_of(rs.metadata.owner_references.as_ref()) else { return Vec::new() };
    let siblings: HashSet<String> = (st.owners)(rs.metadata.namespace.as_deref().unwrap_or(""))
        .into_iter()
        .filter(|o| adoption::controller_of(o.metadata.owner_references.as_ref()).is_some_and(|c| c.uid == ctrl.uid))
        .filter_map(|o| o.metadata.uid)
        .collect();
    all.iter().filter(|p| st.controller_uid(p).is_some_and(|u| siblings.contains(&u))).cloned().collect()
}

/// Claims the namespace's active pods (see [`adoption`]); returns the
/// pods the owner controls afterwards.
async fn claim<K: Workload>(
    st: &State,
    obj: &K,
    rs: &ReplicaSet,
    selector: &LabelSelector,
    owner_ref: &OwnerReference,
    all: &[Arc<Pod>],
) -> Result<Vec<Pod>, Error> {
    let ns = rs.metadata.namespace.as_deref().unwrap_or("");
    let owner =
        Owner { uid: &owner_ref.uid, namespace: ns, deleting: rs.metadata.deletion_timestamp.is_some(), selector };
    let pods = Api::<Pod>::namespaced(st.ctx.client.clone(), ns);
    let mut owned = Vec::new();
    let mut rechecked = false;
    let mut errors = Vec::new();
    for p in all {
        let pod_name = p.metadata.name.as_deref().unwrap_or("");
        let pod_uid = p.metadata.uid.as_deref().unwrap_or("");
        match adoption::decide(&owner, p) {
            Claim::Keep => owned.push(p.as_ref().clone()),
            Claim::Ignore => {}
            Claim::Release => {
                tracing::info!(component = st.ctx.name, owner = %runtime::key_of(obj), pod = pod_name, "releasing pod");
                if let Err(e) = adoption::release(&pods, pod_name, pod_uid, &owner_ref.uid).await {
                    errors.push(e.to_string());
                }
            }
            Claim::Adopt => {
                if !rechecked {
                    recheck_deletion(st, obj).await?;
                    rechecked = true;
                }
                tracing::info!(component = st.ctx.name, owner = %runtime::key_of(obj), pod = pod_name, "adopting pod");
                match adoption::adopt(&pods, pod_name, pod_uid, owner_ref).await {
                    Ok(true) => {
                        let mut adopted = p.as_ref().clone();
                        adopted.metadata.owner_references.get_or_insert_with(Vec::new).push(owner_ref.clone());
                        owned.push(adopted);
                    }
                    Ok(false) => {}
                    Err(e) => errors.push(e.to_string()),
                }
            }
        }
    }
    if !errors.is_empty() {
        return Err(Error::Other(errors.join(", ")));
    }
    Ok(owned)
}

/// Upstream `RecheckDeletionTimestamp`: the live owner must be the same
/// object and not being deleted before it adopts anything.
async fn recheck_deletion<K: Workload>(st: &State, obj: &K) -> Result<(), Error> {
    let m = obj.meta();
    let ns = m.namespace.as_deref().unwrap_or("");
    let name = m.name.as_deref().unwrap_or("");
    let fresh = Api::<K>::namespaced(st.ctx.client.clone(), ns).get(name).await?;
    if fresh.meta().uid != m.uid {
        return Err(Error::Other(format!(
            "original {} {ns}/{name} is gone: got uid {}, wanted {}",
            K::kind(&()),
            fresh.meta().uid.as_deref().unwrap_or(""),
            m.uid.as_deref().unwrap_or("")
        )));
    }
    if fresh.meta().deletion_timestamp.is_some() {
        return Err(Error::Other(format!("{} {ns}/{name} has just been deleted", K::kind(&()))));
    }
    Ok(())
}

/// Zero counters are omitted on the wire (upstream's `omitempty`).
fn normalized(mut s: ReplicaSetStatus) -> ReplicaSetStatus {
    for f in [&mut s.fully_labeled_replicas, &mut s.ready_replicas, &mut s.available_replicas] {
        if *f == Some(0) {
            *f = None;
        }
    }
    if s.observed_generation == Some(0) {
        s.observed_generation = None;
    }
    if s.conditions.as_ref().is_some_and(Vec::is_empty) {
        s.conditions = None;
    }
    s
}

/// Writes `new` (with observedGeneration = the owner's generation) unless
/// nothing changed (upstream `updateReplicaSetStatus`: one retry with a
/// fresh read on failure). Returns the status now in effect.
async fn write_status<K: Workload>(
    st: &State,
    obj: &K,
    rs: &ReplicaSet,
    mut new: ReplicaSetStatus,
) -> Result<ReplicaSetStatus, Error> {
    new.observed_generation = rs.metadata.generation;
    let new = normalized(new);
    if normalized(rs.status.clone().unwrap_or_default()) == new {
        return Ok(new);
    }
    let m = obj.meta();
    let (ns, name) = (m.namespace.as_deref().unwrap_or(""), m.name.as_deref().unwrap_or(""));
    let api = Api::<K>::namespaced(st.ctx.client.clone(), ns);
    let mut target = obj.with_status(new.clone());
    for attempt in 0..2 {
        match api.replace_status(name, &PostParams::default(), &target).await {
            Ok(_) => return Ok(new),
            Err(e) if runtime::is_not_found(&e) => return Ok(new),
            Err(e) if attempt == 1 => return Err(e.into()),
            Err(_) => {
                let Some(fresh) = Api::<K>::namespaced(st.ctx.client.clone(), ns).get_opt(name).await? else {
                    return Ok(new);
                };
                if fresh.meta().uid != m.uid {
                    return Ok(new);
                }
                target = fresh.with_status(new.clone());
            }
        }
    }
    Ok(new)
}
