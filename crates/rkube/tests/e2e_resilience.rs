//! Resilience of a one-node cluster (issue 9, item 6), with real
//! containers: `rkube server` with its agent, scheduler and controllers,
//! driven with the real kubectl.
//!
//! - SIGTERM of the server leaves the managed containerd and the pods'
//!   containers running; a restart on the same data dir adopts that
//!   containerd (same process) and resumes the pods with their state: same
//!   pod UIDs, same container IDs and processes, restart counts unchanged,
//!   Ready again, no second copy of any container or sandbox.
//! - kill -9 of the server in the middle of a rolling update (`kubectl set
//!   image`), then a restart: `kubectl rollout status` completes, every
//!   pod runs the new template and the old ReplicaSet is scaled to 0
//!   (conformance "Deployment RollingUpdate": old pods are deleted and new
//!   ones created), on the embedded store and on etcd.
//! - `rkube killall --data-dir` after a run with pods, the server stopped
//!   by SIGTERM or killed by SIGKILL (both leave containerd running),
//!   leaves nothing of that data dir on the host: no containerd (no process
//!   with its `--config`), shim or container process,
//!   no mount under the data dir or containerd's state dir, no pod bridge,
//!   none of the routes, device or nft tables `<data-dir>/agent/network.json`
//!   records, no `rkube-<node>` cgroup.
//!
//! Waits are generous and nothing is timed. Needs root and containerd.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::node::{condition, HostCleanup};
use support::{TestServer, TestServerOptions};

/// How long pods and rollouts get to settle (generous: CI runs tests side by side).
const SETTLE: Duration = Duration::from_secs(240);
/// The second tag of the local busybox image, the rolling update's new image.
const NEW_IMAGE: &str = "docker.io/library/busybox:rollout";
/// A container that ends at once on SIGTERM.
const LOOP: &str = "trap 'exit 0' TERM; while true; do sleep 1; done";

/// A one-node cluster that can be stopped and restarted on the same data dir,
/// ports and ranges; fields drop in order: server, host cleanup, data dir.
struct Node {
    server: Option<TestServer>,
    options: TestServerOptions,
    node: String,
    busybox: String,
    data_dir: PathBuf,
    _cleanup: HostCleanup,
    _tmp: tempfile::TempDir,
}

