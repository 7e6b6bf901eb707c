//! The query → answer function over an [`Index`]: pure, no I/O.
//!
//! It follows CoreDNS's kubernetes plugin as k3s configures it
//! (`kubernetes cluster.local in-addr.arpa ip6.arpa { pods insecure;
//! fallthrough in-addr.arpa ip6.arpa; ttl 5 }`, then `forward .`):
//!
//! - names outside `<domain>` and the reverse zones → [`Answer::Forward`];
//! - reverse zones (`in-addr.arpa`, `ip6.arpa`): a PTR query for a known
//!   address is answered; everything else falls through → `Forward`;
//! - `<domain>`: answers are authoritative (AA). A name that does not exist →
//!   NXDOMAIN with the SOA in the authority section (SERVFAIL before the
//!   informers synced); a name that exists without records of the asked type
//!   → NOERROR, no answer, SOA in authority (NODATA). AXFR/IXFR → REFUSED.
//! - Existing-but-empty names: the apex, `svc.<domain>`, `pod.<domain>`,
//!   `<ns>.svc.<domain>` and `<ns>.pod.<domain>` for an existing namespace.
//! - Special names: SOA and NS at the apex (`ns.dns.<domain>` with the
//!   kube-dns address as glue), `ns.dns.<domain>` A/AAAA, TXT
//!   `dns-version.<domain>` = `1.1.0`.
//! - Pods (`pods insecure`): `a-b-c-d.<ns>.pod.<domain>` (IPv6: `:` written
//!   as `-`) answers the address it spells when the namespace exists.
//! - SRV `_<port>._<proto>.<svc>.<ns>.svc.<domain>` (underscores optional,
//!   as CoreDNS strips them), and SRV on the service name itself (all ports).
//! - ExternalName: CNAME; for A/AAAA the target is resolved too — inside the
//!   domain from the index, outside through [`Answer::Local::chase`].

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use hickory_server::proto::op::ResponseCode;
use hickory_server::proto::rr::rdata::PTR;
use hickory_server::proto::rr::{Name, RData, Record, RecordType};

use crate::index::{Index, Node, TTL};

/// What to send for one question.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// An authoritative answer from the cluster zone (or a PTR hit).
    Local {
        /// NOERROR, NXDOMAIN or SERVFAIL.
        rcode: ResponseCode,
        /// Answer section.
        answers: Vec<Record>,
        /// Authority section (the SOA for negative answers, NS is in answers).
        authority: Vec<Record>,
        /// Additional section (SRV target addresses, NS glue).
        additionals: Vec<Record>,
        /// An ExternalName target outside the cluster domain that the server
        /// resolves upstream (same query type) and appends to the answers.
        chase: Option<Name>,
    },
    /// Not ours: forward the query unchanged to the upstream resolvers.
    Forward,
    /// Zone transfers are refused (CoreDNS kubernetes plugin).
    Refused,
}

impl Answer {
    /// The response code (`Forward` → None).
    pub fn rcode(&self) -> Option<ResponseCode> {
        match self {
            Answer::Local { rcode, .. } => Some(*rcode),
            Answer::Refused => Some(ResponseCode::Refused),
            Answer::Forward => None,
        }
    }

    /// The answer records (empty unless `Local`).
    pub fn answers(&self) -> &[Record] {
        match self {
            Answer::Local { answers, .. } => answers,
            _ => &[],
        }
    }
}

enum Found<'a> {
    /// Name exists (CoreDNS `Records` returned no error), maybe with a node.
    Node(&'a Node, bool),
    Pod(IpAddr),
    /// Exists with no items (apex, `svc`, namespace names).
    Empty,
}

/// Parses a reverse-zone name into an address (CoreDNS
/// `ExtractAddressFromReverse`). `name` is lower-case without trailing dot.
pub fn address_from_reverse(name: &str) -> Option<IpAddr> {
    if let Some(rest) = name.strip_suffix(".in-addr.arpa") {
        let octets: Vec<u8> = rest.split('.').map(|s| s.parse().ok()).collect::<Option<_>>()?;
        if octets.len() != 4 {
            return None;
        }
        return Some(IpAddr::V4(Ipv4Addr::new(octets[3], octets[2], octets[1], octets[0])));
    }
    if let Some(rest) = name.strip_suffix(".ip6.arpa") {
        let nibbles: Vec<u8> = rest
            .split('.')
            .map(|s| if s.len() == 1 { u8::from_str_radix(s, 16).ok() } else { None })
            .collect::<Option<_>>()?;
        if nibbles.len() != 32 {
            return None;
        }
        let mut bytes = [0u8; 16];
        for k in 0..16 {
            bytes[15 - k] = (nibbles[2 * k + 1] << 4) | nibbles[2 * k];
        }
        return Some(IpAddr::V6(Ipv6Addr::from(bytes)));
    }
    None
}

