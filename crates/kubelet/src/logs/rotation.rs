//! Container log rotation, as upstream's `ContainerLogManager`
//! (`pkg/kubelet/logs/container_log_manager.go`): every
//! [`LogRotationPolicy::interval`] (10 s) the log of each running container
//! (its CRI `ContainerStatus.log_path`) that has reached `max_size` (10 MiB,
//! `containerLogMaxSize`) is rotated:
//!
//! 1. the files `<log>.*` are looked at: temporary files (`*.tmp`, left by
//!    a compression that did not finish) and plain files whose `.gz` already
//!    exists (a compression that finished but did not remove its input) are
//!    removed;
//! 2. the oldest rotated files (sorted by name, which sorts by time) are
//!    removed until `max_files - 2` remain (`containerLogMaxFiles`, 5,
//!    counts the live file and the one about to be rotated);
//! 3. every remaining uncompressed rotated file is gzip-compressed into
//!    `<file>.gz` through `<file>.tmp` and a rename, so a crash never leaves
//!    a half-written `.gz`; the plain file is removed afterwards;
//! 4. the live log is renamed to `<log>.<YYYYMMDD-hhmmss>` (UTC) — this
//!    newest rotated file stays uncompressed, so the runtime can finish its
//!    last writes and log shippers can finish reading — and the runtime is
//!    told to reopen the log (`ReopenContainerLog`; if that fails the rename
//!    is undone and the next pass tries again).
//!
//! So at rest a container has its live log, at most one plain rotated file
//! (the newest) and older `.gz` files, `max_files` in all. Readers
//! (`kubectl logs`, [`super::reader`]) only read the live file, as upstream.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cri::{v1, CriClient};

/// Suffix of compressed rotated logs (upstream `compressSuffix`).
const COMPRESS_SUFFIX: &str = ".gz";
/// Suffix of a compression in progress (upstream `tmpSuffix`).
const TMP_SUFFIX: &str = ".tmp";

/// When and how much to rotate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRotationPolicy {
    /// Rotate a log once it is at least this many bytes (upstream default
    /// 10 MiB).
    pub max_size: u64,
    /// Keep at most this many files per container, the live one and the
    /// compressed ones included (upstream default 5; values below 2 act as
    /// 2, the live file plus the newest rotated one — upstream refuses them).
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

/// `<log>.<YYYYMMDD-hhmmss>`, the name the live log is rotated to at `now`.
fn rotated_name(log: &Path, now: jiff::Timestamp) -> PathBuf {
    with_suffix(log, &format!(".{}", rotation_suffix(now)))
}

/// `path` with `suffix` appended to its file name.
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Every file named `<log>.*` next to `log` (rotated, compressed and
/// temporary ones; upstream's glob), sorted by name — oldest first.
fn log_family(log: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (log.parent(), log.file_name().and_then(|n| n.to_str())) else {
        return Vec::new();
    };
    let prefix = format!("{name}.");
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with(&prefix)))
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

/// Whether `file` of `family` still holds data: temporary files do not,
/// nor does a plain file whose compressed copy exists (upstream `isInUse`).
fn in_use(file: &Path, family: &[PathBuf]) -> bool {
    let name = file.as_os_str().to_string_lossy();
    if name.ends_with(TMP_SUFFIX) {
        return false;
    }
    if name.ends_with(COMPRESS_SUFFIX) {
        return true;
    }
    let compressed = with_suffix(file, COMPRESS_SUFFIX);
    !family.contains(&compressed)
}

/// The rotated files of `log` that hold data (plain and `.gz`), oldest
/// first.
#[cfg(test)]
fn rotated_files(log: &Path) -> Vec<PathBuf> {
    let family = log_family(log);
    family.iter().filter(|f| in_use(f, &family)).cloned().collect()
}

