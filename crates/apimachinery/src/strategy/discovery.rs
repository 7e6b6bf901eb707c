//! EndpointSlices (`discovery.k8s.io/v1`): `SetDefaults_EndpointPort`
//! (name `""`, protocol `TCP`) and `ValidateEndpointSlice{Create,Update}`
//! (`pkg/apis/discovery/validation`): a required, supported (`IPv4`,
//! `IPv6`, `FQDN`) and immutable `addressType`, at most 1000 endpoints of
//! 1..100 addresses valid for the type, topology labels (without the zone
//! key, which has its own field), a DNS-1123 label `hostname`, a subdomain
//! `nodeName`, zone hints; at most 20000 ports with unique DNS-1123 label
//! names, a supported protocol and a qualified-name `appProtocol`.

use serde_json::{json, Value};

use super::endpoints::{
    validate_dns1123_label, validate_endpoint_ip, validate_qualified_name, SUPPORTED_PORT_PROTOCOLS,
};
use super::{generic, Generic, Strategy};
use crate::errors::StatusCause;
use crate::validation::netaddr::{parse_ip_sloppy, validate_ip_for_legacy_field};
use crate::validation::{
    is_dns1123_label, is_dns1123_subdomain, is_valid_label_value, validate_immutable_field, validate_labels, ErrorList,
    FieldError, Path,
};

/// The address types an EndpointSlice may have (sorted as upstream lists
/// them; the old `IP` type is gone).
pub const ADDRESS_TYPES: [&str; 3] = ["FQDN", "IPv4", "IPv6"];
const MAX_TOPOLOGY_LABELS: usize = 16;
const MAX_ADDRESSES: usize = 100;
const MAX_PORTS: usize = 20000;
const MAX_ENDPOINTS: usize = 1000;
const MAX_ZONE_HINTS: usize = 8;
/// The zone label, which endpoints carry in `zone` rather than in
/// `deprecatedTopology`.
const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

/// The strategy of EndpointSlices.
#[derive(Clone, Debug)]
pub struct EndpointSlice {
    flags: Generic,
}

impl EndpointSlice {
    /// The strategy with upstream's flags.
    #[allow(clippy::new_without_default)]
    pub fn new() -> EndpointSlice {
        EndpointSlice { flags: generic::for_builtin("discovery.k8s.io", "EndpointSlice", false) }
    }
}

fn items(v: &Value, key: &str) -> Vec<Value> {
    v.get(key).and_then(Value::as_array).cloned().unwrap_or_default()
}

/// `IsFullyQualifiedDomainName`: a subdomain of at least two labels (one
/// trailing dot allowed); only the first failing rule is reported.
fn validate_fqdn(path: &Path, value: &str) -> ErrorList {
    let mut errs = ErrorList::new();
    if value.is_empty() {
        errs.push(FieldError::required(path, ""));
        return errs;
    }
    let name = value.strip_suffix('.').unwrap_or(value);
    let msgs = is_dns1123_subdomain(name);
    if !msgs.is_empty() {
        errs.push(FieldError::invalid(path, name, &msgs.join(",")));
    } else if name.split('.').count() < 2 {
        errs.push(FieldError::invalid(path, name, "should be a domain with at least two segments separated by dots"));
    } else if let Some((label, msgs)) = name.split('.').map(|l| (l, is_dns1123_label(l))).find(|(_, m)| !m.is_empty()) {
        errs.push(FieldError::invalid(path, label, &msgs.join(",")));
    }
    errs
}

/// An IPv4 or IPv6 address of a slice of that type: it must parse, be of
/// the family, and not be special.
fn validate_family_ip(path: &Path, value: &str, v4: bool) -> ErrorList {
    let mut errs = validate_ip_for_legacy_field(path, value);
    if !errs.is_empty() {
        return errs;
    }
    let is_v4 = match parse_ip_sloppy(value) {
        Some(std::net::IpAddr::V4(_)) => true,
        Some(std::net::IpAddr::V6(a)) => a.to_ipv4_mapped().is_some(),
        None => false,
    };
    if is_v4 != v4 {
        let msg = if v4 { "must be an IPv4 address" } else { "must be an IPv6 address" };
        errs.push(FieldError::invalid(path, value, msg));
    }
    errs.extend(validate_endpoint_ip(value, path));
    errs
}

