//! One sync of an unfinished Job (upstream `syncJob`, `manageJob`,
//! `trackJobStatusAndRemoveFinalizers`): count the finished pods, decide
//! whether the Job failed or succeeded, create or delete pods, then record
//! the results in the order that counts every pod exactly once — new
//! results into `status.uncountedTerminatedPods` first, then the pods'
//! tracking finalizers removed, then the counters moved.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::time::Duration;

use k8s_openapi::api::batch::v1::{Job, JobCondition, JobStatus, UncountedTerminatedPods};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};

use super::failure;
use super::indexed::{self, Intervals};
use super::manage::{self, has_tracking_finalizer};
use super::success;
use super::JobController;
use crate::events::{NORMAL, WARNING};
use crate::runtime::{is_namespace_gone, is_not_found, Error};

/// The condition of `type_`, if the Job has one.
pub fn find_condition<'a>(job: &'a Job, type_: &str) -> Option<&'a JobCondition> {
    job.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == type_)
}

fn condition(type_: &str, status: &str, reason: &str, message: &str, now: jiff::Timestamp) -> JobCondition {
    JobCondition {
        type_: type_.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_probe_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
    }
}

/// Upstream `ensureJobConditionStatus`: sets the condition (a False one is
/// only ever an update); returns whether anything changed.
fn ensure_condition(status: &mut JobStatus, c: JobCondition) -> bool {
    let list = status.conditions.get_or_insert_with(Vec::new);
    if let Some(old) = list.iter_mut().find(|o| o.type_ == c.type_) {
        if old.status != c.status || old.reason != c.reason || old.message != c.message {
            *old = c;
            return true;
        }
        return false;
    }
    if c.status != "False" {
        list.push(c);
        return true;
    }
    false
}

