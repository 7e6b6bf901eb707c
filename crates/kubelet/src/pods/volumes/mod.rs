//! Pod volumes on the node (upstream's kubelet volume manager and the
//! in-tree plugins emptyDir, configMap, secret, downwardAPI, projected,
//! hostPath, and persistentVolumeClaim / generic ephemeral volumes bound to
//! hostPath or local PVs).
//!
//! Layout, as upstream's pods dir:
//! `<data-dir>/agent/pods/<uid>/volumes/kubernetes.io~<plugin>/<volume>`
//! with plugins `empty-dir`, `configmap`, `secret`, `downward-api`,
//! `projected`; hostPath and PV-backed volumes are used at their host path.
//!
//! - emptyDir: a 0777 directory; `medium: Memory` is a tmpfs sized as
//!   upstream (the smallest of node allocatable memory, the pod's memory limit
//!   and `sizeLimit`). A disk `sizeLimit` is only enforced by eviction, which
//!   rkube does not do yet.
//! - configMap (on disk), secret, downwardAPI and projected (on tmpfs, as
//!   upstream's memory-medium wrappers): written by the [`atomic_writer`] on
//!   every [`VolumeManager::setup`], so a changed source appears in the
//!   mounted files within one sync period. They are always mounted read-only.
//! - `fsGroup` gives the group ownership and setgid (see [`ownership`]).

pub mod atomic_writer;
pub mod host_path;
pub mod mounts;
pub mod ownership;
pub mod sources;
pub mod tmpfs;
pub mod token;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use k8s_openapi::api::core::v1::{
    ConfigMap, Container, Node, PersistentVolume, PersistentVolumeClaim, Pod, ProjectedVolumeSource, Secret, Volume,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::Api;

use crate::agent::status::parse_quantity;
use crate::cri::v1::Mount;
use atomic_writer::{FileProjection, Payload};
use sources::{Allocatable, KeySource};

/// emptyDir volumes: `kubernetes.io~empty-dir/<name>`.
pub const PLUGIN_EMPTY_DIR: &str = "empty-dir";
/// configMap volumes: `kubernetes.io~configmap/<name>`.
pub const PLUGIN_CONFIGMAP: &str = "configmap";
/// secret volumes: `kubernetes.io~secret/<name>` (tmpfs).
pub const PLUGIN_SECRET: &str = "secret";
/// downwardAPI volumes: `kubernetes.io~downward-api/<name>` (tmpfs).
pub const PLUGIN_DOWNWARD_API: &str = "downward-api";
/// projected volumes: `kubernetes.io~projected/<name>` (tmpfs).
pub const PLUGIN_PROJECTED: &str = "projected";
/// hostPath volumes, used at their host path (no directory of ours).
pub const PLUGIN_HOST_PATH: &str = "host-path";
/// persistentVolumeClaim / ephemeral volumes, used at the PV's host path.
pub const PLUGIN_PVC: &str = "persistent-volume";

/// A volume ready to be mounted into containers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeInfo {
    /// The host directory (or file, for a hostPath file) containers get.
    pub host_path: PathBuf,
    /// One of the `PLUGIN_*` names.
    pub plugin: &'static str,
    /// Mounted read-only whatever the volumeMount says (API-data volumes,
    /// read-only PVCs), as upstream's `mustMountRO`.
    pub read_only: bool,
}

/// The set-up volumes of one pod, by volume name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodVolumes {
    /// Volume name → where it is on the host.
    pub volumes: BTreeMap<String, VolumeInfo>,
}

/// Volume failures; `Display` is the event message.
#[derive(Debug, thiserror::Error)]
pub enum VolumeError {
    /// A volume could not be set up: the `FailedMount` event message, e.g.
    /// `MountVolume.SetUp failed for volume "cfg" : configmap "x" not found`.
    /// `others` holds the messages of further failed volumes, if any.
    #[error("MountVolume.SetUp failed for volume \"{volume}\" : {message}")]
    SetUp { volume: String, message: String, others: Vec<String> },
    /// A container's mounts could not be built (the container cannot be
    /// created: upstream's `CreateContainerConfigError` message).
    #[error("{message}")]
    Mounts { container: String, message: String },
    /// Unmounting or removing a pod's volumes failed.
    #[error("failed to tear down the volumes of pod {pod_uid}: {message}")]
    Teardown { pod_uid: String, message: String },
}

