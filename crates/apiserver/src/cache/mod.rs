//! The watch cache: one store watch per resource, fanned out to every API
//! watch, and lists served from memory (upstream's `cacher` package:
//! `cacher.go`, `watch_cache.go`, `ready.go`).
//!
//! One [`WatchCache`] serves one resource (one storage prefix such as
//! `/registry/pods/`). It starts on first use: a range read of the prefix
//! at revision R, then one store watch from R+1 with progress
//! notifications. It keeps
//!
//! - the current objects: key → the object's JSON as a list item and its
//!   mod revision ([`encoded`]: encoded once, so full lists are a
//!   concatenation of bytes), decoded on demand;
//! - a ring buffer of the last [`CacheOptions::capacity`] events (keys and
//!   bytes, again shared), so that watches from a recent resourceVersion
//!   replay from memory;
//! - the registered watchers, each with a bounded channel.
//!
//! Behaviour follows upstream's cacher:
//! - a watch from a revision inside the buffer's window replays the buffered
//!   events after it, then live ones; a revision the cache saw but has
//!   already evicted is an `ERROR` event 410 Expired `too old resource
//!   version: N (W)` (W: the newest evicted revision). A revision older than
//!   the cache itself (before its initial list) is not the cache's to
//!   judge: the caller falls back to the store, which answers from its
//!   history or 410 if compacted;
//! - each store event is decoded once and offered to every watcher without
//!   blocking, as one shared object whose JSON encoding is also computed
//!   once for all of them (upstream's `cachingObject`), so a watcher costs
//!   a pointer copy and its own write per event;
//! - a watcher whose channel ([`CacheOptions::watcher_buffer`] events) is
//!   full is detached from the live fan-out, so one slow reader never holds
//!   back the others; once it has drained its channel it catches up from
//!   the event buffer and re-attaches. Only a watcher that falls out of the
//!   buffer's window is terminated — its stream ends and the client
//!   re-watches, as with upstream's `cacheWatcher` (upstream terminates a
//!   watcher as soon as its channel stays full beyond a small time budget;
//!   catching up from the buffer keeps slow-but-moving watchers through
//!   bursts);
//! - selectors are applied per watcher with upstream's transitions (an
//!   object that stops matching is `DELETED`, one that starts is `ADDED`);
//! - store progress notifications become the cache's revision and, for
//!   watchers with `allowWatchBookmarks`, `BOOKMARK`s;
//! - lists and watches that need a minimum revision (`NotOlderThan`, or
//!   the store's current revision for consistent reads — upstream's
//!   `ConsistentListFromCache`, on by default since 1.31) wait up to
//!   [`CacheOptions::fresh_timeout`] for the cache to reach it, asking the
//!   store watch for a progress notification to confirm; if it does not,
//!   or while the cache is not initialised, the caller falls back to the
//!   store (upstream answers 504/429 there; falling back keeps today's
//!   answers).
//!
//! If the store watch fails, the cache terminates its watchers, marks
//! itself not ready (requests go to the store) and re-lists, backing off
//! from 1 s to 30 s while the store stays unusable.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use rkube_apimachinery::{meta, ApiError};
use rkube_store::{RangeRequest, Revision, SharedStore, WatchEvent as StoreEvent, WatchOptions as StoreWatchOptions};
use serde_json::{json, Value};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::storage::watch::{error_event, Event, EventType, SharedObject, WatchOptions, INITIAL_EVENTS_END_ANNOTATION};
use crate::storage::{continue_token, ListResult, Predicate};

mod encoded;

