//! The pure part: from NetworkPolicies, Pods and Namespaces to the nft
//! ruleset of one node (no I/O).
//!
//! Semantics follow the Kubernetes NetworkPolicy API (networking.k8s.io/v1):
//!
//! - a policy selects the pods of its own namespace matching
//!   `spec.podSelector` (empty selector: all of them);
//! - `spec.policyTypes` absent defaults to `[Ingress]`, plus `Egress` when
//!   `spec.egress` has at least one rule;
//! - a pod selected by at least one policy with a given type is isolated for
//!   that direction; traffic is then allowed if ANY rule of ANY policy
//!   selecting the pod (for that direction) allows it; a policy with that
//!   type and no rules allows nothing (deny all);
//! - a rule's `from`/`to` absent or empty allows all peers, `ports` absent or
//!   empty allows all ports; a peer is `podSelector` (pods of the policy's
//!   namespace), `namespaceSelector` (all pods of matching namespaces), both
//!   in one peer (pods matching the pod selector IN namespaces matching the
//!   namespace selector: AND), or `ipBlock` (`cidr` minus `except`);
//! - a port is a number (plus `endPort`: the inclusive range), or a name,
//!   resolved against the destination pod's `containerPorts` (ingress: the
//!   policed pod; egress: each peer pod) with the same protocol; protocol
//!   defaults to TCP; a port entry without `port` means all ports of its
//!   protocol; a name no destination defines allows nothing;
//! - host-network pods are neither policed nor peers (their address is the
//!   node's); pods without an IP or in phase Succeeded/Failed are skipped.
//!
//! Replies of allowed connections are accepted by conntrack before any
//! per-pod chain runs (see [`Ruleset::render`]).

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::api::networking::v1::{NetworkPolicy, NetworkPolicyPeer, NetworkPolicyPort};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// A transport protocol a NetworkPolicy port names (`protocol`, default TCP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    Tcp,
    Udp,
    Sctp,
}

impl Protocol {
    /// Parses the API spelling (`TCP`, `UDP`, `SCTP`); `None` for others.
    pub fn parse(s: &str) -> Option<Protocol> {
        match s {
            "TCP" => Some(Protocol::Tcp),
            "UDP" => Some(Protocol::Udp),
            "SCTP" => Some(Protocol::Sctp),
            _ => None,
        }
    }

    fn nft(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
            Protocol::Sctp => "sctp",
        }
    }
}

/// Destination ports `first..=last` of one protocol (a whole protocol is
/// `0..=65535`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortRange {
    pub protocol: Protocol,
    pub first: u16,
    pub last: u16,
}

/// An IP prefix, normalized to its network address (`10.1.2.3/8` is
/// `10.0.0.0/8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cidr {
    pub addr: IpAddr,
    pub prefix: u8,
}

impl Cidr {
    /// Parses `addr/prefix` (IPv4 or IPv6); a bare address is a host prefix.
    pub fn parse(s: &str) -> Option<Cidr> {
        let (a, p) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = a.trim().parse().ok()?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match p {
            Some(p) => p.trim().parse::<u8>().ok().filter(|p| *p <= max)?,
            None => max,
        };
        let addr = match addr {
            IpAddr::V4(a) => {
                let mask = if prefix == 0 { 0 } else { u32::MAX << (32 - prefix) };
                IpAddr::V4((u32::from(a) & mask).into())
            }
            IpAddr::V6(a) => {
                let mask = if prefix == 0 { 0 } else { u128::MAX << (128 - prefix) };
                IpAddr::V6((u128::from(a) & mask).into())
            }
        };
        Some(Cidr { addr, prefix })
    }

    /// Whether `ip` lies in the prefix (false across families).
    pub fn contains(&self, ip: &IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                let mask = if self.prefix == 0 { 0 } else { u32::MAX << (32 - self.prefix) };
                u32::from(*a) & mask == u32::from(n)
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                let mask = if self.prefix == 0 { 0 } else { u128::MAX << (128 - self.prefix) };
                u128::from(*a) & mask == u128::from(n)
            }
            _ => false,
        }
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// The remote end an [`Allow`] admits.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Peer {
    /// Any address (`from`/`to` empty).
    Any,
    /// Exactly these addresses (pods a selector peer matched).
    Addrs(BTreeSet<IpAddr>),
    /// An `ipBlock`: `cidr` minus the `except` prefixes (same family).
    Block { cidr: Cidr, except: Vec<Cidr> },
}

