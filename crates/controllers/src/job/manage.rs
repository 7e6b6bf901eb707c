//! Pods of a Job: which are active, how many to run (upstream `manageJob`),
//! the pods it creates from the template (owner reference, the
//! `batch.kubernetes.io/job-tracking` finalizer, completion indexes) and
//! which active pods go first when there are too many.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{EnvVar, EnvVarSource, ObjectFieldSelector, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};

use super::indexed::{self, COMPLETION_INDEX_ANNOTATION, COMPLETION_INDEX_ENV};

/// The finalizer that keeps a Job's pods until their result is counted.
pub const TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";

/// Whether the pod still carries the tracking finalizer.
pub fn has_tracking_finalizer(pod: &Pod) -> bool {
    pod.metadata.finalizers.iter().flatten().any(|f| f == TRACKING_FINALIZER)
}

/// A pod's phase ("" when unset).
pub fn phase(pod: &Pod) -> &str {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("")
}

/// Upstream `FilterActivePods`: neither Succeeded nor Failed nor being deleted.
pub fn is_active(pod: &Pod) -> bool {
    !matches!(phase(pod), "Succeeded" | "Failed") && pod.metadata.deletion_timestamp.is_none()
}

/// Upstream `CountTerminatingPods`' test: being deleted, not yet terminal.
pub fn is_terminating(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some() && !matches!(phase(pod), "Succeeded" | "Failed")
}

/// Whether the pod's Ready condition is True.
pub fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Whether the Job is suspended.
pub fn suspended(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.suspend) == Some(true)
}

/// Whether the Job uses Indexed completion.
pub fn is_indexed(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.completion_mode.as_deref()) == Some("Indexed")
}

/// How many pods should be active (upstream `manageJob`): without
/// completions, `parallelism` until one pod succeeded, then whatever still
/// runs; with completions, the remaining completions capped at `parallelism`.
pub fn want_active(completions: Option<i32>, parallelism: i32, succeeded: i32, active: i32) -> i32 {
    match completions {
        None if succeeded > 0 => active,
        None => parallelism,
        Some(c) => (c - succeeded).min(parallelism).max(0),
    }
}

/// A label selector in the query syntax (`a=b,c in (d,e),!f`).
pub fn selector_string(sel: &LabelSelector) -> String {
    let mut parts: Vec<String> = Vec::new();
    for (k, v) in sel.match_labels.iter().flatten() {
        parts.push(format!("{k}={v}"));
    }
    for e in sel.match_expressions.iter().flatten() {
        let values = e.values.clone().unwrap_or_default().join(",");
        parts.push(match e.operator.as_str() {
            "In" => format!("{} in ({values})", e.key),
            "NotIn" => format!("{} notin ({values})", e.key),
            "Exists" => e.key.clone(),
            _ => format!("!{}", e.key),
        });
    }
    parts.join(",")
}

