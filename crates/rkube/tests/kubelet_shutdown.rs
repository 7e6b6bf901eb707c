//! Graceful node shutdown (issue 7, item 15; upstream's
//! pkg/kubelet/nodeshutdown): the in-server agent with
//! `--shutdown-grace-period 20s --shutdown-grace-period-critical-pods 8s`
//! against a fake systemd-logind served on a private `dbus-daemon` (this
//! machine has no systemd), reached through `DBUS_SYSTEM_BUS_ADDRESS`.
//! The fake answers `InhibitDelayMaxUSec`, hands out a pipe's write end as
//! the inhibitor lock (the test sees the lock released when its read end
//! hits end of file) and emits `PrepareForShutdown`. Checked through the
//! real kubectl: the node goes NotReady with `node is shutting down`, the
//! regular pod is failed and stopped before the critical one with
//! upstream's status, new pods are rejected, the lock is released after
//! the pods stopped, and a cancellation brings Ready back and takes the
//! lock again. Without a system bus the agent still runs pods.

mod support;

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{json, Value};
use support::node::{condition, NodeCluster};

const LOGIND: &str = "org.freedesktop.login1";
const LOGIND_OBJECT: &str = "/org/freedesktop/login1";
const LOGIND_MANAGER: &str = "org.freedesktop.login1.Manager";
const SHUTDOWN_MESSAGE: &str = "Pod was terminated in response to imminent node shutdown.";

/// A private `dbus-daemon` allowing everything, killed on drop.
struct DbusDaemon {
    child: Child,
    address: String,
}

impl DbusDaemon {
    fn start(dir: &Path) -> DbusDaemon {
        let socket = dir.join("bus");
        let config = dir.join("bus.conf");
        let address = format!("unix:path={}", socket.display());
        std::fs::write(
            &config,
            r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>custom</type>
  <listen>ADDRESS</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow receive_sender="*"/>
    <allow eavesdrop="true"/>
  </policy>
</busconfig>
"#
            .replace("ADDRESS", &address),
        )
        .unwrap();
        let mut child = Command::new("/usr/bin/dbus-daemon")
            .arg(format!("--config-file={}", config.display()))
            .args(["--nofork", "--print-address"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start /usr/bin/dbus-daemon (Debian package dbus-daemon)");
        // The address is printed once the bus listens.
        let mut out = child.stdout.take().unwrap();
        let mut line = Vec::new();
        let mut b = [0u8; 1];
        while out.read(&mut b).map(|n| n == 1).unwrap_or(false) && b[0] != b'\n' {
            line.push(b[0]);
        }
        let daemon = DbusDaemon { child, address };
        assert!(
            socket.exists(),
            "dbus-daemon printed {:?} but {} is missing",
            String::from_utf8_lossy(&line),
            socket.display()
        );
        daemon
    }
}

impl Drop for DbusDaemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One `Inhibit` call the fake logind answered.
struct Inhibitor {
    args: (String, String, String, String),
    /// Set once every copy of the lock descriptor was closed.
    released: Arc<AtomicBool>,
}

/// The fake logind's record of what it was asked.
#[derive(Default)]
struct Calls {
    inhibitors: Vec<Inhibitor>,
    delay_reads: usize,
}

/// A fake `org.freedesktop.login1` on the bus at `address`.
async fn serve_logind(address: &str, delay: Duration, calls: Arc<Mutex<Calls>>) -> zbus::Connection {
    let conn = zbus::connection::Builder::address(address)
        .name(LOGIND)
        .build()
        .await
        .expect("connect the fake logind to the private bus");
    let mut stream = zbus::MessageStream::from(&conn);
    let server = conn.clone();
    tokio::spawn(async move {
        while let Some(Ok(msg)) = stream.next().await {
            if msg.message_type() != zbus::message::Type::MethodCall {
                continue;
            }
            let h = msg.header();
            let iface = h.interface().map(|i| i.to_string()).unwrap_or_default();
            let member = h.member().map(|m| m.to_string()).unwrap_or_default();
            let r = match (iface.as_str(), member.as_str()) {
                ("org.freedesktop.DBus.Properties", "Get") => {
                    let (_, prop): (String, String) = msg.body().deserialize().unwrap();
                    assert_eq!(prop, "InhibitDelayMaxUSec");
                    calls.lock().unwrap().delay_reads += 1;
                    server.reply(&h, &zbus::Variant::from(delay.as_micros() as u64)).await
                }
                (LOGIND_MANAGER, "Inhibit") => {
                    let args: (String, String, String, String) = msg.body().deserialize().unwrap();
                    let (mut reader, writer) = std::io::pipe().unwrap();
                    let released = Arc::new(AtomicBool::new(false));
                    let flag = released.clone();
                    // EOF once rkube closed the lock (and every other copy is gone).
                    std::thread::spawn(move || {
                        let mut buf = [0u8; 16];
                        while reader.read(&mut buf).map(|n| n > 0).unwrap_or(false) {}
                        flag.store(true, Ordering::SeqCst);
                    });
                    calls.lock().unwrap().inhibitors.push(Inhibitor { args, released });
                    // Our copy of the write end is closed once sent.
                    server.reply(&h, &zbus::Fd::from(std::os::fd::OwnedFd::from(writer))).await
                }
                _ => continue,
            };
            r.expect("reply from the fake logind");
        }
    });
    conn
}

fn pod(name: &str, namespace: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec})
}

