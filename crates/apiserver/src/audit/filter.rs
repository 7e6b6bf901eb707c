//! The audit middleware (upstream's `WithAuditInit` + `WithAudit`).
//!
//! Order of events for one audited request, as upstream writes them:
//! `RequestReceived` before the handler runs; for long-running requests
//! (watches, exec, attach, port-forward, proxy, logs) `ResponseStarted`
//! once the response headers are known and `ResponseComplete` when the
//! body ends (or the client goes away); for the others `ResponseComplete`
//! once the response is ready; `Panic` if the handler panics. The
//! `responseStatus` is the code, or the whole `Status` when the handler
//! answered with one (errors); `requestObject` is logged from level
//! `Request`, `responseObject` at `RequestResponse` (JSON, YAML and
//! protobuf request bodies; JSON response bodies).

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::Response;
use bytes::Bytes;
use futures::{FutureExt, StreamExt};
use serde_json::Value;

use super::event::{strip_managed_fields, Event, EventUser, ObjectRef, ResponseStatus};
use super::policy::{Attributes, Level, RequestAuditConfig, Stage};
use super::{AuditContext, Auditor, AUDIT_ID_HEADER};
use crate::authn::UserInfo;
use crate::rest::query::Query;
use crate::rest::request::{self, RequestInfo, Verb};

/// Bodies larger than this are passed on without being logged (the REST
/// layer refuses them with 413 anyway).
const MAX_LOGGED_REQUEST: usize = crate::rest::body::MAX_REQUEST_BODY_BYTES;
/// Response bodies logged at `RequestResponse` at most this large.
const MAX_LOGGED_RESPONSE: usize = 64 * 1024 * 1024;
/// Upstream's `maxUserAgentLength`.
const MAX_USER_AGENT: usize = 1024;

/// When the request arrived (set by [`init`]; the audit layer's own start
/// otherwise).
#[derive(Clone, Copy)]
struct Received(jiff::Timestamp);

/// The outermost middleware (upstream's `WithAuditInit` with
/// `WithFailedAuthenticationAudit`): every request gets an audit ID — the
/// client's `Audit-ID` header or a new UUID — as the [`AuditContext`]
/// extension and the `Audit-Id` response header, also when auditing is
/// off (`auditor` `None`). A request that authentication refused (401,
/// never reaching [`audit`]) is audited here with one `ResponseStarted`
/// event: no user, the request's verb and object, and a response status
/// naming the credentials tried (`Authentication failed, attempted:
/// bearer, x509`) with code 401.
pub async fn init(State(auditor): State<Option<Arc<Auditor>>>, mut req: Request, next: Next) -> Response {
    let received = jiff::Timestamp::now();
    let ctx = attach_context(&mut req);
    req.extensions_mut().insert(Received(received));
    let Some(auditor) = auditor else { return with_audit_id(next.run(req).await, &ctx) };
    // What the event would need, kept cheaply: it is built only on a 401.
    let head = request_head(&req);
    let resp = next.run(req).await;
    if resp.status() == axum::http::StatusCode::UNAUTHORIZED && !ctx.entered() {
        if let Some(failed) = FailedAuthentication::describe(&auditor, &head, &ctx, received) {
            failed.write(&auditor);
        }
    }
    with_audit_id(resp, &ctx)
}

/// The request without its body: method, URI, headers, and the peer's
/// address and certificates.
fn request_head(req: &Request) -> Request {
    let mut head = Request::new(Body::empty());
    *head.method_mut() = req.method().clone();
    *head.uri_mut() = req.uri().clone();
    *head.headers_mut() = req.headers().clone();
    if let Some(peer) = req.extensions().get::<ConnectInfo<std::net::SocketAddr>>() {
        head.extensions_mut().insert(*peer);
    }
    if let Some(certs) = req.extensions().get::<crate::tls::PeerCertificates>() {
        head.extensions_mut().insert(certs.clone());
    }
    head
}

/// The request's [`AuditContext`]: the one [`init`] attached, else a new
/// one (the audit layer used alone).
fn attach_context(req: &mut Request) -> AuditContext {
    if let Some(ctx) = req.extensions().get::<AuditContext>() {
        return ctx.clone();
    }
    let audit_id = req
        .headers()
        .get("audit-id")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let ctx = AuditContext { inner: Default::default(), audit_id: audit_id.as_str().into() };
    req.extensions_mut().insert(ctx.clone());
    ctx
}

