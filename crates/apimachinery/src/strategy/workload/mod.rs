//! Workload defaults (upstream's `SetDefaults_*` of apps/v1, batch/v1 and
//! core ReplicationControllers): replicas, update strategies, history
//! limits, job completion settings, and the pod template's spec defaults
//! (the `PodSpec` ones; pod-only defaults such as priority, service links
//! and default tolerations come with pods, not templates).
//!
//! Validation as upstream's `pkg/apis/apps/validation` and
//! `pkg/apis/batch/validation`: the shared selector and template rules are
//! here, the StatefulSet and DaemonSet specifics in [`apps`], Jobs and
//! CronJobs in [`job`] (with the schedule parser in [`cron`]).

use serde_json::{json, Map, Value};

use super::pod::default_pod_spec;
use super::{generic, null_template_creation_timestamp, reset_status, Generic, Strategy};

pub mod apps;
pub mod cron;
pub mod job;
use crate::errors::StatusCause;
use crate::validation::meta::validate_nonnegative;
use crate::validation::podspec::{go_string_map, validate_pod_spec, SpecOf};
use crate::validation::{
    validate_immutable_field, validate_label_selector, validate_labels, BadValue, ErrorList, FieldError,
    LabelSelectorValidationOptions, Path,
};

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
    if let Some(spec) = template.get_mut("spec").and_then(Value::as_object_mut) {
        default_pod_spec(spec);
    }
}

