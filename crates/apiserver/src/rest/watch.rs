//! Watch: a stream of newline-delimited JSON events
//! (`{"type":"ADDED","object":{...}}`), one chunk per event so each
//! reaches the client at once (HTTP/1.1 chunked or HTTP/2 frames). With
//! the Table Accept header each object is a one-row Table, only the first
//! carrying the column definitions. The stream ends after
//! `timeoutSeconds` (default: a random 30–60 minutes, as upstream's
//! `--min-request-timeout` rule), after an ERROR event, when the client
//! goes away, or as soon as the server starts shutting down
//! ([`super::Api::start_shutdown`]).

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use rkube_apimachinery::registry::ResourceInfo;
use rkube_apimachinery::ApiError;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::negotiate::Format;
use super::{query, table, Ctx};
use crate::storage::watch::{Event, EventType};
use crate::storage::Predicate;

/// Upstream's `--min-request-timeout` default; watches without
/// `timeoutSeconds` last between one and two times this.
const MIN_REQUEST_TIMEOUT: Duration = Duration::from_secs(1800);

/// `watch`: starts the store watch, then streams its events.
pub async fn handle(ctx: &Ctx<'_>) -> Result<Response, ApiError> {
    let (kind, group) = (ctx.info.kind, ctx.info.group);
    let (mut opts, timeout) = query::watch_options(&ctx.query, kind, group)?;
    if !ctx.request.name.is_empty() {
        // Legacy `/watch/.../{name}`: a watch of that one object.
        let by_name = match ctx.query.get("fieldSelector").filter(|f| !f.is_empty()) {
            Some(f) => format!("{f},metadata.name={}", ctx.request.name),
            None => format!("metadata.name={}", ctx.request.name),
        };
        opts.predicate = Predicate::parse(ctx.query.get("labelSelector"), Some(&by_name), kind, group)?;
    }
    let events = ctx.store.watch(&ctx.request.namespace, opts).await?;
    let timeout = timeout.map(Duration::from_secs).unwrap_or_else(default_timeout);
    let stream = EventStream {
        events,
        deadline: Instant::now() + timeout,
        format: ctx.format,
        info: ctx.info.clone(),
        first: true,
        done: false,
        shutdown: ctx.api.shutdown_signal(),
    };
    let body = Body::from_stream(futures::stream::unfold(stream, |mut s| async move {
        s.next().await.map(|chunk| (Ok::<Bytes, std::convert::Infallible>(chunk), s))
    }));
    Ok((StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], body).into_response())
}

/// A random duration in `[MIN_REQUEST_TIMEOUT, 2 × MIN_REQUEST_TIMEOUT)`.
fn default_timeout() -> Duration {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().subsec_nanos();
    MIN_REQUEST_TIMEOUT + Duration::from_secs(u64::from(nanos) % MIN_REQUEST_TIMEOUT.as_secs())
}

struct EventStream {
    events: mpsc::Receiver<Event>,
    deadline: Instant,
    format: Format,
    /// The watched resource (its Table printer).
    info: ResourceInfo,
    first: bool,
    done: bool,
    /// `true` once server shutdown has begun: the stream then ends.
    shutdown: tokio::sync::watch::Receiver<bool>,
}

impl EventStream {
    /// The next encoded event, or `None` when the stream is over.
    async fn next(&mut self) -> Option<Bytes> {
        if self.done {
            return None;
        }
        let event = tokio::select! {
            e = self.events.recv() => e?,
            _ = tokio::time::sleep_until(self.deadline) => return None,
            // An `Err` (the Api was dropped) disables this branch only.
            Ok(_) = self.shutdown.wait_for(|stopping| *stopping) => return None,
        };
        if event.kind == EventType::Error {
            self.done = true;
        }
        Some(self.encode(event))
    }

    fn encode(&mut self, event: Event) -> Bytes {
        let object = match (self.format, event.kind) {
            (Format::Table { v1beta1, include }, EventType::Added | EventType::Modified | EventType::Deleted) => {
                let t = table::object_table(&self.info, &event.object, include, v1beta1, self.first);
                self.first = false;
                t
            }
            (Format::PartialMetadata, EventType::Added | EventType::Modified | EventType::Deleted) => {
                table::partial_metadata(&event.object)
            }
            // The object's encoding is shared by every watch sending it.
            _ => return watch_line(event.kind, event.object.json()),
        };
        let json = serde_json::to_vec(&object).unwrap_or_else(|_| b"null".to_vec());
        watch_line(event.kind, &json)
    }
}

/// `{"type":"<kind>","object":<object>}` and a newline.
fn watch_line(kind: EventType, object: &[u8]) -> Bytes {
    let kind = kind.as_str();
    let mut line = Vec::with_capacity(object.len() + kind.len() + 24);
    line.extend_from_slice(b"{\"type\":\"");
    line.extend_from_slice(kind.as_bytes());
    line.extend_from_slice(b"\",\"object\":");
    line.extend_from_slice(object);
    line.extend_from_slice(b"}\n");
    Bytes::from(line)
}
