//! The resource registry: every API resource rkube serves, with upstream's
//! group, version, kind, plural and singular names, scope, verbs, short
//! names, categories and subresources (Kubernetes 1.33).
//!
//! Discovery documents, URL routing, RBAC resource names and kubectl's name
//! resolution all derive from this one table; adding a resource means adding
//! one [`ResourceInfo`] (see [`builtin`]).
//!
//! Order matters and follows upstream: groups are ordered as the
//! kube-aggregator orders them in `/apis` (by APIService
//! `groupPriorityMinimum`, highest first, then by name), versions inside a
//! group by `versionPriority` (highest first: the preferred version), and
//! resources inside a group-version by plural name. Name resolution walks
//! that order, so the core group wins ambiguous names (`ev` → core events),
//! as kubectl's RESTMapper does.

mod builtin;

use std::cmp::Ordering;
use std::collections::HashMap;
use std::ops::Range;

pub use builtin::{builtin_group_priorities, builtin_resources, metrics_resources, METRICS_GROUP_PRIORITY};

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
    /// `policy/v1 Eviction`, or the parent kind for `status`). Always fully
    /// qualified; discovery writes `group`/`version` only when they differ
    /// from the parent's group-version, as upstream does.
    pub kind: GroupVersionKind,
    /// Verbs allowed on it, sorted (`get`, `patch`, `update`, `create`, …).
    pub verbs: &'static [&'static str],
}

/// Where a resource's objects are kept. Resources that are computed or only
/// accept a request (bindings, reviews, componentstatuses) have none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StorageInfo {
    /// The key segment: objects live under `/registry/<resource>/[<namespace>/]<name>`.
    /// Two resources with the same storage resource share their objects:
    /// `autoscaling/v1` and `autoscaling/v2` `horizontalpodautoscalers`, and
    /// core `events` and `events.k8s.io` `events`.
    pub resource: &'static str,
    /// The storage version: the kind objects are encoded in at rest
    /// (`autoscaling/v2 HorizontalPodAutoscaler` for both HPA versions, core
    /// `v1 Event` for events.k8s.io). Discovery's `storageVersionHash` is
    /// derived from it, so clients can tell that two resources share storage.
    pub version: GroupVersionKind,
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
    /// Kind of a list (`PodList`); empty for resources that cannot be listed
    /// (bindings, the review APIs).
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
    /// Subresources, sorted by name.
    pub subresources: &'static [SubresourceInfo],
    /// Whether this group-version is the group's preferred one (e.g.
    /// `autoscaling/v2` is preferred over `autoscaling/v1`). [`Registry::new`]
    /// recomputes it from the group priorities.
    pub preferred: bool,
    /// Where the objects are stored; `None` for virtual resources.
    pub storage: Option<StorageInfo>,
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

    /// Whether the resource lives in namespaces.
    pub fn namespaced(&self) -> bool {
        self.scope == Scope::Namespaced
    }

    /// Whether `name` (lower case) names this resource the way kubectl
    /// accepts it: the plural, the singular or a short name.
    pub fn is_named(&self, name: &str) -> bool {
        self.plural == name || self.singular == name || self.short_names.contains(&name)
    }

    /// Whether the resource is in `category` (`all`, `api-extensions`).
    pub fn in_category(&self, category: &str) -> bool {
        self.categories.contains(&category)
    }
}

/// The discovery priority of an API group and its versions: the
/// `groupPriorityMinimum` and `versionPriority` of the APIService objects
/// that kube-apiserver registers for its built-in groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupPriority {
    /// The group name (`""` for core).
    pub group: &'static str,
    /// `groupPriorityMinimum`: higher comes first in `/apis`.
    pub priority: u32,
    /// `(version, versionPriority)`: higher is preferred.
    pub versions: &'static [(&'static str, u32)],
}

/// Priorities of a group no [`GroupPriority`] names (e.g. a CRD's group):
/// upstream registers CRD group-versions with `groupPriorityMinimum` 1000
/// and `versionPriority` 100, after every built-in group.
pub const DEFAULT_GROUP_PRIORITY: u32 = 1000;
/// See [`DEFAULT_GROUP_PRIORITY`].
pub const DEFAULT_VERSION_PRIORITY: u32 = 100;

/// One served API group with its versions, preferred version first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiGroup {
    /// Group name; `""` for core.
    pub name: &'static str,
    /// Served versions, in discovery order (the preferred one first).
    pub versions: Vec<&'static str>,
}

impl ApiGroup {
    /// The preferred version (the first one).
    pub fn preferred_version(&self) -> &'static str {
        self.versions[0]
    }

    /// `apps/v1`, or `v1` for core.
    pub fn group_version(&self, version: &str) -> String {
        if self.name.is_empty() {
            version.to_string()
        } else {
            format!("{}/{version}", self.name)
        }
    }
}

