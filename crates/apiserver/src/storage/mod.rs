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
//! A shared watch cache per resource is the planned next step (see
//! [`watch`]).

use bytes::Bytes;
use rkube_apimachinery::registry::ResourceInfo;
use rkube_apimachinery::strategy::{self, Strategy};
use rkube_apimachinery::{meta, ApiError, GroupResource};
use rkube_store::{KeyValue, SharedStore};
use serde_json::Value;

pub mod continue_token;
mod delete;
pub mod errors;
pub mod filter;
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
pub use write::{UpdateKind, WriteOptions};

/// The store of one resource.
pub struct ResourceStore {
    info: ResourceInfo,
    strategy: Box<dyn Strategy>,
    store: SharedStore,
    keys: keys::Keys,
    resource: GroupResource,
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
        Some(ResourceStore {
            strategy: strategy::for_kind(info.group, info.kind, has_status),
            keys: keys::Keys::new(storage.resource, info.namespaced()),
            resource: GroupResource::new(info.group, info.plural),
            info: info.clone(),
            store,
        })
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
