//! Expected values follow upstream's dns_test.go (TestGetPodDNS*,
//! TestMergeDNSOptions, TestFormDNSSearchFitsLimits) and
//! kubelet_pods_test.go (TestGeneratePodHostNameAndDomain,
//! TestTruncatePodHostname) / util_test.go (TestGetNodenameForKernel).

use super::*;
use serde_json::json;

fn pod(spec: serde_json::Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": "pod1", "namespace": "ns1", "uid": "u1"},
        "spec": spec
    }))
    .unwrap()
}

struct Host {
    _dir: tempfile::TempDir,
    settings: DnsSettings,
}

fn host(resolv: &str, cluster_dns: &[&str]) -> Host {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("resolv.conf");
    std::fs::write(&path, resolv).unwrap();
    Host {
        settings: DnsSettings {
            cluster_dns: cluster_dns.iter().map(|s| s.parse().unwrap()).collect(),
            cluster_domain: "cluster.local".into(),
            host_resolv_conf: path,
        },
        _dir: dir,
    }
}

const HOST_RESOLV: &str = "# nameserver 9.9.9.9\nnameserver 10.0.0.2\n  nameserver 10.0.0.3\nsearch old.example\nsearch host.example.\noptions timeout:1\noptions timeout:3 ndots:2\n";

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn resolv_conf_parsing_keeps_last_search_and_options_lines() {
    let c = parse_resolv_conf(HOST_RESOLV);
    assert_eq!(c.servers, strs(&["10.0.0.2", "10.0.0.3"]));
    assert_eq!(c.searches, strs(&["host.example"]));
    assert_eq!(c.options, strs(&["timeout:3", "ndots:2"]));
    // As upstream's TestParseResolvConf: "." is kept verbatim, other trailing dots trimmed.
    let c = parse_resolv_conf("search foo. bar .\nnameserver\n");
    assert_eq!(c.searches, strs(&["foo", "bar", "."]));
    assert!(c.servers.is_empty());
}

#[test]
fn cluster_first_uses_cluster_dns_and_cluster_searches() {
    let h = host(HOST_RESOLV, &["10.96.0.10"]);
    let (c, events) = sandbox_dns_config_with_events(&pod(json!({"containers": []})), &h.settings).unwrap();
    let c = c.unwrap();
    assert_eq!(c.servers, strs(&["10.96.0.10"]));
    assert_eq!(c.searches, strs(&["ns1.svc.cluster.local", "svc.cluster.local", "cluster.local", "host.example"]));
    assert_eq!(c.options, strs(&["ndots:5"]));
    assert!(events.is_empty());
    // ClusterFirstWithHostNet on the host network still gets cluster DNS.
    let p = pod(json!({"containers": [], "hostNetwork": true, "dnsPolicy": "ClusterFirstWithHostNet"}));
    assert_eq!(sandbox_dns_config(&p, &h.settings).unwrap().unwrap().servers, strs(&["10.96.0.10"]));
}

#[test]
fn cluster_first_on_host_network_and_default_use_host_resolv_conf() {
    let h = host(HOST_RESOLV, &["10.96.0.10"]);
    for spec in [
        json!({"containers": [], "hostNetwork": true}),
        json!({"containers": [], "hostNetwork": true, "dnsPolicy": "ClusterFirst"}),
        json!({"containers": [], "dnsPolicy": "Default"}),
    ] {
        let c = sandbox_dns_config(&pod(spec), &h.settings).unwrap().unwrap();
        assert_eq!(c.servers, strs(&["10.0.0.2", "10.0.0.3"]));
        assert_eq!(c.searches, strs(&["host.example"]));
        assert_eq!(c.options, strs(&["timeout:3", "ndots:2"]));
    }
}

#[test]
fn cluster_first_without_cluster_dns_falls_back_to_default_with_event() {
    let h = host(HOST_RESOLV, &[]);
    let (c, events) = sandbox_dns_config_with_events(&pod(json!({"containers": []})), &h.settings).unwrap();
    assert_eq!(c.unwrap().servers, strs(&["10.0.0.2", "10.0.0.3"]));
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].reason, "MissingClusterDNS");
    assert_eq!(
        events[0].message,
        "pod: \"pod1_ns1(u1)\". kubelet does not have ClusterDNS IP configured and cannot create Pod using \
         \"ClusterFirst\" policy. Falling back to \"Default\" policy."
    );
}

