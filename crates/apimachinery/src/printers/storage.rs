//! Printers for volumes: core/v1 PersistentVolume and
//! PersistentVolumeClaim, storage.k8s.io/v1 StorageClass, CSIDriver,
//! CSINode, CSIStorageCapacity and VolumeAttachment (upstream
//! `printPersistentVolume`, `printStorageClass`, `printCSIDriver`, …).

use jiff::Timestamp;
use serde_json::{json, Value};

use super::{age, arr, cell, col, col_fmt, name, qty, s, wide, Column, AGE, NAME};

/// PersistentVolume columns: Name, Capacity, Access Modes, Reclaim Policy,
/// Status, Claim, StorageClass, VolumeAttributesClass, Reason, Age | VolumeMode.
pub const PV_COLUMNS: &[Column] = &[
    NAME,
    col("Capacity", "string", "capacity is the description of the persistent volume's resources and capacity. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity"),
    col("Access Modes", "string", "accessModes contains all ways the volume can be mounted. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes"),
    col("Reclaim Policy", "string", "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim. Valid options are Retain (default for manually created PersistentVolumes), Delete (default for dynamically provisioned PersistentVolumes), and Recycle (deprecated). Recycle must be supported by the volume plugin underlying this PersistentVolume. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming"),
    col("Status", "string", "phase indicates if a volume is available, bound to a claim, or released by a claim. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase"),
    col("Claim", "string", "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim. Expected to be non-nil when bound. claim.VolumeName is the authoritative bind between PV and PVC. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding"),
    col("StorageClass", "string", "StorageClass of the pv"),
    col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
    col("Reason", "string", "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI."),
    AGE,
    wide("VolumeMode", "string", "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state. Value of Filesystem is implied when not included in spec."),
];

/// `helper.GetAccessModesAsString`: RWO, ROX, RWX, RWOP in that order.
fn access_modes(modes: &Value) -> String {
    let modes: Vec<&str> = arr(modes).iter().map(s).collect();
    [("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"), ("ReadWriteOncePod", "RWOP")]
        .iter()
        .filter(|(m, _)| modes.contains(m))
        .map(|(_, short)| *short)
        .collect::<Vec<_>>()
        .join(",")
}

/// The storage class: the beta annotation, else `spec.storageClassName`.
fn storage_class(obj: &Value) -> String {
    match obj["metadata"]["annotations"]["volume.beta.kubernetes.io/storage-class"].as_str() {
        Some(c) => c.to_string(),
        None => s(&obj["spec"]["storageClassName"]).to_string(),
    }
}

/// `Terminating` for deleted objects, else the phase.
fn phase(obj: &Value) -> String {
    if obj["metadata"]["deletionTimestamp"].is_string() {
        "Terminating".into()
    } else {
        s(&obj["status"]["phase"]).to_string()
    }
}

/// `s` or `<unset>` when absent.
fn or_unset(v: &Value) -> String {
    v.as_str().unwrap_or("<unset>").to_string()
}

/// `printPersistentVolume`.
pub fn pv_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &obj["spec"];
    let claim = if spec["claimRef"].is_object() {
        format!("{}/{}", s(&spec["claimRef"]["namespace"]), s(&spec["claimRef"]["name"]))
    } else {
        String::new()
    };
    vec![
        name(obj),
        cell(qty(&spec["capacity"]["storage"])),
        cell(access_modes(&spec["accessModes"])),
        cell(s(&spec["persistentVolumeReclaimPolicy"])),
        cell(phase(obj)),
        cell(claim),
        cell(storage_class(obj)),
        cell(or_unset(&spec["volumeAttributesClassName"])),
        cell(s(&obj["status"]["reason"])),
        age(obj, now),
        cell(or_unset(&spec["volumeMode"])),
    ]
}

/// PersistentVolumeClaim columns: Name, Status, Volume, Capacity, Access
/// Modes, StorageClass, VolumeAttributesClass, Age | VolumeMode.
pub const PVC_COLUMNS: &[Column] = &[
    NAME,
    col("Status", "string", "phase represents the current phase of PersistentVolumeClaim."),
    col("Volume", "string", "volumeName is the binding reference to the PersistentVolume backing this claim."),
    col("Capacity", "string", "capacity represents the actual resources of the underlying volume."),
    col("Access Modes", "string", "accessModes contains the actual access modes the volume backing the PVC has. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1"),
    col("StorageClass", "string", "StorageClass of the pvc"),
    col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
    AGE,
    wide("VolumeMode", "string", "volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied when not included in claim spec."),
];

