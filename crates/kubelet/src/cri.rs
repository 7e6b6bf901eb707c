//! A CRI v1 client over a unix socket: the RuntimeService and ImageService
//! calls the kubelet makes, each returning a [`CriError`] that says what
//! failed, on which socket, and what to do about it.
//!
//! The bindings are the `k8s-cri` crate's (generated from upstream's
//! `k8s.io/cri-api/pkg/apis/runtime/v1/api.proto`); [`v1`] re-exports them so
//! callers build requests with the upstream message types.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use k8s_cri::v1::image_service_client::ImageServiceClient;
use k8s_cri::v1::runtime_service_client::RuntimeServiceClient;
use tonic::transport::{Channel, Endpoint, Uri};

/// The generated CRI v1 message types.
pub use k8s_cri::v1;

/// Upstream kubelet's default timeout for a CRI call (`--runtime-request-timeout`, 2 min).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// A failed CRI call or connection.
#[derive(Debug, thiserror::Error)]
pub enum CriError {
    /// The socket could not be reached at all.
    #[error(
        "cannot connect to the container runtime at unix://{socket}: {message}; is containerd running \
         (rkube starts its own unless --container-runtime-endpoint is given)?"
    )]
    Connect {
        /// The socket dialled.
        socket: PathBuf,
        /// The transport's error chain.
        message: String,
    },
    /// The runtime answered the call with a gRPC error.
    #[error("CRI {call} on unix://{socket} failed: {code:?}: {message}{hint}")]
    Call {
        /// The RPC, e.g. `RunPodSandbox`.
        call: &'static str,
        /// The runtime's socket.
        socket: PathBuf,
        /// The gRPC status code (NotFound for a missing container, sandbox or image).
        code: tonic::Code,
        /// The runtime's message.
        message: String,
        /// What to do about it (may be empty).
        hint: &'static str,
    },
}

impl CriError {
    /// The gRPC status code of a failed call (`Unavailable` for a connection failure).
    pub fn code(&self) -> tonic::Code {
        match self {
            CriError::Connect { .. } => tonic::Code::Unavailable,
            CriError::Call { code, .. } => *code,
        }
    }

    /// Whether the runtime said the object does not exist.
    pub fn is_not_found(&self) -> bool {
        self.code() == tonic::Code::NotFound
    }
}

/// What to do about a failed call, by its status code.
fn hint(code: tonic::Code) -> &'static str {
    match code {
        tonic::Code::Unavailable => " (the runtime is not answering: check that containerd is running and its log)",
        tonic::Code::Unimplemented => " (the runtime does not implement CRI v1: containerd 1.6 or newer is needed)",
        tonic::Code::DeadlineExceeded => " (the runtime did not answer in time: check containerd's log)",
        _ => "",
    }
}

/// A tonic connector that dials one unix socket whatever the URI says.
#[derive(Clone)]
struct UnixConnector(PathBuf);

impl tower_service::Service<Uri> for UnixConnector {
    type Response = TokioIo<tokio::net::UnixStream>;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _uri: Uri) -> Self::Future {
        let path = self.0.clone();
        Box::pin(async move { Ok(TokioIo::new(tokio::net::UnixStream::connect(path).await?)) })
    }
}

/// A connected CRI v1 client. Cheap to clone (the channel is shared). Each
/// call has [`DEFAULT_REQUEST_TIMEOUT`] unless [`CriClient::with_timeout`]
/// says otherwise.
#[derive(Clone)]
pub struct CriClient {
    socket: PathBuf,
    runtime: RuntimeServiceClient<Channel>,
    image: ImageServiceClient<Channel>,
    timeout: Duration,
}

impl std::fmt::Debug for CriClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CriClient").field("socket", &self.socket).field("timeout", &self.timeout).finish()
    }
}

