//! Admission: the plugins every write passes after authentication and
//! authorization, before it is stored (upstream's `admission.Interface`
//! chain, `--enable-admission-plugins`).
//!
//! A write runs, as upstream's handlers and generic store do:
//! 1. decoding and the kind's defaulting;
//! 2. the mutating phase ([`Plugin::admit`] of every plugin, in order) —
//!    it may change the object;
//! 3. the kind's preparation and validation (the strategy);
//! 4. the validating phase ([`Plugin::validate`] of every plugin, in
//!    order) — it may only refuse;
//! 5. storage.
//!
//! Deletes run both phases with no new object and the stored one as the
//! old object. The store calls the phases through [`AdmitWrite`], which a
//! request's [`RequestAdmission`] implements over the server's [`Chain`];
//! internal writes (the server's own bootstrap objects) carry none and are
//! not admitted, as upstream's loopback writes bypass nothing but here run
//! with full trust.
//!
//! Plugins collect response warnings (PodSecurity `warn`, webhooks) and
//! audit annotations on the request ([`RequestAdmission::warnings`],
//! [`RequestAdmission::audit_annotations`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use rkube_apimachinery::registry::ResourceInfo;
use rkube_apimachinery::{meta, ApiError};
use serde_json::Value;

use crate::authn::UserInfo;

pub mod builtin;
pub mod certificates;
pub mod inuse;
pub mod limitranger;
pub mod noderestriction;
pub mod plugins;
pub mod podsecurity;
pub mod priority;
pub mod pvcresize;
pub mod rbac;
pub mod resourcequota;
pub mod runtimeclass;
pub mod serviceaccount;
pub mod storageclass;
pub mod taints;
pub mod tolerations;
pub mod vap;
pub mod webhook;

/// The operation being admitted (upstream's `admission.Operation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// A new object.
    Create,
    /// A change to a stored object (PUT, PATCH, apply, status, …).
    Update,
    /// Removal of a stored object.
    Delete,
    /// A connect subresource (exec, attach, port-forward, proxy).
    Connect,
}

impl Operation {
    /// `CREATE`, `UPDATE`, `DELETE`, `CONNECT` as AdmissionReview and
    /// webhook rules spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// What a plugin sees of a write (upstream's `admission.Attributes`).
pub struct Attributes<'a> {
    /// The operation.
    pub operation: Operation,
    /// Who asks.
    pub user: &'a UserInfo,
    /// The resource addressed (group, version, plural, kind, scope).
    pub resource: &'a ResourceInfo,
    /// The subresource (`status`, `binding`, …; empty for the main resource).
    pub subresource: &'a str,
    /// The namespace of the request (empty for cluster-scoped resources).
    pub namespace: &'a str,
    /// The object's name (empty on a create with only generateName).
    pub name: &'a str,
    /// The stored object (updates and deletes).
    pub old_object: Option<&'a Value>,
    /// `dryRun=All`: plugins with side effects must not act.
    pub dry_run: bool,
    /// Where plugins leave warnings and audit annotations.
    pub request: &'a RequestAdmission,
}

impl Attributes<'_> {
    /// Whether this is `group`/`plural` (any version) with `subresource`.
    pub fn is(&self, group: &str, plural: &str, subresource: &str) -> bool {
        self.resource.group == group && self.resource.plural == plural && self.subresource == subresource
    }
}

/// One admission plugin. Both phases default to accepting everything; a
/// plugin implements the ones it takes part in.
#[async_trait]
pub trait Plugin: Send + Sync {
    /// The upstream plugin name (`PodSecurity`, `LimitRanger`, …).
    fn name(&self) -> &'static str;

    /// The mutating phase: may change `object` (`None` on delete and
    /// connect) or refuse the write with an error (upstream plugins answer
    /// 403 Forbidden with `<resource> "<name>" is forbidden: …`).
    async fn admit(&self, _attrs: &Attributes<'_>, _object: Option<&mut Value>) -> Result<(), ApiError> {
        Ok(())
    }

    /// The validating phase, after the kind's own validation: may only
    /// refuse.
    async fn validate(&self, _attrs: &Attributes<'_>, _object: Option<&Value>) -> Result<(), ApiError> {
        Ok(())
    }
}

