//! DefaultPreemption (upstream `plugins/defaultpreemption` with
//! `framework/preemption`): when no node fits, find nodes where evicting
//! lower-priority pods would make room, pick one as upstream does, evict
//! its victims (DisruptionTarget condition, then delete) and nominate the
//! node for the pod.
//!
//! - [`candidates`]: eligibility, the per-node dry run, PDBs, picking the node (pure);
//! - [`prepare`]: the API writes for the chosen candidate.

mod candidates;
mod prepare;
#[cfg(test)]
mod tests;

use std::sync::{Arc, Mutex};

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use serde::Deserialize;

use crate::framework::{
    Code, CycleState, ExtensionPoint, Handle, Lister, NodeToStatus, NominatingMode, Plugin, PodInfo, PostFilterArgs,
    PostFilterResult, Status,
};
use crate::plugins::names;

pub use candidates::{Candidate, NO_VICTIMS_REASON, PREEMPTION_NOT_HELPFUL_REASON};

/// `DefaultPreemptionArgs` (kubescheduler.config.k8s.io/v1), camelCase.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct DefaultPreemptionArgs {
    /// Candidates to find, as a percentage of the nodes (0–100, default 10).
    pub min_candidate_nodes_percentage: i32,
    /// At least this many candidates (default 100).
    pub min_candidate_nodes_absolute: i32,
}

impl Default for DefaultPreemptionArgs {
    fn default() -> Self {
        DefaultPreemptionArgs { min_candidate_nodes_percentage: 10, min_candidate_nodes_absolute: 100 }
    }
}

/// Upstream `ValidateDefaultPreemptionArgs` (errors joined as upstream's
/// aggregate: `[a, b]` when several).
fn validate(args: &DefaultPreemptionArgs) -> Result<(), String> {
    let (p, a) = (args.min_candidate_nodes_percentage, args.min_candidate_nodes_absolute);
    let mut errs = Vec::new();
    if !(0..=100).contains(&p) {
        errs.push(format!("minCandidateNodesPercentage: Invalid value: {p}: not in valid range [0, 100]"));
    }
    if a < 0 {
        errs.push(format!("minCandidateNodesAbsolute: Invalid value: {a}: not in valid range [0, inf)"));
    }
    if p == 0 && a == 0 {
        errs.push(format!(
            "minCandidateNodesPercentage: Invalid value: {p}: cannot be zero at the same time as minCandidateNodesAbsolute"
        ));
        errs.push(format!(
            "minCandidateNodesAbsolute: Invalid value: {a}: cannot be zero at the same time as minCandidateNodesPercentage"
        ));
    }
    match errs.len() {
        0 => Ok(()),
        1 => Err(errs.remove(0)),
        _ => Err(format!("[{}]", errs.join(", "))),
    }
}

/// The DefaultPreemption plugin.
pub struct DefaultPreemption {
    args: DefaultPreemptionArgs,
    pdbs: Arc<dyn Lister<PodDisruptionBudget>>,
    client: Option<kube::Client>,
    /// splitmix64 state for the random offset into the candidate nodes.
    rng: Mutex<u64>,
}

/// Builds the plugin from `DefaultPreemptionArgs`, seeding the offset
/// generator from the clock.
pub fn new(args: Option<&serde_json::Value>, handle: &Handle) -> Result<Arc<dyn Plugin>, String> {
    let seed =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
    Ok(Arc::new(DefaultPreemption::with_seed(args, handle, seed)?))
}

impl DefaultPreemption {
    /// The plugin with the offset generator seeded with `seed` (so a run
    /// can be replayed).
    pub fn with_seed(
        args: Option<&serde_json::Value>,
        handle: &Handle,
        seed: u64,
    ) -> Result<DefaultPreemption, String> {
        let args: DefaultPreemptionArgs = match args {
            Some(v) => serde_json::from_value(v.clone()).map_err(|e| e.to_string())?,
            None => DefaultPreemptionArgs::default(),
        };
        validate(&args)?;
        Ok(DefaultPreemption {
            args,
            pdbs: handle.listers.pdbs.clone(),
            client: handle.client.clone(),
            rng: Mutex::new(seed),
        })
    }

    /// A uniformly drawn integer in `0..n` (n > 0), splitmix64.
    fn random_below(&self, n: usize) -> usize {
        let mut s = self.rng.lock().unwrap();
        *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z % n as u64) as usize
    }

    /// Upstream `calculateNumCandidates`: `numNodes × percentage / 100`,
    /// at least the absolute minimum, at most `numNodes`.
    fn num_candidates(&self, num_nodes: usize) -> usize {
        let n = num_nodes * self.args.min_candidate_nodes_percentage as usize / 100;
        n.max(self.args.min_candidate_nodes_absolute as usize).min(num_nodes)
    }
}

#[async_trait::async_trait]
impl Plugin for DefaultPreemption {
    fn name(&self) -> &'static str {
        names::DEFAULT_PREEMPTION
    }

    fn extension_points(&self) -> &'static [ExtensionPoint] {
        &[ExtensionPoint::PostFilter]
    }

    /// Upstream `Evaluator.Preempt`, with the message prefixed
    /// `preemption: ` as DefaultPreemption's PostFilter does (the core
    /// appends it to the FitError: `… preemption: 0/3 nodes are available:
    /// 3 No preemption victims found for incoming pod..`).
    async fn post_filter(
        &self,
        args: &PostFilterArgs<'_>,
        state: &CycleState,
        pod: &PodInfo,
        statuses: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        let (result, status) = self.preempt(args, state, pod, statuses).await;
        let msg = status.message();
        if msg.is_empty() {
            return (result, status);
        }
        (result, Status::new(status.code, format!("preemption: {msg}")))
    }
}

impl DefaultPreemption {
    async fn preempt(
        &self,
        args: &PostFilterArgs<'_>,
        state: &CycleState,
        pod: &PodInfo,
        statuses: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        if let Err(msg) = candidates::pod_eligible_to_preempt_others(pod, args.snapshot, statuses) {
            tracing::debug!(component = "kube-scheduler", pod = %pod.key(), reason = msg, "pod is not eligible for preemption");
            return (None, Status::new(Code::Unschedulable, msg));
        }
        let potential = candidates::potential_nodes(args.snapshot, statuses);
        let pdbs = self.pdbs.list();
        let (found, node_statuses) = if potential.is_empty() {
            (Vec::new(), NodeToStatus::default())
        } else {
            let offset = self.random_below(potential.len());
            let n = self.num_candidates(potential.len());
            match candidates::dry_run_preemption(args.runner, state, pod, &potential, &pdbs, offset, n) {
                Ok(r) => r,
                Err(e) => return (None, Status::error(e)),
            }
        };
        if found.is_empty() {
            let msg = candidates::no_candidates_message(args.snapshot.len(), node_statuses);
            let clear = PostFilterResult { nominated_node_name: String::new(), mode: NominatingMode::Override };
            return (Some(clear), Status::new(Code::Unschedulable, msg));
        }
        let Some(best) = candidates::select_candidate(&found) else {
            return (None, Status::new(Code::Unschedulable, "no candidate node for preemption"));
        };
        tracing::info!(component = "kube-scheduler", pod = %pod.key(), node = %best.name,
            victims = best.victims.len(), "preempting");
        if let Some(client) = &self.client {
            if let Err(e) = prepare::prepare_candidate(client, best, pod).await {
                return (None, Status::error(e));
            }
        }
        (
            Some(PostFilterResult { nominated_node_name: best.name.clone(), mode: NominatingMode::Override }),
            Status::success(),
        )
    }
}
