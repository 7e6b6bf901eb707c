//! Jobs and CronJobs as upstream's `pkg/apis/batch/validation` and the job
//! registry strategy: the generated selector and template labels, the job
//! spec rules (counts, completion mode, pod failure and replacement
//! policies, restart policy), the immutable fields on update, and the
//! CronJob schedule, time zone, concurrency policy and job template.

use serde_json::{json, Map, Value};

use super::cron::{parse_standard, time_zone_exists};
use super::{go_label_selector, selector_matches, validate_template};
use crate::validation::meta::validate_nonnegative;
use crate::validation::podspec::go_string_map;
use crate::validation::{
    is_dns1123_label, validate_immutable_field, validate_label_selector, BadValue, ErrorList, FieldError,
    LabelSelectorValidationOptions, Path,
};

/// The label holding the job's uid on its pods (and its generated selector).
pub const CONTROLLER_UID_LABEL: &str = "batch.kubernetes.io/controller-uid";
/// The label holding the job's name on its pods.
pub const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";
/// The unprefixed forms upstream still sets for old clients.
pub const LEGACY_CONTROLLER_UID_LABEL: &str = "controller-uid";
/// The unprefixed job name label.
pub const LEGACY_JOB_NAME_LABEL: &str = "job-name";

fn manual_selector(spec: &Value) -> bool {
    spec.get("manualSelector") == Some(&Value::Bool(true))
}

/// The job registry's `generateSelector` (on create, unless
/// `manualSelector` is true): the template gets the four job labels unless
/// it sets them, and the selector matches the uid label.
pub fn generate_selector(job: &mut Value) {
    let name = job.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_string();
    let uid = job.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("").to_string();
    let Some(spec) = job.get_mut("spec").and_then(Value::as_object_mut) else { return };
    if manual_selector(&Value::Object(spec.clone())) {
        return;
    }
    let template = spec.entry("template").or_insert_with(|| json!({}));
    if !template.is_object() {
        return;
    }
    let metadata = template.as_object_mut().expect("an object").entry("metadata").or_insert_with(|| json!({}));
    if let Some(meta) = metadata.as_object_mut() {
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        if labels.is_null() {
            *labels = json!({});
        }
        if let Some(l) = labels.as_object_mut() {
            for (k, v) in [
                (LEGACY_JOB_NAME_LABEL, &name),
                (JOB_NAME_LABEL, &name),
                (LEGACY_CONTROLLER_UID_LABEL, &uid),
                (CONTROLLER_UID_LABEL, &uid),
            ] {
                l.entry(k).or_insert_with(|| json!(v));
            }
        }
    }
    let selector = spec.entry("selector").or_insert_with(|| json!({}));
    if selector.is_null() {
        *selector = json!({});
    }
    if let Some(sel) = selector.as_object_mut() {
        let ml = sel.entry("matchLabels").or_insert_with(|| json!({}));
        if ml.is_null() {
            *ml = json!({});
        }
        if let Some(m) = ml.as_object_mut() {
            m.entry(CONTROLLER_UID_LABEL).or_insert_with(|| json!(uid));
        }
    }
}

/// `SetDefaults_Job` beyond the counts: `manualSelector: false` and pod
/// condition patterns with `status: "True"`.
pub fn default_job_extras(spec: &mut Map<String, Value>) {
    if spec.get("manualSelector").is_none_or(Value::is_null) {
        spec.insert("manualSelector".into(), json!(false));
    }
    if let Some(rules) = spec.get_mut("podFailurePolicy").and_then(|p| p.get_mut("rules")).and_then(Value::as_array_mut)
    {
        for rule in rules.iter_mut() {
            for pattern in rule.get_mut("onPodConditions").and_then(Value::as_array_mut).into_iter().flatten() {
                if let Some(p) = pattern.as_object_mut() {
                    if p.get("status").is_none_or(Value::is_null) {
                        p.insert("status".into(), json!("True"));
                    }
                }
            }
        }
    }
}

/// `ValidateHasLabel`: `metadata.labels[key]` must be `expected`.
fn validate_has_label(template: &Value, key: &str, expected: &str, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let labels = template.pointer("/metadata/labels");
    let lp = path.child("labels").key(key);
    match labels.and_then(|l| l.get(key)).and_then(Value::as_str) {
        None => errs.push(FieldError::required(&lp, expected)),
        Some(v) if v != expected => {
            errs.push(FieldError::invalid(&lp, BadValue::Raw(go_string_map(labels)), &format!("must be '{expected}'")))
        }
        _ => {}
    }
    errs
}

