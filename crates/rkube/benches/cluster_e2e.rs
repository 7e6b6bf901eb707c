//! Cluster benchmark (issue 9): a real one-node cluster (`rkube server` with
//! its node agent, scheduler, controllers and the managed containerd, after
//! `rkube images build-local`, as `tests/support/node.rs` starts it) from
//! start to a Deployment of 100 replicas. Prints a markdown table.
//!
//! ```sh
//! cargo bench -p rkube --bench cluster_e2e                      # 5 runs, 100 replicas
//! cargo bench -p rkube --bench cluster_e2e -- --runs 3 --replicas 20
//! cargo bench -p rkube --bench cluster_e2e -- --no-deployment  # start-up only
//! # server logs of every start, each line prefixed with ms since the spawn
//! RKUBE_BENCH_LOG=/tmp/e2e cargo bench -p rkube --bench cluster_e2e
//! ```
//!
//! Needs root and the runtime binaries (containerd, runc, CNI plugins), as
//! the node tests do. Each run has a fresh data dir (the local images built
//! into it before the clock starts) and, in order:
//! 1. **Start → Ready**: the time from spawning `rkube server` to (a) the
//!    API's first answer, (b) `/readyz` answering `ok`, (c) the Node object
//!    existing and (d) the Node's `Ready` condition `True`, all polled
//!    through the API every `--poll-ms` (20) ms with one kept-alive kube-rs
//!    client (admin kubeconfig).
//! 2. Last run only: the idle RSS of the `rkube` process and of its
//!    containerd, 10 s after the node was Ready; then a Deployment of
//!    `--replicas` (100) busybox pods (`sleep 3600`, `IfNotPresent`,
//!    `terminationGracePeriodSeconds: 1`) created through the API, a watch
//!    timing when all are `Running`; the RSS again 5 s later (and the
//!    shims'); the Deployment deleted (background propagation) until the
//!    watch saw every pod `DELETED`, and until containerd has no sandbox
//!    left.
//! 3. **Restart**: `rkube server` stopped with SIGTERM (its exit timed),
//!    then started again on the same data dir, ports and ranges; the same
//!    four times.
//! 4. Cleanup: the server stopped, `rkube killall --data-dir` (shims,
//!    mounts, bridge, cgroups, network), a managed containerd still running
//!    stopped, the data dir removed — also when the run panics.
//!
//! Start-up steps (from the server's log, by message) are summarised per
//! kind of start as the median ms since the spawn.

#[path = "../tests/support/mod.rs"]
mod support;

mod common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Node, Pod, ServiceAccount};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::json;

use common::{containerd_pid, mib, ms, rss, shims_rss, spawn_watch, wait_until, Seen};
use support::{free_cluster_cidr, free_port, TestServer, TestServerOptions};

const DEPLOYMENT: &str = "bench-e2e";
const LABEL: &str = "app=bench-e2e";
/// How long a start may take before the run is given up.
const START_TIMEOUT: Duration = Duration::from_secs(90);

struct Args {
    runs: usize,
    replicas: usize,
    deployment: bool,
    poll: Duration,
}

fn parse_args() -> Args {
    let mut args = Args { runs: 5, replicas: 100, deployment: true, poll: Duration::from_millis(20) };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--runs" => args.runs = value().parse().expect("--runs N"),
            "--replicas" => args.replicas = value().parse().expect("--replicas N"),
            "--poll-ms" => args.poll = Duration::from_millis(value().parse().expect("--poll-ms MS")),
            "--no-deployment" => args.deployment = false,
            // cargo bench passes --bench to harness-less benches.
            _ => {}
        }
    }
    args.runs = args.runs.max(1);
    args
}

/// A one-node cluster on a fresh data dir that the bench starts, stops and
/// restarts itself. Dropping it stops the server, runs `rkube killall`
/// (the fields' drop order), stops a containerd that outlived both, and
/// removes the data dir.
struct BenchNode {
    server: Option<TestServer>,
    options: TestServerOptions,
    data_dir: PathBuf,
    node: String,
    busybox: String,
    _cleanup: support::node::HostCleanup,
    _containerd: common::ContainerdGuard,
    _tmp: tempfile::TempDir,
}

