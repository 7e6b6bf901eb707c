//! Typed decoding of built-in kinds through their `k8s-openapi` structs.
//!
//! Upstream decodes a request body into the Go struct of its kind: fields the
//! struct does not know are dropped ("pruned"), and with
//! `fieldValidation=Strict|Warn` they are reported as `unknown field
//! "spec.foo"`; keys that appear twice in one JSON object are reported as
//! `duplicate field "spec.replicas"`. rkube does the same with the
//! `k8s-openapi` structs of API level 1.33: [`decode`] runs the JSON value
//! through the struct (recording every ignored field with its path) and
//! serializes it back, and [`duplicate_fields`] scans the raw JSON text.
//!
//! Kinds without a struct here (custom resources) are not touched:
//! [`decode`] returns `None` and the caller keeps the value as it is.

use std::collections::HashMap;
use std::sync::OnceLock;

use k8s_openapi::Resource;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

mod duplicates;

pub use duplicates::duplicate_fields;

/// The result of decoding a built-in object through its struct.
#[derive(Clone, Debug, PartialEq)]
pub struct Decoded {
    /// The object as its struct serializes it: unknown fields removed.
    pub object: Value,
    /// The unknown fields, as upstream's strict decoder names them
    /// (`spec.foo`, `spec.containers[0].bar`), in key order (a parsed
    /// `Value` no longer knows the document order).
    pub unknown_fields: Vec<String>,
}

/// A type error while decoding (e.g. a string where an integer belongs),
/// in serde's words; callers wrap it in upstream's
/// `<Kind> in version "<v>" cannot be handled as a <Kind>: ...` message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DecodeError(pub String);

type DecodeFn = fn(&Value) -> Result<Decoded, DecodeError>;

/// Whether `apiVersion`/`kind` name a built-in kind with a struct.
pub fn is_typed(api_version: &str, kind: &str) -> bool {
    table().contains_key(&(api_version, kind))
}

/// Decodes `object` (whose `apiVersion` and `kind` must be the given ones)
/// through the struct of its kind. `None` when rkube has no struct for the
/// kind (custom resources), so the value stays as it is.
pub fn decode(api_version: &str, kind: &str, object: &Value) -> Option<Result<Decoded, DecodeError>> {
    table().get(&(api_version, kind)).map(|f| f(object))
}

fn table() -> &'static HashMap<(&'static str, &'static str), DecodeFn> {
    static TABLE: OnceLock<HashMap<(&'static str, &'static str), DecodeFn>> = OnceLock::new();
    TABLE.get_or_init(|| all_kinds().into_iter().collect())
}

/// Every struct-backed kind, keyed by `(apiVersion, kind)`.
fn all_kinds() -> Vec<((&'static str, &'static str), DecodeFn)> {
    macro_rules! entries {
        ($($t:ty),* $(,)?) => { vec![$(entry::<$t>()),*] };
    }
    crate::builtin_kinds::builtin_kinds!(entries)
}

/// The table entry of one struct.
fn entry<T>() -> ((&'static str, &'static str), DecodeFn)
where
    T: Resource + DeserializeOwned + Serialize,
{
    ((T::API_VERSION, T::KIND), decode_as::<T>)
}

fn decode_as<T>(object: &Value) -> Result<Decoded, DecodeError>
where
    T: Resource + DeserializeOwned + Serialize,
{
    let mut unknown_fields = Vec::new();
    let typed: T = serde_ignored::deserialize(object, |path| unknown_fields.push(field_path(&path)))
        .map_err(|e| DecodeError(e.to_string()))?;
    let mut object = serde_json::to_value(&typed).map_err(|e| DecodeError(e.to_string()))?;
    drop_empty_metadata(&mut object);
    // Go parses quantities while decoding and writes them canonical.
    crate::quantity::canonicalize_object(T::API_VERSION, T::KIND, &mut object).map_err(DecodeError)?;
    Ok(Decoded { object, unknown_fields })
}

/// Go's `ObjectMeta` marks its maps and lists `omitempty`, so an empty
/// `labels: {}` or `finalizers: []` does not survive upstream's decoding
/// (`kubectl diff` patches with `annotations: {}` and expects no change).
fn drop_empty_metadata(object: &mut Value) {
    const OMIT_EMPTY: [&str; 5] = ["labels", "annotations", "finalizers", "ownerReferences", "managedFields"];
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.retain(|k, v| {
            !OMIT_EMPTY.contains(&k.as_str())
                || !(v.as_object().is_some_and(|m| m.is_empty()) || v.as_array().is_some_and(|a| a.is_empty()))
        });
    }
}

/// Formats a path the way Go's strict JSON decoder does: map keys joined
/// with `.`, list indexes as `[i]`.
fn field_path(path: &serde_ignored::Path<'_>) -> String {
    fn walk(path: &serde_ignored::Path<'_>, out: &mut String) {
        use serde_ignored::Path;
        match path {
            Path::Root => {}
            Path::Seq { parent, index } => {
                walk(parent, out);
                out.push_str(&format!("[{index}]"));
            }
            Path::Map { parent, key } => {
                walk(parent, out);
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Path::Some { parent } | Path::NewtypeStruct { parent } | Path::NewtypeVariant { parent } => {
                walk(parent, out)
            }
        }
    }
    let mut out = String::new();
    walk(path, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_fields_are_pruned_and_named_with_their_path() {
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "bogus": 1},
            "spec": {"foo": true, "containers": [{"name": "c", "image": "nginx", "bar": "x"}]}
        });
        let d = decode("v1", "Pod", &pod).unwrap().unwrap();
        assert_eq!(d.unknown_fields, vec!["metadata.bogus", "spec.containers[0].bar", "spec.foo"]);
        assert_eq!(d.object["spec"]["containers"][0], json!({"name": "c", "image": "nginx"}));
        assert!(d.object["spec"].get("foo").is_none());
        assert_eq!(d.object["metadata"], json!({"name": "p"}));
    }

    #[test]
    fn empty_metadata_maps_and_lists_are_omitted() {
        let cm = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "labels": {}, "annotations": {}, "finalizers": [], "ownerReferences": []}
        });
        let d = decode("v1", "ConfigMap", &cm).unwrap().unwrap();
        assert_eq!(d.object["metadata"], json!({"name": "c"}));
    }

    #[test]
    fn known_fields_survive_the_round_trip() {
        let cm = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "labels": {"a": "b"}, "creationTimestamp": "2024-05-01T10:00:00Z"},
            "data": {"k": "v"}, "immutable": true
        });
        let d = decode("v1", "ConfigMap", &cm).unwrap().unwrap();
        assert!(d.unknown_fields.is_empty());
        assert_eq!(d.object, cm);
    }

    #[test]
    fn type_errors_are_reported() {
        let dep = json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": "three"}});
        let err = decode("apps/v1", "Deployment", &dep).unwrap().unwrap_err();
        assert!(err.0.contains("invalid type"), "{err}");
    }

    #[test]
    fn custom_resources_are_left_alone() {
        assert!(decode("example.com/v1", "Widget", &json!({})).is_none());
        assert!(is_typed("apps/v1", "Deployment"));
        assert!(is_typed("apiextensions.k8s.io/v1", "CustomResourceDefinition"));
    }
}
