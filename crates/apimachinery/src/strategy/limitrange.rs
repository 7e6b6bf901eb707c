//! LimitRanges (core/v1): upstream's v1 defaulting of `Container` items
//! (`SetDefaults_LimitRangeItem`: the default limit falls back to `max`, the
//! default request to the default limit, then to `min`) and
//! `ValidateLimitRange` (`pkg/apis/core/validation`): known limit types,
//! resource names, and the ordering of min ≤ default request ≤ default ≤
//! max.
//!
//! Quantities are printed as written (`0` for zero) rather than in
//! `Quantity.String()`'s canonical form, and as the offending value where
//! upstream prints Go's `%#v` of the `resource.Quantity` struct (its
//! internal representation, which rkube does not have).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::{generic, Generic, Strategy};
use crate::errors::StatusCause;
use crate::validation::podspec::parse_quantity;
use crate::validation::{is_qualified_name, BadValue, ErrorList, FieldError, Path};

/// The limit types upstream knows.
pub const LIMIT_TYPES: [&str; 3] = ["Pod", "Container", "PersistentVolumeClaim"];

/// `standardResources` of upstream's core helper.
const STANDARD_RESOURCES: [&str; 20] = [
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
];

/// The strategy of LimitRanges.
#[derive(Clone, Debug)]
pub struct LimitRange {
    flags: Generic,
}

impl LimitRange {
    /// The strategy with upstream's flags.
    #[allow(clippy::new_without_default)]
    pub fn new() -> LimitRange {
        LimitRange { flags: generic::for_builtin("", "LimitRange", false) }
    }
}

pub(crate) fn is_huge_page(name: &str) -> bool {
    name.starts_with("hugepages-")
}

fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// `IsExtendedResourceName`: a qualified, non-native name that is not a
/// `requests.` quota name.
pub(super) fn is_extended(name: &str) -> bool {
    !is_native(name) && !name.starts_with("requests.") && is_qualified_name(&format!("requests.{name}")).is_empty()
}

/// `IsOvercommitAllowed`.
pub(crate) fn overcommit_allowed(name: &str) -> bool {
    is_native(name) && !is_huge_page(name)
}

/// `validateResourceName`.
pub(super) fn validate_resource_name(name: &str, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for msg in is_qualified_name(name) {
        errs.push(FieldError::invalid(path, name, &msg));
    }
    if !errs.is_empty() {
        return errs;
    }
    let quota_huge_page = is_huge_page(name) || name.starts_with("requests.hugepages-");
    if !name.contains('/') && !STANDARD_RESOURCES.contains(&name) && !quota_huge_page {
        errs.push(FieldError::invalid(path, name, "must be a standard resource type or fully qualified"));
    }
    errs
}

/// `validateLimitRangeResourceName`: container rules for `Pod` and
/// `Container` items.
fn validate_limit_resource_name(limit_type: &str, name: &str, path: &Path) -> ErrorList {
    if !matches!(limit_type, "Pod" | "Container") {
        return validate_resource_name(name, path);
    }
    validate_container_resource_name(name, path)
}

/// `validateContainerResourceName`: a standard container resource (cpu,
/// memory, ephemeral-storage, huge pages), a native `*kubernetes.io/`
/// name, or an extended resource name.
pub(crate) fn validate_container_resource_name(name: &str, path: &Path) -> ErrorList {
    let mut errs = validate_resource_name(name, path);
    if !name.contains('/') {
        if !matches!(name, "cpu" | "memory" | "ephemeral-storage") && !is_huge_page(name) {
            errs.push(FieldError::invalid(path, name, "must be a standard resource for containers"));
        }
    } else if !is_native(name) && !is_extended(name) {
        errs.push(FieldError::invalid(path, name, "doesn't follow extended resource name standard"));
    }
    errs
}

pub(super) fn quantity_text(q: &Value) -> String {
    match (parse_quantity(q), q) {
        (Some(0.0), _) => "0".into(),
        (_, Value::String(s)) => s.clone(),
        (_, other) => other.to_string(),
    }
}

fn resources(item: &Value, key: &str) -> Map<String, Value> {
    item.get(key).and_then(Value::as_object).cloned().unwrap_or_default()
}

