//! The log backend (`--audit-log-path`): one JSON line per event, to a
//! file or to standard output (`-`), as upstream's
//! `plugin/pkg/audit/log` in its default blocking mode. With any of
//! `--audit-log-maxsize` (MB), `--audit-log-maxbackup` or
//! `--audit-log-maxage` (days) set, the file is rotated as upstream's
//! lumberjack does: past the size (100 MB when only the others are set)
//! it is renamed to `<name>-<UTC time>.<ext>` and a new one started; old
//! backups beyond the count or age are removed.
//!
//! Lines are written by one thread fed through a channel, so request
//! tasks never block on the disk.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

/// Where events go and how the file rotates.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogOptions {
    /// A file path, or `-` for standard output.
    pub path: String,
    /// `--audit-log-maxage`: days to keep rotated files (0: no limit).
    pub max_age_days: u32,
    /// `--audit-log-maxbackup`: rotated files to keep (0: no limit).
    pub max_backups: u32,
    /// `--audit-log-maxsize`: megabytes before rotation (0: 100 when
    /// rotation is on).
    pub max_size_mb: u32,
}

impl LogOptions {
    fn rotates(&self) -> bool {
        self.max_age_days > 0 || self.max_backups > 0 || self.max_size_mb > 0
    }
}

/// A running log backend; events are queued with [`LogBackend::write`].
#[derive(Debug)]
pub struct LogBackend {
    tx: Option<mpsc::Sender<String>>,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl Drop for LogBackend {
    /// Lets the writer drain and flush what is queued (at shutdown).
    fn drop(&mut self) {
        self.tx.take();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

impl LogBackend {
    /// Opens (creating, appending to) the log file — the error names the
    /// path — and starts the writer thread.
    pub fn open(opts: LogOptions) -> Result<LogBackend, String> {
        let mut sink = Sink::open(&opts)?;
        let (tx, rx) = mpsc::channel::<String>();
        let writer = std::thread::Builder::new()
            .name("audit-log".into())
            .spawn(move || {
                while let Ok(line) = rx.recv() {
                    sink.write(&line);
                    // Drain what queued meanwhile, then flush once.
                    while let Ok(line) = rx.try_recv() {
                        sink.write(&line);
                    }
                    sink.flush();
                }
                sink.flush();
            })
            .map_err(|e| format!("cannot start the audit log writer: {e}"))?;
        Ok(LogBackend { tx: Some(tx), writer: Some(writer) })
    }

    /// Queues one line (without its newline).
    pub fn write(&self, line: String) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(line);
        }
    }
}

enum Out {
    Stdout(std::io::Stdout),
    File(std::io::BufWriter<File>),
}

struct Sink {
    out: Out,
    opts: LogOptions,
    path: PathBuf,
    size: u64,
}

impl Sink {
    fn open(opts: &LogOptions) -> Result<Sink, String> {
        if opts.path == "-" {
            return Ok(Sink { out: Out::Stdout(std::io::stdout()), opts: opts.clone(), path: PathBuf::new(), size: 0 });
        }
        let path = PathBuf::from(&opts.path);
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create the directory of --audit-log-path {}: {e}", path.display()))?;
        }
        let file = open_append(&path)?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        Ok(Sink { out: Out::File(std::io::BufWriter::new(file)), opts: opts.clone(), path, size })
    }

    fn write(&mut self, line: &str) {
        let len = line.len() as u64 + 1;
        if self.opts.rotates() {
            let max = u64::from(if self.opts.max_size_mb == 0 { 100 } else { self.opts.max_size_mb }) * 1024 * 1024;
            if self.size > 0 && self.size + len > max {
                self.rotate();
            }
        }
        let result = match &mut self.out {
            Out::Stdout(s) => writeln!(s, "{line}"),
            Out::File(f) => writeln!(f, "{line}"),
        };
        if let Err(e) = result {
            tracing::error!(component = crate::COMPONENT, error = %e, "cannot write the audit log");
        }
        self.size += len;
    }

    fn flush(&mut self) {
        let _ = match &mut self.out {
            Out::Stdout(s) => s.flush(),
            Out::File(f) => f.flush(),
        };
    }

