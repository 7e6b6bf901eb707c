//! ResourceQuota end to end: the resourcequota controller fills
//! `status.hard` / `status.used` and returns released usage, and the
//! ResourceQuota admission plugin charges creates against it, refusing
//! with upstream's exact messages. Driven with the real kubectl.

mod support;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{TestServer, TestServerOptions};

fn start() -> TestServer {
    TestServer::start_with(TestServerOptions {
        extra_args: vec!["--controllers".into(), "serviceaccount-controller,resourcequota-controller".into()],
        ..Default::default()
    })
}

fn kubectl_ok(server: &TestServer, args: &[&str]) -> String {
    let out = server.kubectl(args);
    assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// `kubectl create -f` of `obj`: the process output.
fn create(server: &TestServer, obj: &Value) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("obj.json");
    std::fs::write(&path, serde_json::to_vec(obj).unwrap()).unwrap();
    server.kubectl(&["create", "-f", path.to_str().unwrap()])
}

fn quota_status(server: &TestServer, ns: &str, name: &str) -> Value {
    let out = kubectl_ok(server, &["get", "resourcequota", name, "-n", ns, "-o", "json"]);
    serde_json::from_str::<Value>(&out).unwrap()["status"].clone()
}

fn wait_status(server: &TestServer, ns: &str, name: &str, want: &Value) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = quota_status(server, ns, name);
        if &status == want {
            return;
        }
        assert!(Instant::now() < deadline, "quota {name} status {status} never became {want}\n{}", server.logs());
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn pod(name: &str, cpu: Option<&str>) -> Value {
    let resources = match cpu {
        Some(cpu) => json!({"requests": {"cpu": cpu}}),
        None => json!({}),
    };
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": [{"name": "c", "image": "busybox", "resources": resources}]}})
}

/// Conformance "ResourceQuota, object count quota, pod" (and "manage
/// lifecycle of a ResourceQuota"): usage is captured, an excess is
/// refused, deleting a pod releases its usage.
#[test]
fn resourcequota_object_count_quota_pod() {
    let server = start();
    kubectl_ok(&server, &["create", "quota", "q", "--hard=pods=2,requests.cpu=1"]);
    wait_status(
        &server,
        "default",
        "q",
        &json!({"hard": {"pods": "2", "requests.cpu": "1"}, "used": {"pods": "0", "requests.cpu": "0"}}),
    );

    // A quota on requests.cpu needs every container to state it.
    refused(
        &server,
        &pod("nocpu", None),
        "pods \"nocpu\" is forbidden: failed quota: q: must specify requests.cpu for: c",
    );

    assert!(create(&server, &pod("p1", Some("400m"))).status.success());
    assert!(create(&server, &pod("p2", Some("400m"))).status.success());
    // Admission charged the quota before admitting.
    let used = &quota_status(&server, "default", "q")["used"];
    assert_eq!(used, &json!({"pods": "2", "requests.cpu": "800m"}));
    refused(
        &server,
        &pod("p3", Some("400m")),
        "pods \"p3\" is forbidden: exceeded quota: q, requested: pods=1,requests.cpu=400m, \
used: pods=2,requests.cpu=800m, limited: pods=2,requests.cpu=1",
    );

    // kubectl describe prints Used against Hard.
    let described = kubectl_ok(&server, &["describe", "quota", "q"]);
    let rows: Vec<Vec<&str>> = described.lines().map(|l| l.split_whitespace().collect()).collect();
    assert!(rows.contains(&vec!["Name:", "q"]), "{described}");
    assert!(rows.contains(&vec!["Resource", "Used", "Hard"]), "{described}");
    assert!(rows.contains(&vec!["pods", "2", "2"]), "{described}");
    assert!(rows.contains(&vec!["requests.cpu", "800m", "1"]), "{described}");

    // Deleting a pod releases its usage; then a new pod fits.
    kubectl_ok(&server, &["delete", "pod", "p1", "--grace-period=0", "--force"]);
    wait_status(
        &server,
        "default",
        "q",
        &json!({"hard": {"pods": "2", "requests.cpu": "1"}, "used": {"pods": "1", "requests.cpu": "400m"}}),
    );
    assert!(create(&server, &pod("p3", Some("600m"))).status.success());
    wait_status(
        &server,
        "default",
        "q",
        &json!({"hard": {"pods": "2", "requests.cpu": "1"}, "used": {"pods": "2", "requests.cpu": "1"}}),
    );
}