/// How many CPUs list decoding may use, read once: on Linux every
/// `available_parallelism` call re-reads the cgroup quota files, which
/// showed in profiles of list-heavy admission.
fn cpus() -> usize {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

#[cfg(test)]
mod tests;

pub use encoded::EncodedList;
use encoded::ItemForm;

/// How many events a client's own channel holds before the per-watcher task
/// waits for the client (the same depth as the store-backed watch).
const CLIENT_CHANNEL_CAPACITY: usize = 256;

/// First pause before re-listing after the store watch failed; doubled
/// after each failure up to `MAX_RESYNC_DELAY`.
const RESYNC_DELAY: Duration = Duration::from_millis(500);
const MAX_RESYNC_DELAY: Duration = Duration::from_secs(30);

/// How often a waiting reader re-asks the store for a progress notification.
const PROGRESS_REQUEST_INTERVAL: Duration = Duration::from_millis(250);

/// Tunables of a [`WatchCache`].
#[derive(Clone, Debug)]
pub struct CacheOptions {
    /// Events kept for watches that start from a past resourceVersion
    /// (upstream sizes its buffer between 100 and 102,400 events by a 75 s
    /// window; a fixed bound is simpler and predictable). Default 10,000.
    pub capacity: usize,
    /// Events that may wait for one watcher before it is detached from the
    /// live fan-out and must catch up from the event buffer (upstream: a
    /// channel of 10–1,000 events depending on the resource). Default 1,024.
    pub watcher_buffer: usize,
    /// How long a list or watch waits for the cache to reach the revision it
    /// needs before falling back to the store (upstream: 3 s). Default 3 s.
    pub fresh_timeout: Duration,
}

impl Default for CacheOptions {
    fn default() -> Self {
        CacheOptions { capacity: 10_000, watcher_buffer: 1_024, fresh_timeout: Duration::from_secs(3) }
    }
}

/// How fresh the cache must be to serve a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Freshness {
    /// Any state (`resourceVersion=0`).
    Any,
    /// At least this revision (`NotOlderThan`).
    AtLeast(Revision),
    /// At least the store's current revision at the time of the request
    /// (`resourceVersion` unset: a consistent read).
    Consistent,
}

/// The watch cache of one resource. Dropping it stops its store watch and
/// ends every watch it serves.
pub struct WatchCache {
    inner: Arc<Inner>,
    task: Mutex<Option<JoinHandle<()>>>,
    progress_requests: Mutex<Option<mpsc::UnboundedReceiver<()>>>,
}

struct Inner {
    store: SharedStore,
    /// `/registry/<resource>/`.
    root: String,
    /// A BOOKMARK object of the kind (its resourceVersion is set per use).
    bookmark: Value,
    /// How objects are kept.
    form: Arc<ItemForm>,
    opts: CacheOptions,
    state: RwLock<State>,
    /// `(ready, revision)`, published after every change.
    progress: watch::Sender<(bool, Revision)>,
    /// Asks the dispatcher to request a progress notification.
    progress_request: mpsc::UnboundedSender<()>,
    /// The last initial list or store watch failed and the cache is waiting
    /// to retry: requests go to the store without waiting.
    failing: AtomicBool,
    next_watcher: AtomicU64,
}

#[derive(Default)]
struct State {
    ready: bool,
    objects: BTreeMap<Arc<str>, Entry>,
    events: VecDeque<Recorded>,
    /// Every event up to this revision has been applied.
    revision: Revision,
    /// The revision of the initial list of this incarnation.
    start_revision: Revision,
    /// Every event after this revision is in `events`.
    window_start: Revision,
    watchers: Vec<Slot>,
}

#[derive(Clone)]
struct Entry {
    /// The list-item JSON ([`encoded`]), resourceVersion (the mod
    /// revision) included.
    value: Bytes,
}

/// One buffered event: bytes only, decoded again on replay.
#[derive(Clone)]
struct Recorded {
    key: Arc<str>,
    revision: Revision,
    /// The new value; `None` for a deletion.
    value: Option<Bytes>,
    prev: Option<Bytes>,
}

/// A decoded change as watchers receive it, shared by all of them. Both
/// objects carry `resourceVersion` = `revision` (upstream sets the
/// deletion's revision on the previous state of a deleted object too).
struct Decoded {
    revision: Revision,
    object: Option<Arc<SharedObject>>,
    prev: Option<Arc<SharedObject>>,
}

enum Live {
    Change(Decoded),
    Progress(Revision),
}

struct Slot {
    id: u64,
    prefix: String,
    tx: mpsc::Sender<Arc<Live>>,
    /// Set when the dispatcher detaches the watcher for falling behind (as
    /// opposed to a reset or shutdown): it may then catch up.
    lagged: Arc<AtomicBool>,
}

