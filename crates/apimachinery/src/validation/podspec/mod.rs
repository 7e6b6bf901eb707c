//! `PodSpec` validation shared by pods and every pod template, and the pod
//! update rule, following upstream `pkg/apis/core/validation/validation.go`
//! (`ValidatePodSpec`, `validateContainers`, `validateInitContainers`,
//! `validateContainerPorts`, `validateVolumes`, `validateVolumeMounts`,
//! `validateEnv`, `ValidateResourceRequirements`, `ValidatePodUpdate`) with
//! its field paths and messages.
//!
//! The parts with their own rules live in submodules: [`handlers`] (probes
//! and lifecycle hooks), [`security`] (security contexts), [`scheduling`]
//! (affinity, tolerations, topology spread, preemption policy),
//! [`volumes`] (volume sources), [`env`] (environment variables and
//! downward API field references) and [`update`] (the pod update rules).
//!
//! Not covered yet: ephemeral container specifics, resource claims, DNS
//! config, host aliases, and the `cmp.Diff` that upstream appends to the pod
//! update message.

use std::collections::BTreeSet;

use serde_json::Value;

use super::field::{go_quote, ErrorList, FieldError, Path};
use super::meta::validate_labels;
use super::names::is_dns1123_label;

pub mod env;
pub mod handlers;
pub mod scheduling;
pub mod security;
pub mod update;
pub mod volumes;

use env::validate_env;
pub use env::{is_config_map_key, validate_object_field_selector};
use handlers::{validate_lifecycle, validate_probe, ProbeKind};
pub use update::{validate_pod_spec_update, POD_UPDATE_FORBIDDEN_MSG};

/// Upstream's `InclusiveRangeError(1, 65535)`.
const PORT_RANGE_MSG: &str = "must be between 1 and 65535, inclusive";

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

/// `ValidateDNS1123Label`: one `Invalid` per message.
fn dns1123_label(value: &str, path: &Path) -> ErrorList {
    is_dns1123_label(value).iter().map(|m| FieldError::invalid(path, value, m)).collect::<Vec<_>>().into()
}

/// Go's `%#v` of a `map[string]string` (keys sorted): `map[string]string{"a":"b"}`.
pub fn go_string_map(m: Option<&Value>) -> String {
    match m.and_then(Value::as_object) {
        None => "map[string]string(nil)".to_string(),
        Some(m) => {
            let mut entries: Vec<(&String, &str)> = m.iter().map(|(k, v)| (k, v.as_str().unwrap_or(""))).collect();
            entries.sort();
            let body: Vec<String> = entries.iter().map(|(k, v)| format!("{}:{}", go_quote(k), go_quote(v))).collect();
            format!("map[string]string{{{}}}", body.join(", "))
        }
    }
}

/// Upstream's `IsValidPortName` messages.
pub fn is_valid_port_name(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if port.len() > 15 {
        errs.push("must be no more than 15 characters".to_string());
    }
    if !port.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string());
    }
    if !port.bytes().any(|b| b.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".to_string());
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens".to_string());
    }
    if port.starts_with('-') || port.ends_with('-') {
        errs.push("must not begin or end with a hyphen".to_string());
    }
    errs
}

/// A resource quantity as a number, for comparisons (`resource.Quantity`).
pub fn parse_quantity(q: &Value) -> Option<f64> {
    if let Some(n) = q.as_f64() {
        return Some(n);
    }
    let s = q.as_str()?.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-')).unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    let n: f64 = num.parse().ok()?;
    let mult = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        e if e.starts_with(['e', 'E']) => 10f64.powi(e[1..].parse().ok()?),
        _ => return None,
    };
    Some(n * mult)
}

