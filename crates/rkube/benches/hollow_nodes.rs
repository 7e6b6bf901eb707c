//! Hollow nodes (issue 7 item 16): how many simulated nodes fit per GiB of
//! memory and per CPU core. Two modes, each in this one process:
//!
//! - `runtime`: N simulated CRI runtimes ([`rkube_kubelet::simulated`]),
//!   each on its own unix socket with its own tonic client, each holding P
//!   pods (sandbox + one started container), then driven for S seconds
//!   with upstream kubelet's steady CRI load (PLEG relist every 1 s:
//!   ListPodSandbox + ListContainers; every 10 s: Status, ListImages,
//!   ImageFsInfo).
//! - `agents`: N complete hollow nodes — the real node agent
//!   ([`rkube_kubelet::agent::spawn`]: Node registration and status, Lease,
//!   pod workers, kubelet API) over a simulated runtime each — against a real
//!   `rkube server` (release binary, scheduler and controllers, no agent of
//!   its own); then a Deployment of P pods per node spread over them, timed
//!   until every pod is Running, then S idle seconds.
//!
//! Memory is this process's RSS growth over the N nodes; CPU is this
//! process's user+system time over the S steady seconds (it includes the
//! CRI client side, so the runtime's own share is lower). Prints a markdown row.
//!
//! ```sh
//! cargo bench -p rkube --bench hollow_nodes -- --mode runtime --nodes 1000 --pods 10 --seconds 30
//! cargo bench -p rkube --bench hollow_nodes -- --mode agents --nodes 100 --pods 1 --seconds 60
//! ```

#[path = "../tests/support/mod.rs"]
#[allow(dead_code)]
mod support;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rkube_kubelet::cri::{v1, CriClient};
use rkube_kubelet::simulated::{self, SimulatedRuntime};

struct Args {
    mode: String,
    nodes: usize,
    pods: usize,
    seconds: u64,
}

fn parse_args() -> Args {
    let mut args = Args { mode: "runtime".into(), nodes: 1000, pods: 10, seconds: 30 };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--mode" => args.mode = value(),
            "--nodes" => args.nodes = value().parse().expect("--nodes N"),
            "--pods" => args.pods = value().parse().expect("--pods P"),
            "--seconds" => args.seconds = value().parse().expect("--seconds S"),
            // cargo bench passes --bench to harness-less benches.
            _ => {}
        }
    }
    args
}

/// (RSS bytes, user+system CPU seconds) of process `pid` ("self" for this one).
fn usage(pid: &str) -> (u64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command's closing parenthesis; utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let f: Vec<&str> = rest.split_whitespace().collect();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let ticks = f.get(11).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0)
        + f.get(12).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (rss_kb * 1024, ticks / hz)
}

fn mib(b: u64) -> f64 {
    b as f64 / (1 << 20) as f64
}

fn sandbox(node: usize, pod: usize) -> v1::PodSandboxConfig {
    v1::PodSandboxConfig {
        metadata: Some(v1::PodSandboxMetadata {
            name: format!("pod-{pod}"),
            namespace: "default".into(),
            uid: format!("uid-{node}-{pod}"),
            attempt: 0,
        }),
        labels: HashMap::from([("io.kubernetes.pod.name".to_string(), format!("pod-{pod}"))]),
        ..Default::default()
    }
}

async fn fill_node(cri: &CriClient, node: usize, pods: usize) {
    cri.pull_image("registry.invalid/app:1.0", None, None).await.expect("pull");
    for p in 0..pods {
        let sb = sandbox(node, p);
        let id = cri.run_pod_sandbox(sb.clone(), "").await.expect("sandbox");
        let c = v1::ContainerConfig {
            metadata: Some(v1::ContainerMetadata { name: "app".into(), attempt: 0 }),
            image: Some(v1::ImageSpec { image: "registry.invalid/app:1.0".into(), ..Default::default() }),
            ..Default::default()
        };
        let cid = cri.create_container(&id, c, sb).await.expect("container");
        cri.start_container(&cid).await.expect("start");
    }
}

