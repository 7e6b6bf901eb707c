//! One scheduling cycle (upstream `schedule_one.go`): pop → snapshot →
//! PreFilter/Filter → PostFilter on failure → Score → select → assume →
//! Reserve → Permit, then the binding cycle (PreBind, Bind, PostBind) in
//! its own task so the next pod is scheduled meanwhile. Failures put the
//! pod back in the queue and are reported as upstream's
//! `handleSchedulingFailure` does: a `FailedScheduling` event and the
//! `PodScheduled=False` condition with the summary message.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::Pod;

use crate::algorithm::{self, Cursor, ScheduleError};
use crate::binder::{self, PodScheduledFalse};
use crate::cache::Cache;
use crate::events::Recorder;
use crate::framework::runtime::Framework;
use crate::framework::{CycleState, NominatingMode, PodInfo, Status};
use crate::queue::{QueuedPodInfo, SchedulingQueue};

/// Upstream `v1.PodReasonUnschedulable`.
pub const REASON_UNSCHEDULABLE: &str = "Unschedulable";
/// Upstream `v1.PodReasonSchedulerError`.
pub const REASON_SCHEDULER_ERROR: &str = "SchedulerError";

/// Looks a pod up in the informer cache (`None` = deleted).
pub type PodLookup = Arc<dyn Fn(&str, &str) -> Option<Arc<Pod>> + Send + Sync>;

/// The scheduler: profiles, cache, queue, and what it writes with.
pub struct Scheduler {
    /// Profiles by schedulerName.
    pub profiles: HashMap<String, Arc<Framework>>,
    /// The cache.
    pub cache: Arc<Mutex<Cache>>,
    /// The queue.
    pub queue: Arc<SchedulingQueue>,
    /// Start index and tie-breaking.
    pub cursor: Mutex<Cursor>,
    /// The API client (`None` in in-process runs: nothing is written).
    pub client: Option<kube::Client>,
    /// Events.
    pub recorder: Recorder,
    /// The informer's view of pods, to drop failures of deleted or bound pods.
    pub lookup: Option<PodLookup>,
}

/// What a failed cycle reports.
struct Failure {
    status: Status,
    message: String,
    unschedulable_plugins: std::collections::BTreeSet<&'static str>,
    pending_plugins: std::collections::BTreeSet<&'static str>,
    nominated: Option<String>,
}

fn scheduler_name(pod: &Pod) -> &str {
    pod.spec.as_ref().and_then(|s| s.scheduler_name.as_deref()).unwrap_or(crate::config::DEFAULT_SCHEDULER_NAME)
}

impl Scheduler {
    /// Pops one pod and schedules it; false once the queue is closed.
    pub async fn schedule_one(self: &Arc<Self>) -> bool {
        let Some((q, cycle)) = self.queue.pop().await else { return false };
        self.schedule_popped(q, cycle).await;
        true
    }

