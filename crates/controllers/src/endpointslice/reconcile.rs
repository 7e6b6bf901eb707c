//! The EndpointSlice reconciler's decisions (upstream
//! `staging/src/k8s.io/endpointslice/reconciler.go`), pure: from a
//! Service, its pods (as desired endpoints grouped by port set) and the
//! slices it already has, which slices to create, update and delete.
//!
//! Per address type and port set: existing slices keep the endpoints still
//! desired (updated in place when their conditions, node, zone or target
//! changed) and drop the others (a slice left empty is deleted); slices
//! being updated are filled up first (fullest first), then leftovers go
//! into the unchanged slice closest to full that can take them all, or
//! into new slices of at most `max` endpoints. A Service with no endpoints
//! of a type keeps one placeholder slice without ports or endpoints.
//! Creates are turned into updates of slices that would be deleted.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Node, Pod, Service};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use super::endpoint::{self, pod_to_endpoint, should_pod_be_in_endpoints};
use super::ports::{endpoint_ports, PortKey};
use super::{LABEL_MANAGED_BY, LABEL_SERVICE_NAME, LAST_CHANGE_TRIGGER_TIME};

/// `v1.IsHeadlessService`: the label on the slices of a headless Service.
pub const LABEL_HEADLESS: &str = "service.kubernetes.io/headless";

/// What to write.
#[derive(Debug, Default)]
pub struct Plan {
    /// New slices (generateName `<service>-`).
    pub create: Vec<EndpointSlice>,
    /// Changed slices (full objects for an update).
    pub update: Vec<EndpointSlice>,
    /// Slices to delete.
    pub delete: Vec<EndpointSlice>,
}

/// Desired endpoints of one address type: per port set, its ports and
/// endpoints (a port set may have none: a pod without an address of the
/// type still makes its port set known, as upstream).
pub type Desired = BTreeMap<PortKey, (Vec<EndpointPort>, Vec<Endpoint>)>;

/// An endpoint's identity (upstream's `hashEndpoint`): its addresses, its
/// hostname and the pod it points at.
pub(crate) type EndpointKey = (Vec<String>, String, String, String);

pub(crate) fn key_of(ep: &Endpoint) -> EndpointKey {
    let mut addrs = ep.addresses.clone();
    addrs.sort();
    let r = ep.target_ref.as_ref();
    (
        addrs,
        ep.hostname.clone().unwrap_or_default(),
        r.and_then(|r| r.namespace.clone()).unwrap_or_default(),
        r.and_then(|r| r.name.clone()).unwrap_or_default(),
    )
}

/// `EndpointsEqualBeyondHash`: node, zone, the three conditions and the
/// target (ignoring its resourceVersion).
pub(crate) fn equal_beyond_key(a: &Endpoint, b: &Endpoint) -> bool {
    let conds = |e: &Endpoint| {
        let c = e.conditions.clone().unwrap_or_default();
        (c.ready, c.serving, c.terminating)
    };
    let target = |e: &Endpoint| {
        e.target_ref.clone().map(|mut r| {
            r.resource_version = None;
            r
        })
    };
    a.node_name == b.node_name && a.zone == b.zone && conds(a) == conds(b) && target(a) == target(b)
}

/// Builds the desired endpoints of `address_type` from the Service's pods
/// (upstream's first half of `reconcileByAddressType`). A pod on a node
/// that does not exist is left out (and named in the returned errors, so
/// the Service is retried) unless the Service publishes not-ready
/// addresses.
pub fn desired<'a>(
    svc: &Service,
    pods: &[&Pod],
    node: impl Fn(&str) -> Option<&'a Node>,
    address_type: &str,
) -> (Desired, Vec<String>) {
    let mut out = Desired::new();
    let mut errors = Vec::new();
    let publish = svc.spec.as_ref().and_then(|s| s.publish_not_ready_addresses).unwrap_or(false);
    for pod in pods {
        if !should_pod_be_in_endpoints(pod, true) {
            continue;
        }
        let ports = endpoint_ports(svc, pod);
        let group = out.entry(PortKey::of(&ports)).or_insert_with(|| (ports, Vec::new()));
        let node_name = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or("");
        let n = node(node_name);
        if n.is_none() && !publish {
            errors.push(format!(
                "skipping Pod {} for Service {}/{}: Node {} Not Found",
                pod.metadata.name.as_deref().unwrap_or(""),
                svc.metadata.namespace.as_deref().unwrap_or(""),
                svc.metadata.name.as_deref().unwrap_or(""),
                node_name
            ));
            continue;
        }
        let ep = pod_to_endpoint(pod, n, svc, address_type);
        if !ep.addresses.is_empty() {
            group.1.push(ep);
        }
    }
    (out, errors)
}