impl Node {
    /// Builds the local images (and [`NEW_IMAGE`]) into a fresh data dir and
    /// starts the server with its agent on `datastore` (None: SQLite).
    fn start(datastore: Option<String>) -> Node {
        // SAFETY: geteuid has no preconditions.
        assert_eq!(unsafe { libc::geteuid() }, 0, "the node tests run as root (as CI does)");
        rkube_kubelet::host::check_runtime_binaries()
            .unwrap_or_else(|e| panic!("{e}. Run the tests through scripts/test.sh, which installs them."));
        let tmp = tempfile::Builder::new().prefix("rkube-res-").tempdir().unwrap();
        let data_dir = tmp.path().to_path_buf();
        let suffix = data_dir.file_name().unwrap().to_string_lossy().to_lowercase();
        let node: String =
            format!("res-{}", &suffix[10..]).chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
        let cleanup = HostCleanup(data_dir.clone(), node.clone());
        let out = support::run_rkube(
            &["images", "build-local", "--data-dir", &data_dir.to_string_lossy()],
            Duration::from_secs(120),
        );
        assert!(out.status.success(), "rkube images build-local: {}", String::from_utf8_lossy(&out.stderr));
        // The same files under a second name: the agent imports every archive here at start.
        let mut image = rkube_kubelet::images::busybox_image(Path::new(rkube_kubelet::images::HOST_BUSYBOX)).unwrap();
        let busybox = image.reference.clone();
        image.reference = NEW_IMAGE.into();
        rkube_kubelet::images::write_archive(&image, &data_dir.join("agent").join("images")).unwrap();
        // Fixed ports and ranges, so that a restart finds the node as it left it.
        let extra_args: Vec<String> = [
            "--node-name",
            &node,
            "--kubelet-port",
            &support::free_port().to_string(),
            "--cluster-cidr",
            &support::free_cluster_cidr(),
            "--service-cidr",
            &support::free_cluster_cidr(),
            "--cluster-dns-port",
            &support::free_port().to_string(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let options = TestServerOptions {
            agent: true,
            controllers: true,
            scheduler: true,
            data_dir: Some(data_dir.clone()),
            port: Some(support::free_port()),
            datastore_endpoint: datastore,
            extra_args,
            ..Default::default()
        };
        let mut n = Node { server: None, options, node, busybox, data_dir, _cleanup: cleanup, _tmp: tmp };
        n.restart();
        n.wait("the default ServiceAccount", || {
            n.server().kubectl(&["get", "serviceaccount", "default"]).status.success()
        });
        n
    }

    /// Starts the server (again) and waits for the node to be Ready.
    fn restart(&mut self) {
        assert!(self.server.is_none(), "the server is still running");
        self.server = Some(TestServer::start_with(self.options.clone()));
        let node = self.node.clone();
        self.wait("the node to be Ready", || {
            let out = self.server().kubectl(&["get", "node", &node, "-o", "json"]);
            out.status.success()
                && serde_json::from_slice::<Value>(&out.stdout)
                    .is_ok_and(|n| condition(&n, "Ready")["status"] == "True")
        });
    }

    fn server(&self) -> &TestServer {
        self.server.as_ref().expect("the server runs")
    }

    /// SIGTERM and wait for the exit (SIGKILL after 60 s); panics unless it
    /// exited by itself, or unless it logged that it leaves its containerd
    /// running (pid `containerd`).
    fn stop(&mut self, containerd: i32) {
        let mut server = self.server.take().expect("the server runs");
        server.signal(libc::SIGTERM);
        let (status, _) = server.wait_exit(Duration::from_secs(60));
        assert!(status.success(), "rkube server exited with {status} after SIGTERM\n{}", tail(&server.logs()));
        let left = format!("leaving the managed containerd (pid {containerd}) and the pods running");
        wait_log(&server, &left);
        assert!(server.logs().contains("rkube killall --data-dir"), "{}", tail(&server.logs()));
    }

    /// The one `containerd --config <data-dir>/agent/containerd/config.toml` running.
    fn containerd(&self) -> i32 {
        let pids = rkube_kubelet::containerd::managed_containerd_pids(&self.paths());
        assert_eq!(pids.len(), 1, "one managed containerd runs: {pids:?}");
        pids[0]
    }

    fn paths(&self) -> rkube_kubelet::containerd::RuntimePaths {
        rkube_kubelet::containerd::RuntimePaths::new(&self.data_dir)
    }

    /// SIGKILL, and wait for the exit.
    fn kill(&mut self) {
        let mut server = self.server.take().expect("the server runs");
        server.signal(libc::SIGKILL);
        server.wait_exit(Duration::from_secs(30));
    }

    /// Polls `f` every 500 ms for up to [`SETTLE`]; panics with the pods and logs.
    fn wait(&self, what: &str, mut f: impl FnMut() -> bool) {
        let deadline = Instant::now() + SETTLE;
        while Instant::now() < deadline {
            if f() {
                return;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        let (pods, logs) = match &self.server {
            Some(s) => {
                let out = s.kubectl(&["get", "pods,rs,deploy", "-o", "wide"]);
                (String::from_utf8_lossy(&out.stdout).into_owned(), tail(&s.logs()))
            }
            None => (String::new(), String::new()),
        };
        panic!("timed out waiting for {what}\n--- objects ---\n{pods}\n--- server ---\n{logs}");
    }

    /// The pods labelled `app=<app>`.
    fn pods(&self, app: &str) -> Vec<Value> {
        let list = self.server().get_json(&["pods", "-l", &format!("app={app}")]);
        list["items"].as_array().cloned().unwrap_or_default()
    }

    /// A Deployment of `replicas` busybox loops labelled `app=<name>`.
    fn deployment(&self, name: &str, replicas: u32, strategy: Value, min_ready: u32) {
        self.server().create(&json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name},
            "spec": {
                "replicas": replicas,
                "minReadySeconds": min_ready,
                "strategy": strategy,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {
                        "terminationGracePeriodSeconds": 1,
                        "containers": [{"name": "main", "image": self.busybox,
                            "command": ["sh", "-c", LOOP]}]
                    }
                }
            }
        }));
    }

    /// Waits until the `app` pods are exactly `n`, all Ready and none terminating.
    fn wait_ready_pods(&self, app: &str, n: usize) -> Vec<Value> {
        self.wait(&format!("{n} Ready {app} pods"), || {
            let pods = self.pods(app);
            pods.len() == n && pods.iter().all(|p| is_ready(p) && p["metadata"]["deletionTimestamp"].is_null())
        });
        self.pods(app)
    }

