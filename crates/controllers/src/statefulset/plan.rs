//! What one StatefulSet sync does to its pods (upstream
//! `defaultStatefulSetControl.updateStatefulSet` / `processReplica` /
//! `processCondemned` and the rolling update), as a pure function.
//!
//! Pods with ordinals in `[start, start+replicas)` are replicas, others
//! are condemned. With `OrderedReady` (monotonic):
//! 1. replicas in ascending ordinal: a Failed/Succeeded pod is deleted
//!    (to be recreated next sync); a missing pod is created; a pod
//!    terminating, or not Running and Ready (and available after
//!    `minReadySeconds`), stops the sync: each pod waits for the one
//!    before it;
//! 2. condemned pods in descending ordinal: a terminating one stops the
//!    sync; an unhealthy one stops it unless it is the first unhealthy
//!    pod; one is deleted per sync;
//! 3. `RollingUpdate` (not while the set is being deleted): from the
//!    highest ordinal down to the partition, the first pod not on the
//!    update revision is deleted (it comes back on the update revision),
//!    and an unhealthy one stops the update — one pod at a time
//!    (`maxUnavailable` is behind the MaxUnavailableStatefulSet gate,
//!    alpha and off in 1.33). `OnDelete` never deletes for updates.
//!
//! `Parallel` does every create and delete of steps 1–2 without waiting.
//! A set being deleted only gets its status updated.

/// What the planner needs to know of one existing pod.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodView {
    /// Its ordinal.
    pub ordinal: i32,
    /// Its `controller-revision-hash` label.
    pub revision: String,
    /// Phase is Failed or Succeeded.
    pub finished: bool,
    /// It has a deletionTimestamp.
    pub terminating: bool,
    /// Running and Ready (and available after `minReadySeconds`).
    pub healthy: bool,
}

/// The set's facts the planner needs.
#[derive(Clone, Debug)]
pub struct SetView {
    /// `.spec.replicas`.
    pub replicas: i32,
    /// `.spec.ordinals.start`.
    pub start: i32,
    /// `podManagementPolicy` is `OrderedReady` (the default).
    pub monotonic: bool,
    /// `RollingUpdate` with this partition, or `None` for `OnDelete`.
    pub rolling_partition: Option<i32>,
    /// The set has a deletionTimestamp.
    pub deleting: bool,
    /// The update revision's name.
    pub update_revision: String,
}

/// One step of a sync.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Create the claims then the pod of this ordinal.
    Create(i32),
    /// Delete this Failed or Succeeded pod (it is recreated next sync).
    DeleteFailed(i32),
    /// Delete this pod: condemned by a scale-down.
    DeleteCondemned(i32),
    /// Delete this pod to update it.
    DeleteForUpdate(i32),
}

