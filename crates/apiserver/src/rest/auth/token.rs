//! `serviceaccounts/{name}/token` (upstream's `TokenREST`): a POSTed
//! `authentication.k8s.io/v1` TokenRequest returns a signed token for the
//! service account.
//!
//! In upstream's order: the body's name and namespace, if set, must match
//! the URL (422); the service account must exist (404); `spec.audiences`
//! defaults to the API audiences and `spec.expirationSeconds` to 3600,
//! which must lie in [600, 2^32] (422); `spec.boundObjectRef` may name a
//! core/v1 Pod (running as this service account), Secret or Node that
//! exists (404) with the given uid (409); other kinds are a 400. A
//! pod-bound token also names the pod's node. The kubelet's 3607 s
//! request for a pod-bound token with API audiences is extended to a year
//! with a `warnafter` claim, as upstream's `--service-account-extend-token-
//! expiration` (default on) does. The answer carries `status.token` and
//! `status.expirationTimestamp` (now + the requested lifetime).

use rkube_apimachinery::validation::{ErrorList, FieldError, Path};
use rkube_apimachinery::{meta, ApiError, GroupResource};
use serde_json::{json, Value};

use super::review::get;
use super::Review;
use crate::serviceaccount::claims::{ObjRef, TokenClaims, EXTENDED_EXPIRATION_SECONDS, WARN_ONLY_EXPIRATION_SECONDS};

/// `spec.expirationSeconds` when unset (upstream's defaulting).
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// The shortest lifetime a token may be requested for (10 minutes).
pub const MIN_EXPIRATION_SECONDS: i64 = 600;
/// The longest lifetime a token may be requested for (2^32 s).
pub const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

const GROUP: &str = "authentication.k8s.io";
const KIND: &str = "TokenRequest";

/// `create` of a TokenRequest for `serviceaccounts/{name}/token`.
pub async fn create(review: &Review<'_>) -> Result<Value, ApiError> {
    let api = review.api;
    let name = review.request.name.as_str();
    let namespace = review.request.namespace.as_str();
    let mut req = review.object.clone();
    let mismatch = |field: &str, value: &str, detail: &str| {
        ErrorList::from(vec![FieldError::invalid(&Path::new("metadata").child(field), value, detail)])
            .into_invalid(GROUP, KIND, name)
    };
    let body_name = meta::name(&req).to_string();
    if !body_name.is_empty() && body_name != name {
        return Err(mismatch("name", &body_name, "must match the service account name if specified"));
    }
    let body_ns = meta::namespace(&req).to_string();
    if !body_ns.is_empty() && body_ns != namespace {
        return Err(mismatch("namespace", &body_ns, "must match the service account namespace if specified"));
    }
    let sa = get(api, "serviceaccounts", namespace, name).await?;

    let issuer = &api.cluster().service_account;
    let api_audiences = issuer.api_audiences();
    let mut audiences: Vec<String> = req
        .pointer("/spec/audiences")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    if audiences.is_empty() {
        audiences = api_audiences.clone();
    }
    let expiration =
        req.pointer("/spec/expirationSeconds").and_then(Value::as_i64).unwrap_or(DEFAULT_EXPIRATION_SECONDS);
    let now = jiff::Timestamp::now();
    meta::set(&mut req, "name", json!(name));
    meta::set(&mut req, "namespace", json!(namespace));
    meta::set(&mut req, "creationTimestamp", json!(meta::format_time(now)));
    validate_expiration(expiration)?;
    if let Some(admission) = &review.admission {
        admission.validate_create(&req, name).await?;
    }

    let bound_ref = req.pointer("/spec/boundObjectRef").filter(|v| v.is_object()).cloned();
    let mut claims = TokenClaims {
        issuer: issuer.issuer().to_string(),
        audiences: audiences.clone(),
        namespace: namespace.to_string(),
        service_account: ObjRef { name: meta::name(&sa).to_string(), uid: meta::uid(&sa).to_string() },
        issued_at: now.as_second(),
        id: meta::new_uid(),
        ..TokenClaims::default()
    };
    if let Some(bound) = &bound_ref {
        bind(review, name, namespace, bound, &mut claims).await?;
    }

    let mut lifetime = expiration;
    let api_audiences_only = audiences.iter().all(|a| api_audiences.contains(a));
    if claims.pod.is_some() && expiration == WARN_ONLY_EXPIRATION_SECONDS && api_audiences_only {
        claims.warn_after = now.as_second() + expiration;
        lifetime = EXTENDED_EXPIRATION_SECONDS;
    }
    claims.expiry = now.as_second() + lifetime;
    let token =
        issuer.sign(&claims.to_json()).map_err(|e| ApiError::Internal(format!("failed to generate token: {e}")))?;
    tracing::debug!(
        component = crate::COMPONENT,
        namespace,
        name,
        jti = %claims.id,
        expiration,
        "issued a service account token"
    );

    req["spec"]["audiences"] = json!(audiences);
    req["spec"]["expirationSeconds"] = json!(expiration);
    req["spec"]["boundObjectRef"] = bound_ref.unwrap_or(Value::Null);
    let expires = jiff::Timestamp::from_second(now.as_second() + expiration).unwrap_or(now);
    req["status"] = json!({"token": token, "expirationTimestamp": meta::format_time(expires)});
    Ok(req)
}