    /// The scheduling cycle for a popped pod.
    pub async fn schedule_popped(self: &Arc<Self>, q: QueuedPodInfo, cycle: u64) {
        let pod = q.pod_info.clone();
        let Some(fwk) = self.profiles.get(scheduler_name(&pod.pod)).cloned() else {
            tracing::error!(component = "kube-scheduler", pod = %pod.key(), "no profile for the pod's schedulerName");
            return;
        };
        if pod.pod.metadata.deletion_timestamp.is_some() {
            return;
        }
        let snapshot = self.cache.lock().unwrap().snapshot();
        let mut state = CycleState::default();
        let result = {
            let mut cursor = self.cursor.lock().unwrap();
            algorithm::schedule_pod(&fwk, &mut state, &pod, &snapshot, &mut cursor)
        };
        let result = match result {
            Ok(r) => r,
            Err(ScheduleError::Fit(mut fe)) => {
                let mut nominated = None;
                if fwk.has_post_filter_plugins() {
                    let (r, s) = fwk.run_post_filter(&snapshot, &state, &pod, &fe.diagnosis.node_to_status).await;
                    fe.diagnosis.post_filter_msg = s.message();
                    if let Some(r) = r.filter(|r| r.mode == NominatingMode::Override) {
                        nominated = Some(r.nominated_node_name);
                    }
                }
                let f = Failure {
                    status: Status::new(crate::framework::Code::Unschedulable, fe.to_string()),
                    message: fe.to_string(),
                    unschedulable_plugins: fe.diagnosis.unschedulable_plugins.clone(),
                    pending_plugins: fe.diagnosis.pending_plugins.clone(),
                    nominated,
                };
                self.handle_failure(&fwk, q, cycle, f).await;
                return;
            }
            Err(e) => {
                let status = match &e {
                    ScheduleError::NoNodes => Status::unresolvable(algorithm::NO_NODES_AVAILABLE),
                    ScheduleError::Internal(s) => s.clone(),
                    ScheduleError::Fit(_) => unreachable!(),
                };
                let f = Failure {
                    status,
                    message: e.to_string(),
                    unschedulable_plugins: Default::default(),
                    pending_plugins: Default::default(),
                    nominated: None,
                };
                self.handle_failure(&fwk, q, cycle, f).await;
                return;
            }
        };
        let host = result.suggested_host;
        // Assume: the pod as if bound, so the next cycle sees the room taken.
        let mut assumed_pod = (*pod.pod).clone();
        assumed_pod.spec.get_or_insert_with(Default::default).node_name = Some(host.clone());
        let assumed = match PodInfo::new(Arc::new(assumed_pod)) {
            Ok(p) => Arc::new(p),
            Err(e) => {
                self.fail_simple(&fwk, q, cycle, Status::error(e)).await;
                return;
            }
        };
        let assumed_ok = self.cache.lock().unwrap().assume_pod(assumed.clone());
        if let Err(e) = assumed_ok {
            self.fail_simple(&fwk, q, cycle, Status::error(e)).await;
            return;
        }
        let s = fwk.run_reserve(&mut state, &assumed, &host);
        if !s.is_success() {
            fwk.run_unreserve(&mut state, &assumed, &host);
            self.cache.lock().unwrap().forget_pod(&assumed.pod);
            self.fail_simple(&fwk, q, cycle, s).await;
            return;
        }
        let (s, wait) = fwk.run_permit(&mut state, &assumed, &host);
        if !s.is_success() {
            fwk.run_unreserve(&mut state, &assumed, &host);
            self.cache.lock().unwrap().forget_pod(&assumed.pod);
            self.fail_simple(&fwk, q, cycle, s).await;
            return;
        }
        // The pod is placed: it no longer needs a nomination.
        self.queue.nominator.delete(&pod.pod);
        let this = self.clone();
        tokio::spawn(async move { this.binding_cycle(fwk, state, q, cycle, assumed, host, wait).await });
    }

