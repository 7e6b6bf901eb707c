//! The one list of built-in kinds backed by a `k8s-openapi` struct (API
//! level 1.33). Typed decoding ([`crate::typed`]) and the OpenAPI schemas
//! ([`crate::openapi::kinds`]) both expand it, so a kind added here gets
//! both its pruning decoder and its schema.

/// Calls the macro `$m` with every struct-backed built-in kind as a
/// comma-separated list of type paths.
macro_rules! builtin_kinds {
    ($m:ident) => {
        $m![
            k8s_openapi::api::core::v1::Binding,
            k8s_openapi::api::core::v1::ComponentStatus,
            k8s_openapi::api::core::v1::ConfigMap,
            k8s_openapi::api::core::v1::Endpoints,
            k8s_openapi::api::core::v1::Event,
            k8s_openapi::api::core::v1::LimitRange,
            k8s_openapi::api::core::v1::Namespace,
            k8s_openapi::api::core::v1::Node,
            k8s_openapi::api::core::v1::PersistentVolume,
            k8s_openapi::api::core::v1::PersistentVolumeClaim,
            k8s_openapi::api::core::v1::Pod,
            k8s_openapi::api::core::v1::PodTemplate,
            k8s_openapi::api::core::v1::ReplicationController,
            k8s_openapi::api::core::v1::ResourceQuota,
            k8s_openapi::api::core::v1::Secret,
            k8s_openapi::api::core::v1::Service,
            k8s_openapi::api::core::v1::ServiceAccount,
            k8s_openapi::api::apps::v1::ControllerRevision,
            k8s_openapi::api::apps::v1::DaemonSet,
            k8s_openapi::api::apps::v1::Deployment,
            k8s_openapi::api::apps::v1::ReplicaSet,
            k8s_openapi::api::apps::v1::StatefulSet,
            k8s_openapi::api::batch::v1::CronJob,
            k8s_openapi::api::batch::v1::Job,
            k8s_openapi::api::coordination::v1::Lease,
            k8s_openapi::api::discovery::v1::EndpointSlice,
            k8s_openapi::api::events::v1::Event,
            k8s_openapi::api::rbac::v1::ClusterRole,
            k8s_openapi::api::rbac::v1::ClusterRoleBinding,
            k8s_openapi::api::rbac::v1::Role,
            k8s_openapi::api::rbac::v1::RoleBinding,
            k8s_openapi::api::policy::v1::Eviction,
            k8s_openapi::api::policy::v1::PodDisruptionBudget,
            k8s_openapi::api::autoscaling::v1::HorizontalPodAutoscaler,
            k8s_openapi::api::autoscaling::v1::Scale,
            k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler,
            k8s_openapi::api::networking::v1::Ingress,
            k8s_openapi::api::networking::v1::IngressClass,
            k8s_openapi::api::networking::v1::IPAddress,
            k8s_openapi::api::networking::v1::NetworkPolicy,
            k8s_openapi::api::networking::v1::ServiceCIDR,
            k8s_openapi::api::storage::v1::CSIDriver,
            k8s_openapi::api::storage::v1::CSINode,
            k8s_openapi::api::storage::v1::CSIStorageCapacity,
            k8s_openapi::api::storage::v1::StorageClass,
            k8s_openapi::api::storage::v1::VolumeAttachment,
            k8s_openapi::api::scheduling::v1::PriorityClass,
            k8s_openapi::api::node::v1::RuntimeClass,
            k8s_openapi::api::certificates::v1::CertificateSigningRequest,
            k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
            k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration,
            k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy,
            k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicyBinding,
            k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration,
            k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService,
            k8s_openapi::api::authentication::v1::SelfSubjectReview,
            k8s_openapi::api::authentication::v1::TokenRequest,
            k8s_openapi::api::authentication::v1::TokenReview,
            k8s_openapi::api::authorization::v1::LocalSubjectAccessReview,
            k8s_openapi::api::authorization::v1::SelfSubjectAccessReview,
            k8s_openapi::api::authorization::v1::SelfSubjectRulesReview,
            k8s_openapi::api::authorization::v1::SubjectAccessReview,
            k8s_openapi::api::flowcontrol::v1::FlowSchema,
            k8s_openapi::api::flowcontrol::v1::PriorityLevelConfiguration,
        ]
    };
}

pub(crate) use builtin_kinds;
