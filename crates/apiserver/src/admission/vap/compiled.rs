//! A ValidatingAdmissionPolicy compiled for evaluation (upstream
//! `pkg/admission/plugin/policy/validating/validator.go`): its match
//! conditions, variables, validations (with message, messageExpression
//! and reason) and audit annotations, and how one evaluation turns into
//! decisions.

use std::sync::Arc;

use rkube_apimachinery::cel::authz::Binding;
use rkube_apimachinery::cel::{Composited, Expression, Outcome};
use serde_json::Value;

use crate::admission::webhook::eval_conditions_with;

/// Longest message a messageExpression may produce (upstream's
/// `MaxEvaluatedMessageExpressionSizeBytes`).
const MAX_MESSAGE_BYTES: usize = 5 * 1024;
/// Longest audit annotation value kept.
const MAX_AUDIT_VALUE: usize = 10 * 1024;

type Compiled = Result<Arc<Expression>, String>;

fn compile(source: &str) -> Compiled {
    Expression::compile(source).map(Arc::new)
}

/// One `spec.validations[i]`.
pub struct Validation {
    /// The expression.
    pub expression: Compiled,
    /// Its source, for `failed expression: …`.
    pub source: String,
    /// `message`.
    pub message: String,
    /// `messageExpression`.
    pub message_expression: Option<Compiled>,
    /// `reason` (default `Invalid`).
    pub reason: String,
}

/// A policy ready to evaluate.
pub struct Policy {
    /// `metadata.name`.
    pub name: String,
    /// `failurePolicy: Ignore` (default `Fail`).
    pub ignore_failures: bool,
    /// `spec.paramKind` as `(apiVersion, kind)`.
    pub param_kind: Option<(String, String)>,
    /// `spec.matchConstraints` as stored.
    pub match_constraints: Value,
    /// `spec.matchConditions`.
    pub conditions: Vec<(String, Compiled)>,
    /// `spec.variables`, in order.
    pub variables: Vec<(String, Compiled)>,
    /// `spec.validations`.
    pub validations: Vec<Validation>,
    /// `spec.auditAnnotations` as `(key, valueExpression)`.
    pub audit_annotations: Vec<(String, Compiled)>,
}

/// What one validation decided.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// The expression held, or failed under `failurePolicy: Ignore`.
    Admit,
    /// Refused with this message and reason.
    Deny { message: String, reason: String },
}

impl Policy {
    /// Compiles a stored policy; compile errors are kept and reported at
    /// evaluation, as upstream's validator does.
    pub fn compile(obj: &Value) -> Policy {
        let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
        let str_of = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let list = |k: &str| spec.get(k).and_then(Value::as_array).cloned().unwrap_or_default();
        let param_kind =
            spec.get("paramKind").filter(|p| p.is_object()).map(|p| (str_of(p, "apiVersion"), str_of(p, "kind")));
        Policy {
            name: rkube_apimachinery::meta::name(obj).to_string(),
            ignore_failures: spec.get("failurePolicy").and_then(Value::as_str) == Some("Ignore"),
            param_kind,
            match_constraints: spec.get("matchConstraints").cloned().unwrap_or(Value::Null),
            conditions: list("matchConditions")
                .iter()
                .map(|c| (str_of(c, "name"), compile(&str_of(c, "expression"))))
                .collect(),
            variables: list("variables")
                .iter()
                .map(|v| (str_of(v, "name"), compile(&str_of(v, "expression"))))
                .collect(),
            validations: list("validations")
                .iter()
                .map(|v| {
                    let source = str_of(v, "expression");
                    let reason = str_of(v, "reason");
                    Validation {
                        expression: compile(&source),
                        message: str_of(v, "message"),
                        message_expression: v.get("messageExpression").and_then(Value::as_str).map(compile),
                        reason: if reason.is_empty() { "Invalid".into() } else { reason },
                        source,
                    }
                })
                .collect(),
            audit_annotations: list("auditAnnotations")
                .iter()
                .map(|a| (str_of(a, "key"), compile(&str_of(a, "valueExpression"))))
                .collect(),
        }
    }

    /// The decision for a failure (compile or evaluation error) under the
    /// policy's failure policy.
    fn on_error(&self, message: String) -> Decision {
        if self.ignore_failures {
            Decision::Admit
        } else {
            Decision::Deny { message, reason: String::new() }
        }
    }

