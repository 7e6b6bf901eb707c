//! Normalizing a metric recommendation into the replica count the HPA
//! sets (upstream `horizontal.go`: `normalizeDesiredReplicas`,
//! `normalizeDesiredReplicasWithBehaviors` and their helpers): the
//! stabilization window over recent recommendations, the scaling policies
//! (`Pods`/`Percent` per `periodSeconds`, `selectPolicy` Max/Min/Disabled)
//! over recent scale events, and the min/max replica limits, each with
//! the condition reason and message upstream reports.
//!
//! Without `spec.behavior` (what `kubectl autoscale` and autoscaling/v1
//! create) upstream keeps its older rules: scale-down stabilization over
//! `--horizontal-pod-autoscaler-downscale-stabilization` (5 min) and a
//! scale-up limit of max(2 × current, 4).

use std::time::{Duration, Instant};

use k8s_openapi::api::autoscaling::v2::{HPAScalingPolicy, HPAScalingRules, HorizontalPodAutoscalerBehavior};

/// One recommendation the metrics produced.
#[derive(Clone, Debug)]
struct Recommendation {
    replicas: i32,
    at: Instant,
}

/// One rescale the controller made.
#[derive(Clone, Debug)]
struct ScaleEvent {
    change: i32,
    at: Instant,
    outdated: bool,
}

/// What the controller remembers about one HPA between syncs (upstream's
/// `recommendations`, `scaleUpEvents` and `scaleDownEvents` maps).
#[derive(Clone, Debug, Default)]
pub struct History {
    recommendations: Vec<Recommendation>,
    scale_up: Vec<ScaleEvent>,
    scale_down: Vec<ScaleEvent>,
}

/// A condition verdict: reason and message.
pub type Verdict = (&'static str, &'static str);

/// The outcome of normalization: the replica count to set, the
/// `AbleToScale` (True) reason and message, and whether `ScalingLimited`
/// is True with its reason and message.
#[derive(Clone, Debug, PartialEq)]
pub struct Normalized {
    /// The replica count the target should have.
    pub replicas: i32,
    /// `AbleToScale` reason/message (`ReadyForNewScale`, `ScaleUpStabilized`, `ScaleDownStabilized`).
    pub able: Verdict,
    /// Whether the limits changed the stabilized recommendation.
    pub limited: bool,
    /// `ScalingLimited` reason/message.
    pub limit: Verdict,
}

const READY: Verdict = ("ReadyForNewScale", "recommended size matches current size");
const UP_STABILIZED: Verdict = (
    "ScaleUpStabilized",
    "recent recommendations were lower than current one, applying the lowest recent recommendation",
);
const DOWN_STABILIZED: Verdict = (
    "ScaleDownStabilized",
    "recent recommendations were higher than current one, applying the highest recent recommendation",
);
const WITHIN_RANGE: Verdict = ("DesiredWithinRange", "the desired count is within the acceptable range");
const TOO_MANY: Verdict = ("TooManyReplicas", "the desired replica count is more than the maximum replica count");
const TOO_FEW: Verdict = ("TooFewReplicas", "the desired replica count is less than the minimum replica count");
const UP_LIMIT: Verdict =
    ("ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate");
const DOWN_LIMIT: Verdict =
    ("ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate");

fn policy(type_: &str, value: i32, period: i32) -> HPAScalingPolicy {
    HPAScalingPolicy { type_: type_.into(), value, period_seconds: period }
}

/// `spec.behavior` with every unset field defaulted as upstream's
/// `GenerateHPAScaleUpRules`/`GenerateHPAScaleDownRules` do: scale-up
/// window 0 s, policies 4 Pods and 100 Percent per 15 s, Max; scale-down
/// window `downscale_window` (the controller's flag, as upstream's
/// `maybeInitScaleDownStabilizationWindow`), 100 Percent per 15 s, Max.
pub fn with_defaults(
    b: &HorizontalPodAutoscalerBehavior,
    downscale_window: Duration,
) -> HorizontalPodAutoscalerBehavior {
    let up = b.scale_up.clone().unwrap_or_default();
    let down = b.scale_down.clone().unwrap_or_default();
    HorizontalPodAutoscalerBehavior {
        scale_up: Some(HPAScalingRules {
            stabilization_window_seconds: Some(up.stabilization_window_seconds.unwrap_or(0)),
            select_policy: Some(up.select_policy.unwrap_or_else(|| "Max".into())),
            policies: Some(up.policies.unwrap_or_else(|| vec![policy("Pods", 4, 15), policy("Percent", 100, 15)])),
            ..Default::default()
        }),
        scale_down: Some(HPAScalingRules {
            stabilization_window_seconds: Some(
                down.stabilization_window_seconds.unwrap_or(downscale_window.as_secs().min(i32::MAX as u64) as i32),
            ),
            select_policy: Some(down.select_policy.unwrap_or_else(|| "Max".into())),
            policies: Some(down.policies.unwrap_or_else(|| vec![policy("Percent", 100, 15)])),
            ..Default::default()
        }),
    }
}