/// The slice labels for `svc` (upstream `setEndpointSliceLabels`): the
/// Service's labels except the reserved ones, the headless label when it
/// has no cluster IP, the service-name and managed-by labels; and whether
/// the copied Service labels differ from the slice's.
pub fn slice_labels(
    current: Option<&BTreeMap<String, String>>,
    svc: &Service,
    controller: &str,
) -> (BTreeMap<String, String>, bool) {
    let reserved = |k: &str| k == LABEL_SERVICE_NAME || k == LABEL_MANAGED_BY || k == LABEL_HEADLESS;
    let keep = |m: Option<&BTreeMap<String, String>>| -> BTreeMap<String, String> {
        m.into_iter().flatten().filter(|(k, _)| !reserved(k)).map(|(k, v)| (k.clone(), v.clone())).collect()
    };
    let ours = keep(current);
    let mut labels = keep(svc.metadata.labels.as_ref());
    let changed = ours != labels;
    if !endpoint::is_service_ip_set(svc) {
        labels.insert(LABEL_HEADLESS.into(), String::new());
    }
    labels.insert(LABEL_SERVICE_NAME.into(), svc.metadata.name.clone().unwrap_or_default());
    labels.insert(LABEL_MANAGED_BY.into(), controller.into());
    (labels, changed)
}

/// The controller reference to the Service every managed slice carries.
pub fn owner_reference(svc: &Service) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: "Service".into(),
        name: svc.metadata.name.clone().unwrap_or_default(),
        uid: svc.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// Whether `slice` is owned by `svc` (same uid, kind Service, apiVersion v1).
pub fn owned_by(slice: &EndpointSlice, svc: &Service) -> bool {
    let uid = svc.metadata.uid.as_deref().unwrap_or("");
    slice
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.uid == uid && o.kind == "Service" && o.api_version == "v1")
}

/// A new, empty slice for `svc` (upstream `newEndpointSlice`).
pub fn new_slice(svc: &Service, ports: Vec<EndpointPort>, address_type: &str, controller: &str) -> EndpointSlice {
    let (labels, _) = slice_labels(None, svc, controller);
    EndpointSlice {
        metadata: ObjectMeta {
            generate_name: Some(format!("{}-", svc.metadata.name.as_deref().unwrap_or(""))),
            namespace: svc.metadata.namespace.clone(),
            owner_references: Some(vec![owner_reference(svc)]),
            labels: Some(labels),
            ..Default::default()
        },
        address_type: address_type.into(),
        endpoints: Vec::new(),
        ports: Some(ports),
    }
}

/// Upstream's `placeholderSliceCompare`: namespace, labels, owner
/// references, address type, and no endpoints or ports.
fn same_placeholder(a: &EndpointSlice, b: &EndpointSlice) -> bool {
    let labels = |s: &EndpointSlice| s.metadata.labels.clone().unwrap_or_default();
    let owners = |s: &EndpointSlice| s.metadata.owner_references.clone().unwrap_or_default();
    let empty = |s: &EndpointSlice| s.endpoints.is_empty() && s.ports.as_ref().is_none_or(|p| p.is_empty());
    a.metadata.namespace == b.metadata.namespace
        && labels(a) == labels(b)
        && owners(a) == owners(b)
        && a.address_type == b.address_type
        && empty(a)
        && empty(b)
}

