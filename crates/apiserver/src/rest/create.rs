//! POST of a new object.

use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::Response;
use rkube_apimachinery::apply::{managed::ManagerId, manager_or_user_agent};
use rkube_apimachinery::{meta, ApiError};
use serde_json::json;

use super::{body, negotiate, query, response, Ctx};
use crate::storage::namespaces::Operation;
use crate::storage::Tracking;

/// Upstream's message when the body names another namespace than the URL.
pub const NAMESPACE_MISMATCH: &str =
    "the namespace of the provided object does not match the namespace sent on the request";

/// `create`: decode (JSON/YAML, kind check, fieldValidation), namespace
/// from the URL, NamespaceLifecycle admission, then the store's create;
/// 201 Created with the stored object (dryRun: what would be stored).
pub async fn handle(ctx: &Ctx<'_>, body: Body) -> Result<Response, ApiError> {
    if !ctx.request.subresource.is_empty() {
        return Err(ApiError::PathNotFound);
    }
    let params = query::write_params(&ctx.query, "CreateOptions")?;
    let format = negotiate::body_format(ctx.header(header::CONTENT_TYPE))?;
    let bytes = body::read(body).await?;
    let decoded = body::decode(ctx.info, &bytes, format, params.field_validation)?;
    let mut obj = decoded.object;
    let namespace = &ctx.request.namespace;
    if ctx.info.namespaced() {
        match meta::namespace(&obj) {
            "" => meta::set(&mut obj, "namespace", json!(namespace)),
            ns if ns != namespace => return Err(ApiError::BadRequest(NAMESPACE_MISMATCH.into())),
            _ => {}
        }
    }
    ctx.admit(Operation::Create, meta::name(&obj)).await?;
    let manager = manager_or_user_agent(ctx.query.get("fieldManager"), ctx.header(header::USER_AGENT));
    let tracking = Tracking::Update(ManagerId::update(&manager, &ctx.info.api_version(), ""));
    let (opts, admission) = ctx.write_options(params.dry_run);
    let created = ctx.store.create_tracked(namespace, obj, &opts, &tracking).await?;
    let mut warnings = decoded.warnings;
    warnings.extend(admission.warnings());
    Ok(response::reply(StatusCode::CREATED, created, ctx.format, ctx.info, &warnings))
}
