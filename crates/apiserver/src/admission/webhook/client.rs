//! Calling an admission webhook: `clientConfig.url` or `clientConfig.service`
//! (the Service's ClusterIP, the certificate checked for
//! `<name>.<namespace>.svc` as upstream's service resolver does), TLS
//! trusting `caBundle`, an HTTP/1.1 `POST` of the AdmissionReview with
//! upstream's `?timeout=Ns` parameter, and the whole call bounded by
//! `timeoutSeconds`.
//!
//! Errors carry Go's wording after upstream's `Post "<url>": ` prefix
//! (`dial tcp …: connect: connection refused`, `context deadline
//! exceeded`, `tls: failed to verify certificate: …`), which the plugins
//! wrap as `failed calling webhook "<name>": failed to call webhook: …`.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;

use super::super::plugins::Stores;

/// Largest webhook response read (upstream bounds responses likewise).
const MAX_RESPONSE_BYTES: usize = 3 * 1024 * 1024;

/// Where one webhook is reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// The URL as upstream prints it in errors (without the timeout query).
    pub url: String,
    /// Address dialled (`host:port`).
    pub dial: String,
    /// TLS server name checked against the certificate.
    pub server_name: String,
    /// Origin-form request target (`/path?query`).
    pub target: String,
    /// `Host` header.
    pub host_header: String,
    /// Why the Service could not be resolved to an address (upstream's
    /// service resolver runs when the client dials, so this fails the
    /// call as `Post "<url>?timeout=Ns": <why>`).
    pub unresolved: Option<String>,
}

/// Splits `https://host[:port][/path][?query]` into an [`Endpoint`].
pub fn endpoint_from_url(url: &str) -> Result<Endpoint, String> {
    let rest = url.strip_prefix("https://").ok_or_else(|| format!("unsupported scheme in webhook URL {url:?}"))?;
    let (authority, target) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], rest[i..].to_string()),
        None => (rest, String::new()),
    };
    let target = if target.starts_with('?') || target.is_empty() { format!("/{target}") } else { target };
    let (host, port) = split_host_port(authority)?;
    Ok(Endpoint {
        url: url.to_string(),
        dial: join_host_port(&host, port),
        server_name: host,
        target,
        host_header: authority.to_string(),
        unresolved: None,
    })
}

fn split_host_port(authority: &str) -> Result<(String, u16), String> {
    if let Some(v6) = authority.strip_prefix('[') {
        let (host, rest) = v6.split_once(']').ok_or_else(|| format!("invalid host {authority:?}"))?;
        let port = match rest.strip_prefix(':') {
            Some(p) => p.parse().map_err(|_| format!("invalid port {p:?}"))?,
            None => 443,
        };
        return Ok((host.to_string(), port));
    }
    match authority.rsplit_once(':') {
        Some((h, p)) => Ok((h.to_string(), p.parse().map_err(|_| format!("invalid port {p:?}"))?)),
        None => Ok((authority.to_string(), 443)),
    }
}

fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// The endpoint of a webhook's `clientConfig`: its `url`, or its
/// `service` resolved to the Service's ClusterIP (port default 443).
/// A Service that is missing or has no route (`clusterIP: None`) still
/// yields the endpoint, with [`Endpoint::unresolved`] saying why (upstream's
/// `ResolveCluster` messages, e.g. `service "<name>" not found`).
pub fn resolve(client_config: &Value, stores: &Stores) -> Result<Endpoint, String> {
    if let Some(url) = client_config.get("url").and_then(Value::as_str) {
        return endpoint_from_url(url);
    }
    let svc = client_config.get("service").ok_or("webhook has no url or service")?;
    let ns = svc.get("namespace").and_then(Value::as_str).unwrap_or("");
    let name = svc.get("name").and_then(Value::as_str).unwrap_or("");
    let port = svc.get("port").and_then(Value::as_u64).unwrap_or(443) as u16;
    let path = svc.get("path").and_then(Value::as_str).unwrap_or("");
    let host = format!("{name}.{ns}.svc");
    let service = stores.get(&("", "v1", "services")).and_then(|s| s.get_cached(ns, name));
    let ip = service.as_ref().and_then(|s| s.pointer("/spec/clusterIP")).and_then(Value::as_str).unwrap_or("");
    let unresolved = match &service {
        None => Some(format!("service \"{name}\" not found")),
        Some(_) if ip == "None" => Some(r#"cannot route to service with ClusterIP "None""#.to_string()),
        Some(_) if ip.is_empty() => Some(format!("service \"{name}\" has no cluster IP")),
        Some(_) => None,
    };
    let target = if path.is_empty() { "/".to_string() } else { path.to_string() };
    Ok(Endpoint {
        url: format!("https://{host}:{port}{path}"),
        dial: join_host_port(ip, port),
        server_name: host.clone(),
        target,
        host_header: format!("{host}:{port}"),
        unresolved,
    })
}

/// TLS client settings trusting the PEM certificates of `ca_bundle`
/// (base64 of PEM, as the API carries it); none trusted when absent.
pub fn tls_config(client_config: &Value) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    if let Some(b64) = client_config.get("caBundle").and_then(Value::as_str).filter(|s| !s.is_empty()) {
        let pem = base64::engine::general_purpose::STANDARD.decode(b64).map_err(|e| format!("caBundle: {e}"))?;
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| format!("caBundle: {e}"))?;
            roots.add(cert).map_err(|e| format!("caBundle: {e}"))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// Posts `review` to `endpoint` and decodes the JSON answer, all within
/// `timeout`. The error is Go's text: `Post "<url>?timeout=Ns": <why>`.
pub async fn post(
    endpoint: &Endpoint,
    tls: Arc<rustls::ClientConfig>,
    review: &Value,
    timeout: Duration,
) -> Result<Value, String> {
    let query = format!("timeout={}s", timeout.as_secs().max(1));
    let sep = if endpoint.target.contains('?') { '&' } else { '?' };
    let url = format!("{}{}{}", endpoint.url, if endpoint.url.contains('?') { '&' } else { '?' }, query);
    let target = format!("{}{sep}{query}", endpoint.target);
    let body = serde_json::to_vec(review).map_err(|e| e.to_string())?;
    match tokio::time::timeout(timeout, exchange(endpoint, tls, &target, body)).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(format!("Post {url:?}: {e}")),
        Err(_) => Err(format!("Post {url:?}: context deadline exceeded")),
    }
}

