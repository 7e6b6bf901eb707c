//! Node-pressure eviction on a real node (issue 7 item 15): with a hard
//! threshold this machine always crosses (`memory.available<1000Ti`), the
//! node reports MemoryPressure with upstream's reason, and the kubelet fails
//! the BestEffort pod first — phase Failed, reason Evicted, upstream's
//! message, DisruptionTarget TerminationByKubelet, a Warning Evicted event —
//! and its containers are stopped.

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

fn phase(p: &Value) -> &str {
    p["status"]["phase"].as_str().unwrap_or("")
}

#[test]
fn memory_pressure_evicts_the_best_effort_pod_first() {
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

    // A Burstable pod under its request outranks nothing: the BestEffort pod goes first.
    c.server.create(&pod("burstable", &c.node, &c.busybox, Some("1Gi")));
    c.server.create(&pod("besteffort", &c.node, &c.busybox, None));
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
