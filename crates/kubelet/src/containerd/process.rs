//! Running the managed containerd: prerequisites, config, the supervised
//! child process (restarted with back-off), readiness through CRI Version,
//! shutdown (TERM, then KILL after 10 s), and cleaning up what its shims and
//! mounts leave on the host.

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

/// A running, supervised containerd. Stop it with [`ManagedContainerd::stop`];
/// dropping it kills the process (SIGKILL) as a last resort.
#[derive(Debug)]
pub struct ManagedContainerd {
    config: ContainerdConfig,
    client: CriClient,
    pid: Arc<AtomicI32>,
    shutdown: watch::Sender<bool>,
    supervisor: Option<tokio::task::JoinHandle<()>>,
}

impl ManagedContainerd {
    /// Checks the host, writes `<data-dir>/agent/containerd/config.toml`,
    /// starts `containerd --config …` (stdout and stderr appended to
    /// `containerd.log`) under a supervisor that restarts it with back-off,
    /// waits until its CRI answers Version, then imports the archives in
    /// `<data-dir>/agent/images` and provides the pause image if missing.
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
        std::fs::write(&paths.config, config.render()).map_err(|source| RuntimeError::Io {
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
        // A containerd left running by an rkube that was killed holds the
        // root's database lock; stop it, then clear its socket.
        stop_leftover_containerd(&paths).await;
        let _ = std::fs::remove_file(&paths.socket);

        let pid = Arc::new(AtomicI32::new(0));
        let (shutdown, shutdown_rx) = watch::channel(false);
        let supervisor = tokio::spawn(supervise(paths.clone(), pid.clone(), shutdown_rx));
        let timeout = opts.ready_timeout.unwrap_or(Duration::from_secs(60));
        let hint = format!("see containerd's log at {}", paths.log.display());
        let ready = match wait_ready(&paths.socket, timeout, hint).await {
            Ok(client) => crate::images::prepare_runtime_images(&client, Some(snapshotter), &paths.images_dir)
                .await
                .map(|()| client)
                .map_err(RuntimeError::from),
            Err(e) => Err(e),
        };
        match ready {
            Ok(client) => Ok(ManagedContainerd { config, client, pid, shutdown, supervisor: Some(supervisor) }),
            Err(e) => {
                let _ = shutdown.send(true);
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

    /// The process id of the running containerd (`None` between a crash and its restart).
    pub fn pid(&self) -> Option<u32> {
        let pid = self.pid.load(Ordering::SeqCst);
        (pid > 0).then_some(pid as u32)
    }

    /// The paths it uses.
    pub fn paths(&self) -> &RuntimePaths {
        &self.config.paths
    }

    /// Stops supervising and stops containerd: SIGTERM, then SIGKILL after
    /// 10 s. Containers keep running in their shims, as with a containerd
    /// restart; [`teardown_host_state`] removes them.
    pub async fn stop(&mut self) {
        let _ = self.shutdown.send(true);
        if let Some(task) = self.supervisor.take() {
            let _ = task.await;
        }
    }
}

impl Drop for ManagedContainerd {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        let pid = self.pid.load(Ordering::SeqCst);
        if pid > 0 {
            // SAFETY: signalling our own child process.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
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

/// Stops (TERM, KILL after 10 s) any `containerd --config <our config>`
/// still running from an earlier, killed, rkube with this data dir.
async fn stop_leftover_containerd(paths: &RuntimePaths) {
    let config = paths.config.as_os_str().as_encoded_bytes();
    let leftovers: Vec<i32> = processes()
        .into_iter()
        .filter(|(_, args)| {
            args.first().is_some_and(|a| a.ends_with(b"containerd"))
                && args.windows(2).any(|w| w[0] == b"--config" && w[1] == config)
        })
        .map(|(pid, _)| pid)
        .collect();
    for pid in leftovers {
        tracing::warn!(component = "containerd", pid, "stopping a containerd left running for this data dir");
        // SAFETY: kill(2) of the process found above.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let deadline = Instant::now() + STOP_GRACE;
        while Path::new(&format!("/proc/{pid}")).exists() && !is_zombie(pid) {
            if Instant::now() >= deadline {
                // SAFETY: as above.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Every process's pid and NUL-split command line.
fn processes() -> Vec<(i32, Vec<Vec<u8>>)> {
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

fn is_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with('Z')))
        .unwrap_or(true)
}

/// Runs containerd until shutdown, restarting it with back-off when it exits.
async fn supervise(paths: RuntimePaths, pid: Arc<AtomicI32>, mut shutdown: watch::Receiver<bool>) {
    let mut backoff = BACKOFF_START;
    loop {
        let started = Instant::now();
        let mut child = match spawn(&paths) {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(component = "containerd", "cannot start containerd: {e}");
                if wait_or_shutdown(&mut shutdown, backoff).await {
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
            status = child.wait() => Some(status),
            _ = shutdown.wait_for(|stop| *stop) => None,
        };
        let Some(status) = exited else {
            terminate(&mut child, child_pid).await;
            pid.store(0, Ordering::SeqCst);
            return;
        };
        pid.store(0, Ordering::SeqCst);
        let status = status.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
        if *shutdown.borrow() {
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
        if wait_or_shutdown(&mut shutdown, backoff).await {
            return;
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

/// Sleeps `d`; true if shutdown was asked for meanwhile.
async fn wait_or_shutdown(shutdown: &mut watch::Receiver<bool>, d: Duration) -> bool {
    let stopped = tokio::select! {
        _ = tokio::time::sleep(d) => false,
        _ = shutdown.wait_for(|stop| *stop) => true,
    };
    stopped || *shutdown.borrow()
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

fn spawn(paths: &RuntimePaths) -> std::io::Result<tokio::process::Child> {
    let log = std::fs::OpenOptions::new().create(true).append(true).open(&paths.log)?;
    let containerd = host::find_executable("containerd").unwrap_or_else(|| PathBuf::from("containerd"));
    tokio::process::Command::new(containerd)
        .arg("--config")
        .arg(&paths.config)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        // The shims find runc through PATH; a minimal service environment may lack sbin.
        .env("PATH", path_with_sbin())
        .kill_on_drop(true)
        .spawn()
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

/// Removes what a managed containerd leaves on the host after it stopped:
/// kills the shims (and so their containers) that served its socket, and
/// unmounts everything mounted under its root and state dirs (rootfs
/// snapshots, sandbox shm). For tests and `rkube` uninstall paths; the
/// normal shutdown leaves containers running, as upstream's does.
pub fn teardown_host_state(paths: &RuntimePaths) {
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
