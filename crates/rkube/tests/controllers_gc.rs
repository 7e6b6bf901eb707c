//! The garbage collector and PodGC inside `rkube server`, driven with the
//! real kubectl. Owners are objects no other controller acts on (a
//! ReplicationController with no RC controller running, ConfigMaps) and
//! dependents carry ownerReferences written by the test, so only the
//! garbage collector can explain what happens to them.

mod support;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{TestServer, TestServerOptions};

fn start() -> TestServer {
    TestServer::start_with(TestServerOptions {
        extra_args: vec![
            "--controllers".into(),
            "serviceaccount-controller,garbage-collector-controller,pod-garbage-collector-controller".into(),
        ],
        ..Default::default()
    })
}

fn kubectl_ok(server: &TestServer, args: &[&str]) -> String {
    let out = server.kubectl(args);
    assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// `kubectl create -f` of one object.
fn create(server: &TestServer, obj: &Value) -> Value {
    let path = server.data_dir().join(format!("obj-{}.json", rand_suffix()));
    std::fs::write(&path, obj.to_string()).unwrap();
    let out = kubectl_ok(server, &["create", "-o", "json", "-f", path.to_str().unwrap()]);
    serde_json::from_str(&out).unwrap()
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
}

fn get(server: &TestServer, args: &[&str]) -> Option<Value> {
    let mut full = vec!["get", "-o", "json"];
    full.extend_from_slice(args);
    let out = server.kubectl(&full);
    out.status.success().then(|| serde_json::from_slice(&out.stdout).unwrap())
}

/// Polls until `check` holds on `kubectl get` (None: the object is absent).
fn eventually(server: &TestServer, args: &[&str], secs: u64, what: &str, check: impl Fn(Option<&Value>) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if check(get(server, args).as_ref()) {
            return;
        }
        assert!(Instant::now() < deadline, "{what} did not happen within {secs}s; server log:\n{}", server.logs());
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn gone(server: &TestServer, args: &[&str], what: &str) {
    eventually(server, args, 60, what, |v| v.is_none());
}

fn owner_ref(owner: &Value, block: bool) -> Value {
    json!({
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": block,
    })
}

fn rc(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ReplicationController",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": 2, "selector": {"app": name},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}
    })
}

fn pod(name: &str, owners: Vec<Value>) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "ownerReferences": owners},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}
    })
}

fn configmap(name: &str, owners: Vec<Value>) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default", "ownerReferences": owners}})
}

fn owner_uids(v: &Value) -> Vec<String> {
    v["metadata"]["ownerReferences"]
        .as_array()
        .map(|a| a.iter().map(|r| r["uid"].as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// Conformance: "Garbage Collector, delete replication controller,
/// propagation policy background" — deleting the RC deletes its pods (and
/// a Secret dependent: every resource is watched).
#[test]
fn gc_background_cascade_deletes_the_dependents() {
    let server = start();
    let owner = create(&server, &rc("web"));
    create(&server, &pod("web-1", vec![owner_ref(&owner, true)]));
    create(&server, &pod("web-2", vec![owner_ref(&owner, true)]));
    create(
        &server,
        &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "web-secret", "namespace": "default",
                "ownerReferences": [owner_ref(&owner, false)]}}),
    );
    kubectl_ok(&server, &["delete", "rc", "web", "--cascade=background"]);
    gone(&server, &["pod", "web-1"], "pod web-1 collected");
    gone(&server, &["pod", "web-2"], "pod web-2 collected");
    gone(&server, &["secret", "web-secret"], "secret collected");
}

