//! Admission of deletes and of the subresources that are answered rather
//! than stored, through the real kubectl and a ValidatingAdmissionPolicy:
//!
//! - warnings admission leaves on DELETE and deletecollection reach the
//!   client (`Warning: …` from kubectl), as for create/update/patch;
//! - `pods/eviction`, `pods/binding` and `serviceaccounts/token` are
//!   admitted as a CREATE of the subresource with the Eviction / Binding /
//!   TokenRequest as the object (upstream's EvictionREST, BindingREST and
//!   TokenREST call the validating admission with it), so a policy
//!   matching them sees and can refuse them.
//!
//! Expected texts are upstream's (k8s.io/apiserver
//! `pkg/admission/plugin/policy/validating/dispatcher.go`).

mod api_common;
mod support;

use std::time::{Duration, Instant};

use api_common::{apply, assert_lines, ok};
use support::TestServer;

/// Warns on every configmap delete.
const WARN_ON_DELETE: &str = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: delete-advice
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ['']
      apiVersions: [v1]
      operations: [DELETE]
      resources: [configmaps]
  validations:
  - expression: 'false'
    message: configmaps are better kept
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: delete-advice-binding
spec:
  policyName: delete-advice
  validationActions: [Warn]
";

/// Refuses evictions of pods labelled `protected=true` (the policy reads
/// the Eviction's name and the request's subresource) and tokens asked
/// for longer than an hour.
const GUARD_SUBRESOURCES: &str = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: no-eviction
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: ['']
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods/eviction]
  validations:
  - expression: request.subResource == 'eviction' && object.kind == 'Eviction' && object.metadata.name != 'keep'
    message: this pod stays
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: no-eviction-binding
spec:
  policyName: no-eviction
  validationActions: [Deny]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: short-tokens
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: ['']
      apiVersions: [v1]
      operations: [CREATE]
      resources: [serviceaccounts/token]
  validations:
  - expression: object.spec.expirationSeconds <= 3600
    message: tokens live an hour at most
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: short-tokens-binding
spec:
  policyName: short-tokens
  validationActions: [Deny]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: no-bad-node
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: ['']
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods/binding]
  validations:
  - expression: object.kind == 'Binding' && object.target.name != 'bad-node'
    message: not on that node
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: no-bad-node-binding
spec:
  policyName: no-bad-node
  validationActions: [Deny]
";

/// Retries until kubectl's stderr contains `want` (policies are read
/// through the watch cache, a moment behind the write); panics with the
/// last output.
fn eventually(what: &str, want: &str, run: impl Fn() -> std::process::Output) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let out = run();
        let err = stderr(&out);
        if err.contains(want) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}; last stderr: {err}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const DELETE_WARNING: &str =
    "Warning: Validation failed for ValidatingAdmissionPolicy 'delete-advice' with binding 'delete-advice-binding': configmaps are better kept";

#[test]
fn warnings_of_delete_admission_reach_kubectl() {
    let s = TestServer::start();
    apply(&s, WARN_ON_DELETE);
    for name in ["probe", "one", "two", "three"] {
        ok(&s, &["create", "configmap", name, "--from-literal=k=v"]);
    }
    eventually("the policy to warn", DELETE_WARNING, || {
        s.kubectl(&["delete", "configmap", "probe", "--dry-run=server"])
    });
    let out = s.kubectl(&["delete", "configmap", "one"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_lines(&stderr(&out), &[DELETE_WARNING]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), r#"configmap "one" deleted"#);
    // deletecollection (`kubectl delete --all` sends one DELETE per object;
    // the raw collection DELETE is the API's deletecollection).
    let reply = api_common::request(&s, "DELETE", "/api/v1/namespaces/default/configmaps?labelSelector=", &[], b"");
    assert_eq!(reply.status, 200, "{}", reply.body);
    let warnings = reply.header("warning");
    assert!(warnings.iter().any(|w| w.contains("configmaps are better kept")), "{warnings:?}");
}

#[test]
fn evictions_bindings_and_token_requests_are_admitted_as_creates_of_the_subresource() {
    let s = TestServer::start();
    apply(&s, GUARD_SUBRESOURCES);
    ok(&s, &["create", "serviceaccount", "robot"]);
    for name in ["keep", "go"] {
        ok(&s, &["run", name, "--image=busybox", "--restart=Never"]);
    }
    let evict = |pod: &str| {
        let body = format!(
            r#"{{"apiVersion":"policy/v1","kind":"Eviction","metadata":{{"name":"{pod}","namespace":"default"}}}}"#
        );
        let path = s.data_dir().join(format!("evict-{pod}.json"));
        std::fs::write(&path, body).unwrap();
        s.kubectl(&[
            "create",
            "--raw",
            &format!("/api/v1/namespaces/default/pods/{pod}/eviction"),
            "-f",
            path.to_str().unwrap(),
        ])
    };
    let denial =
        "ValidatingAdmissionPolicy 'no-eviction' with binding 'no-eviction-binding' denied request: this pod stays";
    eventually("the eviction policy", denial, || evict("keep"));
    // The Status names the pod, as upstream's admission.NewForbidden on the
    // pods resource (422 Invalid: the policy's default reason).
    let body = r#"{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"keep"}}"#;
    let reply = api_common::request(
        &s,
        "POST",
        "/api/v1/namespaces/default/pods/keep/eviction",
        &[("Content-Type", "application/json")],
        body.as_bytes(),
    );
    assert_eq!(reply.status, 422, "{}", reply.body);
    assert_eq!(reply.json()["message"], format!("pods \"keep\" is forbidden: {denial}"));
    let deleting = ok(&s, &["get", "pod", "keep", "-o", "jsonpath={.metadata.deletionTimestamp}"]);
    assert!(deleting.trim().is_empty(), "a refused eviction deletes nothing");
    let out = evict("go");
    assert!(out.status.success(), "{}", stderr(&out));
    let gone = s.kubectl(&["get", "pod", "go"]);
    assert!(!gone.status.success(), "an unscheduled pod is deleted at once");

    // Bindings: the policy sees the Binding and its target.
    let bind = |node: &str| {
        let body = format!(
            r#"{{"apiVersion":"v1","kind":"Binding","metadata":{{"name":"keep"}},"target":{{"kind":"Node","name":"{node}"}}}}"#
        );
        let path = s.data_dir().join(format!("bind-{node}.json"));
        std::fs::write(&path, body).unwrap();
        s.kubectl(&["create", "--raw", "/api/v1/namespaces/default/pods/keep/binding", "-f", path.to_str().unwrap()])
    };
    let not_there =
        "ValidatingAdmissionPolicy 'no-bad-node' with binding 'no-bad-node-binding' denied request: not on that node";
    eventually("the binding policy", not_there, || bind("bad-node"));
    assert_eq!(ok(&s, &["get", "pod", "keep", "-o", "jsonpath={.spec.nodeName}"]), "");
    let out = bind("good-node");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(ok(&s, &["get", "pod", "keep", "-o", "jsonpath={.spec.nodeName}"]), "good-node");

    let refused = "serviceaccounts \"robot\" is forbidden: ValidatingAdmissionPolicy 'short-tokens' with binding 'short-tokens-binding' denied request: tokens live an hour at most";
    eventually("the token policy", refused, || s.kubectl(&["create", "token", "robot", "--duration=2h"]));
    let token = ok(&s, &["create", "token", "robot", "--duration=1h"]);
    assert_eq!(token.trim().split('.').count(), 3, "a JWT: {token}");
}
