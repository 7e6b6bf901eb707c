//! The patch-metadata rows: facts read from the upstream API struct tags
//! (`json`, `patchStrategy`, `patchMergeKey`) of k8s.io/api,
//! apimachinery meta/v1, apiextensions-apiserver and kube-aggregator at
//! v0.33.9 (Kubernetes 1.33), the same facts upstream publishes as
//! `x-kubernetes-patch-strategy` / `x-kubernetes-patch-merge-key`.
//!
//! Only types that carry a strategy themselves, or lead to one, are listed;
//! within them only such fields. Every other field patches with the default
//! rules (maps merge, lists are replaced), exactly as an untagged field does.
//! Rows: `f(json name, shape, strategy, merge key, type of the value —
//! the element type for lists and maps — when that type is listed)`.
//! Both tables are sorted by name for binary search.

use super::{f, FieldShape::*, KindInfo, TypeInfo, MERGE, MERGE_RETAIN_KEYS, NONE, REPLACE, RETAIN_KEYS};

pub(super) static TYPES: &[TypeInfo] = &[
    TypeInfo {
        name: "io.k8s.api.admissionregistration.v1.MutatingWebhook",
        fields: &[f("matchConditions", List, MERGE, Some("name"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("webhooks", List, MERGE, Some("name"), Some("io.k8s.api.admissionregistration.v1.MutatingWebhook")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicy",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicySpec")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicySpec",
        fields: &[
            f("matchConditions", List, MERGE, Some("name"), None),
            f("variables", List, MERGE, Some("name"), None),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.admissionregistration.v1.ValidatingWebhook",
        fields: &[f("matchConditions", List, MERGE, Some("name"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("webhooks", List, MERGE, Some("name"), Some("io.k8s.api.admissionregistration.v1.ValidatingWebhook")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.admissionregistration.v1alpha1.MutatingAdmissionPolicy",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f(
                "spec",
                Struct,
                NONE,
                None,
                Some("io.k8s.api.admissionregistration.v1alpha1.MutatingAdmissionPolicySpec"),
            ),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.admissionregistration.v1alpha1.MutatingAdmissionPolicyBinding",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.admissionregistration.v1alpha1.MutatingAdmissionPolicySpec",
        fields: &[f("matchConditions", List, MERGE, Some("name"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.admissionregistration.v1alpha1.ValidatingAdmissionPolicy",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f(
                "spec",
                Struct,
                NONE,
                None,
                Some("io.k8s.api.admissionregistration.v1alpha1.ValidatingAdmissionPolicySpec"),
            ),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.admissionregistration.v1alpha1.ValidatingAdmissionPolicyBinding",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.admissionregistration.v1alpha1.ValidatingAdmissionPolicySpec",
        fields: &[
            f("matchConditions", List, MERGE, Some("name"), None),
            f("variables", List, MERGE, Some("name"), None),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.admissionregistration.v1beta1.MutatingWebhook",
        fields: &[f("matchConditions", List, MERGE, Some("name"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.admissionregistration.v1beta1.MutatingWebhookConfiguration",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("webhooks", List, MERGE, Some("name"), Some("io.k8s.api.admissionregistration.v1beta1.MutatingWebhook")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.admissionregistration.v1beta1.ValidatingAdmissionPolicy",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f(
                "spec",
                Struct,
                NONE,
                None,
                Some("io.k8s.api.admissionregistration.v1beta1.ValidatingAdmissionPolicySpec"),
            ),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.admissionregistration.v1beta1.ValidatingAdmissionPolicyBinding",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.admissionregistration.v1beta1.ValidatingAdmissionPolicySpec",
        fields: &[
            f("matchConditions", List, MERGE, Some("name"), None),
            f("variables", List, MERGE, Some("name"), None),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.admissionregistration.v1beta1.ValidatingWebhook",
        fields: &[f("matchConditions", List, MERGE, Some("name"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.admissionregistration.v1beta1.ValidatingWebhookConfiguration",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f(
                "webhooks",
                List,
                MERGE,
                Some("name"),
                Some("io.k8s.api.admissionregistration.v1beta1.ValidatingWebhook"),
            ),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.apidiscovery.v2.APIGroupDiscovery",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.apidiscovery.v2beta1.APIGroupDiscovery",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.apiserverinternal.v1alpha1.StorageVersion",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1.ControllerRevision",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1.DaemonSet",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.apps.v1.DaemonSetSpec")),
            f("status", Struct, NONE, None, Some("io.k8s.api.apps.v1.DaemonSetStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1.DaemonSetSpec",
        fields: &[f("template", Struct, NONE, None, Some("io.k8s.api.core.v1.PodTemplateSpec"))],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1.DaemonSetStatus",
        fields: &[f("conditions", List, MERGE, Some("type"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1.Deployment",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.apps.v1.DeploymentSpec")),
            f("status", Struct, NONE, None, Some("io.k8s.api.apps.v1.DeploymentStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1.DeploymentSpec",
        fields: &[
            f("strategy", Struct, RETAIN_KEYS, None, None),
            f("template", Struct, NONE, None, Some("io.k8s.api.core.v1.PodTemplateSpec")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1.DeploymentStatus",
        fields: &[f("conditions", List, MERGE, Some("type"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1.ReplicaSet",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.apps.v1.ReplicaSetSpec")),
            f("status", Struct, NONE, None, Some("io.k8s.api.apps.v1.ReplicaSetStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1.ReplicaSetSpec",
        fields: &[f("template", Struct, NONE, None, Some("io.k8s.api.core.v1.PodTemplateSpec"))],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1.ReplicaSetStatus",
        fields: &[f("conditions", List, MERGE, Some("type"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1.StatefulSet",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.apps.v1.StatefulSetSpec")),
            f("status", Struct, NONE, None, Some("io.k8s.api.apps.v1.StatefulSetStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1.StatefulSetSpec",
        fields: &[
            f("template", Struct, NONE, None, Some("io.k8s.api.core.v1.PodTemplateSpec")),
            f("volumeClaimTemplates", List, NONE, None, Some("io.k8s.api.core.v1.PersistentVolumeClaim")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1.StatefulSetStatus",
        fields: &[f("conditions", List, MERGE, Some("type"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1beta1.ControllerRevision",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1beta1.Deployment",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.apps.v1beta1.DeploymentSpec")),
            f("status", Struct, NONE, None, Some("io.k8s.api.apps.v1beta1.DeploymentStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1beta1.DeploymentSpec",
        fields: &[
            f("strategy", Struct, RETAIN_KEYS, None, None),
            f("template", Struct, NONE, None, Some("io.k8s.api.core.v1.PodTemplateSpec")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1beta1.DeploymentStatus",
        fields: &[f("conditions", List, MERGE, Some("type"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1beta1.Scale",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1beta1.StatefulSet",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.apps.v1beta1.StatefulSetSpec")),
            f("status", Struct, NONE, None, Some("io.k8s.api.apps.v1beta1.StatefulSetStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1beta1.StatefulSetSpec",
        fields: &[
            f("template", Struct, NONE, None, Some("io.k8s.api.core.v1.PodTemplateSpec")),
            f("volumeClaimTemplates", List, NONE, None, Some("io.k8s.api.core.v1.PersistentVolumeClaim")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1beta1.StatefulSetStatus",
        fields: &[f("conditions", List, MERGE, Some("type"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1beta2.ControllerRevision",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1beta2.DaemonSet",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.apps.v1beta2.DaemonSetSpec")),
            f("status", Struct, NONE, None, Some("io.k8s.api.apps.v1beta2.DaemonSetStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1beta2.DaemonSetSpec",
        fields: &[f("template", Struct, NONE, None, Some("io.k8s.api.core.v1.PodTemplateSpec"))],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1beta2.DaemonSetStatus",
        fields: &[f("conditions", List, MERGE, Some("type"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1beta2.Deployment",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.apps.v1beta2.DeploymentSpec")),
            f("status", Struct, NONE, None, Some("io.k8s.api.apps.v1beta2.DeploymentStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1beta2.DeploymentSpec",
        fields: &[
            f("strategy", Struct, RETAIN_KEYS, None, None),
            f("template", Struct, NONE, None, Some("io.k8s.api.core.v1.PodTemplateSpec")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1beta2.DeploymentStatus",
        fields: &[f("conditions", List, MERGE, Some("type"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1beta2.ReplicaSet",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.apps.v1beta2.ReplicaSetSpec")),
            f("status", Struct, NONE, None, Some("io.k8s.api.apps.v1beta2.ReplicaSetStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1beta2.ReplicaSetSpec",
        fields: &[f("template", Struct, NONE, None, Some("io.k8s.api.core.v1.PodTemplateSpec"))],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1beta2.ReplicaSetStatus",
        fields: &[f("conditions", List, MERGE, Some("type"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1beta2.Scale",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1beta2.StatefulSet",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.apps.v1beta2.StatefulSetSpec")),
            f("status", Struct, NONE, None, Some("io.k8s.api.apps.v1beta2.StatefulSetStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1beta2.StatefulSetSpec",
        fields: &[
            f("template", Struct, NONE, None, Some("io.k8s.api.core.v1.PodTemplateSpec")),
            f("volumeClaimTemplates", List, NONE, None, Some("io.k8s.api.core.v1.PersistentVolumeClaim")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.apps.v1beta2.StatefulSetStatus",
        fields: &[f("conditions", List, MERGE, Some("type"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.authentication.v1.SelfSubjectReview",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.authentication.v1.TokenRequest",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.authentication.v1.TokenReview",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.authentication.v1alpha1.SelfSubjectReview",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.authentication.v1beta1.SelfSubjectReview",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.authentication.v1beta1.TokenReview",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.authorization.v1.LocalSubjectAccessReview",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.authorization.v1.SelfSubjectAccessReview",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.authorization.v1.SelfSubjectRulesReview",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.authorization.v1.SubjectAccessReview",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.authorization.v1beta1.LocalSubjectAccessReview",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.authorization.v1beta1.SelfSubjectAccessReview",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.authorization.v1beta1.SelfSubjectRulesReview",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.authorization.v1beta1.SubjectAccessReview",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.autoscaling.v1.Scale",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("status", Struct, NONE, None, Some("io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus",
        fields: &[f("conditions", List, MERGE, Some("type"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.autoscaling.v2beta1.HorizontalPodAutoscaler",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.autoscaling.v2beta2.HorizontalPodAutoscaler",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.batch.v1.CronJob",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.batch.v1.CronJobSpec")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.batch.v1.CronJobSpec",
        fields: &[f("jobTemplate", Struct, NONE, None, Some("io.k8s.api.batch.v1.JobTemplateSpec"))],
    },
    TypeInfo {
        name: "io.k8s.api.batch.v1.Job",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.batch.v1.JobSpec")),
            f("status", Struct, NONE, None, Some("io.k8s.api.batch.v1.JobStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.batch.v1.JobSpec",
        fields: &[f("template", Struct, NONE, None, Some("io.k8s.api.core.v1.PodTemplateSpec"))],
    },
    TypeInfo { name: "io.k8s.api.batch.v1.JobStatus", fields: &[f("conditions", List, MERGE, Some("type"), None)] },
    TypeInfo {
        name: "io.k8s.api.batch.v1.JobTemplateSpec",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.batch.v1.JobSpec")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.batch.v1beta1.CronJob",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.batch.v1beta1.CronJobSpec")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.batch.v1beta1.CronJobSpec",
        fields: &[f("jobTemplate", Struct, NONE, None, Some("io.k8s.api.batch.v1beta1.JobTemplateSpec"))],
    },
    TypeInfo {
        name: "io.k8s.api.batch.v1beta1.JobTemplateSpec",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.batch.v1.JobSpec")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.certificates.v1.CertificateSigningRequest",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.certificates.v1alpha1.ClusterTrustBundle",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.certificates.v1beta1.CertificateSigningRequest",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.certificates.v1beta1.ClusterTrustBundle",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.coordination.v1.Lease",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.coordination.v1alpha2.LeaseCandidate",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.coordination.v1beta1.Lease",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.coordination.v1beta1.LeaseCandidate",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.Binding",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.ComponentStatus",
        fields: &[
            f("conditions", List, MERGE, Some("type"), None),
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.ConfigMap",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.Container",
        fields: &[
            f("env", List, MERGE, Some("name"), None),
            f("ports", List, MERGE, Some("containerPort"), None),
            f("volumeDevices", List, MERGE, Some("devicePath"), None),
            f("volumeMounts", List, MERGE, Some("mountPath"), None),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.ContainerStatus",
        fields: &[
            f("allocatedResourcesStatus", List, MERGE, Some("name"), None),
            f("volumeMounts", List, MERGE, Some("mountPath"), None),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.Endpoints",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.EphemeralContainer",
        fields: &[
            f("env", List, MERGE, Some("name"), None),
            f("ports", List, MERGE, Some("containerPort"), None),
            f("volumeDevices", List, MERGE, Some("devicePath"), None),
            f("volumeMounts", List, MERGE, Some("mountPath"), None),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.EphemeralContainerCommon",
        fields: &[
            f("env", List, MERGE, Some("name"), None),
            f("ports", List, MERGE, Some("containerPort"), None),
            f("volumeDevices", List, MERGE, Some("devicePath"), None),
            f("volumeMounts", List, MERGE, Some("mountPath"), None),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.EphemeralVolumeSource",
        fields: &[f(
            "volumeClaimTemplate",
            Struct,
            NONE,
            None,
            Some("io.k8s.api.core.v1.PersistentVolumeClaimTemplate"),
        )],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.Event",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.LimitRange",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.Namespace",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("status", Struct, NONE, None, Some("io.k8s.api.core.v1.NamespaceStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.NamespaceStatus",
        fields: &[f("conditions", List, MERGE, Some("type"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.Node",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.core.v1.NodeSpec")),
            f("status", Struct, NONE, None, Some("io.k8s.api.core.v1.NodeStatus")),
        ],
    },
    TypeInfo { name: "io.k8s.api.core.v1.NodeSpec", fields: &[f("podCIDRs", List, MERGE, None, None)] },
    TypeInfo {
        name: "io.k8s.api.core.v1.NodeStatus",
        fields: &[f("addresses", List, MERGE, Some("type"), None), f("conditions", List, MERGE, Some("type"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.PersistentVolume",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.PersistentVolumeClaim",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("status", Struct, NONE, None, Some("io.k8s.api.core.v1.PersistentVolumeClaimStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.PersistentVolumeClaimStatus",
        fields: &[f("conditions", List, MERGE, Some("type"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.PersistentVolumeClaimTemplate",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.Pod",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.core.v1.PodSpec")),
            f("status", Struct, NONE, None, Some("io.k8s.api.core.v1.PodStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.PodSpec",
        fields: &[
            f("containers", List, MERGE, Some("name"), Some("io.k8s.api.core.v1.Container")),
            f("ephemeralContainers", List, MERGE, Some("name"), Some("io.k8s.api.core.v1.EphemeralContainer")),
            f("hostAliases", List, MERGE, Some("ip"), None),
            f("imagePullSecrets", List, MERGE, Some("name"), None),
            f("initContainers", List, MERGE, Some("name"), Some("io.k8s.api.core.v1.Container")),
            f("resourceClaims", List, MERGE_RETAIN_KEYS, Some("name"), None),
            f("schedulingGates", List, MERGE, Some("name"), None),
            f("topologySpreadConstraints", List, MERGE, Some("topologyKey"), None),
            f("volumes", List, MERGE_RETAIN_KEYS, Some("name"), Some("io.k8s.api.core.v1.Volume")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.PodStatus",
        fields: &[
            f("conditions", List, MERGE, Some("type"), None),
            f("containerStatuses", List, NONE, None, Some("io.k8s.api.core.v1.ContainerStatus")),
            f("ephemeralContainerStatuses", List, NONE, None, Some("io.k8s.api.core.v1.ContainerStatus")),
            f("hostIPs", List, MERGE, Some("ip"), None),
            f("initContainerStatuses", List, NONE, None, Some("io.k8s.api.core.v1.ContainerStatus")),
            f("podIPs", List, MERGE, Some("ip"), None),
            f("resourceClaimStatuses", List, MERGE_RETAIN_KEYS, Some("name"), None),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.PodStatusResult",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("status", Struct, NONE, None, Some("io.k8s.api.core.v1.PodStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.PodTemplate",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("template", Struct, NONE, None, Some("io.k8s.api.core.v1.PodTemplateSpec")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.PodTemplateSpec",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.core.v1.PodSpec")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.RangeAllocation",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.ReplicationController",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.core.v1.ReplicationControllerSpec")),
            f("status", Struct, NONE, None, Some("io.k8s.api.core.v1.ReplicationControllerStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.ReplicationControllerSpec",
        fields: &[f("template", Struct, NONE, None, Some("io.k8s.api.core.v1.PodTemplateSpec"))],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.ReplicationControllerStatus",
        fields: &[f("conditions", List, MERGE, Some("type"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.ResourceQuota",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.Secret",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.Service",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.core.v1.ServiceSpec")),
            f("status", Struct, NONE, None, Some("io.k8s.api.core.v1.ServiceStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.ServiceAccount",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("secrets", List, MERGE, Some("name"), None),
        ],
    },
    TypeInfo { name: "io.k8s.api.core.v1.ServiceSpec", fields: &[f("ports", List, MERGE, Some("port"), None)] },
    TypeInfo { name: "io.k8s.api.core.v1.ServiceStatus", fields: &[f("conditions", List, MERGE, Some("type"), None)] },
    TypeInfo {
        name: "io.k8s.api.core.v1.Volume",
        fields: &[f("ephemeral", Struct, NONE, None, Some("io.k8s.api.core.v1.EphemeralVolumeSource"))],
    },
    TypeInfo {
        name: "io.k8s.api.core.v1.VolumeSource",
        fields: &[f("ephemeral", Struct, NONE, None, Some("io.k8s.api.core.v1.EphemeralVolumeSource"))],
    },
    TypeInfo {
        name: "io.k8s.api.discovery.v1.EndpointSlice",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.discovery.v1beta1.EndpointSlice",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.events.v1.Event",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.events.v1beta1.Event",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.extensions.v1beta1.DaemonSet",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.extensions.v1beta1.DaemonSetSpec")),
            f("status", Struct, NONE, None, Some("io.k8s.api.extensions.v1beta1.DaemonSetStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.extensions.v1beta1.DaemonSetSpec",
        fields: &[f("template", Struct, NONE, None, Some("io.k8s.api.core.v1.PodTemplateSpec"))],
    },
    TypeInfo {
        name: "io.k8s.api.extensions.v1beta1.DaemonSetStatus",
        fields: &[f("conditions", List, MERGE, Some("type"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.extensions.v1beta1.Deployment",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.extensions.v1beta1.DeploymentSpec")),
            f("status", Struct, NONE, None, Some("io.k8s.api.extensions.v1beta1.DeploymentStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.extensions.v1beta1.DeploymentSpec",
        fields: &[
            f("strategy", Struct, RETAIN_KEYS, None, None),
            f("template", Struct, NONE, None, Some("io.k8s.api.core.v1.PodTemplateSpec")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.extensions.v1beta1.DeploymentStatus",
        fields: &[f("conditions", List, MERGE, Some("type"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.extensions.v1beta1.Ingress",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.extensions.v1beta1.NetworkPolicy",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.extensions.v1beta1.ReplicaSet",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.extensions.v1beta1.ReplicaSetSpec")),
            f("status", Struct, NONE, None, Some("io.k8s.api.extensions.v1beta1.ReplicaSetStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.extensions.v1beta1.ReplicaSetSpec",
        fields: &[f("template", Struct, NONE, None, Some("io.k8s.api.core.v1.PodTemplateSpec"))],
    },
    TypeInfo {
        name: "io.k8s.api.extensions.v1beta1.ReplicaSetStatus",
        fields: &[f("conditions", List, MERGE, Some("type"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.extensions.v1beta1.Scale",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.flowcontrol.v1.FlowSchema",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("status", Struct, NONE, None, Some("io.k8s.api.flowcontrol.v1.FlowSchemaStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.flowcontrol.v1.FlowSchemaStatus",
        fields: &[f("conditions", List, MERGE, Some("type"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.flowcontrol.v1.PriorityLevelConfiguration",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("status", Struct, NONE, None, Some("io.k8s.api.flowcontrol.v1.PriorityLevelConfigurationStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.flowcontrol.v1.PriorityLevelConfigurationStatus",
        fields: &[f("conditions", List, MERGE, Some("type"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.flowcontrol.v1beta1.FlowSchema",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.flowcontrol.v1beta1.PriorityLevelConfiguration",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.flowcontrol.v1beta2.FlowSchema",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.flowcontrol.v1beta2.PriorityLevelConfiguration",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.flowcontrol.v1beta3.FlowSchema",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("status", Struct, NONE, None, Some("io.k8s.api.flowcontrol.v1beta3.FlowSchemaStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.flowcontrol.v1beta3.FlowSchemaStatus",
        fields: &[f("conditions", List, MERGE, Some("type"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.flowcontrol.v1beta3.PriorityLevelConfiguration",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("status", Struct, NONE, None, Some("io.k8s.api.flowcontrol.v1beta3.PriorityLevelConfigurationStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.flowcontrol.v1beta3.PriorityLevelConfigurationStatus",
        fields: &[f("conditions", List, MERGE, Some("type"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.imagepolicy.v1alpha1.ImageReview",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.networking.v1.IPAddress",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.networking.v1.Ingress",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.networking.v1.IngressClass",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.networking.v1.NetworkPolicy",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.networking.v1.ServiceCIDR",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("status", Struct, NONE, None, Some("io.k8s.api.networking.v1.ServiceCIDRStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.networking.v1.ServiceCIDRStatus",
        fields: &[f("conditions", List, MERGE, Some("type"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.networking.v1alpha1.IPAddress",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.networking.v1alpha1.ServiceCIDR",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("status", Struct, NONE, None, Some("io.k8s.api.networking.v1alpha1.ServiceCIDRStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.networking.v1alpha1.ServiceCIDRStatus",
        fields: &[f("conditions", List, MERGE, Some("type"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.networking.v1beta1.IPAddress",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.networking.v1beta1.Ingress",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.networking.v1beta1.IngressClass",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.networking.v1beta1.ServiceCIDR",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("status", Struct, NONE, None, Some("io.k8s.api.networking.v1beta1.ServiceCIDRStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.networking.v1beta1.ServiceCIDRStatus",
        fields: &[f("conditions", List, MERGE, Some("type"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.node.v1.RuntimeClass",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.node.v1alpha1.RuntimeClass",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.node.v1beta1.RuntimeClass",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.policy.v1.Eviction",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.policy.v1.PodDisruptionBudget",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.policy.v1.PodDisruptionBudgetSpec")),
            f("status", Struct, NONE, None, Some("io.k8s.api.policy.v1.PodDisruptionBudgetStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.policy.v1.PodDisruptionBudgetSpec",
        fields: &[f("selector", Struct, REPLACE, None, None)],
    },
    TypeInfo {
        name: "io.k8s.api.policy.v1.PodDisruptionBudgetStatus",
        fields: &[f("conditions", List, MERGE, Some("type"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.policy.v1beta1.Eviction",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.policy.v1beta1.PodDisruptionBudget",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("status", Struct, NONE, None, Some("io.k8s.api.policy.v1beta1.PodDisruptionBudgetStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.policy.v1beta1.PodDisruptionBudgetStatus",
        fields: &[f("conditions", List, MERGE, Some("type"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.rbac.v1.ClusterRole",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.rbac.v1.ClusterRoleBinding",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.rbac.v1.Role",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.rbac.v1.RoleBinding",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.rbac.v1alpha1.ClusterRole",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.rbac.v1alpha1.ClusterRoleBinding",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.rbac.v1alpha1.Role",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.rbac.v1alpha1.RoleBinding",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.rbac.v1beta1.ClusterRole",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.rbac.v1beta1.ClusterRoleBinding",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.rbac.v1beta1.Role",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.rbac.v1beta1.RoleBinding",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.resource.v1alpha3.DeviceClass",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.resource.v1alpha3.DeviceTaintRule",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.resource.v1alpha3.ResourceClaim",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("status", Struct, NONE, None, Some("io.k8s.api.resource.v1alpha3.ResourceClaimStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.resource.v1alpha3.ResourceClaimStatus",
        fields: &[f("reservedFor", List, MERGE, Some("uid"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.resource.v1alpha3.ResourceClaimTemplate",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.resource.v1alpha3.ResourceClaimTemplateSpec")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.resource.v1alpha3.ResourceClaimTemplateSpec",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.resource.v1alpha3.ResourceSlice",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.resource.v1beta1.DeviceClass",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.resource.v1beta1.ResourceClaim",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("status", Struct, NONE, None, Some("io.k8s.api.resource.v1beta1.ResourceClaimStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.resource.v1beta1.ResourceClaimStatus",
        fields: &[f("reservedFor", List, MERGE, Some("uid"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.resource.v1beta1.ResourceClaimTemplate",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.resource.v1beta1.ResourceClaimTemplateSpec")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.resource.v1beta1.ResourceClaimTemplateSpec",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.resource.v1beta1.ResourceSlice",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.resource.v1beta2.DeviceClass",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.resource.v1beta2.ResourceClaim",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("status", Struct, NONE, None, Some("io.k8s.api.resource.v1beta2.ResourceClaimStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.resource.v1beta2.ResourceClaimStatus",
        fields: &[f("reservedFor", List, MERGE, Some("uid"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.resource.v1beta2.ResourceClaimTemplate",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.resource.v1beta2.ResourceClaimTemplateSpec")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.resource.v1beta2.ResourceClaimTemplateSpec",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.resource.v1beta2.ResourceSlice",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.scheduling.v1.PriorityClass",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.scheduling.v1alpha1.PriorityClass",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.scheduling.v1beta1.PriorityClass",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.storage.v1.CSIDriver",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.storage.v1.CSINode",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.storage.v1.CSINodeSpec")),
        ],
    },
    TypeInfo { name: "io.k8s.api.storage.v1.CSINodeSpec", fields: &[f("drivers", List, MERGE, Some("name"), None)] },
    TypeInfo {
        name: "io.k8s.api.storage.v1.CSIStorageCapacity",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.storage.v1.StorageClass",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.storage.v1.VolumeAttachment",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.storage.v1alpha1.CSIStorageCapacity",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.storage.v1alpha1.VolumeAttachment",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.storage.v1alpha1.VolumeAttributesClass",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.storage.v1beta1.CSIDriver",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.storage.v1beta1.CSINode",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("spec", Struct, NONE, None, Some("io.k8s.api.storage.v1beta1.CSINodeSpec")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.storage.v1beta1.CSINodeSpec",
        fields: &[f("drivers", List, MERGE, Some("name"), None)],
    },
    TypeInfo {
        name: "io.k8s.api.storage.v1beta1.CSIStorageCapacity",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.storage.v1beta1.StorageClass",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.storage.v1beta1.VolumeAttachment",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.storage.v1beta1.VolumeAttributesClass",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.api.storagemigration.v1alpha1.StorageVersionMigration",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f("status", Struct, NONE, None, Some("io.k8s.api.storagemigration.v1alpha1.StorageVersionMigrationStatus")),
        ],
    },
    TypeInfo {
        name: "io.k8s.api.storagemigration.v1alpha1.StorageVersionMigrationStatus",
        fields: &[f("conditions", List, MERGE, Some("type"), None)],
    },
    TypeInfo {
        name: "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
        fields: &[
            f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
            f(
                "spec",
                Struct,
                NONE,
                None,
                Some("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionSpec"),
            ),
        ],
    },
    TypeInfo {
        name: "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionSpec",
        fields: &[f(
            "versions",
            List,
            NONE,
            None,
            Some("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionVersion"),
        )],
    },
    TypeInfo {
        name: "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionVersion",
        fields: &[f(
            "schema",
            Struct,
            NONE,
            None,
            Some("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceValidation"),
        )],
    },
    TypeInfo {
        name: "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceValidation",
        fields: &[f(
            "openAPIV3Schema",
            Struct,
            NONE,
            None,
            Some("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"),
        )],
    },
    TypeInfo {
        name: "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps",
        fields: &[
            f(
                "allOf",
                List,
                NONE,
                None,
                Some("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"),
            ),
            f(
                "anyOf",
                List,
                NONE,
                None,
                Some("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"),
            ),
            f(
                "definitions",
                Map,
                NONE,
                None,
                Some("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"),
            ),
            f(
                "not",
                Struct,
                NONE,
                None,
                Some("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"),
            ),
            f(
                "oneOf",
                List,
                NONE,
                None,
                Some("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"),
            ),
            f(
                "patternProperties",
                Map,
                NONE,
                None,
                Some("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"),
            ),
            f(
                "properties",
                Map,
                NONE,
                None,
                Some("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"),
            ),
            f("x-kubernetes-validations", List, MERGE, Some("rule"), None),
        ],
    },
    TypeInfo {
        name: "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        fields: &[f("finalizers", List, MERGE, None, None), f("ownerReferences", List, MERGE, Some("uid"), None)],
    },
    TypeInfo {
        name: "io.k8s.apimachinery.pkg.apis.meta.v1.PartialObjectMetadata",
        fields: &[f("metadata", Struct, NONE, None, Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))],
    },
    TypeInfo {
        name: "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService",
        fields: &[f(
            "status",
            Struct,
            NONE,
            None,
            Some("io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceStatus"),
        )],
    },
    TypeInfo {
        name: "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceStatus",
        fields: &[f("conditions", List, MERGE, Some("type"), None)],
    },
];

pub(super) static KINDS: &[KindInfo] = &[
    KindInfo { group: "", version: "v1", kind: "Binding", type_name: "io.k8s.api.core.v1.Binding" },
    KindInfo { group: "", version: "v1", kind: "ComponentStatus", type_name: "io.k8s.api.core.v1.ComponentStatus" },
    KindInfo { group: "", version: "v1", kind: "ConfigMap", type_name: "io.k8s.api.core.v1.ConfigMap" },
    KindInfo { group: "", version: "v1", kind: "Endpoints", type_name: "io.k8s.api.core.v1.Endpoints" },
    KindInfo { group: "", version: "v1", kind: "Event", type_name: "io.k8s.api.core.v1.Event" },
    KindInfo { group: "", version: "v1", kind: "LimitRange", type_name: "io.k8s.api.core.v1.LimitRange" },
    KindInfo { group: "", version: "v1", kind: "Namespace", type_name: "io.k8s.api.core.v1.Namespace" },
    KindInfo { group: "", version: "v1", kind: "Node", type_name: "io.k8s.api.core.v1.Node" },
    KindInfo { group: "", version: "v1", kind: "NodeProxyOptions", type_name: "io.k8s.api.core.v1.NodeProxyOptions" },
    KindInfo { group: "", version: "v1", kind: "PersistentVolume", type_name: "io.k8s.api.core.v1.PersistentVolume" },
    KindInfo {
        group: "",
        version: "v1",
        kind: "PersistentVolumeClaim",
        type_name: "io.k8s.api.core.v1.PersistentVolumeClaim",
    },
    KindInfo { group: "", version: "v1", kind: "Pod", type_name: "io.k8s.api.core.v1.Pod" },
    KindInfo { group: "", version: "v1", kind: "PodAttachOptions", type_name: "io.k8s.api.core.v1.PodAttachOptions" },
    KindInfo { group: "", version: "v1", kind: "PodExecOptions", type_name: "io.k8s.api.core.v1.PodExecOptions" },
    KindInfo { group: "", version: "v1", kind: "PodLogOptions", type_name: "io.k8s.api.core.v1.PodLogOptions" },
    KindInfo {
        group: "",
        version: "v1",
        kind: "PodPortForwardOptions",
        type_name: "io.k8s.api.core.v1.PodPortForwardOptions",
    },
    KindInfo { group: "", version: "v1", kind: "PodProxyOptions", type_name: "io.k8s.api.core.v1.PodProxyOptions" },
    KindInfo { group: "", version: "v1", kind: "PodStatusResult", type_name: "io.k8s.api.core.v1.PodStatusResult" },
    KindInfo { group: "", version: "v1", kind: "PodTemplate", type_name: "io.k8s.api.core.v1.PodTemplate" },
    KindInfo { group: "", version: "v1", kind: "RangeAllocation", type_name: "io.k8s.api.core.v1.RangeAllocation" },
    KindInfo {
        group: "",
        version: "v1",
        kind: "ReplicationController",
        type_name: "io.k8s.api.core.v1.ReplicationController",
    },
    KindInfo { group: "", version: "v1", kind: "ResourceQuota", type_name: "io.k8s.api.core.v1.ResourceQuota" },
    KindInfo { group: "", version: "v1", kind: "Secret", type_name: "io.k8s.api.core.v1.Secret" },
    KindInfo {
        group: "",
        version: "v1",
        kind: "SerializedReference",
        type_name: "io.k8s.api.core.v1.SerializedReference",
    },
    KindInfo { group: "", version: "v1", kind: "Service", type_name: "io.k8s.api.core.v1.Service" },
    KindInfo { group: "", version: "v1", kind: "ServiceAccount", type_name: "io.k8s.api.core.v1.ServiceAccount" },
    KindInfo {
        group: "",
        version: "v1",
        kind: "ServiceProxyOptions",
        type_name: "io.k8s.api.core.v1.ServiceProxyOptions",
    },
    KindInfo {
        group: "admission.k8s.io",
        version: "v1",
        kind: "AdmissionReview",
        type_name: "io.k8s.api.admission.v1.AdmissionReview",
    },
    KindInfo {
        group: "admission.k8s.io",
        version: "v1beta1",
        kind: "AdmissionReview",
        type_name: "io.k8s.api.admission.v1beta1.AdmissionReview",
    },
    KindInfo {
        group: "admissionregistration.k8s.io",
        version: "v1",
        kind: "MutatingWebhookConfiguration",
        type_name: "io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration",
    },
    KindInfo {
        group: "admissionregistration.k8s.io",
        version: "v1",
        kind: "ValidatingAdmissionPolicy",
        type_name: "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicy",
    },
    KindInfo {
        group: "admissionregistration.k8s.io",
        version: "v1",
        kind: "ValidatingAdmissionPolicyBinding",
        type_name: "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding",
    },
    KindInfo {
        group: "admissionregistration.k8s.io",
        version: "v1",
        kind: "ValidatingWebhookConfiguration",
        type_name: "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration",
    },
    KindInfo {
        group: "admissionregistration.k8s.io",
        version: "v1alpha1",
        kind: "MutatingAdmissionPolicy",
        type_name: "io.k8s.api.admissionregistration.v1alpha1.MutatingAdmissionPolicy",
    },
    KindInfo {
        group: "admissionregistration.k8s.io",
        version: "v1alpha1",
        kind: "MutatingAdmissionPolicyBinding",
        type_name: "io.k8s.api.admissionregistration.v1alpha1.MutatingAdmissionPolicyBinding",
    },
    KindInfo {
        group: "admissionregistration.k8s.io",
        version: "v1alpha1",
        kind: "ValidatingAdmissionPolicy",
        type_name: "io.k8s.api.admissionregistration.v1alpha1.ValidatingAdmissionPolicy",
    },
    KindInfo {
        group: "admissionregistration.k8s.io",
        version: "v1alpha1",
        kind: "ValidatingAdmissionPolicyBinding",
        type_name: "io.k8s.api.admissionregistration.v1alpha1.ValidatingAdmissionPolicyBinding",
    },
    KindInfo {
        group: "admissionregistration.k8s.io",
        version: "v1beta1",
        kind: "MutatingWebhookConfiguration",
        type_name: "io.k8s.api.admissionregistration.v1beta1.MutatingWebhookConfiguration",
    },
    KindInfo {
        group: "admissionregistration.k8s.io",
        version: "v1beta1",
        kind: "ValidatingAdmissionPolicy",
        type_name: "io.k8s.api.admissionregistration.v1beta1.ValidatingAdmissionPolicy",
    },
    KindInfo {
        group: "admissionregistration.k8s.io",
        version: "v1beta1",
        kind: "ValidatingAdmissionPolicyBinding",
        type_name: "io.k8s.api.admissionregistration.v1beta1.ValidatingAdmissionPolicyBinding",
    },
    KindInfo {
        group: "admissionregistration.k8s.io",
        version: "v1beta1",
        kind: "ValidatingWebhookConfiguration",
        type_name: "io.k8s.api.admissionregistration.v1beta1.ValidatingWebhookConfiguration",
    },
    KindInfo {
        group: "apidiscovery.k8s.io",
        version: "v2",
        kind: "APIGroupDiscovery",
        type_name: "io.k8s.api.apidiscovery.v2.APIGroupDiscovery",
    },
    KindInfo {
        group: "apidiscovery.k8s.io",
        version: "v2beta1",
        kind: "APIGroupDiscovery",
        type_name: "io.k8s.api.apidiscovery.v2beta1.APIGroupDiscovery",
    },
    KindInfo {
        group: "apiextensions.k8s.io",
        version: "v1",
        kind: "ConversionReview",
        type_name: "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.ConversionReview",
    },
    KindInfo {
        group: "apiextensions.k8s.io",
        version: "v1",
        kind: "CustomResourceDefinition",
        type_name: "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
    },
    KindInfo {
        group: "apiregistration.k8s.io",
        version: "v1",
        kind: "APIService",
        type_name: "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService",
    },
    KindInfo {
        group: "apps",
        version: "v1",
        kind: "ControllerRevision",
        type_name: "io.k8s.api.apps.v1.ControllerRevision",
    },
    KindInfo { group: "apps", version: "v1", kind: "DaemonSet", type_name: "io.k8s.api.apps.v1.DaemonSet" },
    KindInfo { group: "apps", version: "v1", kind: "Deployment", type_name: "io.k8s.api.apps.v1.Deployment" },
    KindInfo { group: "apps", version: "v1", kind: "ReplicaSet", type_name: "io.k8s.api.apps.v1.ReplicaSet" },
    KindInfo { group: "apps", version: "v1", kind: "StatefulSet", type_name: "io.k8s.api.apps.v1.StatefulSet" },
    KindInfo {
        group: "apps",
        version: "v1beta1",
        kind: "ControllerRevision",
        type_name: "io.k8s.api.apps.v1beta1.ControllerRevision",
    },
    KindInfo { group: "apps", version: "v1beta1", kind: "Deployment", type_name: "io.k8s.api.apps.v1beta1.Deployment" },
    KindInfo {
        group: "apps",
        version: "v1beta1",
        kind: "DeploymentRollback",
        type_name: "io.k8s.api.apps.v1beta1.DeploymentRollback",
    },
    KindInfo { group: "apps", version: "v1beta1", kind: "Scale", type_name: "io.k8s.api.apps.v1beta1.Scale" },
    KindInfo {
        group: "apps",
        version: "v1beta1",
        kind: "StatefulSet",
        type_name: "io.k8s.api.apps.v1beta1.StatefulSet",
    },
    KindInfo {
        group: "apps",
        version: "v1beta2",
        kind: "ControllerRevision",
        type_name: "io.k8s.api.apps.v1beta2.ControllerRevision",
    },
    KindInfo { group: "apps", version: "v1beta2", kind: "DaemonSet", type_name: "io.k8s.api.apps.v1beta2.DaemonSet" },
    KindInfo { group: "apps", version: "v1beta2", kind: "Deployment", type_name: "io.k8s.api.apps.v1beta2.Deployment" },
    KindInfo { group: "apps", version: "v1beta2", kind: "ReplicaSet", type_name: "io.k8s.api.apps.v1beta2.ReplicaSet" },
    KindInfo { group: "apps", version: "v1beta2", kind: "Scale", type_name: "io.k8s.api.apps.v1beta2.Scale" },
    KindInfo {
        group: "apps",
        version: "v1beta2",
        kind: "StatefulSet",
        type_name: "io.k8s.api.apps.v1beta2.StatefulSet",
    },
    KindInfo {
        group: "authentication.k8s.io",
        version: "v1",
        kind: "SelfSubjectReview",
        type_name: "io.k8s.api.authentication.v1.SelfSubjectReview",
    },
    KindInfo {
        group: "authentication.k8s.io",
        version: "v1",
        kind: "TokenRequest",
        type_name: "io.k8s.api.authentication.v1.TokenRequest",
    },
    KindInfo {
        group: "authentication.k8s.io",
        version: "v1",
        kind: "TokenReview",
        type_name: "io.k8s.api.authentication.v1.TokenReview",
    },
    KindInfo {
        group: "authentication.k8s.io",
        version: "v1alpha1",
        kind: "SelfSubjectReview",
        type_name: "io.k8s.api.authentication.v1alpha1.SelfSubjectReview",
    },
    KindInfo {
        group: "authentication.k8s.io",
        version: "v1beta1",
        kind: "SelfSubjectReview",
        type_name: "io.k8s.api.authentication.v1beta1.SelfSubjectReview",
    },
    KindInfo {
        group: "authentication.k8s.io",
        version: "v1beta1",
        kind: "TokenReview",
        type_name: "io.k8s.api.authentication.v1beta1.TokenReview",
    },
    KindInfo {
        group: "authorization.k8s.io",
        version: "v1",
        kind: "LocalSubjectAccessReview",
        type_name: "io.k8s.api.authorization.v1.LocalSubjectAccessReview",
    },
    KindInfo {
        group: "authorization.k8s.io",
        version: "v1",
        kind: "SelfSubjectAccessReview",
        type_name: "io.k8s.api.authorization.v1.SelfSubjectAccessReview",
    },
    KindInfo {
        group: "authorization.k8s.io",
        version: "v1",
        kind: "SelfSubjectRulesReview",
        type_name: "io.k8s.api.authorization.v1.SelfSubjectRulesReview",
    },
    KindInfo {
        group: "authorization.k8s.io",
        version: "v1",
        kind: "SubjectAccessReview",
        type_name: "io.k8s.api.authorization.v1.SubjectAccessReview",
    },
    KindInfo {
        group: "authorization.k8s.io",
        version: "v1beta1",
        kind: "LocalSubjectAccessReview",
        type_name: "io.k8s.api.authorization.v1beta1.LocalSubjectAccessReview",
    },
    KindInfo {
        group: "authorization.k8s.io",
        version: "v1beta1",
        kind: "SelfSubjectAccessReview",
        type_name: "io.k8s.api.authorization.v1beta1.SelfSubjectAccessReview",
    },
    KindInfo {
        group: "authorization.k8s.io",
        version: "v1beta1",
        kind: "SelfSubjectRulesReview",
        type_name: "io.k8s.api.authorization.v1beta1.SelfSubjectRulesReview",
    },
    KindInfo {
        group: "authorization.k8s.io",
        version: "v1beta1",
        kind: "SubjectAccessReview",
        type_name: "io.k8s.api.authorization.v1beta1.SubjectAccessReview",
    },
    KindInfo {
        group: "autoscaling",
        version: "v1",
        kind: "HorizontalPodAutoscaler",
        type_name: "io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler",
    },
    KindInfo { group: "autoscaling", version: "v1", kind: "Scale", type_name: "io.k8s.api.autoscaling.v1.Scale" },
    KindInfo {
        group: "autoscaling",
        version: "v2",
        kind: "HorizontalPodAutoscaler",
        type_name: "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler",
    },
    KindInfo {
        group: "autoscaling",
        version: "v2beta1",
        kind: "HorizontalPodAutoscaler",
        type_name: "io.k8s.api.autoscaling.v2beta1.HorizontalPodAutoscaler",
    },
    KindInfo {
        group: "autoscaling",
        version: "v2beta2",
        kind: "HorizontalPodAutoscaler",
        type_name: "io.k8s.api.autoscaling.v2beta2.HorizontalPodAutoscaler",
    },
    KindInfo { group: "batch", version: "v1", kind: "CronJob", type_name: "io.k8s.api.batch.v1.CronJob" },
    KindInfo { group: "batch", version: "v1", kind: "Job", type_name: "io.k8s.api.batch.v1.Job" },
    KindInfo { group: "batch", version: "v1beta1", kind: "CronJob", type_name: "io.k8s.api.batch.v1beta1.CronJob" },
    KindInfo {
        group: "certificates.k8s.io",
        version: "v1",
        kind: "CertificateSigningRequest",
        type_name: "io.k8s.api.certificates.v1.CertificateSigningRequest",
    },
    KindInfo {
        group: "certificates.k8s.io",
        version: "v1alpha1",
        kind: "ClusterTrustBundle",
        type_name: "io.k8s.api.certificates.v1alpha1.ClusterTrustBundle",
    },
    KindInfo {
        group: "certificates.k8s.io",
        version: "v1beta1",
        kind: "CertificateSigningRequest",
        type_name: "io.k8s.api.certificates.v1beta1.CertificateSigningRequest",
    },
    KindInfo {
        group: "certificates.k8s.io",
        version: "v1beta1",
        kind: "ClusterTrustBundle",
        type_name: "io.k8s.api.certificates.v1beta1.ClusterTrustBundle",
    },
    KindInfo {
        group: "coordination.k8s.io",
        version: "v1",
        kind: "Lease",
        type_name: "io.k8s.api.coordination.v1.Lease",
    },
    KindInfo {
        group: "coordination.k8s.io",
        version: "v1alpha2",
        kind: "LeaseCandidate",
        type_name: "io.k8s.api.coordination.v1alpha2.LeaseCandidate",
    },
    KindInfo {
        group: "coordination.k8s.io",
        version: "v1beta1",
        kind: "Lease",
        type_name: "io.k8s.api.coordination.v1beta1.Lease",
    },
    KindInfo {
        group: "coordination.k8s.io",
        version: "v1beta1",
        kind: "LeaseCandidate",
        type_name: "io.k8s.api.coordination.v1beta1.LeaseCandidate",
    },
    KindInfo {
        group: "discovery.k8s.io",
        version: "v1",
        kind: "EndpointSlice",
        type_name: "io.k8s.api.discovery.v1.EndpointSlice",
    },
    KindInfo {
        group: "discovery.k8s.io",
        version: "v1beta1",
        kind: "EndpointSlice",
        type_name: "io.k8s.api.discovery.v1beta1.EndpointSlice",
    },
    KindInfo { group: "events.k8s.io", version: "v1", kind: "Event", type_name: "io.k8s.api.events.v1.Event" },
    KindInfo {
        group: "events.k8s.io",
        version: "v1beta1",
        kind: "Event",
        type_name: "io.k8s.api.events.v1beta1.Event",
    },
    KindInfo {
        group: "extensions",
        version: "v1beta1",
        kind: "DaemonSet",
        type_name: "io.k8s.api.extensions.v1beta1.DaemonSet",
    },
    KindInfo {
        group: "extensions",
        version: "v1beta1",
        kind: "Deployment",
        type_name: "io.k8s.api.extensions.v1beta1.Deployment",
    },
    KindInfo {
        group: "extensions",
        version: "v1beta1",
        kind: "DeploymentRollback",
        type_name: "io.k8s.api.extensions.v1beta1.DeploymentRollback",
    },
    KindInfo {
        group: "extensions",
        version: "v1beta1",
        kind: "Ingress",
        type_name: "io.k8s.api.extensions.v1beta1.Ingress",
    },
    KindInfo {
        group: "extensions",
        version: "v1beta1",
        kind: "NetworkPolicy",
        type_name: "io.k8s.api.extensions.v1beta1.NetworkPolicy",
    },
    KindInfo {
        group: "extensions",
        version: "v1beta1",
        kind: "ReplicaSet",
        type_name: "io.k8s.api.extensions.v1beta1.ReplicaSet",
    },
    KindInfo {
        group: "extensions",
        version: "v1beta1",
        kind: "Scale",
        type_name: "io.k8s.api.extensions.v1beta1.Scale",
    },
    KindInfo {
        group: "flowcontrol.apiserver.k8s.io",
        version: "v1",
        kind: "FlowSchema",
        type_name: "io.k8s.api.flowcontrol.v1.FlowSchema",
    },
    KindInfo {
        group: "flowcontrol.apiserver.k8s.io",
        version: "v1",
        kind: "PriorityLevelConfiguration",
        type_name: "io.k8s.api.flowcontrol.v1.PriorityLevelConfiguration",
    },
    KindInfo {
        group: "flowcontrol.apiserver.k8s.io",
        version: "v1beta1",
        kind: "FlowSchema",
        type_name: "io.k8s.api.flowcontrol.v1beta1.FlowSchema",
    },
    KindInfo {
        group: "flowcontrol.apiserver.k8s.io",
        version: "v1beta1",
        kind: "PriorityLevelConfiguration",
        type_name: "io.k8s.api.flowcontrol.v1beta1.PriorityLevelConfiguration",
    },
    KindInfo {
        group: "flowcontrol.apiserver.k8s.io",
        version: "v1beta2",
        kind: "FlowSchema",
        type_name: "io.k8s.api.flowcontrol.v1beta2.FlowSchema",
    },
    KindInfo {
        group: "flowcontrol.apiserver.k8s.io",
        version: "v1beta2",
        kind: "PriorityLevelConfiguration",
        type_name: "io.k8s.api.flowcontrol.v1beta2.PriorityLevelConfiguration",
    },
    KindInfo {
        group: "flowcontrol.apiserver.k8s.io",
        version: "v1beta3",
        kind: "FlowSchema",
        type_name: "io.k8s.api.flowcontrol.v1beta3.FlowSchema",
    },
    KindInfo {
        group: "flowcontrol.apiserver.k8s.io",
        version: "v1beta3",
        kind: "PriorityLevelConfiguration",
        type_name: "io.k8s.api.flowcontrol.v1beta3.PriorityLevelConfiguration",
    },
    KindInfo {
        group: "imagepolicy.k8s.io",
        version: "v1alpha1",
        kind: "ImageReview",
        type_name: "io.k8s.api.imagepolicy.v1alpha1.ImageReview",
    },
    KindInfo {
        group: "internal.apiserver.k8s.io",
        version: "v1alpha1",
        kind: "StorageVersion",
        type_name: "io.k8s.api.apiserverinternal.v1alpha1.StorageVersion",
    },
    KindInfo {
        group: "networking.k8s.io",
        version: "v1",
        kind: "IPAddress",
        type_name: "io.k8s.api.networking.v1.IPAddress",
    },
    KindInfo {
        group: "networking.k8s.io",
        version: "v1",
        kind: "Ingress",
        type_name: "io.k8s.api.networking.v1.Ingress",
    },
    KindInfo {
        group: "networking.k8s.io",
        version: "v1",
        kind: "IngressClass",
        type_name: "io.k8s.api.networking.v1.IngressClass",
    },
    KindInfo {
        group: "networking.k8s.io",
        version: "v1",
        kind: "NetworkPolicy",
        type_name: "io.k8s.api.networking.v1.NetworkPolicy",
    },
    KindInfo {
        group: "networking.k8s.io",
        version: "v1",
        kind: "ServiceCIDR",
        type_name: "io.k8s.api.networking.v1.ServiceCIDR",
    },
    KindInfo {
        group: "networking.k8s.io",
        version: "v1alpha1",
        kind: "IPAddress",
        type_name: "io.k8s.api.networking.v1alpha1.IPAddress",
    },
    KindInfo {
        group: "networking.k8s.io",
        version: "v1alpha1",
        kind: "ServiceCIDR",
        type_name: "io.k8s.api.networking.v1alpha1.ServiceCIDR",
    },
    KindInfo {
        group: "networking.k8s.io",
        version: "v1beta1",
        kind: "IPAddress",
        type_name: "io.k8s.api.networking.v1beta1.IPAddress",
    },
    KindInfo {
        group: "networking.k8s.io",
        version: "v1beta1",
        kind: "Ingress",
        type_name: "io.k8s.api.networking.v1beta1.Ingress",
    },
    KindInfo {
        group: "networking.k8s.io",
        version: "v1beta1",
        kind: "IngressClass",
        type_name: "io.k8s.api.networking.v1beta1.IngressClass",
    },
    KindInfo {
        group: "networking.k8s.io",
        version: "v1beta1",
        kind: "ServiceCIDR",
        type_name: "io.k8s.api.networking.v1beta1.ServiceCIDR",
    },
    KindInfo {
        group: "node.k8s.io",
        version: "v1",
        kind: "RuntimeClass",
        type_name: "io.k8s.api.node.v1.RuntimeClass",
    },
    KindInfo {
        group: "node.k8s.io",
        version: "v1alpha1",
        kind: "RuntimeClass",
        type_name: "io.k8s.api.node.v1alpha1.RuntimeClass",
    },
    KindInfo {
        group: "node.k8s.io",
        version: "v1beta1",
        kind: "RuntimeClass",
        type_name: "io.k8s.api.node.v1beta1.RuntimeClass",
    },
    KindInfo { group: "policy", version: "v1", kind: "Eviction", type_name: "io.k8s.api.policy.v1.Eviction" },
    KindInfo {
        group: "policy",
        version: "v1",
        kind: "PodDisruptionBudget",
        type_name: "io.k8s.api.policy.v1.PodDisruptionBudget",
    },
    KindInfo { group: "policy", version: "v1beta1", kind: "Eviction", type_name: "io.k8s.api.policy.v1beta1.Eviction" },
    KindInfo {
        group: "policy",
        version: "v1beta1",
        kind: "PodDisruptionBudget",
        type_name: "io.k8s.api.policy.v1beta1.PodDisruptionBudget",
    },
    KindInfo {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        kind: "ClusterRole",
        type_name: "io.k8s.api.rbac.v1.ClusterRole",
    },
    KindInfo {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        kind: "ClusterRoleBinding",
        type_name: "io.k8s.api.rbac.v1.ClusterRoleBinding",
    },
    KindInfo { group: "rbac.authorization.k8s.io", version: "v1", kind: "Role", type_name: "io.k8s.api.rbac.v1.Role" },
    KindInfo {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        kind: "RoleBinding",
        type_name: "io.k8s.api.rbac.v1.RoleBinding",
    },
    KindInfo {
        group: "rbac.authorization.k8s.io",
        version: "v1alpha1",
        kind: "ClusterRole",
        type_name: "io.k8s.api.rbac.v1alpha1.ClusterRole",
    },
    KindInfo {
        group: "rbac.authorization.k8s.io",
        version: "v1alpha1",
        kind: "ClusterRoleBinding",
        type_name: "io.k8s.api.rbac.v1alpha1.ClusterRoleBinding",
    },
    KindInfo {
        group: "rbac.authorization.k8s.io",
        version: "v1alpha1",
        kind: "Role",
        type_name: "io.k8s.api.rbac.v1alpha1.Role",
    },
    KindInfo {
        group: "rbac.authorization.k8s.io",
        version: "v1alpha1",
        kind: "RoleBinding",
        type_name: "io.k8s.api.rbac.v1alpha1.RoleBinding",
    },
    KindInfo {
        group: "rbac.authorization.k8s.io",
        version: "v1beta1",
        kind: "ClusterRole",
        type_name: "io.k8s.api.rbac.v1beta1.ClusterRole",
    },
    KindInfo {
        group: "rbac.authorization.k8s.io",
        version: "v1beta1",
        kind: "ClusterRoleBinding",
        type_name: "io.k8s.api.rbac.v1beta1.ClusterRoleBinding",
    },
    KindInfo {
        group: "rbac.authorization.k8s.io",
        version: "v1beta1",
        kind: "Role",
        type_name: "io.k8s.api.rbac.v1beta1.Role",
    },
    KindInfo {
        group: "rbac.authorization.k8s.io",
        version: "v1beta1",
        kind: "RoleBinding",
        type_name: "io.k8s.api.rbac.v1beta1.RoleBinding",
    },
    KindInfo {
        group: "resource.k8s.io",
        version: "v1alpha3",
        kind: "DeviceClass",
        type_name: "io.k8s.api.resource.v1alpha3.DeviceClass",
    },
    KindInfo {
        group: "resource.k8s.io",
        version: "v1alpha3",
        kind: "DeviceTaintRule",
        type_name: "io.k8s.api.resource.v1alpha3.DeviceTaintRule",
    },
    KindInfo {
        group: "resource.k8s.io",
        version: "v1alpha3",
        kind: "ResourceClaim",
        type_name: "io.k8s.api.resource.v1alpha3.ResourceClaim",
    },
    KindInfo {
        group: "resource.k8s.io",
        version: "v1alpha3",
        kind: "ResourceClaimTemplate",
        type_name: "io.k8s.api.resource.v1alpha3.ResourceClaimTemplate",
    },
    KindInfo {
        group: "resource.k8s.io",
        version: "v1alpha3",
        kind: "ResourceSlice",
        type_name: "io.k8s.api.resource.v1alpha3.ResourceSlice",
    },
    KindInfo {
        group: "resource.k8s.io",
        version: "v1beta1",
        kind: "DeviceClass",
        type_name: "io.k8s.api.resource.v1beta1.DeviceClass",
    },
    KindInfo {
        group: "resource.k8s.io",
        version: "v1beta1",
        kind: "ResourceClaim",
        type_name: "io.k8s.api.resource.v1beta1.ResourceClaim",
    },
    KindInfo {
        group: "resource.k8s.io",
        version: "v1beta1",
        kind: "ResourceClaimTemplate",
        type_name: "io.k8s.api.resource.v1beta1.ResourceClaimTemplate",
    },
    KindInfo {
        group: "resource.k8s.io",
        version: "v1beta1",
        kind: "ResourceSlice",
        type_name: "io.k8s.api.resource.v1beta1.ResourceSlice",
    },
    KindInfo {
        group: "resource.k8s.io",
        version: "v1beta2",
        kind: "DeviceClass",
        type_name: "io.k8s.api.resource.v1beta2.DeviceClass",
    },
    KindInfo {
        group: "resource.k8s.io",
        version: "v1beta2",
        kind: "ResourceClaim",
        type_name: "io.k8s.api.resource.v1beta2.ResourceClaim",
    },
    KindInfo {
        group: "resource.k8s.io",
        version: "v1beta2",
        kind: "ResourceClaimTemplate",
        type_name: "io.k8s.api.resource.v1beta2.ResourceClaimTemplate",
    },
    KindInfo {
        group: "resource.k8s.io",
        version: "v1beta2",
        kind: "ResourceSlice",
        type_name: "io.k8s.api.resource.v1beta2.ResourceSlice",
    },
    KindInfo {
        group: "scheduling.k8s.io",
        version: "v1",
        kind: "PriorityClass",
        type_name: "io.k8s.api.scheduling.v1.PriorityClass",
    },
    KindInfo {
        group: "scheduling.k8s.io",
        version: "v1alpha1",
        kind: "PriorityClass",
        type_name: "io.k8s.api.scheduling.v1alpha1.PriorityClass",
    },
    KindInfo {
        group: "scheduling.k8s.io",
        version: "v1beta1",
        kind: "PriorityClass",
        type_name: "io.k8s.api.scheduling.v1beta1.PriorityClass",
    },
    KindInfo {
        group: "storage.k8s.io",
        version: "v1",
        kind: "CSIDriver",
        type_name: "io.k8s.api.storage.v1.CSIDriver",
    },
    KindInfo { group: "storage.k8s.io", version: "v1", kind: "CSINode", type_name: "io.k8s.api.storage.v1.CSINode" },
    KindInfo {
        group: "storage.k8s.io",
        version: "v1",
        kind: "CSIStorageCapacity",
        type_name: "io.k8s.api.storage.v1.CSIStorageCapacity",
    },
    KindInfo {
        group: "storage.k8s.io",
        version: "v1",
        kind: "StorageClass",
        type_name: "io.k8s.api.storage.v1.StorageClass",
    },
    KindInfo {
        group: "storage.k8s.io",
        version: "v1",
        kind: "VolumeAttachment",
        type_name: "io.k8s.api.storage.v1.VolumeAttachment",
    },
    KindInfo {
        group: "storage.k8s.io",
        version: "v1alpha1",
        kind: "CSIStorageCapacity",
        type_name: "io.k8s.api.storage.v1alpha1.CSIStorageCapacity",
    },
    KindInfo {
        group: "storage.k8s.io",
        version: "v1alpha1",
        kind: "VolumeAttachment",
        type_name: "io.k8s.api.storage.v1alpha1.VolumeAttachment",
    },
    KindInfo {
        group: "storage.k8s.io",
        version: "v1alpha1",
        kind: "VolumeAttributesClass",
        type_name: "io.k8s.api.storage.v1alpha1.VolumeAttributesClass",
    },
    KindInfo {
        group: "storage.k8s.io",
        version: "v1beta1",
        kind: "CSIDriver",
        type_name: "io.k8s.api.storage.v1beta1.CSIDriver",
    },
    KindInfo {
        group: "storage.k8s.io",
        version: "v1beta1",
        kind: "CSINode",
        type_name: "io.k8s.api.storage.v1beta1.CSINode",
    },
    KindInfo {
        group: "storage.k8s.io",
        version: "v1beta1",
        kind: "CSIStorageCapacity",
        type_name: "io.k8s.api.storage.v1beta1.CSIStorageCapacity",
    },
    KindInfo {
        group: "storage.k8s.io",
        version: "v1beta1",
        kind: "StorageClass",
        type_name: "io.k8s.api.storage.v1beta1.StorageClass",
    },
    KindInfo {
        group: "storage.k8s.io",
        version: "v1beta1",
        kind: "VolumeAttachment",
        type_name: "io.k8s.api.storage.v1beta1.VolumeAttachment",
    },
    KindInfo {
        group: "storage.k8s.io",
        version: "v1beta1",
        kind: "VolumeAttributesClass",
        type_name: "io.k8s.api.storage.v1beta1.VolumeAttributesClass",
    },
    KindInfo {
        group: "storagemigration.k8s.io",
        version: "v1alpha1",
        kind: "StorageVersionMigration",
        type_name: "io.k8s.api.storagemigration.v1alpha1.StorageVersionMigration",
    },
];
