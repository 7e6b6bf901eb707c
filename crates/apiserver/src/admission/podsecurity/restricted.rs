//! The restricted checks of the Pod Security Standards (1.33), on top of
//! the baseline ones (three of which they replace).

use serde_json::Value;

use super::baseline::valid_seccomp;
use super::policy::{containers, is_windows, join_quote, name, pluralize, sc, sorted_set, Check, Level, Violation};

/// The restricted checks with their versions and the baseline checks each
/// replaces.
pub fn checks() -> Vec<Check> {
    vec![
        Check {
            id: "allowPrivilegeEscalation",
            level: Level::Restricted,
            versions: &[(8, allow_privilege_escalation_1_8), (25, allow_privilege_escalation_1_25)],
            overrides: &[],
        },
        Check {
            id: "capabilities_restricted",
            level: Level::Restricted,
            versions: &[(22, capabilities_1_22), (25, capabilities_1_25)],
            overrides: &["capabilities_baseline"],
        },
        Check {
            id: "restrictedVolumes",
            level: Level::Restricted,
            versions: &[(0, restricted_volumes)],
            overrides: &["hostPathVolumes"],
        },
        Check { id: "runAsNonRoot", level: Level::Restricted, versions: &[(0, run_as_non_root)], overrides: &[] },
        Check { id: "runAsUser", level: Level::Restricted, versions: &[(23, run_as_user)], overrides: &[] },
        Check {
            id: "seccompProfile_restricted",
            level: Level::Restricted,
            versions: &[(19, seccomp_1_19), (25, seccomp_1_25)],
            overrides: &["seccompProfile_baseline"],
        },
    ]
}

fn containers_phrase(names: &[String]) -> String {
    format!("{} {}", pluralize("container", "containers", names.len()), join_quote(names))
}

/// allowPrivilegeEscalation must be false on every container.
fn allow_privilege_escalation_1_8(_meta: &Value, spec: &Value) -> Option<Violation> {
    let bad: Vec<String> = containers(spec)
        .filter(|c| sc(c, "allowPrivilegeEscalation").and_then(Value::as_bool) != Some(false))
        .map(|c| name(c).to_string())
        .collect();
    (!bad.is_empty()).then(|| {
        Violation::new(
            "allowPrivilegeEscalation != false",
            format!("{} must set securityContext.allowPrivilegeEscalation=false", containers_phrase(&bad)),
        )
    })
}

/// 1.25+: Windows pods (spec.os.name) are exempt.
fn allow_privilege_escalation_1_25(meta: &Value, spec: &Value) -> Option<Violation> {
    if is_windows(spec) {
        return None;
    }
    allow_privilege_escalation_1_8(meta, spec)
}

/// Every container drops ALL and adds at most NET_BIND_SERVICE.
fn capabilities_1_22(_meta: &Value, spec: &Value) -> Option<Violation> {
    let mut missing_drop = Vec::new();
    let mut adding = Vec::new();
    let mut caps = Vec::new();
    for c in containers(spec) {
        let Some(k) = sc(c, "capabilities") else {
            missing_drop.push(name(c).to_string());
            continue;
        };
        let list = |f: &str| -> Vec<String> {
            k.get(f)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        };
        if !list("drop").iter().any(|d| d == "ALL") {
            missing_drop.push(name(c).to_string());
        }
        let forbidden: Vec<String> = list("add").into_iter().filter(|a| a != "NET_BIND_SERVICE").collect();
        if !forbidden.is_empty() {
            adding.push(name(c).to_string());
            caps.extend(forbidden);
        }
    }
    let mut details = Vec::new();
    if !missing_drop.is_empty() {
        details.push(format!(
            r#"{} must set securityContext.capabilities.drop=["ALL"]"#,
            containers_phrase(&missing_drop)
        ));
    }
    if !adding.is_empty() {
        details.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&adding),
            join_quote(&sorted_set(caps))
        ));
    }
    (!details.is_empty()).then(|| Violation::new("unrestricted capabilities", details.join("; ")))
}

/// 1.25+: Windows pods are exempt.
fn capabilities_1_25(meta: &Value, spec: &Value) -> Option<Violation> {
    if is_windows(spec) {
        return None;
    }
    capabilities_1_22(meta, spec)
}

/// The volume sources restricted allows.
const ALLOWED_VOLUMES: [&str; 8] =
    ["configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"];

