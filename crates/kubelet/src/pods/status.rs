//! The pod's status as the kubelet reports it (upstream's
//! `generateAPIPodStatus`/`getPhase`/status manager): containerStatuses
//! and initContainerStatuses from the runtime's instances, the phase, the
//! conditions PodReadyToStartContainers, Initialized, ContainersReady and
//! Ready (with readiness gates), podIP(s), hostIP(s), startTime and
//! qosClass. Pure: the worker gathers the inputs.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting, ContainerStatus,
    HostIP, Pod, PodCondition, PodIP, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::snapshot::{Instance, PodSnapshot, State};

/// Why a container is waiting, as the worker last decided (e.g.
/// `CrashLoopBackOff`, `ErrImagePull`, `CreateContainerConfigError`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    /// The reason.
    pub reason: String,
    /// The message.
    pub message: String,
}

/// A phase the worker decided on its own (activeDeadlineSeconds, eviction).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// `Failed` (or `Succeeded`).
    pub phase: &'static str,
    /// status.reason, e.g. `DeadlineExceeded`.
    pub reason: String,
    /// status.message.
    pub message: String,
}

/// Everything the status is computed from.
pub struct Inputs<'a> {
    /// The pod as the API has it.
    pub pod: &'a Pod,
    /// What the runtime has.
    pub snapshot: &'a PodSnapshot,
    /// Waiting reasons by container name.
    pub waiting: &'a BTreeMap<String, Waiting>,
    /// Readiness per container (the prober's result; running containers only).
    pub ready: &'a (dyn Fn(&str) -> bool + Sync),
    /// Whether a container's startup probe passed (or it has none).
    pub started: &'a (dyn Fn(&str) -> bool + Sync),
    /// The node's addresses (hostIP first).
    pub host_ips: &'a [String],
    /// The worker's own verdict, if any.
    pub verdict: Option<&'a Verdict>,
    /// The pod is being deleted and everything of it has stopped: it ends
    /// terminal whatever its restartPolicy (upstream since 1.27).
    pub terminating: bool,
    /// Now.
    pub now: Time,
}

/// An init container with `restartPolicy: Always` (a sidecar).
pub fn is_sidecar(c: &Container) -> bool {
    c.restart_policy.as_deref() == Some("Always")
}

fn restart_policy(pod: &Pod) -> &str {
    pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref()).unwrap_or("Always")
}

fn time_of(ns: i64) -> Option<Time> {
    if ns <= 0 {
        return None;
    }
    jiff::Timestamp::from_nanosecond(ns as i128).ok().map(|t| Time(t.round(jiff::Unit::Second).unwrap_or(t)))
}

/// The terminated state of an exited instance; `reason` as upstream
/// (`Completed` for 0, `Error` otherwise, or the runtime's e.g. `OOMKilled`).
fn terminated(i: &Instance) -> ContainerStateTerminated {
    let reason = if !i.reason.is_empty() {
        i.reason.clone()
    } else if i.exit_code == 0 {
        "Completed".into()
    } else {
        "Error".into()
    };
    ContainerStateTerminated {
        container_id: Some(container_id(&i.id)),
        exit_code: i.exit_code,
        finished_at: time_of(i.finished_at),
        message: (!i.message.is_empty()).then(|| i.message.clone()),
        reason: Some(reason),
        signal: None,
        started_at: time_of(i.started_at),
    }
}

/// `containerd://<id>`: the containerID form of the status.
pub fn container_id(id: &str) -> String {
    format!("containerd://{id}")
}

fn state_of(i: &Instance) -> ContainerState {
    match i.state {
        State::Running => ContainerState {
            running: Some(ContainerStateRunning { started_at: time_of(i.started_at) }),
            ..Default::default()
        },
        State::Exited => ContainerState { terminated: Some(terminated(i)), ..Default::default() },
        State::Created => ContainerState {
            waiting: Some(ContainerStateWaiting { reason: Some("ContainerCreating".into()), message: None }),
            ..Default::default()
        },
        State::Unknown => ContainerState {
            waiting: Some(ContainerStateWaiting { reason: Some("ContainerStatusUnknown".into()), message: None }),
            ..Default::default()
        },
    }
}

