//! The cluster network across nodes (issue 8), end to end on one machine:
//! a `rkube server` (control plane and cluster DNS) on a test bridge, and
//! two `rkube agent`s joined with a token, each in its own network
//! namespace behind a veth — real containerd, CNI, routes, kube-proxy
//! (nftables), DNS and NetworkPolicy, driven with the real kubectl.
//!
//! Checked, as the seeds and upstream describe them: pod-to-pod across
//! nodes by IP; Service names resolve through cluster DNS from pods on
//! both nodes and the ClusterIP spreads connections over endpoints on both
//! nodes; NodePort answers from outside the nodes; a node reaches a
//! ClusterIP; a pod whose readiness fails stops receiving traffic; a
//! headless StatefulSet's pods resolve by their stable names;
//! ExternalName answers with its CNAME; seed 004's init-container example
//! (myapp-pod waiting for myservice and mydb) starts once both Services
//! exist; a default-deny NetworkPolicy blocks and an allow rule admits
//! exactly the peers it names. Traffic stays on the test's bridge, its
//! namespaces and loopback. Needs root, containerd and the CNI plugins.

mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::netns::{NetnsAgent, TestNetwork};
use support::{TestServer, TestServerOptions};

const NODES: [&str; 2] = ["net-a", "net-b"];
/// How long pods, nodes and rules get to settle (generous: CI runs tests side by side).
const SETTLE: Duration = Duration::from_secs(120);

/// The cluster under test; fields drop in order: agents, then namespaces, then the server.
struct Cluster {
    agents: Vec<NetnsAgent>,
    net: TestNetwork,
    server: TestServer,
    dns_port: u16,
    busybox: String,
    _tmp: tempfile::TempDir,
}

