//! The form in which the watch cache keeps objects, and lists served from
//! it without decoding or encoding anything.
//!
//! The cache keeps each object as the JSON of a list item: its
//! `metadata.resourceVersion` set to its mod revision and, for the
//! built-in (typed) kinds, without `kind` and `apiVersion` — exactly the
//! bytes a `<Kind>List` carries for it (upstream's typed lists omit them
//! too). The object is encoded once when it enters the cache (the initial
//! list, then each change), so a full JSON list is the concatenation of
//! those bytes ([`ResourceStore::list_encoded`]) — what upstream gets from
//! caching each object's serialization (`cachingObject`). Decoding an item
//! for a filtered list, a Table or a watch puts `kind` and `apiVersion`
//! back. Memory stays about one JSON copy per object.

use bytes::Bytes;
use rkube_apimachinery::{typed, ApiError};
use rkube_store::Revision;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use super::Freshness;
use crate::storage::{ListOptions, ResourceStore};

/// How one resource's objects are kept (see the module docs).
#[derive(Debug)]
pub(super) struct ItemForm {
    kind: String,
    api_version: String,
    /// Typed kinds drop `kind`/`apiVersion` from list items.
    strip: bool,
}

impl ItemForm {
    pub(super) fn new(kind: &str, api_version: &str) -> ItemForm {
        ItemForm { kind: kind.into(), api_version: api_version.into(), strip: typed::is_typed(api_version, kind) }
    }

    /// The item bytes of a decoded object (whose resourceVersion is set).
    pub(super) fn encode(&self, obj: &Value) -> Bytes {
        let strip = self.strip
            && obj.get("kind").and_then(Value::as_str) == Some(self.kind.as_str())
            && obj.get("apiVersion").and_then(Value::as_str) == Some(self.api_version.as_str());
        let mut out = Vec::with_capacity(2048);
        let written = match (strip, obj.as_object()) {
            (true, Some(map)) => serde_json::to_writer(&mut out, &WithoutTypeMeta(map)),
            _ => serde_json::to_writer(&mut out, obj),
        };
        if written.is_err() {
            out = b"null".to_vec();
        }
        // The cache holds it for long: no spare capacity.
        out.shrink_to_fit();
        Bytes::from(out)
    }

    /// The item bytes of a stored value at `revision`; the stored bytes
    /// themselves if they are not JSON (decoding them later reports it).
    pub(super) fn item_of_stored(&self, key: &str, value: &Bytes, revision: Revision) -> Bytes {
        match super::decode(key, value, revision) {
            Ok(obj) => self.encode(&obj),
            Err(_) => value.clone(),
        }
    }

    /// The object of item bytes, with `kind` and `apiVersion` back.
    pub(super) fn decode(&self, key: &str, item: &[u8]) -> Result<Value, ApiError> {
        let mut obj: Value = serde_json::from_slice(item)
            .map_err(|e| ApiError::Internal(format!("stored object {key} is not valid JSON: {e}")))?;
        if let Some(map) = obj.as_object_mut().filter(|m| self.strip && !m.contains_key("kind")) {
            map.insert("kind".into(), Value::String(self.kind.clone()));
            map.insert("apiVersion".into(), Value::String(self.api_version.clone()));
        }
        Ok(obj)
    }
}

/// Serializes an object's members except `kind` and `apiVersion`.
struct WithoutTypeMeta<'a>(&'a Map<String, Value>);

impl Serialize for WithoutTypeMeta<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (k, v) in self.0.iter().filter(|(k, _)| *k != "kind" && *k != "apiVersion") {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// A list as the JSON of its items (see the module docs).
#[derive(Clone, Debug)]
pub struct EncodedList {
    /// Each item's JSON, in key order.
    pub items: Vec<Bytes>,
    /// The revision the list was read at (`metadata.resourceVersion`).
    pub revision: Revision,
}

impl EncodedList {
    /// The `<Kind>List` JSON (`list_kind`, `api_version`), newline-terminated
    /// like every JSON response.
    pub fn to_json(&self, list_kind: &str, api_version: &str) -> Vec<u8> {
        let size: usize = self.items.iter().map(|i| i.len() + 1).sum();
        let mut out = Vec::with_capacity(size + 128);
        out.extend_from_slice(b"{\"kind\":");
        out.extend_from_slice(&serde_json::to_vec(list_kind).unwrap_or_default());
        out.extend_from_slice(b",\"apiVersion\":");
        out.extend_from_slice(&serde_json::to_vec(api_version).unwrap_or_default());
        out.extend_from_slice(
            format!(",\"metadata\":{{\"resourceVersion\":\"{}\"}},\"items\":[", self.revision).as_bytes(),
        );
        for (i, item) in self.items.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(item);
        }
        out.extend_from_slice(b"]}\n");
        out
    }
}

impl ResourceStore {
    /// The list [`ResourceStore::list`] would answer, as pre-encoded items,
    /// when the watch cache serves it and nothing needs decoding: no
    /// selector, no `limit`, no continue token, `resourceVersion` unset
    /// (consistent) or `"0"`. `None`: use [`ResourceStore::list`] (which
    /// also reports invalid options, and waits once more for a cache that
    /// was not fresh in time before reading the store).
    pub async fn list_encoded(&self, namespace: &str, opts: &ListOptions) -> Option<EncodedList> {
        let cache = self.watch_cache()?;
        let paged = opts.limit.is_some_and(|l| l > 0) || opts.continue_token.as_deref().is_some_and(|t| !t.is_empty());
        if paged || !opts.predicate.is_everything() || !opts.resource_version_match.is_empty() {
            return None;
        }
        let freshness = match opts.resource_version.as_str() {
            "" => Freshness::Consistent,
            "0" => Freshness::AtLeast(0),
            _ => return None,
        };
        let (items, revision) = cache.list_items(&self.keys().collection(namespace), freshness).await?;
        Some(EncodedList { items, revision })
    }
}
