//! LimitRanger (plugin/pkg/admission/limitranger): the LimitRanges of a
//! namespace default new pods' container requests and limits (`Container`
//! `default` / `defaultRequest`, noted in the pod annotation
//! `kubernetes.io/limit-ranger`) and bound them (`min`, `max`,
//! `maxLimitRequestRatio` per Container and per Pod; `min` / `max` storage
//! requests per PersistentVolumeClaim). A violation is 403 with upstream's
//! messages, several aggregated in brackets.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use rkube_apimachinery::ApiError;
use serde_json::{json, Map, Value};

use super::builtin::{forbidden, format_milli, list, milli};
use super::{Attributes, Operation, Plugin};
use crate::storage::ResourceStore;

/// The pod annotation that says what LimitRanger set.
pub const ANNOTATION: &str = "kubernetes.io/limit-ranger";

/// The LimitRanger plugin over the LimitRange store.
pub struct LimitRanger {
    ranges: Option<Arc<ResourceStore>>,
}

impl LimitRanger {
    /// The plugin, reading LimitRanges from `ranges`.
    pub fn new(ranges: Option<Arc<ResourceStore>>) -> LimitRanger {
        LimitRanger { ranges }
    }

    async fn ranges(&self, namespace: &str) -> Result<Vec<Value>, ApiError> {
        match &self.ranges {
            Some(store) => list(store, namespace).await,
            None => Ok(Vec::new()),
        }
    }
}

/// Pods on create, claims on create and update; never subresources.
fn applies(attrs: &Attributes<'_>) -> Option<bool> {
    if !attrs.subresource.is_empty() {
        return None;
    }
    match (attrs.resource.group, attrs.resource.plural, attrs.operation) {
        ("", "pods", Operation::Create) => Some(true),
        ("", "persistentvolumeclaims", Operation::Create | Operation::Update) => Some(false),
        _ => None,
    }
}

fn limits(range: &Value) -> impl Iterator<Item = &Value> {
    range.pointer("/spec/limits").and_then(Value::as_array).into_iter().flatten()
}

fn entries<'a>(item: &'a Value, field: &str) -> impl Iterator<Item = (&'a String, &'a Value)> {
    item.get(field).and_then(Value::as_object).into_iter().flatten()
}

/// Fills the containers' missing requests and limits from the `Container`
/// defaults of `range`; the annotation text of what was set.
fn default_pod(range: &Value, pod: &mut Value) -> Vec<String> {
    let mut requests = Map::new();
    let mut limits_default = Map::new();
    for item in limits(range).filter(|i| i.get("type").and_then(Value::as_str) == Some("Container")) {
        requests.extend(entries(item, "defaultRequest").map(|(k, v)| (k.clone(), v.clone())));
        limits_default.extend(entries(item, "default").map(|(k, v)| (k.clone(), v.clone())));
    }
    let mut notes = Vec::new();
    if requests.is_empty() && limits_default.is_empty() {
        return notes;
    }
    for (field, label) in [("containers", "container"), ("initContainers", "init container")] {
        let Some(list) = pod.pointer_mut(&format!("/spec/{field}")).and_then(Value::as_array_mut) else { continue };
        for c in list {
            let name = c.get("name").and_then(Value::as_str).unwrap_or("").to_string();
            let mut fill = |key: &str, defaults: &Map<String, Value>| -> Vec<String> {
                let resources = &mut c["resources"];
                if !resources[key].is_object() {
                    resources[key] = json!({});
                }
                let target = resources[key].as_object_mut().expect("object");
                let mut set: Vec<String> =
                    defaults.iter().filter(|(k, _)| !target.contains_key(*k)).map(|(k, _)| k.clone()).collect();
                for k in &set {
                    target.insert(k.clone(), defaults[k].clone());
                }
                set.sort();
                set
            };
            let set_limits = fill("limits", &limits_default);
            let set_requests = fill("requests", &requests);
            if !set_requests.is_empty() {
                notes.push(format!("{} request for {label} {name}", set_requests.join(", ")));
            }
            if !set_limits.is_empty() {
                notes.push(format!("{} limit for {label} {name}", set_limits.join(", ")));
            }
        }
    }
    notes
}

