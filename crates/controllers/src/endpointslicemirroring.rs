//! The EndpointSlice mirroring controller (upstream
//! `pkg/controller/endpointslicemirroring`): the Endpoints of a Service
//! without a selector (written by users or other controllers) are mirrored
//! into EndpointSlices managed by `endpointslicemirroring-controller.k8s.io`
//! — one slice per set of ports and address type, at most
//! [`MAX_ENDPOINTS_PER_SUBSET`] addresses per subset, ready addresses as
//! ready endpoints and not-ready ones as not ready, the Endpoints' labels
//! and annotations copied, owned by the Endpoints. Endpoints labelled
//! `endpointslice.kubernetes.io/skip-mirror: "true"` or carrying a
//! leader-election record are not mirrored; mirrored slices go away when
//! the Endpoints or the Service does, or when the Service gets a selector.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{EndpointAddress, Endpoints, Service};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::runtime::controller::{self, Action};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{watcher, WatchStreamExt};

use crate::endpointslice::ports::PortKey;
use crate::endpointslice::reconcile::{equal_beyond_key, key_of, EndpointKey, Plan};
use crate::endpointslice::{
    endpoint, service_of_slice, LABEL_MANAGED_BY, LABEL_SERVICE_NAME, LAST_CHANGE_TRIGGER_TIME,
};
use crate::runtime::{self, is_namespace_gone, is_not_found, Backoff, Ctx, Error, HasBackoff, Stop};

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "endpointslice-mirroring-controller";
/// The older name `--controllers` also accepts.
pub const ALIAS: &str = "endpointslicemirroring";
/// The kube-system ServiceAccount it runs as.
pub const SERVICE_ACCOUNT: &str = "endpointslicemirroring-controller";
/// `endpointslice.kubernetes.io/managed-by` of the slices it writes.
pub const CONTROLLER_NAME: &str = "endpointslicemirroring-controller.k8s.io";
/// Upstream's `--mirroring-max-endpoints-per-subset` default.
pub const MAX_ENDPOINTS_PER_SUBSET: usize = 1000;
/// `discovery.LabelSkipMirror`.
pub const LABEL_SKIP_MIRROR: &str = "endpointslice.kubernetes.io/skip-mirror";
/// `resourcelock.LeaderElectionRecordAnnotationKey`.
pub const LEADER_ANNOTATION: &str = "control-plane.alpha.kubernetes.io/leader";
/// `v1.LastAppliedConfigAnnotation`: not copied to slices.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Whether `ep` is mirrored at all (upstream `shouldMirror`).
pub fn should_mirror(ep: &Endpoints) -> bool {
    let skip = ep.metadata.labels.as_ref().and_then(|l| l.get(LABEL_SKIP_MIRROR)).is_some_and(|v| v == "true");
    let leader = ep.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(LEADER_ANNOTATION));
    !skip && !leader
}

/// Go's `ParseIPSloppy` (IPv4 octets may have leading zeros), with an
/// IPv4-mapped IPv6 address read as IPv4 (Go's `To4`).
fn parse_ip(s: &str) -> Option<IpAddr> {
    let ip = s.parse::<IpAddr>().ok().or_else(|| {
        let parts: Vec<u8> = s.split('.').map(|p| p.parse::<u8>().ok()).collect::<Option<_>>()?;
        (parts.len() == 4).then(|| IpAddr::V4(Ipv4Addr::new(parts[0], parts[1], parts[2], parts[3])))
    })?;
    Some(match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    })
}

/// Upstream `addressToEndpoint`: the endpoint and its address type, none
/// for an address that is not an IP.
fn address_to_endpoint(a: &EndpointAddress, ready: bool) -> Option<(Endpoint, &'static str)> {
    let ip = parse_ip(&a.ip)?;
    let t = if ip.is_ipv6() { endpoint::IPV6 } else { endpoint::IPV4 };
    let ep = Endpoint {
        addresses: vec![ip.to_string()],
        conditions: Some(EndpointConditions { ready: Some(ready), ..Default::default() }),
        target_ref: a.target_ref.clone(),
        node_name: a.node_name.clone(),
        hostname: a.hostname.clone().filter(|h| !h.is_empty()),
        ..Default::default()
    };
    Some((ep, t))
}

/// A slice of one address type and port set.
type GroupKey = (String, PortKey);