/// A watcher's live channel and its detached-for-lag flag.
type Attachment = (mpsc::Receiver<Arc<Live>>, Arc<AtomicBool>);

/// What a new watcher gets before live events.
enum Replay {
    /// Initial `ADDED` events for these objects, then (with
    /// `sendInitialEvents=true`) the initial-events-end bookmark at the revision.
    Snapshot(Vec<(Arc<str>, Entry)>, Revision),
    /// Buffered events after the watch's revision (the first field).
    Events(Revision, Vec<Recorded>),
}

impl WatchCache {
    /// A cache of the keys under `root` (`/registry/<resource>/`); `kind` and
    /// `api_version` name its BOOKMARK objects. Nothing starts until the
    /// first list or watch (or [`WatchCache::start`]).
    pub fn new(store: SharedStore, root: &str, kind: &str, api_version: &str, opts: CacheOptions) -> WatchCache {
        let (progress, _) = watch::channel((false, 0));
        let (progress_request, progress_rx) = mpsc::unbounded_channel();
        let bookmark = json!({
            "kind": kind,
            "apiVersion": api_version,
            "metadata": {"resourceVersion": "0", "creationTimestamp": null},
        });
        let inner = Inner {
            store,
            root: root.to_string(),
            bookmark,
            form: Arc::new(ItemForm::new(kind, api_version)),
            opts,
            state: RwLock::new(State::default()),
            progress,
            progress_request,
            failing: AtomicBool::new(false),
            next_watcher: AtomicU64::new(1),
        };
        WatchCache { inner: Arc::new(inner), task: Mutex::new(None), progress_requests: Mutex::new(Some(progress_rx)) }
    }

    /// Starts the initial list and the store watch if not yet started. Must
    /// be called inside a Tokio runtime.
    pub fn start(&self) {
        let mut task = self.task.lock().expect("watch cache task lock");
        if task.is_none() {
            let rx = self.progress_requests.lock().expect("watch cache lock").take().expect("started once");
            *task = Some(tokio::spawn(Inner::run(self.inner.clone(), rx)));
        }
    }

    /// Whether the cache holds a complete state; `(ready, revision)`.
    pub fn status(&self) -> (bool, Revision) {
        *self.inner.progress.borrow()
    }

    /// Number of objects held.
    pub fn len(&self) -> usize {
        self.inner.state.read().expect("watch cache state").objects.len()
    }

    /// Whether the cache holds no object.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of registered watchers.
    pub fn watcher_count(&self) -> usize {
        self.inner.state.read().expect("watch cache state").watchers.len()
    }

    /// Waits (at most [`CacheOptions::fresh_timeout`]) until the cache is
    /// ready and has seen the revision `freshness` asks for. Starts the cache.
    /// Returns `false` at once while the cache is retrying after a failure.
    pub async fn wait_fresh(&self, freshness: Freshness) -> bool {
        self.start();
        let target = match freshness {
            Freshness::Any => 0,
            Freshness::AtLeast(rv) => rv,
            Freshness::Consistent => match self.inner.store.current_revision().await {
                Ok(rv) => rv,
                Err(_) => return false,
            },
        };
        let deadline = Instant::now() + self.inner.opts.fresh_timeout;
        let mut rx = self.inner.progress.subscribe();
        loop {
            let (ready, revision) = *rx.borrow_and_update();
            if ready && revision >= target {
                return true;
            }
            if !ready && self.inner.failing.load(Ordering::SeqCst) {
                return false;
            }
            if ready {
                let _ = self.inner.progress_request.send(());
            }
            let now = Instant::now();
            if now >= deadline {
                tracing::debug!(component = crate::COMPONENT, root = %self.inner.root, target, revision, ready,
                    "watch cache not fresh in time; serving from the store");
                return false;
            }
            let tick = (now + PROGRESS_REQUEST_INTERVAL).min(deadline);
            if let Ok(Err(_)) = tokio::time::timeout_at(tick, rx.changed()).await {
                return false;
            }
        }
    }

    /// The object at `key` as list-item JSON, if the cache is ready and
    /// holds it (`None` otherwise: the caller asks the store). Starts the
    /// cache. Like upstream's informer-backed lookups, it may trail the
    /// store by the events still in flight.
    pub fn get_any(&self, key: &str) -> Option<Bytes> {
        self.start();
        let state = self.inner.state.read().expect("watch cache state");
        if !state.ready {
            return None;
        }
        state.objects.get(key).map(|e| e.value.clone())
    }

