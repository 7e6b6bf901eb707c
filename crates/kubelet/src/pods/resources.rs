//! Container resources and pod cgroups, as upstream's kubelet: the QoS
//! class (`pkg/apis/core/v1/helper/qos`), CRI Linux resources
//! (`kuberuntime_container_linux.go` `calculateLinuxResources`,
//! `cm.MilliCPUToShares`, `milliCPUToQuota`), the OOM score adjustment
//! (`pkg/kubelet/qos/policy.go`) and the pod cgroup parent
//! (`cm/pod_container_manager_linux.go`, `cgroup_manager_linux.go`).
//!
//! Deviation from upstream, for isolation: upstream roots every pod cgroup
//! at `/kubepods`; rkube roots them at `/rkube-<node>/kubepods` (cgroupfs)
//! or under the slice `rkube_<node>.slice` (systemd), so that several
//! agents on one host (tests, multi-node on one machine) never share or
//! remove each other's cgroups.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{Container, Pod};
use rkube_apimachinery::quantity;

use crate::cri::v1::LinuxContainerResources;
use crate::host::CgroupDriver;

/// `cm.MinShares`: the cpu.shares of a container without a CPU request.
pub const MIN_SHARES: i64 = 2;
/// `cm.MaxShares`.
pub const MAX_SHARES: i64 = 262_144;
/// `cm.SharesPerCPU`.
const SHARES_PER_CPU: i64 = 1024;
/// The CFS period, 100ms in microseconds (upstream's `quotaPeriod`).
pub const CPU_PERIOD_US: i64 = 100_000;
/// The smallest CFS quota, 1ms (upstream's `minQuotaPeriod`).
pub const MIN_QUOTA_US: i64 = 1_000;
/// OOM score adjustment of Guaranteed (and node-critical) containers.
pub const GUARANTEED_OOM_SCORE_ADJ: i64 = -997;
/// OOM score adjustment of BestEffort containers.
pub const BEST_EFFORT_OOM_SCORE_ADJ: i64 = 1000;
/// Priority at and above which a pod is critical (`scheduling.SystemCriticalPriority`).
const SYSTEM_CRITICAL_PRIORITY: i32 = 2_000_000_000;

/// The pod's QoS class, `Guaranteed`, `Burstable` or `BestEffort`
/// (upstream's `GetPodQOS`): `status.qosClass` when set, else computed
/// over app and init containers (`ComputePodQOS`, without the alpha
/// pod-level resources): no cpu/memory request or limit above zero →
/// BestEffort; every container with cpu and memory limits and the summed
/// requests equal to the summed limits → Guaranteed; else Burstable.
pub fn qos_class(pod: &Pod) -> &'static str {
    match pod.status.as_ref().and_then(|s| s.qos_class.as_deref()) {
        Some("Guaranteed") => return "Guaranteed",
        Some("Burstable") => return "Burstable",
        Some("BestEffort") => return "BestEffort",
        _ => {}
    }
    compute_qos_class(pod)
}

/// [`qos_class`] ignoring `status.qosClass` (upstream's `ComputePodQOS`).
pub fn compute_qos_class(pod: &Pod) -> &'static str {
    let Some(spec) = pod.spec.as_ref() else { return "BestEffort" };
    let mut requests: BTreeMap<&str, i128> = BTreeMap::new();
    let mut limits: BTreeMap<&str, i128> = BTreeMap::new();
    let mut guaranteed = true;
    for c in spec.containers.iter().chain(spec.init_containers.iter().flatten()) {
        let res = c.resources.as_ref();
        for (name, q) in res.and_then(|r| r.requests.as_ref()).into_iter().flatten() {
            let Some(name) = qos_resource(name) else { continue };
            let v = quantity::milli_value(&q.0).unwrap_or(0);
            if v > 0 {
                *requests.entry(name).or_default() += v;
            }
        }
        let mut found = (false, false);
        for (name, q) in res.and_then(|r| r.limits.as_ref()).into_iter().flatten() {
            let Some(name) = qos_resource(name) else { continue };
            let v = quantity::milli_value(&q.0).unwrap_or(0);
            if v > 0 {
                if name == "cpu" {
                    found.0 = true;
                } else {
                    found.1 = true;
                }
                *limits.entry(name).or_default() += v;
            }
        }
        if found != (true, true) {
            guaranteed = false;
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    if guaranteed && requests.iter().all(|(n, r)| limits.get(n) == Some(r)) && requests.len() == limits.len() {
        return "Guaranteed";
    }
    "Burstable"
}

/// The compute resources QoS considers (`isSupportedQoSComputeResource`).
fn qos_resource(name: &str) -> Option<&'static str> {
    match name {
        "cpu" => Some("cpu"),
        "memory" => Some("memory"),
        _ => None,
    }
}

