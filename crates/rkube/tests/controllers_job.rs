//! The Job and TTL-after-finished controllers inside `rkube server`, driven
//! with the real kubectl. No kubelet runs: the test plays its part by
//! setting pod phases (and container exit codes) through the status
//! subresource. Expected values are upstream's (condition types, reasons,
//! messages, labels, annotations, the tracking finalizer).

mod support;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{TestServer, TestServerOptions};

const FINALIZER: &str = "batch.kubernetes.io/job-tracking";
const INDEX: &str = "batch.kubernetes.io/job-completion-index";

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

fn apply(server: &TestServer, obj: &Value) {
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

/// Polls `kubectl get -o json <args>` until `check` holds (up to `secs`).
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

fn job(name: &str, spec: Value) -> Value {
    let mut spec = spec;
    spec["template"] = json!({"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}});
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "default"}, "spec": spec})
}

fn pods_of(server: &TestServer, job: &str) -> Vec<Value> {
    let list = get(server, &["pods", "-l", &format!("batch.kubernetes.io/job-name={job}")]).unwrap();
    list["items"].as_array().unwrap().clone()
}

fn active_pods(server: &TestServer, job: &str) -> Vec<Value> {
    pods_of(server, job)
        .into_iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .filter(|p| !matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed")))
        .collect()
}

/// Waits until the job has `n` active pods and returns them.
fn wait_active(server: &TestServer, job: &str, n: usize, secs: u64) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let pods = active_pods(server, job);
        if pods.len() == n {
            return pods;
        }
        assert!(Instant::now() < deadline, "{job}: {} active pods, want {n}\n{}", pods.len(), server.logs());
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Plays the kubelet: the pod finished with `phase` and the container's
/// exit code, now (`finishedAt`, which the pod-failure back-off counts from).
fn finish(server: &TestServer, pod: &Value, phase: &str, exit_code: i32) {
    let name = pod["metadata"]["name"].as_str().unwrap();
    let now = jiff::Timestamp::now().round(jiff::Unit::Second).unwrap().to_string();
    let patch = json!({"status": {"phase": phase, "containerStatuses": [{"name": "c", "image": "busybox", "imageID": "",
        "ready": false, "restartCount": 0,
        "state": {"terminated": {"exitCode": exit_code, "reason": phase, "finishedAt": now}}}]}});
    kubectl_ok(server, &["patch", "pod", name, "--subresource=status", "--type=merge", "-p", &patch.to_string()]);
}

fn condition<'a>(job: &'a Value, type_: &str) -> Option<&'a Value> {
    job["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == type_)
}

