//! The pure part of the disruption controller: how many pods a budget
//! expects and needs healthy, and its status (upstream
//! `pkg/controller/disruption/disruption.go`, `getExpectedPodCount`,
//! `countHealthyPods`, `buildDisruptedPodMap`, `updatePdbStatus`).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// How long an eviction's entry in `status.disruptedPods` waits for the
/// pod to go before it is dropped (upstream `DeletionTimeout`, 2 min).
pub const DELETION_TIMEOUT_SECS: i64 = 120;

/// `value` against `total` (upstream `GetScaledValueFromIntOrPercent`):
/// an int as is; a percent `p%` as `p × total / 100`, rounded up or down.
/// `Err` names an unparsable value.
pub fn scaled(value: &IntOrString, total: i32, round_up: bool) -> Result<i32, String> {
    match value {
        IntOrString::Int(i) => Ok(*i),
        IntOrString::String(s) => {
            let p: i64 = s
                .strip_suffix('%')
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| format!("invalid value for IntOrString: invalid value {s:?}"))?;
            let prod = p * total as i64;
            Ok(if round_up { (prod + 99).div_euclid(100) } else { prod.div_euclid(100) } as i32)
        }
    }
}

/// What a budget needs: `(expected pods, desired healthy)`.
/// `pods` is the number of selected pods; `scale` the sum of their
/// controllers' replicas (needed only for percentages and
/// `maxUnavailable`; `None` when it could not be found).
pub fn expectations(
    min_available: Option<&IntOrString>,
    max_unavailable: Option<&IntOrString>,
    pods: i32,
    scale: Option<i32>,
) -> Result<(i32, i32), String> {
    if let Some(max) = max_unavailable {
        let expected = scale.ok_or("found no controllers for pods")?;
        let max = scaled(max, expected, true)?;
        return Ok((expected, (expected - max).max(0)));
    }
    match min_available {
        Some(IntOrString::Int(n)) => Ok((pods, *n)),
        Some(pct @ IntOrString::String(_)) => {
            let expected = scale.ok_or("found no controllers for pods")?;
            Ok((expected, scaled(pct, expected, true)?))
        }
        None => Ok((pods, 0)),
    }
}

/// `disruptedPods` kept: entries of pods still present and not deleted
/// whose eviction is younger than [`DELETION_TIMEOUT_SECS`] at `now`;
/// also the earliest time (Unix seconds) a kept entry expires.
pub fn prune_disrupted(
    disrupted: &BTreeMap<String, i64>,
    live: &dyn Fn(&str) -> bool,
    now: i64,
) -> (BTreeMap<String, i64>, Option<i64>) {
    let kept: BTreeMap<String, i64> = disrupted
        .iter()
        .filter(|(name, at)| live(name) && **at + DELETION_TIMEOUT_SECS > now)
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    let next = kept.values().map(|at| at + DELETION_TIMEOUT_SECS).min();
    (kept, next)
}

/// Upstream `updatePdbStatus`: no disruption when nothing is expected or
/// too few are healthy.
pub fn disruptions_allowed(current_healthy: i32, desired_healthy: i32, expected: i32) -> i32 {
    let allowed = current_healthy - desired_healthy;
    if expected <= 0 || allowed <= 0 {
        0
    } else {
        allowed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> IntOrString {
        IntOrString::String(v.into())
    }

    #[test]
    fn expectations_follow_upstream_disruption_tests() {
        // TestNoSelector / TestUnavailable: minAvailable int counts the pods.
        assert_eq!(expectations(Some(&IntOrString::Int(3)), None, 4, None), Ok((4, 3)));
        // TestReplicaSet: minAvailable 20% of 10 replicas → 2.
        assert_eq!(expectations(Some(&s("20%")), None, 3, Some(10)), Ok((10, 2)));
        // maxUnavailable 30% of 10 rounds up to 3 → 7 desired.
        assert_eq!(expectations(None, Some(&s("30%")), 10, Some(10)), Ok((10, 7)));
        assert_eq!(expectations(None, Some(&IntOrString::Int(5)), 3, Some(3)), Ok((3, 0)));
        assert!(expectations(None, Some(&IntOrString::Int(1)), 3, None).is_err());
        assert_eq!(scaled(&s("50%"), 3, true), Ok(2));
        assert_eq!(scaled(&s("50%"), 3, false), Ok(1));
        assert!(scaled(&s("x"), 3, true).is_err());
    }

    #[test]
    fn disrupted_pods_expire_after_two_minutes_or_when_gone() {
        let d: BTreeMap<String, i64> =
            [("a".to_string(), 1000), ("b".to_string(), 1000), ("c".to_string(), 900)].into();
        let live = |n: &str| n != "b";
        let (kept, next) = prune_disrupted(&d, &live, 1050);
        assert_eq!(kept.keys().collect::<Vec<_>>(), vec!["a"]);
        assert_eq!(next, Some(1120));
    }

    #[test]
    fn allowed_disruptions_never_negative() {
        assert_eq!(disruptions_allowed(3, 2, 3), 1);
        assert_eq!(disruptions_allowed(2, 2, 3), 0);
        assert_eq!(disruptions_allowed(1, 2, 3), 0);
        assert_eq!(disruptions_allowed(3, 0, 0), 0);
    }
}
