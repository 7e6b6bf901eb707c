//! The server on 127.0.0.1:<free port>, fed a model directly (no API
//! server), queried with `dig` over UDP and TCP. A second server for another
//! domain stands in as the upstream, so forwarding is exercised on loopback.

use std::net::SocketAddr;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use kube::api::ObjectMeta;
use rkube_dns::server::{serve_on, IndexCell};
use rkube_dns::{Index, Model, Zone};
use tokio::net::{TcpListener, UdpSocket};
use tokio::sync::oneshot;

fn svc(ns: &str, name: &str, ip: &str, port: (&str, i32)) -> Service {
    Service {
        metadata: ObjectMeta { name: Some(name.into()), namespace: Some(ns.into()), ..Default::default() },
        spec: Some(ServiceSpec {
            cluster_ip: Some(ip.into()),
            ports: Some(vec![ServicePort {
                name: Some(port.0.into()),
                port: port.1,
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        status: None,
    }
}

fn model() -> Model {
    let mut m = Model { synced: true, ..Default::default() };
    m.namespaces.insert("default".into());
    m.services.insert("default/web".into(), Arc::new(svc("default", "web", "10.43.0.20", ("http", 80))));
    m.services.insert("default/db".into(), Arc::new(svc("default", "db", "None", ("pg", 5432))));
    let slice = EndpointSlice {
        metadata: ObjectMeta {
            name: Some("db-x".into()),
            namespace: Some("default".into()),
            labels: Some([("kubernetes.io/service-name".to_string(), "db".to_string())].into()),
            ..Default::default()
        },
        address_type: "IPv4".into(),
        endpoints: vec![Endpoint {
            addresses: vec!["10.42.0.9".into()],
            hostname: Some("db-0".into()),
            conditions: Some(EndpointConditions { ready: Some(true), ..Default::default() }),
            ..Default::default()
        }],
        ports: Some(vec![EndpointPort {
            name: Some("pg".into()),
            port: Some(5432),
            protocol: Some("TCP".into()),
            app_protocol: None,
        }]),
    };
    m.slices.insert("default/db-x".into(), Arc::new(slice));
    // A headless service with 100 endpoints: more than fits 512 bytes.
    m.services.insert("default/big".into(), Arc::new(svc("default", "big", "None", ("http", 80))));
    let big = EndpointSlice {
        metadata: ObjectMeta {
            name: Some("big-x".into()),
            namespace: Some("default".into()),
            labels: Some([("kubernetes.io/service-name".to_string(), "big".to_string())].into()),
            ..Default::default()
        },
        address_type: "IPv4".into(),
        endpoints: (0..100)
            .map(|i| Endpoint { addresses: vec![format!("10.42.7.{i}")], ..Default::default() })
            .collect(),
        ports: None,
    };
    m.slices.insert("default/big-x".into(), Arc::new(big));
    m
}

/// Binds UDP and TCP on the same free loopback port.
async fn bind() -> (UdpSocket, TcpListener, SocketAddr) {
    loop {
        let udp = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = udp.local_addr().unwrap();
        if let Ok(tcp) = TcpListener::bind(addr).await {
            return (udp, tcp, addr);
        }
    }
}

struct Running {
    addr: SocketAddr,
    _stop: oneshot::Sender<()>,
}

async fn start(domain: &str, model: Model, upstream: Vec<SocketAddr>) -> Running {
    let zone = Zone { domain: domain.into(), dns_ips: vec!["10.43.0.10".parse().unwrap()] };
    let cell = IndexCell::new(Index::build(&zone, &model));
    let (udp, tcp, addr) = bind().await;
    let (tx, rx) = oneshot::channel::<()>();
    tokio::spawn(serve_on(udp, tcp, cell, upstream, async move {
        let _ = rx.await;
    }));
    Running { addr, _stop: tx }
}

/// Runs dig; returns (status, answer lines).
async fn dig(server: SocketAddr, name: &str, qtype: &str, tcp: bool) -> (String, Vec<String>) {
    let (status, _, answers) = dig_with(server, name, qtype, tcp, &[]).await;
    (status, answers)
}

/// Runs dig with extra options; returns (status, header flags, answer lines).
async fn dig_with(
    server: SocketAddr,
    name: &str,
    qtype: &str,
    tcp: bool,
    extra: &[&str],
) -> (String, Vec<String>, Vec<String>) {
    let mut cmd = tokio::process::Command::new("dig");
    cmd.arg(format!("@{}", server.ip())).arg("-p").arg(server.port().to_string()).arg(name).arg(qtype).args([
        "+tries=1",
        "+time=5",
        "+noall",
        "+comments",
        "+answer",
    ]);
    if tcp {
        cmd.arg("+tcp");
    }
    cmd.args(extra);
    let out = cmd.output().await.expect("dig (dnsutils) is installed");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let status = text
        .lines()
        .find_map(|l| l.split("status: ").nth(1))
        .map(|s| s.split(',').next().unwrap_or("").to_string())
        .unwrap_or_else(|| panic!("no status in dig output:\n{text}"));
    let answers = text
        .lines()
        .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    let flags = text
        .lines()
        .find_map(|l| l.split("flags: ").nth(1))
        .map(|f| f.split(';').next().unwrap_or("").split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    (status, flags, answers)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dig_over_udp_and_tcp_answers_as_coredns() {
    let upstream = start("upstream.test", model(), vec![]).await;
    let dns = start("cluster.local", model(), vec![upstream.addr]).await;

    for tcp in [false, true] {
        let (status, answers) = dig(dns.addr, "web.default.svc.cluster.local", "A", tcp).await;
        assert_eq!(status, "NOERROR");
        assert_eq!(answers, vec!["web.default.svc.cluster.local. 5 IN A 10.43.0.20"], "tcp={tcp}");

        let (status, answers) = dig(dns.addr, "nope.default.svc.cluster.local", "A", tcp).await;
        assert_eq!(status, "NXDOMAIN");
        assert!(answers.is_empty());

        let (status, answers) = dig(dns.addr, "web.default.svc.cluster.local", "AAAA", tcp).await;
        assert_eq!(status, "NOERROR");
        assert!(answers.is_empty());
    }

    let (_, answers) = dig(dns.addr, "db-0.db.default.svc.cluster.local", "A", false).await;
    assert_eq!(answers, vec!["db-0.db.default.svc.cluster.local. 5 IN A 10.42.0.9"]);
    let (_, answers) = dig(dns.addr, "_pg._tcp.db.default.svc.cluster.local", "SRV", false).await;
    assert_eq!(
        answers,
        vec!["_pg._tcp.db.default.svc.cluster.local. 5 IN SRV 0 100 5432 db-0.db.default.svc.cluster.local."]
    );
    let (_, answers) = dig(dns.addr, "10-42-3-4.default.pod.cluster.local", "A", true).await;
    assert_eq!(answers, vec!["10-42-3-4.default.pod.cluster.local. 5 IN A 10.42.3.4"]);
    let (_, answers) = dig(dns.addr, "20.0.43.10.in-addr.arpa", "PTR", false).await;
    assert_eq!(answers, vec!["20.0.43.10.in-addr.arpa. 5 IN PTR web.default.svc.cluster.local."]);

    // Another domain: forwarded to the upstream server, over UDP and TCP.
    for tcp in [false, true] {
        let (status, answers) = dig(dns.addr, "web.default.svc.upstream.test", "A", tcp).await;
        assert_eq!(status, "NOERROR");
        assert_eq!(answers, vec!["web.default.svc.upstream.test. 5 IN A 10.43.0.20"], "tcp={tcp}");
        let (status, _) = dig(dns.addr, "nope.default.svc.upstream.test", "A", tcp).await;
        assert_eq!(status, "NXDOMAIN");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_are_authoritative_and_large_ones_truncate_over_udp() {
    let dns = start("cluster.local", model(), vec![]).await;
    let (_, flags, _) = dig_with(dns.addr, "web.default.svc.cluster.local", "A", false, &[]).await;
    assert!(flags.contains(&"aa".to_string()), "{flags:?}");
    let (_, flags, _) = dig_with(dns.addr, "nope.default.svc.cluster.local", "A", false, &[]).await;
    assert!(flags.contains(&"aa".to_string()), "{flags:?}");
    // Negative answers carry the zone's SOA in the authority section.
    for (name, status) in [("nope.default.svc.cluster.local", "NXDOMAIN"), ("default.svc.cluster.local", "NOERROR")] {
        let (st, _, lines) = dig_with(dns.addr, name, "A", false, &["+authority"]).await;
        assert_eq!(st, status);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with("cluster.local. 5 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. "),
            "{lines:?}"
        );
        assert!(lines[0].ends_with(" 7200 1800 86400 5"), "{lines:?}");
    }
    // 100 A records do not fit 512 bytes: UDP without EDNS sets TC ...
    let (_, flags, _) = dig_with(dns.addr, "big.default.svc.cluster.local", "A", false, &["+noedns", "+ignore"]).await;
    assert!(flags.contains(&"tc".to_string()), "{flags:?}");
    // ... and TCP carries all of them.
    let (status, _, answers) = dig_with(dns.addr, "big.default.svc.cluster.local", "A", true, &[]).await;
    assert_eq!(status, "NOERROR");
    assert_eq!(answers.len(), 100);
}

#[tokio::test]
async fn without_upstream_other_names_are_servfail() {
    let dns = start("cluster.local", model(), vec![]).await;
    let (status, _) = dig(dns.addr, "example.com", "A", false).await;
    assert_eq!(status, "SERVFAIL");
}

#[tokio::test]
async fn port_in_use_names_the_flag() {
    let (_udp, _tcp, addr) = bind().await;
    let err = rkube_dns::server::bind(addr).await.unwrap_err().to_string();
    assert!(err.contains("--cluster-dns-port"), "{err}");
}
