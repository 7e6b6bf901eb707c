//! Graceful node shutdown (upstream's `pkg/kubelet/nodeshutdown`, Linux,
//! with `--shutdown-grace-period` and `--shutdown-grace-period-critical-pods`).
//!
//! With a non-zero grace period the manager connects to systemd-logind on
//! the system D-Bus ([`logind`]), checks that logind lets a delay inhibitor
//! hold a shutdown back for the whole period (`InhibitDelayMaxUSec`), takes
//! a `delay` inhibitor lock on `shutdown` and watches `PrepareForShutdown`.
//!
//! On `PrepareForShutdown(true)` (a shutdown begins):
//! - the node is shutting down: its Ready condition goes False with
//!   reason `KubeletNotReady` and the error `node is shutting down` joined
//!   to the others (upstream's ReadyCondition), posted at once; new pods are
//!   rejected by admission with reason `NodeShutdown` and message
//!   `Pod was rejected as the node is shutting down.`;
//! - the active pods are killed in priority groups (upstream's
//!   `migrateConfig` + `groupByPriority`): pods below priority 2000000000
//!   first, for `grace period − critical grace period`, then pods at or
//!   above it (system-cluster-critical, system-node-critical) for the
//!   critical grace period. Each pod's grace period is the group's, or its
//!   own `terminationGracePeriodSeconds` when that is smaller. Each pod is
//!   failed through `pods/status` — phase Failed, reason `Terminated`,
//!   message `Pod was terminated in response to imminent node shutdown.`,
//!   a DisruptionTarget condition with reason `TerminationByKubelet` — and
//!   its pod worker then stops it with that grace period
//!   ([`crate::pods::admission::GraceOverrides`]). The next group starts once
//!   every pod of this one stopped or the group's period passed;
//! - then the inhibitor lock is released (its descriptor closed), which
//!   lets the shutdown proceed.
//!
//! On `PrepareForShutdown(false)` (the shutdown was cancelled) the node is
//! no longer shutting down (Ready comes back, pods are admitted again; the
//! pods already failed stay failed) and the lock is taken again.
//!
//! Where the machine has no system bus or no logind (containers, machines
//! without systemd) the manager logs one error (`failed to start node
//! shutdown manager: …`) and does nothing more; the node runs as usual,
//! as upstream does not block the kubelet's start on it. If the watch
//! ends after a good start (logind or the bus restarted), it is started
//! again every second, as upstream's `dbusReconnectPeriod`.
//!
//! Differences from upstream: rkube never writes logind's configuration
//! (upstream writes `/etc/systemd/logind.conf.d/99-kubelet.conf` and reloads
//! logind when `InhibitDelayMaxSec` is too small): it logs what to set and
//! does not start. No `shutdownGracePeriodByPodPriority` (only the two
//! flags), no SIGUSR1 trigger, no graceful-shutdown state file or metrics;
//! pods already being deleted are left to their own graceful deletion; the
//! group waits for the pods' containers and sandboxes to stop, not for
//! their volumes to be unmounted.

pub mod logind;

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams};
use tokio::sync::watch;

use crate::cri::CriClient;
use crate::pods::admission::{AdmitHandler, GraceOverrides, Rejection};