fn quantity_string(q: &Value) -> String {
    match q {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Whether `obj` is a pod (image whitespace is only checked on pods) or a
/// pod template.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecOf {
    /// A Pod's spec.
    Pod,
    /// A pod template's spec.
    Template,
}

/// `ValidatePodSpec` (the covered subset) for the spec at `path`.
pub fn validate_pod_spec(spec: &Value, of: SpecOf, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let (vol_names, vol_errs) = validate_volumes(list(spec, "volumes"), &path.child("volumes"));
    errs.extend(vol_errs);

    // Names must be unique across init, regular and ephemeral containers.
    let mut names: BTreeSet<String> = BTreeSet::new();
    let containers = list(spec, "containers");
    let cpath = path.child("containers");
    if containers.is_empty() {
        errs.push(FieldError::required(&cpath, ""));
    }
    let ctx = ContainerCtx {
        volumes: &vol_names,
        of,
        grace: spec.get("terminationGracePeriodSeconds").and_then(Value::as_i64),
    };
    for (i, c) in containers.iter().enumerate() {
        errs.extend(validate_container(c, &ctx, Role::Regular, &mut names, &cpath.index(i)));
    }
    let ipath = path.child("initContainers");
    for (i, c) in list(spec, "initContainers").iter().enumerate() {
        errs.extend(validate_container(c, &ctx, Role::Init, &mut names, &ipath.index(i)));
    }
    let epath = path.child("ephemeralContainers");
    for (i, c) in list(spec, "ephemeralContainers").iter().enumerate() {
        errs.extend(validate_container(c, &ctx, Role::Ephemeral, &mut names, &epath.index(i)));
    }

    let rp = path.child("restartPolicy");
    match str_of(spec, "restartPolicy") {
        "" => errs.push(FieldError::required(&rp, "")),
        "Always" | "OnFailure" | "Never" => {}
        other => errs.push(FieldError::not_supported(&rp, other, &["Always", "OnFailure", "Never"])),
    }
    let dp = path.child("dnsPolicy");
    match str_of(spec, "dnsPolicy") {
        "" => errs.push(FieldError::required(&dp, "")),
        "ClusterFirst" | "ClusterFirstWithHostNet" | "Default" | "None" => {}
        other => errs.push(FieldError::not_supported(
            &dp,
            other,
            &["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"],
        )),
    }
    errs.extend(validate_host_network_ports(spec, of, path));
    errs.extend(validate_labels(spec.get("nodeSelector"), &path.child("nodeSelector")));
    errs.extend(security::validate_pod_security_context(spec, &path.child("securityContext")));
    errs.extend(scheduling::validate_affinity(spec.get("affinity"), &path.child("affinity")));
    errs.extend(validate_dns_config(spec, &path.child("dnsConfig")));
    errs.extend(scheduling::validate_topology_spread(
        list(spec, "topologySpreadConstraints"),
        &path.child("topologySpreadConstraints"),
    ));
    if let Some(v) = spec.get("activeDeadlineSeconds").and_then(Value::as_i64) {
        if !(1..=i64::from(i32::MAX)).contains(&v) {
            errs.push(FieldError::invalid(
                &path.child("activeDeadlineSeconds"),
                v,
                "must be between 1 and 2147483647, inclusive",
            ));
        }
    }
    for f in ["hostname", "subdomain"] {
        let v = str_of(spec, f);
        if !v.is_empty() {
            errs.extend(dns1123_label(v, &path.child(f)));
        }
    }
    errs.extend(scheduling::validate_tolerations(list(spec, "tolerations"), &path.child("tolerations")));
    errs.extend(scheduling::validate_preemption_policy(spec.get("preemptionPolicy"), &path.child("preemptionPolicy")));
    errs
}

/// `validatePodHostNetworkDeps`: on a host-network pod every port's
/// `hostPort` equals its `containerPort` (pods only; templates are
/// defaulted so).
fn validate_host_network_ports(spec: &Value, of: SpecOf, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if of != SpecOf::Pod || spec.get("hostNetwork") != Some(&Value::Bool(true)) {
        return errs;
    }
    for (i, c) in list(spec, "containers").iter().enumerate() {
        for (j, p) in list(c, "ports").iter().enumerate() {
            let host = p.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
            if host != p.get("containerPort").and_then(Value::as_i64).unwrap_or(0) {
                errs.push(FieldError::invalid(
                    &path.child("containers").index(i).child("ports").index(j).child("hostPort"),
                    host,
                    "must match `containerPort` when `hostNetwork` is true",
                ));
            }
        }
    }
    errs
}

/// `validatePodDNSConfig` (without the search-domain rules): `dnsPolicy:
/// None` needs a config with a nameserver; at most 3 nameservers, each an
/// IP address; options need a name.
fn validate_dns_config(spec: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let config = spec.get("dnsConfig").filter(|c| !c.is_null());
    if str_of(spec, "dnsPolicy") == "None" {
        let Some(c) = config else {
            errs.push(FieldError::required(path, "must provide `dnsConfig` when `dnsPolicy` is None"));
            return errs;
        };
        if list(c, "nameservers").is_empty() {
            errs.push(FieldError::required(
                &path.child("nameservers"),
                "must provide at least one DNS nameserver when `dnsPolicy` is None",
            ));
            return errs;
        }
    }
    let Some(c) = config else { return errs };
    let servers = list(c, "nameservers");
    if servers.len() > 3 {
        let names: Vec<&str> = servers.iter().filter_map(Value::as_str).collect();
        errs.push(FieldError::invalid(
            &path.child("nameservers"),
            super::BadValue::Raw(super::go_string_slice(&names, false)),
            "must not have more than 3 nameservers",
        ));
    }
    for (i, ns) in servers.iter().enumerate() {
        let ns = ns.as_str().unwrap_or("");
        if ns.parse::<std::net::IpAddr>().is_err() {
            errs.push(FieldError::invalid(
                &path.child("nameservers").index(i),
                ns,
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ));
        }
    }
    for (i, o) in list(c, "options").iter().enumerate() {
        if str_of(o, "name").is_empty() {
            errs.push(FieldError::required(&path.child("options").index(i), "Option.Name must not be empty"));
        }
    }
    errs
}

/// `ValidateVolumes`: each volume's source, then its name (a DNS-1123
/// label, unique); only volumes without errors can be mounted.
fn validate_volumes(vols: &[Value], path: &Path) -> (BTreeSet<String>, ErrorList) {
    let mut names = BTreeSet::new();
    let mut errs = ErrorList::new();
    for (i, v) in vols.iter().enumerate() {
        let np = path.index(i).child("name");
        let name = str_of(v, "name");
        let mut e = volumes::validate_volume_source(v, &path.index(i));
        if name.is_empty() {
            e.push(FieldError::required(&np, ""));
        } else {
            e.extend(dns1123_label(name, &np));
        }
        if names.contains(name) {
            e.push(FieldError::duplicate(&np, name));
        }
        if e.is_empty() {
            names.insert(name.to_string());
        } else {
            errs.extend(e);
        }
    }
    (names, errs)
}

/// Where a container sits in the pod: regular, init (sidecars have
/// `restartPolicy: Always`) or ephemeral.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Regular,
    Init,
    Ephemeral,
}

