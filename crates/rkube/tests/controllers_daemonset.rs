//! The DaemonSet controller inside `rkube server`, driven with the real
//! kubectl. No scheduler or kubelet runs: Nodes are registered as a
//! kubelet would (`add_ready_node`) and a background thread plays the
//! kubelet, marking pods Running and Ready through the status subresource
//! when allowed.
//!
//! Expected behaviour is upstream's (`pkg/controller/daemon`): one pod per
//! eligible node (nodeSelector, node affinity and NoSchedule/NoExecute
//! taints decide), pinned by a required node affinity term `matchFields
//! metadata.name In [node]`, carrying the DaemonSet default tolerations;
//! pods follow nodes joining and leaving eligibility; RollingUpdate
//! replaces at most `maxUnavailable` (1) pods at a time; events worded as
//! upstream's `RealPodControl` ("Created pod: NAME").

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{json, Value};
use support::{TestServer, TestServerOptions};

const WAIT: Duration = Duration::from_secs(90);

fn start() -> TestServer {
    TestServer::start_with(TestServerOptions {
        extra_args: vec!["--controllers".into(), "serviceaccount-controller,daemonset-controller".into()],
        ..Default::default()
    })
}

/// The fake kubelet: what it may do.
struct Kubelet {
    stop: AtomicBool,
    make_ready: AtomicBool,
    finish_deletions: AtomicBool,
}

impl Kubelet {
    /// Until stopped: pods not Ready (nor Failed) become Running/Ready
    /// when `make_ready` is set; terminating pods are removed when
    /// `finish_deletions` is set.
    fn run(&self, server: &TestServer) {
        while !self.stop.load(Ordering::SeqCst) {
            let out = server.kubectl(&["get", "pods", "-o", "json"]);
            if out.status.success() {
                let list: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
                for p in list["items"].as_array().into_iter().flatten() {
                    let name = p["metadata"]["name"].as_str().unwrap_or("");
                    if !p["metadata"]["deletionTimestamp"].is_null() {
                        if self.finish_deletions.load(Ordering::SeqCst) {
                            server.kubectl(&["delete", "pod", name, "--grace-period=0", "--force"]);
                        }
                        continue;
                    }
                    // A failed pod stays failed: kubelets do not revive them.
                    let failed = p["status"]["phase"] == "Failed";
                    if failed || is_ready(p) || !self.make_ready.load(Ordering::SeqCst) {
                        continue;
                    }
                    mark_ready(server, name);
                }
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    }
}

fn is_ready(p: &Value) -> bool {
    p["status"]["conditions"]
        .as_array()
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

fn mark_ready(server: &TestServer, pod: &str) {
    let patch = r#"{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}"#;
    server.kubectl(&["patch", "pod", pod, "--subresource=status", "--type=merge", "-p", patch]);
}

/// Runs `body` with the fake kubelet running beside it.
fn with_kubelet(server: &TestServer, make_ready: bool, body: impl FnOnce(&Kubelet)) {
    let kubelet = Kubelet {
        stop: AtomicBool::new(false),
        make_ready: AtomicBool::new(make_ready),
        finish_deletions: AtomicBool::new(true),
    };
    std::thread::scope(|s| {
        s.spawn(|| kubelet.run(server));
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&kubelet)));
        kubelet.stop.store(true, Ordering::SeqCst);
        if let Err(e) = r {
            std::panic::resume_unwind(e);
        }
    });
}

