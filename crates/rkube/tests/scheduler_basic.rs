//! The scheduler inside `rkube server`, driven with the real kubectl:
//! Nodes are created through the API as a kubelet registers them (Ready
//! condition, allocatable), with the not-ready taint cleared as the node
//! lifecycle controller would; pods are placed (or not) as upstream's
//! default profile places them, bound through `pods/binding`, and the
//! outcome is visible in conditions, `kubectl describe` and events.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{TestServer, TestServerOptions};

fn start() -> TestServer {
    TestServer::start_with(TestServerOptions { scheduler: true, ..Default::default() })
}

fn pod(name: &str, cpu: &str, extra: Value) -> Value {
    let mut spec = json!({"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}]});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec})
}

fn get_pod(s: &TestServer, name: &str) -> Value {
    serde_json::from_str(&s.kubectl_ok(&["get", "pod", name, "-o", "json"])).unwrap()
}

fn wait_bound(s: &TestServer, name: &str) -> String {
    let mut node = String::new();
    s.wait_for(Duration::from_secs(30), &format!("{name} to be bound"), || {
        node = get_pod(s, name)["spec"]["nodeName"].as_str().unwrap_or("").to_string();
        !node.is_empty()
    });
    node
}

fn condition(p: &Value) -> Option<&Value> {
    p["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == "PodScheduled")
}

fn wait_unschedulable(s: &TestServer, name: &str) -> String {
    let mut message = String::new();
    s.wait_for(Duration::from_secs(30), &format!("{name} to be reported unschedulable"), || {
        let p = get_pod(s, name);
        match condition(&p) {
            Some(c) if c["status"] == "False" && c["reason"] == "Unschedulable" => {
                message = c["message"].as_str().unwrap_or("").to_string();
                assert!(p["spec"]["nodeName"].is_null());
                true
            }
            _ => false,
        }
    });
    message
}

/// Three nodes as in upstream's example message: a tainted control-plane
/// node and two 2-CPU workers, one with `disk=ssd`.
fn cluster(s: &TestServer) {
    s.add_ready_node(
        "cp",
        json!({"node-role.kubernetes.io/control-plane": ""}),
        json!([{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]),
    );
    s.add_ready_node("w1", json!({"disk": "hdd"}), json!([]));
    s.add_ready_node("w2", json!({"disk": "ssd"}), json!([]));
}

#[test]
fn pods_are_bound_reported_and_placed_as_upstream() {
    let s = start();
    cluster(&s);

    // A pod that fits goes to a worker (the control plane is tainted),
    // with PodScheduled=True and a Scheduled event from default-scheduler.
    s.create(&pod("fits", "100m", json!({})));
    let node = wait_bound(&s, "fits");
    assert!(node == "w1" || node == "w2", "{node}");
    let p = get_pod(&s, "fits");
    assert_eq!(condition(&p).unwrap()["status"], "True");
    let want = format!("Successfully assigned default/fits to {node}");
    s.wait_for(Duration::from_secs(30), "the Scheduled event", || {
        let ev = s.kubectl_ok(&["get", "events", "--field-selector", "involvedObject.name=fits", "-o", "json"]);
        let ev: Value = serde_json::from_str(&ev).unwrap();
        ev["items"].as_array().unwrap().iter().any(|e| {
            e["reason"] == "Scheduled"
                && e["message"] == want.as_str()
                && e["type"] == "Normal"
                && e["reportingComponent"] == "default-scheduler"
        })
    });

    // Conformance "Scheduler, resource limits": a request above every
    // node's capacity stays Pending with upstream's summary.
    s.create(&pod("huge", "3", json!({})));
    // The Filter summary is the scheduler's; what follows it is DefaultPreemption's.
    let want = "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 Insufficient cpu. preemption: 0/3 nodes are available: ";
    let message = wait_unschedulable(&s, "huge");
    assert!(message.starts_with(want), "{message}");
    assert!(message.contains("1 Preemption is not helpful for scheduling"), "{message}");
    let describe = s.kubectl_ok(&["describe", "pod", "huge"]);
    assert!(describe.contains("FailedScheduling"), "{describe}");
    assert!(describe.contains(&message), "{describe}");

    // Conformance "Scheduler, node selector matching".
    s.create(&pod("ssd", "100m", json!({"nodeSelector": {"disk": "ssd"}})));
    assert_eq!(wait_bound(&s, "ssd"), "w2");

    // Tolerating the control-plane taint and selecting it lands there.
    s.create(
        &pod(
            "on-cp",
            "100m",
            json!({"nodeSelector": {"node-role.kubernetes.io/control-plane": ""},
                   "tolerations": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}]}),
        ),
    );
    assert_eq!(wait_bound(&s, "on-cp"), "cp");

    // Conformance "Scheduler, node selector not matching": no node has
    // the label; the taint is checked before the selector on cp.
    s.create(&pod("fast", "100m", json!({"nodeSelector": {"disk": "fast"}})));
    let message = wait_unschedulable(&s, "fast");
    let want = "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.";
    assert_eq!(message, want);
    // A label change is an event NodeAffinity registered: the pod is retried and placed.
    s.kubectl_ok(&["label", "node", "w1", "disk=fast", "--overwrite"]);
    assert_eq!(wait_bound(&s, "fast"), "w1");

    // Gated pods wait for their gates (SchedulingGates), then schedule.
    s.create(&pod("gated", "100m", json!({"schedulingGates": [{"name": "example.com/wait"}]})));
    std::thread::sleep(Duration::from_secs(2));
    let p = get_pod(&s, "gated");
    assert!(p["spec"]["nodeName"].is_null());
    // The API server marks it on create, as upstream's pod strategy does.
    let c = condition(&p).expect("a gated pod starts with a PodScheduled condition");
    assert_eq!((&c["status"], &c["reason"]), (&json!("False"), &json!("SchedulingGated")));
    assert_eq!(c["message"], "Scheduling is blocked due to non-empty scheduling gates");
    assert!(s.kubectl_ok(&["get", "pod", "gated"]).contains("SchedulingGated"));
    s.kubectl_ok(&[
        "patch",
        "pod",
        "gated",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/spec/schedulingGates"}]"#,
    ]);
    wait_bound(&s, "gated");
    s.wait_for(Duration::from_secs(30), "the gated pod's PodScheduled condition to turn True", || {
        condition(&get_pod(&s, "gated"))
            .is_some_and(|c| c["status"] == "True" && c.get("reason").is_none_or(Value::is_null))
    });

    // The scheduler holds its lease as upstream's kube-scheduler.
    let lease: Value =
        serde_json::from_str(&s.kubectl_ok(&["get", "lease", "-n", "kube-system", "kube-scheduler", "-o", "json"]))
            .unwrap();
    assert!(!lease["spec"]["holderIdentity"].as_str().unwrap_or("").is_empty());
}

#[test]
fn a_bad_scheduler_config_stops_the_server_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sched.yaml");
    std::fs::write(
        &path,
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: a\n- schedulerName: a\n",
    )
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let out = support::run_rkube(
        &[
            "server",
            "--disable-agent",
            "--data-dir",
            data.path().to_str().unwrap(),
            "--https-port",
            &support::free_port().to_string(),
            "--scheduler-config",
            path.to_str().unwrap(),
        ],
        Duration::from_secs(30),
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("profiles[1].schedulerName: Duplicate value: \"a\""), "{err}");
}

#[test]
fn profiles_from_the_config_file_schedule_their_pods() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sched.yaml");
    std::fs::write(
        &path,
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: default-scheduler\n- schedulerName: no-taints\n  plugins:\n    filter:\n      disabled:\n      - name: TaintToleration\n",
    )
    .unwrap();
    let s = TestServer::start_with(TestServerOptions {
        scheduler: true,
        extra_args: vec!["--scheduler-config".into(), path.to_str().unwrap().into()],
        ..Default::default()
    });
    cluster(&s);
    // Without TaintToleration's filter the tainted control plane is feasible.
    s.create(&pod(
        "p",
        "100m",
        json!({"schedulerName": "no-taints", "nodeSelector": {"node-role.kubernetes.io/control-plane": ""}}),
    ));
    assert_eq!(wait_bound(&s, "p"), "cp");
    // A profile nobody configured is not served.
    s.create(&pod("other", "100m", json!({"schedulerName": "elsewhere"})));
    std::thread::sleep(Duration::from_secs(2));
    assert!(get_pod(&s, "other")["spec"]["nodeName"].is_null());
}

