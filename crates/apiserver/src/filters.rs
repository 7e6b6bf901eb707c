//! The filters every request passes before its handler: the in-flight
//! limits (upstream's `WithMaxInFlightLimit`, `--max-requests-inflight` and
//! `--max-mutating-requests-inflight`) and the request metrics
//! ([`crate::metrics`]).
//!
//! - Long-running requests (watches, `proxy`, and the `attach`, `exec`,
//!   `log`, `portforward`, `proxy` subresources) take no seat, as upstream.
//! - Mutating requests are every method but GET, HEAD and OPTIONS
//!   (POST, PUT, PATCH, DELETE); they count against the mutating limit,
//!   the others against the read-only one. A limit of 0 means no limit.
//! - Beyond a limit the answer is 429 `TooManyRequests` with
//!   `Retry-After: 1` and upstream's message; the request is counted in
//!   `apiserver_request_total` with code 429.
//! - Every request is counted with its response code and its latency is
//!   observed; long-running ones when their response body ends.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use rkube_apimachinery::registry::Registry;
use rkube_apimachinery::ApiError;

use crate::metrics::{Gauges, Metrics, RequestLabels, APISERVER_COMPONENT};
use crate::rest::query::Query;
use crate::rest::request::{self, Verb};
use crate::status::StatusError;

/// Upstream's message of a request refused by the in-flight limits.
pub const TOO_MANY_REQUESTS: &str = "Too many requests, please try again later.";

/// The in-flight limits (`0`: unlimited).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InflightLimits {
    /// `--max-requests-inflight`: concurrent non-mutating requests.
    pub max_read_only: usize,
    /// `--max-mutating-requests-inflight`: concurrent mutating requests.
    pub max_mutating: usize,
}

impl Default for InflightLimits {
    /// Upstream's defaults: 400 read-only and 200 mutating.
    fn default() -> Self {
        InflightLimits { max_read_only: 400, max_mutating: 200 }
    }
}

/// Which limit a request counts against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestKind {
    /// GET, HEAD, OPTIONS.
    ReadOnly,
    /// POST, PUT, PATCH, DELETE.
    Mutating,
}

impl RequestKind {
    /// The kind of a request with `method`.
    pub fn of(method: &Method) -> RequestKind {
        if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
            RequestKind::ReadOnly
        } else {
            RequestKind::Mutating
        }
    }
}

/// Counts in-flight requests per [`RequestKind`] against the limits.
#[derive(Debug)]
pub struct InflightLimiter {
    limits: InflightLimits,
    read_only: AtomicUsize,
    mutating: AtomicUsize,
}

/// A seat taken by [`InflightLimiter::try_acquire`]; given back on drop.
#[derive(Debug)]
pub struct Seat<'a>(&'a AtomicUsize);

impl Drop for Seat<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl InflightLimiter {
    /// A limiter with nothing in flight.
    pub fn new(limits: InflightLimits) -> InflightLimiter {
        InflightLimiter { limits, read_only: AtomicUsize::new(0), mutating: AtomicUsize::new(0) }
    }

    /// Takes a seat of `kind`, or `None` when its limit is reached.
    pub fn try_acquire(&self, kind: RequestKind) -> Option<Seat<'_>> {
        let (counter, max) = match kind {
            RequestKind::ReadOnly => (&self.read_only, self.limits.max_read_only),
            RequestKind::Mutating => (&self.mutating, self.limits.max_mutating),
        };
        counter.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (max == 0 || n < max).then_some(n + 1)).ok()?;
        Some(Seat(counter))
    }

    /// Requests of `kind` in flight now.
    pub fn in_flight(&self, kind: RequestKind) -> usize {
        match kind {
            RequestKind::ReadOnly => self.read_only.load(Ordering::Acquire),
            RequestKind::Mutating => self.mutating.load(Ordering::Acquire),
        }
    }
}