/// `ValidateLimitRange` minus `ObjectMeta`.
pub fn validate_limit_range(obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let path = Path::new("spec").child("limits");
    let mut types = BTreeSet::new();
    for (i, item) in obj.pointer("/spec/limits").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let ip = path.index(i);
        let ty = item.get("type").and_then(Value::as_str).unwrap_or("");
        let type_errs: Vec<String> = is_qualified_name(ty);
        for msg in &type_errs {
            errs.push(FieldError::invalid(&ip.child("type"), ty, msg));
        }
        if type_errs.is_empty() && !ty.contains('/') && !LIMIT_TYPES.contains(&ty) {
            errs.push(FieldError::invalid(&ip.child("type"), ty, "must be a standard limit type or fully qualified"));
        }
        if !types.insert(ty.to_string()) {
            errs.push(FieldError::duplicate(&ip.child("type"), ty));
        }
        let (max, min) = (resources(item, "max"), resources(item, "min"));
        let (mut defaults, mut default_requests) = (Map::new(), Map::new());
        let mut keys = BTreeSet::new();
        for (field, m) in [("max", &max), ("min", &min)] {
            for k in m.keys() {
                errs.extend(validate_limit_resource_name(ty, k, &ip.child(field).key(k)));
                keys.insert(k.clone());
            }
        }
        if ty == "Pod" {
            for field in ["default", "defaultRequest"] {
                if !resources(item, field).is_empty() {
                    errs.push(FieldError::forbidden(&ip.child(field), "may not be specified when `type` is 'Pod'"));
                }
            }
        } else {
            for (field, m) in [("default", &mut defaults), ("defaultRequest", &mut default_requests)] {
                for (k, q) in resources(item, field) {
                    errs.extend(validate_limit_resource_name(ty, &k, &ip.child(field).key(&k)));
                    keys.insert(k.clone());
                    m.insert(k, q);
                }
            }
        }
        if ty == "PersistentVolumeClaim" && !min.contains_key("storage") && !max.contains_key("storage") {
            errs.push(FieldError::required(
                &ip.child("limits"),
                "either minimum or maximum storage value is required, but neither was provided",
            ));
        }
        let ratios = resources(item, "maxLimitRequestRatio");
        for k in ratios.keys() {
            errs.extend(validate_limit_resource_name(ty, k, &ip.child("maxLimitRequestRatio").key(k)));
            keys.insert(k.clone());
        }
        for k in &keys {
            errs.extend(validate_ordering(
                k,
                &ip,
                [min.get(k), max.get(k), defaults.get(k), default_requests.get(k), ratios.get(k)],
            ));
        }
    }
    errs
}

/// The per-resource ordering rules of `ValidateLimitRange`; `q` holds min,
/// max, default, defaultRequest and maxLimitRequestRatio.
fn validate_ordering(k: &str, ip: &Path, q: [Option<&Value>; 5]) -> ErrorList {
    let mut errs = ErrorList::new();
    let [min, max, default, request, ratio] = q;
    let n = |v: Option<&Value>| v.and_then(parse_quantity);
    let raw = |v: Option<&Value>| BadValue::Raw(v.map(quantity_text).unwrap_or_default());
    let t = |v: Option<&Value>| v.map(quantity_text).unwrap_or_default();
    let gt = |a: Option<&Value>, b: Option<&Value>| matches!((n(a), n(b)), (Some(x), Some(y)) if x > y);
    if gt(min, max) {
        let detail = format!("min value {} is greater than max value {}", t(min), t(max));
        errs.push(FieldError::invalid(&ip.child("min").key(k), raw(min), &detail));
    }
    if gt(min, request) {
        let detail = format!("min value {} is greater than default request value {}", t(min), t(request));
        errs.push(FieldError::invalid(&ip.child("defaultRequest").key(k), raw(request), &detail));
    }
    if gt(request, max) {
        let detail = format!("default request value {} is greater than max value {}", t(request), t(max));
        errs.push(FieldError::invalid(&ip.child("defaultRequest").key(k), raw(request), &detail));
    }
    if gt(request, default) {
        let detail = format!("default request value {} is greater than default limit value {}", t(request), t(default));
        errs.push(FieldError::invalid(&ip.child("defaultRequest").key(k), raw(request), &detail));
    }
    if gt(min, default) {
        let detail = format!("min value {} is greater than default value {}", t(min), t(default));
        errs.push(FieldError::invalid(&ip.child("default").key(k), raw(min), &detail));
    }
    if gt(default, max) {
        let detail = format!("default value {} is greater than max value {}", t(default), t(max));
        errs.push(FieldError::invalid(&ip.child("default").key(k), raw(max), &detail));
    }
    if n(ratio).is_some_and(|r| r < 1.0) {
        let detail = format!("ratio {} is less than 1", t(ratio));
        errs.push(FieldError::invalid(&ip.child("maxLimitRequestRatio").key(k), raw(ratio), &detail));
    }
    if let (Some(r), Some(lo), Some(hi)) = (n(ratio), n(min), n(max)) {
        let limit = hi / lo;
        if r > limit {
            let detail = format!("ratio {} is greater than max/min = {limit:.6}", t(ratio));
            errs.push(FieldError::invalid(&ip.child("maxLimitRequestRatio").key(k), raw(ratio), &detail));
        }
    }
    if !overcommit_allowed(k) && default.is_some() && request.is_some() && n(default) != n(request) {
        let detail = format!("default value {} must equal to defaultRequest value {} in {k}", t(default), t(request));
        errs.push(FieldError::invalid(&ip.child("defaultRequest").key(k), raw(request), &detail));
    }
    errs
}

