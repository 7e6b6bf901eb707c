//! The horizontal pod autoscaler end to end (issue 6, item 13), driven
//! with the real kubectl:
//! - without a node: limits applied before metrics (minReplicas), a target
//!   at zero replicas (ScalingDisabled), Pods metrics without a custom
//!   metrics API (FailedGetPodsMetric) and Resource metrics without samples
//!   (FailedGetResourceMetric), with upstream's conditions and events;
//! - on a real node with the built-in metrics-server: `kubectl autoscale`
//!   of a busy Deployment scales it up to its maximum on CPU utilization,
//!   and an idle one down to its minimum after the (shortened) downscale
//!   stabilization window.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::node::NodeCluster;
use support::{TestServer, TestServerOptions};

fn condition(hpa: &Value, type_: &str) -> Value {
    hpa["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .cloned()
        .unwrap_or(Value::Null)
}

/// The `(type, reason, message)` of the events about HPA `name`.
fn hpa_events(server: &TestServer, name: &str) -> Vec<(String, String, String)> {
    let selector = format!("involvedObject.kind=HorizontalPodAutoscaler,involvedObject.name={name}");
    let list = server.get_json(&["events", "--field-selector", &selector]);
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or("").to_string();
            (s("type"), s("reason"), s("message"))
        })
        .collect()
}

fn hpa(server: &TestServer, name: &str) -> Value {
    server.get_json(&["hpa.v2.autoscaling", name])
}

fn deployment(name: &str, replicas: i64, image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": image, "command": ["sleep", "3600"],
                    "resources": {"requests": {"cpu": "100m"}}}]}
            }
        }
    })
}

fn autoscaler(name: &str, min: i64, max: i64, metrics: Value) -> Value {
    json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": min, "maxReplicas": max, "metrics": metrics
        }
    })
}

/// Without metrics the HPA still enforces minReplicas, leaves a target at
/// zero alone, and reports metrics it cannot read as upstream does.
#[test]
fn hpa_reports_limits_disabled_scaling_and_unavailable_metrics_as_upstream() {
    let server = TestServer::start_with(TestServerOptions {
        controllers: true,
        extra_args: vec!["--horizontal-pod-autoscaler-sync-period".into(), "1s".into()],
        ..Default::default()
    });
    let cpu = json!([{"type": "Resource", "resource": {"name": "cpu",
        "target": {"type": "Utilization", "averageUtilization": 50}}}]);
    let busybox = "docker.io/library/busybox:1.35.0";

    // Below minReplicas: raised to it before any metric is read.
    server.create(&deployment("small", 1, busybox));
    server.create(&autoscaler("small", 2, 4, cpu.clone()));
    server.wait_for(Duration::from_secs(120), "small to be scaled to minReplicas", || {
        server.get_json(&["deployment", "small"])["spec"]["replicas"] == 2
    });
    server.wait_for(Duration::from_secs(60), "the SuccessfulRescale event", || {
        hpa_events(&server, "small").iter().any(|(t, r, m)| {
            t == "Normal"
                && r == "SuccessfulRescale"
                && m == "New size: 2; reason: Current number of replicas below Spec.MinReplicas"
        })
    });
    let h = hpa(&server, "small");
    assert_eq!(condition(&h, "AbleToScale")["status"], "True", "{h:#}");
    assert!(h["status"]["lastScaleTime"].is_string(), "{h:#}");

    // Pods metrics need custom.metrics.k8s.io, which is not registered.
    server.create(&deployment("custom", 1, busybox));
    let pods_metric = json!([{"type": "Pods", "pods": {"metric": {"name": "requests_per_second"},
        "target": {"type": "AverageValue", "averageValue": "10"}}}]);
    server.create(&autoscaler("custom", 1, 4, pods_metric));
    server.wait_for(Duration::from_secs(120), "ScalingActive False FailedGetPodsMetric", || {
        let c = condition(&hpa(&server, "custom"), "ScalingActive");
        c["status"] == "False" && c["reason"] == "FailedGetPodsMetric"
    });
    let c = condition(&hpa(&server, "custom"), "ScalingActive");
    assert_eq!(
        c["message"],
        "the HPA was unable to compute the replica count: unable to get metric requests_per_second: \
         unable to fetch metrics from custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered"
    );
    server.wait_for(Duration::from_secs(60), "the FailedGetPodsMetric and FailedComputeMetricsReplicas events", || {
        let events = hpa_events(&server, "custom");
        let has = |reason: &str| events.iter().any(|(t, r, _)| t == "Warning" && r == reason);
        has("FailedGetPodsMetric") && has("FailedComputeMetricsReplicas")
    });
    assert_eq!(server.get_json(&["deployment", "custom"])["spec"]["replicas"], 1, "nothing scales on a failed metric");

    // A Resource metric of pods that have no samples (no node runs them).
    server.wait_for(Duration::from_secs(120), "small's ScalingActive False FailedGetResourceMetric", || {
        let c = condition(&hpa(&server, "small"), "ScalingActive");
        c["status"] == "False"
            && c["reason"] == "FailedGetResourceMetric"
            && c["message"].as_str().is_some_and(|m| m.starts_with("the HPA was unable to compute the replica count: "))
    });

    // A target at zero replicas is not autoscaled.
    server.create(&deployment("zero", 0, busybox));
    server.create(&autoscaler("zero", 1, 4, cpu));
    server.wait_for(Duration::from_secs(120), "ScalingActive False ScalingDisabled", || {
        let c = condition(&hpa(&server, "zero"), "ScalingActive");
        c["status"] == "False" && c["reason"] == "ScalingDisabled"
    });
    let h = hpa(&server, "zero");
    assert_eq!(
        condition(&h, "ScalingActive")["message"],
        "scaling is disabled since the replica count of the target is zero"
    );
    assert_eq!(h["status"]["currentReplicas"].as_i64().unwrap_or(0), 0, "{h:#}");
    assert_eq!(server.get_json(&["deployment", "zero"])["spec"]["replicas"], 0);
}

