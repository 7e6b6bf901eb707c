//! The pod workers of a node (upstream's pod config source + podWorkers +
//! PLEG): a watch on the pods bound to this node feeds one worker task per
//! pod UID; a relist of the runtime every second (upstream's generic PLEG)
//! wakes the worker of any pod whose containers changed state, and gives a
//! worker to leftovers of pods the API no longer has (force-deleted, or
//! deleted while rkube was down) so that they are cleaned up. Static pods
//! come from the manifests directory instead of the watch
//! ([`super::static_pods`]); their mirror pods in the API are kept in line
//! here and never run themselves.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use kube::runtime::watcher;
use tokio::sync::{mpsc, watch, Notify};

use super::context::NodeContext;
use super::labels;
use super::static_pods;
use super::worker::{Next, PodWorker};

const COMPONENT: &str = "kubelet";
/// Upstream's PLEG relist period.
pub const RELIST_PERIOD: Duration = Duration::from_secs(1);
/// How often the static pod manifests are read (upstream's file check
/// frequency is 20 s; rkube reads them more often, as they are few).
pub const STATIC_PODS_PERIOD: Duration = Duration::from_secs(5);

struct Handle {
    pod: watch::Sender<Option<Arc<Pod>>>,
    kick: Arc<Notify>,
}

