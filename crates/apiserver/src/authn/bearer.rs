//! Where a bearer token travels: the `Authorization` header (upstream's
//! `bearertoken` request authenticator) and, for WebSocket upgrades that
//! cannot set headers from a browser, a `Sec-WebSocket-Protocol` entry
//! `base64url.bearer.authorization.k8s.io.<base64url token>` (upstream's
//! `websocket.ProtocolAuthenticator`).

use axum::http::{header, HeaderMap, HeaderValue};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

/// The WebSocket subprotocol prefix carrying a token.
pub const PROTOCOL_PREFIX: &str = "base64url.bearer.authorization.k8s.io.";

/// The token of `Authorization: Bearer <token>` (scheme case-insensitive;
/// the value trimmed, then split on single spaces as Go's
/// `strings.SplitN(auth, " ", 3)`). `None` for any other or an empty
/// value, which leaves the request to the other authenticators.
pub fn from_authorization(headers: &HeaderMap) -> Option<String> {
    let raw = headers.get(header::AUTHORIZATION)?;
    parse_authorization(&String::from_utf8_lossy(raw.as_bytes()))
}

/// The token of an `Authorization` header value (see [`from_authorization`]).
pub fn parse_authorization(value: &str) -> Option<String> {
    let auth = value.trim();
    let mut parts = auth.splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then(|| token.to_string())
}

/// Whether the request asks for a WebSocket upgrade (`Connection`
/// containing `upgrade` and `Upgrade: websocket`).
pub fn is_websocket(headers: &HeaderMap) -> bool {
    let connection_upgrade = headers
        .get_all(header::CONNECTION)
        .iter()
        .any(|v| String::from_utf8_lossy(v.as_bytes()).split(',').any(|t| t.trim().eq_ignore_ascii_case("upgrade")));
    connection_upgrade
        && headers
            .get(header::UPGRADE)
            .is_some_and(|v| String::from_utf8_lossy(v.as_bytes()).trim().eq_ignore_ascii_case("websocket"))
}

/// The token a WebSocket upgrade carries in its subprotocols. `Ok(None)`:
/// not a WebSocket request, or no token protocol. Errors with upstream's
/// messages for a bad encoding or more than one token.
pub fn from_websocket(headers: &HeaderMap) -> Result<Option<String>, String> {
    if !is_websocket(headers) {
        return Ok(None);
    }
    let mut token = None;
    for value in headers.get_all(header::SEC_WEBSOCKET_PROTOCOL) {
        for protocol in String::from_utf8_lossy(value.as_bytes()).split(',') {
            let Some(encoded) = protocol.trim().strip_prefix(PROTOCOL_PREFIX) else { continue };
            if token.is_some() {
                return Err("multiple base64.bearer.authorization tokens specified".into());
            }
            let bytes = URL_SAFE_NO_PAD
                .decode(encoded)
                .map_err(|_| "invalid base64.bearer.authorization token encoding".to_string())?;
            let text = String::from_utf8(bytes).map_err(|_| "invalid base64.bearer.authorization token".to_string())?;
            token = Some(text);
        }
    }
    Ok(token.filter(|t| !t.is_empty()))
}

/// Drops the token protocol from `Sec-WebSocket-Protocol` once the token
/// authenticated, as upstream does, so it is not echoed or forwarded.
pub fn strip_websocket_token(headers: &mut HeaderMap) {
    let kept: Vec<String> = headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .flat_map(|v| {
            String::from_utf8_lossy(v.as_bytes()).split(',').map(|p| p.trim().to_string()).collect::<Vec<_>>()
        })
        .filter(|p| !p.is_empty() && !p.starts_with(PROTOCOL_PREFIX))
        .collect();
    headers.remove(header::SEC_WEBSOCKET_PROTOCOL);
    if !kept.is_empty() {
        if let Ok(v) = HeaderValue::from_str(&kept.join(",")) {
            headers.insert(header::SEC_WEBSOCKET_PROTOCOL, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(), HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn authorization_bearer_values_parse_as_upstream() {
        let t = |v: &str| from_authorization(&headers(&[("authorization", v)]));
        assert_eq!(t("Bearer abc"), Some("abc".into()));
        assert_eq!(t("bearer abc"), Some("abc".into()));
        assert_eq!(t("  Bearer abc  "), Some("abc".into()));
        assert_eq!(t("Bearer abc def"), Some("abc".into()));
        assert_eq!(t("Bearer  abc"), None);
        assert_eq!(t("Bearer"), None);
        assert_eq!(t("Basic YWxhZGRpbjpvcGVuc2VzYW1l"), None);
        assert_eq!(t(""), None);
        assert_eq!(from_authorization(&HeaderMap::new()), None);
    }

    #[test]
    fn websocket_protocol_tokens_decode_and_are_stripped() {
        let upgrade = [("connection", "Upgrade"), ("upgrade", "websocket")];
        let mut h = headers(&upgrade);
        h.append(
            header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_str(&format!("v5.channel.k8s.io, {PROTOCOL_PREFIX}{}", URL_SAFE_NO_PAD.encode("tok")))
                .unwrap(),
        );
        assert_eq!(from_websocket(&h).unwrap(), Some("tok".into()));
        strip_websocket_token(&mut h);
        assert_eq!(h.get(header::SEC_WEBSOCKET_PROTOCOL).unwrap(), "v5.channel.k8s.io");
        assert_eq!(from_websocket(&h).unwrap(), None);

        let mut bad = headers(&upgrade);
        bad.append(header::SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_str(&format!("{PROTOCOL_PREFIX}!!")).unwrap());
        assert_eq!(from_websocket(&bad).unwrap_err(), "invalid base64.bearer.authorization token encoding");
        let mut two = headers(&upgrade);
        let p = format!("{PROTOCOL_PREFIX}YQ,{PROTOCOL_PREFIX}Yg");
        two.append(header::SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_str(&p).unwrap());
        assert_eq!(from_websocket(&two).unwrap_err(), "multiple base64.bearer.authorization tokens specified");
        // Not an upgrade: the protocol header is not looked at.
        let mut plain = HeaderMap::new();
        plain.append(header::SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_str(&p).unwrap());
        assert_eq!(from_websocket(&plain).unwrap(), None);
    }
}
