//! The calculator, normalization and metrics parsing, with the examples of
//! the HPA algorithm's documentation (desired = ceil(current × usage /
//! target), tolerance 0.1) and of upstream's replica calculator tests.

use std::time::{Duration, Instant};

use jiff::Timestamp;
use k8s_openapi::api::autoscaling::v2::{HPAScalingPolicy, HPAScalingRules, HorizontalPodAutoscalerBehavior};
use k8s_openapi::api::core::v1::Pod;
use rkube_apimachinery::duration::parse_go_duration;
use serde_json::json;

use super::behavior::{with_defaults, History};
use super::metrics::{pod_metrics_info, PodMetricsList};
use super::milli_quantity;
use super::replicas::{group_pods, pod_requests, Calculator, PodMetric, PodMetricsInfo};

fn at(now: Timestamp, secs_ago: i64) -> String {
    (now - jiff::SignedDuration::from_secs(secs_ago)).to_string()
}

/// A Running pod requesting `cpu_m` millicores, started `started_ago`
/// seconds before `now`, Ready = `ready` since `transition_ago` seconds.
fn pod(name: &str, cpu_m: i64, now: Timestamp, started_ago: i64, ready: bool, transition_ago: i64) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "app", "image": "busybox",
            "resources": {"requests": {"cpu": format!("{cpu_m}m"), "memory": "64Mi"}}}]},
        "status": {"phase": "Running", "startTime": at(now, started_ago),
            "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"},
                "lastTransitionTime": at(now, transition_ago)}]}
    }))
    .unwrap()
}

/// Long-running Ready pods (outside every readiness rule).
fn steady(requests: &[i64], now: Timestamp) -> Vec<Pod> {
    requests.iter().enumerate().map(|(i, r)| pod(&format!("p{i}"), *r, now, 3600, true, 3500)).collect()
}

fn samples(values: &[(usize, i64)], now: Timestamp) -> PodMetricsInfo {
    values
        .iter()
        .map(|(i, v)| (format!("p{i}"), PodMetric { value: *v, timestamp: now, window: Duration::from_secs(30) }))
        .collect()
}

fn all(values: &[i64], now: Timestamp) -> PodMetricsInfo {
    samples(&values.iter().copied().enumerate().collect::<Vec<_>>(), now)
}

#[test]
fn scale_up_is_ceil_of_current_times_usage_over_target() {
    // Upstream's TestReplicaCalcScaleUp: 3 pods requesting 1 CPU using
    // 300m/500m/700m at a 30 % target: 50 % utilization → ceil(3 × 50/30) = 5.
    let now = Timestamp::now();
    let calc = Calculator::default();
    let r = calc.resource_replicas(3, 30, "cpu", None, &steady(&[1000; 3], now), all(&[300, 500, 700], now), now);
    assert_eq!(r, Ok((5, 50, 500)));
}

#[test]
fn scale_down_is_ceil_of_current_times_usage_over_target() {
    // Upstream's TestReplicaCalcScaleDown: 5 pods, 1400m of 5 CPUs = 28 % at a
    // 50 % target → ceil(5 × 0.56) = 3.
    let now = Timestamp::now();
    let calc = Calculator::default();
    let r =
        calc.resource_replicas(5, 50, "cpu", None, &steady(&[1000; 5], now), all(&[100, 300, 500, 250, 250], now), now);
    assert_eq!(r, Ok((3, 28, 280)));
}

#[test]
fn usage_within_tolerance_keeps_the_current_count() {
    // The documentation's example: within 10 % of the target nothing scales.
    let now = Timestamp::now();
    let calc = Calculator::default();
    let pods = steady(&[1000; 4], now);
    // 108 % of the target: within 0.1.
    assert_eq!(calc.resource_replicas(4, 50, "cpu", None, &pods, all(&[540; 4], now), now).unwrap().0, 4);
    // 120 %: ceil(4 × 1.2) = 5.
    assert_eq!(calc.resource_replicas(4, 50, "cpu", None, &pods, all(&[600; 4], now), now).unwrap().0, 5);
    // A wider tolerance keeps it.
    let wide = Calculator { tolerance: 0.25, ..Calculator::default() };
    assert_eq!(wide.resource_replicas(4, 50, "cpu", None, &pods, all(&[600; 4], now), now).unwrap().0, 4);
}

