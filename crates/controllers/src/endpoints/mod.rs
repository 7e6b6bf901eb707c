//! The Endpoints controller (upstream `pkg/controller/endpoint`): every
//! Service with a selector gets an Endpoints object of its name listing
//! the selected pods — ready ones under `addresses`, others under
//! `notReadyAddresses` (terminating pods only when the Service publishes
//! not-ready addresses), per resolved port, repacked ([`subsets`]); at
//! most 1000 addresses, else truncated and annotated
//! `endpoints.kubernetes.io/over-capacity: truncated`; the Service's
//! labels (plus `service.kubernetes.io/headless` when headless) and the
//! `endpoints.kubernetes.io/last-change-trigger-time` annotation. A
//! deleted Service's Endpoints are deleted; Services without a selector
//! and ExternalName Services are left alone.

pub mod subsets;

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{EndpointAddress, EndpointPort, Endpoints, Pod, Service};
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use kube::runtime::controller::{self, Action};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{watcher, WatchStreamExt};
use serde_json::Value;

use crate::endpointslice::endpoint::{self, is_ipv6, is_pod_ready, pod_ips, should_pod_be_in_endpoints};
use crate::endpointslice::informers::{self, OnDelete};
use crate::endpointslice::ports::find_port;
use crate::endpointslice::reconcile::LABEL_HEADLESS;
use crate::endpointslice::triggertime::{self, TriggerTimeTracker};
use crate::endpointslice::LAST_CHANGE_TRIGGER_TIME;
use crate::runtime::{self, is_not_found, Backoff, Ctx, Error, HasBackoff, Stop};

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "endpoints-controller";
/// The older name `--controllers` also accepts.
pub const ALIAS: &str = "endpoint";
/// The kube-system ServiceAccount it runs as.
pub const SERVICE_ACCOUNT: &str = "endpoint-controller";
/// `v1.EndpointsOverCapacity`.
pub const OVER_CAPACITY: &str = "endpoints.kubernetes.io/over-capacity";

struct State {
    ctx: Arc<Ctx>,
    pods: Store<Pod>,
    /// The pod store's initial sync (see `runtime::StoreReady`).
    pods_ready: runtime::StoreReady,
    triggers: Arc<TriggerTimeTracker>,
}

impl HasBackoff for State {
    fn backoff(&self) -> &Backoff {
        &self.ctx.backoff
    }
    fn name(&self) -> &'static str {
        NAME
    }
}

/// Runs until `stop`: Services are the keys; pod changes requeue the
/// Services selecting them, an Endpoints change the Service of its name.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    let client = ctx.reader.clone();
    let endpoints = watcher::watcher(Api::<Endpoints>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .touched_objects()
        .filter_map(|e| async move {
            let e = e.ok()?;
            Some(ObjectRef::<Service>::new(e.metadata.name.as_deref()?).within(e.metadata.namespace.as_deref()?))
        })
        .boxed();
    let triggers = Arc::new(TriggerTimeTracker::default());
    let on_delete: OnDelete = {
        let ctx = ctx.clone();
        let triggers = triggers.clone();
        Arc::new(move |svc: Service| {
            let ctx = ctx.clone();
            triggers.delete(&runtime::key_of(&svc));
            tokio::spawn(async move { delete_endpoints_of(&ctx, &svc).await });
        })
    };
    let inf = informers::start(client, NAME, false, endpoints, Some(on_delete), stop.clone());
    let pods_ready = runtime::StoreReady::new(&inf.pods);
    let state = Arc::new(State { ctx, pods: inf.pods, pods_ready, triggers });
    let applier = controller::applier(
        |svc, state: Arc<State>| Box::pin(reconcile(svc, state)),
        runtime::error_policy,
        state,
        inf.services,
        inf.queue,
        controller::Config::default(),
    );
    runtime::drive(NAME, applier.take_until(runtime::stopped(stop))).await;
}

/// A deleted Service's Endpoints go too (upstream deletes them by name).
async fn delete_endpoints_of(ctx: &Ctx, svc: &Service) {
    let (Some(ns), Some(name)) = (svc.metadata.namespace.as_deref(), svc.metadata.name.as_deref()) else { return };
    let api = Api::<Endpoints>::namespaced(ctx.client.clone(), ns);
    for attempt in 0..5u32 {
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => return,
            Err(e) if is_not_found(&e) => return,
            Err(e) => {
                tracing::warn!(component = NAME, service = %format!("{ns}/{name}"), attempt, error = %e, "deleting Endpoints");
                tokio::time::sleep(std::time::Duration::from_millis(100 << attempt)).await;
            }
        }
    }
}

