//! The node agent inside `rkube server` (upstream's kubelet, node side of
//! registration): host checks, the container runtime, the Node object and
//! its status, the heartbeat Lease, and the node's CNI config.
//!
//! Order of a start ([`spawn`]): the runtime (managed containerd with the
//! pause image, or `--container-runtime-endpoint`) comes up while the API
//! server starts; once the API is ready the agent registers its Node
//! (create, or adopt an existing one), marks it control-plane with the
//! server's admin identity (a kubelet may not set role labels on itself),
//! then renews its Lease every 10 s and syncs its status every 10 s
//! (every second until it first posts Ready, as upstream's fast status
//! update at start), posting only on change or every 5 min. When the Node
//! has a `spec.podCIDR` the CNI conflist is written, the runtime reports
//! NetworkReady, and the node goes Ready.

pub mod cni;
pub mod eviction;
pub mod identity;
pub mod image_gc;
pub mod lease;
pub mod machine;
pub mod registration;
pub mod shutdown;
pub mod status;

use std::collections::BTreeMap;
use std::future::Future;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{
    DaemonEndpoint, Node, NodeDaemonEndpoints, NodeStatus, NodeSystemInfo, ObjectReference, Taint,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, Patch, PatchParams, PostParams};
use rkube_client::client::ApiEndpoint;
use rkube_pki::CertAndKey;
use tokio::sync::watch;

use crate::containerd::{ContainerRuntime, StartOptions};
use crate::cri::CriClient;
use registration::NodeIdentity;
use status::{Reserved, RuntimeHealth};

const COMPONENT: &str = "kubelet";
/// How often the status is checked (upstream's nodeStatusUpdateFrequency).
pub const STATUS_CHECK_INTERVAL: Duration = Duration::from_secs(10);
/// How often the status is checked until the node first posts Ready
/// (upstream's fastStatusUpdateOnce period).
const FAST_STATUS_CHECK_INTERVAL: Duration = Duration::from_millis(100);
/// How long the fast checks last at most (upstream's nodeReadyGracePeriod).
const NODE_READY_GRACE_PERIOD: Duration = Duration::from_secs(120);
/// How often an unchanged status is posted anyway (nodeStatusReportFrequency).
pub const STATUS_REPORT_INTERVAL: Duration = Duration::from_secs(300);
/// The kubelet's port reported in daemonEndpoints (upstream's default).
pub const KUBELET_PORT: i32 = 10250;

/// Everything the agent runs with (from `rkube server`'s flags and PKI).
#[derive(Clone, Debug)]
pub struct AgentConfig {
    /// `--data-dir` (absolute).
    pub data_dir: PathBuf,
    /// `--node-name` (default: the hostname lowercased).
    pub node_name: String,
    /// `--node-ip` (default: the advertise address).
    pub node_ip: IpAddr,
    /// `--node-labels`.
    pub node_labels: BTreeMap<String, String>,
    /// `--register-with-taints`.
    pub taints: Vec<Taint>,
    /// `--kube-reserved`.
    pub kube_reserved: Reserved,
    /// `--system-reserved`.
    pub system_reserved: Reserved,
    /// `--container-runtime-endpoint`: an existing CRI socket instead of the managed containerd.
    pub runtime_endpoint: Option<String>,
    /// `--runtime`: containerd (managed or `runtime_endpoint`) or the simulated runtime.
    pub runtime: crate::containerd::RuntimeKind,
    /// Whether this node runs the control plane (gets the control-plane role label).
    pub control_plane: bool,
    /// nodeInfo.kubeletVersion (the server's gitVersion, e.g. `v1.33.0`).
    pub kubelet_version: String,
    /// The API server and its CA.
    pub api: ApiEndpoint,
    /// The kubelet's client certificate ([`identity::issue`]).
    pub credential: CertAndKey,
    /// A cluster-admin credential to set the role label with (as kubeadm
    /// marks its control-plane nodes), if any.
    pub admin_credential: Option<CertAndKey>,
    /// `--cluster-dns`: the nameservers of ClusterFirst pods.
    pub cluster_dns: Vec<IpAddr>,
    /// `--cluster-domain` (e.g. `cluster.local`).
    pub cluster_domain: String,
    /// `--kubelet-port`: the kubelet API's HTTPS port (10250).
    pub kubelet_port: u16,
    /// The kubelet API's serving certificate (signed by the cluster CA,
    /// which the API server verifies it against; client certificates on the
    /// kubelet API are verified against `api.ca_pem`).
    pub serving_credential: CertAndKey,
    /// The eviction flags (`--eviction-hard`, `--eviction-soft`, …) and the image GC flags.
    pub eviction: eviction::EvictionConfig,
    /// `--shutdown-grace-period` and `--shutdown-grace-period-critical-pods` (default: disabled).
    pub shutdown: shutdown::ShutdownConfig,
}

