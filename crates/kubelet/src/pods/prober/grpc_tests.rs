//! gRPC probe tests against a hand-rolled HTTP/2 health server on 127.0.0.1.

use std::convert::Infallible;

use http_body_util::combinators::WithTrailers;

use super::*;

type Answer = fn(&[u8]) -> (Option<u64>, i32, &'static str);

/// A health server: `answer(request message)` = (status to send, grpc-status, grpc-message).
async fn serve(answer: Answer) -> u16 {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((c, _)) = l.accept().await {
            let svc = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| async move {
                assert_eq!(req.uri().path(), CHECK_PATH);
                assert_eq!(req.headers()["content-type"], "application/grpc");
                assert_eq!(req.headers()["user-agent"], "kube-probe/1.33");
                let body = req.into_body().collect().await.unwrap().to_bytes();
                let (status, code, message) = answer(&body[5..]);
                let data = status.map(|s| frame(&[0x08, s as u8])).unwrap_or_default();
                let mut trailers = http::HeaderMap::new();
                trailers.insert("grpc-status", code.to_string().parse().unwrap());
                if !message.is_empty() {
                    trailers.insert("grpc-message", message.parse().unwrap());
                }
                let body: WithTrailers<Full<Bytes>, _> =
                    Full::new(Bytes::from(data)).with_trailers(async move { Some(Ok(trailers)) });
                Ok::<_, Infallible>(
                    hyper::Response::builder().header("content-type", "application/grpc").body(body).unwrap(),
                )
            });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(c), svc)
                    .await;
            });
        }
    });
    port
}

const T: Duration = Duration::from_secs(1);

#[tokio::test]
async fn grpc_probe_serving_is_success_and_sends_service_name() {
    let port = serve(|msg| {
        // HealthCheckRequest{service: "db"}
        assert_eq!(msg, [0x0a, 2, b'd', b'b']);
        (Some(1), 0, "")
    })
    .await;
    assert_eq!(probe_grpc("127.0.0.1", port, "db", T).await, Outcome::Success("service healthy".into()));
}

#[tokio::test]
async fn grpc_probe_not_serving_fails_with_status_name() {
    let port = serve(|_| (Some(2), 0, "")).await;
    assert_eq!(
        probe_grpc("127.0.0.1", port, "", T).await,
        Outcome::Failure("service unhealthy (responded with \"NOT_SERVING\")".into())
    );
}

#[tokio::test]
async fn grpc_probe_unimplemented_health_service() {
    let port = serve(|_| (None, 12, "unknown service grpc.health.v1.Health")).await;
    assert_eq!(
        probe_grpc("127.0.0.1", port, "", T).await,
        Outcome::Failure(
            "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): \
             unknown service grpc.health.v1.Health"
                .into()
        )
    );
}

#[tokio::test]
async fn grpc_probe_other_error_codes() {
    let port = serve(|_| (None, 5, "unknown%20service")).await;
    assert_eq!(
        probe_grpc("127.0.0.1", port, "x", T).await,
        Outcome::Failure("error: health rpc probe failed: rpc error: code = NotFound desc = unknown service".into())
    );
}

#[tokio::test]
async fn grpc_probe_connection_refused_is_unavailable() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    assert_eq!(
        probe_grpc("127.0.0.1", port, "", T).await,
        Outcome::Failure(format!(
            "error: health rpc probe failed: rpc error: code = Unavailable desc = connection error: desc = \
             \"transport: Error while dialing: dial tcp 127.0.0.1:{port}: connect: connection refused\""
        ))
    );
}

#[tokio::test]
async fn grpc_probe_times_out() {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let _hold = tokio::spawn(async move {
        let mut conns = Vec::new();
        while let Ok((c, _)) = l.accept().await {
            conns.push(c);
        }
    });
    assert_eq!(
        probe_grpc("127.0.0.1", port, "", T).await,
        Outcome::Failure("timeout: health rpc did not complete within 1s".into())
    );
}

#[test]
fn health_messages_round_trip() {
    assert_eq!(encode_request(""), Vec::<u8>::new());
    assert_eq!(decode_status(&[]), Some(0));
    assert_eq!(decode_status(&[0x08, 0x01]), Some(1));
    // An unknown length-delimited field before the status is skipped.
    assert_eq!(decode_status(&[0x12, 0x01, 0xff, 0x08, 0x03]), Some(3));
    assert_eq!(decode_status(&[0x08]), None);
}
