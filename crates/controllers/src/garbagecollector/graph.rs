//! The ownerReferences graph (upstream `graph.go` + `graph_builder.go`):
//! one node per object uid seen by the monitors, plus "virtual" nodes for
//! owners referenced but not (yet) observed. Every change of an object
//! becomes an [`Event`]; [`Graph::process`] applies it and says which
//! uids the attemptToDelete and attemptToOrphan workers must look at and
//! which `OwnerRefInvalidNamespace` events to record.

use std::collections::{HashMap, HashSet};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

/// `metav1.FinalizerOrphanDependents`.
pub const FINALIZER_ORPHAN: &str = "orphan";
/// `metav1.FinalizerDeleteDependents`.
pub const FINALIZER_FOREGROUND: &str = "foregroundDeletion";

/// An object's coordinates (upstream `objectReference`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Identity {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// Its namespace; empty for cluster-scoped objects (and for virtual
    /// owners, the referencing dependent's namespace).
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid`.
    pub uid: String,
}

impl Identity {
    /// The identity an owner reference gives, in `namespace`.
    pub fn of_owner(r: &OwnerReference, namespace: &str) -> Identity {
        Identity {
            api_version: r.api_version.clone(),
            kind: r.kind.clone(),
            namespace: namespace.to_string(),
            name: r.name.clone(),
            uid: r.uid.clone(),
        }
    }

    /// An `ObjectReference` for events.
    pub fn reference(&self) -> ObjectReference {
        ObjectReference {
            api_version: Some(self.api_version.clone()),
            kind: Some(self.kind.clone()),
            namespace: (!self.namespace.is_empty()).then(|| self.namespace.clone()),
            name: Some(self.name.clone()),
            uid: Some(self.uid.clone()),
            ..Default::default()
        }
    }
}

/// Upstream's `objectReference.String()`.
impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "[{}/{}, namespace: {}, name: {}, uid: {}]",
            self.api_version, self.kind, self.namespace, self.name, self.uid
        )
    }
}

/// What the graph keeps of an object.
#[derive(Clone, Debug, Default)]
pub struct ObjectMeta {
    /// Who it is.
    pub identity: Identity,
    /// `metadata.ownerReferences`.
    pub owners: Vec<OwnerReference>,
    /// `metadata.finalizers`.
    pub finalizers: Vec<String>,
    /// Whether `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// `metadata.resourceVersion`.
    pub resource_version: String,
}

impl ObjectMeta {
    fn has(&self, finalizer: &str) -> bool {
        self.finalizers.iter().any(|f| f == finalizer)
    }
    /// Being deleted with the `orphan` finalizer.
    pub fn waits_for_orphaning(&self) -> bool {
        self.deleting && self.has(FINALIZER_ORPHAN)
    }
    /// Being deleted with the `foregroundDeletion` finalizer.
    pub fn waits_for_dependents(&self) -> bool {
        self.deleting && self.has(FINALIZER_FOREGROUND)
    }
}

/// A graph node.
#[derive(Clone, Debug, Default)]
pub struct Node {
    /// Coordinates (for virtual nodes: as the first dependent referred to it).
    pub identity: Identity,
    /// Its owner references (empty for virtual nodes).
    pub owners: Vec<OwnerReference>,
    /// The uids of objects that list it as an owner.
    pub dependents: HashSet<String>,
    /// `deletionTimestamp` is set.
    pub being_deleted: bool,
    /// Being deleted in the foreground: waits for blocking dependents.
    pub deleting_dependents: bool,
    /// Referenced but not observed by any monitor yet.
    pub virtual_: bool,
    /// Its finalizers, as last observed.
    pub finalizers: Vec<String>,
    /// Its resourceVersion, as last observed (empty for virtual nodes).
    pub resource_version: String,
}

/// A change the monitors (or the workers) report.
#[derive(Clone, Debug)]
pub enum Event {
    /// Added or updated.
    Upsert(ObjectMeta),
    /// Deleted (observed by a monitor).
    Delete(Identity),
    /// A worker's live GET found `identity` absent.
    VirtualDelete(Identity),
}

