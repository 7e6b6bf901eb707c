//! Bootstrap tokens (upstream `k8s.io/cluster-bootstrap`): the Secret
//! format, token syntax, the detached JWS that signs `cluster-info`, and
//! rkube's join token that carries a bootstrap token plus the CA's hash.

use std::collections::BTreeMap;

use base64::Engine;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::ByteString;

/// Namespace of bootstrap-token Secrets.
pub const NAMESPACE: &str = "kube-system";
/// `SecretTypeBootstrapToken`.
pub const SECRET_TYPE: &str = "bootstrap.kubernetes.io/token";
/// Secret names are this prefix plus the token id.
pub const SECRET_PREFIX: &str = "bootstrap-token-";
/// Data key of the token id.
pub const TOKEN_ID_KEY: &str = "token-id";
/// Data key of the token secret.
pub const TOKEN_SECRET_KEY: &str = "token-secret";
/// Data key of the expiry (RFC 3339).
pub const EXPIRATION_KEY: &str = "expiration";
/// Data key of the human description.
pub const DESCRIPTION_KEY: &str = "description";
/// Data key of the extra groups (comma-separated) the token authenticates into.
pub const EXTRA_GROUPS_KEY: &str = "auth-extra-groups";
/// Usage: the token authenticates as `system:bootstrap:<id>`.
pub const USAGE_AUTHENTICATION: &str = "usage-bootstrap-authentication";
/// Usage: the bootstrap signer signs `cluster-info` with the token.
pub const USAGE_SIGNING: &str = "usage-bootstrap-signing";
/// kubeadm's default extra group for node-join tokens.
pub const DEFAULT_NODE_TOKEN_GROUP: &str = "system:bootstrappers:kubeadm:default-node-token";
/// The extra group of control-plane join tokens (`rkube token create
/// --control-plane`): it may read the key material of
/// `GET /rkube/v1/bootstrap/control-plane` (ClusterRole
/// `rkube:control-plane-join`). Plain node tokens lack it.
pub const CONTROL_PLANE_GROUP: &str = "system:bootstrappers:rkube:control-plane";
/// The group every bootstrap-token user is in.
pub const BOOTSTRAPPERS_GROUP: &str = "system:bootstrappers";
/// The user name prefix of bootstrap-token users.
pub const USER_PREFIX: &str = "system:bootstrap:";
/// The public ConfigMap in `kube-public` the bootstrap signer signs.
pub const CLUSTER_INFO: &str = "cluster-info";
/// Namespace of `cluster-info`.
pub const CLUSTER_INFO_NAMESPACE: &str = "kube-public";
/// Data key of the kubeconfig in `cluster-info`.
pub const KUBECONFIG_KEY: &str = "kubeconfig";
/// Prefix of the data keys holding detached JWS signatures, plus the token id.
pub const JWS_KEY_PREFIX: &str = "jws-kubeconfig-";

/// A bootstrap token `<id>.<secret>`: id 6 and secret 16 characters of `[a-z0-9]`.
#[derive(Clone, PartialEq, Eq)]
pub struct BootstrapToken {
    /// The public part, also the Secret's name suffix.
    pub id: String,
    /// The private part.
    pub secret: String,
}

impl std::fmt::Debug for BootstrapToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BootstrapToken").field("id", &self.id).finish_non_exhaustive()
    }
}

impl std::fmt::Display for BootstrapToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.id, self.secret)
    }
}

