//! The controller manager: which controllers run (`--controllers`), the
//! leader election that lets one manager among several servers run them,
//! and each controller's own client.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rkube_apimachinery::validation;

use crate::client::{self, ApiEndpoint};
use crate::credentials::Credentials;
use crate::csr::SigningCa;
use crate::leader::{LeaderElector, Timing};
use crate::runtime::{Ctx, Stop};
use crate::{
    bootstrapsigner, clusterroleaggregation, cronjob, csrapproving, csrsigning, daemonset, deployment, disruption,
    endpoints, endpointslice, endpointslicemirroring, garbagecollector, horizontalpodautoscaler, job, namespace,
    nodeipam, nodelifecycle, persistentvolume, podgc, pvcprotection, pvprotection, replicaset, resourcequota,
    rootcacertpublisher, serviceaccount, serviceaccounttoken, servicelb, statefulset, tainteviction, tokencleaner,
    ttlafterfinished,
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
    /// The service-account signing key (upstream's
    /// `--service-account-private-key-file`), the one the API server
    /// verifies tokens with; none: the legacy token controller stays off.
    pub service_account_key: Option<Arc<rkube_pki::jws::SigningKey>>,
    /// PodGC's threshold and timers (`--terminated-pod-gc-threshold`).
    pub podgc: podgc::PodGcSettings,
    /// The node controllers' timers, rates and pod ranges (node lifecycle, taint eviction, node IPAM).
    pub node: nodelifecycle::NodeSettings,
    /// Where the built-in local-path provisioner puts volumes
    /// (`<data-dir>/storage`; default [`persistentvolume::provisioner::DEFAULT_STORAGE_ROOT`]).
    pub storage_root: String,
    /// The horizontal pod autoscaler's timers and tolerance
    /// (`--horizontal-pod-autoscaler-*`).
    pub hpa: horizontalpodautoscaler::HpaSettings,
    /// Most endpoints the EndpointSlice controller puts in one slice
    /// (`--max-endpoints-per-slice`, 1–1000; upstream's default 100).
    pub max_endpoints_per_slice: usize,
    /// The ResourceQuota controller's full resync (`--resource-quota-sync-period`, 5 min).
    pub resource_quota_sync_period: Duration,
}

/// One controller the manager knows.
pub struct ControllerInfo {
    /// Its name for `--controllers`, also its log component.
    pub name: &'static str,
    /// The older name also accepted.
    pub alias: &'static str,
    /// The kube-system ServiceAccount it runs as; empty: the manager's own
    /// credentials (upstream's root client builder).
    pub service_account: &'static str,
    /// Whether `*` includes it (upstream: not for the bootstrap-token controllers).
    pub enabled_by_default: bool,
}

