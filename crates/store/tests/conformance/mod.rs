//! The store conformance suite: backend-agnostic checks of the [`Store`]
//! contract (etcd v3 MVCC semantics). Every backend must pass all of them.
//!
//! # Adding a backend
//!
//! In `tests/<backend>.rs`:
//!
//! ```ignore
//! mod conformance;
//! use conformance::Backend;
//!
//! struct MyBackend { /* owns whatever keeps the backend alive */ }
//!
//! #[async_trait::async_trait]
//! impl Backend for MyBackend {
//!     fn store(&self) -> rkube_store::SharedStore { /* the current handle */ }
//!     async fn restart(&mut self) { /* drop the handle, reopen the same data */ }
//!     fn progress_interval(&self) -> std::time::Duration { /* idle progress interval */ }
//! }
//!
//! async fn my_backend() -> MyBackend { /* a fresh, empty backend */ }
//!
//! conformance::conformance_tests!(my_backend);
//! ```
//!
//! The macro generates one `#[tokio::test(flavor = "multi_thread")]` per
//! check, named after the check, each calling the factory for a fresh
//! backend. `mod conformance;` must be declared at the test crate's root.
//!
//! Each check assumes it has the backend to itself (nobody else writes or
//! compacts it while it runs); revisions are never assumed to start at a
//! particular number. Time-based checks wait generously (TTL: up to 20 s).
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use rkube_store::{
    KeyValue, RangeRequest, Revision, SharedStore, StoreError, Watch, WatchEvent, WatchOptions, MAX_VALUE_BYTES,
};

/// One backend under test.
#[async_trait::async_trait]
pub trait Backend: Send + Sync + 'static {
    /// The store handle; the same instance until [`Backend::restart`].
    fn store(&self) -> SharedStore;

    /// Closes the store and opens the same data again (a process restart).
    /// Checks drop every handle and watch they hold before calling this.
    async fn restart(&mut self);

    /// The idle interval after which a watch with `progress_notify` gets a
    /// progress event. Checks wait up to several times this (plus slack).
    fn progress_interval(&self) -> Duration;
}

/// Longest any single awaited event may take (TTL checks wait longer).
pub const EVENT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest a whole check may take.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(180);

/// Generates one `#[tokio::test]` per conformance check against the
/// backend returned by `$factory` (an `async fn() -> impl Backend`).
macro_rules! conformance_tests {
    ($factory:path) => {
        $crate::conformance::conformance_tests!(@checks $factory;
            revisions_increase_and_track_create_and_mod_revisions,
            writes_are_visible_to_the_next_read,
            reads_at_old_revisions_see_the_state_of_that_revision,
            reads_above_the_current_revision_are_future_revisions,
            create_refuses_existing_keys_until_they_are_deleted,
            update_and_delete_compare_the_mod_revision,
            range_counts_keys_from_start_regardless_of_limit,
            paginated_range_at_a_fixed_revision_ignores_concurrent_writes,
            prefixes_are_isolated_byte_wise,
            watch_replays_history_then_follows_live_writes_with_prev_values,
            watch_from_zero_delivers_only_later_writes,
            request_progress_reports_the_current_revision_after_pending_events,
            idle_watch_with_progress_notify_gets_progress_events,
            compaction_refuses_older_reads_and_watches_and_keeps_the_compacted_state,
            values_up_to_the_size_limit_are_stored_and_larger_ones_refused,
            ttl_expiry_deletes_the_key_with_a_watch_event,
            update_without_ttl_clears_the_ttl_and_update_with_ttl_sets_one,
            concurrent_writers_and_watchers_see_every_event_exactly_once_in_order,
            restart_keeps_data_and_continues_revisions,
        );
    };
    (@checks $factory:path; $($check:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $check() {
                let backend = $factory().await;
                $crate::conformance::run_check(stringify!($check), $crate::conformance::$check(backend)).await;
            }
        )+
    };
}
pub(crate) use conformance_tests;

/// Runs one check with an overall timeout, so a hung watch fails the test
/// instead of hanging the suite.
pub async fn run_check(name: &str, check: impl std::future::Future<Output = ()>) {
    if tokio::time::timeout(CHECK_TIMEOUT, check).await.is_err() {
        panic!("conformance check {name} did not finish within {CHECK_TIMEOUT:?}");
    }
}

// ---------------------------------------------------------------- helpers

fn val(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn put(kv: &KeyValue, prev: Option<&KeyValue>) -> WatchEvent {
    WatchEvent::Put { kv: kv.clone(), prev: prev.cloned() }
}

fn del(key: &str, revision: Revision, prev: &KeyValue) -> WatchEvent {
    WatchEvent::Delete { key: key.to_string(), revision, prev: prev.clone() }
}

fn range_req(prefix: &str, start: Option<&str>, limit: Option<usize>, revision: Option<Revision>) -> RangeRequest {
    RangeRequest { prefix: prefix.into(), start: start.map(Into::into), limit, revision }
}

/// The next item of a watch (change or progress), failing on error, end of
/// stream or after `timeout`.
async fn next_item(w: &mut Watch, timeout: Duration) -> WatchEvent {
    match tokio::time::timeout(timeout, w.events.next()).await {
        Ok(Some(Ok(ev))) => ev,
        Ok(Some(Err(e))) => panic!("watch failed: {e}"),
        Ok(None) => panic!("watch ended unexpectedly"),
        Err(_) => panic!("no watch event within {timeout:?}"),
    }
}

/// The next Put or Delete, skipping progress events.
async fn next_change(w: &mut Watch, timeout: Duration) -> WatchEvent {
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match next_item(w, left).await {
            WatchEvent::Progress { .. } => continue,
            ev => return ev,
        }
    }
}

