//! The metrics API through `Api::handle`, with stored nodes and pods and
//! scrapes stored directly (the scraping itself is covered by the
//! integration test `crates/rkube/tests/metrics_api.rs`).

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use rkube_apimachinery::registry::Registry;
use rkube_store::sqlite::{SqliteOptions, SqliteStore};
use serde_json::{json, Value};

use super::decode::{Batch, MetricsPoint, PodRef};
use crate::rest::Api;
use crate::storage::{UpdateKind, WriteOptions};

async fn api() -> (tempfile::TempDir, Api) {
    let dir = tempfile::tempdir().unwrap();
    let opts = SqliteOptions { progress_interval: Duration::from_millis(200), ..Default::default() };
    let store = SqliteStore::open_with(&dir.path().join("state.db"), opts).await.unwrap();
    (dir, Api::new(Registry::served(), Arc::new(store)))
}

async fn running_pod(api: &Api, ns: &str, name: &str, labels: Value, containers: &[&str]) {
    let pods = api.store("", "v1", "pods").unwrap();
    let spec: Vec<Value> = containers.iter().map(|c| json!({"name": c, "image": "busybox"})).collect();
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {"containers": spec}});
    pods.create(ns, pod, &WriteOptions::default()).await.unwrap();
    pods.update(ns, name, UpdateKind::Status, &WriteOptions::default(), |current| {
        let mut p = current.unwrap().clone();
        p["status"]["phase"] = json!("Running");
        Ok(p)
    })
    .await
    .unwrap();
}

fn point(ts_s: i64, cpu_ms: u64, mem: u64) -> MetricsPoint {
    MetricsPoint { timestamp_ns: ts_s * 1_000_000_000, cumulative_cpu_ns: cpu_ms * 1_000_000, memory_bytes: mem }
}

/// Two scrapes 15 s apart: the node used 3 cores' worth of 15 s (200m per
/// second … 3000 ms over 15 s = 200m), `web`'s containers 150m and 15m.
fn scrapes(api: &Api) {
    for (ts, k) in [(1_700_000_000, 0), (1_700_000_015, 1)] {
        let mut b = Batch::default();
        b.nodes.insert("n1".into(), point(ts, 100_000 + k * 3_000, 4 * 1024 * 1024));
        b.pods.insert(
            PodRef::new("default", "web"),
            [
                ("app".to_string(), point(ts, 1_000 + k * 2_250, 35_684_352)),
                ("side".to_string(), point(ts, 10 + k * 225, 1024)),
            ]
            .into(),
        );
        b.pods.insert(PodRef::new("other", "db"), [("db".to_string(), point(ts, 5 + k * 15_000, 2048))].into());
        // Known to the kubelet, not Running in the API: never reported.
        b.pods.insert(PodRef::new("default", "pending"), [("c".to_string(), point(ts, 5 + k, 2048))].into());
        api.metrics_api().store(b);
    }
}

async fn get(api: &Api, uri: &str, accept: Option<&str>) -> (StatusCode, Value) {
    let mut req = Request::get(uri);
    if let Some(a) = accept {
        req = req.header("accept", a);
    }
    let resp = api.handle(req.body(Body::empty()).unwrap()).await;
    let status = resp.status();
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX).await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{uri}: {e}: {bytes:?}")))
}

async fn cluster() -> (tempfile::TempDir, Api) {
    let (dir, api) = api().await;
    let nodes = api.store("", "v1", "nodes").unwrap();
    for (name, zone) in [("n1", "a"), ("n2", "b")] {
        let node = json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}}});
        nodes.create("", node, &WriteOptions::default()).await.unwrap();
    }
    running_pod(&api, "default", "web", json!({"app": "web"}), &["app", "side"]).await;
    running_pod(&api, "other", "db", json!({"app": "db"}), &["db"]).await;
    let pods = api.store("", "v1", "pods").unwrap();
    let pending = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pending", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
    pods.create("default", pending, &WriteOptions::default()).await.unwrap();
    (dir, api)
}

