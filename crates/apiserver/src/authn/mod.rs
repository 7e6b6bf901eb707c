//! Authentication: who is asking (upstream's authenticator chain and
//! `WithAuthentication` filter).
//!
//! Every request passes [`authenticate`], which asks, in upstream's order:
//!
//! 1. [`x509`]: a client certificate verified against the cluster CA;
//! 2. a bearer token from `Authorization: Bearer …` or a WebSocket
//!    subprotocol ([`bearer`]), tried against the token authenticators:
//!    the static token file ([`tokenfile`], `--token-auth-file`),
//!    service-account JWTs ([`jwt`]: bound TokenRequest tokens and legacy
//!    secret-based ones) and bootstrap tokens ([`bootstraptoken`]).
//!
//! The first that recognizes the request wins; the user then gets
//! `system:authenticated`. A credential that is presented but fails (a
//! foreign or expired certificate, an unknown, forged, expired or revoked
//! token) is a 401 `Unauthorized` Status — never anonymous. A request
//! without credentials is `system:anonymous` in `system:unauthenticated`
//! (or a 401 with `--anonymous-auth=false`). Then the impersonation
//! headers are honoured ([`impersonation`], authorized with the
//! `impersonate` verb), and the resulting [`UserInfo`] travels with the
//! request as an extension.
//!
//! What a user, anonymous or not, may then do is the authorization
//! filter's decision ([`crate::authz`]).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rkube_apimachinery::ApiError;
use serde_json::Value;

use crate::rest::Api;
use crate::tls::PeerCertificates;

pub mod bearer;
pub mod bootstraptoken;
pub mod cache;
pub mod impersonation;
pub mod jwt;
pub mod tokenfile;
mod user;
pub mod x509;

pub use tokenfile::TokenFile;
pub use user::{
    add_authenticated_group, UserInfo, ANONYMOUS_USER, AUTHENTICATED_GROUP, CREDENTIAL_ID_KEY, MASTERS_GROUP,
    UNAUTHENTICATED_GROUP,
};

/// A successful authentication: the user and the audiences the credential
/// is valid for (upstream's `authenticator.Response`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Authenticated {
    /// The user, `system:authenticated` included.
    pub user: UserInfo,
    /// The audiences (empty for certificates).
    pub audiences: Vec<String>,
    /// Warnings for the client (`Warning: 299` headers), e.g. for an
    /// auto-generated legacy token.
    pub warnings: Vec<String>,
}

/// Where the credential came from (so its header can be dropped once used).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Credential {
    /// The client certificate.
    Certificate,
    /// `Authorization: Bearer`.
    AuthorizationHeader,
    /// The WebSocket token subprotocol.
    WebSocketProtocol,
}

/// The authenticator chain and its caches. Built once per API server;
/// cheap to call per request.
pub struct Authenticator {
    anonymous: bool,
    tokens: Arc<TokenFile>,
    x509: Option<x509::X509Authenticator>,
    verified: jwt::VerifiedCache,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("anonymous", &self.anonymous)
            .field("static_tokens", &self.tokens.len())
            .field("x509", &self.x509.is_some())
            .finish()
    }
}

impl Default for Authenticator {
    /// Anonymous requests allowed, no static tokens, no client CA (every
    /// presented certificate fails).
    fn default() -> Self {
        Authenticator::new(true, TokenFile::default())
    }
}

impl Authenticator {
    /// A chain with `--anonymous-auth` = `anonymous` and the static
    /// `tokens` (`--token-auth-file`; empty when not given).
    pub fn new(anonymous: bool, tokens: TokenFile) -> Authenticator {
        Authenticator { anonymous, tokens: Arc::new(tokens), x509: None, verified: jwt::VerifiedCache::default() }
    }

    /// The same chain trusting client certificates of the CA(s) in
    /// `ca_pem`. Errors when the PEM holds no usable certificate.
    pub fn with_client_ca(&self, ca_pem: &str) -> Result<Authenticator, String> {
        Ok(Authenticator {
            anonymous: self.anonymous,
            tokens: self.tokens.clone(),
            x509: Some(x509::X509Authenticator::new(ca_pem)?),
            verified: jwt::VerifiedCache::default(),
        })
    }