/// One container's status: state from the newest instance, or the
/// worker's waiting reason when that instance exited and a restart is
/// pending (or nothing ran yet); lastState from the instance before.
fn container_status(c: &Container, inp: &Inputs, waiting_default: &str) -> ContainerStatus {
    let cur = inp.snapshot.current(&c.name);
    let waiting = inp.waiting.get(&c.name);
    let (state, last) = match (cur, waiting) {
        // A pending restart: the exited instance becomes lastState.
        (Some(i), Some(w)) if i.exited() => (
            ContainerState {
                waiting: Some(ContainerStateWaiting {
                    reason: Some(w.reason.clone()),
                    message: Some(w.message.clone()),
                }),
                ..Default::default()
            },
            Some(ContainerState { terminated: Some(terminated(i)), ..Default::default() }),
        ),
        (Some(i), _) => (
            state_of(i),
            inp.snapshot
                .previous(&c.name)
                .map(|p| ContainerState { terminated: Some(terminated(p)), ..Default::default() }),
        ),
        (None, w) => (
            ContainerState {
                waiting: Some(ContainerStateWaiting {
                    reason: Some(w.map(|w| w.reason.clone()).unwrap_or_else(|| waiting_default.into())),
                    message: w.map(|w| w.message.clone()).filter(|m| !m.is_empty()),
                }),
                ..Default::default()
            },
            None,
        ),
    };
    let running = cur.is_some_and(|i| i.running());
    let started = running && (inp.started)(&c.name);
    ContainerStatus {
        name: c.name.clone(),
        image: c.image.clone().unwrap_or_default(),
        image_id: cur.map(|i| i.image_ref.clone()).unwrap_or_default(),
        container_id: cur.map(|i| container_id(&i.id)),
        ready: running && started && (inp.ready)(&c.name),
        restart_count: cur.map(|i| i.attempt as i32).unwrap_or(0),
        started: Some(started),
        state: Some(state),
        last_state: Some(last.unwrap_or_default()),
        ..Default::default()
    }
}

/// Whether every init container is done: non-sidecars exited 0, sidecars
/// started (upstream: Initialized).
pub fn initialized(pod: &Pod, snap: &PodSnapshot, started: &dyn Fn(&str) -> bool) -> bool {
    let inits = pod.spec.as_ref().and_then(|s| s.init_containers.as_deref()).unwrap_or_default();
    inits.iter().all(|c| {
        if is_sidecar(c) {
            snap.current(&c.name).is_some_and(|i| i.running() && started(&c.name)) || regular_started(pod, snap)
        } else {
            snap.containers.get(&c.name).is_some_and(|v| v.iter().any(|i| i.exited() && i.exit_code == 0))
        }
    })
}

/// Whether any regular container was ever created (init is then over,
/// even if a sidecar restarts later).
fn regular_started(pod: &Pod, snap: &PodSnapshot) -> bool {
    let spec = pod.spec.as_ref();
    spec.map(|s| s.containers.iter().any(|c| snap.current(&c.name).is_some())).unwrap_or(false)
}

/// upstream getPhase: the pod phase from the container statuses.
pub fn phase(
    pod: &Pod,
    init: &[ContainerStatus],
    regular: &[ContainerStatus],
    is_initialized: bool,
    terminating: bool,
) -> &'static str {
    let policy = if terminating { "Never" } else { restart_policy(pod) };
    let inits = pod.spec.as_ref().and_then(|s| s.init_containers.as_deref()).unwrap_or_default();
    if !is_initialized {
        // An init container that failed for good fails the pod.
        let failed = init.iter().any(|s| {
            let sidecar = inits.iter().any(|c| c.name == s.name && is_sidecar(c));
            let term = s.state.as_ref().and_then(|st| st.terminated.as_ref()).or_else(|| {
                s.state
                    .as_ref()
                    .filter(|st| st.waiting.is_some())
                    .and_then(|_| s.last_state.as_ref().and_then(|l| l.terminated.as_ref()))
            });
            !sidecar && policy == "Never" && term.is_some_and(|t| t.exit_code != 0)
        });
        return if failed { "Failed" } else { "Pending" };
    }
    let (mut running, mut waiting, mut stopped, mut succeeded) = (0, 0, 0, 0);
    for s in regular {
        let st = s.state.clone().unwrap_or_default();
        if st.running.is_some() {
            running += 1;
        } else if let Some(t) = st.terminated {
            stopped += 1;
            if t.exit_code == 0 {
                succeeded += 1;
            }
        } else if st.waiting.is_some() {
            match s.last_state.as_ref().and_then(|l| l.terminated.as_ref()) {
                Some(t) => {
                    stopped += 1;
                    if t.exit_code == 0 {
                        succeeded += 1;
                    }
                }
                None => waiting += 1,
            }
        }
    }
    if waiting > 0 {
        return "Pending";
    }
    if running > 0 {
        return "Running";
    }
    if stopped > 0 {
        return match policy {
            "Always" => "Running",
            "Never" if stopped == succeeded => "Succeeded",
            "Never" => "Failed",
            _ if stopped == succeeded => "Succeeded",
            _ => "Running",
        };
    }
    "Pending"
}

