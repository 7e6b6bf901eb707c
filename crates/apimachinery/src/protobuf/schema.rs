//! The message table: for every protobuf message reachable from the kinds
//! in [`ROOTS`], its fields as `(number, JSON name, cardinality, type)`.
//!
//! The facts (field numbers, JSON names, whether a Go field is a pointer or
//! carries `omitempty`) are transcribed from upstream's `k8s.io/api` and
//! `k8s.io/apimachinery` v0.33 `types.go` struct tags and cross-checked
//! field by field against the packages' `generated.proto`. Statics are
//! named `<PACKAGE>_<TYPE>`: `core` is core/v1, `meta` is meta/v1, `authn`
//! authentication/v1, `authz` authorization/v1, `autoscaling2`
//! autoscaling/v2, the rest their group's v1.

#![allow(clippy::too_many_lines)]

use super::{Card::*, Field, Message, Ty::*};

const fn f(num: u32, json: &'static str, card: super::Card, ty: super::Ty) -> Field {
    Field { num, json, card, ty }
}

const fn msg(name: &'static str, fields: &'static [Field]) -> Message {
    Message { name, fields }
}

/// The top-level kinds whose protobuf bodies decode: `(apiVersion, kind,
/// message)`. These are the kinds kubectl's typed clientset sends as
/// protobuf (`create configmap|secret|deployment|namespace|service|
/// serviceaccount|job|cronjob|role|rolebinding|clusterrole|
/// clusterrolebinding|pdb|ingress|quota|priorityclass`, `create token`,
/// `auth can-i`, `auth whoami`, `autoscale`, `certificate approve`), and
/// the reviews client-go's delegated authentication and authorization send
/// (TokenReview, SubjectAccessReview, LocalSubjectAccessReview).
pub(super) static ROOTS: &[(&str, &str, &Message)] = &[
    ("v1", "ConfigMap", &CORE_CONFIGMAP),
    ("v1", "Namespace", &CORE_NAMESPACE),
    ("v1", "ResourceQuota", &CORE_RESOURCEQUOTA),
    ("v1", "Secret", &CORE_SECRET),
    ("v1", "Service", &CORE_SERVICE),
    ("v1", "ServiceAccount", &CORE_SERVICEACCOUNT),
    ("apps/v1", "Deployment", &APPS_DEPLOYMENT),
    ("batch/v1", "CronJob", &BATCH_CRONJOB),
    ("batch/v1", "Job", &BATCH_JOB),
    ("networking.k8s.io/v1", "Ingress", &NETWORKING_INGRESS),
    ("policy/v1", "PodDisruptionBudget", &POLICY_PODDISRUPTIONBUDGET),
    ("rbac.authorization.k8s.io/v1", "ClusterRole", &RBAC_CLUSTERROLE),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", &RBAC_CLUSTERROLEBINDING),
    ("rbac.authorization.k8s.io/v1", "Role", &RBAC_ROLE),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", &RBAC_ROLEBINDING),
    ("authentication.k8s.io/v1", "SelfSubjectReview", &AUTHN_SELFSUBJECTREVIEW),
    ("authentication.k8s.io/v1", "TokenRequest", &AUTHN_TOKENREQUEST),
    ("authentication.k8s.io/v1", "TokenReview", &AUTHN_TOKENREVIEW),
    ("authorization.k8s.io/v1", "LocalSubjectAccessReview", &AUTHZ_LOCALSUBJECTACCESSREVIEW),
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview", &AUTHZ_SELFSUBJECTACCESSREVIEW),
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview", &AUTHZ_SELFSUBJECTRULESREVIEW),
    ("authorization.k8s.io/v1", "SubjectAccessReview", &AUTHZ_SUBJECTACCESSREVIEW),
    ("autoscaling/v1", "HorizontalPodAutoscaler", &AUTOSCALING_HORIZONTALPODAUTOSCALER),
    ("autoscaling/v2", "HorizontalPodAutoscaler", &AUTOSCALING2_HORIZONTALPODAUTOSCALER),
    ("certificates.k8s.io/v1", "CertificateSigningRequest", &CERTIFICATES_CERTIFICATESIGNINGREQUEST),
    ("scheduling.k8s.io/v1", "PriorityClass", &SCHEDULING_PRIORITYCLASS),
];

static APPS_DEPLOYMENT: Message = msg(
    "apps.Deployment",
    &[
        f(1, "metadata", Opt, M(&META_OBJECTMETA)),
        f(2, "spec", Opt, M(&APPS_DEPLOYMENTSPEC)),
        f(3, "status", Opt, M(&APPS_DEPLOYMENTSTATUS)),
    ],
);
static APPS_DEPLOYMENTCONDITION: Message = msg(
    "apps.DeploymentCondition",
    &[
        f(1, "type", Req, Str),
        f(2, "status", Req, Str),
        f(4, "reason", Opt, Str),
        f(5, "message", Opt, Str),
        f(6, "lastUpdateTime", Opt, Time),
        f(7, "lastTransitionTime", Opt, Time),
    ],
);
static APPS_DEPLOYMENTSPEC: Message = msg(
    "apps.DeploymentSpec",
    &[
        f(1, "replicas", Ptr, Int),
        f(2, "selector", Ptr, M(&META_LABELSELECTOR)),
        f(3, "template", Req, M(&CORE_PODTEMPLATESPEC)),
        f(4, "strategy", Opt, M(&APPS_DEPLOYMENTSTRATEGY)),
        f(5, "minReadySeconds", Opt, Int),
        f(6, "revisionHistoryLimit", Ptr, Int),
        f(7, "paused", Opt, Bool),
        f(9, "progressDeadlineSeconds", Ptr, Int),
    ],
);
static APPS_DEPLOYMENTSTATUS: Message = msg(
    "apps.DeploymentStatus",
    &[
        f(1, "observedGeneration", Opt, Int),
        f(2, "replicas", Opt, Int),
        f(3, "updatedReplicas", Opt, Int),
        f(4, "availableReplicas", Opt, Int),
        f(5, "unavailableReplicas", Opt, Int),
        f(6, "conditions", Rep, M(&APPS_DEPLOYMENTCONDITION)),
        f(7, "readyReplicas", Opt, Int),
        f(8, "collisionCount", Ptr, Int),
        f(9, "terminatingReplicas", Ptr, Int),
    ],
);
static APPS_DEPLOYMENTSTRATEGY: Message = msg(
    "apps.DeploymentStrategy",
    &[f(1, "type", Opt, Str), f(2, "rollingUpdate", Ptr, M(&APPS_ROLLINGUPDATEDEPLOYMENT))],
);
static APPS_ROLLINGUPDATEDEPLOYMENT: Message =
    msg("apps.RollingUpdateDeployment", &[f(1, "maxUnavailable", Ptr, IntOrStr), f(2, "maxSurge", Ptr, IntOrStr)]);
static AUTHN_BOUNDOBJECTREFERENCE: Message = msg(
    "authn.BoundObjectReference",
    &[f(1, "kind", Opt, Str), f(2, "apiVersion", Opt, Str), f(3, "name", Opt, Str), f(4, "uid", Opt, Str)],
);
static AUTHN_SELFSUBJECTREVIEW: Message = msg(
    "authn.SelfSubjectReview",
    &[f(1, "metadata", Opt, M(&META_OBJECTMETA)), f(2, "status", Opt, M(&AUTHN_SELFSUBJECTREVIEWSTATUS))],
);
static AUTHN_SELFSUBJECTREVIEWSTATUS: Message =
    msg("authn.SelfSubjectReviewStatus", &[f(1, "userInfo", Opt, M(&AUTHN_USERINFO))]);
static AUTHN_TOKENREQUEST: Message = msg(
    "authn.TokenRequest",
    &[
        f(1, "metadata", Opt, M(&META_OBJECTMETA)),
        f(2, "spec", Req, M(&AUTHN_TOKENREQUESTSPEC)),
        f(3, "status", Opt, M(&AUTHN_TOKENREQUESTSTATUS)),
    ],
);
static AUTHN_TOKENREQUESTSPEC: Message = msg(
    "authn.TokenRequestSpec",
    &[
        f(1, "audiences", Rep, Str),
        f(3, "boundObjectRef", Ptr, M(&AUTHN_BOUNDOBJECTREFERENCE)),
        f(4, "expirationSeconds", Ptr, Int),
    ],
);
static AUTHN_TOKENREQUESTSTATUS: Message =
    msg("authn.TokenRequestStatus", &[f(1, "token", Req, Str), f(2, "expirationTimestamp", Req, Time)]);
static AUTHN_TOKENREVIEW: Message = msg(
    "authn.TokenReview",
    &[
        f(1, "metadata", Opt, M(&META_OBJECTMETA)),
        f(2, "spec", Req, M(&AUTHN_TOKENREVIEWSPEC)),
        f(3, "status", Opt, M(&AUTHN_TOKENREVIEWSTATUS)),
    ],
);
static AUTHN_TOKENREVIEWSPEC: Message =
    msg("authn.TokenReviewSpec", &[f(1, "token", Opt, Str), f(2, "audiences", Rep, Str)]);
static AUTHN_TOKENREVIEWSTATUS: Message = msg(
    "authn.TokenReviewStatus",
    &[
        f(1, "authenticated", Opt, Bool),
        f(2, "user", Opt, M(&AUTHN_USERINFO)),
        f(3, "error", Opt, Str),
        f(4, "audiences", Rep, Str),
    ],
);
static AUTHN_USERINFO: Message = msg(
    "authn.UserInfo",
    &[f(1, "username", Opt, Str), f(2, "uid", Opt, Str), f(3, "groups", Rep, Str), f(4, "extra", Map, Strs)],
);
static AUTHZ_FIELDSELECTORATTRIBUTES: Message = msg(
    "authz.FieldSelectorAttributes",
    &[f(1, "rawSelector", Opt, Str), f(2, "requirements", Rep, M(&META_FIELDSELECTORREQUIREMENT))],
);
static AUTHZ_LABELSELECTORATTRIBUTES: Message = msg(
    "authz.LabelSelectorAttributes",
    &[f(1, "rawSelector", Opt, Str), f(2, "requirements", Rep, M(&META_LABELSELECTORREQUIREMENT))],
);
static AUTHZ_LOCALSUBJECTACCESSREVIEW: Message = msg(
    "authz.LocalSubjectAccessReview",
    &[
        f(1, "metadata", Opt, M(&META_OBJECTMETA)),
        f(2, "spec", Req, M(&AUTHZ_SUBJECTACCESSREVIEWSPEC)),
        f(3, "status", Opt, M(&AUTHZ_SUBJECTACCESSREVIEWSTATUS)),
    ],
);
static AUTHZ_NONRESOURCEATTRIBUTES: Message =
    msg("authz.NonResourceAttributes", &[f(1, "path", Opt, Str), f(2, "verb", Opt, Str)]);
static AUTHZ_NONRESOURCERULE: Message =
    msg("authz.NonResourceRule", &[f(1, "verbs", Rep, Str), f(2, "nonResourceURLs", Rep, Str)]);
