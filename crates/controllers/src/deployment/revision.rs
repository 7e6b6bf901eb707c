//! Revisions (upstream `deployment_util.go` `SetNewReplicaSetAnnotations`,
//! `SetDeploymentRevision`, and `sync.go` `cleanupDeployment`): the new
//! ReplicaSet gets revision `max(old revisions) + 1`, a ReplicaSet that
//! becomes new again (a rollback through the template) keeps its former
//! revisions in `revision-history`, the Deployment's own annotations
//! (such as `kubernetes.io/change-cause`) are copied onto its new
//! ReplicaSet, and old ReplicaSets beyond `revisionHistoryLimit` are
//! deleted oldest revision first.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

use super::util::{self, MAX_REV_HISTORY_CHARS, REVISION, REVISION_HISTORY};

/// Copies the Deployment's annotations onto `rs` except the skipped ones
/// (`copyDeploymentAnnotationsToReplicaSet`); whether anything changed.
pub fn copy_annotations(d: &Deployment, rs: &mut ReplicaSet) -> bool {
    let ann = rs.metadata.annotations.get_or_insert_with(BTreeMap::new);
    let mut changed = false;
    for (k, v) in d.metadata.annotations.iter().flatten() {
        if util::skip_copy_annotation(k) || ann.get(k) == Some(v) {
            continue;
        }
        ann.insert(k.clone(), v.clone());
        changed = true;
    }
    changed
}

/// Sets the annotations of the Deployment's new ReplicaSet
/// (`SetNewReplicaSetAnnotations`): copied annotations, the revision when
/// `new_revision` is higher than the one it has (the former one then
/// appended to `revision-history`, trimmed from the front to 2000
/// characters), and — for a ReplicaSet about to be created (`exists`
/// false) — the desired/max replicas annotations. Whether anything changed.
pub fn set_new_rs_annotations(d: &Deployment, rs: &mut ReplicaSet, new_revision: i64, exists: bool) -> bool {
    let mut changed = copy_annotations(d, rs);
    let ann = rs.metadata.annotations.get_or_insert_with(BTreeMap::new);
    let old = ann.get(REVISION).cloned();
    let old_int = match old.as_deref().map(str::parse::<i64>) {
        Some(Ok(v)) => v,
        Some(Err(_)) if !old.as_deref().unwrap_or("").is_empty() => return false,
        _ => 0,
    };
    if old_int < new_revision {
        ann.insert(REVISION.into(), new_revision.to_string());
        changed = true;
        if let Some(old) = old.filter(|o| !o.is_empty()) {
            let history = ann.get(REVISION_HISTORY).cloned().unwrap_or_default();
            if history.is_empty() {
                ann.insert(REVISION_HISTORY.into(), old);
            } else {
                let parts: Vec<&str> = history.split(',').collect();
                let mut total = history.len() + old.len() + 1;
                let mut start = 0;
                while total > MAX_REV_HISTORY_CHARS && start < parts.len() {
                    total -= parts[start].len() + 1;
                    start += 1;
                }
                if total <= MAX_REV_HISTORY_CHARS {
                    let mut kept: Vec<&str> = parts[start..].to_vec();
                    kept.push(&old);
                    ann.insert(REVISION_HISTORY.into(), kept.join(","));
                }
            }
        }
    }
    if !exists {
        let replicas = util::d_replicas(d);
        if super::scale::set_replicas_annotations(rs, replicas, replicas + util::max_surge(d)) {
            changed = true;
        }
    }
    changed
}

/// Sets the Deployment's revision annotation (`SetDeploymentRevision`);
/// whether it changed.
pub fn set_deployment_revision(d: &mut Deployment, revision: &str) -> bool {
    let ann = d.metadata.annotations.get_or_insert_with(BTreeMap::new);
    if ann.get(REVISION).map(String::as_str) == Some(revision) {
        return false;
    }
    ann.insert(REVISION.into(), revision.into());
    true
}

