//! A throwaway etcd server for tests and benchmarks.
//!
//! [`EtcdProcess::start`] runs Debian's `/usr/bin/etcd` (3.4) as a one-member
//! cluster in a fresh temporary directory, listening on free loopback ports
//! only (tests never send traffic beyond 127.0.0.1), and waits until its
//! `/health` endpoint answers. The process is killed when the value is
//! dropped — including while a test panics — and, as a last resort, by the
//! kernel when the test binary itself dies (`PR_SET_PDEATHSIG`).
//!
//! Flags that matter to rkube:
//! - `--max-request-bytes 2097152`: etcd's default (1.5 MiB) counts the whole
//!   request, so a value of exactly `MAX_VALUE_BYTES` would be refused;
//! - `--experimental-watch-progress-notify-interval`: makes `progress_notify`
//!   observable in tests (default [`EtcdOptions::progress_notify_interval`],
//!   500 ms, instead of etcd's 10 minutes).
//!
//! Use from a test crate with `mod support;` (see `support/mod.rs`) or from a
//! bench with `#[path = "../tests/support/etcd.rs"] mod etcd_support;`.
#![allow(dead_code)]

use std::fs::File;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Where Debian's etcd-server package installs the server.
pub const ETCD_BINARY: &str = "/usr/bin/etcd";

/// How long [`EtcdProcess::start`] waits for etcd to become healthy.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// Tunables of the test server.
#[derive(Clone, Debug)]
pub struct EtcdOptions {
    /// `--experimental-watch-progress-notify-interval`.
    pub progress_notify_interval: Duration,
    /// `--max-request-bytes`; 2 MiB so 1.5 MiB values fit with their overhead.
    pub max_request_bytes: u64,
    /// Extra command-line flags, appended last.
    pub extra_args: Vec<String>,
}

impl Default for EtcdOptions {
    fn default() -> Self {
        EtcdOptions {
            progress_notify_interval: Duration::from_millis(500),
            max_request_bytes: 2 * 1024 * 1024,
            extra_args: Vec::new(),
        }
    }
}

/// A running (or stopped, between [`EtcdProcess::stop`] and
/// [`EtcdProcess::restart`]) etcd server with its own data directory.
pub struct EtcdProcess {
    child: Option<Child>,
    dir: tempfile::TempDir,
    client_port: u16,
    peer_port: u16,
    options: EtcdOptions,
    starts: u32,
}

impl EtcdProcess {
    /// Starts etcd with [`EtcdOptions::default`].
    pub fn start() -> Result<Self, String> {
        Self::start_with(EtcdOptions::default())
    }

    /// Starts etcd on free loopback ports in a new temporary directory and
    /// waits until it is healthy. Errors say what failed and include etcd's
    /// log; a missing binary names the package to install.
    pub fn start_with(options: EtcdOptions) -> Result<Self, String> {
        if !Path::new(ETCD_BINARY).exists() {
            return Err(format!(
                "etcd not found at {ETCD_BINARY}: install Debian's etcd-server (the README's test command does)"
            ));
        }
        let mut last_err = String::new();
        // A free port can be taken by someone else between our probe and
        // etcd's bind; try a few port pairs before giving up.
        for _ in 0..4 {
            let dir = tempfile::Builder::new()
                .prefix("rkube-etcd-")
                .tempdir()
                .map_err(|e| format!("cannot create a temporary directory for etcd: {e}"))?;
            let (client_port, peer_port) = free_port_pair()?;
            let mut etcd =
                EtcdProcess { child: None, dir, client_port, peer_port, options: options.clone(), starts: 0 };
            match etcd.launch() {
                Ok(()) => return Ok(etcd),
                Err(e) if e.contains("address already in use") => last_err = e,
                Err(e) => return Err(e),
            }
        }
        Err(last_err)
    }

    /// The client URL, e.g. `http://127.0.0.1:41234`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    /// The client URLs, as `EtcdStore::connect` takes them.
    pub fn endpoints(&self) -> Vec<String> {
        vec![self.endpoint()]
    }

