//! `ObjectMeta` validation on create and update, following upstream's
//! `k8s.io/apimachinery/pkg/api/validation/objectmeta.go` and
//! `pkg/apis/meta/v1/validation/validation.go` (v0.33): names and
//! `generateName`, namespace required/forbidden, generation, labels,
//! annotations (keys and the 256 KiB total), owner references, finalizers,
//! managed fields, and on update the immutable fields.
//!
//! Inputs are the JSON `metadata` objects (`serde_json::Value`). Fields of
//! the wrong JSON type are treated as absent: typed decoding rejects them
//! before validation runs. Map keys are visited in sorted order (upstream
//! visits Go maps in random order, so any order is faithful).

use serde_json::{Map, Value};

use super::field::{go_quote, go_string_slice, go_time_string, BadValue, ErrorList, FieldError, Path};
use super::names::{is_qualified_name, is_valid_label_value, NameValidation, ValidateName};

/// `FieldImmutableErrorMsg`.
pub const FIELD_IMMUTABLE_ERROR_MSG: &str = "field is immutable";
/// `IsNegativeErrorMsg`.
pub const IS_NEGATIVE_ERROR_MSG: &str = "must be greater than or equal to 0";
/// `TotalAnnotationSizeLimitB`: 256 KiB over all keys and values.
pub const TOTAL_ANNOTATION_SIZE_LIMIT_BYTES: usize = 256 * 1024;
/// `FieldManagerMaxLength`.
pub const FIELD_MANAGER_MAX_LENGTH: usize = 128;
/// `MaxSubresourceNameLength`.
pub const MAX_SUBRESOURCE_NAME_LENGTH: usize = 256;
/// The orphan finalizer.
pub const FINALIZER_ORPHAN_DEPENDENTS: &str = "orphan";
/// The foreground-deletion finalizer.
pub const FINALIZER_DELETE_DEPENDENTS: &str = "foregroundDeletion";

fn str_field<'a>(m: &'a Value, k: &str) -> &'a str {
    m.get(k).and_then(Value::as_str).unwrap_or("")
}

fn sorted_string_map(v: Option<&Value>) -> Vec<(&str, &str)> {
    let mut out: Vec<(&str, &str)> = match v.and_then(Value::as_object) {
        Some(m) => m.iter().map(|(k, v)| (k.as_str(), v.as_str().unwrap_or(""))).collect(),
        None => Vec::new(),
    };
    out.sort_by(|a, b| a.0.cmp(b.0));
    out
}

fn string_list(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default()
}

/// `ValidateLabelName`: one `Invalid` per problem with the key.
pub fn validate_label_name(name: &str, path: &Path) -> ErrorList {
    is_qualified_name(name).into_iter().map(|m| FieldError::invalid(path, name, &m)).collect::<Vec<_>>().into()
}

/// `ValidateLabels` over a JSON labels object: key and value problems are
/// reported against `path` itself (`metadata.labels`), not a keyed path.
pub fn validate_labels(labels: Option<&Value>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for (k, v) in sorted_string_map(labels) {
        errs.extend(validate_label_name(k, path));
        for m in is_valid_label_value(v) {
            errs.push(FieldError::invalid(path, v, &m));
        }
    }
    errs
}

/// `ValidateAnnotations`: keys are qualified names compared in lower case,
/// and the sum of key and value bytes may not exceed 256 KiB (`Too long:
/// may not be more than 262144 bytes`).
pub fn validate_annotations(annotations: Option<&Value>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let pairs = sorted_string_map(annotations);
    for (k, _) in &pairs {
        for m in is_qualified_name(&k.to_lowercase()) {
            errs.push(FieldError::invalid(path, *k, &m));
        }
    }
    let total: usize = pairs.iter().map(|(k, v)| k.len() + v.len()).sum();
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_BYTES {
        errs.push(FieldError::too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT_BYTES as i64));
    }
    errs
}

/// `ValidateFinalizerName`.
pub fn validate_finalizer_name(name: &str, path: &Path) -> ErrorList {
    is_qualified_name(name).into_iter().map(|m| FieldError::invalid(path, name, &m)).collect::<Vec<_>>().into()
}

