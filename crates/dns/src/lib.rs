//! Cluster DNS: an authoritative server for the cluster domain, answering as
//! CoreDNS's kubernetes plugin does in k3s's configuration
//!
//! ```text
//! kubernetes cluster.local in-addr.arpa ip6.arpa {
//!   pods insecure
//!   fallthrough in-addr.arpa ip6.arpa
//!   ttl 5
//! }
//! forward . /etc/resolv.conf
//! ```
//!
//! served by hickory-server on UDP and TCP, fed by informers on Services,
//! EndpointSlices and Namespaces (all namespaces), and published as the
//! Service `kube-system/kube-dns` plus one EndpointSlice per rkube server.
//!
//! - [`index`]: the model and the precomputed name index (rebuilt on every change);
//! - [`lookup`]: the pure query → answer function;
//! - [`server`]: the hickory-server handler and the upstream forwarder;
//! - [`publish`]: the kube-dns Service, this server's EndpointSlice, RBAC.
//!
//! Known differences from CoreDNS + k3s: no `hosts NodeHosts` block (node
//! names do not resolve), no `cache 30` (answers come from the index),
//! `loadbalance` is a rotation of address records; wildcard (`*`/`any`)
//! queries are not answered (CoreDNS dropped them); when an ExternalName
//! target outside the domain cannot be resolved upstream the CNAME is still
//! returned (CoreDNS would return NODATA); `_port._proto` names of an
//! ExternalName service are NXDOMAIN (CoreDNS answers the CNAME).

pub mod index;
pub mod lookup;
pub mod publish;
pub mod server;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::{Api, ResourceExt};
use tracing::{info, warn};

pub use index::{Index, Model, Zone};
pub use lookup::{lookup, Answer};
pub use publish::{ensure_rbac, USER};
pub use server::{serve, IndexCell};

/// Configuration of [`run`].
#[derive(Clone)]
pub struct DnsConfig {
    /// API client; authenticates as [`USER`].
    pub client: kube::Client,
    /// Where to serve, UDP and TCP (the server's advertise address, port 53
    /// by default — `--cluster-dns-port`).
    pub listen: SocketAddr,
    /// The cluster domain, e.g. `cluster.local`.
    pub cluster_domain: String,
    /// The kube-dns Service's ClusterIP (`--cluster-dns`, 10.43.0.10).
    pub service_ip: IpAddr,
    /// This rkube server's identity; names its EndpointSlice (HA: one each).
    pub server_name: String,
    /// The address listed in this server's EndpointSlice endpoint.
    pub advertise_address: IpAddr,
    /// Forwarders for non-cluster names. Empty → the `nameserver` lines of
    /// the host's `/etc/resolv.conf` (see [`upstreams_from_resolv_conf`]).
    pub upstream: Vec<SocketAddr>,
}

/// Errors of [`run`].
#[derive(Debug, thiserror::Error)]
pub enum DnsError {
    /// The listen address could not be bound.
    #[error(
        "cluster DNS cannot listen on {addr} ({proto}): {source}; another DNS server may hold the port (systemd-resolved, dnsmasq) or binding below 1024 needs root/CAP_NET_BIND_SERVICE — choose another port with --cluster-dns-port"
    )]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// "UDP" or "TCP".
        proto: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// The server loop failed.
    #[error("cluster DNS server failed: {0}")]
    Serve(String),
}

/// Upstream resolvers from resolv.conf text: every `nameserver` address on
/// port 53, in order, minus `exclude` (this server's own listen address, so
/// it never forwards to itself — CoreDNS's `loop` plugin would stop there).
///
/// Loopback resolvers such as systemd-resolved's 127.0.0.53 are KEPT:
/// CoreDNS in a pod cannot reach the host's loopback (hence k3s's
/// resolv.conf rewriting), but this server runs in the host's network
/// namespace, where the stub answers.
pub fn upstreams_from_resolv_conf(text: &str, exclude: SocketAddr) -> Vec<SocketAddr> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            (w.next()? == "nameserver").then(|| w.next()).flatten()
        })
        .filter_map(|a| a.split('%').next()?.parse::<IpAddr>().ok())
        .map(|ip| SocketAddr::new(ip, 53))
        .filter(|a| *a != exclude)
        .collect()
}

/// The EndpointSlice name for a server: `kube-dns-<server_name>`, made a DNS
/// subdomain (lower-case, invalid characters → `-`, at most 63 characters).
pub fn endpoint_slice_name(server_name: &str) -> String {
    let mut s: String = format!("kube-dns-{server_name}")
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '-' })
        .collect();
    s.truncate(63);
    s.trim_end_matches(['-', '.']).to_string()
}

