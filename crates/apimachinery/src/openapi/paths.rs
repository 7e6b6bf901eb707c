//! The operations of each resource, named and shaped as upstream's API
//! installer registers them (`k8s.io/apiserver/pkg/endpoints/installer.go`
//! and the operation-id/tag rules of `pkg/endpoints/openapi`): e.g.
//! `GET /apis/apps/v1/namespaces/{namespace}/deployments` is
//! `listAppsV1NamespacedDeployment`, tag `apps_v1`, `x-kubernetes-action:
//! list`, `x-kubernetes-group-version-kind: {group: apps, version: v1,
//! kind: Deployment}`.
//!
//! Operations are kept in a format-neutral form ([`PathItem`],
//! [`Operation`]) and rendered to OpenAPI v3 ([`PathItem::to_v3`]) or
//! Swagger 2.0 ([`PathItem::to_v2`]).

use std::borrow::Cow;

use serde_json::{json, Map, Value};

use crate::registry::{ResourceInfo, Scope};

use super::schemas::{self, Schemas};
use super::{gvk_json, Gvk};

/// Where a parameter goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum In {
    Path,
    Query,
}

/// One request parameter.
#[derive(Clone, Debug)]
pub(crate) struct Param {
    pub name: &'static str,
    pub location: In,
    pub ty: &'static str,
    pub description: Cow<'static, str>,
}

const fn q(name: &'static str, ty: &'static str, description: &'static str) -> Param {
    Param { name, location: In::Query, ty, description: Cow::Borrowed(description) }
}

const ALLOW_WATCH_BOOKMARKS: Param = q("allowWatchBookmarks", "boolean", "allowWatchBookmarks asks for watch events of type \"BOOKMARK\". Servers may send them at their own discretion; clients must not rely on their timing or on getting any. Ignored unless this is a watch.");
const CONTINUE: Param = q("continue", "string", "The continue token of a previous, limited list call, to fetch the next chunk with otherwise identical parameters. An expired token gets 410 ResourceExpired; the client then restarts the list. Not supported with watch=true.");
const DRY_RUN: Param = q("dryRun", "string", "When present, the request is processed in full but nothing is persisted. The only valid value is All; anything else is rejected.");
const FIELD_MANAGER: Param = q(
    "fieldManager",
    "string",
    "fieldManager names the actor making these changes, recorded in managedFields. At most 128 printable characters.",
);
const FIELD_SELECTOR: Param = q(
    "fieldSelector",
    "string",
    "A selector restricting the returned objects by their fields. Defaults to everything.",
);
const FIELD_VALIDATION: Param = q("fieldValidation", "string", "fieldValidation decides what happens to objects in the request (POST/PUT/PATCH) that contain unknown or duplicate fields. Ignore: unknown fields are dropped silently and the last of duplicate fields wins. Warn: the same, with one warning header per unknown or duplicate field. Strict: the request fails with BadRequest, listing every unknown and duplicate field.");
const FORCE: Param = q("force", "boolean", "Force applies the request even if it conflicts with fields owned by other managers, taking their ownership. Only for apply patches; must be unset otherwise.");
const GRACE_PERIOD_SECONDS: Param = q("gracePeriodSeconds", "integer", "Seconds to wait before the object is deleted; non-negative, 0 deletes at once. When unset, the kind's default grace period applies.");
const IGNORE_STORE_READ_ERROR: Param = q("ignoreStoreReadErrorWithClusterBreakingPotential", "boolean", "When true, an object whose stored data cannot be read (e.g. cannot be decrypted) is deleted without the usual checks. Dangerous: may break the cluster; requires the delete-ignore-read-errors permission.");
const LABEL_SELECTOR: Param = q(
    "labelSelector",
    "string",
    "A selector restricting the returned objects by their labels. Defaults to everything.",
);
const LIMIT: Param = q("limit", "integer", "The largest number of items to return. When more exist, the list metadata carries a continue token for the next chunk; fewer items (even none) may come back, so only the token tells whether more remain. Chunks of one list are served from one consistent snapshot. Not supported with watch=true.");
const ORPHAN_DEPENDENTS: Param = q("orphanDependents", "boolean", "Deprecated: use propagationPolicy. If true, the \"orphan\" finalizer is added to the object; if false, it is removed. Set this or propagationPolicy, not both.");
const PRETTY: Param = q("pretty", "string", "If 'true', the output is pretty printed.");
const PROPAGATION_POLICY: Param = q("propagationPolicy", "string", "How dependents are garbage collected: 'Orphan' leaves them, 'Background' deletes them after the object, 'Foreground' deletes them before the object. Set this or orphanDependents, not both.");
const RESOURCE_VERSION: Param = q("resourceVersion", "string", "A constraint on which resource versions the request may be served from; see https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions. Defaults to unset.");
const RESOURCE_VERSION_MATCH: Param = q("resourceVersionMatch", "string", "How resourceVersion is applied to list calls (NotOlderThan or Exact); recommended whenever resourceVersion is set. Defaults to unset.");
const SEND_INITIAL_EVENTS: Param = q("sendInitialEvents", "boolean", "With watch=true, starts the watch with synthetic ADDED events for the current state, followed by a BOOKMARK annotated \"k8s.io/initial-events-end\". Requires resourceVersionMatch=NotOlderThan.");
const TIMEOUT_SECONDS: Param =
    q("timeoutSeconds", "integer", "Timeout for the list/watch call, regardless of activity.");
