//! Backups: a point-in-time copy of the whole store as one file in the
//! backend's own format.
//!
//! - The embedded store's snapshot is an SQLite database with the same
//!   schema ([`crate::sqlite`]): restoring it means putting it in place of
//!   `state.db` while no server runs ([`crate::sqlite::restore_snapshot`]).
//! - etcd's snapshot is what `etcdctl snapshot save` writes: the bbolt
//!   database followed by the SHA-256 of its bytes. `etcdutl snapshot
//!   restore` (etcd ≥ 3.5; `etcdctl snapshot restore` in 3.4) turns it back
//!   into a member's data dir; rkube does not restore etcd itself.
//!
//! [`Snapshot`] is what [`crate::Store::snapshot`] returns: a byte stream,
//! so that the API server never holds the whole database in memory.
//! [`inspect`] checks a saved file and says what it holds.

use std::io::Read;
use std::path::Path;
use std::pin::Pin;

use bytes::Bytes;
use futures::Stream;

use crate::{Result, Revision};

/// The first 16 bytes of every SQLite 3 database file.
pub const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// bbolt's meta-page magic (`0xED0CDAED`, little-endian at byte 16 of the
/// first page: after the 16-byte page header).
const BBOLT_MAGIC: u32 = 0xED0C_DAED;

/// Length of the SHA-256 trailer etcd appends to a snapshot.
const SHA256_LEN: usize = 32;

/// Which backend a snapshot comes from (and so how it is restored).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotFormat {
    /// An SQLite database of the embedded store.
    Sqlite,
    /// An etcd v3 snapshot (bbolt database + SHA-256 trailer).
    Etcd,
}

impl SnapshotFormat {
    /// `sqlite` or `etcd` (the value of the API's snapshot backend header).
    pub fn as_str(self) -> &'static str {
        match self {
            SnapshotFormat::Sqlite => "sqlite",
            SnapshotFormat::Etcd => "etcd",
        }
    }

    /// Recognizes a snapshot from its first bytes (at least 24 are needed):
    /// the SQLite header or bbolt's meta-page magic. `None` for anything else.
    pub fn sniff(head: &[u8]) -> Option<SnapshotFormat> {
        if head.len() >= SQLITE_MAGIC.len() && &head[..SQLITE_MAGIC.len()] == SQLITE_MAGIC {
            return Some(SnapshotFormat::Sqlite);
        }
        if head.len() >= 20 && u32::from_le_bytes([head[16], head[17], head[18], head[19]]) == BBOLT_MAGIC {
            return Some(SnapshotFormat::Etcd);
        }
        None
    }
}

impl std::fmt::Display for SnapshotFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A snapshot being taken: its metadata and the bytes as a stream.
///
/// The stream yields the file's bytes in order, then ends; an error item
/// means the snapshot is incomplete and must be discarded. Dropping the
/// stream early cancels the snapshot and frees what it held (the embedded
/// store's temporary copy is already unlinked; etcd's RPC is cancelled).
pub struct Snapshot {
    /// The file format.
    pub format: SnapshotFormat,
    /// The store revision the snapshot holds: exact for the embedded store
    /// (the copy's `current_revision`); for etcd the revision read just
    /// before the snapshot started, a lower bound (etcd's Snapshot RPC
    /// reports none).
    pub revision: Revision,
    /// The total size in bytes when known in advance (embedded store), so
    /// the API can send `Content-Length`.
    pub size: Option<u64>,
    /// The bytes.
    pub data: Pin<Box<dyn Stream<Item = Result<Bytes>> + Send>>,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("format", &self.format)
            .field("revision", &self.revision)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

/// What a snapshot file holds, as checked by [`inspect`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotInfo {
    /// The format.
    pub format: SnapshotFormat,
    /// The file's size in bytes.
    pub size: u64,
    /// The store revision (embedded store only: etcd's revision is inside
    /// bbolt's key bucket; `etcdutl snapshot status` shows it).
    pub revision: Option<Revision>,
    /// Live keys (embedded store only).
    pub keys: Option<u64>,
}

/// Why a snapshot file was refused. Messages say what is wrong and what to do.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The file could not be read or written.
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is not a snapshot rkube knows, or it is damaged.
    #[error("{path} is not a usable rkube snapshot: {why}")]
    Invalid { path: std::path::PathBuf, why: String },
    /// An etcd snapshot was given where only the embedded store's is accepted.
    #[error(
        "{path} is an etcd snapshot: etcd restores its own snapshots. Stop etcd and run `etcdutl snapshot restore {path} --data-dir NEW_ETCD_DIR` (etcd 3.4: `ETCDCTL_API=3 etcdctl snapshot restore`), start etcd on NEW_ETCD_DIR, then start rkube with the same --datastore-endpoint"
    )]
    EtcdSnapshot { path: std::path::PathBuf },
    /// A running server holds the store.
    #[error("{db} is in use by a running rkube server (it holds {lock}); stop that server first, then restore")]
    InUse { db: std::path::PathBuf, lock: std::path::PathBuf },
    /// SQLite failed while checking or writing the store.
    #[error("{what} {path}: {message}")]
    Sqlite { what: &'static str, path: std::path::PathBuf, message: String },
}

