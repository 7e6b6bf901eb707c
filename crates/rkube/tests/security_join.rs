//! Node join against the real `rkube server`: a test client plays the
//! joining node with the `rkube_controllers::join` library.
//!
//! `rkube token create` → anonymous CA discovery from `kube-public/cluster-info`
//! (JWS signed by the bootstrap signer, CA pinned by the join token's hash)
//! → bootstrap-token authentication → CSRs approved by csrapproving (kubelet
//! client; kube-proxy asked by a node) or an administrator (serving for an
//! unregistered node) and signed by
//! csrsigning → certificates the server accepts as `system:node:<name>`.
//! Forged requests are neither approved nor signed; expired tokens are
//! cleaned up. Expected texts are upstream's (kube-controller-manager 1.33).

mod support;

use std::time::{Duration, Instant};

use base64::Engine;
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestSpec};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::ByteString;
use kube::api::{Api, ObjectMeta, PostParams};
use rkube_controllers::bootstraptoken::{self, JoinToken};
use rkube_controllers::client::{self, ApiEndpoint, SharedToken};
use rkube_controllers::{csr, join};
use serde_json::Value;
use support::TestServer;

const WAIT: Duration = Duration::from_secs(30);

/// A server with its controller manager (the harness turns it off by default).
fn start() -> TestServer {
    TestServer::start_with(support::TestServerOptions { controllers: true, ..Default::default() })
}

fn endpoint(server: &TestServer) -> ApiEndpoint {
    ApiEndpoint {
        url: format!("https://127.0.0.1:{}", server.port()),
        ca_pem: std::fs::read_to_string(server.tls_dir().join("ca.crt")).unwrap(),
    }
}

fn admin(server: &TestServer) -> kube::Client {
    let dir = server.tls_dir();
    let cert = std::fs::read_to_string(dir.join("admin.crt")).unwrap();
    let key = std::fs::read_to_string(dir.join("admin.key")).unwrap();
    client::with_certificate(&endpoint(server), &cert, &key).unwrap()
}

