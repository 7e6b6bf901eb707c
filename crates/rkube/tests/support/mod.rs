//! Test harness: runs the real `rkube` binary as `rkube server
//! --disable-agent` on 127.0.0.1 with a fresh data dir and a free port,
//! waits until `/readyz` answers `ok` over TLS, and always tears it down.
//!
//! - [`TestServer::start`] / [`TestServer::start_with`]: start and wait for
//!   readiness; on timeout or early exit, panic with the server's stderr.
//! - [`TestServer::get`]: an HTTPS GET with the cluster CA and the admin
//!   client certificate (a small blocking rustls client).
//! - [`TestServer::kubectl`]: runs `/usr/bin/kubectl --kubeconfig <admin>`.
//! - [`TestServer::stop`]: SIGTERM and wait (SIGKILL after 10 s); returns
//!   the exit status. `Drop` does the same to the whole process group
//!   (SIGTERM, then SIGKILL after 3 s), also when a test panics; and the
//!   kernel SIGKILLs the server if the test binary itself dies
//!   (`PR_SET_PDEATHSIG`).
//!
//! Use from a test file with `mod support;`.
#![allow(dead_code)]

#[path = "../../../store/tests/support/etcd.rs"]
pub mod etcd;

mod cluster;
pub mod netns;
pub mod netns_server;
pub mod node;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

/// The binary under test.
pub const RKUBE: &str = env!("CARGO_BIN_EXE_rkube");
/// The kubectl dispatcher (picks kubectl 1.33 from the server's /version).
pub const KUBECTL: &str = "/usr/bin/kubectl";
/// How long [`TestServer::start`] waits for `/readyz`.
pub const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// The controllers a test server runs unless [`TestServerOptions::controllers`]
/// asks for all: the one that makes pods admissible (`default` accounts).
pub const MINIMAL_CONTROLLERS: &str = "serviceaccount-controller";

/// How to start a test server.
#[derive(Clone, Debug, Default)]
pub struct TestServerOptions {
    /// `--datastore-endpoint`; default: SQLite under the data dir.
    pub datastore_endpoint: Option<String>,
    /// Use this data dir instead of a fresh temporary one (to restart a
    /// server on the same state); the caller keeps it alive.
    pub data_dir: Option<PathBuf>,
    /// Use this port instead of a free one.
    pub port: Option<u16>,
    /// More flags for `rkube server`.
    pub extra_args: Vec<String>,
    /// `--advertise-address`; default `127.0.0.1` (the server binds
    /// 127.0.0.1 either way).
    pub advertise_address: Option<std::net::IpAddr>,
    /// Run every controller (rkube's default `--controllers`). Off by
    /// default: the server then runs only the ServiceAccount controller
    /// ([`MINIMAL_CONTROLLERS`]), which pods need (ServiceAccount admission
    /// refuses a pod whose account does not exist, as upstream), so the API
    /// tests see few objects they did not write (a `default` ServiceAccount
    /// in every namespace, the manager's lease and node-join RBAC objects).
    pub controllers: bool,
    /// Run the scheduler. Off by default (`--disable-scheduler`) so that
    /// pods the API tests create stay as written (no binding, no
    /// PodScheduled condition, no events).
    pub scheduler: bool,
    /// Run the node agent (managed containerd, Node registration) with its
    /// network components, and the cluster DNS server. Off by default
    /// (`--disable-agent --disable-cluster-dns`); needs root and containerd.
    pub agent: bool,
    /// `--bind-address`; default `127.0.0.1`.
    pub bind_address: Option<std::net::IpAddr>,
    /// With [`Self::agent`]: also run kube-proxy and NetworkPolicy
    /// enforcement (off by default: `--disable-kube-proxy
    /// --disable-network-policy`, since test agents share the machine's
    /// network namespace).
    pub network: bool,
    /// Environment variables for the `rkube server` process (on top of
    /// the test's own), e.g. `DBUS_SYSTEM_BUS_ADDRESS`.
    pub env: Vec<(String, String)>,
}