/// When one start reached each point, since the spawn.
#[derive(Clone, Debug, Default)]
struct StartTimes {
    /// The API's first HTTP answer (any status).
    api: Option<Duration>,
    /// `/readyz` answered 200 `ok`.
    readyz: Option<Duration>,
    /// The Node object was first read.
    registered: Option<Duration>,
    /// The Node's Ready condition was first read `True` with a
    /// `lastHeartbeatTime` from this start (the agent posted it).
    ready: Option<Duration>,
    /// The Node's Ready condition was first read `True` at all (after a
    /// restart: the status the previous server left, until the node
    /// lifecycle controller's grace period marks it Unknown).
    ready_stale: Option<Duration>,
    /// The server's log lines up to `ready`, as (ms since the spawn, line).
    log: Vec<(f64, String)>,
    /// The 1/5/15-minute load average just before the spawn.
    load: String,
}

impl BenchNode {
    /// A fresh data dir with the local images built into it (not timed), and
    /// the flags every start of this node uses.
    fn prepare() -> BenchNode {
        support::require_root_and_runtime();
        let tmp = tempfile::Builder::new().prefix("rkube-e2e-").tempdir().expect("temporary data dir");
        let data_dir = tmp.path().to_path_buf();
        let suffix: String = data_dir.file_name().unwrap().to_string_lossy().to_lowercase()[10..]
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect();
        let node = format!("e2e-{suffix}");
        let cleanup = support::node::HostCleanup(data_dir.clone(), node.clone());
        let containerd = common::ContainerdGuard(Some(data_dir.clone()));
        let out = support::run_rkube(
            &["images", "build-local", "--data-dir", &data_dir.to_string_lossy()],
            Duration::from_secs(120),
        );
        assert!(out.status.success(), "rkube images build-local: {}", String::from_utf8_lossy(&out.stderr));
        let version = rkube_kubelet::images::busybox_version(Path::new(rkube_kubelet::images::HOST_BUSYBOX))
            .expect("the host's busybox version");
        // Fixed for every start of this node: a restart must find its ports and ranges again.
        let extra_args: Vec<String> = [
            "--node-name".to_string(),
            node.clone(),
            "--kubelet-port".into(),
            free_port().to_string(),
            "--cluster-cidr".into(),
            free_cluster_cidr(),
            "--service-cidr".into(),
            free_cluster_cidr(),
            "--cluster-dns-port".into(),
            free_port().to_string(),
        ]
        .into();
        let options = TestServerOptions {
            agent: true,
            scheduler: true,
            controllers: true,
            data_dir: Some(data_dir.clone()),
            port: Some(free_port()),
            extra_args,
            ..Default::default()
        };
        BenchNode {
            server: None,
            options,
            data_dir,
            node,
            busybox: format!("docker.io/library/busybox:{version}"),
            _cleanup: cleanup,
            _containerd: containerd,
            _tmp: tmp,
        }
    }

    fn server(&self) -> &TestServer {
        self.server.as_ref().expect("the server runs")
    }

    /// Spawns `rkube server` and polls the API until the node is Ready.
    fn start(&mut self, rt: &tokio::runtime::Runtime, poll: Duration) -> StartTimes {
        assert!(self.server.is_none(), "the server already runs");
        let load = common::load_average();
        let wall = SystemTime::now();
        let t0 = Instant::now();
        self.server = Some(TestServer::spawn(&self.options));
        let server = self.server.as_ref().unwrap();
        let mut times = rt.block_on(poll_start(server, &self.node, t0, wall, poll));
        times.load = load;
        times.log = timeline(&server.logs(), wall, times.ready.unwrap_or(START_TIMEOUT));
        if times.ready.is_none() {
            panic!(
                "node {} not Ready within {START_TIMEOUT:?} (API {:?}, readyz {:?}, Node {:?})\n--- rkube stderr ---\n{}",
                self.node,
                times.api,
                times.readyz,
                times.registered,
                server.logs()
            );
        }
        times
    }

    /// SIGTERM to the server; how long it took to exit.
    fn stop(&mut self) -> Duration {
        let mut server = self.server.take().expect("the server runs");
        let (status, took) = server.stop();
        if !status.success() {
            eprintln!("  rkube server exited with {status} after SIGTERM");
        }
        took
    }
}