fn token_create(server: &TestServer, extra: &[&str]) -> String {
    let kubeconfig = server.kubeconfig();
    let mut args = vec!["token", "create", "--kubeconfig", kubeconfig.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = support::run_rkube(&args, Duration::from_secs(30));
    assert!(out.status.success(), "rkube token create: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn kubectl_json(server: &TestServer, args: &[&str]) -> Value {
    let out = server.kubectl(args);
    assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The SHA-256 (hex) of the cluster CA certificate's DER, computed here
/// from `ca.crt` independently of the library.
fn ca_hash(server: &TestServer) -> String {
    let pem = std::fs::read_to_string(server.tls_dir().join("ca.crt")).unwrap();
    let b64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let der = base64::engine::general_purpose::STANDARD.decode(b64).unwrap();
    ring::digest::digest(&ring::digest::SHA256, &der).as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

async fn eventually<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "{what} did not happen within {WAIT:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn cluster_info(admin: &kube::Client) -> std::collections::BTreeMap<String, String> {
    match Api::<ConfigMap>::namespaced(admin.clone(), "kube-public").get("cluster-info").await {
        Ok(cm) => cm.data.unwrap_or_default(),
        Err(_) => Default::default(),
    }
}

/// Submits a CSR for `cn`/`orgs` with `signer` and `usages` as `client`; returns its name.
async fn submit(client: &kube::Client, cn: &str, orgs: &[&str], signer: &str, usages: &[&str]) -> String {
    let (pem, _) = csr::new_request(cn, orgs, &[]).unwrap();
    let obj = CertificateSigningRequest {
        metadata: ObjectMeta { generate_name: Some("csr-".into()), ..Default::default() },
        spec: CertificateSigningRequestSpec {
            request: ByteString(pem.into_bytes()),
            signer_name: signer.into(),
            usages: Some(usages.iter().map(|s| s.to_string()).collect()),
            ..Default::default()
        },
        ..Default::default()
    };
    let created = Api::<CertificateSigningRequest>::all(client.clone()).create(&PostParams::default(), &obj).await;
    created.unwrap_or_else(|e| panic!("create CSR {cn} for {signer}: {e}")).metadata.name.unwrap()
}

fn conditions(csr: &CertificateSigningRequest) -> Vec<(String, String, String)> {
    csr.status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|c| (c.type_, c.reason.unwrap_or_default(), c.message.unwrap_or_default()))
        .collect()
}

async fn get_csr(admin: &kube::Client, name: &str) -> CertificateSigningRequest {
    Api::<CertificateSigningRequest>::all(admin.clone()).get(name).await.unwrap()
}

async fn who_am_i(client: &kube::Client) -> (String, Vec<String>) {
    let review = Api::<SelfSubjectReview>::all(client.clone())
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .unwrap();
    let user = review.status.unwrap().user_info.unwrap();
    (user.username.unwrap_or_default(), user.groups.unwrap_or_default())
}

/// Waits for a pending CSR with `signer` and approves it with kubectl, as an administrator would.
async fn approve_pending(server: &TestServer, admin: &kube::Client, signer: &str) -> String {
    let name = eventually(&format!("a pending {signer} CSR"), || async {
        let list = Api::<CertificateSigningRequest>::all(admin.clone()).list(&Default::default()).await.ok()?;
        list.items
            .into_iter()
            .find(|c| c.spec.signer_name == signer && conditions(c).is_empty())
            .and_then(|c| c.metadata.name)
    })
    .await;
    let out = server.kubectl(&["certificate", "approve", &name]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    name
}

#[test]
fn token_create_prints_a_join_token_pinning_the_ca_and_stores_kubeadms_secret() {
    let server = start();
    let line = token_create(&server, &["--ttl", "1h", "--description", "join test"]);
    assert!(line.starts_with("K10"), "{line}");
    let jt = JoinToken::parse(&line).unwrap();
    assert_eq!(jt.ca_hash, ca_hash(&server));
    assert_eq!(line, format!("K10{}::{}.{}", ca_hash(&server), jt.token.id, jt.token.secret));

    let secret = kubectl_json(
        &server,
        &["-n", "kube-system", "get", "secret", &format!("bootstrap-token-{}", jt.token.id), "-o", "json"],
    );
    assert_eq!(secret["type"], "bootstrap.kubernetes.io/token");
    let data = |k: &str| {
        let v = secret["data"][k].as_str().unwrap_or_else(|| panic!("no {k} in {secret}"));
        String::from_utf8(base64::engine::general_purpose::STANDARD.decode(v).unwrap()).unwrap()
    };
    assert_eq!(data("token-id"), jt.token.id);
    assert_eq!(data("token-secret"), jt.token.secret);
    assert_eq!(data("usage-bootstrap-authentication"), "true");
    assert_eq!(data("usage-bootstrap-signing"), "true");
    assert_eq!(data("auth-extra-groups"), "system:bootstrappers:kubeadm:default-node-token");
    assert_eq!(data("description"), "join test");
    let expires: k8s_openapi::jiff::Timestamp = data("expiration").parse().unwrap();
    let left = (expires - k8s_openapi::jiff::Timestamp::now()).get_seconds();
    assert!((3500..=3600).contains(&left), "expires in {left}s");

    // --ttl 0: a token that never expires.
    let forever = JoinToken::parse(&token_create(&server, &["--ttl", "0"])).unwrap();
    let secret = kubectl_json(
        &server,
        &["-n", "kube-system", "get", "secret", &format!("bootstrap-token-{}", forever.token.id), "-o", "json"],
    );
    assert!(secret["data"].get("expiration").is_none(), "{secret}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_joining_node_discovers_the_ca_and_gets_certificates_the_server_accepts_as_the_node() {
    let server = start();
    let admin = admin(&server);
    let jt = JoinToken::parse(&token_create(&server, &[])).unwrap();
    let url = endpoint(&server).url;

    // The bootstrap signer signs cluster-info with the new token.
    let key = format!("jws-kubeconfig-{}", jt.token.id);
    eventually("cluster-info signed with the new token", || async { cluster_info(&admin).await.get(&key).cloned() })
        .await;

    // CA discovery: anonymous, untrusted, then pinned and verified.
    let info = join::discover(&url, &jt).await.unwrap_or_else(|e| panic!("discovery: {e}\n{}", server.logs()));
    assert_eq!(info.ca_pem, endpoint(&server).ca_pem);
    assert_eq!(info.server, format!("https://127.0.0.1:{}", server.port()));

    // The bootstrap token authenticates as system:bootstrap:<id>.
    let bootstrap = join::bootstrap_client(&url, &info, &jt).unwrap();
    let (user, groups) = who_am_i(&bootstrap).await;
    assert_eq!(user, format!("system:bootstrap:{}", jt.token.id));
    assert!(groups.contains(&"system:bootstrappers".to_string()), "{groups:?}");

    // Kubelet client certificate: auto-approved (nodeclient) and signed.
    let kubelet = join::request_certificate(&bootstrap, &join::kubelet_client_request("node-1"), WAIT)
        .await
        .unwrap_or_else(|e| panic!("kubelet client certificate: {e}\n{}", server.logs()));
    let approved = get_csr(&admin, &kubelet.csr_name).await;
    assert_eq!(approved.spec.username.as_deref(), Some(user.as_str()));
    assert!(conditions(&approved).contains(&(
        "Approved".into(),
        "AutoApproved".into(),
        "Auto approving kubelet client certificate after SubjectAccessReview.".into()
    )));
    // Default lifetime: the signer's one year (less five minutes of backdating slack).
    let lifetime = kubelet.not_after - kubelet.not_before;
    assert!((365 * 86400..=365 * 86400 + 600).contains(&lifetime), "{lifetime}");

    // The server accepts it as the node.
    let endpoint = ApiEndpoint { url: url.clone(), ca_pem: info.ca_pem.clone() };
    let node = client::with_certificate(&endpoint, &kubelet.cert_pem, &kubelet.key_pem).unwrap();
    let (user, groups) = who_am_i(&node).await;
    assert_eq!(user, "system:node:node-1");
    assert_eq!(groups, ["system:nodes", "system:authenticated"]);

    // Serving certificate: requested by the node, approved by an administrator.
    let sans = vec!["node-1".to_string(), "10.0.0.21".to_string()];
    let serving_req = join::kubelet_serving_request("node-1", &sans);
    let node2 = node.clone();
    let serving = tokio::spawn(async move { join::request_certificate(&node2, &serving_req, WAIT).await });
    approve_pending(&server, &admin, "kubernetes.io/kubelet-serving").await;
    let serving = serving.await.unwrap().unwrap_or_else(|e| panic!("serving certificate: {e}"));
    let der = rkube_controllers::pem::certificate_der(&serving.cert_pem).unwrap();
    let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
    assert!(cert.extended_key_usage().unwrap().unwrap().value.server_auth);
    assert_eq!(cert.subject_alternative_name().unwrap().unwrap().value.general_names.len(), 2);

    // kube-proxy: kube-apiserver-client signer; requested by a node, csrapproving
    // approves it (rkube's k3s-like deviation: agents run kube-proxy as system:kube-proxy).
    let proxy = join::request_certificate(&node, &join::kube_proxy_request(), WAIT)
        .await
        .unwrap_or_else(|e| panic!("kube-proxy certificate: {e}"));
    assert!(conditions(&get_csr(&admin, &proxy.csr_name).await).contains(&(
        "Approved".into(),
        "AutoApproved".into(),
        "Auto approving kube-proxy client certificate requested by a node.".into()
    )));
    let proxy_client = client::with_certificate(&endpoint, &proxy.cert_pem, &proxy.key_pem).unwrap();
    assert_eq!(who_am_i(&proxy_client).await.0, "system:kube-proxy");

    // Rotation: the node renews its own client certificate (selfnodeclient), shorter-lived on request.
    let mut renewal = join::kubelet_client_request("node-1");
    renewal.expiration_seconds = Some(3600);
    let renewed = join::request_certificate(&node, &renewal, WAIT).await.unwrap();
    assert!(conditions(&get_csr(&admin, &renewed.csr_name).await).contains(&(
        "Approved".into(),
        "AutoApproved".into(),
        "Auto approving self kubelet client certificate after SubjectAccessReview.".into()
    )));
    assert!((3600..=3600 + 300).contains(&(renewed.not_after - renewed.not_before)));
    let due = join::rotation_deadline(renewed.not_before, renewed.not_after, 0.0);
    let seventy_percent = renewed.not_before + (renewed.not_after - renewed.not_before) * 7 / 10;
    assert!((due - seventy_percent).abs() <= 1, "{due} vs {seventy_percent}");
}

#[tokio::test(flavor = "multi_thread")]
async fn discovery_refuses_a_join_token_pinning_another_ca_or_an_unknown_token() {
    let server = start();
    let admin = admin(&server);
    let jt = JoinToken::parse(&token_create(&server, &[])).unwrap();
    let key = format!("jws-kubeconfig-{}", jt.token.id);
    eventually("cluster-info signed", || async { cluster_info(&admin).await.get(&key).cloned() }).await;
    let url = endpoint(&server).url;

    let mut other_ca = jt.clone();
    other_ca.ca_hash = "0".repeat(64);
    let err = join::discover(&url, &other_ca).await.unwrap_err().to_string();
    assert!(err.starts_with("cluster CA found in cluster-info ConfigMap is invalid"), "{err}");

    let mut wrong_secret = jt.clone();
    wrong_secret.token.secret = "0123456789abcdef".into();
    let err = join::discover(&url, &wrong_secret).await.unwrap_err().to_string();
    assert_eq!(err, "failed to verify JWS signature of received cluster info object, can't trust this API Server");

    let unknown = JoinToken { ca_hash: jt.ca_hash.clone(), token: bootstraptoken::BootstrapToken::generate() };
    let err = join::discover(&url, &unknown).await.unwrap_err().to_string();
    assert!(err.starts_with("there is no JWS signed token in the cluster-info ConfigMap"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn forged_csrs_from_a_bootstrap_token_are_neither_approved_nor_signed() {
    let server = start();
    let admin = admin(&server);
    let jt = JoinToken::parse(&token_create(&server, &[])).unwrap();
    let bootstrap = client::with_token(&endpoint(&server), SharedToken::new(jt.token.to_string())).unwrap();
    let kubelet = csr::KUBELET_CLIENT_SIGNER;

    // Another node's name with server usages; a node name under the generic
    // client signer; a kubelet request claiming system:masters.
    let wrong_usages =
        submit(&bootstrap, "system:node:other", &["system:nodes"], kubelet, &["digital signature", "server auth"])
            .await;
    let other_signer = submit(
        &bootstrap,
        "system:node:other",
        &["system:nodes"],
        csr::KUBE_APISERVER_CLIENT_SIGNER,
        &["digital signature", "client auth"],
    )
    .await;
    let masters =
        submit(&bootstrap, "system:node:other", &["system:masters"], kubelet, &["digital signature", "client auth"])
            .await;
    // A genuine request after them: once it is signed, the approver has seen the others.
    let genuine =
        submit(&bootstrap, "system:node:n1", &["system:nodes"], kubelet, &["digital signature", "client auth"]).await;
    eventually("the genuine CSR signed", || async {
        get_csr(&admin, &genuine).await.status.and_then(|s| s.certificate).filter(|c| !c.0.is_empty())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    for name in [&wrong_usages, &other_signer, &masters] {
        let c = get_csr(&admin, name).await;
        assert!(conditions(&c).is_empty(), "{name}: {:?}", conditions(&c));
        assert!(c.status.and_then(|s| s.certificate).is_none(), "{name} was signed");
    }

    // Even when an administrator approves them, the signer refuses content
    // that breaks the signer's rules.
    for name in [&wrong_usages, &masters] {
        let out = server.kubectl(&["certificate", "approve", name]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    for (name, message) in [
        (&wrong_usages, "usages did not match [client auth digital signature key encipherment]"),
        (&masters, "subject organization is not system:nodes"),
    ] {
        let c = eventually(&format!("{name} failed"), || async {
            let c = get_csr(&admin, name).await;
            conditions(&c).iter().any(|(t, _, _)| t == "Failed").then_some(c)
        })
        .await;
        assert!(conditions(&c).contains(&("Failed".into(), "SignerValidationFailure".into(), message.into())));
        assert!(c.status.and_then(|s| s.certificate).is_none(), "{name} was signed");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_bootstrap_token_is_deleted_and_its_signature_removed() {
    let server = start();
    let admin = admin(&server);
    let token = bootstraptoken::create(&admin, Some(Duration::from_secs(4)), None).await.unwrap();
    let key = format!("jws-kubeconfig-{}", token.id);
    eventually("cluster-info signed", || async { cluster_info(&admin).await.get(&key).cloned() }).await;
    let secrets = Api::<k8s_openapi::api::core::v1::Secret>::namespaced(admin.clone(), "kube-system");
    let name = format!("bootstrap-token-{}", token.id);
    eventually("the expired token deleted", || async { secrets.get(&name).await.is_err().then_some(()) }).await;
    eventually("its signature removed", || async { (!cluster_info(&admin).await.contains_key(&key)).then_some(()) })
        .await;
}

/// Approves (or denies) `name` as `client` through the approval subresource.
async fn set_approval(client: &kube::Client, csr: &CertificateSigningRequest) -> Result<(), kube::Error> {
    let mut csr = csr.clone();
    let status = csr.status.get_or_insert_with(Default::default);
    status.conditions.get_or_insert_with(Vec::new).push(
        k8s_openapi::api::certificates::v1::CertificateSigningRequestCondition {
            type_: "Approved".into(),
            status: "True".into(),
            reason: Some("TestApproval".into()),
            ..Default::default()
        },
    );
    let name = csr.metadata.name.clone().unwrap();
    Api::<CertificateSigningRequest>::all(client.clone())
        .replace_subresource::<CertificateSigningRequest>("approval", &name, &PostParams::default(), &csr)
        .await
        .map(|_| ())
}

fn status_message(e: kube::Error) -> (u16, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.message),
        other => panic!("not an API error: {other}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_csr_names_its_real_requester_and_approval_needs_the_approve_verb_on_the_signer() {
    let server = start();
    let admin = admin(&server);
    let jt = JoinToken::parse(&token_create(&server, &[])).unwrap();
    let bootstrap = client::with_token(&endpoint(&server), SharedToken::new(jt.token.to_string())).unwrap();

    // A requester that claims to be someone else is recorded as who it is.
    let (pem, _) = csr::new_request("system:node:victim", &["system:nodes"], &[]).unwrap();
    let forged = CertificateSigningRequest {
        metadata: ObjectMeta { name: Some("claims-a-node".into()), ..Default::default() },
        spec: CertificateSigningRequestSpec {
            request: ByteString(pem.into_bytes()),
            signer_name: csr::KUBELET_SERVING_SIGNER.into(),
            usages: Some(vec!["digital signature".into(), "server auth".into()]),
            username: Some("system:node:victim".into()),
            groups: Some(vec!["system:masters".into(), "system:nodes".into()]),
            ..Default::default()
        },
        ..Default::default()
    };
    let stored =
        Api::<CertificateSigningRequest>::all(bootstrap.clone()).create(&PostParams::default(), &forged).await.unwrap();
    assert_eq!(stored.spec.username, Some(format!("system:bootstrap:{}", jt.token.id)));
    let groups = stored.spec.groups.unwrap_or_default();
    assert!(groups.contains(&"system:bootstrappers".to_string()), "{groups:?}");
    assert!(!groups.iter().any(|g| g == "system:masters" || g == "system:nodes"), "{groups:?}");

    // CertificateSubjectRestriction: no system:masters through the generic client signer.
    let (pem, _) = csr::new_request("mallory", &["system:masters"], &[]).unwrap();
    let masters = CertificateSigningRequest {
        metadata: ObjectMeta { name: Some("wants-masters".into()), ..Default::default() },
        spec: CertificateSigningRequestSpec {
            request: ByteString(pem.into_bytes()),
            signer_name: csr::KUBE_APISERVER_CLIENT_SIGNER.into(),
            usages: Some(vec!["digital signature".into(), "client auth".into()]),
            ..Default::default()
        },
        ..Default::default()
    };
    let err = Api::<CertificateSigningRequest>::all(admin.clone())
        .create(&PostParams::default(), &masters)
        .await
        .unwrap_err();
    assert_eq!(
        status_message(err),
        (
            403,
            "certificatesigningrequests.certificates.k8s.io \"wants-masters\" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"
                .into()
        )
    );

    // CertificateApproval: updating /approval is not enough, the signer's approve verb is needed.
    let manifest = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: csr-approval-only
rules:
- apiGroups: ["certificates.k8s.io"]
  resources: ["certificatesigningrequests", "certificatesigningrequests/approval"]
  verbs: ["get", "update"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: csr-approval-only
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: csr-approval-only}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}
"#;
    let path = server.data_dir().join("approver.yaml");
    std::fs::write(&path, manifest).unwrap();
    let out = server.kubectl(&["apply", "-f", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let tls = server.tls_dir();
    let ca = csr::SigningCa::from_pem(
        &std::fs::read_to_string(tls.join("ca.crt")).unwrap(),
        &std::fs::read_to_string(tls.join("ca.key")).unwrap(),
    )
    .unwrap();
    let (cert, key) = ca.issue_client_certificate("carol", &[], Duration::from_secs(3600)).unwrap();
    let carol = client::with_certificate(&endpoint(&server), &cert, &key).unwrap();
    let pending = get_csr(&admin, "claims-a-node").await;
    let err = set_approval(&carol, &pending).await.unwrap_err();
    assert_eq!(
        status_message(err),
        (
            403,
            "certificatesigningrequests.certificates.k8s.io \"claims-a-node\" is forbidden: user not permitted to approve requests with signerName \"kubernetes.io/kubelet-serving\""
                .into()
        )
    );
    assert!(conditions(&get_csr(&admin, "claims-a-node").await).is_empty());
    let grant = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: csr-approval-only
rules:
- apiGroups: ["certificates.k8s.io"]
  resources: ["certificatesigningrequests", "certificatesigningrequests/approval"]
  verbs: ["get", "update"]
- apiGroups: ["certificates.k8s.io"]
  resources: ["signers"]
  resourceNames: ["kubernetes.io/*"]
  verbs: ["approve"]
"#;
    std::fs::write(&path, grant).unwrap();
    let out = server.kubectl(&["apply", "-f", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    set_approval(&carol, &get_csr(&admin, "claims-a-node").await).await.unwrap();
    assert!(conditions(&get_csr(&admin, "claims-a-node").await)
        .iter()
        .any(|(t, r, _)| t == "Approved" && r == "TestApproval"));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_kubelet_client_certificate_is_rotated_before_it_expires() {
    // Certificates of 20 s: rotation is due after 14–18 s.
    let server = TestServer::start_with(support::TestServerOptions {
        extra_args: vec!["--cluster-signing-duration".into(), "20s".into()],
        controllers: true,
        ..Default::default()
    });
    let admin = admin(&server);
    let jt = JoinToken::parse(&token_create(&server, &[])).unwrap();
    let key = format!("jws-kubeconfig-{}", jt.token.id);
    eventually("cluster-info signed", || async { cluster_info(&admin).await.get(&key).cloned() }).await;
    let url = endpoint(&server).url;
    let info = join::discover(&url, &jt).await.unwrap();
    let bootstrap = join::bootstrap_client(&url, &info, &jt).unwrap();
    let req = join::kubelet_client_request("node-r");
    let first = join::request_certificate(&bootstrap, &req, WAIT).await.unwrap();
    assert!((20..=21).contains(&(first.not_after - first.not_before)), "{first:?}");

    let endpoint = ApiEndpoint { url, ca_pem: info.ca_pem };
    let mut rotated = join::spawn_rotation(endpoint.clone(), req, first.clone(), None, WAIT);
    tokio::time::timeout(Duration::from_secs(25), rotated.changed()).await.expect("rotated within 25 s").unwrap();
    let second = rotated.borrow().clone();
    assert_ne!(second.csr_name, first.csr_name);
    let now = k8s_openapi::jiff::Timestamp::now().as_second();
    assert!(now < first.not_after, "rotated only after expiry");
    assert!(now - first.not_before >= 14 - 1, "rotated too early: {}s into {:?}", now - first.not_before, first);
    // The renewal was the node's own (selfnodeclient) and the new certificate is the node.
    assert!(conditions(&get_csr(&admin, &second.csr_name).await)
        .iter()
        .any(|(t, r, m)| t == "Approved" && r == "AutoApproved" && m.starts_with("Auto approving self kubelet")));
    let node = client::with_certificate(&endpoint, &second.cert_pem, &second.key_pem).unwrap();
    assert_eq!(who_am_i(&node).await.0, "system:node:node-r");
}

/// Conformance "CertificateSigningRequest API" (the approval and status
/// subresources: get, update, patch): approval conditions go through
/// `/approval`; `/status` keeps them and may add others.
#[tokio::test(flavor = "multi_thread")]
async fn csr_approval_and_status_subresources_support_get_update_and_patch() {
    let server = start();
    let admin = admin(&server);
    let api = Api::<CertificateSigningRequest>::all(admin.clone());
    let (pem, _) = csr::new_request("e2e-user", &[], &[]).unwrap();
    let obj = CertificateSigningRequest {
        metadata: ObjectMeta { name: Some("e2e-csr".into()), ..Default::default() },
        spec: CertificateSigningRequestSpec {
            request: ByteString(pem.into_bytes()),
            // A signer no controller handles: nothing but this test touches the CSR.
            signer_name: "example.com/e2e".into(),
            usages: Some(vec!["digital signature".into(), "client auth".into()]),
            ..Default::default()
        },
        ..Default::default()
    };
    api.create(&PostParams::default(), &obj).await.unwrap();
    let got: CertificateSigningRequest = api.get_subresource("approval", "e2e-csr").await.unwrap();
    assert_eq!(got.metadata.name.as_deref(), Some("e2e-csr"));

    // Approve through PATCH /approval.
    let patch = serde_json::json!({"status": {"conditions": [
        {"type": "Approved", "status": "True", "reason": "E2E", "message": "approved by the test"}
    ]}});
    let patched = api
        .patch_subresource("approval", "e2e-csr", &kube::api::PatchParams::default(), &kube::api::Patch::Merge(&patch))
        .await
        .unwrap();
    assert_eq!(conditions(&patched), [("Approved".into(), "E2E".into(), "approved by the test".into())]);

    // A status update may add a condition but not drop the approval.
    let mut status = api.get_status("e2e-csr").await.unwrap();
    status.status.as_mut().unwrap().conditions =
        Some(vec![k8s_openapi::api::certificates::v1::CertificateSigningRequestCondition {
            type_: "E2EStatus".into(),
            status: "True".into(),
            reason: Some("Test".into()),
            ..Default::default()
        }]);
    let updated = api.replace_status("e2e-csr", &PostParams::default(), &status).await.unwrap();
    let types: Vec<String> = conditions(&updated).into_iter().map(|(t, _, _)| t).collect();
    assert_eq!(types, ["Approved", "E2EStatus"]);

    // PUT /approval may not change the certificate.
    let mut approval = api.get_subresource("approval", "e2e-csr").await.unwrap();
    approval.status.as_mut().unwrap().certificate = Some(ByteString(b"not through approval".to_vec()));
    let after = api
        .replace_subresource::<CertificateSigningRequest>("approval", "e2e-csr", &PostParams::default(), &approval)
        .await
        .unwrap();
    assert!(after.status.unwrap().certificate.is_none());
}
