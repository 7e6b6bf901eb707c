//! The etcd backend against a real etcd (Debian's etcd-server 3.4, started
//! per test on loopback ports by `support::etcd`, killed when the test ends):
//! the shared conformance suite, one fresh etcd per check, then
//! etcd-specific behaviour (revision numbering, error mapping, leases,
//! compaction with several clients, progress on etcd 3.4, reconnects).

mod conformance;
mod support;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use conformance::Backend;
use futures::StreamExt;
use rkube_store::etcd::EtcdStore;
use rkube_store::{RangeRequest, SharedStore, Store, StoreError, Watch, WatchEvent, WatchOptions, MAX_VALUE_BYTES};
use support::etcd::{EtcdOptions, EtcdProcess};

/// A fresh etcd with its own data directory, and a store connected to it.
struct EtcdBackend {
    etcd: EtcdProcess,
    store: Option<SharedStore>,
}

#[async_trait::async_trait]
impl Backend for EtcdBackend {
    fn store(&self) -> SharedStore {
        self.store.clone().expect("the store is connected")
    }

    /// Kills etcd (as a crash would), starts it again on the same data
    /// directory and connects a new store.
    async fn restart(&mut self) {
        let store = self.store.take().expect("the store is connected");
        assert_eq!(Arc::strong_count(&store), 1, "the check still holds a store handle across a restart");
        drop(store);
        tokio::task::block_in_place(|| self.etcd.restart()).unwrap_or_else(|e| panic!("{e}"));
        self.store = Some(Arc::new(connect(&self.etcd).await));
    }

    fn progress_interval(&self) -> Duration {
        EtcdOptions::default().progress_notify_interval
    }
}

async fn etcd_backend() -> EtcdBackend {
    let etcd = tokio::task::block_in_place(start_etcd);
    let store: SharedStore = Arc::new(connect(&etcd).await);
    EtcdBackend { etcd, store: Some(store) }
}

conformance::conformance_tests!(etcd_backend);

// ------------------------------------------------------- etcd specifics

fn start_etcd() -> EtcdProcess {
    EtcdProcess::start().unwrap_or_else(|e| panic!("{e}"))
}

async fn connect(etcd: &EtcdProcess) -> EtcdStore {
    EtcdStore::connect(&etcd.endpoints()).await.unwrap_or_else(|e| panic!("connect to test etcd: {e}"))
}

/// A raw etcd client, to look behind the store's back.
async fn raw(etcd: &EtcdProcess) -> etcd_client::Client {
    etcd_client::Client::connect(etcd.endpoints(), None).await.expect("raw etcd client")
}

