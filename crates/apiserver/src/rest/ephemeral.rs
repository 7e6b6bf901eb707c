//! `pods/ephemeralcontainers` (upstream's `EphemeralContainersREST`): GET
//! returns the pod; PUT and PATCH (what `kubectl debug` sends) change only
//! `spec.ephemeralContainers`, which may grow but whose existing entries
//! may not change or go away.

use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::Response;
use rkube_apimachinery::patch::{apply_patch, patch_type_for_request, unsupported_patch_media_type, PatchType};
use rkube_apimachinery::validation::{ErrorList, FieldError, Path};
use rkube_apimachinery::{ApiError, GroupResource};
use serde_json::{json, Value};

use super::binding::decode_body;
use super::request::Verb;
use super::update::check_name;
use super::{query, response, Ctx};
use crate::storage::{ResourceStore, UpdateKind};

/// Computes the requested pod from the stored one (the PUT body, or the
/// patch applied).
type RequestedPod = Box<dyn Fn(&Value) -> Result<Value, ApiError> + Send + Sync>;

/// Serves `get`, `update` and `patch` of `pods/{name}/ephemeralcontainers`.
pub async fn handle(ctx: &Ctx<'_>, pods: &ResourceStore, verb: Verb, body: Body) -> Result<Response, ApiError> {
    let (namespace, name) = (&ctx.request.namespace, &ctx.request.name);
    let pod_of = |current: Option<&Value>| {
        current
            .cloned()
            .ok_or_else(|| ApiError::NotFound { resource: GroupResource::new("", "pods"), name: name.clone() })
    };
    let requested: RequestedPod = match verb {
        Verb::Get => {
            let pod = pods.get(namespace, name, ctx.query.get("resourceVersion").unwrap_or("")).await?;
            return Ok(response::reply(StatusCode::OK, pod, ctx.format, ctx.info, &[]));
        }
        Verb::Update => {
            let mut pod = decode_body(ctx, body).await?;
            check_name(&mut pod, name, namespace)?;
            Box::new(move |_current: &Value| Ok(pod.clone()))
        }
        Verb::Patch => {
            let patch_type = patch_type_for_request(ctx.header(header::CONTENT_TYPE).unwrap_or(""), true)?;
            if patch_type == PatchType::Apply {
                return Err(unsupported_patch_media_type(true));
            }
            let bytes = super::body::read(body).await?;
            let gvk = ctx.info.gvk();
            Box::new(move |current: &Value| apply_patch(patch_type, current, &bytes, Some(&gvk)))
        }
        _ => return Err(ApiError::MethodNotSupported(super::METHOD_NOT_ALLOWED.into())),
    };
    let params = query::write_params(&ctx.query, if verb == Verb::Patch { "PatchOptions" } else { "UpdateOptions" })?;
    let (opts, admission) = ctx.write_options(params.dry_run);
    let (updated, _) = pods
        .update(namespace, name, UpdateKind::Internal, &opts, |current| {
            let mut pod = pod_of(current)?;
            let mut wanted = requested(&pod)?;
            rkube_apimachinery::strategy::Strategy::default(&rkube_apimachinery::strategy::Pod, &mut wanted);
            let new = wanted.pointer("/spec/ephemeralContainers").cloned().unwrap_or(json!([]));
            let old = pod.pointer("/spec/ephemeralContainers").cloned().unwrap_or(json!([]));
            validate(&new, &old, &pod, name)?;
            if let Some(rv) =
                wanted.pointer("/metadata/resourceVersion").filter(|v| v.as_str().is_some_and(|s| !s.is_empty()))
            {
                pod["metadata"]["resourceVersion"] = rv.clone();
            }
            pod["spec"]["ephemeralContainers"] = new;
            Ok(pod)
        })
        .await?;
    Ok(response::reply(StatusCode::OK, updated, ctx.format, ctx.info, &admission.warnings()))
}

/// Upstream's `ValidatePodEphemeralContainersUpdate` (the common rules).
fn validate(new: &Value, old: &Value, pod: &Value, name: &str) -> Result<(), ApiError> {
    let path = Path::new("spec").child("ephemeralContainers");
    let mut errs = ErrorList::new();
    let empty = Vec::new();
    let (new, old) = (new.as_array().unwrap_or(&empty), old.as_array().unwrap_or(&empty));
    for o in old {
        let o_name = o.get("name").and_then(Value::as_str).unwrap_or("");
        match new.iter().find(|n| n.get("name").and_then(Value::as_str) == Some(o_name)) {
            None => errs.push(FieldError::forbidden(
                &path,
                &format!("existing ephemeral containers {o_name:?} may not be removed"),
            )),
            Some(n) if n != o => errs.push(FieldError::forbidden(
                &path,
                &format!("existing ephemeral containers {o_name:?} may not be changed"),
            )),
            Some(_) => {}
        }
    }
    let mut names: Vec<String> = ["containers", "initContainers"]
        .iter()
        .flat_map(|f| pod.pointer(&format!("/spec/{f}")).and_then(Value::as_array).cloned().unwrap_or_default())
        .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_string))
        .collect();
    for (i, c) in new.iter().enumerate() {
        let p = path.index(i);
        let c_name = c.get("name").and_then(Value::as_str).unwrap_or("");
        if c_name.is_empty() {
            errs.push(FieldError::required(&p.child("name"), ""));
        } else if names.iter().any(|n| n == c_name) {
            errs.push(FieldError::duplicate(&p.child("name"), c_name));
        } else {
            names.push(c_name.to_string());
        }
        if c.get("image").and_then(Value::as_str).unwrap_or("").is_empty() {
            errs.push(FieldError::required(&p.child("image"), ""));
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.into_invalid("", "Pod", name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ephemeral_containers_may_be_added_but_not_changed() {
        let pod = json!({"spec": {"containers": [{"name": "app"}]}});
        let old = json!([{"name": "dbg", "image": "busybox"}]);
        let added = json!([{"name": "dbg", "image": "busybox"}, {"name": "dbg2", "image": "busybox"}]);
        assert!(validate(&added, &old, &pod, "p").is_ok());
        let changed = json!([{"name": "dbg", "image": "alpine"}]);
        assert!(validate(&changed, &old, &pod, "p").unwrap_err().to_string().contains("may not be changed"));
        assert!(validate(&json!([]), &old, &pod, "p").unwrap_err().to_string().contains("may not be removed"));
        let clash = json!([{"name": "app", "image": "busybox"}]);
        assert!(validate(&clash, &json!([]), &pod, "p").unwrap_err().to_string().contains("Duplicate value"));
    }
}