/// Sets up, mounts and tears down pod volumes under `<data-dir>/agent/pods`.
pub struct VolumeManager {
    pods_dir: PathBuf,
    client: kube::Client,
    node_name: String,
    allocatable: Mutex<Option<Allocatable>>,
    tokens: token::TokenCache,
}

/// The message of a kube client error: the API Status message when there is one.
pub(crate) fn api_error_message(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => s.message.clone(),
        other => other.to_string(),
    }
}

impl VolumeManager {
    /// A manager for the node `node_name` keeping pod dirs under
    /// `<data_dir>/agent/pods`.
    pub fn new(data_dir: &Path, client: kube::Client, node_name: &str) -> VolumeManager {
        VolumeManager {
            pods_dir: data_dir.join("agent").join("pods"),
            client,
            node_name: node_name.to_string(),
            allocatable: Mutex::new(None),
            tokens: token::TokenCache::default(),
        }
    }

    /// `<data-dir>/agent/pods`.
    pub fn pods_dir(&self) -> &Path {
        &self.pods_dir
    }

    /// `<data-dir>/agent/pods/<uid>`.
    pub fn pod_dir(&self, pod_uid: &str) -> PathBuf {
        self.pods_dir.join(pod_uid)
    }

    /// `<pod dir>/volumes/kubernetes.io~<plugin>/<name>`.
    pub fn volume_dir(&self, pod_uid: &str, plugin: &str, name: &str) -> PathBuf {
        self.pod_dir(pod_uid).join("volumes").join(format!("kubernetes.io~{plugin}")).join(name)
    }

    /// Sets node allocatable (the memory tmpfs size cap and the
    /// `resourceFieldRef` fallback for containers without limits); without it
    /// the manager reads the Node's `status.allocatable` when first needed.
    pub fn set_node_allocatable(&self, alloc: Allocatable) {
        *self.allocatable.lock().expect("allocatable") = Some(alloc);
    }

    fn cached_allocatable(&self) -> Option<Allocatable> {
        *self.allocatable.lock().expect("allocatable")
    }

    async fn node_allocatable(&self) -> Option<Allocatable> {
        if let Some(a) = self.cached_allocatable() {
            return Some(a);
        }
        let node = match Api::<Node>::all(self.client.clone()).get_opt(&self.node_name).await {
            Ok(Some(n)) => n,
            Ok(None) => return None,
            Err(e) => {
                tracing::warn!(component = "kubelet", error = %e, "reading node allocatable for volumes");
                return None;
            }
        };
        let alloc = node.status.and_then(|s| s.allocatable)?;
        let q = |k: &str| alloc.get(k).and_then(|q| parse_quantity(&q.0)).unwrap_or(0.0);
        let a = Allocatable {
            cpu_millis: q("cpu") * 1000.0,
            memory_bytes: q("memory"),
            ephemeral_storage_bytes: q("ephemeral-storage"),
        };
        self.set_node_allocatable(a);
        Some(a)
    }

    /// Idempotent: creates/refreshes every volume of the pod under
    /// `<data-dir>/agent/pods/<uid>/volumes/<plugin>/<name>`; API-data
    /// volumes are rewritten when their source changed. Err = the
    /// FailedMount message of the first failed volume (the others in `others`).
    pub async fn setup(&self, pod: &Pod) -> Result<PodVolumes, VolumeError> {
        let mut out = PodVolumes::default();
        let mut failures: Vec<(String, String)> = Vec::new();
        for vol in pod.spec.iter().flat_map(|s| s.volumes.iter().flatten()) {
            match self.setup_volume(pod, vol).await {
                Ok(info) => {
                    out.volumes.insert(vol.name.clone(), info);
                }
                Err(message) => {
                    tracing::warn!(component = "kubelet", pod = ?pod.metadata.name, volume = %vol.name, %message,
                        "volume setup failed");
                    failures.push((vol.name.clone(), message));
                }
            }
        }
        if failures.is_empty() {
            return Ok(out);
        }
        let (volume, message) = failures.remove(0);
        let others = failures.into_iter().map(|(v, m)| format!("MountVolume.SetUp failed for volume \"{v}\" : {m}"));
        Err(VolumeError::SetUp { volume, message, others: others.collect() })
    }

