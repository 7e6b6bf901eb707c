//! The generic strategy: upstream's behaviour for kinds without special
//! rules, configured with the per-kind flags upstream's strategies set.

use super::{GcPolicy, Strategy};
use crate::validation::NameValidation;

/// A strategy that only differs from the defaults of [`Strategy`] by its
/// flags. Per-kind strategies wrap one for their flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generic {
    /// Whether the kind has a `/status` subresource.
    pub has_status: bool,
    /// Whether `metadata.generation` is tracked.
    pub tracks_generation: bool,
    /// `AllowCreateOnUpdate`.
    pub allow_create_on_update: bool,
    /// `AllowUnconditionalUpdate`.
    pub allow_unconditional_update: bool,
    /// Default garbage collection policy.
    pub gc_policy: GcPolicy,
    /// `ReturnDeletedObject`.
    pub return_deleted_object: bool,
    /// The rule object names follow.
    pub names: NameValidation,
}

impl Generic {
    /// Upstream's custom-resource defaults: generation tracked, no
    /// create-on-update, unconditional updates allowed, background deletion.
    pub fn new(has_status: bool) -> Generic {
        Generic {
            has_status,
            tracks_generation: true,
            allow_create_on_update: false,
            allow_unconditional_update: true,
            gc_policy: GcPolicy::DeleteDependents,
            return_deleted_object: false,
            names: NameValidation::Dns1123Subdomain,
        }
    }
}

/// Core/v1 and other built-in kinds whose objects have no `spec` that a
/// controller observes, so upstream never sets `metadata.generation`.
const UNTRACKED_GENERATION: &[&str] = &[
    "ConfigMap",
    "Secret",
    "Namespace",
    "Event",
    "Endpoints",
    "EndpointSlice",
    "Lease",
    "ServiceAccount",
    "Role",
    "RoleBinding",
    "ClusterRole",
    "ClusterRoleBinding",
    "Node",
    "Service",
    "LimitRange",
    "ResourceQuota",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "PodTemplate",
    "ControllerRevision",
    "StorageClass",
    "PriorityClass",
    "RuntimeClass",
    "CSIDriver",
    "CSINode",
    "CSIStorageCapacity",
    "VolumeAttachment",
    "CertificateSigningRequest",
    "APIService",
    "IngressClass",
    "IPAddress",
    "ServiceCIDR",
];

/// Kinds for which PUT of a missing object creates it.
const CREATE_ON_UPDATE: &[&str] = &[
    "Endpoints",
    "EndpointSlice",
    "Service",
    "Event",
    "LimitRange",
    "Lease",
    "Role",
    "RoleBinding",
    "ClusterRole",
    "ClusterRoleBinding",
    "ServiceAccount",
];

/// Kinds whose delete answers with the object.
const RETURN_DELETED: &[&str] = &[
    "Pod",
    "Namespace",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "PodTemplate",
    "Service",
    "ReplicationController",
    "Deployment",
    "ReplicaSet",
    "StatefulSet",
    "DaemonSet",
    "CustomResourceDefinition",
];

/// The generic strategy with upstream's flags for a built-in kind (custom
/// resources, whose group rkube does not know, get [`Generic::new`]).
pub fn for_builtin(group: &str, kind: &str, has_status: bool) -> Generic {
    let mut s = Generic::new(has_status);
    let builtin_group = group.is_empty() || group.ends_with(".k8s.io") || !group.contains('.');
    if builtin_group {
        s.tracks_generation = !UNTRACKED_GENERATION.contains(&kind);
        s.allow_create_on_update = CREATE_ON_UPDATE.contains(&kind);
        s.return_deleted_object = RETURN_DELETED.contains(&kind);
        s.names = match kind {
            "Service" => NameValidation::Dns1035Label,
            "Namespace" => NameValidation::Dns1123Label,
            "Role" | "RoleBinding" | "ClusterRole" | "ClusterRoleBinding" => NameValidation::PathSegment,
            _ => NameValidation::Dns1123Subdomain,
        };
        if (group.is_empty() && kind == "ReplicationController") || (group == "batch" && kind == "Job") {
            s.gc_policy = GcPolicy::OrphanDependents;
        }
    }
    s
}

impl Strategy for Generic {
    fn has_status_subresource(&self) -> bool {
        self.has_status
    }
    fn tracks_generation(&self) -> bool {
        self.tracks_generation
    }
    fn name_validation(&self) -> NameValidation {
        self.names
    }
    fn allow_create_on_update(&self) -> bool {
        self.allow_create_on_update
    }
    fn allow_unconditional_update(&self) -> bool {
        self.allow_unconditional_update
    }
    fn default_gc_policy(&self) -> GcPolicy {
        self.gc_policy
    }
    fn return_deleted_object(&self) -> bool {
        self.return_deleted_object
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_flags_follow_upstream() {
        let rc = for_builtin("", "ReplicationController", true);
        assert_eq!(rc.gc_policy, GcPolicy::OrphanDependents);
        assert!(for_builtin("", "Service", true).allow_create_on_update);
        assert!(!for_builtin("apps", "Deployment", true).allow_create_on_update);
        assert!(!for_builtin("", "ConfigMap", false).tracks_generation);
        assert!(for_builtin("apps", "Deployment", true).tracks_generation);
    }

    #[test]
    fn custom_resources_get_the_crd_defaults() {
        let cr = for_builtin("example.com", "Widget", false);
        assert_eq!(cr, Generic::new(false));
    }
}
