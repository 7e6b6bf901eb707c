//! The scheduler's informers (upstream `eventhandlers.go`): pods and nodes
//! feed the cache and the queue; PVCs, PVs, StorageClasses, CSINodes,
//! PDBs and Namespaces are reflector stores the plugins read as
//! [`Lister`]s, and their changes are cluster events for the queue.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher::{self, Event};
use kube::Resource;
use serde::de::DeserializeOwned;

use crate::cache::Cache;
use crate::framework::{action, ClusterEvent, EventResource, Lister, PodInfo};
use crate::queue::SchedulingQueue;

/// A reflector [`Store`] as a [`Lister`], with a namespace index so that
/// namespaced reads (upstream's `Services(ns).List`) do not walk the
/// whole cluster.
#[derive(Clone)]
pub struct StoreLister<K: Resource<DynamicType = ()> + Clone + 'static> {
    store: Store<K>,
    by_namespace: Arc<RwLock<HashMap<String, BTreeSet<String>>>>,
}

impl<K: Resource<DynamicType = ()> + Clone + 'static> StoreLister<K> {
    /// A lister over `store` whose index is kept by [`StoreLister::observe`].
    pub fn new(store: Store<K>) -> Self {
        StoreLister { store, by_namespace: Default::default() }
    }

    /// Updates the namespace index after the store applied `ev`. A relist
    /// (`InitDone`) rebuilds it from the store.
    pub fn observe(&self, ev: &Event<K>) {
        let mut index = self.by_namespace.write().unwrap_or_else(|e| e.into_inner());
        let ns_name = |o: &K| {
            let m = o.meta();
            (m.namespace.clone().unwrap_or_default(), m.name.clone().unwrap_or_default())
        };
        match ev {
            Event::Apply(o) => {
                let (ns, name) = ns_name(o);
                index.entry(ns).or_default().insert(name);
            }
            Event::Delete(o) => {
                let (ns, name) = ns_name(o);
                if let Some(set) = index.get_mut(&ns) {
                    set.remove(&name);
                    if set.is_empty() {
                        index.remove(&ns);
                    }
                }
            }
            Event::InitDone => {
                index.clear();
                for o in self.store.state() {
                    let (ns, name) = ns_name(&o);
                    index.entry(ns).or_default().insert(name);
                }
            }
            Event::Init | Event::InitApply(_) => {}
        }
    }
}

impl<K> Lister<K> for StoreLister<K>
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    fn get(&self, namespace: &str, name: &str) -> Option<Arc<K>> {
        let mut r = ObjectRef::new(name);
        if !namespace.is_empty() {
            r = r.within(namespace);
        }
        self.store.get(&r)
    }
    fn list(&self) -> Vec<Arc<K>> {
        self.store.state()
    }
    fn list_namespace(&self, namespace: &str) -> Vec<Arc<K>>
    where
        K: k8s_openapi::Metadata<Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>,
    {
        let index = self.by_namespace.read().unwrap_or_else(|e| e.into_inner());
        let Some(names) = index.get(namespace) else { return Vec::new() };
        names.iter().filter_map(|n| self.get(namespace, n)).collect()
    }
}

/// Starts a reflector for `K` over all namespaces; each change is passed
/// to `on_event` as a cluster event on `resource`. Returns the lister.
pub fn spawn_store<K>(
    client: kube::Client,
    resource: EventResource,
    on_event: impl Fn(ClusterEvent) + Send + 'static,
) -> (StoreLister<K>, tokio::task::JoinHandle<()>)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let (store, writer) = reflector::store::<K>();
    let lister = StoreLister::new(store);
    let api: Api<K> = Api::all(client);
    let stream = reflector::reflector(writer, watcher::watcher(api, watcher::Config::default()));
    let index = lister.clone();
    let task = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(ev) = stream.next().await {
            if let Ok(ev) = &ev {
                index.observe(ev);
            }
            let actions = match ev {
                Ok(Event::Apply(_)) => action::ADD | action::UPDATE,
                Ok(Event::Delete(_)) => action::DELETE,
                Ok(_) => continue,
                Err(e) => {
                    tracing::debug!(component = "kube-scheduler", error = %e, "watch error; retrying");
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                    continue;
                }
            };
            on_event(ClusterEvent { resource, actions });
        }
    });
    (lister, task)
}

fn node_name(p: &Pod) -> &str {
    p.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or("")
}

fn key(p: &Pod) -> String {
    p.metadata.uid.clone().unwrap_or_default()
}

