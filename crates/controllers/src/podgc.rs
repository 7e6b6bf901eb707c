//! The pod garbage collector (upstream `pkg/controller/podgc`): every
//! period (upstream 20 s) it
//! - deletes the oldest terminated pods (phase neither Pending, Running nor
//!   Unknown) beyond `--terminated-pod-gc-threshold` (12,500; 0 disables),
//!   evicted ones first;
//! - deletes pods bound to a node that no longer exists, once the node has
//!   been missing for the quarantine (upstream 40 s) and a live GET of the
//!   node says 404 — first marking them `Failed` with the `DisruptionTarget`
//!   condition (reason `DeletionByPodGC`, message `PodGC: node no longer
//!   exists`);
//! - deletes terminating pods that were never scheduled (no `nodeName`);
//! - deletes terminating pods on a not-ready node with the
//!   `node.kubernetes.io/out-of-service` taint.
//!
//! Every deletion is a force delete (grace period 0), preceded by a status
//! patch to `Failed` for pods not yet terminal, as upstream.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{watcher, WatchStreamExt};
use serde_json::json;

use crate::runtime::{is_not_found, Ctx, Stop};

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "pod-garbage-collector-controller";
/// The older name `--controllers` also accepts.
pub const ALIAS: &str = "podgc";
/// The kube-system ServiceAccount it runs as.
pub const SERVICE_ACCOUNT: &str = "pod-garbage-collector";

/// The taint that lets terminating pods of a not-ready node go.
pub const TAINT_OUT_OF_SERVICE: &str = "node.kubernetes.io/out-of-service";

/// PodGC's knobs (upstream's `PodGCControllerConfiguration` plus the two
/// timers upstream's integration tests shorten).
#[derive(Clone, Debug)]
pub struct PodGcSettings {
    /// Terminated pods kept before the oldest are deleted
    /// (`--terminated-pod-gc-threshold`, 12,500; ≤ 0 disables this part).
    pub terminated_pod_gc_threshold: i32,
    /// How often the collector runs (upstream `gcCheckPeriod`, 20 s).
    pub period: Duration,
    /// How long a pod's node must be missing before its pods go (upstream
    /// `quarantineTime`, 40 s).
    pub quarantine: Duration,
}

impl Default for PodGcSettings {
    fn default() -> Self {
        PodGcSettings {
            terminated_pod_gc_threshold: 12_500,
            period: Duration::from_secs(20),
            quarantine: Duration::from_secs(40),
        }
    }
}

/// Why a pod is collected (upstream's metric reasons).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Over the terminated-pod threshold.
    Terminated,
    /// Its node is gone.
    Orphaned,
    /// Terminating and never scheduled.
    TerminatingUnscheduled,
    /// Terminating on an out-of-service node.
    TerminatingOutOfService,
}

fn phase(p: &Pod) -> &str {
    p.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("")
}

fn node_name(p: &Pod) -> &str {
    p.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or("")
}

/// Upstream's `isPodTerminated`: any phase but Pending, Running and Unknown
/// (an empty phase counts as terminated there too).
pub fn is_terminated(p: &Pod) -> bool {
    !matches!(phase(p), "Pending" | "Running" | "Unknown")
}

/// Upstream's `eviction.PodIsEvicted`: Failed with reason `Evicted`.
fn is_evicted(p: &Pod) -> bool {
    phase(p) == "Failed" && p.status.as_ref().and_then(|s| s.reason.as_deref()) == Some("Evicted")
}

