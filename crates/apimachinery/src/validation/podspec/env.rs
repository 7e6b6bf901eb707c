//! Container environment variables, as upstream's `ValidateEnv`,
//! `validateEnvVarValueFrom` and `validateObjectFieldSelector` (also used by
//! downward API volumes), with `IsConfigMapKey` for key references.

use serde_json::Value;

use super::str_of;
use crate::validation::field::{ErrorList, FieldError, Path};
use crate::validation::meta::validate_label_name;
use crate::validation::names::{is_dns1123_subdomain, is_qualified_name, max_len_error, regex_error};

/// `validateEnv` (names; 1.33 has `RelaxedEnvironmentVariableValidation` on).
pub(super) fn validate_env(env: &[Value], path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for (i, e) in env.iter().enumerate() {
        let np = path.index(i).child("name");
        let name = str_of(e, "name");
        if name.is_empty() {
            errs.push(FieldError::required(&np, ""));
        } else if !name.bytes().all(|b| (b' '..=b'~').contains(&b) && b != b'=') {
            errs.push(FieldError::invalid(
                &np,
                name,
                "a valid environment variable name must consist only of printable ASCII characters other than '='",
            ));
        }
        errs.extend(validate_env_value_from(e, &path.index(i).child("valueFrom")));
    }
    errs
}

/// Upstream's `IsConfigMapKey` messages.
pub fn is_config_map_key(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if key.len() > 253 {
        errs.push(max_len_error(253));
    }
    if !key.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')) {
        errs.push(regex_error(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
            "[-._a-zA-Z0-9]+",
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    if key == "." {
        errs.push("must not be '.'".to_string());
    } else if key == ".." {
        errs.push("must not be '..'".to_string());
    } else if key.starts_with("..") {
        errs.push("must not start with '..'".to_string());
    }
    errs
}

/// The downward API fields an environment variable may reference
/// (`validEnvDownwardAPIFieldPathExpressions`).
const ENV_FIELD_PATHS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

/// `validateEnvVarValueFrom`: exactly one source, not together with `value`.
fn validate_env_value_from(e: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(from) = e.get("valueFrom").filter(|v| !v.is_null()) else { return errs };
    let mut sources = 0;
    if let Some(f) = from.get("fieldRef").filter(|v| !v.is_null()) {
        sources += 1;
        errs.extend(validate_object_field_selector(f, ENV_FIELD_PATHS, &path.child("fieldRef")));
    }
    if from.get("resourceFieldRef").is_some_and(|v| !v.is_null()) {
        sources += 1;
        let rp = path.child("resourceFieldRef");
        if str_of(&from["resourceFieldRef"], "resource").is_empty() {
            errs.push(FieldError::required(&rp.child("resource"), ""));
        }
    }
    // `validateConfigMapKeySelector` / `validateSecretKeySelector`: the name
    // a DNS subdomain, the key a config map key.
    for kind in ["configMapKeyRef", "secretKeyRef"] {
        let Some(r) = from.get(kind).filter(|v| !v.is_null()) else { continue };
        sources += 1;
        let rp = path.child(kind);
        let name = str_of(r, "name");
        for m in is_dns1123_subdomain(name) {
            errs.push(FieldError::invalid(&rp.child("name"), name, &m));
        }
        let key = str_of(r, "key");
        if key.is_empty() {
            errs.push(FieldError::required(&rp.child("key"), ""));
        } else {
            for m in is_config_map_key(key) {
                errs.push(FieldError::invalid(&rp.child("key"), key, &m));
            }
        }
    }
    if sources == 0 {
        errs.push(FieldError::invalid(
            path,
            "",
            "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
        ));
    } else if !str_of(e, "value").is_empty() {
        errs.push(FieldError::invalid(path, "", "may not be specified when `value` is not empty"));
    } else if sources > 1 {
        errs.push(FieldError::invalid(path, "", "may not have more than one field specified at a time"));
    }
    errs
}

/// `validateObjectFieldSelector`: `apiVersion` and `fieldPath` required, a
/// field path the downward API knows (`ConvertDownwardAPIFieldLabel`) and
/// `expressions` allow; `metadata.labels['k']` / `metadata.annotations['k']`
/// subscripts need a qualified key.
pub fn validate_object_field_selector(fs: &Value, expressions: &[&str], path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let version = str_of(fs, "apiVersion");
    let fp = str_of(fs, "fieldPath");
    if version.is_empty() {
        errs.push(FieldError::required(&path.child("apiVersion"), ""));
        return errs;
    }
    if fp.is_empty() {
        errs.push(FieldError::required(&path.child("fieldPath"), ""));
        return errs;
    }
    let subscripted = fp.strip_suffix("']").and_then(|p| p.split_once("['"));
    let conversion = if version != "v1" {
        Err(format!("unsupported pod version: {version}"))
    } else if let Some((base, _)) = subscripted {
        if base == "metadata.annotations" || base == "metadata.labels" {
            Ok(fp.to_string())
        } else {
            Err(format!("field label does not support subscript: {fp}"))
        }
    } else {
        const KNOWN: &[&str] = &[
            "metadata.annotations",
            "metadata.labels",
            "metadata.name",
            "metadata.namespace",
            "metadata.uid",
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.serviceAccountName",
            "spec.schedulerName",
            "status.phase",
            "status.hostIP",
            "status.hostIPs",
            "status.podIP",
            "status.podIPs",
        ];
        match fp {
            "spec.host" => Ok("spec.nodeName".to_string()),
            f if KNOWN.contains(&f) => Ok(f.to_string()),
            f => Err(format!("field label not supported: {f}")),
        }
    };
    let internal = match conversion {
        Ok(p) => p,
        Err(e) => {
            errs.push(FieldError::invalid(&path.child("fieldPath"), fp, &format!("error converting fieldPath: {e}")));
            return errs;
        }
    };
    match internal.strip_suffix("']").and_then(|p| p.split_once("['")) {
        Some(("metadata.annotations", key)) => {
            for m in is_qualified_name(&key.to_lowercase()) {
                errs.push(FieldError::invalid(path, key.to_lowercase(), &m));
            }
        }
        Some(("metadata.labels", key)) => errs.extend(validate_label_name(key, path)),
        Some((base, _)) => errs.push(FieldError::invalid(path, base, "does not support subscript")),
        None if !expressions.contains(&internal.as_str()) => {
            errs.push(FieldError::not_supported(&path.child("fieldPath"), internal.as_str(), expressions));
        }
        None => {}
    }
    errs
}
