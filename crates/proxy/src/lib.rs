//! rkube's kube-proxy in nftables mode (upstream `pkg/proxy/nftables`):
//! informers on Services and EndpointSlices feed an in-memory [`Model`];
//! a sync thread turns it into rules in ONE nft table of family `ip`
//! ([`rules`]) and applies them with `nft -f -`, one atomic transaction
//! per sync — the whole table at start, after a failure and every
//! `sync_period`, otherwise only the Services that changed. Changes are
//! coalesced: events that arrive while a sync runs go into the next one.
//! After a sync, stale UDP conntrack entries are deleted with the
//! `conntrack` CLI, as upstream. When two Services map the same
//! destination (an external or load-balancer IP and port equal to
//! another's, or to a node address and another's nodePort), the oldest
//! keeps it and the others are skipped for it with a warning
//! ([`rules::Claims`]): no sync ever writes an element twice.
//!
//! Not implemented (upstream has them): IPv6 (`ip6`/`inet`), topology-aware
//! hints, `loadBalancerSourceRanges` (the firewall chains), `ipMode`
//! other than VIP/Proxy handling, and the `--nodeport-addresses` flag
//! (nodePorts are served on [`ProxyConfig::node_ips`]).

#![warn(missing_docs)]

pub mod model;
pub mod nft;
pub mod rules;

mod metrics;

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::Api;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;

pub use model::{Model, ServiceKey};
pub use nft::Runner;
pub use rules::{Params, ServiceRules, SyncKind};

/// The proxy's configuration.
pub struct ProxyConfig {
    /// The API client; authenticates as `system:kube-proxy` (RBAC role
    /// `system:node-proxier`: list/watch Services and EndpointSlices).
    pub client: kube::Client,
    /// This node's name: endpoints whose `nodeName` equals it are local
    /// (for `externalTrafficPolicy` / `internalTrafficPolicy: Local`).
    pub node_name: String,
    /// The node's addresses: NodePort and LoadBalancer ingress traffic
    /// arrives here (IPv6 ones are ignored).
    pub node_ips: Vec<IpAddr>,
    /// The cluster (pod) CIDR, e.g. `10.42.0.0/16`: ClusterIP traffic from
    /// outside it is masqueraded (upstream `--cluster-cidr`).
    pub cluster_cidr: String,
    /// The nft table (family `ip`) this proxy owns and alone touches.
    pub table: String,
    /// Full resync period (upstream default 30 s).
    pub sync_period: Duration,
    /// Minimum time between two syncs (upstream nftables default 1 s);
    /// zero syncs as soon as the events queued so far are applied.
    pub min_sync_period: Duration,
    /// Where to serve Prometheus text at `/metrics` (upstream `:10249`);
    /// None: no metrics server.
    pub metrics_addr: Option<SocketAddr>,
}

/// What went wrong, with what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// `nft` failed; the message has nft's output.
    #[error("{0}")]
    Nft(String),
    /// `conntrack` failed.
    #[error("{0}")]
    Conntrack(String),
    /// A configuration value is invalid.
    #[error("invalid kube-proxy configuration: {0}")]
    Config(String),
    /// Something else (metrics server, sync thread).
    #[error("{0}")]
    Other(String),
}

/// The outcome of one [`Proxier::sync`].
#[derive(Clone, Copy, Debug)]
pub struct SyncStats {
    /// What kind of sync ran.
    pub kind: SyncKind,
    /// Services in the model.
    pub services: usize,
    /// Services whose rules were written.
    pub written: usize,
    /// Bytes of nft input.
    pub bytes: usize,
    /// Time to compute and apply.
    pub duration: Duration,
}

/// The sync engine without the API: owns the [`Model`] and what was last
/// applied; [`Proxier::sync`] programs the table. Usable by tests and
/// benchmarks with a [`Runner`] pointing into a network namespace.
pub struct Proxier {
    params: Params,
    runner: Runner,
    model: Model,
    applied: BTreeMap<ServiceKey, ServiceRules>,
    claims: rules::Claims,
    /// (destination, winner, loser) → when last warned.
    warned: std::collections::HashMap<rules::Conflict, Instant>,
    recreate: bool,
    last_full: Instant,
    sync_period: Duration,
    metrics: Arc<metrics::Metrics>,
}

