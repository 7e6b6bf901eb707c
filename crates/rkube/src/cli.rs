//! Command line: `rkube [global options] <command>`.

use std::net::IpAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use rkube_pki::San;
use rkube_store::DatastoreEndpoint;

use crate::net::Cidr;

/// Where a server or agent keeps its state unless `--data-dir` says otherwise.
pub const DEFAULT_DATA_DIR: &str = "/var/lib/rkube";

/// Kubernetes in one binary: the control plane and (in a later release) the
/// node agent.
#[derive(Debug, Parser)]
#[command(name = "rkube", about, long_about = None)]
pub struct Cli {
    /// Log filter: a level (error, warn, info, debug, trace) or RUST_LOG-style
    /// directives such as `info,rkube_apiserver=debug`. Default: $RUST_LOG,
    /// else info.
    #[arg(long, global = true, value_name = "FILTER", env = "RKUBE_LOG_LEVEL")]
    pub log_level: Option<String>,

    /// More logging: -v for debug, -vv for trace (ignored with --log-level).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a control-plane server: the API server over HTTPS, backed by the
    /// embedded SQLite store or etcd. Creates the cluster PKI and an admin
    /// kubeconfig at <data-dir>/admin.kubeconfig on first start.
    Server(ServerArgs),

    /// Join a cluster as a node: discover the cluster CA with a join token,
    /// obtain the node's certificates through CSRs, and run the node agent.
    Agent(crate::agent::AgentArgs),

    /// Manage bootstrap tokens for joining nodes.
    #[command(subcommand)]
    Token(TokenCommand),

    /// Put container images on this node without a registry.
    #[command(subcommand)]
    Images(ImagesCommand),

    /// Back up and restore the cluster's store: `rkube store snapshot save FILE`
    /// through the running API server, `rkube store snapshot restore FILE`
    /// into a stopped server's data dir (embedded store).
    #[command(subcommand)]
    Store(crate::store::StoreCommand),

    /// Remove everything a stopped server's or agent's node left running on
    /// this host: containerd and its containers, pod mounts, bridge and
    /// logs, the node network's routes, device and nft tables.
    Killall(crate::killall::KillallArgs),
}

/// `rkube images …`.
#[derive(Debug, Subcommand)]
pub enum ImagesCommand {
    /// Import image archives (OCI layout or `docker save`), keeping every tag.
    ///
    /// The archives go into containerd's k8s.io namespace, all platforms.
    Import(ImagesImportArgs),
    /// Build the pause and busybox images from this machine and import them.
    ///
    /// registry.k8s.io/pause:3.10 from rkube's static pause program and
    /// docker.io/library/busybox:<host busybox version> from Debian's
    /// busybox-static, as OCI archives in <data-dir>/agent/images; imported now
    /// if containerd is running, else by the agent when it starts containerd.
    BuildLocal(ImagesBuildLocalArgs),
}

/// Which container runtime `rkube images` talks to.
#[derive(Debug, Args)]
pub struct RuntimeEndpointArgs {
    /// The agent's data dir: its managed containerd's socket is under <data-dir>/agent/containerd.
    #[arg(long, value_name = "DIR", default_value = "/var/lib/rkube", env = "RKUBE_DATA_DIR")]
    pub data_dir: PathBuf,

    /// An existing CRI socket (unix:///path or a path) instead of the managed containerd.
    #[arg(long, value_name = "ENDPOINT", env = "RKUBE_CONTAINER_RUNTIME_ENDPOINT")]
    pub container_runtime_endpoint: Option<String>,
}

/// Flags of `rkube images import`.
#[derive(Debug, Args)]
pub struct ImagesImportArgs {
    /// The image archives.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,

    #[command(flatten)]
    pub runtime: RuntimeEndpointArgs,
}

/// Flags of `rkube images build-local`.
#[derive(Debug, Args)]
pub struct ImagesBuildLocalArgs {
    /// The statically linked busybox to build the busybox image from.
    #[arg(long, value_name = "PATH", default_value = "/bin/busybox")]
    pub busybox: PathBuf,

    #[command(flatten)]
    pub runtime: RuntimeEndpointArgs,
}

/// `rkube token …`.
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a bootstrap token and print the join token
    /// `K10<sha256 of the cluster CA certificate (DER), hex>::<id>.<secret>`.
    Create(TokenCreateArgs),
}

/// Flags of `rkube token create`.
#[derive(Debug, Args)]
pub struct TokenCreateArgs {
    /// How long the token is valid, as a Go duration (e.g. 30m, 24h0m0s); 0 means it never expires.
    #[arg(long, value_name = "DURATION", default_value = "24h0m0s", value_parser = parse_go_duration)]
    pub ttl: std::time::Duration,

    /// A human-friendly description of what the token is for.
    #[arg(long, value_name = "TEXT")]
    pub description: Option<String>,

    /// Make a control-plane join token: besides joining agents, it lets
    /// `rkube server --server URL --token TOKEN` fetch the cluster CA and
    /// service-account keys (group system:bootstrappers:rkube:control-plane).
    /// Treat it like the admin kubeconfig.
    #[arg(long)]
    pub control_plane: bool,

    /// The kubeconfig to reach the API with [default: <data-dir>/admin.kubeconfig].
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,

    /// The server's data dir (for the default kubeconfig).
    #[arg(long, value_name = "DIR", default_value = "/var/lib/rkube", env = "RKUBE_DATA_DIR")]
    pub data_dir: PathBuf,
}

