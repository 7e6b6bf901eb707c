//! HA control plane (issue 9 item 5, seed 003 §6): a second `rkube server
//! --server URL --token TOKEN` on the same etcd joins the cluster with a
//! control-plane join token (`rkube token create --control-plane`),
//! sharing the cluster CA and service-account key; both serve the API;
//! leader election keeps one scheduler and one controller manager; the
//! `kubernetes` Service lists both servers (lease endpoint reconciler);
//! stopping the leader hands over, and the survivor's controller manager
//! and scheduler then do the work. A node join token may not fetch the
//! keys (403), and a server on the embedded SQLite store may not join.
//!
//! Both servers run without agents on loopback ports; their advertise
//! addresses are TEST-NET-1 addresses (192.0.2.0/24, RFC 5737) that no
//! traffic goes to — they only appear in the `kubernetes` endpoints, which
//! refuse loopback addresses as upstream does.

mod support;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::{json, Value};
use support::{run_rkube, TestServer, TestServerOptions, KUBECTL};

const WAIT: Duration = Duration::from_secs(90);
const BUNDLE: &str = "/rkube/v1/bootstrap/control-plane";

/// kubectl against `server`'s URL with a bearer token and the CA at `ca`,
/// no kubeconfig.
fn kubectl_token(url: &str, ca: &Path, token: &str, args: &[&str]) -> Output {
    let cache = tempfile::tempdir().unwrap();
    Command::new(KUBECTL)
        .args(["--kubeconfig", "/dev/null", "--server", url, "--token", token])
        .arg("--certificate-authority")
        .arg(ca)
        .arg("--cache-dir")
        .arg(cache.path())
        .args(args)
        .env_remove("KUBECONFIG")
        .output()
        .expect("run kubectl")
}

/// The bootstrap token part (`<id>.<secret>`) of a join token.
fn bootstrap_part(join: &str) -> &str {
    join.rsplit("::").next().unwrap()
}

fn holder(server: &TestServer, lease: &str) -> String {
    let out = server.kubectl(&["-n", "kube-system", "get", "lease", lease, "-o", "jsonpath={.spec.holderIdentity}"]);
    if out.status.success() {
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    } else {
        String::new()
    }
}

fn endpoint_ips(server: &TestServer) -> Vec<String> {
    let out = server.kubectl(&["get", "endpoints", "kubernetes", "-o", "json"]);
    if !out.status.success() {
        return Vec::new();
    }
    let ep: Value = serde_json::from_slice(&out.stdout).unwrap();
    ep["subsets"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["addresses"].as_array().cloned().unwrap_or_default())
        .filter_map(|a| a["ip"].as_str().map(str::to_string))
        .collect()
}

fn names(server: &TestServer, args: &[&str]) -> Vec<String> {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "name"]);
    let mut v: Vec<String> = server.kubectl_ok(&all).lines().map(str::to_string).collect();
    v.sort();
    v
}

