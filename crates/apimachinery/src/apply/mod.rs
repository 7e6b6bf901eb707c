//! Field management and server-side apply, after upstream's
//! structured-merge-diff v4 (`merge.Updater`) and the API server's
//! `fieldmanager` chain (Kubernetes 1.33).
//!
//! - [`fieldset`]: field sets and their `fieldsV1` encoding, built from an
//!   object with the list types of the patch metadata.
//! - [`managed`]: `metadata.managedFields` entries.
//! - [`track_update`]: the bookkeeping of every non-apply write (operation
//!   `Update`): the fields a write added or changed become the writer's,
//!   other managers lose them, removed fields leave every manager.
//! - [`apply`]: server-side apply — merge the applied configuration into the
//!   live object, 409 on fields another manager owns with a different value
//!   (unless forced), remove fields the applier stopped applying that nobody
//!   else owns, and record the applier's set.
//!
//! Beyond [`MAX_UPDATE_MANAGERS`] `Update` entries the oldest are merged
//! into `ancient-changes` entries per API version, as upstream's
//! cap-managers step does.
//!
//! For the manager `kubectl` on an object that carries kubectl's
//! client-side `last-applied-configuration` annotation, conflicts on fields
//! that still hold their last-applied value are forced, and the annotation
//! is rewritten from the applied configuration (upstream's last-applied
//! manager and updater, which make the client-side → server-side migration
//! seamless).
//!
//! Approximations (documented): list types come from the patch metadata
//! (see [`fieldset`]).

pub mod fieldset;
pub mod managed;

#[cfg(test)]
mod tests;

use serde_json::{Map, Value};

use crate::errors::{ApiError, StatusCause};
use fieldset::{
    atomic_field, compare, compare_with, field_set, item_key, lookup, path_string, FieldSet, ListType, Path,
    PathElement, Schema,
};
use managed::{ManagedEntry, ManagerId, Operation};

/// Upstream's `DefaultMaxUpdateManagers`.
pub const MAX_UPDATE_MANAGERS: usize = 10;

/// The manager the oldest `Update` entries are merged into.
pub const ANCIENT_CHANGES: &str = "ancient-changes";

/// Upstream's `capUpdateManagers`: while there are more than
/// [`MAX_UPDATE_MANAGERS`] `Update` entries, the oldest are merged (per API
/// version) into an [`ANCIENT_CHANGES`] entry, which takes the time of the
/// newest entry merged into it.
fn cap_update_managers(entries: &mut Vec<ManagedEntry>) {
    let mut updaters: Vec<usize> = (0..entries.len()).filter(|&i| entries[i].operation == Operation::Update).collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return;
    }
    updaters.sort_by(|&a, &b| entries[a].time.cmp(&entries[b].time));
    let mut first_of_version: std::collections::HashMap<String, usize> = Default::default();
    let mut removed = vec![false; entries.len()];
    let mut length = updaters.len();
    for &i in &updaters {
        if length <= MAX_UPDATE_MANAGERS {
            break;
        }
        let version = entries[i].api_version.clone();
        let Some(&first) = first_of_version.get(&version) else {
            first_of_version.insert(version, i);
            continue;
        };
        let is_bucket = |e: &ManagedEntry| {
            e.manager == ANCIENT_CHANGES
                && e.operation == Operation::Update
                && e.api_version == version
                && e.subresource.is_empty()
        };
        let bucket = match (0..entries.len()).find(|&j| !removed[j] && j != i && is_bucket(&entries[j])) {
            Some(b) => b,
            None => {
                entries[first].manager = ANCIENT_CHANGES.to_string();
                entries[first].subresource.clear();
                first
            }
        };
        let fields = entries[i].fields.clone();
        entries[bucket].fields = entries[bucket].fields.union(&fields);
        entries[bucket].time = entries[i].time.clone();
        removed[i] = true;
        length -= 1;
    }
    let mut idx = 0;
    entries.retain(|_| {
        idx += 1;
        !removed[idx - 1]
    });
}

/// kubectl's client-side apply annotation.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The manager kubectl's `apply --server-side` uses by default; the only one
/// the last-applied logic applies to.
const KUBECTL_MANAGER: &str = "kubectl";

/// Upstream's total annotation size limit (256 KiB).
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

fn last_applied(obj: &Value) -> Option<&str> {
    obj.get("metadata")?.get("annotations")?.get(LAST_APPLIED_ANNOTATION)?.as_str().filter(|s| !s.is_empty())
}