/// Flags of `rkube server`. Each can also be given as an environment variable
/// `RKUBE_<FLAG>` (e.g. `RKUBE_DATA_DIR`); the flag wins.
#[derive(Debug, Args)]
pub struct ServerArgs {
    /// Directory for all state: server/tls (PKI), server/db (SQLite), admin.kubeconfig.
    #[arg(long, value_name = "DIR", default_value = "/var/lib/rkube", env = "RKUBE_DATA_DIR")]
    pub data_dir: PathBuf,

    /// Address the HTTPS API listens on (0.0.0.0 = every IPv4 address; :: = every address).
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0", env = "RKUBE_BIND_ADDRESS")]
    pub bind_address: IpAddr,

    /// Address other nodes and clients reach this server at [default: the
    /// bind address if specific, else the source address of the default
    /// route, else the first non-loopback address, else 127.0.0.1].
    #[arg(long, value_name = "ADDR", env = "RKUBE_ADVERTISE_ADDRESS")]
    pub advertise_address: Option<IpAddr>,

    /// Port of the HTTPS API.
    #[arg(long, value_name = "PORT", default_value_t = 6443, value_parser = clap::value_parser!(u16).range(1..), env = "RKUBE_HTTPS_PORT")]
    pub https_port: u16,

    /// Where cluster state lives: sqlite:///absolute/path/state.db or
    /// etcd://host:port[,host:port...] [default: sqlite://<data-dir>/server/db/state.db].
    #[arg(long, value_name = "URL", value_parser = DatastoreEndpoint::parse, env = "RKUBE_DATASTORE_ENDPOINT")]
    pub datastore_endpoint: Option<DatastoreEndpoint>,

    /// Join the cluster of the server at this URL (https://host:port) as
    /// another control-plane server on the same etcd --datastore-endpoint;
    /// needs --token.
    #[arg(long, value_name = "URL", env = "RKUBE_URL", requires = "token")]
    pub server: Option<String>,

    /// With --server: a control-plane join token (`rkube token create
    /// --control-plane` on an existing server), K10<CA hash>::<id>.<secret>.
    #[arg(long, value_name = "TOKEN", env = "RKUBE_TOKEN", hide_env_values = true, requires = "server")]
    pub token: Option<String>,

    /// Pod IP range of the cluster.
    #[arg(long, value_name = "CIDR", default_value = "10.42.0.0/16", env = "RKUBE_CLUSTER_CIDR")]
    pub cluster_cidr: Cidr,

    /// Service ClusterIP range; its first address is the `kubernetes` Service.
    #[arg(long, value_name = "CIDR", default_value = "10.43.0.0/16", env = "RKUBE_SERVICE_CIDR")]
    pub service_cidr: Cidr,

    /// ClusterIP of the cluster DNS Service; must lie in --service-cidr
    /// [default: the 10th address of --service-cidr, 10.43.0.10].
    #[arg(long, value_name = "IP", env = "RKUBE_CLUSTER_DNS")]
    pub cluster_dns: Option<IpAddr>,

    /// DNS domain of the cluster.
    #[arg(long, value_name = "DOMAIN", default_value = "cluster.local", env = "RKUBE_CLUSTER_DOMAIN")]
    pub cluster_domain: String,

    /// Port the cluster DNS server answers on (UDP and TCP) at the advertise
    /// address; the `kube-dns` Service's port 53 leads there.
    #[arg(long, value_name = "PORT", default_value_t = 53, value_parser = clap::value_parser!(u16).range(1..), env = "RKUBE_CLUSTER_DNS_PORT")]
    pub cluster_dns_port: u16,

    /// Do not run the cluster DNS server in this server (k3s's --disable coredns).
    #[arg(long, env = "RKUBE_DISABLE_CLUSTER_DNS")]
    pub disable_cluster_dns: bool,

    /// Extra name or IP for the API serving certificate; repeatable and/or comma-separated.
    #[arg(long = "tls-san", value_name = "NAME", value_delimiter = ',', value_parser = San::parse, env = "RKUBE_TLS_SAN")]
    pub tls_san: Vec<San>,

    /// Also write the admin kubeconfig (mode 0600) to this path.
    #[arg(long, value_name = "PATH", env = "RKUBE_WRITE_KUBECONFIG")]
    pub write_kubeconfig: Option<PathBuf>,

    /// Run only the control plane, without the node agent.
    #[arg(long, env = "RKUBE_DISABLE_AGENT")]
    pub disable_agent: bool,

    /// The name the node agent registers its Node as [default: the hostname, lowercased].
    #[arg(long, value_name = "NAME", env = "RKUBE_NODE_NAME")]
    pub node_name: Option<String>,

