//! Node loss, end to end (issue 9, item 4): a `rkube server` on a test
//! bridge and two `rkube agent`s joined with `rkube token create`, each in
//! its own network namespace. A Deployment spread over both nodes by a
//! topologySpreadConstraint; one agent is stopped (SIGTERM: its pods keep
//! running, its node simply stops heartbeating). As upstream's node
//! lifecycle and taint eviction controllers do it:
//!
//! - after `--node-monitor-grace-period` the node's Ready condition is
//!   `Unknown` (`NodeStatusUnknown`, "Kubelet stopped posting node
//!   status.") and it is tainted `node.kubernetes.io/unreachable` with
//!   NoSchedule and NoExecute;
//! - the pods' unreachable toleration comes from the DefaultTolerationSeconds
//!   admission plugin with `--default-unreachable-toleration-seconds`; once
//!   it runs out the taint manager evicts them (`TaintManagerEviction`,
//!   DisruptionTarget `DeletionByTaintManager`) and the ReplicaSet replaces
//!   them on the surviving node: 4 available replicas, all there.
//!
//! Conformance: "Pod Eviction, Toleration limits" (pods are evicted as per
//! their toleration time limit), here with the toleration the admission
//! plugin adds. Timers are shortened with flags; waits are generous and
//! nothing is timed. Needs root, containerd and the CNI plugins; traffic
//! stays on the test's bridge and namespaces.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::netns::{NetnsAgent, TestNetwork};
use support::node::condition;
use support::{TestServer, TestServerOptions};

const NODES: [&str; 2] = ["loss-a", "loss-b"];
/// `--default-unreachable-toleration-seconds` (and not-ready) of the test server.
const TOLERATION_SECONDS: i64 = 10;
/// How long pods and nodes get to settle (generous: CI runs tests side by side).
const SETTLE: Duration = Duration::from_secs(180);

/// Fields drop in order: agents (with their host state), namespaces, server.
struct Cluster {
    agents: Vec<NetnsAgent>,
    net: TestNetwork,
    server: TestServer,
    busybox: String,
    tmp: tempfile::TempDir,
}

