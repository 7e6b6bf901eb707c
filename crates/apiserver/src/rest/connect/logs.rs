//! `pods/{name}/log`: upstream's `LogREST` — the `PodLogOptions` of the
//! query, validated (`ValidatePodLogOptions`, 422 `PodLogOptions "x" is
//! invalid`), become a GET of the kubelet's
//! `/containerLogs/{namespace}/{pod}/{container}?…` (`LogLocation`), whose
//! body is streamed back as `text/plain` as it arrives (with `follow` the
//! kubelet never ends it; nothing is buffered). A kubelet answer outside
//! 200–206 becomes a `Status` as upstream's `GenericHttpResponseChecker`
//! builds it: 500 InternalError and 400 BadRequest carry the kubelet's body,
//! other codes the generic message of `NewGenericServerResponse`
//! (`the server could not find the requested resource ( pods/log x)`).

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use futures::StreamExt;
use rkube_apimachinery::validation::field::{ErrorList, FieldError, Path};
use rkube_apimachinery::ApiError;

use super::backend::Backend;
use crate::rest::query::Query;

/// Go's `time.RFC3339` layout, as parse errors print it.
const RFC3339_LAYOUT: &str = "2006-01-02T15:04:05Z07:00";
/// How much of a kubelet error body becomes the message (upstream's `maxReadLength`).
const MAX_ERROR_BODY: usize = 50_000;

/// `PodLogOptions` from the query.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogOptions {
    /// `follow`: stream until the container ends or the client leaves.
    pub follow: bool,
    /// `previous`: the previous instance of the container.
    pub previous: bool,
    /// `timestamps`: prefix each line with its RFC3339Nano time.
    pub timestamps: bool,
    /// `sinceSeconds`: only lines newer than this many seconds.
    pub since_seconds: Option<i64>,
    /// `sinceTime`: only lines after this time (seconds since the epoch).
    pub since_time: Option<jiff::Timestamp>,
    /// `tailLines`: only the last lines.
    pub tail_lines: Option<i64>,
    /// `limitBytes`: at most this many bytes.
    pub limit_bytes: Option<i64>,
    /// `insecureSkipTLSVerifyBackend`: do not verify the kubelet's serving
    /// certificate (not part of the kubelet query).
    pub insecure_skip_tls_verify_backend: bool,
}

impl LogOptions {
    /// Decodes the query as upstream's parameter codec: malformed booleans,
    /// integers and times are 400 BadRequest with Go's parse error.
    pub fn from_query(query: &Query) -> Result<LogOptions, ApiError> {
        let since_time = match query.get("sinceTime").filter(|v| !v.is_empty() && *v != "null") {
            None => None,
            Some(v) => Some(v.parse::<jiff::Timestamp>().map_err(|_| {
                ApiError::BadRequest(format!(
                    "parsing time {v:?} as {RFC3339_LAYOUT:?}: cannot parse {v:?} as \"2006\""
                ))
            })?),
        };
        Ok(LogOptions {
            follow: query.bool("follow")?.unwrap_or(false),
            previous: query.bool("previous")?.unwrap_or(false),
            timestamps: query.bool("timestamps")?.unwrap_or(false),
            since_seconds: query.int("sinceSeconds")?,
            since_time,
            tail_lines: query.int("tailLines")?,
            limit_bytes: query.int("limitBytes")?,
            insecure_skip_tls_verify_backend: query.bool("insecureSkipTLSVerifyBackend")?.unwrap_or(false),
        })
    }

    /// Upstream's `ValidatePodLogOptions`; 422 on `PodLogOptions` named
    /// after the pod.
    pub fn validate(&self, pod: &str) -> Result<(), ApiError> {
        let mut errs = ErrorList::new();
        if let Some(n) = self.tail_lines.filter(|n| *n < 0) {
            errs.push(FieldError::invalid(&Path::new("tailLines"), n, "must be greater than or equal to 0"));
        }
        if let Some(n) = self.limit_bytes.filter(|n| *n < 1) {
            errs.push(FieldError::invalid(&Path::new("limitBytes"), n, "must be greater than 0"));
        }
        match (self.since_seconds, self.since_time) {
            (Some(_), Some(_)) => errs.push(FieldError::forbidden(
                &Path::new(""),
                "at most one of `sinceTime` or `sinceSeconds` may be specified",
            )),
            (Some(n), None) if n < 1 => {
                errs.push(FieldError::invalid(&Path::new("sinceSeconds"), n, "must be greater than 0"))
            }
            _ => {}
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(errs.into_invalid("", "PodLogOptions", pod))
        }
    }

