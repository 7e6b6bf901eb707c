//! OpenAPI documents of the served API, generated from the types (no
//! upstream spec files): `/openapi/v3/<gv>` documents (OpenAPI 3.0) and
//! the `/openapi/v2` document (Swagger 2.0, as JSON or as gnostic
//! protobuf). Pure: the API server's handlers cache and serve the bytes.
//!
//! - Schemas ([`schemas`]): the `schemars::JsonSchema` implementations of
//!   the `k8s-openapi` 1.33 structs (upstream's descriptions, types,
//!   formats and required lists), named as upstream
//!   (`io.k8s.api.core.v1.Pod`), reshaped as kube-openapi shapes them
//!   (IntOrString/Quantity, `x-kubernetes-group-version-kind` on kinds,
//!   `<Kind>List` schemas), plus the per-field extensions of
//!   [`extensions`].
//! - Paths ([`paths`]): every operation of every resource of the registry,
//!   with upstream's operation ids, tags, `x-kubernetes-action`,
//!   `x-kubernetes-group-version-kind` and query parameters (notably
//!   `fieldValidation`, whose presence on a kind's patch operation makes
//!   kubectl leave validation to the server).
//! - A v3 document holds the paths of one group-version and the schemas
//!   they reference, transitively; the v2 document holds everything.
//!
//! Build with [`Spec::build`] once, then render [`Spec::v3_json`] per key,
//! [`Spec::v2_document`] and [`protobuf::encode_document`].

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::registry::{GroupVersionKind, ResourceInfo};

pub mod extensions;
pub mod kinds;
mod paths;
pub mod protobuf;
mod schemas;
mod v2;

pub use extensions::FieldExtensions;

pub(crate) type Gvk = GroupVersionKind;

/// `{"group": …, "kind": …, "version": …}` as upstream writes a GVK.
pub(crate) fn gvk_json(gvk: &Gvk) -> Value {
    json!({"group": gvk.group, "kind": gvk.kind, "version": gvk.version})
}

/// The title of every document.
const TITLE: &str = "Kubernetes";

/// The generated schemas and paths of a set of resources.
pub struct Spec {
    schemas: schemas::Schemas,
    /// Document key (`api/v1`, `apis/apps/v1`, `apis/apps`, `api`, `apis`,
    /// `version`) → its paths.
    documents: BTreeMap<String, Vec<paths::PathItem>>,
    /// Every definition, serialized once.
    v3_defs: BTreeMap<String, String>,
    version: String,
}

impl Spec {
    /// Generates schemas and paths for `resources` (normally
    /// `Registry::builtin().resources()`). Resources whose kind has no
    /// schema in [`kinds`] are left out.
    pub fn build(resources: &[ResourceInfo]) -> Spec {
        let mut served: Vec<(&'static str, &'static str)> = Vec::new();
        let mut gvks: Vec<Gvk> = Vec::new();
        let mut lists = Vec::new();
        for r in resources {
            if !served.contains(&(r.group, r.version)) {
                served.push((r.group, r.version));
            }
            gvks.push(r.gvk());
            gvks.extend(r.subresources.iter().map(|s| s.kind.clone()));
            if r.allows("list") {
                lists.push(schemas::ListKind { item: r.gvk(), list_kind: r.list_kind });
            }
        }
        let kinds = schemas::kinds_for(&gvks);
        let schemas = schemas::generate(&kinds, &lists, &served);
        let strategic_merge = extensions::strategic_merge_supported();

        let mut documents: BTreeMap<String, Vec<paths::PathItem>> = BTreeMap::new();
        for &(group, version) in &served {
            let key = gv_key(group, version);
            let items = documents.entry(key).or_default();
            items.push(paths::resources_path(group, version));
            for r in resources.iter().filter(|r| r.group == group && r.version == version) {
                items.extend(paths::resource_paths(r, &schemas, strategic_merge));
            }
            if !group.is_empty() {
                documents.entry(format!("apis/{group}")).or_insert_with(|| vec![paths::group_path(group)]);
            }
        }
        documents.insert(
            "api".into(),
            vec![paths::discovery_path(
                "/api/",
                "getCoreAPIVersions".into(),
                "core".into(),
                "get available API versions",
                schemas::API_VERSIONS,
            )],
        );
        documents.insert(
            "apis".into(),
            vec![paths::discovery_path(
                "/apis/",
                "getAPIVersions".into(),
                "apis".into(),
                "get available API versions",
                schemas::API_GROUP_LIST,
            )],
        );
        documents.insert(
            "version".into(),
            vec![paths::discovery_path(
                "/version/",
                "getCodeVersion".into(),
                "version".into(),
                "get the version information for this server",
                schemas::VERSION_INFO,
            )],
        );
        let v3_defs = schemas.defs.iter().map(|(name, s)| (name.clone(), s.to_string())).collect();
        Spec { schemas, documents, v3_defs, version: crate::version::git_version() }
    }

