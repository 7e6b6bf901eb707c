//! The scrape loop (metrics-server's `runScrape` and `scraper.Scrape`):
//! every `--metric-resolution`, starting at once, every Node is asked for
//! `GET https://<address>:<kubelet port>/metrics/resource` concurrently,
//! each with a timeout (metrics-server's `--kubelet-request-timeout`, 10 s,
//! shortened to 9/10 of the resolution when that is less), and the merged
//! batch replaces the stored one ([`super::storage::Storage::store`]).
//!
//! Kubelets are reached as logs and exec reach them: the node's preferred
//! address and `daemonEndpoints.kubeletEndpoint.Port`
//! ([`crate::rest::connect::location::kubelet_endpoint`]) over TLS with the
//! apiserver-kubelet-client certificate, verifying the kubelet's serving
//! certificate against the cluster CA ([`KubeletClient::backend`]). A node
//! that does not answer is left out of that scrape (its metrics disappear
//! until it answers twice again); failures of Ready nodes are warnings,
//! of not-Ready nodes debug events, as upstream logs them.
//!
//! One difference from metrics-server: a Node without any `Ready`
//! condition is not scraped. No kubelet has ever reported on such a node
//! (every kubelet posts its conditions with its first status), so there is
//! nothing to ask; and address-only Node objects that tests point at
//! stand-in kubelets are not disturbed.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use serde_json::Value;

use super::decode::{decode_batch, Batch};
use super::COMPONENT;
use crate::rest::connect::kubelet::KubeletClient;
use crate::rest::connect::location::kubelet_endpoint;
use crate::rest::Api;
use crate::storage::{ListOptions, Predicate};

/// metrics-server's default `--kubelet-request-timeout`.
pub const KUBELET_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The kubelet path scraped.
pub const RESOURCE_METRICS_PATH: &str = "/metrics/resource";
/// The largest `/metrics/resource` body read (a node with thousands of
/// containers stays far below it).
const MAX_BODY: usize = 64 << 20;

/// The timeout of one node's scrape at `resolution`.
pub fn scrape_timeout(resolution: Duration) -> Duration {
    KUBELET_REQUEST_TIMEOUT.min(resolution * 9 / 10)
}

/// Runs the scrape loop until the task is aborted. Without a kubelet
/// client (a server built without a PKI) nothing is scraped and the
/// metrics API serves empty lists.
pub async fn run(api: Arc<Api>) {
    let metrics = api.metrics_api().clone();
    let resolution = metrics.resolution();
    let Some(client) = api.cluster().kubelet_client.clone() else {
        tracing::info!(component = COMPONENT, "no kubelet client configured: the metrics API serves no metrics");
        return;
    };
    let timeout = scrape_timeout(resolution);
    tracing::info!(
        component = COMPONENT,
        resolution_seconds = resolution.as_secs_f64(),
        timeout_seconds = timeout.as_secs_f64(),
        "scraping the kubelets' resource metrics"
    );
    let mut ticker = tokio::time::interval(resolution);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let started = std::time::Instant::now();
        let batch = scrape(&api, &client, timeout).await;
        let (nodes, pods) = (batch.nodes.len(), batch.pods.len());
        metrics.store(batch);
        tracing::debug!(
            component = COMPONENT,
            nodes,
            pods,
            took_ms = started.elapsed().as_millis() as u64,
            "scrape finished"
        );
    }
}

/// One scrape of every node (partial results when some fail).
pub async fn scrape(api: &Api, client: &KubeletClient, timeout: Duration) -> Batch {
    let Some(nodes) = api.store("", "v1", "nodes") else { return Batch::default() };
    let opts = ListOptions { predicate: Predicate::default(), ..Default::default() };
    let nodes = match nodes.list("", &opts).await {
        Ok(list) => list.items,
        Err(e) => {
            tracing::warn!(component = COMPONENT, error = %e, "cannot list nodes to scrape");
            return Batch::default();
        }
    };
    let nodes: Vec<Value> = nodes.into_iter().filter(has_ready_condition).collect();
    let results = futures::future::join_all(nodes.iter().map(|node| scrape_node(client, node, timeout))).await;
    let mut batch = Batch::default();
    for (node, result) in nodes.iter().zip(results) {
        let name = node["metadata"]["name"].as_str().unwrap_or_default();
        match result {
            Ok(b) => {
                let duplicates = batch.merge(b);
                if duplicates > 0 {
                    tracing::warn!(
                        component = COMPONENT,
                        node = name,
                        duplicates,
                        "duplicate node or pod points; the first kept"
                    );
                }
            }
            Err(e) if node_is_ready(node) => {
                tracing::warn!(component = COMPONENT, node = name, error = %e, "failed to scrape node")
            }
            Err(e) => {
                tracing::debug!(component = COMPONENT, node = name, error = %e, "failed to scrape node, node is not ready")
            }
        }
    }
    batch
}

/// Scrapes one node's kubelet.
async fn scrape_node(client: &KubeletClient, node: &Value, timeout: Duration) -> Result<Batch, String> {
    let name = node["metadata"]["name"].as_str().unwrap_or_default();
    let (host, port) = kubelet_endpoint(node).map_err(|e| e.to_string())?;
    let backend = client.backend(&host, port);
    let url = format!("https://{}{RESOURCE_METRICS_PATH}", backend.authority());
    let request_time_ms = jiff::Timestamp::now().as_millisecond();
    let fetch = async {
        let request = hyper::Request::get(RESOURCE_METRICS_PATH).body(Body::empty()).map_err(|e| e.to_string())?;
        let response = backend.send(request).await.map_err(|e| format!("Get {url:?}: {e}"))?;
        if response.status() != hyper::StatusCode::OK {
            return Err(format!("request failed, status: {:?}", response.status().to_string()));
        }
        let body = axum::body::to_bytes(Body::new(response.into_body()), MAX_BODY)
            .await
            .map_err(|e| format!("failed to read response body - {e}"))?;
        Ok(String::from_utf8_lossy(&body).into_owned())
    };
    let text = tokio::time::timeout(timeout, fetch)
        .await
        .map_err(|_| format!("timeout to access kubelet after {timeout:?}"))??;
    decode_batch(&text, request_time_ms, name)
}

/// Whether a kubelet ever reported the node's `Ready` condition.
fn has_ready_condition(node: &Value) -> bool {
    node["status"]["conditions"].as_array().into_iter().flatten().any(|c| c["type"] == "Ready")
}

/// The node's Ready condition is True.
fn node_is_ready(node: &Value) -> bool {
    node["status"]["conditions"].as_array().into_iter().flatten().any(|c| c["type"] == "Ready" && c["status"] == "True")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_fit_the_resolution() {
        assert_eq!(scrape_timeout(Duration::from_secs(15)), Duration::from_secs(10));
        assert_eq!(scrape_timeout(Duration::from_secs(2)), Duration::from_millis(1800));
        assert!(node_is_ready(&serde_json::json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}})));
        assert!(!node_is_ready(&serde_json::json!({"status": {}})));
        let not_ready = serde_json::json!({"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}});
        assert!(has_ready_condition(&not_ready) && !node_is_ready(&not_ready));
        assert!(!has_ready_condition(
            &serde_json::json!({"status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}]}})
        ));
    }
}