/// `ValidateFinalizers`: every name qualified, and not both `orphan` and
/// `foregroundDeletion`.
pub fn validate_finalizers(finalizers: Option<&Value>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let list = string_list(finalizers);
    for f in &list {
        errs.extend(validate_finalizer_name(f, path));
    }
    if list.contains(&FINALIZER_ORPHAN_DEPENDENTS) && list.contains(&FINALIZER_DELETE_DEPENDENTS) {
        errs.push(FieldError::invalid(
            path,
            BadValue::Raw(go_string_slice(&list, false)),
            &format!("finalizer {FINALIZER_ORPHAN_DEPENDENTS} and {FINALIZER_DELETE_DEPENDENTS} cannot be both set"),
        ));
    }
    errs
}

/// `ValidateNoNewFinalizers` (object already being deleted).
pub fn validate_no_new_finalizers(new: Option<&Value>, old: Option<&Value>, path: &Path) -> ErrorList {
    let old = string_list(old);
    let mut extra: Vec<&str> = string_list(new).into_iter().filter(|f| !old.contains(f)).collect();
    extra.sort();
    extra.dedup();
    let mut errs = ErrorList::new();
    if !extra.is_empty() {
        errs.push(FieldError::forbidden(
            path,
            &format!(
                "no new finalizers can be added if the object is being deleted, found new finalizers {}",
                go_string_slice(&extra, false)
            ),
        ));
    }
    errs
}

/// Go's `%#v` of a `metav1.OwnerReference` (how upstream prints one in an
/// error); pointer fields print as `(*bool)(nil)` or a placeholder address.
fn go_owner_reference(r: &Value) -> String {
    let ptr = |k: &str| match r.get(k).and_then(Value::as_bool) {
        Some(_) => "(*bool)(0xc000000000)".to_string(),
        None => "(*bool)(nil)".to_string(),
    };
    format!(
        "v1.OwnerReference{{APIVersion:{}, Kind:{}, Name:{}, UID:{}, Controller:{}, BlockOwnerDeletion:{}}}",
        go_quote(str_field(r, "apiVersion")),
        go_quote(str_field(r, "kind")),
        go_quote(str_field(r, "name")),
        go_quote(str_field(r, "uid")),
        ptr("controller"),
        ptr("blockOwnerDeletion")
    )
}

/// `validateOwnerReference`: apiVersion with a version, kind, name and uid
/// present; core/v1 `Event` may not own anything.
fn validate_owner_reference(r: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let api_version = str_field(r, "apiVersion");
    let kind = str_field(r, "kind");
    // schema.FromAPIVersionAndKind: "v1" → group "", "g/v" → (g, v); more
    // slashes fail to parse and leave both empty.
    let (group, version) = match api_version.matches('/').count() {
        0 => ("", api_version),
        1 => api_version.split_once('/').unwrap(),
        _ => ("", ""),
    };
    if version.is_empty() {
        errs.push(FieldError::invalid(&path.child("apiVersion"), api_version, "version must not be empty"));
    }
    if kind.is_empty() {
        errs.push(FieldError::invalid(&path.child("kind"), kind, "kind must not be empty"));
    }
    let name = str_field(r, "name");
    if name.is_empty() {
        errs.push(FieldError::invalid(&path.child("name"), name, "name must not be empty"));
    }
    let uid = str_field(r, "uid");
    if uid.is_empty() {
        errs.push(FieldError::invalid(&path.child("uid"), uid, "uid must not be empty"));
    }
    if group.is_empty() && version == "v1" && kind == "Event" {
        errs.push(FieldError::invalid(
            path,
            BadValue::Raw(go_owner_reference(r)),
            "/v1, Kind=Event is disallowed from being an owner",
        ));
    }
    errs
}

/// `ValidateOwnerReferences`: each reference's shape, and at most one with
/// `controller: true`.
pub fn validate_owner_references(refs: Option<&Value>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(list) = refs.and_then(Value::as_array) else { return errs };
    let mut first_controller: Option<String> = None;
    for r in list {
        errs.extend(validate_owner_reference(r, path));
        if r.get("controller").and_then(Value::as_bool) == Some(true) {
            let cur = format!("{}/{}", str_field(r, "kind"), str_field(r, "name"));
            match &first_controller {
                Some(first) => {
                    let all: Vec<String> = list.iter().map(go_owner_reference).collect();
                    errs.push(FieldError::invalid(
                        path,
                        BadValue::Raw(format!("[]v1.OwnerReference{{{}}}", all.join(", "))),
                        &format!(
                            "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {cur}"
                        ),
                    ));
                }
                None => first_controller = Some(cur),
            }
        }
    }
    errs
}

