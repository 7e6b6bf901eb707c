//! The `system:controller:<name>` ClusterRoles of upstream's
//! `bootstrappolicy/controller_policy.go` (Kubernetes 1.33 defaults; the
//! roles of controllers behind features that are off by default in 1.33 —
//! DRA's resource-claim and device-taint-eviction controllers, the
//! VolumeAttributesClass protection controller — are left out), each bound
//! to the ServiceAccount `kube-system/<name>`, and the namespaced roles of
//! `kube-system` and `kube-public` with their bindings.

use super::{r, BindingDef, RoleDef};

const READ: &str = "get list watch";
const EVENTS: (&str, &str, &str) = ("create patch update", "core events.k8s.io", "events");

fn events() -> crate::authz::rbac::PolicyRule {
    r(EVENTS.0, EVENTS.1, EVENTS.2)
}

/// The controller roles, by controller name (without the
/// `system:controller:` prefix), in name order.
pub fn controller_roles() -> Vec<(&'static str, Vec<crate::authz::rbac::PolicyRule>)> {
    vec![
        (
            "attachdetach-controller",
            vec![
                r("list watch", "core", "persistentvolumeclaims persistentvolumes"),
                r(READ, "core", "nodes"),
                r("patch update", "core", "nodes/status"),
                r("list watch", "core", "pods"),
                events(),
                r("create delete get list watch", "storage.k8s.io", "volumeattachments"),
                r(READ, "storage.k8s.io", "csidrivers"),
                r(READ, "storage.k8s.io", "csinodes"),
            ],
        ),
        (
            "certificate-controller",
            vec![
                r("delete get list watch", "certificates.k8s.io", "certificatesigningrequests"),
                r(
                    "update",
                    "certificates.k8s.io",
                    "certificatesigningrequests/approval certificatesigningrequests/status",
                ),
                r("approve", "certificates.k8s.io", "signers").named("kubernetes.io/kube-apiserver-client-kubelet"),
                r("sign", "certificates.k8s.io", "signers").named(
                    "kubernetes.io/kube-apiserver-client kubernetes.io/kube-apiserver-client-kubelet \
                     kubernetes.io/kubelet-serving kubernetes.io/legacy-unknown",
                ),
                r("create", "authorization.k8s.io", "subjectaccessreviews"),
                events(),
            ],
        ),
        (
            "clusterrole-aggregation-controller",
            vec![r("escalate get list patch update watch", "rbac.authorization.k8s.io", "clusterroles")],
        ),
        (
            "cronjob-controller",
            vec![
                r("get list update watch", "batch", "cronjobs"),
                r("create delete get list patch update watch", "batch", "jobs"),
                r("update", "batch", "cronjobs/status"),
                r("update", "batch", "cronjobs/finalizers"),
                r("delete list watch", "core", "pods"),
                events(),
            ],
        ),
        (
            "daemon-set-controller",
            vec![
                r(READ, "apps extensions", "daemonsets"),
                r("update", "apps extensions", "daemonsets/status"),
                r("update", "apps extensions", "daemonsets/finalizers"),
                r("list watch", "core", "nodes"),
                r("create delete list patch watch", "core", "pods"),
                r("create", "core", "pods/binding"),
                r("create delete get list patch update watch", "apps", "controllerrevisions"),
                events(),
            ],
        ),
        (
            "deployment-controller",
            vec![
                r("get list update watch", "apps extensions", "deployments"),
                r("update", "apps extensions", "deployments/status"),
                r("update", "apps extensions", "deployments/finalizers"),
                r("create delete get list patch update watch", "apps extensions", "replicasets"),
                r("get list update watch", "core", "pods"),
                events(),
            ],
        ),
        (
            "disruption-controller",
            vec![
                r(READ, "apps extensions", "deployments"),
                r(READ, "apps extensions", "replicasets"),
                r(READ, "core", "replicationcontrollers"),
                r(READ, "policy", "poddisruptionbudgets"),
                r(READ, "apps", "statefulsets"),
                r("update", "policy", "poddisruptionbudgets/status"),
                r("patch update", "core", "pods/status"),
                r("get", "*", "*/scale"),
                events(),
            ],
        ),
        (
            "endpoint-controller",
            vec![
                r(READ, "core", "pods services"),
                r("create delete get list update watch", "core", "endpoints"),
                r("create", "core", "endpoints/restricted"),
                events(),
            ],
        ),
        (
            "endpointslice-controller",
            vec![
                r(READ, "core", "nodes pods services"),
                r("update", "core", "services/finalizers"),
                r("create delete get list update watch", "discovery.k8s.io", "endpointslices"),
                events(),
            ],
        ),
        (
            "endpointslicemirroring-controller",
            vec![
                r(READ, "core", "endpoints services"),
                r("update", "core", "services/finalizers"),
                r("update", "core", "endpoints/finalizers"),
                r("create delete get list update watch", "discovery.k8s.io", "endpointslices"),
                events(),
            ],
        ),
        (
            "ephemeral-volume-controller",
            vec![
                r(READ, "core", "pods"),
                r("update", "core", "pods/finalizers"),
                r("create get list watch", "core", "persistentvolumeclaims"),
                events(),
            ],
        ),
        (
            "expand-controller",
            vec![
                r("get list patch update watch", "core", "persistentvolumes"),
                r("patch update", "core", "persistentvolumeclaims/status"),
                r(READ, "core", "persistentvolumeclaims"),
                events(),
            ],
        ),
        ("generic-garbage-collector", vec![r("delete get list patch update watch", "*", "*"), events()]),
        (
            "horizontal-pod-autoscaler",
            vec![
                r(READ, "autoscaling", "horizontalpodautoscalers"),
                r("update", "autoscaling", "horizontalpodautoscalers/status"),
                r("get update", "*", "*/scale"),
                r("list watch", "core", "pods"),
                r("list watch", "metrics.k8s.io", "pods"),
                r(READ, "custom.metrics.k8s.io", "*"),
                r(READ, "external.metrics.k8s.io", "*"),
                events(),
            ],
        ),
        (
            "job-controller",
            vec![
                r("get list patch update watch", "batch", "jobs"),
                r("update", "batch", "jobs/status"),
                r("update", "batch", "jobs/finalizers"),
                r("create delete list patch watch", "core", "pods"),
                events(),
            ],
        ),
        (
            "legacy-service-account-token-cleaner",
            vec![
                r("get", "core", "configmaps").named("kube-apiserver-legacy-service-account-token-tracking"),
                r("delete patch", "core", "secrets"),
            ],
        ),
        (
            "namespace-controller",
            vec![
                r("delete get list watch", "core", "namespaces"),
                r("update", "core", "namespaces/finalize namespaces/status"),
                r("delete deletecollection get list watch", "*", "*"),
            ],
        ),
        (
            "node-controller",
            vec![
                r("delete get list patch update watch", "core", "nodes"),
                r("patch update", "core", "nodes/status"),
                r("patch update", "core", "pods/status"),
                r("delete get list watch", "core", "pods"),
                events(),
            ],
        ),
        (
            "persistent-volume-binder",
            vec![
                r("create delete get list update watch", "core", "persistentvolumes"),
                r("update", "core", "persistentvolumes/status"),
                r("get list update watch", "core", "persistentvolumeclaims"),
                r("update", "core", "persistentvolumeclaims/status"),
                r("create delete get list watch", "core", "pods"),
                r(READ, "storage.k8s.io", "storageclasses"),
                r("list watch", "core", "nodes"),
                events(),
                r("watch", "core", "events"),
            ],
        ),
        (
            "pod-garbage-collector",
            vec![r("delete list watch", "core", "pods"), r(READ, "core", "nodes"), r("patch", "core", "pods/status")],
        ),
        ("pv-protection-controller", vec![r("get list update watch", "core", "persistentvolumes"), events()]),
        (
            "pvc-protection-controller",
            vec![
                r("get list update watch", "core", "persistentvolumeclaims"),
                r("update", "core", "persistentvolumeclaims/status"),
                r(READ, "core", "pods"),
                events(),
            ],
        ),
        (
            "replicaset-controller",
            vec![
                r("get list update watch", "apps extensions", "replicasets"),
                r("update", "apps extensions", "replicasets/status"),
                r("update", "apps extensions", "replicasets/finalizers"),
                r("create delete list patch watch", "core", "pods"),
                events(),
            ],
        ),
        (
            "replication-controller",
            vec![
                r("get list update watch", "core", "replicationcontrollers"),
                r("update", "core", "replicationcontrollers/status"),
                r("update", "core", "replicationcontrollers/finalizers"),
                r("create delete list patch watch", "core", "pods"),
                events(),
            ],
        ),
        (
            "resourcequota-controller",
            vec![r("list watch", "*", "*"), r("update", "core", "resourcequotas/status"), events()],
        ),
        ("root-ca-cert-publisher", vec![r("create update", "core", "configmaps"), events()]),
        ("route-controller", vec![r("list watch", "core", "nodes"), r("patch", "core", "nodes/status"), events()]),
        (
            "selinux-warning-controller",
            vec![
                events(),
                r(READ, "core", "persistentvolumes"),
                r(READ, "core", "persistentvolumeclaims"),
                r(READ, "core", "pods"),
                r(READ, "storage.k8s.io", "csidrivers"),
            ],
        ),
        ("service-account-controller", vec![r("create", "core", "serviceaccounts"), events()]),
        (
            "service-cidrs-controller",
            vec![
                r("get list patch update watch", "networking.k8s.io", "servicecidrs"),
                r("patch update", "networking.k8s.io", "servicecidrs/finalizers"),
                r("patch update", "networking.k8s.io", "servicecidrs/status"),
                r(READ, "networking.k8s.io", "ipaddresses"),
                events(),
            ],
        ),
        (
            "service-controller",
            vec![
                r(READ, "core", "services"),
                r("patch update", "core", "services/status"),
                r("list watch", "core", "nodes"),
                events(),
            ],
        ),
        (
            "statefulset-controller",
            vec![
                r("list watch", "core", "pods"),
                r(READ, "apps", "statefulsets"),
                r("update", "apps", "statefulsets/status"),
                r("update", "apps", "statefulsets/finalizers"),
                r("create delete get patch update", "core", "pods"),
                r("create delete get list patch update watch", "apps", "controllerrevisions"),
                r("create get list watch", "core", "persistentvolumeclaims"),
                r("delete update", "core", "persistentvolumeclaims"),
                r("update", "core", "pods/finalizers"),
                events(),
            ],
        ),
        ("ttl-after-finished-controller", vec![r("delete get list watch", "batch", "jobs"), events()]),
        ("ttl-controller", vec![r("list patch update watch", "core", "nodes"), events()]),
        (
            "validatingadmissionpolicy-status-controller",
            vec![
                r(READ, "admissionregistration.k8s.io", "validatingadmissionpolicies"),
                r("get patch update", "admissionregistration.k8s.io", "validatingadmissionpolicies/status"),
                events(),
            ],
        ),
    ]
}

