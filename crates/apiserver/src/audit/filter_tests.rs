use super::*;
use tower_service::Service;

fn auditor(policy: &str, dir: &std::path::Path) -> (Arc<Auditor>, std::path::PathBuf) {
    let log = dir.join("audit.log");
    let policy = super::super::Policy::from_bytes(policy.as_bytes()).unwrap();
    let backend = super::super::LogBackend::open(super::super::LogOptions {
        path: log.display().to_string(),
        ..Default::default()
    })
    .unwrap();
    (Arc::new(Auditor::new(policy, backend)), log)
}

fn events(log: &std::path::Path, n: usize) -> Vec<Value> {
    for _ in 0..300 {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        if lines.len() >= n {
            return lines;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("fewer than {n} events in {}", log.display());
}

const POLICY: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  nonResourceURLs: [/healthz]
- level: Metadata
  resources: [{group: "", resources: [secrets]}]
- level: RequestResponse
  resources: [{group: "", resources: [configmaps]}]
"#;

fn app(auditor: Option<Arc<Auditor>>) -> axum::Router {
    axum::Router::new()
        .fallback(|req: Request| async move {
            if req.uri().path().ends_with("/missing") {
                let status = serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "configmaps \"missing\" not found", "reason": "NotFound",
                    "details": {"name": "missing", "kind": "configmaps"}, "code": 404});
                return Response::builder()
                    .status(404)
                    .header(header::CONTENT_TYPE, "application/json")
                    .body(Body::from(status.to_string()))
                    .unwrap();
            }
            if let Some(ctx) = req.extensions().get::<AuditContext>() {
                ctx.annotate("authorization.k8s.io/decision", "allow");
            }
            // What admission plugins do through RequestAdmission::annotate.
            super::super::annotate_current("pod-security.kubernetes.io/enforce-policy", "privileged:latest");
            let body = axum::body::to_bytes(req.into_body(), 1 << 20).await.unwrap();
            Response::builder().header(header::CONTENT_TYPE, "application/json").body(Body::from(body)).unwrap()
        })
        .layer(axum::middleware::from_fn_with_state(auditor, audit))
}

fn request(method: Method, uri: &str, body: &str) -> Request {
    let mut req = Request::builder()
        .method(method)
        .uri(uri)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::USER_AGENT, "kubectl/v1.33.0")
        .body(Body::from(body.to_string()))
        .unwrap();
    req.extensions_mut().insert(UserInfo {
        name: "system:admin".into(),
        groups: vec!["system:masters".into(), "system:authenticated".into()],
        ..Default::default()
    });
    req.extensions_mut().insert(ConnectInfo(std::net::SocketAddr::from(([127, 0, 0, 1], 4000))));
    req
}

#[tokio::test]
async fn metadata_events_carry_who_what_and_the_code_but_no_bodies() {
    let dir = tempfile::tempdir().unwrap();
    let (auditor, log) = auditor(POLICY, dir.path());
    let body = r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s1"},"stringData":{"k":"v"}}"#;
    let resp = app(Some(auditor))
        .call(request(Method::POST, "/api/v1/namespaces/default/secrets?fieldManager=kubectl", body))
        .await
        .unwrap();
    let id = resp.headers()[AUDIT_ID_HEADER].to_str().unwrap().to_string();
    assert_eq!(id.len(), 36, "a UUID: {id}");
    let ev = events(&log, 2);
    assert_eq!(ev.len(), 2);
    assert_eq!((ev[0]["stage"].as_str(), ev[1]["stage"].as_str()), (Some("RequestReceived"), Some("ResponseComplete")));
    for e in &ev {
        assert_eq!(e["kind"], "Event");
        assert_eq!(e["apiVersion"], "audit.k8s.io/v1");
        assert_eq!(e["level"], "Metadata");
        assert_eq!(e["auditID"], id.as_str());
        assert_eq!(e["verb"], "create");
        assert_eq!(e["requestURI"], "/api/v1/namespaces/default/secrets?fieldManager=kubectl");
        assert_eq!(e["user"]["username"], "system:admin");
        assert_eq!(e["user"]["groups"], serde_json::json!(["system:masters", "system:authenticated"]));
        assert_eq!(e["sourceIPs"], serde_json::json!(["127.0.0.1"]));
        assert_eq!(e["userAgent"], "kubectl/v1.33.0");
        assert_eq!(
            e["objectRef"],
            serde_json::json!({"resource": "secrets", "namespace": "default", "name": "s1", "apiVersion": "v1"})
        );
        assert!(e.get("requestObject").is_none() && e.get("responseObject").is_none());
        let ts = e["stageTimestamp"].as_str().unwrap();
        assert_eq!((ts.len(), &ts[26..]), (27, "Z"), "microsecond RFC 3339: {ts}");
    }
    assert!(ev[0].get("responseStatus").is_none());
    assert_eq!(ev[0]["stageTimestamp"], ev[0]["requestReceivedTimestamp"]);
    assert_eq!(ev[1]["responseStatus"], serde_json::json!({"metadata": {}, "code": 200}));
    assert_eq!(ev[1]["annotations"]["authorization.k8s.io/decision"], "allow");
    assert_eq!(ev[1]["annotations"]["pod-security.kubernetes.io/enforce-policy"], "privileged:latest");
}

