use super::*;
use crate::strategy::cause_texts as texts;

fn claim() -> Volumes {
    Volumes::for_kind("PersistentVolumeClaim").unwrap()
}

fn volume() -> Volumes {
    Volumes::for_kind("PersistentVolume").unwrap()
}

#[test]
fn claims_need_access_modes_and_storage() {
    assert_eq!(
        texts(claim().validate_create(&json!({"spec": {}}))),
        vec![
            "spec.accessModes: Required value: at least 1 access mode is required",
            "spec.resources[storage]: Required value"
        ]
    );
    let bad = json!({"spec": {"accessModes": ["ReadWriteOncePod", "ReadWriteOnce", "WriteMany"],
        "resources": {"requests": {"storage": "0Gi"}}, "volumeMode": "Raw",
        "dataSource": {"kind": "Snapshot", "name": "s"}}});
    assert_eq!(
        texts(claim().validate_create(&bad)),
        vec![
            r#"spec.accessModes: Unsupported value: "WriteMany": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod""#,
            "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes",
            r#"spec.resources[storage]: Invalid value: "0": must be greater than zero"#,
            r#"spec.volumeMode: Unsupported value: "Raw": supported values: "Block", "Filesystem""#,
            r#"spec.dataSource: Invalid value: "Snapshot": must be 'PersistentVolumeClaim' when referencing the default apiGroup"#,
        ]
    );
}

#[test]
fn claim_defaults_and_status() {
    let mut pvc = json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
        "volumeAttributesClassName": "gold"}, "status": {"phase": "Bound"}});
    claim().default(&mut pvc);
    claim().prepare_for_create(&mut pvc);
    assert_eq!(pvc["spec"]["volumeMode"], "Filesystem");
    // The sent status is dropped; a new claim is Pending (`kubectl get pvc`).
    assert_eq!(pvc["status"], json!({"phase": "Pending"}));
    assert!(pvc["spec"].get("volumeAttributesClassName").is_none());
    assert!(claim().validate_create(&pvc).is_empty());
}

#[test]
fn claim_specs_are_immutable_but_bound_claims_may_grow() {
    let old = json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
        "volumeMode": "Filesystem"}, "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}});
    let mut grown = old.clone();
    grown["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
    assert!(claim().validate_update(&grown, &old).is_empty());
    // Binding sets volumeName once.
    let mut named = old.clone();
    named["spec"]["volumeName"] = json!("pv-1");
    assert!(claim().validate_update(&named, &old).is_empty());

    let mut changed = old.clone();
    changed["spec"]["accessModes"] = json!(["ReadWriteMany"]);
    assert_eq!(
        texts(claim().validate_update(&changed, &old)),
        vec!["spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"]
    );
    let mut shrunk = old.clone();
    shrunk["spec"]["resources"]["requests"]["storage"] = json!("512Mi");
    assert_eq!(
        texts(claim().validate_update(&shrunk, &old)),
        vec!["spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"]
    );
    let mut unbound = old.clone();
    unbound["status"] = json!({"phase": "Pending"});
    let mut grown_unbound = unbound.clone();
    grown_unbound["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
    assert_eq!(
        texts(claim().validate_update(&grown_unbound, &unbound)),
        vec!["spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"]
    );
}

#[test]
fn volumes_need_capacity_modes_and_one_source() {
    assert_eq!(
        texts(volume().validate_create(&json!({"spec": {}}))),
        vec![
            "spec.accessModes: Required value",
            "spec.capacity: Required value",
            r#"spec.capacity: Unsupported value: core.ResourceList(nil): supported values: "storage""#,
            "spec: Required value: must specify a volume type",
        ]
    );
    let two = json!({"spec": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"},
        "hostPath": {"path": "/"}, "nfs": {"server": "s", "path": "/x"}, "persistentVolumeReclaimPolicy": "Recycle"}});
    assert_eq!(
        texts(volume().validate_create(&two)),
        vec![
            "spec.nfs: Forbidden: may not specify more than 1 volume type",
            "spec.persistentVolumeReclaimPolicy: Forbidden: may not be 'recycle' for a hostPath mount of '/'",
        ]
    );
    let local =
        json!({"spec": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}, "local": {"path": "/d"}}});
    assert_eq!(
        texts(volume().validate_create(&local)),
        vec!["spec.nodeAffinity: Required value: Local volume requires node affinity"]
    );
}

#[test]
fn volume_defaults_status_and_immutable_source() {
    let mut pv = json!({"spec": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"},
        "hostPath": {"path": "/data"}}});
    volume().default(&mut pv);
    volume().prepare_for_create(&mut pv);
    assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Retain");
    assert_eq!(pv["spec"]["volumeMode"], "Filesystem");
    assert_eq!(pv["spec"]["hostPath"]["type"], "");
    assert_eq!(pv["status"]["phase"], "Pending");
    assert!(pv["status"]["lastPhaseTransitionTime"].is_string());
    let mut moved = pv.clone();
    moved["spec"]["hostPath"]["path"] = json!("/elsewhere");
    assert_eq!(
        texts(volume().validate_update(&moved, &pv)),
        vec!["spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation"]
    );
}
