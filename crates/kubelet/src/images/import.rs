//! Importing image archives (OCI image layouts and `docker save`
//! archives) into containerd's `k8s.io` namespace with containerd's own
//! `ctr images import`, which keeps every tag an archive names.

use std::path::{Path, PathBuf};

use crate::containerd::Snapshotter;
use crate::host;

/// A failed import.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// `ctr` is not installed.
    #[error("ctr not found on PATH: it comes with the Debian package containerd (scripts/install.sh installs it)")]
    NoCtr,
    /// The archive does not exist or cannot be read.
    #[error("cannot read image archive {}: {source}", path.display())]
    Unreadable { path: PathBuf, source: std::io::Error },
    /// ctr could not be run or reported a failure.
    #[error("importing {} into containerd at unix://{} failed: {message}", path.display(), socket.display())]
    Ctr { path: PathBuf, socket: PathBuf, message: String },
    /// Writing a built image archive failed.
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
}

/// Imports `archive` into the `k8s.io` namespace of the containerd at
/// `socket`, all platforms, unpacking into `snapshotter` when given (else
/// containerd's default). Returns ctr's output (one line per image).
pub async fn import_archive(
    socket: &Path,
    snapshotter: Option<Snapshotter>,
    archive: &Path,
) -> Result<String, ImportError> {
    let ctr = host::find_executable("ctr").ok_or(ImportError::NoCtr)?;
    std::fs::File::open(archive).map_err(|source| ImportError::Unreadable { path: archive.into(), source })?;
    let mut cmd = tokio::process::Command::new(ctr);
    cmd.arg("--address").arg(socket).args(["--namespace", crate::CRI_NAMESPACE, "images", "import", "--all-platforms"]);
    if let Some(s) = snapshotter {
        cmd.args(["--snapshotter", s.as_str()]);
    }
    cmd.arg(archive).stdin(std::process::Stdio::null());
    let err = |message: String| ImportError::Ctr { path: archive.into(), socket: socket.into(), message };
    let out = cmd.output().await.map_err(|e| err(format!("cannot run ctr: {e}")))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(err(format!("ctr exited with {}: {}", out.status, stderr.trim())));
    }
    tracing::info!(component = "kubelet", archive = %archive.display(), "imported image archive");
    Ok(stdout)
}
