//! Component schemas: generated from the `k8s-openapi` structs through
//! `schemars` (OpenAPI 3.0 settings), then reshaped the way upstream's
//! generator (`kube-openapi`) shapes them.
//!
//! The canonical form kept here is the OpenAPI v3 one: `$ref`s point to
//! `#/components/schemas/<name>`, and a `$ref` with siblings (a field's
//! description) is wrapped as `{"allOf": [{"$ref": …}], "description": …}`.
//! [`super::v2`] turns it into the Swagger 2.0 form.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use schemars::generate::SchemaSettings;
use serde_json::{json, Map, Value};

use super::extensions;
use super::kinds::{self, KindSchema};
use super::{gvk_json, Gvk};

/// Prefix of v3 schema references.
pub(crate) const REF_PREFIX: &str = "#/components/schemas/";

pub(crate) const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
pub(crate) const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
pub(crate) const WATCH_EVENT: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent";
pub(crate) const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
pub(crate) const API_RESOURCE_LIST: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList";
pub(crate) const API_GROUP: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup";
pub(crate) const API_GROUP_LIST: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroupList";
pub(crate) const API_VERSIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions";
pub(crate) const VERSION_INFO: &str = "io.k8s.apimachinery.pkg.version.Info";
const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";

/// All component schemas of the served API, in v3 form.
pub(crate) struct Schemas {
    /// Definition name → schema.
    pub defs: BTreeMap<String, Value>,
    /// Group/version/kind → definition name, for kinds and list kinds.
    pub by_gvk: HashMap<Gvk, String>,
}

impl Schemas {
    /// The definition name of a kind, if it has a schema.
    pub fn name_of(&self, gvk: &Gvk) -> Option<&str> {
        self.by_gvk.get(gvk).map(String::as_str)
    }

    /// `names` and every definition they reference, transitively.
    pub fn closure<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<String> = names.into_iter().map(str::to_string).collect();
        while let Some(name) = todo.pop() {
            if !seen.insert(name.clone()) {
                continue;
            }
            if let Some(schema) = self.defs.get(&name) {
                collect_refs(schema, &mut |r| {
                    if !seen.contains(r) {
                        todo.push(r.to_string());
                    }
                });
            }
        }
        seen
    }
}

/// Calls `f` with the definition name of every `$ref` inside `schema`.
pub(crate) fn collect_refs(value: &Value, f: &mut impl FnMut(&str)) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if k == "$ref" {
                    if let Some(name) = v.as_str().and_then(|r| r.strip_prefix(REF_PREFIX)) {
                        f(name);
                    }
                } else {
                    collect_refs(v, f);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, f)),
        _ => {}
    }
}

/// What a list kind needs: the item's definition and the list's GVK.
pub(crate) struct ListKind {
    pub item: Gvk,
    pub list_kind: &'static str,
}

