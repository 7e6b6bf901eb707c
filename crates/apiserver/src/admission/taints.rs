//! TaintNodesByCondition (plugin/pkg/admission/nodetaint): a new Node is
//! tainted `node.kubernetes.io/not-ready:NoSchedule` until the node
//! lifecycle controller sees it Ready.

use async_trait::async_trait;
use rkube_apimachinery::ApiError;
use serde_json::{json, Value};

use super::{Attributes, Operation, Plugin};

/// The taint every new Node gets.
pub const NOT_READY_TAINT_KEY: &str = "node.kubernetes.io/not-ready";

/// The TaintNodesByCondition plugin.
pub struct TaintNodesByCondition;

#[async_trait]
impl Plugin for TaintNodesByCondition {
    fn name(&self) -> &'static str {
        "TaintNodesByCondition"
    }

    /// On Node create: adds the not-ready NoSchedule taint unless a taint
    /// with that key and effect is there.
    async fn admit(&self, attrs: &Attributes<'_>, object: Option<&mut Value>) -> Result<(), ApiError> {
        let Some(node) = object else { return Ok(()) };
        if attrs.operation != Operation::Create || !attrs.is("", "nodes", "") {
            return Ok(());
        }
        add_not_ready_taint(node);
        Ok(())
    }
}

fn add_not_ready_taint(node: &mut Value) {
    let taints = &mut node["spec"]["taints"];
    let present = taints.as_array().into_iter().flatten().any(|t| {
        t.get("key").and_then(Value::as_str) == Some(NOT_READY_TAINT_KEY)
            && t.get("effect").and_then(Value::as_str) == Some("NoSchedule")
    });
    if present {
        return;
    }
    if !taints.is_array() {
        *taints = json!([]);
    }
    if let Some(list) = taints.as_array_mut() {
        list.push(json!({"key": NOT_READY_TAINT_KEY, "effect": "NoSchedule"}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_nodes_get_the_not_ready_taint_once() {
        let mut node = json!({"metadata": {"name": "n"}});
        add_not_ready_taint(&mut node);
        assert_eq!(node["spec"]["taints"], json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]));
        add_not_ready_taint(&mut node);
        assert_eq!(node["spec"]["taints"].as_array().unwrap().len(), 1);
        // Another effect of the same key is a different taint.
        let mut other = json!({"spec": {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]}});
        add_not_ready_taint(&mut other);
        assert_eq!(other["spec"]["taints"].as_array().unwrap().len(), 2);
    }
}