/// What every container of one pod spec is checked against.
struct ContainerCtx<'a> {
    volumes: &'a BTreeSet<String>,
    of: SpecOf,
    grace: Option<i64>,
}

fn validate_container(
    c: &Value,
    ctx: &ContainerCtx,
    role: Role,
    names: &mut BTreeSet<String>,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let np = path.child("name");
    let name = str_of(c, "name");
    if name.is_empty() {
        errs.push(FieldError::required(&np, ""));
    } else {
        errs.extend(dns1123_label(name, &np));
        if names.contains(name) {
            errs.push(FieldError::duplicate(&np, name));
        } else {
            names.insert(name.to_string());
        }
    }
    let image = str_of(c, "image");
    if image.is_empty() {
        errs.push(FieldError::required(&path.child("image"), ""));
    } else if ctx.of == SpecOf::Pod && image.trim() != image {
        errs.push(FieldError::invalid(&path.child("image"), image, "must not have leading or trailing whitespace"));
    }
    // Ephemeral containers are stored undefaulted (see the Pod strategy),
    // so an empty policy is not an error for them.
    let tmp = path.child("terminationMessagePolicy");
    match str_of(c, "terminationMessagePolicy") {
        "File" | "FallbackToLogsOnError" => {}
        "" if role == Role::Ephemeral => {}
        "" => errs.push(FieldError::required(&tmp, "")),
        other => errs.push(FieldError::not_supported(&tmp, other, &["File", "FallbackToLogsOnError"])),
    }
    errs.extend(validate_ports(list(c, "ports"), &path.child("ports")));
    errs.extend(validate_env(list(c, "env"), &path.child("env")));
    errs.extend(validate_volume_mounts(list(c, "volumeMounts"), ctx.volumes, &path.child("volumeMounts")));
    let pp = path.child("imagePullPolicy");
    match str_of(c, "imagePullPolicy") {
        "Always" | "IfNotPresent" | "Never" => {}
        "" if role == Role::Ephemeral => {}
        "" => errs.push(FieldError::required(&pp, "")),
        other => errs.push(FieldError::not_supported(&pp, other, &["Always", "IfNotPresent", "Never"])),
    }
    errs.extend(validate_resources(c.get("resources").unwrap_or(&Value::Null), &path.child("resources")));
    errs.extend(security::validate_container_security_context(
        c.get("securityContext"),
        &path.child("securityContext"),
    ));
    let restart = c.get("restartPolicy").and_then(Value::as_str);
    let probes = [
        ("livenessProbe", ProbeKind::Liveness),
        ("readinessProbe", ProbeKind::Readiness),
        ("startupProbe", ProbeKind::Startup),
    ];
    match role {
        Role::Regular => {
            if let Some(l) = c.get("lifecycle").filter(|l| !l.is_null()) {
                errs.extend(validate_lifecycle(l, ctx.grace, &path.child("lifecycle")));
            }
            for (f, kind) in probes {
                if let Some(p) = c.get(f).filter(|p| !p.is_null()) {
                    errs.extend(validate_probe(p, kind, ctx.grace, &path.child(f)));
                }
            }
            if restart.is_some() {
                errs.push(FieldError::forbidden(
                    &path.child("restartPolicy"),
                    "may not be set for non-init containers",
                ));
            }
        }
        Role::Init => match restart {
            // A sidecar: probes and hooks as a regular container's.
            Some("Always") => {
                if let Some(l) = c.get("lifecycle").filter(|l| !l.is_null()) {
                    errs.extend(validate_lifecycle(l, ctx.grace, &path.child("lifecycle")));
                }
                for (f, kind) in probes {
                    if let Some(p) = c.get(f).filter(|p| !p.is_null()) {
                        errs.extend(validate_probe(p, kind, ctx.grace, &path.child(f)));
                    }
                }
            }
            other => {
                if let Some(r) = other {
                    errs.push(FieldError::not_supported(&path.child("restartPolicy"), r, &["Always"]));
                }
                for f in ["lifecycle", "livenessProbe", "readinessProbe", "startupProbe"] {
                    if c.get(f).is_some_and(|v| !v.is_null()) {
                        errs.push(FieldError::forbidden(
                            &path.child(f),
                            "may not be set for init containers without restartPolicy=Always",
                        ));
                    }
                }
            }
        },
        Role::Ephemeral => {}
    }
    errs
}