fn has_condition(job: &Value, type_: &str, status: &str) -> bool {
    condition(job, type_).is_some_and(|c| c["status"] == status)
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

#[test]
fn job_with_completions_3_and_parallelism_2_runs_to_complete() {
    let server = start("job-controller");
    apply(&server, &job("pi", json!({"completions": 3, "parallelism": 2})));
    let pods = wait_active(&server, "pi", 2, 30);
    let uid = get(&server, &["job", "pi"]).unwrap()["metadata"]["uid"].as_str().unwrap().to_string();
    for p in &pods {
        let m = &p["metadata"];
        assert!(m["name"].as_str().unwrap().starts_with("pi-"), "{m}");
        assert_eq!(m["generateName"], "pi-");
        assert_eq!(m["labels"]["batch.kubernetes.io/job-name"], "pi");
        assert_eq!(m["labels"]["batch.kubernetes.io/controller-uid"], uid.as_str());
        assert_eq!(m["labels"]["job-name"], "pi");
        assert_eq!(m["labels"]["controller-uid"], uid.as_str());
        assert_eq!(m["finalizers"], json!([FINALIZER]));
        let owner = &m["ownerReferences"][0];
        assert_eq!((owner["kind"].as_str(), owner["uid"].as_str()), (Some("Job"), Some(uid.as_str())));
        assert_eq!((owner["controller"].as_bool(), owner["blockOwnerDeletion"].as_bool()), (Some(true), Some(true)));
    }
    eventually(&server, &["job", "pi"], 30, "active=2", |j| {
        j["status"]["active"] == 2 && !j["status"]["startTime"].is_null()
    });

    finish(&server, &pods[0], "Succeeded", 0);
    // One more pod replaces the finished one (3 − 1 succeeded = 2 to run).
    eventually(&server, &["job", "pi"], 30, "succeeded=1", |j| j["status"]["succeeded"] == 1);
    let pods = wait_active(&server, "pi", 2, 30);
    for p in &pods {
        finish(&server, p, "Succeeded", 0);
    }
    let out = kubectl_ok(&server, &["wait", "--for=condition=complete", "job/pi", "--timeout=60s"]);
    assert!(out.contains("condition met"), "{out}");
    let j = get(&server, &["job", "pi"]).unwrap();
    assert_eq!(j["status"]["succeeded"], 3);
    assert_eq!(j["status"]["active"], 0);
    assert!(!j["status"]["completionTime"].is_null());
    for t in ["SuccessCriteriaMet", "Complete"] {
        let c = condition(&j, t).unwrap();
        assert_eq!(c["status"], "True");
        assert_eq!(c["reason"], "CompletionsReached");
        assert_eq!(c["message"], "Reached expected number of succeeded pods");
    }
    // Every result counted: no finalizer left, nothing uncounted.
    assert_eq!(j["status"]["uncountedTerminatedPods"], json!({}));
    let pods = pods_of(&server, "pi");
    assert_eq!(pods.len(), 3);
    assert!(pods.iter().all(|p| p["metadata"]["finalizers"].is_null()), "{pods:#?}");
    let created = events_for(&server, "pi").into_iter().filter(|e| e.1 == "SuccessfulCreate").count();
    assert_eq!(created, 3);
    let (ty, _, msg) = wait_event(&server, "pi", "Completed");
    assert_eq!((ty.as_str(), msg.as_str()), ("Normal", "Job completed"));
}

/// Conformance "Jobs, completion after task failure": a failed pod is
/// replaced (after the 10 s pod-failure back-off) and the Job completes.
#[test]
fn jobs_completion_after_task_failure() {
    let server = start("job-controller");
    apply(&server, &job("flaky", json!({"completions": 1, "parallelism": 1, "backoffLimit": 6})));
    let first = wait_active(&server, "flaky", 1, 30).remove(0);
    let failed_at = Instant::now();
    finish(&server, &first, "Failed", 1);
    eventually(&server, &["job", "flaky"], 30, "failed=1", |j| j["status"]["failed"] == 1);
    let second = wait_active(&server, "flaky", 1, 40).remove(0);
    assert_ne!(second["metadata"]["name"], first["metadata"]["name"]);
    // Upstream's DefaultJobPodFailureBackOff: no replacement before ~10 s.
    assert!(failed_at.elapsed() >= Duration::from_secs(9), "replaced after {:?}", failed_at.elapsed());
    finish(&server, &second, "Succeeded", 0);
    let j = eventually(&server, &["job", "flaky"], 30, "Complete", |j| has_condition(j, "Complete", "True"));
    assert_eq!((j["status"]["succeeded"].as_i64(), j["status"]["failed"].as_i64()), (Some(1), Some(1)));
}

/// Conformance "Ensure Pods of an Indexed Job get a unique index.".
#[test]
fn indexed_job_pods_get_a_unique_index_and_hostname() {
    let server = start("job-controller");
    apply(&server, &job("idx", json!({"completions": 4, "parallelism": 4, "completionMode": "Indexed"})));
    let pods = wait_active(&server, "idx", 4, 30);
    let mut seen: Vec<(i64, Value)> = pods
        .iter()
        .map(|p| {
            let ix: i64 = p["metadata"]["annotations"][INDEX].as_str().unwrap().parse().unwrap();
            assert_eq!(p["metadata"]["labels"][INDEX], ix.to_string());
            assert_eq!(p["spec"]["hostname"], format!("idx-{ix}"));
            assert!(p["metadata"]["name"].as_str().unwrap().starts_with(&format!("idx-{ix}-")));
            let env = &p["spec"]["containers"][0]["env"][0];
            assert_eq!(env["name"], "JOB_COMPLETION_INDEX");
            assert_eq!(env["valueFrom"]["fieldRef"]["fieldPath"], format!("metadata.annotations['{INDEX}']"));
            (ix, p.clone())
        })
        .collect();
    seen.sort_by_key(|(ix, _)| *ix);
    assert_eq!(seen.iter().map(|(ix, _)| *ix).collect::<Vec<_>>(), [0, 1, 2, 3]);
    finish(&server, &seen[1].1, "Succeeded", 0);
    finish(&server, &seen[3].1, "Succeeded", 0);
    eventually(&server, &["job", "idx"], 30, "completedIndexes 1,3", |j| j["status"]["completedIndexes"] == "1,3");
    finish(&server, &seen[2].1, "Succeeded", 0);
    eventually(&server, &["job", "idx"], 30, "completedIndexes 1-3", |j| j["status"]["completedIndexes"] == "1-3");
    finish(&server, &seen[0].1, "Succeeded", 0);
    let j = eventually(&server, &["job", "idx"], 30, "Complete", |j| has_condition(j, "Complete", "True"));
    assert_eq!(j["status"]["completedIndexes"], "0-3");
    assert_eq!(j["status"]["succeeded"], 4);
}

#[test]
fn a_failing_job_hits_its_backoff_limit() {
    let server = start("job-controller");
    apply(&server, &job("doomed", json!({"backoffLimit": 1})));
    let first = wait_active(&server, "doomed", 1, 30).remove(0);
    finish(&server, &first, "Failed", 1);
    // backoffLimit 1 allows one retry (after the 10 s back-off).
    let second = wait_active(&server, "doomed", 1, 40).remove(0);
    finish(&server, &second, "Failed", 1);
    let j = eventually(&server, &["job", "doomed"], 30, "Failed", |j| has_condition(j, "Failed", "True"));
    for t in ["FailureTarget", "Failed"] {
        let c = condition(&j, t).unwrap();
        assert_eq!(c["reason"], "BackoffLimitExceeded", "{t}");
        assert_eq!(c["message"], "Job has reached the specified backoff limit", "{t}");
    }
    assert_eq!(j["status"]["failed"], 2);
    assert!(condition(&j, "Complete").is_none());
    let (ty, _, msg) = wait_event(&server, "doomed", "BackoffLimitExceeded");
    assert_eq!((ty.as_str(), msg.as_str()), ("Warning", "Job has reached the specified backoff limit"));
    // No third pod.
    assert_eq!(pods_of(&server, "doomed").len(), 2);
}

/// Conformance "Verify Pod Failure policy allows to fail job early on exit code.".
#[test]
fn pod_failure_policy_fails_the_job_early_on_exit_code() {
    let server = start("job-controller");
    let policy = json!({"rules": [{"action": "FailJob", "onExitCodes": {"containerName": "c", "operator": "In", "values": [42]}}]});
    apply(
        &server,
        &job("pfp", json!({"completions": 2, "parallelism": 2, "backoffLimit": 6, "podFailurePolicy": policy})),
    );
    let pods = wait_active(&server, "pfp", 2, 30);
    finish(&server, &pods[0], "Failed", 42);
    let j = eventually(&server, &["job", "pfp"], 30, "Failed", |j| has_condition(j, "Failed", "True"));
    let c = condition(&j, "Failed").unwrap();
    assert_eq!(c["reason"], "PodFailurePolicy");
    let name = pods[0]["metadata"]["name"].as_str().unwrap();
    assert_eq!(
        c["message"],
        format!("Container c for pod default/{name} failed with exit code 42 matching FailJob rule at index 0")
    );
    // The other pod was deleted (terminated by the controller).
    assert!(active_pods(&server, "pfp").is_empty());
}

/// Conformance "Jobs, manage lifecycle" (a Job created suspended; suspend and resume).
#[test]
fn jobs_manage_lifecycle_suspend_and_resume() {
    let server = start("job-controller");
    apply(&server, &job("sleepy", json!({"parallelism": 2, "completions": 4, "suspend": true})));
    let j = eventually(&server, &["job", "sleepy"], 30, "Suspended", |j| has_condition(j, "Suspended", "True"));
    let c = condition(&j, "Suspended").unwrap();
    assert_eq!((c["reason"].as_str(), c["message"].as_str()), (Some("JobSuspended"), Some("Job suspended")));
    assert!(j["status"]["startTime"].is_null());
    assert!(pods_of(&server, "sleepy").is_empty());
    wait_event(&server, "sleepy", "Suspended");

    kubectl_ok(&server, &["patch", "job", "sleepy", "--type=merge", "-p", r#"{"spec":{"suspend":false}}"#]);
    wait_active(&server, "sleepy", 2, 30);
    let j = eventually(&server, &["job", "sleepy"], 30, "resumed", |j| has_condition(j, "Suspended", "False"));
    let c = condition(&j, "Suspended").unwrap();
    assert_eq!((c["reason"].as_str(), c["message"].as_str()), (Some("JobResumed"), Some("Job resumed")));
    assert!(!j["status"]["startTime"].is_null());
    wait_event(&server, "sleepy", "Resumed");

    kubectl_ok(&server, &["patch", "job", "sleepy", "--type=merge", "-p", r#"{"spec":{"suspend":true}}"#]);
    eventually(&server, &["job", "sleepy"], 30, "suspended again", |j| {
        has_condition(j, "Suspended", "True") && j["status"]["active"] == 0
    });
    wait_active(&server, "sleepy", 0, 30);
}

#[test]
fn active_deadline_seconds_fails_the_job() {
    let server = start("job-controller");
    apply(&server, &job("slow", json!({"activeDeadlineSeconds": 3})));
    wait_active(&server, "slow", 1, 30);
    let j = eventually(&server, &["job", "slow"], 40, "Failed", |j| has_condition(j, "Failed", "True"));
    let c = condition(&j, "Failed").unwrap();
    assert_eq!(c["reason"], "DeadlineExceeded");
    assert_eq!(c["message"], "Job was active longer than specified deadline");
    assert_eq!(j["status"]["active"], 0);
    assert!(active_pods(&server, "slow").is_empty());
    wait_event(&server, "slow", "DeadlineExceeded");
}

#[test]
fn ttl_seconds_after_finished_deletes_the_finished_job() {
    let server = start("job-controller,ttl-after-finished-controller,garbage-collector-controller");
    apply(&server, &job("brief", json!({"ttlSecondsAfterFinished": 2})));
    let pod = wait_active(&server, "brief", 1, 30).remove(0);
    finish(&server, &pod, "Succeeded", 0);
    eventually(&server, &["job", "brief"], 30, "Complete", |j| has_condition(j, "Complete", "True"));
    // Deleted with foreground propagation: gone, or (without a garbage
    // collector to finish the foreground deletion) marked for deletion.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match get(&server, &["job", "brief"]) {
            None => break,
            Some(j) if !j["metadata"]["deletionTimestamp"].is_null() => {
                assert_eq!(j["metadata"]["finalizers"], json!(["foregroundDeletion"]));
                break;
            }
            Some(_) => {}
        }
        assert!(Instant::now() < deadline, "the Job was not deleted\n{}", server.logs());
        std::thread::sleep(Duration::from_millis(250));
    }
}

const FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-failure-count";

/// The pod of `pods` with completion index `ix`.
fn with_index(pods: &[Value], ix: &str) -> Value {
    pods.iter().find(|p| p["metadata"]["annotations"][INDEX] == ix).cloned().unwrap_or_else(|| panic!("no index {ix}"))
}

/// Upstream backoffLimitPerIndex (e2e "should execute all indexes despite
/// some failing when using backoffLimitPerIndex"; no conformance entry):
/// index 1 always fails, is retried once with its own back-off and failure
/// count, then listed in `status.failedIndexes`; the other indexes run to
/// success and the Job fails with FailedIndexes.
#[test]
fn backoff_limit_per_index_fails_only_the_failing_index() {
    let server = start("job-controller");
    let spec = json!({"completions": 3, "parallelism": 3, "completionMode": "Indexed", "backoffLimitPerIndex": 1});
    apply(&server, &job("per", spec));
    let pods = wait_active(&server, "per", 3, 30);
    for p in &pods {
        assert_eq!(p["metadata"]["annotations"][FAILURE_COUNT], "0", "{p:#}");
    }
    let first = with_index(&pods, "1");
    finish(&server, &with_index(&pods, "0"), "Succeeded", 0);
    finish(&server, &first, "Failed", 1);
    // The replacement of index 1 comes after the index's own 10 s back-off
    // and carries one failure.
    let deadline = Instant::now() + Duration::from_secs(60);
    let second = loop {
        let active = active_pods(&server, "per");
        if let Some(p) = active.iter().find(|p| p["metadata"]["annotations"][INDEX] == "1") {
            break p.clone();
        }
        assert!(Instant::now() < deadline, "index 1 was not retried\n{}", server.logs());
        std::thread::sleep(Duration::from_millis(250));
    };
    assert_ne!(second["metadata"]["name"], first["metadata"]["name"]);
    assert_eq!(second["metadata"]["annotations"][FAILURE_COUNT], "1");
    finish(&server, &second, "Failed", 1);
    // Past its limit: the index fails and is not retried; index 2 still runs.
    let j = eventually(&server, &["job", "per"], 30, "failedIndexes 1", |j| {
        j["status"]["failedIndexes"] == "1" && j["status"]["failed"] == 2
    });
    assert!(condition(&j, "Failed").is_none() && condition(&j, "FailureTarget").is_none(), "{j:#}");
    assert_eq!(j["status"]["completedIndexes"], "0");
    let active = active_pods(&server, "per");
    assert_eq!(active.len(), 1, "{active:#?}");
    assert_eq!(active[0]["metadata"]["annotations"][INDEX], "2");
    finish(&server, &active[0], "Succeeded", 0);
    let j = eventually(&server, &["job", "per"], 30, "Failed", |j| has_condition(j, "Failed", "True"));
    for t in ["FailureTarget", "Failed"] {
        let c = condition(&j, t).unwrap();
        assert_eq!(c["status"], "True", "{t}");
        assert_eq!(c["reason"], "FailedIndexes", "{t}");
        assert_eq!(c["message"], "Job has failed indexes", "{t}");
    }
    assert_eq!(j["status"]["completedIndexes"], "0,2");
    assert_eq!(j["status"]["failedIndexes"], "1");
    assert_eq!((j["status"]["succeeded"].as_i64(), j["status"]["failed"].as_i64()), (Some(2), Some(2)));
    assert!(condition(&j, "Complete").is_none());
    assert_eq!(pods_of(&server, "per").len(), 4);
    let (ty, _, msg) = wait_event(&server, "per", "FailedIndexes");
    assert_eq!((ty.as_str(), msg.as_str()), ("Warning", "Job has failed indexes"));
}

/// Upstream maxFailedIndexes: with backoffLimitPerIndex 0 every failure
/// fails its index; the second failed index exceeds maxFailedIndexes 1, so
/// the Job fails with MaxFailedIndexesExceeded and its other pods go.
#[test]
fn max_failed_indexes_exceeded_fails_the_job() {
    let server = start("job-controller");
    let spec = json!({"completions": 4, "parallelism": 4, "completionMode": "Indexed",
        "backoffLimitPerIndex": 0, "maxFailedIndexes": 1});
    apply(&server, &job("mfi", spec));
    let pods = wait_active(&server, "mfi", 4, 30);
    finish(&server, &with_index(&pods, "0"), "Failed", 1);
    let j = eventually(&server, &["job", "mfi"], 30, "failedIndexes 0", |j| j["status"]["failedIndexes"] == "0");
    assert!(condition(&j, "Failed").is_none(), "{j:#}");
    // Index 0 is not retried: still the three other pods.
    assert_eq!(active_pods(&server, "mfi").len(), 3);
    finish(&server, &with_index(&pods, "2"), "Failed", 1);
    let j = eventually(&server, &["job", "mfi"], 30, "Failed", |j| has_condition(j, "Failed", "True"));
    for t in ["FailureTarget", "Failed"] {
        let c = condition(&j, t).unwrap();
        assert_eq!(c["reason"], "MaxFailedIndexesExceeded", "{t}");
        assert_eq!(c["message"], "Job has exceeded the specified maximal number of failed indexes", "{t}");
    }
    assert_eq!(j["status"]["failedIndexes"], "0,2");
    assert_eq!(j["status"]["active"], 0);
    // The pods of indexes 1 and 3 were deleted (and counted as failed).
    assert!(active_pods(&server, "mfi").is_empty());
    assert_eq!(j["status"]["failed"], 4);
    wait_event(&server, "mfi", "MaxFailedIndexesExceeded");
}

/// Upstream FailIndex: a pod failure policy rule with action FailIndex
/// fails the pod's index at once, whatever its backoffLimitPerIndex budget;
/// the other index succeeds and the Job fails with FailedIndexes.
#[test]
fn fail_index_rule_fails_the_index_at_once() {
    let server = start("job-controller");
    let policy = json!({"rules": [{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [42]}}]});
    let spec = json!({"completions": 2, "parallelism": 2, "completionMode": "Indexed",
        "backoffLimitPerIndex": 3, "podFailurePolicy": policy});
    apply(&server, &job("fi", spec));
    let pods = wait_active(&server, "fi", 2, 30);
    finish(&server, &with_index(&pods, "0"), "Failed", 42);
    let j = eventually(&server, &["job", "fi"], 30, "failedIndexes 0", |j| j["status"]["failedIndexes"] == "0");
    assert!(condition(&j, "Failed").is_none(), "{j:#}");
    // Not retried: only index 1 runs.
    let active = active_pods(&server, "fi");
    assert_eq!(active.len(), 1, "{active:#?}");
    assert_eq!(active[0]["metadata"]["annotations"][INDEX], "1");
    finish(&server, &active[0], "Succeeded", 0);
    let j = eventually(&server, &["job", "fi"], 30, "Failed", |j| has_condition(j, "Failed", "True"));
    assert_eq!(condition(&j, "Failed").unwrap()["reason"], "FailedIndexes");
    assert_eq!(
        (j["status"]["completedIndexes"].as_str(), j["status"]["failedIndexes"].as_str()),
        (Some("1"), Some("0"))
    );
    assert_eq!(j["status"]["failed"], 1);
    assert_eq!(pods_of(&server, "fi").len(), 2);
}

fn pods_labelled(server: &TestServer, selector: &str) -> Vec<Value> {
    get(server, &["pods", "-l", selector]).unwrap()["items"].as_array().unwrap().clone()
}

fn controlled_by(pod: &Value, uid: &str) -> bool {
    pod["metadata"]["ownerReferences"]
        .as_array()
        .is_some_and(|refs| refs.iter().any(|r| r["uid"] == uid && r["controller"] == true && r["kind"] == "Job"))
}

fn has_finalizer(pod: &Value) -> bool {
    pod["metadata"]["finalizers"].as_array().is_some_and(|f| f.iter().any(|x| x == FINALIZER))
}

/// Conformance "Jobs, orphan pods, re-adoption" ([sig-apps] Job should
/// adopt matching orphans and release non-matching pods): an orphan pod
/// matching the Job's (manual) selector is adopted — controller
/// ownerReference and tracking finalizer — a pod orphaned by removing its
/// ownerReference is re-adopted, and a pod whose labels stop matching is
/// released.
#[test]
fn job_adopts_matching_orphans_and_releases_non_matching_pods() {
    let server = start("job-controller");
    let container = json!([{"name": "c", "image": "busybox"}]);
    // An orphan that exists before the Job.
    apply(
        &server,
        &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "stray", "namespace": "default",
            "labels": {"app": "adopt-me"}}, "spec": {"restartPolicy": "Never", "containers": container}}),
    );
    apply(
        &server,
        &json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "adopter", "namespace": "default"},
            "spec": {"parallelism": 2, "completions": 2, "manualSelector": true,
                "selector": {"matchLabels": {"app": "adopt-me"}},
                "template": {"metadata": {"labels": {"app": "adopt-me"}},
                    "spec": {"restartPolicy": "Never", "containers": container}}}}),
    );
    let uid = get(&server, &["job", "adopter"]).unwrap()["metadata"]["uid"].as_str().unwrap().to_string();
    let stray = eventually(&server, &["pod", "stray"], 30, "stray adopted", |p| controlled_by(p, &uid));
    assert!(has_finalizer(&stray), "{stray:#}");
    let owner = &stray["metadata"]["ownerReferences"][0];
    assert_eq!((owner["apiVersion"].as_str(), owner["name"].as_str()), (Some("batch/v1"), Some("adopter")));
    assert_eq!(owner["blockOwnerDeletion"], true);
    // The adopted pod counts: the Job created only one more.
    eventually(&server, &["job", "adopter"], 30, "active=2", |j| j["status"]["active"] == 2);
    let pods = pods_labelled(&server, "app=adopt-me");
    assert_eq!(pods.len(), 2, "{pods:#?}");
    assert!(pods.iter().all(|p| controlled_by(p, &uid)));

    // Orphan a pod by removing its ownerReference: the Job adopts it again.
    let created = pods.iter().find(|p| p["metadata"]["name"] != "stray").unwrap();
    let created_name = created["metadata"]["name"].as_str().unwrap().to_string();
    kubectl_ok(
        &server,
        &[
            "patch",
            "pod",
            &created_name,
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/metadata/ownerReferences"}]"#,
        ],
    );
    eventually(&server, &["pod", &created_name], 30, "re-adopted", |p| controlled_by(p, &uid));

    // A pod whose labels no longer match is released (and its tracking
    // finalizer removed); the Job replaces it.
    kubectl_ok(&server, &["label", "pod", "stray", "app=gone", "--overwrite"]);
    let released =
        eventually(&server, &["pod", "stray"], 30, "released", |p| !controlled_by(p, &uid) && !has_finalizer(p));
    assert!(released["metadata"]["ownerReferences"].as_array().is_none_or(|r| r.is_empty()), "{released:#}");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let pods = pods_labelled(&server, "app=adopt-me");
        if pods.len() == 2 && pods.iter().all(|p| controlled_by(p, &uid)) {
            break;
        }
        assert!(Instant::now() < deadline, "no replacement for the released pod: {pods:#?}\n{}", server.logs());
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Upstream's orphan-pod worker: deleting a running Job (the garbage
/// collector then deletes its pods) or orphaning its pods
/// (`--cascade=orphan`) leaves no pod held by the tracking finalizer — the
/// deleted pods go away, the orphaned ones stay without the finalizer.
#[test]
fn pods_of_a_deleted_job_lose_the_tracking_finalizer() {
    let server = start("job-controller,garbage-collector-controller");
    apply(&server, &job("doomed", json!({"parallelism": 2, "completions": 2})));
    let pods = wait_active(&server, "doomed", 2, 30);
    assert!(pods.iter().all(has_finalizer), "{pods:#?}");
    kubectl_ok(&server, &["delete", "job", "doomed", "--wait=false"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !pods_of(&server, "doomed").is_empty() {
        assert!(
            Instant::now() < deadline,
            "the deleted Job's pods are still there: {:#?}\n{}",
            pods_of(&server, "doomed"),
            server.logs()
        );
        std::thread::sleep(Duration::from_millis(250));
    }

    apply(&server, &job("orphaner", json!({"parallelism": 1, "completions": 1})));
    let pod = wait_active(&server, "orphaner", 1, 30).remove(0);
    let name = pod["metadata"]["name"].as_str().unwrap().to_string();
    kubectl_ok(&server, &["delete", "job", "orphaner", "--cascade=orphan"]);
    let kept = eventually(&server, &["pod", &name], 60, "orphaned pod without finalizer", |p| !has_finalizer(p));
    assert!(kept["metadata"]["deletionTimestamp"].is_null(), "{kept:#}");
}
