//! The node agent inside `rkube server` against the real thing: the managed
//! containerd, the Node it registers and keeps Ready (with node-ipam giving
//! it a pod CIDR, written as the CNI config so that the runtime reports
//! NetworkReady), its heartbeat Lease, its events, and a clean stop. Needs
//! root and the packages scripts/test.sh installs (containerd, runc,
//! containernetworking-plugins).

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{TestServer, TestServerOptions};

/// Kills what the agent's containerd may leave (shims, mounts) however the test ends.
struct HostCleanup(std::path::PathBuf);

impl Drop for HostCleanup {
    fn drop(&mut self) {
        support::node::teardown_host(&self.0);
    }
}

fn json(server: &TestServer, args: &[&str]) -> Value {
    let out = server.kubectl(args);
    assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn condition<'a>(node: &'a Value, type_: &str) -> &'a Value {
    // A Node just created has no status yet: its conditions read as absent.
    node["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .unwrap_or(&Value::Null)
}

/// Processes whose command line mentions `dir` (containerd, its shims).
fn processes_under(dir: &Path) -> Vec<String> {
    let needle = dir.as_os_str().as_encoded_bytes();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|c| c.windows(needle.len()).any(|w| w == needle))
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .collect()
}

fn mounts_under(dir: &Path) -> Vec<String> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|m| Path::new(m).starts_with(dir))
        .map(String::from)
        .collect()
}

