//! The resource metrics API (issue 6 item 13, issue 9 item 3): the API
//! server's built-in metrics-server scrapes the real kubelet's
//! `/metrics/resource` every `--metric-resolution` (shortened to 2 s here)
//! and serves `metrics.k8s.io/v1beta1`, so the real `kubectl top nodes`
//! and `kubectl top pods` work as against a cluster running upstream's
//! metrics-server. Runs as root with containerd, like kubelet_pods.rs.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::node::{condition, NodeCluster};

/// `kubectl top` output as rows of whitespace-separated cells, header
/// first.
fn rows(out: &str) -> Vec<Vec<String>> {
    out.lines().map(|l| l.split_whitespace().map(str::to_string).collect()).collect()
}

/// `123m` → 123 (millicores as kubectl top prints them).
fn millicores(cell: &str) -> u64 {
    cell.strip_suffix('m').and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("not millicores: {cell:?}"))
}

/// `45Mi` → 45.
fn mebibytes(cell: &str) -> u64 {
    cell.strip_suffix("Mi").and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("not Mi: {cell:?}"))
}

fn pod(name: &str, command: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"terminationGracePeriodSeconds": 1, "containers": [{
            "name": name, "image": "IMAGE", "command": ["sh", "-c", command],
            "resources": {"requests": {"cpu": "100m"}}}]}})
}