/// `validateContainerPorts`.
fn validate_ports(ports: &[Value], path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut names = BTreeSet::new();
    for (i, p) in ports.iter().enumerate() {
        let ip = path.index(i);
        let name = str_of(p, "name");
        if !name.is_empty() {
            let msgs = is_valid_port_name(name);
            if !msgs.is_empty() {
                msgs.iter().for_each(|m| errs.push(FieldError::invalid(&ip.child("name"), name, m)));
            } else if !names.insert(name.to_string()) {
                errs.push(FieldError::duplicate(&ip.child("name"), name));
            }
        }
        match p.get("containerPort").and_then(Value::as_i64).unwrap_or(0) {
            0 => errs.push(FieldError::required(&ip.child("containerPort"), "")),
            n if !(1..=65535).contains(&n) => {
                errs.push(FieldError::invalid(&ip.child("containerPort"), n, PORT_RANGE_MSG))
            }
            _ => {}
        }
        match p.get("hostPort").and_then(Value::as_i64).unwrap_or(0) {
            0 => {}
            n if !(1..=65535).contains(&n) => errs.push(FieldError::invalid(&ip.child("hostPort"), n, PORT_RANGE_MSG)),
            _ => {}
        }
        match str_of(p, "protocol") {
            "" => errs.push(FieldError::required(&ip.child("protocol"), "")),
            "TCP" | "UDP" | "SCTP" => {}
            other => errs.push(FieldError::not_supported(&ip.child("protocol"), other, &["SCTP", "TCP", "UDP"])),
        }
    }
    errs
}

