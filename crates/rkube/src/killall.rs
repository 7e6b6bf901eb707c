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
//! data dir and node name. An `rkube server` or `rkube agent` still running
//! with the data dir is stopped first (SIGTERM, SIGKILL after 30 s), as
//! `k3s-killall.sh` stops k3s; a data dir that does not exist is refused.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::cli::DEFAULT_DATA_DIR;

const COMPONENT: &str = "rkube-killall";
/// How long a running `rkube server`/`rkube agent` gets after SIGTERM.
const RKUBE_STOP_GRACE: Duration = Duration::from_secs(30);

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
    if !data_dir.is_dir() {
        bail!(
            "the data dir {} does not exist: pass the --data-dir the server or agent ran with (default {DEFAULT_DATA_DIR})",
            data_dir.display()
        );
    }
    stop_running_rkube(&data_dir);
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

/// Stops every `rkube server` / `rkube agent` running with `data_dir`
/// (SIGTERM, then SIGKILL after [`RKUBE_STOP_GRACE`]).
fn stop_running_rkube(data_dir: &Path) {
    let me = std::process::id() as i32;
    let wanted = same_dir(data_dir);
    let pids: Vec<i32> = rkube_kubelet::containerd::processes()
        .into_iter()
        .filter(|(pid, _)| *pid != me && rkube_kubelet::containerd::process_running(*pid))
        .filter(|(pid, args)| {
            data_dir_of(args, || env_data_dir(*pid), || proc_cwd(*pid)).is_some_and(|d| same_dir(&d) == wanted)
        })
        .map(|(pid, _)| pid)
        .collect();
    if pids.is_empty() {
        return;
    }
    for &pid in &pids {
        tracing::warn!(
            component = COMPONENT,
            pid,
            "rkube (pid {pid}) still runs with this data dir; stopping it first"
        );
        // SAFETY: kill(2) of a process found running with our data dir.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    let deadline = Instant::now() + RKUBE_STOP_GRACE;
    while pids.iter().any(|p| rkube_kubelet::containerd::process_running(*p)) {
        if Instant::now() >= deadline {
            for &pid in pids.iter().filter(|p| rkube_kubelet::containerd::process_running(**p)) {
                tracing::warn!(
                    component = COMPONENT,
                    pid,
                    "rkube (pid {pid}) did not stop within {RKUBE_STOP_GRACE:?}; killing it"
                );
                // SAFETY: as above.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            std::thread::sleep(Duration::from_millis(500));
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The data dir of a command line if it is `rkube server` or `rkube agent`:
/// its `--data-dir` (`--data-dir DIR` or `--data-dir=DIR`), else
/// `RKUBE_DATA_DIR` from its environment (`env`), else the default; a
/// relative one is taken from its working directory (`cwd`).
fn data_dir_of(
    args: &[Vec<u8>],
    env: impl FnOnce() -> Option<PathBuf>,
    cwd: impl FnOnce() -> Option<PathBuf>,
) -> Option<PathBuf> {
    let exe = Path::new(std::ffi::OsStr::from_bytes(args.first()?));
    if exe.file_name().is_none_or(|n| n != "rkube") {
        return None;
    }
    if !args.iter().skip(1).any(|a| a == b"server" || a == b"agent") {
        return None;
    }
    let mut flag = None;
    for (i, a) in args.iter().enumerate() {
        if a == b"--data-dir" {
            flag = args.get(i + 1).cloned();
        } else if let Some(v) = a.strip_prefix(b"--data-dir=") {
            flag = Some(v.to_vec());
        }
    }
    let dir = flag
        .map(|v| PathBuf::from(OsString::from_vec(v)))
        .or_else(env)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR));
    if dir.is_absolute() {
        Some(dir)
    } else {
        cwd().map(|c| c.join(dir))
    }
}

fn env_data_dir(pid: i32) -> Option<PathBuf> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    environ
        .split(|b| *b == 0)
        .find_map(|kv| kv.strip_prefix(b"RKUBE_DATA_DIR="))
        .map(|v| PathBuf::from(OsString::from_vec(v.to_vec())))
}

fn proc_cwd(pid: i32) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/cwd")).ok()
}

/// A path compared through its canonical form where it exists.
fn same_dir(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<Vec<u8>> {
        line.split(' ').map(|a| a.as_bytes().to_vec()).collect()
    }

    #[test]
    fn the_data_dir_of_a_running_server_or_agent_is_found() {
        let none = || None;
        let cwd = || Some(PathBuf::from("/home/u"));
        assert_eq!(data_dir_of(&args("/usr/local/bin/rkube server --data-dir /d1"), none, none), Some("/d1".into()));
        assert_eq!(data_dir_of(&args("rkube agent --data-dir=/d2 --token t"), none, none), Some("/d2".into()));
        assert_eq!(data_dir_of(&args("./rkube server --data-dir rel"), none, cwd), Some("/home/u/rel".into()));
        assert_eq!(data_dir_of(&args("rkube server"), || Some("/from/env".into()), none), Some("/from/env".into()));
        assert_eq!(data_dir_of(&args("rkube server"), none, none), Some(DEFAULT_DATA_DIR.into()));
        // Not a server or agent, or not rkube.
        assert_eq!(data_dir_of(&args("rkube killall --data-dir /d1"), none, none), None);
        assert_eq!(data_dir_of(&args("rkube token create --data-dir /d1"), none, none), None);
        assert_eq!(data_dir_of(&args("/usr/bin/k3s server --data-dir /d1"), none, none), None);
    }
}
