//! List continue tokens, as upstream encodes them: unpadded URL-safe
//! base64 of `{"v":"meta.k8s.io/v1","rv":<list revision>,"start":"<key
//! after the collection prefix>"}`. A token pins the revision of the first
//! page, so every page reads the same snapshot; `rv: -1` (handed out when
//! that revision was compacted) continues at the current revision.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use rkube_apimachinery::ApiError;
use serde::{Deserialize, Serialize};

const TOKEN_VERSION: &str = "meta.k8s.io/v1";

#[derive(Serialize, Deserialize)]
struct Wire {
    v: String,
    rv: i64,
    start: String,
}

/// A decoded continue token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContinueToken {
    /// The revision the list is served at (`-1`: the current one).
    pub revision: i64,
    /// The first key to return, relative to the collection prefix.
    pub start: String,
}

/// The token that continues a list at `revision` from `next_key` (a full
/// key; `prefix` is cut from it).
pub fn encode(prefix: &str, next_key: &str, revision: i64) -> String {
    let start = next_key.strip_prefix(prefix).unwrap_or(next_key).to_string();
    let wire = Wire { v: TOKEN_VERSION.into(), rv: revision, start };
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&wire).expect("a token always serializes"))
}

/// Decodes a token; a malformed one is a 400 `invalid continue token: continue
/// key is not valid: ...` as upstream words it.
pub fn decode(token: &str) -> Result<ContinueToken, ApiError> {
    let invalid =
        |why: String| ApiError::BadRequest(format!("invalid continue token: continue key is not valid: {why}"));
    let raw = URL_SAFE_NO_PAD.decode(token.trim_end_matches('=')).map_err(|e| invalid(e.to_string()))?;
    let wire: Wire = serde_json::from_slice(&raw).map_err(|e| invalid(e.to_string()))?;
    if wire.v != TOKEN_VERSION {
        return Err(invalid(format!("incorrect encoded start resourceVersion (version {TOKEN_VERSION})")));
    }
    if wire.start.is_empty() {
        return Err(invalid("encoded start key empty".into()));
    }
    if wire.start.split('/').any(|seg| seg == "..") || wire.start.starts_with('/') {
        return Err(invalid(format!("continue key {:?} escapes the collection", wire.start)));
    }
    Ok(ContinueToken { revision: wire.rv, start: wire.start })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_relative_to_the_prefix() {
        let t = encode("/registry/configmaps/default/", "/registry/configmaps/default/b\u{0}", 42);
        let raw = URL_SAFE_NO_PAD.decode(&t).unwrap();
        assert_eq!(String::from_utf8(raw).unwrap(), r#"{"v":"meta.k8s.io/v1","rv":42,"start":"b\u0000"}"#);
        assert_eq!(decode(&t).unwrap(), ContinueToken { revision: 42, start: "b\u{0}".into() });
    }

    #[test]
    fn garbage_is_a_bad_request() {
        let e = decode("%%%").unwrap_err();
        assert_eq!(e.code(), 400);
        assert!(e.to_string().starts_with("invalid continue token: continue key is not valid"), "{e}");
        let escaping = URL_SAFE_NO_PAD.encode(br#"{"v":"meta.k8s.io/v1","rv":1,"start":"../secrets/x"}"#);
        assert_eq!(decode(&escaping).unwrap_err().code(), 400);
    }
}
