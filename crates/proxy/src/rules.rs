//! The ruleset: a pure function from the [`Model`] to nft commands,
//! following the semantics of upstream's nftables proxier
//! (`pkg/proxy/nftables/proxier.go`) with a layout that keeps the number
//! of chains and rules small (nft's load time grows with rules and chains,
//! while map elements are cheap):
//!
//! - base chains `filter-input` / `filter-forward` / `filter-output`
//!   (filter hooks, priority −110, before DNAT) send new connections
//!   through `service-endpoints-check` (`ip daddr . meta l4proto . th dport
//!   vmap @no-endpoint-services`) and `nodeport-endpoints-check` (the same
//!   for `@no-endpoint-nodeports` on the node's addresses), whose verdicts
//!   are `goto reject-chain` (no endpoints at all: ICMP port-unreachable /
//!   TCP reset) or `drop` (endpoints exist but none for this traffic
//!   policy); `filter-forward` and `filter-output-post-dnat` (priority −90)
//!   reject traffic still aimed at a cluster IP after DNAT
//!   (`cluster-ip-check`, a port the Service does not serve);
//! - `nat-prerouting` / `nat-output` (priority −100) jump to `services`:
//!   first `ip daddr @cluster-ips ip saddr != <cluster CIDR> jump
//!   mark-for-masquerade` (upstream writes this rule per Service port; the
//!   effect is the same since traffic to a port without endpoints never
//!   reaches NAT), then `ip daddr . meta l4proto . th dport vmap
//!   @service-ips` and `ip daddr @nodeport-ips meta l4proto . th dport vmap
//!   @service-nodeports` (nodePorts on the node's own addresses only, as
//!   upstream's `--nodeport-addresses primary`);
//! - the common case needs no per-Service chain: a Service port without
//!   session affinity maps its cluster IP to `goto dnat-<N>` (N = number of
//!   endpoints the internal traffic policy allows), and, with
//!   `externalTrafficPolicy: Cluster`, its external/LB IPs and nodePort to
//!   `goto masq-dnat-<N>` (`jump mark-for-masquerade`, then `goto
//!   dnat-<N>`). `dnat-<N>` is shared by all Services with N endpoints:
//!   per protocol one rule `meta l4proto tcp dnat ip to ip daddr . tcp
//!   dport . numgen random mod N map @endpoint-slots-tcp`, where the map
//!   holds, for each destination (address . port) and k < N, the k-th
//!   endpoint `ip . port` — a uniform random choice, as upstream's
//!   `numgen random mod N vmap`;
//! - Services with `sessionAffinity: ClientIP` or `externalTrafficPolicy:
//!   Local` get chains as upstream for the traffic that needs them:
//!   `service-<hash>-<ns>/<name>/<proto>/<port>` (all usable endpoints) and
//!   `local-…` (local ones): affinity lookups, then a uniform random choice
//!   written as rules (`numgen random mod (N-k) == 0 …` for k = 0…N-2, then
//!   unconditional; one anonymous map per Service would load
//!   quadratically slowly at scale); without affinity each such rule DNATs
//!   directly, with affinity it jumps to `endpoint-…__<ip>/<port>`
//!   (`update @affinity-… { ip saddr }`, `dnat to`), each endpoint having a
//!   set `affinity-…` of client addresses with the Service's timeout;
//!   `external-…`: masquerade marks per externalTrafficPolicy;
//! - hairpin (a pod reaching itself through its Service) is masqueraded
//!   in `masquerading`: `ct status dnat ip saddr . ip daddr
//!   @hairpin-endpoints` (elements `ip . ip` for every endpoint address)
//!   sets the mark, as upstream's per-endpoint `ip saddr <ip> jump
//!   mark-for-masquerade` does;
//! - `mark-for-masquerade` sets mark 0x4000; `nat-postrouting` →
//!   `masquerading` clears it and masquerades (`fully-random`).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::Write as _;
use std::net::Ipv4Addr;

use crate::model::{Endpoint, Model, Protocol, ServiceInfo, ServiceKey};

/// The packet mark that asks for SNAT (upstream's `--masquerade-bit` 14).
pub const MASQUERADE_MARK: &str = "0x4000";

/// What the ruleset depends on besides the model.
#[derive(Clone, Debug)]
pub struct Params {
    /// The table (family `ip`).
    pub table: String,
    /// This node's name (decides which endpoints are local).
    pub node_name: String,
    /// The node's IPv4 addresses (nodePorts are served on them).
    pub node_ips: Vec<Ipv4Addr>,
    /// The cluster (pod) CIDR, e.g. `10.42.0.0/16`.
    pub cluster_cidr: String,
}

/// The nft maps and sets service entries go into.
pub const SERVICE_IPS: &str = "service-ips";
/// `inet_proto . inet_service : verdict`.
pub const SERVICE_NODEPORTS: &str = "service-nodeports";
/// `ipv4_addr . inet_proto . inet_service : verdict`.
pub const NO_ENDPOINT_SERVICES: &str = "no-endpoint-services";
/// `inet_proto . inet_service : verdict`.
pub const NO_ENDPOINT_NODEPORTS: &str = "no-endpoint-nodeports";
/// `ipv4_addr` (a set).
pub const CLUSTER_IPS: &str = "cluster-ips";
/// `destination address . port . slot : endpoint address . port` for
/// TCP, read by the `dnat-<N>` chains (one map per protocol: the map's
/// port type carries nft's implicit `meta l4proto` match).
pub const ENDPOINT_SLOTS_TCP: &str = "endpoint-slots-tcp";
/// The same for UDP.
pub const ENDPOINT_SLOTS_UDP: &str = "endpoint-slots-udp";
/// The same for SCTP.
pub const ENDPOINT_SLOTS_SCTP: &str = "endpoint-slots-sctp";

/// The slot map of `proto`.
pub fn endpoint_slots(proto: Protocol) -> &'static str {
    match proto {
        Protocol::Tcp => ENDPOINT_SLOTS_TCP,
        Protocol::Udp => ENDPOINT_SLOTS_UDP,
        Protocol::Sctp => ENDPOINT_SLOTS_SCTP,
    }
}

const PROTOCOLS: [Protocol; 3] = [Protocol::Tcp, Protocol::Udp, Protocol::Sctp];
/// `ipv4_addr . ipv4_addr` (a set): `ip . ip` for every endpoint address,
/// to masquerade hairpin traffic.
pub const HAIRPIN_ENDPOINTS: &str = "hairpin-endpoints";

/// One UDP Service port's destinations and endpoints, for stale conntrack
/// cleanup.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UdpPort {
    /// Cluster and external IPs.
    pub ips: Vec<Ipv4Addr>,
    /// The nodePort.
    pub node_port: Option<u16>,
    /// The endpoint addresses traffic may be DNATed to.
    pub endpoints: BTreeSet<Ipv4Addr>,
}

/// The rules of one Service.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceRules {
    /// Chain → its rules (without the `add rule ip T chain` prefix).
    pub chains: BTreeMap<String, Vec<String>>,
    /// Affinity sets → timeout in seconds.
    pub sets: BTreeMap<String, u32>,
    /// (map, key) → value (`""` for set elements).
    pub elements: BTreeMap<(&'static str, String), String>,
    /// The endpoint counts N whose shared `dnat-<N>` / `masq-dnat-<N>`
    /// chains the elements point to.
    pub dispatch: BTreeSet<usize>,
    /// Every endpoint address traffic may be DNATed to (an element of
    /// [`HAIRPIN_ENDPOINTS`], shared with other Services).
    pub hairpin: BTreeSet<Ipv4Addr>,
    /// UDP ports by port name.
    pub udp: BTreeMap<String, UdpPort>,
}

/// A short stable hash (upstream uses base32 of SHA-256; any stable hash
/// keeps names unique when names are truncated or reused).
fn hash8(s: &str) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in s.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    const A: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    (0..8).map(|i| A[((h >> (i * 5)) & 31) as usize] as char).collect()
}

fn chain_name(prefix: &str, id: &str) -> String {
    format!("{prefix}-{}-{id}", hash8(&format!("{prefix}{id}")))
}

/// The shared chain that DNATs to one of N endpoints.
pub fn dnat_chain(n: usize) -> String {
    format!("dnat-{n}")
}

/// The shared chain that marks for masquerade, then DNATs to one of N
/// endpoints (external traffic with `externalTrafficPolicy: Cluster`).
pub fn masq_dnat_chain(n: usize) -> String {
    format!("masq-dnat-{n}")
}

/// Ready endpoints, or, when none is ready, the serving-and-terminating
/// ones (upstream's `CategorizeEndpoints`).
fn usable<'a>(eps: impl Iterator<Item = &'a Endpoint> + Clone) -> Vec<&'a Endpoint> {
    let ready: Vec<_> = eps.clone().filter(|e| e.ready).collect();
    if !ready.is_empty() {
        return ready;
    }
    eps.filter(|e| e.serving && e.terminating).collect()
}

