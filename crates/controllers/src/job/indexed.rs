//! Indexed completion mode (upstream `pkg/controller/job/indexed_job_utils.go`):
//! each pod carries its completion index in the
//! `batch.kubernetes.io/job-completion-index` annotation (and label), and the
//! Job's `status.completedIndexes` lists the succeeded indexes as ordered
//! intervals (`"1,3-5,7"`).
//!
//! With `spec.backoffLimitPerIndex` every index counts its own failures:
//! each pod carries how many pods of its index failed before it
//! (`batch.kubernetes.io/job-index-failure-count`, plus
//! `batch.kubernetes.io/job-index-ignored-failure-count` for failures an
//! Ignore rule of the pod failure policy matched). A pod that fails with a
//! count already at the limit — or that a FailIndex rule matches — fails its
//! index, which then shows in `status.failedIndexes` (same interval format)
//! and is never retried. The last failed pod of an index waiting for its
//! replacement keeps its tracking finalizer until the replacement exists,
//! so the count can be carried over (upstream
//! `getPodsWithDelayedDeletionPerIndex`).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;

use super::failure;
use super::manage;

/// The annotation (and label) holding a pod's completion index.
pub const COMPLETION_INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";
/// How many pods of the pod's index failed before it (counted failures).
pub const INDEX_FAILURE_COUNT_ANNOTATION: &str = "batch.kubernetes.io/job-index-failure-count";
/// How many pods of the pod's index failed before it with a failure an
/// Ignore rule of the pod failure policy matched.
pub const INDEX_IGNORED_FAILURE_COUNT_ANNOTATION: &str = "batch.kubernetes.io/job-index-ignored-failure-count";
/// The environment variable every container of an Indexed Job's pod gets.
pub const COMPLETION_INDEX_ENV: &str = "JOB_COMPLETION_INDEX";
/// Upstream `names.MaxGeneratedNameLength`: the longest generateName prefix.
const MAX_GENERATED_NAME_LENGTH: usize = 58;

/// An inclusive range of indexes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interval {
    /// First index.
    pub first: i32,
    /// Last index (inclusive).
    pub last: i32,
}

/// Ordered, non-overlapping, non-adjacent intervals (upstream `orderedIntervals`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Intervals(pub Vec<Interval>);

impl Intervals {
    /// Builds intervals from any set of indexes.
    pub fn from_set(set: &BTreeSet<i32>) -> Self {
        let mut out: Vec<Interval> = Vec::new();
        for &ix in set {
            match out.last_mut() {
                Some(last) if last.last + 1 == ix => last.last = ix,
                _ => out.push(Interval { first: ix, last: ix }),
            }
        }
        Intervals(out)
    }

    /// Parses `status.completedIndexes`/`failedIndexes`, dropping indexes
    /// `>= completions` and anything malformed (upstream `parseIndexesFromString`
    /// logs and skips bad items).
    pub fn parse(s: &str, completions: i32) -> Self {
        let mut set = BTreeSet::new();
        for item in s.split(',').filter(|x| !x.is_empty()) {
            let (a, b) = match item.split_once('-') {
                Some((a, b)) => (a.parse::<i32>(), b.parse::<i32>()),
                None => (item.parse::<i32>(), item.parse::<i32>()),
            };
            let (Ok(a), Ok(b)) = (a, b) else { continue };
            for ix in a.max(0)..=b.min(completions - 1) {
                set.insert(ix);
            }
        }
        Self::from_set(&set)
    }

    /// The indexes, in order.
    pub fn to_set(&self) -> BTreeSet<i32> {
        self.0.iter().flat_map(|iv| iv.first..=iv.last).collect()
    }

    /// How many indexes the intervals hold.
    pub fn total(&self) -> i32 {
        self.0.iter().map(|iv| iv.last - iv.first + 1).sum()
    }

    /// Whether `ix` is in one of the intervals.
    pub fn has(&self, ix: i32) -> bool {
        self.0.iter().any(|iv| iv.first <= ix && ix <= iv.last)
    }

    /// These intervals plus `more`.
    pub fn with(&self, more: impl IntoIterator<Item = i32>) -> Self {
        let mut set = self.to_set();
        set.extend(more);
        Self::from_set(&set)
    }
}

impl std::fmt::Display for Intervals {
    /// Upstream's format: `a` for one index, `a,b` for two adjacent ones,
    /// `a-b` for three or more.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, v) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}", v.first)?;
            if v.last > v.first {
                let sep = if v.last == v.first + 1 { "," } else { "-" };
                write!(f, "{sep}{}", v.last)?;
            }
        }
        Ok(())
    }
}