/// The in-tree volume sources upstream names in its message.
const KNOWN_VOLUMES: [&str; 21] = [
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "nfs",
    "iscsi",
    "glusterfs",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "fc",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "storageos",
];

/// Only configMap, csi, downwardAPI, emptyDir, ephemeral,
/// persistentVolumeClaim, projected and secret volumes.
fn restricted_volumes(_meta: &Value, spec: &Value) -> Option<Violation> {
    let mut names = Vec::new();
    let mut types = Vec::new();
    for v in spec.get("volumes").and_then(Value::as_array).into_iter().flatten() {
        let set = |k: &str| v.get(k).is_some_and(|s| !s.is_null());
        if ALLOWED_VOLUMES.iter().any(|k| set(k)) {
            continue;
        }
        names.push(name(v).to_string());
        types.push(KNOWN_VOLUMES.iter().find(|k| set(k)).copied().unwrap_or("unknown").to_string());
    }
    let types = sorted_set(types);
    (!names.is_empty()).then(|| {
        Violation::new(
            "restricted volume types",
            format!(
                "{} {} {} {} {}",
                pluralize("volume", "volumes", names.len()),
                join_quote(&names),
                pluralize("uses", "use", names.len()),
                pluralize("restricted volume type", "restricted volume types", types.len()),
                join_quote(&types)
            ),
        )
    })
}

/// "pod" and/or "container(s) ..." joined by " and ".
fn setters(pod: bool, bad: &[String]) -> String {
    let mut parts = Vec::new();
    if pod {
        parts.push("pod".to_string());
    }
    if !bad.is_empty() {
        parts.push(containers_phrase(bad));
    }
    parts.join(" and ")
}

/// runAsNonRoot true on the pod, or on every container; never false.
fn run_as_non_root(_meta: &Value, spec: &Value) -> Option<Violation> {
    let pod_value = sc(spec, "runAsNonRoot").and_then(Value::as_bool);
    let pod_bad = pod_value == Some(false);
    let pod_ok = pod_value == Some(true);
    let mut explicit = Vec::new();
    let mut implicit = Vec::new();
    for c in containers(spec) {
        match sc(c, "runAsNonRoot").and_then(Value::as_bool) {
            Some(false) => explicit.push(name(c).to_string()),
            Some(true) => {}
            None if !pod_ok => implicit.push(name(c).to_string()),
            None => {}
        }
    }
    const REASON: &str = "runAsNonRoot != true";
    if pod_bad || !explicit.is_empty() {
        return Some(Violation::new(
            REASON,
            format!("{} must not set securityContext.runAsNonRoot=false", setters(pod_bad, &explicit)),
        ));
    }
    (!implicit.is_empty()).then(|| {
        Violation::new(
            REASON,
            format!("pod or {} must set securityContext.runAsNonRoot=true", containers_phrase(&implicit)),
        )
    })
}

/// runAsUser must not be 0 (1.23+).
fn run_as_user(_meta: &Value, spec: &Value) -> Option<Violation> {
    let zero = |o: &Value| sc(o, "runAsUser").and_then(Value::as_i64) == Some(0);
    let pod = zero(spec);
    let bad: Vec<String> = containers(spec).filter(|c| zero(c)).map(|c| name(c).to_string()).collect();
    (pod || !bad.is_empty())
        .then(|| Violation::new("runAsUser=0", format!("{} must not set runAsUser=0", setters(pod, &bad))))
}

/// seccompProfile.type RuntimeDefault or Localhost on the pod or every
/// container (1.19+).
fn seccomp_1_19(_meta: &Value, spec: &Value) -> Option<Violation> {
    let profile =
        |o: &Value| sc(o, "seccompProfile").and_then(|p| p.get("type")).and_then(Value::as_str).map(str::to_string);
    let mut values = Vec::new();
    let pod = profile(spec);
    let pod_bad = pod.as_deref().is_some_and(|t| !valid_seccomp(t));
    if pod_bad {
        values.extend(pod.clone());
    }
    let pod_ok = pod.as_deref().is_some_and(valid_seccomp);
    let mut explicit = Vec::new();
    let mut implicit = Vec::new();
    for c in containers(spec) {
        match profile(c) {
            Some(t) if !valid_seccomp(&t) => {
                explicit.push(name(c).to_string());
                values.push(t);
            }
            Some(_) => {}
            None if !pod_ok => implicit.push(name(c).to_string()),
            None => {}
        }
    }
    const REASON: &str = "seccompProfile";
    if pod_bad || !explicit.is_empty() {
        return Some(Violation::new(
            REASON,
            format!(
                "{} must not set securityContext.seccompProfile.type to {}",
                setters(pod_bad, &explicit),
                join_quote(&sorted_set(values))
            ),
        ));
    }
    (!implicit.is_empty()).then(|| {
        Violation::new(
            REASON,
            format!(
                r#"pod or {} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost""#,
                containers_phrase(&implicit)
            ),
        )
    })
}