/// `kubectl autoscale` on CPU: a busy Deployment goes to its maximum, an
/// idle one to its minimum once the downscale stabilization has passed;
/// `kubectl get hpa` shows the utilization against the target.
#[test]
fn hpa_scales_deployments_on_cpu_utilization_from_the_metrics_api() {
    let c = NodeCluster::start(&[
        "--metric-resolution",
        "2s",
        "--horizontal-pod-autoscaler-sync-period",
        "3s",
        "--horizontal-pod-autoscaler-downscale-stabilization",
        "20s",
    ]);
    let s = &c.server;

    // Busy: a shell loop, limited to 150m of its 100m request where CPU limits apply.
    s.kubectl_ok(&["create", "deployment", "busy", "--image", &c.busybox, "--", "sh", "-c", "while :; do :; done"]);
    s.kubectl_ok(&["set", "resources", "deployment", "busy", "--requests=cpu=100m", "--limits=cpu=150m"]);
    s.kubectl_ok(&["autoscale", "deployment", "busy", "--cpu-percent=50", "--min=1", "--max=3"]);
    s.wait_for(Duration::from_secs(480), "busy to be scaled to 3 replicas", || {
        s.get_json(&["deployment", "busy"])["spec"]["replicas"] == 3
    });
    let events = hpa_events(s, "busy");
    assert!(
        events.iter().any(|(t, r, m)| t == "Normal"
            && r == "SuccessfulRescale"
            && m.starts_with("New size: ")
            && m.ends_with("; reason: cpu resource utilization (percentage of request) above target")),
        "{events:?}"
    );
    s.wait_for(Duration::from_secs(120), "kubectl get hpa to show cpu utilization against 50%", || {
        // NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE, TARGETS as `cpu: 150%/50%`.
        let table = s.kubectl_ok(&["get", "hpa", "busy"]);
        let row: Vec<&str> = table.lines().nth(1).unwrap_or("").split_whitespace().collect();
        row.len() >= 4
            && row[2] == "cpu:"
            && row[3].strip_suffix("%/50%").is_some_and(|n| n.parse::<u32>().is_ok_and(|n| n > 50))
    });
    let h = hpa(s, "busy");
    assert_eq!(condition(&h, "ScalingActive")["reason"], "ValidMetricFound", "{h:#}");
    assert_eq!(h["status"]["currentMetrics"][0]["resource"]["name"], "cpu", "{h:#}");
    assert!(h["status"]["currentMetrics"][0]["resource"]["current"]["averageUtilization"]
        .as_i64()
        .is_some_and(|u| u > 50));
    // Stop the load before the next part.
    s.kubectl_ok(&["delete", "hpa", "busy"]);
    s.kubectl_ok(&["delete", "deployment", "busy"]);

    // Idle: 3 sleeping replicas scale down to the minimum.
    s.kubectl_ok(&["create", "deployment", "idle", "--image", &c.busybox, "--replicas=3", "--", "sleep", "3600"]);
    s.kubectl_ok(&["set", "resources", "deployment", "idle", "--requests=cpu=100m"]);
    s.kubectl_ok(&["autoscale", "deployment", "idle", "--cpu-percent=50", "--min=1", "--max=3"]);
    s.wait_for(Duration::from_secs(480), "idle to be scaled down to 1 replica", || {
        s.get_json(&["deployment", "idle"])["spec"]["replicas"] == 1
    });
    let events = hpa_events(s, "idle");
    assert!(
        events.iter().any(|(t, r, m)| t == "Normal"
            && r == "SuccessfulRescale"
            && m == "New size: 1; reason: All metrics below target"),
        "{events:?}"
    );
}
