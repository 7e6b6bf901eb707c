//! The taints the node lifecycle controller owns (upstream
//! `node_lifecycle_controller.go` `doNoScheduleTaintingPass`,
//! `doNoExecuteTaintingPass` and `controller_utils.go`
//! `SwapNodeControllerTaint`), as pure functions, and the write that
//! applies them.
//!
//! NoSchedule taints follow the node's conditions (TaintNodesByCondition):
//! Ready False → `node.kubernetes.io/not-ready`, Ready Unknown →
//! `node.kubernetes.io/unreachable`, MemoryPressure/DiskPressure/
//! PIDPressure/NetworkUnavailable True → `memory-pressure`,
//! `disk-pressure`, `pid-pressure`, `network-unavailable`, and
//! `spec.unschedulable` → `node.kubernetes.io/unschedulable`. The NoExecute
//! not-ready/unreachable taints drive taint-based eviction. Taints match by
//! key and effect; an added taint gets `timeAdded` = now.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, Patch, PatchParams};

use crate::runtime::{is_conflict, Error};

/// The node's Ready condition is False.
pub const NOT_READY: &str = "node.kubernetes.io/not-ready";
/// The node's Ready condition is Unknown (no heartbeat).
pub const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
/// `spec.unschedulable` is true.
pub const UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";
/// The node has been declared out of service (pods are force-deleted by
/// PodGC upstream; NoExecute-tainted ones are evicted by the taint
/// eviction controller like any other taint).
pub const OUT_OF_SERVICE: &str = "node.kubernetes.io/out-of-service";
/// Effect: no new pods.
pub const NO_SCHEDULE: &str = "NoSchedule";
/// Effect: running pods are evicted.
pub const NO_EXECUTE: &str = "NoExecute";

/// `(condition type, status, taint key)` of upstream's
/// `nodeConditionToTaintKeyStatusMap`.
const CONDITION_TAINTS: &[(&str, &str, &str)] = &[
    ("Ready", "False", NOT_READY),
    ("Ready", "Unknown", UNREACHABLE),
    ("MemoryPressure", "True", "node.kubernetes.io/memory-pressure"),
    ("DiskPressure", "True", "node.kubernetes.io/disk-pressure"),
    ("NetworkUnavailable", "True", "node.kubernetes.io/network-unavailable"),
    ("PIDPressure", "True", "node.kubernetes.io/pid-pressure"),
];

/// A taint of `key` and `effect` with no value.
pub fn taint(key: &str, effect: &str) -> Taint {
    Taint { key: key.into(), effect: effect.into(), ..Default::default() }
}

fn same(a: &Taint, b: &Taint) -> bool {
    a.key == b.key && a.effect == b.effect
}

/// Whether the node has a taint of `key` and `effect`.
pub fn has(node: &Node, key: &str, effect: &str) -> bool {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|t| t.iter().any(|t| t.key == key && t.effect == effect))
}

/// The NoSchedule taints the node's conditions and `spec.unschedulable`
/// call for, and those of them it has: `(to add, to remove)`.
pub fn no_schedule_diff(node: &Node) -> (Vec<Taint>, Vec<Taint>) {
    let mut want = Vec::new();
    for c in node.status.as_ref().and_then(|s| s.conditions.as_ref()).into_iter().flatten() {
        if let Some((_, _, key)) = CONDITION_TAINTS.iter().find(|(t, s, _)| *t == c.type_ && *s == c.status) {
            want.push(taint(key, NO_SCHEDULE));
        }
    }
    if node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true) {
        want.push(taint(UNSCHEDULABLE, NO_SCHEDULE));
    }
    let have: Vec<Taint> = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|t| {
            t.effect == NO_SCHEDULE && (t.key == UNSCHEDULABLE || CONDITION_TAINTS.iter().any(|(_, _, k)| *k == t.key))
        })
        .collect();
    let add = want.iter().filter(|w| !have.iter().any(|h| same(w, h))).cloned().collect();
    let remove = have.iter().filter(|h| !want.iter().any(|w| same(w, h))).cloned().collect();
    (add, remove)
}

/// The NoExecute taint a Ready status calls for and its opposite:
/// False → not-ready (remove unreachable), Unknown → unreachable (remove
/// not-ready); None when Ready is True.
pub fn no_execute_for(ready_status: &str) -> Option<(Taint, Taint)> {
    match ready_status {
        "False" => Some((taint(NOT_READY, NO_EXECUTE), taint(UNREACHABLE, NO_EXECUTE))),
        "Unknown" => Some((taint(UNREACHABLE, NO_EXECUTE), taint(NOT_READY, NO_EXECUTE))),
        _ => None,
    }
}

