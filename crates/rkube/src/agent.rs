//! `rkube agent --server URL --token TOKEN`: a node that joins an existing
//! cluster (kubeadm's token discovery plus kubelet's TLS bootstrap, k3s's
//! command line) and runs the node agent against it.
//!
//! Order of a start: host checks (as the in-server agent's) → the cluster
//! CA, pinned by the join token's hash (kept in `<data-dir>/agent/pki/ca.crt`;
//! discovered through `kube-public/cluster-info` when absent or for another
//! CA) → the kubelet client certificate (`system:node:<name>`) through a
//! CSR made with the bootstrap token, kept in
//! `<data-dir>/agent/pki/kubelet-client-current.pem` and reused while valid
//! → the Node registered with its addresses → the kubelet serving
//! certificate through a CSR made as the node (signer
//! `kubernetes.io/kubelet-serving`, approved by rkube's csrapproving for
//! the node's own names and addresses, a k3s-like deviation) → the node
//! agent until SIGTERM/SIGINT, which leave the managed containerd and the
//! pods running (the next start adopts them; `rkube killall` stops them).
//! Both certificates are renewed at 70–90% of their lifetime (the agent
//! restarts its loops with the new ones, keeping containerd).

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, Context};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams, PostParams};
use rkube_controllers::bootstraptoken::{self, JoinToken};
use rkube_controllers::client::ApiEndpoint;
use rkube_controllers::join::{self, IssuedCertificate, JoinError};
use rkube_kubelet::agent::registration::{self, NodeIdentity};
use rkube_kubelet::agent::{identity, machine, status::Reserved, AgentConfig};
use rkube_kubelet::containerd::RuntimeKind;
use rkube_pki::CertAndKey;
use tokio::signal::unix::{signal, SignalKind};

use crate::cli::DEFAULT_DATA_DIR;

const COMPONENT: &str = "rkube-agent";
/// How long the agent keeps trying a server it cannot reach before giving up.
const UNREACHABLE_RETRY: Duration = Duration::from_secs(30);
/// How long the agent waits for `cluster-info` to be signed with its token.
const UNSIGNED_RETRY: Duration = Duration::from_secs(10);
/// How long a CSR may wait for approval and signing.
const CSR_WAIT: Duration = Duration::from_secs(300);
/// A stored certificate expiring sooner than this is not reused.
const MIN_REMAINING: i64 = 300;

/// Flags of `rkube agent`. The node flags have the names, defaults and
/// environment variables of `rkube server`'s.
#[derive(Debug, clap::Args)]
pub struct AgentArgs {
    /// The API server to join, `https://host:port` (a server's --advertise-address and --https-port).
    #[arg(long, value_name = "URL", env = "RKUBE_URL")]
    pub server: String,

    /// The join token `rkube token create` printed on a server (K10<CA hash>::<id>.<secret>).
    #[arg(long, value_name = "TOKEN", env = "RKUBE_TOKEN", hide_env_values = true)]
    pub token: String,

    /// Directory for the agent's state: agent/pki (certificates), agent/containerd, pods.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_DATA_DIR, env = "RKUBE_DATA_DIR")]
    pub data_dir: PathBuf,

    /// The name the node agent registers its Node as [default: the hostname, lowercased].
    #[arg(long, value_name = "NAME", env = "RKUBE_NODE_NAME")]
    pub node_name: Option<String>,

    /// The node's InternalIP address [default: the source address of the
    /// default route, else the first non-loopback address].
    #[arg(long, value_name = "IP", env = "RKUBE_NODE_IP")]
    pub node_ip: Option<IpAddr>,

    /// Labels to register the Node with, `key=value,...` (kubernetes.io and
    /// k8s.io keys only from the kubelet's allowed set, as upstream).
    #[arg(long, value_name = "LABELS", default_value = "", env = "RKUBE_NODE_LABELS")]
    pub node_labels: String,

    /// Taints to register the Node with, `key=value:Effect,...`.
    #[arg(long, value_name = "TAINTS", default_value = "", env = "RKUBE_REGISTER_WITH_TAINTS")]
    pub register_with_taints: String,

    /// Resources reserved for Kubernetes components, `cpu=100m,memory=256Mi,ephemeral-storage=1Gi`.
    #[arg(long, value_name = "LIST", default_value = "", env = "RKUBE_KUBE_RESERVED")]
    pub kube_reserved: String,

