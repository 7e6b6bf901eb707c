//! The scheduling queue (upstream `pkg/scheduler/backend/queue`):
//!
//! - activeQ: pods ready to schedule, popped in PrioritySort order
//!   (priority desc, then the time they entered the queue);
//! - backoffQ: pods that failed, waiting `podInitialBackoffSeconds`
//!   doubled per attempt up to `podMaxBackoffSeconds`, ordered by expiry
//!   truncated to a 1 s window, then as activeQ. Pods rejected by plugins
//!   and pods that failed with an error wait in two separate heaps; when
//!   activeQ is empty, Pop takes the first rejected pod from backoffQ
//!   without waiting for its back-off (upstream 1.33's
//!   `SchedulerPopFromBackoffQ`, on by default) — never an errored one;
//! - unschedulable pods, with the plugins that rejected them: a cluster
//!   event one of those plugins registered (EnqueueExtensions) moves them
//!   to backoffQ (still backing off) or activeQ; any left are flushed
//!   after `podMaxInUnschedulablePodsDuration` (5 min);
//! - PreEnqueue (SchedulingGates) keeps gated pods out of activeQ until an
//!   update clears the gates;
//! - the nominator: pods nominated to a node by preemption, which Filter
//!   counts for pods of lower priority.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use tokio::sync::Notify;

use crate::framework::runtime::{pod_priority, Framework, PodNominator};
use crate::framework::{ClusterEvent, EventResource, PodInfo};

/// Upstream `DefaultPodMaxInUnschedulablePodsDuration`.
pub const POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION: Duration = Duration::from_secs(5 * 60);

/// A pod in the queue (upstream `QueuedPodInfo`).
#[derive(Clone, Debug)]
pub struct QueuedPodInfo {
    /// The pod.
    pub pod_info: Arc<PodInfo>,
    /// When it last entered the queue (sort key after priority; backoff start).
    pub timestamp: Instant,
    /// Scheduling attempts so far.
    pub attempts: u32,
    /// When it was first popped.
    pub initial_attempt_timestamp: Option<Instant>,
    /// Plugins that rejected it in its last attempt.
    pub unschedulable_plugins: BTreeSet<&'static str>,
    /// Plugins that said Pending (e.g. SchedulingGates).
    pub pending_plugins: BTreeSet<&'static str>,
    /// Whether PreEnqueue keeps it out of activeQ.
    pub gated: bool,
}

fn key_of(pod: &Pod) -> String {
    pod.metadata.uid.clone().unwrap_or_else(|| {
        format!("{}/{}", pod.metadata.namespace.as_deref().unwrap_or(""), pod.metadata.name.as_deref().unwrap_or(""))
    })
}

fn scheduler_name(pod: &Pod) -> &str {
    pod.spec.as_ref().and_then(|s| s.scheduler_name.as_deref()).unwrap_or(crate::config::DEFAULT_SCHEDULER_NAME)
}

/// Pods nominated to nodes (upstream `nominator`).
#[derive(Default)]
pub struct Nominator {
    inner: RwLock<NominatorInner>,
}

#[derive(Default)]
struct NominatorInner {
    by_node: HashMap<String, Vec<Arc<PodInfo>>>,
    node_of: HashMap<String, String>,
}

impl Nominator {
    /// Records `pod` as nominated to `node` (replacing an earlier nomination).
    pub fn add(&self, pod: Arc<PodInfo>, node: &str) {
        self.delete(&pod.pod);
        if node.is_empty() {
            return;
        }
        let mut g = self.inner.write().unwrap();
        g.node_of.insert(key_of(&pod.pod), node.to_string());
        g.by_node.entry(node.to_string()).or_default().push(pod);
    }

    /// Forgets `pod`'s nomination.
    pub fn delete(&self, pod: &Pod) {
        let key = key_of(pod);
        let mut g = self.inner.write().unwrap();
        if let Some(node) = g.node_of.remove(&key) {
            if let Some(list) = g.by_node.get_mut(&node) {
                list.retain(|p| key_of(&p.pod) != key);
                if list.is_empty() {
                    g.by_node.remove(&node);
                }
            }
        }
    }

    /// The node `pod` is nominated to.
    pub fn node_of(&self, pod: &Pod) -> Option<String> {
        self.inner.read().unwrap().node_of.get(&key_of(pod)).cloned()
    }
}

impl PodNominator for Nominator {
    fn nominated_pods_for_node(&self, node: &str) -> Vec<Arc<PodInfo>> {
        self.inner.read().unwrap().by_node.get(node).cloned().unwrap_or_default()
    }
    fn has_nominated_pods(&self) -> bool {
        !self.inner.read().unwrap().node_of.is_empty()
    }
}

