//! Addresses: CIDR parsing for the cluster and service ranges, the host's
//! own addresses, and the default advertise address.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::str::FromStr;

/// An IP network in CIDR notation, e.g. `10.43.0.0/16` or `fd00:43::/112`.
/// The address is the network address (no host bits set).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    network: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// Total bits of the address family (32 or 128).
    fn family_bits(&self) -> u8 {
        if self.network.is_ipv4() {
            32
        } else {
            128
        }
    }

    /// The number of host bits (32 or 128 minus the prefix).
    pub fn host_bits(&self) -> u8 {
        self.family_bits() - self.prefix
    }

    /// The network address.
    pub fn network(&self) -> IpAddr {
        self.network
    }

    /// True when `ip` is inside this network (same family and prefix).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.network, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => mask_v4(u32::from(a), self.prefix) == u32::from(n),
            (IpAddr::V6(n), IpAddr::V6(a)) => mask_v6(u128::from(a), self.prefix) == u128::from(n),
            _ => false,
        }
    }

    /// True when the two networks share at least one address.
    pub fn overlaps(&self, other: &Cidr) -> bool {
        self.contains(other.network) || other.contains(self.network)
    }

    /// The address `n` places after the network address (`nth(1)` of
    /// 10.43.0.0/16 is 10.43.0.1); `None` when outside the network.
    pub fn nth(&self, n: u128) -> Option<IpAddr> {
        if self.host_bits() < 128 && n >> self.host_bits() != 0 {
            return None;
        }
        Some(match self.network {
            IpAddr::V4(a) => IpAddr::V4(Ipv4Addr::from(u32::from(a).checked_add(u32::try_from(n).ok()?)?)),
            IpAddr::V6(a) => IpAddr::V6(Ipv6Addr::from(u128::from(a).checked_add(n)?)),
        })
    }

    /// The last address of the network (the IPv4 broadcast address).
    pub fn last(&self) -> IpAddr {
        let host_bits = u32::from(self.host_bits());
        match self.network {
            IpAddr::V4(a) => {
                let host_mask = if host_bits == 0 { 0 } else { u32::MAX >> (32 - host_bits) };
                IpAddr::V4(Ipv4Addr::from(u32::from(a) | host_mask))
            }
            IpAddr::V6(a) => {
                let host_mask = if host_bits == 0 { 0 } else { u128::MAX >> (128 - host_bits) };
                IpAddr::V6(Ipv6Addr::from(u128::from(a) | host_mask))
            }
        }
    }
}

fn mask_v4(a: u32, prefix: u8) -> u32 {
    if prefix == 0 {
        0
    } else {
        a & (u32::MAX << (32 - u32::from(prefix)))
    }
}

fn mask_v6(a: u128, prefix: u8) -> u128 {
    if prefix == 0 {
        0
    } else {
        a & (u128::MAX << (128 - u32::from(prefix)))
    }
}

impl FromStr for Cidr {
    type Err = String;

