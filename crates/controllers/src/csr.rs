//! CertificateSigningRequest content: parsing the PKCS#10 request, the
//! signers' rules for what a request may ask for (upstream
//! `pkg/apis/certificates/helpers.go`), and signing with the cluster CA
//! (upstream's `PermissiveSigningPolicy`).

use std::collections::BTreeSet;
use std::time::Duration;

use x509_parser::extensions::GeneralName;
use x509_parser::prelude::FromDer;

/// `kubernetes.io/kube-apiserver-client`.
pub const KUBE_APISERVER_CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";
/// `kubernetes.io/kube-apiserver-client-kubelet`.
pub const KUBELET_CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";
/// `kubernetes.io/kubelet-serving`.
pub const KUBELET_SERVING_SIGNER: &str = "kubernetes.io/kubelet-serving";
/// The group of kubelet identities.
pub const NODES_GROUP: &str = "system:nodes";
/// The user-name prefix of kubelet identities.
pub const NODE_USER_PREFIX: &str = "system:node:";

/// What a PKCS#10 request asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParsedRequest {
    /// Subject common name.
    pub common_name: String,
    /// Subject organizations, in order.
    pub organizations: Vec<String>,
    /// DNS SANs.
    pub dns_names: Vec<String>,
    /// IP SANs, as text.
    pub ip_addresses: Vec<String>,
    /// Email SANs.
    pub emails: Vec<String>,
    /// URI SANs.
    pub uris: Vec<String>,
}

/// Parses `spec.request` (PEM `CERTIFICATE REQUEST`) and checks its
/// self-signature. Errors in upstream's words where it has them.
pub fn parse_request(pem: &[u8]) -> Result<ParsedRequest, String> {
    let (_, block) =
        x509_parser::pem::parse_x509_pem(pem).map_err(|_| "PEM block type must be CERTIFICATE REQUEST".to_string())?;
    if block.label != "CERTIFICATE REQUEST" {
        return Err("PEM block type must be CERTIFICATE REQUEST".into());
    }
    let (_, csr) = x509_parser::certification_request::X509CertificationRequest::from_der(&block.contents)
        .map_err(|e| format!("x509: malformed certificate request: {e}"))?;
    csr.verify_signature().map_err(|_| "x509: certificate request signature is invalid".to_string())?;
    let info = &csr.certification_request_info;
    let mut parsed = ParsedRequest {
        common_name: info.subject.iter_common_name().next().and_then(|a| a.as_str().ok()).unwrap_or("").into(),
        organizations: info.subject.iter_organization().filter_map(|a| a.as_str().ok()).map(str::to_string).collect(),
        ..ParsedRequest::default()
    };
    for ext in csr.requested_extensions().into_iter().flatten() {
        if let x509_parser::extensions::ParsedExtension::SubjectAlternativeName(san) = ext {
            for name in &san.general_names {
                match name {
                    GeneralName::DNSName(d) => parsed.dns_names.push(d.to_string()),
                    GeneralName::RFC822Name(e) => parsed.emails.push(e.to_string()),
                    GeneralName::URI(u) => parsed.uris.push(u.to_string()),
                    GeneralName::IPAddress(b) => parsed.ip_addresses.push(ip_text(b)),
                    _ => {}
                }
            }
        }
    }
    Ok(parsed)
}

fn ip_text(b: &[u8]) -> String {
    match b.len() {
        4 => std::net::Ipv4Addr::from(<[u8; 4]>::try_from(b).unwrap()).to_string(),
        16 => std::net::Ipv6Addr::from(<[u8; 16]>::try_from(b).unwrap()).to_string(),
        _ => format!("{b:?}"),
    }
}

fn set(usages: &[String]) -> BTreeSet<&str> {
    usages.iter().map(String::as_str).collect()
}

fn usages_match(usages: &[String], with_rsa: &[&str], without_rsa: &[&str]) -> Result<(), String> {
    let got = set(usages);
    let a: BTreeSet<&str> = with_rsa.iter().copied().collect();
    let b: BTreeSet<&str> = without_rsa.iter().copied().collect();
    if got == a || got == b {
        return Ok(());
    }
    // Go's sets.String.List() is sorted: the message lists the usages in order.
    Err(format!("usages did not match [{}]", a.into_iter().collect::<Vec<_>>().join(" ")))
}

