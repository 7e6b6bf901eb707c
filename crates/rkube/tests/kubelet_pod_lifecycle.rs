//! Pod lifecycle details on a real node (issue 7) that unit tests cover
//! only in part: the kernel hostname of `setHostnameAsFQDN` pods, and the
//! preStop `sleep` and `httpGet` handlers run before the container gets
//! its TERM — checked through the real kubectl against real containers.
//!
//! One node cluster serves every case (its start dominates the run time);
//! the pods, the cluster and the host directories the test owns go however
//! the test ends (the tempdir is declared first, so it is dropped last,
//! after the cluster's teardown).

mod support;

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::{json, Value};
use support::node::{condition, NodeCluster};

fn pod(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
}

/// The preStop sleep, in seconds.
const PRESTOP_SLEEP: u64 = 3;

/// The CGI script the httpGet preStop calls: it leaves a marker in the
/// test's host directory and answers 200.
const PRESTOP_CGI: &str =
    "#!/bin/sh\necho prestop-called > /out/marker\necho 'Content-Type: text/plain'\necho\necho ok\n";

/// `kubectl exec <pod> -- hostname`.
fn hostname(c: &NodeCluster, pod: &str) -> String {
    c.server.kubectl_ok(&["exec", pod, "--", "hostname"])
}

/// Whether `kubectl get pod <name>` answers NotFound.
fn gone(c: &NodeCluster, name: &str) -> bool {
    let out = c.server.kubectl(&["get", "pod", name]);
    !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("NotFound")
}

/// The file's modification time.
fn mtime(path: &Path) -> SystemTime {
    std::fs::metadata(path).and_then(|m| m.modified()).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// setHostnameAsFQDN: the kernel hostname is `<hostname>.<subdomain>.<ns>.svc.<cluster-domain>`
/// (upstream's `GetNodenameForKernel`), plain `<hostname>` without it.
/// preStop sleep: TERM arrives no sooner than the sleep after the delete.
/// preStop httpGet: the handler's request reaches the container before it
/// stops ("Pod Lifecycle, prestop http hook" of conformance.yaml, here with
/// the server in the stopping pod itself).
#[test]
fn hostname_fqdn_and_prestop_sleep_and_http_handlers() {
    // Declared first: dropped after the cluster (and its bind mounts) are gone.
    let host = tempfile::Builder::new().prefix("rkube-lifecycle-").tempdir().unwrap();
    let (sleep_dir, http_dir) = (host.path().join("sleep"), host.path().join("http"));
    std::fs::create_dir(&sleep_dir).unwrap();
    std::fs::create_dir(&http_dir).unwrap();
    let c = NodeCluster::start(&[]);

    let forever = "trap 'exit 0' TERM; while true; do sleep 1; done";
    for (name, fqdn) in [("fqdn", true), ("short", false)] {
        c.server.create(&pod(
            name,
            json!({
                "terminationGracePeriodSeconds": 1,
                "hostname": "web-0",
                "subdomain": "svc",
                "setHostnameAsFQDN": fqdn,
                "containers": [{"name": "c", "image": c.busybox, "command": ["sh", "-c", forever]}]
            }),
        ));
    }
    // TERM (after the preStop sleep) appends a line to /out/term; /out/ready
    // says the trap is in place.
    c.server.create(&pod(
        "sleeper",
        json!({
            "terminationGracePeriodSeconds": 20,
            "volumes": [{"name": "out", "hostPath": {"path": sleep_dir, "type": "Directory"}}],
            "containers": [{"name": "c", "image": c.busybox,
                "command": ["sh", "-c", "trap 'echo TERM >> /out/term; exit 0' TERM; touch /out/ready; \
                                         while true; do sleep 0.2; done"],
                "volumeMounts": [{"name": "out", "mountPath": "/out"}],
                "lifecycle": {"preStop": {"sleep": {"seconds": PRESTOP_SLEEP}}}}]
        }),
    ));
    let script = "mkdir -p /www/cgi-bin && printf '%s' \"$CGI\" > /www/cgi-bin/prestop \
                  && chmod 755 /www/cgi-bin/prestop && exec httpd -f -p 8080 -h /www";
    c.server.create(&pod(
        "hooked",
        json!({
            "terminationGracePeriodSeconds": 20,
            "volumes": [{"name": "out", "hostPath": {"path": http_dir, "type": "Directory"}}],
            "containers": [{"name": "httpd", "image": c.busybox,
                "command": ["sh", "-c", script],
                "env": [{"name": "CGI", "value": PRESTOP_CGI}],
                "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1},
                "volumeMounts": [{"name": "out", "mountPath": "/out"}],
                "lifecycle": {"preStop": {"httpGet": {"path": "/cgi-bin/prestop", "port": 8080}}}}]
        }),
    ));

    // setHostnameAsFQDN.
    for name in ["fqdn", "short"] {
        c.wait_pod(name, Duration::from_secs(90), "Running", |p| p["status"]["phase"] == "Running");
    }
    assert_eq!(hostname(&c, "fqdn"), "web-0.svc.default.svc.cluster.local\n");
    assert_eq!(hostname(&c, "short"), "web-0\n");

    // Both preStop pods are running with their TERM trap / server in place.
    c.wait_pod("hooked", Duration::from_secs(90), "Ready (httpd listening)", |p| {
        condition(p, "Ready")["status"] == "True"
    });
    c.wait_pod("sleeper", Duration::from_secs(90), "Running", |p| p["status"]["phase"] == "Running");
    c.server.wait_for(Duration::from_secs(30), "the sleeper's TERM trap", || sleep_dir.join("ready").exists());
    assert!(!http_dir.join("marker").exists(), "the preStop handler ran before any delete");

    let deleted_at = SystemTime::now();
    c.server.kubectl_ok(&["delete", "pod", "sleeper", "hooked", "--wait=false"]);
    // Generous: the sleep, TERM, then the kubelet's final delete.
    c.server
        .wait_for(Duration::from_secs(60), "the preStop pods to be gone", || gone(&c, "sleeper") && gone(&c, "hooked"));

    // preStop sleep: TERM came once, at least the sleep after the delete was sent.
    let term = sleep_dir.join("term");
    assert_eq!(
        std::fs::read_to_string(&term).unwrap_or_else(|e| panic!("no TERM recorded ({e})\n{}", c.server.logs())),
        "TERM\n"
    );
    let after = mtime(&term).duration_since(deleted_at).unwrap_or_default();
    assert!(
        after >= Duration::from_secs(PRESTOP_SLEEP),
        "TERM {after:?} after the delete; the preStop sleep is {PRESTOP_SLEEP} s"
    );

    // preStop httpGet: the handler's request ran the CGI in the container.
    let marker = std::fs::read_to_string(http_dir.join("marker"))
        .unwrap_or_else(|e| panic!("the preStop httpGet left no marker ({e})\n{}", c.server.logs()));
    assert_eq!(marker, "prestop-called\n");
}
