use super::*;
use k8s_openapi::api::core::v1::{Container, PodSpec, ResourceRequirements, Toleration};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

const MEMINFO: &str = "MemTotal:       24684032 kB\nMemFree:         3681304 kB\nMemAvailable:   21887036 kB\n";

#[test]
fn default_thresholds_are_upstreams() {
    let t = parse_thresholds(DEFAULT_EVICTION_HARD).unwrap();
    assert_eq!(
        t,
        [
            Threshold::hard(Signal::MemoryAvailable, ThresholdValue::Quantity(100 * 1024 * 1024)),
            Threshold::hard(Signal::NodeFsAvailable, ThresholdValue::Percentage(0.10)),
            Threshold::hard(Signal::ImageFsAvailable, ThresholdValue::Percentage(0.15)),
            Threshold::hard(Signal::NodeFsInodesFree, ThresholdValue::Percentage(0.05)),
        ]
    );
}

#[test]
fn threshold_statements_and_errors() {
    let t = parse_thresholds("memory.available<1000Ti, pid.available<10%").unwrap();
    assert_eq!(t[0].quantity(0), 1000 * 1024u64.pow(4));
    assert_eq!(t[1].quantity(32768), 3276);
    assert!(parse_thresholds("").unwrap().is_empty());
    // 0% is ignored, as upstream.
    assert!(parse_thresholds("nodefs.available<0%").unwrap().is_empty());
    assert_eq!(parse_thresholds("memory.free<1Gi").unwrap_err(), "unsupported eviction signal memory.free");
    assert_eq!(
        parse_thresholds("nodefs.available<110%").unwrap_err(),
        "eviction percentage threshold nodefs.available must be >= 0% and <= 100%: 110%"
    );
    assert_eq!(
        parse_thresholds("memory.available<-1Gi").unwrap_err(),
        "eviction threshold memory.available must be positive: -1Gi"
    );
    assert!(parse_thresholds("memory.available=1Gi").is_err());
    assert!(parse_thresholds("memory.available<1Gi,memory.available<2Gi").is_err());
}

#[test]
fn memory_available_from_the_root_cgroup_or_meminfo() {
    // cgroup v1: MemTotal - (usage - total_inactive_file).
    let stat = "cache 100\ntotal_cache 5000\ntotal_inactive_file 1073741824\n";
    let o = memory_observation(MEMINFO, Some("4294967296\n"), Some(stat)).unwrap();
    assert_eq!(o.capacity, 24684032 * 1024);
    assert_eq!(o.available, 24684032 * 1024 - (4294967296 - 1073741824));
    // Without the cgroup numbers: MemAvailable.
    let o = memory_observation(MEMINFO, None, None).unwrap();
    assert_eq!(o.available, 21887036 * 1024);
    assert!(memory_observation("", None, None).is_none());
}

#[test]
fn pid_and_filesystem_signals() {
    assert_eq!(pid_observation("32768\n", "192000\n", 500), Some(Observation { available: 32268, capacity: 32768 }));
    assert_eq!(pid_observation("4194304", "", 4), Some(Observation { available: 4194300, capacity: 4194304 }));
    let mut obs = Observations::new();
    let fs = FsStats { available_bytes: 5 << 30, capacity_bytes: 100 << 30, inodes_free: 1000, inodes: 100_000 };
    fs_observations(&mut obs, Signal::NodeFsAvailable, Signal::NodeFsInodesFree, fs);
    let t = parse_thresholds("nodefs.available<10%,nodefs.inodesFree<5%").unwrap();
    // 5 GiB of 100 GiB < 10%; 1000 of 100000 inodes < 5%.
    assert_eq!(thresholds_met(&t, &obs, false), t);
    let fs = FsStats { available_bytes: 50 << 30, capacity_bytes: 100 << 30, inodes_free: 90_000, inodes: 100_000 };
    fs_observations(&mut obs, Signal::NodeFsAvailable, Signal::NodeFsInodesFree, fs);
    assert!(thresholds_met(&t, &obs, false).is_empty());
    // A signal that was not observed never trips.
    assert!(thresholds_met(&parse_thresholds("memory.available<1000Ti").unwrap(), &obs, false).is_empty());
}