/// Syncs the Job; returns when it wants to be looked at again (back-off
/// or deadline), if ever.
pub async fn sync(jc: &JobController, mut job: Job, pods: Vec<Pod>) -> Result<Option<Duration>, Error> {
    let now = jc.clock.now();
    let key = crate::runtime::key_of(&job);
    let spec = job.spec.clone().unwrap_or_default();
    let indexed = manage::is_indexed(&job);
    let per_index = indexed::has_backoff_limit_per_index(&job);
    let completions = spec.completions;
    let status = job.status.get_or_insert_with(Default::default);
    let uncounted = status.uncounted_terminated_pods.get_or_insert_with(Default::default).clone();
    let unc_succeeded: HashSet<&str> = uncounted.succeeded.iter().flatten().map(String::as_str).collect();
    let unc_failed: HashSet<&str> = uncounted.failed.iter().flatten().map(String::as_str).collect();
    let uid = |p: &Pod| p.metadata.uid.clone().unwrap_or_default();
    let valid_index =
        |p: &Pod| !indexed || indexed::completion_index(p).is_some_and(|ix| ix < completions.unwrap_or(0));

    let active_pods: Vec<&Pod> = pods.iter().filter(|p| manage::is_active(p)).collect();
    let mut terminating = pods.iter().filter(|p| manage::is_terminating(p)).count() as i32;
    let mut ready = active_pods.iter().filter(|p| manage::is_ready(p)).count() as i32;
    let mut active = active_pods.len() as i32;

    // Results not yet in the status (upstream getNewFinishedPods).
    let fresh =
        |p: &&Pod, set: &HashSet<&str>| has_tracking_finalizer(p) && !set.contains(uid(p).as_str()) && valid_index(p);
    let new_succeeded: Vec<&Pod> =
        pods.iter().filter(|p| fresh(p, &unc_succeeded) && manage::phase(p) == "Succeeded").collect();
    let new_failed: Vec<&Pod> =
        pods.iter().filter(|p| fresh(p, &unc_failed) && failure::is_pod_failed(p, &job)).collect();
    let policy = spec.pod_failure_policy.as_ref();
    let counted_new_failed = new_failed.iter().filter(|p| failure::match_policy(policy, p).count_failed).count();
    let status = job.status.as_mut().expect("set above");
    let mut succeeded = status.succeeded.unwrap_or(0) + new_succeeded.len() as i32 + unc_succeeded.len() as i32;
    let failed = status.failed.unwrap_or(0) + counted_new_failed as i32 + unc_failed.len() as i32;
    if status.start_time.is_none() && !manage::suspended(&job) {
        job.status.as_mut().expect("set").start_time = Some(Time(now));
    }
    let finish = |p: &&Pod| failure::finish_time(p);
    let old_record = jc.backoffs.lock().unwrap_or_else(|e| e.into_inner()).get(&key).cloned().unwrap_or_default();
    let record = old_record.next(
        &new_succeeded.iter().map(finish).collect::<Vec<_>>(),
        &new_failed.iter().map(finish).collect::<Vec<_>>(),
    );

    let mut requeue: Option<Duration> = None;
    let mut finished: Option<JobCondition> =
        find_condition(&job, "SuccessCriteriaMet").filter(|c| c.status == "True").cloned();
    if finished.is_none() {
        if let Some(ft) = find_condition(&job, "FailureTarget").filter(|c| c.status == "True") {
            let (r, m) = (ft.reason.clone().unwrap_or_default(), ft.message.clone().unwrap_or_default());
            finished = Some(condition("Failed", "True", &r, &m, now));
        } else if let Some(msg) = pods
            .iter()
            .filter(|p| failure::is_pod_failed(p, &job))
            .find_map(|p| failure::match_policy(policy, p).fail_job_message)
        {
            finished = Some(condition("FailureTarget", "True", failure::REASON_POD_FAILURE_POLICY, &msg, now));
        }
    }
    let start = job.status.as_ref().and_then(|s| s.start_time.as_ref()).map(|t| t.0);
    if finished.is_none() {
        // With backoffLimitPerIndex the API server defaults backoffLimit to
        // MaxInt32: only the per-index limits apply unless both are set.
        let backoff_limit = spec.backoff_limit.unwrap_or(if per_index { i32::MAX } else { 6 });
        if failed > backoff_limit || past_backoff_limit_on_failure(&job, &pods, backoff_limit) {
            finished = Some(condition(
                "FailureTarget",
                "True",
                failure::REASON_BACKOFF_LIMIT,
                failure::MSG_BACKOFF_LIMIT,
                now,
            ));
        } else if let (Some(ads), Some(start), false) = (spec.active_deadline_seconds, start, manage::suspended(&job)) {
            let allowed = Duration::from_secs(ads.max(0) as u64);
            let elapsed = Duration::try_from(now.duration_since(start)).unwrap_or(Duration::ZERO);
            if elapsed >= allowed {
                finished =
                    Some(condition("FailureTarget", "True", failure::REASON_DEADLINE, failure::MSG_DEADLINE, now));
            } else {
                requeue = Some(allowed - elapsed);
            }
        }
    }
    let prev_succeeded_indexes = Intervals::parse(
        job.status.as_ref().and_then(|s| s.completed_indexes.as_deref()).unwrap_or(""),
        completions.unwrap_or(0),
    );
    let mut succeeded_indexes = prev_succeeded_indexes.clone();
    let mut failed_indexes: Option<Intervals> = None;
    let mut delayed: BTreeMap<i32, &Pod> = BTreeMap::new();
    if indexed {
        let more = pods
            .iter()
            .filter(|p| manage::phase(p) == "Succeeded" && has_tracking_finalizer(p))
            .filter_map(indexed::completion_index)
            .filter(|ix| *ix < completions.unwrap_or(0));
        succeeded_indexes = prev_succeeded_indexes.with(more);
        succeeded = succeeded_indexes.total();
        if per_index {
            let failed_ix = indexed::failed_indexes(&job, &pods);
            if finished.is_none() {
                let max = spec.max_failed_indexes;
                let c = completions.unwrap_or(0);
                if let Some((reason, msg)) = indexed::failed_indexes_outcome(max, &failed_ix, &succeeded_indexes, c) {
                    finished = Some(condition("FailureTarget", "True", reason, msg, now));
                }
            }
            delayed = indexed::pods_with_delayed_deletion(&job, &pods, &succeeded_indexes, &failed_ix);
            failed_indexes = Some(failed_ix);
        }
        if finished.is_none() {
            if let Some(msg) = success::match_success_policy(
                spec.success_policy.as_ref(),
                completions.unwrap_or(0),
                &succeeded_indexes,
            ) {
                finished = Some(condition("SuccessCriteriaMet", "True", success::REASON_SUCCESS_POLICY, &msg, now));
            }
        }
    }

    let mut suspend_changed = false;
    if finished.is_some() {
        let (deleted, deleted_ready) = delete_pods(jc, &job, &active_pods, false).await;
        if deleted != active {
            finished = None;
        }
        active -= deleted;
        terminating += deleted;
        ready -= deleted_ready;
    } else {
        let mut managed = false;
        if job.metadata.deletion_timestamp.is_none() {
            managed = true;
            let parallelism = spec.parallelism.unwrap_or(1);
            if manage::suspended(&job) {
                let (deleted, deleted_ready) = delete_pods(jc, &job, &active_pods, true).await;
                active -= deleted;
                terminating += deleted;
                ready -= deleted_ready;
            } else {
                let want = manage::want_active(completions, parallelism, succeeded, active);
                let rm = manage::pods_for_removal(&job, &active_pods, (active - want).max(0) as usize);
                if !rm.is_empty() {
                    let (deleted, deleted_ready) = delete_pods(jc, &job, &rm, true).await;
                    active -= deleted;
                    terminating += deleted;
                    ready -= deleted_ready;
                } else {
                    let waiting = if failure::only_replace_failed_pods(&job) { terminating } else { 0 };
                    let diff = want - waiting - active;
                    if diff > 0 {
                        // backoffLimitPerIndex: each index waits on its own
                        // failures instead of the Job-wide record.
                        let remaining = if per_index {
                            Duration::ZERO
                        } else {
                            record.remaining(now, failure::POD_FAILURE_BACKOFF, failure::MAX_POD_FAILURE_BACKOFF)
                        };
                        if remaining > Duration::ZERO {
                            requeue = Some(requeue.map_or(remaining, |r| r.min(remaining)));
                        } else {
                            let new_pods: Vec<Pod> = if indexed {
                                let mut held: BTreeSet<i32> =
                                    active_pods.iter().filter_map(|p| indexed::completion_index(p)).collect();
                                if failure::only_replace_failed_pods(&job) {
                                    held.extend(
                                        pods.iter()
                                            .filter(|p| manage::is_terminating(p))
                                            .filter_map(indexed::completion_index),
                                    );
                                }
                                let mut ixs = indexed::first_pending_indexes(
                                    diff as usize,
                                    completions.unwrap_or(0),
                                    &succeeded_indexes,
                                    failed_indexes.as_ref(),
                                    &held,
                                );
                                if per_index {
                                    let (ready_now, wait) = indexes_ready_to_create(&ixs, &delayed, now);
                                    if ready_now.is_empty() && wait > Duration::ZERO {
                                        requeue = Some(requeue.map_or(wait, |r| r.min(wait)));
                                    }
                                    ixs = ready_now;
                                }
                                ixs.into_iter()
                                    .map(|ix| {
                                        let mut pod = manage::pod_for(&job, Some(ix));
                                        if per_index {
                                            let replaced = delayed.get(&ix).copied();
                                            let counts = indexed::new_index_failure_counts(&job, replaced);
                                            indexed::set_index_failure_counts(&mut pod, counts);
                                        }
                                        pod
                                    })
                                    .collect()
                            } else {
                                (0..diff).map(|_| manage::pod_for(&job, None)).collect()
                            };
                            active += create_pods(jc, &job, &new_pods).await?;
                        }
                    }
                }
            }
        }
        let complete = match completions {
            None => succeeded > 0 && active == 0,
            Some(c) => succeeded >= c && active == 0,
        };
        if complete {
            finished = Some(condition(
                "SuccessCriteriaMet",
                "True",
                success::REASON_COMPLETIONS_REACHED,
                success::MSG_COMPLETIONS_REACHED,
                now,
            ));
        } else if managed {
            let is_suspended = manage::suspended(&job);
            let status = job.status.as_mut().expect("set");
            let mut event = None;
            if is_suspended {
                if ensure_condition(status, condition("Suspended", "True", "JobSuspended", "Job suspended", now)) {
                    suspend_changed = true;
                    event = Some(("Suspended", "Job suspended"));
                }
            } else if ensure_condition(status, condition("Suspended", "False", "JobResumed", "Job resumed", now)) {
                suspend_changed = true;
                event = Some(("Resumed", "Job resumed"));
                // activeDeadlineSeconds counts continuous activity: restart it.
                status.start_time = Some(Time(now));
            }
            if let Some((reason, msg)) = event {
                jc.ctx.recorder.event(&job, NORMAL, reason, msg);
            }
        }
    }

    let status = job.status.as_mut().expect("set");
    let needs_update = suspend_changed
        || Some(active) != status.active.or(Some(0))
        || Some(ready) != status.ready
        || Some(terminating) != status.terminating;
    status.active = Some(active);
    status.ready = Some(ready);
    status.terminating = Some(terminating);
    let track = Tracking {
        pods: &pods,
        finished,
        prev_succeeded_indexes,
        succeeded_indexes,
        unc_succeeded: unc_succeeded.iter().map(|s| s.to_string()).collect(),
        unc_failed: unc_failed.iter().map(|s| s.to_string()).collect(),
        terminating,
        failed_indexes,
        delayed: delayed.values().map(|p| uid(p)).collect(),
    };
    track_and_remove_finalizers(jc, job, track, needs_update).await?;
    jc.backoffs.lock().unwrap_or_else(|e| e.into_inner()).insert(key, record);
    Ok(requeue)
}