/// Polls the API (one kube-rs client built as soon as the admin kubeconfig
/// exists) until the node is Ready or [`START_TIMEOUT`] passes.
async fn poll_start(server: &TestServer, node: &str, t0: Instant, wall: SystemTime, poll: Duration) -> StartTimes {
    let mut times = StartTimes::default();
    // Heartbeat times have whole seconds: any from this start is at least the spawn's second.
    let spawned = jiff::Timestamp::try_from(wall).expect("a timestamp");
    let spawned = jiff::Timestamp::from_second(spawned.as_second()).expect("a timestamp");
    let kubeconfig = server.kubeconfig();
    let mut client: Option<kube::Client> = None;
    while t0.elapsed() < START_TIMEOUT {
        let now = || Some(t0.elapsed());
        if client.is_none() && kubeconfig.exists() {
            client = common::admin_client(&kubeconfig).await.ok();
        }
        if let Some(c) = &client {
            if times.readyz.is_none() {
                let req = hyper::Request::get("/readyz").body(Vec::new()).expect("request");
                match c.request_text(req).await {
                    Ok(body) => {
                        times.api = times.api.or_else(now);
                        if body.trim() == "ok" {
                            times.readyz = now();
                        }
                    }
                    Err(kube::Error::Api(_)) => times.api = times.api.or_else(now),
                    Err(_) => {}
                }
            }
            if times.api.is_some() {
                match Api::<Node>::all(c.clone()).get_opt(node).await {
                    Ok(Some(n)) => {
                        times.registered = times.registered.or_else(now);
                        let conditions = n.status.and_then(|s| s.conditions).unwrap_or_default();
                        let ready = conditions.iter().find(|c| c.type_ == "Ready" && c.status == "True");
                        if let Some(c) = ready {
                            times.ready_stale = times.ready_stale.or_else(now);
                            if c.last_heartbeat_time.as_ref().is_some_and(|t| t.0 >= spawned) {
                                times.ready = now();
                            }
                        }
                    }
                    Ok(None) => {}
                    Err(_) => {}
                }
            }
        }
        if times.ready.is_some() && times.readyz.is_some() {
            break;
        }
        tokio::time::sleep(poll).await;
    }
    times
}

/// The log lines (tracing's RFC 3339 timestamps) written up to `until`
/// after `wall`, as (ms since `wall`, line).
fn timeline(log: &str, wall: SystemTime, until: Duration) -> Vec<(f64, String)> {
    let origin = jiff::Timestamp::try_from(wall).expect("a timestamp");
    log.lines()
        .filter_map(|line| {
            let ts: jiff::Timestamp = line.split_whitespace().next()?.parse().ok()?;
            let at = ts.duration_since(origin).as_secs_f64() * 1000.0;
            (at <= ms(until) + 1.0).then(|| (at, line.to_string()))
        })
        .collect()
}

/// Start-up steps found in the server's log: (label, messages (any of),
/// whether the last match counts rather than the first).
const STEPS: &[(&str, &[&str], bool)] = &[
    ("server process logging", &["starting rkube server"], false),
    ("PKI being ensured (after flags and host addresses)", &["cluster network settings"], false),
    ("PKI done, datastore opening", &["opening the datastore"], false),
    ("datastore open", &["datastore open"], false),
    ("admin kubeconfig written / up to date", &["admin kubeconfig"], false),
    ("containerd left running adopted", &["adopting the managed containerd"], false),
    ("managed containerd being configured", &["starting the managed containerd"], false),
    ("containerd process started", &["containerd started"], false),
    ("containerd answers CRI Version", &["container runtime is ready"], false),
    ("last image archive imported (`ctr images import`)", &["imported image archive"], true),
    ("runtime up with the pause image", &["container runtime is up with the pause image"], false),
    ("Node registered (create or adopt)", &["successfully registered node", "node was previously registered"], false),
    ("CNI config written (podCIDR seen)", &["wrote the pod network config"], false),
    ("agent posted Ready", &["node is ready"], false),
];

/// The ms since the spawn at which `message` was (first or last) logged.
fn step_at(log: &[(f64, String)], messages: &[&str], last: bool) -> Option<f64> {
    let mut hits = log.iter().filter(|(_, l)| messages.iter().any(|m| l.contains(m))).map(|(t, _)| *t);
    if last {
        hits.last()
    } else {
        hits.next()
    }
}

fn median_f(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[(v.len() - 1) / 2])
}

/// `min / median / max` of durations in ms ("–" when none).
fn spread(v: &[Option<Duration>]) -> String {
    let mut xs: Vec<f64> = v.iter().flatten().map(|d| ms(*d)).collect();
    if xs.is_empty() {
        return "–".into();
    }
    xs.sort_by(f64::total_cmp);
    let missing = v.len() - xs.len();
    let miss = if missing > 0 { format!(" ({missing} missing)") } else { String::new() };
    format!("{:.0} / {:.0} / {:.0} ms{miss}", xs[0], xs[(xs.len() - 1) / 2], xs[xs.len() - 1])
}

