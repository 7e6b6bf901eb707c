//! The generic registry store: upstream's `genericregistry.Store` over an
//! `rkube_store::SharedStore`.
//!
//! One [`ResourceStore`] serves one resource (one group/version/plural): it
//! knows the resource's keys, its [`Strategy`], and implements the verbs
//! with upstream's semantics — resourceVersion rules, optimistic
//! concurrency, create-on-update, generation, graceful deletion and
//! finalizers, and watch. The REST layer (`crate::rest`) decodes requests,
//! negotiates content and calls these.
//!
//! Objects are `serde_json::Value`s at the storage version; at rest they are
//! their JSON without `metadata.resourceVersion`, which is the key's mod
//! revision and is set on every read.
//!
//! Modules: [`keys`] (key layout), [`continue_token`], [`errors`] (store
//! error → API error), [`filter`] (label/field selector predicate), `read`
//! (get, list), `write` (create, update), `delete`, [`watch`],
//! [`namespaces`] (system namespaces and the namespace lifecycle rules).
//! Lists and watches go through the resource's [`WatchCache`]
//! (`crate::cache`) when it can serve them and to the store otherwise.

use bytes::Bytes;
use rkube_apimachinery::registry::ResourceInfo;
use rkube_apimachinery::strategy::{self, Strategy};
use rkube_apimachinery::{meta, ApiError, GroupResource};
use rkube_store::{KeyValue, SharedStore};
use serde_json::Value;

use crate::cache::{CacheOptions, WatchCache};

pub mod continue_token;
pub mod conversion;
mod delete;
pub mod errors;
pub mod filter;
pub mod ipalloc;
pub mod keys;
pub mod namespaces;
mod read;
pub mod watch;
mod write;

#[cfg(test)]
mod tests;

pub use delete::{DeleteOptions, Deleted, Preconditions, PropagationPolicy};
pub use filter::Predicate;
pub use read::{ListOptions, ListResult};
pub use write::{Tracking, UpdateKind, WriteOptions};

/// The store of one resource.
pub struct ResourceStore {
    info: ResourceInfo,
    strategy: Box<dyn Strategy>,
    store: SharedStore,
    keys: keys::Keys,
    resource: GroupResource,
    hooks: std::sync::OnceLock<std::sync::Arc<dyn WriteHooks>>,
    ttl: std::sync::OnceLock<std::time::Duration>,
    /// The watch cache; `None` when disabled ([`ResourceStore::without_watch_cache`]).
    cache: Option<WatchCache>,
}

/// Side effects of writes that need state beyond the object (upstream's
/// REST wrappers around the generic store, e.g. Service ClusterIP and
/// NodePort allocation, which write their own records to the store). The
/// store awaits them around every write.
#[async_trait::async_trait]
pub trait WriteHooks: Send + Sync {
    /// Before a create (`old` is `None`) or an update is written, after
    /// defaulting and validation: may fill in fields (allocations) or
    /// refuse the write. With `dry_run` nothing may be recorded; on an
    /// error nothing stays recorded.
    async fn before_write(&self, obj: &mut Value, old: Option<&Value>, dry_run: bool) -> Result<(), ApiError>;
    /// The write prepared by `before_write` (with the same `dry_run`) did
    /// not happen (conflict, dry run, error): undo what it did for `obj`.
    async fn abort(&self, obj: &Value, old: Option<&Value>, dry_run: bool);
    /// The write happened: `new` is the stored object (`None` when it was
    /// removed), `old` the previous one (`None` on create).
    async fn committed(&self, new: Option<&Value>, old: Option<&Value>);
}

impl ResourceStore {
    /// The store of `info`, or `None` for resources that keep no objects
    /// (reviews, bindings) or whose storage version differs from the served
    /// version (served once conversion exists).
    pub fn new(info: &ResourceInfo, store: SharedStore) -> Option<ResourceStore> {
        let storage = info.storage.as_ref()?;
        if storage.version != info.gvk() {
            return None;
        }
        let has_status = info.subresource("status").is_some();
        let keys = keys::Keys::new(storage.resource, info.namespaced());
        let cache = WatchCache::new(
            store.clone(),
            &keys.collection(""),
            info.kind,
            &info.api_version(),
            CacheOptions::default(),
        );
        Some(ResourceStore {
            strategy: strategy::for_kind(info.group, info.kind, has_status),
            cache: Some(cache),
            keys,
            resource: GroupResource::new(info.group, info.plural),
            info: info.clone(),
            store,
            hooks: std::sync::OnceLock::new(),
            ttl: std::sync::OnceLock::new(),
        })
    }

