//! Impersonation (upstream's `WithImpersonation` filter): a request may act
//! as another user with `Impersonate-User`, `Impersonate-Group` (repeated),
//! `Impersonate-Uid` and `Impersonate-Extra-<key>` headers.
//!
//! Each requested item is authorized for the requesting user with the
//! `impersonate` verb: `users`/`groups` (core group) by name, a
//! `system:serviceaccount:<ns>:<name>` user as `serviceaccounts` in that
//! namespace, `uids` and `userextras/<key>` in `authentication.k8s.io`.
//! The first refusal is a 403 worded as upstream's
//! `responsewriters.Forbidden` ([`crate::authz::forbidden`]). Groups, an extra or a uid without a user
//! are a 500, as upstream. The new user has exactly the requested groups
//! (a service account without groups gets its two groups), plus
//! `system:authenticated` unless it is `system:anonymous` or the groups
//! already hold `system:authenticated` or `system:unauthenticated`.

use std::collections::BTreeMap;

use axum::http::{HeaderMap, HeaderName};
use rkube_apimachinery::ApiError;

use super::{UserInfo, ANONYMOUS_USER, AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP};
use crate::authz::{Attributes, Authorizer, Decision};

/// The user who made an impersonating request, kept as a request
/// extension next to the impersonated [`UserInfo`] (audit logs both, as
/// upstream's `user` and `impersonatedUser`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requestor(pub UserInfo);

/// `Impersonate-User`.
pub const USER_HEADER: &str = "impersonate-user";
/// `Impersonate-Group`.
pub const GROUP_HEADER: &str = "impersonate-group";
/// `Impersonate-Uid`.
pub const UID_HEADER: &str = "impersonate-uid";
/// `Impersonate-Extra-` (followed by the percent-encoded extra key).
pub const EXTRA_PREFIX: &str = "impersonate-extra-";

const AUTHENTICATION_GROUP: &str = "authentication.k8s.io";

/// One thing a request asks to impersonate (upstream builds an
/// `ObjectReference` per item).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Item {
    ServiceAccount { namespace: String, name: String },
    User(String),
    Group(String),
    Extra { key: String, value: String },
    Uid(String),
}

impl Item {
    /// Go's `%v` of the `ObjectReference` upstream builds (Kind,
    /// Namespace, Name, UID, APIVersion, ResourceVersion, FieldPath).
    fn go_value(&self) -> String {
        let v1 = "authentication.k8s.io/v1";
        let (kind, ns, name, api_version, field) = match self {
            Item::ServiceAccount { namespace, name } => ("ServiceAccount", namespace.as_str(), name.as_str(), "", ""),
            Item::User(n) => ("User", "", n.as_str(), "", ""),
            Item::Group(n) => ("Group", "", n.as_str(), "", ""),
            Item::Extra { key, value } => ("UserExtra", "", value.as_str(), v1, key.as_str()),
            Item::Uid(u) => ("UID", "", u.as_str(), v1, ""),
        };
        format!("{{{kind} {ns} {name}  {api_version}  {field}}}")
    }

    /// The authorization attributes of impersonating this item.
    fn attributes(&self, requestor: &UserInfo) -> Attributes {
        let mut a = Attributes {
            user: requestor.clone(),
            verb: "impersonate".into(),
            resource_request: true,
            ..Attributes::default()
        };
        match self {
            Item::ServiceAccount { namespace, name } => {
                a.resource = "serviceaccounts".into();
                a.namespace = namespace.clone();
                a.name = name.clone();
            }
            Item::User(n) => {
                a.resource = "users".into();
                a.name = n.clone();
            }
            Item::Group(n) => {
                a.resource = "groups".into();
                a.name = n.clone();
            }
            Item::Extra { key, value } => {
                a.api_group = AUTHENTICATION_GROUP.into();
                a.resource = "userextras".into();
                a.subresource = key.clone();
                a.name = value.clone();
            }
            Item::Uid(u) => {
                a.api_group = AUTHENTICATION_GROUP.into();
                a.resource = "uids".into();
                a.name = u.clone();
            }
        }
        a
    }
}

fn header_values<'a>(headers: &'a HeaderMap, name: &str) -> impl Iterator<Item = String> + 'a {
    headers.get_all(name).iter().map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

/// `<ns>`, `<name>` of `system:serviceaccount:<ns>:<name>`.
fn split_service_account(user: &str) -> Option<(String, String)> {
    let rest = user.strip_prefix("system:serviceaccount:")?;
    let (ns, name) = rest.split_once(':')?;
    (!ns.is_empty() && !name.is_empty() && !name.contains(':')).then(|| (ns.to_string(), name.to_string()))
}

/// `%XX` escapes decoded (Go's `url.PathUnescape`); the raw key when it
/// does not decode.
fn unescape_extra_key(key: &str) -> String {
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
            match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                Some(b) => {
                    out.push(b);
                    i += 3;
                    continue;
                }
                None => return key.to_string(),
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| key.to_string())
}

