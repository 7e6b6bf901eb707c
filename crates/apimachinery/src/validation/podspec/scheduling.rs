//! Scheduling fields of a pod spec, as upstream's `validateAffinity`,
//! `ValidateTolerations`, `validateTopologySpreadConstraints` and
//! `validatePreemptionPolicy`, with their field paths and messages.

use serde_json::Value;

use super::{list, str_of};
use crate::validation::field::{go_quote, BadValue, ErrorList, FieldError, Path};
use crate::validation::meta::{validate_label_name, validate_label_selector, LabelSelectorValidationOptions};
use crate::validation::names::is_valid_label_value;

/// Upstream's `isNotPositiveErrorMsg`.
const NOT_POSITIVE_MSG: &str = "must be greater than zero";
const WEIGHT_MSG: &str = "must be in the range 1-100";

/// `validateAffinity` for `spec.affinity` at `path`.
pub fn validate_affinity(affinity: Option<&Value>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(a) = affinity.filter(|a| a.is_object()) else { return errs };
    if let Some(na) = a.get("nodeAffinity").filter(|v| v.is_object()) {
        let np = path.child("nodeAffinity");
        if let Some(req) = na.get("requiredDuringSchedulingIgnoredDuringExecution").filter(|v| v.is_object()) {
            let tp = np.child("requiredDuringSchedulingIgnoredDuringExecution").child("nodeSelectorTerms");
            let terms = list(req, "nodeSelectorTerms");
            if terms.is_empty() {
                errs.push(FieldError::required(&tp, "must have at least one node selector term"));
            }
            for (i, t) in terms.iter().enumerate() {
                errs.extend(validate_node_selector_term(t, true, &tp.index(i)));
            }
        }
        let pp = np.child("preferredDuringSchedulingIgnoredDuringExecution");
        for (i, t) in list(na, "preferredDuringSchedulingIgnoredDuringExecution").iter().enumerate() {
            errs.extend(validate_weight(t, &pp.index(i)));
            errs.extend(validate_node_selector_term(&t["preference"], false, &pp.index(i).child("preference")));
        }
    }
    for kind in ["podAffinity", "podAntiAffinity"] {
        let Some(pa) = a.get(kind).filter(|v| v.is_object()) else { continue };
        let kp = path.child(kind);
        let rp = kp.child("requiredDuringSchedulingIgnoredDuringExecution");
        for (i, t) in list(pa, "requiredDuringSchedulingIgnoredDuringExecution").iter().enumerate() {
            errs.extend(validate_pod_affinity_term(t, &rp.index(i)));
        }
        let wp = kp.child("preferredDuringSchedulingIgnoredDuringExecution");
        for (i, t) in list(pa, "preferredDuringSchedulingIgnoredDuringExecution").iter().enumerate() {
            errs.extend(validate_weight(t, &wp.index(i)));
            errs.extend(validate_pod_affinity_term(&t["podAffinityTerm"], &wp.index(i).child("podAffinityTerm")));
        }
    }
    errs
}

fn validate_weight(term: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let w = term.get("weight").and_then(Value::as_i64).unwrap_or(0);
    if !(1..=100).contains(&w) {
        errs.push(FieldError::invalid(&path.child("weight"), w, WEIGHT_MSG));
    }
    errs
}

