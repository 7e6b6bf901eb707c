//! The `/var/log/containers/<pod>_<ns>_<container>-<id>.log` links to the
//! current log of each container (upstream keeps them for log shippers):
//! made when a container starts, replacing the link of its previous
//! instance, and removed once the pod's logs are gone.

use std::path::Path;

use k8s_openapi::api::core::v1::Pod;

use super::labels;
use crate::logs::{create_container_log_symlink, remove_dangling_symlinks};

/// Links the log of container `id` (instance `attempt` of `container`).
/// Best effort: a failure is logged, never fatal.
pub fn link(pod: &Pod, container: &str, id: &str, attempt: u32) {
    let (name, ns, uid) = (
        pod.metadata.name.as_deref().unwrap_or(""),
        pod.metadata.namespace.as_deref().unwrap_or(""),
        pod.metadata.uid.as_deref().unwrap_or(""),
    );
    let dir = labels::pod_log_dir(ns, name, uid);
    let target = dir.join(labels::container_log_path(container, attempt));
    let root = Path::new(labels::CONTAINER_LOGS_ROOT);
    // The previous instance's link points into the same container directory.
    let own = dir.join(container);
    for e in std::fs::read_dir(root).into_iter().flatten().flatten() {
        if std::fs::read_link(e.path()).is_ok_and(|t| t.starts_with(&own)) {
            let _ = std::fs::remove_file(e.path());
        }
    }
    if let Err(e) = create_container_log_symlink(root, name, ns, container, id, &target) {
        tracing::debug!(component = "kubelet", "cannot link {}: {e}", target.display());
    }
}

/// Removes the links left dangling once a pod's log directory is removed.
pub fn remove_dangling() {
    remove_dangling_symlinks(Path::new(labels::CONTAINER_LOGS_ROOT));
}