/// The namespaced bootstrap Roles (`kube-system`, `kube-public`).
pub fn namespace_roles() -> Vec<RoleDef> {
    let leader_locking = || {
        vec![
            r("create get list update watch", "coordination.k8s.io", "leases"),
            r("create get list update watch", "coordination.k8s.io", "leasecandidates"),
        ]
    };
    vec![
        RoleDef::namespaced("kube-public", "system:controller:bootstrap-signer").rules(vec![
            r(READ, "core", "configmaps"),
            r("update", "core", "configmaps").named("cluster-info"),
            events(),
        ]),
        RoleDef::namespaced("kube-system", "extension-apiserver-authentication-reader").rules(vec![r(
            READ,
            "core",
            "configmaps",
        )
        .named("extension-apiserver-authentication")]),
        RoleDef::namespaced("kube-system", "system::leader-locking-kube-controller-manager").rules(leader_locking()),
        RoleDef::namespaced("kube-system", "system::leader-locking-kube-scheduler").rules(leader_locking()),
        RoleDef::namespaced("kube-system", "system:controller:bootstrap-signer")
            .rules(vec![r(READ, "core", "secrets")]),
        RoleDef::namespaced("kube-system", "system:controller:cloud-provider").rules(vec![r(
            "create get list watch",
            "core",
            "configmaps",
        )]),
        RoleDef::namespaced("kube-system", "system:controller:token-cleaner")
            .rules(vec![r("delete get list watch", "core", "secrets"), events()]),
    ]
}

