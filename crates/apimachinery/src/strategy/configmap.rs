//! ConfigMaps (`ValidateConfigMap` / `ValidateConfigMapUpdate`,
//! `pkg/apis/core/validation`): keys of `data` and `binaryData` are config
//! keys, no key is in both, the values total at most 1 MiB; on update
//! `immutable: true` freezes `data` and `binaryData`.

use base64::Engine as _;
use serde_json::Value;

use super::secret::MAX_SECRET_SIZE;
use super::{validate_immutable_data, Generic, Strategy};
use crate::errors::StatusCause;
use crate::validation::podspec::env::is_config_map_key;
use crate::validation::{ErrorList, FieldError, Path};

/// `ValidateConfigMap` without the metadata (the store checks that).
pub fn validate_config_map(obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let empty = serde_json::Map::new();
    let data = obj.get("data").and_then(Value::as_object).unwrap_or(&empty);
    let binary = obj.get("binaryData").and_then(Value::as_object).unwrap_or(&empty);
    let (data_path, binary_path) = (Path::new("data"), Path::new("binaryData"));
    let mut total = 0;
    for (key, value) in data {
        for msg in is_config_map_key(key) {
            errs.push(FieldError::invalid(&data_path.key(key), key.as_str(), &msg));
        }
        if binary.contains_key(key) {
            errs.push(FieldError::invalid(&data_path.key(key), key.as_str(), "duplicate of key present in binaryData"));
        }
        total += value.as_str().map_or(0, str::len);
    }
    for (key, value) in binary {
        for msg in is_config_map_key(key) {
            errs.push(FieldError::invalid(&binary_path.key(key), key.as_str(), &msg));
        }
        // Upstream reports this one under `data` too.
        if data.contains_key(key) {
            errs.push(FieldError::invalid(&data_path.key(key), key.as_str(), "duplicate of key present in data"));
        }
        let text = value.as_str().unwrap_or("");
        total += base64::engine::general_purpose::STANDARD.decode(text).map_or(text.len(), |b| b.len());
    }
    if total > MAX_SECRET_SIZE {
        // Upstream passes the root path, which renders as `[]`.
        errs.push(FieldError::too_long(&Path::new("[]"), MAX_SECRET_SIZE as i64));
    }
    errs
}

/// The strategy of core/v1 ConfigMaps.
#[derive(Clone, Copy, Debug, Default)]
pub struct ConfigMap;

impl Strategy for ConfigMap {
    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        validate_config_map(obj).to_causes()
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        let mut causes = validate_immutable_data(new, old, &["data", "binaryData"]);
        causes.extend(validate_config_map(new).to_causes());
        causes
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

    #[test]
    fn keys_duplicates_and_size_follow_validate_config_map() {
        let texts = |obj: Value| crate::strategy::cause_texts(ConfigMap.validate_create(&obj));
        assert_eq!(
            texts(json!({"data": {"bad key!": "x", "..": "y", "dup": "1"}, "binaryData": {"dup": "MQ=="}})),
            vec![
                r#"data[..]: Invalid value: "..": must not be '..'"#.to_string(),
                r#"data[bad key!]: Invalid value: "bad key!": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"#.to_string(),
                r#"data[dup]: Invalid value: "dup": duplicate of key present in binaryData"#.to_string(),
                r#"data[dup]: Invalid value: "dup": duplicate of key present in data"#.to_string(),
            ]
        );
        let half = "x".repeat(MAX_SECRET_SIZE / 2 + 1);
        assert_eq!(
            texts(json!({"data": {"a": half, "b": half}})),
            vec!["[]: Too long: may not be more than 1048576 bytes".to_string()]
        );
        assert!(texts(json!({"data": {"a.b_c-D": "1"}, "binaryData": {"e": "MQ=="}})).is_empty());
        // Updates are validated as creates are.
        let old = json!({"data": {"a": "1"}});
        assert_eq!(ConfigMap.validate_update(&json!({"data": {"a b": "1"}}), &old).len(), 1);
    }
}