/// One allowed (peer, ports) combination of a per-pod chain.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Allow {
    pub peer: Peer,
    /// `None`: every port and protocol (ICMP included); `Some`: only these.
    pub ports: Option<BTreeSet<PortRange>>,
}

/// The policing of one local pod: `None` for a direction it is not isolated
/// in; `Some(allows)` otherwise (empty: deny all).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodRules {
    pub namespace: String,
    pub name: String,
    pub ips: Vec<IpAddr>,
    pub ingress: Option<Vec<Allow>>,
    pub egress: Option<Vec<Allow>>,
}

/// The whole table for one node: the local pods isolated in at least one
/// direction, sorted by namespace and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ruleset {
    pub table: String,
    pub pods: Vec<PodRules>,
}

/// Whether `labels` satisfy a `metav1.LabelSelector` (`matchLabels` and all
/// `matchExpressions`: In, NotIn, Exists, DoesNotExist). An empty selector
/// matches everything; an unknown operator matches nothing.
pub fn selector_matches(sel: &LabelSelector, labels: Option<&BTreeMap<String, String>>) -> bool {
    let empty = BTreeMap::new();
    let labels = labels.unwrap_or(&empty);
    if let Some(ml) = &sel.match_labels {
        if ml.iter().any(|(k, v)| labels.get(k) != Some(v)) {
            return false;
        }
    }
    for e in sel.match_expressions.iter().flatten() {
        let values = e.values.as_deref().unwrap_or(&[]);
        let got = labels.get(&e.key);
        let ok = match e.operator.as_str() {
            "In" => got.is_some_and(|v| values.contains(v)),
            "NotIn" => got.is_none_or(|v| !values.contains(v)),
            "Exists" => got.is_some(),
            "DoesNotExist" => got.is_none(),
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    true
}

/// The pod's IPs (`status.podIPs`, else `status.podIP`), deduplicated.
pub fn pod_ips(pod: &Pod) -> Vec<IpAddr> {
    let Some(status) = &pod.status else { return Vec::new() };
    let mut out: Vec<IpAddr> = Vec::new();
    let listed = status.pod_ips.iter().flatten().map(|p| p.ip.as_str());
    for s in listed.chain(status.pod_ip.as_deref()) {
        if let Ok(ip) = s.parse() {
            if !out.contains(&ip) {
                out.push(ip);
            }
        }
    }
    out
}

/// Whether the pod takes part in policy at all (as policed pod or peer):
/// not host-network, not finished, and has an IP.
fn is_pod_network(pod: &Pod) -> bool {
    let host = pod.spec.as_ref().and_then(|s| s.host_network).unwrap_or(false);
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("");
    !host && phase != "Succeeded" && phase != "Failed" && !pod_ips(pod).is_empty()
}

fn ns_of<K: kube::Resource>(o: &K) -> &str {
    o.meta().namespace.as_deref().unwrap_or("")
}

fn name_of<K: kube::Resource>(o: &K) -> &str {
    o.meta().name.as_deref().unwrap_or("")
}

/// The policy types in effect (`policyTypes`, or its default: Ingress, plus
/// Egress when there are egress rules) as (ingress, egress).
pub fn policy_types(np: &NetworkPolicy) -> (bool, bool) {
    let Some(spec) = &np.spec else { return (true, false) };
    match &spec.policy_types {
        Some(t) if !t.is_empty() => (t.iter().any(|t| t == "Ingress"), t.iter().any(|t| t == "Egress")),
        _ => (true, spec.egress.as_ref().is_some_and(|e| !e.is_empty())),
    }
}

/// The numeric port ranges and the named ports of a rule's `ports`.
fn split_ports(ports: &[NetworkPolicyPort]) -> (BTreeSet<PortRange>, Vec<(Protocol, String)>) {
    let mut numeric = BTreeSet::new();
    let mut named = Vec::new();
    for p in ports {
        let Some(protocol) = Protocol::parse(p.protocol.as_deref().unwrap_or("TCP")) else { continue };
        match &p.port {
            None => {
                numeric.insert(PortRange { protocol, first: 0, last: 65535 });
            }
            Some(IntOrString::Int(n)) => {
                let Ok(first) = u16::try_from(*n) else { continue };
                let last = match p.end_port {
                    Some(e) => match u16::try_from(e) {
                        Ok(e) if e >= first => e,
                        _ => continue,
                    },
                    None => first,
                };
                numeric.insert(PortRange { protocol, first, last });
            }
            Some(IntOrString::String(s)) => match s.parse::<u16>() {
                Ok(n) => {
                    numeric.insert(PortRange { protocol, first: n, last: n });
                }
                Err(_) => named.push((protocol, s.clone())),
            },
        }
    }
    (numeric, named)
}

/// Resolves named ports against a pod's container ports (containers and
/// init containers, matching name and protocol).
fn resolve_named(pod: &Pod, named: &[(Protocol, String)]) -> BTreeSet<PortRange> {
    let mut out = BTreeSet::new();
    let Some(spec) = &pod.spec else { return out };
    let containers = spec.containers.iter().chain(spec.init_containers.iter().flatten());
    for cp in containers.flat_map(|c| c.ports.iter().flatten()) {
        let Some(name) = &cp.name else { continue };
        let proto = Protocol::parse(cp.protocol.as_deref().unwrap_or("TCP"));
        for (p, n) in named {
            if n == name && Some(*p) == proto {
                if let Ok(port) = u16::try_from(cp.container_port) {
                    out.insert(PortRange { protocol: *p, first: port, last: port });
                }
            }
        }
    }
    out
}

/// What a `from`/`to` list designates: `None` = any peer; otherwise the
/// matching pods and the ipBlocks.
struct Peers<'a> {
    pods: Vec<&'a Pod>,
    blocks: Vec<(Cidr, Vec<Cidr>)>,
}

struct World<'a> {
    pods: Vec<&'a Pod>,
    ns_labels: BTreeMap<&'a str, Option<&'a BTreeMap<String, String>>>,
}

