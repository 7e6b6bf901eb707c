//! The one place where an API error becomes an HTTP response: a
//! `meta/v1` `Status` body with the error's code, reason, message and
//! details (see `rkube_apimachinery::errors`).
//!
//! kubectl prints `Error from server (<reason>): <message>` from these
//! fields; client-go branches on `reason` and `code`, and retries 429 and
//! 5xx answers that carry `Retry-After`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use rkube_apimachinery::ApiError;

/// An [`ApiError`] on its way to the client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusError(pub ApiError);

impl StatusError {
    /// 404 for a path no handler serves, with upstream's exact message
    /// (`the server could not find the requested resource`).
    pub fn path_not_found() -> Self {
        StatusError(ApiError::PathNotFound)
    }
}

impl From<ApiError> for StatusError {
    fn from(e: ApiError) -> Self {
        StatusError(e)
    }
}

impl IntoResponse for StatusError {
    fn into_response(self) -> Response {
        error_response(&self.0)
    }
}

/// The HTTP response of `err`: its code, `Content-Type: application/json`,
/// the `Status` body, and `Retry-After` when the error asks the client to
/// retry later.
pub fn error_response(err: &ApiError) -> Response {
    let status = err.to_status();
    let mut body = serde_json::to_vec(&status).expect("a JSON value always serializes");
    body.push(b'\n');
    let code = StatusCode::from_u16(err.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut resp = (code, [(header::CONTENT_TYPE, "application/json")], body).into_response();
    if let Some(secs) = status["details"]["retryAfterSeconds"].as_u64().filter(|s| *s > 0) {
        resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_become_status_responses_with_their_code() {
        let resp = error_response(&ApiError::PathNotFound);
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);
        assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/json");
        let busy = ApiError::TooManyRequests { message: "slow down".into(), retry_after_seconds: 3 };
        assert_eq!(error_response(&busy).headers()[header::RETRY_AFTER], "3");
    }
}