/// Sets the `Audit-Id` response header (once).
fn with_audit_id(mut resp: Response, ctx: &AuditContext) -> Response {
    if !resp.headers().contains_key(AUDIT_ID_HEADER) {
        if let Ok(v) = HeaderValue::from_str(&ctx.audit_id) {
            resp.headers_mut().insert(AUDIT_ID_HEADER, v);
        }
    }
    resp
}

/// What [`init`] needs to audit a failed authentication, taken before the
/// request is handed on.
struct FailedAuthentication {
    event: Event,
    rac: RequestAuditConfig,
}

impl FailedAuthentication {
    /// The event to write should authentication fail (`None`: the policy
    /// does not audit the request; upstream evaluates it without a user).
    fn describe(auditor: &Auditor, req: &Request, ctx: &AuditContext, received: jiff::Timestamp) -> Option<Self> {
        let described = Described::new(req);
        let rac = described.evaluate(auditor, req, None);
        if rac.level == Level::None {
            return None;
        }
        let mut event = described.event(req, rac.level, ctx, received, EventUser::default());
        event.response_status =
            Some(ResponseStatus { message: attempted_methods(req), code: 401, ..Default::default() });
        Some(FailedAuthentication { event, rac })
    }

    fn write(mut self, auditor: &Auditor) {
        process(auditor, &self.rac, &mut self.event, Stage::ResponseStarted, None);
    }
}

/// Upstream's `getAuthMethods`: which credentials the request carried.
fn attempted_methods(req: &Request) -> String {
    let mut methods = Vec::new();
    let auth = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).unwrap_or("").trim();
    let (scheme, rest) = auth.split_once(' ').unwrap_or((auth, ""));
    if scheme.eq_ignore_ascii_case("basic") && basic_auth(rest.trim()) {
        methods.push("basic");
    }
    if scheme.eq_ignore_ascii_case("bearer") && auth.split(' ').count() > 1 {
        methods.push("bearer");
    }
    let query = Query::parse(req.uri().query());
    if query.get("access_token").is_some_and(|t| !t.trim().is_empty()) {
        methods.push("access_token");
    }
    if req.extensions().get::<crate::tls::PeerCertificates>().is_some() {
        methods.push("x509");
    }
    if methods.is_empty() {
        "Authentication failed, no credentials provided".to_string()
    } else {
        format!("Authentication failed, attempted: {}", methods.join(", "))
    }
}

/// Whether `credentials` is what Go's `Request.BasicAuth` accepts:
/// base64 of `user:password`.
fn basic_auth(credentials: &str) -> bool {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(credentials)
        .is_ok_and(|decoded| String::from_utf8_lossy(&decoded).contains(':'))
}

/// The request as the policy and the events see it: upstream's
/// `RequestInfo` and verb.
struct Described {
    info: Option<RequestInfo>,
    verb: String,
}

impl Described {
    fn new(req: &Request) -> Described {
        let query = Query::parse(req.uri().query());
        let mut info = request::parse(req.method(), req.uri().path(), &query);
        if let Some(i) = info.as_mut() {
            // Upstream's RequestInfo: `namespaces/<name>` is in namespace
            // <name>; a list or watch selecting one metadata.name names it.
            if i.group.is_empty() && i.resource == "namespaces" && !i.name.is_empty() {
                i.namespace = i.name.clone();
            }
            if matches!(i.verb, Some(Verb::List | Verb::Watch)) && i.name.is_empty() {
                if let Some(name) = exact_name(query.get("fieldSelector").unwrap_or("")) {
                    i.name = name;
                }
            }
        }
        let verb = match info.as_ref().and_then(|i| i.verb) {
            Some(v) => v.as_str().to_string(),
            None => req.method().as_str().to_ascii_lowercase(),
        };
        Described { info, verb }
    }

