//! API discovery, generated from the [`Registry`]: what kubectl and
//! client-go read before anything else.
//!
//! Endpoints (all `GET`):
//! - `/api` and `/apis`: aggregated discovery (`APIGroupDiscoveryList`,
//!   `apidiscovery.k8s.io/v2` or `v2beta1`) when the `Accept` header asks for
//!   it, otherwise the legacy `APIVersions` (`/api`) and `APIGroupList`
//!   (`/apis`);
//! - `/apis/{group}`: `APIGroup`;
//! - `/api/v1` and `/apis/{group}/{version}`: `APIResourceList`, subresources
//!   included as `pods/log`-style entries.
//!
//! Negotiation follows upstream's `WrapAggregatedDiscoveryToHandler` and
//! `NegotiateMediaTypeOptions`: the `Accept` clauses are ordered by `q`
//! (highest first, wildcards after concrete types, otherwise as written) and
//! the first clause rkube can serve decides. A JSON clause whose `g`, `v`
//! and `as` parameters name `apidiscovery.k8s.io`, `v2` or `v2beta1` and
//! `APIGroupDiscoveryList` selects the aggregated document of that version;
//! a JSON clause without those parameters (`application/json`, `*/*`)
//! selects the legacy document; other clauses (protobuf, YAML, Table…) are
//! skipped. So kubectl 1.30+ (which lists `v=v2` first) gets v2, kubectl
//! 1.29 (which lists only `v=v2beta1`) gets v2beta1, and
//! `Accept: application/json` gets the legacy form. Responses are always
//! JSON: aggregated ones with `Content-Type:
//! application/json;g=apidiscovery.k8s.io;v=<v>;as=APIGroupDiscoveryList`
//! (client-go decides the format from that header), legacy ones with
//! `application/json`.
//!
//! Aggregated responses carry `ETag` (the SHA-512 of the document, upper-case
//! hex, quoted), `Vary: Accept` and `Cache-Control: public`, and a request
//! whose `If-None-Match` equals the ETag gets `304 Not Modified`, as
//! upstream's `ServeHTTPWithETag` does. The legacy `/api` and `/apis` also
//! say `Vary: Accept`, since their body depends on it.
//!
//! Field layout mirrors upstream byte for byte where clients could notice:
//! resources and subresources sorted by name; `responseKind` on every
//! resource and subresource (client-go drops entries without it), with
//! `group`/`version` empty when the kind is in the resource's own
//! group-version and set for cross-group kinds (`pods/eviction` →
//! `policy/v1 Eviction`, `deployments/scale` → `autoscaling/v1 Scale`); the
//! legacy entries carry `group`/`version` only in that cross-group case and
//! a `storageVersionHash` for stored resources; `freshness: Current`; the
//! preferred version first; `/api/v1`'s `APIResourceList` has no
//! `apiVersion` while the groups' lists say `v1`.
//!
//! Every document is rendered once, when the [`Discovery`] is built or
//! [`Discovery::update`]d (after the registry changes, e.g. when CRDs or
//! APIServices add groups), and served as shared bytes. Unknown groups and
//! versions answer the `404 NotFound` Status of any unknown path.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use base64::Engine as _;
use rkube_apimachinery::registry::{ApiGroup, Registry, ResourceInfo, Scope, SubresourceInfo};
use rkube_apimachinery::ApiError;
use serde::Serialize;

use crate::status::error_response;

/// `Content-Type` of the aggregated discovery document, v2.
pub const AGGREGATED_V2_CONTENT_TYPE: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
/// `Content-Type` of the aggregated discovery document, v2beta1 (kubectl ≤ 1.29).
pub const AGGREGATED_V2BETA1_CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

/// Which discovery document a request for `/api` or `/apis` gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `APIGroupDiscoveryList`, `apidiscovery.k8s.io/v2`.
    AggregatedV2,
    /// `APIGroupDiscoveryList`, `apidiscovery.k8s.io/v2beta1`.
    AggregatedV2Beta1,
    /// `APIVersions` / `APIGroupList`.
    Legacy,
}

