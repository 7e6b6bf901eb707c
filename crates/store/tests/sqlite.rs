//! The conformance suite against the embedded SQLite backend, plus checks
//! specific to it (file handling, revision numbering).

mod conformance;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use conformance::Backend;
use rkube_store::sqlite::{SqliteOptions, SqliteStore};
use rkube_store::{SharedStore, Store, StoreError};

/// A fresh store in its own temporary directory.
struct SqliteBackend {
    dir: tempfile::TempDir,
    store: Option<SharedStore>,
}

fn options() -> SqliteOptions {
    SqliteOptions {
        progress_interval: Duration::from_millis(300),
        ttl_sweep_interval: Duration::from_millis(200),
        ..SqliteOptions::default()
    }
}

impl SqliteBackend {
    fn path(&self) -> std::path::PathBuf {
        self.dir.path().join("db").join("state.db")
    }

    async fn open(&mut self) {
        let store = SqliteStore::open_with(&self.path(), options()).await.expect("open the sqlite store");
        self.store = Some(Arc::new(store));
    }
}

#[async_trait::async_trait]
impl Backend for SqliteBackend {
    fn store(&self) -> SharedStore {
        self.store.clone().expect("the store is open")
    }

    async fn restart(&mut self) {
        let store = self.store.take().expect("the store is open");
        assert_eq!(Arc::strong_count(&store), 1, "the check still holds a store handle across a restart");
        drop(store); // joins the writer thread: the file is closed
        self.open().await;
    }

    fn progress_interval(&self) -> Duration {
        options().progress_interval
    }
}

async fn sqlite_backend() -> SqliteBackend {
    let mut backend = SqliteBackend { dir: tempfile::tempdir().expect("create a temporary directory"), store: None };
    backend.open().await;
    backend
}

conformance::conformance_tests!(sqlite_backend);

// ------------------------------------------------------ sqlite specifics

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_creates_missing_parent_directories() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("server").join("db").join("state.db");
    let store = SqliteStore::open(&path).await.unwrap();
    assert!(path.exists());
    assert_eq!(store.path(), path);
    assert_eq!(store.current_revision().await.unwrap(), 0, "a new store starts at revision 0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_can_be_open_only_once_per_process() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let first = SqliteStore::open(&path).await.unwrap();
    first.create("/k", Bytes::from_static(b"v"), None).await.unwrap();
    let err = SqliteStore::open(&path).await.err().expect("a second open must fail");
    assert!(matches!(&err, StoreError::Unavailable(m) if m.contains("already open")), "{err}");
    drop(first);
    let again = SqliteStore::open(&path).await.unwrap();
    assert_eq!(again.current_revision().await.unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revisions_are_consecutive_from_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("state.db")).await.unwrap();
    let a = store.create("/a", Bytes::from_static(b"1"), None).await.unwrap();
    assert!(store.create("/a", Bytes::from_static(b"1"), None).await.is_err());
    let b = store.create("/b", Bytes::from_static(b"1"), None).await.unwrap();
    let d = store.delete("/a", None).await.unwrap();
    assert_eq!((a.mod_revision, b.mod_revision, d.revision), (1, 2, 3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_explains_an_unusable_directory() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, b"not a directory").unwrap();
    let err = SqliteStore::open(&blocker.join("state.db")).await.err().expect("open under a file must fail");
    assert!(matches!(&err, StoreError::Unavailable(m) if m.contains("cannot create directory")), "{err}");
}
