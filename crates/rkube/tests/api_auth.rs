//! The authentication and authorization APIs with the real kubectl (1.33
//! and 1.31): `kubectl create token` (serviceaccounts/token), `kubectl auth
//! can-i` (SelfSubjectAccessReview, SelfSubjectRulesReview), `kubectl auth
//! whoami` (SelfSubjectReview), and raw TokenReviews and access reviews.
//! Expected values are upstream 1.33's: token claims as kube-apiserver
//! writes them, error texts as kubectl prints upstream's Status messages.

mod api_common;
mod support;

use std::path::Path;

use api_common::{create, fails, ok, request};
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use serde_json::{json, Value};
use support::{TestServer, TestServerOptions};

/// kube-apiserver's default issuer and API audience on kubeadm clusters.
const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
const KUBECTL_131: &str = "/usr/lib/google-cloud-sdk/bin/kubectl.1.31";
const JSON: (&str, &str) = ("Content-Type", "application/json");

/// A server that logs the review requests (with their Content-Type).
fn server() -> TestServer {
    TestServer::start_with(TestServerOptions {
        extra_args: vec!["--log-level".into(), "info,rkube_apiserver::rest::auth=debug".into()],
        ..Default::default()
    })
}

/// Creates a service account (no controller creates `default` yet).
fn service_account(s: &TestServer, ns: &str, name: &str) -> String {
    let out = s.kubectl(&["create", "serviceaccount", "-n", ns, name]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() || stderr.contains("already exists"), "{stderr}");
    ok(s, &["get", "serviceaccount", "-n", ns, name, "-o", "jsonpath={.metadata.uid}"])
}

/// kubectl 1.31 against the server.
fn kubectl_131(s: &TestServer, args: &[&str]) -> std::process::Output {
    std::process::Command::new(KUBECTL_131)
        .arg("--kubeconfig")
        .arg(s.kubeconfig())
        .args(args)
        .output()
        .expect("run kubectl 1.31")
}

/// The (header, payload) of a compact JWS, after checking its ES256
/// signature against `sa.pub`.
fn decode_token(tls_dir: &Path, token: &str) -> (Value, Value) {
    let parts: Vec<&str> = token.trim().split('.').collect();
    assert_eq!(parts.len(), 3, "not a compact JWS: {token}");
    let part = |p: &str| -> Value { serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p).unwrap()).unwrap() };
    let spki = sa_public_key_der(tls_dir);
    // The last 65 bytes of a P-256 SubjectPublicKeyInfo are the point.
    let point = &spki[spki.len() - 65..];
    let key = ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, point);
    let signed = format!("{}.{}", parts[0], parts[1]);
    key.verify(signed.as_bytes(), &URL_SAFE_NO_PAD.decode(parts[2]).unwrap())
        .expect("the token's signature verifies with sa.pub");
    (part(parts[0]), part(parts[1]))
}

fn sa_public_key_der(tls_dir: &Path) -> Vec<u8> {
    let pem = std::fs::read_to_string(tls_dir.join("sa.pub")).expect("sa.pub");
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    STANDARD.decode(body).expect("sa.pub is PEM")
}

/// A protobuf length-delimited field.
fn ld(num: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![(num << 3 | 2) as u8];
    let mut len = payload.len();
    while len >= 0x80 {
        out.push((len as u8 & 0x7f) | 0x80);
        len >>= 7;
    }
    out.push(len as u8);
    out.extend_from_slice(payload);
    out
}

/// `k8s\0` + `runtime.Unknown{typeMeta{apiVersion, kind}, raw}`.
fn protobuf_body(api_version: &str, kind: &str, fields: &[Vec<u8>]) -> Vec<u8> {
    let type_meta = [ld(1, api_version.as_bytes()), ld(2, kind.as_bytes())].concat();
    let mut body = b"k8s\0".to_vec();
    body.extend(ld(1, &type_meta));
    body.extend(ld(2, &fields.concat()));
    body
}

fn int(v: &Value, key: &str) -> i64 {
    v[key].as_i64().unwrap_or_else(|| panic!("{key} in {v}"))
}

fn post(s: &TestServer, path: &str, body: &Value) -> api_common::Reply {
    request(s, "POST", path, &[JSON], body.to_string().as_bytes())
}

