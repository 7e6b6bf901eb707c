//! The controller manager inside `rkube server`: configured from the
//! server's flags and PKI, started once the API server is ready, talking to
//! it over loopback HTTPS as `system:kube-controller-manager` (and each
//! controller as its own ServiceAccount), stopped before the API server.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use anyhow::anyhow;
use rkube_apiserver::health::Health;
use rkube_controllers::client::ApiEndpoint;
use rkube_controllers::{ManagerConfig, Settings};
use rkube_pki::ClusterPki;
use tokio::sync::oneshot;

use crate::cli::ServerArgs;

/// The manager's user name (upstream's kube-controller-manager identity).
pub const MANAGER_USER: &str = "system:kube-controller-manager";

/// What [`spawn`] starts: the manager, and the admin credentials that
/// apply node join's RBAC objects first (as `kubeadm init` does).
pub struct Setup {
    config: ManagerConfig,
    admin: rkube_pki::CertAndKey,
}

/// The manager's configuration, or `None` with `--disable-controller-manager`.
/// The CA key is read from the data dir's PKI (upstream's
/// `--cluster-signing-key-file`), as is the service-account signing key
/// (`--service-account-private-key-file`); the manager's client
/// certificate is issued from the CA at every start.
pub fn manager_config(
    args: &ServerArgs,
    pki: &ClusterPki,
    advertise_address: IpAddr,
    local_url: &str,
) -> anyhow::Result<Option<Setup>> {
    if args.disable_controller_manager {
        return Ok(None);
    }
    let manager = rkube_pki::issue_client_certificate(&pki.ca, MANAGER_USER, None)
        .map_err(|e| anyhow!("cannot issue the controller manager's client certificate: {e}"))?;
    let signing_ca = rkube_controllers::csr::SigningCa::from_pem(&pki.ca.cert_pem, &pki.ca.key_pem)
        .map_err(|e| anyhow!("{}: {e}", pki.files.ca_key.display()))?;
    // Upstream's --service-account-private-key-file: the key the API server verifies with.
    let sa_key = rkube_pki::jws::SigningKey::from_pkcs8_pem(&pki.service_account_key_pem)
        .map_err(|e| anyhow!("{}: {e}", pki.files.service_account_key.display()))?;
    let config = ManagerConfig {
        endpoint: ApiEndpoint { url: local_url.to_string(), ca_pem: pki.ca.cert_pem.clone() },
        manager_cert_pem: manager.cert_pem,
        manager_key_pem: manager.key_pem,
        controllers: args.controllers.clone(),
        identity: rkube_controllers::manager::default_identity(),
        timing: Default::default(),
        settings: Arc::new(Settings {
            ca_pem: pki.ca.cert_pem.clone(),
            signing_ca: Some(Arc::new(signing_ca)),
            cluster_info_server: format!("https://{}", SocketAddr::new(advertise_address, args.https_port)),
            signing_duration: args.cluster_signing_duration,
            service_account_key: Some(Arc::new(sa_key)),
            podgc: rkube_controllers::podgc::PodGcSettings {
                terminated_pod_gc_threshold: args.terminated_pod_gc_threshold,
                ..Default::default()
            },
            node: rkube_controllers::nodelifecycle::NodeSettings {
                monitor_period: args.node_monitor_period,
                monitor_grace_period: args.node_monitor_grace_period,
                startup_grace_period: args.node_startup_grace_period,
                eviction_rate: args.node_eviction_rate,
                secondary_eviction_rate: args.secondary_node_eviction_rate,
                unhealthy_zone_threshold: args.unhealthy_zone_threshold,
                large_cluster_size_threshold: args.large_cluster_size_threshold,
                cluster_cidr: Some(args.cluster_cidr.to_string()),
                node_cidr_mask_size: args.node_cidr_mask_size,
            },
            storage_root: args.data_dir.join("storage").display().to_string(),
            hpa: rkube_controllers::horizontalpodautoscaler::HpaSettings {
                sync_period: args.horizontal_pod_autoscaler_sync_period,
                tolerance: args.horizontal_pod_autoscaler_tolerance,
                cpu_initialization_period: args.horizontal_pod_autoscaler_cpu_initialization_period,
                initial_readiness_delay: args.horizontal_pod_autoscaler_initial_readiness_delay,
                downscale_stabilization: args.horizontal_pod_autoscaler_downscale_stabilization,
            },
            max_endpoints_per_slice: args.max_endpoints_per_slice,
            resource_quota_sync_period: args.resource_quota_sync_period,
        }),
    };
    Ok(Some(Setup { config, admin: pki.admin.clone() }))
}

/// A running (or waiting) controller manager.
pub struct Handle {
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

/// Starts the manager once `/readyz` passes, after applying node join's
/// RBAC objects (retried until they are in place or the server stops).
pub fn spawn(setup: Setup, health: Health) -> Handle {
    let Setup { config, admin } = setup;
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let stopped = async {
            let _ = stopped.await;
        };
        tokio::pin!(stopped);
        if !crate::ready::wait_until_ready(&health, &mut stopped).await {
            return;
        }
        // k3s's local-storage addon: the default `local-path` StorageClass
        // (admin rights: the binder may only read classes).
        if rkube_controllers::persistentvolume::enabled(&config.controllers) {
            let admin = rkube_controllers::client::with_certificate(&config.endpoint, &admin.cert_pem, &admin.key_pem);
            if let Ok(admin) = admin {
                if let Err(e) = rkube_controllers::persistentvolume::provisioner::ensure_default_class(&admin).await {
                    tracing::warn!(component = "kube-controller-manager", error = %e, "cannot create the StorageClass");
                }
            }
        }
        let admin = rkube_controllers::client::with_certificate(&config.endpoint, &admin.cert_pem, &admin.key_pem);
        match admin {
            Ok(admin) => loop {
                let kubeconfig = rkube_controllers::bootstrapsigner::cluster_info_kubeconfig(
                    &config.settings.cluster_info_server,
                    &config.settings.ca_pem,
                );
                match rkube_controllers::joinpolicy::ensure(&admin, &kubeconfig).await {
                    Ok(()) => break,
                    Err(e) => {
                        tracing::warn!(component = "kube-controller-manager", error = %e, "cannot apply the node-join RBAC objects yet; retrying")
                    }
                }
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                    _ = &mut stopped => return,
                }
            },
            Err(e) => tracing::error!(component = "kube-controller-manager", "cannot build the admin client: {e}"),
        }
        if let Err(e) = rkube_controllers::run(config, stopped).await {
            tracing::error!(component = "kube-controller-manager", "{e}");
        }
    });
    Handle { stop, task }
}

impl Handle {
    /// Stops the controllers and releases the lease (at most 10 s).
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let _ = tokio::time::timeout(Duration::from_secs(10), self.task).await;
    }
}