const COMPONENT: &str = "kubelet";
/// A killed pod's status.reason (upstream's nodeShutdownReason).
pub const NODE_SHUTDOWN_REASON: &str = "Terminated";
/// A killed pod's status.message and DisruptionTarget message (upstream's nodeShutdownMessage).
pub const NODE_SHUTDOWN_MESSAGE: &str = "Pod was terminated in response to imminent node shutdown.";
/// A rejected pod's reason (upstream's NodeShutdownNotAdmittedReason).
pub const NODE_SHUTDOWN_NOT_ADMITTED_REASON: &str = "NodeShutdown";
/// A rejected pod's admission message (upstream's nodeShutdownNotAdmittedMessage).
pub const NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE: &str = "Pod was rejected as the node is shutting down.";
/// The error the Ready condition carries while the node shuts down (upstream's ShutdownStatus).
pub const SHUTTING_DOWN_ERROR: &str = "node is shutting down";
/// Upstream's scheduling.DefaultPriorityWhenNoDefaultClassExists: the non-critical group.
pub const DEFAULT_PRIORITY: i32 = 0;
/// Upstream's scheduling.SystemCriticalPriority: the critical group.
pub const SYSTEM_CRITICAL_PRIORITY: i32 = 2_000_000_000;
/// How long after a lost watch it is started again (upstream's dbusReconnectPeriod).
const RECONNECT_PERIOD: Duration = Duration::from_secs(1);
/// How often a group's pods are checked while the manager waits for them to stop.
const STOPPED_POLL: Duration = Duration::from_secs(1);

/// `--shutdown-grace-period` and `--shutdown-grace-period-critical-pods`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShutdownConfig {
    /// The whole time the node holds its shutdown back (0: disabled).
    pub grace_period: Duration,
    /// The part of it reserved for critical pods (≤ `grace_period`).
    pub critical_pods_grace_period: Duration,
}

/// One priority group (upstream's ShutdownGracePeriodByPodPriority).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PriorityGroup {
    /// The lowest priority of the group.
    pub priority: i32,
    /// How long the group's pods get, in whole seconds.
    pub grace_seconds: i64,
}

impl ShutdownConfig {
    /// Validates the flags with upstream's kubelet configuration checks:
    /// each 0 or at least 1 s, the critical period at most the whole one.
    pub fn new(grace_period: Duration, critical_pods_grace_period: Duration) -> Result<ShutdownConfig, String> {
        // Go prints these durations the same way (`2s`, `500ms`).
        let go = |d: Duration| format!("{d:?}");
        if critical_pods_grace_period > grace_period {
            return Err(format!(
                "invalid configuration: shutdownGracePeriodCriticalPods {} must be <= shutdownGracePeriod {}",
                go(critical_pods_grace_period),
                go(grace_period)
            ));
        }
        for (name, d) in
            [("shutdownGracePeriod", grace_period), ("shutdownGracePeriodCriticalPods", critical_pods_grace_period)]
        {
            if !d.is_zero() && d < Duration::from_secs(1) {
                return Err(format!(
                    "invalid configuration: {name} {} must be either zero or otherwise >= 1 sec",
                    go(d)
                ));
            }
        }
        Ok(ShutdownConfig { grace_period, critical_pods_grace_period })
    }

    /// Whether graceful node shutdown is on (a non-zero grace period).
    pub fn enabled(&self) -> bool {
        !self.groups().is_empty()
    }

    /// The groups, lowest priority first (upstream's migrateConfig): the
    /// default group with the whole period minus the critical one, the
    /// critical group with the critical period; none when disabled.
    pub fn groups(&self) -> Vec<PriorityGroup> {
        if self.grace_period.is_zero() || self.critical_pods_grace_period > self.grace_period {
            return Vec::new();
        }
        let default = self.grace_period - self.critical_pods_grace_period;
        vec![
            PriorityGroup { priority: DEFAULT_PRIORITY, grace_seconds: default.as_secs() as i64 },
            PriorityGroup {
                priority: SYSTEM_CRITICAL_PRIORITY,
                grace_seconds: self.critical_pods_grace_period.as_secs() as i64,
            },
        ]
    }

    /// The inhibit delay the groups need: the sum of their periods.
    pub fn period_requested(&self) -> Duration {
        Duration::from_secs(self.groups().iter().map(|g| g.grace_seconds.max(0) as u64).sum())
    }
}