/// Whether the scheduler should queue `p`: unassigned, one of our
/// profiles, not terminal or terminating.
fn responsible(p: &Pod, profiles: &[String]) -> bool {
    let name =
        p.spec.as_ref().and_then(|s| s.scheduler_name.as_deref()).unwrap_or(crate::config::DEFAULT_SCHEDULER_NAME);
    let phase = p.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("");
    node_name(p).is_empty()
        && profiles.iter().any(|n| n == name)
        && p.metadata.deletion_timestamp.is_none()
        && phase != "Succeeded"
        && phase != "Failed"
}

/// Applies pod watch events to the cache and the queue.
pub struct PodHandler {
    /// The cache.
    pub cache: Arc<Mutex<Cache>>,
    /// The queue.
    pub queue: Arc<SchedulingQueue>,
    /// Profile names.
    pub profiles: Vec<String>,
    known: HashMap<String, Arc<Pod>>,
    relist: Option<HashMap<String, Arc<Pod>>>,
}

impl PodHandler {
    /// A handler with no pods known.
    pub fn new(cache: Arc<Mutex<Cache>>, queue: Arc<SchedulingQueue>, profiles: Vec<String>) -> Self {
        PodHandler { cache, queue, profiles, known: HashMap::new(), relist: None }
    }

    fn upsert(&mut self, pod: Arc<Pod>) {
        let old = self.known.insert(key(&pod), pod.clone());
        let assigned = !node_name(&pod).is_empty();
        if assigned {
            let was_unassigned = old.as_ref().is_some_and(|o| node_name(o).is_empty());
            if old.is_none() || was_unassigned {
                self.queue.delete(&pod);
            }
            self.cache.lock().unwrap().add_or_update_pod(pod.clone());
            let actions = match &old {
                Some(o) if !node_name(o).is_empty() => {
                    let mut a = action::UPDATE;
                    if o.metadata.labels != pod.metadata.labels {
                        a |= action::UPDATE_POD_LABEL;
                    }
                    a
                }
                _ => action::ADD,
            };
            if pod.metadata.deletion_timestamp.is_none() {
                self.queue.move_all_to_active_or_backoff(ClusterEvent { resource: EventResource::Pod, actions });
            }
            return;
        }
        let Ok(pi) = PodInfo::new(pod.clone()) else { return };
        match old {
            _ if !responsible(&pod, &self.profiles) => self.queue.delete(&pod),
            Some(o) if responsible(&o, &self.profiles) => self.queue.update(&o, Arc::new(pi)),
            _ => self.queue.add(Arc::new(pi)),
        }
    }

    fn delete(&mut self, pod: &Pod) {
        self.known.remove(&key(pod));
        if node_name(pod).is_empty() {
            self.queue.delete(pod);
        } else {
            self.cache.lock().unwrap().remove_pod(pod);
            self.queue
                .move_all_to_active_or_backoff(ClusterEvent { resource: EventResource::Pod, actions: action::DELETE });
        }
    }

    /// One watch event; true when a (re)list completed.
    pub fn handle(&mut self, ev: Event<Pod>) -> bool {
        match ev {
            Event::Apply(p) => self.upsert(Arc::new(p)),
            Event::Delete(p) => self.delete(&p),
            Event::Init => self.relist = Some(HashMap::new()),
            Event::InitApply(p) => {
                let p = Arc::new(p);
                if let Some(r) = self.relist.as_mut() {
                    r.insert(key(&p), p.clone());
                }
                self.upsert(p);
            }
            Event::InitDone => {
                let seen = self.relist.take().unwrap_or_default();
                let gone: Vec<Arc<Pod>> =
                    self.known.iter().filter(|(k, _)| !seen.contains_key(*k)).map(|(_, p)| p.clone()).collect();
                for p in gone {
                    self.delete(&p);
                }
                return true;
            }
        }
        false
    }
}

/// The action bits of a node update (upstream `nodeSchedulingPropertiesChange`).
pub fn node_update_actions(old: &Node, new: &Node) -> u32 {
    let mut a = 0;
    let alloc = |n: &Node| n.status.as_ref().and_then(|s| s.allocatable.clone());
    if alloc(old) != alloc(new) {
        a |= action::UPDATE_NODE_ALLOCATABLE;
    }
    if old.metadata.labels != new.metadata.labels {
        a |= action::UPDATE_NODE_LABEL;
    }
    let taints = |n: &Node| n.spec.as_ref().map(|s| (s.taints.clone(), s.unschedulable));
    if taints(old) != taints(new) {
        a |= action::UPDATE_NODE_TAINT;
    }
    let conds = |n: &Node| {
        n.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .map(|c| c.iter().map(|c| (c.type_.clone(), c.status.clone())).collect::<Vec<_>>())
    };
    if conds(old) != conds(new) {
        a |= action::UPDATE_NODE_CONDITION;
    }
    if old.metadata.annotations != new.metadata.annotations {
        a |= action::UPDATE_NODE_ANNOTATION;
    }
    a
}