    async fn setup_volume(&self, pod: &Pod, vol: &Volume) -> Result<VolumeInfo, String> {
        let uid = pod.metadata.uid.as_deref().ok_or("the pod has no UID")?;
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        let fs_group = pod.spec.as_ref().and_then(|s| s.security_context.as_ref()).and_then(|s| s.fs_group);
        let io = |e: std::io::Error| e.to_string();

        if let Some(ed) = &vol.empty_dir {
            let dir = self.volume_dir(uid, PLUGIN_EMPTY_DIR, &vol.name);
            let mut created = ensure_dir(&dir).map_err(io)?;
            match ed.medium.as_deref().unwrap_or("") {
                "" => {}
                "Memory" => {
                    let size = self.memory_size(pod, ed.size_limit.as_ref()).await;
                    created |= tmpfs::ensure_tmpfs(&dir, size)
                        .map_err(|e| format!("mount tmpfs on {}: {e}", dir.display()))?;
                }
                other => return Err(format!("unknown storage medium {other:?}")),
            }
            if let (true, Some(g)) = (created, fs_group) {
                ownership::set_volume_ownership(&dir, g as u32, false).map_err(io)?;
            }
            return Ok(VolumeInfo { host_path: dir, plugin: PLUGIN_EMPTY_DIR, read_only: false });
        }
        if let Some(src) = &vol.config_map {
            let entries = self.get_opt::<ConfigMap>(ns, &src.name).await?.map(|c| sources::configmap_entries(&c));
            let payload = sources::key_payload(
                KeySource::ConfigMap,
                &src.name,
                entries.as_ref(),
                src.items.as_deref(),
                src.default_mode,
                src.optional.unwrap_or(false),
            )?;
            return self.write_data_volume(pod, uid, PLUGIN_CONFIGMAP, &vol.name, false, &payload, fs_group).await;
        }
        if let Some(src) = &vol.secret {
            let name = src.secret_name.clone().unwrap_or_default();
            let entries = self.get_opt::<Secret>(ns, &name).await?.map(|s| sources::secret_entries(&s));
            let payload = sources::key_payload(
                KeySource::Secret,
                &name,
                entries.as_ref(),
                src.items.as_deref(),
                src.default_mode,
                src.optional.unwrap_or(false),
            )?;
            return self.write_data_volume(pod, uid, PLUGIN_SECRET, &vol.name, true, &payload, fs_group).await;
        }
        if let Some(src) = &vol.downward_api {
            let alloc = self.node_allocatable().await.unwrap_or_default();
            let payload =
                sources::downward_payload(pod, src.items.as_deref().unwrap_or(&[]), src.default_mode, &alloc)?;
            return self.write_data_volume(pod, uid, PLUGIN_DOWNWARD_API, &vol.name, true, &payload, fs_group).await;
        }
        if let Some(src) = &vol.projected {
            let payload = self.projected_payload(pod, src).await?;
            return self.write_data_volume(pod, uid, PLUGIN_PROJECTED, &vol.name, true, &payload, fs_group).await;
        }
        if let Some(hp) = &vol.host_path {
            let path = PathBuf::from(&hp.path);
            host_path::check_type(&path, hp.type_.as_deref().unwrap_or(""))?;
            return Ok(VolumeInfo { host_path: path, plugin: PLUGIN_HOST_PATH, read_only: false });
        }
        if let Some(pvc) = &vol.persistent_volume_claim {
            return self.claim_volume(pod, &pvc.claim_name, pvc.read_only.unwrap_or(false), false, fs_group).await;
        }
        if vol.ephemeral.is_some() {
            // Generic ephemeral volume: the PVC `<pod>-<volume>` owned by the pod.
            let claim = format!("{}-{}", pod.metadata.name.as_deref().unwrap_or_default(), vol.name);
            return self.claim_volume(pod, &claim, false, true, fs_group).await;
        }
        Err("volume type not supported by rkube's kubelet (supported: emptyDir, configMap, secret, downwardAPI, \
             projected, hostPath, persistentVolumeClaim, ephemeral)"
            .to_string())
    }

