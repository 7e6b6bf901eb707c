//! The built-in resources of Kubernetes 1.33, as a 1.33 kube-apiserver with
//! default flags serves them: every GA group-version (beta and alpha APIs
//! are off by default since KEP-3136, so e.g. `resource.k8s.io`,
//! `storage.k8s.io/v1beta1` VolumeAttributesClass, `coordination.k8s.io/v1beta1`
//! LeaseCandidate and `certificates.k8s.io/v1beta1` ClusterTrustBundle are
//! absent), plus `autoscaling/v1` next to the preferred `autoscaling/v2`.
//!
//! New in 1.33 and present here: `networking.k8s.io/v1` `ipaddresses` and
//! `servicecidrs` (MultiCIDRServiceAllocator GA) and the `pods/resize`
//! subresource (InPlacePodVerticalScaling beta).
//!
//! Names, short names, categories, verbs (in upstream's sorted order),
//! subresources and their kinds are those of upstream's discovery documents
//! (`api/discovery/*.json` in kubernetes/kubernetes); group priorities are
//! the APIService priorities kube-apiserver registers
//! (`DefaultGenericAPIServicePriorities` and the kube-apiserver additions,
//! with apiregistration.k8s.io at 20001 so it is listed first).

use super::{GroupPriority, GroupVersionKind, ResourceInfo, Scope, StorageInfo, SubresourceInfo};

/// The verbs of an ordinary stored resource.
const CRUD: &[&str] = &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];
/// Namespaces: no `deletecollection`.
const NAMESPACE_VERBS: &[&str] = &["create", "delete", "get", "list", "patch", "update", "watch"];
/// Status-like subresources (`status`, `scale`, `approval`, `ephemeralcontainers`, `resize`).
const GET_PATCH_UPDATE: &[&str] = &["get", "patch", "update"];
/// Proxy subresources (`pods/proxy`, `nodes/proxy`, `services/proxy`).
const PROXY_VERBS: &[&str] = &["create", "delete", "get", "patch", "update"];
/// Streaming subresources (`attach`, `exec`, `portforward`).
const CREATE_GET: &[&str] = &["create", "get"];
const CREATE: &[&str] = &["create"];
const GET: &[&str] = &["get"];
const GET_LIST: &[&str] = &["get", "list"];
const UPDATE: &[&str] = &["update"];

const ALL: &[&str] = &["all"];
const API_EXTENSIONS: &[&str] = &["api-extensions"];

const fn gvk(group: &'static str, version: &'static str, kind: &'static str) -> GroupVersionKind {
    GroupVersionKind { group, version, kind }
}

const fn sub(name: &'static str, kind: GroupVersionKind, verbs: &'static [&'static str]) -> SubresourceInfo {
    SubresourceInfo { name, kind, verbs }
}

/// A stored resource with the full CRUD verbs, stored under its plural in
/// its own version; refine with the `const fn` modifiers below.
macro_rules! resource {
    ($group:literal, $version:literal, $plural:literal, $singular:literal, $kind:literal, $scope:ident) => {
        ResourceInfo {
            group: $group,
            version: $version,
            kind: $kind,
            list_kind: concat!($kind, "List"),
            plural: $plural,
            singular: $singular,
            scope: Scope::$scope,
            verbs: CRUD,
            short_names: &[],
            categories: &[],
            subresources: &[],
            preferred: true,
            storage: Some(StorageInfo { resource: $plural, version: gvk($group, $version, $kind) }),
        }
    };
}

impl ResourceInfo {
    const fn short(mut self, names: &'static [&'static str]) -> Self {
        self.short_names = names;
        self
    }
    const fn cats(mut self, categories: &'static [&'static str]) -> Self {
        self.categories = categories;
        self
    }
    const fn subs(mut self, subresources: &'static [SubresourceInfo]) -> Self {
        self.subresources = subresources;
        self
    }
    const fn verbs(mut self, verbs: &'static [&'static str]) -> Self {
        self.verbs = verbs;
        self
    }
    /// A resource without storage of its own (computed, or create-only).
    const fn virtual_(mut self) -> Self {
        self.storage = None;
        self
    }
    /// A resource that only accepts `create` and keeps nothing (reviews,
    /// bindings): no list kind, no storage.
    const fn create_only(mut self) -> Self {
        self.verbs = CREATE;
        self.list_kind = "";
        self.storage = None;
        self
    }
    /// Objects stored in another version's encoding (shared storage).
    const fn stored_as(mut self, resource: &'static str, version: GroupVersionKind) -> Self {
        self.storage = Some(StorageInfo { resource, version });
        self
    }
    const fn not_preferred(mut self) -> Self {
        self.preferred = false;
        self
    }
}

