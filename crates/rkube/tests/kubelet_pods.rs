//! The pod lifecycle on a real node (issue 7): pods bound to the in-server
//! agent run through containerd — status, events, restarts with
//! CrashLoopBackOff, restartPolicy, init containers in order, graceful
//! deletion with preStop — checked through the real kubectl.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::node::{condition, NodeCluster};

fn state<'a>(pod: &'a Value, container: &str) -> &'a Value {
    pod["status"]["containerStatuses"]
        .as_array()
        .and_then(|v| v.iter().find(|s| s["name"] == container))
        .unwrap_or(&Value::Null)
}

fn pod(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
}

fn ts(v: &Value) -> jiff::Timestamp {
    v.as_str().unwrap_or_else(|| panic!("a timestamp, got {v}")).parse().unwrap()
}

/// A running pod as upstream reports it, the seed's events in order, its
/// output in `kubectl logs`, and a graceful delete that runs preStop.
#[test]
fn a_pod_runs_reports_upstream_status_and_events_and_deletes_gracefully() {
    let c = NodeCluster::start(&[]);
    let hook_dir = tempfile::tempdir().unwrap();
    c.server.create(&pod("hello", json!({
        "terminationGracePeriodSeconds": 5,
        "volumes": [{"name": "host", "hostPath": {"path": hook_dir.path(), "type": "Directory"}}],
        "containers": [{
            "name": "main", "image": c.busybox,
            "command": ["sh", "-c", "echo hello from $(POD_NAME); trap 'exit 0' TERM; while true; do sleep 1; done"],
            "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
            "volumeMounts": [{"name": "host", "mountPath": "/host"}],
            "lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", "echo stopping > /host/prestop"]}}}
        }]
    })));
    let p = c.wait_pod("hello", Duration::from_secs(90), "Running and Ready", |p| {
        p["status"]["phase"] == "Running" && condition(p, "Ready")["status"] == "True"
    });
    let s = state(&p, "main");
    assert_eq!(s["ready"], true, "{s}");
    assert_eq!(s["started"], true, "{s}");
    assert_eq!(s["restartCount"], 0);
    assert!(s["state"]["running"]["startedAt"].is_string(), "{s}");
    assert!(s["containerID"].as_str().unwrap().starts_with("containerd://"), "{s}");
    assert!(s["imageID"].as_str().is_some_and(|i| !i.is_empty()), "{s}");
    assert_eq!(s["image"], c.busybox.as_str());
    for t in ["PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready", "PodScheduled"] {
        assert_eq!(condition(&p, t)["status"], "True", "{t}: {}", p["status"]);
    }
    assert_eq!(p["status"]["qosClass"], "BestEffort");
    assert_eq!(p["status"]["hostIP"], "127.0.0.1");
    // The pod IP comes from the node's podCIDR (the CNI bridge's host-local range).
    let node = c.server.get_json(&["node", &c.node]);
    let cidr = node["spec"]["podCIDR"].as_str().unwrap();
    let prefix = cidr.rsplit_once('.').unwrap().0.rsplit_once('.').unwrap().0; // 10.42.x.0/24 -> 10.42
    let ip = p["status"]["podIP"].as_str().expect("a pod IP");
    assert!(ip.starts_with(prefix), "pod IP {ip} outside {cidr}");
    assert_eq!(p["status"]["podIPs"][0]["ip"], ip);

    // The seed's events, in order, with upstream's messages.
    let events = c.pod_events("hello");
    let reasons: Vec<&str> = events.iter().map(|(r, _)| r.as_str()).collect();
    let order = ["Scheduled", "Pulled", "Created", "Started"];
    let positions: Vec<usize> = order
        .iter()
        .map(|r| reasons.iter().position(|x| x == r).unwrap_or_else(|| panic!("no {r} in {reasons:?}")))
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{reasons:?}");
    let pulled = &events.iter().find(|(r, _)| r == "Pulled").unwrap().1;
    assert_eq!(pulled, &format!("Container image \"{}\" already present on machine", c.busybox));

    // Its output, with the $(VAR) expansion of the command.
    let mut last = String::new();
    let ok = (0..60).any(|_| {
        let out = c.server.kubectl(&["logs", "hello"]);
        last = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let done = last == "hello from hello\n";
        if !done {
            std::thread::sleep(Duration::from_millis(500));
        }
        done
    });
    assert!(ok, "kubectl logs hello: {last:?}\n{}", c.server.logs());

    // The CRI-format log file and its /var/log/containers link.
    let id = s["containerID"].as_str().unwrap().trim_start_matches("containerd://").to_string();
    let link = std::path::PathBuf::from(format!("/var/log/containers/hello_default_main-{id}.log"));
    let log = std::fs::read_to_string(&link).unwrap_or_else(|e| panic!("{}: {e}", link.display()));
    let line = log.lines().next().unwrap();
    // <RFC3339Nano> stdout F <message>
    let fields: Vec<&str> = line.splitn(4, ' ').collect();
    assert_eq!(&fields[1..], ["stdout", "F", "hello from hello"], "{line}");
    let uid_dir = format!("/var/log/pods/default_hello_{}/main/0.log", p["metadata"]["uid"].as_str().unwrap());
    assert_eq!(std::fs::read_link(&link).unwrap(), std::path::PathBuf::from(&uid_dir));

    // Graceful delete: preStop runs, the pod goes away within its grace period (and the 2 s extension).
    let uid = p["metadata"]["uid"].as_str().unwrap().to_string();
    let started = std::time::Instant::now();
    c.server.kubectl_ok(&["delete", "pod", "hello", "--wait=true", "--timeout=60s"]);
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(std::fs::read_to_string(hook_dir.path().join("prestop")).unwrap(), "stopping\n");
    let events = c.pod_event_reasons("hello");
    assert!(events.iter().any(|r| r == "Killing"), "{events:?}");

    // A container that ignores TERM is killed once its grace period is over.
    c.server.create(&pod("stubborn", json!({"terminationGracePeriodSeconds": 3,
        "containers": [{"name": "c", "image": c.busybox, "command": ["sh", "-c", "trap '' TERM; while true; do sleep 1; done"]}]})));
    c.wait_pod("stubborn", Duration::from_secs(60), "Running", |p| p["status"]["phase"] == "Running");
    let started = std::time::Instant::now();
    c.server.kubectl_ok(&["delete", "pod", "stubborn", "--wait=true", "--timeout=60s"]);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(3) && took < Duration::from_secs(30),
        "deleted after {took:?} with a 3 s grace period"
    );
    // Its logs and link go with it; nothing of it is left in the runtime.
    c.server.wait_for(Duration::from_secs(30), "the pod's logs to be removed", || {
        !std::path::Path::new(&uid_dir).exists() && std::fs::symlink_metadata(&link).is_err()
    });
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let socket = rkube_kubelet::containerd::cri_socket(c.server.data_dir(), None);
    c.server.wait_for(Duration::from_secs(30), "the pod's containers and sandbox to be removed", || {
        rt.block_on(async {
            let cri = rkube_kubelet::cri::CriClient::connect(&socket).await.unwrap();
            let containers = cri.list_containers(None).await.unwrap();
            let sandboxes = cri.list_pod_sandbox(None).await.unwrap();
            !containers.iter().any(|c| c.labels.get("io.kubernetes.pod.uid") == Some(&uid))
                && !sandboxes.iter().any(|s| s.labels.get("io.kubernetes.pod.uid") == Some(&uid))
        })
    });
}

