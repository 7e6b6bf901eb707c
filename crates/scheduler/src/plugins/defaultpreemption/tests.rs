//! Table tests; cases and expected messages follow upstream's
//! `default_preemption_test.go` (TestPostFilter, TestSelectNodesForPreemption,
//! TestPickOneNodeForPreemption; names kept). Simulations run through real
//! plugins (NodeResourcesFit, InterPodAffinity) behind a small FilterRunner.

#![allow(clippy::type_complexity)] // Case tables are tuples.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use serde_json::{json, Value};

use super::candidates::{self, Candidate};
use super::*;
use crate::framework::{
    CycleState, FilterRunner, Handle, NodeInfo, NodeToStatus, Plugin, PodInfo, PostFilterArgs, Snapshot, StaticLister,
};
use crate::plugins::{interpodaffinity, registry};

/// Runs the given plugins' PreFilter extensions and Filters, in order.
struct Runner(Vec<Arc<dyn Plugin>>);

impl FilterRunner for Runner {
    fn run_pre_filter_add_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        to_add: &Arc<PodInfo>,
        node: &NodeInfo,
    ) -> Status {
        for p in &self.0 {
            let s = p.add_pod(state, pod, to_add, node);
            if !s.is_success() {
                return s;
            }
        }
        Status::success()
    }
    fn run_pre_filter_remove_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        to_remove: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        for p in &self.0 {
            let s = p.remove_pod(state, pod, to_remove, node);
            if !s.is_success() {
                return s;
            }
        }
        Status::success()
    }
    fn run_filter_with_nominated_pods(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        for p in &self.0 {
            if state.skip_filter_plugins.contains(p.name()) {
                continue;
            }
            let s = p.filter(state, pod, node);
            if !s.is_success() {
                return s;
            }
        }
        Status::success()
    }
}

fn runner() -> Runner {
    let fit = registry().into_iter().find(|(n, _)| *n == names::NODE_RESOURCES_FIT).unwrap().1;
    Runner(vec![fit(None, &Handle::default()).unwrap(), interpodaffinity::new(None, &Handle::default()).unwrap()])
}

/// A pod in `default` with `priority`, requesting `cpu` millicores, on `node` ("" = pending).
fn pod(name: &str, node: &str, priority: i32, cpu: i64, extra: Value) -> Pod {
    let mut v = json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"), "labels": {}},
        "spec": {"nodeName": node, "priority": priority,
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": format!("{cpu}m")}}}]},
        "status": {}
    });
    if let Value::Object(m) = extra {
        for (k, x) in m {
            match k.as_str() {
                "labels" => v["metadata"]["labels"] = x,
                "startTime" => v["status"]["startTime"] = x,
                "nominatedNodeName" => v["status"]["nominatedNodeName"] = x,
                other => v["spec"][other] = x,
            }
        }
    }
    serde_json::from_value(v).unwrap()
}

fn node(name: &str, cpu_millis: i64) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": format!("{cpu_millis}m"), "memory": "64Gi", "pods": "110"}}
    }))
    .unwrap()
}

const LOW: i32 = 0;
const MID: i32 = 100;
const HIGH: i32 = 1000;

struct Run {
    result: Option<PostFilterResult>,
    status: Status,
}

/// A cycle as the core runs it: PreFilter, Filter on every node, then PostFilter.
fn post_filter(p: &Pod, pods: &[Pod], nodes: &[Node], pdbs: Vec<PodDisruptionBudget>, absent: Option<Status>) -> Run {
    let snap = Snapshot::from_objects(nodes, pods);
    let pi = PodInfo::new(Arc::new(p.clone())).unwrap();
    let r = runner();
    let mut state = CycleState::default();
    for pl in &r.0 {
        let (_, s) = pl.pre_filter(&mut state, &pi, &snap);
        if s.is_skip() {
            state.skip_filter_plugins.insert(pl.name());
        }
    }
    let mut statuses = NodeToStatus { absent, ..Default::default() };
    for n in &snap.nodes {
        let s = r.run_filter_with_nominated_pods(&state, &pi, n);
        assert!(!s.is_success(), "test setups make every node fail Filter");
        statuses.statuses.insert(n.node_name().to_string(), s);
    }
    let mut h = Handle::default();
    h.listers.pdbs = Arc::new(StaticLister::new(pdbs));
    let pl = DefaultPreemption::with_seed(None, &h, 7).unwrap();
    let args = PostFilterArgs { snapshot: &snap, runner: &r };
    let (result, status) = futures::executor::block_on(pl.post_filter(&args, &state, &pi, &statuses));
    Run { result, status }
}

