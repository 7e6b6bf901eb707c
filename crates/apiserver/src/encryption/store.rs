//! [`EncryptedStore`]: the storage contract with values transformed on the
//! way in and out, per resource, as upstream's etcd3 store applies its
//! `value.Transformer`: every write of an encrypted resource stores the
//! first provider's bytes, every read (get, range, watch events, the
//! values carried by conflicts and deletes) is decrypted before the API
//! server — its handlers and its watch cache alike — sees it.
//!
//! A value that does not decrypt fails that read with
//! [`StoreError::Internal`] (API: 500 `Internal error occurred: …`), as
//! upstream; a list or watch containing it fails with `unable to transform
//! key "<key>": …`.
//!
//! A value read with any provider or key but the first is *stale*
//! (upstream's `stale` flag, which makes `GuaranteedUpdate` write even an
//! unchanged object): its bytes are handed up with a trailing newline —
//! insignificant to JSON — so that rewriting the object, e.g. with
//! `kubectl replace`, never compares equal to them and stores it with the
//! current key.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use rkube_store::{
    DeleteResponse, GetResponse, KeyValue, RangeRequest, RangeResponse, Result, Revision, SharedStore, Store,
    StoreError, Watch, WatchEvent, WatchOptions,
};

use super::config::EncryptionConfig;
use super::transformer::{Transformer, ENCRYPTED_PREFIX, IDENTITY_READ_ENCRYPTED};

/// A store whose values are encrypted at rest as an
/// [`EncryptionConfig`] says.
pub struct EncryptedStore {
    inner: SharedStore,
    config: Arc<EncryptionConfig>,
    /// `/registry/<storage-resource>/` → (group, resource), longest first.
    prefixes: Vec<(String, String, String)>,
}

impl EncryptedStore {
    /// Wraps `inner`; the resources are the built-in registry's, keyed by
    /// their storage prefix (`/registry/secrets/`, `/registry/minions/` for
    /// nodes, …) under their storage group.
    /// With [`EncryptionConfig::identity`] (no config) values pass
    /// through, only checked for the encrypted-data prefix, so that data
    /// encrypted by an earlier configuration reads as upstream's
    /// `identity transformer tried to read encrypted data`.
    pub fn new(inner: SharedStore, config: EncryptionConfig) -> EncryptedStore {
        let registry = rkube_apimachinery::registry::Registry::builtin();
        let mut prefixes: Vec<(String, String, String)> = Vec::new();
        let resources = if config.is_identity() { &[][..] } else { registry.resources() };
        for info in resources {
            let Some(storage) = &info.storage else { continue };
            // Only the resource in its storage group names the key range
            // (events.k8s.io events are core events at rest).
            if storage.version.group != info.group {
                continue;
            }
            let prefix = format!("/registry/{}/", storage.resource);
            if !prefixes.iter().any(|(p, _, _)| *p == prefix) {
                prefixes.push((prefix, info.group.to_string(), info.plural.to_string()));
            }
        }
        prefixes.sort_by_key(|p| std::cmp::Reverse(p.0.len()));
        EncryptedStore { inner, config: Arc::new(config), prefixes }
    }

    /// [`EncryptedStore::new`] as a shared store.
    pub fn shared(inner: SharedStore, config: EncryptionConfig) -> SharedStore {
        Arc::new(EncryptedStore::new(inner, config))
    }

    fn transformer(&self, key: &str) -> Option<&dyn Transformer> {
        let (_, group, resource) = self.prefixes.iter().find(|(p, _, _)| key.starts_with(p.as_str()))?;
        self.config.transformer_for(group, resource)
    }

    fn seal(&self, key: &str, value: &Bytes) -> Result<Bytes> {
        match self.transformer(key) {
            None => Ok(value.clone()),
            Some(t) => t.to_storage(value, key.as_bytes()).map(Bytes::from).map_err(|e| {
                tracing::error!(component = crate::COMPONENT, %key, error = %e, "failed to encrypt data");
                StoreError::Internal(e)
            }),
        }
    }

    /// The plaintext of a stored value; the error is the transformer's.
    fn open_value(&self, key: &str, value: &Bytes) -> std::result::Result<Bytes, String> {
        match self.transformer(key) {
            None if value.starts_with(ENCRYPTED_PREFIX) => Err(IDENTITY_READ_ENCRYPTED.into()),
            None => Ok(value.clone()),
            Some(t) => {
                let (mut out, stale) = t.from_storage(value, key.as_bytes())?;
                if stale {
                    out.push(b'\n');
                }
                Ok(Bytes::from(out))
            }
        }
    }

    /// Decrypts one value read by key (get, conflict, delete).
    fn open(&self, mut kv: KeyValue) -> Result<KeyValue> {
        match self.open_value(&kv.key, &kv.value) {
            Ok(v) => {
                kv.value = v;
                Ok(kv)
            }
            Err(e) => {
                tracing::error!(component = crate::COMPONENT, key = %kv.key, error = %e, "failed to decrypt data");
                Err(StoreError::Internal(e))
            }
        }
    }

