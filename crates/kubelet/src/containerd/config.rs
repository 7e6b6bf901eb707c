//! The managed containerd's host paths and its generated config (version 2
//! format, as containerd 1.6 — Debian 12's — reads).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::host::{CgroupDriver, CNI_BIN_DIR};

/// The longest unix socket path the kernel accepts (sun_path is 108 bytes
/// with its NUL); containerd also listens on `<grpc address>.ttrpc`.
const MAX_SOCKET_PATH: usize = 107;

/// Every host path of one agent's runtime, derived from its data dir.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimePaths {
    /// `<data-dir>/agent/containerd`: config, log, root.
    pub containerd_dir: PathBuf,
    /// `<containerd_dir>/config.toml`.
    pub config: PathBuf,
    /// `<containerd_dir>/containerd.log`: the process's stdout and stderr.
    pub log: PathBuf,
    /// containerd's persistent root (content, snapshots, metadata).
    pub root: PathBuf,
    /// containerd's state dir (sockets, shim bundles): `<containerd_dir>/state`,
    /// or `/run/rkube-<hash of the data dir>/containerd` when the socket path
    /// under the data dir would be too long for a unix socket.
    pub state: PathBuf,
    /// The gRPC (CRI) socket, `<state>/containerd.sock`.
    pub socket: PathBuf,
    /// runc's state root, `<state>/runc` (not the shared /run/containerd/runc).
    pub runc_root: PathBuf,
    /// The CNI config dir, `<data-dir>/agent/cni/net.d`.
    pub cni_conf_dir: PathBuf,
    /// Image tarballs imported whenever the managed containerd starts,
    /// `<data-dir>/agent/images`.
    pub images_dir: PathBuf,
}

impl RuntimePaths {
    /// The paths for the agent whose data dir is `data_dir` (made absolute
    /// against the current directory, since containerd needs absolute paths).
    pub fn new(data_dir: &Path) -> RuntimePaths {
        let data_dir = std::path::absolute(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
        let agent = data_dir.join("agent");
        let containerd_dir = agent.join("containerd");
        let mut state = containerd_dir.join("state");
        if state.join("containerd.sock.ttrpc").as_os_str().len() > MAX_SOCKET_PATH {
            state = PathBuf::from(format!("/run/rkube-{}", short_hash(&data_dir))).join("containerd");
        }
        RuntimePaths {
            config: containerd_dir.join("config.toml"),
            log: containerd_dir.join("containerd.log"),
            root: containerd_dir.join("root"),
            socket: state.join("containerd.sock"),
            runc_root: state.join("runc"),
            state,
            containerd_dir,
            cni_conf_dir: agent.join("cni").join("net.d"),
            images_dir: agent.join("images"),
        }
    }
}

/// The first 16 hex digits of the SHA-256 of `path`.
fn short_hash(path: &Path) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, path.as_os_str().as_encoded_bytes());
    digest.as_ref()[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// The snapshotter containerd's CRI plugin unpacks images with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Snapshotter {
    /// overlayfs: the default, copy-on-write layers.
    Overlayfs,
    /// native: plain copies, for filesystems overlayfs cannot sit on.
    Native,
}

impl Snapshotter {
    /// containerd's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Snapshotter::Overlayfs => "overlayfs",
            Snapshotter::Native => "native",
        }
    }
}

/// What goes into the generated config.toml.
#[derive(Clone, Debug)]
pub struct ContainerdConfig {
    /// Where everything lives.
    pub paths: RuntimePaths,
    /// `SystemdCgroup = true` for the systemd driver.
    pub cgroup_driver: CgroupDriver,
    /// The CRI plugin's snapshotter.
    pub snapshotter: Snapshotter,
    /// The pod sandbox image (`sandbox_image`).
    pub sandbox_image: String,
    /// Where the CNI plugin binaries are (`/usr/lib/cni` on Debian).
    pub cni_bin_dir: PathBuf,
    /// containerd's `restrict_oom_score_adj`: clamp containers' OOM score
    /// adjustments to containerd's own, for hosts where rkube may not lower
    /// them (no CAP_SYS_RESOURCE).
    pub restrict_oom_score_adj: bool,
}

impl ContainerdConfig {
    /// The config for `paths` with rkube's defaults: the pause image
    /// [`crate::PAUSE_IMAGE`], Debian's CNI plugin dir, OOM scores restricted
    /// when this process cannot lower them.
    pub fn new(paths: RuntimePaths, cgroup_driver: CgroupDriver, snapshotter: Snapshotter) -> ContainerdConfig {
        ContainerdConfig {
            paths,
            cgroup_driver,
            snapshotter,
            sandbox_image: crate::PAUSE_IMAGE.to_string(),
            cni_bin_dir: PathBuf::from(CNI_BIN_DIR),
            restrict_oom_score_adj: !crate::host::can_lower_oom_score_adj(),
        }
    }

