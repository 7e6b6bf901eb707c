//! HorizontalPodAutoscalers (stored as `autoscaling/v2`): upstream's v2
//! defaulting — `minReplicas` 1, a `cpu` Utilization metric of 80 % when
//! no metric is given, and, when `behavior` is given, the default scale-up
//! and scale-down rules for the parts left out.

use serde_json::{json, Value};

use super::{generic, Generic, Strategy};

/// Upstream's `DefaultCPUUtilization`.
pub const DEFAULT_CPU_UTILIZATION: i64 = 80;

/// The strategy of `autoscaling/v2` HorizontalPodAutoscalers.
#[derive(Clone, Debug)]
pub struct HorizontalPodAutoscaler {
    flags: Generic,
}

impl HorizontalPodAutoscaler {
    /// The strategy with upstream's flags.
    #[allow(clippy::new_without_default)]
    pub fn new() -> HorizontalPodAutoscaler {
        HorizontalPodAutoscaler { flags: generic::for_builtin("autoscaling", "HorizontalPodAutoscaler", true) }
    }
}

fn default_rules(rules: &mut Value, up: bool) {
    if !rules.is_object() {
        *rules = json!({});
    }
    let r = rules.as_object_mut().expect("an object");
    if up {
        r.entry("stabilizationWindowSeconds").or_insert(json!(0));
    }
    r.entry("selectPolicy").or_insert(json!("Max"));
    if r.get("policies").is_none_or(|p| p.as_array().is_none_or(|a| a.is_empty())) {
        let policies = if up {
            json!([{"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}])
        } else {
            json!([{"type": "Percent", "value": 100, "periodSeconds": 15}])
        };
        r.insert("policies".into(), policies);
    }
}

impl Strategy for HorizontalPodAutoscaler {
    fn default(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
        spec.entry("minReplicas").or_insert(json!(1));
        if spec.get("metrics").is_none_or(|m| m.as_array().is_none_or(|a| a.is_empty())) {
            spec.insert(
                "metrics".into(),
                json!([{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}}]),
            );
        }
        if let Some(behavior) = spec.get_mut("behavior").filter(|b| b.is_object()) {
            default_rules(&mut behavior["scaleUp"], true);
            default_rules(&mut behavior["scaleDown"], false);
        }
    }
    fn has_status_subresource(&self) -> bool {
        true
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
    use super::*;

    #[test]
    fn v2_defaults() {
        let mut hpa = json!({"spec": {"maxReplicas": 3}});
        HorizontalPodAutoscaler::new().default(&mut hpa);
        assert_eq!(hpa["spec"]["minReplicas"], 1);
        assert_eq!(hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], 80);
        assert!(hpa["spec"].get("behavior").is_none());
        let mut with_behavior =
            json!({"spec": {"maxReplicas": 3, "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}});
        HorizontalPodAutoscaler::new().default(&mut with_behavior);
        let b = &with_behavior["spec"]["behavior"];
        assert_eq!(b["scaleUp"]["policies"].as_array().unwrap().len(), 2);
        assert_eq!(b["scaleUp"]["stabilizationWindowSeconds"], 0);
        assert_eq!(b["scaleDown"]["stabilizationWindowSeconds"], 60);
        assert_eq!(b["scaleDown"]["selectPolicy"], "Max");
    }
}
