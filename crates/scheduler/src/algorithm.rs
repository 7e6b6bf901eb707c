//! The pure part of a scheduling cycle (upstream `schedulePod`,
//! `findNodesThatFitPod`, `prioritizeNodes`, `selectHost` and `FitError`):
//! given a profile, a snapshot and a pod, the chosen node or why none fits.
//! No API calls here, so tests and the bench run it directly.
//!
//! Determinism: the feasible set is exactly what a sequential walk from the
//! rotating start index finds (Filter runs in parallel rounds whose results
//! are consumed in node order), and score ties are broken by reservoir
//! sampling over nodes in that order with a seedable generator, so a
//! parallel run decides as a sequential one with the same seed.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use crate::framework::parallel;
use crate::framework::runtime::Framework;
use crate::framework::{Code, CycleState, FilterRunner, NodeInfo, NodeToStatus, PodInfo, Snapshot, Status};

/// Upstream `minFeasibleNodesToFind`.
pub const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// Upstream `minFeasibleNodesPercentageToFind`.
pub const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: i64 = 5;
/// Upstream `ErrNoNodesAvailable`'s message.
pub const NO_NODES_AVAILABLE: &str = "no nodes available to schedule pods";

/// A small deterministic generator (splitmix64) for tie-breaking.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// How many feasible nodes to find among `num_all_nodes` (upstream
/// `numFeasibleNodesToFind`): all below 100 nodes or at 100 %; else the
/// configured percentage, or adaptively `50 - n/125` % (at least 5 %),
/// and never fewer than 100.
pub fn num_feasible_nodes_to_find(percentage: i32, num_all_nodes: usize) -> usize {
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND || percentage >= 100 {
        return num_all_nodes;
    }
    let mut pct = percentage as i64;
    if pct <= 0 {
        pct = 50 - num_all_nodes as i64 / 125;
        if pct < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND {
            pct = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND;
        }
    }
    let n = (num_all_nodes as i64 * pct / 100) as usize;
    n.max(MIN_FEASIBLE_NODES_TO_FIND)
}

/// Why a pod fits nowhere (upstream `Diagnosis`).
#[derive(Clone, Debug, Default)]
pub struct Diagnosis {
    /// Each rejected node's status.
    pub node_to_status: NodeToStatus,
    /// Plugins that rejected the pod somewhere (the queue's hints).
    pub unschedulable_plugins: BTreeSet<&'static str>,
    /// Plugins that returned Pending.
    pub pending_plugins: BTreeSet<&'static str>,
    /// A PreFilter rejection's message.
    pub pre_filter_msg: String,
    /// PostFilter's message (e.g. preemption's).
    pub post_filter_msg: String,
}

impl Diagnosis {
    fn add_plugin_status(&mut self, s: &Status) {
        if s.plugin.is_empty() {
            return;
        }
        match s.code {
            Code::Unschedulable | Code::UnschedulableAndUnresolvable => {
                self.unschedulable_plugins.insert(s.plugin);
            }
            Code::Pending => {
                self.pending_plugins.insert(s.plugin);
            }
            _ => {}
        }
    }
}

/// No node fits (upstream `FitError`).
#[derive(Clone, Debug)]
pub struct FitError {
    /// How many nodes the snapshot had.
    pub num_all_nodes: usize,
    /// Why.
    pub diagnosis: Diagnosis,
}

/// Upstream `FitError.Error()`: `0/N nodes are available: <count reason, …
/// sorted>.` (or `<PreFilter message>.`), then ` <PostFilter message>` as is.
impl fmt::Display for FitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut msg = format!("0/{} nodes are available:", self.num_all_nodes);
        let d = &self.diagnosis;
        if !d.pre_filter_msg.is_empty() {
            msg.push_str(&format!(" {}.", d.pre_filter_msg));
        } else {
            let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
            for s in d.node_to_status.statuses.values() {
                for r in &s.reasons {
                    *reasons.entry(r.as_str()).or_default() += 1;
                }
            }
            let listed = d.node_to_status.statuses.len();
            if listed < self.num_all_nodes {
                if let Some(absent) = &d.node_to_status.absent {
                    for r in &absent.reasons {
                        *reasons.entry(r.as_str()).or_default() += self.num_all_nodes - listed;
                    }
                }
            }
            let mut parts: Vec<String> = reasons.iter().map(|(r, n)| format!("{n} {r}")).collect();
            parts.sort();
            if !parts.is_empty() {
                msg.push_str(&format!(" {}.", parts.join(", ")));
            }
        }
        // PostFilter messages carry their own period (preemption's is a FitError too).
        if !d.post_filter_msg.is_empty() {
            msg.push_str(&format!(" {}", d.post_filter_msg));
        }
        f.write_str(&msg)
    }
}

