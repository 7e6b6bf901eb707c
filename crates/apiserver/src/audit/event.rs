//! audit.k8s.io/v1 `Event`, serialized field for field as upstream's
//! (`k8s.io/apiserver/pkg/apis/audit/v1/types.go`): empty optional fields
//! are left out, timestamps are `MicroTime` (RFC 3339, UTC, six fractional
//! digits).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::policy::{Level, Stage};

/// The user of an event (authentication.k8s.io/v1 `UserInfo`).
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct EventUser {
    /// The user name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub username: String,
    /// Its uid.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Its groups.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// Extra attributes.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

impl From<&crate::authn::UserInfo> for EventUser {
    fn from(u: &crate::authn::UserInfo) -> EventUser {
        EventUser { username: u.name.clone(), uid: u.uid.clone(), groups: u.groups.clone(), extra: u.extra.clone() }
    }
}

/// What object a request is about (audit `ObjectReference`).
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    /// Resource (`pods`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource: String,
    /// Namespace.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The object's uid (from a request body that carries one).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// API group (`""`: core).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    /// API version.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The object's resourceVersion (from a request body that carries one).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// Subresource.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subresource: String,
}

/// The response status of an event: a meta/v1 `Status` (its `metadata`
/// is always there, empty, as Go serializes it).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct ResponseStatus {
    /// Always `{}`.
    pub metadata: serde_json::Map<String, Value>,
    /// `Success` or `Failure` when the response was a Status.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// The Status message.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The Status reason.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The Status details.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// The HTTP status code.
    #[serde(skip_serializing_if = "is_zero")]
    pub code: u16,
}

fn is_zero(c: &u16) -> bool {
    *c == 0
}

impl ResponseStatus {
    /// Just the code (what the response writer records).
    pub fn code(code: u16) -> ResponseStatus {
        ResponseStatus { code, ..Default::default() }
    }

    /// From a Status object the handler answered with (upstream's
    /// `LogResponseObject` for `*metav1.Status`).
    pub fn from_status(status: &Value, code: u16) -> ResponseStatus {
        let s = |k: &str| status.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
        ResponseStatus {
            metadata: Default::default(),
            status: s("status"),
            message: s("message"),
            reason: s("reason"),
            details: status.get("details").cloned(),
            code: status.get("code").and_then(Value::as_u64).map(|c| c as u16).unwrap_or(code),
        }
    }
}

/// One audit event.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// `Event`.
    pub kind: &'static str,
    /// `audit.k8s.io/v1`.
    pub api_version: &'static str,
    /// The policy's level for the request.
    pub level: &'static str,
    /// The request's id (also the `Audit-ID` response header).
    #[serde(rename = "auditID")]
    pub audit_id: String,
    /// The stage this event records.
    pub stage: &'static str,
    /// Path and query as sent.
    #[serde(rename = "requestURI")]
    pub request_uri: String,
    /// The verb (`get`, `list`, `watch`, `create`, …; lower-case method for
    /// non-resource requests).
    pub verb: String,
    /// The authenticated user.
    pub user: EventUser,
    /// The user impersonated, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub impersonated_user: Option<EventUser>,
    /// Client addresses (`X-Forwarded-For`, `X-Real-Ip`, then the peer).
    #[serde(rename = "sourceIPs", skip_serializing_if = "Vec::is_empty")]
    pub source_ips: Vec<String>,
    /// The `User-Agent` (cut at 1024 bytes).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub user_agent: String,
    /// The object addressed (resource requests).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_ref: Option<ObjectRef>,
    /// The response status (from `ResponseStarted` on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_status: Option<ResponseStatus>,
    /// The request body (levels Request and RequestResponse).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_object: Option<Value>,
    /// The response body (level RequestResponse).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_object: Option<Value>,
    /// When the request arrived.
    pub request_received_timestamp: String,
    /// When this stage was reached.
    pub stage_timestamp: String,
    /// Annotations (authorization decision, admission plugins, …).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl Event {
    /// An event of `level` for a request received at `received`.
    pub fn new(level: Level, audit_id: String, received: jiff::Timestamp) -> Event {
        Event {
            kind: "Event",
            api_version: "audit.k8s.io/v1",
            level: level.as_str(),
            audit_id,
            stage: Stage::RequestReceived.as_str(),
            request_uri: String::new(),
            verb: String::new(),
            user: EventUser::default(),
            impersonated_user: None,
            source_ips: Vec::new(),
            user_agent: String::new(),
            object_ref: None,
            response_status: None,
            request_object: None,
            response_object: None,
            request_received_timestamp: micro_time(received),
            stage_timestamp: micro_time(received),
            annotations: BTreeMap::new(),
        }
    }
}

/// meta/v1 `MicroTime`: `2006-01-02T15:04:05.000000Z` in UTC.
pub fn micro_time(t: jiff::Timestamp) -> String {
    format!("{}.{:06}Z", t.strftime("%Y-%m-%dT%H:%M:%S"), t.subsec_microsecond())
}

/// Removes `metadata.managedFields` from an object, the items of a list
/// and the row objects of a Table (upstream's `copyWithoutManagedFields`).
pub fn strip_managed_fields(obj: &mut Value) {
    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
    if let Some(items) = obj.get_mut("items").and_then(Value::as_array_mut) {
        for item in items {
            if let Some(m) = item.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("managedFields");
            }
        }
    }
    if let Some(rows) = obj.get_mut("rows").and_then(Value::as_array_mut) {
        for row in rows {
            if let Some(m) = row.pointer_mut("/object/metadata").and_then(Value::as_object_mut) {
                m.remove("managedFields");
            }
        }
    }
}
