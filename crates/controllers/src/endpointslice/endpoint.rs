//! Pods as endpoints (upstream `staging/src/k8s.io/endpointslice/utils.go`
//! `podToEndpoint` and `util/controller_utils.go`): which pods belong in
//! a Service's endpoints, their conditions, addresses, hostname, node and
//! zone. Shared with the Endpoints controller.

use std::net::IpAddr;

use k8s_openapi::api::core::v1::{Node, ObjectReference, Pod, Service};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions};

/// `discovery.AddressTypeIPv4`.
pub const IPV4: &str = "IPv4";
/// `discovery.AddressTypeIPv6`.
pub const IPV6: &str = "IPv6";
/// `v1.LabelTopologyZone`: the node label an endpoint's zone comes from.
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

/// Whether the pod's Ready condition is `True` (`podutil.IsPodReady`).
pub fn is_pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
        .is_some_and(|c| c.status == "True")
}

/// The pod's phase is Succeeded or Failed.
pub fn is_pod_terminal(pod: &Pod) -> bool {
    matches!(pod.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded" | "Failed"))
}

/// Upstream's `ShouldPodBeInEndpoints`: not terminal, has an IP, and is
/// not being deleted unless `include_terminating`.
pub fn should_pod_be_in_endpoints(pod: &Pod, include_terminating: bool) -> bool {
    if is_pod_terminal(pod) || pod_ips(pod).is_empty() {
        return false;
    }
    include_terminating || pod.metadata.deletion_timestamp.is_none()
}

/// Upstream's `ShouldSetHostname`: the pod has a hostname and its
/// subdomain names the Service (in the same namespace).
pub fn should_set_hostname(pod: &Pod, svc: &Service) -> bool {
    let spec = pod.spec.as_ref();
    !spec.and_then(|s| s.hostname.as_deref()).unwrap_or("").is_empty()
        && spec.and_then(|s| s.subdomain.as_deref()) == svc.metadata.name.as_deref()
        && pod.metadata.namespace == svc.metadata.namespace
}

/// `status.podIPs`, or `status.podIP` alone when the list is empty.
pub fn pod_ips(pod: &Pod) -> Vec<String> {
    let Some(status) = pod.status.as_ref() else { return Vec::new() };
    let ips: Vec<String> = status.pod_ips.iter().flatten().map(|p| p.ip.clone()).filter(|ip| !ip.is_empty()).collect();
    if !ips.is_empty() {
        return ips;
    }
    status.pod_ip.iter().filter(|ip| !ip.is_empty()).cloned().collect()
}

/// Whether `ip` is an IPv6 address (a string that does not parse counts as
/// IPv6 when it has a colon, as Go's sloppy parser would read it).
pub fn is_ipv6(ip: &str) -> bool {
    match ip.parse::<IpAddr>() {
        Ok(a) => a.is_ipv6(),
        Err(_) => ip.contains(':'),
    }
}

/// The address re-stringified in canonical form (upstream parses and
/// prints pod IPs in case they are irregular).
fn canonical_ip(ip: &str) -> String {
    ip.parse::<IpAddr>().map(|a| a.to_string()).unwrap_or_else(|_| ip.to_string())
}

/// The pod's addresses of one address type (`getEndpointAddresses`).
pub fn addresses_of_type(pod: &Pod, address_type: &str) -> Vec<String> {
    pod_ips(pod).iter().filter(|ip| is_ipv6(ip) == (address_type == IPV6)).map(|ip| canonical_ip(ip)).collect()
}

/// A `Pod` reference to the pod (kind, namespace, name, uid).
pub fn pod_reference(pod: &Pod) -> ObjectReference {
    ObjectReference {
        kind: Some("Pod".into()),
        namespace: pod.metadata.namespace.clone(),
        name: pod.metadata.name.clone(),
        uid: pod.metadata.uid.clone(),
        ..Default::default()
    }
}

/// Upstream's `podToEndpoint`: serving = the pod is Ready; terminating =
/// it has a deletion timestamp; ready = serving and not terminating, or
/// always when the Service publishes not-ready addresses. The node name,
/// the node's `topology.kubernetes.io/zone` and (for a pod whose subdomain
/// is the Service) its hostname come along.
pub fn pod_to_endpoint(pod: &Pod, node: Option<&Node>, svc: &Service, address_type: &str) -> Endpoint {
    let serving = is_pod_ready(pod);
    let terminating = pod.metadata.deletion_timestamp.is_some();
    let publish = svc.spec.as_ref().and_then(|s| s.publish_not_ready_addresses).unwrap_or(false);
    let ready = publish || (serving && !terminating);
    let spec = pod.spec.as_ref();
    let node_name = spec.and_then(|s| s.node_name.clone()).filter(|n| !n.is_empty());
    let zone = node
        .and_then(|n| n.metadata.labels.as_ref())
        .and_then(|l| l.get(ZONE_LABEL))
        .filter(|z| !z.is_empty())
        .cloned();
    let hostname = should_set_hostname(pod, svc).then(|| spec.and_then(|s| s.hostname.clone())).flatten();
    Endpoint {
        addresses: addresses_of_type(pod, address_type),
        conditions: Some(EndpointConditions {
            ready: Some(ready),
            serving: Some(serving),
            terminating: Some(terminating),
        }),
        target_ref: Some(pod_reference(pod)),
        node_name,
        zone,
        hostname,
        ..Default::default()
    }
}

/// The address types a Service's slices carry (`getAddressTypesForService`):
/// its `ipFamilies`; without them, the family of its cluster IP, or both
/// for a headless Service.
pub fn address_types(svc: &Service) -> Vec<&'static str> {
    let spec = svc.spec.as_ref();
    let mut out = Vec::new();
    for f in spec.and_then(|s| s.ip_families.as_ref()).into_iter().flatten() {
        let t = match f.as_str() {
            "IPv4" => IPV4,
            "IPv6" => IPV6,
            _ => continue,
        };
        if !out.contains(&t) {
            out.push(t);
        }
    }
    if !out.is_empty() {
        return out;
    }
    match spec.and_then(|s| s.cluster_ip.as_deref()) {
        Some(ip) if !ip.is_empty() && ip != "None" => vec![if is_ipv6(ip) { IPV6 } else { IPV4 }],
        _ => vec![IPV4, IPV6],
    }
}

