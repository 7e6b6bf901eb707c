//! `Status` error responses (`meta/v1` `Status`), the one place where an
//! API error becomes the JSON body clients decode.
//!
//! kubectl prints `Error from server (<reason>): <message>` from these
//! fields; client-go branches on `reason` and `code`.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

/// An API error: HTTP status code, `reason` (`NotFound`, `Conflict`, …) and
/// a human-readable message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusError {
    /// HTTP status, repeated as the body's `code`.
    pub code: StatusCode,
    /// The machine-readable `StatusReason`.
    pub reason: &'static str,
    /// The message kubectl shows.
    pub message: String,
}

impl StatusError {
    /// 404 for a path no handler serves, with upstream's exact message
    /// (`the server could not find the requested resource`).
    pub fn path_not_found() -> Self {
        StatusError {
            code: StatusCode::NOT_FOUND,
            reason: "NotFound",
            message: "the server could not find the requested resource".into(),
        }
    }

    /// The `Status` object: `{"kind":"Status","apiVersion":"v1","metadata":{},
    /// "status":"Failure","message":…,"reason":…,"details":{},"code":…}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "details": {},
            "code": self.code.as_u16(),
        })
    }
}

impl IntoResponse for StatusError {
    fn into_response(self) -> Response {
        let mut body = serde_json::to_vec(&self.to_json()).expect("a JSON value always serializes");
        body.push(b'\n');
        (self.code, [(header::CONTENT_TYPE, "application/json")], body).into_response()
    }
}
