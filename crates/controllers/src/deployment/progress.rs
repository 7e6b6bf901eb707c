//! Rollout progress (upstream `progress.go` `syncRolloutStatus`,
//! `requeueStuckDeployment`, `sync.go` `checkPausedConditions`, and the
//! `deployment_util.go` predicates): the `Progressing` condition with its
//! reasons and the `progressDeadlineSeconds` timeout.

use k8s_openapi::api::apps::v1::{Deployment, DeploymentCondition, DeploymentStatus, ReplicaSet};
use std::time::Duration;

use super::status::{self, condition, get_condition, remove_condition, set_condition, PROGRESSING, REPLICA_FAILURE};
use super::util;

/// A new ReplicaSet was created (`NewReplicaSetReason`).
pub const NEW_RS_CREATED: &str = "NewReplicaSetCreated";
/// The new ReplicaSet already existed (`FoundNewRSReason`).
pub const FOUND_NEW_RS: &str = "FoundNewReplicaSet";
/// The rollout made progress (`ReplicaSetUpdatedReason`).
pub const RS_UPDATED: &str = "ReplicaSetUpdated";
/// The rollout is complete (`NewRSAvailableReason`).
pub const NEW_RS_AVAILABLE: &str = "NewReplicaSetAvailable";
/// No progress within `progressDeadlineSeconds` (`TimedOutReason`).
pub const TIMED_OUT: &str = "ProgressDeadlineExceeded";
/// Creating the new ReplicaSet failed (`FailedRSCreateReason`).
pub const FAILED_RS_CREATE: &str = "ReplicaSetCreateError";
/// The Deployment is paused (`PausedDeployReason`).
pub const PAUSED: &str = "DeploymentPaused";
/// The Deployment was resumed (`ResumedDeployReason`).
pub const RESUMED: &str = "DeploymentResumed";

/// Whether the rollout is complete: every replica updated and available,
/// the generation observed (`DeploymentComplete`).
pub fn complete(d: &Deployment, s: &DeploymentStatus) -> bool {
    let r = util::d_replicas(d);
    s.updated_replicas.unwrap_or(0) == r
        && s.replicas.unwrap_or(0) == r
        && s.available_replicas.unwrap_or(0) == r
        && s.observed_generation.unwrap_or(0) >= d.metadata.generation.unwrap_or(0)
}

/// Whether `new` shows progress over the Deployment's current status:
/// more updated, ready or available replicas, or fewer old ones
/// (`DeploymentProgressing`).
pub fn progressing(d: &Deployment, new: &DeploymentStatus) -> bool {
    let old = status::canonical(d.status.as_ref());
    let g = |v: Option<i32>| v.unwrap_or(0);
    let old_old = g(old.replicas) - g(old.updated_replicas);
    let new_old = g(new.replicas) - g(new.updated_replicas);
    g(new.updated_replicas) > g(old.updated_replicas)
        || new_old < old_old
        || g(new.ready_replicas) > g(old.ready_replicas)
        || g(new.available_replicas) > g(old.available_replicas)
}

/// Whether the rollout went past its deadline since the Progressing
/// condition was last updated (`DeploymentTimedOut`).
pub fn timed_out(d: &Deployment, new: &DeploymentStatus, now: jiff::Timestamp) -> bool {
    if !util::has_progress_deadline(d) {
        return false;
    }
    let Some(c) = get_condition(new, PROGRESSING) else { return false };
    match c.reason.as_deref() {
        Some(NEW_RS_AVAILABLE) => false,
        Some(TIMED_OUT) => true,
        _ => {
            let secs = d.spec.as_ref().and_then(|s| s.progress_deadline_seconds).unwrap_or(0) as i64;
            let from = c.last_update_time.as_ref().map(|t| t.0).unwrap_or(now);
            from.as_second() + secs < now.as_second()
        }
    }
}

fn rs_name(rs: Option<&ReplicaSet>) -> String {
    rs.and_then(|r| r.metadata.name.clone()).unwrap_or_default()
}

