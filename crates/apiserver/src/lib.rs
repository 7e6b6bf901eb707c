//! The Kubernetes API server: HTTPS only, the one component that touches
//! storage.
//!
//! Modules:
//! - [`tls`]: rustls configuration (TLS 1.2/1.3, ALPN h2 + http/1.1,
//!   optional client certificates verified against the cluster CA) and the
//!   per-connection [`tls::PeerCertificates`] request extension;
//! - [`listener`]: the accept loop, HTTP/1.1 + HTTP/2 via hyper-util, and
//!   graceful shutdown;
//! - [`router`]: the routes;
//! - [`authn`]: who is asking (client certificates, bearer tokens, service
//!   account and bootstrap tokens, impersonation; the result attached to
//!   the request as [`authn::UserInfo`]; bad credentials get a 401);
//! - [`authz`]: authorization — the filter every request passes, the
//!   authorizer chain (system:masters, Node, RBAC) the access reviews ask,
//!   the bootstrap RBAC policy and escalation prevention;
//! - [`serviceaccount`]: signing and verifying service-account tokens;
//! - [`filters`]: the in-flight limits (429 beyond them) and the request
//!   instrumentation every request passes;
//! - [`metrics`]: `/metrics` in the Prometheus text format;
//! - [`metrics_api`]: the resource metrics API `metrics.k8s.io` (a
//!   built-in metrics-server scraping the kubelets; `kubectl top`);
//! - [`discovery`]: `/api`, `/apis` and the group and group-version
//!   discovery documents, generated from the resource registry;
//! - [`health`]: `/healthz`, `/livez`, `/readyz` in upstream's format;
//! - [`openapi`]: `/openapi/v2` and `/openapi/v3` documents generated from
//!   the types, with upstream's caching headers;
//! - [`rest`]: the resource API (request routing, a handler per verb,
//!   content negotiation, watch streaming);
//! - [`storage`]: the generic registry store over the storage contract
//!   (keys, resourceVersion semantics, strategies, finalizers, watch);
//! - [`cache`]: the watch cache in front of the store (one store watch per
//!   resource fanned out to every API watch; lists from memory);
//! - [`audit`]: the audit log (`--audit-policy-file`, `--audit-log-path`),
//!   a middleware right after authentication;
//! - [`encryption`]: encryption at rest of the configured resources
//!   (`--encryption-provider-config`), a wrapper around the store;
//! - [`snapshot`]: `GET /rkube/v1/store/snapshot`, a backup of the store
//!   streamed to cluster admins;
//! - [`controlplane`]: `GET /rkube/v1/bootstrap/control-plane`, the CA and
//!   service-account keys for servers joining with a control-plane token;
//! - [`status`]: the one place an API error becomes a `Status` response;
//! - [`bootstrap`]: the objects the API server keeps itself (the
//!   `kubernetes` Service and endpoints, system PriorityClasses, the
//!   identity Lease);
//! - [`masterleases`]: the lease endpoint reconciler, so that the
//!   `kubernetes` endpoints list every live API server on the datastore.
//!
//! Usage: [`ApiServer::bind`] (fails fast on a taken port), then
//! [`ApiServer::serve`] with a shutdown future. [`ApiServer::health`] lets
//! the caller wait until `/readyz` would pass.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use rkube_store::SharedStore;

pub mod admission;
pub mod audit;
pub mod authn;
pub mod authz;
pub mod bootstrap;
pub mod cache;
pub mod controlplane;
pub mod discovery;
pub mod encryption;
pub mod filters;
pub mod health;
pub mod listener;
pub mod masterleases;
pub mod metrics;
pub mod metrics_api;
pub mod openapi;
pub mod rest;
pub mod router;
pub mod serviceaccount;
pub mod snapshot;
pub mod status;
pub mod storage;
#[cfg(test)]
mod testing;
pub mod tls;

pub use health::Health;
pub use tls::{PeerCertificates, TlsMaterial};

/// The `component` field of this crate's log events.
pub const COMPONENT: &str = "apiserver";

/// Default time in-flight requests get to finish at shutdown.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Errors of starting the API server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The listen address could not be bound (in use, not local, privileged port …).
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The OS error; its kind tells which case it is.
        source: std::io::Error,
    },
    /// The TLS material is unusable; the message says which part.
    #[error("TLS setup failed: {0}")]
    Tls(String),
}