/// Accepts `unix:///path`, `unix:/path` or a plain path, as upstream's
/// `--container-runtime-endpoint` does for unix sockets.
pub fn socket_path(endpoint: &str) -> PathBuf {
    let path = endpoint.strip_prefix("unix://").or_else(|| endpoint.strip_prefix("unix:")).unwrap_or(endpoint);
    PathBuf::from(path)
}

macro_rules! call {
    ($self:ident, $svc:ident, $method:ident, $name:literal, $req:expr) => {{
        let mut request = tonic::Request::new($req);
        request.set_timeout($self.timeout);
        tracing::trace!(component = "kubelet", call = $name, socket = %$self.socket.display(), "CRI call");
        match $self.$svc.clone().$method(request).await {
            Ok(response) => Ok(response.into_inner()),
            Err(status) => Err(CriError::Call {
                call: $name,
                socket: $self.socket.clone(),
                code: status.code(),
                message: status.message().to_string(),
                hint: hint(status.code()),
            }),
        }
    }};
}

/// `e` with its sources, `outer: inner: …`.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut msg = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        source = s.source();
    }
    msg
}

impl CriClient {
    /// Connects to the CRI socket at `socket` (a path or `unix://` URL).
    /// Fails with [`CriError::Connect`] when nothing listens there.
    pub async fn connect(socket: impl AsRef<Path>) -> Result<CriClient, CriError> {
        let socket = socket_path(&socket.as_ref().to_string_lossy());
        // The authority is unused: the connector always dials the socket.
        let endpoint = Endpoint::from_static("http://localhost").connect_timeout(Duration::from_secs(5));
        let channel = endpoint
            .connect_with_connector(UnixConnector(socket.clone()))
            .await
            .map_err(|e| CriError::Connect { socket: socket.clone(), message: error_chain(&e) })?;
        Ok(CriClient {
            socket,
            runtime: RuntimeServiceClient::new(channel.clone()).max_decoding_message_size(16 << 20),
            image: ImageServiceClient::new(channel).max_decoding_message_size(16 << 20),
            timeout: DEFAULT_REQUEST_TIMEOUT,
        })
    }

    /// The socket this client talks to.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The same client with another per-call timeout (upstream's
    /// `--runtime-request-timeout`; image pulls want a long one).
    pub fn with_timeout(&self, timeout: Duration) -> CriClient {
        CriClient { timeout, ..self.clone() }
    }
    /// RuntimeService.Version: the runtime's name and versions (`runtime_name`
    /// is "containerd" for containerd).
    pub async fn version(&self) -> Result<v1::VersionResponse, CriError> {
        call!(self, runtime, version, "Version", v1::VersionRequest { version: "v1".into() })
    }

    /// RuntimeService.Status: RuntimeReady and NetworkReady conditions
    /// (`verbose` adds the runtime's config as info).
    pub async fn status(&self, verbose: bool) -> Result<v1::StatusResponse, CriError> {
        call!(self, runtime, status, "Status", v1::StatusRequest { verbose })
    }

    /// RuntimeService.RunPodSandbox: creates and starts a sandbox; returns its id.
    pub async fn run_pod_sandbox(
        &self,
        config: v1::PodSandboxConfig,
        runtime_handler: &str,
    ) -> Result<String, CriError> {
        let req = v1::RunPodSandboxRequest { config: Some(config), runtime_handler: runtime_handler.into() };
        call!(self, runtime, run_pod_sandbox, "RunPodSandbox", req).map(|r| r.pod_sandbox_id)
    }

    /// RuntimeService.StopPodSandbox: stops the sandbox and kills its
    /// containers; succeeds if it is already stopped or gone.
    pub async fn stop_pod_sandbox(&self, id: &str) -> Result<(), CriError> {
        let req = v1::StopPodSandboxRequest { pod_sandbox_id: id.into() };
        call!(self, runtime, stop_pod_sandbox, "StopPodSandbox", req).map(|_| ())
    }

    /// RuntimeService.RemovePodSandbox: removes a sandbox and its containers.
    pub async fn remove_pod_sandbox(&self, id: &str) -> Result<(), CriError> {
        let req = v1::RemovePodSandboxRequest { pod_sandbox_id: id.into() };
        call!(self, runtime, remove_pod_sandbox, "RemovePodSandbox", req).map(|_| ())
    }

