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
    /// The parsed cluster and service CIDRs. Err: either is not a CIDR, the
    /// two overlap, the device name is empty or longer than 15 bytes, or the
    /// table name is empty.
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
/// failed sync. The `ip`/`nft` commands run synchronously on the calling
/// task (milliseconds each), in the calling thread's network namespace. Skip reasons are warned about once each. On stop
/// the host state stays in place (pods keep their connectivity across a
/// restart, as flannel leaves its routes); [`cleanup`] removes it.
/// Err: invalid names, the first [`ensure_base`] failed, or the watch
/// stream ended.
pub async fn run(
    config: NodeNetworkConfig,
    stop: impl Future<Output = ()> + Send,
) -> Result<(), NetworkError> {
    let names = config.names.clone();
    let (cluster, _) = names.validate()?;
    ensure_base(&names)?;
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
    let mut stop = std::pin::pin!(stop);
    let mut resync = tokio::time::interval(RESYNC_PERIOD);
    resync.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let retry = tokio::time::sleep(IDLE);
    let mut retry = std::pin::pin!(retry);
    // `dirty`: a Node changed, sync if the routing inputs did; `force`: sync
    // regardless (initial list, resync, retry).
    let (mut ready, mut dirty, mut force, mut base_due) = (false, false, false, false);
    let mut last_desired: Option<routes::DesiredRoutes> = None;
    let mut warned: HashSet<String> = HashSet::new();
    let avoid = [config.bridge.as_str(), names.service_device.as_str()];
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
    fn masquerade_script_is_flannels_rules_in_one_table() {
        let s = host::masquerade_script(&names());
        assert!(s.starts_with("table ip rkube-network\ndelete table ip rkube-network\n"));
        assert!(s.contains("type nat hook postrouting priority srcnat; policy accept;"));
        assert!(s.contains("ip saddr 10.42.0.0/16 ip daddr 10.42.0.0/16 return"));
        assert!(s.contains("ip saddr 10.42.0.0/16 ip daddr 10.43.0.0/16 return"));
        assert!(s.contains("ip saddr 10.42.0.0/16 ip daddr != 224.0.0.0/4 masquerade fully-random"));
    }
}