/// A pod's completion index from its annotation, if valid (upstream
/// `getCompletionIndex`: a non-negative integer).
pub fn completion_index(pod: &Pod) -> Option<i32> {
    let v = pod.metadata.annotations.as_ref()?.get(COMPLETION_INDEX_ANNOTATION)?;
    v.parse::<i32>().ok().filter(|ix| *ix >= 0)
}

/// The generateName of an Indexed Job's pod: `<job>-<index>-`, with the job
/// name cut so the prefix stays within 58 characters (upstream
/// `podGenerateNameWithIndex`).
pub fn generate_name_with_index(job: &str, index: i32) -> String {
    let suffix = format!("-{index}-");
    let prefix = format!("{job}{suffix}");
    if prefix.len() > MAX_GENERATED_NAME_LENGTH {
        let keep = MAX_GENERATED_NAME_LENGTH - suffix.len();
        format!("{}{suffix}", &job[..keep.min(job.len())])
    } else {
        prefix
    }
}

/// The first `count` indexes in `[0, completions)` that are neither done
/// (`succeeded`, `failed`) nor held by an active pod (upstream `firstPendingIndexes`).
pub fn first_pending_indexes(
    count: usize,
    completions: i32,
    succeeded: &Intervals,
    failed: Option<&Intervals>,
    active: &BTreeSet<i32>,
) -> Vec<i32> {
    (0..completions)
        .filter(|ix| !succeeded.has(*ix) && !failed.is_some_and(|f| f.has(*ix)) && !active.contains(ix))
        .take(count)
        .collect()
}

/// Whether the Job is Indexed and has `spec.backoffLimitPerIndex` (upstream
/// `hasBackoffLimitPerIndex`; the API server only accepts the field on
/// Indexed Jobs).
pub fn has_backoff_limit_per_index(job: &Job) -> bool {
    manage::is_indexed(job) && job.spec.as_ref().is_some_and(|s| s.backoff_limit_per_index.is_some())
}

/// Upstream `parseInt32` of a count annotation: 0 when absent, not a
/// number, negative or beyond `i32`.
fn count_annotation(pod: &Pod, key: &str) -> i32 {
    let v = pod.metadata.annotations.as_ref().and_then(|a| a.get(key));
    v.and_then(|v| v.parse::<i64>().ok()).filter(|n| (0..=i32::MAX as i64).contains(n)).map_or(0, |n| n as i32)
}

/// The pod's `job-index-failure-count` (0 when missing or invalid).
pub fn index_failure_count(pod: &Pod) -> i32 {
    count_annotation(pod, INDEX_FAILURE_COUNT_ANNOTATION)
}

/// The pod's `job-index-ignored-failure-count` (0 when missing or invalid).
pub fn index_ignored_failure_count(pod: &Pod) -> i32 {
    count_annotation(pod, INDEX_IGNORED_FAILURE_COUNT_ANNOTATION)
}

/// Counted plus ignored failures before the pod (upstream
/// `getIndexAbsoluteFailureCount`): drives the per-index back-off.
pub fn index_absolute_failure_count(pod: &Pod) -> i32 {
    index_failure_count(pod).saturating_add(index_ignored_failure_count(pod))
}

/// Upstream `isIndexFailed`: the pod failed and either a FailIndex rule of
/// the pod failure policy matched, or the failure counts and the index had
/// already used up `backoffLimitPerIndex` retries before this pod.
pub fn is_index_failed(job: &Job, pod: &Pod) -> bool {
    if !failure::is_pod_failed(pod, job) {
        return false;
    }
    let spec = job.spec.as_ref();
    let m = failure::match_policy(spec.and_then(|s| s.pod_failure_policy.as_ref()), pod);
    if m.action.as_deref() == Some(failure::ACTION_FAIL_INDEX) {
        return true;
    }
    let limit = spec.and_then(|s| s.backoff_limit_per_index).unwrap_or(0);
    m.count_failed && index_failure_count(pod) >= limit
}

