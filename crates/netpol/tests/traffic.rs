//! Real traffic through the computed ruleset: a "node" netns with a bridge
//! (br_netfilter's bridge-nf-call-iptables on, inside that netns only) and
//! three "pod" netns attached by veth, each running busybox httpd. The
//! ruleset is applied with nft in the node netns; every netns (and with it
//! every link and the table) is removed by Drop guards, even on failure.
//! Nothing touches the root network namespace.
//!
//! Needs root, `ip`, `nft` and /bin/busybox (scripts/test.sh installs them
//! and runs the suite as root); without them the test FAILS, saying what is
//! missing, rather than passing without checking anything.

use std::io::Write;
use std::process::{Child, Command, Stdio};

use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use rkube_netpol::ruleset;
use serde_json::json;

const NODE: &str = "node-1";
const TABLE: &str = "rkt_np_test";
/// The node's address on its bridge (in the test's own node netns).
const NODE_IP: &str = "10.99.0.1";

fn sh(args: &[&str]) -> std::process::Output {
    Command::new(args[0]).args(&args[1..]).output().unwrap_or_else(|e| panic!("running {args:?}: {e}"))
}

fn ok(args: &[&str]) {
    let out = sh(args);
    assert!(out.status.success(), "{args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
}

/// Deletes the named netns on drop.
struct Netns(Vec<String>);

impl Drop for Netns {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

/// Kills (and reaps) the servers on drop, before the netns go.
struct Servers(Vec<Child>);

impl Drop for Servers {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn nft_in(netns: &str, script: &str) -> Result<(), String> {
    let mut child = Command::new("ip")
        .args(["netns", "exec", netns, "nft", "-f", "-"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    child.stdin.take().unwrap().write_all(script.as_bytes()).map_err(|e| e.to_string())?;
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{}\n{script}", String::from_utf8_lossy(&out.stderr)))
    }
}

/// `GET /index.html` to ip:port from inside `from` (busybox nc, which gives
/// up connecting after 2 s); the response body, or None when no answer came.
fn get(from: &str, ip: &str, port: u16) -> Option<String> {
    let mut child = Command::new("ip")
        .args(["netns", "exec", from, "/bin/busybox", "nc", "-w", "2", ip, &port.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _ = child.stdin.take().unwrap().write_all(b"GET /index.html HTTP/1.0\r\n\r\n");
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (head, body) = text.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.trim().to_string())
}

fn pod(name: &str, ip: &str, labels: serde_json::Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"namespace": "default", "name": name, "labels": labels},
        "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": "busybox", "ports": [{"name": "web", "containerPort": 80}]}]},
        "status": {"phase": "Running", "podIP": ip}
    }))
    .unwrap()
}

fn policy(name: &str, spec: serde_json::Value) -> NetworkPolicy {
    serde_json::from_value(json!({"metadata": {"namespace": "default", "name": name}, "spec": spec})).unwrap()
}

