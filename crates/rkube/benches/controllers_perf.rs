//! Controller-manager benchmark through the API (issue 6): a real `rkube
//! server` (release binary, SQLite in a temporary dir, no scheduler, no
//! node agent) runs only the controllers a workload needs, and the bench
//! watches their results arrive. Prints a markdown table.
//!
//! ```sh
//! cargo bench -p rkube --bench controllers_perf                      # issue sizes
//! cargo bench -p rkube --bench controllers_perf -- --replicas 1000 \
//!     --deployments 100 --dependents 1000                           # a quick run
//! ```
//!
//! Flags (after `--`): `--replicas N` (default 10,000), `--deployments D`
//! (default 1,000), `--dependents M` (default 10,000), `--workloads a,b`
//! (default all), `--concurrency C` (in-flight requests, default 64, one
//! HTTP/2 connection as client-go).
//!
//! Workloads:
//! - `scale`: one Deployment created with N replicas; measured from the
//!   create to the N-th pod seen on a pod watch (pods created per second;
//!   target ≥ 5,000/s).
//! - `rollouts`: D Deployments of one replica created together while the
//!   bench plays every kubelet (each new pod is made Running and Ready
//!   through `pods/status`); measured until every Deployment reports an
//!   available, updated replica (Deployments rolled out per second).
//! - `cascade`: one owner ConfigMap with M dependent ConfigMaps
//!   (ownerReferences to it), deleted with `propagationPolicy: Background`;
//!   measured from the delete to the M-th dependent's DELETED event
//!   (target: ≤ 5 s for 10,000).

#[path = "../tests/support/mod.rs"]
mod support;

#[path = "api/client.rs"]
#[allow(dead_code)]
mod client;

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{Method, StatusCode};
use bytes::Bytes;
use client::{Client, Http, Https};
use serde_json::{json, Value};

struct Args {
    replicas: usize,
    deployments: usize,
    dependents: usize,
    workloads: Vec<String>,
    concurrency: usize,
}

fn parse_args() -> Args {
    let mut args = Args {
        replicas: 10_000,
        deployments: 1_000,
        dependents: 10_000,
        workloads: ["scale", "rollouts", "cascade"].map(String::from).to_vec(),
        concurrency: 64,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--replicas" => args.replicas = value().parse().expect("--replicas N"),
            "--deployments" => args.deployments = value().parse().expect("--deployments D"),
            "--dependents" => args.dependents = value().parse().expect("--dependents M"),
            "--workloads" => args.workloads = value().split(',').map(String::from).collect(),
            "--concurrency" => args.concurrency = value().parse().expect("--concurrency C"),
            // cargo bench passes --bench to harness-less benches.
            _ => {}
        }
    }
    args
}

fn body(v: &Value) -> Bytes {
    Bytes::from(serde_json::to_vec(v).expect("json"))
}

fn deployment(name: &str, replicas: usize) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name, "bench": "1"}},
                "spec": {"terminationGracePeriodSeconds": 0,
                    "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}})
}

/// Posts every body to `path` with `concurrency` requests in flight
/// (429s are retried).
async fn create_all(client: &Client, path: &str, bodies: Vec<Bytes>, concurrency: usize) {
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
}

/// Opens a watch on `path` and calls `on_event(type, object)` for each
/// event until it returns true (done); the returned receiver fires then.
/// Waits until the watch is registered before returning.
async fn watch_until(
    client: &Client,
    path: String,
    mut on_event: impl FnMut(&str, &Value) -> bool + Send + 'static,
) -> (tokio::sync::oneshot::Receiver<Instant>, tokio::task::JoinHandle<()>) {
    let (opened_tx, opened_rx) = tokio::sync::oneshot::channel();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    let client = client.clone();
    let task = tokio::spawn(async move {
        let mut buf = Vec::<u8>::new();
        let mut done = Some(done_tx);
        client
            .watch(
                &path,
                move || {
                    let _ = opened_tx.send(());
                },
                |chunk| {
                    buf.extend_from_slice(chunk);
                    while let Some(nl) = buf.iter().position(|b| *b == b'\n') {
                        let line: Vec<u8> = buf.drain(..=nl).collect();
                        let Ok(ev) = serde_json::from_slice::<Value>(&line) else { continue };
                        if on_event(ev["type"].as_str().unwrap_or(""), &ev["object"]) {
                            if let Some(d) = done.take() {
                                let _ = d.send(Instant::now());
                            }
                            return false;
                        }
                    }
                    true
                },
            )
            .await;
    });
    opened_rx.await.expect("the watch opened");
    (done_rx, task)
}

