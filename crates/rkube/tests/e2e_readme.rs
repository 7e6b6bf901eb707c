//! Issue 9, item 8: the README's walkthrough is the tested scenario. The
//! lines between `<!-- walkthrough:begin -->` and `<!-- walkthrough:end -->`
//! in README.md run here as written, one after the other, each through
//! `sh -c` inside the network namespace of a `rkube server` started as the
//! README's set-up does (`rkube images build-local`, then `rkube server`),
//! so the README and what is tested cannot drift apart.
//!
//! What is overridden, and why: the data dir (`/var/lib/rkube` in the
//! README) is the test's temporary one, and the node name is unique (the
//! node's cgroup parent `rkube-<node>` lives in the machine's shared cgroup
//! tree). Everything else — ports, ranges, cluster DNS on port 53,
//! kube-proxy — is at its default, inside the namespace.
//!
//! Each line must exit 0. A line whose result a user would wait for —
//! `kubectl get nodes` (the node registers and turns Ready seconds after
//! the API server is ready), `kubectl top` (metrics appear after two reads
//! of the node) and `kubectl exec … wget` (the Service's rules and DNS
//! records follow the Service within moments) — is retried for up to two
//! minutes, as a user would re-run it; any other line runs once. Variable assignments
//! (`NAME=…`, `export NAME=…`) carry over to later lines. Beyond the exit
//! codes, the lines' documented results are checked: `get nodes` shows the
//! node Ready, the `wget` through the Service prints a demo pod's name, and
//! nothing of the walkthrough is left at the end.
//!
//! Needs root, containerd, runc and the CNI plugins.

mod support;

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use support::netns::TestNetwork;
use support::netns_server::NetnsServer;

/// How long a retried line gets.
const RETRY_FOR: Duration = Duration::from_secs(120);

/// The README's walkthrough: its shell lines, comments and blank lines dropped.
fn walkthrough() -> Vec<String> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
        .expect("read README.md");
    let begin = readme.find("<!-- walkthrough:begin -->").expect("README.md has a walkthrough:begin marker");
    let end = readme.find("<!-- walkthrough:end -->").expect("README.md has a walkthrough:end marker");
    let block = &readme[begin..end];
    let body = block.split("```sh").nth(1).and_then(|b| b.split("```").next()).expect("one ```sh block");
    body.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(str::to_string).collect()
}

/// Lines a user would re-run until they answer (see the module docs).
fn retried(line: &str) -> bool {
    line.starts_with("kubectl get nodes")
        || line.starts_with("kubectl top")
        || (line.starts_with("kubectl exec") && line.contains("wget"))
}

/// What the README says a line shows, where it says so: `get nodes` lists
/// the node Ready; the `wget` through the Service prints a demo pod's name.
fn documented_result(line: &str, node: &str, out: &Output) -> Result<(), String> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    if line.starts_with("kubectl get nodes") {
        let row = stdout.lines().find(|l| l.starts_with(node)).ok_or_else(|| format!("no row for {node}: {stdout}"))?;
        if row.split_whitespace().nth(1) != Some("Ready") {
            return Err(format!("the node is not Ready: {row}"));
        }
    }
    if line.contains("wget") && line.contains("http://demo/etc/hostname") && !stdout.trim().starts_with("demo-") {
        return Err(format!("a demo pod should answer through the Service: {stdout}"));
    }
    Ok(())
}

/// A variable assignment the following lines need.
fn is_assignment(line: &str) -> bool {
    let l = line.strip_prefix("export ").unwrap_or(line);
    l.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    })
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn the_readme_walkthrough_runs_as_written() {
    support::require_root_and_runtime();
    let lines = walkthrough();
    assert!(lines.iter().any(|l| l.starts_with("kubectl create deployment")), "the walkthrough creates a Deployment: {lines:?}");

    let started = Instant::now();
    let net = TestNetwork::create(1);
    let tmp = tempfile::Builder::new().prefix("rkube-readme-").tempdir().unwrap();
    let data_dir = tmp.path().join("server");
    // The README's set-up: scripts/install.sh ends with `rkube images build-local`.
    let out = support::run_rkube(&["images", "build-local", "--data-dir", data_dir.to_str().unwrap()], Duration::from_secs(120));
    assert!(out.status.success(), "rkube images build-local: {}", text(&out));
    let node = format!("readme-{}", std::process::id());
    let log = tmp.path().join("server.log");
    let mut server = NetnsServer::start(&net.hosts[0], &node, &data_dir, &[], &log);
    if let Err(e) = server.wait_ready(Duration::from_secs(120)) {
        panic!("rkube server did not become ready: {e}\n{}", server.logs());
    }

    let data_dir = data_dir.to_str().unwrap();
    let mut assignments: Vec<String> = Vec::new();
    for line in &lines {
        let line = line.replace("/var/lib/rkube", data_dir);
        let script = format!("set -e\n{}\n{line}\n", assignments.join("\n"));
        let deadline = Instant::now() + if retried(&line) { RETRY_FOR } else { Duration::ZERO };
        let (out, checked) = loop {
            let out = net.hosts[0].run("sh", &["-c", &script]);
            let checked = if out.status.success() { documented_result(&line, &node, &out) } else { Ok(()) };
            if (out.status.success() && checked.is_ok()) || Instant::now() >= deadline {
                break (out, checked);
            }
            std::thread::sleep(Duration::from_secs(2));
        };
        eprintln!("[{:>6.1}s] $ {line}\n{}", started.elapsed().as_secs_f64(), text(&out).trim_end());
        assert!(
            out.status.success(),
            "README walkthrough line failed ({}): {line}\n{}\n--- server log (tail) ---\n{}",
            out.status,
            text(&out),
            tail(&server.logs(), 60)
        );
        if let Err(e) = checked {
            panic!("README walkthrough line: {line}\n{e}");
        }
        if is_assignment(&line) {
            assignments.push(line.clone());
        }
    }

    // The walkthrough ends by deleting what it made: its pods finish terminating
    // (busybox httpd ignores SIGTERM, so within the 30 s grace period) and nothing is left.
    let deadline = Instant::now() + Duration::from_secs(120);
    let left = loop {
        let out = server.kubectl(&["get", "deployments,services,pods", "-n", "default", "-o", "name"]);
        assert!(out.status.success(), "{}", text(&out));
        let left: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.is_empty() && *l != "service/kubernetes")
            .map(str::to_string)
            .collect();
        if left.is_empty() || Instant::now() >= deadline {
            break left;
        }
        std::thread::sleep(Duration::from_secs(2));
    };
    assert!(left.is_empty(), "left after the walkthrough: {left:?}");
    server.stop(Duration::from_secs(30));
}

fn tail(log: &str, n: usize) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
