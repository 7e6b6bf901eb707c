//! The built-in local-path provisioner, as k3s ships rancher's
//! local-path-provisioner: a default StorageClass `local-path`
//! (`rancher.io/local-path`, WaitForFirstConsumer, reclaim Delete), and for
//! every claim of it the binder handed over (storage-provisioner annotation)
//! once the scheduler picked a node (selected-node annotation), a hostPath
//! PersistentVolume `pvc-<claim uid>` at
//! `<storage root>/<pv name>_<namespace>_<claim name>`, limited to that node
//! and pre-bound to the claim (the binder then completes the binding).
//!
//! The directory itself is the node's job: the PV's hostPath type is
//! `DirectoryOrCreate`, so the kubelet creates it when mounting (the
//! controller may run on another machine). On Delete reclaim the binder
//! deletes the PV object; removing the directory on the node is not done
//! by rkube yet (rancher's provisioner runs a helper pod on the node for it).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    HostPathVolumeSource, Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, ObjectReference,
    PersistentVolume, PersistentVolumeClaim, PersistentVolumeSpec, VolumeNodeAffinity,
};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use kube::runtime::controller::Action;

use super::binder::Binder;
use super::index::*;
use crate::events::{NORMAL, WARNING};
use crate::runtime::{is_conflict, Error};

/// The provisioner name (rancher's).
pub const PROVISIONER: &str = "rancher.io/local-path";
/// The default StorageClass's name.
pub const CLASS_NAME: &str = "local-path";
/// Marks a StorageClass as the default one.
pub const ANN_DEFAULT_CLASS: &str = "storageclass.kubernetes.io/is-default-class";
/// The storage root when the server does not set one.
pub const DEFAULT_STORAGE_ROOT: &str = "/var/lib/rkube/storage";
/// The node label the volume's affinity uses.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// The default StorageClass k3s installs.
pub fn default_class() -> StorageClass {
    StorageClass {
        metadata: ObjectMeta {
            name: Some(CLASS_NAME.into()),
            annotations: Some(BTreeMap::from([(ANN_DEFAULT_CLASS.to_string(), "true".to_string())])),
            ..Default::default()
        },
        provisioner: PROVISIONER.into(),
        reclaim_policy: Some("Delete".into()),
        volume_binding_mode: Some("WaitForFirstConsumer".into()),
        ..Default::default()
    }
}

