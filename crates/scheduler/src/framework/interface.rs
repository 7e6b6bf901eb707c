//! The plugin interface (upstream `pkg/scheduler/framework/interface.go`):
//! a plugin implements some of the extension points; the framework runs
//! each point's enabled plugins in configuration order.
//!
//! Filter, Score and the PreFilter extensions are synchronous and pure over
//! the [`Snapshot`], so the framework runs them in parallel over nodes;
//! PostFilter, PreBind and Bind may call the API and are async.

use std::any::Any;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Namespace, PersistentVolume, PersistentVolumeClaim, ReplicationController, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};

use super::types::{NodeInfo, PodInfo, Snapshot};

/// The highest score a Score plugin may give after normalization.
pub const MAX_NODE_SCORE: i64 = 100;
/// The lowest.
pub const MIN_NODE_SCORE: i64 = 0;

/// The outcome class of a plugin call (upstream `framework.Code`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    /// Go on.
    Success,
    /// An internal error: the pod is retried with back-off.
    Error,
    /// The node does not fit now; preemption may help.
    Unschedulable,
    /// The node does not fit and preemption cannot help (e.g. a node
    /// selector mismatch).
    UnschedulableAndUnresolvable,
    /// Permit: wait.
    Wait,
    /// PreFilter/PreScore: the plugin has nothing to do for this pod; its
    /// Filter/Score are skipped this cycle.
    Skip,
    /// PreEnqueue/PreFilter: the pod waits for something outside the
    /// scheduler (e.g. a scheduling gate); it is not retried by back-off.
    Pending,
}

/// A plugin call's outcome: a code, human-readable reasons (the strings
/// summarized in FailedScheduling messages, e.g. `Insufficient cpu`), and
/// the plugin that gave it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    /// The class.
    pub code: Code,
    /// Reasons, in upstream wording.
    pub reasons: Vec<String>,
    /// The plugin that returned it (set by the framework).
    pub plugin: &'static str,
}

impl Default for Status {
    fn default() -> Self {
        Status::success()
    }
}

impl Status {
    /// Success.
    pub fn success() -> Status {
        Status { code: Code::Success, reasons: Vec::new(), plugin: "" }
    }
    /// A status with `code` and one reason.
    pub fn new(code: Code, reason: impl Into<String>) -> Status {
        Status { code, reasons: vec![reason.into()], plugin: "" }
    }
    /// An internal error.
    pub fn error(reason: impl Into<String>) -> Status {
        Status::new(Code::Error, reason)
    }
    /// Unschedulable with these reasons.
    pub fn unschedulable(reasons: impl IntoIterator<Item = impl Into<String>>) -> Status {
        Status { code: Code::Unschedulable, reasons: reasons.into_iter().map(Into::into).collect(), plugin: "" }
    }
    /// UnschedulableAndUnresolvable with one reason.
    pub fn unresolvable(reason: impl Into<String>) -> Status {
        Status::new(Code::UnschedulableAndUnresolvable, reason)
    }
    /// Skip.
    pub fn skip() -> Status {
        Status { code: Code::Skip, reasons: Vec::new(), plugin: "" }
    }
    /// Whether the code is Success.
    pub fn is_success(&self) -> bool {
        self.code == Code::Success
    }
    /// Whether the code is Skip.
    pub fn is_skip(&self) -> bool {
        self.code == Code::Skip
    }
    /// Whether the pod was rejected (Unschedulable, UnschedulableAndUnresolvable or Pending).
    pub fn is_rejected(&self) -> bool {
        matches!(self.code, Code::Unschedulable | Code::UnschedulableAndUnresolvable | Code::Pending)
    }
    /// This status attributed to `plugin`.
    pub fn with_plugin(mut self, plugin: &'static str) -> Status {
        self.plugin = plugin;
        self
    }
    /// The reasons joined with `, ` (upstream `Status.Message`).
    pub fn message(&self) -> String {
        self.reasons.join(", ")
    }
}