/// CoreDNS `pods insecure`: the address a pod label spells (`1-2-3-4`, or
/// IPv6 with `-` for `:`).
pub fn pod_address(label: &str) -> Option<IpAddr> {
    let text = if label.matches('-').count() == 3 && !label.contains("--") {
        label.replace('-', ".")
    } else {
        label.replace('-', ":")
    };
    text.parse().ok()
}

fn renamed(records: &[Record], owner: &Name, rename: bool) -> Vec<Record> {
    if !rename {
        return records.to_vec();
    }
    records
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r.name = owner.clone();
            r
        })
        .collect()
}

/// Answers one question from the index.
///
/// `qname` may be in any case; comparisons are case-insensitive.
pub fn lookup(index: &Index, qname: &Name, qtype: RecordType) -> Answer {
    let mut lname = qname.to_ascii();
    lname.make_ascii_lowercase();
    if lname.ends_with('.') {
        lname.pop();
    }
    lookup_str(index, &lname, qname, qtype, 0)
}

fn lookup_str(index: &Index, lname: &str, qname: &Name, qtype: RecordType, depth: u8) -> Answer {
    let domain = index.domain.as_str();
    let base = if lname == domain { Some("") } else { lname.strip_suffix(domain).and_then(|b| b.strip_suffix('.')) };
    let Some(base) = base else {
        // Reverse zones: only PTR hits are answered, the rest falls through.
        if qtype == RecordType::PTR {
            if let Some(targets) = address_from_reverse(lname).and_then(|ip| index.reverse.get(&ip)) {
                let answers = targets
                    .iter()
                    .map(|t| Record::from_rdata(qname.clone(), TTL, RData::PTR(PTR(t.clone()))))
                    .collect();
                return local(ResponseCode::NoError, answers, vec![], vec![], None);
            }
        }
        return Answer::Forward;
    };
    if matches!(qtype, RecordType::AXFR | RecordType::IXFR) {
        return Answer::Refused;
    }
    let nodata = || local(ResponseCode::NoError, vec![], vec![index.soa.clone()], vec![], None);
    let nxdomain = || {
        let rcode = if index.synced { ResponseCode::NXDomain } else { ResponseCode::ServFail };
        local(rcode, vec![], vec![index.soa.clone()], vec![], None)
    };

    match qtype {
        RecordType::SOA if base.is_empty() => {
            return local(ResponseCode::NoError, vec![index.soa.clone()], vec![], vec![], None)
        }
        RecordType::SOA => return nodata(),
        RecordType::NS if base.is_empty() => {
            return local(ResponseCode::NoError, vec![index.ns.clone()], vec![], index.ns_glue.clone(), None)
        }
        RecordType::TXT => {
            if base == "dns-version" {
                return local(ResponseCode::NoError, vec![index.version.clone()], vec![], vec![], None);
            }
            // CoreDNS: NODATA only if the name has records of another type.
            return match resolve(index, lname, base) {
                Ok(Found::Node(n, _)) if n.has_items => nodata(),
                Ok(Found::Pod(_)) => nodata(),
                _ => nxdomain(),
            };
        }
        _ => {}
    }
    if base == "ns.dns" {
        // isDefaultNS: the kube-dns addresses.
        let want = if qtype == RecordType::AAAA { RecordType::AAAA } else { RecordType::A };
        let answers: Vec<Record> = if matches!(qtype, RecordType::A | RecordType::AAAA) {
            index.ns_glue.iter().filter(|r| r.record_type() == want).cloned().collect()
        } else {
            vec![]
        };
        return if answers.is_empty() { nodata() } else { local(ResponseCode::NoError, answers, vec![], vec![], None) };
    }
    let found = match resolve(index, lname, base) {
        Ok(f) => f,
        Err(()) => return nxdomain(),
    };
    let node = match found {
        Found::Empty => return nodata(),
        Found::Pod(ip) => {
            let matches = matches!((ip, qtype), (IpAddr::V4(_), RecordType::A) | (IpAddr::V6(_), RecordType::AAAA));
            if !matches {
                return nodata();
            }
            let data = match ip {
                IpAddr::V4(v4) => RData::A(v4.into()),
                IpAddr::V6(v6) => RData::AAAA(v6.into()),
            };
            return local(
                ResponseCode::NoError,
                vec![Record::from_rdata(qname.clone(), TTL, data)],
                vec![],
                vec![],
                None,
            );
        }
        Found::Node(node, rename) => (node, rename),
    };
    let (node, rename) = node;
    match qtype {
        RecordType::A | RecordType::AAAA => {
            if let Some((cname, target)) = &node.cname {
                let cname = renamed(std::slice::from_ref(cname), qname, rename);
                let mut t = target.to_ascii();
                t.make_ascii_lowercase();
                let t = t.trim_end_matches('.').to_string();
                let in_zone = t == domain || t.ends_with(&format!(".{domain}"));
                if !in_zone {
                    return local(ResponseCode::NoError, cname, vec![], vec![], Some(target.clone()));
                }
                if depth >= 8 || t == lname {
                    return nodata();
                }
                // Inside the cluster domain: CNAME plus the target's records,
                // or nothing if the target has none (CoreDNS drops the CNAME).
                return match lookup_str(index, &t, target, qtype, depth + 1) {
                    Answer::Local { answers, .. } if !answers.is_empty() => {
                        let mut all = cname;
                        all.extend(answers);
                        local(ResponseCode::NoError, all, vec![], vec![], None)
                    }
                    _ => nodata(),
                };
            }
            let recs = if qtype == RecordType::A { &node.a } else { &node.aaaa };
            if recs.is_empty() {
                return nodata();
            }
            local(ResponseCode::NoError, renamed(recs, qname, rename), vec![], vec![], None)
        }
        RecordType::SRV => {
            if node.srv.is_empty() {
                return nodata();
            }
            local(ResponseCode::NoError, renamed(&node.srv, qname, rename), vec![], node.srv_extra.clone(), None)
        }
        RecordType::CNAME => match &node.cname {
            Some((cname, _)) => {
                local(ResponseCode::NoError, renamed(std::slice::from_ref(cname), qname, rename), vec![], vec![], None)
            }
            None => nodata(),
        },
        _ => nodata(),
    }
}

