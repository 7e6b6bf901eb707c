//! Printers for workloads: apps/v1 (Deployment, ReplicaSet, StatefulSet,
//! DaemonSet, ControllerRevision), batch/v1 (Job, CronJob),
//! autoscaling (HorizontalPodAutoscaler, v1 and v2 shapes) and policy/v1
//! (PodDisruptionBudget), as upstream's `printDeployment`, `printJob`, ….

use jiff::Timestamp;
use serde_json::{json, Value};

use super::{
    age, arr, bool_ptr, cell, col, format_label_selector, format_labels, human_duration, int, int_or_string,
    layout_containers, name, qty, s, selector_string, since, timestamp, wide, Column, AGE, CONTAINERS_DOC, IMAGES_DOC,
    NAME,
};

const SELECTOR_DOC: &str = "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment. It must match the pod template's labels.";

/// Deployment columns: Name, Ready, Up-to-date, Available, Age | Containers, Images, Selector.
pub const DEPLOYMENT_COLUMNS: &[Column] = &[
    NAME,
    col("Ready", "string", "Number of the pod with ready state"),
    col(
        "Up-to-date",
        "string",
        "Total number of non-terminating pods targeted by this deployment that have the desired template spec.",
    ),
    col(
        "Available",
        "string",
        "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment.",
    ),
    AGE,
    wide("Containers", "string", CONTAINERS_DOC),
    wide("Images", "string", IMAGES_DOC),
    wide("Selector", "string", SELECTOR_DOC),
];

/// `spec.replicas`, defaulting to 1 as the workload defaulters do.
fn replicas(obj: &Value) -> i64 {
    obj["spec"]["replicas"].as_i64().unwrap_or(1)
}

/// `printDeployment`: READY `ready/desired`; wide selector is the plain
/// selector string (empty when it selects everything).
pub fn deployment_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    let st = &obj["status"];
    let (names, images) = layout_containers(&obj["spec"]["template"]["spec"]["containers"]);
    vec![
        name(obj),
        cell(format!("{}/{}", int(&st["readyReplicas"]), replicas(obj))),
        json!(int(&st["updatedReplicas"])),
        json!(int(&st["availableReplicas"])),
        age(obj, now),
        names,
        images,
        cell(selector_string(&obj["spec"]["selector"])),
    ]
}

/// ReplicaSet columns: Name, Desired, Current, Ready, Age | Containers, Images, Selector.
pub const REPLICA_SET_COLUMNS: &[Column] = &[
    NAME,
    col("Desired", "integer", "Replicas is the number of desired pods. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset"),
    col("Current", "integer", "Replicas is the most recently observed number of non-terminating pods. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset"),
    col("Ready", "integer", "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition."),
    AGE,
    wide("Containers", "string", CONTAINERS_DOC),
    wide("Images", "string", IMAGES_DOC),
    wide("Selector", "string", "Selector is a label query over pods that should match the replica count. Label keys and values that must match in order to be controlled by this replica set. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"),
];

/// `printReplicaSet`.
pub fn replica_set_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    let (names, images) = layout_containers(&obj["spec"]["template"]["spec"]["containers"]);
    vec![
        name(obj),
        json!(replicas(obj)),
        json!(int(&obj["status"]["replicas"])),
        json!(int(&obj["status"]["readyReplicas"])),
        age(obj, now),
        names,
        images,
        cell(format_label_selector(&obj["spec"]["selector"])),
    ]
}

/// StatefulSet columns: Name, Ready, Age | Containers, Images.
pub const STATEFUL_SET_COLUMNS: &[Column] = &[
    NAME,
    col("Ready", "string", "Number of the pod with ready state"),
    AGE,
    wide("Containers", "string", CONTAINERS_DOC),
    wide("Images", "string", IMAGES_DOC),
];

/// `printStatefulSet`: READY `ready/desired`.
pub fn stateful_set_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    let (names, images) = layout_containers(&obj["spec"]["template"]["spec"]["containers"]);
    vec![
        name(obj),
        cell(format!("{}/{}", int(&obj["status"]["readyReplicas"]), replicas(obj))),
        age(obj, now),
        names,
        images,
    ]
}