    /// The kubelet query (`url.Values.Encode`: keys sorted; `sinceTime` in
    /// RFC 3339 at whole seconds, UTC).
    pub fn kubelet_query(&self) -> String {
        let mut params: Vec<(&str, String)> = Vec::new();
        if self.follow {
            params.push(("follow", "true".into()));
        }
        if let Some(n) = self.limit_bytes {
            params.push(("limitBytes", n.to_string()));
        }
        if self.previous {
            params.push(("previous", "true".into()));
        }
        if let Some(n) = self.since_seconds {
            params.push(("sinceSeconds", n.to_string()));
        }
        if let Some(t) = self.since_time {
            params.push(("sinceTime", t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string().replace(':', "%3A")));
        }
        if let Some(n) = self.tail_lines {
            params.push(("tailLines", n.to_string()));
        }
        if self.timestamps {
            params.push(("timestamps", "true".into()));
        }
        params.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&")
    }
}

/// The kubelet path of a container's log with `options`.
pub fn log_path(namespace: &str, pod: &str, container: &str, options: &LogOptions) -> String {
    let mut path = format!("/containerLogs/{namespace}/{pod}/{container}");
    let query = options.kubelet_query();
    if !query.is_empty() {
        path.push('?');
        path.push_str(&query);
    }
    path
}

/// GETs `path` from the kubelet and streams the log back; `pod` names the
/// object in errors. A failed request is upstream's plain 500 `Get
/// "https://…": <error>`.
pub async fn stream(kubelet: &Backend, path: &str, pod: &str) -> Result<Response, ApiError> {
    let url = format!("{}://{}{}", kubelet.scheme(), kubelet.authority(), path);
    let request = hyper::Request::get(path).body(Body::empty()).map_err(|e| ApiError::Internal(e.to_string()))?;
    let response = kubelet.send(request).await.map_err(|e| ApiError::Generic {
        code: 500,
        reason: "",
        message: format!("Get {url:?}: {e}"),
    })?;
    let status = response.status();
    if !(200..=206).contains(&status.as_u16()) {
        let body = read_limited(response.into_body()).await;
        return Err(kubelet_error(status, &body, pod));
    }
    let mut out = Response::new(Body::new(response.into_body()));
    out.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    Ok(out)
}

/// Up to [`MAX_ERROR_BODY`] bytes of an error body, as text.
pub async fn read_limited(body: hyper::body::Incoming) -> String {
    let mut data = Body::new(body).into_data_stream();
    let mut buf = Vec::new();
    while buf.len() < MAX_ERROR_BODY {
        match data.next().await {
            Some(Ok(chunk)) => buf.extend_from_slice(&chunk),
            _ => break,
        }
    }
    buf.truncate(MAX_ERROR_BODY);
    String::from_utf8_lossy(&buf).into_owned()
}

/// Upstream's `GenericHttpResponseChecker.Check` for `pods/log` of `pod`.
pub fn kubelet_error(status: StatusCode, body: &str, pod: &str) -> ApiError {
    match status.as_u16() {
        500 => ApiError::Internal(body.to_string()),
        400 => ApiError::BadRequest(body.to_string()),
        code => {
            let (reason, message) = generic_response(code, body);
            ApiError::Generic { code, reason, message: format!("{message} ( pods/log {pod})") }
        }
    }
}

