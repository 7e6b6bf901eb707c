//! The kubelet API server (`rkube_kubelet::server`) behind the real API
//! server and kubectl: `kubectl logs` (tail, timestamps, previous) and
//! `kubectl exec` reach a container through `/containerLogs` and `/exec`
//! (the API server's v5 WebSocket relayed to containerd's v4 streaming
//! server); direct requests are authenticated and authorized as upstream's
//! kubelet does (401 without credentials, 403 `Forbidden (user=…)` after a
//! SubjectAccessReview), and `/pods`, `/stats/summary`, `/metrics/resource`
//! answer.
//!
//! Isolation: the test runs its own managed containerd in a temporary data
//! dir and a Node object of its own (`kubelet-api-node`, InternalIP
//! 127.0.0.1, a free kubelet port), and starts the container directly
//! through CRI with the worker's `io.kubernetes.*` labels — so it does not
//! depend on (or collide with) the agent's pod worker. Needs root and the
//! packages scripts/test.sh installs.

mod support;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rkube_kubelet::containerd::{teardown_host_state, ManagedContainerd, RuntimePaths, StartOptions};
use rkube_kubelet::cri::v1;
use rkube_kubelet::{host, images};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{json, Value};
use support::{free_port, user_tls_config, TestServer};

const NODE: &str = "kubelet-api-node";

/// Kills containerd, its shims and containers, unmounts, removes cgroups.
struct Cleanup {
    paths: RuntimePaths,
    containerd: Option<ManagedContainerd>,
    cgroup_root: String,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        drop(self.containerd.take());
        teardown_host_state(&self.paths);
        let _ = host::remove_cgroup_tree(&self.cgroup_root);
    }
}

/// A raw HTTPS GET to the kubelet with `config` (any client identity).
fn get_as(addr: SocketAddr, config: Arc<rustls::ClientConfig>, path: &str) -> (u16, String) {
    get_with(addr, config, path, "")
}

/// [`get_as`] with extra header lines (`Name: value\r\n`…).
fn get_with(addr: SocketAddr, config: Arc<rustls::ClientConfig>, path: &str, headers: &str) -> (u16, String) {
    let name = ServerName::IpAddress(addr.ip().into());
    let mut conn = rustls::ClientConnection::new(config, name).unwrap();
    let mut sock = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut tls = rustls::Stream::new(&mut conn, &mut sock);
    write!(tls, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{headers}\r\n").unwrap();
    let mut raw = Vec::new();
    let _ = tls.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        // Good enough for small bodies: drop the chunk-size lines.
        let mut out = String::new();
        let mut rest = body;
        while let Some((size, after)) = rest.split_once("\r\n") {
            let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if n == 0 {
                break;
            }
            out.push_str(&after[..n]);
            rest = &after[n + 2..];
        }
        out
    } else {
        body.to_string()
    };
    (status, body)
}

/// A client that trusts the cluster CA and presents no certificate.
fn anonymous_tls(tls_dir: &Path) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_slice(&std::fs::read(tls_dir.join("ca.crt")).unwrap()).unwrap()).unwrap();
    Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

