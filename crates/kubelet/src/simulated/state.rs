//! The in-memory sandboxes and containers of one simulated node, with the
//! CRI semantics containerd gives them (states, times in ns since the epoch,
//! name reservation, id prefixes, filters) but no processes.

// tonic::Status is the error type the CRI server traits require.
#![allow(clippy::result_large_err)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use tonic::Status;

use super::images::ImageStore;
use super::network::IpPool;
use crate::cri::v1;

/// The exit code of a container killed by StopContainer with timeout 0 or
/// by StopPodSandbox (128 + SIGKILL, as a real process killed by the runtime).
pub const KILLED_EXIT_CODE: i32 = 137;

/// Nanoseconds since the Unix epoch.
pub fn now_ns() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as i64).unwrap_or(0)
}

/// A fresh 64-hex-digit id, as containerd's.
fn new_id() -> String {
    let mut b = [0u8; 32];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut b).expect("the system RNG works");
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A sandbox.
#[derive(Debug)]
pub struct Sandbox {
    pub(super) status: v1::PodSandboxStatus,
    /// The pod's log directory (`log_directory` of its config).
    log_directory: String,
}

/// A container.
#[derive(Debug)]
pub struct Ctr {
    pub(super) status: v1::ContainerStatus,
    pub(super) sandbox_id: String,
}

/// Everything one simulated node holds.
#[derive(Debug)]
pub struct State {
    pub(super) sandboxes: HashMap<String, Sandbox>,
    pub(super) containers: HashMap<String, Ctr>,
    pub(super) images: ImageStore,
    pub(super) ips: IpPool,
}

fn not_found(kind: &str, id: &str) -> Status {
    Status::not_found(format!("an error occurred when try to find {kind} {id:?}: not found"))
}

/// The full id `id` names: itself, or the only id it is a prefix of
/// (containerd resolves truncated ids the same way).
fn resolve<T>(map: &HashMap<String, T>, id: &str) -> Option<String> {
    if id.is_empty() {
        return None;
    }
    if map.contains_key(id) {
        return Some(id.to_string());
    }
    let mut hits = map.keys().filter(|k| k.starts_with(id));
    match (hits.next(), hits.next()) {
        (Some(k), None) => Some(k.clone()),
        _ => None,
    }
}