/// Whether the Service has a cluster IP (`isServiceIPSet`): not headless.
pub fn is_service_ip_set(svc: &Service) -> bool {
    let ip = svc.spec.as_ref().and_then(|s| s.cluster_ip.as_deref()).unwrap_or("");
    !ip.is_empty() && ip != "None"
}

/// The Service's selector, if it has one: a Service without (or with an
/// empty) selector gets no endpoints from the controllers.
pub fn selector(svc: &Service) -> Option<&std::collections::BTreeMap<String, String>> {
    svc.spec.as_ref().and_then(|s| s.selector.as_ref()).filter(|s| !s.is_empty())
}

/// Whether `labels` carry every `key=value` of the selector.
pub fn selector_matches(
    selector: &std::collections::BTreeMap<String, String>,
    labels: Option<&std::collections::BTreeMap<String, String>>,
) -> bool {
    selector.iter().all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(v: serde_json::Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }
    fn svc(v: serde_json::Value) -> Service {
        serde_json::from_value(v).unwrap()
    }

    fn base_pod() -> serde_json::Value {
        json!({"metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
               "spec": {"nodeName": "n1", "hostname": "h", "subdomain": "web", "containers": [{"name": "c"}]},
               "status": {"phase": "Running", "podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}],
                          "conditions": [{"type": "Ready", "status": "True"}]}})
    }

    #[test]
    fn conditions_follow_upstream_pod_to_endpoint() {
        let s = svc(json!({"metadata": {"name": "web", "namespace": "ns"}, "spec": {"clusterIP": "10.96.0.5"}}));
        let node =
            serde_json::from_value::<Node>(json!({"metadata": {"name": "n1", "labels": {ZONE_LABEL: "z1"}}})).unwrap();
        // Ready pod: ready, serving, not terminating; hostname (subdomain = service), zone, node.
        let ep = pod_to_endpoint(&pod(base_pod()), Some(&node), &s, IPV4);
        assert_eq!(ep.addresses, ["10.0.0.1"]);
        let c = ep.conditions.clone().unwrap();
        assert_eq!((c.ready, c.serving, c.terminating), (Some(true), Some(true), Some(false)));
        assert_eq!(ep.hostname.as_deref(), Some("h"));
        assert_eq!(ep.zone.as_deref(), Some("z1"));
        assert_eq!(ep.node_name.as_deref(), Some("n1"));
        let r = ep.target_ref.unwrap();
        assert_eq!((r.kind.as_deref(), r.name.as_deref(), r.uid.as_deref()), (Some("Pod"), Some("p"), Some("u1")));
        assert_eq!(pod_to_endpoint(&pod(base_pod()), None, &s, IPV6).addresses, ["fd00::1"]);

        // Terminating and ready: serving stays true, ready turns false.
        let mut p = base_pod();
        p["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
        let c = pod_to_endpoint(&pod(p.clone()), None, &s, IPV4).conditions.unwrap();
        assert_eq!((c.ready, c.serving, c.terminating), (Some(false), Some(true), Some(true)));
        // publishNotReadyAddresses: always ready.
        let pub_svc = svc(json!({"metadata": {"name": "other", "namespace": "ns"},
                                 "spec": {"clusterIP": "None", "publishNotReadyAddresses": true}}));
        let ep = pod_to_endpoint(&pod(p), None, &pub_svc, IPV4);
        assert_eq!(ep.conditions.unwrap().ready, Some(true));
        assert_eq!(ep.hostname, None, "subdomain names another service");
        // Not ready.
        let mut p = base_pod();
        p["status"]["conditions"] = json!([{"type": "Ready", "status": "False"}]);
        let c = pod_to_endpoint(&pod(p), None, &s, IPV4).conditions.unwrap();
        assert_eq!((c.ready, c.serving, c.terminating), (Some(false), Some(false), Some(false)));
    }

    #[test]
    fn pods_in_endpoints_follow_should_pod_be_in_endpoints() {
        assert!(should_pod_be_in_endpoints(&pod(base_pod()), false));
        let mut p = base_pod();
        p["status"]["phase"] = json!("Succeeded");
        assert!(!should_pod_be_in_endpoints(&pod(p), true));
        let mut p = base_pod();
        p["status"] = json!({"phase": "Pending"});
        assert!(!should_pod_be_in_endpoints(&pod(p), true));
        let mut p = base_pod();
        p["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
        assert!(should_pod_be_in_endpoints(&pod(p.clone()), true));
        assert!(!should_pod_be_in_endpoints(&pod(p), false));
    }

    #[test]
    fn address_types_come_from_ip_families_or_cluster_ip() {
        let t = |spec| address_types(&svc(json!({"metadata": {"name": "s"}, "spec": spec})));
        assert_eq!(t(json!({"ipFamilies": ["IPv6", "IPv4"]})), [IPV6, IPV4]);
        assert_eq!(t(json!({"clusterIP": "10.0.0.1"})), [IPV4]);
        assert_eq!(t(json!({"clusterIP": "fd00::5"})), [IPV6]);
        assert_eq!(t(json!({"clusterIP": "None"})), [IPV4, IPV6]);
    }
}