/// Upstream kubelet's steady CRI load on one node until `until`.
async fn drive_node(cri: CriClient, until: Instant) -> u64 {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut calls = 0u64;
    let mut n = 0u64;
    while Instant::now() < until {
        tick.tick().await;
        cri.list_pod_sandbox(None).await.expect("relist sandboxes");
        cri.list_containers(None).await.expect("relist containers");
        calls += 2;
        if n.is_multiple_of(10) {
            cri.status(false).await.expect("status");
            cri.list_images(None).await.expect("images");
            calls += 2;
        }
        n += 1;
    }
    calls
}

fn runtime_mode(args: &Args) {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let tmp = tempfile::Builder::new().prefix("rkube-hollow-").tempdir().expect("tempdir");
    let (rss0, _) = usage("self");
    let started = Instant::now();
    let served = rt.block_on(async {
        let mut served = Vec::with_capacity(args.nodes);
        for i in 0..args.nodes {
            let dir = tmp.path().join(format!("n{i}"));
            let runtime = Arc::new(SimulatedRuntime::new(&dir));
            runtime.set_pod_cidr(&format!("10.{}.{}.0/24", 64 + i / 256, i % 256)).expect("cidr");
            let s = simulated::serve(runtime, &simulated::socket_path(&dir)).await.expect("serve");
            fill_node(s.client(), i, args.pods).await;
            served.push(s);
        }
        served
    });
    let setup = started.elapsed();
    let (rss1, cpu1) = usage("self");
    let until = Instant::now() + Duration::from_secs(args.seconds);
    let calls: u64 = rt.block_on(async {
        let tasks: Vec<_> = served.iter().map(|s| tokio::spawn(drive_node(s.client().clone(), until))).collect();
        let mut total = 0;
        for t in tasks {
            total += t.await.expect("driver");
        }
        total
    });
    let (rss2, cpu2) = usage("self");
    let per_node_rss = rss2.saturating_sub(rss0) as f64 / args.nodes as f64;
    let cpu_per_node = (cpu2 - cpu1) / args.seconds as f64 / args.nodes as f64;
    eprintln!(
        "setup {:.2}s; RSS {:.1} → {:.1} → {:.1} MiB; {} CRI calls in {} s",
        setup.as_secs_f64(),
        mib(rss0),
        mib(rss1),
        mib(rss2),
        calls,
        args.seconds
    );
    println!("| mode | nodes | pods/node | RSS/node | nodes/GiB | CPU/node | nodes/core |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    println!(
        "| runtime (CRI load) | {} | {} | {:.1} KiB | {:.0} | {:.3} ms/s | {:.0} |",
        args.nodes,
        args.pods,
        per_node_rss / 1024.0,
        (1u64 << 30) as f64 / per_node_rss,
        cpu_per_node * 1000.0,
        1.0 / cpu_per_node
    );
    rt.block_on(async {
        for mut s in served {
            s.stop().await;
        }
    });
}

fn ready_nodes(server: &support::TestServer) -> usize {
    let out = server.kubectl(&["get", "nodes", "-o", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    v["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter(|n| {
                    n["status"]["conditions"]
                        .as_array()
                        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
                })
                .count()
        })
        .unwrap_or(0)
}

fn running_pods(server: &support::TestServer) -> usize {
    let out =
        server.kubectl(&["get", "pods", "-l", "app=hollow", "--field-selector=status.phase=Running", "-o", "name"]);
    String::from_utf8_lossy(&out.stdout).lines().count()
}

