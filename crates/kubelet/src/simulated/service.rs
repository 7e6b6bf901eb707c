//! The CRI v1 RuntimeService and ImageService of the simulated runtime
//! (tonic server traits over [`SimulatedRuntime`]'s state).

// tonic::Status is the error type the CRI server traits require.
#![allow(clippy::result_large_err)]

use std::collections::HashMap;

use tonic::{Request, Response, Status};

use super::state::{now_ns, start_log_line};
use super::SimulatedRuntime;
use crate::cri::v1;
use crate::cri::v1::image_service_server::ImageService;
use crate::cri::v1::runtime_service_server::RuntimeService;

type R<T> = Result<Response<T>, Status>;

fn ok<T>(t: T) -> R<T> {
    Ok(Response::new(t))
}

/// Streaming needs processes to talk to; the simulated runtime has none.
fn no_streaming(what: &str) -> Status {
    Status::unimplemented(format!(
        "{what} is not supported by the rkube simulated runtime: it runs no processes \
         (ExecSync answers with simulated output; run a node with --runtime containerd for real streams)"
    ))
}

fn unsupported(what: &str) -> Status {
    Status::unimplemented(format!("{what} is not implemented by the rkube simulated runtime"))
}

fn zero() -> Option<v1::UInt64Value> {
    Some(v1::UInt64Value { value: 0 })
}

/// All-zero usage of a running container (there is no process to measure).
fn zero_stats(c: &v1::ContainerStatus, mountpoint: &str) -> v1::ContainerStats {
    let ts = now_ns();
    v1::ContainerStats {
        attributes: Some(v1::ContainerAttributes {
            id: c.id.clone(),
            metadata: c.metadata.clone(),
            labels: c.labels.clone(),
            annotations: c.annotations.clone(),
        }),
        cpu: Some(v1::CpuUsage { timestamp: ts, usage_core_nano_seconds: zero(), usage_nano_cores: zero() }),
        memory: Some(v1::MemoryUsage {
            timestamp: ts,
            working_set_bytes: zero(),
            available_bytes: zero(),
            usage_bytes: zero(),
            rss_bytes: zero(),
            page_faults: zero(),
            major_page_faults: zero(),
        }),
        writable_layer: Some(v1::FilesystemUsage {
            timestamp: ts,
            fs_id: Some(v1::FilesystemIdentifier { mountpoint: mountpoint.into() }),
            used_bytes: zero(),
            inodes_used: zero(),
        }),
        swap: None,
    }
}