impl Strategy for Workload {
    fn default(&self, obj: &mut Value) {
        for path in ["/spec/template", "/spec/jobTemplate", "/spec/jobTemplate/spec/template"] {
            if let Some(t) = obj.pointer_mut(path).filter(|t| t.is_object()) {
                null_template_creation_timestamp(t);
            }
        }
        if let Some(claims) = obj.pointer_mut("/spec/volumeClaimTemplates").and_then(Value::as_array_mut) {
            claims.iter_mut().for_each(null_template_creation_timestamp);
        }
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
            "ReplicaSet" => set(spec, "replicas", json!(1)),
            "ReplicationController" => {
                set(spec, "replicas", json!(1));
                // `SetDefaults_ReplicationController`: selector and labels
                // from the template's labels when empty.
                let labels = spec.get("template").and_then(|t| t.pointer("/metadata/labels")).cloned();
                if let Some(labels) = labels.filter(|l| l.as_object().is_some_and(|m| !m.is_empty())) {
                    if spec.get("selector").and_then(Value::as_object).is_none_or(|m| m.is_empty()) {
                        spec.insert("selector".into(), labels);
                    }
                }
            }
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
                // Both unset: a non-parallel job, both 1; otherwise only
                // parallelism defaults.
                let unset = |spec: &Map<String, Value>, f: &str| spec.get(f).is_none_or(Value::is_null);
                if unset(spec, "completions") && unset(spec, "parallelism") {
                    spec.insert("completions".into(), json!(1));
                }
                set(spec, "parallelism", json!(1));
                // A per-index limit replaces the Job-wide one (upstream: MaxInt32).
                let per_index = spec.get("backoffLimitPerIndex").is_some_and(|v| !v.is_null());
                set(spec, "backoffLimit", json!(if per_index { i32::MAX } else { 6 }));
                set(spec, "completionMode", json!("NonIndexed"));
                set(spec, "suspend", json!(false));
                let replacement = if spec.contains_key("podFailurePolicy") { "Failed" } else { "TerminatingOrFailed" };
                set(spec, "podReplacementPolicy", json!(replacement));
                job::default_job_extras(spec);
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
    fn prepare_for_create(&self, obj: &mut Value) {
        if self.has_status_subresource() {
            reset_status(obj);
        }
        if self.kind == "Job" {
            job::generate_selector(obj);
        }
    }
    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        match self.kind {
            "Job" => job::validate_job(obj, true),
            "CronJob" => job::validate_cronjob(obj, None),
            kind => validate_workload(kind, obj),
        }
        .to_causes()
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        let mut errs = match self.kind {
            // Old jobs without the prefixed labels stay valid.
            "Job" => {
                let labels = old.pointer("/spec/template/metadata/labels");
                let has = |k: &str| labels.and_then(|l| l.get(k)).is_some();
                let mut e = job::validate_job(new, has(job::JOB_NAME_LABEL) && has(job::CONTROLLER_UID_LABEL));
                e.extend(job::validate_job_update(new, old));
                e
            }
            "CronJob" => job::validate_cronjob(new, Some(old)),
            kind => validate_workload(kind, new),
        };
        if matches!(self.kind, "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet") {
            let path = Path::new("spec").child("selector");
            errs.extend(validate_immutable_field(new.pointer("/spec/selector"), old.pointer("/spec/selector"), &path));
        }
        if self.kind == "StatefulSet" {
            errs.extend(apps::validate_statefulset_update(new, old));
        }
        errs.to_causes()
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

/// Whether a `metav1.LabelSelector` JSON object selects nothing-specific
/// (`selector.Empty()`: no matchLabels and no matchExpressions).
fn selector_is_empty(sel: &Value) -> bool {
    let n = |k: &str| sel.get(k).and_then(Value::as_object).map_or(0, |m| m.len());
    let e = sel.get("matchExpressions").and_then(Value::as_array).map_or(0, Vec::len);
    n("matchLabels") == 0 && e == 0
}

/// Whether a `metav1.LabelSelector` JSON object matches `labels`.
pub fn selector_matches(sel: &Value, labels: Option<&Value>) -> bool {
    let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    if let Some(m) = sel.get("matchLabels").and_then(Value::as_object) {
        if m.iter().any(|(k, v)| get(k) != v.as_str()) {
            return false;
        }
    }
    for e in sel.get("matchExpressions").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]) {
        let key = e["key"].as_str().unwrap_or("");
        let values: Vec<&str> =
            e["values"].as_array().map(|v| v.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        let ok = match e["operator"].as_str().unwrap_or("") {
            "In" => get(key).is_some_and(|v| values.contains(&v)),
            "NotIn" => get(key).is_none_or(|v| !values.contains(&v)),
            "Exists" => get(key).is_some(),
            "DoesNotExist" => get(key).is_none(),
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    true
}

/// Go's `%#v` of a `*metav1.LabelSelector` as a field error prints it
/// (dereferenced; match expressions are not rendered).
fn go_label_selector(sel: &Value) -> String {
    format!(
        "v1.LabelSelector{{MatchLabels:{}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}}",
        go_string_map(sel.get("matchLabels"))
    )
}

/// `ValidatePodTemplateSpec`: template labels and the pod spec.
fn validate_template(template: &Value, path: &Path) -> ErrorList {
    let mut errs = validate_labels(template.pointer("/metadata/labels"), &path.child("metadata").child("labels"));
    errs.extend(validate_pod_spec(&template["spec"], SpecOf::Template, &path.child("spec")));
    errs
}

/// Upstream's spec validation of a workload kind (`ValidateDeploymentSpec`,
/// `ValidateReplicaSetSpec`, `ValidateStatefulSetSpec`, `ValidateDaemonSetSpec`,
/// `ValidateReplicationControllerSpec`, `ValidateJobSpec`, `ValidateCronJobSpec`):
/// selector, template labels matching it, replicas, restart policy,
/// revision history, Deployment strategy.
pub fn validate_workload(kind: &str, obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let spec = &obj["spec"];
    let sp = Path::new("spec");
    let tp = sp.child("template");
    for f in ["replicas", "revisionHistoryLimit", "minReadySeconds"] {
        if let Some(v) = spec.get(f).and_then(Value::as_i64) {
            errs.extend(validate_nonnegative(v, &sp.child(f)));
        }
    }
    match kind {
        "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet" => {
            let sel = &spec["selector"];
            // A DaemonSet's missing selector is not "required" upstream: it
            // selects nothing, so the template labels fail to match it.
            let daemonset_without = kind == "DaemonSet" && sel.is_null();
            if sel.is_null() {
                if !daemonset_without {
                    errs.push(FieldError::required(&sp.child("selector"), ""));
                }
            } else {
                let opts = LabelSelectorValidationOptions::default();
                errs.extend(validate_label_selector(sel, opts, &sp.child("selector")));
                if selector_is_empty(sel) {
                    let what = match kind {
                        "StatefulSet" => "statefulset",
                        "DaemonSet" => "daemonset",
                        _ => "deployment",
                    };
                    errs.push(FieldError::invalid(
                        &sp.child("selector"),
                        BadValue::Raw(go_label_selector(sel)),
                        &format!("empty selector is invalid for {what}"),
                    ));
                }
            }
            let template = &spec["template"];
            let matches = |labels: Option<&Value>| {
                !daemonset_without && (!sel.is_object() || selector_is_empty(sel) || selector_matches(sel, labels))
            };
            // Upstream leaves a StatefulSet template's pod spec to pod
            // creation (its volume mounts may name claim templates).
            let pod_spec = kind != "StatefulSet";
            errs.extend(validate_template_for(template, &tp, matches, &["Always"], pod_spec));
            if template["spec"].get("activeDeadlineSeconds").is_some_and(|v| !v.is_null()) {
                let p = tp.child("spec").child("activeDeadlineSeconds");
                let what = if kind == "ReplicaSet" || kind == "Deployment" { "ReplicaSet" } else { kind };
                errs.push(FieldError::forbidden(&p, &format!("activeDeadlineSeconds in {what} is not Supported")));
            }
            match kind {
                "Deployment" => {
                    errs.extend(validate_deployment_strategy(&spec["strategy"], &sp.child("strategy")));
                    if let Some(p) = spec["progressDeadlineSeconds"].as_i64() {
                        let pp = sp.child("progressDeadlineSeconds");
                        errs.extend(validate_nonnegative(p, &pp));
                        if p <= spec["minReadySeconds"].as_i64().unwrap_or(0) {
                            errs.push(FieldError::invalid(&pp, p, "must be greater than minReadySeconds"));
                        }
                    }
                }
                "StatefulSet" => errs.extend(apps::validate_statefulset_spec(spec, &sp)),
                "DaemonSet" => errs.extend(apps::validate_daemonset_spec(spec, &sp)),
                _ => {}
            }
        }
        "ReplicationController" => {
            let sel = spec.get("selector");
            if sel.and_then(Value::as_object).is_none_or(|m| m.is_empty()) {
                errs.push(FieldError::required(&sp.child("selector"), ""));
            } else {
                errs.extend(validate_labels(sel, &sp.child("selector")));
            }
            let matches = |labels: Option<&Value>| match sel.and_then(Value::as_object) {
                Some(m) if !m.is_empty() => m.iter().all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v)),
                _ => true,
            };
            errs.extend(validate_template_for(&spec["template"], &tp, matches, &["Always"], true));
        }
        "Job" => errs.extend(job::validate_job(obj, true)),
        "CronJob" => errs.extend(job::validate_cronjob(obj, None)),
        _ => {}
    }
    errs
}

/// The template checks every workload shares: the template is required, its
/// labels must satisfy the selector (`matches` gets `metadata.labels`), its
/// pod spec must be valid, and its restart policy must be one of `restart`.
fn validate_template_for(
    template: &Value,
    tp: &Path,
    matches: impl Fn(Option<&Value>) -> bool,
    restart: &[&str],
    pod_spec: bool,
) -> ErrorList {
    let mut errs = ErrorList::new();
    if !template.is_object() {
        errs.push(FieldError::required(tp, ""));
        return errs;
    }
    let labels = template.pointer("/metadata/labels");
    if !matches(labels) {
        errs.push(FieldError::invalid(
            &tp.child("metadata").child("labels"),
            BadValue::Raw(go_string_map(labels)),
            "`selector` does not match template `labels`",
        ));
    }
    if pod_spec {
        errs.extend(validate_template(template, tp));
    } else {
        // `ValidatePodTemplateSpecForStatefulSet` checks the labels under
        // `template.labels` (sic) and leaves the pod spec alone.
        errs.extend(validate_labels(template.pointer("/metadata/labels"), &tp.child("labels")));
    }
    let rp = template["spec"]["restartPolicy"].as_str().unwrap_or("");
    if !restart.contains(&rp) {
        errs.push(FieldError::not_supported(&tp.child("spec").child("restartPolicy"), rp, restart));
    }
    errs
}

/// An `IntOrString` as upstream's `getIntOrPercentValue` sees it, with its
/// Go `%#v` rendering.
fn int_or_percent(v: &Value) -> (Option<i64>, bool, String) {
    match v {
        Value::Number(n) => {
            let i = n.as_i64();
            (i, false, format!("intstr.IntOrString{{Type:0, IntVal:{}, StrVal:\"\"}}", i.unwrap_or(0)))
        }
        Value::String(s) => {
            let pct = s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok());
            (pct, true, format!("intstr.IntOrString{{Type:1, IntVal:0, StrVal:{}}}", crate::validation::go_quote(s)))
        }
        _ => (Some(0), false, "intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}".to_string()),
    }
}