async fn changes(w: &mut Watch, n: usize) -> Vec<WatchEvent> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(next_change(w, EVENT_TIMEOUT).await);
    }
    out
}

/// Asks for progress and returns every change delivered before it and the
/// progress revision. Proves that nothing else is pending on the stream.
async fn drain_until_progress(w: &mut Watch) -> (Vec<WatchEvent>, Revision) {
    w.request_progress();
    let mut seen = Vec::new();
    loop {
        match next_item(w, EVENT_TIMEOUT).await {
            WatchEvent::Progress { revision } => return (seen, revision),
            ev => seen.push(ev),
        }
    }
}

/// Asserts that watching `prefix` from `start` fails with `Compacted`,
/// either at once or as the stream's only item.
async fn assert_watch_compacted(store: &SharedStore, prefix: &str, start: Revision, compacted: Revision) {
    match store.watch(prefix, start, WatchOptions::default()).await {
        Err(StoreError::Compacted { requested, compacted: c }) => {
            assert_eq!(c, compacted, "watch from {start}");
            assert!(requested <= compacted, "watch from {start}: requested {requested} is not compacted");
        }
        Err(e) => panic!("watch from {start}: expected Compacted, got {e}"),
        Ok(mut w) => {
            match tokio::time::timeout(EVENT_TIMEOUT, w.events.next()).await {
                Ok(Some(Err(StoreError::Compacted { compacted: c, .. }))) => assert_eq!(c, compacted),
                Ok(Some(other)) => panic!("watch from {start}: expected Compacted, got {other:?}"),
                Ok(None) => panic!("watch from {start}: ended without the Compacted error"),
                Err(_) => panic!("watch from {start}: no Compacted error within {EVENT_TIMEOUT:?}"),
            }
            match tokio::time::timeout(EVENT_TIMEOUT, w.events.next()).await {
                Ok(None) => {}
                Ok(Some(other)) => panic!("watch from {start}: the stream went on after Compacted: {other:?}"),
                Err(_) => panic!("watch from {start}: the stream did not end after Compacted"),
            }
        }
    }
}

// ---------------------------------------------------------------- checks

/// Every write gets a new, higher revision; `create_revision` marks the
/// incarnation and `mod_revision` the write; failed writes consume none.
pub async fn revisions_increase_and_track_create_and_mod_revisions(backend: impl Backend) {
    let s = backend.store();
    let r0 = s.current_revision().await.unwrap();
    let a = s.create("/rev/a", val("1"), None).await.unwrap();
    assert_eq!(a.create_revision, a.mod_revision);
    assert!(a.mod_revision > r0);
    assert_eq!(s.current_revision().await.unwrap(), a.mod_revision);
    let b = s.create("/rev/b", val("1"), None).await.unwrap();
    assert!(b.mod_revision > a.mod_revision);
    let a2 = s.update("/rev/a", val("2"), a.mod_revision, None).await.unwrap();
    assert_eq!(a2.create_revision, a.create_revision, "an update keeps the create revision");
    assert!(a2.mod_revision > b.mod_revision);
    assert_eq!(&a2.value[..], b"2");

    // Failed writes leave the revision alone.
    let before = s.current_revision().await.unwrap();
    assert!(s.create("/rev/a", val("x"), None).await.is_err());
    assert!(s.update("/rev/a", val("x"), a.mod_revision, None).await.is_err());
    assert!(s.delete("/rev/missing", None).await.is_err());
    assert_eq!(s.current_revision().await.unwrap(), before, "failed writes must not consume a revision");

    let d = s.delete("/rev/b", None).await.unwrap();
    assert!(d.revision > a2.mod_revision);
    assert_eq!(d.prev, b);
    let b2 = s.create("/rev/b", val("again"), None).await.unwrap();
    assert_eq!(b2.create_revision, b2.mod_revision, "a re-created key is a new incarnation");
    assert!(b2.create_revision > d.revision);

    let got = s.get("/rev/a", None).await.unwrap();
    assert_eq!(got.kv, Some(a2));
    assert_eq!(got.revision, b2.mod_revision, "reads report the current revision");
}

/// Read-your-writes: a read issued after a write was acknowledged sees it.
pub async fn writes_are_visible_to_the_next_read(backend: impl Backend) {
    let s = backend.store();
    for i in 0..50 {
        let key = format!("/ryw/{i:02}");
        let kv = s.create(&key, val("v1"), None).await.unwrap();
        let got = s.get(&key, None).await.unwrap();
        assert_eq!(got.kv.as_ref(), Some(&kv), "get right after create");
        assert!(got.revision >= kv.mod_revision);
        let kv2 = s.update(&key, val("v2"), kv.mod_revision, None).await.unwrap();
        let listed = s.range(range_req("/ryw/", Some(&key), Some(1), None)).await.unwrap();
        assert_eq!(listed.kvs, vec![kv2.clone()], "range right after update");
        let d = s.delete(&key, Some(kv2.mod_revision)).await.unwrap();
        assert_eq!(s.get(&key, None).await.unwrap().kv, None, "get right after delete");
        assert_eq!(s.current_revision().await.unwrap(), d.revision);
    }
}

