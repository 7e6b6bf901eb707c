//! The cluster as a scheduling cycle sees it (upstream
//! `pkg/scheduler/framework/types.go`): per-node aggregates ([`NodeInfo`]),
//! pods with their parsed affinity ([`PodInfo`]), and the immutable
//! [`Snapshot`] a cycle runs against.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, Node, Pod, PodAffinityTerm, WeightedPodAffinityTerm};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use rkube_apimachinery::quantity;
use rkube_apimachinery::selector::labels::LabelSelector;

/// Default CPU request (millicores) assumed for scoring a container that
/// requests none (upstream `DefaultMilliCPURequest`).
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// Default memory request (bytes) assumed for scoring a container that
/// requests none (upstream `DefaultMemoryRequest`, 200 MiB).
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// An amount of each resource (upstream `framework.Resource`): CPU in
/// millicores, memory and ephemeral storage in bytes, pods as a count, and
/// every other resource (extended resources, `hugepages-*`) in whole units
/// by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resource {
    /// `cpu`, in millicores.
    pub milli_cpu: i64,
    /// `memory`, in bytes.
    pub memory: i64,
    /// `ephemeral-storage`, in bytes.
    pub ephemeral_storage: i64,
    /// `pods`: how many pods a node may run (allocatable only).
    pub allowed_pod_number: i64,
    /// Every other resource by name, in whole units.
    pub scalar: BTreeMap<String, i64>,
}

fn whole(q: &Quantity) -> i64 {
    quantity::value(&q.0).map_or(0, |v| v.clamp(i64::MIN as i128, i64::MAX as i128) as i64)
}

fn milli(q: &Quantity) -> i64 {
    quantity::milli_value(&q.0).map_or(0, |v| v.clamp(i64::MIN as i128, i64::MAX as i128) as i64)
}

impl Resource {
    /// The amounts of a `ResourceList` (requests, allocatable, overhead).
    pub fn from_list(list: &BTreeMap<String, Quantity>) -> Resource {
        let mut r = Resource::default();
        for (name, q) in list {
            r.add_named(name, q);
        }
        r
    }

    fn add_named(&mut self, name: &str, q: &Quantity) {
        match name {
            "cpu" => self.milli_cpu += milli(q),
            "memory" => self.memory += whole(q),
            "ephemeral-storage" => self.ephemeral_storage += whole(q),
            "pods" => self.allowed_pod_number += whole(q),
            other => *self.scalar.entry(other.to_string()).or_default() += whole(q),
        }
    }

    /// Adds `other` to `self`, resource by resource.
    pub fn add(&mut self, other: &Resource) {
        self.milli_cpu += other.milli_cpu;
        self.memory += other.memory;
        self.ephemeral_storage += other.ephemeral_storage;
        self.allowed_pod_number += other.allowed_pod_number;
        for (k, v) in &other.scalar {
            *self.scalar.entry(k.clone()).or_default() += v;
        }
    }

    /// Subtracts `other` from `self`, resource by resource.
    pub fn sub(&mut self, other: &Resource) {
        self.milli_cpu -= other.milli_cpu;
        self.memory -= other.memory;
        self.ephemeral_storage -= other.ephemeral_storage;
        self.allowed_pod_number -= other.allowed_pod_number;
        for (k, v) in &other.scalar {
            *self.scalar.entry(k.clone()).or_default() -= v;
        }
    }

    /// Raises each resource of `self` to at least `other`'s amount.
    pub fn set_max(&mut self, other: &Resource) {
        self.milli_cpu = self.milli_cpu.max(other.milli_cpu);
        self.memory = self.memory.max(other.memory);
        self.ephemeral_storage = self.ephemeral_storage.max(other.ephemeral_storage);
        self.allowed_pod_number = self.allowed_pod_number.max(other.allowed_pod_number);
        for (k, v) in &other.scalar {
            let e = self.scalar.entry(k.clone()).or_default();
            *e = (*e).max(*v);
        }
    }

