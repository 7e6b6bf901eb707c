use super::*;
use k8s_openapi::api::core::v1::PodSpec;

fn pod(name: &str, priority: Option<i32>, grace: Option<i64>) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = Some(name.into());
    p.spec = Some(PodSpec { priority, termination_grace_period_seconds: grace, ..Default::default() });
    p
}

fn names(group: &[&Pod]) -> Vec<String> {
    group.iter().map(|p| p.metadata.name.clone().unwrap()).collect()
}

#[test]
fn shutdown_groups_follow_upstreams_migrate_config() {
    let secs = Duration::from_secs;
    let c = ShutdownConfig::new(secs(30), secs(10)).unwrap();
    assert!(c.enabled());
    assert_eq!(
        c.groups(),
        [
            PriorityGroup { priority: 0, grace_seconds: 20 },
            PriorityGroup { priority: 2_000_000_000, grace_seconds: 10 }
        ]
    );
    assert_eq!(c.period_requested(), secs(30));
    // All of it for critical pods: the default group gets nothing.
    let c = ShutdownConfig::new(secs(10), secs(10)).unwrap();
    assert_eq!(c.groups()[0].grace_seconds, 0);
    // 0 disables the manager.
    assert!(!ShutdownConfig::default().enabled());
    assert!(ShutdownConfig::default().groups().is_empty());
    assert!(!ShutdownConfig::new(secs(0), secs(0)).unwrap().enabled());
}

#[test]
fn shutdown_flags_are_validated_with_upstreams_messages() {
    let secs = Duration::from_secs;
    assert_eq!(
        ShutdownConfig::new(secs(1), secs(2)).unwrap_err(),
        "invalid configuration: shutdownGracePeriodCriticalPods 2s must be <= shutdownGracePeriod 1s"
    );
    assert_eq!(
        ShutdownConfig::new(Duration::from_millis(1), secs(0)).unwrap_err(),
        "invalid configuration: shutdownGracePeriod 1ms must be either zero or otherwise >= 1 sec"
    );
    assert_eq!(
        ShutdownConfig::new(secs(5), Duration::from_millis(500)).unwrap_err(),
        "invalid configuration: shutdownGracePeriodCriticalPods 500ms must be either zero or otherwise >= 1 sec"
    );
}

#[test]
fn shutdown_pods_are_grouped_by_priority_as_upstream() {
    let c = ShutdownConfig::new(Duration::from_secs(20), Duration::from_secs(8)).unwrap();
    let pods = vec![
        pod("no-priority", None, None),
        pod("negative", Some(-5), None),
        pod("high-user", Some(1_000_000_000), None),
        pod("cluster-critical", Some(2_000_000_000), None),
        pod("node-critical", Some(2_000_001_000), None),
    ];
    let groups = group_by_priority(&c.groups(), &pods);
    assert_eq!(names(&groups[0]), ["no-priority", "negative", "high-user"]);
    assert_eq!(names(&groups[1]), ["cluster-critical", "node-critical"]);
    assert!(group_by_priority(&[], &pods).is_empty());
}

#[test]
fn shutdown_pod_grace_is_the_smaller_of_its_own_and_the_groups() {
    // The group's period (20 - 8 = 12 s) caps a 60 s pod; a 5 s pod keeps its own.
    assert_eq!(pod_grace_seconds(&pod("long", None, Some(60)), 12), 12);
    assert_eq!(pod_grace_seconds(&pod("short", None, Some(5)), 12), 5);
    assert_eq!(pod_grace_seconds(&pod("equal", None, Some(12)), 12), 12);
    assert_eq!(pod_grace_seconds(&pod("unset", None, None), 8), 8);
    assert_eq!(pod_grace_seconds(&pod("zero", None, Some(0)), 8), 0);
}

#[test]
fn shutdown_status_patch_fails_the_pod_as_upstream() {
    let p = shutdown_status_patch(Some("Running"), "2026-12-02T10:00:00Z");
    let s = &p["status"];
    assert_eq!(s["phase"], "Failed");
    assert_eq!(s["reason"], "Terminated");
    assert_eq!(s["message"], "Pod was terminated in response to imminent node shutdown.");
    let c = &s["conditions"][0];
    assert_eq!(c["type"], "DisruptionTarget");
    assert_eq!(c["status"], "True");
    assert_eq!(c["reason"], "TerminationByKubelet");
    assert_eq!(c["message"], "Pod was terminated in response to imminent node shutdown.");
    assert_eq!(c["lastTransitionTime"], "2026-12-02T10:00:00Z");
    // A pod that already succeeded stays Succeeded.
    assert_eq!(shutdown_status_patch(Some("Succeeded"), "x")["status"]["phase"], "Succeeded");
}

#[tokio::test]
async fn shutdown_state_rejects_new_pods_and_wakes_the_status_loop() {
    let state = ShutdownState::default();
    let mut rx = state.subscribe();
    assert_eq!(state.admit(&Pod::default()), Ok(()));
    assert_eq!(state.error(), None);
    state.set(true);
    rx.changed().await.unwrap();
    assert!(*rx.borrow_and_update());
    assert_eq!(state.error(), Some("node is shutting down"));
    let r = state.admit(&Pod::default()).unwrap_err();
    assert_eq!(r.reason, "NodeShutdown");
    assert_eq!(
        crate::pods::admission::rejected_message(&r),
        "Pod was rejected: Pod was rejected as the node is shutting down."
    );
    // Setting the same value again does not wake anyone.
    state.set(true);
    assert!(!rx.has_changed().unwrap());
    state.set(false);
    assert!(rx.has_changed().unwrap());
    assert_eq!(state.admit(&Pod::default()), Ok(()));
}

#[tokio::test]
async fn logind_without_a_system_bus_fails_with_what_happened() {
    // A socket path nobody listens on: the system bus is missing.
    let dir = tempfile::tempdir().unwrap();
    let addr = format!("unix:path={}", dir.path().join("no-bus").display());
    let e = logind::Logind::connect_to(&addr).await.unwrap_err().to_string();
    assert!(e.starts_with("cannot connect to the system D-Bus: "), "{e}");
}
