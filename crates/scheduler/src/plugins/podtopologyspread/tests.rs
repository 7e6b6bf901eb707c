//! Table tests; cases and expected values follow upstream's
//! `podtopologyspread/filtering_test.go` and `scoring_test.go` (names kept).

#![allow(clippy::type_complexity)] // Case tables are tuples.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::{json, Value};

use super::*;
use crate::framework::{Code, CycleState, NodeScore, PodInfo, Snapshot};

const HOST: &str = "kubernetes.io/hostname";

/// A pod in `default` labelled `labels`, on `node`, with `constraints` and extra `spec` fields.
fn pod_with(name: &str, node: &str, labels: &[&str], constraints: Value, extra: Value) -> Pod {
    let labels: serde_json::Map<String, Value> = labels.iter().map(|l| (l.to_string(), json!(""))).collect();
    let mut spec = json!({"nodeName": node, "containers": [], "topologySpreadConstraints": constraints});
    if let Value::Object(m) = extra {
        for (k, v) in m {
            spec[k] = v;
        }
    }
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"), "labels": labels},
        "spec": spec
    }))
    .unwrap()
}

fn existing(name: &str, node: &str, labels: &[&str]) -> Pod {
    pod_with(name, node, labels, Value::Null, Value::Null)
}

fn constraint(skew: i32, key: &str, when: &str, exists: &str) -> Value {
    json!({"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when,
           "labelSelector": {"matchExpressions": [{"key": exists, "operator": "Exists"}]}})
}

fn node(name: &str, labels: &[(&str, &str)]) -> Node {
    let labels: serde_json::Map<String, Value> = labels.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap()
}

fn zone_node(name: &str, zone: &str) -> Node {
    node(name, &[("zone", zone), (HOST, name)])
}

fn plugin() -> PodTopologySpread {
    PodTopologySpread::with_selector_source(None, None).unwrap()
}

fn run_filter(pl: &PodTopologySpread, p: &Pod, pods: &[Pod], nodes: &[Node]) -> (Status, Vec<Status>) {
    let snap = Snapshot::from_objects(nodes, pods);
    let pi = PodInfo::new(Arc::new(p.clone())).unwrap();
    let mut state = CycleState::default();
    let (_, st) = pl.pre_filter(&mut state, &pi, &snap);
    let per_node =
        if st.is_success() { snap.nodes.iter().map(|n| pl.filter(&state, &pi, n)).collect() } else { vec![] };
    (st, per_node)
}

fn fits(v: &[bool]) -> Vec<Status> {
    v.iter()
        .map(
            |ok| {
                if *ok {
                    Status::success()
                } else {
                    Status::new(Code::Unschedulable, ERR_REASON_CONSTRAINTS_NOT_MATCH)
                }
            },
        )
        .collect()
}

