//! CustomResourceDefinitions (`apiextensions.k8s.io/v1`): upstream's v1
//! defaulting (`SetDefaults_CustomResourceDefinition`), the registry
//! strategy (`pkg/registry/customresourcedefinition/strategy.go`: status
//! reset on create, the storage version recorded in
//! `status.storedVersions`, no unconditional updates) and the validation of
//! [`crate::validation::crd`].
//!
//! Upstream's apiextensions controllers then fill in
//! `status.acceptedNames` and the `NamesAccepted`/`Established` conditions;
//! that is controller work, not the strategy's, and is not faked here.

use serde_json::{json, Value};

use super::{generic, Generic, Strategy};
use crate::errors::StatusCause;
use crate::validation::crd::{validate_crd, validate_crd_update};

/// The strategy of CustomResourceDefinitions.
#[derive(Clone, Debug)]
pub struct CustomResourceDefinition {
    flags: Generic,
}

impl CustomResourceDefinition {
    /// The strategy with upstream's flags.
    #[allow(clippy::new_without_default)]
    pub fn new() -> CustomResourceDefinition {
        CustomResourceDefinition {
            flags: generic::for_builtin("apiextensions.k8s.io", "CustomResourceDefinition", true),
        }
    }
}

/// The name of the version marked `storage: true` (the first one).
fn storage_version(obj: &Value) -> Option<String> {
    obj.pointer("/spec/versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("storage") == Some(&Value::Bool(true)))
        .and_then(|v| v.get("name"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// Appends the storage version to `status.storedVersions` unless present
/// (what upstream's `PrepareForCreate`/`PrepareForUpdate` do).
fn record_storage_version(obj: &mut Value) {
    let Some(storage) = storage_version(obj) else { return };
    if !obj.get("status").is_some_and(Value::is_object) {
        obj["status"] = json!({});
    }
    let status = &mut obj["status"];
    if !status.get("storedVersions").is_some_and(Value::is_array) {
        status["storedVersions"] = json!([]);
    }
    let stored = status["storedVersions"].as_array_mut().expect("an array");
    if !stored.iter().any(|v| v.as_str() == Some(storage.as_str())) {
        stored.push(json!(storage));
    }
}

impl Strategy for CustomResourceDefinition {
    /// `SetDefaults_CustomResourceDefinitionSpec`: `names.singular` is the
    /// lower-cased kind, `names.listKind` is `<kind>List`, `conversion` is
    /// `{strategy: None}`; a webhook service's `port` is 443.
    fn default(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
        if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
            let kind = names.get("kind").and_then(Value::as_str).unwrap_or("").to_string();
            if names.get("singular").and_then(Value::as_str).unwrap_or("").is_empty() {
                names.insert("singular".into(), json!(kind.to_lowercase()));
            }
            if names.get("listKind").and_then(Value::as_str).unwrap_or("").is_empty() && !kind.is_empty() {
                names.insert("listKind".into(), json!(format!("{kind}List")));
            }
        }
        if spec.get("conversion").is_none_or(Value::is_null) {
            spec.insert("conversion".into(), json!({"strategy": "None"}));
        }
        if let Some(svc) = spec
            .get_mut("conversion")
            .and_then(|c| c.pointer_mut("/webhook/clientConfig/service"))
            .and_then(Value::as_object_mut)
        {
            if svc.get("port").is_none_or(Value::is_null) {
                svc.insert("port".into(), json!(443));
            }
        }
    }

    /// A new CRD starts with an empty status (upstream's zero-valued
    /// `acceptedNames`, which it serializes) plus its storage version.
    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({"acceptedNames": {"plural": "", "kind": ""}});
        record_storage_version(obj);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        super::copy_field(new, old, "status");
        record_storage_version(new);
    }

    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        validate_crd(obj).to_causes()
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        validate_crd_update(new, old).to_causes()
    }

    fn has_status_subresource(&self) -> bool {
        true
    }
    fn tracks_generation(&self) -> bool {
        self.flags.tracks_generation
    }
    fn allow_unconditional_update(&self) -> bool {
        false
    }
    fn return_deleted_object(&self) -> bool {
        self.flags.return_deleted_object
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_defaults() {
        let mut crd = json!({"spec": {"group": "example.com", "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true}]}});
        CustomResourceDefinition::new().default(&mut crd);
        assert_eq!(crd["spec"]["names"]["singular"], "widget");
        assert_eq!(crd["spec"]["names"]["listKind"], "WidgetList");
        assert_eq!(crd["spec"]["conversion"], json!({"strategy": "None"}));

        let mut webhook = json!({"spec": {"conversion": {"strategy": "Webhook",
            "webhook": {"clientConfig": {"service": {"name": "s", "namespace": "n"}}}}}});
        CustomResourceDefinition::new().default(&mut webhook);
        assert_eq!(webhook["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"], 443);
    }

    #[test]
    fn storage_version_is_recorded() {
        let s = CustomResourceDefinition::new();
        let mut crd = json!({"spec": {"versions": [{"name": "v1", "storage": false}, {"name": "v2", "storage": true}]},
            "status": {"storedVersions": ["v0"], "conditions": []}});
        s.prepare_for_create(&mut crd);
        assert_eq!(crd["status"], json!({"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v2"]}));

        let old = json!({"spec": {}, "status": {"storedVersions": ["v1"]}});
        let mut new = json!({"spec": {"versions": [{"name": "v1", "storage": false}, {"name": "v2", "storage": true}]},
            "status": {"storedVersions": []}});
        s.prepare_for_update(&mut new, &old);
        assert_eq!(new["status"]["storedVersions"], json!(["v1", "v2"]));
        assert!(!s.allow_unconditional_update());
        assert!(s.return_deleted_object());
    }
}
