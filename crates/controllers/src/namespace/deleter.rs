//! Emptying a namespace (upstream
//! `pkg/controller/namespace/deletion/namespaced_resources_deleter.go`):
//! for every namespaced resource discovery lists (preferred versions) with
//! the `delete` verb, a `deletecollection` (background propagation) or,
//! where that is not offered, a list and one delete per object; then a
//! list shows what remains. Pods get an estimate of their graceful
//! termination so the controller knows when to look again.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams};
use kube::discovery::{ApiCapabilities, ApiResource, Scope};

use super::conditions::Outcome;
use crate::runtime::is_not_found;

/// Upstream's default wait for objects that carry finalizers (`finalizerEstimateSeconds`).
pub const FINALIZER_ESTIMATE_SECONDS: i64 = 15;

/// A namespaced resource the controller empties.
#[derive(Clone, Debug)]
pub struct Target {
    /// Its coordinates.
    pub resource: ApiResource,
    /// Its verbs.
    pub caps: ApiCapabilities,
}

/// The namespaced, deletable resources at their preferred versions
/// (upstream `ServerPreferredNamespacedResources` filtered by `delete`),
/// and upstream's error text when some groups could not be read (the
/// others are still emptied).
pub async fn discover(client: &kube::Client) -> Result<(Vec<Target>, Option<String>), kube::Error> {
    let found = crate::garbagecollector::discovery::discover(client).await?;
    let targets = found
        .preferred()
        .filter(|r| r.caps.scope == Scope::Namespaced && r.caps.supports_operation("delete"))
        .map(|r| Target { resource: r.resource.clone(), caps: r.caps.clone() })
        .collect();
    let error = found.error().map(|e| format!("Discovery failed for some groups, {} failing: {e}", found.failed.len()));
    Ok((targets, error))
}

/// Upstream's gvr `String()`: `group/version, Resource=plural`.
fn gvr_string(r: &ApiResource) -> String {
    format!("{}/{}, Resource={}", r.group, r.version, r.plural)
}

/// Upstream's `estimateGracefulTerminationForPods`: the longest
/// `terminationGracePeriodSeconds` of the pods not yet terminal, less the
/// seconds since the namespace's deletion began (never below 0).
pub fn estimate_pods(pods: &[Pod], since_deletion_secs: i64) -> i64 {
    let estimate = pods
        .iter()
        .filter(|p| !matches!(p.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded" | "Failed")))
        .filter_map(|p| p.spec.as_ref().and_then(|s| s.termination_grace_period_seconds))
        .max()
        .unwrap_or(0);
    (estimate - since_deletion_secs).max(0)
}

/// Deletes everything in `namespace` and reports what remains: the
/// longest estimate (seconds) before remaining content should be gone,
/// and the tallies the conditions are made of. Errors of single resources
/// go into `outcome.content_errors` (the pass goes on with the others).
pub async fn delete_all_content(
    client: &kube::Client,
    namespace: &str,
    targets: &[Target],
    since_deletion_secs: i64,
    outcome: &mut Outcome,
) -> i64 {
    let results = futures::future::join_all(
        targets.iter().map(|t| delete_resource_content(client, namespace, t, since_deletion_secs)),
    )
    .await;
    let mut estimate = 0;
    for (t, r) in targets.iter().zip(results) {
        let (est, remaining, finalizers, err) = r;
        estimate = estimate.max(est);
        if remaining > 0 {
            *outcome.remaining.entry(format!("{}.{}", t.resource.plural, t.resource.group)).or_default() += remaining;
            for (f, n) in finalizers {
                *outcome.finalizers.entry(f).or_default() += n;
            }
        }
        if let Some(e) = err {
            outcome.content_errors.push(e);
        }
    }
    estimate
}

type ResourceResult = (i64, usize, BTreeMap<String, usize>, Option<String>);

/// Upstream's `deleteAllContentForGroupVersionResource`.
async fn delete_resource_content(client: &kube::Client, ns: &str, t: &Target, since: i64) -> ResourceResult {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &t.resource);
    let mut estimate = 0;
    if t.resource.group.is_empty() && t.resource.plural == "pods" {
        match Api::<Pod>::namespaced(client.clone(), ns).list(&ListParams::default()).await {
            Ok(list) => estimate = estimate_pods(&list.items, since),
            Err(e) => return (0, 0, BTreeMap::new(), Some(e.to_string())),
        }
    }
    let dp = DeleteParams::background();
    let mut deleted = false;
    if t.caps.supports_operation("deletecollection") {
        match api.delete_collection(&dp, &ListParams::default()).await {
            Ok(_) => deleted = true,
            // Upstream: MethodNotSupported or NotFound mean "delete one by one".
            Err(e) if is_not_found(&e) || crate::runtime::api_code(&e) == Some(405) => {}
            Err(e) => return (estimate, 0, BTreeMap::new(), Some(e.to_string())),
        }
    }
    if !t.caps.supports_operation("list") {
        return (estimate, 0, BTreeMap::new(), None);
    }
    if !deleted {
        match api.list_metadata(&ListParams::default()).await {
            Ok(list) => {
                for item in list.items {
                    let name = item.metadata.name.unwrap_or_default();
                    match api.delete(&name, &dp).await {
                        Ok(_) => {}
                        Err(e) if is_not_found(&e) || crate::runtime::api_code(&e) == Some(405) => {}
                        Err(e) => return (estimate, 0, BTreeMap::new(), Some(e.to_string())),
                    }
                }
            }
            Err(e) => return (estimate, 0, BTreeMap::new(), Some(e.to_string())),
        }
    }
    // What remains, and which finalizers hold it.
    let list = match api.list_metadata(&ListParams::default()).await {
        Ok(l) => l,
        Err(e) => return (estimate, 0, BTreeMap::new(), Some(e.to_string())),
    };
    if list.items.is_empty() {
        return (0, 0, BTreeMap::new(), None);
    }
    let mut finalizers = BTreeMap::new();
    for item in &list.items {
        for f in item.metadata.finalizers.iter().flatten() {
            *finalizers.entry(f.clone()).or_insert(0) += 1;
        }
    }
    let n = list.items.len();
    if estimate > 0 {
        return (estimate, n, finalizers, None);
    }
    if !finalizers.is_empty() {
        return (FINALIZER_ESTIMATE_SECONDS, n, finalizers, None);
    }
    // Nothing explains the leftovers: an error, as upstream.
    let err = format!("unexpected items still remain in namespace: {ns} for gvr: {}", gvr_string(&t.resource));
    (estimate, n, finalizers, Some(err))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodSpec, PodStatus};

    fn pod(grace: Option<i64>, phase: &str) -> Pod {
        Pod {
            spec: Some(PodSpec { termination_grace_period_seconds: grace, ..Default::default() }),
            status: Some(PodStatus { phase: Some(phase.into()), ..Default::default() }),
            ..Default::default()
        }
    }

    // Upstream TestNamespaceDeletionEstimate*: the longest grace of live
    // pods, minus the time already spent; terminal pods do not count.
    #[test]
    fn pod_estimate_is_the_longest_live_grace_minus_elapsed() {
        let pods =
            vec![pod(Some(30), "Running"), pod(Some(120), "Succeeded"), pod(Some(45), "Pending"), pod(None, "Running")];
        assert_eq!(estimate_pods(&pods, 0), 45);
        assert_eq!(estimate_pods(&pods, 40), 5);
        assert_eq!(estimate_pods(&pods, 100), 0);
        assert_eq!(estimate_pods(&[], 0), 0);
    }
}
