//! Scheduler benchmark through the API (issue 5), after upstream's
//! `test/integration/scheduler_perf`: a real `rkube server` (release
//! binary, SQLite in a temporary dir, scheduler on, no node agent, only the
//! ServiceAccount controller) gets its nodes and pods over HTTPS, with no
//! kubelets, and the bench watches the pods get bound. Prints a markdown
//! table.
//!
//! ```sh
//! cargo bench -p rkube --bench scheduler_perf                       # issue sizes
//! cargo bench -p rkube --bench scheduler_perf -- --nodes 500 --pods 1000 \
//!     --workloads basic,node-affinity                                # a quick run
//! ```
//!
//! Flags (after `--`): `--nodes N` (default 5,000), `--pods M` (default
//! 10,000), `--workloads a,b` (default all: `basic`, `pod-anti-affinity`,
//! `pod-affinity`, `node-affinity`, `topology-spreading`, `preemption`),
//! `--concurrency C` (in-flight creates, default 64, all on one HTTP/2
//! connection as client-go does).
//!
//! Workloads (shapes from upstream's `performance-config.yaml` and its pod
//! templates; nodes: 4 CPU, 32 GiB, 110 pods, three zones):
//! - `basic`: M pods requesting 100m CPU / 500 MiB on N nodes;
//! - `pod-anti-affinity`: N/5 pods, each with required anti-affinity to
//!   the others on `kubernetes.io/hostname` (fewer pods than nodes);
//! - `pod-affinity`: N/5 pods with required affinity to each other on the
//!   zone;
//! - `node-affinity`: M pods requiring zone ∈ {zone-a, zone-b};
//! - `topology-spreading`: M pods with a zone spread constraint, maxSkew 1,
//!   `DoNotSchedule`;
//! - `preemption`: N/10 nodes filled with 4 low-priority pods each (900m
//!   CPU; `terminationGracePeriodSeconds: 0`, so a victim's deletion is
//!   immediate without a kubelet), then N/10 high-priority pods (3 CPU) that
//!   each have to preempt.
//!
//! Each workload runs on a fresh server. Measured per workload: creates/s
//! (first create sent to last create answered), scheduled pods/s (first
//! create sent to the last binding seen on the watch) and the per-pod
//! latency from the pod's `ADDED` watch event to the watch event that
//! carries its `spec.nodeName` (p50, p99, max). No node Leases are written:
//! the node lifecycle controller, the only reader, is not running.

#[path = "../tests/support/mod.rs"]
mod support;

#[path = "api/client.rs"]
#[allow(dead_code)]
mod client;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{Method, StatusCode};
use bytes::Bytes;
use client::{Client, Http, Https};
use serde_json::{json, Value};

const ZONES: [&str; 3] = ["zone-a", "zone-b", "zone-c"];

struct Args {
    nodes: usize,
    pods: usize,
    workloads: Vec<String>,
    concurrency: usize,
}

fn parse_args() -> Args {
    let mut args = Args {
        nodes: 5_000,
        pods: 10_000,
        workloads: ["basic", "pod-anti-affinity", "pod-affinity", "node-affinity", "topology-spreading", "preemption"]
            .map(String::from)
            .to_vec(),
        concurrency: 64,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--nodes" => args.nodes = value().parse().expect("--nodes"),
            "--pods" => args.pods = value().parse().expect("--pods"),
            "--concurrency" => args.concurrency = value().parse().expect("--concurrency"),
            "--workloads" => args.workloads = value().split(',').map(|s| s.trim().to_string()).collect(),
            // cargo bench passes `--bench`.
            "--bench" => {}
            other => panic!("unknown argument {other:?}"),
        }
    }
    args
}

fn node(i: usize) -> Bytes {
    let name = format!("node-{i:05}");
    let body = json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "topology.kubernetes.io/zone": ZONES[i % ZONES.len()],
        }},
        "status": {
            "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                "message": "kubelet is posting ready status"}],
            "phase": "Running",
        },
    });
    Bytes::from(serde_json::to_vec(&body).expect("json"))
}