    /// `ctr` against the managed containerd, in the CRI namespace.
    fn ctr(&self, args: &[&str]) -> String {
        let socket = rkube_kubelet::containerd::RuntimePaths::new(&self.data_dir).socket;
        let out = Command::new("ctr")
            .arg("--address")
            .arg(&socket)
            .args(["-n", "k8s.io"])
            .args(args)
            .output()
            .expect("run ctr");
        assert!(out.status.success(), "ctr {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// containerd's tasks (containers and sandboxes) with their process ids.
    fn tasks(&self) -> BTreeMap<String, i32> {
        self.ctr(&["tasks", "ls"])
            .lines()
            .skip(1)
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let (id, pid, status) = (f.next()?, f.next()?.parse().ok()?, f.next()?);
                (status == "RUNNING").then(|| (id.to_string(), pid))
            })
            .collect()
    }

    /// Every container containerd keeps (sandboxes included).
    fn containers(&self) -> BTreeSet<String> {
        self.ctr(&["containers", "ls", "-q"]).lines().map(str::to_string).collect()
    }
}

/// Waits (up to 30 s: the log is read by a thread) until the server's log contains `line`.
fn wait_log(server: &TestServer, line: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !server.logs().contains(line) {
        assert!(Instant::now() < deadline, "the server did not log {line:?}\n{}", tail(&server.logs()));
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(80)..].join("\n")
}

fn is_ready(pod: &Value) -> bool {
    condition(pod, "Ready")["status"] == "True"
}

/// Whether process `pid` exists and is not a zombie.
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, rest)| !rest.trim_start().starts_with('Z')))
        .unwrap_or(false)
}

/// What identifies a pod's state: (uid, node, [(container, containerID, restartCount)]).
fn pod_state(pod: &Value) -> (String, String, Vec<(String, String, i64)>) {
    let statuses = pod["status"]["containerStatuses"].as_array().cloned().unwrap_or_default();
    (
        pod["metadata"]["uid"].as_str().unwrap_or("").to_string(),
        pod["spec"]["nodeName"].as_str().unwrap_or("").to_string(),
        statuses
            .iter()
            .map(|s| {
                (
                    s["name"].as_str().unwrap_or("").to_string(),
                    s["containerID"].as_str().unwrap_or("").to_string(),
                    s["restartCount"].as_i64().unwrap_or(-1),
                )
            })
            .collect(),
    )
}

/// The pods by name with their [`pod_state`].
fn states(pods: &[Value]) -> BTreeMap<String, (String, String, Vec<(String, String, i64)>)> {
    pods.iter().map(|p| (p["metadata"]["name"].as_str().unwrap().to_string(), pod_state(p))).collect()
}

#[test]
fn sigterm_leaves_the_pods_running_and_a_restart_resumes_them_intact() {
    let mut n = Node::start(None);
    n.deployment("keep", 3, json!({"type": "RollingUpdate"}), 0);
    let before = n.wait_ready_pods("keep", 3);
    let before_states = states(&before);
    let tasks = n.tasks();
    let containers = n.containers();
    // Each pod's container (and sandbox) is a task with a process.
    for (_, (_, _, statuses)) in &before_states {
        for (_, id, restarts) in statuses {
            let id = id.trim_start_matches("containerd://");
            assert!(tasks.contains_key(id), "container {id} is no running task: {tasks:?}");
            assert_eq!(*restarts, 0);
        }
    }

    let containerd = n.containerd();

    n.stop(containerd);
    // containerd and the containers outlive the server.
    assert!(alive(containerd), "containerd (pid {containerd}) stopped with the server");
    assert_eq!(n.containerd(), containerd);
    for (id, pid) in &tasks {
        assert!(alive(*pid), "task {id} (pid {pid}) died with the server");
    }

    n.restart();
    // The restarted server adopted that containerd: the same process, not a restart.
    let adopting = format!("adopting the managed containerd (pid {containerd}) left running by the previous rkube");
    wait_log(n.server(), &adopting);
    assert!(alive(containerd), "the adopted containerd (pid {containerd}) is gone");
    assert_eq!(n.containerd(), containerd, "containerd was restarted instead of adopted");
    assert!(!n.server().logs().contains("starting the managed containerd"), "{}", tail(&n.server().logs()));
    // The same pods come back Ready, with the same containers and processes, none restarted.
    n.wait("the pods Ready again after the restart", || {
        let pods = n.pods("keep");
        pods.len() == 3 && pods.iter().all(is_ready)
    });
    let after = n.pods("keep");
    assert_eq!(states(&after), before_states, "pods after the restart differ");
    assert_eq!(n.tasks(), tasks, "containerd's tasks after the restart differ");
    assert_eq!(n.containers(), containers, "containerd keeps other containers after the restart");
    // Nothing was recreated: the ReplicaSet is the same and created no pod since.
    let rs = n.server().get_json(&["rs", "-l", "app=keep"]);
    assert_eq!(rs["items"].as_array().unwrap().len(), 1, "{rs}");
    // The restarted controllers act on the resumed state: a scale-up adds one pod.
    n.server().kubectl_ok(&["scale", "deployment/keep", "--replicas=4"]);
    n.wait_ready_pods("keep", 4);
    n.wait("the ReplicaSet to count 4 ready replicas", || {
        let rs = n.server().get_json(&["rs", "-l", "app=keep"]);
        rs["items"][0]["status"]["readyReplicas"] == 4
    });
    assert_eq!(n.containerd(), containerd, "the adopted containerd is still the one running");
}

