//! The scheduler cache (upstream `pkg/scheduler/backend/cache`): nodes and
//! the pods bound or assumed to them, fed by the informers, and the
//! per-cycle [`Snapshot`].
//!
//! - Assumed pods: the cycle assumes its choice at once so the next cycle
//!   sees the room taken; the pod stays assumed until the informer reports
//!   it bound (upstream 1.33 has no assume TTL), or is forgotten when
//!   binding fails.
//! - Node order: upstream's node tree — nodes grouped by zone
//!   (`topology.kubernetes.io/region` + `topology.kubernetes.io/zone`), zones
//!   interleaved round-robin, so the Filter walk spreads across zones.
//! - Snapshots are incremental: only nodes changed since the last
//!   snapshot are copied.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};

use crate::framework::{NodeInfo, PodInfo, Snapshot};

/// The zone label (upstream `v1.LabelTopologyZone`).
pub const LABEL_ZONE: &str = "topology.kubernetes.io/zone";
/// The region label.
pub const LABEL_REGION: &str = "topology.kubernetes.io/region";

/// Upstream `utilnode.GetZoneKey`: `region:\0:zone`, or empty without both labels.
pub fn zone_key(node: &Node) -> String {
    let labels = node.metadata.labels.as_ref();
    let get = |k: &str| labels.and_then(|l| l.get(k)).map(String::as_str).unwrap_or("");
    let (region, zone) = (get(LABEL_REGION), get(LABEL_ZONE));
    if region.is_empty() && zone.is_empty() {
        return String::new();
    }
    format!("{region}:\x00:{zone}")
}

/// Nodes by zone in insertion order (upstream `nodeTree`).
#[derive(Debug, Default)]
struct NodeTree {
    zones: Vec<String>,
    by_zone: HashMap<String, Vec<String>>,
}

impl NodeTree {
    fn add(&mut self, zone: &str, name: &str) {
        let list = self.by_zone.entry(zone.to_string()).or_insert_with(|| {
            self.zones.push(zone.to_string());
            Vec::new()
        });
        if !list.iter().any(|n| n == name) {
            list.push(name.to_string());
        }
    }

    fn remove(&mut self, zone: &str, name: &str) {
        if let Some(list) = self.by_zone.get_mut(zone) {
            list.retain(|n| n != name);
            if list.is_empty() {
                self.by_zone.remove(zone);
                self.zones.retain(|z| z != zone);
            }
        }
    }

    /// Zones interleaved: the first node of each zone, then the second, …
    fn list(&self) -> Vec<String> {
        let total: usize = self.by_zone.values().map(Vec::len).sum();
        let mut out = Vec::with_capacity(total);
        let mut round = 0;
        while out.len() < total {
            for z in &self.zones {
                if let Some(n) = self.by_zone[z].get(round) {
                    out.push(n.clone());
                }
            }
            round += 1;
        }
        out
    }
}

#[derive(Debug, Clone)]
struct PodState {
    pod: Arc<PodInfo>,
    node: String,
    assumed: bool,
}

/// The cache (see the module docs). Not synchronized: the scheduler holds it in a mutex.
#[derive(Debug, Default)]
pub struct Cache {
    nodes: HashMap<String, NodeInfo>,
    zone_of: HashMap<String, String>,
    tree: NodeTree,
    pods: HashMap<String, PodState>,
    // Incremental snapshot state: the last snapshot, the nodes changed
    // since, and whether the node set or order changed.
    snap: Option<Arc<Snapshot>>,
    dirty: HashSet<String>,
    order: Option<Vec<String>>,
}

fn uid(pod: &Pod) -> String {
    pod.metadata.uid.clone().unwrap_or_else(|| {
        format!("{}/{}", pod.metadata.namespace.as_deref().unwrap_or(""), pod.metadata.name.as_deref().unwrap_or(""))
    })
}

fn node_of(pod: &Pod) -> &str {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or("")
}

impl Cache {
    /// An empty cache.
    pub fn new() -> Cache {
        Cache::default()
    }

    fn touch(&mut self, node: &str) {
        self.dirty.insert(node.to_string());
    }

    /// A Node was added or updated.
    pub fn add_or_update_node(&mut self, node: Arc<Node>) {
        let Some(name) = node.metadata.name.clone() else { return };
        let zone = zone_key(&node);
        match self.zone_of.get(&name) {
            Some(old) if *old == zone => {}
            Some(old) => {
                let old = old.clone();
                self.tree.remove(&old, &name);
                self.tree.add(&zone, &name);
                self.order = None;
            }
            None => {
                self.tree.add(&zone, &name);
                self.order = None;
            }
        }
        self.zone_of.insert(name.clone(), zone);
        self.nodes.entry(name.clone()).or_default().set_node(node);
        self.touch(&name);
    }

