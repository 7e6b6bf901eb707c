//! When a Job's pods count as failed and what a failure does
//! (upstream `pod_failure_policy.go`, `backoff_utils.go` and the failure
//! checks of `job_controller.go`): the pod failure policy's rules, the
//! exponential delay before failed pods are replaced (10 s doubling, capped
//! at upstream's `MaxJobPodFailureBackOff` of 10 min) and the conditions'
//! reasons and messages.

use std::time::Duration;

use k8s_openapi::api::batch::v1::{Job, PodFailurePolicy};
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

/// Upstream `DefaultJobPodFailureBackOff`.
pub const POD_FAILURE_BACKOFF: Duration = Duration::from_secs(10);
/// Upstream `MaxJobPodFailureBackOff`.
pub const MAX_POD_FAILURE_BACKOFF: Duration = Duration::from_secs(600);

/// `BackoffLimitExceeded`'s reason.
pub const REASON_BACKOFF_LIMIT: &str = "BackoffLimitExceeded";
/// Its message.
pub const MSG_BACKOFF_LIMIT: &str = "Job has reached the specified backoff limit";
/// `DeadlineExceeded`'s reason (activeDeadlineSeconds).
pub const REASON_DEADLINE: &str = "DeadlineExceeded";
/// Its message.
pub const MSG_DEADLINE: &str = "Job was active longer than specified deadline";
/// `MaxFailedIndexesExceeded`'s reason (backoffLimitPerIndex).
pub const REASON_MAX_FAILED_INDEXES: &str = "MaxFailedIndexesExceeded";
/// Its message.
pub const MSG_MAX_FAILED_INDEXES: &str = "Job has exceeded the specified maximal number of failed indexes";
/// `FailedIndexes`' reason: every index finished and at least one failed.
pub const REASON_FAILED_INDEXES: &str = "FailedIndexes";
/// Its message.
pub const MSG_FAILED_INDEXES: &str = "Job has failed indexes";
/// The pod failure policy action that fails the pod's index at once.
pub const ACTION_FAIL_INDEX: &str = "FailIndex";
/// The reason when a FailJob rule of the pod failure policy matched.
pub const REASON_POD_FAILURE_POLICY: &str = "PodFailurePolicy";

/// What a pod failure policy rule says about a failed pod.
#[derive(Debug, PartialEq, Eq)]
pub struct PolicyMatch {
    /// With a FailJob rule: the Job's failure message.
    pub fail_job_message: Option<String>,
    /// Whether the failure counts against backoffLimit (false for Ignore).
    pub count_failed: bool,
    /// The matching rule's action, if any rule matched.
    pub action: Option<String>,
}

/// Upstream `matchPodFailurePolicy`: the first rule (in order) whose
/// `onExitCodes` match a terminated container (non-zero exit code; regular
/// containers before init containers) or whose `onPodConditions` match a
/// pod condition decides. No policy or no match: the failure counts.
pub fn match_policy(policy: Option<&PodFailurePolicy>, pod: &Pod) -> PolicyMatch {
    let none = PolicyMatch { fail_job_message: None, count_failed: true, action: None };
    let Some(policy) = policy else { return none };
    let ns = pod.metadata.namespace.as_deref().unwrap_or("");
    let name = pod.metadata.name.as_deref().unwrap_or("");
    let status = pod.status.clone().unwrap_or_default();
    for (index, rule) in policy.rules.iter().enumerate() {
        let what = if let Some(req) = &rule.on_exit_codes {
            let matching = |list: &Option<Vec<ContainerStatus>>| -> Option<(String, i32)> {
                list.iter().flatten().find_map(|cs| {
                    let code = cs.state.as_ref()?.terminated.as_ref()?.exit_code;
                    if code == 0 || req.container_name.as_ref().is_some_and(|n| *n != cs.name) {
                        return None;
                    }
                    let listed = req.values.contains(&code);
                    let hit = match req.operator.as_str() {
                        "In" => listed,
                        "NotIn" => !listed,
                        _ => false,
                    };
                    hit.then(|| (cs.name.clone(), code))
                })
            };
            matching(&status.container_statuses).or_else(|| matching(&status.init_container_statuses)).map(
                |(c, code)| {
                    format!(
                        "Container {c} for pod {ns}/{name} failed with exit code {code} matching {} rule at index {index}",
                        rule.action
                    )
                },
            )
        } else if let Some(patterns) = &rule.on_pod_conditions {
            patterns.iter().find_map(|p| {
                status.conditions.iter().flatten().find(|c| c.type_ == p.type_ && c.status == p.status).map(|c| {
                    format!("Pod {ns}/{name} has condition {} matching {} rule at index {index}", c.type_, rule.action)
                })
            })
        } else {
            None
        };
        let Some(message) = what else { continue };
        return match rule.action.as_str() {
            "Ignore" => PolicyMatch { fail_job_message: None, count_failed: false, action: Some(rule.action.clone()) },
            "FailJob" => {
                PolicyMatch { fail_job_message: Some(message), count_failed: true, action: Some(rule.action.clone()) }
            }
            _ => PolicyMatch { fail_job_message: None, count_failed: true, action: Some(rule.action.clone()) },
        };
    }
    none
}

