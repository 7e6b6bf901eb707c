//! GET of a collection.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use rkube_apimachinery::registry::ResourceInfo;
use rkube_apimachinery::{typed, ApiError};
use serde_json::{json, Value};

use super::negotiate::Format;
use super::{query, response, Ctx};
use crate::storage::ListResult;

/// `list`: selectors, limit/continue and resourceVersion rules as
/// upstream; answers `<Kind>List`.
pub async fn handle(ctx: &Ctx<'_>) -> Result<Response, ApiError> {
    let opts = query::list_options(&ctx.query, ctx.info.kind, ctx.info.group)?;
    if ctx.format == Format::Json {
        // Unfiltered lists from the watch cache: its items are kept encoded.
        if let Some(list) = ctx.store.list_encoded(&ctx.request.namespace, &opts).await {
            let body = list.to_json(ctx.info.list_kind, &ctx.info.api_version());
            return Ok((StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], body).into_response());
        }
    }
    let result = ctx.store.list(&ctx.request.namespace, &opts).await?;
    Ok(response::reply(StatusCode::OK, list_body(ctx.info, result), ctx.format, ctx.info, &[]))
}

/// The `<Kind>List` object of a list result. Items of built-in kinds carry
/// no `kind`/`apiVersion`, as upstream's typed lists do.
pub fn list_body(info: &ResourceInfo, result: ListResult) -> Value {
    let api_version = info.api_version();
    let strip = typed::is_typed(&api_version, info.kind);
    let items: Vec<Value> = result
        .items
        .into_iter()
        .map(|mut item| {
            if strip {
                if let Some(m) = item.as_object_mut() {
                    m.remove("kind");
                    m.remove("apiVersion");
                }
            }
            item
        })
        .collect();
    let mut metadata = json!({"resourceVersion": result.revision.to_string()});
    if let Some(token) = result.continue_token {
        metadata["continue"] = json!(token);
    }
    if let Some(n) = result.remaining_item_count {
        metadata["remainingItemCount"] = json!(n);
    }
    json!({"kind": info.list_kind, "apiVersion": api_version, "metadata": metadata, "items": items})
}
