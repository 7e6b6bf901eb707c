//! The legacy service-account token controller
//! (`serviceaccount-token-controller`) inside `rkube server`, driven with
//! the real kubectl: a `kubernetes.io/service-account-token` Secret a user
//! creates for a ServiceAccount gets `token`, `ca.crt` and `namespace` and
//! the account's uid annotation; the token authenticates as the account;
//! a deleted token Secret leaves the account's `.secrets`; a token Secret
//! for an account that is gone (or has another uid) is deleted, and its
//! token is refused with 401 from then on.

mod support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::{json, Value};
use support::{TestServer, TestServerOptions};

/// What kubectl prints for a 401 with upstream's Status.
const KUBECTL_UNAUTHORIZED: &str = "error: You must be logged in to the server (Unauthorized)";

fn start() -> TestServer {
    TestServer::start_with(TestServerOptions { controllers: true, ..Default::default() })
}

fn kubectl_ok(server: &TestServer, args: &[&str]) -> String {
    let out = server.kubectl(args);
    assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// `kubectl apply -f -` of `manifest`.
fn apply(server: &TestServer, manifest: &Value) {
    let path = server.data_dir().join("manifest.json");
    std::fs::write(&path, manifest.to_string()).unwrap();
    kubectl_ok(server, &["apply", "-f", path.to_str().unwrap()]);
}

/// Polls `kubectl get -o json <args>` until `check` holds on the object
/// (`None`: the get failed, e.g. NotFound).
fn eventually(server: &TestServer, args: &[&str], what: &str, check: impl Fn(Option<&Value>) -> bool) -> Option<Value> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut full: Vec<&str> = vec!["get", "-o", "json"];
    full.extend_from_slice(args);
    loop {
        let out = server.kubectl(&full);
        let v: Option<Value> = out.status.success().then(|| serde_json::from_slice(&out.stdout).unwrap());
        if check(v.as_ref()) {
            return v;
        }
        assert!(Instant::now() < deadline, "{what} did not happen within 60s; server log:\n{}", server.logs());
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A kubeconfig with the server and its CA but no user, so that only the
/// `--token` flag authenticates.
fn anonymous_kubeconfig(s: &TestServer) -> PathBuf {
    let path = s.data_dir().join("token.kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:{}\n    certificate-authority: {}\nusers:\n- name: u\n  user: {{}}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\ncurrent-context: c\n",
        s.port(),
        s.tls_dir().join("ca.crt").display()
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// `kubectl --token=<token> auth whoami -o json`: the user, or kubectl's stderr.
fn whoami(s: &TestServer, token: &str) -> Result<Value, String> {
    let flag = format!("--token={token}");
    let out = s.kubectl_with(&anonymous_kubeconfig(s), &[&flag, "auth", "whoami", "-o", "json"]);
    if out.status.success() {
        let review: Value = serde_json::from_slice(&out.stdout).unwrap();
        Ok(review["status"]["userInfo"].clone())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

fn token_secret(ns: &str, name: &str, sa: &str, uid: Option<&str>) -> Value {
    let mut annotations = json!({"kubernetes.io/service-account.name": sa});
    if let Some(uid) = uid {
        annotations["kubernetes.io/service-account.uid"] = json!(uid);
    }
    json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
        "metadata": {"name": name, "namespace": ns, "annotations": annotations}})
}

fn decoded(secret: &Value, key: &str) -> String {
    String::from_utf8(STANDARD.decode(secret["data"][key].as_str().unwrap()).unwrap()).unwrap()
}

#[test]
fn a_user_created_token_secret_is_filled_authenticates_and_dies_with_its_service_account() {
    let server = start();
    let ca = std::fs::read_to_string(server.tls_dir().join("ca.crt")).unwrap();
    kubectl_ok(&server, &["create", "namespace", "robots"]);
    kubectl_ok(&server, &["-n", "robots", "create", "serviceaccount", "robot"]);
    let sa: Value =
        serde_json::from_str(&kubectl_ok(&server, &["-n", "robots", "get", "sa", "robot", "-o", "json"])).unwrap();
    let sa_uid = sa["metadata"]["uid"].as_str().unwrap().to_string();
    apply(&server, &token_secret("robots", "robot-token", "robot", None));

    let secret = eventually(&server, &["-n", "robots", "secret", "robot-token"], "the token Secret filled", |v| {
        v.is_some_and(|v| v["data"]["token"].is_string())
    })
    .unwrap();
    assert_eq!(decoded(&secret, "ca.crt"), ca);
    assert_eq!(decoded(&secret, "namespace"), "robots");
    assert_eq!(secret["metadata"]["annotations"]["kubernetes.io/service-account.uid"], sa_uid.as_str());
    assert_eq!(secret["metadata"]["annotations"]["kubernetes.io/service-account.name"], "robot");
    let token = decoded(&secret, "token");

    let user = whoami(&server, &token).unwrap();
    assert_eq!(user["username"], "system:serviceaccount:robots:robot");
    assert_eq!(user["uid"], sa_uid.as_str());
    let groups: Vec<&str> = user["groups"].as_array().unwrap().iter().map(|g| g.as_str().unwrap()).collect();
    assert_eq!(groups, ["system:serviceaccounts", "system:serviceaccounts:robots", "system:authenticated"]);

    // A deleted token Secret leaves its account's `.secrets` (upstream's removeSecretReference).
    apply(&server, &token_secret("robots", "robot-token-2", "robot", None));
    eventually(&server, &["-n", "robots", "secret", "robot-token-2"], "the second token filled", |v| {
        v.is_some_and(|v| v["data"]["token"].is_string())
    });
    let refs = r#"{"secrets":[{"name":"robot-token-2"},{"name":"unrelated"}]}"#;
    kubectl_ok(&server, &["-n", "robots", "patch", "serviceaccount", "robot", "--type=merge", "-p", refs]);
    kubectl_ok(&server, &["-n", "robots", "delete", "secret", "robot-token-2"]);
    eventually(&server, &["-n", "robots", "serviceaccount", "robot"], "the reference removed", |v| {
        v.is_some_and(|v| v["secrets"] == json!([{"name": "unrelated"}]))
    });

    kubectl_ok(&server, &["-n", "robots", "delete", "serviceaccount", "robot"]);
    eventually(&server, &["-n", "robots", "secret", "robot-token"], "the token Secret deleted", |v| v.is_none());
    assert_eq!(whoami(&server, &token), Err(KUBECTL_UNAUTHORIZED.to_string()));
}

#[test]
fn token_secrets_for_a_missing_account_or_another_uid_are_deleted() {
    let server = start();
    kubectl_ok(&server, &["create", "namespace", "robots"]);
    kubectl_ok(&server, &["-n", "robots", "create", "serviceaccount", "robot"]);
    // The uid annotation names an account that no longer exists under that name.
    apply(&server, &token_secret("robots", "stale-token", "robot", Some("00000000-0000-0000-0000-000000000000")));
    apply(&server, &token_secret("robots", "ghost-token", "ghost", None));
    eventually(&server, &["-n", "robots", "secret", "stale-token"], "the stale token deleted", |v| v.is_none());
    eventually(&server, &["-n", "robots", "secret", "ghost-token"], "the ghost token deleted", |v| v.is_none());
    // A Secret of another type naming the account is left alone.
    let mut opaque = token_secret("robots", "opaque", "ghost", None);
    opaque["type"] = json!("Opaque");
    apply(&server, &opaque);
    std::thread::sleep(Duration::from_secs(2));
    let kept = eventually(&server, &["-n", "robots", "secret", "opaque"], "the Opaque secret", |v| v.is_some());
    assert!(kept.unwrap()["data"].is_null());
}
