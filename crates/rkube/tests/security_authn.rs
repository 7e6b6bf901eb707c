//! Authentication against the real server with the real kubectl: bearer
//! tokens (TokenRequest, legacy secret-based, static token file, bootstrap),
//! x509 client certificates, anonymous requests, impersonation, and bad
//! input. Expected values are upstream 1.33's: the `system:serviceaccount:…`
//! user and groups, the 401 `Unauthorized` Status, kubectl's
//! `error: You must be logged in to the server (Unauthorized)`, and the
//! impersonation 403 wording of `responsewriters.Forbidden`.

mod api_common;
mod support;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use api_common::{ok, request, request_with};
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde_json::{json, Value};
use support::{TestServer, TestServerOptions};

const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// What kubectl prints for a 401 with upstream's Status.
const KUBECTL_UNAUTHORIZED: &str = "error: You must be logged in to the server (Unauthorized)";
/// Upstream's 401 body (`apierrors.NewUnauthorized("Unauthorized")`).
fn unauthorized_status() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": "Unauthorized",
        "reason": "Unauthorized", "code": 401})
}

/// A kubeconfig for the server whose user holds `token` (or nothing).
fn token_kubeconfig(s: &TestServer, name: &str, token: Option<&str>) -> PathBuf {
    let path = s.data_dir().join(format!("{name}.kubeconfig"));
    let user = match token {
        Some(t) => format!("{{token: \"{t}\"}}"),
        None => "{}".to_string(),
    };
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:{}\n    certificate-authority: {}\nusers:\n- name: u\n  user: {user}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\ncurrent-context: c\n",
        s.port(),
        s.tls_dir().join("ca.crt").display()
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// `kubectl auth whoami -o json` with `kubeconfig` and `extra` flags:
/// the SelfSubjectReview status, or kubectl's stderr.
fn whoami(s: &TestServer, kubeconfig: &Path, extra: &[&str]) -> Result<Value, String> {
    let mut args = extra.to_vec();
    args.extend(["auth", "whoami", "-o", "json"]);
    let out = s.kubectl_with(kubeconfig, &args);
    if out.status.success() {
        let review: Value = serde_json::from_slice(&out.stdout).unwrap();
        Ok(review["status"]["userInfo"].clone())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

/// The whoami of a token that must be refused.
fn assert_refused(s: &TestServer, what: &str, token: &str) {
    let kc = token_kubeconfig(s, "refused", Some(token));
    assert_eq!(whoami(s, &kc, &[]), Err(KUBECTL_UNAUTHORIZED.to_string()), "{what}");
}

/// A TLS client trusting the cluster CA, presenting `cert` (PEM cert and
/// key) if any.
fn tls(tls_dir: &Path, cert: Option<(&str, &str)>) -> Arc<rustls::ClientConfig> {
    let ca = CertificateDer::from_pem_slice(&std::fs::read(tls_dir.join("ca.crt")).unwrap()).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca).unwrap();
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    Arc::new(match cert {
        Some((cert, key)) => builder
            .with_client_auth_cert(
                vec![CertificateDer::from_pem_slice(cert.as_bytes()).unwrap()],
                PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap(),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    })
}

/// Sends raw request bytes over TLS; `(status, body)` or the I/O error.
fn raw(s: &TestServer, config: Arc<rustls::ClientConfig>, request: &[u8]) -> Result<(u16, String), String> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, s.port()));
    let mut conn = rustls::ClientConnection::new(config, ServerName::IpAddress(addr.ip().into())).unwrap();
    let mut sock = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).map_err(|e| e.to_string())?;
    sock.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut stream = rustls::Stream::new(&mut conn, &mut sock);
    // The server may answer (431) and close before reading everything.
    let _ = stream.write_all(request);
    let mut out = Vec::new();
    match stream.read_to_end(&mut out) {
        Ok(_) => {}
        Err(_) if !out.is_empty() => {}
        Err(e) => return Err(e.to_string()),
    }
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").ok_or_else(|| format!("no response: {text:?}"))?;
    let status = head.split(' ').nth(1).and_then(|c| c.parse().ok()).ok_or("bad status line")?;
    Ok((status, body.to_string()))
}

/// A GET of `path` without a client certificate, with `headers`.
fn get_anonymous(s: &TestServer, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let r = request_with(s, tls(&s.tls_dir(), None), "GET", path, headers, b"");
    (r.status, r.body)
}

