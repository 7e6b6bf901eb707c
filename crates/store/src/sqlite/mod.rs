//! The embedded backend: one SQLite file in WAL mode, an MVCC log in the
//! spirit of etcd and kine, group commit on one writer thread, and
//! in-process watch fan-out.
//!
//! Modules, one job each:
//! - `schema`: file layout, pragmas, versioned migrations.
//! - `writer`: the writer thread (group commit, TTL sweep, chunked
//!   compaction).
//! - `read`: the read-only connection pool and the read queries.
//! - `watch`: watch tasks (replay from the log, then live fan-out).
//!
//! Durability: `synchronous=FULL` in WAL mode, and a write is acknowledged
//! only after its batch committed, so every acknowledged write survives
//! `kill -9` and power loss. Only one `SqliteStore` may have a file open per
//! process (a second `open` fails); one rkube server per file.

mod read;
mod schema;
mod snapshot;
mod watch;
mod writer;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{broadcast, oneshot};

use crate::{
    check_value_size, DeleteResponse, GetResponse, KeyValue, RangeRequest, RangeResponse, Result, Revision, Store,
    StoreError, Watch, WatchOptions,
};
use read::ReadPool;
pub use snapshot::{check_snapshot_file, lock_path, restore_snapshot, RestoreOptions, RestoreReport};
use writer::{Batch, Op, Reply, Request, Shared, Writer, WriterConfig};

/// Tuning of [`SqliteStore`]. The defaults suit a production server; tests
/// shorten the intervals.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqliteOptions {
    /// With [`WatchOptions::progress_notify`], a watch that delivered nothing
    /// for this long sends a [`crate::WatchEvent::Progress`]. Default 5 s.
    pub progress_interval: Duration,
    /// How often expired TTL keys are looked for (so expiry lags by at most
    /// about this much). Default 1 s.
    pub ttl_sweep_interval: Duration,
    /// Read-only connections serving reads and watch replays concurrently.
    /// Default 4.
    pub read_connections: usize,
    /// Committed batches buffered for watchers; a watcher further behind
    /// recovers by re-reading the log. Default 1024.
    pub watch_broadcast_capacity: usize,
    /// Events buffered per watch between the store and the consumer.
    /// Default 1024.
    pub watch_buffer: usize,
    /// Most write requests committed in one transaction. Default 1024.
    pub max_batch: usize,
    /// Log rows examined per compaction step (one short transaction each).
    /// Default 1000.
    pub compaction_chunk: usize,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            progress_interval: Duration::from_secs(5),
            ttl_sweep_interval: Duration::from_secs(1),
            read_connections: 4,
            watch_broadcast_capacity: 1024,
            watch_buffer: 1024,
            max_batch: 1024,
            compaction_chunk: 1000,
        }
    }
}

/// Log rows read per watch-replay query.
const REPLAY_CHUNK: usize = 512;

/// Files open in this process, so that a second `SqliteStore` on the same
/// file (whose revision counter and watchers would diverge) is refused.
fn open_files() -> &'static Mutex<HashSet<PathBuf>> {
    static OPEN: OnceLock<Mutex<HashSet<PathBuf>>> = OnceLock::new();
    OPEN.get_or_init(Default::default)
}

/// Holds a file's entry in [`open_files`] and an exclusive lock on
/// `<file>.lock` until dropped, so that neither a second store in this
/// process nor another process (a second `rkube server` on the same data
/// dir) can open the file: their revision counters and watchers would
/// diverge. The OS releases the lock when the process dies, so `kill -9`
/// never leaves a stale one.
struct Registration {
    path: PathBuf,
    _lock: std::fs::File,
}

