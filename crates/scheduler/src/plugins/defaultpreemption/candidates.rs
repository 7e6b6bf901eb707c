//! Finding and ranking preemption candidates (upstream
//! `framework/preemption/preemption.go` and DefaultPreemption's
//! `SelectVictimsOnNode`), without API calls.

use std::cmp::Ordering;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use rkube_apimachinery::selector::labels::LabelSelector;

use crate::algorithm::{Diagnosis, FitError};
use crate::framework::{Code, CycleState, FilterRunner, NodeInfo, NodeToStatus, PodInfo, Snapshot, Status};

/// A node's dry-run status when it has no lower-priority pod.
pub const NO_VICTIMS_REASON: &str = "No preemption victims found for incoming pod";
/// The status of nodes preemption did not try (their rejection cannot be
/// resolved by evicting pods).
pub const PREEMPTION_NOT_HELPFUL_REASON: &str = "Preemption is not helpful for scheduling";

/// A node where evicting `victims` lets the pod fit.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// The node.
    pub name: String,
    /// The pods to evict, highest priority first.
    pub victims: Vec<Arc<PodInfo>>,
    /// How many victims' eviction exceeds a PodDisruptionBudget.
    pub num_pdb_violations: usize,
}

/// `spec.priority` (0 when unset, as upstream `PodPriority`).
pub(super) fn priority(pod: &Pod) -> i32 {
    pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
}

/// `status.startTime` in nanoseconds, or now for pods not started
/// (upstream `GetPodStartTime`).
fn start_time(pod: &Pod) -> i128 {
    match pod.status.as_ref().and_then(|s| s.start_time.as_ref()) {
        Some(t) => t.0.as_nanosecond(),
        None => jiff::Timestamp::now().as_nanosecond(),
    }
}

/// Upstream `MoreImportantPod` as an ordering: higher priority first, then
/// the earlier started.
fn more_important_first(a: &Pod, b: &Pod) -> Ordering {
    priority(b).cmp(&priority(a)).then_with(|| start_time(a).cmp(&start_time(b)))
}

/// Whether the pod is being deleted because the scheduler preempted it.
fn terminating_by_preemption(p: &Pod) -> bool {
    if p.metadata.deletion_timestamp.is_none() {
        return false;
    }
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "DisruptionTarget"))
        .is_some_and(|c| c.status == "True" && c.reason.as_deref() == Some("PreemptionByScheduler"))
}

/// Upstream `PodEligibleToPreemptOthers`. Err: the reason, in upstream's
/// words.
pub(super) fn pod_eligible_to_preempt_others(
    pod: &PodInfo,
    snapshot: &Snapshot,
    statuses: &NodeToStatus,
) -> Result<(), &'static str> {
    let spec = pod.pod.spec.as_ref();
    if spec.and_then(|s| s.preemption_policy.as_deref()) == Some("Never") {
        return Err("not eligible due to preemptionPolicy=Never.");
    }
    let nominated = pod.pod.status.as_ref().and_then(|s| s.nominated_node_name.as_deref()).unwrap_or("");
    if nominated.is_empty() {
        return Ok(());
    }
    // The nominated node no longer fits at all: preempt again elsewhere.
    let code = statuses.statuses.get(nominated).or(statuses.absent.as_ref()).map(|s| s.code);
    if code == Some(Code::UnschedulableAndUnresolvable) {
        return Ok(());
    }
    if let Some(node) = snapshot.get(nominated) {
        let prio = priority(&pod.pod);
        if node.pods.iter().any(|p| priority(&p.pod) < prio && terminating_by_preemption(&p.pod)) {
            return Err("not eligible due to a terminating pod on the nominated node.");
        }
    }
    Ok(())
}

/// Nodes whose Filter status is Unschedulable (not
/// UnschedulableAndUnresolvable): evicting pods may help there. In
/// snapshot order.
pub(super) fn potential_nodes(snapshot: &Snapshot, statuses: &NodeToStatus) -> Vec<Arc<NodeInfo>> {
    let absent_unschedulable = statuses.absent.as_ref().is_some_and(|s| s.code == Code::Unschedulable);
    snapshot
        .nodes
        .iter()
        .filter(|n| match statuses.statuses.get(n.node_name()) {
            Some(s) => s.code == Code::Unschedulable,
            None => absent_unschedulable,
        })
        .cloned()
        .collect()
}

