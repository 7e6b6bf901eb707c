//! Node-pressure eviction (upstream's `pkg/kubelet/eviction`).
//!
//! Every [`MONITORING_INTERVAL`] the manager observes the node's signals:
//! - `memory.available`: MemTotal minus the working set. On cgroup v1 the
//!   working set is the root memory cgroup's `memory.usage_in_bytes` minus
//!   `total_inactive_file` of its `memory.stat` (what upstream reads through
//!   cAdvisor); without a v1 memory cgroup (cgroup v2) /proc/meminfo's
//!   `MemAvailable` is used instead (close to it, and what the kernel itself
//!   considers available).
//! - `nodefs.available`, `nodefs.inodesFree`: statvfs of the data dir.
//! - `imagefs.available`, `imagefs.inodesFree`: statvfs of the runtime's
//!   root (the managed containerd's root under the data dir).
//! - `pid.available`: min(`kernel.pid_max`, `kernel.threads-max`) minus
//!   the tasks the kernel runs (sysinfo's `procs`), as upstream.
//!
//! Thresholds are hard (`--eviction-hard`) or soft (`--eviction-soft`, each
//! with its `--eviction-soft-grace-period`), and may carry a
//! `--eviction-minimum-reclaim` ([`threshold_config`], upstream's
//! ParseThresholdConfig). Each interval follows upstream's `synchronize`
//! ([`EvictionState::update`]): the thresholds crossed now, plus those that
//! drove eviction last time and are not yet resolved (the signal is not
//! above threshold + minimum reclaim), set the node condition of their
//! signal (MemoryPressure, DiskPressure, PIDPressure) at once — a soft
//! threshold too — and the condition stays True until none of its
//! thresholds was crossed for `--eviction-pressure-transition-period`. A
//! threshold drives eviction once it has been crossed for its grace period
//! (0 for hard ones). Then the manager fails ONE pod per interval: ranked
//! as upstream (pods above their requests of the starved resource first,
//! then lower priority, then larger usage above requests), never a
//! critical pod (static, mirror, priority ≥ 2000000000). The pod gets phase
//! Failed, reason `Evicted`, upstream's message and a DisruptionTarget
//! condition (TerminationByKubelet) through `pods/status`, and a Warning
//! `Evicted` event; the pod workers then stop its containers with the
//! grace period upstream's eviction manager passes to killPod: 1 s for a
//! hard threshold (raised to the runtime's 2 s minimum per container), and
//! min(pod's terminationGracePeriodSeconds, `--eviction-max-pod-grace-period`)
//! for a soft one. A Warning `EvictionThresholdMet` event on the Node says
//! which resource is being reclaimed.
//!
//! On disk pressure unused images are reclaimed first (upstream's
//! node-level reclaim); a pod is evicted only if some threshold is still
//! crossed afterwards, minimum reclaim included.
//!
//! Admission ([`admit_under_pressure`], upstream's eviction `Admit`, via
//! the [`PressureHandle`]'s [`AdmitHandler`]): under any pressure a new
//! non-critical pod is rejected with reason `Evicted` and `The node had
//! condition: [MemoryPressure DiskPressure]. `, except that under
//! MemoryPressure alone non-BestEffort pods and BestEffort pods tolerating
//! `node.kubernetes.io/memory-pressure:NoSchedule` are admitted.
//!
//! Not done (documented differences): deleting unused containers as part
//! of the disk reclaim (the pod workers already keep at most two instances
//! per container and the pod manager removes those of pods the API no
//! longer has), the `allocatableMemory.available` signal, memcg threshold
//! notifications, per-pod ephemeral-storage limits and emptyDir size
//! limits (localStorageEviction), PID ranking by process count (pods rank
//! by priority only under PID pressure), waiting for the evicted pod's
//! cleanup before the next interval, skipping thresholds whose stats did
//! not change since the last interval, the order of several conditions in
//! the admission message (upstream's comes from a Go map, so it varies;
//! here it is always MemoryPressure, DiskPressure, PIDPressure), and node
//! allocatable still subtracts upstream's default hard thresholds rather
//! than the configured ones (`status::allocatable`;
//! [`EvictionConfig::hard_eviction_reservation`] gives the configured ones).
//!
//! The node taints for these conditions (`node.kubernetes.io/memory-pressure`
//! …) are the node-lifecycle controller's job (crates/controllers/src/nodelifecycle/taints.rs).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ObjectReference, Pod, Toleration};
use kube::api::{Api, ListParams, Patch, PatchParams};
use tokio::sync::watch;

use super::status::{binary_quantity, parse_quantity};
use crate::cri::CriClient;
use crate::pods::admission::{AdmitHandler, GraceOverrides, Rejection};

const COMPONENT: &str = "kubelet";
/// How often signals are observed (upstream's evictionMonitoringPeriod).
pub const MONITORING_INTERVAL: Duration = Duration::from_secs(10);
/// Upstream's default `--eviction-hard` on Linux.
pub const DEFAULT_EVICTION_HARD: &str =
    "memory.available<100Mi,nodefs.available<10%,imagefs.available<15%,nodefs.inodesFree<5%";