fn agents_mode(args: &Args) {
    let server = support::TestServer::start_with(support::TestServerOptions {
        scheduler: true,
        controllers: true,
        ..Default::default()
    });
    let pid = server.pid().expect("server pid").to_string();
    let tls = server.tls_dir();
    let ca = rkube_pki::CertAndKey {
        cert_pem: std::fs::read_to_string(tls.join("ca.crt")).expect("ca.crt"),
        key_pem: std::fs::read_to_string(tls.join("ca.key")).expect("ca.key"),
    };
    let api = rkube_client::client::ApiEndpoint {
        url: format!("https://127.0.0.1:{}", server.port()),
        ca_pem: ca.cert_pem.clone(),
    };
    let tmp = tempfile::Builder::new().prefix("rkube-hollow-").tempdir().expect("tempdir");
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    // Certificates first (signing is CPU the nodes do not spend at run time).
    let configs: Vec<_> = (0..args.nodes).map(|i| config(i, tmp.path(), &ca, &api)).collect();
    let (rss0, _) = usage("self");
    let (srss0, _) = usage(&pid);
    let started = Instant::now();
    let agents: Vec<_> = {
        let _guard = rt.enter();
        configs.into_iter().map(|c| rkube_kubelet::agent::spawn(c, async { true })).collect()
    };
    server.wait_for(Duration::from_secs(600), "every hollow node Ready", || ready_nodes(&server) == args.nodes);
    let ready = started.elapsed();
    let total = args.nodes * args.pods;
    let deploy = serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "hollow"},
        "spec": {"replicas": total, "selector": {"matchLabels": {"app": "hollow"}},
                 "template": {"metadata": {"labels": {"app": "hollow"}},
                              "spec": {"containers": [{"name": "app", "image": "registry.invalid/app:1.0"}]}}}
    });
    let created = Instant::now();
    server.create(&deploy);
    server.wait_for(Duration::from_secs(900), "every pod Running", || running_pods(&server) == total);
    let running = created.elapsed();
    let (rss1, cpu1) = usage("self");
    let (_, scpu1) = usage(&pid);
    std::thread::sleep(Duration::from_secs(args.seconds));
    let (rss2, cpu2) = usage("self");
    let (srss2, scpu2) = usage(&pid);
    let per_node_rss = rss2.saturating_sub(rss0) as f64 / args.nodes as f64;
    let cpu_per_node = (cpu2 - cpu1) / args.seconds as f64 / args.nodes as f64;
    eprintln!(
        "nodes Ready after {:.1}s; {total} pods Running {:.1}s after the Deployment; bench RSS {:.1} → {:.1} → {:.1} MiB; \
         server RSS {:.1} → {:.1} MiB, server CPU {:.3} cores while idle",
        ready.as_secs_f64(),
        running.as_secs_f64(),
        mib(rss0),
        mib(rss1),
        mib(rss2),
        mib(srss0),
        mib(srss2),
        (scpu2 - scpu1) / args.seconds as f64
    );
    println!("| mode | nodes | pods/node | RSS/node | nodes/GiB | CPU/node | nodes/core |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    println!(
        "| agents (hollow nodes, idle) | {} | {} | {:.1} KiB | {:.0} | {:.3} ms/s | {:.0} |",
        args.nodes,
        args.pods,
        per_node_rss / 1024.0,
        (1u64 << 30) as f64 / per_node_rss,
        cpu_per_node * 1000.0,
        1.0 / cpu_per_node
    );
    rt.block_on(async {
        for a in agents {
            a.stop().await;
        }
    });
}

/// The agent config of hollow node `i` (its own data dir and kubelet port).
fn config(
    i: usize,
    root: &Path,
    ca: &rkube_pki::CertAndKey,
    api: &rkube_client::client::ApiEndpoint,
) -> rkube_kubelet::agent::AgentConfig {
    let name = format!("hollow-{i}");
    let data_dir = root.join(&name);
    let ip: std::net::IpAddr = [127, 0, 0, 1].into();
    rkube_kubelet::agent::AgentConfig {
        credential: rkube_kubelet::agent::identity::issue(ca, &name, &data_dir).expect("node credential"),
        serving_credential: rkube_kubelet::server::issue_serving_cert(ca, &name, &[ip]).expect("serving cert"),
        data_dir,
        node_name: name,
        node_ip: ip,
        node_labels: Default::default(),
        taints: vec![],
        kube_reserved: Default::default(),
        system_reserved: Default::default(),
        runtime_endpoint: None,
        runtime: rkube_kubelet::containerd::RuntimeKind::Simulated,
        control_plane: false,
        kubelet_version: rkube_apimachinery::version::git_version(),
        api: api.clone(),
        admin_credential: None,
        cluster_dns: vec![[10, 43, 0, 10].into()],
        cluster_domain: "cluster.local".into(),
        kubelet_port: support::free_port(),
        eviction: Default::default(),
        shutdown: Default::default(),
    }
}

fn main() {
    let args = parse_args();
    match args.mode.as_str() {
        "runtime" => runtime_mode(&args),
        "agents" => agents_mode(&args),
        other => panic!("unknown --mode {other} (runtime, agents)"),
    }
}
