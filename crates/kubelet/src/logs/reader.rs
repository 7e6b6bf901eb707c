//! Reading a container's CRI-format log file for `/containerLogs`, as
//! upstream's `ReadLogs`: only the current file is read (rotated ones are
//! not, as upstream); `tailLines` seeks back over raw file lines first,
//! then records older than `since` or of the other stream are skipped.
//! Each record's message is written as is — a `P` (partial) record without
//! a newline, so the next record of its stream completes the line — and,
//! with `timestamps`, the record's time and a space are put before the
//! first piece of every line. `limitBytes` caps the output (prefixes
//! included). With `follow`, the reader waits for more at the end of the
//! file, moves to the new file when the runtime reopens the log after a
//! rotation, and ends once the container is no longer running and the file
//! is drained.

use std::future::Future;
use std::io::SeekFrom;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncSeekExt, BufReader};
use tokio::sync::mpsc;

use super::format::{parse_cri_line, LogStream};

/// How often a follower looks at the file again when it has no new data.
const FOLLOW_POLL: Duration = Duration::from_millis(200);
/// How often (in polls) a follower asks whether the container still runs.
const RUNNING_CHECK_POLLS: u32 = 5;

/// What to read (upstream's `LogOptions` of `kuberuntime`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogOptions {
    /// Keep streaming until the container stops.
    pub follow: bool,
    /// Only the last this many lines of the file (`tailLines`; lines of
    /// the file, so each partial record counts).
    pub tail_lines: Option<u64>,
    /// Only records at or after this time (the later of `now -
    /// sinceSeconds` and `sinceTime`).
    pub since: Option<jiff::Timestamp>,
    /// Prefix each line with its RFC3339Nano time and a space.
    pub timestamps: bool,
    /// Stop after this many bytes of output (`limitBytes`).
    pub limit_bytes: Option<u64>,
    /// Only this stream (`stream` of 1.32+; `None` = both).
    pub stream: Option<LogStream>,
}

/// Why reading failed.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// The log file could not be opened or read.
    #[error("failed to open log file {path:?}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Reading failed midway.
    #[error("failed to read log file {path:?}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Asks whether the container still runs (for `follow`); `false` ends the
/// stream once the file is drained.
pub type RunningCheck = Box<dyn FnMut() -> Pin<Box<dyn Future<Output = bool> + Send>> + Send>;

/// The output side: counts bytes for `limitBytes`, remembers per stream
/// whether the next piece starts a line.
struct Output<'a> {
    tx: &'a mpsc::Sender<Vec<u8>>,
    remaining: Option<u64>,
    at_line_start: [bool; 2],
}

/// Whether the reader should go on.
enum Flow {
    Continue,
    Stop,
}

impl Output<'_> {
    /// Writes one record line; `Stop` when the limit is reached or the
    /// receiver has gone.
    async fn record(&mut self, line: &[u8], opts: &LogOptions) -> Flow {
        let rec = match parse_cri_line(line) {
            Ok(r) => r,
            Err(e) => {
                // Upstream logs and skips lines it cannot parse.
                tracing::debug!(component = "kubelet", error = %e, "skipping a malformed container log line");
                return Flow::Continue;
            }
        };
        if opts.since.is_some_and(|since| rec.time < since) {
            return Flow::Continue;
        }
        if opts.stream.is_some_and(|s| s != rec.stream) {
            return Flow::Continue;
        }
        let idx = rec.stream as usize;
        let mut out = Vec::with_capacity(rec.message.len() + 40);
        if opts.timestamps && self.at_line_start[idx] {
            out.extend_from_slice(rec.time_text.as_bytes());
            out.push(b' ');
        }
        out.extend_from_slice(rec.message);
        if !rec.partial {
            out.push(b'\n');
        }
        self.at_line_start[idx] = !rec.partial;
        self.send(out).await
    }

    async fn send(&mut self, mut out: Vec<u8>) -> Flow {
        let mut done = false;
        if let Some(rem) = self.remaining.as_mut() {
            if out.len() as u64 >= *rem {
                out.truncate(*rem as usize);
                done = true;
            }
            *rem -= out.len() as u64;
        }
        if !out.is_empty() && self.tx.send(out).await.is_err() {
            return Flow::Stop;
        }
        if done {
            Flow::Stop
        } else {
            Flow::Continue
        }
    }
}