/// Upstream's `ValidateTokenRequest` (422 with an empty name).
pub fn validate_expiration(expiration: i64) -> Result<(), ApiError> {
    let path = Path::new("spec").child("expirationSeconds");
    let mut errs = ErrorList::new();
    if expiration < MIN_EXPIRATION_SECONDS {
        errs.push(FieldError::invalid(&path, expiration, "may not specify a duration less than 10 minutes"));
    }
    if expiration > MAX_EXPIRATION_SECONDS {
        errs.push(FieldError::invalid(&path, expiration, "may not specify a duration larger than 2^32 seconds"));
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.into_invalid(GROUP, KIND, ""))
    }
}

/// Resolves `spec.boundObjectRef` into the claims.
async fn bind(
    review: &Review<'_>,
    sa_name: &str,
    namespace: &str,
    bound: &Value,
    claims: &mut TokenClaims,
) -> Result<(), ApiError> {
    let api = review.api;
    let s = |k: &str| bound.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let (kind, api_version, name, want_uid) = (s("kind"), s("apiVersion"), s("name"), s("uid"));
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), api_version.clone()),
    };
    let uid = match (group.as_str(), kind.as_str()) {
        ("", "Pod") => {
            let pod = get(api, "pods", namespace, &name).await?;
            // Upstream's ServiceAccount admission sets an unset name to
            // `default`; rkube has no admission yet, so unset means that.
            let runs_as = pod
                .pointer("/spec/serviceAccountName")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .unwrap_or("default");
            if runs_as != sa_name {
                return Err(ApiError::BadRequest(format!(
                    "cannot bind token for serviceaccount {sa_name:?} to pod running with different serviceaccount name."
                )));
            }
            let node_name = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("");
            if !node_name.is_empty() {
                // A missing node still leaves its name in the claims.
                let node_uid = match get(api, "nodes", "", node_name).await {
                    Ok(node) => meta::uid(&node).to_string(),
                    Err(ApiError::NotFound { .. }) => String::new(),
                    Err(e) => return Err(ApiError::Internal(e.to_string())),
                };
                claims.node = Some(ObjRef { name: node_name.to_string(), uid: node_uid });
            }
            let uid = meta::uid(&pod).to_string();
            claims.pod = Some(ObjRef { name: name.clone(), uid: uid.clone() });
            uid
        }
        ("", "Node") => {
            let node = get(api, "nodes", "", &name).await?;
            let uid = meta::uid(&node).to_string();
            claims.node = Some(ObjRef { name: name.clone(), uid: uid.clone() });
            uid
        }
        ("", "Secret") => {
            let secret = get(api, "secrets", namespace, &name).await?;
            let uid = meta::uid(&secret).to_string();
            claims.secret = Some(ObjRef { name: name.clone(), uid: uid.clone() });
            uid
        }
        _ => {
            return Err(ApiError::BadRequest(format!(
                "cannot bind token to object of type {group}/{version}, Kind={kind}"
            )))
        }
    };
    if !want_uid.is_empty() && want_uid != uid {
        return Err(ApiError::Conflict {
            resource: GroupResource::new(&group, &kind),
            name,
            message: format!(
                "the UID in the bound object reference ({want_uid}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
            causes: vec![],
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifetimes_outside_ten_minutes_to_two_to_the_32_seconds_are_invalid() {
        assert!(validate_expiration(600).is_ok());
        assert!(validate_expiration(1 << 32).is_ok());
        let e = validate_expiration(60).unwrap_err();
        assert_eq!(e.code(), 422);
        assert_eq!(
            e.to_string(),
            r#"TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"#
        );
        let e = validate_expiration((1 << 32) + 1).unwrap_err();
        assert!(e.to_string().ends_with("may not specify a duration larger than 2^32 seconds"), "{e}");
    }
}
