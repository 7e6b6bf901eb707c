//! `/exec`, `/attach` and `/portForward`: the runtime serves the streams
//! itself. The kubelet asks it (CRI `Exec`/`Attach`/`PortForward`) for a
//! one-time URL on its streaming server (containerd's, on 127.0.0.1) and
//! then, as upstream's kubelet proxies such requests
//! (`proxyStream`), carries the session there:
//!
//! - a WebSocket offering `v5.channel.k8s.io` (what rkube's API server
//!   opens for exec/attach) is accepted here and carried over SPDY/3.1 to
//!   the runtime as protocol `v4.channel.k8s.io` ([`super::spdy`]): data
//!   frames keep their channel, and v5's close of stdin (channel 255)
//!   becomes a FIN on the stdin stream, so `kubectl exec -i … < file` and
//!   `kubectl cp` see the end of their input (containerd 1.6 also serves
//!   WebSocket `v4.channel.k8s.io`, but that protocol cannot close one
//!   stream, hence SPDY);
//! - every other upgrade (SPDY/3.1 of exec, attach and port-forward, older
//!   WebSocket protocols) is passed through unchanged: the request goes to
//!   the runtime's URL with its upgrade headers, and after its `101` the
//!   bytes are copied both ways.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use http_body_util::BodyExt;
use hyper_util::rt::TokioIo;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::WebSocketStream;

use super::containers::{pod_containers, pod_sandbox};
use super::{text, AppState, Req};
use crate::cri::v1;

/// The channel protocol rkube's API server speaks to kubelets.
pub const V5_PROTOCOL: &str = "v5.channel.k8s.io";

/// The stream flags and command of an exec/attach request (upstream's
/// kubelet query: `input`, `output`, `error`, `tty`, `command`…).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamParams {
    /// Standard input.
    pub stdin: bool,
    /// Standard output.
    pub stdout: bool,
    /// Standard error.
    pub stderr: bool,
    /// A terminal.
    pub tty: bool,
    /// The command (exec).
    pub command: Vec<String>,
}

impl StreamParams {
    /// Parses the query: a flag is on when its value is `1` or `true`.
    pub fn from_query(query: Option<&str>) -> StreamParams {
        let mut p = StreamParams::default();
        for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            let on = v == "1" || v.eq_ignore_ascii_case("true");
            match &*k {
                "input" => p.stdin = on,
                "output" => p.stdout = on,
                "error" => p.stderr = on,
                "tty" => p.tty = on,
                "command" => p.command.push(v.into_owned()),
                _ => {}
            }
        }
        // A terminal merges stderr into stdout (upstream: no stderr with tty).
        if p.tty {
            p.stderr = false;
        }
        p
    }
}

/// Whether `headers` are a WebSocket upgrade offering v5.
fn offers_v5(headers: &HeaderMap) -> bool {
    let websocket = headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("websocket"));
    websocket
        && headers
            .get_all(header::SEC_WEBSOCKET_PROTOCOL)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|p| p.trim() == V5_PROTOCOL)
}

/// The current container's runtime id, or the error response.
async fn current_container(state: &AppState, ns: &str, pod: &str, container: &str) -> Result<String, Response> {
    match pod_containers(&state.cri, ns, pod, container).await {
        Ok(found) => match found.into_iter().find(|c| c.state == v1::ContainerState::ContainerRunning as i32) {
            Some(c) => Ok(c.id),
            None => Err(text(StatusCode::INTERNAL_SERVER_ERROR, format!("container not found ({container:?})"))),
        },
        Err(e) => Err(text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())),
    }
}