/// Upstream `onlyReplaceFailedPods`: replacement pods wait until the old
/// ones are Failed (podReplacementPolicy `Failed`, or any pod failure policy).
pub fn only_replace_failed_pods(job: &Job) -> bool {
    let spec = job.spec.as_ref();
    spec.and_then(|s| s.pod_replacement_policy.as_deref()) == Some("Failed")
        || spec.is_some_and(|s| s.pod_failure_policy.is_some())
}

/// Upstream `isPodFailed`: phase Failed, or — unless only failed pods are
/// replaced — deleted before it succeeded (orphans never reach Failed).
pub fn is_pod_failed(pod: &Pod, job: &Job) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if phase == Some("Failed") {
        return true;
    }
    if only_replace_failed_pods(job) {
        return false;
    }
    pod.metadata.deletion_timestamp.is_some() && phase != Some("Succeeded")
}

/// When a pod finished (upstream `getFinishedTime`): the latest
/// `finishedAt` once every container terminated; else when its Ready
/// condition turned False; else its deletion time minus the grace period;
/// else its creation time (the Unix epoch when even that is missing).
pub fn finish_time(pod: &Pod) -> jiff::Timestamp {
    let status = pod.status.as_ref();
    let containers: Vec<_> = status.into_iter().flat_map(|s| s.container_statuses.iter().flatten()).collect();
    let from_containers = containers
        .iter()
        .map(|cs| cs.state.as_ref()?.terminated.as_ref()?.finished_at.as_ref().map(|t| t.0))
        .collect::<Option<Vec<_>>>()
        .and_then(|v| v.into_iter().max());
    if let Some(t) = from_containers {
        return t;
    }
    let ready_false = status
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready" && c.status == "False"))
        .and_then(|c| c.last_transition_time.as_ref().map(|t| t.0));
    if let Some(t) = ready_false {
        return t;
    }
    if let Some(t) = pod.metadata.deletion_timestamp.as_ref() {
        let grace = pod.metadata.deletion_grace_period_seconds.unwrap_or(0);
        return t.0.checked_sub(jiff::SignedDuration::from_secs(grace)).unwrap_or(t.0);
    }
    pod.metadata.creation_timestamp.as_ref().map_or(jiff::Timestamp::UNIX_EPOCH, |t| t.0)
}

/// One Job's pod-failure back-off state (upstream `backoffRecord`): failures
/// since the last success and when the last one happened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BackoffRecord {
    /// Pod failures after the last success.
    pub failures_after_last_success: u32,
    /// When the last of them finished.
    pub last_failure_time: Option<jiff::Timestamp>,
}

impl BackoffRecord {
    /// The record after `succeeded` more pods succeeded and pods failed at
    /// `failed` (their finish times): a success resets the count to the
    /// failures that finished after it (upstream `newBackoffRecord`).
    pub fn next(&self, succeeded: &[jiff::Timestamp], failed: &[jiff::Timestamp]) -> BackoffRecord {
        let last_failure = failed.iter().max().copied();
        if succeeded.is_empty() {
            if failed.is_empty() {
                return self.clone();
            }
            return BackoffRecord {
                failures_after_last_success: self.failures_after_last_success + failed.len() as u32,
                last_failure_time: last_failure,
            };
        }
        let last_success = succeeded.iter().max().copied();
        let after: Vec<_> = failed.iter().filter(|t| Some(**t) > last_success).collect();
        BackoffRecord {
            failures_after_last_success: after.len() as u32,
            last_failure_time: if after.is_empty() { None } else { last_failure },
        }
    }