impl Registration {
    fn acquire(path: PathBuf) -> Result<Self> {
        let mut open = open_files().lock().unwrap_or_else(|p| p.into_inner());
        if open.contains(&path) {
            return Err(StoreError::Unavailable(format!(
                "sqlite store {} is already open in this process; drop the other SqliteStore first",
                path.display()
            )));
        }
        let lock_path = snapshot::lock_path(&path);
        let lock = match snapshot::try_lock(&path) {
            Ok(Some(lock)) => lock,
            Ok(None) => {
                return Err(StoreError::Unavailable(format!(
                    "sqlite store {} is in use by another process (it holds {}); only one rkube server may use a data dir: stop the other one or choose another --data-dir",
                    path.display(),
                    lock_path.display()
                )))
            }
            Err(e) => return Err(StoreError::Unavailable(format!("cannot lock {}: {e}", lock_path.display()))),
        };
        open.insert(path.clone());
        Ok(Registration { path, _lock: lock })
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        open_files().lock().unwrap_or_else(|p| p.into_inner()).remove(&self.path);
    }
}

/// The embedded store: etcd v3 MVCC semantics on one SQLite file.
///
/// Writes go to one writer thread that commits them in groups; reads use a
/// small pool of read-only connections; watches are fed in-process right
/// after each commit. Dropping the store finishes the queued writes, stops
/// the writer thread and closes the file (blocking briefly for the last
/// commit); open watches then end.
pub struct SqliteStore {
    path: PathBuf,
    requests: Option<std_mpsc::Sender<Request>>,
    writer: Option<JoinHandle<()>>,
    readers: Arc<ReadPool>,
    shared: Arc<Shared>,
    events: broadcast::Sender<Arc<Batch>>,
    options: SqliteOptions,
    _registration: Registration,
}

impl SqliteStore {
    /// Opens (creating if needed, with its parent directories) the store at
    /// `path` with [`SqliteOptions::default`]. Reopening a file continues its
    /// revision sequence with all data intact.
    ///
    /// Errors: [`StoreError::Unavailable`] if the directory or file cannot
    /// be created or opened, the file is from a newer rkube, or the file is
    /// already open in this process.
    pub async fn open(path: &Path) -> Result<SqliteStore> {
        Self::open_with(path, SqliteOptions::default()).await
    }

    /// [`SqliteStore::open`] with explicit [`SqliteOptions`].
    pub async fn open_with(path: &Path, options: SqliteOptions) -> Result<SqliteStore> {
        let path = path.to_path_buf();
        tokio::task::spawn_blocking(move || Self::open_blocking(path, options))
            .await
            .map_err(|e| StoreError::Unavailable(format!("opening the sqlite store failed: {e}")))?
    }

    fn open_blocking(path: PathBuf, options: SqliteOptions) -> Result<SqliteStore> {
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&parent).map_err(|e| {
            StoreError::Unavailable(format!(
                "cannot create directory {} for the sqlite store: {e}; check permissions or choose another --data-dir",
                parent.display()
            ))
        })?;
        let file_name = path.file_name().ok_or_else(|| {
            StoreError::Unavailable(format!("sqlite store path {} does not name a file", path.display()))
        })?;
        let canonical = std::fs::canonicalize(&parent).map(|p| p.join(file_name)).unwrap_or_else(|_| path.clone());
        let registration = Registration::acquire(canonical)?;

