//! Service-account tokens: signing and verifying the JWTs the API server
//! issues (`serviceaccounts/{name}/token`) and reviews (`TokenReview`).
//!
//! - [`TokenIssuer`] pairs the ES256 signing key (`sa.key`, PKCS#8 P-256,
//!   loaded and used through [`rkube_pki::jws::SigningKey`], which the
//!   controller manager's legacy token controller shares) with the issuer
//!   (`--service-account-issuer`); it signs and checks compact JWS tokens.
//! - [`claims`] builds upstream's claim set and turns verified claims back
//!   into the service-account user after checking the bound objects;
//! - [`legacy`] reads the claims of legacy secret-based tokens
//!   (`iss: kubernetes/serviceaccount`).

use std::fmt;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use rkube_pki::jws::SigningKey;
use serde_json::Value;

pub mod claims;
pub mod legacy;

pub use rkube_pki::jws::key_id;

/// Upstream's issuer (and API audience) on kubeadm-like clusters, the
/// default of `--service-account-issuer`.
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// Why a token this server might have issued does not verify. The text is
/// what `TokenReview.status.error` shows.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct VerifyError(pub String);

/// The service-account token signer and verifier.
pub struct TokenIssuer {
    issuer: String,
    key: SigningKey,
}

impl fmt::Debug for TokenIssuer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the private key.
        f.debug_struct("TokenIssuer").field("issuer", &self.issuer).field("kid", &self.key.key_id()).finish()
    }
}

impl TokenIssuer {
    /// The issuer over a PKCS#8 PEM ECDSA P-256 private key (`sa.key`).
    /// Errors name what is wrong with the key.
    pub fn from_pkcs8_pem(pem: &str, issuer: &str) -> Result<TokenIssuer, String> {
        Ok(Self::new(SigningKey::from_pkcs8_pem(pem)?, issuer))
    }

    /// The issuer over an already loaded key.
    pub fn new(key: SigningKey, issuer: &str) -> TokenIssuer {
        TokenIssuer { issuer: issuer.to_string(), key }
    }

    /// A fresh random key (for API servers built without a PKI, e.g. in
    /// tests); tokens it signs do not survive a restart.
    pub fn ephemeral(issuer: &str) -> TokenIssuer {
        Self::new(SigningKey::generate(), issuer)
    }

    /// The `iss` claim of the tokens.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The API server's audiences (`--api-audiences`, which upstream
    /// defaults to the issuer): what tokens get when a request names none.
    pub fn api_audiences(&self) -> Vec<String> {
        vec![self.issuer.clone()]
    }

    /// The JWS `kid`: base64url (unpadded) SHA-256 of the public key's
    /// PKIX DER, as upstream's `keyIDFromPublicKey`.
    pub fn key_id(&self) -> &str {
        self.key.key_id()
    }

    /// The public key as SubjectPublicKeyInfo DER.
    pub fn public_key_der(&self) -> &[u8] {
        self.key.public_key_der()
    }

    /// Signs `claims` (a JSON object) as a compact JWS with header
    /// `{"alg":"ES256","kid":…}`.
    pub fn sign(&self, claims: &Value) -> Result<String, String> {
        self.key.sign(claims)
    }

    /// Checks a token's form, issuer and signature and returns its claims.
    /// `Ok(None)` when the token is not one of this issuer's (not a
    /// compact JWS, or another `iss`): upstream's JWT authenticator then
    /// has no opinion. A bad signature is upstream's go-jose error.
    pub fn verify(&self, token: &str) -> Result<Option<Value>, VerifyError> {
        self.verify_from(token, &self.issuer)
    }

    /// [`Self::verify`] for legacy secret-based tokens (`iss`
    /// [`legacy::LEGACY_ISSUER`]), signed with the same key.
    pub fn verify_legacy(&self, token: &str) -> Result<Option<Value>, VerifyError> {
        self.verify_from(token, legacy::LEGACY_ISSUER)
    }

