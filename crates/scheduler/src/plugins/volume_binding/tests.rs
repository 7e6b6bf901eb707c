//! Table tests after upstream TestVolumeBinding / binder tests.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use serde_json::{json, Value};

use super::*;

const WFFC: &str = "wait-sc";
const IMMEDIATE: &str = "immediate-sc";
const PROVISION: &str = "provision-sc";

fn node(name: &str, labels: Value) -> Node {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap()
}

fn class(name: &str, mode: &str, provisioner: &str, topologies: Value) -> StorageClass {
    serde_json::from_value(json!({"metadata": {"name": name}, "provisioner": provisioner,
        "volumeBindingMode": mode, "allowedTopologies": topologies}))
    .unwrap()
}

/// A claim of `class` asking `size` (bound to `volume` with bind-completed when given).
fn pvc(name: &str, class: &str, size: &str, volume: Option<&str>) -> PersistentVolumeClaim {
    let mut v = json!({"metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"), "resourceVersion": "1"},
        "spec": {"storageClassName": class, "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}});
    if let Some(vol) = volume {
        v["spec"]["volumeName"] = json!(vol);
        v["metadata"]["annotations"] = json!({ANN_BIND_COMPLETED: "yes"});
    }
    serde_json::from_value(v).unwrap()
}

/// An Available PV of `class` and `size`, optionally pinned to hostnames.
fn pv(name: &str, class: &str, size: &str, hosts: &[&str]) -> PersistentVolume {
    let mut v = json!({"metadata": {"name": name, "resourceVersion": "1"},
        "spec": {"storageClassName": class, "accessModes": ["ReadWriteOnce"], "capacity": {"storage": size}},
        "status": {"phase": "Available"}});
    if !hosts.is_empty() {
        v["spec"]["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": hosts}]}]}});
    }
    serde_json::from_value(v).unwrap()
}

fn pod(claims: &[&str]) -> Pod {
    let vols: Vec<Value> = claims
        .iter()
        .enumerate()
        .map(|(i, c)| json!({"name": format!("v{i}"), "persistentVolumeClaim": {"claimName": c}}))
        .collect();
    serde_json::from_value(json!({"metadata": {"name": "pod-a", "namespace": "default", "uid": "pod-uid"},
        "spec": {"containers": [{"name": "c"}], "volumes": vols}}))
    .unwrap()
}

fn classes() -> Vec<StorageClass> {
    vec![
        class(WFFC, "WaitForFirstConsumer", NOT_SUPPORTED_PROVISIONER, json!(null)),
        class(IMMEDIATE, "Immediate", NOT_SUPPORTED_PROVISIONER, json!(null)),
        class(
            PROVISION,
            "WaitForFirstConsumer",
            "example.com/csi",
            json!([{"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": ["zone-a"]}]}]),
        ),
    ]
}

fn plugin(pvcs: Vec<PersistentVolumeClaim>, pvs: Vec<PersistentVolume>) -> VolumeBinding {
    let mut h = Handle::default();
    h.listers.pvcs = Arc::new(StaticLister::new(pvcs));
    h.listers.pvs = Arc::new(StaticLister::new(pvs));
    h.listers.storage_classes = Arc::new(StaticLister::new(classes()));
    VolumeBinding::from_args(None, &h).unwrap()
}

fn nodes() -> Vec<Node> {
    vec![
        node("node-a", json!({"kubernetes.io/hostname": "node-a", "topology.kubernetes.io/zone": "zone-a"})),
        node("node-b", json!({"kubernetes.io/hostname": "node-b", "topology.kubernetes.io/zone": "zone-b"})),
    ]
}

/// PreFilter then Filter on every node: (PreFilter status, result, per-node filter statuses).
fn run(pl: &VolumeBinding, p: &Pod) -> (Status, Option<PreFilterResult>, Vec<Status>, CycleState) {
    let snap = Snapshot::from_objects(&nodes(), &[]);
    let pi = PodInfo::new(Arc::new(p.clone())).unwrap();
    let mut state = CycleState::default();
    let (r, s) = pl.pre_filter(&mut state, &pi, &snap);
    if !s.is_success() {
        return (s, r, vec![], state);
    }
    let f = snap.nodes.iter().map(|n| pl.filter(&state, &pi, n)).collect();
    (s, r, f, state)
}

