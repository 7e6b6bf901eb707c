//! The RBAC index: Roles, ClusterRoles and their bindings as the
//! authorizer consults them, keyed so a decision looks up only the
//! bindings of the request's user and groups (upstream walks every binding
//! in its informer cache; with 1,000 bindings a keyed lookup keeps a
//! decision in the microseconds).
//!
//! [`Objects`] holds the parsed objects by key as the watches deliver
//! them; [`Snapshot::build`] derives the immutable lookup tables the
//! authorizer reads.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::Value;

use super::rule::PolicyRule;

/// The `system:serviceaccount:` user name prefix.
pub const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// The four RBAC kinds the index follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// `clusterroles`.
    ClusterRole,
    /// `roles`.
    Role,
    /// `clusterrolebindings`.
    ClusterRoleBinding,
    /// `rolebindings`.
    RoleBinding,
}

impl Kind {
    /// Every kind, in the order the watches start.
    pub const ALL: [Kind; 4] = [Kind::ClusterRole, Kind::Role, Kind::ClusterRoleBinding, Kind::RoleBinding];

    /// The resource (plural) in `rbac.authorization.k8s.io/v1`.
    pub fn plural(self) -> &'static str {
        match self {
            Kind::ClusterRole => "clusterroles",
            Kind::Role => "roles",
            Kind::ClusterRoleBinding => "clusterrolebindings",
            Kind::RoleBinding => "rolebindings",
        }
    }
}

/// Who a subject matches: a user name (service accounts by their user
/// name) or a group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SubjectKey {
    /// A user name.
    User(String),
    /// A group name.
    Group(String),
}

/// Grants by user name and by group name.
#[derive(Default)]
pub struct Grants {
    /// By user name.
    pub users: HashMap<String, Vec<Grant>>,
    /// By group name.
    pub groups: HashMap<String, Vec<Grant>>,
}

impl Grants {
    fn add(&mut self, key: SubjectKey, grant: Grant) {
        match key {
            SubjectKey::User(u) => self.users.entry(u).or_default().push(grant),
            SubjectKey::Group(g) => self.groups.entry(g).or_default().push(grant),
        }
    }

    /// Visits the grants of `user_name` then of each group; false when
    /// `visit` asked to stop.
    fn visit(&self, user_name: &str, groups: &[String], visit: &mut impl FnMut(&Grant) -> bool) -> bool {
        let by_user = self.users.get(user_name).into_iter().flatten();
        let by_group = groups.iter().filter_map(|g| self.groups.get(g.as_str())).flatten();
        by_user.chain(by_group).all(visit)
    }
}

/// A binding's subject (`User`, `Group` or `ServiceAccount`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subject {
    /// `User`, `Group`, `ServiceAccount`.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// The ServiceAccount's namespace (empty: the binding's).
    pub namespace: String,
}

impl Subject {
    /// The index key of this subject inside a binding of `binding_ns`
    /// (`None` for a subject that can match nobody, upstream's
    /// `appliesToUser` false cases).
    fn key(&self, binding_ns: &str) -> Option<SubjectKey> {
        match self.kind.as_str() {
            "User" => Some(SubjectKey::User(self.name.clone())),
            "Group" => Some(SubjectKey::Group(self.name.clone())),
            "ServiceAccount" => {
                let ns = if self.namespace.is_empty() { binding_ns } else { &self.namespace };
                (!ns.is_empty()).then(|| SubjectKey::User(format!("{SERVICE_ACCOUNT_PREFIX}{ns}:{}", self.name)))
            }
            _ => None,
        }
    }

    /// Upstream's `describeSubject`: `User "bob"`, `ServiceAccount "name/ns"`.
    pub fn describe(&self, binding_ns: &str) -> String {
        if self.kind == "ServiceAccount" {
            let ns = if self.namespace.is_empty() { binding_ns } else { &self.namespace };
            format!("{} \"{}/{}\"", self.kind, self.name, ns)
        } else {
            format!("{} \"{}\"", self.kind, self.name)
        }
    }
}

/// A RoleBinding or ClusterRoleBinding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    /// The binding's namespace (empty for ClusterRoleBindings).
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// `Role` or `ClusterRole`.
    pub role_kind: String,
    /// The role's name.
    pub role_name: String,
    /// Who it binds.
    pub subjects: Vec<Subject>,
}

