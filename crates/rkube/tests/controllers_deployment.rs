//! The Deployment controller inside `rkube server` with the ReplicaSet
//! controller, driven with the real kubectl (`rollout status|history|
//! undo|pause|resume`, `set image`, `scale`). No scheduler or kubelet
//! runs: a background thread plays the kubelet, marking pods Running and
//! Ready through the status subresource (except pods whose image contains
//! `nonexistent`) and, when allowed, finishing graceful pod deletions.
//!
//! Expected behaviour is upstream's (`pkg/controller/deployment`):
//! ReplicaSets `<deployment>-<pod-template-hash>` with the hash in their
//! labels, selector and template; revisions in
//! `deployment.kubernetes.io/revision` (and `revision-history` after a
//! rollback); `kubernetes.io/change-cause` copied to the ReplicaSet;
//! RollingUpdate within maxSurge/maxUnavailable (25% by default);
//! Recreate scaling old sets to 0 before the new one; proportional
//! scaling; `revisionHistoryLimit`; the Progressing and Available
//! conditions; `ScalingReplicaSet` events worded as upstream 1.33
//! ("Scaled up replica set web-x from 0 to 3").

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{TestServer, TestServerOptions};

fn start() -> TestServer {
    TestServer::start_with(TestServerOptions {
        extra_args: vec![
            "--controllers".into(),
            "serviceaccount-controller,deployment-controller,replicaset-controller".into(),
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

/// Polls until `check` holds on `kubectl get -o json <args>` (90 s).
fn eventually(server: &TestServer, args: &[&str], what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(90);
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
        if Instant::now() >= deadline {
            let state = server.kubectl(&["get", "deployments,replicasets,events", "-o", "yaml"]);
            panic!(
                "{what} did not happen within 90s; last: {last:#}\n{}\nserver log:\n{}",
                String::from_utf8_lossy(&state.stdout),
                server.logs()
            );
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// The fake kubelet: what it may do.
struct Kubelet {
    stop: AtomicBool,
    finish_deletions: AtomicBool,
}

impl Kubelet {
    fn new() -> Kubelet {
        Kubelet { stop: AtomicBool::new(false), finish_deletions: AtomicBool::new(true) }
    }

    /// Until stopped: pods not Ready become Running/Ready (unless their
    /// image names a `nonexistent` one); terminating pods are removed when
    /// `finish_deletions` is set.
    fn run(&self, server: &TestServer) {
        while !self.stop.load(Ordering::SeqCst) {
            let out = server.kubectl(&["get", "pods", "-A", "-o", "json"]);
            if out.status.success() {
                let list: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
                for p in list["items"].as_array().into_iter().flatten() {
                    let ns = p["metadata"]["namespace"].as_str().unwrap_or("default");
                    let name = p["metadata"]["name"].as_str().unwrap_or("");
                    if !p["metadata"]["deletionTimestamp"].is_null() {
                        if self.finish_deletions.load(Ordering::SeqCst) {
                            server.kubectl(&["-n", ns, "delete", "pod", name, "--grace-period=0", "--force"]);
                        }
                        continue;
                    }
                    let image = p["spec"]["containers"][0]["image"].as_str().unwrap_or("");
                    let ready = p["status"]["conditions"]
                        .as_array()
                        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"));
                    if ready || image.contains("nonexistent") {
                        continue;
                    }
                    let patch = r#"{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}"#;
                    server.kubectl(&[
                        "-n",
                        ns,
                        "patch",
                        "pod",
                        name,
                        "--subresource=status",
                        "--type=merge",
                        "-p",
                        patch,
                    ]);
                }
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    }
}

/// Runs `body` with the fake kubelet running beside it.
fn with_kubelet(server: &TestServer, body: impl FnOnce(&Kubelet)) {
    let kubelet = Kubelet::new();
    std::thread::scope(|s| {
        s.spawn(|| kubelet.run(server));
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&kubelet)));
        kubelet.stop.store(true, Ordering::SeqCst);
        if let Err(e) = r {
            std::panic::resume_unwind(e);
        }
    });
}

fn deployment_manifest(name: &str, replicas: u32, image: &str, extra_spec: &str) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  replicas: {replicas}
{extra_spec}  selector:
    matchLabels:
      app: {name}
  template:
    metadata:
      labels:
        app: {name}
    spec:
      containers:
      - name: app
        image: {image}
"#
    )
}

/// The ReplicaSets controlled by the Deployment `name`, oldest revision first.
fn owned_sets(server: &TestServer, name: &str) -> Vec<Value> {
    let d = get_json(server, &["deployment", name]);
    let uid = d["metadata"]["uid"].clone();
    let list = get_json(server, &["replicasets"]);
    let mut v: Vec<Value> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|rs| {
            rs["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|o| o.iter().any(|r| r["uid"] == uid && r["controller"] == true))
        })
        .cloned()
        .collect();
    v.sort_by_key(|rs| revision(rs));
    v
}

fn revision(obj: &Value) -> i64 {
    obj["metadata"]["annotations"]["deployment.kubernetes.io/revision"].as_str().unwrap_or("0").parse().unwrap()
}

fn image_of(rs: &Value) -> &str {
    rs["spec"]["template"]["spec"]["containers"][0]["image"].as_str().unwrap()
}

fn condition<'a>(d: &'a Value, type_: &str) -> &'a Value {
    d["status"]["conditions"].as_array().and_then(|cs| cs.iter().find(|c| c["type"] == type_)).unwrap_or(&Value::Null)
}

fn event_messages(server: &TestServer, object: &str) -> Vec<String> {
    let v = get_json(server, &["events", "--field-selector", &format!("involvedObject.name={object}")]);
    let mut evs: Vec<&Value> =
        v["items"].as_array().unwrap().iter().filter(|e| e["reason"] == "ScalingReplicaSet").collect();
    evs.sort_by_key(|e| e["metadata"]["creationTimestamp"].as_str().unwrap_or("").to_string());
    for e in &evs {
        assert_eq!(e["source"]["component"], "deployment-controller");
        assert_eq!(e["type"], "Normal");
        // client-go's recorder names an event `<object>.<hex UnixNano>`
        // (`fmt.Sprintf("%v.%x", ref.Name, t.UnixNano())`).
        let name = e["metadata"]["name"].as_str().unwrap();
        let (obj, hex) = name.rsplit_once('.').unwrap();
        assert_eq!(obj, object, "{name}");
        assert!(!hex.is_empty() && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)), "{name}");
        // Nanoseconds since 1970 in hex: 2001 onwards has 15 or 16 digits.
        assert!((15..=16).contains(&hex.len()), "{name}");
    }
    evs.iter().map(|e| e["message"].as_str().unwrap().to_string()).collect()
}