fn organization_is_nodes(req: &ParsedRequest) -> Result<(), String> {
    if req.organizations != [NODES_GROUP] {
        return Err("subject organization is not system:nodes".into());
    }
    Ok(())
}

/// A kubelet client certificate request (upstream `ValidateKubeletClientCSR`):
/// O exactly `system:nodes`, no SANs, CN `system:node:…`, usages
/// {digital signature, key encipherment, client auth} (key encipherment
/// optional for non-RSA keys).
pub fn validate_kubelet_client(req: &ParsedRequest, usages: &[String]) -> Result<(), String> {
    organization_is_nodes(req)?;
    if !req.dns_names.is_empty() {
        return Err("DNS subjectAltNames are not allowed".into());
    }
    if !req.emails.is_empty() {
        return Err("Email subjectAltNames are not allowed".into());
    }
    if !req.ip_addresses.is_empty() {
        return Err("IP subjectAltNames are not allowed".into());
    }
    if !req.uris.is_empty() {
        return Err("URI subjectAltNames are not allowed".into());
    }
    if !req.common_name.starts_with(NODE_USER_PREFIX) {
        return Err("subject common name does not begin with system:node:".into());
    }
    usages_match(
        usages,
        &["client auth", "digital signature", "key encipherment"],
        &["client auth", "digital signature"],
    )
}

/// A kubelet serving certificate request (upstream `ValidateKubeletServingCSR`):
/// O exactly `system:nodes`, at least one DNS or IP SAN, no email or URI
/// SANs, usages {digital signature, key encipherment, server auth} (key
/// encipherment optional), CN `system:node:…`.
pub fn validate_kubelet_serving(req: &ParsedRequest, usages: &[String]) -> Result<(), String> {
    organization_is_nodes(req)?;
    if req.dns_names.is_empty() && req.ip_addresses.is_empty() {
        return Err("DNS or IP subjectAltName is required".into());
    }
    if !req.emails.is_empty() {
        return Err("Email subjectAltNames are not allowed".into());
    }
    if !req.uris.is_empty() {
        return Err("URI subjectAltNames are not allowed".into());
    }
    usages_match(
        usages,
        &["digital signature", "key encipherment", "server auth"],
        &["digital signature", "server auth"],
    )?;
    if !req.common_name.starts_with(NODE_USER_PREFIX) {
        return Err("subject common name does not begin with system:node:".into());
    }
    Ok(())
}

/// A generic API client certificate request (upstream
/// `validAPIServerClientUsages`): `client auth` required, `digital
/// signature` and `key encipherment` allowed, nothing else.
pub fn validate_api_server_client(usages: &[String]) -> Result<(), String> {
    let mut client_auth = false;
    for u in usages {
        match u.as_str() {
            "digital signature" | "key encipherment" => {}
            "client auth" => client_auth = true,
            other => return Err(format!("invalid usage for client certificate: {other}")),
        }
    }
    if !client_auth {
        return Err("missing required usage for client certificate: client auth".into());
    }
    Ok(())
}

/// The rule of a signer rkube's csrsigning implements: `None` for signer
/// names it does not sign for; otherwise whether the request satisfies it.
pub fn validate_for_signer(signer: &str, req: &ParsedRequest, usages: &[String]) -> Option<Result<(), String>> {
    match signer {
        KUBELET_CLIENT_SIGNER => Some(validate_kubelet_client(req, usages)),
        KUBELET_SERVING_SIGNER => Some(validate_kubelet_serving(req, usages)),
        KUBE_APISERVER_CLIENT_SIGNER => Some(validate_api_server_client(usages)),
        _ => None,
    }
}

/// The default and longest certificate lifetime (`--cluster-signing-duration`, 8760h).
pub const DEFAULT_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);
/// The shortest lifetime a request may ask for (`spec.expirationSeconds`).
pub const MIN_DURATION: Duration = Duration::from_secs(600);