/// `ValidateDeploymentStrategy` / `ValidateRollingUpdateDeployment`.
fn validate_deployment_strategy(strategy: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    match strategy["type"].as_str().unwrap_or("") {
        "Recreate" => {
            if strategy.get("rollingUpdate").is_some_and(|v| !v.is_null()) {
                errs.push(FieldError::forbidden(
                    &path.child("rollingUpdate"),
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        "RollingUpdate" => {
            let ru = &strategy["rollingUpdate"];
            let rp = path.child("rollingUpdate");
            let (unavail, unavail_pct, unavail_go) = int_or_percent(&ru["maxUnavailable"]);
            let (surge, _, _) = int_or_percent(&ru["maxSurge"]);
            for (f, v) in [("maxUnavailable", &ru["maxUnavailable"]), ("maxSurge", &ru["maxSurge"])] {
                errs.extend(apps::validate_positive_int_or_percent(v, &rp.child(f)));
            }
            if unavail == Some(0) && surge == Some(0) {
                errs.push(FieldError::invalid(
                    &rp.child("maxUnavailable"),
                    BadValue::Raw(unavail_go.clone()),
                    "may not be 0 when `maxSurge` is 0",
                ));
            }
            if unavail_pct && unavail.is_some_and(|p| p > 100) {
                errs.push(FieldError::invalid(
                    &rp.child("maxUnavailable"),
                    BadValue::Raw(unavail_go),
                    "must not be greater than 100%",
                ));
            }
        }
        "" => errs.push(FieldError::required(&path.child("type"), "")),
        other => errs.push(FieldError::not_supported(&path.child("type"), other, &["Recreate", "RollingUpdate"])),
    }
    errs
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
        assert_eq!(job["spec"]["manualSelector"], false);
        assert_eq!(job["spec"]["completionMode"], "NonIndexed");
        assert_eq!(job["spec"]["podReplacementPolicy"], "TerminatingOrFailed");
        // backoffLimitPerIndex replaces the Job-wide limit (upstream: MaxInt32).
        let mut per_index = json!({"spec": {"backoffLimitPerIndex": 1, "completionMode": "Indexed", "completions": 3,
            "template": {"spec": {"restartPolicy": "Never", "containers": []}}}});
        j.default(&mut per_index);
        assert_eq!(per_index["spec"]["backoffLimit"], 2147483647);

        let c = for_kind("batch", "CronJob", true).unwrap();
        let mut cj = json!({"spec": {"schedule": "@daily", "jobTemplate": {"spec": {"template": {"spec": {}}}}}});
        c.default(&mut cj);
        assert_eq!(cj["spec"]["concurrencyPolicy"], "Allow");
        assert_eq!(cj["spec"]["suspend"], false);
        assert_eq!(cj["spec"]["successfulJobsHistoryLimit"], 3);
        assert_eq!(cj["spec"]["failedJobsHistoryLimit"], 1);
        // A job template gets no Job defaults, only its pod template's.
        assert!(cj["spec"]["jobTemplate"]["spec"].get("backoffLimit").is_none());
        assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Never");
        assert!(for_kind("apps", "ControllerRevision", false).is_none());
    }
}

#[cfg(test)]
mod validation_tests {
    use super::*;

    fn deployment() -> Value {
        json!({"spec": {"selector": {"matchLabels": {"app": "x"}},
            "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    }

    fn msgs(kind: &str, mut obj: Value) -> Vec<String> {
        let group = if kind == "Job" || kind == "CronJob" { "batch" } else { "apps" };
        let w = for_kind(group, kind, true).unwrap();
        obj["metadata"] = json!({"name": "w", "uid": "u1"});
        w.default(&mut obj);
        w.prepare_for_create(&mut obj);
        w.validate_create(&obj).iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn valid_deployment_passes() {
        assert!(msgs("Deployment", deployment()).is_empty());
    }

    #[test]
    fn selector_must_match_template_labels() {
        let mut d = deployment();
        d["spec"]["template"]["metadata"]["labels"] = json!({"app": "y"});
        assert_eq!(
            msgs("Deployment", d),
            ["spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"y\"}: `selector` does not match template `labels`"]
        );
    }

    #[test]
    fn daemonset_without_selector_and_progress_deadline() {
        let mut d = deployment();
        d["spec"].as_object_mut().unwrap().remove("selector");
        assert_eq!(
            msgs("DaemonSet", d),
            ["spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"x\"}: `selector` does not match template `labels`"]
        );
        let mut p = deployment();
        p["spec"]["minReadySeconds"] = json!(600);
        assert_eq!(
            msgs("Deployment", p),
            ["spec.progressDeadlineSeconds: Invalid value: 600: must be greater than minReadySeconds"]
        );
    }

    #[test]
    fn selector_required_and_non_empty() {
        let mut d = deployment();
        d["spec"].as_object_mut().unwrap().remove("selector");
        assert_eq!(msgs("Deployment", d), ["spec.selector: Required value"]);
        let mut e = deployment();
        e["spec"]["selector"] = json!({});
        assert!(msgs("ReplicaSet", e)[0].ends_with("empty selector is invalid for deployment"));
    }

    #[test]
    fn replicas_restart_policy_history_and_strategy() {
        let mut d = deployment();
        d["spec"]["replicas"] = json!(-1);
        d["spec"]["revisionHistoryLimit"] = json!(-2);
        d["spec"]["template"]["spec"]["restartPolicy"] = json!("Never");
        d["spec"]["strategy"] =
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}});
        assert_eq!(
            msgs("Deployment", d),
            [
                "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
                "spec.revisionHistoryLimit: Invalid value: -2: must be greater than or equal to 0",
                "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
                "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"0%\"}: may not be 0 when `maxSurge` is 0",
            ]
        );
    }

    #[test]
    fn pod_spec_is_validated_in_templates() {
        let mut d = deployment();
        d["spec"]["template"]["spec"]["containers"] = json!([]);
        assert_eq!(msgs("DaemonSet", d.clone()), ["spec.template.spec.containers: Required value"]);
        // Upstream leaves a StatefulSet's pod spec to pod creation.
        assert!(msgs("StatefulSet", d).is_empty());
    }

    #[test]
    fn statefulset_and_daemonset_defaults_validate() {
        let w = for_kind("apps", "StatefulSet", true).unwrap();
        let mut s = deployment();
        w.default(&mut s);
        assert_eq!(s["spec"]["podManagementPolicy"], "OrderedReady");
        assert_eq!(s["spec"]["updateStrategy"], json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}));
        assert_eq!(
            s["spec"]["persistentVolumeClaimRetentionPolicy"],
            json!({"whenDeleted": "Retain", "whenScaled": "Retain"})
        );
        assert!(msgs("StatefulSet", deployment()).is_empty());
        let d = for_kind("apps", "DaemonSet", true).unwrap();
        let mut ds = deployment();
        d.default(&mut ds);
        assert_eq!(
            ds["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
        );
        assert_eq!(ds["spec"]["revisionHistoryLimit"], 10);
        let mut bad = deployment();
        bad["spec"]["template"]["spec"]["activeDeadlineSeconds"] = json!(5);
        assert_eq!(
            msgs("DaemonSet", bad),
            ["spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in DaemonSet is not Supported"]
        );
    }

    #[test]
    fn statefulset_updates_only_change_some_fields() {
        let w = for_kind("apps", "StatefulSet", true).unwrap();
        let mut old = deployment();
        old["metadata"] = json!({"name": "s"});
        w.default(&mut old);
        let mut new = old.clone();
        new["spec"]["replicas"] = json!(5);
        assert!(w.validate_update(&new, &old).is_empty());
        new["spec"]["serviceName"] = json!("other");
        let causes = w.validate_update(&new, &old);
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].field, "spec");
        assert_eq!(causes[0].message, format!("Forbidden: {}", apps::STATEFULSET_UPDATE_FORBIDDEN_MSG));
    }

    #[test]
    fn jobs_need_on_failure_or_never() {
        let job = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}});
        assert_eq!(
            msgs("Job", job.clone()),
            ["spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""]
        );
        let mut ok = job;
        ok["spec"]["template"]["spec"]["restartPolicy"] = json!("Never");
        assert!(msgs("Job", ok).is_empty());
    }

    #[test]
    fn selector_is_immutable() {
        let w = for_kind("apps", "Deployment", true).unwrap();
        let mut old = deployment();
        w.default(&mut old);
        let mut new = old.clone();
        new["spec"]["selector"] = json!({"matchLabels": {"app": "x", "tier": "web"}});
        new["spec"]["template"]["metadata"]["labels"]["tier"] = json!("web");
        let causes = w.validate_update(&new, &old);
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].field, "spec.selector");
        assert!(causes[0].message.ends_with("field is immutable"));
    }
}
