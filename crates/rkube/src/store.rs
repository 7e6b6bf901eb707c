//! `rkube store snapshot save|restore`: backups of the cluster's store.
//!
//! `save` asks the running API server for a snapshot
//! (`GET /rkube/v1/store/snapshot`, cluster admins only; only the API
//! server touches storage) and writes it atomically: into a temporary file
//! next to FILE, synced, checked, then renamed. The file is the backend's own
//! format: an SQLite database for the embedded store, an etcd snapshot
//! (what `etcdctl snapshot save` writes) for etcd.
//!
//! `restore` puts an embedded-store snapshot in place of a stopped
//! server's `<data-dir>/server/db/state.db` ([`rkube_store::sqlite::restore_snapshot`]):
//! it refuses while a server holds the store, checks the file, keeps the
//! replaced store next to it, and continues the revision past the replaced
//! store's, marked compacted, so clients that held older resourceVersions
//! relist (etcdutl's `--bump-revision --mark-compacted`). etcd snapshots
//! are restored by etcd's own tool, `etcdutl snapshot restore`; `restore`
//! says so and fails.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context};
use clap::{Args, Subcommand};
use rkube_store::snapshot::{SnapshotError, SnapshotFormat};
use rkube_store::DatastoreEndpoint;

use crate::cli::DEFAULT_DATA_DIR;

/// `rkube store …`.
#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Save and restore snapshots (backups) of the store.
    #[command(subcommand)]
    Snapshot(SnapshotCommand),
}

/// `rkube store snapshot …`.
#[derive(Debug, Subcommand)]
pub enum SnapshotCommand {
    /// Save a snapshot of the running cluster's store to FILE, through the API server.
    ///
    /// Needs a cluster admin's kubeconfig (the admin kubeconfig by default).
    /// FILE is an SQLite database (embedded store) or an etcd snapshot (etcd),
    /// written atomically.
    Save(SaveArgs),
    /// Restore the embedded store of a stopped server from FILE.
    ///
    /// Refuses while a server uses the data dir. The current store is kept as
    /// <store>.before-restore-<unix seconds>. Start `rkube server` on the data
    /// dir afterwards. etcd snapshots are restored with `etcdutl snapshot restore`.
    Restore(RestoreArgs),
}

/// Flags of `rkube store snapshot save`.
#[derive(Debug, Args)]
pub struct SaveArgs {
    /// Where to write the snapshot.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// The kubeconfig to reach the API with [default: <data-dir>/admin.kubeconfig].
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,

    /// The server's data dir (for the default kubeconfig).
    #[arg(long, value_name = "DIR", default_value = DEFAULT_DATA_DIR, env = "RKUBE_DATA_DIR")]
    pub data_dir: PathBuf,
}

/// Flags of `rkube store snapshot restore`.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// The snapshot to restore (saved by `rkube store snapshot save`).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// The stopped server's data dir; the store is <data-dir>/server/db/state.db.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_DATA_DIR, env = "RKUBE_DATA_DIR")]
    pub data_dir: PathBuf,

    /// The server's --datastore-endpoint, if it is not the default
    /// sqlite://<data-dir>/server/db/state.db.
    #[arg(long, value_name = "ENDPOINT", value_parser = DatastoreEndpoint::parse, env = "RKUBE_DATASTORE_ENDPOINT")]
    pub datastore_endpoint: Option<DatastoreEndpoint>,

    /// Continue the restored store's revisions this much past the snapshot's
    /// and mark them compacted [default: just past the replaced store's
    /// revision]. Use a large value (etcd suggests 1000000000) when the old
    /// store is lost but clients or other servers may still hold
    /// resourceVersions from it.
    #[arg(long, value_name = "N")]
    pub bump_revision: Option<i64>,
}

