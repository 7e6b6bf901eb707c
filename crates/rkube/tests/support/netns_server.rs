//! A whole `rkube server` — control plane, node agent, managed containerd,
//! kube-proxy (nftables), node network and cluster DNS — running inside a
//! [`NetnsHost`] of a [`super::netns::TestNetwork`], so that everything it
//! does to a network (bridge, routes, service device, nft tables, port 53,
//! 6443, 10250) stays in that namespace. kubectl runs in the root namespace
//! and reaches the API on the host's bridge address (the admin kubeconfig
//! names `https://127.0.0.1:6443`, which is the server only inside the
//! namespace: [`NetnsServer::kubectl`] passes `--server`).
//!
//! Drop SIGKILLs the server's process group, then runs `rkube killall` for
//! its data dir inside the namespace (the managed containerd, which runs in
//! a session of its own and outlives the server, shims, mounts, pod logs,
//! the node's cgroup parent and network); the namespace itself goes with
//! the [`super::netns::TestNetwork`], which must outlive this server.

use std::fs::File;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::netns::NetnsHost;

/// The API port inside the namespace (`rkube server`'s default).
pub const DEFAULT_HTTPS_PORT: u16 = 6443;

/// A `rkube server` running inside a network namespace (see the module docs).
pub struct NetnsServer {
    child: Option<Child>,
    netns_path: PathBuf,
    /// The server's `--data-dir`.
    pub data_dir: PathBuf,
    /// The node its agent registers (`--node-name`).
    pub node: String,
    /// The host's address on the test bridge (the advertise address and node IP).
    pub ip: Ipv4Addr,
    /// The API port.
    pub port: u16,
    log: PathBuf,
    kubectl_cache: tempfile::TempDir,
}

impl NetnsServer {
    /// Starts `nsenter --net=<host> rkube server --data-dir <data_dir>
    /// --node-name <node> <args>`; stderr (the server's log) goes to `log`.
    /// Does not wait: see [`Self::wait_ready`].
    pub fn start(host: &NetnsHost, node: &str, data_dir: &Path, args: &[String], log: &Path) -> NetnsServer {
        use std::os::unix::process::CommandExt;
        let mut cmd = host.command(super::RKUBE);
        cmd.arg("server").arg("--data-dir").arg(data_dir).arg("--node-name").arg(node).args(args);
        let stderr = File::options().create(true).append(true).open(log).expect("open the server log");
        cmd.stdout(Stdio::null()).stderr(stderr).stdin(Stdio::null()).process_group(0);
        let child = super::etcd::spawn_tied_to_this_process(cmd).expect("spawn rkube server under nsenter");
        let port = args
            .iter()
            .position(|a| a == "--https-port")
            .and_then(|i| args.get(i + 1))
            .and_then(|p| p.parse().ok())
            .unwrap_or(DEFAULT_HTTPS_PORT);
        NetnsServer {
            child: Some(child),
            netns_path: host.path(),
            data_dir: data_dir.to_path_buf(),
            node: node.to_string(),
            ip: host.ip,
            port,
            log: log.to_path_buf(),
            kubectl_cache: tempfile::tempdir().expect("kubectl cache dir"),
        }
    }

    /// The server's log so far.
    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `https://<host ip>:<port>`.
    pub fn url(&self) -> String {
        format!("https://{}:{}", self.ip, self.port)
    }

    /// `<data-dir>/admin.kubeconfig`.
    pub fn kubeconfig(&self) -> PathBuf {
        self.data_dir.join("admin.kubeconfig")
    }

    /// The managed containerd's socket (for `ctr --address`).
    pub fn containerd_socket(&self) -> PathBuf {
        rkube_kubelet::containerd::RuntimePaths::new(&self.data_dir).socket
    }

    /// The kubectl command (root namespace) with the admin kubeconfig,
    /// `--server` on the host's bridge address and a private cache dir.
    pub fn kubectl_command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(super::KUBECTL);
        cmd.arg("--kubeconfig")
            .arg(self.kubeconfig())
            .arg("--server")
            .arg(self.url())
            .arg("--cache-dir")
            .arg(self.kubectl_cache.path())
            .args(args)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null());
        cmd
    }

    /// Runs kubectl (see [`Self::kubectl_command`]) to completion.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_command(args).output().expect("run kubectl")
    }

    /// Waits until the server logged its ready line and `/readyz` answers
    /// `ok` through kubectl from the root namespace; Err with what was seen
    /// last, or when the server exits.
    pub fn wait_ready(&mut self, timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        let mut last = String::from("no answer yet");
        while Instant::now() < deadline {
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                return Err(format!("rkube server exited early with {status}"));
            }
            if self.kubeconfig().exists() && self.logs().contains("rkube is ready") {
                let out = self.kubectl(&["get", "--raw", "/readyz"]);
                if out.status.success() && out.stdout == b"ok" {
                    return Ok(());
                }
                last = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Err(format!("not ready within {timeout:?}; last answer: {last}"))
    }

    /// SIGTERM, then up to `grace` for the exit (SIGKILL to the group after).
    pub fn stop(&mut self, grace: Duration) {
        let Some(mut child) = self.child.take() else { return };
        // SAFETY: kill(2) on our child (nsenter execs rkube, so the pid is the server's).
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + grace;
        while child.try_wait().ok().flatten().is_none() {
            if Instant::now() > deadline {
                // SAFETY: kill(2) on the group our child leads.
                unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                let _ = child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for NetnsServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: kill(2) on the group our child leads.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
        }
        // `rkube killall` inside the namespace: its network cleanup (bridge, routes,
        // service device, nft tables) must act on the namespace, not on the root one.
        let out = Command::new("nsenter")
            .arg(format!("--net={}", self.netns_path.display()))
            .arg("--")
            .arg(super::RKUBE)
            .arg("killall")
            .arg("--data-dir")
            .arg(&self.data_dir)
            .arg("--node-name")
            .arg(&self.node)
            .stdin(Stdio::null())
            .output();
        match out {
            Ok(o) if o.status.success() => {}
            Ok(o) => eprintln!(
                "rkube killall --data-dir {}: {}",
                self.data_dir.display(),
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(e) => eprintln!("rkube killall --data-dir {}: {e}", self.data_dir.display()),
        }
    }
}
