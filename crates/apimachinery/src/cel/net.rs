//! Kubernetes' CEL IP and CIDR libraries (upstream `library/ip.go` and
//! `library/cidr.go`): `ip(string)`, `isIP(string)`,
//! `ip.isCanonical(string)`, `string(ip)` and the members `family`,
//! `isUnspecified`, `isLoopback`, `isLinkLocalMulticast`,
//! `isLinkLocalUnicast`, `isGlobalUnicast`; `cidr(string)`,
//! `isCIDR(string)`, `string(cidr)` and the members `containsIP` and
//! `containsCIDR` (taking a value or a string), `ip`, `masked`,
//! `prefixLength`.
//!
//! Parsing follows Go's `netip` as upstream uses it: IPv6 zones and
//! IPv4-mapped IPv6 addresses are refused, IPv4 octets may not have
//! leading zeros, a CIDR may have host bits set (`masked()` clears them).
//! Go's detailed parse reasons are reduced to `unable to parse IP`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use cel::common::types::STRING_TYPE;
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError, Value};

use super::values::{err, opaque, opaque_arg, opaque_type, overload, str_arg};

/// The IP type's name (upstream `apiservercel.IPType`).
pub const IP_TYPE: &str = "net.IP";
/// The CIDR type's name (upstream `apiservercel.CIDRType`).
pub const CIDR_TYPE: &str = "net.CIDR";

/// An IP address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ip(pub IpAddr);

impl Opaque for Ip {
    fn runtime_type_name(&self) -> &str {
        IP_TYPE
    }
}

/// A network: an address (host bits allowed) and a prefix length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    bits: u8,
}

impl Opaque for Cidr {
    fn runtime_type_name(&self) -> &str {
        CIDR_TYPE
    }
}

/// Upstream's `parseIPAddr`: the address, or its error message.
pub fn parse_ip(raw: &str) -> Result<IpAddr, String> {
    if let Some((addr, _zone)) = raw.split_once('%') {
        if addr.parse::<Ipv6Addr>().is_ok() {
            return Err(format!("IP address {raw:?} with zone value is not allowed"));
        }
    }
    let addr: IpAddr = raw.parse().map_err(|_| {
        format!("IP Address {raw:?} parse error during conversion from string: ParseAddr({raw:?}): unable to parse IP")
    })?;
    if let IpAddr::V6(v6) = addr {
        if v6.to_ipv4_mapped().is_some() {
            return Err(format!("IPv4-mapped IPv6 address {raw:?} is not allowed"));
        }
    }
    Ok(addr)
}

/// Upstream's `parseCIDR` (Go's `netip.ParsePrefix`): the error message
/// is wrapped as upstream wraps it.
fn parse_cidr(raw: &str) -> Result<Cidr, String> {
    let wrap = |why: String| {
        format!("network address parse error during conversion from string: netip.ParsePrefix({raw:?}): {why}")
    };
    let (addr, bits) = raw.rsplit_once('/').ok_or_else(|| wrap("no '/'".into()))?;
    if addr.contains('%') {
        return Err(wrap("IPv6 zones cannot be present in a prefix".into()));
    }
    let ip: IpAddr = addr.parse().map_err(|_| wrap(format!("ParseAddr({addr:?}): unable to parse IP")))?;
    let valid_bits =
        !bits.is_empty() && bits.bytes().all(|b| b.is_ascii_digit()) && (bits == "0" || !bits.starts_with('0'));
    let n: u32 = if valid_bits { bits.parse().unwrap_or(u32::MAX) } else { u32::MAX };
    if !valid_bits {
        return Err(wrap(format!("bad bits after slash: {bits:?}")));
    }
    let max = if ip.is_ipv4() { 32 } else { 128 };
    if n > max {
        return Err(wrap("prefix length out of range".into()));
    }
    if let IpAddr::V6(v6) = ip {
        if v6.to_ipv4_mapped().is_some() {
            return Err(format!("IPv4-mapped IPv6 address {raw:?} is not allowed"));
        }
    }
    Ok(Cidr { addr: ip, bits: n as u8 })
}

/// `addr` with the bits after the first `bits` cleared.
fn mask(addr: IpAddr, bits: u8) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let m = if bits == 0 { 0 } else { u32::MAX << (32 - u32::from(bits)) };
            IpAddr::V4(Ipv4Addr::from(u32::from(a) & m))
        }
        IpAddr::V6(a) => {
            let m = if bits == 0 { 0 } else { u128::MAX << (128 - u32::from(bits)) };
            IpAddr::V6(Ipv6Addr::from(u128::from(a) & m))
        }
    }
}

