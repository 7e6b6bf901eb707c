//! ResourceQuota (staging `admission/plugin/resourcequota`): a write that
//! adds usage in a namespace is charged against every ResourceQuota there
//! that covers it. The quota's `status.hard` limits and `status.used`
//! (kept by the resourcequota controller) decide; an excess is 403
//! `exceeded quota: <name>, requested: …, used: …, limited: …`, a pod
//! missing a cpu/memory the quota limits is `failed quota: <name>: must
//! specify …`, and a quota whose usage is not computed yet is `status
//! unknown for quota: <name>, resources: …`. Admitted charges are
//! written to the quotas' `status.used` before the object is stored
//! (optimistic, retried on conflict), as upstream does to stay safe
//! against concurrent writers.

use std::sync::Arc;

use async_trait::async_trait;
use rkube_apimachinery::quota::{self, evaluator, Usage};
use rkube_apimachinery::{meta, ApiError, GroupResource};
use serde_json::{json, Value};

use super::builtin::{forbidden, list};
use super::{Attributes, Operation, Plugin};
use crate::storage::{ResourceStore, UpdateKind, WriteOptions};

/// The ResourceQuota plugin over the ResourceQuota store.
pub struct ResourceQuota {
    quotas: Option<Arc<ResourceStore>>,
}

impl ResourceQuota {
    /// The plugin, reading and charging quotas in `quotas`.
    pub fn new(quotas: Option<Arc<ResourceStore>>) -> ResourceQuota {
        ResourceQuota { quotas }
    }
}

/// Whether the write can change usage (upstream `Evaluator.Handles`):
/// creates of anything namespaced; updates of pods, services and claims
/// (their usage can grow); never subresources.
fn handles(attrs: &Attributes<'_>) -> bool {
    if !attrs.subresource.is_empty() || attrs.namespace.is_empty() {
        return false;
    }
    match attrs.operation {
        Operation::Create => true,
        Operation::Update => {
            attrs.resource.group.is_empty()
                && matches!(attrs.resource.plural, "pods" | "services" | "persistentvolumeclaims")
        }
        _ => false,
    }
}

/// What one quota is charged, decided from its status as listed.
struct Charge {
    name: String,
    delta: Usage,
}

/// Upstream `CheckRequest` over the namespace's `quotas`: the charges
/// per matching quota, or the refusal message.
fn check(
    quotas: &[Value],
    group: &str,
    plural: &str,
    obj: &Value,
    old: Option<&Value>,
    now: i64,
) -> Result<Vec<Charge>, String> {
    let mut interesting = Vec::new();
    for q in quotas {
        if !evaluator::quota_matches(q, group, plural, obj) {
            continue;
        }
        let name = meta::name(q);
        let hard = quota::parse_list(q.pointer("/status/hard"));
        let used = quota::parse_list(q.pointer("/status/used"));
        let restricted = evaluator::matching(group, plural, hard.keys());
        if group.is_empty() && plural == "pods" {
            evaluator::pod_constraints(&restricted, obj).map_err(|e| format!("failed quota: {name}: {e}"))?;
        }
        if restricted.iter().any(|r| !used.contains_key(r)) {
            let names: Vec<&str> = restricted.iter().map(String::as_str).collect();
            return Err(format!("status unknown for quota: {name}, resources: {}", names.join(",")));
        }
        interesting.push(q);
    }
    let input = evaluator::usage(group, plural, obj, now);
    let negative: Vec<&str> = input.iter().filter(|(_, v)| v.milli < 0).map(|(k, _)| k.as_str()).collect();
    if !negative.is_empty() {
        return Err(format!("quota usage is negative for resource(s): {}", negative.join(",")));
    }
    let mut charges = Vec::new();
    for q in interesting {
        let mut delta = input.clone();
        if let Some(old) = old.filter(|o| !meta::resource_version(o).is_empty()) {
            if evaluator::quota_matches(q, group, plural, old) {
                let prev = evaluator::usage(group, plural, old, now);
                delta = quota::subtract(&delta, &prev).into_iter().map(|(k, v)| (k, clamp(v))).collect();
            }
        }
        delta.retain(|_, v| v.milli != 0);
        if delta.is_empty() {
            continue;
        }
        let hard = quota::parse_list(q.pointer("/status/hard"));
        let requested = quota::mask(&delta, hard.keys());
        if requested.is_empty() {
            continue;
        }
        exceeds(meta::name(q), &requested, q)?;
        charges.push(Charge { name: meta::name(q).to_string(), delta: requested });
    }
    Ok(charges)
}

fn clamp(v: quota::Amount) -> quota::Amount {
    quota::Amount { milli: v.milli.max(0), binary: v.binary }
}

/// The new `status.used` of `q` with `requested` added, or upstream's
/// `exceeded quota` message.
fn exceeds(name: &str, requested: &Usage, q: &Value) -> Result<Usage, String> {
    let hard = quota::parse_list(q.pointer("/status/hard"));
    let used = quota::parse_list(q.pointer("/status/used"));
    let new_used = quota::add(&used, requested);
    let exceeded = quota::exceeded(&quota::mask(&new_used, requested.keys()), &hard);
    if !exceeded.is_empty() {
        return Err(format!(
            "exceeded quota: {name}, requested: {}, used: {}, limited: {}",
            quota::pretty(&quota::mask(requested, &exceeded)),
            quota::pretty(&quota::mask(&used, &exceeded)),
            quota::pretty(&quota::mask(&hard, &exceeded)),
        ));
    }
    Ok(new_used)
}