    /// Resources reserved for the operating system, `cpu=100m,memory=256Mi,ephemeral-storage=1Gi`.
    #[arg(long, value_name = "LIST", default_value = "", env = "RKUBE_SYSTEM_RESERVED")]
    pub system_reserved: String,

    /// Refuse to start the node agent when swap is on (upstream's --fail-swap-on).
    #[arg(long, value_name = "BOOL", default_value_t = true, num_args = 0..=1, default_missing_value = "true",
        action = clap::ArgAction::Set, env = "RKUBE_FAIL_SWAP_ON")]
    pub fail_swap_on: bool,

    /// An existing CRI socket (unix:///path) for the node agent instead of the managed containerd.
    #[arg(long, value_name = "ENDPOINT", env = "RKUBE_CONTAINER_RUNTIME_ENDPOINT")]
    pub container_runtime_endpoint: Option<String>,

    /// The node agent's runtime: containerd (managed, or --container-runtime-endpoint) or simulated
    /// (in-process, runs no processes: hollow nodes for control-plane scale tests; no root needed).
    #[arg(long, value_name = "RUNTIME", default_value = "containerd", env = "RKUBE_RUNTIME",
          value_parser = clap::builder::TypedValueParser::map(
              clap::builder::PossibleValuesParser::new(["containerd", "simulated"]),
              |s| s.parse::<RuntimeKind>().expect("a possible value")),
          conflicts_with = "container_runtime_endpoint")]
    pub runtime: RuntimeKind,

    /// Port of the kubelet API (HTTPS: logs, exec, attach, port-forward, stats).
    #[arg(long, value_name = "PORT", default_value_t = 10250, env = "RKUBE_KUBELET_PORT")]
    pub kubelet_port: u16,

    #[command(flatten)]
    pub eviction: crate::cli::EvictionArgs,

    #[command(flatten)]
    pub shutdown: crate::cli::ShutdownArgs,

    /// ClusterIP of the cluster DNS Service (the servers' --cluster-dns).
    #[arg(long, value_name = "IP", default_value = "10.43.0.10", env = "RKUBE_CLUSTER_DNS")]
    pub cluster_dns: IpAddr,

    /// DNS domain of the cluster.
    #[arg(long, value_name = "DOMAIN", default_value = "cluster.local", env = "RKUBE_CLUSTER_DOMAIN")]
    pub cluster_domain: String,

    /// Pod IP range of the cluster (the servers' --cluster-cidr; kube-proxy's --cluster-cidr).
    #[arg(long, value_name = "CIDR", default_value = "10.42.0.0/16", env = "RKUBE_CLUSTER_CIDR")]
    pub cluster_cidr: crate::net::Cidr,

    /// Service ClusterIP range (the servers' --service-cidr).
    #[arg(long, value_name = "CIDR", default_value = "10.43.0.0/16", env = "RKUBE_SERVICE_CIDR")]
    pub service_cidr: crate::net::Cidr,

    #[command(flatten)]
    pub network: crate::networking::NetworkArgs,
}

