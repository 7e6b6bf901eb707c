//! Port-forward over WebSocket: upstream's `TunnelingHandler`, which
//! kubectl 1.31+ uses by default (it offers the WebSocket subprotocol
//! `SPDY/3.1+portforward.k8s.io`). The API server does not speak SPDY
//! here either: it turns the request into a SPDY upgrade towards the
//! kubelet (POST, `Upgrade: SPDY/3.1`, `X-Stream-Protocol-Version` = the
//! offered protocols without the `SPDY/3.1+` prefix, the WebSocket
//! headers removed), and when the kubelet switches protocols it accepts
//! the client's WebSocket with `SPDY/3.1+<the kubelet's protocol>` and
//! carries the SPDY byte stream in binary messages: every message from the
//! client is written to the kubelet as is, every read from the kubelet goes
//! to the client as one message.
//!
//! Failures as upstream: no tunnelling protocol offered is a plain-text 400
//! `unable to upgrade: no tunneling spdy protocols provided`; a 101 without
//! the SPDY upgrade headers is a 500 `unable to upgrade: missing upgrade
//! headers in response`; a kubelet error status (400 and up) is passed
//! back as sent; anything else is [`super::upgrade`]'s error.

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;
use futures::{SinkExt, StreamExt};
use hyper_util::rt::TokioIo;
use rkube_apimachinery::ApiError;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use super::backend::Backend;
use super::upgrade::send_upgrade;
use super::Raw;

/// The prefix of the tunnelling subprotocols.
pub const TUNNELING_PREFIX: &str = "SPDY/3.1+";
/// Kubernetes subprotocols end with this.
const KUBERNETES_SUFFIX: &str = ".k8s.io";

/// The WebSocket subprotocols offered by the client.
fn offered(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// Upstream's `IsWebSocketRequestWithTunnelingProtocol`: a WebSocket
/// upgrade offering a `SPDY/3.1+` subprotocol.
pub fn is_tunnel_request(headers: &HeaderMap) -> bool {
    let websocket = headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("websocket"));
    websocket && super::upgrade::is_upgrade(headers) && offered(headers).iter().any(|p| p.starts_with(TUNNELING_PREFIX))
}

/// Tunnels the client's WebSocket to a SPDY upgrade of `path` on the
/// kubelet (see the module docs).
pub async fn serve(kubelet: &Backend, path: &str, headers: &HeaderMap, raw: Raw) -> Result<Response, ApiError> {
    let spdy: Vec<String> = offered(headers)
        .iter()
        .filter(|p| p.starts_with(TUNNELING_PREFIX) && p.ends_with(KUBERNETES_SUFFIX))
        .map(|p| p[TUNNELING_PREFIX.len()..].to_string())
        .collect();
    if spdy.is_empty() {
        return Ok(plain(StatusCode::BAD_REQUEST, "unable to upgrade: no tunneling spdy protocols provided"));
    }
    let Some(key) = headers.get(header::SEC_WEBSOCKET_KEY).map(|k| derive_accept_key(k.as_bytes())) else {
        return Ok(plain(
            StatusCode::BAD_REQUEST,
            "websocket: not a websocket handshake: 'Sec-WebSocket-Key' header is missing or blank",
        ));
    };
    let mut out = headers.clone();
    for h in [header::SEC_WEBSOCKET_PROTOCOL, header::SEC_WEBSOCKET_KEY, header::SEC_WEBSOCKET_VERSION] {
        out.remove(h);
    }
    out.remove("sec-websocket-extensions");
    out.insert(header::UPGRADE, HeaderValue::from_static("SPDY/3.1"));
    out.remove("x-stream-protocol-version");
    for p in &spdy {
        if let Ok(v) = HeaderValue::from_str(p) {
            out.append("x-stream-protocol-version", v);
        }
    }
    let mut response = match send_upgrade(kubelet, Method::POST, path, out, raw.remote).await? {
        Ok(switched) => switched,
        Err(answer) => return Ok(answer),
    };
    let lower = |name: header::HeaderName| {
        response.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase()
    };
    if !lower(header::CONNECTION).contains("upgrade") || !lower(header::UPGRADE).contains("spdy/3.1") {
        return Ok(plain(StatusCode::INTERNAL_SERVER_ERROR, "unable to upgrade: missing upgrade headers in response"));
    }
    let chosen = response
        .headers()
        .get("x-stream-protocol-version")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| format!("{TUNNELING_PREFIX}{p}"));
    let Some(client) = raw.upgrade else {
        return Err(ApiError::Internal("request connection cannot be hijacked".into()));
    };
    let backend_upgrade = hyper::upgrade::on(&mut response);
    tokio::spawn(async move {
        match tokio::join!(client, backend_upgrade) {
            (Ok(client), Ok(backend)) => {
                let socket = WebSocketStream::from_raw_socket(TokioIo::new(client), Role::Server, None).await;
                bridge(socket, TokioIo::new(backend)).await;
            }
            (c, b) => {
                tracing::debug!(component = crate::COMPONENT, client = ?c.err(), backend = ?b.err(), "tunnel upgrade failed")
            }
        }
    });
    let mut resp = Response::new(Body::empty());
    *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = resp.headers_mut();
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(header::SEC_WEBSOCKET_ACCEPT, HeaderValue::from_str(&key).expect("base64 is a valid header"));
    if let Some(p) = chosen.and_then(|p| HeaderValue::from_str(&p).ok()) {
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, p);
    }
    Ok(resp)
}

/// Copies WebSocket binary payloads to `backend` and `backend`'s bytes
/// back as binary messages until either side ends.
async fn bridge<S, B>(socket: WebSocketStream<S>, backend: B)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    B: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let (mut ws_tx, mut ws_rx) = socket.split();
    let (mut rd, mut wr) = tokio::io::split(backend);
    let up = async {
        while let Some(Ok(msg)) = ws_rx.next().await {
            match msg {
                Message::Binary(data) if wr.write_all(&data).await.is_err() => break,
                Message::Close(_) => break,
                _ => {}
            }
        }
        let _ = wr.shutdown().await;
    };
    let down = async {
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            match rd.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if ws_tx.send(Message::Binary(buf[..n].to_vec().into())).await.is_err() {
                        break;
                    }
                }
            }
        }
        let _ = ws_tx.close().await;
    };
    // As upstream's copy loops: when one direction ends, the session ends.
    tokio::select! {
        _ = up => {}
        _ = down => {}
    }
}

/// A plain-text answer, as Go's `http.Error` writes it.
fn plain(status: StatusCode, message: &str) -> Response {
    let mut resp = Response::new(Body::from(format!("{message}\n")));
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    resp
}
