//! API server benchmark (issue 3): the embedded store and etcd side by
//! side, each driven over HTTPS against the real `rkube server` binary and
//! in-process through `Api::handle`, with the load generator on the same
//! machine. Prints a markdown table.
//!
//! ```sh
//! cargo bench -p rkube --bench api
//! # a quick run:
//! RKUBE_BENCH_PODS=2000 RKUBE_BENCH_BACKENDS=sqlite cargo bench -p rkube --bench api
//! ```
//!
//! Environment:
//! - `RKUBE_BENCH_BACKENDS`: `sqlite,etcd` (default both; etcd is Debian's
//!   `/usr/bin/etcd`, started on free loopback ports in a temporary dir);
//! - `RKUBE_BENCH_CLIENTS`: `https,in-process` (default both);
//! - `RKUBE_BENCH_HTTP`: `2` (default: one HTTP/2 connection carries every
//!   concurrent request, as client-go does) or `1.1` (a pool of HTTP/1.1
//!   connections, one per concurrent request);
//! - `RKUBE_BENCH_PODS`: list sizes, ascending (default `10000,100000`);
//!   the largest is also the size of the RSS measurement;
//! - `RKUBE_BENCH_LATENCY_SECONDS` (default 5), `RKUBE_BENCH_FANOUT_EVENTS`
//!   (default 5000, `0` skips the fan-out).
//!
//! Measures, per backend and client path, on one fresh server (or `Api`):
//! 1. server RSS with 0 pods (HTTPS only: `VmRSS` of the server process
//!    after its pod watch cache has started);
//! 2. creates/s: `CLIENTS` concurrent clients, each creating pods
//!    back to back, filling a namespace to each list size;
//! 3. after each fill, `GET` of the namespace's pods with
//!    `resourceVersion=0` (served from the watch cache; median of
//!    `LIST_RUNS`) and without (a consistent read, also from the cache
//!    once it has caught up), timed to the last byte of the body;
//! 4. server RSS with the largest size stored and listed (`VmRSS`,
//!    `VmHWM`), and the RSS growth per pod against the pod's JSON size;
//! 5. create latency at a fixed 1,000 creates/s (open loop: each request
//!    is issued at its scheduled time whatever the previous ones do, and
//!    its latency counts from that time, so a stall is not hidden);
//! 6. watch fan-out: `WATCHERS` watches (over HTTPS each on its own
//!    connection, as separate clients) from the current resourceVersion
//!    while `CLIENTS` writers create `FANOUT_EVENTS` pods; events delivered
//!    per second over all watchers, from the first write to the last
//!    delivery, and how many watches ended early.

#[path = "../../tests/support/mod.rs"]
mod support;

mod client;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{Method, StatusCode};
use bytes::Bytes;
use client::{Client, Http, Https};
use rkube_apimachinery::registry::Registry;
use rkube_apiserver::bootstrap::ClusterConfig;
use rkube_apiserver::rest::Api;
use rkube_store::DatastoreEndpoint;
use serde_json::{json, Value};

const CLIENTS: usize = 64;
const RATE: u64 = 1_000;
const WATCHERS: usize = 100;
const LIST_RUNS: usize = 3;
const LIST_NS: &str = "bench-list";
const LATENCY_NS: &str = "bench-latency";
const FANOUT_NS: &str = "bench-fanout";

/// A small pod as `kubectl run` would send it: one container with an
/// image and a port, two labels.
fn pod(name: &str) -> Bytes {
    let body = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "bench", "run": name}},
        "spec": {"containers": [{
            "name": "web", "image": "registry.k8s.io/nginx:1.27",
            "ports": [{"containerPort": 80}],
        }]},
    });
    Bytes::from(serde_json::to_vec(&body).expect("json"))
}