        let conn = schema::open_writer(&path)?;
        let shared = Arc::new(Shared::default());
        let (events, _) = broadcast::channel(options.watch_broadcast_capacity.max(1));
        let config = WriterConfig {
            ttl_sweep_interval: options.ttl_sweep_interval,
            max_batch: options.max_batch.max(1),
            compaction_chunk: options.compaction_chunk.max(1),
        };
        let writer = Writer::new(conn, path.clone(), shared.clone(), events.clone(), config)?;
        let (requests, rx) = std_mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("rkube-store-writer".into())
            .spawn(move || writer.run(rx))
            .map_err(|e| StoreError::Unavailable(format!("cannot start the sqlite writer thread: {e}")))?;
        let revision = shared.current.load(std::sync::atomic::Ordering::SeqCst);
        let compacted = shared.compacted.load(std::sync::atomic::Ordering::SeqCst);
        tracing::info!(component = "store", path = %path.display(), revision, compacted, "opened sqlite store");
        Ok(SqliteStore {
            readers: Arc::new(ReadPool::new(path.clone(), options.read_connections)),
            path,
            requests: Some(requests),
            writer: Some(handle),
            shared,
            events,
            options,
            _registration: registration,
        })
    }

    /// The file this store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Queues one write and waits for its group commit.
    async fn submit<T>(&self, op: Op, reply: impl FnOnce(oneshot::Sender<Result<T>>) -> Reply) -> Result<T> {
        let (tx, rx) = oneshot::channel();
        let sender = self.requests.as_ref().ok_or_else(|| self.stopped())?;
        sender.send(Request { op, reply: reply(tx) }).map_err(|_| self.stopped())?;
        rx.await.map_err(|_| self.stopped())?
    }

    fn stopped(&self) -> StoreError {
        StoreError::Unavailable(format!(
            "sqlite store {}: the writer thread has stopped (see earlier errors); restart rkube",
            self.path.display()
        ))
    }
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        // Closing the queue lets the writer drain it and exit; waiting for
        // it means the file is closed when drop returns, so it can be
        // reopened at once.
        drop(self.requests.take());
        if let Some(handle) = self.writer.take() {
            if handle.join().is_err() {
                tracing::error!(component = "store", path = %self.path.display(), "the sqlite writer thread panicked");
            }
        }
    }
}

#[async_trait::async_trait]
impl Store for SqliteStore {
    async fn current_revision(&self) -> Result<Revision> {
        Ok(self.shared.current.load(std::sync::atomic::Ordering::SeqCst))
    }

    async fn get(&self, key: &str, revision: Option<Revision>) -> Result<GetResponse> {
        let key = key.to_string();
        self.readers
            .run("reading a key", move |tx| {
                let (current, compacted) = read::snapshot_revisions(tx)?;
                let (rev, at_current) = match read::resolve_revision(revision, current, compacted) {
                    Ok(r) => r,
                    Err(e) => return Ok(Err(e)),
                };
                Ok(Ok(GetResponse { kv: read::get(tx, &key, rev, at_current)?, revision: rev }))
            })
            .await
    }

    async fn range(&self, req: RangeRequest) -> Result<RangeResponse> {
        self.readers.run("reading a range", move |tx| read::range(tx, &req)).await
    }

    async fn create(&self, key: &str, value: Bytes, ttl: Option<Duration>) -> Result<KeyValue> {
        check_value_size(key, &value)?;
        self.submit(Op::Create { key: key.to_string(), value, ttl }, Reply::Kv).await
    }

    async fn update(&self, key: &str, value: Bytes, expected: Revision, ttl: Option<Duration>) -> Result<KeyValue> {
        check_value_size(key, &value)?;
        self.submit(Op::Update { key: key.to_string(), value, expected, ttl }, Reply::Kv).await
    }

    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<DeleteResponse> {
        self.submit(Op::Delete { key: key.to_string(), expected }, Reply::Deleted).await
    }

    /// Compaction rule: a `start` at or below the compacted revision fails
    /// with [`StoreError::Compacted`] (the contract's rule). etcd's mvcc
    /// refuses only `start < compacted` (`watchable_store.go`:
    /// `w.minRev < compactRev`), but its compaction has dropped the
    /// tombstones at the compacted revision, so a watch from exactly there
    /// could miss deletions; the contract refuses it, and both backends
    /// (the etcd one by starting one etcd revision early) behave the same.
    /// Kubernetes is unaffected: a watch from resourceVersion `R` starts at
    /// revision `R + 1`, which is accepted for `R` = the compacted revision.
    async fn watch(&self, prefix: &str, start: Revision, opts: WatchOptions) -> Result<Watch> {
        let compacted = self.shared.compacted.load(std::sync::atomic::Ordering::SeqCst);
        if start > 0 && start <= compacted {
            return Err(StoreError::Compacted { requested: start, compacted });
        }
        if self.requests.is_none() {
            return Err(self.stopped());
        }
        // Subscribe before anything else reads the published revision.
        let rx = self.events.subscribe();
        let ctx = watch::WatchContext {
            readers: self.readers.clone(),
            shared: self.shared.clone(),
            progress_interval: self.options.progress_interval,
            buffer: self.options.watch_buffer,
            replay_chunk: REPLAY_CHUNK,
        };
        Ok(watch::spawn(ctx, rx, prefix, start, opts))
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        self.submit(Op::Compact { revision }, Reply::Done).await
    }

