//! Forwarding of the streaming and proxy subresources to a kubelet or a
//! backend that can be reached, driven by the real kubectl (1.33 and 1.31)
//! and raw clients.
//!
//! The stand-ins speak the real protocols: a "kubelet" serving HTTPS with
//! a certificate signed by the cluster CA that requires the API server's
//! kubelet client certificate (`/containerLogs/…` with a follow stream,
//! `/healthz`, SPDY/3.1 upgrades of `/portForward/…` and `/exec/…` that
//! echo bytes after `101`), and a plain HTTP server for the pod and service
//! proxies, listening on this host's non-loopback address (upstream only
//! proxies to global unicast pod IPs).

mod api_common;
mod support;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use api_common::{apply, fails, ok, request, Background};
use support::TestServer;
use tungstenite::client::IntoClientRequest;
use tungstenite::Message;

const KUBECTL_1_31: &str = "/usr/lib/google-cloud-sdk/bin/kubectl.1.31";

/// One request as a stand-in saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    target: String,
    headers: HashMap<String, String>,
}

/// Reads a request head (lower-cased header names).
fn read_head(reader: &mut impl BufRead) -> Option<Seen> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next()?.to_string(), parts.next()?.to_string());
    let mut headers = HashMap::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    Some(Seen { method, target, headers })
}

/// Writes a complete response and closes.
fn respond(w: &mut impl Write, status: &str, extra: &[(&str, &str)], body: &str) {
    let mut head = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
    for (k, v) in extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = w.write_all(head.as_bytes());
    let _ = w.write_all(body.as_bytes());
    let _ = w.flush();
}

/// A chunk of a chunked body.
fn chunk(w: &mut impl Write, data: &str) {
    let _ = write!(w, "{:x}\r\n{data}\r\n", data.len());
    let _ = w.flush();
}

/// The stand-in kubelet: what it saw, and a channel that releases the
/// second line of the followed log.
struct Kubelet {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
    release: mpsc::Sender<()>,
}

fn start_kubelet(s: &TestServer) -> Kubelet {
    let config = support::kubelet_tls(&s.tls_dir());
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (release, released) = mpsc::channel::<()>();
    let released = Arc::new(Mutex::new(released));
    let log = seen.clone();
    std::thread::spawn(move || {
        for tcp in listener.incoming() {
            let Ok(tcp) = tcp else { return };
            let (config, log, released) = (config.clone(), log.clone(), released.clone());
            std::thread::spawn(move || {
                tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                let mut tls = rustls::StreamOwned::new(rustls::ServerConnection::new(config).unwrap(), tcp);
                while tls.conn.is_handshaking() {
                    if tls.conn.complete_io(&mut tls.sock).is_err() {
                        return;
                    }
                }
                let peer = tls.conn.peer_certificates().unwrap()[0].to_vec();
                let cn = b"kube-apiserver-kubelet-client";
                assert!(peer.windows(cn.len()).any(|w| w == cn), "the API server's kubelet client certificate");
                let mut reader = BufReader::new(tls);
                let Some(req) = read_head(&mut reader) else { return };
                log.lock().unwrap().push(req.clone());
                let mut tls = reader.into_inner();
                kubelet_answer(&mut tls, &req, &released);
            });
        }
    });
    Kubelet { port, seen, release }
}

/// What the stand-in kubelet answers.
fn kubelet_answer(tls: &mut (impl Read + Write), req: &Seen, released: &Mutex<mpsc::Receiver<()>>) {
    let path = req.target.split('?').next().unwrap_or("");
    match path {
        "/containerLogs/default/web/c" if req.target.contains("follow=true") => {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n";
            let _ = tls.write_all(head.as_bytes());
            chunk(tls, "first\n");
            // The second line only once the test has seen the first.
            let _ = released.lock().unwrap().recv_timeout(Duration::from_secs(30));
            chunk(tls, "second\n");
            chunk(tls, "");
        }
        "/containerLogs/default/web/c" => respond(tls, "200 OK", &[("Content-Type", "text/plain")], "a\nb\n"),
        "/containerLogs/default/web/d" => respond(
            tls,
            "400 Bad Request",
            &[("Content-Type", "text/plain")],
            "container \"d\" in pod \"web\" is waiting to start: ContainerCreating",
        ),
        "/healthz" => respond(tls, "200 OK", &[("Content-Type", "text/plain")], "ok"),
        "/portForward/default/web" | "/exec/default/web/c" => {
            if req.headers.get("upgrade").map(String::as_str) != Some("SPDY/3.1") {
                return respond(tls, "400 Bad Request", &[], "expected a SPDY upgrade");
            }
            let protocol = req.headers.get("x-stream-protocol-version").cloned().unwrap_or_default();
            let chosen = protocol.split(',').next().unwrap_or("").trim().to_string();
            let head = format!(
                "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: {chosen}\r\n\r\n"
            );
            let _ = tls.write_all(head.as_bytes());
            let _ = tls.flush();
            let mut buf = [0u8; 1024];
            while let Ok(n) = tls.read(&mut buf) {
                if n == 0 || tls.write_all(&buf[..n]).is_err() {
                    break;
                }
                let _ = tls.flush();
            }
        }
        _ => respond(tls, "404 Not Found", &[("Content-Type", "text/plain")], "404 page not found"),
    }
}

