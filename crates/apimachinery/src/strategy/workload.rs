//! Workload defaults (upstream's `SetDefaults_*` of apps/v1, batch/v1 and
//! core ReplicationControllers): replicas, update strategies, history
//! limits, job completion settings, and the pod template's spec defaults
//! (the `PodSpec` ones; pod-only defaults such as priority, service links
//! and default tolerations come with pods, not templates).

use serde_json::{json, Map, Value};

use super::{generic, Generic, Pod, Strategy};

/// The strategy of a workload kind: generic flags plus its defaults.
#[derive(Clone, Debug)]
pub struct Workload {
    kind: &'static str,
    flags: Generic,
}

/// The workload kinds with defaults here, by group and kind.
pub fn for_kind(group: &str, kind: &str, has_status: bool) -> Option<Workload> {
    let kind = match (group, kind) {
        ("apps", "Deployment") => "Deployment",
        ("apps", "ReplicaSet") => "ReplicaSet",
        ("apps", "StatefulSet") => "StatefulSet",
        ("apps", "DaemonSet") => "DaemonSet",
        ("", "ReplicationController") => "ReplicationController",
        ("batch", "Job") => "Job",
        ("batch", "CronJob") => "CronJob",
        _ => return None,
    };
    Some(Workload { kind, flags: generic::for_builtin(group, kind, has_status) })
}

fn set(m: &mut Map<String, Value>, key: &str, value: Value) {
    if m.get(key).is_none_or(Value::is_null) {
        m.insert(key.to_string(), value);
    }
}

/// `spec.<key>.type` defaults to `RollingUpdate`, also when the strategy
/// object is there but empty (`kubectl create deployment` sends
/// `strategy: {}`), as upstream's `if strategy.Type == ""`.
fn default_strategy_type(spec: &mut Map<String, Value>, key: &str) {
    set(spec, key, json!({}));
    if let Some(s) = spec[key].as_object_mut() {
        if s.get("type").and_then(Value::as_str).is_none_or(str::is_empty) {
            s.insert("type".into(), json!("RollingUpdate"));
        }
    }
}

/// The `PodSpec` defaults of a pod template at `template` (an object with
/// `spec`).
pub fn default_template(template: &mut Value) {
    let Some(spec) = template.get("spec").filter(|s| s.is_object()).cloned() else { return };
    let pod_only = ["priority", "preemptionPolicy", "enableServiceLinks", "tolerations"];
    let mut pod = json!({ "spec": spec.clone() });
    Pod.default(&mut pod);
    if let Some(m) = pod["spec"].as_object_mut() {
        for f in pod_only {
            match spec.get(f) {
                Some(v) => {
                    m.insert(f.to_string(), v.clone());
                }
                None => {
                    m.remove(f);
                }
            }
        }
    }
    template["spec"] = pod["spec"].take();
}