#[test]
fn create_token_issues_upstream_claims() {
    let s = server();
    let sa_uid = service_account(&s, "default", "default");
    let token = ok(&s, &["create", "token", "default"]);
    let (header, claims) = decode_token(&s.tls_dir(), &token);

    // kid: base64url(SHA-256(PKIX DER of the public key)), as upstream.
    let digest = ring::digest::digest(&ring::digest::SHA256, &sa_public_key_der(&s.tls_dir()));
    assert_eq!(header, json!({"alg": "ES256", "kid": URL_SAFE_NO_PAD.encode(digest.as_ref())}));
    assert_eq!(claims["iss"], ISSUER);
    assert_eq!(claims["sub"], "system:serviceaccount:default:default");
    assert_eq!(claims["aud"], json!([ISSUER]));
    assert_eq!(int(&claims, "exp") - int(&claims, "iat"), 3600);
    assert_eq!(claims["nbf"], claims["iat"]);
    assert_eq!(claims["jti"].as_str().unwrap().len(), 36, "{claims}");
    assert_eq!(
        claims["kubernetes.io"],
        json!({"namespace": "default", "serviceaccount": {"name": "default", "uid": sa_uid}})
    );
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    assert!((int(&claims, "iat") - now).abs() < 60, "{claims}");
    // The claim names, in go-jose's sorted order.
    let payload = String::from_utf8(URL_SAFE_NO_PAD.decode(token.trim().split('.').nth(1).unwrap()).unwrap()).unwrap();
    assert!(payload.starts_with(r#"{"aud":["#) && payload.contains(r#"},"nbf":"#), "{payload}");

    let short = ok(&s, &["create", "token", "default", "--duration", "10m"]);
    let (_, claims) = decode_token(&s.tls_dir(), &short);
    assert_eq!(int(&claims, "exp") - int(&claims, "iat"), 600);

    let err = fails(&s, &["create", "token", "default", "--duration", "1m"]);
    assert_eq!(
        err.trim(),
        r#"error: failed to create token: TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"#
    );

    let aud = ok(&s, &["create", "token", "default", "--audience", "vault", "--audience", "other"]);
    let (_, claims) = decode_token(&s.tls_dir(), &aud);
    assert_eq!(claims["aud"], json!(["vault", "other"]));

    let err = fails(&s, &["create", "token", "nope"]);
    assert_eq!(err.trim(), r#"error: failed to create token: serviceaccounts "nope" not found"#);

    // kubectl 1.33's typed client sent protobuf.
    assert!(
        s.logs().contains(r#"kind="TokenRequest" content_type="application/vnd.kubernetes.protobuf""#),
        "{}",
        s.logs()
    );
}

#[test]
fn create_token_binds_pods_and_secrets() {
    let s = server();
    service_account(&s, "default", "default");
    service_account(&s, "default", "other");
    create(
        &s,
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  serviceAccountName: default\n  containers:\n  - name: c\n    image: nginx\n",
    );
    let pod_uid = ok(&s, &["get", "pod", "web", "-o", "jsonpath={.metadata.uid}"]);
    let token = ok(&s, &["create", "token", "default", "--bound-object-kind", "Pod", "--bound-object-name", "web"]);
    let (_, claims) = decode_token(&s.tls_dir(), &token);
    assert_eq!(claims["kubernetes.io"]["pod"], json!({"name": "web", "uid": pod_uid}));
    assert!(claims["kubernetes.io"].get("node").is_none(), "an unscheduled pod has no node: {claims}");

    let err = fails(&s, &["create", "token", "default", "--bound-object-kind", "Pod", "--bound-object-name", "nope"]);
    assert_eq!(err.trim(), r#"error: failed to create token: pods "nope" not found"#);
    let err = fails(&s, &["create", "token", "other", "--bound-object-kind", "Pod", "--bound-object-name", "web"]);
    assert_eq!(
        err.trim(),
        r#"error: failed to create token: cannot bind token for serviceaccount "other" to pod running with different serviceaccount name."#
    );
    let err = fails(
        &s,
        &[
            "create",
            "token",
            "default",
            "--bound-object-kind",
            "Pod",
            "--bound-object-name",
            "web",
            "--bound-object-uid",
            "x",
        ],
    );
    assert_eq!(
        err.trim(),
        r#"error: failed to create token: Operation cannot be fulfilled on Pod "web": the UID in the bound object reference (x) does not match the UID in record. The object might have been deleted and then recreated"#
    );

    // The pod's node is named too, with its uid when the node exists.
    create(
        &s,
        "placed.yaml",
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: placed\nspec:\n  nodeName: n1\n  containers:\n  - name: c\n    image: nginx\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: ghost\nspec:\n  nodeName: gone\n  containers:\n  - name: c\n    image: nginx\n",
    );
    let node_uid = ok(&s, &["get", "node", "n1", "-o", "jsonpath={.metadata.uid}"]);
    let placed_uid = ok(&s, &["get", "pod", "placed", "-o", "jsonpath={.metadata.uid}"]);
    // No serviceAccountName: the pod runs as `default` (admission's default).
    let token = ok(&s, &["create", "token", "default", "--bound-object-kind", "Pod", "--bound-object-name", "placed"]);
    let (_, claims) = decode_token(&s.tls_dir(), &token);
    assert_eq!(claims["kubernetes.io"]["pod"], json!({"name": "placed", "uid": placed_uid}));
    assert_eq!(claims["kubernetes.io"]["node"], json!({"name": "n1", "uid": node_uid}));
    let token = ok(&s, &["create", "token", "default", "--bound-object-kind", "Pod", "--bound-object-name", "ghost"]);
    let (_, claims) = decode_token(&s.tls_dir(), &token);
    assert_eq!(claims["kubernetes.io"]["node"], json!({"name": "gone"}));
    let token = ok(&s, &["create", "token", "default", "--bound-object-kind", "Node", "--bound-object-name", "n1"]);
    let (_, claims) = decode_token(&s.tls_dir(), &token);
    assert_eq!(claims["kubernetes.io"]["node"], json!({"name": "n1", "uid": node_uid}));
    assert!(claims["kubernetes.io"].get("pod").is_none(), "{claims}");

    ok(&s, &["create", "secret", "generic", "s1"]);
    let secret_uid = ok(&s, &["get", "secret", "s1", "-o", "jsonpath={.metadata.uid}"]);
    let token = ok(&s, &["create", "token", "default", "--bound-object-kind", "Secret", "--bound-object-name", "s1"]);
    let (_, claims) = decode_token(&s.tls_dir(), &token);
    assert_eq!(claims["kubernetes.io"]["secret"], json!({"name": "s1", "uid": secret_uid}));

    // The raw API: other kinds are refused as upstream.
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"boundObjectRef": {"kind": "ConfigMap", "apiVersion": "v1", "name": "x"}}});
    let r = post(&s, "/api/v1/namespaces/default/serviceaccounts/default/token", &body);
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["message"], "cannot bind token to object of type /v1, Kind=ConfigMap");
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "metadata": {"name": "x"}});
    let r = post(&s, "/api/v1/namespaces/default/serviceaccounts/default/token", &body);
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(
        r.json()["message"],
        r#"TokenRequest.authentication.k8s.io "default" is invalid: metadata.name: Invalid value: "x": must match the service account name if specified"#
    );
    let r = post(&s, "/api/v1/namespaces/default/serviceaccounts/default/token?dryRun=All", &json!({}));
    assert_eq!(r.status, 201, "{}", r.body);
    let out = r.json();
    assert_eq!(out["kind"], "TokenRequest");
    assert_eq!(out["metadata"]["name"], "default");
    assert_eq!(out["spec"], json!({"audiences": [ISSUER], "expirationSeconds": 3600, "boundObjectRef": null}));
    assert!(out["status"]["token"].as_str().is_some_and(|t| t.split('.').count() == 3), "{out}");
    assert!(out["status"]["expirationTimestamp"].as_str().is_some_and(|t| t.ends_with('Z')), "{out}");
}

