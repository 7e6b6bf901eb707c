//! RuntimeClass (plugin/pkg/admission/runtimeclass): a new pod naming a
//! RuntimeClass gets the class's pod overhead and scheduling constraints
//! (nodeSelector merged, tolerations merged), and is refused when it sets
//! an overhead of its own that differs, or names a class that does not
//! exist.

use std::sync::Arc;

use async_trait::async_trait;
use rkube_apimachinery::ApiError;
use serde_json::{json, Map, Value};

use super::builtin::{forbidden, lookup, milli};
use super::{Attributes, Operation, Plugin};
use crate::storage::ResourceStore;

/// The RuntimeClass plugin over the RuntimeClass store.
pub struct RuntimeClass {
    classes: Option<Arc<ResourceStore>>,
}

impl RuntimeClass {
    /// The plugin, reading classes from `classes`.
    pub fn new(classes: Option<Arc<ResourceStore>>) -> RuntimeClass {
        RuntimeClass { classes }
    }

    /// The pod's RuntimeClass, if it names one; refused when it is missing.
    async fn class(&self, attrs: &Attributes<'_>, pod: &Value) -> Result<Option<Value>, ApiError> {
        let Some(name) = pod.pointer("/spec/runtimeClassName").and_then(Value::as_str) else { return Ok(None) };
        let Some(store) = &self.classes else { return Ok(None) };
        match lookup(store, "", name).await? {
            Some(class) => Ok(Some(class)),
            None => Err(forbidden(attrs, Some(pod), format!("pod rejected: RuntimeClass {name:?} not found"))),
        }
    }
}

fn applies(attrs: &Attributes<'_>) -> bool {
    attrs.operation == Operation::Create && attrs.is("", "pods", "")
}

/// Semantic equality of two resource lists (quantities compared by value).
fn same_resources(a: Option<&Value>, b: Option<&Value>) -> bool {
    let empty = Map::new();
    let a = a.and_then(Value::as_object).unwrap_or(&empty);
    let b = b.and_then(Value::as_object).unwrap_or(&empty);
    a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| milli(v) == milli(w)))
}

const OVERHEAD_MISMATCH: &str = "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead";

/// Upstream's `isSuperset`: whether toleration `ss` tolerates everything `t` does.
fn is_superset(ss: &Value, t: &Value) -> bool {
    if ss == t {
        return true;
    }
    let s = |v: &Value, f: &str| v.get(f).and_then(Value::as_str).unwrap_or("").to_string();
    if s(t, "key") != s(ss, "key") && (!s(ss, "key").is_empty() || s(ss, "operator") != "Exists") {
        return false;
    }
    if s(t, "effect") != s(ss, "effect") && !s(ss, "effect").is_empty() {
        return false;
    }
    if s(ss, "effect") == "NoExecute" {
        if let Some(limit) = ss.get("tolerationSeconds").and_then(Value::as_i64) {
            match t.get("tolerationSeconds").and_then(Value::as_i64) {
                Some(secs) if secs <= limit => {}
                _ => return false,
            }
        }
    }
    match s(ss, "operator").as_str() {
        "Equal" | "" => matches!(s(t, "operator").as_str(), "Equal" | "") && s(t, "value") == s(ss, "value"),
        "Exists" => true,
        _ => false,
    }
}

/// Upstream's `MergeTolerations`: both lists, keeping only the widest of
/// tolerations that cover one another (the first of equal ones).
fn merge_tolerations(first: &[Value], second: &[Value]) -> Vec<Value> {
    let all: Vec<&Value> = first.iter().chain(second).collect();
    let mut merged: Vec<Value> = Vec::new();
    'next: for (i, t) in all.iter().enumerate() {
        if merged.iter().any(|m| is_superset(m, t)) {
            continue;
        }
        for t2 in &all[i + 1..] {
            if t2 != t && is_superset(t2, t) {
                continue 'next;
            }
        }
        merged.push((*t).clone());
    }
    merged
}