/// `validateGeneratedSelector`: with a generated selector, the template
/// carries the job labels and the selector selects them.
fn validate_generated_selector(job: &Value, prefixed_labels: bool) -> ErrorList {
    let mut errs = ErrorList::new();
    let spec = &job["spec"];
    if manual_selector(spec) || spec["selector"].is_null() {
        return errs;
    }
    let uid = job.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("");
    let name = job.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    if uid.is_empty() {
        errs.push(FieldError::required(&Path::new("metadata").child("uid"), ""));
    }
    let tm = Path::new("spec").child("template").child("metadata");
    let template = &spec["template"];
    errs.extend(validate_has_label(template, LEGACY_CONTROLLER_UID_LABEL, uid, &tm));
    errs.extend(validate_has_label(template, LEGACY_JOB_NAME_LABEL, name, &tm));
    let mut expected = Map::new();
    if prefixed_labels {
        errs.extend(validate_has_label(template, CONTROLLER_UID_LABEL, uid, &tm));
        errs.extend(validate_has_label(template, JOB_NAME_LABEL, name, &tm));
        expected.insert(CONTROLLER_UID_LABEL.into(), json!(uid));
        expected.insert(JOB_NAME_LABEL.into(), json!(name));
    }
    expected.insert(LEGACY_CONTROLLER_UID_LABEL.into(), json!(uid));
    expected.insert(LEGACY_JOB_NAME_LABEL.into(), json!(name));
    if !selector_matches(&spec["selector"], Some(&Value::Object(expected))) {
        errs.push(FieldError::invalid(
            &Path::new("spec").child("selector"),
            BadValue::Raw(go_label_selector(&spec["selector"])),
            "`selector` not auto-generated",
        ));
    }
    errs
}

/// `ValidateJob` without the metadata (the store checks that): the
/// generated selector, `ValidateJobSpec`, and the Indexed pod hostname rule.
pub fn validate_job(job: &Value, prefixed_labels: bool) -> ErrorList {
    let mut errs = validate_generated_selector(job, prefixed_labels);
    let spec = &job["spec"];
    let sp = Path::new("spec");
    errs.extend(validate_job_spec(spec, &sp));
    let sel = &spec["selector"];
    if sel.is_null() {
        errs.push(FieldError::required(&sp.child("selector"), ""));
    } else {
        errs.extend(validate_label_selector(sel, LabelSelectorValidationOptions::default(), &sp.child("selector")));
    }
    let labels = spec.pointer("/template/metadata/labels");
    if !sel.is_null() && !selector_matches(sel, labels) {
        errs.push(FieldError::invalid(
            &sp.child("template").child("metadata").child("labels"),
            BadValue::Raw(go_string_map(labels)),
            "`selector` does not match template `labels`",
        ));
    }
    let completions = spec["completions"].as_i64().unwrap_or(0);
    if spec["completionMode"] == "Indexed" && completions > 0 {
        let name = job.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
        let hostname = format!("{name}-{}", completions - 1);
        if !is_dns1123_label(&hostname).is_empty() {
            errs.push(FieldError::invalid(
                &Path::new("metadata").child("name"),
                name,
                &format!("will not able to create pod with invalid DNS label: {hostname}"),
            ));
        }
    }
    errs
}

