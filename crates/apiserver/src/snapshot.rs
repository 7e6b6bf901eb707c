//! `GET /rkube/v1/store/snapshot`: a backup of the whole store, streamed
//! to a cluster administrator.
//!
//! Only the API server touches storage (DESIGN.md), so backups of a running
//! cluster go through it: `rkube store snapshot save FILE` calls this path
//! with the admin kubeconfig. The body is the backend's own snapshot
//! ([`rkube_store::snapshot`]): an SQLite database for the embedded store,
//! etcd's snapshot (bbolt + SHA-256 trailer) for etcd, byte for byte what
//! the store streams, never held in memory as a whole.
//!
//! Authorization is upstream's for non-resource URLs: the path and verb
//! `get` (see [`crate::authz::filter`]). `system:masters` and the
//! `cluster-admin` ClusterRole (`nonResourceURLs: ["*"]`) may; anyone else
//! needs a ClusterRole rule with `nonResourceURLs: ["/rkube/v1/store/snapshot"]`,
//! `verbs: ["get"]`. The snapshot holds every Secret (encrypted ones stay
//! encrypted, as in an etcd snapshot), so grant it like `cluster-admin`.
//!
//! Response headers: `Content-Type: application/octet-stream`,
//! `Content-Length` when the store knows the size in advance (the embedded
//! store), [`BACKEND_HEADER`] (`sqlite` or `etcd`) and [`REVISION_HEADER`]
//! (the snapshot's revision; for etcd a lower bound). A store that cannot
//! take the snapshot answers 503 ServiceUnavailable with the reason; an
//! error in the middle of the stream aborts the body, so the client sees a
//! truncated transfer rather than a short file that looks complete.

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures::StreamExt;
use rkube_apimachinery::ApiError;

use crate::router::AppState;

/// The path of the snapshot endpoint.
pub const PATH: &str = "/rkube/v1/store/snapshot";

/// Response header naming the snapshot's format: `sqlite` or `etcd`.
pub const BACKEND_HEADER: &str = "x-rkube-snapshot-backend";

/// Response header with the snapshot's store revision (resourceVersion).
pub const REVISION_HEADER: &str = "x-rkube-snapshot-revision";

/// The route: `GET` [`PATH`].
pub fn router() -> Router<AppState> {
    Router::new().route(PATH, get(snapshot))
}

/// Streams a snapshot of the store.
async fn snapshot(State(state): State<AppState>) -> Response {
    let snap = match state.store.snapshot().await {
        Ok(snap) => snap,
        Err(e) => {
            tracing::warn!(component = crate::COMPONENT, error = %e, "store snapshot failed");
            return crate::status::error_response(&ApiError::ServiceUnavailable(format!(
                "cannot take a snapshot of the store: {e}"
            )));
        }
    };
    tracing::info!(component = crate::COMPONENT, backend = %snap.format, revision = snap.revision,
        bytes = ?snap.size, "streaming a store snapshot");
    let format = snap.format;
    let data = snap.data.map(move |chunk| {
        chunk.map_err(|e| {
            tracing::warn!(component = crate::COMPONENT, backend = %format, error = %e,
                "store snapshot failed while streaming; the client gets a truncated body");
            std::io::Error::other(e)
        })
    });
    let mut resp = (StatusCode::OK, Body::from_stream(data)).into_response();
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Some(size) = snap.size {
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(size));
    }
    headers.insert(BACKEND_HEADER, HeaderValue::from_static(format.as_str()));
    headers.insert(REVISION_HEADER, HeaderValue::from(snap.revision));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authn::UserInfo;
    use crate::authz::filter::request_attributes;
    use axum::http::Method;

    #[test]
    fn the_snapshot_path_is_a_non_resource_get() {
        let attrs = request_attributes(&UserInfo::anonymous(), &Method::GET, PATH, None);
        assert!(!attrs.resource_request);
        assert_eq!((attrs.verb.as_str(), attrs.path.as_str()), ("get", PATH));
    }
}