    /// RuntimeService.PodSandboxStatus.
    pub async fn pod_sandbox_status(&self, id: &str, verbose: bool) -> Result<v1::PodSandboxStatusResponse, CriError> {
        let req = v1::PodSandboxStatusRequest { pod_sandbox_id: id.into(), verbose };
        call!(self, runtime, pod_sandbox_status, "PodSandboxStatus", req)
    }

    /// RuntimeService.ListPodSandbox with an optional filter.
    pub async fn list_pod_sandbox(
        &self,
        filter: Option<v1::PodSandboxFilter>,
    ) -> Result<Vec<v1::PodSandbox>, CriError> {
        call!(self, runtime, list_pod_sandbox, "ListPodSandbox", v1::ListPodSandboxRequest { filter }).map(|r| r.items)
    }

    /// RuntimeService.CreateContainer in a sandbox; returns the container id.
    pub async fn create_container(
        &self,
        pod_sandbox_id: &str,
        config: v1::ContainerConfig,
        sandbox_config: v1::PodSandboxConfig,
    ) -> Result<String, CriError> {
        let req = v1::CreateContainerRequest {
            pod_sandbox_id: pod_sandbox_id.into(),
            config: Some(config),
            sandbox_config: Some(sandbox_config),
        };
        call!(self, runtime, create_container, "CreateContainer", req).map(|r| r.container_id)
    }

    /// RuntimeService.StartContainer.
    pub async fn start_container(&self, id: &str) -> Result<(), CriError> {
        let req = v1::StartContainerRequest { container_id: id.into() };
        call!(self, runtime, start_container, "StartContainer", req).map(|_| ())
    }

    /// RuntimeService.StopContainer: the stop signal, then KILL after
    /// `timeout_seconds` (0 kills at once).
    pub async fn stop_container(&self, id: &str, timeout_seconds: i64) -> Result<(), CriError> {
        let req = v1::StopContainerRequest { container_id: id.into(), timeout: timeout_seconds };
        call!(self, runtime, stop_container, "StopContainer", req).map(|_| ())
    }

    /// RuntimeService.RemoveContainer (force-removes a running one).
    pub async fn remove_container(&self, id: &str) -> Result<(), CriError> {
        let req = v1::RemoveContainerRequest { container_id: id.into() };
        call!(self, runtime, remove_container, "RemoveContainer", req).map(|_| ())
    }

    /// RuntimeService.ListContainers with an optional filter.
    pub async fn list_containers(&self, filter: Option<v1::ContainerFilter>) -> Result<Vec<v1::Container>, CriError> {
        call!(self, runtime, list_containers, "ListContainers", v1::ListContainersRequest { filter })
            .map(|r| r.containers)
    }

    /// RuntimeService.ContainerStatus: state, exit code, times, log path.
    pub async fn container_status(&self, id: &str, verbose: bool) -> Result<v1::ContainerStatus, CriError> {
        let req = v1::ContainerStatusRequest { container_id: id.into(), verbose };
        let resp = call!(self, runtime, container_status, "ContainerStatus", req)?;
        resp.status.ok_or_else(|| CriError::Call {
            call: "ContainerStatus",
            socket: self.socket.clone(),
            code: tonic::Code::Internal,
            message: format!("the runtime returned no status for container {id}"),
            hint: "",
        })
    }

    /// ImageService.PullImage; returns the image reference (its id, a digest).
    pub async fn pull_image(
        &self,
        image: &str,
        auth: Option<v1::AuthConfig>,
        sandbox_config: Option<v1::PodSandboxConfig>,
    ) -> Result<String, CriError> {
        let req = v1::PullImageRequest { image: Some(image_spec(image)), auth, sandbox_config };
        call!(self, image, pull_image, "PullImage", req).map(|r| r.image_ref)
    }

