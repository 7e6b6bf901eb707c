//! The allocator over a real SQLite store: records written within the
//! request, refused and undone allocations, releases, dry runs, two
//! allocators on one store, and the repair's grace for in-flight records.

use std::sync::Arc;
use std::time::Duration;

use rkube_apimachinery::registry::Registry;
use rkube_store::sqlite::{SqliteOptions, SqliteStore};
use rkube_store::SharedStore;

use super::*;
use crate::bootstrap::ClusterConfig;
use crate::rest::Api;

async fn sqlite() -> (tempfile::TempDir, SharedStore) {
    let dir = tempfile::tempdir().unwrap();
    let opts = SqliteOptions { progress_interval: Duration::from_millis(200), ..Default::default() };
    let store = SqliteStore::open_with(&dir.path().join("state.db"), opts).await.unwrap();
    (dir, Arc::new(store))
}

fn api_on(store: &SharedStore, cidr: ServiceCidr) -> Api {
    let cluster = ClusterConfig { service_cidr: cidr, ..ClusterConfig::default() };
    Api::with_cluster(Registry::builtin(), store.clone(), cluster)
}

fn svc(name: &str, ty: &str, ip: &str, node_port: i64) -> Value {
    json!({"metadata": {"name": name, "namespace": "default"},
        "spec": {"type": ty, "clusterIP": ip, "ports": [{"port": 80, "nodePort": node_port}]}})
}

fn ip_of(s: &Value) -> Ipv4Addr {
    s["spec"]["clusterIP"].as_str().unwrap().parse().unwrap()
}

fn port_of(s: &Value) -> u16 {
    s["spec"]["ports"][0]["nodePort"].as_u64().unwrap() as u16
}

fn owner(name: &str) -> Owner {
    Owner { namespace: "default".into(), name: name.into() }
}

async fn ip_owner(api: &Api, ip: Ipv4Addr) -> Option<Owner> {
    let addresses = api.store("networking.k8s.io", "v1", "ipaddresses").unwrap();
    let obj = addresses.get("", &ip.to_string(), "").await.ok()?;
    assert_eq!(obj.pointer("/metadata/labels/ipaddress.kubernetes.io~1managed-by"), Some(&json!("ipallocator.k8s.io")));
    assert_eq!(obj.pointer("/metadata/labels/ipaddress.kubernetes.io~1ip-family"), Some(&json!("IPv4")));
    assert_eq!(obj.pointer("/spec/parentRef/resource"), Some(&json!("services")));
    Owner::from_parent_ref(obj.pointer("/spec/parentRef"))
}

