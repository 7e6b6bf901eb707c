//! The ValidatingAdmissionPolicy plugin (upstream
//! `pkg/admission/plugin/policy/validating`): in the validating phase,
//! every ValidatingAdmissionPolicy whose `matchConstraints` match the
//! request is evaluated once per matching ValidatingAdmissionPolicyBinding
//! (binding `matchResources`, params from `paramRef`) with the CEL
//! variables `object`, `oldObject`, `request`, `params`,
//! `namespaceObject` and `variables`. Failed validations act as the
//! binding's `validationActions` say: `Deny` refuses with
//! `<resource> "<name>" is forbidden: ValidatingAdmissionPolicy '<p>' with
//! binding '<b>' denied request: <message>` (status code from the
//! validation's reason, 422 for the default `Invalid`), `Warn` adds the
//! warning `Validation failed for ValidatingAdmissionPolicy '<p>' with
//! binding '<b>': <message>`, `Audit` records the
//! `validation.policy.admission.k8s.io/validation_failure` audit
//! annotation.
//!
//! The `authorizer` variable answers from the server's authorizer
//! ([`authorizer`]). Not modelled: cost budgets and most of type checking
//! (see [`rkube_apimachinery::cel`]).

pub mod authorizer;
pub mod compiled;
mod params;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use rkube_apimachinery::ApiError;
use serde_json::{json, Value};

use super::plugins::Stores;
use super::webhook::matcher::{self, Matched};
use super::webhook::review;
use super::{Attributes, Plugin};
use crate::storage::{ListOptions, ResourceStore};
use compiled::{Decision, Policy};

/// The audit annotation key for `Audit` failures.
const VALIDATION_FAILURE_KEY: &str = "validation.policy.admission.k8s.io/validation_failure";

/// The ValidatingAdmissionPolicy plugin.
pub struct ValidatingAdmissionPolicy {
    stores: Arc<Stores>,
    policies: Arc<ResourceStore>,
    bindings: Arc<ResourceStore>,
    /// Compiled policies by name, with the resourceVersion compiled.
    compiled: Mutex<HashMap<String, (String, Arc<Policy>)>>,
}

/// One denial, with where it came from.
struct Denial {
    policy: String,
    binding: Option<String>,
    message: String,
    reason: String,
}

impl ValidatingAdmissionPolicy {
    /// The plugin over the server's stores; `None` without the policy kinds.
    pub fn new(stores: &Stores) -> Option<ValidatingAdmissionPolicy> {
        let g = "admissionregistration.k8s.io";
        Some(ValidatingAdmissionPolicy {
            policies: stores.get(&(g, "v1", "validatingadmissionpolicies"))?.clone(),
            bindings: stores.get(&(g, "v1", "validatingadmissionpolicybindings"))?.clone(),
            stores: Arc::new(stores.clone()),
            compiled: Mutex::new(HashMap::new()),
        })
    }

    async fn list(store: &ResourceStore) -> Vec<Value> {
        let opts = ListOptions { resource_version: "0".into(), ..Default::default() };
        match store.list("", &opts).await {
            Ok(l) => l.items,
            Err(e) => {
                tracing::warn!(component = crate::COMPONENT, error = %e, "cannot list admission policies");
                Vec::new()
            }
        }
    }

    /// The compiled form of `obj`, compiled again only when it changed.
    fn compiled(&self, obj: &Value) -> Arc<Policy> {
        let name = rkube_apimachinery::meta::name(obj).to_string();
        let rv = obj.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or("").to_string();
        let mut cache = self.compiled.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((cached_rv, p)) = cache.get(&name) {
            if *cached_rv == rv {
                return p.clone();
            }
        }
        let p = Arc::new(Policy::compile(obj));
        cache.insert(name, (rv, p.clone()));
        p
    }