static AUTHZ_RESOURCEATTRIBUTES: Message = msg(
    "authz.ResourceAttributes",
    &[
        f(1, "namespace", Opt, Str),
        f(2, "verb", Opt, Str),
        f(3, "group", Opt, Str),
        f(4, "version", Opt, Str),
        f(5, "resource", Opt, Str),
        f(6, "subresource", Opt, Str),
        f(7, "name", Opt, Str),
        f(8, "fieldSelector", Ptr, M(&AUTHZ_FIELDSELECTORATTRIBUTES)),
        f(9, "labelSelector", Ptr, M(&AUTHZ_LABELSELECTORATTRIBUTES)),
    ],
);
static AUTHZ_RESOURCERULE: Message = msg(
    "authz.ResourceRule",
    &[
        f(1, "verbs", Rep, Str),
        f(2, "apiGroups", Rep, Str),
        f(3, "resources", Rep, Str),
        f(4, "resourceNames", Rep, Str),
    ],
);
static AUTHZ_SELFSUBJECTACCESSREVIEW: Message = msg(
    "authz.SelfSubjectAccessReview",
    &[
        f(1, "metadata", Opt, M(&META_OBJECTMETA)),
        f(2, "spec", Req, M(&AUTHZ_SELFSUBJECTACCESSREVIEWSPEC)),
        f(3, "status", Opt, M(&AUTHZ_SUBJECTACCESSREVIEWSTATUS)),
    ],
);
static AUTHZ_SELFSUBJECTACCESSREVIEWSPEC: Message = msg(
    "authz.SelfSubjectAccessReviewSpec",
    &[
        f(1, "resourceAttributes", Ptr, M(&AUTHZ_RESOURCEATTRIBUTES)),
        f(2, "nonResourceAttributes", Ptr, M(&AUTHZ_NONRESOURCEATTRIBUTES)),
    ],
);
static AUTHZ_SELFSUBJECTRULESREVIEW: Message = msg(
    "authz.SelfSubjectRulesReview",
    &[
        f(1, "metadata", Opt, M(&META_OBJECTMETA)),
        f(2, "spec", Req, M(&AUTHZ_SELFSUBJECTRULESREVIEWSPEC)),
        f(3, "status", Opt, M(&AUTHZ_SUBJECTRULESREVIEWSTATUS)),
    ],
);
static AUTHZ_SELFSUBJECTRULESREVIEWSPEC: Message =
    msg("authz.SelfSubjectRulesReviewSpec", &[f(1, "namespace", Opt, Str)]);
static AUTHZ_SUBJECTACCESSREVIEW: Message = msg(
    "authz.SubjectAccessReview",
    &[
        f(1, "metadata", Opt, M(&META_OBJECTMETA)),
        f(2, "spec", Req, M(&AUTHZ_SUBJECTACCESSREVIEWSPEC)),
        f(3, "status", Opt, M(&AUTHZ_SUBJECTACCESSREVIEWSTATUS)),
    ],
);
static AUTHZ_SUBJECTACCESSREVIEWSPEC: Message = msg(
    "authz.SubjectAccessReviewSpec",
    &[
        f(1, "resourceAttributes", Ptr, M(&AUTHZ_RESOURCEATTRIBUTES)),
        f(2, "nonResourceAttributes", Ptr, M(&AUTHZ_NONRESOURCEATTRIBUTES)),
        f(3, "user", Opt, Str),
        f(4, "groups", Rep, Str),
        f(5, "extra", Map, Strs),
        f(6, "uid", Opt, Str),
    ],
);
static AUTHZ_SUBJECTACCESSREVIEWSTATUS: Message = msg(
    "authz.SubjectAccessReviewStatus",
    &[
        f(1, "allowed", Req, Bool),
        f(2, "reason", Opt, Str),
        f(3, "evaluationError", Opt, Str),
        f(4, "denied", Opt, Bool),
    ],
);
static AUTHZ_SUBJECTRULESREVIEWSTATUS: Message = msg(
    "authz.SubjectRulesReviewStatus",
    &[
        f(1, "resourceRules", Rep, M(&AUTHZ_RESOURCERULE)),
        f(2, "nonResourceRules", Rep, M(&AUTHZ_NONRESOURCERULE)),
        f(3, "incomplete", Req, Bool),
        f(4, "evaluationError", Opt, Str),
    ],
);
static AUTOSCALING_CROSSVERSIONOBJECTREFERENCE: Message = msg(
    "autoscaling.CrossVersionObjectReference",
    &[f(1, "kind", Req, Str), f(2, "name", Req, Str), f(3, "apiVersion", Opt, Str)],
);
static AUTOSCALING_HORIZONTALPODAUTOSCALER: Message = msg(
    "autoscaling.HorizontalPodAutoscaler",
    &[
        f(1, "metadata", Opt, M(&META_OBJECTMETA)),
        f(2, "spec", Opt, M(&AUTOSCALING_HORIZONTALPODAUTOSCALERSPEC)),
        f(3, "status", Opt, M(&AUTOSCALING_HORIZONTALPODAUTOSCALERSTATUS)),
    ],
);
static AUTOSCALING_HORIZONTALPODAUTOSCALERSPEC: Message = msg(
    "autoscaling.HorizontalPodAutoscalerSpec",
    &[
        f(1, "scaleTargetRef", Req, M(&AUTOSCALING_CROSSVERSIONOBJECTREFERENCE)),
        f(2, "minReplicas", Ptr, Int),
        f(3, "maxReplicas", Req, Int),
        f(4, "targetCPUUtilizationPercentage", Ptr, Int),
    ],
);
static AUTOSCALING_HORIZONTALPODAUTOSCALERSTATUS: Message = msg(
    "autoscaling.HorizontalPodAutoscalerStatus",
    &[
        f(1, "observedGeneration", Ptr, Int),
        f(2, "lastScaleTime", Ptr, Time),
        f(3, "currentReplicas", Req, Int),
        f(4, "desiredReplicas", Req, Int),
        f(5, "currentCPUUtilizationPercentage", Ptr, Int),
    ],
);
static AUTOSCALING2_CONTAINERRESOURCEMETRICSOURCE: Message = msg(
    "autoscaling2.ContainerResourceMetricSource",
    &[f(1, "name", Req, Str), f(2, "target", Req, M(&AUTOSCALING2_METRICTARGET)), f(3, "container", Req, Str)],
);
static AUTOSCALING2_CONTAINERRESOURCEMETRICSTATUS: Message = msg(
    "autoscaling2.ContainerResourceMetricStatus",
    &[f(1, "name", Req, Str), f(2, "current", Req, M(&AUTOSCALING2_METRICVALUESTATUS)), f(3, "container", Req, Str)],
);
static AUTOSCALING2_CROSSVERSIONOBJECTREFERENCE: Message = msg(
    "autoscaling2.CrossVersionObjectReference",
    &[f(1, "kind", Req, Str), f(2, "name", Req, Str), f(3, "apiVersion", Opt, Str)],
);
static AUTOSCALING2_EXTERNALMETRICSOURCE: Message = msg(
    "autoscaling2.ExternalMetricSource",
    &[f(1, "metric", Req, M(&AUTOSCALING2_METRICIDENTIFIER)), f(2, "target", Req, M(&AUTOSCALING2_METRICTARGET))],
);
static AUTOSCALING2_EXTERNALMETRICSTATUS: Message = msg(
    "autoscaling2.ExternalMetricStatus",
    &[f(1, "metric", Req, M(&AUTOSCALING2_METRICIDENTIFIER)), f(2, "current", Req, M(&AUTOSCALING2_METRICVALUESTATUS))],
);
static AUTOSCALING2_HPASCALINGPOLICY: Message = msg(
    "autoscaling2.HPAScalingPolicy",
    &[f(1, "type", Req, Str), f(2, "value", Req, Int), f(3, "periodSeconds", Req, Int)],
);
static AUTOSCALING2_HPASCALINGRULES: Message = msg(
    "autoscaling2.HPAScalingRules",
    &[
        f(1, "selectPolicy", Ptr, Str),
        f(2, "policies", Rep, M(&AUTOSCALING2_HPASCALINGPOLICY)),
        f(3, "stabilizationWindowSeconds", Ptr, Int),
        f(4, "tolerance", Ptr, Quantity),
    ],
);
static AUTOSCALING2_HORIZONTALPODAUTOSCALER: Message = msg(
    "autoscaling2.HorizontalPodAutoscaler",
    &[
        f(1, "metadata", Opt, M(&META_OBJECTMETA)),
        f(2, "spec", Opt, M(&AUTOSCALING2_HORIZONTALPODAUTOSCALERSPEC)),
        f(3, "status", Opt, M(&AUTOSCALING2_HORIZONTALPODAUTOSCALERSTATUS)),
    ],
);
static AUTOSCALING2_HORIZONTALPODAUTOSCALERBEHAVIOR: Message = msg(
    "autoscaling2.HorizontalPodAutoscalerBehavior",
    &[f(1, "scaleUp", Ptr, M(&AUTOSCALING2_HPASCALINGRULES)), f(2, "scaleDown", Ptr, M(&AUTOSCALING2_HPASCALINGRULES))],
);
static AUTOSCALING2_HORIZONTALPODAUTOSCALERCONDITION: Message = msg(
    "autoscaling2.HorizontalPodAutoscalerCondition",
    &[
        f(1, "type", Req, Str),
        f(2, "status", Req, Str),
        f(3, "lastTransitionTime", Opt, Time),
        f(4, "reason", Opt, Str),
        f(5, "message", Opt, Str),
    ],
);
static AUTOSCALING2_HORIZONTALPODAUTOSCALERSPEC: Message = msg(
    "autoscaling2.HorizontalPodAutoscalerSpec",
    &[
        f(1, "scaleTargetRef", Req, M(&AUTOSCALING2_CROSSVERSIONOBJECTREFERENCE)),
        f(2, "minReplicas", Ptr, Int),
        f(3, "maxReplicas", Req, Int),
        f(4, "metrics", Rep, M(&AUTOSCALING2_METRICSPEC)),
        f(5, "behavior", Ptr, M(&AUTOSCALING2_HORIZONTALPODAUTOSCALERBEHAVIOR)),
    ],
);
static AUTOSCALING2_HORIZONTALPODAUTOSCALERSTATUS: Message = msg(
    "autoscaling2.HorizontalPodAutoscalerStatus",
    &[
        f(1, "observedGeneration", Ptr, Int),
        f(2, "lastScaleTime", Ptr, Time),
        f(3, "currentReplicas", Opt, Int),
        f(4, "desiredReplicas", Req, Int),
        f(5, "currentMetrics", Rep, M(&AUTOSCALING2_METRICSTATUS)),
        f(6, "conditions", Rep, M(&AUTOSCALING2_HORIZONTALPODAUTOSCALERCONDITION)),
    ],
);
static AUTOSCALING2_METRICIDENTIFIER: Message =
    msg("autoscaling2.MetricIdentifier", &[f(1, "name", Req, Str), f(2, "selector", Ptr, M(&META_LABELSELECTOR))]);