/// What the Endpoints ask for (upstream `desiredCalc`).
#[derive(Default)]
pub struct Desired {
    groups: BTreeMap<GroupKey, (Vec<EndpointPort>, BTreeMap<EndpointKey, Endpoint>)>,
    /// Addresses that were not IPs.
    pub invalid: usize,
    /// Addresses left out (invalid, or over the per-subset maximum).
    pub skipped: usize,
}

/// Builds [`Desired`] from the Endpoints' subsets, at most `max` addresses
/// a subset (ready ones first).
pub fn desired(ep: &Endpoints, max: usize) -> Desired {
    let mut d = Desired::default();
    for subset in ep.subsets.iter().flatten() {
        let ports: Vec<EndpointPort> = subset
            .ports
            .iter()
            .flatten()
            .map(|p| EndpointPort {
                name: Some(p.name.clone().unwrap_or_default()),
                port: Some(p.port),
                protocol: Some(p.protocol.clone().unwrap_or_default()),
                app_protocol: p.app_protocol.clone(),
            })
            .collect();
        let key = PortKey::of(&ports);
        let ready = subset.addresses.iter().flatten().map(|a| (a, true));
        let not_ready = subset.not_ready_addresses.iter().flatten().map(|a| (a, false));
        let total =
            subset.addresses.as_ref().map_or(0, Vec::len) + subset.not_ready_addresses.as_ref().map_or(0, Vec::len);
        let mut added = 0;
        for (a, r) in ready.chain(not_ready) {
            if added >= max {
                break;
            }
            match address_to_endpoint(a, r) {
                Some((e, t)) => {
                    let g = d
                        .groups
                        .entry((t.to_string(), key.clone()))
                        .or_insert_with(|| (ports.clone(), BTreeMap::new()));
                    g.1.insert(key_of(&e), e);
                    added += 1;
                }
                None => d.invalid += 1,
            }
        }
        d.skipped += total - added;
    }
    d
}