/// (expiry aligned to the ordering window, priority desc, arrival, sequence).
type BackoffKey = (Instant, Reverse<i32>, Instant, u64);

/// backoffQ expiries of rejected pods are truncated to 1 s windows
/// (upstream's `backoffQOrderingWindowDuration`) so that pods expiring
/// together pop by priority.
const BACKOFF_ORDERING_WINDOW: Duration = Duration::from_secs(1);

#[derive(Default)]
struct Inner {
    pods: HashMap<String, QueuedPodInfo>,
    active: BTreeMap<(Reverse<i32>, Instant, u64), String>,
    active_key: HashMap<String, (Reverse<i32>, Instant, u64)>,
    /// Pods rejected by plugins, by (aligned expiry, priority, arrival).
    backoff: BTreeMap<BackoffKey, String>,
    /// Pods that failed with an error (never popped before expiry).
    error_backoff: BTreeMap<BackoffKey, String>,
    /// Where each backing-off pod is: (in `error_backoff`, its key).
    backoff_key: HashMap<String, (bool, BackoffKey)>,
    unschedulable: HashMap<String, Instant>,
    seq: u64,
    scheduling_cycle: u64,
    move_request_cycle: u64,
    closed: bool,
}

/// The queue (see the module docs); shared by the informer handlers and
/// the scheduling loop.
pub struct SchedulingQueue {
    inner: Mutex<Inner>,
    notify: Notify,
    profiles: HashMap<String, Arc<Framework>>,
    hints: Vec<(&'static str, ClusterEvent)>,
    initial_backoff: Duration,
    max_backoff: Duration,
    /// Origin of the backoff ordering windows.
    started: Instant,
    /// The nominated pods.
    pub nominator: Arc<Nominator>,
}

impl SchedulingQueue {
    /// A queue for `profiles` (by schedulerName) with the given back-off bounds.
    pub fn new(profiles: HashMap<String, Arc<Framework>>, initial_backoff: Duration, max_backoff: Duration) -> Self {
        let hints = profiles.values().flat_map(|f| f.events_to_register()).collect();
        SchedulingQueue {
            inner: Mutex::new(Inner::default()),
            notify: Notify::new(),
            profiles,
            hints,
            initial_backoff,
            max_backoff,
            started: Instant::now(),
            nominator: Arc::new(Nominator::default()),
        }
    }

    /// Upstream `calculateBackoffDuration`: initial × 2^(attempts−1), capped.
    pub fn backoff_duration(&self, attempts: u32) -> Duration {
        let mut d = self.initial_backoff;
        for _ in 1..attempts {
            d *= 2;
            if d > self.max_backoff {
                return self.max_backoff;
            }
        }
        d.min(self.max_backoff)
    }

    fn backoff_expiry(&self, q: &QueuedPodInfo) -> Instant {
        q.timestamp + self.backoff_duration(q.attempts)
    }

    fn remove_from_queues(g: &mut Inner, key: &str) {
        if let Some(k) = g.active_key.remove(key) {
            g.active.remove(&k);
        }
        if let Some((error, k)) = g.backoff_key.remove(key) {
            match error {
                true => g.error_backoff.remove(&k),
                false => g.backoff.remove(&k),
            };
        }
        g.unschedulable.remove(key);
    }

    fn push_active(&self, g: &mut Inner, key: String) {
        let Some(q) = g.pods.get(&key) else { return };
        let k = (Reverse(pod_priority(&q.pod_info.pod)), q.timestamp, g.seq);
        g.seq += 1;
        g.active.insert(k, key.clone());
        g.active_key.insert(key, k);
        self.notify.notify_one();
    }

    /// Puts a pod in backoffQ; `error`: it failed with an error rather
    /// than being rejected by plugins.
    fn push_backoff(&self, g: &mut Inner, key: String, error: bool) {
        let Some(q) = g.pods.get(&key) else { return };
        let mut expiry = self.backoff_expiry(q);
        if !error {
            // Truncated to its window (measured from the queue's start).
            let since = expiry.saturating_duration_since(self.started).as_nanos();
            let window = BACKOFF_ORDERING_WINDOW.as_nanos();
            expiry = self.started + Duration::from_nanos((since / window * window) as u64);
        }
        let k = (expiry, Reverse(pod_priority(&q.pod_info.pod)), q.timestamp, g.seq);
        g.seq += 1;
        match error {
            true => g.error_backoff.insert(k, key.clone()),
            false => g.backoff.insert(k, key.clone()),
        };
        g.backoff_key.insert(key, (error, k));
        if !error {
            // A waiting Pop may take it at once.
            self.notify.notify_one();
        }
    }

