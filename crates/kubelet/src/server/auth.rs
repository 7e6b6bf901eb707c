//! Authentication and authorization of kubelet API requests, as upstream's
//! kubelet in webhook mode (`pkg/kubelet/server/auth.go`):
//!
//! - the user is the verified client certificate's (CN = name, each O = a
//!   group), or else the bearer token's, asked of the API server with a
//!   TokenReview; neither is 401 `Unauthorized` (anonymous requests are
//!   off, as kubeadm configures kubelets);
//! - the request becomes attributes on `nodes/<this node>`: the verb from
//!   the HTTP method (GET/HEAD `get`, POST `create`, PUT `update`, PATCH
//!   `patch`, DELETE `delete`) and a subresource from the path (`/stats…`
//!   `stats`, `/metrics…` `metrics`, `/logs…` `log`, everything else
//!   `proxy`; with 1.33's `KubeletFineGrainedAuthz` (beta, on) `/pods` and
//!   `/healthz` first try `pods`/`healthz`, then `proxy`);
//! - each is asked of the API server with a SubjectAccessReview; none
//!   allowed is 403 `Forbidden (user=…, verb=…, resource=nodes,
//!   subresource(s)=[…])`.
//!
//! Decisions are cached as upstream's webhook authorizer does (allowed 5
//! min, denied 30 s).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec};

use super::{text, AppState, Req};

/// How long an allowed decision is reused.
const ALLOWED_TTL: Duration = Duration::from_secs(300);
/// How long a denied decision is reused.
const DENIED_TTL: Duration = Duration::from_secs(30);

/// An authenticated user.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct User {
    /// The user name.
    pub name: String,
    /// Its UID (token users).
    pub uid: String,
    /// Its groups, `system:authenticated` included.
    pub groups: Vec<String>,
}

/// The identity of the TLS connection's client certificate, if any
/// (request extension set per connection).
#[derive(Debug, Clone)]
pub struct PeerIdentity(pub Option<User>);

/// The user of a client certificate (already verified against the CA):
/// CN is the name, each O a group, plus `system:authenticated`. `None`
/// when the certificate has no CN.
pub fn user_from_certificate(der: &[u8]) -> Option<User> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = cert.subject();
    let name = subject.iter_common_name().next()?.as_str().ok()?.to_string();
    let mut groups: Vec<String> =
        subject.iter_organization().filter_map(|o| o.as_str().ok().map(str::to_string)).collect();
    groups.push("system:authenticated".into());
    Some(User { name, uid: String::new(), groups })
}

/// The authorization attributes of a request: the verb and the
/// subresources to try in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attributes {
    /// The API verb.
    pub verb: &'static str,
    /// Subresources of `nodes` to try, the first allowed wins.
    pub subresources: Vec<&'static str>,
}

/// Maps a request to its attributes, as upstream's
/// `nodeAuthorizerAttributesGetter` (with fine-grained authz on).
pub fn attributes(method: &Method, path: &str) -> Attributes {
    let verb = match *method {
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        _ => "get",
    };
    let under = |prefix: &str| path == prefix || path.starts_with(&format!("{prefix}/"));
    let subresources = if under("/stats") {
        vec!["stats"]
    } else if under("/metrics") {
        vec!["metrics"]
    } else if under("/logs") {
        vec!["log"]
    } else if under("/pods") {
        vec!["pods", "proxy"]
    } else if under("/healthz") {
        vec!["healthz", "proxy"]
    } else {
        vec!["proxy"]
    };
    Attributes { verb, subresources }
}

/// Upstream's 403 message (with its newline).
pub fn forbidden_message(user: &str, attrs: &Attributes) -> String {
    format!(
        "Forbidden (user={user}, verb={}, resource=nodes, subresource(s)=[{}])\n",
        attrs.verb,
        attrs.subresources.join(" ")
    )
}

/// A cache key: user, verb, subresource.
type DecisionKey = (User, &'static str, &'static str);

/// Cached authorization decisions: allowed or not, and since when.
#[derive(Default)]
pub struct DecisionCache(Mutex<HashMap<DecisionKey, (bool, Instant)>>);

impl DecisionCache {
    fn get(&self, key: &DecisionKey) -> Option<bool> {
        let map = self.0.lock().unwrap();
        let (allowed, at) = map.get(key)?;
        let ttl = if *allowed { ALLOWED_TTL } else { DENIED_TTL };
        (at.elapsed() < ttl).then_some(*allowed)
    }

    fn put(&self, key: DecisionKey, allowed: bool) {
        let mut map = self.0.lock().unwrap();
        if map.len() > 1000 {
            map.clear();
        }
        map.insert(key, (allowed, Instant::now()));
    }
}

/// The user of a bearer token, by TokenReview; `None` if not authenticated.
async fn user_from_token(client: &kube::Client, token: &str) -> Result<Option<User>, kube::Error> {
    let review =
        TokenReview { spec: TokenReviewSpec { token: Some(token.to_string()), audiences: None }, ..Default::default() };
    let api: kube::Api<TokenReview> = kube::Api::all(client.clone());
    let answer = api.create(&Default::default(), &review).await?;
    let Some(status) = answer.status.filter(|s| s.authenticated == Some(true)) else {
        return Ok(None);
    };
    let info = status.user.unwrap_or_default();
    Ok(Some(User {
        name: info.username.unwrap_or_default(),
        uid: info.uid.unwrap_or_default(),
        groups: info.groups.unwrap_or_default(),
    }))
}

