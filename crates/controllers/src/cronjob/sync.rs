//! One sync of a CronJob (upstream `syncCronJob` and `cleanupFinishedJobs`).

use std::collections::HashSet;
use std::time::Duration;

use k8s_openapi::api::batch::v1::{CronJob, Job, JobTemplateSpec};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use kube::api::{Api, DeleteParams, PostParams, PropagationPolicy};

use super::schedule::{self, Schedule};
use super::CronJobController;
use crate::events::{NORMAL, WARNING};
use crate::runtime::{api_code, is_namespace_gone, is_not_found, Error};

/// The annotation with the Job's scheduled time (RFC 3339, in the CronJob's time zone).
pub const SCHEDULED_TIMESTAMP_ANNOTATION: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

/// What a sync decided.
pub struct Outcome {
    /// When to look again.
    pub requeue: Option<Duration>,
    /// Whether the status changed.
    pub update_status: bool,
}

/// The True `Complete` or `Failed` condition type of a finished Job.
pub fn finished_type(job: &Job) -> Option<&str> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
        .map(|c| c.type_.as_str())
}

/// Upstream `getJobName`: `<cronjob>-<scheduled time in minutes since the epoch>`.
pub fn job_name(cronjob: &str, scheduled: jiff::Timestamp) -> String {
    format!("{cronjob}-{}", scheduled.as_second().div_euclid(60))
}

