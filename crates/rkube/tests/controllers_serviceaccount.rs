//! The ServiceAccount and root-CA publisher controllers of the controller
//! manager inside `rkube server`, driven with the real kubectl: a new
//! namespace gets a `default` ServiceAccount and the `kube-root-ca.crt`
//! ConfigMap (ca.crt = the cluster CA, upstream's description annotation),
//! and both come back after they are deleted or changed.

mod support;

use std::time::{Duration, Instant};

use serde_json::Value;
use support::{TestServer, TestServerOptions};

/// rootcacertpublisher's `Description`, verbatim from upstream.
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// A server with its controller manager (the harness turns it off by default).
fn start() -> TestServer {
    TestServer::start_with(TestServerOptions { controllers: true, ..Default::default() })
}

fn kubectl_ok(server: &TestServer, args: &[&str]) -> String {
    let out = server.kubectl(args);
    assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Polls `kubectl get -o json <args>` until it succeeds and `check` holds.
fn eventually(server: &TestServer, args: &[&str], what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut full: Vec<&str> = vec!["get", "-o", "json"];
    full.extend_from_slice(args);
    loop {
        let out = server.kubectl(&full);
        if out.status.success() {
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            if check(&v) {
                return v;
            }
        }
        assert!(Instant::now() < deadline, "{what} did not happen within 30s; server log:\n{}", server.logs());
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_new_namespace_gets_the_default_service_account_and_the_root_ca_configmap() {
    let server = start();
    let ca = std::fs::read_to_string(server.tls_dir().join("ca.crt")).unwrap();
    kubectl_ok(&server, &["create", "namespace", "team-a"]);

    let sa =
        eventually(&server, &["-n", "team-a", "serviceaccount", "default"], "the default ServiceAccount", |_| true);
    assert_eq!(sa["metadata"]["name"], "default");
    let cm = eventually(&server, &["-n", "team-a", "configmap", "kube-root-ca.crt"], "kube-root-ca.crt", |_| true);
    assert_eq!(cm["data"]["ca.crt"], ca.as_str());
    assert_eq!(cm["metadata"]["annotations"]["kubernetes.io/description"], DESCRIPTION);
    // The system namespaces have them too.
    eventually(&server, &["-n", "kube-system", "serviceaccount", "default"], "default SA in kube-system", |_| true);
    eventually(&server, &["-n", "default", "configmap", "kube-root-ca.crt"], "kube-root-ca.crt in default", |_| true);
}

/// Conformance: "RootCA ConfigMap test" (kube-root-ca.crt created,
/// recreated if deleted, reconciled if modified).
#[test]
fn the_default_service_account_and_root_ca_configmap_come_back_after_deletion_or_change() {
    let server = start();
    let ca = std::fs::read_to_string(server.tls_dir().join("ca.crt")).unwrap();
    kubectl_ok(&server, &["create", "namespace", "team-b"]);
    let first =
        eventually(&server, &["-n", "team-b", "serviceaccount", "default"], "the default ServiceAccount", |_| true);
    eventually(&server, &["-n", "team-b", "configmap", "kube-root-ca.crt"], "kube-root-ca.crt", |_| true);

    kubectl_ok(&server, &["-n", "team-b", "delete", "serviceaccount", "default"]);
    let uid = first["metadata"]["uid"].clone();
    eventually(&server, &["-n", "team-b", "serviceaccount", "default"], "a new default ServiceAccount", |v| {
        v["metadata"]["uid"] != uid
    });

    kubectl_ok(&server, &["-n", "team-b", "delete", "configmap", "kube-root-ca.crt"]);
    eventually(&server, &["-n", "team-b", "configmap", "kube-root-ca.crt"], "kube-root-ca.crt recreated", |v| {
        v["data"]["ca.crt"] == ca.as_str()
    });

    // A changed bundle and a removed annotation are restored.
    kubectl_ok(
        &server,
        &[
            "-n",
            "team-b",
            "patch",
            "configmap",
            "kube-root-ca.crt",
            "--type",
            "merge",
            "-p",
            r#"{"data":{"ca.crt":"not a CA"},"metadata":{"annotations":{"kubernetes.io/description":null}}}"#,
        ],
    );
    let cm =
        eventually(&server, &["-n", "team-b", "configmap", "kube-root-ca.crt"], "kube-root-ca.crt restored", |v| {
            v["data"]["ca.crt"] == ca.as_str()
                && v["metadata"]["annotations"]["kubernetes.io/description"] == DESCRIPTION
        });
    assert_eq!(cm["data"].as_object().unwrap().len(), 1);
}

#[test]
fn each_controller_runs_as_its_own_service_account_and_one_manager_holds_the_lease() {
    let server = start();
    for sa in [
        "service-account-controller",
        "root-ca-cert-publisher",
        "token-cleaner",
        "bootstrap-signer",
        "certificate-controller",
        "clusterrole-aggregation-controller",
    ] {
        eventually(&server, &["-n", "kube-system", "serviceaccount", sa], sa, |_| true);
    }
    let lease =
        eventually(&server, &["-n", "kube-system", "lease", "kube-controller-manager"], "the leader lease", |v| {
            v["spec"]["holderIdentity"].as_str().is_some_and(|h| !h.is_empty())
        });
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 15);
}

#[test]
fn clusterrole_aggregation_fills_rules_from_matching_clusterroles() {
    let server = start();
    let manifest = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: monitoring
aggregationRule:
  clusterRoleSelectors:
  - matchLabels:
      rbac.example.com/aggregate-to-monitoring: "true"
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: monitoring-endpoints
  labels:
    rbac.example.com/aggregate-to-monitoring: "true"
rules:
- apiGroups: [""]
  resources: ["services", "endpoints", "pods"]
  verbs: ["get", "list", "watch"]
"#;
    let path = server.data_dir().join("aggregation.yaml");
    std::fs::write(&path, manifest).unwrap();
    kubectl_ok(&server, &["apply", "-f", path.to_str().unwrap()]);
    let role = eventually(&server, &["clusterrole", "monitoring"], "aggregated rules", |v| {
        v["rules"].as_array().is_some_and(|r| r.len() == 1)
    });
    assert_eq!(role["rules"][0]["resources"], serde_json::json!(["services", "endpoints", "pods"]));
    // A second matching role adds its rules; removing the label takes them away.
    kubectl_ok(&server, &["create", "clusterrole", "monitoring-nodes", "--verb=get", "--resource=nodes"]);
    kubectl_ok(&server, &["label", "clusterrole", "monitoring-nodes", "rbac.example.com/aggregate-to-monitoring=true"]);
    eventually(&server, &["clusterrole", "monitoring"], "two aggregated rules", |v| {
        v["rules"].as_array().is_some_and(|r| r.len() == 2)
    });
    kubectl_ok(&server, &["label", "clusterrole", "monitoring-endpoints", "rbac.example.com/aggregate-to-monitoring-"]);
    let role = eventually(&server, &["clusterrole", "monitoring"], "one rule left", |v| {
        v["rules"].as_array().is_some_and(|r| r.len() == 1)
    });
    assert_eq!(role["rules"][0]["resources"], serde_json::json!(["nodes"]));
}