/// Checks a saved snapshot and says what it holds: for the embedded store,
/// an SQLite integrity check, the rkube schema, the revision and the number
/// of live keys (the file is opened read-only and immutable, so nothing is
/// written next to it); for etcd, the bbolt magic and the SHA-256 trailer
/// over the rest of the file, which is what `etcdutl snapshot restore`
/// verifies before it restores.
pub fn inspect(path: &Path) -> std::result::Result<SnapshotInfo, SnapshotError> {
    let io = |what, source| SnapshotError::Io { what, path: path.to_path_buf(), source };
    let mut file = std::fs::File::open(path).map_err(|e| io("cannot open", e))?;
    let size = file.metadata().map_err(|e| io("cannot stat", e))?.len();
    let mut head = [0u8; 24];
    let n = read_up_to(&mut file, &mut head).map_err(|e| io("cannot read", e))?;
    match SnapshotFormat::sniff(&head[..n]) {
        Some(SnapshotFormat::Sqlite) => {
            let (revision, keys) = crate::sqlite::check_snapshot_file(path)?;
            Ok(SnapshotInfo { format: SnapshotFormat::Sqlite, size, revision: Some(revision), keys: Some(keys) })
        }
        Some(SnapshotFormat::Etcd) => {
            verify_etcd_hash(path, &mut file, size)?;
            Ok(SnapshotInfo { format: SnapshotFormat::Etcd, size, revision: None, keys: None })
        }
        None => Err(SnapshotError::Invalid {
            path: path.to_path_buf(),
            why: "it is neither an SQLite database (the embedded store) nor an etcd snapshot".into(),
        }),
    }
}

fn read_up_to(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..])? {
            0 => break,
            m => n += m,
        }
    }
    Ok(n)
}

/// etcd's integrity check (`etcdutl`'s `snapshot restore`): a snapshot
/// saved through the Snapshot RPC is the bbolt file (a whole number of
/// 512-byte multiples — its pages) plus 32 bytes of SHA-256 over it.
fn verify_etcd_hash(path: &Path, file: &mut std::fs::File, size: u64) -> std::result::Result<(), SnapshotError> {
    use std::io::Seek;
    let invalid = |why: String| SnapshotError::Invalid { path: path.to_path_buf(), why };
    if size % 512 != SHA256_LEN as u64 {
        return Err(invalid(format!(
            "an etcd snapshot is a bbolt file plus a {SHA256_LEN}-byte SHA-256 trailer, but its size {size} is not a multiple of 512 plus {SHA256_LEN} (truncated, or copied from a member's data dir rather than saved)"
        )));
    }
    let io = |what, source| SnapshotError::Io { what, path: path.to_path_buf(), source };
    file.rewind().map_err(|e| io("cannot read", e))?;
    let body_len = size - SHA256_LEN as u64;
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    let mut left = body_len;
    let mut buf = vec![0u8; 256 * 1024];
    while left > 0 {
        let want = buf.len().min(left as usize);
        file.read_exact(&mut buf[..want]).map_err(|e| io("cannot read", e))?;
        ctx.update(&buf[..want]);
        left -= want as u64;
    }
    let mut trailer = [0u8; SHA256_LEN];
    file.read_exact(&mut trailer).map_err(|e| io("cannot read", e))?;
    if ctx.finish().as_ref() != trailer {
        return Err(invalid("the SHA-256 trailer does not match the data: the snapshot is damaged".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_etcd_snapshot(pages: usize) -> Vec<u8> {
        let mut body = vec![0u8; 4096 * pages];
        body[16..20].copy_from_slice(&BBOLT_MAGIC.to_le_bytes());
        let sha = ring::digest::digest(&ring::digest::SHA256, &body);
        body.extend_from_slice(sha.as_ref());
        body
    }

    #[test]
    fn sniff_tells_sqlite_from_etcd_from_anything_else() {
        let mut sqlite = SQLITE_MAGIC.to_vec();
        sqlite.extend_from_slice(&[0; 16]);
        assert_eq!(SnapshotFormat::sniff(&sqlite), Some(SnapshotFormat::Sqlite));
        assert_eq!(SnapshotFormat::sniff(&fake_etcd_snapshot(1)), Some(SnapshotFormat::Etcd));
        assert_eq!(SnapshotFormat::sniff(b"apiVersion: v1\nkind: Config\n"), None);
        assert_eq!(SnapshotFormat::sniff(b""), None);
    }

    #[test]
    fn an_etcd_snapshot_passes_only_with_its_sha256_trailer_intact() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("etcd.snap");
        let mut data = fake_etcd_snapshot(4);
        std::fs::write(&path, &data).unwrap();
        let info = inspect(&path).unwrap();
        assert_eq!((info.format, info.size), (SnapshotFormat::Etcd, data.len() as u64));

        data[5000] ^= 1;
        std::fs::write(&path, &data).unwrap();
        let err = inspect(&path).unwrap_err().to_string();
        assert!(err.contains("does not match"), "{err}");

        data.truncate(4096 * 3);
        std::fs::write(&path, &data).unwrap();
        let err = inspect(&path).unwrap_err().to_string();
        assert!(err.contains("not a multiple of 512"), "{err}");
    }

    #[test]
    fn other_files_are_refused_with_what_they_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.txt");
        std::fs::write(&path, "hello").unwrap();
        let err = inspect(&path).unwrap_err().to_string();
        assert!(err.contains("neither an SQLite database"), "{err}");
    }
}
