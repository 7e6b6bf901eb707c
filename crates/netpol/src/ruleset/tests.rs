//! Expected values follow the NetworkPolicy API semantics (see the module
//! docs of `ruleset`); every rendered ruleset is validated by `nft -c -f`.

use super::*;
use serde_json::json;

const NODE: &str = "node-a";

fn ns(name: &str, labels: serde_json::Value) -> Namespace {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap()
}

fn pod(ns: &str, name: &str, node: &str, ip: &str, labels: serde_json::Value) -> Pod {
    pod_ports(ns, name, node, ip, labels, json!([]))
}

fn pod_ports(ns: &str, name: &str, node: &str, ip: &str, labels: serde_json::Value, ports: serde_json::Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"namespace": ns, "name": name, "labels": labels},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox", "ports": ports}]},
        "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}]}
    }))
    .unwrap()
}

fn policy(ns: &str, name: &str, spec: serde_json::Value) -> NetworkPolicy {
    serde_json::from_value(json!({"metadata": {"namespace": ns, "name": name}, "spec": spec})).unwrap()
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn addrs(ips: &[&str]) -> Peer {
    Peer::Addrs(ips.iter().map(|s| ip(s)).collect())
}

fn tcp(first: u16, last: u16) -> PortRange {
    PortRange { protocol: Protocol::Tcp, first, last }
}

fn ports(p: &[PortRange]) -> Option<BTreeSet<PortRange>> {
    Some(p.iter().copied().collect())
}

/// Computes, checks the rendering with `nft -c -f`, and returns the rules.
fn compute_checked(policies: &[NetworkPolicy], pods: &[Pod], namespaces: &[Namespace]) -> Ruleset {
    let r = compute("rkt_np_unit", NODE, policies, pods, namespaces);
    let script = r.render();
    crate::nft::check(&script).unwrap_or_else(|e| panic!("nft rejected:\n{script}\n{e}"));
    r
}

fn world() -> (Vec<Pod>, Vec<Namespace>) {
    let pods = vec![
        pod_ports(
            "a",
            "server",
            NODE,
            "10.42.0.2",
            json!({"app": "server"}),
            json!([{"name": "http", "containerPort": 8080}]),
        ),
        pod("a", "client", "node-b", "10.42.1.3", json!({"role": "client"})),
        pod("a", "other", NODE, "10.42.0.4", json!({"role": "other"})),
        pod("b", "client", "node-b", "10.42.1.5", json!({"role": "client"})),
        pod("b", "other", NODE, "10.42.0.6", json!({"role": "other"})),
    ];
    let namespaces = vec![ns("a", json!({"team": "x"})), ns("b", json!({"team": "y"}))];
    (pods, namespaces)
}

fn server_ingress(r: &Ruleset) -> Vec<Allow> {
    let p = r.pods.iter().find(|p| p.namespace == "a" && p.name == "server").expect("server policed");
    p.ingress.clone().expect("server isolated for ingress")
}

#[test]
fn policy_types_default_ingress_plus_egress_when_egress_rules_exist() {
    let only_ingress = policy("a", "p", json!({"podSelector": {}, "ingress": [{}]}));
    assert_eq!(policy_types(&only_ingress), (true, false));
    let with_egress = policy("a", "p", json!({"podSelector": {}, "egress": [{}]}));
    assert_eq!(policy_types(&with_egress), (true, true));
    let empty_egress = policy("a", "p", json!({"podSelector": {}, "egress": []}));
    assert_eq!(policy_types(&empty_egress), (true, false));
    let explicit = policy("a", "p", json!({"podSelector": {}, "policyTypes": ["Egress"]}));
    assert_eq!(policy_types(&explicit), (false, true));
}

#[test]
fn no_policy_means_no_isolation() {
    let (pods, namespaces) = world();
    let r = compute_checked(&[], &pods, &namespaces);
    assert!(r.pods.is_empty());
}

#[test]
fn default_deny_ingress_isolates_only_local_selected_pods() {
    let (mut pods, namespaces) = world();
    let mut host: Pod = pod("a", "hostnet", NODE, "192.168.1.10", json!({}));
    host.spec.as_mut().unwrap().host_network = Some(true);
    pods.push(host);
    let deny = policy("a", "deny", json!({"podSelector": {}, "policyTypes": ["Ingress"]}));
    let r = compute_checked(&[deny], &pods, &namespaces);
    let names: Vec<_> = r.pods.iter().map(|p| format!("{}/{}", p.namespace, p.name)).collect();
    // a/client is on node-b, b/* is another namespace, hostnet is not policed.
    assert_eq!(names, ["a/other", "a/server"]);
    assert!(r.pods.iter().all(|p| p.ingress == Some(vec![]) && p.egress.is_none()));
}

#[test]
fn pod_and_namespace_selector_in_one_peer_is_and() {
    let (pods, namespaces) = world();
    let np = policy(
        "a",
        "p",
        json!({
            "podSelector": {"matchLabels": {"app": "server"}},
            "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "y"}}, "podSelector": {"matchLabels": {"role": "client"}}}]}]
        }),
    );
    let r = compute_checked(&[np], &pods, &namespaces);
    assert_eq!(server_ingress(&r), vec![Allow { peer: addrs(&["10.42.1.5"]), ports: None }]);
}

#[test]
fn pod_and_namespace_selector_in_two_peers_is_or() {
    let (pods, namespaces) = world();
    let np = policy(
        "a",
        "p",
        json!({
            "podSelector": {"matchLabels": {"app": "server"}},
            "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "y"}}}, {"podSelector": {"matchLabels": {"role": "client"}}}]}]
        }),
    );
    let r = compute_checked(&[np], &pods, &namespaces);
    // All pods of namespace b, plus a's clients (podSelector alone: policy namespace).
    assert_eq!(server_ingress(&r), vec![Allow { peer: addrs(&["10.42.0.6", "10.42.1.3", "10.42.1.5"]), ports: None }]);
}

#[test]
fn match_expressions_select_peers() {
    let (pods, namespaces) = world();
    let np = policy(
        "a",
        "p",
        json!({
            "podSelector": {"matchLabels": {"app": "server"}},
            "ingress": [{"from": [{"namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["x"]}]},
                                   "podSelector": {"matchExpressions": [{"key": "role", "operator": "Exists"}]}}]}]
        }),
    );
    let r = compute_checked(&[np], &pods, &namespaces);
    assert_eq!(server_ingress(&r), vec![Allow { peer: addrs(&["10.42.0.6", "10.42.1.5"]), ports: None }]);
}

#[test]
fn ip_block_with_except_is_normalized_and_rendered() {
    let (pods, namespaces) = world();
    let np = policy(
        "a",
        "p",
        json!({
            "podSelector": {"matchLabels": {"app": "server"}},
            "ingress": [{"from": [{"ipBlock": {"cidr": "10.1.2.3/8", "except": ["10.42.0.0/16", "fd00::/8"]}}]}]
        }),
    );
    let r = compute_checked(&[np], &pods, &namespaces);
    let block =
        Peer::Block { cidr: Cidr::parse("10.0.0.0/8").unwrap(), except: vec![Cidr::parse("10.42.0.0/16").unwrap()] };
    assert_eq!(server_ingress(&r), vec![Allow { peer: block, ports: None }]);
    assert!(r.render().contains("ip saddr 10.0.0.0/8 ip saddr != { 10.42.0.0/16 } return"));
}

#[test]
fn ports_protocol_default_end_port_and_whole_protocol() {
    let (pods, namespaces) = world();
    let np = policy(
        "a",
        "p",
        json!({
            "podSelector": {"matchLabels": {"app": "server"}},
            "ingress": [{"ports": [{"port": 80}, {"port": 8000, "endPort": 8080}, {"protocol": "UDP", "port": 53}, {"protocol": "SCTP"}]}]
        }),
    );
    let r = compute_checked(&[np], &pods, &namespaces);
    let expected = ports(&[
        tcp(80, 80),
        tcp(8000, 8080),
        PortRange { protocol: Protocol::Udp, first: 53, last: 53 },
        PortRange { protocol: Protocol::Sctp, first: 0, last: 65535 },
    ]);
    // No `from`: every source.
    assert_eq!(server_ingress(&r), vec![Allow { peer: Peer::Any, ports: expected }]);
    assert!(r
        .render()
        .contains("meta l4proto . th dport { tcp . 80, tcp . 8000-8080, udp . 53, sctp . 0-65535 } return"));
}

#[test]
fn ingress_named_port_resolves_on_the_destination_pod_with_its_protocol() {
    let (pods, namespaces) = world();
    let np = policy(
        "a",
        "p",
        json!({
            "podSelector": {"matchLabels": {"app": "server"}},
            "ingress": [
                {"ports": [{"port": "http"}]},
                {"ports": [{"port": "http", "protocol": "UDP"}]},
                {"ports": [{"port": "metrics"}]}
            ]
        }),
    );
    let r = compute_checked(&[np], &pods, &namespaces);
    // "http" is TCP 8080 on the server; UDP "http" and "metrics" do not exist: they allow nothing.
    assert_eq!(server_ingress(&r), vec![Allow { peer: Peer::Any, ports: ports(&[tcp(8080, 8080)]) }]);
}

#[test]
fn egress_named_port_resolves_on_each_peer_pod() {
    let (mut pods, namespaces) = world();
    pods.push(pod_ports(
        "a",
        "web1",
        "node-b",
        "10.42.1.7",
        json!({"role": "web"}),
        json!([{"name": "http", "containerPort": 80}]),
    ));
    pods.push(pod_ports(
        "a",
        "web2",
        NODE,
        "10.42.0.8",
        json!({"role": "web"}),
        json!([{"name": "http", "containerPort": 8080}]),
    ));
    let np = policy(
        "a",
        "p",
        json!({
            "podSelector": {"matchLabels": {"role": "other"}},
            "policyTypes": ["Egress"],
            "egress": [{"to": [{"podSelector": {"matchLabels": {"role": "web"}}}], "ports": [{"port": "http"}, {"port": 443}]}]
        }),
    );
    let r = compute_checked(&[np], &pods, &namespaces);
    let other = r.pods.iter().find(|p| p.name == "other" && p.namespace == "a").unwrap();
    assert_eq!(other.ingress, None);
    assert_eq!(
        other.egress,
        Some(vec![
            Allow { peer: addrs(&["10.42.0.8"]), ports: ports(&[tcp(443, 443), tcp(8080, 8080)]) },
            Allow { peer: addrs(&["10.42.1.7"]), ports: ports(&[tcp(80, 80), tcp(443, 443)]) },
        ])
    );
}

#[test]
fn empty_egress_rules_deny_all_egress() {
    let (pods, namespaces) = world();
    let np = policy("b", "p", json!({"podSelector": {}, "policyTypes": ["Ingress", "Egress"], "ingress": [{}]}));
    let r = compute_checked(&[np], &pods, &namespaces);
    assert_eq!(r.pods.len(), 1);
    assert_eq!(r.pods[0].name, "other");
    // `ingress: [{}]`: one rule with no from and no ports allows everything.
    assert_eq!(r.pods[0].ingress, Some(vec![Allow { peer: Peer::Any, ports: None }]));
    assert_eq!(r.pods[0].egress, Some(vec![]));
    let script = r.render();
    assert!(script.contains("10.42.0.6 : jump egr-0"));
    assert!(script.contains("10.42.0.6 : jump ing-0"));
}

#[test]
fn any_policy_allowing_suffices() {
    let (pods, namespaces) = world();
    let p1 = policy(
        "a",
        "p1",
        json!({"podSelector": {"matchLabels": {"app": "server"}}, "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "client"}}}]}]}),
    );
    let p2 = policy(
        "a",
        "p2",
        json!({"podSelector": {}, "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "other"}}}], "ports": [{"port": 8080}]}]}),
    );
    let r = compute_checked(&[p2, p1], &pods, &namespaces);
    assert_eq!(
        server_ingress(&r),
        vec![
            Allow { peer: addrs(&["10.42.0.4"]), ports: ports(&[tcp(8080, 8080)]) },
            Allow { peer: addrs(&["10.42.1.3"]), ports: None },
        ]
    );
}

#[test]
fn selector_matching_nobody_allows_nothing() {
    let (pods, namespaces) = world();
    let np = policy(
        "a",
        "p",
        json!({"podSelector": {"matchLabels": {"app": "server"}}, "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "ghost"}}}]}]}),
    );
    let r = compute_checked(&[np], &pods, &namespaces);
    assert_eq!(server_ingress(&r), vec![]);
}

#[test]
fn finished_pods_are_neither_policed_nor_peers() {
    let (mut pods, namespaces) = world();
    pods[1].status.as_mut().unwrap().phase = Some("Succeeded".into()); // a/client
    let np = policy(
        "a",
        "p",
        json!({"podSelector": {"matchLabels": {"app": "server"}}, "ingress": [{"from": [{"podSelector": {}}]}]}),
    );
    let r = compute_checked(&[np], &pods, &namespaces);
    assert_eq!(server_ingress(&r), vec![Allow { peer: addrs(&["10.42.0.2", "10.42.0.4"]), ports: None }]);
}

#[test]
fn render_shape_is_conntrack_first_then_maps() {
    let (pods, namespaces) = world();
    let deny = policy("a", "deny", json!({"podSelector": {"matchLabels": {"app": "server"}}}));
    let script = compute_checked(&[deny], &pods, &namespaces).render();
    let ct = script.find("ct state established,related accept").unwrap();
    let egr = script.find("ip saddr vmap @egress4").unwrap();
    let ing = script.find("ip daddr vmap @ingress4").unwrap();
    assert!(ct < egr && egr < ing);
    // Pod -> own node is delivered locally: the input chain applies egress
    // (keyed by the pod's source address) after conntrack, and no ingress.
    let input = &script[script.find("  chain input {\n").expect("input chain")..];
    let input = &input[..input.find("  }\n").unwrap()];
    assert_eq!(
        input,
        "  chain input {\n    type filter hook input priority filter; policy accept;\n    \
         ct state established,related accept\n    ip saddr vmap @egress4\n    ip6 saddr vmap @egress6\n"
    );
    assert!(script.starts_with("table inet rkt_np_unit\ndelete table inet rkt_np_unit\n"));
    assert!(script.contains("counter drop comment \"a/server\""));
}

#[test]
fn table_names() {
    assert!(valid_table_name("rkube-netpol_1"));
    assert!(!valid_table_name("1abc"));
    assert!(!valid_table_name("a b"));
    assert!(!valid_table_name(""));
}

#[test]
fn overlapping_port_ranges_are_merged_for_nft() {
    let (pods, namespaces) = world();
    let np = policy(
        "a",
        "p",
        json!({
            "podSelector": {"matchLabels": {"app": "server"}},
            "ingress": [{"ports": [{"port": 8000, "endPort": 8080}, {"port": 8050, "endPort": 9000}, {"port": 9001}, {"port": 7000}]}]
        }),
    );
    // compute_checked: nft refuses overlapping intervals, so this checks the merge.
    let script = compute_checked(&[np], &pods, &namespaces).render();
    assert!(script.contains("meta l4proto . th dport { tcp . 7000, tcp . 8000-9001 } return"), "{script}");
}

#[test]
fn rbac_grants_read_and_watch_on_the_three_resources_to_kube_proxy() {
    let (role, binding) = crate::rbac_objects();
    assert_eq!(role.metadata.name.as_deref(), Some("rkube:network-policy"));
    let rules = role.rules.unwrap();
    let grants: Vec<(String, String, Vec<String>)> = rules
        .iter()
        .flat_map(|r| {
            let g = r.api_groups.clone().unwrap()[0].clone();
            r.resources.clone().unwrap().into_iter().map(move |res| (g.clone(), res, r.verbs.clone()))
        })
        .collect();
    let v = vec!["get".to_string(), "list".into(), "watch".into()];
    assert_eq!(
        grants,
        vec![
            ("networking.k8s.io".into(), "networkpolicies".into(), v.clone()),
            ("".into(), "pods".into(), v.clone()),
            ("".into(), "namespaces".into(), v),
        ]
    );
    assert_eq!(binding.role_ref.name, "rkube:network-policy");
    let s = &binding.subjects.unwrap()[0];
    assert_eq!((s.kind.as_str(), s.name.as_str()), ("User", "system:kube-proxy"));
}
