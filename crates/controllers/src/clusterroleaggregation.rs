//! ClusterRole aggregation (upstream `pkg/controller/clusterroleaggregation`):
//! a ClusterRole with an `aggregationRule` gets as its `rules` the rules of
//! every other ClusterRole that one of its `clusterRoleSelectors` matches,
//! in the order of those roles' names, without duplicates. Written with
//! server-side apply as field manager `clusterrole-aggregation-controller`.

use std::sync::Arc;

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use rkube_apimachinery::selector::LabelSelector;

use crate::runtime::{self, Ctx, Error, Stop};

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "clusterrole-aggregation-controller";
/// The older name `--controllers` also accepts.
pub const ALIAS: &str = "clusterrole-aggregation";
/// The kube-system ServiceAccount it runs as.
pub const SERVICE_ACCOUNT: &str = "clusterrole-aggregation-controller";

/// The aggregated rules for `role` among `all` ClusterRoles, or `None`
/// when it has no aggregation rule. Selectors that do not parse match
/// nothing.
pub fn aggregated_rules(role: &ClusterRole, all: &[Arc<ClusterRole>]) -> Option<Vec<PolicyRule>> {
    let rule = role.aggregation_rule.as_ref()?;
    let selectors: Vec<LabelSelector> = rule
        .cluster_role_selectors
        .iter()
        .flatten()
        .filter_map(|s| serde_json::to_value(s).ok())
        .filter_map(|v| LabelSelector::from_label_selector_json(&v).ok())
        .collect();
    let mut matched: Vec<&Arc<ClusterRole>> = all
        .iter()
        .filter(|other| other.metadata.name != role.metadata.name)
        .filter(|other| {
            let obj = serde_json::json!({"metadata": {"labels": other.metadata.labels.clone().unwrap_or_default()}});
            selectors.iter().any(|s| s.matches_object(&obj))
        })
        .collect();
    matched.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut rules: Vec<PolicyRule> = Vec::new();
    for other in matched {
        for r in other.rules.iter().flatten() {
            if !rules.contains(r) {
                rules.push(r.clone());
            }
        }
    }
    Some(rules)
}

/// Runs until `stop`: every ClusterRole is a key; any ClusterRole change
/// requeues every aggregating ClusterRole (found in the controller's
/// cache); the reconcile reads a fresh list.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    let api = Api::<ClusterRole>::all(ctx.reader.clone());
    let controller = Controller::new(api.clone(), watcher::Config::default());
    let mapper_store = controller.store();
    let controller = controller
        .watches(api, watcher::Config::default(), move |_| {
            mapper_store
                .state()
                .into_iter()
                .filter(|r| r.aggregation_rule.is_some())
                .map(|r| ObjectRef::from_obj(r.as_ref()))
                .collect::<Vec<_>>()
        })
        .graceful_shutdown_on(runtime::stopped(stop));
    runtime::drive(NAME, controller.run(reconcile, runtime::error_policy, ctx)).await;
}

async fn reconcile(role: Arc<ClusterRole>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let name = role.metadata.name.clone().unwrap_or_default();
    if role.aggregation_rule.is_none() {
        return ctx.done(&name, Action::await_change());
    }
    // A fresh list, not the cache: the change that triggered this may come
    // from the second watch before the cache has seen it.
    let all: Vec<Arc<ClusterRole>> = Api::<ClusterRole>::all(ctx.reader.clone())
        .list(&Default::default())
        .await?
        .items
        .into_iter()
        .map(Arc::new)
        .collect();
    let Some(role) = all.iter().find(|r| r.metadata.name.as_deref() == Some(name.as_str())) else {
        return ctx.done(&name, Action::await_change());
    };
    let Some(rules) = aggregated_rules(role, &all) else {
        return ctx.done(&name, Action::await_change());
    };
    if role.rules.clone().unwrap_or_default() == rules {
        return ctx.done(&name, Action::await_change());
    }
    let apply = serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": rules,
    });
    Api::<ClusterRole>::all(ctx.client.clone())
        .patch(&name, &PatchParams::apply(NAME).force(), &Patch::Apply(&apply))
        .await?;
    tracing::info!(component = NAME, clusterrole = %name, rules = rules.len(), "aggregated rules");
    ctx.done(&name, Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::rbac::v1::AggregationRule;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector as Sel, ObjectMeta};
    use std::collections::BTreeMap;

    fn role(name: &str, labels: &[(&str, &str)], verbs: &[&str]) -> Arc<ClusterRole> {
        Arc::new(ClusterRole {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
                ..Default::default()
            },
            rules: Some(vec![PolicyRule {
                verbs: verbs.iter().map(|s| s.to_string()).collect(),
                resources: Some(vec!["pods".into()]),
                api_groups: Some(vec!["".into()]),
                ..Default::default()
            }]),
            ..Default::default()
        })
    }

    #[test]
    fn rules_of_matching_roles_are_unioned_in_name_order() {
        let mut agg = (*role("monitoring", &[], &[])).clone();
        agg.rules = None;
        agg.aggregation_rule = Some(AggregationRule {
            cluster_role_selectors: Some(vec![Sel {
                match_labels: Some(BTreeMap::from([(
                    "rbac.example.com/aggregate-to-monitoring".into(),
                    "true".into(),
                )])),
                ..Default::default()
            }]),
        });
        let label = [("rbac.example.com/aggregate-to-monitoring", "true")];
        let all = vec![
            role("b", &label, &["list"]),
            role("a", &label, &["get"]),
            role("dup", &label, &["get"]),
            role("other", &[], &["delete"]),
            Arc::new(agg.clone()),
        ];
        let rules = aggregated_rules(&agg, &all).unwrap();
        let verbs: Vec<&str> = rules.iter().map(|r| r.verbs[0].as_str()).collect();
        assert_eq!(verbs, ["get", "list"]);
        assert_eq!(aggregated_rules(&all[0], &all), None);
    }
}
