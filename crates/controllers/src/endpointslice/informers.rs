//! The informers the endpoint controllers share in shape (upstream's
//! Service, Pod and Node listers with their event handlers): reflector
//! stores, and the queue of Services to sync — a Service on its own
//! change, and every Service whose selector matches a pod's old or new
//! labels when the pod changes or goes away (upstream
//! `GetServicesToUpdate`).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::{Node, Pod, Service};
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{watcher, WatchStreamExt};

use super::endpoint::{is_pod_ready, is_pod_terminal, pod_ips, selector, selector_matches};
use crate::runtime::{self, Stop};

/// A Service queue entry (or a watch failure, which the applier logs).
pub type QueueItem = Result<ObjectRef<Service>, watcher::Error>;

/// What a Service deletion should do besides dropping it from the queue.
pub type OnDelete = Arc<dyn Fn(Service) + Send + Sync>;

/// The stores and the queue of one endpoint controller.
pub struct Informers {
    /// Every Service.
    pub services: Store<Service>,
    /// Every pod (filled by a task of its own).
    pub pods: Store<Pod>,
    /// Every node, when asked for (zones).
    pub nodes: Option<Store<Node>>,
    /// The Services to sync, ending at stop.
    pub queue: BoxStream<'static, QueueItem>,
}

/// Starts the watches: Services (the queue's own source), pods (mapped to
/// Services) and, with `with_nodes`, nodes; `extra` adds more triggers
/// (the controller's own objects). `on_delete` runs for every deleted Service.
pub fn start(
    client: kube::Client,
    name: &'static str,
    with_nodes: bool,
    extra: BoxStream<'static, ObjectRef<Service>>,
    on_delete: Option<OnDelete>,
    stop: Stop,
) -> Informers {
    let (services, svc_writer) = reflector::store::<Service>();
    let svc_events = reflector::reflector(
        svc_writer,
        watcher::watcher(Api::<Service>::all(client.clone()), watcher::Config::default()).default_backoff(),
    )
    .filter_map(move |ev| {
        let on_delete = on_delete.clone();
        async move {
            match ev {
                Ok(watcher::Event::Apply(s) | watcher::Event::InitApply(s)) => Some(Ok(ObjectRef::from_obj(&s))),
                Ok(watcher::Event::Delete(s)) => {
                    let r = ObjectRef::from_obj(&s);
                    if let Some(f) = on_delete {
                        f(s);
                    }
                    Some(Ok(r))
                }
                Ok(_) => None,
                Err(e) => Some(Err(e)),
            }
        }
    });

    let (pods, pod_writer) = reflector::store::<Pod>();
    let (tx, rx) = futures::channel::mpsc::unbounded::<ObjectRef<Service>>();
    let pod_events = reflector::reflector(
        pod_writer,
        watcher::watcher(Api::<Pod>::all(client.clone()), watcher::Config::default()).default_backoff(),
    );
    tokio::spawn(drive_pods(name, pod_events, services.clone(), tx, stop.clone()));

    let nodes = with_nodes.then(|| {
        let (nodes, writer) = reflector::store::<Node>();
        let events = reflector::reflector(
            writer,
            watcher::watcher(Api::<Node>::all(client.clone()), watcher::Config::default()).default_backoff(),
        );
        let stop = stop.clone();
        tokio::spawn(async move {
            events.take_until(runtime::stopped(stop)).for_each(|_| async {}).await;
        });
        nodes
    });

    let queue = futures::stream::select_all([svc_events.boxed(), rx.map(Ok).boxed(), extra.map(Ok).boxed()])
        .take_until(runtime::stopped(stop))
        .boxed();
    Informers { services, pods, nodes, queue }
}

/// Keeps the pod store and sends the Services a pod event concerns.
async fn drive_pods(
    name: &'static str,
    events: impl Stream<Item = watcher::Result<watcher::Event<Pod>>>,
    services: Store<Service>,
    tx: futures::channel::mpsc::UnboundedSender<ObjectRef<Service>>,
    stop: Stop,
) {
    let last = Mutex::new(HashMap::<(String, String), Projection>::new());
    let events = events.take_until(runtime::stopped(stop));
    futures::pin_mut!(events);
    while let Some(ev) = events.next().await {
        let (pod, deleted) = match ev {
            Ok(watcher::Event::Apply(p) | watcher::Event::InitApply(p)) => (p, false),
            Ok(watcher::Event::Delete(p)) => (p, true),
            // A (re)list done: pods gone meanwhile sent no delete, so every
            // Service is synced.
            Ok(watcher::Event::InitDone) => {
                for svc in services.state() {
                    let _ = tx.unbounded_send(ObjectRef::from_obj(svc.as_ref()));
                }
                continue;
            }
            Ok(_) => continue,
            Err(e) => {
                tracing::debug!(component = name, error = %e, "pod watch");
                continue;
            }
        };
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let key = (ns.clone(), pod.metadata.name.clone().unwrap_or_default());
        let now = Projection::of(&pod);
        let old = {
            let mut m = last.lock().unwrap_or_else(|e| e.into_inner());
            if deleted {
                m.remove(&key)
            } else {
                m.insert(key, now.clone())
            }
        };
        // Upstream skips updates that change nothing endpoints show.
        if !deleted && old.as_ref() == Some(&now) {
            continue;
        }
        let old = old.map(|o| o.labels);
        for svc in services.state() {
            if svc.metadata.namespace.as_deref() != Some(ns.as_str()) {
                continue;
            }
            let Some(sel) = selector(&svc) else { continue };
            let now = selector_matches(sel, pod.metadata.labels.as_ref());
            let before = old.as_ref().is_some_and(|l| selector_matches(sel, l.as_ref()));
            if now || before {
                let _ = tx.unbounded_send(ObjectRef::from_obj(svc.as_ref()));
            }
        }
    }
}

/// What of a pod its endpoints show (upstream `podEndpointsChanged`, plus
/// the phase and node so terminal or newly bound pods are never missed):
/// an update that changes none of it syncs no Service.
#[derive(Clone, PartialEq)]
struct Projection {
    labels: Option<BTreeMap<String, String>>,
    hostname: Option<String>,
    subdomain: Option<String>,
    node: Option<String>,
    terminating: bool,
    ready: bool,
    terminal: bool,
    ips: Vec<String>,
}

impl Projection {
    fn of(pod: &Pod) -> Projection {
        let spec = pod.spec.as_ref();
        Projection {
            labels: pod.metadata.labels.clone(),
            hostname: spec.and_then(|s| s.hostname.clone()),
            subdomain: spec.and_then(|s| s.subdomain.clone()),
            node: spec.and_then(|s| s.node_name.clone()),
            terminating: pod.metadata.deletion_timestamp.is_some(),
            ready: is_pod_ready(pod),
            terminal: is_pod_terminal(pod),
            ips: pod_ips(pod),
        }
    }
}

/// The pods in `svc`'s namespace its selector matches (none without a selector).
pub fn pods_of(pods: &Store<Pod>, svc: &Service) -> Vec<Arc<Pod>> {
    let Some(sel) = selector(svc) else { return Vec::new() };
    let ns = svc.metadata.namespace.as_deref();
    pods.state_filter(|p| p.metadata.namespace.as_deref() == ns && selector_matches(sel, p.metadata.labels.as_ref()))
}
