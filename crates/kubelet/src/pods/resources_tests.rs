//! Expected values follow upstream's qos_test.go (TestComputePodQOS),
//! policy_test.go (TestGetContainerOOMScoreAdjust),
//! kuberuntime_container_linux_test.go (TestCalculateLinuxResources,
//! TestGenerateLinuxContainerResources) and cm/helpers_linux_test.go.

use super::*;
use serde_json::json;

fn pod(containers: serde_json::Value, init: serde_json::Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": "p", "namespace": "ns", "uid": "1234-5678"},
        "spec": {"containers": containers, "initContainers": init}
    }))
    .unwrap()
}

fn ctr(name: &str, requests: serde_json::Value, limits: serde_json::Value) -> serde_json::Value {
    json!({"name": name, "resources": {"requests": requests, "limits": limits}})
}

#[test]
fn qos_class_matches_compute_pod_qos() {
    let guaranteed = ctr("a", json!({"cpu": "100m", "memory": "100Mi"}), json!({"cpu": "100m", "memory": "100Mi"}));
    let cases = [
        (json!([ctr("a", json!({}), json!({}))]), json!([]), "BestEffort"),
        // Zero quantities and non-compute resources do not count.
        (
            json!([ctr("a", json!({"cpu": "0", "nvidia.com/gpu": "1"}), json!({"nvidia.com/gpu": "1"}))]),
            json!([]),
            "BestEffort",
        ),
        (json!([guaranteed.clone()]), json!([]), "Guaranteed"),
        (json!([guaranteed.clone(), guaranteed.clone()]), json!([]), "Guaranteed"),
        // A container without a memory limit.
        (json!([guaranteed.clone(), ctr("b", json!({"cpu": "100m"}), json!({"cpu": "100m"}))]), json!([]), "Burstable"),
        // Requests below limits.
        (
            json!([ctr("a", json!({"cpu": "100m", "memory": "50Mi"}), json!({"cpu": "100m", "memory": "100Mi"}))]),
            json!([]),
            "Burstable",
        ),
        (json!([guaranteed.clone(), ctr("b", json!({}), json!({}))]), json!([]), "Burstable"),
        // Init containers count.
        (json!([ctr("a", json!({}), json!({}))]), json!([ctr("i", json!({"memory": "10Mi"}), json!({}))]), "Burstable"),
        (json!([guaranteed.clone()]), json!([ctr("i", json!({"cpu": "1"}), json!({"cpu": "2"}))]), "Burstable"),
        // Limits only (requests not defaulted here): the sums differ in size.
        (json!([ctr("a", json!({}), json!({"cpu": "1", "memory": "1Gi"}))]), json!([]), "Burstable"),
        // 1000m equals 1 exactly.
        (
            json!([ctr("a", json!({"cpu": "1000m", "memory": "1Gi"}), json!({"cpu": "1", "memory": "1024Mi"}))]),
            json!([]),
            "Guaranteed",
        ),
    ];
    for (i, (containers, init, want)) in cases.into_iter().enumerate() {
        assert_eq!(qos_class(&pod(containers, init)), want, "case {i}");
    }
    // status.qosClass wins, as GetPodQOS.
    let mut p = pod(json!([ctr("a", json!({}), json!({}))]), json!([]));
    p.status = Some(serde_json::from_value(json!({"qosClass": "Burstable"})).unwrap());
    assert_eq!(qos_class(&p), "Burstable");
    assert_eq!(compute_qos_class(&p), "BestEffort");
}

#[test]
fn cpu_shares_and_quota_as_upstream() {
    assert_eq!(milli_cpu_to_shares(0), 2);
    assert_eq!(milli_cpu_to_shares(1), 2);
    assert_eq!(milli_cpu_to_shares(100), 102);
    assert_eq!(milli_cpu_to_shares(1000), 1024);
    assert_eq!(milli_cpu_to_shares(500_000), 262_144);
    assert_eq!(milli_cpu_to_quota(0, 100_000), 0);
    assert_eq!(milli_cpu_to_quota(5, 100_000), 1000);
    assert_eq!(milli_cpu_to_quota(9, 100_000), 1000);
    assert_eq!(milli_cpu_to_quota(10, 100_000), 1000);
    assert_eq!(milli_cpu_to_quota(200, 100_000), 20_000);
    assert_eq!(milli_cpu_to_quota(1500, 100_000), 150_000);
}