    /// The keys of the v3 documents, as `/openapi/v3` lists them (no
    /// leading slash): `api/v1`, `apis/apps/v1`, `apis/apps`, …
    pub fn v3_keys(&self) -> impl Iterator<Item = &str> {
        self.documents.keys().map(String::as_str)
    }

    /// The OpenAPI 3.0 document served at `/openapi/v3/<key>`, as JSON:
    /// the key's paths and the schemas they reference, transitively.
    /// Assembled from the definitions serialized once at build time.
    pub fn v3_json(&self, key: &str) -> Option<Vec<u8>> {
        let items = self.documents.get(key)?;
        let mut path_map = Map::new();
        for item in items {
            path_map.insert(item.path.clone(), item.to_v3());
        }
        let roots: Vec<String> = items.iter().flat_map(paths::PathItem::definitions).collect();
        let names = self.schemas.closure(roots.iter().map(String::as_str));
        let defs_len: usize = names.iter().filter_map(|n| self.v3_defs.get(n)).map(|d| d.len() + 64).sum();
        let mut out = Vec::with_capacity(defs_len + 64 * 1024);
        out.extend_from_slice(br#"{"openapi":"3.0.0","info":"#);
        write_json(&mut out, &json!({"title": TITLE, "version": self.version}));
        out.extend_from_slice(br#","paths":"#);
        write_json(&mut out, &Value::Object(path_map));
        out.extend_from_slice(br#","components":{"schemas":{"#);
        let mut first = true;
        for name in &names {
            let Some(def) = self.v3_defs.get(name) else { continue };
            if !first {
                out.push(b',');
            }
            first = false;
            write_json(&mut out, &Value::String(name.clone()));
            out.push(b':');
            out.extend_from_slice(def.as_bytes());
        }
        out.extend_from_slice(br#"},"securitySchemes":"#);
        write_json(
            &mut out,
            &json!({"BearerToken": {"type": "apiKey", "description": "Bearer Token authentication", "name": "authorization", "in": "header"}}),
        );
        out.extend_from_slice(br#"},"security":[{"BearerToken":[]}]}"#);
        Some(out)
    }

    /// [`Spec::v3_json`] parsed.
    pub fn v3_document(&self, key: &str) -> Option<Value> {
        serde_json::from_slice(&self.v3_json(key)?).ok()
    }

    /// Every v3 document, by key.
    pub fn v3_documents(&self) -> Vec<(String, Value)> {
        self.documents.keys().filter_map(|k| Some((k.clone(), self.v3_document(k)?))).collect()
    }

    /// The Swagger 2.0 document served at `/openapi/v2`: every path and
    /// every definition.
    pub fn v2_document(&self) -> Value {
        let mut path_map = Map::new();
        for items in self.documents.values() {
            for item in items {
                path_map.insert(item.path.clone(), item.to_v2());
            }
        }
        let definitions: Map<String, Value> =
            self.schemas.defs.iter().map(|(name, s)| (name.clone(), v2::schema_to_v2(name, s))).collect();
        json!({
            "swagger": "2.0",
            "info": {"title": TITLE, "version": self.version},
            "paths": path_map,
            "definitions": definitions,
            "securityDefinitions": {
                "BearerToken": {"description": "Bearer Token authentication", "type": "apiKey", "name": "authorization", "in": "header"}
            },
            "security": [{"BearerToken": []}]
        })
    }
}

fn write_json(out: &mut Vec<u8>, value: &Value) {
    serde_json::to_writer(out, value).expect("JSON values always serialize");
}

/// The `/openapi/v3` key of a group-version: `api/v1`, `apis/apps/v1`.
pub fn gv_key(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

#[cfg(test)]
mod tests;
