use super::*;
use crate::strategy::cause_texts as texts;

fn create(kind: &str, mut obj: Value) -> Vec<String> {
    let s = Networking::for_kind(kind, kind == "Ingress").unwrap();
    s.default(&mut obj);
    texts(s.validate_create(&obj))
}

#[test]
fn ingress_needs_rules_or_a_default_backend() {
    assert_eq!(
        create("Ingress", json!({"spec": {}})),
        vec![
            "spec: Invalid value: []networking.IngressRule(nil): either `defaultBackend` or `rules` must be specified"
        ]
    );
}

#[test]
fn ingress_paths_and_backends() {
    let ing = json!({"spec": {"rules": [
        {"host": "10.0.0.1", "http": {"paths": [
            {"path": "/a", "backend": {"service": {"name": "web", "port": {"number": 80}}}},
            {"path": "a//b", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"name": "http", "number": 80}}}},
            {"path": "/x", "pathType": "Regex", "backend": {}},
            {"path": "/y", "pathType": "Exact", "backend": {"service": {"name": "Web"}}}]}},
        {"host": "*.example.com", "http": {"paths": []}}]}});
    let dns = is_dns1123_subdomain("10.0.0.1");
    let svc = is_dns1035_label("Web");
    let mut want =
        vec!["spec.rules[0].host: Invalid value: \"10.0.0.1\": must be a DNS name, not an IP address".to_string()];
    want.extend(dns.iter().map(|m| format!("spec.rules[0].host: Invalid value: \"10.0.0.1\": {m}")));
    want.extend([
        "spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified".to_string(),
        r#"spec.rules[0].http.paths[1].path: Invalid value: "a//b": must be an absolute path"#.to_string(),
        r#"spec.rules[0].http.paths[1].path: Invalid value: "a//b": must not contain '//'"#.to_string(),
        r#"spec.rules[0].http.paths[1].backend: Invalid value: "": cannot set both port name & port number"#.to_string(),
        r#"spec.rules[0].http.paths[2].pathType: Unsupported value: "Regex": supported values: "Exact", "ImplementationSpecific", "Prefix""#.to_string(),
        r#"spec.rules[0].http.paths[2].backend: Invalid value: "": resource or service backend is required"#.to_string(),
    ]);
    want.extend(
        svc.iter().map(|m| format!(r#"spec.rules[0].http.paths[3].backend.service.name: Invalid value: "Web": {m}"#)),
    );
    want.extend([
        "spec.rules[0].http.paths[3].backend: Required value: port name or number is required".to_string(),
        "spec.rules[1].http.paths: Required value".to_string(),
    ]);
    assert_eq!(create("Ingress", ing), want);
}

#[test]
fn ingress_class_annotation_must_match() {
    let ing = json!({"metadata": {"annotations": {"kubernetes.io/ingress.class": "a"}},
        "spec": {"ingressClassName": "b", "defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}});
    assert_eq!(
        create("Ingress", ing),
        vec![
            r#"annotations.kubernetes.io/ingress.class: Invalid value: "a": must match `ingressClassName` when both are specified"#
        ]
    );
}

#[test]
fn wildcard_hosts() {
    assert!(is_wildcard_dns1123_subdomain("*.example.com").is_empty());
    assert_eq!(is_wildcard_dns1123_subdomain("*example.com").len(), 1);
}

#[test]
fn ingress_class_controller_and_parameters() {
    let mut ic = json!({"spec": {"controller": "example.com/ingress", "parameters": {"kind": "Params", "name": "p"}}});
    Networking::for_kind("IngressClass", false).unwrap().default(&mut ic);
    assert_eq!(ic["spec"]["parameters"]["scope"], "Cluster");
    assert_eq!(
        create(
            "IngressClass",
            json!({"spec": {"controller": "nginx", "parameters": {"kind": "P", "name": "p",
            "scope": "Namespace"}}})
        ),
        vec![
            r#"spec.controller: Invalid value: "nginx": must be a domain-prefixed path (such as "acme.io/foo")"#,
            "spec.parameters.namespace: Required value: `parameters.scope` is set to 'Namespace'",
        ]
    );
    let s = Networking::for_kind("IngressClass", false).unwrap();
    let old = json!({"spec": {"controller": "example.com/a"}});
    let new = json!({"spec": {"controller": "example.com/b"}});
    assert_eq!(
        texts(s.validate_update(&new, &old)),
        vec![r#"spec.controller: Invalid value: "example.com/b": field is immutable"#]
    );
}

#[test]
fn network_policy_defaults() {
    let mut np = json!({"spec": {"podSelector": {}, "egress": [{"ports": [{"port": 53}]}]}});
    Networking::for_kind("NetworkPolicy", false).unwrap().default(&mut np);
    assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
    assert_eq!(np["spec"]["egress"][0]["ports"][0]["protocol"], "TCP");
    let mut ingress_only = json!({"spec": {"podSelector": {}}});
    Networking::for_kind("NetworkPolicy", false).unwrap().default(&mut ingress_only);
    assert_eq!(ingress_only["spec"]["policyTypes"], json!(["Ingress"]));
}

#[test]
fn network_policy_ports_peers_and_blocks() {
    let np = json!({"spec": {"podSelector": {}, "ingress": [{
        "ports": [{"protocol": "ICMP", "port": 0}, {"port": "http", "endPort": 90}, {"port": 100, "endPort": 90}],
        "from": [{}, {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16", "11.0.0.0/16", "bad"]},
            "podSelector": {}}]}],
        "policyTypes": ["Ingress", "Sideways"]}});
    assert_eq!(
        create("NetworkPolicy", np),
        vec![
            r#"spec.ingress[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP""#,
            "spec.ingress[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
            "spec.ingress[0].ports[1].endPort: Invalid value: 90: may not be specified when `port` is non-numeric",
            "spec.ingress[0].ports[2].endPort: Invalid value: 100: must be greater than or equal to `port`",
            "spec.ingress[0].from[0]: Required value: must specify a peer",
            r#"spec.ingress[0].from[1].ipBlock.except[1]: Invalid value: "11.0.0.0/16": must be a strict subset of `cidr`"#,
            r#"spec.ingress[0].from[1].ipBlock.except[2]: Invalid value: "bad": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"#,
            "spec.ingress[0].from[1]: Forbidden: may not specify both ipBlock and another peer",
            r#"spec.policyTypes[1]: Unsupported value: "Sideways": supported values: "Ingress", "Egress""#,
        ]
    );
}