fn validate_endpoints(slice: &Value, address_type: &str) -> ErrorList {
    let path = Path::new("endpoints");
    let mut errs = ErrorList::new();
    let endpoints = items(slice, "endpoints");
    if endpoints.len() > MAX_ENDPOINTS {
        errs.push(FieldError::too_many(&path, endpoints.len() as i64, MAX_ENDPOINTS as i64));
        return errs;
    }
    for (i, ep) in endpoints.iter().enumerate() {
        let idx = path.index(i);
        let addr_path = idx.child("addresses");
        let addresses: Vec<String> =
            items(ep, "addresses").iter().map(|a| a.as_str().unwrap_or("").to_string()).collect();
        if addresses.is_empty() {
            errs.push(FieldError::required(&addr_path, "must contain at least 1 address"));
        } else if addresses.len() > MAX_ADDRESSES {
            errs.push(FieldError::too_many(&addr_path, addresses.len() as i64, MAX_ADDRESSES as i64));
        }
        for (j, a) in addresses.iter().enumerate() {
            let p = addr_path.index(j);
            // Other types are not checked further (they were refused above).
            match address_type {
                "IPv4" => errs.extend(validate_family_ip(&p, a, true)),
                "IPv6" => errs.extend(validate_family_ip(&p, a, false)),
                "FQDN" => errs.extend(validate_fqdn(&p, a)),
                _ => {}
            }
        }
        if let Some(n) = ep.get("nodeName").and_then(Value::as_str) {
            for msg in is_dns1123_subdomain(n) {
                errs.push(FieldError::invalid(&idx.child("nodeName"), n, &msg));
            }
        }
        let topo_path = idx.child("deprecatedTopology");
        let topology = ep.get("deprecatedTopology");
        let n = topology.and_then(Value::as_object).map_or(0, |m| m.len());
        if n > MAX_TOPOLOGY_LABELS {
            errs.push(FieldError::too_many(&topo_path, n as i64, MAX_TOPOLOGY_LABELS as i64));
        }
        errs.extend(validate_labels(topology, &topo_path));
        if topology.and_then(|t| t.get(ZONE_LABEL)).is_some() {
            errs.push(FieldError::internal(&topo_path.key(ZONE_LABEL), "reserved key was not removed in conversion"));
        }
        if let Some(h) = ep.get("hostname").and_then(Value::as_str) {
            errs.extend(validate_dns1123_label(h, &idx.child("hostname")));
        }
        if let Some(hints) = ep.get("hints").filter(|h| h.is_object()) {
            errs.extend(validate_zone_hints(hints, &idx.child("hints")));
        }
    }
    errs
}

/// `validateHints`: at most 8 zones, unique label-value names.
fn validate_zone_hints(hints: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let fz = path.child("forZones");
    let zones = items(hints, "forZones");
    if zones.len() > MAX_ZONE_HINTS {
        errs.push(FieldError::too_many(&fz, zones.len() as i64, MAX_ZONE_HINTS as i64));
        return errs;
    }
    let mut seen = std::collections::HashSet::new();
    for (i, z) in zones.iter().enumerate() {
        let p = fz.index(i).child("name");
        let name = z.get("name").and_then(Value::as_str).unwrap_or("");
        if !seen.insert(name.to_string()) {
            errs.push(FieldError::duplicate(&p, name));
        }
        for msg in is_valid_label_value(name) {
            errs.push(FieldError::invalid(&p, name, &msg));
        }
    }
    errs
}

fn validate_ports(slice: &Value) -> ErrorList {
    let path = Path::new("ports");
    let mut errs = ErrorList::new();
    let ports = items(slice, "ports");
    if ports.len() > MAX_PORTS {
        errs.push(FieldError::too_many(&path, ports.len() as i64, MAX_PORTS as i64));
        return errs;
    }
    let mut names = std::collections::HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let idx = path.index(i);
        let name = port.get("name").and_then(Value::as_str).unwrap_or("");
        if !name.is_empty() {
            errs.extend(validate_dns1123_label(name, &idx.child("name")));
        }
        if !names.insert(name.to_string()) {
            errs.push(FieldError::duplicate(&idx.child("name"), name));
        }
        match port.get("protocol").and_then(Value::as_str) {
            None => errs.push(FieldError::required(&idx.child("protocol"), "")),
            Some(p) if !SUPPORTED_PORT_PROTOCOLS.contains(&p) => {
                errs.push(FieldError::not_supported(&idx.child("protocol"), p, &SUPPORTED_PORT_PROTOCOLS))
            }
            Some(_) => {}
        }
        if let Some(ap) = port.get("appProtocol").and_then(Value::as_str) {
            errs.extend(validate_qualified_name(ap, &idx.child("appProtocol")));
        }
    }
    errs
}

/// `ValidateEndpointSlice` (without the metadata, which the store checks).
pub fn validate_endpoint_slice(slice: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let address_type = slice.get("addressType").and_then(Value::as_str).unwrap_or("");
    let path = Path::new("addressType");
    if address_type.is_empty() {
        errs.push(FieldError::required(&path, ""));
    } else if !ADDRESS_TYPES.contains(&address_type) {
        errs.push(FieldError::not_supported(&path, address_type, &ADDRESS_TYPES));
    }
    errs.extend(validate_endpoints(slice, address_type));
    errs.extend(validate_ports(slice));
    errs
}

