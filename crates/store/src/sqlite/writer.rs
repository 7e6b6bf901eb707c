//! The writer thread: the only connection that writes, applying requests in
//! group commits.
//!
//! Loop: block for the first request (or the next TTL sweep), drain
//! everything else already queued (up to `max_batch`), apply it all in one
//! `BEGIN IMMEDIATE` transaction, commit once (one fsync), then publish the
//! watch events of the batch in revision order and acknowledge each caller.
//! Per-request failures (`AlreadyExists`, `NotFound`, `Conflict`,
//! `FutureRevision`) are decided by reading before writing inside the
//! transaction, so they neither abort the batch nor consume a revision; only
//! a SQLite failure fails the whole batch (nothing of it is acknowledged).
//!
//! Between batches the thread also deletes expired TTL keys (as ordinary
//! deletions with their own revision and watch event) and physically removes
//! compacted history in small chunks, so compaction never holds the write
//! lock for long.

use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use tokio::sync::{broadcast, oneshot};

use super::schema::{self, sql_err};
use crate::{DeleteResponse, KeyValue, Result, Revision, StoreError, WatchEvent};

/// Most expired keys deleted per sweep; the next sweep follows at once if
/// there were more.
const SWEEP_LIMIT: usize = 1000;

/// Revisions shared between the writer and readers/watchers.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// Revision of the newest committed and published write. Updated after
    /// commit and before the batch is published and acknowledged.
    pub current: AtomicI64,
    /// The compacted revision, updated after the compaction is committed.
    pub compacted: AtomicI64,
}

/// The watch events of one committed batch, published to every watcher.
#[derive(Debug)]
pub(crate) struct Batch {
    /// The batch's highest revision (= the store's revision after it).
    pub last: Revision,
    /// Events in increasing revision order.
    pub events: Vec<WatchEvent>,
}

/// One write operation.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    Create { key: String, value: Bytes, ttl: Option<Duration> },
    Update { key: String, value: Bytes, expected: Revision, ttl: Option<Duration> },
    Delete { key: String, expected: Option<Revision> },
    Compact { revision: Revision },
}

/// The result of one [`Op`].
#[derive(Debug)]
pub(crate) enum Outcome {
    Kv(Result<KeyValue>),
    Deleted(Result<DeleteResponse>),
    Done(Result<()>),
}

/// Where the result of one [`Op`] goes.
#[derive(Debug)]
pub(crate) enum Reply {
    Kv(oneshot::Sender<Result<KeyValue>>),
    Deleted(oneshot::Sender<Result<DeleteResponse>>),
    Done(oneshot::Sender<Result<()>>),
}

impl Reply {
    fn send(self, outcome: Outcome) {
        // A caller that went away does not care; the write stands (as in etcd).
        match (self, outcome) {
            (Reply::Kv(tx), Outcome::Kv(r)) => drop(tx.send(r)),
            (Reply::Deleted(tx), Outcome::Deleted(r)) => drop(tx.send(r)),
            (Reply::Done(tx), Outcome::Done(r)) => drop(tx.send(r)),
            (reply, outcome) => reply.fail(StoreError::Unavailable(format!(
                "sqlite store internal error: mismatched reply for {outcome:?}"
            ))),
        }
    }

    fn fail(self, err: StoreError) {
        match self {
            Reply::Kv(tx) => drop(tx.send(Err(err))),
            Reply::Deleted(tx) => drop(tx.send(Err(err))),
            Reply::Done(tx) => drop(tx.send(Err(err))),
        }
    }
}

/// A queued write and its caller.
#[derive(Debug)]
pub(crate) struct Request {
    pub op: Op,
    pub reply: Reply,
}

/// Tuning of the writer thread.
#[derive(Clone, Debug)]
pub(crate) struct WriterConfig {
    pub ttl_sweep_interval: Duration,
    pub max_batch: usize,
    pub compaction_chunk: usize,
}