/// Splits `pods` (already ordered) into those whose eviction would exceed a
/// matching PDB's `disruptionsAllowed` and the rest, counting down each
/// budget as pods are taken (upstream `filterPodsWithPDBViolation`).
fn split_by_pdb_violation(
    pods: Vec<Arc<PodInfo>>,
    pdbs: &[Arc<PodDisruptionBudget>],
) -> (Vec<Arc<PodInfo>>, Vec<Arc<PodInfo>>) {
    let mut allowed: Vec<i32> = pdbs.iter().map(|p| p.status.as_ref().map_or(0, |s| s.disruptions_allowed)).collect();
    let selectors: Vec<Option<LabelSelector>> = pdbs
        .iter()
        .map(|p| {
            let sel = p.spec.as_ref().and_then(|s| s.selector.as_ref());
            let v = serde_json::to_value(sel).ok()?;
            LabelSelector::from_label_selector_json(&v).ok()
        })
        .collect();
    let (mut violating, mut ok) = (Vec::new(), Vec::new());
    for pi in pods {
        let m = &pi.pod.metadata;
        let mut violated = false;
        if let Some(labels) = m.labels.as_ref().filter(|l| !l.is_empty()) {
            for (i, pdb) in pdbs.iter().enumerate() {
                if pdb.metadata.namespace != m.namespace {
                    continue;
                }
                // A nil or empty selector matches nothing.
                let Some(sel) = &selectors[i] else { continue };
                if sel.is_empty() || !sel.matches(labels) {
                    continue;
                }
                let name = m.name.as_deref().unwrap_or("");
                // Already counted by the disruption controller.
                if pdb.status.as_ref().and_then(|s| s.disrupted_pods.as_ref()).is_some_and(|d| d.contains_key(name)) {
                    continue;
                }
                allowed[i] -= 1;
                if allowed[i] < 0 {
                    violated = true;
                }
            }
        }
        if violated {
            violating.push(pi);
        } else {
            ok.push(pi);
        }
    }
    (violating, ok)
}

/// Upstream `SelectVictimsOnNode`: remove every lower-priority pod; if the
/// pod then fits, add them back highest priority first (PDB-violating ones
/// before the others) keeping each that still lets it fit. Ok: the victims
/// (highest priority first) and how many violate a PDB; Err: the node's
/// status.
fn select_victims_on_node(
    runner: &dyn FilterRunner,
    state: &mut CycleState,
    pod: &PodInfo,
    node: &mut NodeInfo,
    pdbs: &[Arc<PodDisruptionBudget>],
) -> Result<(Vec<Arc<PodInfo>>, usize), Status> {
    let prio = priority(&pod.pod);
    let mut potential: Vec<Arc<PodInfo>> = node.pods.iter().filter(|p| priority(&p.pod) < prio).cloned().collect();
    for p in &potential {
        node.remove_pod(&p.pod);
        let s = runner.run_pre_filter_remove_pod(state, pod, p, node);
        if !s.is_success() {
            return Err(Status::error(s.message()));
        }
    }
    if potential.is_empty() {
        return Err(Status::unresolvable(NO_VICTIMS_REASON));
    }
    let s = runner.run_filter_with_nominated_pods(state, pod, node);
    if !s.is_success() {
        return Err(s);
    }
    potential.sort_by(|a, b| more_important_first(&a.pod, &b.pod));
    let (violating, non_violating) = split_by_pdb_violation(potential, pdbs);
    let mixed = !violating.is_empty() && !non_violating.is_empty();
    let mut victims = Vec::new();
    let mut num_violating = 0;
    let mut reprieve = |p: Arc<PodInfo>, state: &mut CycleState, node: &mut NodeInfo| -> Result<bool, Status> {
        node.add_pod(p.clone());
        let s = runner.run_pre_filter_add_pod(state, pod, &p, node);
        if !s.is_success() {
            return Err(Status::error(s.message()));
        }
        let fits = runner.run_filter_with_nominated_pods(state, pod, node).is_success();
        if !fits {
            node.remove_pod(&p.pod);
            let s = runner.run_pre_filter_remove_pod(state, pod, &p, node);
            if !s.is_success() {
                return Err(Status::error(s.message()));
            }
            victims.push(p);
        }
        Ok(fits)
    };
    for p in violating {
        if !reprieve(p, state, node)? {
            num_violating += 1;
        }
    }
    for p in non_violating {
        reprieve(p, state, node)?;
    }
    if mixed {
        victims.sort_by(|a, b| more_important_first(&a.pod, &b.pod));
    }
    Ok((victims, num_violating))
}