/// NodeMetrics and NodeMetricsList as metrics-server writes them; n2 (no
/// metrics) is left out of lists and a NotFound of `nodemetrics`; a
/// missing node is the node lister's `node "x" not found`.
#[tokio::test]
async fn node_metrics_have_metrics_servers_shape() {
    let (_dir, api) = cluster().await;
    let (status, list) = get(&api, "/apis/metrics.k8s.io/v1beta1/nodes", None).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["kind"], "NodeMetricsList");
    assert_eq!(list["apiVersion"], "metrics.k8s.io/v1beta1");
    assert_eq!(list["metadata"], json!({}));
    assert_eq!(list["items"], json!([]), "one scrape is not enough for a rate");

    scrapes(&api);
    let (_, list) = get(&api, "/apis/metrics.k8s.io/v1beta1/nodes", None).await;
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{list}");
    let n1 = &items[0];
    assert!(n1.get("kind").is_none(), "list items carry no kind: {n1}");
    assert_eq!(n1["metadata"]["name"], "n1");
    assert_eq!(n1["metadata"]["labels"], json!({"topology.kubernetes.io/zone": "a"}));
    assert!(n1["metadata"]["creationTimestamp"].as_str().unwrap().ends_with('Z'));
    assert_eq!(n1["timestamp"], "2023-11-14T22:13:35Z");
    assert_eq!(n1["window"], "15s");
    assert_eq!(n1["usage"], json!({"cpu": "200m", "memory": "4Mi"}));

    let (status, one) = get(&api, "/apis/metrics.k8s.io/v1beta1/nodes/n1", None).await;
    assert_eq!(status, 200);
    assert_eq!(
        (one["kind"].as_str(), one["apiVersion"].as_str()),
        (Some("NodeMetrics"), Some("metrics.k8s.io/v1beta1"))
    );
    assert_eq!(one["usage"], n1["usage"]);

    let (status, e) = get(&api, "/apis/metrics.k8s.io/v1beta1/nodes/n2", None).await;
    assert_eq!(status, 404);
    assert_eq!(e["message"], "nodemetrics.metrics.k8s.io \"n2\" not found");
    assert_eq!(e["details"], json!({"name": "n2", "group": "metrics.k8s.io", "kind": "nodemetrics"}));
    let (_, e) = get(&api, "/apis/metrics.k8s.io/v1beta1/nodes/nope", None).await;
    assert_eq!(e["message"], "node \"nope\" not found");

    // Selectors.
    let (_, list) =
        get(&api, "/apis/metrics.k8s.io/v1beta1/nodes?labelSelector=topology.kubernetes.io%2Fzone%3Db", None).await;
    assert_eq!(list["items"], json!([]));
    let (_, list) = get(&api, "/apis/metrics.k8s.io/v1beta1/nodes?fieldSelector=metadata.name%3Dn1", None).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    let (status, e) =
        get(&api, "/apis/metrics.k8s.io/v1beta1/nodes?fieldSelector=spec.unschedulable%3Dfalse", None).await;
    assert_eq!(status, 400);
    assert_eq!(
        e["message"],
        "\"spec.unschedulable\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
    );

    // No watch: metrics-server serves get and list only.
    let (status, _) = get(&api, "/apis/metrics.k8s.io/v1beta1/nodes?watch=true", None).await;
    assert_eq!(status, 405);
}