/// Chooses the discovery format from an `Accept` header (see the module
/// docs for the rule). No header, or no clause rkube can serve, means
/// [`Format::Legacy`].
pub fn negotiate(accept: Option<&str>) -> Format {
    let Some(accept) = accept else { return Format::Legacy };
    let mut clauses: Vec<Clause> = accept.split(',').filter_map(Clause::parse).collect();
    // goautoneg's order: q descending, concrete types before wildcards;
    // otherwise as written (the sort is stable).
    clauses.sort_by(|a, b| {
        b.q.partial_cmp(&a.q)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| (a.main == "*").cmp(&(b.main == "*")))
            .then_with(|| (a.sub == "*").cmp(&(b.sub == "*")))
    });
    for clause in clauses.iter().filter(|c| c.q > 0.0) {
        let json = matches!((clause.main.as_str(), clause.sub.as_str()), ("application", "json" | "*") | ("*", "*"));
        if !json {
            continue;
        }
        let param = |name: &str| clause.params.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        match (param("g"), param("v"), param("as")) {
            (None, None, None) => return Format::Legacy,
            (Some("apidiscovery.k8s.io"), Some("v2"), Some("APIGroupDiscoveryList")) => return Format::AggregatedV2,
            (Some("apidiscovery.k8s.io"), Some("v2beta1"), Some("APIGroupDiscoveryList")) => {
                return Format::AggregatedV2Beta1
            }
            // A conversion discovery does not offer (Table, an unknown
            // version…): this clause cannot be served.
            _ => continue,
        }
    }
    Format::Legacy
}

/// One `Accept` clause: `type/subtype;param=value;q=0.5`.
struct Clause {
    main: String,
    sub: String,
    params: Vec<(String, String)>,
    q: f32,
}

impl Clause {
    fn parse(text: &str) -> Option<Clause> {
        let mut parts = text.split(';');
        let (main, sub) = parts.next()?.trim().split_once('/')?;
        let mut clause = Clause {
            main: main.trim().to_ascii_lowercase(),
            sub: sub.trim().to_ascii_lowercase(),
            params: vec![],
            q: 1.0,
        };
        for p in parts {
            let Some((k, v)) = p.split_once('=') else { continue };
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().trim_matches('"').to_string());
            if k == "q" {
                clause.q = v.parse().unwrap_or(0.0);
            } else {
                clause.params.push((k, v));
            }
        }
        Some(clause)
    }
}

/// The discovery documents of a registry, rendered once and served as
/// bytes. Cheap to share (`Arc<Discovery>`); [`Discovery::update`] swaps in
/// a new set atomically.
pub struct Discovery {
    documents: RwLock<Arc<Documents>>,
}

impl std::fmt::Debug for Discovery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Discovery").finish_non_exhaustive()
    }
}

/// An aggregated document in both versions.
struct Aggregated {
    v2: Document,
    v2beta1: Document,
}

/// A rendered aggregated document and its ETag.
struct Document {
    body: Bytes,
    etag: HeaderValue,
}

struct Documents {
    /// `/api`, aggregated.
    api: Aggregated,
    /// `/apis`, aggregated.
    apis: Aggregated,
    /// Versions of the core group, for the legacy `/api` (`APIVersions`),
    /// which also names the server address and so is rendered per request.
    core_versions: Vec<String>,
    /// `/apis`, legacy `APIGroupList`.
    group_list: Bytes,
    /// `/apis/{group}`: `APIGroup`.
    groups: HashMap<String, Bytes>,
    /// `/api/v1` (group `""`) and `/apis/{group}/{version}`: `APIResourceList`.
    resource_lists: HashMap<(String, String), Bytes>,
}

impl Discovery {
    /// Renders every discovery document of `registry`.
    pub fn new(registry: &Registry) -> Self {
        Discovery { documents: RwLock::new(Arc::new(Documents::render(registry))) }
    }

    /// Re-renders the documents from `registry` (after groups were added or
    /// removed); requests in flight finish with the old set.
    pub fn update(&self, registry: &Registry) {
        let rendered = Arc::new(Documents::render(registry));
        *self.documents.write().unwrap_or_else(|p| p.into_inner()) = rendered;
    }