impl TestServerOptions {
    /// The `--controllers` list `extra_args` passes, if any.
    fn controllers_flag(&self) -> Option<&str> {
        let args = &self.extra_args;
        args.iter().enumerate().find_map(|(i, a)| match a.strip_prefix("--controllers") {
            Some("") => args.get(i + 1).map(String::as_str),
            Some(rest) => rest.strip_prefix('='),
            None => None,
        })
    }

    /// Whether the server will run the ServiceAccount controller (then
    /// [`TestServer::start_with`] waits for the `default` account).
    fn runs_service_account_controller(&self) -> bool {
        if self.extra_args.iter().any(|a| a == "--disable-controller-manager") {
            return false;
        }
        let Some(list) = self.controllers_flag() else { return true };
        let items: Vec<&str> = list.split(',').map(str::trim).collect();
        let named = |i: &&str| matches!(*i, "serviceaccount-controller" | "serviceaccount");
        let disabled = items.iter().filter_map(|i| i.strip_prefix('-')).any(|i| named(&i));
        !disabled && items.iter().any(|i| *i == "*" || named(i))
    }
}

/// A running `rkube server` (see the module docs).
pub struct TestServer {
    child: Option<Child>,
    /// Keeps a fresh data dir alive as long as the server.
    _tmp: Option<tempfile::TempDir>,
    data_dir: PathBuf,
    port: u16,
    stderr: Arc<Mutex<String>>,
    stderr_reader: Option<std::thread::JoinHandle<()>>,
    kubectl_cache: tempfile::TempDir,
}

impl TestServer {
    /// Starts a server with default options; panics (with its stderr) if it
    /// is not ready within [`READY_TIMEOUT`].
    pub fn start() -> TestServer {
        Self::start_with(TestServerOptions::default())
    }

    /// Starts a server with `options`; panics (with its stderr) if it does
    /// not become ready. Retries on another port if the free port was taken
    /// meanwhile.
    pub fn start_with(options: TestServerOptions) -> TestServer {
        let mut last_logs = String::new();
        for _ in 0..3 {
            let mut server = Self::spawn(&options);
            let ready = server.wait_ready().and_then(|()| match options.runs_service_account_controller() {
                true => server.wait_default_service_account(),
                false => Ok(()),
            });
            match ready {
                Ok(()) => return server,
                Err(e) if options.port.is_none() && server.logs().contains("already in use") => {
                    last_logs = format!("{e}\n{}", server.logs());
                    continue;
                }
                Err(e) => panic!("rkube server did not become ready: {e}\n--- rkube stderr ---\n{}", server.logs()),
            }
        }
        panic!("rkube server could not find a free port: {last_logs}");
    }

