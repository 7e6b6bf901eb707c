//! Pod and container security contexts, as upstream's
//! `validatePodSpecSecurityContext` and `ValidateSecurityContext`: user and
//! group IDs in range, seccomp profiles, the privileged /
//! `allowPrivilegeEscalation` conflict.

use serde_json::Value;

use super::{list, str_of};
use crate::validation::field::{BadValue, ErrorList, FieldError, Path};

/// Upstream's `IsValidUserID` / `IsValidGroupID` message.
const ID_RANGE_MSG: &str = "must be between 0 and 2147483647, inclusive";

fn id_check(sc: &Value, key: &str, path: &Path, errs: &mut ErrorList) {
    if let Some(id) = sc.get(key).and_then(Value::as_i64) {
        if !(0..=i64::from(i32::MAX)).contains(&id) {
            errs.push(FieldError::invalid(&path.child(key), id, ID_RANGE_MSG));
        }
    }
}

/// The pod-level `securityContext` at `path` (`spec.securityContext`);
/// `spec` is the pod spec (`hostPID` lives there in v1 but is reported under
/// the security context, as upstream's internal type keeps it).
pub fn validate_pod_security_context(spec: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(sc) = spec.get("securityContext").filter(|s| s.is_object()) else { return errs };
    id_check(sc, "fsGroup", path, &mut errs);
    id_check(sc, "runAsUser", path, &mut errs);
    id_check(sc, "runAsGroup", path, &mut errs);
    for (i, g) in list(sc, "supplementalGroups").iter().enumerate() {
        let g = g.as_i64().unwrap_or(0);
        if !(0..=i64::from(i32::MAX)).contains(&g) {
            errs.push(FieldError::invalid(&path.child("supplementalGroups").index(i), g, ID_RANGE_MSG));
        }
    }
    if spec.get("shareProcessNamespace") == Some(&Value::Bool(true)) && spec.get("hostPID") == Some(&Value::Bool(true))
    {
        errs.push(FieldError::invalid(
            &path.child("shareProcessNamespace"),
            true,
            "ShareProcessNamespace and HostPID cannot both be enabled",
        ));
    }
    if let Some(p) = sc.get("fsGroupChangePolicy").and_then(Value::as_str) {
        if p != "OnRootMismatch" && p != "Always" {
            errs.push(FieldError::not_supported(&path.child("fsGroupChangePolicy"), p, &["OnRootMismatch", "Always"]));
        }
    }
    errs.extend(validate_seccomp_profile(sc.get("seccompProfile"), &path.child("seccompProfile")));
    errs
}

/// A container's `securityContext` at `path`.
pub fn validate_container_security_context(sc: Option<&Value>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(sc) = sc.filter(|s| s.is_object()) else { return errs };
    id_check(sc, "runAsUser", path, &mut errs);
    id_check(sc, "runAsGroup", path, &mut errs);
    if let Some(pm) = sc.get("procMount").and_then(Value::as_str) {
        if pm != "Default" && pm != "Unmasked" {
            errs.push(FieldError::not_supported(&path.child("procMount"), pm, &["Default", "Unmasked"]));
        }
    }
    errs.extend(validate_seccomp_profile(sc.get("seccompProfile"), &path.child("seccompProfile")));
    if sc.get("allowPrivilegeEscalation") == Some(&Value::Bool(false)) {
        let value = BadValue::Raw(go_security_context(sc));
        if sc.get("privileged") == Some(&Value::Bool(true)) {
            errs.push(FieldError::invalid(
                path,
                value.clone(),
                "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
            ));
        }
        let adds = sc.pointer("/capabilities/add").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
        if adds.iter().any(|c| c == "CAP_SYS_ADMIN") {
            errs.push(FieldError::invalid(
                path,
                value,
                "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
            ));
        }
    }
    errs
}

/// Go's `%#v` of a `core.SecurityContext` as upstream's error prints it: its
/// fields are pointers, shown as nil or as an address (ours is a stand-in).
fn go_security_context(sc: &Value) -> String {
    const FIELDS: &[(&str, &str, &str)] = &[
        ("Capabilities", "capabilities", "*core.Capabilities"),
        ("Privileged", "privileged", "*bool"),
        ("SELinuxOptions", "seLinuxOptions", "*core.SELinuxOptions"),
        ("WindowsOptions", "windowsOptions", "*core.WindowsSecurityContextOptions"),
        ("RunAsUser", "runAsUser", "*int64"),
        ("RunAsGroup", "runAsGroup", "*int64"),
        ("RunAsNonRoot", "runAsNonRoot", "*bool"),
        ("ReadOnlyRootFilesystem", "readOnlyRootFilesystem", "*bool"),
        ("AllowPrivilegeEscalation", "allowPrivilegeEscalation", "*bool"),
        ("ProcMount", "procMount", "*core.ProcMountType"),
        ("SeccompProfile", "seccompProfile", "*core.SeccompProfile"),
        ("AppArmorProfile", "appArmorProfile", "*core.AppArmorProfile"),
    ];
    let fields: Vec<String> = FIELDS
        .iter()
        .map(|(go, json, ty)| {
            let ptr = if sc.get(*json).is_some_and(|v| !v.is_null()) { "0xc000000000" } else { "nil" };
            format!("{go}:({ty})({ptr})")
        })
        .collect();
    format!("core.SecurityContext{{{}}}", fields.join(", "))
}

