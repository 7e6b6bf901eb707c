//! Unit tests of the flowcontrol strategy; expected texts are upstream's
//! (`pkg/apis/flowcontrol/validation`, `pkg/apis/flowcontrol/v1/defaults.go`).

use serde_json::json;

use super::*;
use crate::strategy::cause_texts as texts;

fn fs(spec: Value) -> Value {
    json!({"metadata": {"name": "fs"}, "spec": spec})
}

fn pl(name: &str, spec: Value) -> Value {
    json!({"metadata": {"name": name}, "spec": spec})
}

#[test]
fn flow_schema_defaults_and_valid() {
    let s = FlowControl::new("FlowSchema");
    let mut o = fs(json!({"priorityLevelConfiguration": {"name": "global-default"},
        "rules": [{"subjects": [{"kind": "Group", "group": {"name": "system:authenticated"}}],
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": true,
                "namespaces": ["*"]}],
            "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/apis/*"]}]}]}));
    s.default(&mut o);
    assert_eq!(o["spec"]["matchingPrecedence"], 1000);
    assert!(s.validate_create(&o).is_empty(), "{:?}", texts(s.validate_create(&o)));
}

#[test]
fn flow_schema_spec_errors() {
    let s = FlowControl::new("FlowSchema");
    let o = fs(json!({"matchingPrecedence": 10001, "distinguisherMethod": {"type": "ByFoo"},
        "priorityLevelConfiguration": {"name": ""}, "rules": [{"subjects": []}]}));
    assert_eq!(
        texts(s.validate_create(&o)),
        vec![
            "spec.matchingPrecedence: Invalid value: 10001: must not be greater than 10000",
            r#"spec.distinguisherMethod.type: Unsupported value: flowcontrol.FlowDistinguisherMethod{Type:"ByFoo"}: supported values: "ByNamespace", "ByUser""#,
            "spec.priorityLevelConfiguration.name: Required value: must reference a priority level",
            "spec.rules[0].subjects: Required value: subjects must contain at least one value",
            "spec.rules[0]: Required value: at least one of resourceRules and nonResourceRules has to be non-empty",
        ]
    );
    let one = fs(json!({"matchingPrecedence": 1, "priorityLevelConfiguration": {"name": "x"}}));
    assert_eq!(
        texts(s.validate_create(&one)),
        vec!["spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1"]
    );
}

#[test]
fn flow_schema_subjects_and_rules() {
    let s = FlowControl::new("FlowSchema");
    let o = fs(json!({"matchingPrecedence": 500, "priorityLevelConfiguration": {"name": "x"},
        "rules": [{"subjects": [
                {"kind": "User", "group": {"name": "g"}},
                {"kind": "ServiceAccount", "serviceAccount": {"name": "*"}},
                {"kind": "Robot"}],
            "resourceRules": [{"verbs": ["*", "get"], "apiGroups": [], "resources": ["*", "pods"]}],
            "nonResourceRules": [{"verbs": ["fly"], "nonResourceURLs": ["healthz", "/a/*/b"]}]}]}));
    assert_eq!(
        texts(s.validate_create(&o)),
        vec![
            "spec.rules[0].subjects[0].user: Required value: user is required when subject kind is 'User'",
            "spec.rules[0].subjects[0].group: Forbidden: group is forbidden when subject kind is not 'Group'",
            "spec.rules[0].subjects[1].serviceAccount.namespace: Required value: must specify namespace for service account",
            r#"spec.rules[0].subjects[2].kind: Unsupported value: "Robot": supported values: "Group", "ServiceAccount", "User""#,
            r#"spec.rules[0].resourceRules[0].verbs: Invalid value: []string{"*", "get"}: if '*' is present, must not specify other verbs"#,
            "spec.rules[0].resourceRules[0].apiGroups: Required value: resource rules must supply at least one api group",
            r#"spec.rules[0].resourceRules[0].resources: Invalid value: []string{"*", "pods"}: if '*' is present, must not specify other resources"#,
            "spec.rules[0].resourceRules[0].namespaces: Required value: resource rules that are not cluster scoped must supply at least one namespace",
            r#"spec.rules[0].nonResourceRules[0].verbs: Unsupported value: []string{"fly"}: supported values: "create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch""#,
            r#"spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: "healthz": must start with slash"#,
            r#"spec.rules[0].nonResourceRules[0].nonResourceURLs[1]: Invalid value: "/a/*/b": wildcard can only do suffix matching"#,
        ]
    );
}