    /// Starts `rkube server` without waiting for readiness.
    pub fn spawn(options: &TestServerOptions) -> TestServer {
        let (tmp, data_dir) = match &options.data_dir {
            Some(dir) => (None, dir.clone()),
            None => {
                let tmp = tempfile::Builder::new().prefix("rkube-test-").tempdir().expect("temporary data dir");
                let dir = tmp.path().to_path_buf();
                (Some(tmp), dir)
            }
        };
        let port = options.port.unwrap_or_else(free_port);
        let mut cmd = Command::new(RKUBE);
        cmd.arg("server");
        let given = |flag: &str| options.extra_args.iter().any(|a| a == flag);
        if !options.agent {
            cmd.arg("--disable-agent");
            if !given("--cluster-dns-port") {
                cmd.arg("--disable-cluster-dns");
            }
        } else {
            // Agents of tests running side by side need their own kubelet ports and pod ranges
            // (two bridges with one subnet would make the host's routes to pods ambiguous).
            if !options.extra_args.iter().any(|a| a == "--kubelet-port") {
                cmd.arg("--kubelet-port").arg(free_port().to_string());
            }
            if !given("--cluster-cidr") {
                cmd.arg("--cluster-cidr").arg(free_cluster_cidr());
            }
            // Each cluster's kube-proxy and node network own their service range on this host.
            if !given("--service-cidr") {
                cmd.arg("--service-cidr").arg(free_cluster_cidr());
            }
            if !given("--cluster-dns-port") {
                cmd.arg("--cluster-dns-port").arg(free_port().to_string());
            }
            if !given("--kube-proxy-metrics-bind-address") {
                cmd.args(["--kube-proxy-metrics-bind-address", "127.0.0.1:0"]);
            }
            // These agents share the machine's own network namespace: keep kube-proxy's and
            // NetworkPolicy's hooks off it unless a test asks (tests/network_multinode.rs runs
            // them for real inside network namespaces of its own).
            if !options.network {
                cmd.args(["--disable-kube-proxy", "--disable-network-policy"]);
            }
            // Upstream's default thresholds evict pods on a CI disk more than 85% full;
            // tests that are not about eviction must not depend on the machine's free space.
            if !options.extra_args.iter().any(|a| a == "--eviction-hard") {
                cmd.args(["--eviction-hard", "memory.available<1Mi,nodefs.available<1%,imagefs.available<1%"]);
            }
            // Likewise image GC (100 turns it off, as upstream's flag).
            if !options.extra_args.iter().any(|a| a == "--image-gc-high-threshold") {
                cmd.args(["--image-gc-high-threshold", "100"]);
            }
        }
        cmd.arg("--data-dir")
            .arg(&data_dir)
            .arg("--bind-address")
            .arg(options.bind_address.map_or_else(|| "127.0.0.1".to_string(), |a| a.to_string()))
            .arg("--advertise-address")
            .arg(options.advertise_address.map_or_else(|| "127.0.0.1".to_string(), |a| a.to_string()))
            .arg("--https-port")
            .arg(port.to_string());
        if let Some(endpoint) = &options.datastore_endpoint {
            cmd.arg("--datastore-endpoint").arg(endpoint);
        }
        if !options.controllers && options.controllers_flag().is_none() {
            cmd.args(["--controllers", MINIMAL_CONTROLLERS]);
        }
        if !options.scheduler {
            cmd.arg("--disable-scheduler");
        }
        cmd.args(&options.extra_args).envs(options.env.iter().cloned()).stdout(Stdio::null()).stderr(Stdio::piped());
        let child = spawn_in_own_group(cmd).expect("spawn rkube");
        let mut server = TestServer {
            child: Some(child),
            _tmp: tmp,
            data_dir,
            port,
            stderr: Arc::default(),
            stderr_reader: None,
            kubectl_cache: tempfile::tempdir().expect("kubectl cache dir"),
        };
        let stderr = server.child.as_mut().unwrap().stderr.take().unwrap();
        let sink = server.stderr.clone();
        server.stderr_reader = Some(std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut s = sink.lock().unwrap_or_else(|p| p.into_inner());
                s.push_str(&line);
                s.push('\n');
            }
        }));
        server
    }

    /// Polls `GET /readyz` until it answers `200 ok`.
    pub fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + READY_TIMEOUT;
        let mut last = String::from("no answer yet");
        while Instant::now() < deadline {
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                self.join_stderr();
                return Err(format!("rkube exited early with {status}"));
            }
            if self.ca_path().exists() && self.kubeconfig().exists() {
                match self.try_get("/readyz") {
                    Ok((200, body)) if body == "ok" => return Ok(()),
                    Ok((code, body)) => last = format!("{code} {body}"),
                    Err(e) => last = e,
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(format!("/readyz not ok within {READY_TIMEOUT:?}; last answer: {last}"))
    }

    /// Waits until the ServiceAccount controller has created `default` in
    /// the `default` namespace (as upstream's e2e framework waits for a
    /// namespace's default account before creating pods there).
    pub fn wait_default_service_account(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + READY_TIMEOUT;
        let path = "/api/v1/namespaces/default/serviceaccounts/default";
        let mut last = String::from("no answer yet");
        while Instant::now() < deadline {
            match self.try_get(path) {
                Ok((200, _)) => return Ok(()),
                Ok((code, body)) => last = format!("{code} {body}"),
                Err(e) => last = e,
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(format!("no default ServiceAccount within {READY_TIMEOUT:?}; last answer: {last}"))
    }

    /// The data dir.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The HTTPS port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `<data-dir>/admin.kubeconfig`.
    pub fn kubeconfig(&self) -> PathBuf {
        self.data_dir.join("admin.kubeconfig")
    }

    /// `<data-dir>/server/tls`.
    pub fn tls_dir(&self) -> PathBuf {
        self.data_dir.join("server").join("tls")
    }

    fn ca_path(&self) -> PathBuf {
        self.tls_dir().join("ca.crt")
    }

    /// The process id of the server.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Everything the server wrote to stderr so far.
    pub fn logs(&self) -> String {
        self.stderr.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// `kubectl --kubeconfig <admin.kubeconfig> <args>` with a private cache dir.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_with(&self.kubeconfig(), args)
    }

    /// `kubectl --kubeconfig <kubeconfig> <args>` with a private cache dir.
    pub fn kubectl_with(&self, kubeconfig: &Path, args: &[&str]) -> Output {
        Command::new(KUBECTL)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--cache-dir")
            .arg(self.kubectl_cache.path())
            .args(args)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .output()
            .expect("run kubectl")
    }

    /// HTTPS GET of `path` as the admin user; `(status, body)`. Panics on
    /// connection errors.
    pub fn get(&self, path: &str) -> (u16, String) {
        self.try_get(path).unwrap_or_else(|e| panic!("GET {path}: {e}\n--- rkube stderr ---\n{}", self.logs()))
    }

    /// HTTPS GET of `path` as the admin user.
    pub fn try_get(&self, path: &str) -> Result<(u16, String), String> {
        https_get(SocketAddr::from((Ipv4Addr::LOCALHOST, self.port)), &self.tls_dir(), path)
    }

    /// Sends `signal` (e.g. `libc::SIGTERM`) to the server process.
    pub fn signal(&self, signal: i32) {
        if let Some(pid) = self.pid() {
            // SAFETY: kill(2) with a pid we spawned.
            unsafe {
                libc::kill(pid as i32, signal);
            }
        }
    }

    /// SIGTERM, then waits up to 10 s (SIGKILL after that); returns the
    /// exit status and how long the exit took.
    pub fn stop(&mut self) -> (ExitStatus, Duration) {
        self.signal(libc::SIGTERM);
        self.wait_exit(Duration::from_secs(10))
    }

    /// Waits for the server to exit by itself (after a signal the test
    /// sent), SIGKILLing it after `timeout`; returns the exit status and how
    /// long the wait took.
    pub fn wait_exit(&mut self, timeout: Duration) -> (ExitStatus, Duration) {
        let started = Instant::now();
        let status = self.wait_or_kill(timeout);
        (status, started.elapsed())
    }

    fn wait_or_kill(&mut self, grace: Duration) -> ExitStatus {
        let mut child = self.child.take().expect("server still running");
        let deadline = Instant::now() + grace;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                _ => {
                    kill_group(child.id(), libc::SIGKILL);
                    break child.wait().expect("wait for rkube");
                }
            }
        };
        // Leftovers in the group (none expected) go too.
        kill_group(child.id(), libc::SIGKILL);
        self.join_stderr();
        status
    }

    fn join_stderr(&mut self) {
        if let Some(reader) = self.stderr_reader.take() {
            let _ = reader.join();
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(child) = &self.child {
            kill_group(child.id(), libc::SIGTERM);
            self.wait_or_kill(Duration::from_secs(3));
        }
    }
}

/// Panics unless the test runs as root on a machine with containerd, runc
/// and the CNI plugins, as CI does (scripts/test.sh installs them).
pub fn require_root_and_runtime() {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(unsafe { libc::geteuid() }, 0, "the node, network and end-to-end tests run as root (as CI does)");
    rkube_kubelet::host::check_runtime_binaries()
        .unwrap_or_else(|e| panic!("{e}. Run the tests through scripts/test.sh, which installs them."));
}

/// A `10.N.0.0/16` range (N in 100..=250) no interface address or route
/// of this host lies in, different from every other one this process
/// handed out: a pod or Service range for a test cluster.
pub fn free_cluster_cidr() -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let read = |args: &[&str]| {
        let out = Command::new("ip").args(args).output().map(|o| o.stdout).unwrap_or_default();
        String::from_utf8_lossy(&out).into_owned()
    };
    let taken = format!("{} {}", read(&["-o", "-4", "addr"]), read(&["-4", "route", "show", "table", "all"]));
    let start = std::process::id() % 151;
    loop {
        let n = 100 + (start + NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) % 151;
        let prefix = format!("10.{n}.");
        if !taken.split_whitespace().any(|w| w.starts_with(&prefix)) {
            return format!("10.{n}.0.0/16");
        }
    }
}