    async fn get_opt<K>(&self, ns: &str, name: &str) -> Result<Option<K>, String>
    where
        K: kube::Resource<Scope = kube::core::NamespaceResourceScope>
            + Clone
            + k8s_openapi::serde::de::DeserializeOwned
            + std::fmt::Debug,
        K::DynamicType: Default,
    {
        Api::<K>::namespaced(self.client.clone(), ns).get_opt(name).await.map_err(|e| api_error_message(&e))
    }

    /// Writes an API-data volume (tmpfs for secret/projected/downwardAPI).
    #[allow(clippy::too_many_arguments)]
    async fn write_data_volume(
        &self,
        pod: &Pod,
        uid: &str,
        plugin: &'static str,
        name: &str,
        memory: bool,
        payload: &Payload,
        fs_group: Option<i64>,
    ) -> Result<VolumeInfo, String> {
        let dir = self.volume_dir(uid, plugin, name);
        let mut created = ensure_dir(&dir).map_err(|e| e.to_string())?;
        if memory {
            let size = self.memory_size(pod, None).await;
            created |= tmpfs::ensure_tmpfs(&dir, size).map_err(|e| format!("mount tmpfs on {}: {e}", dir.display()))?;
        }
        let written = atomic_writer::write(&dir, payload)?;
        if let (true, Some(g)) = (created || written, fs_group) {
            ownership::set_volume_ownership(&dir, g as u32, true).map_err(|e| e.to_string())?;
        }
        Ok(VolumeInfo { host_path: dir, plugin, read_only: true })
    }

    /// The files of a projected volume from all its sources (errors
    /// aggregated as upstream's `collectData`).
    async fn projected_payload(&self, pod: &Pod, src: &ProjectedVolumeSource) -> Result<Payload, String> {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        let default_mode = src.default_mode.or(Some(sources::DEFAULT_MODE));
        let mut payload = Payload::new();
        let mut errors = Vec::new();
        for s in src.sources.iter().flatten() {
            let part: Result<Payload, String> = if let Some(cm) = &s.config_map {
                match self.get_opt::<ConfigMap>(ns, &cm.name).await {
                    Ok(obj) => sources::key_payload(
                        KeySource::ConfigMap,
                        &cm.name,
                        obj.map(|c| sources::configmap_entries(&c)).as_ref(),
                        cm.items.as_deref(),
                        default_mode,
                        cm.optional.unwrap_or(false),
                    ),
                    Err(e) => Err(e),
                }
            } else if let Some(sec) = &s.secret {
                match self.get_opt::<Secret>(ns, &sec.name).await {
                    Ok(obj) => sources::key_payload(
                        KeySource::Secret,
                        &sec.name,
                        obj.map(|s| sources::secret_entries(&s)).as_ref(),
                        sec.items.as_deref(),
                        default_mode,
                        sec.optional.unwrap_or(false),
                    ),
                    Err(e) => Err(e),
                }
            } else if let Some(d) = &s.downward_api {
                let alloc = self.node_allocatable().await.unwrap_or_default();
                sources::downward_payload(pod, d.items.as_deref().unwrap_or(&[]), default_mode, &alloc)
            } else if let Some(t) = &s.service_account_token {
                self.tokens.get(&self.client, pod, t).await.map(|tok| {
                    let mode = default_mode.unwrap_or(sources::DEFAULT_MODE) as u32;
                    Payload::from([(t.path.clone(), FileProjection { data: tok.into_bytes(), mode })])
                })
            } else if s.cluster_trust_bundle.is_some() {
                Err("clusterTrustBundle projected volume sources are not supported by rkube's kubelet".to_string())
            } else {
                Ok(Payload::new())
            };
            match part {
                Ok(p) => payload.extend(p),
                Err(e) => errors.push(e),
            }
        }
        if errors.is_empty() {
            Ok(payload)
        } else {
            Err(sources::aggregate(&errors))
        }
    }

