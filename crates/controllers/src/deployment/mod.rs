//! The Deployment controller (upstream `pkg/controller/deployment`):
//! rolls a Deployment's pod template out through ReplicaSets it owns.
//!
//! Each sync (`syncDeployment`): claim the ReplicaSets the selector
//! matches (adopt orphans, release those it no longer selects); only
//! status for a Deployment being deleted; the paused/resumed Progressing
//! condition; a paused Deployment or a change of `spec.replicas` only
//! scales ([`scale`]); otherwise the strategy runs — [`rolling`] or
//! [`recreate`] — and the status ([`status`], [`progress`]) is written.
//! The pure decisions live in the submodules; this file is the API
//! plumbing: reads through the manager's informers and lists, writes
//! (and gets) as the `deployment-controller` ServiceAccount, and `ScalingReplicaSet` events worded as upstream
//! ("Scaled up replica set web-abc from 0 to 3").
//!
//! Differences from upstream: the `pod-template-hash` value (see
//! [`sync`]); the revision annotation on the Deployment is written with
//! an update of the Deployment (upstream writes it with the status
//! update, whose strategy keeps metadata changes for Deployments, while
//! rkube's status subresource keeps only `status`); Recreate polls every
//! second while old pods terminate instead of waiting for pod deletion
//! events; the deprecated `rollbackTo` (extensions/v1beta1) is not
//! supported — `kubectl rollout undo` rolls back through the template.

pub mod progress;
pub mod recreate;
pub mod revision;
pub mod rolling;
pub mod scale;
pub mod status;
pub mod sync;
pub mod util;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use rkube_apimachinery::selector::labels::LabelSelector as Selector;

use crate::events::{NORMAL, WARNING};
use crate::runtime::{self, is_conflict, is_namespace_gone, is_not_found, key_of, Ctx, Error, Stop};

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "deployment-controller";
/// The older name `--controllers` also accepts.
pub const ALIAS: &str = "deployment";
/// The kube-system ServiceAccount it runs as.
pub const SERVICE_ACCOUNT: &str = "deployment-controller";

/// Runs until `stop`: Deployments are the keys; a change to a ReplicaSet
/// requeues its controlling Deployment, or — for an orphan — every
/// Deployment in its namespace whose selector matches its labels (so it
/// can be adopted), as upstream's `getDeploymentsForReplicaSet`.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    let client = ctx.reader.clone();
    let controller = Controller::new(Api::<Deployment>::all(client.clone()), watcher::Config::default());
    let deployments = controller.store();
    let controller = controller
        .owns(Api::<ReplicaSet>::all(client.clone()), watcher::Config::default())
        .watches(Api::<ReplicaSet>::all(client), watcher::Config::default(), move |rs| {
            orphan_claimants(&deployments.state(), &rs)
        })
        .graceful_shutdown_on(runtime::stopped(stop));
    runtime::drive(NAME, controller.run(reconcile, runtime::error_policy, ctx)).await;
}

/// The Deployments that may adopt `rs`: none unless it is an orphan
/// (no controller ownerReference) and not being deleted; else those of its
/// namespace whose selector matches its labels.
fn orphan_claimants(deployments: &[Arc<Deployment>], rs: &ReplicaSet) -> Vec<ObjectRef<Deployment>> {
    if util::controller_uid(&rs.metadata).is_some() || rs.metadata.deletion_timestamp.is_some() {
        return Vec::new();
    }
    let labels = rs.metadata.labels.clone().unwrap_or_default();
    deployments
        .iter()
        .filter(|d| d.metadata.namespace == rs.metadata.namespace)
        .filter(|d| {
            let sel = d.spec.as_ref().map(|s| serde_json::to_value(&s.selector).unwrap_or_default());
            match sel.map(|v| Selector::from_label_selector_json(&v)) {
                Some(Ok(sel)) => !sel.is_empty() && sel.matches(&labels),
                _ => false,
            }
        })
        .map(|d| ObjectRef::from_obj(d.as_ref()))
        .collect()
}