struct Workload {
    rss_rkube_idle: u64,
    rss_containerd_idle: u64,
    replicas: usize,
    /// Create sent → the watch saw the first pod / all pods / all bound / all Running.
    first_pod: Option<Duration>,
    all_created: Option<Duration>,
    all_bound: Option<Duration>,
    all_running: Option<Duration>,
    running: usize,
    rss_rkube_loaded: u64,
    rss_containerd_loaded: u64,
    shims: (u64, usize),
    load_at_running: String,
    /// Delete sent → every pod's DELETED seen / containerd without sandboxes.
    all_deleted: Option<Duration>,
    sandboxes_gone: Option<Duration>,
}

fn deployment(replicas: usize, image: &str) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": DEPLOYMENT},
        "spec": {"replicas": replicas,
            "selector": {"matchLabels": {"app": DEPLOYMENT}},
            "template": {
                "metadata": {"labels": {"app": DEPLOYMENT}},
                "spec": {"terminationGracePeriodSeconds": 1,
                    "containers": [{"name": "c", "image": image, "imagePullPolicy": "IfNotPresent",
                        "command": ["sleep", "3600"]}]}}}
    }))
    .expect("deployment")
}

/// The latest of the first `n` instants in `m`, since `t0` (None if fewer).
fn nth_since(m: &std::collections::HashMap<String, Instant>, n: usize, t0: Instant) -> Option<Duration> {
    (m.len() >= n).then(|| m.values().max().map(|t| t.saturating_duration_since(t0))).flatten()
}

async fn workload(node: &BenchNode, replicas: usize) -> Workload {
    let server = node.server();
    let (pid, data_dir) = (server.pid().expect("rkube pid"), node.data_dir.clone());
    let client = common::admin_client(&server.kubeconfig()).await.expect("admin kube client");
    // Pods need the namespace's default ServiceAccount (ServiceAccount admission).
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    let sas = &sas;
    let sa = wait_until_async(Duration::from_secs(60), move || async move {
        sas.get_opt("default").await.ok().flatten().is_some()
    });
    assert!(sa.await, "no default ServiceAccount within 60 s");
    // Idle: 10 s after Ready.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let cd = containerd_pid(&data_dir).expect("the managed containerd runs");
    let (rss_rkube_idle, rss_containerd_idle) = (rss(pid), rss(cd));

    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (opened, watch) = spawn_watch(pods.clone(), LABEL, seen.clone());
    opened.await.expect("the watch opened");

    eprintln!("  Deployment of {replicas} replicas");
    let t0 = Instant::now();
    deployments.create(&PostParams::default(), &deployment(replicas, &node.busybox)).await.expect("create the Deployment");
    let timeout = Duration::from_secs(120 + 2 * replicas as u64);
    if !wait_until(timeout, || seen.lock().unwrap().running.len() >= replicas).await {
        eprintln!("  only {} of {replicas} pods Running after {timeout:?}", seen.lock().unwrap().running.len());
    }
    let (first_pod, all_created, all_bound, all_running, running) = {
        let s = seen.lock().unwrap();
        let first = s.added.values().min().map(|t| t.saturating_duration_since(t0));
        (
            first,
            nth_since(&s.added, replicas, t0),
            nth_since(&s.bound, replicas, t0),
            nth_since(&s.running, replicas, t0),
            s.running.len(),
        )
    };
    let load_at_running = common::load_average();
    tokio::time::sleep(Duration::from_secs(5)).await;
    let (rss_rkube_loaded, rss_containerd_loaded) = (rss(pid), rss(cd));
    let socket = rkube_kubelet::containerd::cri_socket(&data_dir, None);
    let shims = shims_rss(&socket);

    eprintln!("  deleting the Deployment");
    let t1 = Instant::now();
    deployments.delete(DEPLOYMENT, &DeleteParams::background()).await.expect("delete the Deployment");
    let (pods_ref, seen_ref) = (&pods, &seen);
    let gone = wait_until_async(timeout, move || async move {
        let left =
            pods_ref.list(&ListParams::default().labels(LABEL)).await.map(|l| l.items.len()).unwrap_or(usize::MAX);
        let s = seen_ref.lock().unwrap();
        left == 0 && s.deleted.len() >= s.added.len()
    });
    let all_deleted = if gone.await {
        let s = seen.lock().unwrap();
        s.deleted.values().max().map(|t| t.saturating_duration_since(t1))
    } else {
        eprintln!("  pods of the Deployment still present after {timeout:?}");
        None
    };
    watch.abort();
    let cri = rkube_kubelet::cri::CriClient::connect(&socket).await.expect("CRI socket");
    let cri = &cri;
    let empty =
        wait_until_async(timeout, move || async move { cri.list_pod_sandbox(None).await.is_ok_and(|s| s.is_empty()) });
    let sandboxes_gone = empty.await.then(|| t1.elapsed());
    Workload {
        rss_rkube_idle,
        rss_containerd_idle,
        replicas,
        first_pod,
        all_created,
        all_bound,
        all_running,
        running,
        rss_rkube_loaded,
        rss_containerd_loaded,
        shims,
        load_at_running,
        all_deleted,
        sandboxes_gone,
    }
}