/// get and range at a past revision return the state as of that revision.
pub async fn reads_at_old_revisions_see_the_state_of_that_revision(backend: impl Backend) {
    let s = backend.store();
    let a1 = s.create("/old/a", val("a1"), None).await.unwrap();
    let a2 = s.update("/old/a", val("a2"), a1.mod_revision, None).await.unwrap();
    let b = s.create("/old/b", val("b"), None).await.unwrap();
    let gone = s.delete("/old/a", None).await.unwrap();
    let a3 = s.create("/old/a", val("a3"), None).await.unwrap();

    let at = |rev| {
        let s = s.clone();
        async move { s.get("/old/a", Some(rev)).await.unwrap() }
    };
    assert_eq!(at(a1.mod_revision).await.kv, Some(a1.clone()));
    assert_eq!(at(a2.mod_revision).await.kv, Some(a2.clone()));
    assert_eq!(at(b.mod_revision).await.kv, Some(a2.clone()));
    assert_eq!(at(gone.revision).await.kv, None, "deleted at that revision");
    assert_eq!(at(a3.mod_revision).await.kv, Some(a3.clone()));
    assert_eq!(at(a2.mod_revision).await.revision, a2.mod_revision, "served at the requested revision");

    let r = s.range(range_req("/old/", None, None, Some(b.mod_revision))).await.unwrap();
    assert_eq!((r.kvs, r.count, r.more, r.revision), (vec![a2.clone(), b.clone()], 2, false, b.mod_revision));
    let r = s.range(range_req("/old/", None, None, Some(gone.revision))).await.unwrap();
    assert_eq!((r.kvs, r.count), (vec![b.clone()], 1));
    let r = s.range(range_req("/old/", None, None, Some(a1.mod_revision))).await.unwrap();
    assert_eq!(r.kvs, vec![a1.clone()]);
    let r = s.range(range_req("/old/", None, Some(1), Some(a3.mod_revision))).await.unwrap();
    assert_eq!((r.kvs, r.count, r.more), (vec![a3.clone()], 2, true));
}

/// Reading above the current revision is `FutureRevision` (etcd's
/// ErrFutureRev), for get and range alike.
pub async fn reads_above_the_current_revision_are_future_revisions(backend: impl Backend) {
    let s = backend.store();
    let kv = s.create("/future/a", val("1"), None).await.unwrap();
    let current = s.current_revision().await.unwrap();
    assert_eq!(current, kv.mod_revision);
    let err = s.get("/future/a", Some(current + 10)).await.unwrap_err();
    assert_eq!(err, StoreError::FutureRevision { requested: current + 10, current });
    let err = s.range(range_req("/future/", None, None, Some(current + 1))).await.unwrap_err();
    assert_eq!(err, StoreError::FutureRevision { requested: current + 1, current });
    assert_eq!(s.get("/future/a", Some(current)).await.unwrap().kv, Some(kv));
}

/// create is create-if-absent: AlreadyExists while the key lives.
pub async fn create_refuses_existing_keys_until_they_are_deleted(backend: impl Backend) {
    let s = backend.store();
    let kv = s.create("/create/k", val("first"), None).await.unwrap();
    let err = s.create("/create/k", val("second"), None).await.unwrap_err();
    assert_eq!(err, StoreError::AlreadyExists { key: "/create/k".into() });
    assert_eq!(s.get("/create/k", None).await.unwrap().kv, Some(kv.clone()), "the refused create changed nothing");
    s.delete("/create/k", None).await.unwrap();
    let again = s.create("/create/k", val("third"), None).await.unwrap();
    assert!(again.create_revision > kv.create_revision);
    assert_eq!(&again.value[..], b"third");
}

