//! `rkube agent --server URL --token TOKEN` against the real `rkube
//! server` (control plane only, every controller), checked with the real
//! kubectl: the joined node registers through the bootstrap flow (CA
//! discovery, client CSR approved as `nodeclient`, serving CSR approved for
//! the node's own names and addresses), becomes Ready with a podCIDR, has
//! no control-plane role, renews its Lease, and reuses its certificates
//! after a restart. Bad tokens and unreachable servers fail clearly.
//! Needs root and containerd, as the in-server agent's tests.

mod support;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{TestServer, TestServerOptions};

const NODE: &str = "joiner";

/// A `rkube agent` child process; on drop it is killed and `rkube killall`
/// stops its containerd (in a session of its own) and removes its host state.
struct AgentProcess {
    child: Option<Child>,
    data_dir: PathBuf,
    log: PathBuf,
}

impl AgentProcess {
    fn start(args: &[String], data_dir: &Path, log: &Path) -> AgentProcess {
        use std::os::unix::process::CommandExt;
        let mut cmd = Command::new(support::RKUBE);
        cmd.arg("agent").args(args).arg("--data-dir").arg(data_dir);
        let stderr = File::options().create(true).append(true).open(log).unwrap();
        cmd.stdout(Stdio::null()).stderr(stderr).stdin(Stdio::null()).process_group(0);
        let child = support::etcd::spawn_tied_to_this_process(cmd).expect("spawn rkube agent");
        AgentProcess { child: Some(child), data_dir: data_dir.to_path_buf(), log: log.to_path_buf() }
    }

    fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM, then waits up to 45 s for the exit.
    fn stop(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        // SAFETY: kill(2) on our child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(45);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                // SAFETY: kill(2) on the group our child leads.
                unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                let _ = child.wait();
                panic!("rkube agent did not stop within 45s after SIGTERM\n{}", self.logs());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: kill(2) on the group our child leads.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
        }
        support::node::teardown_host(&self.data_dir);
        rkube_kubelet::host::remove_cgroup_tree(&format!("rkube-{NODE}"));
    }
}