/// The rules of Service `key` (empty when the model has no such Service).
pub fn service_rules(model: &Model, params: &Params, key: &ServiceKey) -> ServiceRules {
    let mut out = ServiceRules::default();
    let Some(info) = model.service(key) else { return out };
    let Some(cip) = info.cluster_ip else { return out };
    out.elements.insert((CLUSTER_IPS, cip.to_string()), String::new());
    for port in &info.ports {
        port_rules(model, params, key, info, cip, port, &mut out);
    }
    out
}

/// Adds the slot elements sending `dest` `proto` `port` to `eps` through
/// `dnat-<N>`, and returns N.
fn slots(out: &mut ServiceRules, dest: &str, proto: Protocol, port: u16, eps: &[&Endpoint]) -> usize {
    for (k, ep) in eps.iter().enumerate() {
        out.elements
            .insert((endpoint_slots(proto), format!("{dest} . {port} . {k}")), format!("{} . {}", ep.ip, ep.port));
    }
    out.dispatch.insert(eps.len());
    eps.len()
}

fn port_rules(
    model: &Model,
    params: &Params,
    key: &ServiceKey,
    info: &ServiceInfo,
    cip: Ipv4Addr,
    port: &crate::model::ServicePort,
    out: &mut ServiceRules,
) {
    let proto = port.protocol.nft();
    let id = format!("{}/{}/{}/{}", key.namespace, key.name, proto, port.name);
    let eps = model.endpoints(key, port, &params.node_name);
    let any = eps.iter().any(|e| e.ready || (e.serving && e.terminating));
    let cluster_eps = usable(eps.iter());
    let local_eps = usable(eps.iter().filter(|e| e.local));
    let cluster_chain = chain_name("service", &id);
    let local_chain = chain_name("local", &id);
    let (int_chain, int_eps) =
        if info.internal_local { (&local_chain, &local_eps) } else { (&cluster_chain, &cluster_eps) };
    let ext_eps = if info.external_local { &local_eps } else { &cluster_eps };
    let has_external = port.node_port.is_some() || !info.external_ips.is_empty();
    // Without affinity, internal traffic and Cluster-policy external
    // traffic need no chain of their own (shared `dnat-<N>` + slots).
    let affinity = info.affinity_timeout;
    let fast_internal = affinity.is_none();
    let fast_external = affinity.is_none() && !info.external_local;

    // Every endpoint traffic may be DNATed to.
    let mut targets: BTreeSet<Ipv4Addr> = int_eps.iter().map(|e| e.ip).collect();
    if has_external {
        targets.extend(ext_eps.iter().map(|e| e.ip));
        if info.external_local {
            targets.extend(cluster_eps.iter().map(|e| e.ip)); // pod / node-local short-circuit
        }
    }
    out.hairpin.extend(targets.iter().copied());

    // Per-Service policy chains (affinity or Local external policy): a
    // uniform random choice written as rules; with affinity through
    // per-endpoint chains that remember the client.
    let policy = |chain: &String, eps: &Vec<&Endpoint>, out: &mut ServiceRules| {
        if eps.is_empty() || out.chains.contains_key(chain) {
            return;
        }
        let mut rules = Vec::new();
        let mut targets = Vec::new();
        for ep in eps {
            match affinity {
                Some(t) => {
                    let eid = format!("{id}__{}/{}", ep.ip, ep.port);
                    let name = chain_name("endpoint", &eid);
                    let set = chain_name("affinity", &format!("{eid}/{t}"));
                    out.sets.insert(set.clone(), t);
                    out.chains.insert(
                        name.clone(),
                        vec![
                            format!("update @{set} {{ ip saddr }}"),
                            format!("meta l4proto {proto} dnat to {}:{}", ep.ip, ep.port),
                        ],
                    );
                    rules.push(format!("ip saddr @{set} goto {name}"));
                    targets.push(format!("goto {name}"));
                }
                None => targets.push(format!("meta l4proto {proto} dnat to {}:{}", ep.ip, ep.port)),
            }
        }
        // Rule k fires with probability 1/(N-k) (iptables' statistic
        // chain): uniform over the N endpoints.
        let n = targets.len();
        for (k, target) in targets.into_iter().enumerate() {
            if k + 1 == n {
                rules.push(target);
            } else {
                rules.push(format!("numgen random mod {} == 0 {target}", n - k));
            }
        }
        out.chains.insert(chain.clone(), rules);
    };

    // Cluster IP.
    let cip_key = format!("{cip} . {proto} . {}", port.port);
    if !int_eps.is_empty() {
        let verdict = if fast_internal {
            dnat_chain(slots(out, &cip.to_string(), port.protocol, port.port, int_eps))
        } else {
            policy(int_chain, int_eps, out);
            int_chain.clone()
        };
        out.elements.insert((SERVICE_IPS, cip_key), format!("goto {verdict}"));
    } else {
        let verdict = if any { "drop" } else { "goto reject-chain" };
        out.elements.insert((NO_ENDPOINT_SERVICES, cip_key), verdict.to_string());
    }

    // External IPs, load-balancer IPs and the nodePort.
    if has_external {
        let verdict = if ext_eps.is_empty() {
            if any {
                "drop".to_string()
            } else {
                "goto reject-chain".to_string()
            }
        } else if fast_external {
            // The slots are keyed by the destination as it arrives: each
            // external IP, and each node address with the nodePort.
            for ip in &info.external_ips {
                slots(out, &ip.to_string(), port.protocol, port.port, ext_eps);
            }
            if let Some(np) = port.node_port {
                for ip in &params.node_ips {
                    slots(out, &ip.to_string(), port.protocol, np, ext_eps);
                }
            }
            out.dispatch.insert(ext_eps.len());
            format!("goto {}", masq_dnat_chain(ext_eps.len()))
        } else {
            let ext_chain = chain_name("external", &id);
            let mut rules = Vec::new();
            if info.external_local {
                // Pods and the node itself reach every endpoint; only
                // external clients keep their source and local endpoints.
                policy(&cluster_chain, &cluster_eps, out);
                policy(&local_chain, &local_eps, out);
                rules.push(format!("ip saddr {} goto {cluster_chain}", params.cluster_cidr));
                rules.push("fib saddr type local jump mark-for-masquerade".to_string());
                rules.push(format!("fib saddr type local goto {cluster_chain}"));
                rules.push(format!("goto {local_chain}"));
            } else {
                policy(&cluster_chain, &cluster_eps, out);
                rules.push("jump mark-for-masquerade".to_string());
                rules.push(format!("goto {cluster_chain}"));
            }
            out.chains.insert(ext_chain.clone(), rules);
            format!("goto {ext_chain}")
        };
        let (ips_map, np_map) = if ext_eps.is_empty() {
            (NO_ENDPOINT_SERVICES, NO_ENDPOINT_NODEPORTS)
        } else {
            (SERVICE_IPS, SERVICE_NODEPORTS)
        };
        for ip in &info.external_ips {
            out.elements.insert((ips_map, format!("{ip} . {proto} . {}", port.port)), verdict.clone());
        }
        if let Some(np) = port.node_port {
            out.elements.insert((np_map, format!("{proto} . {np}")), verdict.clone());
        }
    }

    if port.protocol == crate::model::Protocol::Udp {
        let mut ips = vec![cip];
        ips.extend(info.external_ips.iter().copied());
        out.udp.insert(port.name.clone(), UdpPort { ips, node_port: port.node_port, endpoints: targets });
    }
}

