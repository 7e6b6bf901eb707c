//! The controller manager: which controllers run (`--controllers`), the
//! leader election that lets one manager among several servers run them,
//! and each controller's own client.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::client::{self, ApiEndpoint};
use crate::credentials::Credentials;
use crate::csr::SigningCa;
use crate::leader::{LeaderElector, Timing};
use crate::runtime::{Ctx, Stop};
use crate::{
    bootstrapsigner, clusterroleaggregation, csrapproving, csrsigning, rootcacertpublisher, serviceaccount,
    tokencleaner,
};

const COMPONENT: &str = "kube-controller-manager";

/// What the controllers need from the server's configuration.
pub struct Settings {
    /// The cluster CA certificate (PEM): published in `kube-root-ca.crt`
    /// and in `cluster-info`.
    pub ca_pem: String,
    /// The CA that signs approved CSRs (none: csrsigning issues nothing).
    pub signing_ca: Option<Arc<SigningCa>>,
    /// The API server URL joining nodes should use, published in `cluster-info`.
    pub cluster_info_server: String,
    /// Longest certificate lifetime csrsigning issues (`--cluster-signing-duration`).
    pub signing_duration: Duration,
}

/// One controller the manager knows.
pub struct ControllerInfo {
    /// Its name for `--controllers`, also its log component.
    pub name: &'static str,
    /// The older name also accepted.
    pub alias: &'static str,
    /// The kube-system ServiceAccount it runs as.
    pub service_account: &'static str,
    /// Whether `*` includes it (upstream: not for the bootstrap-token controllers).
    pub enabled_by_default: bool,
}

/// Every controller, in start order.
pub const CONTROLLERS: &[ControllerInfo] = &[
    info(serviceaccount::NAME, serviceaccount::ALIAS, serviceaccount::SERVICE_ACCOUNT, true),
    info(rootcacertpublisher::NAME, rootcacertpublisher::ALIAS, rootcacertpublisher::SERVICE_ACCOUNT, true),
    info(tokencleaner::NAME, tokencleaner::ALIAS, tokencleaner::SERVICE_ACCOUNT, false),
    info(bootstrapsigner::NAME, bootstrapsigner::ALIAS, bootstrapsigner::SERVICE_ACCOUNT, false),
    info(csrapproving::NAME, csrapproving::ALIAS, csrapproving::SERVICE_ACCOUNT, true),
    info(csrsigning::NAME, csrsigning::ALIAS, csrsigning::SERVICE_ACCOUNT, true),
    info(clusterroleaggregation::NAME, clusterroleaggregation::ALIAS, clusterroleaggregation::SERVICE_ACCOUNT, true),
];

const fn info(name: &'static str, alias: &'static str, sa: &'static str, on: bool) -> ControllerInfo {
    ControllerInfo { name, alias, service_account: sa, enabled_by_default: on }
}

/// rkube's default `--controllers`: everything, plus the two bootstrap-token
/// controllers node join needs (what kubeadm passes).
pub const DEFAULT_CONTROLLERS: &str = "*,bootstrap-signer-controller,token-cleaner-controller";

/// The parsed `--controllers` list (upstream semantics: `*` = the
/// controllers on by default, `name` enables, `-name` disables; a
/// disabling entry wins; names or their older aliases).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControllerSelection(Vec<String>);

impl ControllerSelection {
    /// Parses a comma-separated list. Errors name an unknown controller as
    /// upstream does.
    pub fn parse(s: &str) -> Result<Self, String> {
        let items: Vec<String> = s.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect();
        for item in &items {
            let name = item.strip_prefix('-').unwrap_or(item);
            if name != "*" && !CONTROLLERS.iter().any(|c| c.name == name || c.alias == name) {
                let known: Vec<&str> = CONTROLLERS.iter().map(|c| c.name).collect();
                return Err(format!("{item:?} is not in the list of known controllers: {}", known.join(", ")));
            }
        }
        Ok(ControllerSelection(items))
    }

    /// Whether the controller runs.
    pub fn is_enabled(&self, c: &ControllerInfo) -> bool {
        let named = |n: &str| n == c.name || n == c.alias;
        if self.0.iter().any(|i| i.strip_prefix('-').is_some_and(named)) {
            return false;
        }
        if self.0.iter().any(|i| named(i)) {
            return true;
        }
        self.0.iter().any(|i| i == "*") && c.enabled_by_default
    }
}

impl Default for ControllerSelection {
    fn default() -> Self {
        Self::parse(DEFAULT_CONTROLLERS).expect("the default list is valid")
    }
}

/// How to start a manager.
pub struct ManagerConfig {
    /// The API server (loopback) and its CA.
    pub endpoint: ApiEndpoint,
    /// The manager's own client certificate and key (PEM) for
    /// `system:kube-controller-manager`.
    pub manager_cert_pem: String,
    /// Its key.
    pub manager_key_pem: String,
    /// Which controllers run.
    pub controllers: ControllerSelection,
    /// This manager's identity in the lease (upstream `<hostname>_<uuid>`).
    pub identity: String,
    /// Election timing.
    pub timing: Timing,
    /// What the controllers need.
    pub settings: Arc<Settings>,
}

