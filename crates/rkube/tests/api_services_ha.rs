//! Service ClusterIP and NodePort allocation with two API servers on one
//! datastore (issue 9 item 5, HA control plane): two in-process API
//! servers (`rkube_apiserver::rest::Api`, each with its own etcd client
//! and its own allocator cache) over one real etcd (Debian's
//! `/usr/bin/etcd`, started on loopback ports and killed when the test
//! ends). Every ClusterIP and NodePort is recorded in etcd within the
//! allocating request, so concurrent creates through both never share a
//! value, the IPAddress objects match the Services, a value freed by a
//! delete on one server is allocatable on the other at once, and the
//! repair loops of both leave all of it alone.

#[path = "../../store/tests/support/etcd.rs"]
mod etcd;

use std::collections::BTreeMap;
use std::sync::Arc;

use rkube_apimachinery::registry::Registry;
use rkube_apiserver::bootstrap::{reconcile_ip_addresses, ClusterConfig};
use rkube_apiserver::rest::Api;
use rkube_apiserver::storage::ipalloc::{Owner, NODE_PORT_KEY_PREFIX};
use rkube_apiserver::storage::{DeleteOptions, WriteOptions};
use rkube_store::etcd::EtcdStore;
use rkube_store::RangeRequest;
use serde_json::{json, Value};

/// One API server: its own connection to etcd, bootstrapped (system
/// namespaces, the `kubernetes` Service, the allocator loaded).
async fn api_server(etcd: &etcd::EtcdProcess) -> Arc<Api> {
    let store = EtcdStore::connect(&etcd.endpoints()).await.unwrap_or_else(|e| panic!("connect to test etcd: {e}"));
    let api = Api::with_cluster(Registry::served(), Arc::new(store), ClusterConfig::default());
    api.bootstrap().await.expect("bootstrap");
    Arc::new(api)
}

/// Every stored object of a resource, read from etcd.
async fn stored(api: &Api, group: &str, plural: &str) -> Vec<Value> {
    let s = api.store(group, "v1", plural).unwrap();
    let req = RangeRequest { prefix: s.keys().collection(""), ..Default::default() };
    let kvs = s.store().range(req).await.unwrap().kvs;
    kvs.iter().map(|kv| serde_json::from_slice(&kv.value).unwrap()).collect()
}

fn service(name: &str, ty: &str, ip: &str, node_port: u16) -> Value {
    let mut port = json!({"port": 80, "protocol": "TCP"});
    if node_port != 0 {
        port["nodePort"] = json!(node_port);
    }
    let mut spec = json!({"type": ty, "selector": {"app": name}, "ports": [port]});
    if !ip.is_empty() {
        spec["clusterIP"] = json!(ip);
    }
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"}, "spec": spec})
}

async fn create(api: Arc<Api>, svc: Value) -> Result<Value, String> {
    let services = api.store("", "v1", "services").unwrap();
    services.create("default", svc, &WriteOptions::default()).await.map_err(|e| e.to_string())
}

fn key(ns: &str, name: &str) -> String {
    format!("{ns}/{name}")
}

/// The allocations the Services hold, and the records etcd holds for
/// them; panics on a value held twice.
struct Allocations {
    ips: BTreeMap<String, String>,
    ports: BTreeMap<u16, String>,
    ip_records: BTreeMap<String, String>,
    port_records: BTreeMap<u16, String>,
}