    /// The amount of the resource called `name` (`cpu` in millicores).
    pub fn get(&self, name: &str) -> i64 {
        match name {
            "cpu" => self.milli_cpu,
            "memory" => self.memory,
            "ephemeral-storage" => self.ephemeral_storage,
            "pods" => self.allowed_pod_number,
            other => self.scalar.get(other).copied().unwrap_or(0),
        }
    }
}

/// What a container requests, with or without upstream's non-zero
/// defaults for CPU and memory when they are not set at all.
fn container_requests(c: &Container, non_zero: bool) -> Resource {
    let empty = BTreeMap::new();
    let requests = c.resources.as_ref().and_then(|r| r.requests.as_ref()).unwrap_or(&empty);
    let mut r = Resource::from_list(requests);
    if non_zero {
        r = Resource { milli_cpu: r.milli_cpu, memory: r.memory, ..Default::default() };
        if !requests.contains_key("cpu") {
            r.milli_cpu = DEFAULT_MILLI_CPU_REQUEST;
        }
        if !requests.contains_key("memory") {
            r.memory = DEFAULT_MEMORY_REQUEST;
        }
    }
    r
}

/// A pod's effective requests (upstream `resource.PodRequests`): the sum
/// of its containers and restartable init (sidecar) containers, raised to
/// what any init container needs while the sidecars started before it
/// run, plus `spec.overhead`. With `non_zero`, CPU and memory that a
/// container leaves unset count as 100m and 200 MiB and only CPU and
/// memory are kept (upstream's `NonMissingContainerRequests`, used for
/// scoring and `NonZeroRequested`); overhead is added either way.
pub fn pod_requests(pod: &Pod, non_zero: bool) -> Resource {
    let Some(spec) = pod.spec.as_ref() else { return Resource::default() };
    let mut reqs = Resource::default();
    for c in &spec.containers {
        reqs.add(&container_requests(c, non_zero));
    }
    let mut restartable = Resource::default();
    let mut init_max = Resource::default();
    for c in spec.init_containers.iter().flatten() {
        let mut this = container_requests(c, non_zero);
        if c.restart_policy.as_deref() == Some("Always") {
            reqs.add(&this);
            restartable.add(&this);
            this = restartable.clone();
        } else {
            this.add(&restartable);
        }
        init_max.set_max(&this);
    }
    reqs.set_max(&init_max);
    if let Some(overhead) = spec.overhead.as_ref() {
        let o = Resource::from_list(overhead);
        if non_zero {
            reqs.milli_cpu += o.milli_cpu;
            reqs.memory += o.memory;
        } else {
            reqs.add(&o);
        }
    }
    reqs
}

/// A parsed pod (anti-)affinity term (upstream `framework.AffinityTerm`).
#[derive(Clone, Debug)]
pub struct AffinityTerm {
    /// The namespaces named, or the pod's own when neither names nor a
    /// namespace selector are given.
    pub namespaces: BTreeSet<String>,
    /// Which pods the term selects (`labelSelector`; absent = nothing).
    pub selector: LabelSelector,
    /// The node label whose values are the topology domains.
    pub topology_key: String,
    /// Which namespaces' pods also count (absent = none, `{}` = all).
    pub namespace_selector: LabelSelector,
}

impl AffinityTerm {
    /// Parses `term` of a pod in namespace `pod_namespace`.
    pub fn parse(term: &PodAffinityTerm, pod_namespace: &str) -> Result<AffinityTerm, String> {
        let selector = match &term.label_selector {
            Some(s) => LabelSelector::from_label_selector_json(&serde_json::to_value(s).map_err(|e| e.to_string())?)?,
            None => LabelSelector::nothing(),
        };
        let namespace_selector = match &term.namespace_selector {
            Some(s) => LabelSelector::from_label_selector_json(&serde_json::to_value(s).map_err(|e| e.to_string())?)?,
            None => LabelSelector::nothing(),
        };
        let mut namespaces: BTreeSet<String> = term.namespaces.iter().flatten().cloned().collect();
        if namespaces.is_empty() && term.namespace_selector.is_none() {
            namespaces.insert(pod_namespace.to_string());
        }
        Ok(AffinityTerm { namespaces, selector, topology_key: term.topology_key.clone(), namespace_selector })
    }

