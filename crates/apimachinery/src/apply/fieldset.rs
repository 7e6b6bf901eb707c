//! Field sets: the sets of field paths that `metadata.managedFields` records
//! per manager, in upstream's `FieldsV1` JSON encoding (structured-merge-diff
//! v4 `fieldpath.Set`), and the schema knowledge needed to build them from an
//! object.
//!
//! A path is a list of [`PathElement`]s:
//! - `f:<name>`: a field of a struct or a key of a map;
//! - `k:{"name":"x"}`: an item of an associative list, named by its key
//!   fields (sorted by name, values as JSON);
//! - `v:<json>`: an item of a set (a primitive list merged as a set);
//! - `i:<n>`: an item by position (decoded, never produced: rkube treats
//!   non-associative lists as atomic, as upstream does for untagged lists).
//!
//! In the JSON form every node is an object; `{}` marks a leaf member, and
//! `".": {}` marks a member that also has children (upstream writes it for
//! associative list items, which are members themselves).
//!
//! List types come from the patch metadata ([`crate::patch::metadata`]):
//! a `merge` list with a merge key is associative keyed by that key, a
//! `merge` list without one is a set, every other list is atomic. This is
//! how upstream's OpenAPI-to-schema conversion treats lists without an
//! explicit `x-kubernetes-list-type`. Where upstream's types carry explicit
//! `x-kubernetes-list-map-keys` that differ from the merge key, the table
//! [`LIST_MAP_KEY_OVERRIDES`] gives the upstream keys (container ports keyed
//! by `containerPort` + `protocol`, Service ports by `port` + `protocol`,
//! topology spread constraints by `topologyKey` + `whenUnsatisfiable`); a
//! missing `protocol` key field takes its default `TCP` as upstream's key
//! defaulting does. Other explicit list-type markers (the few atomic lists
//! that carry a patch strategy, granular maps) are not modelled.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::patch::metadata::{self, FieldShape, TypeInfo};

/// One step of a field path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PathElement {
    /// `f:<name>`: a struct field or map key.
    Field(String),
    /// `k:{...}`: an associative list item by its key fields, sorted by
    /// name, each value as compact JSON.
    Key(Vec<(String, String)>),
    /// `v:<json>`: a set item, as compact JSON.
    Value(String),
    /// `i:<n>`: a list item by index.
    Index(usize),
}

impl PathElement {
    /// The `fieldsV1` key of this element (`f:replicas`, `k:{"name":"nginx"}`, …).
    pub fn encode(&self) -> String {
        match self {
            PathElement::Field(n) => format!("f:{n}"),
            PathElement::Key(kv) => format!("k:{}", key_json(kv)),
            PathElement::Value(v) => format!("v:{v}"),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    /// Parses a `fieldsV1` key.
    pub fn decode(s: &str) -> Result<PathElement, String> {
        let (prefix, rest) = s.split_at_checked(2).ok_or_else(|| format!("invalid path element {s:?}"))?;
        match prefix {
            "f:" => Ok(PathElement::Field(rest.to_string())),
            "k:" => {
                let v: Value = serde_json::from_str(rest).map_err(|e| format!("invalid key {rest:?}: {e}"))?;
                let Value::Object(m) = v else { return Err(format!("invalid key {rest:?}: not an object")) };
                let mut kv: Vec<(String, String)> = m.iter().map(|(k, v)| (k.clone(), v.to_string())).collect();
                kv.sort();
                Ok(PathElement::Key(kv))
            }
            "v:" => {
                let v: Value = serde_json::from_str(rest).map_err(|e| format!("invalid value {rest:?}: {e}"))?;
                Ok(PathElement::Value(v.to_string()))
            }
            "i:" => rest.parse().map(PathElement::Index).map_err(|_| format!("invalid index {rest:?}")),
            _ => Err(format!("invalid path element {s:?}")),
        }
    }
}

fn key_json(kv: &[(String, String)]) -> String {
    let mut s = String::from("{");
    for (i, (k, v)) in kv.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&Value::String(k.clone()).to_string());
        s.push(':');
        s.push_str(v);
    }
    s.push('}');
    s
}