    /// Parses `address/prefix`. Unlike Go's `net.ParseCIDR` this refuses
    /// host bits (`10.43.0.1/16`), since that is almost always a typo, and
    /// suggests the network address instead.
    fn from_str(s: &str) -> Result<Self, String> {
        let example = "expected an address and a prefix length such as 10.42.0.0/16";
        if s.contains(',') {
            return Err(format!("invalid CIDR {s:?}: dual-stack lists are not supported yet; give one CIDR"));
        }
        let (addr, prefix) = s.split_once('/').ok_or_else(|| format!("invalid CIDR {s:?}: {example}"))?;
        let addr: IpAddr =
            addr.parse().map_err(|_| format!("invalid CIDR {s:?}: {addr:?} is not an IP address; {example}"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix: u8 = prefix
            .parse()
            .ok()
            .filter(|p| *p <= max)
            .ok_or_else(|| format!("invalid CIDR {s:?}: the prefix length must be a number from 0 to {max}"))?;
        let network = match addr {
            IpAddr::V4(a) => IpAddr::V4(Ipv4Addr::from(mask_v4(u32::from(a), prefix))),
            IpAddr::V6(a) => IpAddr::V6(Ipv6Addr::from(mask_v6(u128::from(a), prefix))),
        };
        if network != addr {
            return Err(format!("invalid CIDR {s:?}: it has host bits set; did you mean {network}/{prefix}?"));
        }
        Ok(Cidr { network, prefix })
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

/// Whether an interface address is worth putting in a certificate or
/// advertising: not loopback, link-local, unspecified or multicast.
fn is_usable(ip: &IpAddr) -> bool {
    let link_local = match ip {
        IpAddr::V4(a) => a.is_link_local(),
        IpAddr::V6(a) => (a.segments()[0] & 0xffc0) == 0xfe80,
    };
    !ip.is_loopback() && !ip.is_unspecified() && !ip.is_multicast() && !link_local
}

/// The host's non-loopback, non-link-local interface addresses (IPv4
/// first), sorted and without duplicates, minus any inside `exclude`
/// (the pod and service ranges, whose addresses rkube itself puts on
/// bridge and dummy devices). Empty when interfaces cannot be listed.
pub fn host_addresses(exclude: &[Cidr]) -> Vec<IpAddr> {
    let mut out: Vec<IpAddr> = match if_addrs::get_if_addrs() {
        Ok(ifaces) => ifaces.into_iter().map(|i| i.ip()).collect(),
        Err(e) => {
            tracing::warn!(component = "rkube", error = %e, "cannot list the host's network interfaces; the serving certificate will only name the advertise address and loopback");
            Vec::new()
        }
    };
    out.retain(|ip| is_usable(ip) && !exclude.iter().any(|c| c.contains(*ip)));
    out.sort_by_key(|ip| (ip.is_ipv6(), *ip));
    out.dedup();
    out
}

/// The source address the kernel would use for the default route, found by
/// "connecting" a UDP socket to a documentation address (TEST-NET-1 /
/// 2001:db8::): `connect` on UDP only selects a route, it sends nothing.
pub fn default_route_address() -> Option<IpAddr> {
    let probes: [(&str, SocketAddr); 2] = [
        ("0.0.0.0:0", SocketAddr::from((Ipv4Addr::new(192, 0, 2, 1), 9))),
        ("[::]:0", SocketAddr::from((Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1), 9))),
    ];
    probes.into_iter().find_map(|(local, remote)| {
        let socket = UdpSocket::bind(local).ok()?;
        socket.connect(remote).ok()?;
        let ip = socket.local_addr().ok()?.ip();
        is_usable(&ip).then_some(ip)
    })
}

/// The default `--advertise-address`, as kube-apiserver chooses it: the
/// bind address when it is a specific non-loopback address; otherwise the
/// default route's source address; otherwise the first host address;
/// otherwise 127.0.0.1.
pub fn default_advertise_address(bind: IpAddr, host_addresses: &[IpAddr]) -> IpAddr {
    if is_usable(&bind) {
        return bind;
    }
    default_route_address().or_else(|| host_addresses.first().copied()).unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
}

/// The URL local clients (the admin kubeconfig) use: `https://127.0.0.1:<port>`
/// when the server listens on all addresses or on loopback (as k3s), else
/// the bind address itself.
pub fn local_server_url(bind: IpAddr, port: u16) -> String {
    let host = if bind.is_unspecified() { IpAddr::V4(Ipv4Addr::LOCALHOST) } else { bind };
    format!("https://{}", SocketAddr::new(host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cidr(s: &str) -> Cidr {
        s.parse().unwrap()
    }

    #[test]
    fn parses_cidrs_and_refuses_typos_with_a_hint() {
        assert_eq!(cidr("10.43.0.0/16").to_string(), "10.43.0.0/16");
        assert_eq!(cidr("fd00:43::/112").to_string(), "fd00:43::/112");
        let e = "10.43.0.1/16".parse::<Cidr>().unwrap_err();
        assert!(e.contains("did you mean 10.43.0.0/16"), "{e}");
        assert!("nonsense".parse::<Cidr>().unwrap_err().contains("such as 10.42.0.0/16"));
        assert!("10.0.0.0/33".parse::<Cidr>().unwrap_err().contains("0 to 32"));
        assert!("10.0.0.0/8,fd00::/8".parse::<Cidr>().unwrap_err().contains("dual-stack"));
    }

    #[test]
    fn membership_overlap_and_offsets() {
        let svc = cidr("10.43.0.0/16");
        assert!(svc.contains("10.43.0.10".parse().unwrap()));
        assert!(!svc.contains("10.42.0.10".parse().unwrap()));
        assert!(!svc.contains("::1".parse().unwrap()));
        assert_eq!(svc.nth(1), Some("10.43.0.1".parse().unwrap()));
        assert_eq!(svc.nth(10), Some("10.43.0.10".parse().unwrap()));
        assert_eq!(svc.nth(65536), None);
        assert_eq!(svc.last(), "10.43.255.255".parse::<IpAddr>().unwrap());
        assert!(cidr("10.0.0.0/8").overlaps(&svc));
        assert!(!cidr("10.42.0.0/16").overlaps(&svc));
        assert_eq!(cidr("fd00::/120").nth(1), Some("fd00::1".parse().unwrap()));
        assert_eq!(cidr("0.0.0.0/0").last(), "255.255.255.255".parse::<IpAddr>().unwrap());
        assert_eq!(cidr("10.1.2.3/32").last(), "10.1.2.3".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn host_addresses_skip_loopback_and_excluded_ranges() {
        let all = host_addresses(&[]);
        assert!(all.iter().all(|ip| !ip.is_loopback()));
        let excluded = host_addresses(&[cidr("0.0.0.0/0")]);
        assert!(excluded.iter().all(|ip| ip.is_ipv6()));
    }

    #[test]
    fn advertise_address_prefers_a_specific_bind_address() {
        let bind: IpAddr = "192.0.2.5".parse().unwrap();
        assert_eq!(default_advertise_address(bind, &[]), bind);
        let chosen = default_advertise_address("0.0.0.0".parse().unwrap(), &[]);
        assert!(!chosen.is_unspecified());
    }

    #[test]
    fn local_url_uses_loopback_unless_bound_to_one_address() {
        assert_eq!(local_server_url("0.0.0.0".parse().unwrap(), 6443), "https://127.0.0.1:6443");
        assert_eq!(local_server_url("::".parse().unwrap(), 6443), "https://127.0.0.1:6443");
        assert_eq!(local_server_url("127.0.0.1".parse().unwrap(), 7000), "https://127.0.0.1:7000");
        assert_eq!(local_server_url("192.0.2.5".parse().unwrap(), 6443), "https://192.0.2.5:6443");
        assert_eq!(local_server_url("::1".parse().unwrap(), 6443), "https://[::1]:6443");
    }
}
