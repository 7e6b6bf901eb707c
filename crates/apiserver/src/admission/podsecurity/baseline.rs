//! The baseline checks of the Pod Security Standards (1.33): what they
//! forbid and upstream's reason and detail for each.

use serde_json::Value;

use super::policy::{containers, join_quote, name, pluralize, sc, sorted_set, Check, Level, Violation};

/// The baseline checks with their versions.
pub fn checks() -> Vec<Check> {
    let check = |id, versions, overrides| Check { id, level: Level::Baseline, versions, overrides };
    vec![
        check("windowsHostProcess", &[(0, host_process)], &[]),
        check("hostNamespaces", &[(0, host_namespaces)], &[]),
        check("privileged", &[(0, privileged)], &[]),
        check("capabilities_baseline", &[(0, capabilities)], &[]),
        check("hostPathVolumes", &[(0, host_path_volumes)], &[]),
        check("hostPorts", &[(0, host_ports)], &[]),
        check("appArmorProfile", &[(0, app_armor)], &[]),
        check("seLinuxOptions", &[(0, se_linux)], &[]),
        check("procMount", &[(0, proc_mount)], &[]),
        check("seccompProfile_baseline", &[(0, seccomp_annotations), (19, seccomp)], &[]),
        check("sysctls", &[(0, sysctls_1_0), (27, sysctls_1_27), (29, sysctls_1_29), (32, sysctls_1_32)], &[]),
    ]
}

/// `"pod"` and/or `container(s) "a", "b"` joined by ` and `.
fn setters(pod: bool, bad: &[String]) -> String {
    let mut parts = Vec::new();
    if pod {
        parts.push("pod".to_string());
    }
    if !bad.is_empty() {
        parts.push(format!("{} {}", pluralize("container", "containers", bad.len()), join_quote(bad)));
    }
    parts.join(" and ")
}

/// Names of the containers for which `f` holds.
fn bad_containers(spec: &Value, f: impl Fn(&Value) -> bool) -> Vec<String> {
    containers(spec).filter(|c| f(c)).map(|c| name(c).to_string()).collect()
}

fn is_true(v: Option<&Value>) -> bool {
    v.and_then(Value::as_bool) == Some(true)
}

/// securityContext.windowsOptions.hostProcess must not be true.
fn host_process(_meta: &Value, spec: &Value) -> Option<Violation> {
    let hp = |o: &Value| is_true(sc(o, "windowsOptions").and_then(|w| w.get("hostProcess")));
    let pod = hp(spec);
    let bad = bad_containers(spec, hp);
    (pod || !bad.is_empty()).then(|| {
        Violation::new(
            "hostProcess",
            format!("{} must not set securityContext.windowsOptions.hostProcess=true", setters(pod, &bad)),
        )
    })
}

/// hostNetwork, hostPID and hostIPC must not be true.
fn host_namespaces(_meta: &Value, spec: &Value) -> Option<Violation> {
    let set: Vec<String> = ["hostNetwork", "hostPID", "hostIPC"]
        .iter()
        .filter(|f| is_true(spec.get(**f)))
        .map(|f| format!("{f}=true"))
        .collect();
    (!set.is_empty()).then(|| Violation::new("host namespaces", set.join(", ")))
}

/// securityContext.privileged must not be true.
fn privileged(_meta: &Value, spec: &Value) -> Option<Violation> {
    let bad = bad_containers(spec, |c| is_true(sc(c, "privileged")));
    (!bad.is_empty()).then(|| {
        Violation::new(
            "privileged",
            format!(
                "{} {} must not set securityContext.privileged=true",
                pluralize("container", "containers", bad.len()),
                join_quote(&bad)
            ),
        )
    })
}

/// The capabilities a container may add under baseline.
const DEFAULT_CAPABILITIES: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// capabilities.add only from the default set.
fn capabilities(_meta: &Value, spec: &Value) -> Option<Violation> {
    let mut caps = Vec::new();
    let mut bad = Vec::new();
    for c in containers(spec) {
        let added = sc(c, "capabilities").and_then(|k| k.get("add")).and_then(Value::as_array);
        let extra: Vec<String> = added
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|cap| !DEFAULT_CAPABILITIES.contains(cap))
            .map(str::to_string)
            .collect();
        if !extra.is_empty() {
            bad.push(name(c).to_string());
            caps.extend(extra);
        }
    }
    (!bad.is_empty()).then(|| {
        Violation::new(
            "non-default capabilities",
            format!(
                "{} {} must not include {} in securityContext.capabilities.add",
                pluralize("container", "containers", bad.len()),
                join_quote(&bad),
                join_quote(&sorted_set(caps))
            ),
        )
    })
}

/// The pod's volumes, with their names.
fn volumes(spec: &Value) -> impl Iterator<Item = &Value> {
    spec.get("volumes").and_then(Value::as_array).into_iter().flatten()
}