/// The base chains, maps and sets, written so that applying them again
/// is idempotent (`add` + `flush` + rules).
pub fn base_commands(params: &Params, out: &mut String) {
    let t = &params.table;
    let maps = [
        (SERVICE_IPS, "type ipv4_addr . inet_proto . inet_service : verdict"),
        (SERVICE_NODEPORTS, "type inet_proto . inet_service : verdict"),
        (NO_ENDPOINT_SERVICES, "type ipv4_addr . inet_proto . inet_service : verdict"),
        (NO_ENDPOINT_NODEPORTS, "type inet_proto . inet_service : verdict"),
    ];
    for (m, ty) in maps {
        let _ = writeln!(out, "add map ip {t} {m} {{ {ty} ; }}");
    }
    // `typeof` names the types: `mod 2` stands for any 32-bit slot
    // number. The value's `<proto> dport` makes nft add a `meta l4proto
    // <proto>` match to every rule reading the map (hence one map per
    // protocol); `th dport` would avoid that, but nft 1.0.6 cannot re-read
    // such a map from the kernel ("conflicting protocols"), which later
    // transactions need.
    for p in PROTOCOLS {
        let (m, p) = (endpoint_slots(p), p.nft());
        let _ = writeln!(
            out,
            "add map ip {t} {m} {{ typeof ip daddr . {p} dport . numgen random mod 2 : ip daddr . {p} dport ; }}"
        );
    }
    let _ = writeln!(out, "add set ip {t} {CLUSTER_IPS} {{ type ipv4_addr ; }}");
    let _ = writeln!(out, "add set ip {t} {HAIRPIN_ENDPOINTS} {{ type ipv4_addr . ipv4_addr ; }}");
    let _ = writeln!(out, "add set ip {t} nodeport-ips {{ type ipv4_addr ; }}");
    let _ = writeln!(out, "flush set ip {t} nodeport-ips");
    if !params.node_ips.is_empty() {
        let ips: Vec<String> = params.node_ips.iter().map(|i| i.to_string()).collect();
        let _ = writeln!(out, "add element ip {t} nodeport-ips {{ {} }}", ips.join(", "));
    }
    let masq_off_cluster =
        format!("ip daddr @{CLUSTER_IPS} ip saddr != {} jump mark-for-masquerade", params.cluster_cidr);
    let hairpin = format!("ct status dnat ip saddr . ip daddr @{HAIRPIN_ENDPOINTS} jump mark-for-masquerade");
    let chains: &[(&str, Option<&str>, &[&str])] = &[
        ("reject-chain", None, &["reject"]),
        ("mark-for-masquerade", None, &["meta mark set meta mark or 0x4000"]),
        (
            "masquerading",
            None,
            &[
                &hairpin,
                "meta mark & 0x4000 == 0 return",
                "meta mark set meta mark xor 0x4000",
                "masquerade fully-random",
            ],
        ),
        (
            "services",
            None,
            &[
                &masq_off_cluster,
                "ip daddr . meta l4proto . th dport vmap @service-ips",
                "ip daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports",
            ],
        ),
        ("service-endpoints-check", None, &["ip daddr . meta l4proto . th dport vmap @no-endpoint-services"]),
        (
            "nodeport-endpoints-check",
            None,
            &["ip daddr @nodeport-ips meta l4proto . th dport vmap @no-endpoint-nodeports"],
        ),
        ("cluster-ip-check", None, &["ip daddr @cluster-ips reject"]),
        (
            "filter-input",
            Some("type filter hook input priority -110"),
            &["ct state new jump nodeport-endpoints-check", "ct state new jump service-endpoints-check"],
        ),
        (
            "filter-forward",
            Some("type filter hook forward priority -110"),
            &["ct state new jump service-endpoints-check", "ct state new jump cluster-ip-check"],
        ),
        (
            "filter-output",
            Some("type filter hook output priority -110"),
            &["ct state new jump service-endpoints-check"],
        ),
        (
            "filter-output-post-dnat",
            Some("type filter hook output priority -90"),
            &["ct state new jump cluster-ip-check"],
        ),
        ("nat-prerouting", Some("type nat hook prerouting priority -100"), &["jump services"]),
        ("nat-output", Some("type nat hook output priority -100"), &["jump services"]),
        ("nat-postrouting", Some("type nat hook postrouting priority 100"), &["jump masquerading"]),
    ];
    for (name, hook, _) in chains {
        match hook {
            Some(h) => {
                let _ = writeln!(out, "add chain ip {t} {name} {{ {h} ; policy accept ; }}");
            }
            None => {
                let _ = writeln!(out, "add chain ip {t} {name}");
            }
        }
        let _ = writeln!(out, "flush chain ip {t} {name}");
    }
    for (name, _, rules) in chains {
        for r in *rules {
            let _ = writeln!(out, "add rule ip {t} {name} {r}");
        }
    }
}

/// Commands in the order one nft transaction needs them: new chains and
/// sets first, then chain contents, then map elements, then removals.
#[derive(Default)]
pub struct Transaction {
    add_objects: String,
    rules: String,
    dispatch: BTreeSet<usize>,
    del_elements: BTreeMap<&'static str, Vec<String>>,
    add_elements: BTreeMap<&'static str, Vec<String>>,
    /// Keys in `add_elements`: a key is never added twice (nft would
    /// reject the whole transaction); the first Service written keeps it.
    added: HashSet<(&'static str, String)>,
    flush_removed: String,
    delete_removed: String,
    /// Number of Services written.
    pub services: usize,
}

impl Transaction {
    /// Adds the change from `old` to `new` for one Service. With `force`,
    /// every chain of `new` is rewritten and every element added (the maps
    /// were flushed). Hairpin elements are shared between Services and
    /// left to the caller ([`Transaction::hairpin`]).
    pub fn service(&mut self, table: &str, old: Option<&ServiceRules>, new: &ServiceRules, force: bool) {
        let empty = ServiceRules::default();
        let old = old.unwrap_or(&empty);
        if !force && old == new {
            return;
        }
        self.services += 1;
        // The shared chains are written when a Service starts using
        // them (idempotently: another may have created them); they are
        // only removed with the table (a few rules each).
        self.dispatch.extend(new.dispatch.iter().copied().filter(|n| force || !old.dispatch.contains(n)));
        for (name, t) in &new.sets {
            if force || !old.sets.contains_key(name) {
                let _ = writeln!(
                    self.add_objects,
                    "add set ip {table} {name} {{ type ipv4_addr ; flags dynamic,timeout ; timeout {t}s ; }}"
                );
            }
        }
        for (name, rules) in &new.chains {
            let known = old.chains.get(name);
            if !force && known == Some(rules) {
                continue;
            }
            let _ = writeln!(self.add_objects, "add chain ip {table} {name}");
            if known.is_some() || force {
                let _ = writeln!(self.rules, "flush chain ip {table} {name}");
            }
            for r in rules {
                let _ = writeln!(self.rules, "add rule ip {table} {name} {r}");
            }
        }
        for ((map, k), v) in &old.elements {
            if !force && new.elements.get(&(*map, k.clone())) != Some(v) {
                self.del_elements.entry(map).or_default().push(k.clone());
            }
        }
        for ((map, k), v) in &new.elements {
            if force || old.elements.get(&(*map, k.clone())) != Some(v) {
                if !self.added.insert((*map, k.clone())) {
                    tracing::debug!(component = "kube-proxy", map = *map, key = %k, "element already written in this sync; skipped");
                    continue;
                }
                let e = if v.is_empty() { k.clone() } else { format!("{k} : {v}") };
                self.add_elements.entry(map).or_default().push(e);
            }
        }
        for name in old.chains.keys() {
            if !new.chains.contains_key(name) {
                let _ = writeln!(self.flush_removed, "flush chain ip {table} {name}");
                let _ = writeln!(self.delete_removed, "delete chain ip {table} {name}");
            }
        }
        for name in old.sets.keys() {
            if !new.sets.contains_key(name) {
                let _ = writeln!(self.delete_removed, "delete set ip {table} {name}");
            }
        }
    }

    /// Hairpin elements to delete and to add.
    pub fn hairpin(&mut self, delete: impl IntoIterator<Item = Ipv4Addr>, add: impl IntoIterator<Item = Ipv4Addr>) {
        for ip in delete {
            self.del_elements.entry(HAIRPIN_ENDPOINTS).or_default().push(format!("{ip} . {ip}"));
        }
        for ip in add {
            self.add_elements.entry(HAIRPIN_ENDPOINTS).or_default().push(format!("{ip} . {ip}"));
        }
    }

    /// Whether there is nothing to apply.
    pub fn is_empty(&self) -> bool {
        self.add_objects.is_empty()
            && self.rules.is_empty()
            && self.del_elements.is_empty()
            && self.add_elements.is_empty()
            && self.delete_removed.is_empty()
    }

    /// The `nft -f` text, after `prefix` (table and base commands).
    pub fn render(&self, table: &str, prefix: &str) -> String {
        let mut s = String::with_capacity(prefix.len() + self.add_objects.len() + self.rules.len() * 2);
        s.push_str(prefix);
        for n in &self.dispatch {
            let (d, m) = (dnat_chain(*n), masq_dnat_chain(*n));
            let _ = writeln!(s, "add chain ip {table} {d}\nflush chain ip {table} {d}");
            for p in PROTOCOLS {
                let (m, p) = (endpoint_slots(p), p.nft());
                let _ = writeln!(
                    s,
                    "add rule ip {table} {d} meta l4proto {p} dnat ip to ip daddr . {p} dport . numgen random mod {n} map @{m}"
                );
            }
            let _ = writeln!(s, "add chain ip {table} {m}\nflush chain ip {table} {m}");
            let _ = writeln!(s, "add rule ip {table} {m} jump mark-for-masquerade\nadd rule ip {table} {m} goto {d}");
        }
        s.push_str(&self.add_objects);
        s.push_str(&self.rules);
        for (map, keys) in &self.del_elements {
            for chunk in keys.chunks(1000) {
                let _ = writeln!(s, "delete element ip {table} {map} {{ {} }}", chunk.join(", "));
            }
        }
        for (map, els) in &self.add_elements {
            for chunk in els.chunks(1000) {
                let _ = writeln!(s, "add element ip {table} {map} {{ {} }}", chunk.join(", "));
            }
        }
        s.push_str(&self.flush_removed);
        s.push_str(&self.delete_removed);
        s
    }
}

/// How much a sync rewrites.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncKind {
    /// Recreate the table from nothing (first sync, or after a failure).
    Recreate,
    /// Rewrite every chain and map in place (periodic resync; affinity
    /// sets keep their entries).
    Resync,
    /// Only the Services that changed.
    Partial,
}