    /// Upstream's `Matcher.Matches` over a `matchResources`-shaped value:
    /// namespace and object selectors, `excludeResourceRules`, then
    /// `resourceRules` (all resources when empty and `all_when_empty`).
    async fn matches(
        &self,
        mr: &Value,
        all_when_empty: bool,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<Option<Matched>, String> {
        let ns_sel = matcher::parse_selector(mr.get("namespaceSelector"))?;
        let ns_match = matcher::match_namespace(&ns_sel, &self.stores, attrs, object).await;
        if matches!(ns_match, Ok(false)) {
            return Ok(None);
        }
        let obj_sel = matcher::parse_selector(mr.get("objectSelector"))?;
        if !matcher::match_object(&obj_sel, attrs, object) {
            return Ok(None);
        }
        let equivalent = mr.get("matchPolicy").and_then(Value::as_str).unwrap_or("Equivalent") == "Equivalent";
        let rules = |k: &str| mr.get(k).and_then(Value::as_array).cloned().unwrap_or_default();
        let exclude = rules("excludeResourceRules");
        if matcher::match_rules(&exclude, equivalent, attrs, object).is_some() {
            return Ok(None);
        }
        let include = rules("resourceRules");
        let matched = if include.is_empty() && all_when_empty {
            Some(matcher::request_match(attrs, object))
        } else {
            matcher::match_rules(&include, equivalent, attrs, object)
        };
        if matched.is_some() {
            ns_match.map_err(|e| e.to_string())?;
        }
        Ok(matched)
    }
}

#[async_trait]
impl Plugin for ValidatingAdmissionPolicy {
    fn name(&self) -> &'static str {
        "ValidatingAdmissionPolicy"
    }

    async fn validate(&self, attrs: &Attributes<'_>, object: Option<&Value>) -> Result<(), ApiError> {
        if matcher::is_exempt(attrs) {
            return Ok(());
        }
        let mut policies = Self::list(&self.policies).await;
        if policies.is_empty() {
            return Ok(());
        }
        let bindings = Self::list(&self.bindings).await;
        policies.sort_by(|a, b| rkube_apimachinery::meta::name(a).cmp(rkube_apimachinery::meta::name(b)));
        let mut denials: Vec<Denial> = Vec::new();
        let mut failures: Vec<Value> = Vec::new();
        for obj in &policies {
            let policy = self.compiled(obj);
            let config_error = |denials: &mut Vec<Denial>, binding: Option<&str>, e: String| {
                if !policy.ignore_failures {
                    let message = match binding {
                        None => format!("failed to configure policy: {e}"),
                        Some(_) => format!("failed to configure binding: {e}"),
                    };
                    denials.push(Denial {
                        policy: policy.name.clone(),
                        binding: binding.map(String::from),
                        message,
                        reason: String::new(),
                    });
                }
            };
            let matched = match self.matches(&policy.match_constraints, false, attrs, object).await {
                Ok(Some(m)) => m,
                Ok(None) => continue,
                Err(e) => {
                    config_error(&mut denials, None, e);
                    continue;
                }
            };
            let mut annotations: Vec<(String, Vec<String>)> = Vec::new();
            for binding in bindings
                .iter()
                .filter(|b| b.pointer("/spec/policyName").and_then(Value::as_str) == Some(policy.name.as_str()))
            {
                let binding_name = rkube_apimachinery::meta::name(binding).to_string();
                let mr = binding.pointer("/spec/matchResources").cloned().unwrap_or(Value::Null);
                match self.matches(&mr, true, attrs, object).await {
                    Ok(Some(_)) => {}
                    Ok(None) => continue,
                    Err(e) => {
                        config_error(&mut denials, Some(&binding_name), e);
                        continue;
                    }
                }
                let params = match params::collect(&self.stores, &policy, binding, attrs.namespace).await {
                    Ok(p) => p,
                    Err(e) => {
                        config_error(&mut denials, Some(&binding_name), e);
                        continue;
                    }
                };
                let namespace = match namespace_object(&self.stores, attrs).await {
                    Ok(ns) => ns,
                    Err(e) => return Err(e),
                };
                let v = matcher::views(attrs, &matched, object);
                let request = review::admission_request("", attrs, &matched, object, v.object.as_ref(), v.old.as_ref());
                let null = Value::Null;
                let actions: Vec<&str> = binding
                    .pointer("/spec/validationActions")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                let authz = authorizer::binding(attrs);
                for param in &params {
                    let vars = [
                        ("object", v.object.as_ref().unwrap_or(&null)),
                        ("oldObject", v.old.as_ref().unwrap_or(&null)),
                        ("request", &request),
                        ("params", param),
                        ("namespaceObject", &namespace),
                    ];
                    let (decisions, published) = policy.evaluate(&vars, Some(&authz));
                    for (i, d) in decisions.into_iter().enumerate() {
                        let Decision::Deny { message, reason } = d else { continue };
                        for action in &actions {
                            match *action {
                                "Deny" => denials.push(Denial {
                                    policy: policy.name.clone(),
                                    binding: Some(binding_name.clone()),
                                    message: message.clone(),
                                    reason: reason.clone(),
                                }),
                                "Warn" => attrs.request.warn(format!(
                                    "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {}",
                                    policy.name, binding_name, message
                                )),
                                "Audit" => failures.push(json!({
                                    "message": message, "policy": policy.name, "binding": binding_name,
                                    "expressionIndex": i, "validationActions": actions,
                                })),
                                _ => {}
                            }
                        }
                    }
                    for (key, value) in published {
                        match annotations.iter_mut().find(|(k, _)| *k == key) {
                            Some((_, values)) if !values.contains(&value) => values.push(value),
                            Some(_) => {}
                            None => annotations.push((key, vec![value])),
                        }
                    }
                }
            }
            for (key, values) in annotations {
                attrs.request.annotate(format!("{}/{key}", policy.name), values.join(", "));
            }
        }
        if !failures.is_empty() {
            failures.truncate(50);
            attrs.request.annotate(VALIDATION_FAILURE_KEY, Value::Array(failures).to_string());
        }
        match denials.into_iter().next() {
            None => Ok(()),
            Some(d) => Err(deny(attrs, object, d)),
        }
    }
}

