//! The five namespace conditions the namespace controller keeps while a
//! namespace terminates (upstream
//! `pkg/controller/namespace/deletion/status_condition_utils.go`): each is
//! `True` with a failure reason while its problem lasts and `False` with
//! its "ok" reason and message otherwise.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NamespaceCondition, NamespaceStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Discovery of the API's resources failed.
pub const DISCOVERY_FAILURE: &str = "NamespaceDeletionDiscoveryFailure";
/// A group/version in discovery could not be parsed.
pub const GV_PARSING_FAILURE: &str = "NamespaceDeletionGroupVersionParsingFailure";
/// Deleting some resource's content failed.
pub const CONTENT_FAILURE: &str = "NamespaceDeletionContentFailure";
/// Objects remain in the namespace.
pub const CONTENT_REMAINING: &str = "NamespaceContentRemaining";
/// Remaining objects carry finalizers.
pub const FINALIZERS_REMAINING: &str = "NamespaceFinalizersRemaining";

/// Every condition type the controller maintains, in upstream's order.
pub const TYPES: [&str; 5] =
    [DISCOVERY_FAILURE, GV_PARSING_FAILURE, CONTENT_FAILURE, CONTENT_REMAINING, FINALIZERS_REMAINING];

/// The `False` ("ok") reason and message of each type.
fn ok(type_: &str) -> (&'static str, &'static str) {
    match type_ {
        DISCOVERY_FAILURE => ("ResourcesDiscovered", "All resources successfully discovered"),
        GV_PARSING_FAILURE => ("ParsedGroupVersions", "All legacy kube types successfully parsed"),
        CONTENT_FAILURE => ("ContentDeleted", "All content successfully deleted, may be waiting on finalization"),
        CONTENT_REMAINING => ("ContentRemoved", "All content successfully removed"),
        _ => ("ContentHasNoFinalizers", "All content-preserving finalizers finished"),
    }
}

/// What one deletion pass found: the failures and what remains.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Discovery's error, if it failed.
    pub discovery_error: Option<String>,
    /// The group/version parsing error, if any.
    pub gv_error: Option<String>,
    /// One message per resource whose content could not be deleted.
    pub content_errors: Vec<String>,
    /// Remaining objects per `resource.group` (core group: `pods.`).
    pub remaining: BTreeMap<String, usize>,
    /// Remaining objects per finalizer name.
    pub finalizers: BTreeMap<String, usize>,
}

fn failing(type_: &str, reason: &str, message: String) -> NamespaceCondition {
    NamespaceCondition {
        type_: type_.into(),
        status: "True".into(),
        reason: Some(reason.into()),
        message: Some(message),
        last_transition_time: Some(Time(jiff::Timestamp::now())),
    }
}

/// The failing conditions `outcome` calls for, with upstream's reasons
/// and messages (those not listed are "ok").
pub fn failing_conditions(outcome: &Outcome) -> Vec<NamespaceCondition> {
    let mut out = Vec::new();
    if let Some(e) = &outcome.discovery_error {
        out.push(failing(DISCOVERY_FAILURE, "DiscoveryFailed", e.clone()));
    }
    if let Some(e) = &outcome.gv_error {
        out.push(failing(GV_PARSING_FAILURE, "GroupVersionParsingFailed", e.clone()));
    }
    if !outcome.content_errors.is_empty() {
        let mut msgs = outcome.content_errors.clone();
        msgs.sort();
        out.push(failing(
            CONTENT_FAILURE,
            "ContentDeletionFailed",
            format!("Failed to delete all resource types, {} remaining: {}", msgs.len(), msgs.join(", ")),
        ));
    }
    let mut remaining: Vec<String> = outcome
        .remaining
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(r, n)| format!("{r} has {n} resource instances"))
        .collect();
    if !outcome.remaining.is_empty() {
        remaining.sort();
        out.push(failing(
            CONTENT_REMAINING,
            "SomeResourcesRemain",
            format!("Some resources are remaining: {}", remaining.join(", ")),
        ));
    }
    if !outcome.finalizers.is_empty() {
        let mut by_finalizer: Vec<String> = outcome
            .finalizers
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(f, n)| format!("{f} in {n} resource instances"))
            .collect();
        by_finalizer.sort();
        out.push(failing(
            FINALIZERS_REMAINING,
            "SomeFinalizersRemain",
            format!("Some content in the namespace has finalizers remaining: {}", by_finalizer.join(", ")),
        ));
    }
    out
}

