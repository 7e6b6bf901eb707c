//! StorageObjectInUseProtection (plugin/pkg/admission/storage/storageobjectinuseprotection):
//! new PersistentVolumeClaims get the `kubernetes.io/pvc-protection`
//! finalizer and new PersistentVolumes `kubernetes.io/pv-protection`, so
//! they are not removed while in use.

use async_trait::async_trait;
use rkube_apimachinery::{meta, ApiError};
use serde_json::Value;

use super::{Attributes, Operation, Plugin};

/// The finalizer of PersistentVolumeClaims in use by pods.
pub const PVC_PROTECTION: &str = "kubernetes.io/pvc-protection";
/// The finalizer of PersistentVolumes bound to claims.
pub const PV_PROTECTION: &str = "kubernetes.io/pv-protection";

/// The StorageObjectInUseProtection plugin.
pub struct StorageObjectInUseProtection;

#[async_trait]
impl Plugin for StorageObjectInUseProtection {
    fn name(&self) -> &'static str {
        "StorageObjectInUseProtection"
    }

    async fn admit(&self, attrs: &Attributes<'_>, object: Option<&mut Value>) -> Result<(), ApiError> {
        let Some(obj) = object else { return Ok(()) };
        if attrs.operation != Operation::Create {
            return Ok(());
        }
        let finalizer = if attrs.is("", "persistentvolumeclaims", "") {
            PVC_PROTECTION
        } else if attrs.is("", "persistentvolumes", "") {
            PV_PROTECTION
        } else {
            return Ok(());
        };
        add_finalizer(obj, finalizer);
        Ok(())
    }
}

fn add_finalizer(obj: &mut Value, finalizer: &str) {
    let mut finalizers = meta::finalizers(obj);
    if !finalizers.iter().any(|f| f == finalizer) {
        finalizers.push(finalizer.to_string());
        meta::set_finalizers(obj, &finalizers);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_finalizer_is_added_once() {
        let mut pvc = json!({"metadata": {"name": "c", "finalizers": ["example.com/x"]}});
        add_finalizer(&mut pvc, PVC_PROTECTION);
        add_finalizer(&mut pvc, PVC_PROTECTION);
        assert_eq!(pvc["metadata"]["finalizers"], json!(["example.com/x", "kubernetes.io/pvc-protection"]));
    }
}
