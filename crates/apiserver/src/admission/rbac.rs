//! RBAC escalation prevention on writes of `rbac.authorization.k8s.io`
//! objects (upstream's policy-based RBAC storage, `pkg/registry/rbac/*/policybased`):
//!
//! - a Role or ClusterRole may be created or changed only by a user who
//!   holds every rule it grants (in its namespace), or who may `escalate`
//!   it; a ClusterRole with an `aggregationRule` needs full authority
//!   (`must have cluster-admin privileges to use the aggregationRule`);
//! - a RoleBinding or ClusterRoleBinding only by a user who holds every
//!   rule of the referenced role, or who may `bind` it.
//!
//! Members of `system:masters` pass, as upstream's `EscalationAllowed`.
//! Refusals are 403 `<resource>.rbac.authorization.k8s.io "<name>" is
//! forbidden: user "bob" (groups=[…]) is attempting to grant RBAC
//! permissions not currently held:` with the missing rules.

use std::sync::Arc;

use async_trait::async_trait;
use rkube_apimachinery::{ApiError, GroupResource};
use serde_json::Value;

use super::{Attributes, Operation, Plugin};
use crate::authz::escalation::confirm_no_escalation;
use crate::authz::policy::{r, u};
use crate::authz::rbac::PolicyRule;
use crate::authz::{self, Authorizer, Decision, ServerAuthorizer};

const GROUP: &str = "rbac.authorization.k8s.io";

/// The escalation check, run in the mutating phase (where upstream's RBAC
/// storage checks: after mutating admission, before the kind's validation).
pub struct RbacEscalation {
    authorizer: Arc<ServerAuthorizer>,
}

impl RbacEscalation {
    /// The check over the server's authorizer.
    pub fn new(authorizer: Arc<ServerAuthorizer>) -> RbacEscalation {
        RbacEscalation { authorizer }
    }

    /// Whether the user may `verb` the named RBAC object (`escalate`, `bind`).
    fn may(&self, attrs: &Attributes<'_>, verb: &str, resource: &str, namespace: &str, name: &str) -> bool {
        let a = authz::Attributes {
            user: attrs.user.clone(),
            verb: verb.into(),
            resource_request: true,
            namespace: namespace.into(),
            api_group: GROUP.into(),
            resource: resource.into(),
            name: name.into(),
            ..Default::default()
        };
        self.authorizer.authorize(&a).0 == Decision::Allow
    }

    fn forbidden(attrs: &Attributes<'_>, name: &str, message: &str) -> ApiError {
        let resource = GroupResource { group: GROUP.into(), resource: attrs.resource.plural.to_string() };
        ApiError::Forbidden {
            message: format!("{resource} \"{name}\" is forbidden: {message}"),
            resource,
            name: name.to_string(),
        }
    }

    fn check_role(&self, attrs: &Attributes<'_>, object: &Value) -> Result<(), ApiError> {
        let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or(attrs.name);
        let rules = PolicyRule::list_from(object);
        let aggregation = object.get("aggregationRule").filter(|v| !v.is_null());
        if let Some(old) = attrs.old_object {
            // Nothing granted changed (e.g. a label or finalizer edit).
            if PolicyRule::list_from(old) == rules && old.get("aggregationRule").filter(|v| !v.is_null()) == aggregation
            {
                return Ok(());
            }
        }
        if self.may(attrs, "escalate", attrs.resource.plural, attrs.namespace, name) {
            return Ok(());
        }
        let rbac = self.authorizer.rbac();
        let had_aggregation = attrs.old_object.and_then(|o| o.get("aggregationRule")).is_some_and(|v| !v.is_null());
        if aggregation.is_some() || had_aggregation {
            let full = [r("*", "*", "*"), u("*", "*")];
            if confirm_no_escalation(rbac, attrs.user, "", &full).is_err() {
                return Err(Self::forbidden(
                    attrs,
                    name,
                    "must have cluster-admin privileges to use the aggregationRule",
                ));
            }
        }
        confirm_no_escalation(rbac, attrs.user, attrs.namespace, &rules)
            .map_err(|msg| Self::forbidden(attrs, name, &msg))
    }

    fn check_binding(&self, attrs: &Attributes<'_>, object: &Value) -> Result<(), ApiError> {
        let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or(attrs.name);
        let role_ref = object.get("roleRef").cloned().unwrap_or(Value::Null);
        if let Some(old) = attrs.old_object {
            if old.get("roleRef") == Some(&role_ref) && old.get("subjects") == object.get("subjects") {
                return Ok(());
            }
        }
        let kind = role_ref.get("kind").and_then(Value::as_str).unwrap_or("");
        let role = role_ref.get("name").and_then(Value::as_str).unwrap_or("");
        let resource = if kind == "Role" { "roles" } else { "clusterroles" };
        if self.may(attrs, "bind", resource, attrs.namespace, role) {
            return Ok(());
        }
        let rules =
            self.authorizer.rbac().role_ref_rules(kind, role, attrs.namespace).ok_or_else(|| ApiError::NotFound {
                resource: GroupResource { group: GROUP.into(), resource: resource.into() },
                name: role.into(),
            })?;
        confirm_no_escalation(self.authorizer.rbac(), attrs.user, attrs.namespace, &rules)
            .map_err(|msg| Self::forbidden(attrs, name, &msg))
    }
}

