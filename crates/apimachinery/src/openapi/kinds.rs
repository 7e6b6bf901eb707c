//! The kinds whose schemas the OpenAPI documents carry, each tied to its
//! `k8s-openapi` struct (API level 1.33) and so to that struct's
//! `schemars::JsonSchema` implementation, which holds upstream's field
//! descriptions, types, formats and required lists.
//!
//! A resource of the registry gets a schema when its group/version/kind is
//! listed here; subresource kinds (`autoscaling/v1 Scale`, `policy/v1
//! Eviction`, `v1 Binding`, `authentication.k8s.io/v1 TokenRequest`) are
//! listed like any other kind. List kinds (`PodList`) are synthesised from
//! the item kind, as `k8s-openapi` has no schema for them.

use std::borrow::Cow;

use k8s_openapi::Resource;
use schemars::{JsonSchema, Schema, SchemaGenerator};

use crate::builtin_kinds::builtin_kinds;

/// One kind with a schema: its group/version/kind and the hooks into its
/// struct's `JsonSchema` implementation.
#[derive(Clone, Copy)]
pub struct KindSchema {
    /// API group (`""` for core).
    pub group: &'static str,
    /// API version.
    pub version: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// The upstream definition name, e.g. `io.k8s.api.core.v1.Pod`.
    pub schema_name: fn() -> Cow<'static, str>,
    /// Adds the schema and everything it references to the generator and
    /// returns a `$ref` to it.
    pub(crate) add: fn(&mut SchemaGenerator) -> Schema,
}

impl std::fmt::Debug for KindSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{} {} ({})", self.group, self.version, self.kind, (self.schema_name)())
    }
}

impl KindSchema {
    const fn of<T: Resource + JsonSchema>() -> KindSchema {
        KindSchema {
            group: T::GROUP,
            version: T::VERSION,
            kind: T::KIND,
            schema_name: T::schema_name,
            add: SchemaGenerator::subschema_for::<T>,
        }
    }
}

/// The kind table entry for `group`/`version`/`kind`, if any.
pub fn lookup(group: &str, version: &str, kind: &str) -> Option<&'static KindSchema> {
    ALL.iter().find(|k| k.group == group && k.version == version && k.kind == kind)
}

/// Every kind with a schema.
pub static ALL: &[KindSchema] = {
    macro_rules! schemas {
        ($($t:ty),* $(,)?) => { &[$(KindSchema::of::<$t>()),*] };
    }
    builtin_kinds!(schemas)
};