/// Upstream's `updateConditions`: sets every type to its failing variant
/// from `new` or its ok variant, keeping `lastTransitionTime` unless the
/// status flips. Returns whether anything changed.
pub fn update(status: &mut NamespaceStatus, new: &[NamespaceCondition]) -> bool {
    let mut changed = false;
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    for type_ in TYPES {
        let wanted = new.iter().find(|c| c.type_ == type_).cloned().unwrap_or_else(|| {
            let (reason, message) = ok(type_);
            NamespaceCondition {
                type_: type_.into(),
                status: "False".into(),
                reason: Some(reason.into()),
                message: Some(message.into()),
                last_transition_time: Some(Time(jiff::Timestamp::now())),
            }
        });
        match conditions.iter_mut().find(|c| c.type_ == type_) {
            None => {
                conditions.push(wanted);
                changed = true;
            }
            Some(old)
                if old.status != wanted.status || old.reason != wanted.reason || old.message != wanted.message =>
            {
                if old.status != wanted.status {
                    old.last_transition_time = wanted.last_transition_time;
                }
                old.status = wanted.status;
                old.reason = wanted.reason;
                old.message = wanted.message;
                changed = true;
            }
            Some(_) => {}
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find<'a>(s: &'a NamespaceStatus, t: &str) -> &'a NamespaceCondition {
        s.conditions.as_ref().unwrap().iter().find(|c| c.type_ == t).unwrap()
    }

    // Upstream status_condition_utils_test.go: with nothing failing every
    // type is False with its ok reason; a second identical update changes nothing.
    #[test]
    fn all_ok_sets_every_type_false_once() {
        let mut s = NamespaceStatus::default();
        assert!(update(&mut s, &failing_conditions(&Outcome::default())));
        assert_eq!(s.conditions.as_ref().unwrap().len(), 5);
        let c = find(&s, FINALIZERS_REMAINING);
        assert_eq!((c.status.as_str(), c.reason.as_deref()), ("False", Some("ContentHasNoFinalizers")));
        assert_eq!(find(&s, CONTENT_REMAINING).message.as_deref(), Some("All content successfully removed"));
        assert!(!update(&mut s, &failing_conditions(&Outcome::default())));
    }

    #[test]
    fn remaining_content_and_finalizers_have_upstream_messages() {
        let mut o = Outcome::default();
        o.remaining.insert("pods.".into(), 2);
        o.remaining.insert("widgets.example.com".into(), 1);
        o.finalizers.insert("example.com/keep".into(), 1);
        o.content_errors.push("b failed".into());
        o.content_errors.push("a failed".into());
        let mut s = NamespaceStatus::default();
        update(&mut s, &failing_conditions(&o));
        let c = find(&s, CONTENT_REMAINING);
        assert_eq!(c.status, "True");
        assert_eq!(c.reason.as_deref(), Some("SomeResourcesRemain"));
        assert_eq!(
            c.message.as_deref(),
            Some("Some resources are remaining: pods. has 2 resource instances, widgets.example.com has 1 resource instances")
        );
        let c = find(&s, FINALIZERS_REMAINING);
        assert_eq!(c.reason.as_deref(), Some("SomeFinalizersRemain"));
        assert_eq!(
            c.message.as_deref(),
            Some("Some content in the namespace has finalizers remaining: example.com/keep in 1 resource instances")
        );
        let c = find(&s, CONTENT_FAILURE);
        assert_eq!(c.reason.as_deref(), Some("ContentDeletionFailed"));
        assert_eq!(c.message.as_deref(), Some("Failed to delete all resource types, 2 remaining: a failed, b failed"));
        // Back to ok: the status flips and the reason returns.
        assert!(update(&mut s, &failing_conditions(&Outcome::default())));
        assert_eq!(find(&s, CONTENT_REMAINING).status, "False");
    }
}