/// Upstream's default `--eviction-pressure-transition-period`.
pub const DEFAULT_PRESSURE_TRANSITION_PERIOD: Duration = Duration::from_secs(300);
/// Pods at or above this priority are critical and never evicted (upstream's SystemCriticalPriority).
pub const SYSTEM_CRITICAL_PRIORITY: i32 = 2_000_000_000;

/// An eviction signal (upstream's `evictionapi.Signal`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Signal {
    /// `memory.available`
    MemoryAvailable,
    /// `nodefs.available`
    NodeFsAvailable,
    /// `nodefs.inodesFree`
    NodeFsInodesFree,
    /// `imagefs.available`
    ImageFsAvailable,
    /// `imagefs.inodesFree`
    ImageFsInodesFree,
    /// `pid.available`
    PidAvailable,
}

impl Signal {
    const ALL: [Signal; 6] = [
        Signal::MemoryAvailable,
        Signal::NodeFsAvailable,
        Signal::NodeFsInodesFree,
        Signal::ImageFsAvailable,
        Signal::ImageFsInodesFree,
        Signal::PidAvailable,
    ];

    /// The signal's name in `--eviction-hard`.
    pub fn name(self) -> &'static str {
        match self {
            Signal::MemoryAvailable => "memory.available",
            Signal::NodeFsAvailable => "nodefs.available",
            Signal::NodeFsInodesFree => "nodefs.inodesFree",
            Signal::ImageFsAvailable => "imagefs.available",
            Signal::ImageFsInodesFree => "imagefs.inodesFree",
            Signal::PidAvailable => "pid.available",
        }
    }

    /// The starved resource named in eviction messages (upstream's signalToResource).
    pub fn resource(self) -> &'static str {
        match self {
            Signal::MemoryAvailable => "memory",
            Signal::NodeFsAvailable | Signal::ImageFsAvailable => "ephemeral-storage",
            Signal::NodeFsInodesFree | Signal::ImageFsInodesFree => "inodes",
            Signal::PidAvailable => "pids",
        }
    }

    /// The node condition a crossed threshold of this signal sets.
    pub fn condition(self) -> &'static str {
        match self {
            Signal::MemoryAvailable => "MemoryPressure",
            Signal::PidAvailable => "PIDPressure",
            _ => "DiskPressure",
        }
    }
}

/// A threshold's value: an absolute quantity (bytes, inodes, PIDs) or a
/// fraction of the signal's capacity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ThresholdValue {
    /// An absolute amount.
    Quantity(u64),
    /// A fraction in (0, 1].
    Percentage(f64),
}

/// A threshold `signal<value`: hard when its grace period is zero (upstream's
/// `evictionapi.Threshold`, the only operator being LessThan).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Threshold {
    /// What is observed.
    pub signal: Signal,
    /// Below this, the threshold is crossed.
    pub value: ThresholdValue,
    /// How long the threshold must stay crossed before it drives eviction
    /// (`--eviction-soft-grace-period`; zero for `--eviction-hard`).
    pub grace_period: Duration,
    /// `--eviction-minimum-reclaim`: once the threshold drove eviction, it
    /// stays met until the signal is above value + this.
    pub min_reclaim: Option<ThresholdValue>,
}

impl Threshold {
    /// A hard threshold without minimum reclaim.
    pub fn hard(signal: Signal, value: ThresholdValue) -> Threshold {
        Threshold { signal, value, grace_period: Duration::ZERO, min_reclaim: None }
    }

    /// Upstream's isHardEvictionThreshold: no grace period.
    pub fn is_hard(&self) -> bool {
        self.grace_period.is_zero()
    }

    /// The threshold as an amount given the signal's capacity (upstream's GetThresholdQuantity).
    pub fn quantity(&self, capacity: u64) -> u64 {
        value_quantity(self.value, capacity)
    }

    /// The amount the signal must exceed for the threshold to be resolved:
    /// [`Threshold::quantity`] plus the minimum reclaim, if any.
    pub fn quantity_with_min_reclaim(&self, capacity: u64) -> u64 {
        let extra = self.min_reclaim.map_or(0, |m| value_quantity(m, capacity));
        self.quantity(capacity).saturating_add(extra)
    }
}

fn value_quantity(v: ThresholdValue, capacity: u64) -> u64 {
    match v {
        ThresholdValue::Quantity(q) => q,
        ThresholdValue::Percentage(p) => (capacity as f64 * p) as u64,
    }
}

fn signal_named(name: &str) -> Result<Signal, String> {
    Signal::ALL.into_iter().find(|s| s.name() == name).ok_or_else(|| format!("unsupported eviction signal {name}"))
}

