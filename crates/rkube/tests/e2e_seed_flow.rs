//! Issue 9, items 1–3, end to end: ONE `rkube server` with only its data
//! dir and node name given (every port, range and component at its
//! default: API on 6443, kubelet on 10250, cluster DNS on port 53 of the
//! advertise address, kube-proxy in nftables mode, the node network, the
//! managed containerd with the images of `rkube images build-local`),
//! driven with the real kubectl as the seeds' walk-through does.
//!
//! To keep the machine's own network namespace untouched, the server runs
//! inside a network namespace of the test (`support::netns::TestNetwork`,
//! one host behind a veth on a test bridge); kubectl runs in the root
//! namespace and reaches the API on the host's bridge address.
//!
//! Checked, as upstream behaves:
//! - item 1: the ready line names the kubeconfig and how to use it, the
//!   printed command works as printed, and the node is Ready;
//! - item 2 (seed 001): `create deployment` → the events ScalingReplicaSet,
//!   SuccessfulCreate, Scheduled, Pulled ("already present on machine"),
//!   Created, Started in that order; `expose` and the Service's DNS name
//!   answering through its ClusterIP from another pod; scale to 5; `set
//!   image` rolls out, `rollout undo` rolls back (revisions 1, 2 → 3);
//!   `logs`, `exec`; a deleted pod is replaced; a killed container process
//!   is restarted; `delete` cleans everything up (pods and containers);
//! - item 3 (seed 002): `api-resources`, `get pods -A -o wide`, `get pods
//!   -n kube-system`, `get events -A`, `events --types=Warning`, `logs
//!   --tail/-f/--since`, `get nodes -o wide`, `describe node`, the node's
//!   lease and the API server's identity lease, `cordon`/`uncordon`,
//!   `drain`.
//!
//! Conformance behaviours it exercises, by upstream testname:
//! "Deployment, completes the lifecycle of a Deployment", "Deployment,
//! completes the scaling of a Deployment subresource" (through `kubectl
//! scale`), "Deployment RollingUpdate", "Replica Set, run basic image",
//! "DNS, services", "Kubectl, logs" (`--tail`, `--since`), "Pods, assigned
//! hostip", "lease API should be available", "Container Runtime, Restart
//! Policy, Pod Phases" (restartPolicy Always restarts a killed container).
//!
//! Needs root, containerd, runc and the CNI plugins.

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::netns::TestNetwork;
use support::netns_server::NetnsServer;

/// How long pods, rollouts and nodes get to settle (generous: tests run side by side on 2 cores).
const SETTLE: Duration = Duration::from_secs(180);
/// The container name `kubectl create deployment --image=…busybox:…` derives from the image.
const CONTAINER: &str = "busybox";

/// The cluster; fields drop in order: the server (killed, then `rkube killall` in its
/// namespace), then the namespace and bridge, then the temporary dir.
struct Seed {
    server: NetnsServer,
    net: TestNetwork,
    busybox: String,
    started: Instant,
    tmp: tempfile::TempDir,
}

impl Seed {
    fn start() -> Seed {
        support::require_root_and_runtime();
        let started = Instant::now();
        let net = TestNetwork::create(1);
        let tmp = tempfile::Builder::new().prefix("rkube-seed-").tempdir().unwrap();
        let data_dir = tmp.path().join("server");
        // Nothing runs yet: build-local leaves the archives the agent imports at start.
        let out = support::run_rkube(
            &["images", "build-local", "--data-dir", data_dir.to_str().unwrap()],
            Duration::from_secs(120),
        );
        assert!(out.status.success(), "rkube images build-local: {}", String::from_utf8_lossy(&out.stderr));
        let version = rkube_kubelet::images::busybox_version(Path::new(rkube_kubelet::images::HOST_BUSYBOX)).unwrap();
        // The node name is the one flag beyond the data dir: the node's cgroup parent
        // (`rkube-<node>`) lives in the machine's shared cgroup tree, so it must not be
        // the hostname another test on this machine may use.
        let node = format!("seed-{}", std::process::id());
        let log = tmp.path().join("server.log");
        // The built-in metrics-server scrapes every 15 s by default; 2 s lets `kubectl top`
        // answer within seconds of the start.
        let args = ["--metric-resolution".to_string(), "2s".to_string()];
        let server = NetnsServer::start(&net.hosts[0], &node, &data_dir, &args, &log);
        let mut seed = Seed { server, net, busybox: format!("docker.io/library/busybox:{version}"), started, tmp };
        if let Err(e) = seed.server.wait_ready(Duration::from_secs(120)) {
            panic!("rkube server did not become ready: {e}\n{}", seed.logs());
        }
        seed
    }

