//! Pod features on a real node (issue 7): probes and readiness gates,
//! ConfigMap/Secret/downward API volumes and env (with an in-place
//! ConfigMap update and tmpfs secrets), `kubectl exec` exit codes, and
//! static pods with their mirror pods — checked through the real kubectl.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::node::{condition, NodeCluster};

fn state<'a>(pod: &'a Value, container: &str) -> &'a Value {
    pod["status"]["containerStatuses"]
        .as_array()
        .and_then(|v| v.iter().find(|s| s["name"] == container))
        .unwrap_or(&Value::Null)
}

fn pod(name: &str, labels: Value, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels}, "spec": spec})
}

/// A child process killed however the test ends.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const FOREVER: &str = "trap 'exit 0' TERM; while true; do sleep 1; done";

/// A failing liveness probe restarts the container (Unhealthy, then
/// Killing with upstream's message); a readiness gate holds Ready False
/// until its condition is True; readiness follows an httpGet probe.
#[test]
fn liveness_restarts_readiness_follows_probes_and_gates() {
    let c = NodeCluster::start(&[]);
    c.server.create(&pod("live", json!({}), json!({
        "terminationGracePeriodSeconds": 1,
        "containers": [{"name": "c", "image": c.busybox,
            "command": ["sh", "-c", format!("touch /tmp/ok; sleep 3; rm /tmp/ok; {FOREVER}")],
            "livenessProbe": {"exec": {"command": ["test", "-f", "/tmp/ok"]}, "periodSeconds": 1, "failureThreshold": 2}}]
    })));
    c.server.create(&pod(
        "gated",
        json!({}),
        json!({
            "terminationGracePeriodSeconds": 1,
            "readinessGates": [{"conditionType": "example.com/ready"}],
            "containers": [{"name": "c", "image": c.busybox, "command": ["sh", "-c", FOREVER]}]
        }),
    ));
    c.server.create(&pod(
        "web",
        json!({}),
        json!({
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {"name": "httpd", "image": c.busybox,
                 "command": ["sh", "-c", "mkdir /www && echo ok > /www/index.html && exec httpd -f -p 8080 -h /www"],
                 "readinessProbe": {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 1}},
                {"name": "closed", "image": c.busybox, "command": ["sh", "-c", FOREVER],
                 "readinessProbe": {"tcpSocket": {"port": 81}, "periodSeconds": 1}}]
        }),
    ));

    let p = c.wait_pod("live", Duration::from_secs(90), "restarted by its liveness probe", |p| {
        state(p, "c")["restartCount"].as_i64().unwrap_or(0) >= 1
    });
    assert!(state(&p, "c")["lastState"]["terminated"]["finishedAt"].is_string(), "{}", p["status"]);
    let events = c.pod_events("live");
    assert!(events.iter().any(|(r, m)| r == "Unhealthy" && m.starts_with("Liveness probe failed:")), "{events:?}");
    assert!(
        events.iter().any(|(r, m)| r == "Killing" && m == "Container c failed liveness probe, will be restarted"),
        "{events:?}"
    );

    let g = c.wait_pod("gated", Duration::from_secs(60), "containers ready", |p| {
        condition(p, "ContainersReady")["status"] == "True"
    });
    let ready = condition(&g, "Ready");
    assert_eq!(
        (ready["status"].as_str(), ready["reason"].as_str()),
        (Some("False"), Some("ReadinessGatesNotReady")),
        "{ready}"
    );
    assert_eq!(ready["message"], "corresponding condition of pod readiness gate \"example.com/ready\" does not exist.");
    let patch = r#"[{"op":"add","path":"/status/conditions/-","value":{"type":"example.com/ready","status":"True"}}]"#;
    c.server.kubectl_ok(&["patch", "pod", "gated", "--subresource=status", "--type=json", "-p", patch]);
    c.wait_pod("gated", Duration::from_secs(30), "Ready once its gate is True", |p| {
        condition(p, "Ready")["status"] == "True"
    });

    let w = c.wait_pod("web", Duration::from_secs(60), "httpd ready", |p| state(p, "httpd")["ready"] == true);
    // kubectl port-forward reaches the httpd in the pod.
    let mut pf = KillOnDrop(
        std::process::Command::new(support::KUBECTL)
            .arg("--kubeconfig")
            .arg(c.server.kubeconfig())
            .args(["port-forward", "pod/web", ":8080"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    let mut out = std::io::BufReader::new(pf.0.stdout.take().unwrap());
    std::io::BufRead::read_line(&mut out, &mut line).unwrap();
    // Keep draining: kubectl exits when its "Handling connection" lines hit a closed pipe.
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    // "Forwarding from 127.0.0.1:PORT -> 8080"
    let port: u16 = line
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("kubectl port-forward said {line:?}"));
    // The first connections may race the tunnel's set-up: retry.
    let mut body = String::new();
    c.server.wait_for(Duration::from_secs(30), "a page through kubectl port-forward", || {
        use std::io::{Read, Write};
        let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else { return false };
        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
        let _ = s.write_all(b"GET /index.html HTTP/1.0\r\nHost: web\r\n\r\n");
        body.clear();
        let _ = s.read_to_string(&mut body);
        body.ends_with("ok\n")
    });
    drop(pf);
    assert!(body.starts_with("HTTP/1.") && body.ends_with("ok\n"), "{body}");
    assert_eq!(state(&w, "closed")["ready"], false);
    let ready = condition(&w, "Ready");
    assert_eq!(ready["status"], "False");
    assert_eq!(ready["message"], "containers with unready status: [closed]");
}

/// ConfigMap, Secret and downward API reach the container as env and
/// files; secrets sit on tmpfs; a ConfigMap change shows up in the mounted
/// file; `kubectl exec` returns the command's exit code.
#[test]
fn config_volumes_env_and_exec_reach_the_container() {
    let c = NodeCluster::start(&[]);
    c.server.kubectl_ok(&["create", "configmap", "cfg", "--from-literal=greeting=hello"]);
    c.server.kubectl_ok(&["create", "secret", "generic", "sec", "--from-literal=password=hunter2"]);
    c.server.create(&pod("cfg", json!({"app": "cfg"}), json!({
        "terminationGracePeriodSeconds": 1,
        "volumes": [
            {"name": "cfg", "configMap": {"name": "cfg"}},
            {"name": "sec", "secret": {"secretName": "sec"}},
            {"name": "info", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}}],
        "containers": [{"name": "c", "image": c.busybox, "command": ["sh", "-c", FOREVER],
            "env": [
                {"name": "GREETING", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "greeting"}}},
                {"name": "MY_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                {"name": "MY_NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
            "volumeMounts": [
                {"name": "cfg", "mountPath": "/etc/cfg"},
                {"name": "sec", "mountPath": "/etc/sec", "readOnly": true},
                {"name": "info", "mountPath": "/etc/info"}]}]
    })));
    let p = c.wait_pod("cfg", Duration::from_secs(90), "Running", |p| p["status"]["phase"] == "Running");
    let exec = |cmd: &str| -> (Option<i32>, String) {
        let out = c.server.kubectl(&["exec", "cfg", "-c", "c", "--", "sh", "-c", cmd]);
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
    };
    assert_eq!(exec("echo $GREETING"), (Some(0), "hello\n".into()));
    assert_eq!(
        exec("echo $MY_IP $MY_NODE"),
        (Some(0), format!("{} {}\n", p["status"]["podIP"].as_str().unwrap(), c.node))
    );
    assert_eq!(exec("cat /etc/sec/password"), (Some(0), "hunter2".into()));
    assert_eq!(exec("cat /etc/info/labels"), (Some(0), "app=\"cfg\"".into()));
    let (code, mounts) = exec("grep ' /etc/sec ' /proc/mounts");
    assert_eq!(code, Some(0), "{mounts}");
    assert!(mounts.starts_with("tmpfs "), "secret volumes are tmpfs: {mounts}");
    // The kubernetes Service's variables are there (upstream injects the master service).
    let (_, env) = exec("env");
    assert!(env.contains("KUBERNETES_SERVICE_HOST="), "{env}");
    // The exit code travels back to kubectl.
    let (code, _) = exec("exit 7");
    assert_eq!(code, Some(7));
    // The pod's hostname resolves to its own IP through the managed /etc/hosts.
    let (_, hosts) = exec("cat /etc/hosts");
    assert!(hosts.contains(&format!("{}\tcfg", p["status"]["podIP"].as_str().unwrap())), "{hosts}");

    // kubectl cp copies into and out of the container (tar through exec;
    // the ConfigMap files themselves are symlinks, which kubectl cp skips).
    let copy = tempfile::tempdir().unwrap();
    let (local_in, local_out) = (copy.path().join("in"), copy.path().join("out"));
    std::fs::write(&local_in, "copied\n").unwrap();
    c.server.kubectl_ok(&["cp", local_in.to_str().unwrap(), "cfg:/tmp/copied"]);
    assert_eq!(exec("cat /tmp/copied"), (Some(0), "copied\n".into()));
    c.server.kubectl_ok(&["cp", "cfg:/tmp/copied", local_out.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(&local_out).unwrap(), "copied\n");
    // kubectl debug adds an ephemeral container that runs once.
    c.server.kubectl_ok(&["debug", "cfg", "--image", &c.busybox, "-c", "dbg", "--", "sh", "-c", "echo debug-ok"]);
    let p = c.wait_pod("cfg", Duration::from_secs(60), "the ephemeral container done", |p| {
        p["status"]["ephemeralContainerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    });
    assert_eq!(p["status"]["ephemeralContainerStatuses"][0]["name"], "dbg");
    assert_eq!(c.server.kubectl_ok(&["logs", "cfg", "-c", "dbg"]), "debug-ok\n");
    assert_eq!(p["status"]["phase"], "Running", "an ephemeral container does not change the phase");

    c.server.kubectl_ok(&["patch", "configmap", "cfg", "-p", r#"{"data":{"greeting":"bye"}}"#]);
    c.server.wait_for(Duration::from_secs(60), "the ConfigMap change in the mounted file", || {
        exec("cat /etc/cfg/greeting").1 == "bye"
    });
}

/// A manifest in `<data-dir>/agent/manifests` runs as a static pod with a
/// mirror pod; a deleted mirror comes back (the container keeps running);
/// removing the manifest removes both.
#[test]
fn static_pods_run_with_mirror_pods_that_return_after_deletion() {
    let c = NodeCluster::start(&[]);
    let dir = c.server.data_dir().join("agent").join("manifests");
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: static-web\n  labels:\n    tier: static\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: c\n    image: {}\n    command: [\"sh\", \"-c\", \"{FOREVER}\"]\n",
        c.busybox
    );
    std::fs::write(dir.join("static-web.yaml"), manifest).unwrap();
    let name = format!("static-web-{}", c.node);
    let p = c.wait_pod(&name, Duration::from_secs(90), "a Running mirror pod", |p| p["status"]["phase"] == "Running");
    let ann = &p["metadata"]["annotations"];
    assert_eq!(ann["kubernetes.io/config.source"], "file");
    assert_eq!(ann["kubernetes.io/config.mirror"], ann["kubernetes.io/config.hash"]);
    assert_eq!(p["metadata"]["ownerReferences"][0]["kind"], "Node");
    assert_eq!(p["metadata"]["ownerReferences"][0]["name"], c.node.as_str());
    let container = state(&p, "c")["containerID"].as_str().unwrap().to_string();
    let uid = p["metadata"]["uid"].as_str().unwrap().to_string();

    c.server.kubectl_ok(&["delete", "pod", &name, "--wait=false"]);
    let back = c.wait_pod(&name, Duration::from_secs(60), "the mirror pod to return", |p| {
        p["metadata"]["uid"].as_str().is_some_and(|u| u != uid) && p["status"]["phase"] == "Running"
    });
    assert_eq!(state(&back, "c")["containerID"], container.as_str(), "the static pod kept running");

    std::fs::remove_file(dir.join("static-web.yaml")).unwrap();
    c.server.wait_for(Duration::from_secs(60), "the mirror pod to go with its manifest", || c.pod(&name).is_null());
}

/// The security context and host namespaces reach the container as
/// upstream maps them to CRI; activeDeadlineSeconds fails a pod that runs
/// too long.
#[test]
fn security_context_host_namespaces_and_active_deadline() {
    let c = NodeCluster::start(&[]);
    c.server.create(&pod(
        "secure",
        json!({}),
        json!({
            "terminationGracePeriodSeconds": 1,
            "securityContext": {"runAsUser": 1000, "runAsGroup": 3000, "fsGroup": 2000,
                "sysctls": [{"name": "net.ipv4.ip_unprivileged_port_start", "value": "100"}]},
            "volumes": [{"name": "scratch", "emptyDir": {}}],
            "containers": [{"name": "c", "image": c.busybox, "command": ["sh", "-c", FOREVER],
                "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
                "securityContext": {"readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false,
                    "capabilities": {"drop": ["ALL"]}}}]
        }),
    ));
    c.server.create(&pod(
        "hostnet",
        json!({}),
        json!({
            "terminationGracePeriodSeconds": 1, "hostNetwork": true, "hostPID": true,
            "containers": [{"name": "c", "image": c.busybox, "command": ["sh", "-c", FOREVER]}]
        }),
    ));
    c.server.create(&pod(
        "deadline",
        json!({}),
        json!({
            "terminationGracePeriodSeconds": 1, "activeDeadlineSeconds": 5,
            "containers": [{"name": "c", "image": c.busybox, "command": ["sh", "-c", FOREVER]}]
        }),
    ));
    let exec = |pod: &str, cmd: &str| -> (Option<i32>, String) {
        let out = c.server.kubectl(&["exec", pod, "--", "sh", "-c", cmd]);
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
    };
    c.wait_pod("secure", Duration::from_secs(90), "Running", |p| p["status"]["phase"] == "Running");
    let (_, id) = exec("secure", "id -u; id -g; id -G");
    let ids: Vec<&str> = id.split_whitespace().collect();
    assert_eq!(&ids[..2], ["1000", "3000"], "{id}");
    assert!(ids[2..].contains(&"2000"), "fsGroup is a supplementary group: {id}");
    let (code, out) = exec("secure", "touch /rootfs-write");
    assert_ne!(code, Some(0), "the root filesystem is read-only: {out}");
    assert_eq!(exec("secure", "touch /scratch/ok && stat -c %g /scratch").1, "2000\n", "emptyDir owned by fsGroup");
    let (_, caps) = exec("secure", "grep CapEff /proc/self/status");
    assert!(caps.trim_end().ends_with("0000000000000000"), "no effective capabilities: {caps}");
    assert_eq!(exec("secure", "cat /proc/sys/net/ipv4/ip_unprivileged_port_start").1, "100\n");

    let h = c.wait_pod("hostnet", Duration::from_secs(90), "Running", |p| p["status"]["phase"] == "Running");
    assert_eq!(h["status"]["podIP"], h["status"]["hostIP"], "a hostNetwork pod has the node's address");
    // Host PID namespace: PID 1 is the host's init, not the container's shell.
    let (_, comm) = exec("hostnet", "cat /proc/1/comm");
    assert_ne!(comm.trim(), "sh", "{comm}");

    let d =
        c.wait_pod("deadline", Duration::from_secs(90), "failed by its deadline", |p| p["status"]["phase"] == "Failed");
    assert_eq!(d["status"]["reason"], "DeadlineExceeded");
    assert_eq!(d["status"]["message"], "Pod was active on the node longer than the specified deadline");
    assert!(state(&d, "c")["state"]["terminated"].is_object(), "{}", d["status"]);
}