#[test]
fn linux_resources_from_requests_and_limits() {
    let node_mem = 8 << 30;
    let p = pod(
        json!([ctr("a", json!({"cpu": "250m", "memory": "128Mi"}), json!({"cpu": "500m", "memory": "256Mi"}))]),
        json!([]),
    );
    let c = &p.spec.as_ref().unwrap().containers[0];
    let r = linux_container_resources_for(&p, c, node_mem, false);
    assert_eq!((r.cpu_shares, r.cpu_period, r.cpu_quota), (256, 100_000, 50_000));
    assert_eq!(r.memory_limit_in_bytes, 256 << 20);
    assert!(r.unified.is_empty());
    // Burstable: 1000 - 1000*128Mi/8Gi = 985.
    assert_eq!(r.oom_score_adj, 985);
    let r = linux_container_resources_for(&p, c, node_mem, true);
    assert_eq!(r.unified.get("memory.oom.group").map(String::as_str), Some("1"));

    // Only a CPU limit: shares from the limit.
    let p = pod(json!([ctr("a", json!({}), json!({"cpu": "2"}))]), json!([]));
    let r = linux_container_resources_for(&p, &p.spec.as_ref().unwrap().containers[0], node_mem, false);
    assert_eq!((r.cpu_shares, r.cpu_quota, r.memory_limit_in_bytes), (2048, 200_000, 0));

    // BestEffort: minimal shares, no quota, score 1000.
    let p = pod(json!([ctr("a", json!({}), json!({}))]), json!([]));
    let r = linux_container_resources_for(&p, &p.spec.as_ref().unwrap().containers[0], node_mem, false);
    assert_eq!((r.cpu_shares, r.cpu_period, r.cpu_quota, r.oom_score_adj), (2, 100_000, 0, 1000));
}

#[test]
fn oom_score_adj_by_qos_with_burstable_bounds() {
    let mem = 4_000_000_000i64;
    let guaranteed =
        pod(json!([ctr("a", json!({"cpu": "1", "memory": "1G"}), json!({"cpu": "1", "memory": "1G"}))]), json!([]));
    assert_eq!(oom_score_adj(&guaranteed, &guaranteed.spec.as_ref().unwrap().containers[0], mem), -997);
    // Requesting all memory: clamped to 3 (above Guaranteed's effective 3-1000).
    let all = pod(json!([ctr("a", json!({"memory": "4G"}), json!({}))]), json!([]));
    assert_eq!(oom_score_adj(&all, &all.spec.as_ref().unwrap().containers[0], mem), 3);
    let more = pod(json!([ctr("a", json!({"memory": "10G"}), json!({}))]), json!([]));
    assert_eq!(oom_score_adj(&more, &more.spec.as_ref().unwrap().containers[0], mem), 3);
    // A tiny request would be 1000: one below BestEffort.
    let tiny = pod(json!([ctr("a", json!({"memory": "1"}), json!({}))]), json!([]));
    assert_eq!(oom_score_adj(&tiny, &tiny.spec.as_ref().unwrap().containers[0], mem), 999);
    // Burstable container without memory request in a burstable pod.
    let p =
        pod(json!([ctr("a", json!({"cpu": "1"}), json!({})), ctr("b", json!({"memory": "1G"}), json!({}))]), json!([]));
    let cs = &p.spec.as_ref().unwrap().containers;
    assert_eq!(oom_score_adj(&p, &cs[0], mem), 999);
    assert_eq!(oom_score_adj(&p, &cs[1], mem), 750);
    // Node-critical pods are treated as Guaranteed.
    let mut critical = p.clone();
    let spec = critical.spec.as_mut().unwrap();
    spec.priority = Some(2_000_001_000);
    spec.priority_class_name = Some("system-node-critical".into());
    assert_eq!(oom_score_adj(&critical, &cs[0], mem), -997);
}