impl Binding {
    /// Parses a stored binding.
    pub fn from_json(object: &Value) -> Binding {
        let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let meta = object.get("metadata").cloned().unwrap_or(Value::Null);
        let role_ref = object.get("roleRef").cloned().unwrap_or(Value::Null);
        let subjects = object
            .get("subjects")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|v| Subject { kind: s(v, "kind"), name: s(v, "name"), namespace: s(v, "namespace") })
                    .collect()
            })
            .unwrap_or_default();
        Binding {
            namespace: s(&meta, "namespace"),
            name: s(&meta, "name"),
            role_kind: s(&role_ref, "kind"),
            role_name: s(&role_ref, "name"),
            subjects,
        }
    }

    /// Upstream's description of a grant: `ClusterRoleBinding "x" of
    /// ClusterRole "y" to Group "z"` / `RoleBinding "x/ns" of Role "y" to …`.
    pub fn describe(&self, subject: &Subject) -> String {
        let binding = if self.namespace.is_empty() {
            format!("ClusterRoleBinding \"{}\"", self.name)
        } else {
            format!("RoleBinding \"{}/{}\"", self.name, self.namespace)
        };
        format!("{binding} of {} \"{}\" to {}", self.role_kind, self.role_name, subject.describe(&self.namespace))
    }
}

/// The parsed objects of the four kinds, by `(namespace, name)`.
#[derive(Default)]
pub struct Objects {
    /// ClusterRoles' rules by name.
    pub cluster_roles: BTreeMap<String, Arc<Vec<PolicyRule>>>,
    /// Roles' rules by (namespace, name).
    pub roles: BTreeMap<(String, String), Arc<Vec<PolicyRule>>>,
    /// ClusterRoleBindings by name.
    pub cluster_bindings: BTreeMap<String, Arc<Binding>>,
    /// RoleBindings by (namespace, name).
    pub role_bindings: BTreeMap<(String, String), Arc<Binding>>,
}

impl Objects {
    /// Applies a stored object (`Some`) or its deletion (`None`) of `kind`.
    pub fn apply(&mut self, kind: Kind, namespace: &str, name: &str, object: Option<&Value>) {
        let key = (namespace.to_string(), name.to_string());
        match (kind, object) {
            (Kind::ClusterRole, Some(o)) => {
                self.cluster_roles.insert(name.to_string(), Arc::new(PolicyRule::list_from(o)));
            }
            (Kind::ClusterRole, None) => {
                self.cluster_roles.remove(name);
            }
            (Kind::Role, Some(o)) => {
                self.roles.insert(key, Arc::new(PolicyRule::list_from(o)));
            }
            (Kind::Role, None) => {
                self.roles.remove(&key);
            }
            (Kind::ClusterRoleBinding, Some(o)) => {
                self.cluster_bindings.insert(name.to_string(), Arc::new(Binding::from_json(o)));
            }
            (Kind::ClusterRoleBinding, None) => {
                self.cluster_bindings.remove(name);
            }
            (Kind::RoleBinding, Some(o)) => {
                self.role_bindings.insert(key, Arc::new(Binding::from_json(o)));
            }
            (Kind::RoleBinding, None) => {
                self.role_bindings.remove(&key);
            }
        }
    }

    /// Forgets every object of `kind` (before a re-list).
    pub fn clear(&mut self, kind: Kind) {
        match kind {
            Kind::ClusterRole => self.cluster_roles.clear(),
            Kind::Role => self.roles.clear(),
            Kind::ClusterRoleBinding => self.cluster_bindings.clear(),
            Kind::RoleBinding => self.role_bindings.clear(),
        }
    }
}

/// One binding as a subject key finds it: the binding and the subject of
/// it that matched.
#[derive(Clone, Debug)]
pub struct Grant {
    /// The binding.
    pub binding: Arc<Binding>,
    /// The index into `binding.subjects` of the matching subject.
    pub subject: usize,
}

impl Grant {
    /// Upstream's allow reason text for this grant.
    pub fn describe(&self) -> String {
        self.binding.describe(&self.binding.subjects[self.subject])
    }
}

/// The immutable lookup tables one decision reads.
#[derive(Default)]
pub struct Snapshot {
    /// ClusterRoles' rules by name.
    pub cluster_roles: HashMap<String, Arc<Vec<PolicyRule>>>,
    /// Roles' rules by (namespace, name).
    pub roles: HashMap<(String, String), Arc<Vec<PolicyRule>>>,
    /// ClusterRoleBinding grants, in binding-name order.
    pub cluster_grants: Grants,
    /// RoleBinding grants by namespace.
    pub role_grants: HashMap<String, Grants>,
}

