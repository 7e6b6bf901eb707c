//! Lists (selectors, chunking, resourceVersion rules) and watches
//! (kubectl `get -w`, resourceVersion starts, selector transitions,
//! bookmarks, sendInitialEvents, timeoutSeconds).

mod api_common;
mod support;

use std::time::Duration;

use api_common::{create, fails, ok, request, Background};
use serde_json::Value;
use support::TestServer;

const CM_URL: &str = "/api/v1/namespaces/default/configmaps";

fn configmap(s: &TestServer, name: &str, labels: &str) {
    create(
        s,
        &format!("{name}.yaml"),
        &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  labels: {{{labels}}}\n"),
    );
}

fn events(body: &str) -> Vec<(String, Value)> {
    body.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("bad event line ({e}): {l}"));
            (v["type"].as_str().unwrap_or("").to_string(), v["object"].clone())
        })
        .collect()
}

fn names(s: &TestServer, args: &[&str]) -> Vec<String> {
    let mut all = vec!["get", "cm", "-o", "name"];
    all.extend_from_slice(args);
    let mut v: Vec<String> = ok(s, &all).lines().map(|l| l.trim_start_matches("configmap/").to_string()).collect();
    v.sort();
    v
}

#[test]
fn label_and_field_selectors_filter_lists() {
    let s = TestServer::start();
    configmap(&s, "web-a", "app: web, env: a");
    configmap(&s, "web-b", "app: web, env: b");
    configmap(&s, "db", "app: db, env: c, k: x");
    assert_eq!(names(&s, &["-l", "app=web"]), ["web-a", "web-b"]);
    assert_eq!(names(&s, &["-l", "env in (a,c)"]), ["db", "web-a"]);
    assert_eq!(names(&s, &["-l", "!k"]), ["web-a", "web-b"]);
    assert_eq!(names(&s, &["-l", "app!=web"]), ["db"]);
    assert_eq!(names(&s, &["--field-selector", "metadata.name=web-b"]), ["web-b"]);
    assert_eq!(names(&s, &["--field-selector", "metadata.name!=web-b", "-l", "app=web"]), ["web-a"]);
    assert!(ok(&s, &["get", "cm", "-l", "app=none"]).is_empty());
}

