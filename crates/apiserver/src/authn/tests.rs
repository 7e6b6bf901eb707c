//! The authenticator chain over a real store: static, service-account
//! (bound and legacy) and bootstrap tokens, in upstream's order and with
//! upstream's errors.

use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use rkube_apimachinery::meta;
use rkube_apimachinery::registry::Registry;
use rkube_store::sqlite::{SqliteOptions, SqliteStore};
use serde_json::{json, Value};

use super::*;
use crate::bootstrap::ClusterConfig;
use crate::serviceaccount::claims::{ObjRef, TokenClaims};
use crate::serviceaccount::legacy::LegacyClaims;
use crate::serviceaccount::DEFAULT_ISSUER;
use crate::storage::WriteOptions;

async fn api(tokens: &str) -> (tempfile::TempDir, Api) {
    let dir = tempfile::tempdir().unwrap();
    let opts = SqliteOptions { progress_interval: Duration::from_millis(200), ..Default::default() };
    let store = SqliteStore::open_with(&dir.path().join("state.db"), opts).await.unwrap();
    let cluster = ClusterConfig {
        authenticator: Arc::new(Authenticator::new(true, TokenFile::parse(tokens, "tokens.csv").unwrap())),
        ..ClusterConfig::default()
    };
    (dir, Api::with_cluster(Registry::builtin(), Arc::new(store), cluster))
}

async fn create(api: &Api, plural: &str, ns: &str, obj: Value) -> Value {
    api.store("", "v1", plural).unwrap().create(ns, obj, &WriteOptions::default()).await.unwrap()
}

async fn delete(api: &Api, plural: &str, ns: &str, name: &str) {
    let store = api.store("", "v1", plural).unwrap();
    store.delete(ns, name, &Default::default()).await.unwrap();
}

fn auth(api: &Api) -> &Authenticator {
    &api.cluster().authenticator
}

fn bound_token(api: &Api, sa: &Value, lifetime: i64, audiences: &[&str]) -> String {
    let now = jiff::Timestamp::now().as_second();
    let claims = TokenClaims {
        issuer: DEFAULT_ISSUER.into(),
        audiences: audiences.iter().map(|a| a.to_string()).collect(),
        namespace: meta::namespace(sa).into(),
        service_account: ObjRef { name: meta::name(sa).into(), uid: meta::uid(sa).into() },
        issued_at: now - 10,
        expiry: now + lifetime,
        id: "jti-1".into(),
        ..TokenClaims::default()
    };
    api.cluster().service_account.sign(&claims.to_json()).unwrap()
}

fn sa(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})
}

#[tokio::test]
async fn static_tokens_come_first_and_get_system_authenticated() {
    let (_dir, api) = api("s3cret,alice,uid-a,\"dev,ops\"\n").await;
    let a = auth(&api).authenticate_token(&api, "s3cret", &[]).await.unwrap().unwrap();
    assert_eq!(a.user.name, "alice");
    assert_eq!(a.user.uid, "uid-a");
    assert_eq!(a.user.groups, ["dev", "ops", "system:authenticated"]);
    assert_eq!(a.audiences, [DEFAULT_ISSUER]);
    // Not for another audience (audience-agnostic tokens are the API's).
    assert_eq!(auth(&api).authenticate_token(&api, "s3cret", &["vault".into()]).await.unwrap(), None);
    assert_eq!(auth(&api).authenticate_token(&api, "unknown", &[]).await.unwrap(), None);
}

