//! Node join, the joining side (kubeadm's token discovery plus kubelet's
//! TLS bootstrap and certificate rotation), as a library the node agent
//! uses:
//!
//! 1. [`discover`]: download `kube-public/cluster-info` anonymously
//!    WITHOUT trusting the server, check the `jws-kubeconfig-<id>`
//!    signature with the bootstrap token (proves the server knows the
//!    token), check the CA it names against the join token's hash (pins the
//!    CA), then fetch it again over TLS verified by that CA and require the
//!    same content.
//! 2. [`request_certificate`] with the bootstrap token: a CSR for the
//!    kubelet client certificate ([`kubelet_client_request`], signer
//!    `kubernetes.io/kube-apiserver-client-kubelet`), which csrapproving
//!    approves for `system:bootstrappers` and csrsigning signs.
//! 3. With that certificate (as `system:node:<name>`): the kubelet serving
//!    certificate ([`kubelet_serving_request`]) and the kube-proxy client
//!    certificate ([`kube_proxy_request`]). Both are auto-approved by
//!    rkube's csrapproving (k3s-like; upstream leaves them to an
//!    administrator): the serving one when it names only the registered
//!    Node's own names and addresses, the kube-proxy one when a node asks
//!    for exactly `system:kube-proxy`. [`request_certificate`] waits.
//! 4. [`rotation_deadline`] / [`rotate_when_due`] / [`spawn_rotation`]: a
//!    new certificate is requested once 70–90% (random) of the current
//!    one's lifetime has passed, as kubelet's certificate manager does.
//!
//! The join token is `K10<sha256 hex of the CA certificate DER>::<id>.<secret>`
//! (see [`crate::bootstraptoken::JoinToken`]).

use std::time::Duration;

use base64::Engine;
use k8s_openapi::api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestSpec};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::ByteString;
use kube::api::{Api, ObjectMeta, PostParams};

use crate::bootstraptoken::{self as bt, JoinToken};
use crate::client::{self, ApiEndpoint, SharedToken};
use crate::csr;

/// Why a join step failed.
#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    /// The server could not be reached or answered with an error.
    #[error("{context}: {source}")]
    Api {
        /// What was being done.
        context: &'static str,
        /// The client's error.
        source: kube::Error,
    },
    /// What the server sent cannot be trusted or used.
    #[error("{0}")]
    Untrusted(String),
    /// The CSR was denied or failed.
    #[error("certificate signing request {name} was {outcome}: {message}")]
    Refused {
        /// The CSR's name.
        name: String,
        /// `denied` or `failed`.
        outcome: String,
        /// The condition's message (or reason).
        message: String,
    },
    /// No certificate within the wait.
    #[error("timed out after {0:?} waiting for certificate signing request {1} to be approved and signed")]
    Timeout(Duration, String),
    /// Local failure (key generation, client setup).
    #[error("{0}")]
    Local(String),
}

/// What discovery established.
#[derive(Clone, Debug)]
pub struct ClusterInfo {
    /// The cluster CA (PEM), verified against the join token's hash.
    pub ca_pem: String,
    /// The server URL `cluster-info` names.
    pub server: String,
}

/// The `certificate-authority-data` (decoded) and `server` of a
/// kubeconfig's first cluster (the layout `cluster-info` uses).
pub fn parse_cluster_kubeconfig(kubeconfig: &str) -> Option<(String, String)> {
    let value = |key: &str| {
        kubeconfig.lines().find_map(|l| l.trim().strip_prefix(key).map(|v| v.trim().trim_matches('"').to_string()))
    };
    let ca = base64::engine::general_purpose::STANDARD.decode(value("certificate-authority-data:")?).ok()?;
    Some((String::from_utf8(ca).ok()?, value("server:")?))
}

