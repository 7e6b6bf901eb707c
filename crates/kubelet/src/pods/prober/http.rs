//! The `httpGet` handler (upstream's `pkg/probe/http`): one GET with
//! `User-Agent: kube-probe/1.33` and `Accept: */*` unless the probe's
//! `httpHeaders` set them (an empty Accept removes it; a `Host` header sets
//! the request's Host), no keep-alive, no proxy, HTTPS without certificate
//! verification. 200–399 is success; redirects are followed only to the same
//! host (at most 10) — a redirect elsewhere is not followed and counts as a
//! success with a warning. The body is read up to 10 KiB; a failure message
//! never contains it (`HTTP probe failed with statuscode: 500`).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

use super::results::{go_quote, join_host_port, Outcome, MAX_OUTPUT, USER_AGENT};

/// Go's client stops after this many redirects.
const MAX_REDIRECTS: usize = 10;

/// Where an HTTP probe goes: the resolved `httpGet` action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpTarget {
    /// `http` or `https` (the probe's scheme, lower-cased).
    pub scheme: String,
    /// The probe's `host`, or the pod IP when unset.
    pub host: String,
    /// The resolved port number.
    pub port: u16,
    /// The probe's `path` (may carry a query).
    pub path: String,
    /// The probe's `httpHeaders`, in order (names as written).
    pub headers: Vec<(String, String)>,
}

/// A URL as the probe follows it.
#[derive(Clone, Debug)]
struct Url {
    scheme: String,
    host: String,
    port: u16,
    path: String,
}

impl Url {
    fn authority(&self) -> String {
        join_host_port(&self.host, self.port)
    }

    /// As Go's `url.URL.String` prints it (for error messages).
    fn to_go_string(&self) -> String {
        format!("{}://{}{}", self.scheme, self.authority(), self.path)
    }

    /// Resolves a `Location` header against this URL; `None` if it is not http(s).
    fn join(&self, loc: &str) -> Option<Url> {
        let loc = loc.split('#').next().unwrap_or("");
        let absolute = if loc.starts_with("//") { format!("{}:{loc}", self.scheme) } else { loc.to_string() };
        if absolute.starts_with("http://") || absolute.starts_with("https://") {
            let uri: http::Uri = absolute.parse().ok()?;
            let scheme = uri.scheme_str()?.to_ascii_lowercase();
            let host = uri.host()?.trim_start_matches('[').trim_end_matches(']').to_string();
            let port = uri.port_u16().unwrap_or(if scheme == "https" { 443 } else { 80 });
            let path = uri.path_and_query().map(|p| p.as_str().to_string()).unwrap_or_default();
            return Some(Url { scheme, host, port, path });
        }
        let path = if loc.starts_with('/') {
            loc.to_string()
        } else {
            let base = self.path.split('?').next().unwrap_or("");
            let dir = base.rfind('/').map(|i| &base[..=i]).unwrap_or("/");
            format!("{dir}{loc}")
        };
        Some(Url { path, ..self.clone() })
    }
}

/// Runs the HTTP probe against `target`; `timeout` covers the whole exchange
/// (connect, redirects, headers and body), as Go's `http.Client.Timeout`.
pub async fn probe_http(target: &HttpTarget, timeout: Duration) -> Outcome {
    let deadline = Instant::now() + timeout;
    let path = match target.path.as_str() {
        "" => String::new(),
        p if p.starts_with('/') => p.to_string(),
        p => format!("/{p}"),
    };
    let first = Url { scheme: target.scheme.clone(), host: target.host.clone(), port: target.port, path };
    let (mut host_header, headers) = request_headers(&target.headers);
    let mut url = first.clone();
    let mut redirects = 0;
    loop {
        let fut = send(&url, host_header.as_deref(), &headers);
        let resp = match tokio::time::timeout_at(deadline, fut).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => return Outcome::Failure(format!("Get {}: {e}", go_quote(&url.to_go_string()))),
            Err(_) => {
                return Outcome::Failure(format!(
                    "Get {}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
                    go_quote(&url.to_go_string())
                ))
            }
        };
        let status = resp.status().as_u16();
        let location = resp.headers().get(http::header::LOCATION).and_then(|v| v.to_str().ok()).map(str::to_string);
        if let (true, Some(loc)) = (matches!(status, 301 | 302 | 303 | 307 | 308), location) {
            if let Some(next) = url.join(&loc) {
                // Only same-host redirects are followed (upstream's RedirectChecker);
                // otherwise the 3xx itself is the answer.
                if next.host == first.host {
                    if redirects >= MAX_REDIRECTS {
                        return Outcome::Failure(format!(
                            "Get {}: stopped after {MAX_REDIRECTS} redirects",
                            go_quote(&loc)
                        ));
                    }
                    redirects += 1;
                    // Go keeps a custom Host only through relative redirects.
                    if loc.contains("://") || loc.starts_with("//") {
                        host_header = None;
                    }
                    url = next;
                    continue;
                }
            }
        }
        let body = match tokio::time::timeout_at(deadline, read_body(resp.into_body())).await {
            Ok(Ok(b)) => b,
            Ok(Err(e)) => return Outcome::Error(e),
            Err(_) => {
                return Outcome::Error(
                    "context deadline exceeded (Client.Timeout or context cancellation while reading body)".into(),
                )
            }
        };
        tracing::trace!(component = "kubelet", url = %url.to_go_string(), status, "HTTP probe answered");
        return match status {
            200..=299 => Outcome::Success(body),
            300..=399 => Outcome::Warning(format!("Probe terminated redirects, Response body: {body}")),
            _ => Outcome::Failure(format!("HTTP probe failed with statuscode: {status}")),
        };
    }
}

