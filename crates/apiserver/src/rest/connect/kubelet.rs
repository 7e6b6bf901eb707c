//! The API server's client towards kubelets for the translated
//! exec/attach sessions: TLS authenticated with the
//! apiserver-kubelet-client certificate (CN `kube-apiserver-kubelet-client`,
//! O `system:masters`, as kubeadm issues it), verifying the kubelet's
//! serving certificate against the cluster CA, then a WebSocket handshake
//! offering `v5.channel.k8s.io` — rkube owns both ends, so the kubelet
//! side speaks the same channel protocol as kubectl and frames are
//! relayed unchanged ([`super::relay`]).
//!
//! `rkube server` builds the client from its PKI directory and hands it to
//! the API server in [`crate::bootstrap::ClusterConfig::kubelet_client`].
//! Without it a translated session only dials the kubelet port, which is
//! all upstream's answer for an unreachable node needs.

use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::header::SEC_WEBSOCKET_PROTOCOL;
use tokio_tungstenite::WebSocketStream;

use super::location::KubeletLocation;
use super::websocket::V5_PROTOCOL;

/// Why a kubelet session could not be opened, in the two shapes upstream
/// reports: a failed request (`error sending request: Post "…": …`) or a
/// refused upgrade (`unable to upgrade connection: …`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KubeletError {
    /// Dial, TLS or transport failure: Go's error text after the URL.
    Request(String),
    /// The kubelet answered without switching protocols.
    Upgrade(String),
}

impl KubeletError {
    /// The message upstream's SPDY executor returns for `location`.
    pub fn message(&self, location: &KubeletLocation) -> String {
        match self {
            KubeletError::Request(e) => format!("error sending request: Post {:?}: {e}", location.url()),
            KubeletError::Upgrade(e) => format!("unable to upgrade connection: {e}"),
        }
    }
}

/// TLS client settings towards kubelets.
pub struct KubeletClient {
    tls: Arc<rustls::ClientConfig>,
    /// The same client certificate without checking the kubelet's
    /// (`insecureSkipTLSVerifyBackend` of pod logs).
    insecure: Arc<rustls::ClientConfig>,
}

impl std::fmt::Debug for KubeletClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeletClient").finish_non_exhaustive()
    }
}

impl KubeletClient {
    /// From PEM text: the CA that signs kubelet serving certificates, and
    /// the apiserver-kubelet-client certificate (chain) and key. Errors
    /// name what could not be read.
    pub fn from_pem(ca_pem: &str, cert_pem: &str, key_pem: &str) -> Result<KubeletClient, String> {
        let mut roots = rustls::RootCertStore::empty();
        for ca in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
            roots.add(ca.map_err(|e| format!("kubelet CA: {e}"))?).map_err(|e| format!("kubelet CA: {e}"))?;
        }
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
            .collect::<Result<_, _>>()
            .map_err(|e| format!("kubelet client certificate: {e}"))?;
        let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).map_err(|e| format!("kubelet client key: {e}"))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_client_auth_cert(chain.clone(), key.clone_key())
            .map_err(|e| format!("kubelet client certificate: {e}"))?;
        let insecure = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(super::backend::AcceptAny(provider)))
            .with_client_auth_cert(chain, key)
            .map_err(|e| format!("kubelet client certificate: {e}"))?;
        Ok(KubeletClient { tls: Arc::new(tls), insecure: Arc::new(insecure) })
    }

    /// The HTTP backend of a kubelet at `host:port` with these TLS
    /// settings ([`super::backend`]), for logs, proxy and upgrades.
    pub fn backend(&self, host: &str, port: u64) -> super::backend::Backend {
        super::backend::Backend {
            host: host.to_string(),
            port,
            security: super::backend::Security::Tls(self.tls.clone()),
        }
    }

    /// [`KubeletClient::backend`] that does not verify the kubelet's
    /// serving certificate (upstream's `InsecureSkipTLSVerifyTransport`).
    pub fn insecure_backend(&self, host: &str, port: u64) -> super::backend::Backend {
        super::backend::Backend {
            host: host.to_string(),
            port,
            security: super::backend::Security::Tls(self.insecure.clone()),
        }
    }

    /// Opens the channel stream of `location` on its kubelet: dial, TLS,
    /// WebSocket v5.
    pub async fn connect(
        &self,
        location: &KubeletLocation,
    ) -> Result<WebSocketStream<TlsStream<TcpStream>>, KubeletError> {
        let (target, conn) = super::dial_tcp(&location.host, location.port).await;
        let tcp = conn.map_err(|reason| KubeletError::Request(format!("dial tcp {target}: {reason}")))?;
        let name = match location.host.parse::<std::net::IpAddr>() {
            Ok(ip) => ServerName::IpAddress(ip.into()),
            Err(_) => ServerName::try_from(location.host.clone())
                .map_err(|e| KubeletError::Request(format!("tls: invalid server name: {e}")))?,
        };
        let tls = tokio_rustls::TlsConnector::from(self.tls.clone())
            .connect(name, tcp)
            .await
            .map_err(|e| KubeletError::Request(format!("tls: {e}")))?;
        open_channel_stream(tls, location).await
    }
}

