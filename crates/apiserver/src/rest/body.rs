//! Request bodies: size limit, JSON/YAML/protobuf parsing, the kind and apiVersion
//! checks, and typed decoding with `fieldValidation` — upstream's
//! `limitedReadBody`, codec decode and `transformDecodeError`.

use axum::body::Body;
use bytes::Bytes;
use rkube_apimachinery::registry::ResourceInfo;
use rkube_apimachinery::{protobuf, typed, ApiError};
use serde_json::Value;

use super::negotiate::{unsupported_body_media_type, BodyFormat};
use super::query::FieldValidation;

/// Largest request body accepted (upstream's `MaxRequestBodyBytes`, 3 MiB).
pub const MAX_REQUEST_BODY_BYTES: usize = 3 * 1024 * 1024;

/// A decoded object and the warnings decoding produced.
#[derive(Clone, Debug, PartialEq)]
pub struct Decoded {
    /// The object, pruned by its struct, with `apiVersion` and `kind` set.
    pub object: Value,
    /// `unknown field "..."` / `duplicate field "..."` warnings (Warn mode).
    pub warnings: Vec<String>,
}

/// Reads the body; over [`MAX_REQUEST_BODY_BYTES`] is a 413.
pub async fn read(body: Body) -> Result<Bytes, ApiError> {
    axum::body::to_bytes(body, MAX_REQUEST_BODY_BYTES).await.map_err(|e| {
        let mut source: Option<&dyn std::error::Error> = Some(&e);
        let mut too_large = false;
        while let Some(err) = source {
            too_large |= err.to_string().contains("length limit exceeded");
            source = err.source();
        }
        if too_large {
            ApiError::RequestEntityTooLarge(format!("Request entity too large: limit is {MAX_REQUEST_BODY_BYTES}"))
        } else {
            ApiError::BadRequest(format!("unable to read the request body: {e}"))
        }
    })
}

/// Upstream's `summarizeData`: the start of a JSON body, or hex otherwise.
fn summarize(data: &[u8]) -> String {
    const MAX: usize = 30;
    if data.is_empty() {
        return "<empty>".into();
    }
    let cut = &data[..data.len().min(MAX)];
    let more = if data.len() > MAX { " ..." } else { "" };
    if data[0] == b'{' {
        format!("{}{more}", String::from_utf8_lossy(cut))
    } else {
        format!("{}{more}", cut.iter().map(|b| format!("{b:02x}")).collect::<String>())
    }
}

/// Decodes a create/update body for `info` (the object's kind as the URL
/// names it).
pub fn decode(
    info: &ResourceInfo,
    bytes: &[u8],
    format: BodyFormat,
    validation: FieldValidation,
) -> Result<Decoded, ApiError> {
    let unrecognized = |why: String| {
        ApiError::BadRequest(format!(
            "the object provided is unrecognized (must be of type {}): {why} ({})",
            info.kind,
            summarize(bytes)
        ))
    };
    let (value, duplicates) = match format {
        BodyFormat::Json => {
            let value: Value = serde_json::from_slice(bytes).map_err(|e| {
                // Go's scanner wording (upstream's `encoding/json` in the
                // serializer's `Interpret`), also past the nesting limit:
                // `invalid character '[' exceeded max depth`. serde's own
                // text only where Go's scanner would accept the document.
                let why = rkube_apimachinery::strategy::gojson::syntax_error(bytes).unwrap_or_else(|| e.to_string());
                unrecognized(format!("couldn't get version/kind; json parse error: {why}"))
            })?;
            let duplicates = typed::duplicate_fields(bytes).unwrap_or_default();
            (value, duplicates)
        }
        BodyFormat::Yaml => {
            let value: Value = serde_yaml::from_slice(bytes)
                .map_err(|e| unrecognized(format!("error converting YAML to JSON: yaml: {e}")))?;
            (value, Vec::new())
        }
        BodyFormat::Protobuf => (
            decode_protobuf(info, bytes).map_err(|e| match e {
                Some(why) => unrecognized(why),
                None => unsupported_body_media_type(),
            })?,
            Vec::new(),
        ),
    };
    if !value.is_object() {
        return Err(unrecognized("couldn't get version/kind; json parse error: expected a JSON object".into()));
    }
    decode_value(info, value, duplicates, validation)
}

/// A protobuf body (`k8s\0` + `runtime.Unknown`) as the JSON value of the
/// object. `Err(None)` when `info`'s kind has no protobuf table (upstream's
/// 415 then, as for custom resources); `Err(Some(why))` for a malformed
/// body. An envelope naming another kind yields just its `apiVersion` and
/// `kind`, so [`decode_value`] reports the mismatch as for JSON.
fn decode_protobuf(info: &ResourceInfo, bytes: &[u8]) -> Result<Value, Option<String>> {
    let want_version = info.api_version();
    if !protobuf::supports(&want_version, info.kind) {
        return Err(None);
    }
    let envelope = protobuf::envelope(bytes).map_err(|e| Some(e.to_string()))?;
    let api_version = if envelope.api_version.is_empty() { want_version } else { envelope.api_version };
    let kind = if envelope.kind.is_empty() { info.kind.to_string() } else { envelope.kind };
    match protobuf::decode_object(&api_version, &kind, envelope.raw) {
        Some(decoded) => decoded.map_err(|e| Some(e.to_string())),
        None => Ok(serde_json::json!({ "apiVersion": api_version, "kind": kind })),
    }
}