/// A field path.
pub type Path = Vec<PathElement>;

/// A path as upstream prints it in conflict messages:
/// `.spec.template.spec.containers[name="nginx"].image`,
/// `.metadata.finalizers[="x"]`, `.spec.ports[port=80,protocol="TCP"]`.
pub fn path_string(path: &[PathElement]) -> String {
    let mut s = String::new();
    for pe in path {
        match pe {
            PathElement::Field(n) => {
                s.push('.');
                s.push_str(n);
            }
            PathElement::Key(kv) => {
                s.push('[');
                for (i, (k, v)) in kv.iter().enumerate() {
                    if i > 0 {
                        s.push(',');
                    }
                    let _ = write!(s, "{k}={v}");
                }
                s.push(']');
            }
            PathElement::Value(v) => {
                let _ = write!(s, "[={v}]");
            }
            PathElement::Index(i) => {
                let _ = write!(s, "[{i}]");
            }
        }
    }
    s
}

/// A set of field paths (upstream `fieldpath.Set`), each path a member.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSet(BTreeSet<Path>);

impl FieldSet {
    /// The empty set.
    pub fn new() -> FieldSet {
        FieldSet::default()
    }

    /// Adds a path.
    pub fn insert(&mut self, path: Path) {
        self.0.insert(path);
    }

    /// Whether `path` is a member.
    pub fn contains(&self, path: &[PathElement]) -> bool {
        self.0.contains(path)
    }

    /// Whether the set has no members.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The members in order.
    pub fn iter(&self) -> impl Iterator<Item = &Path> {
        self.0.iter()
    }

    /// Whether some member lies strictly beneath `path`.
    pub fn has_descendant(&self, path: &[PathElement]) -> bool {
        use std::ops::Bound::{Excluded, Unbounded};
        self.0
            .range::<[PathElement], _>((Excluded(path), Unbounded))
            .next()
            .is_some_and(|q| q.len() > path.len() && q.starts_with(path))
    }

    /// Members of either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        FieldSet(self.0.union(&other.0).cloned().collect())
    }

    /// Members of `self` not in `other`.
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        FieldSet(self.0.difference(&other.0).cloned().collect())
    }

    /// Members of both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        FieldSet(self.0.intersection(&other.0).cloned().collect())
    }

    /// Members of `self` that neither are in `other` nor lie beneath one of
    /// its members (upstream `RecursiveDifference`).
    pub fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        FieldSet(self.0.iter().filter(|p| !(1..=p.len()).any(|n| other.0.contains(&p[..n]))).cloned().collect())
    }

    /// The `fieldsV1` JSON of the set.
    pub fn to_fields_v1(&self) -> Value {
        #[derive(Default)]
        struct Node {
            member: bool,
            children: BTreeMap<PathElement, Node>,
        }
        fn to_json(node: &Node) -> Value {
            let mut m = Map::new();
            if node.member && !node.children.is_empty() {
                m.insert(".".into(), Value::Object(Map::new()));
            }
            for (pe, child) in &node.children {
                m.insert(pe.encode(), to_json(child));
            }
            Value::Object(m)
        }
        let mut root = Node::default();
        for path in &self.0 {
            let mut node = &mut root;
            for pe in path {
                node = node.children.entry(pe.clone()).or_default();
            }
            node.member = true;
        }
        to_json(&root)
    }

    /// Parses a `fieldsV1` JSON object.
    pub fn from_fields_v1(v: &Value) -> Result<FieldSet, String> {
        fn walk(v: &Value, path: &mut Path, out: &mut FieldSet) -> Result<(), String> {
            let Value::Object(m) = v else { return Err("fieldsV1 nodes must be objects".into()) };
            if m.is_empty() && !path.is_empty() {
                out.insert(path.clone());
            }
            for (k, child) in m {
                if k == "." {
                    if !path.is_empty() {
                        out.insert(path.clone());
                    }
                    continue;
                }
                path.push(PathElement::decode(k)?);
                walk(child, path, out)?;
                path.pop();
            }
            Ok(())
        }
        let mut out = FieldSet::new();
        walk(v, &mut Vec::new(), &mut out)?;
        Ok(out)
    }
}