#[test]
fn priority_level_defaults() {
    let s = FlowControl::new("PriorityLevelConfiguration");
    let mut o = pl("p", json!({"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}}));
    s.default(&mut o);
    assert_eq!(
        o["spec"]["limited"],
        json!({"nominalConcurrencyShares": 30, "lendablePercent": 0,
            "limitResponse": {"type": "Queue", "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}}})
    );
    assert!(s.validate_create(&o).is_empty());
    let mut ex = pl("exempt", json!({"type": "Exempt", "exempt": {}}));
    s.default(&mut ex);
    assert_eq!(ex["spec"]["exempt"], json!({"nominalConcurrencyShares": 0, "lendablePercent": 0}));
    assert!(s.validate_create(&ex).is_empty());
    // v1's pointer field: an explicit 0 (a "jail" level) is kept and valid.
    let mut jail = pl(
        "p",
        json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 0,
        "limitResponse": {"type": "Reject"}}}),
    );
    s.default(&mut jail);
    assert_eq!(jail["spec"]["limited"]["nominalConcurrencyShares"], 0);
    assert!(s.validate_create(&jail).is_empty());
}

#[test]
fn status_conditions() {
    let s = FlowControl::new("PriorityLevelConfiguration");
    let o = json!({"metadata": {"name": "p"}, "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1,
        "limitResponse": {"type": "Reject"}}}, "status": {"conditions": [{"type": "A"}, {"type": "A"}, {}]}});
    assert_eq!(
        texts(s.validate_create(&o)),
        vec![
            r#"status.conditions[1].type: Duplicate value: "A""#,
            "status.conditions[2].type: Required value: must not be empty",
        ]
    );
}

#[test]
fn priority_level_errors() {
    let s = FlowControl::new("PriorityLevelConfiguration");
    let o = pl(
        "p",
        json!({"type": "Limited", "exempt": {}, "limited": {"nominalConcurrencyShares": -1,
        "lendablePercent": 101, "borrowingLimitPercent": -2,
        "limitResponse": {"type": "Queue", "queuing": {"queues": 4, "handSize": 5, "queueLengthLimit": 0}}}}),
    );
    assert_eq!(
        texts(s.validate_create(&o)),
        vec![
            "spec.exempt: Forbidden: must be nil if the type is Limited",
            "spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
            "spec.limited.limitResponse.queuing.queueLengthLimit: Invalid value: 0: must be positive",
            "spec.limited.limitResponse.queuing.handSize: Invalid value: 5: should not be greater than queues (4)",
            "spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive",
            "spec.limited.borrowingLimitPercent: Invalid value: -2: if specified, must be a non-negative integer",
        ]
    );
    let entropy = pl(
        "p",
        json!({"type": "Limited", "limited": {"limitResponse": {"type": "Queue",
        "queuing": {"queues": 128, "handSize": 9, "queueLengthLimit": 1}}}}),
    );
    assert_eq!(
        texts(s.validate_create(&entropy)),
        vec!["spec.limited.limitResponse.queuing.handSize: Invalid value: 9: required entropy bits of deckSize 128 and handSize 9 should not be greater than 60"]
    );
    let bad = pl("exempt", json!({"type": "Fast"}));
    assert_eq!(
        texts(s.validate_create(&bad)),
        vec![
            r#"spec.type: Invalid value: "Fast": type must be 'Exempt' if and only if name is 'exempt'"#,
            r#"spec.type: Unsupported value: "Fast": supported values: "Exempt", "Limited""#,
        ]
    );
}

#[test]
fn status_subresource() {
    let s = FlowControl::new("FlowSchema");
    let mut o = json!({"spec": {"matchingPrecedence": 5}, "status": {"conditions": [{"type": "x"}]}});
    s.prepare_for_create(&mut o);
    assert_eq!(o["status"], json!({}));
    let old = json!({"spec": {"matchingPrecedence": 5}, "status": {}});
    let mut upd = json!({"spec": {"matchingPrecedence": 6}, "status": {"conditions": []}});
    s.prepare_for_status_update(&mut upd, &old);
    assert_eq!(upd["spec"]["matchingPrecedence"], 5);
}