/// `status` of a resource: its own kind, get/patch/update.
const fn status(kind: GroupVersionKind) -> SubresourceInfo {
    sub("status", kind, GET_PATCH_UPDATE)
}

/// `scale` of a workload: `autoscaling/v1 Scale`.
const SCALE: SubresourceInfo = sub("scale", gvk("autoscaling", "v1", "Scale"), GET_PATCH_UPDATE);

const fn core(kind: &'static str) -> GroupVersionKind {
    gvk("", "v1", kind)
}

const POD_SUBRESOURCES: &[SubresourceInfo] = &[
    sub("attach", core("PodAttachOptions"), CREATE_GET),
    sub("binding", core("Binding"), CREATE),
    sub("ephemeralcontainers", core("Pod"), GET_PATCH_UPDATE),
    sub("eviction", gvk("policy", "v1", "Eviction"), CREATE),
    sub("exec", core("PodExecOptions"), CREATE_GET),
    sub("log", core("Pod"), GET),
    sub("portforward", core("PodPortForwardOptions"), CREATE_GET),
    sub("proxy", core("PodProxyOptions"), PROXY_VERBS),
    sub("resize", core("Pod"), GET_PATCH_UPDATE),
    status(core("Pod")),
];

const CORE_V1: &[ResourceInfo] =
    &[
        resource!("", "v1", "bindings", "binding", "Binding", Namespaced).create_only(),
        resource!("", "v1", "componentstatuses", "componentstatus", "ComponentStatus", Cluster)
            .verbs(GET_LIST)
            .short(&["cs"])
            .virtual_(),
        resource!("", "v1", "configmaps", "configmap", "ConfigMap", Namespaced).short(&["cm"]),
        resource!("", "v1", "endpoints", "endpoints", "Endpoints", Namespaced).short(&["ep"]),
        resource!("", "v1", "events", "event", "Event", Namespaced).short(&["ev"]),
        resource!("", "v1", "limitranges", "limitrange", "LimitRange", Namespaced).short(&["limits"]),
        resource!("", "v1", "namespaces", "namespace", "Namespace", Cluster)
            .verbs(NAMESPACE_VERBS)
            .short(&["ns"])
            .subs(&[sub("finalize", core("Namespace"), UPDATE), status(core("Namespace"))]),
        resource!("", "v1", "nodes", "node", "Node", Cluster)
            .short(&["no"])
            .subs(&[sub("proxy", core("NodeProxyOptions"), PROXY_VERBS), status(core("Node"))]),
        resource!("", "v1", "persistentvolumeclaims", "persistentvolumeclaim", "PersistentVolumeClaim", Namespaced)
            .short(&["pvc"])
            .subs(&[status(core("PersistentVolumeClaim"))]),
        resource!("", "v1", "persistentvolumes", "persistentvolume", "PersistentVolume", Cluster)
            .short(&["pv"])
            .subs(&[status(core("PersistentVolume"))]),
        resource!("", "v1", "pods", "pod", "Pod", Namespaced).short(&["po"]).cats(ALL).subs(POD_SUBRESOURCES),
        resource!("", "v1", "podtemplates", "podtemplate", "PodTemplate", Namespaced),
        resource!("", "v1", "replicationcontrollers", "replicationcontroller", "ReplicationController", Namespaced)
            .short(&["rc"])
            .cats(ALL)
            .subs(&[SCALE, status(core("ReplicationController"))]),
        resource!("", "v1", "resourcequotas", "resourcequota", "ResourceQuota", Namespaced)
            .short(&["quota"])
            .subs(&[status(core("ResourceQuota"))]),
        resource!("", "v1", "secrets", "secret", "Secret", Namespaced),
        resource!("", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", Namespaced)
            .short(&["sa"])
            .subs(&[sub("token", gvk("authentication.k8s.io", "v1", "TokenRequest"), CREATE)]),
        resource!("", "v1", "services", "service", "Service", Namespaced)
            .short(&["svc"])
            .cats(ALL)
            .subs(&[sub("proxy", core("ServiceProxyOptions"), PROXY_VERBS), status(core("Service"))]),
    ];

const fn apps(kind: &'static str) -> GroupVersionKind {
    gvk("apps", "v1", kind)
}

const APPS_V1: &[ResourceInfo] = &[
    resource!("apps", "v1", "controllerrevisions", "controllerrevision", "ControllerRevision", Namespaced),
    resource!("apps", "v1", "daemonsets", "daemonset", "DaemonSet", Namespaced)
        .short(&["ds"])
        .cats(ALL)
        .subs(&[status(apps("DaemonSet"))]),
    resource!("apps", "v1", "deployments", "deployment", "Deployment", Namespaced)
        .short(&["deploy"])
        .cats(ALL)
        .subs(&[SCALE, status(apps("Deployment"))]),
    resource!("apps", "v1", "replicasets", "replicaset", "ReplicaSet", Namespaced)
        .short(&["rs"])
        .cats(ALL)
        .subs(&[SCALE, status(apps("ReplicaSet"))]),
    resource!("apps", "v1", "statefulsets", "statefulset", "StatefulSet", Namespaced)
        .short(&["sts"])
        .cats(ALL)
        .subs(&[SCALE, status(apps("StatefulSet"))]),
];

const HPA_V2: GroupVersionKind = gvk("autoscaling", "v2", "HorizontalPodAutoscaler");

const OTHER_GROUPS: &[ResourceInfo] = &[
    // apiregistration.k8s.io/v1
    resource!("apiregistration.k8s.io", "v1", "apiservices", "apiservice", "APIService", Cluster)
        .cats(API_EXTENSIONS)
        .subs(&[status(gvk("apiregistration.k8s.io", "v1", "APIService"))]),
    // events.k8s.io/v1: the same objects as core events, stored as core v1 Event.
    resource!("events.k8s.io", "v1", "events", "event", "Event", Namespaced)
        .short(&["ev"])
        .stored_as("events", core("Event")),
    // authentication.k8s.io/v1
    resource!("authentication.k8s.io", "v1", "selfsubjectreviews", "selfsubjectreview", "SelfSubjectReview", Cluster)
        .create_only(),
    resource!("authentication.k8s.io", "v1", "tokenreviews", "tokenreview", "TokenReview", Cluster).create_only(),
    // authorization.k8s.io/v1
    resource!(
        "authorization.k8s.io",
        "v1",
        "localsubjectaccessreviews",
        "localsubjectaccessreview",
        "LocalSubjectAccessReview",
        Namespaced
    )
    .create_only(),
    resource!(
        "authorization.k8s.io",
        "v1",
        "selfsubjectaccessreviews",
        "selfsubjectaccessreview",
        "SelfSubjectAccessReview",
        Cluster
    )
    .create_only(),
    resource!(
        "authorization.k8s.io",
        "v1",
        "selfsubjectrulesreviews",
        "selfsubjectrulesreview",
        "SelfSubjectRulesReview",
        Cluster
    )
    .create_only(),
    resource!(
        "authorization.k8s.io",
        "v1",
        "subjectaccessreviews",
        "subjectaccessreview",
        "SubjectAccessReview",
        Cluster
    )
    .create_only(),
    // autoscaling/v2 (preferred) and v1, one storage in the v2 encoding.
    resource!(
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "horizontalpodautoscaler",
        "HorizontalPodAutoscaler",
        Namespaced
    )
    .short(&["hpa"])
    .cats(ALL)
    .subs(&[status(HPA_V2)]),
    resource!(
        "autoscaling",
        "v1",
        "horizontalpodautoscalers",
        "horizontalpodautoscaler",
        "HorizontalPodAutoscaler",
        Namespaced
    )
    .short(&["hpa"])
    .cats(ALL)
    .subs(&[status(gvk("autoscaling", "v1", "HorizontalPodAutoscaler"))])
    .stored_as("horizontalpodautoscalers", HPA_V2)
    .not_preferred(),
    // batch/v1
    resource!("batch", "v1", "cronjobs", "cronjob", "CronJob", Namespaced)
        .short(&["cj"])
        .cats(ALL)
        .subs(&[status(gvk("batch", "v1", "CronJob"))]),
    resource!("batch", "v1", "jobs", "job", "Job", Namespaced).cats(ALL).subs(&[status(gvk("batch", "v1", "Job"))]),
    // certificates.k8s.io/v1
    resource!(
        "certificates.k8s.io",
        "v1",
        "certificatesigningrequests",
        "certificatesigningrequest",
        "CertificateSigningRequest",
        Cluster
    )
    .short(&["csr"])
    .subs(&[
        sub("approval", gvk("certificates.k8s.io", "v1", "CertificateSigningRequest"), GET_PATCH_UPDATE),
        status(gvk("certificates.k8s.io", "v1", "CertificateSigningRequest")),
    ]),
    // networking.k8s.io/v1
    resource!("networking.k8s.io", "v1", "ingressclasses", "ingressclass", "IngressClass", Cluster),
    resource!("networking.k8s.io", "v1", "ingresses", "ingress", "Ingress", Namespaced)
        .short(&["ing"])
        .subs(&[status(gvk("networking.k8s.io", "v1", "Ingress"))]),
    resource!("networking.k8s.io", "v1", "ipaddresses", "ipaddress", "IPAddress", Cluster).short(&["ip"]),
    resource!("networking.k8s.io", "v1", "networkpolicies", "networkpolicy", "NetworkPolicy", Namespaced)
        .short(&["netpol"]),
    resource!("networking.k8s.io", "v1", "servicecidrs", "servicecidr", "ServiceCIDR", Cluster).subs(&[status(gvk(
        "networking.k8s.io",
        "v1",
        "ServiceCIDR",
    ))]),
    // policy/v1
    resource!("policy", "v1", "poddisruptionbudgets", "poddisruptionbudget", "PodDisruptionBudget", Namespaced)
        .short(&["pdb"])
        .subs(&[status(gvk("policy", "v1", "PodDisruptionBudget"))]),
    // rbac.authorization.k8s.io/v1
    resource!(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "clusterrolebinding",
        "ClusterRoleBinding",
        Cluster
    ),
    resource!("rbac.authorization.k8s.io", "v1", "clusterroles", "clusterrole", "ClusterRole", Cluster),
    resource!("rbac.authorization.k8s.io", "v1", "rolebindings", "rolebinding", "RoleBinding", Namespaced),
    resource!("rbac.authorization.k8s.io", "v1", "roles", "role", "Role", Namespaced),
    // storage.k8s.io/v1
    resource!("storage.k8s.io", "v1", "csidrivers", "csidriver", "CSIDriver", Cluster),
    resource!("storage.k8s.io", "v1", "csinodes", "csinode", "CSINode", Cluster),
    resource!("storage.k8s.io", "v1", "csistoragecapacities", "csistoragecapacity", "CSIStorageCapacity", Namespaced),
    resource!("storage.k8s.io", "v1", "storageclasses", "storageclass", "StorageClass", Cluster).short(&["sc"]),
    resource!("storage.k8s.io", "v1", "volumeattachments", "volumeattachment", "VolumeAttachment", Cluster)
        .subs(&[status(gvk("storage.k8s.io", "v1", "VolumeAttachment"))]),
    // admissionregistration.k8s.io/v1
    resource!(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "mutatingwebhookconfiguration",
        "MutatingWebhookConfiguration",
        Cluster
    )
    .cats(API_EXTENSIONS),
    resource!(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicies",
        "validatingadmissionpolicy",
        "ValidatingAdmissionPolicy",
        Cluster
    )
    .cats(API_EXTENSIONS)
    .subs(&[status(gvk("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy"))]),
    resource!(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicybindings",
        "validatingadmissionpolicybinding",
        "ValidatingAdmissionPolicyBinding",
        Cluster
    )
    .cats(API_EXTENSIONS),
    resource!(
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "validatingwebhookconfiguration",
        "ValidatingWebhookConfiguration",
        Cluster
    )
    .cats(API_EXTENSIONS),
    // apiextensions.k8s.io/v1
    resource!(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "customresourcedefinition",
        "CustomResourceDefinition",
        Cluster
    )
    .short(&["crd", "crds"])
    .cats(API_EXTENSIONS)
    .subs(&[status(gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"))]),
    // scheduling.k8s.io/v1
    resource!("scheduling.k8s.io", "v1", "priorityclasses", "priorityclass", "PriorityClass", Cluster).short(&["pc"]),
    // coordination.k8s.io/v1
    resource!("coordination.k8s.io", "v1", "leases", "lease", "Lease", Namespaced),
    // node.k8s.io/v1
    resource!("node.k8s.io", "v1", "runtimeclasses", "runtimeclass", "RuntimeClass", Cluster),
    // discovery.k8s.io/v1
    resource!("discovery.k8s.io", "v1", "endpointslices", "endpointslice", "EndpointSlice", Namespaced),
    // flowcontrol.apiserver.k8s.io/v1
    resource!("flowcontrol.apiserver.k8s.io", "v1", "flowschemas", "flowschema", "FlowSchema", Cluster)
        .subs(&[status(gvk("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema"))]),
    resource!(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "prioritylevelconfigurations",
        "prioritylevelconfiguration",
        "PriorityLevelConfiguration",
        Cluster
    )
    .subs(&[status(gvk("flowcontrol.apiserver.k8s.io", "v1", "PriorityLevelConfiguration"))]),
];

/// Every built-in resource (unordered; [`super::Registry::new`] sorts them
/// into discovery order).
pub fn builtin_resources() -> Vec<ResourceInfo> {
    [CORE_V1, APPS_V1, OTHER_GROUPS].concat()
}

/// `metrics.k8s.io/v1beta1` as metrics-server serves it (and so as rkube's
/// API server does, see `rkube_apiserver::metrics_api`): `nodes`
/// (`NodeMetrics`, cluster-scoped) and `pods` (`PodMetrics`, namespaced),
/// verbs `get` and `list` only (metrics-server implements no watch), no
/// singular name (its `GetSingularName` is `""`), no storage.
pub fn metrics_resources() -> Vec<ResourceInfo> {
    const METRICS_V1BETA1: &[ResourceInfo] = &[
        resource!("metrics.k8s.io", "v1beta1", "nodes", "", "NodeMetrics", Cluster).verbs(GET_LIST).virtual_(),
        resource!("metrics.k8s.io", "v1beta1", "pods", "", "PodMetrics", Namespaced).verbs(GET_LIST).virtual_(),
    ];
    METRICS_V1BETA1.to_vec()
}

/// The priorities of the `v1beta1.metrics.k8s.io` APIService metrics-server
/// installs: `groupPriorityMinimum` 100, `versionPriority` 100 (so the group
/// is listed after the built-in groups).
pub const METRICS_GROUP_PRIORITY: GroupPriority =
    GroupPriority { group: "metrics.k8s.io", priority: 100, versions: &[("v1beta1", 100)] };

/// The APIService priorities of the built-in groups (kube-apiserver 1.33):
/// `/apis` lists groups by `priority`, highest first, and a group's versions
/// by their priority, the highest being the preferred version.
pub fn builtin_group_priorities() -> &'static [GroupPriority] {
    const V1: &[(&str, u32)] = &[("v1", 15)];
    const PRIORITIES: &[GroupPriority] = &[
        GroupPriority { group: "", priority: 18000, versions: &[("v1", 1)] },
        // Listed first in /apis (the aggregator's own group).
        GroupPriority { group: "apiregistration.k8s.io", priority: 20001, versions: V1 },
        GroupPriority { group: "apps", priority: 17800, versions: V1 },
        GroupPriority { group: "events.k8s.io", priority: 17750, versions: V1 },
        GroupPriority { group: "authentication.k8s.io", priority: 17700, versions: V1 },
        GroupPriority { group: "authorization.k8s.io", priority: 17600, versions: V1 },
        GroupPriority { group: "autoscaling", priority: 17500, versions: &[("v2", 30), ("v1", 15)] },
        GroupPriority { group: "batch", priority: 17400, versions: V1 },
        GroupPriority { group: "certificates.k8s.io", priority: 17300, versions: V1 },
        GroupPriority { group: "networking.k8s.io", priority: 17200, versions: V1 },
        GroupPriority { group: "policy", priority: 17100, versions: V1 },
        GroupPriority { group: "rbac.authorization.k8s.io", priority: 17000, versions: V1 },
        GroupPriority { group: "storage.k8s.io", priority: 16800, versions: V1 },
        GroupPriority { group: "apiextensions.k8s.io", priority: 16700, versions: V1 },
        GroupPriority { group: "admissionregistration.k8s.io", priority: 16700, versions: V1 },
        GroupPriority { group: "scheduling.k8s.io", priority: 16600, versions: V1 },
        GroupPriority { group: "coordination.k8s.io", priority: 16500, versions: V1 },
        GroupPriority { group: "node.k8s.io", priority: 16300, versions: V1 },
        GroupPriority { group: "discovery.k8s.io", priority: 16200, versions: V1 },
        GroupPriority { group: "flowcontrol.apiserver.k8s.io", priority: 16100, versions: &[("v1", 21)] },
    ];
    PRIORITIES
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashSet};

    use super::super::Registry;
    use super::*;

    fn registry() -> Registry {
        Registry::builtin()
    }

    #[test]
    fn resource_counts_per_group_version_match_kubernetes_1_33() {
        let r = registry();
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for res in r.resources() {
            *counts.entry(res.api_version()).or_default() += 1;
        }
        let expected: BTreeMap<String, usize> = [
            ("v1", 17),
            ("admissionregistration.k8s.io/v1", 4),
            ("apiextensions.k8s.io/v1", 1),
            ("apiregistration.k8s.io/v1", 1),
            ("apps/v1", 5),
            ("authentication.k8s.io/v1", 2),
            ("authorization.k8s.io/v1", 4),
            ("autoscaling/v1", 1),
            ("autoscaling/v2", 1),
            ("batch/v1", 2),
            ("certificates.k8s.io/v1", 1),
            ("coordination.k8s.io/v1", 1),
            ("discovery.k8s.io/v1", 1),
            ("events.k8s.io/v1", 1),
            ("flowcontrol.apiserver.k8s.io/v1", 2),
            ("networking.k8s.io/v1", 5),
            ("node.k8s.io/v1", 1),
            ("policy/v1", 1),
            ("rbac.authorization.k8s.io/v1", 4),
            ("scheduling.k8s.io/v1", 1),
            ("storage.k8s.io/v1", 5),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        assert_eq!(counts, expected);
        assert_eq!(r.resources().len(), 61);
    }

    #[test]
    fn groups_are_in_upstream_discovery_order_with_preferred_version_first() {
        let r = registry();
        let names: Vec<&str> = r.groups().iter().map(|g| g.name).collect();
        assert_eq!(
            names,
            [
                "",
                "apiregistration.k8s.io",
                "apps",
                "events.k8s.io",
                "authentication.k8s.io",
                "authorization.k8s.io",
                "autoscaling",
                "batch",
                "certificates.k8s.io",
                "networking.k8s.io",
                "policy",
                "rbac.authorization.k8s.io",
                "storage.k8s.io",
                "admissionregistration.k8s.io",
                "apiextensions.k8s.io",
                "scheduling.k8s.io",
                "coordination.k8s.io",
                "node.k8s.io",
                "discovery.k8s.io",
                "flowcontrol.apiserver.k8s.io",
            ]
        );
        assert_eq!(r.group("autoscaling").unwrap().versions, ["v2", "v1"]);
        assert_eq!(r.group("autoscaling").unwrap().preferred_version(), "v2");
        assert!(r.groups().iter().filter(|g| g.name != "autoscaling").all(|g| g.versions == ["v1"]));
        assert!(!r.lookup("autoscaling", "v1", "horizontalpodautoscalers").unwrap().preferred);
        assert!(r.lookup("autoscaling", "v2", "horizontalpodautoscalers").unwrap().preferred);
        assert_eq!(r.resources()[0].plural, "bindings");
    }

    #[test]
    fn pods_are_described_exactly_as_upstream() {
        let r = registry();
        let pods = r.lookup("", "v1", "pods").unwrap();
        assert_eq!(pods.kind, "Pod");
        assert_eq!(pods.list_kind, "PodList");
        assert_eq!(pods.singular, "pod");
        assert_eq!(pods.scope, Scope::Namespaced);
        assert_eq!(pods.verbs, CRUD);
        assert_eq!(pods.short_names, ["po"]);
        assert_eq!(pods.categories, ["all"]);
        let subs: Vec<(&str, String, &str, &[&str])> =
            pods.subresources.iter().map(|s| (s.name, s.kind.api_version(), s.kind.kind, s.verbs)).collect();
        let v1 = || "v1".to_string();
        assert_eq!(
            subs,
            vec![
                ("attach", v1(), "PodAttachOptions", &["create", "get"][..]),
                ("binding", v1(), "Binding", &["create"][..]),
                ("ephemeralcontainers", v1(), "Pod", &["get", "patch", "update"][..]),
                ("eviction", "policy/v1".to_string(), "Eviction", &["create"][..]),
                ("exec", v1(), "PodExecOptions", &["create", "get"][..]),
                ("log", v1(), "Pod", &["get"][..]),
                ("portforward", v1(), "PodPortForwardOptions", &["create", "get"][..]),
                ("proxy", v1(), "PodProxyOptions", &["create", "delete", "get", "patch", "update"][..]),
                ("resize", v1(), "Pod", &["get", "patch", "update"][..]),
                ("status", v1(), "Pod", &["get", "patch", "update"][..]),
            ]
        );
        assert_eq!(pods.storage, Some(StorageInfo { resource: "pods", version: gvk("", "v1", "Pod") }));
    }

    #[test]
    fn a_handful_of_entries_match_upstream() {
        let r = registry();
        let ns = r.lookup("", "v1", "namespaces").unwrap();
        assert_eq!((ns.scope, ns.verbs, ns.short_names), (Scope::Cluster, NAMESPACE_VERBS, &["ns"][..]));
        assert_eq!(ns.subresource("finalize").unwrap().verbs, ["update"]);

        let cs = r.lookup("", "v1", "componentstatuses").unwrap();
        assert_eq!((cs.verbs, cs.short_names, cs.storage.is_none()), (GET_LIST, &["cs"][..], true));

        let bindings = r.lookup("", "v1", "bindings").unwrap();
        assert_eq!((bindings.verbs, bindings.list_kind), (&["create"][..], ""));

        let ep = r.lookup("", "v1", "endpoints").unwrap();
        assert_eq!((ep.singular, ep.short_names), ("endpoints", &["ep"][..]));

        let token = r.lookup("", "v1", "serviceaccounts").unwrap().subresource("token").unwrap();
        assert_eq!(token.kind, gvk("authentication.k8s.io", "v1", "TokenRequest"));
        assert_eq!(token.verbs, ["create"]);

        let deploy = r.lookup("apps", "v1", "deployments").unwrap();
        assert_eq!((deploy.short_names, deploy.categories), (&["deploy"][..], &["all"][..]));
        assert_eq!(deploy.subresource("scale").unwrap().kind, gvk("autoscaling", "v1", "Scale"));

        let tr = r.lookup("authentication.k8s.io", "v1", "tokenreviews").unwrap();
        assert_eq!((tr.verbs, tr.scope), (&["create"][..], Scope::Cluster));
        let lsar = r.lookup("authorization.k8s.io", "v1", "localsubjectaccessreviews").unwrap();
        assert_eq!(lsar.scope, Scope::Namespaced);

        let crd = r.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions").unwrap();
        assert_eq!((crd.short_names, crd.categories), (&["crd", "crds"][..], &["api-extensions"][..]));

        let csr = r.lookup("certificates.k8s.io", "v1", "certificatesigningrequests").unwrap();
        let csr_subs: Vec<&str> = csr.subresources.iter().map(|s| s.name).collect();
        assert_eq!(csr_subs, ["approval", "status"]);

        let ip = r.lookup("networking.k8s.io", "v1", "ipaddresses").unwrap();
        assert_eq!((ip.kind, ip.short_names, ip.scope), ("IPAddress", &["ip"][..], Scope::Cluster));
        assert!(r.lookup("networking.k8s.io", "v1", "servicecidrs").unwrap().subresource("status").is_some());

        // Off by default in 1.33 (beta or alpha): not served.
        assert!(r.group("resource.k8s.io").is_none());
        assert!(r.lookup("storage.k8s.io", "v1", "volumeattributesclasses").is_none());
        assert!(r.lookup("coordination.k8s.io", "v1", "leasecandidates").is_none());
        assert!(!r.serves("flowcontrol.apiserver.k8s.io", "v1beta3"));
    }

    #[test]
    fn shared_storage_follows_upstream_storage_versions() {
        let r = registry();
        let core_events = r.lookup("", "v1", "events").unwrap().storage.clone().unwrap();
        let new_events = r.lookup("events.k8s.io", "v1", "events").unwrap().storage.clone().unwrap();
        assert_eq!(core_events, new_events);
        assert_eq!(new_events.version, gvk("", "v1", "Event"));
        let hpa1 = r.lookup("autoscaling", "v1", "horizontalpodautoscalers").unwrap().storage.clone().unwrap();
        let hpa2 = r.lookup("autoscaling", "v2", "horizontalpodautoscalers").unwrap().storage.clone().unwrap();
        assert_eq!(hpa1, hpa2);
        assert_eq!(hpa2.version, HPA_V2);
        // Create-only and computed resources store nothing.
        for (g, p) in [
            ("", "bindings"),
            ("", "componentstatuses"),
            ("authentication.k8s.io", "tokenreviews"),
            ("authorization.k8s.io", "subjectaccessreviews"),
        ] {
            assert!(r.lookup(g, "v1", p).unwrap().storage.is_none(), "{g}/{p}");
        }
        // Otherwise storage resources are unique except the two shared ones.
        let mut seen: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for res in r.resources() {
            if let Some(s) = &res.storage {
                seen.entry(s.resource).or_default().push(res.api_version());
            }
        }
        let shared: Vec<_> = seen.iter().filter(|(_, v)| v.len() > 1).map(|(k, _)| *k).collect();
        assert_eq!(shared, ["events", "horizontalpodautoscalers"]);
    }

    #[test]
    fn every_subresource_has_a_kind_and_verbs() {
        for res in registry().resources() {
            for s in res.subresources {
                assert!(!s.kind.kind.is_empty() && !s.kind.version.is_empty(), "{}/{}", res.plural, s.name);
                assert!(!s.verbs.is_empty(), "{}/{}", res.plural, s.name);
                if s.name == "status" {
                    assert_eq!(s.kind, res.gvk(), "{}/status has the parent kind", res.group_resource());
                }
            }
        }
    }

    #[test]
    fn verbs_and_subresources_are_sorted_and_known() {
        let known: HashSet<&str> = CRUD.iter().copied().collect();
        for res in registry().resources() {
            assert!(res.verbs.windows(2).all(|w| w[0] < w[1]), "{} verbs not sorted", res.group_resource());
            assert!(res.verbs.iter().all(|v| known.contains(v)), "{}", res.group_resource());
            assert!(res.subresources.windows(2).all(|w| w[0].name < w[1].name), "{}", res.group_resource());
            for s in res.subresources {
                assert!(s.verbs.windows(2).all(|w| w[0] < w[1]), "{}/{}", res.plural, s.name);
                assert!(s.verbs.iter().all(|v| known.contains(v)), "{}/{}", res.plural, s.name);
            }
        }
    }

    #[test]
    fn no_duplicate_resources_kinds_or_names_within_a_group_version() {
        let r = registry();
        let mut gvr = HashSet::new();
        let mut gvk_seen = HashSet::new();
        for res in r.resources() {
            assert!(gvr.insert((res.group, res.version, res.plural)), "duplicate {}", res.group_resource());
            assert!(gvk_seen.insert(res.gvk()), "duplicate kind {:?}", res.gvk());
            assert_eq!(res.list_kind.is_empty(), !res.allows("list"), "{}", res.group_resource());
            if res.allows("list") {
                assert_eq!(res.list_kind, format!("{}List", res.kind));
            }
        }
        // A short name means one resource, except where upstream itself has
        // the same resource in two groups or versions (core and
        // events.k8s.io `ev`; autoscaling v1 and v2 `hpa`).
        let mut short: BTreeMap<&str, HashSet<&str>> = BTreeMap::new();
        for res in r.resources() {
            for s in res.short_names {
                short.entry(s).or_default().insert(res.plural);
            }
        }
        for (name, plurals) in short {
            assert_eq!(plurals.len(), 1, "short name {name} names {plurals:?}");
        }
    }

    #[test]
    fn categories_match_upstream() {
        let r = registry();
        let all: Vec<String> = r.category("all").iter().map(|r| r.group_resource()).collect();
        assert_eq!(
            all,
            [
                "pods",
                "replicationcontrollers",
                "services",
                "daemonsets.apps",
                "deployments.apps",
                "replicasets.apps",
                "statefulsets.apps",
                "horizontalpodautoscalers.autoscaling",
                "cronjobs.batch",
                "jobs.batch",
            ]
        );
        assert_eq!(r.category("all")[7].version, "v2", "the preferred HPA version");
        let ext: Vec<String> = r.category("api-extensions").iter().map(|r| r.group_resource()).collect();
        assert_eq!(
            ext,
            [
                "apiservices.apiregistration.k8s.io",
                "mutatingwebhookconfigurations.admissionregistration.k8s.io",
                "validatingadmissionpolicies.admissionregistration.k8s.io",
                "validatingadmissionpolicybindings.admissionregistration.k8s.io",
                "validatingwebhookconfigurations.admissionregistration.k8s.io",
                "customresourcedefinitions.apiextensions.k8s.io",
            ]
        );
    }

    #[test]
    fn kubectl_style_resolution() {
        let r = registry();
        let gr = |arg: &str| r.resolve(arg).map(|x| format!("{}/{}", x.api_version(), x.plural));
        assert_eq!(gr("po").as_deref(), Some("v1/pods"));
        assert_eq!(gr("Pods").as_deref(), Some("v1/pods"));
        assert_eq!(gr("pod").as_deref(), Some("v1/pods"));
        assert_eq!(gr("svc").as_deref(), Some("v1/services"));
        assert_eq!(gr("deploy").as_deref(), Some("apps/v1/deployments"));
        assert_eq!(gr("deployments.apps").as_deref(), Some("apps/v1/deployments"));
        assert_eq!(gr("deploy.apps").as_deref(), Some("apps/v1/deployments"));
        assert_eq!(gr("deployments.v1.apps").as_deref(), Some("apps/v1/deployments"));
        assert_eq!(gr("hpa").as_deref(), Some("autoscaling/v2/horizontalpodautoscalers"));
        assert_eq!(
            gr("horizontalpodautoscalers.v1.autoscaling").as_deref(),
            Some("autoscaling/v1/horizontalpodautoscalers")
        );
        // Core wins an ambiguous name, as kubectl's `get ev` shows.
        assert_eq!(gr("ev").as_deref(), Some("v1/events"));
        assert_eq!(gr("events.events.k8s.io").as_deref(), Some("events.k8s.io/v1/events"));
        assert_eq!(gr("crds").as_deref(), Some("apiextensions.k8s.io/v1/customresourcedefinitions"));
        assert_eq!(gr("netpol").as_deref(), Some("networking.k8s.io/v1/networkpolicies"));
        assert_eq!(gr("pdb").as_deref(), Some("policy/v1/poddisruptionbudgets"));
        assert_eq!(gr("foos"), None);
        assert_eq!(gr("pods.apps"), None);
        assert_eq!(r.named("ev").count(), 2);
        assert_eq!(r.lookup_kind("apps", "v1", "Deployment").unwrap().plural, "deployments");
        assert_eq!(r.preferred("autoscaling", "horizontalpodautoscalers").unwrap().version, "v2");
        let batch: Vec<&str> = r.group_version_resources("batch", "v1").iter().map(|r| r.plural).collect();
        assert_eq!(batch, ["cronjobs", "jobs"]);
        assert!(r.group_version_resources("batch", "v2").is_empty());
    }
}