fn token_create(server: &TestServer) -> String {
    let kubeconfig = server.kubeconfig();
    let out = support::run_rkube(
        &["token", "create", "--kubeconfig", kubeconfig.to_str().unwrap(), "--description", "agent_join test"],
        Duration::from_secs(30),
    );
    assert!(out.status.success(), "rkube token create: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn json(server: &TestServer, args: &[&str]) -> Value {
    server.get_json(args)
}

fn condition_status(obj: &Value, type_: &str) -> String {
    obj["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .and_then(|c| c["status"].as_str())
        .unwrap_or("")
        .to_string()
}

/// The CSRs of `signer` as JSON.
fn csrs(server: &TestServer, signer: &str) -> Vec<Value> {
    let list = json(server, &["csr"]);
    list["items"].as_array().unwrap().iter().filter(|c| c["spec"]["signerName"] == signer).cloned().collect()
}

/// The agent's flags; it shares this machine's network namespace with other
/// tests, so it gets the server's pod range, a Service range of its own, and
/// no kube-proxy or NetworkPolicy hooks (tests/network_multinode.rs runs those).
fn agent_args(server: &TestServer, token: &str, kubelet_port: u16, cluster_cidr: &str) -> Vec<String> {
    let service_cidr = support::free_cluster_cidr();
    [
        "--server",
        &format!("https://127.0.0.1:{}", server.port()),
        "--token",
        token,
        "--node-name",
        NODE,
        "--node-ip",
        "127.0.0.1",
        "--kubelet-port",
        &kubelet_port.to_string(),
        "--node-labels",
        "pool=joined",
        "--cluster-cidr",
        cluster_cidr,
        "--service-cidr",
        &service_cidr,
        "--disable-kube-proxy",
        "--disable-network-policy",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[test]
fn an_agent_joins_with_a_token_gets_approved_certificates_and_its_node_becomes_ready() {
    support::require_root_and_runtime();
    // A pod range of its own: the joined node's pods get a bridge on this host.
    let cidr = support::free_cluster_cidr();
    let server = TestServer::start_with(TestServerOptions {
        controllers: true,
        scheduler: true,
        extra_args: vec!["--cluster-cidr".into(), cidr.clone()],
        ..Default::default()
    });
    let token = token_create(&server);
    let token_id = token.split("::").nth(1).unwrap().split('.').next().unwrap().to_string();
    let tmp = tempfile::Builder::new().prefix("rkube-agent-").tempdir().unwrap();
    let data_dir = tmp.path().join("data");
    // The local busybox, imported by the agent's containerd when it starts.
    let out = support::run_rkube(
        &["images", "build-local", "--data-dir", &data_dir.to_string_lossy()],
        Duration::from_secs(120),
    );
    assert!(out.status.success(), "rkube images build-local: {}", String::from_utf8_lossy(&out.stderr));
    let log = tmp.path().join("agent.log");
    let kubelet_port = support::free_port();
    let args = agent_args(&server, &token, kubelet_port, &cidr);
    let mut agent = AgentProcess::start(&args, &data_dir, &log);

    let mut node = Value::Null;
    let ready = |node: &mut Value| {
        let out = server.kubectl(&["get", "node", NODE, "-o", "json"]);
        out.status.success() && {
            *node = serde_json::from_slice(&out.stdout).unwrap();
            condition_status(node, "Ready") == "True"
        }
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while !ready(&mut node) {
        assert!(
            Instant::now() < deadline,
            "node {NODE} not Ready\n--- agent ---\n{}\n--- server ---\n{}",
            agent.logs(),
            server.logs()
        );
        if let Some(child) = agent.child.as_mut() {
            if let Some(status) = child.try_wait().unwrap() {
                panic!("rkube agent exited with {status}\n{}", agent.logs());
            }
        }
        std::thread::sleep(Duration::from_millis(500));
    }

    // Registered as a kubelet does: its podCIDR from node IPAM, its labels,
    // no control-plane role (only servers carry it), its address and port.
    let prefix = cidr.split('.').take(2).collect::<Vec<_>>().join(".") + ".";
    assert!(node["spec"]["podCIDR"].as_str().is_some_and(|c| c.starts_with(&prefix)), "{node}");
    let labels = &node["metadata"]["labels"];
    assert_eq!(labels["kubernetes.io/hostname"], NODE);
    assert_eq!(labels["kubernetes.io/os"], "linux");
    assert_eq!(labels["pool"], "joined");
    assert!(labels.get("node-role.kubernetes.io/control-plane").is_none(), "{labels}");
    assert_eq!(node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"], kubelet_port);
    let addresses = node["status"]["addresses"].as_array().unwrap();
    assert!(addresses.iter().any(|a| a["type"] == "InternalIP" && a["address"] == "127.0.0.1"), "{addresses:?}");
    // `kubectl get nodes`: ROLES is <none> for a node without role labels (upstream's printer).
    let table = server.kubectl_ok(&["get", "node", NODE, "--no-headers"]);
    let cols: Vec<&str> = table.split_whitespace().collect();
    assert_eq!((cols[0], cols[1], cols[2]), (NODE, "Ready", "<none>"), "{table}");

    // The client CSR: made with the bootstrap token, auto-approved (nodeclient), issued.
    let client = csrs(&server, "kubernetes.io/kube-apiserver-client-kubelet");
    assert_eq!(client.len(), 1, "{client:?}");
    assert_eq!(client[0]["spec"]["username"], format!("system:bootstrap:{token_id}"));
    let approved = &client[0]["status"]["conditions"][0];
    assert_eq!((approved["type"].as_str(), approved["reason"].as_str()), (Some("Approved"), Some("AutoApproved")));
    assert_eq!(approved["message"], "Auto approving kubelet client certificate after SubjectAccessReview.");
    assert!(client[0]["status"]["certificate"].as_str().is_some_and(|c| !c.is_empty()));
    // The serving CSR: made as the node, approved for its own names and addresses, issued.
    let serving = csrs(&server, "kubernetes.io/kubelet-serving");
    assert_eq!(serving.len(), 1, "{serving:?}");
    assert_eq!(serving[0]["spec"]["username"], format!("system:node:{NODE}"));
    assert_eq!(serving[0]["status"]["conditions"][0]["type"], "Approved");
    assert!(serving[0]["status"]["certificate"].as_str().is_some_and(|c| !c.is_empty()));
    // The kube-proxy CSR: made as the node for exactly system:kube-proxy, approved (rkube's k3s-like rule).
    let proxy = csrs(&server, "kubernetes.io/kube-apiserver-client");
    assert_eq!(proxy.len(), 1, "{proxy:?}");
    assert_eq!(proxy[0]["spec"]["username"], format!("system:node:{NODE}"));
    assert_eq!(proxy[0]["status"]["conditions"][0]["reason"], "AutoApproved");
    assert!(proxy[0]["status"]["certificate"].as_str().is_some_and(|c| !c.is_empty()));
    // `kubectl get csr`: CONDITION Approved,Issued (upstream's printer).
    let table = server.kubectl_ok(&["get", "csr", "--no-headers"]);
    let rows: Vec<&str> = table.lines().collect();
    assert_eq!(rows.len(), 3, "{table}");
    assert!(rows.iter().all(|r| r.trim_end().ends_with("Approved,Issued")), "{table}");

    // The serving certificate on disk: signed by the cluster CA, for the node's name and IP.
    let pem = std::fs::read_to_string(data_dir.join("agent/pki/kubelet-server-current.pem")).unwrap();
    let der = rkube_controllers::pem::certificate_der(&pem).unwrap();
    let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
    let ca_pem = std::fs::read_to_string(server.tls_dir().join("ca.crt")).unwrap();
    let ca_der = rkube_controllers::pem::certificate_der(&ca_pem).unwrap();
    let (_, ca) = x509_parser::parse_x509_certificate(&ca_der).unwrap();
    assert_eq!(cert.issuer(), ca.subject());
    let sans: Vec<String> = cert
        .subject_alternative_name()
        .unwrap()
        .unwrap()
        .value
        .general_names
        .iter()
        .map(|n| match n {
            x509_parser::extensions::GeneralName::DNSName(d) => d.to_string(),
            x509_parser::extensions::GeneralName::IPAddress(b) => {
                std::net::IpAddr::from(<[u8; 4]>::try_from(*b).unwrap()).to_string()
            }
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(sans, [NODE, "127.0.0.1"]);

    // The API server reaches the joined kubelet over TLS, verifying that
    // CA-signed serving certificate (node proxy to the kubelet's /healthz).
    server.wait_for(Duration::from_secs(30), "the kubelet's /healthz through the node proxy", || {
        let out = server.kubectl(&["get", "--raw", &format!("/api/v1/nodes/{NODE}/proxy/healthz")]);
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "ok"
    });

    // The node's Lease: held by the node and renewed (every 10 s).
    let lease = json(&server, &["lease", NODE, "-n", "kube-node-lease"]);
    assert_eq!(lease["spec"]["holderIdentity"], NODE);
    let first = lease["spec"]["renewTime"].as_str().unwrap().to_string();
    server.wait_for(Duration::from_secs(30), "the node's Lease to be renewed", || {
        json(&server, &["lease", NODE, "-n", "kube-node-lease"])["spec"]["renewTime"].as_str() != Some(first.as_str())
    });

    // A pod scheduled to the joined node runs there, and its log comes back
    // through the API server from the joined kubelet.
    let version =
        rkube_kubelet::images::busybox_version(std::path::Path::new(rkube_kubelet::images::HOST_BUSYBOX)).unwrap();
    let pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "on-joiner"},
        "spec": {"nodeSelector": {"pool": "joined"}, "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "c", "image": format!("docker.io/library/busybox:{version}"),
                "command": ["sh", "-c", "echo hello from the joined node; sleep 3600"]}]}});
    server.create(&pod);
    server.wait_for(Duration::from_secs(90), "the pod on the joined node to run and log", || {
        let p = json(&server, &["pod", "on-joiner"]);
        p["spec"]["nodeName"] == NODE
            && p["status"]["phase"] == "Running"
            && String::from_utf8_lossy(&server.kubectl(&["logs", "on-joiner"]).stdout) == "hello from the joined node\n"
    });
    server.kubectl_ok(&["delete", "pod", "on-joiner", "--wait=true", "--timeout=60s"]);

    // The node cannot get a serving certificate for an address that is not its own.
    let forged = std::thread::spawn({
        let credential = std::fs::read_to_string(data_dir.join("agent/pki/kubelet-client-current.pem")).unwrap();
        let ca_pem = ca_pem.clone();
        let url = format!("https://127.0.0.1:{}", server.port());
        move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let split = credential.find("-----BEGIN PRIVATE KEY-----").unwrap();
                let endpoint = rkube_controllers::client::ApiEndpoint { url, ca_pem };
                let client =
                    rkube_controllers::client::with_certificate(&endpoint, &credential[..split], &credential[split..])
                        .unwrap();
                let req = rkube_controllers::join::kubelet_serving_request(NODE, &["10.99.0.1".to_string()]);
                rkube_controllers::join::request_certificate(&client, &req, Duration::from_secs(8)).await
            })
        }
    });
    let err = forged.join().unwrap().unwrap_err().to_string();
    assert!(err.starts_with("timed out after 8s waiting for certificate signing request"), "{err}");
    let pending: Vec<Value> = csrs(&server, "kubernetes.io/kubelet-serving")
        .into_iter()
        .filter(|c| c["status"]["conditions"].as_array().is_none_or(|cs| cs.is_empty()))
        .collect();
    assert_eq!(pending.len(), 1, "the request for a foreign address stays Pending");
    server.kubectl_ok(&["delete", "csr", pending[0]["metadata"]["name"].as_str().unwrap()]);

    // SIGTERM stops it cleanly; a restart reuses the stored CA and certificates (no new CSR).
    let status = agent.stop();
    assert!(status.success(), "exit {status}\n{}", agent.logs());
    drop(agent);
    let agent = AgentProcess::start(&args, &data_dir, &log);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !agent.logs().contains("reusing the kubelet serving certificate") {
        assert!(Instant::now() < deadline, "no reuse after restart\n{}", agent.logs());
        std::thread::sleep(Duration::from_millis(250));
    }
    let logs = agent.logs();
    assert!(logs.contains("using the stored cluster CA the token pins"), "{logs}");
    assert!(logs.contains("reusing the kubelet client certificate"), "{logs}");
    // No new request: client, serving and kube-proxy certificates are all reused.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !agent.logs().contains("reusing kube-proxy's client certificate") {
        assert!(Instant::now() < deadline, "kube-proxy's certificate not reused\n{}", agent.logs());
        std::thread::sleep(Duration::from_millis(250));
    }
    assert_eq!(json(&server, &["csr"])["items"].as_array().unwrap().len(), 3);
    let mut node = Value::Null;
    server.wait_for(Duration::from_secs(60), "the node Ready after the restart", || ready(&mut node));
    drop(agent);
}