    /// A PVC's volume: the claim must be Bound to a PV with a hostPath or
    /// local source, which is used at its host path (upstream's messages
    /// `error processing PVC ns/name: PVC is not bound`).
    async fn claim_volume(
        &self,
        pod: &Pod,
        claim: &str,
        read_only: bool,
        ephemeral: bool,
        fs_group: Option<i64>,
    ) -> Result<VolumeInfo, String> {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        let wrap = |m: String| format!("error processing PVC {ns}/{claim}: {m}");
        let pvc = Api::<PersistentVolumeClaim>::namespaced(self.client.clone(), ns)
            .get(claim)
            .await
            .map_err(|e| wrap(format!("failed to fetch PVC from API server: {}", api_error_message(&e))))?;
        if ephemeral {
            let owned = pvc
                .metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.controller == Some(true) && Some(o.uid.as_str()) == pod.metadata.uid.as_deref());
            if !owned {
                return Err(format!(
                    "PVC {ns}/{claim} was not created for pod {ns}/{} (pod is not owner)",
                    pod.metadata.name.as_deref().unwrap_or_default()
                ));
            }
        }
        if pvc.metadata.deletion_timestamp.is_some() {
            return Err(wrap("PVC is being deleted".into()));
        }
        if pvc.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Bound") {
            return Err(wrap("PVC is not bound".into()));
        }
        let pv_name = pvc.spec.as_ref().and_then(|s| s.volume_name.clone()).unwrap_or_default();
        if pv_name.is_empty() {
            return Err(wrap("PVC has empty pvc.Spec.VolumeName".into()));
        }
        let pv = Api::<PersistentVolume>::all(self.client.clone())
            .get(&pv_name)
            .await
            .map_err(|e| wrap(format!("failed to fetch PV {pv_name} from API server: {}", api_error_message(&e))))?;
        let spec = pv.spec.unwrap_or_default();
        match &spec.claim_ref {
            None => {
                return Err(wrap(format!(
                    "found PV object {pv_name} but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim"
                )))
            }
            Some(r) if r.uid.as_deref() != pvc.metadata.uid.as_deref() => {
                return Err(wrap(format!(
                    "found PV object {pv_name} but its pv.Spec.ClaimRef.UID {} does not point to claim.UID {}",
                    r.uid.as_deref().unwrap_or_default(),
                    pvc.metadata.uid.as_deref().unwrap_or_default()
                )))
            }
            Some(_) => {}
        }
        if let Some(hp) = &spec.host_path {
            let path = PathBuf::from(&hp.path);
            host_path::check_type(&path, hp.type_.as_deref().unwrap_or(""))?;
            return Ok(VolumeInfo { host_path: path, plugin: PLUGIN_PVC, read_only });
        }
        if let Some(local) = &spec.local {
            let path = PathBuf::from(&local.path);
            if !path.exists() {
                return Err(format!("path {:?} does not exist", local.path));
            }
            // The local plugin manages fsGroup ownership (hostPath does not).
            if let (false, Some(g)) = (read_only, fs_group) {
                ownership::set_volume_ownership(&path, g as u32, false).map_err(|e| e.to_string())?;
            }
            return Ok(VolumeInfo { host_path: path, plugin: PLUGIN_PVC, read_only });
        }
        Err(format!("PV {pv_name} has a volume source rkube's kubelet does not support (only hostPath and local)"))
    }

    /// The tmpfs size of a memory-backed volume, as upstream's
    /// `calculateEmptyDirMemorySize`: node allocatable memory, lowered to the
    /// pod's memory limit (when every container declares one) and to
    /// `size_limit`, each only if positive and smaller. `None` (no `size=`
    /// option) when allocatable is unknown.
    async fn memory_size(&self, pod: &Pod, size_limit: Option<&Quantity>) -> Option<u64> {
        let mut size = self.node_allocatable().await.map(|a| a.memory_bytes).filter(|m| *m > 0.0);
        for cap in [pod_memory_limit(pod), size_limit.and_then(|q| parse_quantity(&q.0))].into_iter().flatten() {
            if cap > 0.0 && size.is_none_or(|s| cap <= s) {
                size = Some(cap);
            }
        }
        size.map(|s| s.ceil() as u64)
    }

    /// The CRI mounts of a container: its volumeMounts (subPath, subPathExpr
    /// expanded from `env`, readOnly, mountPropagation), then the
    /// termination message file at `terminationMessagePath` (a fresh host file
    /// per call, see [`VolumeManager::termination_log`]).
    pub fn container_mounts(
        &self,
        pod: &Pod,
        container: &Container,
        vols: &PodVolumes,
        env: &[(String, String)],
    ) -> Result<Vec<Mount>, VolumeError> {
        let uid = pod.metadata.uid.as_deref().unwrap_or_default();
        mounts::make_mounts(&self.pods_dir, uid, container, vols, env)
    }

    /// Creates a new empty termination message file
    /// `<pods dir>/<uid>/containers/<container>/<8 hex>` (mode 0666).
    pub fn termination_log(&self, pod_uid: &str, container: &str) -> std::io::Result<PathBuf> {
        mounts::termination_log(&self.pods_dir, pod_uid, container)
    }

    /// Unmounts every mount under the pod dir (found in mountinfo, so it also
    /// works for pods unknown since a restart) and removes the dir.
    pub async fn teardown(&self, pod_uid: &str) -> Result<(), VolumeError> {
        self.tokens.forget_pod(pod_uid);
        let dir = self.pod_dir(pod_uid);
        let err = |message: String| VolumeError::Teardown { pod_uid: pod_uid.to_string(), message };
        if pod_uid.is_empty() || pod_uid.contains('/') || pod_uid.starts_with('.') {
            return Err(err(format!("invalid pod UID {pod_uid:?}")));
        }
        for m in tmpfs::mounts_under(&dir).map_err(|e| err(format!("reading mountinfo: {e}")))? {
            tmpfs::unmount(&m).map_err(|e| err(format!("unmount {}: {e}", m.display())))?;
        }
        let left = tmpfs::mounts_under(&dir).map_err(|e| err(format!("reading mountinfo: {e}")))?;
        if !left.is_empty() {
            return Err(err(format!("still mounted: {left:?}")));
        }
        match fs::remove_dir_all(&dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(err(format!("remove {}: {e}", dir.display()))),
        }
    }

    /// The pod UIDs that have a directory under the pods dir (for cleaning up
    /// pods that no longer exist after a restart).
    pub fn pod_dirs_on_disk(&self) -> Vec<String> {
        fs::read_dir(&self.pods_dir)
            .map(|rd| rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default()
    }
}