#[test]
fn this_machine_does_not_trip_the_defaults() {
    let dir = std::env::temp_dir();
    let obs = observe(&dir, &dir);
    assert!(obs.contains_key(&Signal::MemoryAvailable) && obs.contains_key(&Signal::NodeFsAvailable));
    assert!(thresholds_met(&parse_thresholds(DEFAULT_EVICTION_HARD).unwrap(), &obs, false).is_empty(), "{obs:?}");
    assert_eq!(thresholds_met(&parse_thresholds("memory.available<1000Ti").unwrap(), &obs, false).len(), 1);
}

#[test]
fn pressure_lasts_the_transition_period() {
    let mut st = EvictionState::default();
    let t0 = Instant::now();
    let period = Duration::from_secs(300);
    let mem = parse_thresholds("memory.available<1Gi").unwrap();
    let low = Observations::from([(Signal::MemoryAvailable, Observation { available: 1 << 29, capacity: 1 << 34 })]);
    let fine = Observations::from([(Signal::MemoryAvailable, Observation { available: 1 << 33, capacity: 1 << 34 })]);
    let d = st.update(&mem, &low, period, t0);
    assert_eq!(d.pressure, Pressure { memory: true, disk: false, pid: false });
    assert_eq!(d.reclaim, mem, "a hard threshold drives eviction at once");
    let d = st.update(&mem, &fine, period, t0 + Duration::from_secs(299));
    assert!(d.pressure.memory && d.reclaim.is_empty());
    assert!(!st.update(&mem, &fine, period, t0 + Duration::from_secs(300)).pressure.memory);
}

