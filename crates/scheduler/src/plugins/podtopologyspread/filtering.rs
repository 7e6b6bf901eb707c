//! `DoNotSchedule` constraints (upstream `podtopologyspread/filtering.go`).

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use super::common::{count_pods_match_selector, node_labels, node_labels_match, pod_labels, Constraint};
use super::PodTopologySpread;
use crate::framework::{Code, CycleState, NodeInfo, PodInfo, Snapshot, Status};

/// The skew on the node would exceed maxSkew.
pub const ERR_REASON_CONSTRAINTS_NOT_MATCH: &str = "node(s) didn't match pod topology spread constraints";
/// The node lacks a constraint's topology key (UnschedulableAndUnresolvable).
pub const ERR_REASON_NODE_LABEL_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";

const PRE_FILTER_STATE_KEY: &str = "PreFilterPodTopologySpread";

/// The two smallest (topology value, matching pods) of one constraint;
/// `[0]` always holds the minimum (upstream `criticalPaths`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct CriticalPaths([(String, i64); 2]);

impl CriticalPaths {
    fn new() -> CriticalPaths {
        CriticalPaths([(String::new(), i32::MAX as i64), (String::new(), i32::MAX as i64)])
    }

    /// Upstream `criticalPaths.update`.
    fn update(&mut self, value: &str, num: i64) {
        let p = &mut self.0;
        let i = if p[0].0 == value {
            Some(0)
        } else if p[1].0 == value {
            Some(1)
        } else {
            None
        };
        match i {
            Some(i) => {
                p[i].1 = num;
                if p[0].1 > p[1].1 {
                    p.swap(0, 1);
                }
            }
            None if num < p[0].1 => {
                p[1] = p[0].clone();
                p[0] = (value.to_string(), num);
            }
            None if num < p[1].1 => p[1] = (value.to_string(), num),
            None => {}
        }
    }

    pub(super) fn min(&self) -> i64 {
        self.0[0].1
    }
}

/// What PreFilter computed, per constraint (upstream `preFilterState`).
#[derive(Clone, Debug)]
pub(super) struct PreFilterState {
    pub(super) constraints: Arc<Vec<Constraint>>,
    pub(super) critical_paths: Vec<CriticalPaths>,
    /// Matching pods by topology value, per constraint.
    pub(super) tp_value_to_match_num: Vec<HashMap<String, i64>>,
    /// Eligible domains per constraint (for minDomains).
    pub(super) domains_num: Vec<usize>,
}

impl PreFilterState {
    /// The global minimum for constraint `i`: 0 while fewer than
    /// minDomains domains are eligible.
    pub(super) fn min_match_num(&self, i: usize) -> i64 {
        if (self.domains_num[i] as i64) < self.constraints[i].min_domains {
            0
        } else {
            self.critical_paths[i].min()
        }
    }
}

impl PodTopologySpread {
    /// Upstream PreFilter: counts matching pods per domain over every node
    /// that has all the topology keys and passes the inclusion policies;
    /// Skip when the pod has no DoNotSchedule constraint.
    pub(super) fn compute_pre_filter(&self, state: &mut CycleState, pod: &PodInfo, snapshot: &Snapshot) -> Status {
        let constraints = match self.constraints(&pod.pod, "DoNotSchedule") {
            Ok(c) => c,
            Err(e) => return Status::error(e),
        };
        if constraints.is_empty() {
            return Status::skip();
        }
        let ns = pod.pod.metadata.namespace.as_deref().unwrap_or("");
        let mut tp: Vec<HashMap<String, i64>> = vec![HashMap::new(); constraints.len()];
        for n in &snapshot.nodes {
            let Some(node) = n.node.as_deref() else { continue };
            let labels = node_labels(n);
            if !node_labels_match(labels, &constraints) {
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if !c.matches_node_inclusion_policies(&pod.pod, node) {
                    continue;
                }
                let count = count_pods_match_selector(&n.pods, &c.selector, ns);
                *tp[i].entry(labels[&c.topology_key].clone()).or_default() += count;
            }
        }
        let mut critical_paths = Vec::with_capacity(constraints.len());
        for m in &tp {
            let mut cp = CriticalPaths::new();
            // Sorted so ties settle the same way on every run.
            let mut entries: Vec<_> = m.iter().collect();
            entries.sort();
            for (v, n) in entries {
                cp.update(v, *n);
            }
            critical_paths.push(cp);
        }
        let domains_num = tp.iter().map(HashMap::len).collect();
        state.write(
            PRE_FILTER_STATE_KEY,
            PreFilterState {
                constraints: Arc::new(constraints),
                critical_paths,
                tp_value_to_match_num: tp,
                domains_num,
            },
        );
        Status::success()
    }
}

/// AddPod (`delta` 1) / RemovePod (`delta` -1) of `changed` on `node`
/// while scheduling `preemptor` (upstream `updateWithPod`): only pods of
/// the preemptor's namespace, on nodes that count, change the counts.
pub(super) fn update_with_pod(
    state: &mut CycleState,
    changed: &Pod,
    preemptor: &Pod,
    node: &NodeInfo,
    delta: i64,
) -> Status {
    let Some(s) = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY) else { return Status::success() };
    let Some(n) = node.node.as_deref() else { return Status::success() };
    if changed.metadata.namespace != preemptor.metadata.namespace {
        return Status::success();
    }
    let labels = node_labels(node);
    if !node_labels_match(labels, &s.constraints) {
        return Status::success();
    }
    let mut s = s.clone();
    let changed_labels = pod_labels(changed);
    for i in 0..s.constraints.len() {
        let c = &s.constraints[i];
        if !c.selector.matches(changed_labels) || !c.matches_node_inclusion_policies(preemptor, n) {
            continue;
        }
        let v = labels[&c.topology_key].clone();
        let e = s.tp_value_to_match_num[i].entry(v.clone()).or_default();
        *e += delta;
        let num = *e;
        s.critical_paths[i].update(&v, num);
    }
    state.write(PRE_FILTER_STATE_KEY, s);
    Status::success()
}

/// Upstream Filter: every DoNotSchedule constraint needs its topology key
/// on the node and `matching pods in the node's domain + (1 if the pod
/// matches its own selector) − global minimum ≤ maxSkew`.
pub(super) fn filter(state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
    let Some(s) = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY) else {
        return Status::error(format!("reading {PRE_FILTER_STATE_KEY:?} from cycleState: not found"));
    };
    let labels = node_labels(node);
    let own = pod_labels(&pod.pod);
    for (i, c) in s.constraints.iter().enumerate() {
        let Some(v) = labels.get(&c.topology_key) else {
            return Status::new(Code::UnschedulableAndUnresolvable, ERR_REASON_NODE_LABEL_NOT_MATCH);
        };
        let self_match = i64::from(c.selector.matches(own));
        let match_num = s.tp_value_to_match_num[i].get(v).copied().unwrap_or(0);
        let skew = match_num + self_match - s.min_match_num(i);
        if skew > c.max_skew {
            tracing::trace!(
                component = "kube-scheduler",
                node = node.node_name(),
                skew,
                "topology spread skew exceeds maxSkew"
            );
            return Status::new(Code::Unschedulable, ERR_REASON_CONSTRAINTS_NOT_MATCH);
        }
    }
    Status::success()
}
