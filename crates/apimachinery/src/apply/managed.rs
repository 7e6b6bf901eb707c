//! `metadata.managedFields` entries (`ManagedFieldsEntry`): decoding,
//! encoding in upstream's order, and manager identity.

use serde_json::{json, Map, Value};

use super::fieldset::FieldSet;

/// `operation` of an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Operation {
    /// Server-side apply.
    Apply,
    /// Any other write (create, update, patch).
    Update,
}

impl Operation {
    /// `Apply` / `Update`.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// Who writes: a field manager with its operation, API version and
/// subresource (upstream's manager identifier).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManagerId {
    /// `manager` (the `fieldManager` parameter or the user-agent prefix).
    pub manager: String,
    /// `Apply` or `Update`.
    pub operation: Operation,
    /// The API version of the request (`apps/v1`).
    pub api_version: String,
    /// `status`, `scale`, … or empty for the main resource.
    pub subresource: String,
}

impl ManagerId {
    /// An `Update` manager.
    pub fn update(manager: &str, api_version: &str, subresource: &str) -> ManagerId {
        ManagerId {
            manager: manager.to_string(),
            operation: Operation::Update,
            api_version: api_version.to_string(),
            subresource: subresource.to_string(),
        }
    }

    /// Whether `entry` belongs to this manager. As upstream's
    /// `BuildManagerIdentifier`, appliers are one manager across API
    /// versions; updaters are one per version.
    pub fn owns(&self, entry: &ManagedEntry) -> bool {
        entry.manager == self.manager
            && entry.operation == self.operation
            && entry.subresource == self.subresource
            && (self.operation == Operation::Apply || entry.api_version == self.api_version)
    }
}

/// One `ManagedFieldsEntry`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManagedEntry {
    /// `manager`.
    pub manager: String,
    /// `operation`.
    pub operation: Operation,
    /// `apiVersion`.
    pub api_version: String,
    /// `time` (RFC 3339, seconds).
    pub time: Option<String>,
    /// `subresource` (empty: omitted).
    pub subresource: String,
    /// `fieldsV1`.
    pub fields: FieldSet,
}

impl ManagedEntry {
    /// A new entry for `id`.
    pub fn new(id: &ManagerId, fields: FieldSet, time: Option<String>) -> ManagedEntry {
        ManagedEntry {
            manager: id.manager.clone(),
            operation: id.operation,
            api_version: id.api_version.clone(),
            time,
            subresource: id.subresource.clone(),
            fields,
        }
    }

    /// The entry's JSON, fields in upstream's order.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        if !self.manager.is_empty() {
            m.insert("manager".into(), json!(self.manager));
        }
        m.insert("operation".into(), json!(self.operation.as_str()));
        if !self.api_version.is_empty() {
            m.insert("apiVersion".into(), json!(self.api_version));
        }
        if let Some(t) = &self.time {
            m.insert("time".into(), json!(t));
        }
        m.insert("fieldsType".into(), json!("FieldsV1"));
        m.insert("fieldsV1".into(), self.fields.to_fields_v1());
        if !self.subresource.is_empty() {
            m.insert("subresource".into(), json!(self.subresource));
        }
        Value::Object(m)
    }

    /// Parses one entry; `None` for an entry that carries no usable fields
    /// (such as the `{}` clients send to clear managedFields).
    pub fn from_json(v: &Value) -> Option<ManagedEntry> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let operation = match v.get("operation").and_then(Value::as_str) {
            Some("Apply") => Operation::Apply,
            Some("Update") => Operation::Update,
            _ => return None,
        };
        let fields = FieldSet::from_fields_v1(v.get("fieldsV1")?).ok()?;
        Some(ManagedEntry {
            manager: s("manager"),
            operation,
            api_version: s("apiVersion"),
            time: v.get("time").and_then(Value::as_str).map(str::to_string),
            subresource: s("subresource"),
            fields,
        })
    }
}

/// The entries of an object's `metadata.managedFields` (unusable entries
/// skipped).
pub fn decode(obj: &Value) -> Vec<ManagedEntry> {
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(ManagedEntry::from_json).collect())
        .unwrap_or_default()
}

/// Whether the object's `metadata.managedFields` is a non-empty list (a
/// request that sets managedFields this way replaces them; an empty list,
/// `null` or an absent field keeps the stored ones, as upstream).
pub fn is_set(obj: &Value) -> bool {
    obj.pointer("/metadata/managedFields").and_then(Value::as_array).is_some_and(|a| !a.is_empty())
}

/// Writes `entries` (those with fields) to `metadata.managedFields`, sorted
/// as upstream sorts them: `Apply` before `Update`, then by time, manager,
/// apiVersion and subresource. No entries removes the field.
pub fn encode_into(obj: &mut Value, mut entries: Vec<ManagedEntry>) {
    entries.retain(|e| !e.fields.is_empty());
    entries.sort_by(|p, q| {
        (p.operation, p.time.as_deref().unwrap_or(""), &p.manager, &p.api_version, &p.subresource).cmp(&(
            q.operation,
            q.time.as_deref().unwrap_or(""),
            &q.manager,
            &q.api_version,
            &q.subresource,
        ))
    });
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    if entries.is_empty() {
        meta.remove("managedFields");
    } else {
        meta.insert("managedFields".into(), Value::Array(entries.iter().map(ManagedEntry::to_json).collect()));
    }
}