/// What [`Graph::process`] asks for.
#[derive(Debug, Default, PartialEq)]
pub struct Work {
    /// uids for attemptToDelete.
    pub attempt_to_delete: Vec<String>,
    /// uids for attemptToOrphan.
    pub attempt_to_orphan: Vec<String>,
    /// `(dependent, invalid owner identity)` for `OwnerRefInvalidNamespace` events.
    pub invalid_namespace: Vec<(Identity, Identity)>,
    /// Identities now known to be absent.
    pub absent: Vec<Identity>,
}

/// The graph.
#[derive(Default)]
pub struct Graph {
    nodes: HashMap<String, Node>,
}

fn blocks(r: &OwnerReference) -> bool {
    r.block_owner_deletion == Some(true)
}

fn ref_matches(r: &OwnerReference, id: &Identity) -> bool {
    r.uid == id.uid && r.name == id.name && r.kind == id.kind && r.api_version == id.api_version
}

impl Graph {
    /// A copy of the node of `uid`.
    pub fn node(&self, uid: &str) -> Option<Node> {
        self.nodes.get(uid).cloned()
    }

    /// How many nodes there are.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the graph is empty.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The uids of observed nodes of `api_version`/`kind` (for relists).
    pub fn observed_of(&self, api_version: &str, kind: &str) -> Vec<Identity> {
        self.nodes
            .values()
            .filter(|n| !n.virtual_ && n.identity.api_version == api_version && n.identity.kind == kind)
            .map(|n| n.identity.clone())
            .collect()
    }

    /// The dependents of `uid` whose reference to it has
    /// `blockOwnerDeletion: true` (upstream `blockingDependents`).
    pub fn blocking_dependents(&self, uid: &str) -> Vec<Node> {
        let Some(n) = self.nodes.get(uid) else { return Vec::new() };
        n.dependents
            .iter()
            .filter_map(|d| self.nodes.get(d))
            .filter(|d| d.owners.iter().any(|o| o.uid == uid && blocks(o)))
            .cloned()
            .collect()
    }

    /// Marks the node of `uid` as waiting for its dependents (a worker saw
    /// the live foreground finalizer before the monitor did).
    pub fn mark_deleting_dependents(&mut self, uid: &str) {
        if let Some(n) = self.nodes.get_mut(uid) {
            n.deleting_dependents = true;
        }
    }

    /// Applies `event`.
    pub fn process(&mut self, event: Event) -> Work {
        let mut work = Work::default();
        match event {
            Event::Upsert(meta) => self.upsert(meta, &mut work),
            Event::Delete(id) => {
                if self.nodes.contains_key(&id.uid) {
                    self.remove(&id, &mut work);
                }
            }
            Event::VirtualDelete(id) => self.virtual_delete(id, &mut work),
        }
        work
    }

