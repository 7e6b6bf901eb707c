//! Patch metadata of the built-in types: which fields merge lists by key,
//! merge primitive lists as sets, retain keys, or replace wholesale.
//!
//! Upstream derives this from Go struct tags (`patchStrategy`,
//! `patchMergeKey`) and publishes the same facts in OpenAPI as
//! `x-kubernetes-patch-strategy` and `x-kubernetes-patch-merge-key`. Here
//! they are a static table (generated rows in `metadata/table.rs`) keyed by
//! the OpenAPI definition name of each type (`io.k8s.api.core.v1.PodSpec`,
//! `io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta`, …), plus an index from
//! group/version/kind to the root type.
//!
//! Queries:
//! - by kind and JSON path: [`strategy_for`] (`"apps"`, `"v1"`, `"Deployment"`,
//!   `["spec", "template", "spec", "containers"]`) → the field's
//!   [`FieldInfo`] (strategy, merge key);
//! - by type: [`type_info`] / [`field_info`] / [`types`], for generating OpenAPI
//!   extensions per definition ([`PatchStrategy::extension_value`] gives the
//!   exact `x-kubernetes-patch-strategy` string);
//! - by kind: [`kind_type`], [`is_builtin_kind`].
//!
//! Only types that carry a strategy or lead to one are listed; a field absent
//! from the table patches with the default rules (maps merge recursively,
//! lists are replaced whole, scalars are replaced).

mod table;

use std::fmt;

/// What a field holds in JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldShape {
    /// A string, number or boolean (or a type serialized as one, like `Quantity`).
    Scalar,
    /// A JSON object with fixed fields (a Go struct).
    Struct,
    /// A JSON array.
    List,
    /// A JSON object with arbitrary keys (a Go map).
    Map,
}

/// A field's patch strategy flags (`x-kubernetes-patch-strategy`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PatchStrategy(u8);

/// No strategy: maps merge, lists are replaced.
pub const NONE: PatchStrategy = PatchStrategy(0);
/// `merge`: list items are matched by the merge key (or, for primitive lists,
/// merged as a set).
pub const MERGE: PatchStrategy = PatchStrategy(1);
/// `retainKeys`: a client computing a patch sends `$retainKeys` for this map
/// (or for the items of this list); keys not listed are cleared.
pub const RETAIN_KEYS: PatchStrategy = PatchStrategy(2);
/// `replace`: the value is replaced whole, never merged.
pub const REPLACE: PatchStrategy = PatchStrategy(4);
/// `merge,retainKeys` (e.g. `PodSpec.volumes`).
pub const MERGE_RETAIN_KEYS: PatchStrategy = PatchStrategy(1 | 2);

impl PatchStrategy {
    /// Whether the field has `merge`.
    pub fn is_merge(self) -> bool {
        self.0 & MERGE.0 != 0
    }

    /// Whether the field has `retainKeys`.
    pub fn retains_keys(self) -> bool {
        self.0 & RETAIN_KEYS.0 != 0
    }

    /// Whether the field has `replace`.
    pub fn is_replace(self) -> bool {
        self.0 & REPLACE.0 != 0
    }

    /// Whether no strategy is set.
    pub fn is_none(self) -> bool {
        self.0 == 0
    }

    /// The value of `x-kubernetes-patch-strategy` as upstream publishes it
    /// (`merge`, `retainKeys`, `merge,retainKeys`, `replace`), or `None`.
    pub fn extension_value(self) -> Option<&'static str> {
        match (self.is_merge(), self.retains_keys(), self.is_replace()) {
            (false, false, false) => None,
            (true, false, false) => Some("merge"),
            (false, true, false) => Some("retainKeys"),
            (true, true, false) => Some("merge,retainKeys"),
            (false, false, true) => Some("replace"),
            (false, true, true) => Some("replace,retainKeys"),
            _ => Some("merge"),
        }
    }
}

impl std::ops::BitOr for PatchStrategy {
    type Output = PatchStrategy;
    fn bitor(self, rhs: PatchStrategy) -> PatchStrategy {
        PatchStrategy(self.0 | rhs.0)
    }
}

impl fmt::Debug for PatchStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.extension_value().unwrap_or("none"))
    }
}

/// One field of a listed type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldInfo {
    /// The JSON field name (`containers`).
    pub name: &'static str,
    /// What the field holds.
    pub shape: FieldShape,
    /// Its patch strategy.
    pub strategy: PatchStrategy,
    /// `x-kubernetes-patch-merge-key` (`name`, `containerPort`, `uid`, …).
    pub merge_key: Option<&'static str>,
    /// The listed type of the value — the element type for lists, the value
    /// type for maps — or `None` when that type has no patch metadata.
    pub type_name: Option<&'static str>,
}

