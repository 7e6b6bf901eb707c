//! Resources served in another version than they are stored in
//! (`autoscaling/v1` HorizontalPodAutoscalers stored as `autoscaling/v2`,
//! `events.k8s.io/v1` Events stored as core `v1` Events): every verb runs
//! against the storage resource's store and handlers, with request bodies
//! converted to the storage version first and responses (objects, lists,
//! Tables' embedded objects, watch events) converted back to the served
//! version — upstream's conversion at the codec boundary. The conversions
//! are in [`crate::storage::conversion`].
//!
//! Patches are applied to the served representation of the stored object
//! (so JSON patch paths and merge keys are those of the served version),
//! then converted, inside the store's guaranteed update.

use std::sync::Mutex;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use rkube_apimachinery::patch::{apply_patch, patch_type_for_request, unsupported_patch_media_type, PatchType};
use rkube_apimachinery::registry::ResourceInfo;
use rkube_apimachinery::{typed, ApiError};
use serde_json::{json, Value};

use super::negotiate::{self, BodyFormat, Format};
use super::query::{self, Query};
use super::request::{RequestInfo, Verb};
use super::update::{check_name, update_kind};
use super::{body, create, delete, get, list, update, watch, Api, Ctx};
use crate::storage::conversion::Conversion;
use crate::storage::namespaces::Operation;

/// The most a converted (non-watch) response body may be.
const MAX_RESPONSE: usize = 256 << 20;

/// Serves `verb` on the served resource `served` through its storage
/// resource.
#[allow(clippy::too_many_arguments)]
pub async fn serve(
    api: &Api,
    request: &RequestInfo,
    served: &ResourceInfo,
    conv: Conversion,
    verb: Verb,
    query: Query,
    headers: HeaderMap,
    body: Body,
    user: crate::authn::UserInfo,
) -> Result<Response, ApiError> {
    let storage_info = api.registry().lookup(conv.group, conv.version, conv.plural).ok_or_else(unavailable(served))?;
    let store = api.store(conv.group, conv.version, conv.plural).ok_or_else(unavailable(served))?;
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let wanted = negotiate::output_format(accept, query.get("includeObject"))?;
    let inner_format = if wanted == Format::Yaml { Format::Json } else { wanted };
    let mut inner_request = request.clone();
    inner_request.group = conv.group.to_string();
    inner_request.version = conv.version.to_string();
    inner_request.resource = conv.plural.to_string();
    let mut headers = headers;
    let body = match verb {
        Verb::Create | Verb::Update => convert_request_body(&conv, &mut headers, body).await?,
        _ => body,
    };
    let ctx = Ctx {
        api,
        request: &inner_request,
        info: storage_info,
        store,
        query,
        format: inner_format,
        headers: headers.clone(),
        user,
        served,
    };
    let resp = match verb {
        Verb::Get => get::handle(&ctx).await?,
        Verb::List => list::handle(&ctx).await?,
        Verb::Watch => return Ok(convert_watch(watch::handle(&ctx).await?, conv)),
        Verb::Create => create::handle(&ctx, body).await?,
        Verb::Update => update::handle(&ctx, body).await?,
        Verb::Patch => patch(&ctx, served, &conv, body).await?,
        Verb::Delete => delete::handle(&ctx, body).await?,
        Verb::DeleteCollection => delete::handle_collection(&ctx, body).await?,
    };
    convert_response(resp, &conv, served, wanted).await
}

fn unavailable(served: &ResourceInfo) -> impl FnOnce() -> ApiError + '_ {
    move || ApiError::ServiceUnavailable(format!("{} is not served: its storage is missing", served.group_resource()))
}

/// A JSON or YAML body of the served version as JSON of the storage
/// version (other bodies pass unchanged and meet the handler's checks).
async fn convert_request_body(conv: &Conversion, headers: &mut HeaderMap, body: Body) -> Result<Body, ApiError> {
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
    let Ok(format) = negotiate::body_format(content_type) else { return Ok(body) };
    let bytes = body::read(body).await?;
    let parsed: Option<Value> = match format {
        BodyFormat::Yaml => serde_yaml::from_slice(&bytes).ok(),
        _ => serde_json::from_slice(&bytes).ok(),
    };
    let Some(value) = parsed.filter(|v| v.get("apiVersion").and_then(Value::as_str) == Some(conv.served_api_version()))
    else {
        return Ok(Body::from(bytes));
    };
    let converted = conv.to_storage(&value);
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(Body::from(serde_json::to_vec(&converted).map_err(|e| ApiError::Internal(e.to_string()))?))
}

