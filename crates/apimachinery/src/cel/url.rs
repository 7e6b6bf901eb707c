//! Kubernetes' CEL URL library (upstream `library/urls.go`): `url(string)`,
//! `isURL(string)` and the members `getScheme`, `getHost`, `getHostname`,
//! `getPort`, `getEscapedPath`, `getQuery`.
//!
//! A URL must be what Go's `url.ParseRequestURI` accepts: an absolute URI
//! (`scheme:…`) or an absolute path (`/…`). The parser here follows Go's
//! `net/url` rules for those: scheme syntax, `//authority` with optional
//! userinfo, bracketed IPv6 hosts and a numeric port, `%XX` escapes, no
//! control characters; the fragment is dropped as `url.Parse` separates it.

use std::collections::HashMap;
use std::sync::Arc;

use cel::common::types::STRING_TYPE;
use cel::objects::{Key, Map, Opaque};
use cel::{DeclarationError, Env, ExecutionError, Value};

use super::values::{err, opaque, opaque_arg, opaque_type, overload, str_arg, string_list};

/// The URL type's name (upstream `apiservercel.URLType`).
pub const TYPE_NAME: &str = "kubernetes.URL";

/// A parsed URL.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Url {
    scheme: String,
    /// `host[:port]`, IPv6 in brackets.
    host: String,
    /// The path as written (escapes kept).
    raw_path: String,
    raw_query: String,
}

impl Opaque for Url {
    fn runtime_type_name(&self) -> &str {
        TYPE_NAME
    }
}

/// Go's `url.ParseRequestURI` (fragment split off first, as upstream
/// parses again with `url.Parse`); the error reads as Go's
/// `parse "<url>": <reason>`.
pub fn parse(raw: &str) -> Result<Url, String> {
    let fail = |why: &str| format!("parse {raw:?}: {why}");
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err(fail("net/url: invalid control character in URL"));
    }
    if raw.is_empty() {
        return Err(fail("empty url"));
    }
    let mut url = Url::default();
    let mut rest = raw;
    if let Some((before, _)) = rest.split_once('#') {
        // ParseRequestURI itself would keep it; the result comes from Parse.
        rest = before;
    }
    // Scheme: a letter, then letters, digits, `+`, `-`, `.`, up to `:`.
    if let Some(colon) = rest.find(':') {
        let candidate = &rest[..colon];
        let starts_alpha = candidate.bytes().next().is_some_and(|b| b.is_ascii_alphabetic());
        let valid = starts_alpha && candidate.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b));
        if valid {
            url.scheme = candidate.to_ascii_lowercase();
            rest = &rest[colon + 1..];
        } else if colon == 0 {
            return Err(fail("missing protocol scheme"));
        }
    }
    if let Some((before, query)) = rest.split_once('?') {
        url.raw_query = query.to_string();
        rest = before;
    }
    if !rest.starts_with('/') {
        if url.scheme.is_empty() {
            return Err(fail("invalid URI for request"));
        }
        // An opaque URI (`mailto:x`): no host or path.
        return Ok(url);
    }
    if !url.scheme.is_empty() && rest.starts_with("//") {
        let authority_end = rest[2..].find('/').map(|i| i + 2).unwrap_or(rest.len());
        let authority = &rest[2..authority_end];
        url.host = parse_authority(authority).map_err(|why| fail(&why))?;
        rest = &rest[authority_end..];
    }
    check_escapes(rest).map_err(|why| fail(&why))?;
    url.raw_path = rest.to_string();
    Ok(url)
}

/// The host of `[userinfo@]host[:port]`, validated as Go does.
fn parse_authority(authority: &str) -> Result<String, String> {
    let host = match authority.rfind('@') {
        Some(at) => &authority[at + 1..],
        None => authority,
    };
    let port = if let Some(inner) = host.strip_prefix('[') {
        let close = inner.find(']').ok_or("missing ']' in host")?;
        &inner[close + 1..]
    } else {
        host.rfind(':').map(|i| &host[i..]).unwrap_or("")
    };
    let valid_port = port.is_empty() || (port.starts_with(':') && port[1..].bytes().all(|b| b.is_ascii_digit()));
    if !valid_port {
        return Err(format!("invalid port {port:?} after host"));
    }
    check_escapes(host)?;
    Ok(host.to_string())
}

/// Every `%` starts a two-hex-digit escape.
fn check_escapes(s: &str) -> Result<(), String> {
    let b = s.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c == b'%' {
            let ok = b.len() > i + 2 && b[i + 1].is_ascii_hexdigit() && b[i + 2].is_ascii_hexdigit();
            if !ok {
                let end = (i + 3).min(s.len());
                return Err(format!("invalid URL escape {:?}", &s[i..end]));
            }
        }
    }
    Ok(())
}

/// `s` with `%XX` decoded (and `+` as a space when `plus` is set).
fn unescape(s: &str, plus: bool) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = s.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' if plus => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

impl Url {
    /// Go's `Hostname()`: the host without port and brackets.
    fn hostname(&self) -> &str {
        if let Some(inner) = self.host.strip_prefix('[') {
            return inner.split(']').next().unwrap_or("");
        }
        self.host.rsplit_once(':').map(|(h, _)| h).unwrap_or(&self.host)
    }

    /// Go's `Port()`.
    fn port(&self) -> &str {
        let after = match self.host.strip_prefix('[') {
            Some(inner) => inner.split_once(']').map(|(_, r)| r).unwrap_or(""),
            None => self.host.rfind(':').map(|i| &self.host[i..]).unwrap_or(""),
        };
        after.strip_prefix(':').unwrap_or("")
    }

