//! The node IPAM controller with upstream's range allocator
//! (`pkg/controller/nodeipam/ipam/range_allocator.go` and
//! `cidrset/cidr_set.go`): every node gets a pod range (`spec.podCIDR`
//! and `spec.podCIDRs`) carved from `--cluster-cidr` (one range per
//! comma-separated CIDR, for dual-stack) with prefix
//! `--node-cidr-mask-size` (24 for IPv4, 64 for IPv6). Ranges already on
//! nodes are marked used at start; a deleted node's ranges are released.
//! When none is left the node gets the event `CIDRNotAvailable` ("Node
//! <name> status is now: CIDRNotAvailable") and is retried.
//!
//! Upstream allocates only with `--allocate-node-cidrs`; rkube always
//! does when the controller runs, as k3s (which sets that flag).

use std::collections::{BTreeSet, HashMap};
use std::net::IpAddr;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;

use crate::events;
use crate::runtime::{is_not_found, Ctx, Error, Stop};

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "node-ipam-controller";
/// The older name `--controllers` also accepts.
pub const ALIAS: &str = "nodeipam";
/// The kube-system ServiceAccount it runs as.
pub const SERVICE_ACCOUNT: &str = "node-controller";
/// Upstream's limit on how many more bits a node range may have than the
/// cluster range (`clusterSubnetMaxDiff`).
const MAX_DIFF: u8 = 16;
/// How often nodes still waiting for a range are retried.
const RETRY: Duration = Duration::from_secs(5);

/// The allocator's errors, in upstream's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CidrError {
    /// Every range is taken.
    #[error("CIDR allocation failed; there are no remaining CIDRs left to allocate in the accepted range")]
    Exhausted,
    /// The node prefix is more than 16 bits longer than the cluster's.
    #[error("New CIDR set failed; the node CIDR size is too big")]
    SubnetTooBig,
    /// Anything malformed.
    #[error("{0}")]
    Invalid(String),
}

/// An IP network: the address as a number and the prefix length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Net {
    /// The network address (host bits zero).
    pub addr: u128,
    /// The prefix length.
    pub prefix: u8,
    /// IPv6 (else IPv4).
    pub v6: bool,
}

impl Net {
    /// Parses `a.b.c.d/n` or `x::/n`; host bits are cleared.
    pub fn parse(s: &str) -> Result<Net, CidrError> {
        let bad = || CidrError::Invalid(format!("invalid CIDR address: {s}"));
        let (ip, prefix) = s.trim().split_once('/').ok_or_else(bad)?;
        let ip: IpAddr = ip.parse().map_err(|_| bad())?;
        let prefix: u8 = prefix.parse().map_err(|_| bad())?;
        let (addr, bits, v6) = match ip {
            IpAddr::V4(a) => (u32::from(a) as u128, 32, false),
            IpAddr::V6(a) => (u128::from(a), 128, true),
        };
        if prefix > bits {
            return Err(bad());
        }
        Ok(Net { addr: addr & mask(prefix, bits), prefix, v6 })
    }

    fn bits(&self) -> u8 {
        if self.v6 {
            128
        } else {
            32
        }
    }
}

fn mask(prefix: u8, bits: u8) -> u128 {
    if prefix == 0 {
        0
    } else {
        let all = if bits == 128 { u128::MAX } else { (1u128 << bits) - 1 };
        all & !((1u128 << (bits - prefix)) - 1) & all
    }
}

impl std::fmt::Display for Net {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.v6 {
            write!(f, "{}/{}", std::net::Ipv6Addr::from(self.addr), self.prefix)
        } else {
            write!(f, "{}/{}", std::net::Ipv4Addr::from(self.addr as u32), self.prefix)
        }
    }
}

/// The node ranges of one cluster range (upstream `CidrSet`): a bitmap,
/// allocation from a rotating next candidate.
#[derive(Debug, Clone)]
pub struct CidrSet {
    cluster: Net,
    node_prefix: u8,
    used: Vec<bool>,
    next: usize,
}

impl CidrSet {
    /// The ranges of prefix `node_prefix` inside `cluster`.
    pub fn new(cluster: Net, node_prefix: u8) -> Result<CidrSet, CidrError> {
        if node_prefix < cluster.prefix || node_prefix > cluster.bits() {
            return Err(CidrError::Invalid(format!(
                "node CIDR mask size {node_prefix} does not fit the cluster CIDR {cluster}"
            )));
        }
        if node_prefix - cluster.prefix > MAX_DIFF {
            return Err(CidrError::SubnetTooBig);
        }
        Ok(CidrSet { cluster, node_prefix, used: vec![false; 1 << (node_prefix - cluster.prefix)], next: 0 })
    }