/// `printPersistentVolumeClaim`: capacity and access modes only once bound.
pub fn pvc_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &obj["spec"];
    let bound = !s(&spec["volumeName"]).is_empty();
    let (capacity, modes) = if bound {
        (qty(&obj["status"]["capacity"]["storage"]), access_modes(&obj["status"]["accessModes"]))
    } else {
        (String::new(), String::new())
    };
    vec![
        name(obj),
        cell(phase(obj)),
        cell(s(&spec["volumeName"])),
        cell(capacity),
        cell(modes),
        cell(storage_class(obj)),
        cell(or_unset(&spec["volumeAttributesClassName"])),
        age(obj, now),
        cell(or_unset(&spec["volumeMode"])),
    ]
}

/// StorageClass columns: Name, Provisioner, ReclaimPolicy, VolumeBindingMode, AllowVolumeExpansion, Age.
pub const STORAGE_CLASS_COLUMNS: &[Column] = &[
    NAME,
    col("Provisioner", "string", "provisioner indicates the type of the provisioner."),
    col("ReclaimPolicy", "string", "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class. Defaults to Delete."),
    col("VolumeBindingMode", "string", "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  When unset, VolumeBindingImmediate is used. This field is only honored by servers that enable the VolumeScheduling feature."),
    col("AllowVolumeExpansion", "string", "allowVolumeExpansion shows whether the storage class allow volume expand."),
    AGE,
];

/// `printStorageClass`: `name (default)` for the default class.
pub fn storage_class_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    let ann = &obj["metadata"]["annotations"];
    let is_default = s(&ann["storageclass.kubernetes.io/is-default-class"]) == "true"
        || s(&ann["storageclass.beta.kubernetes.io/is-default-class"]) == "true";
    let mut n = s(&obj["metadata"]["name"]).to_string();
    if is_default {
        n.push_str(" (default)");
    }
    vec![
        cell(n),
        cell(s(&obj["provisioner"])),
        cell(obj["reclaimPolicy"].as_str().unwrap_or("Delete")),
        cell(obj["volumeBindingMode"].as_str().unwrap_or("Immediate")),
        json!(obj["allowVolumeExpansion"].as_bool().unwrap_or(false)),
        age(obj, now),
    ]
}