/// Creates the `local-path` StorageClass unless it exists (k3s applies it
/// at start as an addon manifest, with admin rights; the binder's own role
/// may only read classes, so the server calls this with its admin client).
pub async fn ensure_default_class(client: &kube::Client) -> Result<(), kube::Error> {
    let api = Api::<StorageClass>::all(client.clone());
    if api.get_opt(CLASS_NAME).await?.is_some() {
        return Ok(());
    }
    match api.create(&PostParams::default(), &default_class()).await {
        Ok(_) => {
            tracing::info!(component = "local-path-provisioner", "created the default StorageClass local-path");
            Ok(())
        }
        Err(e) if is_conflict(&e) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Whether the provisioner acts on `pvc`: handed to it by the binder,
/// placed by the scheduler, not bound and not being deleted
/// (sig-storage-lib-external-provisioner's `shouldProvision`).
pub fn should_provision(pvc: &PersistentVolumeClaim) -> bool {
    claim_volume_name(pvc).is_empty()
        && pvc.metadata.deletion_timestamp.is_none()
        && annotation(&pvc.metadata, ANN_STORAGE_PROVISIONER)
            .or_else(|| annotation(&pvc.metadata, ANN_BETA_STORAGE_PROVISIONER))
            == Some(PROVISIONER)
        && annotation(&pvc.metadata, ANN_SELECTED_NODE).is_some_and(|n| !n.is_empty())
}

/// The volume for `pvc` of `class` on the node whose hostname label is
/// `hostname`: `pvc-<uid>` at `<root>/<pv>_<ns>_<claim>` (rancher's folder
/// naming), the claim's size, access modes and volume mode, the class's
/// reclaim policy (default Delete) and mount options.
pub fn volume_for(pvc: &PersistentVolumeClaim, class: &StorageClass, hostname: &str, root: &str) -> PersistentVolume {
    let ns = pvc.metadata.namespace.clone().unwrap_or_default();
    let claim = pvc.metadata.name.clone().unwrap_or_default();
    let name = format!("pvc-{}", pvc.metadata.uid.as_deref().unwrap_or(""));
    let spec = pvc.spec.clone().unwrap_or_default();
    let size = spec.resources.as_ref().and_then(|r| r.requests.as_ref()).and_then(|r| r.get("storage")).cloned();
    let path = format!("{}/{name}_{ns}_{claim}", root.trim_end_matches('/'));
    PersistentVolume {
        metadata: ObjectMeta {
            name: Some(name),
            annotations: Some(BTreeMap::from([(ANN_DYNAMICALLY_PROVISIONED.to_string(), PROVISIONER.to_string())])),
            ..Default::default()
        },
        spec: Some(PersistentVolumeSpec {
            capacity: Some(BTreeMap::from([("storage".to_string(), size.unwrap_or_else(|| Quantity("0".into())))])),
            access_modes: spec.access_modes.clone(),
            volume_mode: spec.volume_mode.clone(),
            persistent_volume_reclaim_policy: Some(class.reclaim_policy.clone().unwrap_or_else(|| "Delete".into())),
            storage_class_name: class.metadata.name.clone(),
            mount_options: class.mount_options.clone(),
            host_path: Some(HostPathVolumeSource { path, type_: Some("DirectoryOrCreate".into()) }),
            node_affinity: Some(VolumeNodeAffinity {
                required: Some(NodeSelector {
                    node_selector_terms: vec![NodeSelectorTerm {
                        match_expressions: Some(vec![NodeSelectorRequirement {
                            key: HOSTNAME_LABEL.into(),
                            operator: "In".into(),
                            values: Some(vec![hostname.into()]),
                        }]),
                        ..Default::default()
                    }],
                }),
            }),
            claim_ref: Some(ObjectReference {
                kind: Some("PersistentVolumeClaim".into()),
                api_version: Some("v1".into()),
                namespace: Some(ns),
                name: Some(claim),
                uid: pvc.metadata.uid.clone(),
                resource_version: pvc.metadata.resource_version.clone(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        status: None,
    }
}

/// Provisions for one claim (the external-provisioner's `provisionClaimOperation`).
pub async fn sync_claim(pvc: Arc<PersistentVolumeClaim>, b: Arc<Binder>) -> Result<Action, Error> {
    let key = crate::runtime::key_of(pvc.as_ref());
    if !should_provision(&pvc) {
        b.backoff_done(&key);
        return Ok(Action::await_change());
    }
    let pv_name = format!("pvc-{}", pvc.metadata.uid.as_deref().unwrap_or(""));
    let pvs = Api::<PersistentVolume>::all(b.ctx.client.clone());
    if pvs.get_opt(&pv_name).await?.is_some() {
        b.backoff_done(&key);
        return Ok(Action::await_change());
    }
    let class_name = claim_class(&pvc);
    let Some(class) = Api::<StorageClass>::all(b.ctx.client.clone()).get_opt(&class_name).await? else {
        b.provisioner_recorder.event(
            pvc.as_ref(),
            WARNING,
            "ProvisioningFailed",
            format!("storageclass.storage.k8s.io \"{class_name}\" not found"),
        );
        return Err(Error::Other(format!("storageclass \"{class_name}\" not found")));
    };
    if class.provisioner != PROVISIONER {
        return Ok(Action::await_change());
    }
    let node_name = annotation(&pvc.metadata, ANN_SELECTED_NODE).unwrap_or("").to_string();
    let claim_key =
        format!("{}/{}", pvc.metadata.namespace.as_deref().unwrap_or(""), pvc.metadata.name.as_deref().unwrap_or(""));
    b.provisioner_recorder.event(
        pvc.as_ref(),
        NORMAL,
        "Provisioning",
        format!("External provisioner is provisioning volume for claim \"{claim_key}\""),
    );
    // rancher's provisioner uses the node's hostname label (falling back to its name).
    // (The binder's role may list nodes, not get them.)
    let by_name = ListParams::default().fields(&format!("metadata.name={node_name}"));
    let hostname = match Api::<Node>::all(b.ctx.client.clone()).list(&by_name).await {
        Ok(list) => list.items.into_iter().next().and_then(|n| n.metadata.labels?.get(HOSTNAME_LABEL).cloned()),
        Err(_) => None,
    }
    .unwrap_or_else(|| node_name.clone());
    let pv = volume_for(&pvc, &class, &hostname, &b.ctx.settings.storage_root);
    match pvs.create(&PostParams::default(), &pv).await {
        Ok(_) => {
            tracing::info!(component = b.ctx.name, claim = %claim_key, volume = %pv_name, node = %node_name, "provisioned a local-path volume");
            b.provisioner_recorder.event(
                pvc.as_ref(),
                NORMAL,
                "ProvisioningSucceeded",
                format!("Successfully provisioned volume {pv_name}"),
            );
        }
        Err(e) if is_conflict(&e) => {}
        Err(e) => {
            b.provisioner_recorder.event(
                pvc.as_ref(),
                WARNING,
                "ProvisioningFailed",
                format!("failed to provision volume with StorageClass \"{class_name}\": {e}"),
            );
            return Err(e.into());
        }
    }
    b.backoff_done(&key);
    Ok(Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn volume_follows_rancher_local_path() {
        let pvc: PersistentVolumeClaim = serde_json::from_value(json!({
            "metadata": {"name": "data", "namespace": "ns", "uid": "1234", "resourceVersion": "9",
                         "annotations": {ANN_SELECTED_NODE: "n1", ANN_STORAGE_PROVISIONER: PROVISIONER}},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "128Mi"}},
                     "storageClassName": "local-path", "volumeMode": "Filesystem"},
        }))
        .unwrap();
        assert!(should_provision(&pvc));
        let pv = serde_json::to_value(volume_for(&pvc, &default_class(), "n1", "/data/storage/")).unwrap();
        assert_eq!(
            pv,
            json!({
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": "pvc-1234", "annotations": {"pv.kubernetes.io/provisioned-by": "rancher.io/local-path"}},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "capacity": {"storage": "128Mi"},
                    "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "name": "data", "namespace": "ns",
                                 "resourceVersion": "9", "uid": "1234"},
                    "hostPath": {"path": "/data/storage/pvc-1234_ns_data", "type": "DirectoryOrCreate"},
                    "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}]}},
                    "persistentVolumeReclaimPolicy": "Delete",
                    "storageClassName": "local-path",
                    "volumeMode": "Filesystem",
                },
            })
        );
        let mut unplaced = pvc.clone();
        unplaced.metadata.annotations.as_mut().unwrap().remove(ANN_SELECTED_NODE);
        assert!(!should_provision(&unplaced));
        let mut other = pvc.clone();
        other.metadata.annotations.as_mut().unwrap().insert(ANN_STORAGE_PROVISIONER.into(), "ebs.csi.aws.com".into());
        assert!(!should_provision(&other));
    }

    #[test]
    fn default_class_is_k3s_local_path() {
        let sc = serde_json::to_value(default_class()).unwrap();
        assert_eq!(
            sc,
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                   "metadata": {"name": "local-path", "annotations": {ANN_DEFAULT_CLASS: "true"}},
                   "provisioner": "rancher.io/local-path", "reclaimPolicy": "Delete",
                   "volumeBindingMode": "WaitForFirstConsumer"})
        );
    }
}
