//! `pods/binding` and the `bindings` resource (upstream's `BindingREST`):
//! a POSTed `Binding` assigns a pod to a node — `spec.nodeName` set, the
//! binding's annotations merged, the `PodScheduled` condition true. 409 as
//! upstream when the pod is already assigned or being deleted. Admission
//! sees a CREATE of the Binding; its warnings go into the response.

use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use rkube_apimachinery::validation::{ErrorList, FieldError, Path};
use rkube_apimachinery::{meta, ApiError, GroupResource};
use serde_json::{json, Value};

use super::{body, negotiate, query, Ctx};
use crate::storage::{ResourceStore, UpdateKind};

/// Decodes a JSON or YAML request body into a value.
pub(crate) async fn decode_body(ctx: &Ctx<'_>, body: Body) -> Result<Value, ApiError> {
    let format = negotiate::body_format(ctx.header(header::CONTENT_TYPE))?;
    let bytes = body::read(body).await?;
    match format {
        negotiate::BodyFormat::Yaml => {
            serde_yaml::from_slice(&bytes).map_err(|e| ApiError::BadRequest(format!("error decoding YAML: {e}")))
        }
        _ => serde_json::from_slice(&bytes).map_err(|e| ApiError::BadRequest(format!("error decoding JSON: {e}"))),
    }
}

/// The `Status` of success a create-like subresource answers.
pub(crate) fn success(code: StatusCode) -> Response {
    let status =
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code.as_u16()});
    (code, [(header::CONTENT_TYPE, "application/json")], format!("{status}\n")).into_response()
}

/// POST of a Binding to `pods/{name}/binding` (`from_url` is the pod's
/// name) or to `bindings` (`None`: the Binding's name is the pod's).
pub async fn handle(
    ctx: &Ctx<'_>,
    pods: &ResourceStore,
    from_url: Option<&str>,
    body: Body,
) -> Result<Response, ApiError> {
    let params = query::write_params(&ctx.query, "CreateOptions")?;
    let binding = decode_body(ctx, body).await?;
    let name = meta::name(&binding).to_string();
    if let Some(url_name) = from_url {
        if name != url_name {
            return Err(ApiError::BadRequest("name in URL does not match name in Binding object".into()));
        }
    }
    validate(&binding, &name)?;
    // Admission sees a CREATE of the Binding (pods/binding or bindings);
    // the pod's update that follows is not admitted again, as upstream's
    // BindingREST.
    let admission = ctx.admission(params.dry_run);
    let mut binding = binding;
    if binding.get("kind").is_none() {
        binding["kind"] = json!("Binding");
    }
    if binding.get("apiVersion").is_none() {
        binding["apiVersion"] = json!("v1");
    }
    admission.admit_subresource_create(&mut binding, &name).await?;
    let node = binding.pointer("/target/name").and_then(Value::as_str).unwrap_or("").to_string();
    let uid = binding.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("").to_string();
    let annotations = binding.pointer("/metadata/annotations").and_then(Value::as_object).cloned().unwrap_or_default();
    let namespace = &ctx.request.namespace;
    let conflict = |message: String| ApiError::Conflict {
        resource: GroupResource::new("", "pods"),
        name: name.clone(),
        message,
        causes: vec![],
    };
    let opts = crate::storage::WriteOptions::internal(params.dry_run);
    pods.update(namespace, &name, UpdateKind::Internal, &opts, |current| {
        let mut pod = current
            .ok_or_else(|| ApiError::NotFound { resource: GroupResource::new("", "pods"), name: name.clone() })?
            .clone();
        if !uid.is_empty() && meta::uid(&pod) != uid {
            return Err(conflict(format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                meta::uid(&pod)
            )));
        }
        if meta::deletion_timestamp(&pod).is_some() {
            return Err(conflict(format!("pod {name} is being deleted, cannot be assigned to a host")));
        }
        let assigned = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("");
        if !assigned.is_empty() {
            return Err(conflict(format!("pod {name} is already assigned to node {assigned:?}")));
        }
        pod["spec"]["nodeName"] = json!(node);
        for (k, v) in &annotations {
            if !pod["metadata"].get("annotations").is_some_and(Value::is_object) {
                pod["metadata"]["annotations"] = json!({});
            }
            pod["metadata"]["annotations"][k] = v.clone();
        }
        set_scheduled_condition(&mut pod);
        Ok(pod)
    })
    .await?;
    Ok(super::response::add_warnings(success(StatusCode::CREATED), &admission.warnings()))
}

/// Upstream's `ValidatePodBinding`.
fn validate(binding: &Value, name: &str) -> Result<(), ApiError> {
    let mut errs = ErrorList::new();
    let kind = binding.pointer("/target/kind").and_then(Value::as_str).unwrap_or("");
    if !kind.is_empty() && kind != "Node" {
        errs.push(FieldError::not_supported(&Path::new("target").child("kind"), kind, &["Node", "<empty>"]));
    }
    if binding.pointer("/target/name").and_then(Value::as_str).unwrap_or("").is_empty() {
        errs.push(FieldError::required(&Path::new("target").child("name"), ""));
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.into_invalid("", "Binding", name))
    }
}

/// `PodScheduled=True`, as the binding registry sets it.
fn set_scheduled_condition(pod: &mut Value) {
    if !pod.get("status").is_some_and(Value::is_object) {
        pod["status"] = json!({});
    }
    if !pod["status"].get("conditions").is_some_and(Value::is_array) {
        pod["status"]["conditions"] = json!([]);
    }
    let conditions = pod["status"]["conditions"].as_array_mut().expect("an array");
    let now = meta::now();
    match conditions.iter_mut().find(|c| c.get("type").and_then(Value::as_str) == Some("PodScheduled")) {
        Some(c) => {
            if c.get("status").and_then(Value::as_str) != Some("True") {
                c["lastTransitionTime"] = json!(now);
            }
            c["status"] = json!("True");
            if let Some(m) = c.as_object_mut() {
                m.remove("reason");
                m.remove("message");
            }
        }
        None => conditions
            .push(json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": now})),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bindings_need_a_node_target() {
        let e = validate(&json!({"target": {"kind": "Pod", "name": ""}}), "p").unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("target.kind: Unsupported value: \"Pod\"") && msg.contains("target.name: Required value"),
            "{msg}"
        );
        assert!(validate(&json!({"target": {"name": "n1"}}), "p").is_ok());
        let mut pod =
            json!({"status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}});
        set_scheduled_condition(&mut pod);
        assert_eq!(pod["status"]["conditions"][0]["status"], "True");
        assert!(pod["status"]["conditions"][0].get("reason").is_none());
    }
}
