//! WebSocket termination of `pods/exec` and `pods/attach`: upstream's
//! `StreamTranslatorHandler`, which serves every WebSocket request that
//! offers the `v5.channel.k8s.io` subprotocol (kubectl 1.30+ does, with
//! v4…v1 after it). Other upgrades (SPDY, WebSocket v4 and older) are
//! proxied as they are and so fail before any upgrade when the kubelet
//! cannot be reached (see [`super::handle`]).
//!
//! The session, as upstream: accept the upgrade with `v5.channel.k8s.io`
//! (the only subprotocol the translator speaks); send an empty message on
//! the lowest writable channel (stdout 1, else stderr 2, else the error
//! channel 3) so the client knows the connection is up; reach the kubelet;
//! when that fails, write a `Status` (500 InternalError, the error as its
//! only cause) on the error channel 3 and close. Frames are binary, the
//! first byte being the channel; the JSON is written as Go's
//! `json.Marshal` writes it (no kind/apiVersion, `metadata: {}`, `&`, `<`,
//! `>` escaped). kubectl prints the status message:
//! `error: Internal error occurred: error sending request: Post
//! "https://{node}:{port}/exec/{ns}/{pod}/{container}?…": dial tcp …:
//! connect: connection refused` and exits 1.
//!
//! Towards the kubelet rkube owns both ends: with the kubelet client
//! installed ([`super::kubelet`], the apiserver-kubelet-client
//! certificate), the session opens a `v5.channel.k8s.io` WebSocket to the
//! kubelet and relays frames both ways ([`super::relay`]); a kubelet that
//! cannot be reached or refuses the upgrade is reported on the error
//! channel as above. Without it (a process that never installed one) the
//! session only dials the kubelet port and reports what answers there as
//! unreachable for want of credentials.

use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use futures::{SinkExt, StreamExt};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use super::kubelet;
use super::location::{KubeletLocation, StreamOptions};

/// The remote command protocol with stream close (channel 255) support.
pub const V5_PROTOCOL: &str = "v5.channel.k8s.io";
/// The error channel: one `Status` closes the session.
const ERROR_CHANNEL: u8 = 3;
/// How long the server waits for the client to answer its close frame
/// (the client closes once it has read everything).
const FINISH_TIMEOUT: Duration = Duration::from_secs(10);

/// Upstream's `httpstream.IsUpgradeRequest`: a `Connection` header naming
/// `upgrade` (any case).
pub fn is_upgrade_request(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.to_ascii_lowercase().contains("upgrade"))
}

/// Upstream's `wsstream.IsWebSocketRequestWithStreamCloseProtocol`: a
/// WebSocket upgrade (`Upgrade: websocket`) whose `Sec-WebSocket-Protocol`
/// offers `v5.channel.k8s.io`.
pub fn is_stream_close_request(headers: &HeaderMap) -> bool {
    let websocket = headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("websocket"));
    let v5 = headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|p| p.trim() == V5_PROTOCOL);
    is_upgrade_request(headers) && websocket && v5
}

/// One translated session: the kubelet URL and the streams requested.
#[derive(Debug, Clone)]
pub struct Translation {
    /// Where the session goes on the node's kubelet.
    pub location: KubeletLocation,
    /// The streams the client asked for.
    pub options: StreamOptions,
    /// The API server's kubelet client ([`crate::bootstrap::ClusterConfig`]);
    /// without one the session only dials the kubelet port.
    pub client: Option<std::sync::Arc<kubelet::KubeletClient>>,
}

/// Accepts the WebSocket upgrade of `headers` (a `GET` when `method_get`)
/// with `v5.channel.k8s.io` and runs the session in the upgraded
/// connection; the response is the `101 Switching Protocols`, or a 400
/// when the request is not a valid WebSocket handshake (RFC 6455 4.2.1).
pub fn translate(
    headers: &HeaderMap,
    method_get: bool,
    upgrade: Option<hyper::upgrade::OnUpgrade>,
    translation: Translation,
) -> Response {
    let key = headers.get(header::SEC_WEBSOCKET_KEY).map(|k| k.as_bytes());
    let version = headers.get(header::SEC_WEBSOCKET_VERSION).and_then(|v| v.to_str().ok());
    let refusal = match (method_get, key, version, upgrade) {
        (false, ..) => "WebSocket handshakes use GET",
        (_, None, ..) => "missing Sec-WebSocket-Key",
        (_, _, v, _) if v.map(str::trim) != Some("13") => "unsupported Sec-WebSocket-Version (supported: 13)",
        (_, _, _, None) => "the connection cannot be upgraded",
        (true, Some(key), _, Some(upgrade)) => {
            let accept = derive_accept_key(key);
            tokio::spawn(async move {
                match upgrade.await {
                    Ok(upgraded) => {
                        let socket = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
                        session(socket, translation).await;
                    }
                    Err(e) => tracing::debug!(component = crate::COMPONENT, error = %e, "WebSocket upgrade failed"),
                }
            });
            let mut resp = Response::new(Body::empty());
            *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
            let h = resp.headers_mut();
            h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
            h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
            h.insert(header::SEC_WEBSOCKET_ACCEPT, HeaderValue::from_str(&accept).expect("base64 is a valid header"));
            h.insert(header::SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static(V5_PROTOCOL));
            return resp;
        }
    };
    let mut resp = Response::new(Body::from(format!("{refusal}\n")));
    *resp.status_mut() = StatusCode::BAD_REQUEST;
    resp.headers_mut().insert(header::SEC_WEBSOCKET_VERSION, HeaderValue::from_static("13"));
    resp
}