impl Strategy for EndpointSlice {
    fn default(&self, obj: &mut Value) {
        let Some(ports) = obj.get_mut("ports").and_then(Value::as_array_mut) else { return };
        for p in ports.iter_mut().filter(|p| p.is_object()) {
            if p.get("name").is_none_or(Value::is_null) {
                p["name"] = json!("");
            }
            if p.get("protocol").is_none_or(Value::is_null) {
                p["protocol"] = json!("TCP");
            }
        }
    }
    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        validate_endpoint_slice(obj).to_causes()
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        let mut errs = validate_endpoint_slice(new);
        errs.extend(validate_immutable_field(
            new.get("addressType"),
            old.get("addressType"),
            &Path::new("addressType"),
        ));
        errs.to_causes()
    }
    fn has_status_subresource(&self) -> bool {
        false
    }
    /// Upstream's EndpointSlice strategy sets `generation: 1` on create and
    /// bumps it when anything but metadata changes (it also bumps it for
    /// label changes, which the generic store does not do).
    fn tracks_generation(&self) -> bool {
        true
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

    fn create(obj: Value) -> Vec<String> {
        let mut obj = obj;
        EndpointSlice::new().default(&mut obj);
        cause_texts(EndpointSlice::new().validate_create(&obj))
    }

    #[test]
    fn address_type_is_required_supported_and_immutable() {
        assert_eq!(create(json!({})), vec!["addressType: Required value"]);
        assert_eq!(
            create(json!({"addressType": "IP"})),
            vec![r#"addressType: Unsupported value: "IP": supported values: "FQDN", "IPv4", "IPv6""#]
        );
        let old = json!({"addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}]});
        assert!(EndpointSlice::new().validate_update(&old, &old).is_empty());
        let new = json!({"addressType": "FQDN"});
        assert_eq!(
            cause_texts(EndpointSlice::new().validate_update(&new, &old)),
            vec![r#"addressType: Invalid value: "FQDN": field is immutable"#]
        );
    }

    #[test]
    fn addresses_are_checked_for_their_type() {
        let slice = json!({"addressType": "IPv4", "endpoints": [
            {"addresses": []},
            {"addresses": ["127.0.0.1", "2001:db8::1", "300.1.1.1", "10.0.0.1"], "hostname": "A",
             "nodeName": "n_1", "deprecatedTopology": {"a/b/c": "x", "topology.kubernetes.io/zone": "z"},
             "hints": {"forZones": [{"name": "z"}, {"name": "z"}]}}]});
        assert_eq!(
            create(slice),
            vec![
                "endpoints[0].addresses: Required value: must contain at least 1 address",
                "endpoints[1].addresses[0]: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
                "endpoints[1].addresses[1]: Invalid value: \"2001:db8::1\": must be an IPv4 address",
                "endpoints[1].addresses[2]: Invalid value: \"300.1.1.1\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                "endpoints[1].nodeName: Invalid value: \"n_1\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "endpoints[1].deprecatedTopology: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                "endpoints[1].deprecatedTopology[topology.kubernetes.io/zone]: Internal error: reserved key was not removed in conversion",
                "endpoints[1].hostname: Invalid value: \"A\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "endpoints[1].hints.forZones[1].name: Duplicate value: \"z\"",
            ]
        );
        let v6 = json!({"addressType": "IPv6", "endpoints": [{"addresses": ["10.0.0.1", "fe80::1", "2001:db8::1"]}]});
        assert_eq!(
            create(v6),
            vec![
                "endpoints[0].addresses[0]: Invalid value: \"10.0.0.1\": must be an IPv6 address",
                "endpoints[0].addresses[1]: Invalid value: \"fe80::1\": may not be in the link-local range (169.254.0.0/16, fe80::/10)",
            ]
        );
        let fqdn = json!({"addressType": "FQDN", "endpoints": [{"addresses": ["example.com.", "local", "Foo.com"]}]});
        assert_eq!(
            create(fqdn)[..1],
            ["endpoints[0].addresses[1]: Invalid value: \"local\": should be a domain with at least two segments separated by dots"]
        );
        let many: Vec<Value> = (0..1001).map(|_| json!({"addresses": ["10.0.0.1"]})).collect();
        assert_eq!(
            create(json!({"addressType": "IPv4", "endpoints": many})),
            vec!["endpoints: Too many: 1001: must have at most 1000 items"]
        );
    }

    #[test]
    fn ports_are_defaulted_and_checked() {
        let slice = json!({"addressType": "IPv4", "ports": [{"port": 80}, {"port": 81},
            {"name": "Web", "protocol": "HTTP", "appProtocol": "a/b/c"}]});
        assert_eq!(
            create(slice),
            vec![
                "ports[1].name: Duplicate value: \"\"",
                "ports[2].name: Invalid value: \"Web\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "ports[2].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                "ports[2].appProtocol: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
            ]
        );
        let good = json!({"addressType": "IPv4", "endpoints": [{"addresses": ["10.1.2.3"], "nodeName": "n1",
            "conditions": {"ready": true}}], "ports": [{"name": "http", "port": 80, "appProtocol": "kubernetes.io/h2c"}]});
        assert!(create(good).is_empty());
    }
}
