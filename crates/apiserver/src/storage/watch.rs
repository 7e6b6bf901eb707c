//! Watch with upstream's semantics, served straight from the store.
//!
//! - `resourceVersion` unset or `"0"`: synthetic `ADDED` events for the
//!   current objects, then every later change;
//! - `resourceVersion=N`: only changes after N; a compacted N yields one
//!   `ERROR` event (410 Expired `too old resource version: N (C)`), as
//!   upstream's watch does (the HTTP status stays 200);
//! - `sendInitialEvents=true`: the initial `ADDED` events, then a
//!   `BOOKMARK` annotated `k8s.io/initial-events-end: "true"`;
//! - `allowWatchBookmarks=true`: `BOOKMARK`s from the store's progress
//!   notifications; never without it;
//! - label/field selectors: an object that stops matching is `DELETED`
//!   (with its previous state), one that starts matching is `ADDED`, as
//!   upstream's watch-cache filter does.
//!
//! [`ResourceStore::watch`] serves these from the resource's watch cache
//! (`crate::cache`: one store watch per resource, fanned out to every
//! client) and opens a store watch of its own only when the cache cannot
//! serve the request: the cache is disabled or not fresh in time, or the
//! revision is older than the cache's first list.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use futures::StreamExt;
use rkube_apimachinery::{meta, ApiError};
use rkube_store::{RangeRequest, StoreError, WatchEvent as StoreEvent, WatchOptions as StoreWatchOptions};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::{decode_at, parse_resource_version, Predicate, ResourceStore};

/// The annotation of the bookmark that ends the initial events.
pub const INITIAL_EVENTS_END_ANNOTATION: &str = "k8s.io/initial-events-end";

/// How many events may wait for a slow client before the producer pauses.
const CHANNEL_CAPACITY: usize = 256;

/// The `type` of a watch event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// `ADDED`.
    Added,
    /// `MODIFIED`.
    Modified,
    /// `DELETED`.
    Deleted,
    /// `BOOKMARK`.
    Bookmark,
    /// `ERROR` (the object is a Status).
    Error,
}

impl EventType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
            EventType::Bookmark => "BOOKMARK",
            EventType::Error => "ERROR",
        }
    }
}

/// One watch event.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// Its type.
    pub kind: EventType,
    /// The object (a Status for `ERROR`), shared by every watch the watch
    /// cache delivers it to.
    pub object: Arc<SharedObject>,
}

impl Event {
    /// An event owning a fresh `object`.
    pub fn new(kind: EventType, object: Value) -> Event {
        Event { kind, object: Arc::new(SharedObject::new(object)) }
    }
}

/// An object that many watches send: decoded once, and encoded as JSON at
/// most once however many watches write it (upstream's `cachingObject`).
/// Derefs to the object.
#[derive(Debug, Default)]
pub struct SharedObject {
    value: Value,
    json: OnceLock<Bytes>,
}

impl SharedObject {
    /// Wraps `value`; nothing is encoded yet.
    pub fn new(value: Value) -> SharedObject {
        SharedObject { value, json: OnceLock::new() }
    }

    /// The object's compact JSON encoding, computed on first use.
    pub fn json(&self) -> &Bytes {
        self.json.get_or_init(|| Bytes::from(serde_json::to_vec(&self.value).unwrap_or_else(|_| b"null".to_vec())))
    }
}

impl std::ops::Deref for SharedObject {
    type Target = Value;
    fn deref(&self) -> &Value {
        &self.value
    }
}

impl PartialEq for SharedObject {
    fn eq(&self, other: &SharedObject) -> bool {
        self.value == other.value
    }
}

/// Options of a watch (already validated by the REST layer).
#[derive(Clone, Debug, Default)]
pub struct WatchOptions {
    /// Which objects to watch.
    pub predicate: Predicate,
    /// `resourceVersion` as sent.
    pub resource_version: String,
    /// `allowWatchBookmarks`.
    pub allow_bookmarks: bool,
    /// `sendInitialEvents`.
    pub send_initial_events: Option<bool>,
}

impl ResourceStore {
    /// Starts a watch of `namespace` (all namespaces when empty). Events
    /// arrive on the returned channel until the store watch ends or the
    /// receiver is dropped.
    pub async fn watch(&self, namespace: &str, opts: WatchOptions) -> Result<mpsc::Receiver<Event>, ApiError> {
        let requested = parse_resource_version(&opts.resource_version)?;
        let prefix = self.keys.collection(namespace);
        if let Some(cache) = &self.cache {
            if let Some(rx) = cache.watch(&prefix, &opts, requested).await {
                return Ok(rx);
            }
        }
        let initial = opts.send_initial_events.unwrap_or(requested == 0);
        let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);