/// Upstream `pastBackoffLimitOnFailure`: with restartPolicy OnFailure, the
/// container restarts of running or pending pods count as failures.
fn past_backoff_limit_on_failure(job: &Job, pods: &[Pod], limit: i32) -> bool {
    let policy = job.spec.as_ref().and_then(|s| s.template.spec.as_ref()).and_then(|s| s.restart_policy.as_deref());
    if policy != Some("OnFailure") {
        return false;
    }
    let restarts: i32 = pods
        .iter()
        .filter(|p| matches!(manage::phase(p), "Running" | "Pending"))
        .filter_map(|p| p.status.as_ref())
        .flat_map(|s| s.init_container_statuses.iter().flatten().chain(s.container_statuses.iter().flatten()))
        .map(|c| c.restart_count)
        .sum();
    if limit == 0 {
        restarts > 0
    } else {
        restarts >= limit
    }
}

struct Tracking<'a> {
    pods: &'a [Pod],
    finished: Option<JobCondition>,
    prev_succeeded_indexes: Intervals,
    succeeded_indexes: Intervals,
    unc_succeeded: HashSet<String>,
    unc_failed: HashSet<String>,
    terminating: i32,
    /// `status.failedIndexes` to write (backoffLimitPerIndex only).
    failed_indexes: Option<Intervals>,
    /// UIDs of failed pods whose finalizer waits for their replacement.
    delayed: HashSet<String>,
}

