//! Expected values follow upstream's kubelet_pods_test.go
//! (TestMakeEnvironmentVariables), envvars_test.go and expand_test.go.

use super::*;
use serde_json::json;

fn pod(v: serde_json::Value) -> Pod {
    serde_json::from_value(v).unwrap()
}

fn container(v: serde_json::Value) -> Container {
    serde_json::from_value(v).unwrap()
}

fn service(ns: &str, name: &str, ip: &str, ports: serde_json::Value) -> Service {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": ns},
        "spec": {"clusterIP": ip, "ports": ports}
    }))
    .unwrap()
}

fn test_pod() -> Pod {
    pod(json!({
        "metadata": {"name": "dapi-test-pod-name", "namespace": "test1", "uid": "uid-1",
                     "labels": {"app": "web", "tier": "a\"b"},
                     "annotations": {"note": "hi"}},
        "spec": {"nodeName": "node-name", "serviceAccountName": "special",
                 "containers": [{"name": "c"}]}
    }))
}

fn ctx() -> EnvContext {
    EnvContext {
        node_name: "node-name".into(),
        host_ips: vec!["5.6.7.8".parse().unwrap()],
        pod_ips: vec!["1.2.3.4".into(), "fd00::6".into()],
        ..Default::default()
    }
}

fn found(pairs: &[(&str, &str)]) -> Fetched {
    Fetched::Found(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
}

fn get<'a>(env: &'a [(String, String)], k: &str) -> Option<&'a str> {
    env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
}

#[test]
fn expand_follows_upstream_rules() {
    let vars: BTreeMap<&str, &str> =
        [("VAR_A", "A"), ("VAR_B", "B"), ("VAR_EMPTY", ""), ("VAR_REF", "$(VAR_A)")].into();
    let m = |n: &str| vars.get(n).copied();
    let cases = [
        ("$(VAR_A)", "A"),
        ("___$(VAR_B)___", "___B___"),
        ("$(VAR_A)-$(VAR_B)", "A-B"),
        ("$(VAR_EMPTY)", ""),
        ("$(VAR_REF)", "$(VAR_A)"), // no recursion
        ("$(UNDEFINED)", "$(UNDEFINED)"),
        ("$$(VAR_A)", "$(VAR_A)"),
        ("$$$(VAR_A)", "$A"),
        ("$$$$(VAR_A)", "$$(VAR_A)"),
        ("f000-$$VAR_A", "f000-$VAR_A"),
        ("$(VAR_A", "$(VAR_A"),
        ("$VAR_A", "$VAR_A"),
        ("trailing$", "trailing$"),
        ("$", "$"),
        ("$()", "$()"),
        ("$(VAR_A)$(VAR_A", "A$(VAR_A"),
        ("ü$(VAR_A)$ü", "üA$ü"),
    ];
    for (input, want) in cases {
        assert_eq!(expand(input, m), want, "input {input:?}");
    }
}