/// CSIDriver columns: Name, AttachRequired, PodInfoOnMount, StorageCapacity,
/// TokenRequests, RequiresRepublish, Modes, Age.
pub const CSI_DRIVER_COLUMNS: &[Column] = &[
    NAME,
    col("AttachRequired", "boolean", "attachRequired indicates this CSI volume driver requires an attach operation (because it implements the CSI ControllerPublishVolume() method), and that the Kubernetes attach detach controller should call the attach volume interface which checks the volumeattachment status and waits until the volume is attached before proceeding to mounting. The CSI external-attacher coordinates with CSI volume driver and updates the volumeattachment status when the attach operation is complete. If the CSIDriverRegistry feature gate is enabled and the value is specified to false, the attach operation will be skipped. Otherwise the attach operation will be called.\n\nThis field is immutable."),
    col("PodInfoOnMount", "boolean", "podInfoOnMount indicates this CSI volume driver requires additional pod information (like podName, podUID, etc.) during mount operations, if set to true. If set to false, pod information will not be passed on mount. Default is false.\n\nThe CSI driver specifies podInfoOnMount as part of driver deployment. If true, Kubelet will pass pod information as VolumeContext in the CSI NodePublishVolume() calls. The CSI driver is responsible for parsing and validating the information passed in as VolumeContext.\n\nThe following VolumeContext will be passed if podInfoOnMount is set to true. This list might grow, but the prefix will be used. \"csi.storage.k8s.io/pod.name\": pod.Name \"csi.storage.k8s.io/pod.namespace\": pod.Namespace \"csi.storage.k8s.io/pod.uid\": string(pod.UID) \"csi.storage.k8s.io/ephemeral\": \"true\" if the volume is an ephemeral inline volume                                 defined by a CSIVolumeSource, otherwise \"false\"\n\n\"csi.storage.k8s.io/ephemeral\" is a new feature in Kubernetes 1.16. It is only required for drivers which support both the \"Persistent\" and \"Ephemeral\" VolumeLifecycleMode. Other drivers can leave pod info disabled and/or ignore this field. As Kubernetes 1.15 doesn't support this field, drivers can only support one mode when deployed on such a cluster and the deployment determines which mode that is, for example via a command line parameter of the driver.\n\nThis field was immutable in Kubernetes \\< 1.29 and now is mutable."),
    col("StorageCapacity", "boolean", "storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the storage capacity that the driver deployment will report by creating CSIStorageCapacity objects with capacity information, if set to true.\n\nThe check can be enabled immediately when deploying a driver. In that case, provisioning new volumes with late binding will pause until the driver deployment has published some suitable CSIStorageCapacity object.\n\nAlternatively, the driver can be deployed with the field unset or false and it can be flipped later when storage capacity information has been published.\n\nThis field was immutable in Kubernetes \\<= 1.22 and now is mutable."),
    col("TokenRequests", "string", "tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting volume for to do necessary authentication. Kubelet will pass the tokens in VolumeContext in the CSI NodePublishVolume calls. The CSI driver should parse and validate the following VolumeContext: \"csi.storage.k8s.io/serviceAccount.tokens\": {   \"\\<audience\\>\": {     \"token\": \\<token\\>,     \"expirationTimestamp\": \\<expiration timestamp in RFC3339\\>,   },   ... }\n\nNote: Audience in each TokenRequest should be different and at most one token is empty string. To receive a new token after expiry, RequiresRepublish can be used to trigger NodePublishVolume periodically."),
    col("RequiresRepublish", "boolean", "requiresRepublish indicates the CSI driver wants `NodePublishVolume` being periodically called to reflect any possible change in the mounted volume. This field defaults to false.\n\nNote: After a successful initial NodePublishVolume call, subsequent calls to NodePublishVolume should only update the contents of the volume. New mount points will not be seen by a running container."),
    col("Modes", "string", "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports. The default if the list is empty is \"Persistent\", which is the usage defined by the CSI specification and implemented in Kubernetes via the usual PV/PVC mechanism.\n\nThe other mode is \"Ephemeral\". In this mode, volumes are defined inline inside the pod spec with CSIVolumeSource and their lifecycle is tied to the lifecycle of that pod. A driver has to be aware of this because it is only going to get a NodePublishVolume call for such a volume.\n\nFor more information about implementing this mode, see https://kubernetes-csi.github.io/docs/ephemeral-local-volumes.html A driver can support one or more of these modes and more modes may be added in the future.\n\nThis field is beta. This field is immutable."),
    AGE,
];

/// `printCSIDriver`: booleans with their defaults (attachRequired true).
pub fn csi_driver_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &obj["spec"];
    let flag = |k: &str, d: bool| json!(spec[k].as_bool().unwrap_or(d));
    let tokens = match spec["tokenRequests"].as_array() {
        Some(t) => t.iter().map(|r| s(&r["audience"])).collect::<Vec<_>>().join(","),
        None => "<unset>".into(),
    };
    let modes: Vec<&str> = arr(&spec["volumeLifecycleModes"]).iter().map(s).collect();
    let modes = if modes.is_empty() { "<none>".to_string() } else { modes.join(",") };
    vec![
        name(obj),
        flag("attachRequired", true),
        flag("podInfoOnMount", false),
        flag("storageCapacity", false),
        cell(tokens),
        flag("requiresRepublish", false),
        cell(modes),
        age(obj, now),
    ]
}

/// CSINode columns: Name, Drivers, Age.
pub const CSI_NODE_COLUMNS: &[Column] =
    &[NAME, col("Drivers", "integer", "Drivers indicates the number of CSI drivers registered on the node"), AGE];

/// `printCSINode`: the number of drivers.
pub fn csi_node_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![name(obj), json!(arr(&obj["spec"]["drivers"]).len()), age(obj, now)]
}

/// CSIStorageCapacity columns: Name, StorageClassName, Capacity.
pub const CSI_STORAGE_CAPACITY_COLUMNS: &[Column] = &[
    NAME,
    col("StorageClassName", "string", "storageClassName represents the name of the StorageClass that the reported capacity applies to. It must meet the same requirements as the name of a StorageClass object (non-empty, DNS subdomain). If that object no longer exists, the CSIStorageCapacity object is obsolete and should be removed by its creator. This field is immutable."),
    col("Capacity", "string", "capacity is the value reported by the CSI driver in its GetCapacityResponse for a GetCapacityRequest with topology and parameters that match the previous fields.\n\nThe semantic is currently (CSI spec 1.2) defined as: The available capacity, in bytes, of the storage that can be used to provision volumes. If not set, that information is currently unavailable."),
];