/// Signs `claims` as an ES256 JWS with the server's service-account key
/// (`sa.key`), as its token controller would.
fn sign_with_server_key(tls_dir: &Path, claims: &Value) -> String {
    let pem = std::fs::read_to_string(tls_dir.join("sa.key")).unwrap();
    sign(&pem_der(&pem), claims)
}

fn pem_der(pem: &str) -> Vec<u8> {
    let b64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    STANDARD.decode(b64).unwrap()
}

fn sign(pkcs8: &[u8], claims: &Value) -> String {
    let rng = ring::rand::SystemRandom::new();
    let key = ring::signature::EcdsaKeyPair::from_pkcs8(&ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8, &rng)
        .unwrap();
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(r#"{"alg":"ES256"}"#),
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(claims).unwrap())
    );
    let sig = key.sign(&rng, input.as_bytes()).unwrap();
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
}

fn claims_of(token: &str) -> Value {
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(token.trim().split('.').nth(1).unwrap()).unwrap()).unwrap()
}

fn service_account(s: &TestServer, ns: &str, name: &str) -> String {
    let out = s.kubectl(&["create", "serviceaccount", "-n", ns, name]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() || stderr.contains("already exists"), "{stderr}");
    ok(s, &["get", "serviceaccount", "-n", ns, name, "-o", "jsonpath={.metadata.uid}"])
}