async fn next_event(w: &mut Watch) -> Result<WatchEvent, StoreError> {
    tokio::time::timeout(Duration::from_secs(10), w.events.next())
        .await
        .expect("no watch event within 10 s")
        .expect("watch stream ended")
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// etcd's empty store is at revision 1 and its first write is 2; the store
/// shifts by one so the contract's numbering (0 = empty, first write 1) holds.
#[tokio::test]
async fn revisions_are_numbered_from_one_like_the_contract() {
    let etcd = start_etcd();
    let store = connect(&etcd).await;
    assert_eq!(store.current_revision().await.unwrap(), 0);
    let kv = store.create("/a", b("1"), None).await.unwrap();
    assert_eq!((kv.create_revision, kv.mod_revision), (1, 1));
    assert_eq!(store.current_revision().await.unwrap(), 1);
    let mut raw = raw(&etcd).await;
    let r = raw.get("/a", None).await.unwrap();
    assert_eq!(r.kvs()[0].mod_revision(), 2, "etcd's own number is one higher");

    let up = store.update("/a", b("2"), 1, None).await.unwrap();
    assert_eq!((up.create_revision, up.mod_revision), (1, 2));
    let got = store.get("/a", Some(1)).await.unwrap();
    assert_eq!(got.kv.unwrap().value, b("1"));
    assert_eq!(got.revision, 1, "a read at a revision reports that revision");
    let del = store.delete("/a", Some(2)).await.unwrap();
    assert_eq!(del.revision, 3);
    assert_eq!(del.prev.value, b("2"));
}

#[tokio::test]
async fn write_failures_map_to_contract_errors() {
    let etcd = start_etcd();
    let store = connect(&etcd).await;
    let kv = store.create("/k", b("v1"), None).await.unwrap();
    assert_eq!(store.create("/k", b("again"), None).await.unwrap_err(), StoreError::AlreadyExists { key: "/k".into() });
    match store.update("/k", b("v2"), kv.mod_revision + 7, None).await.unwrap_err() {
        StoreError::Conflict { key, expected, current: Some(current) } => {
            assert_eq!((key.as_str(), expected), ("/k", kv.mod_revision + 7));
            assert_eq!(current, kv, "the conflict carries the current value");
        }
        other => panic!("expected Conflict, got {other:?}"),
    }
    assert_eq!(
        store.update("/missing", b("x"), 1, None).await.unwrap_err(),
        StoreError::NotFound { key: "/missing".into() }
    );
    assert!(matches!(
        store.delete("/k", Some(kv.mod_revision + 1)).await.unwrap_err(),
        StoreError::Conflict { current: Some(_), .. }
    ));
    assert_eq!(store.delete("/missing", None).await.unwrap_err(), StoreError::NotFound { key: "/missing".into() });
    assert_eq!(store.delete("/missing", Some(1)).await.unwrap_err(), StoreError::NotFound { key: "/missing".into() });
    // Nothing above wrote anything.
    assert_eq!(store.current_revision().await.unwrap(), kv.mod_revision);
}

/// The test etcd runs with --max-request-bytes 2097152, so a value of exactly
/// MAX_VALUE_BYTES is stored; one byte more is refused before reaching etcd.
#[tokio::test]
async fn values_up_to_the_limit_are_stored_and_larger_ones_refused() {
    let etcd = start_etcd();
    let store = connect(&etcd).await;
    let big = Bytes::from(vec![b'x'; MAX_VALUE_BYTES]);
    let kv = store.create("/big", big.clone(), None).await.unwrap();
    assert_eq!(store.get("/big", None).await.unwrap().kv.unwrap().value.len(), MAX_VALUE_BYTES);
    let err = store.update("/big", Bytes::from(vec![b'x'; MAX_VALUE_BYTES + 1]), kv.mod_revision, None).await;
    assert_eq!(
        err.unwrap_err(),
        StoreError::ValueTooLarge { key: "/big".into(), size: MAX_VALUE_BYTES + 1, limit: MAX_VALUE_BYTES }
    );
}

/// With etcd's default --max-request-bytes (1.5 MiB including overhead) a
/// value of exactly 1.5 MiB is refused by etcd; that maps to ValueTooLarge.
#[tokio::test]
async fn etcd_with_default_request_limit_refuses_the_largest_values() {
    let etcd = EtcdProcess::start_with(EtcdOptions { max_request_bytes: 1536 * 1024, ..Default::default() })
        .unwrap_or_else(|e| panic!("{e}"));
    let store = connect(&etcd).await;
    let err = store.create("/big", Bytes::from(vec![b'x'; MAX_VALUE_BYTES]), None).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::ValueTooLarge { key, size, .. } if key == "/big" && *size == MAX_VALUE_BYTES),
        "got {err:?}"
    );
    // Smaller values still work.
    store.create("/small", b("ok"), None).await.unwrap();
}