/// `ValidateFieldManager`: at most 128 bytes, printable characters only.
pub fn validate_field_manager(manager: &str, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if manager.len() > FIELD_MANAGER_MAX_LENGTH {
        errs.push(FieldError::too_long(path, FIELD_MANAGER_MAX_LENGTH as i64));
    }
    for (i, c) in manager.char_indices() {
        if c.is_control() {
            errs.push(FieldError::invalid(
                path,
                manager,
                &format!("invalid character U+{:04X} (at position {i})", c as u32),
            ));
        }
    }
    errs
}

/// `ValidateManagedFields`: operation `Apply` or `Update`, fieldsType
/// `FieldsV1` when set, a valid manager, subresource ≤ 256 bytes.
pub fn validate_managed_fields(entries: Option<&Value>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(list) = entries.and_then(Value::as_array) else { return errs };
    for (i, e) in list.iter().enumerate() {
        let p = path.index(i);
        let op = str_field(e, "operation");
        if op != "Apply" && op != "Update" {
            errs.push(FieldError::invalid(&p.child("operation"), op, "must be `Apply` or `Update`"));
        }
        let ft = str_field(e, "fieldsType");
        if !ft.is_empty() && ft != "FieldsV1" {
            errs.push(FieldError::invalid(&p.child("fieldsType"), ft, "must be `FieldsV1`"));
        }
        errs.extend(validate_field_manager(str_field(e, "manager"), &p.child("manager")));
        if str_field(e, "subresource").len() > MAX_SUBRESOURCE_NAME_LENGTH {
            errs.push(FieldError::too_long(&p.child("subresource"), MAX_SUBRESOURCE_NAME_LENGTH as i64));
        }
    }
    errs
}

/// `ValidateNonnegativeField`.
pub fn validate_nonnegative(value: i64, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if value < 0 {
        errs.push(FieldError::invalid(path, value, IS_NEGATIVE_ERROR_MSG));
    }
    errs
}

/// `ValidateObjectMetaAccessor`: the metadata of an object being created.
///
/// * `meta` — the `metadata` object. The name must already be generated
///   from `generateName` (as upstream's `BeforeCreate` does before
///   validating); both are still checked here.
/// * `namespaced` — whether the kind is namespaced: then `namespace` is
///   required and must be a DNS-1123 label; otherwise it is forbidden
///   (upstream's `BeforeCreate` clears it for cluster-scoped kinds first, so
///   the REST layer should do the same before calling this).
/// * `names` — the kind's name rule ([`NameValidation`] or a closure).
/// * `path` — normally `Path::new("metadata")`
///   (`spec.template.metadata` for templates).
///
/// Checks, in upstream's order: generateName, name (`Required value: name or
/// generateName is required`), namespace, generation ≥ 0, labels,
/// annotations, ownerReferences, finalizers, managedFields.
pub fn validate_object_meta(meta: &Value, namespaced: bool, names: &dyn ValidateName, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let generate_name = str_field(meta, "generateName");
    if !generate_name.is_empty() {
        for m in names.validate_name(generate_name, true) {
            errs.push(FieldError::invalid(&path.child("generateName"), generate_name, &m));
        }
    }
    let name = str_field(meta, "name");
    if name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), "name or generateName is required"));
    } else {
        for m in names.validate_name(name, false) {
            errs.push(FieldError::invalid(&path.child("name"), name, &m));
        }
    }
    let namespace = str_field(meta, "namespace");
    if namespaced {
        if namespace.is_empty() {
            errs.push(FieldError::required(&path.child("namespace"), ""));
        } else {
            for m in NameValidation::Dns1123Label.validate(namespace, false) {
                errs.push(FieldError::invalid(&path.child("namespace"), namespace, &m));
            }
        }
    } else if !namespace.is_empty() {
        errs.push(FieldError::forbidden(&path.child("namespace"), "not allowed on this type"));
    }
    errs.extend(validate_nonnegative(
        meta.get("generation").and_then(Value::as_i64).unwrap_or(0),
        &path.child("generation"),
    ));
    errs.extend(validate_labels(meta.get("labels"), &path.child("labels")));
    errs.extend(validate_annotations(meta.get("annotations"), &path.child("annotations")));
    errs.extend(validate_owner_references(meta.get("ownerReferences"), &path.child("ownerReferences")));
    errs.extend(validate_finalizers(meta.get("finalizers"), &path.child("finalizers")));
    errs.extend(validate_managed_fields(meta.get("managedFields"), &path.child("managedFields")));
    errs
}