fn unresolvable(reason: &str) -> (Code, Vec<String>) {
    (Code::UnschedulableAndUnresolvable, vec![reason.to_string()])
}

fn cr(s: &Status) -> (Code, Vec<String>) {
    (s.code, s.reasons.clone())
}

#[test]
fn pre_filter_outcomes_match_upstream() {
    // Pod without claims: Skip.
    let (s, ..) = run(&plugin(vec![], vec![]), &pod(&[]));
    assert!(s.is_skip());
    // Missing claim.
    let (s, ..) = run(&plugin(vec![], vec![]), &pod(&["pvc-a"]));
    assert_eq!(cr(&s), unresolvable("persistentvolumeclaim \"pvc-a\" not found"));
    // Unbound claim of an Immediate class (and of an unknown class).
    let pl = plugin(vec![pvc("pvc-a", IMMEDIATE, "1Gi", None), pvc("pvc-b", "no-such-class", "1Gi", None)], vec![]);
    assert_eq!(cr(&run(&pl, &pod(&["pvc-a"])).0), unresolvable("pod has unbound immediate PersistentVolumeClaims"));
    assert_eq!(cr(&run(&pl, &pod(&["pvc-b"])).0), unresolvable("pod has unbound immediate PersistentVolumeClaims"));
    // A claim being deleted.
    let mut deleting = pvc("pvc-a", WFFC, "1Gi", None);
    deleting.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time("2026-01-01T00:00:00Z".parse().unwrap()));
    let (s, ..) = run(&plugin(vec![deleting], vec![]), &pod(&["pvc-a"]));
    assert_eq!(cr(&s), unresolvable("persistentvolumeclaim \"pvc-a\" is being deleted"));
}

#[test]
fn bound_claims_check_pv_node_affinity_and_narrow_to_local_nodes() {
    // Bound, no affinity: every node fits and PreBind has nothing to do.
    let pl = plugin(vec![pvc("pvc-a", WFFC, "1Gi", Some("pv-a"))], vec![pv("pv-a", WFFC, "1Gi", &[])]);
    let (s, r, f, _) = run(&pl, &pod(&["pvc-a"]));
    assert!(s.is_success() && r.is_none());
    assert!(f.iter().all(Status::is_success));
    // Local PV on node-a: PreFilter narrows to node-a; node-b conflicts.
    let pl = plugin(vec![pvc("pvc-a", WFFC, "1Gi", Some("pv-a"))], vec![pv("pv-a", WFFC, "1Gi", &["node-a"])]);
    let (_, r, f, _) = run(&pl, &pod(&["pvc-a"]));
    assert_eq!(r.unwrap().node_names.unwrap(), BTreeSet::from(["node-a".to_string()]));
    assert!(f[0].is_success());
    assert_eq!(cr(&f[1]), unresolvable(ERR_REASON_NODE_CONFLICT));
    // Bound to a PV that does not exist.
    let pl = plugin(vec![pvc("pvc-a", WFFC, "1Gi", Some("pv-gone"))], vec![]);
    let (_, _, f, _) = run(&pl, &pod(&["pvc-a"]));
    assert_eq!(cr(&f[0]), unresolvable(ERR_REASON_PV_NOT_EXIST));
}

#[test]
fn wait_for_first_consumer_claims_find_the_smallest_fitting_pv() {
    let pvs = vec![
        pv("pv-big", WFFC, "10Gi", &[]),
        pv("pv-small", WFFC, "2Gi", &["node-a"]),
        pv("pv-tiny", WFFC, "500Mi", &[]),
        pv("pv-other-class", "other", "2Gi", &[]),
    ];
    let pl = plugin(vec![pvc("pvc-a", WFFC, "1Gi", None)], pvs);
    let (s, _, f, state) = run(&pl, &pod(&["pvc-a"]));
    assert!(s.is_success() && f.iter().all(Status::is_success));
    let d = state.read::<StateData>(STATE_KEY).unwrap();
    let chosen = |n: &str| d.by_node.lock().unwrap()[n].static_bindings[0].pv.metadata.name.clone().unwrap();
    assert_eq!(chosen("node-a"), "pv-small");
    assert_eq!(chosen("node-b"), "pv-big");
    // No PV fits and the class cannot provision.
    let pl = plugin(vec![pvc("pvc-a", WFFC, "20Gi", None)], vec![pv("pv-big", WFFC, "10Gi", &[])]);
    let (_, _, f, _) = run(&pl, &pod(&["pvc-a"]));
    assert!(f.iter().all(|s| cr(s) == unresolvable(ERR_REASON_BIND_CONFLICT)));
    // Access modes must all be offered.
    let mut rwx = pvc("pvc-a", WFFC, "1Gi", None);
    rwx.spec.as_mut().unwrap().access_modes = Some(vec!["ReadWriteMany".into()]);
    let (_, _, f, _) = run(&plugin(vec![rwx], vec![pv("pv-big", WFFC, "10Gi", &[])]), &pod(&["pvc-a"]));
    assert_eq!(cr(&f[0]), unresolvable(ERR_REASON_BIND_CONFLICT));
}