/// Moves the UIDs of pods whose finalizer is gone out of
/// `uncountedTerminatedPods` into the counters; returns whether anything moved.
fn clean_uncounted(status: &mut JobStatus, with_finalizer: &HashSet<String>) -> bool {
    let unc = status.uncounted_terminated_pods.get_or_insert_with(UncountedTerminatedPods::default);
    let mut changed = false;
    for (list, counter) in [(&mut unc.succeeded, &mut status.succeeded), (&mut unc.failed, &mut status.failed)] {
        let before = list.as_ref().map_or(0, Vec::len);
        let kept: Vec<String> = list.iter().flatten().filter(|u| with_finalizer.contains(*u)).cloned().collect();
        if kept.len() != before {
            changed = true;
            *counter = Some(counter.unwrap_or(0) + (before - kept.len()) as i32);
            // Go's nil slice: an empty list is left out, as upstream.
            *list = (!kept.is_empty()).then_some(kept);
        }
    }
    changed
}

/// Upstream `trackJobStatusAndRemoveFinalizers` and `enactJobFinished`.
async fn track_and_remove_finalizers(
    jc: &JobController,
    mut job: Job,
    t: Tracking<'_>,
    mut needs_flush: bool,
) -> Result<(), Error> {
    let now = jc.clock.now();
    let indexed = manage::is_indexed(&job);
    let completions = job.spec.as_ref().and_then(|s| s.completions).unwrap_or(0);
    let policy = job.spec.as_ref().and_then(|s| s.pod_failure_policy.clone());
    let uid = |p: &Pod| p.metadata.uid.clone().unwrap_or_default();
    let mut pods: Vec<&Pod> = t.pods.iter().collect();
    if indexed {
        pods.sort_by_key(|p| indexed::completion_index(p).unwrap_or(i32::MAX));
    }
    let mut with_finalizer: HashSet<String> =
        pods.iter().filter(|p| has_tracking_finalizer(p)).map(|p| uid(p)).collect();
    let mut finished = t.finished;
    let snapshot = job.clone();
    let status = job.status.as_mut().expect("set by sync");
    needs_flush |= clean_uncounted(status, &with_finalizer);
    let mut to_release: Vec<&Pod> = Vec::new();
    let mut new_indexes = Vec::new();
    let is_scm = |c: &Option<JobCondition>| c.as_ref().is_some_and(|c| c.type_ == "SuccessCriteriaMet");
    let unc = status.uncounted_terminated_pods.get_or_insert_with(Default::default);
    for pod in &pods {
        if !has_tracking_finalizer(pod) {
            continue;
        }
        let considered_failed = failure::is_pod_failed(pod, &snapshot);
        let u = uid(pod);
        // Upstream canRemoveFinalizer.
        let can_release = snapshot.metadata.deletion_timestamp.is_some()
            || finished.is_some()
            || manage::phase(pod) == "Succeeded"
            || (considered_failed && !t.delayed.contains(&u));
        if !can_release {
            continue;
        }
        to_release.push(pod);
        if manage::phase(pod) == "Succeeded" && !t.unc_failed.contains(&u) {
            if indexed {
                if let Some(ix) = indexed::completion_index(pod) {
                    if ix < completions && !t.prev_succeeded_indexes.has(ix) {
                        new_indexes.push(ix);
                        needs_flush = true;
                    }
                }
            } else if !t.unc_succeeded.contains(&u) {
                needs_flush = true;
                unc.succeeded.get_or_insert_with(Vec::new).push(u);
            }
        } else if considered_failed || (finished.is_some() && !is_scm(&finished)) {
            let valid = !indexed || indexed::completion_index(pod).is_some_and(|ix| ix < completions);
            if !t.unc_failed.contains(&u) && valid && failure::match_policy(policy.as_ref(), pod).count_failed {
                needs_flush = true;
                unc.failed.get_or_insert_with(Vec::new).push(u);
            }
        }
    }
    if indexed {
        let all = t.succeeded_indexes.with(new_indexes);
        let s = all.to_string();
        if Some(&s) != status.completed_indexes.as_ref() {
            needs_flush = true;
        }
        status.succeeded = Some(all.total());
        status.completed_indexes = Some(s);
        let failed = t.failed_indexes.as_ref().map(Intervals::to_string);
        if failed != status.failed_indexes {
            status.failed_indexes = failed;
            needs_flush = true;
        }
    }
    if let Some(c) = finished.clone().filter(|c| c.type_ == "FailureTarget") {
        status.conditions.get_or_insert_with(Vec::new).push(c.clone());
        needs_flush = true;
        finished = Some(condition(
            "Failed",
            "True",
            c.reason.as_deref().unwrap_or(""),
            c.message.as_deref().unwrap_or(""),
            now,
        ));
    }
    if let Some(c) = finished.clone().filter(|c| c.type_ == "SuccessCriteriaMet") {
        if find_condition(&job, "SuccessCriteriaMet").is_none() {
            job.status.as_mut().expect("set").conditions.get_or_insert_with(Vec::new).push(c.clone());
            needs_flush = true;
        }
        finished = Some(condition(
            "Complete",
            "True",
            c.reason.as_deref().unwrap_or(""),
            c.message.as_deref().unwrap_or(""),
            now,
        ));
    }
    let ns = job.metadata.namespace.clone().unwrap_or_default();
    let api = Api::<Job>::namespaced(jc.ctx.client.clone(), &ns);
    if needs_flush {
        job = update_status(&api, &job).await?;
        needs_flush = false;
    }
    let released = remove_finalizers(jc, &ns, &to_release).await;
    if let Ok(uids) = &released {
        for u in uids {
            with_finalizer.remove(u);
        }
    }
    let status = job.status.get_or_insert_with(Default::default);
    needs_flush |= clean_uncounted(status, &with_finalizer);
    if released.is_err() && needs_flush {
        update_status(&api, &job).await?;
        return released.map(|_| ());
    }
    released?;
    // enactJobFinished: only once every result is counted and no pod terminates.
    let unc = status.uncounted_terminated_pods.clone().unwrap_or_default();
    let uncounted = unc.succeeded.map_or(0, |v| v.len()) + unc.failed.map_or(0, |v| v.len());
    let mut job_finished = false;
    if let Some(c) = &finished {
        if uncounted == 0 && t.terminating == 0 {
            ensure_condition(status, c.clone());
            if c.type_ == "Complete" {
                status.completion_time = c.last_transition_time.clone();
            }
            job_finished = true;
            needs_flush = true;
        }
    }
    if needs_flush {
        let job = update_status(&api, &job).await?;
        if let (true, Some(c)) = (job_finished, &finished) {
            if c.type_ == "Complete" {
                jc.ctx.recorder.event(&job, NORMAL, "Completed", "Job completed");
            } else {
                jc.ctx.recorder.event(
                    &job,
                    WARNING,
                    c.reason.as_deref().unwrap_or(""),
                    c.message.clone().unwrap_or_default(),
                );
            }
        }
    }
    Ok(())
}