#[test]
fn unready_pods_count_as_idle_on_a_scale_up() {
    // Upstream's TestReplicaCalcScaleUpUnreadyLessScale: the unready pod is
    // left out of the utilization (60 %), then counted at 0 % for the
    // proposal: 1200m of 3 CPUs = 40 % → ceil(3 × 40/30) = 4.
    let now = Timestamp::now();
    let calc = Calculator::default();
    let mut pods = steady(&[1000; 3], now);
    pods[0] = pod("p0", 1000, now, 60, false, 50);
    let r = calc.resource_replicas(3, 30, "cpu", None, &pods, all(&[300, 500, 700], now), now);
    assert_eq!(r, Ok((4, 60, 600)));
}

#[test]
fn missing_pods_count_as_full_on_a_scale_down_and_idle_on_a_scale_up() {
    let now = Timestamp::now();
    let calc = Calculator::default();
    let pods = steady(&[1000; 4], now);
    // Scale-down: 3 samples at 10 %, the 4th counts as 100 %: 1300m/4000m
    // = 32 % at a 50 % target → ceil(4 × 0.64) = 3.
    let r = calc.resource_replicas(4, 50, "cpu", None, &pods, samples(&[(0, 100), (1, 100), (2, 100)], now), now);
    assert_eq!(r, Ok((3, 10, 100)));
    // Scale-up: 3 samples at 100 %, the 4th counts as 0 %: 75 % → ceil(4 × 1.5) = 6.
    let r = calc.resource_replicas(4, 50, "cpu", None, &pods, samples(&[(0, 1000), (1, 1000), (2, 1000)], now), now);
    assert_eq!(r, Ok((6, 100, 1000)));
    // A missing pod that would reverse the direction keeps the count:
    // 60 % at a 50 % target, but 30 % with the missing pod idle.
    let two = steady(&[1000; 2], now);
    let r = calc.resource_replicas(2, 50, "cpu", None, &two, samples(&[(0, 600)], now), now);
    assert_eq!(r, Ok((2, 60, 600)));
}

#[test]
fn pods_are_grouped_as_upstream() {
    let now = Timestamp::now();
    let calc = Calculator::default();
    let mut pods = vec![
        // Ready long ago: counts.
        pod("ready", 100, now, 3600, true, 3500),
        // Within the CPU initialization period, Ready 10 s ago: the 30 s
        // sample window has not passed since → unready.
        pod("warming", 100, now, 60, true, 10),
        // After the initialization period, unready and never ready since
        // it started (transition 10 s after start, within 30 s) → unready.
        pod("never-ready", 100, now, 600, false, 590),
        // After the period, became unready long after starting: counts.
        pod("broke", 100, now, 600, false, 100),
        // Running without a sample → missing.
        pod("nosample", 100, now, 3600, true, 3500),
    ];
    let mut pending = pod("pending", 100, now, 10, false, 10);
    pending.status.as_mut().unwrap().phase = Some("Pending".into());
    let mut failed = pod("failed", 100, now, 3600, false, 10);
    failed.status.as_mut().unwrap().phase = Some("Failed".into());
    let mut deleted = pod("deleted", 100, now, 3600, true, 3500);
    deleted.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now));
    pods.extend([pending, failed, deleted]);
    let sample = PodMetric { value: 50, timestamp: now, window: Duration::from_secs(30) };
    let metrics: PodMetricsInfo = ["ready", "warming", "never-ready", "broke", "pending", "failed", "deleted"]
        .iter()
        .map(|n| (n.to_string(), sample.clone()))
        .collect();
    let g = group_pods(&pods, &metrics, Some("cpu"), &calc, now);
    assert_eq!(g.ready, 2);
    assert_eq!(g.unready.iter().map(String::as_str).collect::<Vec<_>>(), ["never-ready", "pending", "warming"]);
    assert_eq!(g.missing.iter().map(String::as_str).collect::<Vec<_>>(), ["nosample"]);
    assert_eq!(g.ignored.iter().map(String::as_str).collect::<Vec<_>>(), ["deleted", "failed"]);
    // Memory has no readiness rules: only Pending pods are unready.
    let g = group_pods(&pods, &metrics, Some("memory"), &calc, now);
    assert_eq!(g.ready, 4);
    assert_eq!(g.unready.len(), 1);
    // A shorter initialization period (the flag) trusts the warming pod.
    let short = Calculator { cpu_initialization_period: Duration::from_secs(30), ..Calculator::default() };
    assert_eq!(group_pods(&pods, &metrics, Some("cpu"), &short, now).ready, 3);
}

