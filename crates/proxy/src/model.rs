//! The proxy's in-memory model of Services and EndpointSlices (upstream's
//! `ServiceChangeTracker` / `EndpointsChangeTracker` plus the
//! `ServicePortMap` / `EndpointsMap` they feed), without any I/O: informer
//! events go in through [`Model::apply_service`] / [`Model::delete_service`]
//! / [`Model::apply_slice`] / [`Model::delete_slice`], and every Service
//! whose rules may have changed is remembered until [`Model::take_dirty`].
//!
//! Only IPv4 is modelled (the table is family `ip`): IPv6 cluster IPs and
//! `addressType: IPv6` slices are ignored, as upstream's IPv4 proxier does.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;

/// The label an EndpointSlice names its Service with.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// A Service's namespace and name.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServiceKey {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
}

impl ServiceKey {
    /// A key from its parts.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        ServiceKey { namespace: namespace.into(), name: name.into() }
    }
}

/// An L4 protocol a Service port uses (`TCP` when unset, as defaulting does).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
    /// SCTP.
    Sctp,
}

impl Protocol {
    /// From the API's `TCP`/`UDP`/`SCTP`; anything else is unknown.
    pub fn parse(s: Option<&str>) -> Option<Protocol> {
        match s.unwrap_or("TCP") {
            "TCP" => Some(Protocol::Tcp),
            "UDP" => Some(Protocol::Udp),
            "SCTP" => Some(Protocol::Sctp),
            _ => None,
        }
    }
    /// The nft keyword (`tcp`, `udp`, `sctp`).
    pub fn nft(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
            Protocol::Sctp => "sctp",
        }
    }
}

/// One port of a Service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServicePort {
    /// `name` (empty for a single unnamed port).
    pub name: String,
    /// `protocol`.
    pub protocol: Protocol,
    /// `port`.
    pub port: u16,
    /// `nodePort`, when allocated (NodePort and LoadBalancer Services).
    pub node_port: Option<u16>,
}

/// What the proxier needs of a Service (upstream's `BaseServicePortInfo`,
/// shared by its ports).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ServiceInfo {
    /// `spec.clusterIP` when it is an IPv4 address (None: headless,
    /// ExternalName or IPv6 — then nothing is programmed).
    pub cluster_ip: Option<Ipv4Addr>,
    /// `spec.externalIPs` and `status.loadBalancer.ingress[].ip` (IPv4),
    /// sorted and de-duplicated: treated like upstream's external/LB IPs.
    pub external_ips: Vec<Ipv4Addr>,
    /// The ports.
    pub ports: Vec<ServicePort>,
    /// `externalTrafficPolicy: Local` (only for NodePort/LoadBalancer
    /// Services, as upstream's `ExternalPolicyLocal`).
    pub external_local: bool,
    /// `internalTrafficPolicy: Local`.
    pub internal_local: bool,
    /// `sessionAffinity: ClientIP`: its `timeoutSeconds` (default 10800).
    pub affinity_timeout: Option<u32>,
    /// `metadata.creationTimestamp` in Unix seconds (None when unset):
    /// when two Services claim the same destination, the oldest keeps it
    /// (see [`crate::rules::Claims`]).
    pub created: Option<i64>,
}

