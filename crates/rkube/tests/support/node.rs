//! A one-node cluster with real containers: `rkube server` with its agent
//! (managed containerd, the local pause and busybox images), the scheduler
//! and every controller, plus a guard that removes what containerd leaves
//! on the host (shims, mounts) however the test ends.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::{run_rkube, TestServer, TestServerOptions};

/// Removes the agent's host state (containerd's shims and mounts, the pod
/// bridge, its pods' logs, the cgroup parent of the node named by the
/// second field unless empty) on drop.
pub struct HostCleanup(pub PathBuf, pub String);

impl Drop for HostCleanup {
    fn drop(&mut self) {
        teardown_host(&self.0);
        if !self.1.is_empty() {
            rkube_kubelet::host::remove_cgroup_tree(&format!("rkube-{}", self.1));
        }
    }
}

/// Removes what an agent with `data_dir` made on this host — containerd's
/// shims and mounts, the pod bridge and logs, the node network's routes,
/// device and nft tables, and the node's cgroup parent — with `rkube killall`.
pub fn teardown_host(data_dir: &Path) {
    let out = run_rkube(&["killall", "--data-dir", &data_dir.to_string_lossy()], Duration::from_secs(60));
    if !out.status.success() {
        eprintln!("rkube killall --data-dir {}: {}", data_dir.display(), String::from_utf8_lossy(&out.stderr));
    }
}

/// A running one-node cluster; drop order stops the server before the host cleanup.
pub struct NodeCluster {
    /// The server (API, scheduler, controllers, agent).
    pub server: TestServer,
    /// The node's name.
    pub node: String,
    /// `docker.io/library/busybox:<host busybox version>`.
    pub busybox: String,
    _cleanup: HostCleanup,
    _tmp: tempfile::TempDir,
}

impl NodeCluster {
    /// Builds the local images into a fresh data dir, starts the server with
    /// its agent and `extra_args`, and waits (up to 90 s) for the node to be Ready.
    pub fn start(extra_args: &[&str]) -> NodeCluster {
        NodeCluster::start_with_env(extra_args, &[])
    }

    /// [`NodeCluster::start`] with environment variables for the server process.
    pub fn start_with_env(extra_args: &[&str], env: &[(&str, &str)]) -> NodeCluster {
        super::require_root_and_runtime();
        let tmp = tempfile::Builder::new().prefix("rkube-node-").tempdir().unwrap();
        let data_dir = tmp.path().to_path_buf();
        let node = format!("node-{}", &data_dir.file_name().unwrap().to_string_lossy().to_lowercase()[11..]);
        let node: String = node.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
        let cleanup = HostCleanup(data_dir.clone(), node.clone());
        // Nothing runs yet: build-local leaves the archives the agent imports at start.
        let out =
            run_rkube(&["images", "build-local", "--data-dir", &data_dir.to_string_lossy()], Duration::from_secs(120));
        assert!(out.status.success(), "rkube images build-local: {}", String::from_utf8_lossy(&out.stderr));
        let version = rkube_kubelet::images::busybox_version(Path::new(rkube_kubelet::images::HOST_BUSYBOX)).unwrap();
        let mut args: Vec<String> = vec!["--node-name".into(), node.clone()];
        args.extend(extra_args.iter().map(|s| s.to_string()));
        let server = TestServer::start_with(TestServerOptions {
            agent: true,
            scheduler: true,
            controllers: true,
            data_dir: Some(data_dir),
            extra_args: args,
            env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            ..Default::default()
        });
        let cluster = NodeCluster {
            server,
            node,
            busybox: format!("docker.io/library/busybox:{version}"),
            _cleanup: cleanup,
            _tmp: tmp,
        };
        let node = cluster.node.clone();
        cluster.server.wait_for(Duration::from_secs(90), "the node to be Ready", || {
            let out = cluster.server.kubectl(&["get", "node", &node, "-o", "json"]);
            out.status.success()
                && serde_json::from_slice::<Value>(&out.stdout).ok().is_some_and(|n| {
                    n["status"]["conditions"]
                        .as_array()
                        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
                })
        });
        // The default ServiceAccount exists once the namespace's controller ran.
        cluster.server.wait_for(Duration::from_secs(30), "the default ServiceAccount", || {
            cluster.server.kubectl(&["get", "serviceaccount", "default"]).status.success()
        });
        cluster
    }

    /// The pod `name` (default namespace) as JSON, or Null when absent.
    pub fn pod(&self, name: &str) -> Value {
        let out = self.server.kubectl(&["get", "pod", name, "-o", "json"]);
        if !out.status.success() {
            return Value::Null;
        }
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
    }

    /// Waits until pod `name` satisfies `f`; returns it.
    pub fn wait_pod(&self, name: &str, timeout: Duration, what: &str, f: impl Fn(&Value) -> bool) -> Value {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let last = self.pod(name);
            if f(&last) {
                return last;
            }
            if std::time::Instant::now() > deadline {
                panic!(
                    "timed out after {timeout:?} waiting for pod {name}: {what}\nlast seen: {}\nevents: {:?}\n{}",
                    last["status"],
                    self.pod_events(name),
                    self.server.logs()
                );
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// The reasons of the events about pod `name`, oldest first.
    pub fn pod_event_reasons(&self, name: &str) -> Vec<String> {
        let selector = format!("involvedObject.name={name}");
        let list = self.server.get_json(&[
            "events",
            "--field-selector",
            &selector,
            "--sort-by",
            ".metadata.creationTimestamp",
        ]);
        list["items"].as_array().unwrap().iter().map(|e| e["reason"].as_str().unwrap_or("").to_string()).collect()
    }

    /// The events about pod `name` as (reason, message), oldest first.
    pub fn pod_events(&self, name: &str) -> Vec<(String, String)> {
        let selector = format!("involvedObject.name={name}");
        let list = self.server.get_json(&[
            "events",
            "--field-selector",
            &selector,
            "--sort-by",
            ".metadata.creationTimestamp",
        ]);
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["reason"].as_str().unwrap_or("").to_string(), e["message"].as_str().unwrap_or("").to_string()))
            .collect()
    }
}

/// The condition `type_` of a pod or node JSON (Null when absent).
pub fn condition<'a>(obj: &'a Value, type_: &str) -> &'a Value {
    obj["status"]["conditions"].as_array().and_then(|cs| cs.iter().find(|c| c["type"] == type_)).unwrap_or(&Value::Null)
}
