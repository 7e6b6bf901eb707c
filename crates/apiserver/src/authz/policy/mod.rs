//! The bootstrap RBAC policy (upstream's `bootstrappolicy`): the default
//! ClusterRoles ([`roles`]), the controller roles and the namespaced roles
//! ([`controllers`]) and their bindings, every object labelled
//! `kubernetes.io/bootstrapping: rbac-defaults` and annotated
//! `rbac.authorization.kubernetes.io/autoupdate: "true"`; [`reconcile`]
//! keeps them in the store at start.

use serde_json::{json, Value};

use crate::authz::rbac::PolicyRule;

pub mod controllers;
pub mod reconcile;
pub mod roles;

pub use roles::node_rules;

/// The label every bootstrap object carries.
pub const BOOTSTRAPPING_LABEL: (&str, &str) = ("kubernetes.io/bootstrapping", "rbac-defaults");
/// The annotation that opts a bootstrap object out of reconciliation when `"false"`.
pub const AUTOUPDATE_ANNOTATION: &str = "rbac.authorization.kubernetes.io/autoupdate";
/// Roles with this label are aggregated into `admin`.
pub const AGGREGATE_TO_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
/// Roles with this label are aggregated into `edit`.
pub const AGGREGATE_TO_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
/// Roles with this label are aggregated into `view`.
pub const AGGREGATE_TO_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";
/// The prefix of the controller roles and bindings.
pub const CONTROLLER_PREFIX: &str = "system:controller:";

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(|w| if w == "core" { String::new() } else { w.to_string() }).collect()
}

/// A resource rule: space-separated verbs, groups (`core` for `""`) and resources.
pub fn r(verbs: &str, groups: &str, resources: &str) -> PolicyRule {
    PolicyRule { verbs: words(verbs), api_groups: words(groups), resources: words(resources), ..Default::default() }
}

/// A non-resource rule: space-separated verbs and URL paths.
pub fn u(verbs: &str, urls: &str) -> PolicyRule {
    PolicyRule { verbs: words(verbs), non_resource_urls: words(urls), ..Default::default() }
}

impl PolicyRule {
    /// The rule restricted to the space-separated `names`.
    pub fn named(mut self, names: &str) -> PolicyRule {
        self.resource_names = words(names);
        self
    }
}

/// A bootstrap Role or ClusterRole.
#[derive(Clone, Debug)]
pub struct RoleDef {
    /// Empty for a ClusterRole.
    pub namespace: &'static str,
    /// The name.
    pub name: String,
    /// Extra labels (set to `"true"`), besides the bootstrapping label.
    pub labels: Vec<&'static str>,
    /// The label key of the aggregationRule's selector, for aggregated roles.
    pub aggregate_from: Option<&'static str>,
    /// The rules.
    pub rules: Vec<PolicyRule>,
}

impl RoleDef {
    /// A ClusterRole without rules.
    pub fn cluster(name: &str) -> RoleDef {
        RoleDef { namespace: "", name: name.to_string(), labels: vec![], aggregate_from: None, rules: vec![] }
    }

    /// A Role in `namespace` without rules.
    pub fn namespaced(namespace: &'static str, name: &str) -> RoleDef {
        RoleDef { namespace, ..RoleDef::cluster(name) }
    }

    /// With `rules`.
    pub fn rules(mut self, rules: Vec<PolicyRule>) -> RoleDef {
        self.rules = rules;
        self
    }

    /// With the label `key: "true"`.
    pub fn label(mut self, key: &'static str) -> RoleDef {
        self.labels.push(key);
        self
    }

    /// Aggregating the ClusterRoles labelled `key: "true"`.
    pub fn aggregated(mut self, key: &'static str) -> RoleDef {
        self.aggregate_from = Some(key);
        self
    }

