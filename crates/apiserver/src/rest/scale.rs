//! The `scale` subresource of deployments, replicasets, statefulsets and
//! replicationcontrollers (upstream's `ScaleREST` in
//! `pkg/registry/{apps,core}/*/storage`): an `autoscaling/v1 Scale` view
//! of the object.
//!
//! - GET builds the Scale from the stored object: name, namespace, uid,
//!   resourceVersion and creationTimestamp of the object, `spec.replicas`,
//!   `status.replicas` and `status.selector` in the label selector's
//!   canonical string form (`metav1.LabelSelectorAsSelector(..).String()`;
//!   for replication controllers the map selector as a set).
//! - PUT and PATCH compute the new Scale from the current one, validate it
//!   (`spec.replicas` ≥ 0), and write `spec.replicas` into the object
//!   inside the store's guaranteed update; the Scale's `resourceVersion`
//!   (when set) is the object's precondition, so a stale one is a 409.
//!   The object's generation is bumped as for any spec change.

use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::Response;
use rkube_apimachinery::patch::{apply_patch, patch_type_for_request, unsupported_patch_media_type, PatchType};
use rkube_apimachinery::registry::GroupVersionKind;
use rkube_apimachinery::selector::labels::LabelSelector;
use rkube_apimachinery::validation::{ErrorList, FieldError, Path};
use rkube_apimachinery::{meta, ApiError};
use serde_json::{json, Value};

use super::negotiate::{self, Format};
use super::request::Verb;
use super::update::check_name;
use super::{body, query, response, Ctx};
use crate::storage::namespaces::Operation;
use crate::storage::UpdateKind;

/// The Scale's group/version/kind.
const SCALE_GVK: GroupVersionKind = GroupVersionKind { group: "autoscaling", version: "v1", kind: "Scale" };

/// Serves `get`, `update` and `patch` of `<resource>/scale`.
pub async fn handle(ctx: &Ctx<'_>, verb: Verb, body: Body) -> Result<Response, ApiError> {
    match verb {
        Verb::Get => {
            let rv = ctx.query.get("resourceVersion").unwrap_or("");
            let obj = ctx.store.get(&ctx.request.namespace, &ctx.request.name, rv).await?;
            reply(ctx, StatusCode::OK, &scale_of(ctx, &obj)?)
        }
        Verb::Update => {
            let params = query::write_params(&ctx.query, "UpdateOptions")?;
            let format = negotiate::body_format(ctx.header(header::CONTENT_TYPE))?;
            let bytes = body::read(body).await?;
            let mut scale = decode_scale(&bytes, format)?;
            check_name(&mut scale, &ctx.request.name, &ctx.request.namespace)?;
            write(ctx, params.dry_run, |_| Ok(scale.clone())).await
        }
        Verb::Patch => {
            let params = query::write_params(&ctx.query, "PatchOptions")?;
            let patch_type = patch_type_for_request(ctx.header(header::CONTENT_TYPE).unwrap_or(""), true)?;
            if patch_type == PatchType::Apply {
                return Err(unsupported_patch_media_type(true));
            }
            let bytes = body::read(body).await?;
            write(ctx, params.dry_run, |current| {
                let mut patched = apply_patch(patch_type, current, &bytes, Some(&SCALE_GVK))?;
                check_name(&mut patched, &ctx.request.name, &ctx.request.namespace)?;
                Ok(patched)
            })
            .await
        }
        _ => Err(ApiError::MethodNotSupported(super::METHOD_NOT_ALLOWED.into())),
    }
}

/// Decodes a Scale body (JSON or YAML) and checks its kind.
fn decode_scale(bytes: &[u8], format: negotiate::BodyFormat) -> Result<Value, ApiError> {
    let value: Value = match format {
        negotiate::BodyFormat::Yaml => {
            serde_yaml::from_slice(bytes).map_err(|e| ApiError::BadRequest(format!("error decoding YAML: {e}")))?
        }
        _ => serde_json::from_slice(bytes).map_err(|e| ApiError::BadRequest(format!("error decoding JSON: {e}")))?,
    };
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = value.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if (!kind.is_empty() && kind != "Scale") || (!api_version.is_empty() && api_version != "autoscaling/v1") {
        return Err(ApiError::BadRequest(format!(
            "the API version in the data ({api_version}) does not match the expected API version (autoscaling/v1)"
        )));
    }
    Ok(value)
}

