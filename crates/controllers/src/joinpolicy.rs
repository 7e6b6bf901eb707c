//! The RBAC objects node join needs, as `kubeadm init` creates them
//! (rkube has no init step; the server applies them at start with its
//! admin credentials, creating what is missing and leaving the rest):
//!
//! - ClusterRoleBinding `kubeadm:kubelet-bootstrap`: the join tokens'
//!   group `system:bootstrappers:kubeadm:default-node-token` gets
//!   `system:node-bootstrapper` (create and read CSRs);
//! - ClusterRoleBinding `kubeadm:node-autoapprove-bootstrap`: that group
//!   may have node client CSRs auto-approved (`nodeclient`);
//! - ClusterRoleBinding `kubeadm:node-autoapprove-certificate-rotation`:
//!   `system:nodes` may have their renewals auto-approved (`selfnodeclient`);
//! - Role and RoleBinding `kubeadm:bootstrap-signer-clusterinfo` in
//!   kube-public: `system:anonymous` may get the ConfigMap `cluster-info`;
//! - the ConfigMap `kube-public/cluster-info` itself, with the kubeconfig
//!   (server and CA) the bootstrap signer then signs.
//!
//! The ClusterRoles they refer to belong to the API server's bootstrap policy.
//!
//! rkube adds (k3s-like, see [`crate::csrapproving`]) the ClusterRole
//! `rkube:kubelet-serving-approver` (`approve` on the signer
//! `kubernetes.io/kubelet-serving`, `get` on nodes) bound to the
//! approver's ServiceAccount `kube-system/certificate-controller`, so that
//! joined nodes get their kubelet serving certificates; the same role may
//! approve for `kubernetes.io/kube-apiserver-client`, which csrapproving
//! uses only for a node's `system:kube-proxy` request.
//!
//! For joining servers rkube adds the ClusterRole `rkube:control-plane-join`
//! (`get` on `/rkube/v1/bootstrap/control-plane`) bound to the group
//! `system:bootstrappers:rkube:control-plane` of control-plane join tokens
//! ([`control_plane_join`]).

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject};
use kube::api::{Api, ObjectMeta, PostParams};
use serde::de::DeserializeOwned;

use crate::bootstraptoken::{CLUSTER_INFO, CLUSTER_INFO_NAMESPACE, DEFAULT_NODE_TOKEN_GROUP};

const RBAC: &str = "rbac.authorization.k8s.io";
/// The name of the cluster-info Role and RoleBinding.
pub const CLUSTER_INFO_ROLE: &str = "kubeadm:bootstrap-signer-clusterinfo";

fn subject(kind: &str, name: &str) -> Subject {
    Subject { kind: kind.into(), name: name.into(), api_group: Some(RBAC.into()), namespace: None }
}

fn cluster_role_binding(name: &str, role: &str, subject: Subject) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
        role_ref: RoleRef { api_group: RBAC.into(), kind: "ClusterRole".into(), name: role.into() },
        subjects: Some(vec![subject]),
    }
}

/// The objects, in creation order.
pub fn cluster_role_bindings() -> Vec<ClusterRoleBinding> {
    vec![
        cluster_role_binding(
            "kubeadm:kubelet-bootstrap",
            "system:node-bootstrapper",
            subject("Group", DEFAULT_NODE_TOKEN_GROUP),
        ),
        cluster_role_binding(
            "kubeadm:node-autoapprove-bootstrap",
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            subject("Group", DEFAULT_NODE_TOKEN_GROUP),
        ),
        cluster_role_binding(
            "kubeadm:node-autoapprove-certificate-rotation",
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            subject("Group", "system:nodes"),
        ),
    ]
}

/// The name of rkube's kubelet serving approval ClusterRole and its binding.
pub const SERVING_APPROVER_ROLE: &str = "rkube:kubelet-serving-approver";

/// The ClusterRole and binding that let csrapproving approve nodes' own
/// kubelet serving requests.
pub fn serving_approver() -> (ClusterRole, ClusterRoleBinding) {
    let rule = |groups: &str, resources: &str, names: Option<&str>, verb: &str| PolicyRule {
        api_groups: Some(vec![groups.into()]),
        resources: Some(vec![resources.into()]),
        resource_names: names.map(|n| vec![n.into()]),
        verbs: vec![verb.into()],
        ..Default::default()
    };
    let role = ClusterRole {
        metadata: ObjectMeta { name: Some(SERVING_APPROVER_ROLE.into()), ..Default::default() },
        rules: Some(vec![
            rule("certificates.k8s.io", "signers", Some(crate::csr::KUBELET_SERVING_SIGNER), "approve"),
            rule("certificates.k8s.io", "signers", Some(crate::csr::KUBE_APISERVER_CLIENT_SIGNER), "approve"),
            rule("", "nodes", None, "get"),
        ]),
        aggregation_rule: None,
    };
    let binding = cluster_role_binding(
        SERVING_APPROVER_ROLE,
        SERVING_APPROVER_ROLE,
        Subject {
            kind: "ServiceAccount".into(),
            name: crate::csrapproving::SERVICE_ACCOUNT.into(),
            namespace: Some("kube-system".into()),
            api_group: Some(String::new()),
        },
    );
    (role, binding)
}

