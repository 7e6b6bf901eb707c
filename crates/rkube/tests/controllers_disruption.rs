//! The disruption controller end to end: PodDisruptionBudget status over
//! a ReplicaSet's pods (made Ready through the status subresource, there
//! being no kubelet), and the eviction subresource consuming it, driven
//! with the real kubectl.

mod support;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{TestServer, TestServerOptions};

fn kubectl_ok(server: &TestServer, args: &[&str]) -> String {
    let out = server.kubectl(args);
    assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn get(server: &TestServer, args: &[&str]) -> Value {
    let mut full = vec!["get", "-o", "json"];
    full.extend_from_slice(args);
    serde_json::from_str(&kubectl_ok(server, &full)).unwrap()
}

fn eventually(server: &TestServer, args: &[&str], what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let v = get(server, args);
        if check(&v) {
            return v;
        }
        assert!(Instant::now() < deadline, "{what} did not happen; last: {v:#}\nserver log:\n{}", server.logs());
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// `kubectl create --raw …/pods/<pod>/eviction` with a policy/v1 Eviction.
fn evict(server: &TestServer, pod: &str) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("eviction.json");
    let body =
        json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod, "namespace": "default"}});
    std::fs::write(&path, serde_json::to_vec(&body).unwrap()).unwrap();
    let url = format!("/api/v1/namespaces/default/pods/{pod}/eviction");
    server.kubectl(&["create", "--raw", &url, "-f", path.to_str().unwrap()])
}

fn status_of(pdb: &Value) -> (i64, i64, i64, i64, String, String) {
    let s = &pdb["status"];
    let cond = s["conditions"].as_array().and_then(|c| c.iter().find(|c| c["type"] == "DisruptionAllowed")).cloned();
    let cond = cond.unwrap_or(Value::Null);
    (
        s["currentHealthy"].as_i64().unwrap_or(-1),
        s["desiredHealthy"].as_i64().unwrap_or(-1),
        s["expectedPods"].as_i64().unwrap_or(-1),
        s["disruptionsAllowed"].as_i64().unwrap_or(-1),
        cond["status"].as_str().unwrap_or("").to_string(),
        cond["reason"].as_str().unwrap_or("").to_string(),
    )
}

/// Conformance "PodDisruptionBudget: Status updates" and "block an
/// eviction until the PDB is updated to allow it".
#[test]
fn poddisruptionbudget_status_updates_and_evictions() {
    let server = TestServer::start_with(TestServerOptions {
        extra_args: vec![
            "--controllers".into(),
            "serviceaccount-controller,replicaset-controller,disruption-controller".into(),
        ],
        ..Default::default()
    });
    let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}});
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rs.json");
    std::fs::write(&path, serde_json::to_vec(&rs).unwrap()).unwrap();
    kubectl_ok(&server, &["create", "-f", path.to_str().unwrap()]);
    let pods = eventually(&server, &["pods", "-l", "app=web"], "3 pods", |v| v["items"].as_array().unwrap().len() == 3);
    let names: Vec<String> =
        pods["items"].as_array().unwrap().iter().map(|p| p["metadata"]["name"].as_str().unwrap().to_string()).collect();
    for name in &names {
        kubectl_ok(
            &server,
            &[
                "patch",
                "pod",
                name,
                "--subresource=status",
                "--type=merge",
                "-p",
                r#"{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}"#,
            ],
        );
    }
    kubectl_ok(&server, &["create", "pdb", "web", "--selector=app=web", "--min-available=2"]);
    let pdb = eventually(&server, &["pdb", "web"], "PDB status", |v| {
        status_of(v) == (3, 2, 3, 1, "True".into(), "SufficientPods".into())
    });
    assert_eq!(pdb["status"]["observedGeneration"], pdb["metadata"]["generation"]);

    // The first eviction uses the one allowed disruption ...
    let out = evict(&server, &names[0]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // ... the second would break the budget: 429.
    let out = evict(&server, &names[1]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("Error from server (TooManyRequests)")
            && stderr.contains("Cannot evict pod as it would violate the pod's disruption budget."),
        "{stderr}"
    );
    // The controller sees the evicted pod terminating: 2 healthy of 2 needed, no disruption.
    eventually(&server, &["pdb", "web"], "InsufficientPods", |v| {
        let (healthy, desired, _, allowed, cond, reason) = status_of(v);
        (healthy, desired, allowed, cond.as_str(), reason.as_str()) == (2, 2, 0, "False", "InsufficientPods")
    });

    // Lowering the budget lets the blocked eviction through.
    kubectl_ok(&server, &["patch", "pdb", "web", "--type=merge", "-p", r#"{"spec":{"minAvailable":1}}"#]);
    eventually(&server, &["pdb", "web"], "budget updated", |v| {
        v["status"]["observedGeneration"] == v["metadata"]["generation"] && status_of(v).3 == 1
    });
    let out = evict(&server, &names[1]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// maxUnavailable as a percent needs the controller's scale: 34% of 3
/// replicas rounds up to 2 unavailable, so 1 must stay healthy.
#[test]
fn poddisruptionbudget_max_unavailable_percent_uses_the_replicaset_scale() {
    let server = TestServer::start_with(TestServerOptions {
        extra_args: vec![
            "--controllers".into(),
            "serviceaccount-controller,replicaset-controller,disruption-controller".into(),
        ],
        ..Default::default()
    });
    kubectl_ok(&server, &["create", "pdb", "lone", "--selector=app=lone", "--max-unavailable=34%"]);
    // No pods selected: nothing expected, nothing allowed.
    eventually(&server, &["pdb", "lone"], "empty budget", |v| {
        status_of(v) == (0, 0, 0, 0, "False".into(), "InsufficientPods".into())
    });
    // Upstream's event for a budget selecting nothing.
    eventually(&server, &["events", "--field-selector", "reason=NoPods"], "NoPods event", |v| {
        v["items"].as_array().unwrap().iter().any(|e| {
            e["message"] == "No matching pods found"
                && e["involvedObject"]["name"] == "lone"
                && e["source"]["component"] == "disruption-controller"
        })
    });
    let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "lone"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "lone"}},
                 "template": {"metadata": {"labels": {"app": "lone"}},
                              "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}});
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rs.json");
    std::fs::write(&path, serde_json::to_vec(&rs).unwrap()).unwrap();
    kubectl_ok(&server, &["create", "-f", path.to_str().unwrap()]);
    let pods =
        eventually(&server, &["pods", "-l", "app=lone"], "3 pods", |v| v["items"].as_array().unwrap().len() == 3);
    for p in pods["items"].as_array().unwrap() {
        kubectl_ok(
            &server,
            &[
                "patch",
                "pod",
                p["metadata"]["name"].as_str().unwrap(),
                "--subresource=status",
                "--type=merge",
                "-p",
                r#"{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}"#,
            ],
        );
    }
    eventually(&server, &["pdb", "lone"], "scaled budget", |v| {
        status_of(v) == (3, 1, 3, 2, "True".into(), "SufficientPods".into())
    });
}
