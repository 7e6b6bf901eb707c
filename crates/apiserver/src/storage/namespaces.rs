//! The system namespaces and upstream's NamespaceLifecycle admission rules.
//!
//! - [`ensure_system_namespaces`]: `default`, `kube-system`, `kube-public`
//!   and `kube-node-lease` exist after start (created idempotently).
//! - [`NamespaceLifecycle::admit`]: writes into a namespace that does not
//!   exist are 404 `namespaces "x" not found`; creates in a terminating
//!   namespace are 403 `... is forbidden: unable to create new content in
//!   namespace x because it is being terminated`; `default`, `kube-system`
//!   and `kube-public` may not be deleted.
//!
//! Emptying a terminating namespace is the namespace controller's job
//! (`rkube_controllers::namespace`): it deletes the content, then removes
//! the `kubernetes` finalizer through `/finalize`, and the namespace goes.

use std::sync::Arc;

use rkube_apimachinery::{ApiError, GroupResource};
use serde_json::json;

use super::{ResourceStore, WriteOptions};

/// The namespaces every cluster has.
pub const SYSTEM_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// Namespaces that may never be deleted.
pub const IMMORTAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// Creates the missing [`SYSTEM_NAMESPACES`].
pub async fn ensure_system_namespaces(namespaces: &ResourceStore) -> Result<(), ApiError> {
    for name in SYSTEM_NAMESPACES {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        match namespaces.create("", ns, &WriteOptions::default()).await {
            Ok(_) | Err(ApiError::AlreadyExists { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The kind of write being admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// POST (and create-on-update).
    Create,
    /// PUT or PATCH.
    Update,
    /// DELETE.
    Delete,
}

/// Upstream's NamespaceLifecycle admission plugin, reading namespaces
/// from the watch cache (and from the store when the cache lacks one).
#[derive(Clone)]
pub struct NamespaceLifecycle {
    namespaces: Arc<ResourceStore>,
}

impl NamespaceLifecycle {
    /// Admission over the namespaces store.
    pub fn new(namespaces: Arc<ResourceStore>) -> Self {
        NamespaceLifecycle { namespaces }
    }

    /// Admits (or refuses) `op` on `resource` named `name` in `namespace`
    /// (`""` for cluster-scoped resources). `is_namespace` is true when the
    /// object is itself a Namespace.
    pub async fn admit(
        &self,
        op: Operation,
        resource: &GroupResource,
        is_namespace: bool,
        namespace: &str,
        name: &str,
    ) -> Result<(), ApiError> {
        if is_namespace {
            if op == Operation::Delete && IMMORTAL_NAMESPACES.contains(&name) {
                return Err(forbidden(resource, name, "this namespace may not be deleted".into()));
            }
            return Ok(());
        }
        if namespace.is_empty() || op == Operation::Delete {
            return Ok(());
        }
        // From the watch cache when it has the namespace, as upstream reads
        // its informer; a live read otherwise (e.g. one created just now).
        let cached = self.namespaces.get_cached("", namespace);
        let live = match cached {
            Some(ns) => Ok(ns),
            None => self.namespaces.get("", namespace, "").await,
        };
        let ns = match live {
            Ok(ns) => ns,
            Err(ApiError::NotFound { .. }) => {
                return Err(ApiError::NotFound {
                    resource: GroupResource::new("", "namespaces"),
                    name: namespace.to_string(),
                })
            }
            Err(e) => return Err(e),
        };
        if op == Operation::Create && ns["status"]["phase"] == "Terminating" {
            let why = format!("unable to create new content in namespace {namespace} because it is being terminated");
            return Err(forbidden(resource, name, why));
        }
        Ok(())
    }
}

/// `admission.NewForbidden`: `<resource> "<name>" is forbidden: <why>`
/// (without the name when there is none).
fn forbidden(resource: &GroupResource, name: &str, why: String) -> ApiError {
    let message = if name.is_empty() {
        format!("{resource} is forbidden: {why}")
    } else {
        format!("{resource} \"{name}\" is forbidden: {why}")
    };
    ApiError::Forbidden { resource: resource.clone(), name: name.to_string(), message }
}
