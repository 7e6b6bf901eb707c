//! Per-kind behaviour of the generic registry store, as upstream keeps a
//! `strategy` per resource (`pkg/registry/<group>/<resource>/strategy.go`).
//!
//! The API server's store is generic: it calls the [`Strategy`] of the
//! object's kind for everything that differs between kinds — defaulting,
//! what create resets, what a main or a `/status` update may change,
//! validation on create and update, graceful deletion, the default garbage
//! collection policy. [`for_kind`] finds the strategy of a kind;
//! [`Generic`] serves every kind without one (and custom resources).
//!
//! Adding per-kind behaviour means writing one unit (a type implementing
//! [`Strategy`], usually wrapping a [`Generic`] for its flags) and listing
//! it in [`for_kind`] — not adding `match kind` arms elsewhere.
//!
//! Objects are `serde_json::Value`s at their storage version, already
//! pruned by their typed struct (see [`crate::typed`]); helpers for their
//! metadata are in [`crate::meta`].

use serde_json::Value;

use crate::errors::StatusCause;
use crate::validation::NameValidation;

mod admission;
mod apiregistration;
mod autoscaling;
mod certificates;
mod configmap;
mod coordination;
mod crd;
mod csi;
mod discovery;
pub mod endpoints;
mod event;
mod flowcontrol;
mod generic;
pub mod gojson;
mod ipaddress;
pub(crate) mod limitrange;
mod namespace;
mod networking;
mod node;
mod nodeclass;
mod pod;
mod policy;
pub(crate) mod quota;
mod rbac;
mod scheduling;
mod secret;
pub mod service;
mod storage;
mod storagecapacity;
mod templates;
mod vap;
mod vap_policy;
mod volumes;
pub mod workload;

pub use generic::Generic;
pub use namespace::Namespace;
pub use pod::Pod;
pub use service::Service;

/// What happens to dependents when an owner is deleted without an explicit
/// `propagationPolicy` (upstream's `rest.GarbageCollectionPolicy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GcPolicy {
    /// Dependents are deleted in the background (no finalizer is added).
    DeleteDependents,
    /// Dependents are orphaned (the `orphan` finalizer is added).
    OrphanDependents,
}

/// The per-kind behaviour the generic store consults. Every method has the
/// behaviour of upstream's generic (custom resource) strategy as default.
pub trait Strategy: Send + Sync {
    /// Upstream's defaulting (`SetDefaults_<Kind>` and the defaulting
    /// admission plugins): fills in omitted fields. Runs on every create
    /// and update body before validation.
    fn default(&self, _obj: &mut Value) {}

    /// `PrepareForCreate`: clears what a client may not set on create
    /// (e.g. `status` for kinds with a status subresource). The generic
    /// metadata (uid, creationTimestamp, generation) is the store's job.
    fn prepare_for_create(&self, obj: &mut Value) {
        if self.has_status_subresource() {
            reset_status(obj);
        }
    }