async fn reconcile(d: Arc<Deployment>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let key = key_of(d.as_ref());
    let ns = d.metadata.namespace.clone().unwrap_or_default();
    // The store may lag our own writes: work on the current object (a get
    // as the controller itself: the manager's identity may only list and watch).
    let d = match Api::<Deployment>::namespaced(ctx.client.clone(), &ns)
        .get(d.metadata.name.as_deref().unwrap_or(""))
        .await
    {
        Ok(d) => d,
        Err(e) if is_not_found(&e) => return ctx.done(&key, Action::await_change()),
        Err(e) => return Err(e.into()),
    };
    let mut run = Run {
        rs_api: Api::namespaced(ctx.client.clone(), &ns),
        d_api: Api::namespaced(ctx.client.clone(), &ns),
        ctx: ctx.clone(),
        d,
        ns,
    };
    let action = run.sync_deployment().await?;
    ctx.done(&key, action)
}

/// One sync of one Deployment: the object as it is written back.
struct Run {
    ctx: Arc<Ctx>,
    d: Deployment,
    ns: String,
    rs_api: Api<ReplicaSet>,
    d_api: Api<Deployment>,
}

fn other(e: impl std::fmt::Display) -> Error {
    Error::Other(e.to_string())
}

impl Run {
    fn replicas(&self) -> i32 {
        util::d_replicas(&self.d)
    }

    fn selector_json(&self) -> serde_json::Value {
        self.d.spec.as_ref().map(|s| serde_json::to_value(&s.selector).unwrap_or_default()).unwrap_or_default()
    }

    /// `syncDeployment`.
    async fn sync_deployment(&mut self) -> Result<Action, Error> {
        let selector = Selector::from_label_selector_json(&self.selector_json()).map_err(other)?;
        if selector.is_empty() {
            let msg = "This deployment is selecting all pods. A non-empty selector is required.";
            self.ctx.recorder.event(&self.d, WARNING, "SelectingAll", msg);
            let mut s = status::canonical(self.d.status.as_ref());
            if s.observed_generation.unwrap_or(0) < self.d.metadata.generation.unwrap_or(0) {
                s.observed_generation = self.d.metadata.generation;
                self.write_status(s).await?;
            }
            return Ok(Action::await_change());
        }
        let rss = self.claim_replica_sets(&selector).await?;
        if self.d.metadata.deletion_timestamp.is_some() {
            let (new_rs, old) = self.get_all_and_sync_revision(&rss, false).await?;
            self.sync_status(&old, new_rs.as_ref()).await?;
            return Ok(Action::await_change());
        }
        let mut d = self.d.clone();
        if progress::check_paused(&mut d) {
            self.write_status(d.status.unwrap_or_default()).await?;
        }
        if self.d.spec.as_ref().and_then(|s| s.paused).unwrap_or(false) {
            return self.sync_scale(&rss).await;
        }
        let (new_rs, old) = self.get_all_and_sync_revision(&rss, false).await?;
        let mut all = old.clone();
        all.extend(new_rs.clone());
        if scale::is_scaling_event(&self.d, &all) {
            return self.sync_scale(&rss).await;
        }
        if util::is_rolling(&self.d) {
            self.rollout_rolling(&rss).await
        } else {
            self.rollout_recreate(&rss, &selector).await
        }
    }