/// `validateSeccompProfileField`: a known `type`; `localhostProfile` exactly
/// when the type is `Localhost`, as a relative path without `..`.
fn validate_seccomp_profile(sp: Option<&Value>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(sp) = sp.filter(|s| s.is_object()) else { return errs };
    let ty = str_of(sp, "type");
    match ty {
        "Localhost" | "RuntimeDefault" | "Unconfined" => {}
        "" => errs.push(FieldError::required(&path.child("type"), "type is required when seccompProfile is set")),
        other => errs.push(FieldError::not_supported(
            &path.child("type"),
            other,
            &["Localhost", "RuntimeDefault", "Unconfined"],
        )),
    }
    let local = sp.get("localhostProfile").and_then(Value::as_str);
    let lp = path.child("localhostProfile");
    match (ty, local) {
        ("Localhost", None) => errs.push(FieldError::required(&lp, "must be set when seccomp type is Localhost")),
        ("Localhost", Some(p)) => errs.extend(validate_local_descending_path(p, &lp)),
        (_, Some(_)) => errs.push(FieldError::invalid(
            &lp,
            BadValue::Raw(format!(
                "core.SeccompProfile{{Type:{}, LocalhostProfile:(*string)(0xc000000000)}}",
                go_q(ty)
            )),
            "can only be set when seccomp type is Localhost",
        )),
        _ => {}
    }
    errs
}

fn go_q(s: &str) -> String {
    crate::validation::go_quote(s)
}

/// `validateLocalDescendingPath`: relative, and no `..` element.
pub fn validate_local_descending_path(target: &str, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if target.starts_with('/') {
        errs.push(FieldError::invalid(path, target, "must be a relative path"));
    }
    errs.extend(validate_path_no_backsteps(target, path));
    errs
}

/// `validatePathNoBacksteps`: no `..` element.
pub fn validate_path_no_backsteps(target: &str, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if target.split('/').any(|p| p == "..") {
        errs.push(FieldError::invalid(path, target, "must not contain '..'"));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msgs(errs: ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn pod_security_context() {
        let spec = json!({"hostPID": true, "shareProcessNamespace": true,
            "securityContext": {"runAsUser": -1, "fsGroup": -2, "seccompProfile": {"type": "Localhost"}}});
        assert_eq!(
            msgs(validate_pod_security_context(&spec, &Path::new("spec").child("securityContext"))),
            [
                "spec.securityContext.fsGroup: Invalid value: -2: must be between 0 and 2147483647, inclusive",
                "spec.securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive",
                "spec.securityContext.shareProcessNamespace: Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled",
                "spec.securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost",
            ]
        );
    }

    #[test]
    fn container_security_context() {
        let sc = json!({"privileged": true, "allowPrivilegeEscalation": false,
            "seccompProfile": {"type": "Localhost", "localhostProfile": "/abs/../x"}});
        let m = msgs(validate_container_security_context(Some(&sc), &Path::new("c")));
        assert_eq!(m.len(), 3, "{m:?}");
        assert_eq!(m[0], "c.seccompProfile.localhostProfile: Invalid value: \"/abs/../x\": must be a relative path");
        assert_eq!(m[1], "c.seccompProfile.localhostProfile: Invalid value: \"/abs/../x\": must not contain '..'");
        assert_eq!(
            m[2],
            "c: Invalid value: core.SecurityContext{Capabilities:(*core.Capabilities)(nil), Privileged:(*bool)(0xc000000000), \
             SELinuxOptions:(*core.SELinuxOptions)(nil), WindowsOptions:(*core.WindowsSecurityContextOptions)(nil), \
             RunAsUser:(*int64)(nil), RunAsGroup:(*int64)(nil), RunAsNonRoot:(*bool)(nil), ReadOnlyRootFilesystem:(*bool)(nil), \
             AllowPrivilegeEscalation:(*bool)(0xc000000000), ProcMount:(*core.ProcMountType)(nil), \
             SeccompProfile:(*core.SeccompProfile)(0xc000000000), AppArmorProfile:(*core.AppArmorProfile)(nil)}: \
             cannot set `allowPrivilegeEscalation` to false and `privileged` to true"
        );
        let unknown = json!({"seccompProfile": {"type": "Other"}});
        assert_eq!(
            msgs(validate_container_security_context(Some(&unknown), &Path::new("c"))),
            ["c.seccompProfile.type: Unsupported value: \"Other\": supported values: \"Localhost\", \"RuntimeDefault\", \"Unconfined\""]
        );
    }
}
