//! The node lifecycle controller (upstream
//! `pkg/controller/nodelifecycle/node_lifecycle_controller.go`): node
//! health from heartbeats, the taints that follow it, and the pods of
//! nodes that stop being Ready.
//!
//! - Every `--node-monitor-period` (5 s) each node's heartbeats (Ready's
//!   `lastHeartbeatTime`, its Lease's `renewTime` in `kube-node-lease`)
//!   are checked ([`health`]); after `--node-monitor-grace-period` (50 s)
//!   without one — `--node-startup-grace-period` (1 m) for a node that
//!   never posted Ready — Ready, MemoryPressure, DiskPressure and
//!   PIDPressure become Unknown (reason `NodeStatusUnknown`).
//! - When Ready leaves True: an event `NodeNotReady` ("Node <name> status
//!   is now: NodeNotReady") on the Node, and every pod on it gets Ready
//!   False (event `NodeNotReady` "Node is not ready" on the pod).
//! - NoExecute taints `not-ready`/`unreachable` are queued per zone and
//!   applied at the zone's rate ([`zones`]), checked every 100 ms; removed
//!   as soon as the node is Ready again. NoSchedule taints follow the
//!   node's conditions and `spec.unschedulable` on every node change
//!   ([`taints`]).
//!
//! Evicting pods from NoExecute-tainted nodes is the taint eviction
//! controller's job ([`crate::tainteviction`]), as upstream since 1.29.

pub mod health;
pub mod taints;
pub mod zones;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::pin::pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{FutureExt, StreamExt};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, NodeCondition, Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{watcher, WatchStreamExt};

use crate::events;
use crate::runtime::{is_not_found, Ctx, Error, Stop};
use health::Probe;
use zones::{Disruption, Rates, Zones};

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "node-lifecycle-controller";
/// The older name `--controllers` also accepts.
pub const ALIAS: &str = "nodelifecycle";
/// The kube-system ServiceAccount it runs as.
pub const SERVICE_ACCOUNT: &str = "node-controller";
/// Where kubelets keep their heartbeat Leases.
pub const LEASE_NAMESPACE: &str = "kube-node-lease";
/// How often the NoExecute tainting queues are drained (upstream's
/// `scheduler.NodeEvictionPeriod`).
const TAINTING_PERIOD: Duration = Duration::from_millis(100);

/// The node controllers' timers, rates and pod address ranges — upstream
/// kube-controller-manager's flags of the same names, with their 1.33
/// defaults ([`Default`]).
#[derive(Clone, Debug)]
pub struct NodeSettings {
    /// `--node-monitor-period`: how often node health is checked (5 s).
    pub monitor_period: Duration,
    /// `--node-monitor-grace-period`: how long a node may go without a
    /// heartbeat before it is Unknown (50 s since Kubernetes 1.32, 40 s before).
    pub monitor_grace_period: Duration,
    /// `--node-startup-grace-period`: the same for a node that never
    /// posted Ready (1 m).
    pub startup_grace_period: Duration,
    /// `--node-eviction-rate`: nodes per second tainted NoExecute in a
    /// healthy zone (0.1).
    pub eviction_rate: f64,
    /// `--secondary-node-eviction-rate`: the same in a partially disrupted
    /// zone (0.01; 0 in zones of at most `large_cluster_size_threshold` nodes).
    pub secondary_eviction_rate: f64,
    /// `--unhealthy-zone-threshold`: the share of not-Ready nodes (more
    /// than 2) that makes a zone partially disrupted (0.55).
    pub unhealthy_zone_threshold: f64,
    /// `--large-cluster-size-threshold`: nodes (50).
    pub large_cluster_size_threshold: usize,
    /// `--cluster-cidr`: the pods' address range the node IPAM controller
    /// carves node ranges from (rkube: 10.42.0.0/16, as k3s); `None`: no
    /// allocation.
    pub cluster_cidr: Option<String>,
    /// `--node-cidr-mask-size`: the prefix length of each node's range
    /// (`None`: 24 for IPv4, 64 for IPv6).
    pub node_cidr_mask_size: Option<u8>,
}

impl Default for NodeSettings {
    fn default() -> Self {
        NodeSettings {
            monitor_period: Duration::from_secs(5),
            monitor_grace_period: Duration::from_secs(50),
            startup_grace_period: Duration::from_secs(60),
            eviction_rate: 0.1,
            secondary_eviction_rate: 0.01,
            unhealthy_zone_threshold: 0.55,
            large_cluster_size_threshold: 50,
            cluster_cidr: Some("10.42.0.0/16".into()),
            node_cidr_mask_size: None,
        }
    }
}

