//! NodeRestriction (upstream's `plugin/pkg/admission/noderestriction`):
//! what the Node authorizer lets any kubelet write, this plugin narrows to
//! the kubelet's own node — its Node object (without touching taints,
//! `configSource` or labels outside the kubelet's set), its Lease in
//! `kube-node-lease`, mirror pods bound to it, the status and evictions of
//! pods bound to it (a CREATE of `pods/eviction`), and tokens (a CREATE of
//! `serviceaccounts/token`) bound by name and uid to its pods, for at most
//! one audience that pod uses or the node may request
//! (ServiceAccountNodeAudienceRestriction, on in 1.33). Refusals are 403
//! `<resource> "<name>" is forbidden: <reason>`.
//!
//! Not here: in-tree volumes migrated to CSI drivers when looking for a
//! pod's token audiences.

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use rkube_apimachinery::{meta, ApiError, GroupResource};
use serde_json::Value;

use super::plugins::Stores;
use super::{Attributes, Operation, Plugin};
use crate::authz::node::{node_name, NODE_LEASE_NAMESPACE};
use crate::storage::ResourceStore;

/// The annotation of mirror pods.
pub const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// Labels under `kubernetes.io` / `k8s.io` a kubelet may set on its Node
/// (upstream's `kubeletapis.IsKubeletLabel`).
const KUBELET_LABELS: [&str; 11] = [
    "kubernetes.io/hostname",
    "kubernetes.io/arch",
    "kubernetes.io/os",
    "beta.kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type",
    "failure-domain.beta.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "topology.kubernetes.io/zone",
];
/// Label namespaces a kubelet may use freely.
const KUBELET_LABEL_NAMESPACES: [&str; 2] = ["kubelet.kubernetes.io", "node.kubernetes.io"];

/// The NodeRestriction plugin.
#[derive(Default)]
pub struct NodeRestriction {
    pods: Option<Arc<ResourceStore>>,
    claims: Option<Arc<ResourceStore>>,
    volumes: Option<Arc<ResourceStore>>,
    csi_drivers: Option<Arc<ResourceStore>>,
    authorizer: Option<Arc<crate::authz::ServerAuthorizer>>,
}

/// The verb that lets a node ask for tokens of an audience its pod does
/// not use (upstream's ServiceAccountNodeAudienceRestriction).
pub const TOKEN_AUDIENCE_VERB: &str = "request-serviceaccounts-token-audience";

impl NodeRestriction {
    /// The plugin, reading pods, claims, volumes and CSI drivers from `stores`.
    pub fn new(stores: &Stores) -> NodeRestriction {
        let store = |g: &'static str, p: &'static str| stores.get(&(g, "v1", p)).cloned();
        NodeRestriction {
            pods: store("", "pods"),
            claims: store("", "persistentvolumeclaims"),
            volumes: store("", "persistentvolumes"),
            csi_drivers: store("storage.k8s.io", "csidrivers"),
            authorizer: None,
        }
    }

    /// With the server's authorizer (asked for [`TOKEN_AUDIENCE_VERB`]).
    pub fn with_authorizer(mut self, authorizer: Arc<crate::authz::ServerAuthorizer>) -> NodeRestriction {
        self.authorizer = Some(authorizer);
        self
    }

    async fn pod(&self, namespace: &str, name: &str) -> Result<Value, ApiError> {
        let pods = self.pods.as_ref().ok_or_else(|| ApiError::Internal("no pod store".into()))?;
        pods.get(namespace, name, "").await
    }
}

fn forbidden(attrs: &Attributes<'_>, name: &str, reason: String) -> ApiError {
    let resource =
        GroupResource { group: attrs.resource.group.to_string(), resource: attrs.resource.plural.to_string() };
    let message = if name.is_empty() {
        format!("{resource} is forbidden: {reason}")
    } else {
        format!("{resource} \"{name}\" is forbidden: {reason}")
    };
    ApiError::Forbidden { resource, name: name.to_string(), message }
}

fn node_of(pod: &Value) -> &str {
    pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("")
}

fn label_namespace(key: &str) -> &str {
    key.split_once('/').map(|(ns, _)| ns).unwrap_or("")
}