/// update and delete are compare-and-swap on the mod revision; a conflict
/// carries the current value so the caller can retry without a read.
pub async fn update_and_delete_compare_the_mod_revision(backend: impl Backend) {
    let s = backend.store();
    let v1 = s.create("/cas/k", val("v1"), None).await.unwrap();
    let v2 = s.update("/cas/k", val("v2"), v1.mod_revision, None).await.unwrap();

    match s.update("/cas/k", val("stale"), v1.mod_revision, None).await.unwrap_err() {
        StoreError::Conflict { key, expected, current } => {
            assert_eq!((key.as_str(), expected), ("/cas/k", v1.mod_revision));
            assert_eq!(current, Some(v2.clone()), "the conflict carries the current value");
        }
        e => panic!("expected Conflict, got {e}"),
    }
    match s.delete("/cas/k", Some(v1.mod_revision)).await.unwrap_err() {
        StoreError::Conflict { current, .. } => assert_eq!(current, Some(v2.clone())),
        e => panic!("expected Conflict, got {e}"),
    }
    assert_eq!(s.get("/cas/k", None).await.unwrap().kv, Some(v2.clone()), "failed CAS changed nothing");

    let err = s.update("/cas/missing", val("x"), v1.mod_revision, None).await.unwrap_err();
    assert_eq!(err, StoreError::NotFound { key: "/cas/missing".into() });
    assert_eq!(s.get("/cas/missing", None).await.unwrap().kv, None, "update never creates");
    let err = s.delete("/cas/missing", None).await.unwrap_err();
    assert_eq!(err, StoreError::NotFound { key: "/cas/missing".into() });
    let err = s.delete("/cas/missing", Some(1)).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. } | StoreError::Conflict { current: None, .. }), "{err}");

    let v3 = s.update("/cas/k", val("v3"), v2.mod_revision, None).await.unwrap();
    let d = s.delete("/cas/k", Some(v3.mod_revision)).await.unwrap();
    assert_eq!(d.prev, v3, "delete returns the value it removed");
    assert!(d.revision > v3.mod_revision);
    let err = s.update("/cas/k", val("v4"), v3.mod_revision, None).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "update of a deleted key: {err}");
}

/// count is the number of keys in `[start, prefix end)`, independent of
/// limit; more says whether limit cut the result; keys come sorted.
pub async fn range_counts_keys_from_start_regardless_of_limit(backend: impl Backend) {
    let s = backend.store();
    // Created out of order: the result must still be sorted by key.
    for i in [3, 7, 0, 9, 1, 5, 8, 2, 6, 4] {
        s.create(&format!("/count/k{i}"), val(&i.to_string()), None).await.unwrap();
    }
    let keys = |r: &rkube_store::RangeResponse| r.kvs.iter().map(|kv| kv.key.clone()).collect::<Vec<_>>();
    let r = s.range(range_req("/count/", None, Some(3), None)).await.unwrap();
    assert_eq!(
        (keys(&r), r.count, r.more),
        (vec!["/count/k0".to_string(), "/count/k1".into(), "/count/k2".into()], 10, true)
    );
    let r = s.range(range_req("/count/", Some("/count/k5"), Some(3), None)).await.unwrap();
    assert_eq!(
        (keys(&r), r.count, r.more),
        (vec!["/count/k5".to_string(), "/count/k6".into(), "/count/k7".into()], 5, true)
    );
    let r = s.range(range_req("/count/", Some("/count/k7"), Some(3), None)).await.unwrap();
    assert_eq!((r.kvs.len(), r.count, r.more), (3, 3, false), "exactly the remaining keys");
    for limit in [None, Some(0), Some(10), Some(100)] {
        let r = s.range(range_req("/count/", None, limit, None)).await.unwrap();
        assert_eq!((r.kvs.len(), r.count, r.more), (10, 10, false), "limit {limit:?}");
    }
    let r = s.range(range_req("/count/", Some("/count/k9\0"), None, None)).await.unwrap();
    assert_eq!((r.kvs.len(), r.count, r.more), (0, 0, false), "start past the last key");
    let r = s.range(range_req("/nothing/", None, Some(5), None)).await.unwrap();
    assert_eq!((r.kvs.len(), r.count, r.more), (0, 0, false));
    assert_eq!(r.revision, s.current_revision().await.unwrap());
}