    fn verify_from(&self, token: &str, issuer: &str) -> Result<Option<Value>, VerifyError> {
        if token.trim_start().starts_with('{') {
            return Ok(None);
        }
        let parts: Vec<&str> = token.split('.').collect();
        let [header, payload, sig] = parts[..] else { return Ok(None) };
        let Ok(payload_bytes) = URL_SAFE_NO_PAD.decode(payload) else { return Ok(None) };
        let Ok(claims) = serde_json::from_slice::<Value>(&payload_bytes) else { return Ok(None) };
        if claims.get("iss").and_then(Value::as_str) != Some(issuer) {
            return Ok(None);
        }
        let header: Option<Value> = URL_SAFE_NO_PAD.decode(header).ok().and_then(|h| serde_json::from_slice(&h).ok());
        let Some(header) = header else { return Ok(None) };
        let crypto = || VerifyError("go-jose/go-jose: error in cryptographic primitive".into());
        if header.get("alg").and_then(Value::as_str) != Some(rkube_pki::jws::ALGORITHM) {
            return Err(crypto());
        }
        let sig = URL_SAFE_NO_PAD.decode(sig).map_err(|_| crypto())?;
        let signed = &token[..header_len(token)];
        if !self.key.verify_signature(signed.as_bytes(), &sig) {
            return Err(crypto());
        }
        Ok(Some(claims))
    }
}

/// The length of `header.payload` in a compact JWS.
fn header_len(token: &str) -> usize {
    token.rfind('.').unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kid_is_the_base64url_sha256_of_the_pkix_public_key() {
        let issuer = TokenIssuer::ephemeral(DEFAULT_ISSUER);
        let spki = issuer.public_key_der();
        assert_eq!(spki.len(), 91);
        assert_eq!(&spki[..26], &rkube_pki::jws::P256_SPKI_PREFIX);
        let digest = ring::digest::digest(&ring::digest::SHA256, spki);
        assert_eq!(URL_SAFE_NO_PAD.decode(issuer.key_id()).unwrap(), digest.as_ref());
        assert_eq!(issuer.key_id().len(), 43);
    }

    #[test]
    fn signed_tokens_verify_and_tampered_or_foreign_ones_do_not() {
        let issuer = TokenIssuer::ephemeral(DEFAULT_ISSUER);
        let claims = json!({"iss": DEFAULT_ISSUER, "sub": "system:serviceaccount:default:default"});
        let token = issuer.sign(&claims).unwrap();
        let header: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(token.split('.').next().unwrap()).unwrap()).unwrap();
        assert_eq!(header, json!({"alg": "ES256", "kid": issuer.key_id()}));
        assert_eq!(issuer.verify(&token).unwrap(), Some(claims.clone()));

        let other = TokenIssuer::ephemeral(DEFAULT_ISSUER);
        let e = other.verify(&token).unwrap_err();
        assert_eq!(e.to_string(), "go-jose/go-jose: error in cryptographic primitive");
        let foreign = TokenIssuer::ephemeral("https://elsewhere");
        assert_eq!(foreign.verify(&token).unwrap(), None);
        assert_eq!(issuer.verify("garbage").unwrap(), None);
        assert_eq!(issuer.verify("a.b.c").unwrap(), None);
    }

    #[test]
    fn pkcs8_pem_keys_load() {
        use base64::engine::general_purpose::STANDARD;
        use ring::signature::{self, EcdsaKeyPair};
        let rng = ring::rand::SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pem =
            format!("-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n", STANDARD.encode(doc.as_ref()));
        let issuer = TokenIssuer::from_pkcs8_pem(&pem, DEFAULT_ISSUER).unwrap();
        assert_eq!(issuer.issuer(), DEFAULT_ISSUER);
        assert_eq!(issuer.api_audiences(), [DEFAULT_ISSUER]);
        assert!(TokenIssuer::from_pkcs8_pem("nope", DEFAULT_ISSUER).is_err());
    }
}