/// Creates `dir` (and parents) with mode 0777 as upstream's emptyDir;
/// returns true if it was created.
fn ensure_dir(dir: &Path) -> std::io::Result<bool> {
    if dir.is_dir() {
        return Ok(false);
    }
    if let Some(parent) = dir.parent() {
        fs::DirBuilder::new().recursive(true).mode(0o750).create(parent)?;
    }
    fs::DirBuilder::new().mode(0o777).create(dir)?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o777))?;
    Ok(true)
}

/// The pod's memory limit in bytes as upstream's pod cgroup: set only when
/// every container declares one; the larger of the app containers' (and
/// sidecars') sum and the largest init container, plus the pod overhead.
pub fn pod_memory_limit(pod: &Pod) -> Option<f64> {
    let spec = pod.spec.as_ref()?;
    let limit = |c: &Container| {
        c.resources
            .as_ref()
            .and_then(|r| r.limits.as_ref())
            .and_then(|l| l.get("memory"))
            .and_then(|q| parse_quantity(&q.0))
    };
    let mut sum = 0.0;
    for c in &spec.containers {
        sum += limit(c)?;
    }
    let mut init_max: f64 = 0.0;
    for c in spec.init_containers.iter().flatten() {
        let l = limit(c)?;
        if c.restart_policy.as_deref() == Some("Always") {
            sum += l;
        } else {
            init_max = init_max.max(l);
        }
    }
    let overhead =
        spec.overhead.as_ref().and_then(|o| o.get("memory")).and_then(|q| parse_quantity(&q.0)).unwrap_or(0.0);
    Some(sum.max(init_max) + overhead)
}

#[cfg(test)]
mod tests;
