//! DefaultTolerationSeconds (plugin/pkg/admission/defaulttolerationseconds):
//! a new pod tolerates `node.kubernetes.io/not-ready` and
//! `node.kubernetes.io/unreachable` NoExecute taints for 300 s (by default;
//! kube-apiserver's `--default-not-ready-toleration-seconds` and
//! `--default-unreachable-toleration-seconds`) unless it already tolerates
//! them.

use async_trait::async_trait;
use rkube_apimachinery::ApiError;
use serde_json::{json, Value};

use super::{Attributes, Operation, Plugin};

/// Seconds a pod stays bound to a not-ready or unreachable node
/// (`--default-not-ready-toleration-seconds`, `--default-unreachable-toleration-seconds`).
pub const DEFAULT_TOLERATION_SECONDS: i64 = 300;

/// The DefaultTolerationSeconds plugin: how many seconds the tolerations it
/// adds to new pods allow for each taint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DefaultTolerationSeconds {
    /// `tolerationSeconds` of the `node.kubernetes.io/not-ready:NoExecute`
    /// toleration (`--default-not-ready-toleration-seconds`).
    pub not_ready: i64,
    /// `tolerationSeconds` of the `node.kubernetes.io/unreachable:NoExecute`
    /// toleration (`--default-unreachable-toleration-seconds`).
    pub unreachable: i64,
}

impl Default for DefaultTolerationSeconds {
    /// Upstream's defaults: [`DEFAULT_TOLERATION_SECONDS`] for both taints.
    fn default() -> Self {
        DefaultTolerationSeconds { not_ready: DEFAULT_TOLERATION_SECONDS, unreachable: DEFAULT_TOLERATION_SECONDS }
    }
}

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
        add_default_tolerations(pod, self);
        Ok(())
    }
}

/// Appends the not-ready and unreachable NoExecute tolerations `seconds`
/// gives to `pod` for each taint the pod does not tolerate yet (with any
/// toleration seconds), as upstream's plugin does.
fn add_default_tolerations(pod: &mut Value, seconds: &DefaultTolerationSeconds) {
    let tolerations = &mut pod["spec"]["tolerations"];
    // A toleration with an empty key (or effect) tolerates every key (effect).
    let tolerates = |key: &str| {
        tolerations.as_array().into_iter().flatten().any(|t| {
            let k = t.get("key").and_then(Value::as_str).unwrap_or("");
            let e = t.get("effect").and_then(Value::as_str).unwrap_or("");
            (k == key || k.is_empty()) && (e == "NoExecute" || e.is_empty())
        })
    };
    let missing: Vec<(&str, i64)> =
        [("node.kubernetes.io/not-ready", seconds.not_ready), ("node.kubernetes.io/unreachable", seconds.unreachable)]
            .into_iter()
            .filter(|(k, _)| !tolerates(k))
            .collect();
    if missing.is_empty() {
        return;
    }
    if !tolerations.is_array() {
        *tolerations = json!([]);
    }
    if let Some(list) = tolerations.as_array_mut() {
        for (key, seconds) in missing {
            list.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute",
                "tolerationSeconds": seconds}));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_get_both_tolerations_unless_tolerated() {
        let mut pod = json!({"spec": {"containers": []}});
        add_default_tolerations(&mut pod, &DefaultTolerationSeconds::default());
        assert_eq!(
            pod["spec"]["tolerations"],
            json!([
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            ])
        );
        let mut own =
            json!({"spec": {"tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists"}]}});
        add_default_tolerations(&mut own, &DefaultTolerationSeconds::default());
        let keys: Vec<_> = own["spec"]["tolerations"].as_array().unwrap().iter().map(|t| t["key"].clone()).collect();
        assert_eq!(keys, [json!("node.kubernetes.io/unreachable"), json!("node.kubernetes.io/not-ready")]);
        let mut all = json!({"spec": {"tolerations": [{"operator": "Exists"}]}});
        add_default_tolerations(&mut all, &DefaultTolerationSeconds::default());
        assert_eq!(all["spec"]["tolerations"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn toleration_seconds_follow_the_flags() {
        let seconds = DefaultTolerationSeconds { not_ready: 7, unreachable: 12 };
        let mut pod = json!({"spec": {"containers": []}});
        add_default_tolerations(&mut pod, &seconds);
        assert_eq!(
            pod["spec"]["tolerations"],
            json!([
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 7},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 12}
            ])
        );
        // A pod's own toleration, with its own seconds, is kept as written.
        let mut own = json!({"spec": {"tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 1}
        ]}});
        add_default_tolerations(&mut own, &seconds);
        assert_eq!(
            own["spec"]["tolerations"],
            json!([
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 1},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 12}
            ])
        );
    }
}