/// What one committed transaction did.
#[derive(Debug)]
pub(crate) struct Applied {
    pub outcomes: Vec<Outcome>,
    pub events: Vec<WatchEvent>,
    /// The revision after the batch.
    pub current: Revision,
    /// The new compacted revision, if the batch raised it.
    pub compacted: Option<Revision>,
    /// The TTL sweep hit its limit: more keys may be expired.
    pub more_expired: bool,
}

/// The writer: owns the read-write connection.
pub(crate) struct Writer {
    conn: Connection,
    path: PathBuf,
    shared: Arc<Shared>,
    events: broadcast::Sender<Arc<Batch>>,
    config: WriterConfig,
    /// Revision this writer last committed (to notice a second writer).
    last_committed: Revision,
    /// Committed compacted revision and how far rows below it are deleted.
    compacted: Revision,
    compact_cursor: Revision,
    compaction_paused_until: Option<Instant>,
}

/// Per-transaction state while applying a batch.
struct TxState {
    rev: Revision,
    compacted: Revision,
    now_ms: i64,
    events: Vec<WatchEvent>,
}

pub(crate) fn unix_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

fn expiry(now_ms: i64, ttl: Option<Duration>) -> Option<i64> {
    ttl.map(|t| now_ms.saturating_add(i64::try_from(t.as_millis()).unwrap_or(i64::MAX)))
}

/// The live value of `key` (newest row, via `latest`).
fn current_kv(conn: &Connection, key: &str) -> rusqlite::Result<Option<KeyValue>> {
    conn.prepare_cached(
        "SELECT g.value, g.create_revision, g.revision FROM latest l JOIN log g ON g.revision = l.revision WHERE l.key = ?1",
    )?
    .query_row([key.as_bytes()], |r| {
        Ok(KeyValue {
            key: key.to_string(),
            value: Bytes::from(r.get::<_, Vec<u8>>(0)?),
            create_revision: r.get(1)?,
            mod_revision: r.get(2)?,
        })
    })
    .optional()
}

/// One row of the `log` table.
struct LogRow<'a> {
    revision: Revision,
    key: &'a str,
    value: &'a [u8],
    create_revision: Revision,
    prev_revision: Revision,
    deleted: bool,
    expires_at: Option<i64>,
}

fn insert_log(conn: &Connection, row: LogRow<'_>) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO log (revision, key, value, create_revision, prev_revision, deleted, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        row.revision,
        row.key.as_bytes(),
        row.value,
        row.create_revision,
        row.prev_revision,
        row.deleted,
        row.expires_at
    ])?;
    Ok(())
}

fn create(
    conn: &Connection,
    st: &mut TxState,
    key: &str,
    value: &Bytes,
    ttl: Option<Duration>,
) -> rusqlite::Result<Result<KeyValue>> {
    if current_kv(conn, key)?.is_some() {
        return Ok(Err(StoreError::AlreadyExists { key: key.to_string() }));
    }
    let rev = st.rev + 1;
    let expires_at = expiry(st.now_ms, ttl);
    insert_log(
        conn,
        LogRow { revision: rev, key, value, create_revision: rev, prev_revision: 0, deleted: false, expires_at },
    )?;
    conn.prepare_cached("INSERT INTO latest (key, revision, expires_at) VALUES (?1, ?2, ?3)")?.execute(params![
        key.as_bytes(),
        rev,
        expires_at
    ])?;
    st.rev = rev;
    let kv = KeyValue { key: key.to_string(), value: value.clone(), create_revision: rev, mod_revision: rev };
    st.events.push(WatchEvent::Put { kv: kv.clone(), prev: None });
    Ok(Ok(kv))
}

