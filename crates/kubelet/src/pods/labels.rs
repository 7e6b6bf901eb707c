//! The CRI labels, annotations and log paths upstream's kubelet puts on
//! sandboxes and containers (kuberuntime's labels.go), so that anything on
//! the node can find a pod's containers through CRI alone.

use std::path::PathBuf;

/// Sandbox and container label: the pod's name.
pub const POD_NAME: &str = "io.kubernetes.pod.name";
/// Sandbox and container label: the pod's namespace.
pub const POD_NAMESPACE: &str = "io.kubernetes.pod.namespace";
/// Sandbox and container label: the pod's UID.
pub const POD_UID: &str = "io.kubernetes.pod.uid";
/// Container label: the container's name in the pod spec.
pub const CONTAINER_NAME: &str = "io.kubernetes.container.name";
/// Container annotation: the restart count this container instance has.
pub const CONTAINER_RESTART_COUNT: &str = "io.kubernetes.container.restartCount";
/// Container annotation: the hash of the container's spec it was created from.
pub const CONTAINER_HASH: &str = "io.kubernetes.container.hash";
/// Container annotation: terminationMessagePath.
pub const CONTAINER_TERMINATION_MESSAGE_PATH: &str = "io.kubernetes.container.terminationMessagePath";
/// Container annotation: terminationMessagePolicy.
pub const CONTAINER_TERMINATION_MESSAGE_POLICY: &str = "io.kubernetes.container.terminationMessagePolicy";
/// Sandbox and container annotation: the pod's terminationGracePeriodSeconds.
pub const POD_TERMINATION_GRACE_PERIOD: &str = "io.kubernetes.pod.terminationGracePeriod";

/// The root of pod logs on the node (upstream's `/var/log/pods`).
pub const POD_LOGS_ROOT: &str = "/var/log/pods";
/// The symlinks to current container logs (upstream's `/var/log/containers`).
pub const CONTAINER_LOGS_ROOT: &str = "/var/log/containers";

/// `/var/log/pods/<namespace>_<name>_<uid>`: the sandbox's log directory.
pub fn pod_log_dir(namespace: &str, name: &str, uid: &str) -> PathBuf {
    PathBuf::from(POD_LOGS_ROOT).join(format!("{namespace}_{name}_{uid}"))
}

/// `<container>/<restart_count>.log`: a container instance's log path,
/// relative to its sandbox's log directory.
pub fn container_log_path(container: &str, restart_count: u32) -> String {
    format!("{container}/{restart_count}.log")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_paths_follow_upstream_layout() {
        assert_eq!(pod_log_dir("default", "web", "u-1"), PathBuf::from("/var/log/pods/default_web_u-1"));
        assert_eq!(container_log_path("app", 2), "app/2.log");
    }
}