/// Reason and message of upstream's `NewGenericServerResponse` for a code.
fn generic_response(code: u16, server_message: &str) -> (&'static str, String) {
    let (reason, message): (&'static str, &str) = match code {
        409 => ("Conflict", "the server reported a conflict"),
        404 => ("NotFound", "the server could not find the requested resource"),
        400 => ("BadRequest", "the server rejected our request for an unknown reason"),
        401 => ("Unauthorized", "the server has asked for the client to provide credentials"),
        403 => ("Forbidden", server_message),
        406 => ("NotAcceptable", "the server was unable to respond with a content type that the client supports"),
        415 => {
            ("UnsupportedMediaType", "the server was unable to respond with a content type that the client supports")
        }
        405 => ("MethodNotAllowed", "the server does not allow this method on the requested resource"),
        422 => ("Invalid", "the server rejected our request due to an error in our request"),
        503 => ("ServiceUnavailable", "the server is currently unable to handle the request"),
        504 => (
            "Timeout",
            "the server was unable to return a response in the time allotted, but may still be processing the request",
        ),
        429 => ("TooManyRequests", "the server has received too many requests and has asked us to try again later"),
        c if c >= 500 => {
            return (
                "InternalError",
                format!("an error on the server ({server_message:?}) has prevented the request from succeeding"),
            )
        }
        _ => ("", ""),
    };
    if message.is_empty() && reason.is_empty() {
        return ("", format!("the server responded with the status code {code} but did not return more information"));
    }
    (reason, message.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Options decode and validate as upstream's, and become the kubelet
    /// query of `LogLocation` (keys sorted, sinceTime as RFC 3339).
    #[test]
    fn log_options_and_kubelet_query() {
        let q = Query::parse(Some("follow=true&tailLines=10&timestamps=1&sinceTime=2024-05-01T10:00:00.5%2B02:00"));
        let opts = LogOptions::from_query(&q).unwrap();
        opts.validate("p").unwrap();
        assert_eq!(
            log_path("ns", "p", "c", &opts),
            "/containerLogs/ns/p/c?follow=true&sinceTime=2024-05-01T08%3A00%3A00Z&tailLines=10&timestamps=true"
        );
        let bad = LogOptions::from_query(&Query::parse(Some("tailLines=-1&limitBytes=0"))).unwrap();
        assert_eq!(
            bad.validate("p").unwrap_err().to_string(),
            "PodLogOptions \"p\" is invalid: [tailLines: Invalid value: -1: must be greater than or equal to 0, limitBytes: Invalid value: 0: must be greater than 0]"
        );
        let both =
            LogOptions::from_query(&Query::parse(Some("sinceSeconds=5&sinceTime=2024-05-01T10:00:00Z"))).unwrap();
        assert_eq!(
            both.validate("p").unwrap_err().to_string(),
            "PodLogOptions \"p\" is invalid: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"
        );
        let e = LogOptions::from_query(&Query::parse(Some("tailLines=x"))).unwrap_err();
        assert_eq!(e.to_string(), "strconv.ParseInt: parsing \"x\": invalid syntax");
    }

    use crate::testing::pki;

    /// A kubelet whose serving certificate another CA signed: the log GET
    /// fails as Go's TLS verification does, unless
    /// `insecureSkipTLSVerifyBackend` skips the check (the client
    /// certificate is still presented and checked by the kubelet).
    #[tokio::test]
    async fn insecure_skip_tls_verify_backend() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let ((_d1, pki), (_d2, other)) = (pki(), pki());
        let client = super::super::kubelet::KubeletClient::from_pem(
            &pki.ca.cert_pem,
            &pki.kubelet_client.cert_pem,
            &pki.kubelet_client.key_pem,
        )
        .unwrap();
        let material = crate::tls::TlsMaterial {
            serving_cert_pem: other.serving.cert_pem.clone(),
            serving_key_pem: other.serving.key_pem.clone(),
            client_ca_pem: pki.ca.cert_pem.clone(),
        };
        let acceptor = tokio_rustls::TlsAcceptor::from(crate::tls::server_config(&material).unwrap());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = u64::from(listener.local_addr().unwrap().port());
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let Ok(mut tls) = acceptor.accept(tcp).await else { continue };
                let mut buf = vec![0u8; 4096];
                let _ = tls.read(&mut buf).await;
                let _ = tls.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nhi\n").await;
                let _ = tls.shutdown().await;
            }
        });
        let path = "/containerLogs/ns/p/c";
        let err = stream(&client.backend("127.0.0.1", port), path, "p").await.unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("Get \"https://127.0.0.1:{port}{path}\": tls: failed to verify certificate: x509: certificate signed by unknown authority")
        );
        let resp = stream(&client.insecure_backend("127.0.0.1", port), path, "p").await.unwrap();
        assert_eq!(resp.headers()[header::CONTENT_TYPE], "text/plain");
        let body = axum::body::to_bytes(resp.into_body(), 1024).await.unwrap();
        assert_eq!(&body[..], b"hi\n");
    }

    /// The kubelet's error statuses as `GenericHttpResponseChecker` maps them.
    #[test]
    fn kubelet_errors() {
        let e = kubelet_error(StatusCode::NOT_FOUND, "404 page not found", "p");
        assert_eq!(
            (e.code(), e.to_string()),
            (404, "the server could not find the requested resource ( pods/log p)".into())
        );
        let e = kubelet_error(StatusCode::BAD_REQUEST, "container \"c\" is waiting to start", "p");
        assert_eq!((e.code(), e.to_string()), (400, "container \"c\" is waiting to start".into()));
        let e = kubelet_error(StatusCode::INTERNAL_SERVER_ERROR, "boom", "p");
        assert_eq!(e.to_string(), "Internal error occurred: boom");
        let e = kubelet_error(StatusCode::FORBIDDEN, "Forbidden (user=x)", "p");
        assert_eq!(e.to_string(), "Forbidden (user=x) ( pods/log p)");
    }
}
