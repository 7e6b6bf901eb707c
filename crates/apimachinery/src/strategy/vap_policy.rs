//! ValidatingAdmissionPolicy of `admissionregistration.k8s.io/v1`
//! (upstream `pkg/apis/admissionregistration/validation`
//! `validateValidatingAdmissionPolicySpec`, and the v1 defaults
//! `SetDefaults_ValidatingAdmissionPolicySpec` / `SetDefaults_MatchResources`):
//!
//! * `spec.failurePolicy` (default `Fail`) is `Fail` or `Ignore`;
//! * `spec.paramKind` names an `apiVersion` and a `kind`;
//! * `spec.matchConstraints` is required, valid, with at least one
//!   resource rule;
//! * match conditions, variables, validations and audit annotations are
//!   well formed and their expressions compile as CEL ([`crate::cel`]:
//!   syntax, every function called declared in Kubernetes' CEL environment
//!   — quantity, url, ip/cidr, format, authorizer… — and every variable
//!   one of `object`, `oldObject`, `request`, `namespaceObject`,
//!   `variables`, `authorizer` and, with a `paramKind`, `params`; the rest
//!   of cel-go's type checks, field and type errors, are not modelled).
//!
//! On update, match conditions are not checked again when unchanged.

use std::collections::HashSet;

use serde_json::{json, Value};

use super::admission::{validate_cel_with, validate_match_conditions};
use super::vap::{default_match_resources, validate_match_resources};
use super::{generic, Generic, Strategy};
use crate::errors::StatusCause;
use crate::validation::{is_dns1035_label, is_dns1123_subdomain, is_qualified_name, ErrorList, FieldError, Path};

const FAILURE_POLICIES: [&str; 2] = ["Fail", "Ignore"];
/// Upstream's `supportedValidationPolicyReason`, sorted.
const REASONS: [&str; 4] = ["Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized"];
/// Most audit annotations a policy may have.
const MAX_AUDIT_ANNOTATIONS: usize = 20;
/// Longest audit annotation valueExpression, in bytes.
const MAX_VALUE_EXPRESSION: usize = 5 * 1024;
/// Words CEL reserves, which variable names may not be.
const CEL_RESERVED: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// The strategy of ValidatingAdmissionPolicy.
#[derive(Clone, Debug)]
pub struct Policy {
    flags: Generic,
}

impl Policy {
    /// The strategy with upstream's flags for the kind (status subresource,
    /// generation tracking).
    #[allow(clippy::new_without_default)]
    pub fn new() -> Policy {
        Policy { flags: generic::for_builtin("admissionregistration.k8s.io", "ValidatingAdmissionPolicy", true) }
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

/// `isCELIdentifier`.
fn is_cel_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c == '_' || c.is_ascii_alphabetic());
    first_ok && chars.all(|c| c == '_' || c.is_ascii_alphanumeric()) && !CEL_RESERVED.contains(&name)
}

/// `validateParamKind`.
fn validate_param_kind(pk: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let api_version = str_of(pk, "apiVersion");
    let av_path = path.child("apiVersion");
    if api_version.is_empty() {
        errs.push(FieldError::required(&av_path, ""));
    } else if api_version.matches('/').count() > 1 {
        errs.push(FieldError::invalid(
            &av_path,
            api_version,
            &format!("unexpected GroupVersion string: {api_version}"),
        ));
    } else {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        if !group.is_empty() {
            let m = is_dns1123_subdomain(group);
            if !m.is_empty() {
                errs.push(FieldError::invalid(&av_path, group, &m.join(",")));
            }
        }
        if version.is_empty() {
            errs.push(FieldError::invalid(&av_path, api_version, "version must be specified"));
        } else {
            let m = is_dns1035_label(version);
            if !m.is_empty() {
                errs.push(FieldError::invalid(&av_path, version, &m.join(",")));
            }
        }
    }
    let kind = str_of(pk, "kind");
    if kind.is_empty() {
        errs.push(FieldError::required(&path.child("kind"), ""));
    } else {
        let m = is_dns1035_label(&kind.to_lowercase());
        if !m.is_empty() {
            let detail = format!("may have mixed case, but should otherwise match: {}", m.join(","));
            errs.push(FieldError::invalid(&path.child("kind"), kind, &detail));
        }
    }
    errs
}

