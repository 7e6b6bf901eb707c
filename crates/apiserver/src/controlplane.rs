//! `GET /rkube/v1/bootstrap/control-plane`: the key material and settings
//! a joining API server (`rkube server --server URL --token TOKEN`) needs
//! to become a second control-plane member of the same cluster (kubeadm's
//! `join --control-plane` certificate upload, k3s's server token
//! bootstrap data, in rkube's terms).
//!
//! The body ([`ControlPlaneBundle`]) holds the cluster CA certificate and
//! key, the service-account signing key pair, and the settings that every
//! server of the cluster must share (`--service-cidr`, `--cluster-cidr`,
//! `--cluster-dns`, `--cluster-domain`, `--service-account-issuer`), keyed
//! by flag name so that the joining side can say which flag differs.
//!
//! Authorization is upstream's for non-resource URLs (see
//! [`crate::authz::filter`]): the path and verb `get`. `system:masters` and
//! `cluster-admin` may; so may the group
//! `system:bootstrappers:rkube:control-plane` through the ClusterRole
//! `rkube:control-plane-join` that rkube's join policy creates. A token of
//! `rkube token create --control-plane` carries that group; a plain node
//! join token does not and gets 403 Forbidden. Whoever can read this can
//! impersonate anyone in the cluster: grant it like `cluster-admin`.
//!
//! A server started without the material (tests, embedded servers)
//! answers 404 NotFound.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use rkube_apimachinery::ApiError;
use serde::{Deserialize, Serialize};

use crate::router::AppState;

/// The path of the endpoint.
pub const PATH: &str = "/rkube/v1/bootstrap/control-plane";

/// The `kind` of the body.
pub const KIND: &str = "ControlPlaneBootstrap";

/// The `apiVersion` of the body.
pub const API_VERSION: &str = "rkube.io/v1";

/// The file names of [`ControlPlaneBundle::files`], as in
/// `<data-dir>/server/tls`.
pub const FILES: [&str; 4] = ["ca.crt", "ca.key", "sa.key", "sa.pub"];

/// What a joining server gets.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ControlPlaneBundle {
    /// Always [`KIND`].
    pub kind: String,
    /// Always [`API_VERSION`].
    pub api_version: String,
    /// PEM files by name ([`FILES`]): `ca.crt`, `ca.key`, `sa.key`, `sa.pub`.
    pub files: BTreeMap<String, String>,
    /// Settings every server must share, by flag name (`--service-cidr`
    /// → `10.43.0.0/16`, …), as the serving server was started.
    pub settings: BTreeMap<String, String>,
}

impl ControlPlaneBundle {
    /// A bundle of `files` and `settings`.
    pub fn new(files: BTreeMap<String, String>, settings: BTreeMap<String, String>) -> Self {
        ControlPlaneBundle { kind: KIND.into(), api_version: API_VERSION.into(), files, settings }
    }
}

/// Keys stay out of logs and debug output.
impl std::fmt::Debug for ControlPlaneBundle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlPlaneBundle")
            .field("files", &self.files.keys().collect::<Vec<_>>())
            .field("settings", &self.settings)
            .finish()
    }
}

/// The route: `GET` [`PATH`].
pub fn router() -> Router<AppState> {
    Router::new().route(PATH, get(bundle))
}

async fn bundle(State(state): State<AppState>) -> Response {
    let Some(bundle) = state.api.cluster().control_plane_bundle.clone() else {
        return crate::status::error_response(&ApiError::PathNotFound);
    };
    tracing::info!(component = crate::COMPONENT, "serving the control-plane bootstrap bundle to a joining server");
    let body = serde_json::to_vec(bundle.as_ref()).expect("the bundle serializes");
    let mut resp = (StatusCode::OK, body).into_response();
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundle_round_trips_and_debug_hides_keys() {
        let files = FILES.iter().map(|f| (f.to_string(), format!("PEM of {f}"))).collect();
        let settings = [("--service-cidr".to_string(), "10.43.0.0/16".to_string())].into();
        let b = ControlPlaneBundle::new(files, settings);
        let json = serde_json::to_value(&b).unwrap();
        assert_eq!(json["kind"], KIND);
        assert_eq!(json["apiVersion"], API_VERSION);
        assert_eq!(json["files"]["ca.key"], "PEM of ca.key");
        assert_eq!(serde_json::from_value::<ControlPlaneBundle>(json).unwrap(), b);
        let debug = format!("{b:?}");
        assert!(!debug.contains("PEM of") && debug.contains("ca.key") && debug.contains("10.43.0.0/16"), "{debug}");
    }
}
