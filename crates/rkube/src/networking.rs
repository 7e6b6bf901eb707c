//! The network components every node runs beside its kubelet, each a
//! control loop over the API with its own identity (as upstream runs them
//! as separate daemons):
//!
//! - the node network (`rkube-network`, flannel host-gw style): routes to the
//!   other nodes' pod ranges, the cluster-CIDR blackhole, the service-CIDR
//!   dummy device, masquerade — as `system:kube-proxy` (a node may read
//!   only its own Node since upstream's AuthorizeNodeWithSelectors, so,
//!   like flannel with its own account, it reads Nodes through
//!   `system:node-proxier`);
//! - kube-proxy in nftables mode (`rkube-proxy`) — as `system:kube-proxy`;
//! - NetworkPolicy enforcement (`rkube-netpol`) — as `system:kube-proxy`,
//!   with rkube's `rkube:network-policy` role.
//!
//! Every host name they create (nft tables, the dummy device) derives from
//! the data dir ([`HostNames`]), so that several clusters and agents can
//! share one machine; the names are recorded in
//! `<data-dir>/agent/network.json` so that teardown finds them.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, Context};
use rkube_client::client::ApiEndpoint;
use rkube_pki::CertAndKey;
use tokio::sync::oneshot;

use crate::net::Cidr;

/// kube-proxy's full resync period (upstream's `--sync-period`, 30 s).
const PROXY_SYNC_PERIOD: Duration = Duration::from_secs(30);

/// Flags of the node network components, shared by `rkube server` and
/// `rkube agent`.
#[derive(Debug, Clone, clap::Args)]
pub struct NetworkArgs {
    /// Do not run kube-proxy on this node (k3s's --disable-kube-proxy).
    #[arg(long, env = "RKUBE_DISABLE_KUBE_PROXY")]
    pub disable_kube_proxy: bool,

    /// kube-proxy's mode (upstream's --proxy-mode); rkube implements nftables only.
    #[arg(long, value_name = "MODE", default_value = "nftables", value_parser = ["nftables"], env = "RKUBE_PROXY_MODE")]
    pub proxy_mode: String,

    /// Where kube-proxy serves its Prometheus /metrics (upstream's
    /// --metrics-bind-address); port 0 turns the endpoint off.
    #[arg(
        long,
        value_name = "ADDR:PORT",
        default_value = "127.0.0.1:10249",
        env = "RKUBE_KUBE_PROXY_METRICS_BIND_ADDRESS"
    )]
    pub kube_proxy_metrics_bind_address: SocketAddr,

    /// Do not enforce NetworkPolicies on this node (k3s's --disable-network-policy).
    #[arg(long, env = "RKUBE_DISABLE_NETWORK_POLICY")]
    pub disable_network_policy: bool,
}

/// The host objects a node's network components own: nft tables, the
/// service-CIDR dummy device, and the ranges their routes lie in.
pub fn host_names(data_dir: &Path, cluster_cidr: &Cidr, service_cidr: &Cidr) -> rkube_network::HostNames {
    let id = rkube_kubelet::agent::cni::data_dir_id(data_dir);
    let suffix = id.as_ref().map(|id| format!("-{id}")).unwrap_or_default();
    rkube_network::HostNames {
        cluster_cidr: cluster_cidr.to_string(),
        service_cidr: service_cidr.to_string(),
        service_device: id.map_or_else(|| "rkube-svc".to_string(), |id| format!("rs{id}")),
        table: format!("rkube-network{suffix}"),
    }
}

/// kube-proxy's nft table for a data dir.
pub fn proxy_table(data_dir: &Path) -> String {
    table(data_dir, "rkube-proxy")
}

/// The NetworkPolicy nft table for a data dir.
pub fn netpol_table(data_dir: &Path) -> String {
    table(data_dir, "rkube-netpol")
}

fn table(data_dir: &Path, base: &str) -> String {
    match rkube_kubelet::agent::cni::data_dir_id(data_dir) {
        None => base.to_string(),
        Some(id) => format!("{base}-{id}"),
    }
}

/// Everything [`spawn`] needs.
#[derive(Clone)]
pub struct Setup {
    /// The node's data dir (absolute).
    pub data_dir: std::path::PathBuf,
    /// The Node's name.
    pub node_name: String,
    /// The Node's InternalIP.
    pub node_ip: IpAddr,
    /// The cluster's pod range (`--cluster-cidr`).
    pub cluster_cidr: Cidr,
    /// The cluster's Service range (`--service-cidr`).
    pub service_cidr: Cidr,
    /// The flags.
    pub args: NetworkArgs,
    /// The API server.
    pub api: ApiEndpoint,
    /// kube-proxy's client certificate (`system:kube-proxy`).
    pub proxy_credential: CertAndKey,
}

/// Sets the host prerequisites (ip_forward, br_netfilter's
/// bridge-nf-call-iptables, conntrack) and records the host names under the
/// data dir. Err: a prerequisite that cannot be met, with what to do.
pub fn prepare(setup: &Setup) -> anyhow::Result<()> {
    rkube_network::prepare_host().map_err(|e| anyhow!("the node's network prerequisites are not met: {e}"))?;
    let record = HostRecord {
        node_name: setup.node_name.clone(),
        names: host_names(&setup.data_dir, &setup.cluster_cidr, &setup.service_cidr),
        proxy_table: proxy_table(&setup.data_dir),
        netpol_table: netpol_table(&setup.data_dir),
    };
    record.save(&setup.data_dir)
}

/// What `<data-dir>/agent/network.json` records.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct HostRecord {
    node_name: String,
    names: rkube_network::HostNames,
    proxy_table: String,
    netpol_table: String,
}

impl HostRecord {
    fn path(data_dir: &Path) -> std::path::PathBuf {
        data_dir.join("agent").join("network.json")
    }