    /// The policy's answer for `user` (`None`: not authenticated).
    fn evaluate(&self, auditor: &Auditor, req: &Request, user: Option<&UserInfo>) -> RequestAuditConfig {
        let empty = String::new();
        let info = self.info.as_ref();
        let attrs = Attributes {
            user: user.map_or("", |u| u.name.as_str()),
            groups: user.map_or(&[][..], |u| u.groups.as_slice()),
            verb: &self.verb,
            resource_request: info.is_some(),
            api_group: info.map(|i| &i.group).unwrap_or(&empty),
            resource: info.map(|i| &i.resource).unwrap_or(&empty),
            subresource: info.map(|i| &i.subresource).unwrap_or(&empty),
            namespace: info.map(|i| &i.namespace).unwrap_or(&empty),
            name: info.map(|i| &i.name).unwrap_or(&empty),
            path: req.uri().path(),
        };
        auditor.policy.evaluate(&attrs)
    }

    /// A `RequestReceived` event of the request.
    fn event(
        &self,
        req: &Request,
        level: Level,
        ctx: &AuditContext,
        received: jiff::Timestamp,
        user: EventUser,
    ) -> Event {
        let mut ev = Event::new(level, ctx.audit_id.to_string(), received);
        ev.request_uri = req.uri().path_and_query().map(|p| p.as_str().to_string()).unwrap_or_default();
        ev.verb = self.verb.clone();
        ev.user = user;
        ev.source_ips = source_ips(req);
        ev.user_agent = user_agent(req);
        ev.object_ref = self.info.as_ref().map(|i| ObjectRef {
            resource: i.resource.clone(),
            namespace: i.namespace.clone(),
            name: i.name.clone(),
            api_group: i.group.clone(),
            api_version: i.version.clone(),
            subresource: i.subresource.clone(),
            ..Default::default()
        });
        ev
    }
}

/// The middleware after authentication (upstream's `WithAudit`); see the
/// module docs. `auditor` is `None` when auditing is off (requests still
/// get an audit ID and the `Audit-Id` header).
pub async fn audit(State(auditor): State<Option<Arc<Auditor>>>, mut req: Request, next: Next) -> Response {
    let received = req.extensions().get::<Received>().map_or_else(jiff::Timestamp::now, |r| r.0);
    let ctx = attach_context(&mut req);
    ctx.enter();
    let with_header = |resp: Response| with_audit_id(resp, &ctx);

    let Some(auditor) = auditor else { return with_header(next.run(req).await) };
    // With impersonation the request carries the acting user and, beside
    // it, the one who authenticated: upstream audits (and evaluates the
    // policy for) the latter, with the former as `impersonatedUser`.
    // (In the server, impersonation runs after this layer and records the
    // acting user on the context; the extension covers callers that
    // impersonated first.)
    let acting = req.extensions().get::<UserInfo>().cloned().unwrap_or_else(UserInfo::anonymous);
    let (user, impersonated) = match req.extensions().get::<crate::authn::impersonation::Requestor>() {
        Some(requestor) => (requestor.0.clone(), Some(acting)),
        None => (acting, None),
    };
    let described = Described::new(&req);
    let rac = described.evaluate(&auditor, &req, Some(&user));
    if rac.level == Level::None {
        return with_header(next.run(req).await);
    }
    let mut ev = described.event(&req, rac.level, &ctx, received, EventUser::from(&user));
    let info = described.info;
    let long_running = crate::filters::classify(req.method(), req.uri().path(), req.uri().query(), None).long_running;

    // The request body: for the log from level Request, and for the name
    // of created objects from Metadata (upstream's `LogRequestObject`).
    let writes_object = matches!(info.as_ref().and_then(|i| i.verb), Some(Verb::Create | Verb::Update));
    let has_body = matches!(*req.method(), Method::POST | Method::PUT | Method::PATCH | Method::DELETE);
    if has_body && !long_running && (rac.level >= Level::Request || writes_object) {
        let content_type =
            req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        let (parts, body) = req.into_parts();
        let (body, bytes) = peek_body(body).await;
        req = Request::from_parts(parts, body);
        if let Some(mut obj) = bytes.and_then(|b| parse_body(&b, &content_type)) {
            if writes_object {
                fill_object_ref(ev.object_ref.get_or_insert_with(Default::default), &obj);
            }
            if rac.level >= Level::Request {
                let patch = info.as_ref().and_then(|i| i.verb) == Some(Verb::Patch);
                if rac.omit_managed_fields && !patch {
                    strip_managed_fields(&mut obj);
                }
                ev.request_object = Some(obj);
            }
        }
    }

    process(&auditor, &rac, &mut ev, Stage::RequestReceived, Some(received));

    let result = AssertUnwindSafe(super::with_current(ctx.clone(), next.run(req))).catch_unwind().await;
    let (annotations, set_impersonated) = ctx.take();
    ev.annotations.extend(annotations);
    ev.impersonated_user = set_impersonated.or(impersonated).as_ref().map(EventUser::from);
    let resp = match result {
        Ok(resp) => resp,
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            ev.response_status = Some(ResponseStatus {
                status: "Failure".into(),
                reason: "InternalError".into(),
                message: format!("APIServer panic'd: {message}"),
                code: 500,
                ..Default::default()
            });
            process(&auditor, &rac, &mut ev, Stage::Panic, None);
            std::panic::resume_unwind(panic);
        }
    };
    let code = resp.status().as_u16();

    if long_running {
        ev.response_status = Some(ResponseStatus::code(code));
        process(&auditor, &rac, &mut ev, Stage::ResponseStarted, None);
        let (parts, body) = resp.into_parts();
        let done = CompleteOnDrop { auditor: auditor.clone(), rac, ev: Some(ev) };
        let body = body.into_data_stream().map(move |chunk| {
            let _done = &done;
            chunk
        });
        return with_header(Response::from_parts(parts, Body::from_stream(body)));
    }

    let json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("application/json"));
    let resp = if json && (code >= 400 || rac.level == Level::RequestResponse) {
        let (parts, body) = resp.into_parts();
        match axum::body::to_bytes(body, MAX_LOGGED_RESPONSE).await {
            Ok(bytes) => {
                log_response(&mut ev, &rac, &bytes, code);
                Response::from_parts(parts, Body::from(bytes))
            }
            Err(e) => {
                // The body could not be read (too large, broken stream):
                // the client gets the error status without it.
                tracing::warn!(component = crate::COMPONENT, error = %e, "cannot read a response body for the audit log");
                ev.response_status = Some(ResponseStatus::code(code));
                Response::from_parts(parts, Body::empty())
            }
        }
    } else {
        ev.response_status = Some(ResponseStatus::code(code));
        resp
    };
    process(&auditor, &rac, &mut ev, Stage::ResponseComplete, None);
    with_header(resp)
}

