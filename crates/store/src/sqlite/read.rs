//! Reads: a small pool of read-only connections and the queries behind
//! `get`, `range` and watch replay.
//!
//! Every read runs in one SQLite read transaction (a WAL snapshot), so the
//! revision it reports, the compaction check and the rows it returns are
//! mutually consistent. A snapshot taken after a write was acknowledged
//! always contains it (the writer acknowledges only after commit), which
//! gives read-your-writes.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use rusqlite::{Connection, OptionalExtension, Transaction};
use tokio::sync::Semaphore;

use super::schema::{self, sql_err, KEY_SPACE_END};
use crate::{KeyValue, RangeRequest, RangeResponse, Result, Revision, StoreError, WatchEvent};

/// A fixed-size pool of read-only connections, used from blocking threads.
pub(crate) struct ReadPool {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    permits: Arc<Semaphore>,
}

impl ReadPool {
    /// A pool of at most `size` connections to `path`, opened lazily.
    pub(crate) fn new(path: PathBuf, size: usize) -> Self {
        ReadPool { path, idle: Mutex::new(Vec::new()), permits: Arc::new(Semaphore::new(size.max(1))) }
    }

    /// Runs `f` in a read transaction on a pooled connection, on tokio's
    /// blocking pool. Errors from SQLite become [`StoreError::Unavailable`].
    pub(crate) async fn run<T, F>(self: &Arc<Self>, what: &'static str, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Transaction<'_>) -> std::result::Result<Result<T>, rusqlite::Error> + Send + 'static,
    {
        let permit = self.permits.clone().acquire_owned().await.map_err(|_| closed())?;
        let pool = self.clone();
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let mut conn = match pool.idle.lock().unwrap_or_else(|p| p.into_inner()).pop() {
                Some(conn) => conn,
                None => schema::open_reader(&pool.path)?,
            };
            let result = (|| {
                let tx = conn.transaction()?;
                let out = f(&tx)?;
                tx.finish()?;
                Ok(out)
            })();
            match result {
                Ok(out) => {
                    pool.idle.lock().unwrap_or_else(|p| p.into_inner()).push(conn);
                    out
                }
                // Drop the connection: it may be in a bad state.
                Err(e) => Err(sql_err(what, &pool.path, e)),
            }
        })
        .await
        .map_err(|e| StoreError::Unavailable(format!("sqlite read task failed: {e}")))?
    }
}

fn closed() -> StoreError {
    StoreError::Unavailable("sqlite store is closed; reopen it".into())
}

/// `current_revision` and `compacted_revision` as seen by this snapshot.
pub(crate) fn snapshot_revisions(tx: &Connection) -> rusqlite::Result<(Revision, Revision)> {
    Ok((schema::meta_get(tx, "current_revision")?, schema::meta_get(tx, "compacted_revision")?))
}

/// Checks a requested read revision the way etcd does (`mvcc/kvstore_txn.go`
/// `rangeKeys`): `None` or `<= 0` reads the current revision; below the
/// compacted revision is [`StoreError::Compacted`] (reading exactly at the
/// compacted revision is allowed: compaction keeps that revision's state);
/// above the current revision is [`StoreError::FutureRevision`].
/// Returns the revision to read at and whether it is the current one.
pub(crate) fn resolve_revision(
    requested: Option<Revision>,
    current: Revision,
    compacted: Revision,
) -> Result<(Revision, bool)> {
    match requested {
        None => Ok((current, true)),
        Some(r) if r <= 0 => Ok((current, true)),
        Some(r) if r < compacted => Err(StoreError::Compacted { requested: r, compacted }),
        Some(r) if r > current => Err(StoreError::FutureRevision { requested: r, current }),
        Some(r) => Ok((r, r == current)),
    }
}

fn kv_from_row(key: Vec<u8>, value: Vec<u8>, create_revision: Revision, mod_revision: Revision) -> KeyValue {
    KeyValue {
        key: String::from_utf8(key).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
        value: Bytes::from(value),
        create_revision,
        mod_revision,
    }
}