async fn update_status(api: &Api<Job>, job: &Job) -> Result<Job, Error> {
    let name = job.metadata.name.clone().unwrap_or_default();
    Ok(api.replace_status(&name, &PostParams::default(), job).await?)
}

/// Removes the tracking finalizer from `pods`; returns the UIDs released
/// (a pod already gone counts as released).
pub async fn remove_finalizers(jc: &JobController, ns: &str, pods: &[&Pod]) -> Result<Vec<String>, Error> {
    let api = Api::<Pod>::namespaced(jc.ctx.client.clone(), ns);
    let patch = serde_json::json!({"metadata": {"$deleteFromPrimitiveList/finalizers": [manage::TRACKING_FINALIZER]}});
    let mut done = Vec::new();
    let mut err = None;
    for p in pods.iter().filter(|p| has_tracking_finalizer(p)) {
        let name = p.metadata.name.clone().unwrap_or_default();
        match api.patch(&name, &PatchParams::default(), &Patch::Strategic(&patch)).await {
            Ok(_) => done.push(p.metadata.uid.clone().unwrap_or_default()),
            Err(e) if is_not_found(&e) => done.push(p.metadata.uid.clone().unwrap_or_default()),
            Err(e) => err = Some(e),
        }
    }
    match err {
        Some(e) => Err(e.into()),
        None => Ok(done),
    }
}