#[tokio::test]
async fn range_counts_keys_from_start_to_the_end_of_the_prefix() {
    let etcd = start_etcd();
    let store = connect(&etcd).await;
    for k in ["/p/a", "/p/b", "/p/c", "/p/d", "/q/x", "/p"] {
        store.create(k, b(k), None).await.unwrap();
    }
    let r = store
        .range(RangeRequest { prefix: "/p/".into(), start: Some("/p/b".into()), limit: Some(2), revision: None })
        .await
        .unwrap();
    let keys: Vec<_> = r.kvs.iter().map(|kv| kv.key.as_str()).collect();
    assert_eq!(keys, ["/p/b", "/p/c"]);
    assert!(r.more);
    assert_eq!(r.count, 3, "keys in [/p/b, /p0): b, c, d");
    assert_eq!(r.revision, 6);
    // The whole keyspace.
    let all = store.range(RangeRequest::default()).await.unwrap();
    assert_eq!(all.count, 6);
    assert_eq!(all.kvs.len(), 6);
    assert!(!all.more);
}

#[tokio::test]
async fn reads_below_the_compacted_revision_report_both_revisions() {
    let etcd = start_etcd();
    let store = connect(&etcd).await;
    for i in 0..10 {
        store.create(&format!("/c/{i}"), b("v"), None).await.unwrap();
    }
    assert_eq!(store.compacted_revision().await.unwrap(), 0);
    store.compact(6).await.unwrap();
    assert_eq!(store.compacted_revision().await.unwrap(), 6);
    assert_eq!(store.get("/c/0", Some(5)).await.unwrap_err(), StoreError::Compacted { requested: 5, compacted: 6 });
    let at = store.get("/c/0", Some(6)).await.unwrap();
    assert_eq!(at.revision, 6, "the compacted revision itself stays readable");
    assert_eq!(
        store.range(RangeRequest { prefix: "/c/".into(), revision: Some(2), ..Default::default() }).await.unwrap_err(),
        StoreError::Compacted { requested: 2, compacted: 6 }
    );
    assert_eq!(
        store.get("/c/0", Some(11)).await.unwrap_err(),
        StoreError::FutureRevision { requested: 11, current: 10 }
    );
    // Compacting at or below the previous compaction is a no-op.
    store.compact(6).await.unwrap();
    store.compact(3).await.unwrap();
    assert_eq!(store.compacted_revision().await.unwrap(), 6);
    assert_eq!(store.compact(99).await.unwrap_err(), StoreError::FutureRevision { requested: 99, current: 10 });
}

/// Several API servers share one etcd: each sees compactions done by the
/// others, and compacting below another's compaction is a no-op.
#[tokio::test]
async fn compaction_is_seen_by_every_client_of_the_same_etcd() {
    let etcd = start_etcd();
    let a = connect(&etcd).await;
    let b_ = connect(&etcd).await;
    for i in 0..20 {
        a.create(&format!("/k{i}"), b("v"), None).await.unwrap();
    }
    a.compact(13).await.unwrap();
    assert_eq!(b_.compacted_revision().await.unwrap(), 13);
    b_.compact(9).await.unwrap();
    assert_eq!(a.compacted_revision().await.unwrap(), 13);
    // Compaction by a plain etcd client (e.g. another kube-apiserver) too.
    raw(&etcd).await.compact(18, None).await.unwrap();
    assert_eq!(a.compacted_revision().await.unwrap(), 17);
    assert_eq!(b_.compacted_revision().await.unwrap(), 17);
}

