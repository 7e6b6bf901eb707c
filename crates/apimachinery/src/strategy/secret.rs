//! Secrets: `stringData` is merged into `data` (its values win, as
//! upstream's v1 → internal conversion does, so it is never stored), `type`
//! defaults to `Opaque`, and `ValidateSecret` / `ValidateSecretUpdate`
//! (`pkg/apis/core/validation`) apply: data keys are config keys, the data
//! total at most 1 MiB, the keys each type needs are present (and the
//! docker configs parse as JSON objects); on update `type` never changes
//! and `immutable: true` freezes `data`.

use base64::Engine as _;
use serde_json::{json, Map, Value};

use super::gojson::unmarshal_map_error;
use super::{validate_immutable_data, Strategy};
use crate::errors::StatusCause;
use crate::validation::podspec::env::is_config_map_key;
use crate::validation::{validate_immutable_field, ErrorList, FieldError, Path};

/// `core.MaxSecretSize`: the most bytes `data` may hold in total.
pub const MAX_SECRET_SIZE: usize = 1024 * 1024;
/// The annotation a service-account token Secret must carry.
pub const SERVICE_ACCOUNT_NAME_KEY: &str = "kubernetes.io/service-account.name";

/// The strategy of core/v1 Secrets.
#[derive(Clone, Copy, Debug, Default)]
pub struct Secret;

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

