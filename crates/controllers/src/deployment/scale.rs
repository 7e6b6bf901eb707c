//! Scaling a Deployment (upstream `sync.go` `scale`, `isScalingEvent` and
//! `deployment_util.go` `GetProportion`/`getReplicaSetFraction`): when
//! `spec.replicas` changes while several ReplicaSets are active, the
//! change is spread over them in proportion to their size, using the
//! `desired-replicas` / `max-replicas` annotations each set carries from
//! the last time the Deployment scaled it.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

use super::util::{self, DESIRED_REPLICAS, MAX_REPLICAS};

/// An annotation parsed as an integer.
fn int_annotation(rs: &ReplicaSet, key: &str) -> Option<i32> {
    rs.metadata.annotations.as_ref()?.get(key)?.parse().ok()
}

/// Whether the replica annotations differ from `desired` / `max`
/// (`ReplicasAnnotationsNeedUpdate`).
pub fn replicas_annotations_need_update(rs: &ReplicaSet, desired: i32, max: i32) -> bool {
    let a = rs.metadata.annotations.as_ref();
    let get = |k: &str| a.and_then(|a| a.get(k)).cloned();
    get(DESIRED_REPLICAS) != Some(desired.to_string()) || get(MAX_REPLICAS) != Some(max.to_string())
}

/// Sets the replica annotations (`SetReplicasAnnotations`); whether they changed.
pub fn set_replicas_annotations(rs: &mut ReplicaSet, desired: i32, max: i32) -> bool {
    let changed = replicas_annotations_need_update(rs, desired, max);
    let a = rs.metadata.annotations.get_or_insert_with(BTreeMap::new);
    a.insert(DESIRED_REPLICAS.into(), desired.to_string());
    a.insert(MAX_REPLICAS.into(), max.to_string());
    changed
}

/// Whether `spec.replicas` changed since the active sets were last scaled
/// (`isScalingEvent`): some active set's `desired-replicas` differs.
pub fn is_scaling_event(d: &Deployment, all: &[ReplicaSet]) -> bool {
    let replicas = util::d_replicas(d);
    util::active(all).iter().any(|rs| matches!(int_annotation(rs, DESIRED_REPLICAS), Some(v) if v != replicas))
}

/// Whether the new set alone already runs the whole Deployment (`IsSaturated`).
pub fn is_saturated(d: &Deployment, rs: Option<&ReplicaSet>) -> bool {
    let Some(rs) = rs else { return false };
    let replicas = util::d_replicas(d);
    util::rs_replicas(rs) == replicas
        && int_annotation(rs, DESIRED_REPLICAS) == Some(replicas)
        && util::rs_available(rs) == replicas
}

/// Go's `math.Round` to int32: halves away from zero.
fn round(x: f64) -> i32 {
    x.round() as i32
}

/// How many replicas `rs` should gain (negative: lose) so that it keeps
/// its share of the Deployment's new size (`getReplicaSetFraction`).
fn fraction(rs: &ReplicaSet, d: &Deployment) -> i32 {
    let replicas = util::d_replicas(d);
    let current = util::rs_replicas(rs);
    if replicas == 0 {
        return -current;
    }
    let deployment_replicas = replicas + util::max_surge(d);
    let annotated =
        int_annotation(rs, MAX_REPLICAS).unwrap_or_else(|| d.status.as_ref().and_then(|s| s.replicas).unwrap_or(0));
    if annotated == 0 {
        return 0;
    }
    round(current as f64 * deployment_replicas as f64 / annotated as f64) - current
}

/// The share of `to_add` for `rs`, bounded by what is still to add
/// (`GetProportion`).
fn proportion(rs: &ReplicaSet, d: &Deployment, to_add: i32, added: i32) -> i32 {
    if util::rs_replicas(rs) == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let f = fraction(rs, d);
    let allowed = to_add - added;
    if to_add > 0 {
        f.min(allowed)
    } else {
        f.max(allowed)
    }
}

