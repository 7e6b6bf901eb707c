//! Writing successful responses in the negotiated format, with the
//! `Warning` headers collected while serving the request.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use rkube_apimachinery::registry::ResourceInfo;
use serde_json::Value;

use super::negotiate::Format;
use super::table;

/// `Warning: 299 - "<text>"` as upstream's warning recorder writes it.
pub fn warning_header(text: &str) -> HeaderValue {
    let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
    HeaderValue::from_str(&format!("299 - \"{escaped}\""))
        .unwrap_or_else(|_| HeaderValue::from_static("299 - \"invalid warning\""))
}

/// Appends `warnings` to a response as `Warning` headers (what admission
/// left on a request whose handler built the response itself).
pub fn add_warnings(mut resp: Response, warnings: &[String]) -> Response {
    for w in warnings {
        resp.headers_mut().append(header::WARNING, warning_header(w));
    }
    resp
}

/// Serializes `body` (an object or list of `info`, or a Status) as
/// `format` asks and adds `warnings`.
pub fn reply(status: StatusCode, body: Value, format: Format, info: &ResourceInfo, warnings: &[String]) -> Response {
    let body = match (format, table::is_list(info, &body)) {
        (Format::Table { v1beta1, include }, Some(true)) => table::list_table(
            info,
            body["items"].as_array().map_or(&[][..], |v| v),
            &body["metadata"],
            include,
            v1beta1,
        ),
        (Format::Table { v1beta1, include }, Some(false)) => table::object_table(info, &body, include, v1beta1, true),
        (Format::PartialMetadata, Some(true)) => {
            table::partial_metadata_list(body["items"].as_array().map_or(&[][..], |v| v), &body["metadata"])
        }
        (Format::PartialMetadata, Some(false)) => table::partial_metadata(&body),
        _ => body,
    };
    let (content_type, bytes) = match format {
        Format::Yaml => ("application/yaml", serde_yaml::to_string(&body).unwrap_or_default().into_bytes()),
        _ => {
            let mut b = serde_json::to_vec(&body).expect("a JSON value always serializes");
            b.push(b'\n');
            ("application/json", b)
        }
    };
    let mut resp = (status, [(header::CONTENT_TYPE, content_type)], bytes).into_response();
    for w in warnings {
        resp.headers_mut().append(header::WARNING, warning_header(w));
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_are_quoted_and_escaped() {
        assert_eq!(warning_header(r#"unknown field "spec.foo""#), r#"299 - "unknown field \"spec.foo\"""#);
    }
}
