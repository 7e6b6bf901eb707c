//! Typed API errors and their `Status` form (`meta/v1` Status).
//!
//! Code branches on the variant (`NotFound`, `Conflict`, `Expired`,
//! `Invalid { causes }`, …); the API server turns an [`ApiError`] into an
//! HTTP response in exactly one place, using [`ApiError::code`] and
//! [`ApiError::to_status`]. Messages follow upstream's
//! `k8s.io/apimachinery/pkg/api/errors` word for word, because kubectl shows
//! them to users as `Error from server (<reason>): <message>`.

use serde::Serialize;
use serde_json::{json, Value};

/// A group and plural resource name, as Status `details` carry them
/// (`details.group`, `details.kind` = the plural resource).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct GroupResource {
    /// `""` for core.
    pub group: String,
    /// Plural resource name (`pods`), or a subresource path (`pods/status`).
    pub resource: String,
}

impl GroupResource {
    /// Builds one from a group and plural name.
    pub fn new(group: &str, resource: &str) -> Self {
        GroupResource { group: group.to_string(), resource: resource.to_string() }
    }
}

impl std::fmt::Display for GroupResource {
    /// `pods` for core, `deployments.apps` otherwise.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

/// One cause of an error (`StatusCause`): for validation, the field path
/// (`spec.containers[0].image`), the cause type (`FieldValueRequired`, …)
/// and the message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StatusCause {
    /// `FieldValueRequired`, `FieldValueInvalid`, `FieldValueNotSupported`,
    /// `FieldValueDuplicate`, `FieldValueForbidden`, `FieldValueTooLong`,
    /// `FieldValueTooMany`, `FieldValueTypeInvalid`, `FieldManagerConflict`, …
    pub reason: String,
    /// The full message of this cause as upstream's field.Error prints it,
    /// e.g. `Required value` or `Invalid value: "x": must be no more than 63 characters`.
    pub message: String,
    /// The field path, e.g. `metadata.name`.
    pub field: String,
}