/// Runs the agent until SIGTERM or SIGINT. Errors (with what to do): a
/// malformed token or flag, a failed host check, a server that cannot be
/// reached, a token the server rejects, a CSR that is denied or not signed.
pub async fn run(args: AgentArgs) -> anyhow::Result<()> {
    let mut term = signal(SignalKind::terminate()).context("cannot install the SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("cannot install the SIGINT handler")?;
    let joined = tokio::select! {
        r = join_cluster(&args) => r?,
        _ = term.recv() => return Ok(()),
        _ = int.recv() => return Ok(()),
    };
    let Joined { mut config, client_rx, serving_rx, network } = joined;
    let pki = pki_dir(&config.data_dir);
    let mut client_rx = Some(client_rx);
    let mut serving_rx = Some(serving_rx);
    let mut agent = rkube_kubelet::agent::spawn(config.clone(), async { true });
    let network_handle = network.map(|setup| crate::networking::spawn(setup, async { true }));
    loop {
        tokio::select! {
            _ = term.recv() => { tracing::info!(component = COMPONENT, "received SIGTERM; stopping"); break }
            _ = int.recv() => { tracing::info!(component = COMPONENT, "received SIGINT; stopping"); break }
            cert = next_certificate(&mut client_rx) => {
                let cert = credential(&cert);
                keep(&identity::credential_path(&config.data_dir), &cert);
                config.credential = cert;
            }
            cert = next_certificate(&mut serving_rx) => {
                let cert = credential(&cert);
                keep(&pki.join(SERVING_FILE), &cert);
                config.serving_credential = cert;
            }
        }
        // A renewed certificate: the loops start again with it.
        tracing::info!(component = COMPONENT, "restarting the node agent with its renewed certificate");
        agent.stop().await;
        agent = rkube_kubelet::agent::spawn(config.clone(), async { true });
    }
    agent.stop().await;
    if let Some(handle) = network_handle {
        handle.stop().await;
    }
    tracing::info!(component = COMPONENT, "rkube agent stopped");
    Ok(())
}

/// Stores a renewed certificate; a failure is logged (the agent goes on
/// with it in memory and the next start requests a new one).
fn keep(path: &Path, cert: &CertAndKey) {
    if let Err(e) = store_pair(path, cert) {
        tracing::error!(component = COMPONENT, "cannot store the renewed certificate: {e:#}");
    }
}

/// The next certificate a rotation publishes; never resolves once the rotation has ended.
async fn next_certificate(rx: &mut Option<tokio::sync::watch::Receiver<IssuedCertificate>>) -> IssuedCertificate {
    if let Some(r) = rx {
        if r.changed().await.is_ok() {
            return r.borrow_and_update().clone();
        }
    }
    *rx = None;
    std::future::pending().await
}

struct Joined {
    config: AgentConfig,
    client_rx: tokio::sync::watch::Receiver<IssuedCertificate>,
    serving_rx: tokio::sync::watch::Receiver<IssuedCertificate>,
    /// The node's network components (`None` for the simulated runtime).
    network: Option<crate::networking::Setup>,
}

/// `<data-dir>/agent/pki`.
fn pki_dir(data_dir: &Path) -> PathBuf {
    identity::credential_path(data_dir).parent().map(Path::to_path_buf).unwrap_or_default()
}

/// The cluster CA the agent trusts.
const CA_FILE: &str = "ca.crt";
/// The kubelet serving certificate and key (as upstream's kubelet names it).
const SERVING_FILE: &str = "kubelet-server-current.pem";
/// kube-proxy's client certificate and key.
const KUBE_PROXY_FILE: &str = "kube-proxy.pem";

async fn join_cluster(args: &AgentArgs) -> anyhow::Result<Joined> {
    let token = JoinToken::parse(&args.token).map_err(|e| {
        anyhow!("invalid --token: {e}; use the join token that `rkube token create` prints on a server")
    })?;
    let url = server_url(&args.server)?;
    let data_dir = std::path::absolute(&args.data_dir)
        .with_context(|| format!("cannot resolve --data-dir {}", args.data_dir.display()))?;
    let node_name = args.node_name.clone().unwrap_or_else(registration::default_node_name);
    if node_name.is_empty() {
        return Err(anyhow!("cannot determine the node name from the hostname; set --node-name"));
    }
    let node_labels = registration::parse_node_labels(&args.node_labels).map_err(|e| anyhow!("--node-labels: {e}"))?;
    let taints =
        registration::parse_taints(&args.register_with_taints).map_err(|e| anyhow!("--register-with-taints: {e}"))?;
    let kube_reserved = Reserved::parse(&args.kube_reserved).map_err(|e| anyhow!("--kube-reserved: {e}"))?;
    let system_reserved = Reserved::parse(&args.system_reserved).map_err(|e| anyhow!("--system-reserved: {e}"))?;
    let managed = args.container_runtime_endpoint.is_none() && args.runtime == RuntimeKind::Containerd;
    rkube_kubelet::agent::preflight(args.fail_swap_on, managed)?;
    let node_ip = args.node_ip.unwrap_or_else(|| {
        crate::net::default_advertise_address(IpAddr::from([0, 0, 0, 0]), &crate::net::host_addresses(&[]))
    });
    tracing::info!(component = COMPONENT, server = %url, node = %node_name, %node_ip, data_dir = %data_dir.display(), "joining the cluster");

    let pki = pki_dir(&data_dir);
    let ca_pem = cluster_ca(&url, &token, &pki).await?;
    let endpoint = ApiEndpoint { url: url.clone(), ca_pem };
    let client_cert = client_certificate(&endpoint, &token, &node_name, &data_dir).await?;
    let node_client =
        rkube_controllers::client::with_certificate(&endpoint, &client_cert.cert_pem, &client_cert.key_pem)
            .map_err(|e| anyhow!("cannot build the node's API client: {e}"))?;

    let id = NodeIdentity {
        name: node_name.clone(),
        node_ip,
        extra_labels: node_labels.clone(),
        taints: taints.clone(),
        arch: machine::go_arch().into(),
    };
    register(&node_client, &id).await?;
    let sans = serving_sans(&node_name, node_ip);
    let serving = serving_certificate(&node_client, &node_name, &sans, &pki).await?;
    let simulated = args.runtime == RuntimeKind::Simulated;
    let proxy_cert = match simulated {
        true => None,
        false => Some(kube_proxy_certificate(&node_client, &pki).await?),
    };

    let client_rx = join::spawn_rotation(
        endpoint.clone(),
        join::kubelet_client_request(&node_name),
        client_cert.clone(),
        None,
        CSR_WAIT,
    );
    let serving_rx = join::spawn_rotation(
        endpoint.clone(),
        join::kubelet_serving_request(&node_name, &sans),
        serving.clone(),
        Some(node_client),
        CSR_WAIT,
    );
    let config = AgentConfig {
        data_dir,
        node_name,
        node_ip,
        node_labels,
        taints,
        kube_reserved,
        system_reserved,
        runtime_endpoint: args.container_runtime_endpoint.clone(),
        runtime: Default::default(),
        control_plane: false,
        kubelet_version: rkube_apimachinery::version::git_version(),
        api: endpoint,
        credential: credential(&client_cert),
        admin_credential: None,
        cluster_dns: vec![args.cluster_dns],
        cluster_domain: args.cluster_domain.clone(),
        kubelet_port: args.kubelet_port,
        serving_credential: credential(&serving),
        eviction: args.eviction.config()?,
        shutdown: args.shutdown.config()?,
    };
    let network = match proxy_cert {
        None => None,
        Some(proxy) => {
            let setup = crate::networking::Setup {
                data_dir: config.data_dir.clone(),
                node_name: config.node_name.clone(),
                node_ip,
                cluster_cidr: args.cluster_cidr,
                service_cidr: args.service_cidr,
                args: args.network.clone(),
                api: config.api.clone(),
                proxy_credential: credential(&proxy),
            };
            crate::networking::prepare(&setup)?;
            Some(setup)
        }
    };
    Ok(Joined { config, client_rx, serving_rx, network })
}

/// `--server` checked: an `https://` URL, without a trailing slash.
pub(crate) fn server_url(s: &str) -> anyhow::Result<String> {
    let url = s.trim().trim_end_matches('/');
    let rest = url
        .strip_prefix("https://")
        .ok_or_else(|| anyhow!("invalid --server {s:?}: use the server's HTTPS URL, e.g. https://10.0.0.1:6443"))?;
    if rest.is_empty() || rest.contains('/') {
        return Err(anyhow!("invalid --server {s:?}: use the server's HTTPS URL, e.g. https://10.0.0.1:6443"));
    }
    Ok(url.to_string())
}

/// The serving certificate's SANs: the node name (unless it is an address) and the node IP.
fn serving_sans(node_name: &str, node_ip: IpAddr) -> Vec<String> {
    let mut sans = Vec::new();
    if node_name.parse::<IpAddr>().is_err() {
        sans.push(node_name.to_string());
    }
    sans.push(node_ip.to_string());
    sans
}

fn credential(c: &IssuedCertificate) -> CertAndKey {
    CertAndKey { cert_pem: c.cert_pem.clone(), key_pem: c.key_pem.clone() }
}

/// What to tell the user about a failed join step.
fn explain(url: &str, e: JoinError) -> anyhow::Error {
    explain_join_error(
        url,
        e,
        "create a new join token with `rkube token create` on a server and pass it with --token (or RKUBE_TOKEN)",
    )
}

/// A failed join step (agent or server join) in words: a token the server
/// rejects, a server that cannot be reached, an untrusted cluster-info,
/// each with `new_token` (how to get a token that works) where it helps.
pub(crate) fn explain_join_error(url: &str, e: JoinError, new_token: &str) -> anyhow::Error {
    match e {
        JoinError::Api { context, source } => {
            let code = rkube_client::errors::api_code(&source);
            // The Status message, not the whole Status.
            let source = rkube_client::errors::message(&source);
            match code {
                Some(401) => anyhow!("the server {url} rejected the join token ({context}: {source}); {new_token}"),
                Some(_) => anyhow!("{context}: {source}"),
                None => anyhow!(
                    "cannot reach the server at {url} ({context}: {source}); check --server and that `rkube server` \
                     runs there"
                ),
            }
        }
        JoinError::Untrusted(msg) => anyhow!("cannot join with this token: {msg}; {new_token}"),
        other => anyhow!(other),
    }
}

/// The cluster CA: the stored one when the token pins it, else discovered
/// through `cluster-info` (retrying an unreachable server for
/// [`UNREACHABLE_RETRY`]) and stored.
async fn cluster_ca(url: &str, token: &JoinToken, pki: &Path) -> anyhow::Result<String> {
    let path = pki.join(CA_FILE);
    if let Ok(pem) = std::fs::read_to_string(&path) {
        let hash = bootstraptoken::ca_pem_hash(&pem);
        if hash.as_deref() == Some(token.ca_hash.as_str()) {
            tracing::info!(component = COMPONENT, path = %path.display(), "using the stored cluster CA the token pins");
            return Ok(pem);
        }
    }
    let info =
        join::discover_retrying(url, token, UNREACHABLE_RETRY, UNSIGNED_RETRY).await.map_err(|e| explain(url, e))?;
    tracing::info!(component = COMPONENT, "discovered the cluster CA; its hash matches the join token");
    // Stored certificates from another CA fail `usable` and are replaced.
    rkube_pki::write_private_file(&path, info.ca_pem.as_bytes())
        .map_err(|e| anyhow!("cannot write {}: {e}", path.display()))?;
    Ok(info.ca_pem)
}

/// The kubelet client certificate: the stored one while it is this node's,
/// chains to the cluster's CA and is valid, else a new one through a CSR
/// with the bootstrap token (auto-approved as `nodeclient`).
async fn client_certificate(
    endpoint: &ApiEndpoint,
    token: &JoinToken,
    node: &str,
    data_dir: &Path,
) -> anyhow::Result<IssuedCertificate> {
    let path = identity::credential_path(data_dir);
    if let Some(c) = load_pair(&path).filter(|c| usable(c, &identity::user_name(node), None, &endpoint.ca_pem)) {
        tracing::info!(component = COMPONENT, path = %path.display(), "reusing the kubelet client certificate");
        return Ok(c);
    }
    let info = join::ClusterInfo { ca_pem: endpoint.ca_pem.clone(), server: endpoint.url.clone() };
    let bootstrap = join::bootstrap_client(&endpoint.url, &info, token).map_err(|e| explain(&endpoint.url, e))?;
    tracing::info!(component = COMPONENT, node, "requesting the kubelet client certificate with the bootstrap token");
    let cert = join::request_certificate(&bootstrap, &join::kubelet_client_request(node), CSR_WAIT)
        .await
        .map_err(|e| explain(&endpoint.url, e))?;
    store_pair(&path, &credential(&cert))?;
    tracing::info!(component = COMPONENT, csr = %cert.csr_name, "obtained the kubelet client certificate");
    Ok(cert)
}

/// A certificate the node requests as itself (with its client certificate).
struct NodeCertificate<'a> {
    /// The file under `<data-dir>/agent/pki` that keeps it.
    file: &'a str,
    /// The CSR's content; a stored certificate must have its CN.
    request: join::CertificateRequest,
    /// The SANs a stored certificate must have exactly (`None`: not checked).
    sans: Option<&'a [String]>,
    /// What the logs and errors call it, e.g. "the kubelet serving certificate".
    what: &'a str,
    /// Which requests the servers' approver grants, for the timeout advice.
    approved: &'a str,
}

