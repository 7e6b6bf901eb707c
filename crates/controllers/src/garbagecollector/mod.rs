//! The garbage collector (upstream `pkg/controller/garbagecollector`).
//!
//! - Monitors: a metadata-only watch of every resource discovery lists
//!   (preferred versions) with the `list`, `watch` and `delete` verbs,
//!   except events (upstream's default ignored resources); discovery is
//!   re-read every 30 s so new kinds (CRDs) are picked up.
//! - The graph builder turns every change into [`graph::Event`]s and keeps
//!   the ownerReferences graph ([`graph`]), queuing work.
//! - attemptToDelete workers (20, upstream `--concurrent-gc-syncs`) verify
//!   owners by uid with live GETs: an object whose owners are all gone is
//!   deleted in the background (or as its own finalizers say); one with a
//!   live owner loses only the dangling references; an owner being deleted
//!   in the foreground waits for its `blockOwnerDeletion` dependents and
//!   then loses `foregroundDeletion` ([`worker`]).
//! - attemptToOrphan workers remove the owner's references from its
//!   dependents, then the `orphan` finalizer.
//! - Scope rules: a namespaced owner is looked up in the dependent's
//!   namespace (so a reference across namespaces is dangling and reported
//!   with an `OwnerRefInvalidNamespace` event); a cluster-scoped object
//!   with a namespaced owner is reported and left alone.

pub mod decide;
pub mod discovery;
pub mod graph;
pub mod queue;
pub mod worker;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, DynamicObject};
use kube::core::PartialObjectMeta;
use kube::discovery::{ApiResource, Scope};
use kube::runtime::{watcher, WatchStreamExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::events::WARNING;
use crate::runtime::{Ctx, Stop};
use graph::{Event, Graph, Identity, ObjectMeta};
use queue::WorkQueue;
use worker::{Failure, Resolver, Shared};

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "garbage-collector-controller";
/// The older name `--controllers` also accepts.
pub const ALIAS: &str = "garbagecollector";
/// The kube-system ServiceAccount it runs as.
pub const SERVICE_ACCOUNT: &str = "generic-garbage-collector";

/// Workers per queue (upstream `--concurrent-gc-syncs`, 20).
pub const WORKERS: usize = 20;
/// How often discovery is re-read (upstream: 30 s).
pub const DISCOVERY_PERIOD: Duration = Duration::from_secs(30);
/// Resources never monitored (upstream `DefaultIgnoredResources`).
pub const IGNORED: [(&str, &str); 2] = [("", "events"), ("events.k8s.io", "events")];

/// Runs until `stop`.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    tracing::info!(component = NAME, "starting controller");
    let (tx, rx) = mpsc::unbounded_channel();
    let shared = Arc::new(Shared {
        ctx: ctx.clone(),
        graph: Arc::new(Mutex::new(Graph::default())),
        resolver: Arc::new(RwLock::new(Resolver::new())),
        absent: Mutex::new(HashSet::new()),
        events: tx.clone(),
        to_delete: WorkQueue::default(),
        to_orphan: WorkQueue::default(),
    });
    let mut tasks: Vec<JoinHandle<()>> = Vec::new();
    tasks.push(tokio::spawn(build_graph(shared.clone(), rx)));
    for _ in 0..WORKERS {
        let s = shared.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                let uid = s.to_delete.get().await;
                let r = s.attempt_to_delete(&uid).await;
                finish(&s.to_delete, &uid, r, "attemptToDelete");
            }
        }));
        let s = shared.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                let uid = s.to_orphan.get().await;
                let r = s.attempt_to_orphan(&uid).await;
                finish(&s.to_orphan, &uid, r, "attemptToOrphan");
            }
        }));
    }
    let monitors = monitor_resources(shared.clone(), tx);
    tokio::select! {
        _ = monitors => {}
        _ = crate::runtime::stopped(stop) => {}
    }
    for t in tasks {
        t.abort();
    }
    tracing::info!(component = NAME, "controller stopped");
}

fn finish(q: &WorkQueue, uid: &str, r: Result<(), Failure>, what: &str) {
    match r {
        Ok(()) | Err(Failure::Forget) => q.forget(uid),
        Err(Failure::Retry(e)) => {
            tracing::debug!(component = NAME, %uid, error = %e, "{what} failed; retrying");
            q.add_rate_limited(uid);
        }
    }
    q.done(uid);
}

/// The graph builder: applies events one at a time and hands out work.
async fn build_graph(shared: Arc<Shared>, mut rx: mpsc::UnboundedReceiver<Event>) {
    while let Some(event) = rx.recv().await {
        let work = shared.graph.lock().unwrap_or_else(|e| e.into_inner()).process(event);
        for id in &work.absent {
            shared.mark_absent(&id.uid, &id.namespace);
        }
        for (dep, owner) in work.invalid_namespace {
            shared.ctx.recorder.event_on(
                dep.reference(),
                WARNING,
                "OwnerRefInvalidNamespace",
                format!("ownerRef {owner} does not exist in namespace {:?}", dep.namespace),
            );
        }
        for uid in work.attempt_to_delete {
            shared.to_delete.add(&uid);
        }
        for uid in work.attempt_to_orphan {
            shared.to_orphan.add(&uid);
        }
    }
}

