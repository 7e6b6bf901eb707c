//! The in-memory model of the cluster (Services, EndpointSlices, Namespaces)
//! and the name index built from it on every change.
//!
//! The index precomputes, for every name CoreDNS's kubernetes plugin would
//! answer under `<domain>`, the records of each type, so that a query is one
//! hash lookup ([`crate::lookup`]). Names derived per Service (CoreDNS
//! `findServices`):
//!
//! - `<svc>.<ns>.svc.<domain>`: ClusterIP services → their ClusterIPs (one
//!   item per port × ClusterIP); headless (`clusterIP: None`) → the ready
//!   endpoint addresses (one item per address × endpoint port);
//!   ExternalName → a CNAME to `spec.externalName` (only if it is a name, not
//!   an IP address);
//! - `_<port>._<proto>.<svc>.<ns>.svc.<domain>` for every named port (the
//!   items whose port name and protocol match);
//! - `<endpoint>.<svc>.<ns>.svc.<domain>` for every ready endpoint address
//!   (ClusterIP and headless services alike), where `<endpoint>` is the
//!   endpoint's `hostname` or else its address with `.`/`:` replaced by `-`.
//!
//! An endpoint is "ready" when `conditions.ready` is true or unset (CoreDNS
//! `endpointsliceReady`); for `publishNotReadyAddresses` services every
//! endpoint counts. Slices of address type FQDN are ignored.
//!
//! PTR: a ClusterIP maps to its service name; otherwise an endpoint address
//! maps to `<hostname>.<svc>.<ns>.svc.<domain>` for endpoints with a hostname
//! (CoreDNS `serviceRecordForIP`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::IpAddr;
use std::sync::Arc;

use hickory_server::proto::rr::rdata::{A, AAAA, CNAME, NS, SOA, SRV, TXT};
use hickory_server::proto::rr::{Name, RData, Record};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;

/// TTL of every record (seconds), as k3s's Corefile (`ttl 5`); also the SOA
/// minimum (negative-caching TTL).
pub const TTL: u32 = 5;
/// The TTL of `dns-version.<domain>` TXT (CoreDNS: 28800 s).
pub const VERSION_TTL: u32 = 28800;
/// The Kubernetes DNS schema version CoreDNS answers at `dns-version.<domain>`.
pub const DNS_SCHEMA_VERSION: &str = "1.1.0";

/// The cluster state the DNS answers from: what the informers hold.
///
/// Tests build it directly; [`crate::run`] fills it from watches.
#[derive(Clone, Debug, Default)]
pub struct Model {
    /// Services by `namespace/name`.
    pub services: BTreeMap<String, Arc<Service>>,
    /// EndpointSlices by `namespace/name`.
    pub slices: BTreeMap<String, Arc<EndpointSlice>>,
    /// Names of existing Namespaces (a name under a missing namespace is NXDOMAIN).
    pub namespaces: HashSet<String>,
    /// Whether every informer has listed once. Before that, names that would
    /// be NXDOMAIN answer SERVFAIL (CoreDNS: `!APIConn.HasSynced()`).
    pub synced: bool,
}

/// Static facts about this DNS server.
#[derive(Clone, Debug)]
pub struct Zone {
    /// The cluster domain without trailing dot, e.g. `cluster.local`.
    pub domain: String,
    /// The addresses `ns.dns.<domain>` resolves to (the kube-dns ClusterIP).
    pub dns_ips: Vec<IpAddr>,
}

/// Records of one name, per type, plus whether the name "has items" (CoreDNS
/// `Records()` returned something — decides NODATA vs NXDOMAIN for TXT).
#[derive(Clone, Debug, Default)]
pub(crate) struct Node {
    pub a: Vec<Record>,
    pub aaaa: Vec<Record>,
    pub srv: Vec<Record>,
    /// Additional-section address records for the SRV targets.
    pub srv_extra: Vec<Record>,
    /// ExternalName: the CNAME record and its target.
    pub cname: Option<(Record, Name)>,
    pub has_items: bool,
}

