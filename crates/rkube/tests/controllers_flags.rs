//! `rkube server --controllers`, as kube-controller-manager's flag: every
//! upstream controller name is accepted (those rkube does not implement
//! yet are logged once as such and the others still run), and a name
//! upstream does not know stops the start with upstream's message.

mod support;

use std::time::{Duration, Instant};

use support::{TestServer, TestServerOptions};

#[test]
fn upstream_controller_names_rkube_lacks_are_accepted_and_logged_once() {
    let server = TestServer::start_with(TestServerOptions {
        controllers: true,
        extra_args: vec![
            "--controllers".into(),
            "*,-cloud-node-lifecycle-controller,-storage-version-migrator-controller".into(),
        ],
        ..Default::default()
    });
    // The implemented controllers still run: the default ServiceAccount appears.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !server.kubectl(&["-n", "default", "get", "serviceaccount", "default"]).status.success() {
        assert!(Instant::now() < deadline, "no default ServiceAccount; server log:\n{}", server.logs());
        std::thread::sleep(Duration::from_millis(200));
    }
    let logs = server.logs();
    let lines: Vec<&str> = logs.lines().filter(|l| l.contains("not implemented in rkube yet")).collect();
    assert_eq!(lines.len(), 1, "{logs}");
    assert!(
        lines[0].contains(r#"["cloud-node-lifecycle-controller", "storage-version-migrator-controller"]"#),
        "{}",
        lines[0]
    );
}

#[test]
fn an_unknown_controller_name_stops_the_start_with_upstreams_message() {
    let dir = tempfile::tempdir().unwrap();
    let port = support::free_port().to_string();
    let out = support::run_rkube(
        &[
            "server",
            "--disable-agent",
            "--bind-address",
            "127.0.0.1",
            "--https-port",
            &port,
            "--data-dir",
            dir.path().to_str().unwrap(),
            "--controllers",
            "*,-not-a-controller",
        ],
        Duration::from_secs(60),
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(r#""not-a-controller" is not in the list of known controllers"#), "{stderr}");
}
