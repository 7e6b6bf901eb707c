//! Running the managed containerd: prerequisites, config, the supervised
//! process (restarted with back-off), readiness through CRI Version,
//! adoption of a containerd an earlier rkube left running, shutdown, and
//! cleaning up what it, its shims and its mounts leave on the host.
//!
//! Lifetime, as k3s's: containerd runs in a session of its own (a Ctrl-C
//! or a signal to rkube's process group does not reach it) and outlives
//! rkube. Stopping the agent ([`ManagedContainerd::detach`], also what
//! dropping the handle does) leaves it and the pods running; the next
//! [`ManagedContainerd::start`] for the data dir adopts it when it runs the
//! config rkube would write now and answers CRI, and otherwise replaces it.
//! [`ManagedContainerd::stop`] and [`teardown_host_state`] (`rkube
//! killall`) really stop it.

use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::config::{ContainerdConfig, RuntimePaths, Snapshotter};
use crate::cri::{CriClient, CriError};
use crate::host::{self, CgroupDriver, MissingBinary};

/// How long containerd gets to exit after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(10);
/// How long a containerd found running for the data dir gets to answer CRI
/// Version before it is replaced instead of adopted.
const ADOPT_TIMEOUT: Duration = Duration::from_secs(5);
/// Restart back-off: 1 s doubling to 30 s, reset after a minute of running.
const BACKOFF_START: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(30);
const BACKOFF_RESET_AFTER: Duration = Duration::from_secs(60);

