//! One probe loop per (container, probe kind) — upstream's prober `worker`:
//! probes every `periodSeconds` (first at once; after a kubelet start, first
//! after a random part of a period), or at once when asked; counts results
//! against `successThreshold`/`failureThreshold` before changing the cached
//! result; holds after a liveness/startup failure until the container is
//! replaced; resets when the container id changes.

use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use k8s_openapi::api::core::v1::{Container, Pod, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use tokio::sync::{watch, Notify};

use super::results::{Outcome, ProbeKind, ProbeResult};
use super::{exec, grpc, http, tcp, Inner};

/// Upstream retries a probe that errored (not one that failed) up to this many times.
const MAX_PROBE_RETRIES: usize = 3;

/// What the worker probes, as of the pod worker's last sync.
#[derive(Clone)]
pub(super) struct Target {
    pub pod: Arc<Pod>,
    pub pod_ip: Option<String>,
    /// The running container: CRI id and start time (unix nanoseconds); `None` when not running.
    pub container: Option<(String, i64)>,
}

/// The probe's thresholds and timings with upstream's defaults applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeTimings {
    /// `initialDelaySeconds` (default 0), counted from the container's start.
    pub initial_delay: Duration,
    /// `periodSeconds` (default 10, at least 1).
    pub period: Duration,
    /// `timeoutSeconds` (default 1, at least 1).
    pub timeout: Duration,
    /// `successThreshold` (default 1; always 1 for liveness and startup).
    pub success_threshold: i32,
    /// `failureThreshold` (default 3).
    pub failure_threshold: i32,
}

impl ProbeTimings {
    /// The timings of `probe` as upstream defaults them.
    pub fn of(probe: &Probe, kind: ProbeKind) -> ProbeTimings {
        let secs = |v: Option<i32>, d: i32, min: i32| Duration::from_secs(v.unwrap_or(d).max(min) as u64);
        ProbeTimings {
            initial_delay: secs(probe.initial_delay_seconds, 0, 0),
            period: secs(probe.period_seconds, 10, 1),
            timeout: secs(probe.timeout_seconds, 1, 1),
            success_threshold: match kind {
                ProbeKind::Readiness => probe.success_threshold.unwrap_or(1).max(1),
                _ => 1,
            },
            failure_threshold: probe.failure_threshold.unwrap_or(3).max(1),
        }
    }
}

/// Consecutive results (upstream's `lastResult`/`resultRun`).
#[derive(Debug)]
pub(super) struct Run {
    last: ProbeResult,
    count: i32,
}

impl Run {
    pub fn new() -> Run {
        Run { last: ProbeResult::Unknown, count: 0 }
    }

    /// Counts `result`; true when it has now happened often enough in a row to be cached.
    pub fn observe(&mut self, result: ProbeResult, t: &ProbeTimings) -> bool {
        if self.last == result {
            self.count += 1;
        } else {
            self.last = result;
            self.count = 1;
        }
        !((result == ProbeResult::Failure && self.count < t.failure_threshold)
            || (result == ProbeResult::Success && self.count < t.success_threshold))
    }

    pub fn reset(&mut self) {
        self.count = 0;
    }
}

/// A worker's fixed facts.
pub(super) struct Spec {
    pub pod_uid: String,
    pub container: Container,
    pub field_path: String,
    pub kind: ProbeKind,
    pub probe: Probe,
}

pub(super) struct Worker {
    pub spec: Spec,
    pub timings: ProbeTimings,
    pub target: watch::Receiver<Target>,
    pub trigger: Arc<Notify>,
    pub manager: Weak<Inner>,
    container_id: Option<String>,
    on_hold: bool,
    run: Run,
}

impl Worker {
    pub fn new(spec: Spec, target: watch::Receiver<Target>, trigger: Arc<Notify>, manager: Weak<Inner>) -> Worker {
        let timings = ProbeTimings::of(&spec.probe, spec.kind);
        Worker { spec, timings, target, trigger, manager, container_id: None, on_hold: false, run: Run::new() }
    }

    /// The probe loop; ends when the manager is gone or the probe is done for good.
    pub async fn run(mut self) {
        let period = self.timings.period;
        let Some(start) = self.manager.upgrade().map(|m| m.start) else { return };
        // After a kubelet (re)start, spread the first probes over a period.
        if start.elapsed() < period {
            tokio::time::sleep(period.mul_f64(random_fraction())).await;
        }
        let mut ticker = tokio::time::interval(period);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker.tick().await;
        loop {
            let Some(m) = self.manager.upgrade() else { return };
            if !self.do_probe(&m).await {
                tracing::debug!(component = "kubelet", pod_uid = %self.spec.pod_uid,
                    container = %self.spec.container.name, probe = self.spec.kind.name(), "probe worker done");
                return;
            }
            drop(m);
            let trigger = self.trigger.clone();
            tokio::select! {
                _ = ticker.tick() => {}
                _ = trigger.notified() => {}
            }
        }
    }