/// A host prerequisite that stops the agent (and the server) from starting.
#[derive(Debug, thiserror::Error)]
pub enum PreflightError {
    /// Swap is on and `--fail-swap-on` is true (upstream's message).
    #[error("running with swap on is not supported, please disable swap or set --fail-swap-on flag to false (/proc/swaps lists: {0})")]
    SwapOn(String),
    /// Not root.
    #[error("the node agent must run as root (it runs containerd, mounts and manages cgroups); run rkube as root or pass --disable-agent")]
    NotRoot,
    /// containerd or runc is missing.
    #[error(transparent)]
    MissingBinary(#[from] crate::host::MissingBinary),
}

/// Checks the host before anything starts: root (for the managed
/// runtime), the runtime's binaries, and swap (refused unless
/// `fail_swap_on` is false, as upstream).
pub fn preflight(fail_swap_on: bool, managed_runtime: bool) -> Result<(), PreflightError> {
    let swaps = machine::swap_devices(&std::fs::read_to_string("/proc/swaps").unwrap_or_default());
    if !swaps.is_empty() {
        if fail_swap_on {
            return Err(PreflightError::SwapOn(swaps.join("; ")));
        }
        tracing::warn!(component = COMPONENT, "swap is on; running anyway because --fail-swap-on=false");
    }
    if managed_runtime {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(PreflightError::NotRoot);
        }
        crate::host::check_runtime_binaries()?;
    }
    Ok(())
}

/// The running agent; stop it with [`Agent::stop`].
pub struct Agent {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

/// Starts the agent: the runtime at once, the rest once `api_ready`
/// resolves to true (false: the server is stopping before it was ready).
pub fn spawn<F>(config: AgentConfig, api_ready: F) -> Agent
where
    F: Future<Output = bool> + Send + 'static,
{
    let (stop, stop_rx) = watch::channel(false);
    let task = tokio::spawn(run(config, api_ready, stop_rx));
    Agent { stop, task }
}

impl Agent {
    /// Stops the loops (at most 30 s); the managed containerd and the pods keep running.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        if tokio::time::timeout(Duration::from_secs(30), self.task).await.is_err() {
            tracing::warn!(component = COMPONENT, "the node agent did not stop within 30s");
        }
    }
}

async fn run<F: Future<Output = bool>>(cfg: AgentConfig, api_ready: F, mut stop: watch::Receiver<bool>) {
    tracing::info!(component = COMPONENT, node = %cfg.node_name, "starting the node agent");
    let started = tokio::select! {
        r = ContainerRuntime::start_kind(cfg.runtime, &cfg.data_dir, cfg.runtime_endpoint.as_deref(), StartOptions::default()) => r,
        _ = stop.wait_for(|s| *s) => return,
    };
    let mut runtime = match started {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(component = COMPONENT, "the node agent cannot start its container runtime: {e}");
            return;
        }
    };
    tracing::info!(component = COMPONENT, socket = %runtime.client().socket().display(), "container runtime is up with the pause image");
    let ready = tokio::select! {
        r = api_ready => r,
        _ = stop.wait_for(|s| *s) => false,
    };
    if ready {
        let cri = runtime.client().clone();
        tokio::select! {
            _ = node_loops(&cfg, cri, stop.clone()) => {}
            _ = stop.wait_for(|s| *s) => {}
        }
    }
    runtime.stop().await;
    tracing::info!(component = COMPONENT, "node agent stopped");
}

