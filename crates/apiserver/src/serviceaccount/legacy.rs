//! Legacy secret-based service-account tokens (upstream's
//! `pkg/serviceaccount/legacy.go`): long-lived JWTs stored in
//! `kubernetes.io/service-account-token` Secrets.
//!
//! Their claims are `iss: kubernetes/serviceaccount`, `sub`
//! (`system:serviceaccount:<ns>:<name>`) and four private claims naming
//! the namespace, the secret, and the account's name and uid. No `aud`,
//! no `exp`: such a token is valid while its Secret holds it and the
//! account exists with that uid.

use serde_json::{json, Value};

use super::claims::username;
use super::VerifyError;

/// `serviceaccount.LegacyIssuer`.
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";
/// The label that marks a legacy token invalid (the legacy token cleaner's).
pub const INVALID_SINCE_LABEL: &str = "kubernetes.io/legacy-token-invalid-since";
/// The label recording the UTC date a legacy token was last used
/// (`serviceaccount.LastUsedLabelKey`).
pub const LAST_USED_LABEL: &str = "kubernetes.io/legacy-token-last-used";

const NAMESPACE: &str = "kubernetes.io/serviceaccount/namespace";
const SECRET_NAME: &str = "kubernetes.io/serviceaccount/secret.name";
const SA_NAME: &str = "kubernetes.io/serviceaccount/service-account.name";
const SA_UID: &str = "kubernetes.io/serviceaccount/service-account.uid";

/// What a legacy token names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LegacyClaims {
    /// The account's namespace.
    pub namespace: String,
    /// The Secret holding the token.
    pub secret_name: String,
    /// The account's name.
    pub service_account_name: String,
    /// The account's uid.
    pub service_account_uid: String,
}

impl LegacyClaims {
    /// The claim set a token controller signs for `secret_name` of the
    /// account `namespace/name` with `uid` (upstream's `LegacyClaims`).
    pub fn to_json(&self) -> Value {
        json!({
            "iss": LEGACY_ISSUER,
            NAMESPACE: self.namespace,
            SECRET_NAME: self.secret_name,
            SA_NAME: self.service_account_name,
            SA_UID: self.service_account_uid,
            "sub": username(&self.namespace, &self.service_account_name),
        })
    }

    /// Reads verified claims, with upstream's checks and messages: each
    /// claim must be present and `sub` must name the same account.
    pub fn from_json(v: &Value) -> Result<LegacyClaims, VerifyError> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let err = |m: &str| Err(VerifyError(m.to_string()));
        let subject = s("sub");
        if subject.is_empty() {
            return err("sub claim is missing");
        }
        let claims = LegacyClaims {
            namespace: s(NAMESPACE),
            secret_name: s(SECRET_NAME),
            service_account_name: s(SA_NAME),
            service_account_uid: s(SA_UID),
        };
        if claims.namespace.is_empty() {
            return err("namespace claim is missing");
        }
        if claims.secret_name.is_empty() {
            return err("secretName claim is missing");
        }
        if claims.service_account_name.is_empty() {
            return err("serviceAccountName claim is missing");
        }
        if claims.service_account_uid.is_empty() {
            return err("serviceAccountUID claim is missing");
        }
        if subject != username(&claims.namespace, &claims.service_account_name) {
            return err("sub claim is invalid");
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serviceaccount::{TokenIssuer, DEFAULT_ISSUER};

    fn sample() -> LegacyClaims {
        LegacyClaims {
            namespace: "default".into(),
            secret_name: "robot-token".into(),
            service_account_name: "robot".into(),
            service_account_uid: "u1".into(),
        }
    }

    #[test]
    fn legacy_claims_round_trip_through_a_signed_token() {
        let issuer = TokenIssuer::ephemeral(DEFAULT_ISSUER);
        let token = issuer.sign(&sample().to_json()).unwrap();
        // Not a bound token of this issuer, but a legacy one.
        assert_eq!(issuer.verify(&token).unwrap(), None);
        let claims = issuer.verify_legacy(&token).unwrap().unwrap();
        assert_eq!(claims["sub"], "system:serviceaccount:default:robot");
        assert_eq!(LegacyClaims::from_json(&claims).unwrap(), sample());
    }

    #[test]
    fn missing_or_inconsistent_claims_are_refused_with_upstream_messages() {
        let mut v = sample().to_json();
        v["sub"] = json!("system:serviceaccount:other:robot");
        assert_eq!(LegacyClaims::from_json(&v).unwrap_err().0, "sub claim is invalid");
        let mut v = sample().to_json();
        v.as_object_mut().unwrap().remove(SECRET_NAME);
        assert_eq!(LegacyClaims::from_json(&v).unwrap_err().0, "secretName claim is missing");
        let mut v = sample().to_json();
        v.as_object_mut().unwrap().remove("sub");
        assert_eq!(LegacyClaims::from_json(&v).unwrap_err().0, "sub claim is missing");
    }
}
