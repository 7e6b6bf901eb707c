//! `pods/eviction` (upstream's `EvictionREST`): a POSTed `policy/v1`
//! Eviction deletes the pod with the Eviction's `deleteOptions` unless a
//! PodDisruptionBudget forbids it.
//!
//! - Pods that are `Succeeded`, `Failed` or `Pending`, or already being
//!   deleted, are deleted without looking at budgets.
//! - No budget selects the pod: deleted. More than one: 500 as upstream.
//! - One budget: not yet observed by the disruption controller
//!   (`status.observedGeneration` < `metadata.generation`) → 429 "still
//!   being processed"; `disruptionsAllowed` 0 → 429 `Cannot evict pod as
//!   it would violate the pod's disruption budget.` with a
//!   `DisruptionBudget` cause; otherwise `disruptionsAllowed` is
//!   decremented and the pod recorded in `status.disruptedPods` (through
//!   the budget's status), then the pod is deleted. Pods that are not
//!   ready skip the decrement when the budget's
//!   `unhealthyPodEvictionPolicy` is `AlwaysAllow`, or (`IfHealthyBudget`,
//!   the default) when the budget is currently healthy.

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use rkube_apimachinery::selector::labels::LabelSelector;
use rkube_apimachinery::{meta, ApiError, GroupResource, StatusCause};
use serde_json::{json, Value};

use super::binding::{decode_body, success};
use super::{delete, Ctx};
use crate::storage::{ListOptions, ResourceStore, UpdateKind, WriteOptions};

/// Upstream's `MaxDisruptedPodSize`.
const MAX_DISRUPTED_PODS: usize = 2000;

/// POST of an Eviction to `pods/{name}/eviction`.
pub async fn handle(ctx: &Ctx<'_>, pods: &ResourceStore, body: Body) -> Result<Response, ApiError> {
    let eviction = decode_body(ctx, body).await?;
    let name = ctx.request.name.clone();
    let namespace = ctx.request.namespace.clone();
    if meta::name(&eviction) != name {
        return Err(ApiError::BadRequest("name in URL does not match name in Eviction object".into()));
    }
    let delete_body = eviction.get("deleteOptions").filter(|v| v.is_object()).cloned().unwrap_or(json!({}));
    let mut opts = delete::delete_options(ctx, Body::from(delete_body.to_string())).await?;
    let dry_run = opts.write.dry_run;
    // Admission sees a CREATE of pods/eviction with the Eviction (NodeRestriction,
    // webhooks, policies); the pod's deletion and the budget's status
    // update that follow are not admitted again, as upstream's EvictionREST.
    let admission = ctx.admission(dry_run);
    let mut eviction = eviction;
    if eviction.get("kind").is_none() {
        eviction["kind"] = json!("Eviction");
    }
    if eviction.get("apiVersion").is_none() {
        eviction["apiVersion"] = json!("policy/v1");
    }
    admission.admit_subresource_create(&mut eviction, &name).await?;
    opts.write = WriteOptions::internal(dry_run);
    let pod = pods.get(&namespace, &name, "").await?;

    let phase = pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or("Pending");
    let ignore_budgets =
        matches!(phase, "Succeeded" | "Failed" | "Pending") || meta::deletion_timestamp(&pod).is_some();
    if !ignore_budgets {
        check_budgets(ctx, &pod, &opts.write).await?;
    }
    pods.delete(&namespace, &name, &opts).await?;
    Ok(super::response::add_warnings(success(StatusCode::CREATED), &admission.warnings()))
}

fn is_ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

fn budget_selects(pdb: &Value, pod: &Value) -> bool {
    let Some(sel) = pdb.pointer("/spec/selector").filter(|s| !s.is_null()) else { return false };
    let Ok(selector) = LabelSelector::from_label_selector_json(sel) else { return false };
    // policy/v1: a null selector selects no pods, an empty one every pod.
    let labels: std::collections::BTreeMap<String, String> = pod
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string())).collect())
        .unwrap_or_default();
    selector.matches(&labels)
}

