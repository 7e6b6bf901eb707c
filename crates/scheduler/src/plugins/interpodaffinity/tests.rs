//! Table tests; cases and expected values follow upstream's
//! `filtering_test.go` / `scoring_test.go` (test names kept).

#![allow(clippy::type_complexity)] // Case tables are tuples.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use serde_json::{json, Value};

use super::*;
use crate::framework::{Code, CycleState, Handle, NodeScore, PodInfo, Snapshot, StaticLister};

fn pod(name: &str, ns: &str, node: &str, labels: Value, affinity: Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{name}"), "labels": labels},
        "spec": {"nodeName": node, "containers": [], "affinity": affinity}
    }))
    .unwrap()
}

fn node(name: &str, labels: Value) -> Node {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap()
}

fn namespaces() -> Vec<Namespace> {
    [("subteam1.team1", "team1"), ("subteam2.team1", "team1"), ("subteam1.team2", "team2"), ("subteam2.team2", "team2")]
        .iter()
        .map(|(n, t)| serde_json::from_value(json!({"metadata": {"name": n, "labels": {"team": t}}})).unwrap())
        .collect()
}

fn plugin(args: Option<Value>) -> Arc<dyn Plugin> {
    let mut h = Handle::default();
    h.listers.namespaces = Arc::new(StaticLister::new(namespaces()));
    new(args.as_ref(), &h).unwrap()
}

fn term(key: &str, op: &str, values: &[&str], topology: &str) -> Value {
    json!({"labelSelector": {"matchExpressions": [{"key": key, "operator": op, "values": values}]}, "topologyKey": topology})
}

/// Runs PreFilter then Filter on every node: the PreFilter status and each node's status.
fn run_filter(p: &Pod, pods: &[Pod], nodes: &[Node]) -> (Status, Vec<Status>) {
    let pl = plugin(None);
    let snap = Snapshot::from_objects(nodes, pods);
    let pi = PodInfo::new(Arc::new(p.clone())).unwrap();
    let mut state = CycleState::default();
    let (_, st) = pl.pre_filter(&mut state, &pi, &snap);
    let per_node =
        if st.is_success() { snap.nodes.iter().map(|n| pl.filter(&state, &pi, n)).collect() } else { vec![] };
    (st, per_node)
}

fn unresolvable(r: &str) -> Status {
    Status::new(Code::UnschedulableAndUnresolvable, r)
}
fn unschedulable(r: &str) -> Status {
    Status::new(Code::Unschedulable, r)
}

