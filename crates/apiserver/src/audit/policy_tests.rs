use super::*;

fn policy(yaml: &str) -> Policy {
    Policy::from_bytes(format!("apiVersion: audit.k8s.io/v1\nkind: Policy\n{yaml}").as_bytes()).unwrap()
}

fn error(yaml: &str) -> String {
    Policy::from_bytes(format!("apiVersion: audit.k8s.io/v1\nkind: Policy\n{yaml}").as_bytes()).unwrap_err()
}

fn resource<'a>(
    verb: &'a str,
    group: &'a str,
    resource: &'a str,
    sub: &'a str,
    ns: &'a str,
    name: &'a str,
) -> Attributes<'a> {
    Attributes {
        user: "alice",
        groups: &[],
        verb,
        resource_request: true,
        api_group: group,
        resource,
        subresource: sub,
        namespace: ns,
        name,
        path: "/api/v1/…",
    }
}

fn path(p: &str) -> Attributes<'_> {
    Attributes { user: "alice", verb: "get", path: p, ..Default::default() }
}

#[test]
fn the_first_matching_rule_decides_and_no_match_is_none() {
    let p = policy(
        r#"
omitStages: [RequestReceived]
rules:
- level: None
  nonResourceURLs: [/healthz*, /version]
- level: Metadata
  resources: [{group: "", resources: [secrets]}]
- level: RequestResponse
  resources: [{group: "", resources: [configmaps]}]
  omitStages: [ResponseStarted]
- level: Request
  verbs: [create, update]
  namespaces: [kube-system]
"#,
    );
    let level = |a: &Attributes| p.evaluate(a).level;
    assert_eq!(level(&path("/healthz")), Level::None);
    assert_eq!(level(&path("/healthz/etcd")), Level::None);
    assert_eq!(level(&path("/version")), Level::None);
    assert_eq!(level(&path("/versions")), Level::None, "no rule matches");
    assert_eq!(level(&resource("get", "", "secrets", "", "default", "s")), Level::Metadata);
    let cm = p.evaluate(&resource("create", "", "configmaps", "", "default", ""));
    assert_eq!(cm.level, Level::RequestResponse);
    // The policy's omitted stages join the rule's.
    assert_eq!(cm.omit_stages, [Stage::RequestReceived, Stage::ResponseStarted]);
    assert_eq!(level(&resource("create", "apps", "deployments", "", "kube-system", "")), Level::Request);
    assert_eq!(level(&resource("get", "apps", "deployments", "", "kube-system", "")), Level::None);
    assert_eq!(level(&resource("create", "apps", "deployments", "", "default", "")), Level::None);
    // Resource rules never match non-resource requests and the other way round.
    assert_eq!(level(&Attributes { verb: "create", path: "/apis", ..Default::default() }), Level::None);
    let none = p.evaluate(&path("/metrics"));
    assert_eq!(none.omit_stages, [Stage::RequestReceived]);
}

#[test]
fn users_groups_and_verbs_narrow_a_rule() {
    let p = policy(
        r#"
rules:
- level: RequestResponse
  users: [system:admin]
- level: Request
  userGroups: [system:nodes]
  verbs: [patch]
- level: Metadata
"#,
    );
    let mut a = resource("get", "", "pods", "", "default", "p");
    a.user = "system:admin";
    assert_eq!(p.evaluate(&a).level, Level::RequestResponse);
    a.user = "system:node:n1";
    let groups = vec!["system:nodes".to_string(), "system:authenticated".to_string()];
    a.groups = &groups;
    assert_eq!(p.evaluate(&a).level, Level::Metadata, "the group rule wants patch");
    a.verb = "patch";
    assert_eq!(p.evaluate(&a).level, Level::Request);
    assert_eq!(p.evaluate(&path("/api")).level, Level::Metadata, "a rule without selectors matches everything");
}

#[test]
fn resource_rules_match_subresources_wildcards_and_names_as_upstream() {
    let p = policy(
        r#"
rules:
- level: Request
  resources:
  - group: ""
    resources: [pods/log, "*/status"]
- level: Metadata
  resources:
  - group: apps
    resources: ["deployments/*"]
  - group: ""
    resources: [configmaps]
    resourceNames: [controller-leader]
- level: RequestResponse
  resources:
  - group: rbac.authorization.k8s.io
"#,
    );
    let l = |a: Attributes| p.evaluate(&a).level;
    assert_eq!(l(resource("get", "", "pods", "log", "d", "p")), Level::Request);
    assert_eq!(l(resource("get", "", "pods", "", "d", "p")), Level::None);
    assert_eq!(l(resource("update", "", "nodes", "status", "", "n")), Level::Request);
    assert_eq!(l(resource("update", "apps", "deployments", "scale", "d", "x")), Level::Metadata);
    assert_eq!(
        l(resource("get", "apps", "deployments", "", "d", "x")),
        Level::Metadata,
        "resource/* covers the resource"
    );
    assert_eq!(l(resource("get", "", "configmaps", "", "d", "controller-leader")), Level::Metadata);
    assert_eq!(l(resource("get", "", "configmaps", "", "d", "other")), Level::None);
    assert_eq!(l(resource("list", "", "configmaps", "", "d", "")), Level::None);
    assert_eq!(l(resource("get", "rbac.authorization.k8s.io", "roles", "", "d", "r")), Level::RequestResponse);
}

#[test]
fn omit_managed_fields_defaults_to_the_policy_and_a_rule_overrides_it() {
    let p = policy("omitManagedFields: true\nrules:\n- level: Request\n  verbs: [create]\n  omitManagedFields: false\n- level: Request\n");
    assert!(!p.evaluate(&resource("create", "", "pods", "", "d", "")).omit_managed_fields);
    assert!(p.evaluate(&resource("update", "", "pods", "", "d", "")).omit_managed_fields);
}

#[test]
fn invalid_policies_are_refused_with_upstream_field_errors() {
    assert_eq!(
        error("rules:\n- level: Everything\n"),
        r#"rules[0].level: Unsupported value: "Everything": supported values: "None", "Metadata", "Request", "RequestResponse""#
    );
    assert_eq!(error("rules:\n- users: [a]\n"), "rules[0].level: Required value");
    assert_eq!(
        error("rules:\n- level: None\n  nonResourceURLs: [healthz]\n"),
        r#"rules[0].nonResourceURLs[0]: Invalid value: "healthz": non-resource URL rules must begin with a '/' character"#
    );
    assert_eq!(
        error("omitStages: [Started]\nrules:\n- level: None\n"),
        r#"omitStages[0]: Invalid value: "Started": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic"#
    );
    assert_eq!(
        error("rules:\n- level: None\n  nonResourceURLs: [/x]\n  namespaces: [a]\n"),
        r#"rules[0].nonResourceURLs: Invalid value: ["/x"]: rules cannot apply to both regular resources and non-resource URLs"#
    );
    assert_eq!(error("rules: []\n"), "loaded illegal policy with 0 rules");
    let wrong = Policy::from_bytes(b"apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: []\n").unwrap_err();
    assert!(wrong.contains("audit.k8s.io/v1beta1"), "{wrong}");
}