impl<'a> World<'a> {
    fn peers(&self, policy_ns: &str, list: &[NetworkPolicyPeer]) -> Peers<'a> {
        let mut pods: Vec<&'a Pod> = Vec::new();
        let mut blocks = Vec::new();
        for peer in list {
            if let Some(b) = &peer.ip_block {
                if let Some(cidr) = Cidr::parse(&b.cidr) {
                    let except = b
                        .except
                        .iter()
                        .flatten()
                        .filter_map(|e| Cidr::parse(e))
                        .filter(|e| e.addr.is_ipv4() == cidr.addr.is_ipv4())
                        .collect();
                    blocks.push((cidr, except));
                }
                continue;
            }
            if peer.pod_selector.is_none() && peer.namespace_selector.is_none() {
                continue;
            }
            for pod in &self.pods {
                let ns = ns_of(*pod);
                let ns_ok = match &peer.namespace_selector {
                    Some(sel) => {
                        // A namespace the informer has not seen has no labels to match.
                        self.ns_labels.get(ns).is_some_and(|l| selector_matches(sel, *l))
                    }
                    None => ns == policy_ns,
                };
                let pod_ok = match &peer.pod_selector {
                    Some(sel) => selector_matches(sel, pod.metadata.labels.as_ref()),
                    None => true,
                };
                if ns_ok && pod_ok && !pods.iter().any(|p| std::ptr::eq(*p, *pod)) {
                    pods.push(pod);
                }
            }
        }
        Peers { pods, blocks }
    }

    /// The allows of one rule: `list` its from/to, `ports` its ports;
    /// `dest` is the policed pod for ingress (named ports resolve on it), or
    /// `None` for egress (named ports resolve on each peer pod).
    fn rule(
        &self,
        policy_ns: &str,
        list: &[NetworkPolicyPeer],
        ports: &[NetworkPolicyPort],
        dest: Option<&Pod>,
    ) -> Vec<Allow> {
        let (numeric, named) = split_ports(ports);
        let mut out = Vec::new();
        let all_ports = ports.is_empty();
        let peers = if list.is_empty() { None } else { Some(self.peers(policy_ns, list)) };
        // The ports this rule allows to a destination pod.
        let ports_for = |dest: &Pod| -> Option<BTreeSet<PortRange>> {
            if all_ports {
                return None;
            }
            let mut p = numeric.clone();
            p.extend(resolve_named(dest, &named));
            Some(p)
        };
        let push = |out: &mut Vec<Allow>, peer: Peer, ports: Option<BTreeSet<PortRange>>| {
            if ports.as_ref().is_some_and(|p| p.is_empty()) {
                return; // nothing resolvable: allows nothing
            }
            if matches!(&peer, Peer::Addrs(a) if a.is_empty()) {
                return;
            }
            out.push(Allow { peer, ports });
        };
        match dest {
            Some(dest) => {
                let ports = ports_for(dest);
                match peers {
                    None => push(&mut out, Peer::Any, ports),
                    Some(peers) => {
                        let addrs = peers.pods.iter().flat_map(|p| pod_ips(p)).collect();
                        push(&mut out, Peer::Addrs(addrs), ports.clone());
                        for (cidr, except) in peers.blocks {
                            push(&mut out, Peer::Block { cidr, except }, ports.clone());
                        }
                    }
                }
            }
            None => {
                let numeric_only = if all_ports { None } else { Some(numeric.clone()) };
                let (pods, blocks) = match peers {
                    None => (Vec::new(), vec![None]),
                    Some(p) => (p.pods, p.blocks.into_iter().map(Some).collect()),
                };
                if named.is_empty() {
                    let addrs = pods.iter().flat_map(|p| pod_ips(p)).collect();
                    push(&mut out, Peer::Addrs(addrs), numeric_only.clone());
                } else {
                    for pod in &pods {
                        let addrs = pod_ips(pod).into_iter().collect();
                        push(&mut out, Peer::Addrs(addrs), ports_for(pod));
                    }
                }
                for block in blocks {
                    let peer = match &block {
                        None => Peer::Any,
                        Some((cidr, except)) => Peer::Block { cidr: *cidr, except: except.clone() },
                    };
                    push(&mut out, peer, numeric_only.clone());
                    if named.is_empty() {
                        continue;
                    }
                    // Named ports towards an address range: resolved on every
                    // pod whose IP lies in it.
                    for pod in &self.pods {
                        let ips: BTreeSet<IpAddr> = pod_ips(pod)
                            .into_iter()
                            .filter(|ip| match &block {
                                None => true,
                                Some((c, ex)) => c.contains(ip) && !ex.iter().any(|e| e.contains(ip)),
                            })
                            .collect();
                        let resolved = resolve_named(pod, &named);
                        if !ips.is_empty() && !resolved.is_empty() {
                            push(&mut out, Peer::Addrs(ips), Some(resolved));
                        }
                    }
                }
            }
        }
        out
    }
}