/// kill -9 of the server while a rolling update is under way, a restart, and
/// the rollout completes. Conformance "Deployment RollingUpdate".
fn rollout_survives_a_server_kill(datastore: Option<String>) {
    let mut n = Node::start(datastore);
    // One pod at a time, each held back 5 s by minReadySeconds: a rollout of several seconds.
    let strategy = json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}});
    n.deployment("roll", 4, strategy, 5);
    n.wait_ready_pods("roll", 4);
    n.wait("the first rollout to complete", || {
        let d = n.server().get_json(&["deployment", "roll"]);
        d["status"]["availableReplicas"] == 4 && d["status"]["updatedReplicas"] == 4
    });
    n.server().kubectl_ok(&["set", "image", "deployment/roll", &format!("main={NEW_IMAGE}")]);
    n.wait("the rollout to be under way", || {
        let d = n.server().get_json(&["deployment", "roll"]);
        d["status"]["observedGeneration"] == 2 && d["status"]["updatedReplicas"].as_i64().unwrap_or(0) >= 1
    });
    let d = n.server().get_json(&["deployment", "roll"]);
    assert!(d["status"]["updatedReplicas"].as_i64().unwrap() < 4, "the rollout ended before the kill: {}", d["status"]);

    n.kill();
    n.restart();
    let out = n.server().kubectl(&["rollout", "status", "deployment/roll", "--timeout=240s"]);
    if !out.status.success() {
        let objects = n.server().kubectl(&["get", "pods,rs,deploy", "-o", "yaml"]);
        panic!(
            "kubectl rollout status: {}{}\n--- objects ---\n{}\n--- server ---\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&objects.stdout),
            tail(&n.server().logs())
        );
    }
    assert!(String::from_utf8_lossy(&out.stdout).contains("successfully rolled out"));
    // Every pod runs the new template; the old ReplicaSet has none left.
    let pods = n.wait_ready_pods("roll", 4);
    for p in &pods {
        assert_eq!(p["spec"]["containers"][0]["image"], NEW_IMAGE, "{p}");
    }
    n.wait("the old ReplicaSet at 0", || {
        let rs = n.server().get_json(&["rs", "-l", "app=roll"]);
        let items = rs["items"].as_array().unwrap();
        items.len() == 2
            && items.iter().all(|r| {
                let new = r["spec"]["template"]["spec"]["containers"][0]["image"] == NEW_IMAGE;
                let want = if new { 4 } else { 0 };
                r["spec"]["replicas"] == want && r["status"]["replicas"] == want
            })
    });
    let d = n.server().get_json(&["deployment", "roll"]);
    assert_eq!(d["status"]["updatedReplicas"], 4, "{}", d["status"]);
    assert_eq!(d["status"]["replicas"], 4, "{}", d["status"]);
    assert_eq!(d["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "2", "{d}");
}

#[test]
fn a_rolling_update_completes_after_the_server_is_killed_mid_rollout() {
    rollout_survives_a_server_kill(None);
}

#[test]
fn a_rolling_update_completes_after_the_server_is_killed_mid_rollout_on_etcd() {
    let etcd = support::etcd::EtcdProcess::start().unwrap_or_else(|e| panic!("{e}"));
    let endpoint = format!("etcd://{}", etcd.endpoint().trim_start_matches("http://"));
    rollout_survives_a_server_kill(Some(endpoint));
    drop(etcd);
}

/// What `<data-dir>/agent/network.json` records (the fields this test reads).
fn network_record(data_dir: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(data_dir.join("agent/network.json")).ok()?).ok()
}

