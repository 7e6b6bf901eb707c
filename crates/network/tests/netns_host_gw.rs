//! The host side of rkube-network against the real kernel, inside a network
//! namespace this test creates (`rkt-net-<pid>`): the test logic runs on a
//! thread that did setns(2) into it, so every `ip`/`nft` the crate spawns
//! acts there. The root namespace is never changed; a Drop guard deletes the
//! namespace (and everything in it) even when an assertion fails.

use std::collections::BTreeSet;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::Command;

use k8s_openapi::api::core::v1::{Node, NodeAddress, NodeSpec, NodeStatus};
use kube::api::ObjectMeta;
use rkube_network::{cleanup, ensure_base, prepare_host, sync_routes, HostNames};
use serde_json::Value;

struct Netns(String);

impl Netns {
    fn create(suffix: &str) -> Netns {
        let name = format!("rkt-net-{}{suffix}", std::process::id());
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        let ok = Command::new("ip").args(["netns", "add", &name]).status().expect("run ip netns add");
        assert!(ok.success(), "ip netns add {name} failed (the test needs root and iproute2)");
        Netns(name)
    }

    fn ip(&self, args: &[&str]) {
        let mut all = vec!["-n", self.0.as_str()];
        all.extend_from_slice(args);
        let out = Command::new("ip").args(&all).output().unwrap();
        assert!(out.status.success(), "ip {all:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// Runs `f` on a thread whose network namespace is `ns`; re-raises its panic.
fn in_netns<T: Send + 'static>(ns: &Netns, f: impl FnOnce() -> T + Send + 'static) -> T {
    let path = format!("/run/netns/{}", ns.0);
    std::thread::spawn(move || {
        let file = File::open(&path).expect("open the netns file");
        // SAFETY: setns on a valid fd for CLONE_NEWNET affects only this thread.
        let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns({path}): {}", std::io::Error::last_os_error());
        f()
    })
    .join()
    .unwrap_or_else(|p| std::panic::resume_unwind(p))
}

fn names() -> HostNames {
    HostNames {
        cluster_cidr: "10.42.0.0/16".into(),
        service_cidr: "10.43.0.0/16".into(),
        service_device: "rkt-svc".into(),
        table: "rkt-network".into(),
    }
}

fn node(name: &str, cidr: &str, ip: &str) -> Node {
    Node {
        metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
        spec: Some(NodeSpec { pod_cidr: Some(cidr.into()), pod_cidrs: Some(vec![cidr.into()]), ..Default::default() }),
        status: Some(NodeStatus {
            addresses: Some(vec![NodeAddress { type_: "InternalIP".into(), address: ip.into() }]),
            ..Default::default()
        }),
    }
}

fn cmd(program: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new(program).args(args).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Every route of every table of the current namespace, as comparable rows.
fn all_routes() -> BTreeSet<String> {
    let mut rows = BTreeSet::new();
    for family in ["-4", "-6"] {
        let (ok, out) = cmd("ip", &["-json", family, "route", "show", "table", "all"]);
        assert!(ok);
        let v: Value = serde_json::from_str(&out).unwrap();
        rows.extend(v.as_array().unwrap().iter().map(|r| r.to_string()));
    }
    rows
}

/// The main-table IPv4 routes as (type, dst, gateway, dev, protocol).
fn routes_v4() -> Vec<(String, String, String, String, String)> {
    let (ok, out) = cmd("ip", &["-json", "-4", "route", "show"]);
    assert!(ok);
    let v: Value = serde_json::from_str(&out).unwrap();
    let s = |r: &Value, k: &str, d: &str| r.get(k).and_then(Value::as_str).unwrap_or(d).to_string();
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| (s(r, "type", "unicast"), s(r, "dst", ""), s(r, "gateway", ""), s(r, "dev", ""), s(r, "protocol", "")))
        .collect()
}

fn links() -> BTreeSet<String> {
    let (ok, out) = cmd("ip", &["-json", "link", "show"]);
    assert!(ok);
    let v: Value = serde_json::from_str(&out).unwrap();
    v.as_array().unwrap().iter().map(|l| l["ifname"].as_str().unwrap().to_string()).collect()
}

fn ruleset() -> String {
    let (ok, out) = cmd("nft", &["list", "ruleset"]);
    assert!(ok);
    out
}

fn route(kind: &str, dst: &str, gw: &str, dev: &str) -> (String, String, String, String, String) {
    (kind.into(), dst.into(), gw.into(), dev.into(), "107".into())
}

#[test]
fn host_gw_routes_blackhole_service_device_and_masquerade_then_cleanup_restores_the_netns() {
    let root_forward_before = std::fs::read_to_string("/proc/sys/net/ipv4/ip_forward").unwrap();
    let ns = Netns::create("");
    // The node's "LAN": a link with 192.168.77.1/24, so 192.168.77.0/24 is
    // directly connected (veth: the dummy driver may be absent from the kernel).
    ns.ip(&["link", "set", "lo", "up"]);
    ns.ip(&["link", "add", "rkt-eth", "type", "veth", "peer", "name", "rkt-peer"]);
    ns.ip(&["addr", "add", "192.168.77.1/24", "dev", "rkt-eth"]);
    ns.ip(&["link", "set", "rkt-eth", "up"]);
    ns.ip(&["link", "set", "rkt-peer", "up"]);
    // A route inside the cluster CIDR that is not rkube-network's (as the
    // local bridge's connected route would be): never touched.
    ns.ip(&["route", "add", "10.42.0.0/24", "dev", "rkt-eth"]);

    in_netns(&ns, || {
        let before = (all_routes(), links(), ruleset());
        prepare_host().expect("prepare_host in the test netns");
        assert_eq!(std::fs::read_to_string("/proc/sys/net/ipv4/ip_forward").unwrap().trim(), "1");
        prepare_host().expect("prepare_host is idempotent");

        let n = names();
        ensure_base(&n).unwrap();
        let nodes = vec![
            node("a", "10.42.0.0/24", "192.168.77.1"),
            node("b", "10.42.1.0/24", "192.168.77.2"),
            // Not on the L2 segment: the host has no route to it at all.
            node("c", "10.42.2.0/24", "172.31.9.9"),
        ];
        let out = sync_routes(&n, "a", &nodes, &["rkt-bridge0", "rkt-svc"]).unwrap();
        assert_eq!(out.routes.len(), 1);
        assert_eq!(out.skipped.len(), 1, "{:?}", out.skipped);
        assert!(out.skipped[0].contains("172.31.9.9 is not directly reachable"), "{:?}", out.skipped);

        let r = routes_v4();
        assert!(r.contains(&route("unicast", "10.42.1.0/24", "192.168.77.2", "rkt-eth")), "{r:?}");
        assert!(r.contains(&route("blackhole", "10.42.0.0/16", "", "")), "{r:?}");
        assert!(r.contains(&route("unicast", "10.43.0.0/16", "", "rkt-svc")), "{r:?}");
        assert!(!r.iter().any(|x| x.1 == "10.42.2.0/24"), "{r:?}");
        assert!(links().contains("rkt-svc"));
        // Longest prefix: a remote pod goes to its node, an unknown pod
        // address hits the blackhole, a ClusterIP stays on the service device.
        let (_, get) = cmd("ip", &["-json", "route", "get", "10.42.1.9"]);
        assert!(get.contains("\"gateway\":\"192.168.77.2\""), "{get}");
        let (ok, _) = cmd("ip", &["route", "get", "10.42.200.9"]);
        assert!(!ok, "10.42.200.9 must be unroutable (blackhole)");
        let (_, get) = cmd("ip", &["-json", "route", "get", "10.43.0.10"]);
        assert!(get.contains("\"dev\":\"rkt-svc\""), "{get}");

        let (ok, table) = cmd("nft", &["list", "table", "ip", "rkt-network"]);
        assert!(ok);
        assert!(table.contains("type nat hook postrouting priority srcnat; policy accept;"), "{table}");
        assert!(table.contains("ip saddr 10.42.0.0/16 ip daddr 10.42.0.0/16 return"), "{table}");
        assert!(table.contains("ip saddr 10.42.0.0/16 ip daddr 10.43.0.0/16 return"), "{table}");
        assert!(table.contains("ip saddr 10.42.0.0/16 ip daddr != 224.0.0.0/4 masquerade fully-random"), "{table}");

        // The node's InternalIP changes: the route follows it.
        let moved = vec![nodes[0].clone(), node("b", "10.42.1.0/24", "192.168.77.3")];
        sync_routes(&n, "a", &moved, &[]).unwrap();
        let r = routes_v4();
        assert!(r.contains(&route("unicast", "10.42.1.0/24", "192.168.77.3", "rkt-eth")), "{r:?}");
        assert!(!r.contains(&route("unicast", "10.42.1.0/24", "192.168.77.2", "rkt-eth")), "{r:?}");

        // A manual deletion heals on the next sync; re-applying the base is idempotent.
        let (ok, _) = cmd("ip", &["route", "del", "10.42.1.0/24"]);
        assert!(ok);
        ensure_base(&n).unwrap();
        sync_routes(&n, "a", &moved, &[]).unwrap();
        assert!(routes_v4().contains(&route("unicast", "10.42.1.0/24", "192.168.77.3", "rkt-eth")));

        // Node b deleted: its route goes; the foreign 10.42.0.0/24 stays.
        sync_routes(&n, "a", &moved[..1], &[]).unwrap();
        let r = routes_v4();
        assert!(!r.iter().any(|x| x.1 == "10.42.1.0/24"), "{r:?}");
        assert!(r.iter().any(|x| x.1 == "10.42.0.0/24" && x.4 != "107"), "{r:?}");

        sync_routes(&n, "a", &nodes, &[]).unwrap();
        cleanup(&n).unwrap();
        assert_eq!((all_routes(), links(), ruleset()), before, "cleanup must leave the netns as it was");
        cleanup(&n).expect("cleanup is idempotent");
        assert_eq!((all_routes(), links(), ruleset()), before);
    });
    // The root namespace's forwarding setting was never touched.
    assert_eq!(std::fs::read_to_string("/proc/sys/net/ipv4/ip_forward").unwrap(), root_forward_before);
}

#[test]
fn run_programs_the_base_keeps_retrying_an_unreachable_api_server_and_returns_on_stop() {
    let ns = Netns::create("-run");
    ns.ip(&["link", "set", "lo", "up"]);
    in_netns(&ns, || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            // Nothing listens on 127.0.0.1:1 inside this fresh netns: the Node
            // watch fails and is retried with backoff, never fatal.
            let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
            let client = kube::Client::try_from(config).unwrap();
            let cfg = rkube_network::NodeNetworkConfig {
                client,
                node_name: "a".into(),
                node_ip: "127.0.0.1".parse().unwrap(),
                bridge: "rkt-bridge0".into(),
                names: names(),
            };
            let (tx, rx) = tokio::sync::oneshot::channel::<()>();
            // current_thread runtime: the task runs on this (setns'd) thread.
            let task = tokio::spawn(rkube_network::run(cfg, async move {
                let _ = rx.await;
            }));
            while !routes_v4().contains(&route("blackhole", "10.42.0.0/16", "", "")) {
                assert!(!task.is_finished(), "run ended early: {:?}", task.await);
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            assert!(routes_v4().contains(&route("unicast", "10.43.0.0/16", "", "rkt-svc")));
            tx.send(()).unwrap();
            task.await.unwrap().expect("run returns Ok when stopped");
        });
        // Stopping leaves the state in place; cleanup removes it.
        assert!(cmd("nft", &["list", "table", "ip", "rkt-network"]).0);
        cleanup(&names()).unwrap();
        assert!(!cmd("nft", &["list", "table", "ip", "rkt-network"]).0);
        assert!(!routes_v4().iter().any(|r| r.4 == "107"), "{:?}", routes_v4());
    });
}