/// DaemonSet columns: Name, Desired, Current, Ready, Up-to-date, Available,
/// Node Selector, Age | Containers, Images, Selector.
pub const DAEMON_SET_COLUMNS: &[Column] = &[
    NAME,
    col("Desired", "integer", "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/"),
    col("Current", "integer", "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/"),
    col("Ready", "integer", "numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition."),
    col("Up-to-date", "integer", "The total number of nodes that are running updated daemon pod"),
    col("Available", "integer", "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)"),
    col("Node Selector", "string", "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node. More info: https://kubernetes.io/docs/concepts/configuration/assign-pod-node/"),
    AGE,
    wide("Containers", "string", CONTAINERS_DOC),
    wide("Images", "string", IMAGES_DOC),
    wide("Selector", "string", "A label query over pods that are managed by the daemon set. Must match in order to be controlled. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"),
];

/// `printDaemonSet`.
pub fn daemon_set_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    let st = &obj["status"];
    let pod_spec = &obj["spec"]["template"]["spec"];
    let (names, images) = layout_containers(&pod_spec["containers"]);
    vec![
        name(obj),
        json!(int(&st["desiredNumberScheduled"])),
        json!(int(&st["currentNumberScheduled"])),
        json!(int(&st["numberReady"])),
        json!(int(&st["updatedNumberScheduled"])),
        json!(int(&st["numberAvailable"])),
        cell(format_labels(&pod_spec["nodeSelector"])),
        age(obj, now),
        names,
        images,
        cell(format_label_selector(&obj["spec"]["selector"])),
    ]
}

/// ControllerRevision columns: Name, Controller, Revision, Age.
pub const CONTROLLER_REVISION_COLUMNS: &[Column] = &[
    NAME,
    col("Controller", "string", "Controller of the object"),
    col("Revision", "string", "Revision indicates the revision of the state represented by Data."),
    AGE,
];

/// `printControllerRevision`: the controller owner as `kind.group/name`
/// lower-cased (`statefulset.apps/web`), `<none>` without one.
pub fn controller_revision_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    let owner = arr(&obj["metadata"]["ownerReferences"]).iter().find(|o| o["controller"].as_bool() == Some(true));
    let controller = match owner {
        None => "<none>".to_string(),
        Some(o) => {
            let api_version = s(&o["apiVersion"]);
            let group = if api_version.contains('/') { api_version.split('/').next().unwrap_or("") } else { "" };
            let kind = s(&o["kind"]);
            let gk = if group.is_empty() { kind.to_string() } else { format!("{kind}.{group}") };
            if gk.is_empty() {
                s(&o["name"]).to_string()
            } else {
                format!("{}/{}", gk.to_lowercase(), s(&o["name"]))
            }
        }
    };
    vec![name(obj), cell(controller), json!(int(&obj["revision"])), age(obj, now)]
}

/// Job columns (1.33): Name, Status, Completions, Duration, Age | Containers, Images, Selector.
pub const JOB_COLUMNS: &[Column] = &[
    NAME,
    col("Status", "string", "Status of the job."),
    col("Completions", "string", "The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. However, it may decrease in reaction to scale down of elastic indexed jobs."),
    col("Duration", "string", "Time required to complete the job."),
    AGE,
    wide("Containers", "string", CONTAINERS_DOC),
    wide("Images", "string", IMAGES_DOC),
    wide("Selector", "string", "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"),
];

/// Whether the job's first condition of type `ty` has status True.
fn job_condition(obj: &Value, ty: &str) -> bool {
    arr(&obj["status"]["conditions"]).iter().find(|c| s(&c["type"]) == ty).is_some_and(|c| s(&c["status"]) == "True")
}

