//! The EndpointSlice controller (upstream `pkg/controller/endpointslice`
//! with the `k8s.io/endpointslice` reconciler): every Service with a
//! selector gets EndpointSlices listing the pods it selects — per address
//! type, per set of resolved ports, at most [`MAX_ENDPOINTS_PER_SLICE`]
//! endpoints a slice, a placeholder slice when there are none — labelled
//! `kubernetes.io/service-name` and managed-by
//! `endpointslice-controller.k8s.io`, owned by the Service (so the
//! garbage collector removes them with it). Services without a selector
//! and ExternalName Services are left alone.
//!
//! Files: [`endpoint`] (pods as endpoints), [`ports`] (target ports per
//! pod), [`reconcile`] (the pure create/update/delete decision),
//! [`informers`] (stores and the Service queue, shared with the Endpoints
//! controller), [`triggertime`] (the last-change-trigger-time annotation).

pub mod endpoint;
pub mod informers;
pub mod ports;
pub mod reconcile;
pub mod triggertime;

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::runtime::controller::{self, Action};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{watcher, WatchStreamExt};

use crate::runtime::{self, is_namespace_gone, is_not_found, Backoff, Ctx, Error, HasBackoff, Stop};
use triggertime::TriggerTimeTracker;

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "endpointslice-controller";
/// The older name `--controllers` also accepts.
pub const ALIAS: &str = "endpointslice";
/// The kube-system ServiceAccount it runs as.
pub const SERVICE_ACCOUNT: &str = "endpointslice-controller";
/// `endpointslice.kubernetes.io/managed-by` of the slices it writes.
pub const CONTROLLER_NAME: &str = "endpointslice-controller.k8s.io";
/// `discovery.LabelServiceName`.
pub const LABEL_SERVICE_NAME: &str = "kubernetes.io/service-name";
/// `discovery.LabelManagedBy`.
pub const LABEL_MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
/// `v1.EndpointsLastChangeTriggerTime`.
pub const LAST_CHANGE_TRIGGER_TIME: &str = "endpoints.kubernetes.io/last-change-trigger-time";
/// Upstream's `--max-endpoints-per-slice` default.
pub const MAX_ENDPOINTS_PER_SLICE: usize = 100;

/// The controller's state: its context, the stores and trigger times.
struct State {
    ctx: Arc<Ctx>,
    pods: Store<Pod>,
    nodes: Store<Node>,
    /// The pod and node stores' initial syncs (see `runtime::StoreReady`).
    ready: (runtime::StoreReady, runtime::StoreReady),
    triggers: Arc<TriggerTimeTracker>,
}

impl HasBackoff for State {
    fn backoff(&self) -> &Backoff {
        &self.ctx.backoff
    }
    fn name(&self) -> &'static str {
        NAME
    }
}

/// Runs until `stop`: Services are the keys; pod changes requeue the
/// Services selecting them, slice changes their Service.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    let client = ctx.reader.clone();
    let slices = watcher::watcher(Api::<EndpointSlice>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .touched_objects()
        .filter_map(|s| async move { s.ok().and_then(|s| service_of_slice(&s, CONTROLLER_NAME)) })
        .boxed();
    // A deleted Service's slices go with it through the garbage collector
    // (they are owned by it); only its trigger times are forgotten here.
    let triggers = Arc::new(TriggerTimeTracker::default());
    let forget = triggers.clone();
    let on_delete: informers::OnDelete = Arc::new(move |svc: Service| forget.delete(&runtime::key_of(&svc)));
    let inf = informers::start(client, NAME, true, slices, Some(on_delete), stop.clone());
    let nodes = inf.nodes.expect("asked for nodes");
    let ready = (runtime::StoreReady::new(&inf.pods), runtime::StoreReady::new(&nodes));
    let state = Arc::new(State { ctx, pods: inf.pods, nodes, ready, triggers });
    let queue = inf.queue;
    let applier = controller::applier(
        |svc, state: Arc<State>| Box::pin(reconcile(svc, state)),
        runtime::error_policy,
        state,
        inf.services,
        queue,
        controller::Config::default(),
    );
    runtime::drive(NAME, applier.take_until(runtime::stopped(stop))).await;
}

/// The Service a managed slice belongs to (by its service-name label).
pub fn service_of_slice(s: &EndpointSlice, managed_by: &str) -> Option<ObjectRef<Service>> {
    let labels = s.metadata.labels.as_ref()?;
    if labels.get(LABEL_MANAGED_BY).map(String::as_str) != Some(managed_by) {
        return None;
    }
    let svc = labels.get(LABEL_SERVICE_NAME).filter(|n| !n.is_empty())?;
    Some(ObjectRef::new(svc).within(s.metadata.namespace.as_deref().unwrap_or("")))
}