/// No hostPath volumes.
fn host_path_volumes(_meta: &Value, spec: &Value) -> Option<Violation> {
    let bad: Vec<String> = volumes(spec)
        .filter(|v| v.get("hostPath").is_some_and(|h| !h.is_null()))
        .map(|v| name(v).to_string())
        .collect();
    (!bad.is_empty()).then(|| {
        Violation::new(
            "hostPath volumes",
            format!("{} {}", pluralize("volume", "volumes", bad.len()), join_quote(&bad)),
        )
    })
}

/// No container port with a hostPort.
fn host_ports(_meta: &Value, spec: &Value) -> Option<Violation> {
    let mut ports = Vec::new();
    let mut bad = Vec::new();
    for c in containers(spec) {
        let used: Vec<String> = c
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("hostPort").and_then(Value::as_i64))
            .filter(|p| *p != 0)
            .map(|p| p.to_string())
            .collect();
        if !used.is_empty() {
            bad.push(name(c).to_string());
            ports.extend(used);
        }
    }
    let ports = sorted_set(ports);
    (!bad.is_empty()).then(|| {
        Violation::new(
            "hostPort",
            format!(
                "{} {} {} {} {}",
                pluralize("container", "containers", bad.len()),
                join_quote(&bad),
                pluralize("uses", "use", bad.len()),
                pluralize("hostPort", "hostPorts", ports.len()),
                ports.join(", ")
            ),
        )
    })
}

/// AppArmor: the profile type may only be RuntimeDefault or Localhost; the
/// deprecated annotations only `runtime/default`, `localhost/*` or empty.
fn app_armor(meta: &Value, spec: &Value) -> Option<Violation> {
    let allowed = |t: &str| t == "RuntimeDefault" || t == "Localhost";
    let mut values = Vec::new();
    let mut check = |o: &Value| {
        let t = sc(o, "appArmorProfile").and_then(|p| p.get("type")).and_then(Value::as_str);
        match t {
            Some(t) if !allowed(t) => {
                values.push(t.to_string());
                true
            }
            _ => false,
        }
    };
    let pod = check(spec);
    let bad: Vec<String> = containers(spec).filter(|c| check(c)).map(|c| name(c).to_string()).collect();
    let mut values = sorted_set(values);
    let mut setter_list = Vec::new();
    if pod {
        setter_list.push("pod".to_string());
    }
    if !bad.is_empty() {
        setter_list.push(format!("{} {}", pluralize("container", "containers", bad.len()), join_quote(&bad)));
    }
    let mut annotations: Vec<String> = meta
        .get("annotations")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.starts_with("container.apparmor.security.beta.kubernetes.io/"))
        .filter_map(|(k, v)| {
            let v = v.as_str().unwrap_or("");
            let ok = v.is_empty() || v == "runtime/default" || v.starts_with("localhost/");
            (!ok).then(|| format!("{k}={v:?}"))
        })
        .collect();
    if !annotations.is_empty() {
        annotations.sort();
        setter_list.push(pluralize("annotation", "annotations", annotations.len()).to_string());
        values.extend(annotations);
    }
    (!setter_list.is_empty()).then(|| {
        Violation::new(
            pluralize("forbidden AppArmor profile", "forbidden AppArmor profiles", values.len()),
            format!("{} must not set AppArmor profile type to {}", setter_list.join(" and "), join_quote(&values)),
        )
    })
}

/// SELinux: type only empty or container_t / container_init_t /
/// container_kvm_t; user and role unset.
fn se_linux(_meta: &Value, spec: &Value) -> Option<Violation> {
    const TYPES: [&str; 4] = ["", "container_t", "container_init_t", "container_kvm_t"];
    let mut bad_types = Vec::new();
    let (mut set_user, mut set_role) = (false, false);
    let mut valid = |o: &Value| -> bool {
        let Some(opts) = sc(o, "seLinuxOptions") else { return true };
        let field = |f: &str| opts.get(f).and_then(Value::as_str).unwrap_or("").to_string();
        let mut ok = true;
        let t = field("type");
        if !TYPES.contains(&t.as_str()) {
            ok = false;
            bad_types.push(t);
        }
        if !field("user").is_empty() {
            ok = false;
            set_user = true;
        }
        if !field("role").is_empty() {
            ok = false;
            set_role = true;
        }
        ok
    };
    let pod = !valid(spec);
    let bad: Vec<String> = containers(spec).filter(|c| !valid(c)).map(|c| name(c).to_string()).collect();
    if !pod && bad.is_empty() {
        return None;
    }
    let bad_types = sorted_set(bad_types);
    let mut data = Vec::new();
    // Upstream lists user and role only alongside a bad type.
    if !bad_types.is_empty() {
        data.push(format!("{} {}", pluralize("type", "types", bad_types.len()), join_quote(&bad_types)));
        if set_user {
            data.push("user may not be set".to_string());
        }
        if set_role {
            data.push("role may not be set".to_string());
        }
    }
    Some(Violation::new(
        "seLinuxOptions",
        format!("{} set forbidden securityContext.seLinuxOptions: {}", setters(pod, &bad), data.join("; ")),
    ))
}