/// Per-cycle data plugins share between their own extension points
/// (upstream `CycleState`). Values are immutable once written: a plugin
/// that changes its state (PreFilter AddPod/RemovePod during preemption)
/// writes a new value, so cloning a state for a simulation is cheap.
#[derive(Clone, Default)]
pub struct CycleState {
    data: HashMap<&'static str, Arc<dyn Any + Send + Sync>, BuildFnv>,
    /// Filter plugins whose PreFilter returned Skip.
    pub skip_filter_plugins: BTreeSet<&'static str>,
    /// Score plugins whose PreScore returned Skip.
    pub skip_score_plugins: BTreeSet<&'static str>,
}

impl CycleState {
    /// Stores `value` under `key` (by convention `PreFilter<Plugin>`, as upstream).
    pub fn write<T: Any + Send + Sync>(&mut self, key: &'static str, value: T) {
        self.data.insert(key, Arc::new(value));
    }
    /// The value under `key`, if one of type `T` was written.
    pub fn read<T: Any + Send + Sync>(&self, key: &'static str) -> Option<&T> {
        self.data.get(key)?.downcast_ref::<T>()
    }
}

/// FNV-1a for the cycle state's few short keys, read once per plugin and
/// node (SipHash showed in profiles).
#[derive(Clone, Copy, Default)]
pub struct BuildFnv;

/// The [`BuildFnv`] hasher.
pub struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ *b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

impl std::hash::BuildHasher for BuildFnv {
    type Hasher = Fnv;
    fn build_hasher(&self) -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

/// A node's score from one plugin or in total.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeScore {
    /// The node.
    pub name: String,
    /// Its score.
    pub score: i64,
}

/// What a PreFilter may say beyond its status: the only nodes worth
/// filtering (`None` in `node_names` = all). Results of several plugins
/// intersect.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PreFilterResult {
    /// The nodes to consider, or all.
    pub node_names: Option<BTreeSet<String>>,
}

/// Each node's Filter status for a failed cycle, and the status of nodes
/// that PreFilter results left out (upstream `NodeToStatus`).
#[derive(Clone, Debug, Default)]
pub struct NodeToStatus {
    /// Status by node name.
    pub statuses: HashMap<String, Status>,
    /// What holds for every node not in `statuses` (UnschedulableAndUnresolvable
    /// when PreFilter narrowed the nodes; Success otherwise).
    pub absent: Option<Status>,
}

/// How a PostFilter wants the pod's `status.nominatedNodeName` set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NominatingMode {
    /// Leave it as is.
    Noop,
    /// Set it to the given node.
    Override,
}

/// A PostFilter's result (upstream `PostFilterResult`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostFilterResult {
    /// The node the pod is nominated to (empty = clear).
    pub nominated_node_name: String,
    /// Whether to write it.
    pub mode: NominatingMode,
}

/// The extension points (upstream's plugin interfaces).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ExtensionPoint {
    /// Gate before the pod enters the active queue.
    PreEnqueue,
    /// Orders the queue (PrioritySort).
    QueueSort,
    /// Once per cycle before Filter; may narrow the nodes.
    PreFilter,
    /// Per node: can the pod run there?
    Filter,
    /// When no node fits (preemption).
    PostFilter,
    /// Once per cycle before Score.
    PreScore,
    /// Per feasible node: how good is it? (with NormalizeScore)
    Score,
    /// Claims resources in plugin state once a node is chosen.
    Reserve,
    /// Approves, rejects or delays the binding.
    Permit,
    /// Before binding (e.g. binding volumes).
    PreBind,
    /// Binds the pod to the node.
    Bind,
    /// After a successful bind.
    PostBind,
}