type Resources = BTreeMap<String, i128>;

fn resources(c: &Value, field: &str) -> Resources {
    entries(c, "resources")
        .find(|(k, _)| k.as_str() == field)
        .and_then(|(_, v)| v.as_object())
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), milli(v)?)))
        .collect()
}

/// The original text of a quantity, for messages.
fn text(c: &Value, field: &str, key: &str) -> String {
    let v = c.pointer(&format!("/resources/{field}/{key}"));
    v.and_then(|v| v.as_str().map(str::to_string).or_else(|| v.as_i64().map(|n| n.to_string()))).unwrap_or_default()
}

/// The quantity as upstream prints it.
fn quantity_text(v: &Value) -> String {
    v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())
}

struct Observed {
    requests: Resources,
    limits: Resources,
    request_text: BTreeMap<String, String>,
    limit_text: BTreeMap<String, String>,
}

impl Observed {
    fn container(c: &Value) -> Observed {
        let requests = resources(c, "requests");
        let limits = resources(c, "limits");
        let request_text = requests.keys().map(|k| (k.clone(), text(c, "requests", k))).collect();
        let limit_text = limits.keys().map(|k| (k.clone(), text(c, "limits", k))).collect();
        Observed { requests, limits, request_text, limit_text }
    }

    /// Upstream's PodRequests / PodLimits: the containers' sum, at least
    /// the largest init container, plus the overhead.
    fn pod(spec: &Value) -> Observed {
        let sum = |field: &str| -> Resources {
            let mut total = Resources::new();
            for c in spec.get("containers").and_then(Value::as_array).into_iter().flatten() {
                for (k, v) in resources(c, field) {
                    *total.entry(k).or_default() += v;
                }
            }
            for c in spec.get("initContainers").and_then(Value::as_array).into_iter().flatten() {
                for (k, v) in resources(c, field) {
                    let e = total.entry(k).or_default();
                    *e = (*e).max(v);
                }
            }
            for (k, v) in entries(spec, "overhead") {
                if let Some(m) = milli(v) {
                    *total.entry(k.clone()).or_default() += m;
                }
            }
            total
        };
        let requests = sum("requests");
        let limits = sum("limits");
        let request_text = requests.iter().map(|(k, v)| (k.clone(), format_milli(*v))).collect();
        let limit_text = limits.iter().map(|(k, v)| (k.clone(), format_milli(*v))).collect();
        Observed { requests, limits, request_text, limit_text }
    }
}

fn min_constraint(kind: &str, res: &str, enforced: &Value, o: &Observed, errs: &mut Vec<String>) {
    let (e, shown) = (milli(enforced).unwrap_or(0), quantity_text(enforced));
    match o.requests.get(res) {
        None => errs.push(format!("minimum {res} usage per {kind} is {shown}.  No request is specified")),
        Some(r) if *r < e => {
            errs.push(format!("minimum {res} usage per {kind} is {shown}, but request is {}", o.request_text[res]))
        }
        _ => {
            if o.limits.get(res).is_some_and(|l| *l < e) {
                errs.push(format!("minimum {res} usage per {kind} is {shown}, but limit is {}", o.limit_text[res]));
            }
        }
    }
}

fn max_constraint(kind: &str, res: &str, enforced: &Value, o: &Observed, errs: &mut Vec<String>) {
    let (e, shown) = (milli(enforced).unwrap_or(0), quantity_text(enforced));
    match o.limits.get(res) {
        None => errs.push(format!("maximum {res} usage per {kind} is {shown}.  No limit is specified")),
        Some(l) if *l > e => {
            errs.push(format!("maximum {res} usage per {kind} is {shown}, but limit is {}", o.limit_text[res]))
        }
        _ => {
            if o.requests.get(res).is_some_and(|r| *r > e) {
                errs.push(format!("maximum {res} usage per {kind} is {shown}, but request is {}", o.request_text[res]));
            }
        }
    }
}