fn valid_part(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

impl BootstrapToken {
    /// Parses `<id>.<secret>` (upstream's `^([a-z0-9]{6})\.([a-z0-9]{16})$`).
    pub fn parse(s: &str) -> Option<BootstrapToken> {
        let (id, secret) = s.split_once('.')?;
        (valid_part(id, 6) && valid_part(secret, 16)).then(|| BootstrapToken { id: id.into(), secret: secret.into() })
    }

    /// A fresh random token.
    pub fn generate() -> BootstrapToken {
        use ring::rand::SecureRandom;
        const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
        let rng = ring::rand::SystemRandom::new();
        let pick = |n: usize| -> String {
            let mut out = String::with_capacity(n);
            while out.len() < n {
                let mut b = [0u8; 1];
                rng.fill(&mut b).expect("the system RNG works");
                // Rejection sampling keeps the distribution uniform (252 = 7 × 36).
                if b[0] < 252 {
                    out.push(ALPHABET[(b[0] % 36) as usize] as char);
                }
            }
            out
        };
        BootstrapToken { id: pick(6), secret: pick(16) }
    }

    /// The Secret `kube-system/bootstrap-token-<id>` as `kubeadm token
    /// create` writes it: both usages, the default node-token group, the
    /// expiry (RFC 3339) when `expires` is given.
    pub fn to_secret(&self, expires: Option<jiff::Timestamp>, description: Option<&str>) -> Secret {
        self.to_secret_with_groups(expires, description, &[])
    }

    /// [`Self::to_secret`] with `extra_groups` added after the default
    /// node-token group in `auth-extra-groups` (each must be a
    /// `system:bootstrappers:` group, which the authenticator requires).
    pub fn to_secret_with_groups(
        &self,
        expires: Option<jiff::Timestamp>,
        description: Option<&str>,
        extra_groups: &[&str],
    ) -> Secret {
        let mut data = BTreeMap::new();
        let mut put = |k: &str, v: &str| {
            data.insert(k.to_string(), v.to_string());
        };
        put(TOKEN_ID_KEY, &self.id);
        put(TOKEN_SECRET_KEY, &self.secret);
        if let Some(t) = expires {
            put(EXPIRATION_KEY, &t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
        }
        if let Some(d) = description {
            put(DESCRIPTION_KEY, d);
        }
        put(USAGE_AUTHENTICATION, "true");
        put(USAGE_SIGNING, "true");
        let groups: Vec<&str> = std::iter::once(DEFAULT_NODE_TOKEN_GROUP).chain(extra_groups.iter().copied()).collect();
        put(EXTRA_GROUPS_KEY, &groups.join(","));
        Secret {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(format!("{SECRET_PREFIX}{}", self.id)),
                namespace: Some(NAMESPACE.into()),
                ..Default::default()
            },
            type_: Some(SECRET_TYPE.into()),
            string_data: Some(data),
            ..Default::default()
        }
    }
}

/// Creates a new bootstrap token Secret (as `kubeadm token create`):
/// valid for `ttl` from now (`None`: never expires), with `description`.
/// A token id that is taken already is replaced by a fresh one.
///
/// Errors: the API refused the Secret (e.g. 403 without permission).
pub async fn create(
    client: &kube::Client,
    ttl: Option<std::time::Duration>,
    description: Option<&str>,
) -> Result<BootstrapToken, kube::Error> {
    create_with_groups(client, ttl, description, &[]).await
}

/// [`create`] with `extra_groups` in `auth-extra-groups` besides the
/// default node-token group (e.g. [`CONTROL_PLANE_GROUP`]).
pub async fn create_with_groups(
    client: &kube::Client,
    ttl: Option<std::time::Duration>,
    description: Option<&str>,
    extra_groups: &[&str],
) -> Result<BootstrapToken, kube::Error> {
    let api = kube::Api::<Secret>::namespaced(client.clone(), NAMESPACE);
    let mut attempts = 0;
    loop {
        let token = BootstrapToken::generate();
        let expires = ttl
            .map(|t| jiff::Timestamp::now() + jiff::SignedDuration::from_secs(t.as_secs().min(i64::MAX as u64) as i64));
        match api
            .create(&kube::api::PostParams::default(), &token.to_secret_with_groups(expires, description, extra_groups))
            .await
        {
            Ok(_) => return Ok(token),
            Err(e) if crate::runtime::is_conflict(&e) && attempts < 3 => attempts += 1,
            Err(e) => return Err(e),
        }
    }
}

/// The string value of `key` in a Secret's data (or stringData).
pub fn secret_value(secret: &Secret, key: &str) -> Option<String> {
    if let Some(ByteString(v)) = secret.data.as_ref().and_then(|d| d.get(key)) {
        return String::from_utf8(v.clone()).ok();
    }
    secret.string_data.as_ref().and_then(|d| d.get(key)).cloned()
}

/// The expiry of a bootstrap-token Secret: `None` when it has none;
/// `Some(Err)` when the value does not parse (upstream treats that as
/// expired: a token of unknown lifetime is never trusted).
pub fn expiration(secret: &Secret) -> Option<Result<jiff::Timestamp, String>> {
    let raw = secret_value(secret, EXPIRATION_KEY)?;
    Some(raw.parse::<jiff::Timestamp>().map_err(|e| format!("invalid expiration {raw:?}: {e}")))
}

/// Whether the Secret has expired at `now` (an unparsable expiry counts as expired).
pub fn is_expired(secret: &Secret, now: jiff::Timestamp) -> bool {
    match expiration(secret) {
        None => false,
        Some(Ok(t)) => t <= now,
        Some(Err(_)) => true,
    }
}

/// The token of a Secret the bootstrap signer may sign with (upstream's
/// `validateSecretForSigning`): the bootstrap type, the name matching the
/// id, a well-formed id and secret, `usage-bootstrap-signing: "true"` and
/// not expired.
pub fn token_for_signing(secret: &Secret, now: jiff::Timestamp) -> Option<BootstrapToken> {
    if secret.type_.as_deref() != Some(SECRET_TYPE) {
        return None;
    }
    let id = secret_value(secret, TOKEN_ID_KEY)?;
    let token = BootstrapToken::parse(&format!("{id}.{}", secret_value(secret, TOKEN_SECRET_KEY)?))?;
    if secret.metadata.name.as_deref() != Some(&format!("{SECRET_PREFIX}{id}")) {
        return None;
    }
    if secret_value(secret, USAGE_SIGNING).as_deref() != Some("true") || is_expired(secret, now) {
        return None;
    }
    Some(token)
}

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The detached JWS (RFC 7515 appendix F: `header..signature`) of
/// `content` with HS256 under the token, as upstream's
/// `ComputeDetachedSignature`: protected header `{"alg":"HS256","kid":"<id>"}`,
/// key = the token secret zero-padded to 32 bytes.
pub fn detached_signature(content: &str, token: &BootstrapToken) -> String {
    let header = b64url(format!(r#"{{"alg":"HS256","kid":"{}"}}"#, token.id).as_bytes());
    let mut key = token.secret.as_bytes().to_vec();
    if key.len() < 32 {
        key.resize(32, 0);
    }
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key);
    let signing_input = format!("{header}.{}", b64url(content.as_bytes()));
    let tag = ring::hmac::sign(&key, signing_input.as_bytes());
    format!("{header}..{}", b64url(tag.as_ref()))
}

/// Checks a detached JWS against `content` and the token: the header must
/// name HS256 and the token id, and the MAC must verify (constant time).
pub fn verify_detached_signature(jws: &str, content: &str, token: &BootstrapToken) -> bool {
    let Some((header, signature)) = jws.split_once("..") else { return false };
    let Ok(header_json) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(header) else { return false };
    let Ok(header_value) = serde_json::from_slice::<serde_json::Value>(&header_json) else { return false };
    if header_value["alg"] != "HS256" || header_value["kid"] != token.id.as_str() {
        return false;
    }
    let Ok(tag) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(signature) else { return false };
    let mut key = token.secret.as_bytes().to_vec();
    if key.len() < 32 {
        key.resize(32, 0);
    }
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key);
    let signing_input = format!("{header}.{}", b64url(content.as_bytes()));
    ring::hmac::verify(&key, signing_input.as_bytes(), &tag).is_ok()
}

/// A join token: `K10<sha256 of the CA certificate's DER, 64 hex digits>::<id>.<secret>`
/// (the k3s layout; `K10` marks the format version, the hash pins the
/// cluster CA so that the joining side needs no prior trust).
#[derive(Clone, PartialEq, Eq)]
pub struct JoinToken {
    /// Lower-case hex SHA-256 of the CA certificate (DER).
    pub ca_hash: String,
    /// The bootstrap token.
    pub token: BootstrapToken,
}

impl std::fmt::Debug for JoinToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinToken").field("ca_hash", &self.ca_hash).field("token", &self.token).finish()
    }
}