/// `kubectl api-resources`, `kubectl top nodes|pods` (with `-A`,
/// `--containers`, `-l`, `--sort-by`), the raw NodeMetricsList and
/// PodMetrics, metrics-server's NotFound for a missing pod, its Table in
/// `kubectl get`, and the RBAC that lets viewers and the HPA controller
/// read pod metrics.
#[test]
fn kubectl_top_shows_node_and_pod_usage_from_the_kubelets() {
    let c = NodeCluster::start(&["--metric-resolution", "2s"]);
    let s = &c.server;

    // Discovery: as on a cluster with metrics-server.
    let out = s.kubectl_ok(&["api-resources", "--api-group=metrics.k8s.io"]);
    assert_eq!(
        rows(&out)[1..],
        [
            ["nodes", "metrics.k8s.io/v1beta1", "false", "NodeMetrics"].map(String::from).to_vec(),
            ["pods", "metrics.k8s.io/v1beta1", "true", "PodMetrics"].map(String::from).to_vec(),
        ],
        "{out}"
    );
    let out = s.kubectl_ok(&["api-resources", "--api-group=metrics.k8s.io", "-o", "wide"]);
    assert!(rows(&out)[1..].iter().all(|r| r[4] == "get,list"), "metrics-server serves get and list only: {out}");

    // A pod busy-looping on one core and an idle one.
    for (name, command) in [("busy", "while :; do :; done"), ("idle", "sleep 3600")] {
        let mut p = pod(name, command);
        p["spec"]["containers"][0]["image"] = json!(c.busybox);
        s.create(&p);
    }
    for name in ["busy", "idle"] {
        c.wait_pod(name, Duration::from_secs(90), "Running and Ready", |p| {
            p["status"]["phase"] == "Running" && condition(p, "Ready")["status"] == "True"
        });
    }

    // kubectl top pods: both listed once two scrapes saw them; the busy
    // loop uses about a core (> 300m even on a loaded machine), clearly
    // more than the idle pod.
    let mut last = String::new();
    s.wait_for(Duration::from_secs(120), "kubectl top pods to show busy > 300m and idle", || {
        let out = s.kubectl(&["top", "pods"]);
        last = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        if !out.status.success() {
            return false;
        }
        let r = rows(&last);
        let cpu = |name: &str| r.iter().find(|row| row[0] == name).map(|row| millicores(&row[1]));
        matches!((cpu("busy"), cpu("idle")), (Some(b), Some(i)) if b > 300 && i < b)
    });
    let r = rows(&last);
    assert_eq!(r[0], ["NAME", "CPU(cores)", "MEMORY(bytes)"], "{last}");
    for row in &r[1..] {
        mebibytes(&row[2]);
    }

    // --sort-by=cpu puts busy first; -l selects; -A adds the namespace.
    let out = s.kubectl_ok(&["top", "pods", "--sort-by=cpu"]);
    assert_eq!(rows(&out)[1][0], "busy", "{out}");
    let out = s.kubectl_ok(&["top", "pods", "-l", "app=idle"]);
    assert_eq!(rows(&out)[1..].iter().map(|r| r[0].as_str()).collect::<Vec<_>>(), ["idle"], "{out}");
    let out = s.kubectl_ok(&["top", "pods", "-A"]);
    let r = rows(&out);
    assert_eq!(r[0], ["NAMESPACE", "NAME", "CPU(cores)", "MEMORY(bytes)"], "{out}");
    assert!(r.iter().any(|row| row[0] == "default" && row[1] == "busy"), "{out}");

    // --containers: one row per container.
    let out = s.kubectl_ok(&["top", "pod", "busy", "--containers"]);
    let r = rows(&out);
    assert_eq!(r[0], ["POD", "NAME", "CPU(cores)", "MEMORY(bytes)"], "{out}");
    assert_eq!(r[1][..2], ["busy", "busy"], "{out}");
    assert!(millicores(&r[1][2]) > 0, "{out}");
    mebibytes(&r[1][3]);

    // kubectl top nodes: the node with its usage and percentages.
    let out = s.kubectl_ok(&["top", "nodes"]);
    let r = rows(&out);
    assert_eq!(r[0], ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"], "{out}");
    let node = r.iter().find(|row| row[0] == c.node).unwrap_or_else(|| panic!("no {} in {out}", c.node));
    assert!(millicores(&node[1]) > 0, "the busy loop runs on this node: {out}");
    assert!(mebibytes(&node[3]) > 0, "{out}");
    assert!(node[2].ends_with('%') && node[4].ends_with('%'), "{out}");

    // The raw objects, as metrics-server writes them.
    let list: Value =
        serde_json::from_str(&s.kubectl_ok(&["get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes"])).unwrap();
    assert_eq!(list["kind"], "NodeMetricsList");
    assert_eq!(list["apiVersion"], "metrics.k8s.io/v1beta1");
    let item =
        list["items"].as_array().unwrap().iter().find(|i| i["metadata"]["name"] == c.node.as_str()).expect("the node");
    assert_eq!(item["metadata"]["labels"]["kubernetes.io/hostname"], c.node.as_str(), "{item}");
    assert!(item["window"].as_str().unwrap().ends_with('s'), "{item}");
    assert!(item["usage"]["cpu"].is_string() && item["usage"]["memory"].is_string(), "{item}");
    let raw = s.kubectl_ok(&[
        "get",
        "--raw",
        "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods?labelSelector=app%3Dbusy",
    ]);
    let pods: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(pods["kind"], "PodMetricsList");
    assert_eq!(pods["items"][0]["metadata"]["name"], "busy");
    assert_eq!(pods["items"][0]["containers"][0]["name"], "busy");

    // A missing pod: metrics-server's pod lister NotFound.
    let out = s.kubectl(&["top", "pod", "nope"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(r#"Error from server (NotFound): pods "nope" not found"#), "{stderr}");

    // kubectl get: metrics-server's Table columns.
    let out = s.kubectl_ok(&["get", "nodes.metrics.k8s.io"]);
    assert_eq!(rows(&out)[0], ["NAME", "CPU", "MEMORY", "WINDOW"], "{out}");

    // RBAC: view aggregates system:aggregated-metrics-reader; the HPA
    // controller's role lists pod metrics.
    s.kubectl_ok(&["create", "serviceaccount", "viewer"]);
    s.kubectl_ok(&["create", "rolebinding", "viewer", "--clusterrole=view", "--serviceaccount=default:viewer"]);
    s.wait_for(Duration::from_secs(30), "view to include pods.metrics.k8s.io", || {
        s.kubectl(&["auth", "can-i", "list", "pods.metrics.k8s.io", "--as=system:serviceaccount:default:viewer"])
            .status
            .success()
    });
    let hpa = "--as=system:serviceaccount:kube-system:horizontal-pod-autoscaler";
    assert_eq!(s.kubectl_ok(&["auth", "can-i", "list", "pods.metrics.k8s.io", "-A", hpa]).trim(), "yes");
}