/// `validateJobSpec` for the job spec at `sp` (`spec` of a Job,
/// `spec.jobTemplate.spec` of a CronJob).
pub fn validate_job_spec(spec: &Value, sp: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let int = |f: &str| spec.get(f).and_then(Value::as_i64);
    for f in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ] {
        if let Some(v) = int(f) {
            errs.extend(validate_nonnegative(v, &sp.child(f)));
        }
    }
    if int("maxFailedIndexes").is_some() && int("backoffLimitPerIndex").is_none() {
        errs.push(FieldError::required(&sp.child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"));
    }
    let mode = spec["completionMode"].as_str();
    match mode {
        None | Some("NonIndexed") => {
            for f in ["backoffLimitPerIndex", "maxFailedIndexes"] {
                if let Some(v) = int(f) {
                    errs.push(FieldError::invalid(&sp.child(f), v, "requires indexed completion mode"));
                }
            }
        }
        Some("Indexed") => {
            if int("completions").is_none() {
                errs.push(FieldError::required(&sp.child("completions"), "when completion mode is Indexed"));
            }
            if let Some(p) = int("parallelism").filter(|p| *p > 100_000) {
                errs.push(FieldError::invalid(
                    &sp.child("parallelism"),
                    p,
                    "must be less than or equal to 100000 when completion mode is Indexed",
                ));
            }
            if let (Some(c), Some(m)) = (int("completions"), int("maxFailedIndexes")) {
                if m > c {
                    errs.push(FieldError::invalid(
                        &sp.child("maxFailedIndexes"),
                        m,
                        "must be less than or equal to completions",
                    ));
                }
            }
        }
        Some(other) => {
            errs.push(FieldError::not_supported(&sp.child("completionMode"), other, &["NonIndexed", "Indexed"]))
        }
    }
    let pfp = spec.get("podFailurePolicy").filter(|p| !p.is_null());
    if let Some(p) = pfp {
        errs.extend(validate_pod_failure_policy(p, spec, &sp.child("podFailurePolicy")));
    }
    if spec.get("successPolicy").is_some_and(|s| !s.is_null()) && mode != Some("Indexed") {
        errs.push(FieldError::invalid(
            &sp.child("successPolicy"),
            BadValue::Raw("batch.SuccessPolicy{…}".into()),
            "requires indexed completion mode",
        ));
    }
    if let Some(r) = spec["podReplacementPolicy"].as_str() {
        let rp = sp.child("podReplacementPolicy");
        if pfp.is_some() {
            if r != "Failed" {
                errs.push(FieldError::not_supported(&rp, r, &["Failed"]));
            }
        } else if r != "Failed" && r != "TerminatingOrFailed" {
            errs.push(FieldError::not_supported(&rp, r, &["Failed", "TerminatingOrFailed"]));
        }
    }
    let tp = sp.child("template");
    errs.extend(validate_template(&spec["template"], &tp));
    let rp = tp.child("spec").child("restartPolicy");
    match spec.pointer("/template/spec/restartPolicy").and_then(Value::as_str).unwrap_or("") {
        "" | "Always" => errs.push(FieldError::required(&rp, "valid values: \"OnFailure\", \"Never\"")),
        "Never" => {}
        "OnFailure" if pfp.is_some() => errs.push(FieldError::invalid(
            &rp,
            "OnFailure",
            "only \"Never\" is supported when podFailurePolicy is specified",
        )),
        "OnFailure" => {}
        other => errs.push(FieldError::not_supported(&rp, other, &["OnFailure", "Never"])),
    }
    errs
}

/// `validatePodFailurePolicy` (rules, actions, exit codes, pod conditions).
fn validate_pod_failure_policy(policy: &Value, spec: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let rules = policy["rules"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let rp = path.child("rules");
    if rules.len() > 20 {
        errs.push(FieldError::too_many(&rp, rules.len() as i64, 20));
    }
    let names: Vec<&str> = ["containers", "initContainers"]
        .iter()
        .filter_map(|l| spec.pointer(&format!("/template/spec/{l}")).and_then(Value::as_array))
        .flatten()
        .filter_map(|c| c["name"].as_str())
        .collect();
    const ACTIONS: &[&str] = &["Count", "FailIndex", "FailJob", "Ignore"];
    for (i, rule) in rules.iter().enumerate() {
        let p = rp.index(i);
        let ap = p.child("action");
        match rule["action"].as_str().unwrap_or("") {
            "" => {
                errs.push(FieldError::required(&ap, "valid values: [\"Count\" \"FailIndex\" \"FailJob\" \"Ignore\"]"))
            }
            "FailIndex" => {
                if spec["backoffLimitPerIndex"].is_null() {
                    errs.push(FieldError::invalid(&ap, "FailIndex", "requires the backoffLimitPerIndex to be set"));
                }
            }
            a if ACTIONS.contains(&a) => {}
            other => errs.push(FieldError::not_supported(&ap, other, ACTIONS)),
        }
        let exit = rule.get("onExitCodes").filter(|v| !v.is_null());
        let conditions = rule["onPodConditions"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        if let Some(e) = exit {
            let ep = p.child("onExitCodes");
            let op = e["operator"].as_str().unwrap_or("");
            match op {
                "" => errs.push(FieldError::required(&ep.child("operator"), "valid values: [\"In\" \"NotIn\"]")),
                "In" | "NotIn" => {}
                other => errs.push(FieldError::not_supported(&ep.child("operator"), other, &["In", "NotIn"])),
            }
            if let Some(c) = e["containerName"].as_str() {
                if !names.contains(&c) {
                    errs.push(FieldError::invalid(
                        &ep.child("containerName"),
                        c,
                        "must be one of the container or initContainer names in the pod template",
                    ));
                }
            }
            let values: Vec<i64> = e["values"].as_array().into_iter().flatten().filter_map(Value::as_i64).collect();
            let vp = ep.child("values");
            if values.is_empty() {
                errs.push(FieldError::invalid(
                    &vp,
                    BadValue::Raw("[]int32(nil)".into()),
                    "at least one value is required",
                ));
            }
            let mut seen = std::collections::BTreeSet::new();
            for (j, v) in values.iter().enumerate() {
                if op == "In" && *v == 0 {
                    errs.push(FieldError::invalid(&vp.index(j), *v, "must not be 0 for the In operator"));
                }
                if !seen.insert(*v) {
                    errs.push(FieldError::duplicate(&vp.index(j), *v));
                }
            }
            if values.windows(2).any(|w| w[0] > w[1]) {
                let list: Vec<String> = values.iter().map(i64::to_string).collect();
                errs.push(FieldError::invalid(
                    &vp,
                    BadValue::Raw(format!("[]int32{{{}}}", list.join(", "))),
                    "must be ordered",
                ));
            }
        }
        for (j, c) in conditions.iter().enumerate() {
            let cp = p.child("onPodConditions").index(j);
            match c["status"].as_str().unwrap_or("") {
                "" => errs
                    .push(FieldError::required(&cp.child("status"), "valid values: [\"False\" \"True\" \"Unknown\"]")),
                "True" | "False" | "Unknown" => {}
                other => {
                    errs.push(FieldError::not_supported(&cp.child("status"), other, &["False", "True", "Unknown"]))
                }
            }
        }
        if exit.is_some() && !conditions.is_empty() {
            errs.push(FieldError::invalid(
                &p,
                BadValue::Omitted,
                "specifying both OnExitCodes and OnPodConditions is not supported",
            ));
        }
        if exit.is_none() && conditions.is_empty() {
            errs.push(FieldError::invalid(
                &p,
                BadValue::Omitted,
                "specifying one of OnExitCodes and OnPodConditions is required",
            ));
        }
    }
    errs
}

/// `ValidateJobSpecUpdate` (beyond re-validating the spec): completions,
/// selector, template and the policies may not change; a suspended job that
/// never started may change its scheduling directives, and an Indexed job
/// may change completions together with parallelism.
pub fn validate_job_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let (ns, os) = (&new["spec"], &old["spec"]);
    let sp = Path::new("spec");
    let indexed = ns["completionMode"] == "Indexed";
    if !indexed || ns["completions"].is_null() {
        errs.extend(validate_immutable_field(ns.get("completions"), os.get("completions"), &sp.child("completions")));
    } else if ns["completions"] != os["completions"] && ns["completions"] != ns["parallelism"] {
        errs.push(FieldError::invalid(
            &sp.child("completions"),
            ns["completions"].as_i64().unwrap_or(0),
            "can only be modified in tandem with spec.parallelism",
        ));
    }
    errs.extend(validate_immutable_field(ns.get("selector"), os.get("selector"), &sp.child("selector")));
    let mutable_scheduling =
        os["suspend"] == Value::Bool(true) && old.pointer("/status/startTime").is_none_or(Value::is_null);
    let mut old_template = os["template"].clone();
    if mutable_scheduling && old_template.is_object() {
        let nt = &ns["template"];
        for f in ["nodeSelector", "tolerations", "schedulingGates"] {
            copy_or_remove(&mut old_template["spec"], &nt["spec"], f);
        }
        for f in ["annotations", "labels"] {
            copy_or_remove(&mut old_template["metadata"], &nt["metadata"], f);
        }
        let new_node_affinity = nt.pointer("/spec/affinity/nodeAffinity").cloned();
        if let Some(spec) = old_template["spec"].as_object_mut() {
            match (nt.pointer("/spec/affinity").filter(|a| !a.is_null()), spec.get_mut("affinity")) {
                (None, Some(a)) => {
                    if let Some(m) = a.as_object_mut() {
                        m.remove("nodeAffinity");
                        if m.values().all(Value::is_null) {
                            spec.remove("affinity");
                        }
                    }
                }
                (Some(_), None) => {
                    spec.insert("affinity".into(), json!({ "nodeAffinity": new_node_affinity }));
                }
                (Some(_), Some(a)) => a["nodeAffinity"] = new_node_affinity.unwrap_or(Value::Null),
                (None, None) => {}
            }
        }
    }
    let norm = |v: &Value| strip_nulls(v.clone());
    if norm(&ns["template"]) != norm(&old_template) {
        errs.extend(validate_immutable_field(ns.get("template"), Some(&old_template), &sp.child("template")));
    }
    for f in ["completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy", "successPolicy"] {
        errs.extend(validate_immutable_field(ns.get(f), os.get(f), &sp.child(f)));
    }
    errs
}

fn copy_or_remove(target: &mut Value, source: &Value, field: &str) {
    if !target.is_object() {
        *target = json!({});
    }
    let m = target.as_object_mut().expect("an object");
    match source.get(field).filter(|v| !v.is_null()) {
        Some(v) => {
            m.insert(field.into(), v.clone());
        }
        None => {
            m.remove(field);
        }
    }
}

fn strip_nulls(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            Value::Object(m.into_iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k, strip_nulls(v))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(strip_nulls).collect()),
        other => other,
    }
}