/// The old ReplicaSets `cleanupDeployment` deletes: with a
/// `revisionHistoryLimit`, the alive old sets beyond the limit, lowest
/// revision first, skipping any that still has replicas (spec or status),
/// an unobserved generation, or is being deleted.
pub fn to_clean_up(d: &Deployment, old: &[ReplicaSet]) -> Vec<ReplicaSet> {
    let Some(limit) = util::revision_history_limit(d) else { return Vec::new() };
    let mut alive: Vec<ReplicaSet> =
        old.iter().filter(|rs| rs.metadata.deletion_timestamp.is_none()).cloned().collect();
    let diff = alive.len() as i64 - limit as i64;
    if diff <= 0 {
        return Vec::new();
    }
    alive.sort_by(util::by_revision);
    alive
        .into_iter()
        .take(diff as usize)
        .filter(|rs| {
            let observed = rs.status.as_ref().and_then(|s| s.observed_generation).unwrap_or(0);
            util::rs_actual(rs) == 0
                && util::rs_replicas(rs) == 0
                && rs.metadata.generation.unwrap_or(0) <= observed
                && rs.metadata.deletion_timestamp.is_none()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{DeploymentSpec, ReplicaSetSpec, ReplicaSetStatus};

    fn rs(name: &str, revision: Option<&str>, history: Option<&str>) -> ReplicaSet {
        let mut r = ReplicaSet::default();
        r.metadata.name = Some(name.into());
        let mut a = BTreeMap::new();
        if let Some(v) = revision {
            a.insert(REVISION.to_string(), v.to_string());
        }
        if let Some(h) = history {
            a.insert(REVISION_HISTORY.to_string(), h.to_string());
        }
        r.metadata.annotations = Some(a);
        r
    }

    fn deployment(ann: &[(&str, &str)]) -> Deployment {
        let mut d = Deployment::default();
        d.metadata.annotations = Some(ann.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        d.spec = Some(DeploymentSpec { replicas: Some(3), ..Default::default() });
        d
    }

    #[test]
    fn new_rs_gets_revision_change_cause_and_replica_annotations() {
        let d = deployment(&[
            ("kubernetes.io/change-cause", "set image"),
            (REVISION, "7"),
            ("kubectl.kubernetes.io/last-applied-configuration", "{}"),
        ]);
        let mut r = rs("a", None, None);
        assert!(set_new_rs_annotations(&d, &mut r, 1, false));
        let a = r.metadata.annotations.unwrap();
        assert_eq!(a.get(REVISION).unwrap(), "1");
        assert_eq!(a.get("kubernetes.io/change-cause").unwrap(), "set image");
        assert!(!a.contains_key("kubectl.kubernetes.io/last-applied-configuration"));
        assert!(!a.contains_key(REVISION_HISTORY));
        // RollingUpdate by default: 25% surge of 3 rounds up to 1.
        assert_eq!(a.get(util::DESIRED_REPLICAS).unwrap(), "3");
        assert_eq!(a.get(util::MAX_REPLICAS).unwrap(), "4");
    }

    #[test]
    fn rollback_keeps_former_revisions_in_history() {
        let d = deployment(&[]);
        let mut r = rs("a", Some("1"), None);
        assert!(set_new_rs_annotations(&d, &mut r, 3, true));
        let a = r.metadata.annotations.as_ref().unwrap();
        assert_eq!((a[REVISION].as_str(), a[REVISION_HISTORY].as_str()), ("3", "1"));
        assert!(!a.contains_key(util::DESIRED_REPLICAS), "existing sets get replica annotations when scaled");
        assert!(set_new_rs_annotations(&d, &mut r, 5, true));
        let a = r.metadata.annotations.as_ref().unwrap();
        assert_eq!((a[REVISION].as_str(), a[REVISION_HISTORY].as_str()), ("5", "1,3"));
        // A lower or equal revision changes nothing.
        assert!(!set_new_rs_annotations(&d, &mut r, 5, true));
        assert!(!set_new_rs_annotations(&d, &mut r, 2, true));
    }

    #[test]
    fn cleanup_keeps_revision_history_limit_and_skips_live_sets() {
        let mut d = deployment(&[]);
        d.spec.as_mut().unwrap().revision_history_limit = Some(1);
        let mk = |name: &str, rev: &str, replicas: i32| {
            let mut r = rs(name, Some(rev), None);
            r.spec = Some(ReplicaSetSpec { replicas: Some(replicas), ..Default::default() });
            r.status = Some(ReplicaSetStatus { replicas, ..Default::default() });
            r
        };
        let old = vec![mk("c", "3", 0), mk("a", "1", 0), mk("b", "2", 1)];
        let names: Vec<_> = to_clean_up(&d, &old).into_iter().map(|r| r.metadata.name.unwrap()).collect();
        // Two beyond the limit: revisions 1 and 2; 2 still has a replica.
        assert_eq!(names, ["a"]);
        d.spec.as_mut().unwrap().revision_history_limit = None;
        assert!(to_clean_up(&d, &old).is_empty());
    }
}
