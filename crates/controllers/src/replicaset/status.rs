//! Pod predicates and the ReplicaSet status (upstream `calculateStatus` in
//! `pkg/controller/replicaset/replica_set_utils.go`, `IsPodActive`,
//! `podutil.IsPodReady` and `IsPodAvailable`).
//!
//! Status, over the ReplicaSet's active owned pods: `replicas` = their
//! count; `fullyLabeledReplicas` = those carrying every label of the pod
//! template; `readyReplicas` = those with condition Ready True;
//! `availableReplicas` = ready ones whose Ready transition is more than
//! `minReadySeconds` ago (all ready ones when it is 0). The condition
//! `ReplicaFailure` is set (status True, reason `FailedCreate` when pods
//! were missing, `FailedDelete` when there were too many, message = the
//! error) when managing replicas failed and the condition is absent, and
//! removed when managing succeeds.

use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetCondition, ReplicaSetStatus};
use k8s_openapi::api::core::v1::{Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// The condition type set when creating or deleting pods failed.
pub const REPLICA_FAILURE: &str = "ReplicaFailure";

/// Upstream `IsPodActive`: not Succeeded, not Failed, not being deleted.
pub fn is_pod_active(p: &Pod) -> bool {
    let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
    phase != Some("Succeeded") && phase != Some("Failed") && p.metadata.deletion_timestamp.is_none()
}

/// The pod's `Ready` condition, if any.
pub fn ready_condition(p: &Pod) -> Option<&PodCondition> {
    p.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == "Ready")
}

/// Upstream `IsPodReady`: condition Ready is True.
pub fn is_pod_ready(p: &Pod) -> bool {
    ready_condition(p).is_some_and(|c| c.status == "True")
}

/// Upstream `IsPodAvailable`: ready, and either `min_ready_seconds` is 0
/// or the Ready transition was more than that long before `now`.
pub fn is_pod_available(p: &Pod, min_ready_seconds: i32, now: jiff::Timestamp) -> bool {
    let Some(c) = ready_condition(p).filter(|c| c.status == "True") else { return false };
    if min_ready_seconds <= 0 {
        return true;
    }
    match &c.last_transition_time {
        Some(t) => t.0.as_nanosecond() + i128::from(min_ready_seconds) * 1_000_000_000 < now.as_nanosecond(),
        None => false,
    }
}

