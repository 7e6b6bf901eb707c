//! The container runtime the agent talks to: a containerd that rkube
//! configures, starts and supervises itself (every host path derived from the
//! data dir, so several agents on one machine don't collide), or an existing
//! CRI socket given with `--container-runtime-endpoint`.

mod config;
mod process;

pub use config::{configured_snapshotter, ContainerdConfig, RuntimePaths, Snapshotter};
pub use process::{
    managed_containerd_pids, process_running, processes, remove_pod_bridge, teardown_host_state, teardown_node,
    ManagedContainerd, RuntimeError, StartOptions,
};

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cri::CriClient;

/// The CRI socket for a data dir and an optional `--container-runtime-endpoint`
/// (which wins): the managed containerd's socket otherwise.
pub fn cri_socket(data_dir: &Path, endpoint: Option<&str>) -> PathBuf {
    match endpoint {
        Some(e) => crate::cri::socket_path(e),
        None => RuntimePaths::new(data_dir).socket,
    }
}

/// Which runtime the agent runs (`rkube server --runtime`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RuntimeKind {
    /// containerd: rkube's managed one, or `--container-runtime-endpoint`.
    #[default]
    Containerd,
    /// The in-process simulated runtime ([`crate::simulated`]): no processes,
    /// no root needed; for hollow nodes in control-plane scale tests.
    Simulated,
}

impl std::str::FromStr for RuntimeKind {
    type Err = String;

    /// `containerd` or `simulated`.
    fn from_str(s: &str) -> Result<RuntimeKind, String> {
        match s {
            "containerd" => Ok(RuntimeKind::Containerd),
            "simulated" => Ok(RuntimeKind::Simulated),
            _ => Err(format!("unknown runtime {s:?}: use containerd or simulated")),
        }
    }
}

/// The agent's container runtime: the managed containerd, or an existing
/// CRI endpoint (`--container-runtime-endpoint`) that rkube only talks to,
/// or the simulated runtime.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one per agent: size is irrelevant
pub enum ContainerRuntime {
    /// rkube's own containerd.
    Managed(ManagedContainerd),
    /// A runtime someone else runs.
    External(CriClient),
    /// The simulated runtime, served in-process on `<data-dir>/agent/simulated.sock`.
    Simulated(crate::simulated::Served),
}

impl ContainerRuntime {
    /// [`ContainerRuntime::start`] for `kind`: the simulated runtime is
    /// served on `<data-dir>/agent/simulated.sock` (`endpoint` and `opts`
    /// do not apply to it).
    pub async fn start_kind(
        kind: RuntimeKind,
        data_dir: &Path,
        endpoint: Option<&str>,
        opts: StartOptions,
    ) -> Result<ContainerRuntime, RuntimeError> {
        if kind == RuntimeKind::Containerd {
            return ContainerRuntime::start(data_dir, endpoint, opts).await;
        }
        let runtime = std::sync::Arc::new(crate::simulated::SimulatedRuntime::new(data_dir));
        let served = crate::simulated::serve(runtime, &crate::simulated::socket_path(data_dir)).await?;
        Ok(ContainerRuntime::Simulated(served))
    }

    /// With `endpoint`, waits (up to `opts.ready_timeout`, default 60 s) for
    /// the CRI there to answer Version, then imports `<data-dir>/agent/images`
    /// and provides the pause image into it; without, starts the managed
    /// containerd or adopts the one an earlier rkube left running
    /// ([`ManagedContainerd::start`]).
    pub async fn start(
        data_dir: &Path,
        endpoint: Option<&str>,
        opts: StartOptions,
    ) -> Result<ContainerRuntime, RuntimeError> {
        let Some(endpoint) = endpoint else {
            return Ok(ContainerRuntime::Managed(ManagedContainerd::start(data_dir, opts).await?));
        };
        let socket = crate::cri::socket_path(endpoint);
        let timeout = opts.ready_timeout.unwrap_or(Duration::from_secs(60));
        let hint = "check that the runtime named by --container-runtime-endpoint is running".to_string();
        let client = process::wait_ready(&socket, timeout, hint).await?;
        let images_dir = RuntimePaths::new(data_dir).images_dir;
        crate::images::prepare_runtime_images(&client, opts.snapshotter, &images_dir).await?;
        Ok(ContainerRuntime::External(client))
    }

    /// The CRI client.
    pub fn client(&self) -> &CriClient {
        match self {
            ContainerRuntime::Managed(m) => m.client(),
            ContainerRuntime::External(c) => c,
            ContainerRuntime::Simulated(s) => s.client(),
        }
    }

    /// What the node agent does with its runtime when it stops: the
    /// managed containerd is left running with the pods
    /// ([`ManagedContainerd::detach`]: the next start adopts it, `rkube
    /// killall` stops it); the simulated runtime, which lives in this
    /// process, is stopped; nothing for an external runtime.
    pub async fn stop(&mut self) {
        match self {
            ContainerRuntime::Managed(m) => m.detach().await,
            ContainerRuntime::Simulated(s) => s.stop().await,
            ContainerRuntime::External(_) => {}
        }
    }
}
