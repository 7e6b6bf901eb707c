//! Watch cache benchmark (issue 3): lists from the cache, watch fan-out and
//! memory per cached pod.
//!
//! Run with `cargo bench -p rkube-apiserver --bench cache`. Prints a
//! markdown table:
//!
//! - **list**: `ResourceStore::list` of every pod (all namespaces) with
//!   `resourceVersion=0` and `""` (consistent) from the watch cache, and the
//!   same list read from the SQLite store (cache disabled), for 10,000 and
//!   100,000 pods of about 1.7 KiB of JSON each; the time includes decoding
//!   every object (the objects handed to the REST layer), and separately the
//!   JSON encoding of the resulting list body. Median of `LIST_RUNS`.
//! - **memory**: RSS growth (`/proc/self/statm`) of starting the cache over
//!   the populated store, per pod, against the pod's JSON size. The store is
//!   populated by a child process so that the heap of the measuring process
//!   holds nothing reusable.
//! - **fan-out**: `WATCHERS` API watches (`ResourceStore::watch`, each
//!   its own consumer task) while 64 writers create `FANOUT_EVENTS` pods;
//!   events delivered to all watchers per second, from the first write to
//!   the last delivery, and how many watchers were cut off as too slow.
//!
//! `RKUBE_BENCH_PODS=10000,100000` chooses the list sizes (`none`: only
//! the fan-out). The fan-out runs twice: with the default watcher buffer
//! (slow watchers are cut off, as in production) and with a buffer that
//! holds the whole burst (the raw delivery rate).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rkube_apimachinery::registry::Registry;
use rkube_apiserver::cache::{CacheOptions, Freshness};
use rkube_apiserver::storage::watch::WatchOptions;
use rkube_apiserver::storage::{ListOptions, ResourceStore};
use rkube_store::sqlite::SqliteStore;
use rkube_store::SharedStore;
use serde_json::{json, Value};

const LIST_RUNS: usize = 5;
const WATCHERS: usize = 100;
const FANOUT_EVENTS: usize = 5_000;
const WRITERS: usize = 64;
const NAMESPACES: usize = 10;
const POPULATE_ENV: &str = "RKUBE_CACHE_BENCH_POPULATE";

/// A realistic pod as stored (no resourceVersion): a Deployment's replica
/// with probes, env, resources, volumes and a running status.
fn pod(i: usize) -> Value {
    let ns = format!("team-{}", i % NAMESPACES);
    let name = format!("web-{:07}-7d9f8c6b5-{:05x}", i / 3, i);
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "namespace": ns, "uid": format!("1f0c3c52-8a4e-4d2b-9d7e-{i:012}"),
            "generateName": "web-7d9f8c6b5-", "creationTimestamp": "2026-11-29T10:00:00Z",
            "labels": {"app": "web", "pod-template-hash": "7d9f8c6b5", "tier": "frontend"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9f8c6b5",
                "uid": "8b1e2d3c-4f5a-6b7c-8d9e-0f1a2b3c4d5e", "controller": true, "blockOwnerDeletion": true}]
        },
        "spec": {
            "containers": [{
                "name": "web", "image": "registry.example.com/team/web:1.27.3", "imagePullPolicy": "IfNotPresent",
                "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
                "env": [{"name": "LOG_LEVEL", "value": "info"}, {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"
            }],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "serviceAccount": "default", "nodeName": format!("node-{:03}", i % 500),
            "securityContext": {}, "schedulerName": "default-scheduler", "priority": 0,
            "enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority"
        },
        "status": {
            "phase": "Running", "hostIP": "10.0.1.17", "podIP": format!("10.42.{}.{}", (i / 250) % 256, i % 250 + 2),
            "startTime": "2026-11-29T10:00:01Z", "qosClass": "Burstable",
            "conditions": [
                {"type": "Initialized", "status": "True", "lastTransitionTime": "2026-11-29T10:00:01Z"},
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-29T10:00:05Z"},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-29T10:00:00Z"}
            ],
            "containerStatuses": [{"name": "web", "ready": true, "restartCount": 0, "started": true,
                "image": "registry.example.com/team/web:1.27.3",
                "containerID": format!("containerd://{i:064x}"),
                "state": {"running": {"startedAt": "2026-11-29T10:00:03Z"}}}]
        }
    })
}

fn key(i: usize) -> String {
    let p = pod(i);
    format!(
        "/registry/pods/{}/{}",
        p["metadata"]["namespace"].as_str().unwrap(),
        p["metadata"]["name"].as_str().unwrap()
    )
}

