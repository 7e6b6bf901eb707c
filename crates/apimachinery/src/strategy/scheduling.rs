//! PriorityClasses (`scheduling.k8s.io/v1`): upstream's v1 default
//! (`preemptionPolicy: PreemptLowerPriority`) and `ValidatePriorityClass` /
//! `ValidatePriorityClassUpdate` (`pkg/apis/scheduling/validation`): names
//! with the `system-` prefix are reserved for the two system classes, user
//! values are at most one billion, `value` and `preemptionPolicy` never
//! change.
//!
//! Upstream's `Priority` admission plugin also refuses a second
//! `globalDefault: true` class; that needs the other classes and is not
//! done by this (pure) strategy.

use serde_json::{json, Value};

use super::{generic, Generic, Strategy};
use crate::errors::StatusCause;
use crate::validation::{validate_immutable_field, ErrorList, FieldError, Path};

/// `HighestUserDefinablePriority`.
pub const HIGHEST_USER_DEFINABLE_PRIORITY: i64 = 1_000_000_000;
/// The prefix reserved for system priority classes.
pub const SYSTEM_PRIORITY_CLASS_PREFIX: &str = "system-";
/// The system priority classes: name, value (neither is a global default).
pub const SYSTEM_PRIORITY_CLASSES: [(&str, i64); 2] =
    [("system-node-critical", 2_000_001_000), ("system-cluster-critical", 2_000_000_000)];

/// The strategy of PriorityClasses.
#[derive(Clone, Debug)]
pub struct PriorityClass {
    flags: Generic,
}

impl PriorityClass {
    /// The strategy with upstream's flags.
    #[allow(clippy::new_without_default)]
    pub fn new() -> PriorityClass {
        PriorityClass { flags: generic::for_builtin("scheduling.k8s.io", "PriorityClass", false) }
    }
}

/// `IsKnownSystemPriorityClass`: `Err` with upstream's reason when `name`
/// is not a system class with exactly its value and `globalDefault: false`.
fn known_system_class(name: &str, value: i64, global_default: bool) -> Result<(), String> {
    match SYSTEM_PRIORITY_CLASSES.iter().find(|(n, _)| *n == name) {
        None => Err(format!("{name} is not a known system priority class")),
        Some((n, v)) if *v != value => Err(format!("value of {n} PriorityClass must be {v}")),
        Some((n, _)) if global_default => Err(format!("globalDefault of {n} PriorityClass must be false")),
        Some(_) => Ok(()),
    }
}

/// `ValidatePriorityClass` minus `ObjectMeta`.
pub fn validate_priority_class(pc: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let name = pc.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    let value = pc.get("value").and_then(Value::as_i64).unwrap_or(0);
    let global_default = pc.get("globalDefault") == Some(&Value::Bool(true));
    if name.starts_with(SYSTEM_PRIORITY_CLASS_PREFIX) {
        if let Err(e) = known_system_class(name, value, global_default) {
            errs.push(FieldError::forbidden(
                &Path::new("metadata").child("name"),
                &format!(
                    "priority class names with '{SYSTEM_PRIORITY_CLASS_PREFIX}' prefix are reserved for system use \
                     only. error: {e}"
                ),
            ));
        }
    } else if value > HIGHEST_USER_DEFINABLE_PRIORITY {
        errs.push(FieldError::forbidden(
            &Path::new("value"),
            &format!("maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"),
        ));
    }
    if let Some(p) = pc.get("preemptionPolicy").and_then(Value::as_str) {
        let path = Path::new("preemptionPolicy");
        match p {
            "PreemptLowerPriority" | "Never" => {}
            "" => errs.push(FieldError::required(&path, "")),
            other => errs.push(FieldError::not_supported(&path, other, &["PreemptLowerPriority", "Never"])),
        }
    }
    errs
}

impl Strategy for PriorityClass {
    /// `SetDefaults_PriorityClass`.
    fn default(&self, obj: &mut Value) {
        if let Some(m) = obj.as_object_mut() {
            if m.get("preemptionPolicy").is_none_or(Value::is_null) {
                m.insert("preemptionPolicy".into(), json!("PreemptLowerPriority"));
            }
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        validate_priority_class(obj).to_causes()
    }

    /// `ValidatePriorityClassUpdate` (the create rules are not re-run).
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        let mut errs = ErrorList::new();
        if new.get("value").and_then(Value::as_i64).unwrap_or(0)
            != old.get("value").and_then(Value::as_i64).unwrap_or(0)
        {
            errs.push(FieldError::forbidden(&Path::new("value"), "may not be changed in an update."));
        }
        errs.extend(validate_immutable_field(
            new.get("preemptionPolicy"),
            old.get("preemptionPolicy"),
            &Path::new("preemptionPolicy"),
        ));
        errs.to_causes()
    }

    fn has_status_subresource(&self) -> bool {
        false
    }
    fn tracks_generation(&self) -> bool {
        self.flags.tracks_generation
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::cause_texts as texts;

    #[test]
    fn values_and_system_names() {
        let s = PriorityClass::new();
        let mut pc = json!({"metadata": {"name": "high"}, "value": 1_000_000_001});
        s.default(&mut pc);
        assert_eq!(pc["preemptionPolicy"], "PreemptLowerPriority");
        assert_eq!(
            texts(s.validate_create(&pc)),
            vec!["value: Forbidden: maximum allowed value of a user defined priority is 1000000000"]
        );
        let sys = json!({"metadata": {"name": "system-node-critical"}, "value": 2_000_001_000,
            "preemptionPolicy": "PreemptLowerPriority"});
        assert!(s.validate_create(&sys).is_empty());
        let fake = json!({"metadata": {"name": "system-mine"}, "value": 5, "preemptionPolicy": "Sometimes"});
        assert_eq!(
            texts(s.validate_create(&fake)),
            vec![
                "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class",
                r#"preemptionPolicy: Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never""#,
            ]
        );
    }

    #[test]
    fn value_and_preemption_policy_are_immutable() {
        let s = PriorityClass::new();
        let old = json!({"value": 1, "preemptionPolicy": "Never"});
        let new = json!({"value": 2, "preemptionPolicy": "PreemptLowerPriority"});
        assert_eq!(
            texts(s.validate_update(&new, &old)),
            vec![
                "value: Forbidden: may not be changed in an update.",
                r#"preemptionPolicy: Invalid value: "PreemptLowerPriority": field is immutable"#,
            ]
        );
    }
}
