//! The server's admission chain, in upstream's plugin order
//! (`kube-apiserver --enable-admission-plugins` defaults): NamespaceLifecycle,
//! LimitRanger, ServiceAccount, NodeRestriction, TaintNodesByCondition,
//! PodSecurity, Priority, DefaultTolerationSeconds, DefaultStorageClass,
//! StorageObjectInUseProtection, RuntimeClass, PersistentVolumeClaimResize,
//! MutatingAdmissionWebhook, ValidatingAdmissionPolicy,
//! ValidatingAdmissionWebhook, ResourceQuota.
//!
//! NamespaceLifecycle runs in the handlers before decoding finishes
//! ([`crate::rest::Ctx::admit`]); every other plugin is listed here.

use std::collections::HashMap;
use std::sync::Arc;

use super::{builtin, Chain, Plugin};
use crate::storage::ResourceStore;

/// The stores plugins read, by `(group, version, plural)`.
pub type Stores = HashMap<(&'static str, &'static str, &'static str), Arc<ResourceStore>>;

/// The chain every request's writes pass, over the server's `stores`;
/// `authorizer` is the server's (RBAC escalation checks resolve rules
/// with it); `tolerations` are the seconds DefaultTolerationSeconds gives
/// new pods (`--default-not-ready-toleration-seconds`,
/// `--default-unreachable-toleration-seconds`).
pub fn default_chain(
    stores: &Stores,
    authorizer: &Arc<crate::authz::ServerAuthorizer>,
    tolerations: super::tolerations::DefaultTolerationSeconds,
) -> Chain {
    let storage_classes = builtin::store(stores, "storage.k8s.io", "v1", "storageclasses");
    let plugins: Vec<Arc<dyn Plugin>> = vec![
        // Not an admission plugin upstream but the RBAC registry's own
        // check, which runs before the kind's validation: first here.
        Arc::new(super::rbac::RbacEscalation::new(authorizer.clone())),
        // Likewise the CSR registry's requester fields (PrepareForCreate).
        Arc::new(super::certificates::CsrRequester),
        // NamespaceLifecycle runs in the handlers.
        Arc::new(super::limitranger::LimitRanger::new(builtin::store(stores, "", "v1", "limitranges"))),
        Arc::new(super::serviceaccount::ServiceAccount::new(builtin::store(stores, "", "v1", "serviceaccounts"))),
        Arc::new(super::noderestriction::NodeRestriction::new(stores).with_authorizer(authorizer.clone())),
        Arc::new(super::taints::TaintNodesByCondition),
        Arc::new(super::podsecurity::PodSecurity::new(
            builtin::store(stores, "", "v1", "namespaces"),
            builtin::store(stores, "", "v1", "pods"),
        )),
        Arc::new(super::priority::Priority::new(builtin::store(stores, "scheduling.k8s.io", "v1", "priorityclasses"))),
        Arc::new(tolerations),
        Arc::new(super::storageclass::DefaultStorageClass::new(storage_classes.clone())),
        Arc::new(super::inuse::StorageObjectInUseProtection),
        Arc::new(super::runtimeclass::RuntimeClass::new(builtin::store(stores, "node.k8s.io", "v1", "runtimeclasses"))),
        Arc::new(super::pvcresize::PersistentVolumeClaimResize::new(storage_classes)),
        Arc::new(super::certificates::CertificateApproval::new(authorizer.clone())),
        Arc::new(super::certificates::CertificateSigning::new(authorizer.clone())),
        Arc::new(super::certificates::CertificateSubjectRestriction),
    ];
    // MutatingAdmissionWebhook, ValidatingAdmissionPolicy, ValidatingAdmissionWebhook: last, in that order.
    let mut plugins: Vec<Arc<dyn Plugin>> = plugins.into_iter().chain(super::webhook::tail_plugins(stores)).collect();
    // ResourceQuota: the last validating plugin, so only writes every other plugin admitted are charged.
    plugins.push(Arc::new(super::resourcequota::ResourceQuota::new(builtin::store(stores, "", "v1", "resourcequotas"))));
    Chain::new(plugins)
}