fn secs(s: i32) -> Duration {
    Duration::from_secs(s.max(0) as u64)
}

/// `now - d`, or `None` when that is before the monotonic clock's origin
/// (then every recorded instant is after it).
fn cutoff(now: Instant, d: Duration) -> Option<Instant> {
    now.checked_sub(d)
}

fn after(at: Instant, cut: Option<Instant>) -> bool {
    cut.is_none_or(|c| at > c)
}

fn before(at: Instant, cut: Option<Instant>) -> bool {
    cut.is_some_and(|c| at < c)
}

impl History {
    /// Upstream's `recordInitialRecommendation`: the first sync remembers
    /// the current count as a recommendation.
    pub fn record_initial(&mut self, current: i32, now: Instant) {
        if self.recommendations.is_empty() {
            self.recommendations.push(Recommendation { replicas: current, at: now });
        }
    }

    fn record(&mut self, replicas: i32, now: Instant, old: Option<usize>) {
        let rec = Recommendation { replicas, at: now };
        match old {
            Some(i) => self.recommendations[i] = rec,
            None => self.recommendations.push(rec),
        }
    }

    /// Without `spec.behavior` (upstream's `normalizeDesiredReplicas`).
    pub fn normalize(
        &mut self,
        now: Instant,
        downscale_window: Duration,
        current: i32,
        desired: i32,
        min: i32,
        max: i32,
    ) -> Normalized {
        // stabilizeRecommendation: the highest recommendation within the window.
        let cut = cutoff(now, downscale_window);
        let mut stabilized = desired;
        let mut old = None;
        for (i, r) in self.recommendations.iter().enumerate() {
            if before(r.at, cut) {
                old = Some(i);
            } else if r.replicas > stabilized {
                stabilized = r.replicas;
            }
        }
        self.record(desired, now, old);
        let able = if stabilized != desired { DOWN_STABILIZED } else { READY };
        // convertDesiredReplicasWithRules.
        let scale_up_limit = (2.0 * current as f64).max(4.0) as i32;
        let (maximum, over) = if max > scale_up_limit { (scale_up_limit, UP_LIMIT) } else { (max, TOO_MANY) };
        let (replicas, limit) = if stabilized < min {
            (min, TOO_FEW)
        } else if stabilized > maximum {
            (maximum, over)
        } else {
            (stabilized, WITHIN_RANGE)
        };
        Normalized { replicas, able, limited: replicas != stabilized, limit }
    }

    /// With `spec.behavior` (upstream's
    /// `normalizeDesiredReplicasWithBehaviors`); `behavior` must have its
    /// defaults filled in ([`with_defaults`]).
    pub fn normalize_with_behavior(
        &mut self,
        now: Instant,
        behavior: &HorizontalPodAutoscalerBehavior,
        current: i32,
        desired: i32,
        min: i32,
        max: i32,
    ) -> Normalized {
        let up = behavior.scale_up.clone().unwrap_or_default();
        let down = behavior.scale_down.clone().unwrap_or_default();
        // stabilizeRecommendationWithBehaviors.
        let up_cut = cutoff(now, secs(up.stabilization_window_seconds.unwrap_or(0)));
        let down_cut = cutoff(now, secs(down.stabilization_window_seconds.unwrap_or(0)));
        let (mut up_rec, mut down_rec) = (desired, desired);
        let mut old = None;
        for (i, r) in self.recommendations.iter().enumerate() {
            if after(r.at, up_cut) {
                up_rec = up_rec.min(r.replicas);
            }
            if after(r.at, down_cut) {
                down_rec = down_rec.max(r.replicas);
            }
            if before(r.at, up_cut) && before(r.at, down_cut) {
                old = Some(i);
            }
        }
        let stabilized = current.max(up_rec).min(down_rec);
        self.record(desired, now, old);
        let able = if stabilized == desired {
            READY
        } else if desired >= current {
            UP_STABILIZED
        } else {
            DOWN_STABILIZED
        };
        // convertDesiredReplicasWithBehaviorRate.
        let (replicas, limit) = if stabilized > current {
            let limit = self.scale_up_limit(now, current, &up).max(current);
            let (maximum, verdict) = if max > limit { (limit, UP_LIMIT) } else { (max, TOO_MANY) };
            if stabilized > maximum {
                (maximum, verdict)
            } else {
                (stabilized, WITHIN_RANGE)
            }
        } else if stabilized < current {
            let limit = self.scale_down_limit(now, current, &down).min(current);
            let (minimum, verdict) = if min < limit { (limit, DOWN_LIMIT) } else { (min, TOO_FEW) };
            if stabilized < minimum {
                (minimum, verdict)
            } else {
                (stabilized, WITHIN_RANGE)
            }
        } else {
            (stabilized, WITHIN_RANGE)
        };
        Normalized { replicas, able, limited: replicas != stabilized, limit }
    }