/// Generates the schemas of `kinds` (plus the shared meta types and the
/// synthesised `lists`), stamped with `x-kubernetes-group-version-kind`.
/// `served` are the served group-versions: the shared meta kinds
/// (`DeleteOptions`, `WatchEvent`) carry one GVK per group-version, as
/// upstream's do.
pub(crate) fn generate(
    kinds: &[&'static KindSchema],
    lists: &[ListKind],
    served: &[(&'static str, &'static str)],
) -> Schemas {
    let mut gen = SchemaSettings::openapi3().into_generator();
    let mut by_gvk = HashMap::new();
    for k in kinds {
        (k.add)(&mut gen);
        by_gvk.insert(Gvk { group: k.group, version: k.version, kind: k.kind }, (k.schema_name)().into_owned());
    }
    gen.subschema_for::<meta::DeleteOptions>();
    gen.subschema_for::<meta::Status>();
    gen.subschema_for::<meta::WatchEvent<()>>();
    gen.subschema_for::<meta::Patch>();
    gen.subschema_for::<meta::APIResourceList>();
    gen.subschema_for::<meta::APIGroup>();
    gen.subschema_for::<meta::APIGroupList>();
    gen.subschema_for::<meta::APIVersions>();
    gen.subschema_for::<k8s_openapi::apimachinery::pkg::version::Info>();

    let mut defs: BTreeMap<String, Value> = gen.take_definitions(true).into_iter().collect();

    reshape_scalars(&mut defs);

    // Kinds: the GVK extension; `metadata` is not required upstream (the
    // Rust structs make it required because it is not an `Option`).
    let mut gvks_of: BTreeMap<String, Vec<Gvk>> = BTreeMap::new();
    for (gvk, name) in &by_gvk {
        gvks_of.entry(name.clone()).or_default().push(gvk.clone());
    }
    for (name, gvk) in [
        (STATUS, Gvk { group: "", version: "v1", kind: "Status" }),
        (API_RESOURCE_LIST, Gvk { group: "", version: "v1", kind: "APIResourceList" }),
        (API_GROUP, Gvk { group: "", version: "v1", kind: "APIGroup" }),
        (API_GROUP_LIST, Gvk { group: "", version: "v1", kind: "APIGroupList" }),
        (API_VERSIONS, Gvk { group: "", version: "v1", kind: "APIVersions" }),
    ] {
        gvks_of.entry(name.to_string()).or_default().push(gvk);
    }
    for (name, kind) in [(DELETE_OPTIONS, "DeleteOptions"), (WATCH_EVENT, "WatchEvent")] {
        let entry = gvks_of.entry(name.to_string()).or_default();
        for &(group, version) in served {
            entry.push(Gvk { group, version, kind });
        }
    }
    for (name, mut gvks) in gvks_of {
        let Some(Value::Object(schema)) = defs.get_mut(&name) else { continue };
        gvks.sort();
        gvks.dedup();
        schema.insert("x-kubernetes-group-version-kind".into(), Value::Array(gvks.iter().map(gvk_json).collect()));
        if let Some(Value::Array(required)) = schema.get_mut("required") {
            required.retain(|r| r != "metadata");
            if required.is_empty() {
                schema.remove("required");
            }
        }
    }

    for list in lists {
        let Some(item) = by_gvk.get(&list.item).cloned() else { continue };
        let list_gvk = Gvk { kind: list.list_kind, ..list.item.clone() };
        let name = format!("{item}List");
        defs.insert(name.clone(), list_schema(&item, list.item.kind, &list_gvk));
        by_gvk.insert(list_gvk, name);
    }

    for (name, schema) in defs.iter_mut() {
        add_field_extensions(name, schema);
    }

    Schemas { defs, by_gvk }
}

/// Upstream's v3 shapes of the two scalar-like types (kube-openapi's
/// `OpenAPIV3OneOfTypes` + `OpenAPISchemaFormat`): IntOrString is
/// `oneOf: [integer, string]` with format `int-or-string`, Quantity is
/// `oneOf: [string, number]`. (`k8s-openapi` marks both with
/// `x-kubernetes-int-or-string`, which upstream does not put there.)
fn reshape_scalars(defs: &mut BTreeMap<String, Value>) {
    if let Some(Value::Object(s)) = defs.get_mut(INT_OR_STRING) {
        s.remove("x-kubernetes-int-or-string");
        s.insert("oneOf".into(), json!([{"type": "integer"}, {"type": "string"}]));
        s.insert("format".into(), json!("int-or-string"));
    }
    if let Some(Value::Object(s)) = defs.get_mut(QUANTITY) {
        s.remove("x-kubernetes-int-or-string");
        s.insert("oneOf".into(), json!([{"type": "string"}, {"type": "number"}]));
    }
}

/// A `<Kind>List` schema in upstream's shape (`k8s-openapi` has a generic
/// `List<T>` without a schema).
fn list_schema(item: &str, kind: &str, list_gvk: &Gvk) -> Value {
    json!({
        "description": format!("{} is a list of {kind} objects.", list_gvk.kind),
        "type": "object",
        "properties": {
            "apiVersion": {
                "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
                "type": "string"
            },
            "items": {
                "description": format!("List of {kind} objects."),
                "type": "array",
                "items": {"$ref": format!("{REF_PREFIX}{item}")}
            },
            "kind": {
                "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
                "type": "string"
            },
            "metadata": {
                "allOf": [{"$ref": format!("{REF_PREFIX}io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta")}],
                "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
            }
        },
        "required": ["items"],
        "x-kubernetes-group-version-kind": [gvk_json(list_gvk)]
    })
}

/// Adds the per-field vendor extensions (`x-kubernetes-patch-strategy`,
/// `x-kubernetes-patch-merge-key`, `x-kubernetes-list-type`,
/// `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`) to the
/// properties of the definition `name`.
fn add_field_extensions(name: &str, schema: &mut Value) {
    let Some(Value::Object(props)) = schema.get_mut("properties") else { return };
    for (field, prop) in props.iter_mut() {
        let Some(ext) = extensions::field_extensions(name, field) else { continue };
        let Value::Object(prop) = prop else { continue };
        insert_extensions(prop, &ext);
    }
}

fn insert_extensions(prop: &mut Map<String, Value>, ext: &extensions::FieldExtensions) {
    if let Some(v) = ext.list_map_keys {
        prop.insert("x-kubernetes-list-map-keys".into(), json!(v));
    }
    if let Some(v) = ext.list_type {
        prop.insert("x-kubernetes-list-type".into(), json!(v));
    }
    if let Some(v) = ext.map_type {
        prop.insert("x-kubernetes-map-type".into(), json!(v));
    }
    if let Some(v) = ext.patch_merge_key {
        prop.insert("x-kubernetes-patch-merge-key".into(), json!(v));
    }
    if let Some(v) = ext.patch_strategy {
        prop.insert("x-kubernetes-patch-strategy".into(), json!(v));
    }
}

/// The kind table entries of the given GVKs (unknown ones are skipped).
pub(crate) fn kinds_for<'a>(gvks: impl IntoIterator<Item = &'a Gvk>) -> Vec<&'static KindSchema> {
    let mut out: Vec<&'static KindSchema> = Vec::new();
    for gvk in gvks {
        if let Some(k) = kinds::lookup(gvk.group, gvk.version, gvk.kind) {
            if !out.iter().any(|o| std::ptr::eq(*o, k)) {
                out.push(k);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gvk(g: &'static str, v: &'static str, k: &'static str) -> Gvk {
        Gvk { group: g, version: v, kind: k }
    }

    fn generate_for(gvks: &[Gvk]) -> Schemas {
        let kinds = kinds_for(gvks);
        let lists: Vec<ListKind> = vec![ListKind { item: gvk("", "v1", "Pod"), list_kind: "PodList" }];
        generate(&kinds, &lists, &[("", "v1"), ("apps", "v1")])
    }

    #[test]
    fn kinds_carry_descriptions_gvk_and_no_required_metadata() {
        let s = generate_for(&[gvk("", "v1", "Pod"), gvk("apps", "v1", "Deployment")]);
        let pod = &s.defs["io.k8s.api.core.v1.Pod"];
        assert_eq!(pod["x-kubernetes-group-version-kind"], json!([{"group": "", "version": "v1", "kind": "Pod"}]));
        assert!(pod["description"].as_str().unwrap().starts_with("Pod is a collection of containers"));
        assert!(pod.get("required").is_none());
        assert_eq!(
            pod["properties"]["spec"]["allOf"][0]["$ref"],
            json!("#/components/schemas/io.k8s.api.core.v1.PodSpec")
        );
        let port = &s.defs["io.k8s.api.core.v1.ContainerPort"];
        assert_eq!(port["properties"]["containerPort"]["format"], json!("int32"));
        assert_eq!(port["required"], json!(["containerPort"]));
        let strategy = &s.defs["io.k8s.api.apps.v1.DeploymentStrategy"];
        assert!(strategy["properties"]["rollingUpdate"]["description"].is_string());
    }

    #[test]
    fn scalars_have_upstream_v3_shapes() {
        let s = generate_for(&[gvk("", "v1", "Pod")]);
        let ios = &s.defs[INT_OR_STRING];
        assert_eq!(ios["format"], json!("int-or-string"));
        assert_eq!(ios["oneOf"], json!([{"type": "integer"}, {"type": "string"}]));
        assert!(ios.get("x-kubernetes-int-or-string").is_none());
        assert_eq!(s.defs[QUANTITY]["oneOf"], json!([{"type": "string"}, {"type": "number"}]));
        assert_eq!(s.defs["io.k8s.apimachinery.pkg.apis.meta.v1.Time"]["format"], json!("date-time"));
    }

    #[test]
    fn lists_and_shared_kinds() {
        let s = generate_for(&[gvk("", "v1", "Pod")]);
        let list = &s.defs["io.k8s.api.core.v1.PodList"];
        assert_eq!(list["x-kubernetes-group-version-kind"][0]["kind"], json!("PodList"));
        assert_eq!(list["properties"]["items"]["items"]["$ref"], json!("#/components/schemas/io.k8s.api.core.v1.Pod"));
        assert_eq!(s.name_of(&gvk("", "v1", "PodList")), Some("io.k8s.api.core.v1.PodList"));
        let gvks = s.defs[DELETE_OPTIONS]["x-kubernetes-group-version-kind"].as_array().unwrap().clone();
        assert_eq!(gvks.len(), 2);
        assert!(gvks.contains(&json!({"group": "apps", "version": "v1", "kind": "DeleteOptions"})));
    }

    #[test]
    fn closure_resolves_every_reference() {
        let s = generate_for(&[gvk("", "v1", "Pod")]);
        let names = s.closure(["io.k8s.api.core.v1.PodList"]);
        assert!(names.contains("io.k8s.api.core.v1.Container"));
        assert!(names.contains("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
        for name in &names {
            assert!(s.defs.contains_key(name), "{name} is referenced but not defined");
        }
    }
}