/// The request headers: the probe's, plus User-Agent and Accept defaults;
/// the `Host` header is taken out (it becomes the request's Host).
fn request_headers(spec: &[(String, String)]) -> (Option<String>, Vec<(String, String)>) {
    let has = |n: &str| spec.iter().any(|(k, _)| k.eq_ignore_ascii_case(n));
    let host =
        spec.iter().find(|(k, _)| k.eq_ignore_ascii_case("host")).map(|(_, v)| v.clone()).filter(|v| !v.is_empty());
    let mut out: Vec<(String, String)> =
        spec.iter().filter(|(k, _)| !k.eq_ignore_ascii_case("host")).cloned().collect();
    if !has("user-agent") {
        out.push(("User-Agent".into(), USER_AGENT.into()));
    }
    if !has("accept") {
        out.push(("Accept".into(), "*/*".into()));
    } else if spec.iter().find(|(k, _)| k.eq_ignore_ascii_case("accept")).is_some_and(|(_, v)| v.is_empty()) {
        // An Accept header overridden with an empty value is dropped.
        out.retain(|(k, _)| !k.eq_ignore_ascii_case("accept"));
    }
    (host, out)
}

/// One GET on a fresh connection.
async fn send(
    url: &Url,
    host: Option<&str>,
    headers: &[(String, String)],
) -> Result<hyper::Response<Incoming>, String> {
    let mut req = hyper::Request::get(if url.path.is_empty() { "/" } else { url.path.as_str() })
        .header(http::header::HOST, host.map(str::to_string).unwrap_or_else(|| url.authority()))
        .header(http::header::CONNECTION, "close");
    for (k, v) in headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let req = req.body(Empty::<Bytes>::new()).map_err(|e| format!("invalid probe request: {e}"))?;
    // The dial has its own timeout inside the caller's overall deadline.
    let tcp = super::tcp::dial(&url.host, url.port, Duration::from_secs(3600)).await?;
    if url.scheme == "https" {
        let name = ServerName::try_from(url.host.clone()).map_err(|e| e.to_string())?;
        let tls = tokio_rustls::TlsConnector::from(tls_config()).connect(name, tcp).await.map_err(|e| e.to_string())?;
        request_over(tls, req).await
    } else {
        request_over(tcp, req).await
    }
}

async fn request_over<S>(io: S, req: hyper::Request<Empty<Bytes>>) -> Result<hyper::Response<Incoming>, String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(TokioIo::new(io)).await.map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    sender.send_request(req).await.map_err(|e| e.to_string())
}

/// Reads at most [`MAX_OUTPUT`] bytes of the body (truncation is not an error).
async fn read_body(mut body: Incoming) -> Result<String, String> {
    let mut buf = Vec::new();
    while buf.len() < MAX_OUTPUT {
        match body.frame().await {
            None => break,
            Some(Err(e)) => return Err(e.to_string()),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    let take = data.len().min(MAX_OUTPUT - buf.len());
                    buf.extend_from_slice(&data[..take]);
                }
            }
        }
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// TLS without certificate verification (upstream: `InsecureSkipVerify`);
/// handshake signatures are still checked.
fn tls_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = rustls::ClientConfig::builder_with_provider(provider.clone())
                .with_safe_default_protocol_versions()
                .expect("ring supports the default TLS versions")
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
                .with_no_client_auth();
            Arc::new(config)
        })
        .clone()
}

#[derive(Debug)]
struct NoVerify(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
