//! NodeResourcesFit (upstream `noderesources/fit.go`): PreFilter computes
//! the pod's effective requests; Filter rejects nodes whose allocatable
//! minus what their pods request cannot hold them ("Too many pods",
//! "Insufficient cpu", …, every shortfall reported, always Unschedulable:
//! returning UnschedulableAndUnresolvable when the request alone exceeds
//! the node's allocatable came after 1.33, in kubernetes#131345); Score
//! rates nodes by the configured strategy (LeastAllocated by default) over
//! `scoringStrategy.resources`.

use std::collections::BTreeSet;
use std::sync::Arc;

use rkube_apimachinery::validation::field::{ErrorList, FieldError, Path};
use rkube_apimachinery::validation::meta::validate_label_name;
use serde::Deserialize;

use super::strategies::{Strategy, UtilizationShapePoint};
use super::{default_weights, is_extended_resource_name, pod_request_list, requested_and_allocatable, ResourceSpec};
use crate::framework::*;
use crate::plugins::names;

const PRE_FILTER_KEY: &str = "PreFilterNodeResourcesFit";
const PRE_SCORE_KEY: &str = "PreScoreNodeResourcesFit";

/// `NodeResourcesFitArgs` (kubescheduler.config.k8s.io/v1), camelCase.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FitArgs {
    /// Extended resources Filter does not check.
    #[serde(default)]
    pub ignored_resources: Vec<String>,
    /// Extended resource groups (the part before `/`) Filter does not check.
    #[serde(default)]
    pub ignored_resource_groups: Vec<String>,
    /// How Score rates nodes; `None` = LeastAllocated over cpu and memory.
    #[serde(default)]
    pub scoring_strategy: Option<ScoringStrategy>,
}

/// `ScoringStrategy`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScoringStrategy {
    /// `LeastAllocated`, `MostAllocated` or `RequestedToCapacityRatio`.
    #[serde(default, rename = "type")]
    pub type_: String,
    /// The scored resources and their weights (empty = cpu and memory).
    #[serde(default)]
    pub resources: Vec<ResourceSpec>,
    /// The shape for `RequestedToCapacityRatio`.
    #[serde(default)]
    pub requested_to_capacity_ratio: Option<RequestedToCapacityRatio>,
}

/// `RequestedToCapacityRatioParam`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestedToCapacityRatio {
    /// Points of the piecewise-linear function, increasing utilization.
    #[serde(default)]
    pub shape: Vec<UtilizationShapePoint>,
}

/// Upstream `validateFunctionShape`: at least one point, utilization
/// strictly increasing and within 0–100, score within 0–10.
pub(crate) fn validate_function_shape(shape: &[UtilizationShapePoint], path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if shape.is_empty() {
        errs.push(FieldError::required(path, "at least one point must be specified"));
        return errs;
    }
    for i in 1..shape.len() {
        if shape[i - 1].utilization >= shape[i].utilization {
            errs.push(FieldError::invalid(
                &path.index(i).child("utilization"),
                shape[i].utilization,
                "values must be sorted in increasing order",
            ));
            break;
        }
    }
    for (i, p) in shape.iter().enumerate() {
        if !(0..=100).contains(&p.utilization) {
            errs.push(FieldError::invalid(
                &path.index(i).child("utilization"),
                p.utilization,
                "not in valid range [0, 100]",
            ));
        }
        if !(0..=10).contains(&p.score) {
            errs.push(FieldError::invalid(&path.index(i).child("score"), p.score, "not in valid range [0, 10]"));
        }
    }
    errs
}