impl Proxier {
    /// A proxier that will recreate `params.table` on its first sync.
    pub fn new(params: Params, runner: Runner, sync_period: Duration) -> Self {
        Proxier {
            params,
            runner,
            model: Model::new(),
            applied: BTreeMap::new(),
            claims: rules::Claims::default(),
            warned: std::collections::HashMap::new(),
            recreate: true,
            last_full: Instant::now(),
            sync_period,
            metrics: Arc::new(metrics::Metrics::default()),
        }
    }

    /// The model, to feed events into.
    pub fn model_mut(&mut self) -> &mut Model {
        &mut self.model
    }

    /// Whether a sync has something to do (changes pending, a recreate
    /// owed, or the resync period passed).
    pub fn needs_sync(&self) -> bool {
        self.recreate || self.model.has_dirty() || self.last_full.elapsed() >= self.sync_period
    }

    /// Logs each conflict at warn, at most every 5 minutes per
    /// (destination, winner, loser).
    fn warn_conflicts(&mut self, conflicts: Vec<rules::Conflict>) {
        let now = Instant::now();
        let every = Duration::from_secs(300);
        self.warned.retain(|_, t| now.duration_since(*t) < every);
        for c in conflicts {
            if self.warned.contains_key(&c) {
                continue;
            }
            tracing::warn!(
                component = "kube-proxy",
                destination = %c.unit,
                kept_by = %format!("{}/{}", c.winner.namespace, c.winner.name),
                skipped = %format!("{}/{}", c.loser.namespace, c.loser.name),
                "two Services claim the same destination; the older one keeps it and the other gets no rule for it until it frees (change the externalIPs, load-balancer port or nodePort of one of them)"
            );
            self.warned.insert(c, now);
        }
    }

    /// Computes and applies the rules: recreates the table on the first
    /// sync and after a failure, rewrites it every `sync_period`,
    /// otherwise writes only changed Services. On error the next sync
    /// recreates the table.
    pub fn sync(&mut self) -> Result<SyncStats, ProxyError> {
        let start = Instant::now();
        let kind = if self.recreate {
            SyncKind::Recreate
        } else if self.last_full.elapsed() >= self.sync_period {
            SyncKind::Resync
        } else {
            SyncKind::Partial
        };
        let dirty = self.model.take_dirty();
        let mut next: BTreeMap<ServiceKey, ServiceRules> = match kind {
            SyncKind::Partial => {
                let mut next: BTreeMap<ServiceKey, ServiceRules> =
                    dirty.iter().map(|k| (k.clone(), rules::service_rules(&self.model, &self.params, k))).collect();
                // Services sharing a destination with these are resolved
                // together (a freed destination goes to the next claimant).
                for k in self.claims.related(&self.params, &next) {
                    let r = rules::service_rules(&self.model, &self.params, &k);
                    next.insert(k, r);
                }
                next
            }
            _ => self
                .model
                .service_keys()
                .into_iter()
                .map(|k| {
                    let r = rules::service_rules(&self.model, &self.params, &k);
                    (k, r)
                })
                .collect(),
        };
        let model = &self.model;
        let conflicts = self.claims.resolve(&self.params, kind, &self.applied, &mut next, |k| model.priority(k));
        self.warn_conflicts(conflicts);
        let (text, written) = rules::sync_text(&self.params, kind, &self.applied, &next);
        let bytes = text.len();
        if !text.is_empty() {
            if let Err(e) = self.runner.nft_apply(&text) {
                self.recreate = true;
                self.metrics.failure();
                return Err(e);
            }
        }
        // Stale UDP flows, then remember what is applied.
        let changed: BTreeSet<&ServiceKey> = match kind {
            SyncKind::Partial => next.keys().collect(),
            _ => next.keys().chain(self.applied.keys()).collect(),
        };
        for k in changed {
            for args in rules::stale_udp(self.applied.get(k), next.get(k)) {
                if let Err(e) = self.runner.conntrack(&args) {
                    tracing::warn!(component = "kube-proxy", error = %e, "could not delete stale UDP conntrack entries; clients may keep sending to a removed endpoint until the entry times out");
                }
            }
        }
        match kind {
            SyncKind::Partial => {
                for (k, r) in next {
                    if r == ServiceRules::default() {
                        self.applied.remove(&k);
                    } else {
                        self.applied.insert(k, r);
                    }
                }
            }
            _ => {
                self.applied = next.into_iter().filter(|(_, r)| *r != ServiceRules::default()).collect();
                self.last_full = Instant::now();
            }
        }
        self.recreate = false;
        let duration = start.elapsed();
        self.metrics.observe(kind, duration);
        Ok(SyncStats { kind, services: self.model.service_count(), written, bytes, duration })
    }
}

