//! IP addresses and CIDRs as upstream's legacy fields parse them
//! (`netutils.ParseIPSloppy` / `ParseCIDRSloppy`: IPv4 octets may have
//! leading zeros, read as decimal) and the messages of
//! `IsValidIPForLegacyField` / `IsValidCIDRForLegacyField` with strict
//! validation off (the 1.33 default).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::field::{ErrorList, FieldError, Path};

/// A parsed CIDR: the network (address with host bits cleared) and the
/// prefix length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    /// The network address.
    pub network: IpAddr,
    /// The prefix length.
    pub prefix: u8,
}

impl Cidr {
    /// Whether `ip` is inside this network.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.network, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => mask(u32::from(a) as u128, 32, self.prefix) == u32::from(n) as u128,
            (IpAddr::V6(n), IpAddr::V6(a)) => mask(u128::from(a), 128, self.prefix) == u128::from(n),
            _ => false,
        }
    }
}

fn mask(bits: u128, width: u8, prefix: u8) -> u128 {
    if prefix == 0 {
        return 0;
    }
    let ones: u128 = if width == 128 { u128::MAX } else { (1u128 << width) - 1 };
    let host = if prefix >= width { 0 } else { ones >> prefix };
    bits & ones & !host
}

fn parse_ipv4_sloppy(s: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut octets = [0u8; 4];
    for (i, p) in parts.iter().enumerate() {
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        octets[i] = p.parse::<u16>().ok().filter(|v| *v <= 255)? as u8;
    }
    Some(Ipv4Addr::from(octets))
}

/// `netutils.ParseIPSloppy`.
pub fn parse_ip_sloppy(s: &str) -> Option<IpAddr> {
    if let Some(v4) = parse_ipv4_sloppy(s) {
        return Some(IpAddr::V4(v4));
    }
    if s.contains(':') {
        return s.parse::<Ipv6Addr>().ok().map(IpAddr::V6);
    }
    None
}

/// `netutils.ParseCIDRSloppy`: `None` when `s` is not `<ip>/<prefix>`.
pub fn parse_cidr_sloppy(s: &str) -> Option<Cidr> {
    let (ip, prefix) = s.split_once('/')?;
    if prefix.is_empty() || prefix.len() > 3 || !prefix.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let prefix: u8 = prefix.parse().ok()?;
    let addr = parse_ip_sloppy(ip)?;
    let network = match addr {
        IpAddr::V4(a) if prefix <= 32 => IpAddr::V4(Ipv4Addr::from(mask(u32::from(a) as u128, 32, prefix) as u32)),
        IpAddr::V6(a) if prefix <= 128 => IpAddr::V6(Ipv6Addr::from(mask(u128::from(a), 128, prefix))),
        _ => return None,
    };
    Some(Cidr { network, prefix })
}

/// `IsValidIPForLegacyField` (strict validation off).
pub fn validate_ip_for_legacy_field(path: &Path, value: &str) -> ErrorList {
    let mut errs = ErrorList::new();
    if parse_ip_sloppy(value).is_none() {
        errs.push(FieldError::invalid(path, value, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"));
    }
    errs
}

/// `IsValidCIDRForLegacyField` (strict validation off).
pub fn validate_cidr_for_legacy_field(path: &Path, value: &str) -> ErrorList {
    let mut errs = ErrorList::new();
    if parse_cidr_sloppy(value).is_none() {
        errs.push(FieldError::invalid(path, value, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sloppy_parsing() {
        assert_eq!(parse_ip_sloppy("010.1.2.3"), Some("10.1.2.3".parse().unwrap()));
        assert!(parse_ip_sloppy("1.2.3").is_none() && parse_ip_sloppy("example.com").is_none());
        assert_eq!(parse_ip_sloppy("2001:db8::1"), Some("2001:db8::1".parse().unwrap()));
        let c = parse_cidr_sloppy("10.1.2.3/8").unwrap();
        assert_eq!((c.network, c.prefix), ("10.0.0.0".parse().unwrap(), 8));
        assert!(c.contains("10.200.0.1".parse().unwrap()) && !c.contains("11.0.0.1".parse().unwrap()));
        assert!(parse_cidr_sloppy("10.0.0.0/33").is_none() && parse_cidr_sloppy("10.0.0.0").is_none());
        assert!(parse_cidr_sloppy("::/0").unwrap().contains("2001:db8::1".parse().unwrap()));
    }
}