    /// Replicas added (or removed) within the last `period` seconds.
    fn change_in_period(events: &[ScaleEvent], now: Instant, period: i32) -> i32 {
        let cut = cutoff(now, secs(period));
        events.iter().filter(|e| after(e.at, cut)).map(|e| e.change).sum()
    }

    /// Upstream's `calculateScaleUpLimitWithScalingRules`.
    fn scale_up_limit(&self, now: Instant, current: i32, rules: &HPAScalingRules) -> i32 {
        let select = rules.select_policy.as_deref().unwrap_or("Max");
        if select == "Disabled" {
            return current;
        }
        let min_policy = select == "Min";
        let mut result = if min_policy { i32::MAX } else { i32::MIN };
        for p in rules.policies.iter().flatten() {
            let added = Self::change_in_period(&self.scale_up, now, p.period_seconds);
            let removed = Self::change_in_period(&self.scale_down, now, p.period_seconds);
            let start = current - added + removed;
            let proposed = match p.type_.as_str() {
                "Pods" => start + p.value,
                _ => (start as f64 * (1.0 + p.value as f64 / 100.0)).ceil() as i32,
            };
            result = if min_policy { result.min(proposed) } else { result.max(proposed) };
        }
        result
    }

    /// Upstream's `calculateScaleDownLimitWithBehaviors`.
    fn scale_down_limit(&self, now: Instant, current: i32, rules: &HPAScalingRules) -> i32 {
        let select = rules.select_policy.as_deref().unwrap_or("Max");
        if select == "Disabled" {
            return current;
        }
        let min_policy = select == "Min";
        let mut result = if min_policy { i32::MIN } else { i32::MAX };
        for p in rules.policies.iter().flatten() {
            let added = Self::change_in_period(&self.scale_up, now, p.period_seconds);
            let removed = Self::change_in_period(&self.scale_down, now, p.period_seconds);
            let start = current - added + removed;
            let proposed = match p.type_.as_str() {
                "Pods" => start - p.value,
                _ => (start as f64 * (1.0 - p.value as f64 / 100.0)) as i32,
            };
            result = if min_policy { result.max(proposed) } else { result.min(proposed) };
        }
        result
    }

    /// Upstream's `storeScaleEvent`: remembers a rescale for the policies'
    /// periods (only with `spec.behavior`), reusing an outdated slot.
    pub fn store_scale_event(
        &mut self,
        behavior: Option<&HorizontalPodAutoscalerBehavior>,
        now: Instant,
        previous: i32,
        new: i32,
    ) {
        let Some(b) = behavior else { return };
        let (events, rules, change) = if new > previous {
            (&mut self.scale_up, b.scale_up.clone().unwrap_or_default(), new - previous)
        } else {
            (&mut self.scale_down, b.scale_down.clone().unwrap_or_default(), previous - new)
        };
        let longest = rules.policies.iter().flatten().map(|p| p.period_seconds).max().unwrap_or(0);
        let cut = cutoff(now, secs(longest));
        for e in events.iter_mut() {
            if before(e.at, cut) {
                e.outdated = true;
            }
        }
        let event = ScaleEvent { change, at: now, outdated: false };
        match events.iter().rposition(|e| e.outdated) {
            Some(i) => events[i] = event,
            None => events.push(event),
        }
    }
}