/// Node `node-1` whose kubelet is the stand-in, and pod `web` (containers
/// `c` with port `pod_port` and `d`) bound to it, Running with `pod_ip`.
fn cluster(s: &TestServer, kubelet_port: u16, pod_ip: &str, pod_port: u16) {
    apply(s, "apiVersion: v1\nkind: Node\nmetadata:\n  name: node-1\n");
    let status = format!(
        r#"{{"status":{{"addresses":[{{"type":"InternalIP","address":"127.0.0.1"}}],"daemonEndpoints":{{"kubeletEndpoint":{{"Port":{kubelet_port}}}}}}}}}"#
    );
    ok(s, &["patch", "node", "node-1", "--subresource=status", "--type=merge", "-p", &status]);
    apply(
        s,
        &format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  labels: {{app: web}}\nspec:\n  nodeName: node-1\n  containers:\n  - {{name: c, image: 'nginx:1.27', ports: [{{containerPort: {pod_port}}}]}}\n  - {{name: d, image: 'nginx:1.27'}}\n"
        ),
    );
    let status = format!(r#"{{"status":{{"phase":"Running","podIP":"{pod_ip}","podIPs":[{{"ip":"{pod_ip}"}}]}}}}"#);
    ok(s, &["patch", "pod", "web", "--subresource=status", "--type=merge", "-p", &status]);
}

fn kubectl_1_31(s: &TestServer, args: &[&str]) -> std::process::Output {
    std::process::Command::new(KUBECTL_1_31)
        .arg("--kubeconfig")
        .arg(s.kubeconfig())
        .arg("--cache-dir")
        .arg(s.data_dir().join("kubectl-1.31-cache"))
        .args(args)
        .env_remove("KUBECONFIG")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run kubectl 1.31")
}

