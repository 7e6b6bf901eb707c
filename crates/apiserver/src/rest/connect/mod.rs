//! The streaming pod subresources — `log`, `exec`, `attach`,
//! `portforward` — and the `proxy` subresources of pods, nodes and
//! services: forwarded to the node's kubelet or the backend as upstream's
//! API server does.
//!
//! For the pod subresources: the `log` options are decoded and validated
//! first ([`logs`]); the pod must exist, name a valid container, be
//! assigned to a node (`pod x does not have a host assigned`), and that
//! node must exist and have an address ([`location`]). Then, as upstream:
//! - `exec`/`attach` WebSocket requests offering `v5.channel.k8s.io` are
//!   terminated here ([`websocket`], upstream's StreamTranslator) and
//!   relayed to the kubelet over a v5 WebSocket ([`kubelet`], [`relay`]);
//!   a kubelet that cannot be reached is reported as a `Status` on the
//!   error channel;
//! - `portforward` WebSockets offering `SPDY/3.1+portforward.k8s.io` are
//!   tunnelled to a SPDY upgrade of the kubelet ([`tunnel`]);
//! - every other `exec`/`attach`/`portforward` request must be an upgrade
//!   (400 `Upgrade request required`) and is passed through to the kubelet
//!   as it is (SPDY/3.1, WebSocket v4 and older: [`upgrade`]); a failed
//!   dial is a plain 500 `error dialing backend: dial tcp …`, after which
//!   kubectl falls back from WebSocket to SPDY and prints that message;
//! - `log` is a GET of the kubelet's `/containerLogs/…`, streamed back
//!   ([`logs`]); a failed dial is `Get "https://…/containerLogs/…": dial tcp …`.
//!
//! Every connection to a kubelet is TLS with the apiserver-kubelet-client
//! certificate ([`kubelet`], [`backend`]). `proxy` ([`proxy`]) forwards
//! HTTP (and upgrades) to a pod IP, a service endpoint or the kubelet.

pub mod backend;
pub mod kubelet;
pub mod location;
pub mod logs;
pub mod proxy;
pub mod relay;
pub mod tunnel;
pub mod upgrade;
pub mod websocket;

use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;
use rkube_apimachinery::registry::ResourceInfo;
use rkube_apimachinery::ApiError;
use serde_json::Value;

use super::request::{RequestInfo, Verb};
use super::{Api, Ctx};
use crate::storage::ResourceStore;
use location::{container_of, kubelet_endpoint, stream_location, StreamOptions};

/// How long a dial to a kubelet or backend may take: the 30 s of
/// upstream's kubelet transport dialer.
const DIAL_TIMEOUT: Duration = Duration::from_secs(30);

/// What the streaming handlers need of the raw request beyond the parsed
/// resource request: method, URI (the proxy path and query as sent), the
/// connection's upgrade handle and the client's address.
pub struct Raw {
    /// The HTTP method.
    pub method: Method,
    /// The request URI as received.
    pub uri: Uri,
    /// The connection's upgrade handle (HTTP/1.1 only).
    pub upgrade: Option<hyper::upgrade::OnUpgrade>,
    /// The client's address, for `X-Forwarded-For`.
    pub remote: Option<std::net::SocketAddr>,
}