static AUTOSCALING2_METRICSPEC: Message = msg(
    "autoscaling2.MetricSpec",
    &[
        f(1, "type", Req, Str),
        f(2, "object", Ptr, M(&AUTOSCALING2_OBJECTMETRICSOURCE)),
        f(3, "pods", Ptr, M(&AUTOSCALING2_PODSMETRICSOURCE)),
        f(4, "resource", Ptr, M(&AUTOSCALING2_RESOURCEMETRICSOURCE)),
        f(5, "external", Ptr, M(&AUTOSCALING2_EXTERNALMETRICSOURCE)),
        f(7, "containerResource", Ptr, M(&AUTOSCALING2_CONTAINERRESOURCEMETRICSOURCE)),
    ],
);
static AUTOSCALING2_METRICSTATUS: Message = msg(
    "autoscaling2.MetricStatus",
    &[
        f(1, "type", Req, Str),
        f(2, "object", Ptr, M(&AUTOSCALING2_OBJECTMETRICSTATUS)),
        f(3, "pods", Ptr, M(&AUTOSCALING2_PODSMETRICSTATUS)),
        f(4, "resource", Ptr, M(&AUTOSCALING2_RESOURCEMETRICSTATUS)),
        f(5, "external", Ptr, M(&AUTOSCALING2_EXTERNALMETRICSTATUS)),
        f(7, "containerResource", Ptr, M(&AUTOSCALING2_CONTAINERRESOURCEMETRICSTATUS)),
    ],
);
static AUTOSCALING2_METRICTARGET: Message = msg(
    "autoscaling2.MetricTarget",
    &[
        f(1, "type", Req, Str),
        f(2, "value", Ptr, Quantity),
        f(3, "averageValue", Ptr, Quantity),
        f(4, "averageUtilization", Ptr, Int),
    ],
);
static AUTOSCALING2_METRICVALUESTATUS: Message = msg(
    "autoscaling2.MetricValueStatus",
    &[f(1, "value", Ptr, Quantity), f(2, "averageValue", Ptr, Quantity), f(3, "averageUtilization", Ptr, Int)],
);
static AUTOSCALING2_OBJECTMETRICSOURCE: Message = msg(
    "autoscaling2.ObjectMetricSource",
    &[
        f(1, "describedObject", Req, M(&AUTOSCALING2_CROSSVERSIONOBJECTREFERENCE)),
        f(2, "target", Req, M(&AUTOSCALING2_METRICTARGET)),
        f(3, "metric", Req, M(&AUTOSCALING2_METRICIDENTIFIER)),
    ],
);
static AUTOSCALING2_OBJECTMETRICSTATUS: Message = msg(
    "autoscaling2.ObjectMetricStatus",
    &[
        f(1, "metric", Req, M(&AUTOSCALING2_METRICIDENTIFIER)),
        f(2, "current", Req, M(&AUTOSCALING2_METRICVALUESTATUS)),
        f(3, "describedObject", Req, M(&AUTOSCALING2_CROSSVERSIONOBJECTREFERENCE)),
    ],
);
static AUTOSCALING2_PODSMETRICSOURCE: Message = msg(
    "autoscaling2.PodsMetricSource",
    &[f(1, "metric", Req, M(&AUTOSCALING2_METRICIDENTIFIER)), f(2, "target", Req, M(&AUTOSCALING2_METRICTARGET))],
);
static AUTOSCALING2_PODSMETRICSTATUS: Message = msg(
    "autoscaling2.PodsMetricStatus",
    &[f(1, "metric", Req, M(&AUTOSCALING2_METRICIDENTIFIER)), f(2, "current", Req, M(&AUTOSCALING2_METRICVALUESTATUS))],
);
static AUTOSCALING2_RESOURCEMETRICSOURCE: Message = msg(
    "autoscaling2.ResourceMetricSource",
    &[f(1, "name", Req, Str), f(2, "target", Req, M(&AUTOSCALING2_METRICTARGET))],
);
static AUTOSCALING2_RESOURCEMETRICSTATUS: Message = msg(
    "autoscaling2.ResourceMetricStatus",
    &[f(1, "name", Req, Str), f(2, "current", Req, M(&AUTOSCALING2_METRICVALUESTATUS))],
);
static BATCH_CRONJOB: Message = msg(
    "batch.CronJob",
    &[
        f(1, "metadata", Opt, M(&META_OBJECTMETA)),
        f(2, "spec", Opt, M(&BATCH_CRONJOBSPEC)),
        f(3, "status", Opt, M(&BATCH_CRONJOBSTATUS)),
    ],
);
static BATCH_CRONJOBSPEC: Message = msg(
    "batch.CronJobSpec",
    &[
        f(1, "schedule", Req, Str),
        f(2, "startingDeadlineSeconds", Ptr, Int),
        f(3, "concurrencyPolicy", Opt, Str),
        f(4, "suspend", Ptr, Bool),
        f(5, "jobTemplate", Req, M(&BATCH_JOBTEMPLATESPEC)),
        f(6, "successfulJobsHistoryLimit", Ptr, Int),
        f(7, "failedJobsHistoryLimit", Ptr, Int),
        f(8, "timeZone", Ptr, Str),
    ],
);
static BATCH_CRONJOBSTATUS: Message = msg(
    "batch.CronJobStatus",
    &[
        f(1, "active", Rep, M(&CORE_OBJECTREFERENCE)),
        f(4, "lastScheduleTime", Ptr, Time),
        f(5, "lastSuccessfulTime", Ptr, Time),
    ],
);
static BATCH_JOB: Message = msg(
    "batch.Job",
    &[
        f(1, "metadata", Opt, M(&META_OBJECTMETA)),
        f(2, "spec", Opt, M(&BATCH_JOBSPEC)),
        f(3, "status", Opt, M(&BATCH_JOBSTATUS)),
    ],
);
static BATCH_JOBCONDITION: Message = msg(
    "batch.JobCondition",
    &[
        f(1, "type", Req, Str),
        f(2, "status", Req, Str),
        f(3, "lastProbeTime", Opt, Time),
        f(4, "lastTransitionTime", Opt, Time),
        f(5, "reason", Opt, Str),
        f(6, "message", Opt, Str),
    ],
);
static BATCH_JOBSPEC: Message = msg(
    "batch.JobSpec",
    &[
        f(1, "parallelism", Ptr, Int),
        f(2, "completions", Ptr, Int),
        f(3, "activeDeadlineSeconds", Ptr, Int),
        f(4, "selector", Ptr, M(&META_LABELSELECTOR)),
        f(5, "manualSelector", Ptr, Bool),
        f(6, "template", Req, M(&CORE_PODTEMPLATESPEC)),
        f(7, "backoffLimit", Ptr, Int),
        f(8, "ttlSecondsAfterFinished", Ptr, Int),
        f(9, "completionMode", Ptr, Str),
        f(10, "suspend", Ptr, Bool),
        f(11, "podFailurePolicy", Ptr, M(&BATCH_PODFAILUREPOLICY)),
        f(12, "backoffLimitPerIndex", Ptr, Int),
        f(13, "maxFailedIndexes", Ptr, Int),
        f(14, "podReplacementPolicy", Ptr, Str),
        f(15, "managedBy", Ptr, Str),
        f(16, "successPolicy", Ptr, M(&BATCH_SUCCESSPOLICY)),
    ],
);
static BATCH_JOBSTATUS: Message = msg(
    "batch.JobStatus",
    &[
        f(1, "conditions", Rep, M(&BATCH_JOBCONDITION)),
        f(2, "startTime", Ptr, Time),
        f(3, "completionTime", Ptr, Time),
        f(4, "active", Opt, Int),
        f(5, "succeeded", Opt, Int),
        f(6, "failed", Opt, Int),
        f(7, "completedIndexes", Opt, Str),
        f(8, "uncountedTerminatedPods", Ptr, M(&BATCH_UNCOUNTEDTERMINATEDPODS)),
        f(9, "ready", Ptr, Int),
        f(10, "failedIndexes", Ptr, Str),
        f(11, "terminating", Ptr, Int),
    ],
);
static BATCH_JOBTEMPLATESPEC: Message =
    msg("batch.JobTemplateSpec", &[f(1, "metadata", Opt, M(&META_OBJECTMETA)), f(2, "spec", Opt, M(&BATCH_JOBSPEC))]);
static BATCH_PODFAILUREPOLICY: Message =
    msg("batch.PodFailurePolicy", &[f(1, "rules", Rep, M(&BATCH_PODFAILUREPOLICYRULE))]);
static BATCH_PODFAILUREPOLICYONEXITCODESREQUIREMENT: Message = msg(
    "batch.PodFailurePolicyOnExitCodesRequirement",
    &[f(1, "containerName", Ptr, Str), f(2, "operator", Req, Str), f(3, "values", Rep, Int)],
);
static BATCH_PODFAILUREPOLICYONPODCONDITIONSPATTERN: Message =
    msg("batch.PodFailurePolicyOnPodConditionsPattern", &[f(1, "type", Req, Str), f(2, "status", Req, Str)]);
static BATCH_PODFAILUREPOLICYRULE: Message = msg(
    "batch.PodFailurePolicyRule",
    &[
        f(1, "action", Req, Str),
        f(2, "onExitCodes", Ptr, M(&BATCH_PODFAILUREPOLICYONEXITCODESREQUIREMENT)),
        f(3, "onPodConditions", Rep, M(&BATCH_PODFAILUREPOLICYONPODCONDITIONSPATTERN)),
    ],
);
static BATCH_SUCCESSPOLICY: Message = msg("batch.SuccessPolicy", &[f(1, "rules", Rep, M(&BATCH_SUCCESSPOLICYRULE))]);
static BATCH_SUCCESSPOLICYRULE: Message =
    msg("batch.SuccessPolicyRule", &[f(1, "succeededIndexes", Ptr, Str), f(2, "succeededCount", Ptr, Int)]);
static BATCH_UNCOUNTEDTERMINATEDPODS: Message =
    msg("batch.UncountedTerminatedPods", &[f(1, "succeeded", Rep, Str), f(2, "failed", Rep, Str)]);
static CERTIFICATES_CERTIFICATESIGNINGREQUEST: Message = msg(
    "certificates.CertificateSigningRequest",
    &[
        f(1, "metadata", Opt, M(&META_OBJECTMETA)),
        f(2, "spec", Req, M(&CERTIFICATES_CERTIFICATESIGNINGREQUESTSPEC)),
        f(3, "status", Opt, M(&CERTIFICATES_CERTIFICATESIGNINGREQUESTSTATUS)),
    ],
);
static CERTIFICATES_CERTIFICATESIGNINGREQUESTCONDITION: Message = msg(
    "certificates.CertificateSigningRequestCondition",
    &[
        f(1, "type", Req, Str),
        f(2, "reason", Opt, Str),
        f(3, "message", Opt, Str),
        f(4, "lastUpdateTime", Opt, Time),
        f(5, "lastTransitionTime", Opt, Time),
        f(6, "status", Req, Str),
    ],
);
static CERTIFICATES_CERTIFICATESIGNINGREQUESTSPEC: Message = msg(
    "certificates.CertificateSigningRequestSpec",
    &[
        f(1, "request", Req, Bytes),
        f(2, "username", Opt, Str),
        f(3, "uid", Opt, Str),
        f(4, "groups", Rep, Str),
        f(5, "usages", Rep, Str),
        f(6, "extra", Map, Strs),
        f(7, "signerName", Req, Str),
        f(8, "expirationSeconds", Ptr, Int),
    ],
);
static CERTIFICATES_CERTIFICATESIGNINGREQUESTSTATUS: Message = msg(
    "certificates.CertificateSigningRequestStatus",
    &[f(1, "conditions", Rep, M(&CERTIFICATES_CERTIFICATESIGNINGREQUESTCONDITION)), f(2, "certificate", Opt, Bytes)],
);
static CORE_AWSELASTICBLOCKSTOREVOLUMESOURCE: Message = msg(
    "core.AWSElasticBlockStoreVolumeSource",
    &[f(1, "volumeID", Req, Str), f(2, "fsType", Opt, Str), f(3, "partition", Opt, Int), f(4, "readOnly", Opt, Bool)],
);
static CORE_AFFINITY: Message = msg(
    "core.Affinity",
    &[
        f(1, "nodeAffinity", Ptr, M(&CORE_NODEAFFINITY)),
        f(2, "podAffinity", Ptr, M(&CORE_PODAFFINITY)),
        f(3, "podAntiAffinity", Ptr, M(&CORE_PODANTIAFFINITY)),
    ],
);
static CORE_APPARMORPROFILE: Message =
    msg("core.AppArmorProfile", &[f(1, "type", Req, Str), f(2, "localhostProfile", Ptr, Str)]);
