//! The default plugins (upstream `pkg/scheduler/framework/plugins`), one
//! module per plugin, each named as upstream and registered in
//! [`registry`] for KubeSchedulerConfiguration profiles.

use crate::framework::PluginFactory;

pub mod default_binder;
pub mod defaultpreemption;
pub mod helper;
pub mod image_locality;
pub mod interpodaffinity;
pub mod node_affinity;
pub mod node_name;
pub mod node_ports;
pub mod node_unschedulable;
pub mod noderesources;
pub mod podtopologyspread;
pub mod priority_sort;
pub mod scheduling_gates;
pub mod taint_toleration;
#[cfg(test)]
pub mod testing;
pub mod volume_binding;
pub mod volume_restrictions;

/// Every plugin rkube knows, by upstream name, with its factory.
pub fn registry() -> Vec<(&'static str, PluginFactory)> {
    vec![
        // Each plugin module adds its line here: (names::X, x::new).
        (names::PRIORITY_SORT, priority_sort::new),
        (names::SCHEDULING_GATES, scheduling_gates::new),
        (names::NODE_UNSCHEDULABLE, node_unschedulable::new),
        (names::NODE_NAME, node_name::new),
        (names::TAINT_TOLERATION, taint_toleration::new),
        (names::NODE_AFFINITY, node_affinity::new),
        (names::NODE_PORTS, node_ports::new),
        (names::DEFAULT_BINDER, default_binder::new),
        (names::INTER_POD_AFFINITY, interpodaffinity::new),
        (names::POD_TOPOLOGY_SPREAD, podtopologyspread::new),
        (names::DEFAULT_PREEMPTION, defaultpreemption::new),
        (names::NODE_RESOURCES_FIT, noderesources::fit::new),
        (names::NODE_RESOURCES_BALANCED_ALLOCATION, noderesources::balanced_allocation::new),
        (names::IMAGE_LOCALITY, image_locality::new),
        (names::VOLUME_RESTRICTIONS, volume_restrictions::new),
        (names::VOLUME_BINDING, volume_binding::new),
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