#[test]
fn service_link_vars_match_envvars_from_services() {
    let svc = service(
        "test1",
        "super-ipv6",
        "2001:db8::1",
        json!([{"name": "https", "port": 8443, "protocol": "TCP"}, {"name": "dns", "port": 53, "protocol": "UDP"}]),
    );
    let got: BTreeMap<_, _> = service_env_vars(&svc).into_iter().collect();
    let want: BTreeMap<String, String> = [
        ("SUPER_IPV6_SERVICE_HOST", "2001:db8::1"),
        ("SUPER_IPV6_SERVICE_PORT", "8443"),
        ("SUPER_IPV6_SERVICE_PORT_HTTPS", "8443"),
        ("SUPER_IPV6_SERVICE_PORT_DNS", "53"),
        ("SUPER_IPV6_PORT", "tcp://[2001:db8::1]:8443"),
        ("SUPER_IPV6_PORT_8443_TCP", "tcp://[2001:db8::1]:8443"),
        ("SUPER_IPV6_PORT_8443_TCP_PROTO", "tcp"),
        ("SUPER_IPV6_PORT_8443_TCP_PORT", "8443"),
        ("SUPER_IPV6_PORT_8443_TCP_ADDR", "2001:db8::1"),
        ("SUPER_IPV6_PORT_53_UDP", "udp://[2001:db8::1]:53"),
        ("SUPER_IPV6_PORT_53_UDP_PROTO", "udp"),
        ("SUPER_IPV6_PORT_53_UDP_PORT", "53"),
        ("SUPER_IPV6_PORT_53_UDP_ADDR", "2001:db8::1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    assert_eq!(got, want);
    // An unnamed first port and a defaulted protocol.
    let plain = service("test1", "web", "10.0.0.7", json!([{"port": 80}]));
    let got: BTreeMap<_, _> = service_env_vars(&plain).into_iter().collect();
    assert_eq!(got.get("WEB_PORT").map(String::as_str), Some("tcp://10.0.0.7:80"));
    assert_eq!(got.get("WEB_PORT_80_TCP_PROTO").map(String::as_str), Some("tcp"));
    assert_eq!(got.len(), 7);
}

#[test]
fn service_env_includes_namespace_services_and_always_master() {
    let services = vec![
        service("default", "kubernetes", "10.0.0.1", json!([{"name": "https", "port": 443, "protocol": "TCP"}])),
        service("test1", "test", "1.2.3.3", json!([{"port": 8083, "protocol": "TCP"}])),
        service("test1", "headless", "None", json!([{"port": 80}])),
        service("test1", "noip", "", json!([{"port": 80}])),
        service("other", "elsewhere", "1.2.3.9", json!([{"port": 80}])),
    ];
    let m = service_env_map("test1", true, &services);
    assert_eq!(m.get("KUBERNETES_SERVICE_HOST").map(String::as_str), Some("10.0.0.1"));
    assert_eq!(m.get("KUBERNETES_SERVICE_PORT").map(String::as_str), Some("443"));
    assert_eq!(m.get("KUBERNETES_SERVICE_PORT_HTTPS").map(String::as_str), Some("443"));
    assert_eq!(m.get("KUBERNETES_PORT").map(String::as_str), Some("tcp://10.0.0.1:443"));
    assert_eq!(m.get("TEST_SERVICE_HOST").map(String::as_str), Some("1.2.3.3"));
    assert!(!m.keys().any(|k| k.starts_with("HEADLESS") || k.starts_with("NOIP") || k.starts_with("ELSEWHERE")));
    // enableServiceLinks: false still gets the master service.
    let m = service_env_map("test1", false, &services);
    assert!(m.contains_key("KUBERNETES_SERVICE_HOST"));
    assert!(!m.contains_key("TEST_SERVICE_HOST"));
    // A `kubernetes` service of the pod's own namespace replaces the master one.
    let mut with_local = services.clone();
    with_local.push(service("test1", "kubernetes", "1.2.3.1", json!([{"port": 8081}])));
    let m = service_env_map("test1", true, &with_local);
    assert_eq!(m.get("KUBERNETES_SERVICE_HOST").map(String::as_str), Some("1.2.3.1"));
}

#[test]
fn env_overrides_env_from_and_service_vars_with_expansion() {
    let mut c = ctx();
    c.services = vec![service("test1", "test", "1.2.3.3", json!([{"port": 8083, "protocol": "TCP"}]))];
    c.config_maps.insert("cm".into(), found(&[("REPLACE_ME", "abc"), ("EXPANDED", "cm-value")]));
    let ctr = container(json!({
        "name": "c",
        "envFrom": [{"configMapRef": {"name": "cm"}}, {"configMapRef": {"name": "cm"}, "prefix": "p_"}],
        "env": [
            {"name": "TEST_SERVICE_HOST", "value": "overridden"},
            {"name": "REPLACE_ME", "value": "from-env"},
            {"name": "FIRST", "value": "$(REPLACE_ME)/$(TEST_SERVICE_PORT)/$(LATER)/$(p_EXPANDED)"},
            {"name": "LATER", "value": "later"},
            {"name": "ESCAPED", "value": "$$(FIRST)"},
            {"name": "EMPTY", "value": ""},
        ]
    }));
    let env = container_env(&test_pod(), &ctr, &c).unwrap();
    assert_eq!(get(&env, "TEST_SERVICE_HOST"), Some("overridden"));
    assert_eq!(get(&env, "REPLACE_ME"), Some("from-env"));
    assert_eq!(get(&env, "p_REPLACE_ME"), Some("abc"));
    // Earlier vars and service vars expand; later ones do not.
    assert_eq!(get(&env, "FIRST"), Some("from-env/8083/$(LATER)/cm-value"));
    assert_eq!(get(&env, "ESCAPED"), Some("$(FIRST)"));
    assert_eq!(get(&env, "EMPTY"), Some(""));
    assert_eq!(get(&env, "TEST_PORT"), Some("tcp://1.2.3.3:8083"));
    assert_eq!(env.iter().filter(|(k, _)| k == "TEST_SERVICE_HOST").count(), 1, "no duplicates");
    // Container variables come first, in first-definition order (envFrom keys sorted per source);
    // a redefined variable keeps its place.
    let names: Vec<&str> = env.iter().take(4).map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["EXPANDED", "REPLACE_ME", "p_EXPANDED", "p_REPLACE_ME"]);
}

#[test]
fn env_from_keeps_keys_that_are_not_c_identifiers_in_1_33() {
    let mut c = ctx();
    c.secrets.insert("s".into(), found(&[("app.key-1", "v1"), ("1st", "v2")]));
    let ctr = container(json!({"name": "c", "envFrom": [{"secretRef": {"name": "s"}, "prefix": "x-"}]}));
    let env = container_env(&test_pod(), &ctr, &c).unwrap();
    assert_eq!(get(&env, "x-app.key-1"), Some("v1"));
    assert_eq!(get(&env, "x-1st"), Some("v2"));
}

#[test]
fn missing_objects_and_keys_error_as_upstream_unless_optional() {
    let mut c = ctx();
    c.config_maps.insert("cm".into(), found(&[("a", "1")]));
    c.config_maps.insert("gone".into(), Fetched::NotFound);
    c.secrets.insert("s".into(), found(&[("a", "1")]));
    c.secrets.insert("gone".into(), Fetched::NotFound);
    let p = test_pod();
    let run = |spec: serde_json::Value| container_env(&p, &container(spec), &c).map_err(|e| e.to_string());

    let e = run(json!({"name": "c", "envFrom": [{"configMapRef": {"name": "gone"}}]})).unwrap_err();
    assert_eq!(e, "configmap \"gone\" not found");
    let e = run(json!({"name": "c", "envFrom": [{"secretRef": {"name": "gone"}}]})).unwrap_err();
    assert_eq!(e, "secret \"gone\" not found");
    let e =
        run(json!({"name": "c", "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}]}))
            .unwrap_err();
    assert_eq!(e, "couldn't find key k in ConfigMap test1/cm");
    let e = run(json!({"name": "c", "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}))
        .unwrap_err();
    assert_eq!(e, "couldn't find key k in Secret test1/s");
    let e =
        run(json!({"name": "c", "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "gone", "key": "k"}}}]}))
            .unwrap_err();
    assert_eq!(e, "secret \"gone\" not found");

    let env = run(json!({"name": "c",
        "envFrom": [{"configMapRef": {"name": "gone", "optional": true}}, {"secretRef": {"name": "gone", "optional": true}}],
        "env": [
            {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "missing", "optional": true}}},
            {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "gone", "key": "a", "optional": true}}},
            {"name": "C", "valueFrom": {"secretKeyRef": {"name": "s", "key": "a"}}},
            {"name": "D", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "a"}}},
        ]}))
    .unwrap();
    assert_eq!(get(&env, "A"), None);
    assert_eq!(get(&env, "B"), None);
    assert_eq!(get(&env, "C"), Some("1"));
    assert_eq!(get(&env, "D"), Some("1"));

    // Failures other than NotFound are reported even for optional references.
    c.config_maps.insert("broken".into(), Fetched::Failed("forbidden".into()));
    let e = container_env(
        &p,
        &container(json!({"name": "c", "envFrom": [{"configMapRef": {"name": "broken", "optional": true}}]})),
        &c,
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "forbidden");
}

#[test]
fn field_refs_resolve_pod_metadata_spec_and_ips() {
    let c = ctx();
    let p = test_pod();
    let f = |path: &str| field_ref_value(&p, Some("v1"), path, &c);
    assert_eq!(f("metadata.name").unwrap(), "dapi-test-pod-name");
    assert_eq!(f("metadata.namespace").unwrap(), "test1");
    assert_eq!(f("metadata.uid").unwrap(), "uid-1");
    assert_eq!(f("metadata.labels['app']").unwrap(), "web");
    assert_eq!(f("metadata.labels['missing']").unwrap(), "");
    assert_eq!(f("metadata.annotations['note']").unwrap(), "hi");
    assert_eq!(f("metadata.labels").unwrap(), "app=\"web\"\ntier=\"a\\\"b\"");
    assert_eq!(f("spec.nodeName").unwrap(), "node-name");
    assert_eq!(f("spec.serviceAccountName").unwrap(), "special");
    assert_eq!(f("status.hostIP").unwrap(), "5.6.7.8");
    assert_eq!(f("status.hostIPs").unwrap(), "5.6.7.8");
    assert_eq!(f("status.podIP").unwrap(), "1.2.3.4");
    assert_eq!(f("status.podIPs").unwrap(), "1.2.3.4,fd00::6");
    assert_eq!(f("metadata.generateName").unwrap_err().to_string(), "field label not supported: metadata.generateName");
    assert_eq!(
        f("spec.nodeName['x']").unwrap_err().to_string(),
        "field label does not support subscript: spec.nodeName['x']"
    );
    assert!(f("metadata.labels['a b']")
        .unwrap_err()
        .to_string()
        .starts_with("invalid key subscript in metadata.labels['a b']: "));
    assert_eq!(
        field_ref_value(&p, Some("v2"), "metadata.name", &c).unwrap_err().to_string(),
        "unsupported pod version: v2"
    );
}

#[test]
fn pod_ips_follow_the_node_ip_family() {
    let ips = vec!["fd00::6".to_string(), "1.2.3.4".into(), "1.2.3.5".into()];
    assert_eq!(sort_pod_ips(&ips, Some(&"5.6.7.8".parse().unwrap())), vec!["1.2.3.4", "fd00::6"]);
    assert_eq!(sort_pod_ips(&ips, Some(&"fd00::1".parse().unwrap())), vec!["fd00::6", "1.2.3.4"]);
    assert_eq!(sort_pod_ips(&ips, None), vec!["1.2.3.4", "fd00::6"]);
}

#[test]
fn resource_field_refs_use_divisor_and_node_allocatable() {
    let p = pod(json!({
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"containers": [
            {"name": "limited", "resources": {"limits": {"cpu": "1250m", "memory": "64Mi"},
                                              "requests": {"cpu": "250m", "memory": "32Mi"}}},
            {"name": "unlimited"}
        ]}
    }));
    let alloc = NodeAllocatable { cpu_milli: 4000, memory_bytes: 8 << 30, ephemeral_storage_bytes: 10_000_000_000 };
    let spec = p.spec.as_ref().unwrap();
    let sel = |r: &str, div: Option<&str>, cn: Option<&str>| -> ResourceFieldSelector {
        serde_json::from_value(json!({"resource": r, "divisor": div, "containerName": cn})).unwrap()
    };
    let v = |c: usize, s: ResourceFieldSelector| resource_field_value(&p, &spec.containers[c], &s, &alloc);
    // CPU rounds up to whole cores by default; 1m divisor gives millicores.
    assert_eq!(v(0, sel("limits.cpu", None, None)).unwrap(), "2");
    assert_eq!(v(0, sel("limits.cpu", Some("1m"), None)).unwrap(), "1250");
    assert_eq!(v(0, sel("requests.cpu", None, None)).unwrap(), "1");
    assert_eq!(v(0, sel("limits.memory", None, None)).unwrap(), "67108864");
    assert_eq!(v(0, sel("limits.memory", Some("1Mi"), None)).unwrap(), "64");
    assert_eq!(v(0, sel("requests.memory", Some("1Gi"), None)).unwrap(), "1");
    // Unset limits are the node's allocatable; unset requests are 0.
    assert_eq!(v(1, sel("limits.cpu", None, None)).unwrap(), "4");
    assert_eq!(v(1, sel("limits.memory", Some("1Gi"), None)).unwrap(), "8");
    assert_eq!(v(1, sel("limits.ephemeral-storage", Some("1G"), None)).unwrap(), "10");
    assert_eq!(v(1, sel("requests.memory", None, None)).unwrap(), "0");
    // Another container by name.
    assert_eq!(v(1, sel("limits.memory", Some("1Mi"), Some("limited"))).unwrap(), "64");
    assert_eq!(v(1, sel("limits.cpu", None, Some("nope"))).unwrap_err().to_string(), "container nope not found");
    assert_eq!(
        v(0, sel("limits.gpu", None, None)).unwrap_err().to_string(),
        "unsupported container resource : limits.gpu"
    );
}

#[test]
fn container_env_resolves_value_from_sources() {
    let mut c = ctx();
    c.config_maps.insert("cm".into(), found(&[("k", "$(NOT_EXPANDED)")]));
    let ctr = container(json!({"name": "c", "resources": {"limits": {"memory": "1Mi"}}, "env": [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}}},
        {"name": "CM", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}},
        {"name": "REF", "value": "$(POD_NAME)-$(CM)"},
    ]}));
    let env = container_env(&test_pod(), &ctr, &c).unwrap();
    assert_eq!(get(&env, "POD_NAME"), Some("dapi-test-pod-name"));
    assert_eq!(get(&env, "MEM"), Some("1048576"));
    assert_eq!(get(&env, "CM"), Some("$(NOT_EXPANDED)"));
    assert_eq!(get(&env, "REF"), Some("dapi-test-pod-name-$(NOT_EXPANDED)"));
}

#[test]
fn references_collects_every_container_source() {
    let p = pod(json!({
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {
            "initContainers": [{"name": "i", "envFrom": [{"secretRef": {"name": "s1"}}]}],
            "containers": [{"name": "c",
                "envFrom": [{"configMapRef": {"name": "cm1"}}],
                "env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s2", "key": "k"}}},
                        {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "cm2", "key": "k"}}}]}]
        }
    }));
    let (cms, secrets, res) = references(&p);
    assert_eq!(cms.into_iter().collect::<Vec<_>>(), vec!["cm1", "cm2"]);
    assert_eq!(secrets.into_iter().collect::<Vec<_>>(), vec!["s1", "s2"]);
    assert!(!res);
}