/// The budget check and decrement; `Ok` when the pod may be deleted.
async fn check_budgets(ctx: &Ctx<'_>, pod: &Value, write: &WriteOptions) -> Result<(), ApiError> {
    let Some(budgets) = ctx.api.store("policy", "v1", "poddisruptionbudgets") else { return Ok(()) };
    let namespace = meta::namespace(pod).to_string();
    let list = budgets.list(&namespace, &ListOptions::default()).await?;
    let matching: Vec<&Value> = list.items.iter().filter(|pdb| budget_selects(pdb, pod)).collect();
    let pdb =
        match matching.as_slice() {
            [] => return Ok(()),
            [one] => *one,
            _ => return Err(ApiError::Generic {
                code: 500,
                reason: "",
                message:
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
                        .into(),
            }),
        };
    let pdb_name = meta::name(pdb).to_string();
    let pod_name = meta::name(pod).to_string();
    let ready = is_ready(pod);
    let too_many = |message: String, cause: Option<String>| ApiError::TooManyRequestsWithCauses {
        message,
        causes: cause
            .map(|m| vec![StatusCause { reason: "DisruptionBudget".into(), message: m, field: String::new() }])
            .unwrap_or_default(),
    };
    budgets
        .update(&namespace, &pdb_name, UpdateKind::Status, write, |current| {
            let mut pdb = current
                .ok_or_else(|| ApiError::NotFound {
                    resource: GroupResource::new("policy", "poddisruptionbudgets"),
                    name: pdb_name.clone(),
                })?
                .clone();
            let status = pdb.get("status").cloned().unwrap_or(json!({}));
            let int = |k: &str| status.get(k).and_then(Value::as_i64).unwrap_or(0);
            let generation = pdb.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0);
            if int("observedGeneration") < generation {
                return Err(too_many(
                    "Cannot evict pod as it would violate the pod's disruption budget.".into(),
                    Some(format!("The disruption budget {pdb_name} is still being processed by the server.")),
                ));
            }
            if !ready {
                let policy = pdb
                    .pointer("/spec/unhealthyPodEvictionPolicy")
                    .and_then(Value::as_str)
                    .unwrap_or("IfHealthyBudget");
                let healthy = int("currentHealthy") >= int("desiredHealthy") && int("desiredHealthy") > 0;
                if policy == "AlwaysAllow" || healthy {
                    // Nothing to record: the unready pod leaves without using the budget.
                    return Ok(current.cloned().expect("checked above"));
                }
            }
            let allowed = int("disruptionsAllowed");
            if allowed < 0 {
                return Err(ApiError::Forbidden {
                    resource: GroupResource::new("", "pods"),
                    name: pod_name.clone(),
                    message: "pdb disruptions allowed is negative".into(),
                });
            }
            let disrupted = status.get("disruptedPods").and_then(Value::as_object).map_or(0, |m| m.len());
            if disrupted > MAX_DISRUPTED_PODS {
                return Err(ApiError::Forbidden {
                    resource: GroupResource::new("", "pods"),
                    name: pod_name.clone(),
                    message: "DisruptedPods map too big - too many evictions not confirmed by PDB controller".into(),
                });
            }
            if allowed == 0 {
                return Err(too_many(
                    "Cannot evict pod as it would violate the pod's disruption budget.".into(),
                    Some(format!(
                        "The disruption budget {pdb_name} needs {} healthy pods and has {} currently",
                        int("desiredHealthy"),
                        int("currentHealthy")
                    )),
                ));
            }
            if !pdb.get("status").is_some_and(Value::is_object) {
                pdb["status"] = json!({});
            }
            pdb["status"]["disruptionsAllowed"] = json!(allowed - 1);
            if !pdb["status"].get("disruptedPods").is_some_and(Value::is_object) {
                pdb["status"]["disruptedPods"] = json!({});
            }
            pdb["status"]["disruptedPods"][&pod_name] = json!(meta::now());
            Ok(pdb)
        })
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_select_by_labels_and_readiness_is_the_ready_condition() {
        let pdb = json!({"spec": {"selector": {"matchLabels": {"app": "web"}}}});
        let pod = json!({"metadata": {"labels": {"app": "web"}}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        assert!(budget_selects(&pdb, &pod));
        assert!(is_ready(&pod));
        let other = json!({"metadata": {"labels": {"app": "db"}}});
        assert!(!budget_selects(&pdb, &other));
        assert!(!is_ready(&other));
        assert!(!budget_selects(&json!({"spec": {}}), &pod));
    }
}