    /// Go's `EscapedPath()`: the path with the characters a path may not
    /// hold escaped (escapes already there kept).
    fn escaped_path(&self) -> String {
        let mut out = String::with_capacity(self.raw_path.len());
        for c in self.raw_path.chars() {
            let keep = c.is_ascii_alphanumeric() || "-_.~$&+,/:;=@%!*'()".contains(c);
            if keep {
                out.push(c);
            } else {
                let mut buf = [0u8; 4];
                for byte in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("%{byte:02X}"));
                }
            }
        }
        out
    }

    /// Go's `Query()`: keys and values unescaped, repeated keys collected;
    /// pairs that do not unescape (or hold `;`) are dropped.
    fn query(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for pair in self.raw_query.split('&').filter(|p| !p.is_empty() && !p.contains(';')) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let (Some(k), Some(v)) = (unescape(k, true), unescape(v, true)) else { continue };
            match out.iter_mut().find(|(key, _)| *key == k) {
                Some((_, values)) => values.push(v),
                None => out.push((k, vec![v])),
            }
        }
        out
    }
}

fn url(args: &[Value]) -> Result<&Url, ExecutionError> {
    opaque_arg::<Url>(args, 0)
}

fn string(s: impl Into<String>) -> Value {
    Value::String(Arc::new(s.into()))
}

overload!(string_to_url, |a| parse(str_arg(a, 0)?)
    .map(opaque)
    .map_err(|e| err(format!("URL parse error during conversion from string: {e}"))));
overload!(is_url, |a| Ok(Value::Bool(parse(str_arg(a, 0)?).is_ok())));
overload!(get_scheme, |a| Ok(string(url(a)?.scheme.clone())));
overload!(get_host, |a| Ok(string(url(a)?.host.clone())));
overload!(get_hostname, |a| Ok(string(url(a)?.hostname())));
overload!(get_port, |a| Ok(string(url(a)?.port())));
overload!(get_escaped_path, |a| Ok(string(url(a)?.escaped_path())));
overload!(get_query, |a| {
    let map: HashMap<Key, Value> =
        url(a)?.query().into_iter().map(|(k, values)| (Key::String(Arc::new(k)), string_list(values))).collect();
    Ok(Value::Map(Map { map: Arc::new(map) }))
});

/// Registers the library on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let t = || opaque_type(TYPE_NAME);
    env.add_overload("url", "string_to_url", vec![STRING_TYPE], string_to_url)?;
    env.add_overload("isURL", "is_url_string", vec![STRING_TYPE], is_url)?;
    env.add_member_overload("getScheme", "url_get_scheme", t(), vec![], get_scheme)?;
    env.add_member_overload("getHost", "url_get_host", t(), vec![], get_host)?;
    env.add_member_overload("getHostname", "url_get_hostname", t(), vec![], get_hostname)?;
    env.add_member_overload("getPort", "url_get_port", t(), vec![], get_port)?;
    env.add_member_overload("getEscapedPath", "url_get_escaped_path", t(), vec![], get_escaped_path)?;
    env.add_member_overload("getQuery", "url_get_query", t(), vec![], get_query)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::eval_str;
    use serde_json::json;

    #[test]
    fn url_functions_follow_upstream_examples() {
        // Examples from upstream's library/urls.go documentation.
        let cases = [
            ("isURL('https://user:pass@example.com:80/path?query=val#fragment')", json!(true)),
            ("isURL('/absolute-path')", json!(true)),
            ("isURL('https://a:b:c/')", json!(false)),
            ("isURL('../relative-path')", json!(false)),
            ("url('/path').getScheme()", json!("")),
            ("url('https://example.com/').getScheme()", json!("https")),
            ("url('https://example.com:80/').getHost()", json!("example.com:80")),
            ("url('https://example.com/').getHost()", json!("example.com")),
            ("url('https://[::1]:80/').getHost()", json!("[::1]:80")),
            ("url('https://[::1]/').getHost()", json!("[::1]")),
            ("url('/path').getHost()", json!("")),
            ("url('https://example.com:80/').getHostname()", json!("example.com")),
            ("url('https://127.0.0.1:80/').getHostname()", json!("127.0.0.1")),
            ("url('https://[::1]:80/').getHostname()", json!("::1")),
            ("url('/path').getHostname()", json!("")),
            ("url('https://example.com:80/').getPort()", json!("80")),
            ("url('https://example.com/').getPort()", json!("")),
            ("url('/path').getPort()", json!("")),
            ("url('https://example.com/path').getEscapedPath()", json!("/path")),
            ("url('https://example.com/path with spaces/').getEscapedPath()", json!("/path%20with%20spaces/")),
            ("url('https://example.com').getEscapedPath()", json!("")),
            ("url('https://example.com/path?k1=a&k2=b&k2=c').getQuery()", json!({"k1": ["a"], "k2": ["b", "c"]})),
            (
                "url('https://example.com/path?key with spaces=value with spaces').getQuery()",
                json!({"key with spaces": ["value with spaces"]}),
            ),
            ("url('https://example.com/path?').getQuery()", json!({})),
            ("url('https://example.com/path').getQuery()", json!({})),
        ];
        for (src, want) in cases {
            assert_eq!(eval_str(src), Ok(want), "{src}");
        }
        assert_eq!(
            eval_str("url('../relative-path')"),
            Err("URL parse error during conversion from string: parse \"../relative-path\": invalid URI for request"
                .into())
        );
        assert_eq!(
            eval_str("url('https://a:b:c/')"),
            Err("URL parse error during conversion from string: parse \"https://a:b:c/\": invalid port \":c\" after host"
                .into())
        );
    }
}