/// Paging with limit + continue key at the first page's revision yields
/// exactly the snapshot at that revision while writers change the keys.
pub async fn paginated_range_at_a_fixed_revision_ignores_concurrent_writes(backend: impl Backend) {
    let s = backend.store();
    for i in 0..60 {
        s.create(&format!("/page/k{i:03}"), val(&format!("v{i}")), None).await.unwrap();
    }
    let snapshot = s.range(range_req("/page/", None, None, None)).await.unwrap();
    assert_eq!(snapshot.kvs.len(), 60);
    let rev = snapshot.revision;

    let mut writers = Vec::new();
    for t in 0..4u32 {
        let s = s.clone();
        writers.push(tokio::spawn(async move {
            for j in 0..30u32 {
                let key = format!("/page/k{:03}", (t * 15 + j * 7) % 60);
                match (j % 3, s.get(&key, None).await.unwrap().kv) {
                    (0, Some(kv)) => {
                        let _ = s.delete(&key, Some(kv.mod_revision)).await;
                    }
                    (_, Some(kv)) => {
                        let _ = s.update(&key, val("changed"), kv.mod_revision, None).await;
                    }
                    (_, None) => {
                        let _ = s.create(&key, val("recreated"), None).await;
                    }
                }
                s.create(&format!("/page/k{:03}x{t}", j * 2), val("new"), None).await.unwrap();
            }
        }));
    }

    let mut paged = Vec::new();
    let mut start: Option<String> = None;
    loop {
        let page = s.range(range_req("/page/", start.as_deref(), Some(7), Some(rev))).await.unwrap();
        assert_eq!(page.revision, rev, "every page is served at the pinned revision");
        let remaining = 60 - paged.len();
        assert_eq!(page.count as usize, remaining, "count covers the keys from the continue key on");
        assert_eq!(page.more, remaining > page.kvs.len());
        paged.extend(page.kvs.iter().cloned());
        if !page.more {
            break;
        }
        start = Some(format!("{}\0", page.kvs.last().unwrap().key));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for w in writers {
        w.await.unwrap();
    }
    assert_eq!(paged, snapshot.kvs, "the pages put together equal the snapshot");
    assert!(s.current_revision().await.unwrap() > rev + 60, "the writers did write meanwhile");
    let now = s.range(range_req("/page/", None, None, None)).await.unwrap();
    assert_ne!(now.kvs, snapshot.kvs);
}

/// A prefix matches byte-wise: "/a/" does not include "/ab" or "/a".
pub async fn prefixes_are_isolated_byte_wise(backend: impl Backend) {
    let s = backend.store();
    let start = s.current_revision().await.unwrap() + 1;
    let mut inside = Vec::new();
    for key in ["/a", "/a/1", "/ab", "/a/2", "/a0", "/b/1", "/a/"] {
        let kv = s.create(key, val(key), None).await.unwrap();
        if key.starts_with("/a/") {
            inside.push(kv);
        }
    }
    let r = s.range(range_req("/a/", None, None, None)).await.unwrap();
    let keys: Vec<&str> = r.kvs.iter().map(|kv| kv.key.as_str()).collect();
    assert_eq!(keys, vec!["/a/", "/a/1", "/a/2"]);
    assert_eq!(r.count, 3);
    let mut w = s.watch("/a/", start, WatchOptions::default()).await.unwrap();
    let (seen, _) = drain_until_progress(&mut w).await;
    let expected: Vec<WatchEvent> = inside.iter().map(|kv| put(kv, None)).collect();
    assert_eq!(seen, expected, "the watch sees only keys under /a/");
}

/// A watch from a past revision replays history (puts with prev when the
/// key existed, deletes with the last value), then follows live writes,
/// prefix-filtered, in order, without duplicates.
pub async fn watch_replays_history_then_follows_live_writes_with_prev_values(backend: impl Backend) {
    let s = backend.store();
    let a1 = s.create("/w/a", val("a1"), None).await.unwrap();
    s.create("/other/x", val("x"), None).await.unwrap();
    let a2 = s.update("/w/a", val("a2"), a1.mod_revision, None).await.unwrap();
    let b1 = s.create("/w/b", val("b1"), None).await.unwrap();
    let gone = s.delete("/w/a", None).await.unwrap();

    let history = vec![put(&a1, None), put(&a2, Some(&a1)), put(&b1, None), del("/w/a", gone.revision, &a2)];
    let mut w = s.watch("/w/", a1.mod_revision, WatchOptions::default()).await.unwrap();
    assert_eq!(changes(&mut w, 4).await, history);

    let mut from_middle = s.watch("/w/", a2.mod_revision, WatchOptions::default()).await.unwrap();
    assert_eq!(changes(&mut from_middle, 3).await, history[1..].to_vec());

    // Live: only /w/ keys, each once.
    let b2 = s.update("/w/b", val("b2"), b1.mod_revision, None).await.unwrap();
    s.create("/other/y", val("y"), None).await.unwrap();
    let c1 = s.create("/w/c", val("c1"), None).await.unwrap();
    let b_gone = s.delete("/w/b", Some(b2.mod_revision)).await.unwrap();
    let live = vec![put(&b2, Some(&b1)), put(&c1, None), del("/w/b", b_gone.revision, &b2)];
    assert_eq!(changes(&mut w, 3).await, live);
    assert_eq!(changes(&mut from_middle, 3).await, live);
    let (rest, progress) = drain_until_progress(&mut w).await;
    assert!(rest.is_empty(), "no duplicates or strays: {rest:?}");
    assert!(progress >= b_gone.revision);
}

/// start == 0 means "from the next write": nothing earlier is replayed.
pub async fn watch_from_zero_delivers_only_later_writes(backend: impl Backend) {
    let s = backend.store();
    s.create("/z/before", val("1"), None).await.unwrap();
    let mut w = s.watch("/z/", 0, WatchOptions::default()).await.unwrap();
    let after = s.create("/z/after", val("2"), None).await.unwrap();
    assert_eq!(next_change(&mut w, EVENT_TIMEOUT).await, put(&after, None));
    let (rest, progress) = drain_until_progress(&mut w).await;
    assert!(rest.is_empty(), "{rest:?}");
    assert!(progress >= after.mod_revision);
}

/// request_progress yields a progress event, after every event up to the
/// revision it reports, carrying at least the revision of every write
/// acknowledged before the request (also writes outside the prefix).
pub async fn request_progress_reports_the_current_revision_after_pending_events(backend: impl Backend) {
    let s = backend.store();
    let r0 = s.current_revision().await.unwrap();
    let mut w = s.watch("/p/", 0, WatchOptions::default()).await.unwrap();
    let (rest, first) = drain_until_progress(&mut w).await;
    assert!(rest.is_empty(), "{rest:?}");
    assert!(first >= r0, "progress revision {first} is below the revision {r0} before the watch");
    let mut expected = Vec::new();
    for i in 0..20 {
        expected.push(put(&s.create(&format!("/p/{i:02}"), val("v"), None).await.unwrap(), None));
        s.create(&format!("/q/{i:02}"), val("v"), None).await.unwrap();
    }
    let current = s.current_revision().await.unwrap();
    let (seen, revision) = drain_until_progress(&mut w).await;
    assert_eq!(seen, expected, "all pending events come before the progress event");
    assert!(revision >= current, "progress revision {revision} is below the current revision {current}");
    // A second request on an idle stream answers too.
    let (seen, again) = drain_until_progress(&mut w).await;
    assert!(seen.is_empty());
    assert!(again >= revision);
}

/// With progress_notify, an idle watch gets progress events on its own.
pub async fn idle_watch_with_progress_notify_gets_progress_events(backend: impl Backend) {
    let s = backend.store();
    let interval = backend.progress_interval();
    let mut w = s.watch("/idle/", 0, WatchOptions { progress_notify: true }).await.unwrap();
    let other = s.create("/busy/x", val("1"), None).await.unwrap();
    let wait = interval * 4 + Duration::from_secs(10);
    let deadline = Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match next_item(&mut w, left).await {
            WatchEvent::Progress { revision } if revision >= other.mod_revision => break,
            WatchEvent::Progress { .. } => continue,
            ev => panic!("nothing was written under /idle/, yet the watch delivered {ev:?}"),
        }
    }
}

