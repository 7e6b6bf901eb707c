//! What the runtime has for one pod, read through CRI: its sandboxes and
//! every instance of every container (upstream's `kubecontainer.PodStatus`),
//! newest first. The worker decides from this and the status is computed
//! from it.

use std::collections::BTreeMap;

use crate::cri::{v1, CriClient, CriError};

use super::labels;

/// One sandbox of the pod.
#[derive(Debug, Clone, PartialEq)]
pub struct Sandbox {
    /// The CRI sandbox id.
    pub id: String,
    /// metadata.attempt (0 for the first sandbox of the pod).
    pub attempt: u32,
    /// SANDBOX_READY.
    pub ready: bool,
    /// The pod IPs the network plugin gave it (primary first).
    pub ips: Vec<String>,
    /// Creation time, nanoseconds since the epoch.
    pub created_at: i64,
}

/// The state of a container instance (CRI ContainerState).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Created, not started.
    Created,
    /// Running.
    Running,
    /// Exited.
    Exited,
    /// The runtime does not know.
    Unknown,
}

/// One instance (attempt) of a container.
#[derive(Debug, Clone, PartialEq)]
pub struct Instance {
    /// The CRI container id.
    pub id: String,
    /// The container's name in the pod spec.
    pub name: String,
    /// metadata.attempt: the restart count this instance was created with.
    pub attempt: u32,
    /// The sandbox it belongs to.
    pub sandbox_id: String,
    /// Its state.
    pub state: State,
    /// Times in nanoseconds since the epoch (0 = not yet).
    pub created_at: i64,
    /// Start time (ns, 0 = never started).
    pub started_at: i64,
    /// Finish time (ns, 0 = not finished).
    pub finished_at: i64,
    /// Exit code (when exited).
    pub exit_code: i32,
    /// The runtime's reason (e.g. `OOMKilled`, `Error`, `Completed`).
    pub reason: String,
    /// The runtime's message (the termination message when the kubelet
    /// reads it from the file).
    pub message: String,
    /// The image as the spec named it.
    pub image: String,
    /// The image id/digest the runtime ran.
    pub image_ref: String,
    /// The container's hash annotation (which spec it was created from).
    pub hash: String,
}

impl Instance {
    /// Running now.
    pub fn running(&self) -> bool {
        self.state == State::Running
    }

    /// Exited (or created and never started after its sandbox died).
    pub fn exited(&self) -> bool {
        self.state == State::Exited
    }
}

/// Everything the runtime has for one pod.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodSnapshot {
    /// Sandboxes, newest first.
    pub sandboxes: Vec<Sandbox>,
    /// Container instances by container name, newest attempt first.
    pub containers: BTreeMap<String, Vec<Instance>>,
}

impl PodSnapshot {
    /// The newest sandbox.
    pub fn sandbox(&self) -> Option<&Sandbox> {
        self.sandboxes.first()
    }

    /// The newest instance of `container`.
    pub fn current(&self, container: &str) -> Option<&Instance> {
        self.containers.get(container).and_then(|v| v.first())
    }

    /// The instance before the newest (lastState, `logs --previous`).
    pub fn previous(&self, container: &str) -> Option<&Instance> {
        self.containers.get(container).and_then(|v| v.get(1))
    }

    /// Whether anything of the pod runs (a container, or a ready sandbox).
    pub fn anything_running(&self) -> bool {
        self.sandboxes.iter().any(|s| s.ready) || self.containers.values().flatten().any(|c| c.running())
    }