/// `validateVolumeMounts` (name, mountPath, uniqueness).
fn validate_volume_mounts(mounts: &[Value], volumes: &BTreeSet<String>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut paths = BTreeSet::new();
    for (i, m) in mounts.iter().enumerate() {
        let ip = path.index(i);
        let name = str_of(m, "name");
        if name.is_empty() {
            errs.push(FieldError::required(&ip.child("name"), ""));
        }
        if !volumes.contains(name) {
            errs.push(FieldError::not_found(&ip.child("name"), name));
        }
        let mp = str_of(m, "mountPath");
        if mp.is_empty() {
            errs.push(FieldError::required(&ip.child("mountPath"), ""));
        }
        if !paths.insert(mp.to_string()) {
            errs.push(FieldError::invalid(&ip.child("mountPath"), mp, "must be unique"));
        }
        // Upstream reports these two under the list's path, not the item's.
        let sub = str_of(m, "subPath");
        if !sub.is_empty() {
            errs.extend(security::validate_local_descending_path(sub, &path.child("subPath")));
        }
        let expr = str_of(m, "subPathExpr");
        if !expr.is_empty() {
            if !sub.is_empty() {
                errs.push(FieldError::invalid(
                    &ip.child("subPathExpr"),
                    expr,
                    "subPathExpr and subPath are mutually exclusive",
                ));
            }
            errs.extend(security::validate_local_descending_path(expr, &path.child("subPathExpr")));
        }
    }
    errs
}