impl FitArgs {
    /// Upstream `ValidateNodeResourcesFitArgs` on the defaulted args; Err is
    /// the aggregate message (`[e1, e2]` when several).
    pub fn validate(&self) -> Result<(), String> {
        let root = Path::nil();
        let mut errs = ErrorList::new();
        for (i, r) in self.ignored_resources.iter().enumerate() {
            errs.extend(validate_label_name(r, &root.child("ignoredResources").index(i)));
        }
        for (i, g) in self.ignored_resource_groups.iter().enumerate() {
            let p = root.child("ignoredResourceGroups").index(i);
            if g.contains('/') {
                errs.push(FieldError::invalid(&p, g.as_str(), "resource group name can't contain '/'"));
            }
            errs.extend(validate_label_name(g, &p));
        }
        if let Some(s) = &self.scoring_strategy {
            let sp = root.child("scoringStrategy");
            if !["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"].contains(&s.type_.as_str()) {
                errs.push(FieldError::not_supported(
                    &sp.child("type"),
                    s.type_.as_str(),
                    &["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"],
                ));
            }
            for (i, r) in s.resources.iter().enumerate() {
                if r.weight <= 0 || r.weight > 100 {
                    errs.push(FieldError::invalid(
                        &sp.child("resources").index(i).child("weight"),
                        r.weight,
                        &format!("resource weight of {} not in valid range (0, 100]", r.name),
                    ));
                }
            }
            if let Some(r) = &s.requested_to_capacity_ratio {
                errs.extend(validate_function_shape(&r.shape, &sp.child("shape")));
            }
        }
        match errs.aggregate_message() {
            Some(m) => Err(m),
            None => Ok(()),
        }
    }
}

/// The NodeResourcesFit plugin.
pub struct Fit {
    ignored_resources: BTreeSet<String>,
    ignored_resource_groups: BTreeSet<String>,
    strategy: Strategy,
    resources: Vec<ResourceSpec>,
}

/// Builds NodeResourcesFit from `NodeResourcesFitArgs` (v1 defaults applied).
pub fn new(args: Option<&serde_json::Value>, _handle: &Handle) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(Fit::from_args(args)?))
}

impl Fit {
    /// Parses, defaults and validates the args.
    pub fn from_args(args: Option<&serde_json::Value>) -> Result<Fit, String> {
        let mut a: FitArgs = match args {
            Some(v) => serde_json::from_value(v.clone()).map_err(|e| e.to_string())?,
            None => FitArgs::default(),
        };
        // v1 defaulting: absent strategy → LeastAllocated; resources → cpu/memory, weight 0 → 1.
        let mut s = a
            .scoring_strategy
            .take()
            .unwrap_or_else(|| ScoringStrategy { type_: "LeastAllocated".into(), ..Default::default() });
        s.resources = default_weights(std::mem::take(&mut s.resources));
        a.scoring_strategy = Some(s);
        a.validate()?;
        let s = a.scoring_strategy.unwrap();
        let strategy = match s.type_.as_str() {
            "MostAllocated" => Strategy::MostAllocated,
            "RequestedToCapacityRatio" => {
                let shape = s.requested_to_capacity_ratio.map(|r| r.shape).unwrap_or_default();
                if shape.is_empty() {
                    return Err("scoringStrategy.shape: Required value: at least one point must be specified".into());
                }
                Strategy::RequestedToCapacityRatio(shape)
            }
            _ => Strategy::LeastAllocated,
        };
        Ok(Fit {
            ignored_resources: a.ignored_resources.into_iter().collect(),
            ignored_resource_groups: a.ignored_resource_groups.into_iter().collect(),
            strategy,
            resources: s.resources,
        })
    }
}

/// One resource the node lacks (upstream `InsufficientResource`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InsufficientResource {
    /// `pods`, `cpu`, …
    pub resource_name: String,
    /// `Too many pods` / `Insufficient <name>`.
    pub reason: String,
    /// What the pod requests.
    pub requested: i64,
    /// What the node's pods already request.
    pub used: i64,
    /// The node's allocatable.
    pub capacity: i64,
}

