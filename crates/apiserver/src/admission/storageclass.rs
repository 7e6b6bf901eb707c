//! DefaultStorageClass (plugin/pkg/admission/storage/storageclass/setdefault):
//! a new PersistentVolumeClaim that names no
//! class gets the default StorageClass — the one annotated
//! `storageclass.kubernetes.io/is-default-class: "true"`; with several, the
//! newest (then the first by name), as 1.28+ picks it.

use std::sync::Arc;

use async_trait::async_trait;
use rkube_apimachinery::ApiError;
use serde_json::{json, Value};

use super::builtin::{forbidden, list};
use super::{Attributes, Operation, Plugin};
use crate::storage::ResourceStore;

const DEFAULT_ANNOTATION: &str = "storageclass.kubernetes.io/is-default-class";
const BETA_DEFAULT_ANNOTATION: &str = "storageclass.beta.kubernetes.io/is-default-class";
/// The deprecated claim annotation that names a class.
const BETA_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

/// The DefaultStorageClass plugin over the StorageClass store.
pub struct DefaultStorageClass {
    classes: Option<Arc<ResourceStore>>,
}

impl DefaultStorageClass {
    /// The plugin, reading classes from `classes`.
    pub fn new(classes: Option<Arc<ResourceStore>>) -> DefaultStorageClass {
        DefaultStorageClass { classes }
    }
}

/// Whether a StorageClass is marked default (`"true"`, either annotation).
pub fn is_default(class: &Value) -> bool {
    let annotations = class.pointer("/metadata/annotations");
    [DEFAULT_ANNOTATION, BETA_DEFAULT_ANNOTATION]
        .iter()
        .any(|k| annotations.and_then(|a| a.get(*k)).and_then(Value::as_str) == Some("true"))
}

/// Upstream's `GetDefaultClass`: the newest default class, ties broken by
/// name.
pub fn default_class(classes: &[Value]) -> Option<&Value> {
    let created =
        |c: &Value| c.pointer("/metadata/creationTimestamp").and_then(Value::as_str).unwrap_or("").to_string();
    let name = |c: &Value| c.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_string();
    classes
        .iter()
        .filter(|c| is_default(c))
        .min_by(|a, b| created(b).cmp(&created(a)).then_with(|| name(a).cmp(&name(b))))
}

#[async_trait]
impl Plugin for DefaultStorageClass {
    fn name(&self) -> &'static str {
        "DefaultStorageClass"
    }

    async fn admit(&self, attrs: &Attributes<'_>, object: Option<&mut Value>) -> Result<(), ApiError> {
        let Some(pvc) = object else { return Ok(()) };
        if attrs.operation != Operation::Create || !attrs.is("", "persistentvolumeclaims", "") {
            return Ok(());
        }
        let has_class = pvc.pointer("/spec/storageClassName").is_some_and(|c| !c.is_null())
            || pvc.pointer("/metadata/annotations").and_then(|a| a.get(BETA_CLASS_ANNOTATION)).is_some();
        let Some(store) = &self.classes else { return Ok(()) };
        if has_class {
            return Ok(());
        }
        let classes = list(store, "").await.map_err(|e| forbidden(attrs, Some(pvc), e.to_string()))?;
        if let Some(class) = default_class(&classes) {
            let name = class.pointer("/metadata/name").cloned().unwrap_or(json!(""));
            tracing::debug!(target: "apiserver::admission", class = %name, "DefaultStorageClass: defaulting the claim's class");
            pvc["spec"]["storageClassName"] = name;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(name: &str, created: &str, default: bool) -> Value {
        let mut c = json!({"metadata": {"name": name, "creationTimestamp": created}});
        if default {
            c["metadata"]["annotations"] = json!({DEFAULT_ANNOTATION: "true"});
        }
        c
    }

    #[test]
    fn the_newest_default_class_wins() {
        let classes = [
            class("old", "2024-01-01T00:00:00Z", true),
            class("plain", "2025-06-01T00:00:00Z", false),
            class("new", "2025-01-01T00:00:00Z", true),
            class("anew", "2025-01-01T00:00:00Z", true),
        ];
        assert_eq!(default_class(&classes).unwrap()["metadata"]["name"], "anew");
        assert!(default_class(&classes[1..2]).is_none());
    }
}
