//! Shared helpers of the Deployment controller (upstream
//! `pkg/controller/deployment/util/deployment_util.go` and
//! `pkg/controller/controller_utils.go`): annotation keys, replica counts
//! over sets of ReplicaSets, upstream's orderings, maxSurge/maxUnavailable
//! resolution and template comparison ignoring `pod-template-hash`.

use std::cmp::Ordering;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// The label (and selector key) every ReplicaSet a Deployment creates
/// carries: the hash of its pod template (`apps.DefaultDeploymentUniqueLabelKey`).
pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";
/// The revision of a Deployment and of its ReplicaSets.
pub const REVISION: &str = "deployment.kubernetes.io/revision";
/// Earlier revisions a ReplicaSet had (comma-separated), set on rollback.
pub const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
/// `spec.replicas` of the Deployment when the ReplicaSet was last scaled by it.
pub const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
/// `spec.replicas + maxSurge` of the Deployment at that time.
pub const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
/// The change cause kubectl records and `rollout history` shows.
pub const CHANGE_CAUSE: &str = "kubernetes.io/change-cause";
/// Longest `revision-history` value kept (upstream's `maxRevHistoryLengthInChars`).
pub const MAX_REV_HISTORY_CHARS: usize = 2000;

/// Annotations never copied from a Deployment to its ReplicaSets
/// (upstream's `annotationsToSkip`).
pub fn skip_copy_annotation(key: &str) -> bool {
    matches!(
        key,
        "kubectl.kubernetes.io/last-applied-configuration"
            | REVISION
            | REVISION_HISTORY
            | DESIRED_REPLICAS
            | MAX_REPLICAS
            | "deprecated.deployment.rollback.to"
    )
}

/// `spec.replicas` of a Deployment (the server defaults it to 1).
pub fn d_replicas(d: &Deployment) -> i32 {
    d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

/// `spec.replicas` of a ReplicaSet (the server defaults it to 1).
pub fn rs_replicas(rs: &ReplicaSet) -> i32 {
    rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

fn rs_status(rs: &ReplicaSet, f: impl Fn(&k8s_openapi::api::apps::v1::ReplicaSetStatus) -> Option<i32>) -> i32 {
    rs.status.as_ref().and_then(f).unwrap_or(0)
}

/// `status.replicas` of a ReplicaSet.
pub fn rs_actual(rs: &ReplicaSet) -> i32 {
    rs_status(rs, |s| Some(s.replicas))
}

/// `status.availableReplicas` of a ReplicaSet.
pub fn rs_available(rs: &ReplicaSet) -> i32 {
    rs_status(rs, |s| s.available_replicas)
}

/// `status.readyReplicas` of a ReplicaSet.
pub fn rs_ready(rs: &ReplicaSet) -> i32 {
    rs_status(rs, |s| s.ready_replicas)
}

/// Sum of `spec.replicas` (upstream `GetReplicaCountForReplicaSets`).
pub fn sum_spec<'a>(rss: impl IntoIterator<Item = &'a ReplicaSet>) -> i32 {
    rss.into_iter().map(rs_replicas).sum()
}

/// Sum of `status.replicas` (`GetActualReplicaCountForReplicaSets`).
pub fn sum_actual<'a>(rss: impl IntoIterator<Item = &'a ReplicaSet>) -> i32 {
    rss.into_iter().map(rs_actual).sum()
}

/// Sum of `status.availableReplicas` (`GetAvailableReplicaCountForReplicaSets`).
pub fn sum_available<'a>(rss: impl IntoIterator<Item = &'a ReplicaSet>) -> i32 {
    rss.into_iter().map(rs_available).sum()
}

/// Sum of `status.readyReplicas` (`GetReadyReplicaCountForReplicaSets`).
pub fn sum_ready<'a>(rss: impl IntoIterator<Item = &'a ReplicaSet>) -> i32 {
    rss.into_iter().map(rs_ready).sum()
}

/// The ReplicaSets with `spec.replicas > 0` (`FilterActiveReplicaSets`).
pub fn active(rss: &[ReplicaSet]) -> Vec<ReplicaSet> {
    rss.iter().filter(|rs| rs_replicas(rs) > 0).cloned().collect()
}

fn created(rs: &ReplicaSet) -> Option<jiff::Timestamp> {
    rs.metadata.creation_timestamp.as_ref().map(|t| t.0)
}

fn name(rs: &ReplicaSet) -> &str {
    rs.metadata.name.as_deref().unwrap_or("")
}