/// Conformance: "Garbage Collector, delete replication controller, after
/// owned pods" — with Foreground the owner stays (deletionTimestamp and
/// the foregroundDeletion finalizer) until its blocking dependents are
/// gone. A test finalizer on one dependent holds it so the wait shows.
#[test]
fn gc_foreground_cascade_keeps_the_owner_until_the_dependents_are_gone() {
    let server = start();
    let owner = create(&server, &rc("fg"));
    create(&server, &pod("fg-1", vec![owner_ref(&owner, true)]));
    let mut held = configmap("fg-held", vec![owner_ref(&owner, true)]);
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    create(&server, &held);
    kubectl_ok(&server, &["delete", "rc", "fg", "--cascade=foreground", "--wait=false"]);
    gone(&server, &["pod", "fg-1"], "pod fg-1 collected");
    eventually(&server, &["configmap", "fg-held"], 60, "the held dependent marked for deletion", |v| {
        v.is_some_and(|v| !v["metadata"]["deletionTimestamp"].is_null())
    });
    // The owner waits for the held dependent.
    std::thread::sleep(Duration::from_secs(2));
    let rc = get(&server, &["rc", "fg"]).expect("the owner stays while a blocking dependent remains");
    assert!(!rc["metadata"]["deletionTimestamp"].is_null());
    assert_eq!(rc["metadata"]["finalizers"], json!(["foregroundDeletion"]));
    kubectl_ok(
        &server,
        &["patch", "configmap", "fg-held", "--type=merge", "-p", r#"{"metadata":{"finalizers":null}}"#],
    );
    gone(&server, &["configmap", "fg-held"], "the held dependent deleted");
    gone(&server, &["rc", "fg"], "the owner deleted after its dependents");
}

/// Conformance: "Garbage Collector, delete replication controller,
/// propagation policy orphan" — the pods stay, without the reference.
#[test]
fn gc_orphan_cascade_keeps_dependents_and_removes_their_owner_references() {
    let server = start();
    let owner = create(&server, &rc("orph"));
    let other = create(&server, &configmap("orph-other-owner", vec![]));
    create(&server, &pod("orph-1", vec![owner_ref(&owner, true)]));
    create(&server, &pod("orph-2", vec![owner_ref(&owner, true), owner_ref(&other, false)]));
    kubectl_ok(&server, &["delete", "rc", "orph", "--cascade=orphan"]);
    gone(&server, &["rc", "orph"], "the orphaning owner deleted");
    let other_uid = other["metadata"]["uid"].as_str().unwrap().to_string();
    eventually(&server, &["pod", "orph-1"], 30, "orph-1 released", |v| v.is_some_and(|v| owner_uids(v).is_empty()));
    eventually(&server, &["pod", "orph-2"], 30, "orph-2 released from the RC only", |v| {
        v.is_some_and(|v| owner_uids(v) == [other_uid.clone()])
    });
    std::thread::sleep(Duration::from_secs(2));
    for p in ["orph-1", "orph-2"] {
        let v = get(&server, &["pod", p]).expect("orphaned pods stay");
        assert!(v["metadata"]["deletionTimestamp"].is_null());
    }
}

/// Conformance: "Garbage Collector, dependency cycle" — pod1 ← pod3,
/// pod2 ← pod1, pod3 ← pod2 (blockOwnerDeletion); deleting pod1 collects all.
#[test]
fn gc_dependency_cycle_does_not_block_collection() {
    let server = start();
    let p1 = create(&server, &pod("cyc-1", vec![]));
    let p2 = create(&server, &pod("cyc-2", vec![owner_ref(&p1, true)]));
    let p3 = create(&server, &pod("cyc-3", vec![owner_ref(&p2, true)]));
    kubectl_ok(
        &server,
        &[
            "patch",
            "pod",
            "cyc-1",
            "--type=merge",
            "-p",
            &json!({"metadata": {"ownerReferences": [owner_ref(&p3, true)]}}).to_string(),
        ],
    );
    kubectl_ok(&server, &["delete", "pod", "cyc-1", "--cascade=background"]);
    for p in ["cyc-1", "cyc-2", "cyc-3"] {
        gone(&server, &["pod", p], &format!("{p} collected"));
    }
}

/// Conformance: "Garbage Collector, multiple owners" — with RC1 deleted in
/// the foreground, pods also owned by RC2 stay (no deletionTimestamp) and
/// only lose the RC1 reference; pods of RC1 alone are deleted.
#[test]
fn gc_dependents_with_a_live_owner_survive_a_foreground_delete_of_another_owner() {
    let server = start();
    let rc1 = create(&server, &rc("mo-1"));
    let rc2 = create(&server, &rc("mo-2"));
    create(&server, &pod("mo-only", vec![owner_ref(&rc1, true)]));
    create(&server, &pod("mo-both", vec![owner_ref(&rc1, true), owner_ref(&rc2, false)]));
    kubectl_ok(&server, &["delete", "rc", "mo-1", "--cascade=foreground"]);
    gone(&server, &["pod", "mo-only"], "the pod of RC1 alone collected");
    gone(&server, &["rc", "mo-1"], "RC1 deleted");
    let rc2_uid = rc2["metadata"]["uid"].as_str().unwrap().to_string();
    let both = get(&server, &["pod", "mo-both"]).expect("the pod with a live owner stays");
    assert!(both["metadata"]["deletionTimestamp"].is_null());
    assert_eq!(owner_uids(&both), [rc2_uid]);
}

/// A dangling owner (no object has the uid) gets its dependent collected;
/// a dependent with one dangling and one live owner only loses the
/// dangling reference.
#[test]
fn gc_dangling_owner_references_are_collected_or_dropped() {
    let server = start();
    let live = create(&server, &configmap("live-owner", vec![]));
    let ghost = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": "00000000-0000-0000-0000-00000000dead"});
    create(&server, &configmap("dangling-only", vec![ghost.clone()]));
    create(&server, &configmap("dangling-and-live", vec![ghost, owner_ref(&live, false)]));
    gone(&server, &["configmap", "dangling-only"], "the dependent of a dangling owner collected");
    let live_uid = live["metadata"]["uid"].as_str().unwrap().to_string();
    eventually(&server, &["configmap", "dangling-and-live"], 60, "the dangling reference dropped", |v| {
        v.is_some_and(|v| owner_uids(v) == [live_uid.clone()])
    });
    // An owner with the right name but another uid is dangling too.
    let stale = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "live-owner", "uid": "00000000-0000-0000-0000-00000000beef"});
    create(&server, &configmap("stale-uid", vec![stale]));
    gone(&server, &["configmap", "stale-uid"], "the dependent of a uid-mismatched owner collected");
    assert!(get(&server, &["configmap", "live-owner"]).is_some());
}

