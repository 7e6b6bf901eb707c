//! Pod and workload spec validation through the real kubectl: an invalid
//! Pod or Deployment is refused with upstream's 422 and kubectl prints
//! `The <Kind> "<name>" is invalid:` with upstream's field paths and
//! messages; pod updates may only change images and a few other fields.
//! Probes, volumes, security contexts and scheduling fields of pods; the
//! StatefulSet, DaemonSet, Job and CronJob rules (update strategies, the
//! StatefulSet update rule, generated Job selectors, cron schedules and time
//! zones); and the upstream defaults `kubectl get` shows.

mod api_common;
mod support;

use api_common::{apply, apply_fails, fails, ok};
use support::TestServer;

#[test]
fn invalid_pods_are_refused_with_upstreams_messages() {
    let s = TestServer::start();
    let err = apply_fails(&s, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers: []\n");
    assert!(err.contains("The Pod \"x\" is invalid: spec.containers: Required value"), "{err}");

    let err = apply_fails(
        &s,
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  restartPolicy: Sometimes\n  containers:\n  - name: c\n    image: nginx\n    ports:\n    - containerPort: 70000\n  - name: c\n    image: nginx\n",
    );
    assert!(err.contains("The Pod \"x\" is invalid: \n"), "{err}");
    for line in [
        "* spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
        "* spec.containers[1].name: Duplicate value: \"c\"",
        "* spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
    ] {
        assert!(err.contains(line), "missing {line:?} in:\n{err}");
    }
    let err = fails(&s, &["get", "pod", "x"]);
    assert!(err.contains("NotFound") || err.contains("not found"), "{err}");
}

#[test]
fn pod_updates_may_only_change_images_and_a_few_fields() {
    let s = TestServer::start();
    let pod =
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: nginx:1.27\n";
    apply(&s, pod);
    apply(&s, &pod.replace("nginx:1.27", "nginx:1.28"));
    assert_eq!(ok(&s, &["get", "pod", "p", "-o", "jsonpath={.spec.containers[0].image}"]), "nginx:1.28");
    let err = apply_fails(&s, &format!("{pod}    env:\n    - name: A\n      value: b\n").replace("1.27", "1.28"));
    assert!(
        err.contains("The Pod \"p\" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`"),
        "{err}"
    );
}

#[test]
fn deployments_need_a_selector_matching_the_template() {
    let s = TestServer::start();
    let d = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  selector:\n    matchLabels:\n      app: x\n  template:\n    metadata:\n      labels:\n        app: \"y\"\n    spec:\n      containers:\n      - name: c\n        image: nginx\n";
    let err = apply_fails(&s, d);
    assert!(
        err.contains("The Deployment \"d\" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"y\"}: `selector` does not match template `labels`"),
        "{err}"
    );
    let good = d.replace("app: \"y\"", "app: x");
    apply(&s, &good);
    let err = apply_fails(&s, &good.replace("app: x", "app: z"));
    assert!(err.contains("The Deployment \"d\" is invalid: spec.selector: Invalid value:"), "{err}");
    assert!(err.contains("field is immutable"), "{err}");
}

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).expect("kubectl printed JSON")
}

