//! One pod's worker (upstream's podWorkers + kuberuntime `SyncPod` and
//! `KillPod`): it brings what runs on the node in line with the pod as the
//! API has it, one sync at a time, and reports the status.
//!
//! A sync of a live pod: volumes; the sandbox (a new one when there is
//! none ready, unless a `Never` pod already ran); init containers in order
//! (sidecars — init containers with `restartPolicy: Always` — started and
//! kept running); app containers, restarted per restartPolicy with
//! CrashLoopBackOff; containers whose spec changed or whose liveness
//! probe failed are killed and restarted; once the pod is terminal its
//! leftovers are stopped. A pod being deleted is killed gracefully
//! (preStop, the stop signal, KILL after the grace period), reported
//! terminal, then deleted for good with grace 0. A pod gone from the API
//! (force-deleted) is killed and everything it had is removed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Container, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use rkube_client::events::{NORMAL, WARNING};

use super::backoff::Backoff;
use super::context::NodeContext;
use super::snapshot::{Instance, PodSnapshot};
use super::status::{self, is_sidecar, Verdict, Waiting};
use super::{container, hooks, images, labels, sandbox};

/// The Killing event's message for a container in the runtime's unknown
/// state, killed before a new one starts (upstream's computePodActions).
const UNKNOWN_STATE_KILL: &str = "Container is in \"unknown\" state, try killing it before launching new one";

const COMPONENT: &str = "kubelet";
/// Upstream's minimumGracePeriodInSeconds: the least a container gets to stop.
pub const MINIMUM_GRACE_PERIOD_SECONDS: i64 = 2;
/// How often a quiet pod is synced anyway (volume contents, deadlines).
pub const RESYNC_PERIOD: Duration = Duration::from_secs(10);
/// A container that ran this long since its last start has its back-off forgotten.
const BACKOFF_RESET_AFTER: Duration = Duration::from_secs(600);

/// What the worker should do next.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// Sync again after this long (or sooner when something changes).
    After(Duration),
    /// Everything of the pod is gone: the worker ends.
    Done,
}

/// The worker's memory between syncs.
pub struct PodWorker {
    ctx: NodeContext,
    uid: String,
    /// The pod as last seen (kept after it leaves the API, for the kill).
    last: Option<Arc<Pod>>,
    waiting: BTreeMap<String, Waiting>,
    restarts: Backoff,
    pulls: Backoff,
    verdict: Option<Verdict>,
    /// The last FailedMount message, so it is reported once per change.
    mount_error: Option<String>,
    /// The status last written: a static pod has none of its own (its
    /// mirror in the API holds it).
    last_written: Option<k8s_openapi::api::core::v1::PodStatus>,
    /// This sync's pod is static and its mirror has no status yet.
    mirror_without_status: bool,
    /// The container id the ephemeral container being started targets.
    target: Option<String>,
    /// The pod passed the node's admission (or was already running).
    admitted: bool,
}

/// The pod's reference for events, with the fieldPath of container `c`
/// (`spec.containers{c}`, `spec.initContainers{c}` or `spec.ephemeralContainers{c}`).
fn pod_ref(pod: &Pod, c: Option<&Container>, init: bool) -> ObjectReference {
    let mut r = rkube_client::events::reference(pod);
    if let Some(c) = c {
        let ephemeral = pod.spec.iter().flat_map(|s| s.ephemeral_containers.iter().flatten()).any(|e| e.name == c.name);
        let field = match (init, ephemeral) {
            (true, _) => "initContainers",
            (false, true) => "ephemeralContainers",
            (false, false) => "containers",
        };
        r.field_path = Some(format!("spec.{field}{{{}}}", c.name));
    }
    r
}

/// The pod's ephemeral containers as containers (the same fields), each
/// with the container whose process namespace it targets, if any.
pub fn ephemeral_containers(pod: &Pod) -> Vec<(Container, Option<String>)> {
    let list = pod.spec.as_ref().and_then(|s| s.ephemeral_containers.clone()).unwrap_or_default();
    list.into_iter()
        .filter_map(|e| {
            let target = e.target_container_name.clone();
            let mut v = serde_json::to_value(&e).ok()?;
            v.as_object_mut()?.remove("targetContainerName");
            Some((serde_json::from_value(v).ok()?, target))
        })
        .collect()
}

/// `name_namespace(uid)`: how upstream's messages name a pod.
pub fn pod_desc(pod: &Pod) -> String {
    format!(
        "{}_{}({})",
        pod.metadata.name.as_deref().unwrap_or(""),
        pod.metadata.namespace.as_deref().unwrap_or(""),
        pod.metadata.uid.as_deref().unwrap_or("")
    )
}

