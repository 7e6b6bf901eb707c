//! The authorization filter (upstream's `WithAuthorization`): every request
//! — resources, discovery, OpenAPI, `/metrics`, health and `/version` —
//! becomes [`Attributes`] and is refused with a 403 `Status` unless the
//! server's authorizer allows it. It runs after authentication and the
//! in-flight limits, before any handler.
//!
//! Resource requests get upstream's `RequestInfo` verbs (`get`, `list`,
//! `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`),
//! subresources, and the namespace; `namespaces/<name>` is in namespace
//! `<name>`, and a list or watch with a `metadata.name` field selector is
//! about that name. Anything else is a non-resource request: the path and
//! the HTTP method in lower case (`get`, `post`, …).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;

use super::{forbidden, Attributes, Authorizer, Decision};
use crate::authn::UserInfo;
use crate::rest::query::Query;
use crate::rest::request;
use crate::rest::Api;

/// How long a request waits for the authorizer's initial state at start.
const READY_WAIT: Duration = Duration::from_secs(10);

/// The attributes of a request by `user` (upstream's `GetAuthorizerAttributes`).
pub fn request_attributes(user: &UserInfo, method: &Method, path: &str, raw_query: Option<&str>) -> Attributes {
    let query = Query::parse(raw_query);
    let field_selector = query.get("fieldSelector").unwrap_or("").to_string();
    let method_verb = method.as_str().to_ascii_lowercase();
    match request::parse(method, path, &query) {
        Some(info) => {
            let verb = match info.verb {
                Some(v) => v.as_str().to_string(),
                None if *method == Method::HEAD => "get".to_string(),
                None => method_verb,
            };
            let mut attrs = Attributes {
                user: user.clone(),
                verb,
                resource_request: true,
                namespace: info.namespace,
                api_group: info.group,
                resource: info.resource,
                subresource: info.subresource,
                name: info.name,
                path: path.to_string(),
                field_selector,
            };
            if attrs.api_group.is_empty() && attrs.resource == "namespaces" && !attrs.name.is_empty() {
                attrs.namespace = attrs.name.clone();
            }
            if matches!(attrs.verb.as_str(), "list" | "watch") && attrs.name.is_empty() {
                if let Some(name) = attrs.field_equals("metadata.name") {
                    attrs.name = name.to_string();
                }
            }
            attrs
        }
        None => Attributes {
            user: user.clone(),
            verb: method_verb,
            path: path.to_string(),
            field_selector,
            ..Default::default()
        },
    }
}

/// Middleware: authorizes the request as the [`UserInfo`] authentication
/// attached (anonymous without one).
pub async fn authorize(State(api): State<Arc<Api>>, req: Request, next: Next) -> Response {
    let user = req.extensions().get::<UserInfo>().cloned().unwrap_or_else(UserInfo::anonymous);
    let attrs = request_attributes(&user, req.method(), req.uri().path(), req.uri().query());
    let authorizer = api.authorizer();
    if !super::is_privileged(&user) {
        authorizer.wait_ready(READY_WAIT).await;
    }
    let (decision, reason) = authorizer.authorize(&attrs);
    // Upstream's WithAuthorization records both on the audit event.
    let verdict = if decision == Decision::Allow { "allow" } else { "forbid" };
    crate::audit::annotate(req.extensions(), crate::audit::DECISION_ANNOTATION, verdict);
    crate::audit::annotate(req.extensions(), crate::audit::REASON_ANNOTATION, &reason);
    if decision == Decision::Allow {
        return next.run(req).await;
    }
    tracing::debug!(
        component = crate::COMPONENT,
        user = %user.name,
        verb = %attrs.verb,
        resource = %attrs.resource,
        namespace = %attrs.namespace,
        path = %attrs.path,
        %reason,
        "forbidden"
    );
    crate::status::error_response(&forbidden(&attrs, &reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(method: Method, path: &str, query: Option<&str>) -> Attributes {
        request_attributes(&UserInfo::anonymous(), &method, path, query)
    }

    #[test]
    fn resource_requests_map_to_rbac_verbs() {
        let a = attrs(Method::GET, "/api/v1/namespaces/ns/pods", Some("watch=true"));
        assert_eq!((a.verb.as_str(), a.resource.as_str(), a.namespace.as_str()), ("watch", "pods", "ns"));
        assert!(a.resource_request);
        let a = attrs(Method::POST, "/apis/apps/v1/namespaces/ns/deployments/web/scale", None);
        assert_eq!((a.verb.as_str(), a.api_group.as_str(), a.subresource.as_str()), ("create", "apps", "scale"));
        let a = attrs(Method::DELETE, "/api/v1/namespaces/ns/secrets", None);
        assert_eq!(a.verb, "deletecollection");
        let a = attrs(Method::GET, "/api/v1/namespaces/team", None);
        assert_eq!((a.resource.as_str(), a.name.as_str(), a.namespace.as_str()), ("namespaces", "team", "team"));
        let a = attrs(Method::GET, "/api/v1/namespaces/ns/secrets", Some("fieldSelector=metadata.name%3Dtls"));
        assert_eq!((a.verb.as_str(), a.name.as_str()), ("list", "tls"));
    }

    #[test]
    fn other_paths_are_non_resource_requests() {
        for (method, path, verb) in
            [(Method::GET, "/api", "get"), (Method::GET, "/apis/apps/v1", "get"), (Method::POST, "/healthz", "post")]
        {
            let a = attrs(method, path, None);
            assert!(!a.resource_request, "{path}");
            assert_eq!((a.verb.as_str(), a.path.as_str()), (verb, path));
        }
    }
}