    /// A Node was deleted; its info stays while pods still name it.
    pub fn remove_node(&mut self, name: &str) {
        if let Some(zone) = self.zone_of.remove(name) {
            self.tree.remove(&zone, name);
            self.order = None;
        }
        if let Some(info) = self.nodes.get_mut(name) {
            if info.pods.is_empty() {
                self.nodes.remove(name);
            } else {
                info.node = None;
            }
        }
        self.touch(name);
    }

    fn add_to_node(&mut self, pi: Arc<PodInfo>, node: &str) {
        self.nodes.entry(node.to_string()).or_default().add_pod(pi);
        self.touch(node);
    }

    fn remove_from_node(&mut self, pod: &Pod, node: &str) {
        if let Some(info) = self.nodes.get_mut(node) {
            info.remove_pod(pod);
            if info.node.is_none() && info.pods.is_empty() {
                self.nodes.remove(node);
            }
        }
        self.touch(node);
    }

    /// Assumes `pod` (with `spec.nodeName` set to the chosen node) on its
    /// node. Err: it is already in the cache.
    pub fn assume_pod(&mut self, pod: Arc<PodInfo>) -> Result<(), String> {
        let key = uid(&pod.pod);
        if self.pods.contains_key(&key) {
            return Err(format!("pod {} is in the cache, so can't be assumed", pod.key()));
        }
        let node = node_of(&pod.pod).to_string();
        self.add_to_node(pod.clone(), &node);
        self.pods.insert(key, PodState { pod, node, assumed: true });
        Ok(())
    }

    /// Forgets an assumed pod (its binding failed).
    pub fn forget_pod(&mut self, pod: &Pod) {
        let key = uid(pod);
        if let Some(st) = self.pods.get(&key) {
            if st.assumed {
                let st = self.pods.remove(&key).unwrap();
                self.remove_from_node(&st.pod.pod, &st.node);
            }
        }
    }

    /// Whether the pod is assumed (not yet confirmed by the informer).
    pub fn is_assumed(&self, pod: &Pod) -> bool {
        self.pods.get(&uid(pod)).is_some_and(|s| s.assumed)
    }

    /// The informer saw an assigned pod (added or updated): confirms an
    /// assumed pod, or moves the pod to its (new) node.
    pub fn add_or_update_pod(&mut self, pod: Arc<Pod>) {
        let node = node_of(&pod).to_string();
        if node.is_empty() {
            return;
        }
        let Ok(pi) = PodInfo::new(pod.clone()) else { return };
        let pi = Arc::new(pi);
        let key = uid(&pod);
        if let Some(old) = self.pods.remove(&key) {
            self.remove_from_node(&old.pod.pod, &old.node);
        }
        self.add_to_node(pi.clone(), &node);
        self.pods.insert(key, PodState { pod: pi, node, assumed: false });
    }

    /// An assigned pod was deleted (or its deletion finished).
    pub fn remove_pod(&mut self, pod: &Pod) {
        if let Some(old) = self.pods.remove(&uid(pod)) {
            self.remove_from_node(&old.pod.pod, &old.node);
        }
    }

    /// How many nodes (with a Node object) and pods the cache holds.
    pub fn counts(&self) -> (usize, usize) {
        (self.zone_of.len(), self.pods.len())
    }

    /// The pod's cached info and node, if known.
    pub fn pod(&self, pod: &Pod) -> Option<(Arc<PodInfo>, String)> {
        self.pods.get(&uid(pod)).map(|s| (s.pod.clone(), s.node.clone()))
    }

