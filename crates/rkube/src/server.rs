//! `rkube server`: PKI → datastore → compactor → HTTPS API, then wait for
//! SIGTERM/SIGINT and shut down cleanly.

use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, Context};
use rkube_apiserver::bootstrap::ClusterConfig;
use rkube_apiserver::health::Endpoint;
use rkube_apiserver::storage::ipalloc::ServiceCidr;
use rkube_apiserver::{ApiServer, Config, TlsMaterial};
use rkube_pki::{ClusterPki, PkiFiles, San, ServingNames};
use rkube_store::{DatastoreEndpoint, SharedStore};
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::oneshot;

use crate::cli::{self, ServerArgs};
use crate::net;

const COMPONENT: &str = "rkube";

/// How long in-flight requests get to finish after SIGTERM.
const SHUTDOWN_GRACE: Duration = rkube_apiserver::DEFAULT_SHUTDOWN_GRACE;

/// SIGTERM and SIGINT, registered before anything else so that an early
/// signal is handled rather than killing the process half-way.
struct Signals {
    term: Signal,
    int: Signal,
}

impl Signals {
    fn new() -> anyhow::Result<Self> {
        Ok(Signals {
            term: signal(SignalKind::terminate()).context("cannot install the SIGTERM handler")?,
            int: signal(SignalKind::interrupt()).context("cannot install the SIGINT handler")?,
        })
    }

    async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.int.recv() => "SIGINT",
        }
    }
}

/// Everything `start` brought up.
struct Running {
    server: ApiServer,
    store: SharedStore,
    compactor: tokio::task::JoinHandle<()>,
    kubeconfig: PathBuf,
    controller_manager: Option<crate::controllers::Setup>,
    scheduler: Option<crate::scheduler::Setup>,
    agent: Option<rkube_kubelet::agent::AgentConfig>,
    network: Option<crate::networking::Setup>,
    dns: Option<crate::dns::Setup>,
    /// The local API and the admin credential, for rkube's own RBAC objects.
    admin: (rkube_client::client::ApiEndpoint, rkube_pki::CertAndKey),
}