/// The upgraded session: announce, reach the kubelet, relay or report,
/// close.
async fn session<S: AsyncRead + AsyncWrite + Unpin>(mut socket: WebSocketStream<S>, translation: Translation) {
    let Translation { location, options, client } = translation;
    let first = if options.stdout {
        1
    } else if options.stderr {
        2
    } else {
        ERROR_CHANNEL
    };
    if socket.send(Message::Binary(vec![first].into())).await.is_err() {
        return;
    }
    let failure = match client {
        Some(client) => match client.connect(&location).await {
            Ok(kubelet) => {
                super::relay::relay(socket, kubelet).await;
                return;
            }
            Err(e) => e.message(&location),
        },
        None => match dial_kubelet(&location).await {
            Err(reason) => kubelet::KubeletError::Request(reason).message(&location),
            Ok(()) => format!("no kubelet client credentials to reach the kubelet at {}", location.authority()),
        },
    };
    tracing::debug!(component = crate::COMPONENT, url = %location.url(), error = %failure, "stream translation failed");
    let mut frame = vec![ERROR_CHANNEL];
    frame.extend_from_slice(go_json(&internal_error(&failure)).as_bytes());
    if socket.send(Message::Binary(frame.into())).await.is_ok() {
        finish(socket).await;
    }
}

/// Reaches the kubelet at `location`: `Err` is Go's dial error
/// (`dial tcp 10.0.0.5:10250: connect: connection refused`).
async fn dial_kubelet(location: &KubeletLocation) -> Result<(), String> {
    let (target, failure) = super::dial(&location.host, location.port).await;
    match failure {
        Some(reason) => Err(format!("dial tcp {target}: {reason}")),
        None => Ok(()),
    }
}

/// Sends the close frame and waits (bounded) for the client's: closing
/// at once could reset the connection before the client has read the
/// status.
async fn finish<S: AsyncRead + AsyncWrite + Unpin>(mut socket: WebSocketStream<S>) {
    let close = CloseFrame { code: CloseCode::Normal, reason: "".into() };
    if socket.close(Some(close)).await.is_err() {
        return;
    }
    let drain = async { while let Some(Ok(_)) = socket.next().await {} };
    let _ = tokio::time::timeout(FINISH_TIMEOUT, drain).await;
}

/// Upstream's `apierrors.NewInternalError(err).Status()`.
fn internal_error(err: &str) -> Value {
    json!({
        "metadata": {},
        "status": "Failure",
        "message": format!("Internal error occurred: {err}"),
        "reason": "InternalError",
        "details": {"causes": [{"message": err}]},
        "code": 500,
    })
}

/// JSON as Go's `json.Marshal` writes it: `<`, `>` and `&` escaped (they
/// only occur inside strings, so a textual replace is exact).
fn go_json(value: &Value) -> String {
    serde_json::to_string(value)
        .unwrap_or_default()
        .replace('&', "\\u0026")
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().unwrap());
        }
        h
    }

    /// Only WebSocket upgrades offering v5 are translated; SPDY and v4
    /// upgrades are proxied as they are.
    #[test]
    fn which_requests_are_translated() {
        let v5 = headers(&[
            ("connection", "Upgrade"),
            ("upgrade", "websocket"),
            ("sec-websocket-protocol", "v5.channel.k8s.io, v4.channel.k8s.io"),
        ]);
        assert!(is_stream_close_request(&v5));
        let v4 = headers(&[
            ("connection", "Upgrade"),
            ("upgrade", "websocket"),
            ("sec-websocket-protocol", "v4.channel.k8s.io"),
        ]);
        assert!(!is_stream_close_request(&v4) && is_upgrade_request(&v4));
        let spdy = headers(&[
            ("connection", "Upgrade"),
            ("upgrade", "SPDY/3.1"),
            ("x-stream-protocol-version", "v5.channel.k8s.io"),
        ]);
        assert!(!is_stream_close_request(&spdy) && is_upgrade_request(&spdy));
        assert!(!is_upgrade_request(&headers(&[("connection", "keep-alive")])));
    }

    /// The error-channel status is Go's encoding of `NewInternalError`.
    #[test]
    fn internal_error_status_as_go_writes_it() {
        let s = internal_error("Post \"https://h:1/exec/a/b/c?command=x&error=1\": boom");
        let text = go_json(&s);
        assert!(text.contains(r#"?command=x\u0026error=1"#), "{text}");
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["message"], "Internal error occurred: Post \"https://h:1/exec/a/b/c?command=x&error=1\": boom");
        assert_eq!(back["details"]["causes"][0]["message"], "Post \"https://h:1/exec/a/b/c?command=x&error=1\": boom");
        assert_eq!(back["metadata"], json!({}));
        assert!(back.get("kind").is_none());
    }
}