/// The Job for the activation at `scheduled` (upstream `getJobFromTemplate2`):
/// the template's labels, annotations and spec, the scheduled-timestamp
/// annotation and the CronJob as controller.
pub fn job_from_template(cj: &CronJob, scheduled: jiff::Timestamp) -> Result<Job, String> {
    let spec = cj.spec.clone().unwrap_or_default();
    let template: JobTemplateSpec = spec.job_template;
    let tm = template.metadata.unwrap_or_default();
    let tz = match spec.time_zone.as_deref() {
        None | Some("") | Some("UTC") => jiff::tz::TimeZone::UTC,
        Some(z) => jiff::tz::TimeZone::get(z).map_err(|e| e.to_string())?,
    };
    let mut annotations = tm.annotations.unwrap_or_default();
    let local = scheduled.to_zoned(tz);
    let formatted = if local.offset().seconds() == 0 {
        local.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
    } else {
        local.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string()
    };
    annotations.insert(SCHEDULED_TIMESTAMP_ANNOTATION.into(), formatted);
    let name = cj.metadata.name.clone().unwrap_or_default();
    Ok(Job {
        metadata: ObjectMeta {
            name: Some(job_name(&name, scheduled)),
            namespace: cj.metadata.namespace.clone(),
            labels: tm.labels,
            annotations: Some(annotations),
            owner_references: Some(vec![OwnerReference {
                api_version: "batch/v1".into(),
                kind: "CronJob".into(),
                name,
                uid: cj.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..Default::default()
        },
        spec: Some(template.spec.unwrap_or_default()),
        status: None,
    })
}

fn reference(job: &Job) -> ObjectReference {
    ObjectReference {
        api_version: Some("batch/v1".into()),
        kind: Some("Job".into()),
        name: job.metadata.name.clone(),
        namespace: job.metadata.namespace.clone(),
        uid: job.metadata.uid.clone(),
        resource_version: job.metadata.resource_version.clone(),
        ..Default::default()
    }
}

fn in_active(cj: &CronJob, uid: &str) -> bool {
    cj.status.as_ref().and_then(|s| s.active.as_ref()).is_some_and(|a| a.iter().any(|r| r.uid.as_deref() == Some(uid)))
}

fn remove_from_active(cj: &mut CronJob, uid: &str) {
    if let Some(active) = cj.status.as_mut().and_then(|s| s.active.as_mut()) {
        active.retain(|r| r.uid.as_deref() != Some(uid));
    }
}

/// Upstream `syncCronJob`.
pub async fn sync_cronjob(cc: &CronJobController, cj: &mut CronJob, jobs: &[Job]) -> Result<Outcome, Error> {
    let now = cc.clock.now();
    let rec = &cc.ctx.recorder;
    let ns = cj.metadata.namespace.clone().unwrap_or_default();
    let jobs_api = Api::<Job>::namespaced(cc.ctx.client.clone(), &ns);
    let mut update = false;
    cj.status.get_or_insert_with(Default::default);
    let mut children = HashSet::new();
    for j in jobs {
        let uid = j.metadata.uid.clone().unwrap_or_default();
        let name = j.metadata.name.clone().unwrap_or_default();
        children.insert(uid.clone());
        let found = in_active(cj, &uid);
        let finished = finished_type(j);
        if !found && finished.is_none() {
            rec.event(
                &*cj,
                WARNING,
                "UnexpectedJob",
                format!("Saw a job that the controller did not create or forgot: {name}"),
            );
        } else if found && finished.is_some() {
            remove_from_active(cj, &uid);
            rec.event(
                &*cj,
                NORMAL,
                "SawCompletedJob",
                format!("Saw completed job: {name}, condition: {}", finished.unwrap_or("")),
            );
            update = true;
        } else if finished == Some("Complete") {
            let done = j.status.as_ref().and_then(|s| s.completion_time.clone());
            let status = cj.status.as_mut().expect("set");
            if let Some(t) = done {
                if status.last_successful_time.as_ref().is_none_or(|l| t.0 > l.0) {
                    status.last_successful_time = Some(t);
                    update = true;
                }
            }
        }
    }
    // Active Jobs that no longer exist.
    let active = cj.status.as_ref().and_then(|s| s.active.clone()).unwrap_or_default();
    for r in active {
        let uid = r.uid.clone().unwrap_or_default();
        if children.contains(&uid) {
            continue;
        }
        let name = r.name.clone().unwrap_or_default();
        match Api::<Job>::namespaced(cc.ctx.client.clone(), &ns).get(&name).await {
            Err(e) if is_not_found(&e) => {
                rec.event(&*cj, NORMAL, "MissingJob", format!("Active job went missing: {name}"));
                remove_from_active(cj, &uid);
                update = true;
            }
            Err(e) => return Err(e.into()),
            Ok(_) => {}
        }
    }
    let done = |update| Ok(Outcome { requeue: None, update_status: update });
    if cj.metadata.deletion_timestamp.is_some() {
        return done(update);
    }
    let spec = cj.spec.clone().unwrap_or_default();
    if let Some(tz) = spec.time_zone.as_deref() {
        if tz != "UTC" && !tz.is_empty() && jiff::tz::TimeZone::get(tz).is_err() {
            rec.event(&*cj, WARNING, "UnknownTimeZone", format!("invalid timeZone: {tz:?}: unknown time zone {tz}"));
            return done(update);
        }
    }
    if spec.suspend == Some(true) {
        return done(update);
    }
    let sched = match Schedule::parse(&spec.schedule, spec.time_zone.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            rec.event(&*cj, WARNING, "UnparseableSchedule", format!("unparseable schedule: {:?} : {e}", spec.schedule));
            return done(update);
        }
    };
    let created = cj.metadata.creation_timestamp.as_ref().map(|t| t.0).unwrap_or(now);
    let last = cj.status.as_ref().and_then(|s| s.last_schedule_time.as_ref()).map(|t| t.0);
    let next_in = |cj: &CronJob| {
        let last = cj.status.as_ref().and_then(|s| s.last_schedule_time.as_ref()).map(|t| t.0);
        schedule::next_schedule_in(&sched, created, last, now)
    };
    let recent = match schedule::most_recent(&sched, created, last, spec.starting_deadline_seconds, now) {
        Ok(r) => r,
        Err(e) => {
            rec.event(&*cj, WARNING, "InvalidSchedule", format!("invalid schedule: {} : {e}", spec.schedule));
            return done(update);
        }
    };
    let Some(scheduled) = recent.most_recent.filter(|t| *t <= now) else {
        return Ok(Outcome { requeue: next_in(cj), update_status: update });
    };
    if recent.missed > schedule::MANY_MISSED {
        rec.event(
            &*cj,
            WARNING,
            "TooManyMissedTimes",
            "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew",
        );
    }
    if let Some(sd) = spec.starting_deadline_seconds {
        if scheduled + jiff::SignedDuration::from_secs(sd) < now {
            let when = scheduled.strftime("%a, %d %b %Y %H:%M:%S +0000").to_string();
            rec.event(&*cj, WARNING, "MissSchedule", format!("Missed scheduled time to start a job: {when}"));
            return Ok(Outcome { requeue: next_in(cj), update_status: update });
        }
    }
    let cj_name = cj.metadata.name.clone().unwrap_or_default();
    let name = job_name(&cj_name, scheduled);
    let active_names: Vec<String> = cj
        .status
        .as_ref()
        .and_then(|s| s.active.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|r| r.name.clone())
        .collect();
    if active_names.contains(&name) || last == Some(scheduled) {
        return Ok(Outcome { requeue: next_in(cj), update_status: update });
    }
    let policy = spec.concurrency_policy.as_deref().unwrap_or("Allow");
    if policy == "Forbid" && !active_names.is_empty() {
        rec.event(
            &*cj,
            NORMAL,
            "JobAlreadyActive",
            "Not starting job because prior execution is running and concurrency policy is Forbid",
        );
        return Ok(Outcome { requeue: next_in(cj), update_status: update });
    }
    if policy == "Replace" {
        for old in active_names {
            let job = match Api::<Job>::namespaced(cc.ctx.client.clone(), &ns).get(&old).await {
                Ok(j) => j,
                Err(e) => {
                    rec.event(&*cj, WARNING, "FailedGet", format!("Get job: {e}"));
                    return Err(e.into());
                }
            };
            delete_job(cc, cj, &job).await?;
            update = true;
        }
    }
    let request = job_from_template(cj, scheduled).map_err(Error::Other)?;
    let job = match jobs_api.create(&PostParams::default(), &request).await {
        Ok(j) => {
            rec.event(
                &*cj,
                NORMAL,
                "SuccessfulCreate",
                format!("Created job {}", j.metadata.name.as_deref().unwrap_or("")),
            );
            j
        }
        Err(e) if is_namespace_gone(&e) => return Err(e.into()),
        Err(e) if api_code(&e) == Some(409) => {
            let j = Api::<Job>::namespaced(cc.ctx.client.clone(), &ns).get(&name).await?;
            let ours = j
                .metadata
                .owner_references
                .iter()
                .flatten()
                .any(|r| r.controller == Some(true) && Some(&r.uid) == cj.metadata.uid.as_ref());
            if !ours || in_active(cj, j.metadata.uid.as_deref().unwrap_or("")) {
                return done(update);
            }
            j
        }
        Err(e) => {
            rec.event(&*cj, WARNING, "FailedCreate", format!("Error creating job: {e}"));
            return Err(e.into());
        }
    };
    tracing::info!(component = super::NAME, cronjob = %cj_name, job = %name, "created job");
    let status = cj.status.as_mut().expect("set");
    status.active.get_or_insert_with(Vec::new).push(reference(&job));
    status.last_schedule_time = Some(Time(scheduled));
    Ok(Outcome { requeue: next_in(cj), update_status: true })
}

/// Deletes a Job with background propagation, removes it from the active
/// list and records SuccessfulDelete (upstream `deleteJob`).
async fn delete_job(cc: &CronJobController, cj: &mut CronJob, job: &Job) -> Result<(), Error> {
    let ns = job.metadata.namespace.clone().unwrap_or_default();
    let name = job.metadata.name.clone().unwrap_or_default();
    let dp = DeleteParams { propagation_policy: Some(PropagationPolicy::Background), ..Default::default() };
    match Api::<Job>::namespaced(cc.ctx.client.clone(), &ns).delete(&name, &dp).await {
        Ok(_) => {}
        Err(e) if is_not_found(&e) => {}
        Err(e) => {
            cc.ctx.recorder.event(&*cj, WARNING, "FailedDelete", format!("Deleted job: {e}"));
            return Err(e.into());
        }
    }
    remove_from_active(cj, job.metadata.uid.as_deref().unwrap_or(""));
    cc.ctx.recorder.event(&*cj, NORMAL, "SuccessfulDelete", format!("Deleted job {name}"));
    Ok(())
}

/// Which finished Jobs exceed a history limit (upstream `removeOldestJobs`):
/// the oldest by start time (Jobs without one last, ties by name) beyond `limit`.
pub fn oldest_beyond_limit<'a>(jobs: &[&'a Job], limit: i32) -> Vec<&'a Job> {
    let excess = jobs.len() as i64 - limit.max(0) as i64;
    if excess <= 0 {
        return Vec::new();
    }
    let mut sorted = jobs.to_vec();
    sorted.sort_by(|a, b| {
        let st = |j: &Job| j.status.as_ref().and_then(|s| s.start_time.as_ref()).map(|t| t.0);
        match (st(a), st(b)) {
            (Some(x), Some(y)) if x != y => x.cmp(&y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            _ => a.metadata.name.cmp(&b.metadata.name),
        }
    });
    sorted.into_iter().take(excess as usize).collect()
}