    /// The node's InternalIP address [default: the advertise address].
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
              |s| s.parse::<rkube_kubelet::containerd::RuntimeKind>().expect("a possible value")),
          conflicts_with = "container_runtime_endpoint")]
    pub runtime: rkube_kubelet::containerd::RuntimeKind,

    /// Port of the kubelet API (HTTPS: logs, exec, attach, port-forward, stats).
    #[arg(long, value_name = "PORT", default_value_t = 10250, env = "RKUBE_KUBELET_PORT")]
    pub kubelet_port: u16,

    #[command(flatten)]
    pub eviction: EvictionArgs,

    #[command(flatten)]
    pub shutdown: ShutdownArgs,

    #[command(flatten)]
    pub network: crate::networking::NetworkArgs,

    /// How long Events are kept, as a Go duration (e.g. 1h0m0s, 30m, 90s).
    #[arg(long, value_name = "DURATION", default_value = "1h0m0s", value_parser = parse_go_duration, env = "RKUBE_EVENT_TTL")]
    pub event_ttl: std::time::Duration,

    /// tolerationSeconds of the `node.kubernetes.io/not-ready:NoExecute`
    /// toleration the DefaultTolerationSeconds admission plugin adds to
    /// every new pod that does not tolerate that taint yet
    /// (kube-apiserver's --default-not-ready-toleration-seconds).
    #[arg(long, value_name = "SECONDS", default_value_t = 300, allow_negative_numbers = true,
        env = "RKUBE_DEFAULT_NOT_READY_TOLERATION_SECONDS")]
    pub default_not_ready_toleration_seconds: i64,

    /// The same for the `node.kubernetes.io/unreachable:NoExecute` taint
    /// (kube-apiserver's --default-unreachable-toleration-seconds).
    #[arg(long, value_name = "SECONDS", default_value_t = 300, allow_negative_numbers = true,
        env = "RKUBE_DEFAULT_UNREACHABLE_TOLERATION_SECONDS")]
    pub default_unreachable_toleration_seconds: i64,

    /// How often the built-in metrics-server (the metrics.k8s.io API behind
    /// `kubectl top`) scrapes every kubelet's /metrics/resource, as a Go
    /// duration; CPU usage is the rate between the last two scrapes
    /// (metrics-server's --metric-resolution; k3s runs it at 15s).
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = parse_go_duration,
        env = "RKUBE_METRIC_RESOLUTION")]
    pub metric_resolution: std::time::Duration,

    /// Most non-mutating requests in flight at once; beyond it the answer is
    /// 429 with Retry-After (watches and other long-running requests are
    /// exempt; 0 means no limit).
    #[arg(long, value_name = "N", default_value_t = 400, env = "RKUBE_MAX_REQUESTS_INFLIGHT")]
    pub max_requests_inflight: usize,

    /// Most mutating (POST, PUT, PATCH, DELETE) requests in flight at once;
    /// beyond it the answer is 429 with Retry-After (0 means no limit).
    #[arg(long, value_name = "N", default_value_t = 200, env = "RKUBE_MAX_MUTATING_REQUESTS_INFLIGHT")]
    pub max_mutating_requests_inflight: usize,

    /// The `iss` of service-account tokens this server issues, also its API
    /// audience (kube-apiserver's --service-account-issuer).
    #[arg(
        long,
        value_name = "URL",
        default_value = "https://kubernetes.default.svc.cluster.local",
        env = "RKUBE_SERVICE_ACCOUNT_ISSUER"
    )]
    pub service_account_issuer: String,

    /// Requests without credentials are system:anonymous (in
    /// system:unauthenticated) when true, a 401 when false
    /// (kube-apiserver's --anonymous-auth).
    #[arg(long, value_name = "BOOL", default_value_t = true, num_args = 0..=1, default_missing_value = "true",
        action = clap::ArgAction::Set, env = "RKUBE_ANONYMOUS_AUTH")]
    pub anonymous_auth: bool,

    /// A CSV file of static bearer tokens, one `token,user,uid[,"group1,group2"]`
    /// per line (kube-apiserver's --token-auth-file).
    #[arg(long, value_name = "PATH", env = "RKUBE_TOKEN_AUTH_FILE")]
    pub token_auth_file: Option<PathBuf>,

    /// The EncryptionConfiguration file (apiserver.config.k8s.io/v1) of the
    /// providers that encrypt resources at rest, e.g. Secrets with aescbc
    /// (kube-apiserver's --encryption-provider-config).
    #[arg(long, value_name = "PATH", env = "RKUBE_ENCRYPTION_PROVIDER_CONFIG")]
    pub encryption_provider_config: Option<PathBuf>,

    /// The audit policy (audit.k8s.io/v1 Policy); with --audit-log-path,
    /// requests are audited as it says (kube-apiserver's --audit-policy-file).
    #[arg(long, value_name = "PATH", env = "RKUBE_AUDIT_POLICY_FILE")]
    pub audit_policy_file: Option<PathBuf>,

    /// Where audit events go, one JSON line each; `-` means standard out
    /// (kube-apiserver's --audit-log-path).
    #[arg(long, value_name = "PATH", env = "RKUBE_AUDIT_LOG_PATH")]
    pub audit_log_path: Option<String>,

    /// Days to keep rotated audit log files (0: no limit).
    #[arg(long, value_name = "DAYS", default_value_t = 0, env = "RKUBE_AUDIT_LOG_MAXAGE")]
    pub audit_log_maxage: u32,

    /// Rotated audit log files to keep (0: no limit).
    #[arg(long, value_name = "N", default_value_t = 0, env = "RKUBE_AUDIT_LOG_MAXBACKUP")]
    pub audit_log_maxbackup: u32,

    /// Megabytes an audit log file may reach before it is rotated (0: no
    /// rotation unless --audit-log-maxage or --audit-log-maxbackup is set,
    /// then 100).
    #[arg(long, value_name = "MB", default_value_t = 0, env = "RKUBE_AUDIT_LOG_MAXSIZE")]
    pub audit_log_maxsize: u32,

    /// Controllers to run: `*` (those on by default), `name` to enable,
    /// `-name` to disable (kube-controller-manager's --controllers; rkube
    /// adds the bootstrap-token controllers node join needs, as kubeadm does).
    #[arg(long, value_name = "LIST", default_value = rkube_controllers::DEFAULT_CONTROLLERS,
        value_parser = rkube_controllers::ControllerSelection::parse, env = "RKUBE_CONTROLLERS")]
    pub controllers: rkube_controllers::ControllerSelection,

    /// Do not run the controller manager in this server.
    #[arg(long, env = "RKUBE_DISABLE_CONTROLLER_MANAGER")]
    pub disable_controller_manager: bool,

    /// Do not run the scheduler in this server.
    #[arg(long, env = "RKUBE_DISABLE_SCHEDULER")]
    pub disable_scheduler: bool,

    /// A KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) file
    /// for the scheduler (kube-scheduler's --config).
    #[arg(long, value_name = "FILE", env = "RKUBE_SCHEDULER_CONFIG")]
    pub scheduler_config: Option<PathBuf>,

    /// Longest lifetime of certificates the CSR signer issues
    /// (kube-controller-manager's --cluster-signing-duration).
    #[arg(long, value_name = "DURATION", default_value = "8760h0m0s", value_parser = parse_go_duration,
        env = "RKUBE_CLUSTER_SIGNING_DURATION")]
    pub cluster_signing_duration: std::time::Duration,

    /// How often the node lifecycle controller checks node health
    /// (kube-controller-manager's --node-monitor-period).
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_go_duration,
        env = "RKUBE_NODE_MONITOR_PERIOD")]
    pub node_monitor_period: std::time::Duration,

    /// How long a node may go without a heartbeat (status or Lease) before
    /// it is marked Unknown (kube-controller-manager's
    /// --node-monitor-grace-period; 50s since Kubernetes 1.32).
    #[arg(long, value_name = "DURATION", default_value = "50s", value_parser = parse_go_duration,
        env = "RKUBE_NODE_MONITOR_GRACE_PERIOD")]
    pub node_monitor_grace_period: std::time::Duration,

    /// The same for a node that never posted its status
    /// (kube-controller-manager's --node-startup-grace-period).
    #[arg(long, value_name = "DURATION", default_value = "1m0s", value_parser = parse_go_duration,
        env = "RKUBE_NODE_STARTUP_GRACE_PERIOD")]
    pub node_startup_grace_period: std::time::Duration,

    /// Nodes per second whose pods are evicted (NoExecute-tainted) in a
    /// healthy zone (kube-controller-manager's --node-eviction-rate).
    #[arg(long, value_name = "RATE", default_value_t = 0.1, env = "RKUBE_NODE_EVICTION_RATE")]
    pub node_eviction_rate: f64,

    /// The same in a partially disrupted zone; 0 in zones of at most
    /// --large-cluster-size-threshold nodes (--secondary-node-eviction-rate).
    #[arg(long, value_name = "RATE", default_value_t = 0.01, env = "RKUBE_SECONDARY_NODE_EVICTION_RATE")]
    pub secondary_node_eviction_rate: f64,

    /// Share of not-Ready nodes (more than 2) that makes a zone partially
    /// disrupted (--unhealthy-zone-threshold).
    #[arg(long, value_name = "FRACTION", default_value_t = 0.55, env = "RKUBE_UNHEALTHY_ZONE_THRESHOLD")]
    pub unhealthy_zone_threshold: f64,

    /// Zones of at most this many nodes stop evicting when partially
    /// disrupted (--large-cluster-size-threshold).
    #[arg(long, value_name = "N", default_value_t = 50, env = "RKUBE_LARGE_CLUSTER_SIZE_THRESHOLD")]
    pub large_cluster_size_threshold: usize,

    /// Prefix length of each node's pod range carved from --cluster-cidr
    /// [default: 24 for IPv4, 64 for IPv6] (--node-cidr-mask-size).
    #[arg(long, value_name = "BITS", env = "RKUBE_NODE_CIDR_MASK_SIZE")]
    pub node_cidr_mask_size: Option<u8>,

    /// Terminated pods kept before the pod garbage collector deletes the
    /// oldest; 0 or less: never (kube-controller-manager's
    /// --terminated-pod-gc-threshold).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 12500,
        allow_negative_numbers = true,
        env = "RKUBE_TERMINATED_POD_GC_THRESHOLD"
    )]
    pub terminated_pod_gc_threshold: i32,

    /// Most endpoints in one EndpointSlice, 1 to 1000
    /// (kube-controller-manager's --max-endpoints-per-slice).
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = parse_max_endpoints_per_slice,
        env = "RKUBE_MAX_ENDPOINTS_PER_SLICE")]
    pub max_endpoints_per_slice: usize,

    /// How often every ResourceQuota's usage is recomputed from scratch
    /// (kube-controller-manager's --resource-quota-sync-period).
    #[arg(long, value_name = "DURATION", default_value = "5m0s", value_parser = parse_go_duration,
        env = "RKUBE_RESOURCE_QUOTA_SYNC_PERIOD")]
    pub resource_quota_sync_period: std::time::Duration,

    /// How often the horizontal pod autoscaler reconciles every HPA
    /// (kube-controller-manager's --horizontal-pod-autoscaler-sync-period).
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = parse_go_duration,
        env = "RKUBE_HORIZONTAL_POD_AUTOSCALER_SYNC_PERIOD")]
    pub horizontal_pod_autoscaler_sync_period: std::time::Duration,

    /// Minimum relative change of the usage-to-target ratio for the HPA to
    /// scale (--horizontal-pod-autoscaler-tolerance).
    #[arg(long, value_name = "FRACTION", default_value_t = 0.1, env = "RKUBE_HORIZONTAL_POD_AUTOSCALER_TOLERANCE")]
    pub horizontal_pod_autoscaler_tolerance: f64,

    /// After a pod starts, how long its CPU samples count only once it is
    /// Ready for a full metric window
    /// (--horizontal-pod-autoscaler-cpu-initialization-period).
    #[arg(long, value_name = "DURATION", default_value = "5m0s", value_parser = parse_go_duration,
        env = "RKUBE_HORIZONTAL_POD_AUTOSCALER_CPU_INITIALIZATION_PERIOD")]
    pub horizontal_pod_autoscaler_cpu_initialization_period: std::time::Duration,

    /// After the CPU initialization period, an unready pod is still ignored
    /// if its readiness last changed within this long of its start
    /// (--horizontal-pod-autoscaler-initial-readiness-delay).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_go_duration,
        env = "RKUBE_HORIZONTAL_POD_AUTOSCALER_INITIAL_READINESS_DELAY")]
    pub horizontal_pod_autoscaler_initial_readiness_delay: std::time::Duration,

    /// How far back the HPA looks for a higher recommendation before
    /// scaling down, when an HPA sets no behavior
    /// (--horizontal-pod-autoscaler-downscale-stabilization).
    #[arg(long, value_name = "DURATION", default_value = "5m0s", value_parser = parse_go_duration,
        env = "RKUBE_HORIZONTAL_POD_AUTOSCALER_DOWNSCALE_STABILIZATION")]
    pub horizontal_pod_autoscaler_downscale_stabilization: std::time::Duration,
}