/// The fields whose conflicts a `kubectl` apply may force: those of the
/// last-applied configuration that still hold that value in the live object.
fn allowed_from_last_applied(live: &Value, opts: TrackOptions) -> Option<FieldSet> {
    let applied: Value = serde_json::from_str(last_applied(live)?).ok()?;
    let before = fieldset::leaves(&applied, opts.schema, opts.ignore_status);
    let now = fieldset::leaves(live, opts.schema, opts.ignore_status);
    Some(before.into_iter().filter(|(p, v)| now.get(p) == Some(v)).map(|(p, _)| p).collect())
}

/// Upstream's `buildLastApplied` + `setLastApplied`: the applied object
/// without the annotation, as JSON (sorted keys, trailing newline), stored
/// in the annotation unless the annotations would exceed their size limit.
fn set_last_applied(obj: &mut Value, config: &Value) {
    let mut applied = config.clone();
    if let Some(a) = applied.pointer_mut("/metadata/annotations").and_then(Value::as_object_mut) {
        a.remove(LAST_APPLIED_ANNOTATION);
    }
    let Ok(json) = serde_json::to_string(&applied) else { return };
    let Some(annotations) = obj.pointer_mut("/metadata/annotations").and_then(Value::as_object_mut) else { return };
    annotations.insert(LAST_APPLIED_ANNOTATION.into(), Value::String(format!("{json}\n")));
    let size: usize = annotations.iter().map(|(k, v)| k.len() + v.as_str().map_or(0, str::len)).sum();
    if size > TOTAL_ANNOTATION_SIZE_LIMIT {
        annotations.remove(LAST_APPLIED_ANNOTATION);
    }
}

/// Upstream's limit on `fieldManager` (bytes).
pub const MAX_FIELD_MANAGER_LENGTH: usize = 128;

/// The manager a non-apply write is recorded under: the `fieldManager`
/// parameter if given, else the User-Agent up to the first `/` (upstream's
/// `managerOrUserAgent`; `kubectl/v1.33.0 (linux/amd64) …` → `kubectl`),
/// truncated to 128 bytes.
pub fn manager_or_user_agent(field_manager: Option<&str>, user_agent: Option<&str>) -> String {
    if let Some(m) = field_manager.filter(|m| !m.is_empty()) {
        return m.to_string();
    }
    let prefix = user_agent.unwrap_or("").split('/').next().unwrap_or("");
    let mut s: String = prefix.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    while s.len() > MAX_FIELD_MANAGER_LENGTH {
        s.pop();
    }
    s
}

/// Options of a tracked write.
#[derive(Clone, Copy, Debug)]
pub struct TrackOptions {
    /// The schema of the kind.
    pub schema: Schema,
    /// Leave `status` untracked (main resource of a kind with a status
    /// subresource: upstream's reset fields).
    pub ignore_status: bool,
}

/// Maintains `metadata.managedFields` of `new` for a non-apply write by
/// `id` (operation `Update`), `old` being the stored object (`None` on
/// create). Upstream semantics:
/// - a request carrying a non-empty `managedFields` list replaces the
///   stored entries (so `[{}]` clears them); empty, `null` or absent keeps
///   them; a subresource write always keeps them;
/// - an update of an object without managedFields is not tracked (an
///   object never applied, upstream's skip-non-applied manager); a create
///   always is;
/// - fields added or changed become `id`'s (merged into its entry, time
///   set to now), other managers lose them; removed fields leave all
///   managers; managers left with nothing are dropped.
pub fn track_update(old: Option<&Value>, new: &mut Value, id: &ManagerId, opts: TrackOptions, now: &str) {
    let mut entries = if id.subresource.is_empty() && managed::is_set(new) {
        managed::decode(new)
    } else {
        old.map(managed::decode).unwrap_or_default()
    };
    let empty = Value::Object(Map::new());
    if old.is_some() && entries.is_empty() && !managed::is_set(new) {
        managed::encode_into(new, entries);
        return;
    }
    let c = compare_with(old.unwrap_or(&empty), new, opts.schema, opts.ignore_status, true);
    let changed = c.added.union(&c.modified);
    for e in &mut entries {
        e.fields = e.fields.difference(&changed).difference(&c.removed);
        // Nodes whose whole subtree went away (a map all of whose keys
        // were removed) leave too.
        if !c.removed.is_empty() {
            e.fields = e.fields.iter().filter(|p| lookup(new, p).is_some()).cloned().collect();
        }
    }
    if !changed.is_empty() {
        match entries.iter_mut().find(|e| id.owns(e)) {
            Some(e) => {
                e.fields = e.fields.union(&changed);
                e.time = Some(now.to_string());
            }
            None => entries.push(ManagedEntry::new(id, changed, Some(now.to_string()))),
        }
    }
    cap_update_managers(&mut entries);
    managed::encode_into(new, entries);
}

