//! StorageClasses (`storage.k8s.io/v1`): upstream's v1 defaults
//! (`reclaimPolicy: Delete`, `volumeBindingMode: Immediate`) and
//! `ValidateStorageClass` / `ValidateStorageClassUpdate`
//! (`pkg/apis/storage/validation`): a provisioner that is a qualified name,
//! parameter limits, known policies and modes, allowed topologies; the
//! provisioner, parameters, reclaim policy and binding mode never change.

use std::collections::HashSet;

use serde_json::{json, Value};

use super::{generic, Generic, Strategy};
use crate::errors::StatusCause;
use crate::validation::{
    is_qualified_name, validate_immutable_field, validate_label_name, ErrorList, FieldError, Path,
};

/// The reclaim policies a StorageClass may name (sorted).
pub const RECLAIM_POLICIES: [&str; 2] = ["Delete", "Retain"];
/// The volume binding modes (sorted).
pub const VOLUME_BINDING_MODES: [&str; 2] = ["Immediate", "WaitForFirstConsumer"];
/// The most parameters a StorageClass may have.
const MAX_PARAMETERS: i64 = 512;
/// The most bytes its parameters' keys and values may take together.
const MAX_PARAMETERS_SIZE: i64 = 256 * 1024;

/// The strategy of StorageClasses.
#[derive(Clone, Debug)]
pub struct StorageClass {
    flags: Generic,
}