#[test]
fn reserve_assumes_bindings_for_later_cycles_and_unreserve_reverts() {
    let pl = plugin(
        vec![pvc("pvc-a", WFFC, "1Gi", None), pvc("pvc-b", WFFC, "1Gi", None)],
        vec![pv("pv-1", WFFC, "1Gi", &[])],
    );
    let (_, _, f, mut state) = run(&pl, &pod(&["pvc-a"]));
    assert!(f[0].is_success());
    let pi = PodInfo::new(Arc::new(pod(&["pvc-a"]))).unwrap();
    assert!(pl.reserve(&mut state, &pi, "node-a").is_success());
    let r = state.read::<Reserved>(RESERVED_KEY).unwrap();
    let b = &r.volumes.as_ref().unwrap().static_bindings[0];
    let claim_ref = b.pv.spec.as_ref().unwrap().claim_ref.as_ref().unwrap();
    assert_eq!((claim_ref.name.as_deref(), claim_ref.uid.as_deref()), (Some("pvc-a"), Some("uid-pvc-a")));
    assert_eq!(b.pv.metadata.annotations.as_ref().unwrap()[ANN_BOUND_BY_CONTROLLER], "yes");
    // Another pod's claim no longer finds pv-1.
    let (_, _, f2, _) = run(&pl, &pod(&["pvc-b"]));
    assert_eq!(cr(&f2[0]), unresolvable(ERR_REASON_BIND_CONFLICT));
    pl.unreserve(&mut state, &pi, "node-a");
    let (_, _, f3, _) = run(&pl, &pod(&["pvc-b"]));
    assert!(f3[0].is_success());
}

#[test]
fn dynamic_provisioning_follows_allowed_topologies_and_selected_node() {
    let pl = plugin(vec![pvc("pvc-a", PROVISION, "1Gi", None)], vec![]);
    let (_, _, f, mut state) = run(&pl, &pod(&["pvc-a"]));
    assert!(f[0].is_success());
    assert_eq!(cr(&f[1]), unresolvable(ERR_REASON_BIND_CONFLICT));
    let pi = PodInfo::new(Arc::new(pod(&["pvc-a"]))).unwrap();
    pl.reserve(&mut state, &pi, "node-a");
    let r = state.read::<Reserved>(RESERVED_KEY).unwrap();
    let claim = &r.volumes.as_ref().unwrap().dynamic_provisions[0];
    assert_eq!(claim.metadata.annotations.as_ref().unwrap()[ANN_SELECTED_NODE], "node-a");
    // A claim already selected for node-b fits only node-b (zone-b is not allowed,
    // but the fast path rejects other nodes first).
    let mut selected = pvc("pvc-a", PROVISION, "1Gi", None);
    selected.metadata.annotations = Some([(ANN_SELECTED_NODE.to_string(), "node-a".to_string())].into());
    let (_, _, f, _) = run(&plugin(vec![selected], vec![]), &pod(&["pvc-a"]));
    assert!(f[0].is_success());
    assert_eq!(cr(&f[1]), unresolvable(ERR_REASON_BIND_CONFLICT));
}