/// The 409 of an apply that conflicts with other managers (upstream's
/// `NewConflictError`): one `FieldManagerConflict` cause per path.
/// `conflicts` are (manager entry, path) pairs in order.
pub fn conflict_error(conflicts: &[(&ManagedEntry, Path)]) -> ApiError {
    let who = |e: &ManagedEntry| {
        let mut s = Value::String(e.manager.clone()).to_string();
        if !e.subresource.is_empty() {
            s = format!("{s} with subresource {}", Value::String(e.subresource.clone()));
        }
        if e.operation == Operation::Update {
            s = format!("{s} using {}", e.api_version);
        }
        s
    };
    let causes = conflicts
        .iter()
        .map(|(e, p)| StatusCause {
            reason: "FieldManagerConflict".into(),
            message: format!("conflict with {}", who(e)),
            field: path_string(p),
        })
        .collect();
    let message = if let [(e, p)] = conflicts {
        format!("Apply failed with 1 conflict: conflict with {}: {}", who(e), path_string(p))
    } else {
        let mut by_manager: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for (e, p) in conflicts {
            by_manager.entry(who(e)).or_default().push(path_string(p));
        }
        let mut lines = Vec::new();
        for (m, paths) in by_manager {
            lines.push(format!("conflicts with {m}:"));
            lines.extend(paths.into_iter().map(|p| format!("- {p}")));
        }
        format!("Apply failed with {} conflicts: {}", conflicts.len(), lines.join("\n"))
    };
    ApiError::ApplyConflict { message, causes }
}

/// What [`apply`] needs besides the objects.
#[derive(Clone, Debug)]
pub struct ApplyRequest<'a> {
    /// The applier (`fieldManager`; operation [`Operation::Apply`]).
    pub manager: &'a str,
    /// The request's API version (`apps/v1`).
    pub api_version: &'a str,
    /// The subresource applied to (`status`), empty for the main resource.
    pub subresource: &'a str,
    /// `force=true`: take conflicting fields instead of failing.
    pub force: bool,
    /// Kind schema and ignored fields.
    pub opts: TrackOptions,
    /// The current time (RFC 3339) for changed entries.
    pub now: &'a str,
}

/// Server-side apply of `config` (the decoded apply body) to `live` (`None`:
/// the object does not exist and is created). Returns the new object with
/// its managedFields; when nothing changes it is `live` itself, so the
/// store writes nothing. Errors: 400 when `config` sets managedFields, 409
/// [`ApiError::ApplyConflict`] on conflicts without `force`.
pub fn apply(live: Option<&Value>, config: &Value, req: &ApplyRequest<'_>) -> Result<Value, ApiError> {
    if config.pointer("/metadata/managedFields").is_some_and(|v| !v.is_null()) {
        return Err(ApiError::BadRequest("metadata.managedFields must be nil".into()));
    }
    let TrackOptions { schema, ignore_status } = req.opts;
    let empty = Value::Object(Map::new());
    let live_obj = live.unwrap_or(&empty);
    let mut entries = managed::decode(live_obj);
    if live.is_some() && entries.is_empty() {
        // An object never tracked: its fields so far belong to
        // "before-first-apply" (upstream's skip-non-applied manager).
        let api_version = live_obj.get("apiVersion").and_then(Value::as_str).unwrap_or(req.api_version);
        let id = ManagerId::update("before-first-apply", api_version, "");
        let fields = field_set(live_obj, schema, ignore_status);
        entries.push(ManagedEntry::new(&id, fields, Some(req.now.to_string())));
    }
    let id = ManagerId {
        manager: req.manager.to_string(),
        operation: Operation::Apply,
        api_version: req.api_version.to_string(),
        subresource: req.subresource.to_string(),
    };
    let config_set = field_set(config, schema, ignore_status);
    let mut merged = merge(live_obj, config, schema, ListType::Atomic);
    let c = compare(live_obj, &merged, schema, ignore_status);
    let changed = c.added.union(&c.modified);

    let mut conflicts: Vec<(usize, Path)> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if id.owns(e) {
            continue;
        }
        conflicts.extend(e.fields.intersection(&changed).iter().map(|p| (i, p.clone())));
    }
    if !conflicts.is_empty() && !req.force && req.manager == KUBECTL_MANAGER {
        if let Some(allowed) = live.and_then(|l| allowed_from_last_applied(l, req.opts)) {
            conflicts.retain(|(_, p)| !allowed.contains(p));
        }
    }
    if !conflicts.is_empty() && !req.force {
        let list: Vec<(&ManagedEntry, Path)> = conflicts.into_iter().map(|(i, p)| (&entries[i], p)).collect();
        return Err(conflict_error(&list));
    }
    let last = entries.iter().find(|e| id.owns(e)).map(|e| e.fields.clone()).unwrap_or_default();
    for e in &mut entries {
        if !id.owns(e) {
            e.fields = e.fields.difference(&changed).difference(&c.removed);
        }
    }
    // Fields this applier applied before and no longer applies, that no
    // other manager owns, leave the object — except nodes with owned
    // fields beneath them (a map member taken over from an updater whose
    // keys are still applied), which upstream adds back.
    let others = entries.iter().filter(|e| !id.owns(e)).fold(FieldSet::new(), |acc, e| acc.union(&e.fields));
    let keep = others.union(&config_set);
    let to_remove = last.difference(&keep);
    for p in to_remove.iter().filter(|p| !keep.has_descendant(p)) {
        remove_path(&mut merged, p);
    }
    if req.manager == KUBECTL_MANAGER && last_applied(&merged).is_some() {
        set_last_applied(&mut merged, config);
    }
    let object_changed = !compare(live_obj, &merged, schema, false).is_same() || live.is_none();
    match entries.iter_mut().find(|e| id.owns(e)) {
        Some(e) => {
            e.fields = config_set;
            e.api_version = id.api_version.clone();
            if object_changed {
                e.time = Some(req.now.to_string());
            }
        }
        None => entries.push(ManagedEntry::new(&id, config_set, Some(req.now.to_string()))),
    }
    cap_update_managers(&mut entries);
    if let Some(live) = live {
        let mut check = live.clone();
        managed::encode_into(&mut check, entries.clone());
        if !object_changed && check == *live {
            return Ok(live.clone());
        }
    }
    if !merged.get("metadata").is_some_and(Value::is_object) {
        merged["metadata"] = Value::Object(Map::new());
    }
    managed::encode_into(&mut merged, entries);
    Ok(merged)
}

