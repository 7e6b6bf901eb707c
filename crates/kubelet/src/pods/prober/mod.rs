//! Container probes (upstream's `pkg/kubelet/prober`): liveness, readiness
//! and startup probes run by one worker task per (container, probe kind),
//! with exec (CRI ExecSync), httpGet, tcpSocket and grpc handlers.
//!
//! The pod worker calls [`ProbeManager::sync_pod`] on every sync with the
//! running containers; asks [`ProbeManager::readiness`] and
//! [`ProbeManager::started`] when it builds container statuses; and kills the
//! containers [`ProbeManager::take_failed`] names. Whenever a cached result
//! changes, the pod's UID is sent on the `changed` channel so the pod is
//! synced at once. Failures are `Unhealthy` Warning events on the pod with
//! `fieldPath` `spec.containers{name}` (`spec.initContainers{name}` for
//! sidecars), as upstream's `Liveness probe failed: …`.

pub mod exec;
pub mod grpc;
pub mod http;
pub mod results;
pub mod tcp;
mod worker;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Instant;

#[cfg(test)]
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::core::v1::Pod;
use rkube_client::events::Recorder;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::{watch, Notify};

use crate::cri::CriClient;
pub use results::{Outcome, ProbeKind, ProbeResult};
pub use worker::{resolve_port, ProbeTimings};
use worker::{Spec, Target, Worker};

/// Runs the probes of the pods on this node. Cheap to clone (shared state).
#[derive(Clone)]
pub struct ProbeManager {
    inner: Arc<Inner>,
}

/// Where probe events go.
enum EventSink {
    Recorder(Recorder),
    #[cfg(test)]
    Capture(Arc<Mutex<Vec<(ObjectReference, String, String)>>>),
}

pub(crate) struct Inner {
    cri: Option<CriClient>,
    events: EventSink,
    changed: UnboundedSender<String>,
    /// When the manager started: probes are jittered during the first period after it.
    start: Instant,
    pods: Mutex<HashMap<String, PodProbes>>,
}

