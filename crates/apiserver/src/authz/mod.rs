//! Authorization: may this user do this (upstream's authorizer chain,
//! `--authorization-mode=Node,RBAC`).
//!
//! - [`ServerAuthorizer`]: the chain the server asks for every request and
//!   the access reviews: members of `system:masters` are allowed everything
//!   (upstream's privileged-group authorizer), then the Node authorizer
//!   ([`node`]), then RBAC ([`rbac`]); the first Allow wins, and the
//!   reasons of the others are kept for the refusal;
//! - [`filter`]: the HTTP filter that turns a request into [`Attributes`]
//!   and answers refusals with upstream's 403;
//! - [`policy`]: the bootstrap roles and bindings, reconciled at start;
//! - [`escalation`]: RBAC's escalation prevention for role and binding
//!   writes (applied by `crate::admission::rbac`);
//! - [`follow`]: the watches that feed the RBAC and Node indexes.
//!
//! Code without an [`crate::rest::Api`] at hand (impersonation) reaches the
//! chain through [`current`].

use std::sync::Arc;

use rkube_apimachinery::{ApiError, GroupResource};

use crate::authn::{UserInfo, MASTERS_GROUP};

pub mod escalation;
pub mod filter;
pub mod follow;
pub mod node;
pub mod policy;
pub mod rbac;

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
    /// The request's raw field selector (`spec.nodeName=n1`), which the
    /// Node authorizer honours for lists and watches.
    pub field_selector: String,
}

impl Attributes {
    /// The value `field` must equal in [`Attributes::field_selector`]
    /// (`field=value` or `field==value`), if it requires one.
    pub fn field_equals(&self, field: &str) -> Option<&str> {
        self.field_selector.split(',').find_map(|req| {
            let (k, v) = req.split_once("==").or_else(|| req.split_once('=')).filter(|(k, _)| !k.ends_with('!'))?;
            (k.trim() == field).then(|| v.trim())
        })
    }
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

/// The server's authorizer chain (upstream's union of the privileged-group
/// authorizer, Node and RBAC).
pub struct ServerAuthorizer {
    rbac: Arc<rbac::RbacAuthorizer>,
    node: Arc<node::NodeAuthorizer>,
    started: std::sync::atomic::AtomicBool,
    /// A wait for the initial state timed out: later requests do not wait.
    gave_up: std::sync::atomic::AtomicBool,
}

impl Default for ServerAuthorizer {
    fn default() -> Self {
        ServerAuthorizer::new()
    }
}

impl ServerAuthorizer {
    /// A chain with empty indexes; [`ServerAuthorizer::start`] fills them.
    pub fn new() -> ServerAuthorizer {
        ServerAuthorizer {
            rbac: Arc::new(rbac::RbacAuthorizer::new()),
            node: Arc::new(node::NodeAuthorizer::new()),
            started: std::sync::atomic::AtomicBool::new(false),
            gave_up: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Starts the watches that feed the RBAC and Node indexes from the
    /// server's stores (by `(group, version, plural)`); needs a Tokio
    /// runtime. Idempotent.
    pub fn start(&self, stores: &crate::admission::plugins::Stores) {
        if self.started.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let get = |g: &'static str, p: &'static str| stores.get(&(g, "v1", p)).cloned();
        let rbac_stores = rbac::index::Kind::ALL
            .iter()
            .filter_map(|k| Some((*k, get("rbac.authorization.k8s.io", k.plural())?)))
            .collect();
        self.rbac.start(rbac_stores);
        if let Some(pods) = get("", "pods") {
            self.node.start(pods, get("", "persistentvolumeclaims"));
        }
    }

    /// Waits (at most `limit`) for the indexes' initial state. Once a wait
    /// has timed out (the store does not answer), later calls only report
    /// whether the state has arrived since, so requests are not held up.
    pub async fn wait_ready(&self, limit: std::time::Duration) -> bool {
        use std::sync::atomic::Ordering;
        let limit = if self.gave_up.load(Ordering::Relaxed) { std::time::Duration::ZERO } else { limit };
        let ready = self.rbac.wait_ready(limit).await && self.node.wait_ready(limit).await;
        if !ready {
            self.gave_up.store(true, Ordering::Relaxed);
        }
        ready
    }

    /// The RBAC authorizer (escalation checks resolve rules with it).
    pub fn rbac(&self) -> &Arc<rbac::RbacAuthorizer> {
        &self.rbac
    }

    /// The Node authorizer.
    pub fn node(&self) -> &Arc<node::NodeAuthorizer> {
        &self.node
    }
}

/// The authorizer of the first API built in this process (the server's),
/// for code that has no [`crate::rest::Api`] at hand; prefer
/// [`crate::rest::Api::authorizer`].
static CURRENT: std::sync::OnceLock<Arc<ServerAuthorizer>> = std::sync::OnceLock::new();

/// Records the process's authorizer for [`current`] (the first call wins).
pub fn set_current(authorizer: &Arc<ServerAuthorizer>) {
    let _ = CURRENT.set(authorizer.clone());
}

/// The process's authorizer ([`set_current`]); before any API exists, an
/// empty chain that allows only `system:masters`.
pub fn current() -> &'static dyn Authorizer {
    static EMPTY: std::sync::OnceLock<ServerAuthorizer> = std::sync::OnceLock::new();
    match CURRENT.get() {
        Some(a) => a.as_ref(),
        None => EMPTY.get_or_init(ServerAuthorizer::new),
    }
}

/// A policy that allows every authenticated user everything and anonymous
/// users nothing: a stand-in for tests of code that takes an
/// [`Authorizer`]. The server uses [`ServerAuthorizer`].
#[derive(Clone, Copy, Debug, Default)]
pub struct AuthenticatedAllowed;

impl Authorizer for AuthenticatedAllowed {
    fn authorize(&self, attrs: &Attributes) -> (Decision, String) {
        if attrs.user.name == crate::authn::ANONYMOUS_USER
            || attrs.user.groups.iter().any(|g| g == crate::authn::UNAUTHENTICATED_GROUP)
        {
            (Decision::NoOpinion, String::new())
        } else {
            (Decision::Allow, String::new())
        }
    }

    fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> Rules {
        Rules::default()
    }
}

/// Whether `user` is in `system:masters`.
pub fn is_privileged(user: &UserInfo) -> bool {
    user.groups.iter().any(|g| g == MASTERS_GROUP)
}

impl Authorizer for ServerAuthorizer {
    fn authorize(&self, attrs: &Attributes) -> (Decision, String) {
        if is_privileged(&attrs.user) {
            return (Decision::Allow, String::new());
        }
        let mut reasons: Vec<String> = Vec::new();
        for (decision, reason) in [self.node.authorize(attrs), self.rbac.authorize(attrs)] {
            if decision != Decision::NoOpinion {
                return (decision, reason);
            }
            if !reason.is_empty() {
                reasons.push(reason);
            }
        }
        (Decision::NoOpinion, reasons.join("\n"))
    }

    /// The RBAC rules of `user` (upstream's privileged-group authorizer
    /// resolves no rules: an admin's list is what its bindings grant).
    fn rules_for(&self, user: &UserInfo, namespace: &str) -> Rules {
        let mut rules = Rules::default();
        // Nodes' permissions are not enumerable (upstream's Node RulesFor).
        if node::node_name(user).is_some() {
            rules.incomplete = true;
        }
        let more = self.rbac.rules_for(user, namespace);
        rules.resource_rules.extend(more.resource_rules);
        rules.non_resource_rules.extend(more.non_resource_rules);
        rules.incomplete |= more.incomplete;
        rules
    }
}

/// Upstream's `forbiddenMessage`: `User "bob" cannot list resource "pods"
/// in API group "" in the namespace "default"` (`at the cluster scope`
/// without a namespace; `cannot get path "/api"` for non-resource requests).
pub fn forbidden_message(attrs: &Attributes) -> String {
    let user = &attrs.user.name;
    if !attrs.resource_request {
        return format!("User \"{user}\" cannot {} path \"{}\"", attrs.verb, attrs.path);
    }
    let mut resource = attrs.resource.clone();
    if !attrs.subresource.is_empty() {
        resource = format!("{resource}/{}", attrs.subresource);
    }
    let scope = if attrs.namespace.is_empty() {
        "at the cluster scope".to_string()
    } else {
        format!("in the namespace \"{}\"", attrs.namespace)
    };
    format!(
        "User \"{user}\" cannot {} resource \"{resource}\" in API group \"{}\" {scope}",
        attrs.verb, attrs.api_group
    )
}

/// The 403 of a refused request (upstream's `responsewriters.Forbidden`):
/// `<resource>[.<group>] ["<name>"] is forbidden: <message>[: <reason>]`,
/// or `forbidden: <message>` for non-resource requests.
pub fn forbidden(attrs: &Attributes, reason: &str) -> ApiError {
    let mut message = forbidden_message(attrs);
    if !reason.is_empty() {
        message = format!("{message}: {reason}");
    }
    let resource = if attrs.resource_request {
        GroupResource { group: attrs.api_group.clone(), resource: attrs.resource.clone() }
    } else {
        GroupResource::default()
    };
    let prefix = if resource.resource.is_empty() && resource.group.is_empty() {
        "forbidden".to_string()
    } else if attrs.name.is_empty() {
        format!("{resource} is forbidden")
    } else {
        format!("{resource} \"{}\" is forbidden", attrs.name)
    };
    ApiError::Forbidden { resource, name: attrs.name.clone(), message: format!("{prefix}: {message}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo { name: name.into(), groups: groups.iter().map(|g| g.to_string()).collect(), ..Default::default() }
    }

    #[test]
    fn forbidden_messages_read_like_upstream() {
        let mut a = Attributes {
            user: user("bob", &[]),
            verb: "list".into(),
            resource_request: true,
            resource: "pods".into(),
            namespace: "default".into(),
            ..Default::default()
        };
        let status = forbidden(&a, "").to_status();
        assert_eq!(status["code"], 403);
        assert_eq!(
            status["message"],
            r#"pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "default""#
        );
        a.verb = "get".into();
        a.name = "web".into();
        a.api_group = "apps".into();
        a.resource = "deployments".into();
        a.subresource = "scale".into();
        a.namespace.clear();
        assert_eq!(
            forbidden(&a, "").to_string(),
            r#"deployments.apps "web" is forbidden: User "bob" cannot get resource "deployments/scale" in API group "apps" at the cluster scope"#
        );
        let np = Attributes {
            user: user("system:anonymous", &[]),
            verb: "get".into(),
            path: "/api".into(),
            ..Default::default()
        };
        let status = forbidden(&np, "").to_status();
        assert_eq!(status["message"], r#"forbidden: User "system:anonymous" cannot get path "/api""#);
        assert_eq!(status["details"], serde_json::json!({}));
    }

    #[test]
    fn masters_are_allowed_whatever_their_bindings() {
        let chain = ServerAuthorizer::new();
        let admin =
            Attributes { user: user("system:admin", &[MASTERS_GROUP]), verb: "delete".into(), ..Default::default() };
        assert_eq!(chain.authorize(&admin).0, Decision::Allow);
        let nobody =
            Attributes { user: user("nobody", &["system:authenticated"]), verb: "get".into(), ..Default::default() };
        assert_eq!(chain.authorize(&nobody), (Decision::NoOpinion, String::new()));
        assert_eq!(chain.rules_for(&admin.user, "default"), Rules::default());
    }

    #[test]
    fn field_selector_requirements() {
        let a = Attributes { field_selector: "metadata.name=x,spec.nodeName==n1".into(), ..Default::default() };
        assert_eq!(a.field_equals("spec.nodeName"), Some("n1"));
        assert_eq!(a.field_equals("metadata.name"), Some("x"));
        let neg = Attributes { field_selector: "spec.nodeName!=n1".into(), ..Default::default() };
        assert_eq!(neg.field_equals("spec.nodeName"), None);
    }
}