/// Serves `pods/{name}/{log|exec|attach|portforward}`.
pub async fn handle(ctx: &Ctx<'_>, pods: &ResourceStore, subresource: &str, raw: Raw) -> Result<Response, ApiError> {
    let (namespace, name) = (&ctx.request.namespace, &ctx.request.name);
    // Upstream decodes and validates the log options before reading the pod.
    let log_options = if subresource == "log" {
        let options = logs::LogOptions::from_query(&ctx.query)?;
        options.validate(name)?;
        Some(options)
    } else {
        None
    };
    let pod = pods.get(namespace, name, "").await?;
    let container = if subresource == "portforward" {
        String::new()
    } else {
        container_of(&pod, name, ctx.query.get("container"))?
    };
    let node_name = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("");
    if node_name.is_empty() {
        return Err(ApiError::BadRequest(format!("pod {name} does not have a host assigned")));
    }
    let phase = pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or("");
    if matches!(subresource, "exec" | "attach") && matches!(phase, "Succeeded" | "Failed") {
        return Err(ApiError::BadRequest(format!(
            "cannot {} a container in a completed pod; current phase is {phase}",
            if subresource == "exec" { "exec into" } else { "attach to" }
        )));
    }
    let nodes = ctx.api.store("", "v1", "nodes").ok_or_else(|| ApiError::Internal("no node store".into()))?;
    let node = nodes.get("", node_name, "").await?;
    let endpoint = kubelet_endpoint(&node)?;
    if subresource != "log" && !websocket::is_upgrade_request(&ctx.headers) {
        return Err(ApiError::BadRequest("Upgrade request required".into()));
    }
    if matches!(subresource, "exec" | "attach") && websocket::is_stream_close_request(&ctx.headers) {
        let options = StreamOptions::from_query(&ctx.query);
        let location = stream_location(endpoint, subresource, namespace, name, &container, &options);
        let client = ctx.api.cluster().kubelet_client.clone();
        let translation = websocket::Translation { location, options, client };
        let get = ctx.request.verb == Some(Verb::Get);
        return Ok(websocket::translate(&ctx.headers, get, raw.upgrade, translation));
    }
    let Some(client) = ctx.api.cluster().kubelet_client.clone() else {
        return without_credentials(&endpoint, subresource, namespace, name, &container, node_name).await;
    };
    if let Some(options) = &log_options {
        let kubelet = if options.insecure_skip_tls_verify_backend {
            client.insecure_backend(&endpoint.0, endpoint.1)
        } else {
            client.backend(&endpoint.0, endpoint.1)
        };
        return logs::stream(&kubelet, &logs::log_path(namespace, name, &container, options), name).await;
    }
    let kubelet = client.backend(&endpoint.0, endpoint.1);
    let path = match subresource {
        "portforward" => {
            let ports = ctx.query.all("ports").join(",");
            let query = if ports.is_empty() { String::new() } else { format!("?port={}", ports.replace(',', "%2C")) };
            format!("/portForward/{namespace}/{name}{query}")
        }
        _ => {
            let options = StreamOptions::from_query(&ctx.query);
            stream_location(endpoint.clone(), subresource, namespace, name, &container, &options).path_and_query
        }
    };
    if subresource == "portforward" && tunnel::is_tunnel_request(&ctx.headers) {
        return tunnel::serve(&kubelet, &path, &ctx.headers, raw).await;
    }
    upgrade::pass_through(&kubelet, raw.method, &path, ctx.headers.clone(), raw.remote, raw.upgrade).await
}

/// Without the kubelet client certificate the API server cannot talk to a
/// kubelet: it still dials the port, so an unreachable node answers as
/// upstream's does; something answering is reported as unreachable for
/// want of credentials.
async fn without_credentials(
    endpoint: &(String, u64),
    subresource: &str,
    namespace: &str,
    name: &str,
    container: &str,
    node_name: &str,
) -> Result<Response, ApiError> {
    let (target, failure) = dial(&endpoint.0, endpoint.1).await;
    match failure {
        Some(reason) if subresource == "log" => Err(ApiError::Generic {
            code: 500,
            reason: "",
            message: format!(
                "Get \"https://{target}/containerLogs/{namespace}/{name}/{container}\": dial tcp {target}: {reason}"
            ),
        }),
        Some(reason) => Err(ApiError::Generic {
            code: 500,
            reason: "",
            message: format!("error dialing backend: dial tcp {target}: {reason}"),
        }),
        None => Err(ApiError::ServiceUnavailable(format!(
            "the API server has no kubelet client certificate to reach the kubelet on node {node_name}"
        ))),
    }
}

/// Dials `host:port`; `None` when something answered, else the Go-style
/// dial failure (`connect: connection refused`, `i/o timeout`).
async fn dial(host: &str, port: u64) -> (String, Option<String>) {
    let (target, conn) = dial_tcp(host, port).await;
    (target, conn.err())
}

/// Dials `host:port` (`[host]:port` for IPv6, returned as the target):
/// the connection, or the Go-style dial failure.
async fn dial_tcp(host: &str, port: u64) -> (String, Result<tokio::net::TcpStream, String>) {
    let target = if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") };
    let conn = match tokio::time::timeout(DIAL_TIMEOUT, tokio::net::TcpStream::connect(target.as_str())).await {
        Ok(Ok(conn)) => Ok(conn),
        Ok(Err(e)) => Err(dial_error(&e)),
        Err(_) => Err("i/o timeout".to_string()),
    };
    (target, conn)
}

/// `pods|nodes|services/{name}/proxy[/path]` ([`proxy`]).
pub async fn proxy(
    api: &Api,
    info: &ResourceInfo,
    request: &RequestInfo,
    headers: HeaderMap,
    body: Body,
    raw: Raw,
) -> Result<Response, ApiError> {
    proxy::serve(api, info, request, headers, body, raw).await
}

fn dial_error(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connect: connection refused".into(),
        std::io::ErrorKind::TimedOut => "i/o timeout".into(),
        _ => format!("connect: {e}"),
    }
}
