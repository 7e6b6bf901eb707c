//! The HTTPS listener: accepts TCP connections, completes the TLS
//! handshake, and serves HTTP/1.1 or HTTP/2 (hyper-util's auto builder,
//! with upgrades for the streaming subresources to come) on each, until
//! shutdown.
//!
//! Graceful shutdown follows Go's `http.Server.Shutdown`: stop accepting,
//! ask every connection to finish (HTTP/1.1 closes after the in-flight
//! request, HTTP/2 sends GOAWAY), wait up to a grace period, then drop what
//! is left.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper::Request;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tower_service::Service;

use crate::tls::PeerCertificates;
use crate::{Error, COMPONENT};

/// How long a client may take to complete the TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// The first byte of a TLS handshake record (a ClientHello starts with it).
const TLS_HANDSHAKE_RECORD: u8 = 0x16;
/// What Go's `net/http` answers when a connection to an HTTPS server starts
/// with something other than a TLS handshake record (plain HTTP).
const HTTP_TO_HTTPS_RESPONSE: &[u8] =
    b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";
/// How long a client may take to send request headers on HTTP/1.1.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// The most header bytes a request may carry: Go's `http.DefaultMaxHeaderBytes`
/// (1 MiB), which upstream's server keeps, so an oversized credential is
/// answered by authentication (401) rather than by the HTTP layer.
pub const MAX_HEADER_BYTES: usize = 1 << 20;
/// Room beyond [`MAX_HEADER_BYTES`] in HTTP/1.1's read buffer, as Go's
/// server reads `MaxHeaderBytes + 4096` before refusing.
const HEADER_SLACK: usize = 4096;

/// A bound TCP socket plus the TLS configuration to serve on it.
pub struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
    local_addr: SocketAddr,
}

impl TlsListener {
    /// Binds `addr`. Errors with [`Error::Bind`] (e.g. port in use).
    pub async fn bind(addr: SocketAddr, config: Arc<rustls::ServerConfig>) -> Result<Self, Error> {
        let tcp = TcpListener::bind(addr).await.map_err(|source| Error::Bind { addr, source })?;
        let local_addr = tcp.local_addr().map_err(|source| Error::Bind { addr, source })?;
        Ok(TlsListener { tcp, acceptor: TlsAcceptor::from(config), local_addr })
    }

    /// The address actually bound (the real port when binding port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Serves `router` until `shutdown` resolves, then shuts down
    /// gracefully, giving connections at most `grace` to finish.
    ///
    /// Every request carries the extensions `ConnectInfo<SocketAddr>` (the
    /// client's address) and, when the client presented a certificate,
    /// [`PeerCertificates`].
    pub async fn serve(self, router: Router, shutdown: impl Future<Output = ()>, grace: Duration) {
        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(HEADER_READ_TIMEOUT)
            .max_buf_size(MAX_HEADER_BYTES + HEADER_SLACK);
        builder.http2().timer(TokioTimer::new()).max_header_list_size(MAX_HEADER_BYTES as u32);
        let builder = Arc::new(builder);
        let (closing_tx, closing_rx) = watch::channel(false);
        let mut connections = JoinSet::new();

        tokio::pin!(shutdown);
        loop {
            let accepted = tokio::select! {
                _ = &mut shutdown => break,
                Some(_) = connections.join_next(), if !connections.is_empty() => continue,
                accepted = self.tcp.accept() => accepted,
            };
            match accepted {
                Ok((tcp, remote)) => {
                    connections.spawn(serve_connection(
                        tcp,
                        remote,
                        self.acceptor.clone(),
                        router.clone(),
                        builder.clone(),
                        closing_rx.clone(),
                    ));
                }
                Err(e) => {
                    // Out of file descriptors and similar: back off as Go's
                    // http.Server does instead of spinning.
                    tracing::warn!(component = COMPONENT, error = %e, "accepting a connection failed; retrying");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }

        drop(self.tcp);
        let open = connections.len();
        tracing::info!(component = COMPONENT, address = %self.local_addr, open_connections = open, "stopped accepting connections; letting in-flight requests finish (up to {grace:?})");
        let _ = closing_tx.send(true);
        let drained = tokio::time::timeout(grace, async { while connections.join_next().await.is_some() {} }).await;
        if drained.is_err() {
            tracing::warn!(
                component = COMPONENT,
                open_connections = connections.len(),
                "connections still open after the {grace:?} grace period; closing them"
            );
            connections.shutdown().await;
        }
    }
}

async fn serve_connection(
    tcp: TcpStream,
    remote: SocketAddr,
    acceptor: TlsAcceptor,
    router: Router,
    builder: Arc<auto::Builder<TokioExecutor>>,
    mut closing: watch::Receiver<bool>,
) {
    let _ = tcp.set_nodelay(true);
    let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, async {
        if !starts_with_tls_handshake(&tcp).await? {
            reject_plain_http(tcp).await;
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "client sent plain HTTP"));
        }
        acceptor.accept(tcp).await
    });
    let tls = tokio::select! {
        result = handshake => match result {
            Ok(Ok(tls)) => tls,
            Ok(Err(e)) => {
                tracing::debug!(component = COMPONENT, %remote, error = %e, "TLS handshake failed");
                return;
            }
            Err(_) => {
                tracing::debug!(component = COMPONENT, %remote, "TLS handshake timed out");
                return;
            }
        },
        _ = closing.wait_for(|c| *c) => return,
    };
    let peer = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| PeerCertificates::new(chain.iter().map(|c| c.clone().into_owned()).collect()));

    let service = hyper::service::service_fn(move |mut req: Request<Incoming>| {
        req.extensions_mut().insert(ConnectInfo(remote));
        if let Some(peer) = &peer {
            req.extensions_mut().insert(peer.clone());
        }
        // Router is always ready; calling it directly is what axum::serve does.
        router.clone().call(req)
    });
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
    tokio::pin!(conn);
    let mut shutting_down = false;
    let result = loop {
        tokio::select! {
            result = conn.as_mut() => break result,
            _ = closing.wait_for(|c| *c), if !shutting_down => {
                shutting_down = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    };
    if let Err(e) = result {
        tracing::debug!(component = COMPONENT, %remote, error = %e, "connection ended with an error");
    }
}

/// Peeks (without consuming) the connection's first byte: true when it
/// starts a TLS handshake record, false for anything else (e.g. a plain
/// HTTP request line). An error when the client closed before sending.
async fn starts_with_tls_handshake(tcp: &TcpStream) -> std::io::Result<bool> {
    let mut first = [0u8; 1];
    if tcp.peek(&mut first).await? == 0 {
        return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "closed before the TLS handshake"));
    }
    Ok(first[0] == TLS_HANDSHAKE_RECORD)
}

/// Answers a plain-HTTP client on the HTTPS port as Go's `net/http` does
/// (`HTTP/1.0 400 Bad Request`, "Client sent an HTTP request to an HTTPS
/// server."), then closes the connection. The request bytes still unread
/// are drained first (briefly, bounded), because closing a socket with
/// unread input sends a TCP reset that can discard the answer on the
/// client's side.
async fn reject_plain_http(mut tcp: TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    if tcp.write_all(HTTP_TO_HTTPS_RESPONSE).await.is_err() || tcp.shutdown().await.is_err() {
        return;
    }
    let drain = async {
        let mut buf = [0u8; 4096];
        let mut total = 0usize;
        while total < 64 * 1024 {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n,
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), drain).await;
}
