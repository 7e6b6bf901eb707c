//! The taint eviction controller (upstream
//! `pkg/controller/tainteviction/taint_eviction.go`, separate from node
//! lifecycle since 1.29): pods on a node with NoExecute taints they do not
//! all tolerate are deleted at once; pods tolerating them all with a
//! `tolerationSeconds` are deleted when the shortest one runs out (counted
//! from when the controller first saw the taint); pods tolerating them
//! without a limit stay. Removing the taints (or the pod gaining
//! tolerations) cancels a pending deletion.
//!
//! Before deleting, the pod gets the condition `DisruptionTarget` True,
//! reason `DeletionByTaintManager`, message "Taint manager: deleting due
//! to NoExecute taint" through the status subresource; then an ordinary
//! (graceful) delete. Events `TaintManagerEviction` "Marking for deletion
//! Pod <ns>/<name>" and "Cancelling deletion of Pod <ns>/<name>" (Normal).

use std::collections::HashMap;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, ObjectReference, Pod, PodCondition, Taint, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{watcher, WatchStreamExt};
use tokio::time::Instant;

use crate::events;
use crate::runtime::{is_not_found, Ctx, Error, Stop};

/// The controller's name (`--controllers`), also its log component.
pub const NAME: &str = "taint-eviction-controller";
/// It has no older name.
pub const ALIAS: &str = "";
/// The kube-system ServiceAccount it runs as: upstream reuses the node
/// controller's (`ClientOrDie("node-controller")`).
pub const SERVICE_ACCOUNT: &str = "node-controller";
/// Reason of the pod condition and of the events.
pub const EVENT_REASON: &str = "TaintManagerEviction";
/// `reason` of the DisruptionTarget condition.
pub const CONDITION_REASON: &str = "DeletionByTaintManager";
/// `message` of the DisruptionTarget condition.
pub const CONDITION_MESSAGE: &str = "Taint manager: deleting due to NoExecute taint";

/// What to do with a pod on a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// No NoExecute taint, or all tolerated without limit: nothing (cancel
    /// a pending deletion).
    Keep,
    /// Some taint not tolerated: delete now.
    Now,
    /// All tolerated, the shortest `tolerationSeconds` is this long.
    After(Duration),
}

/// Whether `t` tolerates `taint` (upstream `Toleration.ToleratesTaint`):
/// same effect unless the toleration's is empty, same key unless empty,
/// `Exists` any value, `Equal` (or empty) the same value.
pub fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    if let Some(e) = t.effect.as_deref().filter(|e| !e.is_empty()) {
        if e != taint.effect {
            return false;
        }
    }
    if let Some(k) = t.key.as_deref().filter(|k| !k.is_empty()) {
        if k != taint.key {
            return false;
        }
    }
    match t.operator.as_deref().unwrap_or("") {
        "" | "Equal" => t.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or(""),
        "Exists" => true,
        _ => false,
    }
}

/// The node's NoExecute taints.
pub fn no_execute_taints(node: &Node) -> Vec<Taint> {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|t| t.effect == "NoExecute")
        .collect()
}

/// The decision for a pod with `tolerations` on a node with NoExecute
/// `taints` (upstream `GetMatchingTolerations` + `getMinTolerationTime`:
/// the first toleration matching each taint is the one used; a used one
/// with `tolerationSeconds` ≤ 0 means now).
pub fn decide(taints: &[Taint], tolerations: &[Toleration]) -> Decision {
    if taints.is_empty() {
        return Decision::Keep;
    }
    let mut min: Option<i64> = None;
    for taint in taints {
        let Some(t) = tolerations.iter().find(|t| tolerates(t, taint)) else {
            return Decision::Now;
        };
        if let Some(s) = t.toleration_seconds {
            if s <= 0 {
                return Decision::After(Duration::ZERO);
            }
            min = Some(min.map_or(s, |m| m.min(s)));
        }
    }
    match min {
        Some(s) => Decision::After(Duration::from_secs(s as u64)),
        None => Decision::Keep,
    }
}