/// Polls the async `f` every 100 ms until it holds or `timeout` passes.
async fn wait_until_async<F, Fut>(timeout: Duration, mut f: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if f().await {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

struct Run {
    fresh: StartTimes,
    restart: StartTimes,
    stop: Duration,
    containerd_survived: bool,
}

fn save_log(tag: &str, times: &StartTimes, full: &str) {
    let Ok(path) = std::env::var("RKUBE_BENCH_LOG") else { return };
    let mut out = String::new();
    for (at, line) in &times.log {
        out.push_str(&format!("+{at:8.1} ms  {line}\n"));
    }
    let _ = std::fs::write(format!("{path}.{tag}.timeline"), out);
    let _ = std::fs::write(format!("{path}.{tag}.log"), full);
}

fn main() {
    let args = parse_args();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let mut runs = Vec::new();
    let mut work = None;
    for i in 0..args.runs {
        eprintln!("run {}/{}: fresh data dir", i + 1, args.runs);
        let mut node = BenchNode::prepare();
        let fresh = node.start(&rt, args.poll);
        eprintln!(
            "  fresh start: API {:?}, readyz {:?}, Node {:?}, Ready {:?} (load {})",
            fresh.api, fresh.readyz, fresh.registered, fresh.ready, fresh.load
        );
        save_log(&format!("run{}-fresh", i + 1), &fresh, &node.server().logs());
        // The workload last, so that the other runs' starts do not follow 100 pods' teardown.
        if i + 1 == args.runs && args.deployment {
            work = Some(rt.block_on(workload(&node, args.replicas)));
        }
        // Heartbeat times have whole seconds: let the restart's fall in a later second than this
        // start's last one, so that a Ready posted by the new agent can be told from the old.
        std::thread::sleep(Duration::from_millis(1500));
        let stop = node.stop();
        let containerd_survived = containerd_pid(&node.data_dir).is_some();
        eprintln!("  SIGTERM: exited after {stop:?}; containerd still running: {containerd_survived}");
        let restart = node.start(&rt, args.poll);
        eprintln!(
            "  restart: API {:?}, readyz {:?}, Node {:?}, Ready (stale) {:?}, Ready (posted) {:?} (load {})",
            restart.api, restart.readyz, restart.registered, restart.ready_stale, restart.ready, restart.load
        );
        save_log(&format!("run{}-restart", i + 1), &restart, &node.server().logs());
        drop(node);
        runs.push(Run { fresh, restart, stop, containerd_survived });
    }
    rt.shutdown_timeout(Duration::from_secs(5));
    report(&args, &runs, work.as_ref());
}

fn report(args: &Args, runs: &[Run], work: Option<&Workload>) {
    let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
    let n = runs.len();
    println!("Cluster benchmark (issue 9), {n} runs, {profile} build");
    println!();
    println!("| measure | min / median / max | target |");
    println!("|---|---:|---|");
    let col = |f: &dyn Fn(&Run) -> Option<Duration>| spread(&runs.iter().map(f).collect::<Vec<_>>());
    println!("| fresh start → API answers | {} | – |", col(&|r| r.fresh.api));
    println!("| fresh start → `/readyz` ok | {} | – |", col(&|r| r.fresh.readyz));
    println!("| fresh start → Node registered | {} | – |", col(&|r| r.fresh.registered));
    println!("| **fresh start → Node Ready** | {} | ≤ 2,000 ms |", col(&|r| r.fresh.ready));
    println!("| SIGTERM → `rkube server` exited | {} | – |", col(&|r| Some(r.stop)));
    println!("| restart (same data dir) → API answers | {} | – |", col(&|r| r.restart.api));
    println!("| restart → `/readyz` ok | {} | – |", col(&|r| r.restart.readyz));
    println!("| restart → Node read Ready (the status the previous server left) | {} | – |", col(&|r| r.restart.ready_stale));
    println!("| **restart → Node Ready posted by the new agent** | {} | ≤ 2,000 ms |", col(&|r| r.restart.ready));
    let survived = runs.iter().filter(|r| r.containerd_survived).count();
    println!();
    println!("containerd still running after the server's SIGTERM: {survived} of {n} runs.");
    println!(
        "Load average before each fresh start: {}.",
        runs.iter().map(|r| r.fresh.load.as_str()).collect::<Vec<_>>().join("; ")
    );
    println!();
    println!("Start-up steps from the server's log, median ms since the spawn (the bench's poll: every {} ms):", ms(args.poll));
    println!();
    println!("| step | fresh | restart |");
    println!("|---|---:|---:|");
    let fmt = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.0}"));
    for (label, message, last) in STEPS {
        let fresh = median_f(runs.iter().filter_map(|r| step_at(&r.fresh.log, message, *last)).collect());
        let restart = median_f(runs.iter().filter_map(|r| step_at(&r.restart.log, message, *last)).collect());
        if fresh.is_some() || restart.is_some() {
            println!("| {label} | {} | {} |", fmt(fresh), fmt(restart));
        }
    }
    let med = |f: &dyn Fn(&Run) -> Option<Duration>| median_f(runs.iter().filter_map(f).map(ms).collect());
    println!("| (bench) API answers | {} | {} |", fmt(med(&|r| r.fresh.api)), fmt(med(&|r| r.restart.api)));
    println!("| (bench) `/readyz` ok | {} | {} |", fmt(med(&|r| r.fresh.readyz)), fmt(med(&|r| r.restart.readyz)));
    println!(
        "| (bench) Node read | {} | {} |",
        fmt(med(&|r| r.fresh.registered)),
        fmt(med(&|r| r.restart.registered))
    );
    println!(
        "| (bench) Node Ready read (heartbeat of this start) | {} | {} |",
        fmt(med(&|r| r.fresh.ready)),
        fmt(med(&|r| r.restart.ready))
    );
    let Some(w) = work else { return };
    let d = |v: Option<Duration>| v.map_or("–".to_string(), |d| format!("{:.1} s", d.as_secs_f64()));
    let r = w.replicas;
    println!();
    println!("Run {n}, the node idle 10 s after Ready, then a Deployment of {r} replicas:");
    println!();
    println!("| measure | result | target |");
    println!("|---|---:|---|");
    println!(
        "| idle RSS: rkube (API server, controllers, scheduler, agent, DNS) + containerd = sum | {:.1} + {:.1} = **{:.1} MiB** | ≤ 150 MB (143 MiB) |",
        mib(w.rss_rkube_idle),
        mib(w.rss_containerd_idle),
        mib(w.rss_rkube_idle + w.rss_containerd_idle)
    );
    println!("| Deployment created → first pod seen | {} | – |", d(w.first_pod));
    println!("| → all {r} pods created | {} | – |", d(w.all_created));
    println!("| → all {r} pods bound | {} | – |", d(w.all_bound));
    println!("| **→ all {r} pods Running** ({} of {r}) | {} | ≤ 20 s |", w.running, d(w.all_running));
    println!(
        "| RSS with {r} pods: rkube + containerd = sum | {:.1} + {:.1} = **{:.1} MiB** | – |",
        mib(w.rss_rkube_loaded),
        mib(w.rss_containerd_loaded),
        mib(w.rss_rkube_loaded + w.rss_containerd_loaded)
    );
    println!("| containerd shims with {r} pods (total RSS) | {} shims, {:.1} MiB | – |", w.shims.1, mib(w.shims.0));
    println!("| Deployment deleted → every pod DELETED | {} | – |", d(w.all_deleted));
    println!("| Deployment deleted → containerd has no sandbox | {} | – |", d(w.sandboxes_gone));
    println!();
    println!("Load average when all were Running: {}.", w.load_at_running);
}