/// The kind of object a cluster event is about (upstream `EventResource`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventResource {
    /// A pod that is not the one being scheduled (assigned or not).
    Pod,
    /// A Node.
    Node,
    /// A PersistentVolumeClaim.
    PersistentVolumeClaim,
    /// A PersistentVolume.
    PersistentVolume,
    /// A StorageClass.
    StorageClass,
    /// A CSINode.
    CSINode,
    /// A Namespace.
    Namespace,
    /// Anything (wildcard).
    Any,
}

/// Bits of [`ClusterEvent::actions`] (upstream `ActionType`).
pub mod action {
    /// Created.
    pub const ADD: u32 = 1;
    /// Deleted.
    pub const DELETE: u32 = 1 << 1;
    /// A node's allocatable changed.
    pub const UPDATE_NODE_ALLOCATABLE: u32 = 1 << 2;
    /// A node's labels changed.
    pub const UPDATE_NODE_LABEL: u32 = 1 << 3;
    /// A node's taints (or unschedulable) changed.
    pub const UPDATE_NODE_TAINT: u32 = 1 << 4;
    /// A node's conditions changed.
    pub const UPDATE_NODE_CONDITION: u32 = 1 << 5;
    /// A node's annotations changed.
    pub const UPDATE_NODE_ANNOTATION: u32 = 1 << 6;
    /// A pod's labels changed.
    pub const UPDATE_POD_LABEL: u32 = 1 << 7;
    /// A pod's requests were scaled down.
    pub const UPDATE_POD_SCALE_DOWN: u32 = 1 << 8;
    /// A pod's tolerations changed.
    pub const UPDATE_POD_TOLERATIONS: u32 = 1 << 9;
    /// A pod's scheduling gates were removed.
    pub const UPDATE_POD_SCHEDULING_GATES_ELIMINATED: u32 = 1 << 10;
    /// Any other update.
    pub const UPDATE: u32 = 1 << 11;
    /// Every action.
    pub const ALL: u32 = u32::MAX;
}

/// A change in the cluster that may make rejected pods schedulable
/// (upstream `ClusterEvent`); plugins register the events that can undo
/// their rejections (EnqueueExtensions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ClusterEvent {
    /// What changed.
    pub resource: EventResource,
    /// How ([`action`] bits).
    pub actions: u32,
}

/// Read access to informer caches (upstream listers); tests use
/// [`StaticLister`].
pub trait Lister<T>: Send + Sync {
    /// The object `namespace/name` (empty namespace for cluster-scoped).
    fn get(&self, namespace: &str, name: &str) -> Option<Arc<T>>;
    /// Every object.
    fn list(&self) -> Vec<Arc<T>>;
    /// The objects of one namespace (upstream's namespaced lister), in no
    /// particular order. The default walks [`Lister::list`]; informer
    /// listers answer from a namespace index instead.
    fn list_namespace(&self, namespace: &str) -> Vec<Arc<T>>
    where
        T: k8s_openapi::Metadata<Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>,
    {
        self.list().into_iter().filter(|o| o.metadata().namespace.as_deref().unwrap_or("") == namespace).collect()
    }
}

/// A [`Lister`] over a fixed set of objects.
pub struct StaticLister<T>(pub HashMap<(String, String), Arc<T>>);

impl<T: k8s_openapi::Metadata<Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>> StaticLister<T> {
    /// A lister holding `objects`.
    pub fn new(objects: impl IntoIterator<Item = T>) -> Self {
        StaticLister(
            objects
                .into_iter()
                .map(|o| {
                    let m = o.metadata();
                    ((m.namespace.clone().unwrap_or_default(), m.name.clone().unwrap_or_default()), Arc::new(o))
                })
                .collect(),
        )
    }
}

impl<T: Send + Sync> Lister<T> for StaticLister<T> {
    fn get(&self, namespace: &str, name: &str) -> Option<Arc<T>> {
        self.0.get(&(namespace.to_string(), name.to_string())).cloned()
    }
    fn list(&self) -> Vec<Arc<T>> {
        self.0.values().cloned().collect()
    }
}

