//! Watch cache tests against the real SQLite backend, through
//! `ResourceStore` (the cache's only user).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use rkube_apimachinery::meta;
use rkube_apimachinery::registry::Registry;
use rkube_store::sqlite::{SqliteOptions, SqliteStore};
use rkube_store::SharedStore;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::{CacheOptions, Freshness};
use crate::storage::watch::{Event, EventType, WatchOptions, INITIAL_EVENTS_END_ANNOTATION};
use crate::storage::{DeleteOptions, ListOptions, Predicate, ResourceStore, UpdateKind, WriteOptions};

/// Generous: these tests check order and completeness, not speed.
const WAIT: Duration = Duration::from_secs(10);

async fn store() -> (tempfile::TempDir, SharedStore) {
    let dir = tempfile::tempdir().unwrap();
    let opts = SqliteOptions { progress_interval: Duration::from_millis(200), ..Default::default() };
    let store = SqliteStore::open_with(&dir.path().join("state.db"), opts).await.unwrap();
    (dir, Arc::new(store))
}

fn configmaps(store: &SharedStore) -> ResourceStore {
    let registry = Registry::builtin();
    let info = registry.resources().iter().find(|r| r.group.is_empty() && r.plural == "configmaps").unwrap();
    ResourceStore::new(info, store.clone()).unwrap()
}

/// A configmaps store whose cache is already started and ready.
async fn started(store: &SharedStore, opts: CacheOptions) -> ResourceStore {
    let cms = configmaps(store).with_watch_cache(Some(opts));
    assert!(cms.watch_cache().unwrap().wait_fresh(Freshness::Consistent).await, "the cache becomes ready");
    cms
}

fn cm(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}, "data": {"k": name}})
}

async fn create(cms: &ResourceStore, name: &str) -> i64 {
    let obj = cms.create("default", cm(name, json!({})), &WriteOptions::default()).await.unwrap();
    rv(&obj)
}

fn rv(obj: &Value) -> i64 {
    meta::resource_version(obj).parse().unwrap()
}

async fn next(events: &mut mpsc::Receiver<Event>) -> Event {
    tokio::time::timeout(WAIT, events.recv()).await.expect("an event in time").expect("the watch is open")
}

fn summary(e: &Event) -> (EventType, String) {
    (e.kind, e.object["metadata"]["name"].as_str().unwrap_or_default().to_string())
}

#[tokio::test]
async fn watches_from_a_buffered_revision_replay_then_follow_live_events() {
    let (_dir, store) = store().await;
    let cms = started(&store, CacheOptions::default()).await;
    let a = create(&cms, "a").await;
    create(&cms, "b").await;
    create(&cms, "c").await;

    let opts = WatchOptions { resource_version: a.to_string(), ..Default::default() };
    let mut events = cms.watch("default", opts).await.unwrap();
    assert_eq!(cms.watch_cache().unwrap().watcher_count(), 1, "served by the cache");
    assert_eq!(summary(&next(&mut events).await), (EventType::Added, "b".into()));
    assert_eq!(summary(&next(&mut events).await), (EventType::Added, "c".into()));
    let d = create(&cms, "d").await;
    let event = next(&mut events).await;
    assert_eq!(summary(&event), (EventType::Added, "d".into()));
    assert_eq!(rv(&event.object), d);
}