/// procMount only `Default` (the user-namespace relaxation is behind a
/// feature gate that is off in 1.33).
fn proc_mount(_meta: &Value, spec: &Value) -> Option<Violation> {
    let mut types = Vec::new();
    let mut bad = Vec::new();
    for c in containers(spec) {
        if let Some(t) = sc(c, "procMount").and_then(Value::as_str) {
            if t != "Default" {
                bad.push(name(c).to_string());
                types.push(t.to_string());
            }
        }
    }
    (!bad.is_empty()).then(|| {
        Violation::new(
            "procMount",
            format!(
                "{} {} must not set securityContext.procMount to {}",
                pluralize("container", "containers", bad.len()),
                join_quote(&bad),
                join_quote(&sorted_set(types))
            ),
        )
    })
}

/// Before 1.19: the seccomp annotations only runtime/default,
/// docker/default or localhost/*.
fn seccomp_annotations(meta: &Value, spec: &Value) -> Option<Violation> {
    let annotations = meta.get("annotations");
    let ok = |v: &str| v == "runtime/default" || v == "docker/default" || v.starts_with("localhost/");
    let mut bad = Vec::new();
    let mut look = |key: String| {
        if let Some(v) = annotations.and_then(|a| a.get(&key)).and_then(Value::as_str) {
            if !ok(v) {
                bad.push(format!("{key}={v:?}"));
            }
        }
    };
    look("seccomp.security.alpha.kubernetes.io/pod".to_string());
    for c in containers(spec) {
        look(format!("container.seccomp.security.alpha.kubernetes.io/{}", name(c)));
    }
    let bad = sorted_set(bad);
    (!bad.is_empty()).then(|| {
        Violation::new(
            "seccompProfile",
            format!("forbidden {} {}", pluralize("annotation", "annotations", bad.len()), bad.join(", ")),
        )
    })
}

/// Whether a seccomp profile type is RuntimeDefault or Localhost.
pub fn valid_seccomp(t: &str) -> bool {
    t == "RuntimeDefault" || t == "Localhost"
}

/// 1.19+: seccompProfile.type, where set, only RuntimeDefault or Localhost.
fn seccomp(_meta: &Value, spec: &Value) -> Option<Violation> {
    let mut values = Vec::new();
    let mut bad_type = |o: &Value| match sc(o, "seccompProfile").and_then(|p| p.get("type")).and_then(Value::as_str) {
        Some(t) if !valid_seccomp(t) => {
            values.push(t.to_string());
            true
        }
        _ => false,
    };
    let pod = bad_type(spec);
    let bad: Vec<String> = containers(spec).filter(|c| bad_type(c)).map(|c| name(c).to_string()).collect();
    (pod || !bad.is_empty()).then(|| {
        Violation::new(
            "seccompProfile",
            format!(
                "{} must not set securityContext.seccompProfile.type to {}",
                setters(pod, &bad),
                join_quote(&sorted_set(values))
            ),
        )
    })
}

const SYSCTLS_1_0: [&str; 5] = [
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
];
const SYSCTLS_1_27: [&str; 1] = ["net.ipv4.ip_local_reserved_ports"];
const SYSCTLS_1_29: [&str; 4] = [
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
];
const SYSCTLS_1_32: [&str; 2] = ["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"];