struct State {
    ctx: Arc<Ctx>,
    nodes: Store<Node>,
    leases: Store<Lease>,
    probes: HashMap<String, Probe>,
    zones: Zones,
    /// Nodes whose pods could not all be marked not Ready.
    retry_pods: HashSet<String>,
}

/// Runs until `stop`.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    let s = ctx.settings.node.clone();
    let (nodes, node_writer) = reflector::store();
    let (leases, lease_writer) = reflector::store();
    let node_events =
        reflector::reflector(node_writer, watcher(Api::<Node>::all(ctx.reader.clone()), watcher::Config::default()))
            .default_backoff()
            .applied_objects();
    let lease_events = reflector::reflector(
        lease_writer,
        watcher(Api::<Lease>::namespaced(ctx.reader.clone(), LEASE_NAMESPACE), watcher::Config::default()),
    )
    .default_backoff();
    let mut node_events = pin!(node_events);
    let mut lease_events = pin!(lease_events);
    let rates = Rates {
        eviction: s.eviction_rate,
        secondary: s.secondary_eviction_rate,
        unhealthy_threshold: s.unhealthy_zone_threshold,
        large_cluster: s.large_cluster_size_threshold,
    };
    let mut st = State {
        ctx: ctx.clone(),
        nodes,
        leases,
        probes: HashMap::new(),
        zones: Zones::new(rates),
        retry_pods: HashSet::new(),
    };
    let mut monitor = tokio::time::interval(s.monitor_period.max(Duration::from_millis(100)));
    monitor.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut tainting = tokio::time::interval(TAINTING_PERIOD);
    tainting.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut stop_fut = pin!(crate::runtime::stopped(stop));
    tracing::info!(component = NAME, "starting controller");
    loop {
        tokio::select! {
            _ = &mut stop_fut => break,
            ev = node_events.next() => match ev {
                Some(Ok(node)) => {
                    if let Err(e) = st.no_schedule_pass(&node).await {
                        tracing::warn!(component = NAME, node = node.metadata.name.as_deref().unwrap_or(""), error = %e, "cannot update NoSchedule taints");
                    }
                }
                Some(Err(e)) => tracing::debug!(component = NAME, error = %e, "node watch"),
                None => break,
            },
            Some(ev) = lease_events.next() => if let Err(e) = ev {
                tracing::debug!(component = NAME, error = %e, "lease watch");
            },
            _ = monitor.tick() => {
                if st.synced() {
                    st.monitor_node_health().await;
                }
            }
            _ = tainting.tick() => {
                if st.synced() {
                    st.no_execute_pass().await;
                }
            }
        }
    }
    tracing::info!(component = NAME, "controller stopped");
}

fn dur(d: Duration) -> SignedDuration {
    SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX)
}

impl State {
    fn synced(&self) -> bool {
        self.nodes.wait_until_ready().now_or_never().is_some()
            && self.leases.wait_until_ready().now_or_never().is_some()
    }

    /// Upstream `doNoScheduleTaintingPass` for one node.
    async fn no_schedule_pass(&self, node: &Node) -> Result<(), Error> {
        let (add, remove) = taints::no_schedule_diff(node);
        if add.is_empty() && remove.is_empty() {
            return Ok(());
        }
        taints::swap(&self.ctx.client, node, &add, &remove).await?;
        Ok(())
    }