#[derive(Clone, Copy, Debug)]
enum Work {
    Pending {
        created: Instant,
        fire: Instant,
    },
    /// Ran; kept so the same eviction is not scheduled again until cancelled.
    Fired,
}

struct State {
    ctx: Arc<Ctx>,
    pods: Store<Pod>,
    nodes: Store<Node>,
    /// The NoExecute taints last seen on each tainted node.
    tainted: HashMap<String, Vec<Taint>>,
    /// Each pod's node and tolerations as last seen.
    seen: HashMap<(String, String), (String, Vec<Toleration>)>,
    work: HashMap<(String, String), Work>,
}

/// Runs until `stop`.
pub async fn run(ctx: Arc<Ctx>, stop: Stop) {
    let (pods, pod_writer) = reflector::store();
    let (nodes, node_writer) = reflector::store();
    let pod_events =
        reflector::reflector(pod_writer, watcher(Api::<Pod>::all(ctx.reader.clone()), watcher::Config::default()))
            .default_backoff()
            .touched_objects();
    let node_events =
        reflector::reflector(node_writer, watcher(Api::<Node>::all(ctx.reader.clone()), watcher::Config::default()))
            .default_backoff()
            .touched_objects();
    let mut pod_events = pin!(pod_events);
    let mut node_events = pin!(node_events);
    let mut st = State { ctx, pods, nodes, tainted: HashMap::new(), seen: HashMap::new(), work: HashMap::new() };
    let mut stop_fut = pin!(crate::runtime::stopped(stop));
    tracing::info!(component = NAME, "starting controller");
    loop {
        let next = st
            .work
            .values()
            .filter_map(|w| match w {
                Work::Pending { fire, .. } => Some(*fire),
                Work::Fired => None,
            })
            .min()
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
        tokio::select! {
            _ = &mut stop_fut => break,
            ev = node_events.next() => match ev {
                Some(Ok(node)) => st.node_changed(&node.metadata.name.clone().unwrap_or_default()),
                Some(Err(e)) => tracing::debug!(component = NAME, error = %e, "node watch"),
                None => break,
            },
            ev = pod_events.next() => match ev {
                Some(Ok(pod)) => st.pod_changed(&pod),
                Some(Err(e)) => tracing::debug!(component = NAME, error = %e, "pod watch"),
                None => break,
            },
            _ = tokio::time::sleep_until(next) => st.fire_due(),
        }
    }
    tracing::info!(component = NAME, "controller stopped");
}

fn pod_ref(ns: &str, name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: Some(ns.into()),
        name: Some(name.into()),
        ..Default::default()
    }
}

