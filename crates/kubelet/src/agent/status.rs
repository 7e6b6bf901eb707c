//! The Node status the agent computes (pure functions): capacity and
//! allocatable as upstream's kubelet reports them, the four conditions with
//! upstream's reasons and messages, and the images list.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ContainerImage, NodeCondition};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::machine::MachineInfo;
use crate::cri::v1 as cri;

/// Upstream's default `maxPods`.
pub const MAX_PODS: u64 = 110;
/// Upstream reports at most this many images (`nodeStatusMaxImages`).
pub const MAX_IMAGES: usize = 50;

/// Resources set aside by `--kube-reserved` or `--system-reserved`
/// (`cpu=100m,memory=256Mi,ephemeral-storage=1Gi,pid=100`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reserved {
    /// CPU in millicores.
    pub cpu_millis: u64,
    /// Memory in bytes.
    pub memory_bytes: u64,
    /// Ephemeral storage in bytes.
    pub ephemeral_storage_bytes: u64,
}

impl Reserved {
    /// Parses `name=quantity` pairs separated by commas; the empty string
    /// reserves nothing. Errors name the pair at fault.
    pub fn parse(s: &str) -> Result<Reserved, String> {
        let mut r = Reserved::default();
        for pair in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').ok_or_else(|| format!("missing value in {pair:?}"))?;
            let q = parse_quantity(value.trim()).ok_or_else(|| format!("invalid quantity {value:?} for {name}"))?;
            match name.trim() {
                "cpu" => r.cpu_millis = (q * 1000.0).ceil() as u64,
                "memory" => r.memory_bytes = q.ceil() as u64,
                "ephemeral-storage" => r.ephemeral_storage_bytes = q.ceil() as u64,
                "pid" => {}
                other => return Err(format!("cannot reserve {other:?} resource")),
            }
        }
        Ok(r)
    }

    fn plus(self, o: Reserved) -> Reserved {
        Reserved {
            cpu_millis: self.cpu_millis + o.cpu_millis,
            memory_bytes: self.memory_bytes + o.memory_bytes,
            ephemeral_storage_bytes: self.ephemeral_storage_bytes + o.ephemeral_storage_bytes,
        }
    }
}

/// The value of a Kubernetes quantity (`100m`, `1.5`, `256Mi`, `1G`, `1e3`);
/// `None` if it does not parse or is negative.
pub fn parse_quantity(s: &str) -> Option<f64> {
    const SUFFIXES: [(&str, f64); 13] = [
        ("Ki", 1024.0),
        ("Mi", 1048576.0),
        ("Gi", 1073741824.0),
        ("Ti", 1099511627776.0),
        ("Pi", 1125899906842624.0),
        ("Ei", 1152921504606846976.0),
        ("m", 1e-3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
        ("E", 1e18),
    ];
    let (number, factor) =
        SUFFIXES.iter().find_map(|(suf, f)| s.strip_suffix(suf).map(|n| (n, *f))).unwrap_or((s, 1.0));
    if number.is_empty() || number.starts_with('+') && number.len() == 1 {
        return None;
    }
    let v: f64 = number.parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v * factor)
}

/// A byte count as a canonical binary-SI quantity (`16314144Ki`, `1Gi`, `12345`).
pub fn binary_quantity(bytes: u64) -> Quantity {
    const UNITS: [&str; 6] = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let (mut v, mut unit) = (bytes, "");
    for u in UNITS {
        if v == 0 || v % 1024 != 0 {
            break;
        }
        v /= 1024;
        unit = u;
    }
    Quantity(format!("{v}{unit}"))
}

fn cpu_quantity(millis: u64) -> Quantity {
    Quantity(if millis % 1000 == 0 { (millis / 1000).to_string() } else { format!("{millis}m") })
}

/// The Node's `status.capacity`: cpu, memory, pods, ephemeral-storage and
/// the two hugepage sizes (0: rkube reserves no huge pages).
pub fn capacity(m: &MachineInfo) -> BTreeMap<String, Quantity> {
    BTreeMap::from([
        ("cpu".into(), Quantity(m.cpus.to_string())),
        ("memory".into(), binary_quantity(m.memory_bytes)),
        ("pods".into(), Quantity(MAX_PODS.to_string())),
        ("ephemeral-storage".into(), binary_quantity(m.ephemeral_storage_bytes)),
        ("hugepages-1Gi".into(), Quantity("0".into())),
        ("hugepages-2Mi".into(), Quantity("0".into())),
    ])
}