#[test]
fn requests_are_summed_per_pod_and_a_missing_request_is_an_error() {
    let now = Timestamp::now();
    let pods = steady(&[250, 500], now);
    let r = pod_requests(&pods, None, "cpu").unwrap();
    assert_eq!((r["p0"], r["p1"]), (250, 500));
    assert_eq!(pod_requests(&pods, Some("app"), "memory").unwrap()["p0"], 64 * 1024 * 1024 * 1000);
    assert_eq!(
        pod_requests(&pods, None, "ephemeral-storage").unwrap_err(),
        "missing request for ephemeral-storage in container app of Pod p0"
    );
    // No samples for any counted pod, and no pods at all, are errors.
    let calc = Calculator::default();
    assert_eq!(
        calc.resource_replicas(2, 50, "cpu", None, &pods, PodMetricsInfo::new(), now).unwrap_err(),
        "did not receive metrics for targeted pods (pods might be unready)"
    );
    assert_eq!(
        calc.resource_replicas(2, 50, "cpu", None, &[], all(&[1], now), now).unwrap_err(),
        "no pods returned by selector while calculating replica count"
    );
}

#[test]
fn average_value_targets_use_the_average_usage() {
    // 3 pods at 300m/500m/700m, target 250m average: 500/250 → ceil(3 × 2) = 6.
    let now = Timestamp::now();
    let calc = Calculator::default();
    let r = calc.plain_metric_replicas(3, 250, Some("cpu"), &steady(&[1000; 3], now), all(&[300, 500, 700], now), now);
    assert_eq!(r, Ok((6, 500)));
    // Missing pods on a scale-down count at the target: (100+100+250)/3 = 150 of 250 → ceil(3 × 0.6) = 2.
    let r = calc.plain_metric_replicas(
        3,
        250,
        Some("cpu"),
        &steady(&[1000; 3], now),
        samples(&[(0, 100), (1, 100)], now),
        now,
    );
    assert_eq!(r, Ok((2, 100)));
}

fn rules(window: i32, select: &str, policies: &[(&str, i32, i32)]) -> HPAScalingRules {
    HPAScalingRules {
        stabilization_window_seconds: Some(window),
        select_policy: Some(select.into()),
        policies: Some(
            policies
                .iter()
                .map(|(t, v, p)| HPAScalingPolicy { type_: t.to_string(), value: *v, period_seconds: *p })
                .collect(),
        ),
        ..Default::default()
    }
}

fn default_behavior() -> HorizontalPodAutoscalerBehavior {
    with_defaults(&HorizontalPodAutoscalerBehavior::default(), Duration::from_secs(300))
}

#[test]
fn default_behavior_is_upstreams() {
    let b = default_behavior();
    let up = b.scale_up.unwrap();
    assert_eq!(up, rules(0, "Max", &[("Pods", 4, 15), ("Percent", 100, 15)]));
    let down = b.scale_down.unwrap();
    assert_eq!(down, rules(300, "Max", &[("Percent", 100, 15)]));
    // A partly set behavior keeps what it sets.
    let partial = HorizontalPodAutoscalerBehavior {
        scale_down: Some(HPAScalingRules { stabilization_window_seconds: Some(5), ..Default::default() }),
        ..Default::default()
    };
    assert_eq!(
        with_defaults(&partial, Duration::from_secs(300)).scale_down.unwrap(),
        rules(5, "Max", &[("Percent", 100, 15)])
    );
}

