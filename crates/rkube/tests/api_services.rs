//! Services through the real kubectl: defaulting, ClusterIP allocation
//! from the service CIDR (10.43.0.0/16), NodePort allocation from
//! 30000-32767 with conflict detection and release, headless and
//! ExternalName Services, allocations surviving a restart, and the
//! `kubernetes` Service with its Endpoints and EndpointSlice. Tests named
//! after a conformance behaviour carry its testname.

mod api_common;
mod support;

use std::net::Ipv4Addr;

use api_common::{apply, apply_fails, fails, ok};
use serde_json::Value;
use support::{TestServer, TestServerOptions};

fn json(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
}

fn service(name: &str, ty: &str, extra_spec: &str, port_extra: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\nspec:\n  type: {ty}\n  selector: {{app: {name}}}\n{extra_spec}  ports:\n  - port: 80\n{port_extra}"
    )
}

fn cluster_ip(s: &TestServer, name: &str) -> String {
    ok(s, &["get", "svc", name, "-o", "jsonpath={.spec.clusterIP}"])
}

fn node_port(s: &TestServer, name: &str) -> u16 {
    let np = ok(s, &["get", "svc", name, "-o", "jsonpath={.spec.ports[0].nodePort}"]);
    np.parse().unwrap_or_else(|_| panic!("no nodePort on {name}: {np:?}"))
}

fn in_service_cidr(ip: &str) -> bool {
    let ip: Ipv4Addr = ip.parse().unwrap_or_else(|_| panic!("not an IPv4 address: {ip:?}"));
    ip.octets()[..2] == [10, 43] && ip != Ipv4Addr::new(10, 43, 0, 0) && ip != Ipv4Addr::new(10, 43, 255, 255)
}