    fn save(&self, data_dir: &Path) -> anyhow::Result<()> {
        let path = Self::path(data_dir);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let text = serde_json::to_string_pretty(self).expect("the record serializes");
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
    }
}

/// The node name recorded under the data dir, if any.
pub fn recorded_node_name(data_dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(HostRecord::path(data_dir)).ok()?;
    serde_json::from_str::<HostRecord>(&text).ok().map(|r| r.node_name)
}

/// Removes the tables, routes and device recorded in
/// `<data-dir>/agent/network.json` (nothing when there is no record: the
/// node never ran its network). Every step is tried; the first error is
/// returned.
pub fn teardown(data_dir: &Path) -> anyhow::Result<()> {
    let path = HostRecord::path(data_dir);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(anyhow!("cannot read {}: {e}", path.display())),
    };
    let record: HostRecord =
        serde_json::from_str(&text).with_context(|| format!("{} is not a network record", path.display()))?;
    let results = [
        rkube_proxy::cleanup(&record.proxy_table).map_err(|e| anyhow!("kube-proxy table {}: {e}", record.proxy_table)),
        rkube_netpol::cleanup(&record.netpol_table)
            .map_err(|e| anyhow!("NetworkPolicy table {}: {e}", record.netpol_table)),
        rkube_network::cleanup(&record.names).map_err(|e| anyhow!("node network: {e}")),
    ];
    tracing::info!(
        component = "rkube-killall",
        tables = ?[&record.proxy_table, &record.netpol_table, &record.names.table],
        device = %record.names.service_device,
        "removed the node network"
    );
    results.into_iter().collect::<anyhow::Result<Vec<()>>>().map(|_| ())
}

/// Running (or waiting) network components.
pub struct Handle {
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl Handle {
    /// Stops the loops (at most 10 s). The rules and routes stay: pods keep
    /// their network while rkube restarts, as they keep running.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let _ = tokio::time::timeout(Duration::from_secs(10), self.task).await;
    }
}

/// Once `ready` says the API server can be used (false: give up), starts
/// the node network, kube-proxy (unless disabled) and NetworkPolicy
/// enforcement (unless disabled) until [`Handle::stop`]. A component whose
/// client cannot be built is logged and left out.
pub fn spawn(setup: Setup, ready: impl std::future::Future<Output = bool> + Send + 'static) -> Handle {
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let mut stopped = stopped;
        tokio::select! {
            ok = ready => if !ok { return },
            _ = &mut stopped => return,
        }
        let mut running = Components::default();
        running.start_all(&setup);
        let _ = stopped.await;
        running.stop_all().await;
    });
    Handle { stop, task }
}

/// The started components' stop signals and tasks.
#[derive(Default)]
struct Components {
    stop: Vec<oneshot::Sender<()>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Components {
    fn start_all(&mut self, setup: &Setup) {
        let client = |cred: &CertAndKey, who: &str| match rkube_client::client::with_certificate(
            &setup.api,
            &cred.cert_pem,
            &cred.key_pem,
        ) {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::error!(component = "rkube-agent", "cannot build {who}'s API client: {e}");
                None
            }
        };
        if let Some(client) = client(&setup.proxy_credential, "the node network") {
            let config = rkube_network::NodeNetworkConfig {
                client,
                node_name: setup.node_name.clone(),
                node_ip: setup.node_ip,
                bridge: rkube_kubelet::agent::cni::bridge_name(&setup.data_dir),
                names: host_names(&setup.data_dir, &setup.cluster_cidr, &setup.service_cidr),
            };
            self.start("rkube-network", |stop| async move {
                rkube_network::run(config, stop).await.map_err(|e| e.to_string())
            });
        }
        if !setup.args.disable_kube_proxy {
            if let Some(client) = client(&setup.proxy_credential, "kube-proxy") {
                let metrics = setup.args.kube_proxy_metrics_bind_address;
                let config = rkube_proxy::ProxyConfig {
                    client,
                    node_name: setup.node_name.clone(),
                    node_ips: vec![setup.node_ip],
                    cluster_cidr: setup.cluster_cidr.to_string(),
                    table: proxy_table(&setup.data_dir),
                    sync_period: PROXY_SYNC_PERIOD,
                    min_sync_period: Duration::ZERO,
                    metrics_addr: (metrics.port() != 0).then_some(metrics),
                };
                self.start("kube-proxy", |stop| async move {
                    rkube_proxy::run(config, stop).await.map_err(|e| e.to_string())
                });
            }
        }
        if !setup.args.disable_network_policy {
            if let Some(client) = client(&setup.proxy_credential, "NetworkPolicy enforcement") {
                let config = rkube_netpol::NetworkPolicyConfig {
                    client,
                    node_name: setup.node_name.clone(),
                    table: netpol_table(&setup.data_dir),
                };
                self.start("network-policy", |stop| async move {
                    rkube_netpol::run(config, stop).await.map_err(|e| e.to_string())
                });
            }
        }
    }

    fn start<F, Fut>(&mut self, component: &'static str, run: F)
    where
        F: FnOnce(futures::future::BoxFuture<'static, ()>) -> Fut,
        Fut: std::future::Future<Output = Result<(), String>> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel::<()>();
        let stop: futures::future::BoxFuture<'static, ()> = Box::pin(async move {
            let _ = rx.await;
        });
        let fut = run(stop);
        self.stop.push(tx);
        self.tasks.push(tokio::spawn(async move {
            if let Err(e) = fut.await {
                tracing::error!(component, "stopped: {e}");
            }
        }));
    }

    async fn stop_all(self) {
        for s in self.stop {
            let _ = s.send(());
        }
        futures::future::join_all(self.tasks).await;
    }
}