#[test]
fn unreadable_resolv_conf_is_an_error_like_go_os_open() {
    let settings = DnsSettings {
        cluster_dns: vec![],
        cluster_domain: "cluster.local".into(),
        host_resolv_conf: PathBuf::from("/nonexistent/resolv.conf"),
    };
    let e = sandbox_dns_config(&pod(json!({"containers": []})), &settings).unwrap_err();
    assert_eq!(e.to_string(), "open /nonexistent/resolv.conf: no such file or directory");
}

#[test]
fn no_resolv_conf_means_localhost_and_dot_search() {
    let settings =
        DnsSettings { cluster_dns: vec![], cluster_domain: "cluster.local".into(), host_resolv_conf: PathBuf::new() };
    let c = sandbox_dns_config(&pod(json!({"containers": [], "dnsPolicy": "Default"})), &settings).unwrap().unwrap();
    assert_eq!(c.servers, strs(&["127.0.0.1"]));
    assert_eq!(c.searches, strs(&["."]));
}

#[test]
fn none_policy_uses_only_dns_config_and_merges() {
    let h = host(HOST_RESOLV, &["10.96.0.10"]);
    let p = pod(json!({"containers": [], "dnsPolicy": "None", "dnsConfig": {
        "nameservers": ["203.0.113.1", "203.0.113.1"],
        "searches": ["my.dns.search.suffix"],
        "options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}]
    }}));
    let c = sandbox_dns_config(&p, &h.settings).unwrap().unwrap();
    assert_eq!(c.servers, strs(&["203.0.113.1"]));
    assert_eq!(c.searches, strs(&["my.dns.search.suffix"]));
    assert_eq!(c.options, strs(&["ndots:2", "edns0"]));
    // Merged onto ClusterFirst: appended without duplicates, options overridden by name.
    let p = pod(json!({"containers": [], "dnsConfig": {
        "nameservers": ["10.96.0.10", "203.0.113.1"],
        "searches": ["cluster.local", "extra.example"],
        "options": [{"name": "ndots", "value": "1"}, {"name": "single-request"}]
    }}));
    let c = sandbox_dns_config(&p, &h.settings).unwrap().unwrap();
    assert_eq!(c.servers, strs(&["10.96.0.10", "203.0.113.1"]));
    assert_eq!(
        c.searches,
        strs(&["ns1.svc.cluster.local", "svc.cluster.local", "cluster.local", "host.example", "extra.example"])
    );
    assert_eq!(c.options, strs(&["ndots:1", "single-request"]));
}

#[test]
fn limits_omit_excess_nameservers_and_searches_with_events() {
    let h = host("", &["10.96.0.10"]);
    let searches: Vec<String> = (0..40).map(|i| format!("s{i}.example")).collect();
    let p = pod(json!({"containers": [], "dnsPolicy": "None", "dnsConfig": {
        "nameservers": ["1.1.1.1", "2.2.2.2", "3.3.3.3", "4.4.4.4"],
        "searches": searches
    }}));
    let (c, events) = sandbox_dns_config_with_events(&p, &h.settings).unwrap();
    let c = c.unwrap();
    assert_eq!(c.servers, strs(&["1.1.1.1", "2.2.2.2", "3.3.3.3"]));
    assert_eq!(c.searches.len(), 32);
    assert_eq!(events[0].reason, "DNSConfigForming");
    assert_eq!(
        events[0].message,
        "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: \
         1.1.1.1 2.2.2.2 3.3.3.3"
    );
    assert!(events[1].message.starts_with(
        "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: s0.example s1.example"
    ));
    // 2048 characters in all: 10 domains of 250 characters leave 8 (8*251-1 = 2007).
    let long: Vec<String> = (0..10).map(|i| format!("{i}{}", "a".repeat(249))).collect();
    let p = pod(json!({"containers": [], "dnsPolicy": "None", "dnsConfig": {"searches": long}}));
    let (c, events) = sandbox_dns_config_with_events(&p, &h.settings).unwrap();
    assert_eq!(c.unwrap().searches.len(), 8);
    assert_eq!(events.len(), 1);
    // A domain over 253 characters is dropped.
    let p =
        pod(json!({"containers": [], "dnsPolicy": "None", "dnsConfig": {"searches": ["a".repeat(254), "ok.example"]}}));
    let (c, _) = sandbox_dns_config_with_events(&p, &h.settings).unwrap();
    assert_eq!(c.unwrap().searches, strs(&["ok.example"]));
}