#[test]
fn required_affinity_filter_table() {
    let sec = json!({"service": "securityscan"});
    let n1 = node("node1", json!({"region": "r1", "zone": "z11"}));
    let n2 = node("node2", json!({"region": "r2", "zone": "z21"}));
    let aff = |t: Value| json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [t]}});
    let anti = |t: Value| json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [t]}});
    let ok = Status::success();
    struct Case {
        name: &'static str,
        pod: Pod,
        pods: Vec<Pod>,
        want: Vec<Status>,
    }
    let cases = vec![
        Case {
            name: "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that matches the existing pod",
            pod: pod("p", "default", "", json!({}), aff(term("service", "In", &["securityscan", "value2"], "region"))),
            pods: vec![pod("e", "default", "node1", sec.clone(), Value::Null)],
            want: vec![ok.clone(), unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)],
        },
        Case {
            name: "Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
            pod: pod("p", "default", "", json!({}), aff({
                let mut t = term("service", "In", &["securityscan", "value2"], "region");
                t["namespaces"] = json!(["DiffNameSpace"]);
                t
            })),
            pods: vec![pod("e", "default", "node1", sec.clone(), Value::Null)],
            want: vec![unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH), unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)],
        },
        Case {
            name: "Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
            pod: pod("p", "default", "", json!({}), aff(term("service", "In", &["antivirusscan", "value2"], "region"))),
            pods: vec![pod("e", "default", "node1", sec.clone(), Value::Null)],
            want: vec![unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH), unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)],
        },
        Case {
            name: "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
            pod: pod("p", "default", "", json!({}), json!({
                "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("service", "In", &["securityscan"], "region")]},
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("service", "In", &["securityscan"], "zone")]}
            })),
            pods: vec![pod("e", "default", "node1", sec.clone(), Value::Null)],
            want: vec![unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH), unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)],
        },
        Case {
            name: "Verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. doesn't satisfy PodAntiAffinity symmetry with the existing pod",
            pod: pod("p", "default", "", sec.clone(), Value::Null),
            pods: vec![pod("e", "default", "node1", json!({}), anti(term("service", "In", &["securityscan"], "zone")))],
            want: vec![unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH), ok.clone()],
        },
        Case {
            name: "pod matches its own Label in PodAffinity and that matches the existing pod Labels",
            pod: pod("p", "default", "", sec.clone(), aff(term("service", "In", &["securityscan"], "region"))),
            pods: vec![pod("e", "default", "node2", sec.clone(), Value::Null)],
            want: vec![unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH), ok.clone()],
        },
        Case {
            name: "the first pod of a group that has affinity to itself can land on any node with the topology key",
            pod: pod("p", "default", "", sec.clone(), aff(term("service", "In", &["securityscan"], "region"))),
            pods: vec![],
            want: vec![ok.clone(), ok.clone()],
        },
        Case {
            name: "the first-pod exception needs the pod to match its own terms",
            pod: pod("p", "default", "", json!({}), aff(term("service", "In", &["securityscan"], "region"))),
            pods: vec![],
            want: vec![unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH), unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)],
        },
        Case {
            name: "the first-pod exception needs every topology key on the node",
            pod: pod("p", "default", "", sec.clone(), aff(term("service", "In", &["securityscan"], "rack"))),
            pods: vec![],
            want: vec![unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH), unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)],
        },
        Case {
            name: "affinity with namespaceSelector matches a pod in a selected namespace",
            pod: pod("p", "subteam1.team1", "", json!({}), aff({
                let mut t = term("service", "In", &["securityscan"], "region");
                t["namespaceSelector"] = json!({"matchLabels": {"team": "team2"}});
                t
            })),
            pods: vec![pod("e", "subteam2.team2", "node1", sec.clone(), Value::Null)],
            want: vec![ok.clone(), unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)],
        },
        Case {
            name: "affinity with namespaceSelector ignores pods of other namespaces",
            pod: pod("p", "subteam1.team1", "", json!({}), aff({
                let mut t = term("service", "In", &["securityscan"], "region");
                t["namespaceSelector"] = json!({"matchLabels": {"team": "team2"}});
                t
            })),
            pods: vec![pod("e", "subteam1.team1", "node1", sec.clone(), Value::Null)],
            want: vec![unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH), unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)],
        },
        Case {
            name: "an empty namespaceSelector selects every namespace",
            pod: pod("p", "subteam1.team1", "", json!({}), anti({
                let mut t = term("service", "In", &["securityscan"], "zone");
                t["namespaceSelector"] = json!({});
                t
            })),
            pods: vec![pod("e", "elsewhere", "node2", sec.clone(), Value::Null)],
            want: vec![ok.clone(), unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)],
        },
        Case {
            name: "existing pod's anti-affinity namespaceSelector is matched against the incoming pod's namespace labels",
            pod: pod("p", "subteam1.team1", "", sec.clone(), Value::Null),
            pods: vec![pod("e", "other", "node1", json!({}), anti({
                let mut t = term("service", "In", &["securityscan"], "region");
                t["namespaceSelector"] = json!({"matchLabels": {"team": "team1"}});
                t
            }))],
            want: vec![unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH), ok.clone()],
        },
    ];
    for c in cases {
        let (pre, got) = run_filter(&c.pod, &c.pods, &[n1.clone(), n2.clone()]);
        assert!(pre.is_success(), "{}: prefilter {pre:?}", c.name);
        assert_eq!(got, c.want, "{}", c.name);
    }
}

#[test]
fn pre_filter_skips_pods_without_required_terms() {
    // Upstream: "A pod that has no required pod affinity scheduling rules can
    // schedule onto a node with no existing pods" — PreFilter returns Skip.
    let p = pod("p", "default", "", json!({}), Value::Null);
    let (pre, _) = run_filter(&p, &[], &[node("node1", json!({"region": "r1"}))]);
    assert_eq!(pre.code, Code::Skip);
}