/// Checks a `cluster-info` ConfigMap's data against the join token: the
/// token's signature over `kubeconfig` must verify and the CA must hash to
/// the pinned value. Messages follow kubeadm's.
pub fn verify_cluster_info(
    data: &std::collections::BTreeMap<String, String>,
    join: &JoinToken,
) -> Result<ClusterInfo, JoinError> {
    let kubeconfig = data
        .get(bt::KUBECONFIG_KEY)
        .ok_or_else(|| JoinError::Untrusted("there is no kubeconfig in the cluster-info ConfigMap".into()))?;
    let jws = data.get(&format!("{}{}", bt::JWS_KEY_PREFIX, join.token.id)).ok_or_else(|| {
        JoinError::Untrusted(format!(
            "there is no JWS signed token in the cluster-info ConfigMap. This token id {:?} is invalid for this cluster, or it has expired. Use \"rkube token create\" on the server to create a new valid token",
            join.token.id
        ))
    })?;
    if !bt::verify_detached_signature(jws, kubeconfig, &join.token) {
        return Err(JoinError::Untrusted(
            "failed to verify JWS signature of received cluster info object, can't trust this API Server".into(),
        ));
    }
    let (ca_pem, server) = parse_cluster_kubeconfig(kubeconfig)
        .ok_or_else(|| JoinError::Untrusted("the cluster-info kubeconfig has no cluster CA or server".into()))?;
    let der = crate::pem::certificate_der(&ca_pem)
        .ok_or_else(|| JoinError::Untrusted("the cluster CA in cluster-info is not a PEM certificate".into()))?;
    let got = bt::ca_der_hash(&der);
    if got != join.ca_hash {
        return Err(JoinError::Untrusted(format!(
            "cluster CA found in cluster-info ConfigMap is invalid: its hash {got} is not the pinned {}",
            join.ca_hash
        )));
    }
    Ok(ClusterInfo { ca_pem, server })
}

/// CA discovery against the server at `url` (`https://host:port`).
pub async fn discover(url: &str, join: &JoinToken) -> Result<ClusterInfo, JoinError> {
    let insecure = client::anonymous_unverified(url).map_err(|e| JoinError::Local(e.to_string()))?;
    let data = fetch_cluster_info(insecure).await?;
    let info = verify_cluster_info(&data, join)?;
    // Now that the CA is pinned: the same object over a verified connection.
    let endpoint = ApiEndpoint { url: url.into(), ca_pem: info.ca_pem.clone() };
    let verified = client::anonymous(&endpoint).map_err(|e| JoinError::Local(e.to_string()))?;
    let again = fetch_cluster_info(verified).await?;
    if again.get(bt::KUBECONFIG_KEY) != data.get(bt::KUBECONFIG_KEY) {
        return Err(JoinError::Untrusted("cluster-info changed between the insecure and the verified read".into()));
    }
    Ok(info)
}

/// How [`verify_cluster_info`] says `cluster-info` has no signature for
/// the token (yet).
pub const NO_SIGNATURE: &str = "there is no JWS signed token";

/// Whether `e` is a transport failure (worth retrying) rather than an
/// answer of the server.
pub fn unreachable(e: &JoinError) -> bool {
    matches!(e, JoinError::Api { source, .. } if !matches!(source, kube::Error::Api(_)))
}