#[tokio::test]
async fn revisions_evicted_from_the_buffer_are_410_and_older_than_the_cache_go_to_the_store() {
    let (_dir, store) = store().await;
    let direct = configmaps(&store).without_watch_cache();
    let before = create(&direct, "early").await;
    create(&direct, "early2").await;
    let cms = started(&store, CacheOptions { capacity: 2, ..Default::default() }).await;
    let first = create(&cms, "a").await;
    for name in ["b", "c", "d"] {
        create(&cms, name).await;
    }
    // Wait until the cache has applied every write, so the buffer has rolled.
    assert!(cms.watch_cache().unwrap().wait_fresh(Freshness::Consistent).await);

    let opts = WatchOptions { resource_version: first.to_string(), ..Default::default() };
    let mut events = cms.watch("default", opts).await.unwrap();
    let event = next(&mut events).await;
    assert_eq!(event.kind, EventType::Error);
    assert_eq!(event.object["code"], 410);
    assert_eq!(event.object["reason"], "Expired");
    let message = event.object["message"].as_str().unwrap();
    assert!(message.starts_with(&format!("too old resource version: {first} (")), "{message}");

    // A revision from before the cache started: the store still has it.
    let opts = WatchOptions { resource_version: before.to_string(), ..Default::default() };
    let mut events = cms.watch("default", opts).await.unwrap();
    assert_eq!(summary(&next(&mut events).await), (EventType::Added, "early2".into()));
    assert_eq!(summary(&next(&mut events).await), (EventType::Added, "a".into()));
}

