//! The binder's two syncs (upstream `pv_controller.go` `syncClaim` and
//! `syncVolume`): claims find (or wait for, or ask a provisioner for) a
//! volume and are bound to it; volumes follow their claims and are
//! reclaimed (Retain: Released; Delete: deleted) once the claim is gone.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, PersistentVolumeStatus};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::runtime::controller::Action;

use super::index::*;
use super::provisioner;
use crate::events::{Recorder, NORMAL, WARNING};
use crate::runtime::{is_conflict, is_not_found, Backoff, Ctx, Error, HasBackoff};

/// Upstream's `--pvclaimbinder-sync-period` default: unbound claims are
/// retried this often (a new volume does not wake them otherwise).
pub const SYNC_PERIOD: Duration = Duration::from_secs(15);

/// Upstream's event component for the binder (`persistentvolume-controller`).
pub const EVENT_COMPONENT: &str = "persistentvolume-controller";

/// The binder's context: the controller's clients plus its event recorder
/// (upstream posts as `persistentvolume-controller`, not the manager's
/// controller name) and the local-path provisioner's settings.
pub struct Binder {
    /// The controller's clients and settings.
    pub ctx: Arc<Ctx>,
    /// Events about claims and volumes.
    pub recorder: Recorder,
    /// Events of the built-in local-path provisioner.
    pub provisioner_recorder: Recorder,
    backoff: Backoff,
}

impl Binder {
    /// A binder over `ctx`.
    pub fn new(ctx: Arc<Ctx>) -> Arc<Binder> {
        let host =
            std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default();
        let recorder = Recorder::new(ctx.client.clone(), EVENT_COMPONENT, &host);
        let provisioner_recorder = Recorder::new(ctx.client.clone(), provisioner::PROVISIONER, &host);
        Arc::new(Binder { ctx, recorder, provisioner_recorder, backoff: Backoff::default() })
    }

    fn done(&self, key: &str, action: Action) -> Result<Action, Error> {
        self.backoff.succeeded(key);
        Ok(action)
    }

    /// Forgets `key`'s failures.
    pub(super) fn backoff_done(&self, key: &str) {
        self.backoff.succeeded(key);
    }

    fn pvs(&self) -> Api<PersistentVolume> {
        Api::all(self.ctx.client.clone())
    }

    fn pvcs(&self, ns: &str) -> Api<PersistentVolumeClaim> {
        Api::namespaced(self.ctx.client.clone(), ns)
    }

    async fn get_class(&self, name: &str) -> Result<Option<StorageClass>, Error> {
        if name.is_empty() {
            return Ok(None);
        }
        Ok(Api::<StorageClass>::all(self.ctx.client.clone()).get_opt(name).await?)
    }
}

impl HasBackoff for Binder {
    fn backoff(&self) -> &Backoff {
        &self.backoff
    }
    fn name(&self) -> &'static str {
        self.ctx.name
    }
}

/// Upstream `IsDelayBindingMode`: the claim's class binds on first
/// consumer (a missing class binds immediately).
pub fn is_delay_binding(class: Option<&StorageClass>) -> bool {
    class.and_then(|c| c.volume_binding_mode.as_deref()) == Some("WaitForFirstConsumer")
}

/// Syncs one claim (upstream `syncClaim`).
pub async fn sync_claim(pvc: Arc<PersistentVolumeClaim>, b: Arc<Binder>) -> Result<Action, Error> {
    let key = crate::runtime::key_of(pvc.as_ref());
    let action = if has_annotation(&pvc.metadata, ANN_BIND_COMPLETED) {
        sync_bound_claim(&pvc, &b).await?
    } else {
        sync_unbound_claim(&pvc, &b).await?
    };
    b.done(&key, action)
}