const WATCH: Param = q("watch", "boolean", "Watch for changes to the described resources and return them as a stream of add, update and remove notifications. Specify resourceVersion.");

const LIST_PARAMS: &[Param] = &[
    ALLOW_WATCH_BOOKMARKS,
    CONTINUE,
    FIELD_SELECTOR,
    LABEL_SELECTOR,
    LIMIT,
    RESOURCE_VERSION,
    RESOURCE_VERSION_MATCH,
    SEND_INITIAL_EVENTS,
    TIMEOUT_SECONDS,
    WATCH,
];
const WRITE_PARAMS: &[Param] = &[DRY_RUN, FIELD_MANAGER, FIELD_VALIDATION];
const PATCH_PARAMS: &[Param] = &[DRY_RUN, FIELD_MANAGER, FIELD_VALIDATION, FORCE];
const DELETE_PARAMS: &[Param] =
    &[DRY_RUN, GRACE_PERIOD_SECONDS, IGNORE_STORE_READ_ERROR, ORPHAN_DEPENDENTS, PROPAGATION_POLICY];
const DELETE_COLLECTION_PARAMS: &[Param] = &[
    CONTINUE,
    DRY_RUN,
    FIELD_SELECTOR,
    GRACE_PERIOD_SECONDS,
    IGNORE_STORE_READ_ERROR,
    LABEL_SELECTOR,
    LIMIT,
    ORPHAN_DEPENDENTS,
    PROPAGATION_POLICY,
    RESOURCE_VERSION,
    RESOURCE_VERSION_MATCH,
    SEND_INITIAL_EVENTS,
    TIMEOUT_SECONDS,
];
const LOG_PARAMS: &[Param] = &[
    q("container", "string", "The container whose logs to stream. Defaults to the only container if the pod has one."),
    q("follow", "boolean", "Follow the log stream of the pod. Defaults to false."),
    q(
        "insecureSkipTLSVerifyBackend",
        "boolean",
        "Skip verifying the serving certificate of the backend (kubelet) the logs come from. Defaults to false.",
    ),
    q(
        "limitBytes",
        "integer",
        "Stop after this many bytes of log output (the last line may be incomplete). Defaults to no limit.",
    ),
    q("previous", "boolean", "Return the logs of the previous, terminated container. Defaults to false."),
    q("sinceSeconds", "integer", "Only logs newer than this many seconds before now. Set this or sinceTime, not both."),
    q(
        "stream",
        "string",
        "Which stream to return: All, Stdout or Stderr. Defaults to All; incompatible with tailLines.",
    ),
    q("tailLines", "integer", "The number of lines from the end of the log to show. Defaults to the whole log."),
    q("timestamps", "boolean", "Prefix every line with an RFC3339 timestamp. Defaults to false."),
];
const EXEC_PARAMS: &[Param] = &[
    q("command", "string", "The command to run, one argv element per parameter; not run in a shell."),
    q("container", "string", "The container to run the command in. Defaults to the only container if the pod has one."),
    q("stderr", "boolean", "Redirect the standard error stream of the command. Defaults to true."),
    q("stdin", "boolean", "Redirect the standard input stream of the command. Defaults to false."),
    q("stdout", "boolean", "Redirect the standard output stream of the command. Defaults to true."),
    q("tty", "boolean", "Allocate a terminal for the command. Defaults to false."),
];
const ATTACH_PARAMS: &[Param] = &[
    q("container", "string", "The container to attach to. Defaults to the only container if the pod has one."),
    q("stderr", "boolean", "Stream the standard error of the container. Defaults to true."),
    q("stdin", "boolean", "Pass standard input to the container. Defaults to false."),
    q("stdout", "boolean", "Stream the standard output of the container. Defaults to true."),
    q("tty", "boolean", "Whether the attached stream is a terminal. Defaults to false."),
];
const PORTFORWARD_PARAMS: &[Param] = &[q("ports", "integer", "The pod ports to forward.")];
const PROXY_PARAMS: &[Param] = &[q("path", "string", "The URL path to use for the proxied request.")];