/// The plugins of a server, in upstream's order.
#[derive(Default)]
pub struct Chain {
    plugins: Vec<Arc<dyn Plugin>>,
}

impl Chain {
    /// A chain of `plugins`, run in the order given.
    pub fn new(plugins: Vec<Arc<dyn Plugin>>) -> Chain {
        Chain { plugins }
    }

    /// The plugin names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.plugins.iter().map(|p| p.name()).collect()
    }

    /// The mutating phase of every plugin; stops at the first refusal.
    pub async fn admit(&self, attrs: &Attributes<'_>, mut object: Option<&mut Value>) -> Result<(), ApiError> {
        for plugin in &self.plugins {
            plugin.admit(attrs, object.as_deref_mut()).await?;
        }
        Ok(())
    }

    /// The validating phase of every plugin; stops at the first refusal.
    pub async fn validate(&self, attrs: &Attributes<'_>, object: Option<&Value>) -> Result<(), ApiError> {
        for plugin in &self.plugins {
            plugin.validate(attrs, object).await?;
        }
        Ok(())
    }
}

/// The admission phases as the store calls them during a write.
#[async_trait]
pub trait AdmitWrite: Send + Sync {
    /// Mutating phase of a create (`old` is `None`) or update, after
    /// defaulting and before the kind's validation.
    async fn mutate(&self, object: &mut Value, old: Option<&Value>) -> Result<(), ApiError>;
    /// Validating phase of a create or update, after the kind's validation.
    async fn validate(&self, object: &Value, old: Option<&Value>) -> Result<(), ApiError>;
    /// Both phases of a delete of `old`.
    async fn delete(&self, old: &Value) -> Result<(), ApiError>;
}

/// One request's admission: the chain plus what the request is, and what
/// the plugins left for the response (warnings) and the audit log.
pub struct RequestAdmission {
    chain: Arc<Chain>,
    /// Who asks.
    pub user: UserInfo,
    /// The resource addressed.
    pub resource: ResourceInfo,
    /// The subresource (empty for the main resource).
    pub subresource: String,
    /// The request's namespace.
    pub namespace: String,
    /// `dryRun=All`.
    pub dry_run: bool,
    warnings: Mutex<Vec<String>>,
    annotations: Mutex<BTreeMap<String, String>>,
}

impl RequestAdmission {
    /// The admission of one request over `chain`.
    pub fn new(
        chain: Arc<Chain>,
        user: UserInfo,
        resource: ResourceInfo,
        subresource: &str,
        namespace: &str,
        dry_run: bool,
    ) -> RequestAdmission {
        RequestAdmission {
            chain,
            user,
            resource,
            subresource: subresource.to_string(),
            namespace: namespace.to_string(),
            dry_run,
            warnings: Mutex::new(Vec::new()),
            annotations: Mutex::new(BTreeMap::new()),
        }
    }

    /// Adds a `Warning` header for the response (kept once).
    pub fn warn(&self, message: impl Into<String>) {
        let message = message.into();
        let mut w = self.warnings.lock().unwrap_or_else(|e| e.into_inner());
        if !w.contains(&message) {
            w.push(message);
        }
    }