/// `cm.MilliCPUToShares`: `milli * 1024 / 1000`, at least 2 (also for no
/// request), at most 262144.
pub fn milli_cpu_to_shares(milli: i64) -> i64 {
    if milli == 0 {
        return MIN_SHARES;
    }
    (milli * SHARES_PER_CPU / 1000).clamp(MIN_SHARES, MAX_SHARES)
}

/// Upstream's `milliCPUToQuota`: 0 (unlimited) without a limit, else
/// `milli * period / 1000`, at least 1000us.
pub fn milli_cpu_to_quota(milli: i64, period: i64) -> i64 {
    if milli == 0 {
        return 0;
    }
    (milli * period / 1000).max(MIN_QUOTA_US)
}

fn resource(c: &Container, limits: bool, name: &str, milli: bool) -> Option<i64> {
    let res = c.resources.as_ref()?;
    let list = if limits { res.limits.as_ref()? } else { res.requests.as_ref()? };
    let text = &list.get(name)?.0;
    let v = if milli { quantity::milli_value(text)? } else { quantity::value(text)? };
    i64::try_from(v).ok()
}

/// The CRI Linux resources of `container` (upstream's
/// `generateLinuxContainerResources`) on a node with `node_memory_bytes`
/// of memory, for this host's cgroup version: see
/// [`linux_container_resources_for`].
pub fn linux_container_resources(pod: &Pod, container: &Container, node_memory_bytes: i64) -> LinuxContainerResources {
    linux_container_resources_for(pod, container, node_memory_bytes, crate::host::cgroup_v2())
}

/// The CRI Linux resources of `container`:
/// - `cpu_shares` from the CPU request ([`milli_cpu_to_shares`]; the limit
///   when only a limit is set; 2 without either);
/// - `cpu_period` 100000us and `cpu_quota` from the CPU limit
///   ([`milli_cpu_to_quota`]; 0 = unlimited);
/// - `memory_limit_in_bytes` from the memory limit (0 = unlimited);
/// - `oom_score_adj` per [`oom_score_adj`];
/// - on cgroup v2, `memory.oom.group=1` (the kubelet default
///   `singleProcessOOMKill: false` kills the whole container on OOM).
pub fn linux_container_resources_for(
    pod: &Pod,
    container: &Container,
    node_memory_bytes: i64,
    cgroup_v2: bool,
) -> LinuxContainerResources {
    let cpu_request = resource(container, false, "cpu", true);
    let cpu_limit = resource(container, true, "cpu", true).unwrap_or(0);
    let shares = match cpu_request {
        None if cpu_limit != 0 => milli_cpu_to_shares(cpu_limit),
        r => milli_cpu_to_shares(r.unwrap_or(0)),
    };
    let mut out = LinuxContainerResources {
        cpu_shares: shares,
        cpu_period: CPU_PERIOD_US,
        cpu_quota: milli_cpu_to_quota(cpu_limit, CPU_PERIOD_US),
        memory_limit_in_bytes: resource(container, true, "memory", false).unwrap_or(0),
        oom_score_adj: oom_score_adj(pod, container, node_memory_bytes),
        ..Default::default()
    };
    if cgroup_v2 {
        out.unified.insert("memory.oom.group".into(), "1".into());
    }
    out
}

