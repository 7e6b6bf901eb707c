//! `PodSpec` validation shared by pods and every pod template, and the pod
//! update rule, following upstream `pkg/apis/core/validation/validation.go`
//! (`ValidatePodSpec`, `validateContainers`, `validateInitContainers`,
//! `validateContainerPorts`, `validateVolumes`, `validateVolumeMounts`,
//! `validateEnv`, `ValidateResourceRequirements`, `ValidatePodUpdate`) with
//! its field paths and messages.
//!
//! Not covered yet: probes, security contexts, affinity, tolerations,
//! volume sources, ephemeral container specifics, and the `cmp.Diff` that
//! upstream appends to the pod update message.

use std::collections::BTreeSet;

use serde_json::Value;

use super::field::{go_quote, ErrorList, FieldError, Path};
use super::names::is_dns1123_label;

/// Upstream's `InclusiveRangeError(1, 65535)`.
const PORT_RANGE_MSG: &str = "must be between 1 and 65535, inclusive";

/// The 1.33 fields a pod update may change (`updatablePodSpecFieldsNoResources`).
pub const POD_UPDATE_FORBIDDEN_MSG: &str = "pod updates may not change fields other than \
`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,\
`spec.tolerations` (only additions to existing tolerations),\
`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

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
    for (i, c) in containers.iter().enumerate() {
        errs.extend(validate_container(c, &vol_names, &mut names, of, &cpath.index(i)));
    }
    let ipath = path.child("initContainers");
    for (i, c) in list(spec, "initContainers").iter().enumerate() {
        errs.extend(validate_container(c, &vol_names, &mut names, of, &ipath.index(i)));
    }
    let epath = path.child("ephemeralContainers");
    for (i, c) in list(spec, "ephemeralContainers").iter().enumerate() {
        errs.extend(validate_container(c, &vol_names, &mut names, of, &epath.index(i)));
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
    if let Some(v) = spec.get("activeDeadlineSeconds").and_then(Value::as_i64) {
        if !(1..=i64::from(i32::MAX)).contains(&v) {
            errs.push(FieldError::invalid(
                &path.child("activeDeadlineSeconds"),
                v,
                "must be between 1 and 2147483647, inclusive",
            ));
        }
    }
    errs
}

/// `validateVolumes` (names only): returns the valid names.
fn validate_volumes(vols: &[Value], path: &Path) -> (BTreeSet<String>, ErrorList) {
    let mut names = BTreeSet::new();
    let mut errs = ErrorList::new();
    for (i, v) in vols.iter().enumerate() {
        let np = path.index(i).child("name");
        let name = str_of(v, "name");
        let mut e = if name.is_empty() { vec![FieldError::required(&np, "")].into() } else { dns1123_label(name, &np) };
        if e.is_empty() {
            if names.contains(name) {
                e.push(FieldError::duplicate(&np, name));
            } else {
                names.insert(name.to_string());
            }
        }
        errs.extend(e);
    }
    (names, errs)
}

fn validate_container(
    c: &Value,
    volumes: &BTreeSet<String>,
    names: &mut BTreeSet<String>,
    of: SpecOf,
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
    } else if of == SpecOf::Pod && image.trim() != image {
        errs.push(FieldError::invalid(&path.child("image"), image, "must not have leading or trailing whitespace"));
    }
    errs.extend(validate_ports(list(c, "ports"), &path.child("ports")));
    errs.extend(validate_env(list(c, "env"), &path.child("env")));
    errs.extend(validate_volume_mounts(list(c, "volumeMounts"), volumes, &path.child("volumeMounts")));
    errs.extend(validate_resources(c.get("resources").unwrap_or(&Value::Null), &path.child("resources")));
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

/// `validateEnv` (names; 1.33 has `RelaxedEnvironmentVariableValidation` on).
fn validate_env(env: &[Value], path: &Path) -> ErrorList {
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
    }
    errs
}

/// `ValidateResourceRequirements`: requests may not exceed limits.
fn validate_resources(res: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let (Some(requests), limits) = (res.get("requests").and_then(Value::as_object), res.get("limits")) else {
        return errs;
    };
    let mut keys: Vec<&String> = requests.keys().collect();
    keys.sort();
    for k in keys {
        let req = &requests[k];
        let Some(lim) = limits.and_then(|l| l.get(k)) else { continue };
        if let (Some(r), Some(l)) = (parse_quantity(req), parse_quantity(lim)) {
            if r > l {
                errs.push(FieldError::invalid(
                    &path.child("requests").key(k),
                    quantity_string(req),
                    &format!("must be less than or equal to {k} limit of {}", quantity_string(lim)),
                ));
            }
        }
    }
    errs
}

/// `ValidatePodUpdate`'s spec rule: only images, `activeDeadlineSeconds`,
/// tolerations and (negative → 1) `terminationGracePeriodSeconds` may change.
pub fn validate_pod_spec_update(new: &Value, old: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let old_node = str_of(old, "nodeName");
    if !old_node.is_empty() && str_of(new, "nodeName") != old_node {
        errs.push(FieldError::invalid(
            &path.child("nodeName"),
            str_of(new, "nodeName"),
            super::FIELD_IMMUTABLE_ERROR_MSG,
        ));
    }
    let mut munged = new.clone();
    for l in ["containers", "initContainers"] {
        let olds = list(old, l);
        if let Some(cs) = munged.get_mut(l).and_then(Value::as_array_mut) {
            if cs.len() == olds.len() {
                for (c, o) in cs.iter_mut().zip(olds) {
                    if let (Some(c), Some(img)) = (c.as_object_mut(), o.get("image")) {
                        c.insert("image".into(), img.clone());
                    }
                }
            }
        }
    }
    if let Some(m) = munged.as_object_mut() {
        let kept = |t: &Value| list(new, "tolerations").contains(t);
        let additions_only = list(old, "tolerations").iter().all(kept);
        let fields: &[&str] =
            if additions_only { &["activeDeadlineSeconds", "tolerations"] } else { &["activeDeadlineSeconds"] };
        for f in fields {
            match old.get(f) {
                Some(v) => m.insert(f.to_string(), v.clone()),
                None => m.remove(*f),
            };
        }
        let old_grace = old.get("terminationGracePeriodSeconds").and_then(Value::as_i64);
        if old_grace.is_some_and(|g| g < 0) && m.get("terminationGracePeriodSeconds").and_then(Value::as_i64) == Some(1)
        {
            m.insert("terminationGracePeriodSeconds".into(), old["terminationGracePeriodSeconds"].clone());
        }
    }
    if &munged != old && errs.is_empty() {
        errs.push(FieldError::forbidden(path, &format!("{POD_UPDATE_FORBIDDEN_MSG}\n")));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msgs(spec: Value, of: SpecOf) -> Vec<String> {
        validate_pod_spec(&spec, of, &Path::new("spec")).iter().map(ToString::to_string).collect()
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
        assert_eq!(validate_pod_spec_update(&removed, &old, &Path::new("spec")).len(), 1);
    }
}
