//! Which nodes a DaemonSet runs on and how its pods are pinned there
//! (upstream `pkg/controller/daemon`: `NodeShouldRunDaemonPod`,
//! `predicates`; `pkg/controller/daemon/util`:
//! `AddOrUpdateDaemonPodTolerations`,
//! `ReplaceDaemonSetPodNodeNameNodeAffinity`, `GetTargetNodeName`).
//!
//! - A node *should run* the pod when the template's `nodeSelector` and
//!   required node affinity match it and every `NoSchedule`/`NoExecute`
//!   taint is tolerated; it *should continue running* an existing pod
//!   when the selector/affinity match and every `NoExecute` taint is
//!   tolerated. Tolerations include the DaemonSet defaults.
//! - Default tolerations (operator Exists, no tolerationSeconds):
//!   `node.kubernetes.io/not-ready` and `unreachable` NoExecute;
//!   `disk-pressure`, `memory-pressure`, `pid-pressure`, `unschedulable`
//!   NoSchedule; with `hostNetwork`, `network-unavailable` NoSchedule.
//! - A pod is pinned with a required node affinity term `matchFields:
//!   metadata.name In [node]`, set in every existing term (or as the only
//!   term).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, Node, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod, PodSpec, Taint,
    Toleration,
};

/// The field a pod is pinned by.
const NODE_NAME_FIELD: &str = "metadata.name";

fn tol(key: &str, effect: &str) -> Toleration {
    Toleration {
        key: Some(key.into()),
        operator: Some("Exists".into()),
        effect: Some(effect.into()),
        ..Default::default()
    }
}

/// Upstream `AddOrUpdateDaemonPodTolerations`.
pub fn add_default_tolerations(spec: &mut PodSpec) {
    let mut defaults = vec![
        tol("node.kubernetes.io/not-ready", "NoExecute"),
        tol("node.kubernetes.io/unreachable", "NoExecute"),
        tol("node.kubernetes.io/disk-pressure", "NoSchedule"),
        tol("node.kubernetes.io/memory-pressure", "NoSchedule"),
        tol("node.kubernetes.io/pid-pressure", "NoSchedule"),
        tol("node.kubernetes.io/unschedulable", "NoSchedule"),
    ];
    if spec.host_network == Some(true) {
        defaults.push(tol("node.kubernetes.io/network-unavailable", "NoSchedule"));
    }
    let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
    for d in defaults {
        // Upstream `AddOrUpdateTolerationInPodSpec`: a matching toleration
        // (same key, operator, value, effect) is replaced, else appended.
        let same = |t: &Toleration| {
            t.key == d.key
                && t.operator.as_deref().unwrap_or("Equal") == d.operator.as_deref().unwrap_or("Equal")
                && t.value.as_deref().unwrap_or("") == d.value.as_deref().unwrap_or("")
                && t.effect == d.effect
        };
        match tolerations.iter_mut().find(|t| same(t)) {
            Some(t) => *t = d,
            None => tolerations.push(d),
        }
    }
}

/// Upstream `ReplaceDaemonSetPodNodeNameNodeAffinity`.
pub fn pin_to_node(spec: &mut PodSpec, node: &str) {
    let req =
        NodeSelectorRequirement { key: NODE_NAME_FIELD.into(), operator: "In".into(), values: Some(vec![node.into()]) };
    let only = NodeSelectorTerm { match_fields: Some(vec![req.clone()]), match_expressions: None };
    let affinity = spec.affinity.get_or_insert_with(Affinity::default);
    let na = affinity.node_affinity.get_or_insert_with(NodeAffinity::default);
    let required = na
        .required_during_scheduling_ignored_during_execution
        .get_or_insert_with(|| NodeSelector { node_selector_terms: Vec::new() });
    if required.node_selector_terms.is_empty() {
        required.node_selector_terms = vec![only];
        return;
    }
    for term in &mut required.node_selector_terms {
        term.match_fields = Some(vec![req.clone()]);
    }
}

/// Upstream `GetTargetNodeName`: `spec.nodeName`, else the pinned node.
pub fn target_node(pod: &Pod) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    if let Some(n) = spec.node_name.as_ref().filter(|n| !n.is_empty()) {
        return Some(n.clone());
    }
    let terms = &spec
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms;
    terms.iter().flat_map(|t| t.match_fields.iter().flatten()).find_map(|r| {
        (r.key == NODE_NAME_FIELD && r.operator == "In")
            .then(|| r.values.as_ref().and_then(|v| (v.len() == 1).then(|| v[0].clone())))
            .flatten()
    })
}

fn requirement_matches(r: &NodeSelectorRequirement, value: Option<&String>) -> bool {
    let values = r.values.as_deref().unwrap_or(&[]);
    match r.operator.as_str() {
        "In" => value.is_some_and(|v| values.contains(v)),
        "NotIn" => value.is_none_or(|v| !values.contains(v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let (Some(v), Some(bound)) = (value.and_then(|v| v.parse::<i64>().ok()), values.first()) else {
                return false;
            };
            let Ok(bound) = bound.parse::<i64>() else { return false };
            if r.operator == "Gt" {
                v > bound
            } else {
                v < bound
            }
        }
        _ => false,
    }
}

/// Whether the required node affinity and `nodeSelector` of `spec` match `node`.
pub fn fits_node_affinity(spec: &PodSpec, node: &Node) -> bool {
    let empty = BTreeMap::new();
    let labels = node.metadata.labels.as_ref().unwrap_or(&empty);
    let name = node.metadata.name.clone().unwrap_or_default();
    if let Some(sel) = &spec.node_selector {
        if !sel.iter().all(|(k, v)| labels.get(k) == Some(v)) {
            return false;
        }
    }
    let Some(required) = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| n.required_during_scheduling_ignored_during_execution.as_ref())
    else {
        return true;
    };
    // Terms are ORed; a term with no requirements matches nothing.
    required.node_selector_terms.iter().any(|t| {
        let exprs = t.match_expressions.as_deref().unwrap_or(&[]);
        let fields = t.match_fields.as_deref().unwrap_or(&[]);
        (!exprs.is_empty() || !fields.is_empty())
            && exprs.iter().all(|r| requirement_matches(r, labels.get(&r.key)))
            && fields.iter().all(|r| r.key == NODE_NAME_FIELD && requirement_matches(r, Some(&name)))
    })
}