/// Upstream's `IsNodeCriticalPod`: a critical pod (static, mirror, or
/// priority ≥ 2000000000) of priority class `system-node-critical`.
pub fn is_node_critical(pod: &Pod) -> bool {
    let spec = pod.spec.as_ref();
    let class = spec.and_then(|s| s.priority_class_name.as_deref());
    let annotations = pod.metadata.annotations.as_ref();
    let static_or_mirror = annotations.is_some_and(|a| {
        a.contains_key("kubernetes.io/config.mirror")
            || a.get("kubernetes.io/config.source").is_some_and(|s| s != "api")
    });
    let critical = static_or_mirror || spec.and_then(|s| s.priority).is_some_and(|p| p >= SYSTEM_CRITICAL_PRIORITY);
    critical && class == Some("system-node-critical")
}

/// Upstream's `GetContainerOOMScoreAdjust`: -997 for node-critical and
/// Guaranteed pods, 1000 for BestEffort, and for Burstable
/// `1000 - 1000*memoryRequest/nodeMemory` clamped to [3, 999] (above
/// Guaranteed, below BestEffort). A sidecar (init container with
/// `restartPolicy: Always`) gets at most the score of the pod's smallest
/// regular memory request, so it is not killed before the app.
pub fn oom_score_adj(pod: &Pod, container: &Container, node_memory_bytes: i64) -> i64 {
    if is_node_critical(pod) {
        return GUARANTEED_OOM_SCORE_ADJ;
    }
    match qos_class(pod) {
        "Guaranteed" => return GUARANTEED_OOM_SCORE_ADJ,
        "BestEffort" => return BEST_EFFORT_OOM_SCORE_ADJ,
        _ => {}
    }
    let capacity = node_memory_bytes.max(1) as i128;
    let score = |request: i64| 1000 - (1000 * request as i128) / capacity;
    let mut adj = score(resource(container, false, "memory", false).unwrap_or(0));
    let sidecar = container.restart_policy.as_deref() == Some("Always")
        && pod.spec.as_ref().is_some_and(|s| s.init_containers.iter().flatten().any(|c| c.name == container.name));
    if sidecar {
        let min_regular = pod
            .spec
            .as_ref()
            .and_then(|s| s.containers.iter().map(|c| resource(c, false, "memory", false).unwrap_or(0)).min())
            .unwrap_or(0);
        if min_regular != 0 {
            adj = adj.min(score(min_regular));
        }
    }
    let floor = (1000 + GUARANTEED_OOM_SCORE_ADJ) as i128;
    if adj < floor {
        return floor as i64;
    }
    if adj == BEST_EFFORT_OOM_SCORE_ADJ as i128 {
        return (adj - 1) as i64;
    }
    adj as i64
}

/// The QoS level's cgroup name: none for Guaranteed pods (they sit directly
/// under `kubepods`), else the class lower-cased.
fn qos_dir(qos: &str) -> Option<String> {
    (qos != "Guaranteed").then(|| qos.to_lowercase())
}

/// The pod's cgroup in cgroupfs form, relative to the hierarchy root:
/// `rkube-<node>/kubepods[/<burstable|besteffort>]/pod<uid>`.
pub fn pod_cgroup_path(node_name: &str, pod_uid: &str, qos: &str) -> String {
    let mut parts = vec![format!("rkube-{node_name}"), "kubepods".to_string()];
    parts.extend(qos_dir(qos));
    parts.push(format!("pod{pod_uid}"));
    parts.join("/")
}

/// The pod's cgroup as the systemd driver lays it out on disk: every
/// level a slice nested in its parent's, e.g.
/// `rkube_n1.slice/rkube_n1-kubepods.slice/rkube_n1-kubepods-burstable.slice/
/// rkube_n1-kubepods-burstable-pod<uid>.slice` (`-` and `.` in a component
/// become `_`, as upstream's `escapeSystemdCgroupName`).
pub fn pod_systemd_slice_path(node_name: &str, pod_uid: &str, qos: &str) -> String {
    let mut parts = vec![format!("rkube-{node_name}"), "kubepods".to_string()];
    parts.extend(qos_dir(qos));
    parts.push(format!("pod{pod_uid}"));
    let escaped: Vec<String> = parts.iter().map(|p| p.replace(['-', '.'], "_")).collect();
    (1..=escaped.len()).map(|n| format!("{}.slice", escaped[..n].join("-"))).collect::<Vec<_>>().join("/")
}