/// Deletes `pods` (first releasing their finalizer when `release`, as
/// upstream `deleteJobPods` does for pods it removes while the Job runs);
/// returns how many went and how many of those were ready.
async fn delete_pods(jc: &JobController, job: &Job, pods: &[&Pod], release: bool) -> (i32, i32) {
    let ns = job.metadata.namespace.clone().unwrap_or_default();
    let api = Api::<Pod>::namespaced(jc.ctx.client.clone(), &ns);
    let (mut deleted, mut ready) = (0, 0);
    for p in pods {
        let name = p.metadata.name.clone().unwrap_or_default();
        if release && remove_finalizers(jc, &ns, &[p]).await.is_err() {
            continue;
        }
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {
                jc.ctx.recorder.event(job, NORMAL, "SuccessfulDelete", format!("Deleted pod: {name}"));
            }
            Err(e) if is_not_found(&e) => {}
            Err(e) => {
                tracing::warn!(component = super::NAME, pod = %name, error = %e, "cannot delete pod");
                jc.ctx.recorder.event(job, WARNING, "FailedDelete", format!("Error deleting: {e}"));
                continue;
            }
        }
        deleted += 1;
        if manage::is_ready(p) {
            ready += 1;
        }
    }
    (deleted, ready)
}

/// Upstream `getPodCreationInfoForIndependentIndexes`: of the pending
/// `indexes`, those whose own back-off is over (counted from the index's
/// last failed pod, `10 s · 2^(failures−1)` capped at 10 min); when none
/// is, the shortest wait left.
fn indexes_ready_to_create(
    indexes: &[i32],
    delayed: &BTreeMap<i32, &Pod>,
    now: jiff::Timestamp,
) -> (Vec<i32>, Duration) {
    let mut ready = Vec::new();
    let mut wait: Option<Duration> = None;
    for ix in indexes {
        let remaining = delayed.get(ix).map_or(Duration::ZERO, |p| {
            let failures = indexed::index_absolute_failure_count(p).saturating_add(1) as u32;
            failure::BackoffRecord {
                failures_after_last_success: failures,
                last_failure_time: Some(failure::finish_time(p)),
            }
            .remaining(now, failure::POD_FAILURE_BACKOFF, failure::MAX_POD_FAILURE_BACKOFF)
        });
        if remaining.is_zero() {
            ready.push(*ix);
        } else {
            wait = Some(wait.map_or(remaining, |w| w.min(remaining)));
        }
    }
    if ready.is_empty() {
        (ready, wait.unwrap_or(Duration::ZERO))
    } else {
        (ready, Duration::ZERO)
    }
}

