//! Webhook configurations (`admissionregistration.k8s.io/v1`
//! `MutatingWebhookConfiguration` and `ValidatingWebhookConfiguration`):
//! upstream's v1 defaults (`SetDefaults_*Webhook`, `SetDefaults_Rule`,
//! `SetDefaults_ServiceReference`) and `Validate*WebhookConfiguration`
//! (`pkg/apis/admissionregistration/validation`): fully qualified unique
//! webhook names, rules, policies, selectors, exactly one of `url` and
//! `service`, known AdmissionReview versions and match conditions.
//!
//! Match condition expressions are compiled as CEL ([`crate::cel`]): a
//! syntax error is upstream's `Invalid value: "<expr>": compilation
//! failed: ERROR: <input>:L:C: …` (cel-go's type checker is not modelled,
//! so undeclared names and type errors pass here).

use std::collections::HashSet;

use serde_json::{json, Value};

use super::Strategy;
use crate::errors::StatusCause;
use crate::validation::crd::{validate_webhook_service, validate_webhook_url};
use crate::validation::{
    go_string_slice, is_dns1035_label, is_dns1123_subdomain, is_qualified_name, validate_label_selector, BadValue,
    ErrorList, FieldError, LabelSelectorValidationOptions, Path,
};

/// The AdmissionReview versions this server accepts (upstream's
/// `AcceptedAdmissionReviewVersions`).
pub const ACCEPTED_REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];
const FAILURE_POLICIES: [&str; 2] = ["Fail", "Ignore"];
const MATCH_POLICIES: [&str; 2] = ["Equivalent", "Exact"];
const NO_SIDE_EFFECTS: [&str; 2] = ["None", "NoneOnDryRun"];
const ALL_SIDE_EFFECTS: [&str; 4] = ["None", "NoneOnDryRun", "Some", "Unknown"];
const OPERATIONS: [&str; 5] = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
const REINVOCATION_POLICIES: [&str; 2] = ["IfNeeded", "Never"];
const SCOPES: [&str; 3] = ["*", "Cluster", "Namespaced"];
/// The most match conditions a webhook may have.
const MAX_MATCH_CONDITIONS: i64 = 64;

/// The strategy of both webhook configuration kinds.
#[derive(Clone, Debug)]
pub struct WebhookConfiguration {
    mutating: bool,
}

impl WebhookConfiguration {
    /// The strategy of `kind` (`MutatingWebhookConfiguration` or
    /// `ValidatingWebhookConfiguration`).
    pub fn new(kind: &str) -> WebhookConfiguration {
        WebhookConfiguration { mutating: kind == "MutatingWebhookConfiguration" }
    }
}