    /// The current view: nodes with a Node object in node-tree order.
    /// Incremental: only nodes changed since the last call are copied,
    /// and in place when no earlier snapshot is still held.
    pub fn snapshot(&mut self) -> Arc<Snapshot> {
        let dirty = std::mem::take(&mut self.dirty);
        let info = |c: &Cache, n: &str| c.nodes.get(n).filter(|i| i.node.is_some()).map(|i| Arc::new(i.clone()));
        match (self.snap.is_some(), self.order.is_some()) {
            (true, true) => {
                if !dirty.is_empty() {
                    let changed: Vec<Arc<NodeInfo>> = dirty.iter().filter_map(|n| info(self, n)).collect();
                    let snap = Arc::make_mut(self.snap.as_mut().unwrap());
                    for i in changed {
                        snap.replace_node(i);
                    }
                }
            }
            _ => {
                let order = self.order.get_or_insert_with(|| self.tree.list()).clone();
                let nodes = order.iter().filter_map(|n| info(self, n)).collect();
                self.snap = Some(Arc::new(Snapshot::from_arcs(nodes)));
            }
        }
        self.snap.clone().unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::{node, pod};
    use serde_json::json;

    fn zoned(name: &str, zone: &str) -> Arc<Node> {
        Arc::new(node(name, json!({LABEL_ZONE: zone, LABEL_REGION: "r"}), json!({})))
    }

    fn bound(name: &str, node: &str, cpu: &str) -> Arc<Pod> {
        Arc::new(pod(
            name,
            json!({"nodeName": node, "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]}),
        ))
    }

    fn names(s: &Snapshot) -> Vec<&str> {
        s.nodes.iter().map(|n| n.node_name()).collect()
    }

    #[test]
    fn zones_are_interleaved_as_upstreams_node_tree() {
        let mut c = Cache::new();
        for (n, z) in [("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b"), ("c1", "c"), ("b2", "b")] {
            c.add_or_update_node(zoned(n, z));
        }
        assert_eq!(names(&c.snapshot()), vec!["a1", "b1", "c1", "a2", "b2", "a3"]);
        c.remove_node("b1");
        assert_eq!(names(&c.snapshot()), vec!["a1", "b2", "c1", "a2", "a3"]);
        // A node moving zone moves in the order.
        c.add_or_update_node(zoned("a3", "c"));
        assert_eq!(names(&c.snapshot()), vec!["a1", "b2", "c1", "a2", "a3"]);
        c.add_or_update_node(zoned("a1", "c"));
        assert_eq!(names(&c.snapshot()), vec!["a2", "b2", "c1", "a3", "a1"]);
    }

    #[test]
    fn assumed_pods_count_until_confirmed_or_forgotten() {
        let mut c = Cache::new();
        c.add_or_update_node(zoned("n1", "a"));
        let p = bound("p", "n1", "500m");
        c.assume_pod(Arc::new(PodInfo::new(p.clone()).unwrap())).unwrap();
        assert!(c.is_assumed(&p));
        assert_eq!(c.snapshot().get("n1").unwrap().requested.milli_cpu, 500);
        assert!(c.assume_pod(Arc::new(PodInfo::new(p.clone()).unwrap())).is_err());
        // The informer confirms the binding.
        c.add_or_update_pod(p.clone());
        assert!(!c.is_assumed(&p));
        assert_eq!(c.snapshot().get("n1").unwrap().requested.milli_cpu, 500);
        let q = bound("q", "n1", "1");
        c.assume_pod(Arc::new(PodInfo::new(q.clone()).unwrap())).unwrap();
        assert_eq!(c.snapshot().get("n1").unwrap().requested.milli_cpu, 1500);
        c.forget_pod(&q);
        assert_eq!(c.snapshot().get("n1").unwrap().requested.milli_cpu, 500);
        c.remove_pod(&p);
        assert_eq!(c.snapshot().get("n1").unwrap().requested.milli_cpu, 0);
        assert_eq!(c.counts(), (1, 0));
    }

    #[test]
    fn snapshots_share_unchanged_nodes_and_skip_nodes_without_objects() {
        let mut c = Cache::new();
        c.add_or_update_node(zoned("n1", "a"));
        c.add_or_update_node(zoned("n2", "a"));
        let s1 = c.snapshot();
        c.add_or_update_pod(bound("p", "n2", "1"));
        // A pod on a node the cache has no Node for yet.
        c.add_or_update_pod(bound("q", "ghost", "1"));
        let s2 = c.snapshot();
        assert!(Arc::ptr_eq(&s1.nodes[0], &s2.nodes[0]));
        assert!(!Arc::ptr_eq(&s1.nodes[1], &s2.nodes[1]));
        assert_eq!(names(&s2), vec!["n1", "n2"]);
        drop((s1, s2));
        c.add_or_update_node(zoned("ghost", "b"));
        let s3 = c.snapshot();
        assert_eq!(s3.get("ghost").unwrap().requested.milli_cpu, 1000);
        c.remove_node("n2");
        assert_eq!(names(&c.snapshot()), vec!["n1", "ghost"]);
    }

    #[test]
    fn incremental_snapshots_equal_full_rebuilds() {
        let mut c = Cache::new();
        for i in 0..20 {
            c.add_or_update_node(zoned(&format!("n{i}"), ["a", "b"][i % 2]));
        }
        let _ = c.snapshot();
        let mut full = Cache::new();
        for i in 0..20 {
            full.add_or_update_node(zoned(&format!("n{i}"), ["a", "b"][i % 2]));
        }
        for j in 0..50 {
            let p = bound(&format!("p{j}"), &format!("n{}", (j * 7) % 20), "100m");
            c.assume_pod(Arc::new(PodInfo::new(p.clone()).unwrap())).unwrap();
            full.add_or_update_pod(p);
            if j % 5 == 0 {
                let _held = c.snapshot();
            }
        }
        let (inc, fresh) = (c.snapshot(), full.snapshot());
        assert_eq!(names(&inc), names(&fresh));
        for (a, b) in inc.nodes.iter().zip(&fresh.nodes) {
            assert_eq!(
                (a.requested.milli_cpu, a.pods.len()),
                (b.requested.milli_cpu, b.pods.len()),
                "{}",
                a.node_name()
            );
        }
    }
}
