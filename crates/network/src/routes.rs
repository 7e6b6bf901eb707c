//! The pure half of host-gw routing: which routes this node wants from the
//! Node objects it sees, and how they differ from the routes it has.
//!
//! Upstream reference: flannel's host-gw backend (as k3s runs it) routes every
//! other node's lease subnet via that node's public IP; here the subnet is
//! the Node's `spec.podCIDRs` (from the node IPAM controller) and the IP is
//! its `InternalIP` address.

use std::collections::BTreeMap;
use std::net::IpAddr;

use k8s_openapi::api::core::v1::Node;

use crate::cidr::Cidr;

/// Routes keyed by destination: pod CIDR → next hop (the owning node's
/// InternalIP).
pub type Routes = BTreeMap<Cidr, IpAddr>;

/// What [`desired_routes`] computed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DesiredRoutes {
    /// The routes to program: one per pod CIDR of every other node.
    pub routes: Routes,
    /// Nodes (or CIDRs) left out, each with the reason, for a warning. A node
    /// without any pod CIDR yet is not listed here: that is the normal state
    /// before the node IPAM controller assigns one.
    pub skipped: Vec<String>,
}

/// The pod CIDRs of `node` as upstream reads them: `spec.podCIDRs`, or
/// `[spec.podCIDR]` for objects written by an older client. Unparseable
/// entries are returned as Err strings.
pub fn pod_cidrs(node: &Node) -> Vec<Result<Cidr, String>> {
    let Some(spec) = &node.spec else { return Vec::new() };
    let list: Vec<&String> = match &spec.pod_cidrs {
        Some(v) if !v.is_empty() => v.iter().collect(),
        _ => spec.pod_cidr.iter().collect(),
    };
    list.into_iter().filter(|s| !s.is_empty()).map(|s| s.parse()).collect()
}