/// The nft text taking the table from `applied` (what the last successful
/// sync wrote) to `next`, and the number of Services written. For
/// [`SyncKind::Recreate`] and [`SyncKind::Resync`], `next` holds every
/// Service (absent ones are removed); for [`SyncKind::Partial`], only the
/// changed ones, a removed Service as an empty [`ServiceRules`].
pub fn sync_text(
    params: &Params,
    kind: SyncKind,
    applied: &BTreeMap<ServiceKey, ServiceRules>,
    next: &BTreeMap<ServiceKey, ServiceRules>,
) -> (String, usize) {
    let t = &params.table;
    let mut prefix = String::new();
    let mut tx = Transaction::default();
    let all_hairpin = || next.values().flat_map(|r| r.hairpin.iter().copied()).collect::<BTreeSet<_>>();
    match kind {
        SyncKind::Recreate => {
            let _ = writeln!(prefix, "add table ip {t}\ndelete table ip {t}\nadd table ip {t}");
            base_commands(params, &mut prefix);
            for new in next.values() {
                tx.service(t, None, new, false);
            }
            tx.hairpin([], all_hairpin());
        }
        SyncKind::Resync => {
            let _ = writeln!(prefix, "add table ip {t}");
            base_commands(params, &mut prefix);
            for m in [
                SERVICE_IPS,
                SERVICE_NODEPORTS,
                NO_ENDPOINT_SERVICES,
                NO_ENDPOINT_NODEPORTS,
                ENDPOINT_SLOTS_TCP,
                ENDPOINT_SLOTS_UDP,
                ENDPOINT_SLOTS_SCTP,
            ] {
                let _ = writeln!(prefix, "flush map ip {t} {m}");
            }
            let _ = writeln!(prefix, "flush set ip {t} {CLUSTER_IPS}");
            let _ = writeln!(prefix, "flush set ip {t} {HAIRPIN_ENDPOINTS}");
            let empty = ServiceRules::default();
            for (k, new) in next {
                tx.service(t, applied.get(k), new, true);
            }
            for (k, old) in applied {
                if !next.contains_key(k) {
                    // Removed Services: only their chains and sets go.
                    let mut old = old.clone();
                    old.elements.clear();
                    tx.service(t, Some(&old), &empty, false);
                }
            }
            tx.hairpin([], all_hairpin());
        }
        SyncKind::Partial => {
            let mut gone = BTreeSet::new();
            let mut added = BTreeSet::new();
            for (k, new) in next {
                tx.service(t, applied.get(k), new, false);
                if let Some(old) = applied.get(k) {
                    gone.extend(old.hairpin.difference(&new.hairpin).copied());
                }
                added.extend(
                    new.hairpin.iter().copied().filter(|ip| applied.get(k).is_none_or(|o| !o.hairpin.contains(ip))),
                );
            }
            if !gone.is_empty() {
                // An address stays while any other Service still uses it.
                let used: HashSet<Ipv4Addr> = next
                    .values()
                    .chain(applied.iter().filter(|(k, _)| !next.contains_key(*k)).map(|(_, r)| r))
                    .flat_map(|r| r.hairpin.iter().copied())
                    .collect();
                gone.retain(|ip| !used.contains(ip));
            }
            tx.hairpin(gone, added);
        }
    }
    if kind == SyncKind::Partial && tx.is_empty() {
        return (String::new(), 0);
    }
    let n = tx.services;
    (tx.render(t, &prefix), n)
}

/// Two Services mapping the same destination: `loser`'s element for
/// `unit` was left out because `winner` holds it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Conflict {
    /// The destination, e.g. `192.0.2.10 . tcp . 80` (address . protocol
    /// . port), `nodeport tcp . 30080` or `cluster-ip 10.43.0.5`.
    pub unit: String,
    /// The Service that keeps it (older, or already holding it).
    pub winner: ServiceKey,
    /// The Service skipped for it.
    pub loser: ServiceKey,
}

/// The destinations an element of `map` with `key` claims: (required,
/// optional). The element is written only when no other Service holds a
/// required one; optional ones are claimed when free. A nodePort claims
/// its `node address . proto . nodePort` destinations optionally, so an
/// external IP equal to a node address and port yields to an older
/// nodePort (and the nodePort's slots yield on that address to an older
/// external IP), while the nodePort itself stays served elsewhere.
fn units(map: &str, key: &str, node_ips: &[Ipv4Addr]) -> (Vec<String>, Vec<String>) {
    let parts: Vec<&str> = key.split(" . ").collect();
    match map {
        SERVICE_IPS | NO_ENDPOINT_SERVICES => (vec![key.to_string()], vec![]),
        SERVICE_NODEPORTS | NO_ENDPOINT_NODEPORTS => {
            (vec![format!("nodeport {key}")], node_ips.iter().map(|ip| format!("{ip} . {key}")).collect())
        }
        CLUSTER_IPS => (vec![format!("cluster-ip {key}")], vec![]),
        _ => match (PROTOCOLS.iter().find(|p| endpoint_slots(**p) == map), parts.as_slice()) {
            (Some(p), [ip, port, _slot]) => (vec![format!("{ip} . {} . {port}", p.nft())], vec![]),
            _ => (vec![format!("{map} {key}")], vec![]),
        },
    }
}

/// Who holds which destination in the live table, so that no sync writes
/// a map element twice (nft rejects the whole transaction with "File
/// exists"). Upstream kube-proxy lets the first writer win implicitly;
/// here the oldest Service (creationTimestamp, then namespace/name, see
/// [`Model::priority`]) keeps a destination, later claimants are left
/// out for it until it frees.
#[derive(Clone, Debug, Default)]
pub struct Claims {
    owner: std::collections::HashMap<String, ServiceKey>,
    /// Services that won or lost a conflict in the last sync touching
    /// them: a partial sync always re-resolves them.
    contested: BTreeSet<ServiceKey>,
}

impl Claims {
    /// Services a partial sync of `next` must recompute too: those in a
    /// conflict, and the holders of destinations `next` wants.
    pub fn related(&self, params: &Params, next: &BTreeMap<ServiceKey, ServiceRules>) -> BTreeSet<ServiceKey> {
        let mut out: BTreeSet<ServiceKey> = self.contested.clone();
        for r in next.values() {
            for (map, key) in r.elements.keys() {
                let (req, opt) = units(map, key, &params.node_ips);
                for u in req.iter().chain(&opt) {
                    if let Some(o) = self.owner.get(u) {
                        out.insert(o.clone());
                    }
                }
            }
        }
        out.retain(|k| !next.contains_key(k));
        out
    }

    /// Removes from `next` every element whose destination another
    /// Service holds, processing `next` by `priority` (oldest first), and
    /// records the new holders. For [`SyncKind::Partial`], destinations of
    /// Services outside `next` (as in `applied`) stay held; full syncs
    /// start over. Returns the conflicts found.
    pub fn resolve<P: Ord>(
        &mut self,
        params: &Params,
        kind: SyncKind,
        applied: &BTreeMap<ServiceKey, ServiceRules>,
        next: &mut BTreeMap<ServiceKey, ServiceRules>,
        priority: impl Fn(&ServiceKey) -> P,
    ) -> Vec<Conflict> {
        if kind == SyncKind::Partial {
            for k in next.keys() {
                for (map, key) in applied.get(k).map(|r| r.elements.keys()).into_iter().flatten() {
                    let (req, opt) = units(map, key, &params.node_ips);
                    for u in req.iter().chain(&opt) {
                        if self.owner.get(u) == Some(k) {
                            self.owner.remove(u);
                        }
                    }
                }
                self.contested.remove(k);
            }
        } else {
            self.owner.clear();
            self.contested.clear();
        }
        let mut order: Vec<ServiceKey> = next.keys().cloned().collect();
        order.sort_by_cached_key(|k| priority(k));
        let mut conflicts = Vec::new();
        for k in order {
            let r = next.get_mut(&k).expect("key from next");
            let mut skip = Vec::new();
            for (map, key) in r.elements.keys() {
                let (req, opt) = units(map, key, &params.node_ips);
                if let Some((u, holder)) =
                    req.iter().find_map(|u| self.owner.get(u).filter(|o| **o != k).map(|o| (u, o)))
                {
                    conflicts.push(Conflict { unit: u.clone(), winner: holder.clone(), loser: k.clone() });
                    skip.push((*map, key.clone()));
                    continue;
                }
                for u in req {
                    self.owner.insert(u, k.clone());
                }
                for u in opt {
                    self.owner.entry(u).or_insert_with(|| k.clone());
                }
            }
            for e in skip {
                r.elements.remove(&e);
            }
        }
        conflicts.sort_by(|a, b| (&a.loser, &a.unit).cmp(&(&b.loser, &b.unit)));
        conflicts.dedup_by(|a, b| a.loser == b.loser && a.winner == b.winner && a.unit == b.unit);
        for c in &conflicts {
            self.contested.insert(c.winner.clone());
            self.contested.insert(c.loser.clone());
        }
        conflicts
    }
}

