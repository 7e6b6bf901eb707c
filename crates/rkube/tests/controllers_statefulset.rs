//! The StatefulSet controller inside `rkube server`, driven with the real
//! kubectl (`scale`, `patch`, `rollout status|history|undo`). No scheduler
//! or kubelet runs: a background thread plays the kubelet, marking pods
//! Running and Ready through the status subresource when allowed and
//! finishing graceful pod deletions when allowed.
//!
//! Expected behaviour is upstream's (`pkg/controller/statefulset`): pods
//! `<set>-<ordinal>` created one at a time under OrderedReady (each after
//! the previous is Running and Ready), removed in reverse ordinal order;
//! claims `<template>-<set>-<ordinal>` created before their pod; the
//! identity labels, hostname and subdomain; RollingUpdate from the highest
//! ordinal down to the partition; ControllerRevisions as the history
//! kubectl shows and rolls back to; events worded as upstream's
//! `StatefulPodControl` ("create Pod web-0 in StatefulSet web successful").

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{json, Value};
use support::{TestServer, TestServerOptions};

const WAIT: Duration = Duration::from_secs(90);

fn start() -> TestServer {
    TestServer::start_with(TestServerOptions {
        extra_args: vec!["--controllers".into(), "serviceaccount-controller,statefulset-controller".into()],
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

fn statefulset(name: &str, replicas: u32, image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "serviceName": "nginx",
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                // Bound to a node, so deletions are graceful (an unbound
                // pod is removed at once) and the test sees their order.
                "spec": {"nodeName": "node-1", "containers": [{"name": "app", "image": image,
                    "volumeMounts": [{"name": "www", "mountPath": "/data"}]}]}
            },
            "volumeClaimTemplates": [{
                "metadata": {"name": "www"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
            }]
        }
    })
}

/// `name → pod` of the namespace's pods.
fn pods(server: &TestServer) -> std::collections::BTreeMap<String, Value> {
    let list = server.get_json(&["pods"]);
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["metadata"]["name"].as_str().unwrap().to_string(), p.clone()))
        .collect()
}

fn pod_exists(server: &TestServer, name: &str) -> bool {
    server.kubectl(&["get", "pod", name]).status.success()
}

fn events(server: &TestServer) -> String {
    server.kubectl_ok(&["get", "events", "-o", "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}"])
}