    /// Lists the objects under `prefix` (a collection prefix inside the
    /// cache's root) that `predicate` selects, sorted by key, at the cache's
    /// revision once it satisfies `freshness`. With `limit`, at most that
    /// many items and a continue token at the cache's revision (the next
    /// page is an exact read the store serves), with `remainingItemCount`
    /// when nothing filters, as upstream's cacher paginates.
    ///
    /// `None`: the cache cannot serve it in time (or, for
    /// [`Freshness::Any`], is not initialised yet); ask the store.
    pub async fn list(
        &self,
        prefix: &str,
        predicate: &Predicate,
        limit: Option<usize>,
        freshness: Freshness,
    ) -> Option<Result<ListResult, ApiError>> {
        if freshness == Freshness::Any && !self.status().0 {
            // Upstream forwards "any revision" lists to the store until the
            // cache is initialised rather than waiting.
            self.start();
            return None;
        }
        if !self.wait_fresh(freshness).await {
            return None;
        }
        let (entries, revision) = {
            let state = self.inner.state.read().expect("watch cache state");
            if !state.ready {
                return None;
            }
            (collect_prefix(&state.objects, prefix), state.revision)
        };
        Some(list_entries(&self.inner.form, prefix, &entries, revision, predicate, limit))
    }

    /// Every object under `prefix` as list-item JSON, in key order, at the
    /// cache's revision once it satisfies `freshness` (see
    /// `ResourceStore::list_encoded`). `None` as for [`WatchCache::list`].
    pub async fn list_items(&self, prefix: &str, freshness: Freshness) -> Option<(Vec<Bytes>, Revision)> {
        if freshness == Freshness::Any && !self.status().0 {
            self.start();
            return None;
        }
        if !self.wait_fresh(freshness).await {
            return None;
        }
        let state = self.inner.state.read().expect("watch cache state");
        if !state.ready {
            return None;
        }
        let items = state
            .objects
            .range::<str, _>((std::ops::Bound::Included(prefix), std::ops::Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(_, e)| e.value.clone())
            .collect();
        Some((items, state.revision))
    }

    /// Starts a watch of `prefix` served from the cache (see the module
    /// docs for the resourceVersion rules). `requested` is the parsed
    /// `opts.resource_version`.
    ///
    /// `None`: the cache cannot serve it (not fresh in time, or a revision
    /// older than the cache); ask the store.
    pub async fn watch(&self, prefix: &str, opts: &WatchOptions, requested: Revision) -> Option<mpsc::Receiver<Event>> {
        let initial = opts.send_initial_events.unwrap_or(requested == 0);
        let freshness =
            if opts.resource_version.is_empty() { Freshness::Consistent } else { Freshness::AtLeast(requested) };
        if !self.wait_fresh(freshness).await {
            return None;
        }
        let (tx, rx) = mpsc::channel(CLIENT_CHANNEL_CAPACITY);
        let (replay, attachment) = {
            let mut state = self.inner.state.write().expect("watch cache state");
            if !state.ready {
                return None;
            }
            let replay = if initial {
                Replay::Snapshot(collect_prefix(&state.objects, prefix), state.revision)
            } else {
                let from = if requested == 0 { state.revision } else { requested };
                if from < state.start_revision {
                    return None;
                }
                if from < state.window_start {
                    let err = ApiError::Expired(format!("too old resource version: {from} ({})", state.window_start));
                    drop(state);
                    let _ = tx.try_send(error_event(&err));
                    return Some(rx);
                }
                Replay::Events(from, buffered_after(&state, prefix, from))
            };
            (replay, self.inner.attach(&mut state, prefix))
        };
        let watcher = Watcher {
            cache: Arc::downgrade(&self.inner),
            prefix: prefix.to_string(),
            form: self.inner.form.clone(),
            predicate: opts.predicate.clone(),
            allow_bookmarks: opts.allow_bookmarks,
            initial_end_bookmark: opts.send_initial_events == Some(true),
            bookmark: self.inner.bookmark.clone(),
            tx,
        };
        tokio::spawn(watcher.run(replay, attachment));
        Some(rx)
    }
}

impl Drop for WatchCache {
    fn drop(&mut self) {
        if let Some(task) = self.task.get_mut().ok().and_then(|t| t.take()) {
            task.abort();
        }
    }
}

/// The entries under `prefix`, cheaply (keys and bytes are shared).
fn collect_prefix(objects: &BTreeMap<Arc<str>, Entry>, prefix: &str) -> Vec<(Arc<str>, Entry)> {
    objects
        .range::<str, _>((std::ops::Bound::Included(prefix), std::ops::Bound::Unbounded))
        .take_while(|(k, _)| k.starts_with(prefix))
        .map(|(k, e)| (k.clone(), e.clone()))
        .collect()
}

/// The buffered events after revision `from` under `prefix` (cheap clones).
fn buffered_after(state: &State, prefix: &str, from: Revision) -> Vec<Recorded> {
    let first = state.events.partition_point(|e| e.revision <= from);
    state.events.range(first..).filter(|e| e.key.starts_with(prefix)).cloned().collect()
}

/// Lists at least this long are decoded on several threads.
const PARALLEL_DECODE_MIN: usize = 4_096;

/// Decodes, filters and paginates a snapshot (sorted by key).
fn list_entries(
    form: &ItemForm,
    prefix: &str,
    entries: &[(Arc<str>, Entry)],
    revision: Revision,
    predicate: &Predicate,
    limit: Option<usize>,
) -> Result<ListResult, ApiError> {
    let threads = cpus();
    if limit.is_some() || entries.len() < PARALLEL_DECODE_MIN || threads < 2 {
        return list_page(form, prefix, entries, revision, predicate, limit);
    }
    // Decoding dominates a full list: split it over the cores, keeping key order.
    let chunk = entries.len().div_ceil(threads);
    let parts: Vec<Result<ListResult, ApiError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = entries
            .chunks(chunk)
            .map(|part| scope.spawn(move || list_page(form, prefix, part, revision, predicate, None)))
            .collect();
        handles.into_iter().map(|h| h.join().expect("a decoding thread panicked")).collect()
    });
    let mut items = Vec::with_capacity(entries.len());
    for part in parts {
        items.extend(part?.items);
    }
    Ok(ListResult { items, revision, continue_token: None, remaining_item_count: None })
}

