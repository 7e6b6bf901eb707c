//! Service ports resolved per pod (upstream `FindPort` and
//! `getEndpointPorts`): a numeric `targetPort` is used as is, a named one
//! is looked up among the pod's container ports (and its sidecar init
//! containers') with the same protocol, so pods with different numbers for
//! a name end up in different slices.

use k8s_openapi::api::core::v1::{Container, Pod, Service, ServicePort};
use k8s_openapi::api::discovery::v1::EndpointPort;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// The protocol of a port, `TCP` when unset (the API server's default).
fn protocol(p: Option<&str>) -> &str {
    p.filter(|p| !p.is_empty()).unwrap_or("TCP")
}

/// Upstream's `FindPort`: the container port number `svc_port`'s
/// targetPort means for `pod`; `None` when a named port is not found.
/// An unset targetPort means the service port itself (the API server
/// defaults it so).
pub fn find_port(pod: &Pod, svc_port: &ServicePort) -> Option<i32> {
    match &svc_port.target_port {
        Some(IntOrString::Int(n)) => Some(*n),
        None => Some(svc_port.port),
        Some(IntOrString::String(name)) => {
            let want = protocol(svc_port.protocol.as_deref());
            let spec = pod.spec.as_ref()?;
            let sidecars =
                spec.init_containers.iter().flatten().filter(|c| c.restart_policy.as_deref() == Some("Always"));
            let find = |c: &Container| {
                c.ports
                    .iter()
                    .flatten()
                    .find(|p| p.name.as_deref() == Some(name.as_str()) && protocol(p.protocol.as_deref()) == want)
                    .map(|p| p.container_port)
            };
            spec.containers.iter().find_map(find).or_else(|| sidecars.into_iter().find_map(find))
        }
    }
}

/// The slice ports of `pod` for `svc` (`getEndpointPorts`): one per
/// service port whose target resolves, with the service port's name (`""`
/// when unnamed), protocol and appProtocol. A headless Service may have
/// no ports.
pub fn endpoint_ports(svc: &Service, pod: &Pod) -> Vec<EndpointPort> {
    let ports = svc.spec.as_ref().and_then(|s| s.ports.as_deref()).unwrap_or(&[]);
    ports
        .iter()
        .filter_map(|sp| {
            let n = find_port(pod, sp)?;
            Some(EndpointPort {
                name: Some(sp.name.clone().unwrap_or_default()),
                port: Some(n),
                protocol: Some(protocol(sp.protocol.as_deref()).to_string()),
                app_protocol: sp.app_protocol.clone(),
            })
        })
        .collect()
}

/// A port set's identity (upstream's `PortMapKey`): order-insensitive, with
/// an unset name read as `""` and an unset protocol as `TCP`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortKey(Vec<(String, i32, String, String)>);

impl PortKey {
    /// The key of `ports`.
    pub fn of(ports: &[EndpointPort]) -> PortKey {
        let mut v: Vec<_> = ports
            .iter()
            .map(|p| {
                (
                    p.name.clone().unwrap_or_default(),
                    p.port.unwrap_or(0),
                    protocol(p.protocol.as_deref()).to_string(),
                    p.app_protocol.clone().unwrap_or_default(),
                )
            })
            .collect();
        v.sort();
        PortKey(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn named_target_ports_resolve_per_pod_and_protocol() {
        let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": {
            "containers": [{"name": "a", "ports": [{"name": "http", "containerPort": 8080},
                                                    {"name": "dns", "containerPort": 53, "protocol": "UDP"}]}],
            "initContainers": [{"name": "side", "restartPolicy": "Always", "ports": [{"name": "metrics", "containerPort": 9090}]},
                               {"name": "init", "ports": [{"name": "other", "containerPort": 1}]}]}}))
        .unwrap();
        let sp = |v| serde_json::from_value::<ServicePort>(v).unwrap();
        assert_eq!(find_port(&pod, &sp(json!({"port": 80, "targetPort": "http"}))), Some(8080));
        assert_eq!(find_port(&pod, &sp(json!({"port": 80, "targetPort": "http", "protocol": "UDP"}))), None);
        assert_eq!(find_port(&pod, &sp(json!({"port": 53, "targetPort": "dns", "protocol": "UDP"}))), Some(53));
        assert_eq!(find_port(&pod, &sp(json!({"port": 80, "targetPort": "metrics"}))), Some(9090));
        assert_eq!(find_port(&pod, &sp(json!({"port": 80, "targetPort": "other"}))), None);
        assert_eq!(find_port(&pod, &sp(json!({"port": 80, "targetPort": 9376}))), Some(9376));

        let svc: Service = serde_json::from_value(json!({"metadata": {"name": "s"}, "spec": {"ports": [
            {"port": 80, "targetPort": "http", "protocol": "TCP"}, {"name": "missing", "port": 81, "targetPort": "nope"}]}}))
        .unwrap();
        let ports = endpoint_ports(&svc, &pod);
        assert_eq!(ports.len(), 1);
        assert_eq!((ports[0].name.as_deref(), ports[0].port), (Some(""), Some(8080)));
    }

    #[test]
    fn port_keys_ignore_order_and_defaults() {
        let p = |name: Option<&str>, port, proto: Option<&str>| EndpointPort {
            name: name.map(Into::into),
            port: Some(port),
            protocol: proto.map(Into::into),
            app_protocol: None,
        };
        let a = PortKey::of(&[p(Some("a"), 1, Some("TCP")), p(Some(""), 2, None)]);
        let b = PortKey::of(&[p(None, 2, Some("TCP")), p(Some("a"), 1, None)]);
        assert_eq!(a, b);
        assert_ne!(a, PortKey::of(&[p(Some("a"), 1, None)]));
    }
}