const OBJECT_TYPES: &[&str] = &["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"];
const LIST_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/json;stream=watch",
    "application/vnd.kubernetes.protobuf;stream=watch",
];
const LOG_TYPES: &[&str] =
    &["text/plain", "application/json", "application/yaml", "application/vnd.kubernetes.protobuf"];
const ANY: &[&str] = &["*/*"];
const PATCH_TYPES: &[&str] = &[
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
];
const PATCH_TYPES_NO_SMP: &[&str] =
    &["application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json"];

/// What a response carries.
#[derive(Clone, Debug)]
pub(crate) enum Body {
    /// An object of this definition.
    Ref(String),
    /// Plain text or a stream (logs, connect).
    Text,
}

/// One response code.
#[derive(Clone, Debug)]
pub(crate) struct Response {
    pub code: &'static str,
    pub description: &'static str,
    pub body: Option<Body>,
}

/// One operation (HTTP method on a path).
#[derive(Clone, Debug)]
pub(crate) struct Operation {
    /// Lower-case HTTP method.
    pub method: &'static str,
    pub id: String,
    pub description: String,
    pub tag: String,
    /// `x-kubernetes-action`; `None` for discovery operations.
    pub action: Option<&'static str>,
    pub gvk: Option<Gvk>,
    /// Query parameters of this operation.
    pub params: Vec<Param>,
    /// Request body: definition, media types, required.
    pub request: Option<(String, &'static [&'static str], bool)>,
    pub produces: &'static [&'static str],
    pub responses: Vec<Response>,
}

/// A path with its shared parameters and its operations.
#[derive(Clone, Debug)]
pub(crate) struct PathItem {
    pub path: String,
    /// Path-level parameters, `(param, required)`.
    pub params: Vec<(Param, bool)>,
    pub ops: Vec<Operation>,
}

/// The URL prefix of a group-version: `/api/v1` or `/apis/<group>/<version>`.
pub(crate) fn gv_prefix(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    }
}

/// upstream's `ToValidOperationID`: letters and digits kept, any other
/// character dropped and the next letter upper-cased; the first letter
/// upper-cased when `capitalize`.
pub(crate) fn operation_id_part(s: &str, capitalize: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut upper = capitalize;
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            if upper {
                out.extend(c.to_uppercase());
                upper = false;
            } else {
                out.push(c);
            }
        } else {
            upper = true;
        }
    }
    out
}

/// The group's name in operation ids and tags (`core` for the core group,
/// `.k8s.io` trimmed).
fn group_word(group: &str) -> &str {
    if group.is_empty() {
        "core"
    } else {
        group.strip_suffix(".k8s.io").unwrap_or(group)
    }
}

/// The tag of a group-version, e.g. `core_v1`, `rbacAuthorization_v1`.
pub(crate) fn gv_tag(group: &str, version: &str) -> String {
    format!("{}_{}", operation_id_part(group_word(group), false), operation_id_part(version, false))
}

/// `CoreV1`, `AppsV1`, `RbacAuthorizationV1`: what follows the verb in an
/// operation id.
fn gv_ident(group: &str, version: &str) -> String {
    format!("{}{}", operation_id_part(group_word(group), true), operation_id_part(version, true))
}

fn ok(body: Body) -> Response {
    Response { code: "200", description: "OK", body: Some(body) }
}
fn created(body: Body) -> Response {
    Response { code: "201", description: "Created", body: Some(body) }
}
fn accepted(body: Body) -> Response {
    Response { code: "202", description: "Accepted", body: Some(body) }
}
fn unauthorized() -> Response {
    Response { code: "401", description: "Unauthorized", body: None }
}

