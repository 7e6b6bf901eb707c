//! The default plugins (upstream `pkg/scheduler/framework/plugins`), one
//! module per plugin, each named as upstream and registered in
//! [`registry`] for KubeSchedulerConfiguration profiles.

use crate::framework::PluginFactory;

/// Every plugin rkube knows, by upstream name, with its factory.
pub fn registry() -> Vec<(&'static str, PluginFactory)> {
    vec![
        // Each plugin module adds its line here: (names::X, x::new).
    ]
}

/// Upstream plugin names.
pub mod names {
    /// PrioritySort (QueueSort).
    pub const PRIORITY_SORT: &str = "PrioritySort";
    /// SchedulingGates (PreEnqueue).
    pub const SCHEDULING_GATES: &str = "SchedulingGates";
    /// NodeUnschedulable.
    pub const NODE_UNSCHEDULABLE: &str = "NodeUnschedulable";
    /// NodeName.
    pub const NODE_NAME: &str = "NodeName";
    /// TaintToleration.
    pub const TAINT_TOLERATION: &str = "TaintToleration";
    /// NodeAffinity.
    pub const NODE_AFFINITY: &str = "NodeAffinity";
    /// NodePorts.
    pub const NODE_PORTS: &str = "NodePorts";
    /// NodeResourcesFit.
    pub const NODE_RESOURCES_FIT: &str = "NodeResourcesFit";
    /// NodeResourcesBalancedAllocation.
    pub const NODE_RESOURCES_BALANCED_ALLOCATION: &str = "NodeResourcesBalancedAllocation";
    /// InterPodAffinity.
    pub const INTER_POD_AFFINITY: &str = "InterPodAffinity";
    /// PodTopologySpread.
    pub const POD_TOPOLOGY_SPREAD: &str = "PodTopologySpread";
    /// ImageLocality.
    pub const IMAGE_LOCALITY: &str = "ImageLocality";
    /// VolumeBinding.
    pub const VOLUME_BINDING: &str = "VolumeBinding";
    /// VolumeRestrictions.
    pub const VOLUME_RESTRICTIONS: &str = "VolumeRestrictions";
    /// DefaultPreemption.
    pub const DEFAULT_PREEMPTION: &str = "DefaultPreemption";
    /// DefaultBinder.
    pub const DEFAULT_BINDER: &str = "DefaultBinder";
}
