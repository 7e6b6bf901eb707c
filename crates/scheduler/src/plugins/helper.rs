//! Helpers several plugins share (upstream `component-helpers` and
//! `plugins/helper`): node selector matching, toleration matching, and the
//! default score normalization.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod, Taint, Toleration,
};

use crate::framework::{NodeScore, Status, MAX_NODE_SCORE};

/// Whether `toleration` tolerates `taint` (upstream `Toleration.ToleratesTaint`):
/// an empty effect matches every effect, an empty key with `Exists`
/// matches every key, `Equal` (or empty) compares values.
pub fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    if toleration.effect.as_deref().is_some_and(|e| !e.is_empty() && e != taint.effect) {
        return false;
    }
    if toleration.key.as_deref().is_some_and(|k| !k.is_empty() && k != taint.key) {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or("") {
        "" | "Equal" => toleration.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or(""),
        "Exists" => true,
        _ => false,
    }
}

/// Whether any of `tolerations` tolerates `taint`.
pub fn tolerations_tolerate(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| tolerates(t, taint))
}

/// The first taint whose effect passes `effect_filter` that no toleration
/// tolerates (upstream `FindMatchingUntoleratedTaint`).
pub fn find_untolerated_taint<'a>(
    taints: &'a [Taint],
    tolerations: &[Toleration],
    effect_filter: impl Fn(&Taint) -> bool,
) -> Option<&'a Taint> {
    taints.iter().filter(|t| effect_filter(t)).find(|t| !tolerations_tolerate(tolerations, t))
}

/// A pod's tolerations (empty when none).
pub fn pod_tolerations(pod: &Pod) -> &[Toleration] {
    pod.spec.as_ref().and_then(|s| s.tolerations.as_deref()).unwrap_or(&[])
}

/// A node's taints (empty when none).
pub fn node_taints(node: &Node) -> &[Taint] {
    node.spec.as_ref().and_then(|s| s.taints.as_deref()).unwrap_or(&[])
}

/// A node's labels (empty when none).
pub fn node_labels(node: &Node) -> &BTreeMap<String, String> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    node.metadata.labels.as_ref().unwrap_or(&EMPTY)
}

fn requirement_matches(r: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = r.values.as_deref().unwrap_or(&[]);
    match r.operator.as_str() {
        "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" => value.is_none_or(|v| !values.iter().any(|x| x == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let (Some(v), [bound]) = (value, values) else { return false };
            let (Ok(v), Ok(bound)) = (v.parse::<i64>(), bound.parse::<i64>()) else { return false };
            if r.operator == "Gt" {
                v > bound
            } else {
                v < bound
            }
        }
        _ => false,
    }
}

/// Whether one node selector term matches `node` (upstream
/// `nodeSelectorTerm.match`): every matchExpression against the labels and
/// every matchField (only `metadata.name`, In/NotIn) hold; a term with
/// neither matches nothing.
pub fn term_matches(term: &NodeSelectorTerm, node: &Node) -> bool {
    let exprs = term.match_expressions.as_deref().unwrap_or(&[]);
    let fields = term.match_fields.as_deref().unwrap_or(&[]);
    if exprs.is_empty() && fields.is_empty() {
        return false;
    }
    let labels = node_labels(node);
    if !exprs.iter().all(|r| requirement_matches(r, labels.get(&r.key).map(String::as_str))) {
        return false;
    }
    let name = node.metadata.name.as_deref();
    fields.iter().all(|r| {
        if r.key != "metadata.name" || !matches!(r.operator.as_str(), "In" | "NotIn") {
            return false;
        }
        requirement_matches(r, name)
    })
}

/// Whether a node selector (terms ORed) matches `node`.
pub fn node_selector_matches(selector: &NodeSelector, node: &Node) -> bool {
    selector.node_selector_terms.iter().any(|t| term_matches(t, node))
}

/// Whether `pod`'s `spec.nodeSelector` and required node affinity both
/// match `node` (upstream `RequiredNodeAffinity.Match`).
pub fn pod_matches_node_selector_and_affinity(pod: &Pod, node: &Node) -> bool {
    let Some(spec) = pod.spec.as_ref() else { return true };
    if let Some(sel) = spec.node_selector.as_ref() {
        let labels = node_labels(node);
        if !sel.iter().all(|(k, v)| labels.get(k) == Some(v)) {
            return false;
        }
    }
    match spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| na.required_during_scheduling_ignored_during_execution.as_ref())
    {
        Some(req) => node_selector_matches(req, node),
        None => true,
    }
}