#[test]
fn check_bindings_waits_for_the_pv_controller_and_detects_resets() {
    let node = Arc::new(nodes()[0].clone());
    let claim = pvc("pvc-a", WFFC, "1Gi", None);
    let (bound_pv, _) = bind_volume_to_claim(&pv("pv-1", WFFC, "1Gi", &[]), &claim);
    let volumes = PodVolumes {
        static_bindings: vec![BindingInfo { pv: Arc::new(bound_pv.clone()), pvc: Arc::new(claim.clone()) }],
        dynamic_provisions: vec![],
        node: Some(node),
    };
    let none = HashMap::new();
    // The claim is not bind-completed yet: keep waiting.
    let pl = plugin(vec![claim.clone()], vec![bound_pv.clone()]);
    assert_eq!(pl.check_bindings("node-a", &volumes, &none), Ok(false));
    // The PV controller finished.
    let pl = plugin(vec![pvc("pvc-a", WFFC, "1Gi", Some("pv-1"))], vec![bound_pv]);
    assert_eq!(pl.check_bindings("node-a", &volumes, &none), Ok(true));
    // The PV's claimRef was dropped.
    let pl = plugin(vec![claim.clone()], vec![pv("pv-1", WFFC, "1Gi", &[])]);
    assert_eq!(pl.check_bindings("node-a", &volumes, &none), Err("ClaimRef got reset for pv \"pv-1\"".into()));
    // A provisioner gave up: the selected-node annotation points elsewhere.
    let mut reset = claim.clone();
    reset.metadata.annotations = Some([(ANN_SELECTED_NODE.to_string(), "node-b".to_string())].into());
    let prov = PodVolumes { dynamic_provisions: vec![Arc::new(claim)], ..Default::default() };
    let pl = plugin(vec![reset], vec![]);
    assert_eq!(pl.check_bindings("node-a", &prov, &none), Err("provisioning failed for PVC \"pvc-a\"".into()));
}

#[tokio::test]
async fn pre_bind_skips_bound_pods_and_needs_a_client_otherwise() {
    let pl = plugin(vec![pvc("pvc-a", WFFC, "1Gi", Some("pv-a"))], vec![pv("pv-a", WFFC, "1Gi", &[])]);
    let (_, _, _, mut state) = run(&pl, &pod(&["pvc-a"]));
    let pi = PodInfo::new(Arc::new(pod(&["pvc-a"]))).unwrap();
    pl.reserve(&mut state, &pi, "node-a");
    assert!(pl.pre_bind(&state, &pi, "node-a").await.is_success());
    let pl = plugin(vec![pvc("pvc-a", WFFC, "1Gi", None)], vec![pv("pv-a", WFFC, "1Gi", &[])]);
    let (_, _, _, mut state) = run(&pl, &pod(&["pvc-a"]));
    pl.reserve(&mut state, &pi, "node-a");
    let s = pl.pre_bind(&state, &pi, "node-a").await;
    assert_eq!(s.code, Code::Error);
}

#[test]
fn args_validation_as_upstream() {
    let h = Handle::default();
    let err = |v: Value| VolumeBinding::from_args(Some(&v), &h).err().unwrap();
    assert_eq!(
        err(json!({"bindTimeoutSeconds": -10})),
        "bindTimeoutSeconds: Invalid value: -10: invalid BindTimeoutSeconds, should not be a negative value"
    );
    assert_eq!(
        err(json!({"shape": [{"utilization": 0, "score": 0}]})),
        "shape: Invalid value: []config.UtilizationShapePoint{config.UtilizationShapePoint{Utilization:0, Score:0}}: \
unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring"
    );
    assert_eq!(VolumeBinding::from_args(None, &h).unwrap().bind_timeout, Duration::from_secs(600));
}

/// Upstream TestVolumeBinding "bound and unbound unsatisfied": both reasons, in upstream order.
#[test]
fn bound_and_unbound_unsatisfied_reports_both_reasons() {
    let mut affine = pv("pv-a", WFFC, "1Gi", &[]);
    affine.spec.as_mut().unwrap().node_affinity = serde_json::from_value(json!({"required": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["barbar"]}]}]}}))
    .unwrap();
    let pl = plugin(vec![pvc("pvc-a", WFFC, "1Gi", Some("pv-a")), pvc("pvc-b", WFFC, "5Gi", None)], vec![affine]);
    let (s, r, f, _) = run(&pl, &pod(&["pvc-a", "pvc-b"]));
    assert!(s.is_success() && r.is_none());
    assert_eq!(
        cr(&f[0]),
        (
            Code::UnschedulableAndUnresolvable,
            vec![ERR_REASON_NODE_CONFLICT.to_string(), ERR_REASON_BIND_CONFLICT.to_string()]
        )
    );
}