fn rollout_status(server: &TestServer, name: &str) -> String {
    let out = server.kubectl(&["rollout", "status", &format!("deployment/{name}"), "--timeout=90s"]);
    if !out.status.success() {
        let state = server.kubectl(&["get", "deployments,replicasets,pods", "-o", "yaml"]);
        let logs: Vec<String> = server
            .logs()
            .lines()
            .filter(|l| l.contains("deployment") || l.contains("replicaset"))
            .map(str::to_string)
            .collect();
        panic!(
            "rollout status {name}: {}\n{}\n{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&state.stdout),
            logs.join("\n")
        );
    }
    String::from_utf8(out.stdout).unwrap()
}

fn wait_sets(server: &TestServer, name: &str, what: &str, check: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let sets = owned_sets(server, name);
        if check(&sets) {
            return sets;
        }
        assert!(Instant::now() < deadline, "{what} did not happen within 90s; sets: {sets:#?}\n{}", server.logs());
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Conformance: the controller's part of "Deployment, completes the
/// lifecycle of a Deployment" (create → ready replicas, `kubectl rollout
/// status`; the patch/status/delete-collection steps are the API's), with
/// "Deployment RollingUpdate" (the template change rolls to a new
/// ReplicaSet and the old one is scaled to 0), plus `rollout history`
/// with change-cause and `rollout undo` back to revision 1's template as
/// revision 3.
#[test]
fn deployment_rolling_update_history_and_undo() {
    let server = start();
    with_kubelet(&server, |_| {
        apply(&server, "web", &deployment_manifest("web", 3, "registry.k8s.io/pause:3.9", ""));
        kubectl_ok(&server, &["annotate", "deployment", "web", "kubernetes.io/change-cause=create v1"]);
        let out = rollout_status(&server, "web");
        assert!(out.contains(r#"deployment "web" successfully rolled out"#), "{out}");

        let sets = wait_sets(&server, "web", "one set with change-cause", |s| {
            s.len() == 1 && s[0]["metadata"]["annotations"]["kubernetes.io/change-cause"] == "create v1"
        });
        let rs1 = &sets[0];
        let name1 = rs1["metadata"]["name"].as_str().unwrap().to_string();
        let hash = rs1["metadata"]["labels"]["pod-template-hash"].as_str().unwrap().to_string();
        assert_eq!(name1, format!("web-{hash}"));
        assert_eq!(rs1["spec"]["selector"]["matchLabels"]["pod-template-hash"], hash.as_str());
        assert_eq!(rs1["spec"]["selector"]["matchLabels"]["app"], "web");
        assert_eq!(rs1["spec"]["template"]["metadata"]["labels"]["pod-template-hash"], hash.as_str());
        assert_eq!(rs1["spec"]["replicas"], 3);
        assert_eq!(revision(rs1), 1);
        let ann = &rs1["metadata"]["annotations"];
        assert_eq!(ann["deployment.kubernetes.io/desired-replicas"], "3");
        // 25% surge of 3 rounds up to 1.
        assert_eq!(ann["deployment.kubernetes.io/max-replicas"], "4");
        let owner = &rs1["metadata"]["ownerReferences"][0];
        assert_eq!((owner["kind"].as_str(), owner["name"].as_str()), (Some("Deployment"), Some("web")));
        assert_eq!(owner["blockOwnerDeletion"], true);

        let d = eventually(&server, &["deployment", "web"], "complete status", |d| {
            condition(d, "Progressing")["reason"] == "NewReplicaSetAvailable"
        });
        assert_eq!(revision(&d), 1);
        assert_eq!(d["status"]["observedGeneration"], d["metadata"]["generation"]);
        for f in ["replicas", "updatedReplicas", "readyReplicas", "availableReplicas"] {
            assert_eq!(d["status"][f], 3, "{f}: {d:#}");
        }
        assert!(d["status"]["unavailableReplicas"].is_null());
        let p = condition(&d, "Progressing");
        assert_eq!(p["status"], "True");
        assert_eq!(p["message"], format!("ReplicaSet \"{name1}\" has successfully progressed."));
        let a = condition(&d, "Available");
        assert_eq!((a["status"].as_str(), a["reason"].as_str()), (Some("True"), Some("MinimumReplicasAvailable")));
        assert_eq!(a["message"], "Deployment has minimum availability.");
        assert_eq!(event_messages(&server, "web"), [format!("Scaled up replica set {name1} from 0 to 3")]);

        // Revision 2: a new set; the old one is scaled down to 0.
        kubectl_ok(&server, &["set", "image", "deployment/web", "app=registry.k8s.io/pause:3.10"]);
        kubectl_ok(&server, &["annotate", "--overwrite", "deployment", "web", "kubernetes.io/change-cause=image 3.10"]);
        // Throughout the rollout the sets never ask for more than replicas + maxSurge = 4 pods.
        let sets = wait_sets(&server, "web", "revision 2 complete", |s| {
            let total: i64 = s.iter().map(|rs| rs["spec"]["replicas"].as_i64().unwrap_or(0)).sum();
            assert!(total <= 4, "more than replicas + maxSurge: {s:#?}");
            s.len() == 2 && s[0]["spec"]["replicas"] == 0 && s[1]["status"]["availableReplicas"] == 3
        });
        rollout_status(&server, "web");
        let name2 = sets[1]["metadata"]["name"].as_str().unwrap().to_string();
        assert_eq!((revision(&sets[0]), revision(&sets[1])), (1, 2));
        assert_eq!(image_of(&sets[1]), "registry.k8s.io/pause:3.10");
        assert_ne!(sets[1]["metadata"]["labels"]["pod-template-hash"], hash.as_str());
        let d = eventually(&server, &["deployment", "web"], "revision 2", |d| {
            revision(d) == 2 && condition(d, "Progressing")["reason"] == "NewReplicaSetAvailable"
        });
        assert_eq!(d["status"]["updatedReplicas"], 3);
        let msgs = event_messages(&server, "web");
        // maxSurge 1, maxUnavailable 0: one new pod first, then the old set steps down.
        assert!(msgs.contains(&format!("Scaled up replica set {name2} from 0 to 1")), "{msgs:?}");
        assert!(msgs.contains(&format!("Scaled down replica set {name1} from 3 to 2")), "{msgs:?}");
        let to_zero = format!("Scaled down replica set {name1} from ");
        assert!(msgs.iter().any(|m| m.starts_with(&to_zero) && m.ends_with(" to 0")), "{msgs:?}");

        let history = wait_history(&server, "image 3.10");
        assert!(
            history.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["1", "create", "v1"]),
            "{history}"
        );
        assert!(
            history.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["2", "image", "3.10"]),
            "{history}"
        );

        // Undo: revision 1's set comes back as revision 3, keeping "1" in its history.
        kubectl_ok(&server, &["rollout", "undo", "deployment/web"]);
        rollout_status(&server, "web");
        let sets = wait_sets(&server, "web", "revision 3 complete", |s| {
            s.len() == 2
                && revision(&s[1]) == 3
                && s[1]["status"]["availableReplicas"] == 3
                && s[0]["spec"]["replicas"] == 0
        });
        assert_eq!(sets[1]["metadata"]["name"], name1.as_str());
        assert_eq!(sets[1]["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"], "1");
        assert_eq!(sets[0]["metadata"]["name"], name2.as_str());
        let d = get_json(&server, &["deployment", "web"]);
        assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["image"], "registry.k8s.io/pause:3.9");
        eventually(&server, &["deployment", "web"], "deployment revision 3", |d| revision(d) == 3);
    });
}