/// The lifetime to issue for `spec.expirationSeconds` (upstream's
/// `signer.duration`): the default when absent, clamped to [10 min, default].
pub fn duration(expiration_seconds: Option<i32>, max: Duration) -> Duration {
    match expiration_seconds {
        None => max,
        Some(s) => Duration::from_secs(s.max(0) as u64).clamp(MIN_DURATION, max),
    }
}

/// The cluster CA that signs approved requests.
pub struct SigningCa {
    cert_pem: String,
    key: rcgen::KeyPair,
    not_after: time::OffsetDateTime,
}

impl SigningCa {
    /// Loads the CA from PEM (upstream reads `--cluster-signing-cert-file`
    /// and `--cluster-signing-key-file`).
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<SigningCa, String> {
        let key = rcgen::KeyPair::from_pem(key_pem).map_err(|e| format!("cannot load the CA key: {e}"))?;
        let der = crate::pem::certificate_der(cert_pem).ok_or("the CA certificate is not PEM")?;
        let (_, cert) =
            x509_parser::parse_x509_certificate(&der).map_err(|e| format!("cannot parse the CA certificate: {e}"))?;
        let not_after = time::OffsetDateTime::from_unix_timestamp(cert.validity().not_after.timestamp())
            .map_err(|e| e.to_string())?;
        rcgen::Issuer::from_ca_cert_pem(cert_pem, &key).map_err(|e| format!("cannot load the CA certificate: {e}"))?;
        Ok(SigningCa { cert_pem: cert_pem.to_string(), key, not_after })
    }

    /// The CA certificate (PEM).
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// Issues a certificate for the request `csr_pem` with the requested
    /// usages, valid from 5 minutes ago (less for short lifetimes) for
    /// `ttl`, never past the CA's own expiry. Subject and SANs come from
    /// the request; it is never a CA.
    pub fn sign(&self, csr_pem: &str, usages: &[String], ttl: Duration) -> Result<String, String> {
        let mut csr = rcgen::CertificateSigningRequestParams::from_pem(csr_pem)
            .map_err(|e| format!("cannot read the certificate request: {e}"))?;
        let now = time::OffsetDateTime::now_utc();
        // Upstream backdates 5 minutes, proportionally less below 8 hours.
        let backdate = Duration::from_secs(300).min(ttl.mul_f64(300.0 / (8.0 * 3600.0)).max(Duration::from_secs(1)));
        let p = &mut csr.params;
        p.not_before = now - backdate;
        p.not_after = (now + ttl).min(self.not_after);
        p.is_ca = rcgen::IsCa::ExplicitNoCa;
        p.serial_number = Some(random_serial());
        p.use_authority_key_identifier_extension = true;
        p.key_usages.clear();
        p.extended_key_usages.clear();
        for u in usages {
            use rcgen::{ExtendedKeyUsagePurpose as E, KeyUsagePurpose as K};
            match u.as_str() {
                "digital signature" => p.key_usages.push(K::DigitalSignature),
                "content commitment" => p.key_usages.push(K::ContentCommitment),
                "key encipherment" => p.key_usages.push(K::KeyEncipherment),
                "key agreement" => p.key_usages.push(K::KeyAgreement),
                "data encipherment" => p.key_usages.push(K::DataEncipherment),
                "cert sign" => p.key_usages.push(K::KeyCertSign),
                "crl sign" => p.key_usages.push(K::CrlSign),
                "encipher only" => p.key_usages.push(K::EncipherOnly),
                "decipher only" => p.key_usages.push(K::DecipherOnly),
                "any" => p.extended_key_usages.push(E::Any),
                "server auth" => p.extended_key_usages.push(E::ServerAuth),
                "client auth" => p.extended_key_usages.push(E::ClientAuth),
                "code signing" => p.extended_key_usages.push(E::CodeSigning),
                "email protection" => p.extended_key_usages.push(E::EmailProtection),
                "timestamping" => p.extended_key_usages.push(E::TimeStamping),
                "ocsp signing" => p.extended_key_usages.push(E::OcspSigning),
                other => return Err(format!("unknown key usage: {other}")),
            }
        }
        let issuer = rcgen::Issuer::from_ca_cert_pem(&self.cert_pem, &self.key).map_err(|e| e.to_string())?;
        let cert = csr.signed_by(&issuer).map_err(|e| format!("cannot sign the certificate: {e}"))?;
        Ok(cert.pem())
    }