/// `conntrack` argument lists that delete stale UDP entries after `old`
/// became `new` (upstream's `deleteStaleServiceConntrackEntries` /
/// `deleteStaleEndpointConntrackEntries`): flows DNATed to an endpoint
/// that left, and, for a port that had no endpoints, every flow to its
/// addresses (they hold the cached rejection).
pub fn stale_udp(old: Option<&ServiceRules>, new: Option<&ServiceRules>) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let empty = BTreeMap::new();
    let old_udp = old.map(|o| &o.udp).unwrap_or(&empty);
    let new_udp = new.map(|n| &n.udp).unwrap_or(&empty);
    for (name, o) in old_udp {
        let n = new_udp.get(name);
        for ep in &o.endpoints {
            if n.is_some_and(|n| n.endpoints.contains(ep)) {
                continue;
            }
            for ip in &o.ips {
                out.push(vec![
                    "-D".into(),
                    "-p".into(),
                    "udp".into(),
                    "--orig-dst".into(),
                    ip.to_string(),
                    "--dst-nat".into(),
                    ep.to_string(),
                ]);
            }
            if let Some(np) = o.node_port {
                out.push(vec![
                    "-D".into(),
                    "-p".into(),
                    "udp".into(),
                    "--orig-port-dst".into(),
                    np.to_string(),
                    "--dst-nat".into(),
                    ep.to_string(),
                ]);
            }
        }
    }
    for (name, n) in new_udp {
        let had = old_udp.get(name).is_some_and(|o| !o.endpoints.is_empty());
        if !had && !n.endpoints.is_empty() {
            for ip in &n.ips {
                out.push(vec!["-D".into(), "-p".into(), "udp".into(), "--orig-dst".into(), ip.to_string()]);
            }
            if let Some(np) = n.node_port {
                out.push(vec!["-D".into(), "-p".into(), "udp".into(), "--orig-port-dst".into(), np.to_string()]);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Protocol, ServiceInfo, ServicePort, SliceEndpoint, SliceInfo};

    fn params() -> Params {
        Params {
            table: "rkt-unit".into(),
            node_name: "n1".into(),
            node_ips: vec!["192.0.2.10".parse().unwrap()],
            cluster_cidr: "10.42.0.0/16".into(),
        }
    }

    fn key() -> ServiceKey {
        ServiceKey::new("default", "web")
    }

    fn service(proto: Protocol, node_port: Option<u16>) -> ServiceInfo {
        ServiceInfo {
            cluster_ip: Some("10.43.0.5".parse().unwrap()),
            ports: vec![ServicePort { name: "http".into(), protocol: proto, port: 80, node_port }],
            ..Default::default()
        }
    }

    /// (ip, ready, serving, terminating, node)
    fn eps(list: &[(&str, bool, bool, bool, &str)]) -> SliceInfo {
        SliceInfo {
            service: key(),
            ports: vec![("http".into(), Protocol::Tcp, 8080), ("http".into(), Protocol::Udp, 8080)],
            endpoints: list
                .iter()
                .map(|(ip, r, s, t, n)| SliceEndpoint {
                    ip: ip.parse().unwrap(),
                    ready: *r,
                    serving: *s,
                    terminating: *t,
                    node_name: Some(n.to_string()),
                })
                .collect(),
        }
    }

    fn model(info: ServiceInfo, slice: Option<SliceInfo>) -> Model {
        let mut m = Model::new();
        m.set_service(key(), info);
        if let Some(s) = slice {
            m.set_slice("default".into(), "web-1".into(), s);
        }
        m
    }

    fn el<'a>(r: &'a ServiceRules, map: &'static str, k: &str) -> Option<&'a str> {
        r.elements.get(&(map, k.to_string())).map(|s| s.as_str())
    }

    fn chain<'a>(r: &'a ServiceRules, prefix: &str) -> Vec<(&'a String, &'a Vec<String>)> {
        r.chains.iter().filter(|(n, _)| n.starts_with(prefix)).collect()
    }

    /// Validates the whole-table text (and optionally a follow-up) with
    /// `nft -c` when nft can run here (it needs CAP_NET_ADMIN).
    fn nft_check(text: &str) {
        let runner = crate::nft::Runner::default();
        match runner.nft_check(text) {
            Ok(()) => {}
            Err(crate::ProxyError::Nft(msg))
                if msg.contains("Operation not permitted") || msg.contains("cannot run nft") =>
            {
                eprintln!("skipping nft -c: {msg}");
            }
            Err(e) => panic!("nft -c rejected the ruleset: {e}\n{text}"),
        }
    }

    fn full(m: &Model) -> (BTreeMap<ServiceKey, ServiceRules>, String) {
        let p = params();
        let next: BTreeMap<_, _> =
            m.service_keys().into_iter().map(|k| (k.clone(), service_rules(m, &p, &k))).collect();
        let (text, _) = sync_text(&p, SyncKind::Recreate, &BTreeMap::new(), &next);
        (next, text)
    }

    fn slot<'a>(r: &'a ServiceRules, k: &str) -> Option<&'a str> {
        el(r, ENDPOINT_SLOTS_TCP, k)
    }

    /// Service `name` (cluster IP `cip`, TCP port `port`, optional
    /// nodePort, external IPs) created at `created`, with one ready
    /// endpoint `ep`:8080.
    fn add_svc(
        m: &mut Model,
        name: &str,
        cip: &str,
        port: u16,
        node_port: Option<u16>,
        ext: &[&str],
        created: i64,
        ep: &str,
    ) -> ServiceKey {
        let k = ServiceKey::new("default", name);
        m.set_service(
            k.clone(),
            ServiceInfo {
                cluster_ip: Some(cip.parse().unwrap()),
                external_ips: ext.iter().map(|s| s.parse().unwrap()).collect(),
                ports: vec![ServicePort { name: "http".into(), protocol: Protocol::Tcp, port, node_port }],
                created: Some(created),
                ..Default::default()
            },
        );
        let mut s = eps(&[(ep, true, true, false, "n1")]);
        s.service = k.clone();
        m.set_slice("default".into(), format!("{name}-1"), s);
        k
    }

    /// What `Proxier::sync` does without applying: rules for `keys` (all
    /// Services for a full sync) plus related ones, resolved, as text.
    fn claimed_sync(
        m: &mut Model,
        claims: &mut Claims,
        kind: SyncKind,
        applied: &mut BTreeMap<ServiceKey, ServiceRules>,
    ) -> (String, Vec<Conflict>) {
        let p = params();
        let keys: Vec<ServiceKey> =
            if kind == SyncKind::Partial { m.take_dirty().into_iter().collect() } else { m.service_keys() };
        m.take_dirty();
        let mut next: BTreeMap<_, _> = keys.iter().map(|k| (k.clone(), service_rules(m, &p, k))).collect();
        if kind == SyncKind::Partial {
            for k in claims.related(&p, &next) {
                let r = service_rules(m, &p, &k);
                next.insert(k, r);
            }
        }
        let conflicts = claims.resolve(&p, kind, applied, &mut next, |k| m.priority(k));
        let (text, _) = sync_text(&p, kind, applied, &next);
        if kind == SyncKind::Partial {
            for (k, r) in next {
                if r == ServiceRules::default() {
                    applied.remove(&k);
                } else {
                    applied.insert(k, r);
                }
            }
        } else {
            *applied = next.into_iter().filter(|(_, r)| *r != ServiceRules::default()).collect();
        }
        (text, conflicts)
    }

    /// Every key added to `map` in `text`, counted.
    fn added_keys(text: &str, map: &str) -> BTreeMap<String, usize> {
        let mut out = BTreeMap::new();
        let prefix = format!("add element ip rkt-unit {map} {{ ");
        for l in text.lines().filter_map(|l| l.strip_prefix(&prefix)) {
            for e in l.trim_end_matches(" }").split(", ") {
                *out.entry(e.split(" : ").next().unwrap().to_string()).or_insert(0) += 1;
            }
        }
        out
    }

    fn no_duplicates(text: &str) {
        for map in [SERVICE_IPS, SERVICE_NODEPORTS, NO_ENDPOINT_SERVICES, ENDPOINT_SLOTS_TCP, CLUSTER_IPS] {
            for (k, n) in added_keys(text, map) {
                assert_eq!(n, 1, "{map} {k} added {n} times:\n{text}");
            }
        }
    }

    #[test]
    fn two_load_balancers_on_one_port_the_older_keeps_it() {
        // ServiceLB gives both every node address as ingress.
        let mut m = Model::new();
        let old = add_svc(&mut m, "b-old", "10.43.0.6", 80, Some(30081), &["192.0.2.10"], 100, "10.42.0.6");
        let new = add_svc(&mut m, "a-new", "10.43.0.5", 80, Some(30080), &["192.0.2.10"], 200, "10.42.0.5");
        let (mut claims, mut applied) = (Claims::default(), BTreeMap::new());
        let (text, conflicts) = claimed_sync(&mut m, &mut claims, SyncKind::Recreate, &mut applied);
        no_duplicates(&text);
        assert!(conflicts.iter().all(|c| c.winner == old && c.loser == new), "{conflicts:?}");
        assert!(conflicts.iter().any(|c| c.unit == "192.0.2.10 . tcp . 80"));
        assert_eq!(el(&applied[&old], SERVICE_IPS, "192.0.2.10 . tcp . 80"), Some("goto masq-dnat-1"));
        assert_eq!(slot(&applied[&old], "192.0.2.10 . 80 . 0"), Some("10.42.0.6 . 8080"));
        assert!(el(&applied[&new], SERVICE_IPS, "192.0.2.10 . tcp . 80").is_none());
        assert!(slot(&applied[&new], "192.0.2.10 . 80 . 0").is_none());
        // The younger one keeps its cluster IP and nodePort.
        assert_eq!(el(&applied[&new], SERVICE_IPS, "10.43.0.5 . tcp . 80"), Some("goto dnat-1"));
        assert_eq!(el(&applied[&new], SERVICE_NODEPORTS, "tcp . 30080"), Some("goto masq-dnat-1"));
        nft_check(&text);
        // A periodic resync resolves the same way.
        let (resync, _) = claimed_sync(&mut m, &mut claims, SyncKind::Resync, &mut applied);
        no_duplicates(&resync);
        nft_check(&format!("{text}{resync}"));
        // A third, younger claimant in a partial sync: the live holder
        // keeps the destination, nothing is added for it.
        let third = add_svc(&mut m, "c", "10.43.0.7", 80, Some(30082), &["192.0.2.10"], 300, "10.42.0.7");
        let (t3, c3) = claimed_sync(&mut m, &mut claims, SyncKind::Partial, &mut applied);
        assert!(!added_keys(&t3, SERVICE_IPS).contains_key("192.0.2.10 . tcp . 80"), "{t3}");
        assert!(!added_keys(&t3, ENDPOINT_SLOTS_TCP).contains_key("192.0.2.10 . 80 . 0"), "{t3}");
        assert!(c3.iter().any(|c| c.winner == old && c.loser == third));
        nft_check(&format!("{text}{resync}{t3}"));
        // The holder goes: the next oldest claimant gets the destination
        // in the same partial sync.
        m.remove_service(&old);
        let (t4, c4) = claimed_sync(&mut m, &mut claims, SyncKind::Partial, &mut applied);
        let has = |t: &str, l: &str| t.lines().any(|x| x == l);
        assert!(
            has(&t4, "delete element ip rkt-unit service-ips { 10.43.0.6 . tcp . 80, 192.0.2.10 . tcp . 80 }"),
            "{t4}"
        );
        assert_eq!(added_keys(&t4, SERVICE_IPS).get("192.0.2.10 . tcp . 80"), Some(&1), "{t4}");
        assert_eq!(el(&applied[&new], SERVICE_IPS, "192.0.2.10 . tcp . 80"), Some("goto masq-dnat-1"));
        assert!(el(&applied[&third], SERVICE_IPS, "192.0.2.10 . tcp . 80").is_none());
        assert!(c4.iter().all(|c| c.winner == new && c.loser == third), "{c4:?}");
        nft_check(&format!("{text}{resync}{t3}{t4}"));
    }

    #[test]
    fn an_external_ip_equal_to_another_cluster_ip_yields_to_the_older() {
        let mut m = Model::new();
        let web = add_svc(&mut m, "web", "10.43.0.5", 80, None, &[], 100, "10.42.0.5");
        let ext = add_svc(&mut m, "ext", "10.43.0.6", 80, None, &["10.43.0.5"], 200, "10.42.0.6");
        let (mut claims, mut applied) = (Claims::default(), BTreeMap::new());
        let (text, conflicts) = claimed_sync(&mut m, &mut claims, SyncKind::Recreate, &mut applied);
        no_duplicates(&text);
        assert_eq!(
            conflicts,
            vec![Conflict { unit: "10.43.0.5 . tcp . 80".into(), winner: web.clone(), loser: ext.clone() }]
        );
        assert_eq!(slot(&applied[&web], "10.43.0.5 . 80 . 0"), Some("10.42.0.5 . 8080"));
        nft_check(&text);
        // Reversed ages: the external IP's Service is older and keeps it.
        let mut m = Model::new();
        let web = add_svc(&mut m, "web", "10.43.0.5", 80, None, &[], 300, "10.42.0.5");
        let ext = add_svc(&mut m, "ext", "10.43.0.6", 80, None, &["10.43.0.5"], 200, "10.42.0.6");
        let (mut claims, mut applied) = (Claims::default(), BTreeMap::new());
        let (text, conflicts) = claimed_sync(&mut m, &mut claims, SyncKind::Recreate, &mut applied);
        no_duplicates(&text);
        assert!(conflicts.iter().all(|c| c.winner == ext && c.loser == web), "{conflicts:?}");
        assert_eq!(slot(&applied[&ext], "10.43.0.5 . 80 . 0"), Some("10.42.0.6 . 8080"));
        nft_check(&text);
    }

    #[test]
    fn an_external_ip_and_port_equal_to_a_node_port_yields_to_the_older() {
        // ext's externalIP:port is the node address with web's nodePort.
        let mut m = Model::new();
        let web = add_svc(&mut m, "web", "10.43.0.5", 80, Some(30080), &[], 100, "10.42.0.5");
        let ext = add_svc(&mut m, "ext", "10.43.0.6", 30080, None, &["192.0.2.10"], 200, "10.42.0.6");
        let (mut claims, mut applied) = (Claims::default(), BTreeMap::new());
        let (text, conflicts) = claimed_sync(&mut m, &mut claims, SyncKind::Recreate, &mut applied);
        no_duplicates(&text);
        assert!(conflicts.iter().all(|c| c.winner == web && c.loser == ext), "{conflicts:?}");
        assert!(!conflicts.is_empty());
        assert!(el(&applied[&ext], SERVICE_IPS, "192.0.2.10 . tcp . 30080").is_none());
        assert_eq!(slot(&applied[&web], "192.0.2.10 . 30080 . 0"), Some("10.42.0.5 . 8080"));
        nft_check(&text);
        // Older external IP: it keeps the address; the nodePort stays
        // (served on the node's other addresses) without that slot.
        let mut m = Model::new();
        let web = add_svc(&mut m, "web", "10.43.0.5", 80, Some(30080), &[], 300, "10.42.0.5");
        let ext = add_svc(&mut m, "ext", "10.43.0.6", 30080, None, &["192.0.2.10"], 200, "10.42.0.6");
        let (mut claims, mut applied) = (Claims::default(), BTreeMap::new());
        let (text, conflicts) = claimed_sync(&mut m, &mut claims, SyncKind::Recreate, &mut applied);
        no_duplicates(&text);
        assert!(conflicts.iter().all(|c| c.winner == ext && c.loser == web), "{conflicts:?}");
        assert_eq!(el(&applied[&ext], SERVICE_IPS, "192.0.2.10 . tcp . 30080"), Some("goto masq-dnat-1"));
        assert_eq!(slot(&applied[&ext], "192.0.2.10 . 30080 . 0"), Some("10.42.0.6 . 8080"));
        assert_eq!(el(&applied[&web], SERVICE_NODEPORTS, "tcp . 30080"), Some("goto masq-dnat-1"));
        nft_check(&text);
    }

    #[test]
    fn unresolved_input_still_never_adds_a_key_twice() {
        let mut m = Model::new();
        add_svc(&mut m, "a", "10.43.0.5", 80, None, &["198.51.100.1"], 1, "10.42.0.5");
        add_svc(&mut m, "b", "10.43.0.6", 80, None, &["198.51.100.1"], 2, "10.42.0.6");
        let (_, text) = full(&m);
        no_duplicates(&text);
        nft_check(&text);
    }

    #[test]
    fn cluster_ip_dnats_randomly_over_ready_endpoints() {
        let m = model(
            service(Protocol::Tcp, None),
            Some(eps(&[
                ("10.42.0.2", true, true, false, "n1"),
                ("10.42.1.2", true, true, false, "n2"),
                ("10.42.1.3", false, false, false, "n2"),
            ])),
        );
        let r = service_rules(&m, &params(), &key());
        // No per-Service chain: the cluster IP goes to the shared chain for
        // two endpoints, whose numgen picks slot 0 or 1 of this address.
        assert!(r.chains.is_empty(), "{:?}", r.chains);
        assert_eq!(el(&r, SERVICE_IPS, "10.43.0.5 . tcp . 80"), Some("goto dnat-2"));
        assert_eq!(slot(&r, "10.43.0.5 . 80 . 0"), Some("10.42.0.2 . 8080"));
        assert_eq!(slot(&r, "10.43.0.5 . 80 . 1"), Some("10.42.1.2 . 8080"));
        // The not-ready endpoint gets no slot.
        assert_eq!(r.elements.keys().filter(|(m, _)| *m == ENDPOINT_SLOTS_TCP).count(), 2);
        assert_eq!(r.dispatch, [2].into());
        assert_eq!(r.hairpin, ["10.42.0.2".parse().unwrap(), "10.42.1.2".parse().unwrap()].into());
        assert_eq!(el(&r, CLUSTER_IPS, "10.43.0.5"), Some(""));
        assert!(el(&r, NO_ENDPOINT_SERVICES, "10.43.0.5 . tcp . 80").is_none());
        let (_, text) = full(&m);
        for p in ["tcp", "udp", "sctp"] {
            let rule = format!(
                "add rule ip rkt-unit dnat-2 meta l4proto {p} dnat ip to ip daddr . {p} dport . numgen random mod 2 map @endpoint-slots-{p}\n"
            );
            assert!(text.contains(&rule), "{rule}");
        }
        // Off-cluster clients of a cluster IP are masqueraded; hairpin too.
        assert!(text.contains(
            "add rule ip rkt-unit services ip daddr @cluster-ips ip saddr != 10.42.0.0/16 jump mark-for-masquerade"
        ));
        assert!(
            text.contains("add element ip rkt-unit hairpin-endpoints { 10.42.0.2 . 10.42.0.2, 10.42.1.2 . 10.42.1.2 }")
        );
        nft_check(&text);
    }

    #[test]
    fn udp_ports_use_the_udp_slot_map() {
        let m = model(service(Protocol::Udp, Some(30053)), Some(eps(&[("10.42.0.2", true, true, false, "n1")])));
        let r = service_rules(&m, &params(), &key());
        assert_eq!(el(&r, SERVICE_IPS, "10.43.0.5 . udp . 80"), Some("goto dnat-1"));
        assert_eq!(el(&r, SERVICE_NODEPORTS, "udp . 30053"), Some("goto masq-dnat-1"));
        assert_eq!(el(&r, ENDPOINT_SLOTS_UDP, "10.43.0.5 . 80 . 0"), Some("10.42.0.2 . 8080"));
        assert_eq!(el(&r, ENDPOINT_SLOTS_UDP, "192.0.2.10 . 30053 . 0"), Some("10.42.0.2 . 8080"));
        assert!(r.elements.keys().all(|(m, _)| *m != ENDPOINT_SLOTS_TCP));
        nft_check(&full(&m).1);
    }

    #[test]
    fn no_usable_endpoints_rejects_and_terminating_serving_are_a_fallback() {
        let m = model(service(Protocol::Tcp, Some(30080)), None);
        let r = service_rules(&m, &params(), &key());
        assert_eq!(el(&r, NO_ENDPOINT_SERVICES, "10.43.0.5 . tcp . 80"), Some("goto reject-chain"));
        assert_eq!(el(&r, NO_ENDPOINT_NODEPORTS, "tcp . 30080"), Some("goto reject-chain"));
        assert!(r.chains.is_empty());
        assert!(r.dispatch.is_empty() && r.hairpin.is_empty());
        // Not ready and not serving counts as no endpoint at all.
        let m = model(service(Protocol::Tcp, None), Some(eps(&[("10.42.0.2", false, false, true, "n1")])));
        let r = service_rules(&m, &params(), &key());
        assert_eq!(el(&r, NO_ENDPOINT_SERVICES, "10.43.0.5 . tcp . 80"), Some("goto reject-chain"));
        // Serving + terminating endpoints are used only while none is ready.
        let m = model(
            service(Protocol::Tcp, None),
            Some(eps(&[("10.42.0.2", false, true, true, "n1"), ("10.42.0.3", false, true, true, "n1")])),
        );
        let r = service_rules(&m, &params(), &key());
        assert_eq!(el(&r, SERVICE_IPS, "10.43.0.5 . tcp . 80"), Some("goto dnat-2"));
        let m = model(
            service(Protocol::Tcp, None),
            Some(eps(&[("10.42.0.2", false, true, true, "n1"), ("10.42.0.3", true, true, false, "n1")])),
        );
        let r = service_rules(&m, &params(), &key());
        assert_eq!(el(&r, SERVICE_IPS, "10.43.0.5 . tcp . 80"), Some("goto dnat-1"));
        assert_eq!(slot(&r, "10.43.0.5 . 80 . 0"), Some("10.42.0.3 . 8080"));
        assert!(slot(&r, "10.43.0.5 . 80 . 1").is_none());
        nft_check(&full(&m).1);
    }

    #[test]
    fn node_port_cluster_policy_masquerades() {
        let mut info = service(Protocol::Tcp, Some(30080));
        info.external_ips = vec!["198.51.100.7".parse().unwrap()];
        let m = model(info, Some(eps(&[("10.42.1.2", true, true, false, "n2")])));
        let r = service_rules(&m, &params(), &key());
        assert!(r.chains.is_empty());
        assert_eq!(el(&r, SERVICE_NODEPORTS, "tcp . 30080"), Some("goto masq-dnat-1"));
        assert_eq!(el(&r, SERVICE_IPS, "198.51.100.7 . tcp . 80"), Some("goto masq-dnat-1"));
        // Slots per destination as it arrives: the external IP with the
        // port, each node address with the nodePort.
        assert_eq!(slot(&r, "198.51.100.7 . 80 . 0"), Some("10.42.1.2 . 8080"));
        assert_eq!(slot(&r, "192.0.2.10 . 30080 . 0"), Some("10.42.1.2 . 8080"));
        let (_, text) = full(&m);
        assert!(text.contains("add rule ip rkt-unit masq-dnat-1 jump mark-for-masquerade\n"));
        assert!(text.contains("add rule ip rkt-unit masq-dnat-1 goto dnat-1\n"));
        nft_check(&text);
    }

    #[test]
    fn external_policy_local_keeps_source_and_drops_without_local_endpoints() {
        let mut info = service(Protocol::Tcp, Some(30080));
        info.external_local = true;
        info.external_ips = vec!["198.51.100.7".parse().unwrap()];
        // Only a remote endpoint: external traffic is dropped, the cluster
        // IP still works.
        let m = model(info.clone(), Some(eps(&[("10.42.1.2", true, true, false, "n2")])));
        let r = service_rules(&m, &params(), &key());
        assert_eq!(el(&r, NO_ENDPOINT_NODEPORTS, "tcp . 30080"), Some("drop"));
        assert_eq!(el(&r, NO_ENDPOINT_SERVICES, "198.51.100.7 . tcp . 80"), Some("drop"));
        assert_eq!(el(&r, SERVICE_IPS, "10.43.0.5 . tcp . 80"), Some("goto dnat-1"));
        nft_check(&full(&m).1);
        // With a local endpoint: external clients go to local endpoints
        // without a masquerade mark; pods and the node reach all.
        let m =
            model(info, Some(eps(&[("10.42.0.2", true, true, false, "n1"), ("10.42.1.2", true, true, false, "n2")])));
        let r = service_rules(&m, &params(), &key());
        let (ext, rules) = chain(&r, "external-")[0];
        assert!(rules[0].starts_with("ip saddr 10.42.0.0/16 goto service-"));
        assert_eq!(rules[1], "fib saddr type local jump mark-for-masquerade");
        assert!(rules[3].starts_with("goto local-"));
        assert!(!rules.iter().any(|r| r == "jump mark-for-masquerade"));
        let (_, local) = chain(&r, "local-")[0];
        assert_eq!(local, &vec!["meta l4proto tcp dnat to 10.42.0.2:8080".to_string()]);
        let (_, cluster) = chain(&r, "service-")[0];
        assert_eq!(
            cluster,
            &vec![
                "numgen random mod 2 == 0 meta l4proto tcp dnat to 10.42.0.2:8080".to_string(),
                "meta l4proto tcp dnat to 10.42.1.2:8080".to_string(),
            ]
        );
        assert_eq!(el(&r, SERVICE_NODEPORTS, "tcp . 30080"), Some(format!("goto {ext}").as_str()));
        assert_eq!(el(&r, SERVICE_IPS, "198.51.100.7 . tcp . 80"), Some(format!("goto {ext}").as_str()));
        // The cluster IP still spreads over all endpoints without a chain.
        assert_eq!(el(&r, SERVICE_IPS, "10.43.0.5 . tcp . 80"), Some("goto dnat-2"));
        assert!(slot(&r, "192.0.2.10 . 30080 . 0").is_none());
        nft_check(&full(&m).1);
    }

    #[test]
    fn internal_policy_local_without_local_endpoints_drops() {
        let mut info = service(Protocol::Tcp, None);
        info.internal_local = true;
        let m = model(info.clone(), Some(eps(&[("10.42.1.2", true, true, false, "n2")])));
        let r = service_rules(&m, &params(), &key());
        assert_eq!(el(&r, NO_ENDPOINT_SERVICES, "10.43.0.5 . tcp . 80"), Some("drop"));
        let m =
            model(info, Some(eps(&[("10.42.0.2", true, true, false, "n1"), ("10.42.1.2", true, true, false, "n2")])));
        let r = service_rules(&m, &params(), &key());
        // Only the local endpoint is a choice.
        assert_eq!(el(&r, SERVICE_IPS, "10.43.0.5 . tcp . 80"), Some("goto dnat-1"));
        assert_eq!(slot(&r, "10.43.0.5 . 80 . 0"), Some("10.42.0.2 . 8080"));
        assert!(r.chains.is_empty());
        assert_eq!(r.hairpin, ["10.42.0.2".parse().unwrap()].into());
        nft_check(&full(&m).1);
    }

    #[test]
    fn client_ip_affinity_uses_timed_sets() {
        let mut info = service(Protocol::Tcp, Some(30080));
        info.affinity_timeout = Some(60);
        let m =
            model(info, Some(eps(&[("10.42.0.2", true, true, false, "n1"), ("10.42.0.3", true, true, false, "n1")])));
        let r = service_rules(&m, &params(), &key());
        assert_eq!(r.sets.len(), 2);
        assert!(r.sets.values().all(|t| *t == 60));
        let (svc, rules) = chain(&r, "service-")[0];
        assert!(rules[0].starts_with("ip saddr @affinity-") && rules[0].contains(" goto endpoint-"));
        assert!(rules[1].starts_with("ip saddr @affinity-") && rules[1].contains(" goto endpoint-"));
        assert!(rules[2].starts_with("numgen random mod 2 == 0 goto endpoint-"));
        assert!(rules[3].starts_with("goto endpoint-"));
        assert_eq!(rules.len(), 4);
        assert_eq!(el(&r, SERVICE_IPS, "10.43.0.5 . tcp . 80"), Some(format!("goto {svc}").as_str()));
        let epc = chain(&r, "endpoint-");
        assert_eq!(epc.len(), 2);
        for (_, rules) in epc {
            assert!(rules[0].starts_with("update @affinity-") && rules[0].ends_with("{ ip saddr }"));
            assert!(rules[1].starts_with("meta l4proto tcp dnat to 10.42.0."));
        }
        // The nodePort goes through the same affinity chain, masqueraded.
        let (ext, rules) = chain(&r, "external-")[0];
        assert_eq!(rules, &vec!["jump mark-for-masquerade".to_string(), format!("goto {svc}")]);
        assert_eq!(el(&r, SERVICE_NODEPORTS, "tcp . 30080"), Some(format!("goto {ext}").as_str()));
        assert!(r.elements.keys().all(|(m, _)| !m.starts_with("endpoint-slots")));
        let (_, text) = full(&m);
        assert!(text.contains("flags dynamic,timeout ; timeout 60s"));
        nft_check(&text);
    }

    #[test]
    fn partial_sync_rewrites_only_what_changed_and_removes_leftovers() {
        let mut m = model(
            service(Protocol::Tcp, Some(30080)),
            Some(eps(&[("10.42.0.2", true, true, false, "n1"), ("10.42.0.3", true, true, false, "n1")])),
        );
        let mut other = service(Protocol::Tcp, None);
        other.cluster_ip = Some("10.43.0.6".parse().unwrap());
        m.set_service(ServiceKey::new("default", "other"), other);
        let (applied, full_text) = full(&m);
        m.take_dirty();
        // One endpoint goes away.
        m.set_slice("default".into(), "web-1".into(), eps(&[("10.42.0.2", true, true, false, "n1")]));
        let dirty = m.take_dirty();
        assert_eq!(dirty, [key()].into());
        let p = params();
        let next: BTreeMap<_, _> = dirty.iter().map(|k| (k.clone(), service_rules(&m, &p, k))).collect();
        let (text, written) = sync_text(&p, SyncKind::Partial, &applied, &next);
        assert_eq!(written, 1);
        let has = |t: &str, l: &str| t.lines().any(|x| x == l);
        assert!(
            has(&text, "delete element ip rkt-unit endpoint-slots-tcp { 10.43.0.5 . 80 . 1, 192.0.2.10 . 30080 . 1 }"),
            "slot 0 keeps its endpoint, slot 1 goes: {text}"
        );
        assert!(!text.contains("add element ip rkt-unit endpoint-slots"));
        assert!(has(&text, "delete element ip rkt-unit service-ips { 10.43.0.5 . tcp . 80 }"));
        assert!(has(&text, "add element ip rkt-unit service-ips { 10.43.0.5 . tcp . 80 : goto dnat-1 }"));
        assert!(has(&text, "delete element ip rkt-unit hairpin-endpoints { 10.42.0.3 . 10.42.0.3 }"), "{text}");
        assert!(!text.contains("10.43.0.6"), "the other Service is untouched");
        assert!(!text.contains("delete table") && !text.contains("delete chain"));
        nft_check(&format!("{full_text}{text}"));
        // The Service is deleted: all its elements go, but an endpoint
        // address another Service still uses stays a hairpin element.
        let mut applied2 = applied.clone();
        applied2.insert(key(), next[&key()].clone());
        let mut m2 = m.clone();
        m2.remove_service(&key());
        let mut shared = service(Protocol::Tcp, None);
        shared.cluster_ip = Some("10.43.0.7".parse().unwrap());
        let skey = ServiceKey::new("default", "shared");
        m2.set_service(skey.clone(), shared);
        let mut s = eps(&[("10.42.0.2", true, true, false, "n1")]);
        s.service = skey.clone();
        m2.set_slice("default".into(), "shared-1".into(), s);
        let next2: BTreeMap<_, _> = m2.take_dirty().iter().map(|k| (k.clone(), service_rules(&m2, &p, k))).collect();
        assert_eq!(next2.len(), 2);
        let (text2, _) = sync_text(&p, SyncKind::Partial, &applied2, &next2);
        assert!(text2.contains("delete element ip rkt-unit service-ips { 10.43.0.5 . tcp . 80 }"));
        assert!(text2.contains("delete element ip rkt-unit service-nodeports { tcp . 30080 }"));
        assert!(!text2.contains("delete element ip rkt-unit hairpin-endpoints"), "{text2}");
        nft_check(&format!("{full_text}{text}{text2}"));
        // Deleting the last user removes the hairpin element.
        let mut applied3 = applied2.clone();
        applied3.remove(&key());
        applied3.insert(skey.clone(), next2[&skey].clone());
        let next3: BTreeMap<_, _> = [(skey.clone(), ServiceRules::default())].into();
        let (text3, _) = sync_text(&p, SyncKind::Partial, &applied3, &next3);
        assert!(text3.contains("delete element ip rkt-unit hairpin-endpoints { 10.42.0.2 . 10.42.0.2 }"), "{text3}");
        nft_check(&format!("{full_text}{text}{text2}{text3}"));
        // A periodic resync over the same state is valid too, also when a
        // Service moves between the shared and its own chains.
        let mut m4 = m.clone();
        let mut aff = service(Protocol::Tcp, Some(30080));
        aff.affinity_timeout = Some(30);
        m4.set_service(key(), aff);
        let all: BTreeMap<_, _> =
            m4.service_keys().into_iter().map(|k| (k.clone(), service_rules(&m4, &p, &k))).collect();
        let (text4, _) = sync_text(&p, SyncKind::Resync, &applied, &all);
        assert!(text4.contains("flush map ip rkt-unit endpoint-slots-tcp"));
        nft_check(&format!("{full_text}{text4}"));
        let next5: BTreeMap<_, _> = [(key(), service_rules(&m, &p, &key()))].into();
        let (text5, _) = sync_text(&p, SyncKind::Partial, &all, &next5);
        assert!(text5.lines().filter(|l| l.starts_with("delete chain")).count() >= 3, "{text5}");
        nft_check(&format!("{full_text}{text4}{text5}"));
    }

    #[test]
    fn stale_udp_conntrack_follows_endpoint_removal() {
        let p = params();
        let m1 = model(
            service(Protocol::Udp, Some(30053)),
            Some(eps(&[("10.42.0.2", true, true, false, "n1"), ("10.42.0.3", true, true, false, "n1")])),
        );
        let m2 = model(service(Protocol::Udp, Some(30053)), Some(eps(&[("10.42.0.2", true, true, false, "n1")])));
        let m0 = model(service(Protocol::Udp, Some(30053)), None);
        let r1 = service_rules(&m1, &p, &key());
        let r2 = service_rules(&m2, &p, &key());
        let r0 = service_rules(&m0, &p, &key());
        let cmds: Vec<String> = stale_udp(Some(&r1), Some(&r2)).iter().map(|a| a.join(" ")).collect();
        assert_eq!(
            cmds,
            vec![
                "-D -p udp --orig-dst 10.43.0.5 --dst-nat 10.42.0.3",
                "-D -p udp --orig-port-dst 30053 --dst-nat 10.42.0.3",
            ]
        );
        // From no endpoints to some: flows caching the rejection go.
        let cmds: Vec<String> = stale_udp(Some(&r0), Some(&r2)).iter().map(|a| a.join(" ")).collect();
        assert_eq!(cmds, vec!["-D -p udp --orig-dst 10.43.0.5", "-D -p udp --orig-port-dst 30053"]);
        // TCP needs nothing.
        let t = service_rules(&model(service(Protocol::Tcp, None), None), &p, &key());
        assert!(stale_udp(Some(&t), None).is_empty());
    }
}
