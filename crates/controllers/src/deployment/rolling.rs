//! The RollingUpdate strategy (upstream `rolling.go` and
//! `deployment_util.go` `NewRSNewReplicas`): scale the new ReplicaSet up
//! within `replicas + maxSurge`, then scale old ones down while at least
//! `replicas - maxUnavailable` pods stay available — unhealthy old
//! replicas first, oldest sets first.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

use super::util;

/// How many replicas the new set should have now (`NewRSNewReplicas`):
/// RollingUpdate grows it by what `replicas + maxSurge` leaves room for,
/// up to `replicas`; Recreate gives it `replicas` at once.
pub fn new_rs_new_replicas(d: &Deployment, all: &[ReplicaSet], new_rs: &ReplicaSet) -> i32 {
    let replicas = util::d_replicas(d);
    let current_new = util::rs_replicas(new_rs);
    if !util::is_rolling(d) {
        return replicas;
    }
    let max_total = replicas + util::max_surge(d);
    let current = util::sum_spec(all);
    if current >= max_total {
        return current_new;
    }
    current_new + (max_total - current).min(replicas - current_new)
}

/// The new set's next size, if it changes (`reconcileNewReplicaSet`):
/// down to `replicas` at once when larger, else [`new_rs_new_replicas`].
pub fn reconcile_new(d: &Deployment, all: &[ReplicaSet], new_rs: &ReplicaSet) -> Option<i32> {
    let replicas = util::d_replicas(d);
    let current = util::rs_replicas(new_rs);
    let next = if current >= replicas { replicas } else { new_rs_new_replicas(d, all, new_rs) };
    (next != current).then_some(next)
}