    /// One probe and its bookkeeping (upstream's `doProbe`); false = stop the worker.
    async fn do_probe(&mut self, m: &Inner) -> bool {
        let target = self.target.borrow().clone();
        let phase = target.pod.status.as_ref().and_then(|s| s.phase.as_deref());
        if matches!(phase, Some("Succeeded" | "Failed")) {
            return false;
        }
        let (uid, name, kind) = (&self.spec.pod_uid, &self.spec.container.name, self.spec.kind);
        let Some((id, started_at)) = target.container.clone() else {
            // Not running: the last container counts as failing until it is replaced.
            if let Some(cid) = &self.container_id {
                m.set_result(uid, name, kind, cid, ProbeResult::Failure);
            }
            return true;
        };
        if self.container_id.as_deref() != Some(id.as_str()) {
            if let Some(old) = self.container_id.take() {
                m.remove_result(uid, name, kind, &old);
            }
            m.set_result(uid, name, kind, &id, kind.initial());
            self.container_id = Some(id.clone());
            self.on_hold = false;
        }
        if self.on_hold {
            return true;
        }
        if target.pod.metadata.deletion_timestamp.is_some() && kind != ProbeKind::Readiness {
            // Quiet shutdown: a deleted pod's containers are not restarted by probes.
            m.set_result(uid, name, kind, &id, ProbeResult::Success);
            return false;
        }
        if running_for(started_at) < self.timings.initial_delay.as_secs() as i64 {
            return true;
        }
        let started = m.container_started(uid, name, &id);
        // Startup probes run until the container has started; the others only after.
        if started == (kind == ProbeKind::Startup) {
            return true;
        }
        let mut outcome = Outcome::Error(String::new());
        for _ in 0..MAX_PROBE_RETRIES {
            outcome = self.probe_once(m, &target, &id).await;
            if !matches!(outcome, Outcome::Error(_)) {
                break;
            }
        }
        let title = kind.title();
        let result = match outcome {
            Outcome::Success(_) => ProbeResult::Success,
            Outcome::Warning(out) => {
                m.event(&target.pod, &self.spec.field_path, "ProbeWarning", format!("{title} probe warning: {out}"));
                ProbeResult::Success
            }
            Outcome::Failure(out) => {
                m.event(&target.pod, &self.spec.field_path, "Unhealthy", format!("{title} probe failed: {out}"));
                ProbeResult::Failure
            }
            Outcome::Error(e) => {
                let msg = format!("{title} probe errored and resulted in unknown state: {e}");
                m.event(&target.pod, &self.spec.field_path, "Unhealthy", msg);
                // The result of a probe that could not run is thrown away.
                return true;
            }
        };
        if !self.run.observe(result, &self.timings) {
            return true;
        }
        m.set_result(uid, name, kind, &id, result);
        if kind != ProbeKind::Readiness && result == ProbeResult::Failure {
            // The container will be restarted: hold until a new container id shows up.
            self.on_hold = true;
            self.run.reset();
            m.push_failed(uid, name, kind);
        }
        true
    }

    /// Runs the probe's handler once.
    async fn probe_once(&self, m: &Inner, target: &Target, container_id: &str) -> Outcome {
        let (p, c, timeout) = (&self.spec.probe, &self.spec.container, self.timings.timeout);
        let pod_ip = target.pod_ip.clone().unwrap_or_default();
        let host_or_ip = |h: &Option<String>| h.clone().filter(|h| !h.is_empty()).unwrap_or_else(|| pod_ip.clone());
        if let Some(e) = &p.exec {
            let Some(cri) = &m.cri else { return Outcome::Error("no container runtime".into()) };
            let command =
                exec::expand_command(e.command.as_deref().unwrap_or_default(), c.env.as_deref().unwrap_or_default());
            return exec::probe_exec(cri, container_id, command, timeout).await;
        }
        if let Some(h) = &p.http_get {
            let port = match resolve_port(&h.port, c) {
                Ok(p) => p,
                Err(e) => return Outcome::Error(e),
            };
            let target = http::HttpTarget {
                scheme: h.scheme.as_deref().unwrap_or("HTTP").to_ascii_lowercase(),
                host: host_or_ip(&h.host),
                port,
                path: h.path.clone().unwrap_or_default(),
                headers: h.http_headers.iter().flatten().map(|h| (h.name.clone(), h.value.clone())).collect(),
            };
            return http::probe_http(&target, timeout).await;
        }
        if let Some(t) = &p.tcp_socket {
            return match resolve_port(&t.port, c) {
                Ok(port) => tcp::probe_tcp(&host_or_ip(&t.host), port, timeout).await,
                Err(e) => Outcome::Error(e),
            };
        }
        if let Some(g) = &p.grpc {
            let Ok(port) = u16::try_from(g.port).map_err(|_| ()).and_then(|p| if p > 0 { Ok(p) } else { Err(()) })
            else {
                return Outcome::Error(format!("invalid port number: {}", g.port));
            };
            return grpc::probe_grpc(&pod_ip, port, g.service.as_deref().unwrap_or(""), timeout).await;
        }
        let pod = &target.pod.metadata;
        Outcome::Error(format!(
            "missing probe handler for {}_{}:{}",
            pod.name.as_deref().unwrap_or(""),
            pod.namespace.as_deref().unwrap_or(""),
            c.name
        ))
    }
}

