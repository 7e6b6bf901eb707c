//! The resource API: `/api/v1/...` and `/apis/{group}/{version}/...`.
//!
//! [`Api::handle`] is the router's fallback: it parses the request
//! ([`request`]), finds the resource in the registry, checks scope,
//! subresource and verb (404 / 405 as upstream), negotiates the response
//! format ([`negotiate`]) and calls the handler of the verb — one module
//! each: [`get`], [`list`], [`watch`], [`create`], [`update`], [`patch`],
//! [`delete`]. Handlers decode bodies ([`body`]), read options from the
//! query ([`query`]) and call the generic registry store
//! ([`crate::storage`]); successes are written by [`response`], every
//! failure by [`crate::status`].

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use rkube_apimachinery::registry::{Registry, ResourceInfo};
use rkube_apimachinery::ApiError;
use rkube_store::SharedStore;

use crate::admission::{Chain, RequestAdmission};
use crate::authn::UserInfo;
use crate::bootstrap::{self, ClusterConfig};
use crate::status::StatusError;
use crate::storage::conversion::Conversion;
use crate::storage::ipalloc::ServiceAllocator;
use crate::storage::namespaces::{self, NamespaceLifecycle};
use crate::storage::{ResourceStore, WriteOptions};

pub mod auth;
pub mod binding;
pub mod body;
pub mod connect;
pub mod converted;
pub mod create;
pub mod delete;
pub mod ephemeral;
pub mod eviction;
pub mod get;
pub mod list;
pub mod negotiate;
pub mod patch;
pub mod query;
pub mod request;
pub mod response;
pub mod scale;
pub mod table;
pub mod update;
pub mod watch;

use negotiate::Format;
use query::Query;
use request::{RequestInfo, Verb};

/// The message of a 405 (upstream's generic server response).
pub const METHOD_NOT_ALLOWED: &str = "the server does not allow this method on the requested resource";

/// Everything a verb handler needs about its request.
pub struct Ctx<'a> {
    /// The API (for cross-resource checks such as namespace lifecycle).
    pub api: &'a Api,
    /// The parsed request.
    pub request: &'a RequestInfo,
    /// The resource addressed.
    pub info: &'a ResourceInfo,
    /// Its store.
    pub store: &'a ResourceStore,
    /// The query parameters.
    pub query: Query,
    /// The negotiated response format.
    pub format: Format,
    /// The request headers.
    pub headers: HeaderMap,
    /// Who asks (anonymous when the request carried no credentials).
    pub user: UserInfo,
    /// The resource as the client addressed it: `info` itself, or the
    /// served version of a converted resource (`events.k8s.io/v1` events
    /// stored as core/v1).
    pub served: &'a ResourceInfo,
}

impl Ctx<'_> {
    /// A request header as a string.
    pub fn header(&self, name: axum::http::HeaderName) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// NamespaceLifecycle admission for a write in this request's namespace.
    pub async fn admit(&self, op: namespaces::Operation, name: &str) -> Result<(), ApiError> {
        let is_namespace = self.info.group.is_empty() && self.info.kind == "Namespace";
        let resource = self.store.group_resource();
        self.api.lifecycle.admit(op, resource, is_namespace, &self.request.namespace, name).await
    }

    /// The admission of this request's write ([`crate::admission`]): pass
    /// it in [`WriteOptions`] and add its warnings to the response.
    pub fn admission(&self, dry_run: bool) -> Arc<RequestAdmission> {
        Arc::new(RequestAdmission::new(
            self.api.admission.clone(),
            self.user.clone(),
            self.info.clone(),
            &self.request.subresource,
            &self.request.namespace,
            dry_run,
        ))
    }

    /// Write options with this request's admission; the admission is
    /// returned too, for its warnings.
    pub fn write_options(&self, dry_run: bool) -> (WriteOptions, Arc<RequestAdmission>) {
        let admission = self.admission(dry_run);
        let request_api_version =
            if self.served.gvk() == self.info.gvk() { String::new() } else { self.served.api_version() };
        (WriteOptions { dry_run, admission: Some(admission.clone()), request_api_version }, admission)
    }
}

