//! The service-account token authenticators (upstream's
//! `pkg/serviceaccount/jwt.go` with the bound-token and legacy
//! validators).
//!
//! A token whose `iss` is neither this server's issuer nor the legacy
//! issuer is not ours (no opinion). Ours must carry a valid ES256
//! signature (else go-jose's `error in cryptographic primitive`) and share
//! an audience with the requested ones (default: the API audiences; legacy
//! tokens carry none and count as the API audiences). Then:
//!
//! - bound (TokenRequest) tokens must be within their lifetime (a minute
//!   of leeway), and their service account and bound pod, secret or node
//!   must still exist with the uids in the token and not be deleted for
//!   longer than the leeway;
//! - legacy tokens need their Secret to still hold exactly this token, not
//!   be deleted or marked invalid, and the account to exist with its uid;
//!   the Secret is labelled with the day it was last used.
//!
//! The signature check is cached per token (see [`super::cache`]); the
//! object checks read the watch cache (the store on a miss) every time.

use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use rkube_apimachinery::meta;
use serde_json::Value;

use super::cache::{self, TtlCache};
use super::{lookup, UserInfo};
use crate::rest::Api;
use crate::serviceaccount::claims::{TokenClaims, LEEWAY_SECONDS};
use crate::serviceaccount::legacy::{LegacyClaims, INVALID_SINCE_LABEL, LAST_USED_LABEL};
use crate::serviceaccount::{TokenIssuer, VerifyError};

/// The verified (signature-checked) content of a token.
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)] // Always behind an Arc in the cache.
pub enum Verified {
    /// A TokenRequest token.
    Bound(TokenClaims),
    /// A legacy secret-based token.
    Legacy(LegacyClaims),
}

/// Cache of verified tokens.
pub type VerifiedCache = TtlCache<Arc<Verified>>;

/// Checks the signature and claims form of `token`, through `cache`.
/// `Ok(None)`: not one of this server's tokens.
pub fn verify(issuer: &TokenIssuer, cache: &VerifiedCache, token: &str) -> Result<Option<Arc<Verified>>, VerifyError> {
    let key = cache::key(&[b"serviceaccount", token.as_bytes()]);
    if let Some(v) = cache.get(&key) {
        return Ok(Some(v));
    }
    let (verified, ttl) = if let Some(claims) = issuer.verify(token)? {
        let claims = TokenClaims::from_json(&claims)?;
        let left = claims.expiry + LEEWAY_SECONDS - jiff::Timestamp::now().as_second();
        let ttl = Duration::from_secs(left.max(0) as u64).min(cache::SUCCESS_TTL);
        (Verified::Bound(claims), ttl)
    } else if let Some(claims) = issuer.verify_legacy(token)? {
        (Verified::Legacy(LegacyClaims::from_json(&claims)?), cache::SUCCESS_TTL)
    } else {
        return Ok(None);
    };
    let verified = Arc::new(verified);
    cache.insert(key, verified.clone(), ttl);
    Ok(Some(verified))
}

/// Authenticates a service-account token for `requested` audiences
/// (empty: the API audiences): the user (without `system:authenticated`),
/// the audiences it is valid for, and warnings for the client.
/// `Ok(None)`: not ours.
pub async fn authenticate(
    api: &Api,
    cache: &VerifiedCache,
    token: &str,
    requested: &[String],
) -> Result<Option<(UserInfo, Vec<String>, Vec<String>)>, VerifyError> {
    let issuer = &api.cluster().service_account;
    let Some(verified) = verify(issuer, cache, token)? else { return Ok(None) };
    let implicit = issuer.api_audiences();
    let token_audiences = match &*verified {
        Verified::Bound(c) if !c.audiences.is_empty() => c.audiences.clone(),
        _ => implicit.clone(),
    };
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
    let (user, warnings) = match &*verified {
        Verified::Bound(claims) => {
            claims.check_times(now)?;
            check_bound_objects(api, claims, now).await?;
            (claims.user_info(), Vec::new())
        }
        Verified::Legacy(claims) => check_legacy(api, claims, token).await?,
    };
    Ok(Some((user, audiences, warnings)))
}

/// Go's `%q` of a string slice: `["a" "b"]`.
pub fn go_quoted_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| rkube_apimachinery::validation::go_quote(s)).collect();
    format!("[{}]", quoted.join(" "))
}

/// A core/v1 object for a validator: `Err` with upstream's NotFound text
/// when absent.
async fn object(api: &Api, plural: &str, ns: &str, name: &str) -> Result<Option<Value>, VerifyError> {
    lookup(api, plural, ns, name).await.map_err(VerifyError)
}