/// The precomputed answers; immutable, swapped whole on every change.
#[derive(Debug)]
pub struct Index {
    pub(crate) domain: String,
    pub(crate) synced: bool,
    pub(crate) namespaces: HashSet<String>,
    /// Keyed by the lower-case name without trailing dot.
    pub(crate) nodes: HashMap<String, Node>,
    /// PTR targets by address.
    pub(crate) reverse: HashMap<IpAddr, Vec<Name>>,
    pub(crate) soa: Record,
    pub(crate) ns: Record,
    pub(crate) ns_glue: Vec<Record>,
    pub(crate) version: Record,
}

fn name(s: &str) -> Name {
    let mut n = Name::from_ascii(s).unwrap_or_else(|_| Name::root());
    n.set_fqdn(true);
    n
}

fn addr_record(owner: &Name, ip: IpAddr) -> Record {
    let data = match ip {
        IpAddr::V4(v4) => RData::A(A(v4)),
        IpAddr::V6(v6) => RData::AAAA(AAAA(v6)),
    };
    Record::from_rdata(owner.clone(), TTL, data)
}

/// CoreDNS `endpointHostname`: the hostname, or the address with `.` and `:`
/// replaced by `-` (lower-cased).
pub fn endpoint_hostname(hostname: Option<&str>, ip: &str) -> String {
    match hostname {
        Some(h) if !h.is_empty() => h.to_ascii_lowercase(),
        _ => ip.replace(['.', ':'], "-").to_ascii_lowercase(),
    }
}

/// One CoreDNS `msg.Service` item: an address, a port (`None` = the
/// "no ports" sentinel, which yields address records but no SRV) and the
/// SRV target name.
#[derive(Clone)]
struct Item {
    ip: IpAddr,
    port: Option<u16>,
    target: String,
}

/// Builds a node from its items (CoreDNS `plugin.A`, `plugin.AAAA`, `plugin.SRV`).
fn node_from_items(owner: &str, items: &[Item]) -> Node {
    let owner_name = name(owner);
    let mut node = Node { has_items: !items.is_empty(), ..Default::default() };
    let mut seen_ip = HashSet::new();
    for it in items {
        if seen_ip.insert(it.ip) {
            match it.ip {
                IpAddr::V4(_) => node.a.push(addr_record(&owner_name, it.ip)),
                IpAddr::V6(_) => node.aaaa.push(addr_record(&owner_name, it.ip)),
            }
        }
    }
    // SRV: all items share priority 0; weight = floor(100 / n) with n the
    // number of items (at least 1); duplicates (target, port) dropped.
    let n = items.len().max(1);
    let weight = ((100.0 / n as f64).floor() as u16).max(1);
    let mut seen_srv = HashSet::new();
    let mut seen_extra = HashSet::new();
    for it in items {
        let Some(port) = it.port else { continue };
        let target = name(&it.target);
        if seen_srv.insert((it.target.clone(), port)) {
            node.srv.push(Record::from_rdata(
                owner_name.clone(),
                TTL,
                RData::SRV(SRV::new(0, weight, port, target.clone())),
            ));
        }
        if seen_extra.insert((it.target.clone(), it.ip)) {
            node.srv_extra.push(addr_record(&target, it.ip));
        }
    }
    node
}

struct EndpointAddr {
    ip: IpAddr,
    label: String,
    has_hostname: bool,
    /// (port name, protocol lower-case, port); `None` port = sentinel.
    ports: Vec<(String, String, Option<u16>)>,
}

