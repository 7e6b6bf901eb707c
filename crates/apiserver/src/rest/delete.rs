//! DELETE of an object or a collection, with `DeleteOptions` from the body
//! (what kubectl sends) or the query.

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use rkube_apimachinery::validation::{ErrorList, FieldError, Path};
use rkube_apimachinery::{meta, ApiError};
use serde_json::{json, Value};

use super::{body, list, query, response, Ctx};
use crate::storage::namespaces::Operation;
use crate::storage::{DeleteOptions, Deleted, ListResult, Preconditions, PropagationPolicy};

/// Reads `DeleteOptions` from the body and the query (body fields win);
/// 422 on `DeleteOptions.meta.k8s.io` for invalid values, as upstream.
pub async fn delete_options(ctx: &Ctx<'_>, body: Body) -> Result<DeleteOptions, ApiError> {
    let bytes = body::read(body).await?;
    let from_body: Value = if bytes.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        serde_json::from_slice(&bytes).or_else(|_| serde_yaml::from_slice(&bytes)).map_err(|e| {
            ApiError::BadRequest(format!("the object provided is unrecognized (must be of type DeleteOptions): {e}"))
        })?
    };
    let q = &ctx.query;
    let grace = match from_body.get("gracePeriodSeconds").and_then(Value::as_i64) {
        Some(g) => Some(g),
        None => q.int("gracePeriodSeconds")?,
    };
    let orphan = match from_body.get("orphanDependents").and_then(Value::as_bool) {
        Some(o) => Some(o),
        None => q.bool("orphanDependents")?,
    };
    let policy = from_body
        .get("propagationPolicy")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| q.get("propagationPolicy").map(str::to_string));
    let mut errs = ErrorList::new();
    let propagation_policy = match policy.as_deref() {
        None => None,
        Some("Foreground") => Some(PropagationPolicy::Foreground),
        Some("Background") => Some(PropagationPolicy::Background),
        Some("Orphan") => Some(PropagationPolicy::Orphan),
        Some(other) => {
            errs.push(FieldError::not_supported(
                &Path::new("propagationPolicy"),
                other,
                &["Foreground", "Background", "Orphan"],
            ));
            None
        }
    };
    if orphan.is_some() && policy.is_some() {
        errs.push(FieldError::invalid(
            &Path::new("propagationPolicy"),
            policy.as_deref().unwrap_or(""),
            "orphanDependents and deletionPropagation cannot be both set",
        ));
    }
    let body_dry_run = from_body.get("dryRun").and_then(Value::as_array).is_some_and(|a| !a.is_empty());
    if let Some(values) = from_body.get("dryRun").and_then(Value::as_array) {
        for v in values {
            if v != "All" {
                errs.push(FieldError::not_supported(&Path::new("dryRun"), v.as_str().unwrap_or(""), &["All"]));
            }
        }
    }
    if !errs.is_empty() {
        return Err(errs.into_invalid("meta.k8s.io", "DeleteOptions", ""));
    }
    let dry_run = body_dry_run || query::delete_dry_run(q)?;
    let pre = &from_body["preconditions"];
    Ok(DeleteOptions {
        grace_period_seconds: grace,
        preconditions: Preconditions {
            uid: pre.get("uid").and_then(Value::as_str).map(str::to_string),
            resource_version: pre.get("resourceVersion").and_then(Value::as_str).map(str::to_string),
        },
        propagation_policy,
        orphan_dependents: orphan,
        write: ctx.write_options(dry_run).0,
    })
}

/// `delete`: 200 with the object when it stays (finalizers, grace period,
/// terminating namespace) or when the kind returns deleted objects;
/// otherwise 200 with a `Status` of success naming the object.
pub async fn handle(ctx: &Ctx<'_>, body: Body) -> Result<Response, ApiError> {
    if !ctx.request.subresource.is_empty() {
        return Err(ApiError::PathNotFound);
    }
    let (opts, admission) = options_and_admission(ctx, body).await?;
    let (namespace, name) = (&ctx.request.namespace, &ctx.request.name);
    ctx.admit(Operation::Delete, name).await?;
    let body = match ctx.store.delete(namespace, name, &opts).await? {
        Deleted::Pending(obj) => obj,
        Deleted::Gone(obj) if ctx.store.strategy().return_deleted_object() => obj,
        Deleted::Gone(obj) => {
            let mut details = json!({"name": meta::name(&obj), "kind": ctx.info.plural, "uid": meta::uid(&obj)});
            if !ctx.info.group.is_empty() {
                details["group"] = json!(ctx.info.group);
            }
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details})
        }
    };
    Ok(response::reply(StatusCode::OK, body, ctx.format, ctx.info, &admission.warnings()))
}

/// [`delete_options`] with the request's admission kept aside: the
/// warnings it leaves while deleting (a webhook's, a
/// ValidatingAdmissionPolicy's `Warn`) go into the response, as upstream.
async fn options_and_admission(
    ctx: &Ctx<'_>,
    body: Body,
) -> Result<(DeleteOptions, std::sync::Arc<crate::admission::RequestAdmission>), ApiError> {
    let mut opts = delete_options(ctx, body).await?;
    let (write, admission) = ctx.write_options(opts.write.dry_run);
    opts.write = write;
    Ok((opts, admission))
}

/// `deletecollection`: deletes what the selectors pick; answers the list
/// of deleted (or now deleting) objects.
pub async fn handle_collection(ctx: &Ctx<'_>, body: Body) -> Result<Response, ApiError> {
    let list_opts = query::list_options(&ctx.query, ctx.info.kind, ctx.info.group)?;
    let (opts, admission) = options_and_admission(ctx, body).await?;
    let namespace = &ctx.request.namespace;
    ctx.admit(Operation::Delete, "").await?;
    let items = ctx.store.delete_collection(namespace, &list_opts, &opts).await?;
    let revision = ctx.store.store().current_revision().await.unwrap_or_default();
    let result = ListResult { items, revision, continue_token: None, remaining_item_count: None };
    let warnings = admission.warnings();
    Ok(response::reply(StatusCode::OK, list::list_body(ctx.info, result), ctx.format, ctx.info, &warnings))
}
