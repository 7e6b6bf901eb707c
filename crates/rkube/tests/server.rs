//! `rkube server` end to end: the real binary on 127.0.0.1, talked to with a
//! TLS client and with the real kubectl.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use support::{run_rkube, TestServer, TestServerOptions};

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).permissions().mode() & 0o777
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn server_answers_readyz_livez_and_healthz_ok() {
    let server = TestServer::start();
    for path in ["/readyz", "/livez", "/healthz", "/readyz/etcd", "/livez/ping"] {
        assert_eq!(server.get(path), (200, "ok".to_string()), "{path}");
    }
    let (code, body) = server.get("/readyz?verbose");
    assert_eq!(code, 200);
    assert!(body.starts_with("[+]ping ok\n[+]log ok\n[+]etcd ok\n"), "{body}");
    assert!(body.ends_with("readyz check passed\n"), "{body}");

    let logs = server.logs();
    let ready_lines: Vec<&str> = logs.lines().filter(|l| l.contains("rkube is ready")).collect();
    assert_eq!(ready_lines.len(), 1, "exactly one ready line:\n{logs}");
    let kubeconfig = server.kubeconfig();
    assert!(
        ready_lines[0].contains(&format!(
            "kubeconfig written to {0}; try: kubectl --kubeconfig {0} get --raw /readyz",
            kubeconfig.display()
        )),
        "{}",
        ready_lines[0]
    );
}