/// The ClusterRole (and its binding's name) letting control-plane join
/// tokens read the key material joining servers need.
pub const CONTROL_PLANE_JOIN_ROLE: &str = "rkube:control-plane-join";

/// The path that role grants (`rkube_apiserver::controlplane::PATH`).
pub const CONTROL_PLANE_BOOTSTRAP_PATH: &str = "/rkube/v1/bootstrap/control-plane";

/// `rkube:control-plane-join`: `get` on the non-resource URL
/// [`CONTROL_PLANE_BOOTSTRAP_PATH`], bound to the group of control-plane
/// join tokens ([`crate::bootstraptoken::CONTROL_PLANE_GROUP`]), so that
/// `rkube server --server URL --token TOKEN` can fetch the cluster CA and
/// service-account keys, and a plain node join token cannot.
pub fn control_plane_join() -> (ClusterRole, ClusterRoleBinding) {
    let role = ClusterRole {
        metadata: ObjectMeta { name: Some(CONTROL_PLANE_JOIN_ROLE.into()), ..Default::default() },
        rules: Some(vec![PolicyRule {
            non_resource_urls: Some(vec![CONTROL_PLANE_BOOTSTRAP_PATH.into()]),
            verbs: vec!["get".into()],
            ..Default::default()
        }]),
        aggregation_rule: None,
    };
    let binding = cluster_role_binding(
        CONTROL_PLANE_JOIN_ROLE,
        CONTROL_PLANE_JOIN_ROLE,
        subject("Group", crate::bootstraptoken::CONTROL_PLANE_GROUP),
    );
    (role, binding)
}

/// The kube-public Role letting anyone read `cluster-info`.
pub fn cluster_info_role() -> (Role, RoleBinding) {
    let meta = ObjectMeta {
        name: Some(CLUSTER_INFO_ROLE.into()),
        namespace: Some(CLUSTER_INFO_NAMESPACE.into()),
        ..Default::default()
    };
    let role = Role {
        metadata: meta.clone(),
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec!["".into()]),
            resources: Some(vec!["configmaps".into()]),
            resource_names: Some(vec![CLUSTER_INFO.into()]),
            verbs: vec!["get".into()],
            ..Default::default()
        }]),
    };
    let binding = RoleBinding {
        metadata: meta,
        role_ref: RoleRef { api_group: RBAC.into(), kind: "Role".into(), name: CLUSTER_INFO_ROLE.into() },
        subjects: Some(vec![subject("User", "system:anonymous")]),
    };
    (role, binding)
}

async fn create_if_missing<K>(api: Api<K>, obj: &K) -> Result<(), kube::Error>
where
    K: kube::Resource + Clone + DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    match api.create(&PostParams::default(), obj).await {
        Ok(_) => Ok(()),
        Err(e) if crate::runtime::is_conflict(&e) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Creates whichever of the objects are missing; `cluster-info` with
/// `kubeconfig` as its content (see
/// [`crate::bootstrapsigner::cluster_info_kubeconfig`]).
pub async fn ensure(admin: &kube::Client, kubeconfig: &str) -> Result<(), kube::Error> {
    let cluster_info = ConfigMap {
        metadata: ObjectMeta { name: Some(CLUSTER_INFO.into()), ..Default::default() },
        data: Some([(crate::bootstraptoken::KUBECONFIG_KEY.to_string(), kubeconfig.to_string())].into()),
        ..Default::default()
    };
    create_if_missing(Api::<ConfigMap>::namespaced(admin.clone(), CLUSTER_INFO_NAMESPACE), &cluster_info).await?;
    for crb in cluster_role_bindings() {
        create_if_missing(Api::<ClusterRoleBinding>::all(admin.clone()), &crb).await?;
    }
    let (approver, approver_binding) = serving_approver();
    create_if_missing(Api::<ClusterRole>::all(admin.clone()), &approver).await?;
    create_if_missing(Api::<ClusterRoleBinding>::all(admin.clone()), &approver_binding).await?;
    let (join_role, join_binding) = control_plane_join();
    create_if_missing(Api::<ClusterRole>::all(admin.clone()), &join_role).await?;
    create_if_missing(Api::<ClusterRoleBinding>::all(admin.clone()), &join_binding).await?;
    let (role, binding) = cluster_info_role();
    create_if_missing(Api::<Role>::namespaced(admin.clone(), CLUSTER_INFO_NAMESPACE), &role).await?;
    create_if_missing(Api::<RoleBinding>::namespaced(admin.clone(), CLUSTER_INFO_NAMESPACE), &binding).await?;
    Ok(())
}
