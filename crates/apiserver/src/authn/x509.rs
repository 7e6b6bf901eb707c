//! The x509 client-certificate authenticator (upstream's
//! `pkg/authentication/request/x509`).
//!
//! The TLS layer requests a certificate but accepts any (Go's
//! `tls.RequestClientCert`, see [`crate::tls`]); here the presented chain
//! is verified against the cluster CA for client authentication (expiry,
//! signatures, the clientAuth extended key usage — rustls-webpki, as Go's
//! `x509.Certificate.Verify` with `ExtKeyUsageClientAuth`). A chain that
//! does not verify is an error (the request gets a 401, never anonymous);
//! a verified certificate without a common name authenticates nobody. The
//! user is the subject's CN, its groups the O values, and its credential
//! id (extra `authentication.kubernetes.io/credential-id`)
//! `X509SHA256=<hex SHA-256 of the certificate>`.
//!
//! Verified chains are cached by their digest for a few seconds (and
//! never beyond the leaf's `notAfter`), so a connection's requests do not
//! each repeat the signature checks.

use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::ClientCertVerifier;
use rustls::server::WebPkiClientVerifier;
use rustls::RootCertStore;

use super::cache::{self, TtlCache};
use super::UserInfo;

/// Verifies client certificate chains against the cluster CA.
pub struct X509Authenticator {
    verifier: Arc<dyn ClientCertVerifier>,
    cache: TtlCache<(UserInfo, u64)>,
}

impl std::fmt::Debug for X509Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("X509Authenticator").finish_non_exhaustive()
    }
}

impl X509Authenticator {
    /// An authenticator trusting the CA certificates in `ca_pem`. Errors
    /// when the PEM holds no usable certificate.
    pub fn new(ca_pem: &str) -> Result<X509Authenticator, String> {
        let mut roots = RootCertStore::empty();
        for ca in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
            let ca = ca.map_err(|e| format!("cannot read the client CA: {e}"))?;
            roots.add(ca).map_err(|e| format!("the client CA certificate is not usable: {e}"))?;
        }
        if roots.is_empty() {
            return Err("the client CA PEM holds no certificate".into());
        }
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), crate::tls::crypto_provider())
            .build()
            .map_err(|e| format!("cannot build the client certificate verifier: {e}"))?;
        Ok(X509Authenticator { verifier, cache: TtlCache::default() })
    }

    /// The CA's verifier (also what the TLS layer uses for its hints and
    /// handshake signature checks).
    pub fn verifier(&self) -> Arc<dyn ClientCertVerifier> {
        self.verifier.clone()
    }

    /// Authenticates a presented chain (leaf first, DER). `Ok(None)`: a
    /// verified certificate that names no user (empty CN). `Err`: the
    /// chain does not verify (message as upstream's `verifying certificate
    /// … failed: …`).
    pub fn authenticate(&self, chain: &[CertificateDer<'static>]) -> Result<Option<UserInfo>, String> {
        let Some((leaf, intermediates)) = chain.split_first() else { return Ok(None) };
        let parts: Vec<&[u8]> = chain.iter().map(|c| c.as_ref()).collect();
        let key = cache::key(&parts);
        let now = UnixTime::now();
        if let Some((user, not_after)) = self.cache.get(&key) {
            if now.as_secs() <= not_after {
                return Ok(Some(user));
            }
        }
        let (_, cert) = x509_parser::parse_x509_certificate(leaf)
            .map_err(|e| format!("verifying certificate failed: cannot parse the certificate: {e}"))?;
        let subject = cert.subject().to_string();
        self.verifier
            .verify_client_cert(leaf, intermediates, now)
            .map_err(|e| format!("verifying certificate SN={}, Subject=\"{subject}\" failed: {e}", cert.serial))?;
        let Some(user) = UserInfo::from_certificate(leaf).filter(|u| !u.name.is_empty()) else { return Ok(None) };
        let not_after = cert.validity().not_after.timestamp().max(0) as u64;
        let ttl = Duration::from_secs(not_after.saturating_sub(now.as_secs())).min(cache::SUCCESS_TTL);
        self.cache.insert(key, (user.clone(), not_after), ttl);
        Ok(Some(user))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::pki;

    fn der(pem: &str) -> Vec<CertificateDer<'static>> {
        CertificateDer::pem_slice_iter(pem.as_bytes()).collect::<Result<_, _>>().unwrap()
    }

    #[test]
    fn certificates_of_the_cluster_ca_authenticate_and_foreign_ones_fail() {
        let (_dir, pki) = pki();
        let x509 = X509Authenticator::new(&pki.ca.cert_pem).unwrap();
        let user = x509.authenticate(&der(&pki.admin.cert_pem)).unwrap().unwrap();
        assert_eq!(user.name, "system:admin");
        assert_eq!(user.groups, ["system:masters", "system:authenticated"]);
        // Cached: the same answer again.
        assert_eq!(x509.authenticate(&der(&pki.admin.cert_pem)).unwrap().unwrap(), user);

        let (_other_dir, other) = crate::testing::pki();
        let err = x509.authenticate(&der(&other.admin.cert_pem)).unwrap_err();
        assert!(err.starts_with("verifying certificate SN="), "{err}");
        assert!(err.contains("failed:"), "{err}");
        // A serving certificate lacks the clientAuth usage only if the PKI
        // says so; an unparsable one is an error either way.
        assert!(x509.authenticate(&[CertificateDer::from(b"junk".to_vec())]).is_err());
        assert_eq!(x509.authenticate(&[]).unwrap(), None);
        assert!(X509Authenticator::new("no pem").is_err());
    }
}