/// Runs cluster DNS until `stop` completes: binds UDP+TCP on
/// `config.listen` (a bind failure returns [`DnsError::Bind`] at once),
/// watches Services, EndpointSlices and Namespaces, rebuilds the index on
/// every change (answering SERVFAIL instead of NXDOMAIN until all three
/// listed once), publishes kube-dns and this server's EndpointSlice (retried
/// every 30 s, API errors only logged), and on a clean stop deletes its
/// EndpointSlice.
pub async fn run(config: DnsConfig, stop: impl std::future::Future<Output = ()> + Send) -> Result<(), DnsError> {
    let zone = Zone { domain: config.cluster_domain.clone(), dns_ips: vec![config.service_ip] };
    let cell = IndexCell::new(Index::build(&zone, &Model::default()));
    let (udp, tcp) = server::bind(config.listen).await?;
    let upstream = if config.upstream.is_empty() {
        let text = std::fs::read_to_string("/etc/resolv.conf").unwrap_or_default();
        upstreams_from_resolv_conf(&text, config.listen)
    } else {
        config.upstream.clone()
    };
    info!(component = "cluster-dns", listen = %config.listen, ?upstream, domain = %zone.domain, "serving cluster DNS");

    let informers = tokio::spawn(watch(config.client.clone(), zone, cell.clone()));
    let publisher = tokio::spawn(publish::publish_loop(config.clone()));
    let result = server::serve_on(udp, tcp, cell, upstream, stop).await;
    informers.abort();
    publisher.abort();
    if let Err(e) = publish::unpublish(&config).await {
        warn!(component = "cluster-dns", error = %e, "could not delete this server's kube-dns EndpointSlice");
    }
    result
}

// Events are consumed at once; boxing them would only add an allocation.
#[allow(clippy::large_enum_variant)]
enum Change {
    Service(Event<Service>),
    Slice(Event<EndpointSlice>),
    Namespace(Event<Namespace>),
}

fn key<K: kube::Resource>(o: &K) -> String {
    format!("{}/{}", o.namespace().unwrap_or_default(), o.name_any())
}

/// Applies one watcher event to the model (a relist replaces a kind's
/// objects at `InitDone`); `model.synced` once every kind listed.
fn apply(model: &mut Model, init: &mut Model, synced: &mut [bool; 3], change: Change) {
    match change {
        Change::Service(e) => match e {
            Event::Apply(o) => _ = model.services.insert(key(&o), Arc::new(o)),
            Event::Delete(o) => _ = model.services.remove(&key(&o)),
            Event::Init => init.services.clear(),
            Event::InitApply(o) => _ = init.services.insert(key(&o), Arc::new(o)),
            Event::InitDone => {
                model.services = std::mem::take(&mut init.services);
                synced[0] = true;
            }
        },
        Change::Slice(e) => match e {
            Event::Apply(o) => _ = model.slices.insert(key(&o), Arc::new(o)),
            Event::Delete(o) => _ = model.slices.remove(&key(&o)),
            Event::Init => init.slices.clear(),
            Event::InitApply(o) => _ = init.slices.insert(key(&o), Arc::new(o)),
            Event::InitDone => {
                model.slices = std::mem::take(&mut init.slices);
                synced[1] = true;
            }
        },
        Change::Namespace(e) => match e {
            Event::Apply(o) => _ = model.namespaces.insert(o.name_any()),
            Event::Delete(o) => _ = model.namespaces.remove(&o.name_any()),
            Event::Init => init.namespaces.clear(),
            Event::InitApply(o) => _ = init.namespaces.insert(o.name_any()),
            Event::InitDone => {
                model.namespaces = std::mem::take(&mut init.namespaces);
                synced[2] = true;
            }
        },
    }
    model.synced = synced.iter().all(|s| *s);
}

/// The informers: one merged event stream; after each burst of events
/// (everything already queued) the index is rebuilt once and swapped in.
async fn watch(client: kube::Client, zone: Zone, cell: IndexCell) {
    let cfg = watcher::Config::default();
    let services = watcher::watcher(Api::<Service>::all(client.clone()), cfg.clone())
        .default_backoff()
        .map(|e| e.map(Change::Service));
    let slices = watcher::watcher(Api::<EndpointSlice>::all(client.clone()), cfg.clone())
        .default_backoff()
        .map(|e| e.map(Change::Slice));
    let namespaces =
        watcher::watcher(Api::<Namespace>::all(client), cfg).default_backoff().map(|e| e.map(Change::Namespace));
    let mut events = std::pin::pin!(futures::stream::select(futures::stream::select(services, slices), namespaces));
    let mut model = Model::default();
    let mut init = Model::default();
    let mut synced = [false; 3];
    while let Some(first) = events.next().await {
        let mut next = Some(first);
        while let Some(ev) = next.take() {
            match ev {
                Ok(change) => apply(&mut model, &mut init, &mut synced, change),
                Err(e) => warn!(component = "cluster-dns", error = %e, "watch failed; retrying"),
            }
            next = futures::FutureExt::now_or_never(events.next()).flatten();
        }
        let started = std::time::Instant::now();
        let index = Index::build(&zone, &model);
        tracing::debug!(
            component = "cluster-dns",
            names = index.len(),
            synced = model.synced,
            took_ms = started.elapsed().as_millis() as u64,
            "index rebuilt"
        );
        cell.set(index);
    }
}

#[cfg(test)]
mod tests;
