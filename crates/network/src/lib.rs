//! rkube-network: the node's pod network across nodes, host-gw style (issue 8
//! item 1), as flannel's host-gw backend does it under k3s.
//!
//! Each node's pods live on its CNI bridge (the kubelet's conflist) in the
//! node's `spec.podCIDR`. This component, an API client over Nodes (DESIGN:
//! never storage), routes every OTHER node's pod CIDR via that node's
//! InternalIP (`ip route replace <podCIDR> via <InternalIP>`), removes the
//! route when the node goes away or changes, and resyncs every
//! [`RESYNC_PERIOD`] so routes deleted by hand come back. It also keeps:
//!
//! - a blackhole route for the whole cluster CIDR, beneath the specific
//!   routes (longest prefix wins), so no pod address follows the default
//!   route out of the machine;
//! - the service CIDR routed to a local dummy device, so ClusterIP traffic
//!   never leaves the machine while host→ClusterIP connections still work
//!   through kube-proxy's DNAT;
//! - one nft table (family ip) masquerading pod traffic that leaves the
//!   cluster CIDR (flannel's rules).
//!
//! Modules: [`cidr`] (prefixes), [`routes`] (the pure desired-route
//! computation and diff), [`host`] (`ip`/`nft` on the host).

#![warn(missing_docs)]

pub mod cidr;
pub mod host;
pub mod routes;

use std::collections::HashSet;
use std::future::Future;
use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::runtime::{reflector, watcher, WatchStreamExt};
use kube::Api;

use cidr::Cidr;

/// The component name in logs.
pub const COMPONENT: &str = "rkube-network";

/// How often [`run`] re-reads the host's routes and re-applies the whole
/// desired state even without Node events (flannel's host-gw resyncs its
/// routes every 10 s; a minute is enough to heal manual deletions).
pub const RESYNC_PERIOD: Duration = Duration::from_secs(60);

/// How soon [`run`] retries after a failed sync.
const RETRY_AFTER: Duration = Duration::from_secs(5);

/// The first and the longest wait between [`run`]'s attempts at
/// [`ensure_base`] (doubling from 5 s up to 60 s).
const BASE_BACKOFF: (Duration, Duration) = (Duration::from_secs(5), Duration::from_secs(60));

/// The shortest cluster or service prefix accepted: a shorter one (e.g.
/// `0.0.0.0/0`) would claim the host's default route or most of the
/// address space.
pub const MIN_PREFIX: u8 = 8;

/// A timer deadline that never fires in practice (one year).
const IDLE: Duration = Duration::from_secs(365 * 24 * 3600);

/// Everything this node's network owns on the host. All names derive from
/// the data dir (the caller computes them), so several clusters can share a
/// machine.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HostNames {
    /// The cluster (pod) CIDR, e.g. `"10.42.0.0/16"`.
    pub cluster_cidr: String,
    /// The service CIDR, e.g. `"10.43.0.0/16"`.
    pub service_cidr: String,
    /// The dummy link the service CIDR is routed to, e.g. `"rkube-svc"`
    /// (at most 15 bytes, the kernel's IFNAMSIZ-1).
    pub service_device: String,
    /// The nft table (family ip) holding the masquerade rules, e.g.
    /// `"rkube-network"`.
    pub table: String,
}

