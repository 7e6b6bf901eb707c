use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::config::{Configuration, Profile};
use crate::plugins::testing::{node_info, pod_info};

/// A configurable test plugin: PreFilter narrows to `names` (or skips),
/// Filter rejects nodes in `reject`.
struct Probe {
    name: &'static str,
    narrow: Option<BTreeSet<String>>,
    skip: bool,
    reject: Vec<&'static str>,
}

impl Plugin for Probe {
    fn name(&self) -> &'static str {
        self.name
    }
    fn extension_points(&self) -> &'static [ExtensionPoint] {
        &[ExtensionPoint::PreFilter, ExtensionPoint::Filter]
    }
    fn pre_filter(&self, _s: &mut CycleState, _p: &PodInfo, _snap: &Snapshot) -> (Option<PreFilterResult>, Status) {
        if self.skip {
            return (None, Status::skip());
        }
        (self.narrow.clone().map(|n| PreFilterResult { node_names: Some(n) }), Status::success())
    }
    fn filter(&self, _s: &CycleState, _p: &PodInfo, n: &NodeInfo) -> Status {
        if self.reject.contains(&n.node_name()) {
            Status::unschedulable([format!("rejected by {}", self.name)])
        } else {
            Status::success()
        }
    }
}

fn names(v: &[&str]) -> BTreeSet<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn probe_a(_: Option<&serde_json::Value>, _: &Handle) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(Probe { name: "A", narrow: Some(names(&["n1", "n2"])), skip: false, reject: vec![] }))
}
fn probe_b(_: Option<&serde_json::Value>, _: &Handle) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(Probe { name: "B", narrow: Some(names(&["n2", "n3"])), skip: false, reject: vec![] }))
}
fn probe_c(_: Option<&serde_json::Value>, _: &Handle) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(Probe { name: "C", narrow: Some(names(&["n3"])), skip: false, reject: vec![] }))
}
fn probe_skip(_: Option<&serde_json::Value>, _: &Handle) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(Probe { name: "S", narrow: None, skip: true, reject: vec!["n1"] }))
}

fn framework_with(enabled: &[&str]) -> Framework {
    let mut registry = crate::plugins::registry();
    registry.extend([("A", probe_a as PluginFactory), ("B", probe_b), ("C", probe_c), ("S", probe_skip)]);
    let profile: Profile = serde_json::from_value(json!({
        "schedulerName": "default-scheduler",
        "plugins": {"multiPoint": {
            "enabled": enabled.iter().chain(&["DefaultBinder"]).map(|n| json!({"name": n})).collect::<Vec<_>>(),
            "disabled": [{"name": "*"}]
        }}
    }))
    .unwrap();
    Framework::new(&profile, &Configuration::default(), &registry, Handle::default()).unwrap()
}

#[test]
fn default_profile_orders_plugins_and_weights_as_upstream() {
    let c = Configuration::default();
    let f = Framework::new(&c.profiles[0], &c, &crate::plugins::registry(), Handle::default()).unwrap();
    let filters: Vec<&str> = f.list(ExtensionPoint::Filter).iter().map(|(n, _)| *n).collect();
    let want = ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts"];
    // Plugins of other helpers may land in between; ours keep upstream's relative order.
    let ours: Vec<&str> = filters.into_iter().filter(|n| want.contains(n)).collect();
    assert_eq!(ours, want);
    let scores = f.list(ExtensionPoint::Score);
    assert!(scores.contains(&("TaintToleration", 3)));
    assert!(scores.contains(&("NodeAffinity", 2)));
    assert_eq!(f.list(ExtensionPoint::Bind), vec![("DefaultBinder", 0)]);
    assert_eq!(f.list(ExtensionPoint::PreEnqueue), vec![("SchedulingGates", 0)]);
}

#[test]
fn explicitly_enabled_unknown_plugins_and_missing_binders_are_errors() {
    let c = Configuration::default();
    let p: Profile = serde_json::from_value(
        json!({"schedulerName": "x", "plugins": {"multiPoint": {"enabled": [{"name": "Nope"}]}}}),
    )
    .unwrap();
    let e = Framework::new(&p, &c, &crate::plugins::registry(), Handle::default()).err().unwrap();
    assert!(e.contains("\"Nope\" does not exist"), "{e}");
    let p: Profile =
        serde_json::from_value(json!({"schedulerName": "x", "plugins": {"bind": {"disabled": [{"name": "*"}]}}}))
            .unwrap();
    let e = Framework::new(&p, &c, &crate::plugins::registry(), Handle::default()).err().unwrap();
    assert!(e.contains("at least one bind plugin"), "{e}");
}

#[test]
fn pre_filter_results_intersect_and_empty_intersections_reject() {
    let snap = Snapshot::default();
    let pod = pod_info("p", json!({}));
    let f = framework_with(&["A", "B"]);
    let (r, s, narrowing) = f.run_pre_filter(&mut CycleState::default(), &pod, &snap);
    assert!(s.is_success());
    assert_eq!(r.unwrap().node_names.unwrap(), names(&["n2"]));
    assert_eq!(narrowing, BTreeSet::from(["A", "B"]));
    let f = framework_with(&["A", "C"]);
    let (_, s, _) = f.run_pre_filter(&mut CycleState::default(), &pod, &snap);
    assert_eq!(s.code, Code::UnschedulableAndUnresolvable);
    assert_eq!(s.message(), "node(s) didn't satisfy plugin(s) [A C] simultaneously");
}

#[test]
fn pre_filter_skip_skips_the_plugins_filter() {
    let f = framework_with(&["S"]);
    let pod = pod_info("p", json!({}));
    let mut state = CycleState::default();
    let (_, s, _) = f.run_pre_filter(&mut state, &pod, &Snapshot::default());
    assert!(s.is_success());
    assert!(state.skip_filter_plugins.contains("S"));
    assert!(f.run_filter(&state, &pod, &node_info("n1", json!({}), json!({}))).is_success());
    let s = f.run_filter(&CycleState::default(), &pod, &node_info("n1", json!({}), json!({})));
    assert_eq!((s.code, s.plugin), (Code::Unschedulable, "S"));
}

struct Nominated(Vec<Arc<PodInfo>>);
impl PodNominator for Nominated {
    fn nominated_pods_for_node(&self, _node: &str) -> Vec<Arc<PodInfo>> {
        self.0.clone()
    }
}

#[test]
fn nominated_pods_of_equal_or_higher_priority_count_in_filter() {
    let c = Configuration::default();
    let f = Framework::new(&c.profiles[0], &c, &crate::plugins::registry(), Handle::default()).unwrap();
    let port = |name: &str, prio: i32| {
        Arc::new(pod_info(
            name,
            json!({"priority": prio, "containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80, "hostPort": 80}]}]}),
        ))
    };
    let node = node_info("n1", json!({}), json!({}));
    let pod = port("incoming", 10);
    let mut state = CycleState::default();
    let (_, s, _) = f.run_pre_filter(&mut state, &pod, &Snapshot::default());
    assert!(s.is_success());
    assert!(f.run_filter_with_nominated_pods(&state, &pod, &node).is_success());
    f.set_nominator(Arc::new(Nominated(vec![port("low", 5)])));
    assert!(f.run_filter_with_nominated_pods(&state, &pod, &node).is_success());
    f.set_nominator(Arc::new(Nominated(vec![port("high", 10)])));
    let s = f.run_filter_with_nominated_pods(&state, &pod, &node);
    assert_eq!(s.code, Code::Unschedulable);
    assert_eq!(s.plugin, "NodePorts");
}
