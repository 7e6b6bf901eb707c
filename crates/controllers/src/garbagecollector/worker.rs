//! The workers (upstream `garbagecollector.go`): attemptToDelete verifies
//! an object's owners with live GETs and deletes, releases or keeps it;
//! for a foreground owner it waits for the blocking dependents and then
//! removes `foregroundDeletion`. attemptToOrphan removes the owner's
//! references from every dependent, then the `orphan` finalizer.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, Preconditions};
use kube::core::PartialObjectMeta;
use kube::discovery::ApiResource;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::decide::{decide, Decision, OwnerState, Propagation};
use super::graph::{Event, Graph, Identity, Node, FINALIZER_FOREGROUND, FINALIZER_ORPHAN};
use super::queue::WorkQueue;
use super::NAME;
use crate::runtime::{is_conflict, is_not_found, Ctx};

/// An object as the metadata API returns it (reads are metadata-only).
type Meta = PartialObjectMeta<DynamicObject>;

/// Resolves `apiVersion` + `kind` to a resource and whether it is namespaced.
pub type Resolver = HashMap<(String, String), (ApiResource, bool)>;

/// Absent owners remembered (upstream keeps an LRU of 500; this set is
/// cleared when it grows past the bound).
const ABSENT_CACHE_MAX: usize = 10_000;

/// Dependents orphaned at once.
const ORPHAN_CONCURRENCY: usize = 32;

/// What the workers share.
pub struct Shared {
    /// The controller's context (client, recorder).
    pub ctx: Arc<Ctx>,
    /// The graph.
    pub graph: Arc<Mutex<Graph>>,
    /// Kinds to resources (refreshed with discovery).
    pub resolver: Arc<RwLock<Resolver>>,
    /// `(uid, namespace)` of owners known absent.
    pub absent: Mutex<HashSet<(String, String)>>,
    /// Sends virtual delete events to the graph builder.
    pub events: mpsc::UnboundedSender<Event>,
    /// attemptToDelete.
    pub to_delete: WorkQueue,
    /// attemptToOrphan.
    pub to_orphan: WorkQueue,
}

/// An observed node's metadata as the monitor last saw it.
fn observed_meta(n: &Node) -> Meta {
    PartialObjectMeta {
        types: None,
        metadata: kube::api::ObjectMeta {
            name: Some(n.identity.name.clone()),
            namespace: (!n.identity.namespace.is_empty()).then(|| n.identity.namespace.clone()),
            uid: Some(n.identity.uid.clone()),
            resource_version: Some(n.resource_version.clone()),
            owner_references: Some(n.owners.clone()),
            finalizers: Some(n.finalizers.clone()),
            deletion_timestamp: n.being_deleted.then(|| Time(jiff::Timestamp::now())),
            ..Default::default()
        },
        _phantom: std::marker::PhantomData,
    }
}

/// How an attemptToDelete pass ended.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    /// Handled.
    Done,
    /// The object is absent: a virtual delete went to the graph builder.
    VirtualDeleteSent,
}

/// Why an item is dropped or retried.
#[derive(Debug)]
pub enum Failure {
    /// Retry with back-off.
    Retry(String),
    /// Will not resolve by retrying (upstream `namespacedOwnerOfClusterScopedObjectErr`).
    Forget,
}

impl From<kube::Error> for Failure {
    fn from(e: kube::Error) -> Self {
        Failure::Retry(e.to_string())
    }
}