#[test]
fn token_request_tokens_authenticate_kubectl_and_bad_ones_get_401() {
    let s = TestServer::start();
    let uid = service_account(&s, "default", "robot");
    let token = ok(&s, &["create", "token", "robot"]).trim().to_string();
    let jti = claims_of(&token)["jti"].as_str().unwrap().to_string();
    let expected = json!({
        "username": "system:serviceaccount:default:robot",
        "uid": uid,
        "groups": ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"],
        "extra": {"authentication.kubernetes.io/credential-id": [format!("JTI={jti}")]},
    });
    // A kubeconfig whose user holds the token, and --token on a bare one.
    let kc = token_kubeconfig(&s, "robot", Some(&token));
    assert_eq!(whoami(&s, &kc, &[]), Ok(expected.clone()));
    let bare = token_kubeconfig(&s, "bare", None);
    assert_eq!(whoami(&s, &bare, &["--token", &token]), Ok(expected));

    // Forged: the payload altered under the original signature.
    let mut parts: Vec<String> = token.split('.').map(str::to_string).collect();
    let mut claims = claims_of(&token);
    claims["kubernetes.io"]["serviceaccount"]["name"] = json!("default");
    parts[1] = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).unwrap());
    assert_refused(&s, "forged payload", &parts.join("."));
    // Signed by another key.
    let rng = ring::rand::SystemRandom::new();
    let other =
        ring::signature::EcdsaKeyPair::generate_pkcs8(&ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    assert_refused(&s, "another key", &sign(other.as_ref(), &claims_of(&token)));
    // For another audience.
    let vault = ok(&s, &["create", "token", "robot", "--audience", "vault"]).trim().to_string();
    assert_refused(&s, "another audience", &vault);
    // Expired an hour ago (signed with the server's own key).
    let mut expired = claims_of(&token);
    let exp = expired["exp"].as_i64().unwrap();
    for k in ["exp", "iat", "nbf"] {
        expired[k] = json!(expired[k].as_i64().unwrap() - (exp - expired["iat"].as_i64().unwrap()) - 3600);
    }
    assert_refused(&s, "expired", &sign_with_server_key(&s.tls_dir(), &expired));
    // Unknown to every authenticator.
    assert_refused(&s, "garbage", "garbage");
    // Bound to a pod, then to a secret, that are deleted before first use.
    ok(&s, &["run", "web", "--image", "nginx", "--overrides", r#"{"spec":{"serviceAccountName":"robot"}}"#]);
    let pod_token = ok(&s, &["create", "token", "robot", "--bound-object-kind", "Pod", "--bound-object-name", "web"]);
    ok(&s, &["create", "secret", "generic", "bound", "--from-literal", "k=v"]);
    let secret_token =
        ok(&s, &["create", "token", "robot", "--bound-object-kind", "Secret", "--bound-object-name", "bound"]);
    ok(&s, &["delete", "pod", "web", "--wait"]);
    ok(&s, &["delete", "secret", "bound"]);
    assert_refused(&s, "bound to a deleted pod", pod_token.trim());
    assert_refused(&s, "bound to a deleted secret", secret_token.trim());

    // A WebSocket upgrade may carry the token as a subprotocol instead.
    let ws = format!(
        "GET /api HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: base64url.bearer.authorization.k8s.io.{}\r\n\r\n",
        URL_SAFE_NO_PAD.encode(&token)
    );
    let (status, body) = raw(&s, tls(&s.tls_dir(), None), ws.as_bytes()).unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""kind":"APIVersions""#), "{body}");

    // The 401 on the wire is upstream's Status, exactly.
    let (status, body) = get_anonymous(&s, "/api", &[("Authorization", "Bearer garbage")]);
    assert_eq!(status, 401);
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap(), unauthorized_status());

    // The account goes: its token stops working.
    ok(&s, &["delete", "serviceaccount", "robot"]);
    assert_refused(&s, "deleted account", &token);
}

#[test]
fn legacy_secret_tokens_and_bootstrap_tokens_authenticate() {
    let s = TestServer::start();
    let uid = service_account(&s, "default", "builder");
    // A legacy token, as the token controller signs it into the Secret.
    let claims = json!({
        "iss": "kubernetes/serviceaccount",
        "kubernetes.io/serviceaccount/namespace": "default",
        "kubernetes.io/serviceaccount/secret.name": "builder-token",
        "kubernetes.io/serviceaccount/service-account.name": "builder",
        "kubernetes.io/serviceaccount/service-account.uid": uid,
        "sub": "system:serviceaccount:default:builder",
    });
    let token = sign_with_server_key(&s.tls_dir(), &claims);
    // Not yet stored in a Secret: refused.
    assert_refused(&s, "legacy token without its secret", &token);
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
        "metadata": {"name": "builder-token", "namespace": "default",
            "annotations": {"kubernetes.io/service-account.name": "builder"}},
        "data": {"token": STANDARD.encode(&token)}});
    let r = request(
        &s,
        "POST",
        "/api/v1/namespaces/default/secrets",
        &[("Content-Type", "application/json")],
        secret.to_string().as_bytes(),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let kc = token_kubeconfig(&s, "builder", Some(&token));
    let user = whoami(&s, &kc, &[]).unwrap();
    assert_eq!(
        user,
        json!({"username": "system:serviceaccount:default:builder", "uid": uid,
            "groups": ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"]})
    );
    // Its use is recorded on the Secret, as the UTC date.
    let today = std::process::Command::new("date").args(["-u", "+%F"]).output().unwrap();
    let today = String::from_utf8_lossy(&today.stdout).trim().to_string();
    let mut last_used = String::new();
    for _ in 0..50 {
        last_used = ok(
            &s,
            &[
                "get",
                "secret",
                "builder-token",
                "-o",
                r"jsonpath={.metadata.labels.kubernetes\.io/legacy-token-last-used}",
            ],
        )
        .trim()
        .to_string();
        if last_used == today {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(last_used, today);
    // Once the account lists the Secret (an auto-generated token), each
    // use warns as upstream does.
    ok(&s, &["patch", "serviceaccount", "builder", "-p", r#"{"secrets":[{"name":"builder-token"}]}"#]);
    let out = s.kubectl_with(&kc, &["auth", "whoami"]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "Warning: Use tokens from the TokenRequest API or manually created secret-based tokens instead of \
         auto-generated secret-based tokens."
    );
    // The Secret goes: the token is refused.
    ok(&s, &["delete", "secret", "builder-token"]);
    assert_refused(&s, "legacy token after its secret", &token);

    // A bootstrap token (kubeadm's shape).
    let expiration = "2099-01-01T00:00:00Z";
    ok(
        &s,
        &[
            "create",
            "secret",
            "generic",
            "bootstrap-token-abcdef",
            "-n",
            "kube-system",
            "--type",
            "bootstrap.kubernetes.io/token",
            "--from-literal",
            "token-id=abcdef",
            "--from-literal",
            "token-secret=0123456789abcdef",
            "--from-literal",
            "usage-bootstrap-authentication=true",
            "--from-literal",
            "auth-extra-groups=system:bootstrappers:kubeadm:default-node-token",
            "--from-literal",
            &format!("expiration={expiration}"),
        ],
    );
    let kc = token_kubeconfig(&s, "bootstrap", Some("abcdef.0123456789abcdef"));
    assert_eq!(
        whoami(&s, &kc, &[]),
        Ok(json!({"username": "system:bootstrap:abcdef",
            "groups": ["system:bootstrappers", "system:bootstrappers:kubeadm:default-node-token", "system:authenticated"]}))
    );
    assert_refused(&s, "wrong bootstrap secret", "abcdef.0123456789abcdee");
    assert_refused(&s, "unknown bootstrap id", "zzzzzz.0123456789abcdef");
}

#[test]
fn static_token_file_users_and_anonymous_auth_false() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens.csv");
    std::fs::write(&file, "root-token,root,uid-root,system:masters\nview-token,viewer,uid-v,\"dev,ops\"\n").unwrap();
    let s = TestServer::start_with(TestServerOptions {
        extra_args: vec!["--token-auth-file".into(), file.display().to_string(), "--anonymous-auth=false".into()],
        ..Default::default()
    });
    let root = token_kubeconfig(&s, "root", Some("root-token"));
    assert_eq!(
        whoami(&s, &root, &[]),
        Ok(json!({"username": "root", "uid": "uid-root", "groups": ["system:masters", "system:authenticated"]}))
    );
    // A system:masters token user may do anything.
    let out = s.kubectl_with(&root, &["get", "namespace", "kube-system", "-o", "name"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "namespace/kube-system");
    let bare = token_kubeconfig(&s, "bare", None);
    assert_eq!(
        whoami(&s, &bare, &["--token", "view-token"]),
        Ok(json!({"username": "viewer", "uid": "uid-v", "groups": ["dev", "ops", "system:authenticated"]}))
    );
    assert_refused(&s, "unknown static token", "not-in-the-file");
    // TokenReview authenticates static tokens for the API audience only.
    let review = |token: &str, audiences: Value| {
        let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "spec": {"token": token, "audiences": audiences}});
        let r = request(
            &s,
            "POST",
            "/apis/authentication.k8s.io/v1/tokenreviews",
            &[("Content-Type", "application/json")],
            body.to_string().as_bytes(),
        );
        assert_eq!(r.status, 201, "{}", r.body);
        r.json()["status"].clone()
    };
    assert_eq!(
        review("view-token", json!([])),
        json!({"authenticated": true, "audiences": [ISSUER],
            "user": {"username": "viewer", "uid": "uid-v", "groups": ["dev", "ops", "system:authenticated"]}})
    );
    assert_eq!(review("view-token", json!(["vault"])), json!({"user": {}, "error": "invalid bearer token"}));

    // --anonymous-auth=false: no credentials is a 401, even for /healthz.
    for path in ["/healthz", "/version", "/api"] {
        let (status, body) = get_anonymous(&s, path, &[]);
        assert_eq!(status, 401, "{path}: {body}");
        assert_eq!(serde_json::from_str::<Value>(&body).unwrap(), unauthorized_status());
    }
    // (kubectl with no credentials would prompt for a user name on a 401.)
}

#[test]
fn a_bad_token_file_stops_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens.csv");
    std::fs::write(&file, "only-token,only-user\n").unwrap();
    let data = tempfile::tempdir().unwrap();
    let out = support::run_rkube(
        &[
            "server",
            "--data-dir",
            &data.path().display().to_string(),
            "--https-port",
            &support::free_port().to_string(),
            "--token-auth-file",
            &file.display().to_string(),
        ],
        Duration::from_secs(60),
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "token file '{}' must have at least 3 columns (token, user name, user uid), found 2",
            file.display()
        )),
        "{stderr}"
    );
}

#[test]
fn client_certificates_of_a_foreign_ca_or_expired_get_401() {
    let s = TestServer::start();
    let tls_dir = s.tls_dir();
    let whoami_path = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
    let body = br#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#;
    let json_ct = [("Content-Type", "application/json")];
    // A certificate of the cluster CA: its CN and O, and its SHA-256 as
    // the credential id.
    let read = |n: &str| std::fs::read_to_string(tls_dir.join(n)).unwrap();
    let cluster_ca = (read("ca.crt"), read("ca.key"));
    let carol = leaf(&cluster_ca, "carol", Some("team-a"), false);
    let digest = ring::digest::digest(&ring::digest::SHA256, &pem_der(&carol.0));
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    let r = request_with(&s, tls(&tls_dir, Some((&carol.0, &carol.1))), "POST", whoami_path, &json_ct, body);
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(
        r.json()["status"]["userInfo"],
        json!({"username": "carol", "groups": ["team-a", "system:authenticated"],
            "extra": {"authentication.kubernetes.io/credential-id": [format!("X509SHA256={hex}")]}})
    );

    // Another CA's certificate: the handshake completes, the request is 401.
    let foreign_ca = rcgen_ca();
    let foreign = leaf(&foreign_ca, "system:admin", Some("system:masters"), false);
    let r = request_with(&s, tls(&tls_dir, Some((&foreign.0, &foreign.1))), "POST", whoami_path, &json_ct, body);
    assert_eq!(r.status, 401, "{}", r.body);
    assert_eq!(r.json(), unauthorized_status());

    // The cluster CA's certificate, expired: 401.
    let expired = leaf(&cluster_ca, "system:admin", Some("system:masters"), true);
    let r = request_with(&s, tls(&tls_dir, Some((&expired.0, &expired.1))), "GET", "/api", &[], b"");
    assert_eq!(r.status, 401, "{}", r.body);

    // kubectl with the foreign certificate prints upstream's refusal.
    let kc = s.data_dir().join("foreign.kubeconfig");
    std::fs::write(
        &kc,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:{}\n    certificate-authority: {}\nusers:\n- name: u\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\ncurrent-context: c\n",
            s.port(),
            tls_dir.join("ca.crt").display(),
            STANDARD.encode(&foreign.0),
            STANDARD.encode(&foreign.1)
        ),
    )
    .unwrap();
    assert_eq!(whoami(&s, &kc, &[]), Err(KUBECTL_UNAUTHORIZED.to_string()));
}