#[async_trait]
impl Plugin for ResourceQuota {
    fn name(&self) -> &'static str {
        "ResourceQuota"
    }

    async fn validate(&self, attrs: &Attributes<'_>, object: Option<&Value>) -> Result<(), ApiError> {
        let (Some(store), Some(obj)) = (&self.quotas, object) else { return Ok(()) };
        if !handles(attrs) {
            return Ok(());
        }
        let quotas = list(store, attrs.namespace).await?;
        if quotas.is_empty() {
            return Ok(());
        }
        let now = jiff::Timestamp::now().as_second();
        let (group, plural) = (attrs.resource.group, attrs.resource.plural);
        let charges =
            check(&quotas, group, plural, obj, attrs.old_object, now).map_err(|m| forbidden(attrs, Some(obj), m))?;
        if attrs.dry_run {
            return Ok(());
        }
        for charge in charges {
            let result = store
                .update(attrs.namespace, &charge.name, UpdateKind::Status, &WriteOptions::internal(false), |current| {
                    let mut q = current
                        .ok_or_else(|| ApiError::NotFound {
                            resource: GroupResource::new("", "resourcequotas"),
                            name: charge.name.clone(),
                        })?
                        .clone();
                    let new_used =
                        exceeds(&charge.name, &charge.delta, &q).map_err(|m| forbidden(attrs, Some(obj), m))?;
                    let mut used = q.pointer("/status/used").cloned().unwrap_or(json!({}));
                    for (k, v) in
                        quota::to_json(&quota::mask(&new_used, charge.delta.keys())).as_object().into_iter().flatten()
                    {
                        used[k] = v.clone();
                    }
                    q["status"]["used"] = used;
                    Ok(q)
                })
                .await;
            match result {
                Ok(_) => {}
                // A quota deleted meanwhile charges nothing.
                Err(ApiError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(name: &str, hard: Value, used: Value) -> Value {
        json!({"metadata": {"name": name, "resourceVersion": "1"}, "spec": {"hard": hard},
               "status": {"hard": hard, "used": used}})
    }

    fn pod(cpu: &str) -> Value {
        json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "c", "resources": {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}}}]}})
    }

    #[test]
    fn exceeding_a_quota_names_requested_used_and_limited() {
        let quotas = [q("q", json!({"pods": "2", "requests.cpu": "1"}), json!({"pods": "2", "requests.cpu": "400m"}))];
        let err = check(&quotas, "", "pods", &pod("100m"), None, 0).err().unwrap();
        assert_eq!(err, "exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2");
        let quotas = [q("q", json!({"pods": "5", "requests.cpu": "1"}), json!({"pods": "2", "requests.cpu": "400m"}))];
        let err = check(&quotas, "", "pods", &pod("700m"), None, 0).err().unwrap();
        assert_eq!(
            err,
            "exceeded quota: q, requested: requests.cpu=700m, used: requests.cpu=400m, limited: requests.cpu=1"
        );
        let ok = check(&quotas, "", "pods", &pod("600m"), None, 0).unwrap();
        assert_eq!(quota::pretty(&ok[0].delta), "pods=1,requests.cpu=600m");
    }

    #[test]
    fn missing_container_resources_and_unknown_status_are_refused() {
        let quotas = [q("q", json!({"limits.memory": "1Gi"}), json!({"limits.memory": "0"}))];
        let err = check(&quotas, "", "pods", &pod("1"), None, 0).err().unwrap();
        assert_eq!(err, "failed quota: q: must specify limits.memory for: c");
        let quotas = [q("q", json!({"pods": "2", "count/pods": "3"}), json!({}))];
        let err = check(&quotas, "", "pods", &pod("1"), None, 0).err().unwrap();
        assert_eq!(err, "status unknown for quota: q, resources: count/pods,pods");
        // Not computed at all yet (no status.hard): nothing restricted, admitted.
        let fresh = json!({"metadata": {"name": "q"}, "spec": {"hard": {"pods": "0"}}});
        assert!(check(&[fresh], "", "pods", &pod("1"), None, 0).unwrap().is_empty());
    }

    #[test]
    fn updates_charge_only_growth() {
        let quotas = [q("q", json!({"requests.storage": "10Gi"}), json!({"requests.storage": "5Gi"}))];
        let old =
            json!({"metadata": {"resourceVersion": "3"}, "spec": {"resources": {"requests": {"storage": "5Gi"}}}});
        let new =
            json!({"metadata": {"resourceVersion": "3"}, "spec": {"resources": {"requests": {"storage": "8Gi"}}}});
        let charges = check(&quotas, "", "persistentvolumeclaims", &new, Some(&old), 0).unwrap();
        assert_eq!(quota::pretty(&charges[0].delta), "requests.storage=3Gi");
        let bigger = json!({"spec": {"resources": {"requests": {"storage": "11Gi"}}}});
        let err = check(&quotas, "", "persistentvolumeclaims", &bigger, Some(&old), 0).err().unwrap();
        assert_eq!(err, "exceeded quota: q, requested: requests.storage=6Gi, used: requests.storage=5Gi, limited: requests.storage=10Gi");
        assert!(check(&quotas, "", "persistentvolumeclaims", &old, Some(&old), 0).unwrap().is_empty());
    }
}