    /// Whether requests without credentials are `system:anonymous`
    /// (`--anonymous-auth`, default true) rather than a 401.
    pub fn anonymous_enabled(&self) -> bool {
        self.anonymous
    }

    /// Authenticates a bearer token for the `requested` audiences (empty:
    /// the API audiences) through the token authenticators in upstream's
    /// order: static tokens, service-account tokens, bootstrap tokens.
    /// `Ok(None)`: no authenticator recognized it; `Err`: the aggregated
    /// errors of those that recognized but refused it.
    pub async fn authenticate_token(
        &self,
        api: &Api,
        token: &str,
        requested: &[String],
    ) -> Result<Option<Authenticated>, String> {
        let implicit = api.cluster().service_account.api_audiences();
        let requested: Vec<String> = if requested.is_empty() { implicit.clone() } else { requested.to_vec() };
        // Static and bootstrap tokens carry no audience: they count for
        // the API audiences only (upstream's WrapAudienceAgnosticToken).
        let agnostic: Vec<String> = implicit.iter().filter(|a| requested.contains(a)).cloned().collect();
        let mut errors = Vec::new();
        if !agnostic.is_empty() {
            if let Some(user) = self.tokens.user(token) {
                return Ok(Some(authenticated(user.clone(), agnostic)));
            }
        }
        match jwt::authenticate(api, &self.verified, token, &requested).await {
            Ok(Some((user, audiences, warnings))) => {
                return Ok(Some(Authenticated { warnings, ..authenticated(user, audiences) }))
            }
            Ok(None) => {}
            Err(e) => errors.push(e.0),
        }
        if !agnostic.is_empty() {
            match bootstraptoken::authenticate(api, token).await {
                Ok(Some(user)) => return Ok(Some(authenticated(user, agnostic))),
                Ok(None) => {}
                Err(e) => errors.push(e),
            }
        }
        if errors.is_empty() {
            Ok(None)
        } else {
            Err(aggregate(&errors))
        }
    }

    /// Authenticates a request by its client certificate and headers, as
    /// upstream's union of the x509, bearer-token and WebSocket-protocol
    /// authenticators. `Ok(None)`: no credentials (anonymous); `Err`: the
    /// credentials presented were refused (a 401).
    pub async fn authenticate_request(
        &self,
        api: &Api,
        headers: &HeaderMap,
        peer: Option<&PeerCertificates>,
    ) -> Result<Option<(Authenticated, Credential)>, String> {
        let mut errors = Vec::new();
        if let Some(peer) = peer {
            let result = match &self.x509 {
                Some(x509) => x509.authenticate(peer.chain()),
                None => Err("verifying certificate failed: no client CA is configured".into()),
            };
            match result {
                Ok(Some(user)) => return Ok(Some((authenticated(user, Vec::new()), Credential::Certificate))),
                Ok(None) => {}
                Err(e) => errors.push(e),
            }
        }
        let bearer = bearer::from_authorization(headers).map(|t| Ok((t, Credential::AuthorizationHeader)));
        let websocket =
            bearer::from_websocket(headers).transpose().map(|r| r.map(|t| (t, Credential::WebSocketProtocol)));
        for candidate in [bearer, websocket].into_iter().flatten() {
            match candidate {
                Ok((token, source)) => match self.authenticate_token(api, &token, &[]).await {
                    Ok(Some(a)) => return Ok(Some((a, source))),
                    Ok(None) => errors.push("invalid bearer token".into()),
                    Err(e) => errors.push(e),
                },
                Err(e) => errors.push(e),
            }
        }
        if errors.is_empty() {
            Ok(None)
        } else {
            Err(aggregate(&errors))
        }
    }
}

/// The response for `user` (with `system:authenticated` added, as
/// upstream's group adder around the chain).
fn authenticated(mut user: UserInfo, audiences: Vec<String>) -> Authenticated {
    add_authenticated_group(&mut user.groups);
    Authenticated { user, audiences, warnings: Vec::new() }
}

/// Go's `utilerrors.NewAggregate(...).Error()`: one message as is, more as
/// `[a, b]`, duplicates dropped.
fn aggregate(errors: &[String]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for e in errors {
        if !seen.contains(&e.as_str()) {
            seen.push(e);
        }
    }
    if seen.len() == 1 {
        seen[0].to_string()
    } else {
        format!("[{}]", seen.join(", "))
    }
}

