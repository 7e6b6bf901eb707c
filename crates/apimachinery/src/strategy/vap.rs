//! ValidatingAdmissionPolicyBinding of `admissionregistration.k8s.io/v1`
//! (upstream `pkg/apis/admissionregistration/validation`
//! `validateValidatingAdmissionPolicyBindingSpec`, and v1
//! `SetDefaults_MatchResources`):
//!
//! * `spec.policyName` is required and a DNS-1123 subdomain;
//! * `spec.paramRef`, when set, names a path-segment object or has a valid
//!   selector (not both, one of them) and a `parameterNotFoundAction` of
//!   `Deny` or `Allow`;
//! * `spec.validationActions` holds at least one of `Deny`, `Warn`,
//!   `Audit`, each once, never `Deny` with `Warn`.
//!
//! A set `spec.matchResources` gets `matchPolicy: Equivalent`, empty
//! selectors and rule scopes `*` by default; its match policy, selectors
//! and (excluded) resource rules are validated as upstream's
//! `validateMatchResources`, under upstream's field path
//! `spec.matchResouces` (sic). The ValidatingAdmissionPolicy kind itself
//! is in [`super::vap_policy`].

use std::collections::HashSet;

use serde_json::{json, Value};

use super::{generic, Generic, Strategy};
use crate::errors::StatusCause;
use crate::validation::meta::{validate_label_selector, LabelSelectorValidationOptions};
use crate::validation::{
    go_quote, is_dns1123_subdomain, is_valid_path_segment_name, BadValue, ErrorList, FieldError, Path,
};

const VALIDATION_ACTIONS: [&str; 3] = ["Audit", "Deny", "Warn"];
const MATCH_POLICIES: [&str; 2] = ["Equivalent", "Exact"];
const PARAM_NOT_FOUND_ACTIONS: [&str; 2] = ["Deny", "Allow"];

/// The strategy of ValidatingAdmissionPolicyBinding.
#[derive(Clone, Debug)]
pub struct PolicyBinding {
    flags: Generic,
}

impl PolicyBinding {
    /// The strategy with upstream's flags for the kind.
    #[allow(clippy::new_without_default)]
    pub fn new() -> PolicyBinding {
        PolicyBinding {
            flags: generic::for_builtin("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding", false),
        }
    }
}

/// `validateParamRef` at `path` (nothing when `pr` is absent).
fn validate_param_ref(pr: Option<&Value>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(pr) = pr.filter(|p| !p.is_null()) else { return errs };
    const EXCLUSIVE: &str = "name and selector are mutually exclusive";
    let name = pr.get("name").and_then(Value::as_str).unwrap_or("");
    let selector = pr.get("selector").filter(|s| !s.is_null());
    if !name.is_empty() {
        for m in is_valid_path_segment_name(name) {
            errs.push(FieldError::invalid(&path.child("name"), name, &m));
        }
        if selector.is_some() {
            errs.push(FieldError::forbidden(&path.child("name"), EXCLUSIVE));
        }
    }
    if let Some(sel) = selector {
        errs.extend(validate_label_selector(sel, LabelSelectorValidationOptions::default(), &path.child("selector")));
        if !name.is_empty() {
            errs.push(FieldError::forbidden(&path.child("selector"), EXCLUSIVE));
        }
    }
    if name.is_empty() && selector.is_none() {
        errs.push(FieldError::required(path, "one of name or selector must be specified"));
    }
    match pr.get("parameterNotFoundAction").and_then(Value::as_str).unwrap_or("") {
        "" => errs.push(FieldError::required(&path.child("parameterNotFoundAction"), "")),
        a if !PARAM_NOT_FOUND_ACTIONS.contains(&a) => {
            errs.push(FieldError::not_supported(&path.child("parameterNotFoundAction"), a, &PARAM_NOT_FOUND_ACTIONS))
        }
        _ => {}
    }
    errs
}