fn set_scheduling(attrs: &Attributes<'_>, pod: &mut Value, class: &Value) -> Result<(), ApiError> {
    let Some(scheduling) = class.get("scheduling").filter(|s| !s.is_null()) else { return Ok(()) };
    if let Some(selector) = scheduling.get("nodeSelector").and_then(Value::as_object) {
        let mut merged = pod.pointer("/spec/nodeSelector").and_then(Value::as_object).cloned().unwrap_or_default();
        for (k, v) in selector {
            if let Some(pv) = merged.get(k) {
                if pv != v {
                    let msg = format!(
                        "conflict: runtimeClass.scheduling.nodeSelector[{k}] = {}; pod.spec.nodeSelector[{k}] = {}",
                        v.as_str().unwrap_or(""),
                        pv.as_str().unwrap_or("")
                    );
                    return Err(forbidden(attrs, Some(pod), msg));
                }
            }
            merged.insert(k.clone(), v.clone());
        }
        pod["spec"]["nodeSelector"] = Value::Object(merged);
    }
    if let Some(tolerations) = scheduling.get("tolerations").and_then(Value::as_array) {
        let own = pod.pointer("/spec/tolerations").and_then(Value::as_array).cloned().unwrap_or_default();
        let merged = merge_tolerations(&own, tolerations);
        if !merged.is_empty() {
            pod["spec"]["tolerations"] = json!(merged);
        }
    }
    Ok(())
}

#[async_trait]
impl Plugin for RuntimeClass {
    fn name(&self) -> &'static str {
        "RuntimeClass"
    }

    async fn admit(&self, attrs: &Attributes<'_>, object: Option<&mut Value>) -> Result<(), ApiError> {
        let Some(pod) = object else { return Ok(()) };
        if !applies(attrs) {
            return Ok(());
        }
        let Some(class) = self.class(attrs, pod).await? else { return Ok(()) };
        if let Some(fixed) = class.pointer("/overhead/podFixed").filter(|o| !o.is_null()) {
            let own = pod.pointer("/spec/overhead").filter(|o| o.as_object().is_some_and(|m| !m.is_empty()));
            if own.is_some() && !same_resources(own, Some(fixed)) {
                return Err(forbidden(attrs, Some(pod), OVERHEAD_MISMATCH));
            }
            pod["spec"]["overhead"] = fixed.clone();
        }
        set_scheduling(attrs, pod, &class)
    }

    async fn validate(&self, attrs: &Attributes<'_>, object: Option<&Value>) -> Result<(), ApiError> {
        let Some(pod) = object else { return Ok(()) };
        if !applies(attrs) {
            return Ok(());
        }
        let class = self.class(attrs, pod).await?;
        let own = pod.pointer("/spec/overhead").filter(|o| !o.is_null());
        match class.as_ref().and_then(|c| c.pointer("/overhead/podFixed")).filter(|o| !o.is_null()) {
            Some(fixed) if !same_resources(own, Some(fixed)) => Err(forbidden(attrs, Some(pod), OVERHEAD_MISMATCH)),
            Some(_) => Ok(()),
            None if own.is_some() => Err(forbidden(
                attrs,
                Some(pod),
                "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead",
            )),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerations_merge_keeping_the_widest() {
        let own = [json!({"key": "a", "operator": "Equal", "value": "x", "effect": "NoSchedule"})];
        let class = [
            json!({"key": "a", "operator": "Exists"}),
            json!({"key": "b", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10}),
        ];
        let merged = merge_tolerations(&own, &class);
        assert_eq!(merged, vec![class[0].clone(), class[1].clone()]);
        // Equal tolerations are kept once.
        assert_eq!(merge_tolerations(&class[..1], &class[..1]).len(), 1);
    }

    #[test]
    fn overheads_compare_by_quantity() {
        assert!(same_resources(Some(&json!({"cpu": "0.1"})), Some(&json!({"cpu": "100m"}))));
        assert!(!same_resources(Some(&json!({"cpu": "100m"})), Some(&json!({"cpu": "100m", "memory": "1Mi"}))));
    }
}