    /// A client certificate for `common_name` in `organizations` (several
    /// allowed) with a fresh key, valid for `ttl`; returns (certificate,
    /// key) PEM. Goes through [`SigningCa::sign`] like any approved request.
    pub fn issue_client_certificate(
        &self,
        common_name: &str,
        organizations: &[&str],
        ttl: Duration,
    ) -> Result<(String, String), String> {
        let key = rcgen::KeyPair::generate().map_err(|e| e.to_string())?;
        let mut params = rcgen::CertificateParams::default();
        let mut dn = rcgen::DistinguishedName::new();
        dn.push(rcgen::DnType::CommonName, common_name);
        for o in organizations {
            dn.push(rcgen::DnType::OrganizationName, *o);
        }
        params.distinguished_name = dn;
        let csr = params.serialize_request(&key).map_err(|e| e.to_string())?;
        let usages = ["digital signature".to_string(), "client auth".to_string()];
        let cert = self.sign(&csr.pem().map_err(|e| e.to_string())?, &usages, ttl)?;
        Ok((cert, key.serialize_pem()))
    }
}

fn random_serial() -> rcgen::SerialNumber {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new().fill(&mut bytes).expect("the system RNG works");
    bytes[0] &= 0x7f;
    rcgen::SerialNumber::from_slice(&bytes)
}