/// The stored certificate while it is valid from the cluster's CA for the
/// request's CN (and SANs), else a new one requested as the node and stored.
/// Err: the CSR is denied, not signed in time (with how to approve it), or
/// the file cannot be written.
async fn node_certificate(
    node_client: &kube::Client,
    pki: &Path,
    want: NodeCertificate<'_>,
) -> anyhow::Result<IssuedCertificate> {
    let NodeCertificate { file, request, sans, what, approved } = want;
    let path = pki.join(file);
    let ca = std::fs::read_to_string(pki.join(CA_FILE)).unwrap_or_default();
    if let Some(c) = load_pair(&path).filter(|c| usable(c, &request.common_name, sans, &ca)) {
        tracing::info!(component = COMPONENT, path = %path.display(), "reusing {what}");
        return Ok(c);
    }
    tracing::info!(component = COMPONENT, ?sans, "requesting {what}");
    let cert = join::request_certificate(node_client, &request, CSR_WAIT).await.map_err(|e| match e {
        JoinError::Timeout(_, ref name) => anyhow!(
            "cannot obtain {what}: {e}; approve it with `kubectl certificate approve {name}` \
             (servers approve {approved} when their certificatesigningrequest-approving-controller runs)"
        ),
        e => anyhow!("cannot obtain {what}: {e}"),
    })?;
    store_pair(&path, &credential(&cert))?;
    tracing::info!(component = COMPONENT, csr = %cert.csr_name, "obtained {what}");
    Ok(cert)
}

