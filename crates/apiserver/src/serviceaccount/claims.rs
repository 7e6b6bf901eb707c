//! The claims of a service-account token, as upstream's
//! `pkg/serviceaccount/claims.go` writes and reads them.
//!
//! Issued claims (keys sorted, as go-jose serializes the merged claim map):
//! `aud` (always an array), `exp`, `iat`, `iss`, `jti` (a UUID), the
//! private `kubernetes.io` claim `{namespace, node?, pod?, secret?,
//! serviceaccount: {name, uid}, warnafter?}`, `nbf` (= `iat`) and `sub`
//! (`system:serviceaccount:<ns>:<name>`). Verified claims become the
//! service-account user: that name, the account's uid, the groups
//! `system:serviceaccounts` and `system:serviceaccounts:<ns>`, and the
//! `authentication.kubernetes.io/*` extras (pod, node, credential id).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::VerifyError;
use crate::authn::UserInfo;

/// Upstream's `jwt.DefaultLeeway` for `exp`, `nbf` and `iat`, in seconds.
pub const LEEWAY_SECONDS: i64 = 60;

/// `token.WarnOnlyBoundTokenExpirationSeconds`: the kubelet's requested
/// lifetime that upstream extends (pod-bound, API audiences only).
pub const WARN_ONLY_EXPIRATION_SECONDS: i64 = 60 * 60 + 7;

/// `token.ExpirationExtensionSeconds`: one year.
pub const EXTENDED_EXPIRATION_SECONDS: i64 = 24 * 365 * 60 * 60;

/// A `{name, uid}` reference inside the `kubernetes.io` claim.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjRef {
    /// Object name.
    pub name: String,
    /// Object uid (may be empty for a node that does not exist).
    pub uid: String,
}

impl ObjRef {
    fn to_json(&self) -> Value {
        let mut m = Map::new();
        if !self.name.is_empty() {
            m.insert("name".into(), json!(self.name));
        }
        if !self.uid.is_empty() {
            m.insert("uid".into(), json!(self.uid));
        }
        Value::Object(m)
    }

    fn from_json(v: Option<&Value>) -> Option<ObjRef> {
        let v = v?.as_object()?;
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        Some(ObjRef { name: s("name"), uid: s("uid") })
    }
}

/// The content of a token: who and what it is bound to, and when.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TokenClaims {
    /// `iss`.
    pub issuer: String,
    /// `aud`.
    pub audiences: Vec<String>,
    /// The service account's namespace.
    pub namespace: String,
    /// The service account.
    pub service_account: ObjRef,
    /// The pod the token is bound to.
    pub pod: Option<ObjRef>,
    /// The secret the token is bound to.
    pub secret: Option<ObjRef>,
    /// The node: the bound object, or the bound pod's node.
    pub node: Option<ObjRef>,
    /// `iat` and `nbf`, Unix seconds.
    pub issued_at: i64,
    /// `exp`, Unix seconds.
    pub expiry: i64,
    /// `kubernetes.io.warnafter`, Unix seconds (0: none).
    pub warn_after: i64,
    /// `jti` (empty: none).
    pub id: String,
}

impl TokenClaims {
    /// The claim set as upstream's token generator serializes it (keys in
    /// sorted order; `aud` an array).
    pub fn to_json(&self) -> Value {
        let mut k8s = Map::new();
        k8s.insert("namespace".into(), json!(self.namespace));
        if let Some(node) = &self.node {
            k8s.insert("node".into(), node.to_json());
        }
        if let Some(pod) = &self.pod {
            k8s.insert("pod".into(), pod.to_json());
        }
        if let Some(secret) = &self.secret {
            k8s.insert("secret".into(), secret.to_json());
        }
        k8s.insert("serviceaccount".into(), self.service_account.to_json());
        if self.warn_after != 0 {
            k8s.insert("warnafter".into(), json!(self.warn_after));
        }
        let mut m = Map::new();
        m.insert("aud".into(), json!(self.audiences));
        m.insert("exp".into(), json!(self.expiry));
        m.insert("iat".into(), json!(self.issued_at));
        m.insert("iss".into(), json!(self.issuer));
        if !self.id.is_empty() {
            m.insert("jti".into(), json!(self.id));
        }
        m.insert("kubernetes.io".into(), Value::Object(k8s));
        m.insert("nbf".into(), json!(self.issued_at));
        m.insert("sub".into(), json!(username(&self.namespace, &self.service_account.name)));
        Value::Object(m)
    }