/// Registration, then the lease and status loops until stopped.
async fn node_loops(cfg: &AgentConfig, cri: CriClient, stop: watch::Receiver<bool>) {
    let client =
        match rkube_client::client::with_certificate(&cfg.api, &cfg.credential.cert_pem, &cfg.credential.key_pem) {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(component = COMPONENT, "cannot build the kubelet's API client: {e}");
                return;
            }
        };
    let recorder = rkube_client::events::Recorder::new(client.clone(), COMPONENT, &cfg.node_name);
    let node_ref = ObjectReference {
        kind: Some("Node".into()),
        name: Some(cfg.node_name.clone()),
        // Upstream's kubelet refers to its node with the name as UID.
        uid: Some(cfg.node_name.clone()),
        ..Default::default()
    };
    recorder.event_on(node_ref.clone(), rkube_client::events::NORMAL, "Starting", "Starting kubelet.".into());
    let id = NodeIdentity {
        name: cfg.node_name.clone(),
        node_ip: cfg.node_ip,
        extra_labels: cfg.node_labels.clone(),
        taints: cfg.taints.clone(),
        arch: machine::go_arch().into(),
    };
    let nodes: Api<Node> = Api::all(client.clone());
    let node = register(&nodes, &id).await;
    if cfg.control_plane {
        mark_control_plane(cfg).await;
    }
    let uid = node.metadata.uid.clone().unwrap_or_default();
    let lease = tokio::spawn(lease::run(client.clone(), cfg.node_name.clone(), uid, stop.clone()));
    // Pod admission and node-imposed grace periods, shared by the pod
    // workers, the eviction manager and the node shutdown manager.
    let admission = crate::pods::admission::Admission::default();
    let grace_overrides = crate::pods::admission::GraceOverrides::default();
    // Graceful node shutdown: its state gates admission and the Ready condition.
    let shutdown_state = shutdown::ShutdownState::default();
    admission.register(std::sync::Arc::new(shutdown_state.clone()));
    let shutdown_manager = tokio::spawn(
        shutdown::ShutdownManager {
            client: client.clone(),
            cri: cri.clone(),
            recorder: recorder.clone(),
            node_ref: node_ref.clone(),
            node_name: cfg.node_name.clone(),
            config: cfg.shutdown,
            state: shutdown_state.clone(),
            grace_overrides: grace_overrides.clone(),
        }
        .run(stop.clone()),
    );
    let pods = tokio::spawn(run_pods(
        cfg.clone(),
        NodeShared { client: client.clone(), cri: cri.clone(), recorder: recorder.clone() },
        admission.clone(),
        grace_overrides.clone(),
        stop.clone(),
    ));
    let pressure = eviction::PressureHandle::default();
    // Upstream's eviction admission: no new pods the node's pressure forbids.
    admission.register(std::sync::Arc::new(pressure.clone()));
    let runtime_root = crate::containerd::RuntimePaths::new(&cfg.data_dir).root;
    let gc = image_gc::ImageGc {
        cri: cri.clone(),
        recorder: recorder.clone(),
        node_ref: node_ref.clone(),
        imagefs: runtime_root.clone(),
        pause_image: crate::PAUSE_IMAGE.to_string(),
        config: cfg.eviction.image_gc,
        tracker: Default::default(),
    };
    let image_gc = tokio::spawn(gc.clone().run(stop.clone()));
    let evictions = tokio::spawn(
        eviction::EvictionManager {
            client: client.clone(),
            cri: cri.clone(),
            recorder: recorder.clone(),
            node_name: cfg.node_name.clone(),
            node_ref: node_ref.clone(),
            nodefs: cfg.data_dir.clone(),
            imagefs: runtime_root,
            config: cfg.eviction.clone(),
            pressure: pressure.clone(),
            image_gc: Some(gc),
            grace_overrides: grace_overrides.clone(),
        }
        .run(stop.clone()),
    );
    // Container logs rotated at 10 MiB, 5 files kept (upstream's defaults).
    let rotation = tokio::spawn(crate::logs::run_log_rotation(cri.clone(), Default::default(), stop.clone()));
    let server = tokio::spawn(run_kubelet_server(cfg.clone(), client.clone(), cri.clone(), stop));
    status_loop(cfg, &id, &nodes, &cri, &recorder, node_ref, &pressure, &shutdown_state).await;
    shutdown_manager.abort();
    evictions.abort();
    image_gc.abort();
    lease.abort();
    pods.abort();
    rotation.abort();
    server.abort();
}