#[test]
fn routes_not_rkubes_are_never_replaced_and_run_retries_the_base_until_they_go() {
    let ns = Netns::create("-conflict");
    ns.ip(&["link", "set", "lo", "up"]);
    ns.ip(&["link", "add", "rkt-eth", "type", "veth", "peer", "name", "rkt-peer"]);
    ns.ip(&["addr", "add", "192.168.77.1/24", "dev", "rkt-eth"]);
    ns.ip(&["link", "set", "rkt-eth", "up"]);
    ns.ip(&["link", "set", "rkt-peer", "up"]);
    in_netns(&ns, || {
        let n = names();
        // Someone else's route (a VPN's, a container runtime's) at exactly the cluster CIDR.
        let (ok, _) = cmd("ip", &["route", "add", "10.42.0.0/16", "via", "192.168.77.9"]);
        assert!(ok);
        let before = routes_v4();
        let e = ensure_base(&n).unwrap_err().to_string();
        assert!(e.contains("10.42.0.0/16 via 192.168.77.9") && e.contains("--cluster-cidr"), "{e}");
        assert_eq!(routes_v4(), before, "the foreign route must stay untouched");
        assert!(cmd("ip", &["route", "del", "10.42.0.0/16"]).0);

        // The same at the service CIDR.
        assert!(cmd("ip", &["route", "add", "10.43.0.0/16", "dev", "rkt-eth"]).0);
        let e = ensure_base(&n).unwrap_err().to_string();
        assert!(e.contains("10.43.0.0/16 dev rkt-eth") && e.contains("--service-cidr"), "{e}");
        assert!(routes_v4().iter().any(|r| r.1 == "10.43.0.0/16" && r.3 == "rkt-eth" && r.4 != "107"));
        assert!(!links().contains("rkt-svc") || !routes_v4().iter().any(|r| r.3 == "rkt-svc"));
        assert!(cmd("ip", &["route", "del", "10.43.0.0/16"]).0);
        ensure_base(&n).unwrap();
        ensure_base(&n).expect("our own blackhole and service route are ours to replace");

        // A foreign route at another node's pod CIDR: that node is skipped, not overwritten.
        assert!(cmd("ip", &["route", "add", "10.42.5.0/24", "dev", "rkt-eth"]).0);
        let nodes = vec![
            node("a", "10.42.0.0/24", "192.168.77.1"),
            node("b", "10.42.1.0/24", "192.168.77.2"),
            node("e", "10.42.5.0/24", "192.168.77.5"),
            // A "pod CIDR" equal to the cluster CIDR must never replace the blackhole.
            node("f", "10.42.0.0/16", "192.168.77.6"),
        ];
        let out = sync_routes(&n, "a", &nodes, &[]).unwrap();
        assert_eq!(out.routes.len(), 1, "{:?}", out.routes);
        assert!(out.skipped.iter().any(|s| s.contains("10.42.5.0/24") && s.contains("already routes it")), "{:?}", out.skipped);
        let r = routes_v4();
        assert!(r.iter().any(|x| x.1 == "10.42.5.0/24" && x.3 == "rkt-eth" && x.4 != "107"), "{r:?}");
        assert!(r.contains(&route("blackhole", "10.42.0.0/16", "", "")), "{r:?}");

        // A host address inside the cluster CIDR is a configuration error (not on the bridge).
        ns_addr("rkt-eth", "10.42.9.1/32");
        let e = n.check_host(&["rkt-bridge0"]).unwrap_err().to_string();
        assert!(e.contains("10.42.9.1 (on rkt-eth)"), "{e}");
        assert!(n.check_host(&["rkt-eth"]).is_ok(), "addresses on our own devices are allowed");
        assert!(cmd("ip", &["addr", "del", "10.42.9.1/32", "dev", "rkt-eth"]).0);

        cleanup(&n).unwrap();
        assert!(cmd("ip", &["route", "del", "10.42.5.0/24"]).0, "cleanup must leave the foreign route");

        // run: a foreign route at the cluster CIDR is retried (never returns), and
        // once it is gone the base is programmed.
        assert!(cmd("ip", &["route", "add", "10.42.0.0/16", "via", "192.168.77.9"]).0);
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
            let cfg = rkube_network::NodeNetworkConfig {
                client: kube::Client::try_from(config).unwrap(),
                node_name: "a".into(),
                node_ip: "192.168.77.1".parse().unwrap(),
                bridge: "rkt-bridge0".into(),
                names: names(),
            };
            let (tx, rx) = tokio::sync::oneshot::channel::<()>();
            let task = tokio::spawn(rkube_network::run(cfg, async move {
                let _ = rx.await;
            }));
            // Let the first attempt fail (it runs before the task's first await).
            tokio::task::yield_now().await;
            assert!(!task.is_finished(), "run must retry the base, not return: {:?}", task.await);
            assert!(routes_v4().iter().any(|r| r.1 == "10.42.0.0/16" && r.2 == "192.168.77.9"));
            assert!(cmd("ip", &["route", "del", "10.42.0.0/16"]).0);
            while !routes_v4().contains(&route("blackhole", "10.42.0.0/16", "", "")) {
                assert!(!task.is_finished(), "run ended early: {:?}", task.await);
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            tx.send(()).unwrap();
            task.await.unwrap().expect("run returns Ok when stopped");
        });
        cleanup(&names()).unwrap();
        assert!(!routes_v4().iter().any(|r| r.4 == "107"), "{:?}", routes_v4());
    });
}

/// `ip addr add <addr> dev <dev>` in the current thread's namespace.
fn ns_addr(dev: &str, addr: &str) {
    let (ok, _) = cmd("ip", &["addr", "add", addr, "dev", dev]);
    assert!(ok, "ip addr add {addr} dev {dev}");
}
