//! CSIStorageCapacity of `storage.k8s.io/v1` (upstream
//! `pkg/apis/storage/validation` `ValidateCSIStorageCapacity{,Update}` and
//! the registry strategy):
//!
//! * `storageClassName` is a DNS-1123 subdomain (empty is invalid too);
//! * `nodeTopology` is a valid label selector;
//! * `capacity` is not negative (upstream does not check
//!   `maximumVolumeSize`);
//! * on update, `nodeTopology` and `storageClassName` never change.
//!
//! Both quantities are stored in canonical form, as upstream re-encodes
//! every decoded `resource.Quantity`.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{generic, Generic, Strategy};
use crate::errors::StatusCause;
use crate::validation::meta::{validate_label_selector, LabelSelectorValidationOptions, IS_NEGATIVE_ERROR_MSG};
use crate::validation::podspec::parse_quantity;
use crate::validation::{
    go_quote, go_string_slice, is_dns1123_subdomain, BadValue, ErrorList, FieldError, Path, FIELD_IMMUTABLE_ERROR_MSG,
};

/// The strategy of CSIStorageCapacity (namespaced, no status, no
/// generation tracking).
#[derive(Clone, Debug)]
pub struct CsiStorageCapacity {
    flags: Generic,
}

impl CsiStorageCapacity {
    /// The strategy with upstream's flags for the kind.
    #[allow(clippy::new_without_default)]
    pub fn new() -> CsiStorageCapacity {
        CsiStorageCapacity { flags: generic::for_builtin("storage.k8s.io", "CSIStorageCapacity", false) }
    }
}

/// `ValidateCSIStorageCapacity` minus `ObjectMeta`. `allow_invalid_values`
/// keeps accepting selector values an old stored object already had.
pub fn validate_storage_capacity(obj: &Value, allow_invalid_values: bool) -> ErrorList {
    let mut errs = ErrorList::new();
    let opts = LabelSelectorValidationOptions {
        allow_invalid_label_value_in_selector: allow_invalid_values,
        ..Default::default()
    };
    if let Some(sel) = obj.get("nodeTopology") {
        errs.extend(validate_label_selector(sel, opts, &Path::new("nodeTopology")));
    }
    let class = obj.get("storageClassName").and_then(Value::as_str).unwrap_or("");
    for m in is_dns1123_subdomain(class) {
        errs.push(FieldError::invalid(&Path::new("storageClassName"), class, &m));
    }
    if let Some(q) = obj.get("capacity").filter(|q| !q.is_null()) {
        if parse_quantity(q).is_some_and(|n| n < 0.0) {
            let text = q.as_str().map(str::to_string).unwrap_or_else(|| q.to_string());
            errs.push(FieldError::invalid(&Path::new("capacity"), text, IS_NEGATIVE_ERROR_MSG));
        }
    }
    errs
}

/// Go's `%#v` of a `*metav1.LabelSelector` as upstream's immutable-field
/// error prints it (the pointer is dereferenced; `nil` prints `null`).
fn go_label_selector(sel: Option<&Value>) -> BadValue {
    let Some(sel) = sel.filter(|s| !s.is_null()) else { return BadValue::Null };
    let labels = match sel.get("matchLabels").and_then(Value::as_object) {
        None => "map[string]string(nil)".to_string(),
        Some(m) => {
            let sorted: BTreeMap<&str, &str> = m.iter().map(|(k, v)| (k.as_str(), v.as_str().unwrap_or(""))).collect();
            let body: Vec<String> = sorted.iter().map(|(k, v)| format!("{}:{}", go_quote(k), go_quote(v))).collect();
            format!("map[string]string{{{}}}", body.join(", "))
        }
    };
    let exprs = match sel.get("matchExpressions").and_then(Value::as_array) {
        None => "[]v1.LabelSelectorRequirement(nil)".to_string(),
        Some(list) => {
            let body: Vec<String> = list
                .iter()
                .map(|e| {
                    let vals: Vec<&str> = e
                        .get("values")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .collect();
                    let nil = e.get("values").is_none_or(Value::is_null);
                    format!(
                        "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{}}}",
                        go_quote(e.get("key").and_then(Value::as_str).unwrap_or("")),
                        go_quote(e.get("operator").and_then(Value::as_str).unwrap_or("")),
                        go_string_slice(&vals, nil)
                    )
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", body.join(", "))
        }
    };
    BadValue::Raw(format!("v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{exprs}}}"))
}

/// `ValidateCSIStorageCapacityUpdate` minus `ObjectMeta`.
pub fn validate_storage_capacity_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let (nt, ot) = (new.get("nodeTopology").filter(|v| !v.is_null()), old.get("nodeTopology").filter(|v| !v.is_null()));
    if nt != ot {
        errs.push(FieldError::invalid(&Path::new("nodeTopology"), go_label_selector(nt), FIELD_IMMUTABLE_ERROR_MSG));
    }
    let class = |o: &Value| o.get("storageClassName").and_then(Value::as_str).unwrap_or("").to_string();
    if class(new) != class(old) {
        errs.push(FieldError::invalid(&Path::new("storageClassName"), class(new), FIELD_IMMUTABLE_ERROR_MSG));
    }
    errs
}

/// Whether a stored selector has a value that is not a valid label value
/// (then updates keep accepting it, as upstream's strategy does).
fn has_invalid_selector_values(obj: &Value) -> bool {
    let strict = LabelSelectorValidationOptions::default();
    obj.get("nodeTopology").is_some_and(|s| !validate_label_selector(s, strict, &Path::new("nodeTopology")).is_empty())
}

impl Strategy for CsiStorageCapacity {
    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        validate_storage_capacity(obj, false).to_causes()
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        let mut errs = validate_storage_capacity(new, has_invalid_selector_values(old));
        errs.extend(validate_storage_capacity_update(new, old));
        errs.to_causes()
    }

    fn has_status_subresource(&self) -> bool {
        false
    }

    fn tracks_generation(&self) -> bool {
        self.flags.tracks_generation
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::strategy::cause_texts;

    #[test]
    fn create_rules() {
        let s = CsiStorageCapacity::new();
        let mut obj = json!({"storageClassName": "Bad_Class", "capacity": "-1Gi",
            "nodeTopology": {"matchLabels": {"a": "b c"}}});
        s.default(&mut obj);
        assert_eq!(
            cause_texts(s.validate_create(&obj)),
            vec![
                "nodeTopology.matchLabels: Invalid value: \"b c\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                "storageClassName: Invalid value: \"Bad_Class\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "capacity: Invalid value: \"-1Gi\": must be greater than or equal to 0",
            ]
        );
        // A missing class is an empty name: invalid, not required.
        let errs = cause_texts(s.validate_create(&json!({})));
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].starts_with("storageClassName: Invalid value: \"\": a lowercase RFC 1123 subdomain"),
            "{errs:?}"
        );
    }

    #[test]
    fn update_immutable() {
        let s = CsiStorageCapacity::new();
        let old =
            json!({"storageClassName": "fast", "nodeTopology": {"matchLabels": {"zone": "a"}}, "capacity": "1Gi"});
        let mut new = old.clone();
        new["capacity"] = json!("2Gi");
        assert!(s.validate_update(&new, &old).is_empty());
        new["storageClassName"] = json!("slow");
        new["nodeTopology"] = json!({"matchLabels": {"zone": "b"}});
        assert_eq!(
            cause_texts(s.validate_update(&new, &old)),
            vec![
                "nodeTopology: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"zone\":\"b\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable",
                "storageClassName: Invalid value: \"slow\": field is immutable",
            ]
        );
    }
}