impl State {
    fn node_changed(&mut self, name: &str) {
        let taints = self.nodes.get(&ObjectRef::new(name)).map(|n| no_execute_taints(&n)).unwrap_or_default();
        let before = self.tainted.get(name).cloned().unwrap_or_default();
        if before == taints {
            return;
        }
        if taints.is_empty() {
            self.tainted.remove(name);
        } else {
            self.tainted.insert(name.to_string(), taints.clone());
        }
        let on_node: Vec<Arc<Pod>> = self
            .pods
            .state()
            .into_iter()
            .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(name))
            .collect();
        for pod in on_node {
            let key =
                (pod.metadata.namespace.clone().unwrap_or_default(), pod.metadata.name.clone().unwrap_or_default());
            let tolerations = pod.spec.as_ref().and_then(|s| s.tolerations.clone()).unwrap_or_default();
            self.process(key, &taints, &tolerations);
        }
    }

    fn pod_changed(&mut self, pod: &Pod) {
        let key = (pod.metadata.namespace.clone().unwrap_or_default(), pod.metadata.name.clone().unwrap_or_default());
        let current = self.pods.get(&ObjectRef::new(&key.1).within(&key.0));
        let Some(current) = current.filter(|p| p.metadata.uid == pod.metadata.uid || pod.metadata.uid.is_none()) else {
            // Deleted.
            self.seen.remove(&key);
            self.cancel(&key, true);
            return;
        };
        let node = current.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default();
        let tolerations = current.spec.as_ref().and_then(|s| s.tolerations.clone()).unwrap_or_default();
        if self.seen.get(&key) == Some(&(node.clone(), tolerations.clone())) {
            return;
        }
        self.seen.insert(key.clone(), (node.clone(), tolerations.clone()));
        if node.is_empty() {
            return;
        }
        let taints = self.tainted.get(&node).cloned().unwrap_or_default();
        self.process(key, &taints, &tolerations);
    }

    /// Upstream `processPodOnNode`.
    fn process(&mut self, key: (String, String), taints: &[Taint], tolerations: &[Toleration]) {
        let now = Instant::now();
        match decide(taints, tolerations) {
            Decision::Keep => self.cancel(&key, true),
            Decision::Now => {
                self.cancel(&key, true);
                self.add(key, now, now);
            }
            Decision::After(d) => {
                let mut start = now;
                if let Some(Work::Pending { created, .. }) = self.work.get(&key) {
                    start = *created;
                    if start + d < now + d {
                        return;
                    }
                    self.cancel(&key, true);
                }
                self.add(key, start, start + d);
            }
        }
    }

    fn add(&mut self, key: (String, String), created: Instant, fire: Instant) {
        self.work.entry(key).or_insert(Work::Pending { created, fire });
    }

    /// Drops the key's work; an event when a deletion was pending.
    fn cancel(&mut self, key: &(String, String), event: bool) {
        if let Some(Work::Pending { .. }) = self.work.remove(key) {
            if event {
                self.ctx.recorder.event_on(
                    pod_ref(&key.0, &key.1),
                    events::NORMAL,
                    EVENT_REASON,
                    format!("Cancelling deletion of Pod {}/{}", key.0, key.1),
                );
            }
        }
    }

    fn fire_due(&mut self) {
        let now = Instant::now();
        let due: Vec<(String, String)> = self
            .work
            .iter()
            .filter(|(_, w)| matches!(w, Work::Pending { fire, .. } if *fire <= now))
            .map(|(k, _)| k.clone())
            .collect();
        for key in due {
            self.work.insert(key.clone(), Work::Fired);
            let ctx = self.ctx.clone();
            tokio::spawn(async move {
                ctx.recorder.event_on(
                    pod_ref(&key.0, &key.1),
                    events::NORMAL,
                    EVENT_REASON,
                    format!("Marking for deletion Pod {}/{}", key.0, key.1),
                );
                // Upstream retries 5 times, 10 ms apart.
                for attempt in 0..5 {
                    match delete_pod(&ctx, &key.0, &key.1).await {
                        Ok(()) => return,
                        Err(e) if attempt == 4 => {
                            tracing::warn!(component = NAME, pod = %format!("{}/{}", key.0, key.1), error = %e, "cannot delete the pod")
                        }
                        Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
                    }
                }
            });
        }
    }
}

/// The pod's status with the DisruptionTarget condition of the taint
/// manager; `None` when it already has exactly that.
pub fn with_disruption_target(pod: &Pod, now: Timestamp) -> Option<Pod> {
    let mut pod = pod.clone();
    let status = pod.status.get_or_insert_with(Default::default);
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    let want = PodCondition {
        type_: "DisruptionTarget".into(),
        status: "True".into(),
        reason: Some(CONDITION_REASON.into()),
        message: Some(CONDITION_MESSAGE.into()),
        last_transition_time: Some(Time(now)),
        ..Default::default()
    };
    match conditions.iter_mut().find(|c| c.type_ == want.type_) {
        Some(c) if c.status == want.status && c.reason == want.reason && c.message == want.message => return None,
        Some(c) => {
            let ltt = if c.status == want.status {
                c.last_transition_time.clone()
            } else {
                want.last_transition_time.clone()
            };
            *c = PodCondition { last_transition_time: ltt, ..want };
        }
        None => conditions.push(want),
    }
    Some(pod)
}