/// Checks kind and apiVersion against `info`, runs the object through its
/// struct and applies `fieldValidation` to unknown and duplicate fields
/// (also used for patched objects).
pub fn decode_value(
    info: &ResourceInfo,
    mut value: Value,
    duplicates: Vec<String>,
    validation: FieldValidation,
) -> Result<Decoded, ApiError> {
    let want_version = info.api_version();
    let kind = value.get("kind").and_then(Value::as_str).filter(|k| !k.is_empty()).unwrap_or(info.kind).to_string();
    let api_version =
        value.get("apiVersion").and_then(Value::as_str).filter(|v| !v.is_empty()).unwrap_or(&want_version).to_string();
    let version = api_version.rsplit('/').next().unwrap_or(&api_version).to_string();
    let cannot_handle = |why: String| {
        ApiError::BadRequest(format!("{kind} in version {version:?} cannot be handled as a {}: {why}", info.kind))
    };
    if kind != info.kind {
        let why = if typed::is_typed(&api_version, &kind) {
            format!(
                "converting ({version}.{kind}) to ({}.{}): unknown conversion",
                internal_package(info.group),
                info.kind
            )
        } else {
            format!("no kind {kind:?} is registered for version {api_version:?} in scheme \"pkg/api/legacyscheme/scheme.go:30\"")
        };
        return Err(cannot_handle(why));
    }
    if api_version != want_version {
        return Err(ApiError::BadRequest(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({want_version})"
        )));
    }
    value["apiVersion"] = Value::String(want_version.clone());
    value["kind"] = Value::String(info.kind.to_string());

    let mut problems: Vec<String> = duplicates.iter().map(|f| format!("duplicate field {f:?}")).collect();
    let object = match typed::decode(&want_version, info.kind, &value) {
        Some(Ok(decoded)) => {
            problems.extend(decoded.unknown_fields.iter().map(|f| format!("unknown field {f:?}")));
            decoded.object
        }
        Some(Err(e)) => return Err(cannot_handle(e.0)),
        None => value,
    };
    let mut warnings = Vec::new();
    match validation {
        FieldValidation::Strict if !problems.is_empty() => {
            return Err(cannot_handle(format!("strict decoding error: {}", problems.join(", "))));
        }
        FieldValidation::Warn => warnings = problems,
        _ => {}
    }
    Ok(Decoded { object, warnings })
}

/// The Go package of a group's internal types, as conversion errors name
/// it (`core` for the legacy group, `apps`, `rbac`, `networking`, …).
fn internal_package(group: &str) -> &str {
    if group.is_empty() {
        "core"
    } else {
        group.split('.').next().unwrap_or(group)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkube_apimachinery::registry::Registry;

    fn configmaps() -> ResourceInfo {
        Registry::builtin().lookup("", "v1", "configmaps").expect("configmaps are built in").clone()
    }

    #[test]
    fn strict_mode_refuses_unknown_and_duplicate_fields() {
        let body = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","name":"b"},"foo":1}"#;
        let e = decode(&configmaps(), body, BodyFormat::Json, FieldValidation::Strict).unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field "metadata.name", unknown field "foo""#
        );
        let ok = decode(&configmaps(), body, BodyFormat::Json, FieldValidation::Warn).unwrap();
        assert_eq!(ok.warnings, vec![r#"duplicate field "metadata.name""#, r#"unknown field "foo""#]);
        assert!(ok.object.get("foo").is_none());
    }

    #[test]
    fn wrong_kind_and_malformed_bodies_are_bad_requests() {
        let pod = br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}"#;
        let e = decode(&configmaps(), pod, BodyFormat::Json, FieldValidation::Ignore).unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"Pod in version "v1" cannot be handled as a ConfigMap: converting (v1.Pod) to (core.ConfigMap): unknown conversion"#
        );
        let e = decode(&configmaps(), b"{\"kind\":", BodyFormat::Json, FieldValidation::Ignore).unwrap_err();
        assert_eq!(e.code(), 400);
        assert!(e.to_string().starts_with("the object provided is unrecognized (must be of type ConfigMap)"), "{e}");
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(
            decode(&configmaps(), deep.as_bytes(), BodyFormat::Json, FieldValidation::Ignore).unwrap_err().code(),
            400
        );
    }

    #[test]
    fn protobuf_bodies_decode_for_tabled_kinds_and_are_415_otherwise() {
        let mut body = b"k8s\0\x0a\x0f\x0a\x02v1\x12\x09ConfigMap\x12\x0d".to_vec();
        body.extend(b"\x0a\x03\x0a\x01a\x12\x06\x0a\x01k\x12\x01v");
        let ok = decode(&configmaps(), &body, BodyFormat::Protobuf, FieldValidation::Strict).unwrap();
        assert_eq!(ok.object["metadata"]["name"], "a");
        assert_eq!(ok.object["data"], serde_json::json!({"k": "v"}));
        let e = decode(&configmaps(), b"{}", BodyFormat::Protobuf, FieldValidation::Strict).unwrap_err();
        assert_eq!(e.code(), 400);
        let revisions = Registry::builtin().lookup("apps", "v1", "controllerrevisions").unwrap().clone();
        let e = decode(&revisions, &body, BodyFormat::Protobuf, FieldValidation::Strict).unwrap_err();
        assert_eq!(e.code(), 415);
    }

    #[test]
    fn yaml_bodies_decode_and_fill_in_kind() {
        let ok =
            decode(&configmaps(), b"metadata:\n  name: a\ndata:\n  k: v\n", BodyFormat::Yaml, FieldValidation::Strict)
                .unwrap();
        assert_eq!(ok.object["kind"], "ConfigMap");
        assert_eq!(ok.object["data"]["k"], "v");
    }
}
