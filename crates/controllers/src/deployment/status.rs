//! Deployment status (upstream `sync.go` `calculateStatus` and
//! `deployment_util.go` condition helpers): the counters summed over the
//! Deployment's ReplicaSets, `observedGeneration`, `collisionCount`, and
//! the `Available` condition.

use k8s_openapi::api::apps::v1::{Deployment, DeploymentCondition, DeploymentStatus, ReplicaSet};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::util;

/// Condition type: at least `replicas - maxUnavailable` pods are available.
pub const AVAILABLE: &str = "Available";
/// Condition type: the rollout's progress (see `progress`).
pub const PROGRESSING: &str = "Progressing";
/// Condition type copied from a ReplicaSet that cannot create pods.
pub const REPLICA_FAILURE: &str = "ReplicaFailure";
/// `Available=True` reason.
pub const MIN_AVAILABLE: &str = "MinimumReplicasAvailable";
/// `Available=False` reason.
pub const MIN_UNAVAILABLE: &str = "MinimumReplicasUnavailable";

/// Now, to the second (the precision a `Time` keeps on the wire, so a
/// status written and read back compares equal).
pub fn now() -> Time {
    Time(jiff::Timestamp::from_second(jiff::Timestamp::now().as_second()).unwrap_or(jiff::Timestamp::UNIX_EPOCH))
}

/// A condition stamped now (`NewDeploymentCondition`).
pub fn condition(type_: &str, status: &str, reason: &str, message: String) -> DeploymentCondition {
    DeploymentCondition {
        type_: type_.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message),
        last_update_time: Some(now()),
        last_transition_time: Some(now()),
    }
}

/// The condition of `type_` (`GetDeploymentCondition`).
pub fn get_condition<'a>(s: &'a DeploymentStatus, type_: &str) -> Option<&'a DeploymentCondition> {
    s.conditions.as_ref()?.iter().find(|c| c.type_ == type_)
}

/// Sets a condition (`SetDeploymentCondition`): nothing when status and
/// reason are unchanged; the transition time kept when only the reason
/// changes; the condition moved to the end otherwise.
pub fn set_condition(s: &mut DeploymentStatus, mut c: DeploymentCondition) {
    if let Some(cur) = get_condition(s, &c.type_) {
        if cur.status == c.status && cur.reason == c.reason {
            return;
        }
        if cur.status == c.status {
            c.last_transition_time = cur.last_transition_time.clone();
        }
    }
    remove_condition(s, &c.type_.clone());
    s.conditions.get_or_insert_with(Vec::new).push(c);
}

/// Removes the condition of `type_` (`RemoveDeploymentCondition`).
pub fn remove_condition(s: &mut DeploymentStatus, type_: &str) {
    if let Some(cs) = s.conditions.as_mut() {
        cs.retain(|c| c.type_ != type_);
    }
}

fn opt(v: i32) -> Option<i32> {
    Some(v).filter(|v| *v != 0)
}

/// A status in the canonical shape the server returns (zero counters and
/// empty condition lists omitted), for comparisons.
pub fn canonical(s: Option<&DeploymentStatus>) -> DeploymentStatus {
    let mut s = s.cloned().unwrap_or_default();
    for f in [
        &mut s.replicas,
        &mut s.updated_replicas,
        &mut s.ready_replicas,
        &mut s.available_replicas,
        &mut s.unavailable_replicas,
        &mut s.terminating_replicas,
    ] {
        *f = f.filter(|v| *v != 0);
    }
    s.observed_generation = s.observed_generation.filter(|v| *v != 0);
    if s.conditions.as_ref().is_some_and(|c| c.is_empty()) {
        s.conditions = None;
    }
    s
}

/// The status the Deployment should have given its sets (`calculateStatus`):
/// counters over `all` (`new_rs` gives `updatedReplicas`), the current
/// conditions with `Available` set from `replicas - maxUnavailable`.
pub fn calculate(all: &[ReplicaSet], new_rs: Option<&ReplicaSet>, d: &Deployment) -> DeploymentStatus {
    let available = util::sum_available(all);
    let total = util::sum_spec(all);
    let old = canonical(d.status.as_ref());
    let mut s = DeploymentStatus {
        observed_generation: d.metadata.generation.filter(|g| *g != 0),
        replicas: opt(util::sum_actual(all)),
        updated_replicas: opt(new_rs.map(util::rs_actual).unwrap_or(0)),
        ready_replicas: opt(util::sum_ready(all)),
        available_replicas: opt(available),
        unavailable_replicas: opt((total - available).max(0)),
        collision_count: old.collision_count,
        conditions: old.conditions.clone(),
        terminating_replicas: None,
    };
    if available >= util::d_replicas(d) - util::max_unavailable(d) {
        set_condition(
            &mut s,
            condition(AVAILABLE, "True", MIN_AVAILABLE, "Deployment has minimum availability.".into()),
        );
    } else {
        set_condition(
            &mut s,
            condition(AVAILABLE, "False", MIN_UNAVAILABLE, "Deployment does not have minimum availability.".into()),
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{DeploymentSpec, ReplicaSetSpec, ReplicaSetStatus};

    fn rs(spec: i32, actual: i32, ready: i32, available: i32) -> ReplicaSet {
        ReplicaSet {
            spec: Some(ReplicaSetSpec { replicas: Some(spec), ..Default::default() }),
            status: Some(ReplicaSetStatus {
                replicas: actual,
                ready_replicas: Some(ready),
                available_replicas: Some(available),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn counters_and_available_condition() {
        let mut d = Deployment::default();
        d.metadata.generation = Some(4);
        d.spec = Some(DeploymentSpec { replicas: Some(4), ..Default::default() });
        let new = rs(2, 2, 2, 1);
        let all = [rs(3, 3, 3, 2), new.clone()];
        let s = calculate(&all, Some(&new), &d);
        assert_eq!(
            (s.observed_generation, s.replicas, s.updated_replicas, s.ready_replicas, s.available_replicas),
            (Some(4), Some(5), Some(2), Some(5), Some(3))
        );
        // unavailable = spec total 5 - available 3.
        assert_eq!(s.unavailable_replicas, Some(2));
        // 25% of 4 rounds down to 1 unavailable: 3 >= 3.
        let c = get_condition(&s, AVAILABLE).unwrap();
        assert_eq!((c.status.as_str(), c.reason.as_deref()), ("True", Some(MIN_AVAILABLE)));
        let s = calculate(&[rs(4, 4, 2, 2)], None, &d);
        let c = get_condition(&s, AVAILABLE).unwrap();
        assert_eq!((c.status.as_str(), c.reason.as_deref()), ("False", Some(MIN_UNAVAILABLE)));
        assert_eq!(c.message.as_deref(), Some("Deployment does not have minimum availability."));
    }

    #[test]
    fn set_condition_keeps_transition_time_when_status_is_unchanged() {
        let mut s = DeploymentStatus::default();
        let mut c = condition(PROGRESSING, "True", "A", "x".into());
        c.last_transition_time = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        set_condition(&mut s, c);
        set_condition(&mut s, condition(PROGRESSING, "True", "B", "y".into()));
        let got = get_condition(&s, PROGRESSING).unwrap();
        assert_eq!(got.reason.as_deref(), Some("B"));
        assert_eq!(got.last_transition_time, Some(Time(jiff::Timestamp::UNIX_EPOCH)));
        set_condition(&mut s, condition(PROGRESSING, "False", "C", "z".into()));
        assert_ne!(
            get_condition(&s, PROGRESSING).unwrap().last_transition_time,
            Some(Time(jiff::Timestamp::UNIX_EPOCH))
        );
    }
}
