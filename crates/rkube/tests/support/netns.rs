//! Test hosts in network namespaces on one machine: a bridge in the root
//! namespace holding `172.31.X.1/24` (the server's address), and one
//! network namespace per host joined to it by a veth pair (`eth0`,
//! `172.31.X.<10+i>/24`, no default route). Node agents run inside with
//! `nsenter --net` (sharing the machine's mount namespace, so cgroups and
//! containerd's mounts work as on a real host). Everything the network
//! reaches is the test's own: the bridge, its namespaces and loopback.
//! Drop removes the namespaces (and with them every route, link and nft
//! table made inside) and the bridge.

use std::fs::File;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The bridge and its hosts.
pub struct TestNetwork {
    bridge: String,
    /// The server's address on the bridge (`172.31.X.1`).
    pub gateway: Ipv4Addr,
    /// The hosts, in creation order.
    pub hosts: Vec<NetnsHost>,
}

/// One host: a network namespace with `eth0` on the bridge.
pub struct NetnsHost {
    /// The namespace's name (`ip netns`).
    pub netns: String,
    /// Its address on the bridge.
    pub ip: Ipv4Addr,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(out.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
}

impl TestNetwork {
    /// Creates the bridge and `hosts` namespaces on a `172.31.X.0/24` no
    /// interface or route of this machine uses yet.
    pub fn create(hosts: usize) -> TestNetwork {
        let pid = std::process::id();
        let taken = {
            let a = Command::new("ip").args(["-o", "-4", "addr"]).output().unwrap().stdout;
            let r = Command::new("ip").args(["-4", "route", "show", "table", "all"]).output().unwrap().stdout;
            format!("{} {}", String::from_utf8_lossy(&a), String::from_utf8_lossy(&r))
        };
        let x = (0..250u32)
            .map(|i| 1 + (pid + i) % 250)
            .find(|x| !taken.contains(&format!("172.31.{x}.")))
            .expect("a free 172.31.X.0/24");
        let bridge = format!("rkt{:x}", pid % 0xffffff);
        let gateway = Ipv4Addr::new(172, 31, x as u8, 1);
        let mut net = TestNetwork { bridge: bridge.clone(), gateway, hosts: Vec::new() };
        ip(&["link", "add", &bridge, "type", "bridge"]);
        ip(&["addr", "add", &format!("{gateway}/24"), "dev", &bridge]);
        ip(&["link", "set", &bridge, "up"]);
        for i in 0..hosts {
            let netns = format!("rkt-{pid}-{i}");
            let host_ip = Ipv4Addr::new(172, 31, x as u8, 10 + i as u8);
            ip(&["netns", "add", &netns]);
            net.hosts.push(NetnsHost { netns: netns.clone(), ip: host_ip });
            let veth = format!("{bridge}v{i}");
            ip(&["link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &netns]);
            ip(&["link", "set", &veth, "master", &bridge, "up"]);
            ip(&["-n", &netns, "addr", "add", &format!("{host_ip}/24"), "dev", "eth0"]);
            ip(&["-n", &netns, "link", "set", "eth0", "up"]);
            ip(&["-n", &netns, "link", "set", "lo", "up"]);
        }
        net
    }

    /// The bridge's name.
    pub fn bridge(&self) -> &str {
        &self.bridge
    }
}

impl NetnsHost {
    /// `/var/run/netns/<name>`.
    pub fn path(&self) -> PathBuf {
        Path::new("/var/run/netns").join(&self.netns)
    }

    /// A command run inside this host's network namespace.
    pub fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new("nsenter");
        cmd.arg(format!("--net={}", self.path().display())).arg("--").arg(program);
        cmd
    }

    /// Runs `program args` inside the namespace and returns its output.
    pub fn run(&self, program: &str, args: &[&str]) -> Output {
        self.command(program).args(args).output().expect("run nsenter")
    }
}

impl Drop for TestNetwork {
    fn drop(&mut self) {
        for h in &self.hosts {
            let _ = Command::new("ip").args(["netns", "del", &h.netns]).output();
        }
        let _ = Command::new("ip").args(["link", "del", &self.bridge]).output();
    }
}

/// A `rkube agent` running inside a [`NetnsHost`]; on drop it is killed
/// with its process group and its host state is removed (the managed
/// containerd, which runs in a session of its own and outlives the agent,
/// its shims and mounts, pod logs, the node's cgroup parent).
pub struct NetnsAgent {
    child: Option<Child>,
    data_dir: PathBuf,
    node: String,
    log: PathBuf,
}

impl NetnsAgent {
    /// Starts `rkube agent <args> --data-dir <data_dir>` in `host`; its
    /// stderr goes to `log`.
    pub fn start(host: &NetnsHost, node: &str, args: &[String], data_dir: &Path, log: &Path) -> NetnsAgent {
        use std::os::unix::process::CommandExt;
        let mut cmd = host.command(super::RKUBE);
        cmd.arg("agent").args(args).arg("--data-dir").arg(data_dir);
        let stderr = File::options().create(true).append(true).open(log).unwrap();
        cmd.stdout(Stdio::null()).stderr(stderr).stdin(Stdio::null()).process_group(0);
        let child = super::etcd::spawn_tied_to_this_process(cmd).expect("spawn rkube agent");
        NetnsAgent {
            child: Some(child),
            data_dir: data_dir.to_path_buf(),
            node: node.to_string(),
            log: log.to_path_buf(),
        }
    }

    /// The agent's log so far.
    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM, then up to 45 s for the exit (SIGKILL to the group after).
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else { return };
        // SAFETY: kill(2) on our child (nsenter execs rkube, so the pid is the agent's).
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(45);
        while child.try_wait().unwrap().is_none() {
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

impl Drop for NetnsAgent {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: kill(2) on the group our child leads.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
        }
        // Shims left running hold their pods' namespaces: kill them before the netns goes.
        rkube_kubelet::containerd::teardown_node(&self.data_dir);
        rkube_kubelet::host::remove_cgroup_tree(&format!("rkube-{}", self.node));
    }
}