#[tokio::test]
async fn many_watchers_each_see_every_event_once_in_order() {
    let (_dir, store) = store().await;
    let cms = Arc::new(started(&store, CacheOptions::default()).await);
    let start = store.current_revision().await.unwrap();
    let mut watchers = Vec::new();
    for _ in 0..20 {
        let opts = WatchOptions { resource_version: start.to_string(), ..Default::default() };
        watchers.push(cms.watch("default", opts).await.unwrap());
    }
    let (writers, per_writer) = (4, 50);
    let mut tasks = Vec::new();
    for w in 0..writers {
        let cms = cms.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..per_writer {
                create(&cms, &format!("w{w}-{i}")).await;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let expected: BTreeSet<String> =
        (0..writers).flat_map(|w| (0..per_writer).map(move |i| format!("w{w}-{i}"))).collect();
    for events in &mut watchers {
        let mut seen = BTreeSet::new();
        let mut last = start;
        for _ in 0..expected.len() {
            let event = next(events).await;
            assert_eq!(event.kind, EventType::Added);
            let revision = rv(&event.object);
            assert!(revision > last, "revisions strictly increase: {revision} after {last}");
            last = revision;
            assert!(seen.insert(summary(&event).1), "each object once");
        }
        assert_eq!(seen, expected);
    }
}

#[tokio::test]
async fn a_slow_watcher_catches_up_after_a_burst_and_is_not_cut_off() {
    let (_dir, store) = store().await;
    let cms = Arc::new(started(&store, CacheOptions { watcher_buffer: 8, ..Default::default() }).await);
    let start = store.current_revision().await.unwrap();
    let watch = || WatchOptions { resource_version: start.to_string(), ..Default::default() };
    let mut slow = cms.watch("default", watch()).await.unwrap();
    let mut fast = cms.watch("default", watch()).await.unwrap();
    let (writers, per_writer) = (16, 40);
    let total = writers * per_writer;
    let fast_reader = tokio::spawn(async move {
        for _ in 0..total {
            assert_eq!(next(&mut fast).await.kind, EventType::Added);
        }
        fast
    });
    // A burst from concurrent writers while the slow watcher reads nothing:
    // far more events than its channels hold (8 live + 256 to the client).
    let mut tasks = Vec::new();
    for w in 0..writers {
        let cms = cms.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..per_writer {
                create(&cms, &format!("w{w}-{i}")).await;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let _fast = fast_reader.await.unwrap();

    // Now it reads, slowly: every event arrives once, in revision order.
    let mut seen = BTreeSet::new();
    let mut last = start;
    for i in 0..total {
        let event = next(&mut slow).await;
        assert_eq!(event.kind, EventType::Added);
        let revision = rv(&event.object);
        assert!(revision > last, "revisions strictly increase: {revision} after {last}");
        last = revision;
        assert!(seen.insert(summary(&event).1), "each object once");
        if i % 50 == 0 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    assert_eq!(seen.len(), total);
    // Still attached: a later write reaches it live.
    create(&cms, "after").await;
    assert_eq!(summary(&next(&mut slow).await), (EventType::Added, "after".into()));
    assert_eq!(cms.watch_cache().unwrap().watcher_count(), 2, "both watchers are registered");
}

#[tokio::test]
async fn a_watcher_left_behind_by_the_event_buffer_is_cut_off_without_holding_back_the_others() {
    let (_dir, store) = store().await;
    // The buffer keeps the last 100 events: the slow watcher, which reads
    // nothing while 400 events pass, cannot catch up from it.
    let cms = started(&store, CacheOptions { watcher_buffer: 8, capacity: 100, ..Default::default() }).await;
    let start = store.current_revision().await.unwrap().to_string();
    let mut slow =
        cms.watch("default", WatchOptions { resource_version: start.clone(), ..Default::default() }).await.unwrap();
    let mut fast = cms.watch("default", WatchOptions { resource_version: start, ..Default::default() }).await.unwrap();
    let total = 400;
    let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = seen.clone();
    let reader = tokio::spawn(async move {
        for _ in 0..total {
            let event = next(&mut fast).await;
            assert_eq!(event.kind, EventType::Added);
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    // Write in batches the fast reader catches up with, so only the slow
    // watcher (which never reads) can fall behind, however loaded the machine.
    for batch in 0..total / 50 {
        for i in batch * 50..(batch + 1) * 50 {
            create(&cms, &format!("cm-{i}")).await;
        }
        let deadline = tokio::time::Instant::now() + WAIT;
        while seen.load(std::sync::atomic::Ordering::SeqCst) < (batch + 1) * 50 {
            assert!(tokio::time::Instant::now() < deadline, "the fast watcher keeps up");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    reader.await.unwrap();

    // The slow one got a prefix of the events, then its stream ended.
    let mut received = 0;
    while let Some(event) = tokio::time::timeout(WAIT, slow.recv()).await.expect("the slow watch ends") {
        assert_eq!(event.kind, EventType::Added);
        received += 1;
    }
    assert!(received < total, "cut off after {received} events");
    assert_eq!(cms.watch_cache().unwrap().watcher_count(), 1, "only the fast watcher is left");
}

#[tokio::test]
async fn lists_from_the_cache_equal_the_store_after_concurrent_writes() {
    let (_dir, store) = store().await;
    let cms = Arc::new(started(&store, CacheOptions::default()).await);
    let direct = configmaps(&store).without_watch_cache();
    let mut tasks = Vec::new();
    for w in 0..4 {
        let cms = cms.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..30 {
                let name = format!("w{w}-{i}");
                cms.create("default", cm(&name, json!({"n": (i % 3).to_string()})), &WriteOptions::default())
                    .await
                    .unwrap();
                if i % 5 == 0 {
                    let body = cm(&name, json!({"n": "updated"}));
                    cms.update("default", &name, UpdateKind::Main, &WriteOptions::default(), |_| Ok(body.clone()))
                        .await
                        .unwrap();
                }
                if i % 7 == 0 {
                    cms.delete("default", &name, &DeleteOptions::default()).await.unwrap();
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let truth = direct.list("", &ListOptions::default()).await.unwrap();
    assert!(!truth.items.is_empty());

    // resourceVersion="" (consistent) and "0" from the cache.
    let consistent = cms.list("", &ListOptions::default()).await.unwrap();
    assert_eq!(consistent.items, truth.items);
    assert!(consistent.revision >= truth.revision);
    let any = cms.list("", &ListOptions { resource_version: "0".into(), ..Default::default() }).await.unwrap();
    assert_eq!(any.items, truth.items);

    // A selector, and pages: the first from the cache, the rest from the store.
    let predicate = Predicate::parse(Some("n=updated"), None, "ConfigMap", "").unwrap();
    let selected = ListOptions { predicate: predicate.clone(), ..Default::default() };
    assert_eq!(
        cms.list("default", &selected).await.unwrap().items,
        direct.list("default", &selected).await.unwrap().items
    );
    let mut paged = Vec::new();
    let mut opts = ListOptions { limit: Some(7), resource_version: "0".into(), ..Default::default() };
    let first = cms.list("default", &opts).await.unwrap();
    assert_eq!(first.remaining_item_count, Some(truth.items.len() as i64 - 7));
    paged.extend(first.items);
    let mut token = first.continue_token;
    while let Some(t) = token {
        opts = ListOptions { limit: Some(7), continue_token: Some(t), ..Default::default() };
        let page = cms.list("default", &opts).await.unwrap();
        paged.extend(page.items);
        token = page.continue_token;
    }
    assert_eq!(paged, truth.items);
}

#[tokio::test]
async fn selector_transitions_are_added_and_deleted() {
    let (_dir, store) = store().await;
    let cms = started(&store, CacheOptions::default()).await;
    let predicate = Predicate::parse(Some("app=web"), None, "ConfigMap", "").unwrap();
    let start = store.current_revision().await.unwrap().to_string();
    let opts = WatchOptions { predicate, resource_version: start, ..Default::default() };
    let mut events = cms.watch("default", opts).await.unwrap();

    let w = WriteOptions::default();
    cms.create("default", cm("x", json!({})), &w).await.unwrap();
    let labelled = cm("x", json!({"app": "web"}));
    cms.update("default", "x", UpdateKind::Main, &w, |_| Ok(labelled.clone())).await.unwrap();
    let mut changed = labelled.clone();
    changed["data"]["k"] = json!("changed");
    cms.update("default", "x", UpdateKind::Main, &w, |_| Ok(changed.clone())).await.unwrap();
    let unlabelled = cm("x", json!({"app": "db"}));
    let (after, _) = cms.update("default", "x", UpdateKind::Main, &w, |_| Ok(unlabelled.clone())).await.unwrap();
    cms.delete("default", "x", &DeleteOptions::default()).await.unwrap();
    cms.create("default", cm("y", json!({"app": "web"})), &w).await.unwrap();
    cms.delete("default", "y", &DeleteOptions::default()).await.unwrap();

    assert_eq!(summary(&next(&mut events).await), (EventType::Added, "x".into()));
    let modified = next(&mut events).await;
    assert_eq!(summary(&modified), (EventType::Modified, "x".into()));
    assert_eq!(modified.object["data"]["k"], "changed");
    let deleted = next(&mut events).await;
    assert_eq!(summary(&deleted), (EventType::Deleted, "x".into()));
    assert_eq!(deleted.object["metadata"]["labels"]["app"], "web", "the last state that matched");
    assert_eq!(rv(&deleted.object), rv(&after), "at the revision of the change");
    assert_eq!(summary(&next(&mut events).await), (EventType::Added, "y".into()));
    assert_eq!(summary(&next(&mut events).await), (EventType::Deleted, "y".into()));
}

#[tokio::test]
async fn initial_events_end_with_a_bookmark_and_bookmarks_follow_progress() {
    let (_dir, store) = store().await;
    let cms = configmaps(&store);
    create(&cms, "a").await;
    let last = create(&cms, "b").await;
    // resourceVersion="" is a consistent read: the cache catches up first.
    let opts = WatchOptions { send_initial_events: Some(true), allow_bookmarks: true, ..Default::default() };
    let mut events = cms.watch("default", opts).await.unwrap();
    assert_eq!(cms.watch_cache().unwrap().watcher_count(), 1, "served by the cache");
    assert_eq!(summary(&next(&mut events).await), (EventType::Added, "a".into()));
    assert_eq!(summary(&next(&mut events).await), (EventType::Added, "b".into()));
    let end = next(&mut events).await;
    assert_eq!(end.kind, EventType::Bookmark);
    assert_eq!(end.object["metadata"]["annotations"][INITIAL_EVENTS_END_ANNOTATION], "true");
    assert!(rv(&end.object) >= last);
    // The store's progress notifications (every 200 ms when idle) arrive as bookmarks.
    let mark = next(&mut events).await;
    assert_eq!(mark.kind, EventType::Bookmark);
    assert_eq!(mark.object["kind"], "ConfigMap");
    assert!(rv(&mark.object) >= last);
}

#[test]
fn large_lists_decoded_in_parallel_keep_key_order_and_filter() {
    let form = super::ItemForm::new("ConfigMap", "v1");
    let entries: Vec<(Arc<str>, super::Entry)> = (0..super::PARALLEL_DECODE_MIN + 1000)
        .map(|i| {
            let name = format!("cm-{i:06}");
            let key = format!("/registry/configmaps/default/{name}");
            let stored = serde_json::to_vec(&cm(&name, json!({"even": (i % 2 == 0).to_string()}))).unwrap();
            let value = form.item_of_stored(&key, &stored.into(), i as i64 + 1);
            (Arc::from(key), super::Entry { value })
        })
        .collect();
    let predicate = Predicate::parse(Some("even=true"), None, "ConfigMap", "").unwrap();
    let prefix = "/registry/configmaps/";
    let parallel = super::list_entries(&form, prefix, &entries, 99_999, &predicate, None).unwrap();
    let single = super::list_page(&form, prefix, &entries, 99_999, &predicate, None).unwrap();
    assert_eq!(parallel.items.len(), entries.len() / 2);
    assert_eq!(parallel, single);
    assert_eq!(parallel.items[1]["metadata"]["name"], "cm-000002");
    assert_eq!(parallel.items[1]["metadata"]["resourceVersion"], "3");
}

#[tokio::test]
async fn encoded_lists_hold_the_decoded_items_without_kind_and_api_version() {
    let (_dir, store) = store().await;
    let cms = started(&store, CacheOptions::default()).await;
    create(&cms, "a").await;
    create(&cms, "b").await;
    let w = WriteOptions::default();
    let changed = cm("a", json!({"v": "2"}));
    cms.update("default", "a", UpdateKind::Main, &w, |_| Ok(changed.clone())).await.unwrap();
    create(&cms, "c").await;
    cms.delete("default", "c", &DeleteOptions::default()).await.unwrap();

    let opts = ListOptions::default();
    let decoded = cms.list("default", &opts).await.unwrap();
    let encoded = cms.list_encoded("default", &opts).await.expect("an unfiltered list is served encoded");
    assert_eq!(encoded.revision, decoded.revision);
    let body: Value = serde_json::from_slice(&encoded.to_json("ConfigMapList", "v1")).unwrap();
    assert_eq!(body["kind"], "ConfigMapList");
    assert_eq!(body["apiVersion"], "v1");
    assert_eq!(body["metadata"]["resourceVersion"], decoded.revision.to_string());
    // Upstream's typed lists carry items without kind and apiVersion.
    let expected: Vec<Value> = decoded
        .items
        .iter()
        .map(|item| {
            assert_eq!(item["kind"], "ConfigMap", "decoded objects have their kind back");
            let mut item = item.clone();
            item.as_object_mut().unwrap().retain(|k, _| k != "kind" && k != "apiVersion");
            item
        })
        .collect();
    assert_eq!(body["items"], Value::Array(expected));
    assert_eq!(body["items"][0]["metadata"]["labels"]["v"], "2", "the updated state");
    assert_eq!(body["items"].as_array().unwrap().len(), 2, "the deleted object is gone");

    // Filtered or paginated lists need the decoded objects.
    let paged = ListOptions { limit: Some(1), ..Default::default() };
    assert!(cms.list_encoded("default", &paged).await.is_none());
    let filtered =
        ListOptions { predicate: Predicate::parse(Some("v=2"), None, "ConfigMap", "").unwrap(), ..Default::default() };
    assert!(cms.list_encoded("default", &filtered).await.is_none());
}
