//! Create, read, update and delete through the real kubectl: configmaps,
//! secrets, namespaces, pods and deployments; output formats; label,
//! annotate, patch, replace; finalizers, graceful and forced deletion,
//! dry-run. Tests named after a conformance behaviour carry its testname.

mod api_common;
mod support;

use api_common::{create, fails, manifest, ok, request};
use serde_json::Value;
use support::TestServer;

fn json(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
}

/// Conformance "ConfigMap lifecycle": create, get in every output format,
/// patch, label, annotate, replace, delete.
#[test]
fn configmap_lifecycle() {
    let s = TestServer::start();
    create(
        &s,
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  labels: {app: web}\ndata:\n  mode: fast\n",
    );

    let cm = json(&ok(&s, &["get", "configmap", "settings", "-o", "json"]));
    assert_eq!(cm["data"]["mode"], "fast");
    assert_eq!(cm["metadata"]["namespace"], "default");
    assert_eq!(cm["metadata"]["uid"].as_str().unwrap().len(), 36);
    assert!(cm["metadata"]["creationTimestamp"].as_str().unwrap().ends_with('Z'));
    assert!(cm["metadata"]["resourceVersion"].as_str().unwrap().parse::<u64>().is_ok());
    assert!(cm["metadata"].get("generation").is_none(), "configmaps have no generation: {cm}");

    assert!(ok(&s, &["get", "cm", "settings", "-o", "yaml"]).contains("mode: fast"));
    assert_eq!(ok(&s, &["get", "cm", "-o", "name"]).trim(), "configmap/settings");
    assert_eq!(ok(&s, &["get", "cm", "settings", "-o", "jsonpath={.data.mode}"]), "fast");
    let table = ok(&s, &["get", "cm"]);
    assert!(table.starts_with("NAME") && table.contains("settings"), "{table}");

    ok(&s, &["patch", "cm", "settings", "--type=merge", "-p", r#"{"data":{"mode":"slow"}}"#]);
    ok(&s, &["label", "cm", "settings", "tier=backend"]);
    ok(&s, &["annotate", "cm", "settings", "owner=team-a"]);
    let cm = json(&ok(&s, &["get", "cm", "settings", "-o", "json"]));
    assert_eq!(cm["data"]["mode"], "slow");
    assert_eq!(cm["metadata"]["labels"]["tier"], "backend");
    assert_eq!(cm["metadata"]["annotations"]["owner"], "team-a");

    // replace with the current resourceVersion succeeds; the same file again is stale.
    let mut replaced = cm.clone();
    replaced["data"]["mode"] = "replaced".into();
    let path = manifest(&s, "replace.json", &replaced.to_string());
    ok(&s, &["replace", "--validate=false", "-f", &path]);
    assert_eq!(ok(&s, &["get", "cm", "settings", "-o", "jsonpath={.data.mode}"]), "replaced");
    let stale = fails(&s, &["replace", "--validate=false", "-f", &path]);
    assert!(
        stale.contains("Error from server (Conflict)")
            && stale.contains("Operation cannot be fulfilled on configmaps \"settings\": the object has been modified; please apply your changes to the latest version and try again"),
        "{stale}"
    );

    assert!(ok(&s, &["delete", "cm", "settings"]).contains("configmap \"settings\" deleted"));
    let gone = fails(&s, &["get", "cm", "settings"]);
    assert!(gone.contains("Error from server (NotFound): configmaps \"settings\" not found"), "{gone}");
}

/// Conformance "Secret patching": secrets default to type Opaque, patch
/// and delete.
#[test]
fn secret_patching() {
    let s = TestServer::start();
    create(&s, "secret.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\ndata:\n  user: YWRtaW4=\n");
    let secret = json(&ok(&s, &["get", "secret", "creds", "-o", "json"]));
    assert_eq!(secret["type"], "Opaque");
    assert_eq!(secret["data"]["user"], "YWRtaW4=");
    ok(&s, &["patch", "secret", "creds", "-p", r#"{"data":{"pass":"c2VjcmV0"}}"#]);
    assert_eq!(ok(&s, &["get", "secret", "creds", "-o", "jsonpath={.data.pass}"]), "c2VjcmV0");
    ok(&s, &["delete", "secret", "creds"]);
    assert!(ok(&s, &["get", "secrets", "-o", "name"]).trim().is_empty());
}

/// ConfigMaps and Secrets with `immutable: true` refuse data changes with
/// upstream's message.
#[test]
fn immutable_configmaps_refuse_data_changes() {
    let s = TestServer::start();
    create(
        &s,
        "frozen.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: frozen}\nimmutable: true\ndata: {a: \"1\"}\n",
    );
    let err = fails(&s, &["patch", "cm", "frozen", "--type=merge", "-p", r#"{"data":{"a":"2"}}"#]);
    assert!(
        err.contains("ConfigMap \"frozen\" is invalid: data: Forbidden: field is immutable when `immutable` is set"),
        "{err}"
    );
    assert_eq!(ok(&s, &["get", "cm", "frozen", "-o", "jsonpath={.data.a}"]), "1");
    // Labels may still change.
    ok(&s, &["label", "cm", "frozen", "x=y"]);
}

/// Conformance "Namespace, apply finalizer to a namespace": new namespaces
/// are Active with the `kubernetes` finalizer; deleting one makes it
/// Terminating, refuses new content, and `/finalize` releases it.
#[test]
fn namespace_apply_finalizer_to_a_namespace() {
    let s = TestServer::start();
    create(&s, "ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n");
    let ns = json(&ok(&s, &["get", "namespace", "team", "-o", "json"]));
    assert_eq!(ns["status"]["phase"], "Active");
    assert_eq!(ns["spec"]["finalizers"], serde_json::json!(["kubernetes"]));
    assert_eq!(ns["metadata"]["labels"]["kubernetes.io/metadata.name"], "team");

    create(&s, "in-team.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: team}\n");
    ok(&s, &["delete", "namespace", "team", "--wait=false"]);
    let ns = json(&ok(&s, &["get", "namespace", "team", "-o", "json"]));
    assert_eq!(ns["status"]["phase"], "Terminating");
    assert!(ns["metadata"]["deletionTimestamp"].is_string());

    let path = manifest(&s, "late.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: late, namespace: team}\n");
    let refused = fails(&s, &["create", "--validate=false", "-f", &path]);
    assert!(
        refused.contains("Error from server (Forbidden)")
            && refused.contains("configmaps \"late\" is forbidden: unable to create new content in namespace team because it is being terminated"),
        "{refused}"
    );

    let mut finalized = ns.clone();
    finalized["spec"]["finalizers"] = serde_json::json!([]);
    let path = manifest(&s, "finalize.json", &finalized.to_string());
    ok(&s, &["replace", "--raw", "/api/v1/namespaces/team/finalize", "-f", &path]);
    let gone = fails(&s, &["get", "namespace", "team"]);
    assert!(gone.contains("namespaces \"team\" not found"), "{gone}");
}

/// The system namespaces exist from the start; writes into a missing
/// namespace are 404; `default` may not be deleted.
#[test]
fn system_namespaces_exist_and_are_protected() {
    let s = TestServer::start();
    let names = ok(&s, &["get", "namespaces", "-o", "name"]);
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert!(names.contains(&format!("namespace/{ns}")), "{names}");
    }
    let err = fails(&s, &["delete", "namespace", "default"]);
    assert!(err.contains("namespaces \"default\" is forbidden: this namespace may not be deleted"), "{err}");
    let path = manifest(&s, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: nowhere}\n");
    let err = fails(&s, &["create", "--validate=false", "-f", &path]);
    assert!(err.contains("Error from server (NotFound)") && err.contains("namespaces \"nowhere\" not found"), "{err}");
}

/// Pods get upstream's defaults and stay Pending without a scheduler; an
/// unscheduled pod is removed at once, a scheduled one waits for its
/// grace period unless forced with `--grace-period=0 --force`.
#[test]
fn pods_are_defaulted_and_deleted_gracefully_or_forced() {
    let s = TestServer::start();
    ok(&s, &["run", "web", "--image=nginx"]);
    let pod = json(&ok(&s, &["get", "pod", "web", "-o", "json"]));
    assert_eq!(pod["status"]["phase"], "Pending");
    assert_eq!(pod["status"]["qosClass"], "BestEffort");
    assert_eq!(pod["metadata"]["generation"], 1);
    let spec = &pod["spec"];
    assert_eq!(spec["restartPolicy"], "Always");
    assert_eq!(spec["dnsPolicy"], "ClusterFirst");
    assert_eq!(spec["terminationGracePeriodSeconds"], 30);
    assert_eq!(spec["schedulerName"], "default-scheduler");
    assert_eq!(spec["containers"][0]["imagePullPolicy"], "Always");
    assert_eq!(spec["containers"][0]["terminationMessagePath"], "/dev/termination-log");
    ok(&s, &["delete", "pod", "web", "--wait=false"]);
    assert!(fails(&s, &["get", "pod", "web"]).contains("pods \"web\" not found"));

    create(
        &s,
        "bound.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: bound}\nspec:\n  nodeName: node-1\n  containers: [{name: c, image: 'nginx:1.27'}]\n",
    );
    ok(&s, &["delete", "pod", "bound", "--wait=false"]);
    let pod = json(&ok(&s, &["get", "pod", "bound", "-o", "json"]));
    assert_eq!(pod["metadata"]["deletionGracePeriodSeconds"], 30);
    assert!(pod["metadata"]["deletionTimestamp"].is_string());
    ok(&s, &["delete", "pod", "bound", "--grace-period=0", "--force"]);
    assert!(fails(&s, &["get", "pod", "bound"]).contains("pods \"bound\" not found"));
}

/// Deployments are stored as objects (no controllers yet); generation
/// counts spec changes only.
#[test]
fn deployments_track_generation_on_spec_changes() {
    let s = TestServer::start();
    create(
        &s,
        "deploy.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, labels: {app: web}}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: c, image: 'nginx:1.27'}]}\n",
    );
    let gen = |s: &TestServer| ok(s, &["get", "deploy", "web", "-o", "jsonpath={.metadata.generation}"]);
    assert_eq!(gen(&s), "1");
    ok(&s, &["label", "deploy", "web", "tier=front"]);
    assert_eq!(gen(&s), "1", "a label change is not a spec change");
    ok(&s, &["patch", "deploy", "web", "-p", r#"{"spec":{"replicas":3}}"#]);
    assert_eq!(gen(&s), "2");
    assert_eq!(ok(&s, &["get", "deploy", "-o", "name"]).trim(), "deployment.apps/web");
    ok(&s, &["delete", "deploy", "web"]);
    assert!(ok(&s, &["get", "deploy", "-o", "name"]).trim().is_empty());
}

/// Objects with finalizers get a deletionTimestamp and stay until the last
/// finalizer is removed; `--cascade=foreground|orphan` add upstream's
/// finalizers.
#[test]
fn delete_waits_for_finalizers_and_records_propagation() {
    let s = TestServer::start();
    create(
        &s,
        "held.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  finalizers: [example.com/hold]\n",
    );
    ok(&s, &["delete", "cm", "held", "--wait=false"]);
    let cm = json(&ok(&s, &["get", "cm", "held", "-o", "json"]));
    assert!(cm["metadata"]["deletionTimestamp"].is_string(), "{cm}");
    assert_eq!(cm["metadata"]["deletionGracePeriodSeconds"], 0);
    ok(&s, &["patch", "cm", "held", "--type=merge", "-p", r#"{"metadata":{"finalizers":null}}"#]);
    assert!(fails(&s, &["get", "cm", "held"]).contains("not found"));

    create(&s, "fg.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fg}\n");
    ok(&s, &["delete", "cm", "fg", "--cascade=foreground", "--wait=false"]);
    assert_eq!(ok(&s, &["get", "cm", "fg", "-o", "jsonpath={.metadata.finalizers}"]), r#"["foregroundDeletion"]"#);
    create(&s, "orphan.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: orphan}\n");
    ok(&s, &["delete", "cm", "orphan", "--cascade=orphan", "--wait=false"]);
    assert_eq!(ok(&s, &["get", "cm", "orphan", "-o", "jsonpath={.metadata.finalizers}"]), r#"["orphan"]"#);
}

/// Conformance "Kubectl, server-side dry-run Pod": dry-run creates and
/// patches answer with the would-be object and store nothing.
#[test]
fn kubectl_server_side_dry_run_pod() {
    let s = TestServer::start();
    let out = ok(&s, &["run", "dry", "--image=nginx:1.27", "--dry-run=server", "-o", "json"]);
    assert_eq!(json(&out)["spec"]["containers"][0]["image"], "nginx:1.27");
    assert!(fails(&s, &["get", "pod", "dry"]).contains("not found"));

    ok(&s, &["run", "real", "--image=nginx:1.27"]);
    let patched = ok(
        &s,
        &[
            "patch",
            "pod",
            "real",
            "--dry-run=server",
            "-o",
            "jsonpath={.spec.containers[0].image}",
            "-p",
            r#"{"spec":{"containers":[{"name":"real","image":"nginx:1.28"}]}}"#,
        ],
    );
    assert_eq!(patched, "nginx:1.28");
    assert_eq!(ok(&s, &["get", "pod", "real", "-o", "jsonpath={.spec.containers[0].image}"]), "nginx:1.27");
}

/// The delete of a kind that does not return deleted objects answers a
/// Status of success naming the object.
#[test]
fn deleting_a_configmap_answers_a_success_status() {
    let s = TestServer::start();
    create(&s, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n");
    let reply = request(&s, "DELETE", "/api/v1/namespaces/default/configmaps/x", &[], b"");
    assert_eq!(reply.status, 200);
    let status = reply.json();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["status"], "Success");
    assert_eq!(status["details"]["name"], "x");
    assert_eq!(status["details"]["kind"], "configmaps");
}

/// Client-side `kubectl apply`: create, then unchanged, then a strategic
/// merge patch that removes a field dropped from the manifest.
#[test]
fn kubectl_apply_creates_then_patches() {
    let s = TestServer::start();
    let first = manifest(
        &s,
        "v1.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: applied}\ndata: {a: \"1\", b: \"2\"}\n",
    );
    assert!(ok(&s, &["apply", "--validate=false", "-f", &first]).contains("configmap/applied created"));
    assert!(ok(&s, &["apply", "--validate=false", "-f", &first]).contains("configmap/applied unchanged"));
    let second =
        manifest(&s, "v2.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: applied}\ndata: {a: \"1\"}\n");
    assert!(ok(&s, &["apply", "--validate=false", "-f", &second]).contains("configmap/applied configured"));
    assert_eq!(ok(&s, &["get", "cm", "applied", "-o", "jsonpath={.data}"]), r#"{"a":"1"}"#);
}

/// `kubectl create … --dry-run=client -o yaml` output carries
/// `creationTimestamp: null` in every template and `status: {}`, as Go
/// serializes them, and the server's objects read the same way, so applying
/// such a manifest twice is `unchanged` the second time. (The top-level
/// `metadata.creationTimestamp: null` of that output is dropped here: it
/// differs from the live timestamp, and upstream's kubectl reports
/// `configured` for it on every apply, kubernetes/kubernetes#66450.)
#[test]
fn generated_manifests_apply_unchanged_the_second_time() {
    let s = TestServer::start();
    let generated = [
        ("deployment.apps/web", vec!["create", "deployment", "web", "--image=nginx:1.27", "--replicas=2"]),
        ("job.batch/once", vec!["create", "job", "once", "--image=busybox"]),
        ("cronjob.batch/tick", vec!["create", "cronjob", "tick", "--image=busybox", "--schedule=*/5 * * * *"]),
        ("service/svc", vec!["create", "service", "clusterip", "svc", "--tcp=80:8080"]),
    ];
    for (object, args) in generated {
        let mut args = args.clone();
        args.extend(["--dry-run=client", "-o", "yaml"]);
        let yaml = ok(&s, &args);
        assert!(yaml.contains("status:"), "{yaml}");
        let yaml = yaml.replacen("metadata:\n  creationTimestamp: null\n", "metadata:\n", 1);
        let file = manifest(&s, &format!("{}.yaml", object.replace('/', "-")), &yaml);
        assert!(ok(&s, &["apply", "-f", &file]).contains(&format!("{object} created")));
        let again = ok(&s, &["apply", "-f", &file]);
        assert!(again.contains(&format!("{object} unchanged")), "{yaml}\n{again}");
    }
    // The stored objects read like upstream's: the template's metadata and
    // the status are there, and nobody owns the null timestamp.
    let d = serde_json::from_str::<serde_json::Value>(&ok(&s, &["get", "deployment", "web", "-o", "json"])).unwrap();
    let template_meta = d["spec"]["template"]["metadata"].as_object().unwrap();
    assert_eq!(template_meta.get("creationTimestamp"), Some(&serde_json::Value::Null));
    assert_eq!(d["status"], serde_json::json!({}));
    assert!(!d["metadata"]["managedFields"].to_string().contains("f:creationTimestamp"));
}
