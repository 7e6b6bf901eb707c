//! The resource metrics API, `metrics.k8s.io/v1beta1`: a built-in
//! metrics-server inside the API server, so `kubectl top nodes|pods` and
//! the HorizontalPodAutoscaler work without installing one.
//!
//! Served as metrics-server (sigs.k8s.io/metrics-server, `pkg/api`) serves
//! it, through the normal request path (authentication, RBAC on group
//! `metrics.k8s.io`, audit):
//!
//! - `nodes` (`NodeMetrics`, cluster-scoped) and `pods` (`PodMetrics`,
//!   namespaced, also listed across namespaces), verbs `get` and `list`
//!   (no watch: 405);
//! - list: the nodes, or the Running pods (metrics-server's pod informer
//!   selects `status.phase=Running`), matching `labelSelector` and
//!   `fieldSelector` (`metadata.name`, `metadata.namespace`; other fields
//!   are upstream's 400 `"x" is not a known field selector: …`), each with
//!   metrics from the last two scrapes ([`storage`]); the others are left
//!   out; nodes sorted by name, pods by namespace then name;
//! - get: a node that does not exist is `node "x" not found` (the node
//!   lister's error), a pod that does not exist or is not Running
//!   `pods "x" not found`; one without metrics (yet)
//!   `nodemetrics.metrics.k8s.io "x" not found` /
//!   `podmetrics.metrics.k8s.io "ns/x" not found`;
//! - objects: `metadata` with the name, namespace, the node's or pod's
//!   labels and `creationTimestamp` = now; `timestamp` (the end of the
//!   window, RFC 3339), `window` (a Go duration, `15.002s`), and `usage`
//!   (`NodeMetrics`) or `containers[].{name, usage}` (`PodMetrics`, by
//!   container name) with `cpu` in canonical nanocores (`156273462n`) and
//!   `memory` in canonical binary units (`34848Ki`); list items carry no
//!   `kind`/`apiVersion` and the list metadata is empty;
//! - `kubectl get` Tables with metrics-server's columns: Name, `cpu`,
//!   `memory` (a pod's containers summed) and Window.
//!
//! The data comes from each node's kubelet `/metrics/resource`, scraped
//! every `--metric-resolution` (default 15 s, as k3s runs metrics-server;
//! upstream's own default is 60 s) by [`scrape::run`], which the API
//! server starts with itself. Logs use the component `metrics-server`.

pub mod decode;
pub mod scrape;
pub mod storage;

use std::sync::RwLock;
use std::time::Duration;

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use rkube_apimachinery::errors::GroupResource;
use rkube_apimachinery::registry::ResourceInfo;
use rkube_apimachinery::{meta, ApiError};
use serde_json::{json, Value};

use crate::rest::negotiate::{self, Format, IncludeObject};
use crate::rest::query::Query;
use crate::rest::request::{RequestInfo, Verb};
use crate::rest::{response, table, Api};
use crate::storage::{ListOptions, Predicate};
use decode::{Batch, PodRef};
use storage::{PodUsage, Storage, TimeInfo, Usage};

/// The API group.
pub const GROUP: &str = "metrics.k8s.io";
/// The served version.
pub const VERSION: &str = "v1beta1";
/// The `component` field of this module's log events.
pub const COMPONENT: &str = "metrics-server";
/// The default `--metric-resolution`: 15 s, what k3s configures for its
/// metrics-server (upstream's default is 60 s).
pub const DEFAULT_METRIC_RESOLUTION: Duration = Duration::from_secs(15);

/// The metrics kept in memory and how often they are refreshed.
#[derive(Debug)]
pub struct MetricsApi {
    resolution: Duration,
    storage: RwLock<Storage>,
}

impl MetricsApi {
    /// Empty storage, scraped every `resolution` (at least 1 s).
    pub fn new(resolution: Duration) -> MetricsApi {
        MetricsApi { resolution: resolution.max(Duration::from_secs(1)), storage: RwLock::default() }
    }

    /// The scrape interval (`--metric-resolution`).
    pub fn resolution(&self) -> Duration {
        self.resolution
    }

    /// Keeps `batch` as the latest scrape.
    pub fn store(&self, batch: Batch) {
        self.storage.write().unwrap_or_else(|e| e.into_inner()).store(batch);
    }

    fn node(&self, name: &str) -> Option<(Usage, TimeInfo)> {
        self.storage.read().unwrap_or_else(|e| e.into_inner()).node(name)
    }

    fn pod(&self, pod: &PodRef) -> Option<PodUsage> {
        self.storage.read().unwrap_or_else(|e| e.into_inner()).pod(pod)
    }
}