fn env_list(name: &str, default: &str) -> Vec<String> {
    std::env::var(name).unwrap_or_else(|_| default.into()).split(',').map(|s| s.trim().to_string()).collect()
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

struct Settings {
    sizes: Vec<usize>,
    latency_secs: u64,
    fanout_events: usize,
    http: Http,
}

/// Rows in first-seen order; one column per backend and client path.
#[derive(Default)]
struct Table {
    rows: Vec<String>,
    columns: Vec<String>,
    cells: Vec<(usize, usize, String)>,
}

impl Table {
    fn set(&mut self, column: usize, row: &str, value: String) {
        let r = match self.rows.iter().position(|x| x == row) {
            Some(r) => r,
            None => {
                self.rows.push(row.to_string());
                self.rows.len() - 1
            }
        };
        eprintln!("  {row}: {value}");
        self.cells.push((r, column, value));
    }

    fn print(&self) {
        println!("| measure | {} |", self.columns.join(" | "));
        println!("|---|{}", "---:|".repeat(self.columns.len()));
        for (r, row) in self.rows.iter().enumerate() {
            let cells: Vec<String> = (0..self.columns.len())
                .map(|c| {
                    self.cells.iter().find(|(rr, cc, _)| *rr == r && *cc == c).map_or("–".into(), |x| x.2.clone())
                })
                .collect();
            println!("| {row} | {} |", cells.join(" | "));
        }
    }
}

fn main() {
    let backends = env_list("RKUBE_BENCH_BACKENDS", "sqlite,etcd");
    let paths = env_list("RKUBE_BENCH_CLIENTS", "https,in-process");
    let mut sizes: Vec<usize> =
        env_list("RKUBE_BENCH_PODS", "10000,100000").iter().map(|s| s.parse().expect("RKUBE_BENCH_PODS")).collect();
    sizes.sort_unstable();
    let http = match std::env::var("RKUBE_BENCH_HTTP").as_deref() {
        Ok("1.1") | Ok("1") => Http::H1,
        _ => Http::H2,
    };
    let settings = Settings {
        sizes,
        latency_secs: env_num("RKUBE_BENCH_LATENCY_SECONDS", 5),
        fanout_events: env_num("RKUBE_BENCH_FANOUT_EVENTS", 5_000) as usize,
        http,
    };
    let sample = pod("web-0000000");
    eprintln!("pod JSON as sent: {} bytes; HTTPS over {http:?}", sample.len());
    let mut table = Table::default();
    for backend in &backends {
        for path in &paths {
            let column = table.columns.len();
            table.columns.push(format!("{backend}, {path}"));
            eprintln!("measuring {backend} over {path}…");
            run_column(backend, path, &settings, &mut table, column);
        }
    }
    table.print();
}

/// Starts the backend and the server (or `Api`) and measures one column.
fn run_column(backend: &str, path: &str, settings: &Settings, table: &mut Table, column: usize) {
    let etcd = (backend == "etcd").then(|| support::etcd::EtcdProcess::start().unwrap_or_else(|e| panic!("{e}")));
    let etcd_endpoint = etcd.as_ref().map(|e| format!("etcd://{}", e.endpoint().trim_start_matches("http://")));
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    match path {
        "https" => {
            let server = support::TestServer::start_with(support::TestServerOptions {
                datastore_endpoint: etcd_endpoint,
                ..Default::default()
            });
            let addr = std::net::SocketAddr::from(([127, 0, 0, 1], server.port()));
            let client = Client::Https(Https::new(addr, &server.tls_dir(), settings.http));
            let pid = server.pid();
            rt.block_on(measure(&client, pid, settings, table, column));
            drop(server);
        }
        "in-process" => {
            let tmp = tempfile::tempdir().expect("tmp");
            let endpoint = match etcd_endpoint {
                Some(e) => DatastoreEndpoint::parse(&e).expect("endpoint"),
                None => DatastoreEndpoint::Sqlite(tmp.path().join("state.db")),
            };
            rt.block_on(async {
                let store = rkube_store::open(&endpoint).await.expect("open the store");
                let api = Api::with_cluster(Registry::builtin(), store, ClusterConfig::default());
                api.bootstrap().await.expect("bootstrap");
                measure(&Client::InProcess(Arc::new(api)), None, settings, table, column).await;
            });
        }
        other => panic!("RKUBE_BENCH_CLIENTS: unknown client path {other:?} (https, in-process)"),
    }
    rt.shutdown_timeout(Duration::from_secs(5));
    drop(etcd);
}

async fn measure(client: &Client, pid: Option<u32>, settings: &Settings, table: &mut Table, column: usize) {
    for ns in [LIST_NS, LATENCY_NS, FANOUT_NS] {
        let body = Bytes::from(serde_json::to_vec(&json!({"metadata": {"name": ns}})).expect("json"));
        let (status, resp) = client.call(Method::POST, "/api/v1/namespaces", Some(body)).await;
        assert_eq!(status, StatusCode::CREATED, "namespace {ns}: {}", String::from_utf8_lossy(&resp));
    }
    let list_path = format!("/api/v1/namespaces/{LIST_NS}/pods");
    // Start the pods' watch cache before the baseline.
    client.call(Method::GET, &list_path, None).await;
    let rss0 = pid.map(|pid| {
        std::thread::sleep(Duration::from_secs(1));
        proc_status(pid)
    });
    if let Some((rss, _)) = rss0 {
        table.set(column, "server RSS, 0 pods", mib(rss));
    }

    let mut stored = 0;
    for &size in &settings.sizes {
        let (elapsed, errors) = create_many(client, LIST_NS, stored, size - stored).await;
        let rate = (size - stored) as f64 / elapsed.as_secs_f64();
        let note = if errors > 0 { format!(" ({errors} failed)") } else { String::new() };
        table.set(
            column,
            &format!("creates/s, {CLIENTS} clients, pods {} → {}", num(stored), num(size)),
            format!("{}{note}", num(rate as usize)),
        );
        stored = size;
        // The consistent list first: it waits until the watch cache has
        // seen every create, after which `resourceVersion=0` (any state,
        // possibly stale by upstream's rules) lists them all too.
        let (consistent, _) = timed_list(client, &list_path, size).await;
        let mut cached = Vec::new();
        let mut bytes = 0;
        for _ in 0..LIST_RUNS {
            let (t, n) = timed_list(client, &format!("{list_path}?resourceVersion=0"), size).await;
            cached.push(t);
            bytes = n;
        }
        table.set(
            column,
            &format!("list {} pods, resourceVersion=0 (median of {LIST_RUNS})", num(size)),
            format!("{} ({:.0} MiB)", ms(median(&mut cached)), bytes as f64 / 1048576.0),
        );
        table.set(column, &format!("list {} pods, consistent (resourceVersion unset)", num(size)), ms(consistent));
    }
    if let (Some(pid), Some((rss0, _))) = (pid, rss0) {
        std::thread::sleep(Duration::from_secs(1));
        let (rss, hwm) = proc_status(pid);
        let size = stored;
        let (_, one) = client.call(Method::GET, &format!("{list_path}/{}", pod_name(0)), None).await;
        let per_pod = (rss.saturating_sub(rss0)) as f64 / size as f64;
        table.set(column, &format!("server RSS, {} pods (peak)", num(size)), format!("{} ({})", mib(rss), mib(hwm)));
        table.set(
            column,
            "RSS growth per stored pod / its JSON as served",
            format!("{per_pod:.0} B / {} B = {:.2}×", one.len(), per_pod / one.len() as f64),
        );
    }

    let (lat, achieved) = fixed_rate(client, settings.latency_secs).await;
    let mut lat = lat;
    lat.sort_unstable();
    table.set(column, "create latency at 1,000/s: p50", ms(percentile(&lat, 0.50)));
    table.set(column, "create latency at 1,000/s: p99", ms(percentile(&lat, 0.99)));
    table.set(column, "create latency at 1,000/s: max", ms(*lat.last().unwrap_or(&Duration::ZERO)));
    table.set(column, "create latency at 1,000/s: achieved rate", format!("{achieved:.0}/s"));

    if settings.fanout_events > 0 {
        let (rate, delivered, ended) = fanout(client, settings.fanout_events).await;
        table.set(
            column,
            &format!("watch fan-out, {WATCHERS} watchers × {} creates: events/s", num(settings.fanout_events)),
            num(rate as usize),
        );
        table.set(
            column,
            "watch fan-out: delivered / expected, watches ended early",
            format!("{} / {}, {ended}", num(delivered), num(settings.fanout_events * WATCHERS)),
        );
    }
}

fn pod_name(i: usize) -> String {
    format!("web-{i:07}")
}

/// Creates pods `first..first+count` in `ns` from `CLIENTS` concurrent
/// clients; the elapsed time and the number of failed creates.
async fn create_many(client: &Client, ns: &str, first: usize, count: usize) -> (Duration, usize) {
    let next = Arc::new(AtomicUsize::new(first));
    let failed = Arc::new(AtomicUsize::new(0));
    let end = first + count;
    let path = format!("/api/v1/namespaces/{ns}/pods");
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..CLIENTS {
        let (client, next, failed, path) = (client.clone(), next.clone(), failed.clone(), path.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= end {
                    break;
                }
                let (status, _) = client.call(Method::POST, &path, Some(pod(&pod_name(i)))).await;
                if status != StatusCode::CREATED {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for t in tasks {
        t.await.expect("a create task panicked");
    }
    (start.elapsed(), failed.load(Ordering::Relaxed))
}

/// GETs a list, checks it holds `expected` pods, and returns the time to
/// the last byte and the body size.
async fn timed_list(client: &Client, path: &str, expected: usize) -> (Duration, usize) {
    let start = Instant::now();
    let (status, body) = client.call(Method::GET, path, None).await;
    let elapsed = start.elapsed();
    assert_eq!(status, StatusCode::OK, "{path}: {}", String::from_utf8_lossy(&body[..body.len().min(500)]));
    let items = count(&body, b"\"uid\":");
    assert_eq!(items, expected, "{path}: items");
    (elapsed, body.len())
}

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack.windows(needle.len()).filter(|w| *w == needle).count()
}

/// Creates pods at `RATE`/s for `secs` seconds, open loop; the latencies
/// (from each request's scheduled time) and the achieved rate.
async fn fixed_rate(client: &Client, secs: u64) -> (Vec<Duration>, f64) {
    let total = (RATE * secs) as usize;
    let path = format!("/api/v1/namespaces/{LATENCY_NS}/pods");
    let start = tokio::time::Instant::now() + Duration::from_millis(50);
    let mut tasks = Vec::with_capacity(total);
    for i in 0..total {
        let at = start + Duration::from_nanos(i as u64 * 1_000_000_000 / RATE);
        tokio::time::sleep_until(at).await;
        let (client, path) = (client.clone(), path.clone());
        tasks.push(tokio::spawn(async move {
            let (status, body) = client.call(Method::POST, &path, Some(pod(&pod_name(i)))).await;
            assert_eq!(status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&body));
            (at.elapsed(), tokio::time::Instant::now())
        }));
    }
    let mut latencies = Vec::with_capacity(total);
    let mut last = start;
    for t in tasks {
        let (latency, done) = t.await.expect("a create task panicked");
        latencies.push(latency);
        last = last.max(done);
    }
    (latencies, total as f64 / (last - start).as_secs_f64())
}

/// `WATCHERS` watches of the fan-out namespace, then `events` creates in
/// it from `CLIENTS` writers: (events delivered per second over all
/// watchers, events delivered, watches that ended early).
async fn fanout(client: &Client, events: usize) -> (f64, usize, usize) {
    let (_, body) = client.call(Method::GET, &format!("/api/v1/namespaces/{FANOUT_NS}/pods?limit=1"), None).await;
    let list: Value = serde_json::from_slice(&body).expect("a list");
    let rv = list["metadata"]["resourceVersion"].as_str().expect("a resourceVersion").to_string();
    let path = format!("/api/v1/namespaces/{FANOUT_NS}/pods?watch=1&resourceVersion={rv}");
    let opened = Arc::new(tokio::sync::Semaphore::new(0));
    let finished = Arc::new(Mutex::new(Vec::new()));
    let mut watchers = Vec::new();
    for _ in 0..WATCHERS {
        let (client, path, opened, finished) = (client.clone(), path.clone(), opened.clone(), finished.clone());
        watchers.push(tokio::spawn(async move {
            let mut seen = 0;
            let watch = client.watch(
                &path,
                || opened.add_permits(1),
                |chunk| {
                    seen += chunk.iter().filter(|b| **b == b'\n').count();
                    seen < events
                },
            );
            let open = tokio::time::timeout(Duration::from_secs(120), watch).await.unwrap_or(true);
            finished.lock().expect("lock").push(Instant::now());
            (seen, open)
        }));
    }
    let _all_open = opened.acquire_many(WATCHERS as u32).await.expect("semaphore");
    let start = Instant::now();
    let (_, errors) = create_many(client, FANOUT_NS, 0, events).await;
    assert_eq!(errors, 0, "fan-out creates failed");
    let mut delivered = 0;
    let mut ended = 0;
    for w in watchers {
        let (seen, open) = w.await.expect("a watcher panicked");
        delivered += seen.min(events);
        if !open {
            ended += 1;
        }
    }
    let last = finished.lock().expect("lock").iter().copied().max().unwrap_or_else(Instant::now);
    (delivered as f64 / (last - start).as_secs_f64(), delivered, ended)
}

/// `(VmRSS, VmHWM)` of a process, in bytes.
fn proc_status(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/<pid>/status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn mib(b: u64) -> String {
    format!("{:.0} MiB", b as f64 / 1048576.0)
}

/// `12345` → `12,345`.
fn num(n: usize) -> String {
    let digits = n.to_string();
    let mut groups = Vec::new();
    let mut end = digits.len();
    while end > 3 {
        groups.push(&digits[end - 3..end]);
        end -= 3;
    }
    groups.push(&digits[..end]);
    groups.reverse();
    groups.join(",")
}