/// The node each live pod of the namespace is pinned to, with its image.
fn pods_by_node(server: &TestServer) -> Vec<(String, String, String)> {
    let list = server.get_json(&["pods"]);
    let mut out: Vec<(String, String, String)> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .map(|p| {
            let term = &p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                ["nodeSelectorTerms"][0]["matchFields"][0];
            assert_eq!((term["key"].as_str(), term["operator"].as_str()), (Some("metadata.name"), Some("In")), "{p}");
            (
                term["values"][0].as_str().unwrap().to_string(),
                p["metadata"]["name"].as_str().unwrap().to_string(),
                p["spec"]["containers"][0]["image"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

fn nodes_of(server: &TestServer) -> Vec<String> {
    pods_by_node(server).into_iter().map(|(n, _, _)| n).collect()
}

// Conformance "DaemonSet-Creation" and "DaemonSet-NodeSelection": one pod
// per eligible node, following node labels; "DaemonSet-RollingUpdate":
// pods replaced on update, one node at a time.
#[test]
fn daemonset_runs_on_eligible_nodes_and_rolls_one_at_a_time() {
    let server = start();
    server.add_ready_node("n1", json!({"ds": "yes"}), json!([]));
    server.add_ready_node(
        "n2",
        json!({"ds": "yes"}),
        json!([{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]),
    );
    server.add_ready_node("n3", json!({}), json!([]));
    server.create(&json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "agent"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {"nodeSelector": {"ds": "yes"}, "containers": [{"name": "a", "image": "agent:1"}]}
            }
        }
    }));
    with_kubelet(&server, true, |kubelet| {
        server.wait_for(WAIT, "a pod on n1", || nodes_of(&server) == ["n1"]);
        std::thread::sleep(Duration::from_secs(2));
        assert_eq!(nodes_of(&server), ["n1"], "only n1 is eligible (n2 tainted, n3 unlabelled)");
        let pod = &server.get_json(&["pods"])["items"][0];
        assert_eq!(pod["metadata"]["generateName"], "agent-");
        assert_eq!(pod["metadata"]["ownerReferences"][0]["kind"], "DaemonSet");
        assert!(pod["metadata"]["labels"]["controller-revision-hash"].is_string());
        let tolerations: Vec<(String, String)> = pod["spec"]["tolerations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                assert_eq!(t["operator"], "Exists");
                assert!(t["tolerationSeconds"].is_null());
                (t["key"].as_str().unwrap().to_string(), t["effect"].as_str().unwrap().to_string())
            })
            .collect();
        for (k, e) in [
            ("node.kubernetes.io/not-ready", "NoExecute"),
            ("node.kubernetes.io/unreachable", "NoExecute"),
            ("node.kubernetes.io/disk-pressure", "NoSchedule"),
            ("node.kubernetes.io/memory-pressure", "NoSchedule"),
            ("node.kubernetes.io/pid-pressure", "NoSchedule"),
            ("node.kubernetes.io/unschedulable", "NoSchedule"),
        ] {
            assert!(tolerations.contains(&(k.to_string(), e.to_string())), "{k}:{e} missing from {tolerations:?}");
        }
        let name = pod["metadata"]["name"].as_str().unwrap().to_string();
        let ev = server.kubectl_ok(&[
            "get",
            "events",
            "-o",
            "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}",
        ]);
        assert!(ev.contains(&format!("SuccessfulCreate: Created pod: {name}")), "{ev}");

        // A new eligible node gets a pod; labelling n3 makes it eligible too.
        server.add_ready_node("n4", json!({"ds": "yes"}), json!([]));
        server.kubectl_ok(&["label", "node", "n3", "ds=yes"]);
        server.wait_for(WAIT, "pods on n1, n3, n4", || nodes_of(&server) == ["n1", "n3", "n4"]);
        // Removing the label removes the pod.
        server.kubectl_ok(&["label", "node", "n3", "ds-"]);
        server.wait_for(WAIT, "pods on n1, n4", || nodes_of(&server) == ["n1", "n4"]);
        server.kubectl_ok(&["rollout", "status", "daemonset/agent", "--timeout=90s"]);
        let st = server.get_json(&["daemonset", "agent"])["status"].clone();
        assert_eq!(st["desiredNumberScheduled"], 2, "{st}");
        assert_eq!(st["currentNumberScheduled"], 2, "{st}");
        assert_eq!(st["numberReady"], 2, "{st}");
        assert_eq!(st["numberAvailable"], 2, "{st}");
        assert_eq!(st["updatedNumberScheduled"], 2, "{st}");
        assert_eq!(st["numberMisscheduled"], 0, "{st}");

        // Rolling update, maxUnavailable 1: with pods kept unready, only
        // one of the two old pods is replaced.
        kubelet.make_ready.store(false, Ordering::SeqCst);
        server.kubectl_ok(&["set", "image", "daemonset/agent", "a=agent:2"]);
        server.wait_for(WAIT, "one pod updated", || {
            pods_by_node(&server).iter().filter(|(_, _, i)| i == "agent:2").count() == 1
        });
        std::thread::sleep(Duration::from_secs(3));
        let images: Vec<String> = pods_by_node(&server).into_iter().map(|(_, _, i)| i).collect();
        assert_eq!(images.iter().filter(|i| *i == "agent:1").count(), 1, "{images:?}");
        kubelet.make_ready.store(true, Ordering::SeqCst);
        server.kubectl_ok(&["rollout", "status", "daemonset/agent", "--timeout=90s"]);
        let images: Vec<String> = pods_by_node(&server).into_iter().map(|(_, _, i)| i).collect();
        assert_eq!(images, ["agent:2", "agent:2"]);
        let history = server.kubectl_ok(&["rollout", "history", "daemonset/agent"]);
        let numbers: Vec<&str> = history
            .lines()
            .skip_while(|l| !l.starts_with("REVISION"))
            .skip(1)
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        assert_eq!(numbers, ["1", "2"], "{history}");

        // Conformance "DaemonSet-Rollback": undo brings agent:1 back, its
        // revision renumbered to 3.
        server.kubectl_ok(&["rollout", "undo", "daemonset/agent"]);
        server.wait_for(WAIT, "rolled back", || {
            pods_by_node(&server).iter().map(|(_, _, i)| i.as_str()).collect::<Vec<_>>() == ["agent:1", "agent:1"]
        });
        server.kubectl_ok(&["rollout", "status", "daemonset/agent", "--timeout=90s"]);
        let revs = server.get_json(&["controllerrevisions", "-l", "app=agent"]);
        let mut numbers: Vec<i64> =
            revs["items"].as_array().unwrap().iter().map(|r| r["revision"].as_i64().unwrap()).collect();
        numbers.sort();
        assert_eq!(numbers, [2, 3]);

        // Conformance "DaemonSet-FailedPodCreation": a failed pod is
        // deleted and replaced on its node.
        let (node, failed, _) = pods_by_node(&server)[0].clone();
        let patch = r#"{"status":{"phase":"Failed","conditions":[{"type":"Ready","status":"False"}]}}"#;
        server.kubectl_ok(&["patch", "pod", &failed, "--subresource=status", "--type=merge", "-p", patch]);
        server.wait_for(WAIT, "the failed pod replaced", || {
            let now = pods_by_node(&server);
            now.len() == 2
                && now.iter().any(|(n, p, _)| *n == node && *p != failed)
                && !now.iter().any(|(_, p, _)| *p == failed)
        });
        let ev = server.kubectl_ok(&[
            "get",
            "events",
            "-o",
            "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}",
        ]);
        let want =
            format!("FailedDaemonPod: Found failed daemon pod default/{failed} on node {node}, will try to kill it");
        assert!(ev.contains(&want), "{ev}");
    });
}