/// Parses `--eviction-hard` (and `--eviction-soft`): `signal<value`
/// statements separated by commas, value a quantity or a percentage. `0%`
/// statements are ignored and the empty string means no thresholds, as
/// upstream. Errors carry upstream's messages (`unsupported eviction signal
/// …`). The thresholds are hard (no grace period, no minimum reclaim).
pub fn parse_thresholds(s: &str) -> Result<Vec<Threshold>, String> {
    let mut out: Vec<Threshold> = Vec::new();
    for stmt in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, value) = stmt
            .split_once('<')
            .ok_or_else(|| format!("invalid eviction threshold {stmt:?}: expected signal<value"))?;
        let (name, value) = (name.trim(), value.trim());
        let signal = signal_named(name)?;
        let value = if let Some(p) = value.strip_suffix('%') {
            let p: f64 = p.parse().map_err(|_| format!("invalid percentage {value:?} for {name}"))?;
            if !(0.0..=100.0).contains(&p) {
                return Err(format!("eviction percentage threshold {name} must be >= 0% and <= 100%: {value}"));
            }
            if p == 0.0 {
                continue;
            }
            ThresholdValue::Percentage(p / 100.0)
        } else {
            if value.starts_with('-') {
                return Err(format!("eviction threshold {name} must be positive: {value}"));
            }
            let q = parse_quantity(value).ok_or_else(|| format!("invalid quantity {value:?} for {name}"))?;
            ThresholdValue::Quantity(q.ceil() as u64)
        };
        if out.iter().any(|t| t.signal == signal) {
            return Err(format!("found duplicate eviction threshold for signal {name}"));
        }
        out.push(Threshold::hard(signal, value));
    }
    Ok(out)
}

/// `key=value` pairs separated by commas (kubelet's MapStringString flags);
/// a later key replaces an earlier one.
fn parse_pairs(s: &str) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for pair in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').ok_or_else(|| format!("malformed pair, expect string=string: {pair:?}"))?;
        out.insert(k.trim().to_string(), v.trim().to_string());
    }
    Ok(out)
}

/// Parses `--eviction-soft-grace-period`: `signal=duration` pairs (Go
/// durations, e.g. `memory.available=1m30s`), as upstream's
/// parseGracePeriods: unknown signals are `unsupported eviction signal …`,
/// negative durations `invalid eviction grace period specified: -1s, must
/// be a positive value`.
pub fn parse_grace_periods(s: &str) -> Result<BTreeMap<Signal, Duration>, String> {
    let mut out = BTreeMap::new();
    for (name, value) in parse_pairs(s)? {
        let signal = signal_named(&name)?;
        let nanos = rkube_apimachinery::duration::parse_go_duration_nanos(&value)?;
        if nanos < 0 {
            return Err(format!("invalid eviction grace period specified: {value}, must be a positive value"));
        }
        out.insert(signal, Duration::from_nanos(nanos as u64));
    }
    Ok(out)
}

/// Parses `--eviction-minimum-reclaim`: `signal=quantity` or
/// `signal=percent%` pairs, as upstream's parseMinimumReclaims (a
/// percentage must be positive, a quantity must not be negative).
pub fn parse_min_reclaims(s: &str) -> Result<BTreeMap<Signal, ThresholdValue>, String> {
    let mut out = BTreeMap::new();
    for (name, value) in parse_pairs(s)? {
        let signal = signal_named(&name)?;
        let v = if let Some(p) = value.strip_suffix('%') {
            let p: f64 = p.parse().map_err(|_| format!("invalid percentage {value:?} for {name}"))?;
            if p <= 0.0 {
                return Err(format!("eviction percentage minimum reclaim {name} must be positive: {value}"));
            }
            ThresholdValue::Percentage(p / 100.0)
        } else {
            if value.starts_with('-') {
                return Err(format!("negative eviction minimum reclaim specified for {name}"));
            }
            let q = parse_quantity(&value).ok_or_else(|| format!("invalid quantity {value:?} for {name}"))?;
            ThresholdValue::Quantity(q.ceil() as u64)
        };
        out.insert(signal, v);
    }
    Ok(out)
}

/// All thresholds from the four flags (upstream's ParseThresholdConfig):
/// the hard ones, then the soft ones with their grace periods — a soft
/// threshold without one is `grace period must be specified for the soft
/// eviction threshold <signal>` — and every threshold of a signal with a
/// minimum reclaim carries it. Grace periods of signals without a soft
/// threshold are ignored, as upstream.
pub fn threshold_config(hard: &str, soft: &str, soft_grace: &str, min_reclaim: &str) -> Result<Vec<Threshold>, String> {
    let mut out = parse_thresholds(hard)?;
    let mut soft = parse_thresholds(soft)?;
    let grace = parse_grace_periods(soft_grace)?;
    let reclaim = parse_min_reclaims(min_reclaim)?;
    for t in &mut soft {
        t.grace_period = *grace.get(&t.signal).ok_or_else(|| {
            format!("grace period must be specified for the soft eviction threshold {}", t.signal.name())
        })?;
    }
    out.extend(soft);
    for t in &mut out {
        t.min_reclaim = reclaim.get(&t.signal).copied();
    }
    Ok(out)
}

/// Upstream's default for `--eviction-max-pod-grace-period` (seconds).
pub const DEFAULT_MAX_POD_GRACE_PERIOD: i64 = 0;
/// The grace period upstream's eviction manager passes for a hard
/// eviction (its immediateEvictionGracePeriodSeconds).
pub const IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS: i64 = 1;