/// After compact(R): reads below R fail with Compacted while reads at R
/// still see R's state (etcd's range rule); watches starting at or below R
/// fail with Compacted (the contract's rule: etcd itself accepts a start
/// equal to R, but may have dropped deletions at R); later starts replay
/// with prev values; compacting to an older revision is a no-op.
pub async fn compaction_refuses_older_reads_and_watches_and_keeps_the_compacted_state(backend: impl Backend) {
    let s = backend.store();
    let a1 = s.create("/c/a", val("a1"), None).await.unwrap();
    let a2 = s.update("/c/a", val("a2"), a1.mod_revision, None).await.unwrap();
    let a3 = s.update("/c/a", val("a3"), a2.mod_revision, None).await.unwrap();
    let b = s.create("/c/b", val("b"), None).await.unwrap();
    let b_gone = s.delete("/c/b", None).await.unwrap();
    let a4 = s.update("/c/a", val("a4"), a3.mod_revision, None).await.unwrap();
    let r = a3.mod_revision;

    assert_eq!(s.compacted_revision().await.unwrap(), 0);
    s.compact(r).await.unwrap();
    assert_eq!(s.compacted_revision().await.unwrap(), r);

    let compacted = StoreError::Compacted { requested: a2.mod_revision, compacted: r };
    assert_eq!(s.get("/c/a", Some(a2.mod_revision)).await.unwrap_err(), compacted);
    assert_eq!(s.range(range_req("/c/", None, None, Some(a2.mod_revision))).await.unwrap_err(), compacted);
    assert_eq!(s.get("/c/a", Some(r)).await.unwrap().kv, Some(a3.clone()), "the compacted revision stays readable");
    assert_eq!(s.get("/c/b", Some(b.mod_revision)).await.unwrap().kv, Some(b.clone()));
    let later = s.range(range_req("/c/", None, None, Some(b_gone.revision))).await.unwrap();
    assert_eq!(later.kvs, vec![a3.clone()]);
    assert_eq!(s.get("/c/a", None).await.unwrap().kv, Some(a4.clone()));
    let current = s.current_revision().await.unwrap();
    assert!(matches!(s.get("/c/a", Some(current + 1)).await.unwrap_err(), StoreError::FutureRevision { .. }));

    assert_watch_compacted(&s, "/c/", a1.mod_revision, r).await;
    assert_watch_compacted(&s, "/c/", r, r).await;

    let mut w = s.watch("/c/", b.mod_revision, WatchOptions::default()).await.unwrap();
    let (seen, _) = drain_until_progress(&mut w).await;
    assert_eq!(seen, vec![put(&b, None), del("/c/b", b_gone.revision, &b), put(&a4, Some(&a3))]);

    let mut live = s.watch("/c/", 0, WatchOptions::default()).await.unwrap();
    let a5 = s.update("/c/a", val("a5"), a4.mod_revision, None).await.unwrap();
    assert_eq!(next_change(&mut live, EVENT_TIMEOUT).await, put(&a5, Some(&a4)));

    s.compact(a1.mod_revision).await.unwrap();
    assert_eq!(s.compacted_revision().await.unwrap(), r, "compacting to an older revision is a no-op");
    s.compact(a4.mod_revision).await.unwrap();
    assert_eq!(s.compacted_revision().await.unwrap(), a4.mod_revision);
    assert_eq!(s.get("/c/a", Some(a4.mod_revision)).await.unwrap().kv, Some(a4));
    assert_eq!(s.range(range_req("/c/", None, None, None)).await.unwrap().kvs, vec![a5]);
}