/// Why [`schedule_pod`] found no node.
#[derive(Clone, Debug)]
pub enum ScheduleError {
    /// The snapshot has no nodes.
    NoNodes,
    /// No node fits (boxed: the diagnosis is large).
    Fit(Box<FitError>),
    /// A plugin failed.
    Internal(Status),
}

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScheduleError::NoNodes => f.write_str(NO_NODES_AVAILABLE),
            ScheduleError::Fit(e) => e.fmt(f),
            ScheduleError::Internal(s) => f.write_str(&s.message()),
        }
    }
}

/// The chosen node (upstream `ScheduleResult`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleResult {
    /// The node.
    pub suggested_host: String,
    /// Nodes Filter looked at.
    pub evaluated_nodes: usize,
    /// Nodes that passed.
    pub feasible_nodes: usize,
}

/// State carried from cycle to cycle: the rotating start index and the
/// tie-breaking generator (upstream `Scheduler.nextStartNodeIndex`).
#[derive(Clone, Debug)]
pub struct Cursor {
    /// Where the next Filter walk starts.
    pub next_start_node_index: usize,
    /// Tie-breaking.
    pub rng: Rng,
}

impl Cursor {
    /// A cursor at 0 with the generator seeded by `seed`.
    pub fn new(seed: u64) -> Cursor {
        Cursor { next_start_node_index: 0, rng: Rng::new(seed) }
    }
}

/// Runs PreFilter and Filter (upstream `findNodesThatFitPod`); returns the
/// feasible nodes in walk order and the diagnosis of the rest.
pub fn find_nodes_that_fit(
    fwk: &Framework,
    state: &mut CycleState,
    pod: &PodInfo,
    snapshot: &Snapshot,
    cursor: &mut Cursor,
) -> Result<(Vec<Arc<NodeInfo>>, Diagnosis), Status> {
    let mut diagnosis = Diagnosis::default();
    let all = &snapshot.nodes;
    let (pre_res, status, rejected) = fwk.run_pre_filter(state, pod, snapshot);
    if !status.is_success() {
        if !status.is_rejected() {
            return Err(status);
        }
        diagnosis.node_to_status.absent = Some(status.clone());
        diagnosis.pre_filter_msg = status.message();
        diagnosis.unschedulable_plugins = rejected;
        if status.code == Code::Pending {
            diagnosis.pending_plugins = diagnosis.unschedulable_plugins.clone();
        }
        return Ok((Vec::new(), diagnosis));
    }
    // Nominated node first (upstream `evaluateNominatedNode`).
    if let Some(nnn) = pod.pod.status.as_ref().and_then(|s| s.nominated_node_name.as_deref()).filter(|n| !n.is_empty())
    {
        if let Some(node) = snapshot.get(nnn) {
            if fwk.run_filter_with_nominated_pods(state, pod, node).is_success() {
                return Ok((vec![node.clone()], diagnosis));
            }
        }
    }
    let narrowed: Vec<Arc<NodeInfo>>;
    let nodes: &[Arc<NodeInfo>] = match pre_res.and_then(|r| r.node_names) {
        Some(names) => {
            diagnosis.node_to_status.absent = Some(Status::unresolvable(format!(
                "node(s) didn't satisfy plugin(s) [{}]",
                rejected.iter().copied().collect::<Vec<_>>().join(" ")
            )));
            // Keep snapshot order (it is the walk order).
            narrowed = all.iter().filter(|n| names.contains(n.node_name())).cloned().collect();
            &narrowed
        }
        // Borrowed: cloning thousands of Arcs per cycle showed in profiles.
        None => all,
    };
    let feasible = find_nodes_that_pass_filters(fwk, state, pod, nodes, &mut diagnosis, cursor)?;
    Ok((feasible, diagnosis))
}