/// An error of an API request, one variant per upstream `StatusReason` that
/// callers branch on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// 400 BadRequest: malformed body, bad selector, strict decoding error.
    #[error("{0}")]
    BadRequest(String),
    /// 401 Unauthorized.
    #[error("Unauthorized")]
    Unauthorized,
    /// 403 Forbidden, with upstream's full message (e.g. `pods is forbidden:
    /// User "bob" cannot list resource "pods" in API group "" in the namespace "default"`).
    #[error("{message}")]
    Forbidden { resource: GroupResource, name: String, message: String },
    /// 404 NotFound of an object: `pods "nope" not found`.
    #[error("{resource} \"{name}\" not found")]
    NotFound { resource: GroupResource, name: String },
    /// 404 for a path no resource serves.
    #[error("the server could not find the requested resource")]
    PathNotFound,
    /// 405 MethodNotAllowed: `<verb> is not supported on resources of kind "<kind>"`-style message.
    #[error("{0}")]
    MethodNotSupported(String),
    /// 406 NotAcceptable: the Accept header names no media type rkube serves.
    #[error("{0}")]
    NotAcceptable(String),
    /// 409 AlreadyExists: `pods "nginx" already exists`.
    #[error("{resource} \"{name}\" already exists")]
    AlreadyExists { resource: GroupResource, name: String },
    /// 409 Conflict: optimistic-concurrency failure or an SSA conflict;
    /// `message` is the reason after `Operation cannot be fulfilled on <resource> "<name>": `.
    #[error("Operation cannot be fulfilled on {resource} \"{name}\": {message}")]
    Conflict { resource: GroupResource, name: String, message: String, causes: Vec<StatusCause> },
    /// 409 Conflict of a server-side apply (upstream's `NewApplyConflict`):
    /// the message as is, details carrying only the `FieldManagerConflict`
    /// causes.
    #[error("{message}")]
    ApplyConflict { message: String, causes: Vec<StatusCause> },
    /// 410 Expired: too-old resourceVersion or continue token.
    #[error("{0}")]
    Expired(String),
    /// 413 RequestEntityTooLarge.
    #[error("{0}")]
    RequestEntityTooLarge(String),
    /// 415 UnsupportedMediaType.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// 422 Invalid: `<Kind>[.<group>] "<name>" is invalid: <causes joined>`
    /// (the kind qualified by its group as `schema.GroupKind` prints it:
    /// `Pod`, `Deployment.apps`).
    #[error("{}{}{} \"{}\" is invalid: {}", kind, if group.is_empty() { "" } else { "." }, group, name, join_causes(causes))]
    Invalid { group: String, kind: String, name: String, causes: Vec<StatusCause> },
    /// 429 TooManyRequests, with `Retry-After` seconds.
    #[error("{message}")]
    TooManyRequests { message: String, retry_after_seconds: u32 },
    /// 429 TooManyRequests without a retry time and with causes (an
    /// eviction a PodDisruptionBudget blocks: cause `DisruptionBudget`).
    #[error("{message}")]
    TooManyRequestsWithCauses { message: String, causes: Vec<StatusCause> },
    /// 500 InternalError: `Internal error occurred: <message>`.
    #[error("Internal error occurred: {0}")]
    Internal(String),
    /// 503 ServiceUnavailable.
    #[error("{0}")]
    ServiceUnavailable(String),
    /// 504 Timeout for a read at a resourceVersion the storage has not
    /// reached (upstream's `NewTooLargeResourceVersionError`: message
    /// `Timeout: Too large resource version: R, current: C`, a
    /// `ResourceVersionTooLarge` cause, retry after 1 s), which client-go's
    /// `IsTooLargeResourceVersion` recognises.
    #[error("Timeout: Too large resource version: {requested}, current: {current}")]
    ResourceVersionTooLarge { requested: i64, current: i64 },
    /// A Status no other variant models, with its own code, reason and
    /// message: what upstream's `NewGenericServerResponse` builds (e.g. 422
    /// `Invalid` "the server rejected our request due to an error in our
    /// request" for a JSON patch that does not apply; details empty), or
    /// what a plain Go error becomes in the handler (500 with an empty
    /// reason, which is then omitted, and the error text as message).
    #[error("{message}")]
    Generic { code: u16, reason: &'static str, message: String },
    /// A whole Status decided elsewhere, answered as given: an admission
    /// webhook's denial (its code, reason, message and details), or a
    /// ValidatingAdmissionPolicy denial (reason Invalid/Forbidden/…, the
    /// `<resource> "<name>"` details and one cause with the message).
    #[error("{message}")]
    Status { code: u16, reason: &'static str, message: String, details: Value },
}

/// The message of upstream's `ErrorList.ToAggregate()`: each distinct
/// error once, in order; one error alone, several in brackets. (The
/// `causes` of the Status keep every error, duplicates included.)
fn join_causes(causes: &[StatusCause]) -> String {
    let mut parts: Vec<String> = Vec::with_capacity(causes.len());
    for c in causes {
        let part = if c.field.is_empty() { c.message.clone() } else { format!("{}: {}", c.field, c.message) };
        if !parts.contains(&part) {
            parts.push(part);
        }
    }
    if parts.len() == 1 {
        parts[0].clone()
    } else {
        format!("[{}]", parts.join(", "))
    }
}

impl ApiError {
    /// The HTTP status code (also the Status body's `code`).
    pub fn code(&self) -> u16 {
        match self {
            ApiError::BadRequest(_) => 400,
            ApiError::Unauthorized => 401,
            ApiError::Forbidden { .. } => 403,
            ApiError::NotFound { .. } | ApiError::PathNotFound => 404,
            ApiError::MethodNotSupported(_) => 405,
            ApiError::NotAcceptable(_) => 406,
            ApiError::AlreadyExists { .. } | ApiError::Conflict { .. } | ApiError::ApplyConflict { .. } => 409,
            ApiError::Expired(_) => 410,
            ApiError::RequestEntityTooLarge(_) => 413,
            ApiError::UnsupportedMediaType(_) => 415,
            ApiError::Invalid { .. } => 422,
            ApiError::TooManyRequests { .. } | ApiError::TooManyRequestsWithCauses { .. } => 429,
            ApiError::Internal(_) => 500,
            ApiError::ServiceUnavailable(_) => 503,
            ApiError::ResourceVersionTooLarge { .. } => 504,
            ApiError::Generic { code, .. } => *code,
            ApiError::Status { code, .. } => *code,
        }
    }

    /// The `StatusReason`.
    pub fn reason(&self) -> &'static str {
        match self {
            ApiError::BadRequest(_) => "BadRequest",
            ApiError::Unauthorized => "Unauthorized",
            ApiError::Forbidden { .. } => "Forbidden",
            ApiError::NotFound { .. } | ApiError::PathNotFound => "NotFound",
            ApiError::MethodNotSupported(_) => "MethodNotAllowed",
            ApiError::NotAcceptable(_) => "NotAcceptable",
            ApiError::AlreadyExists { .. } => "AlreadyExists",
            ApiError::Conflict { .. } | ApiError::ApplyConflict { .. } => "Conflict",
            ApiError::Expired(_) => "Expired",
            ApiError::RequestEntityTooLarge(_) => "RequestEntityTooLarge",
            ApiError::UnsupportedMediaType(_) => "UnsupportedMediaType",
            ApiError::Invalid { .. } => "Invalid",
            ApiError::TooManyRequests { .. } | ApiError::TooManyRequestsWithCauses { .. } => "TooManyRequests",
            ApiError::Internal(_) => "InternalError",
            ApiError::ServiceUnavailable(_) => "ServiceUnavailable",
            ApiError::ResourceVersionTooLarge { .. } => "Timeout",
            ApiError::Generic { reason, .. } => reason,
            ApiError::Status { reason, .. } => reason,
        }
    }

    /// The `Status` object clients decode. `details` is always present
    /// (kubectl debug dereferences it).
    pub fn to_status(&self) -> Value {
        let mut details = serde_json::Map::new();
        let mut put = |k: &str, v: Value| {
            details.insert(k.to_string(), v);
        };
        match self {
            ApiError::NotFound { resource, name }
            | ApiError::AlreadyExists { resource, name }
            | ApiError::Forbidden { resource, name, .. } => {
                put("name", json!(name));
                put("group", json!(resource.group));
                put("kind", json!(resource.resource));
            }
            ApiError::Conflict { resource, name, causes, .. } => {
                put("name", json!(name));
                put("group", json!(resource.group));
                put("kind", json!(resource.resource));
                if !causes.is_empty() {
                    put("causes", json!(causes));
                }
            }
            ApiError::ApplyConflict { causes, .. } => {
                put("causes", json!(causes));
            }
            ApiError::Invalid { group, kind, name, causes } => {
                put("name", json!(name));
                put("group", json!(group));
                put("kind", json!(kind));
                put("causes", json!(causes));
            }
            ApiError::ResourceVersionTooLarge { .. } => {
                put("causes", json!([{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]));
                put("retryAfterSeconds", json!(1));
            }
            ApiError::TooManyRequests { retry_after_seconds, .. } => {
                put("retryAfterSeconds", json!(retry_after_seconds));
            }
            ApiError::TooManyRequestsWithCauses { causes, .. } => {
                put("causes", json!(causes));
            }
            ApiError::Status { details: given, .. } => {
                if let Some(given) = given.as_object() {
                    details.extend(given.clone());
                }
            }
            _ => {}
        }
        // Upstream omits empty group/name strings.
        details.retain(|_, v| v != &json!(""));
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.to_string(),
            "reason": self.reason(),
            "details": details,
            "code": self.code(),
        });
        // An empty reason (StatusReasonUnknown) is omitted, as upstream's omitempty does.
        if self.reason().is_empty() {
            status.as_object_mut().map(|m| m.remove("reason"));
        }
        status
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_has_upstream_message_and_details() {
        let e = ApiError::NotFound { resource: GroupResource::new("", "pods"), name: "nope".into() };
        let s = e.to_status();
        assert_eq!(s["message"], "pods \"nope\" not found");
        assert_eq!(s["reason"], "NotFound");
        assert_eq!(s["code"], 404);
        assert_eq!(s["details"], json!({"name": "nope", "kind": "pods"}));
    }

    #[test]
    fn conflict_message_names_the_group_resource() {
        let e = ApiError::Conflict {
            resource: GroupResource::new("apps", "deployments"),
            name: "web".into(),
            message: "the object has been modified; please apply your changes to the latest version and try again"
                .into(),
            causes: vec![],
        };
        assert_eq!(
            e.to_string(),
            "Operation cannot be fulfilled on deployments.apps \"web\": the object has been modified; please apply your changes to the latest version and try again"
        );
        assert_eq!(e.code(), 409);
    }

    #[test]
    fn invalid_message_names_each_distinct_error_once_but_causes_keep_all() {
        let cause = |field: &str| StatusCause {
            reason: "FieldValueRequired".into(),
            message: "Required value".into(),
            field: field.into(),
        };
        let e = ApiError::Invalid {
            group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name: "r".into(),
            causes: vec![cause("rules[0].verbs"), cause("rules[0].verbs")],
        };
        assert_eq!(e.to_string(), "Role.rbac.authorization.k8s.io \"r\" is invalid: rules[0].verbs: Required value");
        assert_eq!(e.to_status()["details"]["causes"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn too_large_resource_version_is_a_timeout_clients_recognise() {
        let s = ApiError::ResourceVersionTooLarge { requested: 99, current: 7 }.to_status();
        assert_eq!(s["code"], 504);
        assert_eq!(s["reason"], "Timeout");
        assert_eq!(s["message"], "Timeout: Too large resource version: 99, current: 7");
        assert_eq!(
            s["details"],
            json!({"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                   "retryAfterSeconds": 1})
        );
    }

    #[test]
    fn invalid_lists_causes_like_upstream() {
        let one = ApiError::Invalid {
            group: "".into(),
            kind: "Pod".into(),
            name: "x".into(),
            causes: vec![StatusCause {
                reason: "FieldValueRequired".into(),
                message: "Required value".into(),
                field: "spec.containers[0].image".into(),
            }],
        };
        assert_eq!(one.to_string(), "Pod \"x\" is invalid: spec.containers[0].image: Required value");
        let s = one.to_status();
        assert_eq!(s["details"]["causes"][0]["field"], "spec.containers[0].image");
        assert_eq!(s["details"]["kind"], "Pod");
        assert_eq!(s["code"], 422);
    }

    #[test]
    fn details_is_present_even_when_empty() {
        let s = ApiError::PathNotFound.to_status();
        assert_eq!(s["details"], json!({}));
        assert_eq!(s["message"], "the server could not find the requested resource");
    }
}
