//! Real traffic through the rules, in network namespaces this test creates
//! (`rkt-proxy-<pid>-{n,e,c}`: a "node", an "endpoints" host with two pod
//! addresses, and a "client" outside the cluster), all removed on drop.
//! Needs root (CAP_NET_ADMIN), `ip`, `nft`, `conntrack` and `/bin/busybox`
//! (scripts/test.sh installs them); fails, saying what is missing,
//! otherwise.

use std::collections::BTreeSet;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rkube_proxy::model::{Protocol, ServiceInfo, ServicePort, SliceEndpoint, SliceInfo};
use rkube_proxy::{Params, Proxier, Runner, ServiceKey};

fn sh(ns: Option<&str>, args: &[&str]) -> std::process::Output {
    let mut c = match ns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns]);
            c.args(args);
            c
        }
        None => {
            let mut c = Command::new(args[0]);
            c.args(&args[1..]);
            c
        }
    };
    c.output().expect("run command")
}

fn ok(ns: Option<&str>, args: &[&str]) {
    let o = sh(ns, args);
    assert!(o.status.success(), "{args:?} in {ns:?}: {}", String::from_utf8_lossy(&o.stderr));
}

/// The namespaces and servers; everything goes on drop.
struct Lab {
    node: String,
    ep: String,
    client: String,
    servers: Vec<Child>,
    dir: std::path::PathBuf,
}

impl Drop for Lab {
    fn drop(&mut self) {
        for s in &mut self.servers {
            let _ = s.kill();
            let _ = s.wait();
        }
        for ns in [&self.node, &self.ep, &self.client] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn lab() -> Lab {
    assert!(std::path::Path::new("/bin/busybox").exists(), "needs /bin/busybox (apt-get install busybox-static)");
    for tool in ["nft", "conntrack"] {
        let found = Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success());
        assert!(found, "needs {tool} in PATH (apt-get install nftables conntrack)");
    }
    let pid = std::process::id();
    let base = format!("rkt-proxy-{pid}");
    let lab = Lab {
        node: format!("{base}-n"),
        ep: format!("{base}-e"),
        client: format!("{base}-c"),
        servers: Vec::new(),
        dir: std::env::temp_dir().join(&base),
    };
    let o = sh(None, &["ip", "netns", "add", &lab.node]);
    assert!(
        o.status.success(),
        "cannot create a netns (run as root / with CAP_NET_ADMIN and CAP_SYS_ADMIN): {}",
        String::from_utf8_lossy(&o.stderr)
    );
    ok(None, &["ip", "netns", "add", &lab.ep]);
    ok(None, &["ip", "netns", "add", &lab.client]);
    let (n, e, c) = (Some(lab.node.as_str()), Some(lab.ep.as_str()), Some(lab.client.as_str()));
    // Links are created inside the test namespaces only.
    ok(n, &["ip", "link", "add", "rkpn0", "type", "veth", "peer", "name", "rkpe0", "netns", &lab.ep]);
    ok(n, &["ip", "link", "add", "rkpc0", "type", "veth", "peer", "name", "rkpx0", "netns", &lab.client]);
    for (ns, cmds) in [
        (
            n,
            vec![
                vec!["ip", "link", "set", "lo", "up"],
                vec!["ip", "addr", "add", "10.99.1.1/24", "dev", "rkpn0"],
                vec!["ip", "addr", "add", "10.99.2.1/24", "dev", "rkpc0"],
                vec!["ip", "link", "set", "rkpn0", "up"],
                vec!["ip", "link", "set", "rkpc0", "up"],
                vec!["ip", "route", "add", "10.43.0.0/16", "dev", "rkpn0"],
                vec!["sysctl", "-qw", "net.ipv4.ip_forward=1"],
            ],
        ),
        (
            e,
            vec![
                vec!["ip", "link", "set", "lo", "up"],
                vec!["ip", "addr", "add", "10.99.1.2/24", "dev", "rkpe0"],
                vec!["ip", "addr", "add", "10.99.1.3/24", "dev", "rkpe0"],
                vec!["ip", "link", "set", "rkpe0", "up"],
                vec!["ip", "route", "add", "default", "via", "10.99.1.1"],
            ],
        ),
        (
            c,
            vec![
                vec!["ip", "link", "set", "lo", "up"],
                vec!["ip", "addr", "add", "10.99.2.2/24", "dev", "rkpx0"],
                vec!["ip", "link", "set", "rkpx0", "up"],
                vec!["ip", "route", "add", "default", "via", "10.99.2.1"],
            ],
        ),
    ] {
        for cmd in cmds {
            ok(ns, &cmd);
        }
    }
    lab
}

impl Lab {
    /// An HTTP server answering `name` on `ip:8080` in the endpoints netns.
    fn serve(&mut self, ip: &str, name: &str) {
        let dir = self.dir.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("index.html"), name).unwrap();
        let child = Command::new("ip")
            .args(["netns", "exec", &self.ep, "/bin/busybox", "httpd", "-f", "-p", &format!("{ip}:8080"), "-h"])
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.servers.push(child);
        // Wait until it answers (readiness, not a timing assertion).
        for _ in 0..100 {
            if self.get(&self.node.clone(), &format!("{ip}:8080")).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("httpd on {ip} never answered");
    }