#[test]
fn policies_enforced_on_real_traffic() {
    assert_eq!(sh(&["id", "-u"]).stdout, b"0\n", "this test needs root (network namespaces); run it as root");
    assert!(std::path::Path::new("/bin/busybox").exists(), "this test needs /bin/busybox; install busybox");
    assert!(
        Command::new("nft").arg("--version").output().is_ok_and(|o| o.status.success()),
        "this test needs nft on PATH; install nftables"
    );
    let pid = std::process::id();
    let node = format!("rkt-np-{pid}-node");
    let pods = ["p1", "p2", "p3"].map(|p| format!("rkt-np-{pid}-{p}"));
    let ips = ["10.99.0.11", "10.99.0.12", "10.99.0.13"];
    let _netns = Netns(std::iter::once(node.clone()).chain(pods.iter().cloned()).collect());
    for n in std::iter::once(&node).chain(pods.iter()) {
        ok(&["ip", "netns", "add", n]);
        ok(&["ip", "-n", n, "link", "set", "lo", "up"]);
    }
    ok(&["ip", "-n", &node, "link", "add", "br0", "type", "bridge"]);
    ok(&["ip", "-n", &node, "link", "set", "br0", "up"]);
    // The node's own address on the bridge (the pods' gateway, as the CNI bridge has).
    ok(&["ip", "-n", &node, "addr", "add", &format!("{NODE_IP}/24"), "dev", "br0"]);
    let bnf = sh(&["ip", "netns", "exec", &node, "sysctl", "-w", "net.bridge.bridge-nf-call-iptables=1"]);
    assert!(
        bnf.status.success(),
        "bridge-nf-call-iptables in the node netns: {}",
        String::from_utf8_lossy(&bnf.stderr)
    );
    let docroot = std::env::temp_dir().join(format!("rkt-np-{pid}-www"));
    std::fs::create_dir_all(&docroot).unwrap();
    std::fs::write(docroot.join("index.html"), "hello\n").unwrap();
    let docroot_s = docroot.to_str().unwrap().to_string();
    let mut servers = Servers(Vec::new());
    for (i, (p, ip)) in pods.iter().zip(ips).enumerate() {
        let host = format!("h{i}");
        ok(&["ip", "-n", &node, "link", "add", &host, "type", "veth", "peer", "name", "eth0", "netns", p]);
        ok(&["ip", "-n", &node, "link", "set", &host, "master", "br0", "up"]);
        ok(&["ip", "-n", p, "addr", "add", &format!("{ip}/24"), "dev", "eth0"]);
        ok(&["ip", "-n", p, "link", "set", "eth0", "up"]);
        for port in ["80", "8080"] {
            let child = Command::new("ip")
                .args(["netns", "exec", p, "/bin/busybox", "httpd", "-f", "-p", port, "-h", &docroot_s])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            servers.0.push(child);
        }
    }
    // A server on the node itself (pod -> node traffic is delivered locally: input hook).
    let child = Command::new("ip")
        .args(["netns", "exec", &node, "/bin/busybox", "httpd", "-f", "-p", "80", "-h", &docroot_s])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    servers.0.push(child);
    let result = std::panic::catch_unwind(|| scenarios(&node, &pods, &ips));
    drop(servers);
    let _ = std::fs::remove_dir_all(&docroot);
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

fn scenarios(node: &str, pods: &[String; 3], ips: &[&str; 3]) {
    let [p1, p2, p3] = pods;
    let pod_objs = vec![
        pod("server", ips[0], json!({"app": "server"})),
        pod("client", ips[1], json!({"role": "client"})),
        pod("other", ips[2], json!({"role": "other"})),
    ];
    let namespaces: Vec<Namespace> = vec![serde_json::from_value(json!({"metadata": {"name": "default"}})).unwrap()];
    let apply = |policies: &[NetworkPolicy]| {
        let r = ruleset::compute(TABLE, NODE, policies, &pod_objs, &namespaces);
        nft_in(node, &r.render()).unwrap_or_else(|e| panic!("nft -f in the node netns: {e}"));
    };

    // No policy: everything flows (waits for the servers to listen).
    apply(&[]);
    let mut ready = false;
    for _ in 0..50 {
        if get(p2, ips[0], 80).is_some()
            && get(p3, ips[1], 80).is_some()
            && get(p2, ips[2], 80).is_some()
            && get(p2, NODE_IP, 80).is_some()
        {
            ready = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(ready, "httpd in the pod netns never answered without policies");
    assert_eq!(get(p3, ips[0], 8080).as_deref(), Some("hello"));

    // Default deny ingress for the server: nobody gets in.
    let deny = policy("deny", json!({"podSelector": {"matchLabels": {"app": "server"}}, "policyTypes": ["Ingress"]}));
    apply(std::slice::from_ref(&deny));
    assert_eq!(get(p2, ips[0], 80), None, "default-deny ingress must block client -> server");
    assert_eq!(get(p3, ips[0], 80), None, "default-deny ingress must block other -> server");
    // Not selected pods stay open.
    assert_eq!(get(p1, ips[1], 80).as_deref(), Some("hello"), "client is not isolated");

    // Allow role=client on the named port "web" (80): exactly that peer and port; the reply flows.
    let allow = policy(
        "allow",
        json!({
            "podSelector": {"matchLabels": {"app": "server"}},
            "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "client"}}}], "ports": [{"port": "web"}]}]
        }),
    );
    apply(&[deny.clone(), allow.clone()]);
    assert_eq!(get(p2, ips[0], 80).as_deref(), Some("hello"), "allowed peer and port, reply included");
    assert_eq!(get(p2, ips[0], 8080), None, "port 8080 is not allowed");
    assert_eq!(get(p3, ips[0], 80), None, "other is not an allowed peer");

    // Egress deny for the client: its own connections are blocked, replies to connections it accepts flow.
    let egress =
        policy("client-egress", json!({"podSelector": {"matchLabels": {"role": "client"}}, "policyTypes": ["Egress"]}));
    apply(&[deny, allow, egress.clone()]);
    assert_eq!(get(p2, ips[2], 80), None, "egress-isolated client must not reach other");
    assert_eq!(get(p2, ips[0], 80), None, "egress deny also wins over server's ingress allow");
    assert_eq!(get(p3, ips[1], 80).as_deref(), Some("hello"), "replies from the egress-isolated client flow");
    assert_eq!(get(p2, NODE_IP, 80), None, "egress deny also covers the pod's own node (input hook)");
    assert_eq!(get(p3, NODE_IP, 80).as_deref(), Some("hello"), "pods without egress policy reach the node");
    // An egress allow to the node's address admits pod -> node again.
    let to_node = policy(
        "client-to-node",
        json!({
            "podSelector": {"matchLabels": {"role": "client"}},
            "policyTypes": ["Egress"],
            "egress": [{"to": [{"ipBlock": {"cidr": format!("{NODE_IP}/32")}}], "ports": [{"port": 80}]}]
        }),
    );
    apply(&[egress.clone(), to_node]);
    assert_eq!(get(p2, NODE_IP, 80).as_deref(), Some("hello"), "egress allow to the node's address");
    assert_eq!(get(p2, ips[2], 80), None, "still no egress to other pods");

    // Cleanup is idempotent and removes the table.
    let cleanup = rkube_netpol::cleanup_script(TABLE);
    nft_in(node, &cleanup).expect("cleanup");
    nft_in(node, &cleanup).expect("cleanup again");
    let listed = sh(&["ip", "netns", "exec", node, "nft", "list", "tables"]);
    assert!(!String::from_utf8_lossy(&listed.stdout).contains(TABLE));
    assert_eq!(get(p3, ips[0], 80).as_deref(), Some("hello"), "no table, no policing");
}
