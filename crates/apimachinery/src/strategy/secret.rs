//! Secrets: `type` defaults to `Opaque` and never changes; `immutable: true`
//! freezes `data`.

use serde_json::{json, Value};

use super::{validate_immutable_data, Strategy};
use crate::errors::StatusCause;

/// The strategy of core/v1 Secrets.
#[derive(Clone, Copy, Debug, Default)]
pub struct Secret;

impl Strategy for Secret {
    fn default(&self, obj: &mut Value) {
        if obj.get("type").is_none_or(|t| t.as_str().is_none_or(str::is_empty)) {
            obj["type"] = json!("Opaque");
        }
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        let mut causes = Vec::new();
        if new.get("type") != old.get("type") {
            causes.push(StatusCause {
                reason: "FieldValueInvalid".into(),
                message: format!("Invalid value: {}: field is immutable", new.get("type").unwrap_or(&Value::Null)),
                field: "type".into(),
            });
        }
        causes.extend(validate_immutable_data(new, old, &["data"]));
        causes
    }
    fn has_status_subresource(&self) -> bool {
        false
    }
    fn tracks_generation(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_default_to_opaque_and_keep_their_type() {
        let mut s = json!({"data": {}});
        Secret.default(&mut s);
        assert_eq!(s["type"], "Opaque");
        let changed = json!({"type": "kubernetes.io/tls"});
        assert_eq!(Secret.validate_update(&changed, &s)[0].field, "type");
    }
}
