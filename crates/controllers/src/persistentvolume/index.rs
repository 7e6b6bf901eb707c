//! The binder's pure decisions (upstream `persistentvolume/index.go` and
//! `pkg/volume/util`'s matching helpers): which PersistentVolume a claim
//! binds to, and what a bound pair looks like.

use k8s_openapi::api::core::v1::{ObjectReference, PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rkube_apimachinery::quantity;
use rkube_apimachinery::selector::labels::LabelSelector;

/// Set on a claim once the binder finished binding it.
pub const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// Set on a claim/volume the binder (not the user) bound.
pub const ANN_BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
/// The node a WaitForFirstConsumer claim is to be provisioned for (set by the scheduler).
pub const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// The provisioner expected to provision a claim (GA annotation).
pub const ANN_STORAGE_PROVISIONER: &str = "volume.kubernetes.io/storage-provisioner";
/// The same, beta annotation (still set by upstream for old provisioners).
pub const ANN_BETA_STORAGE_PROVISIONER: &str = "volume.beta.kubernetes.io/storage-provisioner";
/// The provisioner that created a volume.
pub const ANN_DYNAMICALLY_PROVISIONED: &str = "pv.kubernetes.io/provisioned-by";
/// The beta storage-class annotation, which wins over `storageClassName`.
pub const ANN_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

/// An annotation's value.
pub fn annotation<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.annotations.as_ref().and_then(|a| a.get(key)).map(String::as_str)
}

/// Whether the annotation is present.
pub fn has_annotation(meta: &ObjectMeta, key: &str) -> bool {
    annotation(meta, key).is_some()
}

/// Upstream `GetPersistentVolumeClaimClass`: the beta annotation, else
/// `spec.storageClassName`, else "".
pub fn claim_class(pvc: &PersistentVolumeClaim) -> String {
    annotation(&pvc.metadata, ANN_STORAGE_CLASS)
        .map(str::to_string)
        .or_else(|| pvc.spec.as_ref().and_then(|s| s.storage_class_name.clone()))
        .unwrap_or_default()
}

/// Upstream `GetPersistentVolumeClass`.
pub fn volume_class(pv: &PersistentVolume) -> String {
    annotation(&pv.metadata, ANN_STORAGE_CLASS)
        .map(str::to_string)
        .or_else(|| pv.spec.as_ref().and_then(|s| s.storage_class_name.clone()))
        .unwrap_or_default()
}

/// The claim's `spec.volumeName` ("" when unset).
pub fn claim_volume_name(pvc: &PersistentVolumeClaim) -> &str {
    pvc.spec.as_ref().and_then(|s| s.volume_name.as_deref()).unwrap_or("")
}

/// The volume's `status.phase` ("" when unset).
pub fn volume_phase(pv: &PersistentVolume) -> &str {
    pv.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("")
}

/// The claim's `status.phase` ("" when unset).
pub fn claim_phase(pvc: &PersistentVolumeClaim) -> &str {
    pvc.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("")
}

/// The volume's `spec.claimRef`.
pub fn claim_ref(pv: &PersistentVolume) -> Option<&ObjectReference> {
    pv.spec.as_ref().and_then(|s| s.claim_ref.as_ref())
}

/// The volume's reclaim policy (API default `Retain`).
pub fn reclaim_policy(pv: &PersistentVolume) -> &str {
    pv.spec.as_ref().and_then(|s| s.persistent_volume_reclaim_policy.as_deref()).unwrap_or("Retain")
}

/// A claim's storage request in bytes (0 when unset or unparsable).
pub fn claim_request(pvc: &PersistentVolumeClaim) -> i128 {
    pvc.spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .and_then(|q| quantity::value(&q.0))
        .unwrap_or(0)
}

/// A volume's `capacity.storage` in bytes (0 when unset).
pub fn volume_capacity(pv: &PersistentVolume) -> i128 {
    pv.spec
        .as_ref()
        .and_then(|s| s.capacity.as_ref())
        .and_then(|c| c.get("storage"))
        .and_then(|q| quantity::value(&q.0))
        .unwrap_or(0)
}