static CORE_AZUREDISKVOLUMESOURCE: Message = msg(
    "core.AzureDiskVolumeSource",
    &[
        f(1, "diskName", Req, Str),
        f(2, "diskURI", Req, Str),
        f(3, "cachingMode", Ptr, Str),
        f(4, "fsType", Ptr, Str),
        f(5, "readOnly", Ptr, Bool),
        f(6, "kind", Ptr, Str),
    ],
);
static CORE_AZUREFILEVOLUMESOURCE: Message = msg(
    "core.AzureFileVolumeSource",
    &[f(1, "secretName", Req, Str), f(2, "shareName", Req, Str), f(3, "readOnly", Opt, Bool)],
);
static CORE_CSIVOLUMESOURCE: Message = msg(
    "core.CSIVolumeSource",
    &[
        f(1, "driver", Req, Str),
        f(2, "readOnly", Ptr, Bool),
        f(3, "fsType", Ptr, Str),
        f(4, "volumeAttributes", Map, Str),
        f(5, "nodePublishSecretRef", Ptr, M(&CORE_LOCALOBJECTREFERENCE)),
    ],
);
static CORE_CAPABILITIES: Message = msg("core.Capabilities", &[f(1, "add", Rep, Str), f(2, "drop", Rep, Str)]);
static CORE_CEPHFSVOLUMESOURCE: Message = msg(
    "core.CephFSVolumeSource",
    &[
        f(1, "monitors", Rep, Str),
        f(2, "path", Opt, Str),
        f(3, "user", Opt, Str),
        f(4, "secretFile", Opt, Str),
        f(5, "secretRef", Ptr, M(&CORE_LOCALOBJECTREFERENCE)),
        f(6, "readOnly", Opt, Bool),
    ],
);
static CORE_CINDERVOLUMESOURCE: Message = msg(
    "core.CinderVolumeSource",
    &[
        f(1, "volumeID", Req, Str),
        f(2, "fsType", Opt, Str),
        f(3, "readOnly", Opt, Bool),
        f(4, "secretRef", Ptr, M(&CORE_LOCALOBJECTREFERENCE)),
    ],
);
static CORE_CLIENTIPCONFIG: Message = msg("core.ClientIPConfig", &[f(1, "timeoutSeconds", Ptr, Int)]);
static CORE_CLUSTERTRUSTBUNDLEPROJECTION: Message = msg(
    "core.ClusterTrustBundleProjection",
    &[
        f(1, "name", Ptr, Str),
        f(2, "signerName", Ptr, Str),
        f(3, "labelSelector", Ptr, M(&META_LABELSELECTOR)),
        f(4, "path", Req, Str),
        f(5, "optional", Ptr, Bool),
    ],
);
static CORE_CONFIGMAP: Message = msg(
    "core.ConfigMap",
    &[
        f(1, "metadata", Opt, M(&META_OBJECTMETA)),
        f(2, "data", Map, Str),
        f(3, "binaryData", Map, Bytes),
        f(4, "immutable", Ptr, Bool),
    ],
);
static CORE_CONFIGMAPENVSOURCE: Message =
    msg("core.ConfigMapEnvSource", &[f(1, "", Inline, M(&CORE_LOCALOBJECTREFERENCE)), f(2, "optional", Ptr, Bool)]);
static CORE_CONFIGMAPKEYSELECTOR: Message = msg(
    "core.ConfigMapKeySelector",
    &[f(1, "", Inline, M(&CORE_LOCALOBJECTREFERENCE)), f(2, "key", Req, Str), f(3, "optional", Ptr, Bool)],
);
static CORE_CONFIGMAPPROJECTION: Message = msg(
    "core.ConfigMapProjection",
    &[
        f(1, "", Inline, M(&CORE_LOCALOBJECTREFERENCE)),
        f(2, "items", Rep, M(&CORE_KEYTOPATH)),
        f(4, "optional", Ptr, Bool),
    ],
);
static CORE_CONFIGMAPVOLUMESOURCE: Message = msg(
    "core.ConfigMapVolumeSource",
    &[
        f(1, "", Inline, M(&CORE_LOCALOBJECTREFERENCE)),
        f(2, "items", Rep, M(&CORE_KEYTOPATH)),
        f(3, "defaultMode", Ptr, Int),
        f(4, "optional", Ptr, Bool),
    ],
);
static CORE_CONTAINER: Message = msg(
    "core.Container",
    &[
        f(1, "name", Req, Str),
        f(2, "image", Opt, Str),
        f(3, "command", Rep, Str),
        f(4, "args", Rep, Str),
        f(5, "workingDir", Opt, Str),
        f(6, "ports", Rep, M(&CORE_CONTAINERPORT)),
        f(7, "env", Rep, M(&CORE_ENVVAR)),
        f(8, "resources", Opt, M(&CORE_RESOURCEREQUIREMENTS)),
        f(9, "volumeMounts", Rep, M(&CORE_VOLUMEMOUNT)),
        f(10, "livenessProbe", Ptr, M(&CORE_PROBE)),
        f(11, "readinessProbe", Ptr, M(&CORE_PROBE)),
        f(12, "lifecycle", Ptr, M(&CORE_LIFECYCLE)),
        f(13, "terminationMessagePath", Opt, Str),
        f(14, "imagePullPolicy", Opt, Str),
        f(15, "securityContext", Ptr, M(&CORE_SECURITYCONTEXT)),
        f(16, "stdin", Opt, Bool),
        f(17, "stdinOnce", Opt, Bool),
        f(18, "tty", Opt, Bool),
        f(19, "envFrom", Rep, M(&CORE_ENVFROMSOURCE)),
        f(20, "terminationMessagePolicy", Opt, Str),
        f(21, "volumeDevices", Rep, M(&CORE_VOLUMEDEVICE)),
        f(22, "startupProbe", Ptr, M(&CORE_PROBE)),
        f(23, "resizePolicy", Rep, M(&CORE_CONTAINERRESIZEPOLICY)),
        f(24, "restartPolicy", Ptr, Str),
    ],
);
static CORE_CONTAINERPORT: Message = msg(
    "core.ContainerPort",
    &[
        f(1, "name", Opt, Str),
        f(2, "hostPort", Opt, Int),
        f(3, "containerPort", Req, Int),
        f(4, "protocol", Opt, Str),
        f(5, "hostIP", Opt, Str),
    ],
);
static CORE_CONTAINERRESIZEPOLICY: Message =
    msg("core.ContainerResizePolicy", &[f(1, "resourceName", Req, Str), f(2, "restartPolicy", Req, Str)]);
static CORE_DOWNWARDAPIPROJECTION: Message =
    msg("core.DownwardAPIProjection", &[f(1, "items", Rep, M(&CORE_DOWNWARDAPIVOLUMEFILE))]);
static CORE_DOWNWARDAPIVOLUMEFILE: Message = msg(
    "core.DownwardAPIVolumeFile",
    &[
        f(1, "path", Req, Str),
        f(2, "fieldRef", Ptr, M(&CORE_OBJECTFIELDSELECTOR)),
        f(3, "resourceFieldRef", Ptr, M(&CORE_RESOURCEFIELDSELECTOR)),
        f(4, "mode", Ptr, Int),
    ],
);
static CORE_DOWNWARDAPIVOLUMESOURCE: Message = msg(
    "core.DownwardAPIVolumeSource",
    &[f(1, "items", Rep, M(&CORE_DOWNWARDAPIVOLUMEFILE)), f(2, "defaultMode", Ptr, Int)],
);
static CORE_EMPTYDIRVOLUMESOURCE: Message =
    msg("core.EmptyDirVolumeSource", &[f(1, "medium", Opt, Str), f(2, "sizeLimit", Ptr, Quantity)]);
static CORE_ENVFROMSOURCE: Message = msg(
    "core.EnvFromSource",
    &[
        f(1, "prefix", Opt, Str),
        f(2, "configMapRef", Ptr, M(&CORE_CONFIGMAPENVSOURCE)),
        f(3, "secretRef", Ptr, M(&CORE_SECRETENVSOURCE)),
    ],
);
static CORE_ENVVAR: Message = msg(
    "core.EnvVar",
    &[f(1, "name", Req, Str), f(2, "value", Opt, Str), f(3, "valueFrom", Ptr, M(&CORE_ENVVARSOURCE))],
);
static CORE_ENVVARSOURCE: Message = msg(
    "core.EnvVarSource",
    &[
        f(1, "fieldRef", Ptr, M(&CORE_OBJECTFIELDSELECTOR)),
        f(2, "resourceFieldRef", Ptr, M(&CORE_RESOURCEFIELDSELECTOR)),
        f(3, "configMapKeyRef", Ptr, M(&CORE_CONFIGMAPKEYSELECTOR)),
        f(4, "secretKeyRef", Ptr, M(&CORE_SECRETKEYSELECTOR)),
    ],
);
static CORE_EPHEMERALCONTAINER: Message = msg(
    "core.EphemeralContainer",
    &[f(1, "", Inline, M(&CORE_EPHEMERALCONTAINERCOMMON)), f(2, "targetContainerName", Opt, Str)],
);
static CORE_EPHEMERALCONTAINERCOMMON: Message = msg(
    "core.EphemeralContainerCommon",
    &[
        f(1, "name", Req, Str),
        f(2, "image", Opt, Str),
        f(3, "command", Rep, Str),
        f(4, "args", Rep, Str),
        f(5, "workingDir", Opt, Str),
        f(6, "ports", Rep, M(&CORE_CONTAINERPORT)),
        f(7, "env", Rep, M(&CORE_ENVVAR)),
        f(8, "resources", Opt, M(&CORE_RESOURCEREQUIREMENTS)),
        f(9, "volumeMounts", Rep, M(&CORE_VOLUMEMOUNT)),
        f(10, "livenessProbe", Ptr, M(&CORE_PROBE)),
        f(11, "readinessProbe", Ptr, M(&CORE_PROBE)),
        f(12, "lifecycle", Ptr, M(&CORE_LIFECYCLE)),
        f(13, "terminationMessagePath", Opt, Str),
        f(14, "imagePullPolicy", Opt, Str),
        f(15, "securityContext", Ptr, M(&CORE_SECURITYCONTEXT)),
        f(16, "stdin", Opt, Bool),
        f(17, "stdinOnce", Opt, Bool),
        f(18, "tty", Opt, Bool),
        f(19, "envFrom", Rep, M(&CORE_ENVFROMSOURCE)),
        f(20, "terminationMessagePolicy", Opt, Str),
        f(21, "volumeDevices", Rep, M(&CORE_VOLUMEDEVICE)),
        f(22, "startupProbe", Ptr, M(&CORE_PROBE)),
        f(23, "resizePolicy", Rep, M(&CORE_CONTAINERRESIZEPOLICY)),
        f(24, "restartPolicy", Ptr, Str),
    ],
);
static CORE_EPHEMERALVOLUMESOURCE: Message =
    msg("core.EphemeralVolumeSource", &[f(1, "volumeClaimTemplate", Ptr, M(&CORE_PERSISTENTVOLUMECLAIMTEMPLATE))]);
static CORE_EXECACTION: Message = msg("core.ExecAction", &[f(1, "command", Rep, Str)]);
static CORE_FCVOLUMESOURCE: Message = msg(
    "core.FCVolumeSource",
    &[
        f(1, "targetWWNs", Rep, Str),
        f(2, "lun", Ptr, Int),
        f(3, "fsType", Opt, Str),
        f(4, "readOnly", Opt, Bool),
        f(5, "wwids", Rep, Str),
    ],
);
static CORE_FLEXVOLUMESOURCE: Message = msg(
    "core.FlexVolumeSource",
    &[
        f(1, "driver", Req, Str),
        f(2, "fsType", Opt, Str),
        f(3, "secretRef", Ptr, M(&CORE_LOCALOBJECTREFERENCE)),
        f(4, "readOnly", Opt, Bool),
        f(5, "options", Map, Str),
    ],
);
static CORE_FLOCKERVOLUMESOURCE: Message =
    msg("core.FlockerVolumeSource", &[f(1, "datasetName", Opt, Str), f(2, "datasetUUID", Opt, Str)]);
