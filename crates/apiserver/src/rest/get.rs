//! GET of one object (and of its `/status`, which returns the whole object).

use axum::http::StatusCode;
use axum::response::Response;
use rkube_apimachinery::ApiError;

use super::{response, Ctx};

/// `get`: the object at the latest revision; `resourceVersion` newer than
/// the store is a 504 as upstream's NotOlderThan rule says.
pub async fn handle(ctx: &Ctx<'_>) -> Result<Response, ApiError> {
    let rv = ctx.query.get("resourceVersion").unwrap_or("");
    let obj = ctx.store.get(&ctx.request.namespace, &ctx.request.name, rv).await?;
    Ok(response::reply(StatusCode::OK, obj, ctx.format, ctx.info, &[]))
}
