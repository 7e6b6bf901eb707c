//! A simulated container runtime (`rkube server --runtime simulated`): an
//! in-process CRI v1 server that runs no processes, so that the real
//! kubelet code (pod workers, status, probes, the kubelet API) can drive
//! "hollow" nodes by the hundred in one process for control-plane scale
//! tests, as upstream's kubemark hollow nodes do with a fake runtime.
//!
//! Semantics (everything in memory, behind one mutex per node):
//! - Sandboxes are Ready at once, with an IP from the node's pod CIDR
//!   (taken from the agent's CNI conflist
//!   `<data-dir>/agent/cni/net.d/10-rkube.conflist` or from
//!   UpdateRuntimeConfig; host-local's order: gateway first, then round
//!   robin); hostNetwork sandboxes get none. Status reports RuntimeReady
//!   always and NetworkReady once a pod CIDR is known.
//! - Containers go Created → Running on StartContainer → Exited on
//!   StopContainer: exit code 137 (reason Error) with timeout 0 or when
//!   their sandbox is stopped (a kill), else 0 (Completed: the simulated
//!   process honours its stop signal).
//! - StartContainer writes one CRI-format line to the container's log
//!   (`<log_directory>/<log_path>`), `… stdout F [simulated] container
//!   <name> started by the rkube simulated runtime`, so `kubectl logs` shows
//!   clearly marked output; a log that cannot be written is only a warning.
//! - ExecSync (exec probes) answers exit code 0 with stdout
//!   `[simulated] exec <cmd…>\n`. Exec, Attach and PortForward answer
//!   Unimplemented with a message saying so: there is no process to stream.
//! - Every PullImage succeeds at once ([`images`]); stats are all zero.
//! - RemovePodSandbox of a Ready sandbox stops it first (CRI's contract;
//!   containerd itself refuses).

pub mod images;
pub mod network;
mod service;
pub mod state;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

use crate::cri::v1::image_service_server::ImageServiceServer;
use crate::cri::v1::runtime_service_server::RuntimeServiceServer;
use crate::cri::{CriClient, CriError};

const COMPONENT: &str = "kubelet";

/// `runtime_name` of Version (nodeInfo.containerRuntimeVersion reads
/// `rkube-simulated://<rkube version>`).
pub const RUNTIME_NAME: &str = "rkube-simulated";

/// The simulated runtime's socket for a data dir: `<data-dir>/agent/simulated.sock`.
pub fn socket_path(data_dir: &Path) -> PathBuf {
    data_dir.join("agent").join("simulated.sock")
}

/// One simulated node's runtime: its state and the CRI services over it.
#[derive(Debug)]
pub struct SimulatedRuntime {
    state: Mutex<state::State>,
    /// The "filesystem" ImageFsInfo and stats name.
    mountpoint: String,
}

impl SimulatedRuntime {
    /// An empty runtime for the agent of `data_dir` (whose CNI conflist
    /// gives the pod CIDR), with the pause image already present (rkube
    /// provides it itself at start with the real runtime too).
    pub fn new(data_dir: &Path) -> SimulatedRuntime {
        let conflist = crate::agent::cni::CniPaths::new(data_dir).conf_dir.join(crate::agent::cni::CONFLIST_NAME);
        let mut state = state::State::new(conflist);
        state.images.pull(crate::PAUSE_IMAGE);
        let mountpoint = data_dir.join("agent").join("simulated").to_string_lossy().into_owned();
        SimulatedRuntime { state: Mutex::new(state), mountpoint }
    }

    /// Sets the node's pod CIDR (as UpdateRuntimeConfig does); errors for
    /// text that is not a CIDR.
    pub fn set_pod_cidr(&self, cidr: &str) -> Result<(), String> {
        let cidr = network::PodCidr::parse(cidr)?;
        self.state().ips.set_cidr(cidr);
        Ok(())
    }

    /// (sandboxes, containers) currently held.
    pub fn counts(&self) -> (usize, usize) {
        let s = self.state();
        (s.sandboxes.len(), s.containers.len())
    }

    fn state(&self) -> MutexGuard<'_, state::State> {
        // A panic while holding the lock leaves consistent maps: keep going.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A runtime served on a unix socket, with a connected client.
#[derive(Debug)]
pub struct Served {
    runtime: Arc<SimulatedRuntime>,
    client: CriClient,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
    socket: PathBuf,
}

/// Serves `runtime` (RuntimeService and ImageService over gRPC) on the unix
/// socket `socket` (a stale socket file is replaced; its directory is
/// created) and connects a client to it.
pub async fn serve(runtime: Arc<SimulatedRuntime>, socket: &Path) -> Result<Served, CriError> {
    let connect_err = |e: std::io::Error| CriError::Connect { socket: socket.to_path_buf(), message: e.to_string() };
    if let Some(dir) = socket.parent() {
        std::fs::create_dir_all(dir).map_err(connect_err)?;
    }
    match std::fs::remove_file(socket) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(connect_err(e)),
    }
    let listener = tokio::net::UnixListener::bind(socket).map_err(connect_err)?;
    let (tx, rx) = oneshot::channel::<()>();
    let router = tonic::transport::Server::builder()
        .add_service(RuntimeServiceServer::from_arc(runtime.clone()))
        .add_service(ImageServiceServer::from_arc(runtime.clone()));
    let incoming = tokio_stream::wrappers::UnixListenerStream::new(listener);
    let path = socket.to_path_buf();
    let task = tokio::spawn(async move {
        if let Err(e) = router.serve_with_incoming_shutdown(incoming, async { rx.await.unwrap_or(()) }).await {
            tracing::error!(component = COMPONENT, socket = %path.display(), "the simulated runtime stopped: {e}");
        }
    });
    let client = CriClient::connect(socket).await?;
    tracing::info!(component = COMPONENT, socket = %socket.display(), "serving the simulated container runtime");
    Ok(Served { runtime, client, shutdown: Some(tx), task: Some(task), socket: socket.to_path_buf() })
}

impl Served {
    /// A client of the served runtime.
    pub fn client(&self) -> &CriClient {
        &self.client
    }

    /// The runtime itself (e.g. to set its pod CIDR directly).
    pub fn runtime(&self) -> &Arc<SimulatedRuntime> {
        &self.runtime
    }

    /// Stops serving and removes the socket.
    pub async fn stop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(mut task) = self.task.take() {
            // Graceful shutdown waits for open connections (ours included): bound it.
            if tokio::time::timeout(std::time::Duration::from_secs(1), &mut task).await.is_err() {
                task.abort();
            }
        }
        let _ = std::fs::remove_file(&self.socket);
    }
}

#[cfg(test)]
mod tests;
