//! Namespaces: `status.phase` Active on create, the `kubernetes` finalizer
//! in `spec.finalizers`, the `kubernetes.io/metadata.name` label, and
//! deletion that marks the namespace `Terminating` until its finalizers are
//! removed through `/finalize` (by the namespace controller, a later item).

use serde_json::{json, Value};

use super::{copy_field, Strategy};
use crate::validation::NameValidation;

/// The strategy of core/v1 Namespaces.
#[derive(Clone, Copy, Debug, Default)]
pub struct Namespace;

/// The finalizer every namespace starts with; the namespace controller
/// removes it once the namespace is empty.
pub const FINALIZER_KUBERNETES: &str = "kubernetes";

/// The label upstream sets on every namespace to its name.
pub const LABEL_METADATA_NAME: &str = "kubernetes.io/metadata.name";

impl Namespace {
    /// `PrepareForUpdate` of `/finalize`: only `spec.finalizers` changes.
    pub fn prepare_for_finalize(&self, new: &mut Value, old: &Value) {
        let finalizers = new.pointer("/spec/finalizers").cloned();
        *new = old.clone();
        match finalizers {
            Some(f) => new["spec"]["finalizers"] = f,
            None => {
                if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
                    spec.remove("finalizers");
                }
            }
        }
    }
}

impl Strategy for Namespace {
    fn default(&self, obj: &mut Value) {
        if let Some(name) = obj.pointer("/metadata/name").and_then(Value::as_str).filter(|n| !n.is_empty()) {
            let name = name.to_string();
            let meta = &mut obj["metadata"];
            if !meta.get("labels").is_some_and(Value::is_object) {
                meta["labels"] = json!({});
            }
            meta["labels"][LABEL_METADATA_NAME] = json!(name);
        }
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({"phase": "Active"});
        if !obj.get("spec").is_some_and(Value::is_object) {
            obj["spec"] = json!({});
        }
        let spec = &mut obj["spec"];
        let mut finalizers: Vec<Value> = spec.get("finalizers").and_then(Value::as_array).cloned().unwrap_or_default();
        if !finalizers.iter().any(|f| f == FINALIZER_KUBERNETES) {
            finalizers.push(json!(FINALIZER_KUBERNETES));
        }
        spec["finalizers"] = Value::Array(finalizers);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        copy_field(new, old, "status");
        let finalizers = old.pointer("/spec/finalizers").cloned();
        if !new.get("spec").is_some_and(Value::is_object) {
            new["spec"] = json!({});
        }
        match finalizers {
            Some(f) => new["spec"]["finalizers"] = f,
            None => {
                new["spec"].as_object_mut().map(|s| s.remove("finalizers"));
            }
        }
    }

    fn has_status_subresource(&self) -> bool {
        true
    }

    fn tracks_generation(&self) -> bool {
        false
    }

    fn name_validation(&self) -> NameValidation {
        NameValidation::Dns1123Label
    }

    fn return_deleted_object(&self) -> bool {
        true
    }

    fn begin_termination(&self, obj: &mut Value) -> bool {
        obj["status"]["phase"] = json!("Terminating");
        true
    }

    fn holds_deletion(&self, obj: &Value) -> bool {
        obj.pointer("/spec/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_namespaces_are_active_with_the_kubernetes_finalizer() {
        let mut ns = json!({"metadata": {"name": "team"}});
        Namespace.default(&mut ns);
        Namespace.prepare_for_create(&mut ns);
        assert_eq!(ns["status"]["phase"], "Active");
        assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
        assert_eq!(ns["metadata"]["labels"][LABEL_METADATA_NAME], "team");
    }

    #[test]
    fn deleting_marks_terminating_and_waits_for_spec_finalizers() {
        let mut ns = json!({"spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}});
        assert!(Namespace.begin_termination(&mut ns));
        assert_eq!(ns["status"]["phase"], "Terminating");
        assert!(Namespace.holds_deletion(&ns));
        assert!(!Namespace.holds_deletion(&json!({"spec": {"finalizers": []}})));
    }

    #[test]
    fn finalize_changes_only_spec_finalizers() {
        let old = json!({"metadata": {"name": "a"}, "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Terminating"}});
        let mut new = json!({"metadata": {"name": "a", "labels": {"x": "y"}}, "spec": {"finalizers": []}});
        Namespace.prepare_for_finalize(&mut new, &old);
        assert_eq!(new["spec"]["finalizers"], json!([]));
        assert_eq!(new["status"]["phase"], "Terminating");
        assert!(new["metadata"].get("labels").is_none());
    }
}