    fn upsert(&mut self, meta: ObjectMeta, work: &mut Work) {
        let uid = meta.identity.uid.clone();
        let old = self.nodes.get(&uid).cloned();
        match old {
            None => {
                let node = Node {
                    identity: meta.identity.clone(),
                    owners: meta.owners.clone(),
                    dependents: HashSet::new(),
                    being_deleted: meta.deleting,
                    deleting_dependents: meta.waits_for_dependents(),
                    virtual_: false,
                    finalizers: meta.finalizers.clone(),
                    resource_version: meta.resource_version.clone(),
                };
                self.nodes.insert(uid.clone(), node);
                self.add_dependent_to_owners(&meta.identity, &meta.owners, work);
                self.transitions(None, &meta, work);
            }
            Some(existing) => {
                let mut node = existing.clone();
                if existing.virtual_ {
                    // First observation of a node created for a reference.
                    node.virtual_ = false;
                    if existing.identity != meta.identity {
                        for dep_uid in &existing.dependents {
                            let Some(dep) = self.nodes.get(dep_uid) else { continue };
                            let matching = dep.owners.iter().any(|o| o.uid == uid && ref_matches(o, &meta.identity))
                                && (meta.identity.namespace.is_empty()
                                    || dep.identity.namespace == meta.identity.namespace);
                            if matching {
                                continue;
                            }
                            if !meta.identity.namespace.is_empty() && dep.identity.namespace != meta.identity.namespace
                            {
                                if let Some(r) = dep.owners.iter().find(|o| o.uid == uid) {
                                    work.invalid_namespace
                                        .push((dep.identity.clone(), Identity::of_owner(r, &dep.identity.namespace)));
                                }
                            }
                            work.attempt_to_delete.push(dep_uid.clone());
                        }
                    }
                    node.identity = meta.identity.clone();
                }
                // Owner reference changes.
                let old_owners: HashMap<&str, &OwnerReference> =
                    existing.owners.iter().map(|o| (o.uid.as_str(), o)).collect();
                let new_owners: HashMap<&str, &OwnerReference> =
                    meta.owners.iter().map(|o| (o.uid.as_str(), o)).collect();
                let added: Vec<OwnerReference> =
                    meta.owners.iter().filter(|o| !old_owners.contains_key(o.uid.as_str())).cloned().collect();
                let removed: Vec<OwnerReference> =
                    existing.owners.iter().filter(|o| !new_owners.contains_key(o.uid.as_str())).cloned().collect();
                // Owners that may stop waiting: removed, or no longer blocked by this one.
                let mut unblocked: Vec<String> = removed.iter().filter(|o| blocks(o)).map(|o| o.uid.clone()).collect();
                for o in &meta.owners {
                    if let Some(prev) = old_owners.get(o.uid.as_str()) {
                        if blocks(prev) && !blocks(o) {
                            unblocked.push(o.uid.clone());
                        }
                    }
                }
                for owner in unblocked {
                    if self.nodes.get(&owner).is_some_and(|n| n.deleting_dependents) {
                        work.attempt_to_delete.push(owner);
                    }
                }
                node.owners = meta.owners.clone();
                node.being_deleted = meta.deleting;
                node.finalizers = meta.finalizers.clone();
                node.resource_version = meta.resource_version.clone();
                self.nodes.insert(uid.clone(), node);
                for o in &removed {
                    if let Some(owner) = self.nodes.get_mut(&o.uid) {
                        owner.dependents.remove(&uid);
                    }
                }
                self.add_dependent_to_owners(&meta.identity, &added, work);
                let before = ObjectMeta {
                    identity: existing.identity.clone(),
                    owners: existing.owners.clone(),
                    finalizers: if existing.deleting_dependents { vec![FINALIZER_FOREGROUND.into()] } else { vec![] },
                    deleting: existing.being_deleted,
                    resource_version: existing.resource_version.clone(),
                };
                self.transitions(if existing.virtual_ { None } else { Some(&before) }, &meta, work);
            }
        }
    }

    /// Upstream `addDependentToOwners`: links the dependent, creating
    /// virtual owners (queued for verification) and queuing the dependent
    /// when a reference looks invalid.
    fn add_dependent_to_owners(&mut self, dep: &Identity, owners: &[OwnerReference], work: &mut Work) {
        let mut suspicious = false;
        for o in owners {
            match self.nodes.get_mut(&o.uid) {
                None => {
                    let mut node =
                        Node { identity: Identity::of_owner(o, &dep.namespace), virtual_: true, ..Default::default() };
                    node.dependents.insert(dep.uid.clone());
                    self.nodes.insert(o.uid.clone(), node);
                    work.attempt_to_delete.push(o.uid.clone());
                }
                Some(owner) => {
                    owner.dependents.insert(dep.uid.clone());
                    let owner_ns = &owner.identity.namespace;
                    if !owner_ns.is_empty() && *owner_ns != dep.namespace {
                        if !owner.virtual_ {
                            work.invalid_namespace.push((dep.clone(), Identity::of_owner(o, &dep.namespace)));
                        }
                        suspicious = true;
                    } else if !ref_matches(o, &owner.identity)
                        // A virtual cluster-scoped owner referenced from a namespace may
                        // be a namespaced object a cluster-scoped child named wrongly.
                        || (owner_ns.is_empty() && owner.virtual_ && !dep.namespace.is_empty())
                    {
                        suspicious = true;
                    }
                }
            }
        }
        if suspicious {
            work.attempt_to_delete.push(dep.uid.clone());
        }
    }