/// The namespaced bootstrap RoleBindings.
pub fn namespace_role_bindings() -> Vec<BindingDef> {
    let sa = |name: &str| ("ServiceAccount", name.to_string(), "kube-system".to_string());
    let user = |name: &str| ("User", name.to_string(), String::new());
    vec![
        BindingDef::role("kube-public", "system:controller:bootstrap-signer", "system:controller:bootstrap-signer")
            .subjects(vec![sa("bootstrap-signer")]),
        BindingDef::role(
            "kube-system",
            "system::extension-apiserver-authentication-reader",
            "extension-apiserver-authentication-reader",
        )
        .subjects(vec![user("system:kube-controller-manager"), user("system:kube-scheduler")]),
        BindingDef::role(
            "kube-system",
            "system::leader-locking-kube-controller-manager",
            "system::leader-locking-kube-controller-manager",
        )
        .subjects(vec![
            user("system:kube-controller-manager"),
            sa("kube-controller-manager"),
            sa("leader-election-controller"),
        ]),
        BindingDef::role(
            "kube-system",
            "system::leader-locking-kube-scheduler",
            "system::leader-locking-kube-scheduler",
        )
        .subjects(vec![user("system:kube-scheduler"), sa("kube-scheduler")]),
        BindingDef::role("kube-system", "system:controller:bootstrap-signer", "system:controller:bootstrap-signer")
            .subjects(vec![sa("bootstrap-signer")]),
        BindingDef::role("kube-system", "system:controller:cloud-provider", "system:controller:cloud-provider")
            .subjects(vec![sa("cloud-provider")]),
        BindingDef::role("kube-system", "system:controller:token-cleaner", "system:controller:token-cleaner")
            .subjects(vec![sa("token-cleaner")]),
    ]
}