static CORE_GCEPERSISTENTDISKVOLUMESOURCE: Message = msg(
    "core.GCEPersistentDiskVolumeSource",
    &[f(1, "pdName", Req, Str), f(2, "fsType", Opt, Str), f(3, "partition", Opt, Int), f(4, "readOnly", Opt, Bool)],
);
static CORE_GRPCACTION: Message = msg("core.GRPCAction", &[f(1, "port", Req, Int), f(2, "service", Ptr, Str)]);
static CORE_GITREPOVOLUMESOURCE: Message = msg(
    "core.GitRepoVolumeSource",
    &[f(1, "repository", Req, Str), f(2, "revision", Opt, Str), f(3, "directory", Opt, Str)],
);
static CORE_GLUSTERFSVOLUMESOURCE: Message = msg(
    "core.GlusterfsVolumeSource",
    &[f(1, "endpoints", Req, Str), f(2, "path", Req, Str), f(3, "readOnly", Opt, Bool)],
);
static CORE_HTTPGETACTION: Message = msg(
    "core.HTTPGetAction",
    &[
        f(1, "path", Opt, Str),
        f(2, "port", Req, IntOrStr),
        f(3, "host", Opt, Str),
        f(4, "scheme", Opt, Str),
        f(5, "httpHeaders", Rep, M(&CORE_HTTPHEADER)),
    ],
);
static CORE_HTTPHEADER: Message = msg("core.HTTPHeader", &[f(1, "name", Req, Str), f(2, "value", Req, Str)]);
static CORE_HOSTALIAS: Message = msg("core.HostAlias", &[f(1, "ip", Req, Str), f(2, "hostnames", Rep, Str)]);
static CORE_HOSTPATHVOLUMESOURCE: Message =
    msg("core.HostPathVolumeSource", &[f(1, "path", Req, Str), f(2, "type", Ptr, Str)]);
static CORE_ISCSIVOLUMESOURCE: Message = msg(
    "core.ISCSIVolumeSource",
    &[
        f(1, "targetPortal", Req, Str),
        f(2, "iqn", Req, Str),
        f(3, "lun", Req, Int),
        f(4, "iscsiInterface", Opt, Str),
        f(5, "fsType", Opt, Str),
        f(6, "readOnly", Opt, Bool),
        f(7, "portals", Rep, Str),
        f(8, "chapAuthDiscovery", Opt, Bool),
        f(10, "secretRef", Ptr, M(&CORE_LOCALOBJECTREFERENCE)),
        f(11, "chapAuthSession", Opt, Bool),
        f(12, "initiatorName", Ptr, Str),
    ],
);
static CORE_IMAGEVOLUMESOURCE: Message =
    msg("core.ImageVolumeSource", &[f(1, "reference", Opt, Str), f(2, "pullPolicy", Opt, Str)]);
static CORE_KEYTOPATH: Message =
    msg("core.KeyToPath", &[f(1, "key", Req, Str), f(2, "path", Req, Str), f(3, "mode", Ptr, Int)]);
static CORE_LIFECYCLE: Message = msg(
    "core.Lifecycle",
    &[
        f(1, "postStart", Ptr, M(&CORE_LIFECYCLEHANDLER)),
        f(2, "preStop", Ptr, M(&CORE_LIFECYCLEHANDLER)),
        f(3, "stopSignal", Ptr, Str),
    ],
);
static CORE_LIFECYCLEHANDLER: Message = msg(
    "core.LifecycleHandler",
    &[
        f(1, "exec", Ptr, M(&CORE_EXECACTION)),
        f(2, "httpGet", Ptr, M(&CORE_HTTPGETACTION)),
        f(3, "tcpSocket", Ptr, M(&CORE_TCPSOCKETACTION)),
        f(4, "sleep", Ptr, M(&CORE_SLEEPACTION)),
    ],
);
static CORE_LOADBALANCERINGRESS: Message = msg(
    "core.LoadBalancerIngress",
    &[
        f(1, "ip", Opt, Str),
        f(2, "hostname", Opt, Str),
        f(3, "ipMode", Ptr, Str),
        f(4, "ports", Rep, M(&CORE_PORTSTATUS)),
    ],
);
static CORE_LOADBALANCERSTATUS: Message =
    msg("core.LoadBalancerStatus", &[f(1, "ingress", Rep, M(&CORE_LOADBALANCERINGRESS))]);
static CORE_LOCALOBJECTREFERENCE: Message = msg("core.LocalObjectReference", &[f(1, "name", Opt, Str)]);
static CORE_NFSVOLUMESOURCE: Message =
    msg("core.NFSVolumeSource", &[f(1, "server", Req, Str), f(2, "path", Req, Str), f(3, "readOnly", Opt, Bool)]);
static CORE_NAMESPACE: Message = msg(
    "core.Namespace",
    &[
        f(1, "metadata", Opt, M(&META_OBJECTMETA)),
        f(2, "spec", Opt, M(&CORE_NAMESPACESPEC)),
        f(3, "status", Opt, M(&CORE_NAMESPACESTATUS)),
    ],
);
static CORE_NAMESPACECONDITION: Message = msg(
    "core.NamespaceCondition",
    &[
        f(1, "type", Req, Str),
        f(2, "status", Req, Str),
        f(4, "lastTransitionTime", Opt, Time),
        f(5, "reason", Opt, Str),
        f(6, "message", Opt, Str),
    ],
);
static CORE_NAMESPACESPEC: Message = msg("core.NamespaceSpec", &[f(1, "finalizers", Rep, Str)]);
static CORE_NAMESPACESTATUS: Message =
    msg("core.NamespaceStatus", &[f(1, "phase", Opt, Str), f(2, "conditions", Rep, M(&CORE_NAMESPACECONDITION))]);
static CORE_NODEAFFINITY: Message = msg(
    "core.NodeAffinity",
    &[
        f(1, "requiredDuringSchedulingIgnoredDuringExecution", Ptr, M(&CORE_NODESELECTOR)),
        f(2, "preferredDuringSchedulingIgnoredDuringExecution", Rep, M(&CORE_PREFERREDSCHEDULINGTERM)),
    ],
);
static CORE_NODESELECTOR: Message =
    msg("core.NodeSelector", &[f(1, "nodeSelectorTerms", Rep, M(&CORE_NODESELECTORTERM))]);
static CORE_NODESELECTORREQUIREMENT: Message =
    msg("core.NodeSelectorRequirement", &[f(1, "key", Req, Str), f(2, "operator", Req, Str), f(3, "values", Rep, Str)]);
static CORE_NODESELECTORTERM: Message = msg(
    "core.NodeSelectorTerm",
    &[
        f(1, "matchExpressions", Rep, M(&CORE_NODESELECTORREQUIREMENT)),
        f(2, "matchFields", Rep, M(&CORE_NODESELECTORREQUIREMENT)),
    ],
);
static CORE_OBJECTFIELDSELECTOR: Message =
    msg("core.ObjectFieldSelector", &[f(1, "apiVersion", Opt, Str), f(2, "fieldPath", Req, Str)]);
static CORE_OBJECTREFERENCE: Message = msg(
    "core.ObjectReference",
    &[
        f(1, "kind", Opt, Str),
        f(2, "namespace", Opt, Str),
        f(3, "name", Opt, Str),
        f(4, "uid", Opt, Str),
        f(5, "apiVersion", Opt, Str),
        f(6, "resourceVersion", Opt, Str),
        f(7, "fieldPath", Opt, Str),
    ],
);
static CORE_PERSISTENTVOLUMECLAIMSPEC: Message = msg(
    "core.PersistentVolumeClaimSpec",
    &[
        f(1, "accessModes", Rep, Str),
        f(2, "resources", Opt, M(&CORE_VOLUMERESOURCEREQUIREMENTS)),
        f(3, "volumeName", Opt, Str),
        f(4, "selector", Ptr, M(&META_LABELSELECTOR)),
        f(5, "storageClassName", Ptr, Str),
        f(6, "volumeMode", Ptr, Str),
        f(7, "dataSource", Ptr, M(&CORE_TYPEDLOCALOBJECTREFERENCE)),
        f(8, "dataSourceRef", Ptr, M(&CORE_TYPEDOBJECTREFERENCE)),
        f(9, "volumeAttributesClassName", Ptr, Str),
    ],
);
static CORE_PERSISTENTVOLUMECLAIMTEMPLATE: Message = msg(
    "core.PersistentVolumeClaimTemplate",
    &[f(1, "metadata", Opt, M(&META_OBJECTMETA)), f(2, "spec", Req, M(&CORE_PERSISTENTVOLUMECLAIMSPEC))],
);
static CORE_PERSISTENTVOLUMECLAIMVOLUMESOURCE: Message =
    msg("core.PersistentVolumeClaimVolumeSource", &[f(1, "claimName", Req, Str), f(2, "readOnly", Opt, Bool)]);
static CORE_PHOTONPERSISTENTDISKVOLUMESOURCE: Message =
    msg("core.PhotonPersistentDiskVolumeSource", &[f(1, "pdID", Req, Str), f(2, "fsType", Opt, Str)]);
static CORE_PODAFFINITY: Message = msg(
    "core.PodAffinity",
    &[
        f(1, "requiredDuringSchedulingIgnoredDuringExecution", Rep, M(&CORE_PODAFFINITYTERM)),
        f(2, "preferredDuringSchedulingIgnoredDuringExecution", Rep, M(&CORE_WEIGHTEDPODAFFINITYTERM)),
    ],
);
static CORE_PODAFFINITYTERM: Message = msg(
    "core.PodAffinityTerm",
    &[
        f(1, "labelSelector", Ptr, M(&META_LABELSELECTOR)),
        f(2, "namespaces", Rep, Str),
        f(3, "topologyKey", Req, Str),
        f(4, "namespaceSelector", Ptr, M(&META_LABELSELECTOR)),
        f(5, "matchLabelKeys", Rep, Str),
        f(6, "mismatchLabelKeys", Rep, Str),
    ],
);
static CORE_PODANTIAFFINITY: Message = msg(
    "core.PodAntiAffinity",
    &[
        f(1, "requiredDuringSchedulingIgnoredDuringExecution", Rep, M(&CORE_PODAFFINITYTERM)),
        f(2, "preferredDuringSchedulingIgnoredDuringExecution", Rep, M(&CORE_WEIGHTEDPODAFFINITYTERM)),
    ],
);
static CORE_PODDNSCONFIG: Message = msg(
    "core.PodDNSConfig",
    &[f(1, "nameservers", Rep, Str), f(2, "searches", Rep, Str), f(3, "options", Rep, M(&CORE_PODDNSCONFIGOPTION))],
);
static CORE_PODDNSCONFIGOPTION: Message =
    msg("core.PodDNSConfigOption", &[f(1, "name", Opt, Str), f(2, "value", Ptr, Str)]);