/// The decoded `data` (a value that is not base64 counts as its raw bytes;
/// the typed decoder has refused such bodies before this runs).
fn decoded_data(obj: &Value) -> Vec<(String, Vec<u8>)> {
    let Some(m) = obj.get("data").and_then(Value::as_object) else { return Vec::new() };
    let mut out: Vec<(String, Vec<u8>)> = m
        .iter()
        .map(|(k, v)| {
            let s = v.as_str().unwrap_or("");
            (k.clone(), b64().decode(s).unwrap_or_else(|_| s.as_bytes().to_vec()))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// `ValidateSecret` without the metadata (the store checks that).
pub fn validate_secret(obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let data_path = Path::new("data");
    let data = decoded_data(obj);
    let mut total = 0;
    for (key, value) in &data {
        for msg in is_config_map_key(key) {
            errs.push(FieldError::invalid(&data_path.key(key), key.as_str(), &msg));
        }
        total += value.len();
    }
    if total > MAX_SECRET_SIZE {
        errs.push(FieldError::too_long(&data_path, MAX_SECRET_SIZE as i64));
    }
    let get = |k: &str| data.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_slice());
    // Upstream builds some of these paths from the literal "data[%s]".
    let odd_path = Path::new("data[%s]");
    let docker = |errs: &mut ErrorList, key: &str| match get(key) {
        None => errs.push(FieldError::required(&data_path.key(key), "")),
        Some(bytes) => {
            if let Some(e) = unmarshal_map_error(bytes) {
                errs.push(FieldError::invalid(&data_path.key(key), "<secret contents redacted>", &e));
            }
        }
    };
    match obj.get("type").and_then(Value::as_str).unwrap_or("") {
        "kubernetes.io/service-account-token" => {
            let name = obj.pointer("/metadata/annotations").and_then(|a| a.get(SERVICE_ACCOUNT_NAME_KEY));
            if name.and_then(Value::as_str).unwrap_or("").is_empty() {
                let p = Path::new("metadata").child("annotations").key(SERVICE_ACCOUNT_NAME_KEY);
                errs.push(FieldError::required(&p, ""));
            }
        }
        "kubernetes.io/dockercfg" => docker(&mut errs, ".dockercfg"),
        "kubernetes.io/dockerconfigjson" => docker(&mut errs, ".dockerconfigjson"),
        "kubernetes.io/basic-auth" if get("username").is_none() && get("password").is_none() => {
            errs.push(FieldError::required(&odd_path.key("username"), ""));
            errs.push(FieldError::required(&odd_path.key("password"), ""));
        }
        "kubernetes.io/ssh-auth" if get("ssh-privatekey").is_none_or(<[u8]>::is_empty) => {
            errs.push(FieldError::required(&odd_path.key("ssh-privatekey"), ""));
        }
        "kubernetes.io/tls" => {
            for key in ["tls.crt", "tls.key"] {
                if get(key).is_none() {
                    errs.push(FieldError::required(&data_path.key(key), ""));
                }
            }
        }
        _ => {}
    }
    errs
}

impl Strategy for Secret {
    fn default(&self, obj: &mut Value) {
        if let Some(Value::Object(strings)) = obj.as_object_mut().and_then(|m| m.remove("stringData")) {
            if !obj.get("data").is_some_and(Value::is_object) {
                obj["data"] = Value::Object(Map::new());
            }
            for (k, v) in strings {
                obj["data"][k] = json!(b64().encode(v.as_str().unwrap_or("")));
            }
        }
        if obj.get("type").is_none_or(|t| t.as_str().is_none_or(str::is_empty)) {
            obj["type"] = json!("Opaque");
        }
    }
    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        validate_secret(obj).to_causes()
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        let mut errs = validate_immutable_field(new.get("type"), old.get("type"), &Path::new("type"));
        let mut causes = errs.to_causes();
        causes.extend(validate_immutable_data(new, old, &["data"]));
        errs = validate_secret(new);
        causes.extend(errs.to_causes());
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
    use crate::strategy::cause_texts;

    fn create(obj: Value) -> Vec<String> {
        let mut obj = obj;
        Secret.default(&mut obj);
        cause_texts(Secret.validate_create(&obj))
    }

    fn enc(s: &str) -> Value {
        json!(b64().encode(s))
    }

    #[test]
    fn secrets_default_to_opaque_and_keep_their_type() {
        let mut s = json!({"data": {}});
        Secret.default(&mut s);
        assert_eq!(s["type"], "Opaque");
        let changed = json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}});
        assert_eq!(
            cause_texts(Secret.validate_update(&changed, &s)),
            vec![r#"type: Invalid value: "kubernetes.io/tls": field is immutable"#]
        );
    }

    #[test]
    fn string_data_is_merged_into_data() {
        let mut s = json!({"data": {"a": enc("old"), "b": enc("kept")}, "stringData": {"a": "new"}});
        Secret.default(&mut s);
        assert_eq!(s, json!({"data": {"a": enc("new"), "b": enc("kept")}, "type": "Opaque"}));
    }

    #[test]
    fn keys_and_size() {
        assert_eq!(
            create(json!({"data": {"a b": enc("x")}})),
            vec![
                r#"data[a b]: Invalid value: "a b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"#
            ]
        );
        let big = "x".repeat(MAX_SECRET_SIZE / 2 + 1);
        assert_eq!(
            create(json!({"data": {"a": enc(&big), "b": enc(&big)}})),
            vec!["data: Too long: may not be more than 1048576 bytes"]
        );
    }

    #[test]
    fn type_rules() {
        assert_eq!(
            create(json!({"type": "kubernetes.io/service-account-token"})),
            vec!["metadata.annotations[kubernetes.io/service-account.name]: Required value"]
        );
        assert_eq!(
            create(json!({"type": "kubernetes.io/dockercfg", "data": {".dockercfg": enc("{")}})),
            vec![r#"data[.dockercfg]: Invalid value: "<secret contents redacted>": unexpected end of JSON input"#]
        );
        assert_eq!(
            create(json!({"type": "kubernetes.io/dockerconfigjson"})),
            vec!["data[.dockerconfigjson]: Required value"]
        );
        assert!(create(
            json!({"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": enc(r#"{"auths":{}}"#)}})
        )
        .is_empty());
        assert_eq!(
            create(json!({"type": "kubernetes.io/basic-auth"})),
            vec!["data[%s][username]: Required value", "data[%s][password]: Required value"]
        );
        assert!(create(json!({"type": "kubernetes.io/basic-auth", "stringData": {"password": ""}})).is_empty());
        assert_eq!(create(json!({"type": "kubernetes.io/ssh-auth"})), vec!["data[%s][ssh-privatekey]: Required value"]);
        assert_eq!(
            create(json!({"type": "kubernetes.io/tls", "stringData": {"tls.crt": "c"}})),
            vec!["data[tls.key]: Required value"]
        );
        assert!(create(json!({"type": "bootstrap.kubernetes.io/token"})).is_empty());
    }
}