    /// Evaluates the validations with `vars` (object, oldObject, request,
    /// params, namespaceObject) and `authz` (the `authorizer` variable);
    /// returns the decisions, in order, and the audit annotations to
    /// publish (or a decision to deny for a failing annotation under
    /// `Fail`). An unmatched condition yields nothing.
    pub fn evaluate(&self, base: &[(&str, &Value)], authz: Option<&Binding>) -> (Vec<Decision>, Vec<(String, String)>) {
        let get = |n: &str| base.iter().find(|(k, _)| *k == n).map(|(_, v)| *v);
        if !self.conditions.is_empty() {
            let request = get("request").cloned().unwrap_or(Value::Null);
            let params = get("params").cloned().unwrap_or(Value::Null);
            match eval_conditions_with(&self.conditions, &request, get("object"), get("oldObject"), &params, authz) {
                Ok(true) => {}
                Ok(false) => return (Vec::new(), Vec::new()),
                Err(e) => return (vec![self.on_error(e)], Vec::new()),
            }
        }
        // Variables see the ones before them, typed (a quantity stays a
        // quantity); a failing one is left out (an expression using it then
        // fails on the missing key).
        let mut variables = Composited::new();
        for (name, expr) in &self.variables {
            if let Ok(expr) = expr {
                let _ = expr.eval_into(name, base, &mut variables, authz);
            }
        }
        let vars = base;
        let variables = Some(&variables);

        let mut decisions = Vec::new();
        for v in &self.validations {
            let expr = match &v.expression {
                Ok(e) => e,
                Err(e) => {
                    decisions.push(self.on_error(e.clone()));
                    continue;
                }
            };
            match expr.eval_in(vars, variables, authz) {
                Ok(Outcome::Bool(true)) => decisions.push(Decision::Admit),
                Ok(Outcome::Bool(false)) => decisions.push(Decision::Deny {
                    message: self.message(v, vars, variables, authz),
                    reason: v.reason.clone(),
                }),
                Ok(other) => decisions.push(self.on_error(format!(
                    "validation failed: expression '{}' resulted in a non-boolean value: {other:?}",
                    v.source
                ))),
                Err(e) => {
                    decisions.push(self.on_error(format!("expression '{}' resulted in error: {e}", v.source.trim())))
                }
            }
        }
        let mut annotations = Vec::new();
        for (key, expr) in &self.audit_annotations {
            let result = match expr {
                Ok(e) => e.eval_in(vars, variables, authz),
                Err(e) => Err(e.clone()),
            };
            match result {
                Ok(Outcome::String(s)) if !s.trim().is_empty() => {
                    let mut value = s.trim().to_string();
                    value.truncate(MAX_AUDIT_VALUE);
                    annotations.push((key.clone(), value));
                }
                Ok(Outcome::String(_)) | Ok(Outcome::Null) => {}
                Ok(other) => decisions.push(Decision::Deny {
                    message: format!(
                        "valueExpression '{}' resulted in unsupported return type: {other:?}. Return type must be either string or null.",
                        expr.as_ref().map(|e| e.source()).unwrap_or("")
                    ),
                    reason: String::new(),
                }),
                Err(e) => {
                    if !self.ignore_failures {
                        decisions.push(Decision::Deny { message: e, reason: String::new() });
                    }
                }
            }
        }
        (decisions, annotations)
    }

