//! Backups of the embedded store: taking a snapshot while the server runs,
//! checking a snapshot file, and restoring one while no server runs.
//!
//! Taking: `VACUUM INTO` on its own connection writes a compact copy of
//! the database as of one read transaction (a WAL snapshot, so writes go on
//! meanwhile and the copy holds every write acknowledged before it began).
//! The copy lands next to the database (same file system, so no tmpfs
//! fills up), is opened and unlinked at once, and is streamed from the open
//! file: nothing is left behind even if the client goes away.
//!
//! Restoring: see [`restore_snapshot`].

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::{Connection, OpenFlags};

use super::schema::{self, SCHEMA_VERSION};
use crate::snapshot::{SnapshotError, SnapshotFormat};
use crate::{Revision, StoreError};

/// Distinguishes concurrent snapshots' temporary files in one process.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// `<db>.lock`: the file a server holds an exclusive `flock` on while it has
/// the store open (see `Registration` in the parent module).
pub fn lock_path(db: &Path) -> PathBuf {
    let mut p = db.as_os_str().to_os_string();
    p.push(".lock");
    PathBuf::from(p)
}

/// Takes the store's exclusive lock without waiting: `Ok(Some(file))`
/// holds it until the file is dropped, `Ok(None)` means another open file
/// (a running server) holds it.
pub(crate) fn try_lock(db: &Path) -> std::io::Result<Option<std::fs::File>> {
    let lock = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(lock_path(db))?;
    match lock.try_lock() {
        Ok(()) => Ok(Some(lock)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

fn path_with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut p = path.as_os_str().to_os_string();
    p.push(suffix);
    PathBuf::from(p)
}

/// Copies the database at `db` (open by this process's store) into a new
/// unlinked file and returns it open at its start, with the copy's revision
/// and size.
pub(crate) fn take(db: &Path) -> crate::Result<(std::fs::File, Revision, u64)> {
    let err = |what: &str, e: rusqlite::Error| schema::sql_err(what, db, e);
    let dir = match db.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = db.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "state.db".into());
    let tmp = dir.join(format!(".{name}.snapshot-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
    let tmp_str = tmp.to_str().ok_or_else(|| {
        StoreError::Unavailable(format!("the store's directory {} is not valid UTF-8; cannot snapshot", dir.display()))
    })?;
    let _ = std::fs::remove_file(&tmp);
    let result = (|| {
        // Read-write, because the attached output inherits the connection's
        // mode; it only reads the store (one WAL read transaction).
        let conn = Connection::open(db).map_err(|e| err("opening a snapshot connection", e))?;
        conn.busy_timeout(std::time::Duration::from_secs(10)).map_err(|e| err("setting busy_timeout", e))?;
        conn.execute("VACUUM INTO ?1", [tmp_str]).map_err(|e| err("copying the database (VACUUM INTO)", e))?;
        drop(conn);
        let copy = open_immutable(&tmp).map_err(|e| err("opening the copy", e))?;
        let revision =
            schema::meta_get(&copy, "current_revision").map_err(|e| err("reading the copy's revision", e))?;
        drop(copy);
        let file = std::fs::File::open(&tmp)?;
        let size = file.metadata()?.len();
        Ok((file, revision, size))
    })();
    // Unlinked either way: the open file keeps the bytes until it is closed.
    let _ = std::fs::remove_file(&tmp);
    result
}

/// Opens a database file read-only without locking or touching anything
/// next to it (SQLite's `immutable=1`): for files no one else writes.
fn open_immutable(path: &Path) -> rusqlite::Result<Connection> {
    let mut uri = String::from("file:");
    for b in path.to_string_lossy().bytes() {
        match b {
            b'%' | b'?' | b'#' => uri.push_str(&format!("%{b:02X}")),
            _ => uri.push(b as char),
        }
    }
    uri.push_str("?mode=ro&immutable=1");
    Connection::open_with_flags(uri, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI)
}

/// Checks that `path` is a sound rkube embedded-store database (SQLite's
/// `integrity_check`, a schema version this rkube knows, the `log`,
/// `latest` and `meta` tables) and returns its revision and live key count.
/// Opens the file read-only and immutable: nothing is written next to it.
pub fn check_snapshot_file(path: &Path) -> std::result::Result<(Revision, u64), SnapshotError> {
    let invalid = |why: String| SnapshotError::Invalid { path: path.to_path_buf(), why };
    let conn = open_immutable(path).map_err(|e| invalid(format!("SQLite cannot open it: {e}")))?;
    let problems: Vec<String> = conn
        .prepare("PRAGMA integrity_check")
        .and_then(|mut st| st.query_map([], |r| r.get::<_, String>(0))?.collect())
        .map_err(|e| invalid(format!("SQLite's integrity check failed: {e}")))?;
    if problems != ["ok"] {
        let shown: Vec<&str> = problems.iter().take(3).map(String::as_str).collect();
        return Err(invalid(format!("SQLite's integrity check found damage: {}", shown.join("; "))));
    }
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| invalid(format!("cannot read its schema version: {e}")))?;
    if version > SCHEMA_VERSION {
        return Err(invalid(format!(
            "its schema version {version} was written by a newer rkube (this one knows up to {SCHEMA_VERSION}); restore it with that rkube"
        )));
    }
    let tables: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ('log', 'latest', 'meta')",
            [],
            |r| r.get(0),
        )
        .map_err(|e| invalid(format!("cannot read its schema: {e}")))?;
    if version < 1 || tables != 3 {
        return Err(invalid(
            "it is an SQLite database but not rkube's embedded store (no log, latest and meta tables)".into(),
        ));
    }
    let revision =
        schema::meta_get(&conn, "current_revision").map_err(|e| invalid(format!("cannot read its revision: {e}")))?;
    let keys: i64 = conn
        .query_row("SELECT COUNT(*) FROM latest", [], |r| r.get(0))
        .map_err(|e| invalid(format!("cannot count its keys: {e}")))?;
    Ok((revision, keys as u64))
}

/// Options of [`restore_snapshot`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RestoreOptions {
    /// Raise the restored store's revision by this much and mark it
    /// compacted there (etcdutl's `--bump-revision` with `--mark-compacted`).
    /// `None`: just past the revision of the store being replaced, when
    /// there is one (else no bump).
    pub bump_revision: Option<Revision>,
}

