//! Images without a registry: building the pause and busybox images from
//! what is on the machine and importing image archives into containerd.
//!
//! The agent's images dir (`<data-dir>/agent/images`) holds archives to
//! import whenever the managed containerd starts (`rkube images build-local`
//! writes there, so its images survive a containerd that was not running);
//! the pause image is imported at every start if the runtime lacks it.

mod import;
mod local;
mod oci;
mod tar;

pub use import::{import_archive, ImportError};
pub use local::{busybox_image, busybox_version, pause_image, LocalImageError, HOST_BUSYBOX, PAUSE_BINARY};
pub use oci::{digest, OciImage};

use std::path::{Path, PathBuf};

use crate::containerd::Snapshotter;
use crate::cri::CriClient;

/// The archive file name for an image reference
/// (`registry.k8s.io/pause:3.10` → `registry.k8s.io_pause_3.10.tar`).
pub fn archive_name(reference: &str) -> String {
    let safe: String = reference.chars().map(|c| if matches!(c, '/' | ':' | '@') { '_' } else { c }).collect();
    format!("{safe}.tar")
}

/// Writes `image` as an OCI layout archive into `dir`; returns its path.
pub fn write_archive(image: &OciImage, dir: &Path) -> Result<PathBuf, ImportError> {
    let path = dir.join(archive_name(&image.reference));
    std::fs::create_dir_all(dir).map_err(|source| ImportError::Write { path: dir.into(), source })?;
    // Write then rename, so a concurrent import never reads half an archive.
    let tmp = dir.join(format!(".{}.tmp", archive_name(&image.reference)));
    std::fs::write(&tmp, image.layout_tar()).map_err(|source| ImportError::Write { path: tmp.clone(), source })?;
    std::fs::rename(&tmp, &path).map_err(|source| ImportError::Write { path: path.clone(), source })?;
    Ok(path)
}

/// `rkube images build-local`'s images: the pause image and busybox from
/// `busybox` (normally [`HOST_BUSYBOX`]), written as archives into `dir`.
/// Returns (reference, archive) pairs.
pub fn build_local(dir: &Path, busybox: &Path) -> Result<Vec<(String, PathBuf)>, BuildLocalError> {
    let mut out = Vec::new();
    for image in [pause_image(), busybox_image(busybox)?] {
        let path = write_archive(&image, dir)?;
        tracing::info!(component = "kubelet", image = %image.reference, archive = %path.display(), "built local image");
        out.push((image.reference, path));
    }
    Ok(out)
}

/// A failed `build_local`.
#[derive(Debug, thiserror::Error)]
pub enum BuildLocalError {
    /// The busybox image could not be made.
    #[error(transparent)]
    Busybox(#[from] LocalImageError),
    /// An archive could not be written or imported.
    #[error(transparent)]
    Import(#[from] ImportError),
}

/// The `*.tar` archives in `dir`, sorted by name (none if `dir` is missing).
pub fn archives_in(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "tar") && p.is_file())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// What the agent does once the runtime answers: imports every archive in
/// `images_dir` (failures are logged, not fatal), then makes sure the pause
/// image is present, building and importing it if not.
pub async fn prepare_runtime_images(
    cri: &CriClient,
    snapshotter: Option<Snapshotter>,
    images_dir: &Path,
) -> Result<(), ImportError> {
    for archive in archives_in(images_dir) {
        if let Err(e) = import_archive(cri.socket(), snapshotter, &archive).await {
            tracing::warn!(component = "kubelet", "{e}");
        }
    }
    let present = cri.image_status(crate::PAUSE_IMAGE).await.ok().flatten().is_some();
    if !present {
        tracing::info!(component = "kubelet", image = crate::PAUSE_IMAGE, "providing the pod sandbox image");
        let path = write_archive(&pause_image(), images_dir)?;
        import_archive(cri.socket(), snapshotter, &path).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_names_are_flat() {
        assert_eq!(archive_name("registry.k8s.io/pause:3.10"), "registry.k8s.io_pause_3.10.tar");
    }

    #[test]
    fn pause_layout_names_the_image() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_archive(&pause_image(), dir.path()).unwrap();
        let out = std::process::Command::new("tar").arg("-xf").arg(&path).arg("-C").arg(dir.path()).output().unwrap();
        assert!(out.status.success());
        let index: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("index.json")).unwrap()).unwrap();
        let m = &index["manifests"][0];
        assert_eq!(m["annotations"]["io.containerd.image.name"], "registry.k8s.io/pause:3.10");
        assert_eq!(m["annotations"]["org.opencontainers.image.ref.name"], "3.10");
        // The manifest blob is where the index says, under its own digest.
        let hex = m["digest"].as_str().unwrap().strip_prefix("sha256:").unwrap();
        let manifest = std::fs::read(dir.path().join("blobs/sha256").join(hex)).unwrap();
        assert_eq!(digest(&manifest), m["digest"]);
        let manifest: serde_json::Value = serde_json::from_slice(&manifest).unwrap();
        let cfg_hex = manifest["config"]["digest"].as_str().unwrap().strip_prefix("sha256:").unwrap();
        let config: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("blobs/sha256").join(cfg_hex)).unwrap()).unwrap();
        assert_eq!(config["config"]["Entrypoint"], serde_json::json!(["/pause"]));
        assert_eq!(config["os"], "linux");
    }
}