/// The Node's `status.allocatable`: capacity minus kube-reserved, minus
/// system-reserved, minus what the hard eviction thresholds set aside
/// (`eviction_reserved`: bytes of memory for `memory.available`, bytes of
/// ephemeral storage for `nodefs.available`; see
/// `EvictionConfig::hard_eviction_reservation`), never below zero —
/// upstream's node allocatable.
pub fn allocatable(
    m: &MachineInfo,
    kube: Reserved,
    system: Reserved,
    eviction_reserved: (u64, u64),
) -> BTreeMap<String, Quantity> {
    let r = kube.plus(system);
    let mut a = capacity(m);
    a.insert("cpu".into(), cpu_quantity((m.cpus * 1000).saturating_sub(r.cpu_millis)));
    let (memory_threshold, nodefs_threshold) = eviction_reserved;
    let memory = m.memory_bytes.saturating_sub(r.memory_bytes).saturating_sub(memory_threshold);
    a.insert("memory".into(), binary_quantity(memory));
    let storage = m.ephemeral_storage_bytes.saturating_sub(r.ephemeral_storage_bytes).saturating_sub(nodefs_threshold);
    a.insert("ephemeral-storage".into(), binary_quantity(storage));
    a
}

/// What the runtime said in its last CRI Status (`None`: the call failed).
#[derive(Clone, Debug, Default)]
pub struct RuntimeHealth {
    /// The runtime's conditions, if it answered.
    pub conditions: Option<Vec<cri::RuntimeCondition>>,
}