    /// The config.toml text (containerd config version 2).
    pub fn render(&self) -> String {
        let p = &self.paths;
        let cri = "plugins.\"io.containerd.grpc.v1.cri\"";
        let mut s = String::new();
        let _ = writeln!(s, "# Generated by rkube for its managed containerd; rewritten at every start.");
        let _ = writeln!(s, "version = 2");
        let _ = writeln!(s, "root = {}", toml_str(&p.root));
        let _ = writeln!(s, "state = {}", toml_str(&p.state));
        // Plugins that would touch shared host paths (/opt/containerd) or need
        // filesystems and services rkube doesn't set up.
        let _ = writeln!(
            s,
            "disabled_plugins = [\"io.containerd.internal.v1.opt\", \"io.containerd.snapshotter.v1.aufs\", \
             \"io.containerd.snapshotter.v1.btrfs\", \"io.containerd.snapshotter.v1.zfs\", \
             \"io.containerd.snapshotter.v1.devmapper\", \"io.containerd.tracing.processor.v1.otlp\"]"
        );
        let _ = writeln!(s, "\n[grpc]\n  address = {}", toml_str(&p.socket));
        let _ = writeln!(s, "\n[{cri}]\n  sandbox_image = {}", toml_quote(&self.sandbox_image));
        // The streaming server (exec, attach, port-forward) only on loopback, on a free port.
        let _ = writeln!(s, "  stream_server_address = \"127.0.0.1\"\n  stream_server_port = \"0\"");
        let _ = writeln!(s, "  restrict_oom_score_adj = {}", self.restrict_oom_score_adj);
        // Pod network namespaces pinned under the state dir, not the shared /var/run/netns.
        let _ = writeln!(s, "  netns_mounts_under_state_dir = true");
        let _ = writeln!(s, "\n[{cri}.containerd]");
        let _ = writeln!(s, "  snapshotter = {}", toml_quote(self.snapshotter.as_str()));
        let _ = writeln!(s, "  default_runtime_name = \"runc\"");
        let _ = writeln!(s, "\n[{cri}.containerd.runtimes.runc]\n  runtime_type = \"io.containerd.runc.v2\"");
        let _ = writeln!(s, "\n[{cri}.containerd.runtimes.runc.options]");
        let _ = writeln!(s, "  SystemdCgroup = {}", self.cgroup_driver == crate::host::CgroupDriver::Systemd);
        let _ = writeln!(s, "  Root = {}", toml_str(&p.runc_root));
        let _ = writeln!(s, "\n[{cri}.cni]");
        let _ = writeln!(s, "  bin_dir = {}", toml_str(&self.cni_bin_dir));
        let _ = writeln!(s, "  conf_dir = {}", toml_str(&p.cni_conf_dir));
        s
    }
}

/// The snapshotter a generated config at `config` names (how `rkube images`
/// unpacks into the same one as the running agent); `None` if the file is
/// missing or names another.
pub fn configured_snapshotter(config: &Path) -> Option<Snapshotter> {
    let text = std::fs::read_to_string(config).ok()?;
    let value = text.lines().find_map(|l| l.trim().strip_prefix("snapshotter = "))?;
    [Snapshotter::Overlayfs, Snapshotter::Native].into_iter().find(|s| value.trim_matches('"') == s.as_str())
}

fn toml_str(p: &Path) -> String {
    toml_quote(&p.to_string_lossy())
}

/// A TOML basic string.
fn toml_quote(v: &str) -> String {
    let mut out = String::with_capacity(v.len() + 2);
    out.push('"');
    for c in v.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_derive_from_the_data_dir() {
        let p = RuntimePaths::new(Path::new("/var/lib/rkube"));
        assert_eq!(p.config, Path::new("/var/lib/rkube/agent/containerd/config.toml"));
        assert_eq!(p.socket, Path::new("/var/lib/rkube/agent/containerd/state/containerd.sock"));
        assert_eq!(p.cni_conf_dir, Path::new("/var/lib/rkube/agent/cni/net.d"));
        assert_eq!(p.images_dir, Path::new("/var/lib/rkube/agent/images"));
    }

    #[test]
    fn long_data_dirs_move_the_state_under_run() {
        let long = format!("/tmp/{}", "d".repeat(90));
        let a = RuntimePaths::new(Path::new(&long));
        assert!(a.state.starts_with("/run/"), "{}", a.state.display());
        assert!(a.socket.as_os_str().len() + ".ttrpc".len() <= MAX_SOCKET_PATH);
        // Two data dirs never share a state dir.
        let b = RuntimePaths::new(Path::new(&format!("{long}x")));
        assert_ne!(a.state, b.state);
    }

    #[test]
    fn config_has_the_cri_settings() {
        let paths = RuntimePaths::new(Path::new("/srv/a \"b\""));
        let cfg = ContainerdConfig::new(paths, CgroupDriver::Systemd, Snapshotter::Native).render();
        assert!(cfg.contains("version = 2\n"));
        assert!(cfg.contains("root = \"/srv/a \\\"b\\\"/agent/containerd/root\""), "{cfg}");
        assert!(cfg.contains("sandbox_image = \"registry.k8s.io/pause:3.10\""));
        assert!(cfg.contains("SystemdCgroup = true"));
        assert!(cfg.contains("snapshotter = \"native\""));
        assert!(cfg.contains("bin_dir = \"/usr/lib/cni\""));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.toml"), &cfg).unwrap();
        assert_eq!(configured_snapshotter(&dir.path().join("config.toml")), Some(Snapshotter::Native));
        assert_eq!(configured_snapshotter(&dir.path().join("missing.toml")), None);
    }
}
