//! The Node authorizer and NodeRestriction with the real kubectl, as a
//! kubelet's identity (client certificate CN `system:node:n1`, O
//! `system:nodes`): it reads only the secrets, configmaps and service
//! account tokens of pods bound to its node, reads and writes only its own
//! Node and Lease, and updates the status of its own pods only. Expected
//! messages are upstream 1.33's.

mod api_common;
mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use support::TestServer;

/// A kubeconfig for the kubelet of `node`.
fn kubelet_kubeconfig(s: &TestServer, dir: &Path, node: &str) -> PathBuf {
    let tls = s.tls_dir();
    let read = |f: &str| std::fs::read_to_string(tls.join(f)).unwrap();
    let ca = read("ca.crt");
    let ca_pair = rkube_pki::CertAndKey { cert_pem: ca.clone(), key_pem: read("ca.key") };
    let pair =
        rkube_pki::issue_client_certificate(&ca_pair, &format!("system:node:{node}"), Some("system:nodes")).unwrap();
    let config = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: 'https://127.0.0.1:{}', certificate-authority-data: {}}}\n\
         users:\n- name: u\n  user: {{client-certificate-data: {}, client-key-data: {}}}\n\
         contexts:\n- name: x\n  context: {{cluster: c, user: u}}\ncurrent-context: x\n",
        s.port(),
        STANDARD.encode(ca),
        STANDARD.encode(&pair.cert_pem),
        STANDARD.encode(&pair.key_pem)
    );
    let path = dir.join(format!("{node}.kubeconfig"));
    std::fs::write(&path, config).unwrap();
    path
}

/// `(success, stdout, stderr)` of kubectl as the kubelet.
fn as_node(s: &TestServer, cfg: &Path, args: &[&str]) -> (bool, String, String) {
    let out = s.kubectl_with(cfg, args);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Retries until the outcome is `allowed` (the pod index follows a watch).
fn settle(s: &TestServer, cfg: &Path, args: &[&str], allowed: bool) -> (bool, String, String) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = as_node(s, cfg, args);
        if r.0 == allowed || Instant::now() > deadline {
            return r;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn forbidden(r: &(bool, String, String), message: &str) {
    assert!(!r.0, "should be refused: {}", r.1);
    assert!(r.2.contains(&format!("Error from server (Forbidden): {message}")), "want {message}\ngot {}", r.2);
}

const OBJECTS: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: n1}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
---
apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: web-sa, namespace: app}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: db-sa, namespace: app}
---
apiVersion: v1
kind: Secret
metadata: {name: web-tls, namespace: app}
stringData: {k: v}
---
apiVersion: v1
kind: Secret
metadata: {name: db-pass, namespace: app}
stringData: {k: v}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web-cfg, namespace: app}
data: {k: v}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: app}
spec:
  nodeName: n1
  serviceAccountName: web-sa
  automountServiceAccountToken: false
  volumes: [{name: tls, secret: {secretName: web-tls}}]
  containers:
  - name: c
    image: busybox
    envFrom: [{configMapRef: {name: web-cfg}}]
---
apiVersion: v1
kind: Pod
metadata: {name: db, namespace: app}
spec:
  nodeName: n2
  serviceAccountName: db-sa
  automountServiceAccountToken: false
  volumes: [{name: pass, secret: {secretName: db-pass}}]
  containers: [{name: c, image: busybox}]
"#;