/// The node agent's eviction and image GC flags (upstream kubelet's names and defaults).
#[derive(Debug, Clone, Args)]
pub struct EvictionArgs {
    /// Hard eviction thresholds, `signal<quantity` or `signal<percent%` separated by commas
    /// (memory.available, nodefs.available, nodefs.inodesFree, imagefs.available,
    /// imagefs.inodesFree, pid.available); the empty string disables eviction.
    #[arg(long, value_name = "LIST", default_value = rkube_kubelet::agent::eviction::DEFAULT_EVICTION_HARD,
          env = "RKUBE_EVICTION_HARD")]
    pub eviction_hard: String,

    /// How long a pressure condition stays True after its threshold was last crossed (Go duration).
    #[arg(long, value_name = "DURATION", default_value = "5m0s", value_parser = parse_go_duration,
          env = "RKUBE_EVICTION_PRESSURE_TRANSITION_PERIOD")]
    pub eviction_pressure_transition_period: std::time::Duration,

    /// Soft eviction thresholds, `signal<quantity` or `signal<percent%` separated by commas
    /// (the signals of --eviction-hard); each must be crossed for its
    /// --eviction-soft-grace-period before it evicts a pod.
    #[arg(long, value_name = "LIST", default_value = "", env = "RKUBE_EVICTION_SOFT")]
    pub eviction_soft: String,

    /// Grace periods of the soft thresholds, `signal=duration` separated by commas
    /// (Go durations, e.g. memory.available=1m30s); every soft threshold needs one.
    #[arg(long, value_name = "LIST", default_value = "", env = "RKUBE_EVICTION_SOFT_GRACE_PERIOD")]
    pub eviction_soft_grace_period: String,

    /// Most grace (seconds) a pod evicted by a soft threshold gets; it gets its own
    /// terminationGracePeriodSeconds if smaller (hard evictions kill at once).
    #[arg(long, value_name = "SECONDS", default_value_t = 0, allow_negative_numbers = true,
          env = "RKUBE_EVICTION_MAX_POD_GRACE_PERIOD")]
    pub eviction_max_pod_grace_period: i64,

    /// Minimum reclaims, `signal=quantity` or `signal=percent%` separated by commas: once a
    /// threshold of the signal is met, pressure lasts until the signal is above threshold + this.
    #[arg(long, value_name = "LIST", default_value = "", env = "RKUBE_EVICTION_MINIMUM_RECLAIM")]
    pub eviction_minimum_reclaim: String,

    /// Image filesystem usage percent above which image GC runs (100 disables it).
    #[arg(long, value_name = "PERCENT", default_value_t = 85, env = "RKUBE_IMAGE_GC_HIGH_THRESHOLD")]
    pub image_gc_high_threshold: u8,

    /// Image filesystem usage percent image GC frees down to.
    #[arg(long, value_name = "PERCENT", default_value_t = 80, env = "RKUBE_IMAGE_GC_LOW_THRESHOLD")]
    pub image_gc_low_threshold: u8,

    /// How often image GC checks the image filesystem (Go duration; upstream's fixed 5m).
    #[arg(long, value_name = "DURATION", default_value = "5m0s", value_parser = parse_go_duration,
          env = "RKUBE_IMAGE_GC_PERIOD")]
    pub image_gc_period: std::time::Duration,

    /// Minimum age of an unused image before image GC may remove it (Go duration).
    #[arg(long, value_name = "DURATION", default_value = "2m0s", value_parser = parse_go_duration,
          env = "RKUBE_MINIMUM_IMAGE_TTL_DURATION")]
    pub minimum_image_ttl_duration: std::time::Duration,
}