static CORE_PODOS: Message = msg("core.PodOS", &[f(1, "name", Req, Str)]);
static CORE_PODREADINESSGATE: Message = msg("core.PodReadinessGate", &[f(1, "conditionType", Req, Str)]);
static CORE_PODRESOURCECLAIM: Message = msg(
    "core.PodResourceClaim",
    &[f(1, "name", Req, Str), f(3, "resourceClaimName", Ptr, Str), f(4, "resourceClaimTemplateName", Ptr, Str)],
);
static CORE_PODSCHEDULINGGATE: Message = msg("core.PodSchedulingGate", &[f(1, "name", Req, Str)]);
static CORE_PODSECURITYCONTEXT: Message = msg(
    "core.PodSecurityContext",
    &[
        f(1, "seLinuxOptions", Ptr, M(&CORE_SELINUXOPTIONS)),
        f(2, "runAsUser", Ptr, Int),
        f(3, "runAsNonRoot", Ptr, Bool),
        f(4, "supplementalGroups", Rep, Int),
        f(5, "fsGroup", Ptr, Int),
        f(6, "runAsGroup", Ptr, Int),
        f(7, "sysctls", Rep, M(&CORE_SYSCTL)),
        f(8, "windowsOptions", Ptr, M(&CORE_WINDOWSSECURITYCONTEXTOPTIONS)),
        f(9, "fsGroupChangePolicy", Ptr, Str),
        f(10, "seccompProfile", Ptr, M(&CORE_SECCOMPPROFILE)),
        f(11, "appArmorProfile", Ptr, M(&CORE_APPARMORPROFILE)),
        f(12, "supplementalGroupsPolicy", Ptr, Str),
        f(13, "seLinuxChangePolicy", Ptr, Str),
    ],
);
static CORE_PODSPEC: Message = msg(
    "core.PodSpec",
    &[
        f(1, "volumes", Rep, M(&CORE_VOLUME)),
        f(2, "containers", Rep, M(&CORE_CONTAINER)),
        f(3, "restartPolicy", Opt, Str),
        f(4, "terminationGracePeriodSeconds", Ptr, Int),
        f(5, "activeDeadlineSeconds", Ptr, Int),
        f(6, "dnsPolicy", Opt, Str),
        f(7, "nodeSelector", Map, Str),
        f(8, "serviceAccountName", Opt, Str),
        f(9, "serviceAccount", Opt, Str),
        f(10, "nodeName", Opt, Str),
        f(11, "hostNetwork", Opt, Bool),
        f(12, "hostPID", Opt, Bool),
        f(13, "hostIPC", Opt, Bool),
        f(14, "securityContext", Ptr, M(&CORE_PODSECURITYCONTEXT)),
        f(15, "imagePullSecrets", Rep, M(&CORE_LOCALOBJECTREFERENCE)),
        f(16, "hostname", Opt, Str),
        f(17, "subdomain", Opt, Str),
        f(18, "affinity", Ptr, M(&CORE_AFFINITY)),
        f(19, "schedulerName", Opt, Str),
        f(20, "initContainers", Rep, M(&CORE_CONTAINER)),
        f(21, "automountServiceAccountToken", Ptr, Bool),
        f(22, "tolerations", Rep, M(&CORE_TOLERATION)),
        f(23, "hostAliases", Rep, M(&CORE_HOSTALIAS)),
        f(24, "priorityClassName", Opt, Str),
        f(25, "priority", Ptr, Int),
        f(26, "dnsConfig", Ptr, M(&CORE_PODDNSCONFIG)),
        f(27, "shareProcessNamespace", Ptr, Bool),
        f(28, "readinessGates", Rep, M(&CORE_PODREADINESSGATE)),
        f(29, "runtimeClassName", Ptr, Str),
        f(30, "enableServiceLinks", Ptr, Bool),
        f(31, "preemptionPolicy", Ptr, Str),
        f(32, "overhead", Map, Quantity),
        f(33, "topologySpreadConstraints", Rep, M(&CORE_TOPOLOGYSPREADCONSTRAINT)),
        f(34, "ephemeralContainers", Rep, M(&CORE_EPHEMERALCONTAINER)),
        f(35, "setHostnameAsFQDN", Ptr, Bool),
        f(36, "os", Ptr, M(&CORE_PODOS)),
        f(37, "hostUsers", Ptr, Bool),
        f(38, "schedulingGates", Rep, M(&CORE_PODSCHEDULINGGATE)),
        f(39, "resourceClaims", Rep, M(&CORE_PODRESOURCECLAIM)),
        f(40, "resources", Ptr, M(&CORE_RESOURCEREQUIREMENTS)),
    ],
);
static CORE_PODTEMPLATESPEC: Message =
    msg("core.PodTemplateSpec", &[f(1, "metadata", Opt, M(&META_OBJECTMETA)), f(2, "spec", Opt, M(&CORE_PODSPEC))]);
static CORE_PORTSTATUS: Message =
    msg("core.PortStatus", &[f(1, "port", Req, Int), f(2, "protocol", Req, Str), f(3, "error", Ptr, Str)]);
static CORE_PORTWORXVOLUMESOURCE: Message = msg(
    "core.PortworxVolumeSource",
    &[f(1, "volumeID", Req, Str), f(2, "fsType", Opt, Str), f(3, "readOnly", Opt, Bool)],
);
static CORE_PREFERREDSCHEDULINGTERM: Message = msg(
    "core.PreferredSchedulingTerm",
    &[f(1, "weight", Req, Int), f(2, "preference", Req, M(&CORE_NODESELECTORTERM))],
);
static CORE_PROBE: Message = msg(
    "core.Probe",
    &[
        f(1, "", Inline, M(&CORE_PROBEHANDLER)),
        f(2, "initialDelaySeconds", Opt, Int),
        f(3, "timeoutSeconds", Opt, Int),
        f(4, "periodSeconds", Opt, Int),
        f(5, "successThreshold", Opt, Int),
        f(6, "failureThreshold", Opt, Int),
        f(7, "terminationGracePeriodSeconds", Ptr, Int),
    ],
);
static CORE_PROBEHANDLER: Message = msg(
    "core.ProbeHandler",
    &[
        f(1, "exec", Ptr, M(&CORE_EXECACTION)),
        f(2, "httpGet", Ptr, M(&CORE_HTTPGETACTION)),
        f(3, "tcpSocket", Ptr, M(&CORE_TCPSOCKETACTION)),
        f(4, "grpc", Ptr, M(&CORE_GRPCACTION)),
    ],
);
static CORE_PROJECTEDVOLUMESOURCE: Message = msg(
    "core.ProjectedVolumeSource",
    &[f(1, "sources", Rep, M(&CORE_VOLUMEPROJECTION)), f(2, "defaultMode", Ptr, Int)],
);
static CORE_QUOBYTEVOLUMESOURCE: Message = msg(
    "core.QuobyteVolumeSource",
    &[
        f(1, "registry", Req, Str),
        f(2, "volume", Req, Str),
        f(3, "readOnly", Opt, Bool),
        f(4, "user", Opt, Str),
        f(5, "group", Opt, Str),
        f(6, "tenant", Opt, Str),
    ],
);
static CORE_RBDVOLUMESOURCE: Message = msg(
    "core.RBDVolumeSource",
    &[
        f(1, "monitors", Rep, Str),
        f(2, "image", Req, Str),
        f(3, "fsType", Opt, Str),
        f(4, "pool", Opt, Str),
        f(5, "user", Opt, Str),
        f(6, "keyring", Opt, Str),
        f(7, "secretRef", Ptr, M(&CORE_LOCALOBJECTREFERENCE)),
        f(8, "readOnly", Opt, Bool),
    ],
);
static CORE_RESOURCECLAIM: Message = msg("core.ResourceClaim", &[f(1, "name", Req, Str), f(2, "request", Opt, Str)]);
static CORE_RESOURCEFIELDSELECTOR: Message = msg(
    "core.ResourceFieldSelector",
    &[f(1, "containerName", Opt, Str), f(2, "resource", Req, Str), f(3, "divisor", Opt, Quantity)],
);
static CORE_RESOURCEQUOTA: Message = msg(
    "core.ResourceQuota",
    &[
        f(1, "metadata", Opt, M(&META_OBJECTMETA)),
        f(2, "spec", Opt, M(&CORE_RESOURCEQUOTASPEC)),
        f(3, "status", Opt, M(&CORE_RESOURCEQUOTASTATUS)),
    ],
);
static CORE_RESOURCEQUOTASPEC: Message = msg(
    "core.ResourceQuotaSpec",
    &[f(1, "hard", Map, Quantity), f(2, "scopes", Rep, Str), f(3, "scopeSelector", Ptr, M(&CORE_SCOPESELECTOR))],
);
static CORE_RESOURCEQUOTASTATUS: Message =
    msg("core.ResourceQuotaStatus", &[f(1, "hard", Map, Quantity), f(2, "used", Map, Quantity)]);
static CORE_RESOURCEREQUIREMENTS: Message = msg(
    "core.ResourceRequirements",
    &[f(1, "limits", Map, Quantity), f(2, "requests", Map, Quantity), f(3, "claims", Rep, M(&CORE_RESOURCECLAIM))],
);
static CORE_SELINUXOPTIONS: Message = msg(
    "core.SELinuxOptions",
    &[f(1, "user", Opt, Str), f(2, "role", Opt, Str), f(3, "type", Opt, Str), f(4, "level", Opt, Str)],
);
static CORE_SCALEIOVOLUMESOURCE: Message = msg(
    "core.ScaleIOVolumeSource",
    &[
        f(1, "gateway", Req, Str),
        f(2, "system", Req, Str),
        f(3, "secretRef", Ptr, M(&CORE_LOCALOBJECTREFERENCE)),
        f(4, "sslEnabled", Opt, Bool),
        f(5, "protectionDomain", Opt, Str),
        f(6, "storagePool", Opt, Str),
        f(7, "storageMode", Opt, Str),
        f(8, "volumeName", Opt, Str),
        f(9, "fsType", Opt, Str),
        f(10, "readOnly", Opt, Bool),
    ],
);
static CORE_SCOPESELECTOR: Message =
    msg("core.ScopeSelector", &[f(1, "matchExpressions", Rep, M(&CORE_SCOPEDRESOURCESELECTORREQUIREMENT))]);
static CORE_SCOPEDRESOURCESELECTORREQUIREMENT: Message = msg(
    "core.ScopedResourceSelectorRequirement",
    &[f(1, "scopeName", Req, Str), f(2, "operator", Req, Str), f(3, "values", Rep, Str)],
);
static CORE_SECCOMPPROFILE: Message =
    msg("core.SeccompProfile", &[f(1, "type", Req, Str), f(2, "localhostProfile", Ptr, Str)]);
static CORE_SECRET: Message = msg(
    "core.Secret",
    &[
        f(1, "metadata", Opt, M(&META_OBJECTMETA)),
        f(2, "data", Map, Bytes),
        f(3, "type", Opt, Str),
        f(4, "stringData", Map, Str),
        f(5, "immutable", Ptr, Bool),
    ],
);
static CORE_SECRETENVSOURCE: Message =
    msg("core.SecretEnvSource", &[f(1, "", Inline, M(&CORE_LOCALOBJECTREFERENCE)), f(2, "optional", Ptr, Bool)]);