/// The eviction and image GC settings (from the server's or agent's flags).
#[derive(Clone, Debug)]
pub struct EvictionConfig {
    /// Every threshold, hard and soft ([`threshold_config`]).
    pub thresholds: Vec<Threshold>,
    /// `--eviction-pressure-transition-period`.
    pub pressure_transition_period: Duration,
    /// `--eviction-max-pod-grace-period`, seconds: the most grace a pod
    /// gets when a soft threshold evicts it (a negative value kills at once).
    pub max_pod_grace_period: i64,
    /// Image GC settings.
    pub image_gc: super::image_gc::ImageGcConfig,
}

impl EvictionConfig {
    /// What node allocatable sets aside for the hard thresholds (upstream's
    /// hardEvictionReservation): (memory bytes of `memory.available`,
    /// ephemeral-storage bytes of `nodefs.available`), percentages taken of
    /// the given capacities; 0 where there is no such hard threshold.
    pub fn hard_eviction_reservation(&self, memory_capacity: u64, nodefs_capacity: u64) -> (u64, u64) {
        let hard = |signal: Signal, capacity: u64| {
            self.thresholds.iter().find(|t| t.is_hard() && t.signal == signal).map_or(0, |t| t.quantity(capacity))
        };
        (hard(Signal::MemoryAvailable, memory_capacity), hard(Signal::NodeFsAvailable, nodefs_capacity))
    }
}

impl Default for EvictionConfig {
    fn default() -> Self {
        EvictionConfig {
            thresholds: parse_thresholds(DEFAULT_EVICTION_HARD).expect("the default thresholds parse"),
            pressure_transition_period: DEFAULT_PRESSURE_TRANSITION_PERIOD,
            max_pod_grace_period: DEFAULT_MAX_POD_GRACE_PERIOD,
            image_gc: Default::default(),
        }
    }
}

/// One observed signal: what is available of what capacity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Observation {
    /// Available amount (bytes, inodes, PIDs).
    pub available: u64,
    /// Capacity in the same unit.
    pub capacity: u64,
}

/// The observed signals (a signal that could not be read is absent).
pub type Observations = BTreeMap<Signal, Observation>;

fn meminfo_kib(meminfo: &str, key: &str) -> Option<u64> {
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':')?.trim().trim_end_matches("kB").trim().parse().ok())
}

fn memory_stat_value(stat: &str, key: &str) -> Option<u64> {
    stat.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

/// `memory.available` from /proc/meminfo and, on cgroup v1, the root
/// memory cgroup's `memory.usage_in_bytes` and `memory.stat`: capacity is
/// MemTotal; available is MemTotal minus (usage − total_inactive_file),
/// or MemAvailable without the cgroup numbers.
pub fn memory_observation(meminfo: &str, cgroup_usage: Option<&str>, memory_stat: Option<&str>) -> Option<Observation> {
    let total = meminfo_kib(meminfo, "MemTotal")? * 1024;
    let cgroup = cgroup_usage.and_then(|u| u.trim().parse::<u64>().ok()).zip(memory_stat);
    let available = match cgroup {
        Some((usage, stat)) => {
            let inactive = memory_stat_value(stat, "total_inactive_file").unwrap_or(0);
            total.saturating_sub(usage.saturating_sub(inactive))
        }
        None => meminfo_kib(meminfo, "MemAvailable")? * 1024,
    };
    Some(Observation { available, capacity: total })
}

/// `pid.available`: min(pid_max, threads-max) minus the running tasks.
pub fn pid_observation(pid_max: &str, threads_max: &str, running: u64) -> Option<Observation> {
    let max = match (pid_max.trim().parse::<u64>().ok(), threads_max.trim().parse::<u64>().ok()) {
        (Some(a), Some(b)) => a.min(b),
        (a, b) => a.or(b)?,
    };
    Some(Observation { available: max.saturating_sub(running), capacity: max })
}

/// The filesystem numbers of statvfs: (bytes available to unprivileged
/// users, bytes total, free inodes, inodes total).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FsStats {
    /// `f_bavail * f_frsize`.
    pub available_bytes: u64,
    /// `f_blocks * f_frsize`.
    pub capacity_bytes: u64,
    /// `f_ffree`.
    pub inodes_free: u64,
    /// `f_files`.
    pub inodes: u64,
}

/// statvfs of `path` (None if it fails).
pub fn fs_stats(path: &Path) -> Option<FsStats> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: c is NUL-terminated; statvfs fills the zeroed struct.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    let frsize = st.f_frsize as u64;
    Some(FsStats {
        available_bytes: st.f_bavail as u64 * frsize,
        capacity_bytes: st.f_blocks as u64 * frsize,
        inodes_free: st.f_ffree as u64,
        inodes: st.f_files as u64,
    })
}

/// Adds the two signals of a filesystem.
pub fn fs_observations(obs: &mut Observations, bytes: Signal, inodes: Signal, fs: FsStats) {
    obs.insert(bytes, Observation { available: fs.available_bytes, capacity: fs.capacity_bytes });
    if fs.inodes > 0 {
        obs.insert(inodes, Observation { available: fs.inodes_free, capacity: fs.inodes });
    }
}