/// Values of exactly MAX_VALUE_BYTES are stored; one byte more is refused
/// with ValueTooLarge and nothing is written.
pub async fn values_up_to_the_size_limit_are_stored_and_larger_ones_refused(backend: impl Backend) {
    let s = backend.store();
    let max: Bytes = (0..MAX_VALUE_BYTES).map(|i| (i % 251) as u8).collect::<Vec<_>>().into();
    let kv = s.create("/big/max", max.clone(), None).await.unwrap();
    let got = s.get("/big/max", None).await.unwrap().kv.unwrap();
    assert_eq!(got.value.len(), MAX_VALUE_BYTES);
    assert!(got.value == max, "the stored value comes back byte for byte");

    let before = s.current_revision().await.unwrap();
    let over = Bytes::from(vec![7u8; MAX_VALUE_BYTES + 1]);
    let err = s.create("/big/over", over.clone(), None).await.unwrap_err();
    assert_eq!(
        err,
        StoreError::ValueTooLarge { key: "/big/over".into(), size: MAX_VALUE_BYTES + 1, limit: MAX_VALUE_BYTES }
    );
    assert_eq!(s.get("/big/over", None).await.unwrap().kv, None);
    let err = s.update("/big/max", over, kv.mod_revision, None).await.unwrap_err();
    assert!(matches!(err, StoreError::ValueTooLarge { .. }), "{err}");
    assert_eq!(s.get("/big/max", None).await.unwrap().kv.unwrap().mod_revision, kv.mod_revision);
    assert_eq!(s.current_revision().await.unwrap(), before, "refused writes consume no revision");
}

/// A key written with a TTL is deleted after it passes (not before), with a
/// Delete watch event carrying its last value; other keys stay.
pub async fn ttl_expiry_deletes_the_key_with_a_watch_event(backend: impl Backend) {
    let s = backend.store();
    let mut w = s.watch("/ttl/", 0, WatchOptions::default()).await.unwrap();
    let created_at = Instant::now();
    let kv = s.create("/ttl/lease", val("short-lived"), Some(Duration::from_secs(3))).await.unwrap();
    let keep = s.create("/ttl/keep", val("forever"), None).await.unwrap();
    assert_eq!(changes(&mut w, 2).await, vec![put(&kv, None), put(&keep, None)]);
    match next_change(&mut w, Duration::from_secs(20)).await {
        WatchEvent::Delete { key, revision, prev } => {
            assert_eq!(key, "/ttl/lease");
            assert_eq!(prev, kv);
            assert!(revision > keep.mod_revision);
        }
        ev => panic!("expected the expiry's Delete, got {ev:?}"),
    }
    assert!(
        created_at.elapsed() >= Duration::from_secs(2),
        "expired after {:?}, before its 3 s ttl",
        created_at.elapsed()
    );
    assert_eq!(s.get("/ttl/lease", None).await.unwrap().kv, None);
    assert_eq!(s.get("/ttl/keep", None).await.unwrap().kv, Some(keep));
}

/// update with ttl None removes a TTL; update with a ttl sets one.
pub async fn update_without_ttl_clears_the_ttl_and_update_with_ttl_sets_one(backend: impl Backend) {
    let s = backend.store();
    let mut w = s.watch("/ttl2/", 0, WatchOptions::default()).await.unwrap();
    let a = s.create("/ttl2/cleared", val("1"), Some(Duration::from_secs(2))).await.unwrap();
    let a2 = s.update("/ttl2/cleared", val("2"), a.mod_revision, None).await.unwrap();
    let b = s.create("/ttl2/set", val("1"), None).await.unwrap();
    let b2 = s.update("/ttl2/set", val("2"), b.mod_revision, Some(Duration::from_secs(2))).await.unwrap();
    assert_eq!(changes(&mut w, 4).await.len(), 4);
    match next_change(&mut w, Duration::from_secs(20)).await {
        WatchEvent::Delete { key, prev, .. } => assert_eq!((key.as_str(), prev), ("/ttl2/set", b2)),
        ev => panic!("expected /ttl2/set to expire, got {ev:?}"),
    }
    // The cleared key had the same 2 s ttl; give it ample time to (wrongly) expire.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(s.get("/ttl2/cleared", None).await.unwrap().kv, Some(a2));
    let (rest, _) = drain_until_progress(&mut w).await;
    assert!(rest.is_empty(), "nothing else expired: {rest:?}");
}

