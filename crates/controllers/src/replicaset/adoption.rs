//! Adoption and release of pods (upstream `ControllerRefManager.ClaimPods`
//! / `ClaimObject`, `AdoptPod` and `ReleasePod` in
//! `pkg/controller/controller_ref_manager.go`).
//!
//! For each active pod in the ReplicaSet's namespace:
//! - controlled by another owner: ignored;
//! - controlled by this ReplicaSet and matching its selector: kept;
//! - controlled by it but no longer matching: released (unless the
//!   ReplicaSet is being deleted) by a strategic-merge patch deleting the
//!   ownerReference with its uid;
//! - an orphan matching the selector, not being deleted, while the
//!   ReplicaSet is not being deleted: adopted by a strategic-merge patch
//!   adding an ownerReference with `controller: true` and
//!   `blockOwnerDeletion: true`. Before the first adoption the ReplicaSet
//!   is read again from the API (upstream `RecheckDeletionTimestamp`):
//!   one being deleted, or replaced by another with the same name, adopts
//!   nothing.
//!
//! Both patches carry the pod's uid in `metadata.uid`, so they fail
//! rather than touch a pod recreated under the same name. A pod gone
//! (404) or no longer holding the reference (422) counts as released.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, Patch, PatchParams};
use rkube_apimachinery::selector::labels::LabelSelector;
use serde_json::json;

use crate::runtime::{api_code, Error};

/// What to do with one pod (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// Already ours and matching.
    Keep,
    /// Not ours to take or keep.
    Ignore,
    /// An orphan to adopt.
    Adopt,
    /// Ours but no longer matching: release it.
    Release,
}

/// The owner's facts the claim decision needs.
pub struct Owner<'a> {
    /// Its uid.
    pub uid: &'a str,
    /// Its namespace.
    pub namespace: &'a str,
    /// Whether it has a deletionTimestamp.
    pub deleting: bool,
    /// Its selector.
    pub selector: &'a LabelSelector,
}

/// The controller reference of an object (upstream `GetControllerOf`).
pub fn controller_of(refs: Option<&Vec<OwnerReference>>) -> Option<&OwnerReference> {
    refs?.iter().find(|r| r.controller == Some(true))
}

/// Upstream `ClaimObject`'s decision for `pod`.
pub fn decide(owner: &Owner<'_>, pod: &Pod) -> Claim {
    let empty = Default::default();
    let labels = pod.metadata.labels.as_ref().unwrap_or(&empty);
    let matches = owner.selector.matches(labels);
    if let Some(c) = controller_of(pod.metadata.owner_references.as_ref()) {
        if c.uid != owner.uid {
            return Claim::Ignore;
        }
        if matches {
            return Claim::Keep;
        }
        return if owner.deleting { Claim::Ignore } else { Claim::Release };
    }
    if owner.deleting || !matches || pod.metadata.deletion_timestamp.is_some() {
        return Claim::Ignore;
    }
    if pod.metadata.namespace.as_deref().unwrap_or("") != owner.namespace {
        return Claim::Ignore;
    }
    Claim::Adopt
}

/// Adds `owner` as the controller of pod `name` (uid `pod_uid`). `Ok(false)`:
/// the pod is gone, nothing adopted.
pub async fn adopt(pods: &Api<Pod>, name: &str, pod_uid: &str, owner: &OwnerReference) -> Result<bool, Error> {
    let patch = json!({"metadata": {"ownerReferences": [owner], "uid": pod_uid}});
    match pods.patch(name, &PatchParams::default(), &Patch::Strategic(patch)).await {
        Ok(_) => Ok(true),
        Err(e) if api_code(&e) == Some(404) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Removes the ownerReference with `owner_uid` from pod `name`.
pub async fn release(pods: &Api<Pod>, name: &str, pod_uid: &str, owner_uid: &str) -> Result<(), Error> {
    let patch = json!({"metadata": {"ownerReferences": [{"$patch": "delete", "uid": owner_uid}], "uid": pod_uid}});
    match pods.patch(name, &PatchParams::default(), &Patch::Strategic(patch)).await {
        Ok(_) => Ok(()),
        Err(e) if matches!(api_code(&e), Some(404) | Some(422)) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use kube::api::ObjectMeta;

    fn pod(labels: &[(&str, &str)], controller: Option<&str>) -> Pod {
        Pod {
            metadata: ObjectMeta {
                namespace: Some("ns".into()),
                labels: Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
                owner_references: controller
                    .map(|uid| vec![OwnerReference { uid: uid.into(), controller: Some(true), ..Default::default() }]),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn claims_follow_upstream_controller_ref_manager() {
        let sel = LabelSelector::from_set([("app", "a")]);
        let owner = Owner { uid: "me", namespace: "ns", deleting: false, selector: &sel };
        assert_eq!(decide(&owner, &pod(&[("app", "a")], Some("me"))), Claim::Keep);
        assert_eq!(decide(&owner, &pod(&[("app", "b")], Some("me"))), Claim::Release);
        assert_eq!(decide(&owner, &pod(&[("app", "a")], Some("other"))), Claim::Ignore);
        assert_eq!(decide(&owner, &pod(&[("app", "a")], None)), Claim::Adopt);
        assert_eq!(decide(&owner, &pod(&[("app", "b")], None)), Claim::Ignore);
        let mut terminating = pod(&[("app", "a")], None);
        terminating.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        assert_eq!(decide(&owner, &terminating), Claim::Ignore);
        let mut elsewhere = pod(&[("app", "a")], None);
        elsewhere.metadata.namespace = Some("other".into());
        assert_eq!(decide(&owner, &elsewhere), Claim::Ignore);
        // An owner being deleted neither adopts nor releases.
        let deleting = Owner { deleting: true, ..owner };
        assert_eq!(decide(&deleting, &pod(&[("app", "a")], None)), Claim::Ignore);
        assert_eq!(decide(&deleting, &pod(&[("app", "b")], Some("me"))), Claim::Ignore);
        assert_eq!(decide(&deleting, &pod(&[("app", "a")], Some("me"))), Claim::Keep);
    }
}