fn immutable(
    new: Option<&Value>,
    old: Option<&Value>,
    path: &Path,
    render: fn(Option<&Value>) -> BadValue,
) -> ErrorList {
    let norm = |v: Option<&Value>| match v {
        None | Some(Value::Null) => None,
        Some(x) => Some(x.clone()),
    };
    let mut errs = ErrorList::new();
    if norm(new) != norm(old) {
        errs.push(FieldError::invalid(path, render(new), FIELD_IMMUTABLE_ERROR_MSG));
    }
    errs
}

fn render_str(v: Option<&Value>) -> BadValue {
    BadValue::Str(v.and_then(Value::as_str).unwrap_or("").to_string())
}

fn render_time(v: Option<&Value>) -> BadValue {
    // metav1.Time prints through time.Time.String(); the zero time when unset.
    match v.and_then(Value::as_str) {
        Some(s) => BadValue::Raw(go_time_string(s)),
        None => BadValue::Raw("0001-01-01 00:00:00 +0000 UTC".into()),
    }
}

fn render_time_ptr(v: Option<&Value>) -> BadValue {
    match v.and_then(Value::as_str) {
        Some(s) => BadValue::Raw(go_time_string(s)),
        None => BadValue::Null,
    }
}

fn render_int_ptr(v: Option<&Value>) -> BadValue {
    match v.and_then(Value::as_i64) {
        Some(i) => BadValue::Int(i),
        None => BadValue::Null,
    }
}

/// `ValidateObjectMetaAccessorUpdate`: the metadata of an update.
///
/// In upstream's order: no new finalizers once `deletionTimestamp` is set on
/// the old object; `resourceVersion` present (`must be specified for an
/// update`); generation not decremented; name, namespace, uid,
/// creationTimestamp, deletionTimestamp, deletionGracePeriodSeconds
/// immutable (`field is immutable`); then labels, annotations,
/// ownerReferences and managedFields of the new metadata.
///
/// The REST layer first copies uid (when empty), creationTimestamp,
/// deletionTimestamp and deletionGracePeriodSeconds from the old object as
/// upstream's `BeforeUpdate` does; these checks catch what remains.
pub fn validate_object_meta_update(new: &Value, old: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if old.get("deletionTimestamp").is_some_and(|v| !v.is_null()) {
        errs.extend(validate_no_new_finalizers(
            new.get("finalizers"),
            old.get("finalizers"),
            &path.child("finalizers"),
        ));
    }
    let rv = str_field(new, "resourceVersion");
    if rv.is_empty() {
        errs.push(FieldError::invalid(&path.child("resourceVersion"), rv, "must be specified for an update"));
    }
    let new_gen = new.get("generation").and_then(Value::as_i64).unwrap_or(0);
    let old_gen = old.get("generation").and_then(Value::as_i64).unwrap_or(0);
    if new_gen < old_gen {
        errs.push(FieldError::invalid(&path.child("generation"), new_gen, "must not be decremented"));
    }
    let str_or_empty = |m: &Value, k: &str| -> Option<Value> {
        Some(Value::String(m.get(k).and_then(Value::as_str).unwrap_or("").to_string()))
    };
    for k in ["name", "namespace", "uid"] {
        let (n, o) = (str_or_empty(new, k), str_or_empty(old, k));
        errs.extend(immutable(n.as_ref(), o.as_ref(), &path.child(k), render_str));
    }
    errs.extend(immutable(
        new.get("creationTimestamp"),
        old.get("creationTimestamp"),
        &path.child("creationTimestamp"),
        render_time,
    ));
    errs.extend(immutable(
        new.get("deletionTimestamp"),
        old.get("deletionTimestamp"),
        &path.child("deletionTimestamp"),
        render_time_ptr,
    ));
    errs.extend(immutable(
        new.get("deletionGracePeriodSeconds"),
        old.get("deletionGracePeriodSeconds"),
        &path.child("deletionGracePeriodSeconds"),
        render_int_ptr,
    ));
    errs.extend(validate_labels(new.get("labels"), &path.child("labels")));
    errs.extend(validate_annotations(new.get("annotations"), &path.child("annotations")));
    errs.extend(validate_owner_references(new.get("ownerReferences"), &path.child("ownerReferences")));
    errs.extend(validate_managed_fields(new.get("managedFields"), &path.child("managedFields")));
    errs
}