    /// `PrepareForUpdate` of the main resource: `new` is the requested
    /// object, `old` the stored one. By default the status is kept from
    /// `old` for kinds with a status subresource.
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        if self.has_status_subresource() {
            copy_field(new, old, "status");
        }
    }

    /// `PrepareForUpdate` of the `/status` subresource: only `status`
    /// changes; everything else stays as stored.
    fn prepare_for_status_update(&self, new: &mut Value, old: &Value) {
        let status = new.get("status").cloned();
        *new = old.clone();
        match status {
            Some(s) => new["status"] = s,
            None => {
                if let Some(m) = new.as_object_mut() {
                    m.remove("status");
                }
            }
        }
    }

    /// Kind-specific validation of a new object (the store validates
    /// `metadata` itself). Each cause becomes part of a 422 Invalid.
    fn validate_create(&self, _obj: &Value) -> Vec<StatusCause> {
        Vec::new()
    }

    /// Kind-specific validation of an update (immutable fields and the like).
    fn validate_update(&self, _new: &Value, _old: &Value) -> Vec<StatusCause> {
        Vec::new()
    }

    /// Validation that depends on the API version the client wrote through
    /// (`request_api_version`, e.g. `events.k8s.io/v1` for Events stored as
    /// core/v1; upstream passes the request's GroupVersion from the
    /// context): added to [`Strategy::validate_create`]'s causes. `old` is
    /// the stored object on updates.
    fn validate_for_request_version(
        &self,
        _obj: &Value,
        _old: Option<&Value>,
        _request_api_version: &str,
    ) -> Vec<StatusCause> {
        Vec::new()
    }

    /// Whether the kind has a `/status` subresource (then the main resource
    /// ignores status changes and `/status` ignores everything else).
    fn has_status_subresource(&self) -> bool;

    /// Whether `metadata.generation` is tracked: set to 1 on create and
    /// bumped when anything but `metadata` and `status` changes.
    fn tracks_generation(&self) -> bool {
        true
    }

    /// The rule object names follow (upstream's `ValidateNameFunc`): a
    /// DNS-1123 subdomain for most kinds.
    fn name_validation(&self) -> NameValidation {
        NameValidation::Dns1123Subdomain
    }

    /// `AllowCreateOnUpdate`: whether PUT of a missing object creates it.
    fn allow_create_on_update(&self) -> bool {
        false
    }

    /// `AllowUnconditionalUpdate`: whether PUT without
    /// `metadata.resourceVersion` overwrites whatever is stored.
    fn allow_unconditional_update(&self) -> bool {
        true
    }

    /// Graceful deletion (`CheckGracefulDelete`): the grace period in
    /// seconds to wait before the object is removed, given the requested
    /// one; `0` (or `None`: the kind is not deleted gracefully) removes it
    /// at once.
    fn graceful_delete_period(&self, _obj: &Value, _requested: Option<i64>) -> Option<i64> {
        None
    }

    /// The garbage collection policy when a delete does not name one.
    fn default_gc_policy(&self) -> GcPolicy {
        GcPolicy::DeleteDependents
    }

    /// Whether a completed delete answers with the deleted object
    /// (`ReturnDeletedObject`) rather than a `Status` of success.
    fn return_deleted_object(&self) -> bool {
        false
    }

    /// Kinds whose first delete only starts termination (namespaces): marks
    /// `obj` (namespaces become `Terminating`) and returns true; the store
    /// then sets `deletionTimestamp` and keeps the object. A later delete
    /// removes it once [`Strategy::holds_deletion`] is false. Other kinds
    /// return false and are deleted as usual.
    fn begin_termination(&self, _obj: &mut Value) -> bool {
        false
    }

    /// Whether the kind still holds `obj` back from removal on its own
    /// (namespaces: `spec.finalizers` not empty).
    fn holds_deletion(&self, _obj: &Value) -> bool {
        false
    }
}