    /// The object as rbac.authorization.k8s.io/v1 stores it.
    pub fn to_object(&self) -> Value {
        let mut labels = serde_json::Map::new();
        labels.insert(BOOTSTRAPPING_LABEL.0.into(), json!(BOOTSTRAPPING_LABEL.1));
        for l in &self.labels {
            labels.insert(l.to_string(), json!("true"));
        }
        let mut metadata = json!({
            "name": self.name,
            "labels": labels,
            "annotations": {AUTOUPDATE_ANNOTATION: "true"},
        });
        let kind = if self.namespace.is_empty() { "ClusterRole" } else { "Role" };
        if !self.namespace.is_empty() {
            metadata["namespace"] = json!(self.namespace);
        }
        let mut obj = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": kind,
            "metadata": metadata,
            "rules": self.rules.iter().map(PolicyRule::to_json).collect::<Vec<_>>(),
        });
        if let Some(key) = self.aggregate_from {
            obj["aggregationRule"] = json!({"clusterRoleSelectors": [{"matchLabels": {key: "true"}}]});
        }
        obj
    }
}

/// A bootstrap RoleBinding or ClusterRoleBinding.
#[derive(Clone, Debug)]
pub struct BindingDef {
    /// Empty for a ClusterRoleBinding.
    pub namespace: &'static str,
    /// The name.
    pub name: String,
    /// `ClusterRole` or `Role`.
    pub role_kind: &'static str,
    /// The role's name.
    pub role_name: String,
    /// `(kind, name, namespace)` of each subject.
    pub subjects: Vec<(&'static str, String, String)>,
}

impl BindingDef {
    /// A ClusterRoleBinding of the ClusterRole of the same name.
    pub fn cluster(name: &str) -> BindingDef {
        BindingDef {
            namespace: "",
            name: name.to_string(),
            role_kind: "ClusterRole",
            role_name: name.to_string(),
            subjects: vec![],
        }
    }

    /// A RoleBinding in `namespace` of the Role `role`.
    pub fn role(namespace: &'static str, name: &str, role: &str) -> BindingDef {
        BindingDef {
            namespace,
            name: name.to_string(),
            role_kind: "Role",
            role_name: role.to_string(),
            subjects: vec![],
        }
    }