    /// PreEnqueue for the pod's profile; true = may enter activeQ.
    fn pre_enqueue(&self, q: &mut QueuedPodInfo) -> bool {
        let Some(fwk) = self.profiles.get(scheduler_name(&q.pod_info.pod)) else { return true };
        let s = fwk.run_pre_enqueue(&q.pod_info);
        q.gated = !s.is_success();
        if q.gated {
            q.unschedulable_plugins.clear();
            q.pending_plugins = BTreeSet::from([s.plugin]);
            tracing::debug!(component = "kube-scheduler", pod = %q.pod_info.key(), status = %s.message(), "pod gated by PreEnqueue");
        }
        !q.gated
    }

    /// A new pending pod (upstream `Add`): activeQ, or held if gated.
    pub fn add(&self, pod: Arc<PodInfo>) {
        let mut q = QueuedPodInfo {
            pod_info: pod,
            timestamp: Instant::now(),
            attempts: 0,
            initial_attempt_timestamp: None,
            unschedulable_plugins: BTreeSet::new(),
            pending_plugins: BTreeSet::new(),
            gated: false,
        };
        let key = key_of(&q.pod_info.pod);
        let ok = self.pre_enqueue(&mut q);
        let mut g = self.inner.lock().unwrap();
        Self::remove_from_queues(&mut g, &key);
        g.pods.insert(key.clone(), q);
        if ok {
            self.push_active(&mut g, key);
        } else {
            g.unschedulable.insert(key, Instant::now());
        }
    }

    /// A pending pod changed (upstream `Update`): its info is refreshed;
    /// an unschedulable or gated pod whose spec or labels changed is
    /// re-checked and moved on.
    pub fn update(&self, old: &Pod, new: Arc<PodInfo>) {
        let key = key_of(&new.pod);
        if let Some(node) = new.pod.status.as_ref().and_then(|s| s.nominated_node_name.as_deref()) {
            if !node.is_empty() {
                self.nominator.add(new.clone(), node);
            }
        }
        let mut g = self.inner.lock().unwrap();
        let Some(existing) = g.pods.get(&key).cloned() else {
            drop(g);
            // Not queued (e.g. in flight): treated as an add only if not in flight — the cycle re-adds on failure.
            return;
        };
        let changed = old.spec != new.pod.spec || old.metadata.labels != new.pod.metadata.labels;
        let mut q = existing;
        q.pod_info = new;
        let in_unschedulable = g.unschedulable.contains_key(&key);
        if !in_unschedulable || !changed {
            // Active or backing off: keep position, refresh the info.
            g.pods.insert(key, q);
            return;
        }
        drop(g);
        let ok = self.pre_enqueue(&mut q);
        let mut g = self.inner.lock().unwrap();
        g.pods.insert(key.clone(), q.clone());
        if !ok {
            return;
        }
        Self::remove_from_queues(&mut g, &key);
        if q.attempts > 0 && self.backoff_expiry(&q) > Instant::now() {
            self.push_backoff(&mut g, key, false);
        } else {
            self.push_active(&mut g, key);
        }
    }

    /// A pending pod was deleted, or got bound by someone else.
    pub fn delete(&self, pod: &Pod) {
        let key = key_of(pod);
        self.nominator.delete(pod);
        let mut g = self.inner.lock().unwrap();
        Self::remove_from_queues(&mut g, &key);
        g.pods.remove(&key);
    }

    /// Waits for the next pod (upstream `Pop`); `None` once closed. The
    /// pod's attempts count is increased.
    pub async fn pop(&self) -> Option<(QueuedPodInfo, u64)> {
        loop {
            let notified = self.notify.notified();
            {
                let mut g = self.inner.lock().unwrap();
                if g.closed {
                    return None;
                }
                if let Some(q) = Self::pop_locked(&mut g) {
                    return Some((q, g.scheduling_cycle));
                }
            }
            notified.await;
        }
    }

    /// Pops without waiting (tests and the bench).
    pub fn try_pop(&self) -> Option<QueuedPodInfo> {
        Self::pop_locked(&mut self.inner.lock().unwrap())
    }

    fn pop_locked(g: &mut Inner) -> Option<QueuedPodInfo> {
        let key = match g.active.pop_first() {
            Some((_, key)) => {
                g.active_key.remove(&key);
                key
            }
            None => {
                let (_, key) = g.backoff.pop_first()?;
                g.backoff_key.remove(&key);
                key
            }
        };
        g.scheduling_cycle += 1;
        let mut q = g.pods.remove(&key)?;
        q.attempts += 1;
        q.initial_attempt_timestamp.get_or_insert_with(Instant::now);
        Some(q)
    }