/// Upstream `fitsRequest`: every resource `node` lacks for a pod requesting
/// `req`, in upstream order (pods, cpu, memory, ephemeral-storage, then
/// scalar resources by name); extended resources in `ignored` or in an
/// ignored group are not checked.
pub fn fits_request(
    req: &Resource,
    node: &NodeInfo,
    ignored: &BTreeSet<String>,
    ignored_groups: &BTreeSet<String>,
) -> Vec<InsufficientResource> {
    let mut out = Vec::new();
    let alloc = &node.allocatable;
    let used = &node.requested;
    let pods = node.pods.len() as i64;
    if pods + 1 > alloc.allowed_pod_number {
        out.push(InsufficientResource {
            resource_name: "pods".into(),
            reason: "Too many pods".into(),
            requested: 1,
            used: pods,
            capacity: alloc.allowed_pod_number,
        });
    }
    if req.milli_cpu == 0 && req.memory == 0 && req.ephemeral_storage == 0 && req.scalar.is_empty() {
        return out;
    }
    let mut check = |name: &str, r: i64, a: i64, u: i64| {
        if r > 0 && r > a - u {
            out.push(InsufficientResource {
                resource_name: name.to_string(),
                reason: format!("Insufficient {name}"),
                requested: r,
                used: u,
                capacity: a,
            });
        }
    };
    check("cpu", req.milli_cpu, alloc.milli_cpu, used.milli_cpu);
    check("memory", req.memory, alloc.memory, used.memory);
    check("ephemeral-storage", req.ephemeral_storage, alloc.ephemeral_storage, used.ephemeral_storage);
    for (name, &q) in &req.scalar {
        if q == 0 {
            continue;
        }
        if is_extended_resource_name(name) {
            let group = name.split('/').next().unwrap_or("");
            if ignored.contains(name) || ignored_groups.contains(group) {
                continue;
            }
        }
        check(name, q, alloc.get(name), used.get(name));
    }
    out
}