impl HostNames {
    /// The parsed cluster and service CIDRs. Err ([`NetworkError::Config`]):
    /// either is not an IPv4 CIDR or is shorter than /[`MIN_PREFIX`], the
    /// two overlap, the device name is empty or longer than 15 bytes, or the
    /// table name is empty. Pure; [`HostNames::check_host`] adds the checks
    /// against the host's addresses.
    pub fn validate(&self) -> Result<(Cidr, Cidr), NetworkError> {
        let cluster: Cidr = self
            .cluster_cidr
            .parse()
            .map_err(|e| NetworkError::Config(format!("cluster CIDR: {e}")))?;
        let service: Cidr = self
            .service_cidr
            .parse()
            .map_err(|e| NetworkError::Config(format!("service CIDR: {e}")))?;
        if !cluster.addr().is_ipv4() || !service.addr().is_ipv4() {
            return Err(NetworkError::Config(format!(
                "cluster CIDR {cluster} and service CIDR {service} must be IPv4 (the masquerade table is of family ip)"
            )));
        }
        for (what, flag, c) in [("cluster", "--cluster-cidr", &cluster), ("service", "--service-cidr", &service)] {
            if c.prefix() < MIN_PREFIX {
                return Err(NetworkError::Config(format!(
                    "the {what} CIDR {c} is shorter than /{MIN_PREFIX}: it would take over the host's routes \
                     (with /0, its default route); choose a smaller private range with {flag}"
                )));
            }
        }
        if cluster.overlaps(&service) {
            return Err(NetworkError::Config(format!(
                "the cluster CIDR {cluster} and the service CIDR {service} overlap; choose disjoint ranges"
            )));
        }
        let dev = &self.service_device;
        if dev.is_empty() || dev.len() > 15 || dev.contains(['/', ' ']) {
            return Err(NetworkError::Config(format!(
                "service device name {dev:?} must be 1 to 15 bytes without '/' or spaces"
            )));
        }
        if self.table.is_empty() || !self.table.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err(NetworkError::Config(format!(
                "nft table name {:?} must be non-empty ASCII letters, digits, '-' or '_'",
                self.table
            )));
        }
        Ok((cluster, service))
    }

    /// [`HostNames::validate`], then refuses cluster or service ranges that
    /// contain one of the host's own IPv4 addresses (except those on
    /// `own_devices`: the CNI bridge carries the pods' gateway inside the
    /// cluster CIDR) or the gateway of one of its default routes: routing
    /// that range into the pod network or the service device would cut the
    /// host off. Reads the host with `ip` (the calling thread's network
    /// namespace). Err: [`NetworkError::Config`] naming the address and the
    /// flag to change, or [`NetworkError::Command`] if `ip` failed.
    pub fn check_host(&self, own_devices: &[&str]) -> Result<(Cidr, Cidr), NetworkError> {
        let (cluster, service) = self.validate()?;
        let (addrs, gateways) = host::host_addresses_and_gateways()?;
        if let Some(m) = host_conflict(&cluster, &service, &addrs, &gateways, own_devices) {
            return Err(NetworkError::Config(m));
        }
        Ok((cluster, service))
    }
}

/// The pure half of [`HostNames::check_host`]: a message for the first
/// host address (device, address) not on `own_devices`, or default gateway,
/// inside `cluster` or `service`; None when there is none.
fn host_conflict(
    cluster: &Cidr,
    service: &Cidr,
    addrs: &[(String, IpAddr)],
    gateways: &[IpAddr],
    own_devices: &[&str],
) -> Option<String> {
    let ranges = [("cluster", "--cluster-cidr", cluster), ("service", "--service-cidr", service)];
    for (what, flag, c) in ranges {
        for (dev, a) in addrs {
            if !own_devices.contains(&dev.as_str()) && c.contains_ip(*a) {
                return Some(format!(
                    "the {what} CIDR {c} contains this host's address {a} (on {dev}); choose a range the host does not use with {flag} (on the servers and every agent)"
                ));
            }
        }
        for g in gateways {
            if c.contains_ip(*g) {
                return Some(format!(
                    "the {what} CIDR {c} contains this host's default gateway {g}; choose a range the host does not use with {flag} (on the servers and every agent)"
                ));
            }
        }
    }
    None
}

/// How [`run`] starts.
#[derive(Clone)]
pub struct NodeNetworkConfig {
    /// A client that may list and watch every Node: rkube gives the node
    /// network kube-proxy's identity (`system:kube-proxy`, bound to
    /// `system:node-proxier`); a node's own credential may read only its
    /// own Node (upstream's AuthorizeNodeWithSelectors).
    pub client: kube::Client,
    /// This node's name; its own podCIDR is never routed (the CNI bridge's
    /// connected route serves it).
    pub node_name: String,
    /// This node's InternalIP (logged; other nodes route to it).
    pub node_ip: IpAddr,
    /// This node's CNI bridge (its pods' gateway), e.g. `"rkube0"`: a next
    /// hop the host reaches through this device is refused.
    pub bridge: String,
    /// What this node's network owns on the host.
    pub names: HostNames,
}

