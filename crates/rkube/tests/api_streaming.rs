//! The streaming pod subresources when the node's kubelet cannot be
//! reached, driven by the real kubectl (1.33 and 1.31) and a raw
//! WebSocket client: a Node whose InternalIP is 127.0.0.1 and whose
//! kubelet port is a closed loopback port, and a pod bound to it through
//! `pods/binding`.
//!
//! What upstream answers there: `exec`/`attach` over WebSocket
//! `v5.channel.k8s.io` are terminated by the API server (the
//! StreamTranslator), which upgrades, then reports its failed SPDY request
//! to the kubelet as an InternalError `Status` on the error channel;
//! `port-forward` (WebSocket-tunnelled SPDY, then SPDY) and `logs` are
//! proxied, so the dial error is a plain 500 before any upgrade.
//!
//! With a kubelet to reach — a stand-in speaking the real protocol (TLS
//! with a cluster-CA certificate, client certificates required, WebSocket
//! `v5.channel.k8s.io`) — exec and attach run through the API server's
//! relay.

mod api_common;
mod support;

use std::net::TcpStream;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::Duration;

use api_common::{apply, manifest, ok, request};
use serde_json::{json, Value};
use support::TestServer;
use tungstenite::client::IntoClientRequest;
use tungstenite::Message;

const KUBECTL_1_31: &str = "/usr/lib/google-cloud-sdk/bin/kubectl.1.31";

