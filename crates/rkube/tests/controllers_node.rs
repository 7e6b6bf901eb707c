//! The node controllers inside `rkube server`, driven with the real
//! kubectl and no kubelet (the test plays the kubelet: it posts node
//! status and renews the node's Lease in `kube-node-lease`):
//!
//! - taint eviction: pods on a node with a NoExecute taint they do not
//!   tolerate are deleted (DisruptionTarget `DeletionByTaintManager` first),
//!   tolerating ones after their `tolerationSeconds`, and removing the
//!   taint cancels a pending eviction;
//! - node lifecycle: a node whose heartbeats stop is Unknown after
//!   `--node-monitor-grace-period`, tainted unreachable (NoSchedule and
//!   NoExecute), its pods marked not Ready; heartbeats again undo it;
//! - node IPAM: each node gets its own /24 of `--cluster-cidr`;
//!   `CIDRNotAvailable` when none is left; a deleted node's range is reused.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::jiff::{Timestamp, Unit};
use serde_json::{json, Value};
use support::{TestServer, TestServerOptions};

fn start(controllers: &str, extra: &[&str]) -> TestServer {
    let mut extra_args = vec!["--controllers".to_string(), controllers.to_string()];
    extra_args.extend(extra.iter().map(|s| s.to_string()));
    TestServer::start_with(TestServerOptions { extra_args, ..Default::default() })
}

fn kubectl_ok(server: &TestServer, args: &[&str]) -> String {
    let out = server.kubectl(args);
    assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// `kubectl create -f` of a JSON object.
fn create(server: &TestServer, obj: &Value) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("obj.json");
    std::fs::write(&path, obj.to_string()).unwrap();
    kubectl_ok(server, &["create", "-f", path.to_str().unwrap()]);
}

fn get(server: &TestServer, args: &[&str]) -> Option<Value> {
    let mut full = vec!["get", "-o", "json"];
    full.extend_from_slice(args);
    let out = server.kubectl(&full);
    out.status.success().then(|| serde_json::from_slice(&out.stdout).unwrap())
}

/// Polls `kubectl get -o json <args>` until `check` holds (up to `secs`).
fn eventually(server: &TestServer, args: &[&str], secs: u64, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = get(server, args) {
            if check(&v) {
                return v;
            }
        }
        assert!(Instant::now() < deadline, "{what} did not happen within {secs}s; server log:\n{}", server.logs());
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn now_seconds() -> String {
    Timestamp::now().round(Unit::Second).unwrap().to_string()
}

fn now_micros() -> String {
    Timestamp::now().round(Unit::Microsecond).unwrap().to_string()
}

fn node(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
}

/// Posts Ready True with a fresh heartbeat, as the kubelet does.
fn post_ready(server: &TestServer, name: &str) {
    let now = now_seconds();
    let patch = json!({"status": {"conditions": [
        {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
         "lastHeartbeatTime": now, "lastTransitionTime": now},
    ]}});
    kubectl_ok(server, &["patch", "node", name, "--subresource=status", "--type=merge", "-p", &patch.to_string()]);
}

fn renew_lease(server: &TestServer, name: &str) {
    let patch = json!({"spec": {"renewTime": now_micros()}});
    kubectl_ok(server, &["-n", "kube-node-lease", "patch", "lease", name, "--type=merge", "-p", &patch.to_string()]);
}

fn create_lease(server: &TestServer, name: &str) {
    create(
        server,
        &json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": "kube-node-lease"},
            "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": now_micros()}}),
    );
}

fn pod(name: &str, node: &str, tolerations: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": node, "tolerations": tolerations,
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}})
}