/// [`discover`], retrying (every 2 s) a server that cannot be reached for
/// up to `unreachable_for`, and (every 1 s) a `cluster-info` not yet signed
/// with the token — the bootstrap signer signs a new token within seconds,
/// and kubeadm retries too — for up to `unsigned_for`. Other failures
/// return at once.
pub async fn discover_retrying(
    url: &str,
    join: &JoinToken,
    unreachable_for: Duration,
    unsigned_for: Duration,
) -> Result<ClusterInfo, JoinError> {
    let started = tokio::time::Instant::now();
    loop {
        match discover(url, join).await {
            Ok(info) => return Ok(info),
            Err(e) if unreachable(&e) && started.elapsed() < unreachable_for => {
                tracing::warn!(component = "join", server = url, error = %e, "cannot reach the server yet; retrying");
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
            Err(JoinError::Untrusted(m)) if m.starts_with(NO_SIGNATURE) && started.elapsed() < unsigned_for => {
                tracing::info!(component = "join", "cluster-info is not signed with this token yet; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// `GET path` (a non-resource URL, e.g. rkube's
/// `/rkube/v1/bootstrap/control-plane`) with `client`, the body as text.
/// Errors: [`JoinError::Api`] with the server's `Status` (403 when the
/// client may not read it) or the transport failure.
pub async fn get_non_resource(client: &kube::Client, path: &str) -> Result<String, JoinError> {
    let req = http::Request::get(path)
        .body(Vec::new())
        .map_err(|e| JoinError::Local(format!("cannot build the request for {path}: {e}")))?;
    client
        .request_text(req)
        .await
        .map_err(|source| JoinError::Api { context: "cannot read the control-plane bootstrap bundle", source })
}

async fn fetch_cluster_info(client: kube::Client) -> Result<std::collections::BTreeMap<String, String>, JoinError> {
    let cm = Api::<ConfigMap>::namespaced(client, bt::CLUSTER_INFO_NAMESPACE)
        .get(bt::CLUSTER_INFO)
        .await
        .map_err(|source| JoinError::Api { context: "cannot read kube-public/cluster-info", source })?;
    Ok(cm.data.unwrap_or_default())
}

/// A client authenticating with the bootstrap token (user
/// `system:bootstrap:<id>`, group `system:bootstrappers`).
pub fn bootstrap_client(url: &str, info: &ClusterInfo, join: &JoinToken) -> Result<kube::Client, JoinError> {
    let endpoint = ApiEndpoint { url: url.into(), ca_pem: info.ca_pem.clone() };
    client::with_token(&endpoint, SharedToken::new(join.token.to_string())).map_err(|e| JoinError::Local(e.to_string()))
}

/// What to ask a signer for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertificateRequest {
    /// `spec.signerName`.
    pub signer: String,
    /// Subject CN.
    pub common_name: String,
    /// Subject O.
    pub organizations: Vec<String>,
    /// SANs: DNS names or IP addresses.
    pub sans: Vec<String>,
    /// `spec.usages`.
    pub usages: Vec<String>,
    /// `spec.expirationSeconds` (none: the signer's default, 1 year).
    pub expiration_seconds: Option<i32>,
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The kubelet client certificate of node `node` (ECDSA key, so no key encipherment).
pub fn kubelet_client_request(node: &str) -> CertificateRequest {
    CertificateRequest {
        signer: csr::KUBELET_CLIENT_SIGNER.into(),
        common_name: format!("{}{node}", csr::NODE_USER_PREFIX),
        organizations: strings(&[csr::NODES_GROUP]),
        sans: Vec::new(),
        usages: strings(&["digital signature", "client auth"]),
        expiration_seconds: None,
    }
}

/// The kubelet serving certificate of node `node` for its host names and addresses.
pub fn kubelet_serving_request(node: &str, sans: &[String]) -> CertificateRequest {
    CertificateRequest {
        signer: csr::KUBELET_SERVING_SIGNER.into(),
        common_name: format!("{}{node}", csr::NODE_USER_PREFIX),
        organizations: strings(&[csr::NODES_GROUP]),
        sans: sans.to_vec(),
        usages: strings(&["digital signature", "server auth"]),
        expiration_seconds: None,
    }
}

/// The kube-proxy client certificate (`system:kube-proxy`, bound to
/// `system:node-proxier` by the default RBAC policy).
pub fn kube_proxy_request() -> CertificateRequest {
    CertificateRequest {
        signer: csr::KUBE_APISERVER_CLIENT_SIGNER.into(),
        common_name: "system:kube-proxy".into(),
        organizations: Vec::new(),
        sans: Vec::new(),
        usages: strings(&["digital signature", "client auth"]),
        expiration_seconds: None,
    }
}

/// An issued certificate and its key (PEM) with its validity (Unix seconds).
#[derive(Clone)]
pub struct IssuedCertificate {
    /// The certificate.
    pub cert_pem: String,
    /// Its private key.
    pub key_pem: String,
    /// `notBefore`.
    pub not_before: i64,
    /// `notAfter`.
    pub not_after: i64,
    /// The name of the CSR it came from.
    pub csr_name: String,
}

impl std::fmt::Debug for IssuedCertificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuedCertificate")
            .field("csr_name", &self.csr_name)
            .field("not_before", &self.not_before)
            .field("not_after", &self.not_after)
            .finish_non_exhaustive()
    }
}

/// Validity (notBefore, notAfter) of a PEM certificate, Unix seconds.
pub fn validity(cert_pem: &str) -> Option<(i64, i64)> {
    let der = crate::pem::certificate_der(cert_pem)?;
    let (_, cert) = x509_parser::parse_x509_certificate(&der).ok()?;
    Some((cert.validity().not_before.timestamp(), cert.validity().not_after.timestamp()))
}

/// Creates a CSR for `req` with a fresh key and waits up to `wait` for
/// the certificate. Errors when it is denied or fails (with the
/// condition's message) or the wait runs out.
pub async fn request_certificate(
    client: &kube::Client,
    req: &CertificateRequest,
    wait: Duration,
) -> Result<IssuedCertificate, JoinError> {
    let orgs: Vec<&str> = req.organizations.iter().map(String::as_str).collect();
    let (request_pem, key_pem) = csr::new_request(&req.common_name, &orgs, &req.sans).map_err(JoinError::Local)?;
    let api = Api::<CertificateSigningRequest>::all(client.clone());
    let obj = CertificateSigningRequest {
        metadata: ObjectMeta { generate_name: Some("csr-".into()), ..Default::default() },
        spec: CertificateSigningRequestSpec {
            request: ByteString(request_pem.into_bytes()),
            signer_name: req.signer.clone(),
            usages: Some(req.usages.clone()),
            expiration_seconds: req.expiration_seconds,
            ..Default::default()
        },
        ..Default::default()
    };
    let created = api
        .create(&PostParams::default(), &obj)
        .await
        .map_err(|source| JoinError::Api { context: "cannot create the certificate signing request", source })?;
    let name = created.metadata.name.clone().unwrap_or_default();
    let cert_pem = wait_for_certificate(&api, &name, wait).await?;
    let (not_before, not_after) = validity(&cert_pem)
        .ok_or_else(|| JoinError::Untrusted(format!("{name}: the issued certificate does not parse")))?;
    Ok(IssuedCertificate { cert_pem, key_pem, not_before, not_after, csr_name: name })
}

async fn wait_for_certificate(
    api: &Api<CertificateSigningRequest>,
    name: &str,
    wait: Duration,
) -> Result<String, JoinError> {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let csr = api
            .get(name)
            .await
            .map_err(|source| JoinError::Api { context: "cannot read the certificate signing request", source })?;
        let status = csr.status.unwrap_or_default();
        if let Some(c) = status
            .conditions
            .iter()
            .flatten()
            .find(|c| (c.type_ == "Denied" || c.type_ == "Failed") && c.status == "True")
        {
            return Err(JoinError::Refused {
                name: name.into(),
                outcome: c.type_.to_lowercase(),
                message: c.message.clone().or_else(|| c.reason.clone()).unwrap_or_default(),
            });
        }
        if let Some(ByteString(cert)) = status.certificate.filter(|c| !c.0.is_empty()) {
            return String::from_utf8(cert)
                .map_err(|_| JoinError::Untrusted(format!("{name}: certificate is not PEM")));
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(JoinError::Timeout(wait, name.into()));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// When to rotate a certificate valid from `not_before` to `not_after`
/// (Unix seconds): after `0.7 + 0.2 × jitter` of its lifetime, `jitter` in
/// [0, 1] (kubelet's certificate manager picks it at random).
pub fn rotation_deadline(not_before: i64, not_after: i64, jitter: f64) -> i64 {
    let lifetime = (not_after - not_before).max(0) as f64;
    not_before + (lifetime * (0.7 + 0.2 * jitter.clamp(0.0, 1.0))).round() as i64
}

/// A random jitter in [0, 1].
pub fn random_jitter() -> f64 {
    use ring::rand::SecureRandom;
    let mut b = [0u8; 4];
    ring::rand::SystemRandom::new().fill(&mut b).expect("the system RNG works");
    u32::from_le_bytes(b) as f64 / u32::MAX as f64
}

/// Waits until `current` is due for rotation, then requests a
/// replacement with `client` (for the kubelet client certificate: a client
/// authenticated by `current` itself, which csrapproving auto-approves as
/// `selfnodeclient`). Retries failed requests every 10 s.
pub async fn rotate_when_due(
    client: &kube::Client,
    req: &CertificateRequest,
    current: &IssuedCertificate,
    wait: Duration,
) -> IssuedCertificate {
    let deadline = rotation_deadline(current.not_before, current.not_after, random_jitter());
    let now = jiff::Timestamp::now().as_second();
    if deadline > now {
        tokio::time::sleep(Duration::from_secs((deadline - now) as u64)).await;
    }
    loop {
        match request_certificate(client, req, wait).await {
            Ok(c) => {
                tracing::info!(component = "certificate-manager", cn = %req.common_name, signer = %req.signer, "rotated certificate");
                return c;
            }
            Err(e) => {
                tracing::warn!(component = "certificate-manager", cn = %req.common_name, error = %e, "certificate rotation failed; retrying in 10s");
                tokio::time::sleep(Duration::from_secs(10)).await;
            }
        }
    }
}

/// Keeps a certificate fresh in the background, as kubelet's certificate
/// manager: each time the current one is due ([`rotation_deadline`]) a new
/// one is requested and published on the returned channel. `client` is
/// who asks; `None` means the current certificate itself (the kubelet
/// client certificate renews itself, `selfnodeclient`). Stops when every
/// receiver is gone.
pub fn spawn_rotation(
    endpoint: ApiEndpoint,
    req: CertificateRequest,
    current: IssuedCertificate,
    client: Option<kube::Client>,
    wait: Duration,
) -> tokio::sync::watch::Receiver<IssuedCertificate> {
    let (tx, rx) = tokio::sync::watch::channel(current.clone());
    tokio::spawn(async move {
        let mut current = current;
        loop {
            let asker = match &client {
                Some(c) => c.clone(),
                None => match client::with_certificate(&endpoint, &current.cert_pem, &current.key_pem) {
                    Ok(c) => c,
                    Err(e) => {
                        tracing::error!(component = "certificate-manager", error = %e, "cannot use the current certificate");
                        return;
                    }
                },
            };
            let next = tokio::select! {
                next = rotate_when_due(&asker, &req, &current, wait) => next,
                _ = tx.closed() => return,
            };
            if tx.send(next.clone()).is_err() {
                return;
            }
            current = next;
        }
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn ca_pem() -> String {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.self_signed(&key).unwrap().pem()
    }

    fn cluster_info(ca: &str, token: &bt::BootstrapToken) -> BTreeMap<String, String> {
        let kc = crate::bootstrapsigner::cluster_info_kubeconfig("https://10.0.0.1:6443", ca);
        crate::bootstrapsigner::signed_data(&BTreeMap::new(), &kc, std::slice::from_ref(token))
    }

    #[test]
    fn discovery_accepts_a_signed_cluster_info_with_the_pinned_ca() {
        let ca = ca_pem();
        let token = bt::BootstrapToken::generate();
        let join = JoinToken::new(&ca, token.clone()).unwrap();
        let info = verify_cluster_info(&cluster_info(&ca, &token), &join).unwrap();
        assert_eq!(info.ca_pem, ca);
        assert_eq!(info.server, "https://10.0.0.1:6443");
    }

    #[test]
    fn discovery_refuses_another_ca_a_forged_signature_or_a_missing_one() {
        let ca = ca_pem();
        let token = bt::BootstrapToken::generate();
        let join = JoinToken::new(&ca, token.clone()).unwrap();
        // A man in the middle with its own CA, signing with a token it guessed.
        let evil = ca_pem();
        let err = verify_cluster_info(&cluster_info(&evil, &token), &join).unwrap_err().to_string();
        assert!(err.starts_with("cluster CA found in cluster-info ConfigMap is invalid"), "{err}");
        let guessed = bt::BootstrapToken { id: token.id.clone(), secret: "0000000000000000".into() };
        let err = verify_cluster_info(&cluster_info(&ca, &guessed), &join).unwrap_err().to_string();
        assert_eq!(err, "failed to verify JWS signature of received cluster info object, can't trust this API Server");
        let other = bt::BootstrapToken::generate();
        let err = verify_cluster_info(&cluster_info(&ca, &other), &join).unwrap_err().to_string();
        assert!(err.starts_with("there is no JWS signed token in the cluster-info ConfigMap"), "{err}");
    }

    #[test]
    fn rotation_happens_between_70_and_90_percent_of_the_lifetime() {
        assert_eq!(rotation_deadline(0, 1000, 0.0), 700);
        assert_eq!(rotation_deadline(0, 1000, 1.0), 900);
        assert_eq!(rotation_deadline(100, 1100, 0.5), 900);
        let j = random_jitter();
        assert!((0.0..=1.0).contains(&j));
    }

    #[test]
    fn node_requests_satisfy_their_signers_rules() {
        for (req, sans) in [
            (kubelet_client_request("n1"), vec![]),
            (kubelet_serving_request("n1", &["n1".to_string(), "10.0.0.5".to_string()]), vec!["n1", "10.0.0.5"]),
            (kube_proxy_request(), vec![]),
        ] {
            let orgs: Vec<&str> = req.organizations.iter().map(String::as_str).collect();
            let (pem, _) = csr::new_request(&req.common_name, &orgs, &req.sans).unwrap();
            let parsed = csr::parse_request(pem.as_bytes()).unwrap();
            assert_eq!(csr::validate_for_signer(&req.signer, &parsed, &req.usages), Some(Ok(())), "{req:?}");
            assert_eq!(parsed.dns_names.len() + parsed.ip_addresses.len(), sans.len());
        }
    }
}
