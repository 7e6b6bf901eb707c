//! The bootstrap ClusterRoles of upstream's `bootstrappolicy/policy.go`
//! (Kubernetes 1.33 defaults, features at their default state), in name
//! order. Rules are written with [`r`], [`u`] and [`PolicyRule::named`]:
//! space-separated verbs, groups (`core` is the core group `""`) and
//! resources.

use super::{r, u, RoleDef, AGGREGATE_TO_ADMIN, AGGREGATE_TO_EDIT, AGGREGATE_TO_VIEW};

const READ: &str = "get list watch";
const WRITE: &str = "create delete deletecollection patch update";
const READ_WRITE: &str = "create delete deletecollection get list patch update watch";
const EVENTS: (&str, &str, &str) = ("create patch update", "core events.k8s.io", "events");

/// The bootstrap ClusterRoles other than the controllers'.
pub fn cluster_roles() -> Vec<RoleDef> {
    vec![
        RoleDef::cluster("admin").aggregated(AGGREGATE_TO_ADMIN),
        RoleDef::cluster("cluster-admin").rules(vec![r("*", "*", "*"), u("*", "*")]),
        RoleDef::cluster("edit").aggregated(AGGREGATE_TO_EDIT).label(AGGREGATE_TO_ADMIN),
        RoleDef::cluster("system:aggregate-to-admin").label(AGGREGATE_TO_ADMIN).rules(vec![
            r("create", "authorization.k8s.io", "localsubjectaccessreviews"),
            r(READ_WRITE, "rbac.authorization.k8s.io", "rolebindings roles"),
        ]),
        RoleDef::cluster("system:aggregate-to-edit").label(AGGREGATE_TO_EDIT).rules(vec![
            r(READ, "core", "pods/attach pods/exec pods/portforward pods/proxy secrets services/proxy"),
            r("impersonate", "core", "serviceaccounts"),
            r(WRITE, "core", "pods pods/attach pods/exec pods/portforward pods/proxy"),
            r("create", "core", "pods/eviction"),
            r(
                WRITE,
                "core",
                "configmaps events persistentvolumeclaims replicationcontrollers replicationcontrollers/scale secrets \
                 serviceaccounts services services/proxy",
            ),
            r("create", "core", "serviceaccounts/token"),
            r(
                WRITE,
                "apps",
                "daemonsets deployments deployments/rollback deployments/scale replicasets replicasets/scale \
                 statefulsets statefulsets/scale",
            ),
            r(WRITE, "autoscaling", "horizontalpodautoscalers"),
            r(WRITE, "batch", "cronjobs jobs"),
            r(
                WRITE,
                "extensions",
                "daemonsets deployments deployments/rollback deployments/scale ingresses networkpolicies replicasets \
                 replicasets/scale replicationcontrollers/scale",
            ),
            r(WRITE, "policy", "poddisruptionbudgets"),
            r(WRITE, "networking.k8s.io", "ingresses networkpolicies"),
            r(READ_WRITE, "coordination.k8s.io", "leases"),
        ]),
        RoleDef::cluster("system:aggregate-to-view").label(AGGREGATE_TO_VIEW).rules(vec![
            r(
                READ,
                "core",
                "configmaps endpoints persistentvolumeclaims persistentvolumeclaims/status pods \
                 replicationcontrollers replicationcontrollers/scale serviceaccounts services services/status",
            ),
            r(
                READ,
                "core",
                "bindings events limitranges namespaces/status pods/log pods/status replicationcontrollers/status \
                 resourcequotas resourcequotas/status",
            ),
            r(READ, "core", "namespaces"),
            r(READ, "discovery.k8s.io", "endpointslices"),
            r(
                READ,
                "apps",
                "controllerrevisions daemonsets daemonsets/status deployments deployments/scale deployments/status \
                 replicasets replicasets/scale replicasets/status statefulsets statefulsets/scale statefulsets/status",
            ),
            r(READ, "autoscaling", "horizontalpodautoscalers horizontalpodautoscalers/status"),
            r(READ, "batch", "cronjobs cronjobs/status jobs jobs/status"),
            r(
                READ,
                "extensions",
                "daemonsets daemonsets/status deployments deployments/scale deployments/status ingresses \
                 ingresses/status networkpolicies replicasets replicasets/scale replicasets/status \
                 replicationcontrollers/scale",
            ),
            r(READ, "policy", "poddisruptionbudgets poddisruptionbudgets/status"),
            r(READ, "networking.k8s.io", "ingresses ingresses/status networkpolicies"),
        ]),
        // Not kube-apiserver's: metrics-server's manifest (manifests/base/rbac.yaml)
        // adds it, and rkube serves metrics.k8s.io itself (crate::metrics_api).
        RoleDef::cluster("system:aggregated-metrics-reader")
            .label(AGGREGATE_TO_VIEW)
            .label(AGGREGATE_TO_EDIT)
            .label(AGGREGATE_TO_ADMIN)
            .rules(vec![r(READ, "metrics.k8s.io", "pods nodes")]),
        RoleDef::cluster("system:auth-delegator").rules(vec![
            r("create", "authentication.k8s.io", "tokenreviews"),
            r("create", "authorization.k8s.io", "subjectaccessreviews"),
        ]),
        RoleDef::cluster("system:basic-user").rules(vec![
            r("create", "authorization.k8s.io", "selfsubjectaccessreviews selfsubjectrulesreviews"),
            r("create", "authentication.k8s.io", "selfsubjectreviews"),
        ]),
        RoleDef::cluster("system:certificates.k8s.io:certificatesigningrequests:nodeclient").rules(vec![r(
            "create",
            "certificates.k8s.io",
            "certificatesigningrequests/nodeclient",
        )]),
        RoleDef::cluster("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient").rules(vec![r(
            "create",
            "certificates.k8s.io",
            "certificatesigningrequests/selfnodeclient",
        )]),
        RoleDef::cluster("system:certificates.k8s.io:kube-apiserver-client-approver").rules(vec![r(
            "approve",
            "certificates.k8s.io",
            "signers",
        )
        .named("kubernetes.io/kube-apiserver-client")]),
        RoleDef::cluster("system:certificates.k8s.io:kube-apiserver-client-kubelet-approver").rules(vec![r(
            "approve",
            "certificates.k8s.io",
            "signers",
        )
        .named("kubernetes.io/kube-apiserver-client-kubelet")]),
        RoleDef::cluster("system:certificates.k8s.io:kubelet-serving-approver").rules(vec![r(
            "approve",
            "certificates.k8s.io",
            "signers",
        )
        .named("kubernetes.io/kubelet-serving")]),
        RoleDef::cluster("system:certificates.k8s.io:legacy-unknown-approver").rules(vec![r(
            "approve",
            "certificates.k8s.io",
            "signers",
        )
        .named("kubernetes.io/legacy-unknown")]),
        RoleDef::cluster("system:discovery").rules(vec![u(
            "get",
            "/api /api/* /apis /apis/* /healthz /livez /openapi /openapi/* /readyz /version /version/",
        )]),
        RoleDef::cluster("system:heapster")
            .rules(vec![r(READ, "core", "events namespaces nodes pods"), r(READ, "extensions", "deployments")]),
        RoleDef::cluster("system:kube-aggregator").rules(vec![r(READ, "core", "endpoints services")]),
        RoleDef::cluster("system:kube-controller-manager").rules(vec![
            r(EVENTS.0, EVENTS.1, EVENTS.2),
            r("create", "coordination.k8s.io", "leases"),
            r("get update", "coordination.k8s.io", "leases").named("kube-controller-manager"),
            r("create", "core", "secrets serviceaccounts"),
            r("delete", "core", "secrets"),
            r("get", "core", "configmaps namespaces secrets serviceaccounts"),
            r("update", "core", "secrets serviceaccounts"),
            r("create", "authentication.k8s.io", "tokenreviews"),
            r("create", "authorization.k8s.io", "subjectaccessreviews"),
            r("list watch", "*", "*"),
            r("create", "core", "serviceaccounts/token"),
        ]),
        RoleDef::cluster("system:kube-dns").rules(vec![r("list watch", "core", "endpoints services")]),
        RoleDef::cluster("system:kube-scheduler").rules(vec![
            r(EVENTS.0, EVENTS.1, EVENTS.2),
            r("create", "coordination.k8s.io", "leases"),
            r("get update", "coordination.k8s.io", "leases").named("kube-scheduler"),
            r(READ, "core", "nodes"),
            r("delete get list watch", "core", "pods"),
            r("create", "core", "bindings pods/binding"),
            r("patch update", "core", "pods/status"),
            r(READ, "core", "replicationcontrollers services"),
            r(READ, "apps extensions", "replicasets"),
            r(READ, "apps", "statefulsets"),
            r(READ, "policy", "poddisruptionbudgets"),
            r(READ, "core", "persistentvolumeclaims persistentvolumes"),
            r("create", "authentication.k8s.io", "tokenreviews"),
            r("create", "authorization.k8s.io", "subjectaccessreviews"),
            r(READ, "storage.k8s.io", "csinodes"),
            r(READ, "core", "namespaces"),
            r(READ, "storage.k8s.io", "csidrivers"),
            r(READ, "storage.k8s.io", "csistoragecapacities"),
        ]),
        RoleDef::cluster("system:kubelet-api-admin").rules(vec![
            r(READ, "core", "nodes"),
            r("proxy", "core", "nodes"),
            r("*", "core", "nodes/log nodes/metrics nodes/proxy nodes/stats"),
        ]),
        RoleDef::cluster("system:monitoring")
            .rules(vec![u("get", "/healthz /healthz/* /livez /livez/* /metrics /metrics/slis /readyz /readyz/*")]),
        RoleDef::cluster("system:node").rules(super::node_rules()),
        RoleDef::cluster("system:node-bootstrapper").rules(vec![r(
            "create get list watch",
            "certificates.k8s.io",
            "certificatesigningrequests",
        )]),
        RoleDef::cluster("system:node-problem-detector").rules(vec![
            r("get", "core", "nodes"),
            r("patch", "core", "nodes/status"),
            r(EVENTS.0, EVENTS.1, EVENTS.2),
        ]),
        RoleDef::cluster("system:node-proxier").rules(vec![
            r("list watch", "core", "endpoints services"),
            r(READ, "core", "nodes"),
            r(EVENTS.0, EVENTS.1, EVENTS.2),
            r("list watch", "discovery.k8s.io", "endpointslices"),
        ]),
        RoleDef::cluster("system:persistent-volume-provisioner").rules(vec![
            r("create delete get list watch", "core", "persistentvolumes"),
            r("get list update watch", "core", "persistentvolumeclaims"),
            r(READ, "storage.k8s.io", "storageclasses"),
            r("watch", "core", "events"),
            r(EVENTS.0, EVENTS.1, EVENTS.2),
        ]),
        RoleDef::cluster("system:public-info-viewer")
            .rules(vec![u("get", "/healthz /livez /readyz /version /version/")]),
        RoleDef::cluster("system:service-account-issuer-discovery")
            .rules(vec![u("get", "/.well-known/openid-configuration /openid/v1/jwks")]),
        RoleDef::cluster("system:volume-scheduler").rules(vec![
            r("get list patch update watch", "core", "persistentvolumes"),
            r(READ, "storage.k8s.io", "storageclasses"),
            r("get list patch update watch", "core", "persistentvolumeclaims"),
        ]),
        RoleDef::cluster("view").aggregated(AGGREGATE_TO_VIEW).label(AGGREGATE_TO_EDIT),
    ]
}