impl Index {
    /// Builds the index from the model. Pure; cost is linear in the model.
    pub fn build(zone: &Zone, model: &Model) -> Index {
        let domain = zone.domain.trim_end_matches('.').to_ascii_lowercase();
        let domain_name = name(&domain);
        let mut nodes: HashMap<String, Node> = HashMap::new();
        let mut reverse: HashMap<IpAddr, Vec<Name>> = HashMap::new();
        let mut endpoint_reverse: HashMap<IpAddr, Vec<Name>> = HashMap::new();

        // Ready endpoint addresses by namespace/service.
        let mut endpoints: HashMap<(String, String), Vec<EndpointAddr>> = HashMap::new();
        for slice in model.slices.values() {
            if slice.address_type == "FQDN" {
                continue;
            }
            let ns = slice.metadata.namespace.clone().unwrap_or_default();
            let Some(svc) = slice.metadata.labels.as_ref().and_then(|l| l.get("kubernetes.io/service-name")) else {
                continue;
            };
            let publish_all = model
                .services
                .get(&format!("{ns}/{svc}"))
                .and_then(|s| s.spec.as_ref())
                .and_then(|s| s.publish_not_ready_addresses)
                .unwrap_or(false);
            let ports: Vec<(String, String, Option<u16>)> = match &slice.ports {
                Some(p) if !p.is_empty() => p
                    .iter()
                    .map(|p| {
                        (
                            p.name.clone().unwrap_or_default().to_ascii_lowercase(),
                            p.protocol.clone().unwrap_or_else(|| "TCP".into()).to_ascii_lowercase(),
                            p.port.and_then(|p| u16::try_from(p).ok()),
                        )
                    })
                    .collect(),
                _ => vec![(String::new(), String::new(), None)],
            };
            let list = endpoints.entry((ns.clone(), svc.to_ascii_lowercase())).or_default();
            for ep in &slice.endpoints {
                let ready = ep.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true);
                if !ready && !publish_all {
                    continue;
                }
                for a in &ep.addresses {
                    let Ok(ip) = a.parse::<IpAddr>() else { continue };
                    list.push(EndpointAddr {
                        ip,
                        label: endpoint_hostname(ep.hostname.as_deref(), a),
                        has_hostname: ep.hostname.as_deref().is_some_and(|h| !h.is_empty()),
                        ports: ports.clone(),
                    });
                }
            }
        }

