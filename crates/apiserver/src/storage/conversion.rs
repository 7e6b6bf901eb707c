//! Storage-version conversion: resources served in one version and stored
//! in another (upstream's conversion functions, applied by the REST layer
//! in `crate::rest::converted`).
//!
//! - `autoscaling/v1` HorizontalPodAutoscaler ↔ `autoscaling/v2` (stored):
//!   `targetCPUUtilizationPercentage` is the `cpu` Resource metric with a
//!   Utilization target and `currentCPUUtilizationPercentage` its current
//!   utilization; what v1 cannot express (other metrics, their current
//!   values, conditions, behavior) travels in upstream's
//!   `autoscaling.alpha.kubernetes.io/*` annotations, in the v1 (v2beta1
//!   shaped) metric form, so a v1 round trip loses nothing.
//! - `events.k8s.io/v1` Event ↔ core `v1` Event (stored): `regarding` ↔
//!   `involvedObject`, `note` ↔ `message`, `deprecatedSource` ↔ `source`,
//!   `reportingController` ↔ `reportingComponent`, `deprecatedCount`,
//!   `deprecatedFirstTimestamp`, `deprecatedLastTimestamp` ↔ `count`,
//!   `firstTimestamp`, `lastTimestamp`; `series`, `eventTime`, `action`,
//!   `reason`, `type`, `related`, `reportingInstance` are the same.

use rkube_apimachinery::registry::ResourceInfo;
use serde_json::{json, Map, Value};

/// Annotation with the v1 form of the metrics v1 has no field for.
pub const METRIC_SPECS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/metrics";
/// Annotation with the v1 form of the current values of those metrics.
pub const METRIC_STATUSES_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
/// Annotation with the HPA's conditions.
pub const CONDITIONS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/conditions";
/// Annotation with the HPA's scaling behavior.
pub const BEHAVIOR_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/behavior";

/// How one served resource maps onto its storage resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conversion {
    /// The storage resource's group.
    pub group: &'static str,
    /// The storage resource's version.
    pub version: &'static str,
    /// The storage resource's plural.
    pub plural: &'static str,
    kind: Kind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    HpaV1,
    EventsV1,
}

impl Conversion {
    /// The conversion for a served resource whose storage version differs,
    /// if one is implemented.
    pub fn for_resource(info: &ResourceInfo) -> Option<Conversion> {
        let (kind, group, version, plural) = match (info.group, info.version, info.plural) {
            ("autoscaling", "v1", "horizontalpodautoscalers") => {
                (Kind::HpaV1, "autoscaling", "v2", "horizontalpodautoscalers")
            }
            ("events.k8s.io", "v1", "events") => (Kind::EventsV1, "", "v1", "events"),
            _ => return None,
        };
        Some(Conversion { group, version, plural, kind })
    }

    /// The served apiVersion (`autoscaling/v1`, `events.k8s.io/v1`).
    pub fn served_api_version(&self) -> &'static str {
        match self.kind {
            Kind::HpaV1 => "autoscaling/v1",
            Kind::EventsV1 => "events.k8s.io/v1",
        }
    }

    /// The storage apiVersion.
    pub fn storage_api_version(&self) -> &'static str {
        match self.kind {
            Kind::HpaV1 => "autoscaling/v2",
            Kind::EventsV1 => "v1",
        }
    }

    /// A served object in the storage version.
    pub fn to_storage(&self, obj: &Value) -> Value {
        let mut out = match self.kind {
            Kind::HpaV1 => hpa_v1_to_v2(obj),
            Kind::EventsV1 => event_to_core(obj),
        };
        out["apiVersion"] = json!(self.storage_api_version());
        out
    }

    /// A stored object in the served version.
    pub fn from_storage(&self, obj: &Value) -> Value {
        let mut out = match self.kind {
            Kind::HpaV1 => hpa_v2_to_v1(obj),
            Kind::EventsV1 => core_to_event(obj),
        };
        out["apiVersion"] = json!(self.served_api_version());
        out
    }
}

