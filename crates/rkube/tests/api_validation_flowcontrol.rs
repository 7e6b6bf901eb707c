//! Defaulting and validation of API Priority and Fairness objects
//! (`flowcontrol.apiserver.k8s.io/v1` FlowSchema and
//! PriorityLevelConfiguration) through the real kubectl: invalid objects are
//! refused with upstream's 422 (`The <Kind> "<name>" is invalid: …`, exit 1)
//! and nothing is stored; upstream's v1 defaults show in `kubectl get -o json`.

mod api_common;
mod support;

use api_common::{apply, apply_fails, assert_lines, assert_nothing_stored, ok};
use serde_json::{json, Value};
use support::TestServer;

fn get_json(s: &TestServer, args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    serde_json::from_str(&ok(s, &all)).expect("json")
}

const FLOW_SCHEMA: &str = "apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: x
spec:
  priorityLevelConfiguration:
    name: workload
  distinguisherMethod:
    type: ByUser
  rules:
  - subjects:
    - kind: ServiceAccount
      serviceAccount:
        name: builder
        namespace: ci
    resourceRules:
    - verbs: [get, list]
      apiGroups: [\"\"]
      resources: [pods]
      namespaces: [\"*\"]
    nonResourceRules:
    - verbs: [\"*\"]
      nonResourceURLs: [/healthz, /apis/*]
";

const PRIORITY_LEVEL: &str = "apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata:
  name: x
spec:
  type: Limited
  limited:
    limitResponse:
      type: Queue
      queuing: {}
";

#[test]
fn invalid_flow_schemas_are_refused_with_upstreams_messages() {
    let s = TestServer::start();
    let bad = FLOW_SCHEMA
        .replace("    name: workload\n", "    name: \"\"\n")
        .replace("type: ByUser", "type: ByPod")
        .replace("        namespace: ci\n", "")
        .replace("verbs: [get, list]", "verbs: [\"*\", get]")
        .replace("/healthz", "healthz")
        .replace("spec:\n", "spec:\n  matchingPrecedence: 10001\n");
    let err = apply_fails(&s, &bad);
    assert_lines(
        &err,
        &[
            "The FlowSchema \"x\" is invalid: \n",
            "* spec.matchingPrecedence: Invalid value: 10001: must not be greater than 10000",
            "* spec.distinguisherMethod.type: Unsupported value: flowcontrol.FlowDistinguisherMethod{Type:\"ByPod\"}: supported values: \"ByNamespace\", \"ByUser\"",
            "* spec.priorityLevelConfiguration.name: Required value: must reference a priority level",
            "* spec.rules[0].subjects[0].serviceAccount.namespace: Required value: must specify namespace for service account",
            "* spec.rules[0].resourceRules[0].verbs: Invalid value: []string{\"*\", \"get\"}: if '*' is present, must not specify other verbs",
            "* spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: \"healthz\": must start with slash",
        ],
    );
    let err = apply_fails(&s, &FLOW_SCHEMA.replace("spec:\n", "spec:\n  matchingPrecedence: 1\n"));
    assert_lines(
        &err,
        &["The FlowSchema \"x\" is invalid: spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1"],
    );
    assert_nothing_stored(&s, "flowschemas");
}

/// Part of conformance "Priority and Fairness FlowSchema API" (create, get).
#[test]
fn valid_flow_schemas_are_stored_with_v1_defaults() {
    let s = TestServer::start();
    apply(&s, FLOW_SCHEMA);
    let fs = get_json(&s, &["flowschema", "x"]);
    assert_eq!(fs["spec"]["matchingPrecedence"], 1000);
    assert_eq!(fs["spec"]["rules"][0]["resourceRules"][0]["namespaces"], json!(["*"]));
}

#[test]
fn invalid_priority_levels_are_refused_with_upstreams_messages() {
    let s = TestServer::start();
    let bad = PRIORITY_LEVEL
        .replace("  limited:\n", "  exempt: {}\n  limited:\n    lendablePercent: 101\n    borrowingLimitPercent: -1\n")
        .replace("queuing: {}", "queuing: {queues: 4, handSize: 5}");
    let err = apply_fails(&s, &bad);
    assert_lines(
        &err,
        &[
            "The PriorityLevelConfiguration \"x\" is invalid: \n",
            "* spec.exempt: Forbidden: must be nil if the type is Limited",
            "* spec.limited.limitResponse.queuing.handSize: Invalid value: 5: should not be greater than queues (4)",
            "* spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive",
            "* spec.limited.borrowingLimitPercent: Invalid value: -1: if specified, must be a non-negative integer",
        ],
    );
    let err = apply_fails(&s, &PRIORITY_LEVEL.replace("type: Limited", "type: Exempt"));
    assert_lines(
        &err,
        &[
            "* spec.type: Invalid value: \"Exempt\": type must be 'Exempt' if and only if name is 'exempt'",
            "* spec.limited: Forbidden: must be nil if the type is not Limited",
        ],
    );
    assert_nothing_stored(&s, "prioritylevelconfigurations");
}

/// Part of conformance "Priority and Fairness PriorityLevelConfiguration API"
/// (create, get).
#[test]
fn valid_priority_levels_are_stored_with_v1_defaults() {
    let s = TestServer::start();
    apply(&s, PRIORITY_LEVEL);
    let pl = get_json(&s, &["prioritylevelconfiguration", "x"]);
    assert_eq!(
        pl["spec"]["limited"],
        json!({"nominalConcurrencyShares": 30, "lendablePercent": 0,
            "limitResponse": {"type": "Queue", "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}}})
    );
    assert_eq!(pl["status"], json!({}));
}

/// Part of conformance "Priority and Fairness FlowSchema API" (the status
/// subresource): `/status` changes only the status; the spec stays stored.
#[test]
fn flow_schema_status_subresource_keeps_the_spec() {
    let s = TestServer::start();
    apply(&s, FLOW_SCHEMA);
    let patch = r#"{"spec":{"matchingPrecedence":7},"status":{"conditions":[{"type":"Dangling","status":"False"}]}}"#;
    ok(&s, &["patch", "flowschema", "x", "--subresource=status", "--type=merge", "-p", patch]);
    let fs = get_json(&s, &["flowschema", "x"]);
    assert_eq!(fs["spec"]["matchingPrecedence"], 1000);
    assert_eq!(fs["status"]["conditions"][0]["type"], "Dangling");
}