        for svc in model.services.values() {
            let (Some(ns), Some(svc_name)) = (&svc.metadata.namespace, &svc.metadata.name) else { continue };
            let Some(spec) = &svc.spec else { continue };
            // CoreDNS answers nothing under a namespace that does not exist.
            if !model.namespaces.contains(ns) {
                continue;
            }
            let ns = ns.to_ascii_lowercase();
            let svc_name = svc_name.to_ascii_lowercase();
            let base = format!("{svc_name}.{ns}.svc.{domain}");
            let base_name = name(&base);

            if spec.type_.as_deref() == Some("ExternalName") {
                let target = spec.external_name.clone().unwrap_or_default();
                if target.is_empty() || target.parse::<IpAddr>().is_ok() {
                    continue;
                }
                let target = name(&target);
                let rec = Record::from_rdata(base_name.clone(), TTL, RData::CNAME(CNAME(target.clone())));
                nodes.insert(base, Node { cname: Some((rec, target)), has_items: true, ..Default::default() });
                continue;
            }

            let eps = endpoints.get(&(ns.clone(), svc_name.clone()));
            let headless = spec.cluster_ip.as_deref() == Some("None");
            let svc_ports: Vec<(String, String, u16)> = spec
                .ports
                .iter()
                .flatten()
                .filter_map(|p| {
                    Some((
                        p.name.clone().unwrap_or_default().to_ascii_lowercase(),
                        p.protocol.clone().unwrap_or_else(|| "TCP".into()).to_ascii_lowercase(),
                        u16::try_from(p.port).ok()?,
                    ))
                })
                .collect();

            // (port name, protocol) keys and their items, "*" collecting all.
            let mut by_port: BTreeMap<(String, String), Vec<Item>> = BTreeMap::new();
            let mut all: Vec<Item> = Vec::new();
            if headless {
                for ep in eps.into_iter().flatten() {
                    let target = format!("{}.{base}", ep.label);
                    for (pname, proto, port) in &ep.ports {
                        let it = Item { ip: ep.ip, port: *port, target: target.clone() };
                        if !pname.is_empty() && port.is_some() {
                            by_port.entry((pname.clone(), proto.clone())).or_default().push(it.clone());
                        }
                        all.push(it);
                    }
                }
            } else {
                let ips: Vec<IpAddr> = match &spec.cluster_ips {
                    Some(ips) if !ips.is_empty() => ips.iter().filter_map(|i| i.parse().ok()).collect(),
                    _ => spec.cluster_ip.iter().filter_map(|i| i.parse().ok()).collect(),
                };
                for (pname, proto, port) in &svc_ports {
                    for ip in &ips {
                        let it = Item { ip: *ip, port: Some(*port), target: base.clone() };
                        if !pname.is_empty() {
                            by_port.entry((pname.clone(), proto.clone())).or_default().push(it.clone());
                        }
                        all.push(it);
                    }
                    if !pname.is_empty() {
                        // A matching port with no ClusterIP still makes the name exist.
                        by_port.entry((pname.clone(), proto.clone())).or_default();
                    }
                }
                for ip in &ips {
                    reverse.entry(*ip).or_default().push(base_name.clone());
                }
                // ClusterIP service with ports: the name exists even without addresses.
                if !svc_ports.is_empty() {
                    let mut node = node_from_items(&base, &all);
                    node.has_items = !all.is_empty();
                    nodes.insert(base.clone(), node);
                }
            }
            if headless && !all.is_empty() {
                nodes.insert(base.clone(), node_from_items(&base, &all));
            }
            for ((pname, proto), items) in &by_port {
                let key = format!("_{pname}._{proto}.{base}");
                if headless && items.is_empty() {
                    continue;
                }
                let mut node = node_from_items(&key, items);
                node.has_items = !items.is_empty();
                nodes.insert(key, node);
            }
            // Endpoint names, for every service kind but ExternalName.
            let mut per_ep: BTreeMap<String, Vec<Item>> = BTreeMap::new();
            for ep in eps.into_iter().flatten() {
                let key = format!("{}.{base}", ep.label);
                for (_, _, port) in &ep.ports {
                    per_ep.entry(key.clone()).or_default().push(Item { ip: ep.ip, port: *port, target: key.clone() });
                }
                if ep.has_hostname {
                    endpoint_reverse.entry(ep.ip).or_default().push(name(&key));
                }
            }
            for (key, items) in per_ep {
                let node = node_from_items(&key, &items);
                nodes.insert(key, node);
            }
        }
        // A ClusterIP wins over endpoint hostnames for PTR; one PTR per ClusterIP.
        for names in reverse.values_mut() {
            names.sort_by_key(|n| n.to_ascii());
            names.truncate(1);
        }
        for (ip, mut names) in endpoint_reverse {
            reverse.entry(ip).or_insert_with(|| {
                names.sort_by_key(|n| n.to_ascii());
                names.dedup();
                names
            });
        }

        let ns_name = name(&format!("ns.dns.{domain}"));
        let soa = Record::from_rdata(
            domain_name.clone(),
            TTL,
            RData::SOA(SOA::new(
                ns_name.clone(),
                name(&format!("hostmaster.{domain}")),
                serial(),
                7200,
                1800,
                86400,
                TTL,
            )),
        );
        let ns = Record::from_rdata(domain_name.clone(), TTL, RData::NS(NS(ns_name.clone())));
        let ns_glue = zone.dns_ips.iter().map(|ip| addr_record(&ns_name, *ip)).collect();
        let version = Record::from_rdata(
            name(&format!("dns-version.{domain}")),
            VERSION_TTL,
            RData::TXT(TXT::new(vec![DNS_SCHEMA_VERSION.into()])),
        );
        Index {
            domain,
            synced: model.synced,
            namespaces: model.namespaces.iter().map(|n| n.to_ascii_lowercase()).collect(),
            nodes,
            reverse,
            soa,
            ns,
            ns_glue,
            version,
        }
    }

    /// Number of names indexed (for logs and benchmarks).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether no name is indexed.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

/// The SOA serial: seconds since the epoch at build time (CoreDNS uses the
/// time of the last change too).
fn serial() -> u32 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as u32).unwrap_or(1)
}