impl FieldInfo {
    /// The listed type of the value, if any.
    pub fn value_type(&self) -> Option<&'static TypeInfo> {
        self.type_name.and_then(type_info)
    }
}

/// A type with patch metadata somewhere beneath it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TypeInfo {
    /// OpenAPI definition name (`io.k8s.api.core.v1.PodSpec`).
    pub name: &'static str,
    /// Fields that carry a strategy or lead to a listed type, sorted by name.
    pub fields: &'static [FieldInfo],
}

impl TypeInfo {
    /// Looks up a field by JSON name.
    pub fn field(&self, name: &str) -> Option<&'static FieldInfo> {
        self.fields.binary_search_by(|f| f.name.cmp(name)).ok().map(|i| &self.fields[i])
    }
}

/// A kind and the type of its objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KindInfo {
    /// API group (`""` for core).
    pub group: &'static str,
    /// Version.
    pub version: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// OpenAPI definition name of the kind's type.
    pub type_name: &'static str,
}

const fn f(
    name: &'static str,
    shape: FieldShape,
    strategy: PatchStrategy,
    merge_key: Option<&'static str>,
    type_name: Option<&'static str>,
) -> FieldInfo {
    FieldInfo { name, shape, strategy, merge_key, type_name }
}

/// Every listed type, sorted by name.
pub fn types() -> &'static [TypeInfo] {
    table::TYPES
}

/// Every built-in kind (all versions upstream defines), sorted by
/// group, version, kind.
pub fn kinds() -> &'static [KindInfo] {
    table::KINDS
}

/// The listed type with this OpenAPI definition name.
pub fn type_info(name: &str) -> Option<&'static TypeInfo> {
    if let Ok(i) = table::TYPES.binary_search_by(|t| t.name.cmp(name)) {
        return Some(&table::TYPES[i]);
    }
    #[cfg(test)]
    if let Some(t) = test_types::TYPES.iter().find(|t| t.name == name) {
        return Some(t);
    }
    None
}

/// Synthetic types for unit tests of the patch mechanics: one field per
/// strategy (shaped like the test type upstream's strategicpatch tests use).
#[cfg(test)]
pub(crate) mod test_types {
    use super::{f, FieldShape::*, TypeInfo, MERGE, MERGE_RETAIN_KEYS, NONE, REPLACE, RETAIN_KEYS};

    /// `test.mergeItem`.
    pub const ITEM: &str = "test.mergeItem";

    pub static TYPES: &[TypeInfo] = &[
        TypeInfo {
            name: "test.mergeItem",
            fields: &[
                f("mergeItemPtr", Struct, MERGE, Some("name"), Some("test.mergeItem")),
                f("mergingIntList", List, MERGE, None, None),
                f("mergingList", List, MERGE, Some("name"), Some("test.mergeItem")),
                f("nonMergingIntList", List, NONE, None, None),
                f("nonMergingList", List, NONE, None, Some("test.mergeItem")),
                f("replacingItem", Struct, REPLACE, None, None),
                f("retainKeysMap", Struct, RETAIN_KEYS, None, Some("test.retainKeysItem")),
                f("retainKeysMergingList", List, MERGE_RETAIN_KEYS, Some("name"), Some("test.mergeItem")),
            ],
        },
        TypeInfo {
            name: "test.retainKeysItem",
            fields: &[
                f("mergingIntList", List, MERGE, None, None),
                f("mergingList", List, MERGE, Some("name"), Some("test.mergeItem")),
                f("nonMergingList", List, NONE, None, Some("test.mergeItem")),
            ],
        },
    ];
}

/// A field of a listed type: `field_info("io.k8s.api.core.v1.PodSpec",
/// "containers")` → merge by `name`. `None` when the type is not listed or
/// the field has no patch metadata beneath it.
pub fn field_info(type_name: &str, field: &str) -> Option<&'static FieldInfo> {
    type_info(type_name)?.field(field)
}

/// The OpenAPI definition name of a built-in kind's type
/// (`("apps", "v1", "Deployment")` → `io.k8s.api.apps.v1.Deployment`).
pub fn kind_type(group: &str, version: &str, kind: &str) -> Option<&'static str> {
    table::KINDS
        .binary_search_by(|k| (k.group, k.version, k.kind).cmp(&(group, version, kind)))
        .ok()
        .map(|i| table::KINDS[i].type_name)
}