fn describe(c: Option<&cri::RuntimeCondition>) -> String {
    match c {
        // kubecontainer.RuntimeCondition's String().
        Some(c) => format!("{}={} reason:{} message:{}", c.r#type, c.status, c.reason, c.message),
        None => "<nil>".into(),
    }
}

/// The errors that keep the node NotReady, as upstream's runtime state
/// reports them: runtime down, runtime not ready, network not ready.
pub fn readiness_errors(h: &RuntimeHealth) -> Vec<String> {
    let Some(conds) = &h.conditions else { return vec!["container runtime is down".into()] };
    let find = |t: &str| conds.iter().find(|c| c.r#type == t);
    let mut errs = Vec::new();
    let runtime = find("RuntimeReady");
    if !runtime.is_some_and(|c| c.status) {
        errs.push(format!("container runtime not ready: {}", describe(runtime)));
    }
    let network = find("NetworkReady");
    if !network.is_some_and(|c| c.status) {
        errs.push(format!("container runtime network not ready: {}", describe(network)));
    }
    errs
}

/// One condition type with its upstream reasons and messages for False
/// (healthy) and True.
struct Kind {
    type_: &'static str,
    ok_reason: &'static str,
    ok_message: &'static str,
    ok_event: &'static str,
    bad_reason: &'static str,
    bad_message: &'static str,
    bad_event: &'static str,
}

const PRESSURES: [Kind; 3] = [
    Kind {
        type_: "MemoryPressure",
        ok_reason: "KubeletHasSufficientMemory",
        ok_message: "kubelet has sufficient memory available",
        ok_event: "NodeHasSufficientMemory",
        bad_reason: "KubeletHasInsufficientMemory",
        bad_message: "kubelet has insufficient memory available",
        bad_event: "NodeHasInsufficientMemory",
    },
    Kind {
        type_: "DiskPressure",
        ok_reason: "KubeletHasNoDiskPressure",
        ok_message: "kubelet has no disk pressure",
        ok_event: "NodeHasNoDiskPressure",
        bad_reason: "KubeletHasDiskPressure",
        bad_message: "kubelet has disk pressure",
        bad_event: "NodeHasDiskPressure",
    },
    Kind {
        type_: "PIDPressure",
        ok_reason: "KubeletHasSufficientPID",
        ok_message: "kubelet has sufficient PID available",
        ok_event: "NodeHasSufficientPID",
        bad_reason: "KubeletHasInsufficientPID",
        bad_message: "kubelet has insufficient PID available",
        bad_event: "NodeHasInsufficientPID",
    },
];

/// The new conditions (MemoryPressure, DiskPressure, PIDPressure, Ready, in
/// upstream's order) given the previous ones, plus the node events to
/// record for each status change (`NodeHasSufficientMemory`, `NodeReady`,
/// `NodeNotReady`, …) as upstream records them. Every heartbeat is `now`; a transition time only
/// moves when the status changes. The pressure conditions are the eviction manager's observations.
pub fn conditions(
    previous: &[NodeCondition],
    health: &RuntimeHealth,
    pressure: &super::eviction::Pressure,
    now: Time,
) -> (Vec<NodeCondition>, Vec<String>) {
    node_conditions(previous, health, pressure, None, now)
}

/// [`conditions`] with the node shutdown manager's error (`node is
/// shutting down`, from [`super::shutdown::ShutdownState::error`]) joined
/// after the runtime's in the Ready condition, as upstream's ReadyCondition
/// joins `ShutdownStatus`.
pub fn node_conditions(
    previous: &[NodeCondition],
    health: &RuntimeHealth,
    pressure: &super::eviction::Pressure,
    shutdown_error: Option<&str>,
    now: Time,
) -> (Vec<NodeCondition>, Vec<String>) {
    let mut out = Vec::new();
    let mut events = Vec::new();
    // A new pressure condition starts Unknown, so its first status is an
    // event; a new Ready condition is not (upstream records NodeReady and
    // NodeNotReady only on a change of an existing condition).
    let mut push = |type_: &str, status: &str, reason: &str, message: String, event: &str| {
        let prev = previous.iter().find(|c| c.type_ == type_);
        let changed = prev.is_none_or(|p| p.status != status);
        let record = if type_ == "Ready" { prev.is_some_and(|p| p.status != status) } else { changed };
        let transition = match prev {
            Some(p) if !changed => p.last_transition_time.clone(),
            _ => Some(now.clone()),
        };
        if record {
            events.push(event.to_string());
        }
        out.push(NodeCondition {
            type_: type_.into(),
            status: status.into(),
            reason: Some(reason.into()),
            message: Some(message),
            last_heartbeat_time: Some(now.clone()),
            last_transition_time: transition,
        });
    };
    for (k, on) in PRESSURES.iter().zip([pressure.memory, pressure.disk, pressure.pid]) {
        if on {
            push(k.type_, "True", k.bad_reason, k.bad_message.into(), k.bad_event);
        } else {
            push(k.type_, "False", k.ok_reason, k.ok_message.into(), k.ok_event);
        }
    }
    let mut errs = readiness_errors(health);
    errs.extend(shutdown_error.map(String::from));
    if errs.is_empty() {
        push("Ready", "True", "KubeletReady", "kubelet is posting ready status".into(), "NodeReady");
    } else {
        // utilerrors.NewAggregate's message: one error alone, several in brackets.
        let msg = if errs.len() == 1 { errs[0].clone() } else { format!("[{}]", errs.join(", ")) };
        push("Ready", "False", "KubeletNotReady", msg, "NodeNotReady");
    }
    (out, events)
}

/// `status.images` from CRI ListImages: every image's tags and digests as
/// names, with its size, largest first, at most [`MAX_IMAGES`] — as upstream.
pub fn images(list: &[cri::Image]) -> Vec<ContainerImage> {
    let mut sorted: Vec<&cri::Image> = list.iter().collect();
    sorted.sort_by_key(|i| std::cmp::Reverse(i.size));
    sorted
        .into_iter()
        .filter(|i| !i.repo_tags.is_empty() || !i.repo_digests.is_empty())
        .take(MAX_IMAGES)
        .map(|i| ContainerImage {
            names: Some(i.repo_digests.iter().chain(i.repo_tags.iter()).cloned().collect()),
            size_bytes: Some(i.size as i64),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine() -> MachineInfo {
        MachineInfo {
            cpus: 4,
            memory_bytes: 16314144 * 1024,
            ephemeral_storage_bytes: 100 * 1024 * 1024 * 1024,
            ..Default::default()
        }
    }

    #[test]
    fn capacity_and_allocatable() {
        let m = machine();
        let cap = capacity(&m);
        assert_eq!(cap["cpu"].0, "4");
        assert_eq!(cap["memory"].0, "16314144Ki");
        assert_eq!(cap["pods"].0, "110");
        assert_eq!(cap["ephemeral-storage"].0, "100Gi");
        assert_eq!(cap["hugepages-2Mi"].0, "0");
        // Upstream's default hard thresholds: memory.available<100Mi, nodefs.available<10%.
        let defaults = crate::agent::eviction::EvictionConfig::default();
        let reserved = defaults.hard_eviction_reservation(m.memory_bytes, m.ephemeral_storage_bytes);
        let a = allocatable(&m, Reserved::default(), Reserved::default(), reserved);
        assert_eq!(a["cpu"].0, "4");
        // 100Mi for the hard eviction threshold.
        assert_eq!(a["memory"].0, format!("{}Ki", 16314144 - 102400));
        // 10% of nodefs.
        assert_eq!(a["ephemeral-storage"].0, "90Gi");
        let kube = Reserved::parse("cpu=100m,memory=256Mi").unwrap();
        let system = Reserved::parse("cpu=0.5, memory=1Gi, ephemeral-storage=10Gi").unwrap();
        let a = allocatable(&m, kube, system, reserved);
        assert_eq!(a["cpu"].0, "3400m");
        assert_eq!(a["memory"].0, format!("{}Ki", 16314144 - 102400 - 262144 - 1048576));
        assert_eq!(a["ephemeral-storage"].0, "80Gi");
        assert_eq!(a["pods"].0, "110");
        // More reserved than there is: zero, not an underflow.
        let huge = Reserved::parse("cpu=64,memory=1Ti").unwrap();
        let a = allocatable(&m, huge, Reserved::default(), reserved);
        assert_eq!((a["cpu"].0.as_str(), a["memory"].0.as_str()), ("0", "0"));
        // The configured hard thresholds are what is set aside, not the defaults.
        let custom = crate::agent::eviction::EvictionConfig {
            thresholds: crate::agent::eviction::parse_thresholds("memory.available<1Gi").unwrap(),
            ..Default::default()
        };
        let reserved = custom.hard_eviction_reservation(m.memory_bytes, m.ephemeral_storage_bytes);
        let a = allocatable(&m, Reserved::default(), Reserved::default(), reserved);
        assert_eq!(a["memory"].0, format!("{}Ki", 16314144 - 1048576));
        assert_eq!(a["ephemeral-storage"].0, "100Gi");
    }

    #[test]
    fn reserved_flags() {
        assert_eq!(Reserved::parse("").unwrap(), Reserved::default());
        assert_eq!(Reserved::parse("memory=1G").unwrap().memory_bytes, 1_000_000_000);
        assert!(Reserved::parse("cpu").unwrap_err().contains("missing value"));
        assert!(Reserved::parse("cpu=abc").is_err());
        assert!(Reserved::parse("gpu=1").is_err());
        assert_eq!(binary_quantity(1536 * 1024).0, "1536Ki");
        assert_eq!(binary_quantity(1023).0, "1023");
        assert_eq!(binary_quantity(0).0, "0");
    }

    fn cond(t: &str, status: bool, reason: &str, message: &str) -> cri::RuntimeCondition {
        cri::RuntimeCondition { r#type: t.into(), status, reason: reason.into(), message: message.into() }
    }

    #[test]
    fn ready_follows_the_runtime_and_its_network() {
        let t0 = Time(jiff::Timestamp::from_second(1_000).unwrap());
        let t1 = Time(jiff::Timestamp::from_second(2_000).unwrap());
        let not_ready = RuntimeHealth {
            conditions: Some(vec![
                cond("RuntimeReady", true, "", ""),
                cond(
                    "NetworkReady",
                    false,
                    "NetworkPluginNotReady",
                    "Network plugin returns error: cni plugin not initialized",
                ),
            ]),
        };
        let (c, events) = conditions(&[], &not_ready, &Default::default(), t0.clone());
        let types: Vec<&str> = c.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]);
        assert_eq!(events, ["NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID"]);
        assert_eq!(c[0].reason.as_deref(), Some("KubeletHasSufficientMemory"));
        assert_eq!(c[0].message.as_deref(), Some("kubelet has sufficient memory available"));
        assert_eq!(c[3].status, "False");
        assert_eq!(c[3].reason.as_deref(), Some("KubeletNotReady"));
        assert_eq!(
            c[3].message.as_deref(),
            Some(
                "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady \
                 message:Network plugin returns error: cni plugin not initialized"
            )
        );
        let ready = RuntimeHealth {
            conditions: Some(vec![cond("RuntimeReady", true, "", ""), cond("NetworkReady", true, "", "")]),
        };
        let (c2, events) = conditions(&c, &ready, &Default::default(), t1.clone());
        assert_eq!(events, ["NodeReady"]);
        assert_eq!(c2[3].status, "True");
        assert_eq!(c2[3].reason.as_deref(), Some("KubeletReady"));
        assert_eq!(c2[3].message.as_deref(), Some("kubelet is posting ready status"));
        assert_eq!(c2[3].last_transition_time, Some(t1.clone()));
        // Unchanged pressure conditions keep their transition time, heartbeat moves.
        assert_eq!(c2[0].last_transition_time, Some(t0));
        assert_eq!(c2[0].last_heartbeat_time, Some(t1));
        let later = c2[0].last_heartbeat_time.clone().unwrap();
        let (c3, events) = conditions(&c2, &RuntimeHealth::default(), &Default::default(), later);
        assert_eq!(events, ["NodeNotReady"]);
        assert_eq!(c3[3].message.as_deref(), Some("container runtime is down"));
        let both = RuntimeHealth { conditions: Some(vec![]) };
        let (c4, _) = conditions(&[], &both, &Default::default(), Time(jiff::Timestamp::UNIX_EPOCH));
        assert_eq!(
            c4[3].message.as_deref(),
            Some("[container runtime not ready: <nil>, container runtime network not ready: <nil>]")
        );
    }

    #[test]
    fn ready_is_false_while_the_node_shuts_down() {
        let t0 = Time(jiff::Timestamp::from_second(1_000).unwrap());
        let ready = RuntimeHealth {
            conditions: Some(vec![cond("RuntimeReady", true, "", ""), cond("NetworkReady", true, "", "")]),
        };
        let (c, _) = conditions(&[], &ready, &Default::default(), t0.clone());
        let (c2, events) = node_conditions(&c, &ready, &Default::default(), Some("node is shutting down"), t0.clone());
        assert_eq!(events, ["NodeNotReady"]);
        assert_eq!(
            (c2[3].status.as_str(), c2[3].reason.as_deref(), c2[3].message.as_deref()),
            ("False", Some("KubeletNotReady"), Some("node is shutting down"))
        );
        // Joined with the runtime's errors as utilerrors.NewAggregate does.
        let (c3, _) =
            node_conditions(&c, &RuntimeHealth::default(), &Default::default(), Some("node is shutting down"), t0);
        assert_eq!(c3[3].message.as_deref(), Some("[container runtime is down, node is shutting down]"));
    }

    #[test]
    fn pressure_conditions_follow_the_eviction_manager() {
        let t0 = Time(jiff::Timestamp::from_second(1_000).unwrap());
        let health = RuntimeHealth {
            conditions: Some(vec![cond("RuntimeReady", true, "", ""), cond("NetworkReady", true, "", "")]),
        };
        let (c, _) = conditions(&[], &health, &Default::default(), t0.clone());
        let all = super::super::eviction::Pressure { memory: true, disk: true, pid: true };
        let (c2, events) = conditions(&c, &health, &all, t0);
        assert_eq!(events, ["NodeHasInsufficientMemory", "NodeHasDiskPressure", "NodeHasInsufficientPID"]);
        let got: Vec<(&str, &str, &str)> = c2[..3]
            .iter()
            .map(|c| (c.status.as_str(), c.reason.as_deref().unwrap(), c.message.as_deref().unwrap()))
            .collect();
        assert_eq!(
            got,
            [
                ("True", "KubeletHasInsufficientMemory", "kubelet has insufficient memory available"),
                ("True", "KubeletHasDiskPressure", "kubelet has disk pressure"),
                ("True", "KubeletHasInsufficientPID", "kubelet has insufficient PID available"),
            ]
        );
        assert_eq!(c2[3].status, "True");
    }

    #[test]
    fn images_are_largest_first_and_capped() {
        let img = |tag: String, size: u64| cri::Image {
            repo_tags: vec![tag],
            repo_digests: vec![],
            size,
            ..Default::default()
        };
        let list: Vec<cri::Image> = (0..60).map(|i| img(format!("example/i:{i}"), i)).collect();
        let out = images(&list);
        assert_eq!(out.len(), 50);
        assert_eq!(out[0].names.as_deref(), Some(&["example/i:59".to_string()][..]));
        assert_eq!(out[0].size_bytes, Some(59));
    }
}