async fn sync_unbound_claim(pvc: &PersistentVolumeClaim, b: &Binder) -> Result<Action, Error> {
    let volume_name = claim_volume_name(pvc).to_string();
    if volume_name.is_empty() {
        let class_name = claim_class(pvc);
        let class = b.get_class(&class_name).await?;
        let delay = is_delay_binding(class.as_ref()) && !has_annotation(&pvc.metadata, ANN_SELECTED_NODE);
        let volumes = Api::<PersistentVolume>::all(b.ctx.reader.clone()).list(&ListParams::default()).await?.items;
        let found = find_best_match(pvc, &volumes, delay).map_err(Error::Other)?;
        let Some(pv) = found else {
            if delay {
                b.recorder.event(
                    pvc,
                    NORMAL,
                    "WaitForFirstConsumer",
                    "waiting for first consumer to be created before binding",
                );
            } else if !class_name.is_empty() {
                provision_claim(pvc, &class_name, class.as_ref(), b).await?;
            } else {
                b.recorder.event(
                    pvc,
                    NORMAL,
                    "FailedBinding",
                    "no persistent volumes available for this claim and no storage class is set",
                );
            }
            set_claim_phase(pvc, "Pending", b).await?;
            return Ok(Action::requeue(SYNC_PERIOD));
        };
        bind(pvc, pv, b).await?;
        return Ok(Action::requeue(SYNC_PERIOD));
    }
    // The user asked for a volume by name.
    let Some(pv) = b.pvs().get_opt(&volume_name).await? else {
        set_claim_phase(pvc, "Pending", b).await?;
        return Ok(Action::requeue(SYNC_PERIOD));
    };
    if claim_ref(&pv).is_none() || is_volume_bound_to_claim(&pv, pvc) {
        bind(pvc, &pv, b).await?;
    } else {
        b.recorder.event(
            pvc,
            WARNING,
            "FailedBinding",
            format!("volume \"{volume_name}\" already bound to a different claim."),
        );
        set_claim_phase(pvc, "Pending", b).await?;
    }
    Ok(Action::requeue(SYNC_PERIOD))
}

