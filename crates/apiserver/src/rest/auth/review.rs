//! `authentication.k8s.io/v1`: `SelfSubjectReview` (`kubectl auth whoami`)
//! and `TokenReview`.
//!
//! A TokenReview is answered as upstream's bearer-token authenticator
//! would for this server's tokens: a token of another issuer (or not a
//! JWT) has no authenticator that recognizes it → `invalid bearer token`;
//! one of ours must carry a valid signature, be within its lifetime (one
//! minute of leeway), share an audience with `spec.audiences` (default:
//! the API audiences), and its service account — and its bound pod,
//! secret or node — must still exist with the uid in the token and not be
//! deleted for more than the leeway. Success reports the service-account
//! user, its groups plus `system:authenticated`, and the audiences.

use rkube_apimachinery::{meta, ApiError};
use serde_json::{json, Value};

use super::Review;
use crate::authn::{add_authenticated_group, UserInfo};
use crate::rest::Api;
use crate::serviceaccount::claims::{TokenClaims, LEEWAY_SECONDS};
use crate::serviceaccount::VerifyError;

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
    match authenticate(review.api, &token, &requested).await {
        Ok((user, audiences)) => {
            status.insert("authenticated".into(), json!(true));
            status.insert("user".into(), user.to_json());
            status.insert("audiences".into(), json!(audiences));
        }
        Err(e) => {
            tracing::debug!(component = crate::COMPONENT, error = %e, "token review: not authenticated");
            status.insert("user".into(), json!({}));
            status.insert("error".into(), json!(e.0));
        }
    }
    super::null_creation_timestamp(&mut object);
    object["status"] = Value::Object(status);
    Ok(object)
}

/// Authenticates a bearer token as upstream's chain would for this
/// server: the user (with `system:authenticated`) and the audiences the
/// token is valid for among `requested` (empty: the API audiences).
pub async fn authenticate(
    api: &Api,
    token: &str,
    requested: &[String],
) -> Result<(UserInfo, Vec<String>), VerifyError> {
    let issuer = &api.cluster().service_account;
    let claims = match issuer.verify(token)? {
        Some(claims) => TokenClaims::from_json(&claims)?,
        // No authenticator recognizes it: the bearer-token default.
        None => return Err(VerifyError("invalid bearer token".into())),
    };
    let implicit = issuer.api_audiences();
    let token_audiences = if claims.audiences.is_empty() { implicit.clone() } else { claims.audiences.clone() };
    let requested = if requested.is_empty() { implicit } else { requested.to_vec() };
    let audiences: Vec<String> = token_audiences.iter().filter(|a| requested.contains(a)).cloned().collect();
    if audiences.is_empty() {
        return Err(VerifyError(format!(
            "token audiences {} is invalid for the target audiences {}",
            go_quoted_list(&token_audiences),
            go_quoted_list(&requested)
        )));
    }
    let now = jiff::Timestamp::now().as_second();
    claims.check_times(now)?;
    check_bound_objects(api, &claims, now).await?;
    let mut user = claims.user_info();
    add_authenticated_group(&mut user.groups);
    Ok((user, audiences))
}

/// Go's `%q` of a string slice: `["a" "b"]`.
fn go_quoted_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| rkube_apimachinery::validation::go_quote(s)).collect();
    format!("[{}]", quoted.join(" "))
}

/// Upstream's validator: the service account and the bound objects still
/// exist, with the token's uids, and are not (long) deleted.
async fn check_bound_objects(api: &Api, claims: &TokenClaims, now: i64) -> Result<(), VerifyError> {
    let ns = &claims.namespace;
    let sa_name = &claims.service_account.name;
    let deleted_long_ago = |obj: &Value| {
        meta::deletion_timestamp(obj)
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            .is_some_and(|t| t.as_second() < now - LEEWAY_SECONDS)
    };
    let sa = get(api, "serviceaccounts", ns, sa_name).await.map_err(|e| VerifyError(e.to_string()))?;
    if meta::uid(&sa) != claims.service_account.uid {
        return Err(VerifyError(format!(
            "service account UID ({}) does not match claim ({})",
            meta::uid(&sa),
            claims.service_account.uid
        )));
    }
    if deleted_long_ago(&sa) {
        return Err(VerifyError(format!("service account {ns}/{sa_name} has been deleted")));
    }
    let invalidated = || VerifyError("service account token has been invalidated".into());
    if let Some(secret_ref) = &claims.secret {
        let secret = get(api, "secrets", ns, &secret_ref.name).await.map_err(|_| invalidated())?;
        if meta::uid(&secret) != secret_ref.uid {
            return Err(VerifyError(format!(
                "secret UID ({}) does not match service account secret ref claim ({})",
                meta::uid(&secret),
                secret_ref.uid
            )));
        }
        if deleted_long_ago(&secret) {
            return Err(invalidated());
        }
    }
    if let Some(pod_ref) = &claims.pod {
        let pod = get(api, "pods", ns, &pod_ref.name).await.map_err(|_| invalidated())?;
        if meta::uid(&pod) != pod_ref.uid {
            return Err(VerifyError(format!(
                "pod UID ({}) does not match service account pod ref claim ({})",
                meta::uid(&pod),
                pod_ref.uid
            )));
        }
        if deleted_long_ago(&pod) {
            return Err(invalidated());
        }
    } else if let Some(node_ref) = &claims.node {
        // Node-bound (not a pod's node): the node must still be there.
        let node = get(api, "nodes", "", &node_ref.name).await.map_err(|_| invalidated())?;
        if meta::uid(&node) != node_ref.uid {
            return Err(VerifyError(format!(
                "node UID ({}) does not match service account node ref claim ({})",
                meta::uid(&node),
                node_ref.uid
            )));
        }
        if deleted_long_ago(&node) {
            return Err(invalidated());
        }
    }
    Ok(())
}

/// Reads a core/v1 object.
pub(crate) async fn get(api: &Api, plural: &str, namespace: &str, name: &str) -> Result<Value, ApiError> {
    let store = api.store("", "v1", plural).ok_or(ApiError::PathNotFound)?;
    store.get(namespace, name, "").await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audience_lists_print_as_go_quotes_them() {
        assert_eq!(go_quoted_list(&["a".into(), "b c".into()]), r#"["a" "b c"]"#);
        assert_eq!(go_quoted_list(&[]), "[]");
    }
}