/// The strategy of a kind (by group and kind; `""` is the core group).
/// Kinds without their own strategy get a [`Generic`] one with upstream's
/// flags for that kind.
pub fn for_kind(group: &str, kind: &str, has_status_subresource: bool) -> Box<dyn Strategy> {
    match (group, kind) {
        ("", "Pod") => Box::new(Pod),
        ("", "Namespace") => Box::new(Namespace),
        ("", "ConfigMap") => Box::new(configmap::ConfigMap),
        ("", "Secret") => Box::new(secret::Secret),
        ("", "Endpoints") => Box::new(endpoints::Endpoints::new()),
        ("discovery.k8s.io", "EndpointSlice") => Box::new(discovery::EndpointSlice::new()),
        ("", "Node") => Box::new(node::Node::new()),
        ("", "Event") => Box::new(event::Event::new()),
        ("", "Service") => Box::new(Service::new()),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => Box::new(crd::CustomResourceDefinition::new()),
        ("rbac.authorization.k8s.io", k @ ("Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding")) => {
            Box::new(rbac::Rbac::for_kind(k).expect("an RBAC kind"))
        }
        ("networking.k8s.io", k @ ("Ingress" | "IngressClass" | "NetworkPolicy")) => {
            Box::new(networking::Networking::for_kind(k, has_status_subresource).expect("a networking kind"))
        }
        ("", k @ ("PersistentVolumeClaim" | "PersistentVolume")) => {
            Box::new(volumes::Volumes::for_kind(k).expect("a volume kind"))
        }
        ("", "LimitRange") => Box::new(limitrange::LimitRange::new()),
        ("", "ResourceQuota") => Box::new(quota::ResourceQuota::new()),
        ("policy", "PodDisruptionBudget") => Box::new(policy::PodDisruptionBudget::new()),
        ("storage.k8s.io", "StorageClass") => Box::new(storage::StorageClass::new()),
        ("scheduling.k8s.io", "PriorityClass") => Box::new(scheduling::PriorityClass::new()),
        ("coordination.k8s.io", "Lease") => Box::new(coordination::Lease::new()),
        ("admissionregistration.k8s.io", k @ ("MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration")) => {
            Box::new(admission::WebhookConfiguration::new(k))
        }
        ("apiregistration.k8s.io", "APIService") => Box::new(apiregistration::ApiService::new()),
        ("certificates.k8s.io", "CertificateSigningRequest") => {
            Box::new(certificates::CertificateSigningRequest::new())
        }
        ("node.k8s.io", "RuntimeClass") => Box::new(nodeclass::RuntimeClass::new()),
        ("storage.k8s.io", k @ ("CSIDriver" | "CSINode" | "VolumeAttachment")) => {
            Box::new(csi::Csi::for_kind(k).expect("a CSI kind"))
        }
        ("networking.k8s.io", k @ ("IPAddress" | "ServiceCIDR")) => {
            Box::new(ipaddress::IpKinds::for_kind(k, has_status_subresource).expect("an IP kind"))
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => Box::new(vap::PolicyBinding::new()),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => Box::new(vap_policy::Policy::new()),
        ("storage.k8s.io", "CSIStorageCapacity") => Box::new(storagecapacity::CsiStorageCapacity::new()),
        ("", "PodTemplate") => Box::new(templates::PodTemplate::new()),
        ("apps", "ControllerRevision") => Box::new(templates::ControllerRevision::new()),
        ("flowcontrol.apiserver.k8s.io", k @ ("FlowSchema" | "PriorityLevelConfiguration")) => {
            Box::new(flowcontrol::FlowControl::new(k))
        }
        ("autoscaling", "HorizontalPodAutoscaler") => Box::new(autoscaling::HorizontalPodAutoscaler::new()),
        _ => match workload::for_kind(group, kind, has_status_subresource) {
            Some(w) => Box::new(w),
            None => Box::new(generic::for_builtin(group, kind, has_status_subresource)),
        },
    }
}

/// Replaces `obj.status` with an empty object (kinds with a status
/// subresource ignore the status sent on create). Upstream's status is a
/// struct, which Go always serializes, so a new object reads `status: {}`;
/// clients compare against that (`kubectl apply` of a manifest with
/// `status: {}` is then `unchanged`).
pub fn reset_status(obj: &mut Value) {
    if let Some(m) = obj.as_object_mut() {
        m.insert("status".into(), Value::Object(serde_json::Map::new()));
    }
}

/// Gives the embedded object metadata at `obj` (a pod or job template, a
/// claim template) `creationTimestamp: null`, as Go serializes an unset
/// `ObjectMeta` inside a template: clients that send it back (`kubectl
/// apply` of `kubectl create … -o yaml` output) then see no difference.
pub fn null_template_creation_timestamp(obj: &mut Value) {
    let Some(m) = obj.as_object_mut() else { return };
    let meta = m.entry("metadata").or_insert_with(|| Value::Object(serde_json::Map::new()));
    if let Some(meta) = meta.as_object_mut() {
        meta.entry("creationTimestamp").or_insert(Value::Null);
    }
}

/// Sets `new[field]` to `old[field]` (removing it when `old` has none).
pub fn copy_field(new: &mut Value, old: &Value, field: &str) {
    let Some(m) = new.as_object_mut() else { return };
    match old.get(field) {
        Some(v) => {
            m.insert(field.to_string(), v.clone());
        }
        None => {
            m.remove(field);
        }
    }
}

/// A `FieldValueForbidden` cause with upstream's message body.
pub fn forbidden(field: &str, detail: &str) -> StatusCause {
    StatusCause { reason: "FieldValueForbidden".into(), message: format!("Forbidden: {detail}"), field: field.into() }
}

/// The `immutable: true` rule of ConfigMaps and Secrets: once set, the
/// flag and the listed data fields may not change.
pub(crate) fn validate_immutable_data(new: &Value, old: &Value, data_fields: &[&str]) -> Vec<StatusCause> {
    const MSG: &str = "field is immutable when `immutable` is set";
    let mut causes = Vec::new();
    if old.get("immutable") == Some(&Value::Bool(true)) {
        if new.get("immutable") != Some(&Value::Bool(true)) {
            causes.push(forbidden("immutable", MSG));
        }
        for f in data_fields {
            let empty =
                |v: Option<&Value>| v.is_none_or(|v| v.is_null() || v.as_object().is_some_and(|m| m.is_empty()));
            let (n, o) = (new.get(*f), old.get(*f));
            if n != o && !(empty(n) && empty(o)) {
                causes.push(forbidden(f, MSG));
            }
        }
    }
    causes
}

/// `field: message` of each cause, for tests comparing with upstream's
/// error text.
#[cfg(test)]
pub(crate) fn cause_texts(causes: Vec<StatusCause>) -> Vec<String> {
    causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
}