    /// The sets of this Deployment (`getReplicaSetsForDeployment` with
    /// `ClaimReplicaSets`): those it controls and still selects, plus
    /// orphans it selects, adopted; those it controls but no longer
    /// selects are released.
    async fn claim_replica_sets(&mut self, selector: &Selector) -> Result<Vec<ReplicaSet>, Error> {
        let list =
            Api::<ReplicaSet>::namespaced(self.ctx.reader.clone(), &self.ns).list(&ListParams::default()).await?;
        let uid = self.d.metadata.uid.clone().unwrap_or_default();
        let deleting = self.d.metadata.deletion_timestamp.is_some();
        let mut out = Vec::new();
        for rs in list.items {
            let labels = rs.metadata.labels.clone().unwrap_or_default();
            let matches = selector.matches(&labels);
            match util::controller_uid(&rs.metadata) {
                Some(owner) if owner == uid => {
                    if matches {
                        out.push(rs);
                    } else if !deleting {
                        self.release(rs).await?;
                    }
                }
                Some(_) => {}
                None if matches && !deleting && rs.metadata.deletion_timestamp.is_none() => {
                    if let Some(rs) = self.adopt(rs).await? {
                        out.push(rs);
                    }
                }
                None => {}
            }
        }
        Ok(out)
    }

