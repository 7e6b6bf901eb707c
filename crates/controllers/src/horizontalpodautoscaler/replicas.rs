//! The replica calculator (upstream `pkg/controller/podautoscaler/replica_calculator.go`
//! and the utilization helpers of its `metrics` package): from the pods a
//! scale target selects and their resource usage, the replica count that
//! brings the usage to the target.
//!
//! Upstream's rules, which these functions follow:
//! - pods being deleted and `Failed` pods are ignored entirely;
//! - `Pending` pods are *unready*; for CPU, so is a pod without a `Ready`
//!   condition or start time, a pod inside its CPU initialization period
//!   (`--horizontal-pod-autoscaler-cpu-initialization-period`, 5 min) that
//!   is not Ready or whose sample predates one metric window after its last
//!   readiness transition, and, after that period, a pod that is not Ready
//!   and became so within the initial readiness delay of its start
//!   (`--horizontal-pod-autoscaler-initial-readiness-delay`, 30 s);
//! - running pods without a sample are *missing*;
//! - with neither unready pods (on a scale-up) nor missing pods, desired =
//!   ceil(ratio × ready pods), unless |1 − ratio| ≤ tolerance (0.1);
//! - otherwise missing pods count as using 100 % of their request (of the
//!   target for plain metrics) on a scale-down and 0 % on a scale-up,
//!   unready pods count 0 % on a scale-up, the ratio is recomputed, and
//!   the count stays put when the new ratio is within tolerance or would
//!   reverse the direction of the scale.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;

/// One pod's usage sample: `value` in milli-units (millicores for CPU,
/// milli-bytes for memory, as upstream's `MilliValue`), taken at
/// `timestamp` over `window`.
#[derive(Clone, Debug, PartialEq)]
pub struct PodMetric {
    /// Usage in milli-units.
    pub value: i64,
    /// When the sample was taken (the end of its window).
    pub timestamp: Timestamp,
    /// The window the sample averages over.
    pub window: Duration,
}

/// Samples by pod name (upstream's `PodMetricsInfo`).
pub type PodMetricsInfo = BTreeMap<String, PodMetric>;

/// The calculator's tunables (upstream's `ReplicaCalculator` fields).
#[derive(Clone, Debug)]
pub struct Calculator {
    /// Relative change of the usage ratio below which nothing scales
    /// (`--horizontal-pod-autoscaler-tolerance`, 0.1).
    pub tolerance: f64,
    /// `--horizontal-pod-autoscaler-cpu-initialization-period` (5 min).
    pub cpu_initialization_period: Duration,
    /// `--horizontal-pod-autoscaler-initial-readiness-delay` (30 s).
    pub initial_readiness_delay: Duration,
}

impl Default for Calculator {
    fn default() -> Self {
        Calculator {
            tolerance: 0.1,
            cpu_initialization_period: Duration::from_secs(300),
            initial_readiness_delay: Duration::from_secs(30),
        }
    }
}

/// How [`group_pods`] sorted the pods.
#[derive(Debug, Default, PartialEq)]
pub struct Grouped {
    /// Pods whose sample counts.
    pub ready: usize,
    /// Pending or (for CPU) not-yet-trustworthy pods.
    pub unready: BTreeSet<String>,
    /// Running pods without a sample.
    pub missing: BTreeSet<String>,
    /// Deleted and failed pods.
    pub ignored: BTreeSet<String>,
}

fn name(p: &Pod) -> String {
    p.metadata.name.clone().unwrap_or_default()
}

fn ts(t: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time) -> Timestamp {
    t.0
}

fn add(t: Timestamp, d: Duration) -> Timestamp {
    t.checked_add(jiff::SignedDuration::try_from(d).unwrap_or(jiff::SignedDuration::MAX)).unwrap_or(Timestamp::MAX)
}