#[tokio::test]
async fn watches_at_or_below_the_compacted_revision_fail_with_compacted() {
    let etcd = start_etcd();
    let store = connect(&etcd).await;
    for i in 0..6 {
        store.create(&format!("/w/{i}"), b("v"), None).await.unwrap();
    }
    store.compact(4).await.unwrap();
    for start in [1, 3, 4] {
        let mut w = store.watch("/w/", start, WatchOptions::default()).await.unwrap();
        assert_eq!(
            next_event(&mut w).await.unwrap_err(),
            StoreError::Compacted { requested: start, compacted: 4 },
            "watch from {start}"
        );
        assert!(w.events.next().await.is_none(), "the stream ends after the error");
    }
    // Just above the compacted revision: the history is complete, with prev.
    let mut w = store.watch("/w/", 5, WatchOptions::default()).await.unwrap();
    for rev in [5, 6] {
        match next_event(&mut w).await.unwrap() {
            WatchEvent::Put { kv, prev: None } => assert_eq!(kv.mod_revision, rev),
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[tokio::test]
async fn watch_replays_history_with_previous_values_then_follows() {
    let etcd = start_etcd();
    let store = connect(&etcd).await;
    let a1 = store.create("/r/a", b("1"), None).await.unwrap();
    let a2 = store.update("/r/a", b("2"), a1.mod_revision, None).await.unwrap();
    store.create("/other", b("x"), None).await.unwrap();
    let mut w = store.watch("/r/", a2.mod_revision, WatchOptions::default()).await.unwrap();
    match next_event(&mut w).await.unwrap() {
        WatchEvent::Put { kv, prev: Some(prev) } => {
            assert_eq!(kv, a2);
            assert_eq!(prev, a1);
        }
        other => panic!("unexpected {other:?}"),
    }
    let del = store.delete("/r/a", None).await.unwrap();
    match next_event(&mut w).await.unwrap() {
        WatchEvent::Delete { key, revision, prev } => {
            assert_eq!((key.as_str(), revision), ("/r/a", del.revision));
            assert_eq!(prev, a2);
        }
        other => panic!("unexpected {other:?}"),
    }
}

/// etcd 3.4.23 answers a progress request at once with its current revision,
/// even while a new watch is still replaying history (etcd-io/etcd#15220);
/// the store must still deliver every event before the Progress.
#[tokio::test]
async fn requested_progress_follows_all_replayed_events() {
    let etcd = start_etcd();
    let store = connect(&etcd).await;
    for i in 0..20 {
        store.create(&format!("/pr/{i:02}"), b("v"), None).await.unwrap();
    }
    let current = store.current_revision().await.unwrap();
    let mut w = store.watch("/pr/", 1, WatchOptions::default()).await.unwrap();
    w.request_progress();
    let mut seen = Vec::new();
    loop {
        match next_event(&mut w).await.unwrap() {
            WatchEvent::Progress { revision } => {
                assert!(revision >= current, "progress {revision} below the revision {current} at the request");
                break;
            }
            ev => seen.push(ev.revision()),
        }
    }
    assert_eq!(seen, (1..=20).collect::<Vec<_>>(), "all events precede the progress notification");

    // On a live watch, a request answers with the current revision.
    let kv = store.create("/pr/live", b("v"), None).await.unwrap();
    assert_eq!(next_event(&mut w).await.unwrap().revision(), kv.mod_revision);
    store.create("/elsewhere", b("v"), None).await.unwrap();
    w.request_progress();
    assert_eq!(next_event(&mut w).await.unwrap(), WatchEvent::Progress { revision: kv.mod_revision + 1 });
}

/// etcd replays long histories in batches of 1000 revisions, one batch per
/// 100 ms sync period; a progress request must wait for all of them.
#[tokio::test]
async fn requested_progress_waits_for_a_long_replay() {
    let etcd = start_etcd();
    let store = std::sync::Arc::new(connect(&etcd).await);
    let writers: Vec<_> = (0..32)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                for i in 0..100 {
                    store.create(&format!("/long/{w}/{i}"), b("v"), None).await.unwrap();
                }
            })
        })
        .collect();
    for t in writers {
        t.await.unwrap();
    }
    let mut w = store.watch("/long/", 1, WatchOptions::default()).await.unwrap();
    w.request_progress();
    let mut events = 0;
    loop {
        match next_event(&mut w).await.unwrap() {
            WatchEvent::Progress { revision } => {
                assert_eq!(revision, 3200);
                break;
            }
            _ => events += 1,
        }
    }
    assert_eq!(events, 3200, "every replayed event precedes the progress notification");
}

