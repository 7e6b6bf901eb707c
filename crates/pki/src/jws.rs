//! The service-account signing key (`sa.key`, upstream's
//! `--service-account-private-key-file` / `--service-account-signing-key-file`)
//! and the compact JWS tokens it signs.
//!
//! Shared by the API server (bound tokens it issues, and the verification
//! of every service-account token) and the controller manager's legacy
//! token controller, which signs `kubernetes.io/service-account-token`
//! Secrets with the same key, as upstream's two binaries share the file.
//! Keys are ECDSA P-256 (the PKI writes only those), tokens ES256.

use std::fmt;

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair};
use serde_json::Value;

/// The DER prefix of an ECDSA P-256 SubjectPublicKeyInfo (id-ecPublicKey,
/// prime256v1, then the BIT STRING header of the 65-byte point), which is
/// what Go's `x509.MarshalPKIXPublicKey` writes.
pub const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce,
    0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// The JWS `alg` of every token this key signs.
pub const ALGORITHM: &str = "ES256";

/// An ES256 signing key with its public key and JWS key id.
pub struct SigningKey {
    key: EcdsaKeyPair,
    spki: Vec<u8>,
    kid: String,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the private key.
        f.debug_struct("SigningKey").field("kid", &self.kid).finish()
    }
}

impl SigningKey {
    /// The key in a PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`, ECDSA
    /// P-256), the form of `sa.key`. Errors name what is wrong.
    pub fn from_pkcs8_pem(pem: &str) -> Result<SigningKey, String> {
        let der = pem_body(pem, "PRIVATE KEY").ok_or("the service-account key is not a PKCS#8 PEM private key")?;
        Self::from_pkcs8_der(&der)
    }

    /// The key in PKCS#8 DER.
    pub fn from_pkcs8_der(der: &[u8]) -> Result<SigningKey, String> {
        let rng = SystemRandom::new();
        let key = EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, der, &rng)
            .map_err(|e| format!("the service-account key is not an ECDSA P-256 key: {e}"))?;
        let mut spki = P256_SPKI_PREFIX.to_vec();
        spki.extend_from_slice(key.public_key().as_ref());
        let kid = key_id(&spki);
        Ok(SigningKey { key, spki, kid })
    }

    /// Reads `path` (a PKCS#8 PEM key file). Errors name the file.
    pub fn from_file(path: &std::path::Path) -> Result<SigningKey, String> {
        let pem = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::from_pkcs8_pem(&pem).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// A fresh random key (servers built without a PKI, tests).
    pub fn generate() -> SigningKey {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .expect("the system random source works");
        Self::from_pkcs8_der(doc.as_ref()).expect("a generated key parses")
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
    /// `{"alg":"ES256","kid":…}`, as upstream's `jwtTokenGenerator`.
    pub fn sign(&self, claims: &Value) -> Result<String, String> {
        let header = format!(r#"{{"alg":"{ALGORITHM}","kid":"{}"}}"#, self.kid);
        let payload = serde_json::to_vec(claims).map_err(|e| e.to_string())?;
        let input = format!("{}.{}", URL_SAFE_NO_PAD.encode(header), URL_SAFE_NO_PAD.encode(payload));
        let sig = self
            .key
            .sign(&SystemRandom::new(), input.as_bytes())
            .map_err(|_| "failed to sign the token".to_string())?;
        Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref())))
    }

    /// Whether `sig` (the raw 64-byte r‖s of ES256) signs `signed`
    /// (`header.payload` of a compact JWS) with this key.
    pub fn verify_signature(&self, signed: &[u8], sig: &[u8]) -> bool {
        let public = signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, self.key.public_key());
        public.verify(signed, sig).is_ok()
    }
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
        let key = SigningKey::generate();
        let spki = key.public_key_der();
        assert_eq!(spki.len(), 91);
        assert_eq!(&spki[..26], &P256_SPKI_PREFIX);
        let digest = ring::digest::digest(&ring::digest::SHA256, spki);
        assert_eq!(URL_SAFE_NO_PAD.decode(key.key_id()).unwrap(), digest.as_ref());
        assert_eq!(key.key_id().len(), 43);
    }

    #[test]
    fn signatures_verify_with_the_same_key_only() {
        let key = SigningKey::generate();
        let token = key.sign(&json!({"sub": "x"})).unwrap();
        let (signed, sig) = token.rsplit_once('.').unwrap();
        let sig = URL_SAFE_NO_PAD.decode(sig).unwrap();
        let header: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(token.split('.').next().unwrap()).unwrap()).unwrap();
        assert_eq!(header, json!({"alg": "ES256", "kid": key.key_id()}));
        assert!(key.verify_signature(signed.as_bytes(), &sig));
        assert!(!SigningKey::generate().verify_signature(signed.as_bytes(), &sig));
        assert!(!key.verify_signature(b"other", &sig));
    }

    #[test]
    fn the_pki_service_account_key_loads_and_garbage_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let files = crate::PkiFiles::new(dir.path());
        let names = crate::ServingNames {
            advertise_address: "192.0.2.10".parse().unwrap(),
            host_addresses: vec![],
            kubernetes_service_ip: "10.43.0.1".parse().unwrap(),
            cluster_domain: "cluster.local".into(),
            extra: vec![],
        };
        let pki = crate::ClusterPki::ensure(&files, &names).unwrap();
        let key = SigningKey::from_pkcs8_pem(&pki.service_account_key_pem).unwrap();
        let again = SigningKey::from_file(&files.service_account_key).unwrap();
        assert_eq!(key.key_id(), again.key_id());
        assert!(SigningKey::from_pkcs8_pem("nope").unwrap_err().contains("not a PKCS#8 PEM"));
        let missing = SigningKey::from_file(&dir.path().join("absent.key")).unwrap_err();
        assert!(missing.contains("absent.key"), "{missing}");
    }
}