/// Observes every signal on this machine; `nodefs` is the data dir,
/// `imagefs` the runtime's root.
pub fn observe(nodefs: &Path, imagefs: &Path) -> Observations {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let mut obs = Observations::new();
    let meminfo = read("/proc/meminfo").unwrap_or_default();
    let usage = read("/sys/fs/cgroup/memory/memory.usage_in_bytes");
    let stat = read("/sys/fs/cgroup/memory/memory.stat");
    if let Some(m) = memory_observation(&meminfo, usage.as_deref(), stat.as_deref()) {
        obs.insert(Signal::MemoryAvailable, m);
    }
    if let Some(fs) = fs_stats(nodefs) {
        fs_observations(&mut obs, Signal::NodeFsAvailable, Signal::NodeFsInodesFree, fs);
    }
    if let Some(fs) = fs_stats(imagefs).or_else(|| fs_stats(nodefs)) {
        fs_observations(&mut obs, Signal::ImageFsAvailable, Signal::ImageFsInodesFree, fs);
    }
    // SAFETY: sysinfo fills the zeroed struct.
    let mut si: libc::sysinfo = unsafe { std::mem::zeroed() };
    let running = if unsafe { libc::sysinfo(&mut si) } == 0 { si.procs as u64 } else { 0 };
    let pid_max = read("/proc/sys/kernel/pid_max").unwrap_or_default();
    let threads_max = read("/proc/sys/kernel/threads-max").unwrap_or_default();
    if let Some(p) = pid_observation(&pid_max, &threads_max, running) {
        obs.insert(Signal::PidAvailable, p);
    }
    obs
}

/// The thresholds crossed by the observations (upstream's thresholdsMet):
/// available < threshold, or with `enforce_min_reclaim` available <
/// threshold + minimum reclaim. A signal not observed crosses nothing.
pub fn thresholds_met(thresholds: &[Threshold], obs: &Observations, enforce_min_reclaim: bool) -> Vec<Threshold> {
    thresholds
        .iter()
        .filter(|t| {
            obs.get(&t.signal).is_some_and(|o| {
                let q = if enforce_min_reclaim { t.quantity_with_min_reclaim(o.capacity) } else { t.quantity(o.capacity) };
                o.available < q
            })
        })
        .copied()
        .collect()
}

/// Which pressure conditions are True (read by the status loop and by admission).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pressure {
    /// MemoryPressure.
    pub memory: bool,
    /// DiskPressure.
    pub disk: bool,
    /// PIDPressure.
    pub pid: bool,
}

impl Pressure {
    /// The True conditions' types, in the order MemoryPressure,
    /// DiskPressure, PIDPressure.
    pub fn conditions(&self) -> Vec<&'static str> {
        [(self.memory, "MemoryPressure"), (self.disk, "DiskPressure"), (self.pid, "PIDPressure")]
            .into_iter()
            .filter_map(|(on, c)| on.then_some(c))
            .collect()
    }
}

/// The manager's current [`Pressure`], shared with the status loop; as an
/// [`AdmitHandler`] it is upstream's eviction admission ([`admit_under_pressure`]).
#[derive(Clone, Debug, Default)]
pub struct PressureHandle(Arc<Mutex<Pressure>>);

impl PressureHandle {
    /// The pressure now.
    pub fn get(&self) -> Pressure {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Publishes the pressure (the manager does, every interval).
    pub fn set(&self, p: Pressure) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = p;
    }
}

impl AdmitHandler for PressureHandle {
    fn admit(&self, pod: &Pod) -> Result<(), Rejection> {
        admit_under_pressure(&self.get(), pod)
    }
}

/// Upstream's eviction manager `Admit`: without pressure, and for critical
/// pods, yes; under MemoryPressure alone, yes for pods that are not
/// BestEffort and for BestEffort pods tolerating
/// `node.kubernetes.io/memory-pressure:NoSchedule`; otherwise a refusal
/// with reason `Evicted` and message `The node had condition:
/// [MemoryPressure DiskPressure]. ` (Go's `%v` of the condition list).
pub fn admit_under_pressure(p: &Pressure, pod: &Pod) -> Result<(), Rejection> {
    let conditions = p.conditions();
    if conditions.is_empty() || is_critical(pod) {
        return Ok(());
    }
    if conditions == ["MemoryPressure"] {
        if crate::pods::resources::qos_class(pod) != "BestEffort" {
            return Ok(());
        }
        let tolerations = pod.spec.as_ref().and_then(|s| s.tolerations.as_deref()).unwrap_or_default();
        if tolerations.iter().any(|t| tolerates(t, MEMORY_PRESSURE_TAINT, "NoSchedule")) {
            return Ok(());
        }
    }
    Err(Rejection { reason: "Evicted".into(), message: format!("The node had condition: [{}]. ", conditions.join(" ")) })
}

/// The taint the node-lifecycle controller puts on a node under memory pressure.
pub const MEMORY_PRESSURE_TAINT: &str = "node.kubernetes.io/memory-pressure";