/// Runs `rkube store …`; errors are printed as `error: …` with exit status 1.
pub fn run(cmd: StoreCommand) -> ExitCode {
    let result = match cmd {
        StoreCommand::Snapshot(SnapshotCommand::Save(args)) => {
            match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt.block_on(save(args)),
                Err(e) => Err(anyhow!("cannot start the async runtime: {e}")),
            }
        }
        StoreCommand::Snapshot(SnapshotCommand::Restore(args)) => restore(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Removes the temporary file unless disarmed.
struct TempFile(Option<PathBuf>);

impl Drop for TempFile {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

async fn save(args: SaveArgs) -> anyhow::Result<()> {
    use futures::AsyncReadExt;

    let kubeconfig = args.kubeconfig.unwrap_or_else(|| args.data_dir.join("admin.kubeconfig"));
    let client = client(&kubeconfig).await?;
    let file = std::path::absolute(&args.file).with_context(|| format!("cannot resolve {}", args.file.display()))?;
    let dir = file.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
    let name = file.file_name().ok_or_else(|| anyhow!("{} does not name a file", args.file.display()))?;

    // etcd's snapshot reports no revision: the list's resourceVersion just
    // before is what it holds at least.
    let before = client
        .request::<serde_json::Value>(
            kube::core::Request::new("/api/v1/namespaces").list(&kube::api::ListParams::default().limit(1))?,
        )
        .await
        .ok()
        .and_then(|v| v["metadata"]["resourceVersion"].as_str().and_then(|s| s.parse::<i64>().ok()));

    let (base, name_part) = rkube_apiserver::snapshot::PATH.rsplit_once('/').expect("the path has segments");
    let request = kube::core::Request::new(base).get(name_part, &kube::api::GetParams::default())?;
    let mut body = client.request_stream(request).await.map_err(|e| match e {
        kube::Error::Api(status) if status.code == 403 => anyhow!(
            "the API server refused the snapshot: {} (saving a snapshot needs a cluster admin: system:masters, cluster-admin, or a ClusterRole granting nonResourceURLs [{}] verb get)",
            status.message,
            rkube_apiserver::snapshot::PATH
        ),
        kube::Error::Api(status) => anyhow!("the API server could not take the snapshot: {} ({})", status.message, status.code),
        other => anyhow!("cannot reach the API server with {}: {other}", kubeconfig.display()),
    })?;

    let tmp_path = dir.join(format!(".{}.tmp-{}", name.to_string_lossy(), std::process::id()));
    let mut out = std::fs::File::create(&tmp_path)
        .with_context(|| format!("cannot create {} (is {} writable?)", tmp_path.display(), dir.display()))?;
    let tmp = TempFile(Some(tmp_path.clone()));
    let mut buf = vec![0u8; 256 * 1024];
    let mut written = 0u64;
    loop {
        let n = body.read(&mut buf).await.context("the snapshot download failed part-way; nothing was saved")?;
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n]).with_context(|| format!("cannot write {} (disk full?)", tmp_path.display()))?;
        written += n as u64;
    }
    out.sync_all().with_context(|| format!("cannot sync {}", tmp_path.display()))?;
    drop(out);
    let info = rkube_store::snapshot::inspect(&tmp_path)
        .map_err(|e| anyhow!("the downloaded snapshot failed its check, nothing was saved: {e}"))?;
    std::fs::rename(&tmp_path, &file)
        .with_context(|| format!("cannot move the snapshot into place at {}", file.display()))?;
    std::mem::forget(tmp);
    if let Ok(d) = std::fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    match info.format {
        SnapshotFormat::Sqlite => println!(
            "Saved a snapshot of the embedded (sqlite) store at revision {} ({} keys, {written} bytes) to {}",
            info.revision.unwrap_or_default(),
            info.keys.unwrap_or_default(),
            file.display()
        ),
        SnapshotFormat::Etcd => println!(
            "Saved an etcd snapshot{} ({written} bytes, SHA-256 verified) to {}; restore it with `etcdutl snapshot restore`",
            before.map(|r| format!(" at revision {r} or later")).unwrap_or_default(),
            file.display()
        ),
    }
    Ok(())
}

/// A client from the kubeconfig at `path`, with errors that say what to pass.
async fn client(path: &Path) -> anyhow::Result<kube::Client> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "cannot read the kubeconfig {} (run this on a server, or pass --kubeconfig or --data-dir)",
            path.display()
        )
    })?;
    let kc = kube::config::Kubeconfig::from_yaml(&text)
        .with_context(|| format!("cannot parse the kubeconfig {}", path.display()))?;
    let config = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
        .await
        .with_context(|| format!("cannot use the kubeconfig {}", path.display()))?;
    kube::Client::try_from(config).context("cannot build the API client")
}

fn restore(args: RestoreArgs) -> anyhow::Result<()> {
    let data_dir = std::path::absolute(&args.data_dir)
        .with_context(|| format!("cannot resolve --data-dir {}", args.data_dir.display()))?;
    let db = match args.datastore_endpoint.unwrap_or_else(|| DatastoreEndpoint::default_for(&data_dir)) {
        DatastoreEndpoint::Sqlite(path) => path,
        DatastoreEndpoint::Etcd(_) => bail!(
            "this server keeps its state in etcd, and etcd restores its own snapshots: stop the servers and etcd, run `etcdutl snapshot restore FILE --data-dir NEW_ETCD_DIR` on each etcd member, start etcd on the restored data dir, then start the rkube servers"
        ),
    };
    let options = rkube_store::sqlite::RestoreOptions { bump_revision: args.bump_revision };
    let report = rkube_store::sqlite::restore_snapshot(&args.file, &db, &options).map_err(|e| match e {
        SnapshotError::InUse { .. } => anyhow!("refusing to restore: {e}"),
        other => anyhow!("{other}"),
    })?;
    println!(
        "Restored {} keys from {} (revision {}) into {}.",
        report.keys,
        args.file.display(),
        report.snapshot_revision,
        db.display()
    );
    if report.revision > report.snapshot_revision {
        println!(
            "The store continues at revision {}, marked compacted: clients holding older resourceVersions get 410 Gone and relist.",
            report.revision
        );
    }
    if let Some(prev) = &report.previous {
        println!("The replaced store is kept as {}.", prev.display());
        if report.replaced_revision.is_none() && args.bump_revision.is_none() {
            eprintln!(
                "warning: the replaced store's revision could not be read, so resourceVersions were not moved past it: restart every client (controllers, kubelets) so none resumes from an old resourceVersion, or restore again with --bump-revision 1000000000"
            );
        }
    }
    println!("Start the server on it: rkube server --data-dir {}", data_dir.display());
    Ok(())
}