/// The kubelet serving certificate, for exactly `sans`.
async fn serving_certificate(
    node_client: &kube::Client,
    node: &str,
    sans: &[String],
    pki: &Path,
) -> anyhow::Result<IssuedCertificate> {
    let want = NodeCertificate {
        file: SERVING_FILE,
        request: join::kubelet_serving_request(node, sans),
        sans: Some(sans),
        what: "the kubelet serving certificate",
        approved: "a node's own serving requests",
    };
    node_certificate(node_client, pki, want).await
}

/// kube-proxy's client certificate (`system:kube-proxy`), auto-approved
/// by rkube's csrapproving (see
/// `rkube_controllers::csrapproving::node_kube_proxy_request`). Not
/// rotated: a restart within [`MIN_REMAINING`] of its expiry requests a
/// new one.
async fn kube_proxy_certificate(node_client: &kube::Client, pki: &Path) -> anyhow::Result<IssuedCertificate> {
    let want = NodeCertificate {
        file: KUBE_PROXY_FILE,
        request: join::kube_proxy_request(),
        sans: None,
        what: "kube-proxy's client certificate",
        approved: "a node's kube-proxy request",
    };
    node_certificate(node_client, pki, want).await
}

/// Creates the Node (before the serving CSR, whose approval checks the
/// Node's addresses), or refreshes an existing one's addresses.
async fn register(client: &kube::Client, id: &NodeIdentity) -> anyhow::Result<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    match nodes.create(&PostParams::default(), &registration::initial_node(id)).await {
        Ok(_) => return Ok(()),
        Err(e) if rkube_client::errors::api_code(&e) == Some(409) => {}
        Err(e) => return Err(anyhow!("unable to register node {:?} with the API server: {e}", id.name)),
    }
    let patch = serde_json::json!({"status": {"addresses": registration::addresses(id)}});
    nodes
        .patch_status(&id.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| anyhow!("cannot update the addresses of node {:?}: {e}", id.name))?;
    Ok(())
}