/// A mirrored slice for `ep` (upstream `newEndpointSlice`): the Endpoints'
/// labels plus service-name and managed-by, its annotations except the
/// trigger time and kubectl's last-applied configuration, owned by it.
pub fn new_slice(ep: &Endpoints, ports: Vec<EndpointPort>, address_type: &str) -> EndpointSlice {
    let name = ep.metadata.name.clone().unwrap_or_default();
    let mut labels = ep.metadata.labels.clone().unwrap_or_default();
    labels.insert(LABEL_SERVICE_NAME.into(), name.clone());
    labels.insert(LABEL_MANAGED_BY.into(), CONTROLLER_NAME.into());
    EndpointSlice {
        metadata: ObjectMeta {
            generate_name: Some(format!("{name}-")),
            namespace: ep.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: Some(copied_annotations(ep)),
            owner_references: Some(vec![k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                api_version: "v1".into(),
                kind: "Endpoints".into(),
                name,
                uid: ep.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..Default::default()
        },
        address_type: address_type.into(),
        endpoints: Vec::new(),
        ports: Some(ports),
    }
}

fn copied_annotations(ep: &Endpoints) -> BTreeMap<String, String> {
    let mut a = ep.metadata.annotations.clone().unwrap_or_default();
    a.remove(LAST_CHANGE_TRIGGER_TIME);
    a.remove(LAST_APPLIED);
    a
}

/// Upstream `reconcile` + `recycleSlices`: per (address type, port set)
/// one slice; an existing one is rewritten only when its endpoints,
/// labels or annotations differ; extra and no-longer-wanted slices are
/// deleted, or reused for a slice that would be created.
pub fn plan(ep: &Endpoints, mut desired: Desired, existing: Vec<EndpointSlice>, max: usize) -> Plan {
    let mut by_key: BTreeMap<GroupKey, Vec<EndpointSlice>> = BTreeMap::new();
    for s in existing {
        by_key.entry((s.address_type.clone(), PortKey::of(s.ports.as_deref().unwrap_or(&[])))).or_default().push(s);
    }
    let mut p = Plan::default();
    let ep_labels = ep.metadata.labels.clone().unwrap_or_default();
    let annotations = copied_annotations(ep);
    for (key, (ports, mut want)) in std::mem::take(&mut desired.groups) {
        let mut slices = by_key.remove(&key).unwrap_or_default();
        slices.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        if want.is_empty() {
            p.delete.extend(slices);
            continue;
        }
        let mut first = None;
        if !slices.is_empty() {
            let f = slices.remove(0);
            p.delete.append(&mut slices);
            let unchanged = f.endpoints.len() == want.len()
                && f.endpoints.iter().all(|e| want.get(&key_of(e)).is_some_and(|w| equal_beyond_key(w, e)));
            let mut labels = f.metadata.labels.clone().unwrap_or_default();
            labels.remove(LABEL_MANAGED_BY);
            labels.remove(LABEL_SERVICE_NAME);
            if unchanged && labels == ep_labels && f.metadata.annotations.clone().unwrap_or_default() == annotations {
                continue;
            }
            first = Some(f);
        }
        let mut s = new_slice(ep, ports, &key.0);
        while s.endpoints.len() < max {
            let Some((_, e)) = want.pop_first() else { break };
            s.endpoints.push(e);
        }
        match first {
            Some(f) => {
                s.metadata.name = f.metadata.name;
                s.metadata.resource_version = f.metadata.resource_version;
                p.update.push(s);
            }
            None => p.create.push(s),
        }
    }
    p.delete.extend(by_key.into_values().flatten());
    // recycleSlices: creates become updates of deleted slices of the same type.
    let mut i = p.delete.len();
    while i > 0 {
        i -= 1;
        let Some(j) = p.create.iter().position(|c| c.address_type == p.delete[i].address_type) else { continue };
        let d = p.delete.remove(i);
        let mut c = p.create.remove(j);
        c.metadata.name = d.metadata.name;
        c.metadata.resource_version = d.metadata.resource_version;
        p.update.push(c);
    }
    if ep.metadata.deletion_timestamp.is_some() {
        p.create.clear();
    }
    p
}

struct State {
    ctx: Arc<Ctx>,
    services: Store<Service>,
    /// The Service store's initial sync (see `runtime::StoreReady`).
    services_ready: runtime::StoreReady,
}

impl HasBackoff for State {
    fn backoff(&self) -> &Backoff {
        &self.ctx.backoff
    }
    fn name(&self) -> &'static str {
        NAME
    }
}

/// Runs until `stop`: Endpoints are the keys; a Service change requeues
/// the Endpoints of its name, a mirrored slice change its Endpoints, and a
/// deleted Endpoints has its mirrored slices deleted.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    let client = ctx.reader.clone();
    let (endpoints, ep_writer) = reflector::store::<Endpoints>();
    let del_ctx = ctx.clone();
    let ep_events = reflector::reflector(
        ep_writer,
        watcher::watcher(Api::<Endpoints>::all(client.clone()), watcher::Config::default()).default_backoff(),
    )
    .filter_map(move |ev| {
        let ctx = del_ctx.clone();
        async move {
            match ev {
                Ok(watcher::Event::Apply(e) | watcher::Event::InitApply(e)) => Some(Ok(ObjectRef::from_obj(&e))),
                Ok(watcher::Event::Delete(e)) => {
                    let (ns, name) = (e.metadata.namespace.unwrap_or_default(), e.metadata.name.unwrap_or_default());
                    tokio::spawn(async move { delete_mirrored_with_retries(&ctx, &ns, &name).await });
                    None
                }
                Ok(_) => None,
                Err(e) => Some(Err(e)),
            }
        }
    });
    let (services, svc_writer) = reflector::store::<Service>();
    let svc_events = reflector::reflector(
        svc_writer,
        watcher::watcher(Api::<Service>::all(client.clone()), watcher::Config::default()).default_backoff(),
    )
    .touched_objects()
    .filter_map(|s| async move { s.ok().map(|s| Ok(same_name::<Service, Endpoints>(&s))) });
    let slices = watcher::watcher(Api::<EndpointSlice>::all(client), watcher::Config::default())
        .default_backoff()
        .touched_objects()
        .filter_map(|s| async move {
            let r = service_of_slice(&s.ok()?, CONTROLLER_NAME)?;
            Some(Ok(ObjectRef::<Endpoints>::new(&r.name).within(r.namespace.as_deref().unwrap_or(""))))
        });
    let queue = futures::stream::select_all([ep_events.boxed(), svc_events.boxed(), slices.boxed()])
        .take_until(runtime::stopped(stop.clone()));
    let services_ready = runtime::StoreReady::new(&services);
    let state = Arc::new(State { ctx, services, services_ready });
    let applier = controller::applier(
        |ep, state: Arc<State>| Box::pin(reconcile(ep, state)),
        runtime::error_policy,
        state,
        endpoints,
        queue,
        controller::Config::default(),
    );
    runtime::drive(NAME, applier.take_until(runtime::stopped(stop))).await;
}