    /// How long pod creation must still wait at `now` (upstream
    /// `getRemainingTime`): `initial · 2^(failures−1)` capped at `max`,
    /// minus the time since the last failure; zero without failures.
    pub fn remaining(&self, now: jiff::Timestamp, initial: Duration, max: Duration) -> Duration {
        let (n, Some(last)) = (self.failures_after_last_success, self.last_failure_time) else {
            return Duration::ZERO;
        };
        if n == 0 {
            return Duration::ZERO;
        }
        let mut backoff = initial;
        for _ in 1..n {
            backoff = backoff.saturating_mul(2);
            if backoff >= max {
                backoff = max;
                break;
            }
        }
        let elapsed = Duration::try_from(now.duration_since(last)).unwrap_or(Duration::ZERO);
        backoff.saturating_sub(elapsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ts(s: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(1_700_000_000 + s).unwrap()
    }

    #[test]
    fn backoff_remaining_time_as_upstream() {
        // Upstream TestGetRemainingBackoffTime: no failures → 0; one failure
        // just now → 10 s; two → 20 s; elapsed time is subtracted; capped.
        let rec = |n, t| BackoffRecord { failures_after_last_success: n, last_failure_time: Some(t) };
        let (d, m) = (POD_FAILURE_BACKOFF, MAX_POD_FAILURE_BACKOFF);
        assert_eq!(BackoffRecord::default().remaining(ts(0), d, m), Duration::ZERO);
        assert_eq!(rec(1, ts(0)).remaining(ts(0), d, m), Duration::from_secs(10));
        assert_eq!(rec(2, ts(0)).remaining(ts(0), d, m), Duration::from_secs(20));
        assert_eq!(rec(3, ts(0)).remaining(ts(5), d, m), Duration::from_secs(35));
        assert_eq!(rec(1, ts(0)).remaining(ts(11), d, m), Duration::ZERO);
        assert_eq!(rec(50, ts(0)).remaining(ts(0), d, m), Duration::from_secs(600));
        assert_eq!(rec(7, ts(0)).remaining(ts(0), d, m), Duration::from_secs(600));
        assert_eq!(rec(6, ts(0)).remaining(ts(0), d, m), Duration::from_secs(320));
    }

    #[test]
    fn backoff_record_resets_on_success() {
        let r = BackoffRecord::default().next(&[], &[ts(1), ts(3)]);
        assert_eq!(r, BackoffRecord { failures_after_last_success: 2, last_failure_time: Some(ts(3)) });
        let r2 = r.next(&[ts(4)], &[ts(2), ts(6)]);
        assert_eq!(r2, BackoffRecord { failures_after_last_success: 1, last_failure_time: Some(ts(6)) });
        assert_eq!(r2.next(&[ts(9)], &[]), BackoffRecord::default());
    }

    fn pod(status: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "ns"}, "status": status})).unwrap()
    }

    fn policy(rules: serde_json::Value) -> PodFailurePolicy {
        serde_json::from_value(json!({ "rules": rules })).unwrap()
    }

    #[test]
    fn pod_failure_policy_rules_as_upstream() {
        // Messages and outcomes of upstream TestMatchPodFailurePolicy.
        let p = policy(json!([
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
            {"action": "FailJob", "onExitCodes": {"containerName": "main-container", "operator": "In", "values": [1, 2, 3]}},
            {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [5]}}
        ]));
        let exit = |code: i32| {
            pod(json!({"phase": "Failed", "containerStatuses": [{"name": "main-container", "image": "x", "imageID": "",
                "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": code}}}]}))
        };
        let m = match_policy(Some(&p), &exit(2));
        assert_eq!(
            m.fail_job_message.as_deref(),
            Some("Container main-container for pod ns/p failed with exit code 2 matching FailJob rule at index 1")
        );
        assert!(m.count_failed);
        assert_eq!(match_policy(Some(&p), &exit(4)).action.as_deref(), Some("Count"));
        assert_eq!(
            match_policy(Some(&p), &exit(5)),
            PolicyMatch { fail_job_message: None, count_failed: true, action: None }
        );
        // Exit code 0 never matches.
        assert_eq!(match_policy(Some(&p), &exit(0)).action, None);
        let disrupted = pod(json!({"phase": "Failed", "conditions": [{"type": "DisruptionTarget", "status": "True"}]}));
        let m = match_policy(Some(&p), &disrupted);
        assert_eq!((m.count_failed, m.action.as_deref()), (false, Some("Ignore")));
        let fail =
            policy(json!([{"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]));
        assert_eq!(
            match_policy(Some(&fail), &disrupted).fail_job_message.as_deref(),
            Some("Pod ns/p has condition DisruptionTarget matching FailJob rule at index 0")
        );
        assert!(match_policy(None, &exit(1)).count_failed);
    }

    #[test]
    fn deleted_pods_count_as_failed_unless_only_failed_are_replaced() {
        let mut p = pod(json!({"phase": "Running"}));
        p.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(ts(0)));
        let job: Job = serde_json::from_value(json!({"spec": {"template": {}}})).unwrap();
        assert!(is_pod_failed(&p, &job));
        let failed_only: Job =
            serde_json::from_value(json!({"spec": {"template": {}, "podReplacementPolicy": "Failed"}})).unwrap();
        assert!(!is_pod_failed(&p, &failed_only));
        assert!(is_pod_failed(&pod(json!({"phase": "Failed"})), &failed_only));
    }
}