/// Upstream's Toleration.ToleratesTaint for a taint with an empty value.
fn tolerates(t: &Toleration, key: &str, effect: &str) -> bool {
    let effect_ok = t.effect.as_deref().is_none_or(|e| e.is_empty() || e == effect);
    let key_ok = t.key.as_deref().is_none_or(|k| k.is_empty() || k == key);
    let op_ok = match t.operator.as_deref().unwrap_or("") {
        "" | "Equal" => t.value.as_deref().unwrap_or("").is_empty(),
        "Exists" => true,
        _ => false,
    };
    effect_ok && key_ok && op_ok
}

/// What one interval decided ([`EvictionState::update`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// The node conditions to report.
    pub pressure: Pressure,
    /// The thresholds whose grace period is over: they drive eviction.
    pub reclaim: Vec<Threshold>,
}

/// What the manager remembers between intervals (upstream's
/// thresholdsFirstObservedAt, nodeConditionsLastObservedAt, thresholdsMet).
#[derive(Debug, Default)]
pub struct EvictionState {
    first_observed: Vec<(Threshold, Instant)>,
    condition_last_observed: BTreeMap<&'static str, Instant>,
    met: Vec<Threshold>,
}

impl EvictionState {
    /// One interval of upstream's synchronize, without the I/O: the
    /// thresholds crossed now plus the ones that drove eviction last time
    /// and are not resolved with their minimum reclaim; each remembers when
    /// it was first crossed. Their conditions are reported until none was
    /// crossed for `transition`; the ones crossed for their grace period
    /// are returned to reclaim.
    pub fn update(&mut self, thresholds: &[Threshold], obs: &Observations, transition: Duration, now: Instant) -> Decision {
        let mut crossed = thresholds_met(thresholds, obs, false);
        for t in thresholds_met(&self.met, obs, true) {
            if !crossed.contains(&t) {
                crossed.push(t);
            }
        }
        let first_observed: Vec<(Threshold, Instant)> = crossed
            .iter()
            .map(|t| (*t, self.first_observed.iter().find(|(o, _)| o == t).map_or(now, |(_, at)| *at)))
            .collect();
        for t in &crossed {
            self.condition_last_observed.insert(t.signal.condition(), now);
        }
        self.condition_last_observed.retain(|_, at| now.duration_since(*at) < transition || *at == now);
        let on = |c: &str| self.condition_last_observed.contains_key(c);
        let pressure = Pressure { memory: on("MemoryPressure"), disk: on("DiskPressure"), pid: on("PIDPressure") };
        let reclaim: Vec<Threshold> = first_observed
            .iter()
            .filter(|(t, at)| now.duration_since(*at) >= t.grace_period)
            .map(|(t, _)| *t)
            .collect();
        self.first_observed = first_observed;
        self.met = reclaim.clone();
        Decision { pressure, reclaim }
    }
}

/// The grace period, in seconds, a pod evicted for `t` is stopped with
/// (upstream's gracePeriodOverride): 1 s for a hard threshold; for a soft
/// one `--eviction-max-pod-grace-period`, or the pod's own
/// terminationGracePeriodSeconds (default 30) if smaller; never negative.
pub fn eviction_grace_period(t: &Threshold, max_pod_grace_period: i64, pod: &Pod) -> i64 {
    if t.is_hard() {
        return IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS;
    }
    let own = pod.spec.as_ref().and_then(|s| s.termination_grace_period_seconds).unwrap_or(30);
    max_pod_grace_period.min(own).max(0)
}

/// A pod's usage as the runtime reports it (sums over its containers).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodUsage {
    /// Working set bytes per container name.
    pub memory: BTreeMap<String, u64>,
    /// Writable layer bytes per container name.
    pub disk: BTreeMap<String, u64>,
}

fn sum_requests(pod: &Pod, resource: &str) -> u64 {
    let Some(spec) = &pod.spec else { return 0 };
    spec.containers
        .iter()
        .filter_map(|c| c.resources.as_ref()?.requests.as_ref()?.get(resource))
        .filter_map(|q| parse_quantity(&q.0))
        .map(|v| v.ceil() as u64)
        .sum()
}

fn container_request(pod: &Pod, container: &str, resource: &str) -> u64 {
    let Some(spec) = &pod.spec else { return 0 };
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .find(|c| c.name == container)
        .and_then(|c| c.resources.as_ref()?.requests.as_ref()?.get(resource))
        .and_then(|q| parse_quantity(&q.0))
        .map_or(0, |v| v.ceil() as u64)
}

fn priority(pod: &Pod) -> i32 {
    pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
}