fn get_pod(c: &NodeCluster, ns: &str, name: &str) -> Value {
    let out = c.server.kubectl(&["get", "pod", "-n", ns, name, "-o", "json"]);
    if !out.status.success() {
        return Value::Null;
    }
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

fn wait_pod(c: &NodeCluster, ns: &str, name: &str, what: &str, f: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let p = get_pod(c, ns, name);
        if f(&p) {
            return p;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for pod {ns}/{name}: {what}\nlast seen: {}\n{}",
            p["status"],
            c.server.logs()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn node_ready(c: &NodeCluster) -> Value {
    condition(&c.server.get_json(&["node", &c.node]), "Ready").clone()
}

fn finished_at(p: &Value) -> jiff::Timestamp {
    let s = &p["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"];
    s.as_str().unwrap_or_else(|| panic!("a terminated container, got {}", p["status"])).parse().unwrap()
}

fn assert_failed_by_shutdown(p: &Value) {
    let s = &p["status"];
    assert_eq!(s["phase"], "Failed", "{s}");
    assert_eq!(s["reason"], "Terminated", "{s}");
    assert_eq!(s["message"], SHUTDOWN_MESSAGE, "{s}");
    let d = condition(p, "DisruptionTarget");
    assert_eq!(d["status"], "True", "{s}");
    assert_eq!(d["reason"], "TerminationByKubelet", "{s}");
    assert_eq!(d["message"], SHUTDOWN_MESSAGE, "{s}");
}

/// The whole graceful shutdown as upstream's node shutdown manager runs it.
#[test]
fn graceful_node_shutdown_stops_pods_by_priority_then_releases_the_inhibitor() {
    support::require_root_and_runtime();
    let tmp = tempfile::tempdir().unwrap();
    let bus = DbusDaemon::start(tmp.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let calls = Arc::new(Mutex::new(Calls::default()));
    let logind = rt.block_on(serve_logind(&bus.address, Duration::from_secs(30), calls.clone()));
    let emit = |shutting_down: bool| {
        rt.block_on(logind.emit_signal(
            None::<&str>,
            LOGIND_OBJECT,
            LOGIND_MANAGER,
            "PrepareForShutdown",
            &shutting_down,
        ))
        .expect("emit PrepareForShutdown");
    };

    let c = NodeCluster::start_with_env(
        &["--shutdown-grace-period", "20s", "--shutdown-grace-period-critical-pods", "8s"],
        &[("DBUS_SYSTEM_BUS_ADDRESS", &bus.address)],
    );
    // The manager read the inhibit delay and took a delay lock on shutdown.
    c.server.wait_for(Duration::from_secs(60), "the inhibitor lock", || !calls.lock().unwrap().inhibitors.is_empty());
    {
        let calls = calls.lock().unwrap();
        assert!(calls.delay_reads >= 1);
        let (what, who, why, mode) = &calls.inhibitors[0].args;
        assert_eq!((what.as_str(), who.as_str(), mode.as_str()), ("shutdown", "kubelet", "delay"));
        assert_eq!(why, "Kubelet needs time to handle node shutdown");
        assert!(!calls.inhibitors[0].released.load(Ordering::SeqCst), "the lock is held while the node runs");
    }

    // Two regular pods with 60 s of grace of their own (the regular group
    // has 20 - 8 = 12 s): one stops 2 s after TERM, one ignores TERM; and a
    // critical pod that exits on TERM.
    c.server.create(&pod(
        "regular",
        "default",
        json!({
            "terminationGracePeriodSeconds": 60,
            "containers": [{"name": "main", "image": c.busybox,
                "command": ["sh", "-c", "trap 'sleep 2; exit 0' TERM; while true; do sleep 1; done"]}]
        }),
    ));
    c.server.create(&pod(
        "stubborn",
        "default",
        json!({
            "terminationGracePeriodSeconds": 60,
            "containers": [{"name": "main", "image": c.busybox,
                "command": ["sh", "-c", "trap '' TERM; while true; do sleep 1; done"]}]
        }),
    ));
    c.server.create(&pod(
        "critical",
        "kube-system",
        json!({
            "terminationGracePeriodSeconds": 30,
            "priorityClassName": "system-node-critical",
            "containers": [{"name": "main", "image": c.busybox,
                "command": ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]}]
        }),
    ));
    for (ns, name) in [("default", "regular"), ("default", "stubborn"), ("kube-system", "critical")] {
        wait_pod(&c, ns, name, "Running", |p| {
            p["status"]["phase"] == "Running" && condition(p, "Ready")["status"] == "True"
        });
    }
    assert_eq!(get_pod(&c, "kube-system", "critical")["spec"]["priority"], 2_000_001_000);

    let signalled = jiff::Timestamp::now();
    emit(true);
    c.server.wait_for(Duration::from_secs(60), "the node to go NotReady for the shutdown", || {
        let r = node_ready(&c);
        r["status"] == "False" && r["message"].as_str().is_some_and(|m| m.contains("node is shutting down"))
    });
    assert_eq!(node_ready(&c)["reason"], "KubeletNotReady");

    // A pod bound now is refused (bound directly: the NotReady node is tainted for the scheduler).
    c.server.create(&pod(
        "late",
        "default",
        json!({
            "nodeName": c.node,
            "containers": [{"name": "main", "image": c.busybox, "command": ["sleep", "3600"]}]
        }),
    ));
    let late = wait_pod(&c, "default", "late", "rejected", |p| p["status"]["phase"] == "Failed");
    assert_eq!(late["status"]["reason"], "NodeShutdown", "{}", late["status"]);
    assert_eq!(late["status"]["message"], "Pod was rejected: Pod was rejected as the node is shutting down.");

    let stopped = |p: &Value| {
        p["status"]["phase"] == "Failed" && p["status"]["containerStatuses"][0]["state"]["terminated"].is_object()
    };
    let regular = wait_pod(&c, "default", "regular", "failed and stopped", stopped);
    let stubborn = wait_pod(&c, "default", "stubborn", "failed and stopped", stopped);
    let critical = wait_pod(&c, "kube-system", "critical", "failed and stopped", stopped);
    for p in [&regular, &stubborn, &critical] {
        assert_failed_by_shutdown(p);
    }
    let exit_code = |p: &Value| p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"].clone();
    assert_eq!(exit_code(&regular), 0);
    // The stubborn pod was KILLed at the end of the group's 12 s, far before its own 60 s.
    assert_eq!(exit_code(&stubborn), 137);
    let took = finished_at(&stubborn).duration_since(signalled).as_secs();
    assert!(took < 50, "the stubborn pod stopped {took}s after the shutdown began (group period 12s, own 60s)");
    // The critical group starts only after the regular one (the critical pod exits on TERM at once).
    let (regular_end, critical_end) = (finished_at(&regular), finished_at(&critical));
    assert!(
        critical_end >= regular_end,
        "critical pod stopped at {critical_end}, before the regular one at {regular_end}"
    );
    assert_eq!(exit_code(&critical), 0);
    // ... and only once the regular group's 12 s passed (the stubborn pod never stopped on its own).
    let waited = critical_end.duration_since(signalled).as_secs();
    assert!(
        waited >= 10,
        "the critical pod stopped {waited}s after the shutdown began, within the regular group's 12s"
    );

    // Then the lock is released: the shutdown may proceed.
    c.server.wait_for(Duration::from_secs(60), "the inhibitor lock to be released", || {
        calls.lock().unwrap().inhibitors[0].released.load(Ordering::SeqCst)
    });
    let events = c.server.get_json(&[
        "events",
        "--field-selector",
        &format!("involvedObject.name={},reason=NodeShutdown", c.node),
    ]);
    let messages: Vec<&str> =
        events["items"].as_array().unwrap().iter().filter_map(|e| e["message"].as_str()).collect();
    assert!(messages.contains(&"Shutdown manager detected shutdown event"), "{messages:?}");

    // Cancelled: Ready again, and a new lock.
    emit(false);
    c.server.wait_for(Duration::from_secs(60), "the node to be Ready after the cancellation", || {
        node_ready(&c)["status"] == "True"
    });
    c.server.wait_for(Duration::from_secs(60), "the inhibitor lock taken again", || {
        calls.lock().unwrap().inhibitors.len() == 2
    });
    assert!(!calls.lock().unwrap().inhibitors[1].released.load(Ordering::SeqCst));
    drop(c);
    drop(logind);
    drop(rt);
    drop(bus);
}

/// Without a system bus (no systemd) the manager logs why it cannot
/// start and the node runs pods as usual.
#[test]
fn without_a_system_bus_the_node_runs_pods_and_says_why_shutdown_is_off() {
    support::require_root_and_runtime();
    let tmp = tempfile::tempdir().unwrap();
    let absent = format!("unix:path={}", tmp.path().join("no-bus").display());
    let c = NodeCluster::start_with_env(
        &["--shutdown-grace-period", "20s", "--shutdown-grace-period-critical-pods", "8s"],
        &[("DBUS_SYSTEM_BUS_ADDRESS", &absent)],
    );
    c.server.create(&pod(
        "plain",
        "default",
        json!({
            "containers": [{"name": "main", "image": c.busybox, "command": ["sleep", "3600"]}]
        }),
    ));
    wait_pod(&c, "default", "plain", "Running", |p| p["status"]["phase"] == "Running");
    assert_eq!(node_ready(&c)["status"], "True");
    let logs = c.server.logs();
    assert!(logs.contains("failed to start node shutdown manager: cannot connect to the system D-Bus"), "{logs}");
}

/// logind allows less delay than the grace period: upstream rewrites
/// logind's configuration; rkube never writes /etc, so it says what to set
/// and takes no lock.
#[test]
fn a_too_short_logind_inhibit_delay_is_reported_with_what_to_set() {
    support::require_root_and_runtime();
    let tmp = tempfile::tempdir().unwrap();
    let bus = DbusDaemon::start(tmp.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let calls = Arc::new(Mutex::new(Calls::default()));
    let logind = rt.block_on(serve_logind(&bus.address, Duration::from_secs(5), calls.clone()));
    let c = NodeCluster::start_with_env(
        &["--shutdown-grace-period", "20s", "--shutdown-grace-period-critical-pods", "8s"],
        &[("DBUS_SYSTEM_BUS_ADDRESS", &bus.address)],
    );
    c.server.wait_for(Duration::from_secs(60), "the manager's error", || {
        c.server.logs().contains("failed to start node shutdown manager: logind's InhibitDelayMaxSec is 5s")
    });
    let logs = c.server.logs();
    assert!(logs.contains("set InhibitDelayMaxSec=20"), "{logs}");
    assert!(logs.contains("/etc/systemd/logind.conf.d/"), "{logs}");
    let calls = calls.lock().unwrap();
    assert!(calls.delay_reads >= 1);
    assert!(calls.inhibitors.is_empty(), "no lock is taken when logind cannot wait long enough");
    assert_eq!(node_ready(&c)["status"], "True");
    drop(c);
    drop(logind);
    drop(rt);
    drop(bus);
}
