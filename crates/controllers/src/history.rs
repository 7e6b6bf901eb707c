//! ControllerRevision history shared by the StatefulSet and DaemonSet
//! controllers (upstream `pkg/controller/history/controller_history.go`).
//!
//! A revision is a snapshot of an owner's pod template stored as a
//! ControllerRevision:
//! - named `<owner>-<hash>` (the owner's name cut to 223 characters), the
//!   hash being FNV-1 (32 bits) over the revision's data, then over the
//!   decimal owner `status.collisionCount` when set, written through
//!   `rand.SafeEncodeString`;
//! - labelled with the owner's template labels plus
//!   `controller.kubernetes.io/hash` = that hash;
//! - controlled by its owner (`controller: true`, `blockOwnerDeletion:
//!   true`), with a `revision` number one above the highest existing one.
//!
//! Two revisions are equal when their hash labels and their data are equal
//! (upstream `EqualRevision`). Creating a revision whose name is taken by
//! a revision with other data is a hash collision: the owner's
//! `collisionCount` is raised and the caller retries (upstream
//! `CreateControllerRevision`).

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use kube::api::{Api, ObjectMeta, PostParams};
use std::collections::BTreeMap;

use crate::deployment::sync::safe_encode;
use crate::runtime::{api_code, Error};

/// The label carrying a revision's hash (upstream `ControllerRevisionHashLabel`).
pub const HASH_LABEL: &str = "controller.kubernetes.io/hash";

/// FNV-1, 32 bits (Go's `hash/fnv.New32`, which upstream's history uses).
pub fn fnv32(data: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in data {
        h = h.wrapping_mul(0x0100_0193);
        h ^= *b as u32;
    }
    h
}

/// Upstream `HashControllerRevision`: the hash of `data` and the optional
/// collision count, as a name-safe string.
pub fn hash(data: &[u8], collision_count: Option<i32>) -> String {
    let mut bytes = data.to_vec();
    if let Some(c) = collision_count {
        bytes.extend_from_slice(c.to_string().as_bytes());
    }
    safe_encode(&fnv32(&bytes).to_string())
}

/// Upstream `ControllerRevisionName`: `<prefix>-<hash>`, the prefix cut to
/// 223 characters.
pub fn revision_name(prefix: &str, hash: &str) -> String {
    let prefix: String = prefix.chars().take(223).collect();
    format!("{prefix}-{hash}")
}

/// The raw data of a revision, as bytes (empty when absent).
pub fn data_bytes(r: &ControllerRevision) -> Vec<u8> {
    r.data.as_ref().map(|d| serde_json::to_vec(&d.0).unwrap_or_default()).unwrap_or_default()
}

/// Upstream `NewControllerRevision`: a revision of `data` for `owner`
/// (whose controller reference is `owner_ref`) with `labels` (the
/// template's) plus the hash label.
pub fn new_revision(
    owner_name: &str,
    namespace: &str,
    owner_ref: &OwnerReference,
    labels: &BTreeMap<String, String>,
    data: serde_json::Value,
    revision: i64,
    collision_count: Option<i32>,
) -> ControllerRevision {
    let raw = serde_json::to_vec(&data).unwrap_or_default();
    let h = hash(&raw, collision_count);
    let mut labels = labels.clone();
    labels.insert(HASH_LABEL.into(), h.clone());
    ControllerRevision {
        metadata: ObjectMeta {
            name: Some(revision_name(owner_name, &h)),
            namespace: Some(namespace.into()),
            labels: Some(labels),
            owner_references: Some(vec![owner_ref.clone()]),
            ..Default::default()
        },
        data: Some(RawExtension(data)),
        revision,
    }
}

/// Upstream `EqualRevision`: same hash label and same data.
pub fn equal(a: &ControllerRevision, b: &ControllerRevision) -> bool {
    let label = |r: &ControllerRevision| r.metadata.labels.as_ref().and_then(|l| l.get(HASH_LABEL)).cloned();
    label(a).is_some() && label(a) == label(b) && a.data.as_ref().map(|d| &d.0) == b.data.as_ref().map(|d| &d.0)
}

