//! The two ways the bench talks to the API: HTTPS to a real `rkube server`
//! (hyper's client with the admin certificate, HTTP/2 like client-go's
//! default transport or a pool of HTTP/1.1 connections), and in-process
//! through `Api::handle` (no TLS, no HTTP framing, no authentication).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};

use axum::http::{Method, Request, StatusCode};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rkube_apiserver::rest::Api;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// How HTTPS requests travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Http {
    /// One HTTP/2 connection multiplexing every concurrent request (what
    /// client-go does by default over TLS).
    H2,
    /// A pool of HTTP/1.1 connections, one per concurrent request.
    H1,
}

/// A client of the API.
#[derive(Clone)]
pub enum Client {
    /// HTTPS to a running server.
    Https(Arc<Https>),
    /// `Api::handle` in this process.
    InProcess(Arc<Api>),
}

/// An HTTPS client of one server.
pub struct Https {
    addr: SocketAddr,
    tls: TlsConnector,
    http: Http,
    h2: tokio::sync::OnceCell<http2::SendRequest<Full<Bytes>>>,
    h1_pool: Mutex<Vec<http1::SendRequest<Full<Bytes>>>>,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl Https {
    /// A client of the server at `addr` presenting the admin certificate
    /// from `tls_dir`.
    pub fn new(addr: SocketAddr, tls_dir: &Path, http: Http) -> Arc<Https> {
        let mut config = (*crate::support::admin_tls_config(tls_dir).expect("admin TLS config")).clone();
        config.alpn_protocols = match http {
            Http::H2 => vec![b"h2".to_vec()],
            Http::H1 => vec![b"http/1.1".to_vec()],
        };
        Arc::new(Https {
            addr,
            tls: TlsConnector::from(Arc::new(config)),
            http,
            h2: tokio::sync::OnceCell::new(),
            h1_pool: Mutex::new(Vec::new()),
        })
    }

    async fn tls(&self) -> Result<TokioIo<tokio_rustls::client::TlsStream<TcpStream>>, BoxError> {
        let tcp = TcpStream::connect(self.addr).await?;
        tcp.set_nodelay(true)?;
        let name = ServerName::IpAddress(self.addr.ip().into());
        Ok(TokioIo::new(self.tls.connect(name, tcp).await?))
    }

    async fn open_h2(&self) -> Result<http2::SendRequest<Full<Bytes>>, BoxError> {
        let (sender, conn) = http2::handshake(TokioExecutor::new(), self.tls().await?).await?;
        tokio::spawn(conn);
        Ok(sender)
    }

    async fn open_h1(&self) -> Result<http1::SendRequest<Full<Bytes>>, BoxError> {
        let (sender, conn) = http1::handshake(self.tls().await?).await?;
        tokio::spawn(conn);
        Ok(sender)
    }

    fn request(method: Method, path: &str, body: Option<Bytes>) -> Request<Full<Bytes>> {
        let mut req = Request::builder().method(method).uri(path).header("accept", "application/json");
        if body.is_some() {
            req = req.header("content-type", "application/json");
        }
        req.body(Full::new(body.unwrap_or_default())).expect("a valid request")
    }

    /// Sends a request on the shared connection (HTTP/2) or a pooled one
    /// (HTTP/1.1) and reads the whole response.
    async fn send(&self, method: Method, path: &str, body: Option<Bytes>) -> Result<(StatusCode, Bytes), BoxError> {
        let req = Self::request(method, path, body);
        match self.http {
            Http::H2 => {
                let mut sender = self.h2.get_or_try_init(|| self.open_h2()).await?.clone();
                let resp = sender.send_request(req).await?;
                let status = resp.status();
                Ok((status, resp.into_body().collect().await?.to_bytes()))
            }
            Http::H1 => {
                let pooled = self.h1_pool.lock().expect("pool").pop();
                let mut sender = match pooled {
                    Some(s) if s.is_ready() => s,
                    _ => self.open_h1().await?,
                };
                sender.ready().await?;
                let resp = sender.send_request(req).await?;
                let status = resp.status();
                let body = resp.into_body().collect().await?.to_bytes();
                self.h1_pool.lock().expect("pool").push(sender);
                Ok((status, body))
            }
        }
    }

    /// Opens a connection of its own (as a separate client would) and
    /// starts a streaming GET; the response body is returned unread.
    async fn stream(&self, path: &str) -> Result<hyper::body::Incoming, BoxError> {
        let req = Self::request(Method::GET, path, None);
        let resp = match self.http {
            Http::H2 => self.open_h2().await?.send_request(req).await?,
            Http::H1 => self.open_h1().await?.send_request(req).await?,
        };
        if !resp.status().is_success() {
            return Err(format!("watch answered {}", resp.status()).into());
        }
        Ok(resp.into_body())
    }
}

impl Client {
    /// Sends one request and reads the whole response; panics on a
    /// transport error (the bench cannot go on without its server).
    pub async fn call(&self, method: Method, path: &str, body: Option<Bytes>) -> (StatusCode, Bytes) {
        match self {
            Client::Https(h) => h.send(method, path, body).await.unwrap_or_else(|e| panic!("{path}: {e}")),
            Client::InProcess(api) => {
                let mut req = Request::builder().method(method).uri(path).header("accept", "application/json");
                if body.is_some() {
                    req = req.header("content-type", "application/json");
                }
                let req = req.body(axum::body::Body::from(body.unwrap_or_default())).expect("a valid request");
                let resp = api.handle(req).await;
                let status = resp.status();
                let body = axum::body::to_bytes(resp.into_body(), usize::MAX).await.expect("response body");
                (status, body)
            }
        }
    }

    /// Starts a watch (`path` carries `watch=1`), calls `on_open` once the
    /// server has answered (the watch is registered), then `on_chunk` for
    /// every body chunk until it returns `false` or the stream ends.
    /// Returns whether the stream was still open when `on_chunk` stopped.
    pub async fn watch(&self, path: &str, on_open: impl FnOnce(), mut on_chunk: impl FnMut(&[u8]) -> bool) -> bool {
        match self {
            Client::Https(h) => {
                let body = h.stream(path).await.unwrap_or_else(|e| panic!("{path}: {e}"));
                on_open();
                drain(body, &mut on_chunk).await
            }
            Client::InProcess(api) => {
                let req = Request::builder().uri(path).body(axum::body::Body::empty()).expect("a valid request");
                let resp = api.handle(req).await;
                assert!(resp.status().is_success(), "watch answered {}", resp.status());
                on_open();
                drain(resp.into_body(), &mut on_chunk).await
            }
        }
    }
}

async fn drain<B>(mut body: B, on_chunk: &mut impl FnMut(&[u8]) -> bool) -> bool
where
    B: hyper::body::Body<Data = Bytes> + Unpin,
{
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else { return false };
        if let Some(data) = frame.data_ref() {
            if !on_chunk(data) {
                return true;
            }
        }
    }
    false
}
