//! Keeping the bootstrap policy in the store (upstream's `rbac/bootstrap-roles`
//! post-start hook): missing roles and bindings are created; existing ones
//! get the labels, annotations, rules (and aggregation selectors) or
//! subjects they lack added — nothing is removed — unless annotated
//! `rbac.authorization.kubernetes.io/autoupdate: "false"`. A binding whose
//! roleRef differs is replaced, since roleRef cannot change.
//!
//! The aggregated roles (`admin`, `edit`, `view`) are created with the
//! rules their selectors gather from the bootstrap roles, which is what the
//! ClusterRole aggregation controller computes for them right after.

use std::collections::BTreeMap;

use rkube_apimachinery::{meta, ApiError};
use serde_json::{json, Value};

use super::{cluster_role_bindings, cluster_roles, controllers, BindingDef, RoleDef, AUTOUPDATE_ANNOTATION};
use crate::authz::escalation::covers;
use crate::authz::rbac::PolicyRule;
use crate::rest::Api;
use crate::storage::{DeleteOptions, ResourceStore, UpdateKind, WriteOptions};

const GROUP: &str = "rbac.authorization.k8s.io";

fn store<'a>(api: &'a Api, plural: &str) -> Result<&'a ResourceStore, ApiError> {
    api.store(GROUP, "v1", plural)
        .map(|s| s.as_ref())
        .ok_or_else(|| ApiError::Internal(format!("no store for {plural}")))
}

/// Creates or reconciles every bootstrap role and binding.
pub async fn reconcile(api: &Api) -> Result<(), ApiError> {
    let roles = seeded_cluster_roles();
    let cluster_role_store = store(api, "clusterroles")?;
    for role in &roles {
        reconcile_role(cluster_role_store, role).await?;
    }
    let crb = store(api, "clusterrolebindings")?;
    for binding in cluster_role_bindings() {
        reconcile_binding(crb, &binding).await?;
    }
    let role_store = store(api, "roles")?;
    for role in controllers::namespace_roles() {
        reconcile_role(role_store, &role).await?;
    }
    let rb = store(api, "rolebindings")?;
    for binding in controllers::namespace_role_bindings() {
        reconcile_binding(rb, &binding).await?;
    }
    tracing::info!(component = crate::COMPONENT, "bootstrap RBAC policy reconciled");
    Ok(())
}

/// The bootstrap ClusterRoles with the aggregated roles' rules filled in
/// (what is created when they are missing).
pub fn seeded_cluster_roles() -> Vec<RoleDef> {
    let mut roles = cluster_roles();
    seed_aggregated_rules(&mut roles);
    roles
}

/// Fills the rules of the aggregated roles from the roles their selector
/// label picks, in name order, without duplicates.
fn seed_aggregated_rules(roles: &mut [RoleDef]) {
    let by_name: BTreeMap<String, RoleDef> = roles.iter().map(|r| (r.name.clone(), r.clone())).collect();
    fn gather(key: &str, by_name: &BTreeMap<String, RoleDef>, depth: usize) -> Vec<PolicyRule> {
        let mut rules: Vec<PolicyRule> = Vec::new();
        for role in by_name.values().filter(|r| r.labels.contains(&key)) {
            let own = match role.aggregate_from {
                Some(inner) if depth < 4 => gather(inner, by_name, depth + 1),
                _ => role.rules.clone(),
            };
            for rule in own {
                if !rules.contains(&rule) {
                    rules.push(rule);
                }
            }
        }
        rules
    }
    for role in roles.iter_mut() {
        if let Some(key) = role.aggregate_from {
            role.rules = gather(key, &by_name, 0);
        }
    }
}

fn autoupdate_disabled(obj: &Value) -> bool {
    obj.pointer("/metadata/annotations").and_then(|a| a.get(AUTOUPDATE_ANNOTATION)).and_then(Value::as_str)
        == Some("false")
}

/// Adds the map entries of `want` at `pointer` that `obj` lacks.
fn add_missing_entries(obj: &mut Value, want: &Value, field: &str) {
    for (k, v) in want.pointer(&format!("/metadata/{field}")).and_then(Value::as_object).into_iter().flatten() {
        if obj.pointer(&format!("/metadata/{field}/{}", k.replace('~', "~0").replace('/', "~1"))).is_none() {
            if !obj["metadata"][field].is_object() {
                obj["metadata"][field] = json!({});
            }
            obj["metadata"][field][k] = v.clone();
        }
    }
}