/// The API client, runtime and event recorder every node loop shares.
struct NodeShared {
    client: kube::Client,
    cri: CriClient,
    recorder: rkube_client::events::Recorder,
}

/// The pod workers of this node until stopped.
async fn run_pods(
    cfg: AgentConfig,
    shared: NodeShared,
    admission: crate::pods::admission::Admission,
    grace_overrides: crate::pods::admission::GraceOverrides,
    stop: watch::Receiver<bool>,
) {
    use crate::pods;
    let NodeShared { client, cri, recorder } = shared;
    let m = machine::MachineInfo::detect(&cfg.data_dir);
    let (changed_tx, changed_rx) = tokio::sync::mpsc::unbounded_channel();
    let ctx = pods::context::NodeContext {
        client: client.clone(),
        cri: cri.clone(),
        node_name: cfg.node_name.clone(),
        host_ips: vec![cfg.node_ip],
        data_dir: cfg.data_dir.clone(),
        dns: pods::dns::DnsSettings {
            cluster_dns: cfg.cluster_dns.clone(),
            cluster_domain: cfg.cluster_domain.clone(),
            host_resolv_conf: PathBuf::from("/etc/resolv.conf"),
        },
        cgroup_driver: crate::host::detect_cgroup_driver(),
        // Upstream scores OOM adjustments against the machine's memory capacity.
        node_memory_bytes: m.memory_bytes as i64,
        node_milli_cpu: (m.cpus * 1000) as i64,
        volumes: std::sync::Arc::new(pods::volumes::VolumeManager::new(&cfg.data_dir, client, &cfg.node_name)),
        prober: pods::prober::ProbeManager::new(cri, recorder.clone(), changed_tx),
        recorder,
        admission,
        grace_overrides,
    };
    pods::manager::run(ctx, changed_rx, stop).await;
}

/// The kubelet API on `--kubelet-port` until stopped.
async fn run_kubelet_server(cfg: AgentConfig, client: kube::Client, cri: CriClient, stop: watch::Receiver<bool>) {
    let server = crate::server::KubeletServerConfig {
        address: std::net::Ipv4Addr::UNSPECIFIED.into(),
        port: cfg.kubelet_port,
        node_name: cfg.node_name.clone(),
        serving_cert_pem: cfg.serving_credential.cert_pem.clone(),
        serving_key_pem: cfg.serving_credential.key_pem.clone(),
        client_ca_pem: cfg.api.ca_pem.clone(),
        client,
        cri,
    };
    if let Err(e) = crate::server::serve(server, stop).await {
        tracing::error!(
            component = COMPONENT,
            "the kubelet API on port {} stopped: {e}; logs, exec and port-forward will not work (choose another --kubelet-port if it is taken)",
            cfg.kubelet_port
        );
    }
}