/// Everything [`plan`] needs besides the slices.
pub struct Input<'a> {
    /// The Service.
    pub service: &'a Service,
    /// Desired endpoints per address type the Service supports.
    pub desired: BTreeMap<String, Desired>,
    /// `endpointslice.kubernetes.io/managed-by` of the slices written.
    pub controller: &'a str,
    /// At most this many endpoints a slice (`--max-endpoints-per-slice`).
    pub max_endpoints: usize,
    /// The `endpoints.kubernetes.io/last-change-trigger-time` value for the
    /// slices written (none: the annotation is removed from them).
    pub trigger_time: Option<String>,
}

/// The whole decision for one Service (upstream `Reconcile` + `finalize`):
/// slices of address types the Service no longer has are deleted, every
/// supported type is reconciled, creates reuse slices that would be
/// deleted, and nothing is created for a Service being deleted.
pub fn plan(input: &Input, existing: Vec<EndpointSlice>) -> Plan {
    let mut by_type: BTreeMap<String, Vec<EndpointSlice>> = BTreeMap::new();
    let mut out = Plan::default();
    for s in existing {
        if input.desired.contains_key(&s.address_type) {
            by_type.entry(s.address_type.clone()).or_default().push(s);
        } else {
            out.delete.push(s);
        }
    }
    let mut create = Vec::new();
    let mut update = Vec::new();
    let mut delete = Vec::new();
    for (address_type, desired) in &input.desired {
        let p = plan_address_type(input, address_type, desired, by_type.remove(address_type).unwrap_or_default());
        create.extend(p.create);
        update.extend(p.update);
        delete.extend(p.delete);
    }
    // finalize: turn creates into updates of owned slices of the same type.
    let mut i = 0;
    while i < delete.len() && !create.is_empty() {
        let d: &EndpointSlice = &delete[i];
        let last = create.last().unwrap();
        if d.address_type == last.address_type && owned_by(d, input.service) {
            let mut s = create.pop().unwrap();
            s.metadata.name = d.metadata.name.clone();
            s.metadata.resource_version = d.metadata.resource_version.clone();
            update.push(s);
            delete.remove(i);
        } else {
            i += 1;
        }
    }
    if input.service.metadata.deletion_timestamp.is_some() {
        create.clear();
    }
    for s in create.iter_mut().chain(update.iter_mut()) {
        let ann = s.metadata.annotations.get_or_insert_with(Default::default);
        match &input.trigger_time {
            Some(t) => {
                ann.insert(LAST_CHANGE_TRIGGER_TIME.into(), t.clone());
            }
            None => {
                ann.remove(LAST_CHANGE_TRIGGER_TIME);
            }
        }
    }
    out.create = create;
    out.update = update;
    out.delete.extend(delete);
    out
}

fn plan_address_type(input: &Input, address_type: &str, desired: &Desired, existing: Vec<EndpointSlice>) -> Plan {
    let svc = input.service;
    let total_existing = existing.len();
    let mut delete = Vec::new();
    let mut by_ports: BTreeMap<PortKey, Vec<EndpointSlice>> = BTreeMap::new();
    for s in existing {
        if owned_by(&s, svc) {
            by_ports.entry(PortKey::of(s.ports.as_deref().unwrap_or(&[]))).or_default().push(s);
        } else {
            delete.push(s);
        }
    }
    let mut create = Vec::new();
    let mut update = Vec::new();
    for (key, (ports, endpoints)) in desired {
        let p = plan_port_set(input, address_type, ports, endpoints, by_ports.remove(key).unwrap_or_default());
        create.extend(p.create);
        update.extend(p.update);
        delete.extend(p.delete);
    }
    // Port sets no longer desired.
    delete.extend(by_ports.into_values().flatten());
    if total_existing == delete.len() && create.is_empty() {
        let placeholder = new_slice(svc, Vec::new(), address_type, input.controller);
        if delete.len() == 1 && same_placeholder(&delete[0], &placeholder) {
            delete.clear();
        } else {
            create.push(placeholder);
        }
    }
    Plan { create, update, delete }
}