/// The terminated pods to delete so that `threshold` remain: evicted first,
/// then oldest first, names breaking ties (upstream
/// `byEvictionAndCreationTimestamp`).
pub fn terminated_to_delete(pods: &[Arc<Pod>], threshold: i32) -> Vec<Arc<Pod>> {
    if threshold <= 0 {
        return Vec::new();
    }
    let mut terminated: Vec<Arc<Pod>> = pods.iter().filter(|p| is_terminated(p)).cloned().collect();
    let excess = terminated.len().saturating_sub(threshold as usize);
    if excess == 0 {
        return Vec::new();
    }
    terminated.sort_by(|a, b| {
        is_evicted(b)
            .cmp(&is_evicted(a))
            .then_with(|| {
                a.metadata
                    .creation_timestamp
                    .as_ref()
                    .map(|t| t.0)
                    .cmp(&b.metadata.creation_timestamp.as_ref().map(|t| t.0))
            })
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
    terminated.truncate(excess);
    terminated
}

fn node_ready(n: &Node) -> bool {
    n.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Terminating pods on a node that is not Ready and carries the
/// out-of-service taint (upstream `gcTerminating`).
pub fn terminating_out_of_service(pods: &[Arc<Pod>], nodes: &HashMap<String, Arc<Node>>) -> Vec<Arc<Pod>> {
    pods.iter()
        .filter(|p| p.metadata.deletion_timestamp.is_some())
        .filter(|p| {
            nodes.get(node_name(p)).is_some_and(|n| {
                !node_ready(n)
                    && n.spec
                        .as_ref()
                        .and_then(|s| s.taints.as_ref())
                        .is_some_and(|ts| ts.iter().any(|t| t.key == TAINT_OUT_OF_SERVICE))
            })
        })
        .cloned()
        .collect()
}

/// Terminating pods without a node (upstream `gcUnscheduledTerminating`).
pub fn unscheduled_terminating(pods: &[Arc<Pod>]) -> Vec<Arc<Pod>> {
    pods.iter().filter(|p| p.metadata.deletion_timestamp.is_some() && node_name(p).is_empty()).cloned().collect()
}

/// Runs until `stop`: pods and nodes come from informers; every period the
/// four collections above run in upstream's order.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    tracing::info!(component = NAME, "starting controller");
    let settings = ctx.settings.podgc.clone();
    let (pods, pods_w) = reflector::store::<Pod>();
    let (nodes, nodes_w) = reflector::store::<Node>();
    let pod_stream = reflector::reflector(pods_w, watcher(Api::<Pod>::all(ctx.reader.clone()), Default::default()))
        .default_backoff()
        .applied_objects();
    let node_stream = reflector::reflector(nodes_w, watcher(Api::<Node>::all(ctx.reader.clone()), Default::default()))
        .default_backoff()
        .applied_objects();
    let informers = async move {
        futures::join!(pod_stream.for_each(|_| async {}), node_stream.for_each(|_| async {}));
    };
    let work = async {
        if pods.wait_until_ready().await.is_err() || nodes.wait_until_ready().await.is_err() {
            return;
        }
        let mut quarantine: HashMap<String, Instant> = HashMap::new();
        loop {
            gc(&ctx, &settings, &pods, &nodes, &mut quarantine).await;
            tokio::time::sleep(settings.period).await;
        }
    };
    tokio::select! {
        _ = informers => {}
        _ = work => {}
        _ = crate::runtime::stopped(stop) => {}
    }
    tracing::info!(component = NAME, "controller stopped");
}

/// One pass of the collector.
async fn gc(
    ctx: &Ctx,
    settings: &PodGcSettings,
    pods: &Store<Pod>,
    nodes: &Store<Node>,
    quarantine: &mut HashMap<String, Instant>,
) {
    let pods = pods.state();
    let nodes: HashMap<String, Arc<Node>> =
        nodes.state().into_iter().map(|n| (n.metadata.name.clone().unwrap_or_default(), n)).collect();
    delete_all(ctx, terminated_to_delete(&pods, settings.terminated_pod_gc_threshold), None, Reason::Terminated).await;
    delete_all(ctx, terminating_out_of_service(&pods, &nodes), None, Reason::TerminatingOutOfService).await;

    // Orphans: a node missing from the informer is quarantined, then checked live.
    let now = Instant::now();
    for p in pods.iter() {
        let n = node_name(p);
        if !n.is_empty() && !nodes.contains_key(n) {
            quarantine.entry(n.to_string()).or_insert(now + settings.quarantine);
        }
    }
    let mut deleted_nodes = HashSet::new();
    let due: Vec<String> = quarantine.iter().filter(|(_, at)| **at <= now).map(|(n, _)| n.clone()).collect();
    for name in due {
        quarantine.remove(&name);
        if nodes.contains_key(&name) {
            continue;
        }
        match Api::<Node>::all(ctx.client.clone()).get(&name).await {
            Err(e) if is_not_found(&e) => {
                deleted_nodes.insert(name);
            }
            Err(e) => tracing::warn!(component = NAME, node = %name, error = %e, "error while getting node"),
            Ok(_) => {}
        }
    }
    let orphans: Vec<Arc<Pod>> = pods.iter().filter(|p| deleted_nodes.contains(node_name(p))).cloned().collect();
    let condition = json!({
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "DeletionByPodGC",
        "message": "PodGC: node no longer exists",
    });
    delete_all(ctx, orphans, Some(condition), Reason::Orphaned).await;
    delete_all(ctx, unscheduled_terminating(&pods), None, Reason::TerminatingUnscheduled).await;
}

/// How many deletions run at once.
const CONCURRENCY: usize = 64;

async fn delete_all(ctx: &Ctx, pods: Vec<Arc<Pod>>, condition: Option<serde_json::Value>, reason: Reason) {
    if pods.is_empty() {
        return;
    }
    tracing::info!(component = NAME, count = pods.len(), ?reason, "garbage collecting pods");
    futures::stream::iter(pods)
        .for_each_concurrent(CONCURRENCY, |p| {
            let condition = condition.clone();
            async move {
                match mark_failed_and_delete(ctx, &p, condition).await {
                    Ok(()) => tracing::info!(component = NAME, pod = %crate::runtime::key_of(p.as_ref()), ?reason, "force deleted pod"),
                    Err(e) if is_not_found(&e) => {}
                    Err(e) => tracing::warn!(component = NAME, pod = %crate::runtime::key_of(p.as_ref()), error = %e, "cannot delete pod"),
                }
            }
        })
        .await;
}

/// Upstream `markFailedAndDeletePodWithCondition`: a pod not yet terminal
/// is patched to `Failed` (with `condition`, if any) before a force delete.
async fn mark_failed_and_delete(ctx: &Ctx, pod: &Pod, condition: Option<serde_json::Value>) -> Result<(), kube::Error> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let api = Api::<Pod>::namespaced(ctx.client.clone(), ns);
    if !matches!(phase(pod), "Succeeded" | "Failed") {
        let mut status = json!({ "phase": "Failed" });
        if let Some(mut c) = condition {
            c["lastTransitionTime"] =
                json!(jiff::Timestamp::now().round(jiff::Unit::Second).ok().map(|t| t.to_string()));
            status["conditions"] = json!([c]);
        }
        // The uid pins the patch to this pod, as upstream's PatchPodStatus.
        let patch = json!({ "metadata": { "uid": pod.metadata.uid }, "status": status });
        api.patch_status(name, &PatchParams::default(), &Patch::Strategic(patch)).await?;
    }
    let dp = DeleteParams {
        grace_period_seconds: Some(0),
        preconditions: pod.metadata.uid.clone().map(|uid| Preconditions { uid: Some(uid), resource_version: None }),
        ..Default::default()
    };
    api.delete(name, &dp).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn pod(name: &str, phase: &str, created: i64) -> Arc<Pod> {
        let mut p = Pod::default();
        p.metadata.name = Some(name.into());
        p.metadata.creation_timestamp = Some(Time(jiff::Timestamp::from_second(created).unwrap()));
        p.status = Some(k8s_openapi::api::core::v1::PodStatus { phase: Some(phase.into()), ..Default::default() });
        Arc::new(p)
    }

    fn names(v: &[Arc<Pod>]) -> Vec<&str> {
        v.iter().map(|p| p.metadata.name.as_deref().unwrap()).collect()
    }

    // Upstream gc_controller_test.go TestGCTerminated: threshold 1 of
    // three Failed pods deletes the two oldest; Running pods never count.
    #[test]
    fn terminated_pods_over_the_threshold_go_oldest_first() {
        let pods = vec![pod("a", "Failed", 10), pod("b", "Failed", 0), pod("c", "Failed", 5), pod("d", "Running", 0)];
        assert_eq!(names(&terminated_to_delete(&pods, 1)), ["b", "c"]);
        assert_eq!(names(&terminated_to_delete(&pods, 3)), Vec::<&str>::new());
        assert_eq!(names(&terminated_to_delete(&pods, 0)), Vec::<&str>::new());
        let pods =
            vec![pod("a", "Succeeded", 0), pod("b", "Pending", 0), pod("c", "Unknown", 0), pod("d", "Failed", 1)];
        assert_eq!(names(&terminated_to_delete(&pods, 1)), ["a"]);
    }

    #[test]
    fn evicted_pods_go_first_and_names_break_ties() {
        let mut evicted = (*pod("z", "Failed", 100)).clone();
        evicted.status.as_mut().unwrap().reason = Some("Evicted".into());
        let pods = vec![pod("b", "Failed", 0), pod("a", "Failed", 0), Arc::new(evicted)];
        assert_eq!(names(&terminated_to_delete(&pods, 1)), ["z", "a"]);
    }

    #[test]
    fn unscheduled_terminating_pods_are_those_deleting_without_a_node() {
        let mut deleting = (*pod("a", "Pending", 0)).clone();
        deleting.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::now()));
        let mut bound = deleting.clone();
        bound.metadata.name = Some("b".into());
        bound.spec = Some(k8s_openapi::api::core::v1::PodSpec { node_name: Some("n1".into()), ..Default::default() });
        let pods = vec![Arc::new(deleting), Arc::new(bound), pod("c", "Pending", 0)];
        assert_eq!(names(&unscheduled_terminating(&pods)), ["a"]);
    }
}