/// One result row.
struct Row {
    workload: &'static str,
    size: String,
    secs: f64,
    rate: f64,
    unit: &'static str,
    target: String,
}

async fn scale(client: &Client, n: usize) -> Row {
    let seen = Arc::new(Mutex::new(HashSet::<String>::new()));
    let s2 = seen.clone();
    let (done, watch) =
        watch_until(client, "/api/v1/namespaces/default/pods?watch=1&labelSelector=app%3Dscale".into(), move |t, o| {
            if t == "ADDED" {
                s2.lock().unwrap().insert(o["metadata"]["name"].as_str().unwrap_or("").to_string());
            }
            s2.lock().unwrap().len() >= n
        })
        .await;
    let start = Instant::now();
    create_all(client, "/apis/apps/v1/namespaces/default/deployments", vec![body(&deployment("scale", n))], 1).await;
    let end = tokio::time::timeout(Duration::from_secs(60 + n as u64 / 50), done).await;
    watch.abort();
    let got = seen.lock().unwrap().len();
    let secs = match end {
        Ok(Ok(t)) => t.duration_since(start).as_secs_f64(),
        _ => {
            eprintln!("  only {got} of {n} pods appeared");
            f64::NAN
        }
    };
    Row {
        workload: "scale",
        size: format!("1 Deployment × {n} replicas"),
        secs,
        rate: n as f64 / secs,
        unit: "pods created/s",
        target: format!("5,000/s ({:.2}×)", n as f64 / secs / 5000.0),
    }
}

/// Makes every new pod Running and Ready through `pods/status`, as its
/// kubelet would, until aborted.
async fn play_kubelets(client: &Client) -> tokio::task::JoinHandle<()> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Value>();
    let (_done, watch) =
        watch_until(client, "/api/v1/namespaces/default/pods?watch=1&labelSelector=bench%3D1".into(), move |t, o| {
            if t == "ADDED" {
                let _ = tx.send(o.clone());
            }
            false
        })
        .await;
    let client = client.clone();
    tokio::spawn(async move {
        let sem = Arc::new(tokio::sync::Semaphore::new(32));
        let mut tasks = Vec::new();
        while let Some(mut pod) = rx.recv().await {
            let permit = sem.clone().acquire_owned().await.expect("semaphore");
            let client = client.clone();
            tasks.push(tokio::spawn(async move {
                let _permit = permit;
                let name = pod["metadata"]["name"].as_str().unwrap_or("").to_string();
                let path = format!("/api/v1/namespaces/default/pods/{name}/status");
                for _ in 0..5 {
                    pod["status"] = json!({"phase": "Running", "podIP": "10.42.0.2",
                        "conditions": [{"type": "Ready", "status": "True"},
                                       {"type": "ContainersReady", "status": "True"}]});
                    let (s, _) = client.call(Method::PUT, &path, Some(body(&pod))).await;
                    if s != StatusCode::CONFLICT {
                        return;
                    }
                    let (_, b) =
                        client.call(Method::GET, &format!("/api/v1/namespaces/default/pods/{name}"), None).await;
                    pod = serde_json::from_slice(&b).unwrap_or(Value::Null);
                }
            }));
        }
        drop(watch);
    })
}

async fn rollouts(client: &Client, d: usize, concurrency: usize) -> Row {
    let kubelets = play_kubelets(client).await;
    let available = Arc::new(Mutex::new(HashSet::<String>::new()));
    let a2 = available.clone();
    let (done, watch) =
        watch_until(client, "/apis/apps/v1/namespaces/default/deployments?watch=1".into(), move |_, o| {
            let st = &o["status"];
            if st["availableReplicas"].as_i64() == Some(1) && st["updatedReplicas"].as_i64() == Some(1) {
                a2.lock().unwrap().insert(o["metadata"]["name"].as_str().unwrap_or("").to_string());
            }
            a2.lock().unwrap().len() >= d
        })
        .await;
    let start = Instant::now();
    let bodies = (0..d).map(|i| body(&deployment(&format!("roll-{i}"), 1))).collect();
    create_all(client, "/apis/apps/v1/namespaces/default/deployments", bodies, concurrency).await;
    let end = tokio::time::timeout(Duration::from_secs(120 + d as u64 / 5), done).await;
    watch.abort();
    kubelets.abort();
    let got = available.lock().unwrap().len();
    let secs = match end {
        Ok(Ok(t)) => t.duration_since(start).as_secs_f64(),
        _ => {
            eprintln!("  only {got} of {d} Deployments became available");
            f64::NAN
        }
    };
    Row {
        workload: "rollouts",
        size: format!("{d} Deployments × 1 replica"),
        secs,
        rate: d as f64 / secs,
        unit: "Deployments available/s",
        target: "–".into(),
    }
}

