//! Which pods go first when a ReplicaSet scales down (upstream
//! `controller.ActivePodsWithRanks` and `getPodsToDelete` in
//! `pkg/controller/replicaset/replica_set.go`, with LogarithmicScaleDown,
//! GA since 1.31).
//!
//! A pod sorts before (is deleted before) another when, checked in order:
//! 1. it is unassigned and the other is assigned (`spec.nodeName`);
//! 2. its phase is earlier in Pending < Unknown < Running (other phases
//!    rank with Pending);
//! 3. it is not ready and the other is;
//! 4. its `controller.kubernetes.io/pod-deletion-cost` is lower (absent or
//!    invalid = 0);
//! 5. its rank is higher (more related active pods on its node);
//! 6. both ready: it became ready more recently — compared by the integer
//!    log2 of the nanoseconds since (equal buckets: the smaller uid first);
//!    a zero ready time sorts first;
//! 7. its highest container restart count is higher (containers and
//!    restartable init containers);
//! 8. it was created more recently (same logarithmic buckets, uid tiebreak).

use std::cmp::Ordering;
use std::collections::HashMap;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::status::{is_pod_active, is_pod_ready, ready_condition};

/// The annotation that orders pods for scale-down (upstream
/// `core.PodDeletionCost`).
pub const POD_DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

/// The pods to delete: the first `diff` of `pods` after ranking them
/// (upstream `getPodsToDelete`). A pod's rank is the number of active
/// `related` pods (the ReplicaSet's own and its siblings') on its node.
/// When every pod goes, no ranking is needed.
pub fn pods_to_delete<'a>(pods: &[&'a Pod], related: &[&Pod], diff: usize, now: jiff::Timestamp) -> Vec<&'a Pod> {
    if diff >= pods.len() {
        return pods.to_vec();
    }
    let mut on_node: HashMap<&str, i64> = HashMap::new();
    for p in related.iter().filter(|p| is_pod_active(p)) {
        *on_node.entry(node_name(p)).or_default() += 1;
    }
    let mut ranked: Vec<(&Pod, i64)> =
        pods.iter().map(|p| (*p, on_node.get(node_name(p)).copied().unwrap_or(0))).collect();
    ranked.sort_by(|a, b| compare(a, b, now));
    ranked.into_iter().take(diff).map(|(p, _)| p).collect()
}

fn node_name(p: &Pod) -> &str {
    p.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or("")
}

fn phase_ordinal(p: &Pod) -> u8 {
    match p.status.as_ref().and_then(|s| s.phase.as_deref()) {
        Some("Unknown") => 1,
        Some("Running") => 2,
        _ => 0,
    }
}

/// Upstream `getDeletionCostFromPodAnnotations`: a 32-bit integer, 0 when
/// absent or not one.
pub fn deletion_cost(p: &Pod) -> i32 {
    p.metadata.annotations.as_ref().and_then(|a| a.get(POD_DELETION_COST)).and_then(|v| v.parse().ok()).unwrap_or(0)
}

fn ready_time(p: &Pod) -> Option<jiff::Timestamp> {
    ready_condition(p).filter(|c| c.status == "True").and_then(|c| c.last_transition_time.as_ref()).map(|t| t.0)
}

fn max_restarts(p: &Pod) -> i32 {
    let Some(status) = p.status.as_ref() else { return 0 };
    let mut max = status.container_statuses.iter().flatten().map(|c| c.restart_count).max().unwrap_or(0);
    let restartable: Vec<&str> = p
        .spec
        .iter()
        .flat_map(|s| s.init_containers.iter().flatten())
        .filter(|c| c.restart_policy.as_deref() == Some("Always"))
        .map(|c| c.name.as_str())
        .collect();
    for c in status.init_container_statuses.iter().flatten() {
        if restartable.contains(&c.name.as_str()) {
            max = max.max(c.restart_count);
        }
    }
    max
}

/// Upstream `logarithmicRankDiff`: the difference of the integer log2 of
/// the nanoseconds from each time to `now` (-1 for a time not before now).
fn log_rank_diff(t1: jiff::Timestamp, t2: jiff::Timestamp, now: jiff::Timestamp) -> i64 {
    let bucket = |t: jiff::Timestamp| {
        let d = now.as_nanosecond() - t.as_nanosecond();
        if d > 0 {
            (d as f64).log2() as i64
        } else {
            -1
        }
    };
    bucket(t1) - bucket(t2)
}

/// Newer first, with a zero (absent) time before any other; equal times
/// are `None` (no decision).
fn newer_first(
    a: Option<jiff::Timestamp>,
    b: Option<jiff::Timestamp>,
    pa: &Pod,
    pb: &Pod,
    now: jiff::Timestamp,
) -> Option<bool> {
    if a == b {
        return None;
    }
    let (Some(a), Some(b)) = (a, b) else { return Some(a.is_none()) };
    match log_rank_diff(a, b, now) {
        0 => Some(pa.metadata.uid.as_deref().unwrap_or("") < pb.metadata.uid.as_deref().unwrap_or("")),
        d => Some(d < 0),
    }
}