/// A lease identity as upstream's: `<hostname>_<random uuid-like hex>`.
pub fn default_identity() -> String {
    use ring::rand::SecureRandom;
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default();
    let mut b = [0u8; 16];
    ring::rand::SystemRandom::new().fill(&mut b).expect("the system RNG works");
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}_{}-{}-{}-{}-{}",
        if host.is_empty() { "rkube" } else { &host },
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// Runs the manager until `shutdown` completes: campaign for the lease,
/// run the enabled controllers while leader, stop them when leadership is
/// lost (then campaign again) or at shutdown (then release the lease).
///
/// Errors only when the manager's client cannot be built.
pub async fn run(config: ManagerConfig, shutdown: impl Future<Output = ()>) -> Result<(), String> {
    let manager = client::with_certificate(&config.endpoint, &config.manager_cert_pem, &config.manager_key_pem)
        .map_err(|e| e.to_string())?;
    let elector = LeaderElector::new(manager.clone(), "kube-controller-manager", config.identity.clone(), config.timing);
    let enabled: Vec<&ControllerInfo> = CONTROLLERS.iter().filter(|c| config.controllers.is_enabled(c)).collect();
    tracing::info!(component = COMPONENT, controllers = ?enabled.iter().map(|c| c.name).collect::<Vec<_>>(), "controller manager starting");
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = elector.acquire() => {}
            _ = &mut shutdown => return Ok(()),
        }
        let credentials = Arc::new(Credentials::new(config.endpoint.clone(), manager.clone()));
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let mut tasks = Vec::new();
        for c in &enabled {
            let credentials = credentials.clone();
            let settings = config.settings.clone();
            let stop = stop_rx.clone();
            let name = c.name;
            let sa = c.service_account;
            let reader = manager.clone();
            tasks.push(tokio::spawn(async move { start(name, sa, credentials, reader, settings, stop).await }));
        }
        let done = tokio::select! {
            _ = elector.hold() => false,
            _ = &mut shutdown => true,
        };
        let _ = stop_tx.send(true);
        for t in tasks {
            if tokio::time::timeout(Duration::from_secs(5), t).await.is_err() {
                tracing::warn!(component = COMPONENT, "a controller did not stop within 5s");
            }
        }
        drop(credentials);
        if done {
            elector.release().await;
            tracing::info!(component = COMPONENT, "controller manager stopped");
            return Ok(());
        }
    }
}

/// Gets the controller's client (retrying until the API lets the manager
/// set up its ServiceAccount and token), then runs it until `stop`.
async fn start(
    name: &'static str,
    sa: &'static str,
    credentials: Arc<Credentials>,
    reader: kube::Client,
    settings: Arc<Settings>,
    stop: Stop,
) {
    let mut delay = Duration::from_millis(200);
    let client = loop {
        if *stop.borrow() {
            return;
        }
        match credentials.client_for(sa).await {
            Ok(c) => break c,
            Err(e) => {
                tracing::warn!(component = name, service_account = sa, error = %e, "cannot get the controller's credentials; retrying");
                let mut s = stop.clone();
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = s.wait_for(|v| *v) => return,
                }
                delay = (delay * 2).min(Duration::from_secs(30));
            }
        }
    };
    let ctx = Ctx::new(name, client, reader, settings);
    match name {
        serviceaccount::NAME => serviceaccount::run(ctx, stop).await,
        rootcacertpublisher::NAME => rootcacertpublisher::run(ctx, stop).await,
        tokencleaner::NAME => tokencleaner::run(ctx, stop).await,
        bootstrapsigner::NAME => bootstrapsigner::run(ctx, stop).await,
        csrapproving::NAME => csrapproving::run(ctx, stop).await,
        csrsigning::NAME => csrsigning::run(ctx, stop).await,
        clusterroleaggregation::NAME => clusterroleaggregation::run(ctx, stop).await,
        other => tracing::error!(component = COMPONENT, controller = other, "no such controller"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enabled(list: &str) -> Vec<&'static str> {
        let sel = ControllerSelection::parse(list).unwrap();
        CONTROLLERS.iter().filter(|c| sel.is_enabled(c)).map(|c| c.alias).collect()
    }

    #[test]
    fn controllers_flag_follows_upstream_semantics() {
        assert_eq!(
            enabled("*"),
            ["serviceaccount", "root-ca-cert-publisher", "csrapproving", "csrsigning", "clusterrole-aggregation"]
        );
        assert_eq!(
            enabled("*,-csrsigning,tokencleaner"),
            ["serviceaccount", "root-ca-cert-publisher", "tokencleaner", "csrapproving", "clusterrole-aggregation"]
        );
        assert_eq!(enabled("serviceaccount-controller"), ["serviceaccount"]);
        assert_eq!(enabled("-serviceaccount,serviceaccount"), Vec::<&str>::new());
        assert_eq!(enabled(DEFAULT_CONTROLLERS).len(), CONTROLLERS.len());
        let err = ControllerSelection::parse("*,nope").unwrap_err();
        assert!(err.starts_with("\"nope\" is not in the list of known controllers"), "{err}");
    }
}