/// The namespace object for `namespaceObject` (`null` for cluster-scoped
/// requests and for namespaces themselves).
async fn namespace_object(stores: &Stores, attrs: &Attributes<'_>) -> Result<Value, ApiError> {
    let is_ns = attrs.resource.group.is_empty() && attrs.resource.kind == "Namespace";
    if attrs.namespace.is_empty() || is_ns {
        return Ok(Value::Null);
    }
    matcher::namespace_object(stores, attrs).await
}

/// Upstream's denial: `admission.NewForbidden` with the policy message,
/// then the decision's reason (default `Invalid`) and its code, and the
/// message as a cause.
fn deny(attrs: &Attributes<'_>, object: Option<&Value>, d: Denial) -> ApiError {
    let message = match &d.binding {
        Some(b) => format!("ValidatingAdmissionPolicy '{}' with binding '{b}' denied request: {}", d.policy, d.message),
        None => format!("ValidatingAdmissionPolicy '{}' denied request: {}", d.policy, d.message),
    };
    let (resource, name, full) = match super::builtin::forbidden(attrs, object, &message) {
        ApiError::Forbidden { resource, name, message } => (resource, name, message),
        other => return other,
    };
    let reason = if d.reason.is_empty() { "Invalid" } else { d.reason.as_str() };
    let code = match reason {
        "Forbidden" => 403,
        "Unauthorized" => 401,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    };
    let mut details = json!({"name": name, "kind": resource.resource, "causes": [{"message": message}]});
    if !resource.group.is_empty() {
        details["group"] = json!(resource.group);
    }
    ApiError::Status { code, reason: super::webhook::intern_reason(reason), message: full, details }
}
