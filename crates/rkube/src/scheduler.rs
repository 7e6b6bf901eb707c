//! The kube-scheduler inside `rkube server`: configured from the server's
//! flags (`--scheduler-config`, `--disable-scheduler`) and PKI, started
//! once the API server is ready, talking to it over loopback HTTPS as
//! `system:kube-scheduler` (a client certificate issued from the cluster
//! CA at every start), stopped before the API server.

use std::time::Duration;

use anyhow::anyhow;
use rkube_apiserver::health::Health;
use rkube_client::client::ApiEndpoint;
use rkube_pki::ClusterPki;
use tokio::sync::oneshot;

use crate::cli::ServerArgs;

/// The scheduler's user name (upstream's kube-scheduler identity).
pub const SCHEDULER_USER: &str = "system:kube-scheduler";

/// What [`spawn`] starts.
pub struct Setup {
    endpoint: ApiEndpoint,
    cert_pem: String,
    key_pem: String,
    config: rkube_scheduler::config::Configuration,
}

/// The scheduler's setup, or `None` with `--disable-scheduler`. Err: the
/// `--scheduler-config` file is unreadable or invalid (the server does not
/// start, as kube-scheduler exits on a bad file).
pub fn scheduler_config(args: &ServerArgs, pki: &ClusterPki, local_url: &str) -> anyhow::Result<Option<Setup>> {
    if args.disable_scheduler {
        return Ok(None);
    }
    let config = match &args.scheduler_config {
        Some(path) => {
            rkube_scheduler::config::Configuration::load(path).map_err(|e| anyhow!("--scheduler-config: {e}"))?
        }
        None => rkube_scheduler::config::Configuration::default(),
    };
    // Plugin args are checked now rather than when the scheduler starts.
    rkube_scheduler::build_profiles(&config, &Default::default()).map_err(|e| anyhow!("--scheduler-config: {e}"))?;
    let cert = rkube_pki::issue_client_certificate(&pki.ca, SCHEDULER_USER, None)
        .map_err(|e| anyhow!("cannot issue the scheduler's client certificate: {e}"))?;
    Ok(Some(Setup {
        endpoint: ApiEndpoint { url: local_url.to_string(), ca_pem: pki.ca.cert_pem.clone() },
        cert_pem: cert.cert_pem,
        key_pem: cert.key_pem,
        config,
    }))
}

/// A running (or waiting) scheduler.
pub struct Handle {
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

/// Starts the scheduler once `/readyz` passes.
pub fn spawn(setup: Setup, health: Health) -> Handle {
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let stopped = async {
            let _ = stopped.await;
        };
        tokio::pin!(stopped);
        if !crate::ready::wait_until_ready(&health, &mut stopped).await {
            return;
        }
        let client = match rkube_client::client::with_certificate(&setup.endpoint, &setup.cert_pem, &setup.key_pem) {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(component = "kube-scheduler", "cannot build the scheduler's client: {e}");
                return;
            }
        };
        let cfg = rkube_scheduler::RunConfig {
            client,
            config: setup.config,
            identity: rkube_client::leader::default_identity(),
            leader_elect: true,
            seed: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64),
        };
        if let Err(e) = rkube_scheduler::run(cfg, stopped).await {
            tracing::error!(component = "kube-scheduler", "{e}");
        }
    });
    Handle { stop, task }
}

impl Handle {
    /// Stops the scheduler and releases its lease (at most 10 s).
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let _ = tokio::time::timeout(Duration::from_secs(10), self.task).await;
    }
}