#[test]
fn server_agent_registers_a_ready_node_with_lease_and_pod_network() {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(unsafe { libc::geteuid() }, 0, "the agent tests run as root (as CI does)");
    rkube_kubelet::host::check_runtime_binaries()
        .unwrap_or_else(|e| panic!("{e}. Run the tests through scripts/test.sh, which installs them."));
    let tmp = tempfile::Builder::new().prefix("rkube-agent-").tempdir().unwrap();
    let data_dir = tmp.path().to_path_buf();
    let _cleanup = HostCleanup(data_dir.clone());
    let mut server = TestServer::start_with(TestServerOptions {
        agent: true,
        data_dir: Some(data_dir.clone()),
        extra_args: [
            "--controllers",
            "serviceaccount-controller,node-ipam-controller,node-lifecycle-controller",
            "--node-labels",
            "example.com/team=a",
            "--register-with-taints",
            "example.com/dedicated=infra:PreferNoSchedule",
            "--kube-reserved",
            "cpu=100m,memory=100Mi",
            "--system-reserved",
            "memory=156Mi",
            "--eviction-hard",
            "memory.available<50Mi,nodefs.available<1%,imagefs.available<1%",
            "--kubelet-port",
            "10250",
        ]
        .map(String::from)
        .to_vec(),
        ..Default::default()
    });
    // Upstream's default node name: the hostname, lowercased.
    let node_name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_lowercase();

    // Ready within 60 s (through kubectl get nodes, as a user sees it).
    let deadline = Instant::now() + Duration::from_secs(60);
    let node = loop {
        let out = server.kubectl(&["get", "nodes", "-o", "json"]);
        if out.status.success() {
            let list: Value = serde_json::from_slice(&out.stdout).unwrap();
            if let Some(n) =
                list["items"].as_array().unwrap().iter().find(|n| n["metadata"]["name"] == node_name.as_str())
            {
                if condition(n, "Ready")["status"] == "True" {
                    break n.clone();
                }
            }
        }
        assert!(Instant::now() < deadline, "node {node_name} not Ready within 60s\n{}", server.logs());
        std::thread::sleep(Duration::from_millis(500));
    };
    let table = server.kubectl(&["get", "nodes", "--no-headers"]);
    let table = String::from_utf8_lossy(&table.stdout).to_string();
    assert!(table.contains(&node_name) && table.contains(" Ready "), "{table}");
    assert!(table.contains("control-plane"), "ROLES column: {table}");

    let labels = &node["metadata"]["labels"];
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        a => a,
    };
    assert_eq!(labels["kubernetes.io/hostname"], node_name.as_str());
    assert_eq!(labels["kubernetes.io/os"], "linux");
    assert_eq!(labels["kubernetes.io/arch"], arch);
    assert_eq!(labels["beta.kubernetes.io/os"], "linux");
    assert_eq!(labels["beta.kubernetes.io/arch"], arch);
    assert_eq!(labels["node-role.kubernetes.io/control-plane"], "");
    assert_eq!(labels["example.com/team"], "a");
    let taints = node["spec"]["taints"].as_array().unwrap();
    assert!(
        taints
            .iter()
            .any(|t| t["key"] == "example.com/dedicated" && t["value"] == "infra" && t["effect"] == "PreferNoSchedule"),
        "{taints:?}"
    );

    let status = &node["status"];
    let addresses = status["addresses"].as_array().unwrap();
    assert_eq!(addresses[0], serde_json::json!({"type": "InternalIP", "address": "127.0.0.1"}));
    assert_eq!(addresses[1], serde_json::json!({"type": "Hostname", "address": node_name}));
    let cap = &status["capacity"];
    let cpus = std::thread::available_parallelism().unwrap().get();
    assert_eq!(cap["cpu"], cpus.to_string().as_str());
    assert_eq!(cap["pods"], "110");
    assert_eq!(cap["hugepages-2Mi"], "0");
    assert_eq!(cap["hugepages-1Gi"], "0");
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let mem_kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .unwrap()
        .trim()
        .trim_end_matches(" kB")
        .trim()
        .parse()
        .unwrap();
    assert_eq!(cap["memory"], format!("{mem_kib}Ki").as_str());
    assert!(cap["ephemeral-storage"].as_str().is_some_and(|s| !s.is_empty()));
    // Allocatable (upstream's node allocatable): minus 100m + 0 CPU, minus
    // 100Mi + 156Mi reserved and the hard memory.available threshold given
    // above (50Mi).
    let alloc = &status["allocatable"];
    assert_eq!(alloc["cpu"], format!("{}m", cpus * 1000 - 100).as_str());
    assert_eq!(alloc["memory"], format!("{}Ki", mem_kib - (256 + 50) * 1024).as_str());
    assert_eq!(alloc["pods"], "110");

    let info = &status["nodeInfo"];
    assert!(info["containerRuntimeVersion"].as_str().unwrap().starts_with("containerd://"), "{info}");
    assert_eq!(info["operatingSystem"], "linux");
    assert_eq!(info["architecture"], arch);
    let version = json(&server, &["version", "-o", "json"]);
    assert_eq!(info["kubeletVersion"], version["serverVersion"]["gitVersion"]);
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(info["kernelVersion"], release.trim());
    let boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    assert_eq!(info["bootID"], boot_id.trim());
    if let Ok(id) = std::fs::read_to_string("/etc/machine-id") {
        assert_eq!(info["machineID"], id.trim());
    }
    assert_eq!(status["daemonEndpoints"]["kubeletEndpoint"]["Port"], 10250);
    for (t, reason, message) in [
        ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ] {
        let c = condition(&node, t);
        assert_eq!(
            (c["status"].as_str(), c["reason"].as_str(), c["message"].as_str()),
            (Some("False"), Some(reason), Some(message))
        );
    }
    let ready = condition(&node, "Ready");
    assert_eq!(ready["reason"], "KubeletReady");
    assert_eq!(ready["message"], "kubelet is posting ready status");
    // The pause image the agent provides is listed among the node's images.
    let images = status["images"].as_array().unwrap();
    assert!(
        images.iter().any(|i| i["names"].as_array().unwrap().iter().any(|n| n == "registry.k8s.io/pause:3.10")),
        "{images:?}"
    );

    // The pod network: the conflist for the node's podCIDR.
    let pod_cidr = node["spec"]["podCIDR"].as_str().expect("node-ipam assigns a podCIDR");
    let conflist = data_dir.join("agent/cni/net.d/10-rkube.conflist");
    let conf: Value = serde_json::from_str(&std::fs::read_to_string(&conflist).unwrap()).unwrap();
    assert_eq!(conf["cniVersion"], "1.0.0");
    assert_eq!(conf["plugins"][0]["type"], "bridge");
    assert_eq!(conf["plugins"][0]["ipam"]["ranges"][0][0]["subnet"], pod_cidr);
    assert_eq!(conf["plugins"][1]["type"], "portmap");

    // The Lease: held by the node, 40 s, owned by the Node, renewed.
    let lease = json(&server, &["get", "lease", "-n", "kube-node-lease", &node_name, "-o", "json"]);
    assert_eq!(lease["spec"]["holderIdentity"], node_name.as_str());
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 40);
    let owner = &lease["metadata"]["ownerReferences"][0];
    assert_eq!((owner["kind"].as_str(), owner["name"].as_str()), (Some("Node"), Some(node_name.as_str())));
    assert_eq!(owner["uid"], node["metadata"]["uid"]);
    let first = lease["spec"]["renewTime"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(25);
    loop {
        let l = json(&server, &["get", "lease", "-n", "kube-node-lease", &node_name, "-o", "json"]);
        if l["spec"]["renewTime"].as_str().unwrap() > first.as_str() {
            break;
        }
        assert!(Instant::now() < deadline, "lease not renewed within 25s (renewTime {first})");
        std::thread::sleep(Duration::from_secs(1));
    }

    // The kubelet's events about its node.
    let events = json(&server, &["get", "events", "-n", "default", "-o", "json"]);
    let has = |reason: &str, message: &str| {
        events["items"].as_array().unwrap().iter().any(|e| {
            e["reason"] == reason
                && e["message"] == message
                && e["involvedObject"]["kind"] == "Node"
                && e["source"]["component"] == "kubelet"
        })
    };
    assert!(has("Starting", "Starting kubelet."), "{events}");
    let sufficient_memory = format!("Node {node_name} status is now: NodeHasSufficientMemory");
    assert!(has("NodeHasSufficientMemory", &sufficient_memory), "{events}");

    // Stopping the server leaves its containerd running (the next start adopts
    // it); `rkube killall` stops it, and nothing stays running or mounted.
    server.signal(libc::SIGTERM);
    let (exit, _) = server.wait_exit(Duration::from_secs(30));
    assert!(exit.success(), "{exit:?}\n{}", server.logs());
    let containerd = rkube_kubelet::containerd::RuntimePaths::new(&data_dir);
    assert_eq!(rkube_kubelet::containerd::managed_containerd_pids(&containerd).len(), 1, "containerd keeps running");
    support::node::teardown_host(&data_dir);
    let left = processes_under(&data_dir);
    assert!(left.is_empty(), "processes left running: {left:?}");
    assert!(mounts_under(&data_dir).is_empty(), "mounts left: {:?}", mounts_under(&data_dir));
}

/// `--node-labels` in the kubernetes.io namespace outside the kubelet's
/// allowed set stop the start, as upstream's kubelet refuses them (roles
/// are set by an administrator, not the node itself).
#[test]
fn server_refuses_node_labels_a_kubelet_may_not_set() {
    let mut server = TestServer::spawn(&TestServerOptions {
        agent: true,
        extra_args: ["--node-labels", "node-role.kubernetes.io/worker="].map(String::from).to_vec(),
        ..Default::default()
    });
    let (exit, _) = server.wait_exit(Duration::from_secs(30));
    assert!(!exit.success());
    let logs = server.logs();
    assert!(
        logs.contains("--node-labels: unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels"),
        "{logs}"
    );
    assert!(logs.contains("node-role.kubernetes.io/worker"), "{logs}");
}