/// The set of served resources, with lookups by URL segments, by kind and
/// by the names kubectl accepts.
///
/// Resources are kept in discovery order: groups by priority (core first),
/// versions preferred first, resources by plural; every lookup is a hash
/// lookup or a walk of that order.
#[derive(Clone, Debug)]
pub struct Registry {
    resources: Vec<ResourceInfo>,
    groups: Vec<ApiGroup>,
    /// Group name → index in `groups`.
    group_index: HashMap<&'static str, usize>,
    /// (group, version) → range of `resources`.
    group_versions: HashMap<(&'static str, &'static str), Range<usize>>,
    /// (group, version, plural) → index in `resources`.
    by_resource: HashMap<(&'static str, &'static str, &'static str), usize>,
    /// (group, version, kind) → index in `resources`.
    by_kind: HashMap<(&'static str, &'static str, &'static str), usize>,
    /// Plural, singular and short names → indexes in `resources`, in
    /// discovery order.
    by_name: HashMap<&'static str, Vec<usize>>,
}

impl Registry {
    /// The built-in resources of Kubernetes 1.33.
    pub fn builtin() -> Self {
        Self::new(builtin_resources(), builtin_group_priorities())
    }

    /// What rkube's API server serves: the [`Registry::builtin`] resources
    /// plus the resource metrics API (`metrics.k8s.io/v1beta1`, the
    /// built-in metrics-server; [`metrics_resources`]) at its APIService
    /// priority ([`METRICS_GROUP_PRIORITY`]).
    pub fn served() -> Self {
        let mut priorities = builtin_group_priorities().to_vec();
        priorities.push(METRICS_GROUP_PRIORITY);
        Self::new([builtin_resources(), metrics_resources()].concat(), &priorities)
    }

    /// A registry of `resources`, core first, then ordered by `priorities` (groups missing
    /// from it get [`DEFAULT_GROUP_PRIORITY`] / [`DEFAULT_VERSION_PRIORITY`]
    /// and sort after the built-in groups; equal priorities sort groups by
    /// name and versions Kubernetes-aware, `v2` > `v1` > `v1beta1` >
    /// `v1alpha1`). `preferred` is recomputed: the first version of each group.
    pub fn new(mut resources: Vec<ResourceInfo>, priorities: &[GroupPriority]) -> Self {
        let group_priority =
            |g: &str| priorities.iter().find(|p| p.group == g).map_or(DEFAULT_GROUP_PRIORITY, |p| p.priority);
        let version_priority = |g: &str, v: &str| {
            priorities
                .iter()
                .find(|p| p.group == g)
                .and_then(|p| p.versions.iter().find(|(pv, _)| *pv == v))
                .map_or(DEFAULT_VERSION_PRIORITY, |(_, prio)| *prio)
        };
        resources.sort_by(|a, b| {
            // Core first: it is served apart, at /api, and wins ambiguous names.
            b.group
                .is_empty()
                .cmp(&a.group.is_empty())
                .then_with(|| group_priority(b.group).cmp(&group_priority(a.group)))
                .then_with(|| a.group.cmp(b.group))
                .then_with(|| version_priority(b.group, b.version).cmp(&version_priority(a.group, a.version)))
                .then_with(|| compare_kube_versions(b.version, a.version))
                .then_with(|| a.plural.cmp(b.plural))
        });

        let mut groups: Vec<ApiGroup> = Vec::new();
        let mut group_index = HashMap::new();
        let mut group_versions: HashMap<(&'static str, &'static str), Range<usize>> = HashMap::new();
        let mut by_resource = HashMap::new();
        let mut by_kind = HashMap::new();
        let mut by_name: HashMap<&'static str, Vec<usize>> = HashMap::new();
        for (i, r) in resources.iter().enumerate() {
            let gi = *group_index.entry(r.group).or_insert_with(|| {
                groups.push(ApiGroup { name: r.group, versions: Vec::new() });
                groups.len() - 1
            });
            if !groups[gi].versions.contains(&r.version) {
                groups[gi].versions.push(r.version);
            }
            group_versions.entry((r.group, r.version)).or_insert(i..i).end = i + 1;
            by_resource.entry((r.group, r.version, r.plural)).or_insert(i);
            by_kind.entry((r.group, r.version, r.kind)).or_insert(i);
            let mut names = vec![r.plural, r.singular];
            names.extend(r.short_names.iter().copied());
            names.dedup();
            for name in names.into_iter().filter(|n| !n.is_empty()) {
                by_name.entry(name).or_default().push(i);
            }
        }
        for r in &mut resources {
            r.preferred = groups[group_index[r.group]].preferred_version() == r.version;
        }
        Registry { resources, groups, group_index, group_versions, by_resource, by_kind, by_name }
    }

    /// All resources, in discovery order (core first, then groups as
    /// upstream orders them; preferred version first; by plural).
    pub fn resources(&self) -> &[ResourceInfo] {
        &self.resources
    }

    /// The served groups in discovery order (core first), each with its
    /// versions (preferred first).
    pub fn groups(&self) -> &[ApiGroup] {
        &self.groups
    }

    /// The group named `name` (`""` for core).
    pub fn group(&self, name: &str) -> Option<&ApiGroup> {
        self.group_index.get(name).map(|&i| &self.groups[i])
    }

    /// The resources of one group-version, sorted by plural; empty if the
    /// group-version is not served.
    pub fn group_version_resources(&self, group: &str, version: &str) -> &[ResourceInfo] {
        match self.group_versions.get(&(group, version)) {
            Some(range) => &self.resources[range.clone()],
            None => &[],
        }
    }

    /// Whether `group`/`version` is served.
    pub fn serves(&self, group: &str, version: &str) -> bool {
        self.group_versions.contains_key(&(group, version))
    }

    /// The resource served at `/apis/{group}/{version}/{plural}` (or
    /// `/api/v1/{plural}` for core).
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceInfo> {
        self.by_resource.get(&(group, version, plural)).map(|&i| &self.resources[i])
    }

    /// The resource whose objects have this group, version and kind.
    pub fn lookup_kind(&self, group: &str, version: &str, kind: &str) -> Option<&ResourceInfo> {
        self.by_kind.get(&(group, version, kind)).map(|&i| &self.resources[i])
    }

    /// The resource `plural` of `group` in the group's preferred version
    /// that serves it (`horizontalpodautoscalers` → `autoscaling/v2`).
    pub fn preferred(&self, group: &str, plural: &str) -> Option<&ResourceInfo> {
        let g = self.group(group)?;
        g.versions.iter().find_map(|v| self.lookup(group, v, plural))
    }

    /// Every resource (all groups and versions) that `name` names, in
    /// discovery order: plural, singular or short name, compared lower-cased.
    pub fn named(&self, name: &str) -> impl Iterator<Item = &ResourceInfo> + '_ {
        let lower = name.to_ascii_lowercase();
        self.by_name.get(lower.as_str()).into_iter().flatten().map(|&i| &self.resources[i])
    }

    /// Resolves a resource argument the way kubectl does (`kubectl get
    /// <arg>`): `pods`, `pod`, `po`, `Pods`; `deployments.apps`,
    /// `deploy.apps`; `deployments.v1.apps`; `horizontalpodautoscalers.v1.autoscaling`.
    ///
    /// As in `schema.ParseResourceArg` followed by the RESTMapper: with two
    /// or more dots, `resource.version.group` is tried first, then
    /// `resource.group`; a bare name matches in discovery order, so the core
    /// group wins (`ev` → core `events`) and the preferred version is chosen
    /// (`hpa` → `autoscaling/v2`).
    pub fn resolve(&self, arg: &str) -> Option<&ResourceInfo> {
        let arg = arg.to_ascii_lowercase();
        if let Some((name, rest)) = arg.split_once('.') {
            if let Some((version, group)) = rest.split_once('.') {
                if let Some(r) = self.named(name).find(|r| r.group == group && r.version == version) {
                    return Some(r);
                }
            }
            return self.named(name).find(|r| r.group == rest);
        }
        self.named(&arg).next()
    }

    /// Resources in `category` (`all`, `api-extensions`), one per group and
    /// plural, from the preferred version, in discovery order: what
    /// `kubectl get all` expands to.
    pub fn category(&self, category: &str) -> Vec<&ResourceInfo> {
        let mut seen = std::collections::HashSet::new();
        self.resources.iter().filter(|r| r.in_category(category) && seen.insert((r.group, r.plural))).collect()
    }
}

/// Orders version strings as Kubernetes does (`version.CompareKubeAwareVersionStrings`):
/// GA before beta before alpha, then by major and minor number, highest
/// first; strings that do not look like `v<N>[alpha|beta<M>]` sort after
/// all that do, alphabetically. Returns `Greater` if `a` sorts before `b`
/// (`a` is the "higher" version).
pub fn compare_kube_versions(a: &str, b: &str) -> Ordering {
    fn parse(v: &str) -> Option<(u8, u64, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let major: u64 = rest[..digits].parse().ok()?;
        let tail = &rest[digits..];
        if tail.is_empty() {
            return Some((2, major, 0));
        }
        let (stage, minor) = if let Some(m) = tail.strip_prefix("beta") {
            (1, m)
        } else if let Some(m) = tail.strip_prefix("alpha") {
            (0, m)
        } else {
            return None;
        };
        if minor.is_empty() || !minor.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        Some((stage, major, minor.parse().ok()?))
    }
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => Ordering::Greater,
        (None, Some(_)) => Ordering::Less,
        (None, None) => b.cmp(a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_aware_version_order() {
        let mut v = vec![
            "v1alpha1",
            "foo1",
            "v2",
            "v1beta1",
            "v10",
            "v1",
            "v11beta2",
            "v10beta3",
            "v3beta1",
            "v12alpha1",
            "v11alpha2",
            "foo10",
        ];
        v.sort_by(|a, b| compare_kube_versions(b, a));
        // The example order from upstream's APIService versionPriority docs.
        assert_eq!(
            v,
            [
                "v10",
                "v2",
                "v1",
                "v11beta2",
                "v10beta3",
                "v3beta1",
                "v1beta1",
                "v12alpha1",
                "v11alpha2",
                "v1alpha1",
                "foo1",
                "foo10"
            ]
        );
    }
}
