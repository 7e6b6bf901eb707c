//! `rkube killall`: the explicit full stop of a node (k3s's
//! `k3s-killall.sh`). Stopping `rkube server` or `rkube agent` leaves
//! containerd, the pods and their network running so that a restart
//! resumes them (adopting the running containerd); this removes all of
//! it for one data dir: the managed containerd (`containerd --config
//! <data-dir>/agent/containerd/config.toml`: SIGTERM, SIGKILL after 10 s),
//! its shims and mounts, the pods' volume mounts, bridge and logs, the node
//! network's routes and device, kube-proxy's and NetworkPolicy's nft
//! tables (as recorded in `<data-dir>/agent/network.json`), and the
//! node's cgroup parent. It touches nothing that does not derive from the
//! data dir and node name. Run it after stopping rkube.

use std::path::PathBuf;

use anyhow::Context;

use crate::cli::DEFAULT_DATA_DIR;

const COMPONENT: &str = "rkube-killall";

/// Flags of `rkube killall`.
#[derive(Debug, clap::Args)]
pub struct KillallArgs {
    /// The stopped server's or agent's data dir.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_DATA_DIR, env = "RKUBE_DATA_DIR")]
    pub data_dir: PathBuf,

    /// The node's name, for its cgroup parent `rkube-<name>` [default: the
    /// name recorded in <data-dir>/agent/network.json].
    #[arg(long, value_name = "NAME", env = "RKUBE_NODE_NAME")]
    pub node_name: Option<String>,
}

/// Removes what the node with `args.data_dir` left on this host. Err: the
/// recorded network names cannot be read (the rest is done regardless) or
/// a table, route or device cannot be removed.
pub fn run(args: KillallArgs) -> anyhow::Result<()> {
    let data_dir = std::path::absolute(&args.data_dir)
        .with_context(|| format!("cannot resolve --data-dir {}", args.data_dir.display()))?;
    tracing::info!(component = COMPONENT, data_dir = %data_dir.display(), "stopping the managed containerd and its shims, removing the pods' mounts, bridge and logs");
    rkube_kubelet::containerd::teardown_node(&data_dir);
    match args.node_name.or_else(|| crate::networking::recorded_node_name(&data_dir)) {
        Some(node) => {
            for cgroup in rkube_kubelet::host::remove_cgroup_tree(&format!("rkube-{node}")) {
                tracing::warn!(component = COMPONENT, cgroup = %cgroup.display(), "cannot remove the cgroup (processes still in it?)");
            }
        }
        None => tracing::info!(
            component = COMPONENT,
            "no node name recorded under the data dir; pass --node-name to remove the node's cgroup parent"
        ),
    }
    crate::networking::teardown(&data_dir)
}
