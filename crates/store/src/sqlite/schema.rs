//! On-disk layout of the embedded store: connection settings, the versioned
//! schema and its migrations, and the `meta` counters.
//!
//! Layout (schema version 1):
//! - `log`: the MVCC log, one row per write, in the spirit of etcd's bbolt
//!   `key` bucket and kine's table. `revision` (the rowid) is the global
//!   revision of the write. `prev_revision` is the row this write replaced
//!   (0 for a creation), `deleted = 1` marks a tombstone (empty value, its
//!   `prev_revision` names the last value). `expires_at` is the TTL deadline
//!   in Unix milliseconds, or NULL.
//! - `latest`: one row per live key pointing at its newest `log` row, so
//!   reads at the current revision are an index lookup, not a scan.
//! - `meta`: `current_revision` (revision of the newest write, kept here
//!   because compaction may delete the newest tombstone), `compacted_revision`
//!   and `compact_cursor` (how far compaction has physically deleted rows).
//!
//! Keys are stored as BLOBs so that SQLite compares them byte-wise, exactly
//! like etcd (a TEXT column would compare unequal to the BLOB range ends that
//! [`crate::prefix_end`] can produce).

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::{Result, Revision, StoreError};

/// The schema version this build writes (`PRAGMA user_version`).
pub(crate) const SCHEMA_VERSION: i64 = 1;

/// Upper bound for "every key": valid UTF-8 never contains the byte 0xFF, so
/// this sorts after every key a `&str` can name.
pub(crate) const KEY_SPACE_END: &[u8] = &[0xff];

/// How long a connection waits for a lock held by another connection.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Migration `i` brings the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    // 0 -> 1: the initial layout.
    "CREATE TABLE log (
        revision        INTEGER PRIMARY KEY,
        key             BLOB    NOT NULL,
        value           BLOB    NOT NULL,
        create_revision INTEGER NOT NULL,
        prev_revision   INTEGER NOT NULL,
        deleted         INTEGER NOT NULL,
        expires_at      INTEGER
    );
    CREATE INDEX log_key_revision ON log (key, revision);
    CREATE TABLE latest (
        key        BLOB PRIMARY KEY,
        revision   INTEGER NOT NULL,
        expires_at INTEGER
    ) WITHOUT ROWID;
    CREATE INDEX latest_expiry ON latest (expires_at) WHERE expires_at IS NOT NULL;
    CREATE TABLE meta (
        name  TEXT PRIMARY KEY,
        value INTEGER NOT NULL
    ) WITHOUT ROWID;
    INSERT INTO meta (name, value) VALUES
        ('current_revision', 0), ('compacted_revision', 0), ('compact_cursor', 0);",
];

/// Turns a SQLite error into the contract's error, naming what was being
/// done and the file, so an operator knows where to look.
pub(crate) fn sql_err(what: &str, path: &Path, e: rusqlite::Error) -> StoreError {
    StoreError::Unavailable(format!(
        "sqlite store {}: {what} failed: {e} (check that the disk is writable and not full)",
        path.display()
    ))
}

/// Opens the single read-write connection (the writer thread's), creating
/// the file if needed, and brings the schema up to [`SCHEMA_VERSION`].
pub(crate) fn open_writer(path: &Path) -> Result<Connection> {
    let conn = Connection::open(path).map_err(|e| sql_err("opening the database", path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| sql_err("setting busy_timeout", path, e))?;
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .map_err(|e| sql_err("enabling WAL mode", path, e))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::Unavailable(format!(
            "sqlite store {}: the file system refused WAL mode (journal_mode is {mode}); put the database on a local file system",
            path.display()
        )));
    }
    // FULL: every commit fsyncs the WAL, so an acknowledged write survives
    // kill -9 and power loss. Group commit amortizes the fsync.
    conn.execute_batch(
        "PRAGMA synchronous = FULL;
         PRAGMA foreign_keys = OFF;
         PRAGMA cache_size = -32768;
         PRAGMA journal_size_limit = 67108864;",
    )
    .map_err(|e| sql_err("configuring the connection", path, e))?;
    conn.set_prepared_statement_cache_capacity(64);
    let mut conn = conn;
    migrate(&mut conn).map_err(|e| match e {
        MigrateError::Sql(e) => sql_err("migrating the schema", path, e),
        MigrateError::TooNew(v) => StoreError::Unavailable(format!(
            "sqlite store {}: schema version {v} was written by a newer rkube (this one knows up to {SCHEMA_VERSION}); upgrade rkube or restore a backup",
            path.display()
        )),
    })?;
    Ok(conn)
}