fn labels_match(labels: &HashMap<String, String>, selector: &HashMap<String, String>) -> bool {
    selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

fn host_network(config: &v1::PodSandboxConfig) -> bool {
    let mode =
        config.linux.as_ref().and_then(|l| l.security_context.as_ref()).and_then(|s| s.namespace_options.as_ref());
    mode.is_some_and(|n| n.network == v1::NamespaceMode::Node as i32)
}

/// The RFC 3339 time with nanoseconds (Go's RFC3339Nano) of `ns`.
fn rfc3339_nano(ns: i64) -> String {
    jiff::Timestamp::from_nanosecond(i128::from(ns)).map(|t| t.to_string()).unwrap_or_default()
}

impl State {
    /// An empty node whose pod CIDR comes from `conflist` (or UpdateRuntimeConfig).
    pub fn new(conflist: PathBuf) -> State {
        State {
            sandboxes: HashMap::new(),
            containers: HashMap::new(),
            images: ImageStore::default(),
            ips: IpPool::new(conflist),
        }
    }

    /// RunPodSandbox: a Ready sandbox with an IP from the pod CIDR (none
    /// for host-network pods); the name (metadata) is reserved while it exists.
    pub fn run_sandbox(&mut self, config: v1::PodSandboxConfig, handler: String) -> Result<String, Status> {
        let meta =
            config.metadata.clone().ok_or_else(|| Status::invalid_argument("sandbox config must include metadata"))?;
        if let Some((id, _)) = self.sandboxes.iter().find(|(_, s)| s.status.metadata.as_ref() == Some(&meta)) {
            let name = format!("{}_{}_{}_{}", meta.name, meta.namespace, meta.uid, meta.attempt);
            return Err(Status::already_exists(format!(
                "failed to reserve sandbox name {name:?}: name {name:?} is reserved for {id:?}"
            )));
        }
        let id = new_id();
        let ip = if host_network(&config) {
            String::new()
        } else {
            self.ips
                .allocate()
                .map_err(|e| {
                    Status::unknown(format!(
                        "failed to setup network for sandbox {id:?}: plugin type=\"bridge\" failed (add): {e}"
                    ))
                })?
                .to_string()
        };
        let status = v1::PodSandboxStatus {
            id: id.clone(),
            metadata: Some(meta),
            state: v1::PodSandboxState::SandboxReady as i32,
            created_at: now_ns(),
            network: Some(v1::PodSandboxNetworkStatus { ip, additional_ips: vec![] }),
            linux: None,
            labels: config.labels,
            annotations: config.annotations,
            runtime_handler: handler,
        };
        self.sandboxes.insert(id.clone(), Sandbox { status, log_directory: config.log_directory });
        Ok(id)
    }

    /// StopPodSandbox: kills its running containers (exit 137) and releases
    /// the IP; the status keeps reporting the IP, as containerd's does.
    /// Idempotent, also for an unknown sandbox (CRI: "must not return an
    /// error if all relevant resources have already been reclaimed").
    pub fn stop_sandbox(&mut self, id: &str) {
        let Some(id) = resolve(&self.sandboxes, id) else { return };
        let now = now_ns();
        for c in self.containers.values_mut().filter(|c| c.sandbox_id == id) {
            exit(&mut c.status, KILLED_EXIT_CODE, now);
        }
        let sb = self.sandboxes.get_mut(&id).expect("resolved");
        if sb.status.state == v1::PodSandboxState::SandboxReady as i32 {
            sb.status.state = v1::PodSandboxState::SandboxNotready as i32;
            if let Some(n) = &sb.status.network {
                self.ips.release(&n.ip);
            }
        }
    }

    /// RemovePodSandbox: stops it if needed (CRI: running containers are
    /// forcibly removed) and removes it with its containers; no error if gone.
    pub fn remove_sandbox(&mut self, id: &str) {
        let Some(id) = resolve(&self.sandboxes, id) else { return };
        self.stop_sandbox(&id);
        self.containers.retain(|_, c| c.sandbox_id != id);
        self.sandboxes.remove(&id);
    }

    /// PodSandboxStatus.
    pub fn sandbox_status(&self, id: &str) -> Result<v1::PodSandboxStatus, Status> {
        let id = resolve(&self.sandboxes, id).ok_or_else(|| not_found("sandbox", id))?;
        Ok(self.sandboxes[&id].status.clone())
    }

    /// ListPodSandbox: those matching every part of `filter` (id, state,
    /// labels), oldest first.
    pub fn list_sandboxes(&self, filter: Option<v1::PodSandboxFilter>) -> Vec<v1::PodSandbox> {
        let f = filter.unwrap_or_default();
        let id = if f.id.is_empty() { None } else { Some(resolve(&self.sandboxes, &f.id).unwrap_or(f.id.clone())) };
        let mut v: Vec<v1::PodSandbox> = self
            .sandboxes
            .values()
            .map(|s| &s.status)
            .filter(|s| id.as_ref().is_none_or(|id| &s.id == id))
            .filter(|s| f.state.as_ref().is_none_or(|st| st.state == s.state))
            .filter(|s| labels_match(&s.labels, &f.label_selector))
            .map(|s| v1::PodSandbox {
                id: s.id.clone(),
                metadata: s.metadata.clone(),
                state: s.state,
                created_at: s.created_at,
                labels: s.labels.clone(),
                annotations: s.annotations.clone(),
                runtime_handler: s.runtime_handler.clone(),
            })
            .collect();
        v.sort_by_key(|s| s.created_at);
        v
    }

    /// CreateContainer: a Created container of a pulled image in an existing
    /// sandbox; its name (metadata within the sandbox) is reserved while it exists.
    pub fn create_container(&mut self, sandbox_id: &str, config: v1::ContainerConfig) -> Result<String, Status> {
        let sandbox_id = resolve(&self.sandboxes, sandbox_id).ok_or_else(|| not_found("sandbox", sandbox_id))?;
        let meta = config
            .metadata
            .clone()
            .ok_or_else(|| Status::invalid_argument("container config must include metadata"))?;
        if let Some((id, _)) = self
            .containers
            .iter()
            .find(|(_, c)| c.sandbox_id == sandbox_id && c.status.metadata.as_ref() == Some(&meta))
        {
            let name = format!("{}_{}_{}", meta.name, sandbox_id, meta.attempt);
            return Err(Status::already_exists(format!(
                "failed to reserve container name {name:?}: name {name:?} is reserved for {id:?}"
            )));
        }
        let image_name = config.image.as_ref().map(|i| i.image.clone()).unwrap_or_default();
        let image = self
            .images
            .get(&image_name)
            .ok_or_else(|| Status::not_found(format!("failed to resolve image {image_name:?}: not found")))?;
        // As containerd: the image spec is its first tag, image_ref its first repo digest.
        let spec = image.repo_tags.first().cloned().unwrap_or_else(|| image_name.clone());
        let image_ref = image.repo_digests.first().cloned().unwrap_or_else(|| image.id.clone());
        let image_id = image.id.clone();
        let log_dir = &self.sandboxes[&sandbox_id].log_directory;
        let log_path = if config.log_path.is_empty() || log_dir.is_empty() {
            config.log_path.clone()
        } else {
            Path::new(log_dir).join(&config.log_path).to_string_lossy().into_owned()
        };
        let id = new_id();
        let status = v1::ContainerStatus {
            id: id.clone(),
            metadata: Some(meta),
            state: v1::ContainerState::ContainerCreated as i32,
            created_at: now_ns(),
            image: Some(v1::ImageSpec { image: spec, ..Default::default() }),
            image_ref,
            image_id,
            labels: config.labels,
            annotations: config.annotations,
            mounts: config.mounts,
            log_path,
            ..Default::default()
        };
        self.containers.insert(id.clone(), Ctr { status, sandbox_id });
        Ok(id)
    }

    /// StartContainer: Created → Running in a Ready sandbox. Returns the
    /// log file to write the start line into, and the container's name.
    pub fn start_container(&mut self, id: &str) -> Result<(String, String), Status> {
        let id = resolve(&self.containers, id).ok_or_else(|| not_found("container", id))?;
        let c = &self.containers[&id];
        if c.status.state != v1::ContainerState::ContainerCreated as i32 {
            return Err(Status::failed_precondition(format!("container is in {} state", state_name(c.status.state))));
        }
        let sandbox_ready = self.sandboxes.get(&c.sandbox_id).is_some_and(|s| s.status.state == 0);
        if !sandbox_ready {
            return Err(Status::failed_precondition(format!("sandbox container {:?} is not running", c.sandbox_id)));
        }
        let c = self.containers.get_mut(&id).expect("resolved");
        c.status.state = v1::ContainerState::ContainerRunning as i32;
        c.status.started_at = now_ns();
        let name = c.status.metadata.as_ref().map(|m| m.name.clone()).unwrap_or_default();
        Ok((c.status.log_path.clone(), name))
    }

    /// StopContainer: a Running container exits — 137 with timeout 0 (a
    /// kill), else 0 (the simulated process honours the stop signal). A
    /// container that is not running is left as it is (idempotent, as containerd).
    pub fn stop_container(&mut self, id: &str, timeout: i64) -> Result<(), Status> {
        let id = resolve(&self.containers, id).ok_or_else(|| not_found("container", id))?;
        let c = self.containers.get_mut(&id).expect("resolved");
        exit(&mut c.status, if timeout <= 0 { KILLED_EXIT_CODE } else { 0 }, now_ns());
        Ok(())
    }

    /// RemoveContainer (a running one is killed first); no error if gone.
    pub fn remove_container(&mut self, id: &str) {
        if let Some(id) = resolve(&self.containers, id) {
            self.containers.remove(&id);
        }
    }

    /// The container `id` names.
    pub fn container(&self, id: &str) -> Result<&Ctr, Status> {
        let full = resolve(&self.containers, id).ok_or_else(|| not_found("container", id))?;
        Ok(&self.containers[&full])
    }

    /// ListContainers: those matching every part of `filter` (id, state,
    /// sandbox id, labels), oldest first.
    pub fn list_containers(&self, filter: Option<v1::ContainerFilter>) -> Vec<v1::Container> {
        let f = filter.unwrap_or_default();
        let id = if f.id.is_empty() { None } else { Some(resolve(&self.containers, &f.id).unwrap_or(f.id.clone())) };
        let sb = if f.pod_sandbox_id.is_empty() {
            None
        } else {
            Some(resolve(&self.sandboxes, &f.pod_sandbox_id).unwrap_or(f.pod_sandbox_id.clone()))
        };
        let mut v: Vec<v1::Container> = self
            .containers
            .values()
            .filter(|c| id.as_ref().is_none_or(|id| &c.status.id == id))
            .filter(|c| sb.as_ref().is_none_or(|sb| &c.sandbox_id == sb))
            .filter(|c| f.state.as_ref().is_none_or(|st| st.state == c.status.state))
            .filter(|c| labels_match(&c.status.labels, &f.label_selector))
            .map(|c| v1::Container {
                id: c.status.id.clone(),
                pod_sandbox_id: c.sandbox_id.clone(),
                metadata: c.status.metadata.clone(),
                image: c.status.image.clone(),
                image_ref: c.status.image_ref.clone(),
                state: c.status.state,
                created_at: c.status.created_at,
                labels: c.status.labels.clone(),
                annotations: c.status.annotations.clone(),
                image_id: c.status.image_id.clone(),
            })
            .collect();
        v.sort_by_key(|c| c.created_at);
        v
    }
}

/// Marks a Running container Exited with `code` (reason as containerd's:
/// Completed for 0, Error otherwise); anything else is left alone.
fn exit(s: &mut v1::ContainerStatus, code: i32, now: i64) {
    if s.state == v1::ContainerState::ContainerRunning as i32 {
        s.state = v1::ContainerState::ContainerExited as i32;
        s.finished_at = now;
        s.exit_code = code;
        s.reason = if code == 0 { "Completed" } else { "Error" }.into();
    }
}

/// CRI's name of a container state, as in containerd's messages.
pub fn state_name(state: i32) -> &'static str {
    match v1::ContainerState::try_from(state) {
        Ok(v1::ContainerState::ContainerCreated) => "CONTAINER_CREATED",
        Ok(v1::ContainerState::ContainerRunning) => "CONTAINER_RUNNING",
        Ok(v1::ContainerState::ContainerExited) => "CONTAINER_EXITED",
        _ => "CONTAINER_UNKNOWN",
    }
}

/// The CRI log line a started container's log gets, clearly marked simulated.
pub fn start_log_line(container: &str, now: i64) -> String {
    format!("{} stdout F [simulated] container {container} started by the rkube simulated runtime\n", rfc3339_nano(now))
}