/// Computes the ruleset of node `node_name` for nft table `table` (family
/// inet). Policies, pods and namespaces are the whole cluster's (peers may
/// be anywhere); only pods with `spec.nodeName == node_name` are policed.
pub fn compute(
    table: &str,
    node_name: &str,
    policies: &[NetworkPolicy],
    pods: &[Pod],
    namespaces: &[Namespace],
) -> Ruleset {
    let world = World {
        pods: pods.iter().filter(|p| is_pod_network(p)).collect(),
        ns_labels: namespaces.iter().map(|n| (name_of(n), n.metadata.labels.as_ref())).collect(),
    };
    let mut local: Vec<&Pod> = world
        .pods
        .iter()
        .copied()
        .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node_name))
        .collect();
    local.sort_by(|a, b| (ns_of(*a), name_of(*a)).cmp(&(ns_of(*b), name_of(*b))));
    let mut policies: Vec<&NetworkPolicy> = policies.iter().collect();
    policies.sort_by(|a, b| (ns_of(*a), name_of(*a)).cmp(&(ns_of(*b), name_of(*b))));
    let mut out = Vec::new();
    for pod in local {
        let mut ingress: Option<Vec<Allow>> = None;
        let mut egress: Option<Vec<Allow>> = None;
        for np in &policies {
            let Some(spec) = &np.spec else { continue };
            let pns = ns_of(*np);
            if pns != ns_of(pod)
                || !spec.pod_selector.as_ref().is_none_or(|s| selector_matches(s, pod.metadata.labels.as_ref()))
            {
                continue;
            }
            let (ing, egr) = policy_types(np);
            if ing {
                let allows = ingress.get_or_insert_with(Vec::new);
                for r in spec.ingress.iter().flatten() {
                    let from = r.from.as_deref().unwrap_or(&[]);
                    let ports = r.ports.as_deref().unwrap_or(&[]);
                    allows.extend(world.rule(pns, from, ports, Some(pod)));
                }
            }
            if egr {
                let allows = egress.get_or_insert_with(Vec::new);
                for r in spec.egress.iter().flatten() {
                    let to = r.to.as_deref().unwrap_or(&[]);
                    let ports = r.ports.as_deref().unwrap_or(&[]);
                    allows.extend(world.rule(pns, to, ports, None));
                }
            }
        }
        if ingress.is_none() && egress.is_none() {
            continue;
        }
        for a in [&mut ingress, &mut egress].into_iter().flatten() {
            a.sort();
            a.dedup();
        }
        out.push(PodRules {
            namespace: ns_of(pod).to_string(),
            name: name_of(pod).to_string(),
            ips: pod_ips(pod),
            ingress,
            egress,
        });
    }
    Ruleset { table: table.to_string(), pods: out }
}