    #[allow(clippy::too_many_arguments)]
    async fn binding_cycle(
        self: Arc<Self>,
        fwk: Arc<Framework>,
        mut state: CycleState,
        q: QueuedPodInfo,
        cycle: u64,
        assumed: Arc<PodInfo>,
        host: String,
        wait: Option<(std::time::Duration, &'static str)>,
    ) {
        let mut status = Status::success();
        if let Some((timeout, plugin)) = wait {
            // Nothing can allow a waiting pod yet: it is rejected when the wait ends.
            tokio::time::sleep(timeout).await;
            status = Status::unschedulable([format!(
                "rejected due to timeout after waiting {}s at plugin {plugin}",
                timeout.as_secs()
            )])
            .with_plugin(plugin);
        }
        if status.is_success() {
            status = fwk.run_pre_bind(&state, &assumed, &host).await;
        }
        if status.is_success() {
            status = fwk.run_bind(&state, &assumed, &host).await;
            if status.is_skip() {
                status = Status::error(format!("bind plugins skipped binding pod {}", assumed.key()));
            }
        }
        if !status.is_success() {
            fwk.run_unreserve(&mut state, &assumed, &host);
            self.cache.lock().unwrap().forget_pod(&assumed.pod);
            // The freed room may help others (upstream moves pods on an assigned-pod delete).
            self.queue.move_all_to_active_or_backoff(crate::framework::ClusterEvent {
                resource: crate::framework::EventResource::Pod,
                actions: crate::framework::action::DELETE,
            });
            self.fail_simple(&fwk, q, cycle, status).await;
            return;
        }
        let pod = &assumed.pod;
        tracing::debug!(component = "kube-scheduler", pod = %assumed.key(), node = %host, "bound");
        self.recorder.eventf(
            &fwk.profile_name,
            pod,
            "Normal",
            "Scheduled",
            "Binding",
            format!(
                "Successfully assigned {}/{} to {}",
                pod.metadata.namespace.as_deref().unwrap_or(""),
                pod.metadata.name.as_deref().unwrap_or(""),
                host
            ),
        );
        fwk.run_post_bind(&state, &assumed, &host);
    }

    async fn fail_simple(&self, fwk: &Framework, q: QueuedPodInfo, cycle: u64, status: Status) {
        let rejected = status.is_rejected() && !status.plugin.is_empty();
        let f = Failure {
            message: status.message(),
            unschedulable_plugins: if rejected { [status.plugin].into() } else { Default::default() },
            pending_plugins: Default::default(),
            status,
            nominated: None,
        };
        self.handle_failure(fwk, q, cycle, f).await;
    }

    /// Upstream `handleSchedulingFailure`: event, requeue (unless the pod
    /// is gone or bound meanwhile), nomination, and the status patch.
    async fn handle_failure(&self, fwk: &Framework, mut q: QueuedPodInfo, cycle: u64, f: Failure) {
        let pod = q.pod_info.pod.clone();
        let reason = if f.status.is_rejected() { REASON_UNSCHEDULABLE } else { REASON_SCHEDULER_ERROR };
        tracing::info!(component = "kube-scheduler", pod = %q.pod_info.key(), reason, message = %f.message, "unable to schedule pod");
        self.recorder.eventf(&fwk.profile_name, &pod, "Warning", "FailedScheduling", "Scheduling", f.message.clone());
        let current = match &self.lookup {
            Some(lookup) => {
                match lookup(
                    pod.metadata.namespace.as_deref().unwrap_or(""),
                    pod.metadata.name.as_deref().unwrap_or(""),
                ) {
                    Some(p) if p.metadata.uid == pod.metadata.uid => Some(p),
                    _ => None,
                }
            }
            None => Some(pod.clone()),
        };
        let Some(current) = current else { return };
        if current.spec.as_ref().and_then(|s| s.node_name.as_deref()).is_some_and(|n| !n.is_empty()) {
            return;
        }
        q.unschedulable_plugins = f.unschedulable_plugins;
        q.pending_plugins = f.pending_plugins;
        if let Ok(pi) = PodInfo::new(current.clone()) {
            q.pod_info = Arc::new(pi);
        }
        if let Some(node) = &f.nominated {
            if node.is_empty() {
                self.queue.nominator.delete(&pod);
            } else {
                self.queue.nominator.add(q.pod_info.clone(), node);
            }
        }
        self.queue.add_unschedulable_if_not_present(q, cycle);
        if let Some(client) = &self.client {
            let update =
                PodScheduledFalse { reason: reason.into(), message: f.message, nominated_node_name: f.nominated };
            if let Err(e) = binder::patch_pod_status(client, &current, &update).await {
                tracing::warn!(component = "kube-scheduler", pod = %pod.metadata.name.as_deref().unwrap_or(""), error = %e, "cannot update the pod's status");
            }
        }
    }
}
