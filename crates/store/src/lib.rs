//! The storage contract of rkube, modelled on etcd v3 MVCC, and its backends.
//!
//! Everything the API server persists goes through [`Store`]. The contract is
//! etcd's: one global, strictly increasing revision (the Kubernetes
//! `resourceVersion`); every key carries the revision that created it and the
//! revision that last modified it; writes are guarded by the expected
//! modification revision (compare-and-swap); reads can be served at any
//! revision that has not been compacted away; watches replay history from a
//! revision and then follow live writes, in order, without gaps or duplicates.
//!
//! Backends:
//! - [`sqlite::SqliteStore`], the default: one SQLite file (WAL, crash-safe,
//!   group commit), with in-process watch fan-out.
//! - [`etcd::EtcdStore`]: an etcd v3 cluster through `etcd-client`.
//!
//! Both pass the same conformance suite (`tests/conformance/`), and both
//! take backups ([`Store::snapshot`], [`snapshot`]).
//!
//! Only the API server depends on this crate (see DESIGN.md).

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::Stream;

pub mod compactor;
pub mod endpoint;
pub mod etcd;
pub mod snapshot;
pub mod sqlite;

pub use compactor::spawn_compactor;
pub use endpoint::{open, DatastoreEndpoint};
pub use snapshot::{Snapshot, SnapshotFormat};

/// A store revision: etcd's `revision`, exposed by the API as `resourceVersion`.
/// Revisions start at 1 for the first write; 0 never names a write.
pub type Revision = i64;

/// Largest value a key may hold: 1.5 MiB, etcd's default `--max-request-bytes`
/// (1,572,864 bytes). Larger writes fail with [`StoreError::ValueTooLarge`].
pub const MAX_VALUE_BYTES: usize = 1536 * 1024;

/// One key at one revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyValue {
    /// The full key, e.g. `/registry/pods/default/nginx`.
    pub key: String,
    /// The stored bytes (for API objects: the JSON of the object).
    pub value: Bytes,
    /// Revision of the write that created this incarnation of the key.
    pub create_revision: Revision,
    /// Revision of the write that produced this value.
    pub mod_revision: Revision,
}

/// Result of [`Store::get`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GetResponse {
    /// The key's value at the read revision, or `None` if it did not exist.
    pub kv: Option<KeyValue>,
    /// The revision the read was served at.
    pub revision: Revision,
}

/// A range read over every key that starts with `prefix`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeRequest {
    /// Keys returned all start with this prefix (byte-wise).
    pub prefix: String,
    /// First key to return (inclusive); must start with `prefix`. This is how a
    /// Kubernetes `continue` token resumes: the last key returned plus `"\0"`.
    pub start: Option<String>,
    /// At most this many keys; `None` or `Some(0)` means no limit.
    pub limit: Option<usize>,
    /// Read at this revision; `None` means the current one. A revision below
    /// the compacted revision fails with [`StoreError::Compacted`]; one above
    /// the current revision fails with [`StoreError::FutureRevision`].
    pub revision: Option<Revision>,
}

/// Result of [`Store::range`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeResponse {
    /// The keys, in ascending byte order of their key.
    pub kvs: Vec<KeyValue>,
    /// True when `limit` cut the result short and more keys follow.
    pub more: bool,
    /// Number of keys in `[start, end of prefix)` at the read revision,
    /// regardless of `limit` (Kubernetes derives `remainingItemCount` from it).
    pub count: u64,
    /// The revision the read was served at. Continue a paginated list by
    /// passing this revision back in [`RangeRequest::revision`].
    pub revision: Revision,
}

/// Result of [`Store::delete`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeleteResponse {
    /// The revision of the deletion.
    pub revision: Revision,
    /// The value the key held just before it was deleted.
    pub prev: KeyValue,
}

/// One item of a watch stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchEvent {
    /// The key was created (`kv.create_revision == kv.mod_revision`) or updated.
    /// `prev` is the value before this write, if the key existed.
    Put { kv: KeyValue, prev: Option<KeyValue> },
    /// The key was deleted (explicitly or by TTL expiry) at `revision`; `prev`
    /// is the last value it held.
    Delete { key: String, revision: Revision, prev: KeyValue },
    /// Every event with a revision up to and including `revision` has been
    /// delivered on this stream (etcd's progress notification; Kubernetes
    /// turns it into a BOOKMARK).
    Progress { revision: Revision },
}

