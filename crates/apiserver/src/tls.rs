//! TLS configuration of the API server and the client identity a
//! connection presented.
//!
//! As kube-apiserver with `--client-ca-file`: TLS 1.2 and 1.3, ALPN `h2`
//! then `http/1.1`, client certificates requested but optional and not
//! verified during the handshake (Go's `tls.RequestClientCert`, with the
//! cluster CA's names as hints). The handshake still proves the client
//! holds the certificate's key (its CertificateVerify signature is
//! checked); whether the chain leads to the cluster CA is the x509
//! authenticator's question ([`crate::authn::x509`]), so a foreign or
//! expired certificate gets an HTTP 401 instead of a failed handshake.

use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::UnixTime;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::{DigitallySignedStruct, DistinguishedName, RootCertStore, ServerConfig, SignatureScheme};

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

/// The certificate chain a client presented during the TLS handshake
/// (leaf first; the client proved it holds the leaf's key, but the chain
/// is not yet verified), attached to every request of that connection as
/// a request extension. Absent when the client sent no certificate.
///
/// Authentication ([`crate::authn::x509`]: chain verified against the
/// cluster CA, user = CN, groups = O) reads it from
/// `request.extensions().get::<PeerCertificates>()`.
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
    let webpki = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .allow_unauthenticated()
        .build()
        .map_err(|e| Error::Tls(format!("cannot build the client certificate verifier: {e}")))?;
    let verifier = Arc::new(RequestClientCert { webpki });
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| Error::Tls(format!("TLS versions: {e}")))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(|e| Error::Tls(format!("the serving certificate and key do not fit together: {e}")))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Go's `tls.RequestClientCert`: asks for a certificate (hinting the
/// cluster CA), accepts any or none, and checks only the handshake
/// signature that proves possession of the certificate's key (delegated
/// to the WebPKI verifier, which parses the certificate for it).
#[derive(Debug)]
struct RequestClientCert {
    webpki: Arc<dyn ClientCertVerifier>,
}

impl ClientCertVerifier for RequestClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.webpki.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        // The chain is verified per request by the x509 authenticator.
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}