/// Why the runtime could not be started or reached.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// containerd, its shim, ctr or runc is not installed.
    #[error(transparent)]
    MissingBinary(#[from] MissingBinary),
    /// A host path could not be created or written.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path concerned.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The runtime did not answer CRI Version in time.
    #[error("the container runtime at unix://{} did not become ready within {timeout:?} (last error: {last}); {hint}", socket.display())]
    NotReady {
        /// The CRI socket.
        socket: PathBuf,
        /// How long rkube waited.
        timeout: Duration,
        /// The last connection or Version error.
        last: String,
        /// Where to look (containerd's log, or the endpoint flag).
        hint: String,
    },
    /// A CRI call failed.
    #[error(transparent)]
    Cri(#[from] CriError),
    /// The pod sandbox image could not be provided.
    #[error("cannot provide the pod sandbox image registry.k8s.io/pause:3.10: {0}")]
    PauseImage(#[from] crate::images::ImportError),
}

/// Settings for [`ManagedContainerd::start`]; `Default` detects everything.
#[derive(Clone, Debug, Default)]
pub struct StartOptions {
    /// Force a cgroup driver instead of detecting it.
    pub cgroup_driver: Option<CgroupDriver>,
    /// Force a snapshotter instead of detecting overlayfs support.
    pub snapshotter: Option<Snapshotter>,
    /// How long to wait for CRI Version (default 60 s).
    pub ready_timeout: Option<Duration>,
}

/// What the supervisor is asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ask {
    /// Keep containerd running, restarting it when it exits.
    Run,
    /// Stop supervising and leave containerd running.
    Leave,
    /// Stop containerd (TERM, KILL after [`STOP_GRACE`]).
    Stop,
}

/// A running, supervised containerd. [`ManagedContainerd::detach`] (and
/// dropping it) leaves containerd running for the next start to adopt;
/// [`ManagedContainerd::stop`] stops it.
#[derive(Debug)]
pub struct ManagedContainerd {
    config: ContainerdConfig,
    client: CriClient,
    pid: Arc<AtomicI32>,
    adopted: bool,
    ask: watch::Sender<Ask>,
    supervisor: Option<tokio::task::JoinHandle<()>>,
}

impl ManagedContainerd {
    /// Checks the host and renders `<data-dir>/agent/containerd/config.toml`.
    /// When a containerd runs with that config path already (left by an
    /// earlier rkube: [`ManagedContainerd::detach`], kill -9) and the file
    /// on disk is byte-identical to the rendered one and its socket answers
    /// CRI Version within 5 s, adopts it: no restart, the pods keep their
    /// containers; it is supervised through a pidfd and replaced with the
    /// usual back-off if it dies. Otherwise stops any such containerd
    /// (logging why), writes the config and starts `containerd --config …`
    /// in its own session (stdout and stderr appended to `containerd.log`)
    /// under a supervisor that restarts it with back-off (1 s doubling to
    /// 30 s), and waits (`opts.ready_timeout`, default 60 s) until its CRI
    /// answers Version. Then imports the archives in
    /// `<data-dir>/agent/images` and provides the pause image if missing.
    /// Errors: missing binaries, unwritable paths, no CRI answer in time
    /// ([`RuntimeError::NotReady`] names containerd's log), a failed import;
    /// containerd is stopped then.
    pub async fn start(data_dir: &Path, opts: StartOptions) -> Result<ManagedContainerd, RuntimeError> {
        host::check_runtime_binaries()?;
        let paths = RuntimePaths::new(data_dir);
        for dir in [&paths.containerd_dir, &paths.root, &paths.state, &paths.cni_conf_dir, &paths.images_dir] {
            std::fs::create_dir_all(dir).map_err(|source| RuntimeError::Io {
                what: "cannot create directory",
                path: dir.clone(),
                source,
            })?;
        }
        let cgroup_driver = opts.cgroup_driver.unwrap_or_else(host::detect_cgroup_driver);
        let snapshotter = opts.snapshotter.unwrap_or_else(|| {
            if host::overlayfs_supported(&paths.root) {
                Snapshotter::Overlayfs
            } else {
                Snapshotter::Native
            }
        });
        let config = ContainerdConfig::new(paths.clone(), cgroup_driver, snapshotter);
        let rendered = config.render();
        let hint = format!("see containerd's log at {}", paths.log.display());

        let running = managed_containerd_pids(&paths);
        let on_disk = std::fs::read(&paths.config).ok();
        let mut adopted = None;
        match leftover_decision(&running, on_disk.as_deref(), rendered.as_bytes()) {
            Leftover::None => {}
            Leftover::Adopt(pid) => match wait_ready(&paths.socket, ADOPT_TIMEOUT, hint.clone()).await {
                Ok(client) if process_running(pid) => adopted = Some((pid, client)),
                Ok(_) => replace_leftovers(&running, "it exited while rkube checked its CRI").await,
                Err(e) => replace_leftovers(&running, &format!("it does not answer CRI Version: {e}")).await,
            },
            Leftover::Replace(reason) => replace_leftovers(&running, &reason).await,
        }

        let pid = Arc::new(AtomicI32::new(0));
        let (ask, ask_rx) = watch::channel(Ask::Run);
        let was_adopted = adopted.is_some();
        let (supervisor, ready) = match adopted {
            Some((adopted_pid, client)) => {
                tracing::info!(
                    component = "containerd",
                    pid = adopted_pid,
                    config = %paths.config.display(),
                    socket = %paths.socket.display(),
                    "adopting the managed containerd (pid {adopted_pid}) left running by the previous rkube"
                );
                pid.store(adopted_pid, Ordering::SeqCst);
                (tokio::spawn(supervise(paths.clone(), pid.clone(), ask_rx, Some(adopted_pid))), Ok(client))
            }
            None => {
                std::fs::write(&paths.config, &rendered).map_err(|source| RuntimeError::Io {
                    what: "cannot write",
                    path: paths.config.clone(),
                    source,
                })?;
                tracing::info!(
                    component = "kubelet",
                    config = %paths.config.display(),
                    socket = %paths.socket.display(),
                    cgroup_driver = cgroup_driver.as_str(),
                    snapshotter = snapshotter.as_str(),
                    "starting the managed containerd"
                );
                let _ = std::fs::remove_file(&paths.socket);
                let supervisor = tokio::spawn(supervise(paths.clone(), pid.clone(), ask_rx, None));
                let timeout = opts.ready_timeout.unwrap_or(Duration::from_secs(60));
                (supervisor, wait_ready(&paths.socket, timeout, hint).await)
            }
        };
        let ready = match ready {
            Ok(client) => crate::images::prepare_runtime_images(&client, Some(snapshotter), &paths.images_dir)
                .await
                .map(|()| client)
                .map_err(RuntimeError::from),
            Err(e) => Err(e),
        };
        match ready {
            Ok(client) => {
                Ok(ManagedContainerd { config, client, pid, adopted: was_adopted, ask, supervisor: Some(supervisor) })
            }
            Err(e) => {
                let _ = ask.send(Ask::Stop);
                let _ = supervisor.await;
                Err(e)
            }
        }
    }

    /// The CRI client on the managed socket.
    pub fn client(&self) -> &CriClient {
        &self.client
    }

    /// The config it runs with (paths, snapshotter, cgroup driver).
    pub fn config(&self) -> &ContainerdConfig {
        &self.config
    }

    /// The process id of the running containerd (`None` between a crash and
    /// its restart, and after [`ManagedContainerd::stop`] or
    /// [`ManagedContainerd::detach`]).
    pub fn pid(&self) -> Option<u32> {
        let pid = self.pid.load(Ordering::SeqCst);
        (pid > 0).then_some(pid as u32)
    }

    /// Whether [`ManagedContainerd::start`] adopted a containerd left
    /// running by an earlier rkube instead of starting one.
    pub fn adopted(&self) -> bool {
        self.adopted
    }

    /// The paths it uses.
    pub fn paths(&self) -> &RuntimePaths {
        &self.config.paths
    }

    /// Stops supervising and stops containerd: SIGTERM, then SIGKILL after
    /// 10 s. Containers keep running in their shims, as with a containerd
    /// restart; [`teardown_host_state`] removes them. For error paths and
    /// tests; the agent's normal shutdown is [`ManagedContainerd::detach`].
    pub async fn stop(&mut self) {
        let _ = self.ask.send(Ask::Stop);
        if let Some(task) = self.supervisor.take() {
            let _ = task.await;
        }
    }

    /// Stops supervising and leaves containerd and the pods running (what
    /// `rkube server`/`rkube agent` do on SIGTERM and SIGINT, as k3s does):
    /// the next [`ManagedContainerd::start`] for the data dir adopts it, and
    /// `rkube killall` ([`teardown_node`]) stops everything. Logs the pid
    /// and that command.
    pub async fn detach(&mut self) {
        let Some(task) = self.supervisor.take() else { return };
        let pid = self.pid.load(Ordering::SeqCst);
        let _ = self.ask.send(Ask::Leave);
        let _ = task.await;
        if pid > 0 && process_running(pid) {
            tracing::info!(
                component = "containerd",
                pid,
                "leaving the managed containerd (pid {pid}) and the pods running for the next start to adopt; \
                 `rkube killall --data-dir {}` stops them all",
                data_dir_of(self.paths()).display()
            );
        }
    }
}

impl Drop for ManagedContainerd {
    /// Leaves containerd running, as [`ManagedContainerd::detach`] (without
    /// waiting for the supervisor).
    fn drop(&mut self) {
        if self.supervisor.is_some() {
            let _ = self.ask.send(Ask::Leave);
        }
    }
}

/// `<data-dir>` of the runtime paths (`<data-dir>/agent/containerd`).
fn data_dir_of(paths: &RuntimePaths) -> &Path {
    paths.containerd_dir.parent().and_then(Path::parent).unwrap_or(&paths.containerd_dir)
}

/// What to do with the containerd processes found running with our config path.
#[derive(Debug, PartialEq, Eq)]
enum Leftover {
    /// None runs: start one.
    None,
    /// Exactly one runs with the config rkube would write now: adopt it
    /// (if it answers CRI).
    Adopt(i32),
    /// Stop them and start a fresh one, for the reason given.
    Replace(String),
}

/// The decision of [`ManagedContainerd::start`] about the containerd
/// processes `running` with our `--config` path, given the config file on
/// disk and the one rkube would write now.
fn leftover_decision(running: &[i32], on_disk: Option<&[u8]>, wanted: &[u8]) -> Leftover {
    match (running, on_disk) {
        ([], _) => Leftover::None,
        ([_, _, ..], _) => {
            Leftover::Replace(format!("{} containerd processes run with this data dir's config", running.len()))
        }
        (_, None) => Leftover::Replace("its config file is gone".into()),
        ([pid], Some(current)) if current == wanted => Leftover::Adopt(*pid),
        (_, Some(current)) => Leftover::Replace(format!(
            "the config rkube writes now differs from the one it runs with ({})",
            first_difference(current, wanted)
        )),
    }
}

/// Where two config files first differ, for the log: `line N: "old" → "new"`.
fn first_difference(old: &[u8], new: &[u8]) -> String {
    let (old, new) = (String::from_utf8_lossy(old), String::from_utf8_lossy(new));
    let mut a = old.lines();
    let mut b = new.lines();
    let mut n = 1;
    loop {
        match (a.next(), b.next()) {
            (Some(x), Some(y)) if x == y => n += 1,
            (None, None) => return "line endings".into(),
            (x, y) => return format!("line {n}: {:?} → {:?}", x.unwrap_or("<end>"), y.unwrap_or("<end>")),
        }
    }
}

/// Stops the `pids` found running with our config (TERM, KILL after
/// [`STOP_GRACE`]), logging why they are not adopted.
async fn replace_leftovers(pids: &[i32], reason: &str) {
    for pid in pids {
        tracing::warn!(
            component = "containerd",
            pid,
            "stopping the managed containerd (pid {pid}) left running for this data dir: {reason}; starting a fresh one"
        );
    }
    let pids = pids.to_vec();
    let _ = tokio::task::spawn_blocking(move || stop_processes(&pids)).await;
}

/// Connects and calls Version until it answers, logging progress every 5 s.
pub(super) async fn wait_ready(socket: &Path, timeout: Duration, hint: String) -> Result<CriClient, RuntimeError> {
    let started = Instant::now();
    let mut last_log = Instant::now();
    let mut last;
    loop {
        match CriClient::connect(socket).await {
            Ok(client) => match client.with_timeout(Duration::from_secs(5)).version().await {
                Ok(v) => {
                    tracing::info!(
                        component = "kubelet",
                        runtime = %v.runtime_name,
                        version = %v.runtime_version,
                        api = %v.runtime_api_version,
                        after_ms = started.elapsed().as_millis() as u64,
                        "container runtime is ready"
                    );
                    return Ok(client);
                }
                Err(e) => last = e.to_string(),
            },
            Err(e) => last = e.to_string(),
        }
        if started.elapsed() >= timeout {
            return Err(RuntimeError::NotReady { socket: socket.to_path_buf(), timeout, last, hint });
        }
        if last_log.elapsed() >= Duration::from_secs(5) {
            tracing::info!(component = "kubelet", socket = %socket.display(), "waiting for the runtime's CRI: {last}");
            last_log = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The pids of the running `containerd --config <paths.config>` processes:
/// the managed containerd of this data dir, whichever rkube started it.
pub fn managed_containerd_pids(paths: &RuntimePaths) -> Vec<i32> {
    let config = paths.config.as_os_str().as_encoded_bytes();
    processes()
        .into_iter()
        .filter(|(_, args)| {
            args.first().is_some_and(|a| a.ends_with(b"containerd"))
                && args.windows(2).any(|w| w[0] == b"--config" && w[1] == config)
        })
        .map(|(pid, _)| pid)
        .filter(|pid| process_running(*pid))
        .collect()
}

/// SIGTERM to every pid, then waits up to [`STOP_GRACE`] for them to exit;
/// SIGKILL to those left, and up to 5 s more for them to go. Blocking.
fn stop_processes(pids: &[i32]) {
    for &pid in pids {
        // SAFETY: kill(2) of processes found running with our config.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    let deadline = Instant::now() + STOP_GRACE;
    let mut killed = false;
    loop {
        let left: Vec<i32> = pids.iter().copied().filter(|p| process_running(*p)).collect();
        if left.is_empty() {
            for pid in pids {
                tracing::info!(component = "containerd", pid, "containerd stopped");
            }
            return;
        }
        if !killed && Instant::now() >= deadline {
            for &pid in &left {
                tracing::warn!(
                    component = "containerd",
                    pid,
                    "containerd did not stop within {STOP_GRACE:?}; killing it"
                );
                // SAFETY: as above.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            killed = true;
        }
        if killed && Instant::now() >= deadline + Duration::from_secs(5) {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Every process's pid and NUL-split command line (from `/proc`).
pub fn processes() -> Vec<(i32, Vec<Vec<u8>>)> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse::<i32>().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let args = cmdline.split(|b| *b == 0).filter(|a| !a.is_empty()).map(<[u8]>::to_vec).collect();
            Some((pid, args))
        })
        .collect()
}

/// Whether `pid` exists and has not exited (a zombie has).
pub fn process_running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, rest)| !rest.trim_start().starts_with('Z')))
        .unwrap_or(false)
}

/// Resolves when process `pid` (not necessarily our child) exits: through
/// a pidfd (readable once the process terminates), or by checking
/// `/proc/<pid>` every second where pidfds are not available.
async fn process_exit(pid: i32) {
    // SAFETY: pidfd_open(2) takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd >= 0 {
        // SAFETY: fd is a new descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        // SAFETY: the AsyncFd owns the OwnedFd, which stays open until it is dropped.
        let registered = unsafe { tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) };
        if let Ok(fd) = registered {
            if fd.readable().await.is_ok() {
                return;
            }
        }
    }
    while process_running(pid) {
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Waits until asked for something else than [`Ask::Run`]; a dropped sender is [`Ask::Leave`].
async fn asked(ask: &mut watch::Receiver<Ask>) -> Ask {
    ask.wait_for(|a| *a != Ask::Run).await.map(|a| *a).unwrap_or(Ask::Leave)
}

/// Keeps containerd running until asked to leave or stop it, restarting it
/// with back-off when it exits; starts by watching `adopted` when given.
async fn supervise(paths: RuntimePaths, pid: Arc<AtomicI32>, mut ask: watch::Receiver<Ask>, adopted: Option<i32>) {
    let mut backoff = BACKOFF_START;
    if let Some(adopted) = adopted {
        let exited = tokio::select! {
            _ = process_exit(adopted) => None,
            a = asked(&mut ask) => Some(a),
        };
        pid.store(0, Ordering::SeqCst);
        match exited {
            Some(Ask::Stop) => {
                tracing::info!(component = "containerd", pid = adopted, "stopping containerd");
                let _ = tokio::task::spawn_blocking(move || stop_processes(&[adopted])).await;
                return;
            }
            Some(_) => return,
            None => {
                tracing::warn!(
                    component = "containerd",
                    pid = adopted,
                    "the adopted containerd exited; starting a new one in {backoff:?} (see {})",
                    paths.log.display()
                );
                if wait_or_asked(&mut ask, backoff).await {
                    return;
                }
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
        }
    }
    loop {
        let started = Instant::now();
        let mut child = match spawn(&paths) {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(component = "containerd", "cannot start containerd: {e}");
                if wait_or_asked(&mut ask, backoff).await {
                    return;
                }
                backoff = (backoff * 2).min(BACKOFF_MAX);
                continue;
            }
        };
        let child_pid = child.id().map(|p| p as i32).unwrap_or(0);
        pid.store(child_pid, Ordering::SeqCst);
        tracing::info!(component = "containerd", pid = child_pid, log = %paths.log.display(), "containerd started");
        let exited = tokio::select! {
            status = child.wait() => Ok(status),
            a = asked(&mut ask) => Err(a),
        };
        let status = match exited {
            Ok(status) => status,
            Err(a) => {
                if a == Ask::Stop {
                    terminate(&mut child, child_pid).await;
                }
                // Ask::Leave: dropping the handle does not kill it (no kill_on_drop).
                pid.store(0, Ordering::SeqCst);
                return;
            }
        };
        pid.store(0, Ordering::SeqCst);
        let status = status.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
        if *ask.borrow() != Ask::Run {
            return;
        }
        if started.elapsed() >= BACKOFF_RESET_AFTER {
            backoff = BACKOFF_START;
        }
        tracing::warn!(
            component = "containerd",
            "containerd exited ({status}); restarting in {backoff:?} (see {})",
            paths.log.display()
        );
        if wait_or_asked(&mut ask, backoff).await {
            return;
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

/// Sleeps `d`; true if asked to leave or stop meanwhile.
async fn wait_or_asked(ask: &mut watch::Receiver<Ask>, d: Duration) -> bool {
    let stopped = tokio::select! {
        _ = tokio::time::sleep(d) => false,
        _ = asked(ask) => true,
    };
    stopped || *ask.borrow() != Ask::Run
}

/// SIGTERM, then SIGKILL after [`STOP_GRACE`].
async fn terminate(child: &mut tokio::process::Child, pid: i32) {
    tracing::info!(component = "containerd", pid, "stopping containerd");
    if pid > 0 {
        // SAFETY: signalling our own child process.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    match tokio::time::timeout(STOP_GRACE, child.wait()).await {
        Ok(_) => tracing::info!(component = "containerd", pid, "containerd stopped"),
        Err(_) => {
            tracing::warn!(component = "containerd", pid, "containerd did not stop within {STOP_GRACE:?}; killing it");
            let _ = child.kill().await;
        }
    }
}

/// `containerd --config <paths.config>` in a new session (so that signals
/// to rkube's process group, a Ctrl-C, do not reach it) that outlives
/// the handle.
fn spawn(paths: &RuntimePaths) -> std::io::Result<tokio::process::Child> {
    let log = std::fs::OpenOptions::new().create(true).append(true).open(&paths.log)?;
    let containerd = host::find_executable("containerd").unwrap_or_else(|| PathBuf::from("containerd"));
    let mut cmd = tokio::process::Command::new(containerd);
    cmd.arg("--config")
        .arg(&paths.config)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        // The shims find runc through PATH; a minimal service environment may lack sbin.
        .env("PATH", path_with_sbin());
    // SAFETY: setsid(2) is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn()
}

fn path_with_sbin() -> String {
    let current = std::env::var("PATH").unwrap_or_default();
    let mut parts: Vec<&str> = current.split(':').filter(|p| !p.is_empty()).collect();
    for p in ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"] {
        if !parts.contains(&p) {
            parts.push(p);
        }
    }
    parts.join(":")
}

/// Removes what a managed containerd leaves on the host: stops the
/// containerd still running with `paths.config` (SIGTERM, SIGKILL after
/// 10 s; blocking), kills the shims (and so their containers) that served
/// its socket, and unmounts everything mounted under its root and state
/// dirs (rootfs snapshots, sandbox shm). For `rkube killall` and the
/// tests' guards; the normal shutdown leaves containerd and the containers
/// running, as k3s's does.
pub fn teardown_host_state(paths: &RuntimePaths) {
    let running = managed_containerd_pids(paths);
    if !running.is_empty() {
        tracing::info!(component = "kubelet", pids = ?running, "stopping the managed containerd of this data dir");
        stop_processes(&running);
    }
    let socket = paths.socket.as_os_str().as_encoded_bytes();
    for (pid, args) in processes() {
        let is_our_shim = args.first().is_some_and(|a| a.ends_with(b"containerd-shim-runc-v2"))
            && args.windows(2).any(|w| w[0] == b"-address" && w[1] == socket);
        if is_our_shim {
            tracing::info!(component = "kubelet", pid, "killing a leftover containerd shim");
            // The shim is its containers' subreaper: kill them with it.
            kill_tree(pid);
        }
    }
    // Pod sandboxes first: their network namespaces are pinned under the state dir.
    for target in mounts_under(&[&paths.root, &paths.state]).into_iter().rev() {
        let c = std::ffi::CString::new(target.as_os_str().as_encoded_bytes()).unwrap_or_default();
        // SAFETY: c is a valid C string.
        if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } != 0 {
            tracing::warn!(
                component = "kubelet",
                "cannot unmount {}: {}",
                target.display(),
                std::io::Error::last_os_error()
            );
        }
    }
}

/// Everything a node agent with data dir `data_dir` leaves on the host
/// when it is stopped without deleting its pods: containerd's shims and
/// mounts ([`teardown_host_state`]), the pods' volume mounts (tmpfs) under
/// the data dir, and the pod bridge. What `rkube killall` and the tests'
/// guards run; it touches nothing that does not derive from `data_dir`.
pub fn teardown_node(data_dir: &std::path::Path) {
    teardown_host_state(&super::RuntimePaths::new(data_dir));
    let abs = std::path::absolute(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
    for target in mounts_under(&[&abs]).into_iter().rev() {
        let c = std::ffi::CString::new(target.as_os_str().as_encoded_bytes()).unwrap_or_default();
        // SAFETY: c is a valid C string.
        if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } != 0 {
            tracing::warn!(
                component = "kubelet",
                "cannot unmount {}: {}",
                target.display(),
                std::io::Error::last_os_error()
            );
        }
    }
    remove_pod_bridge(data_dir);
    remove_pod_logs(&abs.join("agent").join("pods"));
}

/// Removes `/var/log/pods/<ns>_<name>_<uid>` of every pod that has a
/// directory under `pods_dir` (each pod the agent ran has one), then the
/// `/var/log/containers` links left dangling.
fn remove_pod_logs(pods_dir: &std::path::Path) {
    let uids: Vec<String> = std::fs::read_dir(pods_dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if uids.is_empty() {
        return;
    }
    let root = std::path::Path::new(crate::pods::labels::POD_LOGS_ROOT);
    for e in std::fs::read_dir(root).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if uids.iter().any(|u| name.ends_with(&format!("_{u}"))) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
    crate::logs::remove_dangling_symlinks(std::path::Path::new(crate::pods::labels::CONTAINER_LOGS_ROOT));
}

/// Deletes the node's pod bridge (`cni::bridge_name` of the data dir) and
/// with it the routes to its pod range; nothing else of the host's network
/// is touched. Best effort: a missing bridge is fine.
pub fn remove_pod_bridge(data_dir: &std::path::Path) {
    let bridge = crate::agent::cni::bridge_name(data_dir);
    match std::process::Command::new("ip").args(["link", "delete", &bridge, "type", "bridge"]).output() {
        Ok(out) if out.status.success() => {
            tracing::info!(component = "kubelet", bridge = %bridge, "removed the pod bridge")
        }
        Ok(_) => {}
        Err(e) => tracing::debug!(component = "kubelet", "cannot run ip to remove {bridge}: {e}"),
    }
}

/// SIGKILL to `pid` and every process whose parent chain leads to it.
fn kill_tree(pid: i32) {
    let mut victims = vec![pid];
    let mut i = 0;
    while i < victims.len() {
        let parent = victims[i];
        if let Ok(entries) = std::fs::read_dir("/proc") {
            for entry in entries.flatten() {
                let Ok(child) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
                if parent_of(child) == Some(parent) && !victims.contains(&child) {
                    victims.push(child);
                }
            }
        }
        i += 1;
    }
    for v in victims {
        // SAFETY: kill(2) on pids found above.
        unsafe { libc::kill(v, libc::SIGKILL) };
    }
}

fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command: state, ppid, …
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split(' ').nth(1)?.parse().ok()
}

/// Mount points at or under any of `dirs`, in mount order.
fn mounts_under(dirs: &[&Path]) -> Vec<PathBuf> {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else { return Vec::new() };
    info.lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|m| PathBuf::from(unescape_mountinfo(m)))
        .filter(|m| dirs.iter().any(|d| m.starts_with(d)))
        .collect()
}

/// mountinfo escapes space, tab, newline and backslash as octal `\ooo`.
fn unescape_mountinfo(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &[u8] = b"version = 2\nroot = \"/d/agent/containerd/root\"\n";

    #[test]
    fn nothing_running_starts_a_containerd() {
        assert_eq!(leftover_decision(&[], Some(CONFIG), CONFIG), Leftover::None);
        assert_eq!(leftover_decision(&[], None, CONFIG), Leftover::None);
    }

    #[test]
    fn one_running_with_the_identical_config_is_adopted() {
        assert_eq!(leftover_decision(&[42], Some(CONFIG), CONFIG), Leftover::Adopt(42));
    }

    #[test]
    fn a_changed_config_replaces_it_and_says_where() {
        let now = b"version = 2\nroot = \"/d/agent/containerd/root\"\nsnapshotter = \"native\"\n";
        let Leftover::Replace(why) = leftover_decision(&[42], Some(CONFIG), now) else { panic!() };
        assert_eq!(
            why,
            "the config rkube writes now differs from the one it runs with \
             (line 3: \"<end>\" → \"snapshotter = \\\"native\\\"\")"
        );
        // Byte-identical means byte-identical: a trailing newline counts.
        let Leftover::Replace(why) = leftover_decision(&[42], Some(&CONFIG[..CONFIG.len() - 1]), CONFIG) else {
            panic!()
        };
        assert!(why.ends_with("(line endings)"), "{why}");
    }

    #[test]
    fn a_missing_config_or_several_processes_replace_them() {
        assert_eq!(leftover_decision(&[42], None, CONFIG), Leftover::Replace("its config file is gone".into()));
        assert_eq!(
            leftover_decision(&[42, 43], Some(CONFIG), CONFIG),
            Leftover::Replace("2 containerd processes run with this data dir's config".into())
        );
    }

    #[test]
    fn the_data_dir_is_two_levels_above_containerds_dir() {
        let paths = RuntimePaths::new(Path::new("/var/lib/rkube"));
        assert_eq!(data_dir_of(&paths), Path::new("/var/lib/rkube"));
    }

    #[tokio::test]
    async fn process_exit_resolves_when_a_process_that_is_not_ours_exits() {
        // A grandchild: `sh` forks `sleep`, prints its pid and exits, so the
        // sleep is reparented away from this test, as an adopted containerd is.
        let out = std::process::Command::new("sh").args(["-c", "sleep 2 >/dev/null 2>&1 & echo $!"]).output().unwrap();
        let pid: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        assert!(process_running(pid));
        tokio::time::timeout(Duration::from_secs(60), process_exit(pid)).await.expect("the exit is seen");
        assert!(!process_running(pid));
        // A pid that runs no process resolves at once.
        tokio::time::timeout(Duration::from_secs(5), process_exit(pid)).await.expect("no process");
    }
}