/// One metrics object with the figures the Table sums.
struct Item {
    object: Value,
    name: String,
    total: Usage,
    window_ns: i64,
}

/// Serves a `get` or `list` of `nodes` or `pods` in `metrics.k8s.io`
/// (scope and verb already checked by the caller).
pub async fn serve(
    api: &Api,
    request: &RequestInfo,
    info: &ResourceInfo,
    verb: Verb,
    query: &Query,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let format = negotiate::output_format(accept, query.get("includeObject"))?;
    let metrics = api.metrics_api();
    let pods = info.plural == "pods";
    let (body, items) = match verb {
        Verb::Get => {
            let item = if pods {
                get_pod(api, metrics, &request.namespace, &request.name).await?
            } else {
                get_node(api, metrics, &request.name).await?
            };
            let mut object = item.object.clone();
            let typed = json!({"kind": info.kind, "apiVersion": info.api_version()});
            if let (Some(o), Value::Object(t)) = (object.as_object_mut(), typed) {
                let rest = std::mem::take(o);
                o.extend(t);
                o.extend(rest);
            }
            (object, vec![item])
        }
        Verb::List => {
            let predicate = Predicate::parse(query.get("labelSelector"), query.get("fieldSelector"), info.kind, GROUP)?;
            let items = if pods {
                list_pods(api, metrics, &request.namespace, &predicate).await?
            } else {
                list_nodes(api, metrics, &predicate).await?
            };
            let list = json!({"kind": info.list_kind, "apiVersion": info.api_version(), "metadata": {},
                "items": items.iter().map(|i| i.object.clone()).collect::<Vec<_>>()});
            (list, items)
        }
        _ => return Err(ApiError::MethodNotSupported(crate::rest::METHOD_NOT_ALLOWED.into())),
    };
    if let Format::Table { v1beta1, include } = format {
        let table = metrics_table(info, &items, include, v1beta1);
        let mut bytes = serde_json::to_vec(&table).expect("a JSON value always serializes");
        bytes.push(b'\n');
        return Ok((StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], bytes).into_response());
    }
    Ok(response::reply(StatusCode::OK, body, format, info, &[]))
}

/// `metadata` of a metrics object: name, namespace, creationTimestamp =
/// now, the labels of the node or pod.
fn metadata(source: &Value, namespaced: bool) -> Value {
    let mut m = json!({"name": meta::name(source)});
    if namespaced {
        m["namespace"] = json!(meta::namespace(source));
    }
    m["creationTimestamp"] = json!(meta::now());
    if let Some(labels) = source["metadata"]["labels"].as_object().filter(|l| !l.is_empty()) {
        m["labels"] = Value::Object(labels.clone());
    }
    m
}

fn timestamp(ns: i64) -> String {
    let t = jiff::Timestamp::from_second(ns.div_euclid(1_000_000_000)).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    meta::format_time(t)
}

fn node_item(node: &Value, usage: Usage, time: TimeInfo) -> Item {
    let object = json!({
        "metadata": metadata(node, false),
        "timestamp": timestamp(time.timestamp_ns),
        "window": storage::go_duration(time.window_ns),
        "usage": usage.to_json(),
    });
    Item { object, name: meta::name(node).to_string(), total: usage, window_ns: time.window_ns }
}

fn pod_item(pod: &Value, usage: PodUsage) -> Item {
    let containers: Vec<Value> =
        usage.containers.iter().map(|(name, u)| json!({"name": name, "usage": u.to_json()})).collect();
    let total = usage.containers.iter().fold(Usage::default(), |t, (_, u)| Usage {
        cpu_nanocores: t.cpu_nanocores.saturating_add(u.cpu_nanocores),
        memory_bytes: t.memory_bytes.saturating_add(u.memory_bytes),
    });
    let object = json!({
        "metadata": metadata(pod, true),
        "timestamp": timestamp(usage.time.timestamp_ns),
        "window": storage::go_duration(usage.time.window_ns),
        "containers": containers,
    });
    Item { object, name: meta::name(pod).to_string(), total, window_ns: usage.time.window_ns }
}

async fn get_node(api: &Api, metrics: &MetricsApi, name: &str) -> Result<Item, ApiError> {
    let nodes = api.store("", "v1", "nodes").ok_or(ApiError::PathNotFound)?;
    let node = nodes.get("", name, "").await.map_err(|e| match e {
        // The node lister's error.
        ApiError::NotFound { .. } => ApiError::NotFound { resource: GroupResource::new("", "node"), name: name.into() },
        e => e,
    })?;
    let (usage, time) = metrics
        .node(name)
        .ok_or_else(|| ApiError::NotFound { resource: GroupResource::new(GROUP, "nodemetrics"), name: name.into() })?;
    Ok(node_item(&node, usage, time))
}