#[test]
fn a_bad_token_or_an_unreachable_server_fails_with_a_clear_error() {
    support::require_root_and_runtime();
    let server = TestServer::start_with(TestServerOptions { controllers: true, ..Default::default() });
    let token = token_create(&server);
    let tmp = tempfile::tempdir().unwrap();
    let url = format!("https://127.0.0.1:{}", server.port());
    let run = |server_url: String, token: String, dir: &str| {
        let data_dir = tmp.path().join(dir);
        std::thread::spawn(move || {
            support::run_rkube(
                &["agent", "--server", &server_url, "--token", &token, "--data-dir", data_dir.to_str().unwrap()],
                Duration::from_secs(90),
            )
        })
    };
    let (hash, secret_token) = token.split_once("::").unwrap();
    let id = secret_token.split('.').next().unwrap();
    // Not a join token at all.
    let malformed = run(url.clone(), "not-a-token".into(), "a");
    // The right CA, a token id the cluster does not know.
    let unknown = run(url.clone(), format!("{hash}::zzzzzz.0123456789abcdef"), "b");
    // A known id with the wrong secret: the signature does not verify.
    let forged = run(url.clone(), format!("{hash}::{id}.0123456789abcdef"), "c");
    // Nothing listens there.
    let nowhere = run(format!("https://127.0.0.1:{}", support::free_port()), token.clone(), "d");

    let check = |out: std::process::Output, wants: &[&str]| {
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        for want in wants {
            assert!(stderr.contains(want), "want {want:?} in:\n{stderr}");
        }
    };
    check(
        malformed.join().unwrap(),
        &["invalid --token: a join token looks like K10<64 hex digits>::<6 chars>.<16 chars>", "rkube token create"],
    );
    check(
        unknown.join().unwrap(),
        &["there is no JWS signed token in the cluster-info ConfigMap", "rkube token create"],
    );
    check(
        forged.join().unwrap(),
        &[
            "failed to verify JWS signature of received cluster info object, can't trust this API Server",
            "rkube token create",
        ],
    );
    check(nowhere.join().unwrap(), &["cannot reach the server at https://127.0.0.1:", "check --server"]);
    // No node was registered by any of them.
    assert_eq!(json(&server, &["nodes"])["items"].as_array().unwrap().len(), 0);
}
