//! The framework runtime (upstream `pkg/scheduler/framework/runtime`): one
//! profile's plugins, built from the configuration and the plugin
//! registry, in per-extension-point order with score weights, and the
//! `Run*Plugins` functions a scheduling cycle calls.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use super::interface::*;
use super::parallel;
use super::types::{NodeInfo, PodInfo, Snapshot};
use crate::config::{self, Configuration, PluginRef};

/// Where the framework finds pods nominated to a node (the queue's
/// nominator), for [`FilterRunner::run_filter_with_nominated_pods`].
pub trait PodNominator: Send + Sync {
    /// Pods nominated to run on `node`.
    fn nominated_pods_for_node(&self, node: &str) -> Vec<Arc<PodInfo>>;
    /// Whether any pod is nominated anywhere (lets Filter skip the lookup).
    fn has_nominated_pods(&self) -> bool {
        true
    }
}

/// A pod's `spec.priority` (0 when unset, as upstream `corev1helpers.PodPriority`).
pub fn pod_priority(pod: &k8s_openapi::api::core::v1::Pod) -> i32 {
    pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
}

type Plugins = Vec<Arc<dyn Plugin>>;
type Weighted = Vec<(Arc<dyn Plugin>, i64)>;

/// Default [`Framework::min_parallel_nodes`].
pub const DEFAULT_MIN_PARALLEL_NODES: usize = 1000;

/// One profile (upstream `frameworkImpl`).
pub struct Framework {
    /// The profile's `schedulerName`.
    pub profile_name: String,
    /// Percentage of nodes to find feasible (0 = upstream's adaptive default).
    pub percentage_of_nodes_to_score: i32,
    /// Threads for Filter and Score.
    pub parallelism: usize,
    /// Fewer nodes than this in a Filter round or Score pass run on the
    /// calling thread: waking the pool costs more than sub-microsecond
    /// per-node work saves (measured on the 2-core build VM).
    pub min_parallel_nodes: usize,
    by_name: HashMap<&'static str, Arc<dyn Plugin>>,
    pre_enqueue: Plugins,
    queue_sort: Plugins,
    pre_filter: Plugins,
    filter: Plugins,
    post_filter: Plugins,
    pre_score: Plugins,
    score: Weighted,
    reserve: Plugins,
    permit: Plugins,
    pre_bind: Plugins,
    bind: Plugins,
    post_bind: Plugins,
    nominator: RwLock<Option<Arc<dyn PodNominator>>>,
    /// The handle the plugins were built with.
    pub handle: Handle,
}

const POINTS: &[(&str, ExtensionPoint)] = &[
    ("preEnqueue", ExtensionPoint::PreEnqueue),
    ("queueSort", ExtensionPoint::QueueSort),
    ("preFilter", ExtensionPoint::PreFilter),
    ("filter", ExtensionPoint::Filter),
    ("postFilter", ExtensionPoint::PostFilter),
    ("preScore", ExtensionPoint::PreScore),
    ("score", ExtensionPoint::Score),
    ("reserve", ExtensionPoint::Reserve),
    ("permit", ExtensionPoint::Permit),
    ("preBind", ExtensionPoint::PreBind),
    ("bind", ExtensionPoint::Bind),
    ("postBind", ExtensionPoint::PostBind),
];