impl EvictionArgs {
    /// The agent's eviction settings; errors name the flag at fault.
    pub fn config(&self) -> anyhow::Result<rkube_kubelet::agent::eviction::EvictionConfig> {
        use rkube_kubelet::agent::{eviction, image_gc};
        // Each flag on its own first, so that an error names the flag at fault.
        eviction::parse_thresholds(&self.eviction_hard).map_err(|e| anyhow::anyhow!("--eviction-hard: {e}"))?;
        eviction::parse_thresholds(&self.eviction_soft).map_err(|e| anyhow::anyhow!("--eviction-soft: {e}"))?;
        eviction::parse_grace_periods(&self.eviction_soft_grace_period)
            .map_err(|e| anyhow::anyhow!("--eviction-soft-grace-period: {e}"))?;
        eviction::parse_min_reclaims(&self.eviction_minimum_reclaim)
            .map_err(|e| anyhow::anyhow!("--eviction-minimum-reclaim: {e}"))?;
        let thresholds = eviction::threshold_config(
            &self.eviction_hard,
            &self.eviction_soft,
            &self.eviction_soft_grace_period,
            &self.eviction_minimum_reclaim,
        )
        .map_err(|e| anyhow::anyhow!("--eviction-soft-grace-period: {e}"))?;
        let image_gc = image_gc::ImageGcConfig {
            high_percent: self.image_gc_high_threshold,
            low_percent: self.image_gc_low_threshold,
            period: self.image_gc_period.max(std::time::Duration::from_secs(1)),
            min_age: self.minimum_image_ttl_duration,
        };
        image_gc.validate().map_err(|e| anyhow::anyhow!(e))?;
        Ok(eviction::EvictionConfig {
            thresholds,
            pressure_transition_period: self.eviction_pressure_transition_period,
            max_pod_grace_period: self.eviction_max_pod_grace_period,
            image_gc,
        })
    }
}