/// The variables a policy's expressions may use (upstream's composited
/// environment: `params` only with a `paramKind`).
fn declared_variables(has_params: bool) -> Vec<&'static str> {
    let mut vars = vec!["object", "oldObject", "request", "namespaceObject", "variables", "authorizer"];
    if has_params {
        vars.push("params");
    }
    vars
}

/// `validateVariable`.
fn validate_variable(v: &Value, path: &Path, vars: &[&str]) -> ErrorList {
    let mut errs = ErrorList::new();
    let name = str_of(v, "name");
    if name.trim().is_empty() {
        errs.push(FieldError::required(&path.child("name"), "name is not specified"));
    } else if !is_cel_identifier(name) {
        errs.push(FieldError::invalid(&path.child("name"), name, "name is not a valid CEL identifier"));
    }
    let expression = str_of(v, "expression");
    if expression.trim().is_empty() {
        errs.push(FieldError::required(&path.child("expression"), "expression is not specified"));
    } else {
        errs.extend(validate_cel_with(expression, &path.child("expression"), vars));
    }
    errs
}

/// `validateValidation`.
fn validate_validation(v: &Value, path: &Path, vars: &[&str]) -> ErrorList {
    let mut errs = ErrorList::new();
    let expression = str_of(v, "expression");
    if expression.trim().is_empty() {
        errs.push(FieldError::required(&path.child("expression"), "expression is not specified"));
    } else {
        errs.extend(validate_cel_with(expression, &path.child("expression"), vars));
    }
    let message_expression = str_of(v, "messageExpression");
    if !message_expression.is_empty() && message_expression.trim().is_empty() {
        errs.push(FieldError::invalid(
            &path.child("messageExpression"),
            message_expression,
            "must be non-empty if specified",
        ));
    } else if !message_expression.trim().is_empty() {
        errs.extend(validate_cel_with(message_expression, &path.child("messageExpression"), vars));
    }
    let message = str_of(v, "message");
    if !message.is_empty() && message.trim().is_empty() {
        errs.push(FieldError::invalid(&path.child("message"), message, "message must be non-empty if specified"));
    } else if message.trim().contains(['\n', '\r']) {
        errs.push(FieldError::invalid(&path.child("message"), message, "message must not contain line breaks"));
    }
    if let Some(reason) = v.get("reason").and_then(Value::as_str) {
        if !REASONS.contains(&reason) {
            errs.push(FieldError::not_supported(&path.child("reason"), reason, &REASONS));
        }
    }
    errs
}

/// `validateAuditAnnotation` for the policy named `name`.
fn validate_audit_annotation(name: &str, a: &Value, path: &Path, vars: &[&str]) -> ErrorList {
    let mut errs = ErrorList::new();
    let key = str_of(a, "key");
    if name.is_empty() {
        errs.push(FieldError::invalid(&path.child("key"), key, "requires metadata.name be non-empty"));
    } else {
        let qualified = format!("{name}/{key}");
        for m in is_qualified_name(&qualified) {
            errs.push(FieldError::invalid(&path.child("key"), qualified.as_str(), &m));
        }
    }
    let value = str_of(a, "valueExpression");
    let trimmed = value.trim();
    let vp = path.child("valueExpression");
    if trimmed.is_empty() {
        errs.push(FieldError::required(&vp, "valueExpression is not specified"));
    } else if trimmed.len() > MAX_VALUE_EXPRESSION {
        errs.push(FieldError::required(&vp, &format!("must not exceed {MAX_VALUE_EXPRESSION} bytes in length")));
    } else if let Err(e) = crate::cel::Expression::compile_with_variables(trimmed, vars) {
        errs.push(FieldError::invalid(&vp, value, &e));
    }
    errs
}

