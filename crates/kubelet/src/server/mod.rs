//! The kubelet's HTTPS API (upstream `pkg/kubelet/server`), on
//! `0.0.0.0:10250` by default: what the API server calls for pod logs,
//! exec, attach and port-forward, and what metrics consumers read.
//!
//! | path | what |
//! | --- | --- |
//! | `/healthz` | `ok` |
//! | `/pods` | `PodList` of the pods bound to this node |
//! | `/containerLogs/{ns}/{pod}/{container}` | the container's log ([`crate::logs`]) |
//! | `/exec/{ns}/{pod}/{container}`, `/attach/…` | streams through the runtime's streaming server ([`streaming`]) |
//! | `/portForward/{ns}/{pod}` | SPDY port-forward through the runtime |
//! | `/stats/summary` | node and pod usage, upstream's `Summary` JSON ([`stats`]) |
//! | `/metrics/resource` | the same as Prometheus text (feeds metrics-server / `kubectl top`) |
//!
//! Every request is authenticated (a client certificate signed by the
//! cluster CA, or a bearer token through a TokenReview) and authorized by a
//! SubjectAccessReview on `nodes/<subresource>` ([`auth`]), as upstream's
//! webhook mode.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::Request;
use axum::routing::{any, get};
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo};

use crate::cri::CriClient;

pub mod auth;
pub mod containers;
pub mod spdy;
pub mod stats;
pub mod streaming;
pub mod tls;

pub use tls::issue_serving_cert;

/// The kubelet's default API port (`--port`).
pub const DEFAULT_PORT: u16 = 10250;

/// What the kubelet API server needs.
#[derive(Clone)]
pub struct KubeletServerConfig {
    /// Address to listen on (upstream `--address` 0.0.0.0).
    pub address: std::net::IpAddr,
    /// Port ([`DEFAULT_PORT`]; 0 picks a free one, for tests).
    pub port: u16,
    /// This node's name (the SubjectAccessReview's `nodes/<name>`, the
    /// `/pods` field selector).
    pub node_name: String,
    /// Serving certificate (chain) PEM, e.g. from [`issue_serving_cert`].
    pub serving_cert_pem: String,
    /// Its private key PEM.
    pub serving_key_pem: String,
    /// The CA that signs accepted client certificates (the cluster CA).
    pub client_ca_pem: String,
    /// The API client for TokenReview, SubjectAccessReview and `/pods`.
    pub client: kube::Client,
    /// The container runtime.
    pub cri: CriClient,
}

impl std::fmt::Debug for KubeletServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeletServerConfig")
            .field("address", &self.address)
            .field("port", &self.port)
            .field("node_name", &self.node_name)
            .finish_non_exhaustive()
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The TLS material is unusable.
    #[error("kubelet server TLS: {0}")]
    Tls(String),
    /// The port could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Shared state of the handlers.
pub(crate) struct State {
    pub(crate) node_name: String,
    pub(crate) client: kube::Client,
    pub(crate) cri: CriClient,
    pub(crate) authz: auth::DecisionCache,
    pub(crate) cpu: stats::CpuSampler,
}

pub(crate) type AppState = Arc<State>;

/// The routes, behind authentication and authorization.
fn router(state: AppState) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/pods", get(containers::pods))
        .route("/containerLogs/{namespace}/{pod}/{container}", get(containers::container_logs))
        .route("/exec/{namespace}/{pod}/{container}", any(streaming::exec))
        .route("/attach/{namespace}/{pod}/{container}", any(streaming::attach))
        .route("/portForward/{namespace}/{pod}", any(streaming::port_forward))
        .route("/stats/summary", get(stats::summary))
        .route("/metrics/resource", get(stats::metrics_resource))
        .fallback(|| async { text(axum::http::StatusCode::NOT_FOUND, "404 page not found\n") })
        .layer(axum::middleware::from_fn_with_state(state.clone(), auth::filter))
        .with_state(state)
}

/// Binds the listener now (so a port conflict is reported at once) and
/// returns it with the bound address.
pub async fn bind(cfg: &KubeletServerConfig) -> Result<(tokio::net::TcpListener, SocketAddr), ServerError> {
    let addr = SocketAddr::new(cfg.address, cfg.port);
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|source| ServerError::Bind { addr, source })?;
    let local = listener.local_addr().map_err(|source| ServerError::Bind { addr, source })?;
    Ok((listener, local))
}

/// Serves the kubelet API on `cfg.address:cfg.port` until `stop` turns
/// true. Errors: unusable TLS material, the port cannot be bound.
pub async fn serve(cfg: KubeletServerConfig, stop: tokio::sync::watch::Receiver<bool>) -> Result<(), ServerError> {
    let (listener, _) = bind(&cfg).await?;
    serve_on(listener, cfg, stop).await
}

/// [`serve`] on an already bound listener.
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    cfg: KubeletServerConfig,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Result<(), ServerError> {
    let tls = tls::server_config(&cfg.serving_cert_pem, &cfg.serving_key_pem, &cfg.client_ca_pem)?;
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let state = Arc::new(State {
        node_name: cfg.node_name.clone(),
        client: cfg.client.clone(),
        cri: cfg.cri.clone(),
        authz: auth::DecisionCache::default(),
        cpu: stats::CpuSampler::default(),
    });
    let app = router(state);
    tracing::info!(component = "kubelet", addr = ?listener.local_addr().ok(), "kubelet API server listening");
    // Connections already accepted run on until their clients leave (a
    // `logs -f` or exec session is not cut by a stop).
    loop {
        if *stop.borrow_and_update() {
            tracing::info!(component = "kubelet", "kubelet API server stopped");
            return Ok(());
        }
        let (tcp, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(component = "kubelet", error = %e, "kubelet API: accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            },
            changed = stop.changed() => {
                if changed.is_err() {
                    tracing::info!(component = "kubelet", "kubelet API server stopped");
                    return Ok(());
                }
                continue;
            }
        };
        let acceptor = acceptor.clone();
        let app = app.clone();
        tokio::spawn(async move {
            let tls = match acceptor.accept(tcp).await {
                Ok(t) => t,
                Err(e) => {
                    tracing::debug!(component = "kubelet", %remote, error = %e, "kubelet API: TLS handshake failed");
                    return;
                }
            };
            let peer = tls.get_ref().1.peer_certificates().and_then(|c| c.first()).map(|c| c.to_vec());
            let identity = peer.as_deref().and_then(auth::user_from_certificate);
            let service = hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
                req.extensions_mut().insert(auth::PeerIdentity(identity.clone()));
                let app = app.clone();
                async move {
                    use tower_service::Service;
                    let mut app = app;
                    app.call(req.map(axum::body::Body::new)).await
                }
            });
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            if let Err(e) = builder.serve_connection_with_upgrades(TokioIo::new(tls), service).await {
                tracing::debug!(component = "kubelet", %remote, error = %e, "kubelet API connection ended");
            }
        });
    }
}

/// A plain-text response with `code` and `body` as is (upstream's
/// `WriteErrorString`; callers add the newline where upstream's `http.Error`
/// would).
pub(crate) fn text(code: axum::http::StatusCode, body: impl Into<String>) -> axum::response::Response {
    let body = body.into();
    axum::response::Response::builder()
        .status(code)
        .header("content-type", "text/plain; charset=utf-8")
        .header("x-content-type-options", "nosniff")
        .body(axum::body::Body::from(body))
        .expect("a valid response")
}

/// Makes `Request` usable in handlers without repeating the import.
pub(crate) type Req = Request;