    /// Installs the resource's write hooks (once, before serving).
    pub fn set_hooks(&self, hooks: std::sync::Arc<dyn WriteHooks>) {
        let _ = self.hooks.set(hooks);
    }

    /// Sets the time to live of every object created or updated (events'
    /// `--event-ttl`; once, before serving).
    pub fn set_ttl(&self, ttl: std::time::Duration) {
        let _ = self.ttl.set(ttl);
    }

    fn hooks(&self) -> Option<&dyn WriteHooks> {
        self.hooks.get().map(|h| h.as_ref())
    }

    /// This store with its watch cache replaced (`Some`: e.g. other
    /// [`CacheOptions`]) or removed (`None`: every list and watch reads the
    /// store).
    pub fn with_watch_cache(mut self, opts: Option<CacheOptions>) -> ResourceStore {
        let root = self.keys.collection("");
        self.cache =
            opts.map(|o| WatchCache::new(self.store.clone(), &root, self.info.kind, &self.info.api_version(), o));
        self
    }

    /// This store without a watch cache: every list and watch reads the store.
    pub fn without_watch_cache(self) -> ResourceStore {
        self.with_watch_cache(None)
    }

    /// The watch cache, if enabled.
    pub fn watch_cache(&self) -> Option<&WatchCache> {
        self.cache.as_ref()
    }

    /// The resource served.
    pub fn info(&self) -> &ResourceInfo {
        &self.info
    }

    /// The kind's strategy.
    pub fn strategy(&self) -> &dyn Strategy {
        self.strategy.as_ref()
    }

    /// `pods`, `deployments.apps`: the resource as errors name it.
    pub fn group_resource(&self) -> &GroupResource {
        &self.resource
    }

    /// The underlying store.
    pub fn store(&self) -> &SharedStore {
        &self.store
    }

    /// The key layout.
    pub fn keys(&self) -> &keys::Keys {
        &self.keys
    }

    fn not_found(&self, name: &str) -> ApiError {
        ApiError::NotFound { resource: self.resource.clone(), name: name.to_string() }
    }

    fn store_error(&self, err: rkube_store::StoreError, name: &str) -> ApiError {
        errors::from_store(err, &self.resource, name)
    }

    /// The bytes kept at rest: the object's JSON without `resourceVersion`.
    fn encode(&self, obj: &Value) -> Result<Bytes, ApiError> {
        let mut obj = obj.clone();
        meta::set(&mut obj, "resourceVersion", Value::Null);
        serde_json::to_vec(&obj).map(Bytes::from).map_err(|e| ApiError::Internal(e.to_string()))
    }

    /// The object of a stored key, its `resourceVersion` set to the key's mod
    /// revision.
    fn decode(&self, kv: &KeyValue) -> Result<Value, ApiError> {
        decode_at(kv, kv.mod_revision)
    }
}

/// Decodes a stored value and sets its `resourceVersion` to `revision`.
pub(crate) fn decode_at(kv: &KeyValue, revision: i64) -> Result<Value, ApiError> {
    let mut obj: Value = serde_json::from_slice(&kv.value)
        .map_err(|e| ApiError::Internal(format!("stored object {} is not valid JSON: {e}", kv.key)))?;
    meta::set(&mut obj, "resourceVersion", Value::String(revision.to_string()));
    Ok(obj)
}

/// Parses a resourceVersion the client sent (`""` and `"0"` are 0).
pub fn parse_resource_version(rv: &str) -> Result<i64, ApiError> {
    if rv.is_empty() {
        return Ok(0);
    }
    rv.parse::<i64>()
        .ok()
        .filter(|v| *v >= 0)
        .ok_or_else(|| ApiError::BadRequest(format!("invalid resource version: {rv:?}")))
}