    /// etcd's `--data-dir`.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The file etcd logs to (its stderr).
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("etcd.log")
    }

    /// The last `max` bytes of etcd's log, for error messages.
    pub fn log_tail(&self, max: usize) -> String {
        let mut s = String::new();
        if let Ok(mut f) = File::open(self.log_path()) {
            let _ = f.read_to_string(&mut s);
        }
        if s.len() > max {
            let mut cut = s.len() - max;
            while !s.is_char_boundary(cut) {
                cut += 1;
            }
            s = format!("…{}", &s[cut..]);
        }
        s
    }

    /// True while the process runs.
    pub fn is_running(&mut self) -> bool {
        match &mut self.child {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Kills etcd (SIGKILL, as a crash would) and waits for it to exit. The
    /// data directory stays for [`EtcdProcess::restart`].
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops etcd if it runs and starts it again on the same data directory
    /// and ports, waiting until it is healthy.
    pub fn restart(&mut self) -> Result<(), String> {
        self.stop();
        self.launch()
    }

    fn launch(&mut self) -> Result<(), String> {
        let client = self.endpoint();
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .map_err(|e| format!("cannot create etcd's log file {}: {e}", self.log_path().display()))?;
        let mut cmd = Command::new(ETCD_BINARY);
        cmd.arg("--name")
            .arg("rkube-test")
            .arg("--data-dir")
            .arg(self.data_dir())
            .arg("--listen-client-urls")
            .arg(&client)
            .arg("--advertise-client-urls")
            .arg(&client)
            .arg("--listen-peer-urls")
            .arg(&peer)
            .arg("--initial-advertise-peer-urls")
            .arg(&peer)
            .arg("--initial-cluster")
            .arg(format!("rkube-test={peer}"))
            .arg("--initial-cluster-state")
            .arg("new")
            .arg("--max-request-bytes")
            .arg(self.options.max_request_bytes.to_string())
            .arg("--experimental-watch-progress-notify-interval")
            .arg(format!("{}ms", self.options.progress_notify_interval.as_millis()))
            .arg("--logger")
            .arg("zap")
            .arg("--log-outputs")
            .arg("stderr")
            .args(&self.options.extra_args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| format!("cannot duplicate etcd's log file handle: {e}"))?)
            .stderr(log);
        let child = spawn_tied_to_this_process(cmd).map_err(|e| format!("cannot run {ETCD_BINARY}: {e}"))?;
        self.child = Some(child);
        self.starts += 1;
        self.wait_healthy()
    }

    fn wait_healthy(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.client_port));
        loop {
            if let Some(child) = &mut self.child {
                if let Ok(Some(status)) = child.try_wait() {
                    self.child = None;
                    return Err(format!("etcd exited with {status} during startup; its log:\n{}", self.log_tail(4000)));
                }
            }
            if health_ok(addr) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                self.stop();
                return Err(format!(
                    "etcd did not become healthy within {STARTUP_TIMEOUT:?} on {}; its log:\n{}",
                    self.endpoint(),
                    self.log_tail(4000)
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for EtcdProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// GET /health over plain HTTP/1.0; true once etcd reports `"health":"true"`.
fn health_ok(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").is_err() {
        return false;
    }
    let mut body = String::new();
    let _ = s.read_to_string(&mut body);
    body.contains("\"health\":\"true\"")
}

/// Two distinct free loopback ports.
fn free_port_pair() -> Result<(u16, u16), String> {
    let a = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|e| format!("cannot find a free port: {e}"))?;
    let b = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|e| format!("cannot find a free port: {e}"))?;
    let pa = a.local_addr().map_err(|e| e.to_string())?.port();
    let pb = b.local_addr().map_err(|e| e.to_string())?.port();
    Ok((pa, pb))
}

type SpawnRequest = (Command, mpsc::Sender<std::io::Result<Child>>);

/// Spawns `cmd` from one long-lived thread that has asked the kernel to
/// SIGKILL its children when it exits (`PR_SET_PDEATHSIG` fires when the
/// *thread* that forked dies, so short-lived test threads must not fork).
/// That thread lives as long as the test binary, so an etcd never outlives
/// a test run that is killed before its `Drop` runs. rkube's own test
/// harness spawns its servers through here too.
pub fn spawn_tied_to_this_process(cmd: Command) -> std::io::Result<Child> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("child-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    use std::os::unix::process::CommandExt;
                    // SAFETY: prctl is async-signal-safe and touches no
                    // memory of the parent.
                    unsafe {
                        cmd.pre_exec(|| {
                            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                                return Err(std::io::Error::last_os_error());
                            }
                            Ok(())
                        });
                    }
                    let _ = reply.send(cmd.spawn());
                }
            })
            .expect("spawn the child-spawner thread");
        Mutex::new(tx)
    });
    let (reply_tx, reply_rx) = mpsc::channel();
    spawner
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .send((cmd, reply_tx))
        .map_err(|_| std::io::Error::other("the child-spawner thread is gone"))?;
    reply_rx.recv().map_err(|_| std::io::Error::other("the child-spawner thread is gone"))?
}