fn not_found(plural: &str, name: &str) -> VerifyError {
    VerifyError(format!("{plural} \"{name}\" not found"))
}

/// Upstream's bound-token validator: the service account and the bound
/// objects still exist, with the token's uids, and are not (long) deleted.
async fn check_bound_objects(api: &Api, claims: &TokenClaims, now: i64) -> Result<(), VerifyError> {
    let ns = &claims.namespace;
    let sa_name = &claims.service_account.name;
    let deleted_long_ago = |obj: &Value| {
        meta::deletion_timestamp(obj)
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            .is_some_and(|t| t.as_second() < now - LEEWAY_SECONDS)
    };
    let sa = object(api, "serviceaccounts", ns, sa_name).await?.ok_or_else(|| not_found("serviceaccounts", sa_name))?;
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
    // (kind, plural, namespace, reference)
    let bound = if let Some(r) = &claims.secret {
        Some(("secret", "secrets", ns.as_str(), r))
    } else if let Some(r) = &claims.pod {
        Some(("pod", "pods", ns.as_str(), r))
    } else {
        // Node-bound (not a pod's node): the node must still be there.
        claims.node.as_ref().map(|r| ("node", "nodes", "", r))
    };
    // A secret-bound token may also name a pod; upstream checks each.
    let mut checks: Vec<(&str, &str, &str, &crate::serviceaccount::claims::ObjRef)> = bound.into_iter().collect();
    if claims.secret.is_some() {
        if let Some(r) = &claims.pod {
            checks.push(("pod", "pods", ns.as_str(), r));
        }
    }
    for (kind, plural, namespace, reference) in checks {
        let obj = object(api, plural, namespace, &reference.name).await?.ok_or_else(invalidated)?;
        if meta::uid(&obj) != reference.uid {
            return Err(VerifyError(format!(
                "{kind} UID ({}) does not match service account {kind} ref claim ({})",
                meta::uid(&obj),
                reference.uid
            )));
        }
        if deleted_long_ago(&obj) {
            return Err(invalidated());
        }
    }
    Ok(())
}

/// Upstream's legacy validator (with lookup): the Secret still holds this
/// token and is not deleted or marked invalid; the account exists with
/// the token's uid.
/// The warning upstream gives for a token of a Secret the service account
/// lists (an auto-generated one).
pub const AUTOGENERATED_WARNING: &str =
    "Use tokens from the TokenRequest API or manually created secret-based tokens instead of auto-generated secret-based tokens.";

async fn check_legacy(api: &Api, claims: &LegacyClaims, token: &str) -> Result<(UserInfo, Vec<String>), VerifyError> {
    let ns = &claims.namespace;
    let (secret_name, sa_name) = (&claims.secret_name, &claims.service_account_name);
    let invalidated = || VerifyError("Token has been invalidated".into());
    let secret = object(api, "secrets", ns, secret_name).await?.ok_or_else(invalidated)?;
    if meta::deletion_timestamp(&secret).is_some() {
        return Err(invalidated());
    }
    let stored = secret
        .pointer("/data/token")
        .and_then(Value::as_str)
        .and_then(|b64| STANDARD.decode(b64).ok())
        .unwrap_or_default();
    if !super::bootstraptoken::constant_time_eq(&stored, token.as_bytes()) {
        return Err(VerifyError("Token does not match server's copy".into()));
    }
    let sa = object(api, "serviceaccounts", ns, sa_name).await?.ok_or_else(|| not_found("serviceaccounts", sa_name))?;
    if meta::deletion_timestamp(&sa).is_some() {
        return Err(VerifyError(format!("ServiceAccount {ns}/{sa_name} has been deleted")));
    }
    if meta::uid(&sa) != claims.service_account_uid {
        return Err(VerifyError(format!(
            "ServiceAccount UID ({}) does not match claim ({})",
            meta::uid(&sa),
            claims.service_account_uid
        )));
    }
    let label = |key: &str| {
        secret.pointer(&format!("/metadata/labels/{}", key.replace('/', "~1"))).and_then(Value::as_str).unwrap_or("")
    };
    let today = jiff::Zoned::now().with_time_zone(jiff::tz::TimeZone::UTC).date();
    let last_used = label(LAST_USED_LABEL);
    if last_used != today.to_string() && last_used != today.tomorrow().map(|d| d.to_string()).unwrap_or_default() {
        record_last_used(api, &secret, today.to_string());
    }
    if !label(INVALID_SINCE_LABEL).is_empty() {
        return Err(VerifyError(format!(
            "the token in secret {ns}/{secret_name} for service account {ns}/{sa_name} has been marked invalid. \
             Use tokens from the TokenRequest API or manually created secret-based tokens, or remove the \
             '{INVALID_SINCE_LABEL}' label from the secret to temporarily allow use of this token"
        )));
    }
    let listed = sa
        .get("secrets")
        .and_then(Value::as_array)
        .is_some_and(|refs| refs.iter().any(|r| r.get("name").and_then(Value::as_str) == Some(secret_name.as_str())));
    let warnings = if listed { vec![AUTOGENERATED_WARNING.to_string()] } else { Vec::new() };
    let user = UserInfo {
        name: crate::serviceaccount::claims::username(ns, sa_name),
        uid: claims.service_account_uid.clone(),
        groups: vec!["system:serviceaccounts".into(), format!("system:serviceaccounts:{ns}")],
        ..UserInfo::default()
    };
    Ok((user, warnings))
}