/// A port that was free a moment ago on 127.0.0.1.
pub fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind a probe port").local_addr().unwrap().port()
}

fn kill_group(pgid: u32, signal: i32) {
    // SAFETY: kill(2) on the process group our child leads.
    unsafe {
        libc::kill(-(pgid as i32), signal);
    }
}

/// Spawns `cmd` (stdin from /dev/null) as the leader of a new process
/// group, SIGKILLed by the kernel if the test binary dies
/// ([`etcd::spawn_tied_to_this_process`]).
fn spawn_in_own_group(mut cmd: Command) -> std::io::Result<Child> {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0).stdin(Stdio::null());
    etcd::spawn_tied_to_this_process(cmd)
}

/// Runs `rkube <args>` to completion (killing it after `timeout`) and
/// returns its output; for flag-validation tests.
pub fn run_rkube(args: &[&str], timeout: Duration) -> Output {
    let mut cmd = Command::new(RKUBE);
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = spawn_in_own_group(cmd).expect("spawn rkube");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = r.read_to_end(&mut s);
            s
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait().expect("wait for rkube") {
            Some(status) => break status,
            None if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            None => {
                kill_group(child.id(), libc::SIGKILL);
                let _ = child.wait();
                panic!("rkube {args:?} did not exit within {timeout:?}");
            }
        }
    };
    Output { status, stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap() }
}