fn path_param(name: &'static str, description: impl Into<Cow<'static, str>>) -> (Param, bool) {
    (Param { name, location: In::Path, ty: "string", description: description.into() }, true)
}

const NAMESPACE_PARAM: (Param, bool) = (
    Param {
        name: "namespace",
        location: In::Path,
        ty: "string",
        description: Cow::Borrowed("object name and auth scope, such as for teams and projects"),
    },
    true,
);

/// The discovery path of a group-version (`GET /api/v1/`:
/// `getCoreV1APIResources`).
pub(crate) fn resources_path(group: &str, version: &str) -> PathItem {
    PathItem {
        path: format!("{}/", gv_prefix(group, version)),
        params: vec![],
        ops: vec![Operation {
            method: "get",
            id: format!("get{}APIResources", gv_ident(group, version)),
            description: "get available resources".into(),
            tag: gv_tag(group, version),
            action: None,
            gvk: None,
            params: vec![],
            request: None,
            produces: OBJECT_TYPES,
            responses: vec![ok(Body::Ref(schemas::API_RESOURCE_LIST.into())), unauthorized()],
        }],
    }
}

/// A discovery path outside group-versions: `/api/` (`getCoreAPIVersions`),
/// `/apis/` (`getAPIVersions`), `/apis/<group>/` (`get<Group>APIGroup`),
/// `/version/` (`getCodeVersion`).
pub(crate) fn discovery_path(path: &str, id: String, tag: String, description: &str, definition: &str) -> PathItem {
    let produces: &'static [&'static str] =
        if definition == schemas::VERSION_INFO { &["application/json"] } else { OBJECT_TYPES };
    PathItem {
        path: path.to_string(),
        params: vec![],
        ops: vec![Operation {
            method: "get",
            id,
            description: description.to_string(),
            tag,
            action: None,
            gvk: None,
            params: vec![],
            request: None,
            produces,
            responses: vec![ok(Body::Ref(definition.to_string())), unauthorized()],
        }],
    }
}

/// `get<Group>APIGroup` for `/apis/<group>/`.
pub(crate) fn group_path(group: &str) -> PathItem {
    discovery_path(
        &format!("/apis/{group}/"),
        format!("get{}APIGroup", operation_id_part(group_word(group), true)),
        operation_id_part(group_word(group), false),
        "get information of a group",
        schemas::API_GROUP,
    )
}

