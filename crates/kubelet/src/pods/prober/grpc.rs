//! The `grpc` handler (upstream's `pkg/probe/grpc`): one unary
//! `grpc.health.v1.Health/Check` over plaintext HTTP/2 to podIP:port with the
//! probe's `service`; `SERVING` is success. The two tiny protobuf messages
//! (`HealthCheckRequest{string service = 1}`, `HealthCheckResponse{enum
//! status = 1}`) are encoded by hand. Messages are upstream's (`service
//! unhealthy (responded with "NOT_SERVING")`, `timeout: health rpc did not
//! complete within 1s`, …).

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};

use super::results::{go_duration, join_host_port, Outcome, USER_AGENT};

/// The method path of the standard health check.
const CHECK_PATH: &str = "/grpc.health.v1.Health/Check";

/// Calls `Check(service)` on `host:port` within `timeout`.
pub async fn probe_grpc(host: &str, port: u16, service: &str, timeout: Duration) -> Outcome {
    let addr = join_host_port(host, port);
    match tokio::time::timeout(timeout, check(host, port, service)).await {
        Err(_) => Outcome::Failure(format!("timeout: health rpc did not complete within {}", go_duration(timeout))),
        Ok(Err(RpcError { code, message })) => match code {
            tonic::Code::Unimplemented => Outcome::Failure(format!(
                "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): {message}"
            )),
            tonic::Code::DeadlineExceeded => {
                Outcome::Failure(format!("timeout: health rpc did not complete within {}", go_duration(timeout)))
            }
            code => Outcome::Failure(format!(
                "error: health rpc probe failed: rpc error: code = {} desc = {message}",
                code_name(code)
            )),
        },
        Ok(Ok(1)) => {
            tracing::trace!(component = "kubelet", %addr, service, "gRPC probe: serving");
            Outcome::Success("service healthy".into())
        }
        Ok(Ok(status)) => {
            Outcome::Failure(format!("service unhealthy (responded with \"{}\")", serving_status_name(status)))
        }
    }
}

/// A failed RPC: its gRPC status code and message.
struct RpcError {
    code: tonic::Code,
    message: String,
}

/// One Check call; the response's `status` field.
async fn check(host: &str, port: u16, service: &str) -> Result<u64, RpcError> {
    let tcp = super::tcp::dial(host, port, Duration::from_secs(3600)).await.map_err(|e| RpcError {
        code: tonic::Code::Unavailable,
        message: format!("connection error: desc = \"transport: Error while dialing: {e}\""),
    })?;
    let unavailable = |e: hyper::Error| RpcError {
        code: tonic::Code::Unavailable,
        message: format!("connection error: desc = \"transport: {e}\""),
    };
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp)).await.map_err(unavailable)?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let req = hyper::Request::post(format!("http://{}{CHECK_PATH}", join_host_port(host, port)))
        .header(http::header::CONTENT_TYPE, "application/grpc")
        .header(http::header::TE, "trailers")
        .header(http::header::USER_AGENT, USER_AGENT)
        .body(Full::new(Bytes::from(frame(&encode_request(service)))))
        .map_err(|e| RpcError { code: tonic::Code::Internal, message: e.to_string() })?;
    let resp = sender.send_request(req).await.map_err(unavailable)?;
    let http_status = resp.status();
    let (parts, body) = resp.into_parts();
    let collected = body.collect().await.map_err(unavailable)?;
    let trailers = collected.trailers().cloned().unwrap_or_default();
    let data = collected.to_bytes();
    if http_status != http::StatusCode::OK {
        return Err(RpcError {
            code: code_for_http(http_status.as_u16()),
            message: format!("unexpected HTTP status code received from server: {http_status}"),
        });
    }
    // grpc-status comes in the trailers, or in the headers of a trailers-only answer.
    let status_of = |h: &http::HeaderMap| h.get("grpc-status").and_then(|v| v.to_str().ok()?.parse::<i32>().ok());
    let code = status_of(&trailers).or_else(|| status_of(&parts.headers)).unwrap_or(2);
    if code != 0 {
        let msg = trailers.get("grpc-message").or_else(|| parts.headers.get("grpc-message"));
        let message = msg.and_then(|v| v.to_str().ok()).map(percent_decode).unwrap_or_default();
        return Err(RpcError { code: tonic::Code::from_i32(code), message });
    }
    let internal = |m: &str| RpcError { code: tonic::Code::Internal, message: m.into() };
    if data.len() < 5 || data[0] != 0 {
        return Err(internal("grpc: no (uncompressed) response message"));
    }
    let len = u32::from_be_bytes([data[1], data[2], data[3], data[4]]) as usize;
    let msg = data.get(5..5 + len).ok_or_else(|| internal("grpc: truncated response message"))?;
    decode_status(msg).ok_or_else(|| internal("grpc: failed to unmarshal the response"))
}

/// `HealthCheckRequest{service}` in protobuf wire format.
fn encode_request(service: &str) -> Vec<u8> {
    let mut out = Vec::new();
    if !service.is_empty() {
        out.push(0x0a); // field 1, length-delimited
        put_varint(&mut out, service.len() as u64);
        out.extend_from_slice(service.as_bytes());
    }
    out
}

/// A gRPC length-prefixed, uncompressed message.
fn frame(msg: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8];
    out.extend_from_slice(&(msg.len() as u32).to_be_bytes());
    out.extend_from_slice(msg);
    out
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

/// Field 1 (`status`) of a `HealthCheckResponse`; unknown fields are skipped, absent = UNKNOWN (0).
fn decode_status(msg: &[u8]) -> Option<u64> {
    let (mut pos, mut status) = (0, 0);
    while pos < msg.len() {
        let key = get_varint(msg, &mut pos)?;
        match (key >> 3, key & 7) {
            (1, 0) => status = get_varint(msg, &mut pos)?,
            (_, 0) => {
                get_varint(msg, &mut pos)?;
            }
            (_, 1) => pos += 8,
            (_, 2) => {
                let n = get_varint(msg, &mut pos)? as usize;
                pos += n;
            }
            (_, 5) => pos += 4,
            _ => return None,
        }
    }
    (pos == msg.len()).then_some(status)
}

/// `HealthCheckResponse.ServingStatus` names (unknown values print as numbers, as Go's enums do).
fn serving_status_name(status: u64) -> String {
    match status {
        0 => "UNKNOWN".into(),
        1 => "SERVING".into(),
        2 => "NOT_SERVING".into(),
        3 => "SERVICE_UNKNOWN".into(),
        n => n.to_string(),
    }
}

/// grpc-go's name of a code (`Canceled`, not tonic's `Cancelled`).
fn code_name(code: tonic::Code) -> String {
    match code {
        tonic::Code::Cancelled => "Canceled".into(),
        c => format!("{c:?}"),
    }
}

/// The gRPC code for a non-200 HTTP answer (gRPC's HTTP-to-status mapping).
fn code_for_http(status: u16) -> tonic::Code {
    match status {
        400 => tonic::Code::Internal,
        401 => tonic::Code::Unauthenticated,
        403 => tonic::Code::PermissionDenied,
        404 => tonic::Code::Unimplemented,
        429 | 502 | 503 | 504 => tonic::Code::Unavailable,
        _ => tonic::Code::Unknown,
    }
}

/// Decodes the `%XX` escapes of a `grpc-message`.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
#[path = "grpc_tests.rs"]
mod tests;