/// The informer caches plugins read besides the snapshot.
#[derive(Clone)]
pub struct Listers {
    /// PersistentVolumeClaims.
    pub pvcs: Arc<dyn Lister<PersistentVolumeClaim>>,
    /// PersistentVolumes.
    pub pvs: Arc<dyn Lister<PersistentVolume>>,
    /// StorageClasses.
    pub storage_classes: Arc<dyn Lister<StorageClass>>,
    /// CSINodes.
    pub csi_nodes: Arc<dyn Lister<CSINode>>,
    /// PodDisruptionBudgets.
    pub pdbs: Arc<dyn Lister<PodDisruptionBudget>>,
    /// Namespaces.
    pub namespaces: Arc<dyn Lister<Namespace>>,
    /// Services (PodTopologySpread's default constraints select pods as
    /// their Services and owners do).
    pub services: Arc<dyn Lister<Service>>,
    /// ReplicationControllers.
    pub replication_controllers: Arc<dyn Lister<ReplicationController>>,
    /// ReplicaSets.
    pub replica_sets: Arc<dyn Lister<ReplicaSet>>,
    /// StatefulSets.
    pub stateful_sets: Arc<dyn Lister<StatefulSet>>,
}

impl Default for Listers {
    fn default() -> Self {
        Listers {
            pvcs: Arc::new(StaticLister(HashMap::new())),
            pvs: Arc::new(StaticLister(HashMap::new())),
            storage_classes: Arc::new(StaticLister(HashMap::new())),
            csi_nodes: Arc::new(StaticLister(HashMap::new())),
            pdbs: Arc::new(StaticLister(HashMap::new())),
            namespaces: Arc::new(StaticLister(HashMap::new())),
            services: Arc::new(StaticLister(HashMap::new())),
            replication_controllers: Arc::new(StaticLister(HashMap::new())),
            replica_sets: Arc::new(StaticLister(HashMap::new())),
            stateful_sets: Arc::new(StaticLister(HashMap::new())),
        }
    }
}

/// What a plugin gets when it is built (upstream `framework.Handle`): the
/// listers, and the API client for plugins that write (binding,
/// preemption, volume binding). `client` is `None` in table tests.
#[derive(Clone, Default)]
pub struct Handle {
    /// Informer caches.
    pub listers: Listers,
    /// The scheduler's API client (as `system:kube-scheduler`).
    pub client: Option<kube::Client>,
}

/// What the framework offers a PostFilter plugin (preemption) to simulate
/// removing pods: the profile's PreFilter extensions and Filter plugins,
/// with the nominated pods of higher or equal priority counted as upstream's
/// `RunFilterPluginsWithNominatedPods` does.
pub trait FilterRunner: Send + Sync {
    /// Every enabled PreFilter plugin's AddPod extension.
    fn run_pre_filter_add_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        to_add: &Arc<PodInfo>,
        node: &NodeInfo,
    ) -> Status;
    /// Every enabled PreFilter plugin's RemovePod extension.
    fn run_pre_filter_remove_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        to_remove: &PodInfo,
        node: &NodeInfo,
    ) -> Status;
    /// The Filter plugins on `node`, with nominated pods added.
    fn run_filter_with_nominated_pods(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status;
}

/// Arguments of [`Plugin::post_filter`].
pub struct PostFilterArgs<'a> {
    /// The cycle's snapshot.
    pub snapshot: &'a Snapshot,
    /// The profile's filters, for simulations.
    pub runner: &'a dyn FilterRunner,
}

/// A scheduling plugin. Every method has a do-nothing default; a plugin
/// lists the points it implements in [`Plugin::extension_points`], and the
/// framework calls only those (and only where the configuration enables it).
#[async_trait::async_trait]
pub trait Plugin: Send + Sync {
    /// The upstream plugin name (`NodeResourcesFit`, …).
    fn name(&self) -> &'static str;

    /// The extension points this plugin implements.
    fn extension_points(&self) -> &'static [ExtensionPoint];