/// `validateValidatingAdmissionPolicySpec`; `check_conditions` is false on
/// an update that keeps the match conditions.
pub fn validate_policy(obj: &Value, check_conditions: bool) -> ErrorList {
    let mut errs = ErrorList::new();
    let null = Value::Null;
    let spec = obj.get("spec").unwrap_or(&null);
    let p = Path::new("spec");
    match spec.get("failurePolicy").and_then(Value::as_str) {
        None => errs.push(FieldError::required(&p.child("failurePolicy"), "")),
        Some(f) if !FAILURE_POLICIES.contains(&f) => {
            errs.push(FieldError::not_supported(&p.child("failurePolicy"), f, &FAILURE_POLICIES))
        }
        _ => {}
    }
    let param_kind = spec.get("paramKind").filter(|v| !v.is_null());
    if let Some(pk) = param_kind {
        errs.extend(validate_param_kind(pk, &p.child("paramKind")));
    }
    let vars = declared_variables(param_kind.is_some());
    match spec.get("matchConstraints").filter(|v| !v.is_null()) {
        None => errs.push(FieldError::required(&p.child("matchConstraints"), "")),
        Some(mc) => {
            errs.extend(validate_match_resources(Some(mc), &p.child("matchConstraints")));
            if list(mc, "resourceRules").is_empty() {
                errs.push(FieldError::required(&p.child("matchConstraints").child("resourceRules"), ""));
            }
        }
    }
    if check_conditions {
        errs.extend(validate_match_conditions(list(spec, "matchConditions"), &p.child("matchConditions"), &vars));
    }
    for (i, v) in list(spec, "variables").iter().enumerate() {
        errs.extend(validate_variable(v, &p.child("variables").index(i), &vars));
    }
    let validations = list(spec, "validations");
    let annotations = list(spec, "auditAnnotations");
    if validations.is_empty() && annotations.is_empty() {
        const NEED: &str = "validations or auditAnnotations must contain at least one item";
        errs.push(FieldError::required(&p.child("validations"), NEED));
        errs.push(FieldError::required(&p.child("auditAnnotations"), NEED));
        return errs;
    }
    for (i, v) in validations.iter().enumerate() {
        errs.extend(validate_validation(v, &p.child("validations").index(i), &vars));
    }
    if annotations.len() > MAX_AUDIT_ANNOTATIONS {
        errs.push(FieldError::invalid(
            &p.child("auditAnnotations"),
            crate::validation::BadValue::Raw(format!("{} auditAnnotations", annotations.len())),
            &format!("must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations"),
        ));
    }
    let name = crate::meta::name(obj);
    let mut keys = HashSet::new();
    for (i, a) in annotations.iter().enumerate() {
        let ap = p.child("auditAnnotations").index(i);
        errs.extend(validate_audit_annotation(name, a, &ap, &vars));
        let key = str_of(a, "key");
        if !keys.insert(key) {
            errs.push(FieldError::duplicate(&ap.child("key"), key));
        }
    }
    errs
}