/// 32 concurrent writers × 100 writes; watchers started before, during and
/// after the writes each see every write under the prefix exactly once, in
/// revision order, with correct values and prev values.
pub async fn concurrent_writers_and_watchers_see_every_event_exactly_once_in_order(backend: impl Backend) {
    const TASKS: usize = 32;
    const WRITES: usize = 100;
    let s = backend.store();
    let start = s.current_revision().await.unwrap() + 1;
    let mut watches = vec![
        s.watch("/conc/", 0, WatchOptions::default()).await.unwrap(),
        s.watch("/conc/", 0, WatchOptions { progress_notify: true }).await.unwrap(),
        s.watch("/conc/", start, WatchOptions::default()).await.unwrap(),
    ];

    let mut writers = Vec::new();
    for t in 0..TASKS {
        let s = s.clone();
        writers.push(tokio::spawn(async move {
            // (revision, key, value or None for a delete) of each write.
            let mut acked: Vec<(Revision, String, Option<String>)> = Vec::with_capacity(WRITES);
            let key = format!("/conc/t{t:02}");
            let mut mod_rev = 0;
            for i in 0..WRITES {
                let value = format!("t{t}-w{i}");
                if i == 0 || i == WRITES / 2 {
                    mod_rev = s.create(&key, val(&value), None).await.unwrap().mod_revision;
                    acked.push((mod_rev, key.clone(), Some(value)));
                } else if i == WRITES / 2 - 1 || i == WRITES - 1 {
                    let d = s.delete(&key, Some(mod_rev)).await.unwrap();
                    acked.push((d.revision, key.clone(), None));
                } else {
                    mod_rev = s.update(&key, val(&value), mod_rev, None).await.unwrap().mod_revision;
                    acked.push((mod_rev, key.clone(), Some(value)));
                }
                if i % 10 == 0 {
                    s.create(&format!("/noise/t{t}-{i}"), val("noise"), None).await.unwrap();
                }
            }
            acked
        }));
    }
    // One more watcher joins mid-way, replaying what it missed.
    tokio::time::sleep(Duration::from_millis(20)).await;
    watches.push(s.watch("/conc/", start, WatchOptions::default()).await.unwrap());

    let mut expected: BTreeMap<Revision, (String, Option<String>)> = BTreeMap::new();
    for w in writers {
        for (rev, key, value) in w.await.unwrap() {
            assert!(expected.insert(rev, (key, value)).is_none(), "revision {rev} acknowledged twice");
        }
    }
    assert_eq!(expected.len(), TASKS * WRITES);
    // And one after all writes: pure replay.
    watches.push(s.watch("/conc/", start, WatchOptions::default()).await.unwrap());

    let watchers = watches.into_iter().enumerate().map(|(n, mut w)| {
        let expected = expected.clone();
        tokio::spawn(async move {
            let mut last_value: HashMap<String, KeyValue> = HashMap::new();
            let mut prev_rev = 0;
            for (rev, (key, value)) in &expected {
                let ev = next_change(&mut w, EVENT_TIMEOUT).await;
                assert!(ev.revision() > prev_rev, "watcher {n}: out of order at {}", ev.revision());
                assert_eq!(ev.revision(), *rev, "watcher {n}: expected revision {rev} ({key}), got {ev:?}");
                prev_rev = *rev;
                match (ev, value) {
                    (WatchEvent::Put { kv, prev }, Some(value)) => {
                        assert_eq!((&kv.key, &kv.value[..]), (key, value.as_bytes()), "watcher {n}");
                        assert_eq!(prev.as_ref(), last_value.get(key), "watcher {n}: prev of {key} at {rev}");
                        last_value.insert(key.clone(), kv);
                    }
                    (WatchEvent::Delete { key: k, prev, .. }, None) => {
                        assert_eq!(&k, key);
                        assert_eq!(Some(&prev), last_value.get(key), "watcher {n}: prev of deleted {key}");
                        last_value.remove(key);
                    }
                    (ev, value) => panic!("watcher {n}: expected {value:?} at {rev}, got {ev:?}"),
                }
            }
            let (rest, _) = drain_until_progress(&mut w).await;
            assert!(rest.is_empty(), "watcher {n}: unexpected extra events {rest:?}");
        })
    });
    for w in watchers.collect::<Vec<_>>() {
        w.await.unwrap();
    }
}

/// Closing and reopening the store keeps every key, the history and the
/// revision counter; the next write continues the sequence.
pub async fn restart_keeps_data_and_continues_revisions(mut backend: impl Backend) {
    let (a1, a2, b, gone, current, listed) = {
        let s = backend.store();
        let a1 = s.create("/restart/a", val("a1"), None).await.unwrap();
        let a2 = s.update("/restart/a", val("a2"), a1.mod_revision, None).await.unwrap();
        let b = s.create("/restart/b", val("b"), None).await.unwrap();
        s.create("/restart/c", val("c"), None).await.unwrap();
        let gone = s.delete("/restart/c", None).await.unwrap();
        let current = s.current_revision().await.unwrap();
        let listed = s.range(range_req("/restart/", None, None, None)).await.unwrap();
        (a1, a2, b, gone, current, listed)
    };
    backend.restart().await;
    let s = backend.store();
    assert_eq!(s.current_revision().await.unwrap(), current, "the revision survives a restart");
    let again = s.range(range_req("/restart/", None, None, None)).await.unwrap();
    assert_eq!(again.kvs, listed.kvs);
    assert_eq!(again.kvs, vec![a2.clone(), b.clone()]);
    assert_eq!(s.get("/restart/a", Some(a1.mod_revision)).await.unwrap().kv, Some(a1.clone()), "history survives");
    let mut w = s.watch("/restart/", a2.mod_revision, WatchOptions::default()).await.unwrap();
    let history = changes(&mut w, 4).await;
    assert_eq!(history[0], put(&a2, Some(&a1)));
    assert_eq!(history[1], put(&b, None));
    assert_eq!(history[3].revision(), gone.revision, "the deletion replays after a restart");
    let next = s.create("/restart/d", val("d"), None).await.unwrap();
    assert!(next.mod_revision > current, "revisions continue after a restart");
    assert_eq!(next_change(&mut w, EVENT_TIMEOUT).await, put(&next, None));
    drop(w);
    drop(s);
    // A second restart right after writes works as well.
    backend.restart().await;
    let s = backend.store();
    assert_eq!(s.get("/restart/d", None).await.unwrap().kv, Some(next));
}