#[test]
fn probes_volumes_and_scheduling_fields_are_validated() {
    let s = TestServer::start();
    // Two handlers on one probe: upstream reports the second one.
    let two_handlers = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers:\n  - name: c\n    image: nginx\n    livenessProbe:\n      exec:\n        command: [\"true\"]\n      httpGet:\n        port: 80\n";
    let err = apply_fails(&s, two_handlers);
    assert!(
        err.contains("The Pod \"x\" is invalid: spec.containers[0].livenessProbe.httpGet: Forbidden: may not specify more than 1 handler type"),
        "{err}"
    );

    let many = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: many\nspec:\n  volumes:\n  - name: v\n    emptyDir: {}\n    hostPath:\n      path: /x\n  containers:\n  - name: c\n    image: nginx\n    readinessProbe:\n      tcpSocket:\n        port: 70000\n    startupProbe:\n      exec:\n        command: [\"true\"]\n      successThreshold: 2\n    securityContext:\n      runAsUser: -1\n    resources:\n      limits:\n        memroy: 1Gi\n  tolerations:\n  - key: k\n    operator: Exists\n    value: v\n  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms: []\n  topologySpreadConstraints:\n  - maxSkew: 0\n    topologyKey: zone\n    whenUnsatisfiable: DoNotSchedule\n";
    let err = apply_fails(&s, many);
    for line in [
        "* spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type",
        "* spec.containers[0].securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive",
        "* spec.containers[0].resources.limits[memroy]: Invalid value: \"memroy\": must be a standard resource for containers",
        "* spec.containers[0].readinessProbe.tcpSocket.port: Invalid value: 70000: must be between 1 and 65535, inclusive",
        "* spec.containers[0].startupProbe.successThreshold: Invalid value: 2: must be 1",
        "* spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value: must have at least one node selector term",
        "* spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
        "* spec.tolerations[0].operator: Invalid value: core.Toleration{Key:\"k\", Operator:\"Exists\", Value:\"v\", Effect:\"\", TolerationSeconds:(*int64)(nil)}: value must be empty when `operator` is 'Exists'",
    ] {
        assert!(err.contains(line), "missing {line:?} in:\n{err}");
    }

    // A string that is not a quantity fails decoding, as upstream's 400.
    let bad_quantity = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: q\nspec:\n  containers:\n  - name: c\n    image: nginx\n    resources:\n      limits:\n        cpu: abc\n";
    let err = apply_fails(&s, bad_quantity);
    assert!(
        err.contains("Error from server (BadRequest)")
            && err.contains("Pod in version \"v1\" cannot be handled as a Pod: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
        "{err}"
    );

    // A valid pod gets upstream's probe and volume defaults.
    let good = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: z\nspec:\n  schedulingGates:\n  - name: wait\n  volumes:\n  - name: data\n    hostPath:\n      path: /data\n  - name: scratch\n  containers:\n  - name: c\n    image: nginx:1.27\n    resources:\n      limits:\n        cpu: \"0.5\"\n        memory: 1024Mi\n    volumeMounts:\n    - name: data\n      mountPath: /data\n    livenessProbe:\n      httpGet:\n        port: 80\n";
    apply(&s, good);
    let pod = json(&ok(&s, &["get", "pod", "z", "-o", "json"]));
    let probe = &pod["spec"]["containers"][0]["livenessProbe"];
    assert_eq!(probe["httpGet"]["path"], "/");
    assert_eq!(probe["httpGet"]["scheme"], "HTTP");
    assert_eq!(probe["timeoutSeconds"], 1);
    assert_eq!(probe["periodSeconds"], 10);
    assert_eq!(probe["successThreshold"], 1);
    assert_eq!(probe["failureThreshold"], 3);
    assert_eq!(pod["spec"]["volumes"][0]["hostPath"]["type"], "");
    // A volume naming no source is an emptyDir; a limit without a request
    // is also the request (pods only).
    assert_eq!(pod["spec"]["volumes"][1], serde_json::json!({"name": "scratch", "emptyDir": {}}));
    // Quantities read back canonical, as upstream writes them.
    let canonical = serde_json::json!({"cpu": "500m", "memory": "1Gi"});
    assert_eq!(pod["spec"]["containers"][0]["resources"]["limits"], canonical);
    assert_eq!(pod["spec"]["containers"][0]["resources"]["requests"], canonical);

    // Scheduling gates may be removed but not added.
    let err = fails(
        &s,
        &[
            "patch",
            "pod",
            "z",
            "--type=json",
            "-p",
            r#"[{"op":"add","path":"/spec/schedulingGates/-","value":{"name":"more"}}]"#,
        ],
    );
    assert!(
        err.contains("The Pod \"z\" is invalid: spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new scheduling gate 'more'"),
        "{err}"
    );
    ok(&s, &["patch", "pod", "z", "--type=json", "-p", r#"[{"op":"remove","path":"/spec/schedulingGates"}]"#]);
    assert_eq!(ok(&s, &["get", "pod", "z", "-o", "jsonpath={.spec.schedulingGates}"]), "");
}

#[test]
fn statefulsets_and_daemonsets_follow_upstream_rules() {
    let s = TestServer::start();
    let sts = "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\nspec:\n  serviceName: db\n  selector:\n    matchLabels:\n      app: db\n  template:\n    metadata:\n      labels:\n        app: db\n    spec:\n      containers:\n      - name: c\n        image: postgres\n";
    apply(&s, sts);
    let got = json(&ok(&s, &["get", "sts", "db", "-o", "json"]));
    assert_eq!(got["spec"]["podManagementPolicy"], "OrderedReady");
    assert_eq!(got["spec"]["updateStrategy"]["type"], "RollingUpdate");
    assert_eq!(got["spec"]["updateStrategy"]["rollingUpdate"]["partition"], 0);
    assert_eq!(got["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(got["spec"]["persistentVolumeClaimRetentionPolicy"]["whenDeleted"], "Retain");
    assert_eq!(got["spec"]["persistentVolumeClaimRetentionPolicy"]["whenScaled"], "Retain");

    // Only some fields may change.
    ok(&s, &["patch", "sts", "db", "-p", r#"{"spec":{"replicas":3}}"#]);
    let err = fails(&s, &["patch", "sts", "db", "-p", r#"{"spec":{"serviceName":"other"}}"#]);
    assert!(
        err.contains("The StatefulSet \"db\" is invalid: spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"),
        "{err}"
    );
    let err = apply_fails(&s, &sts.replace("name: db\nspec:\n", "name: db2\nspec:\n  podManagementPolicy: Random\n"));
    assert!(
        err.contains("The StatefulSet \"db2\" is invalid: spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'"),
        "{err}"
    );

    let ds = sts.replace("kind: StatefulSet", "kind: DaemonSet").replace("  serviceName: db\n", "");
    apply(&s, &ds);
    let got = json(&ok(&s, &["get", "ds", "db", "-o", "json"]));
    assert_eq!(got["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"], 1);
    assert_eq!(got["spec"]["updateStrategy"]["rollingUpdate"]["maxSurge"], 0);
    let err =
        fails(&s, &["patch", "ds", "db", "-p", r#"{"spec":{"updateStrategy":{"rollingUpdate":{"maxSurge":1}}}}"#]);
    assert!(
        err.contains("The DaemonSet \"db\" is invalid: spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: intstr.IntOrString{Type:0, IntVal:1, StrVal:\"\"}: may not be set when maxUnavailable is non-zero"),
        "{err}"
    );
}

#[test]
fn jobs_get_a_generated_selector_and_an_immutable_template() {
    let s = TestServer::start();
    ok(&s, &["create", "job", "pi", "--image=busybox", "--", "true"]);
    let job = json(&ok(&s, &["get", "job", "pi", "-o", "json"]));
    let uid = job["metadata"]["uid"].as_str().expect("a uid");
    assert_eq!(job["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"], uid);
    let labels = &job["spec"]["template"]["metadata"]["labels"];
    assert_eq!(labels["batch.kubernetes.io/controller-uid"], uid);
    assert_eq!(labels["controller-uid"], uid);
    assert_eq!(labels["batch.kubernetes.io/job-name"], "pi");
    assert_eq!(labels["job-name"], "pi");
    assert_eq!(job["spec"]["manualSelector"], false);
    assert_eq!(job["spec"]["completionMode"], "NonIndexed");
    assert_eq!(job["spec"]["backoffLimit"], 6);

    let err = fails(
        &s,
        &[
            "patch",
            "job",
            "pi",
            "--type=json",
            "-p",
            r#"[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"alpine"}]"#,
        ],
    );
    assert!(err.contains("The Job \"pi\" is invalid: spec.template: Invalid value:"), "{err}");
    assert!(err.contains("field is immutable"), "{err}");

    let always = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: bad\nspec:\n  parallelism: 2\n  completionMode: Indexed\n  template:\n    spec:\n      containers:\n      - name: c\n        image: busybox\n";
    let err = apply_fails(&s, always);
    for line in [
        "* spec.completions: Required value: when completion mode is Indexed",
        "* spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
    ] {
        assert!(err.contains(line), "missing {line:?} in:\n{err}");
    }
}

#[test]
fn cronjob_schedules_and_time_zones_are_checked() {
    let s = TestServer::start();
    let cj = "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: c\nspec:\n  schedule: \"*/5 * * * *\"\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: Never\n          containers:\n          - name: c\n            image: busybox\n";
    let err = apply_fails(&s, &cj.replace("*/5 * * * *", "every minute"));
    assert!(
        err.contains("The CronJob \"c\" is invalid: spec.schedule: Invalid value: \"every minute\": expected exactly 5 fields, found 2: [every minute]"),
        "{err}"
    );
    let err = apply_fails(&s, &cj.replace("*/5 * * * *", "TZ=UTC 0 * * * *"));
    assert!(
        err.contains("spec.schedule: Invalid value: \"TZ=UTC 0 * * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead"),
        "{err}"
    );
    let err = apply_fails(&s, &cj.replace("spec:\n  schedule", "spec:\n  timeZone: Mars/Olympus\n  schedule"));
    assert!(
        err.contains("The CronJob \"c\" is invalid: spec.timeZone: Invalid value: \"Mars/Olympus\": unknown time zone Mars/Olympus"),
        "{err}"
    );

    apply(&s, &cj.replace("spec:\n  schedule", "spec:\n  timeZone: Europe/Berlin\n  schedule"));
    let got = json(&ok(&s, &["get", "cronjob", "c", "-o", "json"]));
    assert_eq!(got["spec"]["concurrencyPolicy"], "Allow");
    assert_eq!(got["spec"]["suspend"], false);
    assert_eq!(got["spec"]["successfulJobsHistoryLimit"], 3);
    assert_eq!(got["spec"]["failedJobsHistoryLimit"], 1);
    ok(&s, &["create", "cronjob", "d", "--image=busybox", "--schedule=@hourly"]);
    let err = fails(&s, &["patch", "cronjob", "d", "-p", r#"{"spec":{"concurrencyPolicy":"Sometimes"}}"#]);
    assert!(
        err.contains("The CronJob \"d\" is invalid: spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\""),
        "{err}"
    );
}
