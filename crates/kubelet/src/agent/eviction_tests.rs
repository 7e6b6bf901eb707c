use super::*;
use k8s_openapi::api::core::v1::{Container, PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

const MEMINFO: &str = "MemTotal:       24684032 kB\nMemFree:         3681304 kB\nMemAvailable:   21887036 kB\n";

#[test]
fn default_thresholds_are_upstreams() {
    let t = parse_thresholds(DEFAULT_EVICTION_HARD).unwrap();
    assert_eq!(
        t,
        [
            Threshold { signal: Signal::MemoryAvailable, value: ThresholdValue::Quantity(100 * 1024 * 1024) },
            Threshold { signal: Signal::NodeFsAvailable, value: ThresholdValue::Percentage(0.10) },
            Threshold { signal: Signal::ImageFsAvailable, value: ThresholdValue::Percentage(0.15) },
            Threshold { signal: Signal::NodeFsInodesFree, value: ThresholdValue::Percentage(0.05) },
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
    assert_eq!(thresholds_met(&t, &obs), t);
    let fs = FsStats { available_bytes: 50 << 30, capacity_bytes: 100 << 30, inodes_free: 90_000, inodes: 100_000 };
    fs_observations(&mut obs, Signal::NodeFsAvailable, Signal::NodeFsInodesFree, fs);
    assert!(thresholds_met(&t, &obs).is_empty());
    // A signal that was not observed never trips.
    assert!(thresholds_met(&parse_thresholds("memory.available<1000Ti").unwrap(), &obs).is_empty());
}

#[test]
fn this_machine_does_not_trip_the_defaults() {
    let dir = std::env::temp_dir();
    let obs = observe(&dir, &dir);
    assert!(obs.contains_key(&Signal::MemoryAvailable) && obs.contains_key(&Signal::NodeFsAvailable));
    assert!(thresholds_met(&parse_thresholds(DEFAULT_EVICTION_HARD).unwrap(), &obs).is_empty(), "{obs:?}");
    assert_eq!(thresholds_met(&parse_thresholds("memory.available<1000Ti").unwrap(), &obs).len(), 1);
}

#[test]
fn pressure_lasts_the_transition_period() {
    let mut tr = PressureTracker::default();
    let t0 = Instant::now();
    let period = Duration::from_secs(300);
    let mem = parse_thresholds("memory.available<1Gi").unwrap();
    assert_eq!(tr.update(&mem, period, t0), Pressure { memory: true, disk: false, pid: false });
    assert!(tr.update(&[], period, t0 + Duration::from_secs(299)).memory);
    assert!(!tr.update(&[], period, t0 + Duration::from_secs(300)).memory);
    let disk = parse_thresholds("imagefs.inodesFree<1").unwrap();
    assert_eq!(tr.update(&disk, period, t0), Pressure { memory: false, disk: true, pid: false });
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
