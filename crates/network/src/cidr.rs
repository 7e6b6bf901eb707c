//! IP prefixes (`10.42.1.0/24`, `fd00::/64`) as the routing table and
//! `spec.podCIDRs` spell them.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// An IPv4 or IPv6 prefix, canonical: host bits are cleared on parse, as Go's
/// `net.ParseCIDR` returns the network (so `10.42.1.7/24` equals
/// `10.42.1.0/24`). Ordered by family, address, then prefix length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// The prefix `addr/prefix` with host bits cleared. None: `prefix` exceeds
    /// the family's width (32 or 128).
    pub fn new(addr: IpAddr, prefix: u8) -> Option<Cidr> {
        let width = if addr.is_ipv4() { 32 } else { 128 };
        if prefix > width {
            return None;
        }
        let addr = match addr {
            IpAddr::V4(a) => IpAddr::V4(Ipv4Addr::from(u32::from(a) & mask32(prefix))),
            IpAddr::V6(a) => IpAddr::V6(Ipv6Addr::from(u128::from(a) & mask128(prefix))),
        };
        Some(Cidr { addr, prefix })
    }

    /// The network address.
    pub fn addr(&self) -> IpAddr {
        self.addr
    }

    /// The prefix length in bits.
    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    /// Whether `ip` lies inside this prefix (false across families).
    pub fn contains_ip(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => u32::from(a) & mask32(self.prefix) == u32::from(n),
            (IpAddr::V6(n), IpAddr::V6(a)) => u128::from(a) & mask128(self.prefix) == u128::from(n),
            _ => false,
        }
    }

    /// Whether `other` lies wholly inside this prefix (equal counts as inside).
    pub fn contains(&self, other: &Cidr) -> bool {
        other.prefix >= self.prefix && self.contains_ip(other.addr)
    }

    /// Whether the two prefixes share any address.
    pub fn overlaps(&self, other: &Cidr) -> bool {
        self.contains(other) || other.contains(self)
    }
}

fn mask32(prefix: u8) -> u32 {
    if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(prefix))
    }
}

fn mask128(prefix: u8) -> u128 {
    if prefix == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(prefix))
    }
}

impl FromStr for Cidr {
    type Err = String;

    /// Parses `ADDR/LEN`; a bare address is a host prefix (/32 or /128), as
    /// `ip route` prints host routes. Err: a message naming the bad input.
    fn from_str(s: &str) -> Result<Cidr, String> {
        let (addr, len) = match s.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (s, None),
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| format!("invalid CIDR {s:?}: {addr:?} is not an IP address"))?;
        let width = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match len {
            None => width,
            Some(l) => l
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= width)
                .ok_or_else(|| format!("invalid CIDR {s:?}: prefix length must be 0..={width}"))?,
        };
        Ok(Cidr::new(addr, prefix).expect("prefix checked"))
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str) -> Cidr {
        s.parse().unwrap()
    }

    #[test]
    fn parse_clears_host_bits_as_go_parse_cidr() {
        assert_eq!(c("10.42.1.7/24").to_string(), "10.42.1.0/24");
        assert_eq!(c("fd00::1/64").to_string(), "fd00::/64");
        assert_eq!(c("10.42.1.5").to_string(), "10.42.1.5/32");
        assert_eq!(c("0.0.0.0/0").to_string(), "0.0.0.0/0");
    }

    #[test]
    fn parse_rejects_bad_input() {
        assert!("10.42.0.0/33".parse::<Cidr>().is_err());
        assert!("10.42.0/16".parse::<Cidr>().is_err());
        assert!("fd00::/129".parse::<Cidr>().is_err());
    }

    #[test]
    fn containment() {
        let cluster = c("10.42.0.0/16");
        assert!(cluster.contains(&c("10.42.3.0/24")));
        assert!(cluster.contains(&cluster));
        assert!(!cluster.contains(&c("10.43.0.0/24")));
        assert!(!cluster.contains(&c("10.0.0.0/8")));
        assert!(cluster.overlaps(&c("10.0.0.0/8")));
        assert!(!cluster.contains(&c("fd00::/64")));
        assert!(cluster.contains_ip("10.42.255.1".parse().unwrap()));
        assert!(!cluster.contains_ip("10.43.0.1".parse().unwrap()));
    }
}