// Conformance "StatefulSet, Scaling": pods are created in order, each
// after the previous is Running and Ready, and removed in reverse order.
#[test]
fn statefulset_scaling_creates_in_order_and_removes_in_reverse() {
    let server = start();
    server.create(&statefulset("web", 3, "nginx:1"));
    with_kubelet(&server, false, |kubelet| {
        server.wait_for(WAIT, "web-0", || pod_exists(&server, "web-0"));
        // OrderedReady: web-1 waits for web-0 to be Running and Ready.
        std::thread::sleep(Duration::from_secs(3));
        assert!(!pod_exists(&server, "web-1"), "web-1 was created before web-0 was ready");
        let p = server.get_json(&["pod", "web-0"]);
        let labels = &p["metadata"]["labels"];
        assert_eq!(labels["statefulset.kubernetes.io/pod-name"], "web-0");
        assert_eq!(labels["apps.kubernetes.io/pod-index"], "0");
        assert_eq!(labels["app"], "web");
        assert!(labels["controller-revision-hash"].as_str().unwrap().starts_with("web-"));
        assert_eq!(p["spec"]["hostname"], "web-0");
        assert_eq!(p["spec"]["subdomain"], "nginx");
        assert_eq!(p["metadata"]["ownerReferences"][0]["kind"], "StatefulSet");
        assert_eq!(p["metadata"]["ownerReferences"][0]["controller"], true);
        let claim_volume = p["spec"]["volumes"].as_array().unwrap().iter().find(|v| v["name"] == "www").cloned();
        assert_eq!(claim_volume.unwrap()["persistentVolumeClaim"]["claimName"], "www-web-0");
        let pvc = server.get_json(&["pvc", "www-web-0"]);
        assert_eq!(pvc["metadata"]["labels"]["app"], "web");
        assert_eq!(pvc["spec"]["resources"]["requests"]["storage"], "1Gi");

        mark_ready(&server, "web-0");
        server.wait_for(WAIT, "web-1", || pod_exists(&server, "web-1"));
        std::thread::sleep(Duration::from_secs(3));
        assert!(!pod_exists(&server, "web-2"), "web-2 was created before web-1 was ready");
        kubelet.make_ready.store(true, Ordering::SeqCst);
        server.kubectl_ok(&["rollout", "status", "statefulset/web", "--timeout=90s"]);
        let sts = server.get_json(&["statefulset", "web"]);
        let st = &sts["status"];
        assert_eq!((st["replicas"].as_i64(), st["readyReplicas"].as_i64()), (Some(3), Some(3)));
        assert_eq!((st["availableReplicas"].as_i64(), st["currentReplicas"].as_i64()), (Some(3), Some(3)));
        assert_eq!(st["updatedReplicas"].as_i64(), Some(3));
        assert_eq!(st["observedGeneration"], sts["metadata"]["generation"]);
        assert_eq!(st["currentRevision"], st["updateRevision"]);
        for c in ["www-web-1", "www-web-2"] {
            server.get_json(&["pvc", c]);
        }
        let ev = events(&server);
        assert!(ev.contains("SuccessfulCreate: create Pod web-0 in StatefulSet web successful"), "{ev}");
        assert!(
            ev.contains("SuccessfulCreate: create Claim www-web-0 for Pod web-0 in StatefulSet web successful"),
            "{ev}"
        );

        // Scale down: web-2 goes first, and web-1 only once web-2 is gone.
        kubelet.finish_deletions.store(false, Ordering::SeqCst);
        server.kubectl_ok(&["scale", "statefulset", "web", "--replicas=1"]);
        server
            .wait_for(WAIT, "web-2 terminating", || !pods(&server)["web-2"]["metadata"]["deletionTimestamp"].is_null());
        std::thread::sleep(Duration::from_secs(3));
        assert!(
            pods(&server)["web-1"]["metadata"]["deletionTimestamp"].is_null(),
            "web-1 deleted before web-2 was gone"
        );
        kubelet.finish_deletions.store(true, Ordering::SeqCst);
        server.wait_for(WAIT, "only web-0 left", || pods(&server).keys().cloned().collect::<Vec<_>>() == ["web-0"]);
        let ev = events(&server);
        assert!(ev.contains("SuccessfulDelete: delete Pod web-2 in StatefulSet web successful"), "{ev}");
        // Claims are retained by default (whenScaled: Retain).
        server.get_json(&["pvc", "www-web-2"]);
        server.wait_for(WAIT, "status replicas 1", || {
            server.get_json(&["statefulset", "web"])["status"]["replicas"].as_i64() == Some(1)
        });
    });
}