/// Upstream `podToEndpointAddressForService`: the pod's IP of the
/// Service's (first) family, its node and a reference to it; none when the
/// pod has no IP of that family.
pub fn pod_address(svc: &Service, pod: &Pod) -> Option<EndpointAddress> {
    let spec = svc.spec.as_ref();
    let v6 = match spec.and_then(|s| s.ip_families.as_ref()).and_then(|f| f.first()) {
        Some(f) => f == "IPv6",
        None => match spec.and_then(|s| s.cluster_ip.as_deref()) {
            Some(ip) if !ip.is_empty() && ip != "None" => is_ipv6(ip),
            _ => pod.status.as_ref().and_then(|s| s.pod_ip.as_deref()).is_some_and(is_ipv6),
        },
    };
    let ip = pod_ips(pod).into_iter().find(|ip| is_ipv6(ip) == v6)?;
    let hostname =
        endpoint::should_set_hostname(pod, svc).then(|| pod.spec.as_ref().and_then(|s| s.hostname.clone())).flatten();
    Some(EndpointAddress {
        ip,
        hostname,
        node_name: pod.spec.as_ref().and_then(|s| s.node_name.clone()).filter(|n| !n.is_empty()),
        target_ref: Some(endpoint::pod_reference(pod)),
    })
}

/// The subsets for `svc` and its pods (upstream `syncService`'s loop and
/// `RepackSubsets`).
pub fn desired_subsets(svc: &Service, pods: &[&Pod]) -> Vec<k8s_openapi::api::core::v1::EndpointSubset> {
    let spec = svc.spec.clone().unwrap_or_default();
    let publish = spec.publish_not_ready_addresses.unwrap_or(false);
    let svc_ports = spec.ports.unwrap_or_default();
    let mut packer = subsets::Packer::default();
    for pod in pods {
        if !should_pod_be_in_endpoints(pod, publish) {
            continue;
        }
        let Some(addr) = pod_address(svc, pod) else { continue };
        let ready = publish || is_pod_ready(pod);
        if svc_ports.is_empty() {
            if spec.cluster_ip.as_deref() == Some("None") {
                packer.add(&addr, ready, None);
            }
            continue;
        }
        for sp in &svc_ports {
            let Some(n) = find_port(pod, sp) else { continue };
            let port = EndpointPort {
                name: sp.name.clone(),
                port: n,
                protocol: Some(sp.protocol.clone().unwrap_or_else(|| "TCP".into())),
                app_protocol: sp.app_protocol.clone(),
            };
            packer.add(&addr, ready, Some(&port));
        }
    }
    packer.subsets()
}

/// JSON with nulls, empty lists/maps and target resourceVersions dropped:
/// upstream's semantic equality (nil = empty) ignoring pod resourceVersions.
fn normalized(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .filter(|(k, _)| k != "resourceVersion")
                .map(|(k, v)| (k, normalized(v)))
                .filter(|(_, v)| !is_empty(v))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(normalized).collect()),
        v => v,
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