/// `ValidateContainerResourceRequirements`: container resource names,
/// quantities (not negative; whole for integer and extended resources),
/// requests not above limits, requests equal to limits for resources that
/// may not be overcommitted (extended resources, huge pages), which also
/// need a limit, and huge pages only together with cpu or memory.
fn validate_resources(res: &Value, path: &Path) -> ErrorList {
    use crate::strategy::limitrange::{is_huge_page, overcommit_allowed, validate_container_resource_name};
    use crate::strategy::quota::validate_quantity;

    let mut errs = ErrorList::new();
    let empty = serde_json::Map::new();
    let limits = res.get("limits").and_then(Value::as_object).unwrap_or(&empty);
    let requests = res.get("requests").and_then(Value::as_object).unwrap_or(&empty);
    let sorted = |m: &serde_json::Map<String, Value>| {
        let mut keys: Vec<String> = m.keys().cloned().collect();
        keys.sort();
        keys
    };
    let (lim_path, req_path) = (path.child("limits"), path.child("requests"));
    let (mut cpu_or_memory, mut huge_pages) = (false, false);
    for k in sorted(limits) {
        let p = lim_path.key(&k);
        errs.extend(validate_container_resource_name(&k, &p));
        errs.extend(validate_quantity(&k, &limits[&k], &p));
        cpu_or_memory |= matches!(k.as_str(), "cpu" | "memory");
        huge_pages |= is_huge_page(&k);
    }
    for k in sorted(requests) {
        let p = req_path.key(&k);
        let req = &requests[&k];
        errs.extend(validate_container_resource_name(&k, &p));
        errs.extend(validate_quantity(&k, req, &p));
        match limits.get(&k) {
            Some(lim) => {
                if let (Some(r), Some(l)) = (parse_quantity(req), parse_quantity(lim)) {
                    if r != l && !overcommit_allowed(&k) {
                        errs.push(FieldError::invalid(
                            &p,
                            quantity_string(req),
                            &format!("must be equal to {k} limit of {}", quantity_string(lim)),
                        ));
                    } else if r > l {
                        errs.push(FieldError::invalid(
                            &p,
                            quantity_string(req),
                            &format!("must be less than or equal to {k} limit of {}", quantity_string(lim)),
                        ));
                    }
                }
            }
            None if !overcommit_allowed(&k) => {
                errs.push(FieldError::required(&lim_path, "Limit must be set for non overcommitable resources"));
            }
            None => {}
        }
        cpu_or_memory |= matches!(k.as_str(), "cpu" | "memory");
        huge_pages |= is_huge_page(&k);
    }
    if huge_pages && !cpu_or_memory {
        errs.push(FieldError::forbidden(path, "HugePages require cpu or memory"));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The messages for `spec` after the pod defaults (as the store runs
    /// them before validating).
    fn msgs(spec: Value, of: SpecOf) -> Vec<String> {
        use crate::strategy::Strategy;
        let mut pod = json!({ "spec": spec });
        crate::strategy::Pod.default(&mut pod);
        validate_pod_spec(&pod["spec"], of, &Path::new("spec")).iter().map(ToString::to_string).collect()
    }

    fn base() -> Value {
        json!({"restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
               "containers": [{"name": "c", "image": "nginx"}]})
    }

    #[test]
    fn valid_spec_passes() {
        assert!(msgs(base(), SpecOf::Pod).is_empty());
    }

    #[test]
    fn containers_are_required() {
        let mut s = base();
        s["containers"] = json!([]);
        assert_eq!(msgs(s, SpecOf::Pod), ["spec.containers: Required value"]);
    }

    #[test]
    fn container_names_and_images() {
        let mut s = base();
        s["containers"] = json!([{"image": "x"}, {"name": "Bad_Name", "image": "x"}, {"name": "c", "image": ""}]);
        s["initContainers"] = json!([{"name": "c", "image": "x"}]);
        let m = msgs(s, SpecOf::Pod);
        assert_eq!(m[0], "spec.containers[0].name: Required value");
        assert!(m[1].starts_with("spec.containers[1].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label"));
        assert_eq!(m[2], "spec.containers[2].image: Required value");
        assert_eq!(m[3], "spec.initContainers[0].name: Duplicate value: \"c\"");
        assert_eq!(m.len(), 4);
    }

    #[test]
    fn image_whitespace_only_on_pods() {
        let mut s = base();
        s["containers"][0]["image"] = json!(" nginx");
        assert_eq!(
            msgs(s.clone(), SpecOf::Pod),
            ["spec.containers[0].image: Invalid value: \" nginx\": must not have leading or trailing whitespace"]
        );
        assert!(msgs(s, SpecOf::Template).is_empty());
    }

    #[test]
    fn restart_and_dns_policies() {
        let mut s = base();
        s["restartPolicy"] = json!("Sometimes");
        s["dnsPolicy"] = json!("Other");
        assert_eq!(
            msgs(s, SpecOf::Pod),
            [
                "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
                "spec.dnsPolicy: Unsupported value: \"Other\": supported values: \"ClusterFirst\", \"ClusterFirstWithHostNet\", \"Default\", \"None\"",
            ]
        );
    }

    #[test]
    fn ports() {
        let mut s = base();
        s["containers"][0]["ports"] = json!([
            {"containerPort": 70000, "protocol": "TCP", "name": "http"},
            {"containerPort": 80, "protocol": "ICMP", "name": "http"},
            {"protocol": "TCP", "name": "Web--"},
        ]);
        let m = msgs(s, SpecOf::Pod);
        assert_eq!(
            m,
            [
                "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
                "spec.containers[0].ports[1].name: Duplicate value: \"http\"",
                "spec.containers[0].ports[1].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                "spec.containers[0].ports[2].name: Invalid value: \"Web--\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                "spec.containers[0].ports[2].name: Invalid value: \"Web--\": must not contain consecutive hyphens",
                "spec.containers[0].ports[2].name: Invalid value: \"Web--\": must not begin or end with a hyphen",
                "spec.containers[0].ports[2].containerPort: Required value",
            ]
        );
    }

    #[test]
    fn resources_requests_within_limits() {
        let mut s = base();
        s["containers"][0]["resources"] =
            json!({"requests": {"cpu": "1", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "1Gi"}});
        assert_eq!(
            msgs(s, SpecOf::Pod),
            ["spec.containers[0].resources.requests[cpu]: Invalid value: \"1\": must be less than or equal to cpu limit of 500m"]
        );
    }

    #[test]
    fn volumes_mounts_and_env() {
        let mut s = base();
        s["volumes"] = json!([{"name": "data", "emptyDir": {}}, {"name": "data", "emptyDir": {}}]);
        s["containers"][0]["volumeMounts"] = json!([{"name": "missing", "mountPath": "/m"}]);
        s["containers"][0]["env"] = json!([{"name": "A=B"}, {"value": "x"}]);
        assert_eq!(
            msgs(s, SpecOf::Pod),
            [
                "spec.volumes[1].name: Duplicate value: \"data\"",
                "spec.containers[0].env[0].name: Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='",
                "spec.containers[0].env[1].name: Required value",
                "spec.containers[0].volumeMounts[0].name: Not found: \"missing\"",
            ]
        );
    }

    #[test]
    fn pod_update_rule() {
        let old = json!({"nodeName": "n1", "containers": [{"name": "c", "image": "a"}], "tolerations": [{"key": "k"}]});
        let mut new = old.clone();
        new["containers"][0]["image"] = json!("b");
        new["activeDeadlineSeconds"] = json!(5);
        new["tolerations"] = json!([{"key": "k"}, {"key": "j"}]);
        assert!(validate_pod_spec_update(&new, &old, &Path::new("spec")).is_empty());
        new["containers"][0]["env"] = json!([{"name": "X"}]);
        let errs = validate_pod_spec_update(&new, &old, &Path::new("spec"));
        assert_eq!(errs.len(), 1);
        assert!(errs.0[0].to_string().starts_with(&format!("spec: Forbidden: {POD_UPDATE_FORBIDDEN_MSG}")));
        let mut moved = old.clone();
        moved["nodeName"] = json!("n2");
        assert_eq!(
            validate_pod_spec_update(&moved, &old, &Path::new("spec")).0[0].to_string(),
            "spec.nodeName: Invalid value: \"n2\": field is immutable"
        );
        let mut removed = old.clone();
        removed["tolerations"] = json!([]);
        assert_eq!(
            validate_pod_spec_update(&removed, &old, &Path::new("spec")).0[0].to_string(),
            "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"
        );
        let mut gated = old.clone();
        gated["schedulingGates"] = json!([{"name": "g"}]);
        assert_eq!(
            validate_pod_spec_update(&gated, &old, &Path::new("spec")).0[0].to_string(),
            "spec.schedulingGates[0].name: Forbidden: only deletion is allowed, but found new scheduling gate 'g'"
        );
        assert!(validate_pod_spec_update(&old, &gated, &Path::new("spec")).is_empty());
        let mut longer = old.clone();
        longer["activeDeadlineSeconds"] = json!(5);
        let mut later = longer.clone();
        later["activeDeadlineSeconds"] = json!(10);
        assert_eq!(
            validate_pod_spec_update(&later, &longer, &Path::new("spec")).0[0].to_string(),
            "spec.activeDeadlineSeconds: Invalid value: 10: must be less than or equal to previous value"
        );
    }

    #[test]
    fn probes_security_and_scheduling_are_checked() {
        let mut s = base();
        s["containers"][0]["livenessProbe"] = json!({"exec": {"command": ["true"]}, "tcpSocket": {"port": 80}});
        s["containers"][0]["securityContext"] = json!({"runAsUser": -1});
        s["initContainers"] = json!([{"name": "i", "image": "x", "readinessProbe": {"exec": {"command": ["x"]}}}]);
        s["tolerations"] = json!([{"key": "k", "operator": "Exists", "value": "v"}]);
        // A volume naming no source is defaulted to an emptyDir, so only a
        // direct validation (volumes.rs) sees "must specify a volume type".
        s["volumes"] = json!([{"name": "v"}]);
        s["containers"][0]["env"] =
            json!([{"name": "A", "value": "x", "valueFrom": {"fieldRef": {"fieldPath": "status.phase"}}}]);
        assert_eq!(
            msgs(s, SpecOf::Pod),
            [
                "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: \"status.phase\": supported values: \"metadata.name\", \"metadata.namespace\", \"metadata.uid\", \"spec.nodeName\", \"spec.serviceAccountName\", \"status.hostIP\", \"status.hostIPs\", \"status.podIP\", \"status.podIPs\"",
                "spec.containers[0].env[0].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty",
                "spec.containers[0].securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive",
                "spec.containers[0].livenessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type",
                "spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
                "spec.tolerations[0].operator: Invalid value: core.Toleration{Key:\"k\", Operator:\"Exists\", Value:\"v\", Effect:\"\", TolerationSeconds:(*int64)(nil)}: value must be empty when `operator` is 'Exists'",
            ]
        );
    }

    #[test]
    fn sub_paths_are_relative() {
        let mut s = base();
        s["volumes"] = json!([{"name": "data", "emptyDir": {}}]);
        s["containers"][0]["volumeMounts"] = json!([{"name": "data", "mountPath": "/d", "subPath": "../x"}]);
        assert_eq!(
            msgs(s, SpecOf::Pod),
            ["spec.containers[0].volumeMounts.subPath: Invalid value: \"../x\": must not contain '..'"]
        );
    }

    #[test]
    fn host_network_ports_and_dns_config() {
        let mut s = base();
        s["hostNetwork"] = json!(true);
        s["containers"][0]["ports"] = json!([{"containerPort": 80, "hostPort": 8080}]);
        s["dnsPolicy"] = json!("None");
        assert_eq!(
            msgs(s.clone(), SpecOf::Pod),
            [
                "spec.containers[0].ports[0].hostPort: Invalid value: 8080: must match `containerPort` when `hostNetwork` is true",
                "spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None",
            ]
        );
        s["containers"][0]["ports"] = json!([{"containerPort": 80}]);
        s["dnsConfig"] = json!({"nameservers": ["1.1.1.1", "dns"], "options": [{"value": "2"}]});
        assert_eq!(
            msgs(s, SpecOf::Pod),
            [
                "spec.dnsConfig.nameservers[1]: Invalid value: \"dns\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                "spec.dnsConfig.options[0]: Required value: Option.Name must not be empty",
            ]
        );
    }

    #[test]
    fn negative_quantities() {
        let mut s = base();
        s["containers"][0]["resources"] = json!({"limits": {"memory": "-1Gi"}, "requests": {"cpu": "-100m"}});
        assert_eq!(
            msgs(s, SpecOf::Pod),
            [
                "spec.containers[0].resources.limits[memory]: Invalid value: \"-1Gi\": must be greater than or equal to 0",
                "spec.containers[0].resources.requests[cpu]: Invalid value: \"-100m\": must be greater than or equal to 0",
                // The limit is also the default request.
                "spec.containers[0].resources.requests[memory]: Invalid value: \"-1Gi\": must be greater than or equal to 0",
            ]
        );
    }

    #[test]
    fn container_resource_names_and_extended_resources() {
        let mut s = base();
        s["containers"][0]["resources"] = json!({
            "limits": {"memroy": "1Gi", "example.com/foo": "1500m", "example.com/bar": "2"},
            "requests": {"example.com/bar": "1", "example.com/baz": "1"}});
        assert_eq!(
            msgs(s, SpecOf::Pod),
            [
                // A Quantity prints unquoted (it is a fmt.Stringer); decoding
                // made `1.5` the canonical `1500m` given here.
                "spec.containers[0].resources.limits[example.com/foo]: Invalid value: 1500m: must be an integer",
                "spec.containers[0].resources.limits[memroy]: Invalid value: \"memroy\": must be a standard resource type or fully qualified",
                "spec.containers[0].resources.limits[memroy]: Invalid value: \"memroy\": must be a standard resource for containers",
                "spec.containers[0].resources.requests[example.com/bar]: Invalid value: \"1\": must be equal to example.com/bar limit of 2",
                "spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources",
                // Limits without requests were defaulted into requests first.
                "spec.containers[0].resources.requests[example.com/foo]: Invalid value: 1500m: must be an integer",
                "spec.containers[0].resources.requests[memroy]: Invalid value: \"memroy\": must be a standard resource type or fully qualified",
                "spec.containers[0].resources.requests[memroy]: Invalid value: \"memroy\": must be a standard resource for containers",
            ]
        );
        let mut pages = base();
        pages["containers"][0]["resources"] = json!({"limits": {"hugepages-2Mi": "2Mi"}});
        assert_eq!(
            msgs(pages, SpecOf::Pod),
            ["spec.containers[0].resources: Forbidden: HugePages require cpu or memory"]
        );
    }

    #[test]
    fn ephemeral_containers_are_validated_after_defaulting() {
        let mut s = base();
        s["ephemeralContainers"] = json!([{"name": "dbg", "image": "busybox", "terminationMessagePolicy": "File"}]);
        assert!(msgs(s.clone(), SpecOf::Pod).is_empty());
        s["ephemeralContainers"][0]["name"] = json!("c");
        assert_eq!(msgs(s, SpecOf::Pod), ["spec.ephemeralContainers[0].name: Duplicate value: \"c\""]);
    }
}
