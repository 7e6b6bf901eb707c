//! The Node authorizer (upstream's `plugin/pkg/auth/authorizer/node`): a
//! kubelet (`system:node:<name>` in `system:nodes`) may read the secrets,
//! configmaps, persistent volume claims and volumes, and create tokens for
//! the service accounts, of the pods bound to its node — nothing else of
//! those kinds — and reads or writes its own Node, Lease and CSINode.
//! Everything else it may do is the static node rule set (the
//! `system:node` role's rules).
//!
//! Instead of upstream's graph, an index from the pods watch: for each
//! node, how many of its pods reference each object. A persistent volume
//! is related through a claim of one of those pods (`spec.volumeName`,
//! read from the claims' watch cache).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use serde_json::Value;

use crate::authn::UserInfo;
use crate::authz::follow::{self, Change};
use crate::authz::rbac::PolicyRule;
use crate::authz::{Attributes, Decision};
use crate::storage::ResourceStore;

/// The group of node identities.
pub const NODES_GROUP: &str = "system:nodes";
/// The user-name prefix of node identities.
pub const NODE_USER_PREFIX: &str = "system:node:";
/// The namespace of node Leases.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// The node a user is (upstream's `NodeIdentity`): `Some("")` for a member
/// of `system:nodes` whose name does not say which node.
pub fn node_name(user: &UserInfo) -> Option<&str> {
    let name = user.name.strip_prefix(NODE_USER_PREFIX)?;
    user.groups.iter().any(|g| g == NODES_GROUP).then_some(name)
}

/// The kinds of objects a pod relates to its node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Vertex {
    /// The pod itself.
    Pod,
    /// A secret it mounts, pulls images with or reads in env.
    Secret,
    /// A configmap it mounts or reads in env.
    ConfigMap,
    /// A claim it mounts (directly or as a generic ephemeral volume).
    Pvc,
    /// Its service account.
    ServiceAccount,
    /// A resource claim it uses.
    ResourceClaim,
}

type ObjectKey = (Vertex, String, String);

#[derive(Default)]
struct Index {
    /// Each indexed pod's node and references, by (namespace, name).
    pods: HashMap<(String, String), (String, Vec<ObjectKey>)>,
    /// Per node: how many of its pods reference each object.
    nodes: HashMap<String, HashMap<ObjectKey, usize>>,
}

impl Index {
    fn remove(&mut self, key: &(String, String)) {
        let Some((node, refs)) = self.pods.remove(key) else { return };
        if let Some(counts) = self.nodes.get_mut(&node) {
            for r in refs {
                if let Some(c) = counts.get_mut(&r) {
                    *c -= 1;
                    if *c == 0 {
                        counts.remove(&r);
                    }
                }
            }
            if counts.is_empty() {
                self.nodes.remove(&node);
            }
        }
    }

    fn upsert(&mut self, pod: &Value) {
        let ns = pod.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("").to_string();
        let name = pod.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_string();
        let key = (ns.clone(), name.clone());
        self.remove(&key);
        let node = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("");
        if node.is_empty() {
            return;
        }
        let refs = pod_references(pod);
        let counts = self.nodes.entry(node.to_string()).or_default();
        for r in &refs {
            *counts.entry(r.clone()).or_default() += 1;
        }
        self.pods.insert(key, (node.to_string(), refs));
    }
}

