//! NodePorts (upstream `plugins/nodeports`): a pod asking for host ports
//! fits only where none of them is in use (`0.0.0.0` conflicts with every
//! address).

use std::sync::Arc;

use crate::framework::{
    action, ClusterEvent, CycleState, EventResource, ExtensionPoint, Handle, NodeInfo, Plugin, PodInfo,
    PreFilterResult, Snapshot, Status,
};

use super::names;

/// Upstream `ErrReason`.
pub const ERR_REASON: &str = "node(s) didn't have free ports for the requested pod ports";

const PRE_FILTER_KEY: &str = "PreFilterNodePorts";

/// `(hostIP, protocol, hostPort)` the pod wants.
struct PreFilterState(Vec<(Option<String>, Option<String>, i32)>);

/// The plugin.
pub struct NodePorts;

/// Builds the plugin; it takes no args.
pub fn new(_args: Option<&serde_json::Value>, _handle: &Handle) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(NodePorts))
}

/// The host ports of a pod's containers and init containers (upstream `GetHostPorts`).
fn host_ports(pod: &PodInfo) -> Vec<(Option<String>, Option<String>, i32)> {
    let spec = pod.pod.spec.as_ref();
    spec.into_iter()
        .flat_map(|s| s.containers.iter().chain(s.init_containers.iter().flatten()))
        .flat_map(|c| c.ports.iter().flatten())
        .filter(|p| p.host_port.unwrap_or(0) > 0)
        .map(|p| (p.host_ip.clone(), p.protocol.clone(), p.host_port.unwrap_or(0)))
        .collect()
}

impl Plugin for NodePorts {
    fn name(&self) -> &'static str {
        names::NODE_PORTS
    }
    fn extension_points(&self) -> &'static [ExtensionPoint] {
        &[ExtensionPoint::PreFilter, ExtensionPoint::Filter]
    }
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![
            ClusterEvent { resource: EventResource::Pod, actions: action::DELETE },
            ClusterEvent { resource: EventResource::Node, actions: action::ADD | action::UPDATE },
        ]
    }
    fn pre_filter(&self, state: &mut CycleState, pod: &PodInfo, _s: &Snapshot) -> (Option<PreFilterResult>, Status) {
        let ports = host_ports(pod);
        if ports.is_empty() {
            return (None, Status::skip());
        }
        state.write(PRE_FILTER_KEY, PreFilterState(ports));
        (None, Status::success())
    }
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let computed;
        let ports = match state.read::<PreFilterState>(PRE_FILTER_KEY) {
            Some(s) => &s.0,
            None => {
                computed = host_ports(pod);
                &computed
            }
        };
        for (ip, proto, port) in ports {
            if node.used_ports.conflicts(ip.as_deref(), proto.as_deref(), *port) {
                return Status::unschedulable([ERR_REASON]);
            }
        }
        Status::success()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::plugins::testing::{node_info, pod_info};
    use serde_json::json;

    fn ports(name: &str, ports: serde_json::Value) -> PodInfo {
        pod_info(name, json!({"containers": [{"name": "c", "image": "i", "ports": ports}]}))
    }

    #[test]
    fn host_port_conflicts_as_upstream() {
        let p = |ip: &str, proto: &str, port: i32| json!({"containerPort": port, "hostIP": ip, "protocol": proto, "hostPort": port});
        let cases = [
            (json!([]), json!([]), Code::Success),
            (json!([p("127.0.0.1", "UDP", 8080)]), json!([p("127.0.0.1", "UDP", 9090)]), Code::Success),
            (json!([p("127.0.0.1", "UDP", 8080)]), json!([p("127.0.0.1", "UDP", 8080)]), Code::Unschedulable),
            (json!([p("127.0.0.1", "TCP", 8080)]), json!([p("127.0.0.1", "UDP", 8080)]), Code::Success),
            (json!([p("127.0.0.2", "TCP", 8080)]), json!([p("127.0.0.1", "TCP", 8080)]), Code::Success),
            (json!([p("0.0.0.0", "TCP", 8001)]), json!([p("127.0.0.1", "TCP", 8001)]), Code::Unschedulable),
            (json!([p("127.0.0.1", "TCP", 8001)]), json!([p("0.0.0.0", "TCP", 8001)]), Code::Unschedulable),
        ];
        for (want_ports, existing, code) in cases {
            let mut node = node_info("n", json!({}), json!({}));
            node.add_pod(Arc::new(ports("existing", existing.clone())));
            let pod = ports("p", want_ports.clone());
            let mut state = CycleState::default();
            let (_, pre) = NodePorts.pre_filter(&mut state, &pod, &Snapshot::default());
            if pre.is_skip() {
                assert_eq!(code, Code::Success);
                continue;
            }
            let s = NodePorts.filter(&state, &pod, &node);
            assert_eq!(s.code, code, "{want_ports} vs {existing}");
            if code != Code::Success {
                assert_eq!(s.message(), ERR_REASON);
            }
        }
    }
}