#[test]
fn pod_bound_tokens_review_with_the_pod_and_end_with_it() {
    let s = server();
    service_account(&s, "default", "default");
    create(
        &s,
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  serviceAccountName: default\n  containers:\n  - name: c\n    image: nginx\n",
    );
    let pod_uid = ok(&s, &["get", "pod", "web", "-o", "jsonpath={.metadata.uid}"]);
    let token = ok(&s, &["create", "token", "default", "--bound-object-kind", "Pod", "--bound-object-name", "web"]);
    let body =
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token.trim()}});
    let out = post(&s, "/apis/authentication.k8s.io/v1/tokenreviews", &body).json();
    assert_eq!(out["status"]["authenticated"], true, "{out}");
    let extra = &out["status"]["user"]["extra"];
    assert_eq!(extra["authentication.kubernetes.io/pod-name"], json!(["web"]));
    assert_eq!(extra["authentication.kubernetes.io/pod-uid"], json!([pod_uid]));
    // An unscheduled pod is deleted at once; its tokens stop working.
    ok(&s, &["delete", "pod", "web"]);
    let out = post(&s, "/apis/authentication.k8s.io/v1/tokenreviews", &body).json();
    assert_eq!(out["status"], json!({"user": {}, "error": "service account token has been invalidated"}));
}