fn run(program: &str, args: &[&str]) -> std::process::Output {
    Command::new(program).args(args).output().unwrap_or_else(|e| panic!("run {program}: {e}"))
}

#[test]
fn killall_removes_every_process_mount_interface_route_table_and_cgroup_of_the_data_dir() {
    killall_after(|n, containerd| n.stop(containerd));
}

/// The same after kill -9 of the server, which leaves containerd running too.
#[test]
fn killall_after_a_server_kill_stops_the_orphaned_containerd_and_removes_everything() {
    killall_after(|n, _| n.kill());
}

/// Runs a node with pods, ends the server with `stop` (given the
/// containerd's pid), checks containerd and the containers outlived it, and
/// that `rkube killall` removes everything of the data dir.
fn killall_after(stop: impl FnOnce(&mut Node, i32)) {
    let mut n = Node::start(None);
    n.deployment("gone", 2, json!({"type": "RollingUpdate"}), 0);
    n.wait_ready_pods("gone", 2);
    let tasks = n.tasks();
    assert!(!tasks.is_empty());
    let record = network_record(&n.data_dir).expect("the agent records its network in agent/network.json");
    let containerd = n.containerd();
    stop(&mut n, containerd);
    assert!(alive(containerd), "containerd (pid {containerd}) stopped with the server");
    for (id, pid) in &tasks {
        assert!(alive(*pid), "task {id} (pid {pid}) died with the server");
    }

    let dd = n.data_dir.to_string_lossy().into_owned();
    let out = support::run_rkube(&["killall", "--data-dir", &dd], Duration::from_secs(120));
    assert!(out.status.success(), "rkube killall: {}", String::from_utf8_lossy(&out.stderr));

    // No containerd, shim or container process of this data dir.
    assert!(!alive(containerd), "containerd (pid {containerd}) survived killall");
    assert_eq!(rkube_kubelet::containerd::managed_containerd_pids(&n.paths()), Vec::<i32>::new());
    let paths = n.paths();
    let marks = [dd.clone(), paths.state.to_string_lossy().into_owned(), paths.config.to_string_lossy().into_owned()];
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else { continue };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        assert!(
            !(alive(pid) && marks.iter().any(|m| cmdline.contains(m.as_str()))),
            "process {pid} of the data dir survived killall: {cmdline}"
        );
    }
    for (id, pid) in &tasks {
        assert!(!alive(*pid), "container {id} (pid {pid}) survived killall");
    }
    // No mount under the data dir or containerd's state dir.
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    for line in mountinfo.lines() {
        let target = line.split(' ').nth(4).unwrap_or("");
        assert!(!marks[..2].iter().any(|m| target.starts_with(m.as_str())), "mount {target} survived killall");
    }
    // No pod bridge.
    let bridge = rkube_kubelet::agent::cni::bridge_name(&n.data_dir);
    assert!(!run("ip", &["link", "show", &bridge]).status.success(), "the pod bridge {bridge} survived killall");
    // None of the recorded routes, device and nft tables.
    let routes = String::from_utf8_lossy(&run("ip", &["-4", "route", "show", "table", "all"]).stdout).into_owned();
    for cidr in [&record["names"]["cluster_cidr"], &record["names"]["service_cidr"]] {
        let cidr = cidr.as_str().expect("a recorded CIDR");
        assert!(!routes.contains(cidr), "a route to {cidr} survived killall:\n{routes}");
    }
    let device = record["names"]["service_device"].as_str().expect("a recorded device");
    assert!(!run("ip", &["link", "show", device]).status.success(), "the device {device} survived killall");
    let tables = String::from_utf8_lossy(&run("nft", &["list", "tables"]).stdout).into_owned();
    for table in [&record["names"]["table"], &record["proxy_table"], &record["netpol_table"]] {
        let table = table.as_str().expect("a recorded table");
        assert!(
            !tables.lines().any(|l| l.split_whitespace().last() == Some(table)),
            "nft table {table} survived killall:\n{tables}"
        );
    }
    // No cgroup of the node, in any hierarchy.
    let cgroup = format!("rkube-{}", n.node);
    let mut roots = vec![PathBuf::from("/sys/fs/cgroup")];
    roots.extend(std::fs::read_dir("/sys/fs/cgroup").unwrap().flatten().map(|e| e.path()));
    for root in roots {
        for name in [cgroup.clone(), format!("{cgroup}.slice")] {
            assert!(!root.join(&name).exists(), "cgroup {} survived killall", root.join(&name).display());
        }
    }
}
