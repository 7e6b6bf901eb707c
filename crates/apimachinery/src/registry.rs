//! The resource registry: every API resource rkube serves, with upstream's
//! group, version, kind, plural and singular names, scope, verbs, short
//! names, categories and subresources (Kubernetes 1.33).
//!
//! Discovery documents, URL routing, RBAC resource names and kubectl's name
//! resolution all derive from this one table; adding a resource means adding
//! one [`ResourceInfo`] (see [`builtin`]).

mod builtin;

pub use builtin::builtin_resources;

/// Whether a resource lives in a namespace (`/namespaces/{ns}/...`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    Namespaced,
    Cluster,
}

/// A group/version/kind triple (`schema.GroupVersionKind`). The core group
/// is the empty string.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupVersionKind {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
}

impl GroupVersionKind {
    /// `apiVersion` as written in objects: `v1` for core, `apps/v1` otherwise.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// A subresource such as `status`, `scale` or `log`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubresourceInfo {
    /// The subresource name (`status`, `scale`, `binding`, `eviction`, `log`, …).
    pub name: &'static str,
    /// The kind its requests and responses use (e.g. `autoscaling/v1 Scale`,
    /// `policy/v1 Eviction`, or the parent kind for `status`).
    pub kind: GroupVersionKind,
    /// Verbs allowed on it, sorted (`get`, `patch`, `update`, `create`, …).
    pub verbs: &'static [&'static str],
}

/// One API resource as upstream's discovery describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceInfo {
    /// API group; `""` for core (`/api/v1`).
    pub group: &'static str,
    /// Version (`v1`, `v2`, …).
    pub version: &'static str,
    /// Kind of a single object (`Pod`).
    pub kind: &'static str,
    /// Kind of a list (`PodList`).
    pub list_kind: &'static str,
    /// Plural resource name used in URLs (`pods`).
    pub plural: &'static str,
    /// Singular name (`pod`).
    pub singular: &'static str,
    /// Namespaced or cluster-scoped.
    pub scope: Scope,
    /// Verbs, sorted as upstream's discovery lists them
    /// (`create`, `delete`, `deletecollection`, `get`, `list`, `patch`, `update`, `watch`).
    pub verbs: &'static [&'static str],
    /// Short names (`po`, `deploy`, …).
    pub short_names: &'static [&'static str],
    /// Categories (`all`, …).
    pub categories: &'static [&'static str],
    /// Subresources.
    pub subresources: &'static [SubresourceInfo],
    /// Whether this group-version is the group's preferred one (e.g.
    /// `autoscaling/v2` is preferred over `autoscaling/v1`).
    pub preferred: bool,
}

impl ResourceInfo {
    /// The object's group/version/kind.
    pub fn gvk(&self) -> GroupVersionKind {
        GroupVersionKind { group: self.group, version: self.version, kind: self.kind }
    }

    /// `apiVersion` of this resource's objects.
    pub fn api_version(&self) -> String {
        self.gvk().api_version()
    }

    /// `pods` for core, `deployments.apps` otherwise: the form used in
    /// Status details (`details.kind` is the plural, `details.group` the group)
    /// and RBAC/log messages.
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// Looks up a subresource by name.
    pub fn subresource(&self, name: &str) -> Option<&SubresourceInfo> {
        self.subresources.iter().find(|s| s.name == name)
    }

    /// Whether `verb` is allowed on the resource itself.
    pub fn allows(&self, verb: &str) -> bool {
        self.verbs.contains(&verb)
    }
}

/// The set of served resources, with lookups by URL segments and by kind.
#[derive(Clone, Debug)]
pub struct Registry {
    resources: Vec<ResourceInfo>,
}

impl Registry {
    /// The built-in resources of Kubernetes 1.33.
    pub fn builtin() -> Self {
        Registry { resources: builtin_resources() }
    }

    /// All resources, in discovery order (core first, then groups as
    /// upstream orders them).
    pub fn resources(&self) -> &[ResourceInfo] {
        &self.resources
    }

    /// The resource served at `/apis/{group}/{version}/{plural}` (or
    /// `/api/v1/{plural}` for core).
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceInfo> {
        self.resources.iter().find(|r| r.group == group && r.version == version && r.plural == plural)
    }

    /// The resource whose objects have this group, version and kind.
    pub fn lookup_kind(&self, group: &str, version: &str, kind: &str) -> Option<&ResourceInfo> {
        self.resources.iter().find(|r| r.group == group && r.version == version && r.kind == kind)
    }
}