/// A new key and a PEM `CERTIFICATE REQUEST` for `common_name`,
/// `organizations` and SANs (DNS names, and IP addresses written as IPs).
/// Returns (request PEM, private key PEM).
pub fn new_request(common_name: &str, organizations: &[&str], sans: &[String]) -> Result<(String, String), String> {
    let key = rcgen::KeyPair::generate().map_err(|e| e.to_string())?;
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(|e| e.to_string())?;
    let mut dn = rcgen::DistinguishedName::new();
    dn.push(rcgen::DnType::CommonName, common_name);
    for o in organizations {
        dn.push(rcgen::DnType::OrganizationName, *o);
    }
    params.distinguished_name = dn;
    for san in sans {
        params.subject_alt_names.push(match san.parse::<std::net::IpAddr>() {
            Ok(ip) => rcgen::SanType::IpAddress(ip),
            Err(_) => rcgen::SanType::DnsName(san.clone().try_into().map_err(|e| format!("{san}: {e}"))?),
        });
    }
    let csr = params.serialize_request(&key).map_err(|e| e.to_string())?;
    Ok((csr.pem().map_err(|e| e.to_string())?, key.serialize_pem()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn request(cn: &str, orgs: &[&str], sans: &[&str]) -> ParsedRequest {
        let sans: Vec<String> = sans.iter().map(|s| s.to_string()).collect();
        let (pem, _) = new_request(cn, orgs, &sans).unwrap();
        parse_request(pem.as_bytes()).unwrap()
    }

    #[test]
    fn kubelet_client_requests_follow_upstreams_rules() {
        let good = request("system:node:n1", &[NODES_GROUP], &[]);
        assert_eq!(good.common_name, "system:node:n1");
        let ok = u(&["digital signature", "key encipherment", "client auth"]);
        assert_eq!(validate_kubelet_client(&good, &ok), Ok(()));
        assert_eq!(validate_kubelet_client(&good, &u(&["digital signature", "client auth"])), Ok(()));
        assert_eq!(
            validate_kubelet_client(&good, &u(&["digital signature", "server auth"])).unwrap_err(),
            "usages did not match [client auth digital signature key encipherment]"
        );
        assert_eq!(
            validate_kubelet_client(&request("mallory", &[NODES_GROUP], &[]), &ok).unwrap_err(),
            "subject common name does not begin with system:node:"
        );
        assert_eq!(
            validate_kubelet_client(&request("system:node:n1", &["system:masters"], &[]), &ok).unwrap_err(),
            "subject organization is not system:nodes"
        );
        assert_eq!(
            validate_kubelet_client(&request("system:node:n1", &[NODES_GROUP], &["n1.example"]), &ok).unwrap_err(),
            "DNS subjectAltNames are not allowed"
        );
        assert_eq!(
            validate_kubelet_client(&request("system:node:n1", &[NODES_GROUP], &["10.0.0.1"]), &ok).unwrap_err(),
            "IP subjectAltNames are not allowed"
        );
    }

    #[test]
    fn kubelet_serving_requests_need_a_san_and_server_auth() {
        let ok = u(&["digital signature", "key encipherment", "server auth"]);
        let good = request("system:node:n1", &[NODES_GROUP], &["n1", "10.0.0.1"]);
        assert_eq!(good.ip_addresses, ["10.0.0.1"]);
        assert_eq!(validate_kubelet_serving(&good, &ok), Ok(()));
        assert_eq!(
            validate_kubelet_serving(&request("system:node:n1", &[NODES_GROUP], &[]), &ok).unwrap_err(),
            "DNS or IP subjectAltName is required"
        );
        assert_eq!(
            validate_kubelet_serving(&good, &u(&["client auth"])).unwrap_err(),
            "usages did not match [digital signature key encipherment server auth]"
        );
    }

    #[test]
    fn api_server_client_requests_need_client_auth_only() {
        assert_eq!(validate_api_server_client(&u(&["digital signature", "client auth"])), Ok(()));
        assert_eq!(
            validate_api_server_client(&u(&["digital signature"])).unwrap_err(),
            "missing required usage for client certificate: client auth"
        );
        assert_eq!(
            validate_api_server_client(&u(&["client auth", "server auth"])).unwrap_err(),
            "invalid usage for client certificate: server auth"
        );
        assert!(validate_for_signer("example.com/other", &ParsedRequest::default(), &[]).is_none());
    }

    #[test]
    fn requested_durations_are_clamped_as_upstream() {
        assert_eq!(duration(None, DEFAULT_DURATION), DEFAULT_DURATION);
        assert_eq!(duration(Some(60), DEFAULT_DURATION), MIN_DURATION);
        assert_eq!(duration(Some(3600), DEFAULT_DURATION), Duration::from_secs(3600));
        assert_eq!(duration(Some(i32::MAX), DEFAULT_DURATION), DEFAULT_DURATION);
    }

    #[test]
    fn malformed_requests_are_refused() {
        assert_eq!(parse_request(b"garbage").unwrap_err(), "PEM block type must be CERTIFICATE REQUEST");
        let cert = crate::pem::encode("CERTIFICATE", b"\x30\x00");
        assert_eq!(parse_request(cert.as_bytes()).unwrap_err(), "PEM block type must be CERTIFICATE REQUEST");
    }

    #[test]
    fn the_ca_signs_with_the_requested_lifetime_and_usages() {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.distinguished_name.push(rcgen::DnType::CommonName, "test-ca");
        let ca_cert = params.self_signed(&ca_key).unwrap();
        let ca = SigningCa::from_pem(&ca_cert.pem(), &ca_key.serialize_pem()).unwrap();
        let (csr, _) = new_request("system:node:n1", &[NODES_GROUP], &[]).unwrap();
        let pem = ca.sign(&csr, &u(&["digital signature", "client auth"]), Duration::from_secs(3600)).unwrap();
        let der = crate::pem::certificate_der(&pem).unwrap();
        let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
        let v = cert.validity();
        let lifetime = v.not_after.timestamp() - v.not_before.timestamp();
        assert!((3600..=3600 + 300).contains(&lifetime), "{lifetime}");
        assert_eq!(cert.subject().iter_common_name().next().unwrap().as_str().unwrap(), "system:node:n1");
        let eku = cert.extended_key_usage().unwrap().unwrap().value;
        assert!(eku.client_auth && !eku.server_auth);
        assert!(!cert.is_ca());
        assert_eq!(cert.issuer().to_string(), "CN=test-ca");
    }
}