/// The steps of one sync, in order (see the module docs).
pub fn plan(set: &SetView, pods: &[PodView]) -> Vec<Step> {
    let mut steps = Vec::new();
    if set.deleting {
        return steps;
    }
    let end = set.start + set.replicas;
    let in_range = |o: i32| o >= set.start && o < end;
    let find = |o: i32| pods.iter().find(|p| p.ordinal == o);
    let mut condemned: Vec<&PodView> = pods.iter().filter(|p| !in_range(p.ordinal)).collect();
    condemned.sort_by_key(|p| std::cmp::Reverse(p.ordinal));
    // The first unhealthy pod: replicas ascending, then condemned ascending.
    let first_unhealthy = (set.start..end)
        .filter_map(find)
        .chain(condemned.iter().rev().copied())
        .find(|p| !p.healthy || p.terminating)
        .map(|p| p.ordinal);
    for o in set.start..end {
        let Some(p) = find(o) else {
            steps.push(Step::Create(o));
            if set.monotonic {
                return steps;
            }
            continue;
        };
        if p.finished && !p.terminating {
            steps.push(Step::DeleteFailed(o));
            if set.monotonic {
                return steps;
            }
            continue;
        }
        if (p.terminating || !p.healthy) && set.monotonic {
            return steps;
        }
    }
    for p in &condemned {
        if p.terminating {
            if set.monotonic {
                return steps;
            }
            continue;
        }
        if !p.healthy && set.monotonic && first_unhealthy != Some(p.ordinal) {
            return steps;
        }
        steps.push(Step::DeleteCondemned(p.ordinal));
        if set.monotonic {
            return steps;
        }
    }
    let Some(partition) = set.rolling_partition else { return steps };
    if !steps.is_empty() && set.monotonic {
        return steps;
    }
    let update_min = set.start + partition.max(0);
    for o in (update_min..end).rev() {
        let Some(p) = find(o) else { continue };
        if p.revision != set.update_revision && !p.terminating {
            steps.push(Step::DeleteForUpdate(o));
            return steps;
        }
        if !p.healthy || p.terminating {
            return steps;
        }
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(replicas: i32, monotonic: bool, partition: Option<i32>) -> SetView {
        SetView {
            replicas,
            start: 0,
            monotonic,
            rolling_partition: partition,
            deleting: false,
            update_revision: "new".into(),
        }
    }

    fn pod(ordinal: i32, revision: &str, healthy: bool) -> PodView {
        PodView { ordinal, revision: revision.into(), healthy, ..Default::default() }
    }

    #[test]
    fn ordered_ready_creates_one_pod_after_the_previous_is_ready() {
        let s = set(3, true, Some(0));
        assert_eq!(plan(&s, &[]), vec![Step::Create(0)]);
        assert_eq!(plan(&s, &[pod(0, "new", false)]), vec![]);
        assert_eq!(plan(&s, &[pod(0, "new", true)]), vec![Step::Create(1)]);
        assert_eq!(plan(&s, &[pod(0, "new", true), pod(1, "new", true), pod(2, "new", true)]), vec![]);
    }

    #[test]
    fn parallel_creates_all_and_deletes_all_condemned() {
        let s = set(3, false, Some(0));
        assert_eq!(plan(&s, &[]), vec![Step::Create(0), Step::Create(1), Step::Create(2)]);
        let s = set(1, false, Some(0));
        let pods = [pod(0, "new", false), pod(1, "new", false), pod(2, "new", true)];
        assert_eq!(plan(&s, &pods), vec![Step::DeleteCondemned(2), Step::DeleteCondemned(1)]);
    }

    #[test]
    fn ordered_scale_down_goes_in_reverse_one_at_a_time() {
        let s = set(1, true, Some(0));
        let pods = [pod(0, "new", true), pod(1, "new", true), pod(2, "new", true)];
        assert_eq!(plan(&s, &pods), vec![Step::DeleteCondemned(2)]);
        let mut terminating = pod(2, "new", true);
        terminating.terminating = true;
        assert_eq!(plan(&s, &[pod(0, "new", true), pod(1, "new", true), terminating]), vec![]);
        // An unhealthy condemned pod that is not the first unhealthy one waits.
        let pods = [pod(0, "new", true), pod(1, "new", false), pod(2, "new", false)];
        assert_eq!(plan(&s, &pods), vec![]);
        let pods = [pod(0, "new", true), pod(1, "new", true), pod(2, "new", false)];
        assert_eq!(plan(&s, &pods), vec![Step::DeleteCondemned(2)]);
    }

    #[test]
    fn rolling_update_goes_down_to_the_partition_one_pod_at_a_time() {
        let s = set(3, true, Some(1));
        let pods = [pod(0, "old", true), pod(1, "old", true), pod(2, "old", true)];
        assert_eq!(plan(&s, &pods), vec![Step::DeleteForUpdate(2)]);
        let pods = [pod(0, "old", true), pod(1, "old", true), pod(2, "new", false)];
        assert_eq!(plan(&s, &pods), vec![]);
        let pods = [pod(0, "old", true), pod(1, "old", true), pod(2, "new", true)];
        assert_eq!(plan(&s, &pods), vec![Step::DeleteForUpdate(1)]);
        // Ordinal 0 is below the partition: kept on the old revision.
        let pods = [pod(0, "old", true), pod(1, "new", true), pod(2, "new", true)];
        assert_eq!(plan(&s, &pods), vec![]);
        // OnDelete never deletes for updates.
        let s = set(3, true, None);
        assert_eq!(plan(&s, &[pod(0, "old", true), pod(1, "old", true), pod(2, "old", true)]), vec![]);
    }

    #[test]
    fn failed_pods_are_deleted_and_a_deleted_set_only_updates_status() {
        let s = set(2, true, Some(0));
        let mut failed = pod(0, "new", false);
        failed.finished = true;
        assert_eq!(plan(&s, &[failed, pod(1, "new", true)]), vec![Step::DeleteFailed(0)]);
        let mut s = set(2, true, Some(0));
        s.deleting = true;
        assert_eq!(plan(&s, &[]), vec![]);
    }

    #[test]
    fn ordinals_start_at_spec_ordinals_start() {
        let mut s = set(2, true, Some(0));
        s.start = 5;
        assert_eq!(plan(&s, &[pod(5, "new", true)]), vec![Step::Create(6)]);
        assert_eq!(
            plan(&s, &[pod(0, "new", true), pod(5, "new", true), pod(6, "new", true)]),
            vec![Step::DeleteCondemned(0)]
        );
    }
}
