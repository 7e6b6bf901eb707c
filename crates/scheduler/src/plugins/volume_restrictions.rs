//! VolumeRestrictions (upstream `plugins/volumerestrictions`): a pod may
//! not share a GCE PD, AWS EBS, RBD or iSCSI volume on a node with another
//! pod unless both mount it read-only (EBS: never), and may not use a
//! ReadWriteOncePod PVC that any other scheduled pod already uses.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, Volume};

use crate::framework::*;
use crate::plugins::names;

/// Upstream `ErrReasonDiskConflict`.
pub const ERR_REASON_DISK_CONFLICT: &str = "node(s) had no available disk";
/// Upstream `ErrReasonReadWriteOncePodConflict`.
pub const ERR_REASON_RWOP_CONFLICT: &str =
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode";

const PRE_FILTER_KEY: &str = "PreFilterVolumeRestrictions";

/// The ReadWriteOncePod PVCs (`namespace/name`) the pod uses, and how many
/// uses of them by other pods the cluster has.
#[derive(Clone, Debug, Default)]
struct PreFilterState {
    rwop_pvcs: BTreeSet<String>,
    conflicting_pvc_ref_count: i64,
}

impl PreFilterState {
    fn conflicts_for_pod(&self, pod: &Pod) -> i64 {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("");
        volumes(pod)
            .iter()
            .filter_map(|v| v.persistent_volume_claim.as_ref())
            .filter(|c| self.rwop_pvcs.contains(&format!("{ns}/{}", c.claim_name)))
            .count() as i64
    }
}

/// The VolumeRestrictions plugin.
pub struct VolumeRestrictions {
    handle: Handle,
}

/// Builds VolumeRestrictions (no args); reads PVCs through the handle's listers.
pub fn new(_args: Option<&serde_json::Value>, handle: &Handle) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(VolumeRestrictions { handle: handle.clone() }))
}

fn volumes(pod: &Pod) -> &[Volume] {
    pod.spec.as_ref().and_then(|s| s.volumes.as_deref()).unwrap_or(&[])
}

/// Upstream `needsRestrictionsCheck`.
fn needs_restrictions_check(v: &Volume) -> bool {
    v.gce_persistent_disk.is_some() || v.aws_elastic_block_store.is_some() || v.rbd.is_some() || v.iscsi.is_some()
}

/// Upstream `isVolumeConflict`: whether `v` conflicts with a volume of `existing`.
fn is_volume_conflict(v: &Volume, existing: &Pod) -> bool {
    volumes(existing).iter().any(|ev| {
        if let (Some(d), Some(e)) = (&v.gce_persistent_disk, &ev.gce_persistent_disk) {
            if d.pd_name == e.pd_name && !(d.read_only == Some(true) && e.read_only == Some(true)) {
                return true;
            }
        }
        if let (Some(d), Some(e)) = (&v.aws_elastic_block_store, &ev.aws_elastic_block_store) {
            if d.volume_id == e.volume_id {
                return true;
            }
        }
        if let (Some(d), Some(e)) = (&v.iscsi, &ev.iscsi) {
            if d.iqn == e.iqn && !(d.read_only == Some(true) && e.read_only == Some(true)) {
                return true;
            }
        }
        if let (Some(d), Some(e)) = (&v.rbd, &ev.rbd) {
            let overlap = d.monitors.iter().any(|m| e.monitors.contains(m));
            if overlap
                && d.pool == e.pool
                && d.image == e.image
                && !(d.read_only == Some(true) && e.read_only == Some(true))
            {
                return true;
            }
        }
        false
    })
}

