//! Expected values from upstream `pkg/quota/v1/evaluator/core` tests
//! (pods_test.go, services_test.go, persistent_volume_claims_test.go).

use serde_json::json;

use super::*;
use crate::quota::pretty;

fn pod(containers: Value) -> Value {
    json!({"metadata": {"name": "p"}, "spec": {"containers": containers}})
}

#[test]
fn pod_usage_counts_requests_limits_and_the_pod() {
    let p = pod(json!([{"name": "a", "resources": {
        "requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "100Mi"}}}]));
    assert_eq!(
        pretty(&usage("", "pods", &p, 0)),
        "count/pods=1,cpu=1,limits.cpu=2,limits.memory=100Mi,memory=1Gi,pods=1,requests.cpu=1,requests.memory=1Gi"
    );
    // init containers: the max of each against the sum of the containers.
    let p = json!({"spec": {
        "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2"}}}],
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m"}}},
                       {"name": "b", "resources": {"requests": {"cpu": "500m"}}}]}});
    assert_eq!(usage("", "pods", &p, 0)["requests.cpu"].format(), "2");
}

#[test]
fn terminal_pods_only_count_as_objects() {
    let mut p = pod(json!([{"name": "a", "resources": {"requests": {"cpu": "1"}}}]));
    p["status"] = json!({"phase": "Succeeded"});
    assert_eq!(pretty(&usage("", "pods", &p, 0)), "count/pods=1");
    let mut p = pod(json!([{"name": "a"}]));
    p["metadata"]["deletionTimestamp"] = json!("2020-01-01T00:00:00Z");
    p["metadata"]["deletionGracePeriodSeconds"] = json!(30);
    let at = unix_seconds("2020-01-01T00:00:00Z").unwrap();
    assert!(is_live_pod(&p, at + 30));
    assert!(!is_live_pod(&p, at + 31));
}

#[test]
fn services_count_node_ports_and_load_balancers() {
    let svc = json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80}, {"port": 443}]}});
    assert_eq!(
        pretty(&usage("", "services", &svc, 0)),
        "count/services=1,services=1,services.loadbalancers=1,services.nodeports=2"
    );
    let svc = json!({"spec": {"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false,
        "ports": [{"port": 80, "nodePort": 30000}, {"port": 443}]}});
    assert_eq!(usage("", "services", &svc, 0)["services.nodeports"].format(), "1");
    let svc = json!({"spec": {"type": "ClusterIP", "ports": [{"port": 80}]}});
    assert_eq!(pretty(&usage("", "services", &svc, 0)), "count/services=1,services=1");
}

#[test]
fn claims_charge_storage_per_class() {
    let pvc = json!({"spec": {"storageClassName": "gold", "resources": {"requests": {"storage": "10Gi"}}}});
    assert_eq!(
        pretty(&usage("", "persistentvolumeclaims", &pvc, 0)),
        "count/persistentvolumeclaims=1,gold.storageclass.storage.k8s.io/persistentvolumeclaims=1,\
gold.storageclass.storage.k8s.io/requests.storage=10Gi,persistentvolumeclaims=1,requests.storage=10Gi"
    );
}

#[test]
fn object_counts_and_coverage() {
    assert_eq!(count_name("apps", "deployments"), "count/deployments.apps");
    assert_eq!(pretty(&usage("", "configmaps", &json!({}), 0)), "configmaps=1,count/configmaps=1");
    assert_eq!(pretty(&usage("apps", "deployments", &json!({}), 0)), "count/deployments.apps=1");
    assert!(covers("", "pods", "requests.cpu"));
    assert!(covers("", "pods", "cpu"));
    assert!(covers("", "pods", "requests.hugepages-2Mi"));
    assert!(!covers("", "pods", "services"));
    assert!(covers("", "pods", "requests.example.com/dongle"));
    assert!(!covers("", "pods", "example.com/dongle"));
    assert!(!covers("", "pods", "limits.example.com/dongle"));
    let p = pod(
        json!([{"name": "a", "resources": {"requests": {"example.com/dongle": "3"}, "limits": {"example.com/dongle": "3"}}}]),
    );
    assert_eq!(usage("", "pods", &p, 0)["requests.example.com/dongle"].format(), "3");
    assert!(!usage("", "pods", &p, 0).contains_key("limits.example.com/dongle"));
    assert!(covers("", "persistentvolumeclaims", "gold.storageclass.storage.k8s.io/requests.storage"));
    assert!(!covers("", "configmaps", "count/secrets"));
}

#[test]
fn constraints_name_the_containers_missing_a_quota_resource() {
    let p = json!({"spec": {"containers": [{"name": "a"}, {"name": "b", "resources": {"limits": {"cpu": "1"}}}],
        "initContainers": [{"name": "i"}]}});
    let required: BTreeSet<String> = ["limits.cpu", "limits.memory", "pods"].iter().map(|s| s.to_string()).collect();
    assert_eq!(
        pod_constraints(&required, &p),
        Err("must specify limits.cpu for: a,i; must specify limits.memory for: a,b,i".into())
    );
    let required: BTreeSet<String> = ["pods", "count/pods"].iter().map(|s| s.to_string()).collect();
    assert_eq!(pod_constraints(&required, &p), Ok(()));
}

#[test]
fn scopes_select_pods() {
    let best = pod(json!([{"name": "a"}]));
    let burst = pod(json!([{"name": "a", "resources": {"requests": {"cpu": "1"}}}]));
    let mut term = best.clone();
    term["spec"]["activeDeadlineSeconds"] = json!(30);
    let q = |scopes: Value| json!({"spec": {"hard": {"pods": "1"}, "scopes": scopes}});
    assert!(quota_matches(&q(json!(["BestEffort"])), "", "pods", &best));
    assert!(!quota_matches(&q(json!(["BestEffort"])), "", "pods", &burst));
    assert!(quota_matches(&q(json!(["NotBestEffort"])), "", "pods", &burst));
    assert!(quota_matches(&q(json!(["Terminating"])), "", "pods", &term));
    assert!(!quota_matches(&q(json!(["Terminating"])), "", "pods", &best));
    assert!(quota_matches(&q(json!(["NotTerminating"])), "", "pods", &best));
    let mut high = best.clone();
    high["spec"]["priorityClassName"] = json!("high");
    let pc = json!({"spec": {"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": [
        {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}});
    assert!(quota_matches(&pc, "", "pods", &high));
    assert!(!quota_matches(&pc, "", "pods", &best));
    // A quota limiting nothing the kind uses does not match it; scoped quotas match only pods.
    assert!(!quota_matches(&q(json!([])), "", "configmaps", &json!({})));
    let cm = json!({"spec": {"hard": {"configmaps": "1"}, "scopes": ["BestEffort"]}});
    assert!(!quota_matches(&cm, "", "configmaps", &json!({})));
}
