//! Priority (plugin/pkg/admission/priority): a new pod's
//! `priorityClassName` resolves to `priority` and `preemptionPolicy`; a pod
//! naming no class gets the `globalDefault` class (or priority 0 and
//! `PreemptLowerPriority` when there is none). PriorityClass writes may not
//! mark a second class `globalDefault`.
//!
//! Upstream 1.33 limits the system classes to kube-system through the
//! ResourceQuota plugin's default configuration, not here; that arrives
//! with quota admission.

use std::sync::Arc;

use async_trait::async_trait;
use rkube_apimachinery::{meta, ApiError};
use serde_json::{json, Value};

use super::builtin::{forbidden, list, lookup};
use super::{Attributes, Operation, Plugin};
use crate::storage::ResourceStore;

/// The Priority plugin over the PriorityClass store.
pub struct Priority {
    classes: Option<Arc<ResourceStore>>,
}

impl Priority {
    /// The plugin, reading classes from `classes`.
    pub fn new(classes: Option<Arc<ResourceStore>>) -> Priority {
        Priority { classes }
    }

    /// The global default class; with several, the lowest value.
    async fn default_class(&self) -> Result<Option<Value>, ApiError> {
        let Some(store) = &self.classes else { return Ok(None) };
        let value = |c: &Value| c.get("value").and_then(Value::as_i64).unwrap_or(0);
        Ok(list(store, "")
            .await?
            .into_iter()
            .filter(|c| c.get("globalDefault").and_then(Value::as_bool) == Some(true))
            .min_by_key(value))
    }

    async fn admit_pod(&self, attrs: &Attributes<'_>, pod: &mut Value) -> Result<(), ApiError> {
        if attrs.operation == Operation::Update {
            // The priority was set on create; an update that omits it keeps it.
            if let Some(old) = attrs.old_object {
                for field in ["priority", "preemptionPolicy"] {
                    let old_value = old.pointer(&format!("/spec/{field}")).filter(|v| !v.is_null());
                    if pod.pointer(&format!("/spec/{field}")).is_none_or(Value::is_null) {
                        if let Some(v) = old_value {
                            pod["spec"][field] = v.clone();
                        }
                    }
                }
            }
            return Ok(());
        }
        let class_name = pod.pointer("/spec/priorityClassName").and_then(Value::as_str).unwrap_or("").to_string();
        let (priority, policy) = if class_name.is_empty() {
            match self
                .default_class()
                .await
                .map_err(|e| ApiError::Internal(format!("failed to get default priority class: {e}")))?
            {
                Some(class) => {
                    pod["spec"]["priorityClassName"] = json!(meta::name(&class));
                    (class.get("value").and_then(Value::as_i64).unwrap_or(0), class.get("preemptionPolicy").cloned())
                }
                None => (0, Some(json!("PreemptLowerPriority"))),
            }
        } else {
            let Some(store) = &self.classes else { return Ok(()) };
            match lookup(store, "", &class_name).await {
                Ok(Some(class)) => {
                    (class.get("value").and_then(Value::as_i64).unwrap_or(0), class.get("preemptionPolicy").cloned())
                }
                Ok(None) => {
                    let msg = format!("no PriorityClass with name {class_name} was found");
                    return Err(forbidden(attrs, Some(pod), msg));
                }
                Err(e) => {
                    return Err(ApiError::Internal(format!("failed to get PriorityClass with name {class_name}: {e}")))
                }
            }
        };
        if let Some(given) = pod.pointer("/spec/priority").and_then(Value::as_i64) {
            if given != priority {
                let msg = format!(
                    "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {priority} from the given PriorityClass name"
                );
                return Err(forbidden(attrs, Some(pod), msg));
            }
        }
        pod["spec"]["priority"] = json!(priority);
        if let Some(policy) = policy.filter(|p| !p.is_null()) {
            if let Some(given) = pod.pointer("/spec/preemptionPolicy").and_then(Value::as_str) {
                if Some(given) != policy.as_str() {
                    let msg = format!(
                        "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {} from the given PriorityClass name",
                        policy.as_str().unwrap_or("")
                    );
                    return Err(forbidden(attrs, Some(pod), msg));
                }
            }
            pod["spec"]["preemptionPolicy"] = policy;
        }
        Ok(())
    }
}

#[async_trait]
impl Plugin for Priority {
    fn name(&self) -> &'static str {
        "Priority"
    }

    async fn admit(&self, attrs: &Attributes<'_>, object: Option<&mut Value>) -> Result<(), ApiError> {
        let Some(pod) = object else { return Ok(()) };
        if !attrs.is("", "pods", "") || !matches!(attrs.operation, Operation::Create | Operation::Update) {
            return Ok(());
        }
        self.admit_pod(attrs, pod).await
    }

    /// A PriorityClass marked `globalDefault` while another one is.
    async fn validate(&self, attrs: &Attributes<'_>, object: Option<&Value>) -> Result<(), ApiError> {
        let Some(class) = object else { return Ok(()) };
        if !attrs.is("scheduling.k8s.io", "priorityclasses", "")
            || !matches!(attrs.operation, Operation::Create | Operation::Update)
            || class.get("globalDefault").and_then(Value::as_bool) != Some(true)
        {
            return Ok(());
        }
        let existing = self
            .default_class()
            .await
            .map_err(|e| ApiError::Internal(format!("failed to get default priority class: {e}")))?;
        if let Some(existing) = existing {
            if attrs.operation == Operation::Create || meta::name(&existing) != meta::name(class) {
                let msg = format!(
                    "PriorityClass {} is already marked as default. Only one default can exist",
                    meta::name(&existing)
                );
                return Err(forbidden(attrs, Some(class), msg));
            }
        }
        Ok(())
    }
}