/// `validateCronJobSpec` (with `old` on update: an existing `TZ=` schedule
/// may stay, and the time zone is only checked when it changes), plus the
/// 52-character name limit on create.
pub fn validate_cronjob(obj: &Value, old: Option<&Value>) -> ErrorList {
    let mut errs = ErrorList::new();
    let spec = &obj["spec"];
    let sp = Path::new("spec");
    let schedule = spec["schedule"].as_str().unwrap_or("");
    let time_zone = spec.get("timeZone").and_then(Value::as_str);
    let schp = sp.child("schedule");
    if schedule.is_empty() {
        errs.push(FieldError::required(&schp, ""));
    } else {
        if let Err(e) = parse_standard(schedule) {
            errs.push(FieldError::invalid(&schp, schedule, &e));
        }
        let allow_tz =
            old.and_then(|o| o.pointer("/spec/schedule")).and_then(Value::as_str).is_some_and(|s| s.contains("TZ"));
        if allow_tz && schedule.contains("TZ") && time_zone.is_some() {
            errs.push(FieldError::invalid(
                &schp,
                schedule,
                "cannot use both timeZone field and TZ or CRON_TZ in schedule",
            ));
        } else if !allow_tz && schedule.contains("TZ") {
            errs.push(FieldError::invalid(
                &schp,
                schedule,
                "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
            ));
        }
    }
    if let Some(d) = spec["startingDeadlineSeconds"].as_i64() {
        errs.extend(validate_nonnegative(d, &sp.child("startingDeadlineSeconds")));
    }
    let old_tz = old.and_then(|o| o.pointer("/spec/timeZone")).and_then(Value::as_str);
    if old.is_none() || old_tz != time_zone {
        errs.extend(validate_time_zone(time_zone, &sp.child("timeZone")));
    }
    let cp = sp.child("concurrencyPolicy");
    match spec["concurrencyPolicy"].as_str().unwrap_or("") {
        "Allow" | "Forbid" | "Replace" => {}
        "" => errs.push(FieldError::required(&cp, "")),
        other => errs.push(FieldError::not_supported(&cp, other, &["Allow", "Forbid", "Replace"])),
    }
    let jp = sp.child("jobTemplate");
    let jspec = &spec["jobTemplate"]["spec"];
    errs.extend(validate_job_spec(jspec, &jp.child("spec")));
    if !jspec["selector"].is_null() {
        errs.push(FieldError::invalid(
            &jp.child("spec").child("selector"),
            BadValue::Raw(go_label_selector(&jspec["selector"])),
            "`selector` will be auto-generated",
        ));
    }
    if manual_selector(jspec) {
        errs.push(FieldError::not_supported(&jp.child("spec").child("manualSelector"), true, &["nil", "false"]));
    }
    for f in ["successfulJobsHistoryLimit", "failedJobsHistoryLimit"] {
        if let Some(v) = spec[f].as_i64() {
            errs.extend(validate_nonnegative(v, &sp.child(f)));
        }
    }
    if old.is_none() {
        let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
        if name.len() > 52 {
            errs.push(FieldError::invalid(
                &Path::new("metadata").child("name"),
                name,
                "must be no more than 52 characters",
            ));
        }
    }
    errs
}

