//! Pod startup benchmark (issue 7): a real one-node cluster against the same
//! CRI calls made directly on its containerd. Prints a markdown table.
//!
//! ```sh
//! cargo bench -p rkube --bench pod_startup                 # 100 pods at 5/s
//! cargo bench -p rkube --bench pod_startup -- --pods 20 --rate 5
//! cargo bench -p rkube --bench pod_startup -- --in-process  # agent inside rkube server
//! ```
//!
//! The cluster, by default: `rkube server --disable-agent` (API server,
//! controllers, scheduler) plus a separate `rkube agent --server URL
//! --token TOKEN` on this host, joined with a token from `rkube token
//! create`, as `tests/agent_join.rs` joins one (the managed containerd, the
//! local busybox image from `rkube images build-local`; its own pod and
//! Service ranges and kubelet port, no kube-proxy or NetworkPolicy hooks,
//! eviction and image GC thresholds that cannot trip), so that the agent's
//! memory is its own process's. `--in-process` runs the previous setup
//! instead: `rkube server` with its in-process agent, as
//! `tests/support/node.rs` starts it.
//!
//! Needs root and the runtime binaries (containerd, runc, CNI plugins), as
//! the node tests do. Steps, in this order:
//! 1. RSS of the `rkube agent` and `rkube server` processes (or of the one
//!    `rkube server` with `--in-process`) and of containerd with no pods.
//! 2. Pod startup latency: N busybox pods (`sleep 3600`, `IfNotPresent`,
//!    `terminationGracePeriodSeconds: 1`) created at R pods/s through the
//!    API with a kube-rs client; a watch records when each pod is first seen
//!    with `status.phase: Running`; latency = that moment − the create sent.
//! 3. RSS again with the N pods Running (and the containerd shims' total).
//! 4. Deletion: every pod deleted at once; measured until the watch saw
//!    the N-th `DELETED` (the agent stopped the containers and confirmed).
//! 5. Direct CRI baselines on the same containerd, each once containerd has
//!    no sandbox left (and 5 s more): N times, at R/s, RunPodSandbox +
//!    CreateContainer + StartContainer, timed from the first call to
//!    StartContainer's answer (and each call on its own); then removed.
//!    a. minimal configs: metadata, hostname, log directory, namespace
//!       options; busybox `sleep 3600`.
//!    b. the agent's configs: built by the kubelet's own builders
//!       (`pods::sandbox::config`, `pods::container::config` with the env,
//!       volume mounts, `/etc/hosts` and resources the pod worker passes)
//!       from the API's copy of a bench pod, renamed, with a fresh UID.
//!       Differences to the agent's: no `io.kubernetes.pod.uid` label on
//!       the sandbox and container (the agent's relist and eviction find
//!       pods by that label, and would remove sandboxes of a UID the API
//!       does not have), and the service-account token file is absent from
//!       the projected volume (a TokenRequest needs the pod in the API);
//!       the volume is the same tmpfs with `ca.crt` and `namespace`, mounted
//!       the same way. Volumes and env are prepared before the timed calls;
//!       between RunPodSandbox and CreateContainer it reads the sandbox's IP
//!       and writes `/etc/hosts`, as the agent does.
//!
//! `RKUBE_BENCH_LOG=<file>` saves the server's log there (with a separate
//! agent, its log as `<file>.agent`), containerd's log as
//! `<file>.containerd` and each pod's create/bound/Running wall-clock
//! times as `<file>.pods.tsv` (for a per-step profile).
//!
//! The host state (shims, mounts, the pod bridge, cgroups) is removed
//! however the run ends (`rkube killall` on drop), and a managed containerd
//! still running after that is stopped (`common::ContainerdGuard`).

#[path = "../tests/support/mod.rs"]
mod support;

mod common;

use std::collections::HashMap;
use std::fs::File;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, DeleteParams, PostParams};
use rkube_kubelet::cri::{v1, CriClient};
use rkube_kubelet::pods;
use serde_json::json;