/// The node's taints after adding `add` (missing ones, `timeAdded` =
/// `now`) and removing `remove`; `None` when nothing changes.
pub fn swapped(current: &[Taint], add: &[Taint], remove: &[Taint], now: Timestamp) -> Option<Vec<Taint>> {
    let mut out: Vec<Taint> = current.iter().filter(|t| !remove.iter().any(|r| same(r, t))).cloned().collect();
    for a in add {
        if !out.iter().any(|t| same(a, t)) {
            out.push(Taint { time_added: Some(Time(now)), ..a.clone() });
        }
    }
    (out.len() != current.len() || out.iter().zip(current).any(|(a, b)| a != b)).then_some(out)
}

/// Adds and removes taints on the node, starting from `cached` and
/// re-reading it (with `client`: the manager's own identity may only list
/// and watch) on a conflict (up to 5 tries); the
/// patch carries the resourceVersion it was computed from. Returns whether
/// the node changed; a node that is gone is not an error.
pub async fn swap(client: &kube::Client, cached: &Node, add: &[Taint], remove: &[Taint]) -> Result<bool, Error> {
    let name = cached.metadata.name.clone().unwrap_or_default();
    let mut node = cached.clone();
    for _ in 0..5 {
        let current = node.spec.as_ref().and_then(|s| s.taints.clone()).unwrap_or_default();
        let Some(new) = swapped(&current, add, remove, Timestamp::now()) else {
            return Ok(false);
        };
        let taints =
            if new.is_empty() { serde_json::Value::Null } else { serde_json::to_value(&new).unwrap_or_default() };
        let patch = serde_json::json!({
            "metadata": {"resourceVersion": node.metadata.resource_version},
            "spec": {"taints": taints},
        });
        match Api::<Node>::all(client.clone()).patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => return Ok(true),
            Err(e) if is_conflict(&e) => {
                node = match Api::<Node>::all(client.clone()).get_opt(&name).await? {
                    Some(n) => n,
                    None => return Ok(false),
                };
            }
            Err(e) if crate::runtime::is_not_found(&e) => return Ok(false),
            Err(e) => return Err(e.into()),
        }
    }
    Err(Error::Other(format!("node {name}: taints kept conflicting")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{NodeCondition, NodeSpec, NodeStatus};

    fn node(conds: &[(&str, &str)], taints: Vec<Taint>, unschedulable: bool) -> Node {
        Node {
            spec: Some(NodeSpec { taints: Some(taints), unschedulable: Some(unschedulable), ..Default::default() }),
            status: Some(NodeStatus {
                conditions: Some(
                    conds
                        .iter()
                        .map(|(t, s)| NodeCondition {
                            type_: t.to_string(),
                            status: s.to_string(),
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn keys(t: &[Taint]) -> Vec<&str> {
        t.iter().map(|t| t.key.as_str()).collect()
    }

    #[test]
    fn no_schedule_taints_follow_conditions_and_unschedulable() {
        let n = node(&[("Ready", "Unknown"), ("MemoryPressure", "True"), ("DiskPressure", "False")], vec![], true);
        let (add, remove) = no_schedule_diff(&n);
        assert_eq!(keys(&add), [UNREACHABLE, "node.kubernetes.io/memory-pressure", UNSCHEDULABLE]);
        assert!(add.iter().all(|t| t.effect == NO_SCHEDULE));
        assert!(remove.is_empty());
        // Back to Ready: the controller's taints go, foreign taints stay.
        let n = node(
            &[("Ready", "True")],
            vec![taint(UNREACHABLE, NO_SCHEDULE), taint(UNREACHABLE, NO_EXECUTE), taint("example.com/x", NO_SCHEDULE)],
            false,
        );
        let (add, remove) = no_schedule_diff(&n);
        assert!(add.is_empty());
        assert_eq!(remove, [taint(UNREACHABLE, NO_SCHEDULE)]);
        let (add, _) = no_schedule_diff(&node(
            &[("Ready", "False"), ("PIDPressure", "True"), ("NetworkUnavailable", "True")],
            vec![],
            false,
        ));
        assert_eq!(
            keys(&add),
            [NOT_READY, "node.kubernetes.io/pid-pressure", "node.kubernetes.io/network-unavailable"]
        );
    }

    #[test]
    fn no_execute_taints_swap_between_not_ready_and_unreachable() {
        let (add, opposite) = no_execute_for("Unknown").unwrap();
        assert_eq!((add.key.as_str(), opposite.key.as_str()), (UNREACHABLE, NOT_READY));
        assert_eq!(add.effect, NO_EXECUTE);
        assert_eq!(no_execute_for("False").unwrap().0.key, NOT_READY);
        assert!(no_execute_for("True").is_none());
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let cur = vec![taint(NOT_READY, NO_EXECUTE), taint("x", NO_SCHEDULE)];
        let out = swapped(&cur, std::slice::from_ref(&add), std::slice::from_ref(&opposite), now).unwrap();
        assert_eq!(keys(&out), ["x", UNREACHABLE]);
        assert_eq!(out[1].time_added, Some(Time(now)));
        assert_eq!(swapped(&out, &[add], &[opposite], now), None);
    }
}
