//! The authentication and authorization APIs and the service-account token
//! subresource — create-only requests that are answered, never stored:
//!
//! - [`review`]: `authentication.k8s.io/v1` `SelfSubjectReview` (who am I)
//!   and `TokenReview` (is this token valid, whose is it);
//! - [`access`]: `authorization.k8s.io/v1` `SelfSubjectAccessReview`,
//!   `SubjectAccessReview`, `LocalSubjectAccessReview` and
//!   `SelfSubjectRulesReview`, decided by [`crate::authz`];
//! - [`token`]: `serviceaccounts/{name}/token` (`TokenRequest`).
//!
//! Every request passes the common checks here (registry, scope, verb →
//! 404 / 405 as upstream, `CreateOptions` → 422 on bad `dryRun` /
//! `fieldValidation`), then its body is decoded (JSON, YAML or protobuf,
//! as kubectl's typed clients send) and the answer is 201 Created with the
//! request object and its `status`. `dryRun` changes nothing: nothing is
//! stored either way.

use axum::body::Body;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use rkube_apimachinery::registry::ResourceInfo;
use rkube_apimachinery::{protobuf, ApiError};
use serde_json::Value;

use super::body::Decoded;
use super::negotiate::BodyFormat;
use super::query::{FieldValidation, Query};
use super::request::{RequestInfo, Verb};
use super::{body, negotiate, response, Api, METHOD_NOT_ALLOWED};
use crate::authn::UserInfo;

pub mod access;
pub mod review;
pub mod token;

/// Whether `request` is one this module serves.
pub fn serves(request: &RequestInfo) -> bool {
    matches!(request.group.as_str(), "authentication.k8s.io" | "authorization.k8s.io")
        || (request.group.is_empty() && request.resource == "serviceaccounts" && request.subresource == "token")
}

/// A decoded review request.
pub struct Review<'a> {
    /// The API.
    pub api: &'a Api,
    /// The parsed request.
    pub request: &'a RequestInfo,
    /// The decoded body (kind and apiVersion set).
    pub object: Value,
    /// The authenticated user (`None` only for requests that bypassed
    /// authentication, which the routes do not allow).
    pub user: Option<UserInfo>,
    /// The admission of a TokenRequest (a CREATE of `serviceaccounts/token`):
    /// its mutating phase ran before the handler, which runs the
    /// validating phase after the request's static validation, as
    /// upstream's `TokenREST`. `None` for the reviews, which are not admitted.
    pub admission: Option<std::sync::Arc<crate::admission::RequestAdmission>>,
}

impl Review<'_> {
    /// The requesting user; upstream's 400 when there is none.
    pub fn user(&self) -> Result<&UserInfo, ApiError> {
        self.user.as_ref().ok_or_else(|| ApiError::BadRequest("no user present on request".into()))
    }
}

/// Serves one request of [`serves`].
pub async fn handle(
    api: &Api,
    request: &RequestInfo,
    query: Query,
    headers: HeaderMap,
    user: Option<UserInfo>,
    body: Body,
) -> Result<Response, ApiError> {
    let info =
        api.registry().lookup(&request.group, &request.version, &request.resource).ok_or(ApiError::PathNotFound)?;
    let verb = request.verb.ok_or_else(|| ApiError::MethodNotSupported(METHOD_NOT_ALLOWED.into()))?;
    super::check_scope(info, request, verb)?;
    // The object the body carries: the resource's kind, or TokenRequest.
    let mut body_info = info.clone();
    let allowed = if request.subresource.is_empty() {
        info.allows(verb.as_str()) && request.name.is_empty()
    } else {
        let sub = info.subresource(&request.subresource).ok_or(ApiError::PathNotFound)?;
        body_info.group = sub.kind.group;
        body_info.version = sub.kind.version;
        body_info.kind = sub.kind.kind;
        sub.verbs.contains(&verb.as_str())
    };
    if !allowed || verb != Verb::Create {
        return Err(ApiError::MethodNotSupported(METHOD_NOT_ALLOWED.into()));
    }
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let format = negotiate::output_format(accept, query.get("includeObject"))?;
    let params = super::query::write_params(&query, "CreateOptions")?;
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
    let body_format = negotiate::body_format(content_type)?;
    tracing::debug!(
        component = crate::COMPONENT,
        kind = body_info.kind,
        content_type = content_type.unwrap_or(""),
        dry_run = params.dry_run,
        "review request"
    );
    let bytes = body::read(body).await?;
    let decoded = decode(&body_info, &bytes, body_format, params.field_validation)?;
    let mut object = decoded.object;
    let admission = if (info.group, info.plural) == ("", "serviceaccounts") {
        let admission = std::sync::Arc::new(crate::admission::RequestAdmission::new(
            api.admission.clone(),
            user.clone().unwrap_or_else(UserInfo::anonymous),
            info.clone(),
            &request.subresource,
            &request.namespace,
            params.dry_run,
        ));
        admission.mutate_create(&mut object, &request.name).await?;
        Some(admission)
    } else {
        None
    };
    let review = Review { api, request, object, user, admission: admission.clone() };
    let answer = match (info.group, info.plural) {
        ("", "serviceaccounts") => token::create(&review).await?,
        ("authentication.k8s.io", "selfsubjectreviews") => review::self_subject_review(&review)?,
        ("authentication.k8s.io", "tokenreviews") => review::token_review(&review).await?,
        ("authorization.k8s.io", "selfsubjectrulesreviews") => access::self_subject_rules_review(&review)?,
        ("authorization.k8s.io", _) => access::access_review(&review, info.kind)?,
        _ => return Err(ApiError::PathNotFound),
    };
    let mut warnings = decoded.warnings;
    warnings.extend(admission.map(|a| a.warnings()).unwrap_or_default());
    Ok(response::reply(StatusCode::CREATED, answer, format, &body_info, &warnings))
}

