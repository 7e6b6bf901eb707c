//! The pod informer's bookkeeping for expectations (upstream's
//! `addPod` / `updatePod` / `deletePod` handlers of the ReplicaSet
//! controller), from kube-runtime watcher events.
//!
//! For a pod whose controller is of the tracked kind, keyed by that
//! controller's uid:
//! - first seen (an add, also during a relist) and not being deleted: one
//!   creation observed;
//! - seen with a deletionTimestamp (graceful deletion started), or
//!   deleted: its deletion observed (counted once per pod by
//!   [`Expectations`]);
//! - missing from a relist (deleted while the watch was down): its
//!   deletion observed.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use k8s_openapi::api::core::v1::Pod;
use kube::runtime::watcher;

use super::{adoption, manage};
use crate::expectations::Expectations;

#[derive(Default)]
struct Known {
    /// uid → (pod key, controller uid and name when of the tracked kind).
    pods: HashMap<String, (String, Option<(String, String)>)>,
    /// uid → the name of the controller a pod just left (to sync it too).
    left: HashMap<String, String>,
    /// The uids seen since a relist began.
    relisting: Option<HashSet<String>>,
}

/// Remembers which pods the informer has seen (see the module docs).
pub struct PodTracker {
    kind: &'static str,
    known: Mutex<Known>,
}

impl PodTracker {
    /// A tracker for pods controlled by owners of `kind` (`ReplicaSet`, …).
    pub fn new(kind: &'static str) -> PodTracker {
        PodTracker { kind, known: Mutex::new(Known::default()) }
    }

    /// The uid of the pod's controller if it is of the tracked kind.
    pub fn controller_uid(&self, pod: &Pod) -> Option<String> {
        self.controller(pod).map(|(uid, _)| uid)
    }

    fn controller(&self, pod: &Pod) -> Option<(String, String)> {
        adoption::controller_of(pod.metadata.owner_references.as_ref())
            .filter(|r| r.kind == self.kind)
            .map(|r| (r.uid.clone(), r.name.clone()))
    }

    /// The name of the controller (of the tracked kind) the pod had before
    /// its last event, if that event changed it: upstream's `updatePod`
    /// syncs the old controller too.
    pub fn take_previous_controller(&self, pod: &Pod) -> Option<String> {
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        known.left.remove(pod.metadata.uid.as_deref().unwrap_or(""))
    }

    /// Lowers `expectations` from one informer event.
    pub fn observe(&self, ev: &watcher::Event<Pod>, expectations: &Expectations) {
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        match ev {
            watcher::Event::Init => known.relisting = Some(HashSet::new()),
            watcher::Event::InitApply(pod) | watcher::Event::Apply(pod) => {
                let uid = pod.metadata.uid.clone().unwrap_or_default();
                let key = manage::pod_key(pod);
                let controller = self.controller(pod);
                if let Some(seen) = known.relisting.as_mut() {
                    seen.insert(uid.clone());
                }
                let previous = known.pods.insert(uid.clone(), (key.clone(), controller.clone()));
                let new = previous.is_none();
                if let Some((_, Some((old_uid, old_name)))) = previous {
                    if controller.as_ref().map(|c| &c.0) != Some(&old_uid) {
                        known.left.insert(uid, old_name);
                    }
                }
                if let Some((owner, _)) = controller {
                    if pod.metadata.deletion_timestamp.is_some() {
                        expectations.deletion_observed(&owner, &key);
                    } else if new {
                        expectations.creation_observed(&owner);
                    }
                }
            }
            watcher::Event::Delete(pod) => {
                let uid = pod.metadata.uid.as_deref().unwrap_or("");
                known.pods.remove(uid);
                known.left.remove(uid);
                if let Some(owner) = self.controller_uid(pod) {
                    expectations.deletion_observed(&owner, &manage::pod_key(pod));
                }
            }
            watcher::Event::InitDone => {
                if let Some(seen) = known.relisting.take() {
                    let gone: Vec<String> = known.pods.keys().filter(|u| !seen.contains(*u)).cloned().collect();
                    for uid in gone {
                        known.left.remove(&uid);
                        if let Some((key, Some((owner, _)))) = known.pods.remove(&uid) {
                            expectations.deletion_observed(&owner, &key);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
    use kube::api::ObjectMeta;

    fn pod(name: &str, owner: &str, kind: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                uid: Some(format!("uid-{name}")),
                owner_references: Some(vec![OwnerReference {
                    kind: kind.into(),
                    uid: owner.into(),
                    controller: Some(true),
                    ..Default::default()
                }]),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn adds_count_once_and_other_kinds_are_ignored() {
        let t = PodTracker::new("ReplicaSet");
        let e = Expectations::new();
        e.expect_creations("rs", 2);
        t.observe(&watcher::Event::Apply(pod("a", "rs", "ReplicaSet")), &e);
        // An update of a known pod is not a creation.
        t.observe(&watcher::Event::Apply(pod("a", "rs", "ReplicaSet")), &e);
        t.observe(&watcher::Event::Apply(pod("b", "rs", "StatefulSet")), &e);
        assert_eq!(e.pending("rs"), Some((1, 0)));
        t.observe(&watcher::Event::Apply(pod("c", "rs", "ReplicaSet")), &e);
        assert!(e.satisfied("rs"));
    }

    #[test]
    fn a_pod_leaving_its_controller_names_it_once() {
        let t = PodTracker::new("ReplicaSet");
        let e = Expectations::new();
        let mut p = pod("a", "rs-uid", "ReplicaSet");
        p.metadata.owner_references.as_mut().unwrap()[0].name = "web".into();
        t.observe(&watcher::Event::Apply(p.clone()), &e);
        assert_eq!(t.take_previous_controller(&p), None);
        p.metadata.owner_references = None;
        t.observe(&watcher::Event::Apply(p.clone()), &e);
        assert_eq!(t.take_previous_controller(&p).as_deref(), Some("web"));
        assert_eq!(t.take_previous_controller(&p), None);
    }

    #[test]
    fn deletions_are_seen_at_the_deletion_timestamp_the_delete_or_a_relist() {
        let t = PodTracker::new("ReplicaSet");
        let e = Expectations::new();
        for n in ["a", "b", "c"] {
            t.observe(&watcher::Event::Apply(pod(n, "rs", "ReplicaSet")), &e);
        }
        e.expect_deletions("rs", &["ns/a".into(), "ns/b".into(), "ns/c".into()]);
        let mut terminating = pod("a", "rs", "ReplicaSet");
        terminating.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        t.observe(&watcher::Event::Apply(terminating.clone()), &e);
        t.observe(&watcher::Event::Delete(terminating), &e);
        assert_eq!(e.pending("rs"), Some((0, 2)));
        t.observe(&watcher::Event::Delete(pod("b", "rs", "ReplicaSet")), &e);
        assert_eq!(e.pending("rs"), Some((0, 1)));
        // c vanished while the watch was down: the relist does not list it.
        t.observe(&watcher::Event::Init, &e);
        t.observe(&watcher::Event::InitDone, &e);
        assert!(e.satisfied("rs"));
    }
}
