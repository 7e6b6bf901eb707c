//! PersistentVolumeClaims and PersistentVolumes (core/v1): upstream's v1
//! defaults (`volumeMode: Filesystem`, a PV's reclaim policy `Retain` and
//! hostPath `type: ""`), the registry strategies (a PV starts `Pending`
//! with its phase transition time; the `VolumeAttributesClass` field, whose
//! feature is off in 1.33, is dropped) and validation
//! (`ValidatePersistentVolumeClaim[Update]`,
//! `ValidatePersistentVolume[Update]` in `pkg/apis/core/validation`).
//!
//! Not reproduced: the `cmp.Diff` of Go structs upstream appends to the
//! "spec is immutable" messages (rkube stops after the sentence), the
//! per-source checks of a PV's volume source (`validateHostPathVolumeSource`
//! and friends), node affinity validation, and quantities are printed as
//! written (`0` for zero) rather than re-canonicalized.

use serde_json::{json, Value};

use super::{generic, Generic, Strategy};
use crate::errors::StatusCause;
use crate::meta;
use crate::validation::meta::LabelSelectorValidationOptions;
use crate::validation::podspec::parse_quantity;
use crate::validation::{
    is_dns1123_label, is_dns1123_subdomain, validate_immutable_field, validate_label_selector, BadValue, ErrorList,
    FieldError, Path, FIELD_IMMUTABLE_ERROR_MSG,
};

/// Access modes (sorted, as upstream lists them).
pub const ACCESS_MODES: [&str; 4] = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"];
/// Volume modes (sorted).
pub const VOLUME_MODES: [&str; 2] = ["Block", "Filesystem"];
/// A PV's reclaim policies (sorted).
pub const PV_RECLAIM_POLICIES: [&str; 3] = ["Delete", "Recycle", "Retain"];
/// The beta storage class annotation claims may still carry.
pub const BETA_STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";
const SPEC_IMMUTABLE_MSG: &str =
    "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims";

