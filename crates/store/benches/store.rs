//! Store benchmark: the embedded SQLite backend and etcd side by side.
//!
//! Run with `cargo bench -p rkube-store --bench store` (needs Debian's
//! etcd-server; the bench starts its own etcd on loopback ports in a
//! temporary directory, as the tests do). Prints a markdown table:
//!
//! - writes/s: `create`s of fresh keys acknowledged per second, for 1 and 64
//!   concurrent writers, with 1 KiB and 8 KiB values (each case runs for
//!   `CASE_SECONDS`);
//! - watch latency p50/p99: a watcher on a prefix receives `LATENCY_EVENTS`
//!   creates issued at `LATENCY_RATE` per second; latency is measured from
//!   the moment the write is issued, and separately from its
//!   acknowledgement, to the moment the watcher receives the event.
//!
//! Both stores are durable: SQLite commits with WAL + fsync on group commit,
//! etcd fsyncs its WAL before acknowledging.
//!
//! `RKUBE_BENCH_BACKENDS=sqlite` (or `etcd`) measures one backend only, e.g.
//! to profile it with `perf record`.

#[path = "../tests/support/etcd.rs"]
mod etcd_support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use rkube_store::etcd::EtcdStore;
use rkube_store::sqlite::SqliteStore;
use rkube_store::{SharedStore, WatchEvent, WatchOptions};

const CASE_SECONDS: f64 = 5.0;
const LATENCY_RATE: u64 = 1000;
const LATENCY_EVENTS: u64 = 3000;

struct Figures {
    writes: Vec<(String, f64)>,
    latency_start: (Duration, Duration),
    latency_ack: (Duration, Duration),
}

fn main() {
    let wanted = std::env::var("RKUBE_BENCH_BACKENDS").unwrap_or_else(|_| "sqlite,etcd".into());
    let wanted: Vec<&str> = wanted.split(',').map(str::trim).collect();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    let began = Instant::now();
    let mut columns: Vec<(&str, Figures)> = Vec::new();
    if wanted.contains(&"sqlite") {
        let dir = tempfile::tempdir().expect("temporary directory");
        let figures = rt.block_on(async {
            let store: SharedStore = Arc::new(
                SqliteStore::open(&dir.path().join("state.db")).await.unwrap_or_else(|e| panic!("open sqlite: {e}")),
            );
            eprintln!("measuring sqlite…");
            measure(&store).await
        });
        columns.push(("SQLite (embedded)", figures));
    }
    if wanted.contains(&"etcd") {
        let etcd = etcd_support::EtcdProcess::start().unwrap_or_else(|e| panic!("{e}"));
        let figures = rt.block_on(async {
            let store: SharedStore =
                Arc::new(EtcdStore::connect(&etcd.endpoints()).await.unwrap_or_else(|e| panic!("connect etcd: {e}")));
            eprintln!("measuring etcd…");
            measure(&store).await
        });
        columns.push(("etcd 3.4", figures));
    }
    if columns.is_empty() {
        panic!("RKUBE_BENCH_BACKENDS names no known backend (use sqlite, etcd or both)");
    }

    let header: Vec<&str> = columns.iter().map(|(name, _)| *name).collect();
    println!("| measure | {} |", header.join(" | "));
    println!("|---|{}", "---:|".repeat(columns.len()));
    for (i, (name, _)) in columns[0].1.writes.iter().enumerate() {
        let cells: Vec<String> = columns.iter().map(|(_, f)| format!("{:.0}", f.writes[i].1)).collect();
        println!("| writes/s, {name} | {} |", cells.join(" | "));
    }
    let ms = |d: Duration| format!("{:.2} ms", d.as_secs_f64() * 1000.0);
    type Pick = fn(&Figures) -> Duration;
    let rows: [(&str, Pick); 4] = [
        ("watch latency p50, write issued → event", |f| f.latency_start.0),
        ("watch latency p99, write issued → event", |f| f.latency_start.1),
        ("watch latency p50, write acknowledged → event", |f| f.latency_ack.0),
        ("watch latency p99, write acknowledged → event", |f| f.latency_ack.1),
    ];
    for (name, pick) in rows {
        let cells: Vec<String> = columns.iter().map(|(_, f)| ms(pick(f))).collect();
        println!("| {name} | {} |", cells.join(" | "));
    }
    eprintln!("total bench time {:.1} s", began.elapsed().as_secs_f64());
}