/// The pod as JSON, or null while it does not exist (a rolling update
/// deletes each pod before the controller recreates it).
fn pod_json(server: &TestServer, pod: &str) -> Value {
    let out = server.kubectl(&["get", "pod", pod, "-o", "json", "--ignore-not-found"]);
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

fn revision_of(server: &TestServer, pod: &str) -> String {
    pod_json(server, pod)["metadata"]["labels"]["controller-revision-hash"].as_str().unwrap_or("").to_string()
}

fn image_of(server: &TestServer, pod: &str) -> String {
    pod_json(server, pod)["spec"]["containers"][0]["image"].as_str().unwrap_or("").to_string()
}

// Conformance "StatefulSet, Rolling Update with Partition" and
// "StatefulSet, Rolling Update": pods at or above the partition move to
// the update revision, highest ordinal first; the history is kept in
// ControllerRevisions that `kubectl rollout history|undo` use.
#[test]
fn statefulset_rolling_update_with_partition_history_and_undo() {
    let server = start();
    server.create(&statefulset("web", 3, "nginx:1"));
    with_kubelet(&server, true, |kubelet| {
        server.kubectl_ok(&["rollout", "status", "statefulset/web", "--timeout=90s"]);
        let first = server.get_json(&["statefulset", "web"])["status"]["currentRevision"].as_str().unwrap().to_string();
        let revs = server.get_json(&["controllerrevisions", "-l", "app=web"]);
        let items = revs["items"].as_array().unwrap();
        assert_eq!(items.len(), 1);
        assert_eq!(items[0]["metadata"]["name"], first.as_str());
        assert_eq!(items[0]["revision"], 1);
        let hash = first.strip_prefix("web-").unwrap();
        assert_eq!(items[0]["metadata"]["labels"]["controller.kubernetes.io/hash"], hash);

        // Partition 2: only web-2 is updated.
        let patch = json!({"spec": {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}},
            "template": {"spec": {"containers": [{"name": "app", "image": "nginx:2"}]}}}});
        server.kubectl_ok(&["patch", "statefulset", "web", "-p", &patch.to_string()]);
        server.wait_for(WAIT, "web-2 updated", || {
            image_of(&server, "web-2") == "nginx:2" && revision_of(&server, "web-2") != first
        });
        let update = revision_of(&server, "web-2");
        server.wait_for(WAIT, "status of the partitioned update", || {
            let st = server.get_json(&["statefulset", "web"])["status"].clone();
            st["updateRevision"] == update.as_str() && st["updatedReplicas"] == 1 && st["readyReplicas"] == 3
        });
        std::thread::sleep(Duration::from_secs(3));
        for p in ["web-0", "web-1"] {
            assert_eq!((image_of(&server, p), revision_of(&server, p)), ("nginx:1".to_string(), first.clone()));
        }
        let st = server.get_json(&["statefulset", "web"])["status"].clone();
        assert_eq!(st["currentRevision"], first.as_str());
        // kubectl reports a partitioned roll out as complete.
        server.kubectl_ok(&["rollout", "status", "statefulset/web", "--timeout=60s"]);

        // Partition 0: web-1 then web-0, in reverse ordinal order.
        let patch = json!({"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}});
        // The new web-1 is held not Ready, so the controller may not move
        // on to web-0: the order is visible without racing the update.
        kubelet.make_ready.store(false, Ordering::SeqCst);
        server.kubectl_ok(&["patch", "statefulset", "web", "-p", &patch.to_string()]);
        server.wait_for(WAIT, "web-1 updated", || revision_of(&server, "web-1") == update);
        std::thread::sleep(Duration::from_secs(2));
        assert_eq!(revision_of(&server, "web-0"), first, "web-0 was updated before web-1");
        kubelet.make_ready.store(true, Ordering::SeqCst);
        server.wait_for(WAIT, "web-0 updated", || revision_of(&server, "web-0") == update);
        server.kubectl_ok(&["rollout", "status", "statefulset/web", "--timeout=90s"]);
        let st = server.get_json(&["statefulset", "web"])["status"].clone();
        assert_eq!((st["currentRevision"].as_str(), st["updatedReplicas"].as_i64()), (Some(update.as_str()), Some(3)));

        let history = server.kubectl_ok(&["rollout", "history", "statefulset/web"]);
        let numbers: Vec<&str> = history
            .lines()
            .skip_while(|l| !l.starts_with("REVISION"))
            .skip(1)
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        assert_eq!(numbers, ["1", "2"], "{history}");

        // Undo: back to nginx:1, whose revision becomes number 3.
        server.kubectl_ok(&["rollout", "undo", "statefulset/web"]);
        server.wait_for(WAIT, "rolled back", || {
            ["web-0", "web-1", "web-2"].iter().all(|p| pod_exists(&server, p) && image_of(&server, p) == "nginx:1")
        });
        server.kubectl_ok(&["rollout", "status", "statefulset/web", "--timeout=90s"]);
        let st = server.get_json(&["statefulset", "web"])["status"].clone();
        assert_eq!(st["currentRevision"], first.as_str());
        let revs = server.get_json(&["controllerrevisions", "-l", "app=web"]);
        let mut numbered: Vec<(i64, String)> = revs["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["revision"].as_i64().unwrap(), r["metadata"]["name"].as_str().unwrap().to_string()))
            .collect();
        numbered.sort();
        assert_eq!(numbered, [(2, update.clone()), (3, first.clone())]);
    });
}

// Conformance "StatefulSet, Burst Scaling": with podManagementPolicy
// Parallel every pod is created without waiting for the others to be
// ready, and all condemned pods go at once. Also the claim retention
// policy's owner references (Delete/Delete).
#[test]
fn statefulset_burst_scaling_creates_and_deletes_in_parallel() {
    let server = start();
    let mut sts = statefulset("burst", 3, "nginx:1");
    sts["spec"]["podManagementPolicy"] = json!("Parallel");
    sts["spec"]["persistentVolumeClaimRetentionPolicy"] = json!({"whenDeleted": "Delete", "whenScaled": "Delete"});
    server.create(&sts);
    with_kubelet(&server, false, |kubelet| {
        server.wait_for(WAIT, "three unready pods", || {
            pods(&server).keys().cloned().collect::<Vec<_>>() == ["burst-0", "burst-1", "burst-2"]
        });
        assert!(pods(&server).values().all(|p| !is_ready(p)));
        kubelet.make_ready.store(true, Ordering::SeqCst);
        server.kubectl_ok(&["rollout", "status", "statefulset/burst", "--timeout=90s"]);
        // whenDeleted: Delete — the set controls its claims.
        let set_uid = server.get_json(&["statefulset", "burst"])["metadata"]["uid"].clone();
        let owner = |claim: &str| server.get_json(&["pvc", claim])["metadata"]["ownerReferences"].clone();
        let refs = owner("www-burst-2");
        assert_eq!((refs[0]["kind"].as_str(), &refs[0]["uid"]), (Some("StatefulSet"), &set_uid), "{refs}");
        assert_eq!(refs[0]["controller"], true);
        let pod2_uid = pods(&server)["burst-2"]["metadata"]["uid"].clone();
        kubelet.finish_deletions.store(false, Ordering::SeqCst);
        server.kubectl_ok(&["scale", "statefulset", "burst", "--replicas=1"]);
        server.wait_for(WAIT, "burst-1 and burst-2 terminating together", || {
            let p = pods(&server);
            ["burst-1", "burst-2"]
                .iter()
                .all(|n| p.get(*n).is_some_and(|p| !p["metadata"]["deletionTimestamp"].is_null()))
        });
        kubelet.finish_deletions.store(true, Ordering::SeqCst);
        server.wait_for(WAIT, "only burst-0 left", || pods(&server).keys().cloned().collect::<Vec<_>>() == ["burst-0"]);
        // whenScaled: Delete — a scaled-down claim is handed to its pod.
        let refs = owner("www-burst-2");
        assert_eq!(refs.as_array().map(Vec::len), Some(1), "{refs}");
        assert_eq!((refs[0]["kind"].as_str(), &refs[0]["uid"]), (Some("Pod"), &pod2_uid), "{refs}");
        assert_eq!(owner("www-burst-0")[0]["uid"], set_uid);
    });
}

// Conformance "StatefulSet, Recreate Failed Pod": a pod that fails is
// deleted and created again under the same name.
#[test]
fn statefulset_recreates_a_failed_pod() {
    let server = start();
    server.create(&statefulset("db", 1, "nginx:1"));
    with_kubelet(&server, true, |kubelet| {
        server.kubectl_ok(&["rollout", "status", "statefulset/db", "--timeout=90s"]);
        let uid = server.get_json(&["pod", "db-0"])["metadata"]["uid"].clone();
        kubelet.make_ready.store(false, Ordering::SeqCst);
        let patch = r#"{"status":{"phase":"Failed","conditions":[{"type":"Ready","status":"False"}]}}"#;
        server.kubectl_ok(&["patch", "pod", "db-0", "--subresource=status", "--type=merge", "-p", patch]);
        server.wait_for(WAIT, "db-0 recreated", || {
            let out = server.kubectl(&["get", "pod", "db-0", "-o", "json"]);
            out.status.success() && serde_json::from_slice::<Value>(&out.stdout).unwrap()["metadata"]["uid"] != uid
        });
        let ev = events(&server);
        let want = "RecreatingFailedPod: StatefulSet default/db is recreating failed Pod db-0";
        assert!(ev.contains(want), "{ev}");
        kubelet.make_ready.store(true, Ordering::SeqCst);
        server.kubectl_ok(&["rollout", "status", "statefulset/db", "--timeout=90s"]);
    });
}