/// Everything the API server needs.
pub struct Config {
    /// Where to listen, e.g. `0.0.0.0:6443`.
    pub bind_address: SocketAddr,
    /// Serving certificate, key and client CA.
    pub tls: TlsMaterial,
    /// The cluster state.
    pub store: SharedStore,
    /// How long in-flight requests may take to finish at shutdown.
    pub shutdown_grace: Duration,
    /// Service CIDR, advertise address, event TTL.
    pub cluster: bootstrap::ClusterConfig,
    /// `--max-requests-inflight` and `--max-mutating-requests-inflight`.
    pub inflight: filters::InflightLimits,
}

/// A bound, not yet serving, API server.
pub struct ApiServer {
    listener: listener::TlsListener,
    health: Health,
    store: SharedStore,
    api: std::sync::Arc<rest::Api>,
    bootstrapped: bool,
    shutdown_grace: Duration,
    hostname: String,
    filters: std::sync::Arc<filters::Filters>,
}

impl ApiServer {
    /// Validates the TLS material and binds the listen address.
    pub async fn bind(config: Config) -> Result<Self, Error> {
        let tls = tls::server_config(&config.tls)?;
        let listener = listener::TlsListener::bind(config.bind_address, tls).await?;
        let registry = rkube_apimachinery::registry::Registry::served();
        let mut cluster = config.cluster.clone();
        if cluster.advertise_port == 0 {
            cluster.advertise_port = listener.local_addr().port();
        }
        // The x509 authenticator verifies client certificates against the
        // same CA the TLS layer hints (see tls::server_config).
        let authenticator = cluster.authenticator.with_client_ca(&config.tls.client_ca_pem).map_err(Error::Tls)?;
        cluster.authenticator = std::sync::Arc::new(authenticator);
        let hostname = cluster.hostname.clone().unwrap_or_else(bootstrap::hostname);
        let api = std::sync::Arc::new(rest::Api::with_cluster(registry, config.store.clone(), cluster));
        let bootstrapped = bootstrap(&api).await;
        let filters = std::sync::Arc::new(filters::Filters::new(config.inflight, api.registry().clone()));
        Ok(ApiServer {
            listener,
            health: Health::new(config.store.clone()),
            store: config.store,
            api,
            bootstrapped,
            shutdown_grace: config.shutdown_grace,
            hostname,
            filters,
        })
    }

    /// The bound address (with the real port when port 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr()
    }

    /// A handle on the health checks (e.g. to wait until `/readyz` passes).
    pub fn health(&self) -> Health {
        self.health.clone()
    }

    /// Serves until `shutdown` resolves; then `/readyz` starts failing, the
    /// listener closes and in-flight requests get the grace period to finish.
    pub async fn serve(self, shutdown: impl Future<Output = ()>) {
        let ApiServer { listener, health, store, api, bootstrapped, shutdown_grace, hostname, filters } = self;
        tracing::info!(component = COMPONENT, address = %listener.local_addr(), "serving HTTPS (HTTP/2 and HTTP/1.1)");
        let retry = (!bootstrapped).then(|| {
            let api = api.clone();
            tokio::spawn(async move {
                while !bootstrap(&api).await {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            })
        });
        let lease = tokio::spawn(bootstrap::run_control_loops(api.clone(), hostname));
        let metrics_scraper = tokio::spawn(metrics_api::scrape::run(api.clone()));
        let stopping = api.clone();
        let withdrawing = api.clone();
        let app = router::router(router::AppState { store, health: health.clone(), api, filters });
        let shutdown = async move {
            shutdown.await;
            health.start_shutdown();
            // End open watches now so their connections drain at once.
            stopping.start_shutdown();
        };
        listener.serve(app, shutdown, shutdown_grace).await;
        if let Some(task) = retry {
            task.abort();
        }
        lease.abort();
        metrics_scraper.abort();
        // Leave the `kubernetes` Service's endpoints to the other servers.
        match tokio::time::timeout(Duration::from_secs(5), masterleases::withdraw(&withdrawing)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(component = COMPONENT, error = %e, "cannot remove this API server's lease"),
            Err(_) => tracing::warn!(component = COMPONENT, "removing this API server's lease timed out"),
        }
        tracing::info!(component = COMPONENT, "API server stopped");
    }
}

/// Creates the system namespaces and objects ([`rest::Api::bootstrap`]);
/// false (after logging why) when the store did not answer, so the caller
/// retries.
async fn bootstrap(api: &rest::Api) -> bool {
    match tokio::time::timeout(Duration::from_secs(5), api.bootstrap()).await {
        Ok(Ok(())) => true,
        Ok(Err(e)) => {
            tracing::warn!(component = COMPONENT, error = %e, "cannot create the system namespaces and objects yet; retrying");
            false
        }
        Err(_) => {
            tracing::warn!(component = COMPONENT, "creating the system namespaces and objects timed out; retrying");
            false
        }
    }
}