async fn measure(store: &SharedStore) -> Figures {
    let mut writes = Vec::new();
    for (size, label) in [(1024usize, "1 KiB"), (8192, "8 KiB")] {
        for writers in [1usize, 64] {
            let name = format!("{writers} writer{}, {label}", if writers == 1 { "" } else { "s" });
            let rate = write_rate(store, writers, size, &format!("/bench/{size}/{writers}/")).await;
            eprintln!("  {name}: {rate:.0} writes/s");
            writes.push((name, rate));
        }
    }
    let (latency_start, latency_ack) = watch_latency(store).await;
    Figures { writes, latency_start, latency_ack }
}

/// Creates fresh keys from `writers` concurrent tasks for CASE_SECONDS.
async fn write_rate(store: &SharedStore, writers: usize, size: usize, prefix: &str) -> f64 {
    let value = Bytes::from(vec![b'v'; size]);
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(CASE_SECONDS);
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let store = store.clone();
            let value = value.clone();
            let done = done.clone();
            let prefix = prefix.to_string();
            tokio::spawn(async move {
                let mut i = 0u64;
                while Instant::now() < deadline {
                    store
                        .create(&format!("{prefix}{w}/{i}"), value.clone(), None)
                        .await
                        .unwrap_or_else(|e| panic!("write failed: {e}"));
                    done.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("writer task");
    }
    done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

/// p50/p99 of (issued → received, acknowledged → received).
async fn watch_latency(store: &SharedStore) -> ((Duration, Duration), (Duration, Duration)) {
    let prefix = "/latency/";
    let mut watch = store.watch(prefix, 0, WatchOptions::default()).await.expect("watch");
    let issued: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let acked: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let receiver = tokio::spawn(async move {
        let mut received = Vec::with_capacity(LATENCY_EVENTS as usize);
        while (received.len() as u64) < LATENCY_EVENTS {
            match tokio::time::timeout(Duration::from_secs(30), watch.events.next()).await {
                Ok(Some(Ok(WatchEvent::Put { kv, .. }))) => received.push((kv.key, Instant::now())),
                Ok(Some(Ok(_))) => {}
                Ok(Some(Err(e))) => panic!("watch failed: {e}"),
                Ok(None) => panic!("watch ended"),
                Err(_) => panic!("no watch event for 30 s"),
            }
        }
        received
    });
    let value = Bytes::from(vec![b'v'; 1024]);
    let mut ticker = tokio::time::interval(Duration::from_nanos(1_000_000_000 / LATENCY_RATE));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut writes = Vec::new();
    for i in 0..LATENCY_EVENTS {
        ticker.tick().await;
        let key = format!("{prefix}{i}");
        let (store, value, issued, acked) = (store.clone(), value.clone(), issued.clone(), acked.clone());
        writes.push(tokio::spawn(async move {
            issued.lock().unwrap().insert(key.clone(), Instant::now());
            store.create(&key, value, None).await.unwrap_or_else(|e| panic!("write failed: {e}"));
            acked.lock().unwrap().insert(key, Instant::now());
        }));
    }
    for w in writes {
        w.await.expect("write task");
    }
    let received = receiver.await.expect("watch task");
    let issued = issued.lock().unwrap();
    let acked = acked.lock().unwrap();
    let mut from_start: Vec<Duration> =
        received.iter().map(|(k, at)| at.saturating_duration_since(issued[k])).collect();
    let mut from_ack: Vec<Duration> = received.iter().map(|(k, at)| at.saturating_duration_since(acked[k])).collect();
    (
        (percentile(&mut from_start, 50.0), percentile(&mut from_start, 99.0)),
        (percentile(&mut from_ack, 50.0), percentile(&mut from_ack, 99.0)),
    )
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    let idx = ((p / 100.0) * (samples.len() as f64 - 1.0)).round() as usize;
    samples[idx.min(samples.len() - 1)]
}
