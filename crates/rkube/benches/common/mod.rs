//! Helpers shared by the benches that run a real one-node cluster
//! (`pod_startup`, `cluster_e2e`): process memory, the managed containerd's
//! processes, quantiles and clocks, polling, and an admin kube-rs client.
//!
//! Use from a bench file at `benches/<name>.rs` with `mod common;`.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, WatchEvent, WatchParams};

/// `VmRSS` of a process in bytes (0 when it is gone).
pub fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// `(pid, argv)` of every process.
pub fn processes() -> Vec<(u32, Vec<String>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else { continue };
        let argv =
            cmd.split(|b| *b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into()).collect();
        out.push((pid, argv));
    }
    out
}

/// The managed containerd of `data_dir` (started with its config file).
pub fn containerd_pid(data_dir: &Path) -> Option<u32> {
    let config = rkube_kubelet::containerd::RuntimePaths::new(data_dir).config.to_string_lossy().into_owned();
    processes().into_iter().find_map(|(pid, argv)| {
        (argv.first().is_some_and(|a| a.ends_with("containerd")) && argv.iter().any(|a| *a == config)).then_some(pid)
    })
}

/// Stops a managed containerd of `data_dir` still running after `rkube
/// killall` (SIGTERM, SIGKILL after 10 s); whether one was found. Only the
/// process started with this data dir's config file is signalled.
pub fn stop_leftover_containerd(data_dir: &Path) -> bool {
    let Some(pid) = containerd_pid(data_dir) else { return false };
    eprintln!("  containerd {pid} of {} still runs after rkube killall; stopping it", data_dir.display());
    // SAFETY: kill(2) of the containerd this bench's server started for its own data dir.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(10);
    while is_alive(pid) {
        if Instant::now() > deadline {
            // SAFETY: as above.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

/// Whether `pid` exists and is not a zombie.
pub fn is_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, rest)| !rest.trim_start().starts_with('Z')))
        .unwrap_or(false)
}

/// Total RSS and count of the containerd shims serving `socket`.
pub fn shims_rss(socket: &Path) -> (u64, usize) {
    let socket = socket.to_string_lossy();
    let shims: Vec<u32> = processes()
        .into_iter()
        .filter(|(_, argv)| {
            argv.first().is_some_and(|a| a.ends_with("containerd-shim-runc-v2"))
                && argv.windows(2).any(|w| w[0] == "-address" && w[1] == socket)
        })
        .map(|(pid, _)| pid)
        .collect();
    (shims.iter().map(|p| rss(*p)).sum(), shims.len())
}

/// Bytes as MiB.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// The `q` quantile (0..=1) of sorted durations, nearest rank.
pub fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// An `Instant` as seconds since the Unix epoch (for timelines next to logs).
pub fn unix_secs(t: Instant) -> f64 {
    let (now_i, now_s) = (Instant::now(), std::time::SystemTime::now());
    let now = now_s.duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs_f64();
    now - now_i.saturating_duration_since(t).as_secs_f64()
}

/// A duration in milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Polls `f` every 100 ms until it holds or `timeout` passes; whether it held.
pub async fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    f()
}

/// A kube-rs client with the admin kubeconfig at `path`.
pub async fn admin_client(path: &Path) -> Result<kube::Client, String> {
    let kubeconfig = kube::config::Kubeconfig::read_from(path).map_err(|e| format!("read {}: {e}", path.display()))?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .map_err(|e| format!("kubeconfig {}: {e}", path.display()))?;
    kube::Client::try_from(config).map_err(|e| format!("kube client: {e}"))
}

/// The 1-, 5- and 15-minute load averages (`/proc/loadavg`).
pub fn load_average() -> String {
    let s = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// Stops the managed containerd of its data dir if one still runs when
/// dropped ([`stop_leftover_containerd`]): `rkube killall` is the full stop,
/// and a containerd that outlives `rkube server`'s SIGTERM must not outlive
/// the bench. Declare it before the cluster so that it drops after it.
#[derive(Default)]
pub struct ContainerdGuard(pub Option<std::path::PathBuf>);

impl Drop for ContainerdGuard {
    fn drop(&mut self) {
        if let Some(dir) = &self.0 {
            stop_leftover_containerd(dir);
        }
    }
}

/// What a pod watch saw, per pod name: when first seen, bound, Running, and DELETED.
#[derive(Default)]
pub struct Seen {
    /// First seen (any event but DELETED).
    pub added: HashMap<String, Instant>,
    /// First seen with `spec.nodeName`.
    pub bound: HashMap<String, Instant>,
    /// First seen with `status.phase: Running`.
    pub running: HashMap<String, Instant>,
    /// `DELETED` seen.
    pub deleted: HashMap<String, Instant>,
}

/// Watches the pods matching the label selector `label` (re-opening the
/// watch when the server ends it) until aborted, recording into `seen`;
/// `opened` fires once the first watch is established.
pub fn spawn_watch(
    pods: Api<Pod>,
    label: &str,
    seen: Arc<Mutex<Seen>>,
) -> (tokio::sync::oneshot::Receiver<()>, tokio::task::JoinHandle<()>) {
    let (opened_tx, opened_rx) = tokio::sync::oneshot::channel();
    let label = label.to_string();
    let task = tokio::spawn(async move {
        let mut opened = Some(opened_tx);
        let mut rv = "0".to_string();
        loop {
            let stream = match pods.watch(&WatchParams::default().labels(&label), &rv).await {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("  watch: {e}; retrying");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
            };
            if let Some(o) = opened.take() {
                let _ = o.send(());
            }
            let mut stream = stream.boxed();
            while let Ok(Some(ev)) = stream.try_next().await {
                let now = Instant::now();
                let (pod, deleted) = match ev {
                    WatchEvent::Added(p) | WatchEvent::Modified(p) => (p, false),
                    WatchEvent::Deleted(p) => (p, true),
                    WatchEvent::Bookmark(b) => {
                        rv = b.metadata.resource_version;
                        continue;
                    }
                    WatchEvent::Error(e) => {
                        eprintln!("  watch error: {e:?}");
                        rv = "0".into();
                        break;
                    }
                };
                if let Some(v) = &pod.metadata.resource_version {
                    rv = v.clone();
                }
                let name = pod.metadata.name.clone().unwrap_or_default();
                let mut s = seen.lock().unwrap();
                if deleted {
                    s.deleted.entry(name).or_insert(now);
                    continue;
                }
                s.added.entry(name.clone()).or_insert(now);
                if pod.spec.as_ref().is_some_and(|sp| sp.node_name.is_some()) {
                    s.bound.entry(name.clone()).or_insert(now);
                }
                if pod.status.as_ref().and_then(|st| st.phase.as_deref()) == Some("Running") {
                    s.running.entry(name).or_insert(now);
                }
            }
        }
    });
    (opened_rx, task)
}