    fn step(&self, what: &str) {
        eprintln!("[{:>6.1}s] {what}", self.started.elapsed().as_secs_f64());
    }

    fn logs(&self) -> String {
        let log = self.server.logs();
        let lines: Vec<&str> = log.lines().collect();
        let routes = self.net.hosts[0].run("ip", &["route"]);
        format!(
            "--- server log (last 80 lines) ---\n{}\n--- ip route (netns) ---\n{}",
            lines[lines.len().saturating_sub(80)..].join("\n"),
            String::from_utf8_lossy(&routes.stdout)
        )
    }

    fn kubectl_out(&self, args: &[&str]) -> Output {
        self.server.kubectl(args)
    }

    /// kubectl that must succeed; its stdout.
    fn k(&self, args: &[&str]) -> String {
        let out = self.kubectl_out(args);
        assert!(
            out.status.success(),
            "kubectl {}: {}{}\n{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.logs()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `kubectl get <args> -o json`.
    fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", "json"]);
        serde_json::from_str(&self.k(&all)).expect("kubectl prints JSON")
    }

    /// Polls `f` every 500 ms for up to [`SETTLE`]; panics with the server's log.
    fn wait(&self, what: &str, mut f: impl FnMut() -> bool) {
        let deadline = Instant::now() + SETTLE;
        while Instant::now() < deadline {
            if f() {
                return;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        panic!("timed out after {SETTLE:?} waiting for {what}\n{}", self.logs());
    }

    /// The demo Deployment's pods (label `app=demo`), without those being deleted.
    fn demo_pods(&self) -> Vec<Value> {
        let list = self.json(&["pods", "-l", "app=demo"]);
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
            .cloned()
            .collect()
    }

    /// Waits until the demo Deployment has `n` Ready pods, all running `image`; returns them.
    fn wait_demo_ready(&self, n: usize, image: &str) -> Vec<Value> {
        let mut pods = Vec::new();
        self.wait(&format!("{n} Ready demo pods running {image}"), || {
            pods = self.demo_pods();
            pods.len() == n
                && pods.iter().all(|p| {
                    p["spec"]["containers"][0]["image"] == image
                        && support::node::condition(p, "Ready")["status"] == "True"
                })
        });
        pods
    }

    /// `kubectl exec <pod> -- sh -c <script>`: (success, stdout + stderr).
    fn exec(&self, pod: &str, script: &str) -> (bool, String) {
        let out = self.kubectl_out(&["exec", pod, "--", "sh", "-c", script]);
        (
            out.status.success(),
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
        )
    }

    /// `ctr -n k8s.io <args>` against the server's managed containerd.
    fn ctr(&self, args: &[&str]) -> String {
        let out = Command::new("ctr")
            .arg("--address")
            .arg(self.server.containerd_socket())
            .args(["-n", "k8s.io"])
            .args(args)
            .output()
            .expect("run ctr");
        assert!(out.status.success(), "ctr {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// A kubectl table as rows of column → cell. Columns start where the header
/// has a word after two or more spaces (headers such as `LAST SEEN` keep
/// their single space); the last column takes the rest of the line.
fn table(out: &str) -> Vec<BTreeMap<String, String>> {
    let mut lines = out.lines();
    let Some(header) = lines.next() else { return Vec::new() };
    let chars: Vec<char> = header.chars().collect();
    let mut starts = vec![0];
    for i in 2..chars.len() {
        if chars[i] != ' ' && chars[i - 1] == ' ' && chars[i - 2] == ' ' {
            starts.push(i);
        }
    }
    let names: Vec<String> = starts
        .iter()
        .enumerate()
        .map(|(n, &s)| {
            let end = starts.get(n + 1).copied().unwrap_or(chars.len());
            chars[s..end].iter().collect::<String>().trim().to_string()
        })
        .collect();
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let c: Vec<char> = l.chars().collect();
            names
                .iter()
                .enumerate()
                .map(|(n, name)| {
                    let s = starts[n].min(c.len());
                    let e = if n + 1 == names.len() { c.len() } else { starts[n + 1].min(c.len()) };
                    (name.clone(), c[s..e].iter().collect::<String>().trim().to_string())
                })
                .collect()
        })
        .collect()
}

/// The host pid of the process named `comm` in the container `id` (found by
/// the container id in the process's cgroup path).
fn host_pid(id: &str, comm: &str) -> Option<i32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let cgroup = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
        let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
        (cgroup.contains(id) && name.trim() == comm).then_some(pid)
    })
}

/// `containerd://<id>` → `<id>`.
fn container_id(pod: &Value) -> String {
    let id = pod["status"]["containerStatuses"][0]["containerID"].as_str().unwrap_or("");
    id.trim_start_matches("containerd://").to_string()
}

/// The upstream event order of seed 001 for one replica.
const SEED_EVENTS: [&str; 6] = ["ScalingReplicaSet", "SuccessfulCreate", "Scheduled", "Pulled", "Created", "Started"];

/// One `rkube server`, the seed walk-through of issue 9 items 1–3 from the
/// first command to the last (a server with containerd takes a while to
/// start, so the steps share it).
#[test]
fn seed_flow_on_one_server_with_its_own_node() {
    let c = Seed::start();
    let node = c.server.node.clone();
    let bb = c.busybox.clone();

    // ---- Item 1: the ready line names the kubeconfig and how to use it.
    c.step("item 1: ready line, kubeconfig, node Ready");
    let kubeconfig = c.server.kubeconfig();
    let kubeconfig = kubeconfig.to_str().unwrap();
    let hint = format!(
        "rkube is ready: kubeconfig written to {kubeconfig}; try: kubectl --kubeconfig {kubeconfig} get --raw /readyz"
    );
    assert!(c.server.logs().contains(&hint), "the ready line names the kubeconfig: {hint}\n{}", c.logs());
    // The printed command, run as printed where the server runs (its kubeconfig names 127.0.0.1).
    let cache = c.tmp.path().join("kubectl-cache");
    let out = c.net.hosts[0]
        .command("kubectl")
        .args(["--kubeconfig", kubeconfig, "--cache-dir", cache.to_str().unwrap(), "get", "--raw", "/readyz"])
        .env_remove("KUBECONFIG")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok", "{}", String::from_utf8_lossy(&out.stderr));
    c.wait("kubectl get nodes to show the node Ready", || {
        let out = c.kubectl_out(&["get", "nodes"]);
        table(&String::from_utf8_lossy(&out.stdout)).iter().any(|r| r["NAME"] == node && r["STATUS"] == "Ready")
    });
    c.wait("the default ServiceAccount", || c.kubectl_out(&["get", "serviceaccount", "default"]).status.success());

    // ---- Item 2: the seed flow.
    c.step("item 2: create deployment");
    let out = c.k(&["create", "deployment", "demo", &format!("--image={bb}"), "--", "httpd", "-f", "-p", "80"]);
    assert_eq!(out.trim(), "deployment.apps/demo created");
    let out = c.k(&["rollout", "status", "deployment/demo", "--timeout=180s"]);
    assert!(out.contains("deployment \"demo\" successfully rolled out"), "{out}");
    let first = c.wait_demo_ready(1, &bb).remove(0);
    let first_pod = first["metadata"]["name"].as_str().unwrap().to_string();
    let rs = first["metadata"]["ownerReferences"][0]["name"].as_str().unwrap().to_string();
    let mut demo_containers = vec![container_id(&first)];
    c.wait("the Started event of the first pod", || {
        let out = c.kubectl_out(&["get", "events", "--field-selector", &format!("involvedObject.name={first_pod}")]);
        String::from_utf8_lossy(&out.stdout).contains("Started")
    });
    check_seed_events(&c, &first_pod, &rs);

    c.step("item 2: expose, DNS name through the ClusterIP");
    let out = c.k(&["expose", "deployment", "demo", "--port", "80"]);
    assert_eq!(out.trim(), "service/demo exposed");
    let cluster_ip = c.json(&["service", "demo"])["spec"]["clusterIP"].as_str().unwrap().to_string();
    c.k(&["run", "client", &format!("--image={bb}"), "--restart=Never", "--", "sleep", "3600"]);
    c.k(&["wait", "--for=condition=Ready", "pod/client", "--timeout=180s"]);
    // "DNS, services": the FQDN resolves to the ClusterIP (busybox's nslookup applies no search list).
    c.wait("demo.default.svc.cluster.local to resolve to the ClusterIP", || {
        let (ok, out) = c.exec("client", "nslookup demo.default.svc.cluster.local");
        ok && out.lines().any(|l| l.starts_with("Address") && l.trim_end().ends_with(&cluster_ip))
    });
    // The short name through the pod's search list, and httpd answering through the ClusterIP:
    // busybox httpd serves its working directory `/`, which has no index, so it answers 404.
    c.wait("http://demo to answer through the ClusterIP", || {
        let (_, out) = c.exec("client", "timeout 5 wget -O- http://demo/ 2>&1");
        out.contains(&format!("Connecting to demo ({cluster_ip}:80)")) && out.contains("404 Not Found")
    });

    c.step("item 2: scale to 5");
    assert_eq!(c.k(&["scale", "deployment", "demo", "--replicas=5"]).trim(), "deployment.apps/demo scaled");
    let pods = c.wait_demo_ready(5, &bb);
    demo_containers.extend(pods.iter().map(container_id));

    c.step("item 2: set image rolls out, rollout undo rolls back");
    let bb2 = "docker.io/library/busybox:seed-v2";
    c.ctr(&["images", "tag", "--force", &bb, bb2]);
    let out = c.k(&["set", "image", "deployment/demo", &format!("{CONTAINER}={bb2}")]);
    assert_eq!(out.trim(), "deployment.apps/demo image updated");
    let out = c.k(&["rollout", "status", "deployment/demo", "--timeout=300s"]);
    assert!(out.contains("deployment \"demo\" successfully rolled out"), "{out}");
    let pods = c.wait_demo_ready(5, bb2);
    demo_containers.extend(pods.iter().map(container_id));
    let revision = |c: &Seed| {
        c.json(&["deployment", "demo"])["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    assert_eq!(revision(&c), "2");
    let revisions = |c: &Seed| -> Vec<String> {
        table(&c.k(&["rollout", "history", "deployment/demo"]).lines().skip(1).collect::<Vec<_>>().join("\n"))
            .iter()
            .map(|r| r["REVISION"].clone())
            .collect()
    };
    assert_eq!(revisions(&c), ["1", "2"]);
    assert_eq!(c.k(&["rollout", "undo", "deployment/demo"]).trim(), "deployment.apps/demo rolled back");
    let out = c.k(&["rollout", "status", "deployment/demo", "--timeout=300s"]);
    assert!(out.contains("deployment \"demo\" successfully rolled out"), "{out}");
    let pods = c.wait_demo_ready(5, &bb);
    demo_containers.extend(pods.iter().map(container_id));
    // Upstream: undoing to revision 1 makes it revision 3 (revision 1 leaves the history).
    assert_eq!(revision(&c), "3");
    assert_eq!(revisions(&c), ["2", "3"]);

    c.step("item 2: logs and exec");
    let pod = pods[0]["metadata"]["name"].as_str().unwrap().to_string();
    assert_eq!(c.k(&["exec", &pod, "--", "hostname"]).trim(), pod, "exec runs in the pod");
    // Written to httpd's own stdout (PID 1), so it lands in the container's log.
    let (ok, out) = c.exec(&pod, "echo hello from the seed > /proc/1/fd/1");
    assert!(ok, "{out}");
    c.wait("kubectl logs to show the line written to the container's stdout", || {
        c.kubectl_out(&["logs", &pod]).stdout == b"hello from the seed\n"
    });
    // `logs deployment/demo` reads one of its pods (httpd -f writes nothing by itself).
    let out = c.k(&["logs", "deployment/demo", "-c", CONTAINER]);
    assert!(out.is_empty() || out == "hello from the seed\n", "logs deployment/demo: {out:?}");

    c.step("item 2: a deleted pod is replaced");
    let before: Vec<String> = pods.iter().map(|p| p["metadata"]["name"].as_str().unwrap().to_string()).collect();
    c.k(&["delete", "pod", &pod, "--wait=false"]);
    c.wait("a replacement for the deleted pod", || {
        let now = c.demo_pods();
        now.len() == 5
            && now.iter().all(|p| support::node::condition(p, "Ready")["status"] == "True")
            && now.iter().any(|p| !before.iter().any(|b| p["metadata"]["name"] == b.as_str()))
            && !now.iter().any(|p| p["metadata"]["name"] == pod.as_str())
    });

    c.step("item 2: a killed container process is restarted");
    let victim = c.demo_pods().remove(0);
    let victim_name = victim["metadata"]["name"].as_str().unwrap().to_string();
    let id = container_id(&victim);
    let pid = host_pid(&id, "httpd").unwrap_or_else(|| panic!("no httpd process of container {id} on the host"));
    // SAFETY: kill(2) on the container's process we just found.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    c.wait("the killed container to be restarted (restartCount 1) and the pod Ready again", || {
        let p = c.json(&["pod", &victim_name]);
        p["status"]["containerStatuses"][0]["restartCount"] == 1
            && support::node::condition(&p, "Ready")["status"] == "True"
    });
    let p = c.json(&["pod", &victim_name]);
    let last = &p["status"]["containerStatuses"][0]["lastState"]["terminated"];
    assert_eq!(last["exitCode"], 137, "the killed process's exit: {}", p["status"]);
    assert_ne!(container_id(&p), id, "a new container runs");
    demo_containers.push(container_id(&p));

    // ---- Item 3: operator commands.
    c.step("item 3: api-resources, get pods -A -o wide, kube-system, events -A");
    let resources = table(&c.k(&["api-resources"]));
    for (name, short, version, namespaced, kind) in [
        ("pods", "po", "v1", "true", "Pod"),
        ("nodes", "no", "v1", "false", "Node"),
        ("events", "ev", "v1", "true", "Event"),
        ("deployments", "deploy", "apps/v1", "true", "Deployment"),
        ("leases", "", "coordination.k8s.io/v1", "true", "Lease"),
    ] {
        assert!(
            resources.iter().any(|r| r["NAME"] == name
                && r["SHORTNAMES"] == short
                && r["APIVERSION"] == version
                && r["NAMESPACED"] == namespaced
                && r["KIND"] == kind),
            "api-resources lists {name}"
        );
    }
    let wide = table(&c.k(&["get", "pods", "-A", "-o", "wide"]));
    let demo_rows: Vec<_> =
        wide.iter().filter(|r| r["NAME"].starts_with("demo-") && r["STATUS"] == "Running").collect();
    assert_eq!(demo_rows.len(), 5, "get pods -A -o wide: {wide:?}");
    for r in &demo_rows {
        assert_eq!(r["NAMESPACE"], "default");
        assert_eq!(r["NODE"], node);
        assert!(r["IP"].starts_with("10.42."), "pod IPs come from the default cluster CIDR: {r:?}");
    }
    let out = c.kubectl_out(&["get", "pods", "-n", "kube-system"]);
    assert!(out.status.success());
    // rkube runs its components in-process and no static pods: nothing to list.
    assert_eq!(String::from_utf8_lossy(&out.stderr).trim(), "No resources found in kube-system namespace.");
    let events = table(&c.k(&["get", "events", "-A"]));
    assert!(
        events
            .iter()
            .any(|r| r["NAMESPACE"] == "default" && r["REASON"] == "Started" && r["OBJECT"].starts_with("pod/demo-")),
        "get events -A: {events:?}"
    );

    c.step("item 3: events --types=Warning (ErrImageNeverPull)");
    c.k(&[
        "run",
        "bad",
        "--image=docker.io/library/busybox:not-on-this-node",
        "--image-pull-policy=Never",
        "--restart=Never",
    ]);
    let mut warnings = Vec::new();
    c.wait("a Warning event ErrImageNeverPull for pod/bad", || {
        warnings = table(&c.k(&["events", "--types=Warning"]));
        warnings.iter().any(|r| r["REASON"] == "ErrImageNeverPull" && r["OBJECT"] == "Pod/bad")
    });
    assert!(warnings.iter().all(|r| r["TYPE"] == "Warning"), "only Warnings: {warnings:?}");
    let bad = warnings.iter().find(|r| r["REASON"] == "ErrImageNeverPull").unwrap();
    assert_eq!(
        bad["MESSAGE"],
        "Container image \"docker.io/library/busybox:not-on-this-node\" is not present with pull policy of Never"
    );

    c.step("item 3: logs --tail, -f, --since");
    c.k(&[
        "run",
        "ticker",
        &format!("--image={bb}"),
        "--restart=Never",
        "--",
        "sh",
        "-c",
        "i=0; while true; do i=$((i+1)); echo line $i; sleep 1; done",
    ]);
    c.wait("ticker to have logged 8 lines", || {
        String::from_utf8_lossy(&c.kubectl_out(&["logs", "ticker"]).stdout).lines().count() >= 8
    });
    // "Kubectl, logs": --tail=1 is the last line; --since keeps only the recent ones.
    let all = c.k(&["logs", "ticker"]);
    let tail = c.k(&["logs", "ticker", "--tail=2"]);
    let tail: Vec<&str> = tail.lines().collect();
    assert_eq!(tail.len(), 2, "--tail=2: {tail:?}");
    let n = |l: &str| l.strip_prefix("line ").and_then(|n| n.parse::<u32>().ok()).unwrap();
    assert_eq!(n(tail[1]), n(tail[0]) + 1, "--tail=2 gives two consecutive lines: {tail:?}");
    assert!(n(tail[1]) >= all.lines().count() as u32, "the last lines: {tail:?} after {all:?}");
    let since = c.k(&["logs", "ticker", "--since=3s"]);
    let since_lines = since.lines().count();
    let all_lines = c.k(&["logs", "ticker"]).lines().count();
    assert!(
        (1..=5).contains(&since_lines) && since_lines < all_lines,
        "--since=3s: {since:?} of {all_lines} lines"
    );
    let day = c.k(&["logs", "ticker", "--since=24h"]).lines().count();
    assert!(day >= all_lines, "--since=24h keeps every line: {day} of {all_lines}");
    let mut follow = c.server.kubectl_command(&["logs", "-f", "ticker", "--tail=0"]);
    let mut follow = follow.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let stdout = follow.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let streamed = rx.recv_timeout(Duration::from_secs(30));
    let _ = follow.kill();
    let _ = follow.wait();
    let streamed = streamed.expect("logs -f streams a new line within 30 s");
    assert!(n(&streamed) > n(tail[1]), "logs -f --tail=0 streams lines written after it started: {streamed}");

    c.step("item 3: get nodes -o wide, describe node, leases");
    let nodes = table(&c.k(&["get", "nodes", "-o", "wide"]));
    let row = nodes.iter().find(|r| r["NAME"] == node).expect("the node's row");
    assert_eq!(row["STATUS"], "Ready");
    assert_eq!(row["INTERNAL-IP"], c.server.ip.to_string());
    let kernel = String::from_utf8(Command::new("uname").arg("-r").output().unwrap().stdout).unwrap();
    assert_eq!(row["KERNEL-VERSION"], kernel.trim());
    let os_release = std::fs::read_to_string("/etc/os-release").unwrap();
    let pretty = os_release.lines().find_map(|l| l.strip_prefix("PRETTY_NAME=")).unwrap().trim_matches('"');
    assert_eq!(row["OS-IMAGE"], pretty);
    assert!(row["CONTAINER-RUNTIME"].starts_with("containerd://"), "{row:?}");
    let describe = c.k(&["describe", "node", &node]);
    for section in ["Conditions:", "Capacity:", "Allocatable:", "Non-terminated Pods:", "Allocated resources:"] {
        assert!(describe.contains(section), "describe node has {section}:\n{describe}");
    }
    assert!(describe.contains("KubeletReady"), "the Ready condition's reason:\n{describe}");
    let non_terminated = describe.lines().find(|l| l.starts_with("Non-terminated Pods:")).unwrap();
    assert!(non_terminated.contains("in total)"), "{non_terminated}");
    assert!(describe.lines().any(|l| l.trim_start().starts_with("default") && l.contains("demo-")), "{describe}");
    let leases = table(&c.k(&["get", "lease", "-n", "kube-node-lease"]));
    assert!(leases.iter().any(|r| r["NAME"] == node && r["HOLDER"] == node), "the node's lease: {leases:?}");
    let api_leases = table(&c.k(&["-n", "kube-system", "get", "lease", "-l", "k8s.io/component=kube-apiserver"]));
    assert_eq!(api_leases.len(), 1, "one API server identity lease: {api_leases:?}");
    assert!(api_leases[0]["NAME"].starts_with("apiserver-"), "{api_leases:?}");

    c.step("item 3: top nodes");
    // metrics.k8s.io through the built-in metrics-server: a row for the node with its usage.
    let mut top = Vec::new();
    c.wait("kubectl top nodes to show the node", || {
        let out = c.kubectl_out(&["top", "nodes"]);
        top = table(&String::from_utf8_lossy(&out.stdout));
        out.status.success() && top.iter().any(|r| r["NAME"] == node)
    });
    let row = top.iter().find(|r| r["NAME"] == node).unwrap();
    let col = |name: &str| row.get(name).cloned().unwrap_or_else(|| panic!("top nodes has {name}: {row:?}"));
    let cpu = col("CPU(cores)");
    let memory = col("MEMORY(bytes)");
    assert!(cpu.ends_with('m') && cpu.trim_end_matches('m').parse::<u64>().is_ok(), "CPU(cores) {cpu}");
    assert!(
        memory.ends_with("Mi") && memory.trim_end_matches("Mi").parse::<u64>().unwrap() > 0,
        "MEMORY(bytes) {memory}"
    );

    c.step("item 3: cordon, a new pod stays Pending, uncordon");
    assert_eq!(c.k(&["cordon", &node]).trim(), format!("node/{node} cordoned"));
    let row = table(&c.k(&["get", "nodes"])).into_iter().find(|r| r["NAME"] == node).unwrap();
    assert_eq!(row["STATUS"], "Ready,SchedulingDisabled");
    c.k(&["run", "pending", &format!("--image={bb}"), "--restart=Never", "--", "sleep", "3600"]);
    c.wait("FailedScheduling for pod/pending", || {
        let out = c.k(&["get", "events", "--field-selector", "involvedObject.name=pending,reason=FailedScheduling", "-o", "json"]);
        let v: Value = serde_json::from_str(&out).unwrap();
        v["items"].as_array().unwrap().iter().any(|e| {
            e["type"] == "Warning"
                && e["message"]
                    == "0/1 nodes are available: 1 node(s) were unschedulable. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
        })
    });
    assert_eq!(c.json(&["pod", "pending"])["status"]["phase"], "Pending");
    assert_eq!(c.k(&["uncordon", &node]).trim(), format!("node/{node} uncordoned"));
    c.wait("pod/pending to run once the node is uncordoned", || {
        c.json(&["pod", "pending"])["status"]["phase"] == "Running"
    });

    c.step("item 3: drain evicts the demo pods; they come back Pending");
    // drain refuses pods no controller manages (without --force): those go first.
    c.k(&["delete", "pod", "client", "bad", "ticker", "pending", "--grace-period=1"]);
    let out = c.kubectl_out(&["drain", &node, "--ignore-daemonsets", "--delete-emptydir-data"]);
    assert!(out.status.success(), "kubectl drain: {}\n{}", String::from_utf8_lossy(&out.stderr), c.logs());
    // (kubectl writes its progress partly to stderr)
    let out = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.contains(&format!("node/{node} cordoned")), "{out}");
    assert!(out.contains(&format!("node/{node} drained")), "{out}");
    assert!(out.contains("evicting pod default/demo-"), "{out}");
    c.wait("5 new demo pods Pending on the drained node", || {
        let pods = c.demo_pods();
        pods.len() == 5 && pods.iter().all(|p| p["status"]["phase"] == "Pending" && p["spec"]["nodeName"].is_null())
    });
    assert_eq!(c.k(&["uncordon", &node]).trim(), format!("node/{node} uncordoned"));
    let pods = c.wait_demo_ready(5, &bb);
    demo_containers.extend(pods.iter().map(container_id));