/// The offset where the last `n` lines of the file start (upstream's
/// `tail.FindTailLineStartIndex`: a trailing newline does not open a line).
async fn tail_start(file: &mut tokio::fs::File, n: u64) -> std::io::Result<u64> {
    const BLOCK: u64 = 4096;
    let size = file.metadata().await?.len();
    if n == 0 {
        return Ok(size);
    }
    let mut end = size;
    let mut newlines = 0u64;
    let mut first = true;
    let mut buf = vec![0u8; BLOCK as usize];
    while end > 0 {
        let start = end.saturating_sub(BLOCK);
        let len = (end - start) as usize;
        file.seek(SeekFrom::Start(start)).await?;
        file.read_exact(&mut buf[..len]).await?;
        for i in (0..len).rev() {
            if buf[i] != b'\n' {
                continue;
            }
            if first && start + i as u64 == size - 1 {
                first = false;
                continue;
            }
            first = false;
            newlines += 1;
            if newlines == n {
                return Ok(start + i as u64 + 1);
            }
        }
        first = false;
        end = start;
    }
    Ok(0)
}

/// The (device, inode) of what `path` names now, if anything.
fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Streams the log file at `path` into `tx` as `opts` says (see the
/// module docs). Each message sent is a chunk of output. Returns when the
/// file is read (or, following, the container stopped), the limit is
/// reached, or `tx`'s receiver is dropped. `running` is asked (only when
/// following) at most about once a second while no data arrives.
///
/// Errors: the file cannot be opened ([`LogError::Open`]) or read.
pub async fn read_logs(
    path: &Path,
    opts: &LogOptions,
    tx: &mpsc::Sender<Vec<u8>>,
    mut running: RunningCheck,
) -> Result<(), LogError> {
    let open_err = |source| LogError::Open { path: path.to_path_buf(), source };
    let read_err = |source| LogError::Read { path: path.to_path_buf(), source };
    let mut file = tokio::fs::File::open(path).await.map_err(open_err)?;
    let mut current = identity(path);
    if let Some(n) = opts.tail_lines {
        let start = tail_start(&mut file, n).await.map_err(read_err)?;
        file.seek(SeekFrom::Start(start)).await.map_err(read_err)?;
    }
    let mut out = Output { tx, remaining: opts.limit_bytes, at_line_start: [true, true] };
    let mut reader = BufReader::new(file);
    // A line read without its newline yet (the runtime may be mid-write).
    let mut line = Vec::new();
    let mut idle_polls = 0u32;
    loop {
        let read = reader.read_until(b'\n', &mut line).await.map_err(read_err)?;
        if read > 0 && line.ends_with(b"\n") {
            idle_polls = 0;
            if let Flow::Stop = out.record(&line, opts).await {
                return Ok(());
            }
            line.clear();
            continue;
        }
        if read > 0 {
            continue; // more of the same line may follow at once
        }
        // End of the file as it is now.
        if !opts.follow {
            if !line.is_empty() {
                out.record(&line, opts).await;
            }
            return Ok(());
        }
        let now = identity(path);
        if now.is_some() && now != current {
            // Rotated: the runtime reopened the log at `path`. The old file
            // was drained above; continue from the start of the new one.
            match tokio::fs::File::open(path).await {
                Ok(f) => {
                    tracing::debug!(component = "kubelet", path = %path.display(), "following the reopened container log");
                    current = identity(path);
                    reader = BufReader::new(f);
                    line.clear();
                    continue;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(open_err(e)),
            }
        }
        idle_polls += 1;
        if idle_polls % RUNNING_CHECK_POLLS == 1 && !running().await {
            // One last read: what was written before the container stopped.
            let read = reader.read_until(b'\n', &mut line).await.map_err(read_err)?;
            if read > 0 {
                idle_polls = 0;
                continue;
            }
            if !line.is_empty() {
                out.record(&line, opts).await;
            }
            return Ok(());
        }
        if tx.is_closed() {
            return Ok(());
        }
        tokio::time::sleep(FOLLOW_POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    const LOG: &str = "\
2024-01-01T00:00:01.5Z stdout F line 1
2024-01-01T00:00:02Z stderr F err 1
2024-01-01T00:00:03Z stdout P part a-
2024-01-01T00:00:03.1Z stdout P part b-
2024-01-01T00:00:03.2Z stdout F part c
2024-01-01T00:00:04Z stdout F line 3
";

    fn write_log(dir: &Path, text: &str) -> PathBuf {
        let path = dir.join("0.log");
        std::fs::write(&path, text).unwrap();
        path
    }

    fn never_running() -> RunningCheck {
        Box::new(|| Box::pin(async { false }))
    }

    async fn read(path: &Path, opts: LogOptions) -> String {
        let (tx, mut rx) = mpsc::channel(16);
        let path = path.to_path_buf();
        let task = tokio::spawn(async move { read_logs(&path, &opts, &tx, never_running()).await });
        let mut got = Vec::new();
        while let Some(chunk) = rx.recv().await {
            got.extend(chunk);
        }
        task.await.unwrap().unwrap();
        String::from_utf8(got).unwrap()
    }

    /// Partial records are joined into one line; `timestamps` prefixes the
    /// first piece's time only.
    #[tokio::test]
    async fn whole_file_partial_lines_and_timestamps() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_log(dir.path(), LOG);
        assert_eq!(read(&path, LogOptions::default()).await, "line 1\nerr 1\npart a-part b-part c\nline 3\n");
        let opts = LogOptions { timestamps: true, ..Default::default() };
        assert_eq!(
            read(&path, opts).await,
            "2024-01-01T00:00:01.5Z line 1\n2024-01-01T00:00:02Z err 1\n2024-01-01T00:00:03Z part a-part b-part c\n\
             2024-01-01T00:00:04Z line 3\n"
        );
    }

    /// `tailLines` counts lines of the file; `since` drops older records;
    /// `stream` keeps one stream; `limitBytes` truncates mid-line.
    #[tokio::test]
    async fn tail_since_stream_and_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_log(dir.path(), LOG);
        assert_eq!(read(&path, LogOptions { tail_lines: Some(1), ..Default::default() }).await, "line 3\n");
        assert_eq!(read(&path, LogOptions { tail_lines: Some(2), ..Default::default() }).await, "part c\nline 3\n");
        assert_eq!(read(&path, LogOptions { tail_lines: Some(0), ..Default::default() }).await, "");
        assert_eq!(read(&path, LogOptions { tail_lines: Some(100), ..Default::default() }).await.lines().count(), 4);
        let since = "2024-01-01T00:00:02Z".parse().unwrap();
        assert_eq!(
            read(&path, LogOptions { since: Some(since), ..Default::default() }).await,
            "err 1\npart a-part b-part c\nline 3\n"
        );
        assert_eq!(read(&path, LogOptions { stream: Some(LogStream::Stderr), ..Default::default() }).await, "err 1\n");
        assert_eq!(read(&path, LogOptions { limit_bytes: Some(9), ..Default::default() }).await, "line 1\ner");
        let opts = LogOptions { limit_bytes: Some(30), timestamps: true, ..Default::default() };
        assert_eq!(read(&path, opts).await, "2024-01-01T00:00:01.5Z line 1\n");
    }

    /// A missing file is an open error naming the path.
    #[tokio::test]
    async fn missing_file() {
        let (tx, _rx) = mpsc::channel(1);
        let err =
            read_logs(Path::new("/nonexistent/0.log"), &LogOptions::default(), &tx, never_running()).await.unwrap_err();
        assert!(err.to_string().starts_with("failed to open log file \"/nonexistent/0.log\""), "{err}");
    }

    /// Following: new lines are streamed as they are written, the reader
    /// moves to the new file after a rotation (rename + reopen), and it
    /// ends once the container stops.
    #[tokio::test]
    async fn follow_across_rotation_until_exit() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_log(dir.path(), "2024-01-01T00:00:01Z stdout F first\n");
        let alive = Arc::new(AtomicBool::new(true));
        let check = alive.clone();
        let running: RunningCheck = Box::new(move || {
            let alive = check.load(Ordering::SeqCst);
            Box::pin(async move { alive })
        });
        let (tx, mut rx) = mpsc::channel(16);
        let opts = LogOptions { follow: true, ..Default::default() };
        let p = path.clone();
        let task = tokio::spawn(async move { read_logs(&p, &opts, &tx, running).await });
        assert_eq!(rx.recv().await.unwrap(), b"first\n");

        let append = |text: &str| {
            let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
            f.write_all(text.as_bytes()).unwrap();
        };
        append("2024-01-01T00:00:02Z stdout F second\n");
        assert_eq!(rx.recv().await.unwrap(), b"second\n");
        // Rotation: rename away, the runtime reopens a fresh file at the path.
        std::fs::rename(&path, dir.path().join("0.log.20240101-000003")).unwrap();
        std::fs::write(&path, "2024-01-01T00:00:04Z stdout F third\n").unwrap();
        assert_eq!(rx.recv().await.unwrap(), b"third\n");
        append("2024-01-01T00:00:05Z stdout F last\n");
        alive.store(false, Ordering::SeqCst);
        assert_eq!(rx.recv().await.unwrap(), b"last\n");
        let ended = tokio::time::timeout(Duration::from_secs(5), task).await.expect("follow ends after exit");
        ended.unwrap().unwrap();
        assert!(rx.recv().await.is_none());
    }
}