/// Gzip-compresses `file` into `<file>.gz` (written as `<file>.tmp`,
/// synced, then renamed, with `file`'s permissions) and removes `file`.
/// Errors name the step that failed; the `.tmp` is removed on failure.
fn compress_log(file: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(file).map_err(|e| format!("failed to stat log {file:?}: {e}"))?;
    let mut input = std::fs::File::open(file).map_err(|e| format!("failed to open log {file:?}: {e}"))?;
    let tmp = with_suffix(file, TMP_SUFFIX);
    let result = (|| {
        let out = std::fs::File::create(&tmp).map_err(|e| format!("failed to create temporary log {tmp:?}: {e}"))?;
        let _ = out.set_permissions(std::fs::Permissions::from_mode(meta.permissions().mode() & 0o7777));
        let mut gz = flate2::write::GzEncoder::new(std::io::BufWriter::new(out), flate2::Compression::default());
        std::io::copy(&mut input, &mut gz).map_err(|e| format!("failed to compress {file:?} to {tmp:?}: {e}"))?;
        let mut buffered = gz.finish().map_err(|e| format!("failed to compress {file:?} to {tmp:?}: {e}"))?;
        buffered.flush().map_err(|e| format!("failed to write {tmp:?}: {e}"))?;
        let out = buffered.into_inner().map_err(|e| format!("failed to write {tmp:?}: {}", e.error()))?;
        out.sync_all().map_err(|e| format!("failed to sync {tmp:?}: {e}"))?;
        let compressed = with_suffix(file, COMPRESS_SUFFIX);
        std::fs::rename(&tmp, &compressed).map_err(|e| format!("failed to rename {tmp:?} to {compressed:?}: {e}"))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result?;
    std::fs::remove_file(file).map_err(|e| format!("failed to remove log {file:?} after compressing it: {e}"))
}

/// Steps 1–3 of a rotation of `log` (see the module docs): removes unused
/// leftovers, then the oldest rotated files beyond `max_files - 2`, then
/// compresses the remaining plain rotated files. Blocking file I/O.
fn prepare_rotation(log: &Path, max_files: usize) -> Result<(), String> {
    let family = log_family(log);
    let mut kept = Vec::new();
    for file in &family {
        if in_use(file, &family) {
            kept.push(file.clone());
        } else if let Err(e) = std::fs::remove_file(file) {
            if e.kind() != std::io::ErrorKind::NotFound {
                return Err(format!("failed to remove unused log {file:?}: {e}"));
            }
        }
    }
    // The live file and the one about to be rotated take two places.
    let keep = max_files.max(2) - 2;
    let excess = kept.len().saturating_sub(keep);
    for old in kept.drain(..excess) {
        if let Err(e) = std::fs::remove_file(&old) {
            if e.kind() != std::io::ErrorKind::NotFound {
                return Err(format!("failed to remove old log {old:?}: {e}"));
            }
        }
    }
    for file in kept.iter().filter(|f| !f.as_os_str().to_string_lossy().ends_with(COMPRESS_SUFFIX)) {
        compress_log(file)?;
    }
    Ok(())
}

/// Rotates the log of container `id` at `log` if it has reached the
/// policy's `max_size`; returns whether it did. A missing log is first
/// reopened through the runtime, as upstream. Errors say which step failed
/// (stat, cleanup, compression, rename, reopen); a failed reopen undoes the
/// rename so the next pass retries.
pub async fn rotate_container_log(
    cri: &CriClient,
    id: &str,
    log: &Path,
    policy: &LogRotationPolicy,
) -> Result<bool, String> {
    let size = match std::fs::metadata(log) {
        Ok(m) => m.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            cri.reopen_container_log(id)
                .await
                .map_err(|e| format!("container log {log:?} does not exist and reopening it failed: {e}"))?;
            std::fs::metadata(log).map_err(|e| format!("failed to stat container log {log:?} after reopen: {e}"))?.len()
        }
        Err(e) => return Err(format!("failed to stat container log {log:?}: {e}")),
    };
    if size < policy.max_size {
        return Ok(false);
    }
    let (path, max_files) = (log.to_path_buf(), policy.max_files);
    tokio::task::spawn_blocking(move || prepare_rotation(&path, max_files))
        .await
        .map_err(|e| format!("log rotation task failed: {e}"))?
        .map_err(|e| format!("failed to clean up rotated logs of {log:?}: {e}"))?;
    // Upstream's name has one-second resolution: wait for a free one rather
    // than overwrite a rotation made within the same second.
    let mut rotated = rotated_name(log, jiff::Timestamp::now());
    for _ in 0..3 {
        if !rotated.exists() && !with_suffix(&rotated, COMPRESS_SUFFIX).exists() {
            break;
        }
        let now = jiff::Timestamp::now();
        tokio::time::sleep(Duration::from_nanos(1_000_000_000 - u64::from(now.subsec_nanosecond().unsigned_abs())))
            .await;
        rotated = rotated_name(log, jiff::Timestamp::now());
    }
    if rotated.exists() {
        return Err(format!("cannot rotate {log:?}: {rotated:?} already exists"));
    }
    std::fs::rename(log, &rotated).map_err(|e| format!("failed to rotate log {log:?} to {rotated:?}: {e}"))?;
    if let Err(e) = cri.reopen_container_log(id).await {
        // Undo, so that the runtime keeps writing where readers look.
        if let Err(undo) = std::fs::rename(&rotated, log) {
            tracing::error!(component = "kubelet", container = id, rotated = %rotated.display(), error = %undo,
                "cannot move a rotated log back after a failed reopen; its lines are only in the rotated file");
        }
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
    use std::io::Read;

    fn names(paths: &[PathBuf]) -> Vec<String> {
        paths.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect()
    }

    fn gunzip(path: &Path) -> String {
        let mut out = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap()).read_to_string(&mut out).unwrap();
        out
    }

    /// One rotation without a runtime: steps 1–3, the rename of step 4,
    /// and the runtime's reopen simulated by writing a fresh live file.
    fn rotate_once(log: &Path, max_files: usize, at: jiff::Timestamp, next: &str) {
        prepare_rotation(log, max_files).unwrap();
        std::fs::rename(log, rotated_name(log, at)).unwrap();
        std::fs::write(log, next).unwrap();
    }

    /// Rotated files are named `<log>.<YYYYMMDD-hhmmss>` (UTC), so names
    /// sort by time.
    #[test]
    fn rotated_file_names() {
        let t: jiff::Timestamp = "2024-03-05T06:07:08.9Z".parse().unwrap();
        assert_eq!(rotation_suffix(t), "20240305-060708");
        assert_eq!(rotated_name(Path::new("/l/c/0.log"), t), Path::new("/l/c/0.log.20240305-060708"));
        assert_eq!(with_suffix(Path::new("/l/c/0.log.x"), ".gz"), Path::new("/l/c/0.log.x.gz"));
    }

    /// After many rotations a container has `max_files` files: the live one
    /// (never compressed), the newest rotated one plain, the older ones
    /// valid gzip holding exactly what was written, the oldest dropped.
    #[test]
    fn rotation_keeps_max_files_and_compresses_all_but_newest() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("0.log");
        let other = dir.path().join("1.log.20240101-000000");
        std::fs::write(&other, "another container's rotated log").unwrap();
        let t0: jiff::Timestamp = "2024-01-01T00:00:00Z".parse().unwrap();
        let content = |i: usize| format!("2024-01-01T00:00:0{i}.000000000Z stdout F pass {i}\n").repeat(100);
        std::fs::write(&log, content(0)).unwrap();
        for i in 0..6 {
            rotate_once(&log, 4, t0 + jiff::SignedDuration::from_secs(i as i64 + 1), &content(i + 1));
            let rotated = rotated_files(&log);
            assert_eq!(rotated.len(), (i + 1).min(3), "{:?}", names(&rotated));
            // Only the newest rotated file is plain.
            let (newest, older) = rotated.split_last().unwrap();
            assert!(!newest.to_string_lossy().ends_with(".gz"), "{newest:?}");
            assert_eq!(std::fs::read_to_string(newest).unwrap(), content(i));
            assert!(older.iter().all(|f| f.to_string_lossy().ends_with(".gz")), "{:?}", names(older));
        }
        assert_eq!(
            names(&log_family(&log)),
            ["0.log.20240101-000004.gz", "0.log.20240101-000005.gz", "0.log.20240101-000006"]
        );
        assert_eq!(gunzip(&dir.path().join("0.log.20240101-000004.gz")), content(3));
        assert_eq!(gunzip(&dir.path().join("0.log.20240101-000005.gz")), content(4));
        assert_eq!(std::fs::read_to_string(&log).unwrap(), content(6));
        assert_eq!(std::fs::read_to_string(&other).unwrap(), "another container's rotated log");
    }

    /// With `max_files` 2 only the live file and the newest (plain) rotated
    /// file remain; smaller values act as 2.
    #[test]
    fn two_files_keep_no_compressed_log() {
        for max_files in [0, 1, 2] {
            let dir = tempfile::tempdir().unwrap();
            let log = dir.path().join("0.log");
            std::fs::write(&log, "a\n").unwrap();
            let t0: jiff::Timestamp = "2024-01-01T00:00:00Z".parse().unwrap();
            rotate_once(&log, max_files, t0, "b\n");
            rotate_once(&log, max_files, t0 + jiff::SignedDuration::from_secs(1), "c\n");
            assert_eq!(names(&log_family(&log)), ["0.log.20240101-000001"]);
            assert_eq!(std::fs::read_to_string(dir.path().join("0.log.20240101-000001")).unwrap(), "b\n");
            assert_eq!(std::fs::read_to_string(&log).unwrap(), "c\n");
        }
    }

    /// Leftovers of an interrupted pass: a `.tmp` is removed, a plain file
    /// whose `.gz` exists is removed (the `.gz` kept), and an uncompressed
    /// older rotated file is compressed at the next pass.
    #[test]
    fn leftovers_are_cleaned_and_compressed_at_next_pass() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("0.log");
        std::fs::write(&log, "live\n").unwrap();
        let p = |n: &str| dir.path().join(n);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(b"one\n").unwrap();
        std::fs::write(p("0.log.20240101-000001.gz"), gz.finish().unwrap()).unwrap();
        std::fs::write(p("0.log.20240101-000001"), "one\n").unwrap();
        std::fs::write(p("0.log.20240101-000002"), "two\n").unwrap();
        std::fs::set_permissions(p("0.log.20240101-000002"), std::fs::Permissions::from_mode(0o640)).unwrap();
        std::fs::write(p("0.log.20240101-000002.tmp"), "half").unwrap();
        std::fs::write(p("0.log.20240101-000003"), "three\n").unwrap();
        prepare_rotation(&log, 5).unwrap();
        assert_eq!(
            names(&log_family(&log)),
            ["0.log.20240101-000001.gz", "0.log.20240101-000002.gz", "0.log.20240101-000003.gz"]
        );
        assert_eq!(gunzip(&p("0.log.20240101-000001.gz")), "one\n");
        assert_eq!(gunzip(&p("0.log.20240101-000002.gz")), "two\n");
        assert_eq!(gunzip(&p("0.log.20240101-000003.gz")), "three\n");
        let mode = std::fs::metadata(p("0.log.20240101-000002.gz")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
        // The live file is never touched by the preparation.
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "live\n");
    }
}