/// What [`restore_snapshot`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestoreReport {
    /// The revision the snapshot held.
    pub snapshot_revision: Revision,
    /// The restored store's revision (= its compacted revision when bumped).
    pub revision: Revision,
    /// Live keys restored.
    pub keys: u64,
    /// The replaced store's revision, when there was one and it could be
    /// read (a damaged store may not say; then nothing was bumped unless
    /// [`RestoreOptions::bump_revision`] asked).
    pub replaced_revision: Option<Revision>,
    /// Where the replaced store was moved (its `-wal` file, if any, next
    /// to it with that suffix), or `None` if there was none.
    pub previous: Option<PathBuf>,
}

/// Restores the embedded store at `db` (normally
/// `<data-dir>/server/db/state.db`) from the snapshot file `snapshot`,
/// while no server runs:
///
/// 1. refuses an etcd snapshot ([`SnapshotError::EtcdSnapshot`]) and
///    anything that is not a sound rkube store ([`check_snapshot_file`]);
/// 2. takes the store's lock (the one a server holds while it runs), so it
///    refuses while a server uses `db` ([`SnapshotError::InUse`]);
/// 3. copies the snapshot to `<db>.restore-tmp`, syncs it, checks the copy;
/// 4. raises its revision and marks it compacted there (see below);
/// 5. moves the current store aside to `<db>.before-restore-<unix
///    seconds>` (after folding its WAL into it where possible) and renames
///    the copy into place, syncing the directory.
///
/// resourceVersions: a snapshot's revision is older than what clients have
/// seen. As etcdutl's `--bump-revision --mark-compacted` does, the restored
/// store continues past the replaced store's revision (or by
/// [`RestoreOptions::bump_revision`]) and is compacted there, so a client
/// that resumes a watch or a paginated list from a resourceVersion issued
/// before the restore gets 410 Gone and relists, instead of missing
/// changes or seeing resourceVersions go backwards.
pub fn restore_snapshot(
    snapshot: &Path,
    db: &Path,
    options: &RestoreOptions,
) -> std::result::Result<RestoreReport, SnapshotError> {
    let io = |what: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| SnapshotError::Io { what, path, source }
    };
    let head = {
        use std::io::Read;
        let mut head = Vec::with_capacity(24);
        std::fs::File::open(snapshot)
            .map_err(io("cannot open", snapshot))?
            .take(24)
            .read_to_end(&mut head)
            .map_err(io("cannot read", snapshot))?;
        head
    };
    match SnapshotFormat::sniff(&head) {
        Some(SnapshotFormat::Sqlite) => {}
        Some(SnapshotFormat::Etcd) => return Err(SnapshotError::EtcdSnapshot { path: snapshot.to_path_buf() }),
        None => {
            return Err(SnapshotError::Invalid {
                path: snapshot.to_path_buf(),
                why: "it is not an SQLite database (the embedded store's snapshots are; save one with `rkube store snapshot save`)".into(),
            })
        }
    }
    let (snapshot_revision, keys) = check_snapshot_file(snapshot)?;

    let dir = match db.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir).map_err(io("cannot create", &dir))?;
    }
    let _lock = try_lock(db)
        .map_err(io("cannot lock", &lock_path(db)))?
        .ok_or_else(|| SnapshotError::InUse { db: db.to_path_buf(), lock: lock_path(db) })?;

    let sql = |what: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |e: rusqlite::Error| SnapshotError::Sqlite { what, path, message: e.to_string() }
    };
    // The replaced store's revision: the highest resourceVersion any client
    // can hold.
    let previous_revision = if db.exists() {
        let read = |c: Connection| schema::meta_get(&c, "current_revision");
        Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .and_then(read)
            .or_else(|_| Connection::open(db).and_then(read))
            .ok()
    } else {
        None
    };

    let tmp = path_with_suffix(db, ".restore-tmp");
    for stale in [tmp.clone(), path_with_suffix(&tmp, "-wal"), path_with_suffix(&tmp, "-shm")] {
        let _ = std::fs::remove_file(stale);
    }
    let result = (|| {
        std::fs::copy(snapshot, &tmp).map_err(io("cannot copy the snapshot to", &tmp))?;
        std::fs::File::open(&tmp).and_then(|f| f.sync_all()).map_err(io("cannot sync", &tmp))?;
        check_snapshot_file(&tmp)?;
        let bump = match options.bump_revision {
            Some(b) => b.max(0),
            None => previous_revision.map(|p| (p + 1 - snapshot_revision).max(0)).unwrap_or(0),
        };
        let revision = snapshot_revision + bump;
        if bump > 0 {
            let conn = Connection::open(&tmp).map_err(sql("opening", &tmp))?;
            conn.execute_batch("PRAGMA synchronous = FULL").map_err(sql("configuring", &tmp))?;
            let tx = conn.unchecked_transaction().map_err(sql("starting a transaction on", &tmp))?;
            schema::meta_set(&tx, "current_revision", revision).map_err(sql("raising the revision of", &tmp))?;
            schema::meta_set(&tx, "compacted_revision", revision).map_err(sql("marking compacted", &tmp))?;
            tx.commit().map_err(sql("committing", &tmp))?;
            conn.close().map_err(|(_, e)| sql("closing", &tmp)(e))?;
        }
        Ok(revision)
    })();
    let revision = match result {
        Ok(r) => r,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };

    let previous = if db.exists() {
        // Fold the WAL into the file so the backup is one self-contained
        // file; a damaged store may refuse, then its WAL moves along.
        if let Ok(conn) = Connection::open(db) {
            let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
            let _ = conn.close();
        }
        let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        let backup = path_with_suffix(db, &format!(".before-restore-{secs}"));
        std::fs::rename(db, &backup).map_err(io("cannot move the current store aside to", &backup))?;
        let wal = path_with_suffix(db, "-wal");
        if wal.exists() {
            std::fs::rename(&wal, path_with_suffix(&backup, "-wal")).map_err(io("cannot move", &wal))?;
        }
        let _ = std::fs::remove_file(path_with_suffix(db, "-shm"));
        Some(backup)
    } else {
        None
    };
    std::fs::rename(&tmp, db).map_err(io("cannot move the restored store into place at", db))?;
    std::fs::File::open(&dir).and_then(|d| d.sync_all()).map_err(io("cannot sync", &dir))?;
    tracing::info!(component = "store", path = %db.display(), snapshot = %snapshot.display(), snapshot_revision,
        revision, keys, "restored the embedded store from a snapshot");
    Ok(RestoreReport { snapshot_revision, revision, keys, replaced_revision: previous_revision, previous })
}