/// Upstream's `groupPods`: sorts `pods` into ready (counted), unready,
/// missing and ignored, given the samples and the resource (`cpu` enables
/// the readiness rules; `None`: a plain metric).
pub fn group_pods(
    pods: &[Pod],
    metrics: &PodMetricsInfo,
    resource: Option<&str>,
    calc: &Calculator,
    now: Timestamp,
) -> Grouped {
    let mut g = Grouped::default();
    for pod in pods {
        let n = name(pod);
        let status = pod.status.clone().unwrap_or_default();
        let phase = status.phase.as_deref().unwrap_or("");
        if pod.metadata.deletion_timestamp.is_some() || phase == "Failed" {
            g.ignored.insert(n);
            continue;
        }
        if phase == "Pending" {
            g.unready.insert(n);
            continue;
        }
        let Some(metric) = metrics.get(&n) else {
            g.missing.insert(n);
            continue;
        };
        if resource == Some("cpu") {
            let ready = status.conditions.iter().flatten().find(|c| c.type_ == "Ready");
            let unready = match (ready, status.start_time.as_ref()) {
                (Some(c), Some(start)) => {
                    let start = ts(start);
                    let transition = c.last_transition_time.as_ref().map(ts).unwrap_or(Timestamp::UNIX_EPOCH);
                    if add(start, calc.cpu_initialization_period) > now {
                        // Within the initialization period: unready, or no full window since the last transition.
                        c.status == "False" || metric.timestamp < add(transition, metric.window)
                    } else {
                        // Unready and never ready since it started.
                        c.status == "False" && add(start, calc.initial_readiness_delay) > transition
                    }
                }
                _ => true,
            };
            if unready {
                g.unready.insert(n);
                continue;
            }
        }
        g.ready += 1;
    }
    g
}

/// Upstream's `calculatePodRequests`: each pod's request of `resource` in
/// milli-units, summed over its containers (only `container` if given).
/// A container without that request is an error (`missing request for
/// <resource> in container <c> of Pod <pod>`).
pub fn pod_requests(pods: &[Pod], container: Option<&str>, resource: &str) -> Result<BTreeMap<String, i64>, String> {
    let mut out = BTreeMap::new();
    for pod in pods {
        let mut sum = 0i64;
        for c in pod.spec.iter().flat_map(|s| s.containers.iter()) {
            if container.is_some_and(|want| want != c.name) {
                continue;
            }
            let request = c.resources.as_ref().and_then(|r| r.requests.as_ref()).and_then(|r| r.get(resource));
            match request.and_then(|q| rkube_apimachinery::quantity::milli_value(&q.0)) {
                Some(v) => sum += v.clamp(i64::MIN as i128, i64::MAX as i128) as i64,
                None => {
                    return Err(format!("missing request for {resource} in container {} of Pod {}", c.name, name(pod)))
                }
            }
        }
        out.insert(name(pod), sum);
    }
    Ok(out)
}

/// Upstream's `GetResourceUtilizationRatio`: (usage ratio, utilization in
/// percent of the requests, average raw usage in milli-units) over the pods
/// that have both a sample and a request.
pub fn resource_utilization_ratio(
    metrics: &PodMetricsInfo,
    requests: &BTreeMap<String, i64>,
    target_utilization: i32,
) -> Result<(f64, i32, i64), String> {
    let (mut total, mut requested, mut entries) = (0i64, 0i64, 0i64);
    for (pod, m) in metrics {
        let Some(r) = requests.get(pod) else { continue };
        total += m.value;
        requested += r;
        entries += 1;
    }
    if requested == 0 {
        return Err("no metrics returned matched known pods".into());
    }
    let utilization = (total * 100 / requested) as i32;
    Ok((utilization as f64 / target_utilization as f64, utilization, total / entries))
}

/// Upstream's `GetMetricUtilizationRatio`: (usage ratio, average usage in
/// milli-units) against a per-pod target in milli-units.
pub fn metric_utilization_ratio(metrics: &PodMetricsInfo, target: i64) -> (f64, i64) {
    let total: i64 = metrics.values().map(|m| m.value).sum();
    let average = if metrics.is_empty() { 0 } else { total / metrics.len() as i64 };
    (average as f64 / target as f64, average)
}

impl Calculator {
    fn within_tolerance(&self, ratio: f64) -> bool {
        (1.0 - ratio).abs() <= self.tolerance
    }