/// Upstream's `validationOptions`: create uses the strict set; an update
/// relaxes each rule the stored object already breaks.
#[derive(Clone, Copy, Debug)]
struct Options {
    mutating: bool,
    ignore_match_conditions: bool,
    require_no_side_effects: bool,
    require_recognized_review_version: bool,
    require_unique_names: bool,
    allow_invalid_label_value_in_selector: bool,
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn strings(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect()
}

fn webhooks(obj: &Value) -> &[Value] {
    obj.get("webhooks").and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn set_default(m: &mut serde_json::Map<String, Value>, key: &str, value: Value) {
    if m.get(key).is_none_or(Value::is_null) {
        m.insert(key.into(), value);
    }
}

/// Go's `%#v` of a slice of a named string type, e.g.
/// `[]admissionregistration.OperationType{"CREATE", "*"}`.
fn go_typed_slice(type_name: &str, values: &[&str]) -> BadValue {
    BadValue::Raw(go_string_slice(values, false).replacen("string", type_name, 1))
}

/// `IsFullyQualifiedName`: a DNS-1123 subdomain with at least three
/// dot-separated segments.
fn validate_fully_qualified_name(path: &Path, name: &str) -> ErrorList {
    let mut errs = ErrorList::new();
    if name.is_empty() {
        errs.push(FieldError::required(path, ""));
        return errs;
    }
    let msgs = is_dns1123_subdomain(name);
    if !msgs.is_empty() {
        errs.push(FieldError::invalid(path, name, &msgs.join(",")));
    } else if name.split('.').count() < 3 {
        errs.push(FieldError::invalid(path, name, "should be a domain with at least three segments separated by dots"));
    }
    errs
}

/// `validateResources` (sub-resources allowed).
fn validate_resources(resources: &[&str], path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if resources.is_empty() {
        errs.push(FieldError::required(path, ""));
    }
    let (mut with_wildcard_sub, mut sub_with_wildcard_res) = (HashSet::new(), HashSet::new());
    let (mut double, mut single, mut plain) = (false, false, false);
    for (i, rs) in resources.iter().enumerate() {
        if rs.is_empty() {
            errs.push(FieldError::required(&path.index(i), ""));
            continue;
        }
        double |= *rs == "*/*";
        single |= *rs == "*";
        let Some((res, sub)) = rs.split_once('/') else {
            plain = *rs != "*";
            continue;
        };
        if with_wildcard_sub.contains(res) {
            errs.push(FieldError::invalid(
                &path.index(i),
                *rs,
                &format!("if '{res}/*' is present, must not specify {rs}"),
            ));
        }
        if sub_with_wildcard_res.contains(sub) {
            errs.push(FieldError::invalid(
                &path.index(i),
                *rs,
                &format!("if '*/{sub}' is present, must not specify {rs}"),
            ));
        }
        if sub == "*" {
            with_wildcard_sub.insert(res);
        }
        if res == "*" {
            sub_with_wildcard_res.insert(sub);
        }
    }
    let all = BadValue::Raw(go_string_slice(resources, false));
    if resources.len() > 1 && double {
        errs.push(FieldError::invalid(path, all.clone(), "if '*/*' is present, must not specify other resources"));
    }
    if single && plain {
        errs.push(FieldError::invalid(
            path,
            all,
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
    errs
}

/// `validateRuleWithOperations` at `rules[i]`.
pub(crate) fn validate_rule(rule: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let ops = strings(rule.get("operations"));
    let ops_path = path.child("operations");
    if ops.is_empty() {
        errs.push(FieldError::required(&ops_path, ""));
    }
    if ops.len() > 1 && ops.contains(&"*") {
        errs.push(FieldError::invalid(
            &ops_path,
            go_typed_slice("admissionregistration.OperationType", &ops),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in ops.iter().enumerate() {
        if !OPERATIONS.contains(op) {
            errs.push(FieldError::not_supported(&ops_path.index(i), *op, &OPERATIONS));
        }
    }
    let groups = strings(rule.get("apiGroups"));
    if groups.is_empty() {
        errs.push(FieldError::required(&path.child("apiGroups"), ""));
    }
    if groups.len() > 1 && groups.contains(&"*") {
        errs.push(FieldError::invalid(
            &path.child("apiGroups"),
            BadValue::Raw(go_string_slice(&groups, false)),
            "if '*' is present, must not specify other API groups",
        ));
    }
    let versions = strings(rule.get("apiVersions"));
    let v_path = path.child("apiVersions");
    if versions.is_empty() {
        errs.push(FieldError::required(&v_path, ""));
    }
    if versions.len() > 1 && versions.contains(&"*") {
        errs.push(FieldError::invalid(
            &v_path,
            BadValue::Raw(go_string_slice(&versions, false)),
            "if '*' is present, must not specify other API versions",
        ));
    }
    for (i, v) in versions.iter().enumerate() {
        if v.is_empty() {
            errs.push(FieldError::required(&v_path.index(i), ""));
        }
    }
    errs.extend(validate_resources(&strings(rule.get("resources")), &path.child("resources")));
    if let Some(scope) = rule.get("scope").and_then(Value::as_str) {
        if !SCOPES.contains(&scope) {
            errs.push(FieldError::not_supported(&path.child("scope"), scope, &SCOPES));
        }
    }
    errs
}

/// `validateAdmissionReviewVersions`.
fn validate_review_versions(versions: &[&str], require_recognized: bool, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let accepted = ACCEPTED_REVIEW_VERSIONS.join(", ");
    if versions.is_empty() {
        errs.push(FieldError::required(path, &format!("must specify one of {accepted}")));
        return errs;
    }
    let mut seen = HashSet::new();
    for (i, v) in versions.iter().enumerate() {
        if !seen.insert(*v) {
            errs.push(FieldError::invalid(&path.index(i), *v, "duplicate version"));
            continue;
        }
        for m in is_dns1035_label(v) {
            errs.push(FieldError::invalid(&path.index(i), *v, &m));
        }
    }
    if require_recognized && !versions.iter().any(|v| ACCEPTED_REVIEW_VERSIONS.contains(v)) {
        errs.push(FieldError::invalid(
            path,
            BadValue::Raw(go_string_slice(versions, false)),
            &format!("must include at least one of {accepted}"),
        ));
    }
    errs
}

/// The variables webhook matchConditions may use (upstream's webhook
/// compiler: no `params`).
pub(crate) const WEBHOOK_CONDITION_VARIABLES: [&str; 5] =
    ["object", "oldObject", "request", "namespaceObject", "authorizer"];

/// `validateMatchConditions`, the expressions compiled as CEL with only
/// `vars` declared (shared with ValidatingAdmissionPolicy).
pub(crate) fn validate_match_conditions(conditions: &[Value], path: &Path, vars: &[&str]) -> ErrorList {
    let mut errs = ErrorList::new();
    if conditions.len() as i64 > MAX_MATCH_CONDITIONS {
        errs.push(FieldError::too_many(path, conditions.len() as i64, MAX_MATCH_CONDITIONS));
    }
    let mut names = HashSet::new();
    for (i, c) in conditions.iter().enumerate() {
        let p = path.index(i);
        let expression = str_of(c, "expression").trim();
        if expression.is_empty() {
            errs.push(FieldError::required(&p.child("expression"), ""));
        } else {
            errs.extend(validate_cel_with(expression, &p.child("expression"), vars));
        }
        let name = str_of(c, "name");
        if name.is_empty() {
            errs.push(FieldError::required(&p.child("name"), ""));
        } else {
            for m in is_qualified_name(name) {
                errs.push(FieldError::invalid(&p.child("name"), name, &m));
            }
            if !names.insert(name) {
                errs.push(FieldError::duplicate(&p.child("name"), name));
            }
        }
    }
    errs
}

/// A CEL expression that must compile with only `vars` declared:
/// upstream's `convertCELErrorToValidationError` for a compile failure.
pub(crate) fn validate_cel_with(expression: &str, path: &Path, vars: &[&str]) -> ErrorList {
    let mut errs = ErrorList::new();
    if let Err(e) = crate::cel::Expression::compile_with_variables(expression, vars) {
        errs.push(FieldError::invalid(path, expression, &e));
    }
    errs
}

/// `validateMutatingWebhook` / `validateValidatingWebhook` at `webhooks[i]`.
fn validate_webhook(hook: &Value, opts: Options, path: &Path) -> ErrorList {
    let mut errs = validate_fully_qualified_name(&path.child("name"), str_of(hook, "name"));
    for (i, rule) in hook.get("rules").and_then(Value::as_array).into_iter().flatten().enumerate() {
        errs.extend(validate_rule(rule, &path.child("rules").index(i)));
    }
    if let Some(p) = hook.get("failurePolicy").and_then(Value::as_str) {
        if !FAILURE_POLICIES.contains(&p) {
            errs.push(FieldError::not_supported(&path.child("failurePolicy"), p, &FAILURE_POLICIES));
        }
    }
    if let Some(p) = hook.get("matchPolicy").and_then(Value::as_str) {
        if !MATCH_POLICIES.contains(&p) {
            errs.push(FieldError::not_supported(&path.child("matchPolicy"), p, &MATCH_POLICIES));
        }
    }
    let allowed: &[&str] = if opts.require_no_side_effects { &NO_SIDE_EFFECTS } else { &ALL_SIDE_EFFECTS };
    // The typed v1 struct turns an absent `sideEffects` into "".
    match hook.get("sideEffects").and_then(Value::as_str).filter(|s| !s.is_empty()) {
        None => errs.push(FieldError::required(
            &path.child("sideEffects"),
            &format!("must specify one of {}", allowed.join(", ")),
        )),
        Some(s) if !allowed.contains(&s) => {
            errs.push(FieldError::not_supported(&path.child("sideEffects"), s, allowed))
        }
        Some(_) => {}
    }
    if let Some(t) = hook.get("timeoutSeconds").and_then(Value::as_i64).filter(|t| !(1..=30).contains(t)) {
        errs.push(FieldError::invalid(
            &path.child("timeoutSeconds"),
            t,
            "the timeout value must be between 1 and 30 seconds",
        ));
    }
    let sel_opts = LabelSelectorValidationOptions {
        allow_invalid_label_value_in_selector: opts.allow_invalid_label_value_in_selector,
        ..Default::default()
    };
    for key in ["namespaceSelector", "objectSelector"] {
        if let Some(sel) = hook.get(key) {
            errs.extend(validate_label_selector(sel, sel_opts, &path.child(key)));
        }
    }
    if opts.mutating {
        if let Some(p) = hook.get("reinvocationPolicy").and_then(Value::as_str) {
            if !REINVOCATION_POLICIES.contains(&p) {
                errs.push(FieldError::not_supported(&path.child("reinvocationPolicy"), p, &REINVOCATION_POLICIES));
            }
        }
    }
    let cc = hook.get("clientConfig").unwrap_or(&Value::Null);
    let cc_path = path.child("clientConfig");
    let url = cc.get("url").and_then(Value::as_str);
    let service = cc.get("service").filter(|s| !s.is_null());
    match (url, service) {
        (Some(u), None) => errs.extend(validate_webhook_url(&cc_path.child("url"), u)),
        (None, Some(s)) => errs.extend(validate_webhook_service(&cc_path.child("service"), s)),
        _ => errs.push(FieldError::required(&cc_path, "exactly one of url or service is required")),
    }
    if !opts.ignore_match_conditions {
        let conditions = hook.get("matchConditions").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        let vars = &WEBHOOK_CONDITION_VARIABLES;
        errs.extend(validate_match_conditions(conditions, &path.child("matchConditions"), vars));
    }
    errs
}

/// `validate{Mutating,Validating}WebhookConfiguration` minus `ObjectMeta`.
fn validate_configuration(obj: &Value, opts: Options) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut names = HashSet::new();
    for (i, hook) in webhooks(obj).iter().enumerate() {
        let path = Path::new("webhooks").index(i);
        errs.extend(validate_webhook(hook, opts, &path));
        errs.extend(validate_review_versions(
            &strings(hook.get("admissionReviewVersions")),
            opts.require_recognized_review_version,
            &path.child("admissionReviewVersions"),
        ));
        let name = str_of(hook, "name");
        if opts.require_unique_names && !name.is_empty() && !names.insert(name) {
            errs.push(FieldError::duplicate(&path.child("name"), name));
        }
    }
    errs
}

/// The options of an update: each relaxed when `old` already breaks it.
fn update_options(mutating: bool, new: &Value, old: &Value) -> Options {
    let (new_hooks, old_hooks) = (webhooks(new), webhooks(old));
    let same_conditions = new_hooks.len() == old_hooks.len()
        && new_hooks.iter().zip(old_hooks).all(|(n, o)| n.get("matchConditions") == o.get("matchConditions"));
    let mut names = HashSet::new();
    let unique = old_hooks.iter().all(|h| names.insert(str_of(h, "name")));
    let invalid_selector = old_hooks.iter().any(|h| {
        ["namespaceSelector", "objectSelector"].iter().any(|k| {
            h.get(*k).is_some_and(|s| !validate_label_selector(s, Default::default(), &Path::nil()).is_empty())
        })
    });
    Options {
        mutating,
        ignore_match_conditions: same_conditions,
        require_no_side_effects: old_hooks
            .iter()
            .all(|h| h.get("sideEffects").and_then(Value::as_str).is_some_and(|s| NO_SIDE_EFFECTS.contains(&s))),
        require_recognized_review_version: old_hooks.iter().all(|h| {
            let v = strings(h.get("admissionReviewVersions"));
            v.is_empty() || v.iter().any(|v| ACCEPTED_REVIEW_VERSIONS.contains(v))
        }),
        require_unique_names: unique,
        allow_invalid_label_value_in_selector: invalid_selector,
    }
}

impl Strategy for WebhookConfiguration {
    /// v1 `SetDefaults_MutatingWebhook` / `SetDefaults_ValidatingWebhook`
    /// (`sideEffects` and `admissionReviewVersions` have no v1 default),
    /// `SetDefaults_Rule` (`scope: "*"`), `SetDefaults_ServiceReference`
    /// (`port: 443`).
    fn default(&self, obj: &mut Value) {
        let Some(hooks) = obj.get_mut("webhooks").and_then(Value::as_array_mut) else { return };
        for hook in hooks {
            let Some(m) = hook.as_object_mut() else { continue };
            set_default(m, "failurePolicy", json!("Fail"));
            set_default(m, "matchPolicy", json!("Equivalent"));
            set_default(m, "namespaceSelector", json!({}));
            set_default(m, "objectSelector", json!({}));
            set_default(m, "timeoutSeconds", json!(10));
            if self.mutating {
                set_default(m, "reinvocationPolicy", json!("Never"));
            }
            for rule in m.get_mut("rules").and_then(Value::as_array_mut).into_iter().flatten() {
                if let Some(r) = rule.as_object_mut() {
                    set_default(r, "scope", json!("*"));
                }
            }
            if let Some(svc) =
                m.get_mut("clientConfig").and_then(|c| c.get_mut("service")).and_then(Value::as_object_mut)
            {
                set_default(svc, "port", json!(443));
            }
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        let opts = Options {
            mutating: self.mutating,
            ignore_match_conditions: false,
            require_no_side_effects: true,
            require_recognized_review_version: true,
            require_unique_names: true,
            allow_invalid_label_value_in_selector: false,
        };
        validate_configuration(obj, opts).to_causes()
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        validate_configuration(new, update_options(self.mutating, new, old)).to_causes()
    }

    fn has_status_subresource(&self) -> bool {
        false
    }
    /// Upstream's strategy sets generation 1 on create and bumps it when
    /// the webhooks change.
    fn tracks_generation(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::cause_texts as texts;

    fn hook() -> Value {
        json!({"name": "check.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "clientConfig": {"service": {"namespace": "default", "name": "hooks", "port": 443}},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]})
    }

    #[test]
    fn v1_defaults() {
        let mut cfg = json!({"webhooks": [hook()]});
        let s = WebhookConfiguration::new("MutatingWebhookConfiguration");
        s.default(&mut cfg);
        let h = &cfg["webhooks"][0];
        assert_eq!(h["failurePolicy"], "Fail");
        assert_eq!(h["matchPolicy"], "Equivalent");
        assert_eq!(h["namespaceSelector"], json!({}));
        assert_eq!(h["objectSelector"], json!({}));
        assert_eq!(h["timeoutSeconds"], 10);
        assert_eq!(h["reinvocationPolicy"], "Never");
        assert_eq!(h["rules"][0]["scope"], "*");
        assert_eq!(h["clientConfig"]["service"]["port"], 443);
        assert!(s.validate_create(&cfg).is_empty());
        let mut v = json!({"webhooks": [hook()]});
        WebhookConfiguration::new("ValidatingWebhookConfiguration").default(&mut v);
        assert!(v["webhooks"][0].get("reinvocationPolicy").is_none());
        assert!(v["webhooks"][0].get("sideEffects").is_some());
    }

    #[test]
    fn webhook_rules() {
        let mut h = hook();
        h["name"] = json!("check.example");
        h["sideEffects"] = json!("Some");
        h["failurePolicy"] = json!("Sometimes");
        h["timeoutSeconds"] = json!(31);
        h["reinvocationPolicy"] = json!("Always");
        h["clientConfig"] = json!({"url": "http://user@hooks.example.com/x?a=1#f"});
        h["admissionReviewVersions"] = json!(["v2", "v2"]);
        h["rules"] = json!([{"operations": ["CREATE", "*"], "apiGroups": ["*", "apps"], "apiVersions": [],
            "resources": ["*/*", "pods"], "scope": "Everywhere"}]);
        h["matchConditions"] = json!([{"name": "a", "expression": " "}, {"name": "a", "expression": "true"}]);
        let cfg = json!({"webhooks": [h]});
        assert_eq!(
            texts(WebhookConfiguration::new("MutatingWebhookConfiguration").validate_create(&cfg)),
            vec![
                r#"webhooks[0].name: Invalid value: "check.example": should be a domain with at least three segments separated by dots"#,
                r#"webhooks[0].rules[0].operations: Invalid value: []admissionregistration.OperationType{"CREATE", "*"}: if '*' is present, must not specify other operations"#,
                r#"webhooks[0].rules[0].apiGroups: Invalid value: []string{"*", "apps"}: if '*' is present, must not specify other API groups"#,
                "webhooks[0].rules[0].apiVersions: Required value",
                r#"webhooks[0].rules[0].resources: Invalid value: []string{"*/*", "pods"}: if '*/*' is present, must not specify other resources"#,
                r#"webhooks[0].rules[0].scope: Unsupported value: "Everywhere": supported values: "*", "Cluster", "Namespaced""#,
                r#"webhooks[0].failurePolicy: Unsupported value: "Sometimes": supported values: "Fail", "Ignore""#,
                r#"webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun""#,
                "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
                r#"webhooks[0].reinvocationPolicy: Unsupported value: "Always": supported values: "IfNeeded", "Never""#,
                r#"webhooks[0].clientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]"#,
                r#"webhooks[0].clientConfig.url: Invalid value: "user": user information is not permitted in the URL"#,
                r#"webhooks[0].clientConfig.url: Invalid value: "f": fragments are not permitted in the URL"#,
                r#"webhooks[0].clientConfig.url: Invalid value: "a=1": query parameters are not permitted in the URL"#,
                "webhooks[0].matchConditions[0].expression: Required value",
                r#"webhooks[0].matchConditions[1].name: Duplicate value: "a""#,
                r#"webhooks[0].admissionReviewVersions[1]: Invalid value: "v2": duplicate version"#,
                r#"webhooks[0].admissionReviewVersions: Invalid value: []string{"v2", "v2"}: must include at least one of v1, v1beta1"#,
            ]
        );
    }

    #[test]
    fn required_fields_and_duplicate_names() {
        let bare = json!({"name": "a.b.c"});
        let cfg = json!({"webhooks": [bare, hook(), hook()]});
        assert_eq!(
            texts(WebhookConfiguration::new("ValidatingWebhookConfiguration").validate_create(&cfg)),
            vec![
                "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
                "webhooks[0].clientConfig: Required value: exactly one of url or service is required",
                "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
                r#"webhooks[2].name: Duplicate value: "check.example.com""#,
            ]
        );
        // The typed struct turns an absent sideEffects into "": still required.
        let mut empty = hook();
        empty["sideEffects"] = json!("");
        assert_eq!(
            texts(
                WebhookConfiguration::new("ValidatingWebhookConfiguration")
                    .validate_create(&json!({"webhooks": [empty]}))
            ),
            vec!["webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun"]
        );
        let mut svc = hook();
        svc["clientConfig"] = json!({"service": {"port": 0, "path": "foo"}});
        assert_eq!(
            texts(WebhookConfiguration::new("ValidatingWebhookConfiguration").validate_create(&json!({"webhooks": [svc]}))),
            vec![
                "webhooks[0].clientConfig.service.name: Required value: service name is required",
                "webhooks[0].clientConfig.service.namespace: Required value: service namespace is required",
                "webhooks[0].clientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive",
                r#"webhooks[0].clientConfig.service.path: Invalid value: "foo": must start with a '/'"#,
            ]
        );
    }

    #[test]
    fn updates_keep_what_the_stored_object_already_breaks() {
        let mut old_hook = hook();
        old_hook["sideEffects"] = json!("Some");
        let old = json!({"webhooks": [old_hook.clone()]});
        let s = WebhookConfiguration::new("ValidatingWebhookConfiguration");
        assert!(s.validate_update(&old, &old).is_empty());
        assert_eq!(
            texts(s.validate_create(&old)),
            vec![r#"webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun""#]
        );
        let mut new = old.clone();
        new["webhooks"][0]["sideEffects"] = json!("Maybe");
        assert_eq!(
            texts(s.validate_update(&new, &old)),
            vec![
                r#"webhooks[0].sideEffects: Unsupported value: "Maybe": supported values: "None", "NoneOnDryRun", "Some", "Unknown""#
            ]
        );
    }

    #[test]
    fn match_conditions_must_compile() {
        let mut h = hook();
        h["matchConditions"] = json!([{"name": "broken", "expression": "object.metadata.name =="}]);
        let cfg = json!({"webhooks": [h]});
        let s = WebhookConfiguration::new("ValidatingWebhookConfiguration");
        let got = texts(s.validate_create(&cfg));
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(
            got[0].starts_with(
                r#"webhooks[0].matchConditions[0].expression: Invalid value: "object.metadata.name ==": compilation failed: ERROR: <input>:1:"#
            ),
            "{got:?}"
        );
    }
}