fn ratio_constraint(kind: &str, res: &str, enforced: &Value, o: &Observed, errs: &mut Vec<String>) {
    let shown = quantity_text(enforced);
    let request = o.requests.get(res).copied().unwrap_or(0);
    let limit = o.limits.get(res).copied().unwrap_or(0);
    if request == 0 {
        errs.push(format!(
            "{res} max limit to request ratio per {kind} is {shown}, but no request is specified or request is 0"
        ));
        return;
    }
    if limit == 0 {
        errs.push(format!(
            "{res} max limit to request ratio per {kind} is {shown}, but no limit is specified or limit is 0"
        ));
        return;
    }
    let observed = limit as f64 / request as f64;
    let max = milli(enforced).unwrap_or(0) as f64 / 1000.0;
    if observed * 1000.0 > max * 1000.0 {
        errs.push(format!(
            "{res} max limit to request ratio per {kind} is {shown}, but provided ratio is {observed:.6}"
        ));
    }
}

/// Every violation of `range` by the pod.
fn validate_pod(range: &Value, pod: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    let null = Value::Null;
    let spec = pod.get("spec").unwrap_or(&null);
    for item in limits(range) {
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
        let observed: Vec<Observed> = match kind {
            "Container" => ["containers", "initContainers"]
                .iter()
                .flat_map(|f| spec.get(*f).and_then(Value::as_array).into_iter().flatten())
                .map(Observed::container)
                .collect(),
            "Pod" => vec![Observed::pod(spec)],
            _ => continue,
        };
        for o in &observed {
            for (res, v) in entries(item, "min") {
                min_constraint(kind, res, v, o, &mut errs);
            }
            for (res, v) in entries(item, "max") {
                max_constraint(kind, res, v, o, &mut errs);
            }
            for (res, v) in entries(item, "maxLimitRequestRatio") {
                ratio_constraint(kind, res, v, o, &mut errs);
            }
        }
    }
    errs
}

/// Every violation of `range` by the claim: `min` and `max` against its
/// requests (its limits are not user input here, as upstream).
fn validate_claim(range: &Value, pvc: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    let null = Value::Null;
    let spec = pvc.get("spec").unwrap_or(&null);
    let o = Observed::container(spec);
    let o = Observed { limits: Resources::new(), limit_text: BTreeMap::new(), ..o };
    for item in limits(range).filter(|i| i.get("type").and_then(Value::as_str) == Some("PersistentVolumeClaim")) {
        let kind = "PersistentVolumeClaim";
        for (res, v) in entries(item, "min") {
            min_constraint(kind, res, v, &o, &mut errs);
        }
        for (res, v) in entries(item, "max") {
            let (e, shown) = (milli(v).unwrap_or(0), quantity_text(v));
            match o.requests.get(res) {
                None => errs.push(format!("maximum {res} usage per {kind} is {shown}.  No request is specified")),
                Some(r) if *r > e => errs
                    .push(format!("maximum {res} usage per {kind} is {shown}, but request is {}", o.request_text[res])),
                _ => {}
            }
        }
    }
    errs
}

/// Upstream's aggregate error text: one error alone, several in brackets.
fn aggregate(errs: &[String]) -> String {
    if errs.len() == 1 {
        errs[0].clone()
    } else {
        format!("[{}]", errs.join(", "))
    }
}