/// Label keys that differ between `a` and `b` and a kubelet may not set.
fn forbidden_labels(new: &Value, old: Option<&Value>) -> Vec<String> {
    let labels = |v: Option<&Value>| v.map(meta::labels).unwrap_or_default();
    let (a, b) = (labels(Some(new)), labels(old));
    let modified: BTreeSet<&String> = a
        .iter()
        .filter(|(k, v)| b.get(*k) != Some(v))
        .map(|(k, _)| k)
        .chain(b.iter().filter(|(k, v)| a.get(*k) != Some(v)).map(|(k, _)| k))
        .collect();
    modified
        .into_iter()
        .filter(|key| {
            let ns = label_namespace(key);
            let restricted = ns == "node-restriction.kubernetes.io" || ns.ends_with(".node-restriction.kubernetes.io");
            let kubernetes =
                ns == "kubernetes.io" || ns.ends_with(".kubernetes.io") || ns == "k8s.io" || ns.ends_with(".k8s.io");
            let kubelet = KUBELET_LABELS.contains(&key.as_str())
                || KUBELET_LABEL_NAMESPACES.iter().any(|n| ns == *n || ns.ends_with(&format!(".{n}")));
            restricted || (kubernetes && !kubelet)
        })
        .cloned()
        .collect()
}