/// Records the response body: the Status fields of an error, and the
/// object at `RequestResponse`.
fn log_response(ev: &mut Event, rac: &RequestAuditConfig, bytes: &[u8], code: u16) {
    let Ok(mut obj) = serde_json::from_slice::<Value>(bytes) else {
        ev.response_status = Some(ResponseStatus::code(code));
        return;
    };
    ev.response_status = Some(if obj.get("kind").and_then(Value::as_str) == Some("Status") {
        ResponseStatus::from_status(&obj, code)
    } else {
        ResponseStatus::code(code)
    });
    if rac.level == Level::RequestResponse {
        if rac.omit_managed_fields {
            strip_managed_fields(&mut obj);
        }
        ev.response_object = Some(obj);
    }
}

/// Writes `ev` at `stage` unless the policy omits it; the stage timestamp
/// is `at` (the receive time for `RequestReceived`) or now.
fn process(auditor: &Auditor, rac: &RequestAuditConfig, ev: &mut Event, stage: Stage, at: Option<jiff::Timestamp>) {
    if rac.omit_stages.contains(&stage) {
        return;
    }
    ev.stage = stage.as_str();
    ev.stage_timestamp = super::event::micro_time(at.unwrap_or_else(jiff::Timestamp::now));
    auditor.write(ev);
}

/// Writes `ResponseComplete` of a long-running request when its body ends
/// or is dropped.
struct CompleteOnDrop {
    auditor: Arc<Auditor>,
    rac: RequestAuditConfig,
    ev: Option<Event>,
}

impl Drop for CompleteOnDrop {
    fn drop(&mut self) {
        if let Some(mut ev) = self.ev.take() {
            process(&self.auditor, &self.rac, &mut ev, Stage::ResponseComplete, None);
        }
    }
}