/// `validateTimeZone`: non-empty, IANA naming characters, not `Local`, and
/// known to the time zone database.
fn validate_time_zone(tz: Option<&str>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(tz) = tz else { return errs };
    if tz.is_empty() {
        errs.push(FieldError::invalid(path, tz, "timeZone must be nil or non-empty string"));
        return errs;
    }
    let part_ok = |p: &str| {
        p != "."
            && p != ".."
            && !p.starts_with('-')
            && (1..=14).contains(&p.len())
            && p.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'+'))
    };
    if !tz.split('/').all(part_ok) {
        errs.push(FieldError::invalid(path, tz, &format!("unknown time zone {tz}")));
        return errs;
    }
    if tz.eq_ignore_ascii_case("Local") {
        errs.push(FieldError::invalid(
            path,
            tz,
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        ));
    }
    if !tz.eq_ignore_ascii_case("Local") && !time_zone_exists(tz) {
        errs.push(FieldError::invalid(path, tz, &format!("unknown time zone {tz}")));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs(errs: ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn job() -> Value {
        json!({"metadata": {"name": "pi", "uid": "u1"},
            "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 6, "completionMode": "NonIndexed",
                "template": {"spec": {"restartPolicy": "Never", "dnsPolicy": "ClusterFirst",
                    "containers": [{"name": "c", "image": "busybox", "terminationMessagePolicy": "File", "imagePullPolicy": "Always"}]}}}})
    }

    #[test]
    fn selector_generation() {
        let mut j = job();
        generate_selector(&mut j);
        assert_eq!(
            j["spec"]["template"]["metadata"]["labels"],
            json!({"batch.kubernetes.io/controller-uid": "u1", "batch.kubernetes.io/job-name": "pi",
                   "controller-uid": "u1", "job-name": "pi"})
        );
        assert_eq!(j["spec"]["selector"], json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}}));
        assert!(msgs(validate_job(&j, true)).is_empty(), "{:?}", msgs(validate_job(&j, true)));

        let mut manual = job();
        manual["spec"]["manualSelector"] = json!(true);
        generate_selector(&mut manual);
        assert_eq!(msgs(validate_job(&manual, true)), ["spec.selector: Required value"]);
    }

    #[test]
    fn wrong_generated_labels() {
        let mut j = job();
        j["spec"]["template"]["metadata"] = json!({"labels": {"job-name": "other"}});
        generate_selector(&mut j);
        let m = msgs(validate_job(&j, true));
        assert_eq!(m[0], "spec.template.metadata.labels[job-name]: Invalid value: map[string]string{\"batch.kubernetes.io/controller-uid\":\"u1\", \"batch.kubernetes.io/job-name\":\"pi\", \"controller-uid\":\"u1\", \"job-name\":\"other\"}: must be 'pi'");
        assert_eq!(m.len(), 1, "{m:?}");
    }

    #[test]
    fn job_spec_rules() {
        let mut j = job();
        generate_selector(&mut j);
        j["spec"]["completionMode"] = json!("Random");
        j["spec"]["activeDeadlineSeconds"] = json!(-1);
        j["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
        assert_eq!(
            msgs(validate_job(&j, true)),
            [
                "spec.activeDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
                "spec.completionMode: Unsupported value: \"Random\": supported values: \"NonIndexed\", \"Indexed\"",
                "spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
            ]
        );
        let mut idx = job();
        generate_selector(&mut idx);
        idx["spec"]["completionMode"] = json!("Indexed");
        idx["spec"].as_object_mut().unwrap().remove("completions");
        assert_eq!(
            msgs(validate_job(&idx, true)),
            ["spec.completions: Required value: when completion mode is Indexed"]
        );
    }

    #[test]
    fn pod_failure_policy() {
        let mut j = job();
        generate_selector(&mut j);
        j["spec"]["podFailurePolicy"] = json!({"rules": [
            {"action": "Explode", "onExitCodes": {"operator": "In", "values": [2, 0, 1]}},
            {"action": "Ignore"}]});
        assert_eq!(
            msgs(validate_job(&j, true)),
            [
                "spec.podFailurePolicy.rules[0].action: Unsupported value: \"Explode\": supported values: \"Count\", \"FailIndex\", \"FailJob\", \"Ignore\"",
                "spec.podFailurePolicy.rules[0].onExitCodes.values[1]: Invalid value: 0: must not be 0 for the In operator",
                "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: []int32{2, 0, 1}: must be ordered",
                "spec.podFailurePolicy.rules[1]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required",
            ]
        );
    }

    #[test]
    fn job_updates() {
        let mut old = job();
        generate_selector(&mut old);
        let mut new = old.clone();
        new["spec"]["completions"] = json!(3);
        new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("alpine");
        let m = msgs(validate_job_update(&new, &old));
        assert_eq!(m.len(), 2, "{m:?}");
        assert_eq!(m[0], "spec.completions: Invalid value: 3: field is immutable");
        assert!(m[1].starts_with("spec.template: Invalid value: ") && m[1].ends_with(": field is immutable"));

        // A suspended job that never ran may change its node selector.
        old["spec"]["suspend"] = json!(true);
        let mut sched = old.clone();
        sched["spec"]["template"]["spec"]["nodeSelector"] = json!({"zone": "a"});
        assert!(validate_job_update(&sched, &old).is_empty());
    }

    fn cronjob(schedule: &str) -> Value {
        let mut j = job();
        j["spec"].as_object_mut().unwrap().remove("completionMode");
        json!({"metadata": {"name": "cj"}, "spec": {"schedule": schedule, "concurrencyPolicy": "Allow",
            "jobTemplate": {"spec": j["spec"].clone()}}})
    }

    #[test]
    fn cronjob_schedule_and_time_zone() {
        assert!(msgs(validate_cronjob(&cronjob("*/1 * * * *"), None)).is_empty());
        assert_eq!(
            msgs(validate_cronjob(&cronjob("error"), None)),
            ["spec.schedule: Invalid value: \"error\": expected exactly 5 fields, found 1: [error]"]
        );
        assert_eq!(
            msgs(validate_cronjob(&cronjob("TZ=UTC 0 * * * *"), None)),
            ["spec.schedule: Invalid value: \"TZ=UTC 0 * * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead"]
        );
        let mut tz = cronjob("0 * * * *");
        tz["spec"]["timeZone"] = json!("Mars/Olympus");
        tz["spec"]["concurrencyPolicy"] = json!("Sometimes");
        assert_eq!(
            msgs(validate_cronjob(&tz, None)),
            [
                "spec.timeZone: Invalid value: \"Mars/Olympus\": unknown time zone Mars/Olympus",
                "spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\"",
            ]
        );
        tz["spec"]["timeZone"] = json!("local");
        tz["spec"]["concurrencyPolicy"] = json!("Forbid");
        assert_eq!(
            msgs(validate_cronjob(&tz, None)),
            ["spec.timeZone: Invalid value: \"local\": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"]
        );
        tz["spec"]["timeZone"] = json!("Europe/Paris");
        assert!(msgs(validate_cronjob(&tz, None)).is_empty());
    }

    #[test]
    fn cronjob_job_template() {
        let mut c = cronjob("@daily");
        c["spec"]["jobTemplate"]["spec"]["selector"] = json!({"matchLabels": {"a": "b"}});
        c["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
        c["spec"]["successfulJobsHistoryLimit"] = json!(-1);
        c["metadata"]["name"] = json!("x".repeat(53));
        let m = msgs(validate_cronjob(&c, None));
        assert_eq!(
            m[0],
            "spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""
        );
        assert!(
            m[1].starts_with("spec.jobTemplate.spec.selector: Invalid value: ")
                && m[1].ends_with("`selector` will be auto-generated")
        );
        assert_eq!(m[2], "spec.successfulJobsHistoryLimit: Invalid value: -1: must be greater than or equal to 0");
        assert!(
            m[3].starts_with("metadata.name: Invalid value: \"xxx")
                && m[3].ends_with("must be no more than 52 characters")
        );
    }
}