/// Runs the pod workers of `ctx.node_name` until `stop` turns true.
/// `probe_changes` receives pod UIDs whose probe results flipped.
pub async fn run(
    ctx: NodeContext,
    mut probe_changes: mpsc::UnboundedReceiver<String>,
    mut stop: watch::Receiver<bool>,
) {
    let api: Api<Pod> = Api::all(ctx.client.clone());
    let cfg = watcher::Config::default().fields(&format!("spec.nodeName={}", ctx.node_name));
    let mut events = watcher(api, cfg).boxed();
    let mut handles: HashMap<String, Handle> = HashMap::new();
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<String>();
    let mut listing: Option<BTreeMap<String, Arc<Pod>>> = None;
    let mut known: Option<BTreeMap<String, Arc<Pod>>> = None;
    let mut fingerprints: HashMap<String, Vec<(String, i32)>> = HashMap::new();
    let mut statics: BTreeMap<String, Pod> = BTreeMap::new();
    let mut mirrors: BTreeMap<String, Arc<Pod>> = BTreeMap::new();
    let mut static_tick = tokio::time::interval(STATIC_PODS_PERIOD);
    let manifests = static_pods::manifests_dir(&ctx.data_dir);
    let _ = std::fs::create_dir_all(&manifests);
    let mut relist = tokio::time::interval(RELIST_PERIOD);
    relist.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tracing::info!(component = COMPONENT, node = %ctx.node_name, "starting the pod workers");

    let spawn = |handles: &mut HashMap<String, Handle>, uid: &str, pod: Option<Arc<Pod>>| {
        if let Some(h) = handles.get(uid) {
            h.pod.send_replace(pod);
            h.kick.notify_one();
            return;
        }
        let (tx, mut rx) = watch::channel(pod);
        let kick = Arc::new(Notify::new());
        let (k, c, u, done) = (kick.clone(), ctx.clone(), uid.to_string(), done_tx.clone());
        tokio::spawn(async move {
            let mut worker = PodWorker::new(c, u.clone());
            loop {
                let pod = rx.borrow_and_update().clone();
                match worker.sync(pod).await {
                    Next::Done => break,
                    Next::After(d) => {
                        tokio::select! {
                            _ = tokio::time::sleep(d) => {}
                            _ = k.notified() => {}
                            r = rx.changed() => if r.is_err() { break },
                        }
                    }
                }
            }
            let _ = done.send(u);
        });
        handles.insert(uid.to_string(), Handle { pod: tx, kick });
    };

    loop {
        tokio::select! {
            _ = async { let _ = stop.wait_for(|s| *s).await; } => break,
            ev = events.next() => match ev {
                Some(Ok(watcher::Event::Apply(p))) | Some(Ok(watcher::Event::InitApply(p))) if static_pods::is_mirror(&p) => {
                    let Some(uid) = p.metadata.uid.clone() else { continue };
                    if p.metadata.deletion_timestamp.is_some() {
                        // A mirror being deleted goes at once; the static pod keeps running
                        // and its mirror comes back on the next manifest read.
                        delete_mirror(&ctx, &p).await;
                    }
                    // The static pod's worker reports against its mirror's status.
                    if let Some(sp) = static_pods::mirror_hash(&p).and_then(|h| statics.get(h)) {
                        let mut with = sp.clone();
                        with.status = p.status.clone();
                        spawn(&mut handles, &with.metadata.uid.clone().unwrap_or_default(), Some(Arc::new(with)));
                    }
                    mirrors.insert(uid, Arc::new(p));
                }
                Some(Ok(watcher::Event::Delete(p))) if static_pods::is_mirror(&p) => {
                    if let Some(uid) = &p.metadata.uid {
                        mirrors.remove(uid);
                    }
                }
                Some(Ok(watcher::Event::Apply(p))) | Some(Ok(watcher::Event::InitApply(p))) => {
                    let Some(uid) = p.metadata.uid.clone() else { continue };
                    let p = Arc::new(p);
                    if let Some(l) = listing.as_mut() {
                        l.insert(uid.clone(), p.clone());
                    }
                    if let Some(k) = known.as_mut() {
                        k.insert(uid.clone(), p.clone());
                    }
                    spawn(&mut handles, &uid, Some(p));
                }
                Some(Ok(watcher::Event::Delete(p))) => {
                    let Some(uid) = p.metadata.uid.clone() else { continue };
                    if let Some(k) = known.as_mut() {
                        k.remove(&uid);
                    }
                    if handles.contains_key(&uid) {
                        spawn(&mut handles, &uid, None);
                    }
                }
                Some(Ok(watcher::Event::Init)) => {
                    listing = Some(BTreeMap::new());
                    mirrors.clear();
                }
                Some(Ok(watcher::Event::InitDone)) => {
                    // Pods that vanished while the watch was down are gone.
                    let seen = listing.take().unwrap_or_default();
                    for uid in handles.keys().cloned().collect::<Vec<_>>() {
                        if !seen.contains_key(&uid) && !statics.contains_key(&uid) {
                            spawn(&mut handles, &uid, None);
                        }
                    }
                    known = Some(seen);
                }
                Some(Err(e)) => {
                    tracing::warn!(component = COMPONENT, "the watch on this node's pods failed, retrying: {e}");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                None => break,
            },
            Some(uid) = probe_changes.recv() => {
                if let Some(h) = handles.get(&uid) {
                    h.kick.notify_one();
                }
            }
            Some(uid) = done_rx.recv() => {
                // Keep the handle if the pod came back under the same UID meanwhile (it cannot).
                if handles.get(&uid).is_some_and(|h| h.pod.borrow().is_none()) {
                    handles.remove(&uid);
                }
                fingerprints.remove(&uid);
            }
            _ = static_tick.tick() => {
                let now = static_pods::read_dir(&manifests, &ctx.node_name, &statics);
                for (uid, pod) in &now {
                    if statics.get(uid) != Some(pod) {
                        tracing::info!(component = COMPONENT, pod = %pod.metadata.name.as_deref().unwrap_or(""), "static pod from {}", manifests.display());
                        let mut with = pod.clone();
                        with.status = mirrors
                            .values()
                            .find(|m| static_pods::mirror_hash(m) == Some(uid.as_str()))
                            .and_then(|m| m.status.clone());
                        spawn(&mut handles, uid, Some(Arc::new(with)));
                    }
                }
                for uid in statics.keys().filter(|u| !now.contains_key(*u)) {
                    spawn(&mut handles, uid, None);
                }
                statics = now;
                // Mirrors: one per static pod (after the watch listed them), none for the rest.
                if known.is_some() {
                    sync_mirrors(&ctx, &statics, &mirrors).await;
                }
            }
            _ = relist.tick() => {
                let Ok(containers) = ctx.cri.list_containers(None).await else { continue };
                let sandboxes = ctx.cri.list_pod_sandbox(None).await.unwrap_or_default();
                let mut now: HashMap<String, Vec<(String, i32)>> = HashMap::new();
                for c in &containers {
                    if let Some(uid) = c.labels.get(labels::POD_UID) {
                        now.entry(uid.clone()).or_default().push((c.id.clone(), c.state));
                    }
                }
                for s in &sandboxes {
                    if let Some(uid) = s.labels.get(labels::POD_UID) {
                        now.entry(uid.clone()).or_default().push((s.id.clone(), s.state));
                    }
                }
                for v in now.values_mut() {
                    v.sort();
                }
                for (uid, fp) in &now {
                    if fingerprints.get(uid) != Some(fp) {
                        match handles.get(uid) {
                            Some(h) => h.kick.notify_one(),
                            // Leftovers of a pod the API does not have: clean them up.
                            None if known.as_ref().is_some_and(|k| !k.contains_key(uid)) && !statics.contains_key(uid) => {
                                tracing::info!(component = COMPONENT, pod_uid = %uid, "cleaning up containers of a pod the API no longer has");
                                spawn(&mut handles, uid, None);
                            }
                            None => {}
                        }
                    }
                }
                fingerprints = now;
            }
        }
    }
    tracing::info!(component = COMPONENT, "pod workers stopped");
}

/// Creates the missing mirror pods and deletes those of static pods that
/// are gone or changed.
async fn sync_mirrors(ctx: &NodeContext, statics: &BTreeMap<String, Pod>, mirrors: &BTreeMap<String, Arc<Pod>>) {
    for m in mirrors.values() {
        let current = static_pods::mirror_hash(m).is_some_and(|h| statics.contains_key(h));
        if !current && m.metadata.deletion_timestamp.is_none() {
            delete_mirror(ctx, m).await;
        }
    }
    let missing: Vec<&Pod> = statics
        .iter()
        .filter(|(uid, _)| !mirrors.values().any(|m| static_pods::mirror_hash(m) == Some(uid.as_str())))
        .map(|(_, p)| p)
        .collect();
    if missing.is_empty() {
        return;
    }
    let node_uid = match Api::<k8s_openapi::api::core::v1::Node>::all(ctx.client.clone()).get(&ctx.node_name).await {
        Ok(n) => n.metadata.uid.unwrap_or_default(),
        Err(e) => return tracing::warn!(component = COMPONENT, "cannot read this node for mirror pods: {e}"),
    };
    for pod in missing {
        let mirror = static_pods::mirror_of(pod, &ctx.node_name, &node_uid);
        let ns = mirror.metadata.namespace.clone().unwrap_or_default();
        match Api::<Pod>::namespaced(ctx.client.clone(), &ns).create(&PostParams::default(), &mirror).await {
            Ok(_) => {}
            // The old mirror (being deleted) still holds the name: the next round creates it.
            Err(e) if rkube_client::errors::is_conflict(&e) => {}
            Err(e) => tracing::warn!(
                component = COMPONENT,
                pod = %mirror.metadata.name.as_deref().unwrap_or(""),
                "cannot create the mirror pod of a static pod: {e}"
            ),
        }
    }
}

async fn delete_mirror(ctx: &NodeContext, m: &Pod) {
    let ns = m.metadata.namespace.clone().unwrap_or_default();
    let dp = DeleteParams {
        grace_period_seconds: Some(0),
        preconditions: Some(Preconditions { uid: m.metadata.uid.clone(), resource_version: None }),
        ..Default::default()
    };
    let name = m.metadata.name.clone().unwrap_or_default();
    if let Err(e) = Api::<Pod>::namespaced(ctx.client.clone(), &ns).delete(&name, &dp).await {
        if !rkube_client::errors::is_not_found(&e) && !rkube_client::errors::is_conflict(&e) {
            tracing::warn!(component = COMPONENT, pod = %name, "cannot delete a mirror pod: {e}");
        }
    }
}