impl Cidr {
    fn masked(&self) -> Cidr {
        Cidr { addr: mask(self.addr, self.bits), bits: self.bits }
    }

    fn contains_ip(&self, ip: IpAddr) -> bool {
        ip.is_ipv4() == self.addr.is_ipv4() && mask(ip, self.bits) == mask(self.addr, self.bits)
    }

    fn contains_cidr(&self, other: &Cidr) -> bool {
        self.bits <= other.bits && self.contains_ip(other.addr)
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.bits)
    }
}

fn is_loopback(a: IpAddr) -> bool {
    a.is_loopback()
}

fn is_multicast(a: IpAddr) -> bool {
    a.is_multicast()
}

/// Go's `IsLinkLocalUnicast`: 169.254.0.0/16, fe80::/10.
fn is_link_local_unicast(a: IpAddr) -> bool {
    match a {
        IpAddr::V4(v4) => v4.octets()[..2] == [169, 254],
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    }
}

/// Go's `IsLinkLocalMulticast`: 224.0.0.0/24, ff02::/16.
fn is_link_local_multicast(a: IpAddr) -> bool {
    match a {
        IpAddr::V4(v4) => v4.octets()[..3] == [224, 0, 0],
        IpAddr::V6(v6) => v6.segments()[0] & 0xff0f == 0xff02,
    }
}

/// Go's `IsGlobalUnicast`: not unspecified, broadcast, loopback,
/// multicast or link-local unicast (private ranges are global unicast).
fn is_global_unicast(a: IpAddr) -> bool {
    let broadcast = a == IpAddr::V4(Ipv4Addr::BROADCAST);
    !a.is_unspecified() && !broadcast && !is_loopback(a) && !is_multicast(a) && !is_link_local_unicast(a)
}

fn ip(args: &[Value]) -> Result<IpAddr, ExecutionError> {
    Ok(opaque_arg::<Ip>(args, 0)?.0)
}

fn cidr(args: &[Value]) -> Result<Cidr, ExecutionError> {
    opaque_arg::<Cidr>(args, 0).copied()
}

overload!(string_to_ip, |a| parse_ip(str_arg(a, 0)?).map(|ip| opaque(Ip(ip))).map_err(err));
overload!(is_ip, |a| Ok(Value::Bool(parse_ip(str_arg(a, 0)?).is_ok())));
overload!(ip_is_canonical, |a| {
    let s = str_arg(a, 0)?;
    parse_ip(s).map(|ip| Value::Bool(ip.to_string() == s)).map_err(err)
});
overload!(ip_to_string, |a| Ok(Value::String(ip(a)?.to_string().into())));
overload!(family, |a| Ok(Value::Int(if ip(a)?.is_ipv4() { 4 } else { 6 })));
overload!(ip_is_unspecified, |a| Ok(Value::Bool(ip(a)?.is_unspecified())));
overload!(ip_is_loopback, |a| Ok(Value::Bool(is_loopback(ip(a)?))));
overload!(ip_is_link_local_multicast, |a| Ok(Value::Bool(is_link_local_multicast(ip(a)?))));
overload!(ip_is_link_local_unicast, |a| Ok(Value::Bool(is_link_local_unicast(ip(a)?))));
overload!(ip_is_global_unicast, |a| Ok(Value::Bool(is_global_unicast(ip(a)?))));

overload!(string_to_cidr, |a| {
    parse_cidr(str_arg(a, 0)?)
        .map(opaque)
        .map_err(|e| err(format!("network address parse error during conversion from string: {e}")))
});
overload!(is_cidr, |a| Ok(Value::Bool(parse_cidr(str_arg(a, 0)?).is_ok())));
overload!(cidr_to_string, |a| Ok(Value::String(cidr(a)?.to_string().into())));
overload!(cidr_contains_ip, |a| {
    let other = match &a[1] {
        Value::String(s) => parse_ip(s).map_err(err)?,
        _ => opaque_arg::<Ip>(a, 1)?.0,
    };
    Ok(Value::Bool(cidr(a)?.contains_ip(other)))
});
overload!(cidr_contains_cidr, |a| {
    let other = match &a[1] {
        Value::String(s) => {
            parse_cidr(s).map_err(|e| err(format!("network address parse error during conversion from string: {e}")))?
        }
        _ => *opaque_arg::<Cidr>(a, 1)?,
    };
    Ok(Value::Bool(cidr(a)?.contains_cidr(&other)))
});
overload!(cidr_ip, |a| Ok(opaque(Ip(cidr(a)?.addr))));
overload!(cidr_masked, |a| Ok(opaque(cidr(a)?.masked())));
overload!(cidr_prefix_length, |a| Ok(Value::Int(i64::from(cidr(a)?.bits))));