/// Upstream `DryRunPreemption`, sequentially: walks `potential` from
/// `offset` (wrapping) and stops once it has `num_candidates` candidates
/// with at least one that violates no PDB. Returns the candidates (non-PDB-
/// violating first, each list in walk order) and the status of each node
/// that is not a candidate. Err: a PreFilter extension failed.
pub(super) fn dry_run_preemption(
    runner: &dyn FilterRunner,
    state: &CycleState,
    pod: &PodInfo,
    potential: &[Arc<NodeInfo>],
    pdbs: &[Arc<PodDisruptionBudget>],
    offset: usize,
    num_candidates: usize,
) -> Result<(Vec<Candidate>, NodeToStatus), String> {
    let mut non_violating = Vec::new();
    let mut violating = Vec::new();
    let mut statuses = NodeToStatus::default();
    for i in 0..potential.len() {
        let mut node = potential[(offset + i) % potential.len()].as_ref().clone();
        let mut state = state.clone();
        match select_victims_on_node(runner, &mut state, pod, &mut node, pdbs) {
            Ok((victims, n)) => {
                let c = Candidate { name: node.node_name().to_string(), victims, num_pdb_violations: n };
                if n == 0 {
                    non_violating.push(c);
                } else {
                    violating.push(c);
                }
                if !non_violating.is_empty() && non_violating.len() + violating.len() >= num_candidates {
                    break;
                }
            }
            Err(s) if s.code == Code::Error => return Err(s.message()),
            Err(s) => {
                statuses.statuses.insert(node.node_name().to_string(), s);
            }
        }
    }
    non_violating.extend(violating);
    Ok((non_violating, statuses))
}

/// The FitError text preemption reports when no node is a candidate:
/// nodes it tried with their statuses, the rest as not helpful.
pub(super) fn no_candidates_message(num_all_nodes: usize, mut statuses: NodeToStatus) -> String {
    statuses.absent = Some(Status::unresolvable(PREEMPTION_NOT_HELPFUL_REASON));
    FitError { num_all_nodes, diagnosis: Diagnosis { node_to_status: statuses, ..Default::default() } }.to_string()
}

/// Earliest start time among the highest-priority victims (upstream
/// `GetEarliestPodStartTime`).
fn earliest_start_of_highest_priority(victims: &[Arc<PodInfo>]) -> Option<i128> {
    let first = victims.first()?;
    let mut max_prio = priority(&first.pod);
    let mut earliest = start_time(&first.pod);
    for v in victims {
        let p = priority(&v.pod);
        if p == max_prio {
            earliest = earliest.min(start_time(&v.pod));
        } else if p > max_prio {
            max_prio = p;
            earliest = start_time(&v.pod);
        }
    }
    Some(earliest)
}

/// Upstream `pickOneNodeForPreemption` through `SelectCandidate`: the
/// candidate with the fewest PDB violations, then the lowest highest victim
/// priority, the smallest sum of priorities (each shifted by 2^31 so
/// negative priorities count), the fewest victims, the latest start of the
/// highest-priority victims; remaining ties go to the first.
pub(super) fn select_candidate(candidates: &[Candidate]) -> Option<&Candidate> {
    if candidates.len() <= 1 {
        return candidates.first();
    }
    type ScoreFn = fn(&Candidate) -> i128;
    let funcs: [ScoreFn; 5] = [
        |c| -(c.num_pdb_violations as i128),
        |c| -(c.victims.first().map_or(0, |v| priority(&v.pod)) as i128),
        |c| -c.victims.iter().map(|v| priority(&v.pod) as i128 + (i32::MAX as i128 + 1)).sum::<i128>(),
        |c| -(c.victims.len() as i128),
        |c| earliest_start_of_highest_priority(&c.victims).unwrap_or(i128::MIN),
    ];
    let mut remaining: Vec<&Candidate> = candidates.iter().collect();
    for f in funcs {
        // Scored once: start times of pods not started read the clock.
        let scores: Vec<i128> = remaining.iter().map(|c| f(c)).collect();
        let max = *scores.iter().max()?;
        remaining = remaining.into_iter().zip(scores).filter(|(_, s)| *s == max).map(|(c, _)| c).collect();
        if remaining.len() == 1 {
            break;
        }
    }
    remaining.first().copied()
}
