//! The RBAC authorizer (upstream's `plugin/pkg/auth/authorizer/rbac`):
//! a request is allowed when a RoleBinding in its namespace or a
//! ClusterRoleBinding binds the user (or one of its groups, or its
//! ServiceAccount) to a role with a rule that allows it. RBAC never
//! denies; it allows or has no opinion.
//!
//! The objects come from the server's own stores through watches
//! ([`crate::authz::follow`]) into an index ([`index`]) rebuilt after each
//! batch of changes, so a new binding counts within milliseconds.

use std::sync::{Arc, Mutex, RwLock};

use rkube_apimachinery::meta;

use crate::authn::UserInfo;
use crate::authz::follow::{self, Change};
use crate::authz::{Attributes, Decision, NonResourceRule, ResourceRule, Rules};
use crate::storage::ResourceStore;

pub mod index;
pub mod rule;

use index::{Kind, Objects, Snapshot};
pub use rule::PolicyRule;

/// The RBAC authorizer over an index of the four RBAC kinds.
#[derive(Default)]
pub struct RbacAuthorizer {
    objects: Mutex<Objects>,
    snapshot: RwLock<Arc<Snapshot>>,
    /// Which kinds have delivered their initial state.
    synced: Mutex<Vec<Kind>>,
    ready: tokio::sync::watch::Sender<bool>,
}

impl RbacAuthorizer {
    /// An empty authorizer (allows nothing until objects arrive).
    pub fn new() -> RbacAuthorizer {
        RbacAuthorizer { ready: tokio::sync::watch::channel(false).0, ..Default::default() }
    }

    /// Starts following the four kinds in `stores` (`(kind, store)`).
    pub fn start(self: &Arc<Self>, stores: Vec<(Kind, Arc<ResourceStore>)>) {
        for (kind, store) in stores {
            let me = self.clone();
            follow::spawn(store, kind.plural(), move |changes| me.apply(kind, changes));
        }
    }