#[derive(Default)]
struct PodProbes {
    /// The running containers of the last sync: name -> (CRI id, started_at ns).
    running: BTreeMap<String, (String, i64)>,
    workers: HashMap<(String, ProbeKind), Slot>,
    /// Cached results: (container, kind) -> (container id, result).
    results: HashMap<(String, ProbeKind), (String, ProbeResult)>,
    failed: Vec<(String, &'static str)>,
}

struct Slot {
    target: watch::Sender<Target>,
    trigger: Arc<Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl ProbeManager {
    /// A manager running exec probes through `cri`, recording events with
    /// `recorder` (component `kubelet`) and sending a pod's UID on `changed`
    /// whenever one of its cached probe results changes.
    pub fn new(cri: CriClient, recorder: Recorder, changed: UnboundedSender<String>) -> Self {
        Self::build(Some(cri), EventSink::Recorder(recorder), changed, Instant::now())
    }

    fn build(cri: Option<CriClient>, events: EventSink, changed: UnboundedSender<String>, start: Instant) -> Self {
        let inner = Inner { cri, events, changed, start, pods: Mutex::new(HashMap::new()) };
        ProbeManager { inner: Arc::new(inner) }
    }

    /// Called by the pod worker on every sync with the pod, its IP and its
    /// running containers (container name -> (CRI id, started_at in unix
    /// nanoseconds as CRI reports it)); starts a worker for every probe of
    /// the pod's containers and sidecars (init containers with
    /// `restartPolicy: Always`) not yet probed, and hands every worker the
    /// current state. A pod in phase Succeeded or Failed has its probes stopped.
    /// Must be called inside a tokio runtime.
    pub fn sync_pod(&self, pod: &Pod, pod_ip: Option<&str>, running: &BTreeMap<String, (String, i64)>) {
        let Some(uid) = pod.metadata.uid.clone() else { return };
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        if matches!(phase, Some("Succeeded" | "Failed")) {
            self.remove_pod(&uid);
            return;
        }
        let pod_arc = Arc::new(pod.clone());
        let spec = pod.spec.clone().unwrap_or_default();
        let sidecars = spec.init_containers.iter().flatten().filter(|c| c.restart_policy.as_deref() == Some("Always"));
        let containers = spec
            .containers
            .iter()
            .map(|c| (c, format!("spec.containers{{{}}}", c.name)))
            .chain(sidecars.map(|c| (c, format!("spec.initContainers{{{}}}", c.name))));
        let mut pods = self.inner.pods.lock().unwrap_or_else(|e| e.into_inner());
        let state = pods.entry(uid.clone()).or_default();
        state.running = running.clone();
        for (c, field_path) in containers {
            let probes = [
                (ProbeKind::Startup, &c.startup_probe),
                (ProbeKind::Liveness, &c.liveness_probe),
                (ProbeKind::Readiness, &c.readiness_probe),
            ];
            for (kind, probe) in probes {
                let Some(probe) = probe else { continue };
                let target = Target {
                    pod: pod_arc.clone(),
                    pod_ip: pod_ip.map(str::to_string),
                    container: running.get(&c.name).cloned(),
                };
                let key = (c.name.clone(), kind);
                if let Some(slot) = state.workers.get(&key) {
                    slot.target.send_replace(target);
                    continue;
                }
                let (tx, rx) = watch::channel(target);
                let trigger = Arc::new(Notify::new());
                let spec = Spec {
                    pod_uid: uid.clone(),
                    container: c.clone(),
                    field_path: field_path.clone(),
                    kind,
                    probe: probe.clone(),
                };
                let w = Worker::new(spec, rx, trigger.clone(), Arc::downgrade(&self.inner));
                tracing::debug!(component = "kubelet", pod_uid = %uid, container = %c.name, probe = kind.name(),
                    "starting probe worker");
                let task = tokio::spawn(w.run());
                state.workers.insert(key, Slot { target: tx, trigger, task });
            }
        }
    }

    /// Stops every probe of the pod and forgets its results.
    pub fn remove_pod(&self, pod_uid: &str) {
        let removed = self.inner.pods.lock().unwrap_or_else(|e| e.into_inner()).remove(pod_uid);
        for slot in removed.into_iter().flat_map(|p| p.workers.into_values()) {
            slot.task.abort();
        }
    }

    /// Stops the liveness and startup probes of the pod (upstream's
    /// `StopLivenessAndStartup`, called when the pod starts terminating so no
    /// probe restarts a container that is being stopped); readiness probes go on.
    pub fn stop_liveness_and_startup(&self, pod_uid: &str) {
        let pods = self.inner.pods.lock().unwrap_or_else(|e| e.into_inner());
        for ((_, kind), slot) in pods.get(pod_uid).into_iter().flat_map(|p| p.workers.iter()) {
            if *kind != ProbeKind::Readiness {
                slot.task.abort();
            }
        }
    }

    /// Whether the container is ready (upstream's `UpdatePodStatus`): false
    /// unless running and started; with a readiness probe, true once it
    /// succeeded for the current container (asking while it has not triggers
    /// a probe at once); without one, true. Works for sidecars (restartable
    /// init containers) too; a regular init container is ready when it exited 0,
    /// which the pod worker decides.
    pub fn readiness(&self, pod_uid: &str, container: &str) -> bool {
        if !self.started(pod_uid, container) {
            return false;
        }
        let pods = self.inner.pods.lock().unwrap_or_else(|e| e.into_inner());
        let Some(p) = pods.get(pod_uid) else { return false };
        let Some((id, _)) = p.running.get(container) else { return false };
        let key = (container.to_string(), ProbeKind::Readiness);
        let Some(slot) = p.workers.get(&key) else { return true };
        if matches!(p.results.get(&key), Some((rid, ProbeResult::Success)) if rid == id) {
            return true;
        }
        slot.trigger.notify_one();
        false
    }

    /// Whether the container has started (upstream's `containerStatus.started`):
    /// false unless running; true without a startup probe; with one, true once
    /// it succeeded for the current container.
    pub fn started(&self, pod_uid: &str, container: &str) -> bool {
        let pods = self.inner.pods.lock().unwrap_or_else(|e| e.into_inner());
        let Some(p) = pods.get(pod_uid) else { return false };
        let Some((id, _)) = p.running.get(container) else { return false };
        started_in(p, container, id)
    }

    /// Containers whose liveness or startup probe failed past its threshold
    /// since the last call: `(container name, "liveness" | "startup")`. The
    /// pod worker kills them (emitting `Killing` "Container x failed liveness
    /// probe, will be restarted"); the probe stays quiet until the container id changes.
    pub fn take_failed(&self, pod_uid: &str) -> Vec<(String, &'static str)> {
        let mut pods = self.inner.pods.lock().unwrap_or_else(|e| e.into_inner());
        pods.get_mut(pod_uid).map(|p| std::mem::take(&mut p.failed)).unwrap_or_default()
    }

    /// The cached result of one probe of the container (for status and tests):
    /// `None` without such a probe or before its worker saw the container.
    pub fn result(&self, pod_uid: &str, container: &str, kind: ProbeKind) -> Option<ProbeResult> {
        let pods = self.inner.pods.lock().unwrap_or_else(|e| e.into_inner());
        pods.get(pod_uid)?.results.get(&(container.to_string(), kind)).map(|(_, r)| *r)
    }
}

/// The grace period, in seconds, for killing a container (upstream's
/// `setTerminationGracePeriod`): the pod's `deletionGracePeriodSeconds` when
/// it is being deleted; else, for a kill because `probe` failed, that probe's
/// `terminationGracePeriodSeconds` if set; else the pod's
/// `terminationGracePeriodSeconds` (default 30).
pub fn kill_grace_period_seconds(pod: &Pod, container: &str, probe: Option<ProbeKind>) -> i64 {
    if let Some(g) = pod.metadata.deletion_grace_period_seconds {
        return g;
    }
    let spec = pod.spec.as_ref();
    let c =
        spec.and_then(|s| s.containers.iter().chain(s.init_containers.iter().flatten()).find(|c| c.name == container));
    let probe_grace = match probe {
        Some(ProbeKind::Liveness) => c.and_then(|c| c.liveness_probe.as_ref()),
        Some(ProbeKind::Startup) => c.and_then(|c| c.startup_probe.as_ref()),
        _ => None,
    }
    .and_then(|p| p.termination_grace_period_seconds);
    probe_grace.or_else(|| spec.and_then(|s| s.termination_grace_period_seconds)).unwrap_or(30)
}

fn started_in(p: &PodProbes, container: &str, id: &str) -> bool {
    let key = (container.to_string(), ProbeKind::Startup);
    if !p.workers.contains_key(&key) {
        return true;
    }
    matches!(p.results.get(&key), Some((rid, ProbeResult::Success)) if rid == id)
}

impl Inner {
    fn with_pod<R>(&self, uid: &str, f: impl FnOnce(&mut PodProbes) -> R) -> Option<R> {
        let mut pods = self.pods.lock().unwrap_or_else(|e| e.into_inner());
        pods.get_mut(uid).map(f)
    }