/// Every path of one resource: collection, item, watch and subresource
/// paths, with the operations its verbs allow. `strategic_merge` decides
/// whether patch operations offer `application/strategic-merge-patch+json`.
pub(crate) fn resource_paths(r: &ResourceInfo, schemas: &Schemas, strategic_merge: bool) -> Vec<PathItem> {
    let gvk = r.gvk();
    let Some(kind_def) = schemas.name_of(&gvk).map(str::to_string) else { return Vec::new() };
    let list_def = schemas.name_of(&Gvk { kind: r.list_kind, ..gvk.clone() }).map(str::to_string);
    let prefix = gv_prefix(r.group, r.version);
    let ident = gv_ident(r.group, r.version);
    let tag = gv_tag(r.group, r.version);
    let namespaced = r.scope == Scope::Namespaced;
    let (ns_path, ns_word) = if namespaced { ("/namespaces/{namespace}", "Namespaced") } else { ("", "") };
    let kind = r.kind;
    let op = |method: &'static str, verb: &str, rest: &str, description: String, action: &'static str| Operation {
        method,
        id: format!("{verb}{ident}{rest}"),
        description,
        tag: tag.clone(),
        action: Some(action),
        gvk: Some(gvk.clone()),
        params: vec![],
        request: None,
        produces: OBJECT_TYPES,
        responses: vec![],
    };
    let patch_types = if strategic_merge { PATCH_TYPES } else { PATCH_TYPES_NO_SMP };
    let name_param = path_param("name", format!("name of the {kind}"));
    let scope_params = |with_name: bool| {
        let mut params = Vec::new();
        if with_name {
            params.push(name_param.clone());
        }
        if namespaced {
            params.push(NAMESPACE_PARAM);
        }
        params.push((PRETTY, false));
        params
    };
    let kind_ref = || Body::Ref(kind_def.clone());
    let status_ref = || Body::Ref(schemas::STATUS.into());
    let mut out = Vec::new();

    // Collection: list, create, deletecollection.
    let collection = format!("{prefix}{ns_path}/{}", r.plural);
    let mut ops = Vec::new();
    if r.allows("list") {
        if let Some(list_def) = &list_def {
            let mut o =
                op("get", "list", &format!("{ns_word}{kind}"), format!("list or watch objects of kind {kind}"), "list");
            o.params = LIST_PARAMS.to_vec();
            o.produces = LIST_TYPES;
            o.responses = vec![ok(Body::Ref(list_def.clone())), unauthorized()];
            ops.push(o);
        }
    }
    if r.allows("create") {
        let mut o =
            op("post", "create", &format!("{ns_word}{kind}"), format!("create {} {kind}", article(kind)), "post");
        o.params = WRITE_PARAMS.to_vec();
        o.request = Some((kind_def.clone(), ANY, true));
        o.responses = vec![ok(kind_ref()), created(kind_ref()), accepted(kind_ref()), unauthorized()];
        ops.push(o);
    }
    if r.allows("deletecollection") {
        let mut o = op(
            "delete",
            "delete",
            &format!("Collection{ns_word}{kind}"),
            format!("delete collection of {kind}"),
            "deletecollection",
        );
        o.params = DELETE_COLLECTION_PARAMS.to_vec();
        o.request = Some((schemas::DELETE_OPTIONS.into(), ANY, false));
        o.responses = vec![ok(status_ref()), unauthorized()];
        ops.push(o);
    }
    if !ops.is_empty() {
        out.push(PathItem { path: collection.clone(), params: scope_params(false), ops });
    }

    // Item: read, replace, patch, delete.
    let mut ops = Vec::new();
    let rest = format!("{ns_word}{kind}");
    if r.allows("get") {
        let mut o = op("get", "read", &rest, format!("read the specified {kind}"), "get");
        o.responses = vec![ok(kind_ref()), unauthorized()];
        ops.push(o);
    }
    if r.allows("update") {
        let mut o = op("put", "replace", &rest, format!("replace the specified {kind}"), "put");
        o.params = WRITE_PARAMS.to_vec();
        o.request = Some((kind_def.clone(), ANY, true));
        o.responses = vec![ok(kind_ref()), created(kind_ref()), unauthorized()];
        ops.push(o);
    }
    if r.allows("delete") {
        let mut o = op("delete", "delete", &rest, format!("delete {} {kind}", article(kind)), "delete");
        o.params = DELETE_PARAMS.to_vec();
        o.request = Some((schemas::DELETE_OPTIONS.into(), ANY, false));
        o.responses = vec![ok(status_ref()), accepted(status_ref()), unauthorized()];
        ops.push(o);
    }
    if r.allows("patch") {
        let mut o = op("patch", "patch", &rest, format!("partially update the specified {kind}"), "patch");
        o.params = PATCH_PARAMS.to_vec();
        o.request = Some((schemas::PATCH.into(), patch_types, true));
        o.responses = vec![ok(kind_ref()), created(kind_ref()), unauthorized()];
        ops.push(o);
    }
    if !ops.is_empty() {
        out.push(PathItem { path: format!("{collection}/{{name}}"), params: scope_params(true), ops });
    }

    // All namespaces: list and watch across namespaces.
    if namespaced && r.allows("list") {
        if let Some(list_def) = &list_def {
            let mut o = op(
                "get",
                "list",
                &format!("{kind}ForAllNamespaces"),
                format!("list or watch objects of kind {kind}"),
                "list",
            );
            o.produces = LIST_TYPES;
            o.responses = vec![ok(Body::Ref(list_def.clone())), unauthorized()];
            let mut params: Vec<(Param, bool)> = LIST_PARAMS.iter().map(|p| (p.clone(), false)).collect();
            params.push((PRETTY, false));
            params.sort_by_key(|(p, _)| p.name);
            out.push(PathItem { path: format!("{prefix}/{}", r.plural), params, ops: vec![o] });
        }
    }

    // Deprecated watch paths.
    if r.allows("watch") {
        let watch_params = |with_name: bool, with_ns: bool| {
            let mut params: Vec<(Param, bool)> = LIST_PARAMS.iter().map(|p| (p.clone(), false)).collect();
            params.push((PRETTY, false));
            if with_name {
                params.push(name_param.clone());
            }
            if with_ns {
                params.push(NAMESPACE_PARAM);
            }
            params.sort_by_key(|(p, _)| p.name);
            params
        };
        let watch_op = |rest: String, description: String, action: &'static str| {
            let mut o = op("get", "watch", &rest, description, action);
            o.produces = LIST_TYPES;
            o.responses = vec![ok(Body::Ref(schemas::WATCH_EVENT.into())), unauthorized()];
            o
        };
        let list_description = format!("watch individual changes to a list of {kind}. deprecated: use the 'watch' parameter with a list operation instead.");
        out.push(PathItem {
            path: format!("{prefix}/watch{ns_path}/{}", r.plural),
            params: watch_params(false, namespaced),
            ops: vec![watch_op(format!("{ns_word}{kind}List"), list_description.clone(), "watchlist")],
        });
        out.push(PathItem {
            path: format!("{prefix}/watch{ns_path}/{}/{{name}}", r.plural),
            params: watch_params(true, namespaced),
            ops: vec![watch_op(
                format!("{ns_word}{kind}"),
                format!("watch changes to an object of kind {kind}. deprecated: use the 'watch' parameter with a list operation instead, filtered to a single item with the 'fieldSelector' parameter."),
                "watch",
            )],
        });
        if namespaced {
            out.push(PathItem {
                path: format!("{prefix}/watch/{}", r.plural),
                params: watch_params(false, false),
                ops: vec![watch_op(format!("{kind}ListForAllNamespaces"), list_description, "watchlist")],
            });
        }
    }

    // Subresources.
    for sub in r.subresources {
        let word = operation_id_part(sub.name, true);
        let rest = format!("{ns_word}{kind}{word}");
        let sub_path = format!("{collection}/{{name}}/{}", sub.name);
        let sub_gvk = sub.kind.clone();
        let sub_def = schemas.name_of(&sub_gvk).map(str::to_string);
        let with_gvk = |mut o: Operation| {
            o.gvk = Some(sub_gvk.clone());
            o
        };
        let allows = |v: &str| sub.verbs.contains(&v);
        let mut ops = Vec::new();
        if sub.kind.kind.ends_with("Options") {
            // Connect subresources (exec, attach, portforward, proxy).
            let params: &[Param] = match sub.name {
                "exec" => EXEC_PARAMS,
                "attach" => ATTACH_PARAMS,
                "portforward" => PORTFORWARD_PARAMS,
                _ => PROXY_PARAMS,
            };
            let methods: &[&str] = if sub.name == "proxy" {
                &["delete", "get", "head", "options", "patch", "post", "put"]
            } else {
                &["get", "post"]
            };
            let connect_ops = |suffix: &str| -> Vec<Operation> {
                methods
                    .iter()
                    .map(|m| {
                        let upper = m.to_ascii_uppercase();
                        let mut o = with_gvk(op(
                            static_method(m),
                            "connect",
                            "",
                            format!("connect {upper} requests to {} of {kind}", sub.name),
                            "connect",
                        ));
                        o.id = format!("connect{ident}{}{rest}{suffix}", operation_id_part(m, true));
                        o.params = if suffix.is_empty() { params.to_vec() } else { vec![] };
                        o.produces = ANY;
                        o.request = None;
                        o.responses = vec![ok(Body::Text), unauthorized()];
                        o
                    })
                    .collect()
            };
            out.push(PathItem { path: sub_path.clone(), params: scope_params(true), ops: connect_ops("") });
            if sub.name == "proxy" {
                let mut params = scope_params(true);
                params.retain(|(p, _)| p.name != "pretty");
                params.push(path_param("path", "path to the resource"));
                params.extend(PROXY_PARAMS.iter().map(|p| (p.clone(), false)));
                params.sort_by_key(|(p, _)| (p.name, p.location == In::Query));
                out.push(PathItem { path: format!("{sub_path}/{{path}}"), params, ops: connect_ops("WithPath") });
            }
            continue;
        }
        if sub.name == "log" {
            let mut o = with_gvk(op("get", "read", &rest, format!("read log of the specified {kind}"), "get"));
            o.params = LOG_PARAMS.to_vec();
            o.produces = LOG_TYPES;
            o.responses = vec![ok(Body::Text), unauthorized()];
            out.push(PathItem { path: sub_path, params: scope_params(true), ops: vec![o] });
            continue;
        }
        let Some(sub_def) = sub_def else { continue };
        let sub_ref = || Body::Ref(sub_def.clone());
        if allows("get") {
            let mut o = with_gvk(op("get", "read", &rest, format!("read {} of the specified {kind}", sub.name), "get"));
            o.responses = vec![ok(sub_ref()), unauthorized()];
            ops.push(o);
        }
        if allows("create") {
            let mut o = with_gvk(op(
                "post",
                "create",
                &rest,
                format!("create {} of {} {kind}", sub.name, article(kind)),
                "post",
            ));
            o.params = WRITE_PARAMS.to_vec();
            o.request = Some((sub_def.clone(), ANY, true));
            o.responses = vec![ok(sub_ref()), created(sub_ref()), accepted(sub_ref()), unauthorized()];
            ops.push(o);
        }
        if allows("update") {
            let mut o =
                with_gvk(op("put", "replace", &rest, format!("replace {} of the specified {kind}", sub.name), "put"));
            o.params = WRITE_PARAMS.to_vec();
            o.request = Some((sub_def.clone(), ANY, true));
            o.responses = vec![ok(sub_ref()), created(sub_ref()), unauthorized()];
            ops.push(o);
        }
        if allows("patch") {
            let mut o = with_gvk(op(
                "patch",
                "patch",
                &rest,
                format!("partially update {} of the specified {kind}", sub.name),
                "patch",
            ));
            o.params = PATCH_PARAMS.to_vec();
            o.request = Some((schemas::PATCH.into(), patch_types, true));
            o.responses = vec![ok(sub_ref()), created(sub_ref()), unauthorized()];
            ops.push(o);
        }
        if !ops.is_empty() {
            out.push(PathItem { path: sub_path, params: scope_params(true), ops });
        }
    }
    out
}

