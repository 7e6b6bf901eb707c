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
use crate::rest::request::{self, Verb};

/// Bodies larger than this are passed on without being logged (the REST
/// layer refuses them with 413 anyway).
const MAX_LOGGED_REQUEST: usize = crate::rest::body::MAX_REQUEST_BODY_BYTES;
/// Response bodies logged at `RequestResponse` at most this large.
const MAX_LOGGED_RESPONSE: usize = 64 * 1024 * 1024;
/// Upstream's `maxUserAgentLength`.
const MAX_USER_AGENT: usize = 1024;

/// The middleware; `auditor` is `None` when auditing is off (requests
/// still get an audit ID and the `Audit-Id` header, as upstream's
/// `WithAuditInit`).
pub async fn audit(State(auditor): State<Option<Arc<Auditor>>>, mut req: Request, next: Next) -> Response {
    let received = jiff::Timestamp::now();
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
    let header_value = HeaderValue::from_str(&audit_id).ok();
    let with_header = |mut resp: Response| {
        if let Some(v) = header_value.clone() {
            resp.headers_mut().insert(AUDIT_ID_HEADER, v);
        }
        resp
    };

    let Some(auditor) = auditor else { return with_header(next.run(req).await) };
    // With impersonation the request carries the acting user and, beside
    // it, the one who authenticated: upstream audits (and evaluates the
    // policy for) the latter, with the former as `impersonatedUser`.
    let acting = req.extensions().get::<UserInfo>().cloned().unwrap_or_else(UserInfo::anonymous);
    let (user, impersonated) = match req.extensions().get::<crate::authn::impersonation::Requestor>() {
        Some(requestor) => (requestor.0.clone(), Some(acting)),
        None => (acting, None),
    };
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
    let empty = String::new();
    let attrs = Attributes {
        user: &user.name,
        groups: &user.groups,
        verb: &verb,
        resource_request: info.is_some(),
        api_group: info.as_ref().map(|i| &i.group).unwrap_or(&empty),
        resource: info.as_ref().map(|i| &i.resource).unwrap_or(&empty),
        subresource: info.as_ref().map(|i| &i.subresource).unwrap_or(&empty),
        namespace: info.as_ref().map(|i| &i.namespace).unwrap_or(&empty),
        name: info.as_ref().map(|i| &i.name).unwrap_or(&empty),
        path: req.uri().path(),
    };
    let rac = auditor.policy.evaluate(&attrs);
    if rac.level == Level::None {
        return with_header(next.run(req).await);
    }

    let mut ev = Event::new(rac.level, audit_id.clone(), received);
    ev.request_uri = req.uri().path_and_query().map(|p| p.as_str().to_string()).unwrap_or_default();
    ev.verb = verb.clone();
    ev.user = EventUser::from(&user);
    ev.source_ips = source_ips(&req);
    ev.user_agent = user_agent(&req);
    ev.object_ref = info.as_ref().map(|i| ObjectRef {
        resource: i.resource.clone(),
        namespace: i.namespace.clone(),
        name: i.name.clone(),
        api_group: i.group.clone(),
        api_version: i.version.clone(),
        subresource: i.subresource.clone(),
        ..Default::default()
    });
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