/// `kubectl create` of `obj` fails with exit code 1 and upstream's
/// Forbidden message (`message` after kubectl's `error when creating "<file>": `).
fn refused(server: &TestServer, obj: &Value, message: &str) {
    let out = create(server, obj);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.starts_with("Error from server (Forbidden): error when creating "), "{stderr}");
    assert!(stderr.trim_end().ends_with(&format!("\": {message}")), "{stderr}\nwanted: {message}");
}

/// Conformance "ResourceQuota, object count quota, configmap": a
/// `count/configmaps` quota captures the life of a config map.
#[test]
fn resourcequota_object_count_quota_configmap() {
    let server = start();
    kubectl_ok(&server, &["create", "namespace", "cmq"]);
    kubectl_ok(&server, &["create", "quota", "cm", "-n", "cmq", "--hard=count/configmaps=1,configmaps=5"]);
    let empty = json!({"hard": {"configmaps": "5", "count/configmaps": "1"}, "used": {"configmaps": "0", "count/configmaps": "0"}});
    wait_status(&server, "cmq", "cm", &empty);
    kubectl_ok(&server, &["create", "configmap", "a", "-n", "cmq", "--from-literal=k=v"]);
    wait_status(
        &server,
        "cmq",
        "cm",
        &json!({"hard": {"configmaps": "5", "count/configmaps": "1"}, "used": {"configmaps": "1", "count/configmaps": "1"}}),
    );
    let out = server.kubectl(&["create", "configmap", "b", "-n", "cmq"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "error: failed to create configmap: configmaps \"b\" is forbidden: exceeded quota: cm, \
requested: count/configmaps=1, used: count/configmaps=1, limited: count/configmaps=1"
    );
    kubectl_ok(&server, &["delete", "configmap", "a", "-n", "cmq"]);
    wait_status(&server, "cmq", "cm", &empty);
}

/// Conformance "ResourceQuota, object count quota, replicaSet": a
/// `count/replicasets.apps` quota counts ReplicaSets (the generic
/// object-count evaluator) and refuses one more.
#[test]
fn resourcequota_object_count_quota_replicaset() {
    let server = start();
    kubectl_ok(&server, &["create", "quota", "rs", "--hard=count/replicasets.apps=1"]);
    wait_status(
        &server,
        "default",
        "rs",
        &json!({"hard": {"count/replicasets.apps": "1"}, "used": {"count/replicasets.apps": "0"}}),
    );
    let rs = |name: &str| {
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}})
    };
    assert!(create(&server, &rs("a")).status.success());
    wait_status(
        &server,
        "default",
        "rs",
        &json!({"hard": {"count/replicasets.apps": "1"}, "used": {"count/replicasets.apps": "1"}}),
    );
    refused(
        &server,
        &rs("b"),
        "replicasets.apps \"b\" is forbidden: exceeded quota: rs, requested: count/replicasets.apps=1, \
used: count/replicasets.apps=1, limited: count/replicasets.apps=1",
    );
    kubectl_ok(&server, &["delete", "replicaset", "a"]);
    wait_status(
        &server,
        "default",
        "rs",
        &json!({"hard": {"count/replicasets.apps": "1"}, "used": {"count/replicasets.apps": "0"}}),
    );
}

/// Conformance "ResourceQuota, quota scope, BestEffort and NotBestEffort
/// scope": each scoped quota captures only the pods of its scope.
#[test]
fn resourcequota_quota_scope_besteffort_and_notbesteffort() {
    let server = start();
    kubectl_ok(&server, &["create", "quota", "be", "--hard=pods=1", "--scopes=BestEffort"]);
    kubectl_ok(&server, &["create", "quota", "nbe", "--hard=pods=1", "--scopes=NotBestEffort"]);
    let one = |used: &str| json!({"hard": {"pods": "1"}, "used": {"pods": used}});
    wait_status(&server, "default", "be", &one("0"));
    wait_status(&server, "default", "nbe", &one("0"));
    assert!(create(&server, &pod("best", None)).status.success());
    wait_status(&server, "default", "be", &one("1"));
    wait_status(&server, "default", "nbe", &one("0"));
    assert!(create(&server, &pod("burst", Some("100m"))).status.success());
    wait_status(&server, "default", "nbe", &one("1"));
    wait_status(&server, "default", "be", &one("1"));
    refused(
        &server,
        &pod("best2", None),
        "pods \"best2\" is forbidden: exceeded quota: be, requested: pods=1, used: pods=1, limited: pods=1",
    );
}
