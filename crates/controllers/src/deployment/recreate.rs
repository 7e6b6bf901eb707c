//! The Recreate strategy (upstream `recreate.go`): scale every old
//! ReplicaSet to 0, wait until no old pod runs, then create or scale the
//! new ReplicaSet to `replicas`.

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;

use super::util;

/// Whether pods of old sets may still run (`oldPodsRunning`): an old set
/// still counts replicas in its status, or a pod controlled by one of the
/// Deployment's sets other than the new one is not Succeeded or Failed.
/// `pods` are the pods matching the Deployment's selector; `sets` all its sets.
pub fn old_pods_running(new_rs: Option<&ReplicaSet>, old: &[ReplicaSet], sets: &[ReplicaSet], pods: &[Pod]) -> bool {
    if util::sum_actual(old) > 0 {
        return true;
    }
    let new_uid = new_rs.and_then(|n| n.metadata.uid.as_deref());
    pods.iter().any(|p| {
        let Some(owner) = util::controller_uid(&p.metadata) else { return false };
        if Some(owner) == new_uid || !sets.iter().any(|s| s.metadata.uid.as_deref() == Some(owner)) {
            return false;
        }
        !matches!(p.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded") | Some("Failed"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::ReplicaSetStatus;
    use k8s_openapi::api::core::v1::PodStatus;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    fn rs(uid: &str, actual: i32) -> ReplicaSet {
        let mut r = ReplicaSet::default();
        r.metadata.uid = Some(uid.into());
        r.status = Some(ReplicaSetStatus { replicas: actual, ..Default::default() });
        r
    }

    fn pod(owner: &str, phase: &str) -> Pod {
        let mut p = Pod::default();
        p.metadata.owner_references =
            Some(vec![OwnerReference { uid: owner.into(), controller: Some(true), ..Default::default() }]);
        p.status = Some(PodStatus { phase: Some(phase.into()), ..Default::default() });
        p
    }

    #[test]
    fn old_pods_running_follows_upstream_cases() {
        // Shaped as upstream recreate_test.go TestOldPodsRunning.
        let new = rs("new", 0);
        let old = rs("old", 0);
        let sets = [new.clone(), old.clone()];
        assert!(!old_pods_running(Some(&new), std::slice::from_ref(&old), &sets, &[]));
        assert!(old_pods_running(Some(&new), &[rs("old", 1)], &sets, &[]));
        assert!(!old_pods_running(Some(&new), std::slice::from_ref(&old), &sets, &[pod("new", "Running")]));
        assert!(old_pods_running(Some(&new), std::slice::from_ref(&old), &sets, &[pod("old", "Running")]));
        assert!(old_pods_running(Some(&new), std::slice::from_ref(&old), &sets, &[pod("old", "Pending")]));
        assert!(old_pods_running(Some(&new), std::slice::from_ref(&old), &sets, &[pod("old", "Unknown")]));
        assert!(!old_pods_running(
            Some(&new),
            std::slice::from_ref(&old),
            &sets,
            &[pod("old", "Succeeded"), pod("old", "Failed"), pod("stranger", "Running")]
        ));
        assert!(old_pods_running(None, std::slice::from_ref(&old), &sets, &[pod("new", "Running")]));
    }
}
