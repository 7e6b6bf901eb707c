//! core/v1 Endpoints: `SetDefaults_EndpointPort` (protocol `TCP`) and
//! `ValidateEndpoints` (`pkg/apis/core/validation`) on create and update:
//! each subset has addresses, each address a valid IP that is not special
//! ([`validate_endpoint_ip`]), a DNS-1123 label `hostname` and a subdomain
//! `nodeName`; ports have a name when there are several, a valid number,
//! a supported protocol and a qualified-name `appProtocol`.

use std::net::IpAddr;

use serde_json::{json, Value};

use super::{generic, Generic, Strategy};
use crate::errors::StatusCause;
use crate::validation::netaddr::{parse_ip_sloppy, validate_ip_for_legacy_field};
use crate::validation::{is_dns1123_label, is_dns1123_subdomain, is_qualified_name, ErrorList, FieldError, Path};

/// The port protocols Endpoints and EndpointSlices accept (sorted, as
/// upstream lists them in `Unsupported value` messages).
pub const SUPPORTED_PORT_PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];

/// The strategy of core/v1 Endpoints.
#[derive(Clone, Debug)]
pub struct Endpoints {
    flags: Generic,
}

impl Endpoints {
    /// The strategy with upstream's flags.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Endpoints {
        Endpoints { flags: generic::for_builtin("", "Endpoints", false) }
    }
}