/// The status `syncRolloutStatus` writes: [`status::calculate`], then
/// the Progressing condition (removed without a deadline; otherwise
/// NewReplicaSetAvailable when complete, ReplicaSetUpdated on progress,
/// ProgressDeadlineExceeded past the deadline) and ReplicaFailure copied
/// from the sets.
pub fn rollout_status(
    all: &[ReplicaSet],
    new_rs: Option<&ReplicaSet>,
    d: &Deployment,
    now: jiff::Timestamp,
) -> DeploymentStatus {
    let mut s = status::calculate(all, new_rs, d);
    if !util::has_progress_deadline(d) {
        remove_condition(&mut s, PROGRESSING);
    }
    let old = status::canonical(d.status.as_ref());
    let cur = get_condition(&old, PROGRESSING).cloned();
    let is_complete =
        s.replicas == s.updated_replicas && cur.as_ref().and_then(|c| c.reason.as_deref()) == Some(NEW_RS_AVAILABLE);
    if util::has_progress_deadline(d) && !is_complete {
        if complete(d, &s) {
            let msg = format!("ReplicaSet {:?} has successfully progressed.", rs_name(new_rs));
            set_condition(&mut s, condition(PROGRESSING, "True", NEW_RS_AVAILABLE, msg));
        } else if progressing(d, &s) {
            let msg = match new_rs {
                Some(_) => format!("ReplicaSet {:?} is progressing.", rs_name(new_rs)),
                None => format!("Deployment {:?} is progressing.", d.metadata.name.as_deref().unwrap_or("")),
            };
            let mut c = condition(PROGRESSING, "True", RS_UPDATED, msg);
            // Progress refreshes lastUpdateTime even with the same reason.
            if let Some(cur) = &cur {
                if cur.status == "True" {
                    c.last_transition_time = cur.last_transition_time.clone();
                }
                remove_condition(&mut s, PROGRESSING);
            }
            set_condition(&mut s, c);
        } else if timed_out(d, &s, now) {
            let msg = match new_rs {
                Some(_) => format!("ReplicaSet {:?} has timed out progressing.", rs_name(new_rs)),
                None => format!("Deployment {:?} has timed out progressing.", d.metadata.name.as_deref().unwrap_or("")),
            };
            set_condition(&mut s, condition(PROGRESSING, "False", TIMED_OUT, msg));
        }
    }
    match replica_failure(all, new_rs) {
        Some(c) => set_condition(&mut s, c),
        None => remove_condition(&mut s, REPLICA_FAILURE),
    }
    s
}

/// The first ReplicaFailure condition of the new set, else of any set
/// (`getReplicaFailures`), as a Deployment condition.
fn replica_failure(all: &[ReplicaSet], new_rs: Option<&ReplicaSet>) -> Option<DeploymentCondition> {
    let find = |rs: &ReplicaSet| {
        rs.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == REPLICA_FAILURE).map(|c| {
            DeploymentCondition {
                type_: REPLICA_FAILURE.into(),
                status: c.status.clone(),
                reason: c.reason.clone(),
                message: c.message.clone(),
                last_update_time: c.last_transition_time.clone(),
                last_transition_time: c.last_transition_time.clone(),
            }
        })
    };
    new_rs.and_then(find).or_else(|| all.iter().find_map(find))
}

/// When to look again at a rollout that shows no progress, to notice its
/// deadline (`requeueStuckDeployment`): none without a deadline or a
/// Progressing condition, or when complete or already timed out.
pub fn requeue_after(d: &Deployment, new: &DeploymentStatus, now: jiff::Timestamp) -> Option<Duration> {
    let old = status::canonical(d.status.as_ref());
    let cur = get_condition(&old, PROGRESSING)?;
    if !util::has_progress_deadline(d) || complete(d, new) || cur.reason.as_deref() == Some(TIMED_OUT) {
        return None;
    }
    let secs = d.spec.as_ref().and_then(|s| s.progress_deadline_seconds).unwrap_or(0) as i64;
    let from = cur.last_update_time.as_ref().map(|t| t.0.as_second()).unwrap_or(now.as_second());
    let after = from + secs - now.as_second();
    Some(if after < 1 { Duration::from_secs(1) } else { Duration::from_secs(after as u64 + 1) })
}