    async fn adopt(&self, mut rs: ReplicaSet) -> Result<Option<ReplicaSet>, Error> {
        // Upstream's canAdopt: the Deployment must still be this one and not being deleted.
        let fresh = self.d_api.get(self.d.metadata.name.as_deref().unwrap_or("")).await?;
        if fresh.metadata.uid != self.d.metadata.uid || fresh.metadata.deletion_timestamp.is_some() {
            return Ok(None);
        }
        rs.metadata.owner_references.get_or_insert_with(Vec::new).push(sync::controller_ref(&self.d));
        match self.rs_api.replace(rs.metadata.name.as_deref().unwrap_or(""), &PostParams::default(), &rs).await {
            Ok(rs) => Ok(Some(rs)),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    async fn release(&self, mut rs: ReplicaSet) -> Result<(), Error> {
        let uid = self.d.metadata.uid.clone();
        if let Some(refs) = rs.metadata.owner_references.as_mut() {
            refs.retain(|o| Some(&o.uid) != uid.as_ref());
        }
        match self.rs_api.replace(rs.metadata.name.as_deref().unwrap_or(""), &PostParams::default(), &rs).await {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// `getAllReplicaSetsAndSyncRevision`: the new set (created when
    /// `create`) and the old ones, revisions synced.
    async fn get_all_and_sync_revision(
        &mut self,
        rss: &[ReplicaSet],
        create: bool,
    ) -> Result<(Option<ReplicaSet>, Vec<ReplicaSet>), Error> {
        let old = sync::find_old(&self.d, rss);
        let new_rs = self.get_new_rs(rss, &old, create).await?;
        Ok((new_rs, old))
    }

    /// `getNewReplicaSet`.
    async fn get_new_rs(
        &mut self,
        rss: &[ReplicaSet],
        old: &[ReplicaSet],
        create: bool,
    ) -> Result<Option<ReplicaSet>, Error> {
        let new_revision = util::max_revision(old) + 1;
        let has_deadline = util::has_progress_deadline(&self.d);
        if let Some(existing) = sync::find_new(&self.d, rss) {
            let mut copy = existing.clone();
            let annotations = revision::set_new_rs_annotations(&self.d, &mut copy, new_revision, true);
            let min_ready = self.d.spec.as_ref().and_then(|s| s.min_ready_seconds);
            let spec = copy.spec.get_or_insert_with(Default::default);
            if annotations || spec.min_ready_seconds.unwrap_or(0) != min_ready.unwrap_or(0) {
                spec.min_ready_seconds = min_ready;
                let name = copy.metadata.name.clone().unwrap_or_default();
                return Ok(Some(self.rs_api.replace(&name, &PostParams::default(), &copy).await?));
            }
            let rev =
                copy.metadata.annotations.as_ref().and_then(|a| a.get(util::REVISION)).cloned().unwrap_or_default();
            let mut d = self.d.clone();
            let rev_changed = revision::set_deployment_revision(&mut d, &rev);
            let mut s = status::canonical(d.status.as_ref());
            let mut status_changed = false;
            if has_deadline && status::get_condition(&s, status::PROGRESSING).is_none() {
                let msg = format!("Found new replica set {:?}", copy.metadata.name.as_deref().unwrap_or(""));
                status::set_condition(
                    &mut s,
                    status::condition(status::PROGRESSING, "True", progress::FOUND_NEW_RS, msg),
                );
                status_changed = true;
            }
            if rev_changed {
                self.write_annotations(d).await?;
            }
            if status_changed {
                self.write_status(s).await?;
            }
            return Ok(Some(copy));
        }
        if !create {
            return Ok(None);
        }
        let mut new_rs = sync::new_replica_set(&self.d);
        let mut all = old.to_vec();
        all.push(new_rs.clone());
        let replicas = rolling::new_rs_new_replicas(&self.d, &all, &new_rs);
        new_rs.spec.get_or_insert_with(Default::default).replicas = Some(replicas);
        revision::set_new_rs_annotations(&self.d, &mut new_rs, new_revision, false);
        let name = new_rs.metadata.name.clone().unwrap_or_default();
        let mut already_exists = false;
        let created = match self.rs_api.create(&PostParams::default(), &new_rs).await {
            Ok(rs) => rs,
            Err(e) if is_conflict(&e) => {
                let rs = self.rs_api.get(&name).await?;
                let ours = util::controller_uid(&rs.metadata) == self.d.metadata.uid.as_deref();
                let same = match (rs.spec.as_ref().and_then(|s| s.template.as_ref()), self.d.spec.as_ref()) {
                    (Some(t), Some(s)) => util::equal_ignore_hash(t, &s.template),
                    _ => false,
                };
                if ours && same {
                    already_exists = true;
                    rs
                } else {
                    // A hash collision: the next name comes from a higher collisionCount.
                    let mut s = status::canonical(self.d.status.as_ref());
                    s.collision_count = Some(s.collision_count.unwrap_or(0) + 1);
                    tracing::info!(component = NAME, deployment = %key_of(&self.d), collision_count = ?s.collision_count, "found a hash collision");
                    self.write_status(s).await?;
                    return Err(e.into());
                }
            }
            Err(e) if is_namespace_gone(&e) => return Err(e.into()),
            Err(e) => {
                let msg = format!("Failed to create new replica set {name:?}: {e}");
                if has_deadline {
                    let mut s = status::canonical(self.d.status.as_ref());
                    let c = status::condition(status::PROGRESSING, "False", progress::FAILED_RS_CREATE, msg.clone());
                    status::set_condition(&mut s, c);
                    let _ = self.write_status(s).await;
                }
                self.ctx.recorder.event(&self.d, WARNING, progress::FAILED_RS_CREATE, msg);
                return Err(e.into());
            }
        };
        if !already_exists && replicas > 0 {
            let msg = format!("Scaled up replica set {name} from 0 to {replicas}");
            self.ctx.recorder.event(&self.d, NORMAL, "ScalingReplicaSet", msg);
        }
        let mut d = self.d.clone();
        if revision::set_deployment_revision(&mut d, &new_revision.to_string()) {
            self.write_annotations(d).await?;
        }
        if !already_exists && has_deadline {
            let mut s = status::canonical(self.d.status.as_ref());
            let msg = format!("Created new replica set {name:?}");
            status::set_condition(
                &mut s,
                status::condition(status::PROGRESSING, "True", progress::NEW_RS_CREATED, msg),
            );
            self.write_status(s).await?;
        }
        Ok(Some(created))
    }

    /// Writes the Deployment's metadata (its revision annotation) and
    /// keeps the status this sync computed.
    async fn write_annotations(&mut self, d: Deployment) -> Result<(), Error> {
        let name = d.metadata.name.clone().unwrap_or_default();
        let keep = self.d.status.clone();
        let mut written = self.d_api.replace(&name, &PostParams::default(), &d).await?;
        written.status = keep;
        self.d = written;
        Ok(())
    }

    /// Writes `s` as the Deployment's status.
    async fn write_status(&mut self, s: DeploymentStatus) -> Result<(), Error> {
        let mut d = self.d.clone();
        d.status = Some(s);
        let name = d.metadata.name.clone().unwrap_or_default();
        self.d = self.d_api.replace_status(&name, &PostParams::default(), &d).await?;
        Ok(())
    }

    /// `scaleReplicaSet`: sets the size and the replica annotations when
    /// either differs; a size change is a `ScalingReplicaSet` event.
    async fn scale_rs(&self, rs: &ReplicaSet, size: i32) -> Result<(bool, ReplicaSet), Error> {
        let old = util::rs_replicas(rs);
        let desired = self.replicas();
        let max = desired + util::max_surge(&self.d);
        let size_changed = old != size;
        if !size_changed && !scale::replicas_annotations_need_update(rs, desired, max) {
            return Ok((false, rs.clone()));
        }
        let mut copy = rs.clone();
        copy.spec.get_or_insert_with(Default::default).replicas = Some(size);
        scale::set_replicas_annotations(&mut copy, desired, max);
        let name = copy.metadata.name.clone().unwrap_or_default();
        let written = self.rs_api.replace(&name, &PostParams::default(), &copy).await?;
        if size_changed {
            let op = if old < size { "up" } else { "down" };
            let msg = format!("Scaled {op} replica set {name} from {old} to {size}");
            self.ctx.recorder.event(&self.d, NORMAL, "ScalingReplicaSet", msg);
        }
        Ok((size_changed, written))
    }

    /// `scaleReplicaSetAndRecordEvent`: only when the size changes.
    async fn scale_and_record(&self, rs: &ReplicaSet, size: i32) -> Result<(bool, ReplicaSet), Error> {
        if util::rs_replicas(rs) == size {
            return Ok((false, rs.clone()));
        }
        self.scale_rs(rs, size).await
    }

    /// `sync`: scaling only (a paused Deployment or a change of `replicas`).
    async fn sync_scale(&mut self, rss: &[ReplicaSet]) -> Result<Action, Error> {
        let (mut new_rs, mut old) = self.get_all_and_sync_revision(rss, false).await?;
        for step in scale::plan(&self.d, new_rs.as_ref(), &old) {
            let (_, written) = match step.always {
                true => self.scale_rs(&step.rs, step.replicas).await?,
                false => self.scale_and_record(&step.rs, step.replicas).await?,
            };
            replace_in(&mut new_rs, &mut old, written);
        }
        if self.d.spec.as_ref().and_then(|s| s.paused).unwrap_or(false) {
            self.cleanup(&old).await?;
        }
        self.sync_status(&old, new_rs.as_ref()).await?;
        Ok(Action::await_change())
    }

    /// `rolloutRolling`.
    async fn rollout_rolling(&mut self, rss: &[ReplicaSet]) -> Result<Action, Error> {
        let (new_rs, old) = self.get_all_and_sync_revision(rss, true).await?;
        let Some(mut new_rs) = new_rs else { return Err(other("no new replica set")) };
        let mut all = old.clone();
        all.push(new_rs.clone());
        if let Some(size) = rolling::reconcile_new(&self.d, &all, &new_rs) {
            let (scaled, written) = self.scale_and_record(&new_rs, size).await?;
            new_rs = written;
            if scaled {
                return self.sync_rollout_status(&old, Some(&new_rs)).await;
            }
        }
        let mut active = util::active(&old);
        let mut scaled_down = false;
        for (i, size) in rolling::reconcile_old(&self.d, &active, &new_rs) {
            let (scaled, written) = self.scale_and_record(&active[i], size).await?;
            scaled_down |= scaled;
            active[i] = written;
        }
        let mut old = old;
        for rs in active {
            replace_in(&mut None, &mut old, rs);
        }
        if scaled_down {
            return self.sync_rollout_status(&old, Some(&new_rs)).await;
        }
        if progress::complete(&self.d, &status::canonical(self.d.status.as_ref())) {
            self.cleanup(&old).await?;
        }
        self.sync_rollout_status(&old, Some(&new_rs)).await
    }

    /// `rolloutRecreate`.
    async fn rollout_recreate(&mut self, rss: &[ReplicaSet], selector: &Selector) -> Result<Action, Error> {
        let (mut new_rs, mut old) = self.get_all_and_sync_revision(rss, false).await?;
        let mut scaled_down = false;
        for rs in util::active(&old) {
            let (scaled, written) = self.scale_and_record(&rs, 0).await?;
            scaled_down |= scaled;
            replace_in(&mut None, &mut old, written);
        }
        if scaled_down {
            return self.sync_rollout_status(&old, new_rs.as_ref()).await;
        }
        let pods = Api::<Pod>::namespaced(self.ctx.reader.clone(), &self.ns)
            .list(&ListParams::default().labels(&selector.to_string()))
            .await?
            .items;
        if recreate::old_pods_running(new_rs.as_ref(), &old, rss, &pods) {
            self.sync_rollout_status(&old, new_rs.as_ref()).await?;
            // Upstream waits for the pod deletion events; rkube looks again shortly.
            return Ok(Action::requeue(Duration::from_secs(1)));
        }
        if new_rs.is_none() {
            (new_rs, old) = self.get_all_and_sync_revision(rss, true).await?;
        }
        if let Some(rs) = new_rs.clone() {
            let (_, written) = self.scale_and_record(&rs, self.replicas()).await?;
            new_rs = Some(written);
        }
        if progress::complete(&self.d, &status::canonical(self.d.status.as_ref())) {
            self.cleanup(&old).await?;
        }
        self.sync_rollout_status(&old, new_rs.as_ref()).await
    }

    /// `cleanupDeployment`: deletes old sets beyond `revisionHistoryLimit`.
    async fn cleanup(&self, old: &[ReplicaSet]) -> Result<(), Error> {
        for rs in revision::to_clean_up(&self.d, old) {
            let name = rs.metadata.name.clone().unwrap_or_default();
            tracing::debug!(component = NAME, deployment = %key_of(&self.d), replicaset = %name, "deleting old replica set");
            match self.rs_api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// `syncDeploymentStatus`: the counters and Available, when they changed.
    async fn sync_status(&mut self, old: &[ReplicaSet], new_rs: Option<&ReplicaSet>) -> Result<(), Error> {
        let mut all = old.to_vec();
        all.extend(new_rs.cloned());
        let s = status::calculate(&all, new_rs, &self.d);
        if s != status::canonical(self.d.status.as_ref()) {
            self.write_status(s).await?;
        }
        Ok(())
    }

    /// `syncRolloutStatus`: the status with Progressing; requeues a
    /// rollout without progress at its deadline.
    async fn sync_rollout_status(&mut self, old: &[ReplicaSet], new_rs: Option<&ReplicaSet>) -> Result<Action, Error> {
        let mut all = old.to_vec();
        all.extend(new_rs.cloned());
        let now = jiff::Timestamp::now();
        let s = progress::rollout_status(&all, new_rs, &self.d, now);
        if s == status::canonical(self.d.status.as_ref()) {
            return Ok(match progress::requeue_after(&self.d, &s, now) {
                Some(after) => Action::requeue(after),
                None => Action::await_change(),
            });
        }
        self.write_status(s).await?;
        Ok(Action::await_change())
    }
}

/// Puts a written set back in place of its listed copy.
fn replace_in(new_rs: &mut Option<ReplicaSet>, old: &mut [ReplicaSet], rs: ReplicaSet) {
    if let Some(n) = new_rs.as_mut().filter(|n| n.metadata.uid == rs.metadata.uid) {
        *n = rs;
        return;
    }
    if let Some(o) = old.iter_mut().find(|o| o.metadata.uid == rs.metadata.uid) {
        *o = rs;
    }
}
