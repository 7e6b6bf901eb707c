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
//!
//! The user a certificate names is upstream's x509 mapping: the subject's
//! common name is the user name, each organization a group, and every
//! authenticated user also gets `system:authenticated`. It travels with
//! the request as a [`UserInfo`] extension for the reviews and, later, RBAC.

use std::collections::BTreeMap;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use rkube_apimachinery::{ApiError, GroupResource};

use crate::tls::PeerCertificates;

/// The group every authenticated user belongs to.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";
/// The group whose members bypass authorization and the in-flight limits
/// (upstream's `user.SystemPrivilegedGroup`).
pub const MASTERS_GROUP: &str = "system:masters";
/// The user name of unauthenticated requests.
pub const ANONYMOUS_USER: &str = "system:anonymous";
/// The group of unauthenticated requests.
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";

/// Who made a request (upstream's `user.Info`): the identity the
/// authenticator established, as the reviews report it and authorizers
/// consume it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// The user name (`system:admin`, `system:serviceaccount:ns:name`).
    pub name: String,
    /// A unique id; empty for certificate users, as upstream.
    pub uid: String,
    /// Groups, in the authenticator's order, `system:authenticated` last.
    pub groups: Vec<String>,
    /// Extra attributes (e.g. `authentication.kubernetes.io/credential-id`).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// The user a client certificate (DER) names: CN → name, every O →
    /// a group, then `system:authenticated` (upstream's
    /// `CommonNameUserConversion` plus its authenticated-group adder).
    /// `None` when the certificate does not parse.
    pub fn from_certificate(der: &[u8]) -> Option<UserInfo> {
        let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
        let subject = cert.subject();
        let name = subject.iter_common_name().next().and_then(|cn| cn.as_str().ok()).unwrap_or("").to_string();
        let mut groups: Vec<String> =
            subject.iter_organization().filter_map(|o| o.as_str().ok()).map(str::to_string).collect();
        add_authenticated_group(&mut groups);
        Some(UserInfo { name, uid: String::new(), groups, extra: BTreeMap::new() })
    }

    /// `system:anonymous` in `system:unauthenticated`: a request without
    /// credentials.
    pub fn anonymous() -> UserInfo {
        UserInfo { name: ANONYMOUS_USER.into(), groups: vec![UNAUTHENTICATED_GROUP.into()], ..UserInfo::default() }
    }

    /// `{username, uid, groups, extra}` as authentication.k8s.io/v1
    /// `UserInfo` serializes it (every field omitted when empty).
    pub fn to_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        if !self.name.is_empty() {
            m.insert("username".into(), self.name.clone().into());
        }
        if !self.uid.is_empty() {
            m.insert("uid".into(), self.uid.clone().into());
        }
        if !self.groups.is_empty() {
            m.insert("groups".into(), self.groups.clone().into());
        }
        if !self.extra.is_empty() {
            m.insert("extra".into(), serde_json::json!(self.extra));
        }
        serde_json::Value::Object(m)
    }
}

/// Appends `system:authenticated` unless present (upstream's
/// `AuthenticatedGroupAdder`).
pub fn add_authenticated_group(groups: &mut Vec<String>) {
    if !groups.iter().any(|g| g == AUTHENTICATED_GROUP) {
        groups.push(AUTHENTICATED_GROUP.to_string());
    }
}

/// Middleware, outermost: attaches the [`UserInfo`] a verified client
/// certificate names as a request extension (upstream's `WithAuthentication`
/// runs before the in-flight limits, which exempt `system:masters`).
/// Requests without a certificate get none and stay anonymous.
pub async fn authenticate(mut req: Request, next: Next) -> Response {
    if let Some(peer) = req.extensions().get::<PeerCertificates>() {
        // The TLS layer verified the chain, so the leaf parses; an
        // unparsable one still counts as authenticated, with an empty name.
        let user = UserInfo::from_certificate(peer.leaf())
            .unwrap_or_else(|| UserInfo { groups: vec![AUTHENTICATED_GROUP.to_string()], ..UserInfo::default() });
        req.extensions_mut().insert(user);
    }
    next.run(req).await
}

/// Middleware: passes requests that [`authenticate`] gave a [`UserInfo`];
/// answers anonymous ones with a 403 `Status` in upstream's wording for
/// non-resource requests (`forbidden: User "system:anonymous" cannot get
/// path "/api"`).
pub async fn deny_anonymous(req: Request, next: Next) -> Response {
    if req.extensions().get::<UserInfo>().is_some() {
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

    use crate::testing::pki;

    #[test]
    fn the_admin_certificate_names_system_admin_in_system_masters() {
        let (_dir, pki) = pki();
        let (_, pem) = x509_parser::pem::parse_x509_pem(pki.admin.cert_pem.as_bytes()).unwrap();
        let user = UserInfo::from_certificate(&pem.contents).unwrap();
        assert_eq!(user.name, "system:admin");
        assert_eq!(user.groups, ["system:masters", "system:authenticated"]);
        assert_eq!(user.uid, "");
        assert_eq!(
            user.to_json(),
            serde_json::json!({"username": "system:admin", "groups": ["system:masters", "system:authenticated"]})
        );
        assert_eq!(UserInfo::from_certificate(b"not a certificate"), None);
        // The PKI's service-account key is the ES256 key tokens are signed with.
        let issuer =
            crate::serviceaccount::TokenIssuer::from_pkcs8_pem(&pki.service_account_key_pem, "https://i").unwrap();
        assert_eq!(issuer.issuer(), "https://i");
    }
}