/// `/exec/{namespace}/{pod}/{container}`.
pub(crate) async fn exec(
    State(state): State<AppState>,
    Path((ns, pod, container)): Path<(String, String, String)>,
    req: Req,
) -> Response {
    let params = StreamParams::from_query(req.uri().query());
    let id = match current_container(&state, &ns, &pod, &container).await {
        Ok(id) => id,
        Err(r) => return r,
    };
    let cri_req = v1::ExecRequest {
        container_id: id,
        cmd: params.command.clone(),
        tty: params.tty,
        stdin: params.stdin,
        stdout: params.stdout,
        stderr: params.stderr,
    };
    match state.cri.exec(cri_req).await {
        Ok(url) => stream_to(&url, req, &params).await,
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// `/attach/{namespace}/{pod}/{container}`.
pub(crate) async fn attach(
    State(state): State<AppState>,
    Path((ns, pod, container)): Path<(String, String, String)>,
    req: Req,
) -> Response {
    let params = StreamParams::from_query(req.uri().query());
    let id = match current_container(&state, &ns, &pod, &container).await {
        Ok(id) => id,
        Err(r) => return r,
    };
    let cri_req = v1::AttachRequest {
        container_id: id,
        stdin: params.stdin,
        tty: params.tty,
        stdout: params.stdout,
        stderr: params.stderr,
    };
    match state.cri.attach(cri_req).await {
        Ok(url) => stream_to(&url, req, &params).await,
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// `/portForward/{namespace}/{pod}` (`port` query values, comma lists
/// allowed): SPDY passed through to the runtime.
pub(crate) async fn port_forward(
    State(state): State<AppState>,
    Path((ns, pod)): Path<(String, String)>,
    req: Req,
) -> Response {
    let mut ports = Vec::new();
    for (k, v) in form_urlencoded::parse(req.uri().query().unwrap_or("").as_bytes()) {
        if k == "port" {
            for p in v.split(',').filter(|p| !p.is_empty()) {
                match p.trim().parse::<u16>() {
                    Ok(n) if n > 0 => ports.push(n as i32),
                    _ => return text(StatusCode::BAD_REQUEST, format!("invalid port {p:?}")),
                }
            }
        }
    }
    let sandbox = match pod_sandbox(&state.cri, &ns, &pod).await {
        Ok(Some(s)) => s,
        Ok(None) => return text(StatusCode::NOT_FOUND, format!("pod does not exist ({ns}/{pod})")),
        Err(e) => return text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    match state.cri.port_forward(&sandbox.id, ports).await {
        Ok(url) => stream_to(&url, req, &StreamParams::default()).await,
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// `host:port` and path-and-query of the runtime's `http://` URL.
fn split_url(url: &str) -> Result<(String, String), String> {
    let rest = url.strip_prefix("http://").ok_or_else(|| format!("unsupported streaming URL {url:?}"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    Ok((authority.to_string(), path.to_string()))
}

/// Carries the request `req` to the runtime's streaming `url`.
async fn stream_to(url: &str, req: Req, params: &StreamParams) -> Response {
    let (authority, path) = match split_url(url) {
        Ok(p) => p,
        Err(e) => return text(StatusCode::INTERNAL_SERVER_ERROR, e),
    };
    if offers_v5(req.headers()) {
        translate_v5(&authority, &path, req, params).await
    } else {
        pass_through(&authority, &path, req).await
    }
}

/// The v5 channels of a session, error first (upstream's stream order).
fn channels(params: &StreamParams) -> Vec<u8> {
    let mut ch = vec![3];
    for (on, c) in [(params.stdin, 0), (params.stdout, 1), (params.stderr, 2), (params.tty, 4)] {
        if on {
            ch.push(c);
        }
    }
    ch
}

/// Accepts the client's v5 WebSocket and relays it to the runtime over
/// SPDY (which can half-close stdin). The runtime side is opened first so
/// that its failure is an HTTP error (500 with the reason, which the API
/// server reports as the failed upgrade).
async fn translate_v5(authority: &str, path: &str, mut req: Req, params: &StreamParams) -> Response {
    let Some(key) = req.headers().get(header::SEC_WEBSOCKET_KEY).cloned() else {
        return text(StatusCode::BAD_REQUEST, "missing Sec-WebSocket-Key");
    };
    let Some(client_upgrade) = req.extensions_mut().remove::<hyper::upgrade::OnUpgrade>() else {
        return text(StatusCode::INTERNAL_SERVER_ERROR, "the connection cannot be upgraded");
    };
    let (io, streams) = match super::spdy::open(authority, path, &channels(params)).await {
        Ok(opened) => opened,
        Err(e) => return text(StatusCode::INTERNAL_SERVER_ERROR, format!("runtime streaming server: {e}")),
    };
    tokio::spawn(async move {
        match client_upgrade.await {
            Ok(upgraded) => {
                let client = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
                super::spdy::relay_v5(client, io, streams).await;
            }
            Err(e) => tracing::debug!(component = "kubelet", error = %e, "exec/attach upgrade failed"),
        }
    });
    Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header(header::CONNECTION, "Upgrade")
        .header(header::UPGRADE, "websocket")
        .header(header::SEC_WEBSOCKET_ACCEPT, derive_accept_key(key.as_bytes()))
        .header(header::SEC_WEBSOCKET_PROTOCOL, V5_PROTOCOL)
        .body(Body::empty())
        .expect("a valid response")
}

/// Headers not passed to the runtime.
const DROPPED: [&str; 3] = ["host", "authorization", "content-length"];

/// Sends `req` (its upgrade headers) to the runtime at `authority`/`path`;
/// a `101` is answered to the client with the runtime's headers and the
/// two connections are then joined; any other answer is passed back.
async fn pass_through(authority: &str, path: &str, mut req: Req) -> Response {
    let client_upgrade = req.extensions_mut().remove::<hyper::upgrade::OnUpgrade>();
    let tcp = match tokio::net::TcpStream::connect(authority).await {
        Ok(t) => t,
        Err(e) => return text(StatusCode::INTERNAL_SERVER_ERROR, format!("dial tcp {authority}: {e}")),
    };
    let (mut sender, conn) = match hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await {
        Ok(h) => h,
        Err(e) => return text(StatusCode::INTERNAL_SERVER_ERROR, format!("runtime streaming server: {e}")),
    };
    tokio::spawn(async move {
        let _ = conn.with_upgrades().await;
    });
    let mut builder = hyper::Request::builder().method(req.method().clone()).uri(path).header(header::HOST, authority);
    for (name, value) in req.headers() {
        if !DROPPED.contains(&name.as_str()) {
            builder = builder.header(name, value);
        }
    }
    let backend_req = match builder.body(http_body_util::Empty::<bytes::Bytes>::new()) {
        Ok(r) => r,
        Err(e) => return text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    let mut resp = match sender.send_request(backend_req).await {
        Ok(r) => r,
        Err(e) => return text(StatusCode::INTERNAL_SERVER_ERROR, format!("runtime streaming server: {e}")),
    };
    let status = resp.status();
    let headers = resp.headers().clone();
    if status != StatusCode::SWITCHING_PROTOCOLS {
        let body = resp.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
        let mut out = Response::builder().status(status);
        for (name, value) in &headers {
            out = out.header(name, value);
        }
        return out.body(Body::from(body)).unwrap_or_else(|_| text(StatusCode::INTERNAL_SERVER_ERROR, "bad response"));
    }
    let Some(client_upgrade) = client_upgrade else {
        return text(StatusCode::INTERNAL_SERVER_ERROR, "the connection cannot be upgraded");
    };
    let backend_upgrade = hyper::upgrade::on(&mut resp);
    tokio::spawn(async move {
        let (client, backend) = match tokio::join!(client_upgrade, backend_upgrade) {
            (Ok(c), Ok(b)) => (c, b),
            (c, b) => {
                tracing::debug!(component = "kubelet", client = ?c.err(), runtime = ?b.err(), "stream upgrade failed");
                return;
            }
        };
        let (mut client, mut backend) = (TokioIo::new(client), TokioIo::new(backend));
        let _ = tokio::io::copy_bidirectional(&mut client, &mut backend).await;
    });
    let mut out = Response::builder().status(StatusCode::SWITCHING_PROTOCOLS);
    for (name, value) in &headers {
        out = out.header(name, value);
    }
    out.body(Body::empty()).expect("a valid response")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_params_and_urls() {
        let p = StreamParams::from_query(Some("command=sh&command=-c&command=echo+a%26b&error=1&input=1&output=1"));
        assert_eq!(p.command, ["sh", "-c", "echo a&b"]);
        assert!(p.stdin && p.stdout && p.stderr && !p.tty);
        let p = StreamParams::from_query(Some("error=1&output=1&tty=1"));
        assert!(p.tty && !p.stderr);
        assert_eq!(
            split_url("http://127.0.0.1:35000/exec/abcd").unwrap(),
            ("127.0.0.1:35000".to_string(), "/exec/abcd".to_string())
        );
        assert!(split_url("https://x/y").is_err());
    }
}