/// Deletes `table` (family `ip`) if present; idempotent. Used by
/// `rkube` cleanup and at proxy shutdown when asked to.
pub fn cleanup(table: &str) -> Result<(), ProxyError> {
    check_table_name(table)?;
    Runner::default().delete_table(table)
}

fn check_table_name(table: &str) -> Result<(), ProxyError> {
    let ok = table.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && table.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(ProxyError::Config(format!(
            "table name {table:?} must be letters, digits, '-' or '_', starting with a letter"
        )))
    }
}

/// Serves metrics on `addr` in a task; when `addr` cannot be bound
/// (another kube-proxy, k3s, or a second agent on this host holds it),
/// warns and returns None: proxying matters more than metrics.
async fn start_metrics(
    addr: Option<SocketAddr>,
    metrics: Arc<metrics::Metrics>,
) -> Option<tokio::task::JoinHandle<()>> {
    let addr = addr?;
    match metrics::serve(addr, metrics).await {
        Ok(serve) => Some(tokio::spawn(serve)),
        Err(e) => {
            tracing::warn!(component = "kube-proxy", address = %addr, error = %e, "kube-proxy runs without metrics: cannot bind the metrics address (another kube-proxy or k3s on this host may hold it); pass --kube-proxy-metrics-bind-address with a free address, or port 0 to disable metrics");
            None
        }
    }
}

enum Msg {
    Svc(Box<Event<Service>>),
    Slice(Box<Event<EndpointSlice>>),
}

/// Runs kube-proxy until `stop` completes: watches Services and
/// EndpointSlices (all namespaces), programs `config.table`, and serves
/// metrics when asked (when `metrics_addr` cannot be bound it warns and
/// runs without metrics). Syncs wait until both informers have listed once
/// (upstream waits for caches to sync). Failed syncs are retried with
/// backoff (1 s doubling to 30 s) and logged at warn; watch errors are
/// retried by kube-runtime's default backoff. The table is left in place
/// on return (the proxy's rules keep working across restarts); use
/// [`cleanup`] to remove it.
pub async fn run(config: ProxyConfig, stop: impl std::future::Future<Output = ()> + Send) -> Result<(), ProxyError> {
    check_table_name(&config.table)?;
    let node_ips: Vec<Ipv4Addr> = config
        .node_ips
        .iter()
        .filter_map(|ip| match ip {
            IpAddr::V4(v4) => Some(*v4),
            IpAddr::V6(_) => None,
        })
        .collect();
    let params = Params {
        table: config.table.clone(),
        node_name: config.node_name.clone(),
        node_ips,
        cluster_cidr: config.cluster_cidr.clone(),
    };
    let mut proxier = Proxier::new(params, Runner::default(), config.sync_period);
    let metrics = proxier.metrics.clone();
    let metrics_task = start_metrics(config.metrics_addr, metrics).await;
    let (tx, rx) = mpsc::channel::<Msg>();
    let min = config.min_sync_period;
    let sync_thread = std::thread::Builder::new()
        .name("kube-proxy-sync".into())
        .spawn(move || sync_loop(&mut proxier, rx, min))
        .map_err(|e| ProxyError::Other(format!("cannot start the sync thread: {e}")))?;

    let svcs =
        watcher::watcher(Api::<Service>::all(config.client.clone()), watcher::Config::default()).default_backoff();
    let slices = watcher::watcher(Api::<EndpointSlice>::all(config.client.clone()), watcher::Config::default())
        .default_backoff();
    let mut svcs = std::pin::pin!(svcs);
    let mut slices = std::pin::pin!(slices);
    let mut stop = std::pin::pin!(stop);
    loop {
        let msg = tokio::select! {
            _ = &mut stop => break,
            ev = svcs.next() => match ev {
                Some(Ok(ev)) => Msg::Svc(Box::new(ev)),
                Some(Err(e)) => { tracing::warn!(component = "kube-proxy", error = %e, "watching Services failed; retrying (check the API server and the system:node-proxier RBAC binding)"); continue }
                None => break,
            },
            ev = slices.next() => match ev {
                Some(Ok(ev)) => Msg::Slice(Box::new(ev)),
                Some(Err(e)) => { tracing::warn!(component = "kube-proxy", error = %e, "watching EndpointSlices failed; retrying (check the API server and the system:node-proxier RBAC binding)"); continue }
                None => break,
            },
        };
        if tx.send(msg).is_err() {
            break; // the sync thread ended
        }
    }
    drop(tx);
    if let Some(t) = metrics_task {
        t.abort();
    }
    let _ = tokio::task::spawn_blocking(move || sync_thread.join()).await;
    Ok(())
}

