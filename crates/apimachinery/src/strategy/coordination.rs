//! Leases (`coordination.k8s.io/v1`): `ValidateLeaseSpec`
//! (`pkg/apis/coordination/validation`) on create and update:
//! `leaseDurationSeconds` > 0, `leaseTransitions` ≥ 0, a known or
//! qualified-name `strategy`, `preferredHolder` only with a strategy.

use serde_json::Value;

use super::{generic, Generic, Strategy};
use crate::errors::StatusCause;
use crate::validation::{is_qualified_name, ErrorList, FieldError, Path};

/// The Kubernetes-defined coordinated lease strategies.
pub const LEASE_STRATEGIES: [&str; 1] = ["OldestEmulationVersion"];

/// The strategy of Leases.
#[derive(Clone, Debug)]
pub struct Lease {
    flags: Generic,
}

impl Lease {
    /// The strategy with upstream's flags.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Lease {
        Lease { flags: generic::for_builtin("coordination.k8s.io", "Lease", false) }
    }
}

/// `ValidateLeaseSpec` at `spec`.
pub fn validate_lease_spec(spec: &Value) -> ErrorList {
    let path = Path::new("spec");
    let mut errs = ErrorList::new();
    if let Some(d) = spec.get("leaseDurationSeconds").and_then(Value::as_i64).filter(|d| *d <= 0) {
        errs.push(FieldError::invalid(&path.child("leaseDurationSeconds"), d, "must be greater than 0"));
    }
    if let Some(t) = spec.get("leaseTransitions").and_then(Value::as_i64).filter(|t| *t < 0) {
        errs.push(FieldError::invalid(&path.child("leaseTransitions"), t, "must be greater than or equal to 0"));
    }
    let strategy = spec.get("strategy").and_then(Value::as_str);
    if let Some(s) = strategy {
        // Upstream appends `strategy` to the path it is given, which already ends in it.
        let p = path.child("strategy").child("strategy");
        if !s.contains('/') {
            if !LEASE_STRATEGIES.contains(&s) {
                errs.push(FieldError::not_supported(&p, s, &LEASE_STRATEGIES));
            }
        } else {
            for msg in is_qualified_name(s) {
                errs.push(FieldError::invalid(&p, s, &msg));
            }
        }
    }
    let holder = spec.get("preferredHolder").and_then(Value::as_str).unwrap_or("");
    if !holder.is_empty() && strategy.unwrap_or("").is_empty() {
        errs.push(FieldError::forbidden(
            &path.child("preferredHolder"),
            "may only be specified if `strategy` is defined",
        ));
    }
    errs
}

impl Strategy for Lease {
    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        validate_lease_spec(obj.get("spec").unwrap_or(&Value::Null)).to_causes()
    }
    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<StatusCause> {
        validate_lease_spec(new.get("spec").unwrap_or(&Value::Null)).to_causes()
    }
    fn has_status_subresource(&self) -> bool {
        false
    }
    fn tracks_generation(&self) -> bool {
        self.flags.tracks_generation
    }
    fn allow_create_on_update(&self) -> bool {
        self.flags.allow_create_on_update
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn lease_spec_rules() {
        let errs = validate_lease_spec(&json!({"leaseDurationSeconds": 0, "leaseTransitions": -1,
            "strategy": "Newest", "preferredHolder": "a"}));
        let texts: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        assert_eq!(
            texts,
            vec![
                "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
                "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
                r#"spec.strategy.strategy: Unsupported value: "Newest": supported values: "OldestEmulationVersion""#,
            ]
        );
        let texts: Vec<String> =
            validate_lease_spec(&json!({"preferredHolder": "a"})).iter().map(|e| e.to_string()).collect();
        assert_eq!(texts, vec!["spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined"]);
        assert!(validate_lease_spec(&json!({"holderIdentity": "x", "leaseDurationSeconds": 15})).is_empty());
    }
}