/// A pod of `phase` (`measure` or `init`, its `bench` label) shaped for
/// `workload`.
fn pod(workload: &str, phase: &str, i: usize) -> Bytes {
    let name = format!("{phase}-{i:06}");
    let (cpu, memory) = match (workload, phase) {
        ("preemption", "init") => ("900m", "500Mi"),
        ("preemption", _) => ("3", "500Mi"),
        _ => ("100m", "500Mi"),
    };
    let mut body = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"bench": phase, "color": "green"}},
        "spec": {"containers": [{
            "name": "pause", "image": "registry.k8s.io/pause:3.10",
            "resources": {"requests": {"cpu": cpu, "memory": memory}},
        }],
        // TaintNodesByCondition admission taints new nodes not-ready until
        // the node lifecycle controller (not running here) sees them Ready;
        // upstream's scheduler_perf disables that plugin instead.
        "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}]},
    });
    let spec = &mut body["spec"];
    let green = json!({"matchLabels": {"color": "green"}});
    match (workload, phase) {
        ("pod-anti-affinity", _) => {
            spec["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": green, "topologyKey": "kubernetes.io/hostname"}]}});
        }
        ("pod-affinity", _) => {
            spec["affinity"] = json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": green, "topologyKey": "topology.kubernetes.io/zone"}]}});
        }
        ("node-affinity", _) => {
            spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "topology.kubernetes.io/zone",
                    "operator": "In", "values": ["zone-a", "zone-b"]}]}]}}});
        }
        ("topology-spreading", _) => {
            spec["topologySpreadConstraints"] = json!([{"maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": green}]);
        }
        ("preemption", "init") => {
            spec["priorityClassName"] = json!("low");
            spec["terminationGracePeriodSeconds"] = json!(0);
        }
        ("preemption", _) => spec["priorityClassName"] = json!("high"),
        _ => {}
    }
    Bytes::from(serde_json::to_vec(&body).expect("json"))
}

/// Posts every body to `path` with `concurrency` requests in flight
/// (429s are retried); returns the time the last answer arrived.
async fn create_all(client: &Client, path: &str, bodies: Vec<Bytes>, concurrency: usize) -> Instant {
    let bodies = Arc::new(bodies);
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (client, bodies, next, path) = (client.clone(), bodies.clone(), next.clone(), path.to_string());
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(body) = bodies.get(i) else { return };
                loop {
                    let (status, resp) = client.call(Method::POST, &path, Some(body.clone())).await;
                    match status {
                        StatusCode::CREATED => break,
                        StatusCode::TOO_MANY_REQUESTS => tokio::time::sleep(Duration::from_millis(10)).await,
                        s => panic!("POST {path}: {s} {}", String::from_utf8_lossy(&resp)),
                    }
                }
            }
        }));
    }
    for t in tasks {
        t.await.expect("create task");
    }
    Instant::now()
}

/// Per-pod watch times.
#[derive(Default)]
struct Seen {
    added: HashMap<String, Instant>,
    bound: HashMap<String, Instant>,
}

/// What one measured phase gave.
struct PhaseResult {
    pods: usize,
    bound: usize,
    create_secs: f64,
    schedule_secs: f64,
    latencies_ms: Vec<f64>,
}

/// Watches the pods labelled `bench=<phase>`, creates `bodies`, and waits
/// (at most `timeout`) until every one is bound.
async fn run_phase(
    client: &Client,
    phase: &str,
    bodies: Vec<Bytes>,
    concurrency: usize,
    timeout: Duration,
) -> PhaseResult {
    let want = bodies.len();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (opened_tx, opened_rx) = tokio::sync::oneshot::channel();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    let watch = {
        let (client, seen) = (client.clone(), seen.clone());
        let path = format!("/api/v1/namespaces/default/pods?watch=1&labelSelector=bench%3D{phase}");
        tokio::spawn(async move {
            let mut buf = Vec::<u8>::new();
            let mut done = Some(done_tx);
            client
                .watch(
                    &path,
                    move || {
                        let _ = opened_tx.send(());
                    },
                    |chunk| {
                        let now = Instant::now();
                        buf.extend_from_slice(chunk);
                        let mut seen = seen.lock().unwrap();
                        while let Some(nl) = buf.iter().position(|b| *b == b'\n') {
                            let line: Vec<u8> = buf.drain(..=nl).collect();
                            let Ok(ev) = serde_json::from_slice::<Value>(&line) else { continue };
                            let obj = &ev["object"];
                            let Some(name) = obj["metadata"]["name"].as_str() else { continue };
                            seen.added.entry(name.to_string()).or_insert(now);
                            if obj["spec"]["nodeName"].as_str().is_some_and(|n| !n.is_empty()) {
                                seen.bound.entry(name.to_string()).or_insert(now);
                            }
                        }
                        if seen.bound.len() >= want {
                            if let Some(d) = done.take() {
                                let _ = d.send(());
                            }
                            return false;
                        }
                        true
                    },
                )
                .await;
        })
    };
    opened_rx.await.expect("the watch opened");
    let start = Instant::now();
    let created = create_all(client, "/api/v1/namespaces/default/pods", bodies, concurrency).await;
    let _ = tokio::time::timeout(timeout, done_rx).await;
    watch.abort();
    let seen = seen.lock().unwrap();
    let last_bind = seen.bound.values().max().copied().unwrap_or(start);
    let mut latencies_ms: Vec<f64> = seen
        .bound
        .iter()
        .filter_map(|(name, b)| seen.added.get(name).map(|a| b.duration_since(*a).as_secs_f64() * 1e3))
        .collect();
    latencies_ms.sort_by(f64::total_cmp);
    PhaseResult {
        pods: want,
        bound: seen.bound.len(),
        create_secs: created.duration_since(start).as_secs_f64(),
        schedule_secs: last_bind.duration_since(start).as_secs_f64(),
        latencies_ms,
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1]
}