    async fn compacted_revision(&self) -> Result<Revision> {
        Ok(self.shared.compacted.load(std::sync::atomic::Ordering::SeqCst))
    }

    /// `VACUUM INTO` a temporary file next to the database, unlinked at
    /// once and streamed from the open file (see `snapshot.rs`); the
    /// revision is the copy's own `current_revision`.
    async fn snapshot(&self) -> Result<crate::Snapshot> {
        if self.requests.is_none() {
            return Err(self.stopped());
        }
        let path = self.path.clone();
        let (file, revision, size) = tokio::task::spawn_blocking(move || snapshot::take(&path))
            .await
            .map_err(|e| StoreError::Unavailable(format!("the sqlite snapshot task failed: {e}")))??;
        tracing::info!(component = "store", path = %self.path.display(), revision, bytes = size, "took a snapshot");
        let file = tokio::fs::File::from_std(file);
        let data = futures::stream::try_unfold(file, |mut file| async move {
            use tokio::io::AsyncReadExt;
            let mut buf = bytes::BytesMut::with_capacity(SNAPSHOT_CHUNK);
            let n = file
                .read_buf(&mut buf)
                .await
                .map_err(|e| StoreError::Unavailable(format!("reading the snapshot copy failed: {e}")))?;
            Ok::<_, StoreError>((n > 0).then(|| (buf.freeze(), file)))
        });
        Ok(crate::Snapshot { format: crate::SnapshotFormat::Sqlite, revision, size: Some(size), data: Box::pin(data) })
    }
}

