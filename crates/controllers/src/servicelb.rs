//! ServiceLB (k3s's `pkg/cloudprovider/servicelb`, without its
//! DaemonSet of `klipper-lb` pods): every Service of type LoadBalancer
//! without `spec.loadBalancerClass` gets `status.loadBalancer.ingress`
//! = the InternalIP addresses of the Ready, schedulable nodes, sorted;
//! kube-proxy then captures those addresses on every node (as it does
//! for any load-balancer IP). Node changes re-reconcile every Service.
//! A Service that stops being of type LoadBalancer gets its ingress
//! cleared, as upstream's service controller does; Services with a
//! `loadBalancerClass` belong to another implementation and are left alone.
//!
//! Ports are exclusive, as with k3s's svclb pods (each holds its ports as
//! hostPorts, so a later Service's pods cannot schedule): a managed
//! Service one of whose (protocol, port) pairs is held by an older
//! managed Service gets no ingress (kubectl shows `<pending>`) until the
//! port frees; any Service change re-reconciles the waiting ones. See
//! [`blocked`].
//!
//! Runs under upstream's name `service-lb-controller` as the
//! `service-controller` ServiceAccount, whose bootstrap role
//! `system:controller:service-controller` grants exactly what it needs
//! (services read, services/status patch, nodes list/watch, events).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{LoadBalancerIngress, Node, Service};
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;

use crate::runtime::{self, is_not_found, Ctx, Error, Stop};

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "service-lb-controller";
/// The older name `--controllers` also accepts.
pub const ALIAS: &str = "service";
/// The kube-system ServiceAccount it runs as (upstream's).
pub const SERVICE_ACCOUNT: &str = "service-controller";

/// Runs until `stop`.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    let controller = Controller::new(Api::<Service>::all(ctx.reader.clone()), watcher::Config::default());
    let store = controller.store();
    let waiting = controller.store();
    let controller = controller
        // A Service that frees a port (deleted, port changed, no longer a
        // load balancer) lets a waiting one have it, and one that takes a
        // port may displace a younger holder: re-reconcile the managed
        // Services without ingress and those sharing a port with it.
        .watches(Api::<Service>::all(ctx.reader.clone()), watcher::Config::default(), move |changed: Service| {
            let ports = if manages(&changed) { lb_ports(&changed) } else { Vec::new() };
            let changed = ObjectRef::from_obj(&changed);
            waiting
                .state()
                .iter()
                .filter(|s| manages(s) && (!has_ingress(s) || lb_ports(s).iter().any(|p| ports.contains(p))))
                .map(|s| ObjectRef::from_obj(s.as_ref()))
                .filter(|r| *r != changed)
                .collect::<Vec<_>>()
        })
        // Any node change may change every load balancer's addresses.
        .watches(Api::<Node>::all(ctx.reader.clone()), watcher::Config::default(), move |_node: Node| {
            store
                .state()
                .iter()
                .filter(|s| manages(s) || has_ingress(s))
                .map(|s| ObjectRef::from_obj(s.as_ref()))
                .collect::<Vec<_>>()
        })
        .graceful_shutdown_on(runtime::stopped(stop));
    runtime::drive(NAME, controller.run(reconcile, runtime::error_policy, ctx)).await;
}

/// Whether ServiceLB provides `svc`'s load balancer: type LoadBalancer
/// and no `loadBalancerClass`.
pub fn manages(svc: &Service) -> bool {
    svc.spec.as_ref().is_some_and(|s| s.type_.as_deref() == Some("LoadBalancer") && s.load_balancer_class.is_none())
}

fn has_ingress(svc: &Service) -> bool {
    !current_ingress(svc).is_empty()
}

fn current_ingress(svc: &Service) -> Vec<LoadBalancerIngress> {
    svc.status.as_ref().and_then(|s| s.load_balancer.as_ref()).and_then(|l| l.ingress.clone()).unwrap_or_default()
}

/// Whether `node` takes load-balancer traffic: condition Ready True and
/// not `spec.unschedulable`.
pub fn eligible(node: &Node) -> bool {
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    let unschedulable = node.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false);
    ready && !unschedulable && node.metadata.deletion_timestamp.is_none()
}

/// The ingress a managed Service should have: one entry (`ip`, `ipMode:
/// VIP`) per InternalIP of every eligible node, sorted by address and
/// de-duplicated.
pub fn desired_ingress(nodes: &[Node]) -> Vec<LoadBalancerIngress> {
    let mut ips: Vec<IpAddr> = nodes
        .iter()
        .filter(|n| eligible(n))
        .flat_map(|n| n.status.as_ref().and_then(|s| s.addresses.clone()).unwrap_or_default())
        .filter(|a| a.type_ == "InternalIP")
        .filter_map(|a| a.address.parse().ok())
        .collect();
    ips.sort();
    ips.dedup();
    ips.into_iter()
        .map(|ip| LoadBalancerIngress { ip: Some(ip.to_string()), ip_mode: Some("VIP".into()), ..Default::default() })
        .collect()
}

