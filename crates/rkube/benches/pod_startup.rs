//! Pod startup benchmark (issue 7): a real one-node cluster (`rkube server`
//! with its node agent, the managed containerd and the local busybox image,
//! as `tests/support/node.rs` starts it) against the same CRI calls made
//! directly on that containerd. Prints a markdown table.
//!
//! ```sh
//! cargo bench -p rkube --bench pod_startup                 # 100 pods at 5/s
//! cargo bench -p rkube --bench pod_startup -- --pods 20 --rate 5
//! ```
//!
//! Needs root and the runtime binaries (containerd, runc, CNI plugins), as
//! the node tests do. Steps, in this order:
//! 1. RSS of the `rkube` process (API server, controllers, scheduler and the
//!    node agent in one process) and of its containerd with no pods.
//! 2. Pod startup latency: N busybox pods (`sleep 3600`, `IfNotPresent`,
//!    `terminationGracePeriodSeconds: 1`) created at R pods/s through the
//!    API with a kube-rs client; a watch records when each pod is first seen
//!    with `status.phase: Running`; latency = that moment − the create sent.
//! 3. RSS again with the N pods Running (and the containerd shims' total).
//! 4. Deletion: every pod deleted at once; measured until the watch saw
//!    the N-th `DELETED` (the agent stopped the containers and confirmed).
//! 5. Direct CRI baseline on the same containerd, once the agent removed
//!    every sandbox of the deleted pods (and 5 s more): N times, at R/s,
//!    RunPodSandbox + CreateContainer + StartContainer (a minimal sandbox:
//!    metadata, hostname, log directory, namespace options; no
//!    `io.kubernetes.pod.uid` label, so the agent leaves them alone), timed
//!    from the first call to StartContainer's answer; then removed.
//!
//! `RKUBE_BENCH_LOG=<file>` saves the server's log there, containerd's log
//! as `<file>.containerd` and each pod's create/bound/Running wall-clock
//! times as `<file>.pods.tsv` (for a per-step profile).
//!
//! The host state (shims, mounts, the pod bridge) is removed however the run
//! ends (`support::node::HostCleanup` → `rkube killall`), and a managed
//! containerd still running after that is stopped (`common::ContainerdGuard`).

#[path = "../tests/support/mod.rs"]
mod support;

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, PostParams};
use rkube_kubelet::cri::{v1, CriClient};
use serde_json::json;

use common::{containerd_pid, mib, ms, quantile, rss, shims_rss, spawn_watch, unix_secs, wait_until, Seen};

const LABEL: &str = "bench=pod-startup";

struct Args {
    pods: usize,
    rate: f64,
}

fn parse_args() -> Args {
    let mut args = Args { pods: 100, rate: 5.0 };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--pods" => args.pods = value().parse().expect("--pods N"),
            "--rate" => args.rate = value().parse().expect("--rate pods/s"),
            // cargo bench passes --bench to harness-less benches.
            _ => {}
        }
    }
    args
}

fn pod(name: &str, image: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"bench": "pod-startup"}},
        "spec": {"terminationGracePeriodSeconds": 1,
            "containers": [{"name": "c", "image": image, "imagePullPolicy": "IfNotPresent",
                "command": ["sleep", "3600"]}]}
    }))
    .expect("pod")
}

struct RkubeRun {
    latencies: Vec<Duration>,
    /// Create sent → `spec.nodeName` seen (API + scheduler + binding).
    to_bound: Vec<Duration>,
    /// `spec.nodeName` seen → Running seen (the agent + containerd + status write).
    bound_to_running: Vec<Duration>,
    running: usize,
    delete_secs: f64,
    deleted: usize,
    rss_rkube_100: u64,
    rss_containerd_100: u64,
    shims: (u64, usize),
}

