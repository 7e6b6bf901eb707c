//! `rkube server --runtime simulated` (issue 7 item 16): the real agent and
//! pod workers over the in-process simulated CRI runtime — no containerd, no
//! processes — so the node goes Ready, a Deployment's pods go Running and
//! Ready with IPs from the node's podCIDR, and `kubectl logs` shows the
//! runtime's clearly marked simulated output.

mod support;

use std::net::Ipv4Addr;
use std::time::Duration;

use serde_json::{json, Value};
use support::node::condition;
use support::{free_port, TestServer, TestServerOptions};

/// Whether `ip` is inside the IPv4 `cidr`.
fn in_cidr(ip: &str, cidr: &str) -> bool {
    let (net, prefix) = cidr.split_once('/').unwrap();
    let (net, prefix): (Ipv4Addr, u32) = (net.parse().unwrap(), prefix.parse().unwrap());
    let mask = if prefix == 0 { 0 } else { u32::MAX << (32 - prefix) };
    ip.parse::<Ipv4Addr>().is_ok_and(|ip| u32::from(ip) & mask == u32::from(net) & mask)
}

#[test]
fn simulated_node_runs_a_deployment_with_pod_ips_from_its_pod_cidr() {
    let kubelet_port = free_port().to_string();
    // Dropped in reverse: the server stops, then its pods' logs go, then the data dir.
    let tmp = tempfile::Builder::new().prefix("rkube-sim-").tempdir().unwrap();
    let _cleanup = support::node::HostCleanup(tmp.path().to_path_buf(), String::new());
    let server = TestServer::start_with(TestServerOptions {
        data_dir: Some(tmp.path().to_path_buf()),
        agent: true,
        scheduler: true,
        controllers: true,
        extra_args: ["--runtime", "simulated", "--kubelet-port", &kubelet_port].map(String::from).to_vec(),
        ..Default::default()
    });
    // The default node name (the hostname), which the API server can dial for logs.
    let mut n = Value::Null;
    server.wait_for(Duration::from_secs(60), "the simulated node to be Ready", || {
        n = server.get_json(&["nodes"])["items"][0].clone();
        condition(&n, "Ready")["status"] == "True"
    });
    let node = n["metadata"]["name"].as_str().unwrap().to_string();
    let runtime = n["status"]["nodeInfo"]["containerRuntimeVersion"].as_str().unwrap_or_default().to_string();
    assert!(runtime.starts_with("rkube-simulated://"), "{runtime}");
    let cidr = n["spec"]["podCIDR"].as_str().expect("node-ipam gave the node a podCIDR").to_string();
    // No containerd was started for this data dir.
    assert!(!rkube_kubelet::containerd::RuntimePaths::new(server.data_dir()).socket.exists());
    server.wait_for(Duration::from_secs(30), "the default ServiceAccount", || {
        server.kubectl(&["get", "serviceaccount", "default"]).status.success()
    });

    // An image no registry serves: the simulated runtime "pulls" it at once.
    server.create(&json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{
                    "name": "app", "image": "registry.invalid/web:1.0",
                    "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 1}
                }]}
            }
        }
    }));
    let mut pods = Vec::new();
    server.wait_for(Duration::from_secs(90), "3 pods Running and Ready", || {
        pods = server.get_json(&["pods", "-l", "app=web"])["items"].as_array().cloned().unwrap_or_default();
        pods.len() == 3
            && pods.iter().all(|p| p["status"]["phase"] == "Running" && condition(p, "Ready")["status"] == "True")
    });
    let mut ips: Vec<String> = pods.iter().map(|p| p["status"]["podIP"].as_str().unwrap_or_default().into()).collect();
    for ip in &ips {
        assert!(in_cidr(ip, &cidr), "pod IP {ip} is not in the node's podCIDR {cidr}");
    }
    ips.sort();
    ips.dedup();
    assert_eq!(ips.len(), 3, "every pod has its own IP");
    let p = &pods[0];
    assert_eq!(p["spec"]["nodeName"], node.as_str());
    let s = &p["status"]["containerStatuses"][0];
    assert_eq!((s["ready"].as_bool(), s["restartCount"].as_i64()), (Some(true), Some(0)), "{s}");
    assert!(s["state"]["running"]["startedAt"].is_string(), "{s}");

    // kubectl logs through the API server and the kubelet API: the marked line.
    let name = p["metadata"]["name"].as_str().unwrap();
    let out = server.kubectl(&["logs", name]);
    assert!(out.status.success(), "kubectl logs: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "[simulated] container app started by the rkube simulated runtime\n"
    );

    // Streaming needs a process: kubectl exec fails with the runtime's explanation.
    let out = server.kubectl(&["exec", name, "--", "true"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("simulated runtime"), "kubectl exec: {stderr}");

    // Graceful deletion goes through StopContainer/StopPodSandbox: the pods go away.
    server.kubectl_ok(&["delete", "deployment", "web"]);
    server.wait_for(Duration::from_secs(60), "the Deployment's pods to be gone", || {
        server.get_json(&["pods", "-l", "app=web"])["items"].as_array().is_some_and(|v| v.is_empty())
    });
}
