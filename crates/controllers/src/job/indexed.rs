//! Indexed completion mode (upstream `pkg/controller/job/indexed_job_utils.go`):
//! each pod carries its completion index in the
//! `batch.kubernetes.io/job-completion-index` annotation (and label), and the
//! Job's `status.completedIndexes` lists the succeeded indexes as ordered
//! intervals (`"1,3-5,7"`).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Pod;

/// The annotation (and label) holding a pod's completion index.
pub const COMPLETION_INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";
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
}