/// The resource API over one store.
pub struct Api {
    registry: Registry,
    stores: HashMap<(&'static str, &'static str, &'static str), Arc<ResourceStore>>,
    lifecycle: NamespaceLifecycle,
    namespaces: Arc<ResourceStore>,
    cluster: ClusterConfig,
    services: Option<Arc<ServiceAllocator>>,
    /// The admission plugins every write passes.
    admission: Arc<Chain>,
    /// The authorizer chain (system:masters, Node, RBAC).
    authorizer: Arc<crate::authz::ServerAuthorizer>,
    /// Flips to `true` when graceful shutdown begins; long-running
    /// responses (watches) subscribe and end at once.
    shutdown: tokio::sync::watch::Sender<bool>,
    /// The resource metrics API's kept scrapes (`metrics.k8s.io`).
    metrics: Arc<crate::metrics_api::MetricsApi>,
}

impl Api {
    /// Builds a store for every resource of `registry` that keeps objects.
    /// The registry must serve core/v1 namespaces.
    pub fn new(registry: Registry, store: SharedStore) -> Api {
        Api::with_cluster(registry, store, ClusterConfig::default())
    }

    /// [`Api::new`] with the cluster settings: the Service allocator over
    /// `cluster.service_cidr`, the Events' time to live, and what
    /// [`Api::bootstrap`] creates.
    pub fn with_cluster(registry: Registry, store: SharedStore, cluster: ClusterConfig) -> Api {
        let stores: HashMap<_, _> = registry
            .resources()
            .iter()
            .filter_map(|r| Some(((r.group, r.version, r.plural), Arc::new(ResourceStore::new(r, store.clone())?))))
            .collect();
        let namespaces =
            stores.get(&("", "v1", "namespaces")).cloned().expect("the registry serves core/v1 namespaces");
        let addresses = stores.get(&("networking.k8s.io", "v1", "ipaddresses")).cloned();
        let services = stores.get(&("", "v1", "services")).zip(addresses).map(|(svc, addresses)| {
            let alloc = Arc::new(ServiceAllocator::new(cluster.service_cidr, store.clone(), addresses));
            svc.set_hooks(alloc.clone());
            alloc
        });
        if let Some(events) = stores.get(&("", "v1", "events")) {
            events.set_ttl(cluster.event_ttl);
        }
        let authorizer = Arc::new(crate::authz::ServerAuthorizer::new());
        crate::authz::set_current(&authorizer);
        let admission = Arc::new(crate::admission::plugins::default_chain(
            &stores,
            &authorizer,
            cluster.default_toleration_seconds,
        ));
        let metrics = Arc::new(crate::metrics_api::MetricsApi::new(cluster.metric_resolution));
        Api {
            metrics,
            registry,
            stores,
            lifecycle: NamespaceLifecycle::new(namespaces.clone()),
            namespaces,
            cluster,
            services,
            admission,
            authorizer,
            shutdown: tokio::sync::watch::channel(false).0,
        }
    }

    /// Signals that graceful shutdown has begun: every open watch stream
    /// ends now (as upstream's watch handlers do on the server's stop
    /// channel), so clients reconnect elsewhere and the server need not
    /// wait out its grace period for them.
    pub fn start_shutdown(&self) {
        self.shutdown.send_replace(true);
    }

    /// A receiver of the shutdown signal ([`Api::start_shutdown`]); its
    /// value is `true` once shutdown has begun.
    pub fn shutdown_signal(&self) -> tokio::sync::watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    /// The cluster settings.
    pub fn cluster(&self) -> &ClusterConfig {
        &self.cluster
    }

    /// The Service ClusterIP and NodePort allocator.
    pub fn service_allocator(&self) -> Option<&ServiceAllocator> {
        self.services.as_deref()
    }

    /// The authorizer chain every request and access review asks
    /// ([`crate::authz::ServerAuthorizer`]).
    pub fn authorizer(&self) -> &Arc<crate::authz::ServerAuthorizer> {
        &self.authorizer
    }

    /// The resource metrics API (`metrics.k8s.io`, [`crate::metrics_api`]).
    pub fn metrics_api(&self) -> &Arc<crate::metrics_api::MetricsApi> {
        &self.metrics
    }

    /// The resource registry served.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The store of a resource, if it keeps objects.
    pub fn store(&self, group: &str, version: &str, plural: &str) -> Option<&Arc<ResourceStore>> {
        let info = self.registry.lookup(group, version, plural)?;
        self.stores.get(&(info.group, info.version, info.plural))
    }