impl FromIterator<Path> for FieldSet {
    fn from_iter<I: IntoIterator<Item = Path>>(iter: I) -> FieldSet {
        FieldSet(iter.into_iter().collect())
    }
}

/// Upstream `x-kubernetes-list-map-keys` that differ from the patch merge
/// key: (type, field, keys).
pub const LIST_MAP_KEY_OVERRIDES: &[(&str, &str, &[&str])] = &[
    ("io.k8s.api.core.v1.Container", "ports", &["containerPort", "protocol"]),
    ("io.k8s.api.core.v1.EphemeralContainer", "ports", &["containerPort", "protocol"]),
    ("io.k8s.api.core.v1.ServiceSpec", "ports", &["port", "protocol"]),
    ("io.k8s.api.core.v1.PodSpec", "topologySpreadConstraints", &["topologyKey", "whenUnsatisfiable"]),
];

/// How a list merges and how its items are named in field sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListType {
    /// Replaced whole; the list is one leaf.
    Atomic,
    /// Primitive items merged as a set (`v:`).
    Set,
    /// Object items keyed by these fields (`k:`).
    Map(&'static [&'static str]),
}

/// Schema knowledge at one point of an object: the patch-metadata type of
/// the value (if listed) and whether the value is a map of such values.
#[derive(Clone, Copy, Debug, Default)]
pub struct Schema {
    ty: Option<&'static TypeInfo>,
    map_values: bool,
}

impl Schema {
    /// The schema of a built-in kind's objects; untyped (every list atomic)
    /// for unknown kinds and custom resources.
    pub fn for_kind(group: &str, version: &str, kind: &str) -> Schema {
        Schema { ty: metadata::kind_schema(group, version, kind), map_values: false }
    }

    /// The schema of a field (or map value) of this value, and the list type
    /// if the field holds a list (for lists, the returned schema is that of
    /// the items).
    pub fn child(self, name: &str) -> (Schema, ListType) {
        if self.map_values {
            return (Schema { ty: self.ty, map_values: false }, ListType::Atomic);
        }
        let Some(ty) = self.ty else { return (Schema::default(), ListType::Atomic) };
        let Some(fi) = ty.field(name) else { return (Schema::default(), ListType::Atomic) };
        let schema = Schema { ty: fi.value_type(), map_values: fi.shape == FieldShape::Map };
        (schema, list_type(ty.name, fi).unwrap_or(ListType::Atomic))
    }
}

/// The list type of the field `fi` of the definition `type_name`, when the
/// patch metadata determines one: a `merge` list is a map keyed by its merge
/// key (or by the keys of [`LIST_MAP_KEY_OVERRIDES`]), or a set without a
/// key. `None` for other fields (untagged lists, which upstream treats as
/// atomic). The OpenAPI documents publish the same facts as
/// `x-kubernetes-list-type` / `x-kubernetes-list-map-keys`.
pub fn list_type(type_name: &str, fi: &'static metadata::FieldInfo) -> Option<ListType> {
    if fi.shape != FieldShape::List || !fi.strategy.is_merge() {
        return None;
    }
    let overridden = LIST_MAP_KEY_OVERRIDES.iter().find(|(t, f, _)| *t == type_name && *f == fi.name);
    Some(match (overridden, fi.merge_key.as_ref()) {
        (Some((_, _, keys)), _) => ListType::Map(keys),
        (None, Some(key)) => ListType::Map(std::slice::from_ref(key)),
        (None, None) => ListType::Set,
    })
}

/// The default of a list-map key field missing from an item.
fn key_default(name: &str) -> Option<Value> {
    (name == "protocol").then(|| Value::String("TCP".into()))
}

