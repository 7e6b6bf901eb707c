//! PersistentVolumeClaimResize (plugin/pkg/admission/storage/persistentvolume/resize):
//! a claim may grow only when it is bound and its StorageClass sets
//! `allowVolumeExpansion: true`.

use std::sync::Arc;

use async_trait::async_trait;
use rkube_apimachinery::ApiError;
use serde_json::Value;

use super::builtin::{forbidden, lookup, milli};
use super::{Attributes, Operation, Plugin};
use crate::storage::ResourceStore;

/// The PersistentVolumeClaimResize plugin over the StorageClass store.
pub struct PersistentVolumeClaimResize {
    classes: Option<Arc<ResourceStore>>,
}

impl PersistentVolumeClaimResize {
    /// The plugin, reading classes from `classes`.
    pub fn new(classes: Option<Arc<ResourceStore>>) -> PersistentVolumeClaimResize {
        PersistentVolumeClaimResize { classes }
    }
}

/// The claim's class: `spec.storageClassName`, else the beta annotation.
fn claim_class(pvc: &Value) -> &str {
    if let Some(a) =
        pvc.pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class").and_then(Value::as_str)
    {
        return a;
    }
    pvc.pointer("/spec/storageClassName").and_then(Value::as_str).unwrap_or("")
}

fn storage(pvc: &Value) -> i128 {
    pvc.pointer("/spec/resources/requests/storage").and_then(milli).unwrap_or(0)
}

#[async_trait]
impl Plugin for PersistentVolumeClaimResize {
    fn name(&self) -> &'static str {
        "PersistentVolumeClaimResize"
    }

    async fn validate(&self, attrs: &Attributes<'_>, object: Option<&Value>) -> Result<(), ApiError> {
        let (Some(pvc), Some(old)) = (object, attrs.old_object) else { return Ok(()) };
        if attrs.operation != Operation::Update || !attrs.is("", "persistentvolumeclaims", "") {
            return Ok(());
        }
        if storage(pvc) <= storage(old) {
            return Ok(());
        }
        if old.pointer("/status/phase").and_then(Value::as_str) != Some("Bound") {
            return Err(forbidden(attrs, Some(pvc), "Only bound persistent volume claims can be expanded"));
        }
        let (class, old_class) = (claim_class(pvc), claim_class(old));
        let mut allowed = false;
        if !class.is_empty() && class == old_class {
            if let Some(store) = &self.classes {
                if let Ok(Some(sc)) = lookup(store, "", class).await {
                    allowed = sc.get("allowVolumeExpansion").and_then(Value::as_bool) == Some(true);
                }
            }
        }
        if !allowed {
            return Err(forbidden(
                attrs,
                Some(pvc),
                "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_class_comes_from_the_annotation_first() {
        let pvc = json!({"metadata": {"annotations": {"volume.beta.kubernetes.io/storage-class": "beta"}},
            "spec": {"storageClassName": "field", "resources": {"requests": {"storage": "2Gi"}}}});
        assert_eq!(claim_class(&pvc), "beta");
        assert_eq!(storage(&pvc), 2 * 1024 * 1024 * 1024 * 1000);
    }
}
