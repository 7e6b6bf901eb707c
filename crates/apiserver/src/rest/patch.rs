//! PATCH of an object or its `/status`: JSON patch, merge patch and
//! strategic merge patch through `rkube_apimachinery::patch`, inside the
//! store's guaranteed-update loop (so a concurrent write re-applies the
//! patch to the new state instead of failing). Server-side apply
//! (`application/apply-patch+yaml`) merges the applied configuration with
//! `rkube_apimachinery::apply` and creates a missing object. Every patch
//! maintains `metadata.managedFields`.

use std::sync::Mutex;

use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::Response;
use rkube_apimachinery::apply::{self, fieldset::Schema, managed::ManagerId, ApplyRequest, TrackOptions};
use rkube_apimachinery::patch::{apply_patch, patch_type_for_request, PatchType};
use rkube_apimachinery::validation::{ErrorList, FieldError, Path};
use rkube_apimachinery::{meta, typed, ApiError};
use serde_json::Value;

use super::update::{check_name, update_kind};
use super::{body, query, response, Ctx};
use crate::storage::namespaces::Operation;
use crate::storage::{Tracking, UpdateKind};

/// `patch`: 200 with the patched object; 404 when it does not exist.
pub async fn handle(ctx: &Ctx<'_>, body: Body) -> Result<Response, ApiError> {
    let params = query::write_params(&ctx.query, "PatchOptions")?;
    let builtin = typed::is_typed(&ctx.info.api_version(), ctx.info.kind);
    let patch_type = patch_type_for_request(ctx.header(header::CONTENT_TYPE).unwrap_or(""), builtin)?;
    let field_manager = ctx.query.get("fieldManager").unwrap_or("").to_string();
    let force = ctx.query.bool("force")?;
    validate_patch_options(patch_type, &field_manager, force.is_some())?;
    let bytes = body::read(body).await?;
    if patch_type == PatchType::Apply {
        return apply(ctx, &bytes, &params, &field_manager, force.unwrap_or(false)).await;
    }
    let manager = apply::manager_or_user_agent(Some(&field_manager), ctx.header(header::USER_AGENT));
    let tracking = Tracking::Update(ManagerId::update(&manager, &ctx.info.api_version(), &ctx.request.subresource));
    let (namespace, name) = (&ctx.request.namespace, &ctx.request.name);
    ctx.admit(Operation::Update, name).await?;
    let gvk = ctx.info.gvk();
    let warnings = Mutex::new(Vec::new());
    let (opts, admission) = ctx.write_options(params.dry_run);
    let kind = update_kind(&ctx.request.subresource);
    let (patched, _) = ctx
        .store
        .update_tracked(namespace, name, kind, &opts, &tracking, |current| {
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
    let mut warnings = warnings.into_inner().unwrap_or_else(|p| p.into_inner());
    warnings.extend(admission.warnings());
    Ok(response::reply(StatusCode::OK, patched, ctx.format, ctx.info, &warnings))
}

/// Upstream's `ValidatePatchOptions`: `force` only with apply, a
/// `fieldManager` required with apply and at most 128 bytes (422 Invalid on
/// `PatchOptions.meta.k8s.io`).
fn validate_patch_options(patch_type: PatchType, field_manager: &str, force_set: bool) -> Result<(), ApiError> {
    let mut errs = ErrorList::new();
    if patch_type != PatchType::Apply {
        if force_set {
            errs.push(FieldError::forbidden(&Path::new("force"), "may not be specified for non-apply patch"));
        }
    } else if field_manager.is_empty() {
        errs.push(FieldError::required(&Path::new("fieldManager"), "is required for apply patch"));
    }
    if field_manager.len() > apply::MAX_FIELD_MANAGER_LENGTH {
        errs.push(FieldError::too_long(&Path::new("fieldManager"), apply::MAX_FIELD_MANAGER_LENGTH as i64));
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.into_invalid("meta.k8s.io", "PatchOptions", ""))
    }
}

/// Server-side apply: decode the YAML (or JSON) configuration, check its
/// kind, merge it into the live object (or create it) with conflict
/// detection, then decode the result as any patched object. 200 on update,
/// 201 on create.
async fn apply(
    ctx: &Ctx<'_>,
    bytes: &[u8],
    params: &query::WriteParams,
    field_manager: &str,
    force: bool,
) -> Result<Response, ApiError> {
    let config: Value =
        serde_yaml::from_slice(bytes).map_err(|e| ApiError::BadRequest(format!("error decoding YAML: {e}")))?;
    if !config.is_object() {
        return Err(ApiError::BadRequest("error decoding YAML: the applied configuration must be an object".into()));
    }
    let api_version = ctx.info.api_version();
    let got_version = config.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let got_kind = config.get("kind").and_then(Value::as_str).unwrap_or("");
    if got_version != api_version || got_kind != ctx.info.kind {
        let (group, version) = got_version.rsplit_once('/').unwrap_or(("", got_version));
        return Err(ApiError::BadRequest(format!("invalid object type: {group}/{version}, Kind={got_kind}")));
    }
    let (namespace, name) = (&ctx.request.namespace, &ctx.request.name);
    ctx.admit(Operation::Update, name).await?;
    let kind = update_kind(&ctx.request.subresource);
    let gvk = ctx.info.gvk();
    let now = meta::now();
    let request = ApplyRequest {
        manager: field_manager,
        api_version: &api_version,
        subresource: &ctx.request.subresource,
        force,
        opts: TrackOptions {
            schema: Schema::for_kind(gvk.group, gvk.version, gvk.kind),
            ignore_status: kind == UpdateKind::Main && ctx.info.subresource("status").is_some(),
        },
        now: &now,
    };
    let warnings = Mutex::new(Vec::new());
    let (opts, admission) = ctx.write_options(params.dry_run);
    let (applied, created) = ctx
        .store
        .update_tracked(namespace, name, kind, &opts, &Tracking::Apply, |current| {
            let merged = apply::apply(current, &config, &request)?;
            let mut decoded = body::decode_value(ctx.info, merged, Vec::new(), params.field_validation)?;
            check_name(&mut decoded.object, name, namespace)?;
            *warnings.lock().unwrap_or_else(|p| p.into_inner()) = decoded.warnings;
            Ok(decoded.object)
        })
        .await?;
    let mut warnings = warnings.into_inner().unwrap_or_else(|p| p.into_inner());
    warnings.extend(admission.warnings());
    let status = if created { StatusCode::CREATED } else { StatusCode::OK };
    Ok(response::reply(status, applied, ctx.format, ctx.info, &warnings))
}