/// `printCSIStorageCapacity`.
pub fn csi_storage_capacity_row(obj: &Value, _now: Timestamp) -> Vec<Value> {
    let capacity = if obj["capacity"].is_string() { qty(&obj["capacity"]) } else { "<unset>".into() };
    vec![name(obj), cell(s(&obj["storageClassName"])), cell(capacity)]
}

/// VolumeAttachment columns: Name, Attacher, PV, Node, Attached, Age
/// (upstream marks Attacher with format `name` too).
pub const VOLUME_ATTACHMENT_COLUMNS: &[Column] = &[
    NAME,
    col_fmt("Attacher", "string", "name", "attacher indicates the name of the volume driver that MUST handle this request. This is the name returned by GetPluginName().", 0),
    col("PV", "string", "persistentVolumeName represents the name of the persistent volume to attach."),
    col("Node", "string", "nodeName represents the node that the volume should be attached to."),
    col("Attached", "boolean", "attached indicates the volume is successfully attached. This field must only be set by the entity completing the attach operation, i.e. the external-attacher."),
    AGE,
];

/// `printVolumeAttachment`.
pub fn volume_attachment_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &obj["spec"];
    vec![
        name(obj),
        cell(s(&spec["attacher"])),
        cell(s(&spec["source"]["persistentVolumeName"])),
        cell(s(&spec["nodeName"])),
        json!(obj["status"]["attached"].as_bool().unwrap_or(false)),
        age(obj, now),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::test_util::now;
    use super::*;

    #[test]
    fn volumes_and_claims() {
        let pv = json!({"metadata": {"name": "pv1"}, "spec": {"capacity": {"storage": "5120Mi"},
            "accessModes": ["ReadWriteMany", "ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {"namespace": "default", "name": "data"}, "storageClassName": "fast", "volumeMode": "Filesystem"},
            "status": {"phase": "Bound"}});
        let cells = pv_row(&pv, now());
        assert_eq!(
            &cells[1..9],
            &[
                json!("5Gi"),
                json!("RWO,RWX"),
                json!("Retain"),
                json!("Bound"),
                json!("default/data"),
                json!("fast"),
                json!("<unset>"),
                json!("")
            ]
        );
        assert_eq!(cells[10], json!("Filesystem"));
        let pending = json!({"metadata": {"name": "data"}, "spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "1Gi"}}},
            "status": {"phase": "Pending"}});
        assert_eq!(
            &pvc_row(&pending, now())[1..6],
            &[json!("Pending"), json!(""), json!(""), json!(""), json!("fast")]
        );
        let bound = json!({"metadata": {"name": "data"}, "spec": {"volumeName": "pv1"},
            "status": {"phase": "Bound", "capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOncePod"]}});
        assert_eq!(&pvc_row(&bound, now())[2..5], &[json!("pv1"), json!("5Gi"), json!("RWOP")]);
    }

    #[test]
    fn storage_classes_and_csi() {
        let sc = json!({"metadata": {"name": "standard", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "rancher.io/local-path", "volumeBindingMode": "WaitForFirstConsumer"});
        assert_eq!(
            &storage_class_row(&sc, now())[..5],
            &[
                json!("standard (default)"),
                json!("rancher.io/local-path"),
                json!("Delete"),
                json!("WaitForFirstConsumer"),
                json!(false)
            ]
        );
        let drv = json!({"metadata": {"name": "csi.example"}, "spec": {"podInfoOnMount": true, "volumeLifecycleModes": ["Persistent", "Ephemeral"]}});
        assert_eq!(
            &csi_driver_row(&drv, now())[1..7],
            &[json!(true), json!(true), json!(false), json!("<unset>"), json!(false), json!("Persistent,Ephemeral")]
        );
        let va = json!({"metadata": {"name": "va"}, "spec": {"attacher": "csi.example", "nodeName": "n1",
            "source": {"persistentVolumeName": "pv1"}}, "status": {"attached": true}});
        assert_eq!(
            &volume_attachment_row(&va, now())[1..5],
            &[json!("csi.example"), json!("pv1"), json!("n1"), json!(true)]
        );
        let cap = json!({"metadata": {"name": "c"}, "storageClassName": "fast"});
        assert_eq!(csi_storage_capacity_row(&cap, now()), vec![json!("c"), json!("fast"), json!("<unset>")]);
        let node = json!({"metadata": {"name": "n1"}, "spec": {"drivers": [{"name": "a"}]}});
        assert_eq!(csi_node_row(&node, now())[1], json!(1));
    }
}