/// Registers both libraries on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let ip_t = || opaque_type(IP_TYPE);
    let cidr_t = || opaque_type(CIDR_TYPE);
    env.add_overload("ip", "string_to_ip", vec![STRING_TYPE], string_to_ip)?;
    env.add_overload("isIP", "is_ip", vec![STRING_TYPE], is_ip)?;
    env.add_overload("ip.isCanonical", "ip_is_canonical", vec![STRING_TYPE], ip_is_canonical)?;
    env.add_overload("string", "ip_to_string", vec![ip_t()], ip_to_string)?;
    env.add_member_overload("family", "ip_family", ip_t(), vec![], family)?;
    env.add_member_overload("isUnspecified", "ip_is_unspecified", ip_t(), vec![], ip_is_unspecified)?;
    env.add_member_overload("isLoopback", "ip_is_loopback", ip_t(), vec![], ip_is_loopback)?;
    env.add_member_overload(
        "isLinkLocalMulticast",
        "ip_is_link_local_multicast",
        ip_t(),
        vec![],
        ip_is_link_local_multicast,
    )?;
    env.add_member_overload(
        "isLinkLocalUnicast",
        "ip_is_link_local_unicast",
        ip_t(),
        vec![],
        ip_is_link_local_unicast,
    )?;
    env.add_member_overload("isGlobalUnicast", "ip_is_global_unicast", ip_t(), vec![], ip_is_global_unicast)?;

    env.add_overload("cidr", "string_to_cidr", vec![STRING_TYPE], string_to_cidr)?;
    env.add_overload("isCIDR", "is_cidr", vec![STRING_TYPE], is_cidr)?;
    env.add_overload("string", "cidr_to_string", vec![cidr_t()], cidr_to_string)?;
    env.add_member_overload("containsIP", "cidr_contains_ip_string", cidr_t(), vec![STRING_TYPE], cidr_contains_ip)?;
    env.add_member_overload("containsIP", "cidr_contains_ip_ip", cidr_t(), vec![ip_t()], cidr_contains_ip)?;
    env.add_member_overload(
        "containsCIDR",
        "cidr_contains_cidr_string",
        cidr_t(),
        vec![STRING_TYPE],
        cidr_contains_cidr,
    )?;
    env.add_member_overload("containsCIDR", "cidr_contains_cidr", cidr_t(), vec![cidr_t()], cidr_contains_cidr)?;
    env.add_member_overload("ip", "cidr_ip", cidr_t(), vec![], cidr_ip)?;
    env.add_member_overload("masked", "cidr_masked", cidr_t(), vec![], cidr_masked)?;
    env.add_member_overload("prefixLength", "cidr_prefix_length", cidr_t(), vec![], cidr_prefix_length)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::eval_str;
    use serde_json::json;

    #[test]
    fn ip_functions_follow_upstream_examples() {
        // Examples from upstream's library/ip.go documentation.
        let cases = [
            ("isIP('127.0.0.1')", json!(true)),
            ("isIP('::1')", json!(true)),
            ("isIP('127.0.0.256')", json!(false)),
            ("isIP(':::1')", json!(false)),
            ("isIP('127.0.0.01')", json!(false)),
            ("isIP('fe80::1%eth0')", json!(false)),
            ("isIP('::ffff:1.2.3.4')", json!(false)),
            ("ip.isCanonical('127.0.0.1')", json!(true)),
            ("ip.isCanonical('::1')", json!(true)),
            ("ip.isCanonical('2001:db8::abcd')", json!(true)),
            ("ip.isCanonical('2001:DB8::ABCD')", json!(false)),
            ("ip.isCanonical('2001:db8::0:0:0:abcd')", json!(false)),
            ("ip('127.0.0.1').family()", json!(4)),
            ("ip('::1').family()", json!(6)),
            ("ip('0.0.0.0').isUnspecified()", json!(true)),
            ("ip('127.0.0.1').isUnspecified()", json!(false)),
            ("ip('::').isUnspecified()", json!(true)),
            ("ip('127.0.0.1').isLoopback()", json!(true)),
            ("ip('192.168.0.1').isLoopback()", json!(false)),
            ("ip('::1').isLoopback()", json!(true)),
            ("ip('224.0.0.1').isLinkLocalMulticast()", json!(true)),
            ("ip('224.0.1.1').isLinkLocalMulticast()", json!(false)),
            ("ip('ff02::1').isLinkLocalMulticast()", json!(true)),
            ("ip('fd00::1').isLinkLocalMulticast()", json!(false)),
            ("ip('169.254.169.254').isLinkLocalUnicast()", json!(true)),
            ("ip('192.168.0.1').isLinkLocalUnicast()", json!(false)),
            ("ip('fe80::1').isLinkLocalUnicast()", json!(true)),
            ("ip('fd80::1').isLinkLocalUnicast()", json!(false)),
            ("ip('192.168.0.1').isGlobalUnicast()", json!(true)),
            ("ip('255.255.255.255').isGlobalUnicast()", json!(false)),
            ("ip('2001:db8::abcd').isGlobalUnicast()", json!(true)),
            ("ip('ff00::1').isGlobalUnicast()", json!(false)),
            ("string(ip('2001:DB8::0:0:0:abcd'))", json!("2001:db8::abcd")),
            ("ip('127.0.0.1') == ip('127.0.0.1')", json!(true)),
            ("ip('127.0.0.1') == ip('127.0.0.2')", json!(false)),
        ];
        for (src, want) in cases {
            assert_eq!(eval_str(src), Ok(want), "{src}");
        }
        assert_eq!(
            eval_str("ip('fe80::1%eth0')"),
            Err("IP address \"fe80::1%eth0\" with zone value is not allowed".into())
        );
        assert_eq!(
            eval_str("ip('::ffff:1.2.3.4')"),
            Err("IPv4-mapped IPv6 address \"::ffff:1.2.3.4\" is not allowed".into())
        );
        assert!(eval_str("ip('127.0.0.256')").unwrap_err().starts_with("IP Address \"127.0.0.256\" parse error"));
    }

    #[test]
    fn cidr_functions_follow_upstream_examples() {
        // Examples from upstream's library/cidr.go documentation.
        let cases = [
            ("isCIDR('192.168.0.0/16')", json!(true)),
            ("isCIDR('::1/128')", json!(true)),
            ("isCIDR('192.168.0.0/33')", json!(false)),
            ("isCIDR('::1/129')", json!(false)),
            ("cidr('192.168.0.0/24').containsIP(ip('192.168.0.1'))", json!(true)),
            ("cidr('192.168.0.0/24').containsIP(ip('192.168.1.1'))", json!(false)),
            ("cidr('192.168.0.0/24').containsIP('192.168.0.1')", json!(true)),
            ("cidr('192.168.0.0/24').containsIP('192.168.1.1')", json!(false)),
            ("cidr('192.168.0.0/16').containsCIDR(cidr('192.168.10.0/24'))", json!(true)),
            ("cidr('192.168.1.0/24').containsCIDR(cidr('192.168.2.0/24'))", json!(false)),
            ("cidr('192.168.0.0/16').containsCIDR('192.168.10.0/24')", json!(true)),
            ("cidr('192.168.1.0/24').containsCIDR('192.168.2.0/24')", json!(false)),
            ("cidr('192.168.0.1/24').ip() == ip('192.168.0.1')", json!(true)),
            ("cidr('192.168.0.1/24').ip().family()", json!(4)),
            ("cidr('::1/128').ip().family()", json!(6)),
            ("cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24')", json!(true)),
            ("cidr('192.168.0.0/24') == cidr('192.168.0.0/24').masked()", json!(true)),
            ("cidr('192.168.0.1/24') == cidr('192.168.0.1/24').masked()", json!(false)),
            ("cidr('192.168.0.0/16').prefixLength()", json!(16)),
            ("cidr('::1/128').prefixLength()", json!(128)),
            ("string(cidr('192.168.0.1/24').masked())", json!("192.168.0.0/24")),
        ];
        for (src, want) in cases {
            assert_eq!(eval_str(src), Ok(want), "{src}");
        }
        assert_eq!(
            eval_str("cidr('192.168.0.0/33')"),
            Err("network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"192.168.0.0/33\"): prefix length out of range".into())
        );
    }
}