/// Upstream `calculateFailedIndexes`: `status.failedIndexes` plus the
/// indexes of not-yet-counted pods (tracking finalizer, valid index) that
/// failed their index.
pub fn failed_indexes(job: &Job, pods: &[Pod]) -> Intervals {
    let completions = job.spec.as_ref().and_then(|s| s.completions).unwrap_or(0);
    let prev =
        Intervals::parse(job.status.as_ref().and_then(|s| s.failed_indexes.as_deref()).unwrap_or(""), completions);
    let more = pods
        .iter()
        .filter(|p| manage::has_tracking_finalizer(p) && is_index_failed(job, p))
        .filter_map(completion_index)
        .filter(|ix| *ix < completions);
    prev.with(more)
}

/// Whether the failed indexes end the Job (upstream `syncJob`): more than
/// `maxFailedIndexes` failed → `MaxFailedIndexesExceeded`; otherwise, once
/// every index succeeded or failed and at least one failed →
/// `FailedIndexes`. Returns the condition's reason and message.
pub fn failed_indexes_outcome(
    max_failed_indexes: Option<i32>,
    failed: &Intervals,
    succeeded: &Intervals,
    completions: i32,
) -> Option<(&'static str, &'static str)> {
    if max_failed_indexes.is_some_and(|m| failed.total() > m) {
        return Some((failure::REASON_MAX_FAILED_INDEXES, failure::MSG_MAX_FAILED_INDEXES));
    }
    if failed.total() > 0 && failed.total() + succeeded.total() >= completions {
        return Some((failure::REASON_FAILED_INDEXES, failure::MSG_FAILED_INDEXES));
    }
    None
}

/// Upstream `getPodsWithDelayedDeletionPerIndex`: for each index that is
/// neither succeeded, failed nor held by an active pod, its last failed pod
/// still carrying the tracking finalizer (highest absolute failure count,
/// then latest finish). Its finalizer stays until a replacement exists,
/// which inherits its counts.
pub fn pods_with_delayed_deletion<'a>(
    job: &Job,
    pods: &'a [Pod],
    succeeded: &Intervals,
    failed: &Intervals,
) -> BTreeMap<i32, &'a Pod> {
    let completions = job.spec.as_ref().and_then(|s| s.completions).unwrap_or(0);
    let active: BTreeSet<i32> = pods.iter().filter(|p| manage::is_active(p)).filter_map(completion_index).collect();
    let mut out: BTreeMap<i32, &Pod> = BTreeMap::new();
    for p in pods {
        if !manage::has_tracking_finalizer(p) || !failure::is_pod_failed(p, job) {
            continue;
        }
        let Some(ix) = completion_index(p).filter(|ix| *ix < completions) else { continue };
        if succeeded.has(ix) || failed.has(ix) || active.contains(&ix) {
            continue;
        }
        let replace = match out.get(&ix) {
            None => true,
            Some(last) => {
                index_absolute_failure_count(last) <= index_absolute_failure_count(p)
                    && failure::finish_time(p) >= failure::finish_time(last)
            }
        };
        if replace {
            out.insert(ix, p);
        }
    }
    out
}

/// Upstream `getNewIndexFailureCounts`: the `(failure, ignored failure)`
/// counts of a new pod replacing `replaced` — its counts plus one in the
/// right column (ignored when an Ignore rule matched it); `(0, 0)` for a
/// first pod.
pub fn new_index_failure_counts(job: &Job, replaced: Option<&Pod>) -> (i32, i32) {
    let Some(p) = replaced else { return (0, 0) };
    let (mut counted, mut ignored) = (index_failure_count(p), index_ignored_failure_count(p));
    let policy = job.spec.as_ref().and_then(|s| s.pod_failure_policy.as_ref());
    if failure::match_policy(policy, p).count_failed {
        counted = counted.saturating_add(1);
    } else {
        ignored = ignored.saturating_add(1);
    }
    (counted, ignored)
}

