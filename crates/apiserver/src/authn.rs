//! The first line of authentication: who may reach what before RBAC exists.
//!
//! Upstream authenticates every request (x509 client certificates signed by
//! the cluster CA, bearer tokens, …) and treats the rest as
//! `system:anonymous`, whom the default RBAC policy allows only the public
//! information endpoints (`system:public-info-viewer`: `/version`,
//! `/healthz`, `/livez`, `/readyz`). Until the security item brings the
//! full authenticator chain and RBAC, rkube applies that default outcome
//! directly: a client that presented a certificate the TLS layer verified
//! against the cluster CA ([`PeerCertificates`]) is let through, and an
//! anonymous one is refused everything but the public endpoints (which are
//! routed outside this layer) with upstream's 403.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use rkube_apimachinery::{ApiError, GroupResource};

use crate::tls::PeerCertificates;

/// Middleware: passes requests that carry a verified client certificate;
/// answers anonymous ones with a 403 `Status` in upstream's wording for
/// non-resource requests (`forbidden: User "system:anonymous" cannot get
/// path "/api"`).
pub async fn deny_anonymous(req: Request, next: Next) -> Response {
    if req.extensions().get::<PeerCertificates>().is_some() {
        return next.run(req).await;
    }
    let verb = req.method().as_str().to_ascii_lowercase();
    let path = req.uri().path().to_string();
    tracing::debug!(component = crate::COMPONENT, %verb, %path, "refused an anonymous request");
    crate::status::error_response(&anonymous_forbidden(&verb, &path))
}

/// The 403 upstream's RBAC gives `system:anonymous` for a path it may not use.
fn anonymous_forbidden(verb: &str, path: &str) -> ApiError {
    ApiError::Forbidden {
        resource: GroupResource::default(),
        name: String::new(),
        message: format!("forbidden: User \"system:anonymous\" cannot {verb} path \"{path}\""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anonymous_refusal_reads_like_upstream_rbac() {
        let status = anonymous_forbidden("get", "/api").to_status();
        assert_eq!(status["code"], 403);
        assert_eq!(status["reason"], "Forbidden");
        assert_eq!(status["message"], "forbidden: User \"system:anonymous\" cannot get path \"/api\"");
        assert_eq!(status["details"], serde_json::json!({}));
    }
}