/// Decodes the body like [`body::decode`], but without the request's
/// `status`: every one of these APIs ignores and overwrites it (upstream's
/// TokenRequest clears it), and kubectl's protobuf bodies carry zero
/// times there (`status.expirationTimestamp`) that are `null` in JSON.
fn decode(
    info: &ResourceInfo,
    bytes: &[u8],
    format: BodyFormat,
    validation: FieldValidation,
) -> Result<Decoded, ApiError> {
    let parsed: Option<(Value, Vec<String>)> = match format {
        BodyFormat::Json => serde_json::from_slice(bytes)
            .ok()
            .map(|v| (v, rkube_apimachinery::typed::duplicate_fields(bytes).unwrap_or_default())),
        BodyFormat::Yaml => serde_yaml::from_slice(bytes).ok().map(|v| (v, Vec::new())),
        BodyFormat::Protobuf => protobuf_value(info, bytes).map(|v| (v, Vec::new())),
    };
    match parsed {
        Some((mut value, duplicates)) if value.is_object() => {
            if let Some(map) = value.as_object_mut() {
                map.remove("status");
            }
            body::decode_value(info, value, duplicates, validation)
        }
        // Malformed: the common decoder words the error as upstream.
        _ => body::decode(info, bytes, format, validation),
    }
}

/// A protobuf body of `info`'s kind as JSON; `None` when it is not one.
fn protobuf_value(info: &ResourceInfo, bytes: &[u8]) -> Option<Value> {
    let envelope = protobuf::envelope(bytes).ok()?;
    let want = info.api_version();
    let api_version = if envelope.api_version.is_empty() { want.clone() } else { envelope.api_version };
    let kind = if envelope.kind.is_empty() { info.kind.to_string() } else { envelope.kind };
    if api_version != want || kind != info.kind {
        return None;
    }
    protobuf::decode_object(&api_version, &kind, envelope.raw)?.ok()
}

/// `metadata.creationTimestamp: null` (a zero `metav1.Time`) unless set.
pub(crate) fn null_creation_timestamp(object: &mut Value) {
    if !object.get("metadata").is_some_and(Value::is_object) {
        object["metadata"] = serde_json::json!({});
    }
    let meta = &mut object["metadata"];
    if meta.get("creationTimestamp").is_none() {
        meta["creationTimestamp"] = Value::Null;
    }
}

/// The object's metadata without what upstream's "must be empty" checks
/// ignore (`managedFields`, and `namespace` when `drop_namespace`), with
/// null and zero values dropped: what is left makes the metadata non-empty.
pub(crate) fn metadata_rest(object: &Value, drop_namespace: bool) -> serde_json::Map<String, Value> {
    let mut meta = object.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
    meta.remove("managedFields");
    if drop_namespace {
        meta.remove("namespace");
    }
    meta.retain(|_, v| !is_empty_value(v));
    meta
}

fn is_empty_value(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(n) => n.as_i64() == Some(0),
        Value::Bool(b) => !b,
    }
}