/// Upstream `Toleration.ToleratesTaint`.
pub fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    if t.effect.as_deref().is_some_and(|e| !e.is_empty() && e != taint.effect) {
        return false;
    }
    let key = t.key.as_deref().unwrap_or("");
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match t.operator.as_deref().unwrap_or("Equal") {
        "Exists" => true,
        "Equal" | "" => t.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or(""),
        _ => false,
    }
}

/// `(should_run, should_continue_running)` for a pod with `spec` (default
/// tolerations already added) on `node` (upstream `NodeShouldRunDaemonPod`).
pub fn should_run(spec: &PodSpec, node: &Node) -> (bool, bool) {
    if !fits_node_affinity(spec, node) {
        return (false, false);
    }
    let tolerations = spec.tolerations.as_deref().unwrap_or(&[]);
    let untolerated = |effect: &str| {
        node.spec
            .as_ref()
            .and_then(|s| s.taints.as_ref())
            .into_iter()
            .flatten()
            .filter(|t| t.effect == effect)
            .any(|taint| !tolerations.iter().any(|t| tolerates(t, taint)))
    };
    let no_execute = untolerated("NoExecute");
    (!no_execute && !untolerated("NoSchedule"), !no_execute)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::NodeSpec;
    use kube::api::ObjectMeta;

    fn node(name: &str, labels: &[(&str, &str)], taints: &[(&str, &str)]) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
                ..Default::default()
            },
            spec: Some(NodeSpec {
                taints: Some(
                    taints
                        .iter()
                        .map(|(k, e)| Taint { key: k.to_string(), effect: e.to_string(), ..Default::default() })
                        .collect(),
                ),
                ..Default::default()
            }),
            status: None,
        }
    }

    #[test]
    fn default_tolerations_follow_add_or_update_daemon_pod_tolerations() {
        let mut spec = PodSpec { host_network: Some(true), ..Default::default() };
        add_default_tolerations(&mut spec);
        add_default_tolerations(&mut spec);
        let t = spec.tolerations.as_ref().unwrap();
        let keys: Vec<(&str, &str)> =
            t.iter().map(|t| (t.key.as_deref().unwrap(), t.effect.as_deref().unwrap())).collect();
        assert_eq!(
            keys,
            [
                ("node.kubernetes.io/not-ready", "NoExecute"),
                ("node.kubernetes.io/unreachable", "NoExecute"),
                ("node.kubernetes.io/disk-pressure", "NoSchedule"),
                ("node.kubernetes.io/memory-pressure", "NoSchedule"),
                ("node.kubernetes.io/pid-pressure", "NoSchedule"),
                ("node.kubernetes.io/unschedulable", "NoSchedule"),
                ("node.kubernetes.io/network-unavailable", "NoSchedule"),
            ]
        );
        assert!(t.iter().all(|t| t.operator.as_deref() == Some("Exists") && t.toleration_seconds.is_none()));
    }

    #[test]
    fn pinning_sets_match_fields_in_every_term_and_is_read_back() {
        let mut spec = PodSpec::default();
        pin_to_node(&mut spec, "n1");
        let pod = Pod { spec: Some(spec.clone()), ..Default::default() };
        assert_eq!(target_node(&pod).as_deref(), Some("n1"));
        let terms = &spec
            .affinity
            .unwrap()
            .node_affinity
            .unwrap()
            .required_during_scheduling_ignored_during_execution
            .unwrap()
            .node_selector_terms;
        assert_eq!(terms.len(), 1);
        assert_eq!(terms[0].match_fields.as_ref().unwrap()[0].key, "metadata.name");
    }

    #[test]
    fn node_selection_and_taints_decide_where_pods_run() {
        let mut spec =
            PodSpec { node_selector: Some([("disk".to_string(), "ssd".to_string())].into()), ..Default::default() };
        add_default_tolerations(&mut spec);
        assert_eq!(should_run(&spec, &node("a", &[("disk", "ssd")], &[])), (true, true));
        assert_eq!(should_run(&spec, &node("b", &[], &[])), (false, false));
        assert_eq!(should_run(&spec, &node("c", &[("disk", "ssd")], &[("dedicated", "NoSchedule")])), (false, true));
        assert_eq!(should_run(&spec, &node("d", &[("disk", "ssd")], &[("dedicated", "NoExecute")])), (false, false));
        // Default tolerations cover the node condition taints.
        let n = node(
            "e",
            &[("disk", "ssd")],
            &[("node.kubernetes.io/unschedulable", "NoSchedule"), ("node.kubernetes.io/not-ready", "NoExecute")],
        );
        assert_eq!(should_run(&spec, &n), (true, true));
        let mut pinned = spec.clone();
        pin_to_node(&mut pinned, "a");
        assert!(fits_node_affinity(&pinned, &node("a", &[("disk", "ssd")], &[])));
        assert!(!fits_node_affinity(&pinned, &node("z", &[("disk", "ssd")], &[])));
    }
}