    /// Applies a batch of watch changes of `kind` and republishes the index.
    pub fn apply(&self, kind: Kind, changes: &[Change<'_>]) {
        let mut objects = self.objects.lock().unwrap_or_else(|e| e.into_inner());
        let mut synced_now = false;
        for change in changes {
            match change {
                Change::Reset => objects.clear(kind),
                Change::Upsert(o) => objects.apply(kind, meta::namespace(o), meta::name(o), Some(o)),
                Change::Delete(o) => objects.apply(kind, meta::namespace(o), meta::name(o), None),
                Change::Synced => synced_now = true,
            }
        }
        let snapshot = Arc::new(Snapshot::build(&objects));
        *self.snapshot.write().unwrap_or_else(|e| e.into_inner()) = snapshot;
        drop(objects);
        if synced_now {
            let mut synced = self.synced.lock().unwrap_or_else(|e| e.into_inner());
            if !synced.contains(&kind) {
                synced.push(kind);
            }
            if synced.len() == Kind::ALL.len() {
                self.ready.send_replace(true);
            }
        }
    }

    /// Waits (at most `limit`) until every kind delivered its initial state.
    pub async fn wait_ready(&self, limit: std::time::Duration) -> bool {
        let mut rx = self.ready.subscribe();
        if *rx.borrow() {
            return true;
        }
        let ready = tokio::time::timeout(limit, rx.wait_for(|r| *r)).await.is_ok();
        ready
    }

    /// The current index.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The decision on `attrs`: Allow with upstream's reason (`RBAC:
    /// allowed by ClusterRoleBinding "x" of ClusterRole "y" to User "z"`),
    /// else NoOpinion with the resolution errors met (`RBAC:
    /// clusterrole.rbac.authorization.k8s.io "y" not found`).
    pub fn authorize(&self, attrs: &Attributes) -> (Decision, String) {
        let snapshot = self.snapshot();
        let mut allowed_by = None;
        let mut errors: Vec<String> = Vec::new();
        snapshot.visit_grants(&attrs.user.name, &attrs.user.groups, &attrs.namespace, |grant| {
            match snapshot.role_rules(&grant.binding) {
                Ok(rules) => {
                    if rules.iter().any(|r| r.allows(attrs)) {
                        allowed_by = Some(grant.describe());
                        return false;
                    }
                }
                Err(e) => errors.push(e),
            }
            true
        });
        if let Some(by) = allowed_by {
            return (Decision::Allow, format!("RBAC: allowed by {by}"));
        }
        if errors.is_empty() {
            (Decision::NoOpinion, String::new())
        } else {
            (Decision::NoOpinion, format!("RBAC: {}", aggregate(&errors)))
        }
    }

    /// Every rule `user` holds in `namespace` (cluster-wide grants first),
    /// and the resolution errors met (upstream's `RulesFor`).
    pub fn policy_rules_for(&self, user: &UserInfo, namespace: &str) -> (Vec<PolicyRule>, Vec<String>) {
        let snapshot = self.snapshot();
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        snapshot.visit_grants(&user.name, &user.groups, namespace, |grant| {
            match snapshot.role_rules(&grant.binding) {
                Ok(r) => rules.extend(r.iter().cloned()),
                Err(e) => errors.push(e),
            }
            true
        });
        (rules, errors)
    }

    /// The rules of a roleRef (`ClusterRole`, or `Role` in `namespace`);
    /// `None` when it does not exist.
    pub fn role_ref_rules(&self, kind: &str, name: &str, namespace: &str) -> Option<Vec<PolicyRule>> {
        let snapshot = self.snapshot();
        match kind {
            "ClusterRole" => snapshot.cluster_roles.get(name).map(|r| r.to_vec()),
            "Role" => snapshot.roles.get(&(namespace.to_string(), name.to_string())).map(|r| r.to_vec()),
            _ => None,
        }
    }

    /// [`RbacAuthorizer::policy_rules_for`] as the reviews report it.
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> Rules {
        let (rules, errors) = self.policy_rules_for(user, namespace);
        let mut out = Rules { incomplete: !errors.is_empty(), ..Default::default() };
        for r in rules {
            if r.non_resource_urls.is_empty() {
                out.resource_rules.push(ResourceRule {
                    verbs: r.verbs,
                    api_groups: r.api_groups,
                    resources: r.resources,
                    resource_names: r.resource_names,
                });
            } else {
                out.non_resource_rules.push(NonResourceRule { verbs: r.verbs, non_resource_urls: r.non_resource_urls });
            }
        }
        out
    }
}

/// Upstream's `utilerrors.NewAggregate(errs).Error()`: one error alone,
/// several in brackets joined by `, `.
pub fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo { name: name.into(), groups: groups.iter().map(|g| g.to_string()).collect(), ..Default::default() }
    }

    fn attrs(u: UserInfo, verb: &str, resource: &str, ns: &str) -> Attributes {
        Attributes {
            user: u,
            verb: verb.into(),
            resource_request: true,
            resource: resource.into(),
            namespace: ns.into(),
            ..Default::default()
        }
    }

    fn authorizer() -> RbacAuthorizer {
        let a = RbacAuthorizer::new();
        let role = json!({"metadata": {"name": "pod-reader", "namespace": "team"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]});
        let rb = json!({"metadata": {"name": "read", "namespace": "team"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
            "subjects": [{"kind": "User", "name": "bob"}, {"kind": "ServiceAccount", "name": "bot"}]});
        let crb = json!({"metadata": {"name": "ghost"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "ghost"},
            "subjects": [{"kind": "Group", "name": "haunted"}]});
        a.apply(Kind::Role, &[Change::Reset, Change::Upsert(&role), Change::Synced]);
        a.apply(Kind::RoleBinding, &[Change::Upsert(&rb)]);
        a.apply(Kind::ClusterRoleBinding, &[Change::Upsert(&crb)]);
        a
    }

    #[test]
    fn bindings_allow_in_their_namespace_only_with_upstream_reasons() {
        let a = authorizer();
        let (d, reason) = a.authorize(&attrs(user("bob", &[]), "list", "pods", "team"));
        assert_eq!(d, Decision::Allow);
        assert_eq!(reason, r#"RBAC: allowed by RoleBinding "read/team" of Role "pod-reader" to User "bob""#);
        assert_eq!(a.authorize(&attrs(user("bob", &[]), "list", "pods", "other")).0, Decision::NoOpinion);
        assert_eq!(a.authorize(&attrs(user("bob", &[]), "delete", "pods", "team")).0, Decision::NoOpinion);
        let sa = user("system:serviceaccount:team:bot", &["system:serviceaccounts"]);
        assert_eq!(a.authorize(&attrs(sa, "get", "pods", "team")).0, Decision::Allow);
        let (d, reason) = a.authorize(&attrs(user("x", &["haunted"]), "get", "pods", ""));
        assert_eq!(d, Decision::NoOpinion);
        assert_eq!(reason, r#"RBAC: clusterrole.rbac.authorization.k8s.io "ghost" not found"#);
    }

    #[test]
    fn deleting_a_binding_revokes_and_rules_for_lists_grants() {
        let a = authorizer();
        let rules = a.rules_for(&user("bob", &[]), "team");
        assert_eq!(rules.resource_rules.len(), 1);
        assert_eq!(rules.resource_rules[0].verbs, ["get", "list"]);
        assert!(!rules.incomplete);
        let rb = json!({"metadata": {"name": "read", "namespace": "team"}});
        a.apply(Kind::RoleBinding, &[Change::Delete(&rb)]);
        assert_eq!(a.authorize(&attrs(user("bob", &[]), "list", "pods", "team")).0, Decision::NoOpinion);
        assert!(a.rules_for(&user("x", &["haunted"]), "team").incomplete);
    }

    #[tokio::test]
    async fn ready_once_every_kind_synced() {
        let a = RbacAuthorizer::new();
        for kind in [Kind::ClusterRole, Kind::Role, Kind::ClusterRoleBinding] {
            a.apply(kind, &[Change::Reset, Change::Synced]);
        }
        assert!(!a.wait_ready(std::time::Duration::from_millis(10)).await);
        a.apply(Kind::RoleBinding, &[Change::Synced]);
        assert!(a.wait_ready(std::time::Duration::from_millis(10)).await);
    }
}