/// `printJob`: COMPLETIONS `succeeded/completions` (or `/1`, `/1 of P`
/// for parallel jobs without completions), DURATION from start to
/// completion (or now), STATUS Complete/Failed/Terminating/Suspended/
/// FailureTarget/Running.
pub fn job_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &obj["spec"];
    let st = &obj["status"];
    let succeeded = int(&st["succeeded"]);
    let completions = match spec["completions"].as_i64() {
        Some(c) => format!("{succeeded}/{c}"),
        None => match int(&spec["parallelism"]) {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let duration = match (timestamp(&st["startTime"]), timestamp(&st["completionTime"])) {
        (None, _) => String::new(),
        (Some(start), None) => human_duration(now.duration_since(start).as_secs()),
        (Some(start), Some(end)) => human_duration(end.duration_since(start).as_secs()),
    };
    let status = if job_condition(obj, "Complete") {
        "Complete"
    } else if job_condition(obj, "Failed") {
        "Failed"
    } else if obj["metadata"]["deletionTimestamp"].is_string() {
        "Terminating"
    } else if job_condition(obj, "Suspended") {
        "Suspended"
    } else if job_condition(obj, "FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    let (names, images) = layout_containers(&spec["template"]["spec"]["containers"]);
    vec![
        name(obj),
        cell(status),
        cell(completions),
        cell(duration),
        age(obj, now),
        names,
        images,
        cell(format_label_selector(&spec["selector"])),
    ]
}

/// CronJob columns: Name, Schedule, Timezone, Suspend, Active, Last Schedule, Age | Containers, Images, Selector.
pub const CRON_JOB_COLUMNS: &[Column] = &[
    NAME,
    col("Schedule", "string", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
    col("Timezone", "string", "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, this will default to the time zone of the kube-controller-manager process. The set of valid time zone names and the time zone offset is loaded from the system-wide time zone database by the API server during CronJob validation and the controller manager during execution. If no system-wide time zone database can be found a bundled version of the database is used instead. If the time zone name becomes invalid during the lifetime of a CronJob or due to a change in host configuration, the controller will stop creating new new Jobs and will create a system event with the reason UnknownTimeZone. More information can be found in https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones"),
    col("Suspend", "boolean", "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.  Defaults to false."),
    col("Active", "integer", "A list of pointers to currently running jobs."),
    col("Last Schedule", "string", "Information when was the last time the job was successfully scheduled."),
    AGE,
    wide("Containers", "string", CONTAINERS_DOC),
    wide("Images", "string", IMAGES_DOC),
    wide("Selector", "string", "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"),
];

/// `printCronJob`.
pub fn cron_job_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &obj["spec"];
    let last = if obj["status"]["lastScheduleTime"].is_string() {
        since(&obj["status"]["lastScheduleTime"], now)
    } else {
        "<none>".into()
    };
    let job_spec = &spec["jobTemplate"]["spec"];
    let (names, images) = layout_containers(&job_spec["template"]["spec"]["containers"]);
    vec![
        name(obj),
        cell(s(&spec["schedule"])),
        cell(spec["timeZone"].as_str().unwrap_or("<none>")),
        cell(bool_ptr(&spec["suspend"])),
        json!(arr(&obj["status"]["active"]).len()),
        cell(last),
        age(obj, now),
        names,
        images,
        cell(format_label_selector(&job_spec["selector"])),
    ]
}

/// HorizontalPodAutoscaler columns: Name, Reference, Targets, MinPods, MaxPods, Replicas, Age.
pub const HPA_COLUMNS: &[Column] = &[
    NAME,
    col("Reference", "string", "scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be collected, as well as to actually change the replica count."),
    col("Targets", "string", "metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used).  The desired replica count is calculated multiplying the ratio between the target value and the current value by the current number of pods.  Ergo, metrics used must decrease as the pod count is increased, and vice-versa.  See the individual metric source types for more information about how each type of metric must respond. If not set, the default metric will be set to 80% average CPU utilization."),
    col("MinPods", "string", "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.  It defaults to 1 pod.  minReplicas is allowed to be 0 if the alpha feature gate HPAScaleToZero is enabled and at least one Object or External metric is configured.  Scaling is active as long as at least one metric value is available."),
    col("MaxPods", "string", "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up. It cannot be less that minReplicas."),
    col("Replicas", "string", "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler."),
    AGE,
];

/// One metric of `formatHPAMetrics` (spec `m`, status `cur` at the same index).
fn hpa_metric(m: &Value, cur: &Value) -> String {
    let q = qty;
    let unknown = || "<unknown>".to_string();
    match s(&m["type"]) {
        "External" | "Object" => {
            let key = if s(&m["type"]) == "External" { "external" } else { "object" };
            let target = &m[key]["target"];
            let current = &cur[key]["current"];
            if target["averageValue"].is_string() {
                let c = if current["averageValue"].is_string() { q(&current["averageValue"]) } else { unknown() };
                format!("{c}/{} (avg)", q(&target["averageValue"]))
            } else {
                let c = if cur[key].is_object() { q(&current["value"]) } else { unknown() };
                format!("{c}/{}", q(&target["value"]))
            }
        }
        "Pods" => {
            let c = if cur["pods"].is_object() { q(&cur["pods"]["current"]["averageValue"]) } else { unknown() };
            format!("{c}/{}", q(&m["pods"]["target"]["averageValue"]))
        }
        ty @ ("Resource" | "ContainerResource") => {
            let key = if ty == "Resource" { "resource" } else { "containerResource" };
            let target = &m[key]["target"];
            let current = &cur[key]["current"];
            let res = s(&m[key]["name"]);
            if target["averageValue"].is_string() {
                let c = if cur[key].is_object() { q(&current["averageValue"]) } else { unknown() };
                format!("{res}: {c}/{}", q(&target["averageValue"]))
            } else {
                let c = current["averageUtilization"].as_i64().map_or_else(unknown, |u| format!("{u}%"));
                let t = target["averageUtilization"].as_i64().map_or("<auto>".to_string(), |u| format!("{u}%"));
                format!("{res}: {c}/{t}")
            }
        }
        _ => "<unknown type>".into(),
    }
}

/// `formatHPAMetrics`: up to two metrics, then `+ N more...`; autoscaling/v1
/// objects are read as their v2 form (`targetCPUUtilizationPercentage` is a
/// cpu Resource metric).
fn hpa_targets(obj: &Value) -> String {
    let (specs, statuses) =
        if obj["spec"].get("metrics").is_some() || obj["spec"].get("targetCPUUtilizationPercentage").is_none() {
            (arr(&obj["spec"]["metrics"]).to_vec(), arr(&obj["status"]["currentMetrics"]).to_vec())
        } else {
            let spec = json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
            "averageUtilization": obj["spec"]["targetCPUUtilizationPercentage"]}}});
            let status = match obj["status"]["currentCPUUtilizationPercentage"].as_i64() {
                Some(u) => {
                    vec![json!({"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": u}}})]
                }
                None => vec![],
            };
            (vec![spec], status)
        };
    if specs.is_empty() {
        return "<none>".into();
    }
    let list: Vec<String> =
        specs.iter().enumerate().map(|(i, m)| hpa_metric(m, statuses.get(i).unwrap_or(&Value::Null))).collect();
    let max = 2;
    if list.len() > max {
        format!("{} + {} more...", list[..max].join(", "), list.len() - max)
    } else {
        list.join(", ")
    }
}