    fn current(&self) -> Arc<Documents> {
        self.documents.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The response to `GET /api` with these request headers (`Accept`,
    /// `If-None-Match`, `Host`).
    pub fn api(&self, headers: &HeaderMap, authority: Option<&str>) -> Response {
        let docs = self.current();
        match negotiate(accept(headers)) {
            Format::AggregatedV2 => aggregated(&docs.api.v2, AGGREGATED_V2_CONTENT_TYPE, headers),
            Format::AggregatedV2Beta1 => aggregated(&docs.api.v2beta1, AGGREGATED_V2BETA1_CONTENT_TYPE, headers),
            Format::Legacy => {
                let addresses: Vec<ServerAddressByClientCidr> = authority
                    .map(|a| ServerAddressByClientCidr { client_cidr: "0.0.0.0/0", server_address: a.to_string() })
                    .into_iter()
                    .collect();
                let versions = ApiVersions {
                    kind: "APIVersions",
                    versions: &docs.core_versions,
                    server_address_by_client_cidrs: addresses,
                };
                let mut resp = json_response(Bytes::from(to_json(&versions)));
                resp.headers_mut().insert(header::VARY, HeaderValue::from_static("Accept"));
                resp
            }
        }
    }

    /// The response to `GET /apis`.
    pub fn apis(&self, headers: &HeaderMap) -> Response {
        let docs = self.current();
        match negotiate(accept(headers)) {
            Format::AggregatedV2 => aggregated(&docs.apis.v2, AGGREGATED_V2_CONTENT_TYPE, headers),
            Format::AggregatedV2Beta1 => aggregated(&docs.apis.v2beta1, AGGREGATED_V2BETA1_CONTENT_TYPE, headers),
            Format::Legacy => {
                let mut resp = json_response(docs.group_list.clone());
                resp.headers_mut().insert(header::VARY, HeaderValue::from_static("Accept"));
                resp
            }
        }
    }

    /// The response to `GET /apis/{group}`: `APIGroup`, or 404.
    pub fn group(&self, group: &str) -> Response {
        match self.current().groups.get(group) {
            Some(body) => json_response(body.clone()),
            None => error_response(&ApiError::PathNotFound),
        }
    }

    /// The response to `GET /api/{version}` (group `""`) or
    /// `GET /apis/{group}/{version}`: `APIResourceList`, or 404.
    pub fn resource_list(&self, group: &str, version: &str) -> Response {
        match self.current().resource_lists.get(&(group.to_string(), version.to_string())) {
            Some(body) => json_response(body.clone()),
            None => error_response(&ApiError::PathNotFound),
        }
    }
}

/// The discovery routes (`/api`, `/apis`, `/api/{version}`,
/// `/apis/{group}`, `/apis/{group}/{version}`), each also with a trailing
/// slash as upstream serves them (the Python client asks `/api/v1/`), to
/// merge into the API server's router.
pub fn router<S: Clone + Send + Sync + 'static>(discovery: Arc<Discovery>) -> Router<S> {
    let api = get(|State(d): State<Arc<Discovery>>, uri: Uri, headers: HeaderMap| async move {
        let authority = request_authority(&uri, &headers);
        d.api(&headers, authority.as_deref())
    });
    let apis = get(|State(d): State<Arc<Discovery>>, headers: HeaderMap| async move { d.apis(&headers) });
    let core_version =
        get(
            |State(d): State<Arc<Discovery>>, Path(version): Path<String>| async move { d.resource_list("", &version) },
        );
    let group = get(|State(d): State<Arc<Discovery>>, Path(group): Path<String>| async move { d.group(&group) });
    let group_version =
        get(|State(d): State<Arc<Discovery>>, Path((group, version)): Path<(String, String)>| async move {
            d.resource_list(&group, &version)
        });
    Router::new()
        .route("/api", api.clone())
        .route("/api/", api)
        .route("/apis", apis.clone())
        .route("/apis/", apis)
        .route("/api/{version}", core_version.clone())
        .route("/api/{version}/", core_version)
        .route("/apis/{group}", group.clone())
        .route("/apis/{group}/", group)
        .route("/apis/{group}/{version}", group_version.clone())
        .route("/apis/{group}/{version}/", group_version)
        .with_state(discovery)
}

fn accept(headers: &HeaderMap) -> Option<&str> {
    let values: Vec<&str> = headers.get_all(header::ACCEPT).iter().filter_map(|v| v.to_str().ok()).collect();
    match values.len() {
        0 => None,
        // Several Accept headers are one list; the first is what Go's
        // Header.Get reads, which is what upstream negotiates on.
        _ => Some(values[0]),
    }
}

/// `host:port` the client used (HTTP/2 `:authority` or HTTP/1.1 `Host`),
/// for the legacy `/api`'s `serverAddressByClientCIDRs`.
fn request_authority(uri: &Uri, headers: &HeaderMap) -> Option<String> {
    uri.authority()
        .map(|a| a.as_str().to_string())
        .or_else(|| headers.get(header::HOST).and_then(|h| h.to_str().ok()).map(str::to_string))
}

fn json_response(body: Bytes) -> Response {
    ([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], body).into_response()
}

/// Serves an aggregated document with upstream's ETag handling.
fn aggregated(doc: &Document, content_type: &'static str, headers: &HeaderMap) -> Response {
    let cache_headers = [
        (header::ETAG, doc.etag.clone()),
        (header::VARY, HeaderValue::from_static("Accept")),
        (header::CACHE_CONTROL, HeaderValue::from_static("public")),
    ];
    if headers.get(header::IF_NONE_MATCH) == Some(&doc.etag) {
        return (StatusCode::NOT_MODIFIED, cache_headers).into_response();
    }
    (cache_headers, [(header::CONTENT_TYPE, HeaderValue::from_static(content_type))], doc.body.clone()).into_response()
}

/// JSON with the trailing newline Go's encoder writes.
fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    let mut body = serde_json::to_vec(value).expect("discovery documents always serialize");
    body.push(b'\n');
    body
}