async fn reconcile_role(store: &ResourceStore, role: &RoleDef) -> Result<(), ApiError> {
    let want = role.to_object();
    match store.create(role.namespace, want.clone(), &WriteOptions::default()).await {
        Ok(_) => return Ok(()),
        Err(ApiError::AlreadyExists { .. }) => {}
        Err(e) => return Err(e),
    }
    store
        .update(role.namespace, &role.name, UpdateKind::Main, &WriteOptions::default(), |current| {
            let Some(current) = current else { return Ok(want.clone()) };
            let mut next = current.clone();
            if autoupdate_disabled(current) {
                return Ok(next);
            }
            add_missing_entries(&mut next, &want, "labels");
            add_missing_entries(&mut next, &want, "annotations");
            let existing = PolicyRule::list_from(current);
            // Aggregated roles' rules belong to the aggregation controller.
            if role.aggregate_from.is_none() || existing.is_empty() {
                let (_, missing) = covers(&existing, &role.rules);
                if !missing.is_empty() {
                    let mut rules: Vec<Value> = existing.iter().map(PolicyRule::to_json).collect();
                    rules.extend(missing.iter().map(PolicyRule::to_json));
                    next["rules"] = json!(rules);
                }
            }
            if let Some(agg) = want.get("aggregationRule") {
                let selectors =
                    next.pointer("/aggregationRule/clusterRoleSelectors").and_then(Value::as_array).cloned();
                let mut selectors = selectors.unwrap_or_default();
                for s in agg["clusterRoleSelectors"].as_array().into_iter().flatten() {
                    if !selectors.contains(s) {
                        selectors.push(s.clone());
                    }
                }
                next["aggregationRule"] = json!({"clusterRoleSelectors": selectors});
            }
            meta::set(&mut next, "resourceVersion", Value::Null);
            Ok(next)
        })
        .await
        .map(|_| ())
}

async fn reconcile_binding(store: &ResourceStore, binding: &BindingDef) -> Result<(), ApiError> {
    let want = binding.to_object();
    let current = match store.create(binding.namespace, want.clone(), &WriteOptions::default()).await {
        Ok(_) => return Ok(()),
        Err(ApiError::AlreadyExists { .. }) => store.get(binding.namespace, &binding.name, "").await?,
        Err(e) => return Err(e),
    };
    if autoupdate_disabled(&current) {
        return Ok(());
    }
    if current.get("roleRef") != want.get("roleRef") {
        // roleRef is immutable: replace the binding.
        store.delete(binding.namespace, &binding.name, &DeleteOptions::default()).await?;
        store.create(binding.namespace, want, &WriteOptions::default()).await?;
        return Ok(());
    }
    store
        .update(binding.namespace, &binding.name, UpdateKind::Main, &WriteOptions::default(), |current| {
            let Some(current) = current else { return Ok(want.clone()) };
            let mut next = current.clone();
            add_missing_entries(&mut next, &want, "labels");
            add_missing_entries(&mut next, &want, "annotations");
            let mut subjects = next.get("subjects").and_then(Value::as_array).cloned().unwrap_or_default();
            let same = |a: &Value, b: &Value| ["kind", "name", "namespace"].iter().all(|k| a.get(*k) == b.get(*k));
            for s in want.get("subjects").and_then(Value::as_array).into_iter().flatten() {
                if !subjects.iter().any(|x| same(x, s)) {
                    subjects.push(s.clone());
                }
            }
            if !subjects.is_empty() {
                next["subjects"] = json!(subjects);
            }
            meta::set(&mut next, "resourceVersion", Value::Null);
            Ok(next)
        })
        .await
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregated_roles_are_seeded_from_their_labels() {
        let mut roles = cluster_roles();
        seed_aggregated_rules(&mut roles);
        let rules = |n: &str| roles.iter().find(|r| r.name == n).unwrap().rules.clone();
        let view = rules("view");
        assert!(view.iter().any(|r| r.resources.contains(&"pods".to_string()) && r.verbs.contains(&"list".into())));
        let edit = rules("edit");
        // edit = aggregate-to-edit + view (labelled aggregate-to-edit).
        assert!(covers(&edit, &view).0);
        assert!(edit
            .iter()
            .any(|r| r.resources.contains(&"secrets".to_string()) && r.verbs.contains(&"create".into())));
        let admin = rules("admin");
        assert!(covers(&admin, &edit).0);
        assert!(admin.iter().any(|r| r.resources.contains(&"rolebindings".to_string())));
        assert!(!covers(&view, &[crate::authz::policy::r("get", "core", "secrets")]).0);
    }
}