/// A throwaway CA: (cert PEM, key PEM).
fn rcgen_ca() -> (String, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.distinguished_name.push(rcgen::DnType::CommonName, "foreign-ca");
    params.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign, rcgen::KeyUsagePurpose::DigitalSignature];
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), key.serialize_pem())
}

/// A client certificate for `cn` (in `o`) signed by `ca`, expired if asked.
fn leaf(ca: &(String, String), cn: &str, o: Option<&str>, expired: bool) -> (String, String) {
    let ca_key = rcgen::KeyPair::from_pem(&ca.1).unwrap();
    let issuer = rcgen::Issuer::from_ca_cert_pem(&ca.0, &ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name = rcgen::DistinguishedName::new();
    if let Some(o) = o {
        params.distinguished_name.push(rcgen::DnType::OrganizationName, o);
    }
    params.distinguished_name.push(rcgen::DnType::CommonName, cn);
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
    if expired {
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2021, 1, 1);
    }
    let cert = params.signed_by(&key, &issuer).unwrap();
    (cert.pem(), key.serialize_pem())
}

#[test]
fn impersonation_needs_the_impersonate_verb() {
    let s = TestServer::start();
    // The admin (system:masters) may impersonate anyone.
    let out = s.kubectl(&["--as", "alice", "auth", "whoami"]);
    let rows: Vec<Vec<String>> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect();
    assert_eq!(
        rows,
        vec![vec!["ATTRIBUTE", "VALUE"], vec!["Username", "alice"], vec!["Groups", "[system:authenticated]"]],
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let admin = s.kubeconfig();
    assert_eq!(
        whoami(&s, &admin, &["--as", "system:serviceaccount:ns1:robot"]),
        Ok(json!({"username": "system:serviceaccount:ns1:robot",
            "groups": ["system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"]}))
    );
    assert_eq!(
        whoami(&s, &admin, &["--as", "bob", "--as-group", "dev", "--as-uid", "u-9"]),
        Ok(json!({"username": "bob", "uid": "u-9", "groups": ["dev", "system:authenticated"]}))
    );

    // A user without the verb is refused with upstream's 403.
    let dave = support::user_tls_config(&s.tls_dir(), "dave", None).unwrap();
    let post = |headers: &[(&str, &str)]| {
        let mut all = vec![("Content-Type", "application/json")];
        all.extend_from_slice(headers);
        request_with(
            &s,
            dave.clone(),
            "POST",
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            &all,
            br#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#,
        )
    };
    let r = post(&[("Impersonate-User", "alice")]);
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(
        r.json()["message"],
        r#"users "alice" is forbidden: User "dave" cannot impersonate resource "users" in API group "" at the cluster scope"#
    );
    // Granted the verb on users named alice (RBAC), dave may act as alice,
    // but not as alice in system:masters.
    api_common::create(
        &s,
        "impersonator.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: impersonate-alice\nrules:\n- apiGroups: [\"\"]\n  resources: [users]\n  verbs: [impersonate]\n  resourceNames: [alice]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: dave-impersonates-alice\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: impersonate-alice\nsubjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: User\n  name: dave\n",
    );
    let mut granted = None;
    for _ in 0..50 {
        let r = post(&[("Impersonate-User", "alice")]);
        if r.status == 201 {
            granted = Some(r.json());
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let granted = granted.expect("the binding never took effect");
    assert_eq!(granted["status"]["userInfo"], json!({"username": "alice", "groups": ["system:authenticated"]}));
    let r = post(&[("Impersonate-User", "alice"), ("Impersonate-Group", "system:masters")]);
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(
        r.json()["message"],
        r#"groups "system:masters" is forbidden: User "dave" cannot impersonate resource "groups" in API group "" at the cluster scope"#
    );
    // Groups without a user: upstream's 500.
    let r = post(&[("Impersonate-Group", "dev")]);
    assert_eq!(r.status, 500, "{}", r.body);
    assert_eq!(
        r.json()["message"],
        "Internal error occurred: requested [{Group  dev    }] without impersonating a user"
    );
}

#[test]
fn malformed_credentials_and_headers_are_refused_and_the_server_stays_up() {
    let s = TestServer::start();
    let anon = || tls(&s.tls_dir(), None);
    // Not a bearer scheme, or an empty token: anonymous (403 on /api).
    for auth in ["Basic YWxhZGRpbjpvcGVuc2VzYW1l", "Bearer", "Bearer  x", "Negotiate"] {
        let (status, body) = get_anonymous(&s, "/api", &[("Authorization", auth)]);
        assert_eq!(status, 403, "{auth}: {body}");
    }
    // Tokens nobody issued, malformed JWTs, huge tokens: 401.
    // Headers up to Go's 1 MiB limit reach authentication, over HTTP/2 too.
    let huge = "A".repeat(32 * 1024);
    let larger = "B".repeat(200 * 1024);
    for token in ["a.b.c", "e30.e30.e30", "abcdef.0123456789abcdef", "..", huge.as_str(), larger.as_str()] {
        let (status, body) = get_anonymous(&s, "/api", &[("Authorization", &format!("Bearer {token}"))]);
        assert_eq!(status, 401, "{}: {body}", &token[..token.len().min(20)]);
    }
    // A token with bytes that are not UTF-8: 401.
    let req = b"GET /api HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer \xff\xfe\r\n\r\n";
    assert_eq!(raw(&s, anon(), req).unwrap().0, 401);
    // A WebSocket token that is not base64url: 401.
    let req = "GET /api HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: base64url.bearer.authorization.k8s.io.!!!\r\n\r\n";
    assert_eq!(raw(&s, anon(), req.as_bytes()).unwrap().0, 401);
    // Control characters in a header value: a 400 from the HTTP layer.
    let req = b"GET /api HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer a\x01b\r\n\r\n";
    assert_eq!(raw(&s, anon(), req).unwrap().0, 400);
    // A 1 MiB header still fits Go's limit (MaxHeaderBytes + 4096): 401.
    let header = |n: usize| {
        format!(
            "GET /api HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Big: {}\r\nAuthorization: Bearer x\r\n\r\n",
            "b".repeat(n)
        )
    };
    assert_eq!(raw(&s, anon(), header(1024 * 1024).as_bytes()).unwrap().0, 401);
    // A larger header block: 431, or, when the server closes while the
    // client is still sending, a reset that loses the answer — never a
    // served request.
    match raw(&s, anon(), header(2 * 1024 * 1024).as_bytes()) {
        Ok((status, _)) => assert_eq!(status, 431),
        Err(e) => assert!(e.contains("reset") || e.contains("Broken pipe"), "{e}"),
    }
    // The server still serves.
    assert_eq!(s.get("/readyz"), (200, "ok".to_string()));
    let out = s.kubectl(&["get", "namespace", "default", "-o", "name"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "namespace/default");
}