static CORE_SECRETKEYSELECTOR: Message = msg(
    "core.SecretKeySelector",
    &[f(1, "", Inline, M(&CORE_LOCALOBJECTREFERENCE)), f(2, "key", Req, Str), f(3, "optional", Ptr, Bool)],
);
static CORE_SECRETPROJECTION: Message = msg(
    "core.SecretProjection",
    &[
        f(1, "", Inline, M(&CORE_LOCALOBJECTREFERENCE)),
        f(2, "items", Rep, M(&CORE_KEYTOPATH)),
        f(4, "optional", Ptr, Bool),
    ],
);
static CORE_SECRETVOLUMESOURCE: Message = msg(
    "core.SecretVolumeSource",
    &[
        f(1, "secretName", Opt, Str),
        f(2, "items", Rep, M(&CORE_KEYTOPATH)),
        f(3, "defaultMode", Ptr, Int),
        f(4, "optional", Ptr, Bool),
    ],
);
static CORE_SECURITYCONTEXT: Message = msg(
    "core.SecurityContext",
    &[
        f(1, "capabilities", Ptr, M(&CORE_CAPABILITIES)),
        f(2, "privileged", Ptr, Bool),
        f(3, "seLinuxOptions", Ptr, M(&CORE_SELINUXOPTIONS)),
        f(4, "runAsUser", Ptr, Int),
        f(5, "runAsNonRoot", Ptr, Bool),
        f(6, "readOnlyRootFilesystem", Ptr, Bool),
        f(7, "allowPrivilegeEscalation", Ptr, Bool),
        f(8, "runAsGroup", Ptr, Int),
        f(9, "procMount", Ptr, Str),
        f(10, "windowsOptions", Ptr, M(&CORE_WINDOWSSECURITYCONTEXTOPTIONS)),
        f(11, "seccompProfile", Ptr, M(&CORE_SECCOMPPROFILE)),
        f(12, "appArmorProfile", Ptr, M(&CORE_APPARMORPROFILE)),
    ],
);
static CORE_SERVICE: Message = msg(
    "core.Service",
    &[
        f(1, "metadata", Opt, M(&META_OBJECTMETA)),
        f(2, "spec", Opt, M(&CORE_SERVICESPEC)),
        f(3, "status", Opt, M(&CORE_SERVICESTATUS)),
    ],
);
static CORE_SERVICEACCOUNT: Message = msg(
    "core.ServiceAccount",
    &[
        f(1, "metadata", Opt, M(&META_OBJECTMETA)),
        f(2, "secrets", Rep, M(&CORE_OBJECTREFERENCE)),
        f(3, "imagePullSecrets", Rep, M(&CORE_LOCALOBJECTREFERENCE)),
        f(4, "automountServiceAccountToken", Ptr, Bool),
    ],
);
static CORE_SERVICEACCOUNTTOKENPROJECTION: Message = msg(
    "core.ServiceAccountTokenProjection",
    &[f(1, "audience", Opt, Str), f(2, "expirationSeconds", Ptr, Int), f(3, "path", Req, Str)],
);
static CORE_SERVICEPORT: Message = msg(
    "core.ServicePort",
    &[
        f(1, "name", Opt, Str),
        f(2, "protocol", Opt, Str),
        f(3, "port", Req, Int),
        f(4, "targetPort", Opt, IntOrStr),
        f(5, "nodePort", Opt, Int),
        f(6, "appProtocol", Ptr, Str),
    ],
);
static CORE_SERVICESPEC: Message = msg(
    "core.ServiceSpec",
    &[
        f(1, "ports", Rep, M(&CORE_SERVICEPORT)),
        f(2, "selector", Map, Str),
        f(3, "clusterIP", Opt, Str),
        f(4, "type", Opt, Str),
        f(5, "externalIPs", Rep, Str),
        f(7, "sessionAffinity", Opt, Str),
        f(8, "loadBalancerIP", Opt, Str),
        f(9, "loadBalancerSourceRanges", Rep, Str),
        f(10, "externalName", Opt, Str),
        f(11, "externalTrafficPolicy", Opt, Str),
        f(12, "healthCheckNodePort", Opt, Int),
        f(13, "publishNotReadyAddresses", Opt, Bool),
        f(14, "sessionAffinityConfig", Ptr, M(&CORE_SESSIONAFFINITYCONFIG)),
        f(17, "ipFamilyPolicy", Ptr, Str),
        f(18, "clusterIPs", Rep, Str),
        f(19, "ipFamilies", Rep, Str),
        f(20, "allocateLoadBalancerNodePorts", Ptr, Bool),
        f(21, "loadBalancerClass", Ptr, Str),
        f(22, "internalTrafficPolicy", Ptr, Str),
        f(23, "trafficDistribution", Ptr, Str),
    ],
);
static CORE_SERVICESTATUS: Message = msg(
    "core.ServiceStatus",
    &[f(1, "loadBalancer", Opt, M(&CORE_LOADBALANCERSTATUS)), f(2, "conditions", Rep, M(&META_CONDITION))],
);
static CORE_SESSIONAFFINITYCONFIG: Message =
    msg("core.SessionAffinityConfig", &[f(1, "clientIP", Ptr, M(&CORE_CLIENTIPCONFIG))]);
static CORE_SLEEPACTION: Message = msg("core.SleepAction", &[f(1, "seconds", Req, Int)]);
static CORE_STORAGEOSVOLUMESOURCE: Message = msg(
    "core.StorageOSVolumeSource",
    &[
        f(1, "volumeName", Opt, Str),
        f(2, "volumeNamespace", Opt, Str),
        f(3, "fsType", Opt, Str),
        f(4, "readOnly", Opt, Bool),
        f(5, "secretRef", Ptr, M(&CORE_LOCALOBJECTREFERENCE)),
    ],
);
static CORE_SYSCTL: Message = msg("core.Sysctl", &[f(1, "name", Req, Str), f(2, "value", Req, Str)]);
static CORE_TCPSOCKETACTION: Message =
    msg("core.TCPSocketAction", &[f(1, "port", Req, IntOrStr), f(2, "host", Opt, Str)]);
static CORE_TOLERATION: Message = msg(
    "core.Toleration",
    &[
        f(1, "key", Opt, Str),
        f(2, "operator", Opt, Str),
        f(3, "value", Opt, Str),
        f(4, "effect", Opt, Str),
        f(5, "tolerationSeconds", Ptr, Int),
    ],
);
static CORE_TOPOLOGYSPREADCONSTRAINT: Message = msg(
    "core.TopologySpreadConstraint",
    &[
        f(1, "maxSkew", Req, Int),
        f(2, "topologyKey", Req, Str),
        f(3, "whenUnsatisfiable", Req, Str),
        f(4, "labelSelector", Ptr, M(&META_LABELSELECTOR)),
        f(5, "minDomains", Ptr, Int),
        f(6, "nodeAffinityPolicy", Ptr, Str),
        f(7, "nodeTaintsPolicy", Ptr, Str),
        f(8, "matchLabelKeys", Rep, Str),
    ],
);
static CORE_TYPEDLOCALOBJECTREFERENCE: Message = msg(
    "core.TypedLocalObjectReference",
    &[f(1, "apiGroup", Ptr, Str), f(2, "kind", Req, Str), f(3, "name", Req, Str)],
);
static CORE_TYPEDOBJECTREFERENCE: Message = msg(
    "core.TypedObjectReference",
    &[f(1, "apiGroup", Ptr, Str), f(2, "kind", Req, Str), f(3, "name", Req, Str), f(4, "namespace", Ptr, Str)],
);
static CORE_VOLUME: Message = msg("core.Volume", &[f(1, "name", Req, Str), f(2, "", Inline, M(&CORE_VOLUMESOURCE))]);
static CORE_VOLUMEDEVICE: Message = msg("core.VolumeDevice", &[f(1, "name", Req, Str), f(2, "devicePath", Req, Str)]);
static CORE_VOLUMEMOUNT: Message = msg(
    "core.VolumeMount",
    &[
        f(1, "name", Req, Str),
        f(2, "readOnly", Opt, Bool),
        f(3, "mountPath", Req, Str),
        f(4, "subPath", Opt, Str),
        f(5, "mountPropagation", Ptr, Str),
        f(6, "subPathExpr", Opt, Str),
        f(7, "recursiveReadOnly", Ptr, Str),
    ],
);
static CORE_VOLUMEPROJECTION: Message = msg(
    "core.VolumeProjection",
    &[
        f(1, "secret", Ptr, M(&CORE_SECRETPROJECTION)),
        f(2, "downwardAPI", Ptr, M(&CORE_DOWNWARDAPIPROJECTION)),
        f(3, "configMap", Ptr, M(&CORE_CONFIGMAPPROJECTION)),
        f(4, "serviceAccountToken", Ptr, M(&CORE_SERVICEACCOUNTTOKENPROJECTION)),
        f(5, "clusterTrustBundle", Ptr, M(&CORE_CLUSTERTRUSTBUNDLEPROJECTION)),
    ],
);
static CORE_VOLUMERESOURCEREQUIREMENTS: Message =
    msg("core.VolumeResourceRequirements", &[f(1, "limits", Map, Quantity), f(2, "requests", Map, Quantity)]);