/// [`list_entries`] on one thread.
fn list_page(
    form: &ItemForm,
    prefix: &str,
    entries: &[(Arc<str>, Entry)],
    revision: Revision,
    predicate: &Predicate,
    limit: Option<usize>,
) -> Result<ListResult, ApiError> {
    let mut items = Vec::with_capacity(limit.unwrap_or(entries.len()).min(entries.len()));
    let mut next = None;
    for (i, (key, entry)) in entries.iter().enumerate() {
        let obj = form.decode(key, &entry.value)?;
        if predicate.matches(&obj) {
            items.push(obj);
            if limit.is_some_and(|l| items.len() >= l) {
                if i + 1 < entries.len() {
                    next = Some((format!("{key}\0"), entries.len() - i - 1));
                }
                break;
            }
        }
    }
    let continue_token = next.as_ref().map(|(start, _)| continue_token::encode(prefix, start, revision));
    let remaining_item_count =
        next.filter(|_| predicate.is_everything()).map(|(_, remaining)| remaining as i64).filter(|n| *n > 0);
    Ok(ListResult { items, revision, continue_token, remaining_item_count })
}

/// A stored value as an object with `resourceVersion` = `revision`.
fn decode(key: &str, value: &[u8], revision: Revision) -> Result<Value, ApiError> {
    let mut obj: Value = serde_json::from_slice(value)
        .map_err(|e| ApiError::Internal(format!("stored object {key} is not valid JSON: {e}")))?;
    meta::set(&mut obj, "resourceVersion", Value::String(revision.to_string()));
    Ok(obj)
}

