//! Node-pressure eviction on a real node (issue 7 item 15): with a hard
//! threshold this machine always crosses (`memory.available<1000Ti`), the
//! node reports MemoryPressure with upstream's reason, rejects new
//! BestEffort pods at admission (`Pod was rejected: The node had condition:
//! [MemoryPressure]. `), and fails the BestEffort pod that tolerates the
//! memory-pressure taint first — phase Failed, reason Evicted, upstream's
//! message, DisruptionTarget TerminationByKubelet, a Warning Evicted event —
//! and its containers are stopped. A soft threshold evicts only after its
//! grace period, with `--eviction-max-pod-grace-period`.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::node::{condition, NodeCluster};

/// A pod bound straight to the node: the node-lifecycle controller taints
/// a node under memory pressure `NoSchedule`, so the scheduler would not
/// place these pods (as upstream).
fn pod(name: &str, node: &str, image: &str, memory_request: Option<&str>) -> Value {
    let mut container = json!({
        "name": "main", "image": image,
        "command": ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"],
    });
    if let Some(m) = memory_request {
        container["resources"] = json!({"requests": {"memory": m}});
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"nodeName": node, "terminationGracePeriodSeconds": 5, "containers": [container]}})
}

/// The same pod, tolerating the node's `memory-pressure:NoSchedule` taint.
fn tolerating(mut p: Value) -> Value {
    p["spec"]["tolerations"] =
        json!([{"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"}]);
    p
}

fn phase(p: &Value) -> &str {
    p["status"]["phase"].as_str().unwrap_or("")
}

#[test]
fn memory_pressure_rejects_new_best_effort_pods_and_evicts_the_best_effort_pod_first() {
    let c = NodeCluster::start(&["--eviction-hard", "memory.available<1000Ti"]);
    // The node condition, with upstream's reason and message; the other pressures stay False.
    c.server.wait_for(Duration::from_secs(40), "MemoryPressure True", || {
        let n = c.server.get_json(&["node", &c.node]);
        condition(&n, "MemoryPressure")["status"] == "True"
    });
    let n = c.server.get_json(&["node", &c.node]);
    let mp = condition(&n, "MemoryPressure");
    assert_eq!(mp["reason"], "KubeletHasInsufficientMemory", "{mp}");
    assert_eq!(mp["message"], "kubelet has insufficient memory available", "{mp}");
    assert_eq!(condition(&n, "DiskPressure")["status"], "False");
    assert_eq!(condition(&n, "PIDPressure")["status"], "False");
    assert_eq!(condition(&n, "Ready")["status"], "True");
    let selector = format!("involvedObject.name={}", c.node);
    let node_events = c.server.get_json(&["events", "--field-selector", &selector]);
    assert!(
        node_events["items"].as_array().unwrap().iter().any(|e| e["reason"] == "NodeHasInsufficientMemory"
            && e["message"] == format!("Node {} status is now: NodeHasInsufficientMemory", c.node)),
        "{node_events}"
    );

    // Admission under MemoryPressure (upstream's eviction Admit): a new
    // BestEffort pod is rejected, reported Failed with reason Evicted, and
    // a Warning Evicted event carries the reason.
    c.server.create(&pod("rejected", &c.node, &c.busybox, None));
    let r = c.wait_pod("rejected", Duration::from_secs(60), "Failed", |p| phase(p) == "Failed");
    assert_eq!(r["status"]["reason"], "Evicted", "{}", r["status"]);
    assert_eq!(
        r["status"]["message"], "Pod was rejected: The node had condition: [MemoryPressure]. ",
        "{}",
        r["status"]
    );
    let events = c.server.get_json(&["events", "--field-selector", "involvedObject.name=rejected"]);
    let ev = events["items"].as_array().unwrap().iter().find(|e| e["reason"] == "Evicted");
    let ev = ev.unwrap_or_else(|| panic!("no Evicted event: {events}"));
    assert_eq!(ev["type"], "Warning");
    assert_eq!(ev["message"], "The node had condition: [MemoryPressure]. ");
    assert!(
        r["status"]["containerStatuses"].as_array().into_iter().flatten().all(|s| s["state"]["running"].is_null()),
        "a rejected pod never starts: {}",
        r["status"]
    );

    // A Burstable pod under its request outranks nothing: the BestEffort pod
    // (admitted because it tolerates the memory-pressure taint) goes first.
    // (Created first: only started pods are candidates, so whichever order
    // the sandboxes come up in, the BestEffort pod is never behind.)
    c.server.create(&tolerating(pod("besteffort", &c.node, &c.busybox, None)));
    c.server.create(&pod("burstable", &c.node, &c.busybox, Some("1Gi")));
    let p = c.wait_pod("besteffort", Duration::from_secs(60), "Failed", |p| phase(p) == "Failed");
    let other = c.pod("burstable");
    assert_ne!(phase(&other), "Failed", "the Burstable pod was evicted before the BestEffort one: {}", other["status"]);
    assert_eq!(p["status"]["qosClass"], "BestEffort");
    assert_eq!(p["status"]["reason"], "Evicted", "{}", p["status"]);
    let message = p["status"]["message"].as_str().unwrap();
    let prefix = "The node was low on resource: memory. Threshold quantity: 1000Ti, available: ";
    assert!(message.starts_with(prefix), "{message}");
    let available = message[prefix.len()..].split(". ").next().unwrap();
    assert!(
        available.trim_end_matches(|ch: char| ch.is_ascii_alphabetic()).parse::<u64>().is_ok(),
        "available {available:?} in {message}"
    );
    let dt = condition(&p, "DisruptionTarget");
    assert_eq!(dt["status"], "True", "{}", p["status"]);
    assert_eq!(dt["reason"], "TerminationByKubelet");
    assert_eq!(dt["message"], message);
    let events = c.server.get_json(&["events", "--field-selector", "involvedObject.name=besteffort"]);
    let evicted = events["items"].as_array().unwrap().iter().find(|e| e["reason"] == "Evicted");
    let evicted = evicted.unwrap_or_else(|| panic!("no Evicted event: {events}"));
    assert_eq!(evicted["type"], "Warning");
    assert_eq!(evicted["message"], message);

    // The pod workers stop the containers of the failed pod.
    let p = c.wait_pod("besteffort", Duration::from_secs(60), "containers stopped", |p| {
        p["status"]["containerStatuses"]
            .as_array()
            .is_some_and(|cs| cs.iter().all(|s| s["state"]["running"].is_null() && s["ready"] == false))
    });
    assert_eq!(p["status"]["reason"], "Evicted", "the workers kept the eviction verdict: {}", p["status"]);
    assert_eq!(phase(&p), "Failed");

    // Pressure persists: the Burstable pod is next, one pod per interval.
    let b = c.wait_pod("burstable", Duration::from_secs(60), "evicted next", |p| phase(p) == "Failed");
    assert_eq!(b["status"]["reason"], "Evicted");
}