/// Creates `pods` in order; returns how many were created. Stops at the
/// first failure (upstream's slow start gives up on the rest of the batch).
async fn create_pods(jc: &JobController, job: &Job, pods: &[Pod]) -> Result<i32, Error> {
    let ns = job.metadata.namespace.clone().unwrap_or_default();
    let api = Api::<Pod>::namespaced(jc.ctx.client.clone(), &ns);
    let mut created = 0;
    for pod in pods {
        match api.create(&PostParams::default(), pod).await {
            Ok(p) => {
                created += 1;
                let name = p.metadata.name.unwrap_or_default();
                jc.ctx.recorder.event(job, NORMAL, "SuccessfulCreate", format!("Created pod: {name}"));
            }
            Err(e) if is_namespace_gone(&e) => return Ok(created),
            Err(e) => {
                jc.ctx.recorder.event(job, WARNING, "FailedCreate", format!("Error creating: {e}"));
                return Err(e.into());
            }
        }
    }
    Ok(created)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn t0() -> jiff::Timestamp {
        jiff::Timestamp::from_second(1_700_000_000).unwrap()
    }

    #[test]
    fn ensure_condition_as_upstream() {
        // Upstream TestEnsureJobConditions: a False condition is never added,
        // only updated; an equal one is no change.
        let mut st = JobStatus::default();
        assert!(!ensure_condition(&mut st, condition("Suspended", "False", "JobResumed", "Job resumed", t0())));
        assert!(st.conditions.as_ref().is_none_or(|c| c.is_empty()));
        assert!(ensure_condition(&mut st, condition("Suspended", "True", "JobSuspended", "Job suspended", t0())));
        assert!(!ensure_condition(&mut st, condition("Suspended", "True", "JobSuspended", "Job suspended", t0())));
        assert!(ensure_condition(&mut st, condition("Suspended", "False", "JobResumed", "Job resumed", t0())));
        let c = &st.conditions.as_ref().unwrap()[0];
        assert_eq!((c.status.as_str(), c.reason.as_deref()), ("False", Some("JobResumed")));
        assert_eq!(st.conditions.as_ref().unwrap().len(), 1);
    }

    #[test]
    fn uncounted_pods_move_to_counters_once_their_finalizer_is_gone() {
        // Upstream TestCleanUncountedPodsWithoutFinalizers: UIDs whose pods
        // still have the finalizer stay; the others are counted.
        let mut st: JobStatus = serde_json::from_value(json!({"succeeded": 1, "failed": 2,
            "uncountedTerminatedPods": {"succeeded": ["a", "b"], "failed": ["c", "d", "e"]}}))
        .unwrap();
        let with: HashSet<String> = ["b", "d"].iter().map(|s| s.to_string()).collect();
        assert!(clean_uncounted(&mut st, &with));
        assert_eq!((st.succeeded, st.failed), (Some(2), Some(4)));
        let unc = st.uncounted_terminated_pods.clone().unwrap();
        assert_eq!((unc.succeeded, unc.failed), (Some(vec!["b".to_string()]), Some(vec!["d".to_string()])));
        assert!(clean_uncounted(&mut st, &HashSet::new()));
        let unc = st.uncounted_terminated_pods.clone().unwrap();
        assert_eq!((unc.succeeded, unc.failed), (None, None));
        assert_eq!((st.succeeded, st.failed), (Some(3), Some(5)));
        assert!(!clean_uncounted(&mut st, &HashSet::new()));
    }

    #[test]
    fn each_index_backs_off_on_its_own() {
        // Upstream TestGetRemainingTimePerIndex via
        // getPodCreationInfoForIndependentIndexes: an index whose last pod
        // failed with count n waits 10 s · 2^n from that failure; indexes
        // without a failed pod start at once; with none ready, the
        // shortest wait is returned.
        let failed = |count: &str, at: i64| -> Pod {
            let at = jiff::Timestamp::from_second(1_700_000_000 + at).unwrap().to_string();
            serde_json::from_value(json!({"metadata": {"annotations": {
                    "batch.kubernetes.io/job-index-failure-count": count}},
                "status": {"phase": "Failed", "containerStatuses": [{"name": "c", "image": "", "imageID": "",
                    "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 1, "finishedAt": at}}}]}}))
            .unwrap()
        };
        let (p1, p2) = (failed("0", 0), failed("1", 0));
        let delayed: BTreeMap<i32, &Pod> = [(1, &p1), (2, &p2)].into();
        let at = |s: i64| jiff::Timestamp::from_second(1_700_000_000 + s).unwrap();
        assert_eq!(indexes_ready_to_create(&[0, 1, 2], &delayed, at(5)), (vec![0], Duration::ZERO));
        assert_eq!(indexes_ready_to_create(&[1, 2], &delayed, at(5)), (vec![], Duration::from_secs(5)));
        assert_eq!(indexes_ready_to_create(&[1, 2], &delayed, at(10)), (vec![1], Duration::ZERO));
        assert_eq!(indexes_ready_to_create(&[2], &delayed, at(12)), (vec![], Duration::from_secs(8)));
        assert_eq!(indexes_ready_to_create(&[2], &delayed, at(20)), (vec![2], Duration::ZERO));
    }
}