    /// An HTTP/1.0 GET from `ns` with `busybox nc` (`addr` is `ip:port`):
    /// the body, or nc's error output.
    fn get(&self, ns: &str, addr: &str) -> Result<String, String> {
        let (ip, port) = addr.split_once(':').unwrap();
        let script = format!("printf 'GET / HTTP/1.0\\r\\n\\r\\n' | /bin/busybox nc -w 3 {ip} {port}");
        let o = sh(Some(ns), &["sh", "-c", &script]);
        let out = String::from_utf8_lossy(&o.stdout).to_string();
        match out.split_once("\r\n\r\n") {
            Some((head, body)) if o.status.success() && head.starts_with("HTTP/1.") => Ok(body.trim().to_string()),
            _ => Err(format!("{} {}", String::from_utf8_lossy(&o.stderr).trim(), out.trim())),
        }
    }
}

fn web(node_port: Option<u16>) -> ServiceInfo {
    ServiceInfo {
        cluster_ip: Some("10.43.0.5".parse().unwrap()),
        ports: vec![ServicePort { name: "http".into(), protocol: Protocol::Tcp, port: 80, node_port }],
        ..Default::default()
    }
}

fn slice(svc: &str, ips: &[&str]) -> SliceInfo {
    let on_n2: Vec<(&str, &str)> = ips.iter().map(|ip| (*ip, "n2")).collect();
    slice_on(svc, &on_n2)
}

/// A slice with (address, node name) endpoints, all ready.
fn slice_on(svc: &str, eps: &[(&str, &str)]) -> SliceInfo {
    SliceInfo {
        service: ServiceKey::new("default", svc),
        ports: vec![("http".into(), Protocol::Tcp, 8080)],
        endpoints: eps
            .iter()
            .map(|(ip, node)| SliceEndpoint {
                ip: ip.parse().unwrap(),
                ready: true,
                serving: true,
                terminating: false,
                node_name: Some(node.to_string()),
            })
            .collect(),
    }
}

#[test]
fn cluster_ip_node_port_and_reject_carry_real_traffic() {
    let mut lab = lab();
    lab.serve("10.99.1.2", "A");
    lab.serve("10.99.1.3", "B");
    let params = Params {
        table: "rkt-proxy-test".into(),
        node_name: "n1".into(),
        node_ips: vec!["10.99.2.1".parse().unwrap()],
        cluster_cidr: "10.99.1.0/24".into(),
    };
    let mut proxier = Proxier::new(params, Runner { netns: Some(lab.node.clone()) }, Duration::from_secs(3600));
    let m = proxier.model_mut();
    m.set_service(ServiceKey::new("default", "web"), web(Some(30080)));
    m.set_slice("default".into(), "web-1".into(), slice("web", &["10.99.1.2", "10.99.1.3"]));
    let mut empty = web(None);
    empty.cluster_ip = Some("10.43.0.6".parse().unwrap());
    m.set_service(ServiceKey::new("default", "empty"), empty);
    // A Service whose only endpoint is 10.99.1.2 (hairpin: that address
    // reaches itself through it), one with ClientIP affinity, and one with
    // externalTrafficPolicy Local whose only local endpoint is 10.99.1.2.
    let mut hairpin = web(None);
    hairpin.cluster_ip = Some("10.43.0.7".parse().unwrap());
    m.set_service(ServiceKey::new("default", "self"), hairpin);
    m.set_slice("default".into(), "self-1".into(), slice("self", &["10.99.1.2"]));
    let mut sticky = web(None);
    sticky.cluster_ip = Some("10.43.0.8".parse().unwrap());
    sticky.affinity_timeout = Some(60);
    m.set_service(ServiceKey::new("default", "sticky"), sticky);
    m.set_slice("default".into(), "sticky-1".into(), slice("sticky", &["10.99.1.2", "10.99.1.3"]));
    let mut local = web(Some(30090));
    local.cluster_ip = Some("10.43.0.9".parse().unwrap());
    local.external_local = true;
    m.set_service(ServiceKey::new("default", "local"), local);
    m.set_slice("default".into(), "local-1".into(), slice_on("local", &[("10.99.1.2", "n1"), ("10.99.1.3", "n2")]));
    // A UDP Service (port 53 → 5353 on 10.99.1.3).
    let mut dns = web(None);
    dns.cluster_ip = Some("10.43.0.10".parse().unwrap());
    dns.ports = vec![ServicePort { name: "dns".into(), protocol: Protocol::Udp, port: 53, node_port: None }];
    m.set_service(ServiceKey::new("default", "dns"), dns);
    let mut dns_slice = slice("dns", &["10.99.1.3"]);
    dns_slice.ports = vec![("dns".into(), Protocol::Udp, 5353)];
    m.set_slice("default".into(), "dns-1".into(), dns_slice);
    let stats = proxier.sync().expect("first sync");
    assert_eq!(stats.services, 6);

    // UDP to the cluster IP is DNATed to the endpoint: the node's
    // conntrack entry for the datagram expects the reply from it.
    ok(Some(&lab.client), &["bash", "-c", "echo hi > /dev/udp/10.43.0.10/53"]);
    let ct = sh(Some(&lab.node), &["conntrack", "-L", "-p", "udp", "--orig-dst", "10.43.0.10"]);
    assert!(ct.status.success(), "conntrack -L failed: {}", String::from_utf8_lossy(&ct.stderr));
    let ct = String::from_utf8_lossy(&ct.stdout);
    assert!(ct.contains("src=10.99.1.3 ") && ct.contains("sport=5353 "), "UDP not DNATed: {ct}");

    // Hairpin: the endpoint reaches itself through the cluster IP (the
    // reply only comes back because the node masquerades it).
    assert_eq!(lab.get(&lab.ep, "10.43.0.7:80").expect("hairpin through the cluster IP"), "A");
    // ClientIP affinity: every connection of one client lands on the
    // endpoint its first one chose.
    let first = lab.get(&lab.client, "10.43.0.8:80").expect("affinity Service");
    for _ in 0..15 {
        assert_eq!(lab.get(&lab.client, "10.43.0.8:80").unwrap(), first);
    }
    // externalTrafficPolicy Local: the nodePort serves only the local
    // endpoint; the cluster IP still spreads over both.
    for _ in 0..15 {
        assert_eq!(lab.get(&lab.client, "10.99.2.1:30090").unwrap(), "A");
    }
    let mut seen = BTreeSet::new();
    for _ in 0..30 {
        seen.insert(lab.get(&lab.client, "10.43.0.9:80").expect("cluster IP of the Local Service"));
    }
    assert_eq!(seen, ["A".to_string(), "B".to_string()].into());

    // ClusterIP from a client outside the cluster (forwarded, masqueraded)
    // spreads over both endpoints.
    let mut seen = BTreeSet::new();
    for _ in 0..30 {
        seen.insert(lab.get(&lab.client, "10.43.0.5:80").expect("cluster IP from the client"));
    }
    assert_eq!(seen, ["A".to_string(), "B".to_string()].into());
    // From the node itself (output hook).
    let body = lab.get(&lab.node, "10.43.0.5:80").expect("cluster IP from the node");
    assert!(body == "A" || body == "B", "{body}");
    // NodePort on the node's address.
    let mut seen = BTreeSet::new();
    for _ in 0..30 {
        seen.insert(lab.get(&lab.client, "10.99.2.1:30080").expect("nodePort from the client"));
    }
    assert_eq!(seen, ["A".to_string(), "B".to_string()].into());
    // No endpoints: rejected (connection refused), not silently dropped.
    let err = lab.get(&lab.client, "10.43.0.6:80").unwrap_err();
    assert!(err.contains("refused"), "{err}");
    // A port the Service does not serve is rejected as well.
    let err = lab.get(&lab.client, "10.43.0.5:81").unwrap_err();
    assert!(err.contains("refused") || err.contains("unreachable"), "{err}");

    // Endpoint B leaves: a partial sync sends everything to A.
    proxier.model_mut().set_slice("default".into(), "web-1".into(), slice("web", &["10.99.1.2"]));
    let stats = proxier.sync().expect("partial sync");
    assert_eq!(stats.kind, rkube_proxy::SyncKind::Partial);
    assert_eq!(stats.written, 1);
    for _ in 0..10 {
        assert_eq!(lab.get(&lab.client, "10.43.0.5:80").unwrap(), "A");
    }
    // The empty Service gains endpoint B: it is served now.
    proxier.model_mut().set_slice("default".into(), "empty-1".into(), slice("empty", &["10.99.1.3"]));
    proxier.sync().expect("partial sync");
    assert_eq!(lab.get(&lab.client, "10.43.0.6:80").unwrap(), "B");
    // A younger Service whose external IP is local's cluster IP: the
    // sync succeeds (no duplicate element), local keeps the address.
    let mut dup = web(None);
    dup.cluster_ip = Some("10.43.0.11".parse().unwrap());
    dup.external_ips = vec!["10.43.0.9".parse().unwrap()];
    proxier.model_mut().set_service(ServiceKey::new("default", "zz-dup"), dup);
    proxier.model_mut().set_slice("default".into(), "zz-dup-1".into(), slice("zz-dup", &["10.99.1.3"]));
    let stats = proxier.sync().expect("sync with a conflicting external IP");
    assert_eq!(stats.kind, rkube_proxy::SyncKind::Partial);
    let mut seen = BTreeSet::new();
    for _ in 0..30 {
        seen.insert(lab.get(&lab.client, "10.43.0.9:80").expect("local's cluster IP"));
    }
    assert_eq!(seen, ["A".to_string(), "B".to_string()].into(), "zz-dup (only B) took local's address");
    assert_eq!(lab.get(&lab.client, "10.43.0.11:80").unwrap(), "B");
    proxier.model_mut().remove_service(&ServiceKey::new("default", "zz-dup"));
    proxier.sync().expect("partial sync");
    // A periodic resync rewrites the live table in place.
    let model = proxier.model_mut().clone();
    let params = rkube_proxy::Params {
        table: "rkt-proxy-test".into(),
        node_name: "n1".into(),
        node_ips: vec!["10.99.2.1".parse().unwrap()],
        cluster_cidr: "10.99.1.0/24".into(),
    };
    let all: std::collections::BTreeMap<_, _> = model
        .service_keys()
        .into_iter()
        .map(|k| (k.clone(), rkube_proxy::rules::service_rules(&model, &params, &k)))
        .collect();
    let (text, _) = rkube_proxy::rules::sync_text(&params, rkube_proxy::SyncKind::Resync, &all, &all);
    Runner { netns: Some(lab.node.clone()) }.nft_apply(&text).expect("resync in place");
    assert_eq!(lab.get(&lab.client, "10.43.0.6:80").unwrap(), "B");
    assert_eq!(lab.get(&lab.ep, "10.43.0.7:80").expect("hairpin after the resync"), "A");
    // The Services are deleted: web's address and nodePort are no longer
    // served, and sticky's own chains (it has affinity chains) go.
    let listing = || {
        let o = sh(Some(&lab.node), &["nft", "list", "table", "ip", "rkt-proxy-test"]);
        assert!(o.status.success(), "nft list: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    // Addresses and ports as whole words of the listing.
    let words = |l: &str| -> BTreeSet<String> {
        l.split(|c: char| !(c.is_ascii_digit() || c == '.')).map(|w| w.trim_matches('.').to_string()).collect()
    };
    let before = listing();
    assert!(words(&before).contains("10.43.0.5") && words(&before).contains("30080"), "{before}");
    assert!(before.contains("default/sticky/"), "sticky's chains are missing:\n{before}");
    proxier.model_mut().remove_service(&ServiceKey::new("default", "web"));
    proxier.model_mut().remove_service(&ServiceKey::new("default", "sticky"));
    proxier.sync().expect("partial sync");
    assert!(lab.get(&lab.client, "10.43.0.5:80").is_err());
    assert!(lab.get(&lab.client, "10.99.2.1:30080").is_err());
    let after = listing();
    assert!(!words(&after).contains("10.43.0.5"), "web's elements remain:\n{after}");
    assert!(!words(&after).contains("30080"), "web's nodePort remains:\n{after}");
    assert!(!words(&after).contains("10.43.0.8"), "sticky's elements remain:\n{after}");
    assert!(!after.contains("default/sticky/"), "sticky's chains remain:\n{after}");
    // The other Services are untouched.
    assert!(words(&after).contains("10.43.0.6") && words(&after).contains("30090"), "{after}");
    assert_eq!(lab.get(&lab.client, "10.43.0.6:80").unwrap(), "B");
    // Deleting the table is idempotent and leaves nothing behind.
    let runner = Runner { netns: Some(lab.node.clone()) };
    runner.delete_table("rkt-proxy-test").unwrap();
    runner.delete_table("rkt-proxy-test").unwrap();
    let tables = sh(Some(&lab.node), &["nft", "list", "tables"]);
    assert!(!String::from_utf8_lossy(&tables.stdout).contains("rkt-proxy-test"));
}
