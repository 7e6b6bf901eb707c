//! Per-field vendor extensions that upstream's generator takes from Go
//! struct tags and markers, which the `k8s-openapi` schemas lack:
//! `x-kubernetes-patch-strategy` / `x-kubernetes-patch-merge-key` (from
//! `patchStrategy` / `patchMergeKey` tags) and `x-kubernetes-list-type` /
//! `x-kubernetes-list-map-keys` / `x-kubernetes-map-type` (from
//! `+listType`, `+listMapKey`, `+mapType` markers).
//!
//! kubectl reads the patch extensions to compute client-side `apply`
//! patches from OpenAPI (v3 first, then v2). A list served without its
//! merge key would be diffed as a whole and then *merged* by the server,
//! so removed entries would survive; that is why
//! [`strategic_merge_supported`] gates advertising
//! `application/strategic-merge-patch+json` in the patch operations: while
//! it is false, kubectl falls back to the strategies compiled into it,
//! which are correct for every built-in kind.
//!
//! The patch extensions come from the patch-metadata table of
//! [`crate::patch::metadata`] (the same facts the server's strategic merge
//! patch uses), keyed by definition name and field.
//!
//! `x-kubernetes-list-type` and `-list-map-keys` come from the same facts
//! that server-side apply uses to name list items
//! ([`crate::apply::fieldset::list_type`]): `merge` lists are `map` lists
//! keyed by their merge key (or upstream's explicit keys), or `set`s. The
//! explicit markers upstream puts on other lists (`atomic` lists, granular
//! or atomic maps) have no table here and are not emitted.

use crate::apply::fieldset::ListType;

/// The extensions of one field of one definition.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FieldExtensions {
    /// `x-kubernetes-patch-strategy`: `merge`, `retainKeys`, `replace` or a
    /// comma-separated combination (`merge,retainKeys`).
    pub patch_strategy: Option<&'static str>,
    /// `x-kubernetes-patch-merge-key`: the key identifying list entries.
    pub patch_merge_key: Option<&'static str>,
    /// `x-kubernetes-list-type`: `atomic`, `set` or `map`.
    pub list_type: Option<&'static str>,
    /// `x-kubernetes-list-map-keys` of a `map` list.
    pub list_map_keys: Option<&'static [&'static str]>,
    /// `x-kubernetes-map-type`: `atomic` or `granular`.
    pub map_type: Option<&'static str>,
}

/// The extensions of `field` in the definition `definition` (e.g.
/// `io.k8s.api.core.v1.PodSpec`, `containers`), if it has any.
pub fn field_extensions(definition: &str, field: &str) -> Option<FieldExtensions> {
    let info = crate::patch::metadata::field_info(definition, field)?;
    let (list_type, list_map_keys) = match crate::apply::fieldset::list_type(definition, info) {
        Some(ListType::Map(keys)) => (Some("map"), Some(keys)),
        Some(ListType::Set) => (Some("set"), None),
        Some(ListType::Atomic) | None => (None, None),
    };
    let ext = FieldExtensions {
        patch_strategy: info.strategy.extension_value(),
        patch_merge_key: info.merge_key,
        list_type,
        list_map_keys,
        ..FieldExtensions::default()
    };
    (ext != FieldExtensions::default()).then_some(ext)
}

/// Whether the schemas carry the patch extensions, so that the patch
/// operations of built-in kinds may advertise strategic merge patch.
pub fn strategic_merge_supported() -> bool {
    !crate::patch::metadata::types().is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patch_extensions_come_from_the_patch_metadata_table() {
        let c = field_extensions("io.k8s.api.core.v1.PodSpec", "containers").unwrap();
        assert_eq!((c.patch_strategy, c.patch_merge_key), (Some("merge"), Some("name")));
        assert_eq!((c.list_type, c.list_map_keys), (Some("map"), Some(&["name"][..])));
        let v = field_extensions("io.k8s.api.core.v1.PodSpec", "volumes").unwrap();
        assert_eq!(v.patch_strategy, Some("merge,retainKeys"));
        // Upstream keys container ports by port and protocol, not by the merge key alone.
        let p = field_extensions("io.k8s.api.core.v1.Container", "ports").unwrap();
        assert_eq!(
            (p.patch_merge_key, p.list_map_keys),
            (Some("containerPort"), Some(&["containerPort", "protocol"][..]))
        );
        let f = field_extensions("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "finalizers").unwrap();
        assert_eq!((f.list_type, f.list_map_keys), (Some("set"), None));
        let o = field_extensions("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "ownerReferences").unwrap();
        assert_eq!((o.patch_strategy, o.patch_merge_key), (Some("merge"), Some("uid")));
        // A field that only leads to metadata further down has none itself.
        assert_eq!(field_extensions("io.k8s.api.core.v1.Pod", "spec"), None);
        assert!(strategic_merge_supported());
    }
}