/// Writes `bytes` to `path` through a temporary file and a rename, so
/// `path` is either absent/old or complete. Used by tests; the CLI streams.
#[cfg(test)]
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = path_with_suffix(path, ".tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(tmp, path)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bytes::Bytes;
    use futures::StreamExt;

    use super::*;
    use crate::sqlite::SqliteStore;
    use crate::{Store, StoreError};

    async fn save(store: &SqliteStore, path: &Path) -> crate::Snapshot {
        let mut snap = store.snapshot().await.unwrap();
        let mut bytes = Vec::new();
        while let Some(chunk) = snap.data.next().await {
            bytes.extend_from_slice(&chunk.unwrap());
        }
        assert_eq!(snap.size, Some(bytes.len() as u64));
        write_atomically(path, &bytes).unwrap();
        snap.data = Box::pin(futures::stream::empty());
        snap
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_snapshot_opens_as_a_store_with_every_key_at_its_revision() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("state.db")).await.unwrap();
        store.create("/registry/namespaces/a", Bytes::from_static(b"a"), None).await.unwrap();
        let kv = store.create("/registry/configmaps/a/x", Bytes::from_static(b"1"), None).await.unwrap();
        store.update("/registry/configmaps/a/x", Bytes::from_static(b"2"), kv.mod_revision, None).await.unwrap();
        store.create("/registry/configmaps/a/gone", Bytes::new(), None).await.unwrap();
        store.delete("/registry/configmaps/a/gone", None).await.unwrap();
        let file = dir.path().join("backup.db");
        let snap = save(&store, &file).await;
        assert_eq!((snap.format, snap.revision), (SnapshotFormat::Sqlite, 5));
        assert_eq!(check_snapshot_file(&file).unwrap(), (5, 2));
        assert_eq!(crate::snapshot::inspect(&file).unwrap().revision, Some(5));
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("snapshot"))
            .collect();
        assert!(leftovers.is_empty(), "the temporary copy is unlinked: {leftovers:?}");

        let other = tempfile::tempdir().unwrap();
        let db = other.path().join("state.db");
        std::fs::copy(&file, &db).unwrap();
        let copy = SqliteStore::open(&db).await.unwrap();
        assert_eq!(copy.current_revision().await.unwrap(), 5);
        let x = copy.get("/registry/configmaps/a/x", None).await.unwrap().kv.unwrap();
        assert_eq!((&x.value[..], x.create_revision, x.mod_revision), (&b"2"[..], 2, 3));
        assert!(copy.get("/registry/configmaps/a/gone", None).await.unwrap().kv.is_none());
        assert_eq!(&copy.get("/registry/configmaps/a/x", Some(2)).await.unwrap().kv.unwrap().value[..], b"1");
        let next = copy.create("/registry/configmaps/a/y", Bytes::new(), None).await.unwrap();
        assert_eq!(next.mod_revision, 6, "the copy continues the revision sequence");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_snapshot_taken_during_writes_is_exactly_the_store_at_its_revision() {
        let dir = tempfile::tempdir().unwrap();
        let store = std::sync::Arc::new(SqliteStore::open(&dir.path().join("state.db")).await.unwrap());
        let writer = {
            let store = store.clone();
            tokio::spawn(async move {
                for i in 0..400 {
                    let key = format!("/k/{}", i % 37);
                    match store.get(&key, None).await.unwrap().kv {
                        Some(kv) if i % 5 == 0 => drop(store.delete(&key, Some(kv.mod_revision)).await.unwrap()),
                        Some(kv) => {
                            store.update(&key, Bytes::from(i.to_string()), kv.mod_revision, None).await.unwrap();
                        }
                        None => drop(store.create(&key, Bytes::from(i.to_string()), None).await.unwrap()),
                    }
                }
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        let file = dir.path().join("backup.db");
        let snap = save(&store, &file).await;
        writer.await.unwrap();
        let rev = snap.revision;
        assert!(rev > 0 && rev < store.current_revision().await.unwrap(), "snapshot at {rev} taken mid-writes");

        let other = tempfile::tempdir().unwrap();
        let db = other.path().join("state.db");
        std::fs::copy(&file, &db).unwrap();
        let copy = SqliteStore::open(&db).await.unwrap();
        let all = |r: Option<Revision>| crate::RangeRequest { prefix: "/k/".into(), revision: r, ..Default::default() };
        let original = store.range(all(Some(rev))).await.unwrap().kvs;
        let restored = copy.range(all(None)).await.unwrap();
        assert_eq!(restored.revision, rev);
        assert_eq!(restored.kvs, original, "the copy holds exactly the original's state at revision {rev}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn restore_moves_the_old_store_aside_and_bumps_past_its_revision() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db").join("state.db");
        let file = dir.path().join("backup.db");
        {
            let store = SqliteStore::open(&db).await.unwrap();
            store.create("/registry/configmaps/a/kept", Bytes::from_static(b"v1"), None).await.unwrap();
            save(&store, &file).await;
            store.delete("/registry/configmaps/a/kept", None).await.unwrap();
            for i in 0..5 {
                store.create(&format!("/registry/configmaps/a/new{i}"), Bytes::new(), None).await.unwrap();
            }
            // While the store is open, restore is refused.
            let err = restore_snapshot(&file, &db, &RestoreOptions::default()).unwrap_err();
            assert!(matches!(err, SnapshotError::InUse { .. }), "{err}");
        }
        let report = restore_snapshot(&file, &db, &RestoreOptions::default()).unwrap();
        assert_eq!((report.snapshot_revision, report.revision, report.keys), (1, 8, 1));
        let backup = report.previous.clone().unwrap();
        assert_eq!(check_snapshot_file(&backup).unwrap(), (7, 5), "the replaced store is kept whole");

        let store = SqliteStore::open(&db).await.unwrap();
        assert_eq!(store.current_revision().await.unwrap(), 8);
        assert_eq!(&store.get("/registry/configmaps/a/kept", None).await.unwrap().kv.unwrap().value[..], b"v1");
        assert!(store.get("/registry/configmaps/a/new0", None).await.unwrap().kv.is_none());
        assert!(
            matches!(store.watch("/", 7, Default::default()).await, Err(StoreError::Compacted { compacted: 8, .. })),
            "a watch from a resourceVersion issued before the restore must relist"
        );
        let kv = store.create("/registry/configmaps/a/after", Bytes::new(), None).await.unwrap();
        assert_eq!(kv.mod_revision, 9);
    }

    #[test]
    fn restore_refuses_damaged_and_foreign_files_and_leaves_the_store_alone() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("state.db");
        schema::open_writer(&db).unwrap();
        let before = std::fs::read(&db).unwrap();

        let foreign = dir.path().join("other.db");
        Connection::open(&foreign).unwrap().execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);").unwrap();
        let err = restore_snapshot(&foreign, &db, &RestoreOptions::default()).unwrap_err().to_string();
        assert!(err.contains("not rkube's embedded store"), "{err}");

        let text = dir.path().join("notes.txt");
        std::fs::write(&text, "not a database").unwrap();
        let err = restore_snapshot(&text, &db, &RestoreOptions::default()).unwrap_err().to_string();
        assert!(err.contains("not an SQLite database"), "{err}");

        let damaged = dir.path().join("damaged.db");
        {
            let conn = schema::open_writer(&damaged).unwrap();
            for i in 0..2000 {
                schema::meta_set(&conn, &format!("filler-{i}"), i).unwrap();
            }
            conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE;").unwrap();
        }
        let mut bytes = std::fs::read(&damaged).unwrap();
        let len = bytes.len();
        for b in &mut bytes[len / 2..len / 2 + 3000] {
            *b = 0x5a;
        }
        std::fs::write(&damaged, &bytes).unwrap();
        let err = restore_snapshot(&damaged, &db, &RestoreOptions::default()).unwrap_err().to_string();
        assert!(err.contains("not a usable rkube snapshot"), "{err}");

        assert_eq!(std::fs::read(&db).unwrap(), before, "a refused restore leaves the store untouched");
        assert!(!path_with_suffix(&db, ".restore-tmp").exists());
    }
}