    /// Decrypts one value of a list or watch.
    fn open_in_collection(&self, mut kv: KeyValue) -> Result<KeyValue> {
        match self.open_value(&kv.key, &kv.value) {
            Ok(v) => {
                kv.value = v;
                Ok(kv)
            }
            Err(e) => {
                tracing::error!(component = crate::COMPONENT, key = %kv.key, error = %e, "failed to decrypt data");
                Err(StoreError::Internal(format!("unable to transform key {:?}: {e}", kv.key)))
            }
        }
    }

    fn open_error(&self, e: StoreError) -> StoreError {
        match e {
            StoreError::Conflict { key, expected, current: Some(kv) } => match self.open(kv) {
                Ok(kv) => StoreError::Conflict { key, expected, current: Some(kv) },
                Err(e) => e,
            },
            e => e,
        }
    }

    fn open_event(&self, ev: WatchEvent) -> Result<WatchEvent> {
        Ok(match ev {
            WatchEvent::Put { kv, prev } => WatchEvent::Put {
                kv: self.open_in_collection(kv)?,
                prev: prev.map(|p| self.open_in_collection(p)).transpose()?,
            },
            WatchEvent::Delete { key, revision, prev } => {
                WatchEvent::Delete { key, revision, prev: self.open_in_collection(prev)? }
            }
            p @ WatchEvent::Progress { .. } => p,
        })
    }
}

#[async_trait::async_trait]
impl Store for EncryptedStore {
    async fn current_revision(&self) -> Result<Revision> {
        self.inner.current_revision().await
    }

    async fn get(&self, key: &str, revision: Option<Revision>) -> Result<GetResponse> {
        let mut resp = self.inner.get(key, revision).await?;
        resp.kv = resp.kv.map(|kv| self.open(kv)).transpose()?;
        Ok(resp)
    }

    async fn range(&self, req: RangeRequest) -> Result<RangeResponse> {
        // A range within one resource that is stored as is (the common
        // case: pods, events …) needs only the check for encrypted data.
        let one_resource = if self.config.is_identity() {
            Some(true)
        } else {
            self.prefixes
                .iter()
                .find(|(p, _, _)| req.prefix.starts_with(p.as_str()))
                .map(|(_, g, r)| self.config.transformer_for(g, r).is_none())
        };
        let mut resp = self.inner.range(req).await?;
        if one_resource == Some(true) {
            if let Some(kv) = resp.kvs.iter().find(|kv| kv.value.starts_with(ENCRYPTED_PREFIX)) {
                tracing::error!(component = crate::COMPONENT, key = %kv.key, error = IDENTITY_READ_ENCRYPTED, "failed to decrypt data");
                return Err(StoreError::Internal(format!(
                    "unable to transform key {:?}: {IDENTITY_READ_ENCRYPTED}",
                    kv.key
                )));
            }
            return Ok(resp);
        }
        resp.kvs = std::mem::take(&mut resp.kvs)
            .into_iter()
            .map(|kv| self.open_in_collection(kv))
            .collect::<Result<Vec<_>>>()?;
        Ok(resp)
    }

    async fn create(&self, key: &str, value: Bytes, ttl: Option<Duration>) -> Result<KeyValue> {
        let sealed = self.seal(key, &value)?;
        let mut kv = self.inner.create(key, sealed, ttl).await?;
        kv.value = value;
        Ok(kv)
    }

    async fn update(&self, key: &str, value: Bytes, expected: Revision, ttl: Option<Duration>) -> Result<KeyValue> {
        let sealed = self.seal(key, &value)?;
        match self.inner.update(key, sealed, expected, ttl).await {
            Ok(mut kv) => {
                kv.value = value;
                Ok(kv)
            }
            Err(e) => Err(self.open_error(e)),
        }
    }

    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<DeleteResponse> {
        match self.inner.delete(key, expected).await {
            // The key is gone whatever its value was: a value that no
            // longer decrypts still reports the deletion.
            Ok(mut resp) => {
                let raw = resp.prev.value.clone();
                resp.prev = self.open(resp.prev).unwrap_or_else(|_| KeyValue {
                    key: key.to_string(),
                    value: raw,
                    create_revision: 0,
                    mod_revision: resp.revision,
                });
                Ok(resp)
            }
            Err(e) => Err(self.open_error(e)),
        }
    }

    async fn watch(&self, prefix: &str, start: Revision, opts: WatchOptions) -> Result<Watch> {
        let (events, progress) = self.inner.watch(prefix, start, opts).await?.into_parts();
        let this =
            EncryptedStore { inner: self.inner.clone(), config: self.config.clone(), prefixes: self.prefixes.clone() };
        // The stream ends right after its first error, as the contract
        // says (without waiting for another event from the backend).
        let events = events.map(move |ev| ev.and_then(|ev| this.open_event(ev)));
        let events = futures::stream::unfold((events, false), |(mut events, failed)| async move {
            if failed {
                return None;
            }
            let ev = events.next().await?;
            let failed = ev.is_err();
            Some((ev, (events, failed)))
        });
        Ok(Watch::new(Box::pin(events), progress))
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        self.inner.compact(revision).await
    }

    async fn compacted_revision(&self) -> Result<Revision> {
        self.inner.compacted_revision().await
    }

    /// The inner store's snapshot, unchanged: encrypted values stay
    /// encrypted in a backup, as in an etcd snapshot of kube-apiserver's data.
    async fn snapshot(&self) -> Result<rkube_store::Snapshot> {
        self.inner.snapshot().await
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