/// A Service's load-balancer ports: (protocol, port), protocol `TCP`
/// when unset.
fn lb_ports(svc: &Service) -> Vec<(String, i32)> {
    svc.spec
        .iter()
        .flat_map(|s| s.ports.iter().flatten())
        .map(|p| (p.protocol.clone().unwrap_or_else(|| "TCP".into()), p.port))
        .collect()
}

/// Why managed Service `svc` gets no ingress, if it does not: the first
/// of its (protocol, port) pairs that is `reserved` (ports the node
/// itself serves), or that an older managed Service among `services`
/// holds: `(protocol, port, holder "namespace/name" or None for
/// reserved)`. Services claim ports oldest first (`creationTimestamp`,
/// then namespace/name); a Service that is itself blocked holds none of
/// its ports (as a svclb pod that cannot schedule holds no hostPort);
/// Services being deleted hold none. `svc` is matched in `services` by
/// namespace/name and need not be in it.
pub fn blocked(
    svc: &Service,
    services: &[Service],
    reserved: &[(String, i32)],
) -> Option<(String, i32, Option<String>)> {
    let me = runtime::key_of(svc);
    let order = |s: &Service| (s.metadata.creation_timestamp.clone().map(|t| t.0), runtime::key_of(s));
    let mut claimants: Vec<&Service> = services
        .iter()
        .filter(|s| manages(s) && s.metadata.deletion_timestamp.is_none() && runtime::key_of(*s) != me)
        .chain(std::iter::once(svc))
        .collect();
    // Unset timestamps sort last (None after Some).
    claimants.sort_by(|a, b| {
        let (ta, ka) = order(a);
        let (tb, kb) = order(b);
        (ta.is_none(), ta, ka).cmp(&(tb.is_none(), tb, kb))
    });
    let mut held: BTreeMap<(String, i32), String> = BTreeMap::new();
    for s in claimants {
        let key = runtime::key_of(s);
        let ports = lb_ports(s);
        let conflict = ports.iter().find_map(|p| {
            if reserved.contains(p) {
                Some((p.0.clone(), p.1, None))
            } else {
                held.get(p).map(|h| (p.0.clone(), p.1, Some(h.clone())))
            }
        });
        if key == me {
            return conflict;
        }
        if conflict.is_none() {
            for p in ports {
                held.insert(p, key.clone());
            }
        }
    }
    None
}

fn ingress_ips(ing: &[LoadBalancerIngress]) -> Vec<Option<String>> {
    ing.iter().map(|i| i.ip.clone()).collect()
}

