//! HTTP/1.1 connections from the API server to what it forwards to: a
//! node's kubelet (TLS, the apiserver-kubelet-client certificate, the
//! kubelet's serving certificate checked against the cluster CA) or a pod
//! or service backend (plain HTTP, or TLS without verification: upstream's
//! proxy transport sets `InsecureSkipVerify` because pod and service
//! addresses are IPs no certificate names).
//!
//! One connection per request, run with upgrades enabled so a `101
//! Switching Protocols` hands back the raw stream. Failures carry Go's
//! wording (`dial tcp 10.0.0.5:10250: connect: connection refused`), which
//! upstream's messages embed.

use std::sync::Arc;

use axum::body::Body;
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite};

/// How the API server secures a connection to a backend.
#[derive(Clone)]
pub enum Security {
    /// Plain HTTP.
    Plain,
    /// TLS with these client settings (the kubelet client's, or
    /// [`insecure_tls`] for pods and services).
    Tls(Arc<rustls::ClientConfig>),
}

/// Where a request goes: `scheme://host:port`.
#[derive(Clone)]
pub struct Backend {
    /// Host name or IP (IPv6 without brackets).
    pub host: String,
    /// TCP port.
    pub port: u64,
    /// Plain or TLS.
    pub security: Security,
}

/// A stream to a backend, plain or TLS.
trait Io: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Io for T {}

impl Backend {
    /// `host:port`, `[v6]:port` for IPv6 (Go's `net.JoinHostPort`).
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// `http` or `https`.
    pub fn scheme(&self) -> &'static str {
        match self.security {
            Security::Plain => "http",
            Security::Tls(_) => "https",
        }
    }

    /// Sends `request` (origin-form URI; `Host` is the backend's unless the
    /// request carries one, as upstream keeps the client's) on a new
    /// connection and returns the response head and streaming body; a
    /// `101` response can then be upgraded with `hyper::upgrade::on`. The
    /// error is Go's text for the failure (dial, TLS or transport).
    pub async fn send(&self, mut request: hyper::Request<Body>) -> Result<hyper::Response<Incoming>, String> {
        let io = self.connect().await?;
        let (mut sender, conn) = http1::handshake(TokioIo::new(io)).await.map_err(|e| e.to_string())?;
        tokio::spawn(async move {
            if let Err(e) = conn.with_upgrades().await {
                tracing::debug!(component = crate::COMPONENT, error = %e, "backend connection ended");
            }
        });
        if !request.headers().contains_key(hyper::header::HOST) {
            let host = self.authority().parse().map_err(|_| format!("invalid host {:?}", self.authority()))?;
            request.headers_mut().insert(hyper::header::HOST, host);
        }
        sender.send_request(request).await.map_err(|e| transport_error(&e))
    }

    async fn connect(&self) -> Result<Box<dyn Io>, String> {
        let (target, conn) = super::dial_tcp(&self.host, self.port).await;
        let tcp = conn.map_err(|reason| format!("dial tcp {target}: {reason}"))?;
        let _ = tcp.set_nodelay(true);
        match &self.security {
            Security::Plain => Ok(Box::new(tcp)),
            Security::Tls(config) => {
                let name = match self.host.parse::<std::net::IpAddr>() {
                    Ok(ip) => ServerName::IpAddress(ip.into()),
                    Err(_) => {
                        ServerName::try_from(self.host.clone()).map_err(|e| format!("tls: invalid server name: {e}"))?
                    }
                };
                let tls = tokio_rustls::TlsConnector::from(config.clone())
                    .connect(name, tcp)
                    .await
                    .map_err(|e| tls_error(&e))?;
                Ok(Box::new(tls))
            }
        }
    }
}

/// A TLS failure; a certificate no trusted CA signed in Go's words, which
/// upstream's messages carry (Go adds `(possibly because of …)` when a CA
/// of the same name exists but did not sign it).
fn tls_error(e: &std::io::Error) -> String {
    let unknown_issuer = e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()).is_some_and(|r| {
        matches!(
            r,
            rustls::Error::InvalidCertificate(
                rustls::CertificateError::UnknownIssuer | rustls::CertificateError::BadSignature
            )
        )
    });
    if unknown_issuer {
        "tls: failed to verify certificate: x509: certificate signed by unknown authority".into()
    } else {
        format!("tls: {e}")
    }
}

/// A transport error after the connection was made, close to Go's
/// wording for the common case of a backend hanging up.
fn transport_error(e: &hyper::Error) -> String {
    if e.is_incomplete_message() || e.is_closed() {
        "EOF".to_string()
    } else {
        e.to_string()
    }
}

/// TLS settings that accept any server certificate (signatures are still
/// checked), as upstream's proxy transport towards pods and services.
pub fn insecure_tls() -> Arc<rustls::ClientConfig> {
    static CONFIG: std::sync::OnceLock<Arc<rustls::ClientConfig>> = std::sync::OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = rustls::ClientConfig::builder_with_provider(provider.clone())
                .with_safe_default_protocol_versions()
                .expect("the ring provider supports the default versions")
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AcceptAny(provider)))
                .with_no_client_auth();
            Arc::new(config)
        })
        .clone()
}

/// Accepts every certificate; verifies handshake signatures with the
/// provider's algorithms.
#[derive(Debug)]
pub struct AcceptAny(pub Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