/// A probe's port: a number, or the name of one of the container's ports
/// (or a number written as a string), as upstream's `ResolveContainerPort`.
pub fn resolve_port(port: &IntOrString, c: &Container) -> Result<u16, String> {
    let n: i64 = match port {
        IntOrString::Int(n) => i64::from(*n),
        IntOrString::String(name) => {
            match c.ports.iter().flatten().find(|p| p.name.as_deref() == Some(name.as_str())) {
                Some(p) => i64::from(p.container_port),
                None => name.parse::<i64>().map_err(|_| format!("strconv.Atoi: parsing \"{name}\": invalid syntax"))?,
            }
        }
    };
    u16::try_from(n).ok().filter(|p| *p > 0).ok_or_else(|| format!("invalid port number: {n}"))
}

/// Whole seconds since `started_at` (unix nanoseconds; 0 = unknown, counts as long ago).
fn running_for(started_at_ns: i64) -> i64 {
    if started_at_ns <= 0 {
        return i64::MAX;
    }
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as i64).unwrap_or(0);
    (now - started_at_ns) / 1_000_000_000
}

/// A random number in [0, 1).
fn random_fraction() -> f64 {
    use ring::rand::SecureRandom;
    let mut b = [0u8; 8];
    if ring::rand::SystemRandom::new().fill(&mut b).is_err() {
        return 0.5;
    }
    (u64::from_le_bytes(b) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ContainerPort;

    fn timings(success: i32, failure: i32) -> ProbeTimings {
        ProbeTimings {
            initial_delay: Duration::ZERO,
            period: Duration::from_secs(10),
            timeout: Duration::from_secs(1),
            success_threshold: success,
            failure_threshold: failure,
        }
    }

    #[test]
    fn thresholds_need_consecutive_results() {
        let t = timings(2, 3);
        let mut r = Run::new();
        assert!(!r.observe(ProbeResult::Failure, &t));
        assert!(!r.observe(ProbeResult::Failure, &t));
        // A success in between restarts the count.
        assert!(!r.observe(ProbeResult::Success, &t));
        assert!(!r.observe(ProbeResult::Failure, &t));
        assert!(!r.observe(ProbeResult::Failure, &t));
        assert!(r.observe(ProbeResult::Failure, &t));
        assert!(r.observe(ProbeResult::Failure, &t), "stays failed past the threshold");
        assert!(!r.observe(ProbeResult::Success, &t));
        assert!(r.observe(ProbeResult::Success, &t));
    }

    #[test]
    fn probe_defaults_follow_upstream() {
        let t = ProbeTimings::of(&Probe::default(), ProbeKind::Readiness);
        assert_eq!(t, timings(1, 3));
        let p = Probe { success_threshold: Some(3), period_seconds: Some(0), ..Default::default() };
        assert_eq!(ProbeTimings::of(&p, ProbeKind::Liveness).success_threshold, 1);
        assert_eq!(ProbeTimings::of(&p, ProbeKind::Readiness).success_threshold, 3);
        assert_eq!(ProbeTimings::of(&p, ProbeKind::Startup).period, Duration::from_secs(1));
    }

    #[test]
    fn ports_resolve_by_number_name_or_numeric_string() {
        let c = Container {
            ports: Some(vec![ContainerPort { name: Some("http".into()), container_port: 8080, ..Default::default() }]),
            ..Default::default()
        };
        assert_eq!(resolve_port(&IntOrString::Int(80), &c), Ok(80));
        assert_eq!(resolve_port(&IntOrString::String("http".into()), &c), Ok(8080));
        assert_eq!(resolve_port(&IntOrString::String("81".into()), &c), Ok(81));
        assert_eq!(
            resolve_port(&IntOrString::String("web".into()), &c),
            Err("strconv.Atoi: parsing \"web\": invalid syntax".into())
        );
        assert_eq!(resolve_port(&IntOrString::Int(0), &c), Err("invalid port number: 0".into()));
        assert_eq!(resolve_port(&IntOrString::Int(70000), &c), Err("invalid port number: 70000".into()));
    }
}
