//! Node health from heartbeats (upstream `tryUpdateNodeHealth` in
//! `node_lifecycle_controller.go`), pure: what the controller last saw of
//! a node ([`Probe`]), updated from the node's status and its Lease in
//! `kube-node-lease`, and the conditions to write once no heartbeat came
//! for the grace period.
//!
//! A heartbeat is a new `lastHeartbeatTime` on the Ready condition or a
//! newer `spec.renewTime` on the Lease; either moves the probe time to
//! "now" (the controller's clock, never the kubelet's). A node without a
//! Ready condition gets the startup grace period, counted from its
//! creation.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Node, NodeCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// The condition the kubelet keeps True while the node is healthy.
pub const READY: &str = "Ready";
/// Conditions set to Unknown along with Ready (NetworkUnavailable is left
/// alone: the control plane owns it).
pub const CONDITIONS_SET_UNKNOWN: [&str; 4] = [READY, "MemoryPressure", "DiskPressure", "PIDPressure"];
/// Reason of a condition that went stale.
pub const REASON_UNKNOWN: &str = "NodeStatusUnknown";
/// Message of a condition that went stale.
pub const MESSAGE_UNKNOWN: &str = "Kubelet stopped posting node status.";
/// Reason of a condition the kubelet never posted.
pub const REASON_NEVER_UPDATED: &str = "NodeStatusNeverUpdated";
/// Message of a condition the kubelet never posted.
pub const MESSAGE_NEVER_UPDATED: &str = "Kubelet never posted node status.";

/// What the controller remembers of one node between passes (upstream's
/// `nodeHealthData`).
#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    /// When the controller last saw a heartbeat.
    pub probe_time: Timestamp,
    /// When the controller last saw the Ready condition change.
    pub ready_transition_time: Timestamp,
    /// The Ready condition as last seen.
    pub ready: Option<NodeCondition>,
    /// The Lease's `spec.renewTime` as last seen.
    pub lease_renew: Option<Timestamp>,
}

/// The node's condition of `type_`.
pub fn condition<'a>(node: &'a Node, type_: &str) -> Option<&'a NodeCondition> {
    node.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == type_)
}

