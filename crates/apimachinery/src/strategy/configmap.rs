//! ConfigMaps: `immutable: true` freezes `data` and `binaryData`.

use serde_json::Value;

use super::{validate_immutable_data, Generic, Strategy};
use crate::errors::StatusCause;

/// The strategy of core/v1 ConfigMaps.
#[derive(Clone, Copy, Debug, Default)]
pub struct ConfigMap;

impl Strategy for ConfigMap {
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        validate_immutable_data(new, old, &["data", "binaryData"])
    }
    fn has_status_subresource(&self) -> bool {
        false
    }
    fn tracks_generation(&self) -> bool {
        false
    }
    fn allow_create_on_update(&self) -> bool {
        Generic::new(false).allow_create_on_update
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn immutable_configmaps_refuse_data_changes() {
        let old = json!({"immutable": true, "data": {"a": "1"}});
        let new = json!({"immutable": true, "data": {"a": "2"}});
        let causes = ConfigMap.validate_update(&new, &old);
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].field, "data");
        assert_eq!(causes[0].message, "Forbidden: field is immutable when `immutable` is set");
        let unfrozen = json!({"immutable": false, "data": {"a": "1"}});
        assert_eq!(ConfigMap.validate_update(&unfrozen, &old)[0].field, "immutable");
        assert!(ConfigMap.validate_update(&new, &json!({"data": {"a": "1"}})).is_empty());
    }
}