async fn cascade(client: &Client, m: usize, concurrency: usize) -> Row {
    let (s, b) = client
        .call(
            Method::POST,
            "/api/v1/namespaces/default/configmaps",
            Some(body(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}}))),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{}", String::from_utf8_lossy(&b));
    let owner: Value = serde_json::from_slice(&b).expect("owner");
    let uid = owner["metadata"]["uid"].as_str().expect("uid").to_string();
    let bodies = (0..m)
        .map(|i| {
            body(&json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("dep-{i}"), "labels": {"bench": "cascade"},
                    "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}]}}))
        })
        .collect();
    let t = Instant::now();
    create_all(client, "/api/v1/namespaces/default/configmaps", bodies, concurrency).await;
    eprintln!("  {m} dependents created in {:.1} s", t.elapsed().as_secs_f64());
    // Let the garbage collector's graph take them in before the clock starts.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let deleted = Arc::new(AtomicUsize::new(0));
    let d2 = deleted.clone();
    let (done, watch) = watch_until(
        client,
        "/api/v1/namespaces/default/configmaps?watch=1&labelSelector=bench%3Dcascade".into(),
        move |t, _| {
            if t == "DELETED" {
                d2.fetch_add(1, Ordering::Relaxed);
            }
            d2.load(Ordering::Relaxed) >= m
        },
    )
    .await;
    let start = Instant::now();
    let (s, b) = client
        .call(
            Method::DELETE,
            "/api/v1/namespaces/default/configmaps/owner",
            Some(body(&json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}))),
        )
        .await;
    assert!(s.is_success(), "{s} {}", String::from_utf8_lossy(&b));
    let end = tokio::time::timeout(Duration::from_secs(60 + m as u64 / 50), done).await;
    watch.abort();
    let secs = match end {
        Ok(Ok(t)) => t.duration_since(start).as_secs_f64(),
        _ => {
            eprintln!("  only {} of {m} dependents were deleted", deleted.load(Ordering::Relaxed));
            f64::NAN
        }
    };
    Row {
        workload: "cascade",
        size: format!("{m} dependents"),
        secs,
        rate: m as f64 / secs,
        unit: "dependents deleted/s",
        target: format!("≤ 5 s for 10,000 ({:.1} s)", secs * 10_000.0 / m as f64),
    }
}

fn controllers(workload: &str) -> &'static str {
    match workload {
        "scale" | "rollouts" => "serviceaccount-controller,deployment-controller,replicaset-controller",
        "cascade" => "serviceaccount-controller,garbage-collector-controller",
        other => panic!("unknown workload {other} (scale, rollouts, cascade)"),
    }
}

fn main() {
    let args = parse_args();
    let mut rows = Vec::new();
    for workload in &args.workloads {
        eprintln!("{workload}…");
        let server = support::TestServer::start_with(support::TestServerOptions {
            extra_args: vec!["--controllers".into(), controllers(workload).into()],
            ..Default::default()
        });
        let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], server.port()));
        let client = Client::Https(Https::new(addr, &server.tls_dir(), Http::H2));
        let row = rt.block_on(async {
            match workload.as_str() {
                "scale" => scale(&client, args.replicas).await,
                "rollouts" => rollouts(&client, args.deployments, args.concurrency).await,
                _ => cascade(&client, args.dependents, args.concurrency).await,
            }
        });
        rt.shutdown_timeout(Duration::from_secs(5));
        let line = format!(
            "| {} | {} | {:.2} | {:.0} {} | {} |",
            row.workload, row.size, row.secs, row.rate, row.unit, row.target
        );
        eprintln!("{line}");
        if row.secs.is_nan() {
            eprintln!("--- rkube stderr (tail) ---\n{}", tail(&server.logs(), 40));
        }
        rows.push(line);
        drop(server);
    }
    println!("| workload | size | seconds | rate | target |");
    println!("|---|---|---:|---:|---|");
    for row in rows {
        println!("{row}");
    }
}

fn tail(s: &str, lines: usize) -> String {
    let all: Vec<&str> = s.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