impl Framework {
    /// Builds profile `profile` of `global` from `registry`. Plugins the
    /// upstream defaults name but the registry lacks are skipped; a plugin
    /// enabled explicitly that the registry lacks, or invalid args, is an
    /// error naming the plugin.
    pub fn new(
        profile: &config::Profile,
        global: &Configuration,
        registry: &[(&'static str, PluginFactory)],
        handle: Handle,
    ) -> Result<Framework, String> {
        let plugins = profile.plugins.clone().unwrap_or_default();
        let defaults: BTreeSet<String> = config::default_multi_point().into_iter().map(|p| p.name).collect();
        let mut wanted: Vec<PluginRef> = config::merged_multi_point(&plugins.multi_point);
        for (_, set) in plugins.points() {
            wanted.extend(set.enabled.iter().cloned());
        }
        let args: HashMap<&str, &serde_json::Value> =
            profile.plugin_config.iter().map(|pc| (pc.name.as_str(), &pc.args)).collect();
        let mut by_name: HashMap<&'static str, Arc<dyn Plugin>> = HashMap::new();
        for r in &wanted {
            if by_name.keys().any(|k| *k == r.name) {
                continue;
            }
            match registry.iter().find(|(n, _)| *n == r.name) {
                Some((name, factory)) => {
                    let a = args.get(r.name.as_str()).copied().filter(|v| !v.is_null());
                    let p = factory(a, &handle).map_err(|e| format!("initializing plugin \"{name}\": {e}"))?;
                    by_name.insert(name, p);
                }
                None if defaults.contains(&r.name) && plugins.multi_point.enabled.iter().all(|e| e.name != r.name) => {
                    tracing::debug!(component = "kube-scheduler", plugin = %r.name, "default plugin not implemented; skipped");
                }
                None => return Err(format!("plugin \"{}\" does not exist", r.name)),
            }
        }
        let mut lists: HashMap<ExtensionPoint, Weighted> = HashMap::new();
        for (point_name, point) in POINTS {
            let implements = |n: &str| by_name.get(n).is_some_and(|p| p.extension_points().contains(point));
            for r in config::expand(&plugins, point_name, &implements) {
                let Some(p) = by_name.get(r.name.as_str()) else { continue };
                if !p.extension_points().contains(point) {
                    return Err(format!("plugin \"{}\" does not extend {point_name} plugin", r.name));
                }
                let weight = r.weight.filter(|w| *w > 0).unwrap_or(1) as i64;
                lists.entry(*point).or_default().push((p.clone(), weight));
            }
        }
        let score = lists.remove(&ExtensionPoint::Score).unwrap_or_default();
        let mut take = |p: ExtensionPoint| -> Plugins {
            lists.remove(&p).unwrap_or_default().into_iter().map(|(p, _)| p).collect()
        };
        let queue_sort = take(ExtensionPoint::QueueSort);
        if queue_sort.len() > 1 {
            return Err("only one queue sort plugin can be enabled".into());
        }
        let bind = take(ExtensionPoint::Bind);
        if bind.is_empty() {
            return Err("at least one bind plugin is needed".into());
        }
        Ok(Framework {
            profile_name: profile.scheduler_name.clone(),
            percentage_of_nodes_to_score: profile
                .percentage_of_nodes_to_score
                .or(global.percentage_of_nodes_to_score)
                .unwrap_or(0),
            parallelism: parallel::workers(global.parallelism.max(1) as usize),
            min_parallel_nodes: DEFAULT_MIN_PARALLEL_NODES,
            pre_enqueue: take(ExtensionPoint::PreEnqueue),
            queue_sort,
            pre_filter: take(ExtensionPoint::PreFilter),
            filter: take(ExtensionPoint::Filter),
            post_filter: take(ExtensionPoint::PostFilter),
            pre_score: take(ExtensionPoint::PreScore),
            score,
            reserve: take(ExtensionPoint::Reserve),
            permit: take(ExtensionPoint::Permit),
            pre_bind: take(ExtensionPoint::PreBind),
            bind,
            post_bind: take(ExtensionPoint::PostBind),
            by_name,
            nominator: RwLock::new(None),
            handle,
        })
    }

    /// Threads to use for `n` nodes of work.
    pub fn workers_for(&self, n: usize) -> usize {
        if n < self.min_parallel_nodes {
            1
        } else {
            self.parallelism
        }
    }

    /// Connects the queue's nominator (nominated pods count in Filter).
    pub fn set_nominator(&self, nominator: Arc<dyn PodNominator>) {
        *self.nominator.write().unwrap() = Some(nominator);
    }

    /// The plugin called `name`, if the profile has it.
    pub fn plugin(&self, name: &str) -> Option<&Arc<dyn Plugin>> {
        self.by_name.get(name)
    }

    /// Every plugin of the profile (for events_to_register).
    pub fn plugins(&self) -> impl Iterator<Item = &Arc<dyn Plugin>> {
        self.by_name.values()
    }

    /// The names at `point`, in order (with weights for Score).
    pub fn list(&self, point: ExtensionPoint) -> Vec<(&'static str, i64)> {
        let names = |l: &Plugins| l.iter().map(|p| (p.name(), 0)).collect();
        match point {
            ExtensionPoint::PreEnqueue => names(&self.pre_enqueue),
            ExtensionPoint::QueueSort => names(&self.queue_sort),
            ExtensionPoint::PreFilter => names(&self.pre_filter),
            ExtensionPoint::Filter => names(&self.filter),
            ExtensionPoint::PostFilter => names(&self.post_filter),
            ExtensionPoint::PreScore => names(&self.pre_score),
            ExtensionPoint::Score => self.score.iter().map(|(p, w)| (p.name(), *w)).collect(),
            ExtensionPoint::Reserve => names(&self.reserve),
            ExtensionPoint::Permit => names(&self.permit),
            ExtensionPoint::PreBind => names(&self.pre_bind),
            ExtensionPoint::Bind => names(&self.bind),
            ExtensionPoint::PostBind => names(&self.post_bind),
        }
    }

    /// Whether any Filter plugin is enabled.
    pub fn has_filter_plugins(&self) -> bool {
        !self.filter.is_empty()
    }

    /// Whether any PostFilter plugin is enabled.
    pub fn has_post_filter_plugins(&self) -> bool {
        !self.post_filter.is_empty()
    }

    /// PreEnqueue: the first rejecting plugin's status (Pending for gates).
    pub fn run_pre_enqueue(&self, pod: &PodInfo) -> Status {
        for p in &self.pre_enqueue {
            let s = p.pre_enqueue(pod);
            if !s.is_success() {
                return s.with_plugin(p.name());
            }
        }
        Status::success()
    }

    /// PreFilter (upstream `RunPreFilterPlugins`): plugins returning Skip
    /// have their Filter skipped; results intersect; a rejection ends the
    /// run with the plugin named; an empty intersection is
    /// UnschedulableAndUnresolvable. Also returns the plugins that rejected
    /// the pod, or on success the plugins whose results narrowed the nodes.
    pub fn run_pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status, BTreeSet<&'static str>) {
        let mut result: Option<PreFilterResult> = None;
        let mut narrowing: Vec<&'static str> = Vec::new();
        let mut skipped = BTreeSet::new();
        for p in &self.pre_filter {
            let (r, s) = p.pre_filter(state, pod, snapshot);
            if s.is_skip() {
                skipped.insert(p.name());
                continue;
            }
            if !s.is_success() {
                let s = if s.is_rejected() {
                    s
                } else {
                    Status::error(format!("running PreFilter plugin \"{}\": {}", p.name(), s.message()))
                };
                let rejected = if s.is_rejected() { BTreeSet::from([p.name()]) } else { BTreeSet::new() };
                return (None, s.with_plugin(p.name()), rejected);
            }
            let Some(r) = r else { continue };
            let Some(names) = r.node_names else { continue };
            narrowing.push(p.name());
            result = Some(match result {
                Some(PreFilterResult { node_names: Some(prev) }) => {
                    PreFilterResult { node_names: Some(prev.intersection(&names).cloned().collect()) }
                }
                _ => PreFilterResult { node_names: Some(names) },
            });
            if result.as_ref().and_then(|r| r.node_names.as_ref()).is_some_and(|n| n.is_empty()) {
                let msg = if narrowing.len() == 1 {
                    format!("node(s) didn't satisfy plugin {}", narrowing[0])
                } else {
                    format!("node(s) didn't satisfy plugin(s) [{}] simultaneously", narrowing.join(" "))
                };
                return (None, Status::unresolvable(msg), narrowing.into_iter().collect());
            }
        }
        state.skip_filter_plugins = skipped;
        (result, Status::success(), narrowing.into_iter().collect())
    }

    /// Filter (upstream `RunFilterPlugins`): the first non-success status,
    /// attributed to its plugin; a non-rejection failure becomes an Error.
    pub fn run_filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        self.run_filter_planned(&self.filter_plan(state), state, pod, node)
    }