    /// Upstream `processTransitions`.
    fn transitions(&mut self, old: Option<&ObjectMeta>, new: &ObjectMeta, work: &mut Work) {
        let uid = &new.identity.uid;
        if new.waits_for_orphaning() && !old.is_some_and(|o| o.waits_for_orphaning()) {
            work.attempt_to_orphan.push(uid.clone());
        }
        if new.waits_for_dependents() && !old.is_some_and(|o| o.waits_for_dependents()) {
            if let Some(n) = self.nodes.get_mut(uid) {
                n.deleting_dependents = true;
                work.attempt_to_delete.extend(n.dependents.iter().cloned());
            }
            work.attempt_to_delete.push(uid.clone());
        }
    }

    fn remove(&mut self, id: &Identity, work: &mut Work) {
        let Some(node) = self.nodes.remove(&id.uid) else { return };
        for o in &node.owners {
            if let Some(owner) = self.nodes.get_mut(&o.uid) {
                owner.dependents.remove(&id.uid);
                if owner.deleting_dependents {
                    work.attempt_to_delete.push(o.uid.clone());
                }
                // A virtual owner nobody refers to any more is forgotten.
                if owner.virtual_ && owner.dependents.is_empty() {
                    self.nodes.remove(&o.uid);
                }
            }
        }
        if !node.dependents.is_empty() {
            work.absent.push(id.clone());
        }
        let mut deps: Vec<String> = node.dependents.into_iter().collect();
        deps.sort();
        work.attempt_to_delete.extend(deps);
    }