    /// The cluster range.
    pub fn cluster(&self) -> Net {
        self.cluster
    }

    fn nth(&self, i: usize) -> Net {
        let shift = self.cluster.bits() - self.node_prefix;
        Net { addr: self.cluster.addr + ((i as u128) << shift), prefix: self.node_prefix, v6: self.cluster.v6 }
    }

    /// The next free range.
    pub fn allocate_next(&mut self) -> Result<Net, CidrError> {
        let n = self.used.len();
        for k in 0..n {
            let i = (self.next + k) % n;
            if !self.used[i] {
                self.used[i] = true;
                self.next = (i + 1) % n;
                return Ok(self.nth(i));
            }
        }
        Err(CidrError::Exhausted)
    }

    /// The indices `net` covers (none when it is outside the cluster range
    /// or of the other family).
    fn span(&self, net: &Net) -> Option<(usize, usize)> {
        if net.v6 != self.cluster.v6 {
            return None;
        }
        let bits = self.cluster.bits();
        // They overlap when they agree on the shorter prefix.
        let prefix = net.prefix.min(self.cluster.prefix);
        let (a, b) = (net.addr & mask(prefix, bits), self.cluster.addr & mask(prefix, bits));
        if a != b {
            return None;
        }
        let shift = bits - self.node_prefix;
        let start = net.addr.max(self.cluster.addr);
        let size_net = if net.prefix == 0 { u128::MAX } else { (1u128 << (bits - net.prefix)) - 1 };
        let end = net.addr.saturating_add(size_net).min(self.cluster.addr + (((self.used.len() as u128) << shift) - 1));
        Some((((start - self.cluster.addr) >> shift) as usize, ((end - self.cluster.addr) >> shift) as usize))
    }

    /// Marks `net` used (a range found on a node).
    pub fn occupy(&mut self, net: &Net) -> bool {
        match self.span(net) {
            Some((a, b)) => {
                self.used[a..=b].iter_mut().for_each(|u| *u = true);
                true
            }
            None => false,
        }
    }

    /// Marks `net` free again.
    pub fn release(&mut self, net: &Net) -> bool {
        match self.span(net) {
            Some((a, b)) => {
                self.used[a..=b].iter_mut().for_each(|u| *u = false);
                true
            }
            None => false,
        }
    }
}

/// The allocator of a (possibly dual-stack) cluster: one [`CidrSet`] per
/// cluster range.
#[derive(Debug, Clone)]
pub struct Allocator {
    sets: Vec<CidrSet>,
}

impl Allocator {
    /// From `--cluster-cidr` (comma-separated) and `--node-cidr-mask-size`
    /// (`None`: 24 for IPv4, 64 for IPv6).
    pub fn new(cluster_cidr: &str, mask: Option<u8>) -> Result<Allocator, CidrError> {
        let mut sets = Vec::new();
        for c in cluster_cidr.split(',').filter(|c| !c.trim().is_empty()) {
            let net = Net::parse(c)?;
            sets.push(CidrSet::new(net, mask.unwrap_or(if net.v6 { 64 } else { 24 }))?);
        }
        if sets.is_empty() {
            return Err(CidrError::Invalid("no cluster CIDR".into()));
        }
        Ok(Allocator { sets })
    }

    /// One range from each cluster range, in order; nothing is kept when
    /// one of them is exhausted.
    pub fn allocate(&mut self) -> Result<Vec<Net>, CidrError> {
        let mut out = Vec::new();
        for i in 0..self.sets.len() {
            match self.sets[i].allocate_next() {
                Ok(n) => out.push(n),
                Err(e) => {
                    for (j, n) in out.iter().enumerate() {
                        self.sets[j].release(n);
                    }
                    return Err(e);
                }
            }
        }
        Ok(out)
    }

    /// Marks the node's ranges used.
    pub fn occupy(&mut self, cidrs: &[String]) {
        for c in cidrs {
            if let Ok(n) = Net::parse(c) {
                self.sets.iter_mut().any(|s| s.occupy(&n));
            }
        }
    }

    /// Frees the node's ranges.
    pub fn release(&mut self, cidrs: &[String]) {
        for c in cidrs {
            if let Ok(n) = Net::parse(c) {
                self.sets.iter_mut().any(|s| s.release(&n));
            }
        }
    }
}

/// The node's pod ranges (`spec.podCIDRs`, else `spec.podCIDR`).
pub fn node_cidrs(node: &Node) -> Vec<String> {
    let spec = node.spec.as_ref();
    match spec.and_then(|s| s.pod_cidrs.clone()).filter(|v| !v.is_empty()) {
        Some(v) => v,
        None => spec.and_then(|s| s.pod_cidr.clone()).into_iter().filter(|c| !c.is_empty()).collect(),
    }
}