impl Recorded {
    fn decode(&self) -> Result<Decoded, ApiError> {
        let shared = |v: &Bytes| decode(&self.key, v, self.revision).map(|o| Arc::new(SharedObject::new(o)));
        Ok(Decoded {
            revision: self.revision,
            object: self.value.as_ref().map(shared).transpose()?,
            prev: self.prev.as_ref().map(shared).transpose()?,
        })
    }
}

impl Inner {
    /// Registers a live channel for a watcher of `prefix`; call with the
    /// state locked right after computing its replay, so no event is missed.
    fn attach(&self, state: &mut State, prefix: &str) -> Attachment {
        let (tx, rx) = mpsc::channel(self.opts.watcher_buffer.max(1));
        let lagged = Arc::new(AtomicBool::new(false));
        let id = self.next_watcher.fetch_add(1, Ordering::Relaxed);
        state.watchers.push(Slot { id, prefix: prefix.to_string(), tx, lagged: lagged.clone() });
        (rx, lagged)
    }

    /// Re-attaches a watcher that was detached for falling behind and has
    /// delivered every event up to `from`: the buffered events after it,
    /// then live ones. `None` once `from` has left the buffer's window (or
    /// the cache has been reset past it): the watch must end.
    fn resume(&self, prefix: &str, from: Revision) -> Option<(Vec<Recorded>, Attachment)> {
        let mut state = self.state.write().expect("watch cache state");
        if !state.ready || from < state.window_start || from < state.start_revision {
            return None;
        }
        let events = buffered_after(&state, prefix, from);
        Some((events, self.attach(&mut state, prefix)))
    }

    /// The dispatcher: list, watch, apply; on failure, reset and start over.
    async fn run(self: Arc<Self>, mut progress_requests: mpsc::UnboundedReceiver<()>) {
        let mut delay = RESYNC_DELAY;
        loop {
            let started = Instant::now();
            let err = self.sync(&mut progress_requests).await;
            // Back off while the store stays unusable; start over after a long run.
            delay = if started.elapsed() > MAX_RESYNC_DELAY { RESYNC_DELAY } else { (delay * 2).min(MAX_RESYNC_DELAY) };
            tracing::warn!(component = crate::COMPONENT, root = %self.root, error = %err,
                "watch cache lost its store watch; terminating its watchers and re-listing");
            {
                let mut state = self.state.write().expect("watch cache state");
                *state = State::default();
            }
            self.failing.store(true, Ordering::SeqCst);
            self.progress.send_replace((false, 0));
            tokio::time::sleep(delay).await;
        }
    }

    /// One incarnation: initial list, then the store watch until it fails.
    async fn sync(&self, progress_requests: &mut mpsc::UnboundedReceiver<()>) -> String {
        let list = match self.store.range(RangeRequest { prefix: self.root.clone(), ..Default::default() }).await {
            Ok(list) => list,
            Err(e) => return e.to_string(),
        };
        let revision = list.revision;
        let count = list.kvs.len();
        let objects = self.initial_objects(list.kvs);
        {
            let mut state = self.state.write().expect("watch cache state");
            state.objects = objects;
            state.events.clear();
            state.revision = revision;
            state.start_revision = revision;
            state.window_start = revision;
            state.ready = true;
        }
        self.failing.store(false, Ordering::SeqCst);
        self.progress.send_replace((true, revision));
        tracing::debug!(component = crate::COMPONENT, root = %self.root, revision, objects = count, "watch cache ready");
        let mut watch =
            match self.store.watch(&self.root, revision + 1, StoreWatchOptions { progress_notify: true }).await {
                Ok(w) => w,
                Err(e) => return e.to_string(),
            };
        loop {
            tokio::select! {
                item = watch.events.next() => match item {
                    Some(Ok(event)) => self.apply(event),
                    Some(Err(e)) => return e.to_string(),
                    None => return "the store watch ended".into(),
                },
                Some(()) = progress_requests.recv() => {
                    // Coalesce a burst of requests into one.
                    while progress_requests.try_recv().is_ok() {}
                    watch.request_progress();
                }
            }
        }
    }