impl Strategy for LimitRange {
    /// `SetDefaults_LimitRangeItem` for `Container` items.
    fn default(&self, obj: &mut Value) {
        let Some(items) = obj.pointer_mut("/spec/limits").and_then(Value::as_array_mut) else { return };
        for item in items.iter_mut().filter(|i| i.get("type").and_then(Value::as_str) == Some("Container")) {
            let (max, min) = (resources(item, "max"), resources(item, "min"));
            let mut default = resources(item, "default");
            let mut request = resources(item, "defaultRequest");
            for (k, v) in &max {
                default.entry(k.clone()).or_insert_with(|| v.clone());
            }
            for (k, v) in &default {
                request.entry(k.clone()).or_insert_with(|| v.clone());
            }
            for (k, v) in &min {
                request.entry(k.clone()).or_insert_with(|| v.clone());
            }
            item["default"] = Value::Object(default);
            item["defaultRequest"] = Value::Object(request);
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        validate_limit_range(obj).to_causes()
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<StatusCause> {
        validate_limit_range(new).to_causes()
    }

    fn has_status_subresource(&self) -> bool {
        false
    }
    fn tracks_generation(&self) -> bool {
        self.flags.tracks_generation
    }
    fn allow_create_on_update(&self) -> bool {
        self.flags.allow_create_on_update
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn texts(obj: &Value) -> Vec<String> {
        validate_limit_range(obj).iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn container_defaults() {
        let mut lr = json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": "2", "memory": "1Gi"},
            "min": {"cpu": "100m", "ephemeral-storage": "1Gi"}, "default": {"memory": "512Mi"}},
            {"type": "Pod", "max": {"cpu": "4"}}]}});
        LimitRange::new().default(&mut lr);
        let c = &lr["spec"]["limits"][0];
        assert_eq!(c["default"], json!({"cpu": "2", "memory": "512Mi"}));
        assert_eq!(c["defaultRequest"], json!({"cpu": "2", "memory": "512Mi", "ephemeral-storage": "1Gi"}));
        assert!(lr["spec"]["limits"][1].get("default").is_none());
        assert!(texts(&lr).is_empty(), "{:?}", texts(&lr));
    }

    #[test]
    fn types_names_and_ordering() {
        let lr = json!({"spec": {"limits": [
            {"type": "Node"},
            {"type": "Container", "min": {"cpu": "2", "pods": "1"}, "max": {"cpu": "1"}, "maxLimitRequestRatio": {"memory": "0.5"}},
            {"type": "Pod", "default": {"cpu": "1"}},
            {"type": "PersistentVolumeClaim"},
            {"type": "Pod"}]}});
        // Field and detail only: upstream prints quantity values as Go
        // structs, which rkube does not reproduce.
        let got: Vec<(String, String)> =
            validate_limit_range(&lr).iter().map(|e| (e.field.clone(), e.detail.clone())).collect();
        let want = [
            ("spec.limits[0].type", "must be a standard limit type or fully qualified"),
            ("spec.limits[1].min[pods]", "must be a standard resource for containers"),
            ("spec.limits[1].min[cpu]", "min value 2 is greater than max value 1"),
            ("spec.limits[1].maxLimitRequestRatio[memory]", "ratio 0.5 is less than 1"),
            ("spec.limits[2].default", "may not be specified when `type` is 'Pod'"),
            ("spec.limits[3].limits", "either minimum or maximum storage value is required, but neither was provided"),
            ("spec.limits[4].type", ""),
        ];
        let want: Vec<(String, String)> = want.iter().map(|(f, d)| (f.to_string(), d.to_string())).collect();
        assert_eq!(got, want);
        assert_eq!(texts(&lr)[6], r#"spec.limits[4].type: Duplicate value: "Pod""#);
    }
}