#[test]
fn default_scale_up_adds_at_most_max_of_4_pods_and_100_percent_per_15s() {
    let t0 = Instant::now();
    let b = default_behavior();
    let mut h = History::default();
    h.record_initial(1, t0);
    // From 1: max(1 + 4, 2 × 1) = 5.
    let n = h.normalize_with_behavior(t0, &b, 1, 10, 1, 100);
    assert_eq!((n.replicas, n.limited, n.limit.0), (5, true, "ScaleUpLimit"));
    h.store_scale_event(Some(&b), t0, 1, 5);
    // 10 s later the period still holds the +4: no more than 5.
    let t1 = t0 + Duration::from_secs(10);
    let n = h.normalize_with_behavior(t1, &b, 5, 10, 1, 100);
    assert_eq!((n.replicas, n.limit.0), (5, "ScaleUpLimit"));
    // Once the 15 s period has passed: max(5 + 4, 2 × 5) = 10, the recommendation.
    let t2 = t0 + Duration::from_secs(16);
    let n = h.normalize_with_behavior(t2, &b, 5, 10, 1, 100);
    assert_eq!((n.replicas, n.limited, n.limit.0, n.able.0), (10, false, "DesiredWithinRange", "ReadyForNewScale"));
    // maxReplicas wins over the rate: TooManyReplicas.
    let n = h.normalize_with_behavior(t2, &b, 5, 10, 1, 7);
    assert_eq!((n.replicas, n.limit.0), (7, "TooManyReplicas"));
    assert_eq!(n.limit.1, "the desired replica count is more than the maximum replica count");
}

#[test]
fn scale_down_policies_select_max_min_and_disabled() {
    let t0 = Instant::now();
    let mut h = History::default();
    h.record_initial(10, t0);
    let b = |select: &str| HorizontalPodAutoscalerBehavior {
        scale_up: Some(rules(0, "Max", &[("Pods", 4, 15)])),
        scale_down: Some(rules(0, select, &[("Pods", 1, 60), ("Percent", 50, 60)])),
    };
    // Max (the biggest change): 10 × 50 % = 5.
    let n = h.clone().normalize_with_behavior(t0, &b("Max"), 10, 1, 1, 20);
    assert_eq!((n.replicas, n.limit.0), (5, "ScaleDownLimit"));
    assert_eq!(n.limit.1, "the desired replica count is decreasing faster than the maximum scale rate");
    // Min (the smallest change): 10 − 1 = 9.
    let n = h.clone().normalize_with_behavior(t0, &b("Min"), 10, 1, 1, 20);
    assert_eq!((n.replicas, n.limit.0), (9, "ScaleDownLimit"));
    // Disabled: no scale-down at all.
    let n = h.clone().normalize_with_behavior(t0, &b("Disabled"), 10, 1, 1, 20);
    assert_eq!(n.replicas, 10);
    // The period remembers what was removed: after 10 → 5, 30 s later
    // nothing more may go; after 60 s another half.
    let max = b("Max");
    let n = h.normalize_with_behavior(t0, &max, 10, 1, 1, 20);
    h.store_scale_event(Some(&max), t0, 10, n.replicas);
    let n = h.normalize_with_behavior(t0 + Duration::from_secs(30), &max, 5, 1, 1, 20);
    assert_eq!(n.replicas, 5);
    let n = h.normalize_with_behavior(t0 + Duration::from_secs(61), &max, 5, 1, 1, 20);
    assert_eq!(n.replicas, 2);
    // minReplicas wins over the rate: TooFewReplicas.
    let n = h.normalize_with_behavior(t0 + Duration::from_secs(200), &max, 5, 1, 4, 20);
    assert_eq!((n.replicas, n.limit.0), (4, "TooFewReplicas"));
}

#[test]
fn stabilization_windows_hold_the_highest_or_lowest_recent_recommendation() {
    let t0 = Instant::now();
    let b = HorizontalPodAutoscalerBehavior {
        scale_up: Some(rules(60, "Max", &[("Percent", 100, 15)])),
        scale_down: Some(rules(120, "Max", &[("Percent", 100, 15)])),
    };
    let mut h = History::default();
    h.record_initial(3, t0);
    // Scale-up window 60 s: the lowest recent recommendation (3) holds.
    let n = h.normalize_with_behavior(t0 + Duration::from_secs(10), &b, 3, 6, 1, 10);
    assert_eq!((n.replicas, n.able.0), (3, "ScaleUpStabilized"));
    // After 60 s every recent recommendation is 6 or more.
    let n = h.normalize_with_behavior(t0 + Duration::from_secs(75), &b, 3, 6, 1, 10);
    assert_eq!((n.replicas, n.able.0), (6, "ReadyForNewScale"));
    // Scale-down window 120 s: the highest recent recommendation (6) holds.
    let n = h.normalize_with_behavior(t0 + Duration::from_secs(80), &b, 6, 2, 1, 10);
    assert_eq!((n.replicas, n.able.0), (6, "ScaleDownStabilized"));
    assert_eq!(
        n.able.1,
        "recent recommendations were higher than current one, applying the highest recent recommendation"
    );
    let n = h.normalize_with_behavior(t0 + Duration::from_secs(300), &b, 6, 2, 1, 10);
    assert_eq!((n.replicas, n.able.0), (2, "ReadyForNewScale"));
}