    fn rotate(&mut self) {
        self.flush();
        let backup = backup_name(&self.path, jiff::Timestamp::now());
        if let Err(e) = std::fs::rename(&self.path, &backup) {
            tracing::error!(component = crate::COMPONENT, error = %e, "cannot rotate the audit log");
            return;
        }
        match open_append(&self.path) {
            Ok(f) => {
                self.out = Out::File(std::io::BufWriter::new(f));
                self.size = 0;
            }
            Err(e) => tracing::error!(component = crate::COMPONENT, error = %e, "cannot reopen the audit log"),
        }
        prune(&self.path, &self.opts);
    }
}

fn open_append(path: &Path) -> Result<File, String> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("cannot open --audit-log-path {}: {e}", path.display()))
}

/// `audit.log` → `audit-2006-01-02T15-04-05.000.log` (lumberjack's names).
fn backup_name(path: &Path, t: jiff::Timestamp) -> PathBuf {
    let stem = path.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
    let ext = path.extension().map(|e| format!(".{}", e.to_string_lossy())).unwrap_or_default();
    let stamp = format!("{}.{:03}", t.strftime("%Y-%m-%dT%H-%M-%S"), t.subsec_millisecond());
    path.with_file_name(format!("{stem}-{stamp}{ext}"))
}

/// Removes backups beyond `max_backups` (oldest first) and older than
/// `max_age_days`.
fn prune(path: &Path, opts: &LogOptions) {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let stem = path.file_stem().map(|s| format!("{}-", s.to_string_lossy())).unwrap_or_default();
    let ext = path.extension().map(|e| format!(".{}", e.to_string_lossy())).unwrap_or_default();
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut backups: Vec<(PathBuf, std::time::SystemTime)> = entries
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            n.starts_with(&stem) && n.ends_with(&ext) && e.path() != path
        })
        .map(|e| (e.path(), e.metadata().and_then(|m| m.modified()).unwrap_or(std::time::UNIX_EPOCH)))
        .collect();
    // Newest first: names sort by their timestamps.
    backups.sort_by(|a, b| b.0.cmp(&a.0));
    let max_age = std::time::Duration::from_secs(u64::from(opts.max_age_days) * 86_400);
    for (i, (p, modified)) in backups.iter().enumerate() {
        let too_many = opts.max_backups > 0 && i >= opts.max_backups as usize;
        let too_old = opts.max_age_days > 0 && modified.elapsed().is_ok_and(|age| age > max_age);
        if too_many || too_old {
            let _ = std::fs::remove_file(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait_for_lines(path: &Path, n: usize) -> Vec<String> {
        for _ in 0..200 {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let lines: Vec<String> = text.lines().map(str::to_string).collect();
            if lines.len() >= n {
                return lines;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("{} never had {n} lines", path.display());
    }

    #[test]
    fn lines_are_appended_one_per_event() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("logs/audit.log");
        let log = LogBackend::open(LogOptions { path: path.display().to_string(), ..Default::default() }).unwrap();
        log.write("{\"a\":1}".into());
        log.write("{\"b\":2}".into());
        assert_eq!(wait_for_lines(&path, 2), ["{\"a\":1}", "{\"b\":2}"]);
        // Dropping the backend writes out what is still queued.
        for i in 0..100 {
            log.write(format!("{{\"n\":{i}}}"));
        }
        drop(log);
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 102);
    }

    #[test]
    fn past_the_size_the_file_rotates_and_old_backups_are_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let opts = LogOptions { path: path.display().to_string(), max_size_mb: 1, max_backups: 1, max_age_days: 0 };
        let mut sink = Sink::open(&opts).unwrap();
        let line = "x".repeat(700 * 1024);
        for _ in 0..3 {
            sink.write(&line);
            // Distinct backup names (millisecond stamps).
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        sink.flush();
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .collect();
        names.sort();
        assert_eq!(names.len(), 2, "the live file and one backup: {names:?}");
        assert!(names.iter().any(|n| n == "audit.log"));
        assert!(names.iter().any(|n| n.starts_with("audit-") && n.ends_with(".log")), "{names:?}");
        assert_eq!(std::fs::metadata(&path).unwrap().len(), line.len() as u64 + 1);
    }

    #[test]
    fn backup_names_follow_lumberjack() {
        let t: jiff::Timestamp = "2026-11-29T15:04:05.123456Z".parse().unwrap();
        assert_eq!(
            backup_name(Path::new("/var/log/audit.log"), t),
            Path::new("/var/log/audit-2026-11-29T15-04-05.123.log")
        );
    }
}