#[test]
fn add_and_remove_pod_update_counts_in_a_new_state_value() {
    let n1 = node("node1", json!({"zone": "z1"}));
    let sec = json!({"service": "securityscan"});
    let victim = pod("e", "default", "node1", sec.clone(), Value::Null);
    let p = pod(
        "p",
        "default",
        "",
        json!({}),
        json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("service", "In", &["securityscan"], "zone")]}}),
    );
    let pl = plugin(None);
    let snap = Snapshot::from_objects(std::slice::from_ref(&n1), std::slice::from_ref(&victim));
    let pi = PodInfo::new(Arc::new(p)).unwrap();
    let mut state = CycleState::default();
    assert!(pl.pre_filter(&mut state, &pi, &snap).1.is_success());
    let node = &snap.nodes[0];
    assert_eq!(pl.filter(&state, &pi, node), unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH));
    let before = state.clone();
    let vi = Arc::new(PodInfo::new(Arc::new(victim)).unwrap());
    let mut without = node.as_ref().clone();
    without.remove_pod(&vi.pod);
    assert!(pl.remove_pod(&mut state, &pi, &vi, &without).is_success());
    assert!(pl.filter(&state, &pi, &without).is_success());
    // The earlier state value is untouched (simulations clone states).
    assert_eq!(pl.filter(&before, &pi, node), unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH));
    assert!(pl.add_pod(&mut state, &pi, &vi, node).is_success());
    assert_eq!(pl.filter(&state, &pi, node), unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH));

    // An existing pod with anti-affinity against the incoming pod, removed.
    let hater = pod(
        "h",
        "default",
        "node1",
        json!({}),
        json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("service", "In", &["securityscan"], "zone")]}}),
    );
    let snap = Snapshot::from_objects(&[n1], std::slice::from_ref(&hater));
    let pi = PodInfo::new(Arc::new(pod("p", "default", "", sec, Value::Null))).unwrap();
    let mut state = CycleState::default();
    assert!(pl.pre_filter(&mut state, &pi, &snap).1.is_success());
    assert_eq!(
        pl.filter(&state, &pi, &snap.nodes[0]),
        unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
    );
    let hi = PodInfo::new(Arc::new(hater)).unwrap();
    assert!(pl.remove_pod(&mut state, &pi, &hi, &snap.nodes[0]).is_success());
    assert!(pl.filter(&state, &pi, &snap.nodes[0]).is_success());
}

/// PreFilter, PreScore over all nodes, Score, NormalizeScore (None = PreScore skipped).
fn run_score(p: &Pod, pods: &[Pod], nodes: &[Node], args: Option<Value>) -> Option<Vec<i64>> {
    let pl = plugin(args);
    let snap = Snapshot::from_objects(nodes, pods);
    let pi = PodInfo::new(Arc::new(p.clone())).unwrap();
    let mut state = CycleState::default();
    let _ = pl.pre_filter(&mut state, &pi, &snap);
    let st = pl.pre_score(&mut state, &pi, &snap.nodes);
    if st.is_skip() {
        return None;
    }
    assert!(st.is_success(), "{st:?}");
    let mut scores: Vec<NodeScore> = snap
        .nodes
        .iter()
        .map(|n| NodeScore { name: n.node_name().to_string(), score: pl.score(&state, &pi, n).0 })
        .collect();
    assert!(pl.normalize_score(&state, &pi, &mut scores).is_success());
    Some(scores.into_iter().map(|s| s.score).collect())
}