    /// ImageService.ListImages (every image, or those matching `filter`).
    pub async fn list_images(&self, filter: Option<&str>) -> Result<Vec<v1::Image>, CriError> {
        let filter = filter.map(|i| v1::ImageFilter { image: Some(image_spec(i)) });
        call!(self, image, list_images, "ListImages", v1::ListImagesRequest { filter }).map(|r| r.images)
    }

    /// ImageService.ImageStatus: `None` when the runtime does not have the image.
    pub async fn image_status(&self, image: &str) -> Result<Option<v1::Image>, CriError> {
        let req = v1::ImageStatusRequest { image: Some(image_spec(image)), verbose: false };
        call!(self, image, image_status, "ImageStatus", req).map(|r| r.image)
    }

    /// ImageService.RemoveImage (succeeds if the image is already gone).
    pub async fn remove_image(&self, image: &str) -> Result<(), CriError> {
        let req = v1::RemoveImageRequest { image: Some(image_spec(image)) };
        call!(self, image, remove_image, "RemoveImage", req).map(|_| ())
    }

    /// RuntimeService.Exec: a streaming URL on the runtime's streaming
    /// server that serves this exec session (SPDY or WebSocket channel
    /// protocol) once.
    pub async fn exec(&self, req: v1::ExecRequest) -> Result<String, CriError> {
        call!(self, runtime, exec, "Exec", req).map(|r| r.url)
    }

    /// RuntimeService.Attach: a streaming URL for attaching to the
    /// container's main process.
    pub async fn attach(&self, req: v1::AttachRequest) -> Result<String, CriError> {
        call!(self, runtime, attach, "Attach", req).map(|r| r.url)
    }

    /// RuntimeService.PortForward: a streaming URL (SPDY
    /// `portforward.k8s.io`) into the sandbox's network namespace.
    pub async fn port_forward(&self, pod_sandbox_id: &str, ports: Vec<i32>) -> Result<String, CriError> {
        let req = v1::PortForwardRequest { pod_sandbox_id: pod_sandbox_id.into(), port: ports };
        call!(self, runtime, port_forward, "PortForward", req).map(|r| r.url)
    }

    /// RuntimeService.ReopenContainerLog: the runtime reopens the
    /// container's log file (after the kubelet renamed it for rotation).
    pub async fn reopen_container_log(&self, id: &str) -> Result<(), CriError> {
        let req = v1::ReopenContainerLogRequest { container_id: id.into() };
        call!(self, runtime, reopen_container_log, "ReopenContainerLog", req).map(|_| ())
    }

    /// RuntimeService.ListContainerStats: CPU, memory and writable-layer
    /// usage of the (running) containers matching `filter`.
    pub async fn list_container_stats(
        &self,
        filter: Option<v1::ContainerStatsFilter>,
    ) -> Result<Vec<v1::ContainerStats>, CriError> {
        call!(self, runtime, list_container_stats, "ListContainerStats", v1::ListContainerStatsRequest { filter })
            .map(|r| r.stats)
    }

    /// RuntimeService.ExecSync: runs `cmd` in the container and waits for it
    /// (stdout, stderr, exit code). `timeout` goes to the runtime in whole
    /// seconds (0 = none) and is added to this call's own deadline, as
    /// upstream's remote runtime does; a `DeadlineExceeded` error means the
    /// command timed out.
    pub async fn exec_sync(
        &self,
        id: &str,
        cmd: Vec<String>,
        timeout: Duration,
    ) -> Result<v1::ExecSyncResponse, CriError> {
        let req = v1::ExecSyncRequest { container_id: id.into(), cmd, timeout: timeout.as_secs() as i64 };
        let this = self.with_timeout(self.timeout + timeout);
        call!(this, runtime, exec_sync, "ExecSync", req)
    }
}

/// An ImageSpec naming `image` (a reference or an image id).
fn image_spec(image: &str) -> v1::ImageSpec {
    v1::ImageSpec { image: image.into(), ..Default::default() }
}