/// Whether a stored certificate can be used: its CN is `cn`, it was signed
/// by `ca_pem`, it has more than [`MIN_REMAINING`] seconds left, and (for
/// serving certificates) its SANs are exactly `sans`.
fn usable(c: &IssuedCertificate, cn: &str, sans: Option<&[String]>, ca_pem: &str) -> bool {
    let Some(der) = rkube_controllers::pem::certificate_der(&c.cert_pem) else { return false };
    let Some(ca_der) = rkube_controllers::pem::certificate_der(ca_pem) else { return false };
    let (Ok((_, cert)), Ok((_, ca))) =
        (x509_parser::parse_x509_certificate(&der), x509_parser::parse_x509_certificate(&ca_der))
    else {
        return false;
    };
    if cert.verify_signature(Some(ca.public_key())).is_err() {
        return false;
    }
    if !cert.subject().iter_common_name().any(|n| n.as_str() == Ok(cn)) {
        return false;
    }
    if c.not_after - jiff::Timestamp::now().as_second() <= MIN_REMAINING {
        return false;
    }
    let Some(want) = sans else { return true };
    let mut got: Vec<String> = Vec::new();
    if let Ok(Some(ext)) = cert.subject_alternative_name() {
        for n in &ext.value.general_names {
            match n {
                x509_parser::extensions::GeneralName::DNSName(d) => got.push(d.to_string()),
                x509_parser::extensions::GeneralName::IPAddress(b) => match b.len() {
                    4 => got.push(IpAddr::from(<[u8; 4]>::try_from(*b).unwrap_or_default()).to_string()),
                    16 => got.push(IpAddr::from(<[u8; 16]>::try_from(*b).unwrap_or_default()).to_string()),
                    _ => return false,
                },
                _ => return false,
            }
        }
    }
    let mut want = want.to_vec();
    got.sort();
    want.sort();
    got == want
}

