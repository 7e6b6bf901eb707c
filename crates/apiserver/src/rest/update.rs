//! PUT of an object, its `/status`, or a namespace's `/finalize`.

use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::Response;
use rkube_apimachinery::apply::{managed::ManagerId, manager_or_user_agent};
use rkube_apimachinery::{meta, ApiError};
use serde_json::{json, Value};

use super::{body, negotiate, query, response, Ctx};
use crate::storage::namespaces::Operation;
use crate::storage::{Tracking, UpdateKind};

/// The kind of update a subresource path asks for.
pub fn update_kind(subresource: &str) -> UpdateKind {
    match subresource {
        "status" => UpdateKind::Status,
        // CSRs' approval lives in the status; admission keeps the rest of it.
        "approval" => UpdateKind::Status,
        "finalize" => UpdateKind::Finalize,
        _ => UpdateKind::Main,
    }
}

/// Upstream's `checkName`: the body's name and namespace must match the URL.
pub fn check_name(obj: &mut Value, name: &str, namespace: &str) -> Result<(), ApiError> {
    let obj_name = meta::name(obj);
    if obj_name != name {
        return Err(ApiError::BadRequest(format!(
            "the name of the object ({obj_name}) does not match the name on the URL ({name})"
        )));
    }
    if !namespace.is_empty() {
        match meta::namespace(obj) {
            "" => meta::set(obj, "namespace", json!(namespace)),
            ns if ns != namespace => {
                return Err(ApiError::BadRequest(format!(
                    "the namespace of the object ({ns}) does not match the namespace on the request ({namespace})"
                )))
            }
            _ => {}
        }
    }
    Ok(())
}

/// `update`: decode, name/namespace checks, admission, then the store's
/// guaranteed update (409 on a stale resourceVersion). 200, or 201 when the
/// kind allows create-on-update and the object did not exist.
pub async fn handle(ctx: &Ctx<'_>, body: Body) -> Result<Response, ApiError> {
    let params = query::write_params(&ctx.query, "UpdateOptions")?;
    let format = negotiate::body_format(ctx.header(header::CONTENT_TYPE))?;
    let bytes = body::read(body).await?;
    let decoded = body::decode(ctx.info, &bytes, format, params.field_validation)?;
    let mut obj = decoded.object;
    let (namespace, name) = (&ctx.request.namespace, &ctx.request.name);
    check_name(&mut obj, name, namespace)?;
    ctx.admit(Operation::Update, name).await?;
    let kind = update_kind(&ctx.request.subresource);
    let (opts, admission) = ctx.write_options(params.dry_run);
    let manager = manager_or_user_agent(ctx.query.get("fieldManager"), ctx.header(header::USER_AGENT));
    let tracking = Tracking::Update(ManagerId::update(&manager, &ctx.info.api_version(), &ctx.request.subresource));
    let (updated, created) =
        ctx.store.update_tracked(namespace, name, kind, &opts, &tracking, |_| Ok(obj.clone())).await?;
    let status = if created { StatusCode::CREATED } else { StatusCode::OK };
    let mut warnings = decoded.warnings;
    warnings.extend(admission.warnings());
    Ok(response::reply(status, updated, ctx.format, ctx.info, &warnings))
}