/// Orders pods for eviction of `signal`'s resource, first to evict first
/// (upstream's rankMemoryPressure / rankDiskPressure / rankPIDPressure):
/// pods whose usage exceeds their requests, then lower priority, then
/// larger usage above requests. A pod without usage numbers counts as
/// using nothing.
pub fn rank(pods: &mut [(Pod, PodUsage)], signal: Signal) {
    let key = |(pod, usage): &(Pod, PodUsage)| -> (bool, i32, i64) {
        let (used, request) = match signal.resource() {
            "memory" => (usage.memory.values().sum::<u64>(), sum_requests(pod, "memory")),
            "ephemeral-storage" | "inodes" => (usage.disk.values().sum(), sum_requests(pod, "ephemeral-storage")),
            _ => return (false, priority(pod), 0),
        };
        (used > request, priority(pod), used as i64 - request as i64)
    };
    // exceeds (true first), priority ascending, usage-above-requests descending.
    pods.sort_by(|a, b| {
        let (ea, pa, ua) = key(a);
        let (eb, pb, ub) = key(b);
        eb.cmp(&ea).then(pa.cmp(&pb)).then(ub.cmp(&ua))
    });
}

/// Upstream's IsCriticalPod: static, mirror, or priority ≥ 2000000000.
pub fn is_critical(pod: &Pod) -> bool {
    let static_or_mirror = pod.metadata.annotations.as_ref().is_some_and(|a| {
        a.contains_key("kubernetes.io/config.mirror")
            || a.get("kubernetes.io/config.source").is_some_and(|s| s != "api")
    });
    static_or_mirror || priority(pod) >= SYSTEM_CRITICAL_PRIORITY
}

/// Upstream's eviction message: `The node was low on resource: memory.
/// Threshold quantity: 100Mi, available: 50Mi. ` plus, for memory and
/// ephemeral storage, one `Container c was using X, request is Y, has
/// larger consumption of memory. ` per container above its request.
pub fn eviction_message(t: &Threshold, obs: &Observations, pod: &Pod, usage: &PodUsage) -> String {
    let resource = t.signal.resource();
    let mut msg = format!("The node was low on resource: {resource}. ");
    if let Some(o) = obs.get(&t.signal) {
        let q = binary_quantity(t.quantity(o.capacity)).0;
        let a = binary_quantity(o.available).0;
        msg += &format!("Threshold quantity: {q}, available: {a}. ");
    }
    let per_container = match resource {
        "memory" => &usage.memory,
        "ephemeral-storage" => &usage.disk,
        _ => return msg,
    };
    let Some(spec) = &pod.spec else { return msg };
    for c in spec.containers.iter().chain(spec.init_containers.iter().flatten()) {
        let Some(used) = per_container.get(&c.name) else { continue };
        let request = container_request(pod, &c.name, resource);
        if *used > request {
            let used = binary_quantity(*used).0;
            let request = binary_quantity(request).0;
            msg += &format!(
                "Container {} was using {used}, request is {request}, has larger consumption of {resource}. ",
                c.name
            );
        }
    }
    msg
}

/// The JSON merge patch of `pods/status` that fails an evicted pod.
pub fn eviction_status_patch(message: &str, now: &str) -> serde_json::Value {
    serde_json::json!({"status": {
        "phase": "Failed",
        "reason": "Evicted",
        "message": message,
        "conditions": [{
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "TerminationByKubelet",
            "message": message,
            "lastTransitionTime": now,
        }],
    }})
}

/// What the manager runs with.
pub struct EvictionManager {
    /// The kubelet's API client.
    pub client: kube::Client,
    /// The runtime (for per-container usage).
    pub cri: CriClient,
    /// Records `Evicted` and `EvictionThresholdMet` events.
    pub recorder: rkube_client::events::Recorder,
    /// This node.
    pub node_name: String,
    /// The Node, for its `EvictionThresholdMet` events.
    pub node_ref: ObjectReference,
    /// nodefs: the data dir.
    pub nodefs: PathBuf,
    /// imagefs: the runtime's root.
    pub imagefs: PathBuf,
    /// Thresholds, transition period and max pod grace period.
    pub config: EvictionConfig,
    /// Where the pressure is published.
    pub pressure: PressureHandle,
    /// Node-level disk reclaim (unused images) before evicting on disk pressure.
    pub image_gc: Option<super::image_gc::ImageGc>,
    /// Where the grace period of an evicted pod is handed to its worker.
    pub grace_overrides: GraceOverrides,
}

