//! Defaulting and validation of the admission configuration kinds
//! (`admissionregistration.k8s.io/v1` ValidatingAdmissionPolicy, its
//! bindings, and webhook match conditions) through the real kubectl:
//! invalid objects are refused with upstream's 422 (kubectl prints `The
//! <Kind> "<name>" is invalid: …`), CEL that does not compile included,
//! and nothing is stored; defaults show in `kubectl get -o json`.

mod api_common;
mod support;

use api_common::{apply, apply_fails, assert_lines, assert_nothing_stored, ok};
use support::TestServer;

const POLICY: &str = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: replicas
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [apps]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [deployments]
  validations:
  - expression: object.spec.replicas <= 5
";

#[test]
fn policies_default_and_their_cel_must_compile() {
    let s = TestServer::start();
    apply(&s, POLICY);
    let spec: serde_json::Value =
        serde_json::from_str(&ok(&s, &["get", "validatingadmissionpolicy", "replicas", "-o", "jsonpath={.spec}"]))
            .unwrap();
    assert_eq!(spec["failurePolicy"], "Fail");
    assert_eq!(spec["matchConstraints"]["matchPolicy"], "Equivalent");
    assert_eq!(spec["matchConstraints"]["namespaceSelector"], serde_json::json!({}));
    assert_eq!(spec["matchConstraints"]["resourceRules"][0]["scope"], "*");

    let broken = POLICY.replace("name: replicas", "name: broken").replace("<= 5", "<=");
    let err = apply_fails(&s, &broken);
    assert_lines(
        &err,
        &[
            "The ValidatingAdmissionPolicy \"broken\" is invalid: spec.validations[0].expression: Invalid value: \"object.spec.replicas <=\": compilation failed: ERROR: <input>:1:24: Syntax error: mismatched input '<EOF>' expecting",
        ],
    );
    let empty = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: empty
spec:
  failurePolicy: Sometimes
  matchConstraints: {}
";
    let err = apply_fails(&s, empty);
    assert_lines(
        &err,
        &[
            "The ValidatingAdmissionPolicy \"empty\" is invalid: \n",
            "* spec.failurePolicy: Unsupported value: \"Sometimes\": supported values: \"Fail\", \"Ignore\"",
            "* spec.matchConstraints.resourceRules: Required value",
            "* spec.validations: Required value: validations or auditAnnotations must contain at least one item",
            "* spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item",
        ],
    );
    let names: Vec<String> =
        ok(&s, &["get", "validatingadmissionpolicies", "-o", "name"]).lines().map(String::from).collect();
    assert_eq!(names, ["validatingadmissionpolicy.admissionregistration.k8s.io/replicas"]);
}

/// Conformance: "Validating Admission webhook, reject validating webhook
/// configurations with invalid matchConditions".
#[test]
fn binding_resource_rules_and_webhook_match_conditions_are_checked() {
    let s = TestServer::start();
    let binding = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: b
spec:
  policyName: replicas
  validationActions: [Deny]
  matchResources:
    resourceRules:
    - apiGroups: [apps]
      apiVersions: [v1]
      resources: [deployments]
      resourceNames: [web, web]
";
    let err = apply_fails(&s, binding);
    // Upstream's field path is spelled `matchResouces`.
    assert_lines(
        &err,
        &[
            "The ValidatingAdmissionPolicyBinding \"b\" is invalid: \n",
            "* spec.matchResouces.resourceRules[0].resourceNames[1]: Duplicate value: \"web\"",
            "* spec.matchResouces.resourceRules[0].operations: Required value",
        ],
    );
    assert_nothing_stored(&s, "validatingadmissionpolicybindings");

    let webhook = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: w
webhooks:
- name: w.rkube.test
  clientConfig:
    url: https://127.0.0.1:9443/validate
  rules:
  - operations: [CREATE]
    apiGroups: ['']
    apiVersions: [v1]
    resources: [configmaps]
  matchConditions:
  - name: broken
    expression: \"request.name.startsWith(\"
  sideEffects: None
  admissionReviewVersions: [v1]
";
    let err = apply_fails(&s, webhook);
    assert_lines(
        &err,
        &[
            "The ValidatingWebhookConfiguration \"w\" is invalid: webhooks[0].matchConditions[0].expression: Invalid value: \"request.name.startsWith(\": compilation failed: ERROR: <input>:1:25: Syntax error:",
        ],
    );
    assert_nothing_stored(&s, "validatingwebhookconfigurations");
}