/// A core/v1 object the authenticators depend on, from the watch cache
/// (the store when the cache does not hold it): `Ok(None)` when it does
/// not exist, `Err` when the store fails.
pub(crate) async fn lookup(api: &Api, plural: &str, namespace: &str, name: &str) -> Result<Option<Value>, String> {
    let store = api.store("", "v1", plural).ok_or_else(|| format!("no storage for {plural}"))?;
    if let Some(obj) = store.get_cached(namespace, name) {
        return Ok(Some(obj));
    }
    match store.get(namespace, name, "").await {
        Ok(obj) => Ok(Some(obj)),
        Err(ApiError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

/// upstream's 401 body (`apierrors.NewUnauthorized("Unauthorized")`: no
/// details).
const UNAUTHORIZED_BODY: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}"#;

/// The 401 `Unauthorized` Status response.
pub fn unauthorized() -> Response {
    (StatusCode::UNAUTHORIZED, [(header::CONTENT_TYPE, "application/json")], format!("{UNAUTHORIZED_BODY}\n"))
        .into_response()
}

/// Middleware: authenticates the request (see module docs) and attaches
/// the [`UserInfo`] as a request extension (upstream's
/// `WithAuthentication`, inside the audit ID layer and outside auditing,
/// impersonation ([`impersonate`]) and the in-flight limits, which exempt
/// `system:masters`). A used bearer credential is removed from the
/// headers, as upstream does, so it is never forwarded.
pub async fn authenticate(State(api): State<Arc<Api>>, mut req: Request, next: Next) -> Response {
    let chain = &api.cluster().authenticator;
    let peer = req.extensions().get::<PeerCertificates>().cloned();
    let mut warnings = Vec::new();
    let user = match chain.authenticate_request(&api, req.headers(), peer.as_ref()).await {
        Ok(Some((authenticated, credential))) => {
            warnings = authenticated.warnings;
            match credential {
                Credential::AuthorizationHeader => {
                    req.headers_mut().remove(header::AUTHORIZATION);
                }
                Credential::WebSocketProtocol => bearer::strip_websocket_token(req.headers_mut()),
                Credential::Certificate => {}
            }
            authenticated.user
        }
        Ok(None) if chain.anonymous_enabled() => UserInfo::anonymous(),
        Ok(None) => {
            tracing::debug!(component = crate::COMPONENT, path = %req.uri().path(), "anonymous request refused (--anonymous-auth=false)");
            return unauthorized();
        }
        Err(error) => {
            tracing::debug!(component = crate::COMPONENT, path = %req.uri().path(), %error, "unable to authenticate the request");
            return unauthorized();
        }
    };
    req.extensions_mut().insert(user);
    let mut response = next.run(req).await;
    for w in &warnings {
        response.headers_mut().append(header::WARNING, crate::rest::response::warning_header(w));
    }
    response
}

/// Middleware after auditing (upstream's `WithImpersonation`): honours the
/// impersonation headers of the authenticated [`UserInfo`] — the acting
/// user replaces it, the requestor is kept as
/// [`impersonation::Requestor`] and recorded on the audit event — or
/// answers the refusal (403), which the audit log then records.
pub async fn impersonate(State(api): State<Arc<Api>>, mut req: Request, next: Next) -> Response {
    if !impersonation::requested(req.headers()) {
        return next.run(req).await;
    }
    let user = req.extensions().get::<UserInfo>().cloned().unwrap_or_else(UserInfo::anonymous);
    match impersonation::impersonate(authorizer(&api), &user, req.headers()) {
        Ok(Some(acting)) => {
            impersonation::strip_headers(req.headers_mut());
            if let Some(ctx) = req.extensions().get::<crate::audit::AuditContext>() {
                ctx.set_impersonated_user(&acting);
            }
            req.extensions_mut().insert(impersonation::Requestor(user));
            req.extensions_mut().insert(acting);
        }
        Ok(None) => {}
        Err(e) => return crate::status::error_response(&e),
    }
    next.run(req).await
}

/// The server's authorizer (impersonation asks it).
fn authorizer(api: &Api) -> &dyn crate::authz::Authorizer {
    api.authorizer().as_ref()
}

#[cfg(test)]
mod tests;