    /// The initial list in the cache's form, encoded on several threads
    /// when long (as large lists are decoded).
    fn initial_objects(&self, kvs: Vec<rkube_store::KeyValue>) -> BTreeMap<Arc<str>, Entry> {
        let convert = |kvs: &[rkube_store::KeyValue]| -> Vec<(Arc<str>, Entry)> {
            kvs.iter()
                .map(|kv| {
                    let value = self.form.item_of_stored(&kv.key, &kv.value, kv.mod_revision);
                    (Arc::from(kv.key.as_str()), Entry { value })
                })
                .collect()
        };
        let threads = cpus();
        if kvs.len() < PARALLEL_DECODE_MIN || threads < 2 {
            return convert(&kvs).into_iter().collect();
        }
        let chunk = kvs.len().div_ceil(threads);
        std::thread::scope(|scope| {
            let handles: Vec<_> = kvs.chunks(chunk).map(|part| scope.spawn(move || convert(part))).collect();
            handles.into_iter().flat_map(|h| h.join().expect("an encoding thread panicked")).collect()
        })
    }

    /// Applies one store event and offers it to every watcher.
    fn apply(&self, event: StoreEvent) {
        let recorded = match event {
            StoreEvent::Progress { revision } => {
                let mut state = self.state.write().expect("watch cache state");
                state.revision = state.revision.max(revision);
                let live = Arc::new(Live::Progress(state.revision));
                self.fan_out(&mut state, &live, None);
                let rv = state.revision;
                drop(state);
                self.progress.send_replace((true, rv));
                return;
            }
            StoreEvent::Put { kv, prev } => Recorded {
                key: Arc::from(kv.key),
                revision: kv.mod_revision,
                value: Some(kv.value),
                prev: prev.map(|p| p.value),
            },
            StoreEvent::Delete { key, revision, prev } => {
                Recorded { key: Arc::from(key), revision, value: None, prev: Some(prev.value) }
            }
        };
        // Decode once, outside the lock, for every live watcher.
        let decoded = match recorded.decode() {
            Ok(d) => Some(Arc::new(Live::Change(d))),
            Err(e) => {
                tracing::error!(component = crate::COMPONENT, key = %recorded.key, error = %e,
                    "undecodable object in a watch event; watchers will not see it");
                None
            }
        };
        // The cache's form of the new state, encoded once, outside the lock.
        let item = match (&recorded.value, decoded.as_deref()) {
            (Some(_), Some(Live::Change(Decoded { object: Some(obj), .. }))) => Some(self.form.encode(obj)),
            (Some(value), _) => Some(value.clone()),
            (None, _) => None,
        };
        let mut state = self.state.write().expect("watch cache state");
        match item {
            Some(value) => {
                let entry = Entry { value };
                state.objects.insert(recorded.key.clone(), entry);
            }
            None => {
                state.objects.remove(&recorded.key);
            }
        }
        state.revision = state.revision.max(recorded.revision);
        if let Some(live) = &decoded {
            let key = recorded.key.clone();
            self.fan_out(&mut state, live, Some(&key));
        }
        state.events.push_back(recorded);
        while state.events.len() > self.opts.capacity {
            if let Some(evicted) = state.events.pop_front() {
                state.window_start = evicted.revision;
            }
        }
        let rv = state.revision;
        drop(state);
        self.progress.send_replace((true, rv));
    }

    /// Offers `live` to every watcher whose prefix covers `key` (all of them
    /// for progress), never blocking; drops watchers that are gone or full.
    fn fan_out(&self, state: &mut State, live: &Arc<Live>, key: Option<&str>) {
        let root = &self.root;
        state.watchers.retain(|slot| {
            if key.is_some_and(|k| !k.starts_with(&slot.prefix)) {
                return true;
            }
            match slot.tx.try_send(live.clone()) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    // It drains its channel, then catches up from the buffer.
                    tracing::debug!(component = crate::COMPONENT, root = %root, watcher = slot.id,
                        "detaching a watcher that fell behind; it will catch up from the event buffer");
                    slot.lagged.store(true, Ordering::SeqCst);
                    false
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            }
        });
    }
}

/// The task feeding one API watch.
struct Watcher {
    form: Arc<ItemForm>,
    /// To catch up after falling behind; weak so watchers never keep a
    /// dropped cache alive.
    cache: Weak<Inner>,
    prefix: String,
    predicate: Predicate,
    allow_bookmarks: bool,
    initial_end_bookmark: bool,
    bookmark: Value,
    tx: mpsc::Sender<Event>,
}