impl StorageClass {
    /// The strategy with upstream's flags.
    #[allow(clippy::new_without_default)]
    pub fn new() -> StorageClass {
        StorageClass { flags: generic::for_builtin("storage.k8s.io", "StorageClass", false) }
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// `ValidateStorageClass` minus `ObjectMeta`.
pub fn validate_storage_class(sc: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let provisioner = str_of(sc, "provisioner");
    let p = Path::new("provisioner");
    if provisioner.is_empty() {
        errs.push(FieldError::required(&p, ""));
    } else {
        let lower = provisioner.to_lowercase();
        for msg in is_qualified_name(&lower) {
            errs.push(FieldError::invalid(&p, lower.as_str(), &msg));
        }
    }
    errs.extend(validate_parameters(sc.get("parameters")));
    let policy = str_of(sc, "reclaimPolicy");
    if !policy.is_empty() && !RECLAIM_POLICIES.contains(&policy) {
        errs.push(FieldError::not_supported(&Path::new("reclaimPolicy"), policy, &RECLAIM_POLICIES));
    }
    let mode_path = Path::new("volumeBindingMode");
    match sc.get("volumeBindingMode").and_then(Value::as_str) {
        None => errs.push(FieldError::required(&mode_path, "")),
        Some(m) if !VOLUME_BINDING_MODES.contains(&m) => {
            errs.push(FieldError::not_supported(&mode_path, m, &VOLUME_BINDING_MODES))
        }
        Some(_) => {}
    }
    errs.extend(validate_allowed_topologies(sc.get("allowedTopologies")));
    errs
}

fn validate_parameters(params: Option<&Value>) -> ErrorList {
    let mut errs = ErrorList::new();
    let path = Path::new("parameters");
    let Some(m) = params.and_then(Value::as_object) else { return errs };
    if m.len() as i64 > MAX_PARAMETERS {
        errs.push(FieldError::too_long(&path, MAX_PARAMETERS));
        return errs;
    }
    let mut size = 0i64;
    for (k, v) in m {
        if k.is_empty() {
            errs.push(FieldError::invalid(&path, k.as_str(), "field can not be empty."));
        }
        size += (k.len() + v.as_str().map_or(0, str::len)) as i64;
    }
    if size > MAX_PARAMETERS_SIZE {
        errs.push(FieldError::too_long(&path, MAX_PARAMETERS_SIZE));
    }
    errs
}

/// `validateAllowedTopologies` with `ValidateTopologySelectorTerm`: each
/// label requirement needs values (no duplicates) and a valid key, keys are
/// unique within a term and terms are unique.
fn validate_allowed_topologies(topologies: Option<&Value>) -> ErrorList {
    let mut errs = ErrorList::new();
    let path = Path::new("allowedTopologies");
    let mut seen: Vec<Vec<(String, Vec<String>)>> = Vec::new();
    for (i, term) in topologies.and_then(Value::as_array).into_iter().flatten().enumerate() {
        let term_path = path.index(i);
        let exprs_path = term_path.child("matchLabelExpressions");
        let mut expr_map: Vec<(String, Vec<String>)> = Vec::new();
        for (j, req) in term.get("matchLabelExpressions").and_then(Value::as_array).into_iter().flatten().enumerate() {
            let req_path = exprs_path.index(j);
            let values: Vec<String> = req
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
            if values.is_empty() {
                errs.push(FieldError::required(&req_path.child("values"), ""));
            }
            let mut set = HashSet::new();
            for (k, v) in values.iter().enumerate() {
                if !set.insert(v.as_str()) {
                    errs.push(FieldError::duplicate(&req_path.child("values").index(k), v.as_str()));
                }
            }
            let key = str_of(req, "key");
            errs.extend(validate_label_name(key, &req_path.child("key")));
            if expr_map.iter().any(|(k, _)| k == key) {
                errs.push(FieldError::duplicate(&req_path.child("key"), key));
            }
            let mut sorted: Vec<String> = set.into_iter().map(str::to_string).collect();
            sorted.sort();
            expr_map.retain(|(k, _)| k != key);
            expr_map.push((key.to_string(), sorted));
        }
        expr_map.sort();
        if seen.contains(&expr_map) {
            errs.push(FieldError::duplicate(&exprs_path, ""));
        }
        seen.push(expr_map);
    }
    errs
}

impl Strategy for StorageClass {
    /// `SetDefaults_StorageClass`.
    fn default(&self, obj: &mut Value) {
        let Some(m) = obj.as_object_mut() else { return };
        if m.get("reclaimPolicy").is_none_or(Value::is_null) {
            m.insert("reclaimPolicy".into(), json!("Delete"));
        }
        if m.get("volumeBindingMode").is_none_or(Value::is_null) {
            m.insert("volumeBindingMode".into(), json!("Immediate"));
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        validate_storage_class(obj).to_causes()
    }

    /// The create rules, then `ValidateStorageClassUpdate`, as upstream's
    /// strategy runs them.
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        let mut errs = validate_storage_class(new);
        let params = |v: &Value| v.get("parameters").filter(|p| p.as_object().is_some_and(|m| !m.is_empty())).cloned();
        if params(new) != params(old) {
            errs.push(FieldError::forbidden(&Path::new("parameters"), "updates to parameters are forbidden."));
        }
        if str_of(new, "provisioner") != str_of(old, "provisioner") {
            errs.push(FieldError::forbidden(&Path::new("provisioner"), "updates to provisioner are forbidden."));
        }
        if str_of(new, "reclaimPolicy") != str_of(old, "reclaimPolicy") {
            errs.push(FieldError::forbidden(&Path::new("reclaimPolicy"), "updates to reclaimPolicy are forbidden."));
        }
        errs.extend(validate_immutable_field(
            new.get("volumeBindingMode"),
            old.get("volumeBindingMode"),
            &Path::new("volumeBindingMode"),
        ));
        errs.to_causes()
    }

    fn has_status_subresource(&self) -> bool {
        false
    }
    fn tracks_generation(&self) -> bool {
        self.flags.tracks_generation
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::cause_texts as texts;

    #[test]
    fn v1_defaults() {
        let mut sc = json!({"provisioner": "example.com/disk"});
        StorageClass::new().default(&mut sc);
        assert_eq!(sc["reclaimPolicy"], "Delete");
        assert_eq!(sc["volumeBindingMode"], "Immediate");
        assert!(StorageClass::new().validate_create(&sc).is_empty());
    }

    #[test]
    fn create_rules() {
        let sc = json!({"provisioner": "", "reclaimPolicy": "Recycle", "volumeBindingMode": "Later",
            "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": []}]}]});
        assert_eq!(
            texts(StorageClass::new().validate_create(&sc)),
            vec![
                "provisioner: Required value",
                r#"reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain""#,
                r#"volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer""#,
                "allowedTopologies[0].matchLabelExpressions[0].values: Required value",
            ]
        );
        let msgs = is_qualified_name("bad provisioner");
        assert_eq!(
            texts(
                StorageClass::new()
                    .validate_create(&json!({"provisioner": "Bad Provisioner", "volumeBindingMode": "Immediate"}))
            ),
            msgs.iter().map(|m| format!(r#"provisioner: Invalid value: "bad provisioner": {m}"#)).collect::<Vec<_>>()
        );
    }

    #[test]
    fn update_rules() {
        let old = json!({"provisioner": "a", "parameters": {"type": "ssd"}, "reclaimPolicy": "Delete",
            "volumeBindingMode": "Immediate"});
        let new = json!({"provisioner": "b", "parameters": {"type": "hdd"}, "reclaimPolicy": "Retain",
            "volumeBindingMode": "WaitForFirstConsumer"});
        assert_eq!(
            texts(StorageClass::new().validate_update(&new, &old)),
            vec![
                "parameters: Forbidden: updates to parameters are forbidden.",
                "provisioner: Forbidden: updates to provisioner are forbidden.",
                "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.",
                r#"volumeBindingMode: Invalid value: "WaitForFirstConsumer": field is immutable"#,
            ]
        );
    }
}