fn node_images(c: &NodeCluster) -> Vec<String> {
    let n = c.server.get_json(&["node", &c.node]);
    n["status"]["images"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|i| i["names"].as_array().into_iter().flatten())
        .filter_map(|n| n.as_str().map(String::from))
        .collect()
}

/// Image GC over the high threshold (0% here, so it always runs): an image
/// a container uses is kept, once unused it is removed, the pause image
/// never is, and not freeing enough is a FreeDiskSpaceFailed event on the
/// Node (ImageGCFailed when it fails twice in a row), as upstream.
#[test]
fn image_gc_removes_unused_images_but_not_the_pause_image() {
    let started = std::time::Instant::now();
    let c = NodeCluster::start(&[
        "--image-gc-high-threshold",
        "0",
        "--image-gc-low-threshold",
        "0",
        "--image-gc-period",
        "2s",
        "--minimum-image-ttl-duration",
        "30s",
    ]);
    let mut p = pod("user", &c.node, &c.busybox, None);
    p["spec"].as_object_mut().unwrap().remove("nodeName");
    c.server.create(&p);
    c.wait_pod("user", Duration::from_secs(60), "Running", |p| phase(p) == "Running");
    // Past the minimum age, the image in use is still there.
    std::thread::sleep(Duration::from_secs(40).saturating_sub(started.elapsed()));
    std::thread::sleep(Duration::from_secs(5));
    c.server.wait_for(Duration::from_secs(20), "images in the node status", || !node_images(&c).is_empty());
    assert!(node_images(&c).contains(&c.busybox), "{:?}", node_images(&c));
    let out = c.server.kubectl(&["delete", "pod", "user", "--wait=true", "--timeout=60s"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    c.server.wait_for(Duration::from_secs(60), "the unused busybox image to be removed", || {
        !node_images(&c).contains(&c.busybox)
    });
    assert!(node_images(&c).iter().any(|n| n == "registry.k8s.io/pause:3.10"), "{:?}", node_images(&c));
    let selector = format!("involvedObject.name={}", c.node);
    let events = c.server.get_json(&["events", "--field-selector", &selector]);
    let items = events["items"].as_array().unwrap();
    let failed = items.iter().find(|e| e["reason"] == "FreeDiskSpaceFailed").unwrap_or_else(|| panic!("{events}"));
    assert_eq!(failed["type"], "Warning");
    let msg = failed["message"].as_str().unwrap();
    assert!(
        msg.starts_with("Failed to garbage collect required amount of images. Attempted to free ")
            && msg.ends_with(" bytes eligible to free."),
        "{msg}"
    );
    // The second failure in a row is also an ImageGCFailed event with the error.
    let gc_failed = items.iter().find(|e| e["reason"] == "ImageGCFailed").unwrap_or_else(|| panic!("{events}"));
    assert_eq!(gc_failed["type"], "Warning");
    assert!(gc_failed["message"].as_str().unwrap().starts_with("Failed to garbage collect required amount"));
}

/// Disk pressure (`imagefs.available<100%` always trips): the node reports
/// DiskPressure with upstream's reason and message, and the eviction manager
/// first reclaims node-level resources — the unused busybox image goes, the
/// pause image stays — as upstream does before evicting pods.
#[test]
fn disk_pressure_reclaims_unused_images_first() {
    let c = NodeCluster::start(&["--eviction-hard", "imagefs.available<100%", "--minimum-image-ttl-duration", "0s"]);
    c.server.wait_for(Duration::from_secs(40), "DiskPressure True", || {
        condition(&c.server.get_json(&["node", &c.node]), "DiskPressure")["status"] == "True"
    });
    let n = c.server.get_json(&["node", &c.node]);
    let dp = condition(&n, "DiskPressure");
    assert_eq!(dp["reason"], "KubeletHasDiskPressure", "{dp}");
    assert_eq!(dp["message"], "kubelet has disk pressure", "{dp}");
    assert_eq!(condition(&n, "MemoryPressure")["status"], "False");
    c.server.wait_for(Duration::from_secs(40), "the unused busybox image to be reclaimed", || {
        let images = node_images(&c);
        !images.is_empty() && !images.contains(&c.busybox)
    });
    assert!(node_images(&c).iter().any(|n| n == "registry.k8s.io/pause:3.10"), "{:?}", node_images(&c));
}

/// A soft threshold (`--eviction-soft memory.available<1000Ti`, grace 1m):
/// MemoryPressure is reported at once (upstream sets the condition from
/// every crossed threshold, grace period or not), a Burstable pod is still
/// admitted, and it is evicted only once the threshold has been crossed
/// for its grace period — checked on the API's own timestamps, not on the
/// test's clock — and stopped with `--eviction-max-pod-grace-period` (2 s)
/// rather than its own 30 s: its TERM handler sleeps 20 s and exits 0, so
/// exit code 137 (SIGKILL) shows the shorter grace period.
#[test]
fn a_soft_threshold_evicts_after_its_grace_period_with_the_max_pod_grace_period() {
    let c = NodeCluster::start(&[
        "--eviction-soft",
        "memory.available<1000Ti",
        "--eviction-soft-grace-period",
        "memory.available=1m",
        "--eviction-max-pod-grace-period",
        "2",
    ]);
    c.server.wait_for(Duration::from_secs(40), "MemoryPressure True", || {
        condition(&c.server.get_json(&["node", &c.node]), "MemoryPressure")["status"] == "True"
    });
    let n = c.server.get_json(&["node", &c.node]);
    let pressure_since = condition(&n, "MemoryPressure")["lastTransitionTime"].as_str().unwrap().to_string();
    let mut p = pod("soft", &c.node, &c.busybox, Some("1Mi"));
    p["spec"]["terminationGracePeriodSeconds"] = json!(30);
    p["spec"]["containers"][0]["command"] =
        json!(["sh", "-c", "trap 'sleep 20; exit 0' TERM; while true; do sleep 1; done"]);
    c.server.create(&p);
    let p = c.wait_pod("soft", Duration::from_secs(180), "evicted", |p| phase(p) == "Failed");
    assert_eq!(p["status"]["reason"], "Evicted", "{}", p["status"]);
    let message = p["status"]["message"].as_str().unwrap();
    assert!(message.starts_with("The node was low on resource: memory. Threshold quantity: 1000Ti"), "{message}");
    let evicted_at = condition(&p, "DisruptionTarget")["lastTransitionTime"].as_str().unwrap().to_string();
    let secs = |t: &str| t.parse::<jiff::Timestamp>().unwrap().as_second();
    // The condition is written within a status interval of the first
    // observation, so with a 60 s grace period the eviction is well over
    // 30 s later (a hard threshold evicts within one interval).
    let waited = secs(&evicted_at) - secs(&pressure_since);
    assert!(waited >= 30, "evicted {waited}s after MemoryPressure ({pressure_since} -> {evicted_at})");
    let p = c.wait_pod("soft", Duration::from_secs(90), "container terminated", |p| {
        p["status"]["containerStatuses"]
            .as_array()
            .is_some_and(|cs| cs.iter().all(|s| !s["state"]["terminated"].is_null()))
    });
    let term = &p["status"]["containerStatuses"][0]["state"]["terminated"];
    assert_eq!(term["exitCode"], 137, "killed after the 2 s max pod grace period, not its 30 s: {term}");
}