impl ServiceInfo {
    /// The proxier's view of `svc`, or None when it gets no rules
    /// (ExternalName, headless `clusterIP: None`, no IPv4 cluster IP).
    pub fn from_service(svc: &Service) -> Option<ServiceInfo> {
        let spec = svc.spec.as_ref()?;
        if spec.type_.as_deref() == Some("ExternalName") {
            return None;
        }
        let cluster_ip: Ipv4Addr = spec.cluster_ip.as_deref()?.parse().ok()?;
        let mut external_ips: Vec<Ipv4Addr> =
            spec.external_ips.iter().flatten().filter_map(|s| s.parse().ok()).collect();
        if spec.type_.as_deref() == Some("LoadBalancer") {
            let ingress = svc.status.as_ref().and_then(|s| s.load_balancer.as_ref()).and_then(|l| l.ingress.as_ref());
            for ing in ingress.into_iter().flatten() {
                // ipMode Proxy: the load balancer proxies, so the node
                // does not capture the address (upstream, KEP-1860).
                if ing.ip_mode.as_deref() == Some("Proxy") {
                    continue;
                }
                if let Some(ip) = ing.ip.as_deref().and_then(|s| s.parse().ok()) {
                    external_ips.push(ip);
                }
            }
        }
        external_ips.sort();
        external_ips.dedup();
        let external_type = matches!(spec.type_.as_deref(), Some("NodePort") | Some("LoadBalancer"));
        let ports = spec
            .ports
            .iter()
            .flatten()
            .filter_map(|p| {
                Some(ServicePort {
                    name: p.name.clone().unwrap_or_default(),
                    protocol: Protocol::parse(p.protocol.as_deref())?,
                    port: u16::try_from(p.port).ok()?,
                    node_port: if external_type {
                        p.node_port.and_then(|n| u16::try_from(n).ok()).filter(|n| *n != 0)
                    } else {
                        None
                    },
                })
            })
            .collect();
        let affinity_timeout = (spec.session_affinity.as_deref() == Some("ClientIP")).then(|| {
            spec.session_affinity_config
                .as_ref()
                .and_then(|c| c.client_ip.as_ref())
                .and_then(|c| c.timeout_seconds)
                .and_then(|t| u32::try_from(t).ok())
                .filter(|t| *t > 0)
                .unwrap_or(10800)
        });
        Some(ServiceInfo {
            cluster_ip: Some(cluster_ip),
            external_ips,
            ports,
            external_local: (external_type || !spec.external_ips.as_deref().unwrap_or_default().is_empty())
                && spec.external_traffic_policy.as_deref() == Some("Local"),
            internal_local: spec.internal_traffic_policy.as_deref() == Some("Local"),
            affinity_timeout,
            created: svc.metadata.creation_timestamp.as_ref().map(|t| t.0.as_second()),
        })
    }
}

/// One endpoint address of a slice, with its conditions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SliceEndpoint {
    /// The IPv4 address (`addresses[0]`).
    pub ip: Ipv4Addr,
    /// `conditions.ready` (unset = true, as the API defines).
    pub ready: bool,
    /// `conditions.serving` (unset = ready).
    pub serving: bool,
    /// `conditions.terminating` (unset = false).
    pub terminating: bool,
    /// `nodeName`.
    pub node_name: Option<String>,
}

/// What the proxier needs of an EndpointSlice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SliceInfo {
    /// The Service it belongs to (its label).
    pub service: ServiceKey,
    /// `ports[]`: (name, protocol, port).
    pub ports: Vec<(String, Protocol, u16)>,
    /// `endpoints[]`.
    pub endpoints: Vec<SliceEndpoint>,
}

impl SliceInfo {
    /// The proxier's view of `slice`, or None for a slice without the
    /// service-name label or of an address type other than IPv4.
    pub fn from_slice(slice: &EndpointSlice) -> Option<SliceInfo> {
        if slice.address_type != "IPv4" {
            return None;
        }
        let svc = slice.metadata.labels.as_ref()?.get(SERVICE_NAME_LABEL)?;
        let ns = slice.metadata.namespace.clone().unwrap_or_default();
        let ports = slice
            .ports
            .iter()
            .flatten()
            .filter_map(|p| {
                Some((
                    p.name.clone().unwrap_or_default(),
                    Protocol::parse(p.protocol.as_deref())?,
                    u16::try_from(p.port?).ok()?,
                ))
            })
            .collect();
        let endpoints = slice
            .endpoints
            .iter()
            .filter_map(|e| {
                let ip: Ipv4Addr = e.addresses.first()?.parse().ok()?;
                let c = e.conditions.as_ref();
                let ready = c.and_then(|c| c.ready).unwrap_or(true);
                Some(SliceEndpoint {
                    ip,
                    ready,
                    serving: c.and_then(|c| c.serving).unwrap_or(ready),
                    terminating: c.and_then(|c| c.terminating).unwrap_or(false),
                    node_name: e.node_name.clone(),
                })
            })
            .collect();
        Some(SliceInfo { service: ServiceKey::new(ns, svc.clone()), ports, endpoints })
    }
}