/// Oldest first, ties by name (`ReplicaSetsByCreationTimestamp`).
pub fn by_creation(a: &ReplicaSet, b: &ReplicaSet) -> Ordering {
    match created(a).cmp(&created(b)) {
        Ordering::Equal => name(a).cmp(name(b)),
        o => o,
    }
}

/// Largest first, ties oldest first (`ReplicaSetsBySizeOlder`).
pub fn by_size_older(a: &ReplicaSet, b: &ReplicaSet) -> Ordering {
    rs_replicas(b).cmp(&rs_replicas(a)).then_with(|| by_creation(a, b))
}

/// Largest first, ties newest first (`ReplicaSetsBySizeNewer`).
pub fn by_size_newer(a: &ReplicaSet, b: &ReplicaSet) -> Ordering {
    rs_replicas(b).cmp(&rs_replicas(a)).then_with(|| by_creation(b, a))
}

/// The revision annotation of an object's metadata (0 when absent or unparsable).
pub fn revision(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> i64 {
    meta.annotations.as_ref().and_then(|a| a.get(REVISION)).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// Lowest revision first, ties oldest first (`ReplicaSetsByRevision`).
pub fn by_revision(a: &ReplicaSet, b: &ReplicaSet) -> Ordering {
    revision(&a.metadata).cmp(&revision(&b.metadata)).then_with(|| by_creation(a, b))
}

/// The highest revision among `rss` (`MaxRevision`).
pub fn max_revision(rss: &[ReplicaSet]) -> i64 {
    rss.iter().map(|rs| revision(&rs.metadata)).max().unwrap_or(0)
}

/// An int-or-percent scaled against `total` (apimachinery
/// `GetScaledValueFromIntOrPercent`): a percentage rounds up or down;
/// a string without `%` is an error, as upstream.
pub fn scaled_value(v: &IntOrString, total: i32, round_up: bool) -> Result<i32, String> {
    match v {
        IntOrString::Int(i) => Ok(*i),
        IntOrString::String(s) => {
            let Some(p) = s.strip_suffix('%') else {
                return Err("invalid value for IntOrString: invalid type: string is not a percentage".to_string());
            };
            let p: i64 = p.parse().map_err(|_| format!("invalid value for IntOrString: invalid value {s:?}"))?;
            let prod = p * total as i64;
            Ok(if round_up { (prod + 99).div_euclid(100) } else { prod.div_euclid(100) } as i32)
        }
    }
}

/// `(maxSurge, maxUnavailable)` as counts for `desired` replicas
/// (`ResolveFenceposts`): surge rounds up, unavailable down, and both
/// zero means one unavailable. Defaults 25% / 25%.
pub fn resolve_fenceposts(
    surge: Option<&IntOrString>,
    unavailable: Option<&IntOrString>,
    desired: i32,
) -> Result<(i32, i32), String> {
    let zero = IntOrString::Int(0);
    let s = scaled_value(surge.unwrap_or(&zero), desired, true)?;
    let u = scaled_value(unavailable.unwrap_or(&zero), desired, false)?;
    Ok(if s == 0 && u == 0 { (0, 1) } else { (s, u) })
}

/// Whether the strategy is RollingUpdate (the server's default).
pub fn is_rolling(d: &Deployment) -> bool {
    d.spec.as_ref().and_then(|s| s.strategy.as_ref()).and_then(|s| s.type_.as_deref()).unwrap_or("RollingUpdate")
        == "RollingUpdate"
}

fn fenceposts(d: &Deployment) -> (i32, i32) {
    let ru = d.spec.as_ref().and_then(|s| s.strategy.as_ref()).and_then(|s| s.rolling_update.as_ref());
    let pct = IntOrString::String("25%".into());
    let surge = ru.and_then(|r| r.max_surge.as_ref()).unwrap_or(&pct);
    let unav = ru.and_then(|r| r.max_unavailable.as_ref()).unwrap_or(&pct);
    // Validation refuses bad values; upstream ignores the error here too.
    resolve_fenceposts(Some(surge), Some(unav), d_replicas(d)).unwrap_or((0, 1))
}

/// maxSurge as a count (0 unless RollingUpdate) (`MaxSurge`).
pub fn max_surge(d: &Deployment) -> i32 {
    if !is_rolling(d) {
        return 0;
    }
    fenceposts(d).0
}

/// maxUnavailable as a count, at most `spec.replicas` (0 unless
/// RollingUpdate or with 0 replicas) (`MaxUnavailable`).
pub fn max_unavailable(d: &Deployment) -> i32 {
    let replicas = d_replicas(d);
    if !is_rolling(d) || replicas == 0 {
        return 0;
    }
    fenceposts(d).1.min(replicas)
}

/// Whether two pod templates are equal once `pod-template-hash` is
/// removed from their labels (`EqualIgnoreHash`), nil and empty
/// lists/maps counting as equal as in `apiequality.Semantic.DeepEqual`.
pub fn equal_ignore_hash(a: &PodTemplateSpec, b: &PodTemplateSpec) -> bool {
    normalized(a) == normalized(b)
}

fn normalized(t: &PodTemplateSpec) -> serde_json::Value {
    let mut t = t.clone();
    if let Some(l) = t.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
        l.remove(POD_TEMPLATE_HASH);
    }
    let mut v = serde_json::to_value(&t).unwrap_or_default();
    prune(&mut v, "");
    v
}

/// Keys whose value is a map where empty and absent mean the same.
const MAP_FIELDS: &[&str] = &["labels", "annotations", "nodeSelector", "limits", "requests", "overhead", "matchLabels"];

fn prune(v: &mut serde_json::Value, _key: &str) {
    if let serde_json::Value::Object(m) = v {
        for (k, x) in m.iter_mut() {
            prune(x, k);
        }
        m.retain(|k, x| match x {
            serde_json::Value::Null => false,
            serde_json::Value::Array(a) => !a.is_empty(),
            serde_json::Value::Object(o) => !(o.is_empty() && MAP_FIELDS.contains(&k.as_str())),
            _ => true,
        });
    } else if let serde_json::Value::Array(a) = v {
        for x in a.iter_mut() {
            prune(x, "");
        }
    }
}

/// Whether `spec.progressDeadlineSeconds` is set and not MaxInt32 (`HasProgressDeadline`).
pub fn has_progress_deadline(d: &Deployment) -> bool {
    matches!(d.spec.as_ref().and_then(|s| s.progress_deadline_seconds), Some(s) if s != i32::MAX)
}

/// Whether `spec.revisionHistoryLimit` is set and not MaxInt32 (`HasRevisionHistoryLimit`).
pub fn revision_history_limit(d: &Deployment) -> Option<i32> {
    d.spec.as_ref().and_then(|s| s.revision_history_limit).filter(|l| *l != i32::MAX)
}

/// The controller ownerReference's uid of an object, if any.
pub fn controller_uid(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Option<&str> {
    meta.owner_references.as_ref()?.iter().find(|o| o.controller == Some(true)).map(|o| o.uid.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ios(s: &str) -> IntOrString {
        IntOrString::String(s.into())
    }

    #[test]
    fn resolve_fenceposts_follows_upstream_table() {
        // Cases from upstream deployment_util_test.go TestResolveFenceposts.
        type Case = (Option<IntOrString>, Option<IntOrString>, i32, Result<(i32, i32), ()>);
        let cases: &[Case] = &[
            (Some(ios("0%")), Some(ios("0%")), 0, Ok((0, 1))),
            (Some(ios("39%")), Some(ios("39%")), 10, Ok((4, 3))),
            (Some(ios("oops")), Some(ios("0%")), 10, Err(())),
            (Some(ios("55%")), Some(ios("urg")), 10, Err(())),
            (None, Some(ios("39%")), 10, Ok((0, 3))),
            (Some(ios("39%")), None, 10, Ok((4, 0))),
            (None, None, 10, Ok((0, 1))),
        ];
        for (s, u, d, want) in cases {
            let got = resolve_fenceposts(s.as_ref(), u.as_ref(), *d).map_err(|_| ());
            assert_eq!(&got, want, "{s:?} {u:?} {d}");
        }
        // The 25%/25% defaults on 10 replicas: surge rounds up, unavailable down.
        assert_eq!(resolve_fenceposts(Some(&ios("25%")), Some(&ios("25%")), 10), Ok((3, 2)));
        assert_eq!(resolve_fenceposts(Some(&ios("25%")), Some(&ios("25%")), 1), Ok((1, 0)));
    }

    #[test]
    fn template_equality_ignores_hash_and_empty_maps() {
        let mut a = PodTemplateSpec::default();
        let mut b = PodTemplateSpec::default();
        a.metadata = Some(Default::default());
        a.metadata.as_mut().unwrap().labels = Some([("app".into(), "x".into())].into());
        b.metadata = a.metadata.clone();
        b.metadata.as_mut().unwrap().labels.as_mut().unwrap().insert(POD_TEMPLATE_HASH.into(), "abc".into());
        b.metadata.as_mut().unwrap().annotations = Some(Default::default());
        assert!(equal_ignore_hash(&a, &b));
        b.metadata.as_mut().unwrap().labels.as_mut().unwrap().insert("v".into(), "2".into());
        assert!(!equal_ignore_hash(&a, &b));
    }
}