fn nominated(node: &str) -> Option<PostFilterResult> {
    Some(PostFilterResult { nominated_node_name: node.into(), mode: NominatingMode::Override })
}

#[test]
fn post_filter_table() {
    let never = json!({"preemptionPolicy": "Never"});
    // Each node: 2 cpu, full.
    let nodes = vec![node("node1", 2000), node("node2", 2000)];
    let cases: Vec<(&str, Pod, Vec<Pod>, Vec<Node>, Option<PostFilterResult>, Status)> = vec![
        (
            "pod with preemptionPolicy=Never",
            pod("p", "", HIGH, 1000, never),
            vec![pod("p1", "node1", LOW, 2000, Value::Null), pod("p2", "node2", LOW, 2000, Value::Null)],
            nodes.clone(),
            None,
            Status::new(Code::Unschedulable, "preemption: not eligible due to preemptionPolicy=Never."),
        ),
        (
            "pod can be made schedulable on one node",
            pod("p", "", MID, 1000, Value::Null),
            vec![pod("p1", "node1", LOW, 2000, Value::Null), pod("p2", "node2", HIGH, 2000, Value::Null)],
            nodes.clone(),
            nominated("node1"),
            Status::success(),
        ),
        (
            "no candidate nodes found, no enough resource after removing low priority pods",
            // (A request above allocatable is UnschedulableAndUnresolvable in
            // NodeResourcesFit, so the pod fits the node but not beside the
            // higher-priority pods that stay.)
            pod("p", "", MID, 1500, Value::Null),
            vec![
                pod("p1", "node1", LOW, 1000, Value::Null),
                pod("p1h", "node1", HIGH, 1000, Value::Null),
                pod("p2", "node2", LOW, 1000, Value::Null),
                pod("p2h", "node2", HIGH, 1000, Value::Null),
            ],
            nodes.clone(),
            nominated(""),
            Status::new(Code::Unschedulable, "preemption: 0/2 nodes are available: 2 Insufficient cpu."),
        ),
        (
            "no candidate nodes found with mixed reasons, no lower priority pod and no enough CPU resource",
            pod("p", "", MID, 1500, Value::Null),
            vec![
                pod("p1", "node1", LOW, 1000, Value::Null),
                pod("p1h", "node1", HIGH, 1000, Value::Null),
                pod("p2", "node2", LOW, 1000, Value::Null),
                pod("p2h", "node2", HIGH, 1000, Value::Null),
                pod("p3", "node3", HIGH, 2000, Value::Null),
                pod("p4", "node4", HIGH, 2000, Value::Null),
            ],
            vec![node("node1", 2000), node("node2", 2000), node("node3", 2000), node("node4", 2000)],
            nominated(""),
            Status::new(
                Code::Unschedulable,
                "preemption: 0/4 nodes are available: 2 Insufficient cpu, 2 No preemption victims found for incoming pod.",
            ),
        ),
        (
            "no preemption victims on any node",
            pod("p", "", MID, 1000, Value::Null),
            vec![
                pod("p1", "node1", HIGH, 2000, Value::Null),
                pod("p2", "node2", HIGH, 2000, Value::Null),
                pod("p3", "node3", MID, 2000, Value::Null),
            ],
            vec![node("node1", 2000), node("node2", 2000), node("node3", 2000)],
            nominated(""),
            Status::new(Code::Unschedulable, "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."),
        ),
    ];
    for (name, p, pods, nodes, want_result, want_status) in cases {
        let got = post_filter(&p, &pods, &nodes, vec![], None);
        assert_eq!(got.result, want_result, "{name}");
        assert_eq!(got.status, want_status, "{name}");
    }
}