/// `kubectl logs` (1.33 and 1.31) through the API server to the kubelet:
/// upstream's kubelet URL and options (`--tail`, `--timestamps`,
/// `--since-time`), the body streamed back; `-f` prints each line as the
/// kubelet writes it; a kubelet 400 becomes the BadRequest kubectl prints;
/// invalid options are 422 before the kubelet is asked.
#[test]
fn kubectl_logs_through_the_kubelet() {
    let s = TestServer::start();
    let kubelet = start_kubelet(&s);
    cluster(&s, kubelet.port, "10.0.0.9", 8080);

    assert_eq!(ok(&s, &["logs", "web", "-c", "c"]), "a\nb\n");
    let out = kubectl_1_31(&s, &["logs", "web", "-c", "c"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "a\nb\n", "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(ok(&s, &["logs", "web", "-c", "c", "--tail=1", "--timestamps"]), "a\nb\n");
    ok(&s, &["logs", "web", "-c", "c", "--since-time=2024-05-01T10:00:00+02:00", "--limit-bytes=100"]);
    let err = fails(&s, &["logs", "web", "-c", "d"]);
    assert_eq!(
        err,
        "Error from server (BadRequest): container \"d\" in pod \"web\" is waiting to start: ContainerCreating\n"
    );

    let follow = Background::kubectl(&s, &["logs", "-f", "web", "-c", "c"]);
    // The kubelet holds the second line back: the first arrives alone.
    follow.wait_for("the first line", Duration::from_secs(20), |o| o == "first\n");
    kubelet.release.send(()).unwrap();
    follow.wait_for("the second line", Duration::from_secs(20), |o| o == "first\nsecond\n");

    let targets: Vec<String> =
        kubelet.seen.lock().unwrap().iter().map(|r| format!("{} {}", r.method, r.target)).collect();
    assert_eq!(
        targets,
        [
            "GET /containerLogs/default/web/c",
            "GET /containerLogs/default/web/c",
            "GET /containerLogs/default/web/c?tailLines=1&timestamps=true",
            "GET /containerLogs/default/web/c?limitBytes=100&sinceTime=2024-05-01T08%3A00%3A00Z",
            "GET /containerLogs/default/web/d",
            "GET /containerLogs/default/web/c?follow=true",
        ]
    );

    let reply = request(&s, "GET", "/api/v1/namespaces/default/pods/web/log?container=c&tailLines=-2", &[], b"");
    assert_eq!(reply.status, 422, "{}", reply.body);
    assert_eq!(
        reply.json()["message"],
        "PodLogOptions \"web\" is invalid: tailLines: Invalid value: -2: must be greater than or equal to 0"
    );
    let reply = request(
        &s,
        "GET",
        "/api/v1/namespaces/default/pods/web/log?container=c&sinceSeconds=5&sinceTime=2024-01-01T00:00:00Z",
        &[],
        b"",
    );
    assert_eq!(reply.status, 422, "{}", reply.body);
    let reply = request(&s, "GET", "/api/v1/namespaces/default/pods/web/log?container=c&follow=maybe", &[], b"");
    assert_eq!(
        (reply.status, reply.json()["message"].as_str()),
        (400, Some("strconv.ParseBool: parsing \"maybe\": invalid syntax"))
    );
    assert_eq!(kubelet.seen.lock().unwrap().len(), 6, "invalid options never reach the kubelet");
}

/// This host's address on a non-loopback interface (upstream proxies only
/// to global unicast pod and endpoint IPs); traffic to it stays local.
fn local_unicast_ip() -> IpAddr {
    if_addrs::get_if_addrs()
        .expect("list this host's interfaces")
        .into_iter()
        .map(|i| i.ip())
        .find(|ip| matches!(ip, IpAddr::V4(v4) if !v4.is_loopback() && !v4.is_link_local() && !v4.is_unspecified()))
        .expect("an IPv4 address on a non-loopback interface of this host")
}

/// A plain HTTP backend: `/redirect` answers 302 to `/elsewhere`, every
/// other path echoes what arrived (method, target, forwarded headers,
/// whether credentials leaked) as JSON with CORS headers.
fn start_backend(ip: IpAddr) -> u16 {
    let listener = TcpListener::bind((ip, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for tcp in listener.incoming() {
            let Ok(tcp) = tcp else { return };
            std::thread::spawn(move || {
                tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
                let mut reader = BufReader::new(tcp);
                let Some(req) = read_head(&mut reader) else { return };
                let mut tcp = reader.into_inner();
                if req.headers.contains_key("upgrade") {
                    // An upgrade: 101, then echo what arrives after the target line.
                    let head = format!(
                        "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: {}\r\n\r\n{}\n",
                        req.headers["upgrade"], req.target
                    );
                    let _ = tcp.write_all(head.as_bytes());
                    let mut buf = [0u8; 1024];
                    while let Ok(n) = tcp.read(&mut buf) {
                        if n == 0 || tcp.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    return;
                }
                if req.target == "/redirect" {
                    return respond(&mut tcp, "302 Found", &[("Location", "/elsewhere")], "");
                }
                let h = |k: &str| req.headers.get(k).cloned().unwrap_or_default();
                let body = serde_json::json!({
                    "method": req.method,
                    "target": req.target,
                    "forwardedUri": h("x-forwarded-uri"),
                    "forwardedFor": !h("x-forwarded-for").is_empty(),
                    "authorization": req.headers.contains_key("authorization"),
                    "connection": h("connection"),
                })
                .to_string();
                respond(
                    &mut tcp,
                    "200 OK",
                    &[("Content-Type", "application/json"), ("Access-Control-Allow-Origin", "*"), ("X-Backend", "yes")],
                    &body,
                );
            });
        }
    });
    port
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// `pods/proxy`, `services/proxy` and `nodes/proxy` forward to the pod IP,
/// a ready endpoint of the named service port, and the kubelet: path after
/// `/proxy` and query passed, `X-Forwarded-Uri`/`-For` set, credentials and
/// CORS headers dropped, redirects rewritten through the proxy path, an
/// empty path redirected to `/`, loopback pod IPs refused.
#[test]
fn proxy_subresources_forward_to_pods_services_and_kubelets() {
    let s = TestServer::start();
    let kubelet = start_kubelet(&s);
    let ip = local_unicast_ip();
    let port = start_backend(ip);
    cluster(&s, kubelet.port, &ip.to_string(), port);

    let pod_path = format!("/api/v1/namespaces/default/pods/web:{port}/proxy");
    let got = json(&ok(&s, &["get", "--raw", &format!("{pod_path}/x/y?a=1&b=2")]));
    assert_eq!(got["method"], "GET");
    assert_eq!(got["target"], "/x/y?a=1&b=2");
    assert_eq!(got["forwardedUri"], format!("{pod_path}/x/y"));
    assert_eq!((got["forwardedFor"].as_bool(), got["authorization"].as_bool()), (Some(true), Some(false)));
    // Without a port: the first declared container port.
    let got = json(&ok(&s, &["get", "--raw", "/api/v1/namespaces/default/pods/web/proxy/z/"]));
    assert_eq!(got["target"], "/z/");
    let out = kubectl_1_31(&s, &["get", "--raw", "/api/v1/namespaces/default/pods/web/proxy/v131"]);
    assert_eq!(json(&String::from_utf8_lossy(&out.stdout))["target"], "/v131");

    let reply = request(&s, "POST", &format!("{pod_path}/post?q=1"), &[("Authorization", "Bearer secret")], b"{}");
    assert_eq!(reply.status, 200, "{}", reply.body);
    let got = reply.json();
    assert_eq!((got["method"].as_str(), got["target"].as_str()), (Some("POST"), Some("/post?q=1")));
    assert_eq!(got["authorization"], false);
    assert_eq!(reply.header("x-backend"), ["yes"]);
    assert!(reply.header("access-control-allow-origin").is_empty(), "CORS headers are removed");
    let reply = request(&s, "GET", &format!("{pod_path}/redirect"), &[], b"");
    assert_eq!((reply.status, reply.header("location")), (302, vec![format!("{pod_path}/elsewhere").as_str()]));
    let reply = request(&s, "GET", &format!("{pod_path}?x=1"), &[], b"");
    assert_eq!((reply.status, reply.header("location")), (301, vec![format!("{pod_path}/?x=1").as_str()]));

    // An upgrade through the proxy is passed through (to the location
    // without the client's query, as upstream's tryUpgrade).
    let mut tls = tls_stream(&s);
    let head = format!(
        "GET {pod_path}/chat?room=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: echo/1\r\n\r\n"
    );
    tls.write_all(head.as_bytes()).unwrap();
    let mut reader = BufReader::new(tls);
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    assert!(status.starts_with("HTTP/1.1 101"), "{status}");
    let mut line = String::new();
    while line.trim() != "/chat" {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0, "the backend's first line");
    }
    let mut tls = reader.into_inner();
    tls.write_all(b"hello").unwrap();
    let mut buf = [0u8; 5];
    tls.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"hello");

    // Services: a named port or its number, endpoints targeting the pod.
    apply(&s, &format!("apiVersion: v1\nkind: Service\nmetadata:\n  name: svc\nspec:\n  selector: {{app: web}}\n  ports: [{{name: http, port: 80, targetPort: {port}}}]\n"));
    apply(
        &s,
        &format!("apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: svc\nsubsets:\n- addresses: [{{ip: '{ip}', targetRef: {{kind: Pod, name: web, namespace: default}}}}]\n  ports: [{{name: http, port: {port}}}]\n"),
    );
    for name in ["svc:http", "svc:80", "http:svc:http"] {
        let path = format!("/api/v1/namespaces/default/services/{name}/proxy/s?k=v");
        let got = json(&ok(&s, &["get", "--raw", &path]));
        assert_eq!(got["target"], "/s?k=v", "{name}");
        assert_eq!(got["forwardedUri"], format!("/api/v1/namespaces/default/services/{name}/proxy/s"));
    }
    let err = fails(&s, &["get", "--raw", "/api/v1/namespaces/default/services/svc:81/proxy/"]);
    assert!(err.contains(r#"no service port 81 found for service "svc""#), "{err}");
    let err = fails(&s, &["get", "--raw", "/api/v1/namespaces/default/services/ftp:svc:http/proxy/"]);
    assert!(err.contains(r#"invalid service request "ftp:svc:http""#), "{err}");

    // Nodes: the kubelet, with the kubelet client certificate.
    assert_eq!(ok(&s, &["get", "--raw", "/api/v1/nodes/node-1/proxy/healthz"]), "ok");
    let seen = kubelet.seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(seen.target, "/healthz");
    assert_eq!(seen.headers.get("x-forwarded-uri").map(String::as_str), Some("/api/v1/nodes/node-1/proxy/healthz"));

    // A loopback pod IP is not proxied to.
    let status = r#"{"status":{"podIP":"127.0.0.1","podIPs":[{"ip":"127.0.0.1"}]}}"#;
    ok(&s, &["patch", "pod", "web", "--subresource=status", "--type=merge", "-p", status]);
    let err = fails(&s, &["get", "--raw", &format!("{pod_path}/x")]);
    assert!(err.contains("address not allowed"), "{err}");
}

fn tls_stream(s: &TestServer) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    let config: Arc<rustls::ClientConfig> = support::admin_tls_config(&s.tls_dir()).unwrap();
    let name = rustls::pki_types::ServerName::IpAddress(std::net::Ipv4Addr::LOCALHOST.into());
    let conn = rustls::ClientConnection::new(config, name).unwrap();
    let sock = TcpStream::connect(("127.0.0.1", s.port())).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    rustls::StreamOwned::new(conn, sock)
}

/// SPDY upgrades of `portforward` and `exec` pass through to the kubelet
/// (upstream's UpgradeAwareHandler): the kubelet's `101` with its
/// `X-Stream-Protocol-Version` reaches the client, then bytes flow both
/// ways unchanged. Port-forward over WebSocket (`SPDY/3.1+portforward.k8s.io`,
/// kubectl 1.31+'s default) is tunnelled: the kubelet gets a SPDY upgrade,
/// the client a WebSocket whose binary messages carry the byte stream.
#[test]
fn spdy_upgrades_and_the_port_forward_tunnel_reach_the_kubelet() {
    let s = TestServer::start();
    let kubelet = start_kubelet(&s);
    cluster(&s, kubelet.port, "10.0.0.9", 8080);

    for path in [
        "/api/v1/namespaces/default/pods/web/portforward",
        "/api/v1/namespaces/default/pods/web/exec?command=cat&container=c&stdin=true&stdout=true",
    ] {
        let mut tls = tls_stream(&s);
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: portforward.k8s.io\r\nContent-Length: 0\r\n\r\n"
        );
        tls.write_all(head.as_bytes()).unwrap();
        let mut reader = BufReader::new(tls);
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        assert!(status.starts_with("HTTP/1.1 101"), "{path}: {status}\n{}", s.logs());
        let mut headers = HashMap::new();
        loop {
            let mut h = String::new();
            reader.read_line(&mut h).unwrap();
            if h.trim().is_empty() {
                break;
            }
            let (k, v) = h.split_once(':').unwrap();
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
        assert_eq!(headers.get("x-stream-protocol-version").map(String::as_str), Some("portforward.k8s.io"));
        assert_eq!(headers.get("upgrade").map(String::as_str), Some("SPDY/3.1"));
        let mut tls = reader.into_inner();
        tls.write_all(b"\x80\x03\x00\x01spdy bytes").unwrap();
        let mut buf = [0u8; 14];
        tls.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"\x80\x03\x00\x01spdy bytes");
    }
    let exec = kubelet.seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(exec.target, "/exec/default/web/c?command=cat&input=1&output=1");

    // The WebSocket tunnel.
    let url = format!("wss://127.0.0.1:{}/api/v1/namespaces/default/pods/web/portforward", s.port());
    let mut req = url.into_client_request().unwrap();
    req.headers_mut().insert("Sec-WebSocket-Protocol", "SPDY/3.1+portforward.k8s.io".parse().unwrap());
    let (mut ws, resp) =
        tungstenite::client(req, tls_stream(&s)).unwrap_or_else(|e| panic!("handshake: {e}\n{}", s.logs()));
    assert_eq!(resp.headers()["sec-websocket-protocol"], "SPDY/3.1+portforward.k8s.io");
    ws.send(Message::Binary(b"tunnelled".to_vec().into())).unwrap();
    let Message::Binary(echo) = ws.read().unwrap() else { panic!("expected the echo") };
    assert_eq!(&echo[..], b"tunnelled");
    let tunnel = kubelet.seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!((tunnel.method.as_str(), tunnel.target.as_str()), ("POST", "/portForward/default/web"));
    assert_eq!(tunnel.headers.get("upgrade").map(String::as_str), Some("SPDY/3.1"));
    assert_eq!(tunnel.headers.get("x-stream-protocol-version").map(String::as_str), Some("portforward.k8s.io"));
    assert!(!tunnel.headers.contains_key("sec-websocket-key"), "the WebSocket headers are removed");

    // No tunnelling protocol ending in .k8s.io: upstream's plain 400.
    let reply = request(
        &s,
        "GET",
        "/api/v1/namespaces/default/pods/web/portforward",
        &[
            ("Connection", "Upgrade"),
            ("Upgrade", "websocket"),
            ("Sec-WebSocket-Version", "13"),
            ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
            ("Sec-WebSocket-Protocol", "SPDY/3.1+other"),
        ],
        b"",
    );
    assert_eq!((reply.status, reply.body.as_str()), (400, "unable to upgrade: no tunneling spdy protocols provided\n"));
}