fn static_method(m: &str) -> &'static str {
    match m {
        "delete" => "delete",
        "get" => "get",
        "head" => "head",
        "options" => "options",
        "patch" => "patch",
        "post" => "post",
        _ => "put",
    }
}

fn article(kind: &str) -> &'static str {
    match kind.chars().next() {
        Some('A' | 'E' | 'I' | 'O' | 'U') => "an",
        _ => "a",
    }
}

impl Param {
    fn to_v3(&self, required: bool) -> Value {
        let mut p = Map::new();
        p.insert("name".into(), json!(self.name));
        p.insert("in".into(), json!(if self.location == In::Path { "path" } else { "query" }));
        p.insert("description".into(), json!(self.description));
        if required {
            p.insert("required".into(), json!(true));
        }
        p.insert("schema".into(), json!({"type": self.ty, "uniqueItems": true}));
        Value::Object(p)
    }

    fn to_v2(&self, required: bool) -> Value {
        let mut p = Map::new();
        p.insert("uniqueItems".into(), json!(true));
        p.insert("type".into(), json!(self.ty));
        p.insert("description".into(), json!(self.description));
        p.insert("name".into(), json!(self.name));
        p.insert("in".into(), json!(if self.location == In::Path { "path" } else { "query" }));
        if required {
            p.insert("required".into(), json!(true));
        }
        Value::Object(p)
    }
}