/// Reads a certificate-then-key PEM file (the layout of upstream's
/// `kubelet-client-current.pem`); `None` when absent or unreadable.
fn load_pair(path: &Path) -> Option<IssuedCertificate> {
    let text = std::fs::read_to_string(path).ok()?;
    let (cert_pem, key_pem) = split_pair(&text)?;
    let (not_before, not_after) = join::validity(&cert_pem)?;
    Some(IssuedCertificate { cert_pem, key_pem, not_before, not_after, csr_name: String::new() })
}

/// Splits PEM text into its CERTIFICATE block and its PRIVATE KEY block.
fn split_pair(text: &str) -> Option<(String, String)> {
    let block = |label: &str| -> Option<String> {
        let begin = format!("-----BEGIN {label}-----");
        let end = format!("-----END {label}-----");
        let start = text.find(&begin)?;
        let stop = text[start..].find(&end)? + start + end.len();
        Some(format!("{}\n", &text[start..stop]))
    };
    let key = block("PRIVATE KEY").or_else(|| block("EC PRIVATE KEY"))?;
    Some((block("CERTIFICATE")?, key))
}

/// Writes certificate then key (mode 0600).
fn store_pair(path: &Path, c: &CertAndKey) -> anyhow::Result<()> {
    let pem = format!("{}{}", c.cert_pem, c.key_pem);
    rkube_pki::write_private_file(path, pem.as_bytes()).map_err(|e| anyhow!("cannot write {}: {e}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<AgentArgs, String> {
        use clap::Parser;
        let mut argv = vec!["rkube", "agent"];
        argv.extend_from_slice(args);
        match crate::cli::Cli::try_parse_from(argv).map_err(|e| e.to_string())?.command {
            crate::cli::Command::Agent(a) => Ok(a),
            _ => Err("not an agent command".into()),
        }
    }

    #[test]
    fn agent_flags_default_as_the_servers() {
        let a = parse(&["--server", "https://10.0.0.1:6443", "--token", "t"]).unwrap();
        assert_eq!(a.data_dir, PathBuf::from("/var/lib/rkube"));
        assert_eq!(
            (a.kubelet_port, a.cluster_dns.to_string(), a.cluster_domain.as_str()),
            (10250, "10.43.0.10".into(), "cluster.local")
        );
        assert!(a.fail_swap_on && a.node_name.is_none() && a.node_ip.is_none());
        let a =
            parse(&["--server", "https://h:1", "--token", "t", "--fail-swap-on=false", "--node-name", "n2"]).unwrap();
        assert!(!a.fail_swap_on);
        assert_eq!(a.node_name.as_deref(), Some("n2"));
        assert!(parse(&["--server", "https://h:1"]).unwrap_err().contains("--token"));
    }

    #[test]
    fn the_server_must_be_an_https_url() {
        assert_eq!(server_url("https://10.0.0.1:6443/").unwrap(), "https://10.0.0.1:6443");
        for bad in ["10.0.0.1:6443", "http://10.0.0.1:6443", "https://", "https://h:1/api"] {
            assert!(server_url(bad).unwrap_err().to_string().starts_with("invalid --server"), "{bad}");
        }
    }

    #[test]
    fn serving_sans_are_the_node_name_and_ip() {
        assert_eq!(serving_sans("n1", "10.0.0.5".parse().unwrap()), ["n1", "10.0.0.5"]);
        assert_eq!(serving_sans("10.0.0.5", "10.0.0.5".parse().unwrap()), ["10.0.0.5"]);
    }

    #[test]
    fn a_stored_pair_splits_into_certificate_and_key() {
        let text = "-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\nBBB\n-----END PRIVATE KEY-----\n";
        let (c, k) = split_pair(text).unwrap();
        assert_eq!(c, "-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n");
        assert_eq!(k, "-----BEGIN PRIVATE KEY-----\nBBB\n-----END PRIVATE KEY-----\n");
        assert!(split_pair("-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n").is_none());
    }
}