        let mut initial_events = Vec::new();
        let start = if initial {
            let list = self
                .store
                .range(RangeRequest { prefix: prefix.clone(), ..Default::default() })
                .await
                .map_err(|e| self.store_error(e, ""))?;
            if requested > list.revision {
                return Err(ApiError::ResourceVersionTooLarge { requested, current: list.revision });
            }
            for kv in &list.kvs {
                let obj = self.decode(kv)?;
                if opts.predicate.matches(&obj) {
                    initial_events.push(Event::new(EventType::Added, obj));
                }
            }
            if opts.send_initial_events == Some(true) {
                let mut mark = self.bookmark(list.revision);
                mark["metadata"]["annotations"] = json!({INITIAL_EVENTS_END_ANNOTATION: "true"});
                initial_events.push(Event::new(EventType::Bookmark, mark));
            }
            list.revision + 1
        } else if requested == 0 {
            self.store.current_revision().await.map_err(|e| self.store_error(e, ""))? + 1
        } else {
            requested + 1
        };

        let watch = self.store.watch(&prefix, start, StoreWatchOptions { progress_notify: opts.allow_bookmarks }).await;
        let producer = Producer {
            predicate: opts.predicate,
            allow_bookmarks: opts.allow_bookmarks,
            requested,
            bookmark: self.bookmark(0),
            tx,
        };
        tokio::spawn(producer.run(initial_events, watch));
        Ok(rx)
    }

    /// A BOOKMARK object: the kind with only `metadata.resourceVersion`.
    fn bookmark(&self, revision: i64) -> Value {
        json!({
            "kind": self.info.kind,
            "apiVersion": self.info.api_version(),
            "metadata": {"resourceVersion": revision.to_string(), "creationTimestamp": null},
        })
    }
}

struct Producer {
    predicate: Predicate,
    allow_bookmarks: bool,
    requested: i64,
    bookmark: Value,
    tx: mpsc::Sender<Event>,
}

impl Producer {
    async fn run(self, initial: Vec<Event>, watch: Result<rkube_store::Watch, StoreError>) {
        for event in initial {
            if self.tx.send(event).await.is_err() {
                return;
            }
        }
        let mut watch = match watch {
            Ok(w) => w,
            Err(e) => {
                let _ = self.tx.send(self.error(e)).await;
                return;
            }
        };
        loop {
            // Stop as soon as the client is gone, even on an idle prefix.
            let item = tokio::select! {
                item = watch.events.next() => item,
                _ = self.tx.closed() => return,
            };
            let Some(item) = item else { return };
            let event = match item {
                Ok(e) => self.convert(e),
                Err(e) => {
                    let _ = self.tx.send(self.error(e)).await;
                    return;
                }
            };
            match event {
                Ok(Some(event)) => {
                    if self.tx.send(event).await.is_err() {
                        return;
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    let _ = self.tx.send(error_event(&e)).await;
                    return;
                }
            }
        }
    }

    /// A store event as the client sees it through the predicate.
    fn convert(&self, event: StoreEvent) -> Result<Option<Event>, ApiError> {
        Ok(match event {
            StoreEvent::Put { kv, prev } => {
                let obj = decode_at(&kv, kv.mod_revision)?;
                let now = self.predicate.matches(&obj);
                let before = match &prev {
                    Some(p) => self.predicate.matches(&decode_at(p, p.mod_revision)?),
                    None => false,
                };
                match (before, now) {
                    (false, true) => Some(Event::new(EventType::Added, obj)),
                    (true, true) => Some(Event::new(EventType::Modified, obj)),
                    (true, false) => {
                        let prev = prev.expect("a previous state matched");
                        Some(Event::new(EventType::Deleted, decode_at(&prev, kv.mod_revision)?))
                    }
                    (false, false) => None,
                }
            }
            StoreEvent::Delete { revision, prev, .. } => {
                let obj = decode_at(&prev, revision)?;
                self.predicate.matches(&obj).then_some(Event::new(EventType::Deleted, obj))
            }
            StoreEvent::Progress { revision } => self.allow_bookmarks.then(|| {
                let mut mark = self.bookmark.clone();
                meta::set(&mut mark, "resourceVersion", json!(revision.to_string()));
                Event::new(EventType::Bookmark, mark)
            }),
        })
    }

    fn error(&self, e: StoreError) -> Event {
        let err = match e {
            StoreError::Compacted { compacted, .. } => {
                ApiError::Expired(format!("too old resource version: {} ({compacted})", self.requested))
            }
            e => ApiError::Internal(e.to_string()),
        };
        error_event(&err)
    }
}

/// An `ERROR` event carrying `err` as a Status.
pub fn error_event(err: &ApiError) -> Event {
    Event::new(EventType::Error, err.to_status())
}