/// The rules of `system:node`, which the Node authorizer also applies to
/// every node identity for the resources it does not subdivide.
pub fn node_rules() -> Vec<crate::authz::rbac::PolicyRule> {
    vec![
        r("create", "authentication.k8s.io", "tokenreviews"),
        r("create", "authorization.k8s.io", "localsubjectaccessreviews subjectaccessreviews"),
        r(READ, "core", "services"),
        r("create get list watch", "core", "nodes"),
        r("patch update", "core", "nodes/status"),
        r("patch update", "core", "nodes"),
        r("create patch update", "core", "events"),
        r(READ, "core", "pods"),
        r("create delete", "core", "pods"),
        r("patch update", "core", "pods/status"),
        r("create", "core", "pods/eviction"),
        r(READ, "core", "configmaps secrets"),
        r("get", "core", "persistentvolumeclaims persistentvolumes"),
        r("get", "core", "endpoints"),
        r("create get list watch", "certificates.k8s.io", "certificatesigningrequests"),
        r("create delete get patch update", "coordination.k8s.io", "leases"),
        r("get", "storage.k8s.io", "volumeattachments"),
        r("create", "core", "serviceaccounts/token"),
        r("get patch update", "core", "persistentvolumeclaims/status"),
        r(READ, "storage.k8s.io", "csidrivers"),
        r("create delete get patch update", "storage.k8s.io", "csinodes"),
        r(READ, "node.k8s.io", "runtimeclasses"),
    ]
}