#[test]
fn sidecar_oom_score_does_not_exceed_smallest_app_request() {
    let mem = 4_000_000_000i64;
    let mut sidecar = ctr("side", json!({"memory": "100M"}), json!({}));
    sidecar["restartPolicy"] = json!("Always");
    let p = pod(
        json!([ctr("a", json!({"memory": "2G"}), json!({})), ctr("b", json!({"memory": "1G"}), json!({}))]),
        json!([sidecar]),
    );
    let side = &p.spec.as_ref().unwrap().init_containers.as_ref().unwrap()[0];
    // Own score 975, the smallest app request (1G) scores 750: the sidecar gets 750.
    assert_eq!(oom_score_adj(&p, side, mem), 750);
}

#[test]
fn pod_cgroup_parent_is_per_node_and_qos() {
    let burstable = pod(json!([ctr("a", json!({"memory": "1Mi"}), json!({}))]), json!([]));
    let besteffort = pod(json!([ctr("a", json!({}), json!({}))]), json!([]));
    let guaranteed =
        pod(json!([ctr("a", json!({"cpu": "1", "memory": "1G"}), json!({"cpu": "1", "memory": "1G"}))]), json!([]));
    assert_eq!(
        pod_cgroup_parent("n1", &burstable, CgroupDriver::Cgroupfs),
        "/rkube-n1/kubepods/burstable/pod1234-5678"
    );
    assert_eq!(
        pod_cgroup_parent("n1", &besteffort, CgroupDriver::Cgroupfs),
        "/rkube-n1/kubepods/besteffort/pod1234-5678"
    );
    assert_eq!(pod_cgroup_parent("n1", &guaranteed, CgroupDriver::Cgroupfs), "/rkube-n1/kubepods/pod1234-5678");
    assert_eq!(
        pod_cgroup_parent("node-a.example", &burstable, CgroupDriver::Systemd),
        "rkube_node_a_example-kubepods-burstable-pod1234_5678.slice"
    );
    assert_eq!(
        pod_systemd_slice_path("n1", "u-1", "Guaranteed"),
        "rkube_n1.slice/rkube_n1-kubepods.slice/rkube_n1-kubepods-podu_1.slice"
    );
}

#[test]
fn cgroup_mounts_from_mountinfo() {
    let mountinfo = "\
25 30 0:22 / /sys rw,nosuid - sysfs sysfs rw
31 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct
32 25 0:27 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
33 25 0:28 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw
34 25 0:27 /docker/abc /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
35 25 0:29 / /mnt/with\\040space rw - cgroup cgroup rw,pids
";
    let m = cgroup_mounts(mountinfo);
    let points: Vec<_> = m.iter().map(|(r, p)| (r.as_str(), p.to_str().unwrap())).collect();
    assert_eq!(
        points,
        vec![
            ("/", "/sys/fs/cgroup/cpu,cpuacct"),
            ("/", "/sys/fs/cgroup/memory"),
            ("/", "/sys/fs/cgroup/unified"),
            ("/", "/mnt/with space"),
        ]
    );
    assert_eq!(cgroup_dir("/", Path::new("/m"), "a/b"), Some(PathBuf::from("/m/a/b")));
    assert_eq!(cgroup_dir("/docker/abc", Path::new("/m"), "docker/abc/a"), Some(PathBuf::from("/m/a")));
    assert_eq!(cgroup_dir("/docker/abc", Path::new("/m"), "a"), None);
    assert_eq!(cgroup_dir("/docker/abc", Path::new("/m"), "docker/abcd/a"), None);
}

#[test]
fn remove_cgroup_dir_removes_leaf_first_and_tolerates_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let pod_dir = tmp.path().join(pod_cgroup_path("n1", "u1", "Burstable"));
    std::fs::create_dir_all(pod_dir.join("c1")).unwrap();
    std::fs::create_dir_all(pod_dir.join("c2/nested")).unwrap();
    remove_cgroup_dir(&pod_dir);
    assert!(!pod_dir.exists());
    assert!(pod_dir.parent().unwrap().exists(), "only the pod's cgroup goes");
    remove_cgroup_dir(&pod_dir); // missing: no panic
                                 // A cgroup that cannot be removed (here: a non-empty dir) is left, its siblings removed.
    std::fs::create_dir_all(pod_dir.join("busy")).unwrap();
    std::fs::create_dir_all(pod_dir.join("free")).unwrap();
    std::fs::write(pod_dir.join("busy/file"), "x").unwrap();
    remove_cgroup_dir(&pod_dir);
    assert!(pod_dir.join("busy").exists());
    assert!(!pod_dir.join("free").exists());
}
