//! The CronJob controller inside `rkube server`, driven with the real
//! kubectl. Schedules are minute-granular, so one test waits for a real
//! minute boundary; the others move `status.lastScheduleTime` into the past
//! through the status subresource, which makes the controller see a missed
//! activation and act on it at once — upstream's own behaviour for missed
//! start times. Expected names, annotations, events and messages are upstream's.

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{TestServer, TestServerOptions};

fn start(controllers: &str) -> TestServer {
    TestServer::start_with(TestServerOptions {
        extra_args: vec!["--controllers".into(), format!("serviceaccount-controller,{controllers}")],
        ..Default::default()
    })
}

fn kubectl_ok(server: &TestServer, args: &[&str]) -> String {
    let out = server.kubectl(args);
    assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn create(server: &TestServer, obj: &Value) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("obj.json");
    std::fs::write(&path, serde_json::to_vec(obj).unwrap()).unwrap();
    kubectl_ok(server, &["create", "-f", path.to_str().unwrap()]);
}

fn get(server: &TestServer, args: &[&str]) -> Option<Value> {
    let mut full = vec!["get", "-o", "json"];
    full.extend_from_slice(args);
    let out = server.kubectl(&full);
    out.status.success().then(|| serde_json::from_slice(&out.stdout).unwrap())
}

fn eventually(server: &TestServer, args: &[&str], secs: u64, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = get(server, args) {
            if check(&v) {
                return v;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{what} did not happen within {secs}s; last: {:#}\nserver log:\n{}",
            get(server, args).unwrap_or(Value::Null),
            server.logs()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn pod_template() -> Value {
    json!({"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}})
}

fn cronjob(name: &str, schedule: &str, extra: Value) -> Value {
    let mut spec = json!({"schedule": schedule, "jobTemplate": {"metadata": {"labels": {"app": name}},
        "spec": {"template": pod_template()}}});
    for (k, v) in extra.as_object().unwrap() {
        spec[k] = v.clone();
    }
    json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name, "namespace": "default"}, "spec": spec})
}

/// The Jobs the CronJob controls, by name.
fn jobs_of(server: &TestServer, cj: &str) -> Vec<Value> {
    let uid = get(server, &["cronjob", cj]).unwrap()["metadata"]["uid"].clone();
    let list = get(server, &["jobs"]).unwrap();
    let mut jobs: Vec<Value> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|j| j["metadata"]["ownerReferences"].as_array().is_some_and(|o| o.iter().any(|r| r["uid"] == uid)))
        .cloned()
        .collect();
    jobs.sort_by_key(|j| j["metadata"]["name"].as_str().unwrap().to_string());
    jobs
}

fn job_names(jobs: &[Value]) -> Vec<String> {
    jobs.iter().map(|j| j["metadata"]["name"].as_str().unwrap().to_string()).collect()
}

fn events_for(server: &TestServer, name: &str) -> Vec<(String, String, String)> {
    let list = get(server, &["events", "--field-selector", &format!("involvedObject.name={name}")]).unwrap();
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or("").to_string();
            (s("type"), s("reason"), s("message"))
        })
        .collect()
}

fn wait_event(server: &TestServer, name: &str, reason: &str) -> (String, String, String) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(e) = events_for(server, name).into_iter().find(|e| e.1 == reason) {
            return e;
        }
        assert!(Instant::now() < deadline, "no {reason} event for {name}: {:?}", events_for(server, name));
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// RFC 3339 UTC time `minutes` minutes ago, on a whole minute.
fn minutes_ago(minutes: i64) -> String {
    let out =
        Command::new("date").args(["-u", "-d", &format!("-{minutes} min"), "+%Y-%m-%dT%H:%M:00Z"]).output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn unix_seconds(rfc3339: &str) -> i64 {
    let out = Command::new("date").args(["-u", "-d", rfc3339, "+%s"]).output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().parse().unwrap()
}

fn patch_status(server: &TestServer, cj: &str, status: Value) {
    let p = json!({ "status": status }).to_string();
    kubectl_ok(server, &["patch", "cronjob", cj, "--subresource=status", "--type=merge", "-p", &p]);
}

/// A Job the test creates under the CronJob (as if from an earlier run).
fn owned_job(server: &TestServer, cj: &str, name: &str) -> Value {
    let uid = get(server, &["cronjob", cj]).unwrap()["metadata"]["uid"].as_str().unwrap().to_string();
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "default",
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": cj, "uid": uid,
            "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"template": pod_template()}});
    create(server, &job);
    get(server, &["job", name]).unwrap()
}

fn reference(job: &Value) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job", "namespace": "default",
        "name": job["metadata"]["name"], "uid": job["metadata"]["uid"]})
}