/// The value of `key` at revision `rev` (`at_current`: `rev` is the newest
/// revision, so the `latest` table answers).
pub(crate) fn get(conn: &Connection, key: &str, rev: Revision, at_current: bool) -> rusqlite::Result<Option<KeyValue>> {
    if at_current {
        return conn
            .prepare_cached(
                "SELECT g.key, g.value, g.create_revision, g.revision
                 FROM latest l JOIN log g ON g.revision = l.revision WHERE l.key = ?1",
            )?
            .query_row([key.as_bytes()], |r| Ok(kv_from_row(r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .optional();
    }
    let row = conn
        .prepare_cached(
            "SELECT key, value, create_revision, revision, deleted FROM log
             WHERE key = ?1 AND revision <= ?2 ORDER BY revision DESC LIMIT 1",
        )?
        .query_row(rusqlite::params![key.as_bytes(), rev], |r| {
            Ok((kv_from_row(r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?), r.get::<_, bool>(4)?))
        })
        .optional()?;
    Ok(row.and_then(|(kv, deleted)| (!deleted).then_some(kv)))
}

/// The byte range `[lo, hi)` a range request covers: from the larger of the
/// prefix and `start`, to the end of the prefix.
pub(crate) fn key_bounds(prefix: &str, start: Option<&str>) -> (Vec<u8>, Vec<u8>) {
    let mut lo = prefix.as_bytes().to_vec();
    if let Some(start) = start {
        if start.as_bytes() > lo.as_slice() {
            lo = start.as_bytes().to_vec();
        }
    }
    let hi = crate::prefix_end(prefix).unwrap_or_else(|| KEY_SPACE_END.to_vec());
    (lo, hi)
}

/// Serves a range request inside one snapshot.
pub(crate) fn range(tx: &Connection, req: &RangeRequest) -> rusqlite::Result<Result<RangeResponse>> {
    let (current, compacted) = snapshot_revisions(tx)?;
    let (rev, at_current) = match resolve_revision(req.revision, current, compacted) {
        Ok(r) => r,
        Err(e) => return Ok(Err(e)),
    };
    let (lo, hi) = key_bounds(&req.prefix, req.start.as_deref());
    let limit: i64 = match req.limit {
        None | Some(0) => -1,
        Some(n) => i64::try_from(n).unwrap_or(i64::MAX),
    };
    let (kvs, count) = if at_current {
        let kvs = tx
            .prepare_cached(
                "SELECT g.key, g.value, g.create_revision, g.revision
                 FROM latest l JOIN log g ON g.revision = l.revision
                 WHERE l.key >= ?1 AND l.key < ?2 ORDER BY l.key LIMIT ?3",
            )?
            .query_map(rusqlite::params![lo, hi, limit], |r| {
                Ok(kv_from_row(r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let count: i64 = if limit < 0 || (kvs.len() as i64) < limit {
            kvs.len() as i64
        } else {
            tx.prepare_cached("SELECT COUNT(*) FROM latest WHERE key >= ?1 AND key < ?2")?
                .query_row(rusqlite::params![lo, hi], |r| r.get(0))?
        };
        (kvs, count)
    } else {
        // The newest row of each key at or below `rev`, minus tombstones.
        let kvs = tx
            .prepare_cached(
                "SELECT g.key, g.value, g.create_revision, g.revision FROM log g
                 WHERE g.revision IN (SELECT MAX(revision) FROM log
                                      WHERE key >= ?1 AND key < ?2 AND revision <= ?3 GROUP BY key)
                   AND g.deleted = 0
                 ORDER BY g.key LIMIT ?4",
            )?
            .query_map(rusqlite::params![lo, hi, rev, limit], |r| {
                Ok(kv_from_row(r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let count: i64 = if limit < 0 || (kvs.len() as i64) < limit {
            kvs.len() as i64
        } else {
            tx.prepare_cached(
                "SELECT COUNT(*) FROM log g
                 WHERE g.revision IN (SELECT MAX(revision) FROM log
                                      WHERE key >= ?1 AND key < ?2 AND revision <= ?3 GROUP BY key)
                   AND g.deleted = 0",
            )?
            .query_row(rusqlite::params![lo, hi, rev], |r| r.get(0))?
        };
        (kvs, count)
    };
    let count = count.max(0) as u64;
    Ok(Ok(RangeResponse { more: (kvs.len() as u64) < count, kvs, count, revision: rev }))
}

/// One chunk of watch history: events with a revision in `[from, to]` whose
/// key lies in `[lo, hi)`, oldest first, at most `limit` of them.
pub(crate) struct HistoryChunk {
    pub events: Vec<WatchEvent>,
    /// Every matching event up to this revision is in `events` (`to` unless
    /// the chunk was cut at `limit`).
    pub scanned_through: Revision,
}

/// Reads watch history from the log (see [`HistoryChunk`]).
///
/// History from `from` is refused ([`StoreError::Compacted`]) when `from` is
/// at or below the compacted revision (the contract's watch rule, see
/// `SqliteStore::watch`). Every row above the compacted revision, and the
/// row each of them replaced, survives compaction, so the replay is complete
/// and every event carries its `prev`.
pub(crate) fn history(
    tx: &Connection,
    from: Revision,
    to: Revision,
    lo: &[u8],
    hi: &[u8],
    limit: usize,
) -> rusqlite::Result<Result<HistoryChunk>> {
    let compacted = schema::meta_get(tx, "compacted_revision")?;
    if from <= compacted {
        return Ok(Err(StoreError::Compacted { requested: from, compacted }));
    }
    let mut stmt = tx.prepare_cached(
        "SELECT l.revision, l.key, l.value, l.create_revision, l.deleted,
                p.revision, p.value, p.create_revision, p.deleted
         FROM log l LEFT JOIN log p ON p.revision = l.prev_revision AND l.prev_revision > 0
         WHERE l.revision >= ?1 AND l.revision <= ?2 AND l.key >= ?3 AND l.key < ?4
         ORDER BY l.revision LIMIT ?5",
    )?;
    let mut rows = stmt.query(rusqlite::params![from, to, lo, hi, limit as i64])?;
    let mut events = Vec::new();
    let mut n = 0usize;
    let mut last = from - 1;
    while let Some(r) = rows.next()? {
        n += 1;
        let revision: Revision = r.get(0)?;
        last = revision;
        let key: Vec<u8> = r.get(1)?;
        let deleted: bool = r.get(4)?;
        let prev_rev: Option<Revision> = r.get(5)?;
        let prev = match prev_rev {
            Some(p_rev) if !r.get::<_, bool>(8)? => Some(kv_from_row(key.clone(), r.get(6)?, r.get(7)?, p_rev)),
            _ => None,
        };
        if deleted {
            let Some(prev) = prev else {
                return Ok(Err(StoreError::Unavailable(format!(
                    "sqlite store: tombstone at revision {revision} has lost its previous value; the database is damaged, restore a backup"
                ))));
            };
            events.push(WatchEvent::Delete { key: prev.key.clone(), revision, prev });
        } else {
            let kv = kv_from_row(key, r.get(2)?, r.get(3)?, revision);
            events.push(WatchEvent::Put { kv, prev });
        }
    }
    let scanned_through = if n < limit { to } else { last };
    Ok(Ok(HistoryChunk { events, scanned_through }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revision_resolution_follows_etcd() {
        assert_eq!(resolve_revision(None, 10, 4).unwrap(), (10, true));
        assert_eq!(resolve_revision(Some(0), 10, 4).unwrap(), (10, true));
        assert_eq!(resolve_revision(Some(4), 10, 4).unwrap(), (4, false), "the compacted revision itself is readable");
        assert_eq!(resolve_revision(Some(10), 10, 4).unwrap(), (10, true));
        assert_eq!(resolve_revision(Some(3), 10, 4).unwrap_err(), StoreError::Compacted { requested: 3, compacted: 4 });
        assert_eq!(
            resolve_revision(Some(11), 10, 4).unwrap_err(),
            StoreError::FutureRevision { requested: 11, current: 10 }
        );
    }

    #[test]
    fn key_bounds_clamp_start_into_the_prefix() {
        assert_eq!(key_bounds("/a/", None), (b"/a/".to_vec(), b"/a0".to_vec()));
        assert_eq!(key_bounds("/a/", Some("/a/x")), (b"/a/x".to_vec(), b"/a0".to_vec()));
        assert_eq!(key_bounds("/a/", Some("/")), (b"/a/".to_vec(), b"/a0".to_vec()));
        assert_eq!(key_bounds("", None), (Vec::new(), vec![0xff]));
    }
}