impl EvictionManager {
    /// Observes and evicts every [`MONITORING_INTERVAL`] until stopped.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        let mut state = EvictionState::default();
        loop {
            self.synchronize(&mut state).await;
            tokio::select! {
                _ = tokio::time::sleep(MONITORING_INTERVAL) => {}
                _ = stop.wait_for(|s| *s) => return,
            }
        }
    }

    async fn synchronize(&self, state: &mut EvictionState) {
        if self.config.thresholds.is_empty() {
            return;
        }
        let obs = observe(&self.nodefs, &self.imagefs);
        let decision = state.update(&self.config.thresholds, &obs, self.config.pressure_transition_period, Instant::now());
        if decision.pressure != self.pressure.get() {
            tracing::info!(component = COMPONENT, pressure = ?decision.pressure, "eviction manager: node pressure changed");
        }
        self.pressure.set(decision.pressure);
        // Memory first, as upstream's byEvictionPriority.
        let met = decision.reclaim;
        let Some(t) = met.iter().min_by_key(|t| t.signal != Signal::MemoryAvailable).copied() else { return };
        tracing::warn!(component = COMPONENT, signal = t.signal.name(), "eviction manager: attempting to reclaim");
        self.recorder.event_on(
            self.node_ref.clone(),
            rkube_client::events::WARNING,
            "EvictionThresholdMet",
            format!("Attempting to reclaim {}", t.signal.resource()),
        );
        let mut obs = obs;
        // Disk pressure: first reclaim node-level resources (unused images),
        // and evict only if some threshold is still met with its minimum
        // reclaim, as upstream's reclaimNodeLevelResources.
        if t.signal.condition() == "DiskPressure" {
            if let Some(gc) = &self.image_gc {
                match gc.free_space(u64::MAX).await {
                    Ok(freed) => {
                        tracing::info!(component = COMPONENT, freed, "eviction manager: reclaimed unused images")
                    }
                    Err(e) => tracing::warn!(component = COMPONENT, "eviction manager: cannot reclaim images: {e}"),
                }
                obs = observe(&self.nodefs, &self.imagefs);
                if thresholds_met(&self.config.thresholds, &obs, true).is_empty() {
                    tracing::info!(
                        component = COMPONENT,
                        signal = t.signal.name(),
                        "eviction manager: able to reduce resource pressure without evicting pods"
                    );
                    return;
                }
            }
        }
        if let Err(e) = self.evict_one(&t, &obs).await {
            tracing::warn!(component = COMPONENT, "eviction manager: {e}");
        }
    }

    async fn usage(&self) -> BTreeMap<String, PodUsage> {
        let mut out: BTreeMap<String, PodUsage> = BTreeMap::new();
        for s in self.cri.list_container_stats(None).await.unwrap_or_default() {
            let Some(attrs) = &s.attributes else { continue };
            let Some(uid) = attrs.labels.get(crate::pods::labels::POD_UID) else { continue };
            let name = attrs.metadata.as_ref().map(|m| m.name.clone()).unwrap_or_default();
            let u = out.entry(uid.clone()).or_default();
            if let Some(ws) = s.memory.as_ref().and_then(|m| m.working_set_bytes.as_ref()) {
                u.memory.insert(name.clone(), ws.value);
            }
            if let Some(used) = s.writable_layer.as_ref().and_then(|w| w.used_bytes.as_ref()) {
                u.disk.insert(name, used.value);
            }
        }
        out
    }

    async fn evict_one(&self, t: &Threshold, obs: &Observations) -> Result<(), String> {
        let pods: Api<Pod> = Api::all(self.client.clone());
        let lp = ListParams::default().fields(&format!("spec.nodeName={}", self.node_name));
        let list = pods.list(&lp).await.map_err(|e| format!("cannot list the node's pods: {e}"))?;
        let usage = self.usage().await;
        // Only pods the node admitted and started are candidates (upstream's
        // activePods): a pod with a sandbox in the runtime.
        let sandboxes = self.cri.list_pod_sandbox(None).await.map_err(|e| format!("cannot list pod sandboxes: {e}"))?;
        let started: std::collections::BTreeSet<String> =
            sandboxes.into_iter().filter_map(|s| s.metadata.map(|m| m.uid)).collect();
        let mut active: Vec<(Pod, PodUsage)> = list
            .items
            .into_iter()
            .filter(|p| p.metadata.uid.as_ref().is_some_and(|u| started.contains(u)))
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter(|p| !matches!(p.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded" | "Failed")))
            .map(|p| {
                let u = usage.get(p.metadata.uid.as_deref().unwrap_or_default()).cloned().unwrap_or_default();
                (p, u)
            })
            .collect();
        if active.is_empty() {
            return Err("eviction manager: no pods to evict".into());
        }
        rank(&mut active, t.signal);
        // Upstream walks the ranking and evicts the first pod it may.
        for (pod, usage) in &active {
            let name = pod.metadata.name.clone().unwrap_or_default();
            if is_critical(pod) {
                tracing::warn!(component = COMPONENT, pod = %name, "cannot evict a critical pod");
                continue;
            }
            let ns = pod.metadata.namespace.clone().unwrap_or_default();
            let message = eviction_message(t, obs, pod, usage);
            let now = jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
            let api: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
            let patch = eviction_status_patch(&message, &now);
            // The worker stops the failed pod with this grace period.
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            let grace = eviction_grace_period(t, self.config.max_pod_grace_period, pod);
            self.grace_overrides.set(&uid, grace);
            if let Err(e) = api.patch_status(&name, &PatchParams::default(), &Patch::Strategic(&patch)).await {
                self.grace_overrides.remove(&uid);
                return Err(format!("cannot fail pod {ns}/{name}: {e}"));
            }
            self.recorder.event(pod, rkube_client::events::WARNING, "Evicted", message.clone());
            let pod = format!("{ns}/{name}");
            tracing::info!(component = COMPONENT, %pod, %message, grace, "eviction manager: pod is evicted successfully");
            return Ok(());
        }
        Err("eviction manager: unable to evict any pods from the node".into())
    }
}

#[cfg(test)]
#[path = "eviction_tests.rs"]
mod tests;