#[test]
fn preferred_affinity_score_table() {
    let china = json!({"region": "China"});
    let india = json!({"region": "India"});
    let az1 = json!({"az": "az1"});
    let az2 = json!({"az": "az2"});
    let china_az1 = json!({"region": "China", "az": "az1"});
    let s1 = json!({"security": "S1"});
    let s2 = json!({"security": "S2"});
    let pref = |w: i32, t: Value| json!({"weight": w, "podAffinityTerm": t});
    let stay_s1_region = json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [pref(5, term("security", "In", &["S1"], "region"))]}});
    let stay_s2_region = json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [pref(6, term("security", "In", &["S2"], "region"))]}});
    let affinity3 = json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        pref(8, json!({"labelSelector": {"matchExpressions": [
            {"key": "security", "operator": "NotIn", "values": ["S1"]},
            {"key": "security", "operator": "In", "values": ["S2"]}]}, "topologyKey": "region"})),
        pref(2, json!({"labelSelector": {"matchExpressions": [
            {"key": "security", "operator": "Exists"},
            {"key": "wrongkey", "operator": "DoesNotExist"}]}, "topologyKey": "region"}))
    ]}});
    let hard_affinity = json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        term("security", "In", &["S1", "value2"], "region"),
        {"labelSelector": {"matchExpressions": [
            {"key": "security", "operator": "Exists"},
            {"key": "wrongkey", "operator": "DoesNotExist"}]}, "topologyKey": "region"}
    ]}});
    let away_s1_az = json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [pref(5, term("security", "In", &["S1"], "az"))]}});
    let away_s2_az = json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [pref(5, term("security", "In", &["S2"], "az"))]}});
    let stay_s1_away_s2 = json!({
        "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [pref(8, term("security", "In", &["S1"], "region"))]},
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [pref(5, term("security", "In", &["S2"], "az"))]}
    });
    let ns_sel = |kind: &str| {
        let mut t = term("security", "In", &["S1"], "region");
        t["namespaces"] = json!(["subteam2.team2"]);
        t["namespaceSelector"] = json!({"matchExpressions": [{"key": "team", "operator": "In", "values": ["team1"]}]});
        json!({kind: {"preferredDuringSchedulingIgnoredDuringExecution": [pref(5, t)]}})
    };
    let p = |name: &str, node: &str, labels: &Value, aff: &Value| pod(name, "", node, labels.clone(), aff.clone());
    let none = Value::Null;
    let nolabels = json!({});
    let cases: Vec<(&str, Pod, Vec<Pod>, Vec<Node>, Option<Vec<i64>>)> = vec![
        (
            "all nodes are same priority as Affinity is nil",
            p("in", "", &s1, &none),
            vec![],
            vec![node("node1", china.clone()), node("node2", india.clone()), node("node3", az1.clone())],
            None,
        ),
        (
            "Affinity: pod that matches topology key & pods in nodes will get high score comparing to otherswhich doesn't match either pods in nodes or in topology key",
            p("in", "", &s1, &stay_s1_region),
            vec![p("a", "node1", &s1, &none), p("b", "node2", &s2, &none), p("c", "node3", &s1, &none)],
            vec![node("node1", china.clone()), node("node2", india.clone()), node("node3", az1.clone())],
            Some(vec![100, 0, 0]),
        ),
        (
            "All the nodes that have the same topology key & label value with one of them has an existing pod that match the affinity rules, have the same score",
            p("in", "", &nolabels, &stay_s1_region),
            vec![p("a", "node1", &s1, &none)],
            vec![node("node1", china.clone()), node("node2", china_az1.clone()), node("node3", india.clone())],
            Some(vec![100, 100, 0]),
        ),
        (
            "Affinity: nodes in one region has more matching pods comparing to other region, so the region which has more matches will get high score",
            p("in", "", &s1, &stay_s2_region),
            vec![
                p("a", "node1", &s2, &none),
                p("b", "node1", &s2, &none),
                p("c", "node2", &s2, &none),
                p("d", "node3", &s2, &none),
                p("e", "node4", &s2, &none),
                p("f", "node5", &s2, &none),
            ],
            vec![
                node("node1", china.clone()),
                node("node2", india.clone()),
                node("node3", china.clone()),
                node("node4", china.clone()),
                node("node5", india.clone()),
            ],
            Some(vec![100, 0, 100, 100, 0]),
        ),
        (
            "Affinity: different Label operators and values for pod affinity scheduling preference, including some match failures ",
            p("in", "", &s1, &affinity3),
            vec![p("a", "node1", &s1, &none), p("b", "node2", &s2, &none), p("c", "node3", &s1, &none)],
            vec![node("node1", china.clone()), node("node2", india.clone()), node("node3", az1.clone())],
            Some(vec![20, 100, 0]),
        ),
        (
            "Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
            p("in", "", &s2, &none),
            vec![p("a", "node1", &s1, &stay_s1_region), p("b", "node2", &s2, &stay_s2_region)],
            vec![node("node1", china.clone()), node("node2", india.clone()), node("node3", az1.clone())],
            Some(vec![0, 100, 0]),
        ),
        (
            "Affinity symmetry with namespace selector",
            pod("in", "subteam1.team1", "", s1.clone(), none.clone()),
            vec![p("a", "node1", &s1, &ns_sel("podAffinity")), p("b", "node2", &s2, &stay_s2_region)],
            vec![node("node1", china.clone()), node("node2", india.clone()), node("node3", az1.clone())],
            Some(vec![100, 0, 0]),
        ),
        (
            "AntiAffinity symmetry with namespace selector",
            pod("in", "subteam1.team1", "", s1.clone(), none.clone()),
            vec![p("a", "node1", &s1, &ns_sel("podAntiAffinity")), p("b", "node2", &s2, &stay_s2_region)],
            vec![node("node1", china.clone()), node("node2", india.clone()), node("node3", az1.clone())],
            Some(vec![0, 100, 100]),
        ),
        (
            "Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
            p("in", "", &s1, &none),
            vec![p("a", "node1", &s1, &hard_affinity), p("b", "node2", &s2, &hard_affinity)],
            vec![node("node1", china.clone()), node("node2", india.clone()), node("node3", az1.clone())],
            Some(vec![100, 100, 0]),
        ),
        (
            "Anti Affinity: pod that does not match existing pods in node will get high score ",
            p("in", "", &s1, &away_s1_az),
            vec![p("a", "node1", &s1, &none), p("b", "node2", &s2, &none)],
            vec![node("node1", az1.clone()), node("node2", china.clone())],
            Some(vec![0, 100]),
        ),
        (
            "Anti Affinity symmetry: the existing pods in node which has anti affinity match will get high score",
            p("in", "", &s2, &none),
            vec![p("a", "node1", &s1, &away_s2_az), p("b", "node2", &s2, &away_s1_az)],
            vec![node("node1", az1.clone()), node("node2", az2.clone())],
            Some(vec![0, 100]),
        ),
        (
            "Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod to schedule and existing pods have the same labels",
            p("in", "", &s1, &stay_s1_away_s2),
            vec![
                p("a", "node1", &s1, &none),
                p("b", "node1", &s1, &none),
                p("c", "node2", &s1, &none),
                p("d", "node3", &s1, &none),
                p("e", "node3", &s1, &none),
                p("f", "node4", &s1, &none),
                p("g", "node5", &s1, &none),
            ],
            vec![
                node("node1", china_az1.clone()),
                node("node2", india.clone()),
                node("node3", china.clone()),
                node("node4", china.clone()),
                node("node5", india.clone()),
            ],
            Some(vec![100, 0, 100, 100, 0]),
        ),
        (
            "Affinity and Anti Affinity and symmetry: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod affinity & anti affinity & symmetry",
            p("in", "", &s1, &stay_s1_away_s2),
            vec![
                p("a", "node1", &s1, &none),
                p("b", "node2", &s2, &none),
                p("c", "node3", &nolabels, &stay_s1_away_s2),
                p("d", "node4", &nolabels, &away_s1_az),
            ],
            vec![node("node1", china.clone()), node("node2", az1.clone()), node("node3", india.clone()), node("node4", az2.clone())],
            Some(vec![100, 0, 100, 0]),
        ),
        (
            "Avoid panic when partial nodes in a topology don't have pods with affinity",
            p("in", "", &s1, &none),
            vec![p("a", "node1", &s1, &none), p("b", "node2", &nolabels, &stay_s1_away_s2)],
            vec![node("node1", china.clone()), node("node2", china.clone())],
            Some(vec![0, 0]),
        ),
    ];
    for (name, incoming, pods, nodes, want) in cases {
        assert_eq!(run_score(&incoming, &pods, &nodes, None), want, "{name}");
    }
}