/// Puts each pod in its group (upstream's groupByPriority): the group with
/// the highest lowest-priority not above the pod's priority; pods below
/// every group go to the first, pods above every group to the last. A pod
/// without `spec.priority` has priority 0. Returns one list per group.
pub fn group_by_priority<'a>(groups: &[PriorityGroup], pods: &'a [Pod]) -> Vec<Vec<&'a Pod>> {
    let mut out: Vec<Vec<&Pod>> = vec![Vec::new(); groups.len()];
    if groups.is_empty() {
        return out;
    }
    for pod in pods {
        let priority = pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0);
        let index = groups.iter().rposition(|g| g.priority <= priority).unwrap_or(0);
        out[index].push(pod);
    }
    out
}

/// The grace period a pod of a group is stopped with: its own
/// `terminationGracePeriodSeconds` when set and not above the group's
/// period, else the group's.
pub fn pod_grace_seconds(pod: &Pod, group_seconds: i64) -> i64 {
    match pod.spec.as_ref().and_then(|s| s.termination_grace_period_seconds) {
        Some(own) if own <= group_seconds => own,
        _ => group_seconds,
    }
}

/// The strategic merge patch of `pods/status` that fails a pod for the
/// shutdown: phase Failed (a Succeeded pod stays Succeeded), upstream's
/// reason and message, and a DisruptionTarget condition
/// (TerminationByKubelet). `now` is an RFC 3339 time.
pub fn shutdown_status_patch(current_phase: Option<&str>, now: &str) -> serde_json::Value {
    let phase = if current_phase == Some("Succeeded") { "Succeeded" } else { "Failed" };
    serde_json::json!({"status": {
        "phase": phase,
        "reason": NODE_SHUTDOWN_REASON,
        "message": NODE_SHUTDOWN_MESSAGE,
        "conditions": [{
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "TerminationByKubelet",
            "message": NODE_SHUTDOWN_MESSAGE,
            "lastTransitionTime": now,
        }],
    }})
}

/// Whether the node is shutting down, shared by the manager (writer), the
/// status loop (Ready, woken on every change) and pod admission; cheap to
/// clone.
#[derive(Clone, Debug)]
pub struct ShutdownState(Arc<watch::Sender<bool>>);

impl Default for ShutdownState {
    fn default() -> Self {
        ShutdownState(Arc::new(watch::channel(false).0))
    }
}

impl ShutdownState {
    /// Whether a shutdown is in progress.
    pub fn shutting_down(&self) -> bool {
        *self.0.borrow()
    }

    /// The Ready condition's error while shutting down (upstream's
    /// ShutdownStatus): `node is shutting down`, else `None`.
    pub fn error(&self) -> Option<&'static str> {
        self.shutting_down().then_some(SHUTTING_DOWN_ERROR)
    }

    /// Sets the state; subscribers are woken when it changes.
    pub fn set(&self, shutting_down: bool) {
        self.0.send_if_modified(|v| std::mem::replace(v, shutting_down) != shutting_down);
    }

    /// A receiver woken on every change (the status loop posts at once).
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.0.subscribe()
    }
}

/// Upstream's shutdown manager Admit: every new pod is refused while the
/// node shuts down.
impl AdmitHandler for ShutdownState {
    fn admit(&self, _pod: &Pod) -> Result<(), Rejection> {
        if self.shutting_down() {
            return Err(Rejection {
                reason: NODE_SHUTDOWN_NOT_ADMITTED_REASON.into(),
                message: NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE.into(),
            });
        }
        Ok(())
    }
}

/// The manager and what it runs with.
pub struct ShutdownManager {
    /// The kubelet's API client (pods of the node, their status).
    pub client: kube::Client,
    /// The runtime (whether a pod still runs).
    pub cri: CriClient,
    /// Records `NodeShutdown` events on the node.
    pub recorder: rkube_client::events::Recorder,
    /// The Node the events are about.
    pub node_ref: ObjectReference,
    /// This node.
    pub node_name: String,
    /// The grace periods.
    pub config: ShutdownConfig,
    /// Published shutting-down state.
    pub state: ShutdownState,
    /// Where the per-pod grace periods go for the pod workers.
    pub grace_overrides: GraceOverrides,
}

