//! Printers for Pod, PodTemplate and ReplicationController (upstream
//! `printPod`, `printPodTemplate`, `printReplicationController`).

use jiff::Timestamp;
use serde_json::{json, Value};

use super::{
    age, arr, cell, col, format_labels, human_duration, int, layout_containers, name, or_none, s, timestamp, wide,
    Column, AGE, CONTAINERS_DOC, IMAGES_DOC, NAME,
};

/// Pod columns: Name, Ready, Status, Restarts, Age | IP, Node, Nominated Node, Readiness Gates.
pub const POD_COLUMNS: &[Column] = &[
    NAME,
    col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
    col("Status", "string", "The aggregate status of the containers in this pod."),
    col("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
    AGE,
    wide("IP", "string", "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated."),
    wide("Node", "string", "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename"),
    wide("Nominated Node", "string", "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled."),
    wide("Readiness Gates", "string", "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates"),
];

/// The latest of `cur` and the `finishedAt` of `status.lastState.terminated`.
fn later_restart(cur: Option<Timestamp>, status: &Value) -> Option<Timestamp> {
    let t = timestamp(&status["lastState"]["terminated"]["finishedAt"]);
    match (cur, t) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// The reason text of a terminated state without a reason:
/// `<prefix>Signal:N` or `<prefix>ExitCode:N`.
fn terminated_code(prefix: &str, term: &Value) -> String {
    let signal = int(&term["signal"]);
    if signal != 0 {
        format!("{prefix}Signal:{signal}")
    } else {
        format!("{prefix}ExitCode:{}", int(&term["exitCode"]))
    }
}

/// Whether the pod has condition `ty` with status True.
fn has_condition(pod: &Value, ty: &str) -> bool {
    arr(&pod["status"]["conditions"]).iter().any(|c| s(&c["type"]) == ty && s(&c["status"]) == "True")
}

/// `printPod`: READY counts ready containers (plus started restartable init
/// containers) over containers (plus restartable init containers); STATUS
/// is the phase or reason, overridden by init progress (`Init:1/2`,
/// `Init:CrashLoopBackOff`), container waiting/terminated reasons,
/// `Completed`→`Running`/`NotReady` while a container still runs, and
/// `Terminating`/`Unknown` for deleted pods; RESTARTS is the restart sum,
/// with `(<age> ago)` of the last restart when known.
pub fn pod_row(pod: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &pod["spec"];
    let status = &pod["status"];
    let init_specs = arr(&spec["initContainers"]);
    let restartable = |n: &str| init_specs.iter().any(|c| s(&c["name"]) == n && s(&c["restartPolicy"]) == "Always");

    let mut restarts = 0;
    let mut restartable_init_restarts = 0;
    let total =
        arr(&spec["containers"]).len() + init_specs.iter().filter(|c| s(&c["restartPolicy"]) == "Always").count();
    let mut ready = 0;
    let mut last_restart: Option<Timestamp> = None;
    let mut last_restartable_init_restart: Option<Timestamp> = None;

    let phase = s(&status["phase"]);
    let mut reason = if s(&status["reason"]).is_empty() { phase.to_string() } else { s(&status["reason"]).to_string() };
    for c in arr(&status["conditions"]) {
        if s(&c["type"]) == "PodScheduled" && s(&c["reason"]) == "SchedulingGated" {
            reason = "SchedulingGated".into();
        }
    }

    let mut initializing = false;
    for (i, c) in arr(&status["initContainerStatuses"]).iter().enumerate() {
        let count = int(&c["restartCount"]);
        restarts += count;
        last_restart = later_restart(last_restart, c);
        let is_restartable = restartable(s(&c["name"]));
        if is_restartable {
            restartable_init_restarts += count;
            last_restartable_init_restart = later_restart(last_restartable_init_restart, c);
        }
        let term = &c["state"]["terminated"];
        let waiting = &c["state"]["waiting"];
        if term.is_object() && int(&term["exitCode"]) == 0 {
            continue;
        }
        if is_restartable && c["started"].as_bool() == Some(true) {
            if c["ready"].as_bool() == Some(true) {
                ready += 1;
            }
            continue;
        }
        if term.is_object() {
            reason = if s(&term["reason"]).is_empty() {
                terminated_code("Init:", term)
            } else {
                format!("Init:{}", s(&term["reason"]))
            };
        } else if waiting.is_object() && !s(&waiting["reason"]).is_empty() && s(&waiting["reason"]) != "PodInitializing"
        {
            reason = format!("Init:{}", s(&waiting["reason"]));
        } else {
            reason = format!("Init:{i}/{}", init_specs.len());
        }
        initializing = true;
        break;
    }

    let initialized = arr(&status["conditions"])
        .iter()
        .find(|c| s(&c["type"]) == "Initialized")
        .is_some_and(|c| s(&c["status"]) == "True");
    if !initializing || initialized {
        restarts = restartable_init_restarts;
        last_restart = last_restartable_init_restart;
        let mut has_running = false;
        for c in arr(&status["containerStatuses"]).iter().rev() {
            restarts += int(&c["restartCount"]);
            last_restart = later_restart(last_restart, c);
            let term = &c["state"]["terminated"];
            let waiting = &c["state"]["waiting"];
            if waiting.is_object() && !s(&waiting["reason"]).is_empty() {
                reason = s(&waiting["reason"]).to_string();
            } else if term.is_object() && !s(&term["reason"]).is_empty() {
                reason = s(&term["reason"]).to_string();
            } else if term.is_object() {
                reason = terminated_code("", term);
            } else if c["ready"].as_bool() == Some(true) && c["state"]["running"].is_object() {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            reason = if has_condition(pod, "Ready") { "Running".into() } else { "NotReady".into() };
        }
    }

    let deleting = pod["metadata"]["deletionTimestamp"].is_string();
    if deleting && s(&status["reason"]) == "NodeLost" {
        reason = "Unknown".into();
    } else if deleting && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".into();
    }

    let restarts_str = match last_restart {
        Some(t) if restarts != 0 => format!("{restarts} ({} ago)", human_duration(now.duration_since(t).as_secs())),
        _ => restarts.to_string(),
    };

    let mut pod_ip = arr(&status["podIPs"]).first().map_or("", |ip| s(&ip["ip"]));
    if pod_ip.is_empty() {
        pod_ip = s(&status["podIP"]);
    }
    let gates = arr(&spec["readinessGates"]);
    let readiness_gates = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let conds = arr(&status["conditions"]);
        let true_count = gates
            .iter()
            .filter(|g| {
                conds.iter().find(|c| c["type"] == g["conditionType"]).is_some_and(|c| s(&c["status"]) == "True")
            })
            .count();
        format!("{true_count}/{}", gates.len())
    };
    vec![
        name(pod),
        cell(format!("{ready}/{total}")),
        cell(reason),
        cell(restarts_str),
        age(pod, now),
        cell(or_none(pod_ip)),
        cell(or_none(s(&spec["nodeName"]))),
        cell(or_none(s(&status["nominatedNodeName"]))),
        cell(readiness_gates),
    ]
}

/// PodTemplate columns: Name, Containers, Images, Pod Labels.
pub const POD_TEMPLATE_COLUMNS: &[Column] = &[
    NAME,
    col("Containers", "string", CONTAINERS_DOC),
    col("Images", "string", IMAGES_DOC),
    col("Pod Labels", "string", "The labels for the pod template."),
];

/// `printPodTemplate`: container names, images and the template's labels.
pub fn pod_template_row(obj: &Value, _now: Timestamp) -> Vec<Value> {
    let (names, images) = layout_containers(&obj["template"]["spec"]["containers"]);
    vec![name(obj), names, images, cell(format_labels(&obj["template"]["metadata"]["labels"]))]
}

/// ReplicationController columns: Name, Desired, Current, Ready, Age | Containers, Images, Selector.
pub const RC_COLUMNS: &[Column] = &[
    NAME,
    col("Desired", "integer", "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller"),
    col("Current", "integer", "Replicas is the most recently observed number of replicas. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller"),
    col("Ready", "integer", "The number of ready replicas for this replication controller."),
    AGE,
    wide("Containers", "string", CONTAINERS_DOC),
    wide("Images", "string", IMAGES_DOC),
    wide("Selector", "string", "Selector is a label query over pods that should match the Replicas count. If Selector is empty, it is defaulted to the labels present on the Pod template. Label keys and values that must match in order to be controlled by this replication controller, if empty defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"),
];

/// `printReplicationController`: desired (default 1), current and ready
/// replicas; wide: containers, images, `FormatLabels(selector)`.
pub fn rc_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    let (names, images) = layout_containers(&obj["spec"]["template"]["spec"]["containers"]);
    vec![
        name(obj),
        json!(obj["spec"]["replicas"].as_i64().unwrap_or(1)),
        json!(int(&obj["status"]["replicas"])),
        json!(int(&obj["status"]["readyReplicas"])),
        age(obj, now),
        names,
        images,
        cell(format_labels(&obj["spec"]["selector"])),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{ago, now};
    use super::*;

    fn running(name: &str, ready: bool, restarts: i64) -> Value {
        json!({"name": name, "ready": ready, "restartCount": restarts, "state": {"running": {"startedAt": ago(600)}}})
    }

    #[test]
    fn running_pod_with_restarts() {
        let mut c2 = running("b", false, 3);
        c2["lastState"] = json!({"terminated": {"exitCode": 1, "finishedAt": ago(300)}});
        c2["state"] = json!({"waiting": {"reason": "CrashLoopBackOff"}});
        let pod = json!({
            "metadata": {"name": "web", "creationTimestamp": ago(3 * 3600 + 120)},
            "spec": {"nodeName": "n1", "containers": [{"name": "a"}, {"name": "b"}]},
            "status": {"phase": "Running", "podIP": "10.0.0.5", "containerStatuses": [running("a", true, 0), c2]}
        });
        let cells = pod_row(&pod, now());
        assert_eq!(
            cells,
            vec![
                json!("web"),
                json!("1/2"),
                json!("CrashLoopBackOff"),
                json!("3 (5m ago)"),
                json!("3h2m"),
                json!("10.0.0.5"),
                json!("n1"),
                json!("<none>"),
                json!("<none>")
            ]
        );
    }

    #[test]
    fn pending_pod_without_status() {
        let pod =
            json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Pending"}});
        let cells = pod_row(&pod, now());
        assert_eq!(&cells[1..5], &[json!("0/1"), json!("Pending"), json!("0"), json!("<unknown>")]);
    }

    #[test]
    fn init_progress_and_init_failures() {
        let mut pod = json!({
            "metadata": {"name": "p", "creationTimestamp": ago(5)},
            "spec": {"initContainers": [{"name": "i1"}, {"name": "i2"}], "containers": [{"name": "a"}]},
            "status": {"phase": "Pending", "initContainerStatuses": [
                {"name": "i1", "restartCount": 0, "state": {"terminated": {"exitCode": 0}}},
                {"name": "i2", "restartCount": 0, "state": {"running": {}}}
            ], "containerStatuses": [{"name": "a", "state": {"waiting": {"reason": "PodInitializing"}}}]}
        });
        assert_eq!(pod_row(&pod, now())[2], json!("Init:1/2"));
        pod["status"]["initContainerStatuses"][1]["state"] = json!({"waiting": {"reason": "CrashLoopBackOff"}});
        assert_eq!(pod_row(&pod, now())[2], json!("Init:CrashLoopBackOff"));
        pod["status"]["initContainerStatuses"][1]["state"] = json!({"terminated": {"exitCode": 2}});
        assert_eq!(pod_row(&pod, now())[2], json!("Init:ExitCode:2"));
    }

    #[test]
    fn restartable_init_containers_count_as_sidecars() {
        let pod = json!({
            "metadata": {"name": "p"},
            "spec": {"initContainers": [{"name": "side", "restartPolicy": "Always"}], "containers": [{"name": "a"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Initialized", "status": "True"}],
              "initContainerStatuses": [{"name": "side", "started": true, "ready": true, "restartCount": 1, "state": {"running": {}}}],
              "containerStatuses": [running("a", true, 0)]}
        });
        let cells = pod_row(&pod, now());
        assert_eq!(cells[1], json!("2/2"));
        assert_eq!(cells[2], json!("Running"));
        assert_eq!(cells[3], json!("1"), "no last-termination time, so no \"ago\"");
    }

    #[test]
    fn completed_terminating_and_gated_pods() {
        let done = json!({
            "metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}]},
            "status": {"phase": "Succeeded", "containerStatuses": [
                {"name": "a", "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}
        });
        assert_eq!(pod_row(&done, now())[2], json!("Completed"));
        assert_eq!(super::super::row_conditions("", "Pod", &done).unwrap()[0]["reason"], "Succeeded");
        let mut deleting = done.clone();
        deleting["status"]["phase"] = json!("Running");
        deleting["status"]["containerStatuses"][0]["state"] = json!({"running": {}});
        deleting["metadata"]["deletionTimestamp"] = json!(ago(1));
        assert_eq!(pod_row(&deleting, now())[2], json!("Terminating"));
        let gated = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}]},
            "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}});
        assert_eq!(pod_row(&gated, now())[2], json!("SchedulingGated"));
    }

    #[test]
    fn readiness_gates_and_pod_ips() {
        let pod = json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [], "readinessGates": [{"conditionType": "x"}, {"conditionType": "y"}]},
            "status": {"podIPs": [{"ip": "fd00::1"}], "nominatedNodeName": "n2",
              "conditions": [{"type": "x", "status": "True"}, {"type": "y", "status": "False"}]}
        });
        let cells = pod_row(&pod, now());
        assert_eq!(&cells[5..], &[json!("fd00::1"), json!("<none>"), json!("n2"), json!("1/2")]);
    }

    #[test]
    fn pod_template_and_replication_controller() {
        let pt = json!({"metadata": {"name": "t"}, "template": {"metadata": {"labels": {"app": "x"}},
            "spec": {"containers": [{"name": "a", "image": "nginx"}, {"name": "b", "image": "busybox"}]}}});
        assert_eq!(
            pod_template_row(&pt, now()),
            vec![json!("t"), json!("a,b"), json!("nginx,busybox"), json!("app=x")]
        );
        let rc = json!({"metadata": {"name": "rc", "creationTimestamp": ago(60)},
            "spec": {"replicas": 3, "selector": {"app": "x"}, "template": {"spec": {"containers": [{"name": "a", "image": "nginx"}]}}},
            "status": {"replicas": 2, "readyReplicas": 1}});
        assert_eq!(
            rc_row(&rc, now()),
            vec![json!("rc"), json!(3), json!(2), json!(1), json!("60s"), json!("a"), json!("nginx"), json!("app=x")]
        );
    }
}
