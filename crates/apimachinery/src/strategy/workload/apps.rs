//! The StatefulSet and DaemonSet parts of upstream's
//! `pkg/apis/apps/validation` that Deployments and ReplicaSets do not share:
//! pod management and update strategies, PVC retention policy, ordinals,
//! the DaemonSet rolling update rules, and the StatefulSet update rule
//! (`updates to statefulset spec for fields other than … are forbidden`).

use serde_json::Value;

use super::int_or_percent;
use crate::validation::meta::validate_nonnegative;
use crate::validation::{go_quote, BadValue, ErrorList, FieldError, Path};

/// Upstream's message for a StatefulSet update touching other fields.
pub const STATEFULSET_UPDATE_FORBIDDEN_MSG: &str = "updates to statefulset spec for fields other than 'replicas', \
'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and \
'minReadySeconds' are forbidden";

/// The StatefulSet-only checks of `ValidateStatefulSetSpec` for `spec` at
/// `sp` (`spec`).
pub fn validate_statefulset_spec(spec: &Value, sp: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let pmp = sp.child("podManagementPolicy");
    match spec["podManagementPolicy"].as_str().unwrap_or("") {
        "" => errs.push(FieldError::required(&pmp, "")),
        "OrderedReady" | "Parallel" => {}
        other => errs.push(FieldError::invalid(&pmp, other, "must be 'OrderedReady' or 'Parallel'")),
    }
    let us = &spec["updateStrategy"];
    let up = sp.child("updateStrategy");
    let rolling = us.get("rollingUpdate").filter(|r| !r.is_null());
    match us["type"].as_str().unwrap_or("") {
        "" => errs.push(FieldError::required(&up, "")),
        "OnDelete" => {
            if let Some(r) = rolling {
                errs.push(FieldError::invalid(
                    &up.child("rollingUpdate"),
                    BadValue::Raw(go_rolling_update_statefulset(r)),
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        "RollingUpdate" => {
            if let Some(r) = rolling {
                errs.extend(validate_rolling_update_statefulset(r, &up.child("rollingUpdate")));
            }
        }
        other => errs.push(FieldError::invalid(
            &up,
            BadValue::Raw(format!(
                "apps.StatefulSetUpdateStrategy{{Type:{}, RollingUpdate:(*apps.RollingUpdateStatefulSetStrategy)(nil)}}",
                go_quote(other)
            )),
            "must be 'RollingUpdate' or 'OnDelete'",
        )),
    }
    if let Some(policy) = spec.get("persistentVolumeClaimRetentionPolicy").filter(|p| p.is_object()) {
        let pp = sp.child("persistentVolumeClaimRetentionPolicy");
        for f in ["whenDeleted", "whenScaled"] {
            let v = policy[f].as_str().unwrap_or("");
            if v != "Retain" && v != "Delete" {
                errs.push(FieldError::not_supported(&pp.child(f), v, &["Retain", "Delete"]));
            }
        }
    }
    if let Some(start) = spec.pointer("/ordinals/start").and_then(Value::as_i64) {
        errs.extend(validate_nonnegative(start, &sp.child("ordinals.start")));
    }
    errs
}

fn go_rolling_update_statefulset(r: &Value) -> String {
    // Upstream passes a pointer, which the error prints dereferenced.
    let partition = r["partition"].as_i64().unwrap_or(0);
    let max_unavailable = if r["maxUnavailable"].is_null() {
        "(*intstr.IntOrString)(nil)"
    } else {
        "(*intstr.IntOrString)(0xc000000000)"
    };
    format!("apps.RollingUpdateStatefulSetStrategy{{Partition:{partition}, MaxUnavailable:{max_unavailable}}}")
}

/// `validateRollingUpdateStatefulSet`: partition ≥ 0; `maxUnavailable`
/// a positive int or percentage, not 0, at most 100%.
fn validate_rolling_update_statefulset(r: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if let Some(p) = r["partition"].as_i64() {
        errs.extend(validate_nonnegative(p, &path.child("partition")));
    }
    if let Some(mu) = r.get("maxUnavailable").filter(|v| !v.is_null()) {
        let mp = path.child("maxUnavailable");
        errs.extend(validate_positive_int_or_percent(mu, &mp));
        let (value, _, go) = int_or_percent(mu);
        if value == Some(0) {
            errs.push(FieldError::invalid(&mp, BadValue::Raw(go), "cannot be 0"));
        }
        errs.extend(not_more_than_100_percent(mu, &mp));
    }
    errs
}

/// `ValidatePositiveIntOrPercent`: a valid percentage string, or an integer
/// ≥ 0.
pub fn validate_positive_int_or_percent(v: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    match v {
        Value::String(s) => {
            let valid = s.strip_suffix('%').is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            if !valid {
                errs.push(FieldError::invalid(path, BadValue::Raw(int_or_percent(v).2), PERCENT_MSG));
            }
        }
        other => errs.extend(validate_nonnegative(other.as_i64().unwrap_or(0), path)),
    }
    errs
}

/// Upstream's `IsValidPercent` message.
pub const PERCENT_MSG: &str = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";

/// `IsNotMoreThan100Percent`.
pub fn not_more_than_100_percent(v: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let (value, pct, go) = int_or_percent(v);
    if pct && value.is_some_and(|p| p > 100) {
        errs.push(FieldError::invalid(path, BadValue::Raw(go), "must not be greater than 100%"));
    }
    errs
}

/// The DaemonSet-only checks of `ValidateDaemonSetSpec`: the update
/// strategy (`ValidateDaemonSetUpdateStrategy`,
/// `ValidateRollingUpdateDaemonSet`) and `templateGeneration`.
pub fn validate_daemonset_spec(spec: &Value, sp: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if let Some(g) = spec.get("templateGeneration").and_then(Value::as_i64) {
        errs.extend(validate_nonnegative(g, &sp.child("templateGeneration")));
    }
    let us = &spec["updateStrategy"];
    let up = sp.child("updateStrategy");
    match us["type"].as_str().unwrap_or("") {
        "OnDelete" => {}
        "RollingUpdate" => {
            let Some(r) = us.get("rollingUpdate").filter(|r| !r.is_null()) else {
                errs.push(FieldError::required(&up.child("rollingUpdate"), ""));
                return errs;
            };
            let rp = up.child("rollingUpdate");
            let (mu, ms) = (&r["maxUnavailable"], &r["maxSurge"]);
            errs.extend(validate_positive_int_or_percent(mu, &rp.child("maxUnavailable")));
            errs.extend(validate_positive_int_or_percent(ms, &rp.child("maxSurge")));
            errs.extend(not_more_than_100_percent(mu, &rp.child("maxUnavailable")));
            errs.extend(not_more_than_100_percent(ms, &rp.child("maxSurge")));
            let has_unavailable = int_or_percent(mu).0 != Some(0);
            let has_surge = int_or_percent(ms).0 != Some(0);
            if has_unavailable && has_surge {
                errs.push(FieldError::invalid(
                    &rp.child("maxSurge"),
                    BadValue::Raw(int_or_percent(ms).2),
                    "may not be set when maxUnavailable is non-zero",
                ));
            } else if !has_unavailable && !has_surge {
                errs.push(FieldError::required(&rp.child("maxUnavailable"), "cannot be 0 when maxSurge is 0"));
            }
        }
        other => errs.push(FieldError::not_supported(
            &up,
            BadValue::Raw(format!(
                "apps.DaemonSetUpdateStrategy{{Type:{}, RollingUpdate:(*apps.RollingUpdateDaemonSet)(nil)}}",
                go_quote(other)
            )),
            &["RollingUpdate", "OnDelete"],
        )),
    }
    errs
}

/// The spec rule of `ValidateStatefulSetUpdate`: only replicas, ordinals,
/// template, updateStrategy, revisionHistoryLimit,
/// persistentVolumeClaimRetentionPolicy and minReadySeconds may change.
pub fn validate_statefulset_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    const MUTABLE: &[&str] = &[
        "replicas",
        "ordinals",
        "template",
        "updateStrategy",
        "revisionHistoryLimit",
        "persistentVolumeClaimRetentionPolicy",
        "minReadySeconds",
    ];
    let strip = |spec: &Value| -> Value {
        let mut s = spec.clone();
        if let Some(m) = s.as_object_mut() {
            for f in MUTABLE {
                m.remove(*f);
            }
            m.retain(|_, v| !v.is_null());
        }
        s
    };
    if strip(&new["spec"]) != strip(&old["spec"]) {
        errs.push(FieldError::forbidden(&Path::new("spec"), STATEFULSET_UPDATE_FORBIDDEN_MSG));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msgs(errs: ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn statefulset_policies() {
        let spec = json!({"podManagementPolicy": "Random",
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": -1, "maxUnavailable": 0}},
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Keep", "whenScaled": "Retain"},
            "ordinals": {"start": -1}});
        assert_eq!(
            msgs(validate_statefulset_spec(&spec, &Path::new("spec"))),
            [
                "spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'",
                "spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: must be greater than or equal to 0",
                "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}: cannot be 0",
                "spec.persistentVolumeClaimRetentionPolicy.whenDeleted: Unsupported value: \"Keep\": supported values: \"Retain\", \"Delete\"",
                "spec.ordinals.start: Invalid value: -1: must be greater than or equal to 0",
            ]
        );
        let bad_type = json!({"podManagementPolicy": "Parallel", "updateStrategy": {"type": "Sometimes"}});
        assert_eq!(
            msgs(validate_statefulset_spec(&bad_type, &Path::new("spec"))),
            ["spec.updateStrategy: Invalid value: apps.StatefulSetUpdateStrategy{Type:\"Sometimes\", RollingUpdate:(*apps.RollingUpdateStatefulSetStrategy)(nil)}: must be 'RollingUpdate' or 'OnDelete'"]
        );
    }

    #[test]
    fn daemonset_rolling_update() {
        let both = json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": "10%"}}});
        assert_eq!(
            msgs(validate_daemonset_spec(&both, &Path::new("spec"))),
            ["spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"10%\"}: may not be set when maxUnavailable is non-zero"]
        );
        let zero =
            json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}});
        assert_eq!(
            msgs(validate_daemonset_spec(&zero, &Path::new("spec"))),
            ["spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0"]
        );
        let unknown = json!({"updateStrategy": {"type": "Sometimes"}});
        assert_eq!(
            msgs(validate_daemonset_spec(&unknown, &Path::new("spec"))),
            ["spec.updateStrategy: Unsupported value: apps.DaemonSetUpdateStrategy{Type:\"Sometimes\", RollingUpdate:(*apps.RollingUpdateDaemonSet)(nil)}: supported values: \"RollingUpdate\", \"OnDelete\""]
        );
    }

    #[test]
    fn statefulset_update_rule() {
        let old = json!({"spec": {"replicas": 1, "serviceName": "s", "template": {"a": 1}}});
        let mut ok = old.clone();
        ok["spec"]["replicas"] = json!(3);
        ok["spec"]["template"] = json!({"a": 2});
        assert!(validate_statefulset_update(&ok, &old).is_empty());
        let mut bad = old.clone();
        bad["spec"]["serviceName"] = json!("t");
        assert_eq!(
            msgs(validate_statefulset_update(&bad, &old)),
            [format!("spec: Forbidden: {STATEFULSET_UPDATE_FORBIDDEN_MSG}")]
        );
    }
}