/// The scale-downs of old sets (`reconcileOldReplicaSets`), in order, as
/// `(index into old_active, new size)`. `old_active` are the old sets with
/// replicas. At most `all - (replicas - maxUnavailable) - unavailable new
/// replicas` go: first old replicas that are not available
/// (`cleanupUnhealthyReplicas`), then available ones as long as more than
/// `replicas - maxUnavailable` stay available
/// (`scaleDownOldReplicaSetsForRollingUpdate`); oldest sets first.
pub fn reconcile_old(d: &Deployment, old_active: &[ReplicaSet], new_rs: &ReplicaSet) -> Vec<(usize, i32)> {
    let old_count = util::sum_spec(old_active);
    if old_count == 0 {
        return Vec::new();
    }
    let all_count = old_count + util::rs_replicas(new_rs);
    let min_available = util::d_replicas(d) - util::max_unavailable(d);
    let new_unavailable = util::rs_replicas(new_rs) - util::rs_available(new_rs);
    let max_scaled_down = all_count - min_available - new_unavailable;
    if max_scaled_down <= 0 {
        return Vec::new();
    }
    let mut order: Vec<usize> = (0..old_active.len()).collect();
    order.sort_by(|a, b| util::by_creation(&old_active[*a], &old_active[*b]));
    let mut sizes: Vec<i32> = old_active.iter().map(util::rs_replicas).collect();
    let mut steps = Vec::new();
    // Unhealthy replicas first.
    let mut cleaned = 0;
    for &i in &order {
        if cleaned >= max_scaled_down {
            break;
        }
        let available = util::rs_available(&old_active[i]);
        if sizes[i] == 0 || sizes[i] == available {
            continue;
        }
        let n = (max_scaled_down - cleaned).min(sizes[i] - available);
        sizes[i] -= n;
        cleaned += n;
        steps.push((i, sizes[i]));
    }
    // Then available ones, keeping minAvailable.
    let available = util::sum_available(old_active) + util::rs_available(new_rs);
    if available > min_available {
        let total = available - min_available;
        let mut scaled = 0;
        for &i in &order {
            if scaled >= total {
                break;
            }
            if sizes[i] == 0 {
                continue;
            }
            let n = sizes[i].min(total - scaled);
            sizes[i] -= n;
            scaled += n;
            steps.push((i, sizes[i]));
        }
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{
        DeploymentSpec, DeploymentStrategy, ReplicaSetSpec, ReplicaSetStatus, RollingUpdateDeployment,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    fn dep(replicas: i32, surge: IntOrString, unavailable: IntOrString) -> Deployment {
        Deployment {
            spec: Some(DeploymentSpec {
                replicas: Some(replicas),
                strategy: Some(DeploymentStrategy {
                    type_: Some("RollingUpdate".into()),
                    rolling_update: Some(RollingUpdateDeployment {
                        max_surge: Some(surge),
                        max_unavailable: Some(unavailable),
                    }),
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn rs(name: &str, replicas: i32, available: i32, age: i64) -> ReplicaSet {
        let mut r = ReplicaSet::default();
        r.metadata.name = Some(name.into());
        r.metadata.creation_timestamp = Some(Time(jiff::Timestamp::from_second(1_000_000 - age).unwrap()));
        r.spec = Some(ReplicaSetSpec { replicas: Some(replicas), ..Default::default() });
        r.status = Some(ReplicaSetStatus { replicas, available_replicas: Some(available), ..Default::default() });
        r
    }

    use IntOrString::Int;

    #[test]
    fn new_rs_grows_within_max_surge() {
        // Upstream rolling_test.go TestDeploymentController_reconcileNewReplicaSet:
        // (replicas, maxSurge, old, new) -> new replicas.
        let cases = [
            (10, 0, 10, 0, None),
            (10, 2, 10, 0, Some(2)),
            (10, 2, 5, 0, Some(7)),
            (10, 2, 10, 2, None),
            (2, 2, 2, 3, Some(2)),
        ];
        for (replicas, surge, old, new, want) in cases {
            let d = dep(replicas, Int(surge), Int(0));
            let new_rs = rs("new", new, 0, 0);
            let all = [rs("old", old, old, 10), new_rs.clone()];
            assert_eq!(reconcile_new(&d, &all, &new_rs), want, "{replicas} {surge} {old} {new}");
        }
    }

    #[test]
    fn defaults_25_percent_on_ten_replicas() {
        let d = dep(10, IntOrString::String("25%".into()), IntOrString::String("25%".into()));
        let new_rs = rs("new", 0, 0, 0);
        let all = [rs("old", 10, 10, 10), new_rs.clone()];
        // Surge 3 (rounded up): the new set starts at 3.
        assert_eq!(reconcile_new(&d, &all, &new_rs), Some(3));
        // Unavailable 2 (rounded down): 13 pods, 3 new unavailable -> 13-8-3 = 2 old go.
        let new_rs = rs("new", 3, 0, 0);
        assert_eq!(reconcile_old(&d, &[rs("old", 10, 10, 10)], &new_rs), vec![(0, 8)]);
    }

    #[test]
    fn old_sets_scale_down_keeping_min_available() {
        // Shaped as upstream's TestDeploymentController_reconcileOldReplicaSets (maxSurge 0):
        // (replicas, maxUnavailable, old, new, old available, new available) -> old size.
        let cases = [
            (10, 0, 10, 0, 10, 0, Some(9)),
            (10, 2, 10, 0, 10, 0, Some(8)),
            (10, 2, 8, 2, 8, 0, None),
            (10, 2, 8, 2, 8, 2, Some(6)),
            (10, 2, 2, 10, 2, 10, Some(0)),
        ];
        for (replicas, unav, old, new, old_av, new_av, want) in cases {
            let d = dep(replicas, Int(0), Int(unav));
            let steps = reconcile_old(&d, &[rs("old", old, old_av, 10)], &rs("new", new, new_av, 0));
            assert_eq!(steps.last().map(|s| s.1), want, "{replicas} {unav} {old} {new} {old_av} {new_av}");
        }
    }

    #[test]
    fn unhealthy_old_replicas_go_first_oldest_set_first() {
        // Two old sets with
        // unavailable replicas; maxUnavailable 2, new set 0 of 10.
        let d = dep(10, Int(0), Int(2));
        let old = [rs("newer", 5, 5, 10), rs("older", 5, 2, 20)];
        let steps = reconcile_old(&d, &old, &rs("new", 0, 0, 0));
        // 10 pods, min available 8: at most 2 go, both unhealthy ones of the older set.
        assert_eq!(steps, vec![(1, 3)]);
    }
}