/// `storageVersionHash`: base64 of the first 8 bytes of the SHA-256 of
/// `<group>/<version>/<kind>` of the storage version (upstream's
/// `discovery.StorageVersionHash`), e.g. `/v1/Pod` → `xPOwRZ+Yhw8=`.
pub fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, format!("{group}/{version}/{kind}").as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest.as_ref()[..8])
}

impl Documents {
    fn render(registry: &Registry) -> Self {
        let core: Vec<&ApiGroup> = registry.groups().iter().filter(|g| g.name.is_empty()).collect();
        let named: Vec<&ApiGroup> = registry.groups().iter().filter(|g| !g.name.is_empty()).collect();

        let mut groups = HashMap::new();
        let mut resource_lists = HashMap::new();
        for group in registry.groups() {
            if !group.name.is_empty() {
                let doc = ApiGroupDoc { kind: Some("APIGroup"), api_version: Some("v1"), ..api_group(group) };
                groups.insert(group.name.to_string(), Bytes::from(to_json(&doc)));
            }
            for &version in &group.versions {
                let list = resource_list(group, version, registry.group_version_resources(group.name, version));
                resource_lists.insert((group.name.to_string(), version.to_string()), Bytes::from(to_json(&list)));
            }
        }
        let group_list =
            GroupList { kind: "APIGroupList", api_version: "v1", groups: named.iter().map(|g| api_group(g)).collect() };

        Documents {
            api: Aggregated::render(registry, &core),
            apis: Aggregated::render(registry, &named),
            core_versions: core.iter().flat_map(|g| g.versions.iter().map(|v| v.to_string())).collect(),
            group_list: Bytes::from(to_json(&group_list)),
            groups,
            resource_lists,
        }
    }
}

