//! The namespace controller inside `rkube server`, driven with the real
//! kubectl: deleting a namespace empties it — pods, services, configmaps,
//! secrets — then removes the `kubernetes` finalizer so the
//! namespace disappears; content held by a finalizer keeps it
//! `Terminating` with upstream's conditions until the finalizer goes.

mod support;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{TestServer, TestServerOptions};

fn start() -> TestServer {
    TestServer::start_with(TestServerOptions {
        extra_args: vec!["--controllers".into(), "serviceaccount-controller,namespace-controller".into()],
        ..Default::default()
    })
}

fn kubectl_ok(server: &TestServer, args: &[&str]) -> String {
    let out = server.kubectl(args);
    assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn create(server: &TestServer, obj: &Value) -> Value {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let path = server.data_dir().join(format!("obj-{nanos}.json"));
    std::fs::write(&path, obj.to_string()).unwrap();
    serde_json::from_str(&kubectl_ok(server, &["create", "-o", "json", "-f", path.to_str().unwrap()])).unwrap()
}

fn get(server: &TestServer, args: &[&str]) -> Option<Value> {
    let mut full = vec!["get", "-o", "json"];
    full.extend_from_slice(args);
    let out = server.kubectl(&full);
    out.status.success().then(|| serde_json::from_slice(&out.stdout).unwrap())
}

fn eventually(server: &TestServer, args: &[&str], what: &str, check: impl Fn(Option<&Value>) -> bool) -> Option<Value> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let v = get(server, args);
        if check(v.as_ref()) {
            return v;
        }
        assert!(Instant::now() < deadline, "{what} did not happen within 60s; server log:\n{}", server.logs());
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn pod(ns: &str, name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
           "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}})
}

fn wait_default_account(server: &TestServer, ns: &str) {
    eventually(server, &["-n", ns, "serviceaccount", "default"], "the default ServiceAccount", |v| v.is_some());
}

/// Conformance: "namespace-deletion-removes-pods" — a pod (one of them
/// bound to a node, whose graceful deletion the test finishes as the
/// kubelet would) is removed with its namespace, and the namespace goes.
#[test]
fn namespace_deletion_removes_pods() {
    let server = start();
    kubectl_ok(&server, &["create", "namespace", "nsdelete"]);
    wait_default_account(&server, "nsdelete");
    create(&server, &pod("nsdelete", "test-pod"));
    let mut bound = pod("nsdelete", "bound-pod");
    bound["spec"]["nodeName"] = json!("node-1");
    bound["spec"]["terminationGracePeriodSeconds"] = json!(30);
    create(&server, &bound);
    kubectl_ok(&server, &["delete", "namespace", "nsdelete", "--wait=false"]);
    eventually(&server, &["-n", "nsdelete", "pod", "test-pod"], "the unscheduled pod removed", |v| v.is_none());
    // The bound pod is deleted gracefully: it waits for its kubelet.
    eventually(&server, &["-n", "nsdelete", "pod", "bound-pod"], "the bound pod marked for deletion", |v| {
        v.is_some_and(|v| v["metadata"]["deletionGracePeriodSeconds"] == 30)
    });
    let ns = get(&server, &["namespace", "nsdelete"]).expect("the namespace waits for the pod");
    assert_eq!(ns["status"]["phase"], "Terminating");
    kubectl_ok(&server, &["-n", "nsdelete", "delete", "pod", "bound-pod", "--grace-period=0", "--force"]);
    eventually(&server, &["namespace", "nsdelete"], "the namespace removed", |v| v.is_none());
}

/// Conformance: "namespace-deletion-removes-services" — and the other
/// content (configmaps, secrets). Custom resources are removed the same way
/// (every namespaced resource discovery lists), but rkube does not serve
/// them yet, so this test has no CRD.
#[test]
fn namespace_deletion_removes_services_and_every_other_resource() {
    let server = start();
    kubectl_ok(&server, &["create", "namespace", "nssvc"]);
    create(
        &server,
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "test-service", "namespace": "nssvc"},
                "spec": {"selector": {"app": "x"}, "ports": [{"port": 80, "targetPort": 80}]}}),
    );
    kubectl_ok(&server, &["-n", "nssvc", "create", "configmap", "cm", "--from-literal=a=b"]);
    kubectl_ok(&server, &["-n", "nssvc", "create", "secret", "generic", "s", "--from-literal=a=b"]);
    kubectl_ok(&server, &["delete", "namespace", "nssvc", "--wait=false"]);
    eventually(&server, &["namespace", "nssvc"], "the namespace removed", |v| v.is_none());
    // Recreated empty: nothing of the old content comes back.
    kubectl_ok(&server, &["create", "namespace", "nssvc"]);
    assert_eq!(get(&server, &["-n", "nssvc", "services"]).unwrap()["items"], json!([]), "services left behind");
    assert!(get(&server, &["-n", "nssvc", "configmap", "cm"]).is_none(), "configmap left behind");
    assert!(get(&server, &["-n", "nssvc", "secret", "s"]).is_none(), "secret left behind");
}

fn condition<'a>(ns: &'a Value, type_: &str) -> &'a Value {
    ns["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .unwrap_or_else(|| panic!("no {type_} condition in {ns}"))
}

/// Content held by a finalizer keeps the namespace Terminating with
/// upstream's five deletion conditions; once the finalizer is removed the
/// namespace goes.
#[test]
fn namespace_with_finalized_content_reports_upstream_conditions_until_it_is_gone() {
    let server = start();
    kubectl_ok(&server, &["create", "namespace", "held"]);
    create(
        &server,
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "keep", "namespace": "held", "finalizers": ["example.com/hold"]}}),
    );
    kubectl_ok(&server, &["delete", "namespace", "held", "--wait=false"]);
    let ns = eventually(&server, &["namespace", "held"], "the conditions", |v| {
        v.is_some_and(|v| v["status"]["conditions"].as_array().is_some_and(|c| c.len() == 5))
    })
    .unwrap();
    assert_eq!(ns["status"]["phase"], "Terminating");
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
    let c = condition(&ns, "NamespaceContentRemaining");
    assert_eq!((c["status"].as_str(), c["reason"].as_str()), (Some("True"), Some("SomeResourcesRemain")));
    assert_eq!(c["message"], "Some resources are remaining: configmaps. has 1 resource instances");
    let c = condition(&ns, "NamespaceFinalizersRemaining");
    assert_eq!((c["status"].as_str(), c["reason"].as_str()), (Some("True"), Some("SomeFinalizersRemain")));
    assert_eq!(
        c["message"],
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
    );
    for (t, reason, message) in [
        ("NamespaceDeletionDiscoveryFailure", "ResourcesDiscovered", "All resources successfully discovered"),
        (
            "NamespaceDeletionGroupVersionParsingFailure",
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed",
        ),
        (
            "NamespaceDeletionContentFailure",
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization",
        ),
    ] {
        let c = condition(&ns, t);
        assert_eq!(
            (c["status"].as_str(), c["reason"].as_str(), c["message"].as_str()),
            (Some("False"), Some(reason), Some(message))
        );
    }
    let cm = get(&server, &["-n", "held", "configmap", "keep"]).expect("held by its finalizer");
    assert!(!cm["metadata"]["deletionTimestamp"].is_null());
    kubectl_ok(
        &server,
        &["-n", "held", "patch", "configmap", "keep", "--type=merge", "-p", r#"{"metadata":{"finalizers":null}}"#],
    );
    eventually(&server, &["namespace", "held"], "the namespace removed", |v| v.is_none());
}