/// A server with node `node-1` (InternalIP 127.0.0.1, kubelet port
/// `closed`, where nothing listens) and pod `web` (container `c`) bound to
/// it and Running; returns the closed port.
fn cluster_with_unreachable_kubelet(s: &TestServer) -> u16 {
    let closed = support::free_port();
    apply(s, "apiVersion: v1\nkind: Node\nmetadata:\n  name: node-1\n");
    let status = format!(
        r#"{{"status":{{"addresses":[{{"type":"InternalIP","address":"127.0.0.1"}}],"daemonEndpoints":{{"kubeletEndpoint":{{"Port":{closed}}}}}}}}}"#
    );
    ok(s, &["patch", "node", "node-1", "--subresource=status", "--type=merge", "-p", &status]);
    apply(
        s,
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers: [{name: c, image: 'nginx:1.27'}]\n",
    );
    let binding =
        r#"{"apiVersion":"v1","kind":"Binding","metadata":{"name":"web"},"target":{"kind":"Node","name":"node-1"}}"#;
    let file = manifest(s, "binding.json", binding);
    ok(s, &["create", "--raw", "/api/v1/namespaces/default/pods/web/binding", "-f", &file]);
    ok(s, &["patch", "pod", "web", "--subresource=status", "--type=merge", "-p", r#"{"status":{"phase":"Running"}}"#]);
    closed
}

/// Runs kubectl 1.31 directly (the `/usr/bin/kubectl` dispatcher picks 1.33).
fn kubectl_1_31(s: &TestServer, args: &[&str]) -> Output {
    Command::new(KUBECTL_1_31)
        .arg("--kubeconfig")
        .arg(s.kubeconfig())
        .arg("--cache-dir")
        .arg(s.data_dir().join("kubectl-1.31-cache"))
        .args(args)
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .output()
        .expect("run kubectl 1.31")
}

/// Runs kubectl 1.33 with the WebSocket transports switched off
/// (`KUBECTL_REMOTE_COMMAND_WEBSOCKETS`/`KUBECTL_PORT_FORWARD_WEBSOCKETS`
/// false): SPDY only, as older clients speak.
fn kubectl_spdy(s: &TestServer, args: &[&str]) -> Output {
    Command::new("/usr/bin/kubectl")
        .arg("--kubeconfig")
        .arg(s.kubeconfig())
        .arg("--cache-dir")
        .arg(s.data_dir().join("kubectl-spdy-cache"))
        .args(args)
        .env_remove("KUBECONFIG")
        .env("KUBECTL_REMOTE_COMMAND_WEBSOCKETS", "false")
        .env("KUBECTL_PORT_FORWARD_WEBSOCKETS", "false")
        .stdin(Stdio::null())
        .output()
        .expect("run kubectl")
}

/// Asserts kubectl failed with exit code 1 and printed exactly `expected`.
fn assert_fails_with(out: &Output, expected: &str, what: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{what}: exit code; stderr: {stderr}");
    assert_eq!(stderr, expected, "{what}");
}

/// `kubectl exec`, `attach`, `port-forward` and `logs` against a node
/// whose kubelet cannot be reached print upstream's errors and exit 1,
/// with kubectl 1.33 and 1.31 alike.
#[test]
fn kubectl_streaming_commands_with_an_unreachable_kubelet() {
    let s = TestServer::start();
    let closed = cluster_with_unreachable_kubelet(&s);
    let dial = format!("dial tcp 127.0.0.1:{closed}: connect: connection refused");
    let kubelet = format!("https://127.0.0.1:{closed}");
    let exec = format!(
        "error: Internal error occurred: error sending request: Post \"{kubelet}/exec/default/web/c?command=true&error=1&output=1\": {dial}\n"
    );
    // kubectl's own hint comes first: the upgrade succeeded.
    let attach = format!(
        "If you don't see a command prompt, try pressing enter.\nerror: Internal error occurred: error sending request: Post \"{kubelet}/attach/default/web/c?error=1&output=1\": {dial}\n"
    );
    let port_forward = format!("error: error upgrading connection: error dialing backend: {dial}\n");
    let logs = format!("Error from server: Get \"{kubelet}/containerLogs/default/web/c\": {dial}\n");
    type Run<'a> = Box<dyn Fn(&[&str]) -> Output + 'a>;
    let kubectls: [(&str, Run); 2] = [
        ("kubectl 1.33", Box::new(|a: &[&str]| s.kubectl(a))),
        ("kubectl 1.31", Box::new(|a: &[&str]| kubectl_1_31(&s, a))),
    ];
    for (version, run) in &kubectls {
        assert_fails_with(&run(&["exec", "web", "--", "true"]), &exec, &format!("{version} exec"));
        assert_fails_with(&run(&["attach", "web"]), &attach, &format!("{version} attach"));
        assert_fails_with(&run(&["port-forward", "pod/web", ":80"]), &port_forward, &format!("{version} port-forward"));
        assert_fails_with(&run(&["logs", "web"]), &logs, &format!("{version} logs"));
    }
    // SPDY only: the upgrade is proxied as it is, so the dial error is the
    // plain 500 before any upgrade.
    let spdy = format!("Error from server: error dialing backend: {dial}\n");
    assert_fails_with(&kubectl_spdy(&s, &["exec", "web", "--", "true"]), &spdy, "SPDY exec");
    assert_fails_with(
        &kubectl_spdy(&s, &["attach", "web"]),
        &format!("If you don't see a command prompt, try pressing enter.\n{spdy}"),
        "SPDY attach",
    );
    assert_fails_with(&kubectl_spdy(&s, &["port-forward", "pod/web", ":80"]), &port_forward, "SPDY port-forward");
}

/// A TLS connection to the server as the admin user (HTTP/1.1: no ALPN).
fn tls_stream(s: &TestServer) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    let config: Arc<rustls::ClientConfig> = support::admin_tls_config(&s.tls_dir()).unwrap();
    let name = rustls::pki_types::ServerName::IpAddress(std::net::Ipv4Addr::LOCALHOST.into());
    let conn = rustls::ClientConnection::new(config, name).unwrap();
    let sock = TcpStream::connect(("127.0.0.1", s.port())).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    rustls::StreamOwned::new(conn, sock)
}

type Handshake = Result<
    (
        tungstenite::WebSocket<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>,
        tungstenite::handshake::client::Response,
    ),
    tungstenite::HandshakeError<tungstenite::ClientHandshake<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>>,
>;

/// A WebSocket handshake for `path` offering `protocols`.
fn websocket(s: &TestServer, path: &str, protocols: &str) -> Handshake {
    let mut req = format!("wss://127.0.0.1:{}{path}", s.port()).into_client_request().unwrap();
    req.headers_mut().insert("Sec-WebSocket-Protocol", protocols.parse().unwrap());
    tungstenite::client(req, tls_stream(s))
}

/// A raw `v5.channel.k8s.io` exec session: the upgrade succeeds with v5
/// (the only protocol upstream's translator speaks, whatever else is
/// offered); an empty message on stdout (channel 1) announces the
/// session; the error channel (3) carries upstream's InternalError Status
/// as Go encodes it; then the server closes.
#[test]
fn websocket_exec_reports_the_unreachable_kubelet_on_the_error_channel() {
    let s = TestServer::start();
    let closed = cluster_with_unreachable_kubelet(&s);
    let path = "/api/v1/namespaces/default/pods/web/exec?command=sh&command=-c&command=a%26b&container=c&stdout=true&stderr=true";
    let (mut ws, resp) = websocket(&s, path, "v5.channel.k8s.io, v4.channel.k8s.io, v3.channel.k8s.io")
        .unwrap_or_else(|e| panic!("handshake: {e}\n{}", s.logs()));
    assert_eq!(resp.status(), 101);
    assert_eq!(resp.headers()["sec-websocket-protocol"], "v5.channel.k8s.io");

    let first = ws.read().unwrap();
    assert_eq!(first, Message::Binary(vec![1u8].into()), "the announcement on stdout");
    let Message::Binary(frame) = ws.read().unwrap() else { panic!("expected the error channel") };
    assert_eq!(frame[0], 3, "channel");
    let raw = std::str::from_utf8(&frame[1..]).unwrap();
    let url =
        format!("https://127.0.0.1:{closed}/exec/default/web/c?command=sh&command=-c&command=a%26b&error=1&output=1");
    let cause =
        format!("error sending request: Post \"{url}\": dial tcp 127.0.0.1:{closed}: connect: connection refused");
    let status: Value = serde_json::from_str(raw).unwrap();
    assert_eq!(
        status,
        json!({
            "metadata": {},
            "status": "Failure",
            "message": format!("Internal error occurred: {cause}"),
            "reason": "InternalError",
            "details": {"causes": [{"message": cause}]},
            "code": 500
        })
    );
    assert!(raw.contains(r"command=sh\u0026command=-c"), "Go's JSON escapes '&': {raw}");
    match ws.read() {
        Ok(Message::Close(Some(frame))) => assert_eq!(u16::from(frame.code), 1000),
        other => panic!("expected a normal close, got {other:?}"),
    }
}

/// Requests the translator does not serve are proxied as upstream's
/// UpgradeAwareHandler does: a WebSocket offering only v4 gets the dial
/// error as a plain 500 before any upgrade (so kubectl falls back to
/// SPDY), and a request that is no upgrade at all is a 400.
#[test]
fn untranslated_streaming_requests() {
    let s = TestServer::start();
    let closed = cluster_with_unreachable_kubelet(&s);
    let path = "/api/v1/namespaces/default/pods/web/exec?command=true&stdout=true";
    let v4 = [
        ("Connection", "Upgrade"),
        ("Upgrade", "websocket"),
        ("Sec-WebSocket-Version", "13"),
        ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ("Sec-WebSocket-Protocol", "v4.channel.k8s.io"),
    ];
    let reply = request(&s, "GET", path, &v4, b"");
    assert_eq!(reply.status, 500, "{}", reply.body);
    let status = reply.json();
    assert_eq!(
        status["message"],
        format!("error dialing backend: dial tcp 127.0.0.1:{closed}: connect: connection refused")
    );
    assert_eq!((status["kind"].as_str(), status["code"].as_u64()), (Some("Status"), Some(500)));
    let file = manifest(&s, "empty.json", "{}");
    let out = s.kubectl(&["create", "--raw", path, "-f", &file]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Error from server (BadRequest): Upgrade request required"), "{stderr}");
}

/// One scripted exec session of [`standin_kubelet`]: the path and query
/// it expects, and the frames it answers with before closing.
struct Script {
    expect_path: String,
    frames: Vec<Vec<u8>>,
}

/// A kubelet stand-in on a loopback port: TLS with the cluster's API
/// serving certificate (signed by the cluster CA, valid for 127.0.0.1),
/// client certificates required and checked to be the
/// apiserver-kubelet-client one, then a real WebSocket handshake picking
/// `v5.channel.k8s.io`; each connection plays the next script. Returns
/// the port and the thread, which yields the paths it was asked for.
fn standin_kubelet(s: &TestServer, scripts: Vec<Script>) -> (u16, std::thread::JoinHandle<Vec<String>>) {
    let config = support::kubelet_tls(&s.tls_dir());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let thread = std::thread::spawn(move || {
        let mut paths = vec![];
        for script in scripts {
            let (tcp, _) = listener.accept().unwrap();
            tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
            let mut tls = rustls::StreamOwned::new(rustls::ServerConnection::new(config.clone()).unwrap(), tcp);
            while tls.conn.is_handshaking() {
                tls.conn.complete_io(&mut tls.sock).unwrap();
            }
            let peer = tls.conn.peer_certificates().unwrap()[0].to_vec();
            let cn = b"kube-apiserver-kubelet-client";
            assert!(peer.windows(cn.len()).any(|w| w == cn), "the API server's kubelet client certificate");
            let mut path = String::new();
            let pick_v5 = |req: &tungstenite::handshake::server::Request,
                           mut resp: tungstenite::handshake::server::Response| {
                path = req.uri().to_string();
                assert_eq!(req.headers()["sec-websocket-protocol"], "v5.channel.k8s.io");
                resp.headers_mut().insert("sec-websocket-protocol", "v5.channel.k8s.io".parse().unwrap());
                Ok(resp)
            };
            let mut ws = tungstenite::accept_hdr(tls, pick_v5).unwrap();
            assert_eq!(path, script.expect_path);
            paths.push(path);
            for frame in script.frames {
                ws.send(Message::Binary(frame.into())).unwrap();
            }
            ws.close(None).unwrap();
            while ws.read().is_ok() {}
        }
        paths
    });
    (port, thread)
}

/// With a kubelet to reach, `kubectl exec` (1.33 and 1.31) and `attach` run through
/// the API server's WebSocket relay: the API server authenticates to the
/// kubelet with its kubelet client certificate, asks for upstream's
/// kubelet URL, and the kubelet's stdout and closing Status reach kubectl
/// unchanged — output and exit code 0, or a non-zero exit code from the
/// NonZeroExitCode Status.
#[test]
fn kubectl_exec_through_the_relay_to_a_kubelet() {
    let s = TestServer::start();
    cluster_with_unreachable_kubelet(&s);
    let success = br#"{"metadata":{},"status":"Success"}"#.to_vec();
    let exit_3 = br#"{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}"#.to_vec();
    let frame = |channel: u8, data: &[u8]| [&[channel][..], data].concat();
    let echo = "/exec/default/web/c?command=echo&command=hello&error=1&output=1";
    let exit = "/exec/default/web/c?command=sh&command=-c&command=exit+3&error=1&output=1";
    let attach = "/attach/default/web/c?error=1&output=1";
    let scripts = vec![
        Script { expect_path: echo.into(), frames: vec![frame(1, b"hello\n"), frame(3, &success)] },
        Script { expect_path: echo.into(), frames: vec![frame(1, b"hello\n"), frame(3, &success)] },
        Script { expect_path: exit.into(), frames: vec![frame(2, b"bye\n"), frame(3, &exit_3)] },
        Script { expect_path: attach.into(), frames: vec![frame(1, b"log line\n"), frame(3, &success)] },
    ];
    let (port, kubelet) = standin_kubelet(&s, scripts);
    let status = format!(r#"{{"status":{{"daemonEndpoints":{{"kubeletEndpoint":{{"Port":{port}}}}}}}}}"#);
    ok(&s, &["patch", "node", "node-1", "--subresource=status", "--type=merge", "-p", &status]);

    for out in
        [s.kubectl(&["exec", "web", "--", "echo", "hello"]), kubectl_1_31(&s, &["exec", "web", "--", "echo", "hello"])]
    {
        assert_eq!(String::from_utf8_lossy(&out.stdout), "hello\n", "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let out = s.kubectl(&["exec", "web", "--", "sh", "-c", "exit 3"]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "bye\ncommand terminated with exit code 3\n");
    let out = s.kubectl(&["attach", "web"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "log line\n");
    assert_eq!(kubelet.join().unwrap(), [echo, echo, exit, attach]);
}