/// The Progressing condition pause/resume adds (`checkPausedConditions`):
/// `Unknown`/DeploymentPaused "Deployment is paused" when paused,
/// DeploymentResumed "Deployment is resumed" when resumed; never over a
/// timed-out condition; only with a progress deadline. Whether it changed.
pub fn check_paused(d: &mut Deployment) -> bool {
    if !util::has_progress_deadline(d) {
        return false;
    }
    let paused = d.spec.as_ref().and_then(|s| s.paused).unwrap_or(false);
    let mut s = status::canonical(d.status.as_ref());
    let reason = get_condition(&s, PROGRESSING).and_then(|c| c.reason.clone());
    if reason.as_deref() == Some(TIMED_OUT) {
        return false;
    }
    let paused_cond = reason.as_deref() == Some(PAUSED);
    let c = if paused && !paused_cond {
        condition(PROGRESSING, "Unknown", PAUSED, "Deployment is paused".into())
    } else if !paused && paused_cond {
        condition(PROGRESSING, "Unknown", RESUMED, "Deployment is resumed".into())
    } else {
        return false;
    };
    set_condition(&mut s, c);
    d.status = Some(s);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::DeploymentSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn dep(replicas: i32, deadline: Option<i32>, status: DeploymentStatus) -> Deployment {
        Deployment {
            metadata: Default::default(),
            spec: Some(DeploymentSpec {
                replicas: Some(replicas),
                progress_deadline_seconds: deadline,
                ..Default::default()
            }),
            status: Some(status),
        }
    }

    fn st(updated: i32, replicas: i32, ready: i32, available: i32) -> DeploymentStatus {
        DeploymentStatus {
            updated_replicas: Some(updated),
            replicas: Some(replicas),
            ready_replicas: Some(ready),
            available_replicas: Some(available),
            ..Default::default()
        }
    }

    #[test]
    fn progressing_follows_upstream_table() {
        // Each clause of upstream's DeploymentProgressing.
        let cases = [
            ("1 updated, 2 old", st(1, 3, 0, 0), st(1, 2, 0, 0), true),
            ("more updated", st(1, 1, 0, 0), st(2, 2, 0, 0), true),
            ("more ready", st(1, 1, 0, 0), st(1, 1, 1, 0), true),
            ("more available", st(1, 1, 1, 0), st(1, 1, 1, 1), true),
            ("no change", st(2, 3, 1, 1), st(2, 3, 1, 1), false),
            ("fewer old, more updated", st(1, 3, 0, 0), st(2, 3, 0, 0), true),
        ];
        for (name, old, new, want) in cases {
            assert_eq!(progressing(&dep(3, Some(600), old), &new), want, "{name}");
        }
    }

    #[test]
    fn complete_needs_every_replica_updated_and_available() {
        // Each clause of upstream's DeploymentComplete.
        let mut s = st(5, 5, 5, 5);
        s.observed_generation = Some(1);
        assert!(complete(&dep(5, None, Default::default()), &s));
        assert!(!complete(&dep(5, None, Default::default()), &st(5, 5, 5, 4)));
        assert!(!complete(&dep(5, None, Default::default()), &st(4, 5, 5, 5)));
        assert!(!complete(&dep(5, None, Default::default()), &st(5, 6, 5, 5)));
    }

    #[test]
    fn timed_out_after_the_deadline_since_last_update() {
        let now = jiff::Timestamp::from_second(1000).unwrap();
        let with_cond = |reason: &str, updated: i64| {
            let mut s = DeploymentStatus::default();
            let mut c = condition(PROGRESSING, "True", reason, String::new());
            c.last_update_time = Some(Time(jiff::Timestamp::from_second(updated).unwrap()));
            s.conditions = Some(vec![c]);
            s
        };
        let d = dep(1, Some(30), Default::default());
        assert!(timed_out(&d, &with_cond(RS_UPDATED, 900), now));
        assert!(!timed_out(&d, &with_cond(RS_UPDATED, 980), now));
        assert!(!timed_out(&d, &with_cond(NEW_RS_AVAILABLE, 0), now));
        assert!(timed_out(&d, &with_cond(TIMED_OUT, 999), now));
        assert!(!timed_out(&dep(1, None, Default::default()), &with_cond(RS_UPDATED, 0), now));
    }

    #[test]
    fn stuck_rollout_requeued_at_its_deadline() {
        let now = jiff::Timestamp::from_second(1000).unwrap();
        let mut c = condition(PROGRESSING, "True", RS_UPDATED, String::new());
        c.last_update_time = Some(Time(jiff::Timestamp::from_second(990).unwrap()));
        let mut s = st(0, 1, 0, 0);
        s.conditions = Some(vec![c]);
        let d = dep(1, Some(30), s.clone());
        assert_eq!(requeue_after(&d, &s, now), Some(Duration::from_secs(21)));
        assert_eq!(requeue_after(&dep(1, None, s.clone()), &s, now), None);
    }

    #[test]
    fn pause_and_resume_conditions() {
        let mut d = dep(1, Some(600), Default::default());
        d.spec.as_mut().unwrap().paused = Some(true);
        assert!(check_paused(&mut d));
        let c = get_condition(d.status.as_ref().unwrap(), PROGRESSING).unwrap().clone();
        assert_eq!(
            (c.status.as_str(), c.reason.as_deref(), c.message.as_deref()),
            ("Unknown", Some(PAUSED), Some("Deployment is paused"))
        );
        assert!(!check_paused(&mut d));
        d.spec.as_mut().unwrap().paused = Some(false);
        assert!(check_paused(&mut d));
        let c = get_condition(d.status.as_ref().unwrap(), PROGRESSING).unwrap();
        assert_eq!((c.reason.as_deref(), c.message.as_deref()), (Some(RESUMED), Some("Deployment is resumed")));
    }

    fn set(name: &str, spec: i32, actual: i32, available: i32) -> ReplicaSet {
        use k8s_openapi::api::apps::v1::{ReplicaSetSpec, ReplicaSetStatus};
        let mut r = ReplicaSet::default();
        r.metadata.name = Some(name.into());
        r.spec = Some(ReplicaSetSpec { replicas: Some(spec), ..Default::default() });
        r.status = Some(ReplicaSetStatus {
            replicas: actual,
            ready_replicas: Some(available),
            available_replicas: Some(available),
            ..Default::default()
        });
        r
    }

    #[test]
    fn rollout_status_sets_progressing_reasons() {
        let now = jiff::Timestamp::from_second(1000).unwrap();
        let mut created = condition(PROGRESSING, "True", NEW_RS_CREATED, "Created new replica set \"web-1\"".into());
        created.last_transition_time = Some(Time(jiff::Timestamp::from_second(10).unwrap()));
        let d = dep(2, Some(600), DeploymentStatus { conditions: Some(vec![created]), ..Default::default() });
        // Progress: ReplicaSetUpdated, transition time kept (status stays True).
        let new = set("web-1", 2, 1, 0);
        let s = rollout_status(std::slice::from_ref(&new), Some(&new), &d, now);
        let c = get_condition(&s, PROGRESSING).unwrap();
        assert_eq!(c.reason.as_deref(), Some(RS_UPDATED));
        assert_eq!(c.message.as_deref(), Some("ReplicaSet \"web-1\" is progressing."));
        assert_eq!(c.last_transition_time, Some(Time(jiff::Timestamp::from_second(10).unwrap())));
        // Complete: NewReplicaSetAvailable.
        let new = set("web-1", 2, 2, 2);
        let s = rollout_status(std::slice::from_ref(&new), Some(&new), &d, now);
        let c = get_condition(&s, PROGRESSING).unwrap();
        assert_eq!(c.reason.as_deref(), Some(NEW_RS_AVAILABLE));
        assert_eq!(c.message.as_deref(), Some("ReplicaSet \"web-1\" has successfully progressed."));
        // Without a deadline there is no Progressing condition.
        let d = dep(2, None, d.status.clone().unwrap());
        assert!(get_condition(&rollout_status(std::slice::from_ref(&new), Some(&new), &d, now), PROGRESSING).is_none());
    }
}
