//! The Swagger 2.0 form of the schemas (what `/openapi/v2` serves).
//!
//! Differences from the v3 form, as upstream's two generators differ:
//! references point to `#/definitions/<name>`; a reference with siblings
//! is written with the siblings next to `$ref` (no `allOf` wrapper);
//! IntOrString is `type: string, format: int-or-string` and Quantity
//! `type: string` (v2 has no `oneOf`).

use serde_json::{json, Map, Value};

use super::schemas::REF_PREFIX;

/// Prefix of v2 schema references.
pub(crate) const V2_REF_PREFIX: &str = "#/definitions/";

/// Converts one definition from the v3 form to the v2 form.
pub(crate) fn schema_to_v2(name: &str, schema: &Value) -> Value {
    match name {
        "io.k8s.apimachinery.pkg.util.intstr.IntOrString" => scalar(schema, Some("int-or-string")),
        "io.k8s.apimachinery.pkg.api.resource.Quantity" => scalar(schema, None),
        _ => convert(schema),
    }
}

fn scalar(schema: &Value, format: Option<&str>) -> Value {
    let mut out = Map::new();
    if let Some(d) = schema.get("description") {
        out.insert("description".into(), d.clone());
    }
    out.insert("type".into(), json!("string"));
    if let Some(f) = format {
        out.insert("format".into(), json!(f));
    }
    Value::Object(out)
}

fn convert(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            for (k, v) in map {
                match k.as_str() {
                    "$ref" => {
                        out.insert(k.clone(), convert_ref(v));
                    }
                    "allOf" if single_ref(v).is_some() => {
                        out.insert("$ref".into(), convert_ref(single_ref(v).unwrap_or(&Value::Null)));
                    }
                    // Property names are data, not keywords: convert their schemas only.
                    "properties" | "definitions" => {
                        let converted = match v {
                            Value::Object(props) => {
                                Value::Object(props.iter().map(|(name, s)| (name.clone(), convert(s))).collect())
                            }
                            other => other.clone(),
                        };
                        out.insert(k.clone(), converted);
                    }
                    _ => {
                        out.insert(k.clone(), convert(v));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(convert).collect()),
        other => other.clone(),
    }
}

/// `#/components/schemas/X` → `#/definitions/X`.
fn convert_ref(r: &Value) -> Value {
    let r = r.as_str().unwrap_or_default();
    match r.strip_prefix(REF_PREFIX) {
        Some(name) => Value::String(format!("{V2_REF_PREFIX}{name}")),
        None => Value::String(r.to_string()),
    }
}

/// `[{"$ref": X}]` → the `$ref` value.
fn single_ref(all_of: &Value) -> Option<&Value> {
    match all_of.as_array()?.as_slice() {
        [Value::Object(only)] if only.len() == 1 => only.get("$ref"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_lose_their_all_of_wrapper() {
        let v3 = json!({
            "properties": {
                "spec": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}], "description": "d"},
                "items": {"type": "array", "items": {"$ref": "#/components/schemas/X"}},
                "$ref": {"type": "string"}
            }
        });
        let v2 = schema_to_v2("Foo", &v3);
        assert_eq!(
            v2["properties"]["spec"],
            json!({"$ref": "#/definitions/io.k8s.api.core.v1.PodSpec", "description": "d"})
        );
        assert_eq!(v2["properties"]["items"]["items"]["$ref"], json!("#/definitions/X"));
        assert_eq!(v2["properties"]["$ref"], json!({"type": "string"}));
    }

    #[test]
    fn scalars() {
        let ios =
            json!({"description": "d", "oneOf": [{"type": "integer"}, {"type": "string"}], "format": "int-or-string"});
        assert_eq!(
            schema_to_v2("io.k8s.apimachinery.pkg.util.intstr.IntOrString", &ios),
            json!({"description": "d", "type": "string", "format": "int-or-string"})
        );
    }
}
