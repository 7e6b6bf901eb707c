//! The ReplicaSet and ReplicationController controllers inside `rkube
//! server`, driven with the real kubectl. No scheduler or kubelet runs:
//! the tests play the kubelet by writing pod status through the status
//! subresource (phase Running, condition Ready), as upstream's
//! integration tests do.
//!
//! Expected behaviour is upstream's (`pkg/controller/replicaset`): pods
//! named `<owner>-<random>` with a controller ownerReference
//! (`blockOwnerDeletion: true`), replaced when deleted or finished,
//! scale-down deleting not-ready pods before ready ones, orphans adopted
//! and relabeled pods released, status counters and observedGeneration,
//! `ReplicaFailure` with reason `FailedCreate` while pods cannot be created,
//! events `SuccessfulCreate` / `SuccessfulDelete` / `FailedCreate`.

mod support;

use std::time::{Duration, Instant};

use serde_json::Value;
use support::{TestServer, TestServerOptions};

fn start() -> TestServer {
    TestServer::start_with(TestServerOptions {
        extra_args: vec![
            "--controllers".into(),
            "serviceaccount-controller,replicaset-controller,replicationcontroller-controller".into(),
        ],
        ..Default::default()
    })
}

fn kubectl_ok(server: &TestServer, args: &[&str]) -> String {
    let out = server.kubectl(args);
    assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn apply(server: &TestServer, name: &str, manifest: &str) {
    let path = server.data_dir().join(format!("{name}.yaml"));
    std::fs::write(&path, manifest).unwrap();
    kubectl_ok(server, &["apply", "-f", path.to_str().unwrap()]);
}

fn get_json(server: &TestServer, args: &[&str]) -> Value {
    let mut full: Vec<&str> = vec!["get", "-o", "json"];
    full.extend_from_slice(args);
    serde_json::from_str(&kubectl_ok(server, &full)).unwrap()
}

/// Polls until `check` holds on `kubectl get -o json <args>` (60 s).
fn eventually(server: &TestServer, args: &[&str], what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut full: Vec<&str> = vec!["get", "-o", "json"];
    full.extend_from_slice(args);
    let mut last = Value::Null;
    loop {
        let out = server.kubectl(&full);
        if out.status.success() {
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            if check(&v) {
                return v;
            }
            last = v;
        }
        assert!(
            Instant::now() < deadline,
            "{what} did not happen within 60s; last: {last:#}\nserver log:\n{}",
            server.logs()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The pods controlled by the owner with `uid` that are active (not
/// terminating, not finished), from a pod list.
fn active_owned<'a>(list: &'a Value, uid: &str) -> Vec<&'a Value> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| {
            p["metadata"]["deletionTimestamp"].is_null()
                && !matches!(p["status"]["phase"].as_str(), Some("Succeeded") | Some("Failed"))
                && p["metadata"]["ownerReferences"]
                    .as_array()
                    .is_some_and(|rs| rs.iter().any(|r| r["uid"] == uid && r["controller"] == true))
        })
        .collect()
}

fn names(pods: &[&Value]) -> Vec<String> {
    let mut v: Vec<String> = pods.iter().map(|p| p["metadata"]["name"].as_str().unwrap().to_string()).collect();
    v.sort();
    v
}

fn wait_active(server: &TestServer, ns: &str, uid: &str, n: usize) -> Vec<String> {
    let list =
        eventually(server, &["-n", ns, "pods"], &format!("{n} active pods"), |v| active_owned(v, uid).len() == n);
    names(&active_owned(&list, uid))
}

/// Plays the kubelet: the pod is Running and Ready since `ready_at` (RFC 3339).
fn mark_ready(server: &TestServer, ns: &str, pod: &str, ready_at: &str) {
    let patch = format!(
        r#"{{"status":{{"phase":"Running","conditions":[{{"type":"Ready","status":"True","lastTransitionTime":"{ready_at}"}}]}}}}"#
    );
    kubectl_ok(server, &["-n", ns, "patch", "pod", pod, "--subresource=status", "--type=merge", "-p", &patch]);
}

fn now_rfc3339() -> String {
    let out = std::process::Command::new("date").args(["-u", "+%Y-%m-%dT%H:%M:%SZ"]).output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn events(server: &TestServer, ns: &str, object: &str) -> Vec<(String, String, String)> {
    let v = get_json(server, &["-n", ns, "events", "--field-selector", &format!("involvedObject.name={object}")]);
    v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["reason"].as_str().unwrap_or("").to_string(),
                e["message"].as_str().unwrap_or("").to_string(),
                e["source"]["component"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn rs_manifest(name: &str, replicas: u32, label: &str, extra_spec: &str) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: {name}
spec:
  replicas: {replicas}
{extra_spec}  selector:
    matchLabels:
      name: {label}
  template:
    metadata:
      labels:
        name: {label}
    spec:
      containers:
      - name: c
        image: registry.k8s.io/pause:3.10
"#
    )
}

/// Conformance: "ReplicaSet, completes the scaling of a ReplicaSet
/// subresource" (and "ReplicaSet, is created, Replaced and Patched"):
/// pods follow `spec.replicas` through the scale subresource (`kubectl
/// scale`), scale-down removes not-ready pods first, status counts ready
/// pods, events name each pod.
#[test]
fn replicaset_creates_scales_and_counts_ready_pods() {
    let server = start();
    apply(&server, "web", &rs_manifest("web", 3, "web", ""));
    let rs = get_json(&server, &["replicaset", "web"]);
    let uid = rs["metadata"]["uid"].as_str().unwrap().to_string();
    let pods = wait_active(&server, "default", &uid, 3);

    let list = get_json(&server, &["pods"]);
    for p in active_owned(&list, &uid) {
        assert_eq!(p["metadata"]["generateName"], "web-");
        assert!(p["metadata"]["name"].as_str().unwrap().starts_with("web-"));
        assert_eq!(p["metadata"]["labels"]["name"], "web");
        let refs = p["metadata"]["ownerReferences"].as_array().unwrap();
        assert_eq!(refs.len(), 1);
        assert_eq!(refs[0]["apiVersion"], "apps/v1");
        assert_eq!(refs[0]["kind"], "ReplicaSet");
        assert_eq!(refs[0]["name"], "web");
        assert_eq!(refs[0]["controller"], true);
        assert_eq!(refs[0]["blockOwnerDeletion"], true);
    }
    let rs = eventually(&server, &["replicaset", "web"], "status of 3 replicas", |v| {
        v["status"]["replicas"] == 3 && v["status"]["observedGeneration"] == 1
    });
    assert_eq!(rs["status"]["fullyLabeledReplicas"], 3);
    assert!(rs["status"]["readyReplicas"].is_null(), "no pod is ready: {rs:#}");

    // Two pods become ready: readyReplicas and availableReplicas follow.
    let now = now_rfc3339();
    mark_ready(&server, "default", &pods[0], &now);
    mark_ready(&server, "default", &pods[1], &now);
    eventually(&server, &["replicaset", "web"], "2 ready replicas", |v| {
        v["status"]["readyReplicas"] == 2 && v["status"]["availableReplicas"] == 2
    });

    // Scale up through the scale subresource.
    kubectl_ok(&server, &["scale", "replicaset", "web", "--replicas=5"]);
    let five = wait_active(&server, "default", &uid, 5);
    eventually(&server, &["replicaset", "web"], "status of 5 replicas", |v| {
        v["status"]["replicas"] == 5 && v["status"]["observedGeneration"] == 2
    });

    // Scale down to 2: the three not-ready pods go, the ready ones stay.
    kubectl_ok(&server, &["scale", "replicaset", "web", "--replicas=2"]);
    let two = wait_active(&server, "default", &uid, 2);
    assert_eq!(two, pods[..2].to_vec(), "scale-down must delete not-ready pods first (had {five:?})");
    let rs = eventually(&server, &["replicaset", "web"], "status of 2 replicas", |v| {
        v["status"]["replicas"] == 2 && v["status"]["readyReplicas"] == 2 && v["status"]["observedGeneration"] == 3
    });
    assert_eq!(rs["spec"]["replicas"], 2);

    let evs = events(&server, "default", "web");
    for p in &five {
        assert!(
            evs.iter().any(|e| e.0 == "SuccessfulCreate"
                && e.1 == format!("Created pod: {p}")
                && e.2 == "replicaset-controller"),
            "no SuccessfulCreate for {p}: {evs:?}"
        );
    }
    let deleted: Vec<&String> = five.iter().filter(|p| !two.contains(p)).collect();
    for p in deleted {
        assert!(
            evs.iter().any(|e| e.0 == "SuccessfulDelete" && e.1 == format!("Deleted pod: {p}")),
            "no SuccessfulDelete for {p}: {evs:?}"
        );
    }
}

/// A deleted pod, and a pod that finished (phase Failed), are replaced:
/// neither counts as an active replica.
#[test]
fn replicaset_replaces_deleted_and_finished_pods() {
    let server = start();
    apply(&server, "heal", &rs_manifest("heal", 2, "heal", ""));
    let uid = get_json(&server, &["replicaset", "heal"])["metadata"]["uid"].as_str().unwrap().to_string();
    let pods = wait_active(&server, "default", &uid, 2);

    kubectl_ok(&server, &["delete", "pod", &pods[0], "--wait=false"]);
    let after_delete = wait_active(&server, "default", &uid, 2);
    assert!(!after_delete.contains(&pods[0]), "{after_delete:?}");

    let failed = &after_delete[0];
    let patch = r#"{"status":{"phase":"Failed"}}"#;
    kubectl_ok(&server, &["patch", "pod", failed, "--subresource=status", "--type=merge", "-p", patch]);
    let after_fail = wait_active(&server, "default", &uid, 2);
    assert!(!after_fail.contains(failed), "{after_fail:?}");
    // The finished pod is left alone (PodGC's job), still owned.
    let p = get_json(&server, &["pod", failed]);
    assert_eq!(p["metadata"]["ownerReferences"][0]["uid"], uid.as_str());
    eventually(&server, &["replicaset", "heal"], "status of 2 replicas", |v| v["status"]["replicas"] == 2);
}

/// Conformance: "Replica Set, adopt matching pods and release non matching
/// pods": an orphan pod matching the selector is adopted (no extra pod is
/// created); relabeled so it no longer matches, it is released and
/// replaced.
#[test]
fn replicaset_adopts_matching_orphans_and_releases_relabeled_pods() {
    let server = start();
    apply(
        &server,
        "orphan",
        r#"apiVersion: v1
kind: Pod
metadata:
  name: pod-adoption-release
  labels:
    name: pod-adoption-release
spec:
  containers:
  - name: c
    image: registry.k8s.io/pause:3.10
"#,
    );
    apply(&server, "rs", &rs_manifest("pod-adoption-release", 1, "pod-adoption-release", ""));
    let uid =
        get_json(&server, &["replicaset", "pod-adoption-release"])["metadata"]["uid"].as_str().unwrap().to_string();
    let pod = eventually(&server, &["pod", "pod-adoption-release"], "the orphan adopted", |v| {
        v["metadata"]["ownerReferences"].as_array().is_some_and(|r| !r.is_empty())
    });
    let refs = pod["metadata"]["ownerReferences"].as_array().unwrap();
    assert_eq!(refs.len(), 1);
    assert_eq!(refs[0]["uid"], uid.as_str());
    assert_eq!(refs[0]["kind"], "ReplicaSet");
    assert_eq!(refs[0]["controller"], true);
    assert_eq!(refs[0]["blockOwnerDeletion"], true);
    // Adopted instead of a new pod: still exactly one.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(wait_active(&server, "default", &uid, 1), ["pod-adoption-release"]);

    kubectl_ok(&server, &["label", "pod", "pod-adoption-release", "name=not-matching", "--overwrite"]);
    eventually(&server, &["pod", "pod-adoption-release"], "the pod released", |v| {
        v["metadata"]["ownerReferences"].as_array().is_none_or(|r| r.is_empty())
    });
    let now = wait_active(&server, "default", &uid, 1);
    assert_ne!(now, ["pod-adoption-release"]);

    // Someone else takes the replacement away (reference removed and
    // relabeled in one write): the ReplicaSet it left is synced and
    // replaces it, as upstream's updatePod syncs the old controller.
    let patch = r#"[{"op":"remove","path":"/metadata/ownerReferences"},{"op":"replace","path":"/metadata/labels/name","value":"taken"}]"#;
    kubectl_ok(&server, &["patch", "pod", &now[0], "--type=json", "-p", patch]);
    let again = wait_active(&server, "default", &uid, 1);
    assert_ne!(again, now);
}

/// `minReadySeconds`: a ready pod counts as available only once it has
/// been ready that long; the controller looks again by itself.
#[test]
fn replicaset_available_replicas_wait_for_min_ready_seconds() {
    let server = start();
    apply(&server, "slow", &rs_manifest("slow", 1, "slow", "  minReadySeconds: 5\n"));
    let uid = get_json(&server, &["replicaset", "slow"])["metadata"]["uid"].as_str().unwrap().to_string();
    let pods = wait_active(&server, "default", &uid, 1);
    mark_ready(&server, "default", &pods[0], &now_rfc3339());
    let rs = eventually(&server, &["replicaset", "slow"], "1 ready replica", |v| v["status"]["readyReplicas"] == 1);
    assert!(rs["status"]["availableReplicas"].is_null(), "available before minReadySeconds: {rs:#}");
    eventually(&server, &["replicaset", "slow"], "1 available replica", |v| v["status"]["availableReplicas"] == 1);
}

/// Pods that cannot be created (their ServiceAccount does not exist):
/// `FailedCreate` events and the `ReplicaFailure` condition (reason
/// FailedCreate), cleared once creation succeeds (as upstream's "Replication
/// Controller, check for issues like exceeding allocated quota", with
/// admission refusing instead of quota).
#[test]
fn replicaset_reports_replica_failure_while_pods_cannot_be_created() {
    let server = start();
    kubectl_ok(&server, &["create", "namespace", "fail"]);
    let manifest = rs_manifest("broken", 2, "broken", "")
        .replace("      containers:", "      serviceAccountName: robot\n      containers:");
    let path = server.data_dir().join("broken.yaml");
    std::fs::write(&path, manifest).unwrap();
    kubectl_ok(&server, &["-n", "fail", "apply", "-f", path.to_str().unwrap()]);
    let rs = eventually(&server, &["-n", "fail", "replicaset", "broken"], "the ReplicaFailure condition", |v| {
        v["status"]["conditions"].as_array().is_some_and(|c| c.iter().any(|c| c["type"] == "ReplicaFailure"))
    });
    let c = &rs["status"]["conditions"][0];
    assert_eq!(c["status"], "True");
    assert_eq!(c["reason"], "FailedCreate");
    assert!(c["message"].as_str().unwrap().contains("robot"), "{c:#}");
    let evs = events(&server, "fail", "broken");
    assert!(evs.iter().any(|e| e.0 == "FailedCreate" && e.1.starts_with("Error creating: ")), "{evs:?}");

    kubectl_ok(&server, &["-n", "fail", "create", "serviceaccount", "robot"]);
    let uid = rs["metadata"]["uid"].as_str().unwrap().to_string();
    wait_active(&server, "fail", &uid, 2);
    eventually(&server, &["-n", "fail", "replicaset", "broken"], "the condition removed", |v| {
        v["status"]["conditions"].is_null() && v["status"]["replicas"] == 2
    });
}

/// Conformance: "Replication Controller, adopt matching pods", "Replication
/// Controller, release pods" and "Replication Controller, get and update
/// ReplicationController scale": the same controller over
/// ReplicationControllers (ownerReference `v1` `ReplicationController`,
/// events from `replication-controller`).
#[test]
fn replication_controller_adopts_releases_and_scales() {
    let server = start();
    apply(
        &server,
        "orphan",
        r#"apiVersion: v1
kind: Pod
metadata:
  name: pod-adoption
  labels:
    name: pod-adoption
spec:
  containers:
  - name: c
    image: registry.k8s.io/pause:3.10
"#,
    );
    apply(
        &server,
        "rc",
        r#"apiVersion: v1
kind: ReplicationController
metadata:
  name: pod-adoption
spec:
  replicas: 1
  selector:
    name: pod-adoption
  template:
    metadata:
      labels:
        name: pod-adoption
    spec:
      containers:
      - name: c
        image: registry.k8s.io/pause:3.10
"#,
    );
    let uid = get_json(&server, &["rc", "pod-adoption"])["metadata"]["uid"].as_str().unwrap().to_string();
    let pod = eventually(&server, &["pod", "pod-adoption"], "the orphan adopted", |v| {
        v["metadata"]["ownerReferences"].as_array().is_some_and(|r| !r.is_empty())
    });
    let r = &pod["metadata"]["ownerReferences"][0];
    assert_eq!((r["apiVersion"].as_str(), r["kind"].as_str()), (Some("v1"), Some("ReplicationController")));
    assert_eq!((r["uid"].as_str(), r["controller"].as_bool()), (Some(uid.as_str()), Some(true)));
    assert_eq!(wait_active(&server, "default", &uid, 1), ["pod-adoption"]);

    kubectl_ok(&server, &["scale", "rc", "pod-adoption", "--replicas=3"]);
    let three = wait_active(&server, "default", &uid, 3);
    eventually(&server, &["rc", "pod-adoption"], "status of 3 replicas", |v| {
        v["status"]["replicas"] == 3
            && v["status"]["fullyLabeledReplicas"] == 3
            && v["status"]["observedGeneration"] == 2
    });
    let created = three.iter().find(|p| *p != "pod-adoption").unwrap();
    assert!(created.starts_with("pod-adoption-"));
    let evs = events(&server, "default", "pod-adoption");
    assert!(
        evs.iter().any(|e| e.0 == "SuccessfulCreate"
            && e.1 == format!("Created pod: {created}")
            && e.2 == "replication-controller"),
        "{evs:?}"
    );

    kubectl_ok(&server, &["label", "pod", "pod-adoption", "name=released", "--overwrite"]);
    eventually(&server, &["pod", "pod-adoption"], "the pod released", |v| {
        v["metadata"]["ownerReferences"].as_array().is_none_or(|r| r.is_empty())
    });
    let after = wait_active(&server, "default", &uid, 3);
    assert!(!after.contains(&"pod-adoption".to_string()));
    let now = now_rfc3339();
    for p in &after {
        mark_ready(&server, "default", p, &now);
    }
    eventually(&server, &["rc", "pod-adoption"], "3 ready replicas", |v| {
        v["status"]["readyReplicas"] == 3 && v["status"]["availableReplicas"] == 3
    });
}

/// A gracefully deleted pod on a node stays terminating until its kubelet
/// (here: the test) finishes it; it no longer counts, so a replacement is
/// created at once, and `status.replicas` counts only active pods.
#[test]
fn replicaset_replaces_a_terminating_pod_without_waiting_for_it() {
    let server = start();
    apply(
        &server,
        "bound",
        r#"apiVersion: v1
kind: Pod
metadata:
  name: bound
  labels:
    name: term
spec:
  nodeName: node-a
  containers:
  - name: c
    image: registry.k8s.io/pause:3.10
"#,
    );
    apply(&server, "term", &rs_manifest("term", 1, "term", ""));
    let uid = get_json(&server, &["replicaset", "term"])["metadata"]["uid"].as_str().unwrap().to_string();
    eventually(&server, &["pod", "bound"], "the pod adopted", |v| {
        v["metadata"]["ownerReferences"][0]["uid"] == uid.as_str()
    });
    assert_eq!(wait_active(&server, "default", &uid, 1), ["bound"]);

    kubectl_ok(&server, &["delete", "pod", "bound", "--wait=false"]);
    let replacement = wait_active(&server, "default", &uid, 1);
    assert_ne!(replacement, ["bound"]);
    let bound = get_json(&server, &["pod", "bound"]);
    assert!(!bound["metadata"]["deletionTimestamp"].is_null(), "the pod should still be terminating: {bound:#}");
    eventually(&server, &["replicaset", "term"], "1 replica", |v| v["status"]["replicas"] == 1);
    kubectl_ok(&server, &["delete", "pod", "bound", "--grace-period=0", "--force"]);
}

/// Many replicas at once: slow-start batches and expectations create
/// exactly `replicas` pods, never more, even while the informer catches up.
#[test]
fn replicaset_creates_exactly_the_replicas_asked_for() {
    let server = start();
    apply(&server, "many", &rs_manifest("many", 20, "many", ""));
    let uid = get_json(&server, &["replicaset", "many"])["metadata"]["uid"].as_str().unwrap().to_string();
    wait_active(&server, "default", &uid, 20);
    eventually(&server, &["replicaset", "many"], "20 replicas", |v| v["status"]["replicas"] == 20);
    std::thread::sleep(Duration::from_secs(3));
    let all = get_json(&server, &["pods"]);
    assert_eq!(active_owned(&all, &uid).len(), 20);
    assert_eq!(all["items"].as_array().unwrap().len(), 20, "no pod beyond the 20 was ever created");
    kubectl_ok(&server, &["scale", "replicaset", "many", "--replicas=0"]);
    wait_active(&server, "default", &uid, 0);
    let rs = eventually(&server, &["replicaset", "many"], "0 replicas", |v| v["status"]["replicas"] == 0);
    assert!(rs["status"]["fullyLabeledReplicas"].is_null(), "{rs:#}");
}

/// An owner being deleted (foreground deletion: deletionTimestamp set, the
/// `foregroundDeletion` finalizer holding it) creates nothing more: a pod
/// deleted meanwhile is not replaced.
#[test]
fn replicaset_being_deleted_does_not_replace_pods() {
    let server = start();
    apply(&server, "going", &rs_manifest("going", 2, "going", ""));
    let uid = get_json(&server, &["replicaset", "going"])["metadata"]["uid"].as_str().unwrap().to_string();
    let pods = wait_active(&server, "default", &uid, 2);
    kubectl_ok(&server, &["delete", "replicaset", "going", "--cascade=foreground", "--wait=false"]);
    eventually(&server, &["replicaset", "going"], "the deletionTimestamp", |v| {
        !v["metadata"]["deletionTimestamp"].is_null()
    });
    kubectl_ok(&server, &["delete", "pod", &pods[0], "--wait=false"]);
    std::thread::sleep(Duration::from_secs(3));
    let list = get_json(&server, &["pods"]);
    assert_eq!(names(&active_owned(&list, &uid)), [pods[1].clone()]);
}