async fn sync_bound_claim(pvc: &PersistentVolumeClaim, b: &Binder) -> Result<Action, Error> {
    let volume_name = claim_volume_name(pvc).to_string();
    if volume_name.is_empty() {
        lose_claim(
            pvc,
            b,
            "ClaimLost",
            "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!",
        )
        .await?;
        return Ok(Action::await_change());
    }
    let Some(pv) = b.pvs().get_opt(&volume_name).await? else {
        lose_claim(pvc, b, "ClaimLost", "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
            .await?;
        return Ok(Action::await_change());
    };
    if claim_ref(&pv).is_none() || is_volume_bound_to_claim(&pv, pvc) {
        bind(pvc, &pv, b).await?;
        return Ok(Action::await_change());
    }
    lose_claim(pvc, b, "ClaimMisbound", "Two claims are bound to the same volume, this one is bound incorrectly")
        .await?;
    Ok(Action::await_change())
}

async fn lose_claim(pvc: &PersistentVolumeClaim, b: &Binder, reason: &str, msg: &str) -> Result<(), Error> {
    if claim_phase(pvc) != "Lost" {
        b.recorder.event(pvc, WARNING, reason, msg);
        set_claim_phase(pvc, "Lost", b).await?;
    }
    Ok(())
}

/// Upstream `provisionClaim` for an out-of-tree provisioner (rkube has no
/// in-tree ones): mark the claim for its provisioner and say so.
async fn provision_claim(
    pvc: &PersistentVolumeClaim,
    class_name: &str,
    class: Option<&StorageClass>,
    b: &Binder,
) -> Result<(), Error> {
    if pvc.metadata.deletion_timestamp.is_some() {
        return Ok(());
    }
    let Some(class) = class else {
        b.recorder.event(
            pvc,
            WARNING,
            "ProvisioningFailed",
            format!("storageclass.storage.k8s.io \"{class_name}\" not found"),
        );
        return Ok(());
    };
    let provisioner = class.provisioner.as_str();
    if annotation(&pvc.metadata, ANN_STORAGE_PROVISIONER) != Some(provisioner)
        || annotation(&pvc.metadata, ANN_BETA_STORAGE_PROVISIONER) != Some(provisioner)
    {
        let mut updated = pvc.clone();
        let anns = updated.metadata.annotations.get_or_insert_with(Default::default);
        anns.insert(ANN_STORAGE_PROVISIONER.into(), provisioner.into());
        anns.insert(ANN_BETA_STORAGE_PROVISIONER.into(), provisioner.into());
        let ns = pvc.metadata.namespace.clone().unwrap_or_default();
        match b.pvcs(&ns).replace(pvc.metadata.name.as_deref().unwrap_or(""), &PostParams::default(), &updated).await {
            Ok(_) => {}
            // A newer claim is queued already.
            Err(e) if is_conflict(&e) || is_not_found(&e) => return Ok(()),
            Err(e) => return Err(e.into()),
        }
    }
    b.recorder.event(
        pvc,
        NORMAL,
        "ExternalProvisioning",
        format!(
            "Waiting for a volume to be created either by the external provisioner '{provisioner}' or manually by the \
             system administrator. If volume creation is delayed, please verify that the provisioner is running and \
             correctly registered."
        ),
    );
    Ok(())
}

/// Upstream `bind`: volume claimRef, volume phase, claim volumeName and
/// annotations, claim phase — in that order, each written only when it changes.
async fn bind(pvc: &PersistentVolumeClaim, pv: &PersistentVolume, b: &Binder) -> Result<(), Error> {
    let pv_name = pv.metadata.name.clone().unwrap_or_default();
    let mut pv = pv.clone();
    if let Some(updated) = bind_volume_to_claim(&pv, pvc) {
        pv = b.pvs().replace(&pv_name, &PostParams::default(), &updated).await?;
    }
    if volume_phase(&pv) != "Bound" {
        pv = set_volume_phase(&pv, "Bound", b).await?;
    }
    let ns = pvc.metadata.namespace.clone().unwrap_or_default();
    let name = pvc.metadata.name.clone().unwrap_or_default();
    let mut pvc = pvc.clone();
    if let Some(updated) = bind_claim_to_volume(&pvc, &pv) {
        pvc = b.pvcs(&ns).replace(&name, &PostParams::default(), &updated).await?;
    }
    let spec = pv.spec.clone().unwrap_or_default();
    let status = pvc.status.get_or_insert_with(Default::default);
    if status.phase.as_deref() != Some("Bound")
        || status.capacity != spec.capacity
        || status.access_modes != spec.access_modes
    {
        status.phase = Some("Bound".into());
        status.capacity = spec.capacity.clone();
        status.access_modes = spec.access_modes.clone();
        b.pvcs(&ns).replace_status(&name, &PostParams::default(), &pvc).await?;
        tracing::info!(component = b.ctx.name, claim = %format!("{ns}/{name}"), volume = %pv_name, "claim bound");
    }
    Ok(())
}

async fn set_claim_phase(pvc: &PersistentVolumeClaim, phase: &str, b: &Binder) -> Result<(), Error> {
    if claim_phase(pvc) == phase {
        return Ok(());
    }
    let mut updated = pvc.clone();
    updated.status.get_or_insert_with(Default::default).phase = Some(phase.into());
    let ns = pvc.metadata.namespace.clone().unwrap_or_default();
    match b.pvcs(&ns).replace_status(pvc.metadata.name.as_deref().unwrap_or(""), &PostParams::default(), &updated).await
    {
        Ok(_) => Ok(()),
        Err(e) if is_not_found(&e) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

async fn set_volume_phase(pv: &PersistentVolume, phase: &str, b: &Binder) -> Result<PersistentVolume, Error> {
    let mut updated = pv.clone();
    let status = updated.status.get_or_insert_with(PersistentVolumeStatus::default);
    status.phase = Some(phase.into());
    status.message = None;
    status.reason = None;
    Ok(b.pvs().replace_status(pv.metadata.name.as_deref().unwrap_or(""), &PostParams::default(), &updated).await?)
}

/// Syncs one volume (upstream `syncVolume`).
pub async fn sync_volume(pv: Arc<PersistentVolume>, b: Arc<Binder>) -> Result<Action, Error> {
    let key = crate::runtime::key_of(pv.as_ref());
    let Some(r) = claim_ref(&pv).cloned() else {
        if volume_phase(&pv) != "Available" {
            set_volume_phase(&pv, "Available", &b).await?;
        }
        return b.done(&key, Action::await_change());
    };
    if r.uid.as_deref().unwrap_or("").is_empty() {
        // Pre-bound by the user to a claim not bound yet: available for it.
        if volume_phase(&pv) != "Available" {
            set_volume_phase(&pv, "Available", &b).await?;
        }
        return b.done(&key, Action::await_change());
    }
    let ns = r.namespace.clone().unwrap_or_default();
    let claim = b.pvcs(&ns).get_opt(r.name.as_deref().unwrap_or("")).await?;
    let claim = claim.filter(|c| c.metadata.uid == r.uid);
    let Some(claim) = claim else {
        // The claim is gone: release, then reclaim.
        let pv = if volume_phase(&pv) != "Released" && volume_phase(&pv) != "Failed" {
            set_volume_phase(&pv, "Released", &b).await?
        } else {
            pv.as_ref().clone()
        };
        if volume_phase(&pv) == "Released" {
            reclaim(&pv, &b).await?;
        }
        return b.done(&key, Action::await_change());
    };
    let claim_volume = claim_volume_name(&claim);
    let name = pv.metadata.name.as_deref().unwrap_or("");
    if claim_volume.is_empty() {
        // Binding in progress (or a dangling pre-bind): the claim's sync finishes it.
    } else if claim_volume == name {
        if volume_phase(&pv) != "Bound" {
            set_volume_phase(&pv, "Bound", &b).await?;
        }
    } else {
        // The claim is bound to another volume: unbind this one (upstream
        // `unbindVolume`: drop the claimRef when the binder set it, else only its UID).
        let mut updated = pv.as_ref().clone();
        let spec = updated.spec.get_or_insert_with(Default::default);
        if has_annotation(&pv.metadata, ANN_BOUND_BY_CONTROLLER) {
            spec.claim_ref = None;
            if let Some(a) = updated.metadata.annotations.as_mut() {
                a.remove(ANN_BOUND_BY_CONTROLLER);
            }
        } else if let Some(r) = spec.claim_ref.as_mut() {
            r.uid = None;
        }
        let updated = b.pvs().replace(name, &PostParams::default(), &updated).await?;
        set_volume_phase(&updated, "Available", &b).await?;
    }
    b.done(&key, Action::await_change())
}

/// What reclaiming a released volume does (upstream `reclaimVolume`).
#[derive(Debug, PartialEq, Eq)]
pub enum Reclaim {
    /// Retain: stay Released until an administrator acts.
    Keep,
    /// Delete the PersistentVolume object.
    DeleteObject,
    /// The volume cannot be deleted: phase Failed with a
    /// `VolumeFailedDelete` / `VolumeUnknownReclaimPolicy` warning (reason, message).
    Fail(&'static str, String),
}

/// Decides how a released volume is reclaimed. Delete: volumes the
/// built-in local-path provisioner made are deleted (their directory is
/// the node's to remove); other hostPath volumes follow upstream's hostPath
/// deleter, which only deletes under `/tmp/`; any other volume source has
/// no deleter in rkube. Recycle is deprecated upstream and unsupported here.
pub fn reclaim_decision(pv: &PersistentVolume) -> Reclaim {
    match reclaim_policy(pv) {
        "Retain" => Reclaim::Keep,
        "Delete" => {
            if annotation(&pv.metadata, ANN_DYNAMICALLY_PROVISIONED) == Some(provisioner::PROVISIONER) {
                return Reclaim::DeleteObject;
            }
            let name = pv.metadata.name.as_deref().unwrap_or("");
            match pv.spec.as_ref().and_then(|s| s.host_path.as_ref()) {
                Some(hp) if hp.path.len() > 5 && hp.path.starts_with("/tmp/") => Reclaim::DeleteObject,
                Some(hp) => Reclaim::Fail(
                    "VolumeFailedDelete",
                    format!("host_path deleter only supports /tmp/.+ but received provided {}", hp.path),
                ),
                None => Reclaim::Fail(
                    "VolumeFailedDelete",
                    format!(
                        "error getting deleter volume plugin for volume \"{name}\": no deletable volume plugin matched"
                    ),
                ),
            }
        }
        other => Reclaim::Fail(
            "VolumeUnknownReclaimPolicy",
            format!("Volume has unrecognized PersistentVolumeReclaimPolicy: {other}"),
        ),
    }
}

async fn reclaim(pv: &PersistentVolume, b: &Binder) -> Result<(), Error> {
    let name = pv.metadata.name.as_deref().unwrap_or("");
    match reclaim_decision(pv) {
        Reclaim::Keep => {}
        Reclaim::DeleteObject => match b.pvs().delete(name, &DeleteParams::default()).await {
            Ok(_) => tracing::info!(component = b.ctx.name, volume = name, "deleted the released volume"),
            Err(e) if is_not_found(&e) => {}
            Err(e) => return Err(e.into()),
        },
        Reclaim::Fail(reason, msg) => {
            b.recorder.event(pv, WARNING, reason, msg);
            set_volume_phase(pv, "Failed", b).await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pv(v: serde_json::Value) -> PersistentVolume {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn reclaim_follows_policy_and_volume_source() {
        let retain = pv(json!({"metadata": {"name": "a"}, "spec": {"persistentVolumeReclaimPolicy": "Retain"}}));
        assert_eq!(reclaim_decision(&retain), Reclaim::Keep);
        let local = pv(
            json!({"metadata": {"name": "b", "annotations": {ANN_DYNAMICALLY_PROVISIONED: "rancher.io/local-path"}},
            "spec": {"persistentVolumeReclaimPolicy": "Delete", "hostPath": {"path": "/var/lib/rkube/storage/x"}}}),
        );
        assert_eq!(reclaim_decision(&local), Reclaim::DeleteObject);
        let tmp = pv(json!({"metadata": {"name": "c"},
            "spec": {"persistentVolumeReclaimPolicy": "Delete", "hostPath": {"path": "/tmp/data"}}}));
        assert_eq!(reclaim_decision(&tmp), Reclaim::DeleteObject);
        let data = pv(json!({"metadata": {"name": "d"},
            "spec": {"persistentVolumeReclaimPolicy": "Delete", "hostPath": {"path": "/data"}}}));
        assert_eq!(
            reclaim_decision(&data),
            Reclaim::Fail(
                "VolumeFailedDelete",
                "host_path deleter only supports /tmp/.+ but received provided /data".into()
            )
        );
        let nfs = pv(json!({"metadata": {"name": "e"},
            "spec": {"persistentVolumeReclaimPolicy": "Delete", "nfs": {"server": "s", "path": "/"}}}));
        assert!(matches!(reclaim_decision(&nfs), Reclaim::Fail("VolumeFailedDelete", _)));
    }

    #[test]
    fn delay_binding_only_for_wait_for_first_consumer_classes() {
        let wffc: StorageClass = serde_json::from_value(
            json!({"metadata": {"name": "l"}, "provisioner": "p", "volumeBindingMode": "WaitForFirstConsumer"}),
        )
        .unwrap();
        let imm: StorageClass = serde_json::from_value(json!({"metadata": {"name": "i"}, "provisioner": "p"})).unwrap();
        assert!(is_delay_binding(Some(&wffc)));
        assert!(!is_delay_binding(Some(&imm)));
        assert!(!is_delay_binding(None));
    }
}