    /// The Filter plugins this cycle runs (those whose PreFilter did not
    /// Skip), computed once per cycle instead of once per node.
    pub fn filter_plan(&self, state: &CycleState) -> Vec<&dyn Plugin> {
        self.filter.iter().filter(|p| !state.skip_filter_plugins.contains(p.name())).map(|p| p.as_ref()).collect()
    }

    /// [`Framework::run_filter`] with a precomputed [`Framework::filter_plan`].
    pub fn run_filter_planned(
        &self,
        plan: &[&dyn Plugin],
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        for p in plan {
            let s = p.filter(state, pod, node);
            if !s.is_success() {
                if !s.is_rejected() {
                    return Status::error(format!("running \"{}\" filter plugin: {}", p.name(), s.message()))
                        .with_plugin(p.name());
                }
                return s.with_plugin(p.name());
            }
        }
        Status::success()
    }

    /// Upstream's two passes (see [`FilterRunner::run_filter_with_nominated_pods`])
    /// with a precomputed plan.
    pub fn run_filter_with_nominated_pods_planned(
        &self,
        plan: &[&dyn Plugin],
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        let mut status = Status::success();
        let mut added = false;
        for i in 0..2 {
            let with;
            let (s, n) = if i == 0 {
                with = self.add_ge_nominated_pods(state, pod, node);
                added = with.is_some();
                match &with {
                    Some((s, n)) => (s, n),
                    None => (state, node),
                }
            } else {
                if !added || !status.is_success() {
                    break;
                }
                (state, node)
            };
            status = self.run_filter_planned(plan, s, pod, n);
            if !status.is_success() && !status.is_rejected() {
                return status;
            }
        }
        status
    }