/// `ValidateImmutableField` for two JSON values (`null` = absent):
/// `Invalid value: <new>: field is immutable`, strings quoted, other values
/// printed as JSON.
pub fn validate_immutable_field(new: Option<&Value>, old: Option<&Value>, path: &Path) -> ErrorList {
    immutable(new, old, path, |v| match v {
        None | Some(Value::Null) => BadValue::Null,
        Some(Value::String(s)) => BadValue::Str(s.clone()),
        Some(Value::Bool(b)) => BadValue::Bool(*b),
        Some(Value::Number(n)) if n.is_i64() => BadValue::Int(n.as_i64().unwrap()),
        Some(other) => BadValue::Raw(other.to_string()),
    })
}

/// Options of [`validate_label_selector`] (upstream
/// `LabelSelectorValidationOptions`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LabelSelectorValidationOptions {
    /// Skip label-value checks of `values` (kept for old stored data).
    pub allow_invalid_label_value_in_selector: bool,
    /// Accept operators other than the four known ones.
    pub allow_unknown_operator_in_requirement: bool,
}

/// `ValidateLabelSelector` for a `metav1.LabelSelector` JSON object inside a
/// spec (e.g. `spec.selector`): matchLabels as labels; each matchExpression's
/// operator, values (required for In/NotIn: `must be specified when
/// `operator` is 'In' or 'NotIn'`; forbidden for Exists/DoesNotExist),
/// key and value formats. `null` is valid.
pub fn validate_label_selector(selector: &Value, opts: LabelSelectorValidationOptions, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if selector.is_null() {
        return errs;
    }
    errs.extend(validate_labels(selector.get("matchLabels"), &path.child("matchLabels")));
    if let Some(exprs) = selector.get("matchExpressions").and_then(Value::as_array) {
        for (i, e) in exprs.iter().enumerate() {
            errs.extend(validate_label_selector_requirement(e, opts, &path.child("matchExpressions").index(i)));
        }
    }
    errs
}

