//! The selector default constraints use (upstream `helper.DefaultSelector`):
//! the union of the selectors of the Services in the pod's namespace that
//! select it, and of its controlling ReplicationController, ReplicaSet or
//! StatefulSet.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Pod, ReplicationController, Service};
use rkube_apimachinery::selector::labels::LabelSelector;
use serde_json::{json, Value};

use super::DefaultSelectorSource;
use crate::framework::Lister;

/// A [`DefaultSelectorSource`] over informer listers (wired once the
/// scheduler watches these kinds).
pub struct ListerSelectorSource {
    /// Services.
    pub services: Arc<dyn Lister<Service>>,
    /// ReplicationControllers.
    pub replication_controllers: Arc<dyn Lister<ReplicationController>>,
    /// ReplicaSets.
    pub replica_sets: Arc<dyn Lister<ReplicaSet>>,
    /// StatefulSets.
    pub stateful_sets: Arc<dyn Lister<StatefulSet>>,
}

impl DefaultSelectorSource for ListerSelectorSource {
    fn selector(&self, pod: &Pod) -> Option<LabelSelector> {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("");
        let empty = BTreeMap::new();
        let pod_labels = pod.metadata.labels.as_ref().unwrap_or(&empty);
        // Services, RCs and the owner all select the pod, so their labels
        // cannot conflict: merging is safe (as upstream).
        let mut labels: BTreeMap<String, String> = BTreeMap::new();
        for svc in self.services.list_namespace(ns) {
            // A nil selector matches nothing (not everything).
            let Some(sel) = svc.spec.as_ref().and_then(|s| s.selector.as_ref()) else { continue };
            if LabelSelector::from_set(sel.iter().map(|(k, v)| (k.as_str(), v.as_str()))).matches(pod_labels) {
                labels.extend(sel.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
        let mut expressions: Vec<Value> = Vec::new();
        let owner = pod.metadata.owner_references.iter().flatten().find(|o| o.controller == Some(true));
        if let Some(o) = owner {
            let workload_selector = match (o.api_version.as_str(), o.kind.as_str()) {
                ("v1", "ReplicationController") => {
                    if let Some(sel) =
                        self.replication_controllers.get(ns, &o.name).and_then(|rc| rc.spec.clone()?.selector)
                    {
                        labels.extend(sel);
                    }
                    None
                }
                ("apps/v1", "ReplicaSet") => {
                    self.replica_sets.get(ns, &o.name).and_then(|rs| Some(rs.spec.as_ref()?.selector.clone()))
                }
                ("apps/v1", "StatefulSet") => {
                    self.stateful_sets.get(ns, &o.name).and_then(|ss| Some(ss.spec.as_ref()?.selector.clone()))
                }
                _ => None,
            };
            if let Some(sel) = workload_selector {
                for (k, v) in sel.match_labels.iter().flatten() {
                    expressions.push(json!({"key": k, "operator": "In", "values": [v]}));
                }
                for e in sel.match_expressions.iter().flatten() {
                    expressions.push(serde_json::to_value(e).ok()?);
                }
            }
        }
        LabelSelector::from_label_selector_json(&json!({"matchLabels": labels, "matchExpressions": expressions})).ok()
    }
}
