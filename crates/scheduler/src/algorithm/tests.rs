use std::collections::HashMap;
use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::config::Configuration;
use crate::framework::{Handle, NodeInfo};
use crate::plugins::testing::{node_info, pod_info};

fn default_framework(parallelism: usize) -> Framework {
    let c = Configuration::default();
    let mut f = Framework::new(&c.profiles[0], &c, &crate::plugins::registry(), Handle::default()).unwrap();
    f.parallelism = parallelism;
    // Exercise the pool even on small rounds.
    f.min_parallel_nodes = 0;
    f
}

#[test]
fn adaptive_percentage_of_nodes_to_score() {
    for (pct, n, want) in [
        (0, 50, 50),
        (0, 99, 99),
        (0, 1000, 420),
        (0, 5000, 500),
        (0, 6000, 300),
        (0, 20000, 1000),
        (10, 500, 100),
        (30, 1000, 300),
        (100, 5000, 5000),
    ] {
        assert_eq!(num_feasible_nodes_to_find(pct, n), want, "pct {pct} n {n}");
    }
}

#[test]
fn fit_error_message_matches_upstream_format() {
    let mut d = Diagnosis::default();
    d.node_to_status.statuses.insert(
        "cp".into(),
        Status::unresolvable("node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"),
    );
    d.node_to_status.statuses.insert("w1".into(), Status::unschedulable(["Insufficient cpu"]));
    d.node_to_status.statuses.insert("w2".into(), Status::unschedulable(["Insufficient cpu"]));
    d.post_filter_msg = "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.".into();
    let e = FitError { num_all_nodes: 3, diagnosis: d };
    assert_eq!(
        e.to_string(),
        "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    );
    let d = Diagnosis { pre_filter_msg: "pod affinity terms conflict".into(), ..Default::default() };
    assert_eq!(
        FitError { num_all_nodes: 2, diagnosis: d }.to_string(),
        "0/2 nodes are available: pod affinity terms conflict."
    );
}

#[test]
fn filter_failures_are_reported_per_node() {
    let f = default_framework(1);
    let snap = Snapshot::new(vec![
        node_info(
            "cp",
            json!({}),
            json!({"taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]}),
        ),
        node_info("w1", json!({"disk": "hdd"}), json!({})),
        node_info("w2", json!({"disk": "hdd"}), json!({"unschedulable": true})),
    ]);
    let pod = pod_info("p", json!({"nodeSelector": {"disk": "ssd"}}));
    let err = schedule_pod(&f, &mut CycleState::default(), &pod, &snap, &mut Cursor::new(1)).unwrap_err();
    let ScheduleError::Fit(fe) = err else { panic!("{err}") };
    assert_eq!(
        fe.to_string(),
        "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 1 node(s) were unschedulable."
    );
    assert_eq!(
        fe.diagnosis.unschedulable_plugins,
        BTreeSet::from(["NodeAffinity", "NodeUnschedulable", "TaintToleration"])
    );
    assert!(matches!(
        schedule_pod(&f, &mut CycleState::default(), &pod, &Snapshot::default(), &mut Cursor::new(1)),
        Err(ScheduleError::NoNodes)
    ));
}

#[test]
fn preferences_decide_the_host() {
    let f = default_framework(1);
    let snap = Snapshot::new(vec![
        node_info("a", json!({"zone": "x"}), json!({"taints": [{"key": "soft", "effect": "PreferNoSchedule"}]})),
        node_info("b", json!({"zone": "y"}), json!({})),
        node_info("c", json!({"zone": "x"}), json!({})),
    ]);
    let pod = pod_info(
        "p",
        json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["x"]}]}}
        ]}}}),
    );
    // a: taint 0*3 + affinity 100*2; b: 100*3 + 0; c: 100*3 + 100*2 → c.
    for seed in 0..10 {
        let r = schedule_pod(&f, &mut CycleState::default(), &pod, &snap, &mut Cursor::new(seed)).unwrap();
        assert_eq!(r.suggested_host, "c");
        assert_eq!(r.feasible_nodes, 3);
    }
}