    /// Caches a result; a change is announced on `changed`.
    fn set_result(&self, uid: &str, container: &str, kind: ProbeKind, id: &str, result: ProbeResult) {
        let changed = self.with_pod(uid, |p| {
            let new = (id.to_string(), result);
            p.results.insert((container.to_string(), kind), new.clone()) != Some(new)
        });
        if changed == Some(true) {
            tracing::debug!(
                component = "kubelet",
                pod_uid = uid,
                container,
                probe = kind.name(),
                ?result,
                "probe result changed"
            );
            let _ = self.changed.send(uid.to_string());
        }
    }

    fn remove_result(&self, uid: &str, container: &str, kind: ProbeKind, id: &str) {
        self.with_pod(uid, |p| {
            let key = (container.to_string(), kind);
            if p.results.get(&key).is_some_and(|(rid, _)| rid == id) {
                p.results.remove(&key);
            }
        });
    }

    fn container_started(&self, uid: &str, container: &str, id: &str) -> bool {
        self.with_pod(uid, |p| started_in(p, container, id)).unwrap_or(false)
    }

    fn push_failed(&self, uid: &str, container: &str, kind: ProbeKind) {
        self.with_pod(uid, |p| {
            if !p.failed.iter().any(|(c, k)| c == container && *k == kind.name()) {
                p.failed.push((container.to_string(), kind.name()));
            }
        });
    }

    /// A Warning event about the container at `field_path` of `pod`.
    fn event(&self, pod: &Pod, field_path: &str, reason: &str, message: String) {
        tracing::debug!(component = "kubelet", pod = ?pod.metadata.name, field_path, reason, %message, "probe");
        let mut regarding = rkube_client::events::reference(pod);
        regarding.field_path = Some(field_path.to_string());
        match &self.events {
            EventSink::Recorder(r) => r.event_on(regarding, rkube_client::events::WARNING, reason, message),
            #[cfg(test)]
            EventSink::Capture(v) => v.lock().unwrap().push((regarding, reason.to_string(), message)),
        }
    }
}

#[cfg(test)]
#[path = "manager_tests.rs"]
mod tests;