impl Strategy for Policy {
    /// v1 `SetDefaults_ValidatingAdmissionPolicySpec` (failurePolicy
    /// `Fail`) and `SetDefaults_MatchResources` on `matchConstraints`.
    fn default(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
        if spec.get("failurePolicy").is_none_or(Value::is_null) {
            spec.insert("failurePolicy".into(), json!("Fail"));
        }
        if let Some(mc) = spec.get_mut("matchConstraints").and_then(Value::as_object_mut) {
            default_match_resources(mc);
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        validate_policy(obj, true).to_causes()
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        let same = new.pointer("/spec/matchConditions") == old.pointer("/spec/matchConditions");
        validate_policy(new, !same).to_causes()
    }

    fn has_status_subresource(&self) -> bool {
        self.flags.has_status
    }

    fn tracks_generation(&self) -> bool {
        self.flags.tracks_generation
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::cause_texts;

    fn policy(spec: Value) -> Value {
        let mut obj = json!({"metadata": {"name": "p.example.com"}, "spec": spec});
        Policy::new().default(&mut obj);
        obj
    }

    fn rules() -> Value {
        json!({"resourceRules": [{"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}]})
    }

    #[test]
    fn defaults_and_a_valid_policy() {
        let obj =
            policy(json!({"matchConstraints": rules(), "validations": [{"expression": "object.spec.replicas <= 5"}]}));
        assert_eq!(obj["spec"]["failurePolicy"], "Fail");
        assert_eq!(obj["spec"]["matchConstraints"]["matchPolicy"], "Equivalent");
        assert_eq!(obj["spec"]["matchConstraints"]["resourceRules"][0]["scope"], "*");
        assert!(Policy::new().validate_create(&obj).is_empty());
    }

    #[test]
    fn required_parts() {
        let obj = policy(json!({"matchConstraints": {}}));
        assert_eq!(
            cause_texts(Policy::new().validate_create(&obj)),
            vec![
                "spec.matchConstraints.resourceRules: Required value",
                "spec.validations: Required value: validations or auditAnnotations must contain at least one item",
                "spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item",
            ]
        );
    }

    #[test]
    fn expressions_names_reasons_and_params() {
        let obj = policy(json!({
            "failurePolicy": "Sometimes",
            "paramKind": {"apiVersion": "a/b/c", "kind": ""},
            "matchConstraints": rules(),
            "variables": [{"name": "in", "expression": "1"}],
            "validations": [
                {"expression": "object.spec ==", "reason": "Teapot"},
                {"expression": "true", "message": "two\nlines", "messageExpression": " "},
            ],
            "auditAnnotations": [{"key": "k", "valueExpression": "'x'"}, {"key": "k", "valueExpression": ""}],
        }));
        let got = cause_texts(Policy::new().validate_create(&obj));
        let want_prefix = [
            "spec.failurePolicy: Unsupported value: \"Sometimes\": supported values: \"Fail\", \"Ignore\"",
            "spec.paramKind.apiVersion: Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c",
            "spec.paramKind.kind: Required value",
            "spec.variables[0].name: Invalid value: \"in\": name is not a valid CEL identifier",
        ];
        assert_eq!(&got[..4], &want_prefix, "{got:#?}");
        assert!(got[4].starts_with("spec.validations[0].expression: Invalid value: \"object.spec ==\": compilation failed: ERROR: <input>:1:"), "{got:#?}");
        assert_eq!(
            &got[5..],
            &[
                "spec.validations[0].reason: Unsupported value: \"Teapot\": supported values: \"Forbidden\", \"Invalid\", \"RequestEntityTooLarge\", \"Unauthorized\"",
                "spec.validations[1].messageExpression: Invalid value: \" \": must be non-empty if specified",
                "spec.validations[1].message: Invalid value: \"two\\nlines\": message must not contain line breaks",
                "spec.auditAnnotations[1].valueExpression: Required value: valueExpression is not specified",
                "spec.auditAnnotations[1].key: Duplicate value: \"k\"",
            ],
            "{got:#?}"
        );
    }

    #[test]
    fn kubernetes_cel_libraries_compile_and_unknown_functions_do_not() {
        let ok = policy(json!({"matchConstraints": rules(), "validations": [
            {"expression": "quantity(object.spec.template.spec.containers[0].resources.limits.memory).isLessThan(quantity('1Gi'))"},
            {"expression": "isURL(object.metadata.annotations['docs'])"},
            {"expression": "authorizer.group('apps').resource('deployments').check('create').allowed()"},
            {"expression": "authorizer.requestResource.check('update').allowed()"},
        ]}));
        assert!(Policy::new().validate_create(&ok).is_empty(), "{:?}", cause_texts(Policy::new().validate_create(&ok)));
        let no_params = policy(json!({"matchConstraints": rules(), "validations": [{"expression": "params.x == 1"}]}));
        assert_eq!(
            cause_texts(Policy::new().validate_create(&no_params)),
            vec!["spec.validations[0].expression: Invalid value: \"params.x == 1\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'params' (in container '')\n | params.x == 1\n | ^"]
        );
        let bad = policy(json!({"matchConstraints": rules(), "validations": [{"expression": "quantityx('1') == 1"}]}));
        assert_eq!(
            cause_texts(Policy::new().validate_create(&bad)),
            vec!["spec.validations[0].expression: Invalid value: \"quantityx('1') == 1\": compilation failed: ERROR: <input>:1:10: undeclared reference to 'quantityx' (in container '')\n | quantityx('1') == 1\n | .........^"]
        );
    }

    #[test]
    fn unchanged_match_conditions_are_not_checked_on_update() {
        let mut old = policy(json!({"matchConstraints": rules(), "validations": [{"expression": "true"}]}));
        old["spec"]["matchConditions"] = json!([{"name": "bad name!", "expression": "true"}]);
        let s = Policy::new();
        assert!(!s.validate_create(&old).is_empty());
        assert!(s.validate_update(&old, &old).is_empty());
    }
}
