//! PodTopologySpread (upstream `plugins/podtopologyspread`): spreads pods
//! that match a constraint's selector evenly over the constraint's topology
//! domains. `DoNotSchedule` constraints filter (skew = matching pods in the
//! node's domain + self − global minimum ≤ maxSkew); `ScheduleAnyway`
//! constraints score (fewer matching pods → higher score).
//!
//! - [`common`]: constraints (from the pod or the defaults), node inclusion policies;
//! - [`filtering`]: PreFilter counts, AddPod/RemovePod, Filter;
//! - [`scoring`]: PreScore, Score, NormalizeScore.
//!
//! Default constraints (`defaultingType: System`: hostname maxSkew 3 and
//! zone maxSkew 5, both ScheduleAnyway) apply to a pod with no constraints
//! of its own, with the selector of the Services, ReplicationControllers,
//! ReplicaSets and StatefulSets that select it (upstream
//! `helper.DefaultSelector`), computed by [`ListerSelectorSource`] from the
//! scheduler's informers of those kinds (tests may inject another
//! [`DefaultSelectorSource`]).

mod common;
mod default_selector;
mod filtering;
mod scoring;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, TopologySpreadConstraint};
use rkube_apimachinery::selector::labels::LabelSelector;
use serde::Deserialize;

use crate::framework::{
    action, ClusterEvent, CycleState, EventResource, ExtensionPoint, Handle, NodeInfo, NodeScore, Plugin, PodInfo,
    PreFilterResult, Snapshot, Status,
};
use crate::plugins::names;

pub use default_selector::ListerSelectorSource;
pub use filtering::{ERR_REASON_CONSTRAINTS_NOT_MATCH, ERR_REASON_NODE_LABEL_NOT_MATCH};

/// `PodTopologySpreadArgs` (kubescheduler.config.k8s.io/v1), camelCase.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct PodTopologySpreadArgs {
    /// Constraints for pods that set none (`defaultingType: List`); they
    /// must not set a labelSelector.
    pub default_constraints: Vec<TopologySpreadConstraint>,
    /// `System` (default: upstream's built-in constraints) or `List`.
    pub defaulting_type: String,
}

impl Default for PodTopologySpreadArgs {
    fn default() -> Self {
        PodTopologySpreadArgs { default_constraints: Vec::new(), defaulting_type: "System".to_string() }
    }
}

/// Where the selector for default constraints comes from: upstream unions
/// the selectors of the Services, ReplicationControllers, ReplicaSets and
/// StatefulSets in the pod's namespace that select the pod.
pub trait DefaultSelectorSource: Send + Sync {
    /// The selector for `pod`, or `None` (no default constraints apply).
    fn selector(&self, pod: &Pod) -> Option<LabelSelector>;
}

/// The PodTopologySpread plugin.
pub struct PodTopologySpread {
    default_constraints: Vec<TopologySpreadConstraint>,
    /// Whether `default_constraints` are the system defaults (then nodes
    /// missing a topology label still score on the others).
    system_defaulted: bool,
    selector_source: Option<Arc<dyn DefaultSelectorSource>>,
}

/// The system default constraints (upstream `systemDefaultConstraints`).
fn system_default_constraints() -> Vec<TopologySpreadConstraint> {
    let c = |key: &str, skew: i32| TopologySpreadConstraint {
        topology_key: key.to_string(),
        when_unsatisfiable: "ScheduleAnyway".to_string(),
        max_skew: skew,
        ..Default::default()
    };
    vec![c("kubernetes.io/hostname", 3), c("topology.kubernetes.io/zone", 5)]
}

