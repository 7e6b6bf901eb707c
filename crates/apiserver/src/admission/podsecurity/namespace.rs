//! PodSecurity on Namespace writes (upstream's `ValidateNamespace`): the
//! policy labels must be valid (422 on create, and on update when they
//! change), and a stricter `enforce` level warns about the existing pods
//! that would violate it (`existing pods in namespace "x" violate the new
//! PodSecurity enforce level "restricted:latest"`, then one warning per
//! distinct set of reasons, naming a pod).

use std::collections::BTreeMap;

use rkube_apimachinery::{meta, ApiError, StatusCause};
use serde_json::Value;

use super::policy::{evaluate, Level, LevelVersion, Policy};

/// At most this many pods are checked (upstream's `namespaceMaxPodsToCheck`).
const MAX_PODS_TO_CHECK: usize = 3000;

/// The 422 for invalid policy labels: `Namespace "x" is invalid: <causes>`.
pub fn invalid(name: &str, errors: &[String]) -> ApiError {
    let causes = errors
        .iter()
        .map(|e| {
            let (field, message) = e.split_once(": ").unwrap_or(("metadata.labels", e));
            StatusCause { reason: "FieldValueInvalid".into(), message: message.into(), field: field.into() }
        })
        .collect();
    ApiError::Invalid { group: String::new(), kind: "Namespace".into(), name: name.into(), causes }
}

/// Whether the labels must be refused: invalid on create, or invalid and
/// changed on update.
pub fn refuse_labels(new_errors: &[String], old_errors: Option<&[String]>) -> bool {
    !new_errors.is_empty() && old_errors.is_none_or(|old| old.is_empty() || old != new_errors)
}

/// Whether an enforce change calls for checking the existing pods.
pub fn needs_pod_check(new: LevelVersion, old: LevelVersion) -> bool {
    if new == old || new.level == Level::Privileged {
        return false;
    }
    !(new.version == old.version && new.level <= old.level)
}

/// Upstream's `EvaluatePodsInNamespace`: the warnings for `pods` under the
/// new `enforce` level. Pods of one controller after the first are checked
/// last.
pub fn pod_warnings(namespace: &str, enforce: LevelVersion, pods: &[Value]) -> Vec<String> {
    let mut seen_controllers = Vec::new();
    let (mut first, mut rest): (Vec<&Value>, Vec<&Value>) = (Vec::new(), Vec::new());
    for pod in pods {
        let controller = pod
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
            .and_then(|r| r.get("uid").and_then(Value::as_str));
        match controller {
            Some(uid) if seen_controllers.contains(&uid) => rest.push(pod),
            Some(uid) => {
                seen_controllers.push(uid);
                first.push(pod);
            }
            None => first.push(pod),
        }
    }
    let ordered: Vec<&Value> = first.into_iter().chain(rest).collect();
    let total = ordered.len();
    let checked = total.min(MAX_PODS_TO_CHECK);
    // reasons → (lexically first pod name, count), in first-seen order.
    let mut order: Vec<String> = Vec::new();
    let mut counts: BTreeMap<String, (String, usize)> = BTreeMap::new();
    let null = Value::Null;
    for pod in &ordered[..checked] {
        let violations = evaluate(enforce, pod.get("metadata").unwrap_or(&null), pod.get("spec").unwrap_or(&null));
        if violations.is_empty() {
            continue;
        }
        let reasons = violations.iter().map(|v| v.reason.as_str()).collect::<Vec<_>>().join(", ");
        let name = meta::name(pod).to_string();
        let entry = counts.entry(reasons.clone()).or_insert_with(|| {
            order.push(reasons.clone());
            (name.clone(), 0)
        });
        if name < entry.0 {
            entry.0 = name;
        }
        entry.1 += 1;
    }
    let mut warnings = Vec::new();
    if checked < total {
        warnings.push(format!(
            "new PodSecurity enforce level only checked against the first {checked} of {total} existing pods"
        ));
    }
    if !order.is_empty() {
        warnings.push(format!(
            "existing pods in namespace {namespace:?} violate the new PodSecurity enforce level \"{enforce}\""
        ));
    }
    let mut pod_warnings: Vec<String> = order
        .iter()
        .map(|reasons| {
            let (name, count) = &counts[reasons];
            match count {
                1 => format!("{name}: {reasons}"),
                2 => format!("{name} (and 1 other pod): {reasons}"),
                n => format!("{name} (and {} other pods): {reasons}", n - 1),
            }
        })
        .collect();
    pod_warnings.sort();
    warnings.extend(pod_warnings);
    warnings
}

/// The policy and label errors of a namespace object.
pub fn policy_of(ns: &Value) -> (Policy, Vec<String>) {
    Policy::from_labels(&meta::labels(ns))
}

#[cfg(test)]
mod tests {
    use super::super::policy::Version;
    use super::*;
    use serde_json::json;

    fn lv(level: Level) -> LevelVersion {
        LevelVersion { level, version: Version::Latest }
    }

    #[test]
    fn stricter_enforce_levels_check_existing_pods() {
        assert!(needs_pod_check(lv(Level::Restricted), lv(Level::Baseline)));
        assert!(!needs_pod_check(lv(Level::Baseline), lv(Level::Restricted)), "relaxed");
        assert!(!needs_pod_check(lv(Level::Privileged), lv(Level::Baseline)));
        let v = LevelVersion { level: Level::Baseline, version: Version::Minor(20) };
        assert!(needs_pod_check(v, lv(Level::Restricted)), "another version");
    }

    #[test]
    fn warnings_group_pods_by_reasons() {
        let priv_pod = |name: &str| json!({"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "securityContext": {"privileged": true}}]}});
        let pods = [
            priv_pod("b"),
            priv_pod("a"),
            priv_pod("c"),
            json!({"metadata": {"name": "ok"}, "spec": {"containers": [{"name": "c"}]}}),
            json!({"metadata": {"name": "h"}, "spec": {"hostPID": true, "containers": [{"name": "c"}]}}),
        ];
        assert_eq!(
            pod_warnings("web", lv(Level::Baseline), &pods),
            [
                "existing pods in namespace \"web\" violate the new PodSecurity enforce level \"baseline:latest\"",
                "a (and 2 other pods): privileged",
                "h: host namespaces",
            ]
        );
    }

    #[test]
    fn invalid_labels_are_refused_when_they_change() {
        let errs = vec!["e".to_string()];
        assert!(refuse_labels(&errs, None));
        assert!(!refuse_labels(&errs, Some(&errs)));
        assert!(refuse_labels(&errs, Some(&[])));
        let err = invalid("x", &[r#"metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted"#.into()]);
        match err {
            ApiError::Invalid { causes, .. } => {
                assert_eq!(causes[0].field, "metadata.labels[pod-security.kubernetes.io/enforce]");
                assert_eq!(
                    causes[0].message,
                    r#"Invalid value: "strict": must be one of privileged, baseline, restricted"#
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