    /// Upstream `monitorNodeHealth`.
    async fn monitor_node_health(&mut self) {
        let s = self.ctx.settings.node.clone();
        let nodes = self.nodes.state();
        let names: HashSet<String> = nodes.iter().filter_map(|n| n.metadata.name.clone()).collect();
        // Deleted nodes: forget them.
        self.probes.retain(|n, _| names.contains(n));
        self.retry_pods.retain(|n| names.contains(n));
        let mut zone_ready: BTreeMap<String, Vec<Option<String>>> = BTreeMap::new();
        for node in &nodes {
            let name = node.metadata.name.clone().unwrap_or_default();
            let zone = zones::zone_key(node);
            self.zones.ensure(&zone);
            let now = Timestamp::now();
            let lease_renew = self
                .leases
                .get(&ObjectRef::new(&name).within(LEASE_NAMESPACE))
                .and_then(|l| l.spec.as_ref()?.renew_time.as_ref().map(|t| t.0));
            let (mut probe, grace) = health::observe(
                self.probes.get(&name),
                node,
                lease_renew,
                now,
                dur(s.monitor_grace_period),
                dur(s.startup_grace_period),
            );
            let observed: NodeCondition = health::condition(node, health::READY).cloned().unwrap_or(NodeCondition {
                type_: health::READY.into(),
                status: "Unknown".into(),
                ..Default::default()
            });
            let mut current = health::condition(node, health::READY).cloned();
            if health::is_stale(&probe, grace, now) {
                if let Some(conditions) = health::unknown_conditions(node, now) {
                    match self.write_conditions(node, conditions).await {
                        Ok(updated) => {
                            current = health::condition(&updated, health::READY).cloned();
                            probe.ready = current.clone();
                            probe.ready_transition_time = now;
                            tracing::info!(component = NAME, node = %name, "node stopped posting status: conditions set to Unknown");
                        }
                        Err(e) => {
                            tracing::warn!(component = NAME, node = %name, error = %e, "cannot set the node's conditions to Unknown")
                        }
                    }
                }
            }
            self.probes.insert(name.clone(), probe);
            if let Some(cur) = &current {
                self.process_taint_based_eviction(node, &zone, &observed.status).await;
                let newly_not_ready = cur.status != "True" && observed.status == "True";
                if newly_not_ready {
                    self.ctx.recorder.event(
                        node.as_ref(),
                        events::NORMAL,
                        "NodeNotReady",
                        format!("Node {name} status is now: NodeNotReady"),
                    );
                }
                if newly_not_ready || (self.retry_pods.contains(&name) && observed.status != "True") {
                    match self.mark_pods_not_ready(&name).await {
                        Ok(()) => self.retry_pods.remove(&name),
                        Err(e) => {
                            tracing::warn!(component = NAME, node = %name, error = %e, "cannot mark the node's pods not ready");
                            self.retry_pods.insert(name.clone())
                        }
                    };
                }
            }
            zone_ready.entry(zone).or_default().push(current.map(|c| c.status));
        }
        match self.zones.handle_disruption(&zone_ready) {
            Disruption::None => {}
            Disruption::Entered => {
                tracing::info!(
                    component = NAME,
                    "Controller detected that all Nodes are not-Ready. Entering master disruption mode."
                );
                for node in &nodes {
                    self.mark_reachable(node, &zones::zone_key(node)).await;
                }
            }
            Disruption::Exited => {
                tracing::info!(
                    component = NAME,
                    "Controller detected that some Nodes are Ready. Exiting master disruption mode."
                );
                let now = Timestamp::now();
                for p in self.probes.values_mut() {
                    p.probe_time = now;
                    p.ready_transition_time = now;
                }
            }
        }
    }

    /// Writes the node's conditions through the status subresource (an
    /// update: the resourceVersion guards against a kubelet write in between).
    async fn write_conditions(&self, node: &Node, conditions: Vec<NodeCondition>) -> Result<Node, Error> {
        let mut updated = node.clone();
        updated.status.get_or_insert_with(Default::default).conditions = Some(conditions);
        let name = node.metadata.name.clone().unwrap_or_default();
        Ok(Api::<Node>::all(self.ctx.client.clone()).replace_status(&name, &PostParams::default(), &updated).await?)
    }

    /// Upstream `processTaintBaseEviction`, from the Ready status seen
    /// before this pass.
    async fn process_taint_based_eviction(&mut self, node: &Node, zone: &str, observed: &str) {
        let name = node.metadata.name.clone().unwrap_or_default();
        let queue_add = |st: &mut Self| {
            if let Some(q) = st.zones.queues.get_mut(zone) {
                q.add(&name, Instant::now());
            }
        };
        match observed {
            "False" | "Unknown" => {
                let (want, opposite) = taints::no_execute_for(observed).expect("not ready");
                if taints::has(node, &opposite.key, taints::NO_EXECUTE) {
                    // Already tainted for the other state: swap right away.
                    if let Err(e) = taints::swap(&self.ctx.client, node, &[want], &[opposite]).await {
                        tracing::warn!(component = NAME, node = %name, error = %e, "cannot swap NoExecute taints");
                    }
                } else if !taints::has(node, &want.key, taints::NO_EXECUTE) {
                    queue_add(self);
                }
            }
            _ => self.mark_reachable(node, zone).await,
        }
    }

    /// Upstream `markNodeAsReachable`: no NoExecute not-ready/unreachable
    /// taint, nothing queued.
    async fn mark_reachable(&mut self, node: &Node, zone: &str) {
        let name = node.metadata.name.clone().unwrap_or_default();
        if let Some(q) = self.zones.queues.get_mut(zone) {
            q.remove(&name);
        }
        let remove = [
            taints::taint(taints::UNREACHABLE, taints::NO_EXECUTE),
            taints::taint(taints::NOT_READY, taints::NO_EXECUTE),
        ];
        if remove.iter().any(|t| taints::has(node, &t.key, &t.effect)) {
            if let Err(e) = taints::swap(&self.ctx.client, node, &[], &remove).await {
                tracing::warn!(component = NAME, node = %name, error = %e, "cannot remove NoExecute taints");
            }
        }
    }

