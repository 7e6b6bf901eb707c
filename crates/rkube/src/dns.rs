//! Cluster DNS inside `rkube server`: configured from the server's flags
//! (`--cluster-dns`, `--cluster-dns-port`, `--cluster-domain`,
//! `--disable-cluster-dns`), started once the API server is ready, talking
//! to it over loopback HTTPS as `rkube:cluster-dns` (a client certificate
//! issued from the cluster CA at every start), stopped before the API
//! server. Each server answers on its advertise address and publishes
//! itself in the `kube-system/kube-dns` Service's EndpointSlices.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use anyhow::anyhow;
use rkube_client::client::ApiEndpoint;
use rkube_pki::ClusterPki;
use tokio::sync::oneshot;

use crate::cli::ServerArgs;

const COMPONENT: &str = "cluster-dns";

/// What [`spawn`] starts.
pub struct Setup {
    endpoint: ApiEndpoint,
    cert_pem: String,
    key_pem: String,
    listen: SocketAddr,
    cluster_domain: String,
    service_ip: IpAddr,
    server_name: String,
    advertise_address: IpAddr,
}

/// The DNS server's setup, or `None` with `--disable-cluster-dns`.
pub fn dns_config(
    args: &ServerArgs,
    pki: &ClusterPki,
    advertise_address: IpAddr,
    local_url: &str,
) -> anyhow::Result<Option<Setup>> {
    if args.disable_cluster_dns {
        return Ok(None);
    }
    let cert = rkube_pki::issue_client_certificate(&pki.ca, rkube_dns::USER, None)
        .map_err(|e| anyhow!("cannot issue the cluster DNS client certificate: {e}"))?;
    let server_name = args.node_name.clone().unwrap_or_else(rkube_kubelet::agent::registration::default_node_name);
    Ok(Some(Setup {
        endpoint: ApiEndpoint { url: local_url.to_string(), ca_pem: pki.ca.cert_pem.clone() },
        cert_pem: cert.cert_pem,
        key_pem: cert.key_pem,
        listen: SocketAddr::new(advertise_address, args.cluster_dns_port),
        cluster_domain: args.cluster_domain.clone(),
        service_ip: args.cluster_dns.unwrap_or_else(|| crate::cli::default_cluster_dns(&args.service_cidr)),
        server_name,
        advertise_address,
    }))
}

/// A running (or waiting) DNS server.
pub struct Handle {
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

/// Starts the DNS server once `ready` says the API server can be used
/// (false: give up) — after `/readyz` and its RBAC from [`crate::policy`].
pub fn spawn(setup: Setup, ready: impl std::future::Future<Output = bool> + Send + 'static) -> Handle {
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let stopped = async {
            let _ = stopped.await;
        };
        tokio::pin!(stopped);
        tokio::select! {
            ok = ready => if !ok { return },
            _ = &mut stopped => return,
        }
        let client = match rkube_client::client::with_certificate(&setup.endpoint, &setup.cert_pem, &setup.key_pem) {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(component = COMPONENT, "cannot build the DNS server's client: {e}");
                return;
            }
        };
        let config = rkube_dns::DnsConfig {
            client,
            listen: setup.listen,
            cluster_domain: setup.cluster_domain,
            service_ip: setup.service_ip,
            server_name: setup.server_name,
            advertise_address: setup.advertise_address,
            upstream: Vec::new(),
        };
        if let Err(e) = rkube_dns::run(config, stopped).await {
            tracing::error!(component = COMPONENT, "{e}");
        }
    });
    Handle { stop, task }
}

impl Handle {
    /// Stops the DNS server (it withdraws its EndpointSlice; at most 10 s).
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let _ = tokio::time::timeout(Duration::from_secs(10), self.task).await;
    }
}