/// Conformance "Scheduling, HostPort and Protocol match, HostIPs different
/// but one is default HostIP (0.0.0.0)": a pod asking for a host port that
/// a pod on the only eligible node holds on 0.0.0.0 stays Pending.
#[test]
fn host_port_conflicts_keep_the_second_pod_pending() {
    let s = start();
    cluster(&s);
    let port = |ip: &str| {
        json!({"nodeSelector": {"disk": "hdd"}, "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
        "ports": [{"containerPort": 8080, "hostPort": 54322, "hostIP": ip, "protocol": "TCP"}]}]})
    };
    s.create(&pod("pod1", "100m", port("0.0.0.0")));
    assert_eq!(wait_bound(&s, "pod1"), "w1");
    s.create(&pod("pod2", "100m", port("127.0.0.1")));
    let message = wait_unschedulable(&s, "pod2");
    let want = "0/3 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }.";
    assert!(message.starts_with(want), "{message}");
    // Deleting the holder frees the port (an assigned-pod delete is an event NodePorts registered).
    s.kubectl_ok(&["delete", "pod", "pod1", "--grace-period=0", "--force"]);
    assert_eq!(wait_bound(&s, "pod2"), "w1");
}

/// Another candidate taking the `kube-system/kube-scheduler` Lease stops
/// this scheduler (upstream logs "leaderelection lost"); once the foreign
/// holder stops renewing, the scheduler campaigns again, wins, and
/// schedules again.
#[test]
fn a_scheduler_that_loses_its_lease_campaigns_again_and_resumes() {
    let s = start();
    s.add_ready_node("w1", json!({}), json!([]));
    s.create(&pod("before", "100m", json!({})));
    assert_eq!(wait_bound(&s, "before"), "w1");
    let ours = s.get_json(&["-n", "kube-system", "lease", "kube-scheduler"])["spec"]["holderIdentity"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(!ours.is_empty());
    s.kubectl_ok(&[
        "-n",
        "kube-system",
        "patch",
        "lease",
        "kube-scheduler",
        "--type=merge",
        "-p",
        r#"{"spec":{"holderIdentity":"intruder","leaseDurationSeconds":3}}"#,
    ]);
    s.wait_for(Duration::from_secs(30), "the scheduler to notice it lost the lease", || {
        s.logs().contains("leaderelection lost")
    });
    s.create(&pod("after", "100m", json!({})));
    assert_eq!(wait_bound(&s, "after"), "w1");
    let holder = s.get_json(&["-n", "kube-system", "lease", "kube-scheduler"])["spec"]["holderIdentity"].clone();
    assert_eq!(holder, json!(ours), "the same scheduler leads again");
}