#[tokio::test]
async fn allocations_are_store_records_refused_conflicts_are_undone_and_releases_free_them() {
    let (_dir, store) = sqlite().await;
    let api = api_on(&store, ServiceCidr::default());
    let a = api.service_allocator().unwrap();
    assert_eq!(a.allocate(&mut svc("x", "ClusterIP", "", 0), None, false).await.unwrap_err().code(), 503);
    a.load(std::iter::empty());

    let mut s1 = svc("s1", "NodePort", "", 0);
    a.allocate(&mut s1, None, false).await.unwrap();
    let (ip, np) = (ip_of(&s1), port_of(&s1));
    assert!(ServiceCidr::default().offset(ip).unwrap() > 256, "dynamic band: {ip}");
    assert!((30086..=32767).contains(&np), "dynamic band: {np}");
    assert_eq!(ip_owner(&api, ip).await, Some(owner("s1")), "the IPAddress is written within the request");
    assert_eq!(a.port_owner(np).await.unwrap(), Some(owner("s1")));

    let e = a.allocate(&mut svc("s2", "ClusterIP", &ip.to_string(), 0), None, false).await.unwrap_err();
    assert!(e.to_string().contains("provided IP is already allocated"), "{e}");
    assert!(e.to_string().contains("spec.clusterIPs"), "{e}");
    let e = a.allocate(&mut svc("s2", "NodePort", "10.43.0.7", i64::from(np)), None, false).await.unwrap_err();
    assert!(e.to_string().contains("spec.ports[0].nodePort: Invalid value: "), "{e}");
    assert!(e.to_string().contains("provided port is already allocated"), "{e}");
    assert!(!a.ip_allocated("10.43.0.7".parse().unwrap()).await.unwrap(), "a failed allocation is undone");
    assert_eq!(a.port_owner(np).await.unwrap(), Some(owner("s1")), "the refusal leaves the holder's record");
    let e = a.allocate(&mut svc("s2", "ClusterIP", "10.99.0.1", 0), None, false).await.unwrap_err();
    assert!(e.to_string().contains("is not in the valid range"), "{e}");
    let e = a.allocate(&mut svc("s2", "NodePort", "", 29999), None, false).await.unwrap_err();
    assert!(e.to_string().contains("provided port is not in the valid range. The range of valid ports is 30000-32767"));
    assert_eq!(a.lock().ips.len(), 1, "the refused write's dynamic address went back: {:?}", a.lock().ips);

    // A write that did not happen gives back what it took, and only that.
    let mut s3 = svc("s3", "NodePort", "10.43.0.9", 0);
    a.allocate(&mut s3, None, false).await.unwrap();
    assert!(a.ip_allocated("10.43.0.9".parse().unwrap()).await.unwrap());
    a.abort(&s3, None, false).await;
    assert!(!a.ip_allocated("10.43.0.9".parse().unwrap()).await.unwrap());
    assert!(!a.port_allocated(port_of(&s3)).await.unwrap());
    // Releasing in another Service's name frees nothing.
    a.committed(None, Some(&svc("impostor", "NodePort", &ip.to_string(), i64::from(np)))).await;
    assert!(a.ip_allocated(ip).await.unwrap() && a.port_allocated(np).await.unwrap());

    // Type change NodePort -> ClusterIP releases the port; delete releases the IP.
    let mut s1b = s1.clone();
    s1b["spec"]["type"] = json!("ClusterIP");
    s1b["spec"]["ports"][0].as_object_mut().unwrap().remove("nodePort");
    a.allocate(&mut s1b, Some(&s1), false).await.unwrap();
    a.committed(Some(&s1b), Some(&s1)).await;
    assert!(!a.port_allocated(np).await.unwrap() && a.ip_allocated(ip).await.unwrap());
    a.committed(None, Some(&s1b)).await;
    assert!(!a.ip_allocated(ip).await.unwrap());

    let mut v6 = svc("v6", "ClusterIP", "", 0);
    v6["spec"]["ipFamilies"] = json!(["IPv6"]);
    let e = a.allocate(&mut v6, None, false).await.unwrap_err();
    assert!(
        e.to_string().contains(r#"spec.ipFamilies[0]: Invalid value: "IPv6": not configured on this cluster"#),
        "{e}"
    );
    let mut dual = svc("dual", "ClusterIP", "", 0);
    dual["spec"]["ipFamilyPolicy"] = json!("RequireDualStack");
    let e = a.allocate(&mut dual, None, false).await.unwrap_err();
    assert!(e.to_string().contains("this cluster is not configured for dual-stack services"), "{e}");

    let mut headless = svc("h", "ClusterIP", "None", 0);
    a.allocate(&mut headless, None, false).await.unwrap();
    assert_eq!(headless["spec"]["clusterIP"], "None");
}

#[tokio::test]
async fn dry_runs_record_nothing_and_check_ranges_only() {
    let (_dir, store) = sqlite().await;
    let api = api_on(&store, ServiceCidr::default());
    let a = api.service_allocator().unwrap();
    a.load(std::iter::empty());
    let mut held = svc("held", "NodePort", "10.43.0.20", 30020);
    a.allocate(&mut held, None, false).await.unwrap();

    // Upstream's dry-run allocators: the range's first value for dynamic
    // requests, range checks only for requested ones.
    let mut dynamic = svc("d", "NodePort", "", 0);
    a.allocate(&mut dynamic, None, true).await.unwrap();
    assert_eq!((dynamic["spec"]["clusterIP"].as_str(), port_of(&dynamic)), (Some("10.43.0.0"), 30000));
    assert!(!a.ip_allocated("10.43.0.0".parse().unwrap()).await.unwrap());
    assert!(!a.port_allocated(30000).await.unwrap());
    let mut same = svc("same", "NodePort", "10.43.0.20", 30020);
    a.allocate(&mut same, None, true).await.unwrap();
    a.abort(&same, None, true).await;
    assert_eq!(ip_owner(&api, "10.43.0.20".parse().unwrap()).await, Some(owner("held")), "a dry run frees nothing");
    assert_eq!(a.port_owner(30020).await.unwrap(), Some(owner("held")));
    let e = a.allocate(&mut svc("far", "ClusterIP", "10.99.0.1", 0), None, true).await.unwrap_err();
    assert!(e.to_string().contains("is not in the valid range"), "{e}");
}

#[tokio::test]
async fn services_written_through_the_store_keep_records_in_step() {
    let (_dir, store) = sqlite().await;
    let api = api_on(&store, ServiceCidr::default());
    let a = api.service_allocator().unwrap();
    a.load(std::iter::empty());
    let services = api.store("", "v1", "services").unwrap();
    let created = services.create("default", svc("web", "NodePort", "", 0), &WriteOptions::default()).await.unwrap();
    let (ip, np) = (ip_of(&created), port_of(&created));
    assert_eq!(ip_owner(&api, ip).await, Some(owner("web")));
    assert_eq!(a.port_owner(np).await.unwrap(), Some(owner("web")));
    // A second create of the same name fails after allocating: undone.
    let e = services.create("default", svc("web", "NodePort", "", 0), &WriteOptions::default()).await.unwrap_err();
    assert!(matches!(e, ApiError::AlreadyExists { .. }), "{e}");
    let records = repair::Records::read(a).await.unwrap();
    assert_eq!(records.ips.keys().copied().collect::<Vec<_>>(), vec![ip], "only web's address is recorded");
    assert_eq!(records.ports.keys().copied().collect::<Vec<_>>(), vec![np]);

    services.delete("default", "web", &DeleteOptions::default()).await.unwrap();
    assert!(!a.ip_allocated(ip).await.unwrap() && !a.port_allocated(np).await.unwrap());
    // The freed values can be requested again at once.
    let again = svc("again", "NodePort", &ip.to_string(), i64::from(np));
    services.create("default", again, &WriteOptions::default()).await.unwrap();
    assert_eq!(ip_owner(&api, ip).await, Some(owner("again")));
}

#[tokio::test]
async fn two_allocators_on_one_store_never_share_a_value_whatever_their_caches_say() {
    let (_dir, store) = sqlite().await;
    // A /28: 14 usable addresses, all in the static band; 5 NodePorts.
    let cidr = ServiceCidr { network: Ipv4Addr::new(10, 96, 0, 0), prefix: 28 };
    let api = api_on(&store, cidr);
    let addresses = api.store("networking.k8s.io", "v1", "ipaddresses").unwrap().clone();
    let small = || ServiceAllocator {
        cidr,
        node_ports: (30000, 30004),
        store: store.clone(),
        addresses: addresses.clone(),
        cache: Mutex::new(Cache::default()),
    };
    let (a1, a2) = (small(), small());
    a1.load(std::iter::empty());
    a2.load(std::iter::empty()); // neither cache hears of the other's allocations

    let mut made = Vec::new();
    let (mut ips, mut ports) = (HashSet::new(), HashSet::new());
    for i in 0..14 {
        let a = if i % 2 == 0 { &a1 } else { &a2 };
        let mut s = svc(&format!("s{i}"), if i < 5 { "NodePort" } else { "ClusterIP" }, "", 0);
        a.allocate(&mut s, None, false).await.unwrap();
        assert!(ips.insert(ip_of(&s)), "{} handed out twice", ip_of(&s));
        if i < 5 {
            assert!(ports.insert(port_of(&s)), "{} handed out twice", port_of(&s));
        }
        made.push(s);
    }
    for a in [&a1, &a2] {
        let e = a.allocate(&mut svc("full", "ClusterIP", "", 0), None, false).await.unwrap_err();
        assert_eq!(e.to_string(), "Internal error occurred: failed to allocate a serviceIP: range is full");
        let e = a.allocate(&mut svc("full", "NodePort", "None", 0), None, false).await.unwrap_err();
        assert!(e.to_string().contains("failed to allocate a nodePort: range is full"), "{e}");
    }
    // Released through one, allocatable through the other at once.
    let s0 = &made[0];
    a1.committed(None, Some(s0)).await;
    let mut again = svc("again", "NodePort", "", 0);
    a2.allocate(&mut again, None, false).await.unwrap();
    assert_eq!((ip_of(&again), port_of(&again)), (ip_of(s0), port_of(s0)));
    assert_eq!(ip_owner(&api, ip_of(s0)).await, Some(owner("again")));
}

#[tokio::test]
async fn repair_creates_missing_records_and_deletes_leaked_ones_only_after_the_grace_period() {
    let (_dir, store) = sqlite().await;
    let api = api_on(&store, ServiceCidr::default());
    let a = api.service_allocator().unwrap();
    a.load(std::iter::empty());
    let services = api.store("", "v1", "services").unwrap();

    // A Service stored without records (data from before them).
    let legacy = svc("legacy", "NodePort", "10.43.0.50", 30050);
    let key = services.keys().object("default", "legacy");
    store.create(&key, Bytes::from(serde_json::to_vec(&legacy).unwrap()), None).await.unwrap();
    let report = a.repair(services, REPAIR_GRACE).await.unwrap();
    assert_eq!((report.created_ips, report.created_ports), (vec!["10.43.0.50".parse().unwrap()], vec![30050]));
    assert_eq!(ip_owner(&api, "10.43.0.50".parse().unwrap()).await, Some(owner("legacy")));
    assert_eq!(a.port_owner(30050).await.unwrap(), Some(owner("legacy")));

    // Another server's request in flight: records written, Service not yet.
    let mut pending = svc("pending", "NodePort", "", 0);
    a.allocate(&mut pending, None, false).await.unwrap();
    // An existing Service gaining a NodePort in flight.
    let cip = services.create("default", svc("grows", "ClusterIP", "", 0), &WriteOptions::default()).await.unwrap();
    let mut grows = cip.clone();
    grows["spec"]["type"] = json!("NodePort");
    a.allocate(&mut grows, Some(&cip), false).await.unwrap();
    // Someone else's IPAddress (another manager) is never touched.
    let addresses = api.store("networking.k8s.io", "v1", "ipaddresses").unwrap();
    let mut foreign = ip_address_object("10.43.0.60".parse().unwrap(), &owner("gone"));
    foreign["metadata"]["labels"][MANAGED_BY_LABEL] = json!("someone-else");
    addresses.create("", foreign, &WriteOptions::default()).await.unwrap();

    let report = a.repair(services, REPAIR_GRACE).await.unwrap();
    assert!(report.is_empty(), "{report:?}");
    assert_eq!(report.waiting, 3, "pending's address and port and grows's port wait");
    assert_eq!(ip_owner(&api, ip_of(&pending)).await, Some(owner("pending")));
    assert!(a.port_allocated(port_of(&grows)).await.unwrap());

    // Past the grace period (zero here) leaked records go; held ones stay.
    let report = a.repair(services, Duration::ZERO).await.unwrap();
    let mut deleted_ports = report.deleted_ports.clone();
    deleted_ports.sort();
    let mut want = vec![port_of(&pending), port_of(&grows)];
    want.sort();
    assert_eq!((report.deleted_ips, deleted_ports), (vec![ip_of(&pending)], want));
    assert!(a.ip_allocated(ip_of(&cip)).await.unwrap() && a.ip_allocated("10.43.0.50".parse().unwrap()).await.unwrap());
    assert!(a.ip_allocated("10.43.0.60".parse().unwrap()).await.unwrap(), "not ours");
    let report = a.repair(services, Duration::ZERO).await.unwrap();
    assert_eq!(report, RepairReport::default(), "a second pass finds nothing to do");
}