impl Aggregated {
    fn render(registry: &Registry, groups: &[&ApiGroup]) -> Self {
        let items: Vec<GroupDiscovery> = groups.iter().map(|g| group_discovery(registry, g)).collect();
        let doc = |api_version| {
            let list = GroupDiscoveryList {
                kind: "APIGroupDiscoveryList",
                api_version,
                metadata: EmptyMeta {},
                items: &items,
            };
            let body = to_json(&list);
            let digest = ring::digest::digest(&ring::digest::SHA512, &body);
            let hex: String = digest.as_ref().iter().map(|b| format!("{b:02X}")).collect();
            let etag = HeaderValue::from_str(&format!("\"{hex}\"")).expect("hex is a valid header value");
            Document { body: Bytes::from(body), etag }
        };
        Aggregated { v2: doc("apidiscovery.k8s.io/v2"), v2beta1: doc("apidiscovery.k8s.io/v2beta1") }
    }
}

// ---- Legacy documents (meta/v1 APIVersions, APIGroupList, APIGroup, APIResourceList) ----

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ApiVersions<'a> {
    kind: &'static str,
    versions: &'a [String],
    #[serde(rename = "serverAddressByClientCIDRs")]
    server_address_by_client_cidrs: Vec<ServerAddressByClientCidr>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ServerAddressByClientCidr {
    #[serde(rename = "clientCIDR")]
    client_cidr: &'static str,
    server_address: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GroupList {
    kind: &'static str,
    api_version: &'static str,
    groups: Vec<ApiGroupDoc>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ApiGroupDoc {
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    api_version: Option<&'static str>,
    name: &'static str,
    versions: Vec<GroupVersionForDiscovery>,
    preferred_version: GroupVersionForDiscovery,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GroupVersionForDiscovery {
    group_version: String,
    version: &'static str,
}

fn api_group(group: &ApiGroup) -> ApiGroupDoc {
    let gv = |v: &'static str| GroupVersionForDiscovery { group_version: group.group_version(v), version: v };
    ApiGroupDoc {
        kind: None,
        api_version: None,
        name: group.name,
        versions: group.versions.iter().map(|v| gv(v)).collect(),
        preferred_version: gv(group.preferred_version()),
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResourceList {
    kind: &'static str,
    /// Absent for `/api/v1`, as upstream's legacy core list has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    api_version: Option<&'static str>,
    group_version: String,
    resources: Vec<ApiResource>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ApiResource {
    name: String,
    singular_name: &'static str,
    namespaced: bool,
    #[serde(skip_serializing_if = "str::is_empty")]
    group: &'static str,
    #[serde(skip_serializing_if = "str::is_empty")]
    version: &'static str,
    kind: &'static str,
    verbs: &'static [&'static str],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    short_names: &'static [&'static str],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    categories: &'static [&'static str],
    #[serde(skip_serializing_if = "Option::is_none")]
    storage_version_hash: Option<String>,
}

fn resource_list(group: &ApiGroup, version: &'static str, resources: &[ResourceInfo]) -> ResourceList {
    let mut entries = Vec::new();
    for r in resources {
        entries.push(ApiResource {
            name: r.plural.to_string(),
            singular_name: r.singular,
            namespaced: r.scope == Scope::Namespaced,
            group: "",
            version: "",
            kind: r.kind,
            verbs: r.verbs,
            short_names: r.short_names,
            categories: r.categories,
            storage_version_hash: r
                .storage
                .as_ref()
                .map(|s| storage_version_hash(s.version.group, s.version.version, s.version.kind)),
        });
        for s in r.subresources {
            let (g, v) = cross_group_version(r, s);
            entries.push(ApiResource {
                name: format!("{}/{}", r.plural, s.name),
                singular_name: "",
                namespaced: r.scope == Scope::Namespaced,
                group: g,
                version: v,
                kind: s.kind.kind,
                verbs: s.verbs,
                short_names: &[],
                categories: &[],
                storage_version_hash: None,
            });
        }
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    ResourceList {
        kind: "APIResourceList",
        api_version: if group.name.is_empty() { None } else { Some("v1") },
        group_version: group.group_version(version),
        resources: entries,
    }
}

/// The group and version a subresource entry names: empty when its kind is
/// in the parent's group-version, as upstream writes them.
fn cross_group_version(r: &ResourceInfo, s: &SubresourceInfo) -> (&'static str, &'static str) {
    if s.kind.group == r.group && s.kind.version == r.version {
        ("", "")
    } else {
        (s.kind.group, s.kind.version)
    }
}

// ---- Aggregated documents (apidiscovery.k8s.io/v2 and v2beta1) ----

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GroupDiscoveryList<'a> {
    kind: &'static str,
    api_version: &'static str,
    metadata: EmptyMeta,
    items: &'a [GroupDiscovery],
}

#[derive(Serialize)]
struct EmptyMeta {}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GroupDiscovery {
    metadata: GroupMeta,
    versions: Vec<VersionDiscovery>,
}

/// `ObjectMeta` of a group entry: the name (omitted for core) and the
/// `creationTimestamp: null` a 1.33 server writes.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GroupMeta {
    #[serde(skip_serializing_if = "str::is_empty")]
    name: &'static str,
    creation_timestamp: Option<()>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct VersionDiscovery {
    version: &'static str,
    resources: Vec<ResourceDiscovery>,
    freshness: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResourceDiscovery {
    resource: &'static str,
    response_kind: Gvk,
    scope: &'static str,
    singular_resource: &'static str,
    verbs: &'static [&'static str],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    short_names: &'static [&'static str],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    categories: &'static [&'static str],
    #[serde(skip_serializing_if = "Vec::is_empty")]
    subresources: Vec<SubresourceDiscovery>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SubresourceDiscovery {
    subresource: &'static str,
    response_kind: Gvk,
    verbs: &'static [&'static str],
}

#[derive(Serialize)]
struct Gvk {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
}

fn group_discovery(registry: &Registry, group: &ApiGroup) -> GroupDiscovery {
    let versions = group
        .versions
        .iter()
        .map(|&version| VersionDiscovery {
            version,
            resources: registry.group_version_resources(group.name, version).iter().map(resource_discovery).collect(),
            freshness: "Current",
        })
        .collect();
    GroupDiscovery { metadata: GroupMeta { name: group.name, creation_timestamp: None }, versions }
}

fn resource_discovery(r: &ResourceInfo) -> ResourceDiscovery {
    ResourceDiscovery {
        resource: r.plural,
        response_kind: Gvk { group: "", version: "", kind: r.kind },
        scope: match r.scope {
            Scope::Namespaced => "Namespaced",
            Scope::Cluster => "Cluster",
        },
        singular_resource: r.singular,
        verbs: r.verbs,
        short_names: r.short_names,
        categories: r.categories,
        subresources: r
            .subresources
            .iter()
            .map(|s| {
                let (group, version) = cross_group_version(r, s);
                SubresourceDiscovery {
                    subresource: s.name,
                    response_kind: Gvk { group, version, kind: s.kind.kind },
                    verbs: s.verbs,
                }
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    const KUBECTL_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
    const KUBECTL_1_29_ACCEPT: &str =
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

    #[test]
    fn negotiation_follows_client_go_and_upstream() {
        assert_eq!(negotiate(Some(KUBECTL_ACCEPT)), Format::AggregatedV2);
        assert_eq!(negotiate(Some(KUBECTL_1_29_ACCEPT)), Format::AggregatedV2Beta1);
        assert_eq!(negotiate(Some("application/json")), Format::Legacy);
        assert_eq!(negotiate(Some("application/json, */*")), Format::Legacy);
        assert_eq!(negotiate(None), Format::Legacy);
        assert_eq!(negotiate(Some("")), Format::Legacy);
        // Protobuf first (client-go typed clients): skipped, JSON v2 chosen.
        assert_eq!(
            negotiate(Some("application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json")),
            Format::AggregatedV2
        );
        // Parameter order and spacing do not matter.
        assert_eq!(
            negotiate(Some("application/json; as=APIGroupDiscoveryList; v=v2; g=apidiscovery.k8s.io")),
            Format::AggregatedV2
        );
        // q-values order the clauses; q=0 is refused.
        assert_eq!(
            negotiate(Some(
                "application/json;q=0.5,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
            )),
            Format::AggregatedV2
        );
        assert_eq!(
            negotiate(Some("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0")),
            Format::Legacy
        );
        // Unknown versions and kinds are not served aggregated.
        assert_eq!(
            negotiate(Some("application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList")),
            Format::Legacy
        );
        assert_eq!(negotiate(Some("application/json;as=Table;v=v1;g=meta.k8s.io,application/json")), Format::Legacy);
    }

    fn body(resp: Response) -> (StatusCode, HeaderMap, Value) {
        let status = resp.status();
        let headers = resp.headers().clone();
        let bytes = futures::executor::block_on(axum::body::to_bytes(resp.into_body(), usize::MAX)).unwrap();
        let value = if bytes.is_empty() { Value::Null } else { serde_json::from_slice(&bytes).unwrap() };
        (status, headers, value)
    }

    fn with_accept(accept: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_str(accept).unwrap());
        h
    }

    fn discovery() -> Discovery {
        Discovery::new(&Registry::builtin())
    }

    #[test]
    fn aggregated_apis_lists_groups_in_priority_order_with_content_type_and_etag() {
        let d = discovery();
        let (status, headers, doc) = body(d.apis(&with_accept(KUBECTL_ACCEPT)));
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers[header::CONTENT_TYPE], AGGREGATED_V2_CONTENT_TYPE);
        assert_eq!(headers[header::VARY], "Accept");
        let etag = headers[header::ETAG].to_str().unwrap().to_string();
        assert!(etag.starts_with('"') && etag.len() == 130, "{etag}");
        assert_eq!(doc["kind"], "APIGroupDiscoveryList");
        assert_eq!(doc["apiVersion"], "apidiscovery.k8s.io/v2");
        let names: Vec<&str> =
            doc["items"].as_array().unwrap().iter().map(|g| g["metadata"]["name"].as_str().unwrap()).collect();
        assert_eq!(names[..3], ["apiregistration.k8s.io", "apps", "events.k8s.io"]);
        assert_eq!(names.len(), 19);
        let autoscaling = &doc["items"][5];
        assert_eq!(autoscaling["metadata"], json!({"name": "autoscaling", "creationTimestamp": null}));
        let versions: Vec<&str> =
            autoscaling["versions"].as_array().unwrap().iter().map(|v| v["version"].as_str().unwrap()).collect();
        assert_eq!(versions, ["v2", "v1"]);
        let deployments = &doc["items"][1]["versions"][0]["resources"][2];
        assert_eq!(
            deployments,
            &json!({"resource": "deployments", "responseKind": {"group": "", "version": "", "kind": "Deployment"},
                "scope": "Namespaced", "singularResource": "deployment",
                "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
                "shortNames": ["deploy"], "categories": ["all"],
                "subresources": [
                    {"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"}, "verbs": ["get", "patch", "update"]},
                    {"subresource": "status", "responseKind": {"group": "", "version": "", "kind": "Deployment"}, "verbs": ["get", "patch", "update"]}]})
        );
        assert_eq!(doc["items"][1]["versions"][0]["freshness"], "Current");

        // If-None-Match with the ETag: 304, no body.
        let mut h = with_accept(KUBECTL_ACCEPT);
        h.insert(header::IF_NONE_MATCH, HeaderValue::from_str(&etag).unwrap());
        let (status, headers, doc) = body(d.apis(&h));
        assert_eq!((status, doc), (StatusCode::NOT_MODIFIED, Value::Null));
        assert_eq!(headers[header::ETAG], etag.as_str());
    }

    #[test]
    fn aggregated_api_has_the_core_group_only() {
        let (_, headers, doc) = body(discovery().api(&with_accept(KUBECTL_1_29_ACCEPT), None));
        assert_eq!(headers[header::CONTENT_TYPE], AGGREGATED_V2BETA1_CONTENT_TYPE);
        assert_eq!(doc["apiVersion"], "apidiscovery.k8s.io/v2beta1");
        let items = doc["items"].as_array().unwrap();
        assert_eq!(items.len(), 1);
        assert_eq!(items[0]["metadata"], json!({"creationTimestamp": null}));
        let pods =
            items[0]["versions"][0]["resources"].as_array().unwrap().iter().find(|r| r["resource"] == "pods").unwrap();
        let eviction =
            pods["subresources"].as_array().unwrap().iter().find(|s| s["subresource"] == "eviction").unwrap();
        assert_eq!(eviction["responseKind"], json!({"group": "policy", "version": "v1", "kind": "Eviction"}));
    }

    #[test]
    fn legacy_documents_match_upstream_shapes() {
        let d = discovery();
        let (_, headers, api) = body(d.api(&with_accept("application/json, */*"), Some("127.0.0.1:6443")));
        assert_eq!(headers[header::CONTENT_TYPE], "application/json");
        assert_eq!(
            api,
            json!({"kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}]})
        );

        let (_, _, apis) = body(d.apis(&HeaderMap::new()));
        assert_eq!((apis["kind"].as_str(), apis["apiVersion"].as_str()), (Some("APIGroupList"), Some("v1")));
        let autoscaling = apis["groups"].as_array().unwrap().iter().find(|g| g["name"] == "autoscaling").unwrap();
        assert_eq!(
            autoscaling,
            &json!({"name": "autoscaling",
                "versions": [{"groupVersion": "autoscaling/v2", "version": "v2"}, {"groupVersion": "autoscaling/v1", "version": "v1"}],
                "preferredVersion": {"groupVersion": "autoscaling/v2", "version": "v2"}})
        );

        let (_, _, apps) = body(d.group("apps"));
        assert_eq!(
            apps,
            json!({"kind": "APIGroup", "apiVersion": "v1", "name": "apps",
                "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
                "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}})
        );

        let (_, _, core) = body(d.resource_list("", "v1"));
        assert_eq!(core["kind"], "APIResourceList");
        assert_eq!(core["groupVersion"], "v1");
        assert!(core.get("apiVersion").is_none(), "upstream's /api/v1 has no apiVersion");
        let entry =
            |name: &str| core["resources"].as_array().unwrap().iter().find(|r| r["name"] == name).unwrap().clone();
        assert_eq!(
            entry("configmaps"),
            json!({"name": "configmaps", "singularName": "configmap", "namespaced": true, "kind": "ConfigMap",
                "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
                "shortNames": ["cm"], "storageVersionHash": "qFsyl6wFWjQ="})
        );
        assert_eq!(
            entry("pods/eviction"),
            json!({"name": "pods/eviction", "singularName": "", "namespaced": true, "group": "policy", "version": "v1",
                "kind": "Eviction", "verbs": ["create"]})
        );
        assert_eq!(
            entry("pods/log"),
            json!({"name": "pods/log", "singularName": "", "namespaced": true, "kind": "Pod", "verbs": ["get"]})
        );
        assert_eq!(entry("bindings").get("storageVersionHash"), None);
        let names: Vec<&str> =
            core["resources"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        assert_eq!(names.len(), 17 + 22, "17 resources and 22 subresources");

        let (_, _, hpa1) = body(d.resource_list("autoscaling", "v1"));
        assert_eq!(hpa1["apiVersion"], "v1");
        assert_eq!(hpa1["resources"][0]["storageVersionHash"], "qwQve8ut294=", "stored as autoscaling/v2");
        let (_, _, ev) = body(d.resource_list("events.k8s.io", "v1"));
        assert_eq!(ev["resources"][0]["storageVersionHash"], "r2yiGXH7wu8=", "stored as core v1 Event");
    }

    #[test]
    fn unknown_groups_and_versions_are_404_status() {
        let d = discovery();
        for resp in [d.group("foo.example.com"), d.resource_list("apps", "v2"), d.resource_list("", "v2")] {
            let (status, _, doc) = body(resp);
            assert_eq!(status, StatusCode::NOT_FOUND);
            assert_eq!(doc["reason"], "NotFound");
            assert_eq!(doc["message"], "the server could not find the requested resource");
        }
    }

    #[test]
    fn update_swaps_in_documents_of_a_changed_registry() {
        let d = discovery();
        let mut resources: Vec<ResourceInfo> = Registry::builtin().resources().to_vec();
        resources.retain(|r| r.group != "batch");
        d.update(&Registry::new(resources, rkube_apimachinery::registry::builtin_group_priorities()));
        assert_eq!(d.group("batch").status(), StatusCode::NOT_FOUND);
        assert_eq!(d.group("apps").status(), StatusCode::OK);
    }
}
