//! Controller expectations (upstream `pkg/controller/controller_utils.go`:
//! `ControllerExpectations` and `UIDTrackingControllerExpectations`).
//!
//! A controller that creates or deletes dependents (pods) must not act
//! again on a stale informer cache: after issuing `n` creations it
//! *expects* to see `n` add events, after deleting pods it expects to see
//! those pods go. Until the expectations of a controller key are met, its
//! sync only updates status and does not create or delete more.
//!
//! Semantics, as upstream:
//! - a key with no record is satisfied (never synced, or deleted);
//! - a record is satisfied when both its pending adds and deletes are
//!   `<= 0`, or when it was set more than [`EXPECTATIONS_TIMEOUT`] (5 min)
//!   ago (a watch event may have been lost: resync rather than wedge);
//! - deletions are tracked by dependent key (`namespace/name`): observing
//!   the same pod go twice (its deletionTimestamp, then its removal)
//!   lowers the count once.
//!
//! Keys are opaque strings; the ReplicaSet controller uses the owner's
//! uid (so a recreated owner with the same name never inherits stale
//! expectations). Thread-safe; clone-free (share it in an `Arc`).

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Upstream's `ExpectationsTimeout`: an unmet expectation older than this
/// no longer blocks a sync.
pub const EXPECTATIONS_TIMEOUT: Duration = Duration::from_secs(5 * 60);

#[derive(Debug)]
struct Record {
    adds: i64,
    dels: i64,
    /// Dependent keys whose deletion is still expected.
    deleting: HashSet<String>,
    set_at: Instant,
}

/// Per-controller-key pending creations and deletions (see the module docs).
#[derive(Debug, Default)]
pub struct Expectations {
    records: Mutex<HashMap<String, Record>>,
}

impl Expectations {
    /// An empty set (every key satisfied).
    pub fn new() -> Expectations {
        Expectations::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Record>> {
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `key` may act (upstream `SatisfiedExpectations`): no record,
    /// a fulfilled record, or an expired one.
    pub fn satisfied(&self, key: &str) -> bool {
        self.satisfied_at(key, Instant::now())
    }

    /// [`satisfied`](Self::satisfied) as of `now` (for tests).
    pub fn satisfied_at(&self, key: &str, now: Instant) -> bool {
        match self.lock().get(key) {
            None => true,
            Some(r) => (r.adds <= 0 && r.dels <= 0) || now.duration_since(r.set_at) > EXPECTATIONS_TIMEOUT,
        }
    }

    /// Expects `n` creations for `key`, replacing what was expected
    /// (upstream `ExpectCreations`: set, not add). Also drops records that
    /// expired long ago, so deleted owners do not accumulate.
    pub fn expect_creations(&self, key: &str, n: usize) {
        let mut m = self.lock();
        let now = Instant::now();
        m.retain(|_, r| now.duration_since(r.set_at) <= 2 * EXPECTATIONS_TIMEOUT);
        m.insert(key.to_string(), Record { adds: n as i64, dels: 0, deleting: HashSet::new(), set_at: now });
    }

    /// Expects the deletion of these dependents for `key` (upstream
    /// `UIDTrackingControllerExpectations.ExpectDeletions`).
    pub fn expect_deletions(&self, key: &str, dependents: &[String]) {
        let mut m = self.lock();
        let deleting: HashSet<String> = dependents.iter().cloned().collect();
        let record = Record { adds: 0, dels: deleting.len() as i64, deleting, set_at: Instant::now() };
        m.insert(key.to_string(), record);
    }

    /// One expected creation was seen (or will never happen: a failed or
    /// skipped create). Upstream `CreationObserved`.
    pub fn creation_observed(&self, key: &str) {
        if let Some(r) = self.lock().get_mut(key) {
            r.adds -= 1;
        }
    }

    /// The dependent `dependent` of `key` is gone or going (upstream
    /// `DeletionObserved`): lowers the pending deletions once per dependent.
    pub fn deletion_observed(&self, key: &str, dependent: &str) {
        if let Some(r) = self.lock().get_mut(key) {
            if r.deleting.remove(dependent) {
                r.dels -= 1;
            }
        }
    }

    /// Forgets `key` (upstream `DeleteExpectations`, when the owner goes).
    pub fn forget(&self, key: &str) {
        self.lock().remove(key);
    }

    /// Pending `(adds, deletes)` of `key`, if it has a record.
    pub fn pending(&self, key: &str) -> Option<(i64, i64)> {
        self.lock().get(key).map(|r| (r.adds, r.dels))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_are_satisfied_and_creations_must_all_be_observed() {
        let e = Expectations::new();
        assert!(e.satisfied("rs"));
        e.expect_creations("rs", 2);
        assert!(!e.satisfied("rs"));
        e.creation_observed("rs");
        assert!(!e.satisfied("rs"));
        e.creation_observed("rs");
        assert!(e.satisfied("rs"));
        // Extra observations (pods created by someone else) keep it satisfied.
        e.creation_observed("rs");
        assert!(e.satisfied("rs"));
        assert_eq!(e.pending("rs"), Some((-1, 0)));
        e.forget("rs");
        assert_eq!(e.pending("rs"), None);
    }

    #[test]
    fn deletions_are_tracked_per_dependent_so_a_pod_seen_twice_counts_once() {
        let e = Expectations::new();
        e.expect_deletions("rs", &["ns/a".into(), "ns/b".into()]);
        assert!(!e.satisfied("rs"));
        e.deletion_observed("rs", "ns/a");
        e.deletion_observed("rs", "ns/a");
        e.deletion_observed("rs", "ns/other");
        assert_eq!(e.pending("rs"), Some((0, 1)));
        e.deletion_observed("rs", "ns/b");
        assert!(e.satisfied("rs"));
    }

    #[test]
    fn expectations_expire_after_five_minutes() {
        let e = Expectations::new();
        e.expect_creations("rs", 1);
        let now = Instant::now();
        assert!(!e.satisfied_at("rs", now + Duration::from_secs(299)));
        assert!(e.satisfied_at("rs", now + Duration::from_secs(301)));
    }
}
