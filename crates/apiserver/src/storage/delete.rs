//! Delete and deletecollection (upstream's `Store.Delete` with
//! `rest.BeforeDelete`, graceful deletion and the garbage-collection
//! finalizers).

use rkube_apimachinery::strategy::GcPolicy;
use rkube_apimachinery::{meta, ApiError};
use rkube_store::StoreError;
use serde_json::{json, Value};

use super::{ListOptions, ResourceStore, WriteOptions};

/// The finalizer that orphans dependents (`metav1.FinalizerOrphanDependents`).
pub const FINALIZER_ORPHAN: &str = "orphan";
/// The finalizer of foreground deletion (`metav1.FinalizerDeleteDependents`).
pub const FINALIZER_FOREGROUND: &str = "foregroundDeletion";

/// How many times a delete re-reads after losing a race.
const MAX_DELETE_ATTEMPTS: usize = 16;

/// `propagationPolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PropagationPolicy {
    /// Dependents are deleted before the owner (`foregroundDeletion` finalizer).
    Foreground,
    /// The owner goes now; the garbage collector deletes dependents.
    Background,
    /// Dependents are kept (`orphan` finalizer).
    Orphan,
}

/// `DeleteOptions.preconditions`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Preconditions {
    /// The object must have this uid.
    pub uid: Option<String>,
    /// The object must be at this resourceVersion.
    pub resource_version: Option<String>,
}

/// `DeleteOptions`, already validated.
#[derive(Clone, Debug, Default)]
pub struct DeleteOptions {
    /// `gracePeriodSeconds` (negative values count as 1).
    pub grace_period_seconds: Option<i64>,
    /// `preconditions`.
    pub preconditions: Preconditions,
    /// `propagationPolicy`.
    pub propagation_policy: Option<PropagationPolicy>,
    /// The deprecated `orphanDependents`.
    pub orphan_dependents: Option<bool>,
    /// `dryRun=All`.
    pub write: WriteOptions,
}

/// What a delete did.
#[derive(Clone, Debug, PartialEq)]
pub enum Deleted {
    /// The object is gone; this is its last state.
    Gone(Value),
    /// The object stays (finalizers, a running grace period, a namespace
    /// being terminated); this is its state now.
    Pending(Value),
}