/// [`Msg`] unboxed, to match on (never stored).
#[allow(clippy::large_enum_variant)]
enum Msg2 {
    Svc(Event<Service>),
    Slice(Event<EndpointSlice>),
}

/// Re-list bookkeeping for one informer.
#[derive(Default)]
struct Relist<K: Ord> {
    seen: Option<BTreeSet<K>>,
    synced: bool,
}

fn handle(
    proxier: &mut Proxier,
    msg: Msg,
    svc_list: &mut Relist<ServiceKey>,
    slice_list: &mut Relist<(String, String)>,
) {
    let model = proxier.model_mut();
    let msg = match msg {
        Msg::Svc(ev) => Msg2::Svc(*ev),
        Msg::Slice(ev) => Msg2::Slice(*ev),
    };
    match msg {
        Msg2::Svc(Event::Init) => svc_list.seen = Some(BTreeSet::new()),
        Msg2::Svc(Event::InitApply(s)) => {
            if let Some(seen) = svc_list.seen.as_mut() {
                seen.insert(ServiceKey::new(
                    s.metadata.namespace.clone().unwrap_or_default(),
                    s.metadata.name.clone().unwrap_or_default(),
                ));
            }
            model.apply_service(&s);
        }
        Msg2::Svc(Event::InitDone) => {
            if let Some(seen) = svc_list.seen.take() {
                for k in model.service_keys() {
                    if !seen.contains(&k) {
                        model.remove_service(&k);
                    }
                }
            }
            svc_list.synced = true;
        }
        Msg2::Svc(Event::Apply(s)) => model.apply_service(&s),
        Msg2::Svc(Event::Delete(s)) => model.delete_service(&s),
        Msg2::Slice(Event::Init) => slice_list.seen = Some(BTreeSet::new()),
        Msg2::Slice(Event::InitApply(s)) => {
            if let Some(seen) = slice_list.seen.as_mut() {
                seen.insert((
                    s.metadata.namespace.clone().unwrap_or_default(),
                    s.metadata.name.clone().unwrap_or_default(),
                ));
            }
            model.apply_slice(&s);
        }
        Msg2::Slice(Event::InitDone) => {
            if let Some(seen) = slice_list.seen.take() {
                for (ns, name) in model.slice_ids() {
                    if !seen.contains(&(ns.clone(), name.clone())) {
                        model.remove_slice(&ns, &name);
                    }
                }
            }
            slice_list.synced = true;
        }
        Msg2::Slice(Event::Apply(s)) => model.apply_slice(&s),
        Msg2::Slice(Event::Delete(s)) => model.delete_slice(&s),
    }
}

