//! Zones and the rate of NoExecute tainting (upstream
//! `node_lifecycle_controller.go` `ComputeZoneState`, `handleDisruption`,
//! `setLimiterInZone` and `scheduler.RateLimitedTimedQueue`), pure.
//!
//! Nodes are grouped by zone (region + zone labels). A zone is
//! `FullDisruption` when none of its nodes is Ready, `PartialDisruption`
//! when more than 2 are not Ready and they are at least
//! `--unhealthy-zone-threshold` (0.55) of it, else `Normal`. Each zone has
//! a queue of nodes waiting for their NoExecute taint, drained through a
//! token bucket (burst 1) at `--node-eviction-rate` (0.1 nodes/s) in a
//! Normal or fully disrupted zone, at `--secondary-node-eviction-rate`
//! (0.01/s) in a partially disrupted one — 0 when the zone has at most
//! `--large-cluster-size-threshold` (50) nodes. When every zone is fully
//! disrupted the controller assumes the problem is its own (master
//! disruption): it stops tainting and removes the NoExecute taints it set.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;

/// How long a node whose tainting failed waits in the queue (upstream's
/// `NodeEvictionPeriod` retry of 50 ms).
pub const RETRY: Duration = Duration::from_millis(50);

/// A zone's health.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneState {
    /// Just seen; not yet computed.
    Initial,
    /// Fewer not-Ready nodes than the threshold.
    Normal,
    /// Many nodes not Ready.
    PartialDisruption,
    /// No node Ready.
    FullDisruption,
}

/// The rates and thresholds of zone handling (the node flags).
#[derive(Clone, Copy, Debug)]
pub struct Rates {
    /// `--node-eviction-rate`, nodes per second.
    pub eviction: f64,
    /// `--secondary-node-eviction-rate`, nodes per second.
    pub secondary: f64,
    /// `--unhealthy-zone-threshold`, a fraction.
    pub unhealthy_threshold: f64,
    /// `--large-cluster-size-threshold`, nodes.
    pub large_cluster: usize,
}

/// The zone key of a node (upstream `GetZoneKey`): empty without region
/// and zone labels, else `region:\0:zone`.
pub fn zone_key(node: &Node) -> String {
    let labels = node.metadata.labels.as_ref();
    let get = |a: &str, b: &str| labels.and_then(|l| l.get(a).or_else(|| l.get(b))).cloned().unwrap_or_default();
    let region = get("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region");
    let zone = get("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone");
    if region.is_empty() && zone.is_empty() {
        String::new()
    } else {
        format!("{region}:\x00:{zone}")
    }
}

/// A zone's state from its nodes' Ready statuses (`None`: no Ready
/// condition, counted not Ready); also the number not Ready.
pub fn zone_state(ready: &[Option<String>], unhealthy_threshold: f64) -> (usize, ZoneState) {
    let ready_n = ready.iter().filter(|s| s.as_deref() == Some("True")).count();
    let not_ready = ready.len() - ready_n;
    let state = if ready_n == 0 && not_ready > 0 {
        ZoneState::FullDisruption
    } else if not_ready > 2 && not_ready as f64 / ready.len() as f64 >= unhealthy_threshold {
        ZoneState::PartialDisruption
    } else {
        ZoneState::Normal
    };
    (not_ready, state)
}

/// A token bucket of burst 1 (client-go's flowcontrol limiter as the node
/// controller builds it); rate 0 never accepts.
#[derive(Debug)]
pub struct TokenBucket {
    qps: f64,
    tokens: f64,
    last: Option<Instant>,
}

impl TokenBucket {
    /// A full bucket filling at `qps` per second.
    pub fn new(qps: f64) -> Self {
        TokenBucket { qps, tokens: 1.0, last: None }
    }

    /// The rate.
    pub fn qps(&self) -> f64 {
        self.qps
    }