impl Watcher {
    async fn run(self, replay: Replay, attachment: Attachment) {
        // Every change up to `last` has been offered to the client.
        let mut last = match replay {
            Replay::Snapshot(entries, revision) => {
                for (key, entry) in entries {
                    let obj = match self.form.decode(&key, &entry.value) {
                        Ok(obj) => obj,
                        Err(e) => return self.fail(&e).await,
                    };
                    if self.predicate.matches(&obj) && !self.send(EventType::Added, obj).await {
                        return;
                    }
                }
                if self.initial_end_bookmark {
                    let mut mark = self.bookmark_at(revision);
                    mark["metadata"]["annotations"] = json!({INITIAL_EVENTS_END_ANNOTATION: "true"});
                    if !self.send(EventType::Bookmark, mark).await {
                        return;
                    }
                }
                revision
            }
            Replay::Events(from, events) => match self.replay(from, events).await {
                Some(last) => last,
                None => return,
            },
        };
        let (mut live, mut lagged) = attachment;
        loop {
            let item = tokio::select! {
                item = live.recv() => item,
                _ = self.tx.closed() => return,
            };
            let Some(item) = item else {
                // Detached: for falling behind (catch up from the buffer),
                // or because the cache reset or went away (end the watch).
                if !lagged.load(Ordering::SeqCst) {
                    return;
                }
                let Some((events, attachment)) = self.cache.upgrade().and_then(|c| c.resume(&self.prefix, last)) else {
                    tracing::info!(component = crate::COMPONENT, prefix = %self.prefix, revision = last,
                        "terminating a watcher that fell behind the watch cache's event buffer");
                    return;
                };
                (live, lagged) = attachment;
                last = match self.replay(last, events).await {
                    Some(last) => last,
                    None => return,
                };
                continue;
            };
            last = match &*item {
                Live::Change(change) => change.revision,
                Live::Progress(revision) => *revision,
            }
            .max(last);
            if let Some(event) = self.convert(&item) {
                if self.tx.send(event).await.is_err() {
                    return;
                }
            }
        }
    }

    /// Sends buffered events (after `from`); the last revision sent, or
    /// `None` if the watch is over.
    async fn replay(&self, from: Revision, events: Vec<Recorded>) -> Option<Revision> {
        let mut last = from;
        for recorded in events {
            let decoded = match recorded.decode() {
                Ok(d) => d,
                Err(e) => {
                    self.fail(&e).await;
                    return None;
                }
            };
            last = recorded.revision;
            if let Some(event) = self.convert(&Live::Change(decoded)) {
                if self.tx.send(event).await.is_err() {
                    return None;
                }
            }
        }
        Some(last)
    }

    async fn send(&self, kind: EventType, object: Value) -> bool {
        self.tx.send(Event::new(kind, object)).await.is_ok()
    }

    async fn fail(&self, err: &ApiError) {
        let _ = self.tx.send(error_event(err)).await;
    }

    fn bookmark_at(&self, revision: Revision) -> Value {
        let mut mark = self.bookmark.clone();
        mark["metadata"]["resourceVersion"] = json!(revision.to_string());
        mark
    }

    /// A change as this watcher's client sees it through its predicate.
    fn convert(&self, live: &Live) -> Option<Event> {
        let change = match live {
            Live::Progress(revision) => {
                return self.allow_bookmarks.then(|| Event::new(EventType::Bookmark, self.bookmark_at(*revision)));
            }
            Live::Change(change) => change,
        };
        let now = change.object.as_ref().is_some_and(|o| self.predicate.matches(o));
        let before = change.prev.as_ref().is_some_and(|p| self.predicate.matches(p));
        match (before, now, &change.object) {
            (false, true, Some(obj)) => Some(Event { kind: EventType::Added, object: obj.clone() }),
            (true, true, Some(obj)) => Some(Event { kind: EventType::Modified, object: obj.clone() }),
            (true, false, _) => {
                let prev = change.prev.as_ref().expect("a previous state matched");
                Some(Event { kind: EventType::Deleted, object: prev.clone() })
            }
            _ => None,
        }
    }
}