/// `validateValidationActions` at `path`.
fn validate_validation_actions(actions: &[&str], path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut seen = HashSet::new();
    for (i, a) in actions.iter().enumerate() {
        if !VALIDATION_ACTIONS.contains(a) {
            errs.push(FieldError::not_supported(&path.index(i), *a, &VALIDATION_ACTIONS));
        }
        if !seen.insert(*a) {
            errs.push(FieldError::duplicate(&path.index(i), *a));
        }
    }
    if seen.contains("Deny") && seen.contains("Warn") {
        let shown: Vec<String> = actions.iter().map(|a| go_quote(a)).collect();
        errs.push(FieldError::invalid(
            path,
            BadValue::Raw(format!("[]admissionregistration.ValidationAction{{{}}}", shown.join(", "))),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    if seen.is_empty() {
        errs.push(FieldError::required(path, "at least one validation action is required"));
    }
    errs
}

/// `validateNamedRuleWithOperations` at `path`: valid, unique
/// `resourceNames`, then the webhook rule checks.
fn validate_named_rule(rule: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut seen = HashSet::new();
    let names = rule.get("resourceNames").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str);
    for (i, name) in names.enumerate() {
        let p = path.child("resourceNames").index(i);
        for m in is_valid_path_segment_name(name) {
            errs.push(FieldError::invalid(&p, name, &m));
        }
        if !seen.insert(name) {
            errs.push(FieldError::duplicate(&p, name));
        }
    }
    errs.extend(super::admission::validate_rule(rule, path));
    errs
}

/// v1 `SetDefaults_MatchResources` (and `SetDefaults_Rule` on its rules)
/// on a `matchResources`-shaped object.
pub(crate) fn default_match_resources(mr: &mut serde_json::Map<String, Value>) {
    for (key, value) in
        [("matchPolicy", json!("Equivalent")), ("namespaceSelector", json!({})), ("objectSelector", json!({}))]
    {
        if mr.get(key).is_none_or(Value::is_null) {
            mr.insert(key.into(), value);
        }
    }
    for key in ["resourceRules", "excludeResourceRules"] {
        for rule in mr.get_mut(key).and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(r) = rule.as_object_mut() {
                if r.get("scope").is_none_or(Value::is_null) {
                    r.insert("scope".into(), json!("*"));
                }
            }
        }
    }
}

/// `validateMatchResources`: a known `matchPolicy` and valid selectors,
/// all required once `mr` is set (the defaults fill them), and the
/// resource rules and excluded resource rules.
pub(crate) fn validate_match_resources(mr: Option<&Value>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(mr) = mr.filter(|m| !m.is_null()) else { return errs };
    match mr.get("matchPolicy").and_then(Value::as_str) {
        None => errs.push(FieldError::required(&path.child("matchPolicy"), "")),
        Some(p) if !MATCH_POLICIES.contains(&p) => {
            errs.push(FieldError::not_supported(&path.child("matchPolicy"), p, &MATCH_POLICIES))
        }
        _ => {}
    }
    for key in ["namespaceSelector", "objectSelector"] {
        match mr.get(key).filter(|s| !s.is_null()) {
            None => errs.push(FieldError::required(&path.child(key), "")),
            Some(sel) => {
                errs.extend(validate_label_selector(sel, LabelSelectorValidationOptions::default(), &path.child(key)))
            }
        }
    }
    for key in ["resourceRules", "excludeResourceRules"] {
        for (i, rule) in mr.get(key).and_then(Value::as_array).into_iter().flatten().enumerate() {
            errs.extend(validate_named_rule(rule, &path.child(key).index(i)));
        }
    }
    errs
}

/// `validateValidatingAdmissionPolicyBindingSpec`.
pub fn validate_binding(obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let p = Path::new("spec");
    let policy = spec.get("policyName").and_then(Value::as_str).unwrap_or("");
    if policy.is_empty() {
        errs.push(FieldError::required(&p.child("policyName"), ""));
    } else {
        for m in is_dns1123_subdomain(policy) {
            errs.push(FieldError::invalid(&p.child("policyName"), policy, &m));
        }
    }
    errs.extend(validate_param_ref(spec.get("paramRef"), &p.child("paramRef")));
    // Upstream names the path `matchResouces`.
    errs.extend(validate_match_resources(spec.get("matchResources"), &p.child("matchResouces")));
    let actions: Vec<&str> = spec
        .get("validationActions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    errs.extend(validate_validation_actions(&actions, &p.child("validationActions")));
    errs
}

impl Strategy for PolicyBinding {
    /// v1 `SetDefaults_MatchResources` on a set `spec.matchResources`.
    fn default(&self, obj: &mut Value) {
        let Some(mr) = obj.pointer_mut("/spec/matchResources").and_then(Value::as_object_mut) else { return };
        default_match_resources(mr);
    }

    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        validate_binding(obj).to_causes()
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<StatusCause> {
        validate_binding(new).to_causes()
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
    use crate::strategy::cause_texts;

    fn binding(spec: Value) -> Value {
        json!({"metadata": {"name": "b"}, "spec": spec})
    }

    #[test]
    fn binding_rules() {
        let s = PolicyBinding::new();
        assert!(s.validate_create(&binding(json!({"policyName": "p", "validationActions": ["Deny"]}))).is_empty());
        assert_eq!(
            cause_texts(s.validate_create(&binding(json!({})))),
            vec![
                "spec.policyName: Required value",
                "spec.validationActions: Required value: at least one validation action is required",
            ]
        );
        assert_eq!(
            cause_texts(s.validate_create(&binding(json!({"policyName": "p",
                "validationActions": ["Deny", "Warn", "Deny", "Block"]})))),
            vec![
                "spec.validationActions[2]: Duplicate value: \"Deny\"",
                "spec.validationActions[3]: Unsupported value: \"Block\": supported values: \"Audit\", \"Deny\", \"Warn\"",
                "spec.validationActions: Invalid value: []admissionregistration.ValidationAction{\"Deny\", \"Warn\", \"Deny\", \"Block\"}: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
            ]
        );
    }

    #[test]
    fn param_ref_rules() {
        let s = PolicyBinding::new();
        let spec = |pr: Value| binding(json!({"policyName": "p", "validationActions": ["Audit"], "paramRef": pr}));
        assert_eq!(
            cause_texts(s.validate_create(&spec(json!({"parameterNotFoundAction": "Skip"})))),
            vec![
                "spec.paramRef: Required value: one of name or selector must be specified",
                "spec.paramRef.parameterNotFoundAction: Unsupported value: \"Skip\": supported values: \"Deny\", \"Allow\"",
            ]
        );
        assert_eq!(
            cause_texts(s.validate_create(&spec(json!({"name": "a", "selector": {}})))),
            vec![
                "spec.paramRef.name: Forbidden: name and selector are mutually exclusive",
                "spec.paramRef.selector: Forbidden: name and selector are mutually exclusive",
                "spec.paramRef.parameterNotFoundAction: Required value",
            ]
        );
    }

    #[test]
    fn match_resources_defaults() {
        let mut obj = binding(json!({"policyName": "p", "matchResources": {}}));
        PolicyBinding::new().default(&mut obj);
        assert_eq!(
            obj["spec"]["matchResources"],
            json!({"matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {}})
        );
        obj["spec"]["matchResources"]["matchPolicy"] = json!("Fuzzy");
        obj["spec"]["validationActions"] = json!(["Warn"]);
        assert_eq!(
            cause_texts(PolicyBinding::new().validate_create(&obj)),
            vec!["spec.matchResouces.matchPolicy: Unsupported value: \"Fuzzy\": supported values: \"Equivalent\", \"Exact\""]
        );
        let mut none = binding(json!({"policyName": "p"}));
        PolicyBinding::new().default(&mut none);
        assert!(none["spec"].get("matchResources").is_none());
    }

    #[test]
    fn binding_resource_rules() {
        let mut obj = binding(json!({"policyName": "p", "validationActions": ["Deny"], "matchResources": {
            "resourceRules": [{"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"],
                "resources": ["deployments"], "resourceNames": ["a", "a"]}],
            "excludeResourceRules": [{"operations": ["*"], "apiGroups": [""], "apiVersions": ["v1"]}]}}));
        PolicyBinding::new().default(&mut obj);
        assert_eq!(obj["spec"]["matchResources"]["resourceRules"][0]["scope"], "*");
        assert_eq!(
            cause_texts(PolicyBinding::new().validate_create(&obj)),
            vec![
                "spec.matchResouces.resourceRules[0].resourceNames[1]: Duplicate value: \"a\"",
                "spec.matchResouces.excludeResourceRules[0].resources: Required value",
            ]
        );
    }
}
