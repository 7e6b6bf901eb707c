//! A StatefulSet pod's identity and storage (upstream
//! `stateful_set_utils.go`).
//!
//! - Ordinals run from `.spec.ordinals.start` (default 0) for
//!   `.spec.replicas`; pod `<set>-<ordinal>`.
//! - Pod labels: the template's plus `statefulset.kubernetes.io/pod-name`,
//!   `apps.kubernetes.io/pod-index` (the ordinal) and
//!   `controller-revision-hash` (the revision's name); `hostname` = the pod
//!   name, `subdomain` = `.spec.serviceName`.
//! - Each `volumeClaimTemplates` entry `t` gives the claim
//!   `<t.name>-<set>-<ordinal>`, labelled with `t`'s labels and the
//!   selector's `matchLabels` (which win), and a pod volume `t.name`
//!   mounting it (replacing a template volume of that name).
//! - A revision's data is upstream's `getPatch`: `{"spec":{"template":
//!   T}}` with `"$patch":"replace"` in `T`; applying it replaces the set's
//!   template (upstream `ApplyRevision`).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, PodTemplateSpec, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::ObjectMeta;
use serde_json::{json, Value};

/// The pod label naming the pod (upstream `StatefulSetPodNameLabel`).
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// The pod label carrying the ordinal (upstream `PodIndexLabel`).
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";
/// The pod label naming its revision (upstream `ControllerRevisionHashLabelKey`).
pub const REVISION_LABEL: &str = "controller-revision-hash";

/// The first ordinal (`.spec.ordinals.start`, 0 when unset).
pub fn start_ordinal(set: &StatefulSet) -> i32 {
    set.spec.as_ref().and_then(|s| s.ordinals.as_ref()).and_then(|o| o.start).unwrap_or(0)
}

/// `.spec.replicas` (1 when unset).
pub fn replicas(set: &StatefulSet) -> i32 {
    set.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1).max(0)
}

/// The ordinal in a pod name `<parent>-<n>` (upstream `getParentNameAndOrdinal`).
pub fn parse_ordinal(set_name: &str, pod_name: &str) -> Option<i32> {
    let rest = pod_name.strip_prefix(set_name)?.strip_prefix('-')?;
    if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    rest.parse().ok()
}

/// Upstream `getPodName`.
pub fn pod_name(set_name: &str, ordinal: i32) -> String {
    format!("{set_name}-{ordinal}")
}

/// Upstream `getPersistentVolumeClaimName`.
pub fn claim_name(template: &str, set_name: &str, ordinal: i32) -> String {
    format!("{template}-{set_name}-{ordinal}")
}

/// The revision label of a pod.
pub fn pod_revision(p: &Pod) -> &str {
    p.metadata.labels.as_ref().and_then(|l| l.get(REVISION_LABEL)).map(String::as_str).unwrap_or("")
}

/// The set's claims for `ordinal` (upstream `getPersistentVolumeClaims`),
/// without owner references (see [`super::retention`]).
pub fn claims(set: &StatefulSet, ordinal: i32) -> Vec<PersistentVolumeClaim> {
    let set_name = set.metadata.name.as_deref().unwrap_or("");
    let spec = set.spec.as_ref();
    let match_labels = spec.and_then(|s| s.selector.match_labels.clone()).unwrap_or_default();
    spec.and_then(|s| s.volume_claim_templates.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|mut claim| {
            let template = claim.metadata.name.clone().unwrap_or_default();
            let mut labels = claim.metadata.labels.take().unwrap_or_default();
            labels.extend(match_labels.clone());
            claim.metadata = ObjectMeta {
                name: Some(claim_name(&template, set_name, ordinal)),
                namespace: set.metadata.namespace.clone(),
                labels: Some(labels),
                annotations: claim.metadata.annotations.take(),
                finalizers: claim.metadata.finalizers.take(),
                ..Default::default()
            };
            claim.status = None;
            claim
        })
        .collect()
}

/// Upstream `newStatefulSetPod` + `setPodRevision`: the pod for `ordinal`
/// from `template`, controlled by `owner`, labelled with `revision`.
pub fn new_pod(
    set: &StatefulSet,
    template: &PodTemplateSpec,
    owner: &OwnerReference,
    ordinal: i32,
    revision: &str,
) -> Pod {
    let set_name = set.metadata.name.as_deref().unwrap_or("");
    let name = pod_name(set_name, ordinal);
    let tm = template.metadata.clone().unwrap_or_default();
    let mut labels = tm.labels.unwrap_or_default();
    labels.insert(POD_NAME_LABEL.into(), name.clone());
    labels.insert(POD_INDEX_LABEL.into(), ordinal.to_string());
    labels.insert(REVISION_LABEL.into(), revision.into());
    let mut spec = template.spec.clone().unwrap_or_default();
    spec.hostname = Some(name.clone());
    spec.subdomain = set.spec.as_ref().and_then(|s| s.service_name.clone()).filter(|s| !s.is_empty());
    let claims: BTreeMap<String, String> = set
        .spec
        .as_ref()
        .and_then(|s| s.volume_claim_templates.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|t| t.metadata.name.clone())
        .map(|t| (t.clone(), claim_name(&t, set_name, ordinal)))
        .collect();
    if !claims.is_empty() {
        let mut volumes: Vec<Volume> = claims
            .iter()
            .map(|(t, c)| Volume {
                name: t.clone(),
                persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                    claim_name: c.clone(),
                    read_only: Some(false),
                }),
                ..Default::default()
            })
            .collect();
        volumes.extend(spec.volumes.take().unwrap_or_default().into_iter().filter(|v| !claims.contains_key(&v.name)));
        spec.volumes = Some(volumes);
    }
    Pod {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: set.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: tm.annotations,
            finalizers: tm.finalizers,
            owner_references: Some(vec![owner.clone()]),
            ..Default::default()
        },
        spec: Some(spec),
        status: None,
    }
}