/// The controller reference every pod of `job` carries.
pub fn owner_reference(job: &Job) -> OwnerReference {
    OwnerReference {
        api_version: "batch/v1".into(),
        kind: "Job".into(),
        name: job.metadata.name.clone().unwrap_or_default(),
        uid: job.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// Whether `pod` is controlled by `job` (its controller reference has the Job's UID).
pub fn is_owned_by(pod: &Pod, job: &Job) -> bool {
    let uid = job.metadata.uid.as_deref();
    pod.metadata.owner_references.iter().flatten().any(|r| r.controller == Some(true) && Some(r.uid.as_str()) == uid)
}

/// The pod to create from the Job's template: the template's labels,
/// annotations and spec, the tracking finalizer, the controller reference
/// and `generateName` `<job>-`; for an Indexed Job also the index
/// annotation and label, hostname `<job>-<index>`, generateName
/// `<job>-<index>-` and `JOB_COMPLETION_INDEX` in every container.
pub fn pod_for(job: &Job, index: Option<i32>) -> Pod {
    let name = job.metadata.name.clone().unwrap_or_default();
    let template = job.spec.as_ref().map(|s| s.template.clone()).unwrap_or_default();
    let tm = template.metadata.unwrap_or_default();
    let mut spec = template.spec.unwrap_or_default();
    let mut labels: BTreeMap<String, String> = tm.labels.unwrap_or_default();
    let mut annotations: BTreeMap<String, String> = tm.annotations.unwrap_or_default();
    let mut finalizers = tm.finalizers.unwrap_or_default();
    if !finalizers.iter().any(|f| f == TRACKING_FINALIZER) {
        finalizers.push(TRACKING_FINALIZER.into());
    }
    let mut generate_name = format!("{name}-");
    if let Some(ix) = index {
        annotations.insert(COMPLETION_INDEX_ANNOTATION.into(), ix.to_string());
        labels.insert(COMPLETION_INDEX_ANNOTATION.into(), ix.to_string());
        spec.hostname = Some(format!("{name}-{ix}"));
        generate_name = indexed::generate_name_with_index(&name, ix);
        let env = EnvVar {
            name: COMPLETION_INDEX_ENV.into(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: format!("metadata.annotations['{COMPLETION_INDEX_ANNOTATION}']"),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        for c in spec.containers.iter_mut().chain(spec.init_containers.iter_mut().flatten()) {
            let list = c.env.get_or_insert_with(Vec::new);
            if !list.iter().any(|e| e.name == COMPLETION_INDEX_ENV) {
                list.push(env.clone());
            }
        }
    }
    Pod {
        metadata: ObjectMeta {
            generate_name: Some(generate_name),
            namespace: job.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: (!annotations.is_empty()).then_some(annotations),
            finalizers: Some(finalizers),
            owner_references: Some(vec![owner_reference(job)]),
            ..Default::default()
        },
        spec: Some(spec),
        status: None,
    }
}

/// Which of the active pods to delete so at least `rm_at_least` go
/// (upstream `activePodsForRemoval`): for Indexed Jobs first pods with a
/// missing, out-of-range or repeated index; then the earliest-stage pods
/// (unscheduled < scheduled, pending < running, not ready < ready).
pub fn pods_for_removal<'a>(job: &Job, active: &[&'a Pod], rm_at_least: usize) -> Vec<&'a Pod> {
    let mut rm: Vec<&Pod> = Vec::new();
    let mut left: Vec<&Pod> = Vec::new();
    if is_indexed(job) {
        let completions = job.spec.as_ref().and_then(|s| s.completions).unwrap_or(0);
        let mut seen = BTreeSet::new();
        for p in active {
            match indexed::completion_index(p) {
                Some(ix) if ix < completions && seen.insert(ix) => left.push(p),
                _ => rm.push(p),
            }
        }
    } else {
        left = active.to_vec();
    }
    if rm.len() < rm_at_least {
        left.sort_by_key(|p| {
            let scheduled = p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some_and(|n| !n.is_empty());
            let stage = match phase(p) {
                "Pending" => 0,
                "Unknown" => 1,
                "Running" => 2,
                _ => 3,
            };
            (scheduled, stage, is_ready(p))
        });
        let more = rm_at_least - rm.len();
        rm.extend(left.into_iter().take(more));
    }
    rm
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn want_active_as_upstream() {
        // Upstream TestControllerSyncJob's counts: completions bound the active pods.
        assert_eq!(want_active(Some(5), 2, 0, 0), 2);
        assert_eq!(want_active(Some(5), 2, 4, 1), 1);
        assert_eq!(want_active(Some(5), 2, 6, 0), 0);
        assert_eq!(want_active(None, 2, 0, 0), 2);
        assert_eq!(want_active(None, 2, 1, 1), 1);
    }

    fn job(mode: &str) -> Job {
        serde_json::from_value(json!({
            "metadata": {"name": "pi", "namespace": "ns", "uid": "u1"},
            "spec": {"completions": 3, "parallelism": 2, "completionMode": mode, "template": {
                "metadata": {"labels": {"batch.kubernetes.io/job-name": "pi"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}
        }))
        .unwrap()
    }

    #[test]
    fn pods_carry_owner_finalizer_and_index() {
        let p = pod_for(&job("NonIndexed"), None);
        assert_eq!(p.metadata.generate_name.as_deref(), Some("pi-"));
        assert_eq!(p.metadata.finalizers, Some(vec![TRACKING_FINALIZER.to_string()]));
        assert_eq!(p.metadata.owner_references.as_ref().unwrap()[0].uid, "u1");
        let p = pod_for(&job("Indexed"), Some(2));
        assert_eq!(p.metadata.generate_name.as_deref(), Some("pi-2-"));
        assert_eq!(p.metadata.annotations.as_ref().unwrap()[COMPLETION_INDEX_ANNOTATION], "2");
        assert_eq!(p.metadata.labels.as_ref().unwrap()[COMPLETION_INDEX_ANNOTATION], "2");
        let spec = p.spec.unwrap();
        assert_eq!(spec.hostname.as_deref(), Some("pi-2"));
        let env = &spec.containers[0].env.as_ref().unwrap()[0];
        assert_eq!(env.name, "JOB_COMPLETION_INDEX");
        assert_eq!(
            env.value_from.as_ref().unwrap().field_ref.as_ref().unwrap().field_path,
            "metadata.annotations['batch.kubernetes.io/job-completion-index']"
        );
    }

    #[test]
    fn duplicate_indexes_are_removed_first() {
        let pod = |name: &str, ix: &str, phase: &str| -> Pod {
            serde_json::from_value(json!({"metadata": {"name": name,
                "annotations": {COMPLETION_INDEX_ANNOTATION: ix}}, "status": {"phase": phase}}))
            .unwrap()
        };
        let (a, b, c, d) =
            (pod("a", "0", "Running"), pod("b", "0", "Pending"), pod("c", "7", "Running"), pod("d", "1", "Pending"));
        let active = vec![&a, &b, &c, &d];
        let rm: Vec<_> =
            pods_for_removal(&job("Indexed"), &active, 0).iter().map(|p| p.metadata.name.clone().unwrap()).collect();
        assert_eq!(rm, ["b", "c"]);
        let rm: Vec<_> =
            pods_for_removal(&job("NonIndexed"), &active, 1).iter().map(|p| p.metadata.name.clone().unwrap()).collect();
        assert_eq!(rm, ["b"]);
    }

    #[test]
    fn selectors_render_for_list_queries() {
        let sel: LabelSelector = serde_json::from_value(json!({"matchLabels": {"a": "b"},
            "matchExpressions": [{"key": "c", "operator": "In", "values": ["d", "e"]}, {"key": "f", "operator": "DoesNotExist"}]}))
        .unwrap();
        assert_eq!(selector_string(&sel), "a=b,c in (d,e),!f");
    }
}