/// Whether `s` is usable as an nft table name (`[A-Za-z][A-Za-z0-9_-]*`,
/// at most 64 bytes).
pub fn valid_table_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next().is_some_and(|f| f.is_ascii_alphabetic())
        && c.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && s.len() <= 64
}

fn join<T: std::fmt::Display>(items: impl IntoIterator<Item = T>) -> String {
    items.into_iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
}

/// Merges overlapping and adjacent ranges of one protocol (nft refuses
/// overlapping intervals in one set).
fn merge_ports(ports: &BTreeSet<PortRange>) -> Vec<PortRange> {
    let mut out: Vec<PortRange> = Vec::new();
    for p in ports {
        match out.last_mut() {
            Some(l) if l.protocol == p.protocol && u32::from(p.first) <= u32::from(l.last) + 1 => {
                l.last = l.last.max(p.last);
            }
            _ => out.push(*p),
        }
    }
    out
}

fn ports_expr(ports: &BTreeSet<PortRange>) -> String {
    let elems = merge_ports(ports).into_iter().map(|p| {
        if p.first == p.last {
            format!("{} . {}", p.protocol.nft(), p.first)
        } else {
            format!("{} . {}-{}", p.protocol.nft(), p.first, p.last)
        }
    });
    format!(" meta l4proto . th dport {{ {} }}", join(elems))
}

/// The nft lines of one per-pod chain; `dir` is `saddr` (ingress: match the
/// source) or `daddr` (egress: match the destination).
fn chain_lines(allows: &[Allow], dir: &str, pod: &PodRules) -> Vec<String> {
    let mut lines = Vec::new();
    for a in allows {
        let ports = a.ports.as_ref().map(ports_expr).unwrap_or_default();
        match &a.peer {
            Peer::Any => {
                let p = ports.trim_start();
                lines.push(if p.is_empty() { "return".to_string() } else { format!("{p} return") });
            }
            Peer::Addrs(addrs) => {
                let v4: Vec<_> = addrs.iter().filter(|a| a.is_ipv4()).collect();
                let v6: Vec<_> = addrs.iter().filter(|a| a.is_ipv6()).collect();
                if !v4.is_empty() {
                    lines.push(format!("ip {dir} {{ {} }}{ports} return", join(v4)));
                }
                if !v6.is_empty() {
                    lines.push(format!("ip6 {dir} {{ {} }}{ports} return", join(v6)));
                }
            }
            Peer::Block { cidr, except } => {
                let fam = if cidr.addr.is_ipv4() { "ip" } else { "ip6" };
                let ex =
                    if except.is_empty() { String::new() } else { format!(" {fam} {dir} != {{ {} }}", join(except)) };
                lines.push(format!("{fam} {dir} {cidr}{ex}{ports} return"));
            }
        }
    }
    lines.push(format!("counter drop comment \"{}/{}\"", pod.namespace, pod.name));
    lines
}

