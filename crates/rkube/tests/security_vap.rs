//! ValidatingAdmissionPolicy end to end, through the real kubectl: a
//! policy `object.spec.replicas <= 5` bound with `Deny` refuses a
//! 6-replica Deployment with upstream's message and status (422 Invalid,
//! `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy '<p>'
//! with binding '<b>' denied request: failed expression: …`); a `Warn`
//! binding lets the write through with upstream's warning; params come
//! from a ConfigMap named by the binding's `paramRef`.
//!
//! Expected texts are upstream's (k8s.io/apiserver
//! `pkg/admission/plugin/policy/validating/dispatcher.go` and
//! `validator.go`).

mod api_common;
mod support;

use std::time::{Duration, Instant};

use api_common::{apply, assert_lines, fails, ok, request};
use serde_json::json;
use support::TestServer;

const REPLICA_LIMIT: &str = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: replica-limit
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [apps]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [deployments]
  validations:
  - expression: object.spec.replicas <= 5
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: replica-limit-binding
spec:
  policyName: replica-limit
  validationActions: [Deny]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: replica-advice
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [apps]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [deployments]
  validations:
  - expression: object.spec.replicas <= 3
    message: three replicas are plenty
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: replica-advice-binding
spec:
  policyName: replica-advice
  validationActions: [Warn]
";

const PARAMETERIZED: &str = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: replica-max
spec:
  paramKind:
    apiVersion: v1
    kind: ConfigMap
  matchConstraints:
    resourceRules:
    - apiGroups: [apps]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [deployments]
  variables:
  - name: maxReplicas
    expression: int(params.data.maxReplicas)
  validations:
  - expression: object.spec.replicas <= variables.maxReplicas
    messageExpression: \"'replicas must be at most ' + params.data.maxReplicas\"
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: replica-max-binding
spec:
  policyName: replica-max
  validationActions: [Deny]
  paramRef:
    name: limits
    namespace: default
    parameterNotFoundAction: Deny
  matchResources:
    namespaceSelector:
      matchLabels:
        limits: enforced
";

/// Retries `f` until it holds (policies are read through the watch cache,
/// as upstream's informers: a moment behind the write).
fn eventually(what: &str, f: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Conformance: "ValidatingAdmissionPolicy" (should validate against a Deployment).
#[test]
fn a_deny_binding_refuses_and_a_warn_binding_warns() {
    let s = TestServer::start();
    apply(&s, REPLICA_LIMIT);
    let denial = "ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-binding' denied request: failed expression: object.spec.replicas <= 5";
    eventually("the policy to deny", || {
        let out = s.kubectl(&["create", "deployment", "web", "--image=nginx", "--replicas=6"]);
        String::from_utf8_lossy(&out.stderr).contains(denial)
    });
    let err = fails(&s, &["create", "deployment", "web", "--image=nginx", "--replicas=6"]);
    assert_lines(&err, &[&format!("deployments.apps \"web\" is forbidden: {denial}")]);
    assert!(!s.kubectl(&["get", "deployment", "web"]).status.success(), "nothing stored");

    // The Status as upstream builds it: Forbidden's message and details,
    // then the validation's reason (Invalid by default) and its code.
    let body = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 6, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}});
    let reply = request(
        &s,
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        &[("Content-Type", "application/json")],
        body.to_string().as_bytes(),
    );
    let status = reply.json();
    assert_eq!(status["code"], 422);
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(status["message"], format!("deployments.apps \"web\" is forbidden: {denial}"));
    assert_eq!(
        status["details"],
        json!({"name": "web", "group": "apps", "kind": "deployments",
               "causes": [{"message": format!("ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-binding' denied request: failed expression: object.spec.replicas <= 5")}]})
    );

    // Warn: the write succeeds and kubectl shows upstream's warning.
    let out = s.kubectl(&["create", "deployment", "web", "--image=nginx", "--replicas=4"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_lines(
        &String::from_utf8_lossy(&out.stderr),
        &["Warning: Validation failed for ValidatingAdmissionPolicy 'replica-advice' with binding 'replica-advice-binding': three replicas are plenty"],
    );
    // Updates are checked too (kubectl scale patches the scale subresource,
    // which the policy's rules do not name; edit the object instead).
    let err = fails(&s, &["patch", "deployment", "web", "-p", r#"{"spec":{"replicas":7}}"#]);
    assert_lines(&err, &[denial]);
    assert_eq!(ok(&s, &["get", "deployment", "web", "-o", "jsonpath={.spec.replicas}"]), "4");
}

/// Conformance: "ValidatingAdmissionPolicy" (should allow expressions to refer variables).
#[test]
fn params_come_from_the_configmap_the_binding_names() {
    let s = TestServer::start();
    ok(&s, &["create", "namespace", "limited"]);
    ok(&s, &["label", "namespace", "limited", "limits=enforced"]);
    apply(&s, PARAMETERIZED);

    // No params yet: parameterNotFoundAction Deny refuses, as a configuration error.
    let missing = "ValidatingAdmissionPolicy 'replica-max' with binding 'replica-max-binding' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction";
    eventually("the binding to need params", || {
        let out = s.kubectl(&["create", "deployment", "a", "-n", "limited", "--image=nginx", "--replicas=1"]);
        String::from_utf8_lossy(&out.stderr).contains(missing)
    });

    ok(&s, &["create", "configmap", "limits", "-n", "default", "--from-literal=maxReplicas=2"]);
    let over = "deployments.apps \"a\" is forbidden: ValidatingAdmissionPolicy 'replica-max' with binding 'replica-max-binding' denied request: replicas must be at most 2";
    eventually("the params to apply", || {
        let out = s.kubectl(&["create", "deployment", "a", "-n", "limited", "--image=nginx", "--replicas=3"]);
        String::from_utf8_lossy(&out.stderr).contains(over)
    });
    // reason Forbidden gives 403.
    let body = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "a"}},
                 "template": {"metadata": {"labels": {"app": "a"}},
                              "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}});
    let reply = request(
        &s,
        "POST",
        "/apis/apps/v1/namespaces/limited/deployments",
        &[("Content-Type", "application/json")],
        body.to_string().as_bytes(),
    );
    assert_eq!((reply.json()["code"].clone(), reply.json()["reason"].clone()), (json!(403), json!("Forbidden")));

    // Within the limit, and outside the selected namespaces, writes pass.
    ok(&s, &["create", "deployment", "b", "-n", "limited", "--image=nginx", "--replicas=2"]);
    ok(&s, &["create", "deployment", "c", "-n", "default", "--image=nginx", "--replicas=3"]);
    // Raising the limit in the ConfigMap takes effect.
    ok(&s, &["patch", "configmap", "limits", "-n", "default", "-p", r#"{"data":{"maxReplicas":"4"}}"#]);
    eventually("the new limit", || {
        s.kubectl(&["create", "deployment", "a", "-n", "limited", "--image=nginx", "--replicas=3"]).status.success()
    });
}