/// Runs until `stop`.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    let s = &ctx.settings.node;
    let Some(cluster_cidr) = s.cluster_cidr.clone() else {
        tracing::info!(component = NAME, "no cluster CIDR: node ranges are not allocated");
        return;
    };
    let mut alloc = match Allocator::new(&cluster_cidr, s.node_cidr_mask_size) {
        Ok(a) => a,
        Err(e) => {
            tracing::error!(component = NAME, cluster_cidr = %cluster_cidr, error = %e, "cannot allocate node ranges");
            return;
        }
    };
    let fresh = alloc.clone();
    let events = watcher::watcher(Api::<Node>::all(ctx.reader.clone()), watcher::Config::default()).default_backoff();
    let mut events = pin!(events);
    let mut stop_fut = pin!(crate::runtime::stopped(stop));
    // Each node's ranges as known (on the node or being written).
    let mut known: HashMap<String, Vec<String>> = HashMap::new();
    let mut waiting: BTreeSet<String> = BTreeSet::new();
    let mut init: Vec<Node> = Vec::new();
    let mut retry = tokio::time::interval(RETRY);
    tracing::info!(component = NAME, cluster_cidr = %cluster_cidr, "starting controller");
    loop {
        tokio::select! {
            _ = &mut stop_fut => break,
            ev = events.next() => match ev {
                Some(Ok(Event::Init)) => init.clear(),
                Some(Ok(Event::InitApply(n))) => init.push(n),
                Some(Ok(Event::InitDone)) => {
                    // A fresh start (or a relist): existing ranges first, then the rest.
                    alloc = fresh.clone();
                    known.clear();
                    waiting.clear();
                    for n in &init {
                        let cidrs = node_cidrs(n);
                        if cidrs.is_empty() {
                            waiting.insert(n.metadata.name.clone().unwrap_or_default());
                        } else {
                            alloc.occupy(&cidrs);
                            known.insert(n.metadata.name.clone().unwrap_or_default(), cidrs);
                        }
                    }
                    init.clear();
                    assign_waiting(&ctx, &mut alloc, &mut known, &mut waiting).await;
                }
                Some(Ok(Event::Apply(n))) => {
                    let name = n.metadata.name.clone().unwrap_or_default();
                    let cidrs = node_cidrs(&n);
                    if !cidrs.is_empty() {
                        if known.get(&name) != Some(&cidrs) {
                            if let Some(old) = known.remove(&name) {
                                alloc.release(&old);
                            }
                            alloc.occupy(&cidrs);
                            known.insert(name.clone(), cidrs);
                        }
                        waiting.remove(&name);
                    } else if !known.contains_key(&name) {
                        waiting.insert(name);
                        assign_waiting(&ctx, &mut alloc, &mut known, &mut waiting).await;
                    }
                }
                Some(Ok(Event::Delete(n))) => {
                    let name = n.metadata.name.clone().unwrap_or_default();
                    waiting.remove(&name);
                    if let Some(cidrs) = known.remove(&name) {
                        alloc.release(&cidrs);
                        tracing::info!(component = NAME, node = %name, cidrs = ?cidrs, "released the node's ranges");
                    }
                    assign_waiting(&ctx, &mut alloc, &mut known, &mut waiting).await;
                }
                Some(Err(e)) => tracing::debug!(component = NAME, error = %e, "node watch"),
                None => break,
            },
            _ = retry.tick() => assign_waiting(&ctx, &mut alloc, &mut known, &mut waiting).await,
        }
    }
    tracing::info!(component = NAME, "controller stopped");
}

/// Gives every waiting node a range.
async fn assign_waiting(
    ctx: &Ctx,
    alloc: &mut Allocator,
    known: &mut HashMap<String, Vec<String>>,
    waiting: &mut BTreeSet<String>,
) {
    for name in waiting.clone() {
        let cidrs = match alloc.allocate() {
            Ok(n) => n.iter().map(Net::to_string).collect::<Vec<_>>(),
            Err(e) => {
                tracing::warn!(component = NAME, node = %name, error = %e, "cannot allocate a range for the node");
                if let Ok(Some(node)) = Api::<Node>::all(ctx.client.clone()).get_opt(&name).await {
                    ctx.recorder.event(
                        &node,
                        events::NORMAL,
                        "CIDRNotAvailable",
                        format!("Node {name} status is now: CIDRNotAvailable"),
                    );
                }
                continue;
            }
        };
        match write_cidrs(ctx, &name, &cidrs).await {
            Ok(true) => {
                tracing::info!(component = NAME, node = %name, cidrs = ?cidrs, "set the node's pod ranges");
                known.insert(name.clone(), cidrs);
                waiting.remove(&name);
            }
            Ok(false) => {
                alloc.release(&cidrs);
                waiting.remove(&name);
            }
            Err(e) => {
                alloc.release(&cidrs);
                tracing::warn!(component = NAME, node = %name, error = %e, "cannot set the node's pod ranges; retrying");
            }
        }
    }
}