    /// Upstream's `GetResourceReplicas` after the metrics fetch: the
    /// replica count for a target utilization (percent of requests) of
    /// `resource` (of `container` only, for ContainerResource metrics).
    /// Returns (replicas, utilization %, average raw usage in milli-units).
    #[allow(clippy::too_many_arguments)]
    pub fn resource_replicas(
        &self,
        current: i32,
        target_utilization: i32,
        resource: &str,
        container: Option<&str>,
        pods: &[Pod],
        mut metrics: PodMetricsInfo,
        now: Timestamp,
    ) -> Result<(i32, i32, i64), String> {
        if pods.is_empty() {
            return Err("no pods returned by selector while calculating replica count".into());
        }
        let g = group_pods(pods, &metrics, Some(resource), self, now);
        metrics.retain(|p, _| !g.ignored.contains(p) && !g.unready.contains(p));
        let requests = pod_requests(pods, container, resource)?;
        if metrics.is_empty() {
            return Err("did not receive metrics for targeted pods (pods might be unready)".into());
        }
        let (ratio, utilization, raw) = resource_utilization_ratio(&metrics, &requests, target_utilization)?;
        let scale_up_with_unready = !g.unready.is_empty() && ratio > 1.0;
        if !scale_up_with_unready && g.missing.is_empty() {
            if self.within_tolerance(ratio) {
                return Ok((current, utilization, raw));
            }
            return Ok(((ratio * g.ready as f64).ceil() as i32, utilization, raw));
        }
        let now_sample = |value| PodMetric { value, timestamp: now, window: Duration::ZERO };
        if ratio < 1.0 {
            // Scale-down: missing pods use 100 % of their request.
            for p in &g.missing {
                metrics.insert(p.clone(), now_sample(requests.get(p).copied().unwrap_or(0)));
            }
        } else if ratio > 1.0 {
            // Scale-up: missing pods use nothing.
            for p in &g.missing {
                metrics.insert(p.clone(), now_sample(0));
            }
        }
        if scale_up_with_unready {
            for p in &g.unready {
                metrics.insert(p.clone(), now_sample(0));
            }
        }
        let (new_ratio, _, _) = resource_utilization_ratio(&metrics, &requests, target_utilization)?;
        if self.within_tolerance(new_ratio) || (ratio < 1.0 && new_ratio > 1.0) || (ratio > 1.0 && new_ratio < 1.0) {
            return Ok((current, utilization, raw));
        }
        let replicas = (new_ratio * metrics.len() as f64).ceil() as i32;
        if (new_ratio < 1.0 && replicas > current) || (new_ratio > 1.0 && replicas < current) {
            return Ok((current, utilization, raw));
        }
        Ok((replicas, utilization, raw))
    }

    /// Upstream's `calcPlainMetricReplicas` (AverageValue targets of
    /// Resource and ContainerResource metrics, and Pods metrics): the
    /// replica count for a per-pod target in milli-units. `resource`
    /// (`Some("cpu")`) enables the CPU readiness rules. Returns (replicas,
    /// average usage in milli-units).
    pub fn plain_metric_replicas(
        &self,
        current: i32,
        target: i64,
        resource: Option<&str>,
        pods: &[Pod],
        mut metrics: PodMetricsInfo,
        now: Timestamp,
    ) -> Result<(i32, i64), String> {
        if pods.is_empty() {
            return Err("no pods returned by selector while calculating replica count".into());
        }
        let g = group_pods(pods, &metrics, resource, self, now);
        metrics.retain(|p, _| !g.ignored.contains(p) && !g.unready.contains(p));
        if metrics.is_empty() {
            return Err("did not receive metrics for targeted pods (pods might be unready)".into());
        }
        let (ratio, usage) = metric_utilization_ratio(&metrics, target);
        let scale_up_with_unready = !g.unready.is_empty() && ratio > 1.0;
        if !scale_up_with_unready && g.missing.is_empty() {
            if self.within_tolerance(ratio) {
                return Ok((current, usage));
            }
            return Ok(((ratio * g.ready as f64).ceil() as i32, usage));
        }
        let now_sample = |value| PodMetric { value, timestamp: now, window: Duration::ZERO };
        for p in &g.missing {
            // Scale-down: missing pods are at the target; scale-up: at zero.
            metrics.insert(p.clone(), now_sample(if ratio < 1.0 { target } else { 0 }));
        }
        if scale_up_with_unready {
            for p in &g.unready {
                metrics.insert(p.clone(), now_sample(0));
            }
        }
        let (new_ratio, _) = metric_utilization_ratio(&metrics, target);
        if self.within_tolerance(new_ratio) || (ratio < 1.0 && new_ratio > 1.0) || (ratio > 1.0 && new_ratio < 1.0) {
            return Ok((current, usage));
        }
        Ok(((new_ratio * metrics.len() as f64).ceil() as i32, usage))
    }
}