/// Runs the guaranteed update: `new_scale` turns the current Scale into
/// the requested one, which is validated and written into the object.
async fn write<F>(ctx: &Ctx<'_>, dry_run: bool, mut new_scale: F) -> Result<Response, ApiError>
where
    F: FnMut(&Value) -> Result<Value, ApiError>,
{
    let (namespace, name) = (&ctx.request.namespace, &ctx.request.name);
    ctx.admit(Operation::Update, name).await?;
    let (opts, admission) = ctx.write_options(dry_run);
    let (updated, _) = ctx
        .store
        .update(namespace, name, UpdateKind::Main, &opts, |current| {
            let current = current.ok_or_else(|| ApiError::NotFound {
                resource: ctx.store.group_resource().clone(),
                name: name.clone(),
            })?;
            let old_scale = scale_of(ctx, current)?;
            let scale = new_scale(&old_scale)?;
            validate_scale(&scale, name)?;
            let replicas = scale.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(0);
            let mut obj = current.clone();
            obj["spec"]["replicas"] = json!(replicas);
            let rv = meta::resource_version(&scale).to_string();
            meta::set(&mut obj, "resourceVersion", json!(rv));
            Ok(obj)
        })
        .await?;
    let resp = reply(ctx, StatusCode::OK, &scale_of(ctx, &updated)?)?;
    Ok(super::response::add_warnings(resp, &admission.warnings()))
}

/// Upstream's `ValidateScale`: metadata name required, replicas ≥ 0.
fn validate_scale(scale: &Value, name: &str) -> Result<(), ApiError> {
    let mut errs = ErrorList::new();
    let path = Path::new("spec").child("replicas");
    match scale.pointer("/spec/replicas") {
        None | Some(Value::Null) => {}
        Some(v) => match v.as_i64() {
            Some(n) if n < 0 => errs.push(FieldError::invalid(&path, n, "must be greater than or equal to 0")),
            Some(_) => {}
            None => errs.push(FieldError::invalid(&path, v.to_string(), "must be an integer")),
        },
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.into_invalid("autoscaling", "Scale", name))
    }
}

/// The Scale of a stored workload object.
pub fn scale_of(ctx: &Ctx<'_>, obj: &Value) -> Result<Value, ApiError> {
    scale_from(ctx.info.kind, obj)
}

/// The Scale of `obj`, a workload of kind `kind`.
pub fn scale_from(kind: &str, obj: &Value) -> Result<Value, ApiError> {
    let selector = if kind == "ReplicationController" {
        let set: Vec<(String, String)> = obj
            .pointer("/spec/selector")
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string())).collect())
            .unwrap_or_default();
        LabelSelector::from_set(set.iter().map(|(k, v)| (k.as_str(), v.as_str()))).to_string()
    } else {
        match obj.pointer("/spec/selector") {
            None | Some(Value::Null) => String::new(),
            Some(sel) => LabelSelector::from_label_selector_json(sel)
                .map_err(|e| ApiError::BadRequest(format!("invalid label selector: {e}")))?
                .to_string(),
        }
    };
    let md = &obj["metadata"];
    let mut metadata = serde_json::Map::new();
    for field in ["name", "namespace", "uid", "resourceVersion", "creationTimestamp"] {
        if let Some(v) = md.get(field).filter(|v| !v.is_null()) {
            metadata.insert(field.to_string(), v.clone());
        }
    }
    let replicas = obj.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1);
    let mut status = json!({ "replicas": obj.pointer("/status/replicas").and_then(Value::as_i64).unwrap_or(0) });
    if !selector.is_empty() {
        status["selector"] = json!(selector);
    }
    Ok(json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": { "replicas": replicas },
        "status": status,
    }))
}

fn reply(ctx: &Ctx<'_>, status: StatusCode, scale: &Value) -> Result<Response, ApiError> {
    let format = if ctx.format == Format::Yaml { Format::Yaml } else { Format::Json };
    Ok(response::reply(status, scale.clone(), format, ctx.info, &[]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_of_a_deployment_and_a_replication_controller() {
        let deploy = json!({
            "metadata": {"name": "web", "namespace": "default", "uid": "u", "resourceVersion": "7", "generation": 2},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"b": "2", "a": "1"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["y", "x"]}]}},
            "status": {"replicas": 1}
        });
        let s = scale_from("Deployment", &deploy).unwrap();
        assert_eq!(s["spec"]["replicas"], 2);
        assert_eq!(s["status"]["replicas"], 1);
        assert_eq!(s["status"]["selector"], "a=1,b=2,tier in (x,y)");
        assert_eq!(s["metadata"]["resourceVersion"], "7");
        assert!(s["metadata"].get("generation").is_none());
        let rc = json!({"metadata": {"name": "rc"}, "spec": {"replicas": 3, "selector": {"app": "x"}}});
        let s = scale_from("ReplicationController", &rc).unwrap();
        assert_eq!(s["status"]["selector"], "app=x");
        assert_eq!(s["status"]["replicas"], 0);
    }

    #[test]
    fn negative_replicas_are_invalid() {
        let e = validate_scale(&json!({"spec": {"replicas": -1}}), "web").unwrap_err();
        assert_eq!(e.code(), 422);
        assert!(e.to_string().contains("must be greater than or equal to 0"), "{e}");
        assert!(validate_scale(&json!({"spec": {"replicas": 0}}), "web").is_ok());
    }
}