#[test]
fn single_constraint_filter_table() {
    let four = || {
        vec![
            zone_node("node-a", "zone1"),
            zone_node("node-b", "zone1"),
            zone_node("node-x", "zone2"),
            zone_node("node-y", "zone2"),
        ]
    };
    let zone1 = |skew| json!([constraint(skew, "zone", "DoNotSchedule", "foo")]);
    let host1 = |skew| json!([constraint(skew, HOST, "DoNotSchedule", "foo")]);
    let missing = Status::new(Code::UnschedulableAndUnresolvable, ERR_REASON_NODE_LABEL_NOT_MATCH);
    let cases: Vec<(&str, Pod, Vec<Pod>, Vec<Node>, Vec<Status>)> = vec![
        ("no existing pods", pod_with("p", "", &["foo"], zone1(1), Value::Null), vec![], four(), fits(&[true; 4])),
        (
            "no existing pods, incoming pod doesn't match itself",
            pod_with("p", "", &["bar"], zone1(1), Value::Null),
            vec![],
            four(),
            fits(&[true; 4]),
        ),
        (
            "existing pods in a different namespace do not count",
            pod_with("p", "", &["foo"], zone1(1), Value::Null),
            vec![
                {
                    let mut e = existing("p-a1", "node-a", &["foo"]);
                    e.metadata.namespace = Some("ns1".into());
                    e
                },
                existing("p-b1", "node-b", &["foo"]),
                existing("p-x1", "node-x", &["foo"]),
                existing("p-y1", "node-y", &["foo"]),
                existing("p-y2", "node-y", &["foo"]),
            ],
            four(),
            fits(&[true, true, false, false]),
        ),
        (
            "pods spread across zones as 3/3, all nodes fit",
            pod_with("p", "", &["foo"], zone1(1), Value::Null),
            vec![
                existing("p-a1", "node-a", &["foo"]),
                existing("p-a2", "node-a", &["foo"]),
                existing("p-b1", "node-b", &["foo"]),
                existing("p-y1", "node-y", &["foo"]),
                existing("p-y2", "node-y", &["foo"]),
                existing("p-y3", "node-y", &["foo"]),
            ],
            four(),
            fits(&[true; 4]),
        ),
        (
            "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
            pod_with("p", "", &["foo"], zone1(1), Value::Null),
            vec![
                existing("p-a1", "node-a", &["foo"]),
                existing("p-b1", "node-b", &["foo"]),
                existing("p-x1", "node-x", &["foo"]),
                existing("p-y1", "node-y", &["foo"]),
            ],
            vec![
                zone_node("node-a", "zone1"),
                node("node-b", &[("zon", "zone1"), (HOST, "node-b")]),
                zone_node("node-x", "zone2"),
                zone_node("node-y", "zone2"),
            ],
            vec![Status::success(), missing.clone(), fits(&[false])[0].clone(), fits(&[false])[0].clone()],
        ),
        (
            "pod cannot be scheduled as all nodes don't have label 'rack'",
            pod_with("p", "", &["foo"], json!([constraint(1, "rack", "DoNotSchedule", "foo")]), Value::Null),
            vec![],
            vec![zone_node("node-a", "zone1"), zone_node("node-x", "zone2")],
            vec![missing.clone(), missing.clone()],
        ),
        (
            "pods spread across nodes as 2/1/0/3, only node-x fits",
            pod_with("p", "", &["foo"], host1(1), Value::Null),
            vec![
                existing("p-a1", "node-a", &["foo"]),
                existing("p-a2", "node-a", &["foo"]),
                existing("p-b1", "node-b", &["foo"]),
                existing("p-y1", "node-y", &["foo"]),
                existing("p-y2", "node-y", &["foo"]),
                existing("p-y3", "node-y", &["foo"]),
            ],
            four(),
            fits(&[false, false, true, false]),
        ),
        (
            "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
            pod_with("p", "", &["foo"], host1(2), Value::Null),
            vec![
                existing("p-a1", "node-a", &["foo"]),
                existing("p-a2", "node-a", &["foo"]),
                existing("p-b1", "node-b", &["foo"]),
                existing("p-y1", "node-y", &["foo"]),
                existing("p-y2", "node-y", &["foo"]),
                existing("p-y3", "node-y", &["foo"]),
            ],
            four(),
            fits(&[false, true, true, false]),
        ),
        (
            // 2 domains < minDomains 3: the global minimum counts as 0.
            "pods spread across zone as 2/1, minDomains is 3, no node fits",
            pod_with(
                "p",
                "",
                &["foo"],
                json!([{
                "maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "minDomains": 3,
                "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}}]),
                Value::Null,
            ),
            vec![
                existing("p-a1", "node-a", &["foo"]),
                existing("p-b1", "node-b", &["foo"]),
                existing("p-x1", "node-x", &["foo"]),
            ],
            four(),
            fits(&[false, false, false, false]),
        ),
        (
            "pods spread across zone as 2/1, minDomains is 2, zone2 fits",
            pod_with(
                "p",
                "",
                &["foo"],
                json!([{
                "maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "minDomains": 2,
                "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}}]),
                Value::Null,
            ),
            vec![
                existing("p-a1", "node-a", &["foo"]),
                existing("p-b1", "node-b", &["foo"]),
                existing("p-x1", "node-x", &["foo"]),
            ],
            four(),
            fits(&[false, false, true, true]),
        ),
    ];
    let pl = plugin();
    for (name, p, pods, nodes, want) in cases {
        let (pre, got) = run_filter(&pl, &p, &pods, &nodes);
        assert!(pre.is_success(), "{name}: {pre:?}");
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn node_inclusion_policies() {
    let nodes = vec![
        node("node-a", &[("zone", "zone1"), ("foo", "")]),
        node("node-b", &[("zone", "zone1")]),
        node("node-x", &[("zone", "zone2"), ("foo", "")]),
        node("node-y", &[("zone", "zone2")]),
    ];
    let pods = vec![
        existing("p-a", "node-a", &["foo"]),
        existing("p-b", "node-b", &["foo"]),
        existing("p-y1", "node-y", &["foo"]),
        existing("p-y2", "node-y", &["foo"]),
    ];
    let with_policy = |policy: Option<&str>| {
        let mut c = constraint(1, "zone", "DoNotSchedule", "foo");
        if let Some(p) = policy {
            c["nodeAffinityPolicy"] = json!(p);
        }
        pod_with("p", "", &["foo"], json!([c]), json!({"nodeSelector": {"foo": ""}}))
    };
    let pl = plugin();
    // Honor (default): only node-a and node-x count → zone1 1, zone2 0.
    assert_eq!(run_filter(&pl, &with_policy(None), &pods, &nodes).1, fits(&[false, false, true, true]));
    // Ignore: zone1 2, zone2 2.
    assert_eq!(run_filter(&pl, &with_policy(Some("Ignore")), &pods, &nodes).1, fits(&[true; 4]));

    // nodeTaintsPolicy: Honor leaves out the tainted node-x, so zone2 is no domain.
    let nodes: Vec<Node> = vec![
        node("node-a", &[("zone", "zone1")]),
        serde_json::from_value(json!({"metadata": {"name": "node-x", "labels": {"zone": "zone2"}},
            "spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}}))
        .unwrap(),
    ];
    let pods = vec![existing("p-a", "node-a", &["foo"])];
    let taints = |policy: &str| {
        let mut c = constraint(1, "zone", "DoNotSchedule", "foo");
        c["nodeTaintsPolicy"] = json!(policy);
        pod_with("p", "", &["foo"], json!([c]), Value::Null)
    };
    assert_eq!(run_filter(&pl, &taints("Ignore"), &pods, &nodes).1, fits(&[false, true]));
    assert_eq!(run_filter(&pl, &taints("Honor"), &pods, &nodes).1, fits(&[true, true]));
}

#[test]
fn pre_filter_skips_without_hard_constraints() {
    let pl = plugin();
    let p = pod_with("p", "", &["foo"], json!([constraint(1, "zone", "ScheduleAnyway", "foo")]), Value::Null);
    assert_eq!(run_filter(&pl, &p, &[], &[zone_node("node-a", "zone1")]).0.code, Code::Skip);
    let p = existing("p", "", &["foo"]);
    assert_eq!(run_filter(&pl, &p, &[], &[zone_node("node-a", "zone1")]).0.code, Code::Skip);
}

#[test]
fn add_and_remove_pod_move_the_global_minimum() {
    let pl = plugin();
    let nodes = vec![node("node-a", &[(HOST, "node-a")]), node("node-b", &[(HOST, "node-b")])];
    let pods = vec![existing("p-a1", "node-a", &["foo"])];
    let p = pod_with("p", "", &["foo"], json!([constraint(1, HOST, "DoNotSchedule", "foo")]), Value::Null);
    let snap = Snapshot::from_objects(&nodes, &pods);
    let pi = PodInfo::new(Arc::new(p)).unwrap();
    let mut state = CycleState::default();
    assert!(pl.pre_filter(&mut state, &pi, &snap).1.is_success());
    let (a, b) = (&snap.nodes[0], &snap.nodes[1]);
    assert_eq!(pl.filter(&state, &pi, a), fits(&[false])[0]);
    let added = Arc::new(PodInfo::new(Arc::new(existing("p-b1", "node-b", &["foo"]))).unwrap());
    let before = state.clone();
    assert!(pl.add_pod(&mut state, &pi, &added, b).is_success());
    assert!(pl.filter(&state, &pi, a).is_success());
    assert_eq!(pl.filter(&before, &pi, a), fits(&[false])[0], "the earlier state value is untouched");
    assert!(pl.remove_pod(&mut state, &pi, &added, b).is_success());
    assert_eq!(pl.filter(&state, &pi, a), fits(&[false])[0]);
    // A pod of another namespace changes nothing.
    let mut other = existing("p-b2", "node-b", &["foo"]);
    other.metadata.namespace = Some("ns1".into());
    let other = Arc::new(PodInfo::new(Arc::new(other)).unwrap());
    assert!(pl.add_pod(&mut state, &pi, &other, b).is_success());
    assert_eq!(pl.filter(&state, &pi, a), fits(&[false])[0]);
}

/// Scores of `nodes` with `failed` in the snapshot but not feasible (None: PreScore skipped).
fn run_score(pl: &PodTopologySpread, p: &Pod, pods: &[Pod], nodes: &[Node], failed: &[Node]) -> Option<Vec<i64>> {
    let all: Vec<Node> = nodes.iter().chain(failed).cloned().collect();
    let snap = Snapshot::from_objects(&all, pods);
    let pi = PodInfo::new(Arc::new(p.clone())).unwrap();
    let mut state = CycleState::default();
    let _ = pl.pre_filter(&mut state, &pi, &snap);
    let feasible: Vec<_> = snap.nodes[..nodes.len()].to_vec();
    let st = pl.pre_score(&mut state, &pi, &feasible);
    if st.is_skip() {
        return None;
    }
    assert!(st.is_success(), "{st:?}");
    let mut scores: Vec<NodeScore> = feasible
        .iter()
        .map(|n| NodeScore { name: n.node_name().to_string(), score: pl.score(&state, &pi, n).0 })
        .collect();
    assert!(pl.normalize_score(&state, &pi, &mut scores).is_success());
    Some(scores.into_iter().map(|s| s.score).collect())
}

fn spread(prefix_counts: &[(&str, usize)], labels: &[&str]) -> Vec<Pod> {
    let mut v = Vec::new();
    for (node, n) in prefix_counts {
        for i in 0..*n {
            v.push(existing(&format!("p-{node}{i}"), node, labels));
        }
    }
    v
}

#[test]
fn score_table() {
    let pl = plugin();
    let hosts = |names: &[&str]| names.iter().map(|n| node(n, &[(HOST, n)])).collect::<Vec<_>>();
    let soft = |skew, key: &str, sel: &str| constraint(skew, key, "ScheduleAnyway", sel);
    let foo_host = |skew| pod_with("p", "", &["foo"], json!([soft(skew, HOST, "foo")]), Value::Null);
    let abcd = ["node-a", "node-b", "node-c", "node-d"];
    let cases: Vec<(&str, Pod, Vec<Pod>, Vec<Node>, Vec<Node>, Vec<i64>)> = vec![
        (
            "one constraint on node, no existing pods",
            foo_host(1),
            vec![],
            hosts(&["node-a", "node-b"]),
            vec![],
            vec![100, 100],
        ),
        (
            "one constraint on node, only one node is candidate",
            foo_host(1),
            spread(&[("node-a", 2), ("node-b", 1)], &["foo"]),
            hosts(&["node-a"]),
            hosts(&["node-b"]),
            vec![100],
        ),
        (
            "one constraint on node, all nodes have the same number of matching pods",
            foo_host(1),
            spread(&[("node-a", 1), ("node-b", 1)], &["foo"]),
            hosts(&["node-a", "node-b"]),
            vec![],
            vec![100, 100],
        ),
        (
            "one constraint on node, all 4 nodes are candidates",
            foo_host(1),
            spread(&[("node-a", 2), ("node-b", 1), ("node-d", 3)], &["foo"]),
            hosts(&abcd),
            vec![],
            vec![20, 60, 100, 0],
        ),
        (
            "one constraint on node, all 4 nodes are candidates, maxSkew=2",
            foo_host(2),
            spread(&[("node-a", 2), ("node-b", 1), ("node-d", 3)], &["foo"]),
            hosts(&abcd),
            vec![],
            vec![33, 66, 100, 16],
        ),
        (
            "one constraint on node, all 4 nodes are candidates, maxSkew=3",
            foo_host(3),
            spread(&[("node-a", 4), ("node-b", 3), ("node-c", 2), ("node-d", 1)], &["foo"]),
            hosts(&abcd),
            vec![],
            vec![44, 66, 77, 100],
        ),
        (
            "one constraint on node, 3 out of 4 nodes are candidates",
            foo_host(1),
            spread(&[("node-a", 4), ("node-b", 2), ("node-x", 1), ("node-y", 3)], &["foo"]),
            hosts(&["node-a", "node-b", "node-x"]),
            hosts(&["node-y"]),
            vec![33, 83, 100],
        ),
        (
            "one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key",
            foo_host(1),
            spread(&[("node-a", 4), ("node-b", 2), ("node-x", 1), ("node-y", 3)], &["foo"]),
            vec![
                node("node-a", &[(HOST, "node-a")]),
                node("node-b", &[("n", "node-b")]),
                node("node-x", &[(HOST, "node-x")]),
            ],
            hosts(&["node-y"]),
            vec![16, 0, 100],
        ),
        (
            "one constraint on zone, 3 out of 4 nodes are candidates",
            pod_with("p", "", &["foo"], json!([soft(1, "zone", "foo")]), Value::Null),
            spread(&[("node-a", 4), ("node-b", 2), ("node-x", 1), ("node-y", 3)], &["foo"]),
            vec![zone_node("node-a", "zone1"), zone_node("node-b", "zone1"), zone_node("node-x", "zone2")],
            vec![zone_node("node-y", "zone2")],
            vec![75, 75, 100],
        ),
        (
            "two Constraints on zone and node, 2 out of 4 nodes are candidates",
            pod_with("p", "", &["foo"], json!([soft(1, "zone", "foo"), soft(1, HOST, "foo")]), Value::Null),
            spread(&[("node-a", 2), ("node-b", 1), ("node-x", 2), ("node-y", 4)], &["foo"]),
            vec![zone_node("node-a", "zone1"), zone_node("node-x", "zone2")],
            vec![zone_node("node-b", "zone1"), zone_node("node-y", "zone2")],
            vec![100, 63],
        ),
        (
            "two Constraints on zone and node, with different labelSelectors",
            pod_with("p", "", &["foo", "bar"], json!([soft(1, "zone", "foo"), soft(1, HOST, "bar")]), Value::Null),
            vec![
                existing("p-a1", "node-a", &["foo"]),
                existing("p-b1", "node-b", &["foo", "bar"]),
                existing("p-y1", "node-y", &["foo"]),
                existing("p-y2", "node-y", &["bar"]),
            ],
            vec![
                zone_node("node-a", "zone1"),
                zone_node("node-b", "zone1"),
                zone_node("node-x", "zone2"),
                zone_node("node-y", "zone2"),
            ],
            vec![],
            vec![60, 20, 100, 60],
        ),
        (
            "two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods",
            pod_with("p", "", &["foo", "bar"], json!([soft(1, "zone", "foo"), soft(1, HOST, "bar")]), Value::Null),
            vec![
                existing("p-b1", "node-b", &["bar"]),
                existing("p-x1", "node-x", &["foo"]),
                existing("p-y1", "node-y", &["foo", "bar"]),
            ],
            vec![
                zone_node("node-a", "zone1"),
                zone_node("node-b", "zone1"),
                zone_node("node-x", "zone2"),
                zone_node("node-y", "zone2"),
            ],
            vec![],
            vec![100, 60, 40, 0],
        ),
    ];
    for (name, p, pods, nodes, failed, want) in cases {
        assert_eq!(run_score(&pl, &p, &pods, &nodes, &failed), Some(want), "{name}");
    }
}

fn selector_source(services: Vec<Value>, replica_sets: Vec<Value>) -> Arc<dyn DefaultSelectorSource> {
    use crate::framework::StaticLister;
    use k8s_openapi::api::apps::v1::ReplicaSet;
    use k8s_openapi::api::core::v1::Service;
    let services: Vec<Service> = services.into_iter().map(|v| serde_json::from_value(v).unwrap()).collect();
    let rss: Vec<ReplicaSet> = replica_sets.into_iter().map(|v| serde_json::from_value(v).unwrap()).collect();
    Arc::new(ListerSelectorSource {
        services: Arc::new(StaticLister::new(services)),
        replication_controllers: Arc::new(StaticLister::new(Vec::new())),
        replica_sets: Arc::new(StaticLister::new(rss)),
        stateful_sets: Arc::new(StaticLister::new(Vec::new())),
    })
}

#[test]
fn system_default_constraints_score_pods_selected_by_a_service() {
    // Upstream "system defaulting, nodes don't have zone, pods match service":
    // same scores as the single hostname constraint with maxSkew 3.
    let svc = json!({"metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"foo": ""}}});
    let source = selector_source(vec![svc], vec![]);
    let pl = PodTopologySpread::with_selector_source(None, Some(source)).unwrap();
    let nodes: Vec<Node> = ["node-a", "node-b", "node-c", "node-d"].iter().map(|n| node(n, &[(HOST, n)])).collect();
    let pods = spread(&[("node-a", 4), ("node-b", 3), ("node-c", 2), ("node-d", 1)], &["foo"]);
    let p = existing("p", "", &["foo"]);
    assert_eq!(run_score(&pl, &p, &pods, &nodes, &[]), Some(vec![44, 66, 77, 100]));
    // A pod no Service selects gets no default constraints.
    assert_eq!(run_score(&pl, &existing("p", "", &["bar"]), &pods, &nodes, &[]), None);
    // Without a selector source no default applies.
    assert_eq!(run_score(&plugin(), &p, &pods, &nodes, &[]), None);
    // The registered plugin reads the Services from the scheduler's listers.
    let mut handle = crate::framework::Handle::default();
    let svc: k8s_openapi::api::core::v1::Service = serde_json::from_value(
        json!({"metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"foo": ""}}}),
    )
    .unwrap();
    handle.listers.services = Arc::new(crate::framework::StaticLister::new(vec![svc]));
    let registered = PodTopologySpread::from_handle(None, &handle).unwrap();
    assert_eq!(run_score(&registered, &p, &pods, &nodes, &[]), Some(vec![44, 66, 77, 100]));
    let unselected = PodTopologySpread::from_handle(None, &crate::framework::Handle::default()).unwrap();
    assert_eq!(run_score(&unselected, &p, &pods, &nodes, &[]), None);
}

#[test]
fn default_selector_unions_services_and_the_controlling_workload() {
    let source = selector_source(
        vec![
            json!({"metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"app": "web"}}}),
            // Another namespace's Service and a Service without a selector do not count.
            json!({"metadata": {"name": "o", "namespace": "other"}, "spec": {"selector": {"app": "web", "x": "y"}}}),
            json!({"metadata": {"name": "n", "namespace": "default"}, "spec": {}}),
        ],
        vec![json!({"metadata": {"name": "rs", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"tier": "fe"}, "matchExpressions": [{"key": "env", "operator": "In", "values": ["a", "b"]}]}}})],
    );
    let mut p = existing("p", "", &[]);
    p.metadata.labels = Some(
        [("app", "web"), ("tier", "fe"), ("env", "a")].iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
    );
    p.metadata.owner_references = Some(vec![serde_json::from_value(
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u", "controller": true}),
    )
    .unwrap()]);
    let sel = source.selector(&p).unwrap();
    assert_eq!(sel.to_string(), "app=web,env in (a,b),tier in (fe)");
}

#[test]
fn args_are_validated_as_upstream() {
    let c = json!({"maxSkew": 1, "topologyKey": "key", "whenUnsatisfiable": "DoNotSchedule"});
    let err = PodTopologySpread::with_selector_source(
        Some(&json!({"defaultConstraints": [c], "defaultingType": "System"})),
        None,
    )
    .err()
    .unwrap();
    assert_eq!(err, r#"defaultingType: Invalid value: "System": when .defaultConstraints are not empty"#);
    assert!(PodTopologySpread::with_selector_source(
        Some(&json!({"defaultConstraints": [c], "defaultingType": "List"})),
        None
    )
    .is_ok());
    assert!(PodTopologySpread::with_selector_source(Some(&json!({"defaultingType": "Other"})), None).is_err());
}