/// The impersonation items of `headers`, in upstream's order (user,
/// groups, extras by header name, uid). Errors (a 500, as upstream) when
/// groups, extras or a uid come without a user.
fn requests(headers: &HeaderMap) -> Result<Vec<Item>, ApiError> {
    let mut items = Vec::new();
    let user = header_values(headers, USER_HEADER).next().unwrap_or_default();
    let has_user = !user.is_empty();
    if has_user {
        items.push(match split_service_account(&user) {
            Some((namespace, name)) => Item::ServiceAccount { namespace, name },
            None => Item::User(user),
        });
    }
    let mut has_other = false;
    for group in header_values(headers, GROUP_HEADER) {
        has_other = true;
        items.push(Item::Group(group));
    }
    let mut extra_names: Vec<&HeaderName> = headers.keys().filter(|k| k.as_str().starts_with(EXTRA_PREFIX)).collect();
    extra_names.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    for name in extra_names {
        has_other = true;
        let key = unescape_extra_key(&name.as_str()[EXTRA_PREFIX.len()..]);
        for value in header_values(headers, name.as_str()) {
            items.push(Item::Extra { key: key.clone(), value });
        }
    }
    let uid = header_values(headers, UID_HEADER).next().unwrap_or_default();
    if !uid.is_empty() {
        has_other = true;
        items.push(Item::Uid(uid));
    }
    if has_other && !has_user {
        let listed: Vec<String> = items.iter().map(Item::go_value).collect();
        return Err(ApiError::Internal(format!("requested [{}] without impersonating a user", listed.join(" "))));
    }
    Ok(items)
}

/// Whether `headers` ask for impersonation at all.
pub fn requested(headers: &HeaderMap) -> bool {
    headers.keys().any(|k| {
        let k = k.as_str();
        k == USER_HEADER || k == GROUP_HEADER || k == UID_HEADER || k.starts_with(EXTRA_PREFIX)
    })
}

/// Removes every impersonation header (after they were honoured).
pub fn strip_headers(headers: &mut HeaderMap) {
    let names: Vec<HeaderName> = headers
        .keys()
        .filter(|k| {
            let k = k.as_str();
            k == USER_HEADER || k == GROUP_HEADER || k == UID_HEADER || k.starts_with(EXTRA_PREFIX)
        })
        .cloned()
        .collect();
    for n in names {
        headers.remove(n);
    }
}