/// Sets `spec.podCIDR` and `spec.podCIDRs`; false when the node is gone
/// or already has ranges (left as they are).
async fn write_cidrs(ctx: &Ctx, name: &str, cidrs: &[String]) -> Result<bool, Error> {
    let Some(node) = Api::<Node>::all(ctx.client.clone()).get_opt(name).await? else {
        return Ok(false);
    };
    if !node_cidrs(&node).is_empty() {
        return Ok(false);
    }
    let patch = serde_json::json!({
        "metadata": {"resourceVersion": node.metadata.resource_version},
        "spec": {"podCIDR": cidrs[0], "podCIDRs": cidrs},
    });
    match Api::<Node>::all(ctx.client.clone()).patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await {
        Ok(_) => Ok(true),
        Err(e) if is_not_found(&e) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str) -> Net {
        Net::parse(s).unwrap()
    }

    #[test]
    fn ranges_are_carved_in_order_and_wrap_after_release() {
        // Upstream cidr_set_test: 10.42.0.0/16 with /24 → 256 ranges.
        let mut s = CidrSet::new(net("10.42.0.0/16"), 24).unwrap();
        assert_eq!(s.allocate_next().unwrap().to_string(), "10.42.0.0/24");
        assert_eq!(s.allocate_next().unwrap().to_string(), "10.42.1.0/24");
        assert!(s.release(&net("10.42.0.0/24")));
        // The next candidate rotates on; the freed one comes back after a wrap.
        assert_eq!(s.allocate_next().unwrap().to_string(), "10.42.2.0/24");
        let mut small = CidrSet::new(net("10.0.0.0/23"), 24).unwrap();
        assert!(small.occupy(&net("10.0.1.0/24")));
        assert_eq!(small.allocate_next().unwrap().to_string(), "10.0.0.0/24");
        assert_eq!(small.allocate_next(), Err(CidrError::Exhausted));
        small.release(&net("10.0.1.0/24"));
        assert_eq!(small.allocate_next().unwrap().to_string(), "10.0.1.0/24");
    }

    #[test]
    fn occupy_covers_larger_ranges_and_ignores_outside_ones() {
        let mut s = CidrSet::new(net("10.42.0.0/16"), 24).unwrap();
        assert!(s.occupy(&net("10.42.0.0/23")));
        assert_eq!(s.allocate_next().unwrap().to_string(), "10.42.2.0/24");
        assert!(!s.occupy(&net("192.168.0.0/24")));
        assert!(!s.occupy(&net("fd00::/64")));
    }

    #[test]
    fn mask_limits_follow_upstream() {
        assert_eq!(CidrSet::new(net("10.0.0.0/8"), 25).unwrap_err(), CidrError::SubnetTooBig);
        assert!(CidrSet::new(net("10.42.0.0/16"), 8).is_err());
        assert!(Net::parse("10.42.0.0").is_err());
        assert_eq!(net("10.42.3.7/16").to_string(), "10.42.0.0/16");
        assert_eq!(
            CidrError::Exhausted.to_string(),
            "CIDR allocation failed; there are no remaining CIDRs left to allocate in the accepted range"
        );
    }

    #[test]
    fn dual_stack_allocates_one_range_per_family_with_default_masks() {
        let mut a = Allocator::new("10.42.0.0/16,fd00:42::/56", None).unwrap();
        let got: Vec<String> = a.allocate().unwrap().iter().map(Net::to_string).collect();
        assert_eq!(got, ["10.42.0.0/24", "fd00:42::/64"]);
        let got: Vec<String> = a.allocate().unwrap().iter().map(Net::to_string).collect();
        assert_eq!(got, ["10.42.1.0/24", "fd00:42:0:1::/64"]);
        // --node-cidr-mask-size applies to every family here; 24 cannot split an IPv6 /63.
        assert!(matches!(Allocator::new("10.0.0.0/24,fd00::/63", Some(24)), Err(CidrError::Invalid(_))));
        let mut c = Allocator::new("10.0.0.0/24", None).unwrap();
        c.allocate().unwrap();
        assert_eq!(c.allocate(), Err(CidrError::Exhausted));
        c.release(&["10.0.0.0/24".to_string()]);
        assert!(c.allocate().is_ok());
    }
}
