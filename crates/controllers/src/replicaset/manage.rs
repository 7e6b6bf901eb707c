//! Creating and deleting pods to reach `spec.replicas` (upstream
//! `manageReplicas`, `slowStartBatch` and `GetPodFromTemplate`).
//!
//! - At most [`BURST_REPLICAS`] (500) creations or deletions per sync.
//! - Creations go in slow-start batches of 1, 2, 4, … pods: a batch runs
//!   concurrently, and a batch with a failure stops the rest (a quota or
//!   admission error then costs one request, not hundreds). Expectations
//!   are set for every planned creation; those never attempted or failed
//!   are observed at once so the next sync is not blocked.
//! - Deletions pick the lowest-ranked pods ([`super::ranking`]) and run
//!   concurrently; a pod already gone counts as deleted.
//! - Events on the owner, as upstream's `RealPodControl`:
//!   `SuccessfulCreate` "Created pod: NAME", `FailedCreate` "Error
//!   creating: ERR", `SuccessfulDelete` "Deleted pod: NAME",
//!   `FailedDelete` "Error deleting: ERR".

use std::collections::BTreeMap;
use std::future::Future;

use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};

use super::{ranking, State};
use crate::events::{NORMAL, WARNING};
use crate::runtime::is_namespace_gone;

/// Upstream `BurstReplicas`: the most pods one sync creates or deletes.
pub const BURST_REPLICAS: usize = 500;
/// Upstream `SlowStartInitialBatchSize`.
pub const SLOW_START_INITIAL_BATCH: usize = 1;

/// The batch sizes for `count` creations: 1, 2, 4, … capped by what is left.
pub fn batch_sizes(count: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let (mut remaining, mut size) = (count, count.min(SLOW_START_INITIAL_BATCH));
    while size > 0 {
        out.push(size);
        remaining -= size;
        size = (2 * size).min(remaining);
    }
    out
}

/// Runs `count` calls of `f` in slow-start batches ([`batch_sizes`]);
/// returns how many succeeded and the first error, which ends the run
/// after its batch.
pub async fn slow_start_batch<F, Fut, E>(count: usize, f: F) -> (usize, Option<E>)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<(), E>>,
{
    let mut successes = 0;
    for size in batch_sizes(count) {
        let results = futures::future::join_all((0..size).map(|_| f())).await;
        let mut first_err = None;
        for r in results {
            match r {
                Ok(()) => successes += 1,
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        if first_err.is_some() {
            return (successes, first_err);
        }
    }
    (successes, None)
}

/// Upstream `getPodsPrefix`: pods are named `<owner>-<random>`.
pub fn pod_name_prefix(owner: &str) -> String {
    format!("{owner}-")
}

/// A pod from `template` for the owner (upstream `GetPodFromTemplate`):
/// the template's labels, annotations, finalizers and spec, `generateName`
/// `<owner>-`, the owner's namespace and `owner_ref`. A template without
/// labels is refused with upstream's error.
pub fn pod_from_template(
    template: Option<&PodTemplateSpec>,
    namespace: &str,
    owner_name: &str,
    owner_ref: &OwnerReference,
) -> Result<Pod, String> {
    let meta = template.and_then(|t| t.metadata.clone()).unwrap_or_default();
    let labels: BTreeMap<String, String> = meta.labels.unwrap_or_default();
    if labels.is_empty() {
        return Err("unable to create pods, no labels".into());
    }
    Ok(Pod {
        metadata: ObjectMeta {
            generate_name: Some(pod_name_prefix(owner_name)),
            namespace: Some(namespace.into()),
            labels: Some(labels),
            annotations: meta.annotations,
            finalizers: meta.finalizers,
            owner_references: Some(vec![owner_ref.clone()]),
            ..Default::default()
        },
        spec: template.and_then(|t| t.spec.clone()),
        status: None,
    })
}

/// The text of an API error as upstream's `err.Error()` (the Status message).
pub fn error_text(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => s.message.clone(),
        other => other.to_string(),
    }
}

/// Creates `count` pods from the owner's template; returns the error that
/// stopped it, in upstream's words. `exp_key` is the expectations key.
pub async fn create_pods(st: &State, owner: &Owned, count: usize, exp_key: &str) -> Option<String> {
    let count = count.min(BURST_REPLICAS);
    st.expectations.expect_creations(exp_key, count);
    let pods = Api::<Pod>::namespaced(st.ctx.client.clone(), &owner.namespace);
    let (ok, err) = slow_start_batch(count, || async {
        let pod = pod_from_template(owner.template.as_ref(), &owner.namespace, &owner.name, &owner.owner_ref)?;
        match pods.create(&PostParams::default(), &pod).await {
            Ok(created) => {
                let name = created.metadata.name.unwrap_or_default();
                tracing::debug!(component = st.ctx.name, owner = %owner.key(), pod = %name, "created pod");
                st.recorder.event_on(
                    owner.reference.clone(),
                    NORMAL,
                    "SuccessfulCreate",
                    format!("Created pod: {name}"),
                );
                Ok(())
            }
            // The namespace is going away: nothing to retry, nothing to report.
            Err(e) if is_namespace_gone(&e) && matches!(&e, kube::Error::Api(s) if s.code == 403) => {
                st.expectations.creation_observed(exp_key);
                Ok(())
            }
            Err(e) => {
                let text = error_text(&e);
                st.recorder.event_on(
                    owner.reference.clone(),
                    WARNING,
                    "FailedCreate",
                    format!("Error creating: {text}"),
                );
                Err(text)
            }
        }
    })
    .await;
    if err.is_some() {
        for _ in ok..count {
            st.expectations.creation_observed(exp_key);
        }
    }
    if let Some(e) = &err {
        tracing::warn!(component = st.ctx.name, owner = %owner.key(), error = %e, "creating pods failed");
    }
    err
}

/// Deletes `count` of `pods` (ranked against `related`); returns the
/// first error, in upstream's words.
pub async fn delete_pods(
    st: &State,
    owner: &Owned,
    pods: &[&Pod],
    related: &[&Pod],
    count: usize,
    exp_key: &str,
) -> Option<String> {
    let count = count.min(BURST_REPLICAS);
    let victims = ranking::pods_to_delete(pods, related, count, jiff::Timestamp::now());
    let keys: Vec<String> = victims.iter().map(|p| pod_key(p)).collect();
    st.expectations.expect_deletions(exp_key, &keys);
    let api = Api::<Pod>::namespaced(st.ctx.client.clone(), &owner.namespace);
    let results = futures::future::join_all(victims.iter().map(|p| {
        let api = api.clone();
        let name = p.metadata.name.clone().unwrap_or_default();
        let key = pod_key(p);
        async move {
            match api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => {
                    st.recorder.event_on(
                        owner.reference.clone(),
                        NORMAL,
                        "SuccessfulDelete",
                        format!("Deleted pod: {name}"),
                    );
                    None
                }
                Err(e) => {
                    // The informer will not see this deletion.
                    st.expectations.deletion_observed(exp_key, &key);
                    if crate::runtime::is_not_found(&e) {
                        return None;
                    }
                    let text = error_text(&e);
                    st.recorder.event_on(
                        owner.reference.clone(),
                        WARNING,
                        "FailedDelete",
                        format!("Error deleting: {text}"),
                    );
                    Some(format!("unable to delete pods: {text}"))
                }
            }
        }
    }))
    .await;
    results.into_iter().flatten().next()
}