#[test]
fn hostname_is_spec_hostname_or_pod_name_truncated_to_63() {
    assert_eq!(sandbox_hostname(&pod(json!({"containers": []})), "cluster.local").unwrap(), "pod1");
    assert_eq!(
        sandbox_hostname(&pod(json!({"containers": [], "hostname": "web-0"})), "cluster.local").unwrap(),
        "web-0"
    );
    // As upstream's TestTruncatePodHostname: a 63-character cut ending in '-' or '.' is trimmed.
    let mut p = pod(json!({"containers": []}));
    p.metadata.name = Some(format!("{}.-bbbbbbb", "a".repeat(61)));
    assert_eq!(sandbox_hostname(&p, "cluster.local").unwrap(), "a".repeat(61));
    p.metadata.name = Some("1234567.1234567.1234567.1234567.1234567.1234567.1234567.1234567.1234567".into());
    assert_eq!(
        sandbox_hostname(&p, "cluster.local").unwrap(),
        "1234567.1234567.1234567.1234567.1234567.1234567.1234567.1234567"
    );
    p.metadata.name = Some("a".repeat(70));
    assert_eq!(sandbox_hostname(&p, "cluster.local").unwrap(), "a".repeat(63));
    // Host network pods keep the node's hostname.
    assert_eq!(sandbox_hostname(&pod(json!({"containers": [], "hostNetwork": true})), "cluster.local").unwrap(), "");
}

#[test]
fn hostname_and_subdomain_must_be_dns_labels() {
    let e = sandbox_hostname(&pod(json!({"containers": [], "hostname": "Bad_Host"})), "cluster.local").unwrap_err();
    assert!(e.to_string().starts_with("pod Hostname \"Bad_Host\" is not a valid DNS label: "), "{e}");
    let e = sandbox_hostname(&pod(json!({"containers": [], "subdomain": "a.b"})), "cluster.local").unwrap_err();
    assert!(e.to_string().starts_with("pod Subdomain \"a.b\" is not a valid DNS label: "), "{e}");
    let (h, d) =
        pod_hostname_and_domain(&pod(json!({"containers": [], "hostname": "h", "subdomain": "sub"})), "cluster.local")
            .unwrap();
    assert_eq!((h.as_str(), d.as_str()), ("h", "sub.ns1.svc.cluster.local"));
}

#[test]
fn set_hostname_as_fqdn_needs_subdomain_and_fits_64() {
    let p = pod(json!({"containers": [], "hostname": "h", "subdomain": "sub", "setHostnameAsFQDN": true}));
    assert_eq!(sandbox_hostname(&p, "cluster.local").unwrap(), "h.sub.ns1.svc.cluster.local");
    // Without a subdomain the flag has no effect.
    let p = pod(json!({"containers": [], "hostname": "h", "setHostnameAsFQDN": true}));
    assert_eq!(sandbox_hostname(&p, "cluster.local").unwrap(), "h");
    let p = pod(json!({"containers": [], "hostname": "a".repeat(40), "subdomain": "sub", "setHostnameAsFQDN": true}));
    let fqdn = format!("{}.sub.ns1.svc.cluster.local", "a".repeat(40));
    assert_eq!(
        sandbox_hostname(&p, "cluster.local").unwrap_err().to_string(),
        format!(
            "failed to construct FQDN from pod hostname and cluster domain, FQDN {fqdn} is too long \
             (64 characters is the max, 66 characters requested)"
        )
    );
}