/// The new status of `rs` given its active owned `pods` and the error of
/// managing replicas, if any (see the module docs). `observedGeneration`
/// is left as it was: the caller sets it when writing.
pub fn calculate(rs: &ReplicaSet, pods: &[&Pod], manage_error: Option<&str>, now: jiff::Timestamp) -> ReplicaSetStatus {
    let mut status = rs.status.clone().unwrap_or_default();
    let spec = rs.spec.as_ref();
    let template_labels =
        spec.and_then(|s| s.template.as_ref()).and_then(|t| t.metadata.as_ref()).and_then(|m| m.labels.as_ref());
    let min_ready = spec.and_then(|s| s.min_ready_seconds).unwrap_or(0);
    let (mut fully, mut ready, mut available) = (0, 0, 0);
    for p in pods {
        let labels = p.metadata.labels.as_ref();
        let fully_labeled =
            template_labels.is_none_or(|want| want.iter().all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v)));
        if fully_labeled {
            fully += 1;
        }
        if is_pod_ready(p) {
            ready += 1;
            if is_pod_available(p, min_ready, now) {
                available += 1;
            }
        }
    }
    let has_failure = status.conditions.iter().flatten().any(|c| c.type_ == REPLICA_FAILURE);
    match manage_error {
        Some(msg) if !has_failure => {
            let wanted = spec.and_then(|s| s.replicas).unwrap_or(1);
            let diff = pods.len() as i64 - i64::from(wanted);
            let reason = match diff.cmp(&0) {
                std::cmp::Ordering::Less => "FailedCreate",
                std::cmp::Ordering::Greater => "FailedDelete",
                std::cmp::Ordering::Equal => "",
            };
            status.conditions.get_or_insert_with(Vec::new).push(ReplicaSetCondition {
                type_: REPLICA_FAILURE.into(),
                status: "True".into(),
                reason: Some(reason.into()).filter(|r: &String| !r.is_empty()),
                message: Some(msg.to_string()),
                last_transition_time: Some(Time(now)),
            });
        }
        None if has_failure => {
            if let Some(cs) = status.conditions.as_mut() {
                cs.retain(|c| c.type_ != REPLICA_FAILURE);
            }
            if status.conditions.as_ref().is_some_and(Vec::is_empty) {
                status.conditions = None;
            }
        }
        _ => {}
    }
    status.replicas = pods.len() as i32;
    status.fully_labeled_replicas = Some(fully);
    status.ready_replicas = Some(ready);
    status.available_replicas = Some(available);
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::ReplicaSetSpec;
    use k8s_openapi::api::core::v1::{PodStatus, PodTemplateSpec};
    use kube::api::ObjectMeta;

    fn ts(secs: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(secs).unwrap()
    }

    fn pod(labels: &[(&str, &str)], ready_at: Option<i64>) -> Pod {
        Pod {
            metadata: ObjectMeta {
                labels: Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
                ..Default::default()
            },
            status: Some(PodStatus {
                phase: Some("Running".into()),
                conditions: ready_at.map(|t| {
                    vec![PodCondition {
                        type_: "Ready".into(),
                        status: "True".into(),
                        last_transition_time: Some(Time(ts(t))),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn rs(replicas: i32, min_ready: i32) -> ReplicaSet {
        ReplicaSet {
            spec: Some(ReplicaSetSpec {
                replicas: Some(replicas),
                min_ready_seconds: Some(min_ready),
                template: Some(PodTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some(
                            [("app".to_string(), "a".to_string()), ("tier".to_string(), "t".to_string())].into(),
                        ),
                        ..Default::default()
                    }),
                    spec: None,
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn counts_fully_labeled_ready_and_available_with_min_ready_seconds() {
        let now = ts(1000);
        let pods = [
            pod(&[("app", "a"), ("tier", "t")], Some(100)),
            pod(&[("app", "a")], Some(995)),
            pod(&[("app", "a"), ("tier", "t"), ("x", "y")], None),
        ];
        let refs: Vec<&Pod> = pods.iter().collect();
        let s = calculate(&rs(3, 10), &refs, None, now);
        assert_eq!(
            (s.replicas, s.fully_labeled_replicas, s.ready_replicas, s.available_replicas),
            (3, Some(2), Some(2), Some(1))
        );
        let s = calculate(&rs(3, 0), &refs, None, now);
        assert_eq!(s.available_replicas, Some(2));
    }

    #[test]
    fn replica_failure_is_set_once_with_the_direction_and_removed_on_success() {
        let now = ts(1000);
        let pods = [pod(&[("app", "a")], None)];
        let refs: Vec<&Pod> = pods.iter().collect();
        let mut r = rs(3, 0);
        let s = calculate(&r, &refs, Some("pods \"x\" is forbidden: exceeded quota"), now);
        let c = &s.conditions.as_ref().unwrap()[0];
        assert_eq!(
            (c.type_.as_str(), c.status.as_str(), c.reason.as_deref()),
            ("ReplicaFailure", "True", Some("FailedCreate"))
        );
        r.status = Some(s);
        // Already present: not replaced (upstream keeps the first failure).
        let s = calculate(&r, &refs, Some("other"), ts(2000));
        assert_eq!(
            s.conditions.as_ref().unwrap()[0].message.as_deref(),
            Some("pods \"x\" is forbidden: exceeded quota")
        );
        let s = calculate(&r, &refs, None, now);
        assert_eq!(s.conditions, None);
        let s = calculate(&rs(0, 0), &refs, Some("boom"), now);
        assert_eq!(s.conditions.as_ref().unwrap()[0].reason.as_deref(), Some("FailedDelete"));
    }

    #[test]
    fn active_means_not_terminal_and_not_terminating() {
        let mut p = pod(&[], None);
        assert!(is_pod_active(&p));
        p.status.as_mut().unwrap().phase = Some("Succeeded".into());
        assert!(!is_pod_active(&p));
        p.status.as_mut().unwrap().phase = Some("Pending".into());
        p.metadata.deletion_timestamp = Some(Time(ts(1)));
        assert!(!is_pod_active(&p));
    }
}