fn kubectl_ok(server: &TestServer, args: &[&str]) -> String {
    let out = server.kubectl(args);
    assert!(out.status.success(), "kubectl {args:?}: {}\n{}", String::from_utf8_lossy(&out.stderr), server.logs());
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kubectl_logs_and_exec_reach_the_kubelet_api() {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(unsafe { libc::geteuid() }, 0, "the kubelet tests run as root (as CI does)");
    host::check_runtime_binaries()
        .unwrap_or_else(|e| panic!("{e}. Run the tests through scripts/test.sh, which installs them."));
    let mut server = TestServer::start();
    server.wait_default_service_account().unwrap();
    let tls_dir = server.tls_dir();

    // The runtime: a managed containerd of our own with the local images.
    let rt_dir = tempfile::Builder::new().prefix("rkube-kubelet-api-").tempdir().unwrap();
    let paths = RuntimePaths::new(rt_dir.path());
    let systemd = host::detect_cgroup_driver() == host::CgroupDriver::Systemd;
    let cgroup_root =
        if systemd { String::new() } else { format!("/{}", rt_dir.path().file_name().unwrap().to_string_lossy()) };
    let mut guard = Cleanup { paths: paths.clone(), containerd: None, cgroup_root: cgroup_root.clone() };
    let containerd = ManagedContainerd::start(rt_dir.path(), StartOptions::default()).await.unwrap();
    let cri = containerd.client().clone();
    let snapshotter = containerd.config().snapshotter;
    guard.containerd = Some(containerd);
    for (_, archive) in images::build_local(&paths.images_dir, Path::new(images::HOST_BUSYBOX)).unwrap() {
        images::import_archive(cri.socket(), Some(snapshotter), &archive).await.unwrap();
    }
    let busybox =
        format!("docker.io/library/busybox:{}", images::busybox_version(Path::new(images::HOST_BUSYBOX)).unwrap());

    // The kubelet API server, with a serving certificate from the cluster CA.
    let read = |name: &str| std::fs::read_to_string(tls_dir.join(name)).unwrap();
    let ca = rkube_pki::CertAndKey { cert_pem: read("ca.crt"), key_pem: read("ca.key") };
    let serving =
        rkube_kubelet::server::issue_serving_cert(&ca, NODE, &[std::net::IpAddr::V4(Ipv4Addr::LOCALHOST)]).unwrap();
    let kubeconfig = kube::config::Kubeconfig::read_from(server.kubeconfig()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let port = free_port();
    let cfg = rkube_kubelet::server::KubeletServerConfig {
        address: std::net::IpAddr::V4(Ipv4Addr::LOCALHOST),
        port,
        node_name: NODE.into(),
        serving_cert_pem: serving.cert_pem,
        serving_key_pem: serving.key_pem,
        client_ca_pem: ca.cert_pem.clone(),
        client,
        cri: cri.clone(),
    };
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let kubelet = tokio::spawn(rkube_kubelet::server::serve(cfg, stop_rx));
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));

    // The Node the API server dials, and a Pod bound to it.
    let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}});
    let node_file = rt_dir.path().join("node.json");
    std::fs::write(&node_file, node.to_string()).unwrap();
    kubectl_ok(&server, &["create", "-f", node_file.to_str().unwrap()]);
    let status = json!({"status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": port}}}});
    kubectl_ok(&server, &["patch", "node", NODE, "--subresource=status", "--type=merge", "-p", &status.to_string()]);
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "logger", "namespace": "default"},
        "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": busybox}]}});
    let pod_file = rt_dir.path().join("pod.json");
    std::fs::write(&pod_file, pod.to_string()).unwrap();
    kubectl_ok(&server, &["create", "-f", pod_file.to_str().unwrap()]);
    let uid = kubectl_ok(&server, &["get", "pod", "logger", "-o", "jsonpath={.metadata.uid}"]);

    // Its sandbox and container, labelled as the pod worker labels them.
    let log_dir = rt_dir.path().join("pods").join(format!("default_logger_{uid}"));
    std::fs::create_dir_all(&log_dir).unwrap();
    let host_network = v1::NamespaceOption { network: v1::NamespaceMode::Node as i32, ..Default::default() };
    let pod_labels: std::collections::HashMap<String, String> = [
        ("io.kubernetes.pod.name", "logger"),
        ("io.kubernetes.pod.namespace", "default"),
        ("io.kubernetes.pod.uid", uid.as_str()),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .into();
    let sandbox_config = v1::PodSandboxConfig {
        metadata: Some(v1::PodSandboxMetadata {
            name: "logger".into(),
            uid: uid.clone(),
            namespace: "default".into(),
            attempt: 0,
        }),
        labels: pod_labels.clone(),
        log_directory: log_dir.to_string_lossy().into_owned(),
        linux: Some(v1::LinuxPodSandboxConfig {
            cgroup_parent: if systemd { String::new() } else { format!("{cgroup_root}/pod{uid}") },
            security_context: Some(v1::LinuxSandboxSecurityContext {
                namespace_options: Some(host_network.clone()),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let sandbox = cri.run_pod_sandbox(sandbox_config.clone(), "").await.unwrap();
    let mut container_labels = pod_labels.clone();
    container_labels.insert("io.kubernetes.container.name".into(), "c".into());
    let container_config = v1::ContainerConfig {
        metadata: Some(v1::ContainerMetadata { name: "c".into(), attempt: 0 }),
        image: Some(v1::ImageSpec { image: busybox.clone(), ..Default::default() }),
        command: vec!["sh".into()],
        args: vec!["-c".into(), "echo line1; echo line2; echo line3; exec sleep 3600".into()],
        log_path: "c/0.log".into(),
        labels: container_labels,
        linux: Some(v1::LinuxContainerConfig {
            security_context: Some(v1::LinuxContainerSecurityContext {
                namespace_options: Some(host_network),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let container = cri.create_container(&sandbox, container_config, sandbox_config.clone()).await.unwrap();
    cri.start_container(&container).await.unwrap();
    let log = log_dir.join("c/0.log");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::read_to_string(&log).map(|t| t.lines().count()).unwrap_or(0) < 3 {
        assert!(Instant::now() < deadline, "the container did not log 3 lines");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let run = {
        let server = &server;
        move |args: &[&str]| {
            let out = server.kubectl(args);
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        }
    };

    // kubectl logs through /containerLogs.
    let (code, out, err) = run(&["logs", "logger"]);
    assert_eq!((code, out.as_str()), (Some(0), "line1\nline2\nline3\n"), "{err}");
    let (_, out, _) = run(&["logs", "logger", "--tail=1"]);
    assert_eq!(out, "line3\n");
    let (_, out, _) = run(&["logs", "logger", "--timestamps", "--limit-bytes=1000"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    for (line, want) in lines.iter().zip(["line1", "line2", "line3"]) {
        let (time, msg) = line.split_once(' ').unwrap();
        assert_eq!(msg, want);
        let rfc3339 = time.len() >= 20 && time.as_bytes()[4] == b'-' && time.as_bytes()[10] == b'T';
        assert!(rfc3339, "not an RFC 3339 time: {time}");
    }
    let (_, out, _) = run(&["logs", "logger", "--limit-bytes=8"]);
    assert_eq!(out, "line1\nli");
    let (code, _, err) = run(&["logs", "logger", "--previous"]);
    assert_ne!(code, Some(0));
    assert!(err.contains(r#"previous terminated container "c" in pod "logger" not found"#), "{err}");

    // kubectl exec through /exec: output, stderr and the exit code travel back.
    let (code, out, err) = run(&["exec", "logger", "--", "sh", "-c", "echo out; echo err >&2"]);
    assert_eq!((code, out.as_str()), (Some(0), "out\n"), "{err}");
    assert!(err.contains("err\n"), "{err}");
    let (code, _, err) = run(&["exec", "logger", "--", "sh", "-c", "exit 3"]);
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("command terminated with exit code 3"), "{err}");

    // Standard input reaches the command and its end is seen (v5 stream close → SPDY FIN).
    let mut cat = std::process::Command::new(support::KUBECTL)
        .args(["--kubeconfig", server.kubeconfig().to_str().unwrap(), "exec", "-i", "logger", "--", "cat"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    cat.stdin.take().unwrap().write_all(b"hello stdin\n").unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while cat.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = cat.kill();
            panic!("kubectl exec -i -- cat did not end after its stdin closed");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = cat.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello stdin\n");

    // Direct requests: who may do what.
    let (status, body) = get_as(addr, anonymous_tls(&tls_dir), "/healthz");
    assert_eq!((status, body.as_str()), (401, "Unauthorized"));
    let (status, body) = get_as(addr, user_tls_config(&tls_dir, "bob", None).unwrap(), "/healthz");
    assert_eq!(
        (status, body.as_str()),
        (403, "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[healthz proxy])\n")
    );
    let (status, body) = get_as(addr, user_tls_config(&tls_dir, "bob", None).unwrap(), "/stats/summary");
    assert_eq!(
        (status, body.as_str()),
        (403, "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[stats])\n")
    );
    // A bearer token is authenticated by TokenReview, then authorized by SubjectAccessReview.
    let token = kubectl_ok(&server, &["create", "token", "default"]);
    let bearer = format!("Authorization: Bearer {}\r\n", token.trim());
    let (status, body) = get_with(addr, anonymous_tls(&tls_dir), "/pods", &bearer);
    let forbidden =
        "Forbidden (user=system:serviceaccount:default:default, verb=get, resource=nodes, subresource(s)=[pods proxy])\n";
    assert_eq!((status, body.as_str()), (403, forbidden));
    let (status, _) = get_with(addr, anonymous_tls(&tls_dir), "/pods", "Authorization: Bearer not-a-token\r\n");
    assert_eq!(status, 401);
    let admin = support::admin_tls_config(&tls_dir).unwrap();
    assert_eq!(get_as(addr, admin.clone(), "/healthz"), (200, "ok".to_string()));
    assert_eq!(get_as(addr, admin.clone(), "/nothing/here"), (404, "404 page not found\n".to_string()));
    let (status, body) = get_as(addr, admin.clone(), "/pods");
    assert_eq!(status, 200, "{body}");
    let pods: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(pods["kind"], "PodList");
    assert_eq!(pods["items"][0]["metadata"]["name"], "logger");
    let (status, body) = get_as(addr, admin.clone(), "/stats/summary");
    assert_eq!(status, 200, "{body}");
    let summary: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(summary["node"]["nodeName"], NODE);
    assert!(summary["node"]["memory"]["workingSetBytes"].as_u64().unwrap() > 0, "{summary}");
    let pod_stats = summary["pods"].as_array().unwrap().iter().find(|p| p["podRef"]["name"] == "logger").cloned();
    let pod_stats = pod_stats.unwrap_or_else(|| panic!("no stats for the pod: {summary}"));
    assert_eq!(pod_stats["podRef"]["uid"], uid.as_str());
    assert_eq!(pod_stats["containers"][0]["name"], "c");
    let (status, body) = get_as(addr, admin, "/metrics/resource");
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("container_memory_working_set_bytes{container=\"c\",namespace=\"default\",pod=\"logger\"} "),
        "{body}"
    );
    assert!(body.contains("# TYPE node_cpu_usage_seconds_total counter\n"), "{body}");
    assert!(body.contains("resource_scrape_error 0\n"), "{body}");

    // A restart: attempt 1 of the container; attempt 0 becomes `--previous`.
    cri.stop_container(&container, 0).await.unwrap();
    let http_port = free_port();
    let script = format!(
        "echo second; mkdir -p /www; echo hello > /www/index.html; httpd -p {http_port} -h /www; \
         i=0; while true; do echo tick$i; i=$((i+1)); sleep 0.3; done"
    );
    let second = start_attempt(&cri, &sandbox, &sandbox_config, &busybox, &pod_labels, 1, &script).await;
    let log1 = log_dir.join("c/1.log");
    wait_for(|| std::fs::read_to_string(&log1).is_ok_and(|t| t.contains("tick1")), "attempt 1 logs");
    let (_, out, _) = run(&["logs", "logger", "--tail=-1"]);
    assert!(out.starts_with("second\ntick0\n"), "{out}");
    let (code, out, err) = run(&["logs", "logger", "--previous"]);
    assert_eq!((code, out.as_str()), (Some(0), "line1\nline2\nline3\n"), "{err}");

    // `kubectl logs -f` goes on across a rotation and ends when the container stops.
    let mut follow = std::process::Command::new(support::KUBECTL)
        .args(["--kubeconfig", server.kubeconfig().to_str().unwrap(), "logs", "-f", "logger"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let followed = Arc::new(std::sync::Mutex::new(String::new()));
    let reader = {
        let followed = followed.clone();
        let mut stdout = follow.stdout.take().unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                followed.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        })
    };
    wait_for(|| followed.lock().unwrap().contains("tick2"), "kubectl logs -f output");
    let policy = rkube_kubelet::logs::LogRotationPolicy { max_size: 1, ..Default::default() };
    assert!(rkube_kubelet::logs::rotate_container_log(&cri, &second, &log1, &policy).await.unwrap());
    let rotated: Vec<String> = std::fs::read_dir(log_dir.join("c"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("1.log."))
        .collect();
    assert_eq!(rotated.len(), 1, "{rotated:?}");
    // A tick written to the reopened file reaches the follower.
    let mut fresh = String::new();
    wait_for(
        || {
            let text = std::fs::read_to_string(&log1).unwrap_or_default();
            match text.lines().next().and_then(|l| l.rsplit(' ').next()) {
                Some(t) => {
                    fresh = t.to_string();
                    true
                }
                None => false,
            }
        },
        "a line in the reopened log",
    );
    wait_for(|| followed.lock().unwrap().contains(&format!("{fresh}\n")), "the follower after rotation");

    // Port-forward (SPDY through the API server's tunnel) to httpd in the pod.
    kubectl_ok(
        &server,
        &["patch", "pod", "logger", "--subresource=status", "--type=merge", "-p", r#"{"status":{"phase":"Running"}}"#],
    );
    let local = free_port();
    let mut forward = std::process::Command::new(support::KUBECTL)
        .args(["--kubeconfig", server.kubeconfig().to_str().unwrap(), "port-forward", "pod/logger"])
        .arg(format!("{local}:{http_port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut page = String::new();
    wait_for(
        || {
            let Ok(mut conn) = TcpStream::connect(("127.0.0.1", local)) else { return false };
            let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = write!(conn, "GET /index.html HTTP/1.0\r\nHost: x\r\n\r\n");
            page.clear();
            let _ = conn.read_to_string(&mut page);
            page.contains("hello")
        },
        "a page through kubectl port-forward",
    );
    assert!(page.starts_with("HTTP/1.") && page.contains(" 200 "), "{page}");
    let _ = forward.kill();
    let _ = forward.wait();

    // kubectl attach streams the main process's output (/attach).
    let mut attach = std::process::Command::new(support::KUBECTL)
        .args(["--kubeconfig", server.kubeconfig().to_str().unwrap(), "attach", "logger"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut attach_out = attach.stdout.take().unwrap();
    let attached = std::thread::spawn(move || {
        let mut seen = String::new();
        let mut buf = [0u8; 1024];
        while let Ok(n) = attach_out.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
            if seen.matches("tick").count() >= 2 {
                break;
            }
        }
        seen
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while !attached.is_finished() {
        assert!(Instant::now() < deadline, "kubectl attach showed no output");
        std::thread::sleep(Duration::from_millis(100));
    }
    let seen = attached.join().unwrap();
    let _ = attach.kill();
    let _ = attach.wait();
    assert!(seen.matches("tick").count() >= 2, "{seen}");

    cri.stop_container(&second, 0).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = follow.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "kubectl logs -f did not end after the container stopped");
        std::thread::sleep(Duration::from_millis(100));
    };
    reader.join().unwrap();
    assert!(status.success(), "{status:?}");
    let all = followed.lock().unwrap().clone();
    assert!(all.starts_with("second\ntick0\n") && all.contains(&format!("{fresh}\n")), "{all}");

    // Clean up.
    stop_tx.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(5), kubelet).await.unwrap().unwrap().unwrap();
    cri.stop_pod_sandbox(&sandbox).await.unwrap();
    cri.remove_pod_sandbox(&sandbox).await.unwrap();
    if let Some(mut c) = guard.containerd.take() {
        c.stop().await;
    }
    drop(guard);
}

/// Polls `ok` every 100 ms for up to 30 s.
fn wait_for(mut ok: impl FnMut() -> bool, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Creates and starts attempt `attempt` of container `c` running `script`,
/// labelled and logged as the pod worker does (`c/<attempt>.log`).
async fn start_attempt(
    cri: &rkube_kubelet::cri::CriClient,
    sandbox: &str,
    sandbox_config: &v1::PodSandboxConfig,
    image: &str,
    pod_labels: &std::collections::HashMap<String, String>,
    attempt: u32,
    script: &str,
) -> String {
    let mut labels = pod_labels.clone();
    labels.insert("io.kubernetes.container.name".into(), "c".into());
    let host_network = v1::NamespaceOption { network: v1::NamespaceMode::Node as i32, ..Default::default() };
    let config = v1::ContainerConfig {
        metadata: Some(v1::ContainerMetadata { name: "c".into(), attempt }),
        image: Some(v1::ImageSpec { image: image.into(), ..Default::default() }),
        command: vec!["sh".into()],
        args: vec!["-c".into(), script.into()],
        log_path: format!("c/{attempt}.log"),
        labels,
        linux: Some(v1::LinuxContainerConfig {
            security_context: Some(v1::LinuxContainerSecurityContext {
                namespace_options: Some(host_network),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let id = cri.create_container(sandbox, config, sandbox_config.clone()).await.unwrap();
    cri.start_container(&id).await.unwrap();
    id
}