async fn reconcile(svc: Arc<Service>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let key = runtime::key_of(svc.as_ref());
    let is_lb_type = svc.spec.as_ref().is_some_and(|s| s.type_.as_deref() == Some("LoadBalancer"));
    let want = if manages(&svc) {
        // Fresh from the API (its watch cache): the node trigger may run
        // before any local cache saw the change.
        let services = Api::<Service>::all(ctx.reader.clone()).list(&ListParams::default().match_any()).await?;
        // Ports rkube itself serves on the node addresses would need the
        // manager's configuration; none are reserved yet.
        match blocked(&svc, &services.items, &[]) {
            Some((proto, port, holder)) => {
                tracing::info!(component = NAME, service = %key, protocol = %proto, port, held_by = holder.as_deref().unwrap_or("the node"), "load balancer stays pending: its port is already in use by an older LoadBalancer Service (change one of the ports, or delete the other Service)");
                Vec::new()
            }
            None => {
                let nodes = Api::<Node>::all(ctx.reader.clone()).list(&ListParams::default().match_any()).await?;
                desired_ingress(&nodes.items)
            }
        }
    } else if !is_lb_type {
        Vec::new() // no longer a load balancer: clear what we set
    } else {
        return ctx.done(&key, Action::await_change()); // another class's
    };
    let have = current_ingress(&svc);
    if ingress_ips(&have) == ingress_ips(&want) {
        return ctx.done(&key, Action::await_change());
    }
    let ns = svc.metadata.namespace.clone().unwrap_or_default();
    let name = svc.metadata.name.clone().unwrap_or_default();
    let patch = serde_json::json!({ "status": { "loadBalancer": { "ingress": want } } });
    match Api::<Service>::namespaced(ctx.client.clone(), &ns)
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => {
            tracing::debug!(component = NAME, service = %key, ingress = ?ingress_ips(&want), "updated load balancer ingress");
            ctx.done(&key, Action::await_change())
        }
        Err(e) if is_not_found(&e) => ctx.done(&key, Action::await_change()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{NodeAddress, NodeCondition, NodeSpec, NodeStatus, ServiceSpec};
    use kube::api::ObjectMeta;

    fn node(name: &str, ready: &str, unschedulable: bool, addrs: &[(&str, &str)]) -> Node {
        Node {
            metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
            spec: Some(NodeSpec { unschedulable: Some(unschedulable), ..Default::default() }),
            status: Some(NodeStatus {
                conditions: Some(vec![NodeCondition {
                    type_: "Ready".into(),
                    status: ready.into(),
                    ..Default::default()
                }]),
                addresses: Some(
                    addrs.iter().map(|(t, a)| NodeAddress { type_: t.to_string(), address: a.to_string() }).collect(),
                ),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn ingress_is_internal_ips_of_ready_schedulable_nodes_sorted() {
        let nodes = vec![
            node("c", "True", false, &[("InternalIP", "10.0.0.12"), ("Hostname", "c"), ("ExternalIP", "203.0.113.3")]),
            node("a", "True", false, &[("InternalIP", "10.0.0.9")]),
            node("b", "True", false, &[("InternalIP", "10.0.0.10")]),
            node("notready", "False", false, &[("InternalIP", "10.0.0.1")]),
            node("unknown", "Unknown", false, &[("InternalIP", "10.0.0.2")]),
            node("cordoned", "True", true, &[("InternalIP", "10.0.0.3")]),
        ];
        let ing = desired_ingress(&nodes);
        // Numeric order, not string order (10.0.0.9 before 10.0.0.10).
        assert_eq!(
            ingress_ips(&ing),
            vec![Some("10.0.0.9".into()), Some("10.0.0.10".into()), Some("10.0.0.12".into())]
        );
        assert!(ing.iter().all(|i| i.ip_mode.as_deref() == Some("VIP")));
        assert!(desired_ingress(&[]).is_empty());
    }

    fn lb(ns: &str, name: &str, created: i64, ports: &[(&str, i32)]) -> Service {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
        Service {
            metadata: ObjectMeta {
                namespace: Some(ns.into()),
                name: Some(name.into()),
                creation_timestamp: Some(Time(k8s_openapi::jiff::Timestamp::from_second(created).unwrap())),
                ..Default::default()
            },
            spec: Some(ServiceSpec {
                type_: Some("LoadBalancer".into()),
                ports: Some(
                    ports
                        .iter()
                        .map(|(p, port)| k8s_openapi::api::core::v1::ServicePort {
                            protocol: (!p.is_empty()).then(|| p.to_string()),
                            port: *port,
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_port_held_by_an_older_load_balancer_leaves_the_newer_pending() {
        let old = lb("default", "old", 100, &[("TCP", 80)]);
        let new = lb("other", "new", 200, &[("", 80), ("TCP", 443)]);
        let all = vec![old.clone(), new.clone()];
        // Unset protocol means TCP: the newer one waits for port 80.
        assert_eq!(blocked(&new, &all, &[]), Some(("TCP".into(), 80, Some("default/old".into()))));
        assert_eq!(blocked(&old, &all, &[]), None);
        // Another protocol on the same port is no conflict.
        let udp = lb("default", "dns", 300, &[("UDP", 80)]);
        assert_eq!(blocked(&udp, &[old.clone(), new.clone(), udp.clone()], &[]), None);
        // The port frees when the holder is deleted, being deleted, or
        // stops being a ServiceLB load balancer.
        assert_eq!(blocked(&new, std::slice::from_ref(&new), &[]), None);
        let mut deleting = old.clone();
        deleting.metadata.deletion_timestamp = deleting.metadata.creation_timestamp.clone();
        assert_eq!(blocked(&new, &[deleting, new.clone()], &[]), None);
        let mut classed = old.clone();
        classed.spec.as_mut().unwrap().load_balancer_class = Some("example.com/lb".into());
        assert_eq!(blocked(&new, &[classed, new.clone()], &[]), None);
        // A pending Service holds none of its ports: the third one gets
        // 443 although the pending one asked for it first.
        let third = lb("default", "third", 300, &[("TCP", 443)]);
        assert_eq!(blocked(&third, &[old.clone(), new.clone(), third.clone()], &[]), None);
        // Same creation second: namespace/name decides.
        let a = lb("default", "a", 100, &[("TCP", 8080)]);
        let b = lb("default", "b", 100, &[("TCP", 8080)]);
        assert_eq!(blocked(&b, &[a.clone(), b.clone()], &[]), Some(("TCP".into(), 8080, Some("default/a".into()))));
        assert_eq!(blocked(&a, &[a.clone(), b.clone()], &[]), None);
        // Reserved ports (the node's own) are never handed out.
        assert_eq!(blocked(&old, &all, &[("TCP".into(), 80)]), Some(("TCP".into(), 80, None)));
    }

    #[test]
    fn only_classless_load_balancers_are_managed() {
        let svc = |ty: &str, class: Option<&str>| Service {
            spec: Some(ServiceSpec {
                type_: Some(ty.into()),
                load_balancer_class: class.map(Into::into),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(manages(&svc("LoadBalancer", None)));
        assert!(!manages(&svc("LoadBalancer", Some("example.com/lb"))));
        assert!(!manages(&svc("NodePort", None)));
        assert!(!manages(&svc("ClusterIP", None)));
    }
}