fn update(
    conn: &Connection,
    st: &mut TxState,
    key: &str,
    value: &Bytes,
    expected: Revision,
    ttl: Option<Duration>,
) -> rusqlite::Result<Result<KeyValue>> {
    let Some(cur) = current_kv(conn, key)? else {
        return Ok(Err(StoreError::NotFound { key: key.to_string() }));
    };
    if cur.mod_revision != expected {
        return Ok(Err(StoreError::Conflict { key: key.to_string(), expected, current: Some(cur) }));
    }
    let rev = st.rev + 1;
    let expires_at = expiry(st.now_ms, ttl);
    insert_log(
        conn,
        LogRow {
            revision: rev,
            key,
            value,
            create_revision: cur.create_revision,
            prev_revision: cur.mod_revision,
            deleted: false,
            expires_at,
        },
    )?;
    conn.prepare_cached("UPDATE latest SET revision = ?2, expires_at = ?3 WHERE key = ?1")?.execute(params![
        key.as_bytes(),
        rev,
        expires_at
    ])?;
    st.rev = rev;
    let kv = KeyValue {
        key: key.to_string(),
        value: value.clone(),
        create_revision: cur.create_revision,
        mod_revision: rev,
    };
    st.events.push(WatchEvent::Put { kv: kv.clone(), prev: Some(cur) });
    Ok(Ok(kv))
}

fn delete(
    conn: &Connection,
    st: &mut TxState,
    key: &str,
    expected: Option<Revision>,
) -> rusqlite::Result<Result<DeleteResponse>> {
    let Some(cur) = current_kv(conn, key)? else {
        return Ok(Err(StoreError::NotFound { key: key.to_string() }));
    };
    if let Some(expected) = expected {
        if cur.mod_revision != expected {
            return Ok(Err(StoreError::Conflict { key: key.to_string(), expected, current: Some(cur) }));
        }
    }
    let rev = st.rev + 1;
    insert_log(
        conn,
        LogRow {
            revision: rev,
            key,
            value: &[],
            create_revision: cur.create_revision,
            prev_revision: cur.mod_revision,
            deleted: true,
            expires_at: None,
        },
    )?;
    conn.prepare_cached("DELETE FROM latest WHERE key = ?1")?.execute([key.as_bytes()])?;
    st.rev = rev;
    st.events.push(WatchEvent::Delete { key: key.to_string(), revision: rev, prev: cur.clone() });
    Ok(Ok(DeleteResponse { revision: rev, prev: cur }))
}

/// etcd's compaction rule (`mvcc/kvstore.go` `compact`): a revision above
/// the current one is a future revision; the contract makes a revision at
/// or below the previous compaction a no-op (etcd answers ErrCompacted).
fn compact(st: &mut TxState, revision: Revision) -> Result<()> {
    if revision > st.rev {
        return Err(StoreError::FutureRevision { requested: revision, current: st.rev });
    }
    if revision > st.compacted {
        st.compacted = revision;
    }
    Ok(())
}