/// Filter over `nodes` from the cursor, in parallel rounds, stopping once
/// enough feasible nodes are found (upstream `findNodesThatPassFilters`).
fn find_nodes_that_pass_filters(
    fwk: &Framework,
    state: &CycleState,
    pod: &PodInfo,
    nodes: &[Arc<NodeInfo>],
    diagnosis: &mut Diagnosis,
    cursor: &mut Cursor,
) -> Result<Vec<Arc<NodeInfo>>, Status> {
    let n = nodes.len();
    if n == 0 {
        return Ok(Vec::new());
    }
    let to_find = num_feasible_nodes_to_find(fwk.percentage_of_nodes_to_score, n);
    let start = cursor.next_start_node_index % n;
    if !fwk.has_filter_plugins() {
        let feasible: Vec<_> = (0..to_find).map(|i| nodes[(start + i) % n].clone()).collect();
        cursor.next_start_node_index = (start + feasible.len()) % n;
        return Ok(feasible);
    }
    let plan = fwk.filter_plan(state);
    let mut feasible = Vec::with_capacity(to_find.min(n));
    let mut processed = 0;
    while processed < n && feasible.len() < to_find {
        let want = to_find - feasible.len();
        let round = want.max(fwk.parallelism * 8).min(n - processed);
        let base = processed;
        let statuses = parallel::map(round, fwk.workers_for(round), |i| {
            let node = &nodes[(start + base + i) % n];
            fwk.run_filter_with_nominated_pods_planned(&plan, state, pod, node)
        });
        for (i, s) in statuses.into_iter().enumerate() {
            if feasible.len() >= to_find {
                break;
            }
            processed += 1;
            let node = &nodes[(start + base + i) % n];
            if s.code == Code::Error {
                return Err(s);
            }
            if s.is_success() {
                feasible.push(node.clone());
            } else {
                diagnosis.add_plugin_status(&s);
                diagnosis.node_to_status.statuses.insert(node.node_name().to_string(), s);
            }
        }
    }
    cursor.next_start_node_index = (start + processed) % n;
    Ok(feasible)
}

/// Index of the highest total, ties broken by reservoir sampling in order
/// (upstream `selectHost`). `None` when `totals` is empty.
pub fn select_host(totals: &[i64], rng: &mut Rng) -> Option<usize> {
    let mut best: Option<(usize, i64)> = None;
    let mut ties = 0u64;
    for (i, &s) in totals.iter().enumerate() {
        match best {
            Some((_, b)) if s < b => {}
            Some((_, b)) if s == b => {
                ties += 1;
                if rng.below(ties) == 0 {
                    best = Some((i, s));
                }
            }
            _ => {
                best = Some((i, s));
                ties = 1;
            }
        }
    }
    best.map(|(i, _)| i)
}

/// One pod's placement decision (upstream `schedulePod`), without
/// PostFilter (the async cycle runs it on a [`ScheduleError::Fit`]).
pub fn schedule_pod(
    fwk: &Framework,
    state: &mut CycleState,
    pod: &PodInfo,
    snapshot: &Snapshot,
    cursor: &mut Cursor,
) -> Result<ScheduleResult, ScheduleError> {
    if snapshot.is_empty() {
        return Err(ScheduleError::NoNodes);
    }
    let (feasible, diagnosis) =
        find_nodes_that_fit(fwk, state, pod, snapshot, cursor).map_err(ScheduleError::Internal)?;
    if feasible.is_empty() {
        return Err(ScheduleError::Fit(Box::new(FitError { num_all_nodes: snapshot.len(), diagnosis })));
    }
    let evaluated = feasible.len() + diagnosis.node_to_status.statuses.len();
    if feasible.len() == 1 {
        return Ok(ScheduleResult {
            suggested_host: feasible[0].node_name().to_string(),
            evaluated_nodes: evaluated,
            feasible_nodes: 1,
        });
    }
    let totals = fwk.run_score(state, pod, &feasible).map_err(ScheduleError::Internal)?;
    let i = select_host(&totals, &mut cursor.rng).expect("feasible nodes are not empty");
    Ok(ScheduleResult {
        suggested_host: feasible[i].node_name().to_string(),
        evaluated_nodes: evaluated,
        feasible_nodes: feasible.len(),
    })
}

#[cfg(test)]
mod tests;