    /// Reads verified claims back; a token without the `kubernetes.io`
    /// service-account claim is not a service-account token.
    pub fn from_json(v: &Value) -> Result<TokenClaims, VerifyError> {
        let k8s =
            v.get("kubernetes.io").ok_or_else(|| VerifyError("service account token claims are missing".into()))?;
        let service_account = ObjRef::from_json(k8s.get("serviceaccount")).unwrap_or_default();
        let audiences = match v.get("aud") {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).map(str::to_string).collect(),
            _ => Vec::new(),
        };
        let int = |k: &str| v.get(k).and_then(Value::as_i64).unwrap_or(0);
        Ok(TokenClaims {
            issuer: v.get("iss").and_then(Value::as_str).unwrap_or("").to_string(),
            audiences,
            namespace: k8s.get("namespace").and_then(Value::as_str).unwrap_or("").to_string(),
            service_account,
            pod: ObjRef::from_json(k8s.get("pod")),
            secret: ObjRef::from_json(k8s.get("secret")),
            node: ObjRef::from_json(k8s.get("node")),
            issued_at: int("iat"),
            expiry: int("exp"),
            warn_after: k8s.get("warnafter").and_then(Value::as_i64).unwrap_or(0),
            id: v.get("jti").and_then(Value::as_str).unwrap_or("").to_string(),
        })
    }

    /// go-jose's time checks with upstream's leeway and messages (`nbf`,
    /// then `exp`, then `iat`). `nbf` is taken to be `iat`, as issued.
    pub fn check_times(&self, now: i64) -> Result<(), VerifyError> {
        if now + LEEWAY_SECONDS < self.issued_at {
            // nbf == iat: upstream reports nbf first.
            return Err(VerifyError("service account token is not valid yet".into()));
        }
        if now - LEEWAY_SECONDS > self.expiry {
            return Err(VerifyError("service account token has expired".into()));
        }
        Ok(())
    }

    /// The service-account user this token authenticates (without
    /// `system:authenticated`, which the caller adds as upstream's group
    /// adder does). Pod and node extras only for pod-bound tokens, as
    /// upstream's validator reports them.
    pub fn user_info(&self) -> UserInfo {
        let mut extra = BTreeMap::new();
        if let Some(pod) = &self.pod {
            extra.insert("authentication.kubernetes.io/pod-name".into(), vec![pod.name.clone()]);
            extra.insert("authentication.kubernetes.io/pod-uid".into(), vec![pod.uid.clone()]);
        }
        if let Some(node) = &self.node {
            if !node.name.is_empty() {
                extra.insert("authentication.kubernetes.io/node-name".into(), vec![node.name.clone()]);
            }
            if !node.uid.is_empty() {
                extra.insert("authentication.kubernetes.io/node-uid".into(), vec![node.uid.clone()]);
            }
        }
        if !self.id.is_empty() {
            extra.insert("authentication.kubernetes.io/credential-id".into(), vec![format!("JTI={}", self.id)]);
        }
        UserInfo {
            name: username(&self.namespace, &self.service_account.name),
            uid: self.service_account.uid.clone(),
            groups: vec!["system:serviceaccounts".into(), format!("system:serviceaccounts:{}", self.namespace)],
            extra,
        }
    }
}

/// `system:serviceaccount:<namespace>:<name>`.
pub fn username(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TokenClaims {
        TokenClaims {
            issuer: "https://kubernetes.default.svc.cluster.local".into(),
            audiences: vec!["https://kubernetes.default.svc.cluster.local".into()],
            namespace: "default".into(),
            service_account: ObjRef { name: "default".into(), uid: "sa-uid".into() },
            issued_at: 1_000,
            expiry: 4_600,
            id: "0b7e8c1e-4a8e-4a4b-9c57-7f2d8e0e1f00".into(),
            ..Default::default()
        }
    }

    #[test]
    fn claims_serialize_like_upstream_tokens() {
        let mut c = sample();
        let text = serde_json::to_string(&c.to_json()).unwrap();
        assert_eq!(
            text,
            r#"{"aud":["https://kubernetes.default.svc.cluster.local"],"exp":4600,"iat":1000,"iss":"https://kubernetes.default.svc.cluster.local","jti":"0b7e8c1e-4a8e-4a4b-9c57-7f2d8e0e1f00","kubernetes.io":{"namespace":"default","serviceaccount":{"name":"default","uid":"sa-uid"}},"nbf":1000,"sub":"system:serviceaccount:default:default"}"#
        );
        c.pod = Some(ObjRef { name: "p".into(), uid: "pu".into() });
        c.node = Some(ObjRef { name: "n".into(), uid: String::new() });
        c.warn_after = 4_600;
        let v = c.to_json();
        assert_eq!(
            serde_json::to_string(&v["kubernetes.io"]).unwrap(),
            r#"{"namespace":"default","node":{"name":"n"},"pod":{"name":"p","uid":"pu"},"serviceaccount":{"name":"default","uid":"sa-uid"},"warnafter":4600}"#
        );
        assert_eq!(TokenClaims::from_json(&v).unwrap(), c);
    }

    #[test]
    fn times_are_checked_with_a_minute_of_leeway() {
        let c = sample();
        assert!(c.check_times(1_000).is_ok());
        assert!(c.check_times(4_660).is_ok());
        assert_eq!(c.check_times(4_661).unwrap_err().to_string(), "service account token has expired");
        assert_eq!(c.check_times(939).unwrap_err().to_string(), "service account token is not valid yet");
    }

    #[test]
    fn the_user_is_the_service_account() {
        let mut c = sample();
        c.pod = Some(ObjRef { name: "p".into(), uid: "pu".into() });
        let u = c.user_info();
        assert_eq!(u.name, "system:serviceaccount:default:default");
        assert_eq!(u.uid, "sa-uid");
        assert_eq!(u.groups, ["system:serviceaccounts", "system:serviceaccounts:default"]);
        assert_eq!(u.extra["authentication.kubernetes.io/pod-name"], ["p"]);
        assert_eq!(u.extra["authentication.kubernetes.io/credential-id"], ["JTI=0b7e8c1e-4a8e-4a4b-9c57-7f2d8e0e1f00"]);
    }
}
