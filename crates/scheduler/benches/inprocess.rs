//! In-process scheduling throughput (no API): the scheduling cycle
//! (snapshot → PreFilter/Filter → Score → select → assume) for basic pods
//! on many nodes, with the default profile, sequential (1 worker) and
//! parallel; checks the two decide exactly alike for the same seed.
//!
//! Run: `cargo bench -p rkube-scheduler --bench inprocess -- [nodes] [pods]`
//! (defaults 5000 nodes, 10000 pods; upstream scheduler_perf's
//! SchedulingBasic shape: nodes with 4 CPU... here 32 CPU / 64 GiB / 110 pods).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::{Node, Pod};
use rkube_scheduler::algorithm::{schedule_pod, Cursor};
use rkube_scheduler::cache::Cache;
use rkube_scheduler::config::Configuration;
use rkube_scheduler::framework::runtime::Framework;
use rkube_scheduler::framework::{CycleState, Handle, PodInfo};
use serde_json::json;

fn node(i: usize) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": format!("node-{i}"), "labels": {
            "kubernetes.io/hostname": format!("node-{i}"),
            "topology.kubernetes.io/zone": format!("zone-{}", i % 3)
        }},
        "status": {"allocatable": {"cpu": "32", "memory": "64Gi", "pods": "110"}}
    }))
    .unwrap()
}

fn pod(i: usize, affinity: bool) -> Pod {
    let mut spec = json!({"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}}}]});
    if affinity {
        spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-0", "zone-1"]}]}
        ]}}});
    }
    serde_json::from_value(json!({"metadata": {"name": format!("pod-{i}"), "namespace": "default", "uid": format!("uid-{i}")}, "spec": spec}))
        .unwrap()
}

/// Schedules `pods` on fresh `nodes`; returns the decisions and pods/s.
fn run(
    nodes: usize,
    pods: usize,
    parallelism: usize,
    min_parallel: Option<usize>,
    affinity: bool,
    seed: u64,
) -> (Vec<String>, f64) {
    let c = Configuration::default();
    let mut fwk = Framework::new(&c.profiles[0], &c, &rkube_scheduler::plugins::registry(), Handle::default()).unwrap();
    fwk.parallelism = parallelism;
    if let Some(m) = min_parallel {
        fwk.min_parallel_nodes = m;
    }
    let mut cache = Cache::new();
    for i in 0..nodes {
        cache.add_or_update_node(Arc::new(node(i)));
    }
    let infos: Vec<PodInfo> = (0..pods).map(|i| PodInfo::new(Arc::new(pod(i, affinity))).unwrap()).collect();
    let mut cursor = Cursor::new(seed);
    let mut decisions = Vec::with_capacity(pods);
    let start = Instant::now();
    for pi in &infos {
        let snapshot = cache.snapshot();
        let mut state = CycleState::default();
        let r = schedule_pod(&fwk, &mut state, pi, &snapshot, &mut cursor).expect("fits");
        let mut assumed = (*pi.pod).clone();
        assumed.spec.as_mut().unwrap().node_name = Some(r.suggested_host.clone());
        cache.assume_pod(Arc::new(PodInfo::new(Arc::new(assumed)).unwrap())).unwrap();
        decisions.push(r.suggested_host);
    }
    let rate = pods as f64 / start.elapsed().as_secs_f64();
    (decisions, rate)
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let nodes = args.first().copied().unwrap_or(5000);
    let pods = args.get(1).copied().unwrap_or(10000);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut results = HashMap::new();
    for (name, affinity) in [("basic", false), ("node-affinity", true)] {
        let (seq, seq_rate) = run(nodes, pods, 1, None, affinity, 42);
        let (def, def_rate) = run(nodes, pods, workers, None, affinity, 42);
        let (par, par_rate) = run(nodes, pods, workers, Some(0), affinity, 42);
        let same = seq == par && seq == def;
        println!(
            "{name}: {nodes} nodes, {pods} pods: sequential {seq_rate:.0} pods/s, default {def_rate:.0} pods/s, always parallel ({workers} workers) {par_rate:.0} pods/s, decisions identical: {same}"
        );
        results.insert(name, same);
    }
    assert!(results.values().all(|s| *s), "parallel and sequential decisions differ");
}