use common::{containerd_pid, mib, ms, quantile, rss, shims_rss, spawn_watch, unix_secs, wait_until, Seen};
use support::TestServer;

const LABEL: &str = "bench=pod-startup";

struct Args {
    pods: usize,
    rate: f64,
    /// Run the agent inside `rkube server` (the setup before the separate agent).
    in_process: bool,
}

fn parse_args() -> Args {
    let mut args = Args { pods: 100, rate: 5.0, in_process: false };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--pods" => args.pods = value().parse().expect("--pods N"),
            "--rate" => args.rate = value().parse().expect("--rate pods/s"),
            "--in-process" => args.in_process = true,
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

/// A `rkube agent` child process; on drop it is SIGKILLed with its process
/// group and `rkube killall` stops its containerd (in a session of its own)
/// and removes its host state, then the node's cgroup tree goes.
struct AgentProcess {
    child: Option<Child>,
    data_dir: PathBuf,
    node: String,
    log: PathBuf,
}

impl AgentProcess {
    fn start(args: &[String], data_dir: &Path, node: &str, log: &Path) -> AgentProcess {
        use std::os::unix::process::CommandExt;
        let mut cmd = Command::new(support::RKUBE);
        cmd.arg("agent").args(args).arg("--data-dir").arg(data_dir);
        let stderr = File::options().create(true).append(true).open(log).expect("agent log file");
        cmd.stdout(Stdio::null()).stderr(stderr).stdin(Stdio::null()).process_group(0);
        let child = support::etcd::spawn_tied_to_this_process(cmd).expect("spawn rkube agent");
        AgentProcess { child: Some(child), data_dir: data_dir.into(), node: node.into(), log: log.into() }
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Panics with its log when the agent has exited.
    fn check_alive(&mut self) {
        if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
            panic!("rkube agent exited with {status}\n{}", tail(&self.logs(), 60));
        }
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: kill(2) on the process group our child leads.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
        }
        support::node::teardown_host(&self.data_dir);
        rkube_kubelet::host::remove_cgroup_tree(&format!("rkube-{}", self.node));
    }
}

/// The cluster under test. Field order is drop order: the agent (killed,
/// then its host state removed), the servers, the temporary directories.
struct Bench {
    agent: Option<AgentProcess>,
    server: Option<TestServer>,
    in_process: Option<support::node::NodeCluster>,
    _tmp: Option<tempfile::TempDir>,
    node: String,
    busybox: String,
    /// The data dir of the node (its containerd, pod dirs).
    node_data_dir: PathBuf,
}

impl Bench {
    fn server(&self) -> &TestServer {
        self.server.as_ref().or(self.in_process.as_ref().map(|c| &c.server)).expect("a server")
    }

    /// `rkube server` with its in-process agent (`tests/support/node.rs`).
    fn in_process() -> Bench {
        let cluster = support::node::NodeCluster::start(&[]);
        Bench {
            node: cluster.node.clone(),
            busybox: cluster.busybox.clone(),
            node_data_dir: cluster.server.data_dir().to_path_buf(),
            agent: None,
            server: None,
            in_process: Some(cluster),
            _tmp: None,
        }
    }