#[test]
fn unresolvable_nodes_are_not_tried() {
    // Upstream "preemption should respect absent NodeToStatusMap entry meaning
    // UnschedulableAndUnresolvable": a pod that does not fit because of a
    // required affinity (UnschedulableAndUnresolvable) is not helped.
    let aff = json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}]}}});
    let got = post_filter(
        &pod("p", "", HIGH, 100, aff),
        &[pod("p1", "node1", LOW, 100, Value::Null)],
        &[node("node1", 2000)],
        vec![],
        None,
    );
    assert_eq!(got.result, nominated(""));
    assert_eq!(
        got.status,
        Status::new(
            Code::Unschedulable,
            "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
        )
    );
}

#[test]
fn terminating_victim_on_the_nominated_node_blocks_a_new_preemption() {
    let p = pod("p", "", HIGH, 1000, json!({"nominatedNodeName": "node1"}));
    let mut victim = pod("p1", "node1", LOW, 2000, Value::Null);
    victim.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::now()));
    victim.status = Some(
        serde_json::from_value(
            json!({"conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]}),
        )
        .unwrap(),
    );
    let got = post_filter(&p, &[victim.clone()], &[node("node1", 2000)], vec![], None);
    assert_eq!(got.result, None);
    assert_eq!(
        got.status,
        Status::new(Code::Unschedulable, "preemption: not eligible due to a terminating pod on the nominated node.")
    );
    // A terminating pod without the preemption condition does not block.
    victim.status = None;
    let got = post_filter(&p, &[victim], &[node("node1", 2000)], vec![], None);
    assert_eq!(got.result, nominated("node1"));
}

/// Victims on each candidate node, by name.
fn select(p: &Pod, pods: &[Pod], nodes: &[Node], pdbs: Vec<PodDisruptionBudget>) -> Vec<(String, Vec<String>, usize)> {
    let snap = Snapshot::from_objects(nodes, pods);
    let pi = PodInfo::new(Arc::new(p.clone())).unwrap();
    let r = runner();
    let mut state = CycleState::default();
    for pl in &r.0 {
        let (_, s) = pl.pre_filter(&mut state, &pi, &snap);
        if s.is_skip() {
            state.skip_filter_plugins.insert(pl.name());
        }
    }
    let pdbs: Vec<Arc<PodDisruptionBudget>> = pdbs.into_iter().map(Arc::new).collect();
    let (found, _) = candidates::dry_run_preemption(&r, &state, &pi, &snap.nodes, &pdbs, 0, snap.len()).unwrap();
    found
        .into_iter()
        .map(|c| {
            (c.name, c.victims.iter().map(|v| v.pod.metadata.name.clone().unwrap()).collect(), c.num_pdb_violations)
        })
        .collect()
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

#[test]
fn select_nodes_for_preemption_table() {
    let nodes = vec![node("node1", 5000), node("node2", 5000)];
    // "a pod that fits on both nodes when lower priority pods are preempted"
    let got = select(
        &pod("p", "", HIGH, 3000, Value::Null),
        &[pod("p1", "node1", MID, 5000, Value::Null), pod("p2", "node2", MID, 5000, Value::Null)],
        &nodes,
        vec![],
    );
    assert_eq!(got, vec![("node1".into(), s(&["p1"]), 0), ("node2".into(), s(&["p2"]), 0)]);
    // "a pod that would fit on the nodes, but other pods running are higher priority, no preemption would happen"
    let got = select(
        &pod("p", "", LOW, 3000, Value::Null),
        &[pod("p1", "node1", MID, 5000, Value::Null), pod("p2", "node2", MID, 5000, Value::Null)],
        &nodes,
        vec![],
    );
    assert!(got.is_empty());
    // "medium priority pod is preempted, but lower priority one stays as it is small"
    let got = select(
        &pod("p", "", HIGH, 3000, Value::Null),
        &[
            pod("p1.1", "node1", LOW, 1000, Value::Null),
            pod("p1.2", "node1", MID, 3000, Value::Null),
            pod("p2", "node2", HIGH, 5000, Value::Null),
        ],
        &nodes,
        vec![],
    );
    assert_eq!(got, vec![("node1".into(), s(&["p1.2"]), 0)]);
    // "mixed priority pods are preempted": victims highest priority first.
    let got = select(
        &pod("p", "", HIGH, 4000, Value::Null),
        &[
            pod("p1.1", "node1", LOW, 2000, Value::Null),
            pod("p1.2", "node1", MID, 2000, Value::Null),
            pod("p1.3", "node1", LOW - 1, 1000, Value::Null),
        ],
        &[node("node1", 5000)],
        vec![],
    );
    assert_eq!(got, vec![("node1".into(), s(&["p1.2", "p1.1"]), 0)]);
    // An anti-affinity the victims break: removing the matching pod makes room.
    let anti = json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}});
    let got = select(
        &pod("p", "", HIGH, 100, anti),
        &[pod("db", "node1", LOW, 100, json!({"labels": {"app": "db"}})), pod("web", "node1", LOW, 100, Value::Null)],
        &[node("node1", 5000)],
        vec![],
    );
    assert_eq!(got, vec![("node1".into(), s(&["db"]), 0)]);
}