async fn get_pod(api: &Api, metrics: &MetricsApi, namespace: &str, name: &str) -> Result<Item, ApiError> {
    let pods = api.store("", "v1", "pods").ok_or(ApiError::PathNotFound)?;
    let not_found = || ApiError::NotFound { resource: GroupResource::new("", "pods"), name: name.into() };
    let pod = match pods.get(namespace, name, "").await {
        Ok(pod) => pod,
        Err(ApiError::NotFound { .. }) => return Err(not_found()),
        Err(e) => return Err(e),
    };
    // metrics-server only knows Running pods.
    if pod["status"]["phase"] != "Running" {
        return Err(not_found());
    }
    let usage = metrics.pod(&PodRef::new(namespace, name)).ok_or_else(|| ApiError::NotFound {
        resource: GroupResource::new(GROUP, "podmetrics"),
        name: format!("{namespace}/{name}"),
    })?;
    Ok(pod_item(&pod, usage))
}

async fn list_nodes(api: &Api, metrics: &MetricsApi, predicate: &Predicate) -> Result<Vec<Item>, ApiError> {
    let nodes = api.store("", "v1", "nodes").ok_or(ApiError::PathNotFound)?;
    let all = nodes.list("", &ListOptions::default()).await?;
    let mut items: Vec<Item> = all
        .items
        .iter()
        .filter(|n| predicate.matches(n))
        .filter_map(|n| metrics.node(meta::name(n)).map(|(usage, time)| node_item(n, usage, time)))
        .collect();
    items.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(items)
}

async fn list_pods(
    api: &Api,
    metrics: &MetricsApi,
    namespace: &str,
    predicate: &Predicate,
) -> Result<Vec<Item>, ApiError> {
    let pods = api.store("", "v1", "pods").ok_or(ApiError::PathNotFound)?;
    let running = Predicate::parse(None, Some("status.phase=Running"), "Pod", "")?;
    let all = pods.list(namespace, &ListOptions { predicate: running, ..Default::default() }).await?;
    let mut items: Vec<(String, Item)> = all
        .items
        .iter()
        .filter(|p| predicate.matches(p))
        .filter_map(|p| {
            let usage = metrics.pod(&PodRef::new(meta::namespace(p), meta::name(p)))?;
            Some((meta::namespace(p).to_string(), pod_item(p, usage)))
        })
        .collect();
    items.sort_by(|(na, a), (nb, b)| na.cmp(nb).then_with(|| a.name.cmp(&b.name)));
    Ok(items.into_iter().map(|(_, i)| i).collect())
}

/// metrics-server's `ConvertToTable`: columns Name, `cpu`, `memory`
/// (quantities) and Window (duration); no columns and no rows when there
/// are no items.
fn metrics_table(info: &ResourceInfo, items: &[Item], include: IncludeObject, v1beta1: bool) -> Value {
    let api_version = if v1beta1 { "meta.k8s.io/v1beta1" } else { "meta.k8s.io/v1" };
    let mut table = json!({"kind": "Table", "apiVersion": api_version, "metadata": {},
        "columnDefinitions": null, "rows": null});
    if items.is_empty() {
        return table;
    }
    let column = |name: &str, format: &str, description: &str| json!({"name": name, "type": "string", "format": format, "description": description, "priority": 0});
    table["columnDefinitions"] = json!([
        column("Name", "name", "Name of the resource"),
        column("cpu", "quantity", ""),
        column("memory", "quantity", ""),
        column("Window", "duration", ""),
    ]);
    let rows: Vec<Value> = items
        .iter()
        .map(|item| {
            let mut row = json!({"cells": [
                item.name,
                storage::cpu_quantity(item.total.cpu_nanocores),
                storage::memory_quantity(item.total.memory_bytes),
                storage::go_duration(item.window_ns),
            ]});
            match include {
                IncludeObject::None => {}
                IncludeObject::Metadata => row["object"] = table::partial_metadata(&item.object),
                IncludeObject::Object => {
                    let mut full = json!({"kind": info.kind, "apiVersion": info.api_version()});
                    if let (Some(f), Some(o)) = (full.as_object_mut(), item.object.as_object()) {
                        f.extend(o.clone());
                    }
                    row["object"] = full;
                }
            }
            row
        })
        .collect();
    table["rows"] = json!(rows);
    table
}

#[cfg(test)]
mod tests;
