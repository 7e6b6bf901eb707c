//! PATCH of an object or its `/status`: JSON patch, merge patch and
//! strategic merge patch through `rkube_apimachinery::patch`, inside the
//! store's guaranteed-update loop (so a concurrent write re-applies the
//! patch to the new state instead of failing). Server-side apply is a
//! later item and answers 415 for now.

use std::sync::Mutex;

use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::Response;
use rkube_apimachinery::patch::{apply_patch, patch_type_for_request, unsupported_patch_media_type, PatchType};
use rkube_apimachinery::{typed, ApiError};

use super::update::{check_name, update_kind};
use super::{body, query, response, Ctx};
use crate::storage::namespaces::Operation;
use crate::storage::WriteOptions;

/// `patch`: 200 with the patched object; 404 when it does not exist.
pub async fn handle(ctx: &Ctx<'_>, body: Body) -> Result<Response, ApiError> {
    let params = query::write_params(&ctx.query, "PatchOptions")?;
    let builtin = typed::is_typed(&ctx.info.api_version(), ctx.info.kind);
    let patch_type = patch_type_for_request(ctx.header(header::CONTENT_TYPE).unwrap_or(""), builtin)?;
    if patch_type == PatchType::Apply {
        return Err(unsupported_patch_media_type(builtin));
    }
    let bytes = body::read(body).await?;
    let (namespace, name) = (&ctx.request.namespace, &ctx.request.name);
    ctx.admit(Operation::Update, name).await?;
    let gvk = ctx.info.gvk();
    let warnings = Mutex::new(Vec::new());
    let opts = WriteOptions { dry_run: params.dry_run };
    let kind = update_kind(&ctx.request.subresource);
    let (patched, _) = ctx
        .store
        .update(namespace, name, kind, &opts, |current| {
            let current = current.ok_or_else(|| ApiError::NotFound {
                resource: ctx.store.group_resource().clone(),
                name: name.clone(),
            })?;
            let patched = apply_patch(patch_type, current, &bytes, Some(&gvk))?;
            let mut decoded = body::decode_value(ctx.info, patched, Vec::new(), params.field_validation)?;
            check_name(&mut decoded.object, name, namespace)?;
            *warnings.lock().unwrap_or_else(|p| p.into_inner()) = decoded.warnings;
            Ok(decoded.object)
        })
        .await?;
    let warnings = warnings.into_inner().unwrap_or_else(|p| p.into_inner());
    Ok(response::reply(StatusCode::OK, patched, ctx.format, ctx.info, &warnings))
}