/// Runs the server until SIGTERM or SIGINT. A second signal during
/// shutdown exits at once with status 1.
pub async fn run(args: ServerArgs) -> anyhow::Result<()> {
    let mut signals = Signals::new()?;
    let running = tokio::select! {
        result = start(args) => result?,
        sig = signals.next() => {
            tracing::info!(component = COMPONENT, "received {sig} during startup; exiting");
            return Ok(());
        }
    };
    let Running { server, store, compactor, kubeconfig, controller_manager, scheduler, agent, network, dns, admin } = running;

    let controller_manager = controller_manager.map(|config| crate::controllers::spawn(config, server.health()));
    let scheduler = scheduler.map(|setup| crate::scheduler::spawn(setup, server.health()));
    let agent = agent.map(|config| {
        let health = server.health();
        rkube_kubelet::agent::spawn(config, async move {
            crate::ready::wait_until_ready(&health, &mut std::future::pending::<()>()).await
        })
    });
    // Cluster DNS and NetworkPolicy enforcement need rkube's own RBAC objects.
    let policy = crate::policy::spawn(admin.0, admin.1, server.health());
    let rbac_limit = Duration::from_secs(10);
    let network = network.map(|setup| {
        let health = server.health();
        let rbac = policy.applied(rbac_limit);
        crate::networking::spawn(setup, async move {
            let ready = crate::ready::wait_until_ready(&health, &mut std::future::pending::<()>()).await;
            rbac.await;
            ready
        })
    });
    let dns = dns.map(|setup| {
        let health = server.health();
        let rbac = policy.applied(rbac_limit);
        crate::dns::spawn(setup, async move {
            let ready = crate::ready::wait_until_ready(&health, &mut std::future::pending::<()>()).await;
            rbac.await;
            ready
        })
    });
    let health = server.health();
    let ready = tokio::spawn(async move {
        let started = std::time::Instant::now();
        let mut last_warning: Option<std::time::Instant> = None;
        loop {
            let report = health.evaluate(Endpoint::Readyz, &[]).await;
            if report.passed() {
                let path = kubeconfig.display();
                tracing::info!(
                    component = COMPONENT,
                    "rkube is ready: kubeconfig written to {path}; try: kubectl --kubeconfig {path} get --raw /readyz"
                );
                return;
            }
            let due = last_warning
                .map_or(started.elapsed() >= Duration::from_secs(5), |t| t.elapsed() >= Duration::from_secs(30));
            if due {
                tracing::warn!(component = COMPONENT, failed = %report.failure_summary(), "not ready yet");
                last_warning = Some(std::time::Instant::now());
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    });

    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let serving = tokio::spawn(server.serve(async {
        let _ = stop_rx.await;
    }));

    let sig = signals.next().await;
    tracing::info!(component = COMPONENT, "received {sig}; shutting down (send it again to exit immediately)");
    tokio::spawn(async move {
        let sig = signals.next().await;
        tracing::error!(component = COMPONENT, "received {sig} again; exiting without finishing the shutdown");
        std::process::exit(1);
    });

    ready.abort();
    policy.task.abort();
    // The agent stops while the API still answers; its containerd and pods keep
    // running (the next start adopts them; `rkube killall` stops them).
    if let Some(agent) = agent {
        agent.stop().await;
    }
    if let Some(network) = network {
        network.stop().await;
    }
    // The DNS server withdraws its EndpointSlice while the API still answers.
    if let Some(dns) = dns {
        dns.stop().await;
    }
    // Controllers stop (and release their lease) while the API still answers.
    if let Some(scheduler) = scheduler {
        scheduler.stop().await;
    }
    if let Some(manager) = controller_manager {
        manager.stop().await;
    }
    let _ = stop_tx.send(());
    if let Err(e) = serving.await {
        tracing::error!(component = COMPONENT, error = %e, "the API server task failed");
    }
    compactor.abort();
    let _ = compactor.await;
    drop(store);
    tracing::info!(component = COMPONENT, "rkube server stopped");
    Ok(())
}

/// PKI, kubeconfigs, datastore, compactor and the bound listener.
async fn start(args: ServerArgs) -> anyhow::Result<Running> {
    let data_dir = std::path::absolute(&args.data_dir)
        .with_context(|| format!("cannot resolve --data-dir {}", args.data_dir.display()))?;
    tracing::info!(component = COMPONENT, version = %cli::version_string(), data_dir = %data_dir.display(), "starting rkube server");
    prepare_data_dir(&data_dir)?;

    // PKI.
    let excluded = [args.cluster_cidr, args.service_cidr];
    let host_addresses = net::host_addresses(&excluded);
    let advertise_address =
        args.advertise_address.unwrap_or_else(|| net::default_advertise_address(args.bind_address, &host_addresses));
    let kubernetes_service_ip = args.service_cidr.nth(1).expect("validated service CIDR has a first address");
    let mut extra = args.tls_san.clone();
    if !args.bind_address.is_unspecified() {
        extra.push(San::Ip(args.bind_address));
    }
    let names = ServingNames {
        advertise_address,
        host_addresses,
        kubernetes_service_ip,
        cluster_domain: args.cluster_domain.clone(),
        extra,
    };
    let cluster_dns = args.cluster_dns.unwrap_or_else(|| cli::default_cluster_dns(&args.service_cidr));
    tracing::info!(
        component = COMPONENT,
        %advertise_address,
        cluster_cidr = %args.cluster_cidr,
        service_cidr = %args.service_cidr,
        %cluster_dns,
        cluster_domain = %args.cluster_domain,
        "cluster network settings"
    );
    let files = PkiFiles::for_data_dir(&data_dir);
    // Joining another server's cluster: its CA and service-account keys first.
    if let (Some(url), Some(token)) = (&args.server, &args.token) {
        crate::controlplane_join::prepare(&args, url, token, &files).await?;
    }
    let pki = ClusterPki::ensure(&files, &names)
        .with_context(|| format!("cannot set up the cluster PKI in {}", files.dir.display()))?;
    // The API server's client towards kubelets (exec/attach sessions).
    let kubelet_client = rkube_apiserver::rest::connect::kubelet::KubeletClient::from_pem(
        &pki.ca.cert_pem,
        &pki.kubelet_client.cert_pem,
        &pki.kubelet_client.key_pem,
    )
    .map_err(|e| anyhow!("{}: {e}", files.kubelet_client_cert.display()))?;

    // Encryption at rest and auditing: bad files stop the start here.
    let (encryption, audit) = security_files(&args)?;

    // Datastore.
    let endpoint = args.datastore_endpoint.clone().unwrap_or_else(|| DatastoreEndpoint::default_for(&data_dir));
    tracing::info!(component = COMPONENT, %endpoint, "opening the datastore");
    let store = rkube_store::open(&endpoint).await.map_err(|e| {
        let hint = match endpoint {
            DatastoreEndpoint::Etcd(_) => "or choose another --datastore-endpoint",
            DatastoreEndpoint::Sqlite(_) => {
                "check the path and its permissions, or choose another --datastore-endpoint"
            }
        };
        anyhow!("cannot open the datastore {endpoint}: {e}; {hint}")
    })?;
    match store.current_revision().await {
        Ok(revision) => tracing::info!(component = COMPONENT, %endpoint, revision, "datastore open"),
        Err(e) => {
            tracing::warn!(component = COMPONENT, %endpoint, error = %e, "datastore opened but does not answer yet; /readyz fails until it does")
        }
    }
    // Without a config every value is still checked for the encrypted-data
    // prefix (upstream's default identity transformer).
    let encryption = encryption.unwrap_or_else(rkube_apiserver::encryption::EncryptionConfig::identity);
    let store = rkube_apiserver::encryption::EncryptedStore::shared(store, encryption);
    let interval = rkube_store::compactor::DEFAULT_COMPACTION_INTERVAL;
    let compactor = rkube_store::spawn_compactor(store.clone(), interval);
    tracing::info!(
        component = COMPONENT,
        interval_seconds = interval.as_secs(),
        "compacting datastore history periodically"
    );

    // HTTPS API.
    let bind = SocketAddr::new(args.bind_address, args.https_port);
    let server = ApiServer::bind(Config {
        bind_address: bind,
        tls: TlsMaterial {
            serving_cert_pem: pki.serving.cert_pem.clone(),
            serving_key_pem: pki.serving.key_pem.clone(),
            client_ca_pem: pki.ca.cert_pem.clone(),
        },
        store: store.clone(),
        shutdown_grace: SHUTDOWN_GRACE,
        cluster: ClusterConfig {
            service_cidr: service_cidr(&args.service_cidr)?,
            event_ttl: args.event_ttl,
            advertise_address,
            advertise_port: args.https_port,
            // The identity Lease derives from the host name; --node-name
            // (when given) tells apart servers sharing one host.
            hostname: args.node_name.clone(),
            service_account: std::sync::Arc::new(
                rkube_apiserver::serviceaccount::TokenIssuer::from_pkcs8_pem(
                    &pki.service_account_key_pem,
                    &args.service_account_issuer,
                )
                .map_err(|e| anyhow!("{}: {e}", files.service_account_key.display()))?,
            ),
            kubelet_client: Some(std::sync::Arc::new(kubelet_client)),
            authenticator: std::sync::Arc::new(authenticator(&args)?),
            audit,
            default_toleration_seconds: rkube_apiserver::admission::tolerations::DefaultTolerationSeconds {
                not_ready: args.default_not_ready_toleration_seconds,
                unreachable: args.default_unreachable_toleration_seconds,
            },
            metric_resolution: args.metric_resolution,
            // What joining servers fetch (GET /rkube/v1/bootstrap/control-plane).
            control_plane_bundle: Some(std::sync::Arc::new(crate::controlplane_join::bundle(&args, &pki))),
        },
        inflight: rkube_apiserver::filters::InflightLimits {
            max_read_only: args.max_requests_inflight,
            max_mutating: args.max_mutating_requests_inflight,
        },
    })
    .await
    .map_err(explain_bind_error)?;

    // Kubeconfigs, written only once this server owns the datastore and
    // the port, so that a start that fails never repoints them.
    let server_url = net::local_server_url(args.bind_address, args.https_port);
    let yaml = pki.admin_kubeconfig(&server_url).to_yaml();
    let admin_kubeconfig = data_dir.join("admin.kubeconfig");
    write_kubeconfig(&admin_kubeconfig, &yaml)?;
    let mut shown_kubeconfig = admin_kubeconfig;
    if let Some(path) = &args.write_kubeconfig {
        let path = std::path::absolute(path)
            .with_context(|| format!("cannot resolve --write-kubeconfig {}", path.display()))?;
        write_kubeconfig(&path, &yaml).context("check the --write-kubeconfig path")?;
        shown_kubeconfig = path;
    }

    let controller_manager = crate::controllers::manager_config(&args, &pki, advertise_address, &server_url)?;

    let scheduler = crate::scheduler::scheduler_config(&args, &pki, &server_url)?;

    let agent = agent_config(&args, &pki, &data_dir, advertise_address, &server_url)?;
    let network = match &agent {
        Some(agent) => network_setup(&args, &pki, agent)?,
        None => None,
    };
    let dns = crate::dns::dns_config(&args, &pki, advertise_address, &server_url)?;

    Ok(Running {
        server,
        store,
        compactor,
        kubeconfig: shown_kubeconfig,
        controller_manager,
        scheduler,
        agent,
        network,
        dns,
        admin: (
            rkube_client::client::ApiEndpoint { url: server_url.clone(), ca_pem: pki.ca.cert_pem.clone() },
            pki.admin.clone(),
        ),
    })
}

/// The in-server node agent's config (`None` with `--disable-agent`): its
/// flags checked, the host checked (swap, root, containerd), and its
/// `system:node:<name>` client certificate issued from the cluster CA.
fn agent_config(
    args: &ServerArgs,
    pki: &ClusterPki,
    data_dir: &Path,
    advertise_address: IpAddr,
    server_url: &str,
) -> anyhow::Result<Option<rkube_kubelet::agent::AgentConfig>> {
    use rkube_kubelet::agent::{identity, preflight, registration, status::Reserved, AgentConfig};
    if args.disable_agent {
        return Ok(None);
    }
    let node_name = args.node_name.clone().unwrap_or_else(registration::default_node_name);
    if node_name.is_empty() {
        return Err(anyhow!("cannot determine the node name from the hostname; set --node-name"));
    }
    let node_labels = registration::parse_node_labels(&args.node_labels).map_err(|e| anyhow!("--node-labels: {e}"))?;
    let taints =
        registration::parse_taints(&args.register_with_taints).map_err(|e| anyhow!("--register-with-taints: {e}"))?;
    let kube_reserved = Reserved::parse(&args.kube_reserved).map_err(|e| anyhow!("--kube-reserved: {e}"))?;
    let system_reserved = Reserved::parse(&args.system_reserved).map_err(|e| anyhow!("--system-reserved: {e}"))?;
    let simulated = args.runtime == rkube_kubelet::containerd::RuntimeKind::Simulated;
    preflight(args.fail_swap_on, args.container_runtime_endpoint.is_none() && !simulated)?;
    let credential = identity::issue(&pki.ca, &node_name, data_dir).map_err(|e| anyhow!(e))?;
    let node_ip = args.node_ip.unwrap_or(advertise_address);
    let serving_credential = rkube_kubelet::server::issue_serving_cert(&pki.ca, &node_name, &[node_ip])
        .map_err(|e| anyhow!("cannot issue the kubelet serving certificate: {e}"))?;
    Ok(Some(AgentConfig {
        data_dir: data_dir.to_path_buf(),
        node_name,
        node_ip,
        node_labels,
        taints,
        kube_reserved,
        system_reserved,
        runtime_endpoint: args.container_runtime_endpoint.clone(),
        runtime: args.runtime,
        control_plane: true,
        kubelet_version: rkube_apimachinery::version::git_version(),
        api: rkube_client::client::ApiEndpoint { url: server_url.to_string(), ca_pem: pki.ca.cert_pem.clone() },
        credential,
        admin_credential: Some(pki.admin.clone()),
        cluster_dns: vec![args.cluster_dns.unwrap_or_else(|| crate::cli::default_cluster_dns(&args.service_cidr))],
        cluster_domain: args.cluster_domain.clone(),
        kubelet_port: args.kubelet_port,
        serving_credential,
        eviction: args.eviction.config()?,
        shutdown: args.shutdown.config()?,
    }))
}

/// The in-server node's network components (`None` for hollow nodes of
/// the simulated runtime, which run no pods): host prerequisites set now,
/// kube-proxy's `system:kube-proxy` certificate issued from the cluster CA.
fn network_setup(
    args: &ServerArgs,
    pki: &ClusterPki,
    agent: &rkube_kubelet::agent::AgentConfig,
) -> anyhow::Result<Option<crate::networking::Setup>> {
    if agent.runtime == rkube_kubelet::containerd::RuntimeKind::Simulated {
        return Ok(None);
    }
    let proxy = rkube_pki::issue_client_certificate(&pki.ca, rkube_controllers::csrapproving::KUBE_PROXY_USER, None)
        .map_err(|e| anyhow!("cannot issue kube-proxy's client certificate: {e}"))?;
    let setup = crate::networking::Setup {
        data_dir: agent.data_dir.clone(),
        node_name: agent.node_name.clone(),
        node_ip: agent.node_ip,
        cluster_cidr: args.cluster_cidr,
        service_cidr: args.service_cidr,
        args: args.network.clone(),
        api: agent.api.clone(),
        proxy_credential: proxy,
    };
    crate::networking::prepare(&setup)?;
    Ok(Some(setup))
}

/// The API server's view of `--service-cidr` (IPv4 only for now).
fn service_cidr(cidr: &crate::net::Cidr) -> anyhow::Result<ServiceCidr> {
    match cidr.network() {
        std::net::IpAddr::V4(network) => Ok(ServiceCidr { network, prefix: 32 - cidr.host_bits() }),
        std::net::IpAddr::V6(_) => {
            Err(anyhow!("--service-cidr {cidr}: IPv6 Service ranges are not supported yet; use an IPv4 range"))
        }
    }
}

/// Creates the data dir and `<data-dir>/server` (mode 0700: it holds the
/// database and the keys).
fn prepare_data_dir(data_dir: &Path) -> anyhow::Result<()> {
    let server_dir = data_dir.join("server");
    std::fs::create_dir_all(&server_dir).with_context(|| {
        format!("cannot create {}; run as root or choose a writable --data-dir", server_dir.display())
    })?;
    std::fs::set_permissions(&server_dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("cannot set mode 0700 on {}", server_dir.display()))?;
    Ok(())
}

fn write_kubeconfig(path: &Path, yaml: &str) -> anyhow::Result<()> {
    let changed = rkube_pki::write_private_file(path, yaml.as_bytes())
        .with_context(|| format!("cannot write the admin kubeconfig to {}", path.display()))?;
    if changed {
        tracing::info!(component = COMPONENT, path = %path.display(), "wrote the admin kubeconfig");
    } else {
        tracing::info!(component = COMPONENT, path = %path.display(), "admin kubeconfig is up to date");
    }
    Ok(())
}

/// Turns a listener error into advice naming the flag to change.
fn explain_bind_error(e: rkube_apiserver::Error) -> anyhow::Error {
    let rkube_apiserver::Error::Bind { addr, source } = &e else {
        return anyhow!(e);
    };
    let (ip, port): (IpAddr, u16) = (addr.ip(), addr.port());
    match source.kind() {
        std::io::ErrorKind::AddrInUse => anyhow!(
            "cannot listen on {addr}: port {port} is already in use (is another rkube or kube-apiserver running?); stop that process or choose another port with --https-port"
        ),
        std::io::ErrorKind::AddrNotAvailable => anyhow!(
            "cannot listen on {addr}: {ip} is not an address of this host; choose one of its addresses (or 0.0.0.0) with --bind-address"
        ),
        std::io::ErrorKind::PermissionDenied => anyhow!(
            "cannot listen on {addr}: permission denied; ports below 1024 need root or CAP_NET_BIND_SERVICE, choose another with --https-port"
        ),
        _ => anyhow!("cannot listen on {addr}: {source}; check --bind-address and --https-port"),
    }
}

/// The authenticator chain of `--anonymous-auth` and `--token-auth-file`
/// (a token file that does not parse stops the start, as upstream).
fn authenticator(args: &ServerArgs) -> anyhow::Result<rkube_apiserver::authn::Authenticator> {
    let tokens = match &args.token_auth_file {
        Some(path) => rkube_apiserver::authn::TokenFile::load(path).map_err(|e| anyhow!("--token-auth-file: {e}"))?,
        None => rkube_apiserver::authn::TokenFile::default(),
    };
    Ok(rkube_apiserver::authn::Authenticator::new(args.anonymous_auth, tokens))
}

/// `--encryption-provider-config` and `--audit-policy-file` /
/// `--audit-log-path`, loaded and checked (the error names the flag, then
/// upstream's message with the field at fault).
#[allow(clippy::type_complexity)]
fn security_files(
    args: &ServerArgs,
) -> anyhow::Result<(
    Option<rkube_apiserver::encryption::EncryptionConfig>,
    Option<std::sync::Arc<rkube_apiserver::audit::Auditor>>,
)> {
    let encryption = match &args.encryption_provider_config {
        Some(path) => {
            let config = rkube_apiserver::encryption::EncryptionConfig::load(path)
                .map_err(|e| anyhow!("--encryption-provider-config {}: {e}", path.display()))?;
            tracing::info!(component = COMPONENT, path = %path.display(), "encrypting resources at rest");
            Some(config)
        }
        None => None,
    };
    let audit = match (&args.audit_policy_file, &args.audit_log_path) {
        (Some(policy), Some(log)) => {
            let opts = rkube_apiserver::audit::LogOptions {
                path: log.clone(),
                max_age_days: args.audit_log_maxage,
                max_backups: args.audit_log_maxbackup,
                max_size_mb: args.audit_log_maxsize,
            };
            let auditor = rkube_apiserver::audit::Auditor::from_files(policy, opts)
                .map_err(|e| anyhow!("--audit-policy-file / --audit-log-path: {e}"))?;
            tracing::info!(component = COMPONENT, policy = %policy.display(), log = %log, "auditing requests");
            Some(std::sync::Arc::new(auditor))
        }
        (Some(_), None) => {
            tracing::warn!(
                component = COMPONENT,
                "--audit-policy-file without --audit-log-path: no audit events will be recorded"
            );
            None
        }
        (None, Some(_)) => {
            tracing::warn!(component = COMPONENT, "no audit policy file provided, no events will be recorded");
            None
        }
        (None, None) => None,
    };
    Ok((encryption, audit))
}