/// What a good start holds: the bus, the lock and the signal stream.
struct Session {
    logind: logind::Logind,
    lock: OwnedFd,
    events: std::pin::Pin<Box<dyn futures::Stream<Item = Result<bool, String>> + Send>>,
}

impl ShutdownManager {
    /// Runs until stopped; returns at once when disabled, and after one
    /// logged error when logind cannot be used at start.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        if !self.config.enabled() {
            return;
        }
        tracing::info!(
            component = COMPONENT,
            shutdown_grace_period = ?self.config.grace_period,
            shutdown_grace_period_critical_pods = ?self.config.critical_pods_grace_period,
            "creating node shutdown manager"
        );
        let mut started = false;
        loop {
            let session = tokio::select! {
                s = self.start() => s,
                _ = stop.wait_for(|s| *s) => return,
            };
            match session {
                Err(e) if !started => {
                    tracing::error!(
                        component = COMPONENT,
                        "failed to start node shutdown manager: {e}; pods will not be stopped gracefully when the machine shuts down (graceful node shutdown needs systemd-logind on the system D-Bus; without it, leave --shutdown-grace-period at 0)"
                    );
                    return;
                }
                Err(e) => tracing::error!(component = COMPONENT, "unable to watch the node for shutdown events: {e}"),
                Ok(session) => {
                    if !started {
                        tracing::info!(
                            component = COMPONENT,
                            "node shutdown manager is watching logind for shutdown events"
                        );
                    }
                    started = true;
                    tokio::select! {
                        _ = self.watch(session) => {}
                        _ = stop.wait_for(|s| *s) => return,
                    }
                    tracing::error!(
                        component = COMPONENT,
                        "ended watching the node for shutdown events; restarting the watch"
                    );
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(RECONNECT_PERIOD) => {}
                _ = stop.wait_for(|s| *s) => return,
            }
        }
    }

    /// Connects, checks the inhibit delay, takes the lock, subscribes.
    async fn start(&self) -> Result<Session, String> {
        let logind = logind::Logind::connect().await.map_err(|e| e.to_string())?;
        let current = logind.inhibit_delay_max().await.map_err(|e| e.to_string())?;
        let requested = self.config.period_requested();
        if requested > current {
            return Err(format!(
                "logind's InhibitDelayMaxSec is {}s, less than the requested shutdown grace period {}s (--shutdown-grace-period); \
                 rkube does not change the host's logind configuration: set InhibitDelayMaxSec={} in the [Login] section of a \
                 drop-in such as /etc/systemd/logind.conf.d/99-kubelet.conf, reload logind (systemctl kill -s HUP systemd-logind) \
                 and restart rkube",
                current.as_secs_f64(),
                requested.as_secs(),
                requested.as_secs()
            ));
        }
        let lock = logind.inhibit_shutdown().await.map_err(|e| e.to_string())?;
        // A failed subscription drops (releases) the lock, as upstream.
        let events = logind.prepare_for_shutdown().await.map_err(|e| e.to_string())?;
        Ok(Session { logind, lock, events: Box::pin(events) })
    }

    /// Handles shutdown events until the bus connection ends.
    async fn watch(&self, session: Session) {
        let Session { logind, lock, mut events } = session;
        let mut lock = Some(lock);
        while let Some(event) = events.next().await {
            let shutting_down = match event {
                Ok(b) => b,
                Err(e) => {
                    tracing::error!(component = COMPONENT, "{e}");
                    continue;
                }
            };
            let kind = if shutting_down { "shutdown" } else { "cancelled" };
            tracing::info!(component = COMPONENT, event = kind, "shutdown manager detected new shutdown event");
            let message = if shutting_down {
                "Shutdown manager detected shutdown event"
            } else {
                "Shutdown manager detected shutdown cancellation"
            };
            self.recorder.event_on(self.node_ref.clone(), rkube_client::events::NORMAL, "NodeShutdown", message.into());
            self.state.set(shutting_down);
            if shutting_down {
                self.kill_pods().await;
                // Closing the descriptor releases the lock: the shutdown proceeds.
                drop(lock.take());
                tracing::info!(
                    component = COMPONENT,
                    "shutdown manager completed processing shutdown event, node will shutdown shortly"
                );
            } else {
                match logind.inhibit_shutdown().await {
                    // The previous lock, if any, is released by the replacement.
                    Ok(fd) => lock = Some(fd),
                    Err(e) => tracing::error!(component = COMPONENT, "cannot take the inhibitor lock again: {e}"),
                }
            }
        }
    }

    /// The node's pods that still run or may run (not terminal, not being deleted).
    async fn active_pods(&self) -> Result<Vec<Pod>, String> {
        let api: Api<Pod> = Api::all(self.client.clone());
        let lp = ListParams::default().fields(&format!("spec.nodeName={}", self.node_name));
        let list = api.list(&lp).await.map_err(|e| format!("cannot list the node's pods: {e}"))?;
        Ok(list
            .items
            .into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter(|p| !matches!(p.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded" | "Failed")))
            .collect())
    }

    /// Kills the active pods group by group (upstream's killPods).
    async fn kill_pods(&self) {
        let pods = match self.active_pods().await {
            Ok(p) => p,
            Err(e) => {
                tracing::error!(component = COMPONENT, "shutdown manager: {e}; no pod is stopped gracefully");
                return;
            }
        };
        let groups = self.config.groups();
        for (group, members) in groups.iter().zip(group_by_priority(&groups, &pods)) {
            // No pods in a group: no waiting for it.
            if members.is_empty() {
                continue;
            }
            futures::future::join_all(members.iter().map(|pod| self.kill_pod(pod, group.grace_seconds))).await;
            let uids: Vec<String> = members.iter().filter_map(|p| p.metadata.uid.clone()).collect();
            let deadline = Instant::now() + Duration::from_secs(group.grace_seconds.max(0) as u64);
            loop {
                if self.all_stopped(&uids).await {
                    tracing::info!(
                        component = COMPONENT,
                        grace_period = group.grace_seconds,
                        priority = group.priority,
                        "done waiting for all pods in group to terminate"
                    );
                    break;
                }
                let now = Instant::now();
                if now >= deadline {
                    tracing::info!(
                        component = COMPONENT,
                        grace_period = group.grace_seconds,
                        priority = group.priority,
                        "shutdown manager pod killing time out"
                    );
                    break;
                }
                tokio::time::sleep(STOPPED_POLL.min(deadline - now)).await;
            }
        }
    }

    /// Fails one pod through `pods/status`; its worker stops it with the grace period set here.
    async fn kill_pod(&self, pod: &Pod, group_seconds: i64) {
        let grace = pod_grace_seconds(pod, group_seconds);
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        if let Some(uid) = &pod.metadata.uid {
            self.grace_overrides.set(uid, grace);
        }
        tracing::info!(component = COMPONENT, pod = %format!("{ns}/{name}"), grace_period = grace, "shutdown manager killing pod with gracePeriod");
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        let now = jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
        let patch = shutdown_status_patch(phase, &now);
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
        if let Err(e) = api.patch_status(&name, &PatchParams::default(), &Patch::Strategic(&patch)).await {
            tracing::warn!(component = COMPONENT, pod = %format!("{ns}/{name}"), "shutdown manager failed killing pod: {e}");
        }
    }

    /// Whether nothing of these pods runs any more (a runtime error counts as running).
    async fn all_stopped(&self, uids: &[String]) -> bool {
        for uid in uids {
            match crate::pods::snapshot::PodSnapshot::read(&self.cri, uid).await {
                Ok(s) if !s.anything_running() => {}
                _ => return false,
            }
        }
        true
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