#[tokio::test]
async fn namespaces_and_name_selectors_fill_the_object_ref_as_upstream_request_info() {
    let dir = tempfile::tempdir().unwrap();
    let policy = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  namespaces: [kube-system]\n";
    let (auditor, log) = auditor(policy, dir.path());
    let app = app(Some(auditor));
    app.clone().call(request(Method::GET, "/api/v1/namespaces/kube-system", "")).await.unwrap();
    app.clone()
        .call(request(Method::GET, "/api/v1/namespaces/kube-system/configmaps?fieldSelector=metadata.name%3Dx", ""))
        .await
        .unwrap();
    let ev = events(&log, 4);
    assert_eq!(
        ev[0]["objectRef"],
        serde_json::json!({"resource": "namespaces", "namespace": "kube-system", "name": "kube-system", "apiVersion": "v1"})
    );
    assert_eq!(ev[2]["verb"], "list");
    assert_eq!(ev[2]["objectRef"]["name"], "x");
    assert_eq!(exact_name("a=b,metadata.name==y"), Some("y".into()));
    assert_eq!(exact_name("metadata.name!=y"), None);
}

#[tokio::test]
async fn request_response_events_carry_both_bodies_and_failures_carry_the_status() {
    let dir = tempfile::tempdir().unwrap();
    let (auditor, log) = auditor(POLICY, dir.path());
    let app = app(Some(auditor));
    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1","managedFields":[]},"data":{"a":"b"}}"#;
    app.clone().call(request(Method::POST, "/api/v1/namespaces/default/configmaps", body)).await.unwrap();
    let resp =
        app.clone().call(request(Method::GET, "/api/v1/namespaces/default/configmaps/missing", "")).await.unwrap();
    assert_eq!(resp.status(), 404);
    let ev = events(&log, 4);
    let created: Value = serde_json::from_str(body).unwrap();
    assert_eq!(ev[1]["level"], "RequestResponse");
    assert_eq!(ev[0]["requestObject"], created, "logged from RequestReceived on");
    assert_eq!(ev[1]["responseObject"], created);
    assert_eq!(ev[3]["verb"], "get");
    assert_eq!(
        ev[3]["responseStatus"],
        serde_json::json!({"metadata": {}, "status": "Failure", "message": "configmaps \"missing\" not found",
            "reason": "NotFound", "details": {"name": "missing", "kind": "configmaps"}, "code": 404})
    );
}

#[tokio::test]
async fn level_none_writes_nothing_and_every_response_has_an_audit_id() {
    let dir = tempfile::tempdir().unwrap();
    let (auditor, log) = auditor(POLICY, dir.path());
    let resp = app(Some(auditor.clone())).call(request(Method::GET, "/healthz", "")).await.unwrap();
    assert!(resp.headers().contains_key(AUDIT_ID_HEADER));
    // A client's own Audit-ID is kept.
    let mut req = request(Method::GET, "/api/v1/namespaces/default/secrets", "");
    req.headers_mut().insert("Audit-ID", HeaderValue::from_static("my-id"));
    let resp = app(Some(auditor)).call(req).await.unwrap();
    assert_eq!(resp.headers()[AUDIT_ID_HEADER], "my-id");
    let ev = events(&log, 2);
    assert_eq!(ev.len(), 2, "only the secrets list is audited");
    assert_eq!((ev[0]["auditID"].as_str(), ev[0]["verb"].as_str()), (Some("my-id"), Some("list")));
    let off = app(None).call(request(Method::GET, "/api", "")).await.unwrap();
    assert!(off.headers().contains_key(AUDIT_ID_HEADER));
}