/// Whether pod `a` (rank `ra`) goes before pod `b` (upstream
/// `ActivePodsWithRanks.Less`; see the module docs).
pub fn less(a: &Pod, ra: i64, b: &Pod, rb: i64, now: jiff::Timestamp) -> bool {
    let (na, nb) = (node_name(a), node_name(b));
    if na != nb && (na.is_empty() || nb.is_empty()) {
        return na.is_empty();
    }
    let (oa, ob) = (phase_ordinal(a), phase_ordinal(b));
    if oa != ob {
        return oa < ob;
    }
    let (ready_a, ready_b) = (is_pod_ready(a), is_pod_ready(b));
    if ready_a != ready_b {
        return !ready_a;
    }
    let (ca, cb) = (deletion_cost(a), deletion_cost(b));
    if ca != cb {
        return ca < cb;
    }
    if ra != rb {
        return ra > rb;
    }
    if ready_a && ready_b {
        if let Some(d) = newer_first(ready_time(a), ready_time(b), a, b, now) {
            return d;
        }
    }
    let (xa, xb) = (max_restarts(a), max_restarts(b));
    if xa != xb {
        return xa > xb;
    }
    let created = |p: &Pod| p.metadata.creation_timestamp.as_ref().map(|t: &Time| t.0);
    newer_first(created(a), created(b), a, b, now).unwrap_or(false)
}

fn compare(a: &(&Pod, i64), b: &(&Pod, i64), now: jiff::Timestamp) -> Ordering {
    if less(a.0, a.1, b.0, b.1, now) {
        Ordering::Less
    } else if less(b.0, b.1, a.0, a.1, now) {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ContainerStatus, PodCondition, PodSpec, PodStatus};
    use kube::api::ObjectMeta;

    fn ts(secs: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(secs).unwrap()
    }

    fn pod(name: &str, node: &str, phase: &str, ready: Option<i64>, created: i64) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                uid: Some(name.into()),
                creation_timestamp: Some(Time(ts(created))),
                ..Default::default()
            },
            spec: Some(PodSpec { node_name: (!node.is_empty()).then(|| node.into()), ..Default::default() }),
            status: Some(PodStatus {
                phase: Some(phase.into()),
                conditions: ready.map(|t| {
                    vec![PodCondition {
                        type_: "Ready".into(),
                        status: "True".into(),
                        last_transition_time: Some(Time(ts(t))),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            }),
        }
    }

    fn names(ps: Vec<&Pod>) -> Vec<&str> {
        ps.into_iter().map(|p| p.metadata.name.as_deref().unwrap()).collect()
    }

    // Upstream TestSortingActivePodsWithRanks: each pod goes before the next.
    #[test]
    fn deletion_order_follows_upstream_ranking() {
        let now = ts(1_000_000);
        let mut with_restarts = pod("restarts-low", "n1", "Running", Some(1000), 100);
        with_restarts.status.as_mut().unwrap().container_statuses =
            Some(vec![ContainerStatus { restart_count: 3, ..Default::default() }]);
        let mut cheap = pod("cheap", "n1", "Running", None, 100);
        cheap.metadata.annotations = Some([(POD_DELETION_COST.to_string(), "-10".to_string())].into());
        let ordered: Vec<(Pod, i64)> = vec![
            (pod("unscheduled", "", "Pending", None, 100), 0),
            (pod("pending", "n1", "Pending", None, 100), 0),
            (pod("unknown", "n1", "Unknown", None, 100), 0),
            (cheap, 0),
            (pod("running-notready", "n1", "Running", None, 100), 0),
            (pod("ready-doubled", "n1", "Running", Some(1000), 100), 2),
            // Ready much more recently (a smaller log2 bucket) goes first.
            (pod("ready-recent", "n1", "Running", Some(999_990), 100), 1),
            (with_restarts, 1),
            (pod("ready-old-young", "n1", "Running", Some(1000), 500_000), 1),
            (pod("ready-old-old", "n1", "Running", Some(1000), 100), 1),
        ];
        for i in 0..ordered.len() {
            for j in 0..ordered.len() {
                let (a, ra) = (&ordered[i].0, ordered[i].1);
                let (b, rb) = (&ordered[j].0, ordered[j].1);
                assert_eq!(less(a, ra, b, rb, now), i < j, "{:?} < {:?}", a.metadata.name, b.metadata.name);
            }
        }
    }

    #[test]
    fn equal_log_buckets_break_ties_by_uid() {
        let now = ts(1_000_000);
        // 100 s and 101 s ago are both in bucket floor(log2(1e11)) = 36.
        let a = pod("b-uid", "n1", "Running", Some(now.as_second() - 100), 0);
        let b = pod("a-uid", "n1", "Running", Some(now.as_second() - 101), 0);
        assert!(less(&b, 0, &a, 0, now));
        assert!(!less(&a, 0, &b, 0, now));
    }

    #[test]
    fn pods_to_delete_ranks_by_related_pods_on_the_same_node() {
        let now = ts(1_000_000);
        let a = pod("a", "n1", "Running", Some(1000), 100);
        let b = pod("b", "n2", "Running", Some(1000), 100);
        let sibling = pod("s", "n2", "Running", Some(1000), 100);
        let related = vec![&a, &b, &sibling];
        assert_eq!(names(pods_to_delete(&[&a, &b], &related, 1, now)), ["b"]);
        assert_eq!(names(pods_to_delete(&[&a, &b], &related, 2, now)), ["a", "b"]);
    }
}
