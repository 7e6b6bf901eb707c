//! DefaultTolerationSeconds (plugin/pkg/admission/defaulttolerationseconds):
//! a new pod tolerates `node.kubernetes.io/not-ready` and
//! `node.kubernetes.io/unreachable` NoExecute taints for 300 s unless it
//! already tolerates them.

use async_trait::async_trait;
use rkube_apimachinery::ApiError;
use serde_json::{json, Value};

use super::{Attributes, Operation, Plugin};

/// Seconds a pod stays bound to a not-ready or unreachable node
/// (`--default-not-ready-toleration-seconds`, `--default-unreachable-toleration-seconds`).
pub const DEFAULT_TOLERATION_SECONDS: i64 = 300;

/// The DefaultTolerationSeconds plugin.
pub struct DefaultTolerationSeconds;

#[async_trait]
impl Plugin for DefaultTolerationSeconds {
    fn name(&self) -> &'static str {
        "DefaultTolerationSeconds"
    }

    async fn admit(&self, attrs: &Attributes<'_>, object: Option<&mut Value>) -> Result<(), ApiError> {
        let Some(pod) = object else { return Ok(()) };
        if attrs.operation != Operation::Create || !attrs.is("", "pods", "") {
            return Ok(());
        }
        add_default_tolerations(pod);
        Ok(())
    }
}

fn add_default_tolerations(pod: &mut Value) {
    let tolerations = &mut pod["spec"]["tolerations"];
    // A toleration with an empty key (or effect) tolerates every key (effect).
    let tolerates = |key: &str| {
        tolerations.as_array().into_iter().flatten().any(|t| {
            let k = t.get("key").and_then(Value::as_str).unwrap_or("");
            let e = t.get("effect").and_then(Value::as_str).unwrap_or("");
            (k == key || k.is_empty()) && (e == "NoExecute" || e.is_empty())
        })
    };
    let missing: Vec<&str> = ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]
        .into_iter()
        .filter(|k| !tolerates(k))
        .collect();
    if missing.is_empty() {
        return;
    }
    if !tolerations.is_array() {
        *tolerations = json!([]);
    }
    if let Some(list) = tolerations.as_array_mut() {
        for key in missing {
            list.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute",
                "tolerationSeconds": DEFAULT_TOLERATION_SECONDS}));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_get_both_tolerations_unless_tolerated() {
        let mut pod = json!({"spec": {"containers": []}});
        add_default_tolerations(&mut pod);
        assert_eq!(
            pod["spec"]["tolerations"],
            json!([
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            ])
        );
        let mut own =
            json!({"spec": {"tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists"}]}});
        add_default_tolerations(&mut own);
        let keys: Vec<_> = own["spec"]["tolerations"].as_array().unwrap().iter().map(|t| t["key"].clone()).collect();
        assert_eq!(keys, [json!("node.kubernetes.io/unreachable"), json!("node.kubernetes.io/not-ready")]);
        let mut all = json!({"spec": {"tolerations": [{"operator": "Exists"}]}});
        add_default_tolerations(&mut all);
        assert_eq!(all["spec"]["tolerations"].as_array().unwrap().len(), 1);
    }
}