    /// Whether `pod` (whose namespace has labels `namespace_labels`) is
    /// selected by this term (upstream `AffinityTerm.Matches`).
    pub fn matches(&self, pod: &Pod, namespace_labels: &BTreeMap<String, String>) -> bool {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("");
        let empty = BTreeMap::new();
        let labels = pod.metadata.labels.as_ref().unwrap_or(&empty);
        (self.namespaces.contains(ns) || self.namespace_selector.matches(namespace_labels))
            && self.selector.matches(labels)
    }
}

/// A preferred term with its weight (1–100).
#[derive(Clone, Debug)]
pub struct WeightedAffinityTerm {
    /// The term.
    pub term: AffinityTerm,
    /// Its weight.
    pub weight: i32,
}

/// A pod with what the plugins compute from it once (upstream
/// `framework.PodInfo`): effective requests and parsed affinity terms.
#[derive(Clone, Debug)]
pub struct PodInfo {
    /// The pod as the informer last saw it.
    pub pod: Arc<Pod>,
    /// [`pod_requests`] without defaults.
    pub requests: Resource,
    /// [`pod_requests`] with the non-zero CPU/memory defaults.
    pub non_zero_requests: Resource,
    /// `spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution`.
    pub required_affinity_terms: Vec<AffinityTerm>,
    /// `spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution`.
    pub required_anti_affinity_terms: Vec<AffinityTerm>,
    /// `spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution`.
    pub preferred_affinity_terms: Vec<WeightedAffinityTerm>,
    /// `spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution`.
    pub preferred_anti_affinity_terms: Vec<WeightedAffinityTerm>,
}

fn parse_terms(terms: Option<&Vec<PodAffinityTerm>>, ns: &str) -> Result<Vec<AffinityTerm>, String> {
    terms.into_iter().flatten().map(|t| AffinityTerm::parse(t, ns)).collect()
}

fn parse_weighted(terms: Option<&Vec<WeightedPodAffinityTerm>>, ns: &str) -> Result<Vec<WeightedAffinityTerm>, String> {
    terms
        .into_iter()
        .flatten()
        .map(|t| Ok(WeightedAffinityTerm { term: AffinityTerm::parse(&t.pod_affinity_term, ns)?, weight: t.weight }))
        .collect()
}

impl PodInfo {
    /// Computes `pod`'s info. Err: an affinity term's selector does not
    /// parse (upstream schedules such a pod nowhere and reports the parse
    /// error).
    pub fn new(pod: Arc<Pod>) -> Result<PodInfo, String> {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("").to_string();
        let affinity = pod.spec.as_ref().and_then(|s| s.affinity.as_ref());
        let pa = affinity.and_then(|a| a.pod_affinity.as_ref());
        let paa = affinity.and_then(|a| a.pod_anti_affinity.as_ref());
        Ok(PodInfo {
            requests: pod_requests(&pod, false),
            non_zero_requests: pod_requests(&pod, true),
            required_affinity_terms: parse_terms(
                pa.and_then(|a| a.required_during_scheduling_ignored_during_execution.as_ref()),
                &ns,
            )?,
            required_anti_affinity_terms: parse_terms(
                paa.and_then(|a| a.required_during_scheduling_ignored_during_execution.as_ref()),
                &ns,
            )?,
            preferred_affinity_terms: parse_weighted(
                pa.and_then(|a| a.preferred_during_scheduling_ignored_during_execution.as_ref()),
                &ns,
            )?,
            preferred_anti_affinity_terms: parse_weighted(
                paa.and_then(|a| a.preferred_during_scheduling_ignored_during_execution.as_ref()),
                &ns,
            )?,
            pod,
        })
    }

    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!(
            "{}/{}",
            self.pod.metadata.namespace.as_deref().unwrap_or(""),
            self.pod.metadata.name.as_deref().unwrap_or("")
        )
    }

    /// Whether the pod has any pod affinity or anti-affinity term.
    pub fn has_affinity(&self) -> bool {
        !(self.required_affinity_terms.is_empty()
            && self.required_anti_affinity_terms.is_empty()
            && self.preferred_affinity_terms.is_empty()
            && self.preferred_anti_affinity_terms.is_empty())
    }
}

