//! Projected service account tokens: TokenRequests through the API
//! (`POST /api/v1/namespaces/<ns>/serviceaccounts/<sa>/token`, bound to the
//! pod) and a cache refreshed as upstream's kubelet token manager does — when
//! the token is older than 24h or within 20% of its lifetime of expiring
//! (i.e. past 80% of it). Upstream adds up to 10s of random jitter to the
//! refresh point; rkube refreshes at the exact point.

use std::collections::HashMap;
use std::sync::Mutex;

use k8s_openapi::api::authentication::v1::{BoundObjectReference, TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Pod, ServiceAccount, ServiceAccountTokenProjection};
use kube::api::{Api, PostParams};

/// Upstream's maximum age of a cached token before a refresh.
const MAX_TTL_SECONDS: i64 = 24 * 3600;
/// The API's default `expirationSeconds` of a projected token.
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    namespace: String,
    service_account: String,
    audience: String,
    expiration_seconds: i64,
    pod_uid: String,
}

#[derive(Debug, Clone)]
struct Cached {
    token: String,
    /// Expiry and the lifetime the API granted.
    expires: jiff::Timestamp,
    lifetime_seconds: i64,
}

/// True if a token expiring at `expires` after `lifetime_seconds` must be
/// renewed at `now` (older than 24h, or less than 20% of its life left).
pub fn requires_refresh(now: jiff::Timestamp, expires: jiff::Timestamp, lifetime_seconds: i64) -> bool {
    let exp = expires.as_second();
    let issued = exp - lifetime_seconds;
    let now = now.as_second();
    now > issued + MAX_TTL_SECONDS || now > exp - lifetime_seconds * 20 / 100
}

/// The per-node token cache (keyed by namespace, service account, audience,
/// expiration and pod UID).
#[derive(Default)]
pub struct TokenCache {
    cache: Mutex<HashMap<Key, Cached>>,
}

impl TokenCache {
    /// The token of a `serviceAccountToken` projection for `pod` (its
    /// `serviceAccountName`, default `default`), from the cache or a new
    /// TokenRequest bound to the pod. Errors carry the API's message.
    pub async fn get(
        &self,
        client: &kube::Client,
        pod: &Pod,
        projection: &ServiceAccountTokenProjection,
    ) -> Result<String, String> {
        let pod_ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
        let pod_uid = pod.metadata.uid.as_deref().unwrap_or_default();
        let service_account = pod.spec.as_ref().and_then(|s| s.service_account_name.as_deref()).unwrap_or("default");
        let audience = projection.audience.as_deref().unwrap_or("");
        let expiration_seconds = projection.expiration_seconds.unwrap_or(DEFAULT_EXPIRATION_SECONDS);
        let key = Key {
            namespace: pod_ns.into(),
            service_account: service_account.into(),
            audience: audience.into(),
            expiration_seconds,
            pod_uid: pod_uid.into(),
        };
        if let Some(token) = self.fresh(&key) {
            return Ok(token);
        }
        let req = TokenRequest {
            spec: TokenRequestSpec {
                audiences: if audience.is_empty() { vec![] } else { vec![audience.to_string()] },
                expiration_seconds: Some(expiration_seconds),
                bound_object_ref: Some(BoundObjectReference {
                    api_version: Some("v1".into()),
                    kind: Some("Pod".into()),
                    name: Some(pod_name.into()),
                    uid: Some(pod_uid.into()),
                }),
            },
            ..Default::default()
        };
        let api: Api<ServiceAccount> = Api::namespaced(client.clone(), pod_ns);
        let resp = api.create_token_request(service_account, &PostParams::default(), &req).await.map_err(|e| {
            let msg = super::api_error_message(&e);
            format!("failed to fetch token: {msg}")
        })?;
        let status = resp.status.ok_or("failed to fetch token: the API returned no token status")?;
        let lifetime = resp.spec.expiration_seconds.unwrap_or(expiration_seconds);
        let cached =
            Cached { token: status.token.clone(), expires: status.expiration_timestamp.0, lifetime_seconds: lifetime };
        self.cache.lock().expect("token cache").insert(key, cached);
        tracing::debug!(
            component = "kubelet",
            namespace = pod_ns,
            service_account,
            "requested a service account token"
        );
        Ok(status.token)
    }

    fn fresh(&self, key: &Key) -> Option<String> {
        let cache = self.cache.lock().expect("token cache");
        let c = cache.get(key)?;
        (!requires_refresh(jiff::Timestamp::now(), c.expires, c.lifetime_seconds)).then(|| c.token.clone())
    }

    /// Drops the tokens of a pod (on teardown).
    pub fn forget_pod(&self, pod_uid: &str) {
        self.cache.lock().expect("token cache").retain(|k, _| k.pod_uid != pod_uid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_refresh_after_80_percent_of_lifetime_or_24h() {
        let t = |s: i64| jiff::Timestamp::from_second(s).unwrap();
        // Issued at 0, 3600s lifetime: refresh once past 2880s (80%).
        assert!(!requires_refresh(t(0), t(3600), 3600));
        assert!(!requires_refresh(t(2880), t(3600), 3600));
        assert!(requires_refresh(t(2881), t(3600), 3600));
        // A 48h token is renewed after 24h although 80% is not reached.
        let exp = 48 * 3600;
        assert!(!requires_refresh(t(24 * 3600), t(exp), exp));
        assert!(requires_refresh(t(24 * 3600 + 1), t(exp), exp));
    }
}
