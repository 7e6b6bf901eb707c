//! The kubelet's serving certificate and TLS settings.

use std::net::IpAddr;
use std::sync::Arc;

use rcgen::{
    CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use rkube_pki::CertAndKey;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use super::ServerError;

/// Issues a kubelet serving certificate signed by the cluster CA `ca`: CN
/// `<node_name>` (upstream's self-signed kubelet certificates are named
/// after the host; CSR-issued ones `system:node:<name>` — what matters to
/// the API server is the CA and the SANs), DNS SAN `node_name`, an IP SAN
/// per address of `ips`, serverAuth, a fresh ECDSA P-256 key, valid for a
/// year ([`rkube_pki::LEAF_VALIDITY`]). Nothing is written to disk.
///
/// Errors: the CA does not load or signing fails (the message says which).
pub fn issue_serving_cert(ca: &CertAndKey, node_name: &str, ips: &[IpAddr]) -> Result<CertAndKey, String> {
    let ca_key = KeyPair::from_pem(&ca.key_pem).map_err(|e| format!("cannot load the CA key: {e}"))?;
    let issuer =
        Issuer::from_ca_cert_pem(&ca.cert_pem, &ca_key).map_err(|e| format!("cannot load the CA certificate: {e}"))?;
    let key = KeyPair::generate().map_err(|e| format!("cannot generate the kubelet serving key: {e}"))?;
    let mut params = CertificateParams::default();
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::minutes(5);
    params.not_after = now + rkube_pki::LEAF_VALIDITY;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, node_name);
    params.distinguished_name = dn;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let mut sans = Vec::new();
    if !node_name.is_empty() && node_name.parse::<IpAddr>().is_err() {
        sans.push(SanType::DnsName(
            node_name.to_string().try_into().map_err(|e| format!("node name {node_name:?} as a DNS SAN: {e}"))?,
        ));
    }
    sans.extend(ips.iter().map(|ip| SanType::IpAddress(*ip)));
    params.subject_alt_names = sans;
    let cert =
        params.signed_by(&key, &issuer).map_err(|e| format!("cannot sign the kubelet serving certificate: {e}"))?;
    Ok(CertAndKey { cert_pem: cert.pem(), key_pem: key.serialize_pem() })
}

/// TLS settings: the serving certificate, and client certificates
/// verified against `client_ca_pem` when presented (upstream's
/// `VerifyClientCertIfGiven`: a certificate from another CA fails the
/// handshake; no certificate leaves bearer tokens).
pub(crate) fn server_config(
    cert_pem: &str,
    key_pem: &str,
    client_ca_pem: &str,
) -> Result<Arc<rustls::ServerConfig>, ServerError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| ServerError::Tls(format!("serving certificate: {e}")))?;
    if chain.is_empty() {
        return Err(ServerError::Tls("the serving certificate PEM holds no certificate".into()));
    }
    let key =
        PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).map_err(|e| ServerError::Tls(format!("serving key: {e}")))?;
    let mut roots = rustls::RootCertStore::empty();
    for ca in CertificateDer::pem_slice_iter(client_ca_pem.as_bytes()) {
        let ca = ca.map_err(|e| ServerError::Tls(format!("client CA: {e}")))?;
        roots.add(ca).map_err(|e| ServerError::Tls(format!("client CA: {e}")))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .allow_unauthenticated()
        .build()
        .map_err(|e| ServerError::Tls(format!("client CA: {e}")))?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ServerError::Tls(e.to_string()))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(|e| ServerError::Tls(format!("serving certificate and key: {e}")))?;
    // HTTP/1.1 only: the upgrades (WebSocket, SPDY) are HTTP/1.1.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    use rustls::client::danger::ServerCertVerifier;

    fn names() -> rkube_pki::ServingNames {
        rkube_pki::ServingNames {
            advertise_address: "127.0.0.1".parse().unwrap(),
            host_addresses: vec![],
            kubernetes_service_ip: "10.43.0.1".parse().unwrap(),
            cluster_domain: "cluster.local".into(),
            extra: vec![],
        }
    }

    /// The serving certificate carries the node name and IPs as SANs and
    /// chains to the CA (rustls accepts it for each name).
    #[test]
    fn serving_certificate_has_node_sans() {
        let dir = tempfile::tempdir().unwrap();
        let files = rkube_pki::PkiFiles::new(dir.path());
        let pki = rkube_pki::ClusterPki::ensure(&files, &names()).unwrap();
        let ip: IpAddr = "10.1.2.3".parse().unwrap();
        let cert = issue_serving_cert(&pki.ca, "node-a", &[ip]).unwrap();
        let der = CertificateDer::from_pem_slice(cert.cert_pem.as_bytes()).unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(CertificateDer::from_pem_slice(pki.ca.cert_pem.as_bytes()).unwrap()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier =
            rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider).build().unwrap();
        let now = rustls::pki_types::UnixTime::now();
        for name in ["node-a", "10.1.2.3"] {
            let name = rustls::pki_types::ServerName::try_from(name).unwrap();
            verifier.verify_server_cert(&der, &[], &name, &[], now).unwrap();
        }
        let other = rustls::pki_types::ServerName::try_from("node-b").unwrap();
        assert!(verifier.verify_server_cert(&der, &[], &other, &[], now).is_err());
        assert!(server_config(&cert.cert_pem, &cert.key_pem, &pki.ca.cert_pem).is_ok());
    }
}