/// A blocking HTTPS GET over HTTP/1.1 to `addr`, trusting `<tls_dir>/ca.crt`
/// and presenting `<tls_dir>/admin.crt`; `(status, body)`.
pub fn https_get(addr: SocketAddr, tls_dir: &Path, path: &str) -> Result<(u16, String), String> {
    https_get_with_headers(addr, tls_dir, path, &[]).map(|r| (r.status, r.body))
}

/// A rustls client configuration that trusts `<tls_dir>/ca.crt` and
/// presents the admin certificate `<tls_dir>/admin.crt`.
pub fn admin_tls_config(tls_dir: &Path) -> Result<Arc<rustls::ClientConfig>, String> {
    let read = |name: &str| std::fs::read_to_string(tls_dir.join(name)).map_err(|e| format!("read {name}: {e}"));
    client_tls_config(tls_dir, &read("admin.crt")?, &read("admin.key")?)
}

/// A TLS server configuration for a stand-in kubelet: it requires a client
/// certificate from the cluster CA in `tls_dir` (the API server's
/// kubelet-client one) and serves the API server's own certificate, which
/// the cluster CA signed for 127.0.0.1.
pub fn kubelet_tls(tls_dir: &Path) -> Arc<rustls::ServerConfig> {
    let read = |name: &str| std::fs::read(tls_dir.join(name)).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_slice(&read("ca.crt")).unwrap()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier =
        rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone()).build().unwrap();
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(
            vec![CertificateDer::from_pem_slice(&read("apiserver.crt")).unwrap()],
            PrivateKeyDer::from_pem_slice(&read("apiserver.key")).unwrap(),
        )
        .unwrap();
    Arc::new(config)
}

/// A TLS client configuration for a user of our own: a fresh client
/// certificate from the cluster CA in `tls_dir` with CN `user` and O `group`
/// (how x509 authentication names the user and its group).
pub fn user_tls_config(tls_dir: &Path, user: &str, group: Option<&str>) -> Result<Arc<rustls::ClientConfig>, String> {
    let read = |name: &str| std::fs::read_to_string(tls_dir.join(name)).map_err(|e| format!("read {name}: {e}"));
    let ca = rkube_pki::CertAndKey { cert_pem: read("ca.crt")?, key_pem: read("ca.key")? };
    let pair = rkube_pki::issue_client_certificate(&ca, user, group).map_err(|e| e.to_string())?;
    client_tls_config(tls_dir, &pair.cert_pem, &pair.key_pem)
}