/// Upstream `addConditionAndDeletePod`: the DisruptionTarget condition
/// through the status subresource, then a graceful delete.
async fn delete_pod(ctx: &Ctx, ns: &str, name: &str) -> Result<(), Error> {
    let api = Api::<Pod>::namespaced(ctx.client.clone(), ns);
    let pod = match Api::<Pod>::namespaced(ctx.client.clone(), ns).get_opt(name).await? {
        Some(p) => p,
        None => return Ok(()),
    };
    if let Some(updated) = with_disruption_target(&pod, Timestamp::now()) {
        match api.replace_status(name, &PostParams::default(), &updated).await {
            Ok(_) => {}
            Err(e) if is_not_found(&e) => return Ok(()),
            Err(e) => return Err(e.into()),
        }
    }
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => {
            tracing::info!(component = NAME, pod = %format!("{ns}/{name}"), "deleted the pod (NoExecute taint)");
            Ok(())
        }
        Err(e) if is_not_found(&e) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(key: &str, value: &str) -> Taint {
        Taint { key: key.into(), value: Some(value.into()), effect: "NoExecute".into(), ..Default::default() }
    }

    fn tol(key: &str, op: &str, value: &str, effect: &str, secs: Option<i64>) -> Toleration {
        Toleration {
            key: Some(key.into()),
            operator: Some(op.into()),
            value: Some(value.into()),
            effect: Some(effect.into()),
            toleration_seconds: secs,
        }
    }

    #[test]
    fn toleration_matching_follows_upstream() {
        let t = taint("k", "v");
        assert!(tolerates(&tol("k", "Equal", "v", "NoExecute", None), &t));
        assert!(tolerates(&tol("k", "", "v", "", None), &t));
        assert!(!tolerates(&tol("k", "Equal", "w", "NoExecute", None), &t));
        assert!(tolerates(&tol("k", "Exists", "", "NoExecute", None), &t));
        assert!(!tolerates(&tol("k", "Exists", "", "NoSchedule", None), &t));
        // An empty key with Exists tolerates everything.
        assert!(tolerates(&tol("", "Exists", "", "", None), &t));
        assert!(!tolerates(&tol("j", "Exists", "", "", None), &t));
        assert!(!tolerates(&tol("k", "Lt", "v", "", None), &t));
    }

    #[test]
    fn decisions_follow_upstream_taint_manager_tests() {
        let taints = [taint("a", "1"), taint("b", "2")];
        assert_eq!(decide(&[], &[]), Decision::Keep);
        assert_eq!(decide(&taints, &[]), Decision::Now);
        // Not every taint tolerated: now.
        assert_eq!(decide(&taints, &[tol("a", "Exists", "", "", Some(100))]), Decision::Now);
        // All tolerated forever: kept.
        assert_eq!(decide(&taints, &[tol("", "Exists", "", "", None)]), Decision::Keep);
        // The shortest tolerationSeconds wins.
        let t = [tol("a", "Exists", "", "", Some(100)), tol("b", "Exists", "", "", Some(5))];
        assert_eq!(decide(&taints, &t), Decision::After(Duration::from_secs(5)));
        // Mixed: one limited, one forever.
        let t = [tol("a", "Exists", "", "", None), tol("b", "Exists", "", "", Some(30))];
        assert_eq!(decide(&taints, &t), Decision::After(Duration::from_secs(30)));
        // Zero or negative: right away.
        assert_eq!(decide(&taints[..1], &[tol("a", "Exists", "", "", Some(-1))]), Decision::After(Duration::ZERO));
    }

    #[test]
    fn the_disruption_target_condition_is_added_once() {
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let p = with_disruption_target(&Pod::default(), now).unwrap();
        let c = &p.status.as_ref().unwrap().conditions.as_ref().unwrap()[0];
        assert_eq!(c.type_, "DisruptionTarget");
        assert_eq!(c.reason.as_deref(), Some("DeletionByTaintManager"));
        assert_eq!(c.message.as_deref(), Some("Taint manager: deleting due to NoExecute taint"));
        assert!(with_disruption_target(&p, now).is_none());
    }
}