/// What the filters know of a request before it is served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Classified {
    /// The metric labels (for non-resource requests `subresource` is filled
    /// in with the path only once the response is known not to be a 404).
    pub labels: RequestLabels,
    /// Which limit the request counts against.
    pub kind: RequestKind,
    /// Long-running requests are exempt from the limits.
    pub long_running: bool,
    /// Whether the path names a resource request.
    pub resource_request: bool,
}

/// Subresources whose requests are long-running (upstream's
/// `BasicLongRunningRequestCheck`).
const LONG_RUNNING_SUBRESOURCES: [&str; 5] = ["attach", "exec", "log", "portforward", "proxy"];
/// Subresources served with the `connect` verb.
const CONNECT_SUBRESOURCES: [&str; 4] = ["attach", "exec", "portforward", "proxy"];

/// Classifies a request from its method, path, query and `Content-Type`.
pub fn classify(method: &Method, path: &str, query: Option<&str>, content_type: Option<&str>) -> Classified {
    let kind = RequestKind::of(method);
    let q = Query::parse(query);
    let Some(info) = request::parse(method, path, &q) else {
        let labels = RequestLabels {
            verb: method.as_str().to_ascii_uppercase(),
            component: APISERVER_COMPONENT.into(),
            ..Default::default()
        };
        return Classified { labels, kind, long_running: false, resource_request: false };
    };
    let connect = CONNECT_SUBRESOURCES.contains(&info.subresource.as_str());
    let verb = match info.verb {
        _ if connect => "CONNECT".to_string(),
        Some(Verb::Get) => "GET".into(),
        Some(Verb::List) => "LIST".into(),
        Some(Verb::Watch) => "WATCH".into(),
        Some(Verb::Create) => "POST".into(),
        Some(Verb::Update) => "PUT".into(),
        Some(Verb::Patch) if content_type.is_some_and(|c| c.starts_with("application/apply-patch")) => "APPLY".into(),
        Some(Verb::Patch) => "PATCH".into(),
        Some(Verb::Delete) => "DELETE".into(),
        Some(Verb::DeleteCollection) => "DELETECOLLECTION".into(),
        None => method.as_str().to_ascii_uppercase(),
    };
    let scope = if !info.name.is_empty() || info.verb == Some(Verb::Create) {
        "resource"
    } else if !info.namespace.is_empty() {
        "namespace"
    } else {
        "cluster"
    };
    let mut dry_run = q.all("dryRun");
    dry_run.sort_unstable();
    dry_run.dedup();
    let long_running = info.verb == Some(Verb::Watch) || LONG_RUNNING_SUBRESOURCES.contains(&info.subresource.as_str());
    let labels = RequestLabels {
        verb,
        dry_run: dry_run.join(","),
        group: info.group,
        version: info.version,
        resource: info.resource,
        subresource: info.subresource,
        scope: scope.into(),
        component: APISERVER_COMPONENT.into(),
    };
    Classified { labels, kind, long_running, resource_request: true }
}

/// The filters' shared state: the limiter and the metrics.
#[derive(Debug)]
pub struct Filters {
    /// The in-flight limiter.
    pub limiter: InflightLimiter,
    /// The request metrics.
    pub metrics: Metrics,
    /// The resources served, to keep unknown names out of metric labels.
    registry: Registry,
}

impl Filters {
    /// Filters with `limits` and empty metrics, labelling requests for the
    /// resources of `registry`.
    pub fn new(limits: InflightLimits, registry: Registry) -> Filters {
        Filters { limiter: InflightLimiter::new(limits), metrics: Metrics::new(), registry }
    }

    /// [`classify`], with the resource labels of paths that name no served
    /// resource (or subresource) left empty: label values stay bounded
    /// whatever paths clients send.
    pub fn classify(&self, method: &Method, path: &str, query: Option<&str>, content_type: Option<&str>) -> Classified {
        let mut class = classify(method, path, query, content_type);
        if class.resource_request {
            let l = &mut class.labels;
            match self.registry.lookup(&l.group, &l.version, &l.resource) {
                None => {
                    (l.group, l.version, l.resource, l.subresource, l.scope) = Default::default();
                }
                Some(info) if !l.subresource.is_empty() && info.subresource(&l.subresource).is_none() => {
                    l.subresource.clear();
                }
                Some(_) => {}
            }
        }
        class
    }

