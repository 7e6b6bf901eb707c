//! Bootstrap tokens (upstream's `plugin/pkg/auth/authenticator/token/bootstrap`).
//!
//! A token `<id>.<secret>` (`[a-z0-9]{6}.[a-z0-9]{16}`) authenticates when
//! the Secret `kube-system/bootstrap-token-<id>` exists, is not being
//! deleted, has type `bootstrap.kubernetes.io/token`, holds that
//! `token-secret` (compared in constant time) and `token-id`, has not
//! passed its RFC 3339 `expiration` (an unparsable one counts as expired),
//! is marked `usage-bootstrap-authentication: "true"` and its
//! `auth-extra-groups` are valid `system:bootstrappers:…` names. The user
//! is `system:bootstrap:<id>` with the sorted, deduplicated groups
//! `system:bootstrappers` plus the extra groups. Any mismatch means "not
//! this authenticator's token" (no error), as upstream.

use std::collections::BTreeSet;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::Value;

use super::UserInfo;
use crate::rest::Api;

/// The namespace bootstrap token Secrets live in.
pub const NAMESPACE: &str = "kube-system";
/// The Secret name prefix (`bootstrap-token-<id>`).
pub const SECRET_PREFIX: &str = "bootstrap-token-";
/// The Secret type.
pub const SECRET_TYPE: &str = "bootstrap.kubernetes.io/token";
/// The user name prefix (`system:bootstrap:<id>`).
pub const USER_PREFIX: &str = "system:bootstrap:";
/// The group every bootstrap token user is in.
pub const DEFAULT_GROUP: &str = "system:bootstrappers";

/// Splits `<id>.<secret>` when it has the bootstrap token form.
pub fn parse_token(token: &str) -> Option<(&str, &str)> {
    let (id, secret) = token.split_once('.')?;
    let ok = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    (ok(id, 6) && ok(secret, 16)).then_some((id, secret))
}

/// Whether `group` is a valid extra group (`system:bootstrappers:` then
/// `[a-z0-9:-]{0,255}[a-z0-9]`).
fn valid_extra_group(group: &str) -> bool {
    let Some(rest) = group.strip_prefix("system:bootstrappers:") else { return false };
    !rest.is_empty()
        && rest.len() <= 256
        && rest.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b':' || b == b'-')
        && rest.bytes().last().is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// A data value of the Secret, decoded (`""` when absent or not base64).
fn data(secret: &Value, key: &str) -> String {
    secret
        .pointer(&format!("/data/{key}"))
        .and_then(Value::as_str)
        .and_then(|b64| STANDARD.decode(b64).ok())
        .and_then(|b| String::from_utf8(b).ok())
        .unwrap_or_default()
}

/// The user a bootstrap token Secret grants for `token`, judged at Unix
/// time `now` (see module docs). `None`: not a valid bootstrap token.
pub fn user_from_secret(secret: &Value, id: &str, token_secret: &str, now: i64) -> Option<UserInfo> {
    if secret.pointer("/metadata/deletionTimestamp").is_some_and(|v| !v.is_null()) {
        return None;
    }
    if secret.get("type").and_then(Value::as_str) != Some(SECRET_TYPE)
        || !secret.get("data").is_some_and(Value::is_object)
    {
        return None;
    }
    let stored = data(secret, "token-secret");
    if !constant_time_eq(stored.as_bytes(), token_secret.as_bytes()) {
        return None;
    }
    if data(secret, "token-id") != id {
        return None;
    }
    let expiration = data(secret, "expiration");
    if !expiration.is_empty() {
        match expiration.parse::<jiff::Timestamp>() {
            Ok(t) if t.as_second() > now => {}
            _ => return None,
        }
    }
    if data(secret, "usage-bootstrap-authentication") != "true" {
        return None;
    }
    let mut groups = BTreeSet::from([DEFAULT_GROUP.to_string()]);
    let extra = data(secret, "auth-extra-groups");
    if !extra.is_empty() {
        for g in extra.split(',') {
            if !valid_extra_group(g) {
                return None;
            }
            groups.insert(g.to_string());
        }
    }
    Some(UserInfo { name: format!("{USER_PREFIX}{id}"), groups: groups.into_iter().collect(), ..UserInfo::default() })
}