impl WatchEvent {
    /// The revision this event carries.
    pub fn revision(&self) -> Revision {
        match self {
            WatchEvent::Put { kv, .. } => kv.mod_revision,
            WatchEvent::Delete { revision, .. } => *revision,
            WatchEvent::Progress { revision } => *revision,
        }
    }
}

/// Options of [`Store::watch`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchOptions {
    /// Send [`WatchEvent::Progress`] on its own whenever the stream has been
    /// idle for the backend's progress interval (etcd's `progress_notify`).
    pub progress_notify: bool,
}

/// A live watch: a stream of events and a way to ask for a progress report.
///
/// The stream yields events in strictly increasing revision order, each
/// revision at most once, with none missing for the watched prefix. It ends
/// only after yielding an error (e.g. [`StoreError::Compacted`]) or when the
/// store shuts down. Dropping the `Watch` cancels it.
pub struct Watch {
    /// The events.
    pub events: Pin<Box<dyn Stream<Item = Result<WatchEvent, StoreError>> + Send>>,
    progress: tokio::sync::mpsc::UnboundedSender<()>,
}

impl Watch {
    /// Builds a watch from a backend's stream and the sender its task reads
    /// progress requests from.
    pub fn new(
        events: Pin<Box<dyn Stream<Item = Result<WatchEvent, StoreError>> + Send>>,
        progress: tokio::sync::mpsc::UnboundedSender<()>,
    ) -> Self {
        Watch { events, progress }
    }

    /// Asks for a [`WatchEvent::Progress`] with the current revision to be
    /// sent once all events up to it are delivered (etcd's
    /// `WatchProgressRequest`; Kubernetes uses it for consistent reads from
    /// the watch cache). Never blocks; a closed watch ignores it.
    pub fn request_progress(&self) {
        let _ = self.progress.send(());
    }

    /// The event stream and the progress-request sender, for a wrapper that
    /// transforms the events and rebuilds the watch with [`Watch::new`].
    #[allow(clippy::type_complexity)]
    pub fn into_parts(
        self,
    ) -> (Pin<Box<dyn Stream<Item = Result<WatchEvent, StoreError>> + Send>>, tokio::sync::mpsc::UnboundedSender<()>)
    {
        (self.events, self.progress)
    }
}

/// Errors of the store contract. The API server maps them to `Status`
/// responses in one place (e.g. `Compacted` → 410 Expired, `Conflict` → 409).
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum StoreError {
    /// `create` found the key already present.
    #[error("key {key:?} already exists")]
    AlreadyExists { key: String },
    /// The key is absent (`update`/`delete` with an expected revision).
    #[error("key {key:?} not found")]
    NotFound { key: String },
    /// The key's mod revision is not the expected one. `current` is what the
    /// key holds now (`None`: it does not exist), so callers can retry
    /// without another read.
    #[error("key {key:?} was modified: expected mod revision {expected}, found {}", current.as_ref().map(|kv| kv.mod_revision.to_string()).unwrap_or_else(|| "no key".into()))]
    Conflict { key: String, expected: Revision, current: Option<KeyValue> },
    /// The requested revision has been compacted away (API: 410 Expired).
    #[error("required revision {requested} has been compacted (compacted revision is {compacted})")]
    Compacted { requested: Revision, compacted: Revision },
    /// The requested revision is newer than the store's current revision.
    #[error("required revision {requested} is a future revision (current revision is {current})")]
    FutureRevision { requested: Revision, current: Revision },
    /// The value is larger than [`MAX_VALUE_BYTES`].
    #[error("value for key {key:?} is {size} bytes, over the limit of {limit} bytes")]
    ValueTooLarge { key: String, size: usize, limit: usize },
    /// The backend failed or cannot be reached; the message says which and why.
    #[error("storage backend unavailable: {0}")]
    Unavailable(String),
    /// A stored value could not be turned back into the bytes written, e.g.
    /// it is encrypted with a key the API server does not have (upstream's
    /// storage `InternalError`; the API answers 500 InternalError).
    #[error("{0}")]
    Internal(String),
}

