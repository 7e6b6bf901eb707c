//! The resource metrics API as the HPA reads it (upstream's
//! `pkg/controller/podautoscaler/metrics` REST client over
//! `metrics.k8s.io/v1beta1`), and the custom/external metrics APIs, which
//! rkube does not serve: reading them fails as upstream's clients do when
//! no such API is registered.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rkube_apimachinery::duration::parse_go_duration;
use serde::Deserialize;

use super::replicas::{PodMetric, PodMetricsInfo};

/// `metrics.k8s.io/v1beta1` `PodMetrics` (k8s.io/metrics): a pod's
/// containers' usage averaged over `window`, sampled at `timestamp`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodMetrics {
    /// The pod's name and namespace.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// When the sample was taken (RFC 3339).
    #[serde(default)]
    pub timestamp: Option<String>,
    /// The window, a Go duration (`"15s"`, `"10.5s"`).
    #[serde(default)]
    pub window: Option<String>,
    /// Usage per container.
    #[serde(default)]
    pub containers: Vec<ContainerMetrics>,
}

/// One container's usage: resource name → quantity (`cpu`, `memory`).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ContainerMetrics {
    /// The container's name.
    #[serde(default)]
    pub name: String,
    /// Its usage.
    #[serde(default)]
    pub usage: BTreeMap<String, String>,
}

/// `PodMetricsList`.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct PodMetricsList {
    /// The pods' samples.
    #[serde(default)]
    pub items: Vec<PodMetrics>,
}

fn milli(q: &str) -> Option<i64> {
    rkube_apimachinery::quantity::milli_value(q).map(|v| v.clamp(i64::MIN as i128, i64::MAX as i128) as i64)
}

/// Upstream's `getPodMetrics`/`getContainerMetrics`: each pod's usage of
/// `resource` in milli-units — summed over its containers (a pod missing
/// the resource in any container, or without containers, is left out), or
/// of `container` only (a pod whose sample lacks that container is an
/// error, as upstream).
pub fn pod_metrics_info(
    list: &PodMetricsList,
    resource: &str,
    container: Option<&str>,
) -> Result<PodMetricsInfo, String> {
    let mut out = PodMetricsInfo::new();
    for m in &list.items {
        let name = m.metadata.name.clone().unwrap_or_default();
        let timestamp =
            m.timestamp.as_deref().and_then(|t| t.parse::<Timestamp>().ok()).unwrap_or(Timestamp::UNIX_EPOCH);
        // Go's time.ParseDuration; a malformed or negative window counts as 0.
        let window = m.window.as_deref().and_then(|w| parse_go_duration(w).ok()).unwrap_or(Duration::ZERO);
        match container {
            Some(want) => {
                let Some(c) = m.containers.iter().find(|c| c.name == want) else {
                    return Err(format!(
                        "container {want} not present in metrics for pod {}/{name}",
                        m.metadata.namespace.clone().unwrap_or_default()
                    ));
                };
                if let Some(v) = c.usage.get(resource).and_then(|q| milli(q)) {
                    out.insert(name, PodMetric { value: v, timestamp, window });
                }
            }
            None => {
                let mut sum = 0i64;
                let mut missing = m.containers.is_empty();
                for c in &m.containers {
                    match c.usage.get(resource).and_then(|q| milli(q)) {
                        Some(v) => sum += v,
                        None => {
                            missing = true;
                            break;
                        }
                    }
                }
                if !missing {
                    out.insert(name, PodMetric { value: sum, timestamp, window });
                }
            }
        }
    }
    Ok(out)
}

/// `application/x-www-form-urlencoded` of one query value.
pub fn encode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// Upstream's `GetResourceMetric`: the pods' samples from
/// `GET /apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods?labelSelector=…`.
/// Errors read as upstream's (`unable to fetch metrics from resource
/// metrics API: …`, `no metrics returned from resource metrics API`).
pub async fn get_resource_metric(
    client: &kube::Client,
    namespace: &str,
    selector: &str,
    resource: &str,
    container: Option<&str>,
) -> Result<PodMetricsInfo, String> {
    let url = format!("/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods?labelSelector={}", encode(selector));
    let req = http::Request::get(url).body(Vec::new()).map_err(|e| e.to_string())?;
    let list: PodMetricsList = client
        .request(req)
        .await
        .map_err(|e| format!("unable to fetch metrics from resource metrics API: {}", super::describe(&e)))?;
    if list.items.is_empty() {
        return Err("no metrics returned from resource metrics API".into());
    }
    pod_metrics_info(&list, resource, container)
}

/// Whether the API serves a group (discovery `GET /apis`).
async fn group_registered(client: &kube::Client, group: &str) -> Result<bool, String> {
    let groups = client.list_api_groups().await.map_err(|e| super::describe(&e))?;
    Ok(groups.groups.iter().any(|g| g.name == group))
}

/// Upstream's custom metrics client: rkube serves no
/// `custom.metrics.k8s.io`, so this fails with upstream's
/// `unable to fetch metrics from custom metrics API: no custom metrics API
/// (custom.metrics.k8s.io) registered` (or, if an aggregated API were
/// registered, that rkube's HPA cannot read it yet).
pub async fn custom_metrics_unavailable(client: &kube::Client) -> String {
    let cause = match group_registered(client, "custom.metrics.k8s.io").await {
        Ok(false) => "no custom metrics API (custom.metrics.k8s.io) registered".to_string(),
        Ok(true) => "reading custom.metrics.k8s.io is not implemented in rkube's HPA controller".to_string(),
        Err(e) => e,
    };
    format!("unable to fetch metrics from custom metrics API: {cause}")
}

/// The same for `external.metrics.k8s.io`.
pub async fn external_metrics_unavailable(client: &kube::Client) -> String {
    let cause = match group_registered(client, "external.metrics.k8s.io").await {
        Ok(false) => "the server could not find the requested resource".to_string(),
        Ok(true) => "reading external.metrics.k8s.io is not implemented in rkube's HPA controller".to_string(),
        Err(e) => e,
    };
    format!("unable to fetch metrics from external metrics API: {cause}")
}