    /// `(resource, count)` of every resource whose watch cache holds a
    /// complete state (`pods`, `deployments.apps`, …): the
    /// `apiserver_storage_objects` gauge. Every cache starts in
    /// [`Api::bootstrap`] (as upstream's cachers start with the server), so
    /// every resource is reported once its initial list is in, with 0
    /// where it has no objects.
    pub fn storage_object_counts(&self) -> Vec<(String, usize)> {
        let counts: std::collections::BTreeMap<String, usize> = self
            .stores
            .values()
            .filter_map(|s| {
                let cache = s.watch_cache().filter(|c| c.status().0)?;
                Some((s.group_resource().to_string(), cache.len()))
            })
            .collect();
        counts.into_iter().collect()
    }

    /// Starts the authorizer's watches, creates the system namespaces,
    /// reconciles the bootstrap RBAC policy ([`crate::authz::policy`]),
    /// loads the Service allocator and creates or reconciles the objects
    /// the API server keeps ([`crate::bootstrap`]); starts every watch
    /// cache; idempotent, call at start.
    pub async fn bootstrap(&self) -> Result<(), ApiError> {
        for store in self.stores.values() {
            if let Some(cache) = store.watch_cache() {
                cache.start();
            }
        }
        self.authorizer.start(&self.stores);
        namespaces::ensure_system_namespaces(&self.namespaces).await?;
        crate::authz::policy::reconcile::reconcile(self).await?;
        bootstrap::ensure_system_objects(self, &self.cluster).await
    }

    /// Serves one request (the router's fallback for every path it does not
    /// route itself).
    pub async fn handle(&self, req: Request) -> Response {
        let (mut parts, body) = req.into_parts();
        let query = Query::parse(parts.uri.query());
        // Kept for the streaming subresources and proxy (connection upgrades, forwarding).
        let raw = connect::Raw {
            method: parts.method.clone(),
            uri: parts.uri.clone(),
            upgrade: parts.extensions.remove::<hyper::upgrade::OnUpgrade>(),
            remote: parts.extensions.get::<axum::extract::ConnectInfo<std::net::SocketAddr>>().map(|c| c.0),
        };
        let Some(request) = request::parse(&parts.method, parts.uri.path(), &query) else {
            return StatusError::path_not_found().into_response();
        };
        let user = parts.extensions.get::<UserInfo>().cloned();
        let result = if auth::serves(&request) {
            auth::handle(self, &request, query, parts.headers, user, body).await
        } else {
            self.serve(&request, query, parts.headers, body, raw, user.unwrap_or_else(UserInfo::anonymous)).await
        };
        match result {
            Ok(resp) => resp,
            Err(e) => {
                tracing::debug!(component = crate::COMPONENT, method = %parts.method, path = %parts.uri.path(), code = e.code(), error = %e, "request failed");
                StatusError(e).into_response()
            }
        }
    }