/// The key of an associative list item, or `None` when it is not an object
/// or lacks a key field without default.
pub(crate) fn item_key<S: AsRef<str>>(item: &Value, keys: &[S]) -> Option<Vec<(String, String)>> {
    let m = item.as_object()?;
    let mut kv = Vec::with_capacity(keys.len());
    for k in keys {
        let k = k.as_ref();
        let v = match m.get(k).filter(|v| !v.is_null()) {
            Some(v) => v.clone(),
            None => key_default(k)?,
        };
        kv.push((k.to_string(), v.to_string()));
    }
    kv.sort();
    Some(kv)
}

/// Top-level and metadata fields never tracked (upstream's `stripMeta`).
const STRIPPED_METADATA: &[&str] = &[
    "name",
    "namespace",
    "creationTimestamp",
    "selfLink",
    "uid",
    "clusterName",
    "generation",
    "managedFields",
    "resourceVersion",
];

/// The leaves of an object by path: every member of its field set with the
/// value it holds (scalars, atomic lists, empty maps), or `null` for list
/// and set items (members whose identity is their path). `apiVersion`,
/// `kind` and the server-owned metadata are left out, and `status` too when
/// `ignore_status` (the main resource of a kind with a status subresource).
pub fn leaves(obj: &Value, schema: Schema, ignore_status: bool) -> BTreeMap<Path, Value> {
    let mut out = BTreeMap::new();
    let Some(m) = obj.as_object() else { return out };
    let mut path = Vec::new();
    for (k, v) in m {
        if k == "apiVersion" || k == "kind" || (ignore_status && k == "status") {
            continue;
        }
        let (cs, lt) = schema.child(k);
        path.push(PathElement::Field(k.clone()));
        if k == "metadata" {
            if let Some(meta) = v.as_object() {
                for (mk, mv) in meta {
                    if STRIPPED_METADATA.contains(&mk.as_str()) {
                        continue;
                    }
                    let (ms, mlt) = cs.child(mk);
                    path.push(PathElement::Field(mk.clone()));
                    walk_field(mk, mv, ms, mlt, &mut path, &mut out);
                    path.pop();
                }
            }
        } else {
            walk_field(k, v, cs, lt, &mut path, &mut out);
        }
        path.pop();
    }
    out
}

/// Whether a field is atomic whatever its content: label selectors
/// (`selector`, `nodeSelector`, `namespaceSelector`, `labelSelector`, …)
/// are `x-kubernetes-map-type: atomic` / `structType=atomic` upstream.
pub(crate) fn atomic_field(name: &str) -> bool {
    name == "selector" || name.ends_with("Selector")
}

fn walk_field(name: &str, v: &Value, schema: Schema, lt: ListType, path: &mut Path, out: &mut BTreeMap<Path, Value>) {
    if atomic_field(name) {
        out.insert(path.clone(), v.clone());
    } else {
        walk(v, schema, lt, path, out);
    }
}

fn walk(v: &Value, schema: Schema, lt: ListType, path: &mut Path, out: &mut BTreeMap<Path, Value>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, c) in m {
                let (cs, clt) = schema.child(k);
                path.push(PathElement::Field(k.clone()));
                walk_field(k, c, cs, clt, path, out);
                path.pop();
            }
        }
        Value::Array(items) if !items.is_empty() => match lt {
            ListType::Set if items.iter().all(|i| !i.is_object() && !i.is_array()) => {
                for it in items {
                    path.push(PathElement::Value(it.to_string()));
                    out.insert(path.clone(), Value::Null);
                    path.pop();
                }
            }
            ListType::Map(keys) => {
                let keyed: Option<Vec<_>> = items.iter().map(|i| item_key(i, keys)).collect();
                let Some(keyed) = keyed else {
                    out.insert(path.clone(), v.clone());
                    return;
                };
                for (kv, item) in keyed.into_iter().zip(items) {
                    path.push(PathElement::Key(kv));
                    out.insert(path.clone(), Value::Null);
                    if let Value::Object(m) = item {
                        for (k, c) in m {
                            let (cs, clt) = schema.child(k);
                            path.push(PathElement::Field(k.clone()));
                            walk_field(k, c, cs, clt, path, out);
                            path.pop();
                        }
                    }
                    path.pop();
                }
            }
            _ => {
                out.insert(path.clone(), v.clone());
            }
        },
        // A null is no value: it owns nothing (as upstream's field sets,
        // which never list a template's `creationTimestamp: null`).
        Value::Null => {}
        _ => {
            out.insert(path.clone(), v.clone());
        }
    }
}

