//! NodeResourcesBalancedAllocation (upstream
//! `noderesources/balanced_allocation.go`): favors nodes whose requested
//! fractions of the configured resources (cpu and memory by default) are
//! close to each other: score = (1 − standard deviation of the fractions)
//! × 100, each fraction capped at 1. Uses plain requests (no non-zero
//! defaults); a pod requesting none of the resources is skipped at
//! PreScore (upstream 1.33, kubernetes#129138).

use std::collections::BTreeSet;
use std::sync::Arc;

use rkube_apimachinery::validation::field::{ErrorList, FieldError, Path};
use serde::Deserialize;

use super::{default_weights, pod_request_list, requested_and_allocatable, ResourceSpec};
use crate::framework::*;
use crate::plugins::names;

const PRE_SCORE_KEY: &str = "PreScoreNodeResourcesBalancedAllocation";

/// `NodeResourcesBalancedAllocationArgs` (v1).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BalancedAllocationArgs {
    /// The resources balanced (empty = cpu and memory); weights must be 1.
    #[serde(default)]
    pub resources: Vec<ResourceSpec>,
}

/// The NodeResourcesBalancedAllocation plugin.
pub struct BalancedAllocation {
    resources: Vec<ResourceSpec>,
}

/// Builds the plugin from `NodeResourcesBalancedAllocationArgs`; Err in
/// upstream's validation wording (duplicate names, weight ≠ 1).
pub fn new(args: Option<&serde_json::Value>, _handle: &Handle) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(BalancedAllocation::from_args(args)?))
}

impl BalancedAllocation {
    /// Parses, defaults and validates the args.
    pub fn from_args(args: Option<&serde_json::Value>) -> Result<BalancedAllocation, String> {
        let a: BalancedAllocationArgs = match args {
            Some(v) => serde_json::from_value(v.clone()).map_err(|e| e.to_string())?,
            None => BalancedAllocationArgs::default(),
        };
        let resources = default_weights(a.resources);
        let mut errs = ErrorList::new();
        let mut seen = BTreeSet::new();
        let path = Path::nil().child("resources");
        for (i, r) in resources.iter().enumerate() {
            if !seen.insert(r.name.clone()) {
                errs.push(FieldError::duplicate(&path.index(i).child("name"), r.name.as_str()));
            }
            if r.weight != 1 {
                errs.push(FieldError::invalid(&path.index(i).child("weight"), r.weight, "must be 1"));
            }
        }
        if let Some(m) = errs.aggregate_message() {
            return Err(m);
        }
        Ok(BalancedAllocation { resources })
    }
}

/// Upstream `balancedResourceScorer`: fractions of the resources with
/// non-zero allocatable; two → |f1 − f2| / 2; more → population std-dev.
pub fn balanced_score(requested: &[i64], allocatable: &[i64]) -> i64 {
    let fractions: Vec<f64> = requested
        .iter()
        .zip(allocatable)
        .filter(|(_, &a)| a != 0)
        .map(|(&r, &a)| (r as f64 / a as f64).min(1.0))
        .collect();
    let std = match fractions.len() {
        2 => ((fractions[0] - fractions[1]) / 2.0).abs(),
        n if n > 2 => {
            let mean = fractions.iter().sum::<f64>() / n as f64;
            (fractions.iter().map(|f| (f - mean) * (f - mean)).sum::<f64>() / n as f64).sqrt()
        }
        _ => 0.0,
    };
    ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
}