impl std::fmt::Display for JoinToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "K10{}::{}", self.ca_hash, self.token)
    }
}

impl JoinToken {
    /// Parses `K10<64 hex>::<id>.<secret>`.
    pub fn parse(s: &str) -> Result<JoinToken, String> {
        let bad = || "a join token looks like K10<64 hex digits>::<6 chars>.<16 chars>".to_string();
        let rest = s.trim().strip_prefix("K10").ok_or_else(bad)?;
        let (hash, token) = rest.split_once("::").ok_or_else(bad)?;
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        let token = BootstrapToken::parse(token).ok_or_else(bad)?;
        Ok(JoinToken { ca_hash: hash.to_ascii_lowercase(), token })
    }

    /// The join token for `token` and the CA certificate `ca_pem`; `None`
    /// when the PEM holds no certificate.
    pub fn new(ca_pem: &str, token: BootstrapToken) -> Option<JoinToken> {
        Some(JoinToken { ca_hash: ca_pem_hash(ca_pem)?, token })
    }
}

/// Lower-case hex SHA-256 of a certificate's DER.
pub fn ca_der_hash(der: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, der).as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// [`ca_der_hash`] of the first certificate of a PEM text (the join
/// token's pin); `None` when the PEM holds no certificate.
pub fn ca_pem_hash(pem: &str) -> Option<String> {
    crate::pem::certificate_der(pem).map(|der| ca_der_hash(&der))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token() -> BootstrapToken {
        BootstrapToken::parse("abcdef.0123456789abcdef").unwrap()
    }

    #[test]
    fn control_plane_tokens_add_their_group_to_the_node_token_group() {
        let plain = token().to_secret(None, None);
        let groups = |s: &Secret| secret_value(s, EXTRA_GROUPS_KEY).unwrap();
        assert_eq!(groups(&plain), DEFAULT_NODE_TOKEN_GROUP);
        let cp = token().to_secret_with_groups(None, Some("control plane"), &[CONTROL_PLANE_GROUP]);
        assert_eq!(groups(&cp), format!("{DEFAULT_NODE_TOKEN_GROUP},{CONTROL_PLANE_GROUP}"));
        assert_eq!(secret_value(&cp, DESCRIPTION_KEY).as_deref(), Some("control plane"));
    }

    #[test]
    fn tokens_have_upstreams_syntax() {
        assert_eq!(token().to_string(), "abcdef.0123456789abcdef");
        for bad in
            ["abcde.0123456789abcdef", "ABCDEF.0123456789abcdef", "abcdef.0123456789abcde", "abcdef0123456789abcdef"]
        {
            assert!(BootstrapToken::parse(bad).is_none(), "{bad}");
        }
        let t = BootstrapToken::generate();
        assert_eq!(BootstrapToken::parse(&t.to_string()), Some(t));
    }

    #[test]
    fn detached_signature_matches_upstreams_test_vectors() {
        // cluster-bootstrap's jws_test.go vectors (id "joshua").
        let content = "Hello from the other side. I must have called a thousand times.";
        let token = BootstrapToken { id: "joshua".into(), secret: "my voice is my passcode".into() };
        let jws = detached_signature(content, &token);
        assert_eq!(jws, "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..VShe2taLd-YTrmWuRkcL_8QTNDHYxQIEBsAYYiIj1_8");
        assert_eq!(
            detached_signature("", &token),
            "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..7Ui1ALizW4jXphVUB7xUqC9vLYLL9RZeOFfVLoB7Tgk"
        );
        let no_secret = BootstrapToken { id: "joshua".into(), secret: String::new() };
        assert_eq!(
            detached_signature(content, &no_secret),
            "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..UfkqvDGiIFxrMnFseDj9LYJOLNrvjW8aHhF71mvvAs8"
        );
        assert!(verify_detached_signature(&jws, content, &token));
        assert!(!verify_detached_signature(&format!("{jws}foo"), content, &token));
        assert!(!verify_detached_signature(&jws, "other content", &token));
        assert!(!verify_detached_signature(&jws, content, &no_secret));
    }

    #[test]
    fn the_secret_carries_kubeadms_fields_and_expiry_decides_validity() {
        let now: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let mut secret = token().to_secret(Some("2026-01-02T00:00:00Z".parse().unwrap()), Some("join"));
        assert_eq!(secret.metadata.name.as_deref(), Some("bootstrap-token-abcdef"));
        assert_eq!(secret.type_.as_deref(), Some(SECRET_TYPE));
        assert_eq!(secret_value(&secret, EXPIRATION_KEY).as_deref(), Some("2026-01-02T00:00:00Z"));
        assert_eq!(secret_value(&secret, EXTRA_GROUPS_KEY).as_deref(), Some(DEFAULT_NODE_TOKEN_GROUP));
        assert_eq!(token_for_signing(&secret, now), Some(token()));
        assert!(!is_expired(&secret, now));
        assert!(is_expired(&secret, "2026-01-03T00:00:00Z".parse().unwrap()));
        secret.string_data.as_mut().unwrap().insert(USAGE_SIGNING.into(), "false".into());
        assert_eq!(token_for_signing(&secret, now), None);
        secret.string_data.as_mut().unwrap().insert(EXPIRATION_KEY.into(), "tomorrow".into());
        assert!(is_expired(&secret, now));
    }

    #[test]
    fn join_tokens_round_trip_and_refuse_malformed_input() {
        let hash = "ab".repeat(32);
        let jt = JoinToken::parse(&format!("K10{hash}::abcdef.0123456789abcdef")).unwrap();
        assert_eq!(jt.ca_hash, hash);
        assert_eq!(jt.token, token());
        assert_eq!(jt.to_string(), format!("K10{hash}::abcdef.0123456789abcdef"));
        for bad in ["abcdef.0123456789abcdef", "K10abc::abcdef.0123456789abcdef", &format!("K10{hash}::abcdef")] {
            assert!(JoinToken::parse(bad).is_err(), "{bad}");
        }
    }
}
