//! Container log rotation, as upstream's `ContainerLogManager`: every
//! [`LogRotationPolicy::interval`] (10 s) the log of each running container
//! (its CRI `ContainerStatus.log_path`) that has grown past `max_size`
//! (10 MiB, `containerLogMaxSize`) is renamed to `<path>.<YYYYMMDD-hhmmss>`
//! (UTC) and the runtime is told to reopen it (`ReopenContainerLog`; if
//! that fails the rename is undone). Rotated files beyond `max_files - 1`
//! (`containerLogMaxFiles` 5, counting the live file) are removed, oldest
//! first.
//!
//! Upstream gzips every rotated file but the newest; rkube keeps them
//! uncompressed (no gzip encoder in the dependency tree) — readers never
//! look at rotated files, so only disk use differs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cri::{v1, CriClient};

/// When and how much to rotate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRotationPolicy {
    /// Rotate a log larger than this many bytes (upstream default 10 MiB).
    pub max_size: u64,
    /// Keep at most this many files per container, the live one included
    /// (upstream default 5, minimum 2).
    pub max_files: usize,
    /// How often to look (upstream's `containerLogMonitorInterval`, 10 s).
    pub interval: Duration,
}

impl Default for LogRotationPolicy {
    fn default() -> Self {
        LogRotationPolicy { max_size: 10 << 20, max_files: 5, interval: Duration::from_secs(10) }
    }
}

/// The suffix time format of rotated files (Go layout `20060102-150405`).
fn rotation_suffix(now: jiff::Timestamp) -> String {
    now.strftime("%Y%m%d-%H%M%S").to_string()
}

/// The rotated files of `log` (`<log>.<suffix>`), oldest first (the suffix
/// sorts by time).
fn rotated_files(log: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (log.parent(), log.file_name().and_then(|n| n.to_str())) else {
        return Vec::new();
    };
    let prefix = format!("{name}.");
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with(&prefix) && !n.ends_with(".tmp")))
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

/// Removes the oldest rotated files of `log` so that at most `keep` remain.
fn remove_excess(log: &Path, keep: usize) {
    let rotated = rotated_files(log);
    let excess = rotated.len().saturating_sub(keep);
    for old in &rotated[..excess] {
        if let Err(e) = std::fs::remove_file(old) {
            tracing::warn!(component = "kubelet", path = %old.display(), error = %e, "cannot remove an old container log");
        }
    }
}

/// Rotates the log of container `id` at `log` if it is larger than the
/// policy's `max_size`; returns whether it did. Errors are upstream's
/// kinds of messages (the rename or the reopen failed).
pub async fn rotate_container_log(
    cri: &CriClient,
    id: &str,
    log: &Path,
    policy: &LogRotationPolicy,
) -> Result<bool, String> {
    let size = match std::fs::metadata(log) {
        Ok(m) => m.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(format!("failed to stat container log {log:?}: {e}")),
    };
    if size <= policy.max_size {
        return Ok(false);
    }
    // Room for the file about to be rotated plus the live one.
    remove_excess(log, policy.max_files.max(2) - 2);
    let mut rotated = PathBuf::from(format!("{}.{}", log.display(), rotation_suffix(jiff::Timestamp::now())));
    if rotated.exists() {
        // Two rotations within a second: keep both.
        rotated = PathBuf::from(format!("{}.{}", rotated.display(), jiff::Timestamp::now().as_nanosecond()));
    }
    std::fs::rename(log, &rotated).map_err(|e| format!("failed to rotate log {log:?} to {rotated:?}: {e}"))?;
    if let Err(e) = cri.reopen_container_log(id).await {
        // Undo, so that the runtime keeps writing where readers look.
        let _ = std::fs::rename(&rotated, log);
        return Err(format!("failed to reopen container log {id:?}: {e}"));
    }
    tracing::info!(component = "kubelet", container = id, path = %log.display(), size, "rotated container log");
    Ok(true)
}

/// One pass over the running containers.
async fn rotate_all(cri: &CriClient, policy: &LogRotationPolicy) {
    let filter = v1::ContainerFilter {
        state: Some(v1::ContainerStateValue { state: v1::ContainerState::ContainerRunning as i32 }),
        ..Default::default()
    };
    let containers = match cri.list_containers(Some(filter)).await {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(component = "kubelet", error = %e, "log rotation: cannot list running containers");
            return;
        }
    };
    for c in containers {
        let status = match cri.container_status(&c.id, false).await {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!(component = "kubelet", container = %c.id, error = %e, "log rotation: no status");
                continue;
            }
        };
        if status.log_path.is_empty() {
            continue;
        }
        let log = Path::new(&status.log_path);
        if let Err(e) = rotate_container_log(cri, &c.id, log, policy).await {
            tracing::warn!(component = "kubelet", container = %c.id, error = %e, "log rotation failed");
        }
    }
}

/// Rotates the logs of running containers every `policy.interval` until
/// `stop` turns true.
pub async fn run_log_rotation(cri: CriClient, policy: LogRotationPolicy, mut stop: tokio::sync::watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(policy.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => rotate_all(&cri, &policy).await,
            changed = stop.changed() => if changed.is_err() || *stop.borrow() { return },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rotated files are named `<log>.<YYYYMMDD-hhmmss>`; the oldest go first
    /// when more than `keep` exist.
    #[test]
    fn suffix_and_excess_removal() {
        let t: jiff::Timestamp = "2024-03-05T06:07:08.9Z".parse().unwrap();
        assert_eq!(rotation_suffix(t), "20240305-060708");
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("0.log");
        std::fs::write(&log, "x").unwrap();
        for s in ["20240101-000001", "20240101-000003", "20240101-000002"] {
            std::fs::write(dir.path().join(format!("0.log.{s}")), "y").unwrap();
        }
        std::fs::write(dir.path().join("1.log.20240101-000000"), "other container").unwrap();
        remove_excess(&log, 1);
        let rotated: Vec<String> =
            rotated_files(&log).iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(rotated, ["0.log.20240101-000003"]);
        assert!(dir.path().join("1.log.20240101-000000").exists());
        assert!(log.exists());
    }
}