/// Makes the pod Running and Ready through the status subresource.
fn pod_ready(server: &TestServer, name: &str) {
    let patch = json!({"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}});
    kubectl_ok(server, &["patch", "pod", name, "--subresource=status", "--type=merge", "-p", &patch.to_string()]);
}

fn terminating(p: &Value) -> bool {
    p["metadata"]["deletionTimestamp"].is_string()
}

fn condition<'a>(obj: &'a Value, type_: &str) -> Option<&'a Value> {
    obj["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == type_)
}

fn taint_keys(n: &Value) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = n["spec"]["taints"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| (t["key"].as_str().unwrap_or("").to_string(), t["effect"].as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The events about `name` with `reason`.
fn events_for(server: &TestServer, ns: &str, name: &str, reason: &str) -> Vec<Value> {
    let v = get(server, &["-n", ns, "events"]).unwrap();
    v["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["involvedObject"]["name"] == name && e["reason"] == reason)
        .cloned()
        .collect()
}

fn toleration(key: &str, seconds: Option<i64>) -> Value {
    let mut t = json!({"key": key, "operator": "Exists", "effect": "NoExecute"});
    if let Some(s) = seconds {
        t["tolerationSeconds"] = json!(s);
    }
    t
}

/// Conformance "Pod Eviction, Toleration limits" and "Taint, Pod Eviction
/// on taint removal" (test/e2e/node/taints.go): a pod not tolerating a
/// NoExecute taint is deleted at once, one tolerating it for N seconds
/// after N seconds, one tolerating it without limit stays; removing the
/// taint before the time runs out cancels the eviction.
#[test]
fn taint_pod_eviction_toleration_limits_and_eviction_cancelled_on_taint_removal() {
    let server = start("serviceaccount-controller,taint-eviction-controller", &[]);
    create(&server, &node("n1"));
    create(&server, &node("n2"));
    let key = "kubernetes.io/e2e-evict-taint-key";
    create(&server, &pod("none", "n1", json!([])));
    create(&server, &pod("short", "n1", json!([toleration(key, Some(6))])));
    create(&server, &pod("forever", "n1", json!([toleration(key, None)])));
    create(&server, &pod("cancel", "n2", json!([toleration(key, Some(8))])));

    let tainted = Instant::now();
    kubectl_ok(&server, &["taint", "node", "n1", &format!("{key}=evictTaintVal:NoExecute")]);
    kubectl_ok(&server, &["taint", "node", "n2", &format!("{key}=evictTaintVal:NoExecute")]);

    // Not tolerated: deleted right away, with the taint manager's condition.
    let p = eventually(&server, &["pod", "none"], 30, "eviction of the pod without toleration", terminating);
    let c = condition(&p, "DisruptionTarget").expect("DisruptionTarget condition");
    assert_eq!(c["status"], "True");
    assert_eq!(c["reason"], "DeletionByTaintManager");
    assert_eq!(c["message"], "Taint manager: deleting due to NoExecute taint");
    let marked = events_for(&server, "default", "none", "TaintManagerEviction");
    assert!(marked.iter().any(|e| e["message"] == "Marking for deletion Pod default/none"), "{marked:?}");

    // Removing the taint on n2 before its 8 s cancels that eviction.
    std::thread::sleep(Duration::from_secs(2));
    kubectl_ok(&server, &["taint", "node", "n2", &format!("{key}:NoExecute-")]);

    // Tolerated for 6 s: deleted, not before.
    eventually(&server, &["pod", "short"], 40, "eviction after tolerationSeconds", terminating);
    assert!(tainted.elapsed() >= Duration::from_secs(6), "evicted after {:?}", tainted.elapsed());

    // Past the 8 s of the cancelled one (and more): nothing else deleted.
    while tainted.elapsed() < Duration::from_secs(14) {
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(!terminating(&get(&server, &["pod", "forever"]).unwrap()), "a pod tolerating forever was evicted");
    assert!(!terminating(&get(&server, &["pod", "cancel"]).unwrap()), "the eviction was not cancelled");
    let cancelled = events_for(&server, "default", "cancel", "TaintManagerEviction");
    assert!(cancelled.iter().any(|e| e["message"] == "Cancelling deletion of Pod default/cancel"), "{cancelled:?}");
}

/// A node whose kubelet stops (no status, no Lease renewal) is Unknown
/// after the grace period, tainted unreachable NoSchedule and NoExecute,
/// its pods marked not Ready and evicted per their tolerations (the
/// DefaultTolerationSeconds 300 s keeps the others); heartbeats again
/// bring it back and remove the taints. A second node keeps beating so
/// the zone is not fully disrupted (upstream stops evicting then).
#[test]
fn a_node_whose_lease_stops_is_unknown_after_the_grace_period_tainted_and_its_pods_evicted() {
    let server = start(
        "serviceaccount-controller,node-lifecycle-controller,taint-eviction-controller",
        &["--node-monitor-grace-period", "5s", "--node-monitor-period", "1s"],
    );
    for n in ["healthy", "lost"] {
        create(&server, &node(n));
        post_ready(&server, n);
        create_lease(&server, n);
    }
    // Pods on "lost": one leaving 1 s after the taint, one with the admission's default 300 s.
    create(&server, &pod("quick", "lost", json!([toleration("node.kubernetes.io/unreachable", Some(1))])));
    create(&server, &pod("patient", "lost", json!([])));
    create(&server, &pod("elsewhere", "healthy", json!([])));
    for p in ["quick", "patient", "elsewhere"] {
        pod_ready(&server, p);
    }
    let defaulted = get(&server, &["pod", "patient"]).unwrap();
    assert!(
        defaulted["spec"]["tolerations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| { t["key"] == "node.kubernetes.io/unreachable" && t["tolerationSeconds"] == 300 }),
        "DefaultTolerationSeconds: {defaulted}"
    );

    // The test's kubelets: both beat until "lost" stops.
    let lost_alive = Arc::new(AtomicBool::new(true));
    let done = Arc::new(AtomicBool::new(false));
    let beat = {
        let (lost_alive, done) = (lost_alive.clone(), done.clone());
        let kubeconfig = server.kubeconfig();
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                for n in ["healthy", "lost"] {
                    if n == "lost" && !lost_alive.load(Ordering::SeqCst) {
                        continue;
                    }
                    let patch = json!({"spec": {"renewTime": now_micros()}}).to_string();
                    let _ = std::process::Command::new(support::KUBECTL)
                        .args(["--kubeconfig", kubeconfig.to_str().unwrap()])
                        .args(["-n", "kube-node-lease", "patch", "lease", n, "--type=merge", "-p", &patch])
                        .output();
                }
                std::thread::sleep(Duration::from_millis(1000));
            }
        })
    };

    // Still Ready while the Lease is renewed, past the grace period.
    std::thread::sleep(Duration::from_secs(8));
    let n = get(&server, &["node", "lost"]).unwrap();
    assert_eq!(condition(&n, "Ready").unwrap()["status"], "True", "{n}");
    assert!(taint_keys(&n).is_empty(), "{n}");

    lost_alive.store(false, Ordering::SeqCst);
    let stopped = Instant::now();
    let n = eventually(&server, &["node", "lost"], 40, "Ready Unknown", |n| {
        condition(n, "Ready").is_some_and(|c| c["status"] == "Unknown")
    });
    assert!(stopped.elapsed() >= Duration::from_secs(4), "Unknown after {:?}", stopped.elapsed());
    let ready = condition(&n, "Ready").unwrap();
    assert_eq!(ready["reason"], "NodeStatusUnknown");
    assert_eq!(ready["message"], "Kubelet stopped posting node status.");
    for c in ["MemoryPressure", "DiskPressure", "PIDPressure"] {
        let c = condition(&n, c).unwrap_or_else(|| panic!("{c} missing: {n}"));
        assert_eq!((c["status"].as_str(), c["reason"].as_str()), (Some("Unknown"), Some("NodeStatusNeverUpdated")));
    }
    let n = eventually(&server, &["node", "lost"], 30, "unreachable taints", |n| taint_keys(n).len() == 2);
    assert_eq!(
        taint_keys(&n),
        [
            ("node.kubernetes.io/unreachable".to_string(), "NoExecute".to_string()),
            ("node.kubernetes.io/unreachable".to_string(), "NoSchedule".to_string())
        ]
    );
    let ev = events_for(&server, "default", "lost", "NodeNotReady");
    assert!(
        ev.iter().any(|e| e["message"] == "Node lost status is now: NodeNotReady" && e["type"] == "Normal"),
        "{ev:?}"
    );

    // Its pods are not Ready any more; the 1 s one is evicted, the 300 s one stays.
    eventually(&server, &["pod", "patient"], 30, "pod marked not ready", |p| {
        condition(p, "Ready").is_some_and(|c| c["status"] == "False")
    });
    let ev = events_for(&server, "default", "patient", "NodeNotReady");
    assert!(ev.iter().any(|e| e["message"] == "Node is not ready" && e["type"] == "Warning"), "{ev:?}");
    let p = eventually(&server, &["pod", "quick"], 30, "eviction after 1 s", terminating);
    assert_eq!(condition(&p, "DisruptionTarget").unwrap()["reason"], "DeletionByTaintManager");
    let healthy = get(&server, &["node", "healthy"]).unwrap();
    assert_eq!(condition(&healthy, "Ready").unwrap()["status"], "True");
    assert!(taint_keys(&healthy).is_empty(), "{healthy}");
    let elsewhere = get(&server, &["pod", "elsewhere"]).unwrap();
    assert_eq!(condition(&elsewhere, "Ready").unwrap()["status"], "True");

    // The kubelet is back: Ready as it reports, taints gone, the pending eviction cancelled.
    lost_alive.store(true, Ordering::SeqCst);
    renew_lease(&server, "lost");
    post_ready(&server, "lost");
    let n = eventually(&server, &["node", "lost"], 30, "taints removed", |n| taint_keys(n).is_empty());
    assert_eq!(condition(&n, "Ready").unwrap()["status"], "True");
    assert!(!terminating(&get(&server, &["pod", "patient"]).unwrap()));
    let cancelled = events_for(&server, "default", "patient", "TaintManagerEviction");
    assert!(cancelled.iter().any(|e| e["message"] == "Cancelling deletion of Pod default/patient"), "{cancelled:?}");
    done.store(true, Ordering::SeqCst);
    beat.join().unwrap();
}

/// Node IPAM's range allocator: each node gets its own /24 of
/// `--cluster-cidr` (the default `--node-cidr-mask-size` for IPv4) in both
/// `spec.podCIDR` and `spec.podCIDRs`; with none left the node gets the
/// event CIDRNotAvailable; a deleted node's range goes to the next one.
#[test]
fn nodes_get_distinct_pod_cidrs_and_cidr_not_available_when_exhausted() {
    let server = start("serviceaccount-controller,node-ipam-controller", &["--cluster-cidr", "10.42.0.0/23"]);
    create(&server, &node("a"));
    let a = eventually(&server, &["node", "a"], 30, "podCIDR of a", |n| n["spec"]["podCIDR"].is_string());
    create(&server, &node("b"));
    let b = eventually(&server, &["node", "b"], 30, "podCIDR of b", |n| n["spec"]["podCIDR"].is_string());
    let (ca, cb) = (a["spec"]["podCIDR"].as_str().unwrap(), b["spec"]["podCIDR"].as_str().unwrap());
    let mut both = [ca, cb];
    both.sort();
    assert_eq!(both, ["10.42.0.0/24", "10.42.1.0/24"]);
    assert_eq!(a["spec"]["podCIDRs"], json!([ca]));
    assert_eq!(b["spec"]["podCIDRs"], json!([cb]));

    create(&server, &node("c"));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ev = events_for(&server, "default", "c", "CIDRNotAvailable");
        if let Some(e) = ev.first() {
            assert_eq!(e["message"], "Node c status is now: CIDRNotAvailable");
            assert_eq!(e["type"], "Normal");
            assert_eq!(e["source"]["component"], "node-ipam-controller");
            break;
        }
        assert!(Instant::now() < deadline, "no CIDRNotAvailable event; log:\n{}", server.logs());
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(get(&server, &["node", "c"]).unwrap()["spec"]["podCIDR"].is_null());

    kubectl_ok(&server, &["delete", "node", "a"]);
    let c =
        eventually(&server, &["node", "c"], 30, "podCIDR of c after a is gone", |n| n["spec"]["podCIDR"].is_string());
    assert_eq!(c["spec"]["podCIDR"], ca);
}

/// After a restart the allocator first takes the ranges nodes already
/// have: with every range in use a new node gets none (not a duplicate).
#[test]
fn node_ipam_reoccupies_existing_ranges_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let options = TestServerOptions {
        data_dir: Some(dir.path().to_path_buf()),
        extra_args: [
            "--controllers",
            "serviceaccount-controller,node-ipam-controller",
            "--cluster-cidr",
            "10.42.0.0/23",
        ]
        .map(String::from)
        .to_vec(),
        ..Default::default()
    };
    let mut server = TestServer::start_with(options.clone());
    create(&server, &node("a"));
    eventually(&server, &["node", "a"], 30, "podCIDR of a", |n| n["spec"]["podCIDR"].is_string());
    server.stop();
    drop(server);

    let server = TestServer::start_with(options);
    create(&server, &node("b"));
    let b = eventually(&server, &["node", "b"], 30, "podCIDR of b", |n| n["spec"]["podCIDR"].is_string());
    let a = get(&server, &["node", "a"]).unwrap();
    assert_ne!(a["spec"]["podCIDR"], b["spec"]["podCIDR"]);
    create(&server, &node("c"));
    let deadline = Instant::now() + Duration::from_secs(30);
    while events_for(&server, "default", "c", "CIDRNotAvailable").is_empty() {
        assert!(Instant::now() < deadline, "no CIDRNotAvailable for c; log:\n{}", server.logs());
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(get(&server, &["node", "c"]).unwrap()["spec"]["podCIDR"].is_null());
}

/// A node that never posts its status is Unknown after
/// `--node-startup-grace-period` ("Kubelet never posted node status."),
/// and NoExecute taints in a zone go on at `--node-eviction-rate` nodes a
/// second (a token bucket of burst 1: the first at once, the next 1/rate
/// later).
#[test]
fn silent_nodes_are_unknown_after_the_startup_grace_period_and_tainted_at_the_eviction_rate() {
    let server = start(
        "serviceaccount-controller,node-lifecycle-controller",
        &["--node-startup-grace-period", "3s", "--node-monitor-period", "1s", "--node-eviction-rate", "0.2"],
    );
    // One healthy node keeps the zone out of full disruption (the default 50 s grace outlasts the test).
    create(&server, &node("up"));
    post_ready(&server, "up");
    create(&server, &node("s1"));
    create(&server, &node("s2"));
    let mut added = Vec::new();
    for n in ["s1", "s2"] {
        let v = eventually(&server, &["node", n], 40, "NoExecute taint on a silent node", |v| {
            taint_keys(v).contains(&("node.kubernetes.io/unreachable".to_string(), "NoExecute".to_string()))
        });
        let ready = condition(&v, "Ready").unwrap();
        assert_eq!(ready["status"], "Unknown");
        assert_eq!(ready["reason"], "NodeStatusNeverUpdated");
        assert_eq!(ready["message"], "Kubelet never posted node status.");
        assert_eq!(ready["lastHeartbeatTime"], v["metadata"]["creationTimestamp"]);
        let t = v["spec"]["taints"].as_array().unwrap().iter().find(|t| t["effect"] == "NoExecute").unwrap().clone();
        let at: Timestamp = t["timeAdded"].as_str().unwrap().parse().unwrap();
        added.push(at);
    }
    let gap = (added[1] - added[0]).abs().get_seconds();
    assert!(gap >= 4, "NoExecute taints {gap}s apart; at 0.2 nodes/s they must be about 5s apart");
    let up = get(&server, &["node", "up"]).unwrap();
    assert!(taint_keys(&up).is_empty(), "{up}");
}