/// The WebSocket handshake for `location` over `io`, offering only
/// `v5.channel.k8s.io` (the kubelet is rkube's own); a kubelet that picks
/// no or another subprotocol is an upgrade failure.
pub async fn open_channel_stream<S>(io: S, location: &KubeletLocation) -> Result<WebSocketStream<S>, KubeletError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let url = format!("wss://{}{}", location.authority(), location.path_and_query);
    let mut request = url.into_client_request().map_err(|e| KubeletError::Request(e.to_string()))?;
    request.headers_mut().insert(SEC_WEBSOCKET_PROTOCOL, V5_PROTOCOL.parse().expect("a valid header value"));
    match tokio_tungstenite::client_async(request, io).await {
        Ok((ws, response)) => {
            let chosen = response.headers().get(SEC_WEBSOCKET_PROTOCOL).and_then(|v| v.to_str().ok());
            if chosen == Some(V5_PROTOCOL) {
                Ok(ws)
            } else {
                Err(KubeletError::Upgrade(format!("the kubelet chose subprotocol {chosen:?}, not {V5_PROTOCOL}")))
            }
        }
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            let body = response.body().as_deref().map(String::from_utf8_lossy).unwrap_or_default();
            Err(KubeletError::Upgrade(if body.trim().is_empty() {
                response.status().to_string()
            } else {
                body.trim().to_string()
            }))
        }
        Err(e) => Err(KubeletError::Request(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
    use tokio_tungstenite::tungstenite::Message;

    use crate::testing::pki;

    /// A TLS WebSocket endpoint speaking v5 like a kubelet: it records the
    /// client certificate's user, writes `hi` on stdout, a success Status
    /// on the error channel, and closes.
    async fn kubelet(listener: tokio::net::TcpListener, pki: &rkube_pki::ClusterPki) -> String {
        let material = crate::tls::TlsMaterial {
            serving_cert_pem: pki.serving.cert_pem.clone(),
            serving_key_pem: pki.serving.key_pem.clone(),
            client_ca_pem: pki.ca.cert_pem.clone(),
        };
        let acceptor = tokio_rustls::TlsAcceptor::from(crate::tls::server_config(&material).unwrap());
        let (tcp, _) = listener.accept().await.unwrap();
        let tls = acceptor.accept(tcp).await.unwrap();
        let peer = tls.get_ref().1.peer_certificates().and_then(|c| c.first()).map(|c| c.to_vec()).unwrap_or_default();
        let user = crate::authn::UserInfo::from_certificate(&peer).map(|u| u.name).unwrap_or_default();
        let pick_v5 = |_: &Request, mut resp: Response| {
            resp.headers_mut().insert("sec-websocket-protocol", V5_PROTOCOL.parse().unwrap());
            Ok(resp)
        };
        let mut ws = tokio_tungstenite::accept_hdr_async(tls, pick_v5).await.unwrap();
        ws.send(Message::Binary(b"\x01hi".to_vec().into())).await.unwrap();
        ws.send(Message::Binary([&[3u8][..], br#"{"metadata":{},"status":"Success"}"#].concat().into())).await.unwrap();
        ws.close(None).await.unwrap();
        user
    }

    /// The kubelet client authenticates with the apiserver-kubelet-client
    /// certificate, verifies the kubelet's against the cluster CA and
    /// opens a v5 channel stream; an unreachable kubelet is upstream's
    /// `error sending request: Post "…": dial tcp …` message.
    #[tokio::test]
    async fn connects_with_the_kubelet_client_certificate() {
        let (_dir, pki) = pki();
        let client =
            KubeletClient::from_pem(&pki.ca.cert_pem, &pki.kubelet_client.cert_pem, &pki.kubelet_client.key_pem)
                .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let location = KubeletLocation {
            host: "127.0.0.1".into(),
            port: port.into(),
            path_and_query: "/exec/default/web/c?command=true&output=1".into(),
        };
        let server = async { kubelet(listener, &pki).await };
        let session = async {
            let mut ws = client.connect(&location).await.unwrap();
            let mut got = vec![];
            while let Some(Ok(msg)) = ws.next().await {
                got.push(msg);
            }
            got
        };
        let (user, got) = tokio::join!(server, session);
        assert_eq!(user, rkube_pki::KUBELET_CLIENT_COMMON_NAME);
        assert_eq!(got[0], Message::Binary(b"\x01hi".to_vec().into()));
        let status = [&[3u8][..], br#"{"metadata":{},"status":"Success"}"#].concat();
        assert_eq!(got[1], Message::Binary(status.into()));
        assert!(matches!(got.last(), Some(Message::Close(_))), "{got:?}");

        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let gone = KubeletLocation { port: closed.into(), ..location };
        let err = client.connect(&gone).await.err().expect("nothing listens there");
        assert_eq!(
            err.message(&gone),
            format!("error sending request: Post \"https://127.0.0.1:{closed}/exec/default/web/c?command=true&output=1\": dial tcp 127.0.0.1:{closed}: connect: connection refused")
        );
    }
}