async fn reconcile(svc: Arc<Service>, state: Arc<State>) -> Result<Action, Error> {
    let ctx = &state.ctx;
    let key = runtime::key_of(svc.as_ref());
    let spec = svc.spec.clone().unwrap_or_default();
    if spec.type_.as_deref() == Some("ExternalName") || endpoint::selector(&svc).is_none() {
        return ctx.done(&key, Action::await_change());
    }
    if tokio::time::timeout(std::time::Duration::from_secs(30), state.pods_ready.wait()).await.is_err() {
        return Err(Error::Other("pod cache not synced yet".into()));
    }
    let ns = svc.metadata.namespace.clone().unwrap_or_default();
    let name = svc.metadata.name.clone().unwrap_or_default();
    let pods = informers::pods_of(&state.pods, &svc);
    let pod_refs: Vec<&Pod> = pods.iter().map(|p| p.as_ref()).collect();
    let trigger_time = state.triggers.compute(&svc, &pod_refs).map(triggertime::format);
    let mut subsets = desired_subsets(&svc, &pod_refs);

    // The manager's identity may only list and watch Endpoints (what upstream's
    // informer does); a GET goes through the controller's own account.
    let current = match Api::<Endpoints>::namespaced(ctx.client.clone(), &ns).get(&name).await {
        Ok(e) => Some(e),
        Err(e) if is_not_found(&e) => None,
        Err(e) => return Err(e.into()),
    };
    let svc_labels = svc.metadata.labels.clone().unwrap_or_default();
    if let Some(cur) = &current {
        let mut labels = cur.metadata.labels.clone().unwrap_or_default();
        labels.remove(LABEL_HEADLESS);
        let count: usize = cur
            .subsets
            .iter()
            .flatten()
            .map(|s| s.addresses.as_ref().map_or(0, Vec::len) + s.not_ready_addresses.as_ref().map_or(0, Vec::len))
            .sum();
        let capacity_ok = count <= subsets::MAX_CAPACITY
            && !cur.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(OVER_CAPACITY));
        let same = normalized(serde_json::to_value(&cur.subsets).unwrap_or_default())
            == normalized(serde_json::to_value(Some(&subsets)).unwrap_or_default());
        if same && labels == svc_labels && capacity_ok {
            return ctx.done(&key, Action::await_change());
        }
    }
    let mut ep = current.clone().unwrap_or_else(|| Endpoints {
        metadata: ObjectMeta { name: Some(name.clone()), namespace: Some(ns.clone()), ..Default::default() },
        ..Default::default()
    });
    let ann = ep.metadata.annotations.get_or_insert_with(BTreeMap::new);
    match &trigger_time {
        Some(t) => {
            ann.insert(LAST_CHANGE_TRIGGER_TIME.into(), t.clone());
        }
        None => {
            ann.remove(LAST_CHANGE_TRIGGER_TIME);
        }
    }
    if subsets::truncate(&mut subsets) {
        ann.insert(OVER_CAPACITY.into(), "truncated".into());
    } else {
        ann.remove(OVER_CAPACITY);
    }
    let mut labels = svc_labels;
    if endpoint::is_service_ip_set(&svc) {
        labels.remove(LABEL_HEADLESS);
    } else {
        labels.insert(LABEL_HEADLESS.into(), String::new());
    }
    ep.metadata.labels = Some(labels);
    ep.subsets = Some(subsets);
    let api = Api::<Endpoints>::namespaced(ctx.client.clone(), &ns);
    let result = match &current {
        None => api.create(&PostParams::default(), &ep).await,
        Some(_) => api.replace(&name, &PostParams::default(), &ep).await,
    };
    if let Err(e) = result {
        if current.is_none() && runtime::is_namespace_gone(&e) {
            return ctx.done(&key, Action::await_change());
        }
        let (reason, msg) = match current {
            None => ("FailedToCreateEndpoint", format!("Failed to create endpoint for service {ns}/{name}: {e}")),
            Some(_) => ("FailedToUpdateEndpoint", format!("Failed to update endpoint {ns}/{name}: {e}")),
        };
        ctx.recorder.event(&ep, crate::events::WARNING, reason, msg);
        return Err(e.into());
    }
    ctx.done(&key, Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, ip: &str, ready: bool, extra: Value) -> Pod {
        let mut v = json!({"metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"), "labels": {"app": "web"}},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}]},
            "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                       "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]}});
        if let Value::Object(m) = extra {
            for (k, x) in m {
                v["metadata"][k] = x;
            }
        }
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn ready_and_not_ready_addresses_and_terminating_pods_as_upstream() {
        let svc: Service = serde_json::from_value(json!({"metadata": {"name": "web", "namespace": "ns"},
            "spec": {"clusterIP": "10.96.0.10", "ipFamilies": ["IPv4"], "selector": {"app": "web"},
                     "ports": [{"port": 80, "targetPort": "http", "protocol": "TCP"}]}}))
        .unwrap();
        let a = pod("a", "10.0.0.1", true, json!({}));
        let b = pod("b", "10.0.0.2", false, json!({}));
        let c = pod("c", "10.0.0.3", true, json!({"deletionTimestamp": "2024-01-01T00:00:00Z"}));
        let s = desired_subsets(&svc, &[&a, &b, &c]);
        assert_eq!(s.len(), 1);
        let ips = |v: &Option<Vec<EndpointAddress>>| v.iter().flatten().map(|a| a.ip.clone()).collect::<Vec<_>>();
        assert_eq!(ips(&s[0].addresses), ["10.0.0.1"]);
        assert_eq!(ips(&s[0].not_ready_addresses), ["10.0.0.2"], "terminating pods are left out");
        assert_eq!(s[0].ports.as_ref().unwrap()[0].port, 8080);
        let addr = &s[0].addresses.as_ref().unwrap()[0];
        assert_eq!(addr.node_name.as_deref(), Some("n1"));
        assert_eq!(addr.target_ref.as_ref().unwrap().uid.as_deref(), Some("uid-a"));

        // publishNotReadyAddresses: every pod (terminating too) is a ready address.
        let mut svc2 = svc.clone();
        svc2.spec.as_mut().unwrap().publish_not_ready_addresses = Some(true);
        let s = desired_subsets(&svc2, &[&a, &b, &c]);
        assert_eq!(ips(&s[0].addresses), ["10.0.0.1", "10.0.0.2", "10.0.0.3"]);
        assert!(s[0].not_ready_addresses.is_none());
    }

    #[test]
    fn semantic_equality_ignores_empty_lists_and_resource_versions() {
        let a = json!([{"addresses": [{"ip": "1.1.1.1", "targetRef": {"kind": "Pod", "resourceVersion": "5"}}], "notReadyAddresses": []}]);
        let b = json!([{"addresses": [{"ip": "1.1.1.1", "targetRef": {"kind": "Pod"}}]}]);
        assert_eq!(normalized(a), normalized(b.clone()));
        assert_ne!(normalized(json!([{"addresses": [{"ip": "1.1.1.2"}]}])), normalized(b));
    }
}