#[test]
fn a_cronjob_creates_a_job_at_the_next_minute() {
    let server = start("cronjob-controller");
    create(&server, &cronjob("every-minute", "*/1 * * * *", json!({})));
    // Within a minute (plus slack) the first activation comes.
    let cj = eventually(&server, &["cronjob", "every-minute"], 75, "a Job in status.active", |cj| {
        cj["status"]["active"].as_array().is_some_and(|a| a.len() == 1)
    });
    let jobs = jobs_of(&server, "every-minute");
    assert_eq!(jobs.len(), 1);
    let job = &jobs[0];
    let scheduled = cj["status"]["lastScheduleTime"].as_str().unwrap();
    let secs = unix_seconds(scheduled);
    assert_eq!(secs % 60, 0, "{scheduled}");
    // Upstream's name: <cronjob>-<scheduled time in minutes since the epoch>.
    assert_eq!(job["metadata"]["name"], format!("every-minute-{}", secs / 60));
    assert_eq!(job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"], scheduled);
    assert_eq!(job["metadata"]["labels"]["app"], "every-minute");
    let owner = &job["metadata"]["ownerReferences"][0];
    assert_eq!((owner["kind"].as_str(), owner["controller"].as_bool()), (Some("CronJob"), Some(true)));
    assert_eq!(owner["uid"], cj["metadata"]["uid"]);
    assert_eq!(cj["status"]["active"][0]["name"], job["metadata"]["name"]);
    assert_eq!(cj["status"]["active"][0]["uid"], job["metadata"]["uid"]);
    let (ty, _, msg) = wait_event(&server, "every-minute", "SuccessfulCreate");
    assert_eq!((ty.as_str(), msg), ("Normal", format!("Created job {}", job["metadata"]["name"].as_str().unwrap())));
}

/// Conformance "CronJob Suspend": no Job while suspended; resuming runs
/// the missed activation, and more than 100 missed ones warn (TooManyMissedTimes).
#[test]
fn cronjob_suspend_holds_jobs_and_too_many_missed_start_times_warn() {
    let server = start("cronjob-controller");
    create(&server, &cronjob("held", "*/1 * * * *", json!({"suspend": true})));
    patch_status(&server, "held", json!({"lastScheduleTime": minutes_ago(24 * 60)}));
    std::thread::sleep(Duration::from_secs(5));
    assert!(jobs_of(&server, "held").is_empty(), "a suspended CronJob created a Job");

    kubectl_ok(&server, &["patch", "cronjob", "held", "--type=merge", "-p", r#"{"spec":{"suspend":false}}"#]);
    let cj = eventually(&server, &["cronjob", "held"], 30, "a Job after resuming", |cj| {
        cj["status"]["active"].as_array().is_some_and(|a| a.len() == 1)
    });
    // Only the most recent missed activation runs.
    assert_eq!(jobs_of(&server, "held").len(), 1);
    let last = unix_seconds(cj["status"]["lastScheduleTime"].as_str().unwrap());
    assert!(last >= unix_seconds(&minutes_ago(2)), "lastScheduleTime {last}");
    let (ty, _, msg) = wait_event(&server, "held", "TooManyMissedTimes");
    assert_eq!(ty, "Warning");
    assert_eq!(msg, "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew");
}

/// Conformance "CronJob ForbidConcurrent": while a Job is active no new one
/// starts (JobAlreadyActive); once it is gone (MissingJob) the next does.
#[test]
fn cronjob_forbid_concurrent_skips_while_a_job_is_active() {
    let server = start("cronjob-controller");
    create(&server, &cronjob("forbid", "*/1 * * * *", json!({"suspend": true, "concurrencyPolicy": "Forbid"})));
    let manual = owned_job(&server, "forbid", "forbid-manual");
    patch_status(&server, "forbid", json!({"lastScheduleTime": minutes_ago(3), "active": [reference(&manual)]}));
    kubectl_ok(&server, &["patch", "cronjob", "forbid", "--type=merge", "-p", r#"{"spec":{"suspend":false}}"#]);
    let (ty, _, msg) = wait_event(&server, "forbid", "JobAlreadyActive");
    assert_eq!(ty, "Normal");
    assert_eq!(msg, "Not starting job because prior execution is running and concurrency policy is Forbid");
    assert_eq!(job_names(&jobs_of(&server, "forbid")), ["forbid-manual"]);

    kubectl_ok(&server, &["delete", "job", "forbid-manual"]);
    wait_event(&server, "forbid", "MissingJob");
    let cj = eventually(&server, &["cronjob", "forbid"], 30, "a new Job", |cj| {
        cj["status"]["active"].as_array().is_some_and(|a| a.len() == 1 && a[0]["name"] != "forbid-manual")
    });
    assert_eq!(jobs_of(&server, "forbid").len(), 1);
    assert!(cj["status"]["active"][0]["name"].as_str().unwrap().starts_with("forbid-"));
}

/// Conformance "CronJob ReplaceConcurrent": the active Job is deleted and a
/// new one takes its place.
#[test]
fn cronjob_replace_concurrent_replaces_the_active_job() {
    let server = start("cronjob-controller");
    create(&server, &cronjob("swap", "*/1 * * * *", json!({"suspend": true, "concurrencyPolicy": "Replace"})));
    let manual = owned_job(&server, "swap", "swap-old");
    patch_status(&server, "swap", json!({"lastScheduleTime": minutes_ago(3), "active": [reference(&manual)]}));
    kubectl_ok(&server, &["patch", "cronjob", "swap", "--type=merge", "-p", r#"{"spec":{"suspend":false}}"#]);
    let cj = eventually(&server, &["cronjob", "swap"], 30, "the replacement", |cj| {
        cj["status"]["active"].as_array().is_some_and(|a| a.len() == 1 && a[0]["name"] != "swap-old")
    });
    let (_, _, msg) = wait_event(&server, "swap", "SuccessfulDelete");
    assert_eq!(msg, "Deleted job swap-old");
    let new_name = cj["status"]["active"][0]["name"].as_str().unwrap().to_string();
    eventually(&server, &["jobs"], 30, "the old Job gone", |list| {
        list["items"].as_array().unwrap().iter().all(|j| j["metadata"]["name"] != "swap-old")
    });
    assert_eq!(job_names(&jobs_of(&server, "swap")), [new_name]);
}

/// successfulJobsHistoryLimit keeps only the newest finished Jobs (the
/// Job controller runs them; the test plays the kubelet).
#[test]
fn cronjob_history_limit_deletes_old_finished_jobs() {
    let server = start("cronjob-controller,job-controller");
    create(
        &server,
        &cronjob(
            "hist",
            "0 0 1 1 *",
            json!({"suspend": true, "successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 1}),
        ),
    );
    for name in ["hist-a", "hist-b", "hist-c"] {
        owned_job(&server, "hist", name);
        std::thread::sleep(Duration::from_millis(1100)); // distinct start times
    }
    // Finish every Job's pod.
    for name in ["hist-a", "hist-b", "hist-c"] {
        let pods =
            eventually(&server, &["pods", "-l", &format!("batch.kubernetes.io/job-name={name}")], 30, "a pod", |l| {
                l["items"].as_array().is_some_and(|i| i.len() == 1)
            });
        let pod = pods["items"][0]["metadata"]["name"].as_str().unwrap().to_string();
        let p = json!({"status": {"phase": "Succeeded"}}).to_string();
        kubectl_ok(&server, &["patch", "pod", &pod, "--subresource=status", "--type=merge", "-p", &p]);
    }
    let deadline = Instant::now() + Duration::from_secs(45);
    loop {
        let names = job_names(&jobs_of(&server, "hist"));
        if names == ["hist-c"] {
            break;
        }
        assert!(Instant::now() < deadline, "jobs left: {names:?}\n{}", server.logs());
        std::thread::sleep(Duration::from_millis(250));
    }
    let deleted: Vec<String> =
        events_for(&server, "hist").into_iter().filter(|e| e.1 == "SuccessfulDelete").map(|e| e.2).collect();
    assert!(
        deleted.contains(&"Deleted job hist-a".to_string()) && deleted.contains(&"Deleted job hist-b".to_string()),
        "{deleted:?}"
    );
    // The newest completion is recorded.
    let cj = eventually(&server, &["cronjob", "hist"], 30, "lastSuccessfulTime", |cj| {
        !cj["status"]["lastSuccessfulTime"].is_null()
    });
    let c = get(&server, &["job", "hist-c"]).unwrap();
    assert_eq!(cj["status"]["lastSuccessfulTime"], c["status"]["completionTime"]);
}