    /// `rkube server --disable-agent` and a joined `rkube agent`, as
    /// `tests/agent_join.rs` (plus the node tests' eviction and image GC
    /// thresholds); waits (up to 120 s) for the node to be Ready.
    fn joined() -> Bench {
        support::require_root_and_runtime();
        let tmp = tempfile::Builder::new().prefix("rkube-bench-").tempdir().expect("temporary dir");
        let (server_dir, node_data_dir) = (tmp.path().join("server"), tmp.path().join("agent"));
        let node = format!("bench-{}", std::process::id());
        // Pod and Service ranges of their own on this host; the cluster DNS address as the server's default.
        let (cluster_cidr, service_cidr) = (support::free_cluster_cidr(), support::free_cluster_cidr());
        let cluster_dns = service_cidr.replace(".0.0/16", ".0.10");
        let server = TestServer::start_with(support::TestServerOptions {
            controllers: true,
            scheduler: true,
            data_dir: Some(server_dir),
            extra_args: ["--cluster-cidr", &cluster_cidr, "--service-cidr", &service_cidr]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            ..Default::default()
        });
        let kubeconfig = server.kubeconfig();
        let out = support::run_rkube(
            &["token", "create", "--kubeconfig", &kubeconfig.to_string_lossy(), "--description", "pod_startup bench"],
            Duration::from_secs(30),
        );
        assert!(out.status.success(), "rkube token create: {}", String::from_utf8_lossy(&out.stderr));
        let token = String::from_utf8(out.stdout).expect("token").trim().to_string();
        // Nothing runs yet: build-local leaves the archives the agent imports at start.
        let out = support::run_rkube(
            &["images", "build-local", "--data-dir", &node_data_dir.to_string_lossy()],
            Duration::from_secs(120),
        );
        assert!(out.status.success(), "rkube images build-local: {}", String::from_utf8_lossy(&out.stderr));
        let version = rkube_kubelet::images::busybox_version(Path::new(rkube_kubelet::images::HOST_BUSYBOX))
            .expect("host busybox version");
        let args: Vec<String> = [
            "--server",
            &format!("https://127.0.0.1:{}", server.port()),
            "--token",
            &token,
            "--node-name",
            &node,
            "--node-ip",
            "127.0.0.1",
            "--kubelet-port",
            &support::free_port().to_string(),
            "--cluster-cidr",
            &cluster_cidr,
            "--service-cidr",
            &service_cidr,
            "--cluster-dns",
            &cluster_dns,
            // It shares this machine's network namespace: no kube-proxy or NetworkPolicy hooks.
            "--disable-kube-proxy",
            "--disable-network-policy",
            "--kube-proxy-metrics-bind-address",
            "127.0.0.1:0",
            // Thresholds the machine's disk and memory cannot trip (as the node tests).
            "--eviction-hard",
            "memory.available<1Mi,nodefs.available<1%,imagefs.available<1%",
            "--image-gc-high-threshold",
            "100",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let log = tmp.path().join("agent.log");
        let mut agent = AgentProcess::start(&args, &node_data_dir, &node, &log);
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            agent.check_alive();
            let out = server.kubectl(&["get", "node", &node, "-o", "json"]);
            let ready = out.status.success()
                && serde_json::from_slice::<serde_json::Value>(&out.stdout).ok().is_some_and(|n| {
                    n["status"]["conditions"]
                        .as_array()
                        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
                });
            if ready {
                break;
            }
            assert!(Instant::now() < deadline, "node {node} not Ready within 120 s\n{}", tail(&agent.logs(), 60));
            std::thread::sleep(Duration::from_millis(250));
        }
        Bench {
            agent: Some(agent),
            server: Some(server),
            in_process: None,
            _tmp: Some(tmp),
            node,
            busybox: format!("docker.io/library/busybox:{version}"),
            node_data_dir,
        }
    }

    /// RSS of (server, agent if separate, containerd) now.
    fn rss(&self, containerd: u32) -> (u64, Option<u64>, u64) {
        let server = rss(self.server().pid().expect("rkube server pid"));
        (server, self.agent.as_ref().map(|a| rss(a.pid())), rss(containerd))
    }

    fn cri_socket(&self) -> PathBuf {
        rkube_kubelet::containerd::cri_socket(&self.node_data_dir, None)
    }
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
    /// RSS (server, agent, containerd) with the pods Running.
    rss_n: (u64, Option<u64>, u64),
    shims: (u64, usize),
    /// The API's copy of a Running bench pod (the template of the agent-config baseline).
    template: Option<Pod>,
}