    /// Upstream `doNoExecuteTaintingPass`: taints the queued nodes the
    /// zones' rates allow.
    async fn no_execute_pass(&mut self) {
        let now = Instant::now();
        let zones: Vec<String> = self.zones.queues.keys().cloned().collect();
        for zone in zones {
            let due = self.zones.queues.get_mut(&zone).map(|q| q.take_due(now)).unwrap_or_default();
            for name in due {
                let Some(node) = self.nodes.get(&ObjectRef::new(&name)) else { continue };
                let Some(ready) = health::condition(&node, health::READY) else {
                    self.retry(&zone, &name, now);
                    continue;
                };
                let Some((want, opposite)) = taints::no_execute_for(&ready.status) else { continue };
                match taints::swap(&self.ctx.client, &node, std::slice::from_ref(&want), &[opposite]).await {
                    Ok(_) => {
                        tracing::info!(component = NAME, node = %name, taint = %want.key, "tainted the node NoExecute")
                    }
                    Err(e) => {
                        tracing::warn!(component = NAME, node = %name, error = %e, "cannot taint the node NoExecute");
                        self.retry(&zone, &name, now);
                    }
                }
            }
        }
    }

    fn retry(&mut self, zone: &str, name: &str, now: Instant) {
        if let Some(q) = self.zones.queues.get_mut(zone) {
            q.retry(name, now);
        }
    }

    /// Upstream `MarkPodsNotReady`: every pod on the node with a Ready
    /// condition gets Ready False (through the status subresource), and an
    /// event `NodeNotReady` "Node is not ready".
    async fn mark_pods_not_ready(&self, node: &str) -> Result<(), Error> {
        let lp = ListParams::default().fields(&format!("spec.nodeName={node}"));
        let pods = Api::<Pod>::all(self.ctx.client.clone()).list(&lp).await?;
        let mut failed = None;
        for pod in pods.items {
            if pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) != Some(node) {
                continue;
            }
            let Some(updated) = pod_not_ready(&pod, Timestamp::now()) else { continue };
            let ns = pod.metadata.namespace.clone().unwrap_or_default();
            let name = pod.metadata.name.clone().unwrap_or_default();
            match Api::<Pod>::namespaced(self.ctx.client.clone(), &ns)
                .replace_status(&name, &PostParams::default(), &updated)
                .await
            {
                Ok(p) => self.ctx.recorder.event(&p, events::WARNING, "NodeNotReady", "Node is not ready"),
                Err(e) if is_not_found(&e) => {}
                Err(e) => failed = Some(e),
            }
        }
        match failed {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }
}

/// The pod with its Ready condition set to False (transition time `now`
/// when it changes); `None` when it has no Ready condition or it is False.
pub fn pod_not_ready(pod: &Pod, now: Timestamp) -> Option<Pod> {
    let mut pod = pod.clone();
    let conditions = pod.status.as_mut()?.conditions.as_mut()?;
    let c: &mut PodCondition = conditions.iter_mut().find(|c| c.type_ == "Ready")?;
    if c.status == "False" {
        return None;
    }
    c.status = "False".into();
    c.last_transition_time = Some(Time(now));
    Some(pod)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::PodStatus;

    #[test]
    fn defaults_are_upstreams() {
        let s = NodeSettings::default();
        assert_eq!(s.monitor_period, Duration::from_secs(5));
        assert_eq!(s.monitor_grace_period, Duration::from_secs(50));
        assert_eq!(s.startup_grace_period, Duration::from_secs(60));
        assert_eq!((s.eviction_rate, s.secondary_eviction_rate, s.unhealthy_zone_threshold), (0.1, 0.01, 0.55));
        assert_eq!(s.large_cluster_size_threshold, 50);
    }

    #[test]
    fn pods_are_marked_not_ready_once() {
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let pod = Pod {
            status: Some(PodStatus {
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        let p = pod_not_ready(&pod, now).unwrap();
        let c = &p.status.as_ref().unwrap().conditions.as_ref().unwrap()[0];
        assert_eq!((c.status.as_str(), c.last_transition_time.clone()), ("False", Some(Time(now))));
        assert!(pod_not_ready(&p, now).is_none());
        assert!(pod_not_ready(&Pod::default(), now).is_none());
    }
}