/// Result alias for store operations.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// The storage contract (etcd v3 MVCC semantics). Implementations are
/// cheap to share (`Arc<dyn Store>`), and every method is safe to call
/// concurrently.
#[async_trait::async_trait]
pub trait Store: Send + Sync + 'static {
    /// The current revision (the revision of the latest write; 0 if none yet).
    async fn current_revision(&self) -> Result<Revision>;

    /// Reads one key, at `revision` or the current revision when `None`
    /// (same compaction and future-revision errors as [`Store::range`]).
    async fn get(&self, key: &str, revision: Option<Revision>) -> Result<GetResponse>;

    /// Reads the keys under a prefix at one fixed revision.
    async fn range(&self, req: RangeRequest) -> Result<RangeResponse>;

    /// Creates `key` if it is absent; [`StoreError::AlreadyExists`] otherwise.
    /// With `ttl`, the key is deleted (with a watch event) once `ttl` has
    /// passed, as with an etcd lease; expiry may lag by a few seconds.
    /// Returns the stored key with its new revisions.
    async fn create(&self, key: &str, value: Bytes, ttl: Option<Duration>) -> Result<KeyValue>;

    /// Replaces the value of `key` if its mod revision is `expected`;
    /// otherwise [`StoreError::Conflict`] (or `NotFound` if absent). `ttl`
    /// as in [`Store::create`]; `None` removes any previous TTL.
    async fn update(&self, key: &str, value: Bytes, expected: Revision, ttl: Option<Duration>) -> Result<KeyValue>;

    /// Deletes `key`, if `expected` is given only when its mod revision is
    /// that one ([`StoreError::Conflict`] otherwise). Absent keys fail with
    /// [`StoreError::NotFound`].
    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<DeleteResponse>;

    /// Watches every key under `prefix`, delivering all events with a
    /// revision `>= start` (etcd's `start_revision`), then live ones.
    /// `start == 0` means "from the next write". A `start` at or below the
    /// compacted revision fails with [`StoreError::Compacted`] (returned
    /// here or as the stream's first item).
    async fn watch(&self, prefix: &str, start: Revision, opts: WatchOptions) -> Result<Watch>;

    /// Discards history older than `revision`: afterwards reads below it and
    /// watches starting at or below it fail with [`StoreError::Compacted`].
    /// The latest value of every live key is kept. Compacting to a revision
    /// at or below the previous compaction is a no-op.
    async fn compact(&self, revision: Revision) -> Result<()>;

    /// The revision history has been compacted to (0 if never).
    async fn compacted_revision(&self) -> Result<Revision>;

    /// Starts a consistent point-in-time copy of the whole store, in the
    /// backend's own file format ([`snapshot`]): the embedded store copies
    /// its database while writes go on; etcd streams its Maintenance
    /// Snapshot. Wrappers (e.g. encryption at rest) forward it unchanged, so
    /// encrypted values stay encrypted in the copy, as in an etcd snapshot.
    ///
    /// The default answers [`StoreError::Unavailable`]: a backend that
    /// cannot take snapshots.
    async fn snapshot(&self) -> Result<Snapshot> {
        Err(StoreError::Unavailable("this storage backend cannot take snapshots".into()))
    }
}

/// A shared handle to a store.
pub type SharedStore = Arc<dyn Store>;

/// Checks a value against [`MAX_VALUE_BYTES`]; every backend calls this first.
pub fn check_value_size(key: &str, value: &[u8]) -> Result<()> {
    if value.len() > MAX_VALUE_BYTES {
        return Err(StoreError::ValueTooLarge { key: key.to_string(), size: value.len(), limit: MAX_VALUE_BYTES });
    }
    Ok(())
}

/// The end of the key range covered by `prefix` (etcd's `prefix_end`): the
/// smallest key greater than every key starting with `prefix`. `None` when
/// the prefix is empty or all `0xff` (the range is unbounded above).
pub fn prefix_end(prefix: &str) -> Option<Vec<u8>> {
    let mut end = prefix.as_bytes().to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_end_increments_last_byte() {
        assert_eq!(prefix_end("/registry/pods/").unwrap(), b"/registry/pods0".to_vec());
        assert_eq!(prefix_end("a"), Some(b"b".to_vec()));
        assert_eq!(prefix_end(""), None);
    }

    #[test]
    fn values_over_one_and_a_half_mebibytes_are_refused() {
        assert!(check_value_size("k", &vec![0u8; MAX_VALUE_BYTES]).is_ok());
        let err = check_value_size("k", &vec![0u8; MAX_VALUE_BYTES + 1]).unwrap_err();
        assert!(matches!(err, StoreError::ValueTooLarge { size, .. } if size == MAX_VALUE_BYTES + 1));
    }
}