/// Whether upstream defines this kind as a built-in type.
pub fn is_builtin_kind(group: &str, version: &str, kind: &str) -> bool {
    kind_type(group, version, kind).is_some()
}

/// The root patch schema of a kind, for [`super::strategic`]. `None` when the
/// kind has no patch metadata at all (every field then patches by default
/// rules).
pub fn kind_schema(group: &str, version: &str, kind: &str) -> Option<&'static TypeInfo> {
    kind_type(group, version, kind).and_then(type_info)
}

/// [`strategy_for`] with a registry kind.
pub fn strategy_for_gvk(gvk: &crate::registry::GroupVersionKind, path: &[&str]) -> Option<&'static FieldInfo> {
    strategy_for(gvk.group, gvk.version, gvk.kind, path)
}

/// The patch metadata of the field at a JSON path inside objects of a kind.
/// Path segments are field names (`["spec", "template", "spec",
/// "containers"]`); descending through a list or map needs no index segment
/// (`["spec", "containers", "ports"]` is the `ports` field of each
/// container). Returns `None` when the kind is unknown or no metadata exists
/// at that path (the field then patches by default rules).
pub fn strategy_for(group: &str, version: &str, kind: &str, path: &[&str]) -> Option<&'static FieldInfo> {
    let mut ty = kind_schema(group, version, kind)?;
    let (last, parents) = path.split_last()?;
    for seg in parents {
        ty = ty.field(seg)?.value_type()?;
    }
    ty.field(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_sorted_for_binary_search() {
        assert!(table::TYPES.windows(2).all(|w| w[0].name < w[1].name));
        assert!(table::KINDS
            .windows(2)
            .all(|w| (w[0].group, w[0].version, w[0].kind) < (w[1].group, w[1].version, w[1].kind)));
        for t in table::TYPES {
            assert!(t.fields.windows(2).all(|w| w[0].name < w[1].name), "{}", t.name);
            for fi in t.fields {
                if let Some(n) = fi.type_name {
                    assert!(type_info(n).is_some(), "{}.{} -> {}", t.name, fi.name, n);
                }
            }
        }
    }

    fn at(g: &str, v: &str, k: &str, p: &[&str]) -> Option<(PatchStrategy, Option<&'static str>)> {
        strategy_for(g, v, k, p).map(|f| (f.strategy, f.merge_key))
    }

    #[test]
    fn pod_template_fields_as_upstream_tags() {
        let c = &["spec", "template", "spec", "containers"];
        assert_eq!(at("apps", "v1", "Deployment", c), Some((MERGE, Some("name"))));
        assert_eq!(
            at("apps", "v1", "Deployment", &["spec", "template", "spec", "volumes"]),
            Some((MERGE | RETAIN_KEYS, Some("name")))
        );
        assert_eq!(at("apps", "v1", "Deployment", &["spec", "strategy"]), Some((RETAIN_KEYS, None)));
        assert_eq!(at("", "v1", "Pod", &["spec", "containers", "ports"]), Some((MERGE, Some("containerPort"))));
        assert_eq!(at("", "v1", "Pod", &["spec", "containers", "env"]), Some((MERGE, Some("name"))));
        assert_eq!(at("", "v1", "Pod", &["spec", "containers", "volumeMounts"]), Some((MERGE, Some("mountPath"))));
        assert_eq!(at("", "v1", "Pod", &["spec", "containers", "volumeDevices"]), Some((MERGE, Some("devicePath"))));
        assert_eq!(at("", "v1", "Pod", &["spec", "ephemeralContainers", "env"]), Some((MERGE, Some("name"))));
        assert_eq!(at("", "v1", "Pod", &["spec", "initContainers"]), Some((MERGE, Some("name"))));
        assert_eq!(at("", "v1", "Pod", &["spec", "imagePullSecrets"]), Some((MERGE, Some("name"))));
        assert_eq!(at("", "v1", "Pod", &["spec", "hostAliases"]), Some((MERGE, Some("ip"))));
        assert_eq!(at("", "v1", "Pod", &["spec", "topologySpreadConstraints"]), Some((MERGE, Some("topologyKey"))));
        assert_eq!(at("", "v1", "Pod", &["spec", "schedulingGates"]), Some((MERGE, Some("name"))));
        assert_eq!(at("", "v1", "Pod", &["spec", "resourceClaims"]), Some((MERGE | RETAIN_KEYS, Some("name"))));
        assert_eq!(at("", "v1", "Pod", &["status", "conditions"]), Some((MERGE, Some("type"))));
        assert_eq!(at("", "v1", "Pod", &["status", "podIPs"]), Some((MERGE, Some("ip"))));
        assert_eq!(at("", "v1", "Pod", &["status", "hostIPs"]), Some((MERGE, Some("ip"))));
        assert_eq!(
            at("batch", "v1", "CronJob", &["spec", "jobTemplate", "spec", "template", "spec", "containers"]),
            Some((MERGE, Some("name")))
        );
        assert_eq!(
            at("apps", "v1", "StatefulSet", &["spec", "volumeClaimTemplates", "metadata", "finalizers"]),
            Some((MERGE, None))
        );
    }

    #[test]
    fn atomic_lists_have_no_strategy() {
        // Tolerations, args, command, envFrom, RBAC rules, Ingress rules: replaced whole.
        assert_eq!(at("", "v1", "Pod", &["spec", "tolerations"]), None);
        assert_eq!(at("", "v1", "Pod", &["spec", "containers", "args"]), None);
        assert_eq!(at("", "v1", "Pod", &["spec", "containers", "envFrom"]), None);
        assert_eq!(at("rbac.authorization.k8s.io", "v1", "ClusterRole", &["rules"]), None);
        assert_eq!(at("networking.k8s.io", "v1", "Ingress", &["spec", "rules"]), None);
    }

    #[test]
    fn other_kinds() {
        assert_eq!(at("", "v1", "Service", &["spec", "ports"]), Some((MERGE, Some("port"))));
        assert_eq!(at("", "v1", "Service", &["status", "conditions"]), Some((MERGE, Some("type"))));
        assert_eq!(at("", "v1", "ServiceAccount", &["secrets"]), Some((MERGE, Some("name"))));
        assert_eq!(at("", "v1", "Node", &["spec", "podCIDRs"]), Some((MERGE, None)));
        assert_eq!(at("", "v1", "Node", &["status", "addresses"]), Some((MERGE, Some("type"))));
        assert_eq!(at("", "v1", "Node", &["status", "conditions"]), Some((MERGE, Some("type"))));
        assert_eq!(at("", "v1", "ConfigMap", &["metadata", "finalizers"]), Some((MERGE, None)));
        assert_eq!(at("", "v1", "ConfigMap", &["metadata", "ownerReferences"]), Some((MERGE, Some("uid"))));
        assert_eq!(at("policy", "v1", "PodDisruptionBudget", &["spec", "selector"]), Some((REPLACE, None)));
        assert_eq!(
            at("autoscaling", "v2", "HorizontalPodAutoscaler", &["status", "conditions"]),
            Some((MERGE, Some("type")))
        );
        assert_eq!(
            at("apiregistration.k8s.io", "v1", "APIService", &["status", "conditions"]),
            Some((MERGE, Some("type")))
        );
        assert_eq!(at("storage.k8s.io", "v1", "CSINode", &["spec", "drivers"]), Some((MERGE, Some("name"))));
        assert_eq!(
            at(
                "apiextensions.k8s.io",
                "v1",
                "CustomResourceDefinition",
                &["spec", "versions", "schema", "openAPIV3Schema", "properties", "x-kubernetes-validations"]
            ),
            Some((MERGE, Some("rule")))
        );
    }

    #[test]
    fn extension_values_and_lookups() {
        assert_eq!((MERGE | RETAIN_KEYS).extension_value(), Some("merge,retainKeys"));
        assert_eq!(RETAIN_KEYS.extension_value(), Some("retainKeys"));
        assert_eq!(NONE.extension_value(), None);
        assert_eq!(kind_type("", "v1", "Pod"), Some("io.k8s.api.core.v1.Pod"));
        let gvk = crate::registry::GroupVersionKind { group: "apps", version: "v1", kind: "DaemonSet" };
        assert_eq!(
            strategy_for_gvk(&gvk, &["spec", "template", "spec", "initContainers"]).map(|f| f.merge_key),
            Some(Some("name"))
        );
        assert_eq!(strategy_for("apps", "v1", "Deployment", &[]), None);
        assert_eq!(strategy_for("apps", "v1", "Nope", &["spec"]), None);
        assert!(is_builtin_kind("apps", "v1", "Deployment"));
        assert!(!is_builtin_kind("example.com", "v1", "Widget"));
        let c = field_info("io.k8s.api.core.v1.Container", "ports").unwrap();
        assert_eq!(c.shape, FieldShape::List);
        assert_eq!(c.merge_key, Some("containerPort"));
        assert!(field_info("io.k8s.api.core.v1.Container", "image").is_none());
    }
}