async fn reconcile(svc: Arc<Service>, state: Arc<State>) -> Result<Action, Error> {
    let ctx = &state.ctx;
    let key = runtime::key_of(svc.as_ref());
    let spec = svc.spec.clone().unwrap_or_default();
    if spec.type_.as_deref() == Some("ExternalName") || endpoint::selector(&svc).is_none() {
        return ctx.done(&key, Action::await_change());
    }
    let ready = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        state.ready.0.wait().await;
        state.ready.1.wait().await;
    });
    if ready.await.is_err() {
        return Err(Error::Other("pod and node caches not synced yet".into()));
    }
    let ns = svc.metadata.namespace.clone().unwrap_or_default();
    let name = svc.metadata.name.clone().unwrap_or_default();
    let pods = informers::pods_of(&state.pods, &svc);
    let pod_refs: Vec<&Pod> = pods.iter().map(|p| p.as_ref()).collect();
    let trigger_time = state.triggers.compute(&svc, &pod_refs).map(triggertime::format);

    let read = Api::<EndpointSlice>::namespaced(ctx.reader.clone(), &ns);
    let selector = format!("{LABEL_SERVICE_NAME}={name},{LABEL_MANAGED_BY}={CONTROLLER_NAME}");
    let existing: Vec<EndpointSlice> = read
        .list(&ListParams::default().labels(&selector))
        .await?
        .items
        .into_iter()
        .filter(|s| s.metadata.deletion_timestamp.is_none())
        .collect();

    let nodes = &state.nodes;
    let node_objs: BTreeMap<String, Arc<Node>> = pod_refs
        .iter()
        .filter_map(|p| p.spec.as_ref()?.node_name.clone())
        .filter_map(|n| nodes.get(&ObjectRef::new(&n)).map(|node| (n, node)))
        .collect();
    let mut errors = Vec::new();
    let mut desired = BTreeMap::new();
    for t in endpoint::address_types(&svc) {
        let (d, errs) = reconcile::desired(&svc, &pod_refs, |n| node_objs.get(n).map(|a| a.as_ref()), t);
        desired.insert(t.to_string(), d);
        errors.extend(errs);
    }
    errors.dedup();
    let input = reconcile::Input {
        service: &svc,
        desired,
        controller: CONTROLLER_NAME,
        max_endpoints: ctx.settings.max_endpoints_per_slice,
        trigger_time,
    };
    let plan = reconcile::plan(&input, existing);
    write(ctx, &svc, plan).await?;
    if !errors.is_empty() {
        return Err(Error::Other(errors.join("; ")));
    }
    ctx.done(&key, Action::await_change())
}

/// Upstream `finalize`'s writes: creates (dropped when the namespace is
/// going away), updates, deletes (already gone is fine).
async fn write(ctx: &Ctx, svc: &Service, plan: reconcile::Plan) -> Result<(), Error> {
    let ns = svc.metadata.namespace.clone().unwrap_or_default();
    let name = svc.metadata.name.clone().unwrap_or_default();
    let api = Api::<EndpointSlice>::namespaced(ctx.client.clone(), &ns);
    for s in &plan.create {
        match api.create(&PostParams::default(), s).await {
            Ok(_) => {}
            Err(e) if is_namespace_gone(&e) => return Ok(()),
            Err(e) => return Err(Error::Other(format!("failed to create EndpointSlice for Service {ns}/{name}: {e}"))),
        }
    }
    for s in &plan.update {
        let n = s.metadata.name.clone().unwrap_or_default();
        if let Err(e) = api.replace(&n, &PostParams::default(), s).await {
            return Err(Error::Other(format!("failed to update {n} EndpointSlice for Service {ns}/{name}: {e}")));
        }
    }
    for s in &plan.delete {
        let n = s.metadata.name.clone().unwrap_or_default();
        match api.delete(&n, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(e) if is_not_found(&e) => {}
            Err(e) => {
                return Err(Error::Other(format!("failed to delete {n} EndpointSlice for Service {ns}/{name}: {e}")))
            }
        }
    }
    if !(plan.create.is_empty() && plan.update.is_empty() && plan.delete.is_empty()) {
        tracing::debug!(component = NAME, service = %format!("{ns}/{name}"), created = plan.create.len(),
            updated = plan.update.len(), deleted = plan.delete.len(), "synced EndpointSlices");
    }
    Ok(())
}