/// Upstream `getPatch`: the revision data of `set`'s template.
pub fn revision_data(set: &StatefulSet) -> Value {
    let mut template = serde_json::to_value(set.spec.as_ref().map(|s| &s.template)).unwrap_or(Value::Null);
    if let Some(m) = template.as_object_mut() {
        m.insert("$patch".into(), json!("replace"));
    }
    json!({"spec": {"template": template}})
}

/// Upstream `ApplyRevision` for our patch shape: the template stored in
/// revision `data` (`None` when it holds none).
pub fn template_of(data: &Value) -> Option<PodTemplateSpec> {
    let mut t = data.pointer("/spec/template")?.clone();
    t.as_object_mut()?.remove("$patch");
    serde_json::from_value(t).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{StatefulSetOrdinals, StatefulSetSpec};
    use k8s_openapi::api::core::v1::{Container, PodSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

    fn set() -> StatefulSet {
        let template: PersistentVolumeClaim = serde_json::from_value(json!({
            "metadata": {"name": "www", "labels": {"tier": "db", "app": "other"}},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
        }))
        .unwrap();
        StatefulSet {
            metadata: ObjectMeta { name: Some("web".into()), namespace: Some("ns".into()), ..Default::default() },
            spec: Some(StatefulSetSpec {
                service_name: Some("nginx".into()),
                selector: LabelSelector {
                    match_labels: Some([("app".to_string(), "nginx".to_string())].into()),
                    ..Default::default()
                },
                template: PodTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some([("app".to_string(), "nginx".to_string())].into()),
                        ..Default::default()
                    }),
                    spec: Some(PodSpec {
                        containers: vec![Container {
                            name: "c".into(),
                            image: Some("nginx".into()),
                            ..Default::default()
                        }],
                        volumes: Some(vec![Volume { name: "www".into(), ..Default::default() }]),
                        ..Default::default()
                    }),
                },
                volume_claim_templates: Some(vec![template]),
                ordinals: Some(StatefulSetOrdinals { start: Some(3) }),
                ..Default::default()
            }),
            status: None,
        }
    }

    #[test]
    fn pod_identity_follows_stateful_set_utils() {
        let s = set();
        assert_eq!(start_ordinal(&s), 3);
        let owner = OwnerReference { name: "web".into(), ..Default::default() };
        let p = new_pod(&s, &s.spec.as_ref().unwrap().template, &owner, 4, "web-abc");
        assert_eq!(p.metadata.name.as_deref(), Some("web-4"));
        let l = p.metadata.labels.as_ref().unwrap();
        assert_eq!(l[POD_NAME_LABEL], "web-4");
        assert_eq!(l[POD_INDEX_LABEL], "4");
        assert_eq!(l[REVISION_LABEL], "web-abc");
        assert_eq!(l["app"], "nginx");
        let spec = p.spec.as_ref().unwrap();
        assert_eq!(spec.hostname.as_deref(), Some("web-4"));
        assert_eq!(spec.subdomain.as_deref(), Some("nginx"));
        let vols = spec.volumes.as_ref().unwrap();
        assert_eq!(vols.len(), 1, "the claim volume replaces the template's");
        assert_eq!(vols[0].persistent_volume_claim.as_ref().unwrap().claim_name, "www-web-4");
        let c = &claims(&s, 4)[0];
        assert_eq!(c.metadata.name.as_deref(), Some("www-web-4"));
        // The template's labels, overridden by the selector's matchLabels.
        let want = BTreeMap::from([("app".to_string(), "nginx".to_string()), ("tier".to_string(), "db".to_string())]);
        assert_eq!(c.metadata.labels.as_ref().unwrap(), &want);
    }

    #[test]
    fn ordinals_parse_only_from_the_sets_own_names() {
        assert_eq!(parse_ordinal("web", "web-12"), Some(12));
        assert_eq!(parse_ordinal("web", "web-x"), None);
        assert_eq!(parse_ordinal("web", "webs-1"), None);
        assert_eq!(parse_ordinal("web", "web-"), None);
    }

    #[test]
    fn revision_data_round_trips_the_template() {
        let s = set();
        let data = revision_data(&s);
        assert_eq!(data["spec"]["template"]["$patch"], "replace");
        assert_eq!(template_of(&data).as_ref(), Some(&s.spec.as_ref().unwrap().template));
    }
}