/// Bytes per chunk of a snapshot stream.
const SNAPSHOT_CHUNK: usize = 256 * 1024;

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;
    use crate::WatchEvent;

    async fn open(dir: &tempfile::TempDir, options: SqliteOptions) -> SqliteStore {
        SqliteStore::open_with(&dir.path().join("state.db"), options).await.unwrap()
    }

    async fn next(w: &mut Watch) -> WatchEvent {
        match tokio::time::timeout(Duration::from_secs(10), w.events.next()).await {
            Ok(Some(Ok(ev))) => ev,
            other => panic!("expected a watch event, got {:?}", other.map(|o| o.map(|r| r.map(|_| ())))),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_watcher_that_lags_the_broadcast_recovers_from_the_log() {
        let dir = tempfile::tempdir().unwrap();
        // Tiny buffers: a consumer that does not read makes the watch task
        // block, so the 2-slot broadcast overflows (Lagged) almost at once.
        let options = SqliteOptions { watch_broadcast_capacity: 2, watch_buffer: 1, ..SqliteOptions::default() };
        let store = open(&dir, options).await;
        let mut w = store.watch("/lag/", 0, WatchOptions::default()).await.unwrap();
        let mut written = Vec::new();
        for i in 0..300 {
            let key = format!("/lag/{}", i % 7);
            let rev = match store.get(&key, None).await.unwrap().kv {
                Some(kv) => {
                    store.update(&key, Bytes::from(format!("{i}")), kv.mod_revision, None).await.unwrap().mod_revision
                }
                None => store.create(&key, Bytes::from(format!("{i}")), None).await.unwrap().mod_revision,
            };
            written.push((rev, i));
            store.create(&format!("/other/{i}"), Bytes::new(), None).await.unwrap();
        }
        for (rev, i) in written {
            match next(&mut w).await {
                WatchEvent::Put { kv, .. } => {
                    assert_eq!(kv.mod_revision, rev);
                    assert_eq!(kv.value, Bytes::from(format!("{i}")));
                }
                ev => panic!("expected put {i} at {rev}, got {ev:?}"),
            }
        }
        w.request_progress();
        assert!(matches!(next(&mut w).await, WatchEvent::Progress { revision: 600 }));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lagging_watcher_whose_history_was_compacted_fails_with_compacted() {
        let dir = tempfile::tempdir().unwrap();
        let options = SqliteOptions { watch_broadcast_capacity: 1, watch_buffer: 1, ..SqliteOptions::default() };
        let store = open(&dir, options).await;
        let mut w = store.watch("/", 1, WatchOptions::default()).await.unwrap();
        for i in 0..50 {
            store.create(&format!("/k{i}"), Bytes::new(), None).await.unwrap();
        }
        store.compact(40).await.unwrap();
        let mut revisions = Vec::new();
        let err = loop {
            match tokio::time::timeout(Duration::from_secs(10), w.events.next()).await.unwrap() {
                Some(Ok(ev)) => revisions.push(ev.revision()),
                Some(Err(e)) => break e,
                None => panic!("the stream ended without an error after {revisions:?}"),
            }
        };
        assert!(matches!(err, StoreError::Compacted { compacted: 40, .. }), "{err}");
        assert!(revisions.windows(2).all(|w| w[1] == w[0] + 1), "delivered a gap-free prefix: {revisions:?}");
        assert!(tokio::time::timeout(Duration::from_secs(10), w.events.next()).await.unwrap().is_none());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn compaction_shrinks_the_log_in_the_background() {
        let dir = tempfile::tempdir().unwrap();
        let options = SqliteOptions { compaction_chunk: 10, ..SqliteOptions::default() };
        let store = open(&dir, options).await;
        let mut rev = store.create("/k", Bytes::from_static(b"0"), None).await.unwrap().mod_revision;
        for i in 1..100 {
            rev = store.update("/k", Bytes::from(format!("{i}")), rev, None).await.unwrap().mod_revision;
        }
        store.create("/gone", Bytes::new(), None).await.unwrap();
        store.delete("/gone", None).await.unwrap();
        store.compact(store.current_revision().await.unwrap()).await.unwrap();
        let path = dir.path().join("state.db");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let rows: i64 = rusqlite::Connection::open(&path)
                .unwrap()
                .query_row("SELECT COUNT(*) FROM log", [], |r| r.get(0))
                .unwrap();
            if rows == 1 {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "compaction left {rows} rows, expected only the live value");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let kv = store.get("/k", None).await.unwrap().kv.unwrap();
        assert_eq!((kv.mod_revision, &kv.value[..]), (100, &b"99"[..]));
        assert_eq!(store.get("/k", Some(102)).await.unwrap().kv, Some(kv), "the compacted revision stays readable");
        assert!(matches!(
            store.get("/k", Some(100)).await,
            Err(StoreError::Compacted { requested: 100, compacted: 102 })
        ));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn dropping_the_store_ends_open_watches() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir, SqliteOptions::default()).await;
        let mut w = store.watch("/", 0, WatchOptions::default()).await.unwrap();
        store.create("/k", Bytes::new(), None).await.unwrap();
        assert!(matches!(next(&mut w).await, WatchEvent::Put { .. }));
        drop(store);
        let end = tokio::time::timeout(Duration::from_secs(10), w.events.next()).await.unwrap();
        assert!(end.is_none(), "the stream ends when the store shuts down");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_watch_from_a_future_revision_waits_for_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir, SqliteOptions::default()).await;
        let mut w = store.watch("/", 3, WatchOptions::default()).await.unwrap();
        for i in 1..=4 {
            store.create(&format!("/k{i}"), Bytes::new(), None).await.unwrap();
        }
        assert_eq!(next(&mut w).await.revision(), 3);
        assert_eq!(next(&mut w).await.revision(), 4);
    }
}