#[tokio::test]
async fn watches_have_a_response_started_stage_and_complete_when_the_body_ends() {
    let dir = tempfile::tempdir().unwrap();
    let (auditor, log) = auditor(POLICY, dir.path());
    let resp = app(Some(auditor)).call(request(Method::GET, "/api/v1/secrets?watch=true", "")).await.unwrap();
    let stages = |n| events(&log, n).iter().map(|e| e["stage"].as_str().unwrap().to_string()).collect::<Vec<_>>();
    assert_eq!(stages(2), ["RequestReceived", "ResponseStarted"]);
    let _ = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap();
    assert_eq!(stages(3), ["RequestReceived", "ResponseStarted", "ResponseComplete"]);
    assert_eq!(events(&log, 3)[2]["verb"], "watch");
}

#[tokio::test]
async fn impersonated_requests_log_the_requestor_as_user_and_the_acting_user_as_impersonated() {
    let dir = tempfile::tempdir().unwrap();
    let (auditor, log) = auditor(POLICY, dir.path());
    let mut req = request(Method::GET, "/api/v1/namespaces/default/secrets/s", "");
    let acting = UserInfo { name: "jane".into(), groups: vec!["system:authenticated".into()], ..Default::default() };
    let admin = req.extensions_mut().insert(acting).unwrap();
    req.extensions_mut().insert(crate::authn::impersonation::Requestor(admin));
    app(Some(auditor)).call(req).await.unwrap();
    let ev = events(&log, 2);
    assert_eq!(ev[0]["user"]["username"], "system:admin");
    assert_eq!(ev[1]["user"]["username"], "system:admin");
    assert_eq!(ev[1]["impersonatedUser"], serde_json::json!({"username": "jane", "groups": ["system:authenticated"]}));
}

#[tokio::test]
async fn failed_authentications_are_audited_once_at_response_started_without_a_user() {
    let dir = tempfile::tempdir().unwrap();
    let (auditor, log) = auditor("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n", dir.path());
    // A stand-in for authentication: refuses bearer tokens with a 401.
    let refuse = |req: Request, next: Next| async move {
        if req.headers().contains_key(header::AUTHORIZATION) {
            return Response::builder().status(401).body(Body::empty()).unwrap();
        }
        next.run(req).await
    };
    let mut app = app(Some(auditor.clone()))
        .layer(axum::middleware::from_fn(refuse))
        .layer(axum::middleware::from_fn_with_state(Some(auditor), init));
    let mut req = request(Method::GET, "/api/v1/namespaces/default/pods?limit=1", "");
    req.headers_mut().insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer forged"));
    let resp = app.clone().call(req).await.unwrap();
    assert_eq!(resp.status(), 401);
    let id = resp.headers()[AUDIT_ID_HEADER].to_str().unwrap().to_string();
    let ev = events(&log, 1);
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0]["stage"], "ResponseStarted");
    assert_eq!(ev[0]["auditID"], id.as_str());
    assert_eq!(ev[0]["user"], serde_json::json!({}));
    assert_eq!(ev[0]["verb"], "list");
    assert_eq!(
        ev[0]["responseStatus"],
        serde_json::json!({"metadata": {}, "message": "Authentication failed, attempted: bearer", "code": 401})
    );
    // An authenticated request is audited by the inner layer only, with the same ID in both places.
    let resp = app.call(request(Method::GET, "/api/v1/namespaces/default/pods", "")).await.unwrap();
    let id = resp.headers()[AUDIT_ID_HEADER].to_str().unwrap().to_string();
    let ev = events(&log, 3);
    assert_eq!(ev.len(), 3);
    assert_eq!((ev[1]["stage"].as_str(), ev[1]["auditID"].as_str()), (Some("RequestReceived"), Some(id.as_str())));
    assert_eq!(ev[2]["user"]["username"], "system:admin");
}

#[test]
fn attempted_methods_name_what_the_request_carried() {
    let req = |auth: Option<&str>, uri: &str| {
        let mut b = Request::builder().uri(uri);
        if let Some(a) = auth {
            b = b.header(header::AUTHORIZATION, a);
        }
        b.body(Body::empty()).unwrap()
    };
    assert_eq!(attempted_methods(&req(None, "/api")), "Authentication failed, no credentials provided");
    assert_eq!(attempted_methods(&req(Some("bearer x"), "/api")), "Authentication failed, attempted: bearer");
    assert_eq!(
        attempted_methods(&req(Some("Basic dTpw"), "/api?access_token=t")),
        "Authentication failed, attempted: basic, access_token"
    );
}