/// Parses and validates `PodTopologySpreadArgs` (upstream wording, e.g.
/// `defaultingType: Invalid value: "System": when .defaultConstraints are
/// not empty`).
fn parse_args(args: Option<&serde_json::Value>) -> Result<PodTopologySpreadArgs, String> {
    let args: PodTopologySpreadArgs = match args {
        Some(v) => serde_json::from_value(v.clone()).map_err(|e| e.to_string())?,
        None => PodTopologySpreadArgs::default(),
    };
    match args.defaulting_type.as_str() {
        "System" if !args.default_constraints.is_empty() => {
            return Err(r#"defaultingType: Invalid value: "System": when .defaultConstraints are not empty"#.to_string())
        }
        "System" | "List" => {}
        other => {
            return Err(format!(r#"defaultingType: Unsupported value: "{other}": supported values: "System", "List""#))
        }
    }
    for (i, c) in args.default_constraints.iter().enumerate() {
        if c.label_selector.is_some() {
            return Err(format!(
                "defaultConstraints[{i}].labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod"
            ));
        }
        if c.max_skew <= 0 {
            return Err(format!(
                "defaultConstraints[{i}].maxSkew: Invalid value: {}: must be greater than zero",
                c.max_skew
            ));
        }
    }
    Ok(args)
}

/// Builds the plugin from `PodTopologySpreadArgs`; default constraints
/// select pods as their Services, ReplicationControllers, ReplicaSets and
/// StatefulSets do (upstream `DefaultSelector`), read from the handle's listers.
pub fn new(args: Option<&serde_json::Value>, handle: &Handle) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(PodTopologySpread::from_handle(args, handle)?))
}

impl PodTopologySpread {
    /// The plugin [`new`] registers, as its concrete type.
    pub fn from_handle(args: Option<&serde_json::Value>, handle: &Handle) -> Result<PodTopologySpread, String> {
        let l = &handle.listers;
        let source = default_selector::ListerSelectorSource {
            services: l.services.clone(),
            replication_controllers: l.replication_controllers.clone(),
            replica_sets: l.replica_sets.clone(),
            stateful_sets: l.stateful_sets.clone(),
        };
        PodTopologySpread::with_selector_source(args, Some(Arc::new(source)))
    }
}

impl PodTopologySpread {
    /// The plugin with `source` supplying the selector that default
    /// constraints use.
    pub fn with_selector_source(
        args: Option<&serde_json::Value>,
        source: Option<Arc<dyn DefaultSelectorSource>>,
    ) -> Result<PodTopologySpread, String> {
        let args = parse_args(args)?;
        let system = args.defaulting_type == "System";
        Ok(PodTopologySpread {
            default_constraints: if system { system_default_constraints() } else { args.default_constraints },
            system_defaulted: system,
            selector_source: source,
        })
    }
}

#[async_trait::async_trait]
impl Plugin for PodTopologySpread {
    fn name(&self) -> &'static str {
        names::POD_TOPOLOGY_SPREAD
    }

    fn extension_points(&self) -> &'static [ExtensionPoint] {
        &[ExtensionPoint::PreFilter, ExtensionPoint::Filter, ExtensionPoint::PreScore, ExtensionPoint::Score]
    }

    /// Upstream (with queueing hints): pods added, relabelled, deleted or
    /// given tolerations; nodes added, deleted, relabelled or re-tainted
    /// (node inclusion policies).
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![
            ClusterEvent {
                resource: EventResource::Pod,
                // Tolerations: a constraint with nodeTaintsPolicy Honor may now count a node.
                actions: action::ADD | action::UPDATE_POD_LABEL | action::UPDATE_POD_TOLERATIONS | action::DELETE,
            },
            ClusterEvent {
                resource: EventResource::Node,
                actions: action::ADD | action::DELETE | action::UPDATE_NODE_LABEL | action::UPDATE_NODE_TAINT,
            },
        ]
    }

    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        match self.stash_nodes_for_scoring(state, pod, snapshot) {
            Ok(()) => {}
            Err(e) => return (None, Status::error(e)),
        }
        (None, self.compute_pre_filter(state, pod, snapshot))
    }

    fn add_pod(&self, state: &mut CycleState, pod: &PodInfo, to_add: &Arc<PodInfo>, node: &NodeInfo) -> Status {
        filtering::update_with_pod(state, &to_add.pod, &pod.pod, node, 1)
    }

    fn remove_pod(&self, state: &mut CycleState, pod: &PodInfo, to_remove: &PodInfo, node: &NodeInfo) -> Status {
        filtering::update_with_pod(state, &to_remove.pod, &pod.pod, node, -1)
    }

    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        filtering::filter(state, pod, node)
    }

    fn pre_score(&self, state: &mut CycleState, pod: &PodInfo, nodes: &[Arc<NodeInfo>]) -> Status {
        self.compute_pre_score(state, pod, nodes)
    }

    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> (i64, Status) {
        scoring::score(state, pod, node)
    }

    fn normalize_score(&self, state: &CycleState, _pod: &PodInfo, scores: &mut [NodeScore]) -> Status {
        scoring::normalize_score(state, scores)
    }
}