/// Authenticates `token` against the bootstrap token Secrets the API
/// server stores. Errors only when the store fails.
pub async fn authenticate(api: &Api, token: &str) -> Result<Option<UserInfo>, String> {
    let Some((id, token_secret)) = parse_token(token) else { return Ok(None) };
    let Some(secret) = super::lookup(api, "secrets", NAMESPACE, &format!("{SECRET_PREFIX}{id}")).await? else {
        tracing::debug!(component = crate::COMPONENT, id, "no secret matches the bootstrap token");
        return Ok(None);
    };
    let user = user_from_secret(&secret, id, token_secret, jiff::Timestamp::now().as_second());
    if user.is_none() {
        tracing::debug!(component = crate::COMPONENT, id, "the bootstrap token secret does not accept the token");
    }
    Ok(user)
}

/// Equality in time independent of where the inputs differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn secret(data: &[(&str, &str)]) -> Value {
        let data: serde_json::Map<String, Value> =
            data.iter().map(|(k, v)| (k.to_string(), json!(STANDARD.encode(v)))).collect();
        json!({"metadata": {"name": "bootstrap-token-abcdef", "namespace": "kube-system"}, "type": SECRET_TYPE, "data": data})
    }

    const GOOD: &[(&str, &str)] = &[
        ("token-id", "abcdef"),
        ("token-secret", "0123456789abcdef"),
        ("usage-bootstrap-authentication", "true"),
        ("auth-extra-groups", "system:bootstrappers:worker,system:bootstrappers:a-b"),
        ("expiration", "2030-01-01T00:00:00Z"),
    ];

    #[test]
    fn tokens_have_the_bootstrap_form() {
        assert_eq!(parse_token("abcdef.0123456789abcdef"), Some(("abcdef", "0123456789abcdef")));
        for bad in ["abcdef.0123456789abcde", "ABCDEF.0123456789abcdef", "abcdef0123456789abcdef", "abc.def", ""] {
            assert_eq!(parse_token(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_valid_secret_grants_the_bootstrap_user_with_sorted_groups() {
        let now = 1_700_000_000;
        let user = user_from_secret(&secret(GOOD), "abcdef", "0123456789abcdef", now).unwrap();
        assert_eq!(user.name, "system:bootstrap:abcdef");
        assert_eq!(user.groups, ["system:bootstrappers", "system:bootstrappers:a-b", "system:bootstrappers:worker"]);
        assert_eq!(user.uid, "");
    }

    #[test]
    fn every_failed_condition_refuses() {
        let now = 1_700_000_000;
        let with = |k: &str, v: &str| {
            let mut d: Vec<(&str, &str)> = GOOD.iter().filter(|(key, _)| *key != k).copied().collect();
            d.push((k, v));
            secret(&d.iter().map(|(a, b)| (*a, *b)).collect::<Vec<_>>())
        };
        assert!(user_from_secret(&secret(GOOD), "abcdef", "0123456789abcdeX", now).is_none());
        assert!(user_from_secret(&with("token-id", "zzzzzz"), "abcdef", "0123456789abcdef", now).is_none());
        assert!(
            user_from_secret(&with("expiration", "2020-01-01T00:00:00Z"), "abcdef", "0123456789abcdef", now).is_none()
        );
        assert!(user_from_secret(&with("expiration", "tomorrow"), "abcdef", "0123456789abcdef", now).is_none());
        assert!(user_from_secret(&with("usage-bootstrap-authentication", "false"), "abcdef", "0123456789abcdef", now)
            .is_none());
        assert!(
            user_from_secret(&with("auth-extra-groups", "system:masters"), "abcdef", "0123456789abcdef", now).is_none()
        );
        let mut wrong_type = secret(GOOD);
        wrong_type["type"] = json!("Opaque");
        assert!(user_from_secret(&wrong_type, "abcdef", "0123456789abcdef", now).is_none());
        let mut deleting = secret(GOOD);
        deleting["metadata"]["deletionTimestamp"] = json!("2023-01-01T00:00:00Z");
        assert!(user_from_secret(&deleting, "abcdef", "0123456789abcdef", now).is_none());
    }

    #[test]
    fn comparison_is_exact() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