/// An owner reference to an object of another namespace is invalid: the
/// dependent is collected (the owner does not exist in its namespace) and
/// an `OwnerRefInvalidNamespace` warning is recorded on it.
#[test]
fn gc_owner_reference_across_namespaces_is_invalid() {
    let server = start();
    kubectl_ok(&server, &["create", "namespace", "other"]);
    let owner = create(
        &server,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner", "namespace": "other"}}),
    );
    // Let the monitors observe the owner first.
    std::thread::sleep(Duration::from_secs(2));
    let dep = create(&server, &configmap("cross-ns", vec![owner_ref(&owner, false)]));
    gone(&server, &["configmap", "cross-ns"], "the cross-namespace dependent collected");
    assert!(get(&server, &["-n", "other", "configmap", "owner"]).is_some(), "the owner is untouched");
    let uid = dep["metadata"]["uid"].as_str().unwrap().to_string();
    let owner_uid = owner["metadata"]["uid"].as_str().unwrap();
    let want = format!("ownerRef [v1/ConfigMap, namespace: default, name: owner, uid: {owner_uid}] does not exist in namespace \"default\"");
    eventually(&server, &["events"], 30, "the event", |v| {
        v.and_then(|v| v["items"].as_array().cloned()).is_some_and(|items| {
            items.iter().any(|e| {
                e["involvedObject"]["uid"] == uid.as_str()
                    && e["type"] == "Warning"
                    && e["message"] == want.as_str()
                    && e["source"]["component"] == "garbage-collector-controller"
            })
        })
    });
}