    /// A failed validation's message: the messageExpression's single-line
    /// string if it gives one, else `message`, else `failed expression: …`.
    fn message(
        &self,
        v: &Validation,
        vars: &[(&str, &Value)],
        variables: Option<&Composited>,
        authz: Option<&Binding>,
    ) -> String {
        if let Some(Ok(expr)) = &v.message_expression {
            if let Ok(Outcome::String(s)) = expr.eval_in(vars, variables, authz) {
                let s = s.trim();
                if !s.is_empty() && s.len() <= MAX_MESSAGE_BYTES && !s.contains('\n') {
                    return s.to_string();
                }
            }
        }
        if !v.message.trim().is_empty() {
            return v.message.trim().to_string();
        }
        format!("failed expression: {}", v.source.trim())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(spec: Value) -> Policy {
        Policy::compile(&json!({"metadata": {"name": "p"}, "spec": spec}))
    }

    fn run(p: &Policy, object: Value, params: Value) -> Vec<Decision> {
        let null = Value::Null;
        let request = json!({"operation": "CREATE"});
        p.evaluate(
            &[
                ("object", &object),
                ("oldObject", &null),
                ("request", &request),
                ("params", &params),
                ("namespaceObject", &null),
            ],
            None,
        )
        .0
    }

    #[test]
    fn messages_follow_upstream_precedence() {
        let p = policy(json!({"validations": [
            {"expression": "object.spec.replicas <= 5"},
            {"expression": "object.spec.replicas <= 4", "message": "too many"},
            {"expression": "object.spec.replicas <= 3", "message": "m",
             "messageExpression": "'replicas ' + string(object.spec.replicas) + ' > 3'", "reason": "Forbidden"},
        ]}));
        let d = run(&p, json!({"spec": {"replicas": 6}}), Value::Null);
        assert_eq!(
            d,
            vec![
                Decision::Deny {
                    message: "failed expression: object.spec.replicas <= 5".into(),
                    reason: "Invalid".into()
                },
                Decision::Deny { message: "too many".into(), reason: "Invalid".into() },
                Decision::Deny { message: "replicas 6 > 3".into(), reason: "Forbidden".into() },
            ]
        );
        assert_eq!(run(&p, json!({"spec": {"replicas": 1}}), Value::Null), vec![Decision::Admit; 3]);
    }

    #[test]
    fn params_variables_and_failure_policy() {
        let p = policy(json!({
            "variables": [{"name": "max", "expression": "int(params.data.max)"}],
            "validations": [{"expression": "object.spec.replicas <= variables.max"}]}));
        let params = json!({"data": {"max": "3"}});
        assert!(matches!(run(&p, json!({"spec": {"replicas": 4}}), params.clone())[0], Decision::Deny { .. }));
        assert_eq!(run(&p, json!({"spec": {"replicas": 3}}), params), vec![Decision::Admit]);
        let failing = policy(json!({"validations": [{"expression": "object.spec.nope > 1"}]}));
        let d = run(&failing, json!({"spec": {}}), Value::Null);
        assert!(
            matches!(&d[0], Decision::Deny { message, .. } if message.starts_with("expression 'object.spec.nope > 1' resulted in error: "))
        );
        let ignoring =
            policy(json!({"failurePolicy": "Ignore", "validations": [{"expression": "object.spec.nope > 1"}]}));
        assert_eq!(run(&ignoring, json!({"spec": {}}), Value::Null), vec![Decision::Admit]);
    }

    #[test]
    fn variables_keep_library_types() {
        let p = policy(json!({
            "variables": [{"name": "limit", "expression": "quantity('1Gi')"},
                          {"name": "over", "expression": "quantity(object.memory).isGreaterThan(variables.limit)"}],
            "validations": [{"expression": "!variables.over",
                             "messageExpression": "'over ' + string(variables.limit.asInteger())"}]}));
        assert_eq!(run(&p, json!({"memory": "512Mi"}), Value::Null), vec![Decision::Admit]);
        assert_eq!(
            run(&p, json!({"memory": "2Gi"}), Value::Null),
            vec![Decision::Deny { message: "over 1073741824".into(), reason: "Invalid".into() }]
        );
    }

    #[test]
    fn match_conditions_gate_validations() {
        let p = policy(json!({
            "matchConditions": [{"name": "only-web", "expression": "object.metadata.name == 'web'"}],
            "validations": [{"expression": "false"}]}));
        assert!(run(&p, json!({"metadata": {"name": "db"}}), Value::Null).is_empty());
        assert_eq!(run(&p, json!({"metadata": {"name": "web"}}), Value::Null).len(), 1);
    }

    #[test]
    fn audit_annotations_publish_strings_and_skip_empty_ones() {
        let p = policy(json!({"auditAnnotations": [
            {"key": "replicas", "valueExpression": "'replicas: ' + string(object.spec.replicas)"},
            {"key": "none", "valueExpression": "null"},
            {"key": "blank", "valueExpression": "'  '"},
            {"key": "number", "valueExpression": "1"},
        ]}));
        let null = Value::Null;
        let object = json!({"spec": {"replicas": 2}});
        let (decisions, published) = p.evaluate(&[("object", &object), ("oldObject", &null)], None);
        assert_eq!(published, vec![("replicas".to_string(), "replicas: 2".to_string())]);
        assert!(matches!(&decisions[..], [Decision::Deny { message, .. }]
            if message.starts_with("valueExpression '1' resulted in unsupported return type")));
    }
}