/// The node's `InternalIP` addresses from `status.addresses`, in order.
pub fn internal_ips(node: &Node) -> Vec<IpAddr> {
    node.status
        .as_ref()
        .and_then(|s| s.addresses.as_ref())
        .map(|addrs| {
            addrs
                .iter()
                .filter(|a| a.type_ == "InternalIP")
                .filter_map(|a| a.address.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The routes this node (`own_name`) wants: for every OTHER node, each pod
/// CIDR inside `cluster` routed via that node's first InternalIP of the same
/// family. Left out (reason in `skipped`): CIDRs outside `cluster` (rkube
/// never routes outside its cluster CIDR), CIDRs not strictly longer than
/// `cluster` (a route for the whole cluster CIDR would replace the
/// blackhole), CIDRs overlapping this node's own
/// pod CIDRs or an already chosen route (nodes are visited in name order, the
/// first claim wins), nodes without an InternalIP of the CIDR's family, and
/// unparseable CIDRs. Deterministic for a given set of nodes.
pub fn desired_routes(nodes: &[Node], own_name: &str, cluster: &Cidr) -> DesiredRoutes {
    let mut out = DesiredRoutes::default();
    let name_of = |n: &Node| n.metadata.name.clone().unwrap_or_default();
    let own: Vec<Cidr> = nodes
        .iter()
        .filter(|n| name_of(n) == own_name)
        .flat_map(pod_cidrs)
        .filter_map(Result::ok)
        .collect();
    let mut others: Vec<&Node> = nodes.iter().filter(|n| name_of(n) != own_name).collect();
    others.sort_by_key(|n| name_of(n));
    for node in others {
        let name = name_of(node);
        let ips = internal_ips(node);
        for cidr in pod_cidrs(node) {
            let cidr = match cidr {
                Ok(c) => c,
                Err(e) => {
                    out.skipped.push(format!("node {name}: {e}"));
                    continue;
                }
            };
            if !cluster.contains(&cidr) {
                out.skipped.push(format!(
                    "node {name}: pod CIDR {cidr} is outside the cluster CIDR {cluster}"
                ));
                continue;
            }
            if cidr.prefix() <= cluster.prefix() {
                out.skipped.push(format!(
                    "node {name}: pod CIDR {cidr} is the whole cluster CIDR {cluster}, not a per-node subnet of it"
                ));
                continue;
            }
            if own.iter().any(|o| o.overlaps(&cidr)) {
                out.skipped.push(format!(
                    "node {name}: pod CIDR {cidr} overlaps this node's own pod CIDR"
                ));
                continue;
            }
            if out.routes.keys().any(|c| c.overlaps(&cidr)) {
                out.skipped.push(format!(
                    "node {name}: pod CIDR {cidr} overlaps another node's pod CIDR"
                ));
                continue;
            }
            let Some(via) = ips.iter().find(|ip| ip.is_ipv4() == cidr.addr().is_ipv4()) else {
                out.skipped.push(format!(
                    "node {name}: no InternalIP of the family of pod CIDR {cidr}"
                ));
                continue;
            };
            out.routes.insert(cidr, *via);
        }
    }
    out
}

/// This node's (`own_name`) pod CIDRs that are not a subnet strictly inside
/// `cluster` (same family only; an IPv6 CIDR is not judged against an IPv4
/// cluster CIDR), in `spec.podCIDRs` order. Non-empty means the agent's
/// `--cluster-cidr` differs from the one the servers' node IPAM allocates
/// from. Unparseable entries are ignored (reported by [`desired_routes`]
/// on other nodes).
pub fn own_pod_cidrs_outside(nodes: &[Node], own_name: &str, cluster: &Cidr) -> Vec<Cidr> {
    nodes
        .iter()
        .filter(|n| n.metadata.name.as_deref() == Some(own_name))
        .flat_map(pod_cidrs)
        .filter_map(Result::ok)
        .filter(|c| c.addr().is_ipv4() == cluster.addr().is_ipv4())
        .filter(|c| !cluster.contains(c) || c.prefix() <= cluster.prefix())
        .collect()
}

/// The changes that turn `current` into `desired`.
#[derive(Debug, Default, PartialEq)]
pub struct RouteDiff {
    /// Routes to delete: destinations no longer wanted, with the next hop
    /// they have now.
    pub remove: Routes,
    /// Routes to add or replace (`ip route replace`): new destinations and
    /// destinations whose next hop changed.
    pub replace: Routes,
}

impl RouteDiff {
    /// Whether nothing needs to change.
    pub fn is_empty(&self) -> bool {
        self.remove.is_empty() && self.replace.is_empty()
    }
}

/// Computes the [`RouteDiff`] from `current` to `desired`.
pub fn diff(current: &Routes, desired: &Routes) -> RouteDiff {
    RouteDiff {
        remove: current
            .iter()
            .filter(|(cidr, _)| !desired.contains_key(cidr))
            .map(|(c, v)| (*c, *v))
            .collect(),
        replace: desired
            .iter()
            .filter(|(cidr, via)| current.get(cidr) != Some(via))
            .map(|(c, v)| (*c, *v))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{NodeAddress, NodeSpec, NodeStatus};
    use kube::api::ObjectMeta;

    fn node(name: &str, cidrs: &[&str], addrs: &[(&str, &str)]) -> Node {
        Node {
            metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
            spec: Some(NodeSpec {
                pod_cidr: cidrs.first().map(|s| s.to_string()),
                pod_cidrs: Some(cidrs.iter().map(|s| s.to_string()).collect()),
                ..Default::default()
            }),
            status: Some(NodeStatus {
                addresses: Some(
                    addrs
                        .iter()
                        .map(|(t, a)| NodeAddress { type_: t.to_string(), address: a.to_string() })
                        .collect(),
                ),
                ..Default::default()
            }),
        }
    }

    fn c(s: &str) -> Cidr {
        s.parse().unwrap()
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn cluster() -> Cidr {
        c("10.42.0.0/16")
    }

    #[test]
    fn routes_every_other_nodes_pod_cidr_via_its_internal_ip() {
        let nodes = vec![
            node("a", &["10.42.0.0/24"], &[("InternalIP", "192.168.1.10")]),
            node("b", &["10.42.1.0/24"], &[("Hostname", "b"), ("InternalIP", "192.168.1.11")]),
            node("c", &["10.42.2.0/24"], &[("ExternalIP", "203.0.113.5"), ("InternalIP", "192.168.1.12")]),
        ];
        let d = desired_routes(&nodes, "a", &cluster());
        assert_eq!(
            d.routes,
            Routes::from([(c("10.42.1.0/24"), ip("192.168.1.11")), (c("10.42.2.0/24"), ip("192.168.1.12"))])
        );
        assert_eq!(d.skipped, Vec::<String>::new());
    }

    #[test]
    fn own_node_is_never_routed() {
        let nodes = vec![node("a", &["10.42.0.0/24"], &[("InternalIP", "192.168.1.10")])];
        assert_eq!(desired_routes(&nodes, "a", &cluster()), DesiredRoutes::default());
    }

    #[test]
    fn node_without_pod_cidr_yet_is_silently_waited_for() {
        let mut b = node("b", &[], &[("InternalIP", "192.168.1.11")]);
        b.spec.as_mut().unwrap().pod_cidrs = None;
        let d = desired_routes(&[b], "a", &cluster());
        assert!(d.routes.is_empty());
        assert!(d.skipped.is_empty());
    }

    #[test]
    fn legacy_pod_cidr_field_is_read_when_pod_cidrs_is_empty() {
        let mut b = node("b", &[], &[("InternalIP", "192.168.1.11")]);
        b.spec.as_mut().unwrap().pod_cidr = Some("10.42.7.0/24".into());
        let d = desired_routes(&[b], "a", &cluster());
        assert_eq!(d.routes, Routes::from([(c("10.42.7.0/24"), ip("192.168.1.11"))]));
    }

    #[test]
    fn node_without_internal_ip_is_skipped_with_reason() {
        let nodes = vec![node("b", &["10.42.1.0/24"], &[("ExternalIP", "203.0.113.5")])];
        let d = desired_routes(&nodes, "a", &cluster());
        assert!(d.routes.is_empty());
        assert_eq!(d.skipped, vec!["node b: no InternalIP of the family of pod CIDR 10.42.1.0/24".to_string()]);
    }

    #[test]
    fn dual_stack_node_routes_each_family_via_the_matching_address() {
        let cluster6 = c("fd42::/48");
        let nodes = vec![node(
            "b",
            &["10.42.1.0/24", "fd42:0:0:1::/64"],
            &[("InternalIP", "192.168.1.11"), ("InternalIP", "fd00::11")],
        )];
        assert_eq!(
            desired_routes(&nodes, "a", &cluster()).routes,
            Routes::from([(c("10.42.1.0/24"), ip("192.168.1.11"))])
        );
        assert_eq!(
            desired_routes(&nodes, "a", &cluster6).routes,
            Routes::from([(c("fd42:0:0:1::/64"), ip("fd00::11"))])
        );
    }

    #[test]
    fn pod_cidr_outside_the_cluster_cidr_is_never_routed() {
        let nodes = vec![node("b", &["10.99.1.0/24"], &[("InternalIP", "192.168.1.11")])];
        let d = desired_routes(&nodes, "a", &cluster());
        assert!(d.routes.is_empty());
        assert_eq!(d.skipped.len(), 1);
        assert!(d.skipped[0].contains("outside the cluster CIDR 10.42.0.0/16"), "{:?}", d.skipped);
    }

    #[test]
    fn pod_cidr_equal_to_or_containing_the_cluster_cidr_never_replaces_the_blackhole() {
        let nodes = vec![
            node("b", &["10.42.0.0/16"], &[("InternalIP", "192.168.1.11")]),
            node("c", &["10.0.0.0/8"], &[("InternalIP", "192.168.1.12")]),
        ];
        let d = desired_routes(&nodes, "a", &cluster());
        assert!(d.routes.is_empty(), "{:?}", d.routes);
        assert_eq!(d.skipped.len(), 2, "{:?}", d.skipped);
        assert!(d.skipped[0].contains("is the whole cluster CIDR 10.42.0.0/16"), "{:?}", d.skipped);
        assert!(d.skipped[1].contains("outside the cluster CIDR"), "{:?}", d.skipped);
    }

    #[test]
    fn own_pod_cidr_outside_the_cluster_cidr_is_reported() {
        let nodes = vec![
            node("a", &["10.50.3.0/24", "fd42::/64"], &[("InternalIP", "192.168.1.10")]),
            node("b", &["10.60.1.0/24"], &[("InternalIP", "192.168.1.11")]),
        ];
        assert_eq!(own_pod_cidrs_outside(&nodes, "a", &cluster()), vec![c("10.50.3.0/24")]);
        let ok = vec![node("a", &["10.42.3.0/24"], &[("InternalIP", "192.168.1.10")])];
        assert!(own_pod_cidrs_outside(&ok, "a", &cluster()).is_empty());
        let whole = vec![node("a", &["10.42.0.0/16"], &[("InternalIP", "192.168.1.10")])];
        assert_eq!(own_pod_cidrs_outside(&whole, "a", &cluster()), vec![c("10.42.0.0/16")]);
        assert!(own_pod_cidrs_outside(&nodes, "z", &cluster()).is_empty(), "no Node object yet: nothing to say");
    }

    #[test]
    fn conflicting_claims_keep_the_first_node_by_name_and_never_shadow_our_own() {
        let nodes = vec![
            node("c", &["10.42.1.0/24"], &[("InternalIP", "192.168.1.12")]),
            node("b", &["10.42.1.0/24"], &[("InternalIP", "192.168.1.11")]),
            node("d", &["10.42.0.0/24"], &[("InternalIP", "192.168.1.13")]),
            node("a", &["10.42.0.0/24"], &[("InternalIP", "192.168.1.10")]),
        ];
        let d = desired_routes(&nodes, "a", &cluster());
        assert_eq!(d.routes, Routes::from([(c("10.42.1.0/24"), ip("192.168.1.11"))]));
        assert_eq!(d.skipped.len(), 2, "{:?}", d.skipped);
    }

    #[test]
    fn diff_adds_new_replaces_moved_and_removes_gone_routes() {
        let current = Routes::from([
            (c("10.42.1.0/24"), ip("192.168.1.11")),
            (c("10.42.2.0/24"), ip("192.168.1.12")),
            (c("10.42.3.0/24"), ip("192.168.1.13")),
        ]);
        let desired = Routes::from([
            (c("10.42.1.0/24"), ip("192.168.1.11")),
            (c("10.42.2.0/24"), ip("192.168.1.22")),
            (c("10.42.4.0/24"), ip("192.168.1.14")),
        ]);
        let d = diff(&current, &desired);
        assert_eq!(d.remove, Routes::from([(c("10.42.3.0/24"), ip("192.168.1.13"))]));
        assert_eq!(
            d.replace,
            Routes::from([(c("10.42.2.0/24"), ip("192.168.1.22")), (c("10.42.4.0/24"), ip("192.168.1.14"))])
        );
        assert!(diff(&desired, &desired).is_empty());
    }
}
