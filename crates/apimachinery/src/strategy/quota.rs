//! ResourceQuotas (core/v1): upstream's registry strategy (status reset on
//! create, kept on update) and `ValidateResourceQuota[Update]`
//! (`pkg/apis/core/validation`): resource names known to quota, quantities
//! not negative (and whole numbers for countable resources), scopes known,
//! applicable to the named resources and not conflicting, scope selectors,
//! and scopes that never change. Quantities are printed as written (`0`
//! for zero), and where upstream prints Go's `%#v` of a `resource.Quantity`
//! (the whole-number rule) rkube prints the quantity.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::limitrange::{is_extended, is_huge_page, quantity_text, validate_resource_name};
use super::{generic, Generic, Strategy};
use crate::errors::StatusCause;
use crate::validation::podspec::parse_quantity;
use crate::validation::{go_quote, BadValue, ErrorList, FieldError, Path, FIELD_IMMUTABLE_ERROR_MSG};

/// `standardQuotaResources`.
const QUOTA_RESOURCES: [&str; 19] = [
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
];

/// `integerResources`.
const INTEGER_RESOURCES: [&str; 9] = [
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

/// The quota scopes upstream knows.
pub const QUOTA_SCOPES: [&str; 6] =
    ["Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass", "CrossNamespacePodAffinity"];

/// The strategy of ResourceQuotas.
#[derive(Clone, Debug)]
pub struct ResourceQuota {
    flags: Generic,
}

impl ResourceQuota {
    /// The strategy with upstream's flags.
    #[allow(clippy::new_without_default)]
    pub fn new() -> ResourceQuota {
        ResourceQuota { flags: generic::for_builtin("", "ResourceQuota", true) }
    }
}

fn is_quota_resource(name: &str) -> bool {
    QUOTA_RESOURCES.contains(&name) || is_huge_page(name) || name.starts_with("requests.hugepages-")
}

/// `IsResourceQuotaScopeValidForResource`.
fn scope_valid_for(scope: &str, resource: &str) -> bool {
    let pod_compute = ["cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu", "requests.memory"];
    match scope {
        "Terminating" | "NotTerminating" | "NotBestEffort" | "PriorityClass" | "CrossNamespacePodAffinity" => {
            resource == "pods" || pod_compute.contains(&resource)
        }
        "BestEffort" => resource == "pods",
        _ => true,
    }
}

/// `ValidateResourceQuotaResourceName`.
fn validate_quota_resource_name(name: &str, path: &Path) -> ErrorList {
    let mut errs = validate_resource_name(name, path);
    if !name.contains('/') && !is_quota_resource(name) {
        errs.push(FieldError::invalid(path, name, "must be a standard resource for quota"));
    }
    errs
}

/// `ValidateResourceQuantityValue`: not negative, and whole for integer
/// and extended resources.
pub(crate) fn validate_quantity(name: &str, q: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(n) = parse_quantity(q) else { return errs };
    if n < 0.0 {
        errs.push(FieldError::invalid(path, quantity_text(q), "must be greater than or equal to 0"));
    }
    if (INTEGER_RESOURCES.contains(&name) || is_extended(name)) && n.fract() != 0.0 {
        errs.push(FieldError::invalid(path, BadValue::Raw(quantity_text(q)), "must be an integer"));
    }
    errs
}

fn go_scopes(scopes: &[&str], nil: bool) -> BadValue {
    if scopes.is_empty() && nil {
        return BadValue::Raw("[]core.ResourceQuotaScope(nil)".into());
    }
    let quoted: Vec<String> = scopes.iter().map(|s| go_quote(s)).collect();
    BadValue::Raw(format!("[]core.ResourceQuotaScope{{{}}}", quoted.join(", ")))
}

fn scopes_of(spec: &Value) -> Vec<&str> {
    spec.get("scopes").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect()
}

fn conflicting(set: &BTreeSet<&str>) -> usize {
    [["BestEffort", "NotBestEffort"], ["Terminating", "NotTerminating"]]
        .iter()
        .filter(|pair| pair.iter().all(|s| set.contains(s)))
        .count()
}

/// `ValidateResourceQuotaSpec` at `spec`.
pub fn validate_quota_spec(spec: &Value) -> ErrorList {
    let path = Path::new("spec");
    let mut errs = ErrorList::new();
    let hard = spec.get("hard").and_then(Value::as_object).cloned().unwrap_or_default();
    for (k, v) in &hard {
        let p = path.child("hard").key(k);
        errs.extend(validate_quota_resource_name(k, &p));
        errs.extend(validate_quantity(k, v, &p));
    }
    let scopes = scopes_of(spec);
    let scopes_value = go_scopes(&scopes, spec.get("scopes").is_none_or(Value::is_null));
    let mut seen = BTreeSet::new();
    for scope in &scopes {
        if !QUOTA_SCOPES.contains(scope) {
            errs.push(FieldError::invalid(&path.child("scopes"), scopes_value.clone(), "unsupported scope"));
        }
        for k in hard.keys() {
            if is_quota_resource(k) && !scope_valid_for(scope, k) {
                errs.push(FieldError::invalid(
                    &path.child("scopes"),
                    scopes_value.clone(),
                    "unsupported scope applied to resource",
                ));
            }
        }
        seen.insert(*scope);
    }
    for _ in 0..conflicting(&seen) {
        errs.push(FieldError::invalid(&path.child("scopes"), scopes_value.clone(), "conflicting scopes"));
    }
    if let Some(selector) = spec.get("scopeSelector").filter(|s| !s.is_null()) {
        errs.extend(validate_scope_selector(selector, &hard, scopes_value, &path.child("scopeSelector")));
    }
    errs
}

/// `validateScopedResourceSelectorRequirement`.
fn validate_scope_selector(
    selector: &Value,
    hard: &serde_json::Map<String, Value>,
    scopes_value: BadValue,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let mp = path.child("matchExpressions");
    let mut seen = BTreeSet::new();
    for req in selector.get("matchExpressions").and_then(Value::as_array).into_iter().flatten() {
        let scope = req.get("scopeName").and_then(Value::as_str).unwrap_or("");
        let op = req.get("operator").and_then(Value::as_str).unwrap_or("");
        if !QUOTA_SCOPES.contains(&scope) {
            errs.push(FieldError::invalid(&mp.child("scopeName"), scope, "unsupported scope"));
        }
        for k in hard.keys() {
            if is_quota_resource(k) && !scope_valid_for(scope, k) {
                // Upstream prints the whole scope selector struct here.
                errs.push(FieldError::invalid(&mp, BadValue::Omitted, "unsupported scope applied to resource"));
            }
        }
        if matches!(
            scope,
            "BestEffort" | "NotBestEffort" | "Terminating" | "NotTerminating" | "CrossNamespacePodAffinity"
        ) && op != "Exists"
        {
            errs.push(FieldError::invalid(
                &mp.child("operator"),
                op,
                "must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, \
                 ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort \
                 or ResourceQuotaScopeCrossNamespacePodAffinity",
            ));
        }
        let values: Vec<&str> =
            req.get("values").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        match op {
            "In" | "NotIn" => {
                if values.is_empty() {
                    errs.push(FieldError::required(
                        &mp.child("values"),
                        "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    errs.push(FieldError::invalid(
                        &mp.child("values"),
                        BadValue::Raw(crate::validation::go_string_slice(&values, false)),
                        "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
                    ));
                }
            }
            other => errs.push(FieldError::invalid(&mp.child("operator"), other, "not a valid selector operator")),
        }
        seen.insert(scope);
    }
    for _ in 0..conflicting(&seen) {
        errs.push(FieldError::invalid(&mp, scopes_value.clone(), "conflicting scopes"));
    }
    errs
}

impl Strategy for ResourceQuota {
    /// Upstream resets the status to its zero value.
    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({});
    }

    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        validate_quota_spec(obj.get("spec").unwrap_or(&Value::Null)).to_causes()
    }

    /// `ValidateResourceQuotaUpdate`: the spec rules, and scopes never change.
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        let spec = new.get("spec").unwrap_or(&Value::Null);
        let mut errs = validate_quota_spec(spec);
        let new_scopes: BTreeSet<&str> = scopes_of(spec).into_iter().collect();
        let old_scopes: BTreeSet<&str> = scopes_of(old.get("spec").unwrap_or(&Value::Null)).into_iter().collect();
        if new_scopes != old_scopes {
            let value = go_scopes(&scopes_of(spec), spec.get("scopes").is_none_or(Value::is_null));
            errs.push(FieldError::invalid(&Path::new("spec").child("scopes"), value, FIELD_IMMUTABLE_ERROR_MSG));
        }
        errs.to_causes()
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
    use crate::strategy::cause_texts as texts;

    #[test]
    fn hard_names_and_quantities() {
        let q = json!({"spec": {"hard": {"cpu": "-1", "pods": "10", "storage": "1Gi", "count/deployments.apps": "5"}}});
        assert_eq!(
            texts(ResourceQuota::new().validate_create(&q)),
            vec![
                r#"spec.hard[cpu]: Invalid value: "-1": must be greater than or equal to 0"#,
                r#"spec.hard[storage]: Invalid value: "storage": must be a standard resource for quota"#,
            ]
        );
    }

    #[test]
    fn scopes() {
        let q = json!({"spec": {"hard": {"pods": "1", "services": "1"}, "scopes": ["BestEffort", "NotBestEffort", "Sometimes"]}});
        let v = r#"[]core.ResourceQuotaScope{"BestEffort", "NotBestEffort", "Sometimes"}"#;
        assert_eq!(
            texts(ResourceQuota::new().validate_create(&q)),
            vec![
                format!("spec.scopes: Invalid value: {v}: unsupported scope applied to resource"),
                format!("spec.scopes: Invalid value: {v}: unsupported scope applied to resource"),
                format!("spec.scopes: Invalid value: {v}: unsupported scope"),
                format!("spec.scopes: Invalid value: {v}: conflicting scopes"),
            ]
        );
        let old = json!({"spec": {"hard": {"pods": "1"}, "scopes": ["BestEffort"]}});
        let new = json!({"spec": {"hard": {"pods": "1"}}});
        assert_eq!(
            texts(ResourceQuota::new().validate_update(&new, &old)),
            vec!["spec.scopes: Invalid value: []core.ResourceQuotaScope(nil): field is immutable"]
        );
    }

    #[test]
    fn scope_selectors() {
        let q = json!({"spec": {"scopeSelector": {"matchExpressions": [
            {"scopeName": "PriorityClass", "operator": "In"},
            {"scopeName": "BestEffort", "operator": "In", "values": ["x"]}]}}});
        assert_eq!(
            texts(ResourceQuota::new().validate_create(&q)),
            vec![
                "spec.scopeSelector.matchExpressions.values: Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
                r#"spec.scopeSelector.matchExpressions.operator: Invalid value: "In": must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"#,
            ]
        );
    }
}