/// `ValidateNodeSelectorTerm`: each `matchExpressions` requirement
/// (`allow_invalid_values`: label-value checks skipped, as for required node
/// affinity) and each `matchFields` requirement.
fn validate_node_selector_term(term: &Value, allow_invalid_values: bool, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for (j, r) in list(term, "matchExpressions").iter().enumerate() {
        errs.extend(validate_node_selector_requirement(
            r,
            allow_invalid_values,
            &path.child("matchExpressions").index(j),
        ));
    }
    for (j, r) in list(term, "matchFields").iter().enumerate() {
        let rp = path.child("matchFields").index(j);
        let values = list(r, "values");
        match str_of(r, "operator") {
            "In" | "NotIn" => {
                if values.len() != 1 {
                    errs.push(FieldError::required(
                        &rp.child("values"),
                        "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                    ));
                }
            }
            other => errs.push(FieldError::invalid(&rp.child("operator"), other, "not a valid selector operator")),
        }
        let key = str_of(r, "key");
        if key != "metadata.name" {
            errs.push(FieldError::not_supported(&rp.child("key"), key, &["metadata.name"]));
        }
    }
    errs
}

/// `ValidateNodeSelectorRequirement`.
fn validate_node_selector_requirement(r: &Value, allow_invalid_values: bool, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let values = list(r, "values");
    let vp = path.child("values");
    match str_of(r, "operator") {
        "In" | "NotIn" => {
            if values.is_empty() {
                errs.push(FieldError::required(&vp, "must be specified when `operator` is 'In' or 'NotIn'"));
            }
        }
        "Exists" | "DoesNotExist" => {
            if !values.is_empty() {
                errs.push(FieldError::forbidden(
                    &vp,
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                ));
            }
        }
        "Gt" | "Lt" => {
            if values.len() != 1 {
                errs.push(FieldError::required(&vp, "must be specified single value when `operator` is 'Lt' or 'Gt'"));
            }
        }
        other => errs.push(FieldError::invalid(&path.child("operator"), other, "not a valid selector operator")),
    }
    errs.extend(validate_label_name(str_of(r, "key"), &path.child("key")));
    if !allow_invalid_values {
        for (i, v) in values.iter().enumerate() {
            let v = v.as_str().unwrap_or("");
            for m in is_valid_label_value(v) {
                errs.push(FieldError::invalid(&vp.index(i), v, &m));
            }
        }
    }
    errs
}

/// `validatePodAffinityTerm`: the label selector, namespaces, and the
/// required `topologyKey`.
fn validate_pod_affinity_term(term: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let opts = LabelSelectorValidationOptions::default();
    if let Some(sel) = term.get("labelSelector").filter(|s| !s.is_null()) {
        errs.extend(validate_label_selector(sel, opts, &path.child("labelSelector")));
    }
    if let Some(sel) = term.get("namespaceSelector").filter(|s| !s.is_null()) {
        errs.extend(validate_label_selector(sel, opts, &path.child("namespaceSelector")));
    }
    for ns in list(term, "namespaces").iter().filter_map(Value::as_str) {
        for m in crate::validation::is_dns1123_label(ns) {
            errs.push(FieldError::invalid(&path.child("namespace"), ns, &m));
        }
    }
    let key = str_of(term, "topologyKey");
    if key.is_empty() {
        errs.push(FieldError::required(&path.child("topologyKey"), "can not be empty"));
    }
    errs.extend(validate_label_name(key, &path.child("topologyKey")));
    errs
}

/// Go's `%#v` of a `core.Toleration` (a set `tolerationSeconds` shows as a
/// pointer, whose address upstream prints and we cannot).
fn go_toleration(t: &Value) -> String {
    let secs = match t.get("tolerationSeconds").and_then(Value::as_i64) {
        None => "(*int64)(nil)".to_string(),
        Some(_) => "(*int64)(0xc000000000)".to_string(),
    };
    format!(
        "core.Toleration{{Key:{}, Operator:{}, Value:{}, Effect:{}, TolerationSeconds:{secs}}}",
        go_quote(str_of(t, "key")),
        go_quote(str_of(t, "operator")),
        go_quote(str_of(t, "value")),
        go_quote(str_of(t, "effect")),
    )
}

/// `ValidateTolerations` for `spec.tolerations` at `path`.
pub fn validate_tolerations(tolerations: &[Value], path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for (i, t) in tolerations.iter().enumerate() {
        let ip = path.index(i);
        let key = str_of(t, "key");
        let op = str_of(t, "operator");
        let effect = str_of(t, "effect");
        if !key.is_empty() {
            errs.extend(validate_label_name(key, &ip.child("key")));
        }
        if key.is_empty() && op != "Exists" {
            errs.push(FieldError::invalid(
                &ip.child("operator"),
                op,
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        if t.get("tolerationSeconds").is_some_and(|s| !s.is_null()) && effect != "NoExecute" {
            errs.push(FieldError::invalid(
                &ip.child("effect"),
                effect,
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        match op {
            "Equal" | "" => {
                let value = str_of(t, "value");
                let msgs = is_valid_label_value(value);
                if !msgs.is_empty() {
                    errs.push(FieldError::invalid(&ip.child("operator"), value, &msgs.join(";")));
                }
            }
            "Exists" => {
                if !str_of(t, "value").is_empty() {
                    errs.push(FieldError::invalid(
                        &ip.child("operator"),
                        BadValue::Raw(go_toleration(t)),
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            other => errs.push(FieldError::not_supported(&ip.child("operator"), other, &["Equal", "Exists"])),
        }
        if !effect.is_empty() && !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
            errs.push(FieldError::not_supported(
                &ip.child("effect"),
                effect,
                &["NoSchedule", "PreferNoSchedule", "NoExecute"],
            ));
        }
    }
    errs
}

/// `validateTopologySpreadConstraints` for `spec.topologySpreadConstraints`.
pub fn validate_topology_spread(constraints: &[Value], path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for (i, c) in constraints.iter().enumerate() {
        let ip = path.index(i);
        let skew = c.get("maxSkew").and_then(Value::as_i64).unwrap_or(0);
        if skew <= 0 {
            errs.push(FieldError::invalid(&ip.child("maxSkew"), skew, NOT_POSITIVE_MSG));
        }
        let key = str_of(c, "topologyKey");
        if key.is_empty() {
            errs.push(FieldError::required(&ip.child("topologyKey"), "can not be empty"));
        }
        let action = str_of(c, "whenUnsatisfiable");
        if action != "DoNotSchedule" && action != "ScheduleAnyway" {
            errs.push(FieldError::not_supported(
                &ip.child("whenUnsatisfiable"),
                action,
                &["DoNotSchedule", "ScheduleAnyway"],
            ));
        }
        let repeated = constraints[i + 1..]
            .iter()
            .any(|o| str_of(o, "topologyKey") == key && str_of(o, "whenUnsatisfiable") == action);
        if repeated {
            errs.push(FieldError::duplicate(
                &ip.child("{topologyKey, whenUnsatisfiable}"),
                format!("{{{key}, {action}}}"),
            ));
        }
        if let Some(min) = c.get("minDomains").and_then(Value::as_i64) {
            if min <= 0 {
                errs.push(FieldError::invalid(&ip.child("minDomains"), min, NOT_POSITIVE_MSG));
            }
            if action != "DoNotSchedule" {
                errs.push(FieldError::invalid(
                    &ip.child("minDomains"),
                    min,
                    &format!("can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"),
                ));
            }
        }
        for f in ["nodeAffinityPolicy", "nodeTaintsPolicy"] {
            if let Some(p) = c.get(f).and_then(Value::as_str) {
                if p != "Honor" && p != "Ignore" {
                    errs.push(FieldError::not_supported(&ip.child(f), p, &["Honor", "Ignore"]));
                }
            }
        }
        if let Some(sel) = c.get("labelSelector").filter(|s| !s.is_null()) {
            let opts = LabelSelectorValidationOptions::default();
            errs.extend(validate_label_selector(sel, opts, &ip.child("labelSelector")));
        }
    }
    errs
}

/// `validatePreemptionPolicy`.
pub fn validate_preemption_policy(policy: Option<&Value>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    match policy.and_then(Value::as_str) {
        None | Some("PreemptLowerPriority") | Some("Never") => {}
        Some("") => errs.push(FieldError::required(path, "")),
        Some(other) => errs.push(FieldError::not_supported(path, other, &["PreemptLowerPriority", "Never"])),
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
    fn node_and_pod_affinity() {
        let a = json!({
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "Exists", "values": ["a"]},
                                          {"key": "size", "operator": "Gt", "values": []},
                                          {"key": "k", "operator": "Near"}]}]},
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "preference": {}}]},
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {"matchLabels": {"a": "b"}}}]}
        });
        let a_path = Path::new("spec").child("affinity");
        let m = msgs(validate_affinity(Some(&a), &a_path));
        let na = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions";
        assert_eq!(
            m[0],
            format!("{na}[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
        );
        assert_eq!(
            m[1],
            format!("{na}[1].values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'")
        );
        assert_eq!(m[2], format!("{na}[2].operator: Invalid value: \"Near\": not a valid selector operator"));
        assert_eq!(
            m[3],
            "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100"
        );
        assert_eq!(
            m[4],
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty"
        );
        let empty =
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}});
        assert_eq!(
            msgs(validate_affinity(Some(&empty), &a_path)),
            ["spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value: must have at least one node selector term"]
        );
    }

    #[test]
    fn tolerations() {
        let t = json!([
            {"key": "k", "operator": "Exists", "value": "v"},
            {"operator": "Equal", "value": "v"},
            {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule", "tolerationSeconds": 5},
            {"key": "k", "operator": "Near", "effect": "Sometimes"},
        ]);
        assert_eq!(
            msgs(validate_tolerations(t.as_array().unwrap(), &Path::new("spec").child("tolerations"))),
            [
                "spec.tolerations[0].operator: Invalid value: core.Toleration{Key:\"k\", Operator:\"Exists\", Value:\"v\", Effect:\"\", TolerationSeconds:(*int64)(nil)}: value must be empty when `operator` is 'Exists'",
                "spec.tolerations[1].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
                "spec.tolerations[2].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set",
                "spec.tolerations[3].operator: Unsupported value: \"Near\": supported values: \"Equal\", \"Exists\"",
                "spec.tolerations[3].effect: Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
            ]
        );
    }

    #[test]
    fn topology_spread_and_preemption() {
        let c = json!([
            {"maxSkew": 0, "topologyKey": "", "whenUnsatisfiable": "Maybe"},
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2},
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"},
        ]);
        assert_eq!(
            msgs(validate_topology_spread(c.as_array().unwrap(), &Path::new("t"))),
            [
                "t[0].maxSkew: Invalid value: 0: must be greater than zero",
                "t[0].topologyKey: Required value: can not be empty",
                "t[0].whenUnsatisfiable: Unsupported value: \"Maybe\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\"",
                "t[1].{topologyKey, whenUnsatisfiable}: Duplicate value: \"{zone, ScheduleAnyway}\"",
                "t[1].minDomains: Invalid value: 2: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway",
            ]
        );
        assert_eq!(
            msgs(validate_preemption_policy(Some(&json!("Sometimes")), &Path::new("p"))),
            ["p: Unsupported value: \"Sometimes\": supported values: \"PreemptLowerPriority\", \"Never\""]
        );
    }
}
