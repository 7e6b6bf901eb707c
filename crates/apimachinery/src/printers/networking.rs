//! Printers for networking.k8s.io/v1 (Ingress, IngressClass,
//! NetworkPolicy, ServiceCIDR, IPAddress) and discovery.k8s.io/v1
//! (EndpointSlice), as upstream's `printIngress`, `printEndpointSlice`, ….

use jiff::Timestamp;
use serde_json::Value;

use super::core::load_balancer_ingress;
use super::{age, arr, cell, col, format_label_selector, list_with_more, name, s, Column, AGE, NAME};

/// Ingress columns: Name, Class, Hosts, Address, Ports, Age.
pub const INGRESS_COLUMNS: &[Column] = &[
    NAME,
    col("Class", "string", "The name of the IngressClass resource that should be used for additional configuration"),
    col("Hosts", "string", "Hosts that incoming requests are matched against before the ingress rule"),
    col("Address", "string", "Address is a list containing ingress points for the load-balancer"),
    col("Ports", "string", "Ports of TLS configurations that open"),
    AGE,
];

/// `formatHosts`: up to three rule hosts, `*` when none.
fn format_hosts(rules: &Value) -> String {
    let rules = arr(rules);
    let max = 3;
    let mut list: Vec<&str> = Vec::new();
    let mut more = false;
    for r in rules {
        if list.len() == max {
            more = true;
        }
        if !more && !s(&r["host"]).is_empty() {
            list.push(s(&r["host"]));
        }
    }
    if list.is_empty() {
        return "*".into();
    }
    let ret = list.join(",");
    if more {
        format!("{ret} + {} more...", rules.len() - max)
    } else {
        ret
    }
}

/// `printIngress`: PORTS is `80, 443` with TLS, `80` without.
pub fn ingress_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &obj["spec"];
    let ports = if arr(&spec["tls"]).is_empty() { "80" } else { "80, 443" };
    vec![
        name(obj),
        cell(spec["ingressClassName"].as_str().unwrap_or("<none>")),
        cell(format_hosts(&spec["rules"])),
        cell(load_balancer_ingress(&obj["status"]["loadBalancer"]["ingress"])),
        cell(ports),
        age(obj, now),
    ]
}

/// IngressClass columns: Name, Controller, Parameters, Age.
pub const INGRESS_CLASS_COLUMNS: &[Column] = &[
    NAME,
    col("Controller", "string", "Controller that is responsible for handling this class"),
    col("Parameters", "string", "A reference to a resource with additional parameters"),
    AGE,
];

/// `printIngressClass`: parameters as `Kind[.apiGroup]/name`.
pub fn ingress_class_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    let p = &obj["spec"]["parameters"];
    let parameters = if p.is_object() {
        let mut text = s(&p["kind"]).to_string();
        if let Some(g) = p["apiGroup"].as_str() {
            text = format!("{text}.{g}");
        }
        format!("{text}/{}", s(&p["name"]))
    } else {
        "<none>".into()
    };
    vec![name(obj), cell(s(&obj["spec"]["controller"])), cell(parameters), age(obj, now)]
}

/// NetworkPolicy columns: Name, Pod-Selector, Age.
pub const NETWORK_POLICY_COLUMNS: &[Column] = &[
    NAME,
    col("Pod-Selector", "string", "podSelector selects the pods to which this NetworkPolicy object applies. The array of ingress rules is applied to any pods selected by this field. Multiple network policies can select the same set of pods. In this case, the ingress rules for each are combined additively. This field is NOT optional and follows standard label selector semantics. An empty podSelector matches all pods in this namespace."),
    AGE,
];

/// `printNetworkPolicy`: `FormatLabelSelector(podSelector)`.
pub fn network_policy_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![name(obj), cell(format_label_selector(&obj["spec"]["podSelector"])), age(obj, now)]
}

/// ServiceCIDR columns: Name, CIDRs, Age.
pub const SERVICE_CIDR_COLUMNS: &[Column] = &[
    NAME,
    col("CIDRs", "string", "CIDRs defines the IP blocks in CIDR notation (e.g. \"192.168.0.0/24\" or \"2001:db8::/64\") from which to assign service cluster IPs. Max of two CIDRs is allowed, one of each IP family. This field is immutable."),
    AGE,
];

/// `printServiceCIDR`: comma-joined CIDRs.
pub fn service_cidr_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    let cidrs: Vec<&str> = arr(&obj["spec"]["cidrs"]).iter().map(s).collect();
    vec![name(obj), cell(cidrs.join(",")), age(obj, now)]
}

/// IPAddress columns: Name, ParentRef (upstream defines no Age column
/// although it renders an age cell, which kubectl drops).
pub const IP_ADDRESS_COLUMNS: &[Column] = &[
    NAME,
    col("ParentRef", "string", "ParentRef references the resource that an IPAddress is attached to. An IPAddress must reference a parent object."),
];