/// The PV volume sources in upstream's order: JSON key and the path name
/// upstream's "more than 1 volume type" error uses.
const PV_SOURCES: [(&str, &str); 22] = [
    ("hostPath", "hostPath"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("nfs", "nfs"),
    ("rbd", "rbd"),
    ("quobyte", "quobyte"),
    ("cephfs", "cephFS"),
    ("iscsi", "iscsi"),
    ("cinder", "cinder"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("scaleIO", "scaleIO"),
    ("local", "local"),
    ("storageos", "storageos"),
    ("csi", "csi"),
];

/// Which kind a strategy serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Claim,
    Volume,
}

/// The strategy of PersistentVolumeClaims or PersistentVolumes.
#[derive(Clone, Debug)]
pub struct Volumes {
    kind: Kind,
    flags: Generic,
}

impl Volumes {
    /// The strategy of `PersistentVolumeClaim` or `PersistentVolume`.
    pub fn for_kind(kind: &str) -> Option<Volumes> {
        let k = match kind {
            "PersistentVolumeClaim" => Kind::Claim,
            "PersistentVolume" => Kind::Volume,
            _ => return None,
        };
        Some(Volumes { kind: k, flags: generic::for_builtin("", kind, true) })
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn present(v: &Value, key: &str) -> bool {
    v.get(key).is_some_and(|x| !x.is_null())
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
}

/// A quantity as upstream's `Quantity.String()` prints the values that
/// reach an error message (zero is `0`).
fn quantity_text(q: &Value) -> String {
    match (parse_quantity(q), q) {
        (Some(0.0), _) => "0".into(),
        (_, Value::String(s)) => s.clone(),
        (_, other) => other.to_string(),
    }
}

/// The access-mode value rules shared by claims and volumes: known modes,
/// `ReadWriteOncePod` alone.
fn validate_access_mode_values(spec: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let (mut once_pod, mut other) = (false, false);
    for m in strings(spec, "accessModes") {
        if !ACCESS_MODES.contains(&m.as_str()) {
            errs.push(FieldError::not_supported(&path.child("accessModes"), m.as_str(), &ACCESS_MODES));
        } else if m == "ReadWriteOncePod" {
            once_pod = true;
        } else {
            other = true;
        }
    }
    if once_pod && other {
        errs.push(FieldError::forbidden(
            &path.child("accessModes"),
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
    errs
}

/// `ValidatePositiveQuantityValue`.
fn positive_quantity(q: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if parse_quantity(q).is_some_and(|n| n <= 0.0) {
        errs.push(FieldError::invalid(path, quantity_text(q), "must be greater than zero"));
    }
    errs
}

/// `validateDataSource` / `validateDataSourceRef`.
fn validate_data_source(ds: &Value, path: &Path, is_ref: bool) -> ErrorList {
    let mut errs = ErrorList::new();
    for field in ["name", "kind"] {
        if str_of(ds, field).is_empty() {
            errs.push(FieldError::required(&path.child(field), ""));
        }
    }
    let group = str_of(ds, "apiGroup");
    let kind = str_of(ds, "kind");
    if group.is_empty() && kind != "PersistentVolumeClaim" {
        errs.push(FieldError::invalid(
            path,
            kind,
            "must be 'PersistentVolumeClaim' when referencing the default apiGroup",
        ));
    }
    for msg in if group.is_empty() { Vec::new() } else { is_dns1123_subdomain(group) } {
        errs.push(FieldError::invalid(&path.child("apiGroup"), group, &msg));
    }
    let ns = str_of(ds, "namespace");
    if is_ref && !ns.is_empty() {
        for msg in is_dns1123_label(ns) {
            errs.push(FieldError::invalid(&path.child("namespace"), ns, &msg));
        }
    }
    errs
}

/// `ValidatePersistentVolumeClaimSpec` at `spec`.
pub fn validate_claim_spec(spec: &Value, selector_opts: LabelSelectorValidationOptions) -> ErrorList {
    let path = Path::new("spec");
    let mut errs = ErrorList::new();
    if strings(spec, "accessModes").is_empty() {
        errs.push(FieldError::required(&path.child("accessModes"), "at least 1 access mode is required"));
    }
    if let Some(sel) = spec.get("selector").filter(|s| !s.is_null()) {
        errs.extend(validate_label_selector(sel, selector_opts, &path.child("selector")));
    }
    errs.extend(validate_access_mode_values(spec, &path));
    let storage_path = path.child("resources").key("storage");
    match spec.pointer("/resources/requests/storage").filter(|q| !q.is_null()) {
        None => errs.push(FieldError::required(&storage_path, "")),
        Some(q) => errs.extend(positive_quantity(q, &storage_path)),
    }
    let class = str_of(spec, "storageClassName");
    for msg in if class.is_empty() { Vec::new() } else { is_dns1123_subdomain(class) } {
        errs.push(FieldError::invalid(&path.child("storageClassName"), class, &msg));
    }
    if let Some(mode) = spec.get("volumeMode").and_then(Value::as_str) {
        if !VOLUME_MODES.contains(&mode) {
            errs.push(FieldError::not_supported(&path.child("volumeMode"), mode, &VOLUME_MODES));
        }
    }
    let ds = spec.get("dataSource").filter(|d| !d.is_null());
    let dsr = spec.get("dataSourceRef").filter(|d| !d.is_null());
    if let Some(ds) = ds {
        errs.extend(validate_data_source(ds, &path.child("dataSource"), false));
    }
    if let Some(r) = dsr {
        errs.extend(validate_data_source(r, &path.child("dataSourceRef"), true));
    }
    let ds_value = BadValue::Raw(path.child("dataSource").to_string());
    match (ds, dsr) {
        (Some(_), Some(r)) if !str_of(r, "namespace").is_empty() => errs.push(FieldError::invalid(
            &path,
            ds_value,
            "may not be specified when dataSourceRef.namespace is specified",
        )),
        (Some(d), Some(r)) => {
            let same = ["apiGroup", "kind", "name"].iter().all(|f| d.get(*f) == r.get(*f));
            if !same {
                errs.push(FieldError::invalid(&path, ds_value, "must match dataSourceRef"));
            }
        }
        _ => {}
    }
    errs
}

/// `ValidatePersistentVolumeClaimUpdate` minus `ObjectMeta`.
fn validate_claim_update(new: &Value, old: &Value) -> ErrorList {
    let strict = LabelSelectorValidationOptions::default();
    let old_selector = old.pointer("/spec/selector").unwrap_or(&Value::Null);
    let lax = !validate_label_selector(old_selector, strict, &Path::nil()).is_empty();
    let opts = LabelSelectorValidationOptions { allow_invalid_label_value_in_selector: lax, ..strict };
    let (new_spec, old_spec) = (new.get("spec").unwrap_or(&Value::Null), old.get("spec").unwrap_or(&Value::Null));
    let mut errs = validate_claim_spec(new_spec, opts);

    let mut new_clone = new_spec.clone();
    let mut old_clone = old_spec.clone();
    if str_of(old_spec, "volumeName").is_empty() {
        old_clone["volumeName"] = new_spec.get("volumeName").cloned().unwrap_or(Value::Null);
    }
    let annotation = |o: &Value| {
        o.pointer("/metadata/annotations")
            .and_then(|a| a.get(BETA_STORAGE_CLASS_ANNOTATION))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let (old_ann, new_ann) = (annotation(old), annotation(new));
    let old_class = old_spec.get("storageClassName").and_then(Value::as_str);
    let new_class = new_spec.get("storageClassName").and_then(Value::as_str);
    let from_annotation = old_ann.is_some()
        && old_class.is_none()
        && new_class.is_some_and(|c| Some(c) == old_ann.as_deref())
        && (new_ann.is_none() || new_ann == old_ann);
    if from_annotation {
        new_clone["storageClassName"] = Value::Null;
    } else {
        let (n, o) = (new_ann.clone().unwrap_or_default(), old_ann.clone().unwrap_or_default());
        if n != o {
            let p = Path::new("metadata").child("annotations").child(BETA_STORAGE_CLASS_ANNOTATION);
            errs.push(FieldError::invalid(&p, n.as_str(), FIELD_IMMUTABLE_ERROR_MSG));
        }
        let from_nil =
            new_class.is_some() && old_class.is_none() && (old_ann.is_none() || new_class == old_ann.as_deref());
        if from_nil {
            new_clone["storageClassName"] = old_spec.get("storageClassName").cloned().unwrap_or(Value::Null);
        }
    }
    let bound = new.pointer("/status/phase").and_then(Value::as_str) == Some("Bound");
    if bound && new_clone.pointer("/resources/requests").is_some_and(Value::is_object) {
        new_clone["resources"]["requests"]["storage"] =
            old_spec.pointer("/resources/requests/storage").cloned().unwrap_or(Value::Null);
    }
    new_clone["volumeAttributesClassName"] = old_clone.get("volumeAttributesClassName").cloned().unwrap_or(Value::Null);
    if !semantically_equal(&new_clone, &old_clone) {
        errs.push(FieldError::forbidden(&Path::new("spec"), SPEC_IMMUTABLE_MSG));
    }
    let size = |v: &Value, p: &str| v.pointer(p).and_then(parse_quantity).unwrap_or(0.0);
    let (old_size, new_size) =
        (size(old_spec, "/resources/requests/storage"), size(new_spec, "/resources/requests/storage"));
    // RecoverVolumeExpansionFailure (on in 1.33): shrinking is allowed down
    // to just above the capacity in the status.
    if new_size < old_size && new_size <= size(old, "/status/capacity/storage") {
        errs.push(FieldError::forbidden(
            &Path::new("spec").child("resources").child("requests").child("storage"),
            "field can not be less than status.capacity",
        ));
    }
    errs.extend(validate_immutable_field(
        new_spec.get("volumeMode"),
        old_spec.get("volumeMode"),
        &Path::new("volumeMode"),
    ));
    errs
}

/// `apiequality.Semantic.DeepEqual` of two JSON specs: null and absent are
/// the same, quantities compare by value.
fn semantically_equal(a: &Value, b: &Value) -> bool {
    fn strip(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                Value::Object(m.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), strip(v))).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(strip).collect()),
            other => other.clone(),
        }
    }
    let (mut a, mut b) = (strip(a), strip(b));
    for v in [&mut a, &mut b] {
        for key in ["requests", "limits"] {
            if let Some(m) = v.pointer_mut(&format!("/resources/{key}")).and_then(Value::as_object_mut) {
                for q in m.values_mut() {
                    if let Some(n) = parse_quantity(q) {
                        *q = json!(n);
                    }
                }
            }
        }
    }
    a == b
}

/// `ValidatePersistentVolumeSpec` at `spec` (not inline), without the
/// per-source and node-affinity checks.
pub fn validate_volume_spec(spec: &Value) -> ErrorList {
    let path = Path::new("spec");
    let mut errs = ErrorList::new();
    if strings(spec, "accessModes").is_empty() {
        errs.push(FieldError::required(&path.child("accessModes"), ""));
    }
    errs.extend(validate_access_mode_values(spec, &path));
    let cap_path = path.child("capacity");
    let capacity = spec.get("capacity").and_then(Value::as_object);
    if capacity.is_none_or(|c| c.is_empty()) {
        errs.push(FieldError::required(&cap_path, ""));
    }
    if capacity.is_none_or(|c| !c.contains_key("storage") || c.len() > 1) {
        let mut entries: Vec<String> = capacity
            .into_iter()
            .flatten()
            .map(|(k, v)| format!("{}:{}", crate::validation::go_quote(k), quantity_text(v)))
            .collect();
        entries.sort();
        let rendered = if capacity.is_none() {
            "core.ResourceList(nil)".to_string()
        } else {
            format!("core.ResourceList{{{}}}", entries.join(", "))
        };
        errs.push(FieldError::not_supported(&cap_path, BadValue::Raw(rendered), &["storage"]));
    }
    for (name, q) in capacity.into_iter().flatten() {
        let p = cap_path.key(name);
        if parse_quantity(q).is_some_and(|n| n < 0.0) {
            let int = parse_quantity(q).map(|n| n.trunc() as i64).unwrap_or(0);
            errs.push(FieldError::invalid(&p, int, "must be a valid resource quantity"));
        }
        errs.extend(positive_quantity(q, &p));
    }
    let policy = str_of(spec, "persistentVolumeReclaimPolicy");
    if !policy.is_empty() && !PV_RECLAIM_POLICIES.contains(&policy) {
        errs.push(FieldError::not_supported(
            &path.child("persistentVolumeReclaimPolicy"),
            policy,
            &PV_RECLAIM_POLICIES,
        ));
    }
    let mut sources = 0;
    for (key, name) in PV_SOURCES {
        if !present(spec, key) {
            continue;
        }
        // Upstream counts flexVolume without checking for an earlier source.
        if sources > 0 && key != "flexVolume" {
            errs.push(FieldError::forbidden(&path.child(name), "may not specify more than 1 volume type"));
            continue;
        }
        sources += 1;
        if key == "local" && !present(spec, "nodeAffinity") {
            errs.push(FieldError::required(&path.child("nodeAffinity"), "Local volume requires node affinity"));
        }
    }
    if sources == 0 {
        errs.push(FieldError::required(&path, "must specify a volume type"));
    }
    let host_path = spec.pointer("/hostPath/path").and_then(Value::as_str).unwrap_or("");
    if present(spec, "hostPath")
        && host_path.trim_end_matches('/').is_empty()
        && host_path.starts_with('/')
        && policy == "Recycle"
    {
        errs.push(FieldError::forbidden(
            &path.child("persistentVolumeReclaimPolicy"),
            "may not be 'recycle' for a hostPath mount of '/'",
        ));
    }
    let class = str_of(spec, "storageClassName");
    for msg in if class.is_empty() { Vec::new() } else { is_dns1123_subdomain(class) } {
        errs.push(FieldError::invalid(&path.child("storageClassName"), class, &msg));
    }
    if let Some(mode) = spec.get("volumeMode").and_then(Value::as_str) {
        if !VOLUME_MODES.contains(&mode) {
            errs.push(FieldError::not_supported(&path.child("volumeMode"), mode, &VOLUME_MODES));
        }
    }
    errs
}

/// `ValidatePersistentVolumeUpdate` minus `ObjectMeta`.
fn validate_volume_update(new: &Value, old: &Value) -> ErrorList {
    let (new_spec, old_spec) = (new.get("spec").unwrap_or(&Value::Null), old.get("spec").unwrap_or(&Value::Null));
    let mut errs = validate_volume_spec(new_spec);
    let source = |spec: &Value, allow_expand_secret: bool| {
        let mut m = serde_json::Map::new();
        for (key, _) in PV_SOURCES {
            if let Some(v) = spec.get(key).filter(|v| !v.is_null()) {
                m.insert(key.to_string(), v.clone());
            }
        }
        if allow_expand_secret {
            if let Some(csi) = m.get_mut("csi").and_then(Value::as_object_mut) {
                csi.remove("controllerExpandSecretRef");
            }
        }
        Value::Object(m)
    };
    // A CSI volume may gain a controllerExpandSecretRef.
    let gains_secret = old_spec.pointer("/csi").is_some_and(|c| !present(c, "controllerExpandSecretRef"))
        && new_spec.pointer("/csi/controllerExpandSecretRef").is_some_and(|v| !v.is_null());
    if !semantically_equal(&source(new_spec, gains_secret), &source(old_spec, false)) {
        errs.push(FieldError::forbidden(
            &Path::new("spec").child("persistentvolumesource"),
            "spec.persistentvolumesource is immutable after creation",
        ));
    }
    errs.extend(validate_immutable_field(
        new_spec.get("volumeMode"),
        old_spec.get("volumeMode"),
        &Path::new("volumeMode"),
    ));
    errs
}

/// Drops `spec.volumeAttributesClassName` unless the old object uses it
/// (the `VolumeAttributesClass` feature is off by default in 1.33).
fn drop_volume_attributes_class(new: &mut Value, old: Option<&Value>) {
    if old.is_some_and(|o| o.pointer("/spec/volumeAttributesClassName").is_some_and(|v| !v.is_null())) {
        return;
    }
    if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("volumeAttributesClassName");
    }
}

impl Strategy for Volumes {
    /// `SetDefaults_PersistentVolumeClaimSpec` / `SetDefaults_PersistentVolume`
    /// (and the hostPath source's empty `type`).
    fn default(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
        if spec.get("volumeMode").is_none_or(Value::is_null) {
            spec.insert("volumeMode".into(), json!("Filesystem"));
        }
        if self.kind == Kind::Volume {
            if spec.get("persistentVolumeReclaimPolicy").and_then(Value::as_str).unwrap_or("").is_empty() {
                spec.insert("persistentVolumeReclaimPolicy".into(), json!("Retain"));
            }
            if let Some(hp) = spec.get_mut("hostPath").and_then(Value::as_object_mut) {
                hp.entry("type").or_insert(json!(""));
            }
        }
    }

    /// A claim starts `Pending` (upstream resets the status and its
    /// defaulter, run again when the object is read, fills in the phase); a
    /// volume `Pending`, with the time of that phase.
    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = match self.kind {
            Kind::Claim => json!({"phase": "Pending"}),
            Kind::Volume => json!({"phase": "Pending", "lastPhaseTransitionTime": meta::now()}),
        };
        drop_volume_attributes_class(obj, None);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        super::copy_field(new, old, "status");
        drop_volume_attributes_class(new, Some(old));
    }

    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        match self.kind {
            Kind::Claim => validate_claim_spec(spec, LabelSelectorValidationOptions::default()),
            Kind::Volume => validate_volume_spec(spec),
        }
        .to_causes()
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        match self.kind {
            Kind::Claim => validate_claim_update(new, old),
            Kind::Volume => validate_volume_update(new, old),
        }
        .to_causes()
    }

    fn has_status_subresource(&self) -> bool {
        true
    }
    fn tracks_generation(&self) -> bool {
        self.flags.tracks_generation
    }
    fn return_deleted_object(&self) -> bool {
        self.flags.return_deleted_object
    }
}

#[cfg(test)]
mod tests;