    /// Takes a token if one is there at `now`.
    pub fn try_accept(&mut self, now: Instant) -> bool {
        if self.qps <= 0.0 {
            return false;
        }
        if let Some(last) = self.last {
            self.tokens = (self.tokens + now.saturating_duration_since(last).as_secs_f64() * self.qps).min(1.0);
        }
        self.last = Some(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// One zone's queue of nodes waiting for their NoExecute taint, each node
/// at most once, drained in order through the zone's token bucket.
#[derive(Debug)]
pub struct ZoneQueue {
    limiter: TokenBucket,
    items: VecDeque<(String, Instant)>,
}

impl ZoneQueue {
    /// An empty queue draining at `qps`.
    pub fn new(qps: f64) -> Self {
        ZoneQueue { limiter: TokenBucket::new(qps), items: VecDeque::new() }
    }

    /// Replaces the rate (upstream `SwapLimiter`: a fresh bucket).
    pub fn swap_limiter(&mut self, qps: f64) {
        if self.limiter.qps() != qps {
            self.limiter = TokenBucket::new(qps);
        }
    }

    /// Queues `node` (no-op when queued already); true if added.
    pub fn add(&mut self, node: &str, now: Instant) -> bool {
        if self.items.iter().any(|(n, _)| n == node) {
            return false;
        }
        self.items.push_back((node.to_string(), now));
        true
    }

    /// Removes `node`; true if it was queued.
    pub fn remove(&mut self, node: &str) -> bool {
        let before = self.items.len();
        self.items.retain(|(n, _)| n != node);
        self.items.len() != before
    }

    /// Takes the nodes due at `now`, in order, as long as the bucket has
    /// tokens. A node whose tainting fails goes back with [`Self::retry`].
    pub fn take_due(&mut self, now: Instant) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(pos) = self.items.iter().position(|(_, at)| *at <= now) {
            if !self.limiter.try_accept(now) {
                break;
            }
            out.push(self.items.remove(pos).expect("position is in range").0);
        }
        out
    }

    /// Puts `node` back, due after [`RETRY`].
    pub fn retry(&mut self, node: &str, now: Instant) {
        if !self.items.iter().any(|(n, _)| n == node) {
            self.items.push_back((node.to_string(), now + RETRY));
        }
    }

    /// Whether `node` is queued.
    pub fn contains(&self, node: &str) -> bool {
        self.items.iter().any(|(n, _)| n == node)
    }
}

/// What the caller must do after [`Zones::handle_disruption`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disruption {
    /// Nothing beyond the new rates.
    None,
    /// Every zone just became fully disrupted: remove the NoExecute taints
    /// of every node (all queues were emptied and stopped).
    Entered,
    /// Leaving that mode: treat every node as just heard from.
    Exited,
}

/// Every zone's state and tainting queue.
#[derive(Debug)]
pub struct Zones {
    rates: Rates,
    /// Each zone's state.
    pub states: BTreeMap<String, ZoneState>,
    /// Each zone's tainting queue.
    pub queues: BTreeMap<String, ZoneQueue>,
}

impl Zones {
    /// No zones yet.
    pub fn new(rates: Rates) -> Self {
        Zones { rates, states: BTreeMap::new(), queues: BTreeMap::new() }
    }

    /// Registers a zone seen on a node (upstream `addPodEvictorForNewZone`).
    pub fn ensure(&mut self, zone: &str) {
        if !self.states.contains_key(zone) {
            self.states.insert(zone.to_string(), ZoneState::Initial);
            self.queues.insert(zone.to_string(), ZoneQueue::new(self.rates.eviction));
        }
    }

    fn rate_for(&self, size: usize, state: ZoneState) -> f64 {
        match state {
            ZoneState::Normal | ZoneState::Initial | ZoneState::FullDisruption => self.rates.eviction,
            // Small clusters stop evicting in a partial disruption.
            ZoneState::PartialDisruption if size <= self.rates.large_cluster => 0.0,
            ZoneState::PartialDisruption => self.rates.secondary,
        }
    }

    /// Recomputes every zone's state from its nodes' Ready statuses and
    /// sets the rates, as upstream's `handleDisruption`.
    pub fn handle_disruption(&mut self, zone_ready: &BTreeMap<String, Vec<Option<String>>>) -> Disruption {
        let mut new_states = BTreeMap::new();
        let mut all_are_full = true;
        for (zone, ready) in zone_ready {
            self.ensure(zone);
            let (_, state) = zone_state(ready, self.rates.unhealthy_threshold);
            all_are_full &= state == ZoneState::FullDisruption;
            new_states.insert(zone.clone(), state);
        }
        // Zones whose last node went away are forgotten.
        self.states.retain(|z, _| zone_ready.contains_key(z));
        self.queues.retain(|z, _| zone_ready.contains_key(z));
        let all_were_full = self.states.values().all(|s| *s == ZoneState::FullDisruption);
        if !all_were_full && all_are_full {
            for (zone, q) in self.queues.iter_mut() {
                q.items.clear();
                q.swap_limiter(0.0);
                self.states.insert(zone.clone(), ZoneState::FullDisruption);
            }
            return Disruption::Entered;
        }
        if all_were_full && !all_are_full {
            for (zone, state) in &new_states {
                let size = zone_ready.get(zone).map_or(0, Vec::len);
                let rate = self.rate_for(size, *state);
                if let Some(q) = self.queues.get_mut(zone) {
                    q.swap_limiter(rate);
                }
                self.states.insert(zone.clone(), *state);
            }
            return Disruption::Exited;
        }
        for (zone, state) in &new_states {
            if self.states.get(zone) != Some(state) {
                let size = zone_ready.get(zone).map_or(0, Vec::len);
                let rate = self.rate_for(size, *state);
                if let Some(q) = self.queues.get_mut(zone) {
                    q.swap_limiter(rate);
                }
                tracing::info!(component = super::NAME, zone = %zone, state = ?state, "zone state changed");
                self.states.insert(zone.clone(), *state);
            }
        }
        Disruption::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<Option<String>> {
        v.iter().map(|x| if x.is_empty() { None } else { Some(x.to_string()) }).collect()
    }

    const RATES: Rates = Rates { eviction: 0.1, secondary: 0.01, unhealthy_threshold: 0.55, large_cluster: 50 };

    #[test]
    fn zone_states_follow_upstream_compute_zone_state() {
        assert_eq!(zone_state(&s(&["True", "True"]), 0.55), (0, ZoneState::Normal));
        assert_eq!(zone_state(&s(&["False", "Unknown"]), 0.55), (2, ZoneState::FullDisruption));
        assert_eq!(zone_state(&s(&["", "True"]), 0.55), (1, ZoneState::Normal));
        // More than 2 not Ready and at least 55%.
        assert_eq!(
            zone_state(&s(&["False", "False", "False", "True", "True"]), 0.55),
            (3, ZoneState::PartialDisruption)
        );
        assert_eq!(zone_state(&s(&["False", "False", "True"]), 0.55), (2, ZoneState::Normal));
        assert_eq!(zone_state(&s(&["False", "False", "False", "True", "True", "True"]), 0.55), (3, ZoneState::Normal));
    }

    #[test]
    fn zone_keys_from_topology_labels() {
        let mut n = Node::default();
        assert_eq!(zone_key(&n), "");
        n.metadata.labels = Some(
            [
                ("topology.kubernetes.io/region".to_string(), "r".to_string()),
                ("topology.kubernetes.io/zone".into(), "z".into()),
            ]
            .into(),
        );
        assert_eq!(zone_key(&n), "r:\x00:z");
    }

    #[test]
    fn the_bucket_has_burst_one_and_fills_at_its_rate() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(0.1);
        assert!(b.try_accept(t0));
        assert!(!b.try_accept(t0 + Duration::from_secs(5)));
        assert!(b.try_accept(t0 + Duration::from_secs(10)));
        let mut never = TokenBucket::new(0.0);
        assert!(!never.try_accept(t0));
    }

