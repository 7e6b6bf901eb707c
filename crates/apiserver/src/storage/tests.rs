//! Store-level tests of the generic registry store against the real SQLite
//! backend: compaction (410s), bookmarks, update rules.

use std::sync::Arc;
use std::time::Duration;

use rkube_apimachinery::registry::Registry;
use rkube_apimachinery::{meta, ApiError};
use rkube_store::sqlite::{SqliteOptions, SqliteStore};
use rkube_store::SharedStore;
use serde_json::{json, Value};

use super::watch::{EventType, WatchOptions};
use super::{ListOptions, ResourceStore, UpdateKind, WriteOptions};

async fn store() -> (tempfile::TempDir, SharedStore) {
    let dir = tempfile::tempdir().unwrap();
    let opts = SqliteOptions { progress_interval: Duration::from_millis(200), ..Default::default() };
    let store = SqliteStore::open_with(&dir.path().join("state.db"), opts).await.unwrap();
    (dir, Arc::new(store))
}

fn resource(store: &SharedStore, group: &str, plural: &str) -> ResourceStore {
    let registry = Registry::builtin();
    let info = registry.resources().iter().find(|r| r.group == group && r.plural == plural && r.preferred).unwrap();
    ResourceStore::new(info, store.clone()).unwrap()
}

fn cm(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": name}})
}

async fn create(cms: &ResourceStore, name: &str) -> i64 {
    let obj = cms.create("default", cm(name), &WriteOptions::default()).await.unwrap();
    meta::resource_version(&obj).parse().unwrap()
}

#[tokio::test]
async fn compacted_revisions_are_410_for_lists_continues_and_watches() {
    let (_dir, store) = store().await;
    let cms = resource(&store, "", "configmaps");
    let first = create(&cms, "a").await;
    create(&cms, "b").await;
    let page = cms.list("default", &ListOptions { limit: Some(1), ..Default::default() }).await.unwrap();
    let token = page.continue_token.expect("a second page");
    let last = create(&cms, "c").await;
    store.compact(last).await.unwrap();

    let exact = ListOptions {
        resource_version: first.to_string(),
        resource_version_match: "Exact".into(),
        ..Default::default()
    };
    let err = cms.list("default", &exact).await.unwrap_err();
    assert_eq!(err, ApiError::Expired("The resourceVersion for the provided list is too old.".into()));

    let cont = ListOptions { limit: Some(1), continue_token: Some(token), ..Default::default() };
    let err = cms.list("default", &cont).await.unwrap_err();
    assert_eq!(err.code(), 410);
    assert!(err.to_string().starts_with("The provided continue parameter is too old"), "{err}");

    let opts = WatchOptions { resource_version: first.to_string(), ..Default::default() };
    let mut events = cms.watch("default", opts).await.unwrap();
    let event = tokio::time::timeout(Duration::from_secs(5), events.recv()).await.unwrap().unwrap();
    assert_eq!(event.kind, EventType::Error);
    assert_eq!(event.object["code"], 410);
    assert_eq!(event.object["reason"], "Expired");
    assert!(event.object["message"].as_str().unwrap().starts_with(&format!("too old resource version: {first} (")));
}

#[tokio::test]
async fn bookmarks_only_when_asked() {
    let (_dir, store) = store().await;
    let cms = resource(&store, "", "configmaps");
    let rv = create(&cms, "a").await;
    let quiet = WatchOptions { resource_version: rv.to_string(), ..Default::default() };
    let mut events = cms.watch("default", quiet).await.unwrap();
    assert!(tokio::time::timeout(Duration::from_millis(800), events.recv()).await.is_err(), "no bookmark unless asked");

    let asked = WatchOptions { resource_version: rv.to_string(), allow_bookmarks: true, ..Default::default() };
    let mut events = cms.watch("default", asked).await.unwrap();
    let event = tokio::time::timeout(Duration::from_secs(5), events.recv()).await.unwrap().unwrap();
    assert_eq!(event.kind, EventType::Bookmark);
    assert_eq!(event.object["kind"], "ConfigMap");
    assert!(event.object["metadata"]["resourceVersion"].as_str().unwrap().parse::<i64>().unwrap() >= rv);
}

#[tokio::test]
async fn updates_without_resource_version_are_unconditional_and_create_on_update_follows_the_kind() {
    let (_dir, store) = store().await;
    let cms = resource(&store, "", "configmaps");
    create(&cms, "a").await;
    let mut body = cm("a");
    body["data"]["k"] = json!("changed");
    let (updated, created) =
        cms.update("default", "a", UpdateKind::Main, &WriteOptions::default(), |_| Ok(body.clone())).await.unwrap();
    assert!(!created);
    assert_eq!(updated["data"]["k"], "changed");

    let err = cms.update("default", "missing", UpdateKind::Main, &WriteOptions::default(), |_| Ok(cm("missing"))).await;
    assert!(matches!(err, Err(ApiError::NotFound { .. })), "{err:?}");

    let leases = resource(&store, "coordination.k8s.io", "leases");
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l", "namespace": "default"}});
    let (_, created) =
        leases.update("default", "l", UpdateKind::Main, &WriteOptions::default(), |_| Ok(lease.clone())).await.unwrap();
    assert!(created, "leases allow create-on-update");
}

#[tokio::test]
async fn status_updates_change_only_status_and_main_updates_keep_it() {
    let (_dir, store) = store().await;
    let pods = resource(&store, "", "pods");
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}});
    pods.create("default", pod, &WriteOptions::default()).await.unwrap();
    let current = pods.get("default", "p", "").await.unwrap();

    let mut main = current.clone();
    main["status"]["phase"] = json!("Running");
    main["metadata"]["labels"] = json!({"a": "b"});
    let (after, _) =
        pods.update("default", "p", UpdateKind::Main, &WriteOptions::default(), |_| Ok(main.clone())).await.unwrap();
    assert_eq!(after["status"]["phase"], "Pending");
    assert_eq!(after["metadata"]["labels"]["a"], "b");

    let mut status = after.clone();
    status["status"]["phase"] = json!("Running");
    status["spec"]["containers"][0]["image"] = json!("y");
    let (after, _) = pods
        .update("default", "p", UpdateKind::Status, &WriteOptions::default(), |_| Ok(status.clone()))
        .await
        .unwrap();
    assert_eq!(after["status"]["phase"], "Running");
    assert_eq!(after["spec"]["containers"][0]["image"], "x");
}