fn sync_loop(proxier: &mut Proxier, rx: mpsc::Receiver<Msg>, min_sync_period: Duration) {
    let mut svc_list = Relist::default();
    let mut slice_list = Relist::default();
    let mut last_sync: Option<Instant> = None;
    let mut backoff = Duration::ZERO;
    let mut retry_at: Option<Instant> = None;
    loop {
        // Wait for the next event, or until a sync is due.
        let synced = svc_list.synced && slice_list.synced;
        let now = Instant::now();
        let mut due = if !synced {
            now + Duration::from_secs(3600)
        } else if let Some(at) = retry_at {
            at
        } else if proxier.recreate || proxier.model.has_dirty() {
            last_sync.map(|t| t + min_sync_period).unwrap_or(now)
        } else {
            proxier.last_full + proxier.sync_period
        };
        if due < now {
            due = now;
        }
        match rx.recv_timeout(due - now) {
            Ok(msg) => {
                handle(proxier, msg, &mut svc_list, &mut slice_list);
                // Coalesce everything already queued.
                while let Ok(msg) = rx.try_recv() {
                    handle(proxier, msg, &mut svc_list, &mut slice_list);
                }
                if Instant::now() < due || !(svc_list.synced && slice_list.synced) {
                    continue;
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
        if !svc_list.synced || !slice_list.synced || !proxier.needs_sync() {
            continue;
        }
        if let Some(at) = retry_at {
            if Instant::now() < at {
                continue;
            }
        }
        last_sync = Some(Instant::now());
        match proxier.sync() {
            Ok(s) => {
                backoff = Duration::ZERO;
                retry_at = None;
                tracing::debug!(component = "kube-proxy", kind = ?s.kind, services = s.services, written = s.written, bytes = s.bytes, duration_ms = s.duration.as_secs_f64() * 1e3, "synced nftables rules");
            }
            Err(e) => {
                backoff = (backoff * 2).clamp(Duration::from_secs(1), Duration::from_secs(30));
                retry_at = Some(Instant::now() + backoff);
                tracing::warn!(component = "kube-proxy", table = %proxier.params.table, error = %e, retry_in_s = backoff.as_secs(), "syncing nftables rules failed; will recreate the table on retry (check that nft works and nothing else edits this table)");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ServicePort as ApiPort, ServiceSpec};
    use kube::api::ObjectMeta;

    fn svc(name: &str, ip: &str) -> Service {
        Service {
            metadata: ObjectMeta { namespace: Some("default".into()), name: Some(name.into()), ..Default::default() },
            spec: Some(ServiceSpec {
                cluster_ip: Some(ip.into()),
                ports: Some(vec![ApiPort { port: 80, ..Default::default() }]),
                ..Default::default()
            }),
            status: None,
        }
    }

    #[test]
    fn a_relist_drops_objects_the_new_list_lacks() {
        let params =
            Params { table: "t".into(), node_name: "n".into(), node_ips: vec![], cluster_cidr: "10.42.0.0/16".into() };
        let mut p = Proxier::new(params, Runner::default(), Duration::from_secs(30));
        let (mut sl, mut el) = (Relist::default(), Relist::default());
        for m in [
            Msg::Svc(Box::new(Event::Init)),
            Msg::Svc(Box::new(Event::InitApply(svc("a", "10.43.0.1")))),
            Msg::Svc(Box::new(Event::InitApply(svc("b", "10.43.0.2")))),
            Msg::Svc(Box::new(Event::InitDone)),
        ] {
            handle(&mut p, m, &mut sl, &mut el);
        }
        assert!(sl.synced && !el.synced);
        assert_eq!(p.model.service_count(), 2);
        p.model.take_dirty();
        // The watch restarts; "b" was deleted meanwhile.
        for m in [
            Msg::Svc(Box::new(Event::Init)),
            Msg::Svc(Box::new(Event::InitApply(svc("a", "10.43.0.1")))),
            Msg::Svc(Box::new(Event::InitDone)),
        ] {
            handle(&mut p, m, &mut sl, &mut el);
        }
        assert_eq!(p.model.service_keys(), vec![ServiceKey::new("default", "a")]);
        assert_eq!(p.model.take_dirty(), [ServiceKey::new("default", "b")].into());
        handle(&mut p, Msg::Svc(Box::new(Event::Delete(svc("a", "10.43.0.1")))), &mut sl, &mut el);
        assert_eq!(p.model.service_count(), 0);
    }

    #[test]
    fn a_taken_metrics_address_is_not_fatal() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = taken.local_addr().unwrap();
            let m = Arc::new(metrics::Metrics::default());
            assert!(start_metrics(Some(addr), m.clone()).await.is_none());
            assert!(start_metrics(None, m.clone()).await.is_none());
            drop(taken);
            let task = start_metrics(Some(addr), m).await.expect("a free address is served");
            task.abort();
        });
    }

    #[test]
    fn table_names_are_checked() {
        assert!(check_table_name("rkube-proxy_1").is_ok());
        assert!(check_table_name("1x").is_err());
        assert!(check_table_name("a b").is_err());
        assert!(check_table_name("").is_err());
    }
}