/// Upstream `IsVolumeBoundToClaim`: claimRef names the claim, and its UID
/// when the claimRef carries one.
pub fn is_volume_bound_to_claim(pv: &PersistentVolume, pvc: &PersistentVolumeClaim) -> bool {
    let Some(r) = claim_ref(pv) else { return false };
    if r.name != pvc.metadata.name || r.namespace != pvc.metadata.namespace {
        return false;
    }
    !(r.uid.as_deref().is_some_and(|u| !u.is_empty()) && r.uid != pvc.metadata.uid)
}

/// Upstream `findByClaim` → `FindMatchingVolume` with no node: a volume
/// pre-bound to the claim wins; otherwise (unless `delay_binding`, where
/// the scheduler chooses) the smallest unclaimed volume of the claim's
/// class with enough capacity, the same volume mode, labels matching the
/// claim's selector and every access mode the claim asks for. Volumes being
/// deleted, and volumes with a node affinity when nothing picked a node,
/// are skipped as upstream. Err: the selector does not parse (upstream's
/// message).
pub fn find_best_match<'a>(
    pvc: &PersistentVolumeClaim,
    volumes: &'a [PersistentVolume],
    delay_binding: bool,
) -> Result<Option<&'a PersistentVolume>, String> {
    let spec = pvc.spec.clone().unwrap_or_default();
    let requested = claim_request(pvc);
    let class = claim_class(pvc);
    let selector = match &spec.selector {
        Some(s) => Some(
            LabelSelector::from_label_selector_json(&serde_json::to_value(s).map_err(|e| e.to_string())?).map_err(
                |e| {
                    format!(
                        "error creating internal label selector for claim: {}/{}: {e}",
                        pvc.metadata.namespace.as_deref().unwrap_or(""),
                        pvc.metadata.name.as_deref().unwrap_or("")
                    )
                },
            )?,
        ),
        None => None,
    };
    let claim_mode = spec.volume_mode.as_deref().unwrap_or("Filesystem");
    let mut smallest: Option<(&PersistentVolume, i128)> = None;
    for pv in volumes {
        let pv_spec = pv.spec.as_ref();
        if claim_ref(pv).is_some() && !is_volume_bound_to_claim(pv, pvc) {
            continue;
        }
        let capacity = volume_capacity(pv);
        if capacity < requested {
            continue;
        }
        if pv_spec.and_then(|s| s.volume_mode.as_deref()).unwrap_or("Filesystem") != claim_mode {
            continue;
        }
        if pv.metadata.deletion_timestamp.is_some() {
            continue;
        }
        if is_volume_bound_to_claim(pv, pvc) {
            return Ok(Some(pv));
        }
        if delay_binding {
            // The scheduler binds WaitForFirstConsumer claims.
            continue;
        }
        if volume_phase(pv) != "Available" {
            continue;
        }
        if let Some(sel) = &selector {
            let empty = Default::default();
            if !sel.matches(pv.metadata.labels.as_ref().unwrap_or(&empty)) {
                continue;
            }
        }
        if volume_class(pv) != class {
            continue;
        }
        // Without a node, a volume limited to some nodes cannot be chosen.
        if pv_spec.and_then(|s| s.node_affinity.as_ref()).and_then(|a| a.required.as_ref()).is_some() {
            continue;
        }
        let pv_modes = pv_spec.and_then(|s| s.access_modes.as_deref()).unwrap_or(&[]);
        if !spec.access_modes.iter().flatten().all(|m| pv_modes.contains(m)) {
            continue;
        }
        if smallest.is_none_or(|(_, q)| q > capacity) {
            smallest = Some((pv, capacity));
        }
    }
    Ok(smallest.map(|(pv, _)| pv))
}