    /// Reads the pod `uid`'s sandboxes and containers from the runtime.
    pub async fn read(cri: &CriClient, uid: &str) -> Result<PodSnapshot, CriError> {
        let selector: std::collections::HashMap<String, String> =
            [(labels::POD_UID.to_string(), uid.to_string())].into();
        let filter = v1::PodSandboxFilter { label_selector: selector.clone(), ..Default::default() };
        let mut sandboxes = Vec::new();
        for s in cri.list_pod_sandbox(Some(filter)).await? {
            let ready = s.state == v1::PodSandboxState::SandboxReady as i32;
            let ips = if ready {
                match cri.pod_sandbox_status(&s.id, false).await {
                    Ok(r) => r.status.and_then(|st| st.network).map(sandbox_ips).unwrap_or_default(),
                    Err(e) if e.is_not_found() => continue,
                    Err(e) => return Err(e),
                }
            } else {
                Vec::new()
            };
            let attempt = s.metadata.as_ref().map(|m| m.attempt).unwrap_or(0);
            sandboxes.push(Sandbox { id: s.id, attempt, ready, ips, created_at: s.created_at });
        }
        sandboxes.sort_by_key(|s| std::cmp::Reverse((s.attempt, s.created_at)));

        let filter = v1::ContainerFilter { label_selector: selector, ..Default::default() };
        let mut containers: BTreeMap<String, Vec<Instance>> = BTreeMap::new();
        for c in cri.list_containers(Some(filter)).await? {
            let status = match cri.container_status(&c.id, false).await {
                Ok(s) => s,
                Err(e) if e.is_not_found() => continue,
                Err(e) => return Err(e),
            };
            let name = c.labels.get(labels::CONTAINER_NAME).cloned().unwrap_or_default();
            let mut message = status.message.clone();
            if status.finished_at > 0 {
                if let Some(m) = termination_message(&c.annotations, &status) {
                    message = m;
                }
            }
            let state = match v1::ContainerState::try_from(status.state) {
                Ok(v1::ContainerState::ContainerCreated) => State::Created,
                Ok(v1::ContainerState::ContainerRunning) => State::Running,
                Ok(v1::ContainerState::ContainerExited) => State::Exited,
                _ => State::Unknown,
            };
            let inst = Instance {
                id: c.id.clone(),
                name: name.clone(),
                attempt: c.metadata.as_ref().map(|m| m.attempt).unwrap_or(0),
                sandbox_id: c.pod_sandbox_id.clone(),
                state,
                created_at: status.created_at,
                started_at: status.started_at,
                finished_at: status.finished_at,
                exit_code: status.exit_code,
                reason: status.reason.clone(),
                message,
                image: status.image.as_ref().map(|i| i.image.clone()).unwrap_or_default(),
                image_ref: status.image_ref.clone(),
                hash: c.annotations.get(labels::CONTAINER_HASH).cloned().unwrap_or_default(),
            };
            containers.entry(name).or_default().push(inst);
        }
        for v in containers.values_mut() {
            v.sort_by_key(|i| std::cmp::Reverse((i.attempt, i.created_at)));
        }
        Ok(PodSnapshot { sandboxes, containers })
    }
}

/// Upstream caps the termination message at 4 KiB.
const MAX_TERMINATION_MESSAGE: u64 = 4096;

/// What the container wrote to its terminationMessagePath (the host file
/// mounted there), when it wrote anything.
fn termination_message(
    annotations: &std::collections::HashMap<String, String>,
    status: &v1::ContainerStatus,
) -> Option<String> {
    use std::io::Read;
    let path = annotations.get(labels::CONTAINER_TERMINATION_MESSAGE_PATH)?;
    let mount = status.mounts.iter().find(|m| &m.container_path == path)?;
    let mut buf = String::new();
    std::fs::File::open(&mount.host_path).ok()?.take(MAX_TERMINATION_MESSAGE).read_to_string(&mut buf).ok()?;
    (!buf.is_empty()).then_some(buf)
}

fn sandbox_ips(n: v1::PodSandboxNetworkStatus) -> Vec<String> {
    let mut ips = Vec::new();
    if !n.ip.is_empty() {
        ips.push(n.ip);
    }
    ips.extend(n.additional_ips.into_iter().map(|i| i.ip).filter(|i| !i.is_empty()));
    ips
}
