//! The PersistentVolume binder (upstream
//! `pkg/controller/volume/persistentvolume`) with rkube's built-in
//! local-path provisioner (k3s's rancher local-path-provisioner).
//!
//! - [`index`]: the pure matching (smallest fitting volume of the class,
//!   access modes, volume mode, selector, pre-binding) and binding shapes.
//! - [`binder`]: claim and volume syncs — bind, wait for the first consumer
//!   (`WaitForFirstConsumer` classes until the scheduler sets
//!   `volume.kubernetes.io/selected-node`), hand claims to their
//!   provisioner (storage-provisioner annotations, `ExternalProvisioning`),
//!   phases Pending/Bound/Lost and Available/Bound/Released/Failed, and
//!   reclaim (Retain/Delete).
//! - [`provisioner`]: the `local-path` StorageClass and its hostPath volumes.
//!
//! Claims and volumes are resynced every [`binder::SYNC_PERIOD`] as
//! upstream's `--pvclaimbinder-sync-period`. Not modelled: in-tree volume
//! plugins (no in-tree provisioning), Recycle, CSI migration, volume
//! attributes classes.

pub mod binder;
pub mod index;
pub mod provisioner;

use std::sync::Arc;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::api::Api;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;

use crate::runtime::{self, Ctx, Error, Stop};

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "persistentvolume-binder-controller";
/// The older name `--controllers` also accepts.
pub const ALIAS: &str = "persistentvolume-binder";
/// The kube-system ServiceAccount it runs as.
pub const SERVICE_ACCOUNT: &str = "persistent-volume-binder";

/// Whether `--controllers` runs the binder (the server then installs the
/// `local-path` StorageClass, as k3s's local-storage addon).
pub fn enabled(selection: &crate::ControllerSelection) -> bool {
    crate::manager::CONTROLLERS.iter().any(|c| c.name == NAME && selection.is_enabled(c))
}

/// Runs the claim sync, the volume sync and the local-path provisioner until `stop`.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    let b = binder::Binder::new(ctx.clone());
    let reader = ctx.reader.clone();
    let claims = Controller::new(Api::<PersistentVolumeClaim>::all(reader.clone()), watcher::Config::default())
        .watches(Api::<PersistentVolume>::all(reader.clone()), watcher::Config::default(), |pv| {
            let r = pv.spec.and_then(|s| s.claim_ref)?;
            Some(ObjectRef::<PersistentVolumeClaim>::new(r.name.as_deref()?).within(r.namespace.as_deref()?))
        })
        .graceful_shutdown_on(runtime::stopped(stop.clone()));
    let volumes = Controller::new(Api::<PersistentVolume>::all(reader.clone()), watcher::Config::default())
        .watches(Api::<PersistentVolumeClaim>::all(reader.clone()), watcher::Config::default(), |pvc| {
            let name = pvc.spec.and_then(|s| s.volume_name).filter(|n| !n.is_empty())?;
            Some(ObjectRef::<PersistentVolume>::new(&name))
        })
        .graceful_shutdown_on(runtime::stopped(stop.clone()));
    let provisioning = Controller::new(Api::<PersistentVolumeClaim>::all(reader), watcher::Config::default())
        .graceful_shutdown_on(runtime::stopped(stop));
    tokio::join!(
        runtime::drive(NAME, claims.run(binder::sync_claim, runtime::error_policy, b.clone())),
        runtime::drive(NAME, volumes.run(sync_volume_periodic, runtime::error_policy, b.clone())),
        runtime::drive(NAME, provisioning.run(provisioner::sync_claim, runtime::error_policy, b)),
    );
}

/// Volumes are resynced periodically as upstream: a claim deleted before
/// its binding completed names no volume, so no claim event reaches it.
async fn sync_volume_periodic(pv: Arc<PersistentVolume>, b: Arc<binder::Binder>) -> Result<Action, Error> {
    binder::sync_volume(pv, b).await?;
    Ok(Action::requeue(binder::SYNC_PERIOD))
}