/// A `(protocol, port)` in use on one host IP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProtocolPort {
    /// `TCP`, `UDP` or `SCTP`.
    pub protocol: &'static str,
    /// The host port.
    pub port: i32,
}

/// Host ports in use on a node by IP (upstream `HostPortInfo`); `0.0.0.0`
/// conflicts with every IP.
#[derive(Clone, Debug, Default)]
pub struct HostPortInfo(pub HashMap<String, HashSet<ProtocolPort>>);

/// Upstream's protocol sanitizing: empty means TCP.
fn protocol(p: Option<&str>) -> &'static str {
    match p {
        Some("UDP") => "UDP",
        Some("SCTP") => "SCTP",
        _ => "TCP",
    }
}

fn host_ip(ip: Option<&str>) -> &str {
    match ip {
        None | Some("") => "0.0.0.0",
        Some(ip) => ip,
    }
}

impl HostPortInfo {
    /// Records `port` on `ip` (empty = `0.0.0.0`); port 0 is ignored.
    pub fn add(&mut self, ip: Option<&str>, proto: Option<&str>, port: i32) {
        if port <= 0 {
            return;
        }
        self.0.entry(host_ip(ip).to_string()).or_default().insert(ProtocolPort { protocol: protocol(proto), port });
    }

    /// Forgets `port` on `ip`.
    pub fn remove(&mut self, ip: Option<&str>, proto: Option<&str>, port: i32) {
        if port <= 0 {
            return;
        }
        let ip = host_ip(ip);
        if let Some(set) = self.0.get_mut(ip) {
            set.remove(&ProtocolPort { protocol: protocol(proto), port });
            if set.is_empty() {
                self.0.remove(ip);
            }
        }
    }

    /// Whether `port` on `ip` conflicts with a port in use (upstream
    /// `CheckConflict`: `0.0.0.0` on either side conflicts with any IP).
    pub fn conflicts(&self, ip: Option<&str>, proto: Option<&str>, port: i32) -> bool {
        if port <= 0 {
            return false;
        }
        let pp = ProtocolPort { protocol: protocol(proto), port };
        let ip = host_ip(ip);
        if ip == "0.0.0.0" {
            return self.0.values().any(|s| s.contains(&pp));
        }
        [ip, "0.0.0.0"].iter().any(|i| self.0.get(*i).is_some_and(|s| s.contains(&pp)))
    }
}

/// An image on a node (upstream `ImageStateSummary`): its size and on
/// how many nodes of the snapshot it is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImageStateSummary {
    /// Bytes.
    pub size: i64,
    /// Nodes having it (filled by [`Snapshot::new`]).
    pub num_nodes: usize,
}