    /// The cycle popped pods are tagged with.
    pub fn scheduling_cycle(&self) -> u64 {
        self.inner.lock().unwrap().scheduling_cycle
    }

    /// A pod that failed its cycle (upstream `AddUnschedulableIfNotPresent`):
    /// to backoffQ when a cluster event arrived during its cycle or no
    /// plugin rejected it (an error), else to the unschedulable pods.
    pub fn add_unschedulable_if_not_present(&self, mut q: QueuedPodInfo, pod_scheduling_cycle: u64) {
        let key = key_of(&q.pod_info.pod);
        let mut g = self.inner.lock().unwrap();
        if g.pods.contains_key(&key) {
            return;
        }
        q.timestamp = Instant::now();
        let error = q.unschedulable_plugins.is_empty() && q.pending_plugins.is_empty();
        let to_backoff = error || g.move_request_cycle >= pod_scheduling_cycle;
        g.pods.insert(key.clone(), q);
        if to_backoff {
            self.push_backoff(&mut g, key, error);
        } else {
            g.unschedulable.insert(key, Instant::now());
        }
    }

    /// Whether a pod rejected by `plugins` may be helped by `event`.
    fn is_interested(&self, q: &QueuedPodInfo, event: &ClusterEvent) -> bool {
        if q.gated {
            return false;
        }
        let rejectors: Vec<&&str> = q.unschedulable_plugins.iter().chain(q.pending_plugins.iter()).collect();
        if rejectors.is_empty() {
            return true;
        }
        self.hints.iter().any(|(plugin, e)| {
            rejectors.iter().any(|r| **r == *plugin)
                && (e.resource == event.resource
                    || e.resource == EventResource::Any
                    || event.resource == EventResource::Any)
                && (e.actions & event.actions) != 0
        })
    }

    /// A cluster event (upstream `MoveAllToActiveOrBackoffQueue`): the
    /// unschedulable pods it may help move to backoffQ or activeQ.
    pub fn move_all_to_active_or_backoff(&self, event: ClusterEvent) {
        let mut g = self.inner.lock().unwrap();
        g.move_request_cycle = g.scheduling_cycle;
        let keys: Vec<String> = g
            .unschedulable
            .keys()
            .filter(|k| g.pods.get(*k).is_some_and(|q| self.is_interested(q, &event)))
            .cloned()
            .collect();
        self.move_pods(&mut g, keys);
    }

    fn move_pods(&self, g: &mut Inner, keys: Vec<String>) {
        let now = Instant::now();
        for key in keys {
            g.unschedulable.remove(&key);
            let Some(q) = g.pods.get(&key) else { continue };
            if self.backoff_expiry(q) > now {
                self.push_backoff(g, key, false);
            } else {
                self.push_active(g, key);
            }
        }
    }

    /// Moves pods whose back-off ended to activeQ (upstream runs it every second).
    pub fn flush_backoff_completed(&self) {
        let mut g = self.inner.lock().unwrap();
        let now = Instant::now();
        let mut done = Vec::new();
        for heap in [&g.backoff, &g.error_backoff] {
            done.extend(heap.iter().take_while(|(k, _)| k.0 <= now).map(|(_, key)| key.clone()));
        }
        for key in done {
            Self::remove_from_queues(&mut g, &key);
            self.push_active(&mut g, key);
        }
    }

    /// Moves pods unschedulable for longer than `max_in_unschedulable`
    /// (upstream: 5 min, checked every 30 s).
    pub fn flush_unschedulable_left_over(&self, max_in_unschedulable: Duration) {
        let mut g = self.inner.lock().unwrap();
        let now = Instant::now();
        let keys: Vec<String> = g
            .unschedulable
            .iter()
            .filter(|(k, since)| now.duration_since(**since) > max_in_unschedulable && !g.pods[*k].gated)
            .map(|(k, _)| k.clone())
            .collect();
        self.move_pods(&mut g, keys);
    }

    /// Stops [`SchedulingQueue::pop`].
    pub fn close(&self) {
        self.inner.lock().unwrap().closed = true;
        self.notify.notify_waiters();
        self.notify.notify_one();
    }

    /// `(active, backoff, unschedulable)` counts.
    pub fn lens(&self) -> (usize, usize, usize) {
        let g = self.inner.lock().unwrap();
        (g.active.len(), g.backoff.len() + g.error_backoff.len(), g.unschedulable.len())
    }
}

#[cfg(test)]
mod tests;