/// One endpoint of one Service port (upstream's `BaseEndpointInfo`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Endpoint {
    /// Address.
    pub ip: Ipv4Addr,
    /// Target port.
    pub port: u16,
    /// Ready.
    pub ready: bool,
    /// Serving.
    pub serving: bool,
    /// Terminating.
    pub terminating: bool,
    /// On this proxy's node.
    pub local: bool,
}

/// Services and slices, plus the Services changed since the last sync.
#[derive(Debug, Default, Clone)]
pub struct Model {
    services: BTreeMap<ServiceKey, ServiceInfo>,
    /// (namespace, slice name) → slice.
    slices: BTreeMap<(String, String), SliceInfo>,
    /// Service → its slices' names.
    by_service: BTreeMap<ServiceKey, BTreeSet<String>>,
    dirty: BTreeSet<ServiceKey>,
}

impl Model {
    /// An empty model.
    pub fn new() -> Self {
        Model::default()
    }

    /// A Service added or modified.
    pub fn apply_service(&mut self, svc: &Service) {
        let key = ServiceKey::new(
            svc.metadata.namespace.clone().unwrap_or_default(),
            svc.metadata.name.clone().unwrap_or_default(),
        );
        match ServiceInfo::from_service(svc) {
            Some(info) => self.set_service(key, info),
            None => self.remove_service(&key),
        }
    }

    /// A Service deleted.
    pub fn delete_service(&mut self, svc: &Service) {
        let key = ServiceKey::new(
            svc.metadata.namespace.clone().unwrap_or_default(),
            svc.metadata.name.clone().unwrap_or_default(),
        );
        self.remove_service(&key);
    }

    /// Sets a Service's info directly (marks it dirty only if it changed).
    pub fn set_service(&mut self, key: ServiceKey, info: ServiceInfo) {
        if self.services.get(&key) != Some(&info) {
            self.services.insert(key.clone(), info);
            self.dirty.insert(key);
        }
    }

    /// Forgets a Service.
    pub fn remove_service(&mut self, key: &ServiceKey) {
        if self.services.remove(key).is_some() {
            self.dirty.insert(key.clone());
        }
    }

    /// An EndpointSlice added or modified.
    pub fn apply_slice(&mut self, slice: &EndpointSlice) {
        let id =
            (slice.metadata.namespace.clone().unwrap_or_default(), slice.metadata.name.clone().unwrap_or_default());
        match SliceInfo::from_slice(slice) {
            Some(info) => self.set_slice(id.0, id.1, info),
            None => self.remove_slice(&id.0, &id.1),
        }
    }

    /// An EndpointSlice deleted.
    pub fn delete_slice(&mut self, slice: &EndpointSlice) {
        self.remove_slice(
            slice.metadata.namespace.as_deref().unwrap_or_default(),
            slice.metadata.name.as_deref().unwrap_or_default(),
        );
    }

    /// Sets a slice directly.
    pub fn set_slice(&mut self, namespace: String, name: String, info: SliceInfo) {
        let id = (namespace, name);
        if self.slices.get(&id) == Some(&info) {
            return;
        }
        if let Some(old) = self.slices.get(&id) {
            if old.service != info.service {
                let old = old.service.clone();
                self.unlink(&old, &id.1);
            }
        }
        self.by_service.entry(info.service.clone()).or_default().insert(id.1.clone());
        self.dirty.insert(info.service.clone());
        self.slices.insert(id, info);
    }

    /// Forgets a slice.
    pub fn remove_slice(&mut self, namespace: &str, name: &str) {
        if let Some(old) = self.slices.remove(&(namespace.to_string(), name.to_string())) {
            self.unlink(&old.service, name);
        }
    }

    fn unlink(&mut self, svc: &ServiceKey, slice: &str) {
        if let Some(set) = self.by_service.get_mut(svc) {
            set.remove(slice);
            if set.is_empty() {
                self.by_service.remove(svc);
            }
        }
        self.dirty.insert(svc.clone());
    }