fn same_name<A: kube::Resource, B: kube::Resource<DynamicType = ()>>(a: &A) -> ObjectRef<B> {
    let m = a.meta();
    ObjectRef::new(m.name.as_deref().unwrap_or("")).within(m.namespace.as_deref().unwrap_or(""))
}

async fn mirrored(ctx: &Ctx, ns: &str, name: &str) -> Result<Vec<EndpointSlice>, Error> {
    let sel = format!("{LABEL_SERVICE_NAME}={name},{LABEL_MANAGED_BY}={CONTROLLER_NAME}");
    let api = Api::<EndpointSlice>::namespaced(ctx.client.clone(), ns);
    Ok(api.list(&ListParams::default().labels(&sel)).await?.items)
}

async fn delete_mirrored(ctx: &Ctx, ns: &str, name: &str) -> Result<(), Error> {
    let api = Api::<EndpointSlice>::namespaced(ctx.client.clone(), ns);
    for s in mirrored(ctx, ns, name).await? {
        match api.delete(s.metadata.name.as_deref().unwrap_or(""), &DeleteParams::default()).await {
            Ok(_) => {}
            Err(e) if is_not_found(&e) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

async fn delete_mirrored_with_retries(ctx: &Ctx, ns: &str, name: &str) {
    for attempt in 0..5u32 {
        match delete_mirrored(ctx, ns, name).await {
            Ok(()) => return,
            Err(e) => {
                tracing::warn!(component = NAME, endpoints = %format!("{ns}/{name}"), attempt, error = %e, "deleting mirrored EndpointSlices");
                tokio::time::sleep(std::time::Duration::from_millis(100 << attempt)).await;
            }
        }
    }
}

async fn reconcile(ep: Arc<Endpoints>, state: Arc<State>) -> Result<Action, Error> {
    let ctx = &state.ctx;
    let key = runtime::key_of(ep.as_ref());
    let ns = ep.metadata.namespace.clone().unwrap_or_default();
    let name = ep.metadata.name.clone().unwrap_or_default();
    if tokio::time::timeout(std::time::Duration::from_secs(30), state.services_ready.wait()).await.is_err() {
        return Err(Error::Other("service cache not synced yet".into()));
    }
    let svc = state.services.get(&ObjectRef::new(&name).within(&ns));
    let mirror = svc.as_ref().is_some_and(|s| endpoint::selector(s).is_none()) && should_mirror(&ep);
    if !mirror {
        delete_mirrored(ctx, &ns, &name).await?;
        return ctx.done(&key, Action::await_change());
    }
    let existing: Vec<EndpointSlice> =
        mirrored(ctx, &ns, &name).await?.into_iter().filter(|s| s.metadata.deletion_timestamp.is_none()).collect();
    let d = desired(&ep, MAX_ENDPOINTS_PER_SUBSET);
    if d.invalid > 0 {
        let msg = format!("Skipped {} invalid IP addresses when mirroring to EndpointSlices", d.invalid);
        ctx.recorder.event(ep.as_ref(), crate::events::WARNING, "InvalidIPAddress", msg);
    }
    if d.skipped > d.invalid {
        let msg = format!(
            "A max of {MAX_ENDPOINTS_PER_SUBSET} addresses can be mirrored to EndpointSlices per Endpoints subset. {} addresses were skipped",
            d.skipped
        );
        ctx.recorder.event(ep.as_ref(), crate::events::WARNING, "TooManyAddressesToMirror", msg);
    }
    let p = plan(&ep, d, existing, MAX_ENDPOINTS_PER_SUBSET);
    let api = Api::<EndpointSlice>::namespaced(ctx.client.clone(), &ns);
    for s in &p.create {
        match api.create(&PostParams::default(), s).await {
            Ok(_) => {}
            Err(e) if is_namespace_gone(&e) => return ctx.done(&key, Action::await_change()),
            Err(e) => {
                return Err(Error::Other(format!("failed to create EndpointSlice for Endpoints {ns}/{name}: {e}")))
            }
        }
    }
    for s in &p.update {
        let n = s.metadata.name.clone().unwrap_or_default();
        if let Err(e) = api.replace(&n, &PostParams::default(), s).await {
            return Err(Error::Other(format!("failed to update {n} EndpointSlice for Endpoints {ns}/{name}: {e}")));
        }
    }
    for s in &p.delete {
        let n = s.metadata.name.clone().unwrap_or_default();
        match api.delete(&n, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(e) if is_not_found(&e) => {}
            Err(e) => {
                return Err(Error::Other(format!("failed to delete {n} EndpointSlice for Endpoints {ns}/{name}: {e}")))
            }
        }
    }
    ctx.done(&key, Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn endpoints(subsets: serde_json::Value) -> Endpoints {
        serde_json::from_value(json!({"metadata": {"name": "ext", "namespace": "ns", "uid": "ep-uid",
            "labels": {"team": "a"}, "annotations": {"note": "x", LAST_APPLIED: "{}"}}, "subsets": subsets}))
        .unwrap()
    }

    #[test]
    fn subsets_become_one_slice_per_port_set_and_address_type() {
        let ep = endpoints(json!([
            {"addresses": [{"ip": "10.1.2.3", "hostname": "h"}, {"ip": "fd00::1"}], "notReadyAddresses": [{"ip": "010.1.2.4"}],
             "ports": [{"name": "example", "port": 80, "protocol": "TCP"}]},
            {"addresses": [{"ip": "not-an-ip"}, {"ip": "10.9.9.9"}], "ports": [{"port": 8080, "protocol": "TCP"}]}]));
        let d = desired(&ep, 1000);
        assert_eq!((d.invalid, d.skipped), (1, 1));
        let p = plan(&ep, d, vec![], 1000);
        assert_eq!(p.create.len(), 3);
        let v4 = p
            .create
            .iter()
            .find(|s| s.address_type == "IPv4" && s.ports.as_ref().unwrap()[0].port == Some(80))
            .unwrap();
        let mut eps: Vec<(String, Option<bool>)> =
            v4.endpoints.iter().map(|e| (e.addresses[0].clone(), e.conditions.as_ref().unwrap().ready)).collect();
        eps.sort();
        assert_eq!(eps, [("10.1.2.3".into(), Some(true)), ("10.1.2.4".into(), Some(false))]);
        let labels = v4.metadata.labels.as_ref().unwrap();
        assert_eq!(labels[LABEL_MANAGED_BY], CONTROLLER_NAME);
        assert_eq!(labels[LABEL_SERVICE_NAME], "ext");
        assert_eq!(labels["team"], "a");
        let ann = v4.metadata.annotations.as_ref().unwrap();
        assert_eq!(ann.get("note").map(String::as_str), Some("x"));
        assert!(!ann.contains_key(LAST_APPLIED));
        let o = &v4.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!((o.kind.as_str(), o.uid.as_str()), ("Endpoints", "ep-uid"));
        assert!(p.create.iter().any(|s| s.address_type == "IPv6"));
    }

    #[test]
    fn unchanged_slices_stay_and_changes_rewrite_the_first_slice() {
        let ep = endpoints(
            json!([{"addresses": [{"ip": "10.1.2.3"}], "ports": [{"name": "example", "port": 80, "protocol": "TCP"}]}]),
        );
        let mut existing = plan(&ep, desired(&ep, 1000), vec![], 1000).create;
        existing[0].metadata.name = Some("ext-a".into());
        let p = plan(&ep, desired(&ep, 1000), existing.clone(), 1000);
        assert_eq!((p.create.len(), p.update.len(), p.delete.len()), (0, 0, 0));
        // New address and port: the old slice is reused for the new port set.
        let ep2 = endpoints(
            json!([{"addresses": [{"ip": "10.2.3.4"}], "ports": [{"name": "example", "port": 8080, "protocol": "TCP"}]}]),
        );
        let p = plan(&ep2, desired(&ep2, 1000), existing.clone(), 1000);
        assert_eq!((p.create.len(), p.update.len(), p.delete.len()), (0, 1, 0));
        assert_eq!(p.update[0].metadata.name.as_deref(), Some("ext-a"));
        assert_eq!(p.update[0].endpoints[0].addresses, ["10.2.3.4"]);
        // No subsets: the slice is deleted.
        let p = plan(&endpoints(json!([])), desired(&endpoints(json!([])), 1000), existing, 1000);
        assert_eq!((p.create.len(), p.update.len(), p.delete.len()), (0, 0, 1));
    }

    #[test]
    fn skip_mirror_label_and_leader_annotation_stop_mirroring() {
        let mut ep = endpoints(json!([]));
        assert!(should_mirror(&ep));
        ep.metadata.labels.as_mut().unwrap().insert(LABEL_SKIP_MIRROR.into(), "true".into());
        assert!(!should_mirror(&ep));
        let mut ep = endpoints(json!([]));
        ep.metadata.annotations.as_mut().unwrap().insert(LEADER_ANNOTATION.into(), "{}".into());
        assert!(!should_mirror(&ep));
    }
}