    fn virtual_delete(&mut self, id: Identity, work: &mut Work) {
        let Some(existing) = self.nodes.get(&id.uid).cloned() else { return };
        if existing.virtual_ || existing.identity == id {
            self.remove(&id, work);
            return;
        }
        // An observed object answered to other coordinates: only the
        // dependents that used the absent ones are affected.
        let matching: Vec<String> = existing
            .dependents
            .iter()
            .filter(|d| {
                self.nodes.get(*d).is_some_and(|dep| {
                    dep.identity.namespace == id.namespace && dep.owners.iter().any(|o| ref_matches(o, &id))
                })
            })
            .cloned()
            .collect();
        if !matching.is_empty() {
            work.absent.push(id);
            work.attempt_to_delete.extend(matching);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(kind: &str, ns: &str, name: &str, uid: &str) -> Identity {
        Identity {
            api_version: "v1".into(),
            kind: kind.into(),
            namespace: ns.into(),
            name: name.into(),
            uid: uid.into(),
        }
    }

    fn owner_ref(owner: &Identity, block: bool) -> OwnerReference {
        OwnerReference {
            api_version: owner.api_version.clone(),
            kind: owner.kind.clone(),
            name: owner.name.clone(),
            uid: owner.uid.clone(),
            block_owner_deletion: block.then_some(true),
            ..Default::default()
        }
    }

    fn meta(identity: Identity, owners: Vec<OwnerReference>) -> ObjectMeta {
        ObjectMeta { identity, owners, ..Default::default() }
    }

    #[test]
    fn unobserved_owner_becomes_a_virtual_node_to_verify() {
        let mut g = Graph::default();
        let owner = id("ConfigMap", "ns", "o", "u-o");
        let w = g.process(Event::Upsert(meta(id("Secret", "ns", "d", "u-d"), vec![owner_ref(&owner, false)])));
        assert_eq!(w.attempt_to_delete, ["u-o"]);
        assert!(g.node("u-o").unwrap().virtual_);
        // Observed later: the virtual node becomes real, no extra work.
        let w = g.process(Event::Upsert(meta(owner.clone(), vec![])));
        assert_eq!(w, Work::default());
        assert!(!g.node("u-o").unwrap().virtual_);
        // Owner deleted: its dependents are looked at and it is remembered absent.
        let w = g.process(Event::Delete(owner.clone()));
        assert_eq!(w.attempt_to_delete, ["u-d"]);
        assert_eq!(w.absent, [owner]);
    }

    #[test]
    fn foreground_owner_queues_its_dependents_then_itself_when_one_goes() {
        let mut g = Graph::default();
        let owner = id("ConfigMap", "ns", "o", "u-o");
        g.process(Event::Upsert(meta(owner.clone(), vec![])));
        g.process(Event::Upsert(meta(id("Secret", "ns", "d", "u-d"), vec![owner_ref(&owner, true)])));
        let mut deleting = meta(owner.clone(), vec![]);
        deleting.deleting = true;
        deleting.finalizers = vec![FINALIZER_FOREGROUND.into()];
        let w = g.process(Event::Upsert(deleting.clone()));
        assert_eq!(w.attempt_to_delete, ["u-d", "u-o"]);
        assert_eq!(g.blocking_dependents("u-o").len(), 1);
        // The same state again is no transition.
        assert_eq!(g.process(Event::Upsert(deleting)).attempt_to_delete, Vec::<String>::new());
        let w = g.process(Event::Delete(id("Secret", "ns", "d", "u-d")));
        assert_eq!(w.attempt_to_delete, ["u-o"]);
        assert!(g.blocking_dependents("u-o").is_empty());
    }

    #[test]
    fn orphan_finalizer_queues_the_owner_for_orphaning() {
        let mut g = Graph::default();
        let mut m = meta(id("ConfigMap", "ns", "o", "u-o"), vec![]);
        g.process(Event::Upsert(m.clone()));
        m.deleting = true;
        m.finalizers = vec![FINALIZER_ORPHAN.into()];
        assert_eq!(g.process(Event::Upsert(m)).attempt_to_orphan, ["u-o"]);
    }

    // Upstream graph_builder: a dependent whose observed owner lives in
    // another namespace is reported (OwnerRefInvalidNamespace) and verified.
    #[test]
    fn owner_in_another_namespace_is_reported_and_the_dependent_verified() {
        let mut g = Graph::default();
        let owner = id("ConfigMap", "a", "o", "u-o");
        g.process(Event::Upsert(meta(owner.clone(), vec![])));
        let dep = id("Secret", "b", "d", "u-d");
        let w = g.process(Event::Upsert(meta(dep.clone(), vec![owner_ref(&owner, false)])));
        assert_eq!(w.attempt_to_delete, ["u-d"]);
        assert_eq!(w.invalid_namespace, [(dep, id("ConfigMap", "b", "o", "u-o"))]);
        assert_eq!(w.invalid_namespace[0].1.to_string(), "[v1/ConfigMap, namespace: b, name: o, uid: u-o]");
    }

    #[test]
    fn removing_a_blocking_reference_unblocks_a_waiting_owner() {
        let mut g = Graph::default();
        let owner = id("ConfigMap", "ns", "o", "u-o");
        let mut om = meta(owner.clone(), vec![]);
        om.deleting = true;
        om.finalizers = vec![FINALIZER_FOREGROUND.into()];
        g.process(Event::Upsert(om));
        let dep = id("Secret", "ns", "d", "u-d");
        g.process(Event::Upsert(meta(dep.clone(), vec![owner_ref(&owner, true)])));
        let w = g.process(Event::Upsert(meta(dep, vec![])));
        assert_eq!(w.attempt_to_delete, ["u-o"]);
        assert!(g.node("u-o").unwrap().dependents.is_empty());
    }

    #[test]
    fn virtual_delete_removes_a_virtual_owner_and_queues_dependents() {
        let mut g = Graph::default();
        let owner = id("ConfigMap", "ns", "o", "u-o");
        g.process(Event::Upsert(meta(id("Secret", "ns", "d", "u-d"), vec![owner_ref(&owner, false)])));
        let w = g.process(Event::VirtualDelete(owner.clone()));
        assert_eq!(w.attempt_to_delete, ["u-d"]);
        assert!(g.node("u-o").is_none());
    }
}