/// Creates the Node, or adopts the existing one (refreshing the kubelet's
/// labels), retrying every 7 s like upstream's registration loop.
async fn register(nodes: &Api<Node>, id: &NodeIdentity) -> Node {
    let desired = registration::initial_node(id);
    let mut delay = Duration::from_millis(100);
    loop {
        match nodes.create(&PostParams::default(), &desired).await {
            Ok(n) => {
                tracing::info!(component = COMPONENT, node = %id.name, "successfully registered node");
                return n;
            }
            Err(e) if rkube_client::errors::api_code(&e) == Some(409) => {
                let labels = serde_json::json!({"metadata": {"labels": registration::node_labels(id)}});
                match nodes.patch(&id.name, &PatchParams::default(), &Patch::Merge(&labels)).await {
                    Ok(n) => {
                        tracing::info!(component = COMPONENT, node = %id.name, "node was previously registered");
                        return n;
                    }
                    Err(e) => tracing::warn!(component = COMPONENT, "cannot update the existing node: {e}"),
                }
            }
            Err(e) => {
                tracing::warn!(component = COMPONENT, node = %id.name, "unable to register node with API server: {e}")
            }
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(7));
    }
}

/// Sets `node-role.kubernetes.io/control-plane=""` with the admin identity.
async fn mark_control_plane(cfg: &AgentConfig) {
    let Some(admin) = &cfg.admin_credential else { return };
    let client = match rkube_client::client::with_certificate(&cfg.api, &admin.cert_pem, &admin.key_pem) {
        Ok(c) => c,
        Err(e) => return tracing::warn!(component = COMPONENT, "cannot label the node control-plane: {e}"),
    };
    let patch = serde_json::json!({"metadata": {"labels": {registration::CONTROL_PLANE_LABEL: ""}}});
    if let Err(e) = Api::<Node>::all(client).patch(&cfg.node_name, &PatchParams::default(), &Patch::Merge(&patch)).await
    {
        tracing::warn!(component = COMPONENT, "cannot label the node control-plane: {e}");
    }
}

/// The status without heartbeat times: what "changed" compares.
fn comparable(s: &NodeStatus) -> serde_json::Value {
    let mut v = serde_json::to_value(s).unwrap_or_default();
    if let Some(conds) = v.get_mut("conditions").and_then(|c| c.as_array_mut()) {
        for c in conds {
            if let Some(o) = c.as_object_mut() {
                o.remove("lastHeartbeatTime");
            }
        }
    }
    v
}

