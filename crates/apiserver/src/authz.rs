//! The authorization seam: who may do what.
//!
//! Upstream asks an authorizer chain (Node, RBAC, …) for every request and
//! for the access reviews (`SubjectAccessReview` and friends, `kubectl auth
//! can-i`). rkube has no RBAC yet: its effective policy is that every
//! authenticated user may do everything, and only anonymous requests are
//! refused (by [`crate::authn`]). [`AuthenticatedAllowed`] states that
//! policy so the reviews report what the server really does; the security
//! item replaces it with RBAC behind the same [`Authorizer`] trait.

use crate::authn::{UserInfo, ANONYMOUS_USER, UNAUTHENTICATED_GROUP};

/// What a request (or a reviewed request) wants to do: upstream's
/// `authorizer.Attributes`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attributes {
    /// The subject.
    pub user: UserInfo,
    /// `get`, `list`, `create`, … (or an HTTP verb in lower case for
    /// non-resource paths).
    pub verb: String,
    /// Whether this is a resource request (else `path` applies).
    pub resource_request: bool,
    /// The namespace (empty: cluster-wide or all namespaces).
    pub namespace: String,
    /// The API group (`""` for core).
    pub api_group: String,
    /// The resource (`pods`).
    pub resource: String,
    /// The subresource (`log`).
    pub subresource: String,
    /// The object name.
    pub name: String,
    /// The non-resource path (`/healthz`).
    pub path: String,
}

/// An authorizer's answer (upstream's `authorizer.Decision`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Explicitly allowed.
    Allow,
    /// Explicitly denied (no later authorizer is asked).
    Deny,
    /// No opinion: the request is denied unless another authorizer allows it.
    NoOpinion,
}

/// One rule a user holds on resources, as a `SelfSubjectRulesReview`
/// reports it (`ResourceRule`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceRule {
    /// Verbs, `*` for all.
    pub verbs: Vec<String>,
    /// API groups, `*` for all.
    pub api_groups: Vec<String>,
    /// Resources, `*` for all.
    pub resources: Vec<String>,
    /// Object names; empty for all.
    pub resource_names: Vec<String>,
}

/// One rule a user holds on non-resource URLs (`NonResourceRule`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NonResourceRule {
    /// Verbs, `*` for all.
    pub verbs: Vec<String>,
    /// URL paths, `*` for all (a trailing `*` is a prefix match).
    pub non_resource_urls: Vec<String>,
}

/// What a user may do in a namespace (upstream's `RuleResolver` result).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rules {
    /// Rules on resources.
    pub resource_rules: Vec<ResourceRule>,
    /// Rules on non-resource URLs.
    pub non_resource_rules: Vec<NonResourceRule>,
    /// Whether the list may be missing rules (an authorizer that cannot
    /// enumerate its rules).
    pub incomplete: bool,
}

/// Decides requests and lists a user's rules. Implementations must be
/// cheap to call per request.
pub trait Authorizer: Send + Sync {
    /// The decision on `attrs` and a human-readable reason (may be empty).
    fn authorize(&self, attrs: &Attributes) -> (Decision, String);

    /// Every rule `user` holds in `namespace`.
    fn rules_for(&self, user: &UserInfo, namespace: &str) -> Rules;
}

/// The reason [`AuthenticatedAllowed`] gives for its decisions.
pub const ALLOW_AUTHENTICATED_REASON: &str = "rkube has no RBAC yet: every authenticated user may do everything";

/// rkube's policy until RBAC: any subject other than the anonymous user
/// (`system:anonymous` or a member of `system:unauthenticated`) is allowed
/// everything; anonymous subjects get no opinion (denied). Replaced by the
/// RBAC authorizer in the security item.
#[derive(Clone, Copy, Debug, Default)]
pub struct AuthenticatedAllowed;

impl AuthenticatedAllowed {
    fn is_anonymous(user: &UserInfo) -> bool {
        user.name == ANONYMOUS_USER || user.groups.iter().any(|g| g == UNAUTHENTICATED_GROUP)
    }
}

impl Authorizer for AuthenticatedAllowed {
    fn authorize(&self, attrs: &Attributes) -> (Decision, String) {
        if Self::is_anonymous(&attrs.user) {
            (Decision::NoOpinion, String::new())
        } else {
            (Decision::Allow, ALLOW_AUTHENTICATED_REASON.to_string())
        }
    }

    fn rules_for(&self, user: &UserInfo, _namespace: &str) -> Rules {
        if Self::is_anonymous(user) {
            return Rules::default();
        }
        let all = || vec!["*".to_string()];
        Rules {
            resource_rules: vec![ResourceRule {
                verbs: all(),
                api_groups: all(),
                resources: all(),
                resource_names: Vec::new(),
            }],
            non_resource_rules: vec![NonResourceRule { verbs: all(), non_resource_urls: all() }],
            incomplete: false,
        }
    }
}

/// The authorizer the server uses today.
pub fn current() -> &'static dyn Authorizer {
    &AuthenticatedAllowed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo { name: name.into(), groups: groups.iter().map(|g| g.to_string()).collect(), ..Default::default() }
    }

    #[test]
    fn authenticated_users_are_allowed_with_a_reason_and_anonymous_ones_are_not() {
        let attrs =
            Attributes { user: user("bob", &["system:authenticated"]), verb: "get".into(), ..Default::default() };
        let (decision, reason) = AuthenticatedAllowed.authorize(&attrs);
        assert_eq!(decision, Decision::Allow);
        assert_eq!(reason, ALLOW_AUTHENTICATED_REASON);
        for anon in [user("system:anonymous", &[]), user("x", &["system:unauthenticated"])] {
            let attrs = Attributes { user: anon, ..Default::default() };
            assert_eq!(AuthenticatedAllowed.authorize(&attrs), (Decision::NoOpinion, String::new()));
        }
    }

    #[test]
    fn rules_are_everything_for_authenticated_users() {
        let rules = AuthenticatedAllowed.rules_for(&user("system:admin", &["system:masters"]), "default");
        assert_eq!(rules.resource_rules[0].verbs, ["*"]);
        assert_eq!(rules.resource_rules[0].api_groups, ["*"]);
        assert_eq!(rules.resource_rules[0].resources, ["*"]);
        assert_eq!(rules.non_resource_rules[0].non_resource_urls, ["*"]);
        assert!(!rules.incomplete);
        assert_eq!(AuthenticatedAllowed.rules_for(&user("system:anonymous", &[]), "default"), Rules::default());
    }
}
