//! Pod IPs of the simulated runtime: allocated from the node's pod CIDR the
//! way the CNI host-local plugin of the real pod network does (the bridge
//! gateway holds the first address, pods get the next free one after the
//! last handed out, round robin, so a released IP is not reused at once).

use std::collections::HashSet;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// An IPv4 or IPv6 CIDR, e.g. `10.42.0.0/24`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodCidr {
    network: IpAddr,
    prefix: u8,
}

impl PodCidr {
    /// Parses `addr/prefix`; the address is masked to the network. Errors
    /// say what is wrong with the text.
    pub fn parse(s: &str) -> Result<PodCidr, String> {
        let (addr, prefix) = s.split_once('/').ok_or_else(|| format!("invalid CIDR address: {s}"))?;
        let addr: IpAddr = addr.parse().map_err(|_| format!("invalid CIDR address: {s}"))?;
        let prefix: u8 = prefix.parse().map_err(|_| format!("invalid CIDR address: {s}"))?;
        let bits = if addr.is_ipv4() { 32 } else { 128 };
        if prefix > bits {
            return Err(format!("invalid CIDR address: {s}"));
        }
        let host_bits = u32::from(bits - prefix);
        let mask = if host_bits >= 128 { 0 } else { !((1u128 << host_bits) - 1) };
        Ok(PodCidr { network: from_u128(addr, to_u128(addr) & mask), prefix })
    }

    fn host_bits(&self) -> u32 {
        u32::from(if self.network.is_ipv4() { 32 } else { 128 } - self.prefix)
    }

    /// Offsets of the addresses pods may get: from 2 (1 is the gateway) to
    /// the last before the IPv4 broadcast address.
    fn pod_offsets(&self) -> (u128, u128) {
        let hb = self.host_bits().min(127);
        let size = 1u128 << hb;
        let last = if self.network.is_ipv4() { size.saturating_sub(2) } else { size - 1 };
        (2, last)
    }
}

impl std::fmt::Display for PodCidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

fn to_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v) => u128::from(u32::from(v)),
        IpAddr::V6(v) => u128::from(v),
    }
}

fn from_u128(like: IpAddr, n: u128) -> IpAddr {
    match like {
        IpAddr::V4(_) => IpAddr::V4((n as u32).into()),
        IpAddr::V6(_) => IpAddr::V6(n.into()),
    }
}

/// The pod CIDR the agent's CNI conflist names (its first range's subnet),
/// if the file is there and says one.
pub fn cidr_from_conflist(path: &Path) -> Option<PodCidr> {
    let text = std::fs::read_to_string(path).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let plugins = v.get("plugins")?.as_array()?;
    plugins.iter().find_map(|p| {
        let subnet = p.pointer("/ipam/ranges/0/0/subnet")?.as_str()?;
        PodCidr::parse(subnet).ok()
    })
}

/// The pool of pod IPs of one simulated node.
#[derive(Debug)]
pub struct IpPool {
    conflist: PathBuf,
    cidr: Option<PodCidr>,
    used: HashSet<u128>,
    last: u128,
}

impl IpPool {
    /// A pool that learns its CIDR from `conflist` (read again while unknown)
    /// or [`IpPool::set_cidr`].
    pub fn new(conflist: PathBuf) -> IpPool {
        IpPool { conflist, cidr: None, used: HashSet::new(), last: 0 }
    }

    /// The CIDR, reading the conflist if none is known yet.
    pub fn cidr(&mut self) -> Option<PodCidr> {
        if self.cidr.is_none() {
            self.cidr = cidr_from_conflist(&self.conflist);
        }
        self.cidr
    }

    /// Sets the CIDR (UpdateRuntimeConfig); a pod CIDR never changes on a
    /// node, so the allocations so far stay as they are.
    pub fn set_cidr(&mut self, cidr: PodCidr) {
        if self.cidr != Some(cidr) {
            self.cidr = Some(cidr);
            self.used.clear();
            self.last = 0;
        }
    }

    /// The next free address; errors as host-local does when the range is
    /// full or as the CNI plugin does when no network config is there yet.
    pub fn allocate(&mut self) -> Result<IpAddr, String> {
        let Some(cidr) = self.cidr() else {
            return Err(format!(
                "cni plugin not initialized: no pod CIDR yet (no network config at {})",
                self.conflist.display()
            ));
        };
        let (first, last) = cidr.pod_offsets();
        if last < first {
            return Err(format!("no IP addresses available in range set: {cidr}"));
        }
        let span = last - first + 1;
        let start = if self.last < first || self.last >= last { first } else { self.last + 1 };
        // Bounded by the pods of one node: at most `used.len() + 1` probes.
        for i in 0..span.min(self.used.len() as u128 + 1) {
            let off = first + (start - first + i) % span;
            if self.used.insert(off) {
                self.last = off;
                return Ok(from_u128(cidr.network, to_u128(cidr.network) + off));
            }
        }
        Err(format!("no IP addresses available in range set: {cidr}"))
    }

    /// Returns `ip` to the pool (no-op for addresses not from it).
    pub fn release(&mut self, ip: &str) {
        let (Some(cidr), Ok(ip)) = (self.cidr, ip.parse::<IpAddr>()) else { return };
        if ip.is_ipv4() == cidr.network.is_ipv4() {
            self.used.remove(&(to_u128(ip).wrapping_sub(to_u128(cidr.network))));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocates_after_the_gateway_round_robin_and_stops_before_broadcast() {
        let mut p = IpPool::new(PathBuf::from("/nonexistent"));
        assert!(p.allocate().unwrap_err().contains("cni plugin not initialized"));
        p.set_cidr(PodCidr::parse("10.42.3.7/30").unwrap());
        // /30: .4 network, .5 gateway, .6 the only pod address, .7 broadcast.
        assert_eq!(p.allocate().unwrap().to_string(), "10.42.3.6");
        assert!(p.allocate().unwrap_err().contains("no IP addresses available"));
        p.release("10.42.3.6");
        assert_eq!(p.allocate().unwrap().to_string(), "10.42.3.6");

        p.set_cidr(PodCidr::parse("10.0.0.0/24").unwrap());
        let a = p.allocate().unwrap();
        let b = p.allocate().unwrap();
        assert_eq!((a.to_string().as_str(), b.to_string().as_str()), ("10.0.0.2", "10.0.0.3"));
        p.release("10.0.0.2");
        assert_eq!(p.allocate().unwrap().to_string(), "10.0.0.4", "a released IP is not reused at once");
    }

    #[test]
    fn reads_the_subnet_of_the_agents_conflist() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("10-rkube.conflist");
        std::fs::write(&path, crate::agent::cni::conflist("rk0", "10.244.1.0/24", dir.path())).unwrap();
        assert_eq!(cidr_from_conflist(&path).unwrap().to_string(), "10.244.1.0/24");
        let mut p = IpPool::new(path);
        assert_eq!(p.allocate().unwrap().to_string(), "10.244.1.2");
        assert_eq!(PodCidr::parse("fd00::1/120").unwrap().to_string(), "fd00::/120");
    }
}
