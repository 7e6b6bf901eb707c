//! rkube's kube-scheduler: an API client (DESIGN.md: never storage) that
//! watches pods without a node, runs them through the scheduling
//! framework's extension points with upstream's default plugins, and
//! records its choice through `pods/binding`.
//!
//! - [`framework`]: the plugin interface (extension points, `Status`,
//!   `CycleState`), the per-cycle view of the cluster (`NodeInfo`,
//!   `Snapshot`) and the runtime running a profile's plugins, as
//!   upstream's `pkg/scheduler/framework`;
//! - [`plugins`]: one module per default plugin, with upstream names,
//!   semantics and weights;
//! - [`algorithm`]: the pure placement decision (filter, score, select);
//! - [`cache`], [`queue`]: the scheduler's cluster view and pending pods;
//! - [`schedule_one`]: the scheduling and binding cycles; [`binder`],
//!   [`events`]: what they write back;
//! - [`config`]: KubeSchedulerConfiguration; [`run`]: the component.

#![warn(missing_docs)]

pub mod algorithm;
pub mod binder;
pub mod cache;
pub mod config;
pub mod events;
pub mod framework;
pub mod informers;
pub mod plugins;
pub mod queue;
pub mod schedule_one;

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{
    Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, ReplicationController, Service,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use kube::api::Api;
use kube::runtime::reflector::ObjectRef;

use framework::runtime::Framework;
use framework::{EventResource, Handle, Listers};
use informers::{spawn_store, spawn_watch, NodeHandler, PodHandler, StoreLister};

/// The component name in logs and the leader-election lease.
pub const COMPONENT: &str = "kube-scheduler";

/// How [`run`] starts.
#[derive(Clone)]
pub struct RunConfig {
    /// A client authenticated as `system:kube-scheduler`.
    pub client: kube::Client,
    /// The configuration (`--scheduler-config`, or defaults).
    pub config: config::Configuration,
    /// The leader-election identity (`<hostname>_<uuid>`).
    pub identity: String,
    /// Whether to elect a leader through the `kube-system/kube-scheduler` Lease.
    pub leader_elect: bool,
    /// Seed of the tie-breaking generator.
    pub seed: u64,
}

/// Builds every profile of `config` with `handle`. Err: a profile's
/// plugin configuration is invalid.
pub fn build_profiles(
    config: &config::Configuration,
    handle: &Handle,
) -> Result<HashMap<String, Arc<Framework>>, String> {
    let registry = plugins::registry();
    let mut out = HashMap::new();
    for p in &config.profiles {
        let f = Framework::new(p, config, &registry, handle.clone())
            .map_err(|e| format!("profile \"{}\": {e}", p.scheduler_name))?;
        out.insert(p.scheduler_name.clone(), Arc::new(f));
    }
    Ok(out)
}

/// Runs the scheduler until `shutdown` resolves: elects a leader, starts
/// the informers, waits for pods and nodes to be listed, then schedules.
/// Losing the lease stops scheduling and drops the caches, then the
/// scheduler campaigns again (upstream's process exits and is restarted;
/// inside one rkube server the scheduler restarts itself).
/// Err: the configuration is invalid.
pub async fn run(cfg: RunConfig, shutdown: impl Future<Output = ()>) -> Result<(), String> {
    let client = cfg.client.clone();
    let elector = cfg.leader_elect.then(|| {
        rkube_client::leader::LeaderElector::new(client.clone(), COMPONENT, cfg.identity.clone(), Default::default())
    });
    tokio::pin!(shutdown);
    loop {
        if let Some(e) = &elector {
            tokio::select! {
                _ = e.acquire() => {}
                _ = &mut shutdown => return Ok(()),
            }
        }
        let ended = run_leader(cfg.clone(), &mut shutdown, elector.as_ref()).await;
        if let Some(e) = &elector {
            e.release().await;
        }
        match ended? {
            Ended::LeadershipLost => {
                tracing::warn!(component = COMPONENT, "leaderelection lost; campaigning again");
            }
            Ended::Stopped => return Ok(()),
        }
    }
}

/// Why a leader term ended.
enum Ended {
    /// Shut down, or the queue closed.
    Stopped,
    /// The lease was lost.
    LeadershipLost,
}

async fn run_leader(
    cfg: RunConfig,
    shutdown: &mut std::pin::Pin<&mut impl Future<Output = ()>>,
    elector: Option<&rkube_client::leader::LeaderElector>,
) -> Result<Ended, String> {
    let client = cfg.client.clone();
    let mut tasks = Vec::new();
    // The queue needs the profiles and the profiles need the listers, whose
    // event handlers need the queue: the stores start with a late-bound queue.
    let q_cell: Arc<std::sync::OnceLock<Arc<queue::SchedulingQueue>>> = Arc::new(std::sync::OnceLock::new());
    macro_rules! store {
        ($k:ty, $res:expr) => {{
            let res: Option<EventResource> = $res;
            let (store, task) = spawn_store_deferred::<$k>(client.clone(), res, q_cell.clone());
            tasks.push(task);
            store
        }};
    }
    let listers = Listers {
        pvcs: Arc::new(store!(PersistentVolumeClaim, Some(EventResource::PersistentVolumeClaim))),
        pvs: Arc::new(store!(PersistentVolume, Some(EventResource::PersistentVolume))),
        storage_classes: Arc::new(store!(StorageClass, Some(EventResource::StorageClass))),
        csi_nodes: Arc::new(store!(CSINode, Some(EventResource::CSINode))),
        pdbs: Arc::new(store!(PodDisruptionBudget, None)),
        namespaces: Arc::new(store!(Namespace, Some(EventResource::Namespace))),
        services: Arc::new(store!(Service, None)),
        replication_controllers: Arc::new(store!(ReplicationController, None)),
        replica_sets: Arc::new(store!(ReplicaSet, None)),
        stateful_sets: Arc::new(store!(StatefulSet, None)),
    };
    let handle = Handle { listers, client: Some(client.clone()) };
    let profiles = build_profiles(&cfg.config, &handle)?;
    let queue = Arc::new(queue::SchedulingQueue::new(
        profiles.clone(),
        Duration::from_secs(cfg.config.pod_initial_backoff_seconds.max(1) as u64),
        Duration::from_secs(cfg.config.pod_max_backoff_seconds.max(1) as u64),
    ));
    let _ = q_cell.set(queue.clone());
    for f in profiles.values() {
        f.set_nominator(queue.nominator.clone());
    }
    let cache = Arc::new(Mutex::new(cache::Cache::new()));
    let (pod_store, pod_writer) = kube::runtime::reflector::store::<Pod>();
    let pods_synced = Arc::new(AtomicBool::new(false));
    let nodes_synced = Arc::new(AtomicBool::new(false));
    {
        let mut handler = PodHandler::new(cache.clone(), queue.clone(), profiles.keys().cloned().collect());
        let mut writer = pod_writer;
        tasks.push(spawn_watch(
            Api::<Pod>::all(client.clone()),
            move |ev| {
                writer.apply_watcher_event(&ev);
                handler.handle(ev)
            },
            pods_synced.clone(),
        ));
        let mut handler = NodeHandler::new(cache.clone(), queue.clone());
        tasks.push(spawn_watch(Api::<Node>::all(client.clone()), move |ev| handler.handle(ev), nodes_synced.clone()));
    }
    let lookup_store = pod_store.clone();
    let sched = Arc::new(schedule_one::Scheduler {
        profiles,
        cache,
        queue: queue.clone(),
        cursor: Mutex::new(algorithm::Cursor::new(cfg.seed)),
        client: Some(client.clone()),
        recorder: events::Recorder::new(Some(client.clone()), &events::hostname()),
        lookup: Some(Arc::new(move |ns: &str, name: &str| lookup_store.get(&ObjectRef::new(name).within(ns)))),
    });
    // Wait for the caches (upstream WaitForCacheSync).
    while !(pods_synced.load(Ordering::SeqCst) && nodes_synced.load(Ordering::SeqCst)) {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
            _ = &mut *shutdown => { abort(tasks); return Ok(Ended::Stopped); }
        }
    }
    tracing::info!(component = COMPONENT, profiles = ?sched.profiles.keys().collect::<Vec<_>>(), "scheduler started");
    {
        let q = queue.clone();
        tasks.push(tokio::spawn(async move {
            let mut tick = 0u64;
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                q.flush_backoff_completed();
                tick += 1;
                if tick.is_multiple_of(30) {
                    q.flush_unschedulable_left_over(queue::POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION);
                }
            }
        }));
    }
    let lost = async {
        match elector {
            Some(e) => e.hold().await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(lost);
    let ended = loop {
        tokio::select! {
            more = sched.schedule_one() => if !more { break Ended::Stopped },
            _ = &mut *shutdown => break Ended::Stopped,
            _ = &mut lost => {
                tracing::error!(component = COMPONENT, "leaderelection lost");
                break Ended::LeadershipLost;
            }
        }
    };
    queue.close();
    abort(tasks);
    Ok(ended)
}

fn abort(tasks: Vec<tokio::task::JoinHandle<()>>) {
    for t in tasks {
        t.abort();
    }
}

/// A reflector whose events reach the queue once it exists (`None`: no
/// plugin registers events for the kind, e.g. PDBs).
fn spawn_store_deferred<K>(
    client: kube::Client,
    resource: Option<EventResource>,
    queue: Arc<std::sync::OnceLock<Arc<queue::SchedulingQueue>>>,
) -> (StoreLister<K>, tokio::task::JoinHandle<()>)
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    spawn_store(client, resource.unwrap_or(EventResource::Any), move |e| {
        if let (Some(q), Some(_)) = (queue.get(), resource) {
            q.move_all_to_active_or_backoff(e);
        }
    })
}