/// 1.25+: Windows pods are exempt.
fn seccomp_1_25(meta: &Value, spec: &Value) -> Option<Violation> {
    if is_windows(spec) {
        return None;
    }
    seccomp_1_19(meta, spec)
}

#[cfg(test)]
mod tests {
    use super::super::policy::{describe, evaluate, LevelVersion, Version};
    use super::*;
    use serde_json::json;

    fn restricted(spec: Value) -> String {
        describe(&evaluate(LevelVersion { level: Level::Restricted, version: Version::Latest }, &json!({}), &spec))
    }

    /// The message of a plain privileged pod under restricted:latest, as
    /// upstream prints it.
    #[test]
    fn privileged_pod_under_restricted() {
        let spec = json!({"containers": [{"name": "c", "image": "nginx", "securityContext": {"privileged": true}}]});
        assert_eq!(
            restricted(spec),
            "privileged (container \"c\" must not set securityContext.privileged=true), \
             allowPrivilegeEscalation != false (container \"c\" must set securityContext.allowPrivilegeEscalation=false), \
             unrestricted capabilities (container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]), \
             runAsNonRoot != true (pod or container \"c\" must set securityContext.runAsNonRoot=true), \
             seccompProfile (pod or container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
        );
    }

    #[test]
    fn explicit_bad_values_and_overrides() {
        let spec = json!({
            "securityContext": {"runAsNonRoot": false, "runAsUser": 0, "seccompProfile": {"type": "Unconfined"}},
            "volumes": [{"name": "a", "hostPath": {"path": "/"}}, {"name": "b", "emptyDir": {}}, {"name": "c", "nfs": {}}],
            "containers": [{"name": "x", "securityContext": {"allowPrivilegeEscalation": false,
                "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE", "SYS_TIME"]}}}]});
        // hostPathVolumes and the baseline capabilities/seccomp checks are
        // replaced by the restricted ones.
        assert_eq!(
            restricted(spec),
            "unrestricted capabilities (container \"x\" must not include \"SYS_TIME\" in securityContext.capabilities.add), \
             restricted volume types (volumes \"a\", \"c\" use restricted volume types \"hostPath\", \"nfs\"), \
             runAsNonRoot != true (pod must not set securityContext.runAsNonRoot=false), \
             runAsUser=0 (pod must not set runAsUser=0), \
             seccompProfile (pod must not set securityContext.seccompProfile.type to \"Unconfined\")"
        );
    }

    #[test]
    fn compliant_and_windows_pods() {
        let good = json!({"securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "c", "securityContext": {"allowPrivilegeEscalation": false,
                "capabilities": {"drop": ["ALL"]}}}]});
        assert_eq!(restricted(good), "");
        let windows = json!({"os": {"name": "windows"}, "securityContext": {"runAsNonRoot": true},
            "containers": [{"name": "c"}]});
        assert_eq!(restricted(windows), "");
    }

    #[test]
    fn checks_arrive_with_their_versions() {
        let spec = json!({"securityContext": {"runAsNonRoot": true}, "containers": [{"name": "c",
            "securityContext": {"runAsUser": 0, "allowPrivilegeEscalation": false}}]});
        let at = |m| {
            describe(&evaluate(
                LevelVersion { level: Level::Restricted, version: Version::Minor(m) },
                &json!({}),
                &spec,
            ))
        };
        // 1.18: no seccomp, capability or runAsUser requirement yet.
        assert_eq!(at(18), "");
        assert_eq!(
            at(23),
            "unrestricted capabilities (container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]), \
             runAsUser=0 (container \"c\" must not set runAsUser=0), \
             seccompProfile (pod or container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
        );
    }
}