/// Merges an applied configuration into a live value: maps merge field by
/// field (`null` in the configuration removes), associative lists merge
/// item by key (new items appended), sets take the union, everything else
/// is replaced by the configuration.
fn merge(live: &Value, config: &Value, schema: Schema, lt: ListType) -> Value {
    match (live, config) {
        (Value::Object(l), Value::Object(c)) => {
            let mut out = l.clone();
            for (k, cv) in c {
                if cv.is_null() {
                    out.remove(k);
                    continue;
                }
                let (cs, clt) = schema.child(k);
                let merged = match l.get(k) {
                    Some(lv) if !atomic_field(k) => merge(lv, cv, cs, clt),
                    _ => cv.clone(),
                };
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
        (Value::Array(l), Value::Array(c)) => match lt {
            ListType::Set => {
                let mut out = l.clone();
                for v in c {
                    if !out.contains(v) {
                        out.push(v.clone());
                    }
                }
                Value::Array(out)
            }
            ListType::Map(keys) => {
                let live_keys: Option<Vec<_>> = l.iter().map(|i| item_key(i, keys)).collect();
                let cfg_keys: Option<Vec<_>> = c.iter().map(|i| item_key(i, keys)).collect();
                let (Some(live_keys), Some(cfg_keys)) = (live_keys, cfg_keys) else { return config.clone() };
                let mut out = l.clone();
                let mut out_keys = live_keys;
                for (ck, cv) in cfg_keys.into_iter().zip(c) {
                    match out_keys.iter().position(|k| *k == ck) {
                        Some(i) => out[i] = merge(&out[i], cv, schema, ListType::Atomic),
                        None => {
                            out.push(cv.clone());
                            out_keys.push(ck);
                        }
                    }
                }
                Value::Array(out)
            }
            ListType::Atomic => config.clone(),
        },
        _ => config.clone(),
    }
}

/// Removes the member at `path` from `v` (a field, a list item by key, a
/// set item by value); a no-op when it is not there.
fn remove_path(v: &mut Value, path: &[PathElement]) {
    let Some((first, rest)) = path.split_first() else { return };
    match (first, v) {
        (PathElement::Field(name), Value::Object(m)) => {
            if rest.is_empty() {
                m.remove(name);
            } else if let Some(child) = m.get_mut(name) {
                remove_path(child, rest);
            }
        }
        (PathElement::Key(kv), Value::Array(items)) => {
            let names: Vec<&str> = kv.iter().map(|(k, _)| k.as_str()).collect();
            if let Some(i) = items.iter().position(|it| item_key(it, &names).as_ref() == Some(kv)) {
                if rest.is_empty() {
                    items.remove(i);
                } else {
                    remove_path(&mut items[i], rest);
                }
            }
        }
        (PathElement::Value(j), Value::Array(items)) if rest.is_empty() => {
            if let Ok(target) = serde_json::from_str::<Value>(j) {
                items.retain(|it| *it != target);
            }
        }
        (PathElement::Index(i), Value::Array(items)) => {
            if rest.is_empty() && *i < items.len() {
                items.remove(*i);
            } else if let Some(child) = items.get_mut(*i) {
                remove_path(child, rest);
            }
        }
        _ => {}
    }
}