/// Upstream `helper.DefaultNormalizeScore`: scales scores so the highest
/// becomes `max_priority` (all `max_priority` when every score is 0 and
/// `reverse`), and with `reverse` maps each `s` to `max_priority - s`.
pub fn default_normalize_score(max_priority: i64, reverse: bool, scores: &mut [NodeScore]) -> Status {
    let max = scores.iter().map(|s| s.score).max().unwrap_or(0);
    if max == 0 {
        if reverse {
            for s in scores.iter_mut() {
                s.score = max_priority;
            }
        }
        return Status::success();
    }
    for s in scores.iter_mut() {
        s.score = max_priority * s.score / max;
        if reverse {
            s.score = max_priority - s.score;
        }
    }
    Status::success()
}

/// [`default_normalize_score`] with [`MAX_NODE_SCORE`].
pub fn normalize(reverse: bool, scores: &mut [NodeScore]) -> Status {
    default_normalize_score(MAX_NODE_SCORE, reverse, scores)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(labels: serde_json::Value) -> Node {
        serde_json::from_value(json!({"metadata": {"name": "n1", "labels": labels}})).unwrap()
    }
    fn term(v: serde_json::Value) -> NodeSelectorTerm {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn selector_operators_follow_upstream() {
        let n = node(json!({"zone": "a", "cpus": "8"}));
        let cases = [
            (json!({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}), true),
            (json!({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}), false),
            (json!({"matchExpressions": [{"key": "gpu", "operator": "NotIn", "values": ["x"]}]}), true),
            (json!({"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}), true),
            (json!({"matchExpressions": [{"key": "cpus", "operator": "Gt", "values": ["4"]}]}), true),
            (json!({"matchExpressions": [{"key": "cpus", "operator": "Lt", "values": ["4"]}]}), false),
            (json!({"matchExpressions": [{"key": "zone", "operator": "Gt", "values": ["4"]}]}), false),
            (json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}), true),
            (json!({"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}), false),
            (json!({}), false),
        ];
        for (t, want) in cases {
            assert_eq!(term_matches(&term(t.clone()), &n), want, "{t}");
        }
    }

    #[test]
    fn tolerations_match_as_upstream() {
        let taint: Taint = serde_json::from_value(json!({"key": "k", "value": "v", "effect": "NoSchedule"})).unwrap();
        let tol = |v: serde_json::Value| -> Toleration { serde_json::from_value(v).unwrap() };
        assert!(tolerates(&tol(json!({"key": "k", "value": "v"})), &taint));
        assert!(tolerates(&tol(json!({"operator": "Exists"})), &taint));
        assert!(tolerates(&tol(json!({"key": "k", "operator": "Exists", "effect": "NoSchedule"})), &taint));
        assert!(!tolerates(&tol(json!({"key": "k", "value": "v", "effect": "NoExecute"})), &taint));
        assert!(!tolerates(&tol(json!({"key": "k", "value": "w"})), &taint));
    }

    #[test]
    fn default_normalization_scales_and_reverses() {
        let mk = |v: &[i64]| v.iter().map(|&s| NodeScore { name: String::new(), score: s }).collect::<Vec<_>>();
        let mut s = mk(&[0, 1, 4]);
        normalize(false, &mut s);
        assert_eq!(s.iter().map(|s| s.score).collect::<Vec<_>>(), vec![0, 25, 100]);
        let mut s = mk(&[0, 1, 4]);
        normalize(true, &mut s);
        assert_eq!(s.iter().map(|s| s.score).collect::<Vec<_>>(), vec![100, 75, 0]);
        let mut s = mk(&[0, 0]);
        normalize(true, &mut s);
        assert_eq!(s.iter().map(|s| s.score).collect::<Vec<_>>(), vec![100, 100]);
    }
}