fn v3_schema(body: &Body) -> Value {
    match body {
        Body::Ref(def) => json!({"$ref": format!("{}{def}", schemas::REF_PREFIX)}),
        Body::Text => json!({"type": "string"}),
    }
}

fn v2_schema(body: &Body) -> Value {
    match body {
        Body::Ref(def) => json!({"$ref": format!("#/definitions/{def}")}),
        Body::Text => json!({"type": "string"}),
    }
}

impl Operation {
    fn extensions(&self, out: &mut Map<String, Value>) {
        if let Some(action) = self.action {
            out.insert("x-kubernetes-action".into(), json!(action));
        }
        if let Some(gvk) = &self.gvk {
            out.insert("x-kubernetes-group-version-kind".into(), gvk_json(gvk));
        }
    }

    fn to_v3(&self) -> Value {
        let mut o = Map::new();
        o.insert("tags".into(), json!([self.tag]));
        o.insert("description".into(), json!(self.description));
        o.insert("operationId".into(), json!(self.id));
        if !self.params.is_empty() {
            o.insert("parameters".into(), Value::Array(self.params.iter().map(|p| p.to_v3(false)).collect()));
        }
        if let Some((def, types, required)) = &self.request {
            let schema = json!({"$ref": format!("{}{def}", schemas::REF_PREFIX)});
            let content: Map<String, Value> =
                types.iter().map(|t| (t.to_string(), json!({"schema": schema}))).collect();
            let mut body = Map::new();
            body.insert("content".into(), Value::Object(content));
            if *required {
                body.insert("required".into(), json!(true));
            }
            o.insert("requestBody".into(), Value::Object(body));
        }
        let mut responses = Map::new();
        for r in &self.responses {
            let mut resp = Map::new();
            resp.insert("description".into(), json!(r.description));
            if let Some(body) = &r.body {
                let schema = v3_schema(body);
                let content: Map<String, Value> =
                    self.produces.iter().map(|t| (t.to_string(), json!({"schema": schema}))).collect();
                resp.insert("content".into(), Value::Object(content));
            }
            responses.insert(r.code.into(), Value::Object(resp));
        }
        o.insert("responses".into(), Value::Object(responses));
        self.extensions(&mut o);
        Value::Object(o)
    }