/// Stamps the legacy token Secret with `kubernetes.io/legacy-token-last-used:
/// <today>` (UTC date), as upstream's legacy validator does on each use,
/// in the background so the request does not wait for the write. Only the
/// Secret with the uid that was checked is touched.
fn record_last_used(api: &Api, secret: &Value, today: String) {
    let Some(store) = api.store("", "v1", "secrets").cloned() else { return };
    let (ns, name, uid) =
        (meta::namespace(secret).to_string(), meta::name(secret).to_string(), meta::uid(secret).to_string());
    tokio::spawn(async move {
        let result = store
            .update(&ns, &name, crate::storage::UpdateKind::Main, &crate::storage::WriteOptions::default(), |current| {
                let mut obj = current.cloned().ok_or_else(|| rkube_apimachinery::ApiError::Internal("gone".into()))?;
                if meta::uid(&obj) != uid {
                    return Err(rkube_apimachinery::ApiError::Internal("replaced".into()));
                }
                if !obj["metadata"]["labels"].is_object() {
                    obj["metadata"]["labels"] = serde_json::json!({});
                }
                obj["metadata"]["labels"][LAST_USED_LABEL] = Value::String(today.clone());
                Ok(obj)
            })
            .await;
        if let Err(error) = result {
            tracing::warn!(component = crate::COMPONENT, namespace = %ns, name = %name, %error, "cannot label the legacy service account token with its last-used date");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serviceaccount::DEFAULT_ISSUER;
    use serde_json::json;

    #[test]
    fn audience_lists_print_as_go_quotes_them() {
        assert_eq!(go_quoted_list(&["a".into(), "b c".into()]), r#"["a" "b c"]"#);
        assert_eq!(go_quoted_list(&[]), "[]");
    }

    #[test]
    fn verification_is_cached_per_token_and_foreign_tokens_are_not_ours() {
        let issuer = TokenIssuer::ephemeral(DEFAULT_ISSUER);
        let cache = VerifiedCache::default();
        let now = jiff::Timestamp::now().as_second();
        let claims = json!({"iss": DEFAULT_ISSUER, "aud": [DEFAULT_ISSUER], "exp": now + 600, "iat": now, "nbf": now,
            "sub": "system:serviceaccount:default:robot",
            "kubernetes.io": {"namespace": "default", "serviceaccount": {"name": "robot", "uid": "u"}}});
        let token = issuer.sign(&claims).unwrap();
        let v = verify(&issuer, &cache, &token).unwrap().unwrap();
        assert!(matches!(&*v, Verified::Bound(c) if c.service_account.name == "robot"));
        assert_eq!(cache.len(), 1);
        assert!(Arc::ptr_eq(&v, &verify(&issuer, &cache, &token).unwrap().unwrap()));
        // Another key's signature is an error and is not cached.
        let other = TokenIssuer::ephemeral(DEFAULT_ISSUER);
        let forged = other.sign(&claims).unwrap();
        assert_eq!(
            verify(&issuer, &cache, &forged).unwrap_err().0,
            "go-jose/go-jose: error in cryptographic primitive"
        );
        assert_eq!(cache.len(), 1);
        assert!(verify(&issuer, &cache, "abcdef.0123456789abcdef").unwrap().is_none());
        // An expired token is not cached at all.
        let expired = issuer
            .sign(&json!({"iss": DEFAULT_ISSUER, "exp": now - 3600, "iat": now - 7200,
            "kubernetes.io": {"namespace": "default", "serviceaccount": {"name": "robot", "uid": "u"}}}))
            .unwrap();
        assert!(verify(&issuer, &cache, &expired).unwrap().is_some());
        assert_eq!(cache.len(), 1);
    }
}