/// Every object `pod` relates to its node (upstream's `graph.AddPod`).
pub fn pod_references(pod: &Value) -> Vec<ObjectKey> {
    let ns = pod.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("");
    let pod_name = pod.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    let spec = pod.get("spec").cloned().unwrap_or(Value::Null);
    let mut refs: Vec<ObjectKey> = Vec::new();
    let mut add = |v: Vertex, name: Option<&str>| {
        if let Some(n) = name.filter(|n| !n.is_empty()) {
            let k = (v, ns.to_string(), n.to_string());
            if !refs.contains(&k) {
                refs.push(k);
            }
        }
    };
    add(Vertex::Pod, Some(pod_name));
    let str_at = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_string);
    add(Vertex::ServiceAccount, str_at(&spec, "/serviceAccountName").as_deref());
    for s in spec.get("imagePullSecrets").and_then(Value::as_array).into_iter().flatten() {
        add(Vertex::Secret, s.get("name").and_then(Value::as_str));
    }
    for vol in spec.get("volumes").and_then(Value::as_array).into_iter().flatten() {
        add(Vertex::Secret, str_at(vol, "/secret/secretName").as_deref());
        add(Vertex::ConfigMap, str_at(vol, "/configMap/name").as_deref());
        add(Vertex::Pvc, str_at(vol, "/persistentVolumeClaim/claimName").as_deref());
        if vol.get("ephemeral").is_some() {
            let vol_name = vol.get("name").and_then(Value::as_str).unwrap_or("");
            add(Vertex::Pvc, Some(&format!("{pod_name}-{vol_name}")));
        }
        for source in vol.pointer("/projected/sources").and_then(Value::as_array).into_iter().flatten() {
            add(Vertex::Secret, str_at(source, "/secret/name").as_deref());
            add(Vertex::ConfigMap, str_at(source, "/configMap/name").as_deref());
        }
        // Volume plugins that name a secret for their credentials.
        for p in [
            "/csi/nodePublishSecretRef/name",
            "/azureFile/secretName",
            "/cephfs/secretRef/name",
            "/flexVolume/secretRef/name",
            "/iscsi/secretRef/name",
            "/rbd/secretRef/name",
            "/scaleIO/secretRef/name",
            "/storageos/secretRef/name",
        ] {
            add(Vertex::Secret, str_at(vol, p).as_deref());
        }
    }
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        for c in spec.get(list).and_then(Value::as_array).into_iter().flatten() {
            for env in c.get("env").and_then(Value::as_array).into_iter().flatten() {
                add(Vertex::Secret, str_at(env, "/valueFrom/secretKeyRef/name").as_deref());
                add(Vertex::ConfigMap, str_at(env, "/valueFrom/configMapKeyRef/name").as_deref());
            }
            for from in c.get("envFrom").and_then(Value::as_array).into_iter().flatten() {
                add(Vertex::Secret, str_at(from, "/secretRef/name").as_deref());
                add(Vertex::ConfigMap, str_at(from, "/configMapRef/name").as_deref());
            }
        }
    }
    // Resource claims: by name, or the generated name in the status.
    for rc in pod.pointer("/status/resourceClaimStatuses").and_then(Value::as_array).into_iter().flatten() {
        add(Vertex::ResourceClaim, rc.get("resourceClaimName").and_then(Value::as_str));
    }
    for rc in spec.get("resourceClaims").and_then(Value::as_array).into_iter().flatten() {
        add(Vertex::ResourceClaim, rc.get("resourceClaimName").and_then(Value::as_str));
    }
    refs
}

/// The Node authorizer.
pub struct NodeAuthorizer {
    index: RwLock<Index>,
    /// Claims, to relate persistent volumes (`spec.volumeName`).
    claims: Mutex<Option<Arc<ResourceStore>>>,
    rules: Vec<PolicyRule>,
    ready: tokio::sync::watch::Sender<bool>,
}

impl Default for NodeAuthorizer {
    fn default() -> Self {
        NodeAuthorizer::new()
    }
}

impl NodeAuthorizer {
    /// An authorizer with an empty index.
    pub fn new() -> NodeAuthorizer {
        NodeAuthorizer {
            index: RwLock::new(Index::default()),
            claims: Mutex::new(None),
            rules: crate::authz::policy::node_rules(),
            ready: tokio::sync::watch::channel(false).0,
        }
    }

    /// Follows `pods` (and reads `claims` for volumes).
    pub fn start(self: &Arc<Self>, pods: Arc<ResourceStore>, claims: Option<Arc<ResourceStore>>) {
        *self.claims.lock().unwrap_or_else(|e| e.into_inner()) = claims;
        let me = self.clone();
        follow::spawn(pods, "pods", move |changes| me.apply(changes));
    }