/// Upstream's CI floor (pods/s) for the workload, if it has one.
fn floor(workload: &str) -> Option<f64> {
    match workload {
        "basic" => Some(680.0),
        "pod-anti-affinity" => Some(60.0),
        "pod-affinity" => Some(35.0),
        "node-affinity" => Some(220.0),
        "preemption" => Some(570.0),
        _ => None,
    }
}

async fn run_workload(client: &Client, workload: &str, args: &Args) -> (usize, PhaseResult) {
    let nodes = match workload {
        "preemption" => (args.nodes / 10).max(1),
        _ => args.nodes,
    };
    let pods = match workload {
        "pod-anti-affinity" | "pod-affinity" => (args.nodes / 5).max(1),
        "preemption" => nodes,
        _ => args.pods,
    };
    let t = Instant::now();
    create_all(client, "/api/v1/nodes", (0..nodes).map(node).collect(), args.concurrency).await;
    eprintln!("  {nodes} nodes created in {:.1} s", t.elapsed().as_secs_f64());
    let timeout = Duration::from_secs(30 + pods as u64 / 50);
    if workload == "preemption" {
        for (name, value) in [("low", 10), ("high", 1000)] {
            let body = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": name}, "value": value});
            let (s, b) = client
                .call(
                    Method::POST,
                    "/apis/scheduling.k8s.io/v1/priorityclasses",
                    Some(serde_json::to_vec(&body).unwrap().into()),
                )
                .await;
            assert_eq!(s, StatusCode::CREATED, "{}", String::from_utf8_lossy(&b));
        }
    }
    // Let the scheduler's informer take the nodes in before the clock starts.
    tokio::time::sleep(Duration::from_secs(2)).await;
    if workload == "preemption" {
        let init: Vec<Bytes> = (0..nodes * 4).map(|i| pod(workload, "init", i)).collect();
        let r = run_phase(client, "init", init, args.concurrency, timeout * 4).await;
        eprintln!("  {} of {} low-priority pods bound in {:.1} s", r.bound, r.pods, r.schedule_secs);
    }
    let bodies: Vec<Bytes> = (0..pods).map(|i| pod(workload, "measure", i)).collect();
    (nodes, run_phase(client, "measure", bodies, args.concurrency, timeout).await)
}

fn main() {
    let args = parse_args();
    let mut rows = Vec::new();
    for workload in &args.workloads {
        eprintln!("{workload}…");
        let server =
            support::TestServer::start_with(support::TestServerOptions { scheduler: true, ..Default::default() });
        let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], server.port()));
        let client = Client::Https(Https::new(addr, &server.tls_dir(), Http::H2));
        let (nodes, r) = rt.block_on(run_workload(&client, workload, &args));
        rt.shutdown_timeout(Duration::from_secs(5));
        let rate = r.bound as f64 / r.schedule_secs;
        let row = format!(
            "| {workload} | {nodes} | {} | {}/{} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {} |",
            r.pods,
            r.bound,
            r.pods,
            r.pods as f64 / r.create_secs,
            rate,
            percentile(&r.latencies_ms, 0.5),
            percentile(&r.latencies_ms, 0.99),
            r.latencies_ms.last().copied().unwrap_or(f64::NAN),
            floor(workload).map_or("–".into(), |f| format!("{f:.0} ({:.1}×)", rate / f)),
        );
        eprintln!("{row}");
        if r.bound < r.pods {
            eprintln!("--- rkube stderr (tail) ---\n{}", tail(&server.logs(), 40));
        }
        rows.push(row);
        drop(server);
    }
    println!("| workload | nodes | pods | bound | creates/s | scheduled pods/s | p50 ms | p99 ms | max ms | upstream floor (ratio) |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for row in rows {
        println!("{row}");
    }
}

fn tail(s: &str, lines: usize) -> String {
    let all: Vec<&str> = s.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