    /// The keys of all Services.
    pub fn service_keys(&self) -> Vec<ServiceKey> {
        self.services.keys().cloned().collect()
    }

    /// The (namespace, name) of all slices.
    pub fn slice_ids(&self) -> Vec<(String, String)> {
        self.slices.keys().cloned().collect()
    }

    /// Marks every Service changed.
    pub fn mark_all_dirty(&mut self) {
        self.dirty.extend(self.services.keys().cloned());
    }

    /// The Services changed since the last call, emptying that set.
    pub fn take_dirty(&mut self) -> BTreeSet<ServiceKey> {
        std::mem::take(&mut self.dirty)
    }

    /// Whether anything changed since the last [`Model::take_dirty`].
    pub fn has_dirty(&self) -> bool {
        !self.dirty.is_empty()
    }

    /// All Services.
    pub fn services(&self) -> impl Iterator<Item = (&ServiceKey, &ServiceInfo)> {
        self.services.iter()
    }

    /// One Service.
    pub fn service(&self, key: &ServiceKey) -> Option<&ServiceInfo> {
        self.services.get(key)
    }

    /// The order in which Services claim destinations: oldest
    /// `creationTimestamp` first (unset ones last), then namespace/name.
    pub fn priority(&self, key: &ServiceKey) -> (i64, ServiceKey) {
        (self.services.get(key).and_then(|i| i.created).unwrap_or(i64::MAX), key.clone())
    }

    /// Number of Services with rules.
    pub fn service_count(&self) -> usize {
        self.services.len()
    }

    /// The endpoints of `port` of Service `key`: the endpoints of all its
    /// slices whose port of the same name and protocol exists,
    /// de-duplicated by address and port (upstream merges slices so),
    /// sorted. `node` decides [`Endpoint::local`].
    pub fn endpoints(&self, key: &ServiceKey, port: &ServicePort, node: &str) -> Vec<Endpoint> {
        let mut out: BTreeMap<(Ipv4Addr, u16), Endpoint> = BTreeMap::new();
        for slice in self.by_service.get(key).into_iter().flatten() {
            let Some(info) = self.slices.get(&(key.namespace.clone(), slice.clone())) else { continue };
            let Some(&(_, _, target)) = info.ports.iter().find(|(n, p, _)| *n == port.name && *p == port.protocol)
            else {
                continue;
            };
            for e in &info.endpoints {
                out.entry((e.ip, target)).or_insert(Endpoint {
                    ip: e.ip,
                    port: target,
                    ready: e.ready,
                    serving: e.serving,
                    terminating: e.terminating,
                    local: e.node_name.as_deref() == Some(node),
                });
            }
        }
        out.into_values().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ServicePort as ApiPort, ServiceSpec};
    use k8s_openapi::api::discovery::v1::{Endpoint as ApiEp, EndpointConditions, EndpointPort};
    use kube::api::ObjectMeta;

    fn svc(ns: &str, name: &str, spec: ServiceSpec) -> Service {
        Service {
            metadata: ObjectMeta { namespace: Some(ns.into()), name: Some(name.into()), ..Default::default() },
            spec: Some(spec),
            status: None,
        }
    }