/// Asks the API server whether `user` may `verb` `nodes/<node>/<sub>`.
async fn review(client: &kube::Client, user: &User, node: &str, verb: &str, sub: &str) -> Result<bool, kube::Error> {
    let sar = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(user.name.clone()),
            uid: (!user.uid.is_empty()).then(|| user.uid.clone()),
            groups: Some(user.groups.clone()),
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.into()),
                resource: Some("nodes".into()),
                subresource: Some(sub.into()),
                name: Some(node.into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let api: kube::Api<SubjectAccessReview> = kube::Api::all(client.clone());
    let answer = api.create(&Default::default(), &sar).await?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}

/// The middleware: 401 without a user, 403 when no subresource is allowed,
/// 500 when the API server cannot be asked.
pub(crate) async fn filter(State(state): State<AppState>, req: Req, next: Next) -> Response {
    let mut user = req.extensions().get::<PeerIdentity>().and_then(|p| p.0.clone());
    if user.is_none() {
        let token = req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
            .map(str::trim)
            .filter(|t| !t.is_empty());
        if let Some(token) = token {
            match user_from_token(&state.client, token).await {
                Ok(u) => user = u,
                Err(e) => {
                    tracing::warn!(component = "kubelet", error = %e, "kubelet API: TokenReview failed");
                }
            }
        }
    }
    let Some(user) = user else {
        return text(StatusCode::UNAUTHORIZED, "Unauthorized");
    };
    let attrs = attributes(req.method(), req.uri().path());
    for sub in &attrs.subresources {
        let key = (user.clone(), attrs.verb, *sub);
        let allowed = match state.authz.get(&key) {
            Some(a) => a,
            None => match review(&state.client, &user, &state.node_name, attrs.verb, sub).await {
                Ok(a) => {
                    state.authz.put(key, a);
                    a
                }
                Err(e) => {
                    tracing::warn!(component = "kubelet", error = %e, user = %user.name, "kubelet API: SubjectAccessReview failed");
                    let msg = format!(
                        "Authorization error (user={}, verb={}, resource=nodes, subresource={sub})",
                        user.name, attrs.verb
                    );
                    return text(StatusCode::INTERNAL_SERVER_ERROR, msg);
                }
            },
        };
        if allowed {
            return next.run(req).await;
        }
    }
    tracing::debug!(component = "kubelet", user = %user.name, path = %req.uri().path(), "kubelet API: forbidden");
    text(StatusCode::FORBIDDEN, forbidden_message(&user.name, &attrs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::pem::PemObject;

    /// Upstream's mapping of methods and paths to `nodes` subresources.
    #[test]
    fn request_attributes() {
        let a = attributes(&Method::GET, "/stats/summary");
        assert_eq!((a.verb, a.subresources), ("get", vec!["stats"]));
        assert_eq!(attributes(&Method::GET, "/metrics/resource").subresources, ["metrics"]);
        assert_eq!(attributes(&Method::GET, "/metrics").subresources, ["metrics"]);
        assert_eq!(attributes(&Method::GET, "/logs/").subresources, ["log"]);
        assert_eq!(attributes(&Method::GET, "/pods").subresources, ["pods", "proxy"]);
        assert_eq!(attributes(&Method::GET, "/healthz").subresources, ["healthz", "proxy"]);
        assert_eq!(attributes(&Method::GET, "/containerLogs/ns/p/c").subresources, ["proxy"]);
        // A path that merely starts with a prefix is not under it.
        assert_eq!(attributes(&Method::GET, "/statsx").subresources, ["proxy"]);
        let a = attributes(&Method::POST, "/exec/ns/p/c");
        assert_eq!((a.verb, a.subresources.clone()), ("create", vec!["proxy"]));
        assert_eq!(
            forbidden_message("bob", &a),
            "Forbidden (user=bob, verb=create, resource=nodes, subresource(s)=[proxy])\n"
        );
        assert_eq!(attributes(&Method::PUT, "/x").verb, "update");
        assert_eq!(attributes(&Method::PATCH, "/x").verb, "patch");
        assert_eq!(attributes(&Method::DELETE, "/x").verb, "delete");
        assert_eq!(attributes(&Method::HEAD, "/x").verb, "get");
    }

    /// A client certificate's CN and O become the user and its groups.
    #[test]
    fn certificate_user() {
        let dir = tempfile::tempdir().unwrap();
        let files = rkube_pki::PkiFiles::new(dir.path());
        let names = rkube_pki::ServingNames {
            advertise_address: "127.0.0.1".parse().unwrap(),
            host_addresses: vec![],
            kubernetes_service_ip: "10.43.0.1".parse().unwrap(),
            cluster_domain: "cluster.local".into(),
            extra: vec![],
        };
        let pki = rkube_pki::ClusterPki::ensure(&files, &names).unwrap();
        let der = rustls::pki_types::CertificateDer::from_pem_slice(pki.kubelet_client.cert_pem.as_bytes()).unwrap();
        let user = user_from_certificate(&der).unwrap();
        assert_eq!(user.name, "kube-apiserver-kubelet-client");
        assert_eq!(user.groups, ["system:masters", "system:authenticated"]);
    }
}