#[test]
fn ties_are_broken_by_the_seed_and_spread_over_nodes() {
    let mut picks = HashMap::new();
    for seed in 0..200 {
        let i = select_host(&[5, 7, 3, 7, 7], &mut Rng::new(seed)).unwrap();
        assert!([1, 3, 4].contains(&i));
        *picks.entry(i).or_insert(0) += 1;
    }
    assert_eq!(picks.len(), 3, "{picks:?}");
    assert_eq!(select_host(&[], &mut Rng::new(1)), None);
    assert_eq!(select_host(&[1, 2, 3], &mut Rng::new(1)), Some(2));
}

/// Many nodes with mixed labels and taints; pods with selectors,
/// preferences and tolerations.
fn cluster(n: usize) -> (Vec<NodeInfo>, Vec<PodInfo>) {
    let mut rng = Rng::new(42);
    let nodes = (0..n)
        .map(|i| {
            let zone = format!("z{}", rng.below(3));
            let spec = match rng.below(10) {
                0 => json!({"taints": [{"key": "hard", "effect": "NoSchedule"}]}),
                1 | 2 => json!({"taints": [{"key": "soft", "effect": "PreferNoSchedule"}]}),
                _ => json!({}),
            };
            node_info(
                &format!("node-{i}"),
                json!({"zone": zone, "disk": if rng.below(2) == 0 { "ssd" } else { "hdd" }}),
                spec,
            )
        })
        .collect();
    let pods = (0..60)
        .map(|i| {
            let spec = match i % 4 {
                0 => json!({}),
                1 => json!({"nodeSelector": {"disk": "ssd"}}),
                2 => json!({"tolerations": [{"key": "hard", "operator": "Exists"}],
                    "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 5, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}}]}}}),
                _ => json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z0"]}]}]}}}}),
            };
            pod_info(&format!("pod-{i}"), spec)
        })
        .collect();
    (nodes, pods)
}

fn decide_all(parallelism: usize, nodes: &[NodeInfo], pods: &[PodInfo], seed: u64) -> Vec<(String, usize)> {
    let f = default_framework(parallelism);
    let mut snap_nodes = nodes.to_vec();
    let mut cursor = Cursor::new(seed);
    let mut out = Vec::new();
    for p in pods {
        let snap = Snapshot::new(snap_nodes.clone());
        let r = schedule_pod(&f, &mut CycleState::default(), p, &snap, &mut cursor).unwrap();
        // Assume the pod there, as the cache does, so later decisions depend on earlier ones.
        let i = snap_nodes.iter().position(|n| n.node_name() == r.suggested_host).unwrap();
        let mut bound = (*p.pod).clone();
        bound.spec.as_mut().unwrap().node_name = Some(r.suggested_host.clone());
        snap_nodes[i].add_pod(Arc::new(PodInfo::new(Arc::new(bound)).unwrap()));
        out.push((r.suggested_host, r.evaluated_nodes));
    }
    out
}

#[test]
fn parallel_decisions_equal_sequential_ones_for_the_same_seed() {
    let (nodes, pods) = cluster(1500);
    let seq = decide_all(1, &nodes, &pods, 7);
    let par = decide_all(4, &nodes, &pods, 7);
    assert_eq!(seq, par);
    // 1500 nodes: adaptive 38 % → 570 feasible nodes are enough, so the walk stops early.
    assert!(seq.iter().any(|(_, evaluated)| *evaluated < 1500));
    // A different seed breaks some ties differently.
    assert_ne!(seq, decide_all(4, &nodes, &pods, 8));
}

#[test]
fn the_walk_rotates_from_where_the_last_one_stopped() {
    let f = default_framework(1);
    let nodes: Vec<NodeInfo> = (0..200).map(|i| node_info(&format!("n{i}"), json!({}), json!({}))).collect();
    let snap = Snapshot::new(nodes);
    let mut cursor = Cursor::new(0);
    let pod = pod_info("p", json!({}));
    // 200 nodes → max(200*48/100, 100) = 100 feasible nodes wanted.
    let (feasible, _) = find_nodes_that_fit(&f, &mut CycleState::default(), &pod, &snap, &mut cursor).unwrap();
    assert_eq!(feasible.len(), 100);
    assert_eq!(feasible[0].node_name(), "n0");
    assert_eq!(cursor.next_start_node_index, 100);
    let (feasible, _) = find_nodes_that_fit(&f, &mut CycleState::default(), &pod, &snap, &mut cursor).unwrap();
    assert_eq!(feasible[0].node_name(), "n100");
    assert_eq!(cursor.next_start_node_index, 0);
}