/// Every controller, in start order.
pub const CONTROLLERS: &[ControllerInfo] = &[
    // First, as upstream: it mints the credentials others may need.
    info(serviceaccounttoken::NAME, serviceaccounttoken::ALIAS, serviceaccounttoken::SERVICE_ACCOUNT, true),
    info(serviceaccount::NAME, serviceaccount::ALIAS, serviceaccount::SERVICE_ACCOUNT, true),
    info(rootcacertpublisher::NAME, rootcacertpublisher::ALIAS, rootcacertpublisher::SERVICE_ACCOUNT, true),
    info(tokencleaner::NAME, tokencleaner::ALIAS, tokencleaner::SERVICE_ACCOUNT, false),
    info(bootstrapsigner::NAME, bootstrapsigner::ALIAS, bootstrapsigner::SERVICE_ACCOUNT, false),
    info(csrapproving::NAME, csrapproving::ALIAS, csrapproving::SERVICE_ACCOUNT, true),
    info(csrsigning::NAME, csrsigning::ALIAS, csrsigning::SERVICE_ACCOUNT, true),
    info(clusterroleaggregation::NAME, clusterroleaggregation::ALIAS, clusterroleaggregation::SERVICE_ACCOUNT, true),
    info(podgc::NAME, podgc::ALIAS, podgc::SERVICE_ACCOUNT, true),
    info(endpoints::NAME, endpoints::ALIAS, endpoints::SERVICE_ACCOUNT, true),
    info(endpointslice::NAME, endpointslice::ALIAS, endpointslice::SERVICE_ACCOUNT, true),
    info(endpointslicemirroring::NAME, endpointslicemirroring::ALIAS, endpointslicemirroring::SERVICE_ACCOUNT, true),
    info(namespace::NAME, namespace::ALIAS, namespace::SERVICE_ACCOUNT, true),
    info(garbagecollector::NAME, garbagecollector::ALIAS, garbagecollector::SERVICE_ACCOUNT, true),
    info(replicaset::NAME, replicaset::ALIAS, replicaset::SERVICE_ACCOUNT, true),
    info(replicaset::RC_NAME, replicaset::RC_ALIAS, replicaset::RC_SERVICE_ACCOUNT, true),
    info(deployment::NAME, deployment::ALIAS, deployment::SERVICE_ACCOUNT, true),
    info(statefulset::NAME, statefulset::ALIAS, statefulset::SERVICE_ACCOUNT, true),
    info(daemonset::NAME, daemonset::ALIAS, daemonset::SERVICE_ACCOUNT, true),
    info(job::NAME, job::ALIAS, job::SERVICE_ACCOUNT, true),
    info(cronjob::NAME, cronjob::ALIAS, cronjob::SERVICE_ACCOUNT, true),
    info(ttlafterfinished::NAME, ttlafterfinished::ALIAS, ttlafterfinished::SERVICE_ACCOUNT, true),
    info(nodelifecycle::NAME, nodelifecycle::ALIAS, nodelifecycle::SERVICE_ACCOUNT, true),
    info(tainteviction::NAME, tainteviction::ALIAS, tainteviction::SERVICE_ACCOUNT, true),
    info(nodeipam::NAME, nodeipam::ALIAS, nodeipam::SERVICE_ACCOUNT, true),
    info(servicelb::NAME, servicelb::ALIAS, servicelb::SERVICE_ACCOUNT, true),
    info(persistentvolume::NAME, persistentvolume::ALIAS, persistentvolume::SERVICE_ACCOUNT, true),
    info(pvcprotection::NAME, pvcprotection::ALIAS, pvcprotection::SERVICE_ACCOUNT, true),
    info(pvprotection::NAME, pvprotection::ALIAS, pvprotection::SERVICE_ACCOUNT, true),
    info(resourcequota::NAME, resourcequota::ALIAS, resourcequota::SERVICE_ACCOUNT, true),
    info(disruption::NAME, disruption::ALIAS, disruption::SERVICE_ACCOUNT, true),
    info(horizontalpodautoscaler::NAME, horizontalpodautoscaler::ALIAS, horizontalpodautoscaler::SERVICE_ACCOUNT, true),
];

const fn info(name: &'static str, alias: &'static str, sa: &'static str, on: bool) -> ControllerInfo {
    ControllerInfo { name, alias, service_account: sa, enabled_by_default: on }
}

/// rkube's default `--controllers`: everything, plus the two bootstrap-token
/// controllers node join needs (what kubeadm passes).
pub const DEFAULT_CONTROLLERS: &str = "*,bootstrap-signer-controller,token-cleaner-controller";

/// The parsed `--controllers` list, upstream's semantics: `*` = the
/// controllers on by default, `name` enables, `-name` disables; names or
/// their older aliases, kept canonical; the first entry naming a
/// controller decides (upstream's `IsControllerEnabled`). Every name
/// upstream knows is accepted ([`crate::known`]); those rkube does not
/// implement yet simply do not run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControllerSelection(Vec<String>);

