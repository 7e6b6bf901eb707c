//! Request routing: a URL and method become a [`RequestInfo`] (upstream's
//! `RequestInfoFactory`): group, version, resource, namespace, name,
//! subresource and verb.
//!
//! - `/api/v1/...` is the core group, `/apis/{group}/{version}/...` the others;
//! - `namespaces/{ns}/{resource}/...` is a namespaced resource, while
//!   `namespaces/{name}` and `namespaces/{name}/{status|finalize}` are the
//!   namespace object itself;
//! - `watch=true` (or the legacy `/watch/` path prefix) turns a GET into a
//!   watch; DELETE on a collection is `deletecollection`.

use axum::http::Method;

use super::query::Query;

/// The verbs of the resource API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    /// GET of one object.
    Get,
    /// GET of a collection.
    List,
    /// GET with `watch=true`, or under `/watch/`.
    Watch,
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH.
    Patch,
    /// DELETE of one object.
    Delete,
    /// DELETE of a collection.
    DeleteCollection,
}

impl Verb {
    /// The verb as discovery and RBAC name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
        }
    }
}

/// What a resource request addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestInfo {
    /// The verb; `None` for a method the API does not serve (405).
    pub verb: Option<Verb>,
    /// API group (`""` for core).
    pub group: String,
    /// API version.
    pub version: String,
    /// Plural resource name.
    pub resource: String,
    /// Namespace from the path (`""` when none).
    pub namespace: String,
    /// Object name (`""` for collections).
    pub name: String,
    /// Subresource (`status`, `finalize`, …; `""` for the main resource).
    pub subresource: String,
}

/// Namespace subresources: `namespaces/{name}/{these}` address the
/// namespace itself, not a resource inside it.
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

/// Parses a resource request; `None` for paths that are not resource
/// requests (discovery documents, unknown prefixes).
pub fn parse(method: &Method, path: &str, query: &Query) -> Option<RequestInfo> {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (group, version, mut rest) = match segments.as_slice() {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return None,
    };
    if rest.last() == Some(&"") {
        rest = &rest[..rest.len() - 1];
    }
    let mut legacy_watch = false;
    if rest.first() == Some(&"watch") {
        legacy_watch = true;
        rest = &rest[1..];
    }
    if rest.is_empty() || rest.iter().any(|s| s.is_empty()) {
        return None;
    }
    let mut namespace = "";
    if rest[0] == "namespaces" && rest.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&rest[2]) {
        namespace = rest[1];
        rest = &rest[2..];
    }
    // `{resource}/{name}/proxy/{path...}`: the path is the proxied one.
    if rest.len() > 3 && rest[2] != "proxy" {
        return None;
    }
    let resource = rest[0];
    let name = rest.get(1).copied().unwrap_or("");
    let subresource = rest.get(2).copied().unwrap_or("");
    let watch = legacy_watch || query.flag("watch");
    let verb = match *method {
        Method::GET if watch => Some(Verb::Watch),
        Method::GET if name.is_empty() => Some(Verb::List),
        Method::GET => Some(Verb::Get),
        Method::POST => Some(Verb::Create),
        Method::PUT => Some(Verb::Update),
        Method::PATCH => Some(Verb::Patch),
        Method::DELETE if name.is_empty() => Some(Verb::DeleteCollection),
        Method::DELETE => Some(Verb::Delete),
        _ => None,
    };
    Some(RequestInfo {
        verb,
        group: group.to_string(),
        version: version.to_string(),
        resource: resource.to_string(),
        namespace: namespace.to_string(),
        name: name.to_string(),
        subresource: subresource.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(method: Method, path: &str, query: &str) -> RequestInfo {
        parse(&method, path, &Query::parse(Some(query))).unwrap()
    }

    #[test]
    fn namespaced_resources_and_the_namespace_itself() {
        let r = info(Method::GET, "/api/v1/namespaces/default/configmaps/x", "");
        assert_eq!((r.resource.as_str(), r.namespace.as_str(), r.name.as_str()), ("configmaps", "default", "x"));
        assert_eq!(r.verb, Some(Verb::Get));
        let ns = info(Method::GET, "/api/v1/namespaces/default", "");
        assert_eq!((ns.resource.as_str(), ns.namespace.as_str(), ns.name.as_str()), ("namespaces", "", "default"));
        let fin = info(Method::PUT, "/api/v1/namespaces/team/finalize", "");
        assert_eq!((fin.name.as_str(), fin.subresource.as_str()), ("team", "finalize"));
        let list = info(Method::GET, "/api/v1/namespaces", "");
        assert_eq!((list.resource.as_str(), list.verb), ("namespaces", Some(Verb::List)));
    }

    #[test]
    fn groups_subresources_and_verbs() {
        let r = info(Method::PATCH, "/apis/apps/v1/namespaces/ns/deployments/web/status", "");
        assert_eq!((r.group.as_str(), r.version.as_str(), r.subresource.as_str()), ("apps", "v1", "status"));
        assert_eq!(r.verb, Some(Verb::Patch));
        assert_eq!(info(Method::GET, "/api/v1/pods", "watch=true").verb, Some(Verb::Watch));
        assert_eq!(info(Method::GET, "/api/v1/watch/namespaces/a/pods", "").verb, Some(Verb::Watch));
        assert_eq!(info(Method::DELETE, "/api/v1/namespaces/a/pods", "").verb, Some(Verb::DeleteCollection));
        assert_eq!(info(Method::HEAD, "/api/v1/nodes", "").verb, None);
        assert!(parse(&Method::GET, "/api/v1", &Query::default()).is_none());
        assert!(parse(&Method::GET, "/foo/v1/x", &Query::default()).is_none());
        let proxy = info(Method::GET, "/api/v1/namespaces/a/services/web:http/proxy/some/path", "");
        assert_eq!((proxy.name.as_str(), proxy.subresource.as_str()), ("web:http", "proxy"));
        assert!(parse(&Method::GET, "/api/v1/namespaces/a/pods/p/status/extra", &Query::default()).is_none());
    }
}
