//! Which ReplicaSets a Deployment has and the one it rolls out to
//! (upstream `sync.go` `getAllReplicaSetsAndSyncRevision` /
//! `getNewReplicaSet`, `deployment_util.go` `FindNewReplicaSet` /
//! `FindOldReplicaSets`, `controller_utils.go` `ComputeHash`).
//!
//! The `pod-template-hash`: upstream hashes the Go struct of the pod
//! template as printed by `DeepHashObject` (go-spew, which prints Go type
//! names and every nil field), adds the collision count, and renders the
//! FNV-32a sum's decimal digits with `rand.SafeEncodeString`. rkube keeps
//! the algorithm (FNV-32a, the collision count as 8 little-endian bytes
//! with the count in the first 4, `SafeEncodeString` of the decimal sum)
//! but hashes the template's canonical JSON instead of the spew text:
//! reproducing go-spew's rendering of Go types is not feasible, so names
//! differ from upstream's for the same template. The hash is stable and
//! deterministic (struct field order and sorted maps), and nothing reads
//! it back: new sets are found by template equality ignoring the label
//! (as upstream), and `kubectl rollout history|undo` match sets by owner
//! and `deployment.kubernetes.io/revision`, stripping the label.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, ReplicaSetSpec};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};

use super::util::{self, POD_TEMPLATE_HASH};

/// The characters `rand.SafeEncodeString` maps bytes to (no vowels, no
/// confusable digits).
const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// apimachinery `rand.SafeEncodeString`: each byte to `ALPHANUMS[b % 27]`.
pub fn safe_encode(s: &str) -> String {
    s.bytes().map(|b| ALPHANUMS[b as usize % ALPHANUMS.len()] as char).collect()
}

/// FNV-1a, 32 bits (Go's `hash/fnv.New32a`).
pub fn fnv32a(data: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in data {
        h ^= *b as u32;
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// The `pod-template-hash` of a template and the Deployment's
/// `status.collisionCount` (see the module docs for how it differs from
/// upstream's bytes).
pub fn compute_hash(template: &PodTemplateSpec, collision_count: Option<i32>) -> String {
    let mut data = serde_json::to_vec(template).unwrap_or_default();
    if let Some(c) = collision_count {
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&(c as u32).to_le_bytes());
        data.extend_from_slice(&b);
    }
    safe_encode(&fnv32a(&data).to_string())
}

fn template(d: &Deployment) -> PodTemplateSpec {
    d.spec.as_ref().map(|s| s.template.clone()).unwrap_or_default()
}

/// The set whose template equals the Deployment's (ignoring the hash
/// label), oldest first when several do (`FindNewReplicaSet`).
pub fn find_new(d: &Deployment, rss: &[ReplicaSet]) -> Option<ReplicaSet> {
    let t = template(d);
    let mut sorted = rss.to_vec();
    sorted.sort_by(util::by_creation);
    sorted
        .into_iter()
        .find(|rs| rs.spec.as_ref().and_then(|s| s.template.as_ref()).is_some_and(|x| util::equal_ignore_hash(x, &t)))
}

/// Every set but the new one (`FindOldReplicaSets`' second result).
pub fn find_old(d: &Deployment, rss: &[ReplicaSet]) -> Vec<ReplicaSet> {
    let new_uid = find_new(d, rss).and_then(|n| n.metadata.uid);
    rss.iter().filter(|rs| new_uid.is_none() || rs.metadata.uid != new_uid).cloned().collect()
}

/// The controller ownerReference a Deployment puts on its sets.
pub fn controller_ref(d: &Deployment) -> OwnerReference {
    OwnerReference {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        name: d.metadata.name.clone().unwrap_or_default(),
        uid: d.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// The new ReplicaSet to create (before annotations and size): named
/// `<deployment>-<hash>`, the template and selector with
/// `pod-template-hash`, labelled as its template, `minReadySeconds` of the
/// Deployment, owned by it, 0 replicas.
pub fn new_replica_set(d: &Deployment) -> ReplicaSet {
    let spec = d.spec.clone().unwrap_or_default();
    let mut t = spec.template.clone();
    let hash = compute_hash(&t, d.status.as_ref().and_then(|s| s.collision_count));
    let meta = t.metadata.get_or_insert_with(Default::default);
    meta.labels.get_or_insert_with(BTreeMap::new).insert(POD_TEMPLATE_HASH.into(), hash.clone());
    let labels = meta.labels.clone();
    let mut selector: LabelSelector = spec.selector.clone();
    selector.match_labels.get_or_insert_with(BTreeMap::new).insert(POD_TEMPLATE_HASH.into(), hash.clone());
    ReplicaSet {
        metadata: ObjectMeta {
            name: Some(format!("{}-{hash}", d.metadata.name.as_deref().unwrap_or(""))),
            namespace: d.metadata.namespace.clone(),
            labels,
            owner_references: Some(vec![controller_ref(d)]),
            ..Default::default()
        },
        spec: Some(ReplicaSetSpec {
            replicas: Some(0),
            min_ready_seconds: spec.min_ready_seconds,
            selector,
            template: Some(t),
        }),
        status: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_encode_follows_apimachinery() {
        // Byte b -> ALPHANUMS[b % 27]: '0' (48) -> 21 '4', '9' (57) -> 3 'f', 'a' (97) -> 16 'v'.
        assert_eq!(safe_encode(""), "");
        assert_eq!(safe_encode("a"), "v");
        assert_eq!(safe_encode("09"), "4f");
        assert_eq!(safe_encode("12345"), "56789");
    }

    #[test]
    fn fnv32a_matches_go() {
        // Go: fnv.New32a() of "" is the offset basis; of "a" is 0xe40c292c.
        assert_eq!(fnv32a(b""), 0x811c9dc5);
        assert_eq!(fnv32a(b"a"), 0xe40c292c);
        assert_eq!(fnv32a(b"foobar"), 0xbf9cf968);
    }

    #[test]
    fn hash_is_stable_and_changes_with_template_and_collisions() {
        let t = PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some([("app".to_string(), "x".to_string())].into()),
                ..Default::default()
            }),
            spec: None,
        };
        let h = compute_hash(&t, None);
        assert_eq!(h, compute_hash(&t.clone(), None));
        assert!(h.chars().all(|c| ALPHANUMS.contains(&(c as u8))));
        assert_ne!(h, compute_hash(&t, Some(1)));
        assert_ne!(compute_hash(&t, Some(1)), compute_hash(&t, Some(2)));
        let mut d = Deployment::default();
        d.metadata.name = Some("web".into());
        d.spec = Some(k8s_openapi::api::apps::v1::DeploymentSpec { template: t.clone(), ..Default::default() });
        let rs = new_replica_set(&d);
        assert_eq!(rs.metadata.name.as_deref(), Some(format!("web-{h}").as_str()));
        let spec = rs.spec.unwrap();
        assert_eq!(spec.selector.match_labels.unwrap()[POD_TEMPLATE_HASH], h);
        let tl = spec.template.unwrap().metadata.unwrap().labels.unwrap();
        assert_eq!((tl["app"].as_str(), tl[POD_TEMPLATE_HASH].as_str()), ("x", h.as_str()));
        assert!(util::equal_ignore_hash(&t, &new_replica_set(&d).spec.unwrap().template.unwrap()));
    }
}