/// Upstream `FindEqualRevisions`: the revisions equal to `needle`.
pub fn find_equal<'a>(revisions: &'a [ControllerRevision], needle: &ControllerRevision) -> Vec<&'a ControllerRevision> {
    revisions.iter().filter(|r| equal(r, needle)).collect()
}

/// Upstream `nextRevision`: one above the highest, 1 for none.
pub fn next_revision(revisions: &[ControllerRevision]) -> i64 {
    revisions.iter().map(|r| r.revision).max().unwrap_or(0) + 1
}

/// Sorts by revision number, then creation time, then name (upstream
/// `SortControllerRevisions`).
pub fn sort(revisions: &mut [ControllerRevision]) {
    revisions.sort_by(|a, b| {
        a.revision
            .cmp(&b.revision)
            .then_with(|| {
                let t = |r: &ControllerRevision| r.metadata.creation_timestamp.as_ref().map(|t| t.0);
                t(a).cmp(&t(b))
            })
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
}

/// What creating a revision led to.
pub enum Created {
    /// The revision now stored under its name (new, or an equal one that
    /// already existed).
    Stored(ControllerRevision),
    /// Its name holds another revision: raise the collision count and retry.
    Collision,
}

/// Upstream `CreateControllerRevision` for one collision count: creates
/// `rev`; an existing revision under that name with equal data is
/// returned as is, one with other data is a [`Created::Collision`].
pub async fn create(api: &Api<ControllerRevision>, rev: &ControllerRevision) -> Result<Created, Error> {
    match api.create(&PostParams::default(), rev).await {
        Ok(r) => Ok(Created::Stored(r)),
        Err(e) if api_code(&e) == Some(409) => {
            let name = rev.metadata.name.as_deref().unwrap_or("");
            let existing = api.get(name).await?;
            if equal(&existing, rev) {
                Ok(Created::Stored(existing))
            } else {
                Ok(Created::Collision)
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// Upstream `UpdateControllerRevision`: gives `rev` the number `revision`.
pub async fn renumber(
    api: &Api<ControllerRevision>,
    rev: &ControllerRevision,
    revision: i64,
) -> Result<ControllerRevision, Error> {
    if rev.revision == revision {
        return Ok(rev.clone());
    }
    let mut next = rev.clone();
    next.revision = revision;
    let name = rev.metadata.name.as_deref().unwrap_or("");
    Ok(api.replace(name, &PostParams::default(), &next).await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fnv1_matches_go_hash_fnv_new32() {
        // Go: fnv.New32() over "" and "a".
        assert_eq!(fnv32(b""), 0x811c9dc5);
        assert_eq!(fnv32(b"a"), 0x050c5d7e);
        assert_eq!(fnv32(b"foobar"), 0x31f0b262);
    }

    #[test]
    fn names_hashes_and_equality_follow_controller_history() {
        let owner =
            OwnerReference { name: "web".into(), uid: "u".into(), controller: Some(true), ..Default::default() };
        let labels: BTreeMap<String, String> = [("app".to_string(), "web".to_string())].into();
        let a = new_revision("web", "ns", &owner, &labels, json!({"spec": {"x": 1}}), 1, None);
        let h = a.metadata.labels.as_ref().unwrap()[HASH_LABEL].clone();
        assert_eq!(a.metadata.name.as_deref(), Some(format!("web-{h}").as_str()));
        assert_eq!(a.metadata.labels.as_ref().unwrap()["app"], "web");
        // The collision count changes the hash, so the name.
        let c = new_revision("web", "ns", &owner, &labels, json!({"spec": {"x": 1}}), 1, Some(1));
        assert_ne!(c.metadata.name, a.metadata.name);
        let b = new_revision("web", "ns", &owner, &labels, json!({"spec": {"x": 1}}), 7, None);
        assert!(equal(&a, &b));
        let d = new_revision("web", "ns", &owner, &labels, json!({"spec": {"x": 2}}), 1, None);
        assert!(!equal(&a, &d));
        assert_eq!(next_revision(&[a.clone(), b.clone(), d]), 8);
        assert_eq!(next_revision(&[]), 1);
        assert_eq!(revision_name(&"x".repeat(300), "h").len(), 225);
    }
}