fn condition(type_: &str, ok: bool, reason: Option<&str>, message: Option<String>) -> PodCondition {
    PodCondition {
        type_: type_.into(),
        status: if ok { "True" } else { "False" }.into(),
        reason: if ok { None } else { reason.map(String::from) },
        message: if ok { None } else { message },
        ..Default::default()
    }
}

fn names_of(statuses: &[ContainerStatus], f: impl Fn(&ContainerStatus) -> bool) -> String {
    let v: Vec<&str> = statuses.iter().filter(|s| f(s)).map(|s| s.name.as_str()).collect();
    format!("[{}]", v.join(" "))
}

/// The full status, keeping PodScheduled and other writers' conditions
/// and every condition's lastTransitionTime while its status holds.
pub fn pod_status(inp: &Inputs) -> PodStatus {
    let pod = inp.pod;
    let old = pod.status.clone().unwrap_or_default();
    let spec = pod.spec.clone().unwrap_or_default();
    let inits = spec.init_containers.clone().unwrap_or_default();
    let is_initialized = initialized(pod, inp.snapshot, inp.started);
    let init_statuses: Vec<ContainerStatus> =
        inits.iter().map(|c| container_status(c, inp, "PodInitializing")).collect();
    let regular_default = if is_initialized { "ContainerCreating" } else { "PodInitializing" };
    let statuses: Vec<ContainerStatus> =
        spec.containers.iter().map(|c| container_status(c, inp, regular_default)).collect();
    let mut phase = phase(pod, &init_statuses, &statuses, is_initialized, inp.terminating);
    if inp.terminating && phase == "Pending" {
        phase = "Failed";
    }
    let (mut reason, mut message) = (None, None);
    if let Some(v) = inp.verdict {
        phase = v.phase;
        reason = Some(v.reason.clone());
        message = Some(v.message.clone());
    }
    // A terminal pod stays terminal (upstream never leaves Succeeded/Failed).
    if matches!(old.phase.as_deref(), Some("Succeeded" | "Failed")) {
        phase = if old.phase.as_deref() == Some("Succeeded") { "Succeeded" } else { "Failed" };
        reason = reason.or(old.reason.clone());
        message = message.or(old.message.clone());
    }
    let terminal = matches!(phase, "Succeeded" | "Failed");

    let sandbox_ready = inp.snapshot.sandbox().is_some_and(|s| s.ready);
    let sandbox_ips = inp.snapshot.sandbox().filter(|s| s.ready).map(|s| s.ips.clone());
    // A hostNetwork pod has the node's addresses (upstream: podIPs = hostIPs).
    let ips = if spec.host_network == Some(true) && sandbox_ready {
        inp.host_ips.to_vec()
    } else {
        sandbox_ips.unwrap_or_default()
    };
    // Sidecars count towards readiness too (upstream: restartable init containers).
    let mut ready_set: Vec<ContainerStatus> = statuses.clone();
    ready_set.extend(init_statuses.iter().filter(|s| inits.iter().any(|c| c.name == s.name && is_sidecar(c))).cloned());
    let containers_ready = ready_set.iter().all(|s| s.ready);
    let gates: Vec<String> =
        spec.readiness_gates.clone().unwrap_or_default().into_iter().map(|g| g.condition_type).collect();
    let old_conditions = old.conditions.clone().unwrap_or_default();
    let gate_problem = gates.iter().find_map(|g| match old_conditions.iter().find(|c| &c.type_ == g) {
        None => Some(format!("corresponding condition of pod readiness gate \"{g}\" does not exist.")),
        Some(c) if c.status != "True" => {
            Some(format!("the status of pod readiness gate \"{g}\" is not \"True\", but {}", c.status))
        }
        Some(_) => None,
    });

    let mut ours = vec![
        condition("PodReadyToStartContainers", sandbox_ready, None, None),
        if terminal {
            condition("Initialized", is_initialized || phase == "Succeeded", Some("PodCompleted"), None)
        } else {
            condition(
                "Initialized",
                is_initialized,
                Some("ContainersNotInitialized"),
                Some(format!(
                    "containers with incomplete status: {}",
                    names_of(&init_statuses, |s| !is_sidecar_name(&inits, &s.name)
                        && s.state.as_ref().and_then(|st| st.terminated.as_ref()).is_none_or(|t| t.exit_code != 0))
                )),
            )
        },
    ];
    if terminal {
        ours.push(condition("ContainersReady", false, Some("PodCompleted"), None));
        ours.push(condition("Ready", false, Some("PodCompleted"), None));
    } else {
        let unready = format!("containers with unready status: {}", names_of(&ready_set, |s| !s.ready));
        ours.push(condition("ContainersReady", containers_ready, Some("ContainersNotReady"), Some(unready.clone())));
        let ready = containers_ready && gate_problem.is_none();
        let (r, m) = if containers_ready {
            (Some("ReadinessGatesNotReady"), gate_problem.clone())
        } else {
            (Some("ContainersNotReady"), Some(unready))
        };
        ours.push(condition("Ready", ready, r, m));
    }
    let mut conditions: Vec<PodCondition> = Vec::new();
    for mut c in ours {
        c.last_transition_time = match old_conditions.iter().find(|o| o.type_ == c.type_) {
            Some(o) if o.status == c.status => o.last_transition_time.clone(),
            _ => Some(inp.now.clone()),
        };
        c.last_probe_time = None;
        conditions.push(c);
    }
    // Conditions others own (PodScheduled, DisruptionTarget, readiness gates) are kept.
    for o in &old_conditions {
        if !conditions.iter().any(|c| c.type_ == o.type_) {
            conditions.push(o.clone());
        }
    }
    PodStatus {
        phase: Some(phase.into()),
        reason,
        message,
        conditions: Some(conditions),
        host_ip: inp.host_ips.first().cloned(),
        host_ips: Some(inp.host_ips.iter().map(|ip| HostIP { ip: ip.clone() }).collect()),
        pod_ip: ips.first().cloned().or(old.pod_ip.clone().filter(|_| terminal)),
        pod_ips: if ips.is_empty() && terminal {
            old.pod_ips.clone()
        } else {
            Some(ips.iter().map(|ip| PodIP { ip: ip.clone() }).collect())
        },
        start_time: old.start_time.clone().or(Some(inp.now.clone())),
        qos_class: old.qos_class.clone().or_else(|| Some(super::resources::qos_class(pod).into())),
        init_container_statuses: (!init_statuses.is_empty()).then_some(init_statuses),
        container_statuses: Some(statuses),
        nominated_node_name: old.nominated_node_name.clone(),
        ephemeral_container_statuses: {
            let eph: Vec<ContainerStatus> = super::worker::ephemeral_containers(pod)
                .iter()
                .map(|(c, _)| container_status(c, inp, "ContainerCreating"))
                .collect();
            (!eph.is_empty()).then_some(eph)
        },
        resize: old.resize.clone(),
        resource_claim_statuses: old.resource_claim_statuses.clone(),
        observed_generation: None,
    }
}