/// `printHorizontalPodAutoscaler`.
pub fn hpa_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &obj["spec"];
    let reference = format!("{}/{}", s(&spec["scaleTargetRef"]["kind"]), s(&spec["scaleTargetRef"]["name"]));
    let min = spec["minReplicas"].as_i64().map_or("<unset>".to_string(), |m| m.to_string());
    vec![
        name(obj),
        cell(reference),
        cell(hpa_targets(obj)),
        cell(min),
        json!(int(&spec["maxReplicas"])),
        json!(int(&obj["status"]["currentReplicas"])),
        age(obj, now),
    ]
}

/// PodDisruptionBudget columns: Name, Min Available, Max Unavailable, Allowed Disruptions, Age.
pub const PDB_COLUMNS: &[Column] = &[
    NAME,
    col("Min Available", "string", "The minimum number of pods that must be available."),
    col("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
    col("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time."),
    AGE,
];

/// `printPodDisruptionBudget`: the int-or-string bounds or `N/A`.
pub fn pdb_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    let bound = |v: &Value| if v.is_null() { "N/A".to_string() } else { int_or_string(v) };
    vec![
        name(obj),
        cell(bound(&obj["spec"]["minAvailable"])),
        cell(bound(&obj["spec"]["maxUnavailable"])),
        json!(int(&obj["status"]["disruptionsAllowed"])),
        age(obj, now),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{ago, now};
    use super::*;

    fn template() -> Value {
        json!({"spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}})
    }

    #[test]
    fn deployment_ready_and_wide_cells() {
        let d = json!({"metadata": {"name": "web", "creationTimestamp": ago(125)},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": template()},
            "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}});
        assert_eq!(
            deployment_row(&d, now()),
            vec![
                json!("web"),
                json!("2/3"),
                json!(3),
                json!(2),
                json!("2m5s"),
                json!("nginx"),
                json!("nginx:1.27"),
                json!("app=web")
            ]
        );
        let fresh = json!({"metadata": {"name": "new"}, "spec": {"template": template()}});
        assert_eq!(&deployment_row(&fresh, now())[1..4], &[json!("0/1"), json!(0), json!(0)]);
    }

    #[test]
    fn sets_print_counts() {
        let rs = json!({"metadata": {"name": "web-1"}, "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": template()},
            "status": {"replicas": 2, "readyReplicas": 1}});
        assert_eq!(&replica_set_row(&rs, now())[1..4], &[json!(2), json!(2), json!(1)]);
        assert_eq!(replica_set_row(&rs, now())[7], json!("app=web"));
        let ss = json!({"metadata": {"name": "db"}, "spec": {"replicas": 3, "template": template()}, "status": {"readyReplicas": 3}});
        assert_eq!(stateful_set_row(&ss, now())[1], json!("3/3"));
        let ds = json!({"metadata": {"name": "agent"}, "spec": {"template": {"spec": {"nodeSelector": {"os": "linux"}, "containers": []}}},
            "status": {"desiredNumberScheduled": 2, "currentNumberScheduled": 2, "numberReady": 1, "updatedNumberScheduled": 2, "numberAvailable": 1}});
        assert_eq!(
            &daemon_set_row(&ds, now())[1..7],
            &[json!(2), json!(2), json!(1), json!(2), json!(1), json!("os=linux")]
        );
        assert_eq!(daemon_set_row(&ds, now())[10], json!("<none>"));
    }

    #[test]
    fn controller_revisions_name_their_owner() {
        let cr = json!({"metadata": {"name": "web-abc", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "controller": true}]}, "revision": 2});
        assert_eq!(&controller_revision_row(&cr, now())[1..3], &[json!("statefulset.apps/web"), json!(2)]);
        let orphan = json!({"metadata": {"name": "x"}, "revision": 1});
        assert_eq!(controller_revision_row(&orphan, now())[1], json!("<none>"));
    }

    #[test]
    fn jobs_status_completions_and_duration() {
        let done = json!({"metadata": {"name": "pi", "creationTimestamp": ago(300)},
            "spec": {"completions": 1, "parallelism": 1, "template": template(), "selector": {"matchLabels": {"batch.kubernetes.io/job-name": "pi"}}},
            "status": {"succeeded": 1, "startTime": ago(290), "completionTime": ago(250),
              "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}});
        assert_eq!(&job_row(&done, now())[1..5], &[json!("Complete"), json!("1/1"), json!("40s"), json!("5m")]);
        assert_eq!(job_row(&done, now())[7], json!("batch.kubernetes.io/job-name=pi"));
        let running = json!({"metadata": {"name": "w"}, "spec": {"parallelism": 3, "template": template()},
            "status": {"startTime": ago(90)}});
        assert_eq!(&job_row(&running, now())[1..4], &[json!("Running"), json!("0/1 of 3"), json!("90s")]);
        let suspended = json!({"metadata": {"name": "s"}, "spec": {"template": template()},
            "status": {"conditions": [{"type": "Suspended", "status": "True"}]}});
        assert_eq!(&job_row(&suspended, now())[1..4], &[json!("Suspended"), json!("0/1"), json!("")]);
    }

    #[test]
    fn cron_jobs() {
        let cj = json!({"metadata": {"name": "c"}, "spec": {"schedule": "*/5 * * * *", "suspend": false,
            "jobTemplate": {"spec": {"template": template()}}}, "status": {"active": [{"name": "c-1"}], "lastScheduleTime": ago(61)}});
        assert_eq!(
            &cron_job_row(&cj, now())[1..6],
            &[json!("*/5 * * * *"), json!("<none>"), json!("False"), json!(1), json!("61s")]
        );
    }

    #[test]
    fn hpa_targets_in_both_versions() {
        let v2 = json!({"metadata": {"name": "h"}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"},
            "minReplicas": 1, "maxReplicas": 5, "metrics": [
              {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}},
              {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}}]},
            "status": {"currentReplicas": 2, "currentMetrics": [
              {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 12}}}]}});
        assert_eq!(
            &hpa_row(&v2, now())[1..6],
            &[json!("Deployment/web"), json!("cpu: 12%/80%, memory: <unknown>/100Mi"), json!("1"), json!(5), json!(2)]
        );
        let v1 = json!({"metadata": {"name": "h"}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"},
            "maxReplicas": 3, "targetCPUUtilizationPercentage": 50}, "status": {}});
        assert_eq!(&hpa_row(&v1, now())[2..4], &[json!("cpu: <unknown>/50%"), json!("<unset>")]);
    }

    #[test]
    fn pdb_bounds() {
        let pdb =
            json!({"metadata": {"name": "p"}, "spec": {"minAvailable": "50%"}, "status": {"disruptionsAllowed": 1}});
        assert_eq!(&pdb_row(&pdb, now())[1..4], &[json!("50%"), json!("N/A"), json!(1)]);
    }
}
