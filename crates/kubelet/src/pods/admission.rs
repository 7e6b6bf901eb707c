//! Pod admission on the node and the grace periods the node imposes when it
//! stops pods on its own.
//!
//! Admission follows upstream's kubelet (`canAdmitPod` over its
//! `PodAdmitHandler`s, then `rejectPod`): a pod new to the node is offered to
//! every registered handler in registration order; the first refusal wins,
//! and the pod is never started. Its worker records a Warning event with the
//! refusal's reason and message and reports phase `Failed` with that reason
//! and the message `Pod was rejected: <message>`. Only pods with nothing in
//! the runtime yet are offered: a pod already running when the agent
//! restarts is not re-admitted.
//!
//! Grace overrides are upstream's `killPod(gracePeriodOverride)`: the
//! node-pressure eviction manager and the graceful node shutdown manager
//! stop pods with a grace period of their choosing rather than the pod's
//! own; the pod worker reads the override when it stops a pod the node
//! failed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use k8s_openapi::api::core::v1::Pod;

/// A refusal, as upstream's `PodAdmitResult` (`Admit: false`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// status.reason and the event's reason, e.g. `Evicted` or `NodeShutdown`.
    pub reason: String,
    /// What the pod's status message says after `Pod was rejected: `.
    pub message: String,
}

/// One admission check (upstream's `lifecycle.PodAdmitHandler`).
pub trait AdmitHandler: Send + Sync {
    /// `Ok` when `pod` may start on this node, else why not.
    fn admit(&self, pod: &Pod) -> Result<(), Rejection>;
}

/// The node's admission handlers; cheap to clone (shared).
#[derive(Clone, Default)]
pub struct Admission {
    handlers: Arc<RwLock<Vec<Arc<dyn AdmitHandler>>>>,
}

impl Admission {
    /// Adds a handler; it is asked after the ones registered before it.
    pub fn register(&self, handler: Arc<dyn AdmitHandler>) {
        self.handlers.write().unwrap_or_else(|e| e.into_inner()).push(handler);
    }

    /// Asks every handler in turn; the first refusal is returned.
    pub fn admit(&self, pod: &Pod) -> Result<(), Rejection> {
        let handlers = self.handlers.read().unwrap_or_else(|e| e.into_inner()).clone();
        handlers.iter().try_for_each(|h| h.admit(pod))
    }
}

/// The status message of a rejected pod (upstream's `rejectPod`).
pub fn rejected_message(r: &Rejection) -> String {
    format!("Pod was rejected: {}", r.message)
}

/// Grace periods, in seconds, that the node imposes on pods it stops on its
/// own, by pod UID; cheap to clone (shared).
#[derive(Clone, Default)]
pub struct GraceOverrides(Arc<Mutex<HashMap<String, i64>>>);

impl GraceOverrides {
    /// The pod `uid` is stopped with `seconds` of grace (still at least
    /// upstream's 2 s minimum per container) instead of its own.
    pub fn set(&self, uid: &str, seconds: i64) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).insert(uid.to_string(), seconds);
    }

    /// The override for `uid`, if one was set.
    pub fn get(&self, uid: &str) -> Option<i64> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).get(uid).copied()
    }

    /// Forgets `uid` (its worker ended).
    pub fn remove(&self, uid: &str) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).remove(uid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Refuse(&'static str);
    impl AdmitHandler for Refuse {
        fn admit(&self, _: &Pod) -> Result<(), Rejection> {
            Err(Rejection { reason: self.0.into(), message: format!("{} says no", self.0) })
        }
    }
    struct Accept;
    impl AdmitHandler for Accept {
        fn admit(&self, _: &Pod) -> Result<(), Rejection> {
            Ok(())
        }
    }

    #[test]
    fn the_first_refusal_in_registration_order_wins() {
        let a = Admission::default();
        assert_eq!(a.admit(&Pod::default()), Ok(()));
        a.register(Arc::new(Accept));
        a.register(Arc::new(Refuse("Evicted")));
        a.register(Arc::new(Refuse("NodeShutdown")));
        let r = a.admit(&Pod::default()).unwrap_err();
        assert_eq!(r.reason, "Evicted");
        assert_eq!(rejected_message(&r), "Pod was rejected: Evicted says no");
    }

    #[test]
    fn grace_overrides_are_per_pod_and_forgotten() {
        let g = GraceOverrides::default();
        g.set("u1", 0);
        assert_eq!(g.get("u1"), Some(0));
        assert_eq!(g.get("u2"), None);
        g.clone().remove("u1");
        assert_eq!(g.get("u1"), None);
    }
}
