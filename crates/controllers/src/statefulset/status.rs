//! A StatefulSet's status (upstream `updateStatefulSet`'s counters,
//! `completeRollingUpdate` and `inconsistentStatus`).
//!
//! Over the set's pods: `replicas` counts created pods (a phase set);
//! `readyReplicas` those Running and Ready; `availableReplicas` those
//! also Ready for `minReadySeconds`; `currentReplicas` / `updatedReplicas`
//! the created, non-terminating pods on the current / update revision.
//! With `RollingUpdate`, once `.spec.replicas` pods exist, all updated
//! and ready, the update revision becomes the current one (`currentReplicas` =
//! `updatedReplicas`).

use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetStatus};
use k8s_openapi::api::core::v1::Pod;

use super::identity::pod_revision;
use crate::replicaset::status::{is_pod_available, is_pod_ready};

/// Upstream `isRunningAndReady`.
pub fn running_and_ready(p: &Pod) -> bool {
    p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running") && is_pod_ready(p)
}

/// Upstream `isRunningAndAvailable`.
pub fn running_and_available(p: &Pod, min_ready_seconds: i32, now: jiff::Timestamp) -> bool {
    running_and_ready(p) && is_pod_available(p, min_ready_seconds, now)
}

/// Upstream `isCreated`: the pod has a phase.
pub fn is_created(p: &Pod) -> bool {
    p.status.as_ref().and_then(|s| s.phase.as_deref()).is_some_and(|ph| !ph.is_empty())
}

/// The status of `set` over its `pods`, with the resolved revisions.
pub fn calculate(
    set: &StatefulSet,
    pods: &[&Pod],
    current_revision: &str,
    update_revision: &str,
    collision_count: Option<i32>,
    now: jiff::Timestamp,
) -> StatefulSetStatus {
    let min_ready = set.spec.as_ref().and_then(|s| s.min_ready_seconds).unwrap_or(0);
    let mut s = StatefulSetStatus {
        observed_generation: set.metadata.generation,
        collision_count,
        current_revision: Some(current_revision.to_string()),
        update_revision: Some(update_revision.to_string()),
        conditions: set.status.as_ref().and_then(|s| s.conditions.clone()),
        ..Default::default()
    };
    let (mut ready, mut available, mut current, mut updated) = (0, 0, 0, 0);
    for p in pods {
        if !is_created(p) {
            continue;
        }
        s.replicas += 1;
        if running_and_ready(p) {
            ready += 1;
            if running_and_available(p, min_ready, now) {
                available += 1;
            }
        }
        if p.metadata.deletion_timestamp.is_none() {
            if pod_revision(p) == current_revision {
                current += 1;
            }
            if pod_revision(p) == update_revision {
                updated += 1;
            }
        }
    }
    s.ready_replicas = Some(ready);
    s.available_replicas = Some(available);
    s.current_replicas = Some(current);
    s.updated_replicas = Some(updated);
    let rolling = set
        .spec
        .as_ref()
        .and_then(|sp| sp.update_strategy.as_ref())
        .and_then(|u| u.type_.as_deref())
        .is_none_or(|t| t == "RollingUpdate");
    let wanted = set.spec.as_ref().and_then(|sp| sp.replicas).unwrap_or(1);
    if rolling && updated == wanted && ready == wanted && s.replicas == wanted {
        s.current_replicas = Some(updated);
        s.current_revision = Some(update_revision.to_string());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
    use kube::api::ObjectMeta;

    fn pod(revision: &str, phase: &str, ready: bool) -> Pod {
        Pod {
            metadata: ObjectMeta {
                labels: Some([("controller-revision-hash".to_string(), revision.to_string())].into()),
                ..Default::default()
            },
            spec: None,
            status: Some(PodStatus {
                phase: Some(phase.into()),
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: if ready { "True" } else { "False" }.into(),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn counts_and_completes_a_rolling_update() {
        let set = StatefulSet {
            metadata: ObjectMeta { generation: Some(4), ..Default::default() },
            spec: Some(k8s_openapi::api::apps::v1::StatefulSetSpec { replicas: Some(2), ..Default::default() }),
            ..Default::default()
        };
        let now = jiff::Timestamp::now();
        let pods = [pod("a", "Running", true), pod("b", "Running", true), pod("b", "Pending", false)];
        let refs: Vec<&Pod> = pods.iter().collect();
        let s = calculate(&set, &refs, "a", "b", None, now);
        assert_eq!(
            (s.replicas, s.ready_replicas, s.available_replicas, s.current_replicas, s.updated_replicas),
            (3, Some(2), Some(2), Some(1), Some(2))
        );
        assert_eq!((s.current_revision.as_deref(), s.observed_generation), (Some("a"), Some(4)));
        let pods = [pod("b", "Running", true), pod("b", "Running", true)];
        let refs: Vec<&Pod> = pods.iter().collect();
        let s = calculate(&set, &refs, "a", "b", Some(1), now);
        assert_eq!(
            (s.current_revision.as_deref(), s.current_replicas, s.collision_count),
            (Some("b"), Some(2), Some(1))
        );
    }
}