#[async_trait]
impl Plugin for RbacEscalation {
    fn name(&self) -> &'static str {
        "RBACEscalation"
    }

    async fn admit(&self, attrs: &Attributes<'_>, object: Option<&mut Value>) -> Result<(), ApiError> {
        if attrs.resource.group != GROUP
            || !attrs.subresource.is_empty()
            || !matches!(attrs.operation, Operation::Create | Operation::Update)
            || authz::is_privileged(attrs.user)
        {
            return Ok(());
        }
        let Some(object) = object else { return Ok(()) };
        match attrs.resource.plural {
            "roles" | "clusterroles" => self.check_role(attrs, object),
            "rolebindings" | "clusterrolebindings" => self.check_binding(attrs, object),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::{Chain, RequestAdmission};
    use crate::authn::UserInfo;
    use crate::authz::follow::Change;
    use crate::authz::rbac::index::Kind;
    use rkube_apimachinery::registry::Registry;
    use serde_json::json;

    async fn write(plugin: &RbacEscalation, plural: &str, user: &UserInfo, obj: Value) -> Result<(), String> {
        let info = Registry::builtin().lookup(GROUP, "v1", plural).unwrap().clone();
        let request = RequestAdmission::new(Arc::new(Chain::default()), user.clone(), info.clone(), "", "team", false);
        let attrs = Attributes {
            operation: Operation::Create,
            user: &request.user,
            resource: &info,
            subresource: "",
            namespace: "team",
            name: "",
            old_object: None,
            dry_run: false,
            request: &request,
        };
        let mut obj = obj;
        plugin.admit(&attrs, Some(&mut obj)).await.map_err(|e| e.to_string())
    }

    #[tokio::test]
    async fn grants_are_limited_to_held_rules_unless_bind_or_escalate() {
        let chain = Arc::new(ServerAuthorizer::new());
        let role = json!({"metadata": {"name": "reader", "namespace": "team"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
                      {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"], "verbs": ["create"]}]});
        let rb = json!({"metadata": {"name": "b", "namespace": "team"}, "roleRef": {"kind": "Role", "name": "reader"},
            "subjects": [{"kind": "User", "name": "bob"}]});
        chain.rbac().apply(Kind::Role, &[Change::Upsert(&role)]);
        chain.rbac().apply(Kind::RoleBinding, &[Change::Upsert(&rb)]);
        let plugin = RbacEscalation::new(chain.clone());
        let bob = UserInfo { name: "bob".into(), ..Default::default() };
        let pods =
            json!({"metadata": {"name": "r"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
        assert!(write(&plugin, "roles", &bob, pods).await.is_ok());
        let secrets = json!({"metadata": {"name": "r"}, "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]});
        assert_eq!(
            write(&plugin, "roles", &bob, secrets.clone()).await.unwrap_err(),
            "roles.rbac.authorization.k8s.io \"r\" is forbidden: user \"bob\" (groups=[]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}"
        );
        let admin = UserInfo { name: "root".into(), groups: vec!["system:masters".into()], ..Default::default() };
        assert!(write(&plugin, "roles", &admin, secrets).await.is_ok());
        let bind = |role: &str| json!({"metadata": {"name": "x"}, "roleRef": {"kind": "ClusterRole", "name": role}, "subjects": []});
        assert_eq!(
            write(&plugin, "rolebindings", &bob, bind("missing")).await.unwrap_err(),
            "clusterroles.rbac.authorization.k8s.io \"missing\" not found"
        );
        let grant_bind = json!({"metadata": {"name": "binder", "namespace": "team"},
            "rules": [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["bind"], "resourceNames": ["missing"]}]});
        chain.rbac().apply(Kind::Role, &[Change::Upsert(&role), Change::Upsert(&grant_bind)]);
        let rb2 = json!({"metadata": {"name": "b2", "namespace": "team"}, "roleRef": {"kind": "Role", "name": "binder"},
            "subjects": [{"kind": "User", "name": "bob"}]});
        chain.rbac().apply(Kind::RoleBinding, &[Change::Upsert(&rb2)]);
        assert!(write(&plugin, "rolebindings", &bob, bind("missing")).await.is_ok());
    }
}