impl ResourceStore {
    /// Deletes `name` as upstream's `Store.Delete` does.
    pub async fn delete(&self, namespace: &str, name: &str, opts: &DeleteOptions) -> Result<Deleted, ApiError> {
        let key = self.keys.object(namespace, name);
        for _ in 0..MAX_DELETE_ATTEMPTS {
            let current = self.store.get(&key, None).await.map_err(|e| self.store_error(e, name))?;
            let kv = current.kv.ok_or_else(|| self.not_found(name))?;
            let mut obj = self.decode(&kv)?;
            let original = obj.clone();
            self.check_preconditions(&obj, &opts.preconditions, name)?;
            if let Some(admission) = &opts.write.admission {
                admission.delete(&obj).await?;
            }
            let was_deleting = meta::deletion_timestamp(&obj).is_some();

            // Namespaces: the first delete only starts termination.
            if !was_deleting && self.strategy.begin_termination(&mut obj) {
                meta::set(&mut obj, "deletionTimestamp", json!(meta::now()));
                self.apply_gc_finalizers(&mut obj, opts);
                match self.store_pending(&key, obj, &original, kv.mod_revision, opts, name).await? {
                    Some(done) => return Ok(done),
                    None => continue,
                }
            }
            if was_deleting && self.strategy.holds_deletion(&obj) {
                return Ok(Deleted::Pending(obj));
            }

            // rest.BeforeDelete: graceful deletion.
            let requested = opts.grace_period_seconds.map(|g| if g < 0 { 1 } else { g });
            let mut grace = None;
            if let Some(period) = self.strategy.graceful_delete_period(&obj, requested) {
                if was_deleting {
                    let current_grace = obj.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64);
                    match (current_grace, requested) {
                        (None | Some(0), _) => grace = Some(0),
                        (Some(cur), Some(req)) if req < cur => {
                            shorten_grace(&mut obj, cur, req);
                            grace = Some(req);
                        }
                        // Graceful deletion is pending: nothing changes.
                        _ => return Ok(Deleted::Pending(obj)),
                    }
                } else {
                    let at = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(period);
                    meta::set(&mut obj, "deletionTimestamp", json!(meta::format_time(at)));
                    meta::set(&mut obj, "deletionGracePeriodSeconds", json!(period));
                    if let Some(g) = obj.pointer("/metadata/generation").and_then(Value::as_i64) {
                        meta::set(&mut obj, "generation", json!(g + 1));
                    }
                    grace = Some(period);
                }
            }
            self.apply_gc_finalizers(&mut obj, opts);
            let pending_finalizers = !meta::finalizers(&obj).is_empty();
            if pending_finalizers && grace.is_none() {
                mark_as_deleting(&mut obj);
            }
            if pending_finalizers || grace.is_some_and(|g| g > 0) {
                match self.store_pending(&key, obj, &original, kv.mod_revision, opts, name).await? {
                    Some(done) => return Ok(done),
                    None => continue,
                }
            }

            // Delete now.
            if opts.write.dry_run {
                return Ok(Deleted::Gone(obj));
            }
            match self.store.delete(&key, Some(kv.mod_revision)).await {
                Ok(resp) => {
                    let mut gone = self.decode(&resp.prev)?;
                    if let Some(hooks) = self.hooks() {
                        hooks.committed(None, Some(&gone)).await;
                    }
                    meta::set(&mut gone, "resourceVersion", json!(resp.revision.to_string()));
                    return Ok(Deleted::Gone(gone));
                }
                Err(StoreError::Conflict { .. }) => continue,
                Err(StoreError::NotFound { .. }) => return Err(self.not_found(name)),
                Err(e) => return Err(self.store_error(e, name)),
            }
        }
        Err(self.conflict(name))
    }

    /// Writes the marked object back (unless nothing changed); `None` when
    /// the stored object changed meanwhile.
    async fn store_pending(
        &self,
        key: &str,
        obj: Value,
        original: &Value,
        expected: i64,
        opts: &DeleteOptions,
        name: &str,
    ) -> Result<Option<Deleted>, ApiError> {
        if opts.write.dry_run || &obj == original {
            return Ok(Some(Deleted::Pending(obj)));
        }
        match self.store.update(key, self.encode(&obj)?, expected, None).await {
            Ok(kv) => Ok(Some(Deleted::Pending(self.decode(&kv)?))),
            Err(StoreError::Conflict { .. }) => Ok(None),
            Err(StoreError::NotFound { .. }) => Err(self.not_found(name)),
            Err(e) => Err(self.store_error(e, name)),
        }
    }

    /// The early precondition check of `rest.BeforeDelete` (409 Conflict).
    fn check_preconditions(&self, obj: &Value, pre: &Preconditions, name: &str) -> Result<(), ApiError> {
        let conflict = |message: String| ApiError::Conflict {
            resource: self.resource.clone(),
            name: name.to_string(),
            message,
            causes: vec![],
        };
        if let Some(uid) = pre.uid.as_deref().filter(|u| *u != meta::uid(obj)) {
            return Err(conflict(format!(
                "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                meta::uid(obj)
            )));
        }
        if let Some(rv) = pre.resource_version.as_deref().filter(|rv| *rv != meta::resource_version(obj)) {
            return Err(conflict(format!(
                "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified",
                meta::resource_version(obj)
            )));
        }
        Ok(())
    }

    /// Upstream's `deletionFinalizersForGarbageCollection`: adds or removes
    /// `orphan` / `foregroundDeletion` as the options (or the object's own
    /// finalizers, or the kind's default policy) dictate. Returns whether
    /// the set of finalizers changed.
    fn apply_gc_finalizers(&self, obj: &mut Value, opts: &DeleteOptions) -> bool {
        let old = meta::finalizers(obj);
        let has = |f: &str| old.iter().any(|x| x == f);
        let first_gc = old.iter().find(|f| *f == FINALIZER_ORPHAN || *f == FINALIZER_FOREGROUND).cloned();
        let (orphan, foreground) = match (opts.orphan_dependents, opts.propagation_policy) {
            (Some(o), _) => (o, false),
            (None, Some(PropagationPolicy::Orphan)) => (true, false),
            (None, Some(PropagationPolicy::Foreground)) => (false, true),
            (None, Some(PropagationPolicy::Background)) => (false, false),
            (None, None) => match first_gc.as_deref() {
                Some(FINALIZER_ORPHAN) => (true, false),
                Some(_) => (false, true),
                None => (self.strategy.default_gc_policy() == GcPolicy::OrphanDependents, false),
            },
        };
        let mut new: Vec<String> =
            old.iter().filter(|f| *f != FINALIZER_ORPHAN && *f != FINALIZER_FOREGROUND).cloned().collect();
        if orphan {
            new.push(FINALIZER_ORPHAN.into());
        }
        if foreground {
            new.push(FINALIZER_FOREGROUND.into());
        }
        let same = new.len() == old.len() && new.iter().all(|f| has(f));
        if !same {
            meta::set_finalizers(obj, &new);
        }
        !same
    }

    /// Deletes every object of a collection that `list` selects (upstream's
    /// `DeleteCollection`): each as a single delete with `opts`, skipping
    /// objects that vanished meanwhile. Returns the deleted or pending
    /// objects.
    pub async fn delete_collection(
        &self,
        namespace: &str,
        list: &ListOptions,
        opts: &DeleteOptions,
    ) -> Result<Vec<Value>, ApiError> {
        let items = self.list(namespace, list).await?.items;
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            match self.delete(meta::namespace(&item), meta::name(&item), opts).await {
                Ok(Deleted::Gone(o) | Deleted::Pending(o)) => out.push(o),
                Err(ApiError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }
}

/// Upstream's `markAsDeleting`: deletionTimestamp now (unless earlier),
/// deletionGracePeriodSeconds 0, generation bumped on the first mark.
fn mark_as_deleting(obj: &mut Value) {
    if meta::deletion_timestamp(obj).is_none() {
        if let Some(g) = obj.pointer("/metadata/generation").and_then(Value::as_i64) {
            meta::set(obj, "generation", json!(g + 1));
        }
        meta::set(obj, "deletionTimestamp", json!(meta::now()));
    }
    meta::set(obj, "deletionGracePeriodSeconds", json!(0));
}

/// A shorter grace period moves deletionTimestamp earlier by the difference.
fn shorten_grace(obj: &mut Value, current: i64, requested: i64) {
    let at = meta::deletion_timestamp(obj)
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map(|t| t - jiff::SignedDuration::from_secs(current) + jiff::SignedDuration::from_secs(requested));
    if let Some(at) = at {
        meta::set(obj, "deletionTimestamp", json!(meta::format_time(at)));
    }
    meta::set(obj, "deletionGracePeriodSeconds", json!(requested));
}