/// The node agent's graceful node shutdown flags (upstream kubelet's
/// `shutdownGracePeriod` and `shutdownGracePeriodCriticalPods`).
#[derive(Debug, Clone, Args)]
pub struct ShutdownArgs {
    /// How long the node delays a system shutdown (a systemd-logind delay inhibitor) to stop its
    /// pods gracefully (Go duration; 0 disables graceful node shutdown).
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_go_duration,
          env = "RKUBE_SHUTDOWN_GRACE_PERIOD")]
    pub shutdown_grace_period: std::time::Duration,

    /// The part of --shutdown-grace-period reserved for critical pods (priority >= 2000000000),
    /// which are stopped after the others (Go duration; at most --shutdown-grace-period).
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_go_duration,
          env = "RKUBE_SHUTDOWN_GRACE_PERIOD_CRITICAL_PODS")]
    pub shutdown_grace_period_critical_pods: std::time::Duration,
}

impl ShutdownArgs {
    /// The agent's shutdown settings; errors are upstream's configuration messages.
    pub fn config(&self) -> anyhow::Result<rkube_kubelet::agent::shutdown::ShutdownConfig> {
        rkube_kubelet::agent::shutdown::ShutdownConfig::new(
            self.shutdown_grace_period,
            self.shutdown_grace_period_critical_pods,
        )
        .map_err(|e| anyhow::anyhow!("--shutdown-grace-period / --shutdown-grace-period-critical-pods: {e}"))
    }
}

/// Parses a flag's duration as kube's flags do, with Go's
/// `time.ParseDuration` (`1h0m0s`, `30m`, `1.5h`, `500ms`, `10us`): see
/// [`rkube_apimachinery::duration::parse_go_duration`]. Negative durations
/// are refused. Errors are Go's text followed by an example.
pub fn parse_go_duration(s: &str) -> Result<std::time::Duration, String> {
    rkube_apimachinery::duration::parse_go_duration(s).map_err(|e| format!("{e}: use e.g. 1h0m0s, 30m or 90s"))
}

/// `--max-endpoints-per-slice`: 1 to 1000, as kube-controller-manager's
/// EndpointSlice options validate it (with its messages).
pub fn parse_max_endpoints_per_slice(s: &str) -> Result<usize, String> {
    let n: i64 = s.trim().parse().map_err(|e| format!("invalid number {s:?}: {e}"))?;
    match n {
        ..1 => Err(format!("max-endpoints-per-slice must not be less than 1, but got {n}")),
        1001.. => Err(format!("max-endpoints-per-slice must not be more than 1000, but got {n}")),
        _ => Ok(n as usize),
    }
}

/// The version line: rkube's version and the Kubernetes API level it serves.
pub fn version_string() -> String {
    use rkube_apimachinery::version;
    format!(
        "{} (Kubernetes API level {}.{}, reported as {})",
        env!("CARGO_PKG_VERSION"),
        version::KUBERNETES_MAJOR,
        version::KUBERNETES_MINOR,
        version::git_version()
    )
}