    /// Applies a batch of pod changes.
    pub fn apply(&self, changes: &[Change<'_>]) {
        let mut index = self.index.write().unwrap_or_else(|e| e.into_inner());
        for change in changes {
            match change {
                Change::Reset => *index = Index::default(),
                Change::Upsert(pod) => index.upsert(pod),
                Change::Delete(pod) => {
                    let s = |p: &str| pod.pointer(p).and_then(Value::as_str).unwrap_or("").to_string();
                    index.remove(&(s("/metadata/namespace"), s("/metadata/name")));
                }
                Change::Synced => {
                    self.ready.send_replace(true);
                }
            }
        }
    }

    /// Waits (at most `limit`) for the pods' initial state.
    pub async fn wait_ready(&self, limit: std::time::Duration) -> bool {
        let mut rx = self.ready.subscribe();
        if *rx.borrow() {
            return true;
        }
        let ready = tokio::time::timeout(limit, rx.wait_for(|r| *r)).await.is_ok();
        ready
    }

    /// Whether one of `node`'s pods relates to the object.
    pub fn related(&self, node: &str, vertex: Vertex, namespace: &str, name: &str) -> bool {
        let index = self.index.read().unwrap_or_else(|e| e.into_inner());
        let Some(objects) = index.nodes.get(node) else { return false };
        if vertex == Vertex::Pvc && namespace.is_empty() {
            // A persistent volume: bound to a claim of one of the node's pods.
            let claims = self.claims.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let Some(claims) = claims else { return false };
            return objects.keys().filter(|(v, _, _)| *v == Vertex::Pvc).any(|(_, ns, claim)| {
                claims
                    .get_cached(ns, claim)
                    .is_some_and(|c| c.pointer("/spec/volumeName").and_then(Value::as_str) == Some(name))
            });
        }
        objects.contains_key(&(vertex, namespace.to_string(), name.to_string()))
    }

    /// The decision on `attrs` (upstream's `NodeAuthorizer.Authorize`, with
    /// `AuthorizeNodeWithSelectors` on as in 1.33).
    pub fn authorize(&self, attrs: &Attributes) -> (Decision, String) {
        let Some(node) = node_name(&attrs.user) else { return (Decision::NoOpinion, String::new()) };
        if node.is_empty() {
            return (Decision::NoOpinion, format!("unknown node for user \"{}\"", attrs.user.name));
        }
        if attrs.resource_request {
            let decided = match (attrs.api_group.as_str(), attrs.resource.as_str()) {
                ("", "secrets") => Some(self.read_namespaced(node, Vertex::Secret, attrs)),
                ("", "configmaps") => Some(self.read_namespaced(node, Vertex::ConfigMap, attrs)),
                ("", "persistentvolumeclaims") if attrs.subresource == "status" => {
                    Some(self.status_update(node, Vertex::Pvc, attrs))
                }
                ("", "persistentvolumeclaims") => Some(self.get(node, Vertex::Pvc, attrs)),
                ("", "persistentvolumes") => Some(self.get_volume(node, attrs)),
                ("resource.k8s.io", "resourceclaims") => Some(self.get(node, Vertex::ResourceClaim, attrs)),
                ("", "serviceaccounts") => Some(self.create_token(node, attrs)),
                ("coordination.k8s.io", "leases") => Some(lease(node, attrs)),
                ("storage.k8s.io", "csinodes") => Some(csi_node(node, attrs)),
                ("", "nodes") => Some(own_node(node, attrs)),
                ("", "pods") => Some(self.pod(node, attrs)),
                _ => None,
            };
            if let Some(d) = decided {
                return d;
            }
        }
        if self.rules.iter().any(|r| r.allows(attrs)) {
            return (Decision::Allow, String::new());
        }
        (Decision::NoOpinion, String::new())
    }

    fn check(&self, node: &str, vertex: Vertex, attrs: &Attributes) -> (Decision, String) {
        if attrs.name.is_empty() {
            return (Decision::NoOpinion, "No Object name found".into());
        }
        if self.related(node, vertex, &attrs.namespace, &attrs.name) {
            (Decision::Allow, String::new())
        } else {
            (Decision::NoOpinion, format!("no relationship found between node '{node}' and this object"))
        }
    }

    fn read_namespaced(&self, node: &str, vertex: Vertex, attrs: &Attributes) -> (Decision, String) {
        if !matches!(attrs.verb.as_str(), "get" | "list" | "watch") {
            return (Decision::NoOpinion, "can only read resources of this type".into());
        }
        if !attrs.subresource.is_empty() {
            return (Decision::NoOpinion, "cannot read subresource".into());
        }
        if attrs.namespace.is_empty() {
            return (Decision::NoOpinion, "can only read namespaced object of this type".into());
        }
        self.check(node, vertex, attrs)
    }

    fn get(&self, node: &str, vertex: Vertex, attrs: &Attributes) -> (Decision, String) {
        if attrs.verb != "get" {
            return (Decision::NoOpinion, "can only get individual resources of this type".into());
        }
        if !attrs.subresource.is_empty() {
            return (Decision::NoOpinion, "cannot get subresource".into());
        }
        self.check(node, vertex, attrs)
    }

    fn get_volume(&self, node: &str, attrs: &Attributes) -> (Decision, String) {
        // Persistent volumes are cluster-scoped: `related` finds them
        // through the node's claims.
        self.get(node, Vertex::Pvc, attrs)
    }

    fn status_update(&self, node: &str, vertex: Vertex, attrs: &Attributes) -> (Decision, String) {
        if !matches!(attrs.verb.as_str(), "update" | "patch") {
            return (Decision::NoOpinion, "can only get/update/patch this type".into());
        }
        self.check(node, vertex, attrs)
    }

    fn create_token(&self, node: &str, attrs: &Attributes) -> (Decision, String) {
        if attrs.verb != "create" || attrs.name.is_empty() {
            return (Decision::NoOpinion, "can only create tokens for individual service accounts".into());
        }
        if attrs.subresource != "token" {
            return (Decision::NoOpinion, "can only create token subresource of serviceaccount".into());
        }
        self.check(node, Vertex::ServiceAccount, attrs)
    }

    fn pod(&self, node: &str, attrs: &Attributes) -> (Decision, String) {
        match (attrs.subresource.as_str(), attrs.verb.as_str()) {
            ("", "get") => self.get(node, Vertex::Pod, attrs),
            ("", "list" | "watch") => {
                if attrs.field_equals("spec.nodeName") == Some(node) {
                    return (Decision::Allow, String::new());
                }
                if !attrs.name.is_empty() {
                    return self.check(node, Vertex::Pod, attrs);
                }
                (Decision::NoOpinion, "can only list/watch pods with spec.nodeName field selector".into())
            }
            // Mirror pods; NodeRestriction limits them to the node's own.
            ("", "create" | "delete") | ("status", "update" | "patch") | ("eviction", "create") => {
                (Decision::Allow, String::new())
            }
            _ => (Decision::NoOpinion, String::new()),
        }
    }
}

fn lease(node: &str, attrs: &Attributes) -> (Decision, String) {
    if !matches!(attrs.verb.as_str(), "get" | "create" | "update" | "patch" | "delete") {
        return (Decision::NoOpinion, "can only get, create, update, patch, or delete a node lease".into());
    }
    if attrs.namespace != NODE_LEASE_NAMESPACE {
        return (
            Decision::NoOpinion,
            format!("can only access leases in the \"{NODE_LEASE_NAMESPACE}\" system namespace"),
        );
    }
    if attrs.verb != "create" && attrs.name != node {
        return (Decision::NoOpinion, "can only access node lease with the same name as the requesting node".into());
    }
    (Decision::Allow, String::new())
}

fn csi_node(node: &str, attrs: &Attributes) -> (Decision, String) {
    if !matches!(attrs.verb.as_str(), "get" | "create" | "update" | "patch" | "delete") {
        return (Decision::NoOpinion, "can only get, create, update, patch, or delete a CSINode".into());
    }
    if !attrs.subresource.is_empty() {
        return (Decision::NoOpinion, "cannot authorize CSINode subresources".into());
    }
    if attrs.verb != "create" && attrs.name != node {
        return (Decision::NoOpinion, "can only access CSINode with the same name as the requesting node".into());
    }
    (Decision::Allow, String::new())
}

fn own_node(node: &str, attrs: &Attributes) -> (Decision, String) {
    match (attrs.subresource.as_str(), attrs.verb.as_str()) {
        // NodeRestriction limits writes to the node's own object.
        ("", "create" | "update" | "patch") | ("status", "update" | "patch") => (Decision::Allow, String::new()),
        ("", "get" | "list" | "watch") => match attrs.name.as_str() {
            n if n == node => (Decision::Allow, String::new()),
            "" => (Decision::NoOpinion, format!("node '{node}' cannot read all nodes, only its own Node object")),
            other => (Decision::NoOpinion, format!("node '{node}' cannot read '{other}', only its own Node object")),
        },
        _ => (Decision::NoOpinion, String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kubelet(node: &str) -> UserInfo {
        UserInfo {
            name: format!("system:node:{node}"),
            groups: vec![NODES_GROUP.into(), "system:authenticated".into()],
            ..Default::default()
        }
    }

    fn req(user: UserInfo, verb: &str, resource: &str, ns: &str, name: &str) -> Attributes {
        Attributes {
            user,
            verb: verb.into(),
            resource_request: true,
            resource: resource.into(),
            namespace: ns.into(),
            name: name.into(),
            ..Default::default()
        }
    }

    fn authorizer() -> NodeAuthorizer {
        let a = NodeAuthorizer::new();
        let pod = json!({"metadata": {"namespace": "ns", "name": "web"}, "spec": {
            "nodeName": "n1", "serviceAccountName": "app",
            "volumes": [{"name": "s", "secret": {"secretName": "tls"}}],
            "containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": "cfg"}}]}]}});
        let other = json!({"metadata": {"namespace": "ns", "name": "db"}, "spec": {
            "nodeName": "n2", "volumes": [{"name": "s", "secret": {"secretName": "db-pass"}}]}});
        a.apply(&[Change::Reset, Change::Upsert(&pod), Change::Upsert(&other), Change::Synced]);
        a
    }

    #[test]
    fn a_node_reads_only_what_its_pods_use() {
        let a = authorizer();
        assert_eq!(a.authorize(&req(kubelet("n1"), "get", "secrets", "ns", "tls")).0, Decision::Allow);
        assert_eq!(a.authorize(&req(kubelet("n1"), "watch", "configmaps", "ns", "cfg")).0, Decision::Allow);
        assert_eq!(
            a.authorize(&req(kubelet("n1"), "get", "secrets", "ns", "db-pass")),
            (Decision::NoOpinion, "no relationship found between node 'n1' and this object".into())
        );
        assert_eq!(
            a.authorize(&req(kubelet("n1"), "list", "secrets", "ns", "")),
            (Decision::NoOpinion, "No Object name found".into())
        );
        assert_eq!(
            a.authorize(&req(kubelet("n1"), "delete", "secrets", "ns", "tls")).1,
            "can only read resources of this type"
        );
        let mut token = req(kubelet("n1"), "create", "serviceaccounts", "ns", "app");
        token.subresource = "token".into();
        assert_eq!(a.authorize(&token).0, Decision::Allow);
        // Moving the pod away revokes its objects.
        let moved = json!({"metadata": {"namespace": "ns", "name": "web"}, "spec": {"nodeName": "n2"}});
        a.apply(&[Change::Upsert(&moved)]);
        assert_eq!(a.authorize(&req(kubelet("n1"), "get", "secrets", "ns", "tls")).0, Decision::NoOpinion);
        assert_eq!(a.authorize(&req(UserInfo::default(), "get", "secrets", "ns", "tls")).0, Decision::NoOpinion);
    }

    #[test]
    fn nodes_pods_and_leases() {
        let a = authorizer();
        assert_eq!(a.authorize(&req(kubelet("n1"), "get", "nodes", "", "n1")).0, Decision::Allow);
        assert_eq!(
            a.authorize(&req(kubelet("n1"), "get", "nodes", "", "n2")).1,
            "node 'n1' cannot read 'n2', only its own Node object"
        );
        assert_eq!(a.authorize(&req(kubelet("n1"), "patch", "nodes", "", "n2")).0, Decision::Allow);
        let mut list = req(kubelet("n1"), "list", "pods", "", "");
        assert_eq!(list.clone().field_selector, "");
        assert_eq!(a.authorize(&list).1, "can only list/watch pods with spec.nodeName field selector");
        list.field_selector = "spec.nodeName=n1".into();
        assert_eq!(a.authorize(&list).0, Decision::Allow);
        let mut lease = req(kubelet("n1"), "update", "leases", "kube-node-lease", "n1");
        lease.api_group = "coordination.k8s.io".into();
        assert_eq!(a.authorize(&lease).0, Decision::Allow);
        lease.name = "n2".into();
        assert_eq!(a.authorize(&lease).1, "can only access node lease with the same name as the requesting node");
        // Static node rules: services are readable.
        assert_eq!(a.authorize(&req(kubelet("n1"), "list", "services", "", "")).0, Decision::Allow);
        assert_eq!(a.authorize(&req(kubelet("n1"), "delete", "services", "ns", "x")).0, Decision::NoOpinion);
        let nameless = UserInfo { name: "system:node:".into(), groups: vec![NODES_GROUP.into()], ..Default::default() };
        assert_eq!(a.authorize(&req(nameless, "get", "nodes", "", "")).1, r#"unknown node for user "system:node:""#);
    }
}