    c.step("item 2: delete cleans everything up");
    assert_eq!(c.k(&["delete", "deployment", "demo"]).trim(), "deployment.apps \"demo\" deleted");
    assert_eq!(c.k(&["delete", "service", "demo"]).trim(), "service \"demo\" deleted");
    c.wait("no pods left in default", || {
        let out = c.kubectl_out(&["get", "pods"]);
        out.status.success()
            && String::from_utf8_lossy(&out.stderr).trim() == "No resources found in default namespace."
    });
    c.wait("the demo containers gone from containerd", || {
        let left = c.ctr(&["containers", "ls", "-q"]);
        !left.lines().any(|id| demo_containers.iter().any(|d| d == id.trim()))
    });
    let rs_left = c.kubectl_out(&["get", "replicasets"]);
    assert_eq!(String::from_utf8_lossy(&rs_left.stderr).trim(), "No resources found in default namespace.");
    c.step("done");
}

/// `kubectl get events --sort-by=.metadata.creationTimestamp` after the
/// first replica started: ScalingReplicaSet (deployment/demo),
/// SuccessfulCreate (replicaset/<rs>), then Scheduled, Pulled ("already
/// present on machine"), Created and Started (pod/<pod>).
///
/// What is asserted, and why not more: every event is printed once with
/// upstream's message; the printed rows are in creationTimestamp order;
/// the events happened in the seed's order, by the time each recorder took
/// (the `<hex nanoseconds>` of the name `<object>.<hex>` both upstream's
/// recorders and rkube's give an event); and events recorded 2 s or more
/// apart are printed in that order. creationTimestamp has one-second
/// granularity and is stamped when the (asynchronous) write arrives: events
/// of one second tie, and kubectl (a `sort.Sort` over the rows: insertion
/// sort up to 12 rows, unstable beyond) then prints them in the order the
/// API listed them — key order, `pod/…` before `replicaset/…` before
/// `deployment/…` — exactly as kube-apiserver's watch cache lists them.
fn check_seed_events(c: &Seed, pod: &str, rs: &str) {
    let objects = ["deployment/demo".to_string(), format!("replicaset/{rs}"), format!("pod/{pod}")];
    let printed: Vec<(String, String, String)> = {
        let mut seen: Vec<(String, String, String)> = Vec::new();
        for r in table(&c.k(&["get", "events", "--sort-by=.metadata.creationTimestamp"])) {
            if objects.contains(&r["OBJECT"])
                && SEED_EVENTS.contains(&r["REASON"].as_str())
                && !seen.iter().any(|(reason, _, _)| *reason == r["REASON"])
            {
                seen.push((r["REASON"].clone(), r["OBJECT"].clone(), r["MESSAGE"].clone()));
            }
        }
        seen
    };
    let order: Vec<&str> = printed.iter().map(|(r, _, _)| r.as_str()).collect();
    assert_eq!(order.len(), SEED_EVENTS.len(), "every seed event is printed once: {printed:?}");
    let message = |reason: &str| printed.iter().find(|(r, _, _)| r == reason).unwrap().2.clone();
    assert_eq!(message("Pulled"), format!("Container image \"{}\" already present on machine", c.busybox));
    assert_eq!(message("SuccessfulCreate"), format!("Created pod: {pod}"));
    assert_eq!(message("Scheduled"), format!("Successfully assigned default/{pod} to {}", c.server.node));
    assert_eq!(message("ScalingReplicaSet"), format!("Scaled up replica set {rs} from 0 to 1"));
    // Each printed event's creationTimestamp and recorder time (the name's hex nanoseconds).
    let events = c.json(&["events"]);
    let times = |(reason, object, _): &(String, String, String)| -> (String, i128) {
        let e = events["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| {
                let o = &e["involvedObject"];
                e["reason"] == reason.as_str()
                    && format!(
                        "{}/{}",
                        o["kind"].as_str().unwrap_or("").to_lowercase(),
                        o["name"].as_str().unwrap_or("")
                    ) == *object
            })
            .unwrap_or_else(|| panic!("the {reason} event of {object}"));
        let name = e["metadata"]["name"].as_str().unwrap();
        let hex = name.rsplit_once('.').map(|(_, h)| h).unwrap_or("");
        let nanos = i128::from_str_radix(hex, 16).unwrap_or_else(|_| panic!("event name <object>.<hex nanos>: {name}"));
        (e["metadata"]["creationTimestamp"].as_str().unwrap().to_string(), nanos)
    };
    let stamped: Vec<(String, i128)> = printed.iter().map(times).collect();
    assert!(stamped.windows(2).all(|w| w[0].0 <= w[1].0), "printed in creationTimestamp order: {order:?} {stamped:?}");
    let mut by_recorder: Vec<(&str, i128)> = order.iter().zip(&stamped).map(|(r, (_, n))| (*r, *n)).collect();
    by_recorder.sort_by_key(|(_, n)| *n);
    assert_eq!(
        by_recorder.iter().map(|(r, _)| *r).collect::<Vec<_>>(),
        SEED_EVENTS,
        "the seed's events happened in its order: {by_recorder:?}"
    );
    let at = |reason: &str| by_recorder.iter().find(|(r, _)| *r == reason).unwrap().1;
    let pos = |reason: &str| order.iter().position(|r| *r == reason).unwrap();
    for (i, a) in SEED_EVENTS.iter().enumerate() {
        for b in &SEED_EVENTS[i + 1..] {
            if at(b) - at(a) >= 2_000_000_000 {
                assert!(pos(a) < pos(b), "{a} is printed before {b}, recorded 2 s or more later: {order:?}");
            }
        }
    }
    eprintln!("        printed by creationTimestamp: {order:?}; stamps: {stamped:?}");
}
