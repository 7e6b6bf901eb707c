//! AdmissionReview `admission.k8s.io/v1` (upstream
//! `pkg/admission/plugin/webhook/request/admissionreview.go`): the request
//! a webhook receives (also CEL's `request` variable) and the checks on
//! its response (`VerifyAdmissionResponse`).

use base64::Engine;
use serde_json::{json, Map, Value};

use super::super::{Attributes, Operation};
use super::matcher::{request_match, Matched};

/// The `AdmissionRequest` of a write: `uid`, the matched `kind`/`resource`
/// and the request's own `requestKind`/`requestResource`, `subResource`,
/// `name`, `namespace`, `operation`, `userInfo`, `object`, `oldObject`,
/// `dryRun` and the operation's `options`. `object` and `old` are in the
/// matched version ([`super::matcher::views`]); `admitted` is the object
/// as admitted, which names the request's own kind.
pub fn admission_request(
    uid: &str,
    attrs: &Attributes<'_>,
    matched: &Matched,
    admitted: Option<&Value>,
    object: Option<&Value>,
    old: Option<&Value>,
) -> Value {
    let own = request_match(attrs, admitted);
    let gvk = |m: &Matched| json!({"group": m.kind.group, "version": m.kind.version, "kind": m.kind.kind});
    let gvr = |m: &Matched| json!({"group": m.resource.group, "version": m.resource.version, "resource": m.resource.resource});
    let mut user = Map::new();
    user.insert("username".into(), json!(attrs.user.name));
    if !attrs.user.uid.is_empty() {
        user.insert("uid".into(), json!(attrs.user.uid));
    }
    if !attrs.user.groups.is_empty() {
        user.insert("groups".into(), json!(attrs.user.groups));
    }
    if !attrs.user.extra.is_empty() {
        user.insert("extra".into(), json!(attrs.user.extra));
    }
    let options_kind = match attrs.operation {
        Operation::Create => "CreateOptions",
        Operation::Update => "UpdateOptions",
        Operation::Delete => "DeleteOptions",
        Operation::Connect => "",
    };
    let mut options = Value::Null;
    if !options_kind.is_empty() {
        options = json!({"kind": options_kind, "apiVersion": "meta.k8s.io/v1"});
        if attrs.dry_run {
            options["dryRun"] = json!(["All"]);
        }
    }
    let mut req = json!({
        "uid": uid,
        "kind": gvk(matched),
        "resource": gvr(matched),
        "requestKind": gvk(&own),
        "requestResource": gvr(&own),
        "name": attrs.name,
        "namespace": attrs.namespace,
        "operation": attrs.operation.as_str(),
        "userInfo": Value::Object(user),
        "object": object.cloned().unwrap_or(Value::Null),
        "oldObject": old.cloned().unwrap_or(Value::Null),
        "dryRun": attrs.dry_run,
        "options": options,
    });
    let m = req.as_object_mut().expect("an object");
    if !attrs.subresource.is_empty() {
        m.insert("subResource".into(), json!(attrs.subresource));
        m.insert("requestSubResource".into(), json!(attrs.subresource));
    }
    if attrs.name.is_empty() {
        m.remove("name");
    }
    if attrs.namespace.is_empty() {
        m.remove("namespace");
    }
    req
}

/// The review sent to a webhook.
pub fn review(request: Value) -> Value {
    json!({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": request})
}

/// A webhook's verified answer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Response {
    /// Whether the request may proceed.
    pub allowed: bool,
    /// The Status given with a denial.
    pub result: Option<Value>,
    /// A JSON patch (mutating webhooks only), decoded from base64.
    pub patch: Option<Vec<u8>>,
    /// `JSONPatch` when a patch is given.
    pub patch_type: Option<String>,
    /// Warnings for the client.
    pub warnings: Vec<String>,
    /// Audit annotations (keys get the webhook's name as prefix).
    pub audit_annotations: Vec<(String, String)>,
}

/// Upstream's `VerifyAdmissionResponse` for v1: a response with our `uid`,
/// the v1 kind, and a patch (with its type) only from mutating webhooks.
pub fn verify(uid: &str, mutating: bool, answer: &Value) -> Result<Response, String> {
    let r = answer.get("response").filter(|r| r.is_object()).ok_or("webhook response was absent")?;
    let got_uid = r.get("uid").and_then(Value::as_str).unwrap_or("");
    if got_uid != uid {
        return Err(format!("expected response.uid={uid:?}, got {got_uid:?}"));
    }
    let api_version = answer.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = answer.get("kind").and_then(Value::as_str).unwrap_or("");
    if api_version != "admission.k8s.io/v1" || kind != "AdmissionReview" {
        let (g, v) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        return Err(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {g}/{v}, Kind={kind}"
        ));
    }
    let patch_b64 = r.get("patch").and_then(Value::as_str).unwrap_or("");
    let patch_type = r.get("patchType").and_then(Value::as_str);
    if mutating {
        if !patch_b64.is_empty() && patch_type.is_none() {
            return Err("webhook returned response.patch but not response.patchType".into());
        }
        if patch_b64.is_empty() && patch_type.is_some() {
            return Err("webhook returned response.patchType but not response.patch".into());
        }
        if patch_type == Some("") {
            return Err("webhook returned invalid response.patchType of \"\"".into());
        }
    } else {
        if !patch_b64.is_empty() {
            return Err("validating webhook may not return response.patch".into());
        }
        if patch_type.is_some() {
            return Err("validating webhook may not return response.patchType".into());
        }
    }
    let patch = if patch_b64.is_empty() {
        None
    } else {
        Some(base64::engine::general_purpose::STANDARD.decode(patch_b64).map_err(|e| e.to_string())?)
    };
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(String::from).collect()
    };
    let audit_annotations = r
        .get("auditAnnotations")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect();
    Ok(Response {
        allowed: r.get("allowed").and_then(Value::as_bool).unwrap_or(false),
        result: r.get("status").filter(|s| !s.is_null()).cloned(),
        patch,
        patch_type: patch_type.map(String::from),
        warnings: strings(r.get("warnings")),
        audit_annotations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_are_checked_as_upstream() {
        let ok = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": "u1", "allowed": true, "warnings": ["w"]}});
        let r = verify("u1", false, &ok).unwrap();
        assert!(r.allowed);
        assert_eq!(r.warnings, ["w"]);
        assert_eq!(verify("u2", false, &ok).unwrap_err(), "expected response.uid=\"u2\", got \"u1\"");
        assert_eq!(verify("u1", false, &json!({})).unwrap_err(), "webhook response was absent");
        let patched = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": "u1", "allowed": true, "patch": "W10=", "patchType": "JSONPatch"}});
        assert_eq!(verify("u1", false, &patched).unwrap_err(), "validating webhook may not return response.patch");
        assert_eq!(verify("u1", true, &patched).unwrap().patch.unwrap(), b"[]");
        let untyped = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": "u1", "allowed": true, "patch": "W10="}});
        assert_eq!(
            verify("u1", true, &untyped).unwrap_err(),
            "webhook returned response.patch but not response.patchType"
        );
    }
}