/// PodMetrics of Running pods only, containers by name, in one namespace
/// or all, with label and field selectors; NotFound texts of metrics-server.
#[tokio::test]
async fn pod_metrics_have_metrics_servers_shape() {
    let (_dir, api) = cluster().await;
    let (status, e) = get(&api, "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/web", None).await;
    assert_eq!(status, 404);
    assert_eq!(e["message"], "podmetrics.metrics.k8s.io \"default/web\" not found");

    scrapes(&api);
    let (_, web) = get(&api, "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/web", None).await;
    assert_eq!(web["kind"], "PodMetrics");
    assert_eq!(web["metadata"]["namespace"], "default");
    assert_eq!(web["metadata"]["labels"], json!({"app": "web"}));
    assert_eq!(web["window"], "15s");
    assert_eq!(
        web["containers"],
        json!([{"name": "app", "usage": {"cpu": "150m", "memory": "34848Ki"}},
               {"name": "side", "usage": {"cpu": "15m", "memory": "1Ki"}}])
    );

    let (_, list) = get(&api, "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods", None).await;
    assert_eq!(list["kind"], "PodMetricsList");
    let names = |l: &Value| -> Vec<String> {
        l["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                format!("{}/{}", i["metadata"]["namespace"].as_str().unwrap(), i["metadata"]["name"].as_str().unwrap())
            })
            .collect()
    };
    assert_eq!(names(&list), ["default/web"], "pending pods are not listed");
    let (_, all) = get(&api, "/apis/metrics.k8s.io/v1beta1/pods", None).await;
    assert_eq!(names(&all), ["default/web", "other/db"]);
    assert_eq!(all["items"][1]["containers"][0]["usage"]["cpu"], "1");
    let (_, sel) = get(&api, "/apis/metrics.k8s.io/v1beta1/pods?labelSelector=app%3Ddb", None).await;
    assert_eq!(names(&sel), ["other/db"]);
    let (_, sel) =
        get(&api, "/apis/metrics.k8s.io/v1beta1/pods?fieldSelector=metadata.namespace%3Ddefault", None).await;
    assert_eq!(names(&sel), ["default/web"]);

    // A pod that is missing or not Running is the pod lister's NotFound.
    for name in ["nope", "pending"] {
        let (status, e) =
            get(&api, &format!("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/{name}"), None).await;
        assert_eq!(status, 404);
        assert_eq!(e["message"], format!("pods \"{name}\" not found"));
        assert_eq!(e["details"]["kind"], "pods");
    }
}

/// `kubectl get` Tables: metrics-server's Name, cpu, memory, Window
/// columns, a pod's containers summed; nothing at all for no items.
#[tokio::test]
async fn tables_have_metrics_servers_columns() {
    let (_dir, api) = cluster().await;
    let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    let (_, empty) = get(&api, "/apis/metrics.k8s.io/v1beta1/pods", Some(accept)).await;
    assert_eq!(empty["kind"], "Table");
    assert_eq!(empty["rows"], Value::Null);
    scrapes(&api);
    let (status, t) = get(&api, "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods", Some(accept)).await;
    assert_eq!(status, 200, "{t}");
    let columns: Vec<&str> =
        t["columnDefinitions"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(columns, ["Name", "cpu", "memory", "Window"]);
    assert_eq!(t["columnDefinitions"][1]["format"], "quantity");
    assert_eq!(t["rows"][0]["cells"], json!(["web", "165m", "34849Ki", "15s"]));
    assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    let (_, t) = get(&api, "/apis/metrics.k8s.io/v1beta1/nodes/n1", Some(accept)).await;
    assert_eq!(t["rows"][0]["cells"], json!(["n1", "200m", "4Mi", "15s"]));
}

/// Discovery-facing registry facts: metrics.k8s.io is served after every
/// built-in group; `pods` and `nodes` still name the core resources.
#[test]
fn the_served_registry_adds_metrics_last() {
    let r = Registry::served();
    assert_eq!(r.groups().last().unwrap().name, "metrics.k8s.io");
    let nodes = r.lookup("metrics.k8s.io", "v1beta1", "nodes").unwrap();
    assert_eq!((nodes.kind, nodes.list_kind, nodes.namespaced()), ("NodeMetrics", "NodeMetricsList", false));
    assert_eq!(nodes.verbs, ["get", "list"]);
    assert!(r.lookup("metrics.k8s.io", "v1beta1", "pods").unwrap().namespaced());
    assert_eq!(r.resolve("pods").unwrap().group, "");
    assert_eq!(r.resolve("nodes.metrics.k8s.io").unwrap().kind, "NodeMetrics");
}