async fn allocations(api: &Api) -> Allocations {
    let (mut ips, mut ports) = (BTreeMap::new(), BTreeMap::new());
    for svc in stored(api, "", "services").await {
        let owner = key(svc["metadata"]["namespace"].as_str().unwrap(), svc["metadata"]["name"].as_str().unwrap());
        if let Some(ip) = svc["spec"]["clusterIP"].as_str().filter(|ip| *ip != "None") {
            if let Some(other) = ips.insert(ip.to_string(), owner.clone()) {
                panic!("ClusterIP {ip} held by both {other} and {owner}");
            }
        }
        for p in svc["spec"]["ports"].as_array().into_iter().flatten() {
            if let Some(np) = p["nodePort"].as_u64() {
                if let Some(other) = ports.insert(np as u16, owner.clone()) {
                    panic!("NodePort {np} held by both {other} and {owner}");
                }
            }
        }
    }
    let mut ip_records = BTreeMap::new();
    for addr in stored(api, "networking.k8s.io", "ipaddresses").await {
        assert_eq!(addr["metadata"]["labels"]["ipaddress.kubernetes.io/managed-by"], "ipallocator.k8s.io");
        assert_eq!(addr["metadata"]["labels"]["ipaddress.kubernetes.io/ip-family"], "IPv4");
        let parent = &addr["spec"]["parentRef"];
        assert_eq!((&parent["group"], &parent["resource"]), (&json!(""), &json!("services")), "{addr}");
        let owner = key(parent["namespace"].as_str().unwrap(), parent["name"].as_str().unwrap());
        ip_records.insert(addr["metadata"]["name"].as_str().unwrap().to_string(), owner);
    }
    let store = api.store("", "v1", "services").unwrap().store();
    let req = RangeRequest { prefix: NODE_PORT_KEY_PREFIX.into(), ..Default::default() };
    let mut port_records = BTreeMap::new();
    let alloc = api.service_allocator().unwrap();
    for kv in store.range(req).await.unwrap().kvs {
        let port: u16 = kv.key[NODE_PORT_KEY_PREFIX.len()..].parse().unwrap();
        let Owner { namespace, name } = alloc.port_owner(port).await.unwrap().expect("a port record names its Service");
        port_records.insert(port, key(&namespace, &name));
    }
    Allocations { ips, ports, ip_records, port_records }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_api_servers_on_one_etcd_never_hand_out_the_same_cluster_ip_or_node_port() {
    let etcd = tokio::task::block_in_place(|| etcd::EtcdProcess::start().unwrap_or_else(|e| panic!("{e}")));
    let servers = [api_server(&etcd).await, api_server(&etcd).await];

    // 120 Services at once, alternating servers; half of them NodePort.
    let mut tasks = Vec::new();
    for i in 0..120 {
        let api = servers[i % 2].clone();
        let ty = if i % 2 == 0 { "NodePort" } else { "ClusterIP" };
        tasks.push(tokio::spawn(create(api, service(&format!("svc-{i}"), ty, "", 0))));
    }
    // Both servers asked for the same ClusterIP and NodePort at once: one wins.
    let mut races = Vec::new();
    for k in 0..8u16 {
        // From the static bands, which dynamic allocations leave alone.
        let (ip, port) = (format!("10.43.0.{}", 100 + k), 30010 + k);
        let a = tokio::spawn(create(servers[0].clone(), service(&format!("race-{k}-a"), "NodePort", &ip, port)));
        let b = tokio::spawn(create(servers[1].clone(), service(&format!("race-{k}-b"), "NodePort", &ip, port)));
        races.push((ip, port, a, b));
    }
    let mut created = Vec::new();
    for t in tasks {
        created.push(t.await.unwrap().expect("creating a Service"));
    }
    // At most one of two requests for the same values wins. Both can
    // lose (one took the address, the other the port first); then both
    // were undone entirely, as upstream's allocation transaction.
    let (mut winners, mut refused) = (Vec::new(), Vec::new());
    for (ip, port, a, b) in races {
        let (a, b) = (a.await.unwrap(), b.await.unwrap());
        let taken = [
            format!("failed to allocate IP {ip}: provided IP is already allocated"),
            format!("spec.ports[0].nodePort: Invalid value: {port}: provided port is already allocated"),
        ];
        for lost in [&a, &b].into_iter().filter_map(|r| r.as_ref().err()) {
            assert!(taken.iter().any(|t| lost.contains(t)), "{lost}");
        }
        match (a, b) {
            (Ok(won), Err(_)) | (Err(_), Ok(won)) => {
                assert_eq!(
                    (won["spec"]["clusterIP"].as_str(), won["spec"]["ports"][0]["nodePort"].as_u64()),
                    (Some(ip.as_str()), Some(u64::from(port)))
                );
                winners.push(won);
            }
            (Err(_), Err(_)) => refused.push((ip, port)),
            (Ok(a), Ok(b)) => panic!("{ip} and {port} handed out twice: {a} / {b}"),
        }
    }

    let all = allocations(&servers[0]).await;
    assert_eq!(all.ips.len(), 1 + 120 + winners.len(), "the kubernetes Service, 120 and the race winners");
    assert_eq!(all.ports.len(), 60 + winners.len());
    for (ip, port) in &refused {
        assert!(!all.ip_records.contains_key(ip) && !all.port_records.contains_key(port), "{ip}/{port} leaked");
    }
    assert_eq!(all.ip_records, all.ips, "one IPAddress per ClusterIP, naming its Service");
    assert_eq!(all.port_records, all.ports, "one record per NodePort, naming its Service");

    // The repair loops of both servers (what runs every 10 s) agree.
    for api in &servers {
        reconcile_ip_addresses(api, api.cluster()).await.unwrap();
    }
    let after = allocations(&servers[1]).await;
    assert_eq!((after.ip_records, after.port_records), (all.ips.clone(), all.ports.clone()));

    // Deleted through one server, its values are free for the other at once.
    // (The race winners and two NodePort Services created through server 0.)
    let moved: Vec<&Value> = winners.iter().chain([&created[0], &created[2]]).collect();
    for (i, won) in moved.into_iter().enumerate() {
        let name = won["metadata"]["name"].as_str().unwrap();
        let ip = won["spec"]["clusterIP"].as_str().unwrap();
        let port = won["spec"]["ports"][0]["nodePort"].as_u64().unwrap() as u16;
        let (deleter, creator) = (&servers[i % 2], &servers[(i + 1) % 2]);
        let services = deleter.store("", "v1", "services").unwrap();
        services.delete("default", name, &DeleteOptions::default()).await.unwrap();
        let again = create(creator.clone(), service(&format!("again-{i}"), "NodePort", ip, port)).await;
        let again = again.unwrap_or_else(|e| panic!("{ip}/{port} freed by deleting {name}: {e}"));
        assert_eq!(again["spec"]["clusterIP"], ip);
    }
    let last = allocations(&servers[0]).await;
    assert_eq!(last.ip_records, last.ips);
    assert_eq!(last.port_records, last.ports);
    assert!(last.ips.values().all(|owner| !owner.starts_with("default/race-")));
    assert!(!last.ips.values().any(|owner| owner == "default/svc-0" || owner == "default/svc-2"));
    assert_eq!(last.ips.len(), all.ips.len());
}