/// Deletes finished Jobs beyond successfulJobsHistoryLimit (default 3) and
/// failedJobsHistoryLimit (default 1); returns whether the status changed.
pub async fn cleanup_finished_jobs(cc: &CronJobController, cj: &mut CronJob, jobs: &[Job]) -> bool {
    let spec = cj.spec.clone().unwrap_or_default();
    if spec.successful_jobs_history_limit.is_none() && spec.failed_jobs_history_limit.is_none() {
        return false;
    }
    let succeeded: Vec<&Job> = jobs.iter().filter(|j| finished_type(j) == Some("Complete")).collect();
    let failed: Vec<&Job> = jobs.iter().filter(|j| finished_type(j) == Some("Failed")).collect();
    let mut update = false;
    for (list, limit) in [(succeeded, spec.successful_jobs_history_limit), (failed, spec.failed_jobs_history_limit)] {
        let Some(limit) = limit else { continue };
        for job in oldest_beyond_limit(&list, limit) {
            if delete_job(cc, cj, job).await.is_ok() {
                update = true;
            }
        }
    }
    update
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn job_names_and_annotation_as_upstream() {
        // Upstream TestGetJobFromTemplate2: name is minutes since the epoch.
        let t: jiff::Timestamp = "2016-05-19T10:00:00Z".parse().unwrap();
        assert_eq!(job_name("mycronjob", t), format!("mycronjob-{}", 1463652000 / 60));
        let cj: CronJob = serde_json::from_value(json!({
            "metadata": {"name": "mycronjob", "namespace": "ns", "uid": "u1"},
            "spec": {"schedule": "* * * * *", "jobTemplate": {"metadata": {"labels": {"a": "b"}},
                "spec": {"template": {"spec": {"containers": []}}}}}
        }))
        .unwrap();
        let j = job_from_template(&cj, t).unwrap();
        assert_eq!(j.metadata.name.as_deref(), Some("mycronjob-24394200"));
        assert_eq!(j.metadata.annotations.unwrap()[SCHEDULED_TIMESTAMP_ANNOTATION], "2016-05-19T10:00:00Z");
        assert_eq!(j.metadata.labels.unwrap()["a"], "b");
        let owner = &j.metadata.owner_references.unwrap()[0];
        assert_eq!((owner.kind.as_str(), owner.uid.as_str(), owner.controller), ("CronJob", "u1", Some(true)));
        let mut ny = cj.clone();
        ny.spec.as_mut().unwrap().time_zone = Some("America/New_York".into());
        let j = job_from_template(&ny, t).unwrap();
        assert_eq!(j.metadata.annotations.unwrap()[SCHEDULED_TIMESTAMP_ANNOTATION], "2016-05-19T06:00:00-04:00");
    }

    #[test]
    fn oldest_finished_jobs_go_first() {
        let job = |name: &str, start: Option<&str>| -> Job {
            let mut v = json!({"metadata": {"name": name}});
            if let Some(s) = start {
                v["status"] = json!({"startTime": s});
            }
            serde_json::from_value(v).unwrap()
        };
        let (a, b, c, d) = (
            job("a", Some("2016-05-19T10:00:00Z")),
            job("b", Some("2016-05-19T09:00:00Z")),
            job("c", None),
            job("d", Some("2016-05-19T11:00:00Z")),
        );
        let names = |v: Vec<&Job>| v.iter().map(|j| j.metadata.name.clone().unwrap()).collect::<Vec<_>>();
        assert_eq!(names(oldest_beyond_limit(&[&a, &b, &c, &d], 2)), ["b", "a"]);
        assert_eq!(names(oldest_beyond_limit(&[&a, &b, &c, &d], 0)), ["b", "a", "d", "c"]);
        assert!(oldest_beyond_limit(&[&a], 1).is_empty());
    }
}