impl Strategy for Workload {
    fn default(&self, obj: &mut Value) {
        if let Some(template) = obj.pointer_mut("/spec/template").filter(|t| t.is_object()) {
            default_template(template);
        }
        if let Some(template) = obj.pointer_mut("/spec/jobTemplate/spec/template").filter(|t| t.is_object()) {
            default_template(template);
        }
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
        match self.kind {
            "Deployment" => {
                set(spec, "replicas", json!(1));
                default_strategy_type(spec, "strategy");
                if spec["strategy"]["type"] == "RollingUpdate" {
                    let s = spec["strategy"].as_object_mut().expect("an object");
                    set(s, "rollingUpdate", json!({}));
                    if let Some(ru) = s["rollingUpdate"].as_object_mut() {
                        set(ru, "maxUnavailable", json!("25%"));
                        set(ru, "maxSurge", json!("25%"));
                    }
                }
                set(spec, "revisionHistoryLimit", json!(10));
                set(spec, "progressDeadlineSeconds", json!(600));
            }
            "ReplicaSet" | "ReplicationController" => set(spec, "replicas", json!(1)),
            "StatefulSet" => {
                set(spec, "replicas", json!(1));
                set(spec, "podManagementPolicy", json!("OrderedReady"));
                default_strategy_type(spec, "updateStrategy");
                if spec["updateStrategy"]["type"] == "RollingUpdate" {
                    let s = spec["updateStrategy"].as_object_mut().expect("an object");
                    set(s, "rollingUpdate", json!({}));
                    if let Some(ru) = s["rollingUpdate"].as_object_mut() {
                        set(ru, "partition", json!(0));
                    }
                }
                set(spec, "revisionHistoryLimit", json!(10));
                set(
                    spec,
                    "persistentVolumeClaimRetentionPolicy",
                    json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
                );
            }
            "DaemonSet" => {
                default_strategy_type(spec, "updateStrategy");
                if spec["updateStrategy"]["type"] == "RollingUpdate" {
                    let s = spec["updateStrategy"].as_object_mut().expect("an object");
                    set(s, "rollingUpdate", json!({}));
                    if let Some(ru) = s["rollingUpdate"].as_object_mut() {
                        set(ru, "maxUnavailable", json!(1));
                        set(ru, "maxSurge", json!(0));
                    }
                }
                set(spec, "revisionHistoryLimit", json!(10));
            }
            "Job" => {
                set(spec, "parallelism", json!(1));
                if spec.get("completions").is_none_or(Value::is_null) && spec.get("parallelism") == Some(&json!(1)) {
                    spec.insert("completions".into(), json!(1));
                }
                set(spec, "backoffLimit", json!(6));
                set(spec, "completionMode", json!("NonIndexed"));
                set(spec, "suspend", json!(false));
                let replacement = if spec.contains_key("podFailurePolicy") { "Failed" } else { "TerminatingOrFailed" };
                set(spec, "podReplacementPolicy", json!(replacement));
            }
            "CronJob" => {
                set(spec, "concurrencyPolicy", json!("Allow"));
                set(spec, "suspend", json!(false));
                set(spec, "successfulJobsHistoryLimit", json!(3));
                set(spec, "failedJobsHistoryLimit", json!(1));
            }
            _ => {}
        }
    }
    fn has_status_subresource(&self) -> bool {
        self.flags.has_status
    }
    fn tracks_generation(&self) -> bool {
        self.flags.tracks_generation
    }
    fn allow_create_on_update(&self) -> bool {
        self.flags.allow_create_on_update
    }
    fn default_gc_policy(&self) -> super::GcPolicy {
        self.flags.gc_policy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployment_and_job_defaults() {
        let w = for_kind("apps", "Deployment", true).unwrap();
        let mut d =
            json!({"spec": {"selector": {}, "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
        w.default(&mut d);
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(d["spec"]["strategy"]["rollingUpdate"], json!({"maxUnavailable": "25%", "maxSurge": "25%"}));
        assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
        assert_eq!(d["spec"]["progressDeadlineSeconds"], 600);
        let t = &d["spec"]["template"]["spec"];
        assert_eq!(t["restartPolicy"], "Always");
        assert_eq!(t["containers"][0]["imagePullPolicy"], "Always");
        assert!(t.get("priority").is_none() && t.get("enableServiceLinks").is_none() && t.get("tolerations").is_none());

        let recreate = for_kind("apps", "Deployment", true).unwrap();
        let mut r = json!({"spec": {"strategy": {"type": "Recreate"}}});
        recreate.default(&mut r);
        assert!(r["spec"]["strategy"].get("rollingUpdate").is_none());

        // `kubectl create deployment` sends `strategy: {}`.
        let mut e = json!({"spec": {"strategy": {}}});
        recreate.default(&mut e);
        assert_eq!(
            e["spec"]["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        );

        let j = for_kind("batch", "Job", true).unwrap();
        let mut job = json!({"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": []}}}});
        j.default(&mut job);
        assert_eq!(job["spec"]["completions"], 1);
        assert_eq!(job["spec"]["backoffLimit"], 6);
        assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Never");
        assert!(for_kind("apps", "ControllerRevision", false).is_none());
    }
}