/// Checks across flags that clap cannot express. Returns the message to
/// show (naming the flags involved) on the first problem found.
pub fn validate(args: &ServerArgs) -> Result<(), String> {
    if args.data_dir.as_os_str().is_empty() {
        return Err("--data-dir must not be empty".into());
    }
    if let Some(ip) = args.advertise_address {
        if ip.is_unspecified() || ip.is_multicast() {
            return Err(format!(
                "--advertise-address {ip} is not an address clients can reach; give one of this host's addresses"
            ));
        }
    }
    let svc = &args.service_cidr;
    // kube-apiserver refuses service ranges of more than 2^20 addresses.
    if svc.host_bits() > 20 {
        let min = if svc.network().is_ipv4() { 12 } else { 108 };
        return Err(format!(
            "--service-cidr {svc} is too large: at most 2^20 addresses are allowed, so the prefix length must be at least /{min}"
        ));
    }
    if svc.host_bits() < 4 {
        return Err(format!(
            "--service-cidr {svc} is too small: it needs room for the kubernetes Service, the cluster DNS and other Services (use /28 or larger)"
        ));
    }
    if args.cluster_cidr.overlaps(svc) {
        return Err(format!(
            "--cluster-cidr {} and --service-cidr {svc} overlap; pod and Service addresses must come from separate ranges",
            args.cluster_cidr
        ));
    }
    if let Some(dns) = args.cluster_dns {
        if !svc.contains(dns) {
            return Err(format!(
                "--cluster-dns {dns} is outside --service-cidr {svc}; pick an address inside it, e.g. {}",
                default_cluster_dns(svc)
            ));
        }
        let kubernetes = svc.nth(1).expect("a service CIDR of /28 or larger has a first address");
        if dns == svc.network() || dns == svc.last() || dns == kubernetes {
            return Err(format!(
                "--cluster-dns {dns} is reserved in --service-cidr {svc} (network, broadcast or the kubernetes Service address {kubernetes}); use e.g. {}",
                default_cluster_dns(svc)
            ));
        }
    }
    San::parse(&args.cluster_domain).ok().filter(|s| matches!(s, San::Dns(d) if !d.starts_with('*'))).ok_or_else(
        || format!("--cluster-domain {:?} is not a valid DNS domain such as cluster.local", args.cluster_domain),
    )?;
    Ok(())
}

