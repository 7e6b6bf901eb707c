//! TLS configuration of the API server and the client identity a
//! connection presented.
//!
//! As kube-apiserver with `--client-ca-file`: TLS 1.2 and 1.3, ALPN `h2`
//! then `http/1.1`, client certificates requested but optional
//! (Go's `VerifyClientCertIfGiven`); a certificate that is presented must
//! chain to the cluster CA or the handshake fails.

use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};

use crate::Error;

/// PEM key material for the listener.
#[derive(Clone)]
pub struct TlsMaterial {
    /// The serving certificate, optionally followed by intermediates.
    pub serving_cert_pem: String,
    /// The serving certificate's private key (PKCS#8, SEC1 or PKCS#1 PEM).
    pub serving_key_pem: String,
    /// CA certificate(s) that client certificates must chain to.
    pub client_ca_pem: String,
}

impl std::fmt::Debug for TlsMaterial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsMaterial").finish_non_exhaustive()
    }
}

/// The verified certificate chain a client presented during the TLS
/// handshake (leaf first), attached to every request of that connection as
/// a request extension. Absent when the client sent no certificate.
///
/// Authentication (x509 client-cert authenticator: user = CN, groups = O)
/// reads it from `request.extensions().get::<PeerCertificates>()`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerCertificates(Arc<Vec<CertificateDer<'static>>>);

impl PeerCertificates {
    /// Wraps a chain (leaf first); `None` for an empty chain.
    pub fn new(chain: Vec<CertificateDer<'static>>) -> Option<Self> {
        (!chain.is_empty()).then(|| PeerCertificates(Arc::new(chain)))
    }

    /// The client's own certificate (DER).
    pub fn leaf(&self) -> &CertificateDer<'static> {
        &self.0[0]
    }

    /// The whole chain as presented, leaf first (DER).
    pub fn chain(&self) -> &[CertificateDer<'static>] {
        &self.0
    }
}

/// The crypto provider rkube uses (ring), independent of any process-wide default.
pub fn crypto_provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Builds the rustls server configuration (see module docs).
///
/// Errors when the PEM material cannot be parsed or the key does not fit
/// the certificate.
pub fn server_config(material: &TlsMaterial) -> Result<Arc<ServerConfig>, Error> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(material.serving_cert_pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| Error::Tls(format!("cannot read the serving certificate: {e}")))?;
    if chain.is_empty() {
        return Err(Error::Tls("the serving certificate PEM holds no certificate".into()));
    }
    let key = PrivateKeyDer::from_pem_slice(material.serving_key_pem.as_bytes())
        .map_err(|e| Error::Tls(format!("cannot read the serving private key: {e}")))?;

    let mut roots = RootCertStore::empty();
    for ca in CertificateDer::pem_slice_iter(material.client_ca_pem.as_bytes()) {
        let ca = ca.map_err(|e| Error::Tls(format!("cannot read the client CA: {e}")))?;
        roots.add(ca).map_err(|e| Error::Tls(format!("the client CA certificate is not usable: {e}")))?;
    }
    if roots.is_empty() {
        return Err(Error::Tls("the client CA PEM holds no certificate".into()));
    }

    let provider = crypto_provider();
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .allow_unauthenticated()
        .build()
        .map_err(|e| Error::Tls(format!("cannot build the client certificate verifier: {e}")))?;
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| Error::Tls(format!("TLS versions: {e}")))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(|e| Error::Tls(format!("the serving certificate and key do not fit together: {e}")))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
