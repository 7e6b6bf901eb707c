//! Auditing (`--audit-policy-file`, `--audit-log-path`) through the real
//! server and kubectl: the log holds one audit.k8s.io/v1 Event per JSON
//! line, with the stages, levels and fields upstream writes
//! (`k8s.io/apiserver/pkg/endpoints/filters/audit.go`, `pkg/audit`).

mod api_common;
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{TestServer, TestServerOptions};

const POLICY: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: []
rules:
- level: None
  nonResourceURLs: ["/healthz*"]
- level: Metadata
  resources:
  - group: ""
    resources: [secrets]
- level: RequestResponse
  resources:
  - group: ""
    resources: [configmaps]
- level: Request
  resources:
  - group: ""
    resources: [namespaces]
  omitStages: [RequestReceived]
"#;

fn start(dir: &Path) -> (TestServer, std::path::PathBuf) {
    let policy = dir.join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let log = dir.join("logs/audit.log");
    let server = TestServer::start_with(TestServerOptions {
        extra_args: vec![
            "--audit-policy-file".into(),
            policy.display().to_string(),
            "--audit-log-path".into(),
            log.display().to_string(),
        ],
        ..Default::default()
    });
    (server, log)
}

fn ok(server: &TestServer, args: &[&str]) -> String {
    let out = server.kubectl(args);
    assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).to_string()
}

fn read(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect()
}