/// One node and what is on it (upstream `framework.NodeInfo`). Cloning is
/// cheap (pods are shared), so a preemption simulation clones and edits.
#[derive(Clone, Debug, Default)]
pub struct NodeInfo {
    /// The Node; `None` while only pods bound to it are known.
    pub node: Option<Arc<Node>>,
    /// Pods bound (or assumed) to the node.
    pub pods: Vec<Arc<PodInfo>>,
    /// Those with any pod affinity or anti-affinity term.
    pub pods_with_affinity: Vec<Arc<PodInfo>>,
    /// Those with a required anti-affinity term.
    pub pods_with_required_anti_affinity: Vec<Arc<PodInfo>>,
    /// Host ports in use.
    pub used_ports: HostPortInfo,
    /// Sum of the pods' requests.
    pub requested: Resource,
    /// Sum of the pods' non-zero requests (for scoring).
    pub non_zero_requested: Resource,
    /// `status.allocatable`.
    pub allocatable: Resource,
    /// Images on the node by every name in `status.images[].names`.
    pub image_states: HashMap<String, ImageStateSummary>,
    /// PVCs (`namespace/name`) the node's pods use, with how many pods.
    pub pvc_ref_counts: HashMap<String, i32>,
    /// Bumped on every change (the cache's incremental snapshot uses it).
    pub generation: i64,
}

impl NodeInfo {
    /// Info for `node` with no pods.
    pub fn new(node: Arc<Node>) -> NodeInfo {
        let mut n = NodeInfo::default();
        n.set_node(node);
        n
    }

    /// Replaces the Node (allocatable and images follow it).
    pub fn set_node(&mut self, node: Arc<Node>) {
        let status = node.status.as_ref();
        self.allocatable = status.and_then(|s| s.allocatable.as_ref()).map(Resource::from_list).unwrap_or_default();
        self.image_states.clear();
        for image in status.and_then(|s| s.images.as_ref()).into_iter().flatten() {
            for name in image.names.iter().flatten() {
                self.image_states
                    .insert(name.clone(), ImageStateSummary { size: image.size_bytes.unwrap_or(0), num_nodes: 0 });
            }
        }
        self.node = Some(node);
        self.generation += 1;
    }

    /// The node's name (empty while only its pods are known).
    pub fn node_name(&self) -> &str {
        self.node.as_ref().and_then(|n| n.metadata.name.as_deref()).unwrap_or("")
    }

    fn update_usage(&mut self, pi: &PodInfo, sign: i64) {
        let mut r = pi.requests.clone();
        let mut nz = pi.non_zero_requests.clone();
        if sign < 0 {
            self.requested.sub(&r);
            self.non_zero_requested.sub(&nz);
        } else {
            r.allowed_pod_number = 0;
            nz.allowed_pod_number = 0;
            self.requested.add(&r);
            self.non_zero_requested.add(&nz);
        }
        let spec = pi.pod.spec.as_ref();
        for c in spec.into_iter().flat_map(|s| s.containers.iter().chain(s.init_containers.iter().flatten())) {
            for p in c.ports.iter().flatten() {
                if sign > 0 {
                    self.used_ports.add(p.host_ip.as_deref(), p.protocol.as_deref(), p.host_port.unwrap_or(0));
                } else {
                    self.used_ports.remove(p.host_ip.as_deref(), p.protocol.as_deref(), p.host_port.unwrap_or(0));
                }
            }
        }
        let ns = pi.pod.metadata.namespace.as_deref().unwrap_or("");
        for v in spec.into_iter().flat_map(|s| s.volumes.iter().flatten()) {
            if let Some(claim) = v.persistent_volume_claim.as_ref() {
                let key = format!("{ns}/{}", claim.claim_name);
                let e = self.pvc_ref_counts.entry(key.clone()).or_default();
                *e += sign as i32;
                if *e <= 0 {
                    self.pvc_ref_counts.remove(&key);
                }
            }
        }
        self.generation += 1;
    }

    /// Adds a pod bound or assumed to this node.
    pub fn add_pod(&mut self, pi: Arc<PodInfo>) {
        self.update_usage(&pi, 1);
        if pi.has_affinity() {
            self.pods_with_affinity.push(pi.clone());
        }
        if !pi.required_anti_affinity_terms.is_empty() {
            self.pods_with_required_anti_affinity.push(pi.clone());
        }
        self.pods.push(pi);
    }