/// Opens a read-only connection for the read pool. The writer must have
/// opened (and migrated) the file first.
pub(crate) fn open_reader(path: &Path) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| sql_err("opening a reader", path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| sql_err("setting busy_timeout", path, e))?;
    conn.execute_batch("PRAGMA query_only = ON; PRAGMA cache_size = -16384;")
        .map_err(|e| sql_err("configuring a reader", path, e))?;
    conn.set_prepared_statement_cache_capacity(32);
    Ok(conn)
}

#[derive(Debug)]
pub(crate) enum MigrateError {
    Sql(rusqlite::Error),
    TooNew(i64),
}

impl From<rusqlite::Error> for MigrateError {
    fn from(e: rusqlite::Error) -> Self {
        MigrateError::Sql(e)
    }
}

/// Applies every migration between the file's `user_version` and
/// [`SCHEMA_VERSION`], each in its own transaction together with the new
/// `user_version`, so a crash mid-migration leaves the old version intact.
pub(crate) fn migrate(conn: &mut Connection) -> std::result::Result<(), MigrateError> {
    loop {
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > SCHEMA_VERSION {
            return Err(MigrateError::TooNew(version));
        }
        if version == SCHEMA_VERSION {
            return Ok(());
        }
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        tx.execute_batch(MIGRATIONS[version as usize])?;
        tx.execute_batch(&format!("PRAGMA user_version = {}", version + 1))?;
        tx.commit()?;
    }
}

/// The `meta` counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Meta {
    pub current: Revision,
    pub compacted: Revision,
    pub compact_cursor: Revision,
}

/// Reads one `meta` counter (0 if absent).
pub(crate) fn meta_get(conn: &Connection, name: &str) -> rusqlite::Result<Revision> {
    Ok(conn
        .prepare_cached("SELECT value FROM meta WHERE name = ?1")?
        .query_row([name], |r| r.get(0))
        .optional()?
        .unwrap_or(0))
}

/// Writes one `meta` counter.
pub(crate) fn meta_set(conn: &Connection, name: &str, value: Revision) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO meta (name, value) VALUES (?1, ?2) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
    )?
    .execute(rusqlite::params![name, value])?;
    Ok(())
}

/// Reads all `meta` counters.
pub(crate) fn load_meta(conn: &Connection) -> rusqlite::Result<Meta> {
    Ok(Meta {
        current: meta_get(conn, "current_revision")?,
        compacted: meta_get(conn, "compacted_revision")?,
        compact_cursor: meta_get(conn, "compact_cursor")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_file_gets_the_current_schema_and_zeroed_counters() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let conn = open_writer(&path).unwrap();
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        assert_eq!(load_meta(&conn).unwrap(), Meta::default());
        let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
        assert_eq!(mode, "wal");
        let sync: i64 = conn.query_row("PRAGMA synchronous", [], |r| r.get(0)).unwrap();
        assert_eq!(sync, 2, "synchronous must be FULL (2)");
    }

    #[test]
    fn reopening_keeps_the_schema_and_counters() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        {
            let conn = open_writer(&path).unwrap();
            meta_set(&conn, "current_revision", 42).unwrap();
        }
        let conn = open_writer(&path).unwrap();
        assert_eq!(load_meta(&conn).unwrap().current, 42);
        let tables: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ('log', 'latest', 'meta')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(tables, 3);
    }

    #[test]
    fn a_file_from_a_newer_schema_is_refused_with_advice() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        {
            let conn = open_writer(&path).unwrap();
            conn.execute_batch(&format!("PRAGMA user_version = {}", SCHEMA_VERSION + 1)).unwrap();
        }
        let err = open_writer(&path).unwrap_err();
        assert!(matches!(&err, StoreError::Unavailable(m) if m.contains("newer rkube")), "{err}");
    }

    #[test]
    fn readers_cannot_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let _writer = open_writer(&path).unwrap();
        let reader = open_reader(&path).unwrap();
        assert_eq!(meta_get(&reader, "compacted_revision").unwrap(), 0);
        assert!(reader.execute("DELETE FROM meta", []).is_err());
    }
}