/// The user `requestor` acts as per `headers`, authorized by `authorizer`;
/// `Ok(None)` when nothing is impersonated. Errors are the 403 (refused)
/// and 500 (malformed) upstream answers.
pub fn impersonate(
    authorizer: &dyn Authorizer,
    requestor: &UserInfo,
    headers: &HeaderMap,
) -> Result<Option<UserInfo>, ApiError> {
    let items = requests(headers)?;
    if items.is_empty() {
        return Ok(None);
    }
    let groups_specified = headers.contains_key(GROUP_HEADER);
    let mut user = UserInfo::default();
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for item in &items {
        let attrs = item.attributes(requestor);
        let (decision, reason) = authorizer.authorize(&attrs);
        if decision != Decision::Allow {
            tracing::debug!(component = crate::COMPONENT, user = %requestor.name, item = ?item, "impersonation refused");
            return Err(crate::authz::forbidden(&attrs, &reason));
        }
        match item {
            Item::ServiceAccount { namespace, name } => {
                user.name = crate::serviceaccount::claims::username(namespace, name);
                if !groups_specified {
                    user.groups = vec!["system:serviceaccounts".into(), format!("system:serviceaccounts:{namespace}")];
                }
            }
            Item::User(n) => user.name = n.clone(),
            Item::Group(g) => user.groups.push(g.clone()),
            Item::Extra { key, value } => extra.entry(key.clone()).or_default().push(value.clone()),
            Item::Uid(u) => user.uid = u.clone(),
        }
    }
    if user.name != ANONYMOUS_USER
        && !user.groups.iter().any(|g| g == AUTHENTICATED_GROUP || g == UNAUTHENTICATED_GROUP)
    {
        user.groups.push(AUTHENTICATED_GROUP.into());
    }
    user.extra = extra;
    tracing::debug!(component = crate::COMPONENT, user = %requestor.name, as_user = %user.name, "impersonating");
    Ok(Some(user))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::{AuthenticatedAllowed, Rules};
    use axum::http::HeaderValue;

    /// Denies everything but what `allow` accepts.
    struct Only(fn(&Attributes) -> bool);
    impl Authorizer for Only {
        fn authorize(&self, attrs: &Attributes) -> (Decision, String) {
            if (self.0)(attrs) {
                (Decision::Allow, String::new())
            } else {
                (Decision::NoOpinion, String::new())
            }
        }
        fn rules_for(&self, _: &UserInfo, _: &str) -> Rules {
            Rules::default()
        }
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(HeaderName::from_bytes(k.as_bytes()).unwrap(), HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn bob() -> UserInfo {
        UserInfo { name: "bob".into(), groups: vec![AUTHENTICATED_GROUP.into()], ..UserInfo::default() }
    }

    #[test]
    fn a_permitted_user_acts_as_the_impersonated_user() {
        let h = headers(&[
            ("impersonate-user", "alice"),
            ("impersonate-group", "dev"),
            ("impersonate-group", "ops"),
            ("impersonate-uid", "u-1"),
            ("impersonate-extra-scopes", "view"),
            ("impersonate-extra-scopes", "edit"),
            ("impersonate-extra-example.com%2fteam", "a"),
        ]);
        assert!(requested(&h));
        let user = impersonate(&AuthenticatedAllowed, &bob(), &h).unwrap().unwrap();
        assert_eq!(user.name, "alice");
        assert_eq!(user.uid, "u-1");
        assert_eq!(user.groups, ["dev", "ops", "system:authenticated"]);
        assert_eq!(user.extra["scopes"], ["view", "edit"]);
        assert_eq!(user.extra["example.com/team"], ["a"]);
        assert_eq!(impersonate(&AuthenticatedAllowed, &bob(), &HeaderMap::new()).unwrap(), None);
    }

    #[test]
    fn service_accounts_get_their_groups_and_anonymous_gets_none_added() {
        let h = headers(&[("impersonate-user", "system:serviceaccount:ns1:robot")]);
        let user = impersonate(&AuthenticatedAllowed, &bob(), &h).unwrap().unwrap();
        assert_eq!(user.name, "system:serviceaccount:ns1:robot");
        assert_eq!(user.groups, ["system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"]);
        let h = headers(&[("impersonate-user", "system:anonymous")]);
        assert!(impersonate(&AuthenticatedAllowed, &bob(), &h).unwrap().unwrap().groups.is_empty());
        let h = headers(&[("impersonate-user", "x"), ("impersonate-group", "system:unauthenticated")]);
        assert_eq!(impersonate(&AuthenticatedAllowed, &bob(), &h).unwrap().unwrap().groups, ["system:unauthenticated"]);
    }

    #[test]
    fn each_item_needs_the_impersonate_verb_and_refusals_read_like_upstream() {
        let h = headers(&[("impersonate-user", "alice")]);
        let err = impersonate(&Only(|_| false), &bob(), &h).unwrap_err();
        let status = err.to_status();
        assert_eq!(status["code"], 403);
        assert_eq!(
            status["message"],
            r#"users "alice" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope"#
        );
        // The user is allowed but not the group.
        let h = headers(&[("impersonate-user", "alice"), ("impersonate-group", "system:masters")]);
        let err = impersonate(&Only(|a| a.resource == "users"), &bob(), &h).unwrap_err();
        assert_eq!(
            err.to_status()["message"],
            r#"groups "system:masters" is forbidden: User "bob" cannot impersonate resource "groups" in API group "" at the cluster scope"#
        );
        let h = headers(&[("impersonate-user", "system:serviceaccount:kube-system:admin")]);
        let err = impersonate(&Only(|_| false), &bob(), &h).unwrap_err();
        assert_eq!(
            err.to_status()["message"],
            r#"serviceaccounts "admin" is forbidden: User "bob" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "kube-system""#
        );
        let h = headers(&[("impersonate-user", "alice"), ("impersonate-extra-scopes", "view")]);
        let err = impersonate(&Only(|a| a.resource == "users"), &bob(), &h).unwrap_err();
        assert_eq!(
            err.to_status()["message"],
            r#"userextras.authentication.k8s.io "view" is forbidden: User "bob" cannot impersonate resource "userextras/scopes" in API group "authentication.k8s.io" at the cluster scope"#
        );
        let h = headers(&[("impersonate-user", "alice"), ("impersonate-uid", "1234")]);
        let err = impersonate(&Only(|a| a.resource == "users"), &bob(), &h).unwrap_err();
        assert_eq!(
            err.to_status()["message"],
            r#"uids.authentication.k8s.io "1234" is forbidden: User "bob" cannot impersonate resource "uids" in API group "authentication.k8s.io" at the cluster scope"#
        );
        // The anonymous user may not impersonate under today's policy.
        let h = headers(&[("impersonate-user", "alice")]);
        assert_eq!(impersonate(&AuthenticatedAllowed, &UserInfo::anonymous(), &h).unwrap_err().code(), 403);
    }

    #[test]
    fn groups_without_a_user_are_an_internal_error() {
        let h = headers(&[("impersonate-group", "system:masters")]);
        let err = impersonate(&AuthenticatedAllowed, &bob(), &h).unwrap_err();
        assert_eq!(err.code(), 500);
        assert_eq!(
            err.to_status()["message"],
            "Internal error occurred: requested [{Group  system:masters    }] without impersonating a user"
        );
        let mut h = headers(&[("impersonate-user", "a"), ("impersonate-group", "g"), ("impersonate-extra-k", "v")]);
        strip_headers(&mut h);
        assert!(h.is_empty());
    }
}