async fn exchange(
    endpoint: &Endpoint,
    tls: Arc<rustls::ClientConfig>,
    target: &str,
    body: Vec<u8>,
) -> Result<Value, String> {
    if let Some(why) = &endpoint.unresolved {
        return Err(why.clone());
    }
    let tcp = tokio::net::TcpStream::connect(&endpoint.dial).await.map_err(|e| {
        let why = match e.kind() {
            std::io::ErrorKind::ConnectionRefused => "connect: connection refused".to_string(),
            _ => e.to_string(),
        };
        format!("dial tcp {}: {why}", endpoint.dial)
    })?;
    let _ = tcp.set_nodelay(true);
    let name = match endpoint.server_name.parse::<IpAddr>() {
        Ok(ip) => ServerName::IpAddress(ip.into()),
        Err(_) => ServerName::try_from(endpoint.server_name.clone()).map_err(|e| format!("tls: {e}"))?,
    };
    let stream = tokio_rustls::TlsConnector::from(tls).connect(name, tcp).await.map_err(|e| tls_error(&e))?;
    let (mut sender, conn) = http1::handshake(TokioIo::new(stream)).await.map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!(component = crate::COMPONENT, error = %e, "webhook connection ended");
        }
    });
    let request = hyper::Request::post(target)
        .header(hyper::header::HOST, &endpoint.host_header)
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .header(hyper::header::ACCEPT, "application/json, */*")
        .body(axum::body::Body::from(body))
        .map_err(|e| e.to_string())?;
    let response = sender.send_request(request).await.map_err(|e| {
        if e.is_incomplete_message() || e.is_closed() {
            "EOF".to_string()
        } else {
            e.to_string()
        }
    })?;
    let status = response.status();
    let bytes = axum::body::to_bytes(axum::body::Body::new(response.into_body()), MAX_RESPONSE_BYTES)
        .await
        .map_err(|e| e.to_string())?;
    if !status.is_success() {
        // client-go: a Status body is the error; otherwise a generic one.
        if let Ok(s) = serde_json::from_slice::<Value>(&bytes) {
            if s.get("kind").and_then(Value::as_str) == Some("Status") {
                return Err(s.get("message").and_then(Value::as_str).unwrap_or_default().to_string());
            }
        }
        return Err(if bytes.is_empty() {
            format!("the server responded with the status code {} but did not return more information", status.as_u16())
        } else {
            format!(
                "an error on the server ({:?}) has prevented the request from succeeding",
                String::from_utf8_lossy(&bytes).trim()
            )
        });
    }
    serde_json::from_slice(&bytes).map_err(|e| format!("unable to decode the response: {e}"))
}

/// A TLS failure in Go's words for an untrusted certificate.
fn tls_error(e: &std::io::Error) -> String {
    let unknown = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()).is_some_and(|r| {
        matches!(
            r,
            rustls::Error::InvalidCertificate(
                rustls::CertificateError::UnknownIssuer | rustls::CertificateError::BadSignature
            )
        )
    });
    if unknown {
        "tls: failed to verify certificate: x509: certificate signed by unknown authority".into()
    } else {
        format!("tls: {e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn urls_split_into_dial_address_name_and_target() {
        let e = endpoint_from_url("https://127.0.0.1:8443/mutate?x=1").unwrap();
        assert_eq!(
            (e.dial.as_str(), e.server_name.as_str(), e.target.as_str()),
            ("127.0.0.1:8443", "127.0.0.1", "/mutate?x=1")
        );
        let e = endpoint_from_url("https://hooks.example.com").unwrap();
        assert_eq!((e.dial.as_str(), e.target.as_str()), ("hooks.example.com:443", "/"));
        let e = endpoint_from_url("https://[::1]:9443/v").unwrap();
        assert_eq!((e.dial.as_str(), e.server_name.as_str()), ("[::1]:9443", "::1"));
        assert!(endpoint_from_url("http://x").is_err());
    }

    #[tokio::test]
    async fn a_missing_service_fails_the_call_as_upstreams_dialer_does() {
        let config = json!({"service": {"namespace": "hooks", "name": "missing", "path": "/validate"}});
        let e = resolve(&config, &Stores::default()).unwrap();
        assert_eq!(e.url, "https://missing.hooks.svc:443/validate");
        let tls = tls_config(&json!({})).unwrap();
        let err = post(&e, tls, &json!({}), Duration::from_secs(10)).await.unwrap_err();
        assert_eq!(err, r#"Post "https://missing.hooks.svc:443/validate?timeout=10s": service "missing" not found"#);
    }

    #[tokio::test]
    async fn refused_connections_read_as_go_errors() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let e = endpoint_from_url(&format!("https://127.0.0.1:{port}/v")).unwrap();
        let tls = tls_config(&json!({})).unwrap();
        let err = post(&e, tls, &json!({}), Duration::from_secs(10)).await.unwrap_err();
        assert_eq!(
            err,
            format!("Post \"https://127.0.0.1:{port}/v?timeout=10s\": dial tcp 127.0.0.1:{port}: connect: connection refused")
        );
    }
}