fn obj_map(v: &Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

/// Copies `from[a]` to `to[b]` for each `(a, b)` when present.
fn rename(from: &Value, to: &mut Map<String, Value>, pairs: &[(&str, &str)]) {
    for (a, b) in pairs {
        if let Some(v) = from.get(*a).filter(|v| !v.is_null()) {
            to.insert((*b).to_string(), v.clone());
        }
    }
}

// ---- events ----

const EVENT_SAME: [&str; 8] =
    ["metadata", "eventTime", "series", "action", "reason", "type", "related", "reportingInstance"];
const EVENT_RENAMED: [(&str, &str); 7] = [
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("reportingComponent", "reportingController"),
    ("count", "deprecatedCount"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
];

fn core_to_event(core: &Value) -> Value {
    let mut out = Map::new();
    out.insert("kind".into(), json!("Event"));
    for f in EVENT_SAME {
        rename(core, &mut out, &[(f, f)]);
    }
    rename(core, &mut out, &EVENT_RENAMED);
    // An empty core source is no deprecatedSource.
    if out.get("deprecatedSource").and_then(Value::as_object).is_some_and(Map::is_empty) {
        out.remove("deprecatedSource");
    }
    Value::Object(out)
}

fn event_to_core(ev: &Value) -> Value {
    let mut out = Map::new();
    out.insert("kind".into(), json!("Event"));
    for f in EVENT_SAME {
        rename(ev, &mut out, &[(f, f)]);
    }
    let reversed: Vec<(&str, &str)> = EVENT_RENAMED.iter().map(|(a, b)| (*b, *a)).collect();
    rename(ev, &mut out, &reversed);
    if !out.contains_key("involvedObject") {
        out.insert("involvedObject".into(), json!({}));
    }
    Value::Object(out)
}

// ---- HorizontalPodAutoscaler ----

fn is_cpu_utilization(metric: &Value) -> bool {
    metric.get("type").and_then(Value::as_str) == Some("Resource")
        && metric.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
        && metric.pointer("/resource/target/type").and_then(Value::as_str) == Some("Utilization")
}

fn is_cpu_current(metric: &Value) -> bool {
    metric.get("type").and_then(Value::as_str) == Some("Resource")
        && metric.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
        && metric.pointer("/resource/current/averageUtilization").is_some()
}

fn set_annotation(meta: &mut Value, key: &str, value: &Value) {
    if !meta.is_object() {
        *meta = json!({});
    }
    if !meta.get("annotations").is_some_and(Value::is_object) {
        meta["annotations"] = json!({});
    }
    meta["annotations"][key] = json!(value.to_string());
}

/// Removes and parses a JSON annotation.
fn take_annotation(meta: &mut Value, key: &str) -> Option<Value> {
    let annotations = meta.get_mut("annotations")?.as_object_mut()?;
    let raw = annotations.remove(key)?;
    if annotations.is_empty() {
        meta.as_object_mut()?.remove("annotations");
    }
    serde_json::from_str(raw.as_str()?).ok()
}

/// A v2 target as the v1 (v2beta1) fields `targetAverageUtilization`,
/// `targetAverageValue`, `targetValue`.
fn v1_target(target: &Value, out: &mut Map<String, Value>) {
    rename(
        target,
        out,
        &[
            ("averageUtilization", "targetAverageUtilization"),
            ("averageValue", "targetAverageValue"),
            ("value", "targetValue"),
        ],
    );
}

fn v2_target(v1: &Value, default_type: &str) -> Value {
    let mut t = Map::new();
    rename(
        v1,
        &mut t,
        &[
            ("targetAverageUtilization", "averageUtilization"),
            ("targetAverageValue", "averageValue"),
            ("targetValue", "value"),
        ],
    );
    let ty = if t.contains_key("averageUtilization") {
        "Utilization"
    } else if t.contains_key("averageValue") {
        "AverageValue"
    } else if t.contains_key("value") {
        "Value"
    } else {
        default_type
    };
    t.insert("type".into(), json!(ty));
    Value::Object(t)
}

fn v1_current(current: &Value, out: &mut Map<String, Value>) {
    rename(
        current,
        out,
        &[
            ("averageUtilization", "currentAverageUtilization"),
            ("averageValue", "currentAverageValue"),
            ("value", "currentValue"),
        ],
    );
}

fn v2_current(v1: &Value) -> Value {
    let mut c = Map::new();
    rename(
        v1,
        &mut c,
        &[
            ("currentAverageUtilization", "averageUtilization"),
            ("currentAverageValue", "averageValue"),
            ("currentValue", "value"),
        ],
    );
    Value::Object(c)
}

/// A v2 MetricSpec (or MetricStatus when `status`) in the v1 form.
fn metric_to_v1(m: &Value, status: bool) -> Value {
    let ty = m.get("type").and_then(Value::as_str).unwrap_or("");
    let field = lower_first(ty);
    let src = m.get(&field).cloned().unwrap_or(Value::Null);
    let mut out = Map::new();
    let values = |out: &mut Map<String, Value>, from: &Value| {
        if status {
            v1_current(from.get("current").unwrap_or(&Value::Null), out);
        } else {
            v1_target(from.get("target").unwrap_or(&Value::Null), out);
        }
    };
    match ty {
        "Resource" | "ContainerResource" => {
            rename(&src, &mut out, &[("name", "name"), ("container", "container")]);
            values(&mut out, &src);
        }
        "Pods" | "Object" | "External" => {
            let name_key = "metricName";
            if let Some(name) = src.pointer("/metric/name") {
                out.insert(name_key.into(), name.clone());
            }
            if let Some(sel) = src.pointer("/metric/selector") {
                let key = if ty == "External" { "metricSelector" } else { "selector" };
                out.insert(key.into(), sel.clone());
            }
            if ty == "Object" {
                if let Some(d) = src.get("describedObject") {
                    out.insert("target".into(), d.clone());
                }
                let mut vals = Map::new();
                values(&mut vals, &src);
                // Object metrics: v1 has targetValue / averageValue.
                rename(
                    &Value::Object(vals),
                    &mut out,
                    &[
                        ("targetValue", "targetValue"),
                        ("targetAverageValue", "averageValue"),
                        ("currentValue", "currentValue"),
                        ("currentAverageValue", "averageValue"),
                    ],
                );
            } else {
                values(&mut out, &src);
            }
        }
        _ => return m.clone(),
    }
    json!({"type": ty, field: out})
}

/// A v1-form metric back in the v2 form.
fn metric_to_v2(m: &Value, status: bool) -> Value {
    let ty = m.get("type").and_then(Value::as_str).unwrap_or("");
    let field = lower_first(ty);
    let src = m.get(&field).cloned().unwrap_or(Value::Null);
    let mut out = Map::new();
    let key = if status { "current" } else { "target" };
    let values = |src: &Value, default: &str| if status { v2_current(src) } else { v2_target(src, default) };
    match ty {
        "Resource" | "ContainerResource" => {
            rename(&src, &mut out, &[("name", "name"), ("container", "container")]);
            out.insert(key.into(), values(&src, "Utilization"));
        }
        "Pods" | "Object" | "External" => {
            let mut metric = Map::new();
            rename(
                &src,
                &mut metric,
                &[("metricName", "name"), ("selector", "selector"), ("metricSelector", "selector")],
            );
            out.insert("metric".into(), Value::Object(metric));
            if ty == "Object" {
                if let Some(t) = src.get("target") {
                    out.insert("describedObject".into(), t.clone());
                }
                let mut v1 = obj_map(&src);
                if let Some(avg) = v1.remove("averageValue") {
                    v1.insert((if status { "currentAverageValue" } else { "targetAverageValue" }).into(), avg);
                }
                out.insert(key.into(), values(&Value::Object(v1), "Value"));
            } else {
                let default = if ty == "Pods" { "AverageValue" } else { "Value" };
                out.insert(key.into(), values(&src, default));
            }
        }
        _ => return m.clone(),
    }
    json!({"type": ty, field: out})
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

fn hpa_v2_to_v1(v2: &Value) -> Value {
    let mut out = v2.clone();
    out["kind"] = json!("HorizontalPodAutoscaler");
    let spec = v2.get("spec").cloned().unwrap_or(json!({}));
    let mut v1spec = Map::new();
    rename(
        &spec,
        &mut v1spec,
        &[("scaleTargetRef", "scaleTargetRef"), ("minReplicas", "minReplicas"), ("maxReplicas", "maxReplicas")],
    );
    let metrics = spec.get("metrics").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut others = Vec::new();
    for m in &metrics {
        if is_cpu_utilization(m) && !v1spec.contains_key("targetCPUUtilizationPercentage") {
            if let Some(u) = m.pointer("/resource/target/averageUtilization") {
                v1spec.insert("targetCPUUtilizationPercentage".into(), u.clone());
            }
        } else {
            others.push(metric_to_v1(m, false));
        }
    }
    let mut meta = v2.get("metadata").cloned().unwrap_or(json!({}));
    if !others.is_empty() {
        set_annotation(&mut meta, METRIC_SPECS_ANNOTATION, &Value::Array(others));
    }
    if let Some(b) = spec.get("behavior").filter(|b| !b.is_null()) {
        set_annotation(&mut meta, BEHAVIOR_ANNOTATION, b);
    }
    out["spec"] = Value::Object(v1spec);

    if let Some(status) = v2.get("status").filter(|s| s.is_object()) {
        let mut v1status = Map::new();
        rename(
            status,
            &mut v1status,
            &[
                ("observedGeneration", "observedGeneration"),
                ("lastScaleTime", "lastScaleTime"),
                ("currentReplicas", "currentReplicas"),
                ("desiredReplicas", "desiredReplicas"),
            ],
        );
        v1status.entry("currentReplicas").or_insert(json!(0));
        v1status.entry("desiredReplicas").or_insert(json!(0));
        let mut other_current = Vec::new();
        for m in status.get("currentMetrics").and_then(Value::as_array).into_iter().flatten() {
            if is_cpu_current(m) && !v1status.contains_key("currentCPUUtilizationPercentage") {
                let u = m.pointer("/resource/current/averageUtilization").cloned().unwrap_or(Value::Null);
                v1status.insert("currentCPUUtilizationPercentage".into(), u);
            } else {
                other_current.push(metric_to_v1(m, true));
            }
        }
        if !other_current.is_empty() {
            set_annotation(&mut meta, METRIC_STATUSES_ANNOTATION, &Value::Array(other_current));
        }
        if let Some(c) = status.get("conditions").filter(|c| c.as_array().is_some_and(|a| !a.is_empty())) {
            set_annotation(&mut meta, CONDITIONS_ANNOTATION, c);
        }
        out["status"] = Value::Object(v1status);
    }
    out["metadata"] = meta;
    out
}

fn hpa_v1_to_v2(v1: &Value) -> Value {
    let mut out = v1.clone();
    out["kind"] = json!("HorizontalPodAutoscaler");
    let spec = v1.get("spec").cloned().unwrap_or(json!({}));
    let mut meta = v1.get("metadata").cloned().unwrap_or(json!({}));
    let mut v2spec = Map::new();
    rename(
        &spec,
        &mut v2spec,
        &[("scaleTargetRef", "scaleTargetRef"), ("minReplicas", "minReplicas"), ("maxReplicas", "maxReplicas")],
    );
    let mut metrics = Vec::new();
    if let Some(u) = spec.get("targetCPUUtilizationPercentage").filter(|v| !v.is_null()) {
        metrics.push(json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": u}}}));
    }
    if let Some(Value::Array(others)) = take_annotation(&mut meta, METRIC_SPECS_ANNOTATION) {
        metrics.extend(others.iter().map(|m| metric_to_v2(m, false)));
    }
    if !metrics.is_empty() {
        v2spec.insert("metrics".into(), Value::Array(metrics));
    }
    if let Some(b) = take_annotation(&mut meta, BEHAVIOR_ANNOTATION) {
        v2spec.insert("behavior".into(), b);
    }
    let current_others = take_annotation(&mut meta, METRIC_STATUSES_ANNOTATION);
    let conditions = take_annotation(&mut meta, CONDITIONS_ANNOTATION);
    out["spec"] = Value::Object(v2spec);
    if let Some(status) = v1.get("status").filter(|s| s.is_object()) {
        let mut v2status = Map::new();
        rename(
            status,
            &mut v2status,
            &[
                ("observedGeneration", "observedGeneration"),
                ("lastScaleTime", "lastScaleTime"),
                ("currentReplicas", "currentReplicas"),
                ("desiredReplicas", "desiredReplicas"),
            ],
        );
        let mut current = Vec::new();
        if let Some(u) = status.get("currentCPUUtilizationPercentage").filter(|v| !v.is_null()) {
            current
                .push(json!({"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": u}}}));
        }
        if let Some(Value::Array(others)) = current_others {
            current.extend(others.iter().map(|m| metric_to_v2(m, true)));
        }
        if !current.is_empty() {
            v2status.insert("currentMetrics".into(), Value::Array(current));
        }
        if let Some(c) = conditions {
            v2status.insert("conditions".into(), c);
        }
        out["status"] = Value::Object(v2status);
    }
    out["metadata"] = meta;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hpa_conversion() -> Conversion {
        Conversion { group: "autoscaling", version: "v2", plural: "horizontalpodautoscalers", kind: Kind::HpaV1 }
    }

    #[test]
    fn hpa_cpu_target_maps_both_ways_and_other_metrics_round_trip() {
        let c = hpa_conversion();
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                "minReplicas": 1, "maxReplicas": 5, "targetCPUUtilizationPercentage": 60}});
        let v2 = c.to_storage(&v1);
        assert_eq!(v2["apiVersion"], "autoscaling/v2");
        assert_eq!(v2["spec"]["metrics"][0]["resource"]["name"], "cpu");
        assert_eq!(
            v2["spec"]["metrics"][0]["resource"]["target"],
            json!({"type": "Utilization", "averageUtilization": 60})
        );
        assert_eq!(c.from_storage(&v2), v1);

        let mut v2 = v2;
        v2["spec"]["metrics"].as_array_mut().unwrap().push(json!({"type": "Pods", "pods": {
            "metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}));
        v2["spec"]["behavior"] = json!({"scaleDown": {"stabilizationWindowSeconds": 60}});
        v2["status"] = json!({"currentReplicas": 2, "desiredReplicas": 3,
            "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 40, "averageValue": "100m"}}}],
            "conditions": [{"type": "AbleToScale", "status": "True"}]});
        let back = c.from_storage(&v2);
        assert_eq!(back["spec"]["targetCPUUtilizationPercentage"], 60);
        assert_eq!(back["status"]["currentCPUUtilizationPercentage"], 40);
        let metrics: Value =
            serde_json::from_str(back["metadata"]["annotations"][METRIC_SPECS_ANNOTATION].as_str().unwrap()).unwrap();
        assert_eq!(metrics, json!([{"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "10"}}]));
        let again = c.to_storage(&back);
        assert_eq!(again["spec"]["metrics"], v2["spec"]["metrics"]);
        assert_eq!(again["spec"]["behavior"], v2["spec"]["behavior"]);
        assert_eq!(again["status"]["conditions"], v2["status"]["conditions"]);
        assert!(again["metadata"].get("annotations").is_none(), "{again}");
    }

    #[test]
    fn events_map_between_the_two_apis() {
        let c = Conversion { group: "", version: "v1", plural: "events", kind: Kind::EventsV1 };
        let core = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "p.1", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "p"}, "message": "hello", "reason": "Started",
            "source": {"component": "kubelet"}, "count": 3, "firstTimestamp": "2026-01-01T00:00:00Z",
            "lastTimestamp": "2026-01-01T00:01:00Z", "reportingComponent": "kubelet", "type": "Normal"});
        let ev = c.from_storage(&core);
        assert_eq!(ev["apiVersion"], "events.k8s.io/v1");
        assert_eq!(ev["regarding"]["name"], "p");
        assert_eq!(ev["note"], "hello");
        assert_eq!(ev["deprecatedSource"]["component"], "kubelet");
        assert_eq!(ev["deprecatedCount"], 3);
        assert_eq!(ev["deprecatedFirstTimestamp"], "2026-01-01T00:00:00Z");
        assert_eq!(ev["reportingController"], "kubelet");
        assert!(ev.get("message").is_none() && ev.get("involvedObject").is_none());
        assert_eq!(c.to_storage(&ev), core);
    }
}