#[async_trait::async_trait]
impl Plugin for Fit {
    fn name(&self) -> &'static str {
        names::NODE_RESOURCES_FIT
    }

    fn extension_points(&self) -> &'static [ExtensionPoint] {
        &[ExtensionPoint::PreFilter, ExtensionPoint::Filter, ExtensionPoint::PreScore, ExtensionPoint::Score]
    }

    /// Pod delete or scale-down frees resources; a node added or its
    /// allocatable changed may fit (upstream, queueing hints on).
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![
            ClusterEvent { resource: EventResource::Pod, actions: action::DELETE | action::UPDATE_POD_SCALE_DOWN },
            ClusterEvent { resource: EventResource::Node, actions: action::ADD | action::UPDATE_NODE_ALLOCATABLE },
        ]
    }

    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let mut req = pod.requests.clone();
        // `pods` is not a request; zero-quantity scalars are not checked.
        req.allowed_pod_number = 0;
        state.write(PRE_FILTER_KEY, req);
        (None, Status::success())
    }

    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(req) = state.read::<Resource>(PRE_FILTER_KEY) else {
            return Status::error(format!("error reading \"{PRE_FILTER_KEY}\" from cycleState: not found"));
        };
        let insufficient = fits_request(req, node, &self.ignored_resources, &self.ignored_resource_groups);
        if insufficient.is_empty() {
            return Status::success();
        }
        Status::unschedulable(insufficient.into_iter().map(|r| r.reason))
    }

    fn pre_score(&self, state: &mut CycleState, pod: &PodInfo, _nodes: &[Arc<NodeInfo>]) -> Status {
        state.write(PRE_SCORE_KEY, pod_request_list(pod, &self.resources, false));
        Status::success()
    }

    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> (i64, Status) {
        let computed;
        let reqs = match state.read::<Vec<i64>>(PRE_SCORE_KEY) {
            Some(r) => r,
            None => {
                computed = pod_request_list(pod, &self.resources, false);
                &computed
            }
        };
        let (requested, allocatable) = requested_and_allocatable(node, &self.resources, reqs, false);
        (self.strategy.score(&self.resources, &requested, &allocatable), Status::success())
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Node, Pod};
    use serde_json::json;

    use super::super::testutil::*;
    use super::*;

    fn run_filter(fit: &Fit, p: &k8s_openapi::api::core::v1::Pod, n: &NodeInfo) -> Status {
        let pi = info(p.clone());
        let mut state = CycleState::default();
        fit.pre_filter(&mut state, &pi, &Snapshot::default());
        fit.filter(&state, &pi, n)
    }

    /// Upstream TestEnoughRequests: a node with 10 cpu, 20 memory, 5
    /// ephemeral storage, 32 pods, 5 `example.com/aaa` and 5 `kubernetes.io/something`;
    /// existing pods request the amounts in the second column.
    #[test]
    fn filter_reports_every_insufficient_resource_as_upstream() {
        let alloc = json!({"cpu": "10m", "memory": "20", "ephemeral-storage": "5", "pods": "32",
            "example.com/aaa": "5", "kubernetes.io/something": "5", "hugepages-2Mi": "5"});
        let n = |used: &[serde_json::Value]| {
            let node = node("n", alloc.clone());
            let pods: Vec<_> =
                used.iter().enumerate().map(|(i, r)| on(pod(&format!("e{i}"), std::slice::from_ref(r)), "n")).collect();
            node_info(&[node], &pods, "n")
        };
        let default = Fit::from_args(None).unwrap();
        type Case<'a> = (&'a str, serde_json::Value, Vec<serde_json::Value>, Code, Vec<&'a str>);
        let cases: Vec<Case> = vec![
            (
                "no resources requested always fits",
                json!({}),
                vec![json!({"cpu": "10m", "memory": "20"})],
                Code::Success,
                vec![],
            ),
            (
                "too many resources fails",
                json!({"cpu": "1m", "memory": "1"}),
                vec![json!({"cpu": "10m", "memory": "20"})],
                Code::Unschedulable,
                vec!["Insufficient cpu", "Insufficient memory"],
            ),
            (
                "equal edge case",
                json!({"cpu": "5m", "memory": "19"}),
                vec![json!({"cpu": "5m", "memory": "1"})],
                Code::Success,
                vec![],
            ),
            (
                "request exceeds allocatable itself: still Unschedulable in 1.33",
                json!({"cpu": "11m", "memory": "1"}),
                vec![],
                Code::Unschedulable,
                vec!["Insufficient cpu"],
            ),
            (
                "memory only",
                json!({"cpu": "1m", "memory": "2"}),
                vec![json!({"cpu": "5m", "memory": "19"})],
                Code::Unschedulable,
                vec!["Insufficient memory"],
            ),
            (
                "ephemeral storage",
                json!({"ephemeral-storage": "10"}),
                vec![json!({"ephemeral-storage": "2"})],
                Code::Unschedulable,
                vec!["Insufficient ephemeral-storage"],
            ),
            (
                "extended resource fits",
                json!({"example.com/aaa": "1"}),
                vec![json!({"example.com/aaa": "4"})],
                Code::Success,
                vec![],
            ),
            (
                "extended resource exhausted",
                json!({"example.com/aaa": "2"}),
                vec![json!({"example.com/aaa": "4"})],
                Code::Unschedulable,
                vec!["Insufficient example.com/aaa"],
            ),
            (
                "extended resource the node lacks",
                json!({"example.com/bbb": "1"}),
                vec![],
                Code::Unschedulable,
                vec!["Insufficient example.com/bbb"],
            ),
            (
                "hugepages",
                json!({"hugepages-2Mi": "3"}),
                vec![json!({"hugepages-2Mi": "3"})],
                Code::Unschedulable,
                vec!["Insufficient hugepages-2Mi"],
            ),
        ];
        for (name, req, used, code, reasons) in cases {
            let s = run_filter(&default, &pod("p", &[req]), &n(&used));
            assert_eq!(s.code, code, "{name}: {s:?}");
            assert_eq!(s.reasons, reasons, "{name}");
        }
    }

    #[test]
    fn init_containers_and_sidecars_count_as_upstream_pod_requests() {
        // Upstream: max(sum of containers, largest init container) — init 3m > app 1m.
        let node = node("n", json!({"cpu": "2m", "memory": "100", "pods": "10"}));
        let ni = node_info(&[node], &[], "n");
        let mut p = pod("p", &[json!({"cpu": "1m"})]);
        p.spec.as_mut().unwrap().init_containers =
            Some(vec![serde_json::from_value(json!({"name": "i", "resources": {"requests": {"cpu": "3m"}}})).unwrap()]);
        let s = run_filter(&Fit::from_args(None).unwrap(), &p, &ni);
        assert_eq!((s.code, s.reasons), (Code::Unschedulable, vec!["Insufficient cpu".to_string()]));
    }

    #[test]
    fn too_many_pods_is_checked_first_and_alone_for_empty_requests() {
        let node = node("n", json!({"cpu": "10m", "memory": "20", "pods": "1"}));
        let ni = node_info(std::slice::from_ref(&node), &[on(pod("e", &[json!({})]), "n")], "n");
        let fit = Fit::from_args(None).unwrap();
        let s = run_filter(&fit, &pod("p", &[json!({})]), &ni);
        assert_eq!((s.code, s.reasons.clone()), (Code::Unschedulable, vec!["Too many pods".to_string()]));
        let s = run_filter(&fit, &pod("p", &[json!({"cpu": "11m"})]), &ni);
        assert_eq!(s.reasons, vec!["Too many pods", "Insufficient cpu"]);
        assert_eq!(s.code, Code::Unschedulable);
    }

    #[test]
    fn ignored_resources_and_groups_skip_extended_resources_only() {
        let node = node("n", json!({"cpu": "10m", "memory": "20", "pods": "10"}));
        let ni = node_info(&[node], &[], "n");
        let p = pod("p", &[json!({"example.com/aaa": "1", "other.io/x": "1"})]);
        let fit = Fit::from_args(Some(&json!({"ignoredResources": ["example.com/aaa"]}))).unwrap();
        assert_eq!(run_filter(&fit, &p, &ni).reasons, vec!["Insufficient other.io/x"]);
        let fit = Fit::from_args(Some(&json!({"ignoredResourceGroups": ["other.io", "example.com"]}))).unwrap();
        assert!(run_filter(&fit, &p, &ni).is_success());
        // Native prefixed resources are never ignored.
        let p = pod("p", &[json!({"kubernetes.io/something": "1"})]);
        let fit = Fit::from_args(Some(&json!({"ignoredResourceGroups": ["kubernetes.io"]}))).unwrap();
        assert_eq!(run_filter(&fit, &p, &ni).reasons, vec!["Insufficient kubernetes.io/something"]);
    }

    fn scores(
        fit: &Fit,
        p: &k8s_openapi::api::core::v1::Pod,
        nodes: &[k8s_openapi::api::core::v1::Node],
        pods: &[k8s_openapi::api::core::v1::Pod],
    ) -> Vec<i64> {
        let snap = Snapshot::from_objects(nodes, pods);
        let pi = info(p.clone());
        let mut state = CycleState::default();
        fit.pre_score(&mut state, &pi, &snap.nodes);
        snap.nodes.iter().map(|n| fit.score(&state, &pi, n).0).collect()
    }

    /// Upstream TestLeastAllocatedScoringStrategy / TestMostAllocated /
    /// TestRequestedToCapacityRatio cases (pod cpu 3000m memory 5000 on
    /// machines of 4000m/10000 and 6000m/10000, …).
    #[test]
    fn score_strategies_match_upstream_tables() {
        let nodes = [
            node("node1", json!({"cpu": "4000m", "memory": "10000"})),
            node("node2", json!({"cpu": "6000m", "memory": "10000"})),
        ];
        let p = pod("p", &[json!({"cpu": "1000m", "memory": "2000"}), json!({"cpu": "2000m", "memory": "3000"})]);
        // Least: node1 ((4000-3000)*100/4000 + (10000-5000)*100/10000)/2 = (25+50)/2 = 37; node2 (50+50)/2 = 50.
        assert_eq!(scores(&Fit::from_args(None).unwrap(), &p, &nodes, &[]), vec![37, 50]);
        // Most: node1 (75+50)/2 = 62; node2 (50+50)/2 = 50.
        let most = Fit::from_args(Some(&json!({"scoringStrategy": {"type": "MostAllocated"}}))).unwrap();
        assert_eq!(scores(&most, &p, &nodes, &[]), vec![62, 50]);
        // Nothing requested: non-zero defaults 100m / 200Mi count on a 4000m / 10000-byte node.
        let empty = pod("e", &[json!({})]);
        assert_eq!(
            scores(&Fit::from_args(None).unwrap(), &empty, &nodes, &[]),
            vec![(3900 * 100 / 4000) / 2, (5900 * 100 / 6000) / 2]
        );
        // Weights: cpu 3, memory 1 → node1 (25*3 + 50)/4 = 31.
        let weighted = Fit::from_args(Some(&json!({"scoringStrategy": {"type": "LeastAllocated",
            "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}]}})))
        .unwrap();
        assert_eq!(scores(&weighted, &p, &nodes, &[])[0], 31);
        // RequestedToCapacityRatio with the bin-packing shape (0,0),(100,10):
        // node1 cpu 75 → 75, memory 50 → 50: round(125/2) = 63; node2 50,50 → 50.
        let rtcr = Fit::from_args(Some(&json!({"scoringStrategy": {"type": "RequestedToCapacityRatio",
            "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}}}))).unwrap();
        assert_eq!(scores(&rtcr, &p, &nodes, &[]), vec![63, 50]);
        // Spreading shape (0,10),(100,0): node1 25 and 50 → round(75/2) = 38.
        let spread = Fit::from_args(Some(&json!({"scoringStrategy": {"type": "RequestedToCapacityRatio",
            "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]}}}))).unwrap();
        assert_eq!(scores(&spread, &p, &nodes, &[]), vec![38, 50]);
    }

    /// Upstream TestLeastAllocatedScoringStrategy rows (pods without
    /// containers request nothing; memory "0" set explicitly is not defaulted).
    #[test]
    fn least_allocated_upstream_table() {
        let n = |name: &str, cpu: &str, mem: &str| node(name, json!({"cpu": cpu, "memory": mem}));
        let r = |cpu: &str, mem: &str| json!({"cpu": cpu, "memory": mem});
        let big = || vec![n("node1", "10000", "20000"), n("node2", "10000", "20000")];
        let requested = pod("p", &[r("1000", "2000"), r("2000", "3000")]);
        let nothing = pod("p", &[]);
        type Row = (&'static str, Pod, Vec<Node>, Vec<Pod>, serde_json::Value, Vec<i64>);
        let rows: Vec<Row> = vec![
            (
                "no resources requested, pods scheduled with resources",
                nothing.clone(),
                big(),
                vec![
                    on(pod("a", &[r("3000", "0")]), "node1"),
                    on(pod("b", &[r("3000", "0")]), "node1"),
                    on(pod("c", &[r("3000", "0")]), "node2"),
                    on(pod("d", &[r("3000", "5000")]), "node2"),
                ],
                json!(null),
                vec![70, 57],
            ),
            (
                "resources requested, pods scheduled with resources",
                requested.clone(),
                big(),
                vec![on(pod("a", &[r("3000", "0")]), "node1"), on(pod("b", &[r("3000", "5000")]), "node2")],
                json!(null),
                vec![57, 45],
            ),
            (
                "differently sized nodes",
                requested.clone(),
                vec![n("node1", "10000", "20000"), n("node2", "10000", "50000")],
                vec![on(pod("a", &[r("3000", "0")]), "node1"), on(pod("b", &[r("3000", "5000")]), "node2")],
                json!(null),
                vec![57, 60],
            ),
            (
                "requested resources exceed node capacity",
                pod("p", &[r("3000", "0")]),
                vec![n("node1", "4000", "10000"), n("node2", "4000", "10000")],
                vec![on(pod("a", &[r("3000", "0")]), "node1"), on(pod("b", &[r("3000", "5000")]), "node2")],
                json!(null),
                vec![50, 25],
            ),
            (
                "zero node resources",
                nothing.clone(),
                vec![node("node1", json!({})), node("node2", json!({}))],
                vec![on(pod("a", &[r("3000", "0")]), "node1")],
                json!(null),
                vec![0, 0],
            ),
            (
                "different weight on CPU and memory",
                requested.clone(),
                vec![n("node1", "4000", "10000"), n("node2", "6000", "10000")],
                vec![],
                json!([{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}]),
                vec![41, 50],
            ),
            (
                "bypass extended resource if the pod does not request",
                requested.clone(),
                vec![
                    n("node1", "6000", "10000"),
                    node("node2", json!({"cpu": "6000", "memory": "10000", "example.com/r": "4"})),
                ],
                vec![],
                json!([{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": "example.com/r", "weight": 1}]),
                vec![50, 50],
            ),
            (
                "honor extended resource if the pod requests",
                pod("p", &[json!({"cpu": "3000", "memory": "5000", "example.com/r": "2"})]),
                vec![
                    node("node1", json!({"cpu": "6000", "memory": "10000", "example.com/r": "4"})),
                    node("node2", json!({"cpu": "6000", "memory": "10000", "example.com/r": "10"})),
                ],
                vec![],
                json!([{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": "example.com/r", "weight": 1}]),
                vec![50, 60],
            ),
        ];
        for (name, p, nodes, existing, resources, want) in rows {
            let args = if resources.is_null() {
                None
            } else {
                Some(json!({"scoringStrategy": {"type": "LeastAllocated", "resources": resources}}))
            };
            let fit = Fit::from_args(args.as_ref()).unwrap();
            assert_eq!(scores(&fit, &p, &nodes, &existing), want, "{name}");
        }
    }

    /// Upstream TestRequestedToCapacityRatioScoringStrategy (spreading shape
    /// (0,10),(100,0)) and TestResourceBinPackingSingleExtended (intel.com/foo
    /// only, shape (0,0),(100,1)), expected scores as in those tables.
    #[test]
    fn requested_to_capacity_ratio_upstream_tables() {
        let spread = Fit::from_args(Some(&json!({"scoringStrategy": {"type": "RequestedToCapacityRatio",
            "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
            "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]}}})))
        .unwrap();
        let same = [
            node("node1", json!({"cpu": "4000m", "memory": "10000"})),
            node("node2", json!({"cpu": "4000m", "memory": "10000"})),
        ];
        let diff = [
            node("node1", json!({"cpu": "4000m", "memory": "10000"})),
            node("node2", json!({"cpu": "6000m", "memory": "10000"})),
        ];
        let none = pod("p", &[]);
        let empty_on = |n: &str, name: &str| on(pod(name, &[]), n);
        // Nothing scheduled, nothing requested: both 100.
        assert_eq!(scores(&spread, &none, &same, &[empty_on("node1", "a"), empty_on("node1", "b")]), vec![100, 100]);
        // Resources requested on differently sized nodes: 38 and 50.
        let req = pod("p", &[json!({"cpu": "1000m", "memory": "2000"}), json!({"cpu": "2000m", "memory": "3000"})]);
        assert_eq!(scores(&spread, &req, &diff, &[empty_on("node1", "a"), empty_on("node1", "b")]), vec![38, 50]);
        // No resources requested, pods scheduled with resources: 38 and 50.
        let existing = [
            on(pod("a", &[json!({"cpu": "3000m", "memory": "5000"})]), "node1"),
            on(pod("b", &[json!({"cpu": "3000m", "memory": "5000"})]), "node2"),
        ];
        assert_eq!(scores(&spread, &none, &diff, &existing), vec![38, 50]);

        let foo = Fit::from_args(Some(&json!({"scoringStrategy": {"type": "RequestedToCapacityRatio",
            "resources": [{"name": "intel.com/foo", "weight": 1}],
            "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 1}]}}})))
        .unwrap();
        let nodes = [
            node("node1", json!({"cpu": "4000m", "memory": "10000Mi", "intel.com/foo": "8"})),
            node("node2", json!({"cpu": "4000m", "memory": "10000Mi", "intel.com/foo": "4"})),
        ];
        assert_eq!(scores(&foo, &none, &nodes, &[]), vec![0, 0]);
        let foo2 = pod("p", &[json!({"intel.com/foo": "2"})]);
        assert_eq!(scores(&foo, &foo2, &nodes, &[empty_on("node1", "a")]), vec![2, 5]);
        assert_eq!(
            scores(&foo, &foo2, &nodes, &[on(pod("a", &[json!({"intel.com/foo": "2"})]), "node2")]),
            vec![2, 10]
        );
        assert_eq!(scores(&foo, &pod("p", &[json!({"intel.com/foo": "4"})]), &nodes, &[]), vec![5, 10]);
    }

    #[test]
    fn extended_resources_score_only_when_requested_and_offered() {
        // Upstream RequestedToCapacityRatio extended-resource case: intel.com/foo weight 5 with cpu/memory weight 1.
        let nodes = [
            node("n1", json!({"cpu": "4000m", "memory": "10000", "intel.com/foo": "4"})),
            node("n2", json!({"cpu": "4000m", "memory": "10000"})),
        ];
        let fit = Fit::from_args(Some(&json!({"scoringStrategy": {"type": "MostAllocated",
            "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": "intel.com/foo", "weight": 5}]}}))).unwrap();
        let p = pod("p", &[json!({"cpu": "2000m", "memory": "5000", "intel.com/foo": "2"})]);
        // n1: (50 + 50 + 50*5)/7 = 50; n2 lacks foo: (50+50)/2 = 50.
        assert_eq!(scores(&fit, &p, &nodes, &[]), vec![50, 50]);
        let p = pod("p", &[json!({"cpu": "2000m", "memory": "5000", "intel.com/foo": "4"})]);
        // n1: (50 + 50 + 100*5)/7 = 85.
        assert_eq!(scores(&fit, &p, &nodes, &[])[0], 85);
        // Not requested: foo is left out → (50+50)/2.
        let p = pod("p", &[json!({"cpu": "2000m", "memory": "5000"})]);
        assert_eq!(scores(&fit, &p, &nodes, &[])[0], 50);
    }

    #[test]
    fn args_validation_messages_are_upstreams() {
        let err = |v: serde_json::Value| Fit::from_args(Some(&v)).err().unwrap();
        assert_eq!(
            err(json!({"scoringStrategy": {"type": "Invalid"}})),
            "scoringStrategy.type: Unsupported value: \"Invalid\": supported values: \"LeastAllocated\", \"MostAllocated\", \"RequestedToCapacityRatio\""
        );
        assert_eq!(
            err(json!({"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 101}]}})),
            "scoringStrategy.resources[0].weight: Invalid value: 101: resource weight of cpu not in valid range (0, 100]"
        );
        assert_eq!(
            err(json!({"ignoredResourceGroups": ["example.com/aaa"]})),
            "ignoredResourceGroups[0]: Invalid value: \"example.com/aaa\": resource group name can't contain '/'"
        );
        assert_eq!(
            err(json!({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [
                {"utilization": 50, "score": 5}, {"utilization": 10, "score": 11}]}}})),
            "[scoringStrategy.shape[1].utilization: Invalid value: 10: values must be sorted in increasing order, \
scoringStrategy.shape[1].score: Invalid value: 11: not in valid range [0, 10]]"
        );
        assert_eq!(
            err(
                json!({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": []}}})
            ),
            "scoringStrategy.shape: Required value: at least one point must be specified"
        );
        assert!(Fit::from_args(Some(&json!({"ignoredResources": ["example.com/aaa"]}))).is_ok());
    }
}
