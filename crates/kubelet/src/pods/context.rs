//! What every pod worker on the node shares: the API client, the runtime,
//! the node's identity and settings, the volume manager, the prober and the
//! event recorder.

use std::net::IpAddr;
use std::path::PathBuf;

use crate::cri::CriClient;
use crate::host::CgroupDriver;

use super::dns::DnsSettings;
use super::prober::ProbeManager;
use super::volumes::VolumeManager;

/// The node-wide context of the pod workers.
#[derive(Clone)]
pub struct NodeContext {
    /// The kubelet's API client (identity `system:node:<name>`).
    pub client: kube::Client,
    /// The container runtime.
    pub cri: CriClient,
    /// The node's name.
    pub node_name: String,
    /// The node's addresses (InternalIP first): status.hostIP(s).
    pub host_ips: Vec<IpAddr>,
    /// `--data-dir`.
    pub data_dir: PathBuf,
    /// Cluster DNS settings (`--cluster-dns`, `--cluster-domain`).
    pub dns: DnsSettings,
    /// The runtime's cgroup driver.
    pub cgroup_driver: CgroupDriver,
    /// Node allocatable memory in bytes (OOM score and resourceFieldRef defaults).
    pub node_memory_bytes: i64,
    /// Node allocatable CPU in millicores (resourceFieldRef defaults).
    pub node_milli_cpu: i64,
    /// Pod volumes.
    pub volumes: std::sync::Arc<VolumeManager>,
    /// Probes.
    pub prober: ProbeManager,
    /// Events as `kubelet` on this node.
    pub recorder: rkube_client::events::Recorder,
    /// Admission of pods new to the node (eviction, node shutdown).
    pub admission: super::admission::Admission,
    /// Grace periods imposed on pods the node stops on its own.
    pub grace_overrides: super::admission::GraceOverrides,
}
