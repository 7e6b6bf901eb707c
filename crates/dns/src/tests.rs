//! Unit tests of the lookup over a model; expected answers are what CoreDNS's
//! kubernetes plugin (k3s Corefile: pods insecure, fallthrough in-addr.arpa
//! ip6.arpa, ttl 5) returns for the same cluster state.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use hickory_server::proto::op::ResponseCode;
use hickory_server::proto::rr::{Name, RData, RecordType};
use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use kube::api::ObjectMeta;

use crate::index::{Index, Model, Zone};
use crate::lookup::{address_from_reverse, lookup, pod_address, Answer};

pub(crate) fn service(ns: &str, name: &str, cluster_ip: &str, ports: &[(&str, &str, i32)]) -> Service {
    Service {
        metadata: ObjectMeta { name: Some(name.into()), namespace: Some(ns.into()), ..Default::default() },
        spec: Some(ServiceSpec {
            cluster_ip: Some(cluster_ip.into()),
            cluster_ips: Some(vec![cluster_ip.into()]),
            ports: Some(
                ports
                    .iter()
                    .map(|(n, p, port)| ServicePort {
                        name: (!n.is_empty()).then(|| n.to_string()),
                        protocol: Some(p.to_string()),
                        port: *port,
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }),
        status: None,
    }
}

pub(crate) fn slice(
    ns: &str,
    svc: &str,
    eps: &[(&str, Option<&str>, Option<bool>)],
    ports: &[(&str, &str, i32)],
) -> EndpointSlice {
    EndpointSlice {
        metadata: ObjectMeta {
            name: Some(format!("{svc}-abc")),
            namespace: Some(ns.into()),
            labels: Some([("kubernetes.io/service-name".to_string(), svc.to_string())].into()),
            ..Default::default()
        },
        address_type: "IPv4".into(),
        endpoints: eps
            .iter()
            .map(|(ip, host, ready)| Endpoint {
                addresses: vec![ip.to_string()],
                hostname: host.map(|h| h.to_string()),
                conditions: Some(EndpointConditions { ready: *ready, ..Default::default() }),
                ..Default::default()
            })
            .collect(),
        ports: Some(
            ports
                .iter()
                .map(|(n, p, port)| EndpointPort {
                    name: Some(n.to_string()),
                    protocol: Some(p.to_string()),
                    port: Some(*port),
                    app_protocol: None,
                })
                .collect(),
        ),
    }
}

/// default/web (ClusterIP 10.43.0.20, ports http 80/TCP and dns 53/UDP,
/// endpoint 10.42.0.5 hostname-less and 10.42.1.7 not ready), default/db
/// (headless, StatefulSet endpoints db-0 10.42.0.9 and db-1 10.42.1.9, port
/// pg 5432), default/ext (ExternalName example.com), default/alias
/// (ExternalName web.default.svc.cluster.local), default/empty (headless, no
/// endpoints), kube-system/kube-dns.
pub(crate) fn model() -> Model {
    let mut m = Model { synced: true, ..Default::default() };
    for ns in ["default", "kube-system"] {
        m.namespaces.insert(ns.into());
    }
    let mut add_svc = |s: Service| {
        m.services.insert(
            format!("{}/{}", s.metadata.namespace.clone().unwrap(), s.metadata.name.clone().unwrap()),
            Arc::new(s),
        );
    };
    add_svc(service("default", "web", "10.43.0.20", &[("http", "TCP", 80), ("dns", "UDP", 53)]));
    add_svc(service("default", "db", "None", &[("pg", "TCP", 5432)]));
    add_svc(service("default", "empty", "None", &[("x", "TCP", 1)]));
    add_svc(service("kube-system", "kube-dns", "10.43.0.10", &[("dns", "UDP", 53)]));
    for (name, target) in [("ext", "example.com"), ("alias", "web.default.svc.cluster.local")] {
        let mut s = service("default", name, "", &[]);
        let spec = s.spec.as_mut().unwrap();
        spec.type_ = Some("ExternalName".into());
        spec.external_name = Some(target.into());
        spec.cluster_ip = None;
        spec.cluster_ips = None;
        add_svc(s);
    }
    let slices = [
        slice(
            "default",
            "web",
            &[("10.42.0.5", None, Some(true)), ("10.42.1.7", None, Some(false))],
            &[("http", "TCP", 8080)],
        ),
        slice(
            "default",
            "db",
            &[("10.42.0.9", Some("db-0"), Some(true)), ("10.42.1.9", Some("db-1"), None)],
            &[("pg", "TCP", 5432)],
        ),
    ];
    for s in slices {
        m.slices.insert(format!("default/{}", s.metadata.name.clone().unwrap()), Arc::new(s));
    }
    m
}

pub(crate) fn zone() -> Zone {
    Zone { domain: "cluster.local".into(), dns_ips: vec!["10.43.0.10".parse().unwrap()] }
}

fn index() -> Index {
    Index::build(&zone(), &model())
}

fn q(index: &Index, name: &str, t: RecordType) -> Answer {
    lookup(index, &Name::from_ascii(name).unwrap(), t)
}

fn ips(a: &Answer) -> Vec<IpAddr> {
    let mut v: Vec<IpAddr> = a
        .answers()
        .iter()
        .filter_map(|r| match &r.data {
            RData::A(a) => Some(IpAddr::V4(a.0)),
            RData::AAAA(a) => Some(IpAddr::V6(a.0)),
            _ => None,
        })
        .collect();
    v.sort();
    v
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn assert_nodata(a: &Answer) {
    match a {
        Answer::Local { rcode, answers, authority, .. } => {
            assert_eq!(*rcode, ResponseCode::NoError);
            assert!(answers.is_empty(), "NODATA has no answers: {answers:?}");
            assert_eq!(authority.len(), 1);
            assert_eq!(authority[0].record_type(), RecordType::SOA);
        }
        other => panic!("expected NODATA, got {other:?}"),
    }
}

fn assert_nxdomain(a: &Answer) {
    match a {
        Answer::Local { rcode, answers, authority, .. } => {
            assert_eq!(*rcode, ResponseCode::NXDomain);
            assert!(answers.is_empty());
            assert_eq!(authority[0].record_type(), RecordType::SOA);
        }
        other => panic!("expected NXDOMAIN, got {other:?}"),
    }
}

#[test]
fn cluster_ip_service_a_record_is_its_cluster_ip_with_ttl_5() {
    let a = q(&index(), "web.default.svc.cluster.local.", RecordType::A);
    assert_eq!(a.rcode(), Some(ResponseCode::NoError));
    assert_eq!(ips(&a), vec![ip("10.43.0.20")]);
    assert_eq!(a.answers()[0].ttl, 5);
}

#[test]
fn names_are_case_insensitive() {
    let a = q(&index(), "WEB.Default.SVC.cluster.LOCAL.", RecordType::A);
    assert_eq!(ips(&a), vec![ip("10.43.0.20")]);
}

#[test]
fn aaaa_for_ipv4_only_service_is_nodata() {
    assert_nodata(&q(&index(), "web.default.svc.cluster.local.", RecordType::AAAA));
}

#[test]
fn missing_service_is_nxdomain_with_soa() {
    let a = q(&index(), "nope.default.svc.cluster.local.", RecordType::A);
    assert_nxdomain(&a);
    let Answer::Local { authority, .. } = &a else { unreachable!() };
    let RData::SOA(soa) = &authority[0].data else { panic!() };
    assert_eq!(soa.mname.to_ascii(), "ns.dns.cluster.local.");
    assert_eq!(soa.rname.to_ascii(), "hostmaster.cluster.local.");
    assert_eq!((soa.refresh, soa.retry, soa.expire, soa.minimum), (7200, 1800, 86400, 5));
}

#[test]
fn service_in_missing_namespace_is_nxdomain() {
    assert_nxdomain(&q(&index(), "web.nons.svc.cluster.local.", RecordType::A));
    assert_nxdomain(&q(&index(), "nons.svc.cluster.local.", RecordType::A));
}

#[test]
fn before_sync_a_missing_name_is_servfail() {
    let mut m = model();
    m.synced = false;
    let a = q(&Index::build(&zone(), &m), "nope.default.svc.cluster.local.", RecordType::A);
    assert_eq!(a.rcode(), Some(ResponseCode::ServFail));
}

#[test]
fn existing_namespace_and_zone_parents_are_nodata() {
    let i = index();
    for n in [
        "default.svc.cluster.local.",
        "svc.cluster.local.",
        "cluster.local.",
        "pod.cluster.local.",
        "default.pod.cluster.local.",
    ] {
        assert_nodata(&q(&i, n, RecordType::A));
    }
}

#[test]
fn unknown_labels_under_the_zone_are_nxdomain() {
    let i = index();
    assert_nxdomain(&q(&i, "foo.cluster.local.", RecordType::A));
    assert_nxdomain(&q(&i, "a.b.c.web.default.svc.cluster.local.", RecordType::A));
}

#[test]
fn existing_name_with_other_type_is_nodata() {
    let i = index();
    assert_nodata(&q(&i, "web.default.svc.cluster.local.", RecordType::MX));
    assert_nodata(&q(&i, "web.default.svc.cluster.local.", RecordType::TXT));
    assert_nodata(&q(&i, "web.default.svc.cluster.local.", RecordType::CNAME));
    assert_nxdomain(&q(&i, "nope.default.svc.cluster.local.", RecordType::MX));
}

#[test]
fn headless_service_answers_ready_endpoint_addresses() {
    let a = q(&index(), "db.default.svc.cluster.local.", RecordType::A);
    // db-1 has ready unset: CoreDNS counts nil as ready.
    assert_eq!(ips(&a), vec![ip("10.42.0.9"), ip("10.42.1.9")]);
}

#[test]
fn headless_service_without_endpoints_is_nxdomain() {
    assert_nxdomain(&q(&index(), "empty.default.svc.cluster.local.", RecordType::A));
}

#[test]
fn not_ready_endpoints_are_left_out_unless_published() {
    let i = index();
    assert_nxdomain(&q(&i, "10-42-1-7.web.default.svc.cluster.local.", RecordType::A));
    let mut m = model();
    let mut web = (*m.services["default/web"]).clone();
    web.spec.as_mut().unwrap().publish_not_ready_addresses = Some(true);
    m.services.insert("default/web".into(), Arc::new(web));
    let a = q(&Index::build(&zone(), &m), "10-42-1-7.web.default.svc.cluster.local.", RecordType::A);
    assert_eq!(ips(&a), vec![ip("10.42.1.7")]);
}

#[test]
fn statefulset_hostname_records() {
    let i = index();
    assert_eq!(ips(&q(&i, "db-0.db.default.svc.cluster.local.", RecordType::A)), vec![ip("10.42.0.9")]);
    assert_eq!(ips(&q(&i, "db-1.db.default.svc.cluster.local.", RecordType::A)), vec![ip("10.42.1.9")]);
    assert_nxdomain(&q(&i, "db-2.db.default.svc.cluster.local.", RecordType::A));
}

#[test]
fn endpoint_without_hostname_has_dashed_ip_name() {
    let a = q(&index(), "10-42-0-5.web.default.svc.cluster.local.", RecordType::A);
    assert_eq!(ips(&a), vec![ip("10.42.0.5")]);
}

fn srvs(a: &Answer) -> Vec<(u16, u16, u16, String)> {
    let mut v: Vec<_> = a
        .answers()
        .iter()
        .filter_map(|r| match &r.data {
            RData::SRV(s) => Some((s.priority, s.weight, s.port, s.target.to_ascii())),
            _ => None,
        })
        .collect();
    v.sort();
    v
}

#[test]
fn srv_for_named_port_of_cluster_ip_service_targets_the_service() {
    let a = q(&index(), "_http._tcp.web.default.svc.cluster.local.", RecordType::SRV);
    assert_eq!(srvs(&a), vec![(0, 100, 80, "web.default.svc.cluster.local.".into())]);
    let Answer::Local { additionals, .. } = &a else { panic!() };
    assert_eq!(additionals.len(), 1);
    assert_eq!(additionals[0].name.to_ascii(), "web.default.svc.cluster.local.");
}

#[test]
fn srv_protocol_must_match() {
    let i = index();
    assert_eq!(srvs(&q(&i, "_dns._udp.web.default.svc.cluster.local.", RecordType::SRV)).len(), 1);
    assert_nxdomain(&q(&i, "_dns._tcp.web.default.svc.cluster.local.", RecordType::SRV));
    assert_nxdomain(&q(&i, "_nope._tcp.web.default.svc.cluster.local.", RecordType::SRV));
}

#[test]
fn srv_port_name_also_answers_a() {
    let a = q(&index(), "_http._tcp.web.default.svc.cluster.local.", RecordType::A);
    assert_eq!(ips(&a), vec![ip("10.43.0.20")]);
}

#[test]
fn srv_without_underscores_is_accepted_like_coredns() {
    let a = q(&index(), "http.tcp.web.default.svc.cluster.local.", RecordType::SRV);
    assert_eq!(srvs(&a).len(), 1);
    assert_eq!(a.answers()[0].name.to_ascii(), "http.tcp.web.default.svc.cluster.local.");
}

#[test]
fn srv_on_service_name_lists_every_port_with_split_weight() {
    let a = q(&index(), "web.default.svc.cluster.local.", RecordType::SRV);
    assert_eq!(
        srvs(&a),
        vec![
            (0, 50, 53, "web.default.svc.cluster.local.".into()),
            (0, 50, 80, "web.default.svc.cluster.local.".into())
        ]
    );
}

#[test]
fn srv_for_headless_service_has_one_record_per_endpoint() {
    let a = q(&index(), "_pg._tcp.db.default.svc.cluster.local.", RecordType::SRV);
    assert_eq!(
        srvs(&a),
        vec![
            (0, 50, 5432, "db-0.db.default.svc.cluster.local.".into()),
            (0, 50, 5432, "db-1.db.default.svc.cluster.local.".into())
        ]
    );
    let Answer::Local { additionals, .. } = &a else { panic!() };
    let mut extra: Vec<String> = additionals.iter().map(|r| r.name.to_ascii()).collect();
    extra.sort();
    assert_eq!(extra, vec!["db-0.db.default.svc.cluster.local.", "db-1.db.default.svc.cluster.local."]);
}

#[test]
fn pods_insecure_answers_the_spelled_address() {
    let i = index();
    assert_eq!(ips(&q(&i, "10-42-0-99.default.pod.cluster.local.", RecordType::A)), vec![ip("10.42.0.99")]);
    assert_nodata(&q(&i, "10-42-0-99.default.pod.cluster.local.", RecordType::AAAA));
    assert_eq!(ips(&q(&i, "fd00--1.default.pod.cluster.local.", RecordType::AAAA)), vec![ip("fd00::1")]);
    assert_nxdomain(&q(&i, "not-an-ip.default.pod.cluster.local.", RecordType::A));
    assert_nxdomain(&q(&i, "10-42-0-99.nons.pod.cluster.local.", RecordType::A));
}

#[test]
fn pod_label_parsing() {
    assert_eq!(pod_address("1-2-3-4"), Some(ip("1.2.3.4")));
    assert_eq!(pod_address("2001-db8--1"), Some(ip("2001:db8::1")));
    assert_eq!(pod_address("1-2-3"), None);
}

#[test]
fn external_name_is_a_cname_and_chased_upstream() {
    let i = index();
    let a = q(&i, "ext.default.svc.cluster.local.", RecordType::A);
    let Answer::Local { rcode, answers, chase, .. } = &a else { panic!() };
    assert_eq!(*rcode, ResponseCode::NoError);
    assert!(matches!(&answers[0].data, RData::CNAME(c) if c.0.to_ascii() == "example.com."));
    assert_eq!(chase.as_ref().map(|n| n.to_ascii()), Some("example.com.".into()));
    let c = q(&i, "ext.default.svc.cluster.local.", RecordType::CNAME);
    assert_eq!(c.answers().len(), 1);
    // SRV drops external names (CoreDNS: "SRV for external services is not yet implemented").
    assert_nodata(&q(&i, "ext.default.svc.cluster.local.", RecordType::SRV));
}

#[test]
fn external_name_inside_the_cluster_domain_is_followed_locally() {
    let a = q(&index(), "alias.default.svc.cluster.local.", RecordType::A);
    assert_eq!(a.answers().len(), 2);
    assert!(matches!(&a.answers()[0].data, RData::CNAME(_)));
    assert_eq!(ips(&a), vec![ip("10.43.0.20")]);
}

#[test]
fn ptr_for_cluster_ip_and_hostname_endpoints() {
    let i = index();
    let a = q(&i, "20.0.43.10.in-addr.arpa.", RecordType::PTR);
    assert!(matches!(&a.answers()[0].data, RData::PTR(p) if p.0.to_ascii() == "web.default.svc.cluster.local."));
    let a = q(&i, "9.0.42.10.in-addr.arpa.", RecordType::PTR);
    assert!(matches!(&a.answers()[0].data, RData::PTR(p) if p.0.to_ascii() == "db-0.db.default.svc.cluster.local."));
}

#[test]
fn reverse_misses_fall_through_to_upstream() {
    let i = index();
    // Endpoint without hostname: no PTR (CoreDNS serviceRecordForIP).
    assert_eq!(q(&i, "5.0.42.10.in-addr.arpa.", RecordType::PTR), Answer::Forward);
    assert_eq!(q(&i, "1.1.168.192.in-addr.arpa.", RecordType::PTR), Answer::Forward);
    assert_eq!(q(&i, "20.0.43.10.in-addr.arpa.", RecordType::A), Answer::Forward);
}

#[test]
fn other_zones_are_forwarded() {
    assert_eq!(q(&index(), "example.com.", RecordType::A), Answer::Forward);
    assert_eq!(q(&index(), "notcluster.local.", RecordType::A), Answer::Forward);
}

#[test]
fn apex_soa_ns_and_dns_version() {
    let i = index();
    let soa = q(&i, "cluster.local.", RecordType::SOA);
    assert_eq!(soa.answers()[0].record_type(), RecordType::SOA);
    assert_nodata(&q(&i, "web.default.svc.cluster.local.", RecordType::SOA));
    let ns = q(&i, "cluster.local.", RecordType::NS);
    assert!(matches!(&ns.answers()[0].data, RData::NS(n) if n.0.to_ascii() == "ns.dns.cluster.local."));
    assert_eq!(ips(&q(&i, "ns.dns.cluster.local.", RecordType::A)), vec![ip("10.43.0.10")]);
    let v = q(&i, "dns-version.cluster.local.", RecordType::TXT);
    assert!(matches!(&v.answers()[0].data, RData::TXT(t) if t.to_string() == "1.1.0"));
    assert_nxdomain(&q(&i, "cluster.local.", RecordType::TXT));
}

#[test]
fn zone_transfer_is_refused() {
    assert_eq!(q(&index(), "cluster.local.", RecordType::AXFR), Answer::Refused);
}

#[test]
fn reverse_name_parsing() {
    assert_eq!(address_from_reverse("4.3.2.1.in-addr.arpa"), Some(ip("1.2.3.4")));
    let v6 = "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa";
    assert_eq!(address_from_reverse(v6), Some(ip("fd00::1")));
    assert_eq!(address_from_reverse("3.2.1.in-addr.arpa"), None);
}

#[test]
fn service_changes_show_after_rebuild() {
    let mut m = model();
    m.services.remove("default/web");
    assert_nxdomain(&q(&Index::build(&zone(), &m), "web.default.svc.cluster.local.", RecordType::A));
}

#[test]
fn resolv_conf_upstreams_skip_ourselves_and_keep_loopback_stubs() {
    let text =
        "# generated\nnameserver 127.0.0.53\nnameserver 10.0.0.2\nnameserver fe80::1%eth0\noptions edns0\nsearch x\n";
    let me: SocketAddr = "10.0.0.2:53".parse().unwrap();
    let ups = crate::upstreams_from_resolv_conf(text, me);
    assert_eq!(ups, vec!["127.0.0.53:53".parse().unwrap(), "[fe80::1]:53".parse().unwrap()]);
}

#[test]
fn endpoint_slice_names_are_dns_subdomains() {
    assert_eq!(crate::endpoint_slice_name("Server_1"), "kube-dns-server-1");
}

#[test]
fn rbac_grants_watch_and_publish() {
    let (role, binding) = crate::publish::rbac();
    let rules = role.rules.unwrap();
    assert!(rules
        .iter()
        .any(|r| r.resources.as_ref().unwrap() == &["endpointslices"] && r.verbs.contains(&"create".into())));
    assert!(rules
        .iter()
        .any(|r| r.resources.as_ref().unwrap() == &["namespaces"] && r.verbs.contains(&"watch".into())));
    assert_eq!(binding.subjects.unwrap()[0].name, crate::USER);
}

fn config() -> crate::DnsConfig {
    let kc = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
    crate::DnsConfig {
        client: kube::Client::try_from(kc).unwrap(),
        listen: "192.168.5.1:1053".parse().unwrap(),
        cluster_domain: "cluster.local".into(),
        service_ip: ip("10.43.0.10"),
        server_name: "server-a".into(),
        advertise_address: ip("192.168.5.1"),
        upstream: vec![],
    }
}

#[tokio::test]
async fn kube_dns_service_has_coredns_labels_ports_and_no_selector() {
    let s = crate::publish::service(&config());
    let labels = s.metadata.labels.unwrap();
    assert_eq!(labels["k8s-app"], "kube-dns");
    assert_eq!(labels["kubernetes.io/cluster-service"], "true");
    assert_eq!(labels["kubernetes.io/name"], "CoreDNS");
    let spec = s.spec.unwrap();
    assert_eq!(spec.cluster_ip.as_deref(), Some("10.43.0.10"));
    assert!(spec.selector.is_none());
    let ports: Vec<_> = spec
        .ports
        .unwrap()
        .into_iter()
        .map(|p| (p.name.unwrap(), p.protocol.unwrap(), p.port, p.target_port))
        .collect();
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int;
    assert_eq!(
        ports,
        vec![("dns".into(), "UDP".into(), 53, Some(Int(1053))), ("dns-tcp".into(), "TCP".into(), 53, Some(Int(1053)))]
    );
}

#[tokio::test]
async fn this_servers_endpoint_slice_lists_its_advertise_address() {
    let s = crate::publish::endpoint_slice(&config(), "uid-1");
    assert_eq!(s.metadata.name.as_deref(), Some("kube-dns-server-a"));
    let labels = s.metadata.labels.unwrap();
    assert_eq!(labels["kubernetes.io/service-name"], "kube-dns");
    assert_eq!(labels["endpointslice.kubernetes.io/managed-by"], "cluster-dns.rkube.io");
    assert_eq!(s.address_type, "IPv4");
    assert_eq!(s.endpoints[0].addresses, vec!["192.168.5.1".to_string()]);
    assert_eq!(s.endpoints[0].conditions.as_ref().unwrap().ready, Some(true));
    let ports: Vec<_> =
        s.ports.unwrap().into_iter().map(|p| (p.name.unwrap(), p.protocol.unwrap(), p.port.unwrap())).collect();
    assert_eq!(ports, vec![("dns".into(), "UDP".into(), 1053), ("dns-tcp".into(), "TCP".into(), 1053)]);
    let owner = &s.metadata.owner_references.unwrap()[0];
    assert_eq!((owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()), ("Service", "kube-dns", "uid-1"));
}

#[test]
fn informer_events_relist_and_sync() {
    use kube::runtime::watcher::Event;
    let mut m = Model::default();
    let mut init = Model::default();
    let mut synced = [false; 3];
    let web = service("default", "web", "10.43.0.20", &[("http", "TCP", 80)]);
    let ns = k8s_openapi::api::core::v1::Namespace {
        metadata: ObjectMeta { name: Some("default".into()), ..Default::default() },
        ..Default::default()
    };
    crate::apply(&mut m, &mut init, &mut synced, crate::Change::Service(Event::Init));
    crate::apply(&mut m, &mut init, &mut synced, crate::Change::Service(Event::InitApply(web.clone())));
    assert!(m.services.is_empty(), "a relist takes effect at InitDone");
    crate::apply(&mut m, &mut init, &mut synced, crate::Change::Service(Event::InitDone));
    assert_eq!(m.services.len(), 1);
    assert!(!m.synced);
    crate::apply(&mut m, &mut init, &mut synced, crate::Change::Slice(Event::InitDone));
    crate::apply(&mut m, &mut init, &mut synced, crate::Change::Namespace(Event::Init));
    crate::apply(&mut m, &mut init, &mut synced, crate::Change::Namespace(Event::InitApply(ns.clone())));
    crate::apply(&mut m, &mut init, &mut synced, crate::Change::Namespace(Event::InitDone));
    assert!(m.synced);
    let i = Index::build(&zone(), &m);
    assert_eq!(ips(&q(&i, "web.default.svc.cluster.local.", RecordType::A)), vec![ip("10.43.0.20")]);
    crate::apply(&mut m, &mut init, &mut synced, crate::Change::Service(Event::Delete(web)));
    assert_nxdomain(&q(&Index::build(&zone(), &m), "web.default.svc.cluster.local.", RecordType::A));
}

#[test]
fn headless_answers_rotate_like_loadbalance() {
    let a = q(&index(), "db.default.svc.cluster.local.", RecordType::A);
    let mut first = a.answers().to_vec();
    let mut second = a.answers().to_vec();
    crate::server::rotate_addresses(&mut first, 0);
    crate::server::rotate_addresses(&mut second, 1);
    assert_ne!(first[0], second[0]);
    assert_eq!(first.len(), second.len());
}