/// The pod sandbox's CRI `cgroup_parent` (upstream passes the pod cgroup):
/// for cgroupfs `/rkube-<node>/kubepods/<burstable|besteffort>/pod<uid>`
/// (Guaranteed pods: `/rkube-<node>/kubepods/pod<uid>`); for systemd the
/// leaf slice name `rkube_<node>-kubepods-<qos>-pod<uid>.slice`, which
/// systemd expands to its nested slices (upstream's form is
/// `kubepods-burstable-pod<uid>.slice`). See the module doc for why the
/// node name is part of it.
pub fn pod_cgroup_parent(node_name: &str, pod: &Pod, driver: CgroupDriver) -> String {
    let uid = pod.metadata.uid.as_deref().unwrap_or("");
    let qos = qos_class(pod);
    match driver {
        CgroupDriver::Cgroupfs => format!("/{}", pod_cgroup_path(node_name, uid, qos)),
        CgroupDriver::Systemd => {
            pod_systemd_slice_path(node_name, uid, qos).rsplit('/').next().unwrap_or_default().to_string()
        }
    }
}

/// Removes the pod's cgroup (both driver layouts) from every cgroup v1
/// controller hierarchy or the v2 hierarchy mounted on this host (read
/// from /proc/self/mountinfo), leaf first. Best effort: a missing or busy
/// cgroup is skipped with a debug log (upstream's pod cgroup cleanup retries
/// on the next housekeeping; the worker calls this after the pod's
/// containers are gone).
pub fn remove_pod_cgroup(node_name: &str, pod_uid: &str, qos: &str) {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").map(|m| cgroup_mounts(&m)).unwrap_or_default();
    let rels = [pod_cgroup_path(node_name, pod_uid, qos), pod_systemd_slice_path(node_name, pod_uid, qos)];
    for (root, mount_point) in mounts {
        for rel in &rels {
            if let Some(dir) = cgroup_dir(&root, &mount_point, rel) {
                remove_cgroup_dir(&dir);
            }
        }
    }
}

/// The cgroup (v1 and v2) mounts of a mountinfo text as `(root inside the
/// hierarchy, mount point)`, each mount point once.
pub fn cgroup_mounts(mountinfo: &str) -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = Vec::new();
    for line in mountinfo.lines() {
        let Some((left, right)) = line.split_once(" - ") else { continue };
        let fstype = right.split_whitespace().next().unwrap_or("");
        if fstype != "cgroup" && fstype != "cgroup2" {
            continue;
        }
        let fields: Vec<&str> = left.split_whitespace().collect();
        if fields.len() < 5 {
            continue;
        }
        let mount_point = PathBuf::from(unescape_mountinfo(fields[4]));
        if !out.iter().any(|(_, m)| *m == mount_point) {
            out.push((unescape_mountinfo(fields[3]), mount_point));
        }
    }
    out
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape_mountinfo(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The directory of cgroup `/rel` under a mount whose hierarchy root is
/// `root`: `None` when the cgroup lies outside what is mounted there.
fn cgroup_dir(root: &str, mount_point: &Path, rel: &str) -> Option<PathBuf> {
    let full = format!("/{rel}");
    let root = root.trim_end_matches('/');
    let inside = full.strip_prefix(root)?;
    if !root.is_empty() && !inside.starts_with('/') {
        return None;
    }
    Some(mount_point.join(inside.trim_start_matches('/')))
}

/// Removes `dir` and the directories below it, deepest first, ignoring
/// missing (ENOENT) and busy (EBUSY, ENOTEMPTY: processes still inside)
/// cgroups with a debug log.
pub fn remove_cgroup_dir(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            remove_cgroup_dir(&e.path());
        }
    }
    match std::fs::remove_dir(dir) {
        Ok(()) => tracing::debug!(component = "kubelet", cgroup = %dir.display(), "removed pod cgroup"),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::EBUSY | libc::ENOTEMPTY)) => {
            tracing::debug!(component = "kubelet", cgroup = %dir.display(), error = %e, "pod cgroup not removed")
        }
        Err(e) => tracing::warn!(component = "kubelet", cgroup = %dir.display(), error = %e, "removing pod cgroup"),
    }
}

#[cfg(test)]
#[path = "resources_tests.rs"]
mod tests;