fn condition(kind: &str, ready: bool, reason: &str, message: String) -> v1::RuntimeCondition {
    v1::RuntimeCondition { r#type: kind.into(), status: ready, reason: reason.into(), message }
}

#[tonic::async_trait]
impl RuntimeService for SimulatedRuntime {
    async fn version(&self, _r: Request<v1::VersionRequest>) -> R<v1::VersionResponse> {
        ok(v1::VersionResponse {
            version: "0.1.0".into(),
            runtime_name: super::RUNTIME_NAME.into(),
            runtime_version: env!("CARGO_PKG_VERSION").into(),
            runtime_api_version: "v1".into(),
        })
    }

    async fn run_pod_sandbox(&self, r: Request<v1::RunPodSandboxRequest>) -> R<v1::RunPodSandboxResponse> {
        let r = r.into_inner();
        let config = r.config.ok_or_else(|| Status::invalid_argument("sandbox config is required"))?;
        let pod_sandbox_id = self.state().run_sandbox(config, r.runtime_handler)?;
        ok(v1::RunPodSandboxResponse { pod_sandbox_id })
    }

    async fn stop_pod_sandbox(&self, r: Request<v1::StopPodSandboxRequest>) -> R<v1::StopPodSandboxResponse> {
        self.state().stop_sandbox(&r.into_inner().pod_sandbox_id);
        ok(v1::StopPodSandboxResponse {})
    }

    async fn remove_pod_sandbox(&self, r: Request<v1::RemovePodSandboxRequest>) -> R<v1::RemovePodSandboxResponse> {
        self.state().remove_sandbox(&r.into_inner().pod_sandbox_id);
        ok(v1::RemovePodSandboxResponse {})
    }

    async fn pod_sandbox_status(&self, r: Request<v1::PodSandboxStatusRequest>) -> R<v1::PodSandboxStatusResponse> {
        let status = self.state().sandbox_status(&r.into_inner().pod_sandbox_id)?;
        ok(v1::PodSandboxStatusResponse {
            status: Some(status),
            info: HashMap::new(),
            containers_statuses: vec![],
            timestamp: now_ns(),
        })
    }

    async fn list_pod_sandbox(&self, r: Request<v1::ListPodSandboxRequest>) -> R<v1::ListPodSandboxResponse> {
        ok(v1::ListPodSandboxResponse { items: self.state().list_sandboxes(r.into_inner().filter) })
    }

    async fn create_container(&self, r: Request<v1::CreateContainerRequest>) -> R<v1::CreateContainerResponse> {
        let r = r.into_inner();
        let config = r.config.ok_or_else(|| Status::invalid_argument("container config is required"))?;
        let container_id = self.state().create_container(&r.pod_sandbox_id, config)?;
        ok(v1::CreateContainerResponse { container_id })
    }

    async fn start_container(&self, r: Request<v1::StartContainerRequest>) -> R<v1::StartContainerResponse> {
        let (log_path, name) = self.state().start_container(&r.into_inner().container_id)?;
        if !log_path.is_empty() {
            // Outside the lock: the only file I/O of the runtime.
            let line = start_log_line(&name, now_ns());
            if let Err(e) = append(&log_path, &line) {
                tracing::warn!(component = super::COMPONENT, path = %log_path, "cannot write the simulated container log: {e}");
            }
        }
        ok(v1::StartContainerResponse {})
    }

    async fn stop_container(&self, r: Request<v1::StopContainerRequest>) -> R<v1::StopContainerResponse> {
        let r = r.into_inner();
        self.state().stop_container(&r.container_id, r.timeout)?;
        ok(v1::StopContainerResponse {})
    }

    async fn remove_container(&self, r: Request<v1::RemoveContainerRequest>) -> R<v1::RemoveContainerResponse> {
        self.state().remove_container(&r.into_inner().container_id);
        ok(v1::RemoveContainerResponse {})
    }

    async fn list_containers(&self, r: Request<v1::ListContainersRequest>) -> R<v1::ListContainersResponse> {
        ok(v1::ListContainersResponse { containers: self.state().list_containers(r.into_inner().filter) })
    }

    async fn container_status(&self, r: Request<v1::ContainerStatusRequest>) -> R<v1::ContainerStatusResponse> {
        let status = self.state().container(&r.into_inner().container_id)?.status.clone();
        ok(v1::ContainerStatusResponse { status: Some(status), info: HashMap::new() })
    }

    /// Accepted and ignored (nothing runs that limits could apply to).
    async fn update_container_resources(
        &self,
        r: Request<v1::UpdateContainerResourcesRequest>,
    ) -> R<v1::UpdateContainerResourcesResponse> {
        self.state().container(&r.into_inner().container_id)?;
        ok(v1::UpdateContainerResourcesResponse {})
    }

    async fn reopen_container_log(
        &self,
        r: Request<v1::ReopenContainerLogRequest>,
    ) -> R<v1::ReopenContainerLogResponse> {
        let running = self.state().container(&r.into_inner().container_id)?.status.state
            == v1::ContainerState::ContainerRunning as i32;
        if !running {
            return Err(Status::failed_precondition("container is not running"));
        }
        ok(v1::ReopenContainerLogResponse {})
    }

    async fn exec_sync(&self, r: Request<v1::ExecSyncRequest>) -> R<v1::ExecSyncResponse> {
        let r = r.into_inner();
        let state = self.state().container(&r.container_id)?.status.state;
        if state != v1::ContainerState::ContainerRunning as i32 {
            let s = super::state::state_name(state);
            return Err(Status::failed_precondition(format!("container is in {s} state")));
        }
        let stdout = format!("[simulated] exec {}\n", r.cmd.join(" ")).into_bytes();
        ok(v1::ExecSyncResponse { stdout, stderr: vec![], exit_code: 0 })
    }

    async fn exec(&self, _r: Request<v1::ExecRequest>) -> R<v1::ExecResponse> {
        Err(no_streaming("Exec (kubectl exec)"))
    }

    async fn attach(&self, _r: Request<v1::AttachRequest>) -> R<v1::AttachResponse> {
        Err(no_streaming("Attach (kubectl attach)"))
    }

    async fn port_forward(&self, _r: Request<v1::PortForwardRequest>) -> R<v1::PortForwardResponse> {
        Err(no_streaming("PortForward (kubectl port-forward)"))
    }

    async fn container_stats(&self, r: Request<v1::ContainerStatsRequest>) -> R<v1::ContainerStatsResponse> {
        let state = self.state();
        let c = state.container(&r.into_inner().container_id)?;
        ok(v1::ContainerStatsResponse { stats: Some(zero_stats(&c.status, &self.mountpoint)) })
    }

    async fn list_container_stats(
        &self,
        r: Request<v1::ListContainerStatsRequest>,
    ) -> R<v1::ListContainerStatsResponse> {
        let f = r.into_inner().filter.unwrap_or_default();
        let filter = v1::ContainerFilter {
            id: f.id,
            pod_sandbox_id: f.pod_sandbox_id,
            label_selector: f.label_selector,
            state: Some(v1::ContainerStateValue { state: v1::ContainerState::ContainerRunning as i32 }),
        };
        let state = self.state();
        let stats = state
            .list_containers(Some(filter))
            .iter()
            .filter_map(|c| state.containers.get(&c.id))
            .map(|c| zero_stats(&c.status, &self.mountpoint))
            .collect();
        ok(v1::ListContainerStatsResponse { stats })
    }

    async fn pod_sandbox_stats(&self, _r: Request<v1::PodSandboxStatsRequest>) -> R<v1::PodSandboxStatsResponse> {
        Err(unsupported("PodSandboxStats"))
    }

    async fn list_pod_sandbox_stats(
        &self,
        _r: Request<v1::ListPodSandboxStatsRequest>,
    ) -> R<v1::ListPodSandboxStatsResponse> {
        Err(unsupported("ListPodSandboxStats"))
    }

    async fn update_runtime_config(
        &self,
        r: Request<v1::UpdateRuntimeConfigRequest>,
    ) -> R<v1::UpdateRuntimeConfigResponse> {
        let cidr = r.into_inner().runtime_config.and_then(|c| c.network_config).map(|n| n.pod_cidr);
        if let Some(cidr) = cidr.filter(|c| !c.is_empty()) {
            self.set_pod_cidr(&cidr).map_err(Status::invalid_argument)?;
        }
        ok(v1::UpdateRuntimeConfigResponse {})
    }

    async fn status(&self, _r: Request<v1::StatusRequest>) -> R<v1::StatusResponse> {
        let cidr = self.state().ips.cidr();
        let network = match cidr {
            Some(c) => condition("NetworkReady", true, "", format!("simulated pod network {c}")),
            None => condition(
                "NetworkReady",
                false,
                "NetworkPluginNotReady",
                "Network plugin returns error: cni plugin not initialized (the simulated runtime has no pod CIDR yet)"
                    .into(),
            ),
        };
        let conditions = vec![condition("RuntimeReady", true, "", String::new()), network];
        ok(v1::StatusResponse {
            status: Some(v1::RuntimeStatus { conditions }),
            info: HashMap::new(),
            runtime_handlers: vec![],
            features: None,
        })
    }

    async fn checkpoint_container(
        &self,
        _r: Request<v1::CheckpointContainerRequest>,
    ) -> R<v1::CheckpointContainerResponse> {
        Err(unsupported("CheckpointContainer"))
    }

    type GetContainerEventsStream = tokio_stream::Empty<Result<v1::ContainerEventResponse, Status>>;

    async fn get_container_events(&self, _r: Request<v1::GetEventsRequest>) -> R<Self::GetContainerEventsStream> {
        Err(unsupported("GetContainerEvents"))
    }

    async fn list_metric_descriptors(
        &self,
        _r: Request<v1::ListMetricDescriptorsRequest>,
    ) -> R<v1::ListMetricDescriptorsResponse> {
        Err(unsupported("ListMetricDescriptors"))
    }

    async fn list_pod_sandbox_metrics(
        &self,
        _r: Request<v1::ListPodSandboxMetricsRequest>,
    ) -> R<v1::ListPodSandboxMetricsResponse> {
        Err(unsupported("ListPodSandboxMetrics"))
    }

    async fn runtime_config(&self, _r: Request<v1::RuntimeConfigRequest>) -> R<v1::RuntimeConfigResponse> {
        Err(unsupported("RuntimeConfig"))
    }
}

#[tonic::async_trait]
impl ImageService for SimulatedRuntime {
    async fn list_images(&self, r: Request<v1::ListImagesRequest>) -> R<v1::ListImagesResponse> {
        let filter = r.into_inner().filter.and_then(|f| f.image).map(|i| i.image).filter(|i| !i.is_empty());
        let state = self.state();
        let images = match filter {
            Some(name) => state.images.get(&name).cloned().into_iter().collect(),
            None => state.images.list(),
        };
        ok(v1::ListImagesResponse { images })
    }

    async fn image_status(&self, r: Request<v1::ImageStatusRequest>) -> R<v1::ImageStatusResponse> {
        let name = r.into_inner().image.map(|i| i.image).unwrap_or_default();
        let image = self.state().images.get(&name).cloned();
        ok(v1::ImageStatusResponse { image, info: HashMap::new() })
    }

    async fn pull_image(&self, r: Request<v1::PullImageRequest>) -> R<v1::PullImageResponse> {
        let name = r.into_inner().image.map(|i| i.image).unwrap_or_default();
        if name.is_empty() {
            return Err(Status::invalid_argument("image is required"));
        }
        ok(v1::PullImageResponse { image_ref: self.state().images.pull(&name) })
    }

    async fn remove_image(&self, r: Request<v1::RemoveImageRequest>) -> R<v1::RemoveImageResponse> {
        let name = r.into_inner().image.map(|i| i.image).unwrap_or_default();
        self.state().images.remove(&name);
        ok(v1::RemoveImageResponse {})
    }

    async fn image_fs_info(&self, _r: Request<v1::ImageFsInfoRequest>) -> R<v1::ImageFsInfoResponse> {
        let (bytes, count) = self.state().images.usage();
        let fs = v1::FilesystemUsage {
            timestamp: now_ns(),
            fs_id: Some(v1::FilesystemIdentifier { mountpoint: self.mountpoint.clone() }),
            used_bytes: Some(v1::UInt64Value { value: bytes }),
            inodes_used: Some(v1::UInt64Value { value: count }),
        };
        ok(v1::ImageFsInfoResponse { image_filesystems: vec![fs.clone()], container_filesystems: vec![fs] })
    }
}

/// Appends `line` to the file at `path`, creating it and its directory.
fn append(path: &str, line: &str) -> std::io::Result<()> {
    use std::io::Write;
    if let Some(dir) = std::path::Path::new(path).parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::OpenOptions::new().create(true).append(true).open(path)?.write_all(line.as_bytes())
}