    /// The warnings plugins left, in order.
    pub fn warnings(&self) -> Vec<String> {
        self.warnings.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Records an audit annotation (`pod-security.kubernetes.io/audit-violations`, …).
    pub fn annotate(&self, key: impl Into<String>, value: impl Into<String>) {
        let (key, value) = (key.into(), value.into());
        // Also onto the request's audit event, when it is audited (crate::audit).
        crate::audit::annotate_current(&key, &value);
        self.annotations.lock().unwrap_or_else(|e| e.into_inner()).insert(key, value);
    }

    /// The audit annotations plugins left.
    pub fn audit_annotations(&self) -> BTreeMap<String, String> {
        self.annotations.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Both phases of a CREATE of a subresource that is answered rather
    /// than stored (`pods/eviction`, `serviceaccounts/token`): `name` is
    /// the object the URL names (upstream's attributes take it from the
    /// URL, not from the body). The mutating phase may change `object`.
    pub async fn admit_subresource_create(&self, object: &mut Value, name: &str) -> Result<(), ApiError> {
        self.mutate_create(object, name).await?;
        self.validate_create(object, name).await
    }

    /// The mutating phase of such a CREATE (see [`Self::admit_subresource_create`]).
    pub async fn mutate_create(&self, object: &mut Value, name: &str) -> Result<(), ApiError> {
        let attrs = self.attributes(Operation::Create, name, None);
        self.chain.admit(&attrs, Some(object)).await
    }

    /// The validating phase of such a CREATE (see [`Self::admit_subresource_create`]).
    pub async fn validate_create(&self, object: &Value, name: &str) -> Result<(), ApiError> {
        let attrs = self.attributes(Operation::Create, name, None);
        self.chain.validate(&attrs, Some(object)).await
    }

    fn attributes<'a>(&'a self, operation: Operation, name: &'a str, old: Option<&'a Value>) -> Attributes<'a> {
        Attributes {
            operation,
            user: &self.user,
            resource: &self.resource,
            subresource: &self.subresource,
            namespace: &self.namespace,
            name,
            old_object: old,
            dry_run: self.dry_run,
            request: self,
        }
    }
}

fn operation(old: Option<&Value>) -> Operation {
    if old.is_some() {
        Operation::Update
    } else {
        Operation::Create
    }
}

#[async_trait]
impl AdmitWrite for RequestAdmission {
    async fn mutate(&self, object: &mut Value, old: Option<&Value>) -> Result<(), ApiError> {
        let name = meta::name(object).to_string();
        let attrs = self.attributes(operation(old), &name, old);
        self.chain.admit(&attrs, Some(object)).await
    }

    async fn validate(&self, object: &Value, old: Option<&Value>) -> Result<(), ApiError> {
        let attrs = self.attributes(operation(old), meta::name(object), old);
        self.chain.validate(&attrs, Some(object)).await
    }

    async fn delete(&self, old: &Value) -> Result<(), ApiError> {
        let attrs = self.attributes(Operation::Delete, meta::name(old), Some(old));
        self.chain.admit(&attrs, None).await?;
        self.chain.validate(&attrs, None).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkube_apimachinery::registry::Registry;
    use serde_json::json;

    /// Labels every object in the mutating phase; refuses names starting
    /// with `bad` in the validating phase.
    struct Labeler;

    #[async_trait]
    impl Plugin for Labeler {
        fn name(&self) -> &'static str {
            "Labeler"
        }
        async fn admit(&self, attrs: &Attributes<'_>, object: Option<&mut Value>) -> Result<(), ApiError> {
            if let Some(obj) = object {
                obj["metadata"]["labels"]["admitted"] = json!(attrs.operation.as_str());
            }
            attrs.request.warn("labelled");
            Ok(())
        }
        async fn validate(&self, attrs: &Attributes<'_>, _object: Option<&Value>) -> Result<(), ApiError> {
            if attrs.name.starts_with("bad") {
                return Err(ApiError::BadRequest(format!("{} refused", attrs.name)));
            }
            Ok(())
        }
    }

    fn request() -> RequestAdmission {
        let info = Registry::builtin().lookup("", "v1", "configmaps").unwrap().clone();
        let chain = Arc::new(Chain::new(vec![Arc::new(Labeler)]));
        RequestAdmission::new(chain, UserInfo::default(), info, "", "default", false)
    }

    #[tokio::test]
    async fn phases_run_with_the_operation_the_old_object_implies() {
        let req = request();
        let mut obj = json!({"metadata": {"name": "a"}});
        req.mutate(&mut obj, None).await.unwrap();
        assert_eq!(obj["metadata"]["labels"]["admitted"], "CREATE");
        let old = obj.clone();
        req.mutate(&mut obj, Some(&old)).await.unwrap();
        assert_eq!(obj["metadata"]["labels"]["admitted"], "UPDATE");
        assert!(req.validate(&obj, None).await.is_ok());
        let bad = json!({"metadata": {"name": "bad-one"}});
        assert!(matches!(req.validate(&bad, None).await, Err(ApiError::BadRequest(_))));
        assert!(req.delete(&bad).await.is_err());
        assert_eq!(req.warnings(), ["labelled"]);
    }
}
