//! Leader election of the controller manager between two `rkube server`s
//! sharing one etcd datastore and one cluster CA (an HA control plane):
//! one holds the Lease `kube-system/kube-controller-manager` and runs the
//! controllers, the other waits; when the leader stops cleanly it
//! releases the lease and the other takes over (upstream client-go
//! leader election with `ReleaseOnCancel`).

mod support;

use std::time::{Duration, Instant};

use serde_json::Value;
use support::{TestServer, TestServerOptions};

fn lease(server: &TestServer) -> Option<Value> {
    let out = server.kubectl(&["-n", "kube-system", "get", "lease", "kube-controller-manager", "-o", "json"]);
    out.status.success().then(|| serde_json::from_slice(&out.stdout).unwrap())
}

fn holder(server: &TestServer) -> String {
    lease(server).and_then(|l| l["spec"]["holderIdentity"].as_str().map(str::to_string)).unwrap_or_default()
}

fn wait_for(what: &str, server: &TestServer, check: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(Instant::now() < deadline, "{what} did not happen within 30s\n{}", server.logs());
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn one_controller_manager_leads_and_another_takes_over_when_it_stops() {
    let etcd = support::etcd::EtcdProcess::start().unwrap_or_else(|e| panic!("{e}"));
    let endpoint = format!("etcd://{}", etcd.endpoint().trim_start_matches("http://"));
    let mut first = TestServer::start_with(TestServerOptions {
        datastore_endpoint: Some(endpoint.clone()),
        controllers: true,
        ..Default::default()
    });
    wait_for("a leader", &first, || !holder(&first).is_empty());
    let leader = holder(&first);
    assert!(first.logs().contains(&format!("became leader component=\"kube-controller-manager\" identity={leader}")));

    // The second server shares the cluster CA, as HA servers do.
    let second_dir = tempfile::Builder::new().prefix("rkube-test-").tempdir().unwrap();
    let tls = second_dir.path().join("server").join("tls");
    std::fs::create_dir_all(&tls).unwrap();
    for f in ["ca.crt", "ca.key", "sa.key", "sa.pub"] {
        std::fs::copy(first.tls_dir().join(f), tls.join(f)).unwrap();
    }
    let second = TestServer::start_with(TestServerOptions {
        datastore_endpoint: Some(endpoint),
        data_dir: Some(second_dir.path().to_path_buf()),
        controllers: true,
        ..Default::default()
    });
    wait_for("the second manager waiting", &second, || second.logs().contains("another candidate is leader; waiting"));
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(holder(&second), leader, "the lease moved while its holder renewed it");
    let transitions = lease(&second).unwrap()["spec"]["leaseTransitions"].as_i64().unwrap_or(0);

    let (status, _) = first.stop();
    assert!(status.success(), "{}", first.logs());
    assert!(first.logs().contains("released the lease"), "{}", first.logs());
    wait_for("the second manager leading", &second, || {
        let h = holder(&second);
        !h.is_empty() && h != leader
    });
    assert!(second.logs().contains("became leader"), "{}", second.logs());
    assert_eq!(lease(&second).unwrap()["spec"]["leaseTransitions"].as_i64().unwrap_or(0), transitions + 1);

    // The new leader's controllers work: a new namespace gets its default ServiceAccount.
    let out = second.kubectl(&["create", "namespace", "after-failover"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    wait_for("the default ServiceAccount", &second, || {
        second.kubectl(&["-n", "after-failover", "get", "serviceaccount", "default"]).status.success()
    });
}
