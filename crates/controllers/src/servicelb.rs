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
//! Runs under upstream's name `service-lb-controller` as the
//! `service-controller` ServiceAccount, whose bootstrap role
//! `system:controller:service-controller` grants exactly what it needs
//! (services read, services/status patch, nodes list/watch, events).

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
    let controller = controller
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

fn ingress_ips(ing: &[LoadBalancerIngress]) -> Vec<Option<String>> {
    ing.iter().map(|i| i.ip.clone()).collect()
}

async fn reconcile(svc: Arc<Service>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let key = runtime::key_of(svc.as_ref());
    let is_lb_type = svc.spec.as_ref().is_some_and(|s| s.type_.as_deref() == Some("LoadBalancer"));
    let want = if manages(&svc) {
        // Fresh from the API (its watch cache): the node trigger may run
        // before any local cache saw the change.
        let nodes = Api::<Node>::all(ctx.reader.clone()).list(&ListParams::default().match_any()).await?;
        desired_ingress(&nodes.items)
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