#[allow(clippy::too_many_arguments)]
async fn status_loop(
    cfg: &AgentConfig,
    id: &NodeIdentity,
    nodes: &Api<Node>,
    cri: &CriClient,
    recorder: &rkube_client::events::Recorder,
    node_ref: ObjectReference,
    pressure: &eviction::PressureHandle,
    shutdown: &shutdown::ShutdownState,
) {
    let cni = cni::CniPaths::new(&cfg.data_dir);
    let mut runtime_version = String::new();
    let mut last_post: Option<Instant> = None;
    let mut posted_ready = false;
    // A shutdown starting or cancelled is posted at once (upstream's syncNodeStatus).
    let mut shutdown_changed = shutdown.subscribe();
    let started = Instant::now();
    loop {
        let node = match nodes.get_opt(&cfg.node_name).await {
            Ok(Some(n)) => Some(n),
            Ok(None) => {
                tracing::warn!(component = COMPONENT, node = %cfg.node_name, "node object is gone; registering again");
                Some(register(nodes, id).await)
            }
            Err(e) => {
                tracing::warn!(component = COMPONENT, "error getting the node: {e}");
                None
            }
        };
        if let Some(node) = node {
            if let Some(cidr) = node.spec.as_ref().and_then(|s| s.pod_cidr.as_deref()) {
                match cni.write(cidr) {
                    Ok(true) => {
                        tracing::info!(component = COMPONENT, pod_cidr = cidr, bridge = %cni.bridge, "wrote the pod network config")
                    }
                    Ok(false) => {}
                    Err(e) => tracing::error!(
                        component = COMPONENT,
                        "cannot write the CNI config in {}: {e}",
                        cni.conf_dir.display()
                    ),
                }
            }
            if runtime_version.is_empty() {
                if let Ok(v) = cri.version().await {
                    runtime_version = format!("{}://{}", v.runtime_name, v.runtime_version);
                }
            }
            let health =
                RuntimeHealth { conditions: cri.status(false).await.ok().and_then(|s| s.status).map(|s| s.conditions) };
            let images = cri.list_images(None).await.map(|l| status::images(&l)).unwrap_or_default();
            let previous = node.status.as_ref().and_then(|s| s.conditions.clone()).unwrap_or_default();
            let now = Time(jiff::Timestamp::now());
            let (conditions, events) =
                status::node_conditions(&previous, &health, &pressure.get(), shutdown.error(), now);
            let ready = conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True");
            let m = machine::MachineInfo::detect(&cfg.data_dir);
            let new = NodeStatus {
                addresses: Some(registration::addresses(id)),
                capacity: Some(status::capacity(&m)),
                allocatable: Some(status::allocatable(
                    &m,
                    cfg.kube_reserved,
                    cfg.system_reserved,
                    cfg.eviction.hard_eviction_reservation(m.memory_bytes, m.ephemeral_storage_bytes),
                )),
                conditions: Some(conditions),
                daemon_endpoints: Some(NodeDaemonEndpoints {
                    kubelet_endpoint: Some(DaemonEndpoint { port: i32::from(cfg.kubelet_port) }),
                }),
                images: Some(images),
                node_info: Some(NodeSystemInfo {
                    architecture: machine::go_arch().into(),
                    boot_id: m.boot_id,
                    container_runtime_version: runtime_version.clone(),
                    kernel_version: m.kernel_version,
                    kube_proxy_version: String::new(),
                    kubelet_version: cfg.kubelet_version.clone(),
                    machine_id: m.machine_id,
                    operating_system: "linux".into(),
                    os_image: m.os_image,
                    system_uuid: m.system_uuid,
                    swap: None,
                }),
                ..Default::default()
            };
            let old = node.status.clone().unwrap_or_default();
            let due = last_post.is_none_or(|t| t.elapsed() >= STATUS_REPORT_INTERVAL);
            if due || comparable(&old) != comparable(&new) {
                let patch = serde_json::json!({"status": new});
                match nodes.patch_status(&cfg.node_name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                    Ok(_) => {
                        last_post = Some(Instant::now());
                        for reason in events {
                            let msg = format!("Node {} status is now: {reason}", cfg.node_name);
                            recorder.event_on(node_ref.clone(), rkube_client::events::NORMAL, &reason, msg);
                        }
                        if ready && !posted_ready {
                            tracing::info!(component = COMPONENT, node = %cfg.node_name, "node is ready");
                        }
                        posted_ready |= ready;
                    }
                    Err(e) => tracing::warn!(component = COMPONENT, "error updating node status, will retry: {e}"),
                }
            }
        }
        // Until the node first posts Ready, check every 100 ms for at most
        // 120 s (upstream's fastStatusUpdateOnce and nodeReadyGracePeriod):
        // the podCIDR and the CNI config arrive within a second of
        // registration. Then the usual period.
        let fast = !posted_ready && started.elapsed() < NODE_READY_GRACE_PERIOD;
        let wait = if fast { FAST_STATUS_CHECK_INTERVAL } else { STATUS_CHECK_INTERVAL };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = shutdown_changed.changed() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swap_is_refused_with_upstreams_message() {
        let e = PreflightError::SwapOn("/swapfile file 1048572 0 -2".into()).to_string();
        assert!(
            e.starts_with(
                "running with swap on is not supported, please disable swap or set --fail-swap-on flag to false"
            ),
            "{e}"
        );
        assert!(PreflightError::NotRoot.to_string().contains("--disable-agent"));
    }
}