static CORE_VOLUMESOURCE: Message = msg(
    "core.VolumeSource",
    &[
        f(1, "hostPath", Ptr, M(&CORE_HOSTPATHVOLUMESOURCE)),
        f(2, "emptyDir", Ptr, M(&CORE_EMPTYDIRVOLUMESOURCE)),
        f(3, "gcePersistentDisk", Ptr, M(&CORE_GCEPERSISTENTDISKVOLUMESOURCE)),
        f(4, "awsElasticBlockStore", Ptr, M(&CORE_AWSELASTICBLOCKSTOREVOLUMESOURCE)),
        f(5, "gitRepo", Ptr, M(&CORE_GITREPOVOLUMESOURCE)),
        f(6, "secret", Ptr, M(&CORE_SECRETVOLUMESOURCE)),
        f(7, "nfs", Ptr, M(&CORE_NFSVOLUMESOURCE)),
        f(8, "iscsi", Ptr, M(&CORE_ISCSIVOLUMESOURCE)),
        f(9, "glusterfs", Ptr, M(&CORE_GLUSTERFSVOLUMESOURCE)),
        f(10, "persistentVolumeClaim", Ptr, M(&CORE_PERSISTENTVOLUMECLAIMVOLUMESOURCE)),
        f(11, "rbd", Ptr, M(&CORE_RBDVOLUMESOURCE)),
        f(12, "flexVolume", Ptr, M(&CORE_FLEXVOLUMESOURCE)),
        f(13, "cinder", Ptr, M(&CORE_CINDERVOLUMESOURCE)),
        f(14, "cephfs", Ptr, M(&CORE_CEPHFSVOLUMESOURCE)),
        f(15, "flocker", Ptr, M(&CORE_FLOCKERVOLUMESOURCE)),
        f(16, "downwardAPI", Ptr, M(&CORE_DOWNWARDAPIVOLUMESOURCE)),
        f(17, "fc", Ptr, M(&CORE_FCVOLUMESOURCE)),
        f(18, "azureFile", Ptr, M(&CORE_AZUREFILEVOLUMESOURCE)),
        f(19, "configMap", Ptr, M(&CORE_CONFIGMAPVOLUMESOURCE)),
        f(20, "vsphereVolume", Ptr, M(&CORE_VSPHEREVIRTUALDISKVOLUMESOURCE)),
        f(21, "quobyte", Ptr, M(&CORE_QUOBYTEVOLUMESOURCE)),
        f(22, "azureDisk", Ptr, M(&CORE_AZUREDISKVOLUMESOURCE)),
        f(23, "photonPersistentDisk", Ptr, M(&CORE_PHOTONPERSISTENTDISKVOLUMESOURCE)),
        f(24, "portworxVolume", Ptr, M(&CORE_PORTWORXVOLUMESOURCE)),
        f(25, "scaleIO", Ptr, M(&CORE_SCALEIOVOLUMESOURCE)),
        f(26, "projected", Ptr, M(&CORE_PROJECTEDVOLUMESOURCE)),
        f(27, "storageos", Ptr, M(&CORE_STORAGEOSVOLUMESOURCE)),
        f(28, "csi", Ptr, M(&CORE_CSIVOLUMESOURCE)),
        f(29, "ephemeral", Ptr, M(&CORE_EPHEMERALVOLUMESOURCE)),
        f(30, "image", Ptr, M(&CORE_IMAGEVOLUMESOURCE)),
    ],
);
static CORE_VSPHEREVIRTUALDISKVOLUMESOURCE: Message = msg(
    "core.VsphereVirtualDiskVolumeSource",
    &[
        f(1, "volumePath", Req, Str),
        f(2, "fsType", Opt, Str),
        f(3, "storagePolicyName", Opt, Str),
        f(4, "storagePolicyID", Opt, Str),
    ],
);
static CORE_WEIGHTEDPODAFFINITYTERM: Message = msg(
    "core.WeightedPodAffinityTerm",
    &[f(1, "weight", Req, Int), f(2, "podAffinityTerm", Req, M(&CORE_PODAFFINITYTERM))],
);
static CORE_WINDOWSSECURITYCONTEXTOPTIONS: Message = msg(
    "core.WindowsSecurityContextOptions",
    &[
        f(1, "gmsaCredentialSpecName", Ptr, Str),
        f(2, "gmsaCredentialSpec", Ptr, Str),
        f(3, "runAsUserName", Ptr, Str),
        f(4, "hostProcess", Ptr, Bool),
    ],
);
static META_CONDITION: Message = msg(
    "meta.Condition",
    &[
        f(1, "type", Req, Str),
        f(2, "status", Req, Str),
        f(3, "observedGeneration", Opt, Int),
        f(4, "lastTransitionTime", Req, Time),
        f(5, "reason", Req, Str),
        f(6, "message", Req, Str),
    ],
);
static META_FIELDSELECTORREQUIREMENT: Message = msg(
    "meta.FieldSelectorRequirement",
    &[f(1, "key", Req, Str), f(2, "operator", Req, Str), f(3, "values", Rep, Str)],
);
static META_LABELSELECTOR: Message = msg(
    "meta.LabelSelector",
    &[f(1, "matchLabels", Map, Str), f(2, "matchExpressions", Rep, M(&META_LABELSELECTORREQUIREMENT))],
);
static META_LABELSELECTORREQUIREMENT: Message = msg(
    "meta.LabelSelectorRequirement",
    &[f(1, "key", Req, Str), f(2, "operator", Req, Str), f(3, "values", Rep, Str)],
);
static META_MANAGEDFIELDSENTRY: Message = msg(
    "meta.ManagedFieldsEntry",
    &[
        f(1, "manager", Opt, Str),
        f(2, "operation", Opt, Str),
        f(3, "apiVersion", Opt, Str),
        f(4, "time", Ptr, Time),
        f(6, "fieldsType", Opt, Str),
        f(7, "fieldsV1", Ptr, FieldsV1),
        f(8, "subresource", Opt, Str),
    ],
);
static META_OBJECTMETA: Message = msg(
    "meta.ObjectMeta",
    &[
        f(1, "name", Opt, Str),
        f(2, "generateName", Opt, Str),
        f(3, "namespace", Opt, Str),
        f(4, "selfLink", Opt, Str),
        f(5, "uid", Opt, Str),
        f(6, "resourceVersion", Opt, Str),
        f(7, "generation", Opt, Int),
        f(8, "creationTimestamp", Opt, Time),
        f(9, "deletionTimestamp", Ptr, Time),
        f(10, "deletionGracePeriodSeconds", Ptr, Int),
        f(11, "labels", Map, Str),
        f(12, "annotations", Map, Str),
        f(13, "ownerReferences", Rep, M(&META_OWNERREFERENCE)),
        f(14, "finalizers", Rep, Str),
        f(17, "managedFields", Rep, M(&META_MANAGEDFIELDSENTRY)),
    ],
);
static META_OWNERREFERENCE: Message = msg(
    "meta.OwnerReference",
    &[
        f(1, "kind", Req, Str),
        f(3, "name", Req, Str),
        f(4, "uid", Req, Str),
        f(5, "apiVersion", Req, Str),
        f(6, "controller", Ptr, Bool),
        f(7, "blockOwnerDeletion", Ptr, Bool),
    ],
);
static NETWORKING_HTTPINGRESSPATH: Message = msg(
    "networking.HTTPIngressPath",
    &[f(1, "path", Opt, Str), f(2, "backend", Req, M(&NETWORKING_INGRESSBACKEND)), f(3, "pathType", Ptr, Str)],
);
static NETWORKING_HTTPINGRESSRULEVALUE: Message =
    msg("networking.HTTPIngressRuleValue", &[f(1, "paths", Rep, M(&NETWORKING_HTTPINGRESSPATH))]);
static NETWORKING_INGRESS: Message = msg(
    "networking.Ingress",
    &[
        f(1, "metadata", Opt, M(&META_OBJECTMETA)),
        f(2, "spec", Opt, M(&NETWORKING_INGRESSSPEC)),
        f(3, "status", Opt, M(&NETWORKING_INGRESSSTATUS)),
    ],
);
static NETWORKING_INGRESSBACKEND: Message = msg(
    "networking.IngressBackend",
    &[
        f(3, "resource", Ptr, M(&CORE_TYPEDLOCALOBJECTREFERENCE)),
        f(4, "service", Ptr, M(&NETWORKING_INGRESSSERVICEBACKEND)),
    ],
);
static NETWORKING_INGRESSLOADBALANCERINGRESS: Message = msg(
    "networking.IngressLoadBalancerIngress",
    &[f(1, "ip", Opt, Str), f(2, "hostname", Opt, Str), f(4, "ports", Rep, M(&NETWORKING_INGRESSPORTSTATUS))],
);
static NETWORKING_INGRESSLOADBALANCERSTATUS: Message =
    msg("networking.IngressLoadBalancerStatus", &[f(1, "ingress", Rep, M(&NETWORKING_INGRESSLOADBALANCERINGRESS))]);
static NETWORKING_INGRESSPORTSTATUS: Message =
    msg("networking.IngressPortStatus", &[f(1, "port", Req, Int), f(2, "protocol", Req, Str), f(3, "error", Ptr, Str)]);
static NETWORKING_INGRESSRULE: Message =
    msg("networking.IngressRule", &[f(1, "host", Opt, Str), f(2, "", Inline, M(&NETWORKING_INGRESSRULEVALUE))]);
static NETWORKING_INGRESSRULEVALUE: Message =
    msg("networking.IngressRuleValue", &[f(1, "http", Ptr, M(&NETWORKING_HTTPINGRESSRULEVALUE))]);
static NETWORKING_INGRESSSERVICEBACKEND: Message = msg(
    "networking.IngressServiceBackend",
    &[f(1, "name", Req, Str), f(2, "port", Opt, M(&NETWORKING_SERVICEBACKENDPORT))],
);
static NETWORKING_INGRESSSPEC: Message = msg(
    "networking.IngressSpec",
    &[
        f(1, "defaultBackend", Ptr, M(&NETWORKING_INGRESSBACKEND)),
        f(2, "tls", Rep, M(&NETWORKING_INGRESSTLS)),
        f(3, "rules", Rep, M(&NETWORKING_INGRESSRULE)),
        f(4, "ingressClassName", Ptr, Str),
    ],
);
static NETWORKING_INGRESSSTATUS: Message =
    msg("networking.IngressStatus", &[f(1, "loadBalancer", Opt, M(&NETWORKING_INGRESSLOADBALANCERSTATUS))]);
static NETWORKING_INGRESSTLS: Message =
    msg("networking.IngressTLS", &[f(1, "hosts", Rep, Str), f(2, "secretName", Opt, Str)]);
static NETWORKING_SERVICEBACKENDPORT: Message =
    msg("networking.ServiceBackendPort", &[f(1, "name", Opt, Str), f(2, "number", Opt, Int)]);
static POLICY_PODDISRUPTIONBUDGET: Message = msg(
    "policy.PodDisruptionBudget",
    &[
        f(1, "metadata", Opt, M(&META_OBJECTMETA)),
        f(2, "spec", Opt, M(&POLICY_PODDISRUPTIONBUDGETSPEC)),
        f(3, "status", Opt, M(&POLICY_PODDISRUPTIONBUDGETSTATUS)),
    ],
);
static POLICY_PODDISRUPTIONBUDGETSPEC: Message = msg(
    "policy.PodDisruptionBudgetSpec",
    &[
        f(1, "minAvailable", Ptr, IntOrStr),
        f(2, "selector", Ptr, M(&META_LABELSELECTOR)),
        f(3, "maxUnavailable", Ptr, IntOrStr),
        f(4, "unhealthyPodEvictionPolicy", Ptr, Str),
    ],
);
static POLICY_PODDISRUPTIONBUDGETSTATUS: Message = msg(
    "policy.PodDisruptionBudgetStatus",
    &[
        f(1, "observedGeneration", Opt, Int),
        f(2, "disruptedPods", Map, Time),
        f(3, "disruptionsAllowed", Req, Int),
        f(4, "currentHealthy", Req, Int),
        f(5, "desiredHealthy", Req, Int),
        f(6, "expectedPods", Req, Int),
        f(7, "conditions", Rep, M(&META_CONDITION)),
    ],
);
static RBAC_AGGREGATIONRULE: Message =
    msg("rbac.AggregationRule", &[f(1, "clusterRoleSelectors", Rep, M(&META_LABELSELECTOR))]);
static RBAC_CLUSTERROLE: Message = msg(
    "rbac.ClusterRole",
    &[
        f(1, "metadata", Opt, M(&META_OBJECTMETA)),
        f(2, "rules", Rep, M(&RBAC_POLICYRULE)),
        f(3, "aggregationRule", Ptr, M(&RBAC_AGGREGATIONRULE)),
    ],
);
static RBAC_CLUSTERROLEBINDING: Message = msg(
    "rbac.ClusterRoleBinding",
    &[
        f(1, "metadata", Opt, M(&META_OBJECTMETA)),
        f(2, "subjects", Rep, M(&RBAC_SUBJECT)),
        f(3, "roleRef", Req, M(&RBAC_ROLEREF)),
    ],
);
static RBAC_POLICYRULE: Message = msg(
    "rbac.PolicyRule",
    &[
        f(1, "verbs", Rep, Str),
        f(2, "apiGroups", Rep, Str),
        f(3, "resources", Rep, Str),
        f(4, "resourceNames", Rep, Str),
        f(5, "nonResourceURLs", Rep, Str),
    ],
);
static RBAC_ROLE: Message =
    msg("rbac.Role", &[f(1, "metadata", Opt, M(&META_OBJECTMETA)), f(2, "rules", Rep, M(&RBAC_POLICYRULE))]);
static RBAC_ROLEBINDING: Message = msg(
    "rbac.RoleBinding",
    &[
        f(1, "metadata", Opt, M(&META_OBJECTMETA)),
        f(2, "subjects", Rep, M(&RBAC_SUBJECT)),
        f(3, "roleRef", Req, M(&RBAC_ROLEREF)),
    ],
);
static RBAC_ROLEREF: Message =
    msg("rbac.RoleRef", &[f(1, "apiGroup", Req, Str), f(2, "kind", Req, Str), f(3, "name", Req, Str)]);
static RBAC_SUBJECT: Message = msg(
    "rbac.Subject",
    &[f(1, "kind", Req, Str), f(2, "apiGroup", Opt, Str), f(3, "name", Req, Str), f(4, "namespace", Opt, Str)],
);
static SCHEDULING_PRIORITYCLASS: Message = msg(
    "scheduling.PriorityClass",
    &[
        f(1, "metadata", Opt, M(&META_OBJECTMETA)),
        f(2, "value", Req, Int),
        f(3, "globalDefault", Opt, Bool),
        f(4, "description", Opt, Str),
        f(5, "preemptionPolicy", Ptr, Str),
    ],
);