    /// Adds the pods nominated to `node` with priority >= the pod's to
    /// copies of the state and node (upstream `addGENominatedPods`).
    fn add_ge_nominated_pods(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Option<(CycleState, NodeInfo)> {
        let nominator = self.nominator.read().unwrap();
        let nominator = nominator.as_ref().filter(|n| n.has_nominated_pods())?;
        node.node.as_ref()?;
        let nominated = nominator.nominated_pods_for_node(node.node_name());
        if nominated.is_empty() {
            return None;
        }
        let prio = pod_priority(&pod.pod);
        let (mut state_out, mut node_out) = (state.clone(), node.clone());
        let mut added = false;
        for pi in nominated {
            if pod_priority(&pi.pod) >= prio && pi.pod.metadata.uid != pod.pod.metadata.uid {
                node_out.add_pod(pi.clone());
                let s = self.run_pre_filter_add_pod(&mut state_out, pod, &pi, &node_out);
                if !s.is_success() {
                    tracing::debug!(component = "kube-scheduler", status = ?s, "AddPod of a nominated pod failed");
                }
                added = true;
            }
        }
        added.then_some((state_out, node_out))
    }

    /// Score: PreScore on the feasible nodes, then every Score plugin on
    /// each node in parallel, NormalizeScore, and weights; returns each
    /// node's total in the order of `nodes` (upstream `prioritizeNodes`).
    pub fn run_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
    ) -> Result<Vec<i64>, Status> {
        if self.score.is_empty() {
            return Ok(vec![1; nodes.len()]);
        }
        let mut skip = BTreeSet::new();
        for p in &self.pre_score {
            let s = p.pre_score(state, pod, nodes);
            if s.is_skip() {
                skip.insert(p.name());
            } else if !s.is_success() {
                return Err(Status::error(format!("running PreScore plugin \"{}\": {}", p.name(), s.message())));
            }
        }
        state.skip_score_plugins = skip;
        let state: &CycleState = state;
        let active: Vec<&(Arc<dyn Plugin>, i64)> =
            self.score.iter().filter(|(p, _)| !state.skip_score_plugins.contains(p.name())).collect();
        let per_node: Vec<Result<Vec<i64>, Status>> = parallel::map(nodes.len(), self.workers_for(nodes.len()), |i| {
            active
                .iter()
                .map(|(p, _)| {
                    let (v, s) = p.score(state, pod, &nodes[i]);
                    if s.is_success() {
                        Ok(v)
                    } else {
                        Err(Status::error(format!("running Score plugin \"{}\": {}", p.name(), s.message())))
                    }
                })
                .collect()
        });
        let per_node: Vec<Vec<i64>> = per_node.into_iter().collect::<Result<_, _>>()?;
        let mut totals = vec![0i64; nodes.len()];
        // One list reused for every plugin: only the scores change.
        let mut scores: Vec<NodeScore> =
            nodes.iter().map(|n| NodeScore { name: n.node_name().to_string(), score: 0 }).collect();
        for (j, (p, weight)) in active.iter().enumerate() {
            for (ns, s) in scores.iter_mut().zip(&per_node) {
                ns.score = s[j];
            }
            let s = p.normalize_score(state, pod, &mut scores);
            if !s.is_success() {
                return Err(Status::error(format!("running Normalize on Score plugins: {}", s.message())));
            }
            for (i, ns) in scores.iter().enumerate() {
                if !(MIN_NODE_SCORE..=MAX_NODE_SCORE).contains(&ns.score) {
                    return Err(Status::error(format!(
                        "plugin \"{}\" returns an invalid score {}, it should in the range of [{}, {}] after normalizing",
                        p.name(),
                        ns.score,
                        MIN_NODE_SCORE,
                        MAX_NODE_SCORE
                    )));
                }
                totals[i] += ns.score * weight;
            }
        }
        Ok(totals)
    }