    #[test]
    fn queues_dedup_and_drain_through_the_bucket() {
        let t0 = Instant::now();
        let mut q = ZoneQueue::new(0.1);
        assert!(q.add("a", t0));
        assert!(!q.add("a", t0));
        assert!(q.add("b", t0));
        assert_eq!(q.take_due(t0), ["a"]);
        assert_eq!(q.take_due(t0 + Duration::from_secs(1)), Vec::<String>::new());
        assert_eq!(q.take_due(t0 + Duration::from_secs(10)), ["b"]);
        q.add("c", t0);
        assert!(q.remove("c"));
        assert!(!q.contains("c"));
    }

    #[test]
    fn every_zone_fully_disrupted_stops_tainting_and_recovery_restores_rates() {
        let mut z = Zones::new(RATES);
        let zone = |v: &[&str]| BTreeMap::from([(String::new(), s(v))]);
        assert_eq!(z.handle_disruption(&zone(&["True", "True"])), Disruption::None);
        assert_eq!(z.states[""], ZoneState::Normal);
        // One of two nodes down: Normal, tainting at 0.1/s.
        assert_eq!(z.handle_disruption(&zone(&["True", "Unknown"])), Disruption::None);
        assert_eq!(z.queues[""].limiter.qps(), 0.1);
        // The single zone fully down: master disruption.
        assert_eq!(z.handle_disruption(&zone(&["Unknown", "Unknown"])), Disruption::Entered);
        assert_eq!(z.queues[""].limiter.qps(), 0.0);
        assert_eq!(z.handle_disruption(&zone(&["Unknown", "Unknown"])), Disruption::None);
        assert_eq!(z.handle_disruption(&zone(&["True", "Unknown"])), Disruption::Exited);
        assert_eq!(z.queues[""].limiter.qps(), 0.1);
    }

    #[test]
    fn zones_without_nodes_are_forgotten() {
        let mut z = Zones::new(RATES);
        z.handle_disruption(&BTreeMap::from([("a".to_string(), s(&["True"])), ("b".to_string(), s(&["Unknown"]))]));
        assert_eq!(z.states["b"], ZoneState::FullDisruption);
        // Zone b's node is deleted; a's node goes down: every remaining zone is fully disrupted.
        let d = z.handle_disruption(&BTreeMap::from([("a".to_string(), s(&["Unknown"]))]));
        assert_eq!(d, Disruption::Entered);
        assert!(!z.states.contains_key("b") && !z.queues.contains_key("b"));
    }

    #[test]
    fn partial_disruption_uses_the_secondary_rate_only_in_large_zones() {
        let mut z = Zones::new(RATES);
        let mut ready = vec![Some("False".to_string()); 3];
        ready.extend(vec![Some("True".to_string()); 2]);
        let mut zones = BTreeMap::from([(String::new(), ready.clone()), ("b".to_string(), s(&["True"]))]);
        z.handle_disruption(&zones);
        assert_eq!(z.states[""], ZoneState::PartialDisruption);
        assert_eq!(z.queues[""].limiter.qps(), 0.0);
        let mut big = vec![Some("False".to_string()); 40];
        big.extend(vec![Some("True".to_string()); 20]);
        zones.insert(String::new(), big);
        z.states.insert(String::new(), ZoneState::Normal);
        z.handle_disruption(&zones);
        assert_eq!(z.queues[""].limiter.qps(), 0.01);
    }
}