/// Upstream `reconcileByPortMapping`.
fn plan_port_set(
    input: &Input,
    address_type: &str,
    ports: &[EndpointPort],
    endpoints: &[Endpoint],
    existing: Vec<EndpointSlice>,
) -> Plan {
    let max = input.max_endpoints.max(1);
    let mut want: BTreeMap<EndpointKey, Endpoint> = endpoints.iter().map(|e| (key_of(e), e.clone())).collect();
    let mut slices: BTreeMap<String, EndpointSlice> = BTreeMap::new();
    let mut unchanged = BTreeSet::new();
    let mut to_update = BTreeSet::new();
    let mut to_delete = BTreeSet::new();

    // 1. Keep the endpoints still desired, refreshed; note label changes.
    for s in existing {
        let name = s.metadata.name.clone().unwrap_or_default();
        let mut kept = Vec::new();
        let mut changed = false;
        for ep in &s.endpoints {
            if let Some(got) = want.remove(&key_of(ep)) {
                changed |= !equal_beyond_key(&got, ep);
                kept.push(got);
            }
        }
        let (labels, labels_changed) = slice_labels(s.metadata.labels.as_ref(), input.service, input.controller);
        if changed || kept.len() != s.endpoints.len() {
            if kept.is_empty() {
                to_delete.insert(name.clone());
                slices.insert(name, s);
            } else {
                let mut s = s;
                s.endpoints = kept;
                s.metadata.labels = Some(labels);
                to_update.insert(name.clone());
                slices.insert(name, s);
            }
        } else if labels_changed {
            let mut s = s;
            s.metadata.labels = Some(labels);
            to_update.insert(name.clone());
            slices.insert(name, s);
        } else {
            unchanged.insert(name.clone());
            slices.insert(name, s);
        }
    }

    let pop = |want: &mut BTreeMap<EndpointKey, Endpoint>| want.pop_first().map(|(_, e)| e);

    // 2. Fill the slices being updated, fullest first.
    if !want.is_empty() && !to_update.is_empty() {
        let mut names: Vec<&String> = to_update.iter().collect();
        names.sort_by_key(|n| std::cmp::Reverse(slices[*n].endpoints.len()));
        let names: Vec<String> = names.into_iter().cloned().collect();
        for n in names {
            let s = slices.get_mut(&n).unwrap();
            while s.endpoints.len() < max {
                let Some(e) = pop(&mut want) else { break };
                s.endpoints.push(e);
            }
        }
    }

    // 3. Leftovers: the unchanged slice that fits them closest to full, or new slices.
    let mut create = Vec::new();
    while !want.is_empty() {
        let mut fill: Option<EndpointSlice> = None;
        if want.len() < max && !unchanged.is_empty() {
            let mut best: Option<(usize, &String)> = None;
            for n in &unchanged {
                let used = want.len() + slices[n].endpoints.len();
                if used <= max && best.is_none_or(|(d, _)| max - used < d) {
                    best = Some((max - used, n));
                }
            }
            fill = best.map(|(_, n)| slices[n].clone());
        }
        let mut s = fill.unwrap_or_else(|| new_slice(input.service, ports.to_vec(), address_type, input.controller));
        while s.endpoints.len() < max {
            let Some(e) = pop(&mut want) else { break };
            s.endpoints.push(e);
        }
        match s.metadata.name.clone() {
            Some(n) => {
                unchanged.remove(&n);
                to_update.insert(n.clone());
                slices.insert(n, s);
            }
            None => create.push(s),
        }
    }
    let take = |names: &BTreeSet<String>, slices: &mut BTreeMap<String, EndpointSlice>| {
        names.iter().filter_map(|n| slices.remove(n)).collect::<Vec<_>>()
    };
    let update = take(&to_update, &mut slices);
    let delete = take(&to_delete, &mut slices);
    Plan { create, update, delete }
}

#[cfg(test)]
mod tests {
    use super::super::CONTROLLER_NAME;
    use super::*;
    use serde_json::{json, Value};