#[async_trait::async_trait]
impl Plugin for BalancedAllocation {
    fn name(&self) -> &'static str {
        names::NODE_RESOURCES_BALANCED_ALLOCATION
    }

    fn extension_points(&self) -> &'static [ExtensionPoint] {
        &[ExtensionPoint::PreScore, ExtensionPoint::Score]
    }

    fn pre_score(&self, state: &mut CycleState, pod: &PodInfo, _nodes: &[Arc<NodeInfo>]) -> Status {
        let reqs = pod_request_list(pod, &self.resources, true);
        if reqs.iter().all(|&r| r == 0) {
            // Best-effort pods would otherwise pile onto one node.
            return Status::skip();
        }
        state.write(PRE_SCORE_KEY, reqs);
        Status::success()
    }

    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> (i64, Status) {
        let computed;
        let reqs = match state.read::<Vec<i64>>(PRE_SCORE_KEY) {
            Some(r) => r,
            None => {
                computed = pod_request_list(pod, &self.resources, true);
                if computed.iter().all(|&r| r == 0) {
                    return (0, Status::success());
                }
                &computed
            }
        };
        let (requested, allocatable) = requested_and_allocatable(node, &self.resources, reqs, true);
        (balanced_score(&requested, &allocatable), Status::success())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testutil::*;
    use super::*;

    fn run(
        ba: &BalancedAllocation,
        p: &k8s_openapi::api::core::v1::Pod,
        nodes: &[k8s_openapi::api::core::v1::Node],
        pods: &[k8s_openapi::api::core::v1::Pod],
    ) -> (Status, Vec<i64>) {
        let snap = Snapshot::from_objects(nodes, pods);
        let pi = info(p.clone());
        let mut state = CycleState::default();
        let s = ba.pre_score(&mut state, &pi, &snap.nodes);
        (s, snap.nodes.iter().map(|n| ba.score(&state, &pi, n).0).collect())
    }

    /// Cases of upstream TestNodeResourcesBalancedAllocation.
    #[test]
    fn balanced_allocation_scores_match_upstream_table() {
        let ba = BalancedAllocation::from_args(None).unwrap();
        let machines = [
            node("node1", json!({"cpu": "4000m", "memory": "10000"})),
            node("node2", json!({"cpu": "6000m", "memory": "10000"})),
        ];
        let cpu_and_memory =
            pod("p", &[json!({"cpu": "1000m", "memory": "2000"}), json!({"cpu": "2000m", "memory": "3000"})]);
        // Fractions node1 0.75/0.5 → std 0.125 → 87; node2 0.5/0.5 → 100.
        assert_eq!(run(&ba, &cpu_and_memory, &machines, &[]).1, vec![87, 100]);
        // Existing pods count: node1 gets cpu_only (3000m) already → cpu 6000/4000 capped at 1, memory 0.5 → 75.
        let cpu_only = on(pod("e", &[json!({"cpu": "1000m"}), json!({"cpu": "2000m"})]), "node1");
        assert_eq!(run(&ba, &cpu_and_memory, &machines, &[cpu_only]).1, vec![75, 100]);
        let m2 = [
            node("node1", json!({"cpu": "10000m", "memory": "20000"})),
            node("node2", json!({"cpu": "10000m", "memory": "20000"})),
        ];
        let existing = [on(pod("a", &[json!({"cpu": "1000m", "memory": "2000"})]), "node1")];
        // node1: cpu (1000+3000)/10000 = 0.4, memory (2000+5000)/20000 = 0.35 → std 0.025 → 97; node2 0.3/0.25 → 97.
        assert_eq!(run(&ba, &cpu_and_memory, &m2, &existing).1, vec![97, 97]);
    }

    #[test]
    fn best_effort_pods_skip_prescore() {
        let ba = BalancedAllocation::from_args(None).unwrap();
        let machines = [node("node1", json!({"cpu": "4000m", "memory": "10000"}))];
        let (s, _) = run(&ba, &pod("p", &[json!({})]), &machines, &[]);
        assert!(s.is_skip());
    }

    #[test]
    fn three_resources_use_the_population_std_dev() {
        // Upstream "include scalar resource on a node for balanced resource allocation":
        // fractions cpu 0.5, memory 0.5, nvidia.com/gpu 1/4 → mean 0.41667, std 0.11785 → 88.
        let ba = BalancedAllocation::from_args(Some(&json!({"resources": [{"name": "cpu", "weight": 1},
            {"name": "memory", "weight": 1}, {"name": "nvidia.com/gpu", "weight": 1}]})))
        .unwrap();
        let machines = [node("n", json!({"cpu": "4000m", "memory": "10000", "nvidia.com/gpu": "4"}))];
        let p = pod("p", &[json!({"cpu": "2000m", "memory": "5000", "nvidia.com/gpu": "1"})]);
        assert_eq!(run(&ba, &p, &machines, &[]).1, vec![88]);
        // A scalar the pod does not request is left out: 0.5/0.5 → 100.
        let p = pod("p", &[json!({"cpu": "2000m", "memory": "5000"})]);
        assert_eq!(run(&ba, &p, &machines, &[]).1, vec![100]);
    }

    #[test]
    fn args_validation_as_upstream() {
        let err = BalancedAllocation::from_args(Some(&json!({"resources": [{"name": "cpu", "weight": 2},
            {"name": "cpu", "weight": 1}]})))
        .err()
        .unwrap();
        assert_eq!(
            err,
            "[resources[0].weight: Invalid value: 2: must be 1, resources[1].name: Duplicate value: \"cpu\"]"
        );
    }
}