/// `ValidateLabelSelectorRequirement` for one matchExpressions entry.
pub fn validate_label_selector_requirement(
    req: &Value,
    opts: LabelSelectorValidationOptions,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let op = str_field(req, "operator");
    let values = string_list(req.get("values"));
    match op {
        "In" | "NotIn" => {
            if values.is_empty() {
                errs.push(FieldError::required(
                    &path.child("values"),
                    "must be specified when `operator` is 'In' or 'NotIn'",
                ));
            }
        }
        "Exists" | "DoesNotExist" => {
            if !values.is_empty() {
                errs.push(FieldError::forbidden(
                    &path.child("values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                ));
            }
        }
        _ => {
            if !opts.allow_unknown_operator_in_requirement {
                errs.push(FieldError::invalid(&path.child("operator"), op, "not a valid selector operator"));
            }
        }
    }
    errs.extend(validate_label_name(str_field(req, "key"), &path.child("key")));
    if !opts.allow_invalid_label_value_in_selector {
        for (i, v) in values.iter().enumerate() {
            for m in is_valid_label_value(v) {
                errs.push(FieldError::invalid(&path.child("values").index(i), *v, &m));
            }
        }
    }
    errs
}

/// A JSON string map (labels/annotations) as a sorted vector, for callers
/// that need upstream-like iteration.
pub fn string_map_entries(m: &Map<String, Value>) -> Vec<(&str, &str)> {
    let mut out: Vec<(&str, &str)> = m.iter().filter_map(|(k, v)| v.as_str().map(|s| (k.as_str(), s))).collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msgs(l: &ErrorList) -> Vec<String> {
        l.iter().map(|e| e.to_string()).collect()
    }

    fn meta_path() -> Path {
        Path::new("metadata")
    }

    const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

    #[test]
    fn create_requires_a_name_or_generate_name() {
        let e = validate_object_meta(
            &json!({"namespace": "default"}),
            true,
            &NameValidation::Dns1123Subdomain,
            &meta_path(),
        );
        assert_eq!(msgs(&e), vec!["metadata.name: Required value: name or generateName is required"]);
        assert_eq!(e.to_causes()[0].reason, "FieldValueRequired");
        assert_eq!(e.to_causes()[0].message, "Required value: name or generateName is required");
    }

    #[test]
    fn create_table() {
        let sub = NameValidation::Dns1123Subdomain;
        let cases: Vec<(Value, bool, Vec<String>)> = vec![
            (json!({"name": "ok", "namespace": "default"}), true, vec![]),
            (json!({"name": "ok"}), false, vec![]),
            (json!({"name": "ok"}), true, vec!["metadata.namespace: Required value".into()]),
            (
                json!({"name": "ok", "namespace": "default"}),
                false,
                vec!["metadata.namespace: Forbidden: not allowed on this type".into()],
            ),
            (
                json!({"name": "Bad_Name", "namespace": "default"}),
                true,
                vec![format!("metadata.name: Invalid value: \"Bad_Name\": {SUBDOMAIN_MSG}")],
            ),
            (
                json!({"generateName": "Web-", "name": "Web-abcde", "namespace": "default"}),
                true,
                vec![
                    format!("metadata.generateName: Invalid value: \"Web-\": {SUBDOMAIN_MSG}"),
                    format!("metadata.name: Invalid value: \"Web-abcde\": {SUBDOMAIN_MSG}"),
                ],
            ),
            (json!({"generateName": "web-", "name": "web-x2b4z", "namespace": "default"}), true, vec![]),
            (
                json!({"name": "ok", "namespace": "Default"}),
                true,
                vec!["metadata.namespace: Invalid value: \"Default\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".into()],
            ),
            (
                json!({"name": "ok", "generation": -1}),
                false,
                vec!["metadata.generation: Invalid value: -1: must be greater than or equal to 0".into()],
            ),
            (
                json!({"name": "ok", "labels": {"app": "web", "bad key": "x", "k": "bad value"}}),
                false,
                vec![
                    "metadata.labels: Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".into(),
                    "metadata.labels: Invalid value: \"bad value\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".into(),
                ],
            ),
            (json!({"name": "ok", "annotations": {"Example.COM/Key": "anything at all, spaces too"}}), false, vec![]),
            (
                json!({"name": "ok", "annotations": {"a/b/c": "x"}}),
                false,
                vec!["metadata.annotations: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".into()],
            ),
            (
                json!({"name": "ok", "finalizers": ["kubernetes.io/pvc-protection", "bad/fin/alizer"]}),
                false,
                vec!["metadata.finalizers: Invalid value: \"bad/fin/alizer\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".into()],
            ),
            (
                json!({"name": "ok", "finalizers": ["orphan", "foregroundDeletion"]}),
                false,
                vec!["metadata.finalizers: Invalid value: []string{\"orphan\", \"foregroundDeletion\"}: finalizer orphan and foregroundDeletion cannot be both set".into()],
            ),
        ];
        for (meta, namespaced, want) in cases {
            let got = msgs(&validate_object_meta(&meta, namespaced, &sub, &meta_path()));
            assert_eq!(got, want, "meta {meta}");
        }
    }

    #[test]
    fn annotations_total_size_is_limited_to_256_kib() {
        let just = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT_BYTES - 1);
        let e = validate_annotations(Some(&json!({"a": just})), &meta_path().child("annotations"));
        assert!(e.is_empty());
        let over = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT_BYTES);
        let e = validate_annotations(Some(&json!({"a": over})), &meta_path().child("annotations"));
        assert_eq!(msgs(&e), vec!["metadata.annotations: Too long: may not be more than 262144 bytes"]);
        assert_eq!(e.to_causes()[0].reason, "FieldValueTooLong");
    }

    #[test]
    fn owner_references_shape() {
        let p = meta_path().child("ownerReferences");
        let e = validate_owner_references(Some(&json!([{}])), &p);
        assert_eq!(
            msgs(&e),
            vec![
                "metadata.ownerReferences.apiVersion: Invalid value: \"\": version must not be empty",
                "metadata.ownerReferences.kind: Invalid value: \"\": kind must not be empty",
                "metadata.ownerReferences.name: Invalid value: \"\": name must not be empty",
                "metadata.ownerReferences.uid: Invalid value: \"\": uid must not be empty",
            ]
        );
        let ok =
            json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1", "controller": true}]);
        assert!(validate_owner_references(Some(&ok), &p).is_empty());
        let e = validate_owner_references(
            Some(&json!([{"apiVersion": "apps/", "kind": "X", "name": "n", "uid": "u"}])),
            &p,
        );
        assert_eq!(
            msgs(&e),
            vec!["metadata.ownerReferences.apiVersion: Invalid value: \"apps/\": version must not be empty"]
        );
        let two = json!([
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "a", "uid": "u1", "controller": true},
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "b", "uid": "u2", "controller": true}
        ]);
        let e = validate_owner_references(Some(&two), &p);
        assert_eq!(e.len(), 1);
        assert!(e.0[0].body().ends_with(
            "Only one reference can have Controller set to true. Found \"true\" in references for ReplicaSet/a and ReplicaSet/b"
        ));
        assert!(e.0[0]
            .body()
            .starts_with("Invalid value: []v1.OwnerReference{v1.OwnerReference{APIVersion:\"apps/v1\""));
        let ev = json!([{"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u"}]);
        let e = validate_owner_references(Some(&ev), &p);
        assert_eq!(
            msgs(&e),
            vec!["metadata.ownerReferences: Invalid value: v1.OwnerReference{APIVersion:\"v1\", Kind:\"Event\", Name:\"e\", UID:\"u\", Controller:(*bool)(nil), BlockOwnerDeletion:(*bool)(nil)}: /v1, Kind=Event is disallowed from being an owner"]
        );
    }

    #[test]
    fn managed_fields_shape() {
        let p = meta_path().child("managedFields");
        let good = json!([{"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1"}]);
        assert!(validate_managed_fields(Some(&good), &p).is_empty());
        let bad = json!([{"manager": "m\u{1}", "operation": "Patch", "fieldsType": "FieldsV2", "subresource": "s".repeat(257)}]);
        assert_eq!(
            msgs(&validate_managed_fields(Some(&bad), &p)),
            vec![
                "metadata.managedFields[0].operation: Invalid value: \"Patch\": must be `Apply` or `Update`",
                "metadata.managedFields[0].fieldsType: Invalid value: \"FieldsV2\": must be `FieldsV1`",
                "metadata.managedFields[0].manager: Invalid value: \"m\\x01\": invalid character U+0001 (at position 1)",
                "metadata.managedFields[0].subresource: Too long: may not be more than 256 bytes",
            ]
        );
    }

    #[test]
    fn update_immutables_and_resource_version() {
        let old = json!({"name": "a", "namespace": "default", "uid": "u1", "resourceVersion": "5",
            "creationTimestamp": "2024-01-02T03:04:05Z", "generation": 3});
        let same = old.clone();
        assert!(validate_object_meta_update(&same, &old, &meta_path()).is_empty());

        let new = json!({"name": "b", "namespace": "other", "uid": "u2",
            "creationTimestamp": "2025-01-01T00:00:00Z", "generation": 2,
            "deletionTimestamp": "2025-01-01T00:00:00Z", "deletionGracePeriodSeconds": 30});
        assert_eq!(
            msgs(&validate_object_meta_update(&new, &old, &meta_path())),
            vec![
                "metadata.resourceVersion: Invalid value: \"\": must be specified for an update",
                "metadata.generation: Invalid value: 2: must not be decremented",
                "metadata.name: Invalid value: \"b\": field is immutable",
                "metadata.namespace: Invalid value: \"other\": field is immutable",
                "metadata.uid: Invalid value: \"u2\": field is immutable",
                "metadata.creationTimestamp: Invalid value: 2025-01-01 00:00:00 +0000 UTC: field is immutable",
                "metadata.deletionTimestamp: Invalid value: 2025-01-01 00:00:00 +0000 UTC: field is immutable",
                "metadata.deletionGracePeriodSeconds: Invalid value: 30: field is immutable",
            ]
        );
        let dropped = json!({"name": "a", "namespace": "default", "uid": "u1", "resourceVersion": "5",
            "creationTimestamp": "2024-01-02T03:04:05Z", "generation": 3});
        let deleting = json!({"name": "a", "namespace": "default", "uid": "u1", "resourceVersion": "5",
            "creationTimestamp": "2024-01-02T03:04:05Z", "generation": 3,
            "deletionTimestamp": "2025-01-01T00:00:00Z", "deletionGracePeriodSeconds": 0});
        assert_eq!(
            msgs(&validate_object_meta_update(&dropped, &deleting, &meta_path())),
            vec![
                "metadata.deletionTimestamp: Invalid value: null: field is immutable",
                "metadata.deletionGracePeriodSeconds: Invalid value: null: field is immutable",
            ]
        );
    }

    #[test]
    fn no_new_finalizers_while_deleting() {
        let old = json!({"name": "a", "resourceVersion": "1", "finalizers": ["x"], "deletionTimestamp": "2025-01-01T00:00:00Z"});
        let mut new = old.clone();
        new["finalizers"] = json!(["x", "z", "y"]);
        assert_eq!(
            msgs(&validate_object_meta_update(&new, &old, &meta_path())),
            vec!["metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"y\", \"z\"}"]
        );
        new["finalizers"] = json!([]);
        assert!(validate_object_meta_update(&new, &old, &meta_path()).is_empty());
    }

    #[test]
    fn immutable_field_helper() {
        let p = Path::new("data");
        assert!(validate_immutable_field(Some(&json!({"a": 1})), Some(&json!({"a": 1})), &p).is_empty());
        assert!(validate_immutable_field(None, Some(&Value::Null), &p).is_empty());
        assert_eq!(
            msgs(&validate_immutable_field(Some(&json!(true)), Some(&json!(false)), &p)),
            vec!["data: Invalid value: true: field is immutable"]
        );
        assert_eq!(
            msgs(&validate_immutable_field(None, Some(&json!("x")), &p)),
            vec!["data: Invalid value: null: field is immutable"]
        );
    }

    #[test]
    fn label_selector_validation() {
        let p = Path::new("spec").child("selector");
        let o = LabelSelectorValidationOptions::default();
        assert!(validate_label_selector(&Value::Null, o, &p).is_empty());
        let good = json!({"matchLabels": {"app": "web"}, "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["a", "b"]},
            {"key": "env", "operator": "DoesNotExist"}]});
        assert!(validate_label_selector(&good, o, &p).is_empty());
        let bad = json!({"matchLabels": {"app": "-web"}, "matchExpressions": [
            {"key": "tier", "operator": "In"},
            {"key": "env", "operator": "Exists", "values": ["x"]},
            {"key": "bad key", "operator": "Gt", "values": ["1"]},
            {"key": "k", "operator": "NotIn", "values": ["ok", "not ok"]}]});
        let got = msgs(&validate_label_selector(&bad, o, &p));
        assert_eq!(got.len(), 6, "{got:#?}");
        assert!(got[0].starts_with("spec.selector.matchLabels: Invalid value: \"-web\": a valid label must be"));
        assert_eq!(got[1], "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'");
        assert_eq!(got[2], "spec.selector.matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
        assert_eq!(
            got[3],
            "spec.selector.matchExpressions[2].operator: Invalid value: \"Gt\": not a valid selector operator"
        );
        assert!(got[4]
            .starts_with("spec.selector.matchExpressions[2].key: Invalid value: \"bad key\": name part must consist"));
        assert!(got[5].starts_with(
            "spec.selector.matchExpressions[3].values[1]: Invalid value: \"not ok\": a valid label must be"
        ));
        let lax = LabelSelectorValidationOptions {
            allow_invalid_label_value_in_selector: true,
            allow_unknown_operator_in_requirement: true,
        };
        let got = msgs(&validate_label_selector(&bad, lax, &p));
        assert_eq!(got.len(), 4, "{got:#?}");
    }

    #[test]
    fn closures_can_be_name_rules() {
        let rule =
            |n: &str, _prefix: bool| if n.contains(':') { vec!["may not contain ':'".to_string()] } else { vec![] };
        let e = validate_object_meta(&json!({"name": "a:b"}), false, &rule, &meta_path());
        assert_eq!(msgs(&e), vec!["metadata.name: Invalid value: \"a:b\": may not contain ':'"]);
    }

    #[test]
    fn string_map_entries_sorted() {
        let m = json!({"b": "2", "a": "1", "c": 3});
        assert_eq!(string_map_entries(m.as_object().unwrap()), vec![("a", "1"), ("b", "2")]);
    }
}
