//! The kinds whose schemas the OpenAPI documents carry, each tied to its
//! `k8s-openapi` struct (API level 1.33) and so to that struct's
//! `schemars::JsonSchema` implementation, which holds upstream's field
//! descriptions, types, formats and required lists.
//!
//! A resource of the registry gets a schema when its group/version/kind is
//! listed here; subresource kinds (`autoscaling/v1 Scale`, `policy/v1
//! Eviction`, `v1 Binding`, `authentication.k8s.io/v1 TokenRequest`) are
//! listed like any other kind. List kinds (`PodList`) are synthesised from
//! the item kind, as `k8s-openapi` has no schema for them.

use std::borrow::Cow;

use k8s_openapi::api::{
    admissionregistration, apps, authentication, authorization, autoscaling, batch, certificates, coordination, core,
    discovery, events, flowcontrol, networking, node, policy, rbac, scheduling, storage,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration;
use k8s_openapi::Resource;
use schemars::{JsonSchema, Schema, SchemaGenerator};

/// One kind with a schema: its group/version/kind and the hooks into its
/// struct's `JsonSchema` implementation.
#[derive(Clone, Copy)]
pub struct KindSchema {
    /// API group (`""` for core).
    pub group: &'static str,
    /// API version.
    pub version: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// The upstream definition name, e.g. `io.k8s.api.core.v1.Pod`.
    pub schema_name: fn() -> Cow<'static, str>,
    /// Adds the schema and everything it references to the generator and
    /// returns a `$ref` to it.
    pub(crate) add: fn(&mut SchemaGenerator) -> Schema,
}

impl std::fmt::Debug for KindSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{} {} ({})", self.group, self.version, self.kind, (self.schema_name)())
    }
}

impl KindSchema {
    const fn of<T: Resource + JsonSchema>() -> KindSchema {
        KindSchema {
            group: T::GROUP,
            version: T::VERSION,
            kind: T::KIND,
            schema_name: T::schema_name,
            add: SchemaGenerator::subschema_for::<T>,
        }
    }
}

/// The kind table entry for `group`/`version`/`kind`, if any.
pub fn lookup(group: &str, version: &str, kind: &str) -> Option<&'static KindSchema> {
    ALL.iter().find(|k| k.group == group && k.version == version && k.kind == kind)
}

/// Every kind with a schema.
pub static ALL: &[KindSchema] = &[
    KindSchema::of::<core::v1::Binding>(),
    KindSchema::of::<core::v1::ComponentStatus>(),
    KindSchema::of::<core::v1::ConfigMap>(),
    KindSchema::of::<core::v1::Endpoints>(),
    KindSchema::of::<core::v1::Event>(),
    KindSchema::of::<core::v1::LimitRange>(),
    KindSchema::of::<core::v1::Namespace>(),
    KindSchema::of::<core::v1::Node>(),
    KindSchema::of::<core::v1::PersistentVolume>(),
    KindSchema::of::<core::v1::PersistentVolumeClaim>(),
    KindSchema::of::<core::v1::Pod>(),
    KindSchema::of::<core::v1::PodTemplate>(),
    KindSchema::of::<core::v1::ReplicationController>(),
    KindSchema::of::<core::v1::ResourceQuota>(),
    KindSchema::of::<core::v1::Secret>(),
    KindSchema::of::<core::v1::Service>(),
    KindSchema::of::<core::v1::ServiceAccount>(),
    KindSchema::of::<apps::v1::ControllerRevision>(),
    KindSchema::of::<apps::v1::DaemonSet>(),
    KindSchema::of::<apps::v1::Deployment>(),
    KindSchema::of::<apps::v1::ReplicaSet>(),
    KindSchema::of::<apps::v1::StatefulSet>(),
    KindSchema::of::<batch::v1::CronJob>(),
    KindSchema::of::<batch::v1::Job>(),
    KindSchema::of::<coordination::v1::Lease>(),
    KindSchema::of::<discovery::v1::EndpointSlice>(),
    KindSchema::of::<events::v1::Event>(),
    KindSchema::of::<rbac::v1::ClusterRole>(),
    KindSchema::of::<rbac::v1::ClusterRoleBinding>(),
    KindSchema::of::<rbac::v1::Role>(),
    KindSchema::of::<rbac::v1::RoleBinding>(),
    KindSchema::of::<policy::v1::Eviction>(),
    KindSchema::of::<policy::v1::PodDisruptionBudget>(),
    KindSchema::of::<autoscaling::v1::HorizontalPodAutoscaler>(),
    KindSchema::of::<autoscaling::v1::Scale>(),
    KindSchema::of::<autoscaling::v2::HorizontalPodAutoscaler>(),
    KindSchema::of::<networking::v1::Ingress>(),
    KindSchema::of::<networking::v1::IngressClass>(),
    KindSchema::of::<networking::v1::IPAddress>(),
    KindSchema::of::<networking::v1::NetworkPolicy>(),
    KindSchema::of::<networking::v1::ServiceCIDR>(),
    KindSchema::of::<storage::v1::CSIDriver>(),
    KindSchema::of::<storage::v1::CSINode>(),
    KindSchema::of::<storage::v1::CSIStorageCapacity>(),
    KindSchema::of::<storage::v1::StorageClass>(),
    KindSchema::of::<storage::v1::VolumeAttachment>(),
    KindSchema::of::<scheduling::v1::PriorityClass>(),
    KindSchema::of::<node::v1::RuntimeClass>(),
    KindSchema::of::<certificates::v1::CertificateSigningRequest>(),
    KindSchema::of::<apiextensions::v1::CustomResourceDefinition>(),
    KindSchema::of::<admissionregistration::v1::MutatingWebhookConfiguration>(),
    KindSchema::of::<admissionregistration::v1::ValidatingAdmissionPolicy>(),
    KindSchema::of::<admissionregistration::v1::ValidatingAdmissionPolicyBinding>(),
    KindSchema::of::<admissionregistration::v1::ValidatingWebhookConfiguration>(),
    KindSchema::of::<apiregistration::v1::APIService>(),
    KindSchema::of::<authentication::v1::SelfSubjectReview>(),
    KindSchema::of::<authentication::v1::TokenRequest>(),
    KindSchema::of::<authentication::v1::TokenReview>(),
    KindSchema::of::<authorization::v1::LocalSubjectAccessReview>(),
    KindSchema::of::<authorization::v1::SelfSubjectAccessReview>(),
    KindSchema::of::<authorization::v1::SelfSubjectRulesReview>(),
    KindSchema::of::<authorization::v1::SubjectAccessReview>(),
    KindSchema::of::<flowcontrol::v1::FlowSchema>(),
    KindSchema::of::<flowcontrol::v1::PriorityLevelConfiguration>(),
];