/// What went wrong; the message says what happened and what to do.
#[derive(Debug, thiserror::Error)]
pub enum NetworkError {
    /// The configuration is unusable.
    #[error("rkube-network configuration: {0}")]
    Config(String),
    /// A route rkube would program is already held by a route that is not
    /// rkube's; the message names it and the flag to change.
    #[error("route conflict: {0}")]
    Conflict(String),
    /// A host prerequisite is missing and could not be set.
    #[error("host prerequisite: {0}")]
    Host(String),
    /// An `ip` or `nft` command failed or could not run.
    #[error("`{command}` failed: {detail}")]
    Command {
        /// The command line.
        command: String,
        /// Exit status and stderr, or why it could not start.
        detail: String,
    },
    /// The Node watch ended.
    #[error("the Node watch ended: {0}")]
    Watch(String),
}

fn read_sysctl(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

fn set_sysctl(path: &Path, value: &str, name: &str) -> Result<(), NetworkError> {
    if read_sysctl(path).as_deref() == Some(value) {
        return Ok(());
    }
    std::fs::write(path, value).map_err(|e| {
        NetworkError::Host(format!(
            "cannot set {name}={value} ({e}); run `sysctl -w {name}={value}` as root"
        ))
    })?;
    tracing::info!(component = COMPONENT, sysctl = name, value, "sysctl set");
    Ok(())
}

/// Tries `modprobe <module>` when `sysctl` (a path under /proc/sys) is
/// missing; Err says which module to load if it is still missing.
fn ensure_module(sysctl: &Path, module: &str, what: &str) -> Result<(), NetworkError> {
    if sysctl.exists() {
        return Ok(());
    }
    let tried = match std::process::Command::new("modprobe").arg(module).output() {
        Ok(o) if o.status.success() => String::new(),
        Ok(o) => format!(" (`modprobe {module}` failed: {})", String::from_utf8_lossy(&o.stderr).trim()),
        Err(e) => format!(" (`modprobe {module}` could not run: {e})"),
    };
    if sysctl.exists() {
        tracing::info!(component = COMPONENT, module, "kernel module loaded");
        return Ok(());
    }
    Err(NetworkError::Host(format!(
        "{what}: {} is missing{tried}; load the {module} kernel module (`modprobe {module}`, or build it into the kernel)",
        sysctl.display()
    )))
}

/// Sets and checks the host prerequisites of the pod network, as k3s's agent
/// does at start: `net.ipv4.ip_forward=1`; the br_netfilter module present
/// (its sysctl exists; `modprobe br_netfilter` is tried only when it does
/// not) with `net.bridge.bridge-nf-call-iptables=1`, so bridged pod-to-pod
/// traffic passes the netfilter hooks kube-proxy's rules live in; conntrack
/// present (the `nf_conntrack` sysctls; `modprobe nf_conntrack` likewise).
/// These sysctls belong to the network namespace of the calling thread.
/// Idempotent. Err: [`NetworkError::Host`] naming the missing piece and how
/// to provide it.
pub fn prepare_host() -> Result<(), NetworkError> {
    set_sysctl(Path::new("/proc/sys/net/ipv4/ip_forward"), "1", "net.ipv4.ip_forward")?;
    let bridge_nf = Path::new("/proc/sys/net/bridge/bridge-nf-call-iptables");
    ensure_module(bridge_nf, "br_netfilter", "bridged pod traffic must pass netfilter")?;
    set_sysctl(bridge_nf, "1", "net.bridge.bridge-nf-call-iptables")?;
    ensure_module(
        Path::new("/proc/sys/net/netfilter/nf_conntrack_max"),
        "nf_conntrack",
        "connection tracking (NAT, Services) is required",
    )?;
    Ok(())
}

/// Programs the node-independent state: the cluster-CIDR blackhole, the
/// service device with its route, and the masquerade table. Idempotent.
/// Err: bad names ([`NetworkError::Config`]), a route not rkube's already
/// holds the cluster or service CIDR ([`NetworkError::Conflict`]; nothing
/// is replaced), or a command failed.
pub fn ensure_base(names: &HostNames) -> Result<(), NetworkError> {
    let (cluster, service) = names.validate()?;
    host::ensure_blackhole(&cluster)?;
    host::ensure_service_device(&names.service_device, &service)?;
    host::ensure_masquerade(names)
}

/// What one [`sync_routes`] did.
#[derive(Debug, Default, PartialEq)]
pub struct SyncOutcome {
    /// The routes now programmed (destination → next hop).
    pub routes: routes::Routes,
    /// Why nodes or CIDRs were left out (including next hops that are not
    /// directly reachable).
    pub skipped: Vec<String>,
}

/// One reconcile of the per-node routes: computes the routes `nodes` call
/// for ([`routes::desired_routes`]), drops next hops that are not directly
/// reachable or go through `avoid_devs` ([`host::check_next_hop`]), reads the
/// routes rkube-network has ([`host::managed_routes`]) and applies the
/// difference (removals first, then `ip route replace`), logging each change
/// at info. Err: a command failed (the caller retries).
pub fn sync_routes(
    names: &HostNames,
    own_name: &str,
    nodes: &[Node],
    avoid_devs: &[&str],
) -> Result<SyncOutcome, NetworkError> {
    let (cluster, _) = names.validate()?;
    let desired = routes::desired_routes(nodes, own_name, &cluster);
    let mut skipped = desired.skipped;
    let mut want = routes::Routes::new();
    for (cidr, via) in desired.routes {
        match host::check_next_hop(via, avoid_devs)? {
            Ok(()) => {
                want.insert(cidr, via);
            }
            Err(reason) => skipped.push(format!(
                "pod CIDR {cidr}: the node's InternalIP {via} is not directly reachable: {reason}"
            )),
        }
    }
    let current = host::managed_routes(&cluster)?;
    // Never overwrite a route that is not ours at a pod CIDR (e.g. a
    // container runtime's bridge inside the cluster CIDR).
    for (cidr, via) in routes::diff(&current, &want).replace {
        let foreign = host::foreign_routes_at(&cidr, host::is_rkube_node_route)?;
        if !foreign.is_empty() {
            want.remove(&cidr);
            skipped.push(format!(
                "pod CIDR {cidr} (via {via}): the host already routes it ({}); remove that route or choose another --cluster-cidr",
                foreign.join("; ")
            ));
        }
    }
    let diff = routes::diff(&current, &want);
    for (cidr, via) in &diff.remove {
        host::delete_route(cidr, *via)?;
        tracing::info!(component = COMPONENT, route = %cidr, via = %via, "route removed");
    }
    for (cidr, via) in &diff.replace {
        host::replace_route(cidr, *via)?;
        tracing::info!(component = COMPONENT, route = %cidr, via = %via, "route added");
    }
    Ok(SyncOutcome { routes: want, skipped })
}

/// Runs the node's pod network until `stop` resolves: checks the names,
/// programs [`ensure_base`], then watches Nodes (kube-runtime watcher with
/// backoff) and calls [`sync_routes`] after the initial list, on every Node
/// change that alters the desired routes (pod CIDRs, InternalIPs, nodes
/// added or deleted — status heartbeats alone do not touch the host), every
/// [`RESYNC_PERIOD`] (re-applying [`ensure_base`] too), and 5 s after a
/// failed sync. Before watching, [`ensure_base`] is retried until it
/// succeeds (5 s doubling to 60 s, each failure logged at error with what
/// to do), since a returned component is never restarted. When this node's
/// own `spec.podCIDR(s)` lies outside the cluster CIDR (agent and servers
/// disagree on `--cluster-cidr`), an error saying so is logged once per
/// change. The `ip`/`nft` commands run synchronously on the calling
/// task (milliseconds each), in the calling thread's network namespace. Skip reasons are warned about once each. On stop
/// the host state stays in place (pods keep their connectivity across a
/// restart, as flannel leaves its routes); [`cleanup`] removes it.
/// Err: invalid names ([`HostNames::check_host`]: fatal, the flags must
/// change), or the watch stream ended.
pub async fn run(
    config: NodeNetworkConfig,
    stop: impl Future<Output = ()> + Send,
) -> Result<(), NetworkError> {
    let names = config.names.clone();
    let (cluster, _) = names.validate()?;
    let avoid = [config.bridge.as_str(), names.service_device.as_str()];
    let mut stop = std::pin::pin!(stop);
    let mut backoff = BASE_BACKOFF.0;
    loop {
        match names.check_host(&avoid).and_then(|_| ensure_base(&names)) {
            Ok(()) => break,
            Err(e @ NetworkError::Config(_)) => return Err(e),
            Err(e) => {
                tracing::error!(
                    component = COMPONENT,
                    error = %e,
                    retry_in_s = backoff.as_secs(),
                    "cannot program the pod network base (cluster-CIDR blackhole, service device and route, masquerade table); \
                     pods on this node cannot reach other nodes or Services until this is fixed: do what the error says; retrying"
                );
                tokio::select! {
                    _ = &mut stop => {
                        tracing::info!(component = COMPONENT, "pod network stopped before its base was programmed");
                        return Ok(());
                    }
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(BASE_BACKOFF.1);
            }
        }
    }
    tracing::info!(
        component = COMPONENT,
        node = %config.node_name,
        node_ip = %config.node_ip,
        cluster_cidr = %names.cluster_cidr,
        service_cidr = %names.service_cidr,
        "pod network started (host-gw)"
    );
    let api: Api<Node> = Api::all(config.client.clone());
    let (reader, writer) = reflector::store::<Node>();
    let events = reflector::reflector(writer, watcher::watcher(api, watcher::Config::default()).default_backoff());
    let mut events = std::pin::pin!(events);
    let mut resync = tokio::time::interval(RESYNC_PERIOD);
    resync.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let retry = tokio::time::sleep(IDLE);
    let mut retry = std::pin::pin!(retry);
    // `dirty`: a Node changed, sync if the routing inputs did; `force`: sync
    // regardless (initial list, resync, retry).
    let (mut ready, mut dirty, mut force, mut base_due) = (false, false, false, false);
    let mut last_desired: Option<routes::DesiredRoutes> = None;
    let mut warned: HashSet<String> = HashSet::new();
    let mut own_outside: Vec<Cidr> = Vec::new();
    loop {
        tokio::select! {
            _ = &mut stop => {
                tracing::info!(component = COMPONENT, "pod network stopped; routes stay until cleanup");
                return Ok(());
            }
            ev = events.next() => match ev {
                None => return Err(NetworkError::Watch("the watcher stream closed".into())),
                Some(Ok(watcher::Event::InitDone)) => { ready = true; force = true; }
                Some(Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_))) => dirty = true,
                Some(Ok(_)) => {}
                Some(Err(e)) => tracing::warn!(component = COMPONENT, error = %e, "watching Nodes failed; retrying with backoff"),
            },
            _ = resync.tick() => { force = true; base_due = true; }
            _ = &mut retry => { force = true; }
        }
        if !ready || !(dirty || force) {
            continue;
        }
        let nodes: Vec<Node> = reader.state().iter().map(|n| (**n).clone()).collect();
        let outside = routes::own_pod_cidrs_outside(&nodes, &config.node_name, &cluster);
        if outside != own_outside {
            for c in &outside {
                tracing::error!(
                    component = COMPONENT,
                    "node {} has podCIDR {c} outside --cluster-cidr {cluster}: start the agent with the servers' --cluster-cidr",
                    config.node_name
                );
            }
            own_outside = outside;
        }
        // Node status heartbeats change Nodes every few seconds; only a change
        // of pod CIDRs or InternalIPs needs the host (the resync catches the rest).
        let desired = routes::desired_routes(&nodes, &config.node_name, &cluster);
        if !force && last_desired.as_ref() == Some(&desired) {
            dirty = false;
            continue;
        }
        (dirty, force) = (false, false);
        retry.as_mut().reset(tokio::time::Instant::now() + IDLE);
        let result = if base_due { ensure_base(&names) } else { Ok(()) }
            .and_then(|()| sync_routes(&names, &config.node_name, &nodes, &avoid));
        match result {
            Ok(outcome) => {
                base_due = false;
                last_desired = Some(desired);
                for reason in &outcome.skipped {
                    if warned.insert(reason.clone()) {
                        tracing::warn!(component = COMPONENT, "{reason}; no route programmed for it");
                    }
                }
                warned.retain(|r| outcome.skipped.contains(r));
            }
            Err(e @ (NetworkError::Conflict(_) | NetworkError::Config(_))) => {
                last_desired = None;
                tracing::error!(component = COMPONENT, error = %e, "syncing the pod network failed; do what the error says; retrying in 5 s");
                retry.as_mut().reset(tokio::time::Instant::now() + RETRY_AFTER);
            }
            Err(e) => {
                last_desired = None;
                tracing::warn!(component = COMPONENT, error = %e, "syncing pod network routes failed; retrying in 5 s");
                retry.as_mut().reset(tokio::time::Instant::now() + RETRY_AFTER);
            }
        }
    }
}