/// PATCH applied to the served representation.
async fn patch(ctx: &Ctx<'_>, served: &ResourceInfo, conv: &Conversion, body: Body) -> Result<Response, ApiError> {
    let params = query::write_params(&ctx.query, "PatchOptions")?;
    let builtin = typed::is_typed(&served.api_version(), served.kind);
    let patch_type = patch_type_for_request(ctx.header(header::CONTENT_TYPE).unwrap_or(""), builtin)?;
    if patch_type == PatchType::Apply {
        return Err(unsupported_patch_media_type(builtin));
    }
    let bytes = body::read(body).await?;
    let (namespace, name) = (&ctx.request.namespace, &ctx.request.name);
    ctx.admit(Operation::Update, name).await?;
    let gvk = served.gvk();
    let warnings = Mutex::new(Vec::new());
    let (opts, admission) = ctx.write_options(params.dry_run);
    let (patched, _) = ctx
        .store
        .update(namespace, name, update_kind(&ctx.request.subresource), &opts, |current| {
            let current = current.ok_or_else(|| ApiError::NotFound {
                resource: ctx.store.group_resource().clone(),
                name: name.clone(),
            })?;
            let served_current = conv.from_storage(current);
            let patched = apply_patch(patch_type, &served_current, &bytes, Some(&gvk))?;
            let mut decoded = body::decode_value(served, patched, Vec::new(), params.field_validation)?;
            check_name(&mut decoded.object, name, namespace)?;
            *warnings.lock().unwrap_or_else(|p| p.into_inner()) = decoded.warnings;
            Ok(conv.to_storage(&decoded.object))
        })
        .await?;
    let mut warnings = warnings.into_inner().unwrap_or_else(|p| p.into_inner());
    warnings.extend(admission.warnings());
    Ok(super::response::reply(StatusCode::OK, patched, ctx.format, ctx.info, &warnings))
}

/// Converts a stored object, a list of them, or the objects in a Table's
/// rows to the served version.
fn convert_value(v: &mut Value, conv: &Conversion, served: &ResourceInfo) {
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("").to_string();
    let api_version = v.get("apiVersion").and_then(Value::as_str).unwrap_or("").to_string();
    if api_version != conv.storage_api_version() {
        if kind == "Table" {
            for row in v.get_mut("rows").and_then(Value::as_array_mut).into_iter().flatten() {
                if let Some(obj) = row.get_mut("object") {
                    convert_value(obj, conv, served);
                }
            }
        }
        return;
    }
    if kind.ends_with("List") {
        let strip = typed::is_typed(&served.api_version(), served.kind);
        for item in v.get_mut("items").and_then(Value::as_array_mut).into_iter().flatten() {
            *item = conv.from_storage(item);
            if strip {
                if let Some(m) = item.as_object_mut() {
                    m.remove("kind");
                    m.remove("apiVersion");
                }
            }
        }
        v["apiVersion"] = json!(conv.served_api_version());
        v["kind"] = json!(served.list_kind);
    } else if kind == served.kind {
        *v = conv.from_storage(v);
    }
}

async fn convert_response(
    resp: Response,
    conv: &Conversion,
    served: &ResourceInfo,
    wanted: Format,
) -> Result<Response, ApiError> {
    let (mut parts, body) = resp.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_RESPONSE).await.map_err(|e| ApiError::Internal(e.to_string()))?;
    let Ok(mut value) = serde_json::from_slice::<Value>(&bytes) else {
        return Ok(Response::from_parts(parts, Body::from(bytes)));
    };
    if parts.status.is_success() {
        convert_value(&mut value, conv, served);
    }
    let (content_type, out) = if wanted == Format::Yaml {
        ("application/yaml", serde_yaml::to_string(&value).unwrap_or_default().into_bytes())
    } else {
        let mut b = serde_json::to_vec(&value).map_err(|e| ApiError::Internal(e.to_string()))?;
        b.push(b'\n');
        ("application/json", b)
    };
    if parts.status.is_success() {
        parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    }
    parts.headers.remove(header::CONTENT_LENGTH);
    Ok(Response::from_parts(parts, Body::from(out)))
}

/// Converts each newline-delimited watch event's object.
fn convert_watch(resp: Response, conv: Conversion) -> Response {
    let (parts, body) = resp.into_parts();
    if !parts.status.is_success() {
        return Response::from_parts(parts, body);
    }
    let served = conv.served_api_version();
    let mut pending: Vec<u8> = Vec::new();
    let stream = body.into_data_stream().map(move |chunk| {
        let chunk = chunk.map_err(std::io::Error::other)?;
        pending.extend_from_slice(&chunk);
        let mut out = Vec::new();
        while let Some(pos) = pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=pos).collect();
            match serde_json::from_slice::<Value>(&line) {
                Ok(mut event) => {
                    let bookmark = event.get("type").and_then(Value::as_str) == Some("BOOKMARK");
                    if let Some(obj) = event.get_mut("object") {
                        let is_stored =
                            obj.get("apiVersion").and_then(Value::as_str) == Some(conv.storage_api_version());
                        if bookmark && is_stored {
                            obj["apiVersion"] = json!(served);
                        } else if is_stored {
                            *obj = conv.from_storage(obj);
                        }
                    }
                    out.extend_from_slice(&serde_json::to_vec(&event).unwrap_or_default());
                    out.push(b'\n');
                }
                Err(_) => out.extend_from_slice(&line),
            }
        }
        Ok::<Bytes, std::io::Error>(Bytes::from(out))
    });
    (parts.status, parts.headers, Body::from_stream(stream)).into_response()
}