fn pdb(selector: Value, allowed: i32, disrupted: &[&str]) -> PodDisruptionBudget {
    let disrupted: serde_json::Map<String, Value> =
        disrupted.iter().map(|d| (d.to_string(), json!("2026-01-01T00:00:00Z"))).collect();
    serde_json::from_value(json!({
        "metadata": {"name": "pdb", "namespace": "default"},
        "spec": {"selector": selector},
        "status": {"disruptionsAllowed": allowed, "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1,
                   "disruptedPods": disrupted}
    }))
    .unwrap()
}

#[test]
fn pdb_violations_are_counted_and_avoided() {
    let nodes = vec![node("node1", 2000), node("node2", 2000)];
    let pods = vec![
        pod("p1", "node1", LOW, 2000, json!({"labels": {"app": "foo"}})),
        pod("p2", "node2", LOW, 2000, json!({"labels": {"app": "bar"}})),
    ];
    let p = pod("p", "", HIGH, 1000, Value::Null);
    // "pod with PDB violation": node1's victim has no disruption left.
    let got = select(&p, &pods, &nodes, vec![pdb(json!({"matchLabels": {"app": "foo"}}), 0, &[])]);
    assert_eq!(got, vec![("node2".into(), s(&["p2"]), 0), ("node1".into(), s(&["p1"]), 1)]);
    // A pod already in disruptedPods is not counted again.
    let got = select(&p, &pods, &nodes, vec![pdb(json!({"matchLabels": {"app": "foo"}}), 0, &["p1"])]);
    assert_eq!(got[0].2 + got[1].2, 0);
    // An empty selector matches nothing.
    let got = select(&p, &pods, &nodes, vec![pdb(json!({}), 0, &[])]);
    assert_eq!(got[0].2 + got[1].2, 0);
    // PostFilter picks the node without a violation.
    let run = post_filter(&p, &pods, &nodes, vec![pdb(json!({"matchLabels": {"app": "foo"}}), 0, &[])], None);
    assert_eq!(run.result, nominated("node2"));
    // Enough budget: no violation.
    let got = select(&p, &pods, &nodes, vec![pdb(json!({"matchLabels": {"app": "foo"}}), 1, &[])]);
    assert_eq!(got[0].2 + got[1].2, 0);
}

fn cand(name: &str, victims: &[(i32, &str)], pdb: usize) -> Candidate {
    Candidate {
        name: name.into(),
        victims: victims
            .iter()
            .enumerate()
            .map(|(i, (prio, start))| {
                Arc::new(
                    PodInfo::new(Arc::new(pod(&format!("{name}-{i}"), name, *prio, 100, json!({"startTime": start}))))
                        .unwrap(),
                )
            })
            .collect(),
        num_pdb_violations: pdb,
    }
}