    /// With `subjects`.
    pub fn subjects(mut self, subjects: Vec<(&'static str, String, String)>) -> BindingDef {
        self.subjects = subjects;
        self
    }

    /// With the groups `names`.
    pub fn groups(self, names: &[&str]) -> BindingDef {
        self.subjects(names.iter().map(|n| ("Group", n.to_string(), String::new())).collect())
    }

    /// With the users `names`.
    pub fn users(self, names: &[&str]) -> BindingDef {
        self.subjects(names.iter().map(|n| ("User", n.to_string(), String::new())).collect())
    }

    /// The subjects as the API serializes them (`apiGroup` for users and
    /// groups, `namespace` for service accounts).
    pub fn subjects_json(&self) -> Vec<Value> {
        self.subjects
            .iter()
            .map(|(kind, name, ns)| {
                if *kind == "ServiceAccount" {
                    json!({"kind": kind, "name": name, "namespace": ns})
                } else {
                    json!({"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name})
                }
            })
            .collect()
    }

    /// The object as rbac.authorization.k8s.io/v1 stores it.
    pub fn to_object(&self) -> Value {
        let kind = if self.namespace.is_empty() { "ClusterRoleBinding" } else { "RoleBinding" };
        let mut obj = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": kind,
            "metadata": {
                "name": self.name,
                "labels": {BOOTSTRAPPING_LABEL.0: BOOTSTRAPPING_LABEL.1},
                "annotations": {AUTOUPDATE_ANNOTATION: "true"},
            },
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": self.role_kind, "name": self.role_name},
        });
        if !self.namespace.is_empty() {
            obj["metadata"]["namespace"] = json!(self.namespace);
        }
        if !self.subjects.is_empty() {
            obj["subjects"] = json!(self.subjects_json());
        }
        obj
    }
}

/// Every bootstrap ClusterRole: the default roles, then the controller roles.
pub fn cluster_roles() -> Vec<RoleDef> {
    let mut all = roles::cluster_roles();
    all.extend(
        controllers::controller_roles()
            .into_iter()
            .map(|(name, rules)| RoleDef::cluster(&format!("{CONTROLLER_PREFIX}{name}")).rules(rules)),
    );
    all
}

/// Every bootstrap ClusterRoleBinding (upstream's `ClusterRoleBindings()`
/// and `ControllerRoleBindings()`).
pub fn cluster_role_bindings() -> Vec<BindingDef> {
    let mut all = vec![
        BindingDef::cluster("cluster-admin").groups(&["system:masters"]),
        BindingDef::cluster("system:monitoring").groups(&["system:monitoring"]),
        BindingDef::cluster("system:discovery").groups(&["system:authenticated"]),
        BindingDef::cluster("system:basic-user").groups(&["system:authenticated"]),
        BindingDef::cluster("system:public-info-viewer").groups(&["system:authenticated", "system:unauthenticated"]),
        BindingDef::cluster("system:node-proxier").users(&["system:kube-proxy"]),
        BindingDef::cluster("system:kube-controller-manager").users(&["system:kube-controller-manager"]),
        BindingDef::cluster("system:kube-dns").subjects(vec![(
            "ServiceAccount",
            "kube-dns".to_string(),
            "kube-system".to_string(),
        )]),
        BindingDef::cluster("system:kube-scheduler").users(&["system:kube-scheduler"]),
        BindingDef::cluster("system:volume-scheduler").users(&["system:kube-scheduler"]),
        // Kept without subjects: the Node authorizer replaced this grant.
        BindingDef::cluster("system:node"),
        BindingDef::cluster("system:service-account-issuer-discovery").groups(&["system:serviceaccounts"]),
    ];
    all.extend(controllers::controller_roles().into_iter().map(|(name, _)| {
        BindingDef::cluster(&format!("{CONTROLLER_PREFIX}{name}")).subjects(vec![(
            "ServiceAccount",
            name.to_string(),
            "kube-system".to_string(),
        )])
    }));
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_serialize_like_upstream_testdata() {
        let view = cluster_roles().into_iter().find(|r| r.name == "view").unwrap().to_object();
        assert_eq!(view["metadata"]["labels"]["kubernetes.io/bootstrapping"], "rbac-defaults");
        assert_eq!(view["metadata"]["labels"][AGGREGATE_TO_EDIT], "true");
        assert_eq!(view["metadata"]["annotations"][AUTOUPDATE_ANNOTATION], "true");
        assert_eq!(view["aggregationRule"]["clusterRoleSelectors"][0]["matchLabels"][AGGREGATE_TO_VIEW], "true");
        let admin = cluster_roles().into_iter().find(|r| r.name == "cluster-admin").unwrap().to_object();
        assert_eq!(
            admin["rules"],
            json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, {"nonResourceURLs": ["*"], "verbs": ["*"]}])
        );
        let public = cluster_roles().into_iter().find(|r| r.name == "system:public-info-viewer").unwrap();
        assert_eq!(public.rules[0].non_resource_urls, ["/healthz", "/livez", "/readyz", "/version", "/version/"]);
    }

    #[test]
    fn every_controller_role_is_bound_to_its_service_account() {
        let bindings = cluster_role_bindings();
        for role in cluster_roles().iter().filter(|r| r.name.starts_with(CONTROLLER_PREFIX)) {
            let b = bindings.iter().find(|b| b.name == role.name).unwrap_or_else(|| panic!("{}", role.name));
            let sa = role.name.trim_start_matches(CONTROLLER_PREFIX);
            assert_eq!(b.subjects, [("ServiceAccount", sa.to_string(), "kube-system".to_string())]);
        }
        let names: Vec<_> = cluster_roles().into_iter().map(|r| r.name).collect();
        let mut unique = names.clone();
        unique.dedup();
        assert_eq!(names.len(), unique.len());
        let dns = bindings.iter().find(|b| b.name == "system:kube-dns").unwrap().to_object();
        assert_eq!(
            dns["subjects"],
            json!([{"kind": "ServiceAccount", "name": "kube-dns", "namespace": "kube-system"}])
        );
        assert!(bindings.iter().find(|b| b.name == "system:node").unwrap().to_object().get("subjects").is_none());
    }
}