/// Upstream `addIndexFailureCountAnnotation`: writes the counts on a new
/// pod (the ignored count only when non-zero).
pub fn set_index_failure_counts(pod: &mut Pod, (counted, ignored): (i32, i32)) {
    let a = pod.metadata.annotations.get_or_insert_with(Default::default);
    a.insert(INDEX_FAILURE_COUNT_ANNOTATION.into(), counted.to_string());
    if ignored > 0 {
        a.insert(INDEX_IGNORED_FAILURE_COUNT_ANNOTATION.into(), ignored.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(s: &[i32]) -> Intervals {
        Intervals::from_set(&s.iter().copied().collect())
    }

    #[test]
    fn intervals_print_as_upstream() {
        // Upstream TestCalculateSucceededIndexes / orderedIntervals.String cases.
        assert_eq!(iv(&[]).to_string(), "");
        assert_eq!(iv(&[0]).to_string(), "0");
        assert_eq!(iv(&[0, 1]).to_string(), "0,1");
        assert_eq!(iv(&[0, 1, 2]).to_string(), "0-2");
        assert_eq!(iv(&[1, 3, 4, 5, 7]).to_string(), "1,3-5,7");
        assert_eq!(iv(&[2, 3, 5, 6, 7, 9]).to_string(), "2,3,5-7,9");
    }

    #[test]
    fn parse_drops_out_of_range_and_merges() {
        let p = Intervals::parse("1,3-5,7", 6);
        assert_eq!(p.to_string(), "1,3-5");
        assert_eq!(p.total(), 4);
        assert!(p.has(4) && !p.has(2));
        assert_eq!(Intervals::parse("0,1,2-3", 10).to_string(), "0-3");
        assert_eq!(Intervals::parse("", 3).total(), 0);
        assert_eq!(Intervals::parse("1,3-5", 10).with([2, 8]).to_string(), "1-5,8");
    }

    #[test]
    fn pending_indexes_skip_done_and_active() {
        let done = iv(&[0, 2]);
        let active: BTreeSet<i32> = [1].into();
        assert_eq!(first_pending_indexes(2, 6, &done, None, &active), [3, 4]);
        assert_eq!(first_pending_indexes(5, 4, &done, Some(&iv(&[3])), &active), Vec::<i32>::new());
    }

    #[test]
    fn generate_name_keeps_the_index() {
        assert_eq!(generate_name_with_index("pi", 3), "pi-3-");
        let long = "a".repeat(60);
        let g = generate_name_with_index(&long, 12);
        assert_eq!(g.len(), 58);
        assert!(g.ends_with("-12-"));
    }

    fn per_index_job(policy: serde_json::Value) -> Job {
        let mut v = serde_json::json!({
            "metadata": {"name": "j", "namespace": "ns", "uid": "u"},
            "spec": {"completions": 6, "parallelism": 6, "completionMode": "Indexed", "backoffLimitPerIndex": 1,
                "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}
        });
        if !policy.is_null() {
            v["spec"]["podFailurePolicy"] = serde_json::json!({ "rules": policy });
        }
        serde_json::from_value(v).unwrap()
    }

    /// A pod of index `ix` in `phase`, with the tracking finalizer, exit
    /// code 1 when Failed, and the given failure-count annotations.
    fn ipod(uid: &str, ix: i32, phase: &str, counts: (Option<&str>, Option<&str>), finished_s: i64) -> Pod {
        let mut ann = serde_json::json!({COMPLETION_INDEX_ANNOTATION: ix.to_string()});
        if let Some(c) = counts.0 {
            ann[INDEX_FAILURE_COUNT_ANNOTATION] = c.into();
        }
        if let Some(c) = counts.1 {
            ann[INDEX_IGNORED_FAILURE_COUNT_ANNOTATION] = c.into();
        }
        let at = jiff::Timestamp::from_second(1_700_000_000 + finished_s).unwrap().to_string();
        let state = if phase == "Failed" {
            serde_json::json!({"terminated": {"exitCode": 1, "finishedAt": at}})
        } else {
            serde_json::json!({"running": {}})
        };
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": uid, "namespace": "ns", "uid": uid, "annotations": ann,
                "finalizers": [crate::job::manage::TRACKING_FINALIZER]},
            "status": {"phase": phase, "containerStatuses": [{"name": "c", "image": "busybox", "imageID": "",
                "ready": false, "restartCount": 0, "state": state}]}
        }))
        .unwrap()
    }

    #[test]
    fn failure_count_annotations_parse_as_upstream() {
        // Upstream TestGetIndexFailureCount: missing, unparsable, negative
        // or beyond int32 → 0.
        let p = |v: Option<&str>| ipod("a", 0, "Failed", (v, None), 0);
        assert_eq!(index_failure_count(&p(None)), 0);
        assert_eq!(index_failure_count(&p(Some("invalid"))), 0);
        assert_eq!(index_failure_count(&p(Some("-1"))), 0);
        assert_eq!(index_failure_count(&p(Some("2147483648"))), 0);
        assert_eq!(index_failure_count(&p(Some("2"))), 2);
        assert_eq!(index_absolute_failure_count(&ipod("a", 0, "Failed", (Some("2"), Some("3")), 0)), 5);
    }

    #[test]
    fn an_index_fails_past_its_limit_or_on_fail_index() {
        // Upstream TestIsIndexFailed / TestCalculateFailedIndexes.
        let job = per_index_job(serde_json::Value::Null);
        assert!(!is_index_failed(&job, &ipod("a", 1, "Failed", (Some("0"), None), 0)));
        assert!(is_index_failed(&job, &ipod("a", 1, "Failed", (Some("1"), None), 0)));
        assert!(!is_index_failed(&job, &ipod("a", 1, "Running", (Some("1"), None), 0)));
        let fail_index = per_index_job(serde_json::json!([
            {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [1]}}]));
        assert!(is_index_failed(&fail_index, &ipod("a", 1, "Failed", (Some("0"), None), 0)));
        let ignore = per_index_job(serde_json::json!([
            {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [1]}}]));
        assert!(!is_index_failed(&ignore, &ipod("a", 1, "Failed", (Some("5"), None), 0)));

        // Previous failedIndexes plus the new ones, in the interval format.
        let mut job = per_index_job(serde_json::Value::Null);
        job.status =
            Some(k8s_openapi::api::batch::v1::JobStatus { failed_indexes: Some("1,3".into()), ..Default::default() });
        let pods = [
            ipod("a", 4, "Failed", (Some("1"), None), 0),
            ipod("b", 2, "Failed", (Some("1"), None), 0),
            ipod("c", 5, "Failed", (Some("0"), None), 0),
            ipod("d", 9, "Failed", (Some("1"), None), 0),
        ];
        assert_eq!(failed_indexes(&job, &pods).to_string(), "1-4");
    }

    #[test]
    fn max_failed_indexes_and_failed_indexes_end_the_job() {
        let iv = |s: &str| Intervals::parse(s, 10);
        assert_eq!(failed_indexes_outcome(Some(1), &iv("1"), &iv(""), 10), None);
        assert_eq!(
            failed_indexes_outcome(Some(1), &iv("1,3"), &iv(""), 10),
            Some(("MaxFailedIndexesExceeded", "Job has exceeded the specified maximal number of failed indexes"))
        );
        assert_eq!(failed_indexes_outcome(None, &iv("1,3"), &iv("0,2,4-8"), 10), None);
        assert_eq!(
            failed_indexes_outcome(None, &iv("1,3"), &iv("0,2,4-9"), 10),
            Some(("FailedIndexes", "Job has failed indexes"))
        );
        assert_eq!(failed_indexes_outcome(None, &iv(""), &iv("0-9"), 10), None);
    }

    #[test]
    fn the_last_failed_pod_of_a_pending_index_waits_for_its_replacement() {
        // Upstream TestGetPodsWithDelayedDeletionPerIndex: the pod with the
        // highest count (latest) of an index that is not succeeded, failed
        // or active; its replacement inherits the count plus one.
        let job = per_index_job(serde_json::Value::Null);
        let pods = vec![
            ipod("a0", 0, "Failed", (Some("0"), None), 1),
            ipod("a1", 0, "Failed", (Some("1"), None), 5),
            ipod("b", 1, "Failed", (Some("0"), None), 1),
            ipod("b2", 1, "Running", (Some("1"), None), 0),
            ipod("c", 2, "Failed", (Some("0"), None), 1),
            ipod("d", 3, "Failed", (Some("1"), None), 1),
        ];
        let delayed = pods_with_delayed_deletion(&job, &pods, &Intervals::parse("2", 6), &Intervals::parse("3", 6));
        let uids: Vec<(i32, &str)> = delayed.iter().map(|(ix, p)| (*ix, p.metadata.uid.as_deref().unwrap())).collect();
        assert_eq!(uids, [(0, "a1")]);
        assert_eq!(new_index_failure_counts(&job, delayed.get(&0).copied()), (2, 0));
        assert_eq!(new_index_failure_counts(&job, None), (0, 0));
        let ignore = per_index_job(serde_json::json!([
            {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [1]}}]));
        assert_eq!(new_index_failure_counts(&ignore, Some(&ipod("x", 0, "Failed", (Some("1"), Some("2")), 0))), (1, 3));
        let mut p = pod_template();
        set_index_failure_counts(&mut p, (1, 0));
        let a = p.metadata.annotations.unwrap();
        assert_eq!(a[INDEX_FAILURE_COUNT_ANNOTATION], "1");
        assert!(!a.contains_key(INDEX_IGNORED_FAILURE_COUNT_ANNOTATION));
    }

    fn pod_template() -> Pod {
        Pod::default()
    }
}