/// The default cluster DNS address: the 10th address of the service range
/// (10.43.0.10 for 10.43.0.0/16), as k3s and kubeadm choose it.
pub fn default_cluster_dns(service_cidr: &Cidr) -> IpAddr {
    service_cidr.nth(10).expect("service CIDRs are validated to hold at least 16 addresses")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<ServerArgs, String> {
        let mut argv = vec!["rkube", "server"];
        argv.extend_from_slice(args);
        let cli = Cli::try_parse_from(argv).map_err(|e| e.to_string())?;
        let Command::Server(server) = cli.command else { return Err("not a server command".into()) };
        validate(&server)?;
        Ok(server)
    }

    #[test]
    fn max_endpoints_per_slice_is_bounded_as_upstream() {
        assert_eq!(parse(&[]).unwrap().max_endpoints_per_slice, 100);
        assert_eq!(parse(&["--max-endpoints-per-slice", "1000"]).unwrap().max_endpoints_per_slice, 1000);
        let low = parse(&["--max-endpoints-per-slice", "0"]).unwrap_err();
        assert!(low.contains("max-endpoints-per-slice must not be less than 1, but got 0"), "{low}");
        let high = parse(&["--max-endpoints-per-slice", "1001"]).unwrap_err();
        assert!(high.contains("max-endpoints-per-slice must not be more than 1000, but got 1001"), "{high}");
        assert_eq!(parse(&[]).unwrap().resource_quota_sync_period, std::time::Duration::from_secs(300));
    }

    #[test]
    fn metric_resolution_defaults_to_15s() {
        assert_eq!(parse(&[]).unwrap().metric_resolution, std::time::Duration::from_secs(15));
        let args = parse(&["--metric-resolution", "2s"]).unwrap();
        assert_eq!(args.metric_resolution, std::time::Duration::from_secs(2));
    }

    #[test]
    fn event_ttl_takes_go_durations() {
        assert_eq!(parse(&[]).unwrap().event_ttl, std::time::Duration::from_secs(3600));
        assert_eq!(parse_go_duration("1h30m").unwrap(), std::time::Duration::from_secs(5400));
        assert_eq!(parse_go_duration("90s").unwrap(), std::time::Duration::from_secs(90));
        assert_eq!(parse_go_duration("1.5h").unwrap(), std::time::Duration::from_secs(5400));
        assert_eq!(parse_go_duration("500ms").unwrap(), std::time::Duration::from_millis(500));
        // Beyond Go's int64 nanoseconds: refused, not a panic.
        assert_eq!(
            parse_go_duration("99999999999999999999h").unwrap_err(),
            "time: invalid duration \"99999999999999999999h\": use e.g. 1h0m0s, 30m or 90s"
        );
        for bad in ["", "1d", "h", "10", "-1h"] {
            assert!(parse_go_duration(bad).is_err(), "{bad}");
        }
        // Every unit of Go's time.ParseDuration, as kube's flags take.
        assert_eq!(parse_go_duration("1m500us250ns").unwrap(), std::time::Duration::from_nanos(60_000_500_250));
        let err = parse(&["--event-ttl", "1d"]).unwrap_err();
        assert!(err.contains("time: unknown unit \"d\" in duration \"1d\""), "{err}");
    }

    #[test]
    fn default_toleration_seconds_default_to_upstreams_and_take_numbers() {
        let args = parse(&[]).unwrap();
        assert_eq!((args.default_not_ready_toleration_seconds, args.default_unreachable_toleration_seconds), (300, 300));
        let args =
            parse(&["--default-not-ready-toleration-seconds", "5", "--default-unreachable-toleration-seconds", "10"])
                .unwrap();
        assert_eq!((args.default_not_ready_toleration_seconds, args.default_unreachable_toleration_seconds), (5, 10));
        assert!(parse(&["--default-unreachable-toleration-seconds", "soon"]).is_err());
    }

    #[test]
    fn inflight_limits_default_to_upstreams_and_take_numbers() {
        let args = parse(&[]).unwrap();
        assert_eq!((args.max_requests_inflight, args.max_mutating_requests_inflight), (400, 200));
        let args = parse(&["--max-requests-inflight", "5", "--max-mutating-requests-inflight", "0"]).unwrap();
        assert_eq!((args.max_requests_inflight, args.max_mutating_requests_inflight), (5, 0));
        assert!(parse(&["--max-requests-inflight", "-1"]).is_err());
    }

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn defaults_are_k3s_style() {
        let a = parse(&[]).unwrap();
        assert_eq!(a.data_dir, PathBuf::from("/var/lib/rkube"));
        assert_eq!(a.bind_address.to_string(), "0.0.0.0");
        assert_eq!(a.https_port, 6443);
        assert_eq!(a.cluster_cidr.to_string(), "10.42.0.0/16");
        assert_eq!(a.service_cidr.to_string(), "10.43.0.0/16");
        assert_eq!(default_cluster_dns(&a.service_cidr).to_string(), "10.43.0.10");
        assert_eq!(a.cluster_domain, "cluster.local");
        assert!(a.datastore_endpoint.is_none() && !a.disable_agent);
    }

    #[test]
    fn tls_sans_are_repeatable_and_comma_separated() {
        let a = parse(&["--tls-san", "a.example.com,10.1.2.3", "--tls-san", "b.example.com"]).unwrap();
        let got: Vec<String> = a.tls_san.iter().map(ToString::to_string).collect();
        assert_eq!(got, ["a.example.com", "10.1.2.3", "b.example.com"]);
    }

    #[test]
    fn bad_flags_are_refused_with_the_flag_named() {
        let cases: &[(&[&str], &str)] = &[
            (&["--cluster-cidr", "nonsense"], "--cluster-cidr"),
            (&["--service-cidr", "10.0.0.0/8"], "too large"),
            (&["--cluster-cidr", "10.0.0.0/8"], "overlap"),
            (&["--cluster-dns", "10.42.0.10"], "outside --service-cidr"),
            (&["--cluster-dns", "10.43.0.1"], "reserved"),
            (&["--datastore-endpoint", "mysql://x"], "use sqlite://"),
            (&["--https-port", "0"], "--https-port"),
            (&["--bind-address", "localhost"], "--bind-address"),
            (&["--tls-san", "bad name"], "invalid TLS SAN"),
            (&["--cluster-domain", "bad domain"], "--cluster-domain"),
            (&["--advertise-address", "0.0.0.0"], "--advertise-address"),
        ];
        for (args, want) in cases {
            let err = parse(args).err().unwrap_or_else(|| panic!("{args:?} should be refused"));
            assert!(err.contains(want), "{args:?}: {err}");
        }
    }

    #[test]
    fn controller_manager_flags_and_token_create_parse() {
        let a = parse(&[]).unwrap();
        assert_eq!(a.controllers, rkube_controllers::ControllerSelection::default());
        assert!(!a.disable_controller_manager);
        assert_eq!(a.cluster_signing_duration, std::time::Duration::from_secs(8760 * 3600));
        let a = parse(&["--controllers", "*,-csrsigning", "--disable-controller-manager"]).unwrap();
        assert_eq!(a.controllers, rkube_controllers::ControllerSelection::parse("*,-csrsigning").unwrap());
        assert!(a.disable_controller_manager);
        assert!(parse(&["--controllers", "*,nope"]).unwrap_err().contains("not in the list of known controllers"));
        let cli = Cli::try_parse_from(["rkube", "token", "create", "--ttl", "2h", "--description", "node-2"]).unwrap();
        let Command::Token(TokenCommand::Create(t)) = cli.command else { panic!("not token create") };
        assert_eq!((t.ttl, t.description.as_deref()), (std::time::Duration::from_secs(7200), Some("node-2")));
        let cli = Cli::try_parse_from(["rkube", "token", "create"]).unwrap();
        let Command::Token(TokenCommand::Create(t)) = cli.command else { panic!("not token create") };
        assert_eq!(t.ttl, std::time::Duration::from_secs(24 * 3600));
    }

    #[test]
    fn anonymous_auth_is_a_go_style_bool_and_the_token_file_a_path() {
        assert!(parse(&[]).unwrap().anonymous_auth);
        assert!(!parse(&["--anonymous-auth=false"]).unwrap().anonymous_auth);
        assert!(parse(&["--anonymous-auth"]).unwrap().anonymous_auth);
        assert!(parse(&["--anonymous-auth=maybe"]).is_err());
        assert_eq!(parse(&[]).unwrap().token_auth_file, None);
        let a = parse(&["--token-auth-file", "/etc/tokens.csv"]).unwrap();
        assert_eq!(a.token_auth_file, Some(PathBuf::from("/etc/tokens.csv")));
    }

    #[test]
    fn version_names_the_api_level() {
        assert!(version_string().contains("Kubernetes API level 1.33"));
    }
}