/// Conformance "API Chunking, server should return chunks of results for
/// list calls": `--chunk-size=2` over 5 objects pages with continue
/// tokens, each page stable at the first page's revision.
#[test]
fn api_chunking_server_should_return_chunks_of_results_for_list_calls() {
    let s = TestServer::start();
    for i in 1..=5 {
        configmap(&s, &format!("c{i}"), "");
    }
    assert_eq!(names(&s, &["--chunk-size=2"]), ["c1", "c2", "c3", "c4", "c5"]);

    let first = request(&s, "GET", &format!("{CM_URL}?limit=2"), &[], b"").json();
    assert_eq!(first["items"].as_array().unwrap().len(), 2);
    assert_eq!(first["metadata"]["remainingItemCount"], 3);
    assert!(first["items"][0].get("kind").is_none(), "list items carry no kind, as upstream");
    let rv = first["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let token = first["metadata"]["continue"].as_str().unwrap().to_string();

    // A write between pages does not show up: the pages are one snapshot.
    configmap(&s, "c0", "");
    let second = request(&s, "GET", &format!("{CM_URL}?limit=2&continue={token}"), &[], b"").json();
    assert_eq!(second["metadata"]["resourceVersion"], rv.as_str());
    let page: Vec<&str> =
        second["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(page, ["c3", "c4"]);
    let third = request(
        &s,
        "GET",
        &format!("{CM_URL}?limit=2&continue={}", second["metadata"]["continue"].as_str().unwrap()),
        &[],
        b"",
    )
    .json();
    assert_eq!(third["items"].as_array().unwrap().len(), 1);
    assert!(third["metadata"].get("continue").is_none());

    let reply = request(&s, "GET", &format!("{CM_URL}?limit=2&continue={token}&resourceVersion={rv}"), &[], b"");
    assert_eq!(reply.status, 400);
    assert_eq!(reply.json()["message"], "specifying resource version is not allowed when using continue");
}

/// Conformance "watch-configmaps-label-changed" through `kubectl get -w`:
/// ADDED for existing objects, MODIFIED, and DELETED when an object stops
/// matching the selector or is deleted.
#[test]
fn watch_configmaps_label_changed() {
    let s = TestServer::start();
    configmap(&s, "watched", "watch-this: 'yes'");
    let watch = Background::kubectl(&s, &["get", "cm", "-w", "--output-watch-events", "-l", "watch-this=yes"]);
    watch.wait_for("the initial ADDED event", Duration::from_secs(20), |o| o.contains("ADDED"));
    ok(&s, &["annotate", "cm", "watched", "n=1"]);
    watch.wait_for("MODIFIED", Duration::from_secs(20), |o| o.contains("MODIFIED"));
    ok(&s, &["label", "cm", "watched", "watch-this=no", "--overwrite"]);
    watch.wait_for("DELETED after the label change", Duration::from_secs(20), |o| o.contains("DELETED"));
    ok(&s, &["label", "cm", "watched", "watch-this=yes", "--overwrite"]);
    let out = watch.wait_for("ADDED again", Duration::from_secs(20), |o| o.matches("ADDED").count() == 2);
    let kinds: Vec<&str> = out.lines().skip(1).filter_map(|l| l.split_whitespace().next()).collect();
    assert_eq!(kinds, ["ADDED", "MODIFIED", "DELETED", "ADDED"], "{out}");
}

/// `kubectl get -w` (Table watch) prints rows for added, modified and
/// deleted objects.
#[test]
fn kubectl_get_watch_sees_added_modified_deleted() {
    let s = TestServer::start();
    configmap(&s, "w0", "");
    let watch = Background::kubectl(&s, &["get", "cm", "-w", "--output-watch-events"]);
    watch.wait_for("the existing object", Duration::from_secs(20), |o| o.contains("w0"));
    configmap(&s, "w1", "");
    watch.wait_for("ADDED", Duration::from_secs(20), |o| o.contains("w1"));
    ok(&s, &["label", "cm", "w1", "a=b"]);
    watch.wait_for("MODIFIED", Duration::from_secs(20), |o| o.contains("MODIFIED"));
    ok(&s, &["delete", "cm", "w1"]);
    let out = watch.wait_for("DELETED", Duration::from_secs(20), |o| o.contains("DELETED"));
    assert!(out.lines().filter(|l| l.contains("w1")).count() >= 3, "{out}");
}

/// Conformance "watch-configmaps-from-resource-version": a watch from a
/// resourceVersion sees only later changes, and `timeoutSeconds` ends it.
#[test]
fn watch_configmaps_from_resource_version() {
    let s = TestServer::start();
    configmap(&s, "before", "");
    let rv = ok(&s, &["get", "cm", "before", "-o", "jsonpath={.metadata.resourceVersion}"]);
    ok(&s, &["label", "cm", "before", "x=1"]);
    configmap(&s, "after", "");
    let body = ok(&s, &["get", "--raw", &format!("{CM_URL}?watch=true&resourceVersion={rv}&timeoutSeconds=1")]);
    let seen: Vec<(String, String)> =
        events(&body).into_iter().map(|(t, o)| (t, o["metadata"]["name"].as_str().unwrap().to_string())).collect();
    assert_eq!(seen, [("MODIFIED".to_string(), "before".to_string()), ("ADDED".to_string(), "after".to_string())]);

    // Over HTTP/1.1 the stream is chunked JSON lines.
    let raw = request(&s, "GET", &format!("{CM_URL}?watch=1&resourceVersion={rv}&timeoutSeconds=1"), &[], b"");
    assert_eq!(raw.status, 200);
    assert_eq!(raw.header("transfer-encoding"), ["chunked"]);
    assert_eq!(raw.header("content-type"), ["application/json"]);
    assert_eq!(events(&raw.body).len(), 2, "{}", raw.body);

    // From "0": the current objects as ADDED, no bookmarks unless asked.
    let body = ok(&s, &["get", "--raw", &format!("{CM_URL}?watch=true&resourceVersion=0&timeoutSeconds=1")]);
    let types: Vec<String> = events(&body).into_iter().map(|(t, _)| t).collect();
    assert_eq!(types, ["ADDED", "ADDED"]);
}

/// `sendInitialEvents=true` ends the initial ADDED events with a bookmark
/// annotated `k8s.io/initial-events-end`; its options are validated.
#[test]
fn watch_list_sends_the_initial_events_end_bookmark() {
    let s = TestServer::start();
    configmap(&s, "one", "");
    let q =
        "watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1";
    let body = ok(&s, &["get", "--raw", &format!("{CM_URL}?{q}")]);
    let evs = events(&body);
    assert_eq!(evs.len(), 2, "{body}");
    assert_eq!(evs[0].0, "ADDED");
    assert_eq!(evs[1].0, "BOOKMARK");
    assert_eq!(evs[1].1["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
    assert_eq!(evs[1].1["kind"], "ConfigMap");

    let err = fails(&s, &["get", "--raw", &format!("{CM_URL}?watch=true&sendInitialEvents=true")]);
    assert!(err.contains("sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"), "{err}");
}

/// Deletecollection removes what the selector picks.
#[test]
fn delete_collection_honours_selectors() {
    let s = TestServer::start();
    configmap(&s, "keep", "app: keep");
    configmap(&s, "drop-1", "app: drop");
    configmap(&s, "drop-2", "app: drop");
    ok(&s, &["delete", "cm", "-l", "app=drop"]);
    assert_eq!(names(&s, &[]), ["keep"]);
    let reply = request(&s, "DELETE", &format!("{CM_URL}?labelSelector=app%3Dkeep"), &[], b"");
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.json()["kind"], "ConfigMapList");
    assert!(names(&s, &[]).is_empty());
}