impl Cluster {
    fn start() -> Cluster {
        support::require_root_and_runtime();
        let net = TestNetwork::create(NODES.len());
        let cluster_cidr = support::free_cluster_cidr();
        let service_cidr = support::free_cluster_cidr();
        let server = TestServer::start_with(TestServerOptions {
            controllers: true,
            scheduler: true,
            bind_address: Some("0.0.0.0".parse().unwrap()),
            advertise_address: Some(net.gateway.into()),
            extra_args: [
                "--cluster-cidr",
                &cluster_cidr,
                "--service-cidr",
                &service_cidr,
                "--node-monitor-period",
                "2s",
                "--node-monitor-grace-period",
                "40s",
                "--default-not-ready-toleration-seconds",
                &TOLERATION_SECONDS.to_string(),
                "--default-unreachable-toleration-seconds",
                &TOLERATION_SECONDS.to_string(),
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            ..Default::default()
        });
        let kubeconfig = server.kubeconfig();
        let out = support::run_rkube(
            &["token", "create", "--kubeconfig", kubeconfig.to_str().unwrap()],
            Duration::from_secs(30),
        );
        assert!(out.status.success(), "rkube token create: {}", String::from_utf8_lossy(&out.stderr));
        let token = String::from_utf8(out.stdout).unwrap().trim().to_string();
        let tmp = tempfile::Builder::new().prefix("rkube-loss-").tempdir().unwrap();
        let mut agents = Vec::new();
        for (host, node) in net.hosts.iter().zip(NODES) {
            let data_dir = tmp.path().join(node);
            // Nothing runs yet: build-local leaves the archives the agent imports at start.
            let out = support::run_rkube(
                &["images", "build-local", "--data-dir", data_dir.to_str().unwrap()],
                Duration::from_secs(120),
            );
            assert!(out.status.success(), "rkube images build-local: {}", String::from_utf8_lossy(&out.stderr));
            let args: Vec<String> = [
                "--server",
                &format!("https://{}:{}", net.gateway, server.port()),
                "--token",
                &token,
                "--node-name",
                node,
                "--node-ip",
                &host.ip.to_string(),
                "--cluster-cidr",
                &cluster_cidr,
                "--service-cidr",
                &service_cidr,
                "--eviction-hard",
                "memory.available<1Mi,nodefs.available<1%,imagefs.available<1%",
                "--image-gc-high-threshold",
                "100",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            let log = tmp.path().join(format!("{node}.log"));
            agents.push(NetnsAgent::start(host, node, &args, &data_dir, &log));
        }
        let version = rkube_kubelet::images::busybox_version(Path::new(rkube_kubelet::images::HOST_BUSYBOX)).unwrap();
        let cluster = Cluster { agents, net, server, busybox: format!("docker.io/library/busybox:{version}"), tmp };
        for node in NODES {
            cluster.wait(&format!("node {node} Ready"), || {
                cluster.node(node).is_some_and(|n| {
                    condition(&n, "Ready")["status"] == "True"
                        && !taints(&n).iter().any(|(k, _)| k == "node.kubernetes.io/not-ready")
                })
            });
        }
        cluster.wait("the default ServiceAccount", || {
            cluster.server.kubectl(&["get", "serviceaccount", "default"]).status.success()
        });
        cluster
    }

    /// Polls `f` every 500 ms for up to [`SETTLE`]; panics with the logs.
    fn wait(&self, what: &str, mut f: impl FnMut() -> bool) {
        let deadline = Instant::now() + SETTLE;
        while Instant::now() < deadline {
            if f() {
                return;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        let pods = self.server.kubectl(&["get", "pods", "-o", "wide"]);
        let nodes = self.server.kubectl(&["get", "nodes", "-o", "yaml"]);
        panic!(
            "timed out waiting for {what}\n--- pods ---\n{}\n--- nodes ---\n{}\n{}",
            String::from_utf8_lossy(&pods.stdout),
            String::from_utf8_lossy(&nodes.stdout),
            self.logs()
        );
    }

    fn logs(&self) -> String {
        let mut s = format!("--- server ---\n{}", tail(&self.server.logs()));
        for (a, node) in self.agents.iter().zip(NODES) {
            s.push_str(&format!("\n--- agent {node} ---\n{}", tail(&a.logs())));
        }
        s
    }

    fn node(&self, name: &str) -> Option<Value> {
        let out = self.server.kubectl(&["get", "node", name, "-o", "json"]);
        out.status.success().then(|| serde_json::from_slice(&out.stdout).ok()).flatten()
    }

    /// The pods labelled `app=<app>`.
    fn pods(&self, app: &str) -> Vec<Value> {
        let list = self.server.get_json(&["pods", "-l", &format!("app={app}")]);
        list["items"].as_array().cloned().unwrap_or_default()
    }
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(60)..].join("\n")
}

/// A node's taints as (key, effect).
fn taints(node: &Value) -> Vec<(String, String)> {
    node["spec"]["taints"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| (t["key"].as_str().unwrap_or("").to_string(), t["effect"].as_str().unwrap_or("").to_string()))
        .collect()
}

fn is_ready(pod: &Value) -> bool {
    condition(pod, "Ready")["status"] == "True"
}

fn is_terminating(pod: &Value) -> bool {
    !pod["metadata"]["deletionTimestamp"].is_null()
}

/// The number of non-terminating pods on each node.
fn per_node(pods: &[Value]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for p in pods.iter().filter(|p| !is_terminating(p)) {
        *m.entry(p["spec"]["nodeName"].as_str().unwrap_or("").to_string()).or_default() += 1;
    }
    m
}

#[test]
fn a_lost_node_turns_unknown_is_tainted_and_its_pods_are_evicted_to_the_other_node() {
    let mut c = Cluster::start();
    // Four replicas, at most one apart between the nodes (tainted nodes left out of the
    // spread once one is lost, so the replacements may all go to the survivor).
    c.server.create(&json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "spread"},
        "spec": {
            "replicas": 4,
            "selector": {"matchLabels": {"app": "spread"}},
            "template": {
                "metadata": {"labels": {"app": "spread"}},
                "spec": {
                    "terminationGracePeriodSeconds": 1,
                    "topologySpreadConstraints": [{
                        "maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                        "whenUnsatisfiable": "DoNotSchedule", "nodeTaintsPolicy": "Honor",
                        "labelSelector": {"matchLabels": {"app": "spread"}}
                    }],
                    "containers": [{"name": "main", "image": c.busybox,
                        "command": ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]}]
                }
            }
        }
    }));
    c.wait("4 Ready replicas, 2 on each node", || {
        let pods = c.pods("spread");
        pods.len() == 4
            && pods.iter().all(is_ready)
            && per_node(&pods) == BTreeMap::from([(NODES[0].to_string(), 2), (NODES[1].to_string(), 2)])
    });
    let pods = c.pods("spread");
    // DefaultTolerationSeconds gave every pod the flags' seconds for both taints.
    for p in &pods {
        for key in ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"] {
            let t = p["spec"]["tolerations"].as_array().unwrap().iter().find(|t| t["key"] == key).cloned();
            assert_eq!(
                t,
                Some(json!({"key": key, "operator": "Exists", "effect": "NoExecute",
                    "tolerationSeconds": TOLERATION_SECONDS})),
                "{p}"
            );
        }
    }
    let lost: Vec<String> = pods
        .iter()
        .filter(|p| p["spec"]["nodeName"] == NODES[0])
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(lost.len(), 2);

    // The node's agent stops: its containers keep running, its heartbeats end.
    c.agents[0].stop();
    c.wait(&format!("node {} Ready=Unknown", NODES[0]), || {
        c.node(NODES[0]).is_some_and(|n| condition(&n, "Ready")["status"] == "Unknown")
    });
    let node = c.node(NODES[0]).unwrap();
    let ready = condition(&node, "Ready");
    assert_eq!(ready["reason"], "NodeStatusUnknown", "{ready}");
    assert_eq!(ready["message"], "Kubelet stopped posting node status.", "{ready}");
    c.wait(&format!("the unreachable taints on {}", NODES[0]), || {
        c.node(NODES[0]).is_some_and(|n| {
            let t = taints(&n);
            ["NoSchedule", "NoExecute"]
                .iter()
                .all(|e| t.contains(&("node.kubernetes.io/unreachable".to_string(), e.to_string())))
        })
    });
    // The survivor stays Ready and untainted by the lifecycle controller.
    let survivor = c.node(NODES[1]).unwrap();
    assert_eq!(condition(&survivor, "Ready")["status"], "True", "{survivor}");
    assert!(!taints(&survivor).iter().any(|(k, _)| k == "node.kubernetes.io/unreachable"), "{survivor}");

    // After the toleration the lost pods are evicted and replaced on the survivor.
    c.wait("4 available replicas, all on the surviving node", || {
        let d = c.server.get_json(&["deployment", "spread"]);
        let pods = c.pods("spread");
        let active: Vec<&Value> = pods.iter().filter(|p| !is_terminating(p)).collect();
        d["status"]["availableReplicas"] == 4
            && active.len() == 4
            && active.iter().all(|p| p["spec"]["nodeName"] == NODES[1] && is_ready(p))
    });
    // Each lost pod was deleted by the taint manager (still Terminating, since no kubelet
    // confirms its end, or gone), with the DisruptionTarget condition and event it writes.
    let pods = c.pods("spread");
    for name in &lost {
        if let Some(p) = pods.iter().find(|p| p["metadata"]["name"] == name.as_str()) {
            assert!(is_terminating(p), "{p}");
            let target = condition(p, "DisruptionTarget");
            assert_eq!(target["status"], "True", "{p}");
            assert_eq!(target["reason"], "DeletionByTaintManager", "{p}");
        }
    }
    let events = c.server.get_json(&["events"]);
    for name in &lost {
        let evicted = events["items"].as_array().unwrap().iter().any(|e| {
            e["reason"] == "TaintManagerEviction"
                && e["involvedObject"]["name"] == name.as_str()
                && e["message"] == format!("Marking for deletion Pod default/{name}")
        });
        assert!(evicted, "no TaintManagerEviction event for {name}: {events}");
    }

    // The stopped agent's leftovers (shims and containers, mounts, pod bridge, node
    // network, cgroups), removed inside its namespace as an operator would on that host.
    let data_dir = c.tmp.path().join(NODES[0]);
    let out = c.net.hosts[0].run(support::RKUBE, &["killall", "--data-dir", data_dir.to_str().unwrap()]);
    assert!(out.status.success(), "rkube killall: {}", String::from_utf8_lossy(&out.stderr));
}
