//! `authentication.k8s.io/v1`: `SelfSubjectReview` (`kubectl auth whoami`)
//! and `TokenReview`.
//!
//! A TokenReview is answered as upstream's: the token is authenticated
//! like a request carrying only `Authorization: Bearer <token>`, through
//! the server's own authenticator chain ([`crate::authn`]: static tokens,
//! service-account tokens, bootstrap tokens), for `spec.audiences`
//! (default: the API audiences). Success reports the user (with
//! `system:authenticated`) and the audiences; a refusal the chain's error
//! (`invalid bearer token` when nothing recognized the token).

use rkube_apimachinery::{meta, ApiError};
use serde_json::{json, Value};

use super::Review;
use crate::authn::{bearer, Authenticated, UserInfo};
use crate::rest::Api;

/// `create` of a SelfSubjectReview: the requesting user, with the
/// response's creation time set (upstream's shape: no spec).
pub fn self_subject_review(review: &Review<'_>) -> Result<Value, ApiError> {
    let user = review.user()?;
    Ok(json!({
        "kind": "SelfSubjectReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"creationTimestamp": meta::now()},
        "status": {"userInfo": user.to_json()},
    }))
}

/// `create` of a TokenReview: the request with its `status` filled.
pub async fn token_review(review: &Review<'_>) -> Result<Value, ApiError> {
    let mut object = review.object.clone();
    let token = object.pointer("/spec/token").and_then(Value::as_str).unwrap_or("").to_string();
    if token.is_empty() {
        return Err(ApiError::BadRequest("token is required for TokenReview in authentication".into()));
    }
    let requested: Vec<String> = object
        .pointer("/spec/audiences")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    let mut status = serde_json::Map::new();
    match authenticate(review.api, &token, &requested).await? {
        Ok(Some(Authenticated { user, audiences, .. })) => {
            status.insert("authenticated".into(), json!(true));
            status.insert("user".into(), user.to_json());
            status.insert("audiences".into(), json!(audiences));
        }
        Ok(None) => {
            status.insert("user".into(), json!({}));
        }
        Err(e) => {
            tracing::debug!(component = crate::COMPONENT, error = %e, "token review: not authenticated");
            status.insert("user".into(), json!({}));
            status.insert("error".into(), json!(e));
        }
    }
    super::null_creation_timestamp(&mut object);
    object["status"] = Value::Object(status);
    Ok(object)
}

/// Authenticates `token` as upstream's TokenReview does: as a request
/// carrying only `Authorization: Bearer <token>`, through the server's
/// authenticator chain ([`crate::authn`]), for the `requested` audiences
/// (default: the API audiences). `Ok(None)`: not authenticated, no error.
/// A user whose audiences miss the requested ones is upstream's 500
/// `error validating audiences`.
pub async fn authenticate(
    api: &Api,
    token: &str,
    requested: &[String],
) -> Result<Result<Option<Authenticated>, String>, ApiError> {
    let chain = &api.cluster().authenticator;
    let audiences =
        if requested.is_empty() { api.cluster().service_account.api_audiences() } else { requested.to_vec() };
    let result = match bearer::parse_authorization(&format!("Bearer {token}")) {
        Some(token) => match chain.authenticate_token(api, &token, &audiences).await {
            Ok(Some(a)) => Ok(Some(a)),
            Ok(None) => Err("invalid bearer token".to_string()),
            Err(e) => Err(e),
        },
        // No usable token: the request is anonymous, as upstream's.
        None if chain.anonymous_enabled() => {
            Ok(Some(Authenticated { user: UserInfo::anonymous(), audiences: vec![], warnings: vec![] }))
        }
        None => Ok(None),
    };
    if let Ok(Some(a)) = &result {
        if !a.audiences.iter().any(|x| audiences.contains(x)) {
            tracing::error!(component = crate::COMPONENT, want = ?audiences, got = ?a.audiences, "error validating audience");
            return Err(ApiError::Internal("error validating audiences".into()));
        }
    }
    Ok(result)
}

/// Reads a core/v1 object.
pub(crate) async fn get(api: &Api, plural: &str, namespace: &str, name: &str) -> Result<Value, ApiError> {
    let store = api.store("", "v1", plural).ok_or(ApiError::PathNotFound)?;
    store.get(namespace, name, "").await
}