#[test]
fn soft_thresholds_parse_with_their_grace_periods() {
    let t = threshold_config(
        "memory.available<100Mi",
        "memory.available<300Mi,nodefs.available<15%",
        "memory.available=1m30s,nodefs.available=2m,pid.available=5m",
        "",
    )
    .unwrap();
    assert_eq!(t.len(), 3);
    assert!(t[0].is_hard());
    assert_eq!((t[1].signal, t[1].grace_period), (Signal::MemoryAvailable, Duration::from_secs(90)));
    assert!(!t[1].is_hard());
    assert_eq!((t[2].signal, t[2].grace_period), (Signal::NodeFsAvailable, Duration::from_secs(120)));
    // Upstream's validation errors.
    assert_eq!(
        threshold_config("", "memory.available<1Gi", "", "").unwrap_err(),
        "grace period must be specified for the soft eviction threshold memory.available"
    );
    assert_eq!(
        threshold_config("", "memory.available<1Gi", "nodefs.available=1m", "").unwrap_err(),
        "grace period must be specified for the soft eviction threshold memory.available"
    );
    assert_eq!(
        parse_grace_periods("memory.available=-1s").unwrap_err(),
        "invalid eviction grace period specified: -1s, must be a positive value"
    );
    assert_eq!(parse_grace_periods("memory.free=1m").unwrap_err(), "unsupported eviction signal memory.free");
    assert_eq!(parse_grace_periods("memory.available=1x").unwrap_err(), r#"time: unknown unit "x" in duration "1x""#);
    assert!(parse_grace_periods("memory.available").is_err());
}

#[test]
fn minimum_reclaim_parses_and_applies_to_every_threshold_of_its_signal() {
    let t = threshold_config(
        "memory.available<1Gi,nodefs.available<10%",
        "memory.available<2Gi",
        "memory.available=30s",
        "memory.available=500Mi,nodefs.available=5%",
    )
    .unwrap();
    assert_eq!(t[0].min_reclaim, Some(ThresholdValue::Quantity(500 << 20)));
    assert_eq!(t[1].min_reclaim, Some(ThresholdValue::Percentage(0.05)));
    assert_eq!(t[2].min_reclaim, Some(ThresholdValue::Quantity(500 << 20)));
    assert_eq!(t[0].quantity_with_min_reclaim(1 << 34), (1 << 30) + (500 << 20));
    assert_eq!(t[1].quantity_with_min_reclaim(1000), 150);
    assert_eq!(
        parse_min_reclaims("nodefs.available=0%").unwrap_err(),
        "eviction percentage minimum reclaim nodefs.available must be positive: 0%"
    );
    assert_eq!(
        parse_min_reclaims("memory.available=-1Gi").unwrap_err(),
        "negative eviction minimum reclaim specified for memory.available"
    );
    assert_eq!(parse_min_reclaims("memory.free=1Gi").unwrap_err(), "unsupported eviction signal memory.free");
}

fn memory_obs(available_mi: u64) -> Observations {
    Observations::from([(Signal::MemoryAvailable, Observation { available: available_mi << 20, capacity: 1 << 34 })])
}

/// Upstream's TestMemoryPressure, soft part: the soft threshold sets
/// MemoryPressure at once but drives eviction only after its grace period;
/// it restarts when the signal recovers in between.
#[test]
fn a_soft_threshold_evicts_only_after_its_grace_period() {
    let t = threshold_config("memory.available<1Gi", "memory.available<2Gi", "memory.available=1m30s", "").unwrap();
    let (hard, soft) = (t[0], t[1]);
    let period = Duration::from_secs(300);
    let mut st = EvictionState::default();
    let t0 = Instant::now();
    let at = |s: u64| t0 + Duration::from_secs(s);
    // Above both: nothing.
    let d = st.update(&t, &memory_obs(3000), period, t0);
    assert_eq!(d, Decision { pressure: Pressure::default(), reclaim: vec![] });
    // Below the soft threshold: pressure, no eviction yet.
    let d = st.update(&t, &memory_obs(1500), period, at(60));
    assert!(d.pressure.memory);
    assert!(d.reclaim.is_empty());
    let d = st.update(&t, &memory_obs(1500), period, at(149));
    assert!(d.reclaim.is_empty(), "{d:?}");
    // 90 s after it was first crossed: the soft threshold drives eviction.
    let d = st.update(&t, &memory_obs(1500), period, at(150));
    assert_eq!(d.reclaim, vec![soft]);
    // Recovered: the pressure lasts the transition period, the grace period restarts.
    let d = st.update(&t, &memory_obs(3000), period, at(160));
    assert!(d.pressure.memory && d.reclaim.is_empty());
    let d = st.update(&t, &memory_obs(1500), period, at(170));
    assert!(d.reclaim.is_empty(), "the grace period starts again: {d:?}");
    // Below the hard threshold: eviction at once.
    let d = st.update(&t, &memory_obs(500), period, at(180));
    assert_eq!(d.reclaim, vec![hard]);
    assert!(!st.update(&t, &memory_obs(3000), period, at(480)).pressure.memory);
}

/// Upstream's TestMinReclaim: once met, a threshold stays met until the
/// signal is above threshold + minimum reclaim.
#[test]
fn minimum_reclaim_keeps_the_threshold_met() {
    let t = threshold_config("memory.available<1Gi", "", "", "memory.available=500Mi").unwrap();
    let period = Duration::from_secs(300);
    let mut st = EvictionState::default();
    let t0 = Instant::now();
    let at = |s: u64| t0 + Duration::from_secs(s);
    assert!(st.update(&t, &memory_obs(2000), period, t0).reclaim.is_empty());
    // Below 1Gi: met.
    assert_eq!(st.update(&t, &memory_obs(500), period, at(10)).reclaim, t);
    // 1.2Gi: above the threshold, but not above 1Gi + 500Mi: still met.
    assert_eq!(st.update(&t, &memory_obs(1200), period, at(20)).reclaim, t);
    // 2Gi: resolved; the condition lasts the transition period.
    let d = st.update(&t, &memory_obs(2000), period, at(30));
    assert!(d.reclaim.is_empty() && d.pressure.memory);
    // Resolved once, 1.2Gi alone does not meet the threshold again.
    assert!(st.update(&t, &memory_obs(1200), period, at(40)).reclaim.is_empty());
    // thresholds_met with and without the minimum reclaim.
    assert!(thresholds_met(&t, &memory_obs(1200), false).is_empty());
    assert_eq!(thresholds_met(&t, &memory_obs(1200), true), t);
}

#[test]
fn grace_period_of_an_evicted_pod() {
    let hard = parse_thresholds("memory.available<1Gi").unwrap()[0];
    let soft = threshold_config("", "memory.available<1Gi", "memory.available=1m", "").unwrap()[0];
    let mut p = pod("p", 0, None);
    p.spec.as_mut().unwrap().termination_grace_period_seconds = Some(20);
    assert_eq!(eviction_grace_period(&hard, 60, &p), IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS);
    assert_eq!(eviction_grace_period(&soft, 60, &p), 20, "the pod's own grace when smaller");
    assert_eq!(eviction_grace_period(&soft, 5, &p), 5);
    assert_eq!(eviction_grace_period(&soft, 0, &p), 0, "upstream's default max is 0");
    assert_eq!(eviction_grace_period(&soft, -1, &p), 0);
    p.spec.as_mut().unwrap().termination_grace_period_seconds = None;
    assert_eq!(eviction_grace_period(&soft, 60, &p), 30);
}

fn with_toleration(mut p: Pod, key: Option<&str>, operator: &str, effect: Option<&str>) -> Pod {
    p.spec.as_mut().unwrap().tolerations = Some(vec![Toleration {
        key: key.map(Into::into),
        operator: Some(operator.into()),
        effect: effect.map(Into::into),
        ..Default::default()
    }]);
    p
}

/// Upstream's TestAdmitUnderNodeConditions and TestMemoryPressure
/// admission cases.
#[test]
fn admission_under_pressure() {
    let none = Pressure::default();
    let memory = Pressure { memory: true, ..Default::default() };
    let disk = Pressure { disk: true, ..Default::default() };
    let both = Pressure { memory: true, disk: true, pid: false };
    let all = Pressure { memory: true, disk: true, pid: true };
    let best_effort = pod("be", 0, None);
    let burstable = pod("bu", 0, Some("100Mi"));
    let critical = pod("crit", SYSTEM_CRITICAL_PRIORITY, None);
    let mut static_pod = pod("static", 0, None);
    static_pod.metadata.annotations = Some(BTreeMap::from([("kubernetes.io/config.source".into(), "file".into())]));
    let tolerating = with_toleration(pod("tol", 0, None), Some(MEMORY_PRESSURE_TAINT), "Exists", Some("NoSchedule"));
    let tolerating_all = with_toleration(pod("all", 0, None), None, "Exists", None);
    let wrong_effect = with_toleration(pod("eff", 0, None), Some(MEMORY_PRESSURE_TAINT), "Exists", Some("NoExecute"));
    let disk_tol =
        with_toleration(pod("disk", 0, None), Some("node.kubernetes.io/disk-pressure"), "Exists", Some("NoSchedule"));
    let rejected = |p: &Pressure, pod: &Pod| admit_under_pressure(p, pod).err().map(|r| (r.reason, r.message));
    let msg = |m: &str| Some(("Evicted".to_string(), m.to_string()));
    for p in [&best_effort, &burstable, &critical, &tolerating] {
        assert_eq!(rejected(&none, p), None);
    }
    // MemoryPressure alone: BestEffort pods are rejected unless they tolerate the taint.
    assert_eq!(rejected(&memory, &best_effort), msg("The node had condition: [MemoryPressure]. "));
    assert_eq!(rejected(&memory, &burstable), None);
    assert_eq!(rejected(&memory, &critical), None);
    assert_eq!(rejected(&memory, &static_pod), None);
    assert_eq!(rejected(&memory, &tolerating), None);
    assert_eq!(rejected(&memory, &tolerating_all), None);
    assert_eq!(rejected(&memory, &wrong_effect), msg("The node had condition: [MemoryPressure]. "));
    assert_eq!(rejected(&memory, &disk_tol), msg("The node had condition: [MemoryPressure]. "));
    // Any other condition: every non-critical pod is rejected.
    assert_eq!(rejected(&disk, &burstable), msg("The node had condition: [DiskPressure]. "));
    assert_eq!(rejected(&disk, &best_effort), msg("The node had condition: [DiskPressure]. "));
    assert_eq!(rejected(&disk, &disk_tol), msg("The node had condition: [DiskPressure]. "));
    assert_eq!(rejected(&disk, &critical), None);
    assert_eq!(rejected(&both, &burstable), msg("The node had condition: [MemoryPressure DiskPressure]. "));
    assert_eq!(rejected(&both, &tolerating), msg("The node had condition: [MemoryPressure DiskPressure]. "));
    assert_eq!(rejected(&both, &critical), None);
    assert_eq!(rejected(&all, &burstable), msg("The node had condition: [MemoryPressure DiskPressure PIDPressure]. "));
    // Through the handle, as the pod workers ask.
    let h = PressureHandle::default();
    assert!(AdmitHandler::admit(&h, &best_effort).is_ok());
    h.set(memory);
    let r = AdmitHandler::admit(&h, &best_effort).unwrap_err();
    assert_eq!(
        crate::pods::admission::rejected_message(&r),
        "Pod was rejected: The node had condition: [MemoryPressure]. "
    );
}

fn pod(name: &str, priority: i32, memory_request: Option<&str>) -> Pod {
    let resources = memory_request.map(|m| ResourceRequirements {
        requests: Some(BTreeMap::from([("memory".to_string(), Quantity(m.into()))])),
        ..Default::default()
    });
    Pod {
        metadata: kube::api::ObjectMeta { name: Some(name.into()), ..Default::default() },
        spec: Some(PodSpec {
            priority: Some(priority),
            containers: vec![Container { name: "c".into(), resources, ..Default::default() }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn mem(bytes: u64) -> PodUsage {
    PodUsage { memory: BTreeMap::from([("c".to_string(), bytes)]), ..Default::default() }
}

#[test]
fn ranking_is_exceeds_requests_then_priority_then_usage() {
    let mi = 1024 * 1024;
    let mut pods = vec![
        (pod("guaranteed-under", 0, Some("100Mi")), mem(50 * mi)),
        (pod("burstable-over-high-prio", 1000, Some("10Mi")), mem(20 * mi)),
        (pod("besteffort-small", 0, None), mem(5 * mi)),
        (pod("besteffort-big", 0, None), mem(80 * mi)),
        (pod("under-low-prio", -10, Some("1Gi")), mem(mi)),
    ];
    rank(&mut pods, Signal::MemoryAvailable);
    let names: Vec<&str> = pods.iter().map(|(p, _)| p.metadata.name.as_deref().unwrap()).collect();
    assert_eq!(
        names,
        ["besteffort-big", "besteffort-small", "burstable-over-high-prio", "under-low-prio", "guaranteed-under"]
    );
    // PID pressure: priority only.
    rank(&mut pods, Signal::PidAvailable);
    assert_eq!(pods[0].0.metadata.name.as_deref(), Some("under-low-prio"));
}

#[test]
fn critical_pods_are_not_evicted() {
    assert!(is_critical(&pod("p", SYSTEM_CRITICAL_PRIORITY, None)));
    assert!(!is_critical(&pod("p", SYSTEM_CRITICAL_PRIORITY - 1, None)));
    let mut mirror = pod("m", 0, None);
    mirror.metadata.annotations = Some(BTreeMap::from([("kubernetes.io/config.mirror".into(), "x".into())]));
    assert!(is_critical(&mirror));
}

#[test]
fn eviction_message_is_upstreams() {
    let mi = 1024 * 1024;
    let t = parse_thresholds("memory.available<100Mi").unwrap()[0];
    let obs = Observations::from([(Signal::MemoryAvailable, Observation { available: 50 * mi, capacity: 1 << 34 })]);
    let p = pod("p", 0, None);
    assert_eq!(
        eviction_message(&t, &obs, &p, &PodUsage::default()),
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. "
    );
    assert_eq!(
        eviction_message(&t, &obs, &p, &mem(3 * mi)),
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. \
         Container c was using 3Mi, request is 0, has larger consumption of memory. "
    );
    let t = parse_thresholds("nodefs.available<10%").unwrap()[0];
    let obs = Observations::from([(Signal::NodeFsAvailable, Observation { available: 1 << 30, capacity: 20 << 30 })]);
    assert_eq!(
        eviction_message(&t, &obs, &p, &PodUsage::default()),
        "The node was low on resource: ephemeral-storage. Threshold quantity: 2Gi, available: 1Gi. "
    );
    let patch = eviction_status_patch("m", "2026-01-01T00:00:00Z");
    assert_eq!(patch["status"]["phase"], "Failed");
    assert_eq!(patch["status"]["reason"], "Evicted");
    assert_eq!(patch["status"]["conditions"][0]["reason"], "TerminationByKubelet");
}

#[test]
fn hard_eviction_reservation_is_the_hard_memory_and_nodefs_thresholds() {
    let c = EvictionConfig::default();
    assert_eq!(c.hard_eviction_reservation(1 << 34, 1000), (100 << 20, 100));
    let c = EvictionConfig {
        thresholds: threshold_config("memory.available<5%", "nodefs.available<50%", "nodefs.available=1m", "").unwrap(),
        ..Default::default()
    };
    // Soft thresholds reserve nothing, as upstream.
    assert_eq!(c.hard_eviction_reservation(1000, 1000), (50, 0));
}