#[test]
fn pick_one_node_for_preemption_table() {
    let t0 = "2026-01-01T00:00:00Z";
    let t1 = "2026-01-01T00:00:01Z";
    let t2 = "2026-01-01T00:00:02Z";
    let cases: Vec<(&str, Vec<Candidate>, &str)> = vec![
        ("fewest PDB violations first", vec![cand("node1", &[(LOW, t0)], 1), cand("node2", &[(MID, t0)], 0)], "node2"),
        (
            "node with min highest priority pod is picked",
            vec![cand("node1", &[(MID, t0)], 0), cand("node2", &[(LOW, t0), (LOW, t0)], 0)],
            "node2",
        ),
        (
            "when highest priorities are the same, minimum sum of lower priority pods is picked",
            vec![cand("node1", &[(MID, t0), (LOW, t0)], 0), cand("node2", &[(MID, t0), (LOW - 10, t0)], 0)],
            "node2",
        ),
        (
            "negative priorities: fewer victims is a smaller sum",
            vec![cand("node1", &[(-10, t0), (-10, t0)], 0), cand("node2", &[(-10, t0)], 0)],
            "node2",
        ),
        (
            "when all pods have the same priority, the node with the latest start time is picked",
            vec![cand("node1", &[(MID, t0)], 0), cand("node2", &[(MID, t2)], 0), cand("node3", &[(MID, t1)], 0)],
            "node2",
        ),
        (
            "the earliest start among the highest-priority victims decides",
            vec![cand("node1", &[(MID, t2), (MID, t0)], 0), cand("node2", &[(MID, t1), (MID, t1)], 0)],
            "node2",
        ),
        (
            "full ties go to the first candidate",
            vec![cand("node1", &[(MID, t0)], 0), cand("node2", &[(MID, t0)], 0)],
            "node1",
        ),
    ];
    for (name, cs, want) in cases {
        assert_eq!(candidates::select_candidate(&cs).unwrap().name, want, "{name}");
    }
}

#[test]
fn candidate_count_and_args_follow_upstream() {
    let h = Handle::default();
    let pl = DefaultPreemption::with_seed(None, &h, 1).unwrap();
    assert_eq!(pl.num_candidates(5000), 500);
    assert_eq!(pl.num_candidates(50), 50);
    let pl = DefaultPreemption::with_seed(Some(&json!({"minCandidateNodesAbsolute": 0})), &h, 1).unwrap();
    assert_eq!(pl.num_candidates(50), 5);
    assert_eq!(pl.num_candidates(5), 0);
    let err = DefaultPreemption::with_seed(Some(&json!({"minCandidateNodesPercentage": 101})), &h, 1).err().unwrap();
    assert_eq!(err, "minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]");
    let err = DefaultPreemption::with_seed(Some(&json!({"minCandidateNodesAbsolute": -1})), &h, 1).err().unwrap();
    assert_eq!(err, "minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)");
    let err = DefaultPreemption::with_seed(
        Some(&json!({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0})),
        &h,
        1,
    )
    .err()
    .unwrap();
    assert!(err.contains("cannot be zero at the same time as minCandidateNodesAbsolute"), "{err}");
    // The offset generator is seedable: same seed, same offsets.
    let a = DefaultPreemption::with_seed(None, &h, 42).unwrap();
    let b = DefaultPreemption::with_seed(None, &h, 42).unwrap();
    let xs: Vec<usize> = (0..8).map(|_| a.random_below(1000)).collect();
    let ys: Vec<usize> = (0..8).map(|_| b.random_below(1000)).collect();
    assert_eq!(xs, ys);
    assert!(xs.iter().any(|x| *x != xs[0]));
}

#[test]
fn disruption_target_condition_wording() {
    let c = prepare::disruption_condition(&pod("p", "", HIGH, 1, Value::Null));
    assert_eq!(
        c,
        json!({"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
               "message": "default-scheduler: preempting to accommodate a higher priority pod"})
    );
    let c = prepare::disruption_condition(&pod("p", "", HIGH, 1, json!({"schedulerName": "my-scheduler"})));
    assert_eq!(c["message"], "my-scheduler: preempting to accommodate a higher priority pod");
}

#[test]
fn s3_plugins_are_registered_with_their_extension_points() {
    use crate::framework::ExtensionPoint as E;
    let want: [(&str, &[E]); 3] = [
        (names::INTER_POD_AFFINITY, &[E::PreFilter, E::Filter, E::PreScore, E::Score]),
        (names::POD_TOPOLOGY_SPREAD, &[E::PreFilter, E::Filter, E::PreScore, E::Score]),
        (names::DEFAULT_PREEMPTION, &[E::PostFilter]),
    ];
    for (name, points) in want {
        let factory = registry().into_iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("{name} registered")).1;
        let p = factory(None, &Handle::default()).unwrap();
        assert_eq!(p.name(), name);
        assert_eq!(p.extension_points(), points, "{name}");
    }
}