    /// The cluster events that can make a pod this plugin rejected
    /// schedulable (EnqueueExtensions); none = only the 5 min flush.
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        Vec::new()
    }

    /// PreEnqueue: may the pod enter the active queue?
    fn pre_enqueue(&self, _pod: &PodInfo) -> Status {
        Status::success()
    }

    /// PreFilter: computes cycle state; may narrow the nodes, skip its
    /// Filter (Skip), or reject the pod outright.
    fn pre_filter(
        &self,
        _state: &mut CycleState,
        _pod: &PodInfo,
        _snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        (None, Status::success())
    }

    /// PreFilter extension: `to_add` is assumed on `node` in a simulation.
    fn add_pod(&self, _state: &mut CycleState, _pod: &PodInfo, _to_add: &Arc<PodInfo>, _node: &NodeInfo) -> Status {
        Status::success()
    }

    /// PreFilter extension: `to_remove` is taken off `node` in a simulation.
    fn remove_pod(&self, _state: &mut CycleState, _pod: &PodInfo, _to_remove: &PodInfo, _node: &NodeInfo) -> Status {
        Status::success()
    }

    /// Filter: can `pod` run on `node`?
    fn filter(&self, _state: &CycleState, _pod: &PodInfo, _node: &NodeInfo) -> Status {
        Status::success()
    }

    /// PostFilter: runs when no node passed Filter.
    async fn post_filter(
        &self,
        _args: &PostFilterArgs<'_>,
        _state: &CycleState,
        _pod: &PodInfo,
        _statuses: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        (None, Status::new(Code::Unschedulable, ""))
    }

    /// PreScore: computes cycle state over the feasible nodes; Skip skips
    /// this plugin's Score.
    fn pre_score(&self, _state: &mut CycleState, _pod: &PodInfo, _nodes: &[Arc<NodeInfo>]) -> Status {
        Status::success()
    }

    /// Score: a raw score for `node` (normalized afterwards when the plugin
    /// normalizes, else it must be within 0..=100).
    fn score(&self, _state: &CycleState, _pod: &PodInfo, _node: &NodeInfo) -> (i64, Status) {
        (0, Status::success())
    }

    /// NormalizeScore: maps raw scores onto 0..=100 in place.
    fn normalize_score(&self, _state: &CycleState, _pod: &PodInfo, _scores: &mut [NodeScore]) -> Status {
        Status::success()
    }

    /// Reserve: the pod is assumed on `node`.
    fn reserve(&self, _state: &mut CycleState, _pod: &PodInfo, _node: &str) -> Status {
        Status::success()
    }

    /// Unreserve: undo Reserve after a later failure.
    fn unreserve(&self, _state: &mut CycleState, _pod: &PodInfo, _node: &str) {}

    /// Permit: Success, Unschedulable, or Wait with a timeout.
    fn permit(&self, _state: &mut CycleState, _pod: &PodInfo, _node: &str) -> (Status, Duration) {
        (Status::success(), Duration::ZERO)
    }

    /// PreBind: work that must happen before binding (API writes).
    async fn pre_bind(&self, _state: &CycleState, _pod: &PodInfo, _node: &str) -> Status {
        Status::success()
    }

    /// Bind: Skip lets the next Bind plugin try.
    async fn bind(&self, _state: &CycleState, _pod: &PodInfo, _node: &str) -> Status {
        Status::skip()
    }

    /// PostBind: informational, after a successful bind.
    fn post_bind(&self, _state: &CycleState, _pod: &PodInfo, _node: &str) {}
}

/// Builds a plugin from its `pluginConfig` args (the JSON of e.g.
/// `NodeResourcesFitArgs`, `None` for defaults) and the handle. Err: the
/// args are invalid, in upstream's validation wording.
pub type PluginFactory = fn(args: Option<&serde_json::Value>, handle: &Handle) -> Result<Arc<dyn Plugin>, String>;