/// Creates pods `from..to` with `WRITERS` concurrent writers.
async fn populate(store: &SharedStore, from: usize, to: usize) {
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut i = from + w;
            while i < to {
                let value = Bytes::from(serde_json::to_vec(&pod(i)).unwrap());
                store.create(&key(i), value, None).await.unwrap();
                i += WRITERS;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

fn pods_store(store: &SharedStore) -> ResourceStore {
    let registry = Registry::builtin();
    let info = registry.resources().iter().find(|r| r.group.is_empty() && r.plural == "pods" && r.preferred).unwrap();
    ResourceStore::new(info, store.clone()).unwrap()
}

async fn open(path: &std::path::Path) -> SharedStore {
    Arc::new(SqliteStore::open(path).await.unwrap())
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

async fn time_list(pods: &ResourceStore, rv: &str) -> (Duration, Duration, usize) {
    let mut list_times = Vec::new();
    let mut encode_times = Vec::new();
    let mut n = 0;
    for _ in 0..LIST_RUNS {
        let t = Instant::now();
        let list = pods.list("", &ListOptions { resource_version: rv.into(), ..Default::default() }).await.unwrap();
        list_times.push(t.elapsed());
        let t = Instant::now();
        let body = serde_json::to_vec(&json!({"kind": "PodList", "apiVersion": "v1", "items": list.items})).unwrap();
        encode_times.push(t.elapsed());
        n = body.len();
    }
    (median(list_times), median(encode_times), n)
}

struct Row(String, String);

async fn list_case(n: usize, rows: &mut Vec<Row>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    // Populate in a child process: this process's heap stays clean for the RSS figure.
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .env(POPULATE_ENV, format!("{}:{n}", path.display()))
        .status()
        .unwrap();
    assert!(status.success(), "populating the store failed");

    let store = open(&path).await;
    let pods = pods_store(&store);
    let before = rss_bytes();
    let t = Instant::now();
    assert!(pods.watch_cache().unwrap().wait_fresh(Freshness::Any).await);
    let init = t.elapsed();
    let after = rss_bytes();
    // Only now: the pods built here would leave freed heap the cache reuses.
    let json_bytes: usize = (0..n).map(|i| serde_json::to_vec(&pod(i)).unwrap().len()).sum();
    assert_eq!(pods.watch_cache().unwrap().len(), n);
    let per_pod = (after - before) as f64 / n as f64;
    let avg_json = json_bytes as f64 / n as f64;
    rows.push(Row(
        format!("{n} pods: cache initial list (start → ready)"),
        format!("{:.0} ms", init.as_secs_f64() * 1e3),
    ));
    rows.push(Row(
        format!("{n} pods: memory per cached pod (RSS delta / JSON size)"),
        format!("{per_pod:.0} B / {avg_json:.0} B = {:.2}×", per_pod / avg_json),
    ));

    for (label, rv) in [("resourceVersion=0", "0"), ("resourceVersion=\"\" (consistent)", "")] {
        let (list, encode, size) = time_list(&pods, rv).await;
        rows.push(Row(
            format!("{n} pods: list {label} from cache"),
            format!("{:.0} ms (+ {:.0} ms JSON encode, {:.0} MiB)", ms(list), ms(encode), size as f64 / 1048576.0),
        ));
    }
    let direct = pods_store(&store).without_watch_cache();
    let (list, _, _) = time_list(&direct, "").await;
    rows.push(Row(
        format!("{n} pods: list resourceVersion=\"\" from the store (no cache)"),
        format!("{:.0} ms", ms(list)),
    ));
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `buffer`: events each watcher may fall behind before it is cut off.
async fn fanout_case(buffer: usize, rows: &mut Vec<Row>) {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("state.db")).await;
    let opts = CacheOptions { watcher_buffer: buffer, ..Default::default() };
    let pods = pods_store(&store).with_watch_cache(Some(opts));
    assert!(pods.watch_cache().unwrap().wait_fresh(Freshness::Any).await);
    let start = store.current_revision().await.unwrap().to_string();
    let mut consumers = Vec::new();
    for _ in 0..WATCHERS {
        let opts = WatchOptions { resource_version: start.clone(), ..Default::default() };
        let mut events = pods.watch("", opts).await.unwrap();
        consumers.push(tokio::spawn(async move {
            let mut n = 0;
            while n < FANOUT_EVENTS {
                match tokio::time::timeout(Duration::from_secs(60), events.recv()).await {
                    Ok(Some(_)) => n += 1,
                    _ => break,
                }
            }
            (n, Instant::now())
        }));
    }
    assert_eq!(pods.watch_cache().unwrap().watcher_count(), WATCHERS);
    let t = Instant::now();
    populate(&store, 0, FANOUT_EVENTS).await;
    let writes = t.elapsed();
    let (mut delivered, mut cut) = (0, 0);
    let mut last = t;
    for c in consumers {
        let (n, at) = c.await.unwrap();
        delivered += n;
        cut += usize::from(n < FANOUT_EVENTS);
        last = last.max(at);
    }
    let total = last - t;
    rows.push(Row(
        format!("fan-out: {FANOUT_EVENTS} creates ({WRITERS} writers) to {WATCHERS} watchers, watcher buffer {buffer}"),
        format!(
            "{delivered} of {} events delivered in {:.2} s = {:.0} events/s (writes alone: {:.0}/s; {cut} watchers cut off as too slow)",
            FANOUT_EVENTS * WATCHERS,
            total.as_secs_f64(),
            delivered as f64 / total.as_secs_f64(),
            FANOUT_EVENTS as f64 / writes.as_secs_f64()
        ),
    ));
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    if let Ok(spec) = std::env::var(POPULATE_ENV) {
        let (path, n) = spec.rsplit_once(':').unwrap();
        let n: usize = n.parse().unwrap();
        runtime.block_on(async {
            let store = open(std::path::Path::new(path)).await;
            populate(&store, 0, n).await;
        });
        return;
    }
    let sizes: Vec<usize> = std::env::var("RKUBE_BENCH_PODS")
        .unwrap_or_else(|_| "10000,100000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let avg = (0..100).map(|i| serde_json::to_vec(&pod(i)).unwrap().len()).sum::<usize>() / 100;
    eprintln!("pod JSON: {avg} bytes on average");
    let mut rows = Vec::new();
    runtime.block_on(async {
        for n in sizes {
            list_case(n, &mut rows).await;
        }
        // The default buffer, then one that never cuts a watcher off (raw throughput).
        fanout_case(CacheOptions::default().watcher_buffer, &mut rows).await;
        fanout_case(FANOUT_EVENTS, &mut rows).await;
    });
    println!("| measure | result |");
    println!("|---|---|");
    for Row(k, v) in rows {
        println!("| {k} | {v} |");
    }
}