/// `namespace/name` of a pod (upstream `PodKey`).
pub fn pod_key(p: &Pod) -> String {
    format!("{}/{}", p.metadata.namespace.as_deref().unwrap_or(""), p.metadata.name.as_deref().unwrap_or(""))
}

/// What creating and deleting needs to know of the owner.
pub struct Owned {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The pod template.
    pub template: Option<PodTemplateSpec>,
    /// The controller reference its pods carry.
    pub owner_ref: OwnerReference,
    /// The reference its events are about.
    pub reference: k8s_openapi::api::core::v1::ObjectReference,
}

impl Owned {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn slow_start_batches_double_from_one() {
        assert_eq!(batch_sizes(0), Vec::<usize>::new());
        assert_eq!(batch_sizes(1), [1]);
        assert_eq!(batch_sizes(3), [1, 2]);
        assert_eq!(batch_sizes(10), [1, 2, 4, 3]);
        assert_eq!(batch_sizes(500).iter().sum::<usize>(), 500);
    }

    #[tokio::test]
    async fn a_failing_batch_stops_the_rest() {
        // Upstream TestSlowStartBatch: failing from the 3rd call on, batches
        // 1 and 2 run (3 calls), 2 succeed, the 4-batch never starts.
        let calls = AtomicUsize::new(0);
        let (ok, err) = slow_start_batch(10, || {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            async move {
                if n >= 2 {
                    Err("boom")
                } else {
                    Ok(())
                }
            }
        })
        .await;
        assert_eq!((ok, err, calls.load(Ordering::SeqCst)), (2, Some("boom"), 3));
        let (ok, err) = slow_start_batch(10, || async { Ok::<(), ()>(()) }).await;
        assert_eq!((ok, err), (10, None));
    }

    #[test]
    fn pods_come_from_the_template_with_the_controller_reference() {
        let template = PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some([("app".to_string(), "web".to_string())].into()),
                annotations: Some([("a".to_string(), "b".to_string())].into()),
                name: Some("ignored".into()),
                ..Default::default()
            }),
            spec: Some(Default::default()),
        };
        let owner = OwnerReference {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: "web".into(),
            uid: "u1".into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        };
        let pod = pod_from_template(Some(&template), "ns", "web", &owner).unwrap();
        assert_eq!(pod.metadata.generate_name.as_deref(), Some("web-"));
        assert_eq!(pod.metadata.name, None);
        assert_eq!(pod.metadata.namespace.as_deref(), Some("ns"));
        assert_eq!(pod.metadata.owner_references, Some(vec![owner.clone()]));
        assert_eq!(pod.metadata.annotations, template.metadata.as_ref().unwrap().annotations);
        let unlabeled = PodTemplateSpec { metadata: None, spec: None };
        assert_eq!(
            pod_from_template(Some(&unlabeled), "ns", "web", &owner).unwrap_err(),
            "unable to create pods, no labels"
        );
    }
}
