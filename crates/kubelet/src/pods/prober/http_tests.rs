//! HTTP probe tests against raw HTTP/1.1 listeners on 127.0.0.1, so the
//! exact request the probe sends can be asserted.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;

type Requests = Arc<Mutex<Vec<String>>>;

/// Serves every connection with `respond(request head)` (a full raw response);
/// records the request heads.
async fn serve(respond: fn(&str, u16) -> String) -> (u16, Requests) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let seen: Requests = Arc::default();
    let s = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut c, _)) = l.accept().await {
            let s = s.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match c.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&buf).into_owned();
                s.lock().unwrap().push(head.clone());
                let _ = c.write_all(respond(&head, port).as_bytes()).await;
            });
        }
    });
    (port, seen)
}

fn response(status: &str, extra: &str, body: &str) -> String {
    format!("HTTP/1.1 {status}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len())
}

fn target(port: u16, path: &str, headers: &[(&str, &str)]) -> HttpTarget {
    HttpTarget {
        scheme: "http".into(),
        host: "127.0.0.1".into(),
        port,
        path: path.into(),
        headers: headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
    }
}

fn header<'a>(head: &'a str, name: &str) -> Vec<&'a str> {
    head.lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| k.trim().eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim())
        .collect()
}

const T: Duration = Duration::from_secs(1);

#[tokio::test]
async fn http_probe_success_sends_upstream_default_headers() {
    let (port, seen) = serve(|_, _| response("200 OK", "", "ok")).await;
    assert_eq!(probe_http(&target(port, "/healthz?x=1", &[]), T).await, Outcome::Success("ok".into()));
    let head = seen.lock().unwrap()[0].clone();
    assert!(head.starts_with("GET /healthz?x=1 HTTP/1.1\r\n"), "{head}");
    assert_eq!(header(&head, "user-agent"), ["kube-probe/1.33"]);
    assert_eq!(header(&head, "accept"), ["*/*"]);
    assert_eq!(header(&head, "host"), [format!("127.0.0.1:{port}").as_str()]);
}

#[tokio::test]
async fn http_probe_custom_headers_host_user_agent_and_empty_accept() {
    let (port, seen) = serve(|_, _| response("204 No Content", "", "")).await;
    let t = target(port, "/", &[("Host", "example.com"), ("User-Agent", "mine"), ("Accept", ""), ("X-Custom", "a")]);
    assert_eq!(probe_http(&t, T).await, Outcome::Success(String::new()));
    let head = seen.lock().unwrap()[0].clone();
    assert_eq!(header(&head, "host"), ["example.com"]);
    assert_eq!(header(&head, "user-agent"), ["mine"]);
    assert!(header(&head, "accept").is_empty(), "{head}");
    assert_eq!(header(&head, "x-custom"), ["a"]);
}

#[tokio::test]
async fn http_probe_error_status_fails_without_body() {
    let (port, _) = serve(|_, _| response("500 Internal Server Error", "", "secret body")).await;
    assert_eq!(
        probe_http(&target(port, "/", &[]), T).await,
        Outcome::Failure("HTTP probe failed with statuscode: 500".into())
    );
    let (port, _) = serve(|_, _| response("400 Bad Request", "", "")).await;
    assert_eq!(
        probe_http(&target(port, "/", &[]), T).await,
        Outcome::Failure("HTTP probe failed with statuscode: 400".into())
    );
}

#[tokio::test]
async fn http_probe_follows_same_host_redirect() {
    let (port, seen) = serve(|head, _| {
        if head.starts_with("GET /old ") {
            response("302 Found", "Location: /new\r\n", "")
        } else {
            response("200 OK", "", "new")
        }
    })
    .await;
    assert_eq!(probe_http(&target(port, "/old", &[]), T).await, Outcome::Success("new".into()));
    assert!(seen.lock().unwrap()[1].starts_with("GET /new "));
}

#[tokio::test]
async fn http_probe_other_host_redirect_is_success_with_warning() {
    let (port, seen) = serve(|_, port| {
        response("301 Moved Permanently", &format!("Location: http://localhost:{port}/x\r\n"), "moved")
    })
    .await;
    assert_eq!(
        probe_http(&target(port, "/", &[]), T).await,
        Outcome::Warning("Probe terminated redirects, Response body: moved".into())
    );
    assert_eq!(seen.lock().unwrap().len(), 1, "the other host's redirect is not followed");
}

#[tokio::test]
async fn http_probe_stops_after_ten_redirects() {
    let (port, seen) = serve(|_, _| response("307 Temporary Redirect", "Location: /loop\r\n", "")).await;
    assert_eq!(
        probe_http(&target(port, "/loop", &[]), T).await,
        Outcome::Failure("Get \"/loop\": stopped after 10 redirects".into())
    );
    assert_eq!(seen.lock().unwrap().len(), 11);
}

#[tokio::test]
async fn http_probe_connection_refused_has_go_message() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    assert_eq!(
        probe_http(&target(port, "/healthz", &[]), T).await,
        Outcome::Failure(format!(
            "Get \"http://127.0.0.1:{port}/healthz\": dial tcp 127.0.0.1:{port}: connect: connection refused"
        ))
    );
}

#[tokio::test]
async fn http_probe_times_out_awaiting_headers() {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let _hold = tokio::spawn(async move {
        let mut conns = Vec::new();
        while let Ok((c, _)) = l.accept().await {
            conns.push(c);
        }
    });
    assert_eq!(
        probe_http(&target(port, "/", &[]), T).await,
        Outcome::Failure(format!(
            "Get \"http://127.0.0.1:{port}/\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
        ))
    );
}

#[tokio::test]
async fn http_probe_reads_at_most_10_kib_of_body() {
    let (port, _) = serve(|_, _| response("200 OK", "", &"a".repeat(20 * 1024))).await;
    assert_eq!(probe_http(&target(port, "/", &[]), T).await, Outcome::Success("a".repeat(10 * 1024)));
}

#[tokio::test]
async fn https_probe_skips_certificate_verification() {
    let cert = rcgen::generate_simple_self_signed(vec!["not-this-host.example".into()]).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.signing_key.serialize_der().into());
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.der().clone()], key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((c, _)) = l.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(c).await else { return };
                let mut buf = [0u8; 4096];
                let _ = tls.read(&mut buf).await;
                let _ = tls.write_all(response("200 OK", "", "tls").as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    let mut t = target(port, "/", &[]);
    t.scheme = "https".into();
    assert_eq!(probe_http(&t, T).await, Outcome::Success("tls".into()));
}