/// A ClusterIP Service gets an address from the service CIDR and upstream's
/// defaults; a second Service asking for that address is refused; deleting
/// the first releases it.
#[test]
fn cluster_ip_allocation_defaults_and_conflicts() {
    let s = TestServer::start();
    apply(&s, &service("web", "ClusterIP", "", ""));
    let svc = json(&ok(&s, &["get", "svc", "web", "-o", "json"]));
    let ip = svc["spec"]["clusterIP"].as_str().unwrap().to_string();
    assert!(in_service_cidr(&ip), "{ip}");
    assert_eq!(svc["spec"]["clusterIPs"], serde_json::json!([ip]));
    assert_eq!(svc["spec"]["sessionAffinity"], "None");
    assert_eq!(svc["spec"]["ipFamilies"], serde_json::json!(["IPv4"]));
    assert_eq!(svc["spec"]["ipFamilyPolicy"], "SingleStack");
    assert_eq!(svc["spec"]["internalTrafficPolicy"], "Cluster");
    assert_eq!(svc["spec"]["ports"][0]["protocol"], "TCP");
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 80);
    assert!(svc["spec"].get("externalTrafficPolicy").is_none(), "{svc}");

    // Applying the same manifest again changes nothing (the IP is kept).
    apply(&s, &service("web", "ClusterIP", "", ""));
    assert_eq!(cluster_ip(&s, "web"), ip);

    let taken = service("other", "ClusterIP", &format!("  clusterIP: {ip}\n"), "");
    let err = apply_fails(&s, &taken);
    assert!(err.contains("spec.clusterIPs"), "{err}");
    assert!(err.contains(&format!("failed to allocate IP {ip}: provided IP is already allocated")), "{err}");
    let outside = service("outside", "ClusterIP", "  clusterIP: 10.99.0.1\n", "");
    let err = apply_fails(&s, &outside);
    assert!(err.contains("is not in the valid range"), "{err}");

    ok(&s, &["delete", "svc", "web"]);
    apply(&s, &taken);
    assert_eq!(cluster_ip(&s, "other"), ip);

    let err =
        fails(&s, &["patch", "svc", "other", "-p", r#"{"spec":{"clusterIP":"10.43.7.7","clusterIPs":["10.43.7.7"]}}"#]);
    assert!(err.contains("may not change once set"), "{err}");
}

/// Conformance "Service, NodePort Service": a NodePort Service gets a
/// ClusterIP and a node port from 30000-32767; a second Service asking for
/// that port is refused; changing the type to ClusterIP releases the port.
#[test]
fn node_port_service() {
    let s = TestServer::start();
    apply(&s, &service("np", "NodePort", "", ""));
    let svc = json(&ok(&s, &["get", "svc", "np", "-o", "json"]));
    assert!(in_service_cidr(svc["spec"]["clusterIP"].as_str().unwrap()), "{svc}");
    assert_eq!(svc["spec"]["externalTrafficPolicy"], "Cluster");
    let port = node_port(&s, "np");
    assert!((30000..=32767).contains(&port), "{port}");

    let clash = service("clash", "NodePort", "", &format!("    nodePort: {port}\n"));
    let err = apply_fails(&s, &clash);
    assert!(
        err.contains(&format!("spec.ports[0].nodePort: Invalid value: {port}: provided port is already allocated")),
        "{err}"
    );
    let low = service("low", "NodePort", "", "    nodePort: 80\n");
    let err = apply_fails(&s, &low);
    assert!(err.contains("provided port is not in the valid range. The range of valid ports is 30000-32767"), "{err}");

    // Type change NodePort -> ClusterIP drops and releases the port.
    ok(&s, &["patch", "svc", "np", "-p", r#"{"spec":{"type":"ClusterIP"}}"#]);
    let after = json(&ok(&s, &["get", "svc", "np", "-o", "json"]));
    assert!(after["spec"]["ports"][0].get("nodePort").is_none(), "{after}");
    assert_eq!(after["spec"]["clusterIP"], svc["spec"]["clusterIP"]);
    apply(&s, &clash);
    assert_eq!(node_port(&s, "clash"), port);
}

/// Conformance "Service, change type, ClusterIP to ExternalName" and
/// "Service, change type, ExternalName to ClusterIP": the ClusterIP is
/// dropped and released, then a new one is allocated; headless Services
/// get none.
#[test]
fn change_type_cluster_ip_to_external_name_and_back() {
    let s = TestServer::start();
    apply(&s, &service("flip", "ClusterIP", "", ""));
    let ip = cluster_ip(&s, "flip");
    ok(&s, &["patch", "svc", "flip", "-p", r#"{"spec":{"type":"ExternalName","externalName":"example.com"}}"#]);
    let en = json(&ok(&s, &["get", "svc", "flip", "-o", "json"]));
    assert!(en["spec"].get("clusterIP").is_none(), "{en}");
    assert_eq!(en["spec"]["externalName"], "example.com");
    // The address is free again.
    apply(&s, &service("reuse", "ClusterIP", &format!("  clusterIP: {ip}\n"), ""));
    ok(&s, &["patch", "svc", "flip", "-p", r#"{"spec":{"type":"ClusterIP","externalName":null}}"#]);
    let back = cluster_ip(&s, "flip");
    assert!(in_service_cidr(&back) && back != ip, "{back}");

    apply(&s, &service("headless", "ClusterIP", "  clusterIP: None\n", ""));
    assert_eq!(cluster_ip(&s, "headless"), "None");
    let err =
        apply_fails(&s, "apiVersion: v1\nkind: Service\nmetadata:\n  name: noname\nspec:\n  type: ExternalName\n");
    assert!(err.contains("spec.externalName: Required value"), "{err}");
}

/// Allocations are rebuilt from the stored Services at start: after a
/// restart, the addresses and ports in use are still refused.
#[test]
fn allocations_survive_a_restart() {
    let dir = tempfile::Builder::new().prefix("rkube-test-").tempdir().expect("data dir");
    let options = TestServerOptions { data_dir: Some(dir.path().to_path_buf()), ..Default::default() };
    let mut s = TestServer::start_with(options.clone());
    apply(&s, &service("keep", "NodePort", "", ""));
    let (ip, port) = (cluster_ip(&s, "keep"), node_port(&s, "keep"));
    s.stop();
    let s = TestServer::start_with(options);
    let err = apply_fails(&s, &service("again", "ClusterIP", &format!("  clusterIP: {ip}\n"), ""));
    assert!(err.contains("provided IP is already allocated"), "{err}");
    let err = apply_fails(&s, &service("again", "NodePort", "", &format!("    nodePort: {port}\n")));
    assert!(err.contains("provided port is already allocated"), "{err}");
    assert_eq!(cluster_ip(&s, "kubernetes"), "10.43.0.1");
}

/// Conformance "Kubernetes Service" and "Find Kubernetes Service in default
/// Namespace": the `kubernetes` Service exists at 10.43.0.1:443 and its
/// Endpoints and EndpointSlice point at the API server (and are put back
/// when deleted). The server advertises a routable address of this host
/// (upstream refuses a loopback endpoint); it still listens on 127.0.0.1.
#[test]
fn kubernetes_service() {
    let advertised = local_unicast_ip();
    let s = TestServer::start_with(TestServerOptions { advertise_address: Some(advertised), ..Default::default() });
    let advertised = advertised.to_string();
    let all =
        ok(&s, &["get", "svc", "-A", "-o", "jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {end}"]);
    assert!(all.contains("default/kubernetes"), "{all}");
    let svc = json(&ok(&s, &["get", "svc", "kubernetes", "-o", "json"]));
    assert_eq!(svc["spec"]["clusterIP"], "10.43.0.1");
    assert_eq!(svc["spec"]["type"], "ClusterIP");
    assert_eq!(svc["spec"]["ports"][0]["name"], "https");
    assert_eq!(svc["spec"]["ports"][0]["port"], 443);
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], s.port());
    assert_eq!(svc["metadata"]["labels"]["component"], "apiserver");
    assert!(svc["spec"].get("selector").is_none());

    let ep = json(&ok(&s, &["get", "endpoints", "kubernetes", "-o", "json"]));
    assert_eq!(ep["subsets"][0]["addresses"][0]["ip"], advertised.as_str());
    assert_eq!(ep["subsets"][0]["ports"][0]["port"], s.port());
    let slices = json(&ok(&s, &["get", "endpointslices", "-l", "kubernetes.io/service-name=kubernetes", "-o", "json"]));
    let slice = &slices["items"][0];
    assert_eq!(slice["metadata"]["name"], "kubernetes");
    assert_eq!(slice["addressType"], "IPv4");
    assert_eq!(slice["endpoints"][0]["addresses"][0], advertised.as_str());
    assert_eq!(slice["ports"][0]["port"], s.port());
    let table = ok(&s, &["get", "svc", "kubernetes"]);
    assert!(table.contains("10.43.0.1") && table.contains("443/TCP"), "{table}");

    // The reconciler (every 10 s) puts deleted endpoints back.
    ok(&s, &["delete", "endpoints", "kubernetes"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !s.kubectl(&["get", "endpoints", "kubernetes"]).status.success() {
        assert!(std::time::Instant::now() < deadline, "the kubernetes endpoints did not come back");
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
}

/// An IPv4 address of a non-loopback interface of this host, to advertise.
fn local_unicast_ip() -> std::net::IpAddr {
    if_addrs::get_if_addrs()
        .expect("list this host's interfaces")
        .into_iter()
        .map(|i| i.ip())
        .find(|ip| matches!(ip, std::net::IpAddr::V4(v4) if !v4.is_loopback() && !v4.is_link_local() && !v4.is_unspecified()))
        .expect("an IPv4 address on a non-loopback interface of this host")
}

/// Upstream refuses a loopback endpoint, so a server advertising 127.0.0.1
/// keeps the `kubernetes` Service without Endpoints or EndpointSlice (and
/// says why in its log) while the API works.
#[test]
fn loopback_advertise_address_leaves_the_kubernetes_service_without_endpoints() {
    let s = TestServer::start();
    let svc = json(&ok(&s, &["get", "svc", "kubernetes", "-o", "json"]));
    assert_eq!(svc["spec"]["clusterIP"], "10.43.0.1");
    let err = fails(&s, &["get", "endpoints", "kubernetes"]);
    assert!(err.contains(r#"endpoints "kubernetes" not found"#), "{err}");
    let slices = ok(&s, &["get", "endpointslices", "-l", "kubernetes.io/service-name=kubernetes", "-o", "name"]);
    assert_eq!(slices.trim(), "");
    assert!(s.logs().contains("set --advertise-address to a routable address of this host"), "{}", s.logs());
    ok(&s, &["create", "configmap", "still-works", "--from-literal=a=b"]);
}

/// `kubectl expose deployment`: the Service gets the deployment's selector,
/// an allocated ClusterIP and the requested target port.
#[test]
fn kubectl_expose_allocates_a_cluster_ip() {
    let s = TestServer::start();
    apply(
        &s,
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers: [{name: web, image: 'nginx:1.27'}]\n",
    );
    let out = ok(&s, &["expose", "deployment", "web", "--port=80", "--target-port=8080", "--type=NodePort"]);
    assert!(out.contains("service/web exposed"), "{out}");
    let svc = json(&ok(&s, &["get", "svc", "web", "-o", "json"]));
    assert!(in_service_cidr(svc["spec"]["clusterIP"].as_str().unwrap()), "{svc}");
    assert_eq!(svc["spec"]["selector"]["app"], "web");
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 8080);
    assert!((30000..=32767).contains(&node_port(&s, "web")));
    let table = ok(&s, &["get", "svc", "web"]);
    assert!(table.contains("NodePort") && table.contains("80:"), "{table}");

    // `kubectl create service nodeport` (a protobuf body) is allocated too.
    ok(&s, &["create", "service", "nodeport", "np", "--tcp=80:8080"]);
    assert!(in_service_cidr(&cluster_ip(&s, "np")));
    assert!((30000..=32767).contains(&node_port(&s, "np")));
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
}

/// The allocation record as upstream 1.33 shows it: the default ServiceCIDR
/// `kubernetes` and an IPAddress per ClusterIP (parentRef the Service),
/// removed with the Service.
#[test]
fn service_cidr_and_ip_addresses() {
    let s = TestServer::start();
    assert_eq!(ok(&s, &["get", "servicecidrs", "kubernetes", "-o", "jsonpath={.spec.cidrs[0]}"]), "10.43.0.0/16");
    let kubernetes = json(&ok(&s, &["get", "ipaddresses", "10.43.0.1", "-o", "json"]));
    assert_eq!(kubernetes["spec"]["parentRef"]["name"], "kubernetes");
    assert_eq!(kubernetes["metadata"]["labels"]["ipaddress.kubernetes.io/managed-by"], "ipallocator.k8s.io");
    apply(&s, &service("web", "ClusterIP", "", ""));
    let ip = cluster_ip(&s, "web");
    wait_until("the IPAddress of web", || s.kubectl(&["get", "ipaddress", &ip]).status.success());
    let addr = json(&ok(&s, &["get", "ipaddress", &ip, "-o", "json"]));
    assert_eq!(addr["spec"]["parentRef"]["resource"], "services");
    assert_eq!(addr["spec"]["parentRef"]["namespace"], "default");
    ok(&s, &["delete", "svc", "web"]);
    wait_until("the IPAddress of web to go", || !s.kubectl(&["get", "ipaddress", &ip]).status.success());
}