fn grace_period(pod: &Pod) -> i64 {
    pod.metadata
        .deletion_grace_period_seconds
        .or_else(|| pod.spec.as_ref().and_then(|s| s.termination_grace_period_seconds))
        .unwrap_or(30)
}

fn spec_of(pod: &Pod) -> k8s_openapi::api::core::v1::PodSpec {
    pod.spec.clone().unwrap_or_default()
}

impl PodWorker {
    /// A worker for the pod `uid`.
    pub fn new(ctx: NodeContext, uid: String) -> PodWorker {
        PodWorker {
            ctx,
            uid,
            last: None,
            waiting: BTreeMap::new(),
            restarts: Backoff::default(),
            pulls: Backoff::default(),
            verdict: None,
            mount_error: None,
            last_written: None,
            mirror_without_status: false,
            target: None,
            admitted: false,
        }
    }

    /// One sync against `pod` (None: the pod is gone from the API).
    pub async fn sync(&mut self, pod: Option<Arc<Pod>>) -> Next {
        // A static pod carries its mirror's status; without one (no mirror
        // yet, or a new one) the status last written stands in and is written again.
        self.mirror_without_status = pod.as_ref().is_some_and(|p| is_static(p) && p.status.is_none());
        let pod = pod.map(|p| match (&p.status, &self.last_written) {
            (None, Some(st)) if is_static(&p) => {
                let mut with = (*p).clone();
                with.status = Some(st.clone());
                Arc::new(with)
            }
            _ => p,
        });
        if let Some(p) = &pod {
            self.last = Some(p.clone());
        }
        let snap = match PodSnapshot::read(&self.ctx.cri, &self.uid).await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(component = COMPONENT, pod = %self.uid, "cannot read the pod's containers from the runtime: {e}");
                return Next::After(Duration::from_secs(2));
            }
        };
        match pod {
            None => self.remove(&snap).await,
            Some(pod) if pod.metadata.deletion_timestamp.is_some() => self.terminate(&pod, &snap).await,
            Some(pod) => self.sync_live(&pod, snap).await,
        }
    }

    /// The pod left the API: kill what runs (grace from the last-known pod,
    /// at least 2 s) and remove every trace of it.
    async fn remove(&mut self, snap: &PodSnapshot) -> Next {
        let grace = self.last.as_deref().map(|p| p.metadata.deletion_grace_period_seconds.unwrap_or(0)).unwrap_or(0);
        if let Some(pod) = self.last.clone() {
            self.kill_pod(&pod, snap, Some(grace.max(MINIMUM_GRACE_PERIOD_SECONDS))).await;
        } else {
            for c in snap.containers.values().flatten().filter(|c| c.running()) {
                let _ = self.ctx.cri.stop_container(&c.id, MINIMUM_GRACE_PERIOD_SECONDS).await;
            }
        }
        for c in snap.containers.values().flatten() {
            if let Err(e) = self.ctx.cri.remove_container(&c.id).await {
                if !e.is_not_found() {
                    tracing::warn!(component = COMPONENT, pod = %self.uid, "cannot remove container {}: {e}", c.id);
                    return Next::After(Duration::from_secs(2));
                }
            }
        }
        for s in &snap.sandboxes {
            let _ = self.ctx.cri.stop_pod_sandbox(&s.id).await;
            if let Err(e) = self.ctx.cri.remove_pod_sandbox(&s.id).await {
                if !e.is_not_found() {
                    tracing::warn!(component = COMPONENT, pod = %self.uid, "cannot remove sandbox {}: {e}", s.id);
                    return Next::After(Duration::from_secs(2));
                }
            }
        }
        if let Err(e) = self.ctx.volumes.teardown(&self.uid).await {
            tracing::warn!(component = COMPONENT, pod = %self.uid, "cannot clean up the pod's volumes: {e}");
            return Next::After(Duration::from_secs(5));
        }
        self.ctx.prober.remove_pod(&self.uid);
        self.ctx.grace_overrides.remove(&self.uid);
        if let Some(pod) = &self.last {
            let qos = super::resources::qos_class(pod);
            super::resources::remove_pod_cgroup(&self.ctx.node_name, &self.uid, qos);
            let meta = &pod.metadata;
            let dir = labels::pod_log_dir(
                meta.namespace.as_deref().unwrap_or(""),
                meta.name.as_deref().unwrap_or(""),
                &self.uid,
            );
            let _ = std::fs::remove_dir_all(dir);
            super::logs_links::remove_dangling();
        }
        tracing::info!(component = COMPONENT, pod = %self.uid, "pod removed from the node");
        Next::Done
    }

    /// Graceful deletion: kill, report terminal, then delete with grace 0.
    async fn terminate(&mut self, pod: &Arc<Pod>, snap: &PodSnapshot) -> Next {
        if snap.anything_running() {
            self.kill_pod(pod, snap, None).await;
        }
        let snap = PodSnapshot::read(&self.ctx.cri, &self.uid).await.unwrap_or_default();
        if snap.anything_running() {
            return Next::After(Duration::from_secs(1));
        }
        self.write_status(pod, &snap, true).await;
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        let dp = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions { uid: Some(self.uid.clone()), resource_version: None }),
            ..Default::default()
        };
        match Api::<Pod>::namespaced(self.ctx.client.clone(), &ns).delete(&name, &dp).await {
            Ok(_) => Next::After(RESYNC_PERIOD),
            Err(e) if rkube_client::errors::is_not_found(&e) || rkube_client::errors::is_conflict(&e) => {
                Next::After(RESYNC_PERIOD)
            }
            Err(e) => {
                tracing::warn!(component = COMPONENT, pod = %pod_desc(pod), "cannot delete the terminated pod: {e}");
                Next::After(Duration::from_secs(2))
            }
        }
    }

    /// Kills the pod's containers — app containers together, then sidecars
    /// in reverse order — then stops its sandboxes.
    async fn kill_pod(&mut self, pod: &Pod, snap: &PodSnapshot, grace_override: Option<i64>) {
        let spec = spec_of(pod);
        let running: Vec<&Instance> = snap.containers.values().flatten().filter(|c| c.running()).collect();
        let is_app = |name: &str| spec.containers.iter().any(|c| c.name == name);
        let apps: Vec<&Instance> = running.iter().copied().filter(|i| is_app(&i.name)).collect();
        let kills = apps.iter().map(|i| self.kill_container(pod, i, "", grace_override));
        futures::future::join_all(kills).await;
        let inits = spec.init_containers.clone().unwrap_or_default();
        for c in inits.iter().rev() {
            if let Some(i) = running.iter().find(|i| i.name == c.name) {
                self.kill_container(pod, i, "", grace_override).await;
            }
        }
        for i in running.iter().filter(|i| !is_app(&i.name) && !inits.iter().any(|c| c.name == i.name)) {
            self.kill_container(pod, i, "", grace_override).await;
        }
        for s in snap.sandboxes.iter().filter(|s| s.ready) {
            if let Err(e) = self.ctx.cri.stop_pod_sandbox(&s.id).await {
                tracing::warn!(component = COMPONENT, pod = %pod_desc(pod), "cannot stop the pod sandbox: {e}");
            }
        }
    }

    /// Stops one container: Killing event, preStop hook within the grace
    /// period, then the stop signal with what is left (at least 2 s), as
    /// upstream's killContainer.
    async fn kill_container(&self, pod: &Pod, inst: &Instance, message: &str, grace_override: Option<i64>) {
        let spec = spec_of(pod);
        let (c, init) = match spec.containers.iter().find(|c| c.name == inst.name) {
            Some(c) => (Some(c), false),
            None => (spec.init_containers.iter().flatten().find(|c| c.name == inst.name), true),
        };
        let msg = if message.is_empty() { format!("Stopping container {}", inst.name) } else { message.to_string() };
        self.ctx.recorder.event_on(pod_ref(pod, c, init), NORMAL, "Killing", msg);
        let mut grace = grace_override.unwrap_or_else(|| grace_period(pod));
        if let Some(hook) = c.and_then(|c| c.lifecycle.as_ref()).and_then(|l| l.pre_stop.as_ref()) {
            let started = Instant::now();
            let run = hooks::run(&self.ctx, pod, &inst.id, hook);
            match tokio::time::timeout(Duration::from_secs(grace.max(0) as u64), run).await {
                Ok(Err(e)) => self.ctx.recorder.event_on(
                    pod_ref(pod, c, init),
                    WARNING,
                    "FailedPreStopHook",
                    format!("PreStopHook failed: {e}"),
                ),
                Ok(Ok(())) => {}
                Err(_) => {
                    tracing::info!(component = COMPONENT, pod = %pod_desc(pod), container = %inst.name, "preStop hook did not complete within the grace period")
                }
            }
            grace -= started.elapsed().as_secs() as i64;
        }
        let grace = grace.max(MINIMUM_GRACE_PERIOD_SECONDS);
        if let Err(e) = self.ctx.cri.stop_container(&inst.id, grace).await {
            if !e.is_not_found() {
                tracing::warn!(component = COMPONENT, pod = %pod_desc(pod), container = %inst.name, "cannot stop the container: {e}");
            }
        }
    }

    /// Container garbage collection within the pod (upstream's
    /// MaxPerPodContainer = 1): per container name the newest instance and
    /// one exited instance before it (lastState, `logs --previous`) are
    /// kept; older exited instances and their log files are removed.
    async fn collect_garbage(&self, pod: &Pod, snap: &mut PodSnapshot) {
        let meta = &pod.metadata;
        let dir =
            labels::pod_log_dir(meta.namespace.as_deref().unwrap_or(""), meta.name.as_deref().unwrap_or(""), &self.uid);
        for (name, instances) in snap.containers.iter_mut() {
            let mut kept = Vec::new();
            for (i, inst) in instances.drain(..).enumerate() {
                if i < 2 || !inst.exited() {
                    kept.push(inst);
                    continue;
                }
                match self.ctx.cri.remove_container(&inst.id).await {
                    Ok(()) => {
                        let _ = std::fs::remove_file(dir.join(labels::container_log_path(name, inst.attempt)));
                    }
                    Err(e) => {
                        tracing::debug!(component = COMPONENT, pod = %pod_desc(pod), "cannot remove dead container {}: {e}", inst.id);
                        kept.push(inst);
                    }
                }
            }
            *instances = kept;
        }
    }

    /// A live pod: make the runtime match the spec, then report.
    async fn sync_live(&mut self, pod: &Arc<Pod>, mut snap: PodSnapshot) -> Next {
        let spec = spec_of(pod);
        self.collect_garbage(pod, &mut snap).await;
        let terminal = matches!(pod.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded" | "Failed"));
        if terminal || self.verdict.is_some() {
            if snap.anything_running() {
                let grace = self.ctx.grace_overrides.get(&self.uid);
                self.kill_pod(pod, &snap, grace).await;
                snap = PodSnapshot::read(&self.ctx.cri, &self.uid).await.unwrap_or(snap);
            }
            self.write_status(pod, &snap, false).await;
            return Next::After(RESYNC_PERIOD);
        }
        // activeDeadlineSeconds, counted from the pod's startTime.
        if let (Some(ads), Some(start)) =
            (spec.active_deadline_seconds, pod.status.as_ref().and_then(|s| s.start_time.as_ref()))
        {
            let elapsed = jiff::Timestamp::now().duration_since(start.0).as_secs();
            if elapsed >= ads {
                let message = "Pod was active on the node longer than the specified deadline".to_string();
                self.ctx.recorder.event_on(pod_ref(pod, None, false), NORMAL, "DeadlineExceeded", message.clone());
                self.verdict = Some(Verdict { phase: "Failed", reason: "DeadlineExceeded".into(), message });
                self.kill_pod(pod, &snap, None).await;
                let snap = PodSnapshot::read(&self.ctx.cri, &self.uid).await.unwrap_or(snap);
                self.write_status(pod, &snap, false).await;
                return Next::After(RESYNC_PERIOD);
            }
        }
        if !self.admitted {
            // Only a pod with nothing in the runtime is new to the node.
            if snap.sandboxes.is_empty() && snap.containers.is_empty() {
                if let Err(r) = self.ctx.admission.admit(pod) {
                    tracing::info!(component = COMPONENT, pod = %pod_desc(pod), reason = %r.reason, "pod rejected: {}", r.message);
                    self.ctx.recorder.event_on(pod_ref(pod, None, false), WARNING, &r.reason, r.message.clone());
                    let message = super::admission::rejected_message(&r);
                    self.verdict = Some(Verdict { phase: "Failed", reason: r.reason, message });
                    self.write_status(pod, &snap, false).await;
                    return Next::After(RESYNC_PERIOD);
                }
            }
            self.admitted = true;
        }
        let mut next = RESYNC_PERIOD;
        if let Some(ads) = spec.active_deadline_seconds {
            next = next.min(Duration::from_secs(ads.max(1) as u64));
        }

        // Volumes first: nothing starts without them.
        let vols = match self.ctx.volumes.setup(pod).await {
            Ok(v) => {
                self.mount_error = None;
                v
            }
            Err(e) => {
                let msg = e.to_string();
                if self.mount_error.as_deref() != Some(&msg) {
                    self.ctx.recorder.event_on(pod_ref(pod, None, false), WARNING, "FailedMount", msg.clone());
                    self.mount_error = Some(msg);
                }
                self.write_status(pod, &snap, false).await;
                return Next::After(Duration::from_secs(2));
            }
        };

        // The sandbox.
        let policy = spec.restart_policy.clone().unwrap_or_else(|| "Always".into());
        let sandbox_ok = snap.sandbox().is_some_and(|s| s.ready);
        if !sandbox_ok {
            let ran_before = !snap.containers.is_empty();
            if ran_before && policy == "Never" {
                // A Never pod whose sandbox died is over: report what ran.
                self.write_status(pod, &snap, false).await;
                return Next::After(RESYNC_PERIOD);
            }
            if ran_before {
                self.kill_pod(pod, &snap, None).await;
            }
            let attempt = snap.sandbox().map(|s| s.attempt + 1).unwrap_or(0);
            if let Err(e) = self.create_sandbox(pod, attempt).await {
                self.ctx.recorder.event_on(pod_ref(pod, None, false), WARNING, "FailedCreatePodSandBox", e);
                self.write_status(pod, &snap, false).await;
                return Next::After(Duration::from_secs(5));
            }
            snap = PodSnapshot::read(&self.ctx.cri, &self.uid).await.unwrap_or(snap);
        }
        let Some(sb) = snap.sandbox().filter(|s| s.ready).cloned() else {
            return Next::After(Duration::from_secs(1));
        };
        let pod_ips = sb.ips.clone();

        // Probes follow the running containers.
        let running: BTreeMap<String, (String, i64)> = snap
            .containers
            .iter()
            .filter_map(|(n, v)| v.first().filter(|i| i.running()).map(|i| (n.clone(), (i.id.clone(), i.started_at))))
            .collect();
        self.ctx.prober.sync_pod(pod, pod_ips.first().map(String::as_str), &running);
        let failed_probes = self.ctx.prober.take_failed(&self.uid);

        let mut started_any = false;
        // Init containers in order; sidecars must be running and started before the next.
        let inits = spec.init_containers.clone().unwrap_or_default();
        let mut init_done = true;
        for c in &inits {
            let cur = snap.current(&c.name).cloned();
            if is_sidecar(c) {
                match cur {
                    Some(i) if i.running() => {
                        if let Some((_, probe)) = failed_probes.iter().find(|(n, _)| n == &c.name) {
                            let msg = format!("Container {} failed {probe} probe, will be restarted", c.name);
                            self.kill_container(pod, &i, &msg, None).await;
                            next = Duration::from_secs(1);
                        }
                        if !self.ctx.prober.started(&self.uid, &c.name) {
                            init_done = false;
                            break;
                        }
                    }
                    prev => {
                        match self.start_container(pod, c, true, &sb, prev.as_ref(), &vols, &pod_ips).await {
                            Some(wait) => next = next.min(wait),
                            None => started_any = true,
                        }
                        init_done = false;
                        break;
                    }
                }
                continue;
            }
            let succeeded =
                snap.containers.get(&c.name).is_some_and(|v| v.iter().any(|i| i.exited() && i.exit_code == 0));
            if succeeded {
                continue;
            }
            init_done = false;
            // A Created one was never started (rkube stopped between create and start, since a
            // failed start removes it): start a new one, as upstream's computeInitContainerActions;
            // an Unknown one is killed first.
            match cur {
                Some(i) if i.running() => {}
                Some(i) if i.exited() && policy == "Never" => {} // the pod fails (status decides)
                prev => {
                    if let Some(i) = prev.as_ref().filter(|i| i.state == super::snapshot::State::Unknown) {
                        self.kill_container(pod, i, UNKNOWN_STATE_KILL, None).await;
                    }
                    match self.start_container(pod, c, true, &sb, prev.as_ref(), &vols, &pod_ips).await {
                        Some(wait) => next = next.min(wait),
                        None => started_any = true,
                    }
                }
            }
            break;
        }

        if init_done {
            for c in &spec.containers {
                let cur = snap.current(&c.name).cloned();
                match cur {
                    Some(i) if i.running() => {
                        self.forget_backoff_if_stable(c, &i);
                        if i.hash != container::hash(c) && !i.hash.is_empty() {
                            let msg = format!("Container {} definition changed, will be restarted", c.name);
                            self.kill_container(pod, &i, &msg, None).await;
                            next = Duration::from_secs(1);
                        } else if let Some((_, probe)) = failed_probes.iter().find(|(n, _)| n == &c.name) {
                            let msg = format!("Container {} failed {probe} probe, will be restarted", c.name);
                            self.kill_container(pod, &i, &msg, None).await;
                            next = Duration::from_secs(1);
                        }
                    }
                    Some(i) if i.exited() => {
                        let restart = match policy.as_str() {
                            "Always" => true,
                            "OnFailure" => i.exit_code != 0,
                            _ => false,
                        };
                        if restart {
                            match self.start_container(pod, c, false, &sb, Some(&i), &vols, &pod_ips).await {
                                Some(wait) => next = next.min(wait),
                                None => started_any = true,
                            }
                        }
                    }
                    // Created, never started (rkube stopped between create and start; a failed
                    // start removes it) or Unknown (rkube was killed while the runtime made it):
                    // upstream's ShouldContainerBeRestarted always starts a new one, whatever the
                    // restart policy, and computePodActions kills an Unknown one first so that two
                    // instances never run.
                    Some(i) => {
                        if i.state == super::snapshot::State::Unknown {
                            self.kill_container(pod, &i, UNKNOWN_STATE_KILL, None).await;
                        }
                        match self.start_container(pod, c, false, &sb, Some(&i), &vols, &pod_ips).await {
                            Some(wait) => next = next.min(wait),
                            None => started_any = true,
                        }
                    }
                    None => match self.start_container(pod, c, false, &sb, None, &vols, &pod_ips).await {
                        Some(wait) => next = next.min(wait),
                        None => started_any = true,
                    },
                }
            }
        }
        // Ephemeral containers (`kubectl debug`): started once, never restarted.
        if init_done {
            for (c, target) in ephemeral_containers(pod) {
                if snap.current(&c.name).is_some() {
                    continue;
                }
                self.target = target.and_then(|t| snap.current(&t).filter(|i| i.running()).map(|i| i.id.clone()));
                match self.start_container(pod, &c, false, &sb, None, &vols, &pod_ips).await {
                    Some(wait) => next = next.min(wait),
                    None => started_any = true,
                }
                self.target = None;
            }
        }
        if started_any {
            snap = PodSnapshot::read(&self.ctx.cri, &self.uid).await.unwrap_or(snap);
            let running: BTreeMap<String, (String, i64)> = snap
                .containers
                .iter()
                .filter_map(|(n, v)| {
                    v.first().filter(|i| i.running()).map(|i| (n.clone(), (i.id.clone(), i.started_at)))
                })
                .collect();
            self.ctx.prober.sync_pod(pod, pod_ips.first().map(String::as_str), &running);
        }
        // A terminal pod has nothing running when it is reported terminal
        // (upstream since 1.27): stop its sidecars and sandbox first.
        let phase = self.compute_status(pod, &snap, false).phase;
        if matches!(phase.as_deref(), Some("Succeeded" | "Failed")) && snap.anything_running() {
            self.kill_pod(pod, &snap, None).await;
            snap = PodSnapshot::read(&self.ctx.cri, &self.uid).await.unwrap_or(snap);
        }
        self.write_status(pod, &snap, false).await;
        Next::After(next)
    }

    fn forget_backoff_if_stable(&mut self, c: &Container, i: &Instance) {
        let ran = jiff::Timestamp::now().as_nanosecond() - i.started_at as i128;
        if i.started_at > 0 && ran > BACKOFF_RESET_AFTER.as_nanos() as i128 {
            self.restarts.reset(&format!("{}/{}", self.uid, c.name));
            self.waiting.remove(&c.name);
        }
    }

    async fn create_sandbox(&mut self, pod: &Pod, attempt: u32) -> Result<(), String> {
        let config =
            sandbox::config(pod, attempt, &self.ctx).map_err(|e| format!("Failed to create pod sandbox: {e}"))?;
        let log_dir = std::path::PathBuf::from(&config.log_directory);
        std::fs::create_dir_all(&log_dir)
            .map_err(|e| format!("Failed to create pod sandbox: cannot create {}: {e}", log_dir.display()))?;
        let handler = spec_of(pod).runtime_class_name.unwrap_or_default();
        self.ctx
            .cri
            .run_pod_sandbox(config, &handler)
            .await
            .map(|_| ())
            .map_err(|e| format!("Failed to create pod sandbox: {e}"))
    }

    /// Starts (or restarts) container `c`. None: started. Some(wait): not
    /// started (back-off, pull failure, config error): sync again after
    /// `wait`. The reason is kept for the status.
    #[allow(clippy::too_many_arguments)]
    async fn start_container(
        &mut self,
        pod: &Pod,
        c: &Container,
        init: bool,
        sb: &super::snapshot::Sandbox,
        prev: Option<&Instance>,
        vols: &super::volumes::PodVolumes,
        pod_ips: &[String],
    ) -> Option<Duration> {
        let key = format!("{}/{}", self.uid, c.name);
        let now = Instant::now();
        let r = pod_ref(pod, Some(c), init);
        if prev.is_some() {
            let remaining = self.restarts.remaining(&key, now);
            if !remaining.is_zero() {
                let delay = self.restarts.current(&key);
                let message = format!(
                    "back-off {} restarting failed container={} pod={}",
                    humanize(delay),
                    c.name,
                    pod_desc(pod)
                );
                if self.waiting.get(&c.name).map(|w| w.reason.as_str()) != Some("CrashLoopBackOff") {
                    self.ctx.recorder.event_on(
                        r.clone(),
                        WARNING,
                        "BackOff",
                        format!("Back-off restarting failed container {} in pod {}", c.name, pod_desc(pod)),
                    );
                }
                self.waiting.insert(c.name.clone(), Waiting { reason: "CrashLoopBackOff".into(), message });
                return Some(remaining);
            }
        }
        let sandbox_config = match sandbox::config(pod, sb.attempt, &self.ctx) {
            Ok(c) => c,
            Err(e) => return Some(self.fail(&c.name, r, "CreateContainerConfigError", e)),
        };
        // The image.
        if let Err((reason, message, wait)) =
            images::ensure(&self.ctx, pod, c, &r, &mut self.pulls, &sandbox_config, self.waiting.get(&c.name)).await
        {
            self.waiting.insert(c.name.clone(), Waiting { reason, message });
            return Some(wait);
        }
        // Env and mounts.
        let host_ips: Vec<std::net::IpAddr> = self.ctx.host_ips.clone();
        let env_ctx =
            match super::env::load_env_context(&self.ctx.client, pod, &self.ctx.node_name, &host_ips, pod_ips).await {
                Ok(e) => e,
                Err(e) => return Some(self.fail(&c.name, r, "CreateContainerConfigError", e.to_string())),
            };
        let env = match super::env::container_env(pod, c, &env_ctx) {
            Ok(e) => e,
            Err(e) => return Some(self.fail(&c.name, r, "CreateContainerConfigError", e.to_string())),
        };
        let mut mounts = match self.ctx.volumes.container_mounts(pod, c, vols, &env) {
            Ok(m) => m,
            Err(e) => return Some(self.fail(&c.name, r, "CreateContainerConfigError", e.to_string())),
        };
        match self.etc_hosts(pod, pod_ips) {
            Ok(hosts) => mounts.extend(super::etc_hosts::mount(c, &hosts)),
            Err(e) => return Some(self.fail(&c.name, r, "CreateContainerConfigError", e)),
        }
        let attempt = prev.map(|p| p.attempt + 1).unwrap_or(0);
        let resources = super::resources::linux_container_resources(pod, c, self.ctx.node_memory_bytes);
        let mut config = container::config(pod, c, container::Instance { attempt, env: &env, mounts, resources });
        if let Some(target) = &self.target {
            // An ephemeral container joins its target's process namespace.
            if let Some(ns) = config
                .linux
                .as_mut()
                .and_then(|l| l.security_context.as_mut())
                .and_then(|s| s.namespace_options.as_mut())
            {
                ns.pid = crate::cri::v1::NamespaceMode::Target as i32;
                ns.target_id = target.clone();
            }
        }
        let id = match self.ctx.cri.create_container(&sb.id, config, sandbox_config).await {
            Ok(id) => id,
            Err(e) => return Some(self.fail(&c.name, r, "CreateContainerError", e.to_string())),
        };
        self.ctx.recorder.event_on(r.clone(), NORMAL, "Created", format!("Created container: {}", c.name));
        if let Err(e) = self.ctx.cri.start_container(&id).await {
            let _ = self.ctx.cri.remove_container(&id).await;
            return Some(self.fail(&c.name, r, "RunContainerError", e.to_string()));
        }
        self.ctx.recorder.event_on(r.clone(), NORMAL, "Started", format!("Started container {}", c.name));
        super::logs_links::link(pod, &c.name, &id, attempt);
        if prev.is_some() {
            self.restarts.next(&key, now);
        }
        self.waiting.remove(&c.name);
        // postStart: a failure kills the container (upstream: FailedPostStartHook).
        if let Some(hook) = c.lifecycle.as_ref().and_then(|l| l.post_start.as_ref()) {
            if let Err(e) = hooks::run(&self.ctx, pod, &id, hook).await {
                self.ctx.recorder.event_on(
                    r.clone(),
                    WARNING,
                    "FailedPostStartHook",
                    format!("PostStartHook failed: {e}"),
                );
                let _ = self.ctx.cri.stop_container(&id, MINIMUM_GRACE_PERIOD_SECONDS).await;
            }
        }
        None
    }

    /// Writes the pod's managed /etc/hosts and returns its path.
    fn etc_hosts(&self, pod: &Pod, pod_ips: &[String]) -> Result<std::path::PathBuf, String> {
        let text = if spec_of(pod).host_network == Some(true) {
            super::etc_hosts::host_network_content(pod, &std::fs::read_to_string("/etc/hosts").unwrap_or_default())
        } else {
            let (host, domain) =
                super::dns::pod_hostname_and_domain(pod, &self.ctx.dns.cluster_domain).map_err(|e| e.to_string())?;
            super::etc_hosts::content(pod, pod_ips, &host, Some(domain.as_str()).filter(|d| !d.is_empty()))
        };
        super::etc_hosts::write(&self.ctx.volumes.pod_dir(&self.uid), &text)
            .map_err(|e| format!("cannot write the pod's /etc/hosts: {e}"))
    }

    /// Records a failed start: a Warning `Failed` event `Error: <message>`
    /// and the waiting reason; retried with the restart back-off.
    fn fail(&mut self, container: &str, r: ObjectReference, reason: &str, message: String) -> Duration {
        tracing::warn!(component = COMPONENT, pod = %self.uid, container, reason, "{message}");
        self.ctx.recorder.event_on(r, WARNING, "Failed", format!("Error: {message}"));
        self.waiting.insert(container.to_string(), Waiting { reason: reason.into(), message });
        let key = format!("{}/{}", self.uid, container);
        self.restarts.next(&key, Instant::now())
    }

    /// The status the runtime's state amounts to.
    fn compute_status(
        &self,
        pod: &Pod,
        snap: &PodSnapshot,
        terminating: bool,
    ) -> k8s_openapi::api::core::v1::PodStatus {
        let prober = self.ctx.prober.clone();
        let uid = self.uid.clone();
        let ready = |c: &str| prober.readiness(&uid, c);
        let started = |c: &str| prober.started(&uid, c);
        let host_ips: Vec<String> = self.ctx.host_ips.iter().map(|i| i.to_string()).collect();
        // A pod being deleted ends terminal (upstream since 1.27): Succeeded
        // when every container exited 0, else Failed.
        let verdict = self.verdict.clone();
        let inputs = status::Inputs {
            pod,
            snapshot: snap,
            waiting: &self.waiting,
            ready: &ready,
            started: &started,
            host_ips: &host_ips,
            verdict: verdict.as_ref(),
            terminating,
            now: Time(jiff::Timestamp::now().round(jiff::Unit::Second).unwrap_or_else(|_| jiff::Timestamp::now())),
        };
        status::pod_status(&inputs)
    }

    /// Computes the status and patches it when it changed; returns the phase.
    async fn write_status(&mut self, pod: &Pod, snap: &PodSnapshot, terminating: bool) -> Option<String> {
        let new = self.compute_status(pod, snap, terminating);
        let phase = new.phase.clone();
        if pod.status.as_ref() == Some(&new) && !self.mirror_without_status {
            return phase;
        }

        let mut body = serde_json::to_value(&new).unwrap_or_default();
        if let Some(o) = body.as_object_mut() {
            for k in ["reason", "message"] {
                o.entry(k).or_insert(serde_json::Value::Null);
            }
        }
        let patch = serde_json::json!({"status": body});
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(self.ctx.client.clone(), &ns);
        match api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => self.last_written = Some(new),
            Err(e) if rkube_client::errors::is_not_found(&e) => {}
            Err(e) => tracing::warn!(component = COMPONENT, pod = %pod_desc(pod), "cannot update the pod status: {e}"),
        }
        phase
    }
}

/// Whether `pod` came from a manifest file (a static pod).
fn is_static(pod: &Pod) -> bool {
    pod.metadata.annotations.as_ref().and_then(|a| a.get(super::static_pods::CONFIG_SOURCE)).map(String::as_str)
        == Some("file")
}

/// Go's `time.Duration` string for whole seconds and minutes (`10s`, `5m0s`, `2m40s`).
pub fn humanize(d: Duration) -> String {
    let s = d.as_secs();
    if s < 60 {
        format!("{s}s")
    } else {
        format!("{}m{}s", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_off_delays_print_as_go_durations() {
        assert_eq!(humanize(Duration::from_secs(10)), "10s");
        assert_eq!(humanize(Duration::from_secs(160)), "2m40s");
        assert_eq!(humanize(Duration::from_secs(300)), "5m0s");
    }
}
