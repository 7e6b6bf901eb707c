//! Subject alternative names of the API serving certificate.

use std::collections::BTreeSet;
use std::fmt;
use std::net::IpAddr;

/// One subject alternative name: an IP address or a DNS name.
///
/// Ordered (IPs and names each sorted) so that the wanted set and the set
/// found in an existing certificate compare independently of order.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum San {
    /// An `iPAddress` SAN.
    Ip(IpAddr),
    /// A `dNSName` SAN, lower-case ASCII (a leading `*.` wildcard is allowed).
    Dns(String),
}

impl San {
    /// Parses a `--tls-san` value: an IPv4 or IPv6 address (optionally in
    /// `[brackets]`) becomes an IP SAN, anything else must be a DNS name
    /// (RFC 1123 labels of letters, digits and `-`, at most 63 characters each
    /// and 253 in total, optionally starting with `*.`); names are lower-cased.
    ///
    /// Errors name the offending value and what a valid one looks like.
    pub fn parse(value: &str) -> Result<San, String> {
        let v = value.trim();
        let unbracketed = v.strip_prefix('[').and_then(|s| s.strip_suffix(']')).unwrap_or(v);
        if let Ok(ip) = unbracketed.parse::<IpAddr>() {
            return Ok(San::Ip(ip));
        }
        let name = v.trim_end_matches('.').to_ascii_lowercase();
        let invalid = |why: &str| {
            Err(format!("invalid TLS SAN {value:?}: {why}; use an IP address or a DNS name such as api.example.com"))
        };
        if name.is_empty() {
            return invalid("it is empty");
        }
        if name.len() > 253 {
            return invalid("a DNS name has at most 253 characters");
        }
        let rest = name.strip_prefix("*.").unwrap_or(&name);
        for label in rest.split('.') {
            if label.is_empty() || label.len() > 63 {
                return invalid("each dot-separated label must have 1 to 63 characters");
            }
            if !label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
                return invalid("DNS names may only contain letters, digits, '-' and '.'");
            }
            if label.starts_with('-') || label.ends_with('-') {
                return invalid("a label may not start or end with '-'");
            }
        }
        Ok(San::Dns(name))
    }
}

impl fmt::Display for San {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            San::Ip(ip) => write!(f, "{ip}"),
            San::Dns(name) => f.write_str(name),
        }
    }
}

/// Everything that decides the API serving certificate's names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServingNames {
    /// The address other nodes and clients reach this server at (`--advertise-address`).
    pub advertise_address: IpAddr,
    /// The host's own non-loopback addresses (every interface).
    pub host_addresses: Vec<IpAddr>,
    /// The first address of the service CIDR: the ClusterIP of the
    /// `default/kubernetes` Service (10.43.0.1 for 10.43.0.0/16).
    pub kubernetes_service_ip: IpAddr,
    /// The cluster DNS domain (`--cluster-domain`, default `cluster.local`).
    pub cluster_domain: String,
    /// Additional names from `--tls-san`.
    pub extra: Vec<San>,
}

impl ServingNames {
    /// The SANs the serving certificate must carry, as kube-apiserver's
    /// (kubeadm's `GetAPIServerAltNames`) plus loopback: `127.0.0.1`, `::1`,
    /// `localhost`, the advertise address, the host addresses, the
    /// `kubernetes` Service IP, `kubernetes`, `kubernetes.default`,
    /// `kubernetes.default.svc`, `kubernetes.default.svc.<cluster domain>`,
    /// and every extra SAN.
    pub fn sans(&self) -> BTreeSet<San> {
        let mut sans = BTreeSet::new();
        sans.insert(San::Ip(IpAddr::from([127, 0, 0, 1])));
        sans.insert(San::Ip(IpAddr::from(std::net::Ipv6Addr::LOCALHOST)));
        sans.insert(San::Dns("localhost".into()));
        sans.insert(San::Ip(self.advertise_address));
        sans.extend(self.host_addresses.iter().map(|ip| San::Ip(*ip)));
        sans.insert(San::Ip(self.kubernetes_service_ip));
        let domain = self.cluster_domain.trim_matches('.').to_ascii_lowercase();
        for name in ["kubernetes", "kubernetes.default", "kubernetes.default.svc"] {
            sans.insert(San::Dns(name.into()));
        }
        sans.insert(San::Dns(format!("kubernetes.default.svc.{domain}")));
        sans.extend(self.extra.iter().cloned());
        sans
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> ServingNames {
        ServingNames {
            advertise_address: "192.168.1.10".parse().unwrap(),
            host_addresses: vec!["192.168.1.10".parse().unwrap(), "fd00::10".parse().unwrap()],
            kubernetes_service_ip: "10.43.0.1".parse().unwrap(),
            cluster_domain: "cluster.local".into(),
            extra: vec![San::parse("api.example.com").unwrap(), San::parse("203.0.113.7").unwrap()],
        }
    }

    #[test]
    fn serving_sans_cover_loopback_host_service_ip_and_kubernetes_service_names() {
        let got: Vec<String> = names().sans().iter().map(ToString::to_string).collect();
        for want in [
            "127.0.0.1",
            "::1",
            "localhost",
            "192.168.1.10",
            "fd00::10",
            "10.43.0.1",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
            "api.example.com",
            "203.0.113.7",
        ] {
            assert!(got.contains(&want.to_string()), "{want} missing from {got:?}");
        }
        // The advertise address is also a host address: it appears once.
        assert_eq!(got.len(), 12);
    }

    #[test]
    fn cluster_domain_is_configurable() {
        let mut n = names();
        n.cluster_domain = "corp.internal".into();
        let sans = n.sans();
        assert!(sans.contains(&San::Dns("kubernetes.default.svc.corp.internal".into())));
        assert!(!sans.contains(&San::Dns("kubernetes.default.svc.cluster.local".into())));
    }

    #[test]
    fn tls_san_values_become_ip_or_dns_sans() {
        assert_eq!(San::parse("10.0.0.1").unwrap(), San::Ip("10.0.0.1".parse().unwrap()));
        assert_eq!(San::parse("[2001:db8::1]").unwrap(), San::Ip("2001:db8::1".parse().unwrap()));
        assert_eq!(San::parse("API.Example.COM.").unwrap(), San::Dns("api.example.com".into()));
        assert_eq!(San::parse("*.example.com").unwrap(), San::Dns("*.example.com".into()));
        assert!(San::parse("bad name").unwrap_err().contains("invalid TLS SAN"));
        assert!(San::parse("-x.example.com").is_err());
        assert!(San::parse("").is_err());
        assert!(San::parse("näme.example").is_err());
    }
}
