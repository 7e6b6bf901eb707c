//! The CEL `authorizer` of ValidatingAdmissionPolicy and webhook
//! matchConditions, answered by the server's authorizer chain (RBAC, Node,
//! `system:masters`) for the requesting user, or for the service account
//! an expression names with `authorizer.serviceAccount(ns, name)`
//! (upstream's `ServiceAccountInfo.UserInfo()`: user
//! `system:serviceaccount:<ns>:<name>`, groups `system:serviceaccounts`
//! and `system:serviceaccounts:<ns>`).

use std::sync::Arc;

use rkube_apimachinery::cel::authz::{Binding, Check, Decision, RequestResource};

use crate::admission::Attributes;
use crate::authn::UserInfo;
use crate::authz;

/// The request's user in front of an authorizer.
struct ForUser {
    user: UserInfo,
    authorizer: &'static dyn authz::Authorizer,
}

impl rkube_apimachinery::cel::authz::Authorizer for ForUser {
    fn check(&self, check: &Check) -> Decision {
        let user = match &check.service_account {
            None => self.user.clone(),
            Some((ns, name)) => UserInfo {
                name: format!("system:serviceaccount:{ns}:{name}"),
                groups: vec!["system:serviceaccounts".into(), format!("system:serviceaccounts:{ns}")],
                ..Default::default()
            },
        };
        let attrs = authz::Attributes {
            user,
            verb: check.verb.clone(),
            resource_request: check.path.is_none(),
            namespace: check.namespace.clone(),
            api_group: check.group.clone(),
            resource: check.resource.clone(),
            subresource: check.subresource.clone(),
            name: check.name.clone(),
            path: check.path.clone().unwrap_or_default(),
            field_selector: check.field_selector.clone(),
        };
        let (decision, reason) = self.authorizer.authorize(&attrs);
        tracing::debug!(component = crate::COMPONENT, user = %attrs.user.name, verb = %attrs.verb,
            resource = %attrs.resource, path = %attrs.path, ?decision, "CEL authorizer check");
        Decision { allowed: decision == authz::Decision::Allow, reason, error: None }
    }
}

/// The `authorizer` and `authorizer.requestResource` bindings for a
/// request (its user, and its group, resource, subresource, namespace and
/// name).
pub fn binding(attrs: &Attributes<'_>) -> Binding {
    Binding {
        authorizer: Arc::new(ForUser { user: attrs.user.clone(), authorizer: authz::current() }),
        request_resource: RequestResource {
            group: attrs.resource.group.to_string(),
            resource: attrs.resource.plural.to_string(),
            subresource: attrs.subresource.to_string(),
            namespace: attrs.namespace.to_string(),
            name: attrs.name.to_string(),
        },
    }
}