/// A cluster-scoped object cannot have a namespaced owner: it is reported
/// (`OwnerRefInvalidNamespace`, event in `default`) and left alone, never
/// collected.
#[test]
fn gc_cluster_scoped_dependent_of_a_namespaced_owner_is_reported_and_kept() {
    let server = start();
    let owner = create(&server, &configmap("ns-owner", vec![]));
    std::thread::sleep(Duration::from_secs(2));
    let dep = create(
        &server,
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "cluster-dep", "ownerReferences": [owner_ref(&owner, false)]}, "rules": []}),
    );
    let uid = dep["metadata"]["uid"].as_str().unwrap().to_string();
    let owner_uid = owner["metadata"]["uid"].as_str().unwrap();
    let want = format!(
        "ownerRef [v1/ConfigMap, namespace: , name: ns-owner, uid: {owner_uid}] does not exist in namespace \"\""
    );
    eventually(&server, &["events"], 30, "the event", |v| {
        v.and_then(|v| v["items"].as_array().cloned()).is_some_and(|items| {
            items.iter().any(|e| {
                e["involvedObject"]["uid"] == uid.as_str()
                    && e["reason"] == "OwnerRefInvalidNamespace"
                    && e["message"] == want.as_str()
            })
        })
    });
    // Deleting the owner does not collect it either.
    kubectl_ok(&server, &["delete", "configmap", "ns-owner"]);
    std::thread::sleep(Duration::from_secs(3));
    assert!(get(&server, &["clusterrole", "cluster-dep"]).is_some(), "the cluster-scoped object stays");
}

/// PodGC: a pod bound to a node that does not exist is marked Failed with
/// the DisruptionTarget condition (reason DeletionByPodGC) and force
/// deleted once the node has been missing for the quarantine (40 s, checks
/// every 20 s). A test finalizer keeps the deleted pod visible.
#[test]
fn podgc_deletes_pods_of_a_node_that_does_not_exist() {
    let server = start();
    let mut p = pod("orphaned", vec![]);
    p["metadata"]["finalizers"] = json!(["example.com/hold"]);
    p["spec"]["nodeName"] = json!("no-such-node");
    create(&server, &p);
    eventually(&server, &["pod", "orphaned"], 150, "PodGC deleting the orphaned pod", |v| {
        v.is_some_and(|v| !v["metadata"]["deletionTimestamp"].is_null())
    });
    let v = get(&server, &["pod", "orphaned"]).unwrap();
    assert_eq!(v["status"]["phase"], "Failed");
    let cond = v["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "DisruptionTarget").cloned())
        .expect("DisruptionTarget condition");
    assert_eq!(cond["status"], "True");
    assert_eq!(cond["reason"], "DeletionByPodGC");
    assert_eq!(cond["message"], "PodGC: node no longer exists");
    // Force deleted: no grace period left.
    assert_eq!(v["metadata"]["deletionGracePeriodSeconds"], 0);
    kubectl_ok(&server, &["patch", "pod", "orphaned", "--type=merge", "-p", r#"{"metadata":{"finalizers":null}}"#]);
    gone(&server, &["pod", "orphaned"], "the orphaned pod");
}

/// PodGC: a terminating pod that was never scheduled, and a terminating
/// pod on a NotReady node with the `node.kubernetes.io/out-of-service`
/// taint, are marked Failed and force deleted (grace period 0). Test
/// finalizers keep both visible.
#[test]
fn podgc_force_deletes_unscheduled_and_out_of_service_terminating_pods() {
    let server = start();
    create(
        &server,
        &json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "oos-node"},
                "spec": {"taints": [{"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}]}}),
    );
    let mut unscheduled = pod("unscheduled", vec![]);
    unscheduled["metadata"]["finalizers"] = json!(["example.com/hold"]);
    create(&server, &unscheduled);
    let mut oos = pod("on-oos-node", vec![]);
    oos["metadata"]["finalizers"] = json!(["example.com/hold"]);
    oos["spec"]["nodeName"] = json!("oos-node");
    oos["spec"]["terminationGracePeriodSeconds"] = json!(300);
    create(&server, &oos);
    kubectl_ok(&server, &["delete", "pod", "unscheduled", "on-oos-node", "--wait=false"]);
    // A bound pod's graceful deletion starts with its full grace period.
    let v = get(&server, &["pod", "on-oos-node"]).unwrap();
    assert_eq!(v["metadata"]["deletionGracePeriodSeconds"], 300);
    for name in ["unscheduled", "on-oos-node"] {
        eventually(&server, &["pod", name], 60, &format!("PodGC failing and force deleting {name}"), |v| {
            v.is_some_and(|v| v["status"]["phase"] == "Failed" && v["metadata"]["deletionGracePeriodSeconds"] == 0)
        });
        kubectl_ok(&server, &["patch", "pod", name, "--type=merge", "-p", r#"{"metadata":{"finalizers":null}}"#]);
        gone(&server, &["pod", name], name);
    }
}