#[tokio::test]
async fn bound_tokens_need_their_account_audience_and_lifetime() {
    let (_dir, api) = api("").await;
    let robot = create(&api, "serviceaccounts", "default", sa("robot")).await;
    let token = bound_token(&api, &robot, 600, &[DEFAULT_ISSUER]);
    let a = auth(&api).authenticate_token(&api, &token, &[]).await.unwrap().unwrap();
    assert_eq!(a.user.name, "system:serviceaccount:default:robot");
    assert_eq!(a.user.uid, meta::uid(&robot));
    assert_eq!(a.user.groups, ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"]);
    assert_eq!(a.user.extra["authentication.kubernetes.io/credential-id"], ["JTI=jti-1"]);

    let other = bound_token(&api, &robot, 600, &["vault"]);
    assert_eq!(
        auth(&api).authenticate_token(&api, &other, &[]).await.unwrap_err(),
        format!(r#"token audiences ["vault"] is invalid for the target audiences ["{DEFAULT_ISSUER}"]"#)
    );
    assert_eq!(
        auth(&api).authenticate_token(&api, &other, &["vault".into()]).await.unwrap().unwrap().audiences,
        ["vault"]
    );
    let expired = bound_token(&api, &robot, -3600, &[DEFAULT_ISSUER]);
    assert_eq!(
        auth(&api).authenticate_token(&api, &expired, &[]).await.unwrap_err(),
        "service account token has expired"
    );
    let forged = crate::serviceaccount::TokenIssuer::ephemeral(DEFAULT_ISSUER)
        .sign(
            &serde_json::from_slice::<Value>(
                &base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(token.split('.').nth(1).unwrap()).unwrap(),
            )
            .unwrap(),
        )
        .unwrap();
    assert_eq!(
        auth(&api).authenticate_token(&api, &forged, &[]).await.unwrap_err(),
        "go-jose/go-jose: error in cryptographic primitive"
    );
    // The account goes: the (cached) token stops working as soon as the
    // watch cache has seen the deletion.
    delete(&api, "serviceaccounts", "default", "robot").await;
    assert_eq!(eventually_refused(&api, &token).await, r#"serviceaccounts "robot" not found"#);
    // Same name, new uid: still refused.
    let again = create(&api, "serviceaccounts", "default", sa("robot")).await;
    let want = format!("service account UID ({}) does not match claim ({})", meta::uid(&again), meta::uid(&robot));
    for _ in 0..100 {
        if auth(&api).authenticate_token(&api, &token, &[]).await.unwrap_err() == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("never refused with {want}");
}

/// The first answer for `token` that `done` accepts (the watch cache
/// catches up within 2 s).
async fn eventually(
    api: &Api,
    token: &str,
    done: impl Fn(&Result<Option<Authenticated>, String>) -> bool,
) -> Result<Option<Authenticated>, String> {
    for _ in 0..100 {
        let r = auth(api).authenticate_token(api, token, &[]).await;
        if done(&r) {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no expected answer for the token");
}

/// The refusal of `token` once the watch cache caught up (at most 2 s).
async fn eventually_refused(api: &Api, token: &str) -> String {
    for _ in 0..100 {
        if let Err(e) = auth(api).authenticate_token(api, token, &[]).await {
            return e;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the token stayed valid");
}

#[tokio::test]
async fn legacy_tokens_live_as_long_as_their_secret_holds_them() {
    let (_dir, api) = api("").await;
    let robot = create(&api, "serviceaccounts", "default", sa("robot")).await;
    let claims = LegacyClaims {
        namespace: "default".into(),
        secret_name: "robot-token".into(),
        service_account_name: "robot".into(),
        service_account_uid: meta::uid(&robot).into(),
    };
    let token = api.cluster().service_account.sign(&claims.to_json()).unwrap();
    let secret = |token: &str, labels: Value| {
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
            "metadata": {"name": "robot-token", "labels": labels,
                "annotations": {"kubernetes.io/service-account.name": "robot"}},
            "data": {"token": STANDARD.encode(token)}})
    };
    // No secret yet.
    assert_eq!(auth(&api).authenticate_token(&api, &token, &[]).await.unwrap_err(), "Token has been invalidated");
    create(&api, "secrets", "default", secret("another", json!({}))).await;
    assert_eq!(
        auth(&api).authenticate_token(&api, &token, &[]).await.unwrap_err(),
        "Token does not match server's copy"
    );
    delete(&api, "secrets", "default", "robot-token").await;
    create(&api, "secrets", "default", secret(&token, json!({}))).await;
    let a = eventually(&api, &token, |r| r.is_ok()).await.unwrap().unwrap();
    assert_eq!(a.user.name, "system:serviceaccount:default:robot");
    assert_eq!(a.user.uid, meta::uid(&robot));
    assert_eq!(a.user.groups, ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"]);
    assert!(a.user.extra.is_empty());
    assert!(a.warnings.is_empty(), "a manually created token does not warn");
    assert_eq!(a.audiences, [DEFAULT_ISSUER]);
    // The use is recorded on the Secret (UTC date).
    let today = jiff::Zoned::now().with_time_zone(jiff::tz::TimeZone::UTC).date().to_string();
    let secrets = api.store("", "v1", "secrets").unwrap();
    let mut labelled = false;
    for _ in 0..100 {
        let s = secrets.get("default", "robot-token", "").await.unwrap();
        if s["metadata"]["labels"]["kubernetes.io/legacy-token-last-used"] == json!(today) {
            labelled = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(labelled, "the secret never got its last-used label");
    // Marked invalid by the legacy token cleaner.
    delete(&api, "secrets", "default", "robot-token").await;
    create(
        &api,
        "secrets",
        "default",
        secret(&token, json!({"kubernetes.io/legacy-token-invalid-since": "2024-01-01"})),
    )
    .await;
    let err = eventually(&api, &token, |r| r.as_ref().is_err_and(|e| e.contains("marked invalid"))).await.unwrap_err();
    assert!(
        err.starts_with(
            "the token in secret default/robot-token for service account default/robot has been marked invalid."
        ),
        "{err}"
    );
}

#[tokio::test]
async fn bootstrap_tokens_authenticate_through_their_secret() {
    let (_dir, api) = api("").await;
    let data = |pairs: &[(&str, &str)]| -> Value {
        pairs.iter().map(|(k, v)| (k.to_string(), json!(STANDARD.encode(v)))).collect::<serde_json::Map<_, _>>().into()
    };
    create(
        &api,
        "secrets",
        "kube-system",
        json!({"apiVersion": "v1", "kind": "Secret", "type": "bootstrap.kubernetes.io/token",
            "metadata": {"name": "bootstrap-token-abcdef"},
            "data": data(&[("token-id", "abcdef"), ("token-secret", "0123456789abcdef"),
                ("usage-bootstrap-authentication", "true"), ("auth-extra-groups", "system:bootstrappers:nodes")])}),
    )
    .await;
    let a = auth(&api).authenticate_token(&api, "abcdef.0123456789abcdef", &[]).await.unwrap().unwrap();
    assert_eq!(a.user.name, "system:bootstrap:abcdef");
    assert_eq!(a.user.groups, ["system:bootstrappers", "system:bootstrappers:nodes", "system:authenticated"]);
    assert_eq!(auth(&api).authenticate_token(&api, "abcdef.0123456789abcdee", &[]).await.unwrap(), None);
    assert_eq!(auth(&api).authenticate_token(&api, "zzzzzz.0123456789abcdef", &[]).await.unwrap(), None);
}

#[tokio::test]
async fn requests_authenticate_by_header_and_refuse_bad_credentials() {
    let (_dir, api) = api("s3cret,alice,uid-a\n").await;
    let headers = |pairs: &[(&str, &str)]| {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
        }
        h
    };
    let chain = auth(&api);
    let (a, source) =
        chain.authenticate_request(&api, &headers(&[("authorization", "Bearer s3cret")]), None).await.unwrap().unwrap();
    assert_eq!((a.user.name.as_str(), source), ("alice", Credential::AuthorizationHeader));
    assert_eq!(chain.authenticate_request(&api, &headers(&[]), None).await.unwrap(), None);
    assert_eq!(
        chain.authenticate_request(&api, &headers(&[("authorization", "Basic eDp5")]), None).await.unwrap(),
        None
    );
    assert_eq!(
        chain.authenticate_request(&api, &headers(&[("authorization", "Bearer nope")]), None).await.unwrap_err(),
        "invalid bearer token"
    );
    let ws = format!(
        "base64url.bearer.authorization.k8s.io.{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("s3cret")
    );
    let (a, source) = chain
        .authenticate_request(
            &api,
            &headers(&[("connection", "Upgrade"), ("upgrade", "websocket"), ("sec-websocket-protocol", &ws)]),
            None,
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!((a.user.name.as_str(), source), ("alice", Credential::WebSocketProtocol));
    // A certificate with no client CA configured cannot verify.
    let peer = PeerCertificates::new(vec![rustls::pki_types::CertificateDer::from(b"x".to_vec())]).unwrap();
    assert!(chain.authenticate_request(&api, &headers(&[]), Some(&peer)).await.is_err());
    // Both refused: the errors aggregate as Go's.
    let err =
        chain.authenticate_request(&api, &headers(&[("authorization", "Bearer nope")]), Some(&peer)).await.unwrap_err();
    assert_eq!(err, "[verifying certificate failed: no client CA is configured, invalid bearer token]");
}

#[test]
fn errors_aggregate_like_go() {
    assert_eq!(aggregate(&["a".into()]), "a");
    assert_eq!(aggregate(&["a".into(), "a".into()]), "a");
    assert_eq!(aggregate(&["a".into(), "b".into()]), "[a, b]");
}

#[test]
fn the_unauthorized_body_is_upstreams_status() {
    let v: Value = serde_json::from_str(UNAUTHORIZED_BODY).unwrap();
    assert_eq!(
        v,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": "Unauthorized",
            "reason": "Unauthorized", "code": 401})
    );
    assert_eq!(unauthorized().status(), 401);
}