    /// PostFilter: the first plugin whose status is Success or not
    /// Unschedulable ends the run; otherwise the rejections' messages
    /// are combined (upstream `RunPostFilterPlugins`).
    pub async fn run_post_filter(
        &self,
        snapshot: &Snapshot,
        state: &CycleState,
        pod: &PodInfo,
        statuses: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        let args = PostFilterArgs { snapshot, runner: self };
        let mut reasons = Vec::new();
        let mut result = None;
        for p in &self.post_filter {
            let (r, s) = p.post_filter(&args, state, pod, statuses).await;
            if s.is_success() {
                return (r, s.with_plugin(p.name()));
            }
            if s.code == Code::UnschedulableAndUnresolvable {
                return (r, s.with_plugin(p.name()));
            }
            if !s.is_rejected() {
                return (None, s.with_plugin(p.name()));
            }
            if r.is_some() {
                result = r;
            }
            reasons.extend(s.reasons.into_iter().filter(|r| !r.is_empty()));
        }
        (result, Status::unschedulable(reasons))
    }

    /// Reserve, in order; on failure the caller runs [`Framework::run_unreserve`].
    pub fn run_reserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        for p in &self.reserve {
            let s = p.reserve(state, pod, node);
            if !s.is_success() {
                let s = if s.is_rejected() {
                    s
                } else {
                    Status::error(format!("running Reserve plugin \"{}\": {}", p.name(), s.message()))
                };
                return s.with_plugin(p.name());
            }
        }
        Status::success()
    }

    /// Unreserve, in reverse order.
    pub fn run_unreserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) {
        for p in self.reserve.iter().rev() {
            p.unreserve(state, pod, node);
        }
    }

    /// Permit: a rejection ends the run; Wait statuses give the longest
    /// timeout to wait (rkube has no way to allow a waiting pod yet, so the
    /// caller rejects it when the timeout ends, as upstream does on timeout).
    pub fn run_permit(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &str,
    ) -> (Status, Option<(Duration, &'static str)>) {
        let mut wait: Option<(Duration, &'static str)> = None;
        for p in &self.permit {
            let (s, timeout) = p.permit(state, pod, node);
            match s.code {
                Code::Success => {}
                Code::Wait => {
                    if wait.is_none_or(|(t, _)| timeout > t) {
                        wait = Some((timeout.min(Duration::from_secs(15 * 60)), p.name()));
                    }
                }
                _ if s.is_rejected() => return (s.with_plugin(p.name()), None),
                _ => {
                    return (
                        Status::error(format!("running Permit plugin \"{}\": {}", p.name(), s.message()))
                            .with_plugin(p.name()),
                        None,
                    )
                }
            }
        }
        (Status::success(), wait)
    }

    /// PreBind, in order; the first failure ends the run.
    pub async fn run_pre_bind(&self, state: &CycleState, pod: &PodInfo, node: &str) -> Status {
        for p in &self.pre_bind {
            let s = p.pre_bind(state, pod, node).await;
            if !s.is_success() {
                return s.with_plugin(p.name());
            }
        }
        Status::success()
    }

    /// Bind: the first plugin not returning Skip decides.
    pub async fn run_bind(&self, state: &CycleState, pod: &PodInfo, node: &str) -> Status {
        for p in &self.bind {
            let s = p.bind(state, pod, node).await;
            if s.is_skip() {
                continue;
            }
            return s.with_plugin(p.name());
        }
        Status::skip()
    }

    /// PostBind, in order.
    pub fn run_post_bind(&self, state: &CycleState, pod: &PodInfo, node: &str) {
        for p in &self.post_bind {
            p.post_bind(state, pod, node);
        }
    }

    /// Every cluster event some enabled plugin registered, with the plugin
    /// (the queue's hint map).
    pub fn events_to_register(&self) -> Vec<(&'static str, ClusterEvent)> {
        let mut out = Vec::new();
        for p in self.by_name.values() {
            for e in p.events_to_register() {
                out.push((p.name(), e));
            }
        }
        out
    }
}

impl FilterRunner for Framework {
    fn run_pre_filter_add_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        to_add: &Arc<PodInfo>,
        node: &NodeInfo,
    ) -> Status {
        for p in &self.pre_filter {
            if state.skip_filter_plugins.contains(p.name()) {
                continue;
            }
            let s = p.add_pod(state, pod, to_add, node);
            if !s.is_success() {
                return Status::error(format!("running AddPod on PreFilter plugin \"{}\": {}", p.name(), s.message()));
            }
        }
        Status::success()
    }

    fn run_pre_filter_remove_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        to_remove: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        for p in &self.pre_filter {
            if state.skip_filter_plugins.contains(p.name()) {
                continue;
            }
            let s = p.remove_pod(state, pod, to_remove, node);
            if !s.is_success() {
                return Status::error(format!(
                    "running RemovePod on PreFilter plugin \"{}\": {}",
                    p.name(),
                    s.message()
                ));
            }
        }
        Status::success()
    }

    /// Upstream's two passes: first with the nominated pods of equal or
    /// higher priority added (they may need the room), then — only if that
    /// passed and some were added — without them (pod affinity may depend
    /// on pods that are not there yet).
    fn run_filter_with_nominated_pods(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        self.run_filter_with_nominated_pods_planned(&self.filter_plan(state), state, pod, node)
    }
}

#[cfg(test)]
mod tests;