/// Removes everything [`run`] programmed for `names`: the per-node routes
/// and the blackhole inside the cluster CIDR (only routes of protocol
/// [`host::RTPROT_RKUBE`]), the service route and device, and the nft table.
/// Never touches anything else. Idempotent. Err: invalid names or a command
/// failed.
pub fn cleanup(names: &HostNames) -> Result<(), NetworkError> {
    let (cluster, service) = names.validate()?;
    host::remove_all(names, &cluster, &service)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> HostNames {
        HostNames {
            cluster_cidr: "10.42.0.0/16".into(),
            service_cidr: "10.43.0.0/16".into(),
            service_device: "rkube-svc".into(),
            table: "rkube-network".into(),
        }
    }

    #[test]
    fn validate_accepts_k3s_defaults() {
        let (c, s) = names().validate().unwrap();
        assert_eq!((c.to_string(), s.to_string()), ("10.42.0.0/16".into(), "10.43.0.0/16".into()));
    }

    #[test]
    fn validate_rejects_overlap_long_device_and_bad_table() {
        let mut n = names();
        n.service_cidr = "10.42.128.0/17".into();
        assert!(n.validate().unwrap_err().to_string().contains("overlap"));
        let mut n = names();
        n.service_device = "a-very-long-devname".into();
        assert!(n.validate().is_err());
        let mut n = names();
        n.table = "bad table".into();
        assert!(n.validate().is_err());
    }

    #[test]
    fn validate_rejects_prefixes_shorter_than_8() {
        let mut n = names();
        n.cluster_cidr = "0.0.0.0/0".into();
        n.service_cidr = "10.43.0.0/16".into();
        let e = n.validate().unwrap_err().to_string();
        assert!(e.contains("0.0.0.0/0") && e.contains("--cluster-cidr"), "{e}");
        let mut n = names();
        n.service_cidr = "0.0.0.0/7".into();
        n.cluster_cidr = "10.42.0.0/16".into();
        assert!(n.validate().unwrap_err().to_string().contains("--service-cidr"));
        let mut n = names();
        n.cluster_cidr = "10.0.0.0/8".into();
        n.service_cidr = "172.16.0.0/12".into();
        assert!(n.validate().is_ok(), "/8 is the shortest accepted");
    }

    #[test]
    fn host_addresses_and_default_gateway_inside_the_ranges_are_refused() {
        let (c, s) = names().validate().unwrap();
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let addrs = vec![("lo".to_string(), ip("127.0.0.1")), ("eth0".to_string(), ip("192.168.1.10"))];
        assert_eq!(host_conflict(&c, &s, &addrs, &[ip("192.168.1.1")], &["rkube0"]), None);
        // The CNI bridge's gateway address inside the cluster CIDR is ours.
        let bridge = [addrs.clone(), vec![("rkube0".to_string(), ip("10.42.0.1"))]].concat();
        assert_eq!(host_conflict(&c, &s, &bridge, &[], &["rkube0"]), None);
        let lan = [addrs.clone(), vec![("eth1".to_string(), ip("10.42.7.5"))]].concat();
        let m = host_conflict(&c, &s, &lan, &[], &["rkube0"]).unwrap();
        assert!(m.contains("10.42.7.5 (on eth1)") && m.contains("--cluster-cidr"), "{m}");
        let m = host_conflict(&c, &s, &addrs, &[ip("10.43.0.1")], &["rkube0"]).unwrap();
        assert!(m.contains("default gateway 10.43.0.1") && m.contains("--service-cidr"), "{m}");
    }

    #[test]
    fn masquerade_script_is_flannels_rules_in_one_table() {
        let s = host::masquerade_script(&names());
        assert!(s.starts_with("table ip rkube-network\ndelete table ip rkube-network\n"));
        assert!(s.contains("type nat hook postrouting priority srcnat; policy accept;"));
        assert!(s.contains("ip saddr 10.42.0.0/16 ip daddr 10.42.0.0/16 return"));
        assert!(s.contains("ip saddr 10.42.0.0/16 ip daddr 10.43.0.0/16 return"));
        assert!(s.contains("ip saddr 10.42.0.0/16 ip daddr != 224.0.0.0/4 masquerade fully-random"));
    }
}