impl NodeRestriction {
    async fn admit_pod(&self, node: &str, attrs: &Attributes<'_>, object: Option<&Value>) -> Result<(), ApiError> {
        match (attrs.subresource, attrs.operation) {
            ("", Operation::Create) => {
                let pod = object.cloned().unwrap_or(Value::Null);
                let name = meta::name(&pod).to_string();
                let fail = |reason: String| Err(forbidden(attrs, &name, reason));
                if pod.pointer("/metadata/annotations").and_then(|a| a.get(MIRROR_POD_ANNOTATION)).is_none() {
                    return fail(format!(
                        "pod does not have \"{MIRROR_POD_ANNOTATION}\" annotation, node \"{node}\" can only create mirror pods"
                    ));
                }
                if node_of(&pod) != node {
                    return fail(format!("node \"{node}\" can only create pods with spec.nodeName set to itself"));
                }
                let owners =
                    pod.pointer("/metadata/ownerReferences").and_then(Value::as_array).cloned().unwrap_or_default();
                match owners.as_slice() {
                    [] => {
                        return fail(format!(
                            "node \"{node}\" can only create pods with an owner reference set to itself"
                        ))
                    }
                    [owner] => {
                        let s = |k: &str| owner.get(k).and_then(Value::as_str).unwrap_or("");
                        if s("apiVersion") != "v1" || s("kind") != "Node" || s("name") != node {
                            return fail(format!(
                                "node \"{node}\" can only create pods with an owner reference set to itself"
                            ));
                        }
                        if owner.get("controller").and_then(Value::as_bool) != Some(true) {
                            return fail(format!(
                                "node \"{node}\" can only create pods with a controller owner reference set to itself"
                            ));
                        }
                        if owner.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true) {
                            return fail(format!(
                                "node \"{node}\" must not set blockOwnerDeletion on an owner reference"
                            ));
                        }
                    }
                    _ => {
                        return fail(format!(
                            "node \"{node}\" can only create pods with a single owner reference set to itself"
                        ))
                    }
                }
                if pod.pointer("/spec/serviceAccountName").and_then(Value::as_str).is_some_and(|s| !s.is_empty()) {
                    return fail(format!("node \"{node}\" can not create pods that reference a service account"));
                }
                let refs = crate::authz::node::pod_references(&pod);
                use crate::authz::node::Vertex;
                for (vertex, what) in [(Vertex::Secret, "secrets"), (Vertex::ConfigMap, "configmaps")] {
                    if refs.iter().any(|(v, _, _)| *v == vertex) {
                        return fail(format!("node \"{node}\" can not create pods that reference {what}"));
                    }
                }
                let volumes = pod.pointer("/spec/volumes").and_then(Value::as_array).cloned().unwrap_or_default();
                if volumes.iter().any(|v| v.get("persistentVolumeClaim").is_some()) {
                    return fail(format!("node \"{node}\" can not create pods that reference persistentvolumeclaims"));
                }
                Ok(())
            }
            ("", Operation::Delete) => {
                let existing = match attrs.old_object {
                    Some(o) => o.clone(),
                    None => self.pod(attrs.namespace, attrs.name).await?,
                };
                if node_of(&existing) != node {
                    return Err(forbidden(
                        attrs,
                        attrs.name,
                        format!("node \"{node}\" can only delete pods with spec.nodeName set to itself"),
                    ));
                }
                Ok(())
            }
            ("", op) => Err(forbidden(
                attrs,
                attrs.name,
                format!(
                    "unexpected operation \"{}\", node \"{node}\" can only create and delete mirror pods",
                    op.as_str()
                ),
            )),
            ("status", Operation::Update) => {
                let old = attrs.old_object.cloned().unwrap_or(Value::Null);
                if node_of(&old) != node {
                    return Err(forbidden(
                        attrs,
                        attrs.name,
                        format!("node \"{node}\" can only update pod status for pods with spec.nodeName set to itself"),
                    ));
                }
                if object.is_some_and(|new| meta::labels(new) != meta::labels(&old)) {
                    return Err(forbidden(
                        attrs,
                        attrs.name,
                        format!("node \"{node}\" cannot update labels through pod status"),
                    ));
                }
                Ok(())
            }
            ("status", op) => Err(forbidden(attrs, attrs.name, format!("unexpected operation \"{}\"", op.as_str()))),
            ("eviction", Operation::Create) => {
                let pod_name = if attrs.name.is_empty() { object.map(meta::name).unwrap_or("") } else { attrs.name };
                if pod_name.is_empty() {
                    return Err(forbidden(attrs, "", "could not determine pod from request data".into()));
                }
                let existing = self.pod(attrs.namespace, pod_name).await?;
                if node_of(&existing) != node {
                    return Err(forbidden(
                        attrs,
                        pod_name,
                        format!("node {node} can only evict pods with spec.nodeName set to itself"),
                    ));
                }
                Ok(())
            }
            ("eviction", op) => Err(forbidden(attrs, attrs.name, format!("unexpected operation {}", op.as_str()))),
            (sub, _) => Err(forbidden(
                attrs,
                attrs.name,
                format!("unexpected pod subresource \"{sub}\", only 'status' and 'eviction' are allowed"),
            )),
        }
    }

    fn admit_node(node: &str, attrs: &Attributes<'_>, object: Option<&Value>) -> Result<(), ApiError> {
        let requested = if attrs.name.is_empty() { object.map(meta::name).unwrap_or("") } else { attrs.name };
        if requested != node {
            return Err(forbidden(
                attrs,
                requested,
                format!("node \"{node}\" is not allowed to modify node \"{requested}\""),
            ));
        }
        let Some(new) = object else { return Ok(()) };
        match attrs.operation {
            Operation::Create => {
                if new.pointer("/spec/configSource").is_some_and(|v| !v.is_null()) {
                    return Err(forbidden(
                        attrs,
                        requested,
                        format!("node \"{node}\" is not allowed to create pods with a non-nil configSource"),
                    ));
                }
                let bad = forbidden_labels(new, None);
                if !bad.is_empty() {
                    return Err(forbidden(
                        attrs,
                        requested,
                        format!("node \"{node}\" is not allowed to set the following labels: {}", bad.join(", ")),
                    ));
                }
            }
            Operation::Update => {
                let old = attrs.old_object.cloned().unwrap_or(Value::Null);
                let config = new.pointer("/spec/configSource").filter(|v| !v.is_null());
                if config.is_some() && config != old.pointer("/spec/configSource") {
                    return Err(forbidden(
                        attrs,
                        requested,
                        format!("node \"{node}\" is not allowed to update configSource to a new non-nil configSource"),
                    ));
                }
                let taints = |v: &Value| {
                    v.pointer("/spec/taints").filter(|t| t.as_array().is_some_and(|a| !a.is_empty())).cloned()
                };
                if taints(new) != taints(&old) {
                    return Err(forbidden(
                        attrs,
                        requested,
                        format!("node \"{node}\" is not allowed to modify taints"),
                    ));
                }
                let bad = forbidden_labels(new, Some(&old));
                if !bad.is_empty() {
                    return Err(forbidden(
                        attrs,
                        requested,
                        format!("is not allowed to modify labels: {}", bad.join(", ")),
                    ));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// A kubelet's TokenRequest (CREATE of `serviceaccounts/token`) must
    /// be bound to an existing pod (by name and uid) on its own node.
    async fn admit_token_request(
        &self,
        node: &str,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), ApiError> {
        if attrs.operation != Operation::Create || attrs.subresource != "token" {
            return Ok(());
        }
        let fail = |reason: String| Err(forbidden(attrs, attrs.name, reason));
        let bound = object.and_then(|o| o.pointer("/spec/boundObjectRef")).filter(|r| r.is_object());
        let field = |k: &str| bound.and_then(|r| r.get(k)).and_then(Value::as_str).unwrap_or("");
        if bound.is_none() || field("apiVersion") != "v1" || field("kind") != "Pod" || field("name").is_empty() {
            return fail("node requested token not bound to a pod".into());
        }
        let uid = field("uid");
        if uid.is_empty() {
            return fail("node requested token with a pod binding without a uid".into());
        }
        let pod = self.pod(attrs.namespace, field("name")).await?;
        if meta::uid(&pod) != uid {
            return fail(format!(
                "the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated"
            ));
        }
        if node_of(&pod) != node {
            return fail("node requested token bound to a pod scheduled on a different node".into());
        }
        self.check_token_audience(attrs, object, &pod).await
    }

    /// ServiceAccountNodeAudienceRestriction (on in 1.33): at most one
    /// audience, which the pod uses (a projected token volume for it, `""`
    /// matching the API audience of an unset one, or a CSI driver of its
    /// volumes requesting tokens for it), or which the node may request
    /// ([`TOKEN_AUDIENCE_VERB`] on the audience as resource).
    async fn check_token_audience(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
        pod: &Value,
    ) -> Result<(), ApiError> {
        let audiences: Vec<&str> = object
            .and_then(|o| o.pointer("/spec/audiences"))
            .and_then(Value::as_array)
            .map(|a| a.iter().map(|v| v.as_str().unwrap_or("")).collect())
            .unwrap_or_default();
        if audiences.len() > 1 {
            return Err(forbidden(attrs, attrs.name, "node may only request 0 or 1 audiences".into()));
        }
        let audience = audiences.first().copied().unwrap_or("");
        if self.pod_uses_audience(pod, audience).await? {
            return Ok(());
        }
        let allowed = self.authorizer.as_ref().is_some_and(|authz| {
            let check = crate::authz::Attributes {
                user: attrs.user.clone(),
                verb: TOKEN_AUDIENCE_VERB.into(),
                resource_request: true,
                namespace: attrs.namespace.to_string(),
                resource: audience.to_string(),
                name: attrs.name.to_string(),
                ..Default::default()
            };
            crate::authz::Authorizer::authorize(authz.as_ref(), &check).0 == crate::authz::Decision::Allow
        });
        if allowed {
            return Ok(());
        }
        Err(forbidden(
            attrs,
            attrs.name,
            format!(
                "audience \"{audience}\" not found in pod spec volume, {} is not authorized to request tokens for this audience",
                attrs.user.name
            ),
        ))
    }

    /// Whether a volume of `pod` asks for tokens of `audience`.
    async fn pod_uses_audience(&self, pod: &Value, audience: &str) -> Result<bool, ApiError> {
        let volumes = pod.pointer("/spec/volumes").and_then(Value::as_array).cloned().unwrap_or_default();
        for v in &volumes {
            let sources = v.pointer("/projected/sources").and_then(Value::as_array).into_iter().flatten();
            let projected = sources
                .filter_map(|s| s.get("serviceAccountToken"))
                .any(|t| t.get("audience").and_then(Value::as_str).unwrap_or("") == audience);
            if projected {
                return Ok(true);
            }
            let driver = match v.pointer("/csi/driver").and_then(Value::as_str) {
                Some(d) => Some(d.to_string()),
                None => {
                    let claim = match v.pointer("/persistentVolumeClaim/claimName").and_then(Value::as_str) {
                        Some(c) => Some(c.to_string()),
                        None if v.pointer("/ephemeral/volumeClaimTemplate").is_some() => {
                            Some(format!("{}-{}", meta::name(pod), v.get("name").and_then(Value::as_str).unwrap_or("")))
                        }
                        None => None,
                    };
                    match claim {
                        Some(c) => self.claim_driver(meta::namespace(pod), &c).await?,
                        None => None,
                    }
                }
            };
            let Some(driver) = driver else { continue };
            let Some(store) = &self.csi_drivers else { continue };
            let Some(csi) = super::builtin::lookup(store, "", &driver).await? else { continue };
            let requests = csi.pointer("/spec/tokenRequests").and_then(Value::as_array).into_iter().flatten();
            if requests.into_iter().any(|r| r.get("audience").and_then(Value::as_str).unwrap_or("") == audience) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The CSI driver of the volume a claim is bound to.
    async fn claim_driver(&self, namespace: &str, claim: &str) -> Result<Option<String>, ApiError> {
        let (Some(claims), Some(volumes)) = (&self.claims, &self.volumes) else { return Ok(None) };
        let Some(pvc) = super::builtin::lookup(claims, namespace, claim).await? else { return Ok(None) };
        let Some(pv_name) = pvc.pointer("/spec/volumeName").and_then(Value::as_str).filter(|n| !n.is_empty()) else {
            return Ok(None);
        };
        let Some(pv) = super::builtin::lookup(volumes, "", pv_name).await? else { return Ok(None) };
        Ok(pv.pointer("/spec/csi/driver").and_then(Value::as_str).map(str::to_string))
    }

    fn admit_lease(node: &str, attrs: &Attributes<'_>, object: Option<&Value>) -> Result<(), ApiError> {
        let name = if attrs.operation == Operation::Create { object.map(meta::name).unwrap_or("") } else { attrs.name };
        if attrs.namespace != NODE_LEASE_NAMESPACE {
            return Err(forbidden(
                attrs,
                name,
                format!("can only access leases in the \"{NODE_LEASE_NAMESPACE}\" system namespace"),
            ));
        }
        if name != node {
            return Err(forbidden(
                attrs,
                name,
                "can only access node lease with the same name as the requesting node".into(),
            ));
        }
        Ok(())
    }

    async fn check(&self, attrs: &Attributes<'_>, object: Option<&Value>) -> Result<(), ApiError> {
        let Some(node) = node_name(attrs.user) else { return Ok(()) };
        if node.is_empty() {
            return Err(forbidden(
                attrs,
                attrs.name,
                format!("could not determine node from user \"{}\"", attrs.user.name),
            ));
        }
        match (attrs.resource.group, attrs.resource.plural) {
            ("", "pods") => self.admit_pod(node, attrs, object).await,
            ("", "nodes") => Self::admit_node(node, attrs, object),
            ("coordination.k8s.io", "leases") => Self::admit_lease(node, attrs, object),
            ("", "serviceaccounts") => self.admit_token_request(node, attrs, object).await,
            _ => Ok(()),
        }
    }
}

#[async_trait]
impl Plugin for NodeRestriction {
    fn name(&self) -> &'static str {
        "NodeRestriction"
    }

    async fn admit(&self, attrs: &Attributes<'_>, object: Option<&mut Value>) -> Result<(), ApiError> {
        self.check(attrs, object.as_deref()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::{Chain, RequestAdmission};
    use crate::authn::UserInfo;
    use rkube_apimachinery::registry::Registry;
    use serde_json::json;

    fn kubelet() -> UserInfo {
        UserInfo { name: "system:node:n1".into(), groups: vec!["system:nodes".into()], ..Default::default() }
    }

    /// Runs the plugin on a write of `plural` as the kubelet of n1.
    async fn admit(
        plural: &str,
        group: &str,
        op: Operation,
        ns: &str,
        name: &str,
        new: Value,
        old: Option<Value>,
    ) -> Result<(), String> {
        let info = Registry::builtin().lookup(group, "v1", plural).unwrap().clone();
        let request = RequestAdmission::new(Arc::new(Chain::default()), kubelet(), info.clone(), "", ns, false);
        let attrs = Attributes {
            operation: op,
            user: &request.user,
            resource: &info,
            subresource: "",
            namespace: ns,
            name,
            old_object: old.as_ref(),
            dry_run: false,
            request: &request,
        };
        let plugin = NodeRestriction::default();
        let mut obj = new;
        plugin.admit(&attrs, Some(&mut obj)).await.map_err(|e| e.to_string())
    }

    #[tokio::test]
    async fn nodes_change_only_their_own_object_and_not_its_taints() {
        let n = |name: &str, taints: Value| json!({"metadata": {"name": name}, "spec": {"taints": taints}});
        assert_eq!(
            admit("nodes", "", Operation::Update, "", "n2", n("n2", json!([])), Some(n("n2", json!([])))).await,
            Err(r#"nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2""#.into())
        );
        assert!(admit("nodes", "", Operation::Update, "", "n1", n("n1", json!([])), Some(n("n1", Value::Null)))
            .await
            .is_ok());
        let tainted = n("n1", json!([{"key": "k", "effect": "NoSchedule"}]));
        assert_eq!(
            admit("nodes", "", Operation::Update, "", "n1", tainted, Some(n("n1", json!([])))).await,
            Err(r#"nodes "n1" is forbidden: node "n1" is not allowed to modify taints"#.into())
        );
    }

    #[tokio::test]
    async fn leases_and_mirror_pods() {
        let lease = |name: &str| json!({"metadata": {"name": name, "namespace": "kube-node-lease"}});
        assert!(admit("leases", "coordination.k8s.io", Operation::Create, "kube-node-lease", "", lease("n1"), None)
            .await
            .is_ok());
        assert_eq!(
            admit("leases", "coordination.k8s.io", Operation::Create, "kube-node-lease", "", lease("n2"), None).await,
            Err(r#"leases.coordination.k8s.io "n2" is forbidden: can only access node lease with the same name as the requesting node"#.into())
        );
        let pod = json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n1"}});
        assert_eq!(
            admit("pods", "", Operation::Create, "default", "", pod, None).await,
            Err(r#"pods "p" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods"#.into())
        );
        let mirror = json!({"metadata": {"name": "p", "annotations": {MIRROR_POD_ANNOTATION: "x"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "u", "controller": true}]},
            "spec": {"nodeName": "n1", "volumes": [{"name": "s", "secret": {"secretName": "x"}}]}});
        assert_eq!(
            admit("pods", "", Operation::Create, "default", "", mirror, None).await,
            Err(r#"pods "p" is forbidden: node "n1" can not create pods that reference secrets"#.into())
        );
    }

    #[tokio::test]
    async fn kubelet_tokens_must_be_bound_to_a_pod_with_a_uid() {
        let info = Registry::builtin().lookup("", "v1", "serviceaccounts").unwrap().clone();
        let request = RequestAdmission::new(Arc::new(Chain::default()), kubelet(), info.clone(), "token", "app", false);
        let attrs = Attributes {
            operation: Operation::Create,
            user: &request.user,
            resource: &info,
            subresource: "token",
            namespace: "app",
            name: "sa",
            old_object: None,
            dry_run: false,
            request: &request,
        };
        let plugin = NodeRestriction::default();
        let run = |tr: Value| {
            let (plugin, attrs) = (&plugin, &attrs);
            async move { plugin.admit_token_request("n1", attrs, Some(&tr)).await.map_err(|e| e.to_string()) }
        };
        let unbound = Err(r#"serviceaccounts "sa" is forbidden: node requested token not bound to a pod"#.to_string());
        assert_eq!(run(json!({"spec": {}})).await, unbound);
        let secret =
            json!({"spec": {"boundObjectRef": {"apiVersion": "v1", "kind": "Secret", "name": "s", "uid": "u"}}});
        assert_eq!(run(secret).await, unbound);
        let no_uid = json!({"spec": {"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "p"}}});
        assert_eq!(
            run(no_uid).await,
            Err(r#"serviceaccounts "sa" is forbidden: node requested token with a pod binding without a uid"#.into())
        );
    }

    #[test]
    fn kubelets_may_set_only_their_labels() {
        let new = json!({"metadata": {"labels": {
            "kubernetes.io/hostname": "n1", "node.kubernetes.io/exclude": "x",
            "node-role.kubernetes.io/control-plane": "", "node-restriction.kubernetes.io/x": "y", "team": "a"}}});
        assert_eq!(
            forbidden_labels(&new, None),
            ["node-restriction.kubernetes.io/x", "node-role.kubernetes.io/control-plane"]
        );
        assert!(forbidden_labels(&new, Some(&new)).is_empty());
    }
}