/// `ValidateEndpointIP` (formerly `ValidateNonSpecialIP`): refuses the
/// unspecified, loopback, link-local and link-local multicast addresses
/// that make no sense as a destination. IPv4-mapped IPv6 addresses are
/// judged as their IPv4 address, as Go's `net.IP` methods do.
pub fn validate_endpoint_ip(value: &str, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(ip) = parse_ip_sloppy(value) else {
        errs.push(FieldError::invalid(path, value, "must be a valid IP address"));
        return errs;
    };
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    };
    let (unspecified, loopback, link_local, ll_multicast) = match ip {
        IpAddr::V4(a) => {
            let o = a.octets();
            (a.is_unspecified(), o[0] == 127, o[0] == 169 && o[1] == 254, o[0] == 224 && o[1] == 0 && o[2] == 0)
        }
        IpAddr::V6(a) => {
            let s = a.segments();
            (a.is_unspecified(), a.is_loopback(), s[0] & 0xffc0 == 0xfe80, s[0] & 0xff0f == 0xff02)
        }
    };
    if unspecified {
        errs.push(FieldError::invalid(path, value, &format!("may not be unspecified ({value})")));
    }
    if loopback {
        errs.push(FieldError::invalid(path, value, "may not be in the loopback range (127.0.0.0/8, ::1/128)"));
    }
    if link_local {
        errs.push(FieldError::invalid(path, value, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"));
    }
    if ll_multicast {
        errs.push(FieldError::invalid(
            path,
            value,
            "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
        ));
    }
    errs
}

/// `ValidateDNS1123Label`: one `Invalid` per message of the rule.
pub(crate) fn validate_dns1123_label(value: &str, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for msg in is_dns1123_label(value) {
        errs.push(FieldError::invalid(path, value, &msg));
    }
    errs
}

/// `ValidateQualifiedName`: one `Invalid` per message of the rule.
pub(crate) fn validate_qualified_name(value: &str, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for msg in is_qualified_name(value) {
        errs.push(FieldError::invalid(path, value, &msg));
    }
    errs
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn items(v: &Value, key: &str) -> Vec<Value> {
    v.get(key).and_then(Value::as_array).cloned().unwrap_or_default()
}

/// `validateEndpointAddress`: the IP must parse; hostname and nodeName
/// are checked; only when all of that passes is the IP checked for being
/// special.
fn validate_address(addr: &Value, path: &Path) -> ErrorList {
    let ip = str_at(addr, "ip").unwrap_or("");
    let mut errs = validate_ip_for_legacy_field(&path.child("ip"), ip);
    if let Some(h) = str_at(addr, "hostname").filter(|h| !h.is_empty()) {
        errs.extend(validate_dns1123_label(h, &path.child("hostname")));
    }
    if let Some(n) = str_at(addr, "nodeName") {
        for msg in is_dns1123_subdomain(n) {
            errs.push(FieldError::invalid(&path.child("nodeName"), n, &msg));
        }
    }
    if errs.is_empty() {
        errs.extend(validate_endpoint_ip(ip, &path.child("ip")));
    }
    errs
}

/// `validateEndpointPort`: a name is required when the subset has more
/// than one port.
fn validate_port(port: &Value, require_name: bool, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let name = str_at(port, "name").unwrap_or("");
    if require_name && name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    } else if !name.is_empty() {
        errs.extend(validate_dns1123_label(name, &path.child("name")));
    }
    let number = port.get("port").and_then(Value::as_i64).unwrap_or(0);
    if !(1..=65535).contains(&number) {
        errs.push(FieldError::invalid(&path.child("port"), number, "must be between 1 and 65535, inclusive"));
    }
    match str_at(port, "protocol").unwrap_or("") {
        "" => errs.push(FieldError::required(&path.child("protocol"), "")),
        p if !SUPPORTED_PORT_PROTOCOLS.contains(&p) => {
            errs.push(FieldError::not_supported(&path.child("protocol"), p, &SUPPORTED_PORT_PROTOCOLS))
        }
        _ => {}
    }
    if let Some(ap) = str_at(port, "appProtocol") {
        errs.extend(validate_qualified_name(ap, &path.child("appProtocol")));
    }
    errs
}

/// `validateEndpointSubsets` at `subsets`.
pub fn validate_endpoint_subsets(obj: &Value) -> ErrorList {
    let path = Path::new("subsets");
    let mut errs = ErrorList::new();
    for (i, ss) in items(obj, "subsets").iter().enumerate() {
        let idx = path.index(i);
        let (ready, not_ready) = (items(ss, "addresses"), items(ss, "notReadyAddresses"));
        if ready.is_empty() && not_ready.is_empty() {
            errs.push(FieldError::required(&idx, "must specify `addresses` or `notReadyAddresses`"));
        }
        for (j, a) in ready.iter().enumerate() {
            errs.extend(validate_address(a, &idx.child("addresses").index(j)));
        }
        for (j, a) in not_ready.iter().enumerate() {
            errs.extend(validate_address(a, &idx.child("notReadyAddresses").index(j)));
        }
        let ports = items(ss, "ports");
        for (j, p) in ports.iter().enumerate() {
            errs.extend(validate_port(p, ports.len() > 1, &idx.child("ports").index(j)));
        }
    }
    errs
}

impl Strategy for Endpoints {
    fn default(&self, obj: &mut Value) {
        let Some(subsets) = obj.get_mut("subsets").and_then(Value::as_array_mut) else { return };
        for ss in subsets {
            let Some(ports) = ss.get_mut("ports").and_then(Value::as_array_mut) else { continue };
            for p in ports.iter_mut().filter(|p| p.is_object()) {
                if str_at(p, "protocol").is_none_or(str::is_empty) {
                    p["protocol"] = json!("TCP");
                }
            }
        }
    }
    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        validate_endpoint_subsets(obj).to_causes()
    }
    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<StatusCause> {
        validate_endpoint_subsets(new).to_causes()
    }
    fn has_status_subresource(&self) -> bool {
        false
    }
    fn tracks_generation(&self) -> bool {
        self.flags.tracks_generation
    }
    fn allow_create_on_update(&self) -> bool {
        self.flags.allow_create_on_update
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::strategy::cause_texts;

    fn errs(obj: Value) -> Vec<String> {
        let mut obj = obj;
        Endpoints::new().default(&mut obj);
        cause_texts(Endpoints::new().validate_create(&obj))
    }

    #[test]
    fn special_ips_are_refused_with_upstream_messages() {
        let texts = |ip: &str| -> Vec<String> {
            validate_endpoint_ip(ip, &Path::new("ip")).iter().map(|e| e.to_string()).collect()
        };
        assert_eq!(texts("0.0.0.0"), vec![r#"ip: Invalid value: "0.0.0.0": may not be unspecified (0.0.0.0)"#]);
        assert_eq!(
            texts("127.0.0.1"),
            vec![r#"ip: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)"#]
        );
        assert_eq!(
            texts("::1")[0],
            r#"ip: Invalid value: "::1": may not be in the loopback range (127.0.0.0/8, ::1/128)"#
        );
        assert_eq!(
            texts("169.254.169.254"),
            vec![
                r#"ip: Invalid value: "169.254.169.254": may not be in the link-local range (169.254.0.0/16, fe80::/10)"#
            ]
        );
        assert_eq!(
            texts("ff02::1"),
            vec![
                r#"ip: Invalid value: "ff02::1": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"#
            ]
        );
        assert_eq!(texts("::ffff:127.0.0.1").len(), 1);
        assert!(texts("10.1.2.3").is_empty() && texts("2001:db8::1").is_empty() && texts("239.1.1.1").is_empty());
    }

    #[test]
    fn subsets_follow_validate_endpoints() {
        assert_eq!(
            errs(json!({"subsets": [{}]})),
            vec!["subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`"]
        );
        let bad = json!({"subsets": [{
            "addresses": [{"ip": "10.0.0.1", "hostname": "Bad_Host"}, {"ip": "127.0.0.1"}],
            "notReadyAddresses": [{"ip": "nope"}],
            "ports": [{"port": 80}, {"name": "b", "port": 0, "protocol": "HTTP", "appProtocol": "-x"}]}]});
        assert_eq!(
            errs(bad),
            vec![
                "subsets[0].addresses[0].hostname: Invalid value: \"Bad_Host\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "subsets[0].addresses[1].ip: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
                "subsets[0].notReadyAddresses[0].ip: Invalid value: \"nope\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                "subsets[0].ports[0].name: Required value",
                "subsets[0].ports[1].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                "subsets[0].ports[1].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                "subsets[0].ports[1].appProtocol: Invalid value: \"-x\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            ]
        );
        let good = json!({"subsets": [{"addresses": [{"ip": "10.0.0.1", "nodeName": "node-1"}],
            "ports": [{"port": 443, "name": "https"}]}]});
        assert!(errs(good).is_empty());
    }
}