#[async_trait]
impl Plugin for LimitRanger {
    fn name(&self) -> &'static str {
        "LimitRanger"
    }

    async fn admit(&self, attrs: &Attributes<'_>, object: Option<&mut Value>) -> Result<(), ApiError> {
        let Some(obj) = object else { return Ok(()) };
        if applies(attrs) != Some(true) {
            return Ok(());
        }
        let mut notes = Vec::new();
        for range in self.ranges(attrs.namespace).await? {
            notes.extend(default_pod(&range, obj));
        }
        if !notes.is_empty() {
            obj["metadata"]["annotations"][ANNOTATION] = json!(format!("LimitRanger plugin set: {}", notes.join("; ")));
        }
        Ok(())
    }

    async fn validate(&self, attrs: &Attributes<'_>, object: Option<&Value>) -> Result<(), ApiError> {
        let Some(obj) = object else { return Ok(()) };
        let Some(is_pod) = applies(attrs) else { return Ok(()) };
        for range in self.ranges(attrs.namespace).await? {
            let errs = if is_pod { validate_pod(&range, obj) } else { validate_claim(&range, obj) };
            if !errs.is_empty() {
                return Err(forbidden(attrs, Some(obj), aggregate(&errs)));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(items: Value) -> Value {
        json!({"spec": {"limits": items}})
    }

    #[test]
    fn container_defaults_fill_what_is_missing() {
        let r = range(json!([{"type": "Container", "default": {"cpu": "500m", "memory": "128Mi"},
            "defaultRequest": {"cpu": "250m", "memory": "64Mi"}}]));
        let mut pod = json!({"spec": {"containers": [
            {"name": "a"},
            {"name": "b", "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}}],
            "initContainers": [{"name": "i"}]}});
        let notes = default_pod(&r, &mut pod);
        assert_eq!(pod["spec"]["containers"][0]["resources"]["limits"], json!({"cpu": "500m", "memory": "128Mi"}));
        assert_eq!(pod["spec"]["containers"][1]["resources"]["limits"], json!({"cpu": "1", "memory": "128Mi"}));
        assert_eq!(
            notes.join("; "),
            "cpu, memory request for container a; cpu, memory limit for container a; \
             memory request for container b; memory limit for container b; \
             cpu, memory request for init container i; cpu, memory limit for init container i"
        );
    }

    #[test]
    fn container_and_pod_bounds_use_upstream_messages() {
        let r = range(json!([
            {"type": "Container", "max": {"cpu": "1"}, "min": {"memory": "10Mi"}, "maxLimitRequestRatio": {"cpu": "2"}},
            {"type": "Pod", "max": {"cpu": "3"}}]));
        let pod = json!({"spec": {"containers": [
            {"name": "a", "resources": {"limits": {"cpu": "2"}, "requests": {"cpu": "500m", "memory": "5Mi"}}},
            {"name": "b", "resources": {"limits": {"cpu": "2"}, "requests": {"cpu": "2", "memory": "20Mi"}}}]}});
        assert_eq!(
            validate_pod(&r, &pod),
            [
                "minimum memory usage per Container is 10Mi, but request is 5Mi",
                "maximum cpu usage per Container is 1, but limit is 2",
                "cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000",
                "maximum cpu usage per Container is 1, but limit is 2",
                "maximum cpu usage per Pod is 3, but limit is 4",
            ]
        );
        let unset = json!({"spec": {"containers": [{"name": "a"}]}});
        let r = range(json!([{"type": "Container", "max": {"cpu": "1"}, "min": {"cpu": "100m"}}]));
        assert_eq!(
            aggregate(&validate_pod(&r, &unset)),
            "[minimum cpu usage per Container is 100m.  No request is specified, maximum cpu usage per Container is 1.  No limit is specified]"
        );
    }

    #[test]
    fn claims_are_bounded_by_their_requests() {
        let r = range(json!([{"type": "PersistentVolumeClaim", "max": {"storage": "2Gi"}, "min": {"storage": "1Gi"}}]));
        let big = json!({"spec": {"resources": {"requests": {"storage": "5Gi"}}}});
        assert_eq!(
            validate_claim(&r, &big),
            ["maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 5Gi"]
        );
        let ok = json!({"spec": {"resources": {"requests": {"storage": "1Gi"}}}});
        assert!(validate_claim(&r, &ok).is_empty());
    }
}