fn local(
    rcode: ResponseCode,
    answers: Vec<Record>,
    authority: Vec<Record>,
    additionals: Vec<Record>,
    chase: Option<Name>,
) -> Answer {
    Answer::Local { rcode, answers, authority, additionals, chase }
}

/// CoreDNS `Records()` over the index: `Err` = name error (NXDOMAIN).
/// The bool says whether the owner name differs from the indexed one (the
/// underscore-less port form) so records must be renamed.
fn resolve<'a>(index: &'a Index, lname: &str, base: &str) -> Result<Found<'a>, ()> {
    if base.is_empty() {
        return Ok(Found::Empty);
    }
    if let Some(node) = index.nodes.get(lname) {
        return Ok(Found::Node(node, false));
    }
    let segs: Vec<&str> = base.split('.').collect();
    let n = segs.len();
    let kind = segs[n - 1];
    if kind != "svc" && kind != "pod" {
        return Err(());
    }
    if n == 1 {
        return Ok(Found::Empty);
    }
    let namespace = segs[n - 2];
    if !index.namespaces.contains(namespace) {
        return Err(());
    }
    if n == 2 {
        return Ok(Found::Empty);
    }
    if n > 5 {
        return Err(());
    }
    if kind == "pod" {
        return pod_address(segs[n - 3]).map(Found::Pod).ok_or(());
    }
    if n == 5 {
        // Port and protocol without (or with partial) underscores.
        let port = segs[0].strip_prefix('_').unwrap_or(segs[0]);
        let proto = segs[1].strip_prefix('_').unwrap_or(segs[1]);
        let key = format!("_{port}._{proto}.{}.{}.svc.{}", segs[2], namespace, index.domain);
        if let Some(node) = index.nodes.get(&key) {
            return Ok(Found::Node(node, true));
        }
    }
    Err(())
}