fn is_sidecar_name(inits: &[Container], name: &str) -> bool {
    inits.iter().any(|c| c.name == name && is_sidecar(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pods::snapshot::Sandbox;
    use k8s_openapi::api::core::v1::{PodReadinessGate, PodSpec};

    fn pod(policy: &str, containers: &[&str], inits: &[Container]) -> Pod {
        Pod {
            metadata: Default::default(),
            spec: Some(PodSpec {
                restart_policy: Some(policy.into()),
                containers: containers
                    .iter()
                    .map(|n| Container { name: n.to_string(), image: Some("busybox:1".into()), ..Default::default() })
                    .collect(),
                init_containers: (!inits.is_empty()).then(|| inits.to_vec()),
                ..Default::default()
            }),
            status: None,
        }
    }

    fn inst(name: &str, attempt: u32, state: State, exit: i32) -> Instance {
        Instance {
            id: format!("{name}-{attempt}"),
            name: name.into(),
            attempt,
            sandbox_id: "sb".into(),
            state,
            created_at: 1,
            started_at: 1_700_000_000_000_000_000,
            finished_at: if state == State::Exited { 1_700_000_001_000_000_000 } else { 0 },
            exit_code: exit,
            reason: String::new(),
            message: String::new(),
            image: "busybox:1".into(),
            image_ref: "sha256:abc".into(),
            hash: String::new(),
        }
    }

    fn snap(instances: Vec<Instance>) -> PodSnapshot {
        let mut s = PodSnapshot {
            sandboxes: vec![Sandbox {
                id: "sb".into(),
                attempt: 0,
                ready: true,
                ips: vec!["10.42.0.5".into()],
                created_at: 1,
            }],
            ..Default::default()
        };
        for i in instances {
            s.containers.entry(i.name.clone()).or_default().push(i);
        }
        for v in s.containers.values_mut() {
            v.sort_by_key(|i| std::cmp::Reverse(i.attempt));
        }
        s
    }

    fn status_of(pod: &Pod, s: &PodSnapshot, waiting: &BTreeMap<String, Waiting>, terminating: bool) -> PodStatus {
        let yes = |_: &str| true;
        pod_status(&Inputs {
            pod,
            snapshot: s,
            waiting,
            ready: &yes,
            started: &yes,
            host_ips: &["127.0.0.1".to_string()],
            verdict: None,
            terminating,
            now: Time(jiff::Timestamp::UNIX_EPOCH),
        })
    }

    fn cond<'a>(s: &'a PodStatus, t: &str) -> &'a PodCondition {
        s.conditions.as_ref().unwrap().iter().find(|c| c.type_ == t).unwrap()
    }

    #[test]
    fn a_running_container_makes_the_pod_running_and_ready() {
        let p = pod("Always", &["a"], &[]);
        let s = status_of(&p, &snap(vec![inst("a", 0, State::Running, 0)]), &BTreeMap::new(), false);
        assert_eq!(s.phase.as_deref(), Some("Running"));
        assert_eq!(s.pod_ip.as_deref(), Some("10.42.0.5"));
        assert_eq!(cond(&s, "Ready").status, "True");
        assert_eq!(cond(&s, "PodReadyToStartContainers").status, "True");
        let cs = &s.container_statuses.as_ref().unwrap()[0];
        assert_eq!(cs.container_id.as_deref(), Some("containerd://a-0"));
        assert!(cs.ready && cs.started == Some(true));
    }

    #[test]
    fn crash_loop_back_off_keeps_the_pod_running_with_the_exit_as_last_state() {
        let p = pod("Always", &["a"], &[]);
        let waiting = BTreeMap::from([(
            "a".to_string(),
            Waiting {
                reason: "CrashLoopBackOff".into(),
                message: "back-off 10s restarting failed container=a pod=x".into(),
            },
        )]);
        let s =
            status_of(&p, &snap(vec![inst("a", 1, State::Exited, 3), inst("a", 0, State::Exited, 3)]), &waiting, false);
        assert_eq!(s.phase.as_deref(), Some("Running"));
        let cs = &s.container_statuses.as_ref().unwrap()[0];
        assert_eq!(cs.restart_count, 1);
        assert_eq!(cs.state.as_ref().unwrap().waiting.as_ref().unwrap().reason.as_deref(), Some("CrashLoopBackOff"));
        let last = cs.last_state.as_ref().unwrap().terminated.as_ref().unwrap();
        assert_eq!((last.exit_code, last.reason.as_deref()), (3, Some("Error")));
        let ready = cond(&s, "Ready");
        assert_eq!((ready.status.as_str(), ready.reason.as_deref()), ("False", Some("ContainersNotReady")));
        assert_eq!(ready.message.as_deref(), Some("containers with unready status: [a]"));
    }

    #[test]
    fn never_pods_end_succeeded_or_failed_and_deleted_pods_end_terminal() {
        let p = pod("Never", &["a", "b"], &[]);
        let done = snap(vec![inst("a", 0, State::Exited, 0), inst("b", 0, State::Exited, 0)]);
        assert_eq!(status_of(&p, &done, &BTreeMap::new(), false).phase.as_deref(), Some("Succeeded"));
        let failed = snap(vec![inst("a", 0, State::Exited, 0), inst("b", 0, State::Exited, 1)]);
        let s = status_of(&p, &failed, &BTreeMap::new(), false);
        assert_eq!(s.phase.as_deref(), Some("Failed"));
        assert_eq!(cond(&s, "Ready").reason.as_deref(), Some("PodCompleted"));
        // OnFailure with a failure restarts (Running); Always killed for deletion ends Failed.
        let p = pod("OnFailure", &["a", "b"], &[]);
        assert_eq!(status_of(&p, &failed, &BTreeMap::new(), false).phase.as_deref(), Some("Running"));
        let p = pod("Always", &["a"], &[]);
        let killed = snap(vec![inst("a", 0, State::Exited, 137)]);
        assert_eq!(status_of(&p, &killed, &BTreeMap::new(), true).phase.as_deref(), Some("Failed"));
        let clean = snap(vec![inst("a", 0, State::Exited, 0)]);
        assert_eq!(status_of(&p, &clean, &BTreeMap::new(), true).phase.as_deref(), Some("Succeeded"));
    }

    #[test]
    fn pending_init_containers_hold_the_pod_pending_and_name_themselves() {
        let init = Container { name: "setup".into(), image: Some("busybox:1".into()), ..Default::default() };
        let p = pod("Always", &["a"], &[init]);
        let s = status_of(&p, &snap(vec![inst("setup", 0, State::Running, 0)]), &BTreeMap::new(), false);
        assert_eq!(s.phase.as_deref(), Some("Pending"));
        let c = cond(&s, "Initialized");
        assert_eq!((c.status.as_str(), c.reason.as_deref()), ("False", Some("ContainersNotInitialized")));
        assert_eq!(c.message.as_deref(), Some("containers with incomplete status: [setup]"));
        let app = &s.container_statuses.as_ref().unwrap()[0];
        assert_eq!(app.state.as_ref().unwrap().waiting.as_ref().unwrap().reason.as_deref(), Some("PodInitializing"));
        // Never + a failed init container fails the pod.
        let init = Container { name: "setup".into(), ..Default::default() };
        let p = pod("Never", &["a"], &[init]);
        let s = status_of(&p, &snap(vec![inst("setup", 0, State::Exited, 1)]), &BTreeMap::new(), false);
        assert_eq!(s.phase.as_deref(), Some("Failed"));
    }

    #[test]
    fn readiness_gates_hold_ready_false_with_upstreams_message() {
        let mut p = pod("Always", &["a"], &[]);
        p.spec.as_mut().unwrap().readiness_gates =
            Some(vec![PodReadinessGate { condition_type: "example.com/ready".into() }]);
        let s = status_of(&p, &snap(vec![inst("a", 0, State::Running, 0)]), &BTreeMap::new(), false);
        assert_eq!(cond(&s, "ContainersReady").status, "True");
        let r = cond(&s, "Ready");
        assert_eq!((r.status.as_str(), r.reason.as_deref()), ("False", Some("ReadinessGatesNotReady")));
        assert_eq!(
            r.message.as_deref(),
            Some("corresponding condition of pod readiness gate \"example.com/ready\" does not exist.")
        );
        p.status = Some(PodStatus {
            conditions: Some(vec![PodCondition {
                type_: "example.com/ready".into(),
                status: "True".into(),
                ..Default::default()
            }]),
            ..Default::default()
        });
        let s = status_of(&p, &snap(vec![inst("a", 0, State::Running, 0)]), &BTreeMap::new(), false);
        assert_eq!(cond(&s, "Ready").status, "True");
        // The gate's own condition is kept.
        assert!(s.conditions.unwrap().iter().any(|c| c.type_ == "example.com/ready"));
    }
}