/// Applies node watch events to the cache and the queue.
pub struct NodeHandler {
    /// The cache.
    pub cache: Arc<Mutex<Cache>>,
    /// The queue.
    pub queue: Arc<SchedulingQueue>,
    known: HashMap<String, Arc<Node>>,
    relist: Option<HashMap<String, ()>>,
}

impl NodeHandler {
    /// A handler with no nodes known.
    pub fn new(cache: Arc<Mutex<Cache>>, queue: Arc<SchedulingQueue>) -> Self {
        NodeHandler { cache, queue, known: HashMap::new(), relist: None }
    }

    fn upsert(&mut self, node: Arc<Node>) {
        let name = node.metadata.name.clone().unwrap_or_default();
        let old = self.known.insert(name, node.clone());
        self.cache.lock().unwrap().add_or_update_node(node.clone());
        let actions = match &old {
            None => action::ADD,
            Some(o) => node_update_actions(o, &node),
        };
        if actions != 0 {
            self.queue.move_all_to_active_or_backoff(ClusterEvent { resource: EventResource::Node, actions });
        }
    }

    /// One watch event; true when a (re)list completed.
    pub fn handle(&mut self, ev: Event<Node>) -> bool {
        match ev {
            Event::Apply(n) => self.upsert(Arc::new(n)),
            Event::Delete(n) => {
                let name = n.metadata.name.clone().unwrap_or_default();
                self.known.remove(&name);
                self.cache.lock().unwrap().remove_node(&name);
            }
            Event::Init => self.relist = Some(HashMap::new()),
            Event::InitApply(n) => {
                if let Some(r) = self.relist.as_mut() {
                    r.insert(n.metadata.name.clone().unwrap_or_default(), ());
                }
                self.upsert(Arc::new(n));
            }
            Event::InitDone => {
                let seen = self.relist.take().unwrap_or_default();
                let gone: Vec<String> = self.known.keys().filter(|k| !seen.contains_key(*k)).cloned().collect();
                for name in gone {
                    self.known.remove(&name);
                    self.cache.lock().unwrap().remove_node(&name);
                }
                return true;
            }
        }
        false
    }
}

/// Runs a watch of `K` through `handle` until the stream ends; `synced`
/// is set after the first complete list.
pub fn spawn_watch<K, H>(api: Api<K>, mut handle: H, synced: Arc<AtomicBool>) -> tokio::task::JoinHandle<()>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    H: FnMut(Event<K>) -> bool + Send + 'static,
{
    tokio::spawn(async move {
        let stream = watcher::watcher(api, watcher::Config::default());
        let mut stream = std::pin::pin!(stream);
        while let Some(ev) = stream.next().await {
            match ev {
                Ok(ev) => {
                    if handle(ev) {
                        synced.store(true, Ordering::SeqCst);
                    }
                }
                Err(e) => {
                    tracing::debug!(component = "kube-scheduler", error = %e, "watch error; retrying");
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Service;
    use kube::api::ObjectMeta;

    fn svc(ns: &str, name: &str) -> Service {
        Service {
            metadata: ObjectMeta { namespace: Some(ns.into()), name: Some(name.into()), ..Default::default() },
            ..Default::default()
        }
    }

    fn names(v: Vec<Arc<Service>>) -> Vec<String> {
        let mut n: Vec<String> = v.iter().map(|s| s.metadata.name.clone().unwrap()).collect();
        n.sort();
        n
    }

    #[test]
    fn namespace_index_follows_applies_deletes_and_relists() {
        let (store, mut writer) = reflector::store::<Service>();
        let lister = StoreLister::new(store);
        let mut apply = |ev: Event<Service>| {
            writer.apply_watcher_event(&ev);
            lister.observe(&ev);
        };
        apply(Event::Init);
        apply(Event::InitApply(svc("a", "s1")));
        apply(Event::InitApply(svc("b", "s2")));
        apply(Event::InitDone);
        apply(Event::Apply(svc("a", "s3")));
        assert_eq!(names(lister.list_namespace("a")), ["s1", "s3"]);
        assert_eq!(names(lister.list_namespace("b")), ["s2"]);
        apply(Event::Delete(svc("a", "s1")));
        assert_eq!(names(lister.list_namespace("a")), ["s3"]);
        assert!(lister.list_namespace("c").is_empty());
        // A relist replaces everything: s3 and s2 are gone.
        apply(Event::Init);
        apply(Event::InitApply(svc("c", "s4")));
        apply(Event::InitDone);
        assert!(lister.list_namespace("a").is_empty());
        assert!(lister.list_namespace("b").is_empty());
        assert_eq!(names(lister.list_namespace("c")), ["s4"]);
        assert_eq!(names(lister.list()), ["s4"]);
    }
}