async fn rkube_pods(bench: &Bench, n: usize, rate: f64, cd: u32) -> RkubeRun {
    let client = common::admin_client(&bench.server().kubeconfig()).await.expect("admin kube client");
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
        let body = pod(&name, &bench.busybox);
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
    let rss_n = bench.rss(cd);
    let shims = shims_rss(&bench.cri_socket());
    let first = seen.lock().unwrap().running.keys().next().cloned();
    let template = match first {
        Some(name) => pods.get(&name).await.map_err(|e| eprintln!("  get {name}: {e}")).ok(),
        None => None,
    };

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
    RkubeRun { latencies, to_bound, bound_to_running, running, delete_secs, deleted, rss_n, shims, template }
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

/// The agent's config builders with a node context like the agent's
/// (`rkube_kubelet::agent` builds it the same way), for direct pods made
/// from the API's copy of a bench pod.
struct AgentConfigs {
    ctx: pods::context::NodeContext,
    template: Pod,
    /// Keeps the prober's channel open.
    _changed: tokio::sync::mpsc::UnboundedReceiver<String>,
}

/// One direct pod of the agent-config baseline, prepared before the timed calls.
struct AgentPod {
    pod: Pod,
    sandbox: v1::PodSandboxConfig,
    vols: pods::volumes::PodVolumes,
    env: Vec<(String, String)>,
}

impl AgentConfigs {
    async fn new(bench: &Bench, cri: CriClient, template: Pod) -> Result<AgentConfigs, String> {
        let client = common::admin_client(&bench.server().kubeconfig()).await?;
        // The cluster DNS address the agent uses: the server's default, .10 of the Service range.
        let kubernetes = Api::<Service>::namespaced(client.clone(), "default")
            .get("kubernetes")
            .await
            .map_err(|e| format!("get service kubernetes: {e}"))?;
        let ip = kubernetes.spec.and_then(|s| s.cluster_ip).ok_or("service kubernetes has no clusterIP")?;
        let cluster_dns: IpAddr = match ip.rsplit_once('.') {
            Some((net, _)) => format!("{net}.10").parse().map_err(|e| format!("{e}"))?,
            None => return Err(format!("unexpected clusterIP {ip}")),
        };
        let machine = rkube_kubelet::agent::machine::MachineInfo::detect(&bench.node_data_dir);
        let recorder = rkube_client::events::Recorder::new(client.clone(), "kubelet", &bench.node);
        let (changed_tx, changed) = tokio::sync::mpsc::unbounded_channel();
        let ctx = pods::context::NodeContext {
            client: client.clone(),
            cri: cri.clone(),
            node_name: bench.node.clone(),
            host_ips: vec![IpAddr::from([127, 0, 0, 1])],
            data_dir: bench.node_data_dir.clone(),
            dns: pods::dns::DnsSettings {
                cluster_dns: vec![cluster_dns],
                cluster_domain: "cluster.local".into(),
                host_resolv_conf: PathBuf::from("/etc/resolv.conf"),
            },
            cgroup_driver: rkube_kubelet::host::detect_cgroup_driver(),
            node_memory_bytes: machine.memory_bytes as i64,
            node_milli_cpu: (machine.cpus * 1000) as i64,
            volumes: Arc::new(pods::volumes::VolumeManager::new(&bench.node_data_dir, client, &bench.node)),
            prober: pods::prober::ProbeManager::new(cri, recorder.clone(), changed_tx),
            recorder,
            admission: Default::default(),
            grace_overrides: Default::default(),
        };
        Ok(AgentConfigs { ctx, template, _changed: changed })
    }

    /// Direct pod `i`: the template renamed, a fresh UID, label `bench=direct`,
    /// the service-account token source dropped from projected volumes.
    fn pod(&self, i: usize) -> Pod {
        let mut pod = self.template.clone();
        pod.metadata.name = Some(format!("direct-{i}"));
        pod.metadata.uid = Some(format!("bench-direct-{}-{i}", std::process::id()));
        pod.metadata.labels = Some([("bench".to_string(), "direct".to_string())].into());
        pod.metadata.managed_fields = None;
        for v in pod.spec.iter_mut().flat_map(|s| s.volumes.iter_mut().flatten()) {
            if let Some(p) = v.projected.as_mut() {
                if let Some(sources) = p.sources.as_mut() {
                    sources.retain(|s| s.service_account_token.is_none());
                }
            }
        }
        pod
    }

    /// Volumes, sandbox config, log directory and env of direct pod `i`.
    async fn prepare(&self, i: usize) -> Result<AgentPod, String> {
        let pod = self.pod(i);
        let vols = self.ctx.volumes.setup(&pod).await.map_err(|e| e.to_string())?;
        let mut sandbox = pods::sandbox::config(&pod, 0, &self.ctx)?;
        sandbox.labels.remove(pods::labels::POD_UID);
        std::fs::create_dir_all(&sandbox.log_directory).map_err(|e| format!("{}: {e}", sandbox.log_directory))?;
        let c = &pod.spec.as_ref().ok_or("template has no spec")?.containers[0];
        let env_ctx = pods::env::load_env_context(&self.ctx.client, &pod, &self.ctx.node_name, &self.ctx.host_ips, &[])
            .await
            .map_err(|e| e.to_string())?;
        let env = pods::env::container_env(&pod, c, &env_ctx).map_err(|e| e.to_string())?;
        Ok(AgentPod { pod, sandbox, vols, env })
    }

    /// The container config as the pod worker builds it once the sandbox
    /// `sandbox_id` runs: mounts (volumes, termination log), `/etc/hosts`
    /// with the sandbox's IP, resources.
    async fn container(&self, p: &AgentPod, sandbox_id: &str) -> Result<v1::ContainerConfig, String> {
        let status = self.ctx.cri.pod_sandbox_status(sandbox_id, false).await.map_err(|e| e.to_string())?;
        let ips: Vec<String> = status.status.and_then(|s| s.network).map(|n| vec![n.ip]).unwrap_or_default();
        let c = &p.pod.spec.as_ref().ok_or("no spec")?.containers[0];
        let mut mounts = self.ctx.volumes.container_mounts(&p.pod, c, &p.vols, &p.env).map_err(|e| e.to_string())?;
        let (host, domain) =
            pods::dns::pod_hostname_and_domain(&p.pod, &self.ctx.dns.cluster_domain).map_err(|e| e.to_string())?;
        let text = pods::etc_hosts::content(&p.pod, &ips, &host, Some(domain.as_str()).filter(|d| !d.is_empty()));
        let uid = p.pod.metadata.uid.clone().unwrap_or_default();
        let hosts = pods::etc_hosts::write(&self.ctx.volumes.pod_dir(&uid), &text).map_err(|e| e.to_string())?;
        mounts.extend(pods::etc_hosts::mount(c, &hosts));
        let resources = pods::resources::linux_container_resources(&p.pod, c, self.ctx.node_memory_bytes);
        let instance = pods::container::Instance { attempt: 0, env: &p.env, mounts, resources };
        let mut config = pods::container::config(&p.pod, c, instance);
        config.labels.remove(pods::labels::POD_UID);
        Ok(config)
    }

    /// Unmounts and removes the pod's dir, log directory and cgroup.
    async fn cleanup(&self, p: &AgentPod) {
        let uid = p.pod.metadata.uid.clone().unwrap_or_default();
        if let Err(e) = self.ctx.volumes.teardown(&uid).await {
            eprintln!("  {e}");
        }
        let _ = std::fs::remove_dir_all(&p.sandbox.log_directory);
        pods::resources::remove_pod_cgroup(&self.ctx.node_name, &uid, pods::resources::qos_class(&p.pod));
    }
}

/// Which configs a direct baseline sends.
enum Configs {
    Minimal,
    Agent(Arc<AgentConfigs>),
}

/// Sorted durations of the direct pods that started.
#[derive(Default)]
struct Direct {
    /// First call → StartContainer answered.
    total: Vec<Duration>,
    run_sandbox: Vec<Duration>,
    create: Vec<Duration>,
    start: Vec<Duration>,
}

/// N direct RunPodSandbox + CreateContainer + StartContainer at `rate`/s
/// on the CRI socket; removes the sandboxes (and with the agent's configs,
/// the pods' volumes, logs and cgroups) afterwards.
async fn direct_cri(socket: &Path, data_dir: &Path, image: &str, n: usize, rate: f64, configs: Configs) -> Direct {
    let cri = CriClient::connect(socket).await.expect("CRI socket");
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
    let logs: PathBuf = data_dir.join("bench-direct-logs");
    // The agent-config pods: volumes and env before the timed calls.
    let mut prepared: Vec<Option<Arc<AgentPod>>> = (0..n).map(|_| None).collect();
    if let Configs::Agent(a) = &configs {
        for (i, slot) in prepared.iter_mut().enumerate() {
            match a.prepare(i).await {
                Ok(p) => *slot = Some(Arc::new(p)),
                Err(e) => eprintln!("  direct-{i}: preparing the agent's configs: {e}"),
            }
        }
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    let ids = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
    let mut tasks = Vec::new();
    for (i, prep) in prepared.iter().enumerate() {
        tick.tick().await;
        let (cri, ids, image, prep) = (cri.clone(), ids.clone(), image.to_string(), prep.clone());
        let agent = match &configs {
            Configs::Agent(a) => Some(a.clone()),
            Configs::Minimal => None,
        };
        let sandbox = match (&agent, &prep) {
            (None, _) => {
                let log_dir = logs.join(format!("direct-{i}"));
                std::fs::create_dir_all(log_dir.join("c")).expect("log dir");
                direct_sandbox(i, &log_dir)
            }
            (Some(_), Some(p)) => p.sandbox.clone(),
            (Some(_), None) => continue,
        };
        tasks.push(tokio::spawn(async move {
            let t0 = Instant::now();
            let id = cri.run_pod_sandbox(sandbox.clone(), "").await.map_err(|e| format!("RunPodSandbox: {e}"))?;
            let run = t0.elapsed();
            ids.lock().unwrap().push(id.clone());
            let config = match (&agent, &prep) {
                (Some(a), Some(p)) => a.container(p, &id).await.map_err(|e| format!("container config: {e}"))?,
                _ => direct_container(&image),
            };
            let t1 = Instant::now();
            let c = cri.create_container(&id, config, sandbox).await.map_err(|e| format!("CreateContainer: {e}"))?;
            let create = t1.elapsed();
            let t2 = Instant::now();
            cri.start_container(&c).await.map_err(|e| format!("StartContainer: {e}"))?;
            Ok::<_, String>((t0.elapsed(), run, create, t2.elapsed()))
        }));
    }
    let mut out = Direct::default();
    for t in tasks {
        match t.await.expect("direct task") {
            Ok((total, run, create, start)) => {
                out.total.push(total);
                out.run_sandbox.push(run);
                out.create.push(create);
                out.start.push(start);
            }
            Err(e) => eprintln!("  direct: {e}"),
        }
    }
    for v in [&mut out.total, &mut out.run_sandbox, &mut out.create, &mut out.start] {
        v.sort();
    }
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
    if let Configs::Agent(a) = &configs {
        for p in prepared.iter().flatten() {
            a.cleanup(p).await;
        }
    }
    out
}

fn main() {
    let args = parse_args();
    let n = args.pods;
    // Drops after the cluster: stops a containerd that outlived the agent and `rkube killall`.
    let mut containerd_guard = common::ContainerdGuard::default();
    let bench = if args.in_process {
        eprintln!("starting rkube server with its in-process node agent…");
        Bench::in_process()
    } else {
        eprintln!("starting rkube server --disable-agent and a joined rkube agent…");
        Bench::joined()
    };
    containerd_guard.0 = Some(bench.node_data_dir.clone());
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    // Let start-up work (image import, first status and lease writes) finish.
    std::thread::sleep(Duration::from_secs(10));
    let cd = containerd_pid(&bench.node_data_dir).expect("the managed containerd runs");
    let rss_0 = bench.rss(cd);

    eprintln!("rkube: {n} pods at {}/s…", args.rate);
    let run = rt.block_on(rkube_pods(&bench, n, args.rate, cd));
    let socket = bench.cri_socket();
    eprintln!("direct CRI, minimal configs: {n} pods at {}/s…", args.rate);
    let minimal =
        rt.block_on(direct_cri(&socket, &bench.node_data_dir, &bench.busybox, n, args.rate, Configs::Minimal));
    let agent_configs = rt.block_on(async {
        let template = run.template.clone().ok_or("no Running bench pod to copy")?;
        let cri = CriClient::connect(&socket).await.map_err(|e| format!("CRI socket: {e}"))?;
        AgentConfigs::new(&bench, cri, template).await
    });
    let with_agent_configs = match agent_configs {
        Ok(a) => {
            eprintln!("direct CRI, the agent's configs: {n} pods at {}/s…", args.rate);
            let configs = Configs::Agent(Arc::new(a));
            Some(rt.block_on(direct_cri(&socket, &bench.node_data_dir, &bench.busybox, n, args.rate, configs)))
        }
        Err(e) => {
            eprintln!("  no direct baseline with the agent's configs: {e}");
            None
        }
    };
    rt.shutdown_timeout(Duration::from_secs(5));

    let (r50, r99) = (quantile(&run.latencies, 0.5), quantile(&run.latencies, 0.99));
    let ratio = |a: Duration, b: Duration| ms(a) / ms(b);
    let p = |v: &[Duration]| (ms(quantile(v, 0.5)), ms(quantile(v, 0.99)));
    let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
    let mode = if args.in_process { "agent in rkube server" } else { "separate rkube agent" };
    println!("Pod startup, {n} pods at {}/s, {mode}, {profile} build", args.rate);
    println!();
    println!("| measure | result | target |");
    println!("|---|---:|---|");
    println!(
        "| rkube create → Running (watch), p50 / p99 ({} of {n} Running) | {:.0} ms / {:.0} ms | p99 ≤ 1,000 ms |",
        run.running,
        ms(r50),
        ms(r99)
    );
    let (a, b) = p(&run.to_bound);
    println!("| of which create → bound (`spec.nodeName` seen), p50 / p99 | {a:.0} ms / {b:.0} ms | – |");
    let (a, b) = p(&run.bound_to_running);
    println!("| of which bound → Running (agent, containerd, status write), p50 / p99 | {a:.0} ms / {b:.0} ms | – |");
    let baselines = [("minimal configs", Some(&minimal)), ("the agent's configs", with_agent_configs.as_ref())];
    for (what, d) in baselines {
        let Some(d) = d else {
            println!("| direct CRI, {what} | not measured (see the log) | – |");
            continue;
        };
        let (a, b) = p(&d.total);
        println!(
            "| direct CRI, {what}: RunPodSandbox → StartContainer answered, p50 / p99 ({} of {n}) | {a:.0} ms / {b:.0} ms | – |",
            d.total.len()
        );
        let ((r5, r9), (c5, c9), (s5, s9)) = (p(&d.run_sandbox), p(&d.create), p(&d.start));
        println!(
            "| direct CRI, {what}: RunPodSandbox / CreateContainer / StartContainer, p50 (p99) | {r5:.0} ({r9:.0}) / {c5:.0} ({c9:.0}) / {s5:.0} ({s9:.0}) ms | – |"
        );
        let (d50, d99) = (quantile(&d.total, 0.5), quantile(&d.total, 0.99));
        println!(
            "| ratio rkube / direct ({what}), p50 / p99 | {:.2}× / {:.2}× | p99 ≤ 1.5× |",
            ratio(r50, d50),
            ratio(r99, d99)
        );
    }
    let delta = |a: u64, b: u64| mib(b) - mib(a);
    let (server_0, agent_0, cd_0) = rss_0;
    let (server_n, agent_n, cd_n) = run.rss_n;
    match (agent_0, agent_n) {
        (Some(a0), Some(an)) => {
            println!(
                "| `rkube agent` process RSS, 0 → {n} pods | {:.1} MiB → {:.1} MiB (Δ {:+.1} MiB) | ≤ 40 MB (38.1 MiB) at 100 pods |",
                mib(a0),
                mib(an),
                delta(a0, an)
            );
            println!(
                "| `rkube server --disable-agent` RSS (API server, controllers, scheduler), 0 → {n} pods | {:.1} MiB → {:.1} MiB (Δ {:+.1} MiB) | – |",
                mib(server_0),
                mib(server_n),
                delta(server_0, server_n)
            );
        }
        _ => println!(
            "| rkube process RSS (API server + controllers + scheduler + agent), 0 → {n} pods | {:.1} MiB → {:.1} MiB (Δ {:+.1} MiB) | agent ≤ 40 MB at 100 pods |",
            mib(server_0),
            mib(server_n),
            delta(server_0, server_n)
        ),
    }
    println!("| containerd RSS, 0 → {n} pods | {:.1} MiB → {:.1} MiB | – |", mib(cd_0), mib(cd_n));
    println!("| containerd shims at {n} pods (total RSS) | {} shims, {:.1} MiB | – |", run.shims.1, mib(run.shims.0));
    println!(
        "| deletion: {n} pods deleted at once → last DELETED seen ({} of {n}) | {:.1} s = {:.1} pods/s | – |",
        run.deleted,
        run.delete_secs,
        n as f64 / run.delete_secs
    );
    println!();
    if args.in_process {
        println!("The rkube RSS includes the whole control plane: the node agent runs in-process with the API");
        println!("server (upstream's node tests allow 100 MB for the kubelet alone; the issue's target is 40 MB for the agent).");
    } else {
        println!("The agent is its own process (`rkube agent`, joined with a token); its RSS includes its kubelet API");
        println!("server, node network loop and API client caches, not containerd (upstream's node tests allow 100 MB");
        println!("for the kubelet alone; the issue's target is 40 MB for the agent).");
    }
    // For profiling: the server's and agent's logs (timestamps of each pod's steps).
    if let Ok(path) = std::env::var("RKUBE_BENCH_LOG") {
        std::fs::write(&path, bench.server().logs()).expect("write RKUBE_BENCH_LOG");
        if let Some(agent) = &bench.agent {
            let _ = std::fs::write(format!("{path}.agent"), agent.logs());
        }
        let containerd_log = rkube_kubelet::containerd::RuntimePaths::new(&bench.node_data_dir).log;
        let _ = std::fs::copy(containerd_log, format!("{path}.containerd"));
    }
    if run.running < n || run.delete_secs.is_nan() {
        eprintln!("--- rkube server stderr (tail) ---\n{}", tail(&bench.server().logs(), 60));
        if let Some(agent) = &bench.agent {
            eprintln!("--- rkube agent stderr (tail) ---\n{}", tail(&agent.logs(), 60));
        }
    }
    drop(bench);
    drop(containerd_guard);
}

fn tail(s: &str, lines: usize) -> String {
    let all: Vec<&str> = s.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
