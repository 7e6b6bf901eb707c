//! kube-rs clients towards the API server, one per identity.
//!
//! Every component reaches the API over loopback HTTPS, verifying the
//! serving certificate against the cluster CA, and authenticates either
//! with a client certificate (the manager itself, as
//! `system:kube-controller-manager`) or with a bearer token that may be
//! replaced while the client lives (a controller's service-account token,
//! renewed before it expires; a bootstrap token while a node joins).

use std::sync::{Arc, RwLock};
use std::task::{Context, Poll};

use base64::Engine;
use kube::config::AuthInfo;

/// Where the API server is and how to trust it.
#[derive(Clone, Debug)]
pub struct ApiEndpoint {
    /// `https://host:port`, e.g. `https://127.0.0.1:6443`.
    pub url: String,
    /// The cluster CA certificate (PEM) that signed the serving certificate.
    pub ca_pem: String,
}

/// Errors building a client.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The URL does not parse.
    #[error("invalid API server URL {url:?}: {message}")]
    Url {
        /// The URL given.
        url: String,
        /// Why it does not parse.
        message: String,
    },
    /// The CA PEM holds no certificate.
    #[error("the cluster CA is not a PEM certificate")]
    Ca,
    /// kube-rs refused the configuration (e.g. a malformed client key).
    #[error("cannot build the API client: {0}")]
    Kube(#[from] kube::Error),
}

/// A bearer token shared between its owner (who replaces it on renewal)
/// and the clients that send it.
#[derive(Clone, Default)]
pub struct SharedToken(Arc<RwLock<String>>);

impl std::fmt::Debug for SharedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedToken(..)")
    }
}

impl SharedToken {
    /// A token holder starting with `token`.
    pub fn new(token: impl Into<String>) -> Self {
        SharedToken(Arc::new(RwLock::new(token.into())))
    }

    /// Replaces the token; requests sent afterwards carry the new one.
    pub fn set(&self, token: impl Into<String>) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = token.into();
    }

    /// The current token.
    pub fn get(&self) -> String {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// A client authenticating with a client certificate and key (PEM).
///
/// Errors: a bad URL, CA or key.
pub fn with_certificate(endpoint: &ApiEndpoint, cert_pem: &str, key_pem: &str) -> Result<kube::Client, ClientError> {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
    let auth = AuthInfo {
        client_certificate_data: Some(b64(cert_pem)),
        client_key_data: Some(b64(key_pem).into()),
        ..AuthInfo::default()
    };
    let config = config(endpoint, auth)?;
    Ok(kube::client::ClientBuilder::try_from(config)?.build())
}

/// A client sending `Authorization: Bearer <token>` with whatever `token`
/// holds at the time of each request.
///
/// Errors: a bad URL or CA.
pub fn with_token(endpoint: &ApiEndpoint, token: SharedToken) -> Result<kube::Client, ClientError> {
    let config = config(endpoint, AuthInfo::default())?;
    Ok(kube::client::ClientBuilder::try_from(config)?.with_layer(&BearerLayer(token)).build())
}

/// A client without credentials that verifies the server against the CA
/// (requests are `system:anonymous`).
///
/// Errors: a bad URL or CA.
pub fn anonymous(endpoint: &ApiEndpoint) -> Result<kube::Client, ClientError> {
    Ok(kube::client::ClientBuilder::try_from(config(endpoint, AuthInfo::default())?)?.build())
}

/// A client without credentials that does NOT verify the server: only for
/// fetching what is verified by other means afterwards (the joining node's
/// CA discovery checks the CA against the join token's hash).
///
/// Errors: a bad URL.
pub fn anonymous_unverified(url: &str) -> Result<kube::Client, ClientError> {
    let mut config = kube::Config::new(parse_url(url)?);
    config.accept_invalid_certs = true;
    Ok(kube::client::ClientBuilder::try_from(config)?.build())
}

fn parse_url(url: &str) -> Result<http::Uri, ClientError> {
    url.parse::<http::Uri>().map_err(|e| ClientError::Url { url: url.into(), message: e.to_string() })
}

fn config(endpoint: &ApiEndpoint, auth_info: AuthInfo) -> Result<kube::Config, ClientError> {
    let mut config = kube::Config::new(parse_url(&endpoint.url)?);
    config.root_cert = Some(vec![crate::pem::certificate_der(&endpoint.ca_pem).ok_or(ClientError::Ca)?]);
    config.auth_info = auth_info;
    Ok(config)
}

/// Adds the shared bearer token to every request.
#[derive(Clone)]
struct BearerLayer(SharedToken);

impl<S> tower_layer::Layer<S> for BearerLayer {
    type Service = Bearer<S>;
    fn layer(&self, inner: S) -> Bearer<S> {
        Bearer { inner, token: self.0.clone() }
    }
}

#[derive(Clone)]
struct Bearer<S> {
    inner: S,
    token: SharedToken,
}

impl<S, B> tower_service::Service<http::Request<B>> for Bearer<S>
where
    S: tower_service::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: http::Request<B>) -> Self::Future {
        if let Ok(mut value) = http::HeaderValue::from_str(&format!("Bearer {}", self.token.get())) {
            value.set_sensitive(true);
            req.headers_mut().insert(http::header::AUTHORIZATION, value);
        }
        self.inner.call(req)
    }
}