impl Cluster {
    fn start() -> Cluster {
        support::require_root_and_runtime();
        let net = TestNetwork::create(NODES.len());
        let cluster_cidr = support::free_cluster_cidr();
        let service_cidr = support::free_cluster_cidr();
        let dns_port = support::free_port();
        let server = TestServer::start_with(TestServerOptions {
            controllers: true,
            scheduler: true,
            bind_address: Some("0.0.0.0".parse().unwrap()),
            advertise_address: Some(net.gateway.into()),
            extra_args: vec![
                "--cluster-cidr".into(),
                cluster_cidr.clone(),
                "--service-cidr".into(),
                service_cidr.clone(),
                "--cluster-dns-port".into(),
                dns_port.to_string(),
            ],
            ..Default::default()
        });
        let token = {
            let kubeconfig = server.kubeconfig();
            let out = support::run_rkube(
                &["token", "create", "--kubeconfig", kubeconfig.to_str().unwrap()],
                Duration::from_secs(30),
            );
            assert!(out.status.success(), "rkube token create: {}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8(out.stdout).unwrap().trim().to_string()
        };
        let tmp = tempfile::Builder::new().prefix("rkube-net-").tempdir().unwrap();
        let mut agents = Vec::new();
        for (host, node) in net.hosts.iter().zip(NODES) {
            let data_dir = tmp.path().join(node);
            // Nothing runs yet: build-local leaves the archives the agent imports at start.
            let out = support::run_rkube(
                &["images", "build-local", "--data-dir", data_dir.to_str().unwrap()],
                Duration::from_secs(120),
            );
            assert!(out.status.success(), "rkube images build-local: {}", String::from_utf8_lossy(&out.stderr));
            let args: Vec<String> = [
                "--server",
                &format!("https://{}:{}", net.gateway, server.port()),
                "--token",
                &token,
                "--node-name",
                node,
                "--node-ip",
                &host.ip.to_string(),
                "--cluster-cidr",
                &cluster_cidr,
                "--service-cidr",
                &service_cidr,
                "--cluster-dns",
                &cidr_nth(&service_cidr, 10),
                "--eviction-hard",
                "memory.available<1Mi,nodefs.available<1%,imagefs.available<1%",
                "--image-gc-high-threshold",
                "100",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            let log = tmp.path().join(format!("{node}.log"));
            agents.push(NetnsAgent::start(host, node, &args, &data_dir, &log));
        }
        let version = rkube_kubelet::images::busybox_version(Path::new(rkube_kubelet::images::HOST_BUSYBOX)).unwrap();
        let cluster = Cluster {
            agents,
            net,
            server,
            dns_port,
            busybox: format!("docker.io/library/busybox:{version}"),
            _tmp: tmp,
        };
        for node in NODES {
            cluster.wait(&format!("node {node} Ready"), || {
                let n = cluster.server.kubectl(&["get", "node", node, "-o", "json"]);
                n.status.success()
                    && serde_json::from_slice::<Value>(&n.stdout).is_ok_and(|n| {
                        support::node::condition(&n, "Ready")["status"] == "True" && n["spec"]["podCIDR"].is_string()
                    })
            });
        }
        cluster.wait("the default ServiceAccount", || {
            cluster.server.kubectl(&["get", "serviceaccount", "default"]).status.success()
        });
        cluster
    }

    /// Polls `f` every 500 ms for up to [`SETTLE`]; panics with the server's and agents' logs.
    fn wait(&self, what: &str, mut f: impl FnMut() -> bool) {
        let deadline = Instant::now() + SETTLE;
        while Instant::now() < deadline {
            if f() {
                return;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        panic!("timed out waiting for {what}\n{}", self.logs());
    }

    fn logs(&self) -> String {
        let mut s = format!("--- server ---\n{}", tail(&self.server.logs()));
        for ((a, node), host) in self.agents.iter().zip(NODES).zip(&self.net.hosts) {
            s.push_str(&format!("\n--- agent {node} ---\n{}", tail(&a.logs())));
            let routes = host.run("ip", &["route"]);
            let tables = host.run("nft", &["list", "tables"]);
            s.push_str(&format!(
                "\n--- {node}: ip route ---\n{}--- {node}: nft list tables ---\n{}",
                String::from_utf8_lossy(&routes.stdout),
                String::from_utf8_lossy(&tables.stdout)
            ));
        }
        s
    }

    fn kubectl(&self, args: &[&str]) -> String {
        let out = self.server.kubectl(args);
        assert!(out.status.success(), "kubectl {args:?}: {}\n{}", String::from_utf8_lossy(&out.stderr), self.logs());
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn apply(&self, obj: &Value) {
        self.server.kubectl_stdin("apply", obj);
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", "json"]);
        serde_json::from_str(&self.kubectl(&all)).unwrap()
    }

    /// `kubectl exec <pod> -- sh -c <script>`: (success, stdout).
    fn exec(&self, pod: &str, script: &str) -> (bool, String) {
        let out = self.server.kubectl(&["exec", pod, "--", "sh", "-c", script]);
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// A pod on `node` running `script` in the busybox image, labelled `labels`.
    fn pod(&self, name: &str, node: &str, labels: Value, script: &str, readiness: Option<&str>) {
        let mut container = json!({
            "name": "main",
            "image": self.busybox,
            "command": ["sh", "-c", script],
        });
        if let Some(probe) = readiness {
            container["readinessProbe"] =
                json!({"exec": {"command": ["sh", "-c", probe]}, "periodSeconds": 1, "failureThreshold": 1});
        }
        self.apply(&json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "nodeSelector": {"kubernetes.io/hostname": node},
                "terminationGracePeriodSeconds": 1,
                "containers": [container],
            }
        }));
    }

    fn pod_ip(&self, name: &str) -> String {
        let mut ip = String::new();
        self.wait(&format!("pod {name} Ready with an IP"), || {
            let p = self.json(&["pod", name]);
            ip = p["status"]["podIP"].as_str().unwrap_or("").to_string();
            !ip.is_empty() && support::node::condition(&p, "Ready")["status"] == "True"
        });
        ip
    }

    /// The distinct bodies of `n` HTTP GETs of `url` from `pod` (failures left out).
    fn answers(&self, pod: &str, url: &str, n: usize) -> BTreeSet<String> {
        // (busybox 1.35's `wget -T` crashes; `timeout` bounds each request instead.)
        let script = format!("for i in $(seq {n}); do timeout 3 wget -qO- {url} || echo FAILED; done");
        let (_, out) = self.exec(pod, &script);
        out.lines().map(str::trim).filter(|l| !l.is_empty() && *l != "FAILED").map(str::to_string).collect()
    }
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(60)..].join("\n")
}

/// The `n`th address of an IPv4 CIDR (`10.43.0.0/16`, 10 → `10.43.0.10`).
fn cidr_nth(cidr: &str, n: u32) -> String {
    let base: std::net::Ipv4Addr = cidr.split('/').next().unwrap().parse().unwrap();
    std::net::Ipv4Addr::from(u32::from(base) + n).to_string()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// The web server: answers its pod name on :8080 while /tmp/ready exists for its readiness probe.
const WEB: &str = "mkdir -p /www && hostname > /www/index.html && touch /tmp/ready && exec httpd -f -p 8080 -h /www";

/// `dig` against the server's DNS port.
fn dig(c: &Cluster, name: &str, rtype: &str) -> String {
    let out = std::process::Command::new("dig")
        .args([&format!("@{}", c.net.gateway), "-p", &c.dns_port.to_string(), "+time=3", "+tries=1", name, rtype])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The records of `rtype` in a dig answer section, as their last field.
fn answers(dig: &str, rtype: &str) -> BTreeSet<String> {
    let mut in_answer = false;
    let mut out = BTreeSet::new();
    for l in dig.lines() {
        if l.starts_with(";; ANSWER SECTION") {
            in_answer = true;
        } else if l.starts_with(";;") || l.trim().is_empty() {
            in_answer = false;
        } else if in_answer {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.get(3) == Some(&rtype) {
                out.insert(f[4..].join(" "));
            }
        }
    }
    out
}

/// One cluster for the whole walk-through (two real nodes take a while to
/// start). Conformance behaviours it proves, by upstream testname:
/// "Networking, intra pod http" (pods reach pods on every node by IP),
/// "Networking, intra pod http, from node" (a node reaches a Service's pods),
/// "Service, NodePort Service", "Service, ClusterIP type, session affinity
/// to ClientIP", "Kubernetes Service" (reached from pods, which have its
/// token mounted), "DNS, cluster" (`kubernetes.default` resolves through DNS),
/// "DNS, services", "DNS, PQDN for services", "DNS, for ExternalName
/// Services", "DNS, resolve the hostname".
#[test]
fn pods_services_dns_and_network_policies_work_across_two_nodes() {
    let c = Cluster::start();
    let (node_a, node_b) = (NODES[0], NODES[1]);
    for (name, node) in [("web-a", node_a), ("web-b", node_b)] {
        c.pod(name, node, json!({"app": "web"}), WEB, Some("test -f /tmp/ready"));
    }
    for (name, node) in [("client-a", node_a), ("client-b", node_b)] {
        c.pod(name, node, json!({"role": "client"}), "exec sleep 3600", None);
    }
    let web_a = c.pod_ip("web-a");
    let web_b = c.pod_ip("web-b");
    c.pod_ip("client-a");
    c.pod_ip("client-b");

    // Pod to pod across nodes, by IP (routes between the nodes' pod ranges).
    assert_eq!(c.answers("client-a", &format!("http://{web_b}:8080"), 1), set(&["web-b"]), "{}", c.logs());
    assert_eq!(c.answers("client-b", &format!("http://{web_a}:8080"), 1), set(&["web-a"]), "{}", c.logs());

    // A NodePort Service over both web pods: through its DNS name from pods on
    // both nodes, the ClusterIP spreads connections over the endpoints on both nodes.
    c.apply(&json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {"type": "NodePort", "selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}
    }));
    let svc = c.json(&["service", "web"]);
    let cluster_ip = svc["spec"]["clusterIP"].as_str().unwrap().to_string();
    let node_port = svc["spec"]["ports"][0]["nodePort"].as_u64().unwrap();
    for client in ["client-a", "client-b"] {
        let mut seen = BTreeSet::new();
        c.wait(&format!("{client} to reach both web pods through web.default.svc.cluster.local"), || {
            seen.extend(c.answers(client, "http://web.default.svc.cluster.local", 10));
            seen == set(&["web-a", "web-b"])
        });
        // The short name resolves through the pod's search path too.
        assert!(!c.answers(client, "http://web", 1).is_empty(), "{client}: the short name web\n{}", c.logs());
    }

    // NodePort from outside the nodes (the test's bridge) on either node's address.
    for host in &c.net.hosts {
        let url = format!("http://{}:{node_port}/", host.ip);
        c.wait(&format!("NodePort {url} to answer from the bridge"), || {
            let out = std::process::Command::new("busybox")
                .args(["timeout", "3", "busybox", "wget", "-qO-", &url])
                .output()
                .unwrap();
            out.status.success() && String::from_utf8_lossy(&out.stdout).starts_with("web-")
        });
    }
    // A node itself reaches the ClusterIP (through the service device and kube-proxy's output rules).
    c.wait("node net-a to reach the ClusterIP", || {
        let out = c.net.hosts[0]
            .run("busybox", &["timeout", "3", "busybox", "wget", "-qO-", &format!("http://{cluster_ip}/")]);
        out.status.success() && String::from_utf8_lossy(&out.stdout).starts_with("web-")
    });

    // The `kubernetes` Service reaches the API server from a pod: its HTTPS
    // port answers a plain-HTTP request with the API server's own refusal.
    // (busybox's TLS client omits signature_algorithms, which rustls requires,
    // so the request is not made over TLS.)
    c.wait("client-b to reach the API server through kubernetes.default.svc:443", || {
        let (_, out) = c.exec(
            "client-b",
            "test -s /var/run/secrets/kubernetes.io/serviceaccount/token && printf 'GET /version HTTP/1.0\\r\\n\\r\\n' | timeout 5 nc kubernetes.default.svc 443",
        );
        out.contains("Client sent an HTTP request to an HTTPS server.")
    });
    // `kubernetes.default` resolves through the pod's search path (libc's
    // resolver, as ping uses it; busybox's nslookup applies no search list).
    let kubernetes_ip = c.json(&["service", "kubernetes"])["spec"]["clusterIP"].as_str().unwrap().to_string();
    let (_, out) = c.exec("client-a", "ping -c 1 -W 1 kubernetes.default | head -1");
    assert!(out.contains(&format!("({kubernetes_ip})")), "kubernetes.default: {out}\n{}", c.logs());

    // The cluster DNS is published as kube-system/kube-dns, backed by the server.
    let dns = c.json(&["-n", "kube-system", "service", "kube-dns"]);
    assert_eq!(dns["metadata"]["labels"]["k8s-app"], "kube-dns");
    assert_eq!(dns["metadata"]["labels"]["kubernetes.io/cluster-service"], "true");
    let slices = c.json(&["-n", "kube-system", "endpointslices", "-l", "kubernetes.io/service-name=kube-dns"]);
    let addresses: Vec<&Value> =
        slices["items"].as_array().unwrap().iter().flat_map(|s| s["endpoints"].as_array().unwrap().iter()).collect();
    assert!(
        addresses.iter().any(|e| e["addresses"][0] == c.net.gateway.to_string()),
        "the kube-dns slices list the server: {slices}"
    );

    // ClientIP session affinity: every request from one client lands on one pod.
    c.apply(&json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web-sticky"},
        "spec": {"selector": {"app": "web"}, "sessionAffinity": "ClientIP", "ports": [{"port": 80, "targetPort": 8080}]}
    }));
    c.wait("web-sticky to answer", || !c.answers("client-a", "http://web-sticky", 1).is_empty());
    for client in ["client-a", "client-b"] {
        let seen = c.answers(client, "http://web-sticky", 12);
        assert_eq!(seen.len(), 1, "{client} must stick to one pod: {seen:?}\n{}", c.logs());
    }

    // LoadBalancer: the built-in service load balancer publishes the nodes'
    // addresses, and each answers on the Service's port.
    c.apply(&json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web-lb"},
        "spec": {"type": "LoadBalancer", "selector": {"app": "web"}, "ports": [{"port": 8081, "targetPort": 8080}]}
    }));
    let node_ips: BTreeSet<String> = c.net.hosts.iter().map(|h| h.ip.to_string()).collect();
    c.wait("web-lb's ingress to list both nodes", || {
        let lb = c.json(&["service", "web-lb"]);
        let ingress: BTreeSet<String> = lb["status"]["loadBalancer"]["ingress"]
            .as_array()
            .map(|a| a.iter().filter_map(|i| i["ip"].as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        ingress == node_ips
    });
    for ip in &node_ips {
        let url = format!("http://{ip}:8081/");
        c.wait(&format!("LoadBalancer {url} to answer from the bridge"), || {
            let out = std::process::Command::new("busybox")
                .args(["timeout", "3", "busybox", "wget", "-qO-", &url])
                .output()
                .unwrap();
            out.status.success() && String::from_utf8_lossy(&out.stdout).starts_with("web-")
        });
    }

    // Readiness: web-b fails its probe and drops out of the Service within seconds.
    assert!(c.exec("web-b", "rm /tmp/ready").0);
    c.wait("web-b NotReady", || support::node::condition(&c.json(&["pod", "web-b"]), "Ready")["status"] == "False");
    c.wait("the Service to send everything to web-a", || {
        c.answers("client-a", &format!("http://{cluster_ip}"), 10) == set(&["web-a"])
    });
    assert!(c.exec("web-b", "touch /tmp/ready").0);

    // Headless StatefulSet: stable names resolve to the pods' addresses.
    c.apply(&json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "db"},
        "spec": {"clusterIP": "None", "selector": {"app": "db"}, "ports": [{"name": "tcp", "port": 9000}]}
    }));
    c.apply(&json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "serviceName": "db", "replicas": 2,
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"terminationGracePeriodSeconds": 1,
                         "containers": [{"name": "db", "image": c.busybox, "command": ["sleep", "3600"]}]}
            }
        }
    }));
    for ordinal in 0..2 {
        let pod = format!("db-{ordinal}");
        let ip = c.pod_ip(&pod);
        let name = format!("{pod}.db.default.svc.cluster.local");
        c.wait(&format!("{name} to resolve to {ip}"), || {
            let (ok, out) = c.exec("client-b", &format!("nslookup {name}"));
            ok && out.lines().any(|l| l.starts_with("Address") && l.trim_end().ends_with(&ip))
        });
    }

    // The headless Service's SRV records name each pod (and its partial name resolves from pods).
    let srv = answers(&dig(&c, "_tcp._tcp.db.default.svc.cluster.local", "SRV"), "SRV");
    let targets: BTreeSet<String> =
        srv.iter().filter_map(|r| r.split_whitespace().last().map(str::to_string)).collect();
    assert_eq!(
        targets,
        set(&["db-0.db.default.svc.cluster.local.", "db-1.db.default.svc.cluster.local."]),
        "SRV of the headless db: {srv:?}"
    );
    let db0 = c.pod_ip("db-0");
    let (_, out) = c.exec("client-a", "ping -c 1 -W 1 db-0.db | head -1");
    assert!(out.contains(&format!("({db0})")), "db-0.db from the search path: {out}");

    // ExternalName: the cluster DNS answers with the CNAME. (The targets are
    // cluster names: CoreDNS, and rkube, resolve a target outside the
    // cluster domain upstream, and the test sends nothing off the machine.)
    c.apply(&json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "ext"},
        "spec": {"type": "ExternalName", "externalName": "web.default.svc.cluster.local"}
    }));
    c.wait("ext.default.svc.cluster.local to answer CNAME web.default.svc.cluster.local.", || {
        answers(&dig(&c, "ext.default.svc.cluster.local", "A"), "CNAME") == set(&["web.default.svc.cluster.local."])
    });
    // A changed externalName is answered at once; as a ClusterIP Service it gets an A record.
    c.kubectl(&["patch", "service", "ext", "-p", r#"{"spec":{"externalName":"db.default.svc.cluster.local"}}"#]);
    c.wait("ext to answer the new CNAME", || {
        answers(&dig(&c, "ext.default.svc.cluster.local", "A"), "CNAME") == set(&["db.default.svc.cluster.local."])
    });
    c.kubectl(&[
        "patch",
        "service",
        "ext",
        "-p",
        r#"{"spec":{"type":"ClusterIP","externalName":null,"ports":[{"port":80}]}}"#,
    ]);
    let ext_ip = c.json(&["service", "ext"])["spec"]["clusterIP"].as_str().unwrap().to_string();
    c.wait("ext to answer its ClusterIP", || {
        answers(&dig(&c, "ext.default.svc.cluster.local", "A"), "A") == set(&[&ext_ip])
    });

    // Seed 004: myapp-pod's init containers wait for the myservice and mydb names.
    let wait_for = |svc: &str| {
        format!(
            "until nslookup {svc}.$(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace).svc.cluster.local; do echo waiting for {svc}; sleep 2; done"
        )
    };
    c.apply(&json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "myapp-pod", "labels": {"app.kubernetes.io/name": "MyApp"}},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "myapp-container", "image": c.busybox,
                            "command": ["sh", "-c", "echo The app is running! && sleep 3600"]}],
            "initContainers": [
                {"name": "init-myservice", "image": c.busybox, "command": ["sh", "-c", wait_for("myservice")]},
                {"name": "init-mydb", "image": c.busybox, "command": ["sh", "-c", wait_for("mydb")]}
            ]
        }
    }));
    c.wait("myapp-pod's first init container to be running", || {
        let p = c.json(&["pod", "myapp-pod"]);
        p["status"]["initContainerStatuses"][0]["state"]["running"].is_object()
    });
    std::thread::sleep(Duration::from_secs(5));
    let p = c.json(&["pod", "myapp-pod"]);
    assert_eq!(p["status"]["phase"], "Pending", "myapp-pod must wait for its Services: {}", p["status"]);
    for (svc, port) in [("myservice", 9376), ("mydb", 9377)] {
        c.apply(&json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": svc},
            "spec": {"ports": [{"protocol": "TCP", "port": 80, "targetPort": port}]}
        }));
    }
    c.wait("myapp-pod Running once myservice and mydb exist", || {
        c.json(&["pod", "myapp-pod"])["status"]["phase"] == "Running"
    });

    // NetworkPolicy: default-deny ingress for the web pods blocks every client...
    let web_urls = [format!("http://{web_a}:8080"), format!("http://{web_b}:8080")];
    c.apply(&json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": "web-deny-all"},
        "spec": {"podSelector": {"matchLabels": {"app": "web"}}, "policyTypes": ["Ingress"]}
    }));
    for client in ["client-a", "client-b"] {
        for url in &web_urls {
            c.wait(&format!("{client} to be refused by {url}"), || c.answers(client, url, 1).is_empty());
        }
    }
    // ...and an allow rule admits exactly the pods it names, on the port it names,
    // following label changes.
    c.apply(&json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": "web-allow-frontend"},
        "spec": {
            "podSelector": {"matchLabels": {"app": "web"}},
            "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "frontend"}}}],
                         "ports": [{"protocol": "TCP", "port": 8080}]}]
        }
    }));
    c.kubectl(&["label", "pod", "client-a", "role=frontend", "--overwrite"]);
    for url in &web_urls {
        c.wait(&format!("client-a (role=frontend) to be admitted by {url}"), || {
            !c.answers("client-a", url, 1).is_empty()
        });
        assert!(
            c.answers("client-b", url, 2).is_empty(),
            "client-b is not named by the allow rule: {url}\n{}",
            c.logs()
        );
    }
    c.kubectl(&["label", "pod", "client-a", "role=client", "--overwrite"]);
    c.wait("client-a to be refused again once its label no longer matches", || {
        web_urls.iter().all(|url| c.answers("client-a", url, 1).is_empty())
    });
    c.kubectl(&["delete", "networkpolicy", "--all"]);
    c.wait("client-b to reach web-a again without policies", || !c.answers("client-b", &web_urls[0], 1).is_empty());
}
