//! What attemptToDelete does with an object once its owners are
//! classified (upstream `attemptToDeleteItem` after `classifyReferences`).

use super::graph::{FINALIZER_FOREGROUND, FINALIZER_ORPHAN};

/// What a live lookup of one owner found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnerState {
    /// Exists with the referenced uid and is not waiting for its dependents.
    Solid,
    /// Absent, or present under another uid.
    Dangling,
    /// Exists and is being deleted in the foreground.
    WaitingForDependents,
}

/// A `propagationPolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Propagation {
    /// `Background`.
    Background,
    /// `Foreground`.
    Foreground,
    /// `Orphan`.
    Orphan,
}

impl Propagation {
    /// The API's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Propagation::Background => "Background",
            Propagation::Foreground => "Foreground",
            Propagation::Orphan => "Orphan",
        }
    }
}

/// The decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Keep the object as it is.
    Keep,
    /// Keep it, but drop the references to these owner uids (dangling
    /// ones and owners waiting for their dependents).
    RemoveReferences(Vec<String>),
    /// Delete it; `unblock` first sets `blockOwnerDeletion: false` on its
    /// references (breaking a foreground dependency cycle).
    Delete {
        /// The propagation policy of the delete.
        policy: Propagation,
        /// Unblock the owner references first.
        unblock: bool,
    },
}

/// Decides, given each owner reference's uid and state, whether the
/// object has dependents, whether one of them is itself deleting its
/// dependents, and the object's finalizers.
pub fn decide(
    owners: &[(String, OwnerState)],
    has_dependents: bool,
    a_dependent_deletes_dependents: bool,
    finalizers: &[String],
) -> Decision {
    let any = |s: OwnerState| owners.iter().any(|(_, o)| *o == s);
    if owners.is_empty() {
        return Decision::Keep;
    }
    if any(OwnerState::Solid) {
        let gone: Vec<String> =
            owners.iter().filter(|(_, s)| *s != OwnerState::Solid).map(|(u, _)| u.clone()).collect();
        if gone.is_empty() {
            return Decision::Keep;
        }
        return Decision::RemoveReferences(gone);
    }
    if any(OwnerState::WaitingForDependents) && has_dependents {
        return Decision::Delete { policy: Propagation::Foreground, unblock: a_dependent_deletes_dependents };
    }
    let has = |f: &str| finalizers.iter().any(|x| x == f);
    let policy = if has(FINALIZER_ORPHAN) {
        Propagation::Orphan
    } else if has(FINALIZER_FOREGROUND) {
        Propagation::Foreground
    } else {
        Propagation::Background
    };
    Decision::Delete { policy, unblock: false }
}

#[cfg(test)]
mod tests {
    use super::*;
    use OwnerState::*;

    fn o(list: &[(&str, OwnerState)]) -> Vec<(String, OwnerState)> {
        list.iter().map(|(u, s)| (u.to_string(), *s)).collect()
    }

    // Upstream garbagecollector_test.go TestAttemptToDeleteItem /
    // TestGarbageCollectorSync cases.
    #[test]
    fn decisions_follow_upstream_attempt_to_delete_item() {
        assert_eq!(decide(&[], false, false, &[]), Decision::Keep);
        assert_eq!(decide(&o(&[("a", Solid)]), false, false, &[]), Decision::Keep);
        // A live owner keeps the object; only the gone reference is dropped.
        assert_eq!(
            decide(&o(&[("a", Solid), ("b", Dangling)]), false, false, &[]),
            Decision::RemoveReferences(vec!["b".into()])
        );
        assert_eq!(
            decide(&o(&[("a", Solid), ("b", WaitingForDependents)]), true, false, &[]),
            Decision::RemoveReferences(vec!["b".into()])
        );
        // All owners gone: background delete, or as the object's own finalizers say.
        assert_eq!(
            decide(&o(&[("a", Dangling)]), false, false, &[]),
            Decision::Delete { policy: Propagation::Background, unblock: false }
        );
        assert_eq!(
            decide(&o(&[("a", Dangling)]), false, false, &["orphan".into()]),
            Decision::Delete { policy: Propagation::Orphan, unblock: false }
        );
        assert_eq!(
            decide(&o(&[("a", Dangling)]), false, false, &["foregroundDeletion".into()]),
            Decision::Delete { policy: Propagation::Foreground, unblock: false }
        );
        // The owner waits for dependents and this one has dependents: foreground, cycle-aware.
        assert_eq!(
            decide(&o(&[("a", WaitingForDependents)]), true, true, &[]),
            Decision::Delete { policy: Propagation::Foreground, unblock: true }
        );
        assert_eq!(
            decide(&o(&[("a", WaitingForDependents)]), false, false, &[]),
            Decision::Delete { policy: Propagation::Background, unblock: false }
        );
    }
}