/// A kubelet reads what its pods use and nothing of other nodes' pods.
#[test]
fn a_kubelet_reads_only_its_pods_objects() {
    let s = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    api_common::apply(&s, OBJECTS);
    let n1 = kubelet_kubeconfig(&s, dir.path(), "n1");

    let r = settle(&s, &n1, &["get", "secret", "web-tls", "-n", "app"], true);
    assert!(r.0, "{}", r.2);
    let r = as_node(&s, &n1, &["get", "configmap", "web-cfg", "-n", "app"]);
    assert!(r.0, "{}", r.2);
    // A list naming one object (as kubelets watch their secrets) counts as a read of it.
    let r = as_node(&s, &n1, &["get", "secrets", "-n", "app", "--field-selector", "metadata.name=web-tls"]);
    assert!(r.0, "{}", r.2);
    forbidden(
        &as_node(&s, &n1, &["get", "secret", "db-pass", "-n", "app"]),
        r#"secrets "db-pass" is forbidden: User "system:node:n1" cannot get resource "secrets" in API group "" in the namespace "app": no relationship found between node 'n1' and this object"#,
    );
    forbidden(
        &as_node(&s, &n1, &["get", "secrets", "-n", "app"]),
        r#"secrets is forbidden: User "system:node:n1" cannot list resource "secrets" in API group "" in the namespace "app": No Object name found"#,
    );
    // Tokens only for its pods' service accounts: the authorizer lets
    // web-sa through, and NodeRestriction judges the request (see
    // a_kubelet_evicts_and_gets_tokens_only_for_its_own_pods).
    let r = as_node(&s, &n1, &["create", "token", "web-sa", "-n", "app"]);
    assert!(
        r.2.contains(r#"serviceaccounts "web-sa" is forbidden: node requested token not bound to a pod"#),
        "{}",
        r.2
    );
    let r = as_node(&s, &n1, &["create", "token", "db-sa", "-n", "app"]);
    assert!(!r.0);
    assert!(
        r.2.contains(r#"serviceaccounts "db-sa" is forbidden: User "system:node:n1" cannot create resource "serviceaccounts/token" in API group "" in the namespace "app": no relationship found between node 'n1' and this object"#),
        "{}",
        r.2
    );
    // Its own Node only.
    let r = as_node(&s, &n1, &["get", "node", "n1"]);
    assert!(r.0, "{}", r.2);
    forbidden(
        &as_node(&s, &n1, &["get", "node", "n2"]),
        r#"nodes "n2" is forbidden: User "system:node:n1" cannot get resource "nodes" in API group "" at the cluster scope: node 'n1' cannot read 'n2', only its own Node object"#,
    );
    // Pods: only with its spec.nodeName field selector.
    let r = as_node(&s, &n1, &["get", "pods", "-A", "--field-selector", "spec.nodeName=n1", "-o", "name"]);
    assert!(r.0, "{}", r.2);
    assert_eq!(r.1.trim(), "pod/web");
    forbidden(
        &as_node(&s, &n1, &["get", "pods", "-A"]),
        r#"pods is forbidden: User "system:node:n1" cannot list resource "pods" in API group "" at the cluster scope: can only list/watch pods with spec.nodeName field selector"#,
    );

    // Once its pod is gone, so is the kubelet's access to the pod's secret.
    api_common::ok(&s, &["delete", "pod", "web", "-n", "app", "--grace-period=0", "--force"]);
    let r = settle(&s, &n1, &["get", "secret", "web-tls", "-n", "app"], false);
    forbidden(
        &r,
        r#"secrets "web-tls" is forbidden: User "system:node:n1" cannot get resource "secrets" in API group "" in the namespace "app": no relationship found between node 'n1' and this object"#,
    );
}

/// NodeRestriction: a kubelet writes only its own Node (not its taints or
/// restricted labels), its own Lease and its own pods' status.
#[test]
fn a_kubelet_writes_only_its_own_node_lease_and_pods() {
    let s = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    api_common::apply(&s, OBJECTS);
    let n1 = kubelet_kubeconfig(&s, dir.path(), "n1");

    let r = as_node(&s, &n1, &["label", "node", "n1", "topology.kubernetes.io/zone=z1"]);
    assert!(r.0, "{}", r.2);
    // kubectl reads a node before changing it, which the kubelet may not
    // for another node; a raw write reaches NodeRestriction.
    forbidden(
        &as_node(&s, &n1, &["label", "node", "n2", "team=x"]),
        r#"nodes "n2" is forbidden: User "system:node:n1" cannot get resource "nodes" in API group "" at the cluster scope: node 'n1' cannot read 'n2', only its own Node object"#,
    );
    let body = dir.path().join("n2.json");
    std::fs::write(&body, r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"n2","labels":{"team":"x"}}}"#)
        .unwrap();
    forbidden(
        &as_node(&s, &n1, &["replace", "--raw", "/api/v1/nodes/n2", "-f", body.to_str().unwrap()]),
        r#"nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2""#,
    );
    forbidden(
        &as_node(&s, &n1, &["label", "node", "n1", "node-role.kubernetes.io/control-plane="]),
        r#"nodes "n1" is forbidden: is not allowed to modify labels: node-role.kubernetes.io/control-plane"#,
    );
    forbidden(
        &as_node(&s, &n1, &["taint", "node", "n1", "k=v:NoSchedule"]),
        r#"nodes "n1" is forbidden: node "n1" is not allowed to modify taints"#,
    );

    // Pod status: its own pods only (kubelets PUT the status; they may not
    // read pods/status, so no `kubectl patch --subresource`).
    let put_status = |pod: &str| {
        let mut obj: serde_json::Value =
            serde_json::from_str(&api_common::ok(&s, &["get", "pod", pod, "-n", "app", "-o", "json"])).unwrap();
        obj["status"]["message"] = "running here".into();
        let path = dir.path().join(format!("{pod}-status.json"));
        std::fs::write(&path, obj.to_string()).unwrap();
        let url = format!("/api/v1/namespaces/app/pods/{pod}/status");
        as_node(&s, &n1, &["replace", "--raw", &url, "-f", path.to_str().unwrap()])
    };
    let r = put_status("web");
    assert!(r.0, "{}", r.2);
    forbidden(
        &put_status("db"),
        r#"pods "db" is forbidden: node "n1" can only update pod status for pods with spec.nodeName set to itself"#,
    );
    // Plain pods: mirror pods only.
    let r = as_node(&s, &n1, &["delete", "pod", "db", "-n", "app"]);
    assert!(!r.0);
    assert!(
        r.2.contains(r#"pods "db" is forbidden: node "n1" can only delete pods with spec.nodeName set to itself"#),
        "{}",
        r.2
    );

    // Leases: its own, in kube-node-lease.
    let lease = |name: &str| {
        format!(
            "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {{name: {name}, namespace: kube-node-lease}}\nspec: {{holderIdentity: {name}}}\n"
        )
    };
    let create = |name: &str| {
        let path = dir.path().join(format!("lease-{name}.yaml"));
        std::fs::write(&path, lease(name)).unwrap();
        as_node(&s, &n1, &["create", "-f", path.to_str().unwrap()])
    };
    let r = create("n1");
    assert!(r.0, "{}", r.2);
    let r = create("n2");
    assert!(!r.0);
    assert!(
        r.2.contains(r#"leases.coordination.k8s.io "n2" is forbidden: can only access node lease with the same name as the requesting node"#),
        "{}",
        r.2
    );
    api_common::ok(&s, &["get", "lease", "n1", "-n", "kube-node-lease"]);
    api_common::fails(&s, &["get", "lease", "n2", "-n", "kube-node-lease"]);
}

/// kubectl create token's refusal (it words errors itself).
fn refused_token(r: &(bool, String, String), message: &str) {
    assert!(!r.0, "should be refused: {}", r.1);
    assert!(r.2.contains(&format!("error: failed to create token: {message}")), "want {message}\ngot {}", r.2);
}

/// NodeRestriction on the subresources admission sees as CREATE
/// (upstream 1.33 `admitPodEviction`, `admitServiceAccount`): a kubelet
/// evicts only pods bound to its node, and gets service-account tokens
/// only bound (by name and uid) to a pod on its node.
#[test]
fn a_kubelet_evicts_and_gets_tokens_only_for_its_own_pods() {
    let s = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    api_common::apply(&s, OBJECTS);
    // web-sa also runs a pod on n2: the Node authorizer lets n1 ask for
    // web-sa tokens, NodeRestriction decides which. web3 (on n1) mounts the
    // token volume admission adds, so it uses the API audience.
    api_common::apply(
        &s,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web2, namespace: app}\nspec:\n  nodeName: n2\n  serviceAccountName: web-sa\n  automountServiceAccountToken: false\n  containers: [{name: c, image: busybox}]\n---\n\
         apiVersion: v1\nkind: Pod\nmetadata: {name: web3, namespace: app}\nspec:\n  nodeName: n1\n  serviceAccountName: web-sa\n  containers: [{name: c, image: busybox}]\n",
    );
    let n1 = kubelet_kubeconfig(&s, dir.path(), "n1");
    let uid = |pod: &str| {
        api_common::ok(&s, &["get", "pod", pod, "-n", "app", "-o", "jsonpath={.metadata.uid}"]).trim().to_string()
    };
    let (web, web2, web3) = (uid("web"), uid("web2"), uid("web3"));
    let token_args = |pod: &str, uid: &str| -> Vec<String> {
        ["create", "token", "web-sa", "-n", "app", "--bound-object-kind", "Pod", "--bound-object-name", pod]
            .iter()
            .map(|a| a.to_string())
            .chain(["--bound-object-uid".to_string(), uid.to_string()])
            .collect()
    };
    let token = |pod: &str, uid: &str| {
        let args = token_args(pod, uid);
        as_node(&s, &n1, &args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    // Once the Node authorizer's graph has the pods, a token bound to n1's pod.
    let args = token_args("web3", &web3);
    let r = settle(&s, &n1, &args.iter().map(String::as_str).collect::<Vec<_>>(), true);
    assert!(r.0, "{}", r.2);
    assert_eq!(r.1.trim().split('.').count(), 3, "a JWT: {}", r.1);
    refused_token(
        &as_node(&s, &n1, &["create", "token", "web-sa", "-n", "app"]),
        r#"serviceaccounts "web-sa" is forbidden: node requested token not bound to a pod"#,
    );
    refused_token(
        &token("web2", &web2),
        r#"serviceaccounts "web-sa" is forbidden: node requested token bound to a pod scheduled on a different node"#,
    );
    // ServiceAccountNodeAudienceRestriction: only audiences the pod uses
    // (web mounts no token volume, so not even the API audience).
    refused_token(
        &token("web", &web),
        r#"serviceaccounts "web-sa" is forbidden: audience "" not found in pod spec volume, system:node:n1 is not authorized to request tokens for this audience"#,
    );
    let mut two = token_args("web3", &web3);
    two.extend(["--audience", "a", "--audience", "b"].map(String::from));
    refused_token(
        &as_node(&s, &n1, &two.iter().map(String::as_str).collect::<Vec<_>>()),
        r#"serviceaccounts "web-sa" is forbidden: node may only request 0 or 1 audiences"#,
    );
    refused_token(
        &token("web", "0000"),
        r#"serviceaccounts "web-sa" is forbidden: the UID in the bound object reference (0000) does not match the UID in record. The object might have been deleted and then recreated"#,
    );
    // The admin is not a node: an unbound token is fine.
    api_common::ok(&s, &["create", "token", "web-sa", "-n", "app"]);

    // Evictions (POST pods/<name>/eviction, as kubectl drain sends them).
    let evict = |pod: &str| {
        let path = dir.path().join(format!("evict-{pod}.json"));
        let body = format!(
            r#"{{"apiVersion":"policy/v1","kind":"Eviction","metadata":{{"name":"{pod}","namespace":"app"}}}}"#
        );
        std::fs::write(&path, body).unwrap();
        let url = format!("/api/v1/namespaces/app/pods/{pod}/eviction");
        as_node(&s, &n1, &["create", "--raw", &url, "-f", path.to_str().unwrap()])
    };
    forbidden(&evict("db"), r#"pods "db" is forbidden: node n1 can only evict pods with spec.nodeName set to itself"#);
    let r = evict("web");
    assert!(r.0, "{}", r.2);
    assert!(r.1.contains(r#""status":"Success""#), "{}", r.1);
    // A pod bound to a node is deleted gracefully: it is terminating.
    let deleting =
        api_common::ok(&s, &["get", "pod", "web", "-n", "app", "-o", "jsonpath={.metadata.deletionTimestamp}"]);
    assert!(!deleting.trim().is_empty(), "web is being deleted");
    let db = api_common::ok(&s, &["get", "pod", "db", "-n", "app", "-o", "jsonpath={.metadata.deletionTimestamp}"]);
    assert!(db.trim().is_empty(), "db stays");
}