#[tokio::test]
async fn progress_notify_reports_idle_watches() {
    let etcd = start_etcd(); // progress interval 500 ms
    let store = connect(&etcd).await;
    store.create("/x", b("v"), None).await.unwrap();
    let mut w = store.watch("/idle/", 0, WatchOptions { progress_notify: true }).await.unwrap();
    assert_eq!(next_event(&mut w).await.unwrap(), WatchEvent::Progress { revision: 1 });
    // Without progress_notify, an idle watch stays silent.
    let mut quiet = store.watch("/idle/", 0, WatchOptions::default()).await.unwrap();
    assert!(tokio::time::timeout(Duration::from_millis(1500), quiet.events.next()).await.is_err());
}

/// Reads the number of watchers etcd holds from its /metrics.
fn etcd_watchers(etcd: &EtcdProcess) -> u64 {
    use std::io::{Read, Write};
    let addr = etcd.endpoint().trim_start_matches("http://").to_string();
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    body.lines()
        .find_map(|l| l.strip_prefix("etcd_debugging_mvcc_watcher_total "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .expect("etcd_debugging_mvcc_watcher_total in /metrics") as u64
}

#[tokio::test]
async fn dropping_a_watch_cancels_it_in_etcd() {
    let etcd = start_etcd();
    let store = connect(&etcd).await;
    let w = store.watch("/d/", 0, WatchOptions::default()).await.unwrap();
    assert_eq!(etcd_watchers(&etcd), 1);
    drop(w);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while etcd_watchers(&etcd) != 0 {
        assert!(std::time::Instant::now() < deadline, "etcd still holds the dropped watch");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A watch nobody reads must not stall reads and writes.
#[tokio::test]
async fn an_unread_watch_does_not_block_requests() {
    let etcd = start_etcd();
    let store = connect(&etcd).await;
    let _unread = store.watch("/big/", 0, WatchOptions::default()).await.unwrap();
    let value = Bytes::from(vec![b'v'; 256 * 1024]);
    let all = async {
        for i in 0..48 {
            store.create(&format!("/big/{i}"), value.clone(), None).await.unwrap();
        }
        store.get("/big/0", None).await.unwrap()
    };
    let got = tokio::time::timeout(Duration::from_secs(20), all).await.expect("requests stalled");
    assert!(got.kv.is_some());
}

/// TTLs close to each other share an etcd lease (kube-apiserver's lease
/// manager); the lease is a little longer than the TTL, never shorter.
#[tokio::test]
async fn keys_with_close_ttls_share_one_lease() {
    let etcd = start_etcd();
    let store = connect(&etcd).await;
    store.create("/ttl/a", b("v"), Some(Duration::from_secs(100))).await.unwrap();
    store.create("/ttl/b", b("v"), Some(Duration::from_secs(100))).await.unwrap();
    store.create("/ttl/c", b("v"), Some(Duration::from_secs(1000))).await.unwrap();
    let untimed = store.create("/ttl/d", b("v"), Some(Duration::from_secs(100))).await.unwrap();
    // `None` on update drops the TTL.
    store.update("/ttl/d", b("w"), untimed.mod_revision, None).await.unwrap();
    let mut raw = raw(&etcd).await;
    let lease_of = |r: etcd_client::GetResponse| r.kvs()[0].lease();
    let a = lease_of(raw.get("/ttl/a", None).await.unwrap());
    let b2 = lease_of(raw.get("/ttl/b", None).await.unwrap());
    let c = lease_of(raw.get("/ttl/c", None).await.unwrap());
    let d = lease_of(raw.get("/ttl/d", None).await.unwrap());
    assert_ne!(a, 0);
    assert_eq!(a, b2, "same TTL, same lease");
    assert_ne!(a, c, "a TTL ten times longer gets its own lease");
    assert_eq!(d, 0, "update without TTL detaches the lease");
    let ttl = raw.lease_time_to_live(a, None).await.unwrap();
    assert!((100..=105).contains(&ttl.granted_ttl()), "granted {} s for a 100 s TTL", ttl.granted_ttl());
}

#[tokio::test]
async fn keys_expire_with_a_delete_event() {
    let etcd = start_etcd();
    let store = connect(&etcd).await;
    let mut w = store.watch("/exp/", 0, WatchOptions::default()).await.unwrap();
    let started = std::time::Instant::now();
    let kv = store.create("/exp/k", b("v"), Some(Duration::from_secs(1))).await.unwrap();
    assert_eq!(next_event(&mut w).await.unwrap().revision(), kv.mod_revision);
    match next_event(&mut w).await.unwrap() {
        WatchEvent::Delete { key, prev, .. } => {
            assert_eq!(key, "/exp/k");
            assert_eq!(prev, kv);
        }
        other => panic!("unexpected {other:?}"),
    }
    // etcd's minimum TTL (2 s with the default election timeout) applies.
    let after = started.elapsed();
    assert!(after >= Duration::from_secs(1), "expired after {after:?}");
    assert!(store.get("/exp/k", None).await.unwrap().kv.is_none());
}

#[tokio::test]
async fn unreachable_etcd_is_unavailable_with_a_helpful_message() {
    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let err = EtcdStore::connect(std::slice::from_ref(&endpoint)).await.err().expect("connect must fail");
    match err {
        StoreError::Unavailable(msg) => {
            assert!(msg.contains(&endpoint), "{msg}");
            assert!(msg.contains("check that etcd is running"), "{msg}");
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }

    // Losing etcd after connecting.
    let mut etcd = start_etcd();
    let store = connect(&etcd).await;
    etcd.stop();
    match store.get("/k", None).await.unwrap_err() {
        StoreError::Unavailable(msg) => assert!(msg.contains(&etcd.endpoint()), "{msg}"),
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

/// A watch survives an etcd restart: it resumes from the next revision and
/// neither loses nor repeats events; the client reconnects by itself.
#[tokio::test]
async fn watches_and_requests_survive_an_etcd_restart() {
    let mut etcd = start_etcd();
    let store = connect(&etcd).await;
    let mut w = store.watch("/s/", 0, WatchOptions::default()).await.unwrap();
    let one = store.create("/s/1", b("1"), None).await.unwrap();
    assert_eq!(next_event(&mut w).await.unwrap().revision(), one.mod_revision);
    etcd.restart().unwrap_or_else(|e| panic!("{e}"));
    let two = {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            match store.create("/s/2", b("2"), None).await {
                Ok(kv) => break kv,
                Err(StoreError::Unavailable(_)) if std::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                Err(e) => panic!("write after restart: {e}"),
            }
        }
    };
    assert_eq!(two.mod_revision, one.mod_revision + 1, "data survived the restart");
    assert_eq!(next_event(&mut w).await.unwrap().revision(), two.mod_revision);
}

/// A watch whose etcd stays away ends with Unavailable once its resume
/// window has passed, naming the endpoint.
#[tokio::test]
async fn a_watch_gives_up_when_etcd_stays_down() {
    let mut etcd = start_etcd();
    let options = rkube_store::etcd::EtcdOptions {
        watch_resume_timeout: Duration::from_secs(1),
        request_timeout: Duration::from_secs(2),
        ..Default::default()
    };
    let store = EtcdStore::connect_with(&etcd.endpoints(), options).await.unwrap();
    let mut w = store.watch("/gone/", 0, WatchOptions::default()).await.unwrap();
    etcd.stop();
    match next_event(&mut w).await {
        Err(StoreError::Unavailable(msg)) => {
            assert!(msg.contains(&etcd.endpoint()), "{msg}");
            assert!(msg.contains("could not resume"), "{msg}");
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
    assert!(w.events.next().await.is_none(), "the stream ends after the error");
}
