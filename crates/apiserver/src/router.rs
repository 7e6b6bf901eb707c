//! The HTTP routes of the API server.
//!
//! `/version`, `/metrics`, the health endpoints, discovery, and the resource API
//! ([`crate::rest`]) as the fallback for every other path (a Kubernetes
//! `Status` 404 for paths that name no resource).

use std::sync::Arc;

use axum::extract::{Path, RawQuery, Request, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use rkube_apimachinery::version::Info;
use rkube_store::SharedStore;

use crate::filters::Filters;
use crate::health::{self, Endpoint, Health};
use crate::status::StatusError;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    /// The cluster state.
    pub store: SharedStore,
    /// Health checks (shared with the process that waits for readiness).
    pub health: Health,
    /// The resource API (`/api/v1/...`, `/apis/{group}/{version}/...`).
    pub api: Arc<crate::rest::Api>,
    /// The in-flight limits and the request metrics.
    pub filters: Arc<Filters>,
}

/// Builds the router over `state`: every request gets its audit ID
/// ([`crate::audit::init`]), is authenticated ([`crate::authn::authenticate`]),
/// audited ([`crate::audit::audit`]), impersonation is applied
/// ([`crate::authn::impersonate`]), then it passes the filters
/// ([`crate::filters::filter`]: in-flight limits and request metrics), then
/// authorization ([`crate::authz::filter::authorize`]).
pub fn router(state: AppState) -> Router {
    let filters = state.filters.clone();
    let api = state.api.clone();
    let audit = state.api.cluster().audit.clone();
    Router::new()
        .route("/version", get(version))
        .route("/version/", get(version))
        .route("/healthz", get(|s, q| root(s, q, Endpoint::Healthz)))
        .route("/livez", get(|s, q| root(s, q, Endpoint::Livez)))
        .route("/readyz", get(|s, q| root(s, q, Endpoint::Readyz)))
        .route("/healthz/{check}", get(|s, p| single(s, p, Endpoint::Healthz)))
        .route("/livez/{check}", get(|s, p| single(s, p, Endpoint::Livez)))
        .route("/readyz/{check}", get(|s, p| single(s, p, Endpoint::Readyz)))
        .merge(api_routes(&state))
        .with_state(state)
        // Every path, health and /version included, is authorized (crate::authz::filter).
        .layer(axum::middleware::from_fn_with_state(api.clone(), crate::authz::filter::authorize))
        .layer(axum::middleware::from_fn_with_state(filters, crate::filters::filter))
        // Impersonation inside auditing, so refusals are audited (upstream's WithImpersonation).
        .layer(axum::middleware::from_fn_with_state(api.clone(), crate::authn::impersonate))
        // Audited right after authentication, as upstream's WithAudit (crate::audit).
        .layer(axum::middleware::from_fn_with_state(audit.clone(), crate::audit::audit))
        .layer(axum::middleware::from_fn_with_state(api, crate::authn::authenticate))
        // Outermost: the audit ID of every request, and the audit of failed
        // authentications (upstream's WithAuditInit, WithFailedAuthenticationAudit).
        .layer(axum::middleware::from_fn_with_state(audit, crate::audit::init))
}

/// Discovery, OpenAPI, `/metrics` and the resource API.
fn api_routes(state: &AppState) -> Router<AppState> {
    Router::new()
        // Prometheus metrics (upstream: system:monitoring and admins).
        .route("/metrics", get(metrics))
        // Store backups for cluster admins: GET /rkube/v1/store/snapshot.
        .merge(crate::snapshot::router())
        // Key material for joining servers: GET /rkube/v1/bootstrap/control-plane.
        .merge(crate::controlplane::router())
        // Discovery: /api, /apis, /api/{v}, /apis/{g}, /apis/{g}/{v}.
        .merge(crate::discovery::router(Arc::new(crate::discovery::Discovery::new(state.api.registry()))))
        // OpenAPI: /openapi/v2, /openapi/v3, /openapi/v3/{*key}.
        // The served registry: its metrics.k8s.io group-version (no schemas
        // yet) gets a document with its discovery path.
        .merge(crate::openapi::router(std::sync::Arc::new(crate::openapi::OpenApi::new(
            state.api.registry().resources(),
        ))))
        .fallback(resources)
}

/// `GET /metrics`: the Prometheus text exposition ([`crate::metrics`]).
async fn metrics(State(state): State<AppState>) -> Response {
    let gauges = state.filters.gauges(state.api.storage_object_counts());
    ([(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)], state.filters.metrics.render(&gauges)).into_response()
}

/// `GET /version`: `version.Info` as indented JSON, like upstream's
/// `responsewriters.WriteRawJSON`.
async fn version() -> Response {
    let body = serde_json::to_string_pretty(&Info::current()).expect("version info always serializes");
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn root(State(state): State<AppState>, RawQuery(query): RawQuery, endpoint: Endpoint) -> Response {
    health::root(&state.health, endpoint, query.as_deref()).await
}

async fn single(State(state): State<AppState>, Path(check): Path<String>, endpoint: Endpoint) -> Response {
    match health::single(&state.health, endpoint, &check).await {
        Some(resp) => resp,
        None => StatusError::path_not_found().into_response(),
    }
}

/// Every path not routed above: the resource API (404 Status for paths
/// that name no resource).
async fn resources(State(state): State<AppState>, req: Request) -> Response {
    state.api.handle(req).await
}
