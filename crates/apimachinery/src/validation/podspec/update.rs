//! The pod update rules of upstream's `ValidatePodUpdate`: what an update
//! of a pod's spec may change (images, `activeDeadlineSeconds` downwards,
//! tolerations by addition, scheduling gates by removal, node selector
//! entries by addition while gated, a negative grace period to 1) and the
//! message for everything else.
//!
//! Not here: node affinity changes of gated pods (still refused) and the
//! `cmp.Diff` upstream appends to the message.

use std::collections::BTreeSet;

use serde_json::Value;

use super::{list, str_of};
use crate::validation::field::{BadValue, ErrorList, FieldError, Path};

/// The 1.33 fields a pod update may change (`updatablePodSpecFieldsNoResources`).
pub const POD_UPDATE_FORBIDDEN_MSG: &str = "pod updates may not change fields other than \
`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,\
`spec.tolerations` (only additions to existing tolerations),\
`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// `ValidatePodUpdate`'s spec rules: `nodeName` is immutable once set;
/// `activeDeadlineSeconds` may only shrink (and not be removed); existing
/// tolerations may only change their `tolerationSeconds`; scheduling gates
/// may only be removed; beyond that only images, tolerations, gates and
/// (negative → 1) `terminationGracePeriodSeconds` may change.
pub fn validate_pod_spec_update(new: &Value, old: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let old_node = str_of(old, "nodeName");
    if !old_node.is_empty() && str_of(new, "nodeName") != old_node {
        errs.push(FieldError::invalid(
            &path.child("nodeName"),
            str_of(new, "nodeName"),
            crate::validation::FIELD_IMMUTABLE_ERROR_MSG,
        ));
    }
    let adp = path.child("activeDeadlineSeconds");
    match (
        new.get("activeDeadlineSeconds").and_then(Value::as_i64),
        old.get("activeDeadlineSeconds").and_then(Value::as_i64),
    ) {
        (Some(n), _) if !(0..=i64::from(i32::MAX)).contains(&n) => {
            errs.push(FieldError::invalid(&adp, n, "must be between 0 and 2147483647, inclusive"));
            return errs;
        }
        (Some(n), Some(o)) if o < n => {
            errs.push(FieldError::invalid(&adp, n, "must be less than or equal to previous value"));
            return errs;
        }
        (None, Some(_)) => {
            errs.push(FieldError::invalid(&adp, BadValue::Null, "must not update from a positive integer to nil value"))
        }
        _ => {}
    }
    errs.extend(validate_only_added_tolerations(
        list(new, "tolerations"),
        list(old, "tolerations"),
        &path.child("tolerations"),
    ));
    errs.extend(validate_only_deleted_scheduling_gates(
        list(new, "schedulingGates"),
        list(old, "schedulingGates"),
        &path.child("schedulingGates"),
    ));
    // A pod still held by scheduling gates may gain node selector entries
    // (queueing systems narrow its placement before releasing it).
    let gated = !list(old, "schedulingGates").is_empty();
    if gated {
        let (ns, os) = (new.get("nodeSelector"), old.get("nodeSelector"));
        let kept =
            os.and_then(Value::as_object).is_none_or(|o| o.iter().all(|(k, v)| ns.and_then(|n| n.get(k)) == Some(v)));
        if !kept {
            errs.push(FieldError::invalid(
                &path.child("nodeSelector"),
                BadValue::Raw(super::go_string_map(ns)),
                "only additions to spec.nodeSelector are allowed (no mutations or deletions)",
            ));
        }
    }
    let mut munged = new.clone();
    for l in ["containers", "initContainers"] {
        let olds = list(old, l);
        if let Some(cs) = munged.get_mut(l).and_then(Value::as_array_mut) {
            if cs.len() == olds.len() {
                for (c, o) in cs.iter_mut().zip(olds) {
                    if let (Some(c), Some(img)) = (c.as_object_mut(), o.get("image")) {
                        c.insert("image".into(), img.clone());
                    }
                }
            }
        }
    }
    if let Some(m) = munged.as_object_mut() {
        let mut munge = vec!["activeDeadlineSeconds", "tolerations", "schedulingGates"];
        if gated {
            munge.push("nodeSelector");
        }
        for f in munge {
            match old.get(f) {
                Some(v) => m.insert(f.to_string(), v.clone()),
                None => m.remove(f),
            };
        }
        let old_grace = old.get("terminationGracePeriodSeconds").and_then(Value::as_i64);
        if old_grace.is_some_and(|g| g < 0) && m.get("terminationGracePeriodSeconds").and_then(Value::as_i64) == Some(1)
        {
            m.insert("terminationGracePeriodSeconds".into(), old["terminationGracePeriodSeconds"].clone());
        }
    }
    if &munged != old && errs.is_empty() {
        errs.push(FieldError::forbidden(path, &format!("{POD_UPDATE_FORBIDDEN_MSG}\n")));
    }
    errs
}

/// `validateOnlyAddedTolerations`: every old toleration is still there,
/// perhaps with another `tolerationSeconds`.
fn validate_only_added_tolerations(new: &[Value], old: &[Value], path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let without_seconds = |t: &Value| {
        let mut t = t.clone();
        if let Some(m) = t.as_object_mut() {
            m.remove("tolerationSeconds");
        }
        t
    };
    for o in old {
        if !new.iter().any(|n| without_seconds(n) == without_seconds(o)) {
            errs.push(FieldError::forbidden(
                path,
                "existing toleration can not be modified except its tolerationSeconds",
            ));
            return errs;
        }
    }
    // Upstream re-validates the new list here; `validate_pod_spec` already
    // has, and a second copy of each cause would only repeat it.
    errs
}

/// `validateOnlyDeletedSchedulingGates`: no gate the old spec lacks.
fn validate_only_deleted_scheduling_gates(new: &[Value], old: &[Value], path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let old_names: BTreeSet<&str> = old.iter().map(|g| str_of(g, "name")).collect();
    for (i, g) in new.iter().enumerate() {
        let name = str_of(g, "name");
        if !old_names.contains(name) {
            errs.push(FieldError::forbidden(
                &path.index(i).child("name"),
                &format!("only deletion is allowed, but found new scheduling gate '{name}'"),
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn gated_pods_may_add_node_selector_entries() {
        let old = json!({"schedulingGates": [{"name": "g"}], "nodeSelector": {"a": "b"}, "containers": []});
        let mut added = old.clone();
        added["nodeSelector"]["c"] = json!("d");
        assert!(validate_pod_spec_update(&added, &old, &Path::new("spec")).is_empty());
        let mut changed = old.clone();
        changed["nodeSelector"] = json!({"a": "z"});
        assert_eq!(
            validate_pod_spec_update(&changed, &old, &Path::new("spec")).0[0].to_string(),
            "spec.nodeSelector: Invalid value: map[string]string{\"a\":\"z\"}: only additions to spec.nodeSelector are allowed (no mutations or deletions)"
        );
        let mut released = old.clone();
        released.as_object_mut().unwrap().remove("schedulingGates");
        released["nodeSelector"]["c"] = json!("d");
        assert!(validate_pod_spec_update(&released, &released.clone(), &Path::new("spec")).is_empty());
        let mut ungated_change = released.clone();
        ungated_change["nodeSelector"]["e"] = json!("f");
        assert_eq!(validate_pod_spec_update(&ungated_change, &released, &Path::new("spec")).len(), 1);
    }
}