#[test]
fn without_behavior_the_downscale_window_and_double_or_4_limit_apply() {
    let t0 = Instant::now();
    let window = Duration::from_secs(300);
    let mut h = History::default();
    h.record_initial(5, t0);
    // Scale-down within the window: the current 5 holds.
    let n = h.normalize(t0 + Duration::from_secs(1), window, 5, 2, 1, 10);
    assert_eq!((n.replicas, n.able.0, n.limit.0), (5, "ScaleDownStabilized", "DesiredWithinRange"));
    // After the window: 2.
    let n = h.normalize(t0 + Duration::from_secs(302), window, 5, 2, 1, 10);
    assert_eq!((n.replicas, n.able.0), (2, "ReadyForNewScale"));
    // Scale-up at most max(2 × current, 4).
    let n = h.normalize(t0 + Duration::from_secs(303), window, 1, 9, 1, 10);
    assert_eq!((n.replicas, n.limited, n.limit.0), (4, true, "ScaleUpLimit"));
    let n = h.normalize(t0 + Duration::from_secs(304), window, 4, 9, 1, 10);
    assert_eq!((n.replicas, n.limit.0), (8, "ScaleUpLimit"));
    let n = h.normalize(t0 + Duration::from_secs(305), window, 8, 12, 1, 10);
    assert_eq!((n.replicas, n.limit.0), (10, "TooManyReplicas"));
    let n = h.normalize(t0 + Duration::from_secs(306), Duration::ZERO, 3, 0, 1, 10);
    assert_eq!((n.replicas, n.limit.0), (1, "TooFewReplicas"));
}

#[test]
fn pod_metrics_follow_the_metrics_api_shape() {
    let list: PodMetricsList = serde_json::from_value(json!({
        "kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1", "metadata": {},
        "items": [
            {"metadata": {"name": "a", "namespace": "default"}, "timestamp": "2026-12-02T03:00:00Z", "window": "10.5s",
             "containers": [{"name": "app", "usage": {"cpu": "250m", "memory": "10Mi"}},
                            {"name": "side", "usage": {"cpu": "1", "memory": "1Mi"}}]},
            {"metadata": {"name": "b", "namespace": "default"}, "timestamp": "2026-12-02T03:00:00Z", "window": "15s",
             "containers": [{"name": "app", "usage": {"memory": "10Mi"}}]},
            {"metadata": {"name": "c", "namespace": "default"}, "timestamp": "2026-12-02T03:00:00Z", "window": "15s",
             "containers": []}
        ]
    }))
    .unwrap();
    let cpu = pod_metrics_info(&list, "cpu", None).unwrap();
    // b lacks cpu in a container, c has no containers: both left out.
    assert_eq!(cpu.keys().collect::<Vec<_>>(), ["a"]);
    assert_eq!(cpu["a"].value, 1250);
    assert_eq!(cpu["a"].window, Duration::from_millis(10500));
    let app = pod_metrics_info(&list, "memory", Some("app"));
    assert_eq!(app.unwrap_err(), "container app not present in metrics for pod default/c");
    assert_eq!(parse_go_duration("1m30s").ok(), Some(Duration::from_secs(90)));
    assert_eq!(parse_go_duration("500ms").ok(), Some(Duration::from_millis(500)));
    assert_eq!(parse_go_duration("5x").ok(), None);
}

#[test]
fn quantities_are_written_canonically() {
    assert_eq!(milli_quantity(250).0, "250m");
    assert_eq!(milli_quantity(2000).0, "2");
    assert_eq!(milli_quantity(1500).0, "1500m");
}