fn server_options(endpoint: &str, advertise: &str, node_name: &str, extra: &[&str]) -> TestServerOptions {
    let mut extra_args: Vec<String> =
        ["--node-name", node_name, "--node-monitor-grace-period", "10m", "--node-startup-grace-period", "10m"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    extra_args.extend(extra.iter().map(|s| s.to_string()));
    TestServerOptions {
        datastore_endpoint: Some(endpoint.to_string()),
        advertise_address: Some(advertise.parse().unwrap()),
        controllers: true,
        scheduler: true,
        extra_args,
        ..Default::default()
    }
}

#[test]
fn a_second_server_joins_shares_the_keys_and_takes_over_from_a_stopped_leader() {
    let etcd = support::etcd::EtcdProcess::start().unwrap_or_else(|e| panic!("{e}"));
    let endpoint = format!("etcd://{}", etcd.endpoint().trim_start_matches("http://"));
    let mut first = TestServer::start_with(server_options(&endpoint, "192.0.2.1", "ha-one", &[]));
    let url1 = format!("https://127.0.0.1:{}", first.port());
    let kubeconfig1 = first.kubeconfig();
    let kubeconfig1 = kubeconfig1.to_str().unwrap();

    // Tokens: a control-plane join token and a plain node join token.
    let token = |extra: &[&str]| {
        let mut args = vec!["token", "create", "--kubeconfig", kubeconfig1];
        args.extend_from_slice(extra);
        let out = run_rkube(&args, Duration::from_secs(60));
        assert!(out.status.success(), "rkube token create {extra:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let cp_token = token(&["--control-plane"]);
    let node_token = token(&[]);
    let secret = first.get_json(&[
        "-n",
        "kube-system",
        "secret",
        &format!("bootstrap-token-{}", &bootstrap_part(&cp_token)[..6]),
    ]);
    let groups = String::from_utf8(base64_decode(secret["data"]["auth-extra-groups"].as_str().unwrap())).unwrap();
    assert_eq!(groups, "system:bootstrappers:kubeadm:default-node-token,system:bootstrappers:rkube:control-plane");

    // The bundle: the control-plane token may read it, a node token may not.
    let ca1 = first.tls_dir().join("ca.crt");
    let cp = kubectl_token(&url1, &ca1, bootstrap_part(&cp_token), &["get", "--raw", BUNDLE]);
    assert!(cp.status.success(), "control-plane token: {}", String::from_utf8_lossy(&cp.stderr));
    let bundle: Value = serde_json::from_slice(&cp.stdout).unwrap();
    assert_eq!(bundle["files"]["ca.key"], std::fs::read_to_string(first.tls_dir().join("ca.key")).unwrap());
    assert_eq!(bundle["settings"]["--service-cidr"], "10.43.0.0/16");
    let node = kubectl_token(&url1, &ca1, bootstrap_part(&node_token), &["get", "--raw", BUNDLE]);
    assert!(!node.status.success());
    let err = String::from_utf8_lossy(&node.stderr);
    assert!(err.contains("Forbidden") || err.contains("forbidden"), "node token: {err}");

    // A server with the node token is refused, with what to do.
    let refused_dir = tempfile::tempdir().unwrap();
    let refused_port = support::free_port().to_string();
    let base = |dir: &Path, port: &str| -> Vec<String> {
        ["server", "--disable-agent", "--disable-cluster-dns", "--bind-address", "127.0.0.1", "--https-port", port]
            .iter()
            .map(|s| s.to_string())
            .chain(["--data-dir".to_string(), dir.display().to_string()])
            .collect()
    };
    let mut args = base(refused_dir.path(), &refused_port);
    args.extend(["--datastore-endpoint", &endpoint, "--server", &url1, "--token", &node_token].map(String::from));
    let out = run_rkube(&args.iter().map(String::as_str).collect::<Vec<_>>(), Duration::from_secs(90));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a node token joined a server: {err}");
    assert!(err.contains("node join token") && err.contains("rkube token create --control-plane"), "{err}");
    assert!(!refused_dir.path().join("server/tls/ca.key").exists());

    // A server on the embedded SQLite store cannot join.
    let sqlite_dir = tempfile::tempdir().unwrap();
    let mut args = base(sqlite_dir.path(), &refused_port);
    args.extend(["--server", &url1, "--token", &cp_token].map(String::from));
    let out = run_rkube(&args.iter().map(String::as_str).collect::<Vec<_>>(), Duration::from_secs(60));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a SQLite server joined: {err}");
    assert!(err.contains("cannot be shared") && err.contains("etcd://"), "{err}");

    // A server whose cluster settings differ is refused, naming the flag and both values.
    let differ_dir = tempfile::tempdir().unwrap();
    let mut args = base(differ_dir.path(), &refused_port);
    args.extend(
        ["--datastore-endpoint", &endpoint, "--server", &url1, "--token", &cp_token, "--cluster-domain", "other.local"]
            .map(String::from),
    );
    let out = run_rkube(&args.iter().map(String::as_str).collect::<Vec<_>>(), Duration::from_secs(90));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a server with another cluster domain joined: {err}");
    assert!(err.contains("--cluster-domain is other.local here but cluster.local on the server"), "{err}");
    assert!(!differ_dir.path().join("server/tls/ca.key").exists());

    // The second server joins.
    let second_dir = tempfile::Builder::new().prefix("rkube-test-").tempdir().unwrap();
    let mut options = server_options(&endpoint, "192.0.2.2", "ha-two", &["--server", &url1, "--token", &cp_token]);
    options.data_dir = Some(second_dir.path().to_path_buf());
    let mut second = TestServer::start_with(options);
    let url2 = format!("https://127.0.0.1:{}", second.port());
    for f in ["ca.crt", "ca.key", "sa.key", "sa.pub"] {
        let a = std::fs::read(first.tls_dir().join(f)).unwrap();
        let b = std::fs::read(second.tls_dir().join(f)).unwrap();
        assert_eq!(a, b, "{f} differs");
    }
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(second.tls_dir().join("ca.key")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    assert!(second.logs().contains("stored the cluster CA and service-account keys"), "{}", second.logs());

    // A service-account token issued through one server works at the other.
    let sa_token = first.kubectl_ok(&["create", "token", "default"]).trim().to_string();
    let ca2 = second.tls_dir().join("ca.crt");
    let who = kubectl_token(&url2, &ca2, &sa_token, &["auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"]);
    assert!(who.status.success(), "{}\n{}", String::from_utf8_lossy(&who.stderr), second.logs());
    assert_eq!(String::from_utf8_lossy(&who.stdout), "system:serviceaccount:default:default");

    // Both serve the same objects.
    first.kubectl_ok(&["create", "configmap", "ha-shared", "--from-literal=k=v"]);
    second.kubectl_ok(&["create", "namespace", "ha-from-two"]);
    assert_eq!(names(&first, &["configmaps", "-A"]), names(&second, &["configmaps", "-A"]));
    assert_eq!(names(&first, &["namespaces"]), names(&second, &["namespaces"]));
    assert!(names(&first, &["namespaces"]).contains(&"namespace/ha-from-two".to_string()));

    // Two API server identities (their --node-name tells them apart on one host).
    first.wait_for(WAIT, "two API server identity leases", || {
        names(&first, &["-n", "kube-system", "lease", "-l", "k8s.io/component=kube-apiserver"]).len() == 2
    });
    // Both servers in the kubernetes endpoints, sorted.
    first.wait_for(WAIT, "both servers in the kubernetes endpoints", || {
        endpoint_ips(&first) == ["192.0.2.1", "192.0.2.2"]
    });

    // One leader each for the scheduler and the controller manager.
    let leaders = |s: &TestServer| (holder(s, "kube-scheduler"), holder(s, "kube-controller-manager"));
    first.wait_for(WAIT, "leaders", || {
        let (a, b) = leaders(&first);
        !a.is_empty() && !b.is_empty()
    });
    second.wait_for(WAIT, "the second server's candidates waiting", || {
        second.logs().matches("another candidate is leader; waiting").count() >= 2
    });
    let (scheduler, manager) = leaders(&second);
    for (lease, holder) in [("kube-scheduler", &scheduler), ("kube-controller-manager", &manager)] {
        let needle = format!("identity={holder}");
        let led_by = [first.logs().contains(&needle), second.logs().contains(&needle)];
        assert_eq!(led_by.iter().filter(|b| **b).count(), 1, "{lease} holder {holder} in both or no logs");
        let became = format!("became leader component=\"{lease}\"");
        let count = first.logs().matches(&became).count() + second.logs().matches(&became).count();
        assert_eq!(count, 1, "{lease}: more than one leader");
    }

    // Stop the controller manager's leader; the other server takes over.
    let first_leads = first.logs().contains(&format!("identity={manager}"));
    let (leader, survivor) = if first_leads { (&mut first, &second) } else { (&mut second, &first) };
    let survivor_ip = if first_leads { "192.0.2.2" } else { "192.0.2.1" };
    let (status, _) = leader.stop();
    assert!(status.success(), "the leader's server did not stop cleanly: {status}");
    survivor.wait_for(WAIT, "the survivor to hold both leases", || {
        let (s, m) = leaders(survivor);
        let own = |h: &str| !h.is_empty() && survivor.logs().contains(&format!("identity={h}"));
        own(&s) && own(&m)
    });
    survivor.wait_for(WAIT, "the stopped server out of the kubernetes endpoints", || {
        endpoint_ips(survivor) == [survivor_ip]
    });
    let second_options = |dir: &Path| {
        let mut o = server_options(&endpoint, "192.0.2.2", "ha-two", &["--server", &url1, "--token", &cp_token]);
        o.data_dir = Some(dir.to_path_buf());
        o
    };

    // The survivor's controller manager and scheduler work.
    survivor.kubectl_ok(&["create", "deployment", "ha-web", "--image=registry.k8s.io/pause:3.10", "--replicas=2"]);
    survivor.wait_for(WAIT, "the ReplicaSet and two pods", || {
        let rs = survivor.get_json(&["replicasets", "-l", "app=ha-web"]);
        let pods = survivor.get_json(&["pods", "-l", "app=ha-web"]);
        rs["items"].as_array().is_some_and(|v| v.len() == 1) && pods["items"].as_array().is_some_and(|v| v.len() == 2)
    });
    // A Node as a kubelet registers it; the node lifecycle controller
    // (the survivor's) lifts the not-ready taint once it is Ready.
    survivor.create(&json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "ha-node", "labels": {"kubernetes.io/hostname": "ha-node"}}}));
    let status = json!({"status": {
        "capacity": {"cpu": "2", "memory": "4Gi", "pods": "110"},
        "allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
            "message": "kubelet is posting ready status"}]
    }});
    survivor.kubectl_ok(&[
        "patch",
        "node",
        "ha-node",
        "--subresource=status",
        "--type=merge",
        "-p",
        &status.to_string(),
    ]);
    survivor.wait_for(WAIT, "both pods bound to ha-node", || {
        let pods = survivor.get_json(&["pods", "-l", "app=ha-web"]);
        pods["items"].as_array().is_some_and(|v| v.len() == 2 && v.iter().all(|p| p["spec"]["nodeName"] == "ha-node"))
    });

    // A restart of the joined server uses its stored keys: when the first
    // server was the one stopped, it is not even there to ask.
    if first_leads {
        let (status, _) = second.stop();
        assert!(status.success(), "{status}");
    }
    let restarted = TestServer::start_with(second_options(second_dir.path()));
    assert!(restarted.logs().contains("using the stored cluster CA and service-account keys"), "{}", restarted.logs());
    restarted.kubectl_ok(&["get", "configmap", "ha-shared"]);
    drop(etcd);
}

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
}
