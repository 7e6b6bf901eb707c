//! Service-account tokens: signing and verifying the JWTs the API server
//! issues (`serviceaccounts/{name}/token`) and reviews (`TokenReview`).
//!
//! - [`TokenIssuer`] holds the ES256 signing key (`sa.key`, PKCS#8 P-256),
//!   the issuer (`--service-account-issuer`) and the key id upstream
//!   derives from the public key; it signs and checks compact JWS tokens.
//! - [`claims`] builds upstream's claim set and turns verified claims back
//!   into the service-account user after checking the bound objects;
//! - [`legacy`] reads the claims of legacy secret-based tokens
//!   (`iss: kubernetes/serviceaccount`).

use std::fmt;

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair};
use serde_json::Value;

pub mod claims;
pub mod legacy;

/// Upstream's issuer (and API audience) on kubeadm-like clusters, the
/// default of `--service-account-issuer`.
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// The DER prefix of an ECDSA P-256 SubjectPublicKeyInfo (id-ecPublicKey,
/// prime256v1, then the BIT STRING header of the 65-byte point), which is
/// what Go's `x509.MarshalPKIXPublicKey` writes.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce,
    0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// Why a token this server might have issued does not verify. The text is
/// what `TokenReview.status.error` shows.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct VerifyError(pub String);

/// The service-account token signer and verifier.
pub struct TokenIssuer {
    issuer: String,
    key: EcdsaKeyPair,
    spki: Vec<u8>,
    kid: String,
}

impl fmt::Debug for TokenIssuer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the private key.
        f.debug_struct("TokenIssuer").field("issuer", &self.issuer).field("kid", &self.kid).finish()
    }
}

impl TokenIssuer {
    /// The issuer over a PKCS#8 PEM ECDSA P-256 private key (`sa.key`).
    /// Errors name what is wrong with the key.
    pub fn from_pkcs8_pem(pem: &str, issuer: &str) -> Result<TokenIssuer, String> {
        let der = pem_body(pem, "PRIVATE KEY").ok_or("the service-account key is not a PKCS#8 PEM private key")?;
        Self::from_pkcs8_der(&der, issuer)
    }

    fn from_pkcs8_der(der: &[u8], issuer: &str) -> Result<TokenIssuer, String> {
        let rng = SystemRandom::new();
        let key = EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, der, &rng)
            .map_err(|e| format!("the service-account key is not an ECDSA P-256 key: {e}"))?;
        let mut spki = P256_SPKI_PREFIX.to_vec();
        spki.extend_from_slice(key.public_key().as_ref());
        let kid = key_id(&spki);
        Ok(TokenIssuer { issuer: issuer.to_string(), key, spki, kid })
    }

    /// A fresh random key (for API servers built without a PKI, e.g. in
    /// tests); tokens it signs do not survive a restart.
    pub fn ephemeral(issuer: &str) -> TokenIssuer {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .expect("the system random source works");
        Self::from_pkcs8_der(doc.as_ref(), issuer).expect("a generated key parses")
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
        &self.kid
    }

    /// The public key as SubjectPublicKeyInfo DER.
    pub fn public_key_der(&self) -> &[u8] {
        &self.spki
    }

    /// Signs `claims` (a JSON object) as a compact JWS with header
    /// `{"alg":"ES256","kid":…}`.
    pub fn sign(&self, claims: &Value) -> Result<String, String> {
        let header = format!(r#"{{"alg":"ES256","kid":"{}"}}"#, self.kid);
        let payload = serde_json::to_vec(claims).map_err(|e| e.to_string())?;
        let input = format!("{}.{}", URL_SAFE_NO_PAD.encode(header), URL_SAFE_NO_PAD.encode(payload));
        let sig = self
            .key
            .sign(&SystemRandom::new(), input.as_bytes())
            .map_err(|_| "failed to sign the token".to_string())?;
        Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref())))
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
        if header.get("alg").and_then(Value::as_str) != Some("ES256") {
            return Err(crypto());
        }
        let sig = URL_SAFE_NO_PAD.decode(sig).map_err(|_| crypto())?;
        let public = signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, self.key.public_key());
        let signed = &token[..header_len(token)];
        public.verify(signed.as_bytes(), &sig).map_err(|_| crypto())?;
        Ok(Some(claims))
    }
}

/// The length of `header.payload` in a compact JWS.
fn header_len(token: &str) -> usize {
    token.rfind('.').unwrap_or(0)
}

/// The base64url SHA-256 of `spki` (the JWS key id).
pub fn key_id(spki: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, spki).as_ref())
}

/// The DER inside the first `-----BEGIN <label>-----` block of `pem`.
fn pem_body(pem: &str, label: &str) -> Option<Vec<u8>> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = pem.find(&begin)? + begin.len();
    let stop = start + pem[start..].find(&end)?;
    let b64: String = pem[start..stop].chars().filter(|c| !c.is_whitespace()).collect();
    STANDARD.decode(b64).ok()
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
        assert_eq!(&spki[..26], &P256_SPKI_PREFIX);
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
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pem =
            format!("-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n", STANDARD.encode(doc.as_ref()));
        let issuer = TokenIssuer::from_pkcs8_pem(&pem, DEFAULT_ISSUER).unwrap();
        assert_eq!(issuer.issuer(), DEFAULT_ISSUER);
        assert_eq!(issuer.api_audiences(), [DEFAULT_ISSUER]);
        assert!(TokenIssuer::from_pkcs8_pem("nope", DEFAULT_ISSUER).is_err());
    }
}