    /// Removes the pod with `pod`'s UID; false when it is not here.
    pub fn remove_pod(&mut self, pod: &Pod) -> bool {
        let uid = pod.metadata.uid.as_deref();
        let Some(i) = self.pods.iter().position(|p| p.pod.metadata.uid.as_deref() == uid) else { return false };
        let pi = self.pods.swap_remove(i);
        self.pods_with_affinity.retain(|p| p.pod.metadata.uid.as_deref() != uid);
        self.pods_with_required_anti_affinity.retain(|p| p.pod.metadata.uid.as_deref() != uid);
        self.update_usage(&pi, -1);
        true
    }
}

/// The immutable view one scheduling cycle runs against (upstream
/// `cache.Snapshot`): nodes in the order the filter walks them, and the
/// indexes the affinity plugins use.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// Every node with a Node object, in scheduling order (upstream's
    /// node tree: zones interleaved).
    pub nodes: Vec<Arc<NodeInfo>>,
    index: HashMap<String, usize>,
    /// Nodes with at least one pod that has (anti-)affinity terms.
    pub have_pods_with_affinity: Vec<Arc<NodeInfo>>,
    /// Nodes with at least one pod that has a required anti-affinity term.
    pub have_pods_with_required_anti_affinity: Vec<Arc<NodeInfo>>,
    /// PVCs (`namespace/name`) used by some pod on some node.
    pub used_pvcs: HashSet<String>,
}

impl Snapshot {
    /// A snapshot of `nodes` in this order, with each image's node count
    /// filled in.
    pub fn new(nodes: Vec<NodeInfo>) -> Snapshot {
        Snapshot::from_arcs(nodes.into_iter().map(Arc::new).collect())
    }

    /// [`Snapshot::new`] over shared node infos (the cache's incremental
    /// snapshot): only nodes whose image counts are stale are copied.
    pub fn from_arcs(mut nodes: Vec<Arc<NodeInfo>>) -> Snapshot {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for n in &nodes {
            for name in n.image_states.keys() {
                *counts.entry(name.as_str()).or_default() += 1;
            }
        }
        let counts: HashMap<String, usize> = counts.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        for n in &mut nodes {
            if n.image_states.iter().any(|(name, s)| s.num_nodes != counts[name]) {
                for (name, s) in Arc::make_mut(n).image_states.iter_mut() {
                    s.num_nodes = counts[name];
                }
            }
        }
        let index = nodes.iter().enumerate().map(|(i, n)| (n.node_name().to_string(), i)).collect();
        let have_pods_with_affinity = nodes.iter().filter(|n| !n.pods_with_affinity.is_empty()).cloned().collect();
        let have_pods_with_required_anti_affinity =
            nodes.iter().filter(|n| !n.pods_with_required_anti_affinity.is_empty()).cloned().collect();
        let used_pvcs = nodes.iter().flat_map(|n| n.pvc_ref_counts.keys().cloned()).collect();
        Snapshot { nodes, index, have_pods_with_affinity, have_pods_with_required_anti_affinity, used_pvcs }
    }

    /// Replaces the node with `info`'s name (the cache's incremental
    /// update after a pod was assumed or a node changed). Cheap when the
    /// node's images, PVCs and affinity-pod status stay as they were;
    /// otherwise the derived indexes are rebuilt. A node not in the
    /// snapshot is ignored.
    pub fn replace_node(&mut self, mut info: Arc<NodeInfo>) {
        let Some(&i) = self.index.get(info.node_name()) else { return };
        let old = &self.nodes[i];
        let same_keys = |a: &NodeInfo, b: &NodeInfo| {
            a.image_states.len() == b.image_states.len()
                && a.image_states.keys().all(|k| b.image_states.contains_key(k))
                && a.pvc_ref_counts.len() == b.pvc_ref_counts.len()
                && a.pvc_ref_counts.keys().all(|k| b.pvc_ref_counts.contains_key(k))
                && a.pods_with_affinity.is_empty() == b.pods_with_affinity.is_empty()
                && a.pods_with_required_anti_affinity.is_empty() == b.pods_with_required_anti_affinity.is_empty()
        };
        if !same_keys(old, &info) {
            let mut nodes = std::mem::take(&mut self.nodes);
            nodes[i] = info;
            *self = Snapshot::from_arcs(nodes);
            return;
        }
        if info.image_states.iter().any(|(k, s)| s.num_nodes != old.image_states[k].num_nodes) {
            let counts: Vec<(String, usize)> = old.image_states.iter().map(|(k, s)| (k.clone(), s.num_nodes)).collect();
            let m = Arc::make_mut(&mut info);
            for (k, n) in counts {
                if let Some(s) = m.image_states.get_mut(&k) {
                    s.num_nodes = n;
                }
            }
        }
        let name = info.node_name().to_string();
        for list in [&mut self.have_pods_with_affinity, &mut self.have_pods_with_required_anti_affinity] {
            if let Some(slot) = list.iter_mut().find(|n| n.node_name() == name) {
                *slot = info.clone();
            }
        }
        self.nodes[i] = info;
    }

