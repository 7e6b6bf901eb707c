//! The runtime foundation of rkube's node agent (the kubelet):
//!
//! - [`agent`]: the node agent (Node registration and status, Lease, CNI config);
//! - [`cri`]: a typed CRI v1 client (RuntimeService and ImageService) over
//!   gRPC on a unix socket, as upstream's kubelet speaks to its runtime;
//! - [`containerd`]: the managed containerd — a generated config whose every
//!   host path derives from the data dir, started, supervised and stopped by
//!   rkube — or an existing CRI endpoint (`--container-runtime-endpoint`);
//! - [`host`]: host prerequisites and detection (binaries, cgroup driver,
//!   overlayfs support);
//! - [`images`]: images without a registry — importing OCI and
//!   docker-archive tarballs, and building the pause and busybox images
//!   locally (`rkube images import`, `rkube images build-local`).
//!
//! Logs go through `tracing` with `component = "kubelet"` (and
//! `component = "containerd"` for the managed process).

pub mod agent;
pub mod containerd;
pub mod cri;
pub mod host;
pub mod images;
pub mod logs;
pub mod server;
pub mod simulated;
pub mod pods;

/// The pod sandbox ("pause") image the managed containerd is configured with
/// and `rkube images build-local` provides, as upstream Kubernetes 1.33's
/// default.
pub const PAUSE_IMAGE: &str = "registry.k8s.io/pause:3.10";

/// The containerd namespace the CRI plugin keeps its images and containers in.
pub const CRI_NAMESPACE: &str = "k8s.io";