/// Upstream `GetBindVolumeToClaim`: `pv` with its claimRef pointing at
/// `pvc` (UID and resourceVersion included), and `bound-by-controller`
/// when the volume was not pre-bound by the user; `None` when nothing changes.
pub fn bind_volume_to_claim(pv: &PersistentVolume, pvc: &PersistentVolumeClaim) -> Option<PersistentVolume> {
    let set_bound_by_controller = !is_volume_bound_to_claim(pv, pvc);
    let mut out = pv.clone();
    let mut dirty = false;
    let r = claim_ref(pv);
    if r.is_none_or(|r| {
        r.name != pvc.metadata.name || r.namespace != pvc.metadata.namespace || r.uid != pvc.metadata.uid
    }) {
        out.spec.get_or_insert_with(Default::default).claim_ref = Some(ObjectReference {
            kind: Some("PersistentVolumeClaim".into()),
            api_version: Some("v1".into()),
            namespace: pvc.metadata.namespace.clone(),
            name: pvc.metadata.name.clone(),
            uid: pvc.metadata.uid.clone(),
            resource_version: pvc.metadata.resource_version.clone(),
            ..Default::default()
        });
        dirty = true;
    }
    if set_bound_by_controller && !has_annotation(&pv.metadata, ANN_BOUND_BY_CONTROLLER) {
        out.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(ANN_BOUND_BY_CONTROLLER.into(), "yes".into());
        dirty = true;
    }
    dirty.then_some(out)
}

