//! Upgrade pass-through: upstream's `UpgradeAwareHandler.tryUpgrade`. The
//! API server never parses what is spoken after the upgrade (SPDY/3.1 of
//! exec, attach and port-forward, WebSocket v4 and older, any protocol
//! through `proxy`): it sends the client's request with its headers (and
//! `X-Forwarded-For` appended) to the backend, and then
//! - a `101 Switching Protocols` goes back to the client with the
//!   backend's headers, after which bytes are copied both ways until one
//!   side ends;
//! - an error status (400 and up) goes back as the backend sent it;
//! - any other status is upstream's 500 `invalid upgrade response: status
//!   code N`;
//! - a backend that cannot be reached is a 500 `error dialing backend: …`
//!   before any upgrade.

use std::net::SocketAddr;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;
use hyper_util::rt::TokioIo;
use rkube_apimachinery::ApiError;

use super::backend::Backend;

/// Sends the upgrade request `method path_and_query` with `headers` to
/// `backend` and answers the client as upstream does (see the module
/// docs); `client` is the client connection's upgrade handle.
pub async fn pass_through(
    backend: &Backend,
    method: Method,
    path_and_query: &str,
    headers: HeaderMap,
    remote: Option<SocketAddr>,
    client: Option<hyper::upgrade::OnUpgrade>,
) -> Result<Response, ApiError> {
    let mut response = match send_upgrade(backend, method, path_and_query, headers, remote).await? {
        Ok(switched) => switched,
        Err(answer) => return Ok(answer),
    };
    let Some(client) = client else {
        return Err(ApiError::Internal("request connection cannot be hijacked".into()));
    };
    let backend_upgrade = hyper::upgrade::on(&mut response);
    let mut out = Response::new(Body::empty());
    *out.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    *out.headers_mut() = response.headers().clone();
    tokio::spawn(async move {
        let (client, backend) = match tokio::join!(client, backend_upgrade) {
            (Ok(c), Ok(b)) => (c, b),
            (c, b) => {
                tracing::debug!(component = crate::COMPONENT, client = ?c.err(), backend = ?b.err(), "upgrade failed");
                return;
            }
        };
        let (mut client, mut backend) = (TokioIo::new(client), TokioIo::new(backend));
        if let Err(e) = tokio::io::copy_bidirectional(&mut client, &mut backend).await {
            tracing::debug!(component = crate::COMPONENT, error = %e, "upgraded connection ended");
        }
    });
    Ok(out)
}

/// Sends an upgrade request to `backend` (with `X-Forwarded-For`
/// appended): `Ok(Ok(response))` for its `101 Switching Protocols`,
/// `Ok(Err(answer))` for an error status (400 and up) passed back as the
/// backend sent it, and upstream's 500s for any other status or a backend
/// that cannot be reached.
pub async fn send_upgrade(
    backend: &Backend,
    method: Method,
    path_and_query: &str,
    mut headers: HeaderMap,
    remote: Option<SocketAddr>,
) -> Result<Result<hyper::Response<hyper::body::Incoming>, Response>, ApiError> {
    append_forwarded_for(&mut headers, remote);
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(path_and_query)
        .body(Body::empty())
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    *request.headers_mut() = headers;
    let response = backend.send(request).await.map_err(|e| ApiError::Generic {
        code: 500,
        reason: "",
        message: format!("error dialing backend: {e}"),
    })?;
    let status = response.status();
    if status == StatusCode::SWITCHING_PROTOCOLS {
        return Ok(Ok(response));
    }
    if status.as_u16() < 400 {
        return Err(ApiError::Generic {
            code: 500,
            reason: "",
            message: format!("invalid upgrade response: status code {}", status.as_u16()),
        });
    }
    let (parts, body) = response.into_parts();
    Ok(Err(Response::from_parts(parts, Body::new(body))))
}

/// Upstream's `AppendForwardedForHeader`: the client's IP after any
/// earlier `X-Forwarded-For` values.
pub fn append_forwarded_for(headers: &mut HeaderMap, remote: Option<SocketAddr>) {
    let Some(remote) = remote else { return };
    let prior: Vec<String> =
        headers.get_all("x-forwarded-for").iter().filter_map(|v| v.to_str().ok()).map(str::to_string).collect();
    let ip = remote.ip().to_string();
    let value = if prior.is_empty() { ip } else { format!("{}, {ip}", prior.join(", ")) };
    if let Ok(v) = HeaderValue::from_str(&value) {
        headers.insert("x-forwarded-for", v);
    }
}

/// Whether `headers` ask for an upgrade (`Connection` names `upgrade`).
pub fn is_upgrade(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.to_ascii_lowercase().contains("upgrade"))
}