impl Snapshot {
    /// Builds the tables from `objects`.
    pub fn build(objects: &Objects) -> Snapshot {
        let mut cluster_grants = Grants::default();
        for binding in objects.cluster_bindings.values() {
            for (i, subject) in binding.subjects.iter().enumerate() {
                if let Some(key) = subject.key("") {
                    cluster_grants.add(key, Grant { binding: binding.clone(), subject: i });
                }
            }
        }
        let mut role_grants: HashMap<String, Grants> = HashMap::new();
        for binding in objects.role_bindings.values() {
            for (i, subject) in binding.subjects.iter().enumerate() {
                if let Some(key) = subject.key(&binding.namespace) {
                    let grant = Grant { binding: binding.clone(), subject: i };
                    role_grants.entry(binding.namespace.clone()).or_default().add(key, grant);
                }
            }
        }
        Snapshot {
            cluster_roles: objects.cluster_roles.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            roles: objects.roles.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            cluster_grants,
            role_grants,
        }
    }

    /// The rules a binding's roleRef names in `namespace`, or upstream's
    /// NotFound text when the role does not exist.
    pub fn role_rules(&self, binding: &Binding) -> Result<&Arc<Vec<PolicyRule>>, String> {
        match binding.role_kind.as_str() {
            "ClusterRole" => self
                .cluster_roles
                .get(&binding.role_name)
                .ok_or_else(|| format!("clusterrole.rbac.authorization.k8s.io \"{}\" not found", binding.role_name)),
            "Role" => self
                .roles
                .get(&(binding.namespace.clone(), binding.role_name.clone()))
                .ok_or_else(|| format!("role.rbac.authorization.k8s.io \"{}\" not found", binding.role_name)),
            other => Err(format!("unsupported role reference kind: \"{other}\"")),
        }
    }

    /// Every grant that applies to `user_name`/`groups`: ClusterRoleBinding
    /// grants first, then (with a namespace) the RoleBinding grants of
    /// `namespace` (upstream's `VisitRulesFor` order). `visit` returns
    /// false to stop.
    pub fn visit_grants(
        &self,
        user_name: &str,
        groups: &[String],
        namespace: &str,
        mut visit: impl FnMut(&Grant) -> bool,
    ) {
        if !self.cluster_grants.visit(user_name, groups, &mut visit) || namespace.is_empty() {
            return;
        }
        if let Some(in_ns) = self.role_grants.get(namespace) {
            in_ns.visit(user_name, groups, &mut visit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn service_account_subjects_default_to_the_binding_namespace() {
        let b = Binding::from_json(&json!({
            "metadata": {"name": "b", "namespace": "team"},
            "roleRef": {"kind": "Role", "name": "r"},
            "subjects": [{"kind": "ServiceAccount", "name": "sa"}, {"kind": "ServiceAccount", "name": "x", "namespace": "other"}]
        }));
        assert_eq!(b.subjects[0].key("team").unwrap(), SubjectKey::User("system:serviceaccount:team:sa".into()));
        assert_eq!(b.subjects[1].key("team").unwrap(), SubjectKey::User("system:serviceaccount:other:x".into()));
        assert_eq!(b.subjects[0].key(""), None);
        assert_eq!(b.describe(&b.subjects[0]), r#"RoleBinding "b/team" of Role "r" to ServiceAccount "sa/team""#);
    }

    #[test]
    fn grants_are_found_by_user_and_group_cluster_first() {
        let mut objects = Objects::default();
        let crb = json!({"metadata": {"name": "c"}, "roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "Group", "name": "devs"}]});
        let rb = json!({"metadata": {"name": "r", "namespace": "ns"}, "roleRef": {"kind": "Role", "name": "missing"},
            "subjects": [{"kind": "User", "name": "bob"}]});
        objects.apply(Kind::ClusterRoleBinding, "", "c", Some(&crb));
        objects.apply(Kind::RoleBinding, "ns", "r", Some(&rb));
        let snap = Snapshot::build(&objects);
        let mut seen = Vec::new();
        snap.visit_grants("bob", &["devs".to_string()], "ns", |g| {
            seen.push(g.binding.name.clone());
            true
        });
        assert_eq!(seen, ["c", "r"]);
        let r = &snap.role_grants["ns"].users["bob"][0];
        assert_eq!(snap.role_rules(&r.binding).unwrap_err(), r#"role.rbac.authorization.k8s.io "missing" not found"#);
        objects.apply(Kind::RoleBinding, "ns", "r", None);
        assert!(Snapshot::build(&objects).role_grants.is_empty());
    }
}
