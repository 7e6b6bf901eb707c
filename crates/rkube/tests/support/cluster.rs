//! What tests that build a cluster through kubectl share: kubectl calls
//! that must succeed, objects created from JSON, polling with a deadline,
//! and Node objects registered as a kubelet would register them.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{TestServer, KUBECTL};

impl TestServer {
    /// Runs kubectl and returns its stdout; panics with its stderr and the
    /// server's log when it fails.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(out.status.success(), "kubectl {args:?}: {}\n{}", String::from_utf8_lossy(&out.stderr), self.logs());
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `kubectl <verb> -f -` with `obj` on stdin (verb: create, apply,
    /// replace…); panics when kubectl fails.
    pub fn kubectl_stdin(&self, verb: &str, obj: &Value) -> String {
        let mut child = Command::new(KUBECTL)
            .arg("--kubeconfig")
            .arg(self.kubeconfig())
            .args([verb, "-f", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kubectl runs");
        child.stdin.take().expect("stdin").write_all(obj.to_string().as_bytes()).expect("write stdin");
        let out = child.wait_with_output().expect("kubectl finishes");
        assert!(out.status.success(), "kubectl {verb} {obj}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `kubectl create -f -` of `obj`.
    pub fn create(&self, obj: &Value) {
        self.kubectl_stdin("create", obj);
    }

    /// `kubectl get <args> -o json`, parsed.
    pub fn get_json(&self, args: &[&str]) -> Value {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", "json"]);
        serde_json::from_str(&self.kubectl_ok(&all)).expect("kubectl prints JSON")
    }

    /// Polls `f` every 250 ms until it holds; panics after `timeout` with
    /// `what` and the server's log.
    pub fn wait_for(&self, timeout: Duration, what: &str, mut f: impl FnMut() -> bool) {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if f() {
                return;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        panic!("timed out after {timeout:?} waiting for {what}\n{}", self.logs());
    }

    /// Registers a 2-CPU, 4 GiB node as a kubelet does (the object with its
    /// hostname label and `taints`, then a Ready status) and clears the
    /// not-ready taint as the node lifecycle controller does once the node
    /// is Ready.
    pub fn add_ready_node(&self, name: &str, labels: Value, taints: Value) {
        let mut labels = labels;
        labels["kubernetes.io/hostname"] = json!(name);
        self.create(&json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels}, "spec": {"taints": taints}}));
        let status = json!({"status": {
            "capacity": {"cpu": "2", "memory": "4Gi", "pods": "110"},
            "allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                "message": "kubelet is posting ready status"}]
        }});
        self.kubectl_ok(&["patch", "node", name, "--subresource=status", "--type=merge", "-p", &status.to_string()]);
        self.kubectl_ok(&["taint", "nodes", name, "node.kubernetes.io/not-ready:NoSchedule-"]);
    }
}