    /// A snapshot built from Nodes and the pods bound to them (pods whose
    /// `spec.nodeName` names no node are left out) — upstream's
    /// `cache.NewSnapshot`, for tests and benches.
    pub fn from_objects(nodes: &[Node], pods: &[Pod]) -> Snapshot {
        let mut infos: Vec<NodeInfo> = nodes.iter().map(|n| NodeInfo::new(Arc::new(n.clone()))).collect();
        let index: HashMap<String, usize> =
            infos.iter().enumerate().map(|(i, n)| (n.node_name().to_string(), i)).collect();
        for p in pods {
            let Some(node) = p.spec.as_ref().and_then(|s| s.node_name.as_deref()) else { continue };
            let Some(&i) = index.get(node) else { continue };
            if let Ok(pi) = PodInfo::new(Arc::new(p.clone())) {
                infos[i].add_pod(Arc::new(pi));
            }
        }
        Snapshot::new(infos)
    }

    /// The node called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<NodeInfo>> {
        self.index.get(name).map(|&i| &self.nodes[i])
    }

    /// How many nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether there are no nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(spec: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}, "spec": spec}))
            .unwrap()
    }

    #[test]
    fn effective_requests_count_sidecars_and_the_largest_init_container() {
        // Upstream's PodRequests example: app 1 CPU, sidecar 1 CPU started
        // before an init container of 3 CPU → max(1+1, 1+3) = 4; overhead adds.
        let p = pod(json!({
            "containers": [{"name": "app", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
            "initContainers": [
                {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
                {"name": "init", "resources": {"requests": {"cpu": "3", "memory": "512Mi"}}}
            ],
            "overhead": {"cpu": "250m"}
        }));
        let r = pod_requests(&p, false);
        assert_eq!(r.milli_cpu, 4250);
        assert_eq!(r.memory, 1 << 30);
        let nz = pod_requests(&p, true);
        // The sidecar sets no memory: 200 MiB is assumed for it while it runs.
        assert_eq!(nz.memory, (1 << 30) + DEFAULT_MEMORY_REQUEST);
    }

    #[test]
    fn non_zero_requests_default_only_what_is_unset() {
        let p = pod(json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": "0"}}}]}));
        let nz = pod_requests(&p, true);
        assert_eq!((nz.milli_cpu, nz.memory), (0, DEFAULT_MEMORY_REQUEST));
    }

    #[test]
    fn host_ports_on_all_addresses_conflict_with_any_address() {
        let mut h = HostPortInfo::default();
        h.add(Some("127.0.0.1"), None, 80);
        assert!(h.conflicts(None, Some("TCP"), 80));
        assert!(!h.conflicts(Some("127.0.0.2"), None, 80));
        assert!(!h.conflicts(Some("127.0.0.1"), Some("UDP"), 80));
        h.add(None, Some("UDP"), 53);
        assert!(h.conflicts(Some("10.0.0.1"), Some("UDP"), 53));
    }
}