fn sysctls(spec: &Value, allowed: &[&[&str]]) -> Option<Violation> {
    let bad: Vec<&str> = sc(spec, "sysctls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("name").and_then(Value::as_str))
        .filter(|n| !allowed.iter().any(|set| set.contains(n)))
        .collect();
    (!bad.is_empty()).then(|| Violation::new("forbidden sysctls", bad.join(", ")))
}

fn sysctls_1_0(_meta: &Value, spec: &Value) -> Option<Violation> {
    sysctls(spec, &[&SYSCTLS_1_0])
}
fn sysctls_1_27(_meta: &Value, spec: &Value) -> Option<Violation> {
    sysctls(spec, &[&SYSCTLS_1_0, &SYSCTLS_1_27])
}
fn sysctls_1_29(_meta: &Value, spec: &Value) -> Option<Violation> {
    sysctls(spec, &[&SYSCTLS_1_0, &SYSCTLS_1_27, &SYSCTLS_1_29])
}
fn sysctls_1_32(_meta: &Value, spec: &Value) -> Option<Violation> {
    sysctls(spec, &[&SYSCTLS_1_0, &SYSCTLS_1_27, &SYSCTLS_1_29, &SYSCTLS_1_32])
}

#[cfg(test)]
mod tests {
    use super::super::policy::{describe, evaluate, LevelVersion, Version};
    use super::*;
    use serde_json::json;

    fn baseline(spec: Value) -> String {
        baseline_with(json!({}), spec)
    }
    fn baseline_with(meta: Value, spec: Value) -> String {
        describe(&evaluate(LevelVersion { level: Level::Baseline, version: Version::Latest }, &meta, &spec))
    }

    #[test]
    fn privileged_and_host_namespaces() {
        let spec = json!({"hostNetwork": true, "hostPID": true, "hostIPC": true, "containers": [
            {"name": "a", "securityContext": {"privileged": true}},
            {"name": "b", "securityContext": {"privileged": false}},
            {"name": "c", "securityContext": {"privileged": true}}]});
        assert_eq!(
            baseline(spec),
            "host namespaces (hostNetwork=true, hostPID=true, hostIPC=true), \
             privileged (containers \"a\", \"c\" must not set securityContext.privileged=true)"
        );
    }

    #[test]
    fn capabilities_host_paths_and_ports() {
        let spec = json!({
            "volumes": [{"name": "h", "hostPath": {"path": "/"}}, {"name": "e", "emptyDir": {}}],
            "containers": [{"name": "a", "ports": [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 81, "hostPort": 81}],
                "securityContext": {"capabilities": {"add": ["NET_RAW", "CHOWN", "SYS_ADMIN"]}}}]});
        assert_eq!(
            baseline(spec),
            "non-default capabilities (container \"a\" must not include \"NET_RAW\", \"SYS_ADMIN\" in securityContext.capabilities.add), \
             hostPath volumes (volume \"h\"), \
             hostPort (container \"a\" uses hostPorts 8080, 81)"
        );
    }

    #[test]
    fn app_armor_selinux_proc_mount_seccomp_sysctls() {
        let meta = json!({"annotations": {"container.apparmor.security.beta.kubernetes.io/a": "unconfined"}});
        let spec = json!({
            "securityContext": {"seLinuxOptions": {"type": "spc_t", "user": "u"},
                "seccompProfile": {"type": "Unconfined"},
                "sysctls": [{"name": "kernel.msgmax", "value": "1"}, {"name": "net.ipv4.tcp_rmem", "value": "1"}]},
            "containers": [{"name": "a", "securityContext": {"procMount": "Unmasked",
                "appArmorProfile": {"type": "Unconfined"}}}]});
        assert_eq!(
            baseline_with(meta, spec),
            "forbidden AppArmor profiles (container \"a\" and annotation must not set AppArmor profile type to \"Unconfined\", \"container.apparmor.security.beta.kubernetes.io/a=\\\"unconfined\\\"\"), \
             procMount (container \"a\" must not set securityContext.procMount to \"Unmasked\"), \
             seLinuxOptions (pod set forbidden securityContext.seLinuxOptions: type \"spc_t\"; user may not be set), \
             seccompProfile (pod must not set securityContext.seccompProfile.type to \"Unconfined\"), \
             forbidden sysctls (kernel.msgmax)"
        );
    }

    #[test]
    fn older_versions_apply_older_checks() {
        let spec =
            json!({"securityContext": {"sysctls": [{"name": "net.ipv4.tcp_rmem", "value": "1"}]}, "containers": []});
        let v = |m| LevelVersion { level: Level::Baseline, version: Version::Minor(m) };
        assert_eq!(describe(&evaluate(v(31), &json!({}), &spec)), "forbidden sysctls (net.ipv4.tcp_rmem)");
        assert_eq!(describe(&evaluate(v(32), &json!({}), &spec)), "");
        // Before 1.19 the seccomp field was not checked, the annotations were.
        let unconfined = json!({"securityContext": {"seccompProfile": {"type": "Unconfined"}}, "containers": []});
        assert_eq!(describe(&evaluate(v(18), &json!({}), &unconfined)), "");
        let meta = json!({"annotations": {"seccomp.security.alpha.kubernetes.io/pod": "unconfined"}});
        assert_eq!(
            describe(&evaluate(v(18), &meta, &unconfined)),
            "seccompProfile (forbidden annotation seccomp.security.alpha.kubernetes.io/pod=\"unconfined\")"
        );
    }

    #[test]
    fn host_process_and_clean_pods() {
        let spec = json!({"securityContext": {"windowsOptions": {"hostProcess": true}}, "containers": [
            {"name": "a", "securityContext": {"windowsOptions": {"hostProcess": true}}}]});
        assert_eq!(
            baseline(spec),
            "hostProcess (pod and container \"a\" must not set securityContext.windowsOptions.hostProcess=true)"
        );
        assert_eq!(baseline(json!({"containers": [{"name": "a", "image": "nginx"}]})), "");
    }
}