#[async_trait::async_trait]
impl Plugin for VolumeRestrictions {
    fn name(&self) -> &'static str {
        names::VOLUME_RESTRICTIONS
    }

    fn extension_points(&self) -> &'static [ExtensionPoint] {
        &[ExtensionPoint::PreFilter, ExtensionPoint::Filter]
    }

    /// A scheduled pod deleted frees its volumes; a new node may have none
    /// of them; a PVC the pod waits for may be created (upstream, hints on).
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![
            ClusterEvent { resource: EventResource::Pod, actions: action::DELETE },
            ClusterEvent { resource: EventResource::Node, actions: action::ADD },
            ClusterEvent { resource: EventResource::PersistentVolumeClaim, actions: action::ADD },
        ]
    }

    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let needs_check = volumes(&pod.pod).iter().any(needs_restrictions_check);
        let ns = pod.pod.metadata.namespace.as_deref().unwrap_or("");
        let mut rwop_pvcs = BTreeSet::new();
        for v in volumes(&pod.pod) {
            let Some(claim) = v.persistent_volume_claim.as_ref() else { continue };
            let Some(pvc) = self.handle.listers.pvcs.get(ns, &claim.claim_name) else {
                return (
                    None,
                    Status::unresolvable(format!("persistentvolumeclaim \"{}\" not found", claim.claim_name)),
                );
            };
            let modes = pvc.spec.as_ref().and_then(|s| s.access_modes.as_deref()).unwrap_or(&[]);
            if modes.iter().any(|m| m == "ReadWriteOncePod") {
                rwop_pvcs.insert(format!("{ns}/{}", claim.claim_name));
            }
        }
        let conflicting = rwop_pvcs.iter().filter(|k| snapshot.used_pvcs.contains(*k)).count() as i64;
        if !needs_check && conflicting == 0 {
            return (None, Status::skip());
        }
        state.write(PRE_FILTER_KEY, PreFilterState { rwop_pvcs, conflicting_pvc_ref_count: conflicting });
        (None, Status::success())
    }

    fn add_pod(&self, state: &mut CycleState, _pod: &PodInfo, to_add: &Arc<PodInfo>, _node: &NodeInfo) -> Status {
        let Some(s) = state.read::<PreFilterState>(PRE_FILTER_KEY) else { return Status::success() };
        let mut s = s.clone();
        s.conflicting_pvc_ref_count += s.conflicts_for_pod(&to_add.pod);
        state.write(PRE_FILTER_KEY, s);
        Status::success()
    }

    fn remove_pod(&self, state: &mut CycleState, _pod: &PodInfo, to_remove: &PodInfo, _node: &NodeInfo) -> Status {
        let Some(s) = state.read::<PreFilterState>(PRE_FILTER_KEY) else { return Status::success() };
        let mut s = s.clone();
        s.conflicting_pvc_ref_count -= s.conflicts_for_pod(&to_remove.pod);
        state.write(PRE_FILTER_KEY, s);
        Status::success()
    }

    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        for v in volumes(&pod.pod).iter().filter(|v| needs_restrictions_check(v)) {
            if node.pods.iter().any(|e| is_volume_conflict(v, &e.pod)) {
                return Status::unschedulable([ERR_REASON_DISK_CONFLICT]);
            }
        }
        match state.read::<PreFilterState>(PRE_FILTER_KEY) {
            Some(s) if s.conflicting_pvc_ref_count > 0 => Status::unschedulable([ERR_REASON_RWOP_CONFLICT]),
            Some(_) => Status::success(),
            None => Status::error(format!("error reading \"{PRE_FILTER_KEY}\" from cycleState: not found")),
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim};
    use serde_json::{json, Value};

    use super::*;

    fn pod(name: &str, node: Option<&str>, volumes: Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default", "uid": name},
            "spec": {"nodeName": node, "containers": [{"name": "c"}], "volumes": volumes}}))
        .unwrap()
    }

    fn pvc(name: &str, modes: &[&str]) -> PersistentVolumeClaim {
        serde_json::from_value(
            json!({"metadata": {"name": name, "namespace": "default"}, "spec": {"accessModes": modes}}),
        )
        .unwrap()
    }

    fn plugin(pvcs: Vec<PersistentVolumeClaim>) -> VolumeRestrictions {
        let mut handle = Handle::default();
        handle.listers.pvcs = Arc::new(StaticLister::new(pvcs));
        VolumeRestrictions { handle }
    }

    fn run(pl: &VolumeRestrictions, p: &Pod, existing: &[Pod]) -> Status {
        let node: Node = serde_json::from_value(json!({"metadata": {"name": "n"}})).unwrap();
        let snap = Snapshot::from_objects(&[node], existing);
        let pi = PodInfo::new(Arc::new(p.clone())).unwrap();
        let mut state = CycleState::default();
        let (_, s) = pl.pre_filter(&mut state, &pi, &snap);
        if !s.is_success() {
            return s;
        }
        pl.filter(&state, &pi, &snap.nodes[0])
    }

    /// Upstream TestGCEDiskConflicts / TestAWSDiskConflicts / TestRBDDiskConflicts / TestISCSIDiskConflicts.
    #[test]
    fn disk_conflicts_as_upstream() {
        let pl = plugin(vec![]);
        let gce = |pd: &str, ro: bool| json!([{"name": "v", "gcePersistentDisk": {"pdName": pd, "readOnly": ro}}]);
        let ebs = |id: &str| json!([{"name": "v", "awsElasticBlockStore": {"volumeID": id}}]);
        let rbd = |mons: &[&str], pool: &str, image: &str, ro: bool| json!([{"name": "v", "rbd": {"monitors": mons, "pool": pool, "image": image, "readOnly": ro}}]);
        let iscsi = |iqn: &str, ro: bool| json!([{"name": "v", "iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": iqn, "lun": 0, "readOnly": ro}}]);
        let cases: Vec<(&str, Value, Value, Option<&str>)> = vec![
            ("gce same disk", gce("foo", false), gce("foo", false), Some(ERR_REASON_DISK_CONFLICT)),
            ("gce different disk", gce("foo", false), gce("bar", false), None),
            ("gce both read-only", gce("foo", true), gce("foo", true), None),
            ("gce one read-only", gce("foo", true), gce("foo", false), Some(ERR_REASON_DISK_CONFLICT)),
            ("ebs same volume", ebs("foo"), ebs("foo"), Some(ERR_REASON_DISK_CONFLICT)),
            ("ebs different volume", ebs("foo"), ebs("bar"), None),
            (
                "rbd overlapping monitors",
                rbd(&["a", "b"], "p", "i", false),
                rbd(&["b", "c"], "p", "i", false),
                Some(ERR_REASON_DISK_CONFLICT),
            ),
            ("rbd disjoint monitors", rbd(&["a"], "p", "i", false), rbd(&["c"], "p", "i", false), None),
            ("rbd other image", rbd(&["a"], "p", "i", false), rbd(&["a"], "p", "j", false), None),
            ("rbd both read-only", rbd(&["a"], "p", "i", true), rbd(&["a"], "p", "i", true), None),
            ("iscsi same iqn", iscsi("iqn.a", false), iscsi("iqn.a", false), Some(ERR_REASON_DISK_CONFLICT)),
            ("iscsi other iqn", iscsi("iqn.a", false), iscsi("iqn.b", false), None),
            ("iscsi both read-only", iscsi("iqn.a", true), iscsi("iqn.a", true), None),
        ];
        for (name, mine, theirs, want) in cases {
            let s = run(&pl, &pod("p", None, mine), &[pod("e", Some("n"), theirs)]);
            match want {
                Some(r) => assert_eq!((s.code, s.reasons), (Code::Unschedulable, vec![r.to_string()]), "{name}"),
                None => assert!(s.is_success(), "{name}: {s:?}"),
            }
        }
        // No restricted volume at all: PreFilter skips.
        let pi = PodInfo::new(Arc::new(pod("p", None, json!([{"name": "v", "emptyDir": {}}])))).unwrap();
        assert!(pl.pre_filter(&mut CycleState::default(), &pi, &Snapshot::default()).1.is_skip());
    }

    /// Upstream TestAccessModeConflicts.
    #[test]
    fn read_write_once_pod_claims_conflict_cluster_wide() {
        let pl = plugin(vec![pvc("rwop", &["ReadWriteOncePod"]), pvc("rwo", &["ReadWriteOnce"])]);
        let claim = |n: &str| json!([{"name": "v", "persistentVolumeClaim": {"claimName": n}}]);
        let s = run(&pl, &pod("p", None, claim("rwop")), &[pod("e", Some("n"), claim("rwop"))]);
        assert_eq!((s.code, s.reasons), (Code::Unschedulable, vec![ERR_REASON_RWOP_CONFLICT.to_string()]));
        // RWO claims are not restricted here; an unused RWOP claim neither (PreFilter skips).
        let pi = PodInfo::new(Arc::new(pod("p", None, claim("rwo")))).unwrap();
        let snap = Snapshot::from_objects(&[], &[]);
        assert!(pl.pre_filter(&mut CycleState::default(), &pi, &snap).1.is_skip());
        let pi = PodInfo::new(Arc::new(pod("p", None, claim("rwop")))).unwrap();
        assert!(pl.pre_filter(&mut CycleState::default(), &pi, &snap).1.is_skip());
        // A missing claim is unresolvable with the API's NotFound text.
        let s = run(&pl, &pod("p", None, claim("gone")), &[]);
        assert_eq!(
            (s.code, s.reasons),
            (Code::UnschedulableAndUnresolvable, vec!["persistentvolumeclaim \"gone\" not found".to_string()])
        );
    }

    #[test]
    fn preemption_simulation_removing_the_user_clears_the_conflict() {
        let pl = plugin(vec![pvc("rwop", &["ReadWriteOncePod"])]);
        let claim = json!([{"name": "v", "persistentVolumeClaim": {"claimName": "rwop"}}]);
        let victim = pod("e", Some("n"), claim.clone());
        let node: Node = serde_json::from_value(json!({"metadata": {"name": "n"}})).unwrap();
        let snap = Snapshot::from_objects(&[node], std::slice::from_ref(&victim));
        let pi = PodInfo::new(Arc::new(pod("p", None, claim))).unwrap();
        let mut state = CycleState::default();
        assert!(pl.pre_filter(&mut state, &pi, &snap).1.is_success());
        assert!(!pl.filter(&state, &pi, &snap.nodes[0]).is_success());
        let vi = PodInfo::new(Arc::new(victim)).unwrap();
        pl.remove_pod(&mut state, &pi, &vi, &snap.nodes[0]);
        assert!(pl.filter(&state, &pi, &NodeInfo::default()).is_success());
        pl.add_pod(&mut state, &pi, &Arc::new(vi), &snap.nodes[0]);
        assert!(!pl.filter(&state, &pi, &NodeInfo::default()).is_success());
    }
}
