//! The `/var/log/containers` links upstream's kubelet keeps for log
//! collectors: `<pod>_<namespace>_<container>-<container id>.log` pointing
//! at the container's log file (upstream's `BuildContainerLogsPath` and
//! `legacyLogSymlink`).

use std::path::{Path, PathBuf};

/// Upstream caps the link's file name so that it stays a valid file name.
const MAX_NAME_LEN: usize = 255;

/// The link's file name: `<pod>_<namespace>_<container>-<id>.log`, the
/// `<pod>_<namespace>_<container>` part cut so that the whole fits in 255
/// bytes (as upstream's `logSymlink`, which truncates the prefix).
pub fn container_log_symlink_name(pod: &str, namespace: &str, container: &str, container_id: &str) -> String {
    let suffix = format!("-{container_id}.log");
    let mut prefix = format!("{pod}_{namespace}_{container}");
    let room = MAX_NAME_LEN.saturating_sub(suffix.len());
    if prefix.len() > room {
        let mut cut = room;
        while !prefix.is_char_boundary(cut) {
            cut -= 1;
        }
        prefix.truncate(cut);
    }
    format!("{prefix}{suffix}")
}

/// Creates (or replaces) the link under `dir` (normally
/// [`crate::pods::labels::CONTAINER_LOGS_ROOT`]) to `log_path`; returns it.
pub fn create_container_log_symlink(
    dir: &Path,
    pod: &str,
    namespace: &str,
    container: &str,
    container_id: &str,
    log_path: &Path,
) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let link = dir.join(container_log_symlink_name(pod, namespace, container, container_id));
    match std::fs::remove_file(&link) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    std::os::unix::fs::symlink(log_path, &link)?;
    Ok(link)
}

/// Removes the links under `dir` whose target no longer exists (the
/// orphans upstream's container GC removes). Returns how many were removed.
pub fn remove_dangling_symlinks(dir: &Path) -> usize {
    let mut removed = 0;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let is_link = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
        if is_link && std::fs::metadata(&path).is_err() && std::fs::remove_file(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_names_and_cleanup() {
        assert_eq!(container_log_symlink_name("web", "default", "c", "abc"), "web_default_c-abc.log");
        let long = "p".repeat(300);
        let name = container_log_symlink_name(&long, "ns", "c", &"f".repeat(64));
        assert_eq!(name.len(), 255);
        assert!(name.ends_with(&format!("-{}.log", "f".repeat(64))));

        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("0.log");
        std::fs::write(&target, "x").unwrap();
        let links = dir.path().join("containers");
        let link = create_container_log_symlink(&links, "web", "default", "c", "abc", &target).unwrap();
        assert_eq!(std::fs::read_link(&link).unwrap(), target);
        // Replacing is idempotent.
        create_container_log_symlink(&links, "web", "default", "c", "abc", &target).unwrap();
        assert_eq!(remove_dangling_symlinks(&links), 0);
        std::fs::remove_file(&target).unwrap();
        assert_eq!(remove_dangling_symlinks(&links), 1);
        assert!(std::fs::symlink_metadata(&link).is_err());
    }
}