    fn to_v2(&self) -> Value {
        let mut o = Map::new();
        o.insert("tags".into(), json!([self.tag]));
        o.insert("description".into(), json!(self.description));
        o.insert("operationId".into(), json!(self.id));
        let consumes: &[&str] = match &self.request {
            Some((_, types, _)) => types,
            None => ANY,
        };
        o.insert("consumes".into(), json!(consumes));
        o.insert("produces".into(), json!(self.produces));
        o.insert("schemes".into(), json!(["https"]));
        let mut params: Vec<Value> = Vec::new();
        if let Some((def, _, required)) = &self.request {
            let mut body = Map::new();
            body.insert("name".into(), json!("body"));
            body.insert("in".into(), json!("body"));
            if *required {
                body.insert("required".into(), json!(true));
            }
            body.insert("schema".into(), json!({"$ref": format!("#/definitions/{def}")}));
            params.push(Value::Object(body));
        }
        params.extend(self.params.iter().map(|p| p.to_v2(false)));
        if !params.is_empty() {
            o.insert("parameters".into(), Value::Array(params));
        }
        let mut responses = Map::new();
        for r in &self.responses {
            let mut resp = Map::new();
            resp.insert("description".into(), json!(r.description));
            if let Some(body) = &r.body {
                resp.insert("schema".into(), v2_schema(body));
            }
            responses.insert(r.code.into(), Value::Object(resp));
        }
        o.insert("responses".into(), Value::Object(responses));
        self.extensions(&mut o);
        Value::Object(o)
    }
}

impl PathItem {
    /// The OpenAPI v3 path item object.
    pub(crate) fn to_v3(&self) -> Value {
        let mut item = Map::new();
        for o in &self.ops {
            item.insert(o.method.into(), o.to_v3());
        }
        if !self.params.is_empty() {
            item.insert("parameters".into(), Value::Array(self.params.iter().map(|(p, r)| p.to_v3(*r)).collect()));
        }
        Value::Object(item)
    }

    /// The Swagger 2.0 path item object.
    pub(crate) fn to_v2(&self) -> Value {
        let mut item = Map::new();
        for o in &self.ops {
            item.insert(o.method.into(), o.to_v2());
        }
        if !self.params.is_empty() {
            item.insert("parameters".into(), Value::Array(self.params.iter().map(|(p, r)| p.to_v2(*r)).collect()));
        }
        Value::Object(item)
    }

    /// The definitions this path's operations refer to.
    pub(crate) fn definitions(&self) -> Vec<String> {
        let mut out = Vec::new();
        for o in &self.ops {
            if let Some((def, _, _)) = &o.request {
                out.push(def.clone());
            }
            for r in &o.responses {
                if let Some(Body::Ref(def)) = &r.body {
                    out.push(def.clone());
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_ids_and_tags_follow_upstream() {
        assert_eq!(gv_tag("", "v1"), "core_v1");
        assert_eq!(gv_tag("rbac.authorization.k8s.io", "v1"), "rbacAuthorization_v1");
        assert_eq!(gv_tag("flowcontrol.apiserver.k8s.io", "v1"), "flowcontrolApiserver_v1");
        assert_eq!(gv_ident("apps", "v1"), "AppsV1");
        assert_eq!(gv_ident("", "v1"), "CoreV1");
        assert_eq!(gv_ident("autoscaling", "v2"), "AutoscalingV2");
        assert_eq!(operation_id_part("ephemeralcontainers", true), "Ephemeralcontainers");
        assert_eq!(group_path("apps").ops[0].id, "getAppsAPIGroup");
        assert_eq!(resources_path("", "v1").ops[0].id, "getCoreV1APIResources");
    }
}