/// The resources to monitor and the resolver of every version's kinds
/// (what discovery could read; failing groups are logged and skipped, as
/// upstream's `GetDeletableResources`).
async fn discover(client: &kube::Client) -> Result<(Vec<ApiResource>, Resolver), kube::Error> {
    let found = discovery::discover(client).await?;
    if let Some(e) = found.error() {
        tracing::warn!(component = NAME, error = %e, "failed to discover some groups");
    }
    let mut resolver = Resolver::new();
    for r in &found.resources {
        let key = (r.resource.api_version.clone(), r.resource.kind.clone());
        resolver.insert(key, (r.resource.clone(), r.caps.scope == Scope::Namespaced));
    }
    let monitored = found
        .preferred()
        .filter(|r| ["list", "watch", "delete"].iter().all(|v| r.caps.supports_operation(v)))
        .filter(|r| !IGNORED.contains(&(r.resource.group.as_str(), r.resource.plural.as_str())))
        .map(|r| r.resource.clone())
        .collect();
    Ok((monitored, resolver))
}

/// Keeps one monitor per deletable resource, re-reading discovery every
/// [`DISCOVERY_PERIOD`]; never returns.
async fn monitor_resources(shared: Arc<Shared>, tx: mpsc::UnboundedSender<Event>) {
    let client = shared.ctx.client.clone();
    let mut monitors: HashMap<String, JoinHandle<()>> = HashMap::new();
    loop {
        match discover(&client).await {
            Ok((resources, resolver)) => {
                *shared.resolver.write().unwrap_or_else(|e| e.into_inner()) = resolver;
                let wanted: HashSet<String> =
                    resources.iter().map(|ar| format!("{}/{}", ar.api_version, ar.plural)).collect();
                monitors.retain(|key, task| {
                    let keep = wanted.contains(key);
                    if !keep {
                        tracing::info!(component = NAME, resource = %key, "stopping monitor");
                        task.abort();
                    }
                    keep
                });
                for ar in resources {
                    let key = format!("{}/{}", ar.api_version, ar.plural);
                    if let std::collections::hash_map::Entry::Vacant(slot) = monitors.entry(key) {
                        tracing::debug!(component = NAME, resource = %slot.key(), "starting monitor");
                        slot.insert(tokio::spawn(monitor(shared.clone(), ar, tx.clone())));
                    }
                }
            }
            // Partial knowledge is still useful: keep what runs, retry later.
            Err(e) => tracing::warn!(component = NAME, error = %e, "discovery failed"),
        }
        tokio::time::sleep(DISCOVERY_PERIOD).await;
    }
}

fn meta_of(ar: &ApiResource, o: &PartialObjectMeta<DynamicObject>) -> ObjectMeta {
    let m = &o.metadata;
    ObjectMeta {
        identity: Identity {
            api_version: ar.api_version.clone(),
            kind: ar.kind.clone(),
            namespace: m.namespace.clone().unwrap_or_default(),
            name: m.name.clone().unwrap_or_default(),
            uid: m.uid.clone().unwrap_or_default(),
        },
        owners: m.owner_references.clone().unwrap_or_default(),
        finalizers: m.finalizers.clone().unwrap_or_default(),
        deleting: m.deletion_timestamp.is_some(),
        resource_version: m.resource_version.clone().unwrap_or_default(),
    }
}

/// One resource's metadata watch feeding the graph. A relist reports the
/// objects that vanished meanwhile as deleted.
async fn monitor(shared: Arc<Shared>, ar: ApiResource, tx: mpsc::UnboundedSender<Event>) {
    // `PartialObjectMeta` makes the watch metadata-only.
    let api: Api<PartialObjectMeta<DynamicObject>> = Api::all_with(shared.ctx.client.clone(), &ar);
    let mut stream = std::pin::pin!(watcher(api, watcher::Config::default()).default_backoff());
    let mut seen: Option<HashSet<String>> = None;
    while let Some(event) = stream.next().await {
        let event = match event {
            Ok(e) => e,
            Err(e) => {
                tracing::debug!(component = NAME, resource = %ar.plural, error = %e, "monitor watch error");
                continue;
            }
        };
        match event {
            watcher::Event::Init => seen = Some(HashSet::new()),
            watcher::Event::InitApply(o) => {
                let m = meta_of(&ar, &o);
                if let Some(s) = seen.as_mut() {
                    s.insert(m.identity.uid.clone());
                }
                let _ = tx.send(Event::Upsert(m));
            }
            watcher::Event::InitDone => {
                let seen = seen.take().unwrap_or_default();
                let gone: Vec<Identity> = shared
                    .graph
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .observed_of(&ar.api_version, &ar.kind)
                    .into_iter()
                    .filter(|id| !seen.contains(&id.uid))
                    .collect();
                for id in gone {
                    let _ = tx.send(Event::Delete(id));
                }
            }
            watcher::Event::Apply(o) => {
                let _ = tx.send(Event::Upsert(meta_of(&ar, &o)));
            }
            watcher::Event::Delete(o) => {
                let _ = tx.send(Event::Delete(meta_of(&ar, &o).identity));
            }
        }
    }
}