    /// The in-flight gauges, with `storage_objects` given by the caller.
    pub fn gauges(&self, storage_objects: Vec<(String, usize)>) -> Gauges {
        Gauges {
            inflight_read_only: self.limiter.in_flight(RequestKind::ReadOnly),
            inflight_mutating: self.limiter.in_flight(RequestKind::Mutating),
            storage_objects,
        }
    }
}

/// The 429 answer beyond the limits: a `TooManyRequests` Status with
/// `Retry-After: 1`.
pub fn too_many_requests() -> Response {
    StatusError(ApiError::TooManyRequests { message: TOO_MANY_REQUESTS.into(), retry_after_seconds: 1 }).into_response()
}

/// The middleware: limits, then serves and records the request.
pub async fn filter(State(filters): State<Arc<Filters>>, req: Request, next: Next) -> Response {
    let start = Instant::now();
    let content_type = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
    let mut class = filters.classify(req.method(), req.uri().path(), req.uri().query(), content_type);
    let path = req.uri().path().to_string();
    // Long-running requests take no seat, and neither do members of
    // `system:masters`, as upstream's max-in-flight filter exempts them.
    let privileged = req
        .extensions()
        .get::<crate::authn::UserInfo>()
        .is_some_and(|u| u.groups.iter().any(|g| g == crate::authn::MASTERS_GROUP));
    let _seat = if class.long_running || privileged {
        None
    } else {
        match filters.limiter.try_acquire(class.kind) {
            Some(seat) => Some(seat),
            None => {
                filters.metrics.count(&class.labels, StatusCode::TOO_MANY_REQUESTS.as_u16());
                return too_many_requests();
            }
        }
    };
    let resp = next.run(req).await;
    // Non-resource requests are labelled with their path, as upstream, but
    // only when routed and allowed: any path would make unbounded label values.
    if !class.resource_request && !matches!(resp.status().as_u16(), 401 | 403 | 404) {
        class.labels.subresource = path;
    }
    let record = Record { filters: filters.clone(), labels: class.labels, code: resp.status().as_u16(), start };
    if !class.long_running {
        return resp; // `record` records as it drops here.
    }
    // A watch or log stream is recorded when its body ends (or the client
    // goes away), as upstream measures it.
    let (parts, body) = resp.into_parts();
    let body = body.into_data_stream().map(move |chunk| {
        let _record = &record;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(body))
}

/// Records a request in the metrics when dropped.
struct Record {
    filters: Arc<Filters>,
    labels: RequestLabels,
    code: u16,
    start: Instant,
}

impl Drop for Record {
    fn drop(&mut self) {
        self.filters.metrics.observe(&self.labels, self.code, self.start.elapsed());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_plus_one_request_is_refused_until_a_seat_frees() {
        let limiter = InflightLimiter::new(InflightLimits { max_read_only: 3, max_mutating: 2 });
        let a = limiter.try_acquire(RequestKind::Mutating).expect("first seat");
        let _b = limiter.try_acquire(RequestKind::Mutating).expect("second seat");
        assert!(limiter.try_acquire(RequestKind::Mutating).is_none(), "third mutating request is over the limit");
        assert_eq!(limiter.in_flight(RequestKind::Mutating), 2);
        // The read-only limit is separate.
        assert!(limiter.try_acquire(RequestKind::ReadOnly).is_some());
        drop(a);
        assert_eq!(limiter.in_flight(RequestKind::Mutating), 1);
        assert!(limiter.try_acquire(RequestKind::Mutating).is_some());
    }

    #[test]
    fn zero_means_unlimited() {
        let limiter = InflightLimiter::new(InflightLimits { max_read_only: 0, max_mutating: 0 });
        let seats: Vec<_> = (0..1000).filter_map(|_| limiter.try_acquire(RequestKind::Mutating)).collect();
        assert_eq!(seats.len(), 1000);
    }

    #[test]
    fn requests_get_upstream_verbs_scopes_and_long_running_flags() {
        let c = |m: Method, p: &str, q: Option<&str>, ct: Option<&str>| classify(&m, p, q, ct);
        let list = c(Method::GET, "/api/v1/namespaces/default/pods", None, None);
        assert_eq!((list.labels.verb.as_str(), list.labels.scope.as_str()), ("LIST", "namespace"));
        assert_eq!((list.kind, list.long_running), (RequestKind::ReadOnly, false));
        let all = c(Method::GET, "/apis/apps/v1/deployments", None, None);
        assert_eq!((all.labels.group.as_str(), all.labels.scope.as_str()), ("apps", "cluster"));
        let get = c(Method::GET, "/api/v1/namespaces/default/pods/p", None, None);
        assert_eq!((get.labels.verb.as_str(), get.labels.scope.as_str()), ("GET", "resource"));
        let create = c(Method::POST, "/api/v1/namespaces/default/pods", Some("dryRun=All"), None);
        assert_eq!((create.labels.verb.as_str(), create.labels.scope.as_str()), ("POST", "resource"));
        assert_eq!((create.labels.dry_run.as_str(), create.kind), ("All", RequestKind::Mutating));
        let apply = c(Method::PATCH, "/api/v1/namespaces/default/pods/p", None, Some("application/apply-patch+yaml"));
        assert_eq!(apply.labels.verb, "APPLY");
        let patch = c(Method::PATCH, "/api/v1/namespaces/default/pods/p", None, Some("application/merge-patch+json"));
        assert_eq!(patch.labels.verb, "PATCH");
        let watch = c(Method::GET, "/api/v1/pods", Some("watch=true"), None);
        assert_eq!((watch.labels.verb.as_str(), watch.long_running), ("WATCH", true));
        let exec = c(Method::POST, "/api/v1/namespaces/default/pods/p/exec", Some("command=ls"), None);
        assert_eq!(
            (exec.labels.verb.as_str(), exec.labels.subresource.as_str(), exec.long_running),
            ("CONNECT", "exec", true)
        );
        let log = c(Method::GET, "/api/v1/namespaces/default/pods/p/log", None, None);
        assert!(log.long_running);
        let dc = c(Method::DELETE, "/api/v1/namespaces/default/pods", None, None);
        assert_eq!(dc.labels.verb, "DELETECOLLECTION");
        let health = c(Method::GET, "/readyz", None, None);
        assert_eq!(
            (health.resource_request, health.labels.verb.as_str(), health.labels.scope.as_str()),
            (false, "GET", "")
        );
    }

    #[test]
    fn unknown_resources_leave_the_resource_labels_empty() {
        let filters = Filters::new(InflightLimits::default(), Registry::builtin());
        let unknown = filters.classify(&Method::GET, "/apis/example.com/v1/widgets", None, None).labels;
        assert_eq!((unknown.verb.as_str(), unknown.group.as_str(), unknown.resource.as_str()), ("LIST", "", ""));
        let sub = filters.classify(&Method::GET, "/api/v1/namespaces/default/pods/p/bogus", None, None).labels;
        assert_eq!((sub.resource.as_str(), sub.subresource.as_str()), ("pods", ""));
        let status =
            filters.classify(&Method::PUT, "/apis/apps/v1/namespaces/default/deployments/d/status", None, None);
        assert_eq!((status.labels.group.as_str(), status.labels.subresource.as_str()), ("apps", "status"));
    }

    #[tokio::test]
    async fn the_middleware_answers_429_beyond_the_limit_and_exempts_watches() {
        use tower_service::Service;

        // One mutating seat; the handler holds it until released.
        let limits = InflightLimits { max_read_only: 1, max_mutating: 1 };
        let filters = Arc::new(Filters::new(limits, Registry::builtin()));
        let release = Arc::new(tokio::sync::Semaphore::new(0));
        let entered = Arc::new(tokio::sync::Notify::new());
        let (r, e) = (release.clone(), entered.clone());
        let app = axum::Router::new()
            .fallback(move || {
                let (r, e) = (r.clone(), e.clone());
                async move {
                    e.notify_one();
                    let _ = r.acquire().await;
                    "done"
                }
            })
            .layer(axum::middleware::from_fn_with_state(filters.clone(), filter));
        let req = |m: Method, uri: &str| Request::builder().method(m).uri(uri).body(Body::empty()).unwrap();

        let mut first = app.clone();
        let held =
            tokio::spawn(async move { first.call(req(Method::POST, "/api/v1/namespaces/default/configmaps")).await });
        entered.notified().await;
        assert_eq!(filters.limiter.in_flight(RequestKind::Mutating), 1);

        let resp = app.clone().call(req(Method::POST, "/api/v1/namespaces/default/configmaps")).await.unwrap();
        assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(resp.headers()[header::RETRY_AFTER], "1");
        let body = axum::body::to_bytes(resp.into_body(), 1 << 16).await.unwrap();
        let status: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(status["reason"], "TooManyRequests");
        assert_eq!(status["message"], TOO_MANY_REQUESTS);
        assert_eq!(status["code"], 429);

        // A watch takes no seat: it reaches the handler although a read-only
        // request holds the only read-only seat.
        let mut reader = app.clone();
        let read = tokio::spawn(async move { reader.call(req(Method::GET, "/api/v1/configmaps")).await });
        entered.notified().await;
        let mut watcher = app.clone();
        let watch = tokio::spawn(async move { watcher.call(req(Method::GET, "/api/v1/configmaps?watch=true")).await });
        entered.notified().await;
        assert_eq!(filters.limiter.in_flight(RequestKind::ReadOnly), 1);
        release.add_permits(1);
        for task in [held, read, watch] {
            assert_eq!(task.await.unwrap().unwrap().status(), StatusCode::OK);
        }
        assert_eq!(filters.limiter.in_flight(RequestKind::Mutating), 0);

        let watch = filters.classify(&Method::GET, "/api/v1/configmaps", Some("watch=true"), None).labels;
        assert_eq!(filters.metrics.request_count(&watch, 200), 1, "counted once its body is dropped");
        let create = filters.classify(&Method::POST, "/api/v1/namespaces/default/configmaps", None, None).labels;
        assert_eq!(filters.metrics.request_count(&create, 429), 1);
        assert_eq!(filters.metrics.request_count(&create, 200), 1);
    }

    #[tokio::test]
    async fn system_masters_members_are_not_limited() {
        use crate::authn::{UserInfo, AUTHENTICATED_GROUP, MASTERS_GROUP};
        use tower_service::Service;

        // The only mutating seat is taken by a request that never returns.
        let limits = InflightLimits { max_read_only: 1, max_mutating: 1 };
        let filters = Arc::new(Filters::new(limits, Registry::builtin()));
        let _held = filters.limiter.try_acquire(RequestKind::Mutating).unwrap();
        let app = axum::Router::new()
            .fallback(|| async { "done" })
            .layer(axum::middleware::from_fn_with_state(filters.clone(), filter));
        let create = |user: Option<UserInfo>| {
            let mut req = Request::builder()
                .method(Method::POST)
                .uri("/api/v1/namespaces/default/configmaps")
                .body(Body::empty())
                .unwrap();
            if let Some(u) = user {
                req.extensions_mut().insert(u);
            }
            req
        };
        let user = |groups: &[&str]| UserInfo {
            name: "someone".into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..UserInfo::default()
        };

        let admin = app.clone().call(create(Some(user(&[MASTERS_GROUP, AUTHENTICATED_GROUP])))).await.unwrap();
        assert_eq!(admin.status(), StatusCode::OK);
        let other = app.clone().call(create(Some(user(&[AUTHENTICATED_GROUP])))).await.unwrap();
        assert_eq!(other.status(), StatusCode::TOO_MANY_REQUESTS);
        let anonymous = app.clone().call(create(None)).await.unwrap();
        assert_eq!(anonymous.status(), StatusCode::TOO_MANY_REQUESTS);
    }
}