impl Shared {
    fn resolve(&self, api_version: &str, kind: &str) -> Result<(ApiResource, bool), Failure> {
        self.resolver
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(api_version.to_string(), kind.to_string()))
            .cloned()
            .ok_or_else(|| Failure::Retry(format!("unable to get REST mapping for {api_version}/{kind}")))
    }

    fn api(&self, id: &Identity) -> Result<Api<DynamicObject>, Failure> {
        let (ar, namespaced) = self.resolve(&id.api_version, &id.kind)?;
        Ok(if namespaced {
            Api::namespaced_with(self.ctx.client.clone(), &id.namespace, &ar)
        } else {
            Api::all_with(self.ctx.client.clone(), &ar)
        })
    }

    fn node(&self, uid: &str) -> Option<Node> {
        self.graph.lock().unwrap_or_else(|e| e.into_inner()).node(uid)
    }

    fn is_absent(&self, uid: &str, namespace: &str) -> bool {
        let a = self.absent.lock().unwrap_or_else(|e| e.into_inner());
        a.contains(&(uid.to_string(), String::new())) || a.contains(&(uid.to_string(), namespace.to_string()))
    }

    /// Remembers an absent owner.
    pub fn mark_absent(&self, uid: &str, namespace: &str) {
        let mut a = self.absent.lock().unwrap_or_else(|e| e.into_inner());
        if a.len() >= ABSENT_CACHE_MAX {
            a.clear();
        }
        a.insert((uid.to_string(), namespace.to_string()));
    }

    /// One attemptToDelete pass over `uid`.
    /// A virtual node is looked at again (with back-off) until a monitor
    /// observes it, as upstream (issue 56121: objects added and removed
    /// while a watch re-establishes).
    pub async fn attempt_to_delete(&self, uid: &str) -> Result<(), Failure> {
        if self.attempt_to_delete_item(uid).await? == Outcome::VirtualDeleteSent {
            // The graph builder takes it from here.
            return Ok(());
        }
        match self.node(uid) {
            Some(n) if n.virtual_ => Err(Failure::Retry(format!("{} has not been observed yet", n.identity))),
            _ => Ok(()),
        }
    }

    async fn attempt_to_delete_item(&self, uid: &str) -> Result<Outcome, Failure> {
        let Some(item) = self.node(uid) else { return Ok(Outcome::Done) };
        if !item.virtual_ && item.being_deleted && !item.deleting_dependents {
            return Ok(Outcome::Done);
        }
        let api = self.api(&item.identity)?;
        // Fast path: act on the state the monitor observed, every write
        // pinned to its resourceVersion (as safe as upstream's live GET: a
        // changed object makes the write fail with 409, and then it is read).
        if !item.virtual_ && !item.deleting_dependents && !item.resource_version.is_empty() {
            match self.act(&item, &api, &observed_meta(&item), true).await {
                Err(Failure::Retry(e)) if e.starts_with("409") => {}
                other => return other,
            }
        }
        let latest = match api.get_metadata_opt(&item.identity.name).await? {
            Some(o) if o.metadata.uid.as_deref() == Some(uid) => o,
            _ => {
                let _ = self.events.send(Event::VirtualDelete(item.identity.clone()));
                return Ok(Outcome::VirtualDeleteSent);
            }
        };
        self.act(&item, &api, &latest, false).await
    }

    /// attemptToDelete's decision on `latest` and its write; `pinned`:
    /// `latest` comes from the graph, so a delete is pinned to its
    /// resourceVersion too.
    async fn act(
        &self,
        item: &Node,
        api: &Api<DynamicObject>,
        latest: &Meta,
        pinned: bool,
    ) -> Result<Outcome, Failure> {
        let finalizers = latest.metadata.finalizers.clone().unwrap_or_default();
        if item.deleting_dependents
            || (latest.metadata.deletion_timestamp.is_some() && finalizers.iter().any(|f| f == FINALIZER_FOREGROUND))
        {
            return self.process_deleting_dependents(item, api, latest).await.map(|()| Outcome::Done);
        }
        if latest.metadata.deletion_timestamp.is_some() {
            return Ok(Outcome::Done);
        }
        let refs = latest.metadata.owner_references.clone().unwrap_or_default();
        if refs.is_empty() {
            return Ok(Outcome::Done);
        }
        let mut owners = Vec::new();
        for r in &refs {
            owners.push((r.uid.clone(), self.classify(&item.identity, r).await?));
        }
        let (has_dependents, cycle) = {
            let g = self.graph.lock().unwrap_or_else(|e| e.into_inner());
            let deps: Vec<Node> = item.dependents.iter().filter_map(|d| g.node(d)).collect();
            (!item.dependents.is_empty(), deps.iter().any(|d| d.deleting_dependents))
        };
        match decide(&owners, has_dependents, cycle, &finalizers) {
            Decision::Keep => Ok(Outcome::Done),
            Decision::RemoveReferences(uids) => {
                let kept: Vec<_> = refs.iter().filter(|r| !uids.contains(&r.uid)).collect();
                tracing::info!(component = NAME, object = %item.identity, removed = ?uids, "removing dangling owner references");
                self.patch_meta(api, latest, json!({ "ownerReferences": kept })).await.map(|()| Outcome::Done)
            }
            Decision::Delete { policy, unblock } => {
                if unblock {
                    let unblocked: Vec<Value> = refs
                        .iter()
                        .map(|r| {
                            let mut v = serde_json::to_value(r).unwrap_or_default();
                            if r.block_owner_deletion == Some(true) {
                                v["blockOwnerDeletion"] = json!(false);
                            }
                            v
                        })
                        .collect();
                    self.patch_meta(api, latest, json!({ "ownerReferences": unblocked })).await?;
                }
                tracing::debug!(component = NAME, object = %item.identity, policy = policy.as_str(), "deleting object");
                let rv = pinned.then(|| item.resource_version.clone());
                self.delete(api, &item.identity, policy, rv).await.map(|()| Outcome::Done)
            }
        }
    }

    /// Upstream `isDangling` + `classifyReferences` for one reference.
    async fn classify(
        &self,
        dep: &Identity,
        r: &k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference,
    ) -> Result<OwnerState, Failure> {
        if self.is_absent(&r.uid, &dep.namespace) {
            return Ok(OwnerState::Dangling);
        }
        let (ar, namespaced) = self.resolve(&r.api_version, &r.kind)?;
        if dep.namespace.is_empty() && namespaced {
            // A cluster-scoped object cannot have a namespaced owner; retrying
            // will not help (the graph builder reports it once the owner is observed).
            tracing::debug!(component = NAME, object = %dep, owner = %r.name, "cluster-scoped object refers to a namespaced owner");
            return Err(Failure::Forget);
        }
        let ns = if namespaced { dep.namespace.as_str() } else { "" };
        let api: Api<DynamicObject> = if namespaced {
            Api::namespaced_with(self.ctx.client.clone(), ns, &ar)
        } else {
            Api::all_with(self.ctx.client.clone(), &ar)
        };
        match api.get_metadata_opt(&r.name).await? {
            Some(o) if o.metadata.uid.as_deref() == Some(r.uid.as_str()) => {
                let waiting = o.metadata.deletion_timestamp.is_some()
                    && o.metadata.finalizers.iter().flatten().any(|f| f == FINALIZER_FOREGROUND);
                Ok(if waiting { OwnerState::WaitingForDependents } else { OwnerState::Solid })
            }
            _ => {
                self.mark_absent(&r.uid, ns);
                Ok(OwnerState::Dangling)
            }
        }
    }

    /// Upstream `processDeletingDependentsItem`: with no blocking
    /// dependent left, drop `foregroundDeletion`; otherwise make sure each
    /// blocking dependent not yet being deleted is looked at.
    async fn process_deleting_dependents(
        &self,
        item: &Node,
        api: &Api<DynamicObject>,
        latest: &Meta,
    ) -> Result<(), Failure> {
        let blocking = {
            let mut g = self.graph.lock().unwrap_or_else(|e| e.into_inner());
            g.mark_deleting_dependents(&item.identity.uid);
            g.blocking_dependents(&item.identity.uid)
        };
        if blocking.is_empty() {
            tracing::info!(component = NAME, object = %item.identity, "all blocking dependents are gone; removing foregroundDeletion");
            return self.remove_finalizer(api, latest, FINALIZER_FOREGROUND).await;
        }
        for d in blocking {
            if !d.being_deleted {
                self.to_delete.add(&d.identity.uid);
            }
        }
        Ok(())
    }

    /// One attemptToOrphan pass over owner `uid`.
    pub async fn attempt_to_orphan(&self, uid: &str) -> Result<(), Failure> {
        let Some(owner) = self.node(uid) else { return Ok(()) };
        let dependents: Vec<Node> = {
            let g = self.graph.lock().unwrap_or_else(|e| e.into_inner());
            owner.dependents.iter().filter_map(|d| g.node(d)).collect()
        };
        let errors: Vec<String> = futures::stream::iter(dependents)
            .map(|d| async move { self.remove_owner_reference(&d.identity, uid).await })
            .buffer_unordered(ORPHAN_CONCURRENCY)
            .filter_map(|r| async move { r.err() })
            .collect()
            .await;
        if !errors.is_empty() {
            return Err(Failure::Retry(format!(
                "failed to orphan dependents of {}: {}",
                owner.identity,
                errors.join("; ")
            )));
        }
        let api = self.api(&owner.identity)?;
        match api.get_metadata_opt(&owner.identity.name).await? {
            Some(latest) if latest.metadata.uid.as_deref() == Some(uid) => {
                tracing::info!(component = NAME, object = %owner.identity, "dependents orphaned; removing the orphan finalizer");
                self.remove_finalizer(&api, &latest, FINALIZER_ORPHAN).await
            }
            _ => Ok(()),
        }
    }

    /// Drops every reference to `owner_uid` from `dep` (re-reading it on conflicts).
    async fn remove_owner_reference(&self, dep: &Identity, owner_uid: &str) -> Result<(), String> {
        let api = self.api(dep).map_err(|e| format!("{e:?}"))?;
        for _ in 0..5 {
            let latest = match api.get_metadata_opt(&dep.name).await {
                Ok(Some(o)) if o.metadata.uid.as_deref() == Some(dep.uid.as_str()) => o,
                Ok(_) => return Ok(()),
                Err(e) => return Err(e.to_string()),
            };
            let refs = latest.metadata.owner_references.clone().unwrap_or_default();
            if !refs.iter().any(|r| r.uid == owner_uid) {
                return Ok(());
            }
            let kept: Vec<_> = refs.iter().filter(|r| r.uid != owner_uid).collect();
            match self.patch_meta(&api, &latest, json!({ "ownerReferences": kept })).await {
                Ok(()) => return Ok(()),
                Err(Failure::Retry(e)) if e.contains("409") || e.to_lowercase().contains("conflict") => continue,
                Err(e) => return Err(format!("{e:?}")),
            }
        }
        Err(format!("conflicts while orphaning {dep}"))
    }

    /// Removes `finalizer` from the object (a merge patch pinned to its
    /// uid and resourceVersion, so a concurrent change retries).
    async fn remove_finalizer(&self, api: &Api<DynamicObject>, latest: &Meta, finalizer: &str) -> Result<(), Failure> {
        let fins: Vec<String> =
            latest.metadata.finalizers.iter().flatten().filter(|f| *f != finalizer).cloned().collect();
        if fins.len() == latest.metadata.finalizers.as_ref().map_or(0, Vec::len) {
            return Ok(());
        }
        self.patch_meta(api, latest, json!({ "finalizers": fins })).await
    }

    /// A JSON merge patch of `metadata` fields, pinned to the object's uid
    /// and resourceVersion.
    async fn patch_meta(&self, api: &Api<DynamicObject>, latest: &Meta, fields: Value) -> Result<(), Failure> {
        let mut meta = fields;
        meta["uid"] = json!(latest.metadata.uid);
        meta["resourceVersion"] = json!(latest.metadata.resource_version);
        let name = latest.metadata.name.clone().unwrap_or_default();
        match api.patch(&name, &PatchParams::default(), &Patch::Merge(json!({ "metadata": meta }))).await {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) if is_conflict(&e) => Err(Failure::Retry(format!("409 conflict: {e}"))),
            Err(e) => Err(e.into()),
        }
    }

    /// Deletes `id` with `policy`, pinned to its uid (and to
    /// `resource_version`, if given: then a 409 is returned as a retry).
    async fn delete(
        &self,
        api: &Api<DynamicObject>,
        id: &Identity,
        policy: Propagation,
        resource_version: Option<String>,
    ) -> Result<(), Failure> {
        let mut dp = match policy {
            Propagation::Background => DeleteParams::background(),
            Propagation::Foreground => DeleteParams::foreground(),
            Propagation::Orphan => DeleteParams::orphan(),
        };
        let pinned = resource_version.is_some();
        dp.preconditions = Some(Preconditions { uid: Some(id.uid.clone()), resource_version });
        match api.delete(&id.name, &dp).await {
            Ok(_) => Ok(()),
            Err(e) if pinned && is_conflict(&e) => Err(Failure::Retry(format!("409 conflict: {e}"))),
            Err(e) if is_not_found(&e) || is_conflict(&e) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}