/// `printIPAddress`: the parent as `resource[.group][/namespace]/name`.
pub fn ip_address_row(obj: &Value, _now: Timestamp) -> Vec<Value> {
    let p = &obj["spec"]["parentRef"];
    let parent = if p.is_object() {
        let gr = if s(&p["group"]).is_empty() {
            s(&p["resource"]).to_string()
        } else {
            format!("{}.{}", s(&p["resource"]), s(&p["group"]))
        };
        let mut text = gr.to_lowercase();
        if !s(&p["namespace"]).is_empty() {
            text = format!("{text}/{}", s(&p["namespace"]));
        }
        format!("{text}/{}", s(&p["name"]))
    } else {
        "<none>".into()
    };
    vec![name(obj), cell(parent)]
}

/// EndpointSlice columns: Name, AddressType, Ports, Endpoints, Age.
pub const ENDPOINT_SLICE_COLUMNS: &[Column] = &[
    NAME,
    col("AddressType", "string", "addressType specifies the type of address carried by this EndpointSlice. All addresses in this slice must be the same type. This field is immutable after creation. The following address types are currently supported: * IPv4: Represents an IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: Represents a Fully Qualified Domain Name. (Deprecated) The EndpointSlice controller only generates, and kube-proxy only processes, slices of addressType \"IPv4\" and \"IPv6\". No semantics are defined for the \"FQDN\" type."),
    col("Ports", "string", "ports specifies the list of network ports exposed by each endpoint in this slice. Each port must have a unique name. Each slice may include a maximum of 100 ports. Services always have at least 1 port, so EndpointSlices generated by the EndpointSlice controller will likewise always have at least 1 port. EndpointSlices used for other purposes may have an empty ports list."),
    col("Endpoints", "string", "endpoints is a list of unique endpoints in this slice. Each slice may include a maximum of 1000 endpoints."),
    AGE,
];

/// `printEndpointSlice`: up to three ports (`*` for unset) and addresses,
/// `<unset>` when empty.
pub fn endpoint_slice_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    let ports = arr(&obj["ports"]);
    let port_list: Vec<String> = ports
        .iter()
        .take(3)
        .map(|p| match (p["port"].as_i64(), p["name"].as_str()) {
            (Some(n), _) => n.to_string(),
            (None, Some(n)) => n.to_string(),
            _ => "*".to_string(),
        })
        .collect();
    let addrs: Vec<String> =
        arr(&obj["endpoints"]).iter().flat_map(|e| arr(&e["addresses"]).iter().map(|a| s(a).to_string())).collect();
    let addr_list: Vec<String> = addrs.iter().take(3).cloned().collect();
    vec![
        name(obj),
        cell(s(&obj["addressType"])),
        cell(list_with_more(&port_list, ports.len(), 3)),
        cell(list_with_more(&addr_list, addrs.len(), 3)),
        age(obj, now),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::test_util::now;
    use super::*;
    use serde_json::json;

    #[test]
    fn ingresses_and_classes() {
        let ing = json!({"metadata": {"name": "i"}, "spec": {"ingressClassName": "nginx", "tls": [{"hosts": ["a.example"]}],
            "rules": [{"host": "a.example"}, {"host": "b.example"}, {}, {"host": "c.example"}, {"host": "d.example"}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "5.6.7.8"}]}}});
        assert_eq!(
            &ingress_row(&ing, now())[1..5],
            &[json!("nginx"), json!("a.example,b.example,c.example + 2 more..."), json!("5.6.7.8"), json!("80, 443")]
        );
        let bare = json!({"metadata": {"name": "i"}, "spec": {}});
        assert_eq!(&ingress_row(&bare, now())[1..5], &[json!("<none>"), json!("*"), json!(""), json!("80")]);
        let class = json!({"metadata": {"name": "nginx"}, "spec": {"controller": "k8s.io/ingress-nginx",
            "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "p"}}});
        assert_eq!(ingress_class_row(&class, now())[2], json!("IngressParameters.k8s.example.com/p"));
    }

    #[test]
    fn slices_policies_cidrs_and_addresses() {
        let slice = json!({"metadata": {"name": "web-x"}, "addressType": "IPv4",
            "ports": [{"port": 80}, {"name": "https"}, {}, {"port": 9}],
            "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2"]}]});
        assert_eq!(
            &endpoint_slice_row(&slice, now())[1..4],
            &[json!("IPv4"), json!("80,https,* + 1 more..."), json!("10.0.0.1,10.0.0.2")]
        );
        let empty = json!({"metadata": {"name": "e"}, "addressType": "IPv4"});
        assert_eq!(&endpoint_slice_row(&empty, now())[2..4], &[json!("<unset>"), json!("<unset>")]);
        let np = json!({"metadata": {"name": "deny"}, "spec": {"podSelector": {}}});
        assert_eq!(network_policy_row(&np, now())[1], json!("<none>"));
        let cidr = json!({"metadata": {"name": "kubernetes"}, "spec": {"cidrs": ["10.96.0.0/12", "fd00::/108"]}});
        assert_eq!(service_cidr_row(&cidr, now())[1], json!("10.96.0.0/12,fd00::/108"));
        let ip = json!({"metadata": {"name": "10.96.0.1"}, "spec": {"parentRef": {"group": "", "resource": "services", "namespace": "default", "name": "kubernetes"}}});
        assert_eq!(ip_address_row(&ip, now()), vec![json!("10.96.0.1"), json!("services/default/kubernetes")]);
    }
}