/// Done-when of the issue: kubectl (1.33 via the dispatcher) sees the API level.
#[test]
fn kubectl_version_reports_server_version_1_33() {
    let server = TestServer::start();
    let out = server.kubectl(&["version", "-o", "json"]);
    assert!(out.status.success(), "kubectl version failed: {}\n{}", stderr(&out), server.logs());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("kubectl prints JSON");
    assert_eq!(v["serverVersion"]["major"], "1");
    assert_eq!(v["serverVersion"]["minor"], "33");
    assert_eq!(v["clientVersion"]["minor"], "33", "the dispatcher picks kubectl 1.33");

    let out = server.kubectl(&["get", "--raw", "/readyz"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "ok");
}

#[test]
fn pki_and_kubeconfig_are_private() {
    let extra = tempfile::tempdir().unwrap();
    let copy = extra.path().join("sub/kubeconfig.yaml");
    let server = TestServer::start_with(TestServerOptions {
        extra_args: vec!["--write-kubeconfig".into(), copy.display().to_string()],
        ..Default::default()
    });
    let tls = server.tls_dir();
    assert_eq!(mode(&tls), 0o700);
    for key in ["ca.key", "apiserver.key", "admin.key", "apiserver-kubelet-client.key", "sa.key"] {
        assert_eq!(mode(&tls.join(key)), 0o600, "{key}");
    }
    for public in ["ca.crt", "apiserver.crt", "admin.crt", "apiserver-kubelet-client.crt", "sa.pub"] {
        assert!(tls.join(public).is_file(), "{public}");
    }
    assert_eq!(mode(&server.kubeconfig()), 0o600);
    assert_eq!(mode(&copy), 0o600);
    assert_eq!(std::fs::read(&copy).unwrap(), std::fs::read(server.kubeconfig()).unwrap());
    let out = server.kubectl_with(&copy, &["get", "--raw", "/livez"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(server.logs().contains(&format!("kubeconfig written to {}", copy.display())));
}

#[test]
fn restart_on_the_same_data_dir_reuses_the_ca_and_old_kubeconfigs_keep_working() {
    let data = tempfile::tempdir().unwrap();
    let options = TestServerOptions {
        data_dir: Some(data.path().to_path_buf()),
        port: Some(support::free_port()),
        ..Default::default()
    };
    let mut first = TestServer::start_with(options.clone());
    let ca = std::fs::read(first.tls_dir().join("ca.crt")).unwrap();
    let old_kubeconfig = data.path().join("saved.kubeconfig");
    std::fs::copy(first.kubeconfig(), &old_kubeconfig).unwrap();
    let (status, _) = first.stop();
    assert!(status.success(), "{status}\n{}", first.logs());

    let second = TestServer::start_with(options);
    assert_eq!(std::fs::read(second.tls_dir().join("ca.crt")).unwrap(), ca, "the CA is reused byte for byte");
    assert!(second.logs().contains("reused the cluster CA"), "{}", second.logs());
    assert!(second.logs().contains("admin kubeconfig is up to date"), "{}", second.logs());
    let out = second.kubectl_with(&old_kubeconfig, &["get", "--raw", "/readyz"]);
    assert!(out.status.success(), "{}\n{}", stderr(&out), second.logs());
    assert_eq!(stdout(&out), "ok");
}

#[test]
fn sigterm_and_sigint_shut_down_cleanly_with_status_zero() {
    let mut server = TestServer::start();
    let (status, took) = server.stop();
    assert_eq!(status.code(), Some(0), "{status}\n{}", server.logs());
    assert!(took < Duration::from_secs(5), "SIGTERM took {took:?}");
    let logs = server.logs();
    assert!(logs.contains("received SIGTERM; shutting down"), "{logs}");
    assert!(logs.contains("rkube server stopped"), "{logs}");

    let mut server = TestServer::start();
    server.signal(libc::SIGINT);
    let (status, took) = server.wait_exit(Duration::from_secs(10));
    assert_eq!(status.code(), Some(0), "{status}\n{}", server.logs());
    assert!(took < Duration::from_secs(5), "SIGINT took {took:?}");
    assert!(server.logs().contains("received SIGINT; shutting down"), "{}", server.logs());
}

/// Kills (and reaps) the child on drop, so a failing test leaves no kubectl.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// An open `kubectl get -w` must not hold shutdown for the grace period:
/// watch streams end as soon as shutdown begins (as upstream's do), so the
/// server exits at once rather than after the 5 s grace.
#[test]
fn sigterm_ends_open_watches_at_once() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};

    let mut server = TestServer::start();
    let out = server.kubectl(&["create", "configmap", "watched", "--from-literal=a=b"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let cache = tempfile::tempdir().unwrap();
    let mut watch = KillOnDrop(
        Command::new(support::KUBECTL)
            .arg("--kubeconfig")
            .arg(server.kubeconfig())
            .arg("--cache-dir")
            .arg(cache.path())
            .args(["get", "cm", "-w"])
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn kubectl get -w"),
    );
    // The list has been printed once the configmap's row shows; the watch
    // request follows right after.
    let stdout = watch.0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line.starts_with("watched") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(20)).expect("kubectl get -w lists the configmap");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(watch.0.try_wait().unwrap(), None, "kubectl get -w is still watching");

    server.signal(libc::SIGTERM);
    let (status, took) = server.wait_exit(Duration::from_secs(10));
    let logs = server.logs();
    assert_eq!(status.code(), Some(0), "{status}\n{logs}");
    assert!(took < Duration::from_secs(3), "SIGTERM with an open watch took {took:?}\n{logs}");
    assert!(!logs.contains("still open after"), "{logs}");
}

#[test]
fn unknown_paths_answer_404_with_a_status_object() {
    let server = TestServer::start();
    let (code, body) = server.get("/no/such/path");
    assert_eq!(code, 404);
    let status: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        status,
        serde_json::json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
            "message":"the server could not find the requested resource","reason":"NotFound",
            "details":{},"code":404})
    );
    let out = server.kubectl(&["get", "--raw", "/no/such/path"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("Error from server (NotFound): the server could not find the requested resource"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn invalid_flags_exit_nonzero_with_a_message_naming_the_flag() {
    let data = tempfile::tempdir().unwrap();
    let data_dir = data.path().display().to_string();
    let port = support::free_port().to_string();
    let cases: &[(&[&str], &str)] = &[
        (&["--cluster-cidr", "nonsense"], "invalid value 'nonsense' for '--cluster-cidr <CIDR>'"),
        (&["--cluster-dns", "10.42.0.10"], "--cluster-dns 10.42.0.10 is outside --service-cidr 10.43.0.0/16"),
        (&["--datastore-endpoint", "postgres://db"], "use sqlite:///path/state.db or etcd://host:port"),
        (&["--service-cidr", "10.43.0.1/16"], "did you mean 10.43.0.0/16?"),
    ];
    for (flags, want) in cases {
        let mut args = vec!["server", "--disable-agent", "--data-dir", &data_dir, "--bind-address", "127.0.0.1"];
        args.extend_from_slice(&["--https-port", &port]);
        args.extend_from_slice(flags);
        let out = run_rkube(&args, Duration::from_secs(20));
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(want), "{flags:?}: {}", stderr(&out));
    }
    assert!(!data.path().join("server").exists(), "nothing is created when flags are invalid");
}

#[test]
fn a_taken_port_is_reported_with_the_flag_to_change() {
    let taken = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let data = tempfile::tempdir().unwrap();
    let data_dir = data.path().display().to_string();
    let out = run_rkube(
        &["server", "--disable-agent", "--data-dir", &data_dir, "--bind-address", "127.0.0.1", "--https-port", &port],
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(&format!("port {port} is already in use")), "{err}");
    assert!(err.contains("--https-port"), "{err}");
}

/// Two servers on one data dir would diverge (revisions, watches): the
/// second refuses to start, names the reason, and leaves the running
/// server's kubeconfig alone.
#[test]
fn a_second_server_on_the_same_data_dir_refuses_to_start() {
    let first = TestServer::start();
    let kubeconfig_before = std::fs::read_to_string(first.kubeconfig()).unwrap();
    let data_dir = first.data_dir().display().to_string();
    let port = support::free_port().to_string();
    let out = run_rkube(
        &["server", "--disable-agent", "--data-dir", &data_dir, "--bind-address", "127.0.0.1", "--https-port", &port],
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("in use by another process") && err.contains("--data-dir"), "{err}");
    assert_eq!(std::fs::read_to_string(first.kubeconfig()).unwrap(), kubeconfig_before);
    assert_eq!(first.get("/readyz"), (200, "ok".to_string()), "the first server is unaffected");
}

#[test]
fn version_flag_names_rkube_and_the_kubernetes_api_level() {
    let out = run_rkube(&["--version"], Duration::from_secs(10));
    assert!(out.status.success());
    let v = stdout(&out);
    assert!(v.starts_with(&format!("rkube {} ", env!("CARGO_PKG_VERSION"))), "{v}");
    assert!(v.contains("Kubernetes API level 1.33"), "{v}");
    for sub in [&["--help"][..], &["server", "--help"][..]] {
        let out = run_rkube(sub, Duration::from_secs(10));
        assert!(out.status.success() && stdout(&out).contains("Usage: rkube"), "{sub:?}");
    }
}

#[test]
fn server_runs_on_an_etcd_datastore() {
    let mut etcd = support::etcd::EtcdProcess::start().unwrap_or_else(|e| panic!("{e}"));
    let endpoint = format!("etcd://{}", etcd.endpoint().trim_start_matches("http://"));
    let mut server =
        TestServer::start_with(TestServerOptions { datastore_endpoint: Some(endpoint.clone()), ..Default::default() });
    assert!(server.logs().contains(&format!("endpoint={endpoint}")), "{}", server.logs());
    assert_eq!(server.get("/readyz"), (200, "ok".to_string()));
    let out = server.kubectl(&["version", "-o", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));

    // etcd down: /readyz fails the etcd checks, withholding the reason.
    etcd.stop();
    let (code, body) = poll_readyz(&server, |code| code == 500, "fail after etcd stopped");
    assert_eq!(code, 500);
    assert!(body.contains("[-]etcd failed: reason withheld\n"), "{body}");
    assert!(body.ends_with("readyz check failed\n"), "{body}");
    assert!(server.get("/livez/ping").0 == 200, "the server itself stays up");

    // etcd back: ready again.
    etcd.restart().unwrap_or_else(|e| panic!("{e}"));
    poll_readyz(&server, |code| code == 200, "recover after etcd restarted");

    let (status, _) = server.stop();
    assert!(status.success(), "{status}\n{}", server.logs());
}

/// Polls `/readyz?verbose` until `done(status)`, for at most 30 s.
fn poll_readyz(server: &TestServer, done: impl Fn(u16) -> bool, what: &str) -> (u16, String) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (code, body) = server.get("/readyz?verbose");
        if done(code) {
            return (code, body);
        }
        assert!(std::time::Instant::now() < deadline, "/readyz did not {what}: {code} {body}\n{}", server.logs());
        std::thread::sleep(Duration::from_millis(200));
    }
}