/// A TLS client configuration trusting the cluster CA in `tls_dir` and
/// presenting the client certificate and key given as PEM.
fn client_tls_config(tls_dir: &Path, cert_pem: &str, key_pem: &str) -> Result<Arc<rustls::ClientConfig>, String> {
    let ca = std::fs::read(tls_dir.join("ca.crt")).map_err(|e| format!("read ca.crt: {e}"))?;
    let ca = CertificateDer::from_pem_slice(&ca).map_err(|e| format!("ca.crt: {e}"))?;
    let cert = CertificateDer::from_pem_slice(cert_pem.as_bytes()).map_err(|e| format!("client certificate: {e}"))?;
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).map_err(|e| format!("client key: {e}"))?;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca).map_err(|e| e.to_string())?;
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_client_auth_cert(vec![cert], key)
        .map_err(|e| e.to_string())?;
    Ok(Arc::new(config))
}

fn parse_response(raw: &[u8]) -> Result<(u16, String), String> {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n").ok_or_else(|| format!("incomplete response: {text:?}"))?;
    let status =
        head.split(' ').nth(1).and_then(|s| s.parse().ok()).ok_or_else(|| format!("bad status line: {head:?}"))?;
    let chunked = head.to_ascii_lowercase().contains("transfer-encoding: chunked");
    let body = if chunked { dechunk(body)? } else { body.to_string() };
    Ok((status, body))
}

fn dechunk(mut s: &str) -> Result<String, String> {
    let mut out = String::new();
    loop {
        let (size, rest) = s.split_once("\r\n").ok_or("bad chunk")?;
        let size = usize::from_str_radix(size.split(';').next().unwrap().trim(), 16).map_err(|e| e.to_string())?;
        if size == 0 {
            return Ok(out);
        }
        out.push_str(rest.get(..size).ok_or("short chunk")?);
        s = rest.get(size + 2..).ok_or("short chunk")?;
    }
}

/// A response with its headers (names lower-cased).
#[derive(Clone, Debug)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl HttpResponse {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(k, _)| *k == name).map(|(_, v)| v.as_str())
    }
}

impl TestServer {
    /// HTTPS GET of `path` as the admin user with extra request headers
    /// (e.g. `Accept`); panics on connection errors.
    pub fn get_with_headers(&self, path: &str, headers: &[(&str, &str)]) -> HttpResponse {
        https_get_with_headers(SocketAddr::from((Ipv4Addr::LOCALHOST, self.port)), &self.tls_dir(), path, headers)
            .unwrap_or_else(|e| panic!("GET {path}: {e}\n--- rkube stderr ---\n{}", self.logs()))
    }
}

/// Like [`https_get`], with extra request headers, returning the response
/// headers too.
pub fn https_get_with_headers(
    addr: SocketAddr,
    tls_dir: &Path,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<HttpResponse, String> {
    let name = ServerName::IpAddress(addr.ip().into());
    let mut conn = rustls::ClientConnection::new(admin_tls_config(tls_dir)?, name).map_err(|e| e.to_string())?;
    let mut sock = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).map_err(|e| format!("connect: {e}"))?;
    sock.set_read_timeout(Some(Duration::from_secs(10))).map_err(|e| e.to_string())?;
    let mut tls = rustls::Stream::new(&mut conn, &mut sock);
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    tls.write_all(request.as_bytes()).map_err(|e| format!("send: {e}"))?;
    let mut raw = Vec::new();
    match tls.read_to_end(&mut raw) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !raw.is_empty() => {}
        Err(e) => return Err(format!("receive: {e}")),
    }
    let (status, body) = parse_response(&raw)?;
    let text = String::from_utf8_lossy(&raw);
    let head = text.split_once("\r\n\r\n").map(|(h, _)| h).unwrap_or(&text);
    let headers = head
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Ok(HttpResponse { status, headers, body })
}