impl Ruleset {
    /// The `nft -f` script replacing the whole table atomically (create,
    /// delete, recreate in one transaction):
    ///
    /// - maps `ingress4`/`ingress6` (`ip daddr` → jump to the pod's ingress
    ///   chain `ing-N`) and `egress4`/`egress6` (`ip saddr` → `egr-N`);
    /// - chain `forward` hooked at forward, priority filter, policy accept:
    ///   `ct state established,related accept`, then the egress maps, then
    ///   the ingress maps;
    /// - chain `input` hooked at input, priority filter, policy accept:
    ///   `ct state established,related accept`, then the egress maps only,
    ///   so a pod's egress policy also governs connections to its own
    ///   node's addresses (which are delivered locally, never forwarded), as
    ///   kube-router filters INPUT too; ingress is about pod destinations
    ///   and so needs no input rules; replies to connections the node opened
    ///   (kubelet probes) are established and pass;
    /// - per-pod chains `return` what a policy allows (so that an allowed
    ///   egress still meets the destination's ingress chain) and
    ///   `counter drop` the rest.
    ///
    /// An address claimed by two pods (a stale pod) maps to the first in
    /// name order.
    pub fn render(&self) -> String {
        let t = &self.table;
        let mut s = format!("table inet {t}\ndelete table inet {t}\ntable inet {t} {{\n");
        let mut maps: BTreeMap<&str, Vec<(IpAddr, String)>> = BTreeMap::new();
        for (i, pod) in self.pods.iter().enumerate() {
            for (dir, allows, prefix, map) in
                [("saddr", &pod.ingress, "ing", "ingress"), ("daddr", &pod.egress, "egr", "egress")]
            {
                let Some(allows) = allows else { continue };
                let chain = format!("{prefix}-{i}");
                s.push_str(&format!("  chain {chain} {{\n"));
                for l in chain_lines(allows, dir, pod) {
                    s.push_str(&format!("    {l}\n"));
                }
                s.push_str("  }\n");
                for ip in &pod.ips {
                    let m = maps.entry(map).or_default();
                    if !m.iter().any(|(a, _)| a == ip) {
                        m.push((*ip, chain.clone()));
                    }
                }
            }
        }
        for map in ["ingress", "egress"] {
            let entries = maps.get(map).map(|v| v.as_slice()).unwrap_or(&[]);
            for (fam, v4) in [("4", true), ("6", false)] {
                let ty = if v4 { "ipv4_addr" } else { "ipv6_addr" };
                let elems: Vec<_> =
                    entries.iter().filter(|(a, _)| a.is_ipv4() == v4).map(|(a, c)| format!("{a} : jump {c}")).collect();
                let elems =
                    if elems.is_empty() { String::new() } else { format!(" elements = {{ {} }};", elems.join(", ")) };
                s.push_str(&format!("  map {map}{fam} {{ type {ty} : verdict;{elems} }}\n"));
            }
        }
        s.push_str(concat!(
            "  chain forward {\n",
            "    type filter hook forward priority filter; policy accept;\n",
            "    ct state established,related accept\n",
            "    ip saddr vmap @egress4\n",
            "    ip6 saddr vmap @egress6\n",
            "    ip daddr vmap @ingress4\n",
            "    ip6 daddr vmap @ingress6\n",
            "  }\n",
            "  chain input {\n",
            "    type filter hook input priority filter; policy accept;\n",
            "    ct state established,related accept\n",
            "    ip saddr vmap @egress4\n",
            "    ip6 saddr vmap @egress6\n",
            "  }\n}\n",
        ));
        s
    }
}

#[cfg(test)]
mod tests;