/// Deletes up to [`SWEEP_LIMIT`] keys whose TTL has passed. Returns whether
/// the limit was hit.
fn sweep_expired(conn: &Connection, st: &mut TxState) -> rusqlite::Result<bool> {
    let keys: Vec<Vec<u8>> = conn
        .prepare_cached("SELECT key FROM latest WHERE expires_at <= ?1 ORDER BY expires_at LIMIT ?2")?
        .query_map(params![st.now_ms, SWEEP_LIMIT as i64], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for key in &keys {
        let key = String::from_utf8_lossy(key).into_owned();
        if let Ok(resp) = delete(conn, st, &key, None)? {
            tracing::debug!(component = "store", key = %key, revision = resp.revision, "deleted expired key");
        }
    }
    Ok(keys.len() == SWEEP_LIMIT)
}

impl Writer {
    /// Wraps the migrated read-write connection; reads the counters and
    /// resumes an unfinished compaction.
    pub(crate) fn new(
        conn: Connection,
        path: PathBuf,
        shared: Arc<Shared>,
        events: broadcast::Sender<Arc<Batch>>,
        config: WriterConfig,
    ) -> Result<Self> {
        let meta = schema::load_meta(&conn).map_err(|e| sql_err("reading the revision counters", &path, e))?;
        shared.current.store(meta.current, Ordering::SeqCst);
        shared.compacted.store(meta.compacted, Ordering::SeqCst);
        Ok(Writer {
            conn,
            path,
            shared,
            events,
            config,
            last_committed: meta.current,
            compacted: meta.compacted,
            compact_cursor: meta.compact_cursor,
            compaction_paused_until: None,
        })
    }

    fn compaction_pending(&self) -> bool {
        self.compact_cursor < self.compacted && self.compaction_paused_until.is_none_or(|t| Instant::now() >= t)
    }

    /// The thread body: runs until every sender of `rx` is gone (the store
    /// was dropped), after draining what is queued, then closes the file.
    pub(crate) fn run(mut self, rx: Receiver<Request>) {
        let interval = self.config.ttl_sweep_interval;
        let mut next_sweep = Instant::now() + interval;
        loop {
            let wait = if self.compaction_pending() {
                Duration::ZERO
            } else {
                let mut until = next_sweep;
                if let Some(t) = self.compaction_paused_until {
                    until = until.min(t);
                }
                until.saturating_duration_since(Instant::now())
            };
            let mut batch = Vec::new();
            match rx.recv_timeout(wait) {
                Ok(first) => {
                    batch.push(first);
                    while batch.len() < self.config.max_batch {
                        match rx.try_recv() {
                            Ok(r) => batch.push(r),
                            Err(_) => break,
                        }
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            let sweep = Instant::now() >= next_sweep;
            if sweep {
                next_sweep = Instant::now() + interval;
            }
            if (!batch.is_empty() || sweep) && self.commit(batch, sweep) {
                next_sweep = Instant::now();
            }
            if self.compaction_pending() {
                if let Err(e) = self.compact_step() {
                    tracing::warn!(component = "store", path = %self.path.display(), error = %e,
                        "deleting compacted history failed; retrying in a second");
                    self.compaction_paused_until = Some(Instant::now() + Duration::from_secs(1));
                }
            }
        }
        let path = self.path.clone();
        if let Err((_, e)) = self.conn.close() {
            tracing::warn!(component = "store", path = %path.display(), error = %e, "closing the database failed");
        } else {
            tracing::debug!(component = "store", path = %path.display(), "writer stopped, database closed");
        }
    }

    /// Applies, commits, publishes and acknowledges one batch. Returns
    /// whether more expired keys are waiting.
    fn commit(&mut self, requests: Vec<Request>, sweep: bool) -> bool {
        let n = requests.len();
        let (ops, replies): (Vec<Op>, Vec<Reply>) = requests.into_iter().map(|r| (r.op, r.reply)).unzip();
        match self.apply(&ops, sweep, unix_ms()) {
            Ok(applied) => {
                if let Some(c) = applied.compacted {
                    self.shared.compacted.store(c, Ordering::SeqCst);
                }
                if !applied.events.is_empty() {
                    self.shared.current.store(applied.current, Ordering::SeqCst);
                    // No receivers is fine: nobody watches.
                    let _ = self.events.send(Arc::new(Batch { last: applied.current, events: applied.events }));
                }
                for (reply, outcome) in replies.into_iter().zip(applied.outcomes) {
                    reply.send(outcome);
                }
                applied.more_expired
            }
            Err(e) => {
                let err = sql_err(&format!("committing a batch of {n} writes"), &self.path, e);
                tracing::error!(component = "store", error = %err, "write batch failed; no write of it was applied");
                for reply in replies {
                    reply.fail(err.clone());
                }
                false
            }
        }
    }

    /// Applies `ops` (and, with `sweep`, the TTL sweep at `now_ms`) in one
    /// transaction and commits it. On error nothing was committed.
    pub(crate) fn apply(&mut self, ops: &[Op], sweep: bool, now_ms: i64) -> rusqlite::Result<Applied> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let start = schema::meta_get(&tx, "current_revision")?;
        let compacted = schema::meta_get(&tx, "compacted_revision")?;
        if start != self.last_committed {
            tracing::warn!(component = "store", path = %self.path.display(), expected = self.last_committed, found = start,
                "another process wrote to this database; only one rkube server may use a sqlite file");
        }
        let mut st = TxState { rev: start, compacted, now_ms, events: Vec::new() };
        let mut outcomes = Vec::with_capacity(ops.len());
        for op in ops {
            outcomes.push(match op {
                Op::Create { key, value, ttl } => Outcome::Kv(create(&tx, &mut st, key, value, *ttl)?),
                Op::Update { key, value, expected, ttl } => {
                    Outcome::Kv(update(&tx, &mut st, key, value, *expected, *ttl)?)
                }
                Op::Delete { key, expected } => Outcome::Deleted(delete(&tx, &mut st, key, *expected)?),
                Op::Compact { revision } => Outcome::Done(compact(&mut st, *revision)),
            });
        }
        let more_expired = if sweep { sweep_expired(&tx, &mut st)? } else { false };
        if st.rev != start {
            schema::meta_set(&tx, "current_revision", st.rev)?;
        }
        if st.compacted != compacted {
            schema::meta_set(&tx, "compacted_revision", st.compacted)?;
        }
        tx.commit()?;
        self.last_committed = st.rev;
        let new_compacted = (st.compacted != compacted).then_some(st.compacted);
        if let Some(c) = new_compacted {
            self.compacted = c;
            self.compaction_paused_until = None;
            tracing::debug!(component = "store", revision = c, "compacted; deleting old history in the background");
        }
        Ok(Applied { outcomes, events: st.events, current: st.rev, compacted: new_compacted, more_expired })
    }

    /// Physically deletes one chunk of history made obsolete by compaction:
    /// for each log row in the next `compaction_chunk` revisions at or below
    /// the compacted revision, the row it replaced (superseded at or below
    /// the compacted revision) and, if it is a tombstone, the row itself. The
    /// newest value of each live key is never superseded, so it stays.
    /// Returns the number of rows deleted.
    pub(crate) fn compact_step(&mut self) -> rusqlite::Result<usize> {
        let target = self.compacted;
        let chunk = self.config.compaction_chunk.max(1);
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let rows: Vec<(Revision, Revision, bool)> = tx
            .prepare_cached(
                "SELECT revision, prev_revision, deleted FROM log
                 WHERE revision > ?1 AND revision <= ?2 ORDER BY revision LIMIT ?3",
            )?
            .query_map(params![self.compact_cursor, target, chunk as i64], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let mut removed = 0;
        {
            let mut del = tx.prepare_cached("DELETE FROM log WHERE revision = ?1")?;
            for &(rev, prev, deleted) in &rows {
                if prev > 0 {
                    removed += del.execute([prev])?;
                }
                if deleted {
                    removed += del.execute([rev])?;
                }
            }
        }
        let cursor = if rows.len() < chunk { target } else { rows.last().map(|r| r.0).unwrap_or(target) };
        schema::meta_set(&tx, "compact_cursor", cursor)?;
        tx.commit()?;
        self.compact_cursor = cursor;
        if cursor >= target {
            tracing::debug!(component = "store", revision = target, "compacted history deleted");
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer(dir: &tempfile::TempDir) -> (Writer, broadcast::Receiver<Arc<Batch>>) {
        let path = dir.path().join("state.db");
        let conn = schema::open_writer(&path).unwrap();
        let (tx, rx) = broadcast::channel(16);
        let config = WriterConfig { ttl_sweep_interval: Duration::from_secs(1), max_batch: 100, compaction_chunk: 2 };
        (Writer::new(conn, path, Arc::new(Shared::default()), tx, config).unwrap(), rx)
    }

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    fn kv(o: &Outcome) -> &Result<KeyValue> {
        match o {
            Outcome::Kv(r) => r,
            other => panic!("expected a kv outcome, got {other:?}"),
        }
    }

    fn count(w: &Writer, sql: &str) -> i64 {
        w.conn.query_row(sql, [], |r| r.get(0)).unwrap()
    }

    #[test]
    fn failed_requests_in_a_batch_neither_abort_it_nor_consume_revisions() {
        let dir = tempfile::tempdir().unwrap();
        let (mut w, _rx) = writer(&dir);
        let ops = vec![
            Op::Create { key: "/a".into(), value: b("1"), ttl: None },
            Op::Create { key: "/a".into(), value: b("dup"), ttl: None },
            Op::Update { key: "/a".into(), value: b("x"), expected: 7, ttl: None },
            Op::Update { key: "/missing".into(), value: b("x"), expected: 1, ttl: None },
            Op::Create { key: "/b".into(), value: b("2"), ttl: None },
            Op::Update { key: "/a".into(), value: b("3"), expected: 1, ttl: None },
            Op::Delete { key: "/missing".into(), expected: None },
            Op::Delete { key: "/b".into(), expected: Some(99) },
            Op::Compact { revision: 50 },
            Op::Delete { key: "/b".into(), expected: Some(2) },
        ];
        let applied = w.apply(&ops, false, unix_ms()).unwrap();
        let o = &applied.outcomes;
        assert_eq!(kv(&o[0]).as_ref().unwrap().mod_revision, 1);
        assert_eq!(kv(&o[1]).as_ref().unwrap_err(), &StoreError::AlreadyExists { key: "/a".into() });
        match kv(&o[2]).as_ref().unwrap_err() {
            StoreError::Conflict { expected: 7, current: Some(cur), .. } => {
                assert_eq!((cur.mod_revision, &cur.value[..]), (1, &b"1"[..]))
            }
            e => panic!("expected a conflict carrying the current value, got {e:?}"),
        }
        assert_eq!(kv(&o[3]).as_ref().unwrap_err(), &StoreError::NotFound { key: "/missing".into() });
        assert_eq!(kv(&o[4]).as_ref().unwrap().mod_revision, 2);
        let updated = kv(&o[5]).as_ref().unwrap();
        assert_eq!((updated.create_revision, updated.mod_revision), (1, 3));
        assert!(matches!(&o[6], Outcome::Deleted(Err(StoreError::NotFound { .. }))));
        assert!(matches!(&o[7], Outcome::Deleted(Err(StoreError::Conflict { expected: 99, .. }))));
        assert!(matches!(&o[8], Outcome::Done(Err(StoreError::FutureRevision { requested: 50, current: 3 }))));
        match &o[9] {
            Outcome::Deleted(Ok(d)) => {
                assert_eq!((d.revision, d.prev.mod_revision, &d.prev.value[..]), (4, 2, &b"2"[..]))
            }
            other => panic!("expected a deletion, got {other:?}"),
        }
        assert_eq!(applied.current, 4, "four successful writes, four revisions");
        let revs: Vec<Revision> = applied.events.iter().map(WatchEvent::revision).collect();
        assert_eq!(revs, vec![1, 2, 3, 4]);
        assert_eq!(schema::load_meta(&w.conn).unwrap().current, 4);
        assert_eq!(count(&w, "SELECT COUNT(*) FROM log"), 4);
        assert_eq!(count(&w, "SELECT COUNT(*) FROM latest"), 1);
    }

    #[test]
    fn commit_publishes_events_and_acknowledges_each_caller() {
        let dir = tempfile::tempdir().unwrap();
        let (mut w, mut rx) = writer(&dir);
        let (tx1, mut rx1) = oneshot::channel();
        let (tx2, mut rx2) = oneshot::channel();
        let requests = vec![
            Request { op: Op::Create { key: "/k".into(), value: b("v"), ttl: None }, reply: Reply::Kv(tx1) },
            Request { op: Op::Create { key: "/k".into(), value: b("v"), ttl: None }, reply: Reply::Kv(tx2) },
        ];
        w.commit(requests, false);
        assert_eq!(rx1.try_recv().unwrap().unwrap().mod_revision, 1);
        assert!(matches!(rx2.try_recv().unwrap(), Err(StoreError::AlreadyExists { .. })));
        let batch = rx.try_recv().unwrap();
        assert_eq!((batch.last, batch.events.len()), (1, 1));
        assert_eq!(w.shared.current.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn compaction_keeps_the_newest_value_of_live_keys_and_drops_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let (mut w, _rx) = writer(&dir);
        let ops = vec![
            Op::Create { key: "/live".into(), value: b("1"), ttl: None }, // 1
            Op::Update { key: "/live".into(), value: b("2"), expected: 1, ttl: None }, // 2
            Op::Create { key: "/gone".into(), value: b("x"), ttl: None }, // 3
            Op::Delete { key: "/gone".into(), expected: None },           // 4
            Op::Update { key: "/live".into(), value: b("3"), expected: 2, ttl: None }, // 5
            Op::Create { key: "/late".into(), value: b("y"), ttl: None }, // 6
            Op::Update { key: "/late".into(), value: b("z"), expected: 6, ttl: None }, // 7
        ];
        w.apply(&ops, false, unix_ms()).unwrap();
        w.apply(&[Op::Compact { revision: 6 }], false, unix_ms()).unwrap();
        assert_eq!(w.shared.compacted.load(Ordering::SeqCst), 0, "only commit() publishes");
        let mut steps = 0;
        while w.compact_cursor < w.compacted {
            w.compact_step().unwrap();
            steps += 1;
        }
        assert!(steps >= 3, "chunks of 2 rows need several steps, took {steps}");
        let mut left: Vec<Revision> = w
            .conn
            .prepare("SELECT revision FROM log ORDER BY revision")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        left.sort();
        // 1, 2 superseded by 5 (<= 6); 3 deleted by tombstone 4; 4 is a
        // tombstone <= 6; 6 is superseded only at 7 (> 6), so it stays.
        assert_eq!(left, vec![5, 6, 7]);
        assert_eq!(schema::load_meta(&w.conn).unwrap().compact_cursor, 6);
        // A compaction at or below the previous one is a no-op.
        let applied = w.apply(&[Op::Compact { revision: 3 }], false, unix_ms()).unwrap();
        assert!(matches!(applied.outcomes[0], Outcome::Done(Ok(()))));
        assert_eq!(applied.compacted, None);
    }

    #[test]
    fn the_sweep_deletes_expired_keys_as_ordinary_revisions() {
        let dir = tempfile::tempdir().unwrap();
        let (mut w, _rx) = writer(&dir);
        let now = unix_ms();
        let ops = vec![
            Op::Create { key: "/ttl".into(), value: b("1"), ttl: Some(Duration::from_secs(2)) },
            Op::Create { key: "/kept".into(), value: b("1"), ttl: Some(Duration::from_secs(2)) },
            Op::Update { key: "/kept".into(), value: b("2"), expected: 2, ttl: None },
            Op::Create { key: "/later".into(), value: b("1"), ttl: Some(Duration::from_secs(60)) },
        ];
        w.apply(&ops, false, now).unwrap();
        assert_eq!(
            count(&w, "SELECT COUNT(*) FROM latest WHERE expires_at IS NULL"),
            1,
            "an update without ttl clears it"
        );
        let early = w.apply(&[], true, now + 1000).unwrap();
        assert!(early.events.is_empty(), "nothing expires before its ttl");
        let swept = w.apply(&[], true, now + 2500).unwrap();
        assert_eq!(swept.current, 5);
        match &swept.events[..] {
            [WatchEvent::Delete { key, revision: 5, prev }] => {
                assert_eq!((key.as_str(), prev.mod_revision), ("/ttl", 1))
            }
            other => panic!("expected one deletion of /ttl, got {other:?}"),
        }
        assert_eq!(count(&w, "SELECT COUNT(*) FROM latest"), 2);
    }
}