/// Reads the body up to [`MAX_LOGGED_REQUEST`] bytes; the body handed on
/// is the same bytes (and, past the limit, the rest of the stream).
async fn peek_body(body: Body) -> (Body, Option<Bytes>) {
    let mut stream = body.into_data_stream();
    let mut chunks: Vec<Bytes> = Vec::new();
    let mut total = 0usize;
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(c) => {
                total += c.len();
                chunks.push(c);
                if total > MAX_LOGGED_REQUEST {
                    let head = futures::stream::iter(chunks.into_iter().map(Ok::<_, axum::Error>));
                    return (Body::from_stream(head.chain(stream)), None);
                }
            }
            Err(e) => {
                let head = futures::stream::iter(chunks.into_iter().map(Ok::<_, axum::Error>));
                let tail = futures::stream::once(async move { Err::<Bytes, _>(e) });
                return (Body::from_stream(head.chain(tail)), None);
            }
        }
    }
    let bytes: Bytes = if chunks.len() == 1 { chunks.remove(0) } else { chunks.concat().into() };
    (Body::from(bytes.clone()), Some(bytes))
}

/// A JSON, YAML (including the patch types) or protobuf body as a JSON
/// value (upstream logs the decoded object, whatever its wire format).
fn parse_body(bytes: &[u8], content_type: &str) -> Option<Value> {
    if bytes.is_empty() {
        return None;
    }
    if content_type.contains("protobuf") {
        let envelope = rkube_apimachinery::protobuf::envelope(bytes).ok()?;
        return rkube_apimachinery::protobuf::decode_object(&envelope.api_version, &envelope.kind, envelope.raw)?.ok();
    }
    if content_type.contains("yaml") {
        return serde_yaml::from_slice(bytes).ok();
    }
    serde_json::from_slice(bytes).ok()
}

/// Fills what the path left empty from the object's metadata.
fn fill_object_ref(r: &mut ObjectRef, obj: &Value) {
    let Some(m) = obj.get("metadata") else { return };
    let s = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    for (field, key) in [
        (&mut r.namespace, "namespace"),
        (&mut r.name, "name"),
        (&mut r.uid, "uid"),
        (&mut r.resource_version, "resourceVersion"),
    ] {
        if field.is_empty() {
            *field = s(key);
        }
    }
}

/// The name a field selector requires exactly (`metadata.name=x` or
/// `metadata.name==x` among its terms).
fn exact_name(selector: &str) -> Option<String> {
    selector.split(',').find_map(|term| {
        let value = term.trim().strip_prefix("metadata.name")?;
        let value = value.strip_prefix("==").or_else(|| value.strip_prefix('='))?;
        (!value.is_empty()).then(|| value.to_string())
    })
}

/// Upstream's `utilnet.SourceIPs`: `X-Forwarded-For` entries, then
/// `X-Real-Ip`, then the connection's peer, without duplicates.
fn source_ips(req: &Request) -> Vec<String> {
    let mut ips: Vec<String> = Vec::new();
    let mut push = |ip: String| {
        if !ips.contains(&ip) {
            ips.push(ip);
        }
    };
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    for part in header("x-forwarded-for").split(',') {
        if let Ok(ip) = part.trim().parse::<std::net::IpAddr>() {
            push(ip.to_string());
        }
    }
    if let Ok(ip) = header("x-real-ip").trim().parse::<std::net::IpAddr>() {
        push(ip.to_string());
    }
    if let Some(ConnectInfo(addr)) = req.extensions().get::<ConnectInfo<std::net::SocketAddr>>() {
        push(addr.ip().to_string());
    }
    ips
}

/// The `User-Agent`, cut at 1024 bytes with `...TRUNCATED` (upstream's
/// `maybeTruncateUserAgent`).
fn user_agent(req: &Request) -> String {
    let ua = req.headers().get(header::USER_AGENT).map(|v| String::from_utf8_lossy(v.as_bytes()).to_string());
    let ua = ua.unwrap_or_default();
    if ua.len() > MAX_USER_AGENT {
        let mut cut = MAX_USER_AGENT;
        while !ua.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}...TRUNCATED", &ua[..cut])
    } else {
        ua
    }
}

#[cfg(test)]
#[path = "filter_tests.rs"]
mod tests;