async fn rkube_pods(cluster: &support::node::NodeCluster, n: usize, rate: f64, pid: u32, cd: u32) -> RkubeRun {
    let client = common::admin_client(&cluster.server.kubeconfig()).await.expect("admin kube client");
    let pods: Api<Pod> = Api::namespaced(client, "default");
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (opened, watch) = spawn_watch(pods.clone(), LABEL, seen.clone());
    opened.await.expect("the watch opened");

    let sent = Arc::new(Mutex::new(HashMap::<String, Instant>::new()));
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
    let mut creates = Vec::new();
    for i in 0..n {
        tick.tick().await;
        let (pods, sent, name) = (pods.clone(), sent.clone(), format!("startup-{i}"));
        let body = pod(&name, &cluster.busybox);
        creates.push(tokio::spawn(async move {
            sent.lock().unwrap().insert(name.clone(), Instant::now());
            if let Err(e) = pods.create(&PostParams::default(), &body).await {
                eprintln!("  create {name}: {e}");
            }
        }));
    }
    for c in creates {
        c.await.expect("create task");
    }
    eprintln!("  {n} pods created; waiting for Running");
    let all_running = wait_until(Duration::from_secs(120 + n as u64), || seen.lock().unwrap().running.len() >= n).await;
    if !all_running {
        eprintln!("  only {} of {n} pods became Running", seen.lock().unwrap().running.len());
    }
    let (mut latencies, mut to_bound, mut bound_to_running) = (Vec::new(), Vec::new(), Vec::new());
    {
        let (s, sent) = (seen.lock().unwrap(), sent.lock().unwrap());
        for (name, t) in &s.running {
            let (Some(t0), Some(tb)) = (sent.get(name), s.bound.get(name)) else { continue };
            latencies.push(t.saturating_duration_since(*t0));
            to_bound.push(tb.saturating_duration_since(*t0));
            bound_to_running.push(t.saturating_duration_since(*tb));
        }
    }
    if let Ok(path) = std::env::var("RKUBE_BENCH_LOG") {
        let (s, sent) = (seen.lock().unwrap(), sent.lock().unwrap());
        let wall = |t: Option<&Instant>| t.map_or(String::from("-"), |t| format!("{:.6}", unix_secs(*t)));
        let mut tsv = String::from("pod\tcreate_sent\tbound_seen\trunning_seen\n");
        for i in 0..n {
            let name = format!("startup-{i}");
            let cols = [sent.get(&name), s.bound.get(&name), s.running.get(&name)].map(wall);
            tsv.push_str(&format!("{name}\t{}\n", cols.join("\t")));
        }
        std::fs::write(format!("{path}.pods.tsv"), tsv).expect("write the pod timeline");
    }
    latencies.sort();
    to_bound.sort();
    bound_to_running.sort();
    let running = latencies.len();

    // Let the status writes and the relist settle before reading memory.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let (rss_rkube_100, rss_containerd_100) = (rss(pid), rss(cd));
    let shims = shims_rss(&rkube_kubelet::containerd::cri_socket(cluster.server.data_dir(), None));

    eprintln!("  deleting");
    let start = Instant::now();
    let deletes: Vec<_> = (0..n)
        .map(|i| {
            let pods = pods.clone();
            tokio::spawn(async move {
                let name = format!("startup-{i}");
                if let Err(e) = pods.delete(&name, &DeleteParams::default()).await {
                    eprintln!("  delete {name}: {e}");
                }
            })
        })
        .collect();
    for d in deletes {
        d.await.expect("delete task");
    }
    let all_gone = wait_until(Duration::from_secs(120 + n as u64), || seen.lock().unwrap().deleted.len() >= n).await;
    let (deleted, last) = {
        let s = seen.lock().unwrap();
        (s.deleted.len(), s.deleted.values().max().copied())
    };
    if !all_gone {
        eprintln!("  only {deleted} of {n} pods were deleted");
    }
    let delete_secs = match (all_gone, last) {
        (true, Some(t)) => t.duration_since(start).as_secs_f64(),
        _ => f64::NAN,
    };
    watch.abort();
    RkubeRun {
        latencies,
        to_bound,
        bound_to_running,
        running,
        delete_secs,
        deleted,
        rss_rkube_100,
        rss_containerd_100,
        shims,
    }
}

