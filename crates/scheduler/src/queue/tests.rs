use std::collections::HashMap;

use serde_json::json;

use super::*;
use crate::config::Configuration;
use crate::framework::{action, Handle};
use crate::plugins::testing::pod_info;

fn queue(initial: Duration, max: Duration) -> SchedulingQueue {
    let c = Configuration::default();
    let f = Arc::new(Framework::new(&c.profiles[0], &c, &crate::plugins::registry(), Handle::default()).unwrap());
    SchedulingQueue::new(HashMap::from([("default-scheduler".to_string(), f)]), initial, max)
}

fn info(name: &str, spec: serde_json::Value) -> Arc<PodInfo> {
    Arc::new(pod_info(name, spec))
}

fn name(q: &QueuedPodInfo) -> &str {
    q.pod_info.pod.metadata.name.as_deref().unwrap()
}

#[test]
fn active_pods_pop_by_priority_then_arrival() {
    let q = queue(Duration::from_secs(1), Duration::from_secs(10));
    q.add(info("low", json!({"priority": 1})));
    q.add(info("first", json!({"priority": 5})));
    q.add(info("second", json!({"priority": 5})));
    q.add(info("high", json!({"priority": 100})));
    let order: Vec<String> = std::iter::from_fn(|| q.try_pop()).map(|p| name(&p).to_string()).collect();
    assert_eq!(order, vec!["high", "first", "second", "low"]);
}

#[test]
fn backoff_doubles_from_the_initial_to_the_max() {
    let q = queue(Duration::from_secs(1), Duration::from_secs(10));
    let got: Vec<u64> = (1..=6).map(|a| q.backoff_duration(a).as_secs()).collect();
    assert_eq!(got, vec![1, 2, 4, 8, 10, 10]);
}

#[test]
fn gated_pods_wait_until_their_gates_are_removed() {
    let q = queue(Duration::from_secs(1), Duration::from_secs(10));
    let gated = info("g", json!({"schedulingGates": [{"name": "example.com/gate"}]}));
    q.add(gated.clone());
    assert!(q.try_pop().is_none());
    assert_eq!(q.lens(), (0, 0, 1));
    // Cluster events do not release gated pods.
    q.move_all_to_active_or_backoff(ClusterEvent { resource: EventResource::Node, actions: action::ADD });
    assert!(q.try_pop().is_none());
    q.update(&gated.pod, info("g", json!({})));
    assert_eq!(name(&q.try_pop().unwrap()), "g");
}

#[test]
fn unschedulable_pods_move_on_events_their_rejectors_registered() {
    let q = queue(Duration::from_millis(1), Duration::from_millis(1));
    q.add(info("p", json!({})));
    let mut p = q.try_pop().unwrap();
    let cycle = q.scheduling_cycle();
    p.unschedulable_plugins = BTreeSet::from(["TaintToleration"]);
    q.add_unschedulable_if_not_present(p, cycle);
    assert_eq!(q.lens(), (0, 0, 1));
    // A PVC event does not concern TaintToleration.
    q.move_all_to_active_or_backoff(ClusterEvent {
        resource: EventResource::PersistentVolumeClaim,
        actions: action::ADD,
    });
    assert_eq!(q.lens(), (0, 0, 1));
    // A node taint change does.
    std::thread::sleep(Duration::from_millis(5));
    q.move_all_to_active_or_backoff(ClusterEvent { resource: EventResource::Node, actions: action::UPDATE_NODE_TAINT });
    let p = q.try_pop().unwrap();
    assert_eq!(p.attempts, 2);
}

#[test]
fn an_event_during_the_cycle_sends_the_pod_to_backoff() {
    let q = queue(Duration::from_secs(1), Duration::from_secs(10));
    q.add(info("p", json!({})));
    let mut p = q.try_pop().unwrap();
    let cycle = q.scheduling_cycle();
    q.move_all_to_active_or_backoff(ClusterEvent { resource: EventResource::Node, actions: action::ADD });
    p.unschedulable_plugins = BTreeSet::from(["NodeAffinity"]);
    q.add_unschedulable_if_not_present(p, cycle);
    assert_eq!(q.lens(), (0, 1, 0));
    q.flush_backoff_completed();
    assert_eq!(q.lens(), (0, 1, 0), "1 s back-off has not passed");
}