/// The events `pick` selects, once there are at least `n` (the log is
/// written asynchronously).
fn wait_events(log: &Path, n: usize, pick: impl Fn(&Value) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let events: Vec<Value> = read(log).into_iter().filter(|e| pick(e)).collect();
        if events.len() >= n || Instant::now() > deadline {
            return events;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn about(resource: &'static str, verb: &'static str, name: &'static str) -> impl Fn(&Value) -> bool {
    move |e| e["objectRef"]["resource"] == resource && e["verb"] == verb && e["objectRef"]["name"] == name
}

fn stages(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["stage"].as_str().unwrap()).collect()
}

fn is_micro_time(s: &str) -> bool {
    // 2006-01-02T15:04:05.000000Z
    s.len() == 27 && s.as_bytes()[10] == b'T' && s.as_bytes()[19] == b'.' && s.ends_with('Z')
}

#[test]
fn secrets_are_audited_at_metadata_without_bodies() {
    let dir = tempfile::tempdir().unwrap();
    let (server, log) = start(dir.path());
    ok(&server, &["create", "secret", "generic", "s1", "--from-literal=password=never-in-the-log"]);
    ok(&server, &["get", "secret", "s1"]);

    let created = wait_events(&log, 2, about("secrets", "create", "s1"));
    assert_eq!(stages(&created), ["RequestReceived", "ResponseComplete"]);
    assert_eq!(created[0]["auditID"], created[1]["auditID"]);
    for e in &created {
        assert_eq!(e["kind"], "Event");
        assert_eq!(e["apiVersion"], "audit.k8s.io/v1");
        assert_eq!(e["level"], "Metadata");
        assert_eq!(e["user"]["username"], "system:admin");
        assert_eq!(e["user"]["groups"], json!(["system:masters", "system:authenticated"]));
        assert_eq!(e["requestURI"].as_str().unwrap().split('?').next(), Some("/api/v1/namespaces/default/secrets"));
        assert_eq!(
            e["objectRef"],
            json!({"resource": "secrets", "namespace": "default", "name": "s1", "apiVersion": "v1"})
        );
        assert_eq!(e["sourceIPs"], json!(["127.0.0.1"]));
        assert!(e["userAgent"].as_str().unwrap().starts_with("kubectl"), "{}", e["userAgent"]);
        assert!(e.get("requestObject").is_none() && e.get("responseObject").is_none(), "no bodies at Metadata: {e}");
        assert!(is_micro_time(e["requestReceivedTimestamp"].as_str().unwrap()), "{e}");
        assert!(is_micro_time(e["stageTimestamp"].as_str().unwrap()), "{e}");
    }
    assert!(created[0].get("responseStatus").is_none());
    assert_eq!(created[1]["responseStatus"], json!({"metadata": {}, "code": 201}));
    // Authorization's verdict, as upstream's WithAuthorization records it
    // (system:masters is allowed without a reason); not yet known when the
    // request was received.
    assert!(created[0].get("annotations").is_none(), "{}", created[0]);
    assert_eq!(
        created[1]["annotations"],
        json!({"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": ""})
    );
    let got = wait_events(&log, 2, about("secrets", "get", "s1"));
    assert_eq!(got[1]["responseStatus"]["code"], 200);
    assert!(!std::fs::read_to_string(&log).unwrap().contains("never-in-the-log"));
    assert!(!std::fs::read_to_string(&log).unwrap().contains("bmV2ZXItaW4tdGhlLWxvZw"));

    // A failure carries the Status.
    let out = server.kubectl(&["get", "secret", "missing"]);
    assert!(!out.status.success());
    let missing = wait_events(&log, 2, about("secrets", "get", "missing"));
    assert_eq!(
        missing[1]["responseStatus"],
        json!({"metadata": {}, "status": "Failure", "message": "secrets \"missing\" not found",
               "reason": "NotFound", "details": {"name": "missing", "kind": "secrets"}, "code": 404})
    );
}

#[test]
fn configmaps_are_audited_with_request_and_response_bodies() {
    let dir = tempfile::tempdir().unwrap();
    let (server, log) = start(dir.path());
    ok(&server, &["create", "configmap", "c1", "--from-literal=k=logged-value"]);
    let events = wait_events(&log, 2, about("configmaps", "create", "c1"));
    assert_eq!(stages(&events), ["RequestReceived", "ResponseComplete"]);
    let done = &events[1];
    assert_eq!(done["level"], "RequestResponse");
    assert_eq!(done["requestObject"]["kind"], "ConfigMap");
    assert_eq!(done["requestObject"]["data"], json!({"k": "logged-value"}));
    assert_eq!(done["responseObject"]["kind"], "ConfigMap");
    assert_eq!(done["responseObject"]["metadata"]["name"], "c1");
    assert!(done["responseObject"]["metadata"]["uid"].is_string());
    assert_eq!(done["responseStatus"]["code"], 201);
    // The request body is there from the first stage, the response only at the end.
    assert_eq!(events[0]["requestObject"], done["requestObject"]);
    assert!(events[0].get("responseObject").is_none());

    // Namespaces at Request: the body in, not the body out; RequestReceived omitted.
    ok(&server, &["create", "namespace", "audited"]);
    let ns = wait_events(&log, 1, about("namespaces", "create", "audited"));
    assert_eq!(stages(&ns), ["ResponseComplete"]);
    assert_eq!(ns[0]["level"], "Request");
    assert_eq!(ns[0]["requestObject"]["metadata"]["name"], "audited");
    assert!(ns[0].get("responseObject").is_none());
}

#[test]
fn health_checks_are_not_audited_and_responses_carry_the_audit_id() {
    let dir = tempfile::tempdir().unwrap();
    let (server, log) = start(dir.path());
    assert_eq!(ok(&server, &["get", "--raw", "/healthz"]), "ok");
    let resp = server.get_with_headers("/api/v1/namespaces/default/secrets", &[]);
    assert_eq!(resp.status, 200);
    let id = resp.header("audit-id").expect("an Audit-Id header").to_string();
    let listed = wait_events(&log, 2, |e| e["auditID"] == id.as_str());
    assert_eq!(stages(&listed), ["RequestReceived", "ResponseComplete"]);
    assert_eq!(listed[0]["verb"], "list");
    assert!(read(&log).iter().all(|e| !e["requestURI"].as_str().unwrap().starts_with("/healthz")));
    // Unaudited requests still get an ID.
    assert!(server.get_with_headers("/version", &[]).header("audit-id").is_some());
}

#[test]
fn watches_log_response_started_then_complete() {
    let dir = tempfile::tempdir().unwrap();
    let (server, log) = start(dir.path());
    let (code, _) = server.get("/api/v1/namespaces/default/secrets?watch=true&timeoutSeconds=1");
    assert_eq!(code, 200);
    let events = wait_events(&log, 3, |e| e["verb"] == "watch" && e["user"]["username"] == "system:admin");
    assert_eq!(stages(&events), ["RequestReceived", "ResponseStarted", "ResponseComplete"]);
    assert_eq!(events[1]["responseStatus"], json!({"metadata": {}, "code": 200}));
    assert_eq!(events[2]["auditID"], events[0]["auditID"]);
}

#[test]
fn an_invalid_policy_stops_the_start_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Everything\n").unwrap();
    let port = support::free_port().to_string();
    let data = dir.path().join("data");
    let out = support::run_rkube(
        &[
            "server",
            "--disable-agent",
            "--https-port",
            &port,
            "--data-dir",
            data.to_str().unwrap(),
            "--audit-policy-file",
            policy.to_str().unwrap(),
            "--audit-log-path",
            "-",
        ],
        Duration::from_secs(60),
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(r#"rules[0].level: Unsupported value: "Everything": supported values: "None", "Metadata", "Request", "RequestResponse""#),
        "{stderr}"
    );
}

#[test]
fn impersonated_requests_name_both_users() {
    let dir = tempfile::tempdir().unwrap();
    let (server, log) = start(dir.path());
    // jane may not read secrets: the 403 is audited too.
    let out = server.kubectl(&["--as", "jane", "--as-group", "devs", "get", "secret", "s-imp"]);
    assert!(!out.status.success());
    let events = wait_events(&log, 2, about("secrets", "get", "s-imp"));
    assert_eq!(stages(&events), ["RequestReceived", "ResponseComplete"]);
    for e in &events {
        assert_eq!(e["user"]["username"], "system:admin");
    }
    // As upstream, impersonation is applied after RequestReceived is written.
    assert!(events[0].get("impersonatedUser").is_none());
    assert_eq!(events[1]["impersonatedUser"]["username"], "jane");
    assert_eq!(events[1]["impersonatedUser"]["groups"], json!(["devs", "system:authenticated"]));
    assert_eq!(events[1]["responseStatus"]["code"], 403);
    assert_eq!(events[1]["responseStatus"]["reason"], "Forbidden");
}

/// A TLS client that trusts the cluster CA and presents no certificate.
fn anonymous_tls(server: &TestServer) -> std::sync::Arc<rustls::ClientConfig> {
    use rustls::pki_types::pem::PemObject;
    let ca = std::fs::read(server.tls_dir().join("ca.crt")).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(rustls::pki_types::CertificateDer::from_pem_slice(&ca).unwrap()).unwrap();
    let config =
        rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
    std::sync::Arc::new(config)
}

/// As upstream's WithFailedAuthenticationAudit: a 401 is audited with one
/// `ResponseStarted` event that has no user and names the credentials
/// tried; the response carries the Audit-Id the event has.
#[test]
fn failed_authentications_are_audited_without_a_user() {
    let dir = tempfile::tempdir().unwrap();
    let (server, log) = start(dir.path());
    let path = "/api/v1/namespaces/default/secrets/s-401";
    let reply = api_common::request_with(
        &server,
        anonymous_tls(&server),
        "GET",
        path,
        &[("Authorization", "Bearer forged.token.here")],
        b"",
    );
    assert_eq!(reply.status, 401, "{}", reply.body);
    let id = reply.header("audit-id").first().expect("an Audit-Id header on the 401").to_string();
    wait_events(&log, 1, |e| e["auditID"] == id.as_str());
    // Give a (wrong) second event time to show up.
    std::thread::sleep(Duration::from_millis(300));
    let events: Vec<Value> = read(&log).into_iter().filter(|e| e["auditID"] == id.as_str()).collect();
    assert_eq!(stages(&events), ["ResponseStarted"], "{events:?}");
    let e = &events[0];
    assert_eq!(e["level"], "Metadata");
    assert_eq!(e["user"], json!({}));
    assert_eq!(e["verb"], "get");
    assert_eq!(e["requestURI"], path);
    assert_eq!(
        e["objectRef"],
        json!({"resource": "secrets", "namespace": "default", "name": "s-401", "apiVersion": "v1"})
    );
    assert_eq!(
        e["responseStatus"],
        json!({"metadata": {}, "message": "Authentication failed, attempted: bearer", "code": 401})
    );
    // Unaudited paths refused at authentication are not logged, but have an ID.
    let health = api_common::request_with(
        &server,
        anonymous_tls(&server),
        "GET",
        "/healthz",
        &[("Authorization", "Bearer forged")],
        b"",
    );
    assert_eq!(health.status, 401);
    assert_eq!(health.header("audit-id").len(), 1);
}

/// A refused impersonation is audited (upstream's WithImpersonation runs
/// inside WithAudit): the requestor as the user, no impersonated user,
/// the 403 with upstream's message.
#[test]
fn refused_impersonations_are_audited() {
    let dir = tempfile::tempdir().unwrap();
    let (server, log) = start(dir.path());
    let bob = support::user_tls_config(&server.tls_dir(), "bob", Some("devs")).unwrap();
    let reply = api_common::request_with(
        &server,
        bob,
        "GET",
        "/api/v1/namespaces/default/secrets/s-imp2",
        &[("Impersonate-User", "jane")],
        b"",
    );
    assert_eq!(reply.status, 403, "{}", reply.body);
    let id = reply.header("audit-id").first().expect("an Audit-Id header").to_string();
    let message = r#"users "jane" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope"#;
    assert_eq!(reply.json()["message"], message);
    let events = wait_events(&log, 2, |e| e["auditID"] == id.as_str());
    assert_eq!(stages(&events), ["RequestReceived", "ResponseComplete"]);
    for e in &events {
        assert_eq!(e["user"]["username"], "bob");
        assert_eq!(e["user"]["groups"], json!(["devs", "system:authenticated"]));
        assert!(e.get("impersonatedUser").is_none(), "{e}");
        assert_eq!(e["objectRef"]["name"], "s-imp2");
    }
    assert_eq!(events[1]["responseStatus"]["code"], 403);
    assert_eq!(events[1]["responseStatus"]["reason"], "Forbidden");
    assert_eq!(events[1]["responseStatus"]["message"], message);
}
