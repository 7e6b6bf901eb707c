//! PodDisruptionBudgets (`policy/v1`): upstream's registry strategy (a
//! zero status on create) and `ValidatePodDisruptionBudget`
//! (`pkg/apis/policy/validation`): `minAvailable` and `maxUnavailable` are
//! mutually exclusive, each a non-negative integer or a percentage of at
//! most 100 %, the selector valid, the eviction policy a known one. The spec
//! may change on update (since Kubernetes 1.15).

use serde_json::{json, Value};

use super::workload::apps::{not_more_than_100_percent, validate_positive_int_or_percent};
use super::{generic, Generic, Strategy};
use crate::errors::StatusCause;
use crate::validation::meta::LabelSelectorValidationOptions;
use crate::validation::{validate_label_selector, BadValue, ErrorList, FieldError, Path};

/// The `unhealthyPodEvictionPolicy` values (sorted, as upstream lists them).
pub const UNHEALTHY_POD_EVICTION_POLICIES: [&str; 2] = ["AlwaysAllow", "IfHealthyBudget"];
/// Placeholder for a pointer address in a `%#v` rendering.
const POINTER: &str = "0xc000000000";

/// The strategy of PodDisruptionBudgets.
#[derive(Clone, Debug)]
pub struct PodDisruptionBudget {
    flags: Generic,
}

impl PodDisruptionBudget {
    /// The strategy with upstream's flags.
    #[allow(clippy::new_without_default)]
    pub fn new() -> PodDisruptionBudget {
        PodDisruptionBudget { flags: generic::for_builtin("policy", "PodDisruptionBudget", true) }
    }
}

fn set(spec: &Value, key: &str) -> bool {
    spec.get(key).is_some_and(|v| !v.is_null())
}

/// Go's `%#v` of the internal spec (pointers print as a placeholder address).
fn go_spec(spec: &Value) -> BadValue {
    let ptr = |ty: &str, key: &str| format!("(*{ty})({})", if set(spec, key) { POINTER } else { "nil" });
    BadValue::Raw(format!(
        "policy.PodDisruptionBudgetSpec{{MinAvailable:{}, Selector:{}, MaxUnavailable:{}, UnhealthyPodEvictionPolicy:{}}}",
        ptr("intstr.IntOrString", "minAvailable"),
        ptr("v1.LabelSelector", "selector"),
        ptr("intstr.IntOrString", "maxUnavailable"),
        ptr("policy.UnhealthyPodEvictionPolicyType", "unhealthyPodEvictionPolicy"),
    ))
}

/// `ValidatePodDisruptionBudgetSpec` at `spec`.
pub fn validate_pdb_spec(spec: &Value, opts: LabelSelectorValidationOptions) -> ErrorList {
    let path = Path::new("spec");
    let mut errs = ErrorList::new();
    if set(spec, "minAvailable") && set(spec, "maxUnavailable") {
        errs.push(FieldError::invalid(&path, go_spec(spec), "minAvailable and maxUnavailable cannot be both set"));
    }
    for key in ["minAvailable", "maxUnavailable"] {
        if let Some(v) = spec.get(key).filter(|v| !v.is_null()) {
            errs.extend(validate_positive_int_or_percent(v, &path.child(key)));
            errs.extend(not_more_than_100_percent(v, &path.child(key)));
        }
    }
    errs.extend(validate_label_selector(spec.get("selector").unwrap_or(&Value::Null), opts, &path.child("selector")));
    if let Some(p) = spec.get("unhealthyPodEvictionPolicy").and_then(Value::as_str) {
        if !UNHEALTHY_POD_EVICTION_POLICIES.contains(&p) {
            errs.push(FieldError::not_supported(
                &path.child("unhealthyPodEvictionPolicy"),
                p,
                &UNHEALTHY_POD_EVICTION_POLICIES,
            ));
        }
    }
    errs
}

impl Strategy for PodDisruptionBudget {
    /// Upstream resets the status to its zero value, whose four counters
    /// serialize as `0`.
    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0});
    }

    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        validate_pdb_spec(obj.get("spec").unwrap_or(&Value::Null), LabelSelectorValidationOptions::default())
            .to_causes()
    }

    /// Selectors stored with label values that are no longer valid stay
    /// acceptable (upstream's `hasInvalidLabelValueInLabelSelector`).
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        let old_selector = old.pointer("/spec/selector").unwrap_or(&Value::Null);
        let strict = LabelSelectorValidationOptions::default();
        let lax = !validate_label_selector(old_selector, strict, &Path::new("spec")).is_empty();
        let opts = LabelSelectorValidationOptions { allow_invalid_label_value_in_selector: lax, ..strict };
        validate_pdb_spec(new.get("spec").unwrap_or(&Value::Null), opts).to_causes()
    }

    fn has_status_subresource(&self) -> bool {
        true
    }
    fn tracks_generation(&self) -> bool {
        self.flags.tracks_generation
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(obj: Value) -> Vec<String> {
        PodDisruptionBudget::new()
            .validate_create(&obj)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn min_available_and_max_unavailable_are_exclusive() {
        let errs = validate_pdb_spec(
            &json!({"minAvailable": 1, "maxUnavailable": "50%", "selector": {"matchLabels": {"a": "b"}}}),
            LabelSelectorValidationOptions::default(),
        );
        assert_eq!(errs.len(), 1);
        let text = errs.iter().next().unwrap().to_string();
        // Upstream's pointer addresses vary; the rest of the %#v is fixed.
        for part in [
            "spec: Invalid value: policy.PodDisruptionBudgetSpec{MinAvailable:(*intstr.IntOrString)(0x",
            "), Selector:(*v1.LabelSelector)(0x",
            "), MaxUnavailable:(*intstr.IntOrString)(0x",
            "), UnhealthyPodEvictionPolicy:(*policy.UnhealthyPodEvictionPolicyType)(nil)}: minAvailable and \
             maxUnavailable cannot be both set",
        ] {
            assert!(text.contains(part), "{part:?} not in {text}");
        }
    }

    #[test]
    fn int_or_percent_and_policy_rules() {
        assert_eq!(
            texts(json!({"spec": {"minAvailable": "150%", "unhealthyPodEvictionPolicy": "Never"}})),
            vec![
                r#"spec.minAvailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"150%"}: must not be greater than 100%"#,
                r#"spec.unhealthyPodEvictionPolicy: Unsupported value: "Never": supported values: "AlwaysAllow", "IfHealthyBudget""#,
            ]
        );
        assert_eq!(
            texts(json!({"spec": {"maxUnavailable": -1}})),
            vec!["spec.maxUnavailable: Invalid value: -1: must be greater than or equal to 0"]
        );
        assert!(texts(json!({"spec": {"minAvailable": "50%"}})).is_empty());
    }

    #[test]
    fn status_starts_at_zero() {
        let mut pdb = json!({"spec": {}, "status": {"disruptionsAllowed": 5}});
        PodDisruptionBudget::new().prepare_for_create(&mut pdb);
        assert_eq!(pdb["status"]["disruptionsAllowed"], 0);
        assert_eq!(pdb["status"]["expectedPods"], 0);
    }
}
