//! Content negotiation: the response format from `Accept` (JSON, YAML, a
//! `meta.k8s.io` Table or PartialObjectMetadata) and the request body
//! format from `Content-Type` (JSON, YAML, or protobuf for the built-in
//! kinds kubectl's typed clientset sends that way; see
//! `rkube_apimachinery::protobuf`).

use rkube_apimachinery::ApiError;

/// Media types rkube answers with.
const OUTPUT_TYPES: &str = "application/json, application/yaml";
/// Request body media types the server decodes (protobuf for the kinds
/// kubectl's typed client sends).
const INPUT_TYPES: &str = "application/json, application/yaml, application/vnd.kubernetes.protobuf";

/// `includeObject` of a Table request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IncludeObject {
    /// No object per row.
    None,
    /// A PartialObjectMetadata per row (the default).
    Metadata,
    /// The full object per row.
    Object,
}

/// The response format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `application/json`.
    Json,
    /// `application/yaml`.
    Yaml,
    /// `application/json;as=Table;g=meta.k8s.io;v=v1` (or v1beta1).
    Table {
        /// The Table's apiVersion (`meta.k8s.io/v1` or `/v1beta1`).
        v1beta1: bool,
        /// What each row carries.
        include: IncludeObject,
    },
    /// `application/json;as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1`.
    PartialMetadata,
}

/// A request body's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyFormat {
    /// `application/json` (also for an absent Content-Type).
    Json,
    /// `application/yaml`.
    Yaml,
    /// `application/vnd.kubernetes.protobuf`; kinds without a protobuf
    /// table still get [`unsupported_body_media_type`] when decoded.
    Protobuf,
}

struct MediaRange<'a> {
    essence: String,
    params: Vec<(String, &'a str)>,
    q: f32,
}

fn parse_accept(accept: &str) -> Vec<MediaRange<'_>> {
    let mut ranges: Vec<MediaRange<'_>> = accept
        .split(',')
        .filter_map(|part| {
            let mut pieces = part.split(';');
            let essence = pieces.next()?.trim().to_ascii_lowercase();
            if essence.is_empty() {
                return None;
            }
            let mut params = Vec::new();
            let mut q = 1.0;
            for p in pieces {
                let (k, v) = p.split_once('=')?;
                let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().trim_matches('"'));
                if k == "q" {
                    q = v.parse().unwrap_or(0.0);
                } else {
                    params.push((k, v));
                }
            }
            Some(MediaRange { essence, params, q })
        })
        .collect();
    ranges.sort_by(|a, b| b.q.partial_cmp(&a.q).unwrap_or(std::cmp::Ordering::Equal));
    ranges
}

/// Chooses the response format from `Accept` and `includeObject`; 406
/// `only the following media types are accepted: ...` when nothing fits.
pub fn output_format(accept: Option<&str>, include_object: Option<&str>) -> Result<Format, ApiError> {
    let accept = accept.unwrap_or("").trim();
    if accept.is_empty() {
        return Ok(Format::Json);
    }
    let include = match include_object.unwrap_or("") {
        "" | "Metadata" => IncludeObject::Metadata,
        "None" => IncludeObject::None,
        "Object" => IncludeObject::Object,
        other => {
            return Err(ApiError::BadRequest(format!(
                "includeObject: Unsupported value: {other:?}: supported values: \"Metadata\", \"None\", \"Object\""
            )))
        }
    };
    for range in parse_accept(accept) {
        if range.q <= 0.0 {
            continue;
        }
        let param = |k: &str| range.params.iter().find(|(pk, _)| pk == k).map(|(_, v)| *v);
        match param("as") {
            Some(as_kind) => {
                let meta_group = param("g") == Some("meta.k8s.io");
                let version = param("v");
                let json = range.essence == "application/json" || range.essence == "application/yaml";
                if !json || !meta_group || !matches!(version, Some("v1") | Some("v1beta1")) {
                    continue;
                }
                match as_kind {
                    "Table" => return Ok(Format::Table { v1beta1: version == Some("v1beta1"), include }),
                    "PartialObjectMetadata" | "PartialObjectMetadataList" => return Ok(Format::PartialMetadata),
                    _ => continue,
                }
            }
            None => match range.essence.as_str() {
                "application/json" | "application/*" | "*/*" => return Ok(Format::Json),
                "application/yaml" => return Ok(Format::Yaml),
                _ => continue,
            },
        }
    }
    Err(ApiError::NotAcceptable(format!("only the following media types are accepted: {OUTPUT_TYPES}")))
}

/// The format of a request body from its `Content-Type`; 415 for others.
pub fn body_format(content_type: Option<&str>) -> Result<BodyFormat, ApiError> {
    let essence = content_type.unwrap_or("").split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    match essence.as_str() {
        "" | "application/json" => Ok(BodyFormat::Json),
        "application/yaml" => Ok(BodyFormat::Yaml),
        rkube_apimachinery::protobuf::MEDIA_TYPE => Ok(BodyFormat::Protobuf),
        _ => Err(unsupported_body_media_type()),
    }
}

/// Upstream's 415 for a request body in a format the resource cannot
/// decode.
pub fn unsupported_body_media_type() -> ApiError {
    ApiError::UnsupportedMediaType(format!(
        "the body of the request was in an unknown format - accepted media types include: {INPUT_TYPES}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_table_accept_header_picks_the_v1_table() {
        let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(
            output_format(Some(accept), None).unwrap(),
            Format::Table { v1beta1: false, include: IncludeObject::Metadata }
        );
    }

    #[test]
    fn protobuf_first_falls_back_to_json_and_unknown_types_are_406() {
        assert_eq!(
            output_format(Some("application/vnd.kubernetes.protobuf,application/json"), None).unwrap(),
            Format::Json
        );
        assert_eq!(output_format(Some("application/yaml"), None).unwrap(), Format::Yaml);
        assert_eq!(output_format(None, None).unwrap(), Format::Json);
        let e = output_format(Some("text/html"), None).unwrap_err();
        assert_eq!(e.code(), 406);
    }

    #[test]
    fn body_formats_and_415() {
        assert_eq!(body_format(Some("application/yaml")).unwrap(), BodyFormat::Yaml);
        assert_eq!(body_format(None).unwrap(), BodyFormat::Json);
        assert_eq!(body_format(Some("application/vnd.kubernetes.protobuf")).unwrap(), BodyFormat::Protobuf);
        let e = body_format(Some("application/cbor")).unwrap_err();
        assert_eq!(e.code(), 415);
    }
}