/// restartPolicy as upstream: a crashing container goes into
/// CrashLoopBackOff with growing delays; Never pods end Succeeded or
/// Failed; OnFailure restarts only failures.
#[test]
fn restart_policies_and_crash_loop_back_off_follow_upstream() {
    let c = NodeCluster::start(&[]);
    let sh = |name: &str, policy: &str, script: &str| {
        pod(
            name,
            json!({"restartPolicy": policy, "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "c", "image": c.busybox, "command": ["sh", "-c", script]}]}),
        )
    };
    c.server.create(&sh("crash", "Always", "echo boom; exit 3"));
    c.server.create(&sh("never-ok", "Never", "exit 0"));
    c.server.create(&sh("never-fail", "Never", "exit 1"));
    c.server.create(&sh("onfailure-ok", "OnFailure", "exit 0"));
    // A memory limit is enforced: the container is OOM-killed.
    c.server.create(&pod(
        "oom",
        json!({"restartPolicy": "Never", "containers": [{"name": "c", "image": c.busybox,
        "command": ["sh", "-c", "a=$(head -c 268435456 /dev/zero | tr '\\000' x); echo ${#a}"],
        "resources": {"limits": {"memory": "32Mi"}}}]}),
    ));
    // Images that cannot be had: a registry that does not resolve, and Never without the image.
    c.server.create(&pod("nopull", json!({"containers": [{"name": "c", "image": "registry.invalid/none:1"}]})));
    c.server.create(&pod(
        "never-pull",
        json!({"containers": [{"name": "c", "image": "registry.invalid/none:2", "imagePullPolicy": "Never"}]}),
    ));

    let ok = c.wait_pod("never-ok", Duration::from_secs(90), "Succeeded", |p| p["status"]["phase"] == "Succeeded");
    let t = &state(&ok, "c")["state"]["terminated"];
    assert_eq!((t["exitCode"].as_i64(), t["reason"].as_str()), (Some(0), Some("Completed")), "{t}");
    assert_eq!(condition(&ok, "Ready")["reason"], "PodCompleted");
    let failed = c.wait_pod("never-fail", Duration::from_secs(60), "Failed", |p| p["status"]["phase"] == "Failed");
    let t = &state(&failed, "c")["state"]["terminated"];
    assert_eq!((t["exitCode"].as_i64(), t["reason"].as_str()), (Some(1), Some("Error")), "{t}");
    assert_eq!(state(&failed, "c")["restartCount"], 0);
    c.wait_pod("onfailure-ok", Duration::from_secs(60), "Succeeded", |p| p["status"]["phase"] == "Succeeded");

    let oom = c.wait_pod("oom", Duration::from_secs(60), "Failed", |p| p["status"]["phase"] == "Failed");
    let t = &state(&oom, "c")["state"]["terminated"];
    assert_eq!((t["reason"].as_str(), t["exitCode"].as_i64()), (Some("OOMKilled"), Some(137)), "{t}");
    assert_eq!(oom["status"]["qosClass"], "Burstable");
    let waiting = |p: &Value| state(p, "c")["state"]["waiting"]["reason"].as_str().unwrap_or("").to_string();
    c.wait_pod("nopull", Duration::from_secs(90), "ImagePullBackOff after ErrImagePull", |p| {
        waiting(p) == "ImagePullBackOff"
    });
    let events = c.pod_events("nopull");
    assert!(
        events.iter().any(|(r, m)| r == "Failed" && m.starts_with("Failed to pull image \"registry.invalid/none:1\"")),
        "{events:?}"
    );
    assert!(
        events.iter().any(|(r, m)| r == "BackOff" && m == "Back-off pulling image \"registry.invalid/none:1\""),
        "{events:?}"
    );
    let p =
        c.wait_pod("never-pull", Duration::from_secs(60), "ErrImageNeverPull", |p| waiting(p) == "ErrImageNeverPull");
    assert_eq!(
        state(&p, "c")["state"]["waiting"]["message"],
        "Container image \"registry.invalid/none:2\" is not present with pull policy of Never"
    );
    assert_eq!(p["status"]["phase"], "Pending");

    // CrashLoopBackOff: restarts 10 s, then 20 s apart (upstream's back-off),
    // read from each instance's startedAt (whole seconds) as the statuses show them.
    let mut starts: std::collections::BTreeMap<i64, jiff::Timestamp> = Default::default();
    c.server.wait_for(Duration::from_secs(150), "three restarts of the crashing container", || {
        let p = c.pod("crash");
        let s = state(&p, "c");
        let n = s["restartCount"].as_i64().unwrap_or(0);
        if s["state"]["waiting"].is_object() && s["lastState"]["terminated"]["startedAt"].is_string() {
            starts.insert(n, ts(&s["lastState"]["terminated"]["startedAt"]));
        } else if s["state"]["running"]["startedAt"].is_string() {
            starts.insert(n, ts(&s["state"]["running"]["startedAt"]));
        }
        (1..=3).all(|k| starts.contains_key(&k))
    });
    let p = c.wait_pod("crash", Duration::from_secs(30), "waiting in CrashLoopBackOff", |p| {
        state(p, "c")["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    });
    let s = state(&p, "c");
    let last = &s["lastState"]["terminated"];
    assert_eq!((last["exitCode"].as_i64(), last["reason"].as_str()), (Some(3), Some("Error")), "{s}");
    let msg = s["state"]["waiting"]["message"].as_str().unwrap();
    assert!(msg.starts_with("back-off ") && msg.contains("restarting failed container=c pod=crash_default("), "{msg}");
    assert_eq!(p["status"]["phase"], "Running");
    // Lower bounds only (a loaded machine may restart late, never early);
    // a constant delay would keep the second gap near 10 s.
    let gap = |k: i64| starts[&(k + 1)].duration_since(starts[&k]).as_secs();
    assert!(gap(1) >= 9, "first back-off {}s: {starts:?}", gap(1));
    assert!(gap(2) >= 19, "second back-off {}s: {starts:?}", gap(2));
    // Dead containers are collected: the current instance and one before it remain.
    let uid = p["metadata"]["uid"].as_str().unwrap().to_string();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let socket = rkube_kubelet::containerd::cri_socket(c.server.data_dir(), None);
    let instances = rt.block_on(async {
        let cri = rkube_kubelet::cri::CriClient::connect(&socket).await.unwrap();
        cri.list_containers(None)
            .await
            .unwrap()
            .into_iter()
            .filter(|c| c.labels.get("io.kubernetes.pod.uid") == Some(&uid))
            .count()
    });
    assert!(instances <= 2, "{instances} containers kept for a container restarted 3 times");
    let events = c.pod_events("crash");
    assert!(
        events
            .iter()
            .any(|(r, m)| r == "BackOff"
                && m.starts_with("Back-off restarting failed container c in pod crash_default(")),
        "{events:?}"
    );
}

/// Init containers run one at a time, in order, before the app
/// containers; a sidecar (restartPolicy Always) keeps running alongside.
#[test]
fn init_containers_run_in_order_before_app_containers_with_sidecars_alongside() {
    let c = NodeCluster::start(&[]);
    let step = |name: &str| json!({"name": name, "image": c.busybox, "command": ["sh", "-c", "sleep 1"]});
    let mut sidecar = json!({"name": "side", "image": c.busybox, "restartPolicy": "Always",
        "command": ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]});
    sidecar["terminationMessagePolicy"] = json!("File");
    c.server.create(&pod("init", json!({
        "terminationGracePeriodSeconds": 2,
        "initContainers": [step("first"), sidecar, step("second")],
        "containers": [{"name": "app", "image": c.busybox, "command": ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]}]
    })));
    let p = c.wait_pod("init", Duration::from_secs(120), "Running and Ready", |p| {
        p["status"]["phase"] == "Running" && condition(p, "Ready")["status"] == "True"
    });
    let inits = p["status"]["initContainerStatuses"].as_array().unwrap();
    let by = |n: &str| inits.iter().find(|s| s["name"] == n).unwrap().clone();
    let (first, side, second) = (by("first"), by("side"), by("second"));
    assert_eq!(first["state"]["terminated"]["reason"], "Completed");
    assert_eq!(second["state"]["terminated"]["reason"], "Completed");
    assert!(side["state"]["running"].is_object(), "the sidecar keeps running: {side}");
    assert_eq!(side["ready"], true);
    let app_started = ts(&state(&p, "app")["state"]["running"]["startedAt"]);
    assert!(ts(&first["state"]["terminated"]["finishedAt"]) <= ts(&side["state"]["running"]["startedAt"]));
    assert!(ts(&side["state"]["running"]["startedAt"]) <= ts(&second["state"]["terminated"]["startedAt"]));
    assert!(ts(&second["state"]["terminated"]["finishedAt"]) <= app_started);
    assert_eq!(condition(&p, "Initialized")["status"], "True");

    // A force-deleted pod is gone from the API at once; the node cleans it up anyway.
    let uid = p["metadata"]["uid"].as_str().unwrap().to_string();
    c.server.kubectl_ok(&["delete", "pod", "init", "--force", "--grace-period=0"]);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let socket = rkube_kubelet::containerd::cri_socket(c.server.data_dir(), None);
    c.server.wait_for(Duration::from_secs(60), "the force-deleted pod's containers and sandbox to be removed", || {
        rt.block_on(async {
            let cri = rkube_kubelet::cri::CriClient::connect(&socket).await.unwrap();
            let containers = cri.list_containers(None).await.unwrap();
            let sandboxes = cri.list_pod_sandbox(None).await.unwrap();
            !containers.iter().any(|c| c.labels.get("io.kubernetes.pod.uid") == Some(&uid))
                && !sandboxes.iter().any(|s| s.labels.get("io.kubernetes.pod.uid") == Some(&uid))
        })
    });
    assert!(!c.server.data_dir().join("agent/pods").join(&uid).exists(), "the pod's volumes dir is removed");
}

/// Seed 004's sidecar examples as written (application/deployment-sidecar
/// and application/job/job-sidecar), with `alpine:latest` imported locally
/// under that name (busybox's files). `:latest` defaults to
/// imagePullPolicy Always, which needs a registry; an offline node runs
/// them with IfNotPresent, the one change made to the manifests.
#[test]
fn the_seeds_sidecar_deployment_and_job_behave_as_described() {
    let c = NodeCluster::start(&[]);
    let mut alpine =
        rkube_kubelet::images::busybox_image(std::path::Path::new(rkube_kubelet::images::HOST_BUSYBOX)).unwrap();
    alpine.reference = "docker.io/library/alpine:latest".into();
    let dir = tempfile::tempdir().unwrap();
    let archive = rkube_kubelet::images::write_archive(&alpine, dir.path()).unwrap();
    let dd = c.server.data_dir().to_string_lossy().into_owned();
    let out = support::run_rkube(
        &["images", "import", "--data-dir", &dd, &archive.to_string_lossy()],
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "rkube images import: {}", String::from_utf8_lossy(&out.stderr));

    let sidecar = |cmd: &str, main: &str| {
        json!({
            "volumes": [{"name": "data", "emptyDir": {}}],
            "containers": [{"name": main, "image": "alpine:latest", "imagePullPolicy": "IfNotPresent",
                "command": ["sh", "-c", cmd], "volumeMounts": [{"name": "data", "mountPath": "/opt"}]}],
            "initContainers": [{"name": "logshipper", "image": "alpine:latest", "imagePullPolicy": "IfNotPresent",
                "restartPolicy": "Always", "command": ["sh", "-c", "tail -F /opt/logs.txt"],
                "volumeMounts": [{"name": "data", "mountPath": "/opt"}]}]
        })
    };
    let mut template = sidecar("while true; do echo \"logging\" >> /opt/logs.txt; sleep 1; done", "myapp");
    template["terminationGracePeriodSeconds"] = json!(2);
    c.server.create(&json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "myapp", "labels": {"app": "myapp"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "myapp"}},
            "template": {"metadata": {"labels": {"app": "myapp"}}, "spec": template}}}));
    let mut job = sidecar("echo \"logging\" > /opt/logs.txt", "myjob");
    job["restartPolicy"] = json!("Never");
    c.server.create(&json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "myjob"},
        "spec": {"template": {"spec": job}}}));

    // The Deployment's pod runs both; the sidecar ships the app's lines.
    c.server.wait_for(Duration::from_secs(120), "myapp available", || {
        c.server.get_json(&["deployment", "myapp"])["status"]["availableReplicas"] == 1
    });
    c.server.wait_for(Duration::from_secs(60), "the logshipper's output", || {
        let out = c.server.kubectl(&["logs", "deployment/myapp", "-c", "logshipper"]);
        String::from_utf8_lossy(&out.stdout).matches("logging").count() >= 2
    });
    // The Job completes although its sidecar never exits on its own.
    c.server.wait_for(Duration::from_secs(120), "myjob Complete", || {
        let j = c.server.get_json(&["job", "myjob"]);
        j["status"]["conditions"]
            .as_array()
            .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Complete" && c["status"] == "True"))
    });
    let pods = c.server.get_json(&["pods", "-l", "job-name=myjob"]);
    let p = &pods["items"][0];
    assert_eq!(p["status"]["phase"], "Succeeded", "{}", p["status"]);
    let side = &p["status"]["initContainerStatuses"][0];
    assert!(side["state"]["terminated"].is_object(), "the sidecar is stopped once the job's container is done: {side}");
}