/// One scaling step of [`plan`]: the set, its new size, and whether it is
/// written even at the same size (to refresh its replica annotations:
/// upstream's `scaleReplicaSet` rather than `scaleReplicaSetAndRecordEvent`).
#[derive(Debug, Clone)]
pub struct Step {
    /// The ReplicaSet as listed.
    pub rs: ReplicaSet,
    /// Its new `spec.replicas`.
    pub replicas: i32,
    /// Write it even when the size does not change.
    pub always: bool,
}

/// What `scale` does for a Deployment whose new set is `new_rs` and old
/// ones `old`: one active (or the latest) set takes `spec.replicas`; a
/// saturated new set scales the old ones to 0; otherwise (RollingUpdate)
/// the difference to `replicas + maxSurge` is spread proportionally
/// (largest first; leftovers go to the first).
pub fn plan(d: &Deployment, new_rs: Option<&ReplicaSet>, old: &[ReplicaSet]) -> Vec<Step> {
    let replicas = util::d_replicas(d);
    let mut old_sorted = old.to_vec();
    old_sorted.sort_by(|a, b| util::by_creation(b, a));
    let mut all: Vec<ReplicaSet> = old_sorted.clone();
    all.extend(new_rs.cloned());
    let active = util::active(&all);
    let latest = match active.len() {
        0 => new_rs.cloned().or_else(|| old_sorted.first().cloned()),
        1 => Some(active[0].clone()),
        _ => None,
    };
    if let Some(rs) = latest {
        if util::rs_replicas(&rs) == replicas {
            return Vec::new();
        }
        return vec![Step { rs, replicas, always: false }];
    }
    if is_saturated(d, new_rs) {
        return util::active(old).into_iter().map(|rs| Step { rs, replicas: 0, always: false }).collect();
    }
    if !util::is_rolling(d) {
        return Vec::new();
    }
    let mut all = active;
    let allowed = if replicas > 0 { replicas + util::max_surge(d) } else { 0 };
    let to_add = allowed - util::sum_spec(&all);
    if to_add > 0 {
        all.sort_by(util::by_size_newer);
    } else if to_add < 0 {
        all.sort_by(util::by_size_older);
    }
    let mut added = 0;
    let mut sizes = Vec::with_capacity(all.len());
    for rs in &all {
        let p = if to_add != 0 { proportion(rs, d, to_add, added) } else { 0 };
        added += p;
        sizes.push(util::rs_replicas(rs) + p);
    }
    if to_add != 0 {
        if let Some(first) = sizes.first_mut() {
            *first = (*first + to_add - added).max(0);
        }
    }
    all.into_iter().zip(sizes).map(|(rs, replicas)| Step { rs, replicas, always: true }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{
        DeploymentSpec, DeploymentStrategy, ReplicaSetSpec, ReplicaSetStatus, RollingUpdateDeployment,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    fn dep(replicas: i32, surge: i32, unavailable: i32) -> Deployment {
        Deployment {
            spec: Some(DeploymentSpec {
                replicas: Some(replicas),
                strategy: Some(DeploymentStrategy {
                    type_: Some("RollingUpdate".into()),
                    rolling_update: Some(RollingUpdateDeployment {
                        max_surge: Some(IntOrString::Int(surge)),
                        max_unavailable: Some(IntOrString::Int(unavailable)),
                    }),
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// A set annotated as scaled by a Deployment of `old_replicas` (max surge 0), `age` seconds old.
    fn rs(name: &str, replicas: i32, old_replicas: i32, age: i64) -> ReplicaSet {
        let mut r = ReplicaSet::default();
        r.metadata.name = Some(name.into());
        r.metadata.creation_timestamp = Some(Time(jiff::Timestamp::from_second(1_000_000 - age).unwrap()));
        r.metadata.annotations = Some(
            [(DESIRED_REPLICAS.into(), old_replicas.to_string()), (MAX_REPLICAS.into(), old_replicas.to_string())]
                .into(),
        );
        r.spec = Some(ReplicaSetSpec { replicas: Some(replicas), ..Default::default() });
        r.status = Some(ReplicaSetStatus { replicas, ..Default::default() });
        r
    }

    fn sizes(steps: &[Step]) -> Vec<(String, i32)> {
        let mut v: Vec<_> = steps.iter().map(|s| (s.rs.metadata.name.clone().unwrap(), s.replicas)).collect();
        v.sort();
        v
    }

    fn s(v: &[(&str, i32)]) -> Vec<(String, i32)> {
        v.iter().map(|(n, r)| (n.to_string(), *r)).collect()
    }

    #[test]
    fn proportional_scaling_follows_upstream_test_scale_table() {
        // Cases of upstream sync_test.go TestScale (maxSurge 0, maxUnavailable 0).
        let new = rs("foo-v2", 2, 5, 0);
        let old = [rs("foo-v1", 3, 5, 10)];
        assert_eq!(sizes(&plan(&dep(10, 0, 0), Some(&new), &old)), s(&[("foo-v1", 6), ("foo-v2", 4)]));
        assert_eq!(sizes(&plan(&dep(3, 0, 0), Some(&new), &old)), s(&[("foo-v1", 2), ("foo-v2", 1)]));
        let new = rs("foo-v2", 8, 9, 0);
        let old = [rs("foo-v1", 1, 9, 10)];
        assert_eq!(sizes(&plan(&dep(4, 0, 0), Some(&new), &old)), s(&[("foo-v1", 0), ("foo-v2", 4)]));
        let new = rs("foo-v3", 2, 7, 0);
        let old = [rs("foo-v2", 3, 7, 10), rs("foo-v1", 2, 7, 20)];
        assert_eq!(sizes(&plan(&dep(10, 0, 0), Some(&new), &old)), s(&[("foo-v1", 3), ("foo-v2", 4), ("foo-v3", 3)]));
        let new = rs("foo-v3", 2, 13, 0);
        let old = [rs("foo-v2", 8, 13, 10), rs("foo-v1", 3, 13, 20)];
        assert_eq!(sizes(&plan(&dep(8, 0, 0), Some(&new), &old)), s(&[("foo-v1", 2), ("foo-v2", 5), ("foo-v3", 1)]));
    }

    #[test]
    fn single_active_set_takes_the_new_size() {
        // "normal scaling event: 10 -> 12".
        let new = rs("foo-v1", 10, 10, 0);
        assert_eq!(sizes(&plan(&dep(12, 0, 0), Some(&new), &[])), s(&[("foo-v1", 12)]));
        // Only an old set active: it is scaled.
        let new = rs("foo-v2", 0, 10, 0);
        let old = [rs("foo-v1", 10, 10, 10)];
        assert_eq!(sizes(&plan(&dep(12, 0, 0), Some(&new), &old)), s(&[("foo-v1", 12)]));
        assert!(plan(&dep(10, 0, 0), Some(&rs("foo-v1", 10, 10, 0)), &[]).is_empty());
    }

    #[test]
    fn saturated_new_set_scales_old_ones_to_zero() {
        let mut new = rs("foo-v2", 5, 5, 0);
        new.status.as_mut().unwrap().available_replicas = Some(5);
        let old = [rs("foo-v1", 1, 5, 10)];
        assert_eq!(sizes(&plan(&dep(5, 0, 0), Some(&new), &old)), s(&[("foo-v1", 0)]));
    }

    #[test]
    fn scaling_event_is_a_changed_desired_annotation() {
        let all = [rs("foo-v1", 3, 5, 10), rs("foo-v2", 0, 7, 0)];
        assert!(is_scaling_event(&dep(4, 0, 0), &all));
        assert!(!is_scaling_event(&dep(5, 0, 0), &all));
    }
}
