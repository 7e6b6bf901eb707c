//! Helpers for the API server tests (`tests/api_*.rs`): kubectl that must
//! succeed or fail, manifests written to files, kubectl watches in the
//! background (always killed), and raw HTTPS requests with any method,
//! headers and body (for what kubectl cannot send: YAML bodies, protobuf
//! content types, oversized bodies).
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;

use crate::support::{TestServer, KUBECTL};

/// Runs kubectl and returns its stdout; panics with stderr on failure.
pub fn ok(s: &TestServer, args: &[&str]) -> String {
    let out = s.kubectl(args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "kubectl {args:?} failed: {}\nstdout: {stdout}\n--- rkube stderr ---\n{}",
        String::from_utf8_lossy(&out.stderr),
        s.logs()
    );
    stdout
}

/// Runs kubectl, expects it to fail, and returns its stderr.
pub fn fails(s: &TestServer, args: &[&str]) -> String {
    let out = s.kubectl(args);
    assert!(
        !out.status.success(),
        "kubectl {args:?} should have failed; stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Writes `content` to `<data-dir>/manifests/<name>` and returns the path.
pub fn manifest(s: &TestServer, name: &str, content: &str) -> String {
    let dir = s.data_dir().join("manifests");
    std::fs::create_dir_all(&dir).expect("manifest dir");
    let path = dir.join(name);
    std::fs::write(&path, content).expect("write manifest");
    path.to_string_lossy().into_owned()
}

/// `kubectl create --validate=false -f <manifest>` (no OpenAPI yet).
pub fn create(s: &TestServer, name: &str, content: &str) -> String {
    let path = manifest(s, name, content);
    ok(s, &["create", "--validate=false", "-f", &path])
}

/// `kubectl <args>` as the admin user with `stdin` piped in (for
/// `apply -f -`); returns its output, whether it succeeded or not.
pub fn kubectl_stdin(s: &TestServer, args: &[&str], stdin: &str) -> std::process::Output {
    let cache = s.data_dir().join("kubectl-stdin.cache");
    let mut child = Command::new(KUBECTL)
        .arg("--kubeconfig")
        .arg(s.kubeconfig())
        .arg("--cache-dir")
        .arg(&cache)
        .args(args)
        .env_remove("KUBECONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn kubectl");
    child.stdin.take().expect("stdin").write_all(stdin.as_bytes()).expect("write kubectl stdin");
    child.wait_with_output().expect("run kubectl")
}

/// `kubectl apply -f -` with `yaml` on stdin; returns stdout, panics with
/// stderr on failure.
pub fn apply(s: &TestServer, yaml: &str) -> String {
    let out = kubectl_stdin(s, &["apply", "-f", "-"], yaml);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "kubectl apply failed: {}\nmanifest:\n{yaml}\n--- rkube stderr ---\n{}",
        String::from_utf8_lossy(&out.stderr),
        s.logs()
    );
    stdout
}

/// `kubectl apply -f -` that must fail as kubectl does for a server error
/// (exit code 1); returns its stderr.
pub fn apply_fails(s: &TestServer, yaml: &str) -> String {
    let out = kubectl_stdin(s, &["apply", "-f", "-"], yaml);
    assert_eq!(
        out.status.code(),
        Some(1),
        "kubectl apply should have failed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `kubectl get <resource> -A` finds nothing.
pub fn assert_nothing_stored(s: &TestServer, resource: &str) {
    let out = s.kubectl(&["get", resource, "-A"]);
    assert!(out.status.success() && out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stderr).contains("No resources found"));
}

/// Asserts that `text` contains every one of `lines`.
pub fn assert_lines(text: &str, lines: &[&str]) {
    for line in lines {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
}

/// A kubectl process running in the background (e.g. `get -w`), its
/// stdout going to a file. Killed (SIGKILL) and reaped on drop, also when
/// the test panics.
pub struct Background {
    child: Child,
    out: PathBuf,
}

impl Background {
    /// Starts `kubectl <args>` as the admin user with its own cache dir.
    pub fn kubectl(s: &TestServer, args: &[&str]) -> Background {
        Self::kubectl_bin(s, KUBECTL, args)
    }

    /// [`Background::kubectl`] with the kubectl binary `bin` (e.g. kubectl
    /// 1.31 called directly).
    #[allow(dead_code)]
    pub fn kubectl_bin(s: &TestServer, bin: &str, args: &[&str]) -> Background {
        let n = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let out = s.data_dir().join(format!("kubectl-bg-{n}.out"));
        let cache = s.data_dir().join(format!("kubectl-bg-{n}.cache"));
        let child = Command::new(bin)
            .arg("--kubeconfig")
            .arg(s.kubeconfig())
            .arg("--cache-dir")
            .arg(&cache)
            .args(args)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).expect("output file"))
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn kubectl");
        Background { child, out }
    }

    /// What it printed so far.
    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.out).unwrap_or_default()
    }

    /// Waits until the output satisfies `done` (panicking with the output
    /// after `timeout`).
    pub fn wait_for(&self, what: &str, timeout: Duration, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let out = self.output();
            if done(&out) {
                return out;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}; kubectl printed:\n{out}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A raw HTTPS response.
#[derive(Debug)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// Header lines, lower-cased names.
    pub headers: Vec<(String, String)>,
    /// The (de-chunked) body.
    pub body: String,
}

impl Reply {
    /// The body as JSON (panics if it is not).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    /// Every value of a header.
    pub fn header(&self, name: &str) -> Vec<&str> {
        self.headers.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str()).collect()
    }
}

/// Sends one HTTP/1.1 request as the admin user over TLS to the server.
pub fn request(s: &TestServer, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    let config = crate::support::admin_tls_config(&s.tls_dir()).unwrap();
    request_with(s, config, method, path, headers, body)
}

/// [`request`] with another client identity (see `support::user_tls_config`).
pub fn request_with(
    s: &TestServer,
    config: std::sync::Arc<rustls::ClientConfig>,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, s.port()));
    raw_request(addr, config, method, path, headers, body).unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

fn raw_request(
    addr: SocketAddr,
    config: std::sync::Arc<rustls::ClientConfig>,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Reply, String> {
    let name = ServerName::IpAddress(addr.ip().into());
    let mut conn = rustls::ClientConnection::new(config, name).map_err(|e| e.to_string())?;
    let mut sock = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).map_err(|e| e.to_string())?;
    sock.set_read_timeout(Some(Duration::from_secs(20))).map_err(|e| e.to_string())?;
    let mut tls = rustls::Stream::new(&mut conn, &mut sock);
    let mut head =
        format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    tls.write_all(head.as_bytes()).map_err(|e| e.to_string())?;
    // A server may answer (413) before reading the whole body.
    let _ = tls.write_all(body);
    let mut raw = Vec::new();
    match tls.read_to_end(&mut raw) {
        Ok(_) => {}
        Err(_) if !raw.is_empty() => {}
        Err(e) => return Err(format!("receive: {e}")),
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").ok_or_else(|| format!("incomplete response: {text:?}"))?;
    let mut lines = head.lines();
    let status =
        lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|c| c.parse().ok()).ok_or("bad status line")?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let chunked = headers.iter().any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked { dechunk(body) } else { body.to_string() };
    Ok(Reply { status, headers, body })
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else { break };
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        s = rest.get(size + 2..).unwrap_or("");
    }
    out
}