#[test]
fn hard_pod_affinity_weight_and_ignoring_existing_pods_terms() {
    let s1 = json!({"security": "S1"});
    let hard = json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("security", "In", &["S1"], "region")]}});
    let nodes = vec![node("node1", json!({"region": "China"})), node("node2", json!({"region": "India"}))];
    let pods = vec![pod("a", "", "node1", json!({}), hard)];
    let incoming = pod("in", "", "", s1, Value::Null);
    // Upstream "Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in
    // pod affinity symmetry" with hardPodAffinityWeight 0: the term does not score.
    assert_eq!(run_score(&incoming, &pods, &nodes, Some(json!({"hardPodAffinityWeight": 0}))), None);
    assert_eq!(run_score(&incoming, &pods, &nodes, None), Some(vec![100, 0]));
    // ignorePreferredTermsOfExistingPods: the incoming pod has no preferred terms → Skip.
    assert_eq!(run_score(&incoming, &pods, &nodes, Some(json!({"ignorePreferredTermsOfExistingPods": true}))), None);
}

#[test]
fn args_are_validated_as_upstream() {
    let h = Handle::default();
    let err = new(Some(&json!({"hardPodAffinityWeight": 101})), &h).err().unwrap();
    assert_eq!(err, "hardPodAffinityWeight: Invalid value: 101: not in valid range [0-100]");
    assert!(new(Some(&json!({"hardPodAffinityWeight": -1})), &h).is_err());
    assert!(new(Some(&json!({"hardPodAffinityWeight": 100})), &h).is_ok());
}