impl ControllerSelection {
    /// Parses a comma-separated list. A name upstream does not know is
    /// refused with upstream's message (`"<name>" is not in the list of
    /// known controllers`, the name without its `-`).
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut items = Vec::new();
        for item in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
            if item == "*" {
                items.push(item.to_string());
                continue;
            }
            let (minus, name) = match item.strip_prefix('-') {
                Some(name) => ("-", name),
                None => ("", item),
            };
            let canonical = crate::known::canonical(name)
                .ok_or_else(|| format!("{} is not in the list of known controllers", validation::go_quote(name)))?;
            items.push(format!("{minus}{canonical}"));
        }
        Ok(ControllerSelection(items))
    }

    /// Whether the controller runs.
    pub fn is_enabled(&self, c: &ControllerInfo) -> bool {
        for item in &self.0 {
            if item == c.name {
                return true;
            }
            if item.strip_prefix('-') == Some(c.name) {
                return false;
            }
        }
        self.0.iter().any(|i| i == "*") && c.enabled_by_default
    }

    /// The controllers the list names (enabling or disabling) that rkube
    /// does not implement yet, canonical, in list order.
    pub fn not_implemented(&self) -> Vec<&str> {
        let mut out = Vec::new();
        for item in &self.0 {
            let name = item.strip_prefix('-').unwrap_or(item);
            if name != "*" && !CONTROLLERS.iter().any(|c| c.name == name) && !out.contains(&name) {
                out.push(name);
            }
        }
        out
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

pub use rkube_client::leader::default_identity;

/// Runs the manager until `shutdown` completes: campaign for the lease,
/// run the enabled controllers while leader, stop them when leadership is
/// lost (then campaign again) or at shutdown (then release the lease).
///
/// Errors only when the manager's client cannot be built.
pub async fn run(config: ManagerConfig, shutdown: impl Future<Output = ()>) -> Result<(), String> {
    let manager = client::with_certificate(&config.endpoint, &config.manager_cert_pem, &config.manager_key_pem)
        .map_err(|e| e.to_string())?;
    let elector =
        LeaderElector::new(manager.clone(), "kube-controller-manager", config.identity.clone(), config.timing);
    let enabled: Vec<&ControllerInfo> = CONTROLLERS.iter().filter(|c| config.controllers.is_enabled(c)).collect();
    let missing = config.controllers.not_implemented();
    if !missing.is_empty() {
        tracing::warn!(component = COMPONENT, controllers = ?missing, "not implemented in rkube yet");
    }
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
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        for (c, t) in enabled.iter().zip(tasks) {
            if tokio::time::timeout_at(deadline, t).await.is_err() {
                tracing::warn!(
                    component = COMPONENT,
                    controller = c.name,
                    "the {} controller did not stop within 5s; leaving it",
                    c.name
                );
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
        if sa.is_empty() {
            break reader.clone();
        }
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
        serviceaccounttoken::NAME => serviceaccounttoken::run(ctx, stop).await,
        serviceaccount::NAME => serviceaccount::run(ctx, stop).await,
        rootcacertpublisher::NAME => rootcacertpublisher::run(ctx, stop).await,
        tokencleaner::NAME => tokencleaner::run(ctx, stop).await,
        bootstrapsigner::NAME => bootstrapsigner::run(ctx, stop).await,
        csrapproving::NAME => csrapproving::run(ctx, stop).await,
        csrsigning::NAME => csrsigning::run(ctx, stop).await,
        clusterroleaggregation::NAME => clusterroleaggregation::run(ctx, stop).await,
        podgc::NAME => podgc::run(ctx, stop).await,
        endpoints::NAME => endpoints::run(ctx, stop).await,
        endpointslice::NAME => endpointslice::run(ctx, stop).await,
        endpointslicemirroring::NAME => endpointslicemirroring::run(ctx, stop).await,
        namespace::NAME => namespace::run(ctx, stop).await,
        garbagecollector::NAME => garbagecollector::run(ctx, stop).await,
        replicaset::NAME => replicaset::run(ctx, stop).await,
        deployment::NAME => deployment::run(ctx, stop).await,
        statefulset::NAME => statefulset::run(ctx, stop).await,
        daemonset::NAME => daemonset::run(ctx, stop).await,
        replicaset::RC_NAME => replicaset::run_rc(ctx, stop).await,
        job::NAME => job::run(ctx, stop).await,
        cronjob::NAME => cronjob::run(ctx, stop).await,
        ttlafterfinished::NAME => ttlafterfinished::run(ctx, stop).await,
        nodelifecycle::NAME => nodelifecycle::run(ctx, stop).await,
        tainteviction::NAME => tainteviction::run(ctx, stop).await,
        nodeipam::NAME => nodeipam::run(ctx, stop).await,
        servicelb::NAME => servicelb::run(ctx, stop).await,
        persistentvolume::NAME => persistentvolume::run(ctx, stop).await,
        pvcprotection::NAME => pvcprotection::run(ctx, stop).await,
        pvprotection::NAME => pvprotection::run(ctx, stop).await,
        resourcequota::NAME => resourcequota::run(ctx, stop).await,
        disruption::NAME => disruption::run(ctx, stop).await,
        horizontalpodautoscaler::NAME => horizontalpodautoscaler::run(ctx, stop).await,
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
        // `*`: every controller except the two bootstrap-token ones, which
        // upstream leaves off by default.
        let all = enabled("*");
        assert_eq!(all.len(), CONTROLLERS.len() - 2);
        assert!(!all.contains(&"tokencleaner") && !all.contains(&"bootstrapsigner"));
        for alias in ["serviceaccount", "replicaset", "deployment", "garbagecollector", "namespace", "nodelifecycle"] {
            assert!(all.contains(&alias), "{alias} is on by default");
        }
        let some = enabled("*,-csrsigning,tokencleaner,-serviceaccount-token-controller");
        assert!(some.contains(&"tokencleaner"));
        assert!(!some.contains(&"csrsigning") && !some.contains(&"serviceaccount-token"));
        assert_eq!(some.len(), all.len() - 1);
        assert_eq!(enabled("serviceaccount-controller"), ["serviceaccount"]);
        // The first entry naming a controller decides, as upstream's IsControllerEnabled.
        assert_eq!(enabled("-serviceaccount,serviceaccount"), Vec::<&str>::new());
        assert_eq!(enabled("serviceaccount,-serviceaccount-controller"), ["serviceaccount"]);
        assert_eq!(enabled(DEFAULT_CONTROLLERS).len(), CONTROLLERS.len());
    }

    #[test]
    fn every_upstream_controller_name_is_accepted_and_unknown_ones_refused_as_upstream() {
        // Upstream controllers rkube does not run yet are accepted and reported.
        let sel = ControllerSelection::parse("*,-cloud-node-lifecycle-controller").unwrap();
        assert_eq!(sel.not_implemented(), ["cloud-node-lifecycle-controller"]);
        assert_eq!(enabled("*,-cloud-node-lifecycle-controller").len(), enabled("*").len());
        let sel = ControllerSelection::parse("-route,podgc,ttl,route").unwrap();
        assert_eq!(sel.not_implemented(), ["node-route-controller", "ttl-controller"]);
        assert_eq!(ControllerSelection::parse("*").unwrap().not_implemented(), Vec::<&str>::new());
        for (name, alias) in crate::known::UPSTREAM_CONTROLLERS {
            ControllerSelection::parse(name).unwrap();
            ControllerSelection::parse(&format!("-{name}")).unwrap();
            if !alias.is_empty() {
                ControllerSelection::parse(alias).unwrap();
            }
        }
        // Every controller rkube runs is an upstream one, under its upstream name and alias.
        for c in CONTROLLERS {
            assert_eq!(crate::known::canonical(c.name), Some(c.name));
            if !c.alias.is_empty() {
                assert_eq!(crate::known::canonical(c.alias), Some(c.name));
            }
        }
        // Upstream's GenericControllerManagerConfigurationOptions.Validate text.
        assert_eq!(
            ControllerSelection::parse("*,nope").unwrap_err(),
            r#""nope" is not in the list of known controllers"#
        );
        assert_eq!(
            ControllerSelection::parse("-notacontroller").unwrap_err(),
            r#""notacontroller" is not in the list of known controllers"#
        );
    }
}