#[test]
fn backoff_completes_and_left_over_unschedulable_pods_are_flushed() {
    let q = queue(Duration::from_millis(1), Duration::from_millis(1));
    q.add(info("err", json!({})));
    let p = q.try_pop().unwrap();
    // No rejecting plugin (an error): back-off.
    q.add_unschedulable_if_not_present(p, q.scheduling_cycle());
    std::thread::sleep(Duration::from_millis(5));
    q.flush_backoff_completed();
    let mut p = q.try_pop().unwrap();
    p.unschedulable_plugins = BTreeSet::from(["NodeName"]);
    q.add_unschedulable_if_not_present(p, q.scheduling_cycle());
    q.flush_unschedulable_left_over(POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION);
    assert_eq!(q.lens(), (0, 0, 1));
    std::thread::sleep(Duration::from_millis(5));
    q.flush_unschedulable_left_over(Duration::from_millis(1));
    assert_eq!(name(&q.try_pop().unwrap()), "err");
}

#[test]
fn deleted_pods_leave_the_queue_and_the_nominator() {
    let q = queue(Duration::from_secs(1), Duration::from_secs(10));
    let p = info("p", json!({}));
    q.add(p.clone());
    q.nominator.add(p.clone(), "n1");
    assert_eq!(q.nominator.nominated_pods_for_node("n1").len(), 1);
    q.delete(&p.pod);
    assert!(q.try_pop().is_none());
    assert!(q.nominator.nominated_pods_for_node("n1").is_empty());
}

#[tokio::test]
async fn pop_waits_for_a_pod_and_ends_when_closed() {
    let q = Arc::new(queue(Duration::from_secs(1), Duration::from_secs(10)));
    let q2 = q.clone();
    let waiter = tokio::spawn(async move { q2.pop().await.map(|(p, _)| name(&p).to_string()) });
    tokio::time::sleep(Duration::from_millis(20)).await;
    q.add(info("late", json!({})));
    assert_eq!(waiter.await.unwrap().as_deref(), Some("late"));
    let q3 = q.clone();
    let waiter = tokio::spawn(async move { q3.pop().await.is_none() });
    tokio::time::sleep(Duration::from_millis(20)).await;
    q.close();
    assert!(waiter.await.unwrap());
}

/// Upstream 1.33 `SchedulerPopFromBackoffQ`: with activeQ empty, Pop takes
/// a rejected pod from backoffQ before its back-off ends (the highest
/// priority first within a window), but never a pod that failed with an
/// error.
#[test]
fn an_empty_active_queue_pops_rejected_pods_from_backoff_but_not_errored_ones() {
    let q = queue(Duration::from_secs(10), Duration::from_secs(10));
    q.add(info("low", json!({"priority": 1})));
    q.add(info("high", json!({"priority": 100})));
    q.add(info("err", json!({})));
    let mut rejected = Vec::new();
    while let Some(p) = q.try_pop() {
        rejected.push(p);
    }
    let cycle = q.scheduling_cycle();
    q.move_all_to_active_or_backoff(ClusterEvent { resource: EventResource::Node, actions: action::ADD });
    for mut p in rejected {
        if name(&p) != "err" {
            p.unschedulable_plugins = BTreeSet::from(["NodeAffinity"]);
        }
        q.add_unschedulable_if_not_present(p, cycle);
    }
    assert_eq!(q.lens(), (0, 3, 0));
    assert_eq!(name(&q.try_pop().unwrap()), "high");
    assert_eq!(name(&q.try_pop().unwrap()), "low");
    assert!(q.try_pop().is_none(), "the errored pod waits out its back-off");
    assert_eq!(q.lens(), (0, 1, 0));
    // A new pod in activeQ still goes first.
    q.add(info("new", json!({})));
    assert_eq!(name(&q.try_pop().unwrap()), "new");
}