    async fn serve(
        &self,
        request: &RequestInfo,
        query: Query,
        headers: HeaderMap,
        body: Body,
        raw: connect::Raw,
        user: UserInfo,
    ) -> Result<Response, ApiError> {
        let info =
            self.registry.lookup(&request.group, &request.version, &request.resource).ok_or(ApiError::PathNotFound)?;
        let verb = request.verb.ok_or_else(|| ApiError::MethodNotSupported(METHOD_NOT_ALLOWED.into()))?;
        check_scope(info, request, verb)?;
        let allowed = if request.subresource.is_empty() {
            // Creates go to the collection: an object's own URL has no POST.
            info.allows(verb.as_str()) && !(verb == Verb::Create && !request.name.is_empty())
        } else {
            let sub = info.subresource(&request.subresource).ok_or(ApiError::PathNotFound)?;
            let pod_subresource = info.group.is_empty()
                && info.plural == "pods"
                && POD_SUBRESOURCES.contains(&request.subresource.as_str());
            let proxy =
                info.group.is_empty() && matches!(info.plural, "nodes" | "services") && request.subresource == "proxy";
            if !pod_subresource
                && !proxy
                && !matches!(request.subresource.as_str(), "status" | "finalize" | "scale" | "approval")
            {
                // Served by later items (proxy, serviceaccounts/token, ...).
                return Err(ApiError::PathNotFound);
            }
            sub.verbs.contains(&verb.as_str())
        };
        if !allowed {
            return Err(ApiError::MethodNotSupported(METHOD_NOT_ALLOWED.into()));
        }
        let is_binding = info.group.is_empty() && info.plural == "bindings";
        let is_pod_subresource =
            info.group.is_empty() && info.plural == "pods" && POD_SUBRESOURCES.contains(&request.subresource.as_str());
        if is_binding || is_pod_subresource {
            return self.serve_pod_subresource(request, info, verb, query, headers, body, raw, user).await;
        }
        if info.group.is_empty() && request.subresource == "proxy" {
            return connect::proxy(self, info, request, headers, body, raw).await;
        }
        if info.group == crate::metrics_api::GROUP {
            return crate::metrics_api::serve(self, request, info, verb, &query, &headers).await;
        }
        if !self.stores.contains_key(&(info.group, info.version, info.plural)) {
            if let Some(conv) = Conversion::for_resource(info) {
                return converted::serve(self, request, info, conv, verb, query, headers, body, user).await;
            }
        }
        let store = self.stores.get(&(info.group, info.version, info.plural)).ok_or_else(|| {
            ApiError::ServiceUnavailable(format!(
                "{} is not served yet: its storage or conversion is not implemented",
                info.group_resource()
            ))
        })?;
        let accept = headers.get(axum::http::header::ACCEPT).and_then(|v| v.to_str().ok());
        let format = negotiate::output_format(accept, query.get("includeObject"))?;
        let ctx = Ctx { api: self, request, info, store, query, format, headers: headers.clone(), user, served: info };
        if request.subresource == "scale" {
            return scale::handle(&ctx, verb, body).await;
        }
        match verb {
            Verb::Get => get::handle(&ctx).await,
            Verb::List => list::handle(&ctx).await,
            Verb::Watch => watch::handle(&ctx).await,
            Verb::Create => create::handle(&ctx, body).await,
            Verb::Update => update::handle(&ctx, body).await,
            Verb::Patch => patch::handle(&ctx, body).await,
            Verb::Delete => delete::handle(&ctx, body).await,
            Verb::DeleteCollection => delete::handle_collection(&ctx, body).await,
        }
    }
}

/// The pod subresources served by their own handlers.
const POD_SUBRESOURCES: [&str; 8] =
    ["binding", "eviction", "ephemeralcontainers", "log", "exec", "attach", "portforward", "proxy"];

impl Api {
    /// `bindings` and the pod subresources of [`POD_SUBRESOURCES`].
    #[allow(clippy::too_many_arguments)]
    async fn serve_pod_subresource(
        &self,
        request: &RequestInfo,
        info: &ResourceInfo,
        verb: Verb,
        query: Query,
        headers: HeaderMap,
        body: Body,
        raw: connect::Raw,
        user: UserInfo,
    ) -> Result<Response, ApiError> {
        let pods = self.stores.get(&("", "v1", "pods")).ok_or(ApiError::PathNotFound)?;
        let accept = headers.get(axum::http::header::ACCEPT).and_then(|v| v.to_str().ok());
        let format = negotiate::output_format(accept, query.get("includeObject"))?;
        let ctx =
            Ctx { api: self, request, info, store: pods, query, format, headers: headers.clone(), user, served: info };
        if matches!(verb, Verb::Create | Verb::Update | Verb::Patch) && request.subresource != "log" {
            ctx.admit(namespaces::Operation::Update, &request.name).await?;
        }
        match request.subresource.as_str() {
            "" => binding::handle(&ctx, pods, None, body).await,
            "binding" => binding::handle(&ctx, pods, Some(&request.name), body).await,
            "eviction" => eviction::handle(&ctx, pods, body).await,
            "ephemeralcontainers" => ephemeral::handle(&ctx, pods, verb, body).await,
            "proxy" => connect::proxy(self, info, request, headers, body, raw).await,
            sub => connect::handle(&ctx, pods, sub, raw).await,
        }
    }
}

/// Namespaced resources need a namespace except for cross-namespace lists
/// and watches; cluster-scoped ones never have one.
fn check_scope(info: &ResourceInfo, request: &RequestInfo, verb: Verb) -> Result<(), ApiError> {
    if !info.namespaced() {
        return if request.namespace.is_empty() { Ok(()) } else { Err(ApiError::PathNotFound) };
    }
    if !request.namespace.is_empty() {
        return Ok(());
    }
    if !request.name.is_empty() {
        return Err(ApiError::PathNotFound);
    }
    match verb {
        Verb::List | Verb::Watch => Ok(()),
        _ => Err(ApiError::MethodNotSupported(METHOD_NOT_ALLOWED.into())),
    }
}