fn created(node: &Node) -> Timestamp {
    node.metadata.creation_timestamp.as_ref().map(|t| t.0).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// Updates what is known of `node` from its status and Lease renew time
/// as seen `now`; returns the new probe and the grace period that applies
/// (`startup` while the node has no Ready condition, else `monitor`).
pub fn observe(
    prev: Option<&Probe>,
    node: &Node,
    lease_renew: Option<Timestamp>,
    now: Timestamp,
    monitor: SignedDuration,
    startup: SignedDuration,
) -> (Probe, SignedDuration) {
    let current = condition(node, READY).cloned();
    let grace = if current.is_some() { monitor } else { startup };
    let saved = prev.and_then(|p| p.ready.as_ref());
    let mut probe = match (prev, saved, &current) {
        // Never seen, no Ready condition: counted from the node's creation.
        (None, _, None) => {
            Probe { probe_time: created(node), ready_transition_time: created(node), ready: None, lease_renew: None }
        }
        (Some(p), _, None) if p.ready.is_none() => Probe { ready: None, ..p.clone() },
        // Never seen, a Ready condition first seen, or the condition removed.
        (None, _, Some(_)) | (Some(_), None, Some(_)) | (Some(_), Some(_), None) => {
            Probe { probe_time: now, ready_transition_time: now, ready: current.clone(), lease_renew: None }
        }
        (Some(p), Some(s), Some(c)) => {
            if s.last_heartbeat_time != c.last_heartbeat_time {
                let transition =
                    if s.last_transition_time != c.last_transition_time { now } else { p.ready_transition_time };
                Probe {
                    probe_time: now,
                    ready_transition_time: transition,
                    ready: current.clone(),
                    lease_renew: p.lease_renew,
                }
            } else {
                p.clone()
            }
        }
        (Some(p), None, None) => p.clone(),
    };
    // A renewed Lease is a heartbeat too.
    if let Some(renew) = lease_renew {
        if prev.and_then(|p| p.lease_renew).is_none_or(|saved| saved < renew) {
            probe.lease_renew = Some(renew);
            probe.probe_time = now;
        }
    }
    (probe, grace)
}

/// Whether no heartbeat came for longer than `grace` by `now`.
pub fn is_stale(probe: &Probe, grace: SignedDuration, now: Timestamp) -> bool {
    now > probe.probe_time + grace
}

/// The node's conditions once its heartbeats stopped: Ready,
/// MemoryPressure, DiskPressure and PIDPressure become Unknown
/// (`NodeStatusUnknown`, "Kubelet stopped posting node status.", the
/// transition time `now`, the heartbeat time kept); missing ones are added
/// (`NodeStatusNeverUpdated`, heartbeat = the node's creation). Returns
/// `None` when the Ready condition would not change (upstream then writes
/// nothing).
pub fn unknown_conditions(node: &Node, now: Timestamp) -> Option<Vec<NodeCondition>> {
    let mut conditions = node.status.as_ref().and_then(|s| s.conditions.clone()).unwrap_or_default();
    let before = conditions.iter().find(|c| c.type_ == READY).cloned();
    for type_ in CONDITIONS_SET_UNKNOWN {
        match conditions.iter_mut().find(|c| c.type_ == type_) {
            None => conditions.push(NodeCondition {
                type_: type_.to_string(),
                status: "Unknown".into(),
                reason: Some(REASON_NEVER_UPDATED.into()),
                message: Some(MESSAGE_NEVER_UPDATED.into()),
                last_heartbeat_time: Some(Time(created(node))),
                last_transition_time: Some(Time(now)),
            }),
            Some(c) if c.status != "Unknown" => {
                c.status = "Unknown".into();
                c.reason = Some(REASON_UNKNOWN.into());
                c.message = Some(MESSAGE_UNKNOWN.into());
                c.last_transition_time = Some(Time(now));
            }
            Some(_) => {}
        }
    }
    let after = conditions.iter().find(|c| c.type_ == READY).cloned();
    (after != before).then_some(conditions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::NodeStatus;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn ts(s: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + s).unwrap()
    }

    fn cond(type_: &str, status: &str, heartbeat: i64, transition: i64) -> NodeCondition {
        NodeCondition {
            type_: type_.into(),
            status: status.into(),
            last_heartbeat_time: Some(Time(ts(heartbeat))),
            last_transition_time: Some(Time(ts(transition))),
            ..Default::default()
        }
    }

    fn node(conditions: Vec<NodeCondition>) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some("n1".into()),
                creation_timestamp: Some(Time(ts(0))),
                ..Default::default()
            },
            status: Some(NodeStatus { conditions: Some(conditions), ..Default::default() }),
            ..Default::default()
        }
    }

    const MONITOR: SignedDuration = SignedDuration::from_secs(50);
    const STARTUP: SignedDuration = SignedDuration::from_secs(60);

    #[test]
    fn a_node_without_ready_gets_the_startup_grace_from_its_creation() {
        let n = node(vec![]);
        let (p, grace) = observe(None, &n, None, ts(10), MONITOR, STARTUP);
        assert_eq!((p.probe_time, grace), (ts(0), STARTUP));
        assert!(!is_stale(&p, grace, ts(60)));
        assert!(is_stale(&p, grace, ts(61)));
        // Upstream: "Kubelet never posted node status." for every condition.
        let c = unknown_conditions(&n, ts(61)).unwrap();
        assert_eq!(c.len(), 4);
        assert!(c.iter().all(|c| c.status == "Unknown" && c.reason.as_deref() == Some(REASON_NEVER_UPDATED)));
        assert_eq!(c[0].last_heartbeat_time, Some(Time(ts(0))));
    }

    #[test]
    fn heartbeats_and_lease_renewals_move_the_probe_time() {
        let n = node(vec![cond(READY, "True", 5, 1)]);
        let (p, grace) = observe(None, &n, None, ts(10), MONITOR, STARTUP);
        assert_eq!((p.probe_time, grace), (ts(10), MONITOR));
        // Same heartbeat, no lease: nothing new.
        let (p2, _) = observe(Some(&p), &n, None, ts(30), MONITOR, STARTUP);
        assert_eq!(p2.probe_time, ts(10));
        assert!(is_stale(&p2, MONITOR, ts(61)));
        // A lease renewal counts.
        let (p3, _) = observe(Some(&p2), &n, Some(ts(29)), ts(40), MONITOR, STARTUP);
        assert_eq!(p3.probe_time, ts(40));
        // The same renewTime again does not.
        let (p4, _) = observe(Some(&p3), &n, Some(ts(29)), ts(45), MONITOR, STARTUP);
        assert_eq!(p4.probe_time, ts(40));
        // A new heartbeat on Ready counts; a changed transition time resets it.
        let n2 = node(vec![cond(READY, "False", 44, 44)]);
        let (p5, _) = observe(Some(&p4), &n2, Some(ts(29)), ts(50), MONITOR, STARTUP);
        assert_eq!((p5.probe_time, p5.ready_transition_time), (ts(50), ts(50)));
    }

    #[test]
    fn stale_conditions_become_unknown_once() {
        let n = node(vec![cond(READY, "True", 5, 1), cond("MemoryPressure", "False", 5, 1)]);
        let c = unknown_conditions(&n, ts(100)).unwrap();
        let ready = c.iter().find(|c| c.type_ == READY).unwrap();
        assert_eq!(ready.status, "Unknown");
        assert_eq!(ready.reason.as_deref(), Some("NodeStatusUnknown"));
        assert_eq!(ready.message.as_deref(), Some("Kubelet stopped posting node status."));
        assert_eq!(ready.last_heartbeat_time, Some(Time(ts(5))));
        assert_eq!(ready.last_transition_time, Some(Time(ts(100))));
        let types: Vec<_> = c.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, [READY, "MemoryPressure", "DiskPressure", "PIDPressure"]);
        // Already Unknown: nothing to write.
        let n2 = node(c);
        assert_eq!(unknown_conditions(&n2, ts(200)), None);
    }
}