/// Upstream `bindClaimToVolume`: `pvc` with `spec.volumeName` = the volume,
/// `bind-completed`, and `bound-by-controller` when the claim did not name
/// the volume itself; `None` when nothing changes.
pub fn bind_claim_to_volume(pvc: &PersistentVolumeClaim, pv: &PersistentVolume) -> Option<PersistentVolumeClaim> {
    let name = pv.metadata.name.clone().unwrap_or_default();
    let mut out = pvc.clone();
    let mut dirty = false;
    if claim_volume_name(pvc) != name {
        // The claim did not ask for this volume: the binder chose it.
        let anns = out.metadata.annotations.get_or_insert_with(Default::default);
        if claim_volume_name(pvc).is_empty() && !anns.contains_key(ANN_BOUND_BY_CONTROLLER) {
            anns.insert(ANN_BOUND_BY_CONTROLLER.into(), "yes".into());
        }
        out.spec.get_or_insert_with(Default::default).volume_name = Some(name);
        dirty = true;
    }
    if !has_annotation(&pvc.metadata, ANN_BIND_COMPLETED) {
        out.metadata.annotations.get_or_insert_with(Default::default).insert(ANN_BIND_COMPLETED.into(), "yes".into());
        dirty = true;
    }
    dirty.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pv(name: &str, size: &str, class: &str, modes: &[&str], phase: &str) -> PersistentVolume {
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"tier": name}},
            "spec": {"capacity": {"storage": size}, "storageClassName": class, "accessModes": modes,
                     "hostPath": {"path": "/tmp/x"}},
            "status": {"phase": phase},
        }))
        .unwrap()
    }

    fn pvc(size: &str, class: &str, modes: &[&str]) -> PersistentVolumeClaim {
        serde_json::from_value(json!({
            "metadata": {"name": "c", "namespace": "ns", "uid": "u1", "resourceVersion": "7"},
            "spec": {"resources": {"requests": {"storage": size}}, "storageClassName": class, "accessModes": modes},
        }))
        .unwrap()
    }

    fn names(r: Result<Option<&PersistentVolume>, String>) -> Option<String> {
        r.unwrap().and_then(|p| p.metadata.name.clone())
    }

    #[test]
    fn smallest_fitting_volume_of_the_class_wins() {
        // Upstream index_test "successful-match-*": the smallest volume with enough capacity.
        let vols = vec![
            pv("big", "10Gi", "manual", &["ReadWriteOnce"], "Available"),
            pv("small", "1Gi", "manual", &["ReadWriteOnce"], "Available"),
            pv("tiny", "100Mi", "manual", &["ReadWriteOnce"], "Available"),
            pv("other-class", "600Mi", "fast", &["ReadWriteOnce"], "Available"),
        ];
        assert_eq!(
            names(find_best_match(&pvc("500Mi", "manual", &["ReadWriteOnce"]), &vols, false)),
            Some("small".into())
        );
        assert_eq!(names(find_best_match(&pvc("5Gi", "manual", &["ReadWriteOnce"]), &vols, false)), Some("big".into()));
        assert_eq!(names(find_best_match(&pvc("20Gi", "manual", &["ReadWriteOnce"]), &vols, false)), None);
        // No class on the claim matches only volumes without a class.
        assert_eq!(names(find_best_match(&pvc("1Mi", "", &["ReadWriteOnce"]), &vols, false)), None);
    }

    #[test]
    fn access_modes_phase_mode_and_selector_filter() {
        let mut bound = pv("bound", "1Gi", "manual", &["ReadWriteOnce"], "Bound");
        bound.spec.as_mut().unwrap().claim_ref = Some(ObjectReference { name: Some("x".into()), ..Default::default() });
        let mut block = pv("block", "1Gi", "manual", &["ReadWriteOnce"], "Available");
        block.spec.as_mut().unwrap().volume_mode = Some("Block".into());
        let vols = vec![pv("rox", "1Gi", "manual", &["ReadOnlyMany"], "Available"), bound, block];
        assert_eq!(names(find_best_match(&pvc("1Gi", "manual", &["ReadWriteOnce"]), &vols, false)), None);
        let vols = vec![pv("rwo-rox", "1Gi", "manual", &["ReadWriteOnce", "ReadOnlyMany"], "Available")];
        assert_eq!(
            names(find_best_match(&pvc("1Gi", "manual", &["ReadWriteOnce"]), &vols, false)),
            Some("rwo-rox".into())
        );
        let mut c = pvc("1Gi", "manual", &["ReadWriteOnce"]);
        c.spec.as_mut().unwrap().selector =
            Some(serde_json::from_value(json!({"matchLabels": {"tier": "nope"}})).unwrap());
        assert_eq!(names(find_best_match(&c, &vols, false)), None);
        c.spec.as_mut().unwrap().selector =
            Some(serde_json::from_value(json!({"matchLabels": {"tier": "rwo-rox"}})).unwrap());
        assert_eq!(names(find_best_match(&c, &vols, false)), Some("rwo-rox".into()));
    }

    #[test]
    fn pre_bound_volume_wins_even_when_delayed() {
        let mut pre = pv("pre", "1Gi", "local-path", &["ReadWriteOnce"], "Available");
        pre.spec.as_mut().unwrap().claim_ref =
            Some(ObjectReference { name: Some("c".into()), namespace: Some("ns".into()), ..Default::default() });
        let vols = vec![pv("free", "1Gi", "local-path", &["ReadWriteOnce"], "Available"), pre];
        let c = pvc("1Gi", "local-path", &["ReadWriteOnce"]);
        assert_eq!(names(find_best_match(&c, &vols, true)), Some("pre".into()));
        // Delayed binding never picks an unclaimed volume: the scheduler does.
        assert_eq!(names(find_best_match(&c, &vols[..1], true)), None);
        assert_eq!(names(find_best_match(&c, &vols[..1], false)), Some("free".into()));
    }

    #[test]
    fn binding_sets_claim_ref_and_annotations() {
        let v = pv("v", "1Gi", "manual", &["ReadWriteOnce"], "Available");
        let c = pvc("1Gi", "manual", &["ReadWriteOnce"]);
        let bound = bind_volume_to_claim(&v, &c).unwrap();
        let r = claim_ref(&bound).unwrap();
        assert_eq!((r.name.as_deref(), r.namespace.as_deref(), r.uid.as_deref()), (Some("c"), Some("ns"), Some("u1")));
        assert_eq!(annotation(&bound.metadata, ANN_BOUND_BY_CONTROLLER), Some("yes"));
        assert!(bind_volume_to_claim(&bound, &c).is_none(), "already bound: no change");
        let claim = bind_claim_to_volume(&c, &bound).unwrap();
        assert_eq!(claim_volume_name(&claim), "v");
        assert_eq!(annotation(&claim.metadata, ANN_BIND_COMPLETED), Some("yes"));
        assert_eq!(annotation(&claim.metadata, ANN_BOUND_BY_CONTROLLER), Some("yes"));
        assert!(bind_claim_to_volume(&claim, &bound).is_none());
        // A claim naming its volume is not marked bound-by-controller.
        let mut named = c.clone();
        named.spec.as_mut().unwrap().volume_name = Some("v".into());
        let claim = bind_claim_to_volume(&named, &bound).unwrap();
        assert_eq!(annotation(&claim.metadata, ANN_BOUND_BY_CONTROLLER), None);
    }
}