fn wait_history(server: &TestServer, contains: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = kubectl_ok(server, &["rollout", "history", "deployment/web"]);
        if out.contains(contains) {
            return out;
        }
        assert!(Instant::now() < deadline, "rollout history never showed {contains:?}: {out}");
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Conformance: "Deployment RollingUpdate" as upstream's e2e
/// testRollingUpdateDeployment: an existing ReplicaSet with revision
/// 3546343826724305832 is adopted by a Deployment selecting its pods; the
/// Deployment's new set gets revision 3546343826724305833 and the adopted
/// one is scaled to 0.
#[test]
fn deployment_rolling_update_adopts_existing_replica_set() {
    let server = start();
    with_kubelet(&server, |_| {
        let rs = r#"apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: test-rolling-update-controller
  annotations:
    deployment.kubernetes.io/revision: "3546343826724305832"
  labels:
    name: sample-pod
spec:
  replicas: 1
  selector:
    matchLabels:
      name: sample-pod
  template:
    metadata:
      labels:
        name: sample-pod
    spec:
      containers:
      - name: httpd
        image: registry.k8s.io/pause:3.9
"#;
        apply(&server, "rs", rs);
        eventually(&server, &["replicaset", "test-rolling-update-controller"], "rs ready", |v| {
            v["status"]["availableReplicas"] == 1
        });
        let d = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: test-rolling-update-deployment
spec:
  replicas: 1
  selector:
    matchLabels:
      name: sample-pod
  template:
    metadata:
      labels:
        name: sample-pod
    spec:
      containers:
      - name: agnhost
        image: registry.k8s.io/pause:3.10
"#;
        apply(&server, "d", d);
        rollout_status(&server, "test-rolling-update-deployment");
        let sets = wait_sets(&server, "test-rolling-update-deployment", "adopted set at 0", |s| {
            s.len() == 2 && s[0]["spec"]["replicas"] == 0 && s[1]["status"]["availableReplicas"] == 1
        });
        assert_eq!(sets[0]["metadata"]["name"], "test-rolling-update-controller");
        assert_eq!(sets[1]["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "3546343826724305833");
    });
}

/// Conformance: "Deployment Recreate": every old pod is gone before the
/// new ReplicaSet gets any replica. The pods carry a `nodeName` so that
/// their deletion is graceful (they stay Terminating until the fake
/// kubelet finishes them), as on a real node.
#[test]
fn deployment_recreate_scales_old_to_zero_first() {
    let server = start();
    with_kubelet(&server, |kubelet| {
        let manifest = deployment_manifest("re", 2, "registry.k8s.io/pause:3.9", "  strategy:\n    type: Recreate\n")
            .replace("    spec:\n      containers:", "    spec:\n      nodeName: node-1\n      containers:");
        apply(&server, "re", &manifest);
        rollout_status(&server, "re");
        let rs1 = owned_sets(&server, "re")[0].clone();
        let name1 = rs1["metadata"]["name"].as_str().unwrap().to_string();
        let hash1 = rs1["metadata"]["labels"]["pod-template-hash"].as_str().unwrap().to_string();

        // Old pods stay Terminating until the kubelet finishes them.
        kubelet.finish_deletions.store(false, Ordering::SeqCst);
        kubectl_ok(&server, &["set", "image", "deployment/re", "app=registry.k8s.io/pause:3.10"]);
        let old_pods = format!("pod-template-hash={hash1}");
        let old = eventually(&server, &["pods", "-l", &old_pods], "old pods deleted", |v| {
            v["items"].as_array().unwrap().iter().all(|p| !p["metadata"]["deletionTimestamp"].is_null())
        });
        let terminating = old["items"].as_array().unwrap().len();
        if terminating > 0 {
            // While they terminate, no new replica may start.
            std::thread::sleep(Duration::from_secs(3));
            let sets = owned_sets(&server, "re");
            assert!(
                sets.iter().all(|s| s["metadata"]["name"] == name1.as_str() || s["spec"]["replicas"] == 0),
                "the new set was scaled up while old pods ran: {sets:#?}"
            );
            let pods = get_json(&server, &["pods", "-l", "app=re"]);
            assert_eq!(pods["items"].as_array().unwrap().len(), terminating, "{pods:#}");
        }
        kubelet.finish_deletions.store(true, Ordering::SeqCst);
        rollout_status(&server, "re");
        let sets =
            wait_sets(&server, "re", "new set complete", |s| s.len() == 2 && s[1]["status"]["availableReplicas"] == 2);
        let name2 = sets[1]["metadata"]["name"].as_str().unwrap().to_string();
        let msgs = event_messages(&server, "re");
        let down = msgs.iter().position(|m| *m == format!("Scaled down replica set {name1} from 2 to 0"));
        let up = msgs.iter().position(|m| *m == format!("Scaled up replica set {name2} from 0 to 2"));
        assert!(down.is_some() && up.is_some() && down < up, "{msgs:?}");
        assert!(terminating > 0, "old pods were never seen terminating: the wait was not exercised");
    });
}

/// Conformance: "Deployment, completes the scaling of a Deployment
/// subresource": `kubectl scale` (the scale subresource) changes
/// `spec.replicas` and the ReplicaSet follows.
#[test]
fn deployment_scale_subresource_scales_the_replica_set() {
    let server = start();
    with_kubelet(&server, |_| {
        apply(&server, "sc", &deployment_manifest("sc", 1, "registry.k8s.io/pause:3.9", ""));
        rollout_status(&server, "sc");
        let (code, body) = server.get("/apis/apps/v1/namespaces/default/deployments/sc/scale");
        assert_eq!(code, 200, "{body}");
        let scale: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(scale["spec"]["replicas"], 1);
        kubectl_ok(&server, &["scale", "deployment", "sc", "--replicas=4"]);
        let sets =
            wait_sets(&server, "sc", "4 available", |s| s.len() == 1 && s[0]["status"]["availableReplicas"] == 4);
        assert_eq!(sets[0]["spec"]["replicas"], 4);
        assert_eq!(sets[0]["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"], "4");
        let name = sets[0]["metadata"]["name"].as_str().unwrap().to_string();
        eventually(&server, &["deployment", "sc"], "status of 4", |d| {
            d["status"]["availableReplicas"] == 4 && d["status"]["observedGeneration"] == d["metadata"]["generation"]
        });
        let msgs = event_messages(&server, "sc");
        assert!(msgs.contains(&format!("Scaled up replica set {name} from 1 to 4")), "{msgs:?}");
        kubectl_ok(&server, &["scale", "deployment", "sc", "--replicas=2"]);
        wait_sets(&server, "sc", "2 replicas", |s| s[0]["spec"]["replicas"] == 2);
        let msgs = event_messages(&server, "sc");
        assert!(msgs.contains(&format!("Scaled down replica set {name} from 4 to 2")), "{msgs:?}");
    });
}

/// `kubectl rollout pause` stops the rollout of template changes (the
/// Progressing condition says DeploymentPaused); `resume` rolls them out.
#[test]
fn deployment_pause_and_resume() {
    let server = start();
    with_kubelet(&server, |_| {
        apply(&server, "pz", &deployment_manifest("pz", 2, "registry.k8s.io/pause:3.9", ""));
        rollout_status(&server, "pz");
        kubectl_ok(&server, &["rollout", "pause", "deployment/pz"]);
        let d = eventually(&server, &["deployment", "pz"], "paused condition", |d| {
            condition(d, "Progressing")["reason"] == "DeploymentPaused"
        });
        let p = condition(&d, "Progressing");
        assert_eq!((p["status"].as_str(), p["message"].as_str()), (Some("Unknown"), Some("Deployment is paused")));
        kubectl_ok(&server, &["set", "image", "deployment/pz", "app=registry.k8s.io/pause:3.10"]);
        eventually(&server, &["deployment", "pz"], "observed generation", |d| {
            d["status"]["observedGeneration"] == d["metadata"]["generation"]
        });
        std::thread::sleep(Duration::from_secs(2));
        assert_eq!(owned_sets(&server, "pz").len(), 1, "a paused deployment must not roll out");
        // Scaling still works while paused.
        kubectl_ok(&server, &["scale", "deployment", "pz", "--replicas=3"]);
        wait_sets(&server, "pz", "scaled while paused", |s| s.len() == 1 && s[0]["spec"]["replicas"] == 3);

        kubectl_ok(&server, &["rollout", "resume", "deployment/pz"]);
        rollout_status(&server, "pz");
        let sets = wait_sets(&server, "pz", "rolled out after resume", |s| {
            s.len() == 2 && s[0]["spec"]["replicas"] == 0 && s[1]["status"]["availableReplicas"] == 3
        });
        assert_eq!(image_of(&sets[1]), "registry.k8s.io/pause:3.10");
        eventually(&server, &["deployment", "pz"], "complete", |d| {
            condition(d, "Progressing")["reason"] == "NewReplicaSetAvailable"
        });
    });
}

/// Conformance: "Deployment RevisionHistoryLimit": with
/// `revisionHistoryLimit: 0` old ReplicaSets are deleted once the rollout
/// completes.
#[test]
fn deployment_revision_history_limit_deletes_old_sets() {
    let server = start();
    with_kubelet(&server, |_| {
        let extra = "  revisionHistoryLimit: 0\n";
        apply(&server, "rh", &deployment_manifest("rh", 1, "registry.k8s.io/pause:3.9", extra));
        rollout_status(&server, "rh");
        kubectl_ok(&server, &["set", "image", "deployment/rh", "app=registry.k8s.io/pause:3.10"]);
        rollout_status(&server, "rh");
        let sets = wait_sets(&server, "rh", "only the new set left", |s| s.len() == 1 && revision(&s[0]) == 2);
        assert_eq!(image_of(&sets[0]), "registry.k8s.io/pause:3.10");
    });
}

/// Conformance: "Deployment Proportional Scaling": a rollout stuck on an
/// image that never becomes ready (10 replicas, maxSurge 3,
/// maxUnavailable 2) leaves 8 old and 5 new; scaling to 30 spreads the
/// 20 extra replicas in proportion: 20 old and 13 new.
#[test]
fn deployment_proportional_scaling() {
    let server = start();
    with_kubelet(&server, |_| {
        let extra = "  strategy:\n    rollingUpdate:\n      maxSurge: 3\n      maxUnavailable: 2\n";
        apply(&server, "ps", &deployment_manifest("ps", 10, "registry.k8s.io/pause:3.9", extra));
        rollout_status(&server, "ps");
        kubectl_ok(&server, &["set", "image", "deployment/ps", "app=registry.k8s.io/nonexistent:404"]);
        wait_sets(&server, "ps", "stuck rollout 8/5", |s| {
            s.len() == 2 && s[0]["spec"]["replicas"] == 8 && s[1]["spec"]["replicas"] == 5
        });
        // Stays there: the new pods never become available.
        std::thread::sleep(Duration::from_secs(2));
        let sets = owned_sets(&server, "ps");
        assert_eq!((sets[0]["spec"]["replicas"].as_i64(), sets[1]["spec"]["replicas"].as_i64()), (Some(8), Some(5)));
        eventually(&server, &["replicaset", sets[0]["metadata"]["name"].as_str().unwrap()], "8 available", |v| {
            v["status"]["availableReplicas"] == 8
        });
        kubectl_ok(&server, &["scale", "deployment", "ps", "--replicas=30"]);
        let sets = wait_sets(&server, "ps", "proportional 20/13", |s| {
            s.len() == 2 && s[0]["spec"]["replicas"] == 20 && s[1]["spec"]["replicas"] == 13
        });
        assert_eq!(sets[1]["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"], "30");
        assert_eq!(sets[1]["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"], "33");
    });
}

/// The Progressing condition times out after `progressDeadlineSeconds`
/// without progress (reason ProgressDeadlineExceeded), and `kubectl
/// rollout status` then fails with upstream kubectl's message.
#[test]
fn deployment_progress_deadline_exceeded() {
    let server = start();
    with_kubelet(&server, |_| {
        let extra = "  progressDeadlineSeconds: 3\n";
        apply(&server, "pd", &deployment_manifest("pd", 1, "registry.k8s.io/nonexistent:404", extra));
        let d = eventually(&server, &["deployment", "pd"], "deadline exceeded", |d| {
            condition(d, "Progressing")["reason"] == "ProgressDeadlineExceeded"
        });
        let p = condition(&d, "Progressing");
        assert_eq!(p["status"], "False");
        let rs = &owned_sets(&server, "pd")[0];
        let name = rs["metadata"]["name"].as_str().unwrap();
        assert_eq!(p["message"], format!("ReplicaSet \"{name}\" has timed out progressing."));
        let a = condition(&d, "Available");
        assert_eq!((a["status"].as_str(), a["reason"].as_str()), (Some("False"), Some("MinimumReplicasUnavailable")));
        let out = server.kubectl(&["rollout", "status", "deployment/pd", "--timeout=20s"]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(r#"deployment "pd" exceeded its progress deadline"#), "{err}");
    });
}

/// Conformance: "Deployment Rollover": a Deployment adopting an existing
/// ReplicaSet is changed again in the middle of a rollout stuck on an
/// image that never becomes ready; the stuck set is scaled to 0 (its
/// unavailable replica goes first), the adopted one too once the final
/// set is available, and the final set runs the replica.
#[test]
fn deployment_rollover_mid_rollout() {
    let server = start();
    with_kubelet(&server, |_| {
        let rs = r#"apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: test-rollover-controller
  labels:
    name: rollover-pod
spec:
  replicas: 1
  selector:
    matchLabels:
      name: rollover-pod
  template:
    metadata:
      labels:
        name: rollover-pod
    spec:
      containers:
      - name: httpd
        image: registry.k8s.io/pause:3.9
"#;
        apply(&server, "rs", rs);
        eventually(&server, &["replicaset", "test-rollover-controller"], "rs ready", |v| {
            v["status"]["availableReplicas"] == 1
        });
        let d = |image: &str| {
            format!(
                r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: test-rollover-deployment
spec:
  replicas: 1
  strategy:
    rollingUpdate:
      maxSurge: 1
      maxUnavailable: 0
  selector:
    matchLabels:
      name: rollover-pod
  template:
    metadata:
      labels:
        name: rollover-pod
    spec:
      containers:
      - name: redis-slave
        image: {image}
"#
            )
        };
        apply(&server, "d", &d("registry.k8s.io/nonexistent:404"));
        let stuck = wait_sets(&server, "test-rollover-deployment", "stuck rollout", |s| {
            s.len() == 2 && s[1]["spec"]["replicas"] == 1 && s[1]["status"]["replicas"] == 1
        });
        assert_eq!(stuck[0]["metadata"]["name"], "test-rollover-controller");
        assert_eq!(stuck[0]["spec"]["replicas"], 1, "maxUnavailable 0 keeps the adopted replica");
        let stuck_name = stuck[1]["metadata"]["name"].as_str().unwrap().to_string();

        apply(&server, "d", &d("registry.k8s.io/pause:3.10"));
        rollout_status(&server, "test-rollover-deployment");
        let sets = wait_sets(&server, "test-rollover-deployment", "rolled over", |s| {
            s.len() == 3
                && s[0]["spec"]["replicas"] == 0
                && s[1]["spec"]["replicas"] == 0
                && s[2]["status"]["availableReplicas"] == 1
        });
        assert_eq!(sets[1]["metadata"]["name"], stuck_name.as_str());
        assert_eq!(image_of(&sets[2]), "registry.k8s.io/pause:3.10");
        assert_eq!(sets[2]["spec"]["replicas"], 1);
    });
}

/// `kubectl rollout restart` (a template annotation) rolls out a new
/// ReplicaSet as the next revision.
#[test]
fn deployment_rollout_restart_makes_a_new_revision() {
    let server = start();
    with_kubelet(&server, |_| {
        apply(&server, "rr", &deployment_manifest("rr", 2, "registry.k8s.io/pause:3.9", ""));
        rollout_status(&server, "rr");
        kubectl_ok(&server, &["rollout", "restart", "deployment/rr"]);
        rollout_status(&server, "rr");
        let sets = wait_sets(&server, "rr", "restarted", |s| {
            s.len() == 2 && s[0]["spec"]["replicas"] == 0 && s[1]["status"]["availableReplicas"] == 2
        });
        assert_eq!(revision(&sets[1]), 2);
        assert!(!sets[1]["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"].is_null());
        eventually(&server, &["deployment", "rr"], "revision 2", |d| revision(d) == 2);
    });
}

/// A ReplicaSet created later without an owner, labelled so that a
/// Deployment's selector matches it, is adopted (upstream's
/// `getDeploymentsForReplicaSet` enqueues the Deployment for the orphan).
#[test]
fn deployment_adopts_an_orphan_replica_set_created_later() {
    let server = start();
    with_kubelet(&server, |_| {
        apply(&server, "late", &deployment_manifest("late", 1, "registry.k8s.io/pause:3.9", ""));
        rollout_status(&server, "late");
        let rs = r#"apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: late-orphan
  labels:
    app: late
spec:
  replicas: 0
  selector:
    matchLabels:
      app: late
      orphan: "yes"
  template:
    metadata:
      labels:
        app: late
        orphan: "yes"
    spec:
      containers:
      - name: app
        image: registry.k8s.io/pause:3.10
"#;
        apply(&server, "orphan", rs);
        let d = get_json(&server, &["deployment", "late"]);
        let rs = eventually(&server, &["replicaset", "late-orphan"], "adopted", |v| {
            v["metadata"]["ownerReferences"].as_array().is_some_and(|o| !o.is_empty())
        });
        let owner = &rs["metadata"]["ownerReferences"][0];
        assert_eq!(owner["uid"], d["metadata"]["uid"]);
        assert_eq!((owner["kind"].as_str(), owner["controller"].as_bool()), (Some("Deployment"), Some(true)));
        assert_eq!(owner["blockOwnerDeletion"], true);
    });
}