    fn svc(extra: Value) -> Service {
        let mut v = json!({"metadata": {"name": "web", "namespace": "ns", "uid": "svc-uid", "labels": {"team": "a"}},
            "spec": {"clusterIP": "10.96.0.10", "ipFamilies": ["IPv4"], "selector": {"app": "web"},
                     "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]}});
        if let Value::Object(m) = extra {
            for (k, x) in m {
                v["spec"][k] = x;
            }
        }
        serde_json::from_value(v).unwrap()
    }

    fn pod(i: usize, container_port: i32) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": format!("p{i}"), "namespace": "ns", "uid": format!("u{i}"), "labels": {"app": "web"}},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "ports": [{"name": "http", "containerPort": container_port}]}]},
            "status": {"phase": "Running", "podIP": format!("10.1.{}.{}", i / 200, i % 200 + 1),
                       "conditions": [{"type": "Ready", "status": "True"}]}}))
        .unwrap()
    }

    fn node() -> Node {
        serde_json::from_value(json!({"metadata": {"name": "n1"}})).unwrap()
    }

    fn run(svc: &Service, pods: &[Pod], existing: Vec<EndpointSlice>) -> Plan {
        let n = node();
        let refs: Vec<&Pod> = pods.iter().collect();
        let (d, errs) = desired(svc, &refs, |name| (name == "n1").then_some(&n), IPV4_);
        assert!(errs.is_empty());
        let input = Input {
            service: svc,
            desired: BTreeMap::from([(IPV4_.to_string(), d)]),
            controller: CONTROLLER_NAME,
            max_endpoints: 100,
            trigger_time: None,
        };
        plan(&input, existing)
    }
    const IPV4_: &str = super::super::endpoint::IPV4;

    /// Gives created slices names, as the API server would.
    fn named(mut slices: Vec<EndpointSlice>) -> Vec<EndpointSlice> {
        for (i, s) in slices.iter_mut().enumerate() {
            s.metadata.name = Some(format!("web-{i}"));
        }
        slices
    }

    #[test]
    fn a_service_without_pods_gets_one_placeholder_slice_and_keeps_it() {
        let s = svc(json!({}));
        let p = run(&s, &[], vec![]);
        assert_eq!((p.create.len(), p.update.len(), p.delete.len()), (1, 0, 0));
        let slice = &p.create[0];
        assert!(slice.endpoints.is_empty());
        assert_eq!(slice.ports.as_deref(), Some(&[][..]));
        assert_eq!(slice.metadata.generate_name.as_deref(), Some("web-"));
        let labels = slice.metadata.labels.clone().unwrap();
        assert_eq!(labels[LABEL_SERVICE_NAME], "web");
        assert_eq!(labels[LABEL_MANAGED_BY], "endpointslice-controller.k8s.io");
        assert_eq!(labels["team"], "a");
        assert!(!labels.contains_key(LABEL_HEADLESS));
        let o = &slice.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (o.kind.as_str(), o.uid.as_str(), o.controller, o.block_owner_deletion),
            ("Service", "svc-uid", Some(true), Some(true))
        );
        // Reconciling again with the placeholder in place changes nothing.
        let p = run(&s, &[], named(p.create));
        assert_eq!((p.create.len(), p.update.len(), p.delete.len()), (0, 0, 0));
    }

    #[test]
    fn endpoints_are_split_at_max_per_slice_and_unchanged_slices_stay() {
        let s = svc(json!({}));
        let pods: Vec<Pod> = (0..250).map(|i| pod(i, 8080)).collect();
        let p = run(&s, &pods, vec![]);
        let mut sizes: Vec<usize> = p.create.iter().map(|s| s.endpoints.len()).collect();
        sizes.sort();
        assert_eq!(sizes, [50, 100, 100]);
        assert_eq!(p.create[0].ports.as_ref().unwrap()[0].port, Some(8080));
        let existing = named(p.create);
        let p = run(&s, &pods, existing.clone());
        assert_eq!((p.create.len(), p.update.len(), p.delete.len()), (0, 0, 0));
        // One more pod fits into the 50-endpoint slice: an update, no create.
        let mut more = pods.clone();
        more.push(pod(250, 8080));
        let p = run(&s, &more, existing);
        assert_eq!((p.create.len(), p.update.len(), p.delete.len()), (0, 1, 0));
        assert_eq!(p.update[0].endpoints.len(), 51);
    }

    #[test]
    fn readiness_changes_update_in_place_and_the_last_pod_leaves_a_placeholder() {
        let s = svc(json!({}));
        let pods = vec![pod(0, 8080), pod(1, 8080)];
        let existing = named(run(&s, &pods, vec![]).create);
        let mut not_ready = pods.clone();
        not_ready[0].status.as_mut().unwrap().conditions.as_mut().unwrap()[0].status = "False".into();
        let p = run(&s, &not_ready, existing.clone());
        assert_eq!((p.create.len(), p.update.len(), p.delete.len()), (0, 1, 0));
        let ep = p.update[0].endpoints.iter().find(|e| e.addresses == ["10.1.0.1"]).unwrap();
        assert_eq!(ep.conditions.as_ref().unwrap().ready, Some(false));
        // No pods left: the slice is reused as the placeholder (an update, not delete + create).
        let p = run(&s, &[], existing);
        assert_eq!((p.create.len(), p.update.len(), p.delete.len()), (0, 1, 0));
        assert!(p.update[0].endpoints.is_empty());
        assert_eq!(p.update[0].metadata.name.as_deref(), Some("web-0"));
    }

    #[test]
    fn pods_resolving_a_named_port_differently_get_separate_slices() {
        let s = svc(json!({}));
        let p = run(&s, &[pod(0, 8080), pod(1, 9090), pod(2, 8080)], vec![]);
        assert_eq!(p.create.len(), 2);
        let mut by_port: Vec<(i32, usize)> =
            p.create.iter().map(|s| (s.ports.as_ref().unwrap()[0].port.unwrap(), s.endpoints.len())).collect();
        by_port.sort();
        assert_eq!(by_port, [(8080, 2), (9090, 1)]);
    }

    #[test]
    fn headless_label_service_labels_and_foreign_slices() {
        let s = svc(json!({"clusterIP": "None"}));
        let p = run(&s, &[pod(0, 8080)], vec![]);
        assert_eq!(p.create[0].metadata.labels.as_ref().unwrap()[LABEL_HEADLESS], "");
        // A Service label change updates the slice's labels.
        let mut existing = named(p.create);
        let mut s2 = s.clone();
        s2.metadata.labels = Some(BTreeMap::from([("team".to_string(), "b".to_string())]));
        let p = run(&s2, &[pod(0, 8080)], existing.clone());
        assert_eq!((p.create.len(), p.update.len()), (0, 1));
        assert_eq!(p.update[0].metadata.labels.as_ref().unwrap()["team"], "b");
        // A slice owned by another Service of the same name is deleted; its
        // endpoints go into a new slice.
        existing[0].metadata.owner_references.as_mut().unwrap()[0].uid = "old-uid".into();
        let p = run(&s, &[pod(0, 8080)], existing);
        assert_eq!((p.create.len(), p.update.len(), p.delete.len()), (1, 0, 1));
    }

    #[test]
    fn nothing_is_created_for_a_service_being_deleted() {
        let mut s = svc(json!({}));
        s.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time("2024-01-01T00:00:00Z".parse().unwrap()));
        let p = run(&s, &[pod(0, 8080)], vec![]);
        assert!(p.create.is_empty());
    }

    #[test]
    fn slices_of_address_types_the_service_lost_are_deleted() {
        let s = svc(json!({}));
        let mut v6 = new_slice(&s, vec![], "IPv6", CONTROLLER_NAME);
        v6.metadata.name = Some("web-v6".into());
        let p = run(&s, &[pod(0, 8080)], vec![v6]);
        assert_eq!(p.delete.len(), 1);
        assert_eq!(p.delete[0].metadata.name.as_deref(), Some("web-v6"));
        assert_eq!(p.create.len(), 1);
    }
}