    fn slice(ns: &str, name: &str, svc: &str, port: i32, eps: &[(&str, bool)]) -> EndpointSlice {
        EndpointSlice {
            metadata: ObjectMeta {
                namespace: Some(ns.into()),
                name: Some(name.into()),
                labels: Some([(SERVICE_NAME_LABEL.to_string(), svc.to_string())].into()),
                ..Default::default()
            },
            address_type: "IPv4".into(),
            ports: Some(vec![EndpointPort {
                name: Some("http".into()),
                port: Some(port),
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
            endpoints: eps
                .iter()
                .map(|(ip, ready)| ApiEp {
                    addresses: vec![ip.to_string()],
                    conditions: Some(EndpointConditions { ready: Some(*ready), ..Default::default() }),
                    node_name: Some("n1".into()),
                    ..Default::default()
                })
                .collect(),
        }
    }

    fn web() -> Service {
        svc(
            "default",
            "web",
            ServiceSpec {
                cluster_ip: Some("10.43.0.5".into()),
                ports: Some(vec![ApiPort { name: Some("http".into()), port: 80, ..Default::default() }]),
                ..Default::default()
            },
        )
    }

    #[test]
    fn headless_and_external_name_get_no_rules() {
        let mut m = Model::new();
        m.apply_service(&svc("d", "h", ServiceSpec { cluster_ip: Some("None".into()), ..Default::default() }));
        m.apply_service(&svc(
            "d",
            "e",
            ServiceSpec { type_: Some("ExternalName".into()), external_name: Some("x.y".into()), ..Default::default() },
        ));
        assert_eq!(m.service_count(), 0);
        assert!(!m.has_dirty());
    }

    #[test]
    fn slices_merge_dedup_and_follow_add_modify_delete() {
        let mut m = Model::new();
        m.apply_service(&web());
        let key = ServiceKey::new("default", "web");
        assert_eq!(m.take_dirty(), [key.clone()].into());
        m.apply_slice(&slice("default", "web-a", "web", 8080, &[("10.42.0.2", true), ("10.42.0.3", false)]));
        m.apply_slice(&slice("default", "web-b", "web", 8080, &[("10.42.0.3", false), ("10.42.0.4", true)]));
        assert_eq!(m.take_dirty(), [key.clone()].into());
        let port = m.service(&key).unwrap().ports[0].clone();
        let eps = m.endpoints(&key, &port, "n1");
        assert_eq!(
            eps.iter().map(|e| (e.ip.to_string(), e.port, e.ready)).collect::<Vec<_>>(),
            vec![
                ("10.42.0.2".to_string(), 8080, true),
                ("10.42.0.3".to_string(), 8080, false),
                ("10.42.0.4".to_string(), 8080, true),
            ]
        );
        assert!(eps.iter().all(|e| e.local));
        // Re-applying the same slice changes nothing.
        m.apply_slice(&slice("default", "web-a", "web", 8080, &[("10.42.0.2", true), ("10.42.0.3", false)]));
        assert!(!m.has_dirty());
        m.delete_slice(&slice("default", "web-b", "web", 0, &[]));
        assert_eq!(m.take_dirty(), [key.clone()].into());
        assert_eq!(m.endpoints(&key, &port, "n2").len(), 2);
        assert!(m.endpoints(&key, &port, "n2").iter().all(|e| !e.local));
        m.delete_service(&web());
        assert_eq!(m.take_dirty(), [key].into());
        assert_eq!(m.service_count(), 0);
    }

    #[test]
    fn service_info_defaults_affinity_and_lb_ips() {
        let mut s = web();
        let spec = s.spec.as_mut().unwrap();
        spec.type_ = Some("LoadBalancer".into());
        spec.session_affinity = Some("ClientIP".into());
        spec.external_traffic_policy = Some("Local".into());
        spec.ports.as_mut().unwrap()[0].node_port = Some(30080);
        s.status = Some(k8s_openapi::api::core::v1::ServiceStatus {
            load_balancer: Some(k8s_openapi::api::core::v1::LoadBalancerStatus {
                ingress: Some(vec![k8s_openapi::api::core::v1::LoadBalancerIngress {
                    ip: Some("192.0.2.7".into()),
                    ..Default::default()
                }]),
            }),
            ..Default::default()
        });
        let info = ServiceInfo::from_service(&s).unwrap();
        assert_eq!(info.affinity_timeout, Some(10800));
        assert_eq!(info.external_ips, vec!["192.0.2.7".parse::<Ipv4Addr>().unwrap()]);
        assert!(info.external_local);
        assert_eq!(info.ports[0].node_port, Some(30080));
        // A ClusterIP Service ignores a stray nodePort and externalTrafficPolicy.
        let mut c = web();
        c.spec.as_mut().unwrap().external_traffic_policy = Some("Local".into());
        let info = ServiceInfo::from_service(&c).unwrap();
        assert!(!info.external_local);
        assert_eq!(info.ports[0].protocol, Protocol::Tcp);
    }
}