/// A minimal sandbox config for direct pod `i` (no `io.kubernetes.pod.uid`
/// label: the agent's relist ignores it).
fn direct_sandbox(i: usize, log_dir: &Path) -> v1::PodSandboxConfig {
    let name = format!("direct-{i}");
    v1::PodSandboxConfig {
        metadata: Some(v1::PodSandboxMetadata {
            name: name.clone(),
            uid: format!("bench-direct-{}-{i}", std::process::id()),
            namespace: "bench-direct".into(),
            attempt: 0,
        }),
        hostname: name,
        log_directory: log_dir.to_string_lossy().into_owned(),
        labels: HashMap::from([("bench".to_string(), "direct".to_string())]),
        linux: Some(v1::LinuxPodSandboxConfig {
            security_context: Some(v1::LinuxSandboxSecurityContext {
                namespace_options: Some(namespace_options()),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Pod network and IPC, own PID namespace: what the kubelet asks for a plain pod.
fn namespace_options() -> v1::NamespaceOption {
    v1::NamespaceOption {
        network: v1::NamespaceMode::Pod as i32,
        pid: v1::NamespaceMode::Container as i32,
        ipc: v1::NamespaceMode::Pod as i32,
        ..Default::default()
    }
}

fn direct_container(image: &str) -> v1::ContainerConfig {
    v1::ContainerConfig {
        metadata: Some(v1::ContainerMetadata { name: "c".into(), attempt: 0 }),
        image: Some(v1::ImageSpec { image: image.into(), ..Default::default() }),
        command: vec!["sleep".into(), "3600".into()],
        log_path: "c/0.log".into(),
        linux: Some(v1::LinuxContainerConfig {
            security_context: Some(v1::LinuxContainerSecurityContext {
                namespace_options: Some(namespace_options()),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// N direct RunPodSandbox + CreateContainer + StartContainer at `rate`/s;
/// the sorted durations of those that succeeded. Removes the sandboxes.
async fn direct_cri(data_dir: &Path, image: &str, n: usize, rate: f64) -> Vec<Duration> {
    let cri = CriClient::connect(rkube_kubelet::containerd::cri_socket(data_dir, None)).await.expect("CRI socket");
    // The agent removes the deleted pods' sandboxes after the API forgot them: start on an idle
    // containerd (as the rkube pods did), not one still tearing down 100 sandboxes.
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let left = cri.list_pod_sandbox(None).await.map(|s| s.len()).unwrap_or(usize::MAX);
        if left == 0 || Instant::now() > deadline {
            if left != 0 {
                eprintln!("  {left} sandboxes still present; measuring anyway");
            }
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    let logs: PathBuf = data_dir.join("bench-direct-logs");
    let ids = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
    let mut tasks = Vec::new();
    for i in 0..n {
        tick.tick().await;
        let (cri, ids, image) = (cri.clone(), ids.clone(), image.to_string());
        let log_dir = logs.join(format!("direct-{i}"));
        std::fs::create_dir_all(log_dir.join("c")).expect("log dir");
        tasks.push(tokio::spawn(async move {
            let sandbox = direct_sandbox(i, &log_dir);
            let t0 = Instant::now();
            let id = cri.run_pod_sandbox(sandbox.clone(), "").await.map_err(|e| format!("RunPodSandbox: {e}"))?;
            ids.lock().unwrap().push(id.clone());
            let c = cri
                .create_container(&id, direct_container(&image), sandbox)
                .await
                .map_err(|e| format!("CreateContainer: {e}"))?;
            cri.start_container(&c).await.map_err(|e| format!("StartContainer: {e}"))?;
            Ok::<Duration, String>(t0.elapsed())
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        match t.await.expect("direct task") {
            Ok(d) => out.push(d),
            Err(e) => eprintln!("  direct: {e}"),
        }
    }
    out.sort();
    let ids = std::mem::take(&mut *ids.lock().unwrap());
    eprintln!("  removing {} direct sandboxes", ids.len());
    let removals: Vec<_> = ids
        .into_iter()
        .map(|id| {
            let cri = cri.clone();
            tokio::spawn(async move {
                if let Err(e) = cri.stop_pod_sandbox(&id).await {
                    eprintln!("  StopPodSandbox {id}: {e}");
                }
                if let Err(e) = cri.remove_pod_sandbox(&id).await {
                    eprintln!("  RemovePodSandbox {id}: {e}");
                }
            })
        })
        .collect();
    for r in removals {
        let _ = r.await;
    }
    let _ = std::fs::remove_dir_all(&logs);
    out
}

fn main() {
    let args = parse_args();
    let n = args.pods;
    eprintln!("starting rkube server with its node agent…");
    // Drops after the cluster: stops a containerd that outlived the server and `rkube killall`.
    let mut containerd_guard = common::ContainerdGuard::default();
    let cluster = support::node::NodeCluster::start(&[]);
    let pid = cluster.server.pid().expect("rkube pid");
    let data_dir = cluster.server.data_dir().to_path_buf();
    containerd_guard.0 = Some(data_dir.clone());
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    // Let start-up work (image import, first status and lease writes) finish.
    std::thread::sleep(Duration::from_secs(10));
    let cd = containerd_pid(&data_dir).expect("the managed containerd runs");
    let (rss_rkube_0, rss_containerd_0) = (rss(pid), rss(cd));

    eprintln!("rkube: {n} pods at {}/s…", args.rate);
    let run = rt.block_on(rkube_pods(&cluster, n, args.rate, pid, cd));
    eprintln!("direct CRI: {n} pods at {}/s…", args.rate);
    let direct = rt.block_on(direct_cri(&data_dir, &cluster.busybox, n, args.rate));
    rt.shutdown_timeout(Duration::from_secs(5));

    let (r50, r99) = (quantile(&run.latencies, 0.5), quantile(&run.latencies, 0.99));
    let (d50, d99) = (quantile(&direct, 0.5), quantile(&direct, 0.99));
    let ratio = |a: Duration, b: Duration| ms(a) / ms(b);
    let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
    println!("Pod startup, {n} pods at {}/s, {profile} build", args.rate);
    println!();
    println!("| measure | result | target |");
    println!("|---|---:|---|");
    println!(
        "| rkube create → Running (watch), p50 / p99 ({} of {n} Running) | {:.0} ms / {:.0} ms | p99 ≤ 1,000 ms |",
        run.running,
        ms(r50),
        ms(r99)
    );
    println!(
        "| of which create → bound (`spec.nodeName` seen), p50 / p99 | {:.0} ms / {:.0} ms | – |",
        ms(quantile(&run.to_bound, 0.5)),
        ms(quantile(&run.to_bound, 0.99))
    );
    println!(
        "| of which bound → Running (agent, containerd, status write), p50 / p99 | {:.0} ms / {:.0} ms | – |",
        ms(quantile(&run.bound_to_running, 0.5)),
        ms(quantile(&run.bound_to_running, 0.99))
    );
    println!(
        "| direct CRI RunPodSandbox+CreateContainer+StartContainer, p50 / p99 ({} of {n}) | {:.0} ms / {:.0} ms | – |",
        direct.len(),
        ms(d50),
        ms(d99)
    );
    println!("| ratio rkube / direct, p50 / p99 | {:.2}× / {:.2}× | p99 ≤ 1.5× |", ratio(r50, d50), ratio(r99, d99));
    println!(
        "| rkube process RSS (API server + controllers + scheduler + agent), 0 → {n} pods | {:.1} MiB → {:.1} MiB (Δ {:+.1} MiB) | agent ≤ 40 MB at 100 pods |",
        mib(rss_rkube_0),
        mib(run.rss_rkube_100),
        mib(run.rss_rkube_100) - mib(rss_rkube_0)
    );
    println!(
        "| containerd RSS, 0 → {n} pods | {:.1} MiB → {:.1} MiB | – |",
        mib(rss_containerd_0),
        mib(run.rss_containerd_100)
    );
    println!("| containerd shims at {n} pods (total RSS) | {} shims, {:.1} MiB | – |", run.shims.1, mib(run.shims.0));
    println!(
        "| deletion: {n} pods deleted at once → last DELETED seen ({} of {n}) | {:.1} s = {:.1} pods/s | – |",
        run.deleted,
        run.delete_secs,
        n as f64 / run.delete_secs
    );
    println!();
    println!("The rkube RSS includes the whole control plane: rkube runs the node agent in-process with the API");
    println!(
        "server (upstream's node tests allow 100 MB for the kubelet alone; the issue's target is 40 MB for the agent)."
    );
    // For profiling: the server's log (timestamps of each pod's steps).
    if let Ok(path) = std::env::var("RKUBE_BENCH_LOG") {
        std::fs::write(&path, cluster.server.logs()).expect("write RKUBE_BENCH_LOG");
        let containerd_log = rkube_kubelet::containerd::RuntimePaths::new(&data_dir).log;
        let _ = std::fs::copy(containerd_log, format!("{path}.containerd"));
    }
    if run.running < n || run.delete_secs.is_nan() {
        eprintln!("--- rkube stderr (tail) ---\n{}", tail(&cluster.server.logs(), 60));
    }
    drop(cluster);
    drop(containerd_guard);
}

fn tail(s: &str, lines: usize) -> String {
    let all: Vec<&str> = s.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