#[test]
fn service_account_issuer_flag_sets_iss_and_the_default_audience() {
    let s = TestServer::start_with(TestServerOptions {
        extra_args: vec!["--service-account-issuer".into(), "https://issuer.example".into()],
        ..Default::default()
    });
    service_account(&s, "default", "default");
    let token = ok(&s, &["create", "token", "default"]);
    let (_, claims) = decode_token(&s.tls_dir(), &token);
    assert_eq!(claims["iss"], "https://issuer.example");
    assert_eq!(claims["aud"], json!(["https://issuer.example"]));
    let body =
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token.trim()}});
    let out = post(&s, "/apis/authentication.k8s.io/v1/tokenreviews", &body).json();
    assert_eq!(out["status"]["audiences"], json!(["https://issuer.example"]), "{out}");
}

#[test]
fn create_token_with_kubectl_1_31() {
    let s = server();
    service_account(&s, "default", "default");
    let out = kubectl_131(&s, &["create", "token", "default", "--duration", "20m"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (_, claims) = decode_token(&s.tls_dir(), &String::from_utf8_lossy(&out.stdout));
    assert_eq!(int(&claims, "exp") - int(&claims, "iat"), 1200);
    let out = kubectl_131(&s, &["create", "token", "default", "--duration", "1m"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        r#"error: failed to create token: TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"#
    );
}

/// The hex SHA-256 of the admin certificate's DER.
fn admin_cert_sha256(tls_dir: &Path) -> String {
    let pem = std::fs::read_to_string(tls_dir.join("admin.crt")).unwrap();
    let b64: String =
        pem.lines().take_while(|l| !l.starts_with("-----END")).filter(|l| !l.starts_with("-----")).collect();
    let digest = ring::digest::digest(&ring::digest::SHA256, &STANDARD.decode(b64).unwrap());
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn auth_can_i_and_whoami() {
    let s = server();
    for kubectl in ["1.33", "1.31"] {
        let run = |args: &[&str]| -> (bool, String) {
            let out = if kubectl == "1.33" { s.kubectl(args) } else { kubectl_131(&s, args) };
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            (out.status.success(), text)
        };
        assert_eq!(run(&["auth", "can-i", "create", "pods"]), (true, "yes\n".into()), "kubectl {kubectl}");
        assert_eq!(run(&["auth", "can-i", "get", "/healthz"]), (true, "yes\n".into()), "kubectl {kubectl}");
        let (success, list) = run(&["auth", "can-i", "--list"]);
        assert!(success, "kubectl {kubectl}: {list}");
        // The admin's rules are its bindings' (cluster-admin through
        // system:masters, and the defaults of system:authenticated), as
        // upstream's RBAC resolves them.
        let rows: Vec<Vec<&str>> = list.lines().map(|l| l.split_whitespace().collect()).collect();
        assert_eq!(rows[0], vec!["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"], "{list}");
        assert_eq!(rows[1], vec!["*.*", "[]", "[]", "[*]"], "kubectl {kubectl}:\n{list}");
        assert_eq!(rows[2], vec!["[*]", "[]", "[*]"], "kubectl {kubectl}:\n{list}");
        for row in [
            vec!["selfsubjectreviews.authentication.k8s.io", "[]", "[]", "[create]"],
            vec!["selfsubjectaccessreviews.authorization.k8s.io", "[]", "[]", "[create]"],
            vec!["[/healthz]", "[]", "[get]"],
            vec!["[/version/]", "[]", "[get]"],
        ] {
            assert!(rows.contains(&row), "kubectl {kubectl}: {row:?} missing:\n{list}");
        }
        // Upstream 1.32+ names a certificate credential by its SHA-256.
        let credential_id = format!("X509SHA256={}", admin_cert_sha256(&s.tls_dir()));
        let (success, table) = run(&["auth", "whoami"]);
        assert!(success, "kubectl {kubectl}");
        let rows: Vec<Vec<&str>> = table.lines().map(|l| l.split_whitespace().collect()).collect();
        assert_eq!(
            rows,
            vec![
                vec!["ATTRIBUTE", "VALUE"],
                vec!["Username", "system:admin"],
                vec!["Groups", "[system:masters", "system:authenticated]"],
                vec!["Extra:", "authentication.kubernetes.io/credential-id", &format!("[{credential_id}]")],
            ],
            "kubectl {kubectl}:\n{table}"
        );
        let (_, text) = run(&["auth", "whoami", "-o", "json"]);
        let review: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(review["kind"], "SelfSubjectReview");
        assert_eq!(review["apiVersion"], "authentication.k8s.io/v1");
        assert_eq!(
            review["status"],
            json!({"userInfo": {"username": "system:admin", "groups": ["system:masters", "system:authenticated"],
                "extra": {"authentication.kubernetes.io/credential-id": [credential_id]}}})
        );
        assert!(review["metadata"]["creationTimestamp"].as_str().is_some_and(|t| t.ends_with('Z')), "{review}");
    }
    // kubectl 1.33 sent these as protobuf.
    let logs = s.logs();
    for kind in ["SelfSubjectAccessReview", "SelfSubjectRulesReview", "SelfSubjectReview"] {
        assert!(
            logs.contains(&format!(r#"kind="{kind}" content_type="application/vnd.kubernetes.protobuf""#)),
            "{kind}: {logs}"
        );
    }
}

#[test]
fn token_review_authenticates_issued_tokens_only() {
    let s = server();
    let sa_uid = service_account(&s, "default", "robot");
    let token = ok(&s, &["create", "token", "robot"]).trim().to_string();
    let review = |token: &str, audiences: Option<Vec<&str>>| -> Value {
        let mut body =
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}});
        if let Some(a) = audiences {
            body["spec"]["audiences"] = json!(a);
        }
        let r = post(&s, "/apis/authentication.k8s.io/v1/tokenreviews", &body);
        assert_eq!(r.status, 201, "{}", r.body);
        r.json()
    };
    let out = review(&token, None);
    assert_eq!(out["kind"], "TokenReview");
    assert_eq!(out["metadata"], json!({"creationTimestamp": null}));
    let status = &out["status"];
    assert_eq!(status["authenticated"], true, "{out}");
    assert_eq!(status["user"]["username"], "system:serviceaccount:default:robot");
    assert_eq!(status["user"]["uid"], sa_uid);
    assert_eq!(
        status["user"]["groups"],
        json!(["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"])
    );
    let (_, claims) = decode_token(&s.tls_dir(), &token);
    assert_eq!(
        status["user"]["extra"],
        json!({"authentication.kubernetes.io/credential-id": [format!("JTI={}", claims["jti"].as_str().unwrap())]})
    );
    assert_eq!(status["audiences"], json!([ISSUER]));

    // The same review as protobuf (client-go's delegated authentication).
    let pb = protobuf_body("authentication.k8s.io/v1", "TokenReview", &[ld(1, &[]), ld(2, &ld(1, token.as_bytes()))]);
    let r = request(
        &s,
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        &[("Content-Type", "application/vnd.kubernetes.protobuf"), ("Accept", "application/json")],
        &pb,
    );
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.json()["status"]["user"]["username"], "system:serviceaccount:default:robot");

    // Another audience than the token's.
    let out = review(&token, Some(vec!["vault"]));
    assert_eq!(out["status"]["authenticated"], Value::Null, "{out}");
    assert_eq!(
        out["status"]["error"],
        format!(r#"token audiences ["{ISSUER}"] is invalid for the target audiences ["vault"]"#)
    );
    // Garbage: no authenticator recognizes it.
    let out = review("garbage", None);
    assert_eq!(out["status"], json!({"user": {}, "error": "invalid bearer token"}));
    // A forged signature.
    let mut parts: Vec<String> = token.split('.').map(str::to_string).collect();
    parts[2] = URL_SAFE_NO_PAD.encode([7u8; 64]);
    let out = review(&parts.join("."), None);
    assert_eq!(out["status"]["error"], "go-jose/go-jose: error in cryptographic primitive", "{out}");
    // The account is gone: the token stops working.
    ok(&s, &["delete", "serviceaccount", "robot"]);
    let out = review(&token, None);
    assert_eq!(out["status"]["error"], r#"serviceaccounts "robot" not found"#, "{out}");
    // No token at all.
    let r = post(&s, "/apis/authentication.k8s.io/v1/tokenreviews", &json!({"spec": {}}));
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["message"], "token is required for TokenReview in authentication");
}

/// [Conformance] "SubjectReview, API Operations": SubjectAccessReview and
/// LocalSubjectAccessReview for a service account succeed and report its
/// access as RBAC grants it: nothing, then what a RoleBinding gives.
#[test]
fn access_reviews_answer_and_validate() {
    let s = server();
    let sar = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
    let body = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {
        "user": "system:serviceaccount:default:robot", "groups": ["system:serviceaccounts"],
        "resourceAttributes": {"namespace": "default", "verb": "list", "resource": "configmaps"}}});
    let r = post(&s, sar, &body);
    assert_eq!(r.status, 201, "{}", r.body);
    let out = r.json();
    assert_eq!(out["status"], json!({"allowed": false}), "{out}");
    assert_eq!(out["spec"]["resourceAttributes"]["resource"], "configmaps");
    ok(
        &s,
        &[
            "create",
            "rolebinding",
            "robot-view",
            "-n",
            "default",
            "--clusterrole=view",
            "--serviceaccount=default:robot",
        ],
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let out = loop {
        let out = post(&s, sar, &body).json();
        if out["status"]["allowed"] == true || std::time::Instant::now() > deadline {
            break out;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(
        out["status"],
        json!({"allowed": true, "reason": "RBAC: allowed by RoleBinding \"robot-view/default\" of ClusterRole \"view\" to ServiceAccount \"robot/default\""}),
        "{out}"
    );
    let lsar = "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews";
    let mut local = body.clone();
    local["kind"] = json!("LocalSubjectAccessReview");
    let r = post(&s, lsar, &local);
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.json()["metadata"]["namespace"], "default");
    assert_eq!(r.json()["status"]["allowed"], true);
    // The anonymous user is not allowed.
    let anon = json!({"spec": {"user": "system:anonymous", "nonResourceAttributes": {"path": "/api", "verb": "get"}}});
    let r = post(&s, &format!("{sar}?dryRun=All"), &anon);
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.json()["status"], json!({"allowed": false}));

    // Validation: 422 with upstream's paths and messages.
    let ssar = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    let r = post(&s, ssar, &json!({"spec": {}}));
    assert_eq!(r.status, 422, "{}", r.body);
    let status = r.json();
    assert_eq!(
        status["message"],
        r#"SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified"#
    );
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(status["details"]["kind"], "SelfSubjectAccessReview");
    assert_eq!(status["details"]["group"], "authorization.k8s.io");
    assert_eq!(status["details"]["causes"][0]["field"], "spec.resourceAttributes");
    assert_eq!(status["details"]["causes"][0]["reason"], "FieldValueInvalid");
    let both = json!({"spec": {"resourceAttributes": {"verb": "get"}, "nonResourceAttributes": {"path": "/x", "verb": "get"}}});
    let r = post(&s, ssar, &both);
    assert_eq!(r.status, 422);
    assert_eq!(r.json()["details"]["causes"][0]["field"], "spec.nonResourceAttributes");
    assert!(r.json()["message"]
        .as_str()
        .unwrap()
        .ends_with(": cannot be specified in combination with resourceAttributes"));
    let r = post(&s, sar, &json!({"spec": {"resourceAttributes": {"verb": "get"}}}));
    assert_eq!(r.status, 422);
    assert_eq!(
        r.json()["message"],
        r#"SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": at least one of user or group must be specified"#
    );
    // The local review's namespaces: body vs URL (400), attributes vs body (422).
    let mut other_ns = local.clone();
    other_ns["metadata"] = json!({"namespace": "kube-system"});
    let r = post(&s, lsar, &other_ns);
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["message"],
        "the namespace of the provided object does not match the namespace sent on the request"
    );
    let mut other_attr = local.clone();
    other_attr["spec"]["resourceAttributes"]["namespace"] = json!("kube-system");
    let r = post(&s, lsar, &other_attr);
    assert_eq!(r.status, 422);
    assert_eq!(
        r.json()["message"],
        r#"LocalSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes.namespace: Invalid value: "kube-system": must match metadata.namespace"#
    );
    // Create-only: other verbs are 405.
    let r = request(&s, "GET", ssar, &[], b"");
    assert_eq!(r.status, 405);
    // SelfSubjectRulesReview needs a namespace.
    let r = post(&s, "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", &json!({"spec": {}}));
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["message"], "no namespace on request");
}