/// The field set of an object (see [`leaves`]).
pub fn field_set(obj: &Value, schema: Schema, ignore_status: bool) -> FieldSet {
    leaves(obj, schema, ignore_status).into_keys().collect()
}

/// What changed between two objects (upstream `TypedValue.Compare`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Members only in the new object.
    pub added: FieldSet,
    /// Members only in the old object.
    pub removed: FieldSet,
    /// Leaves in both whose values differ.
    pub modified: FieldSet,
}

impl Comparison {
    /// Whether nothing changed.
    pub fn is_same(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.modified.is_empty()
    }
}

/// Fields that hold non-pointer structs in upstream's Go types: they exist
/// (empty) in a fresh object, so creating them adds no member of their own.
const ALWAYS_PRESENT: &[&str] =
    &["metadata", "spec", "status", "template", "strategy", "updateStrategy", "jobTemplate", "resources"];

/// Compares two objects' leaves (see [`leaves`]). With `new_maps`, a
/// non-empty map or pointer struct present only in `new` is itself added
/// (upstream's compare of typed values, where such a node did not exist
/// before; written `".": {}` in Update entries); `metadata`, `spec`,
/// `status`, `template`, `strategy`, `updateStrategy`, `jobTemplate` and
/// `resources` are not, being non-pointer structs upstream.
pub fn compare_with(old: &Value, new: &Value, schema: Schema, ignore_status: bool, new_maps: bool) -> Comparison {
    let a = leaves(old, schema, ignore_status);
    let b = leaves(new, schema, ignore_status);
    let mut c = Comparison::default();
    for (p, v) in &b {
        match a.get(p) {
            None => c.added.insert(p.clone()),
            Some(old) if old != v => c.modified.insert(p.clone()),
            Some(_) => {}
        }
    }
    for p in a.keys() {
        if !b.contains_key(p) {
            c.removed.insert(p.clone());
        }
    }
    if new_maps {
        let mut candidates = BTreeSet::new();
        for p in b.keys() {
            for n in 1..p.len() {
                let prefix = &p[..n];
                if let Some(PathElement::Field(name)) = prefix.last() {
                    if !ALWAYS_PRESENT.contains(&name.as_str()) {
                        candidates.insert(prefix.to_vec());
                    }
                }
            }
        }
        for prefix in candidates {
            if lookup(old, &prefix).is_none() && lookup(new, &prefix).is_some_and(Value::is_object) {
                c.added.insert(prefix);
            }
        }
    }
    c
}

/// The value at a path, `None` when the object has nothing there.
pub(crate) fn lookup<'a>(v: &'a Value, path: &[PathElement]) -> Option<&'a Value> {
    let Some((first, rest)) = path.split_first() else { return Some(v) };
    match first {
        PathElement::Field(n) => lookup(v.as_object()?.get(n)?, rest),
        PathElement::Key(kv) => {
            let names: Vec<&str> = kv.iter().map(|(k, _)| k.as_str()).collect();
            let item = v.as_array()?.iter().find(|it| item_key(it, &names).as_ref() == Some(kv))?;
            lookup(item, rest)
        }
        PathElement::Value(j) => lookup(v.as_array()?.iter().find(|it| it.to_string() == *j)?, rest),
        PathElement::Index(i) => lookup(v.as_array()?.get(*i)?, rest),
    }
}

/// Compares two objects' leaves (see [`leaves`]).
pub fn compare(old: &Value, new: &Value, schema: Schema, ignore_status: bool) -> Comparison {
    compare_with(old, new, schema, ignore_status, false)
}
