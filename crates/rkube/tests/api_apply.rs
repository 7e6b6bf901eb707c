//! Server-side apply and managedFields through the real kubectl:
//! `apply --server-side` create, unchanged re-apply, conflicts with another
//! field manager, `--force-conflicts`, removal of fields dropped from the
//! manifest, `--show-managed-fields`, and the Update entries every other
//! write records. Expected values are upstream's (Kubernetes 1.33).

mod api_common;
mod support;

use api_common::{create, kubectl_stdin, ok, request};
use serde_json::Value;
use support::TestServer;

fn json(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
}

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
    tier: front
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
        ports:
        - containerPort: 80
";

/// `kubectl apply --server-side -f -` with `yaml`; (success, stdout, stderr).
fn ssa(s: &TestServer, yaml: &str, extra: &[&str]) -> (bool, String, String) {
    let mut args = vec!["apply", "--server-side", "-f", "-"];
    args.extend_from_slice(extra);
    let out = kubectl_stdin(s, &args, yaml);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn get_deploy(s: &TestServer) -> Value {
    json(&ok(s, &["get", "deployment", "web", "-o", "json", "--show-managed-fields"]))
}

fn entry<'a>(obj: &'a Value, manager: &str) -> Option<&'a Value> {
    obj["metadata"]["managedFields"].as_array()?.iter().find(|e| e["manager"] == manager)
}

#[test]
fn server_side_apply_create_reapply_conflict_force_and_prune() {
    let s = TestServer::start();

    let (okay, stdout, stderr) = ssa(&s, DEPLOYMENT, &[]);
    assert!(okay, "create-on-apply failed: {stderr}\n--- rkube stderr ---\n{}", s.logs());
    assert_eq!(stdout.trim(), "deployment.apps/web serverside-applied");

    let d = get_deploy(&s);
    assert_eq!(d["spec"]["replicas"], 2);
    assert_eq!(d["metadata"]["uid"].as_str().unwrap().len(), 36);
    let applied = entry(&d, "kubectl").unwrap_or_else(|| panic!("no kubectl entry: {d}"));
    assert_eq!(applied["operation"], "Apply");
    assert_eq!(applied["apiVersion"], "apps/v1");
    assert_eq!(applied["fieldsType"], "FieldsV1");
    assert!(applied["time"].as_str().unwrap().ends_with('Z'));
    let f = &applied["fieldsV1"];
    assert_eq!(f["f:spec"]["f:replicas"], serde_json::json!({}));
    assert_eq!(f["f:metadata"]["f:labels"]["f:tier"], serde_json::json!({}));
    let nginx = &f["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"nginx\"}"];
    assert_eq!(nginx["."], serde_json::json!({}), "{f}");
    assert_eq!(nginx["f:image"], serde_json::json!({}));
    assert!(nginx["f:ports"]["k:{\"containerPort\":80,\"protocol\":\"TCP\"}"].is_object(), "{f}");
    assert!(f.get("f:status").is_none() && f["f:metadata"].get("f:name").is_none(), "{f}");

    // Unchanged re-apply: no write.
    let rv = d["metadata"]["resourceVersion"].clone();
    let (okay, stdout, stderr) = ssa(&s, DEPLOYMENT, &[]);
    assert!(okay, "{stderr}");
    assert_eq!(stdout.trim(), "deployment.apps/web serverside-applied");
    assert_eq!(get_deploy(&s)["metadata"]["resourceVersion"], rv);

    // Another manager changes replicas; applying the old value conflicts.
    ok(
        &s,
        &["patch", "deployment", "web", "--type", "merge", "-p", r#"{"spec":{"replicas":5}}"#, "--field-manager=other"],
    );
    let d = get_deploy(&s);
    let other = entry(&d, "other").unwrap_or_else(|| panic!("no entry for other: {d}"));
    assert_eq!(other["operation"], "Update");
    assert_eq!(other["fieldsV1"], serde_json::json!({"f:spec": {"f:replicas": {}}}));

    let (okay, _, stderr) = ssa(&s, DEPLOYMENT, &[]);
    assert!(!okay, "conflicting apply should fail");
    assert!(
        stderr.contains(r#"Apply failed with 1 conflict: conflict with "other" using apps/v1: .spec.replicas"#),
        "{stderr}"
    );
    assert_eq!(get_deploy(&s)["spec"]["replicas"], 5);

    // --force-conflicts takes the field.
    let (okay, _, stderr) = ssa(&s, DEPLOYMENT, &["--force-conflicts"]);
    assert!(okay, "{stderr}");
    let d = get_deploy(&s);
    assert_eq!(d["spec"]["replicas"], 2);
    assert!(entry(&d, "other").is_none(), "other lost its only field: {d}");

    // Fields dropped from the manifest are removed.
    let pruned = DEPLOYMENT.replace("    tier: front\n", "");
    let (okay, _, stderr) = ssa(&s, &pruned, &[]);
    assert!(okay, "{stderr}");
    let d = get_deploy(&s);
    assert_eq!(d["metadata"]["labels"], serde_json::json!({"app": "web"}));
    assert!(entry(&d, "kubectl").unwrap()["fieldsV1"]["f:metadata"]["f:labels"].get("f:tier").is_none());

    // A status write is recorded with its subresource.
    ok(
        &s,
        &[
            "patch",
            "deployment",
            "web",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"replicas":7}}"#,
            "--field-manager=ctl",
        ],
    );
    let d = get_deploy(&s);
    let status = entry(&d, "ctl").unwrap_or_else(|| panic!("{d}"));
    assert_eq!(status["subresource"], "status");
    assert_eq!(status["fieldsV1"], serde_json::json!({"f:status": {"f:replicas": {}}}));

    // Managed fields are hidden unless asked for.
    let plain = json(&ok(&s, &["get", "deployment", "web", "-o", "json"]));
    assert!(plain["metadata"].get("managedFields").is_none(), "{plain}");
    let yaml = ok(&s, &["get", "deployment", "web", "-o", "yaml", "--show-managed-fields"]);
    assert!(yaml.contains("manager: kubectl") && yaml.contains("operation: Apply"), "{yaml}");
}

#[test]
fn writes_record_update_managers() {
    let s = TestServer::start();
    create(&s, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: fast\n");
    ok(&s, &["label", "configmap", "settings", "team=a"]);
    let cm = json(&ok(&s, &["get", "configmap", "settings", "-o", "json", "--show-managed-fields"]));
    let created = entry(&cm, "kubectl-create").unwrap_or_else(|| panic!("{cm}"));
    assert_eq!(created["operation"], "Update");
    assert_eq!(created["apiVersion"], "v1");
    assert_eq!(created["fieldsV1"], serde_json::json!({"f:data": {".": {}, "f:mode": {}}}));
    let labeled = entry(&cm, "kubectl-label").unwrap_or_else(|| panic!("{cm}"));
    assert_eq!(labeled["fieldsV1"], serde_json::json!({"f:metadata": {"f:labels": {".": {}, "f:team": {}}}}));

    // Apply of a field another manager set with the same value: shared, no conflict.
    let (okay, _, stderr) = ssa(
        &s,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: fast\n",
        &["--field-manager=tool"],
    );
    assert!(okay, "{stderr}");
    let cm = json(&ok(&s, &["get", "configmap", "settings", "-o", "json", "--show-managed-fields"]));
    assert_eq!(entry(&cm, "tool").unwrap()["fieldsV1"], serde_json::json!({"f:data": {"f:mode": {}}}));
    assert_eq!(
        entry(&cm, "kubectl-create").unwrap()["fieldsV1"],
        serde_json::json!({"f:data": {".": {}, "f:mode": {}}})
    );
}

#[test]
fn apply_patch_requires_field_manager_and_creates_from_yaml() {
    let s = TestServer::start();
    let path = "/api/v1/namespaces/default/configmaps/raw";
    let body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: raw\ndata:\n  k: v\n";
    let ct = [("Content-Type", "application/apply-patch+yaml")];
    let r = request(&s, "PATCH", path, &ct, body);
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(
        r.json()["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );

    let r = request(&s, "PATCH", &format!("{path}?fieldManager=raw-tool&dryRun=All"), &ct, body);
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(request(&s, "GET", path, &[], b"").status, 404, "dry run stores nothing");

    let r = request(&s, "PATCH", &format!("{path}?fieldManager=raw-tool"), &ct, body);
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.json()["data"]["k"], "v");
    let r = request(&s, "PATCH", &format!("{path}?fieldManager=raw-tool"), &ct, body);
    assert_eq!(r.status, 200, "{}", r.body);

    let wrong = b"apiVersion: v1\nkind: Secret\nmetadata:\n  name: raw\n";
    let r = request(&s, "PATCH", &format!("{path}?fieldManager=raw-tool"), &ct, wrong);
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["message"], "invalid object type: /v1, Kind=Secret");

    let merge = [("Content-Type", "application/merge-patch+json")];
    let r = request(&s, "PATCH", &format!("{path}?force=true"), &merge, b"{}");
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(
        r.json()["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
    );
}

/// Migration from client-side to server-side apply: another field manager
/// conflicts with `kubectl-client-side-apply`; `kubectl` itself takes over
/// fields still at their last-applied value and the annotation follows.
#[test]
fn server_side_apply_after_client_side_apply() {
    let s = TestServer::start();
    let out = kubectl_stdin(&s, &["apply", "-f", "-"], DEPLOYMENT);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let d = get_deploy(&s);
    assert_eq!(entry(&d, "kubectl-client-side-apply").unwrap()["operation"], "Update");

    let scaled = DEPLOYMENT.replace("replicas: 2", "replicas: 3");
    let (okay, _, stderr) = ssa(&s, &scaled, &["--field-manager=tool"]);
    assert!(!okay, "conflicting apply should fail");
    assert!(
        stderr.contains(
            r#"Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas"#
        ),
        "{stderr}"
    );

    let (okay, _, stderr) = ssa(&s, &scaled, &[]);
    assert!(okay, "{stderr}\n--- rkube stderr ---\n{}", s.logs());
    let d = get_deploy(&s);
    assert_eq!(d["spec"]["replicas"], 3);
    let last = d["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
        .as_str()
        .unwrap_or_else(|| panic!("{d}"));
    assert_eq!(json(last)["spec"]["replicas"], 3);
    assert_eq!(d["metadata"]["labels"], serde_json::json!({"app": "web", "tier": "front"}));
    assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"], "IfNotPresent");
    // kubectl migrated the client-side manager's fields to its own entry.
    assert!(entry(&d, "kubectl-client-side-apply").is_none(), "{d}");
    assert_eq!(entry(&d, "kubectl").unwrap()["fieldsV1"]["f:spec"]["f:replicas"], serde_json::json!({}));

    // Once migrated, re-applying the same manifest changes nothing.
    let (okay, _, stderr) = ssa(&s, &scaled, &[]);
    assert!(okay, "{stderr}");
    assert_eq!(get_deploy(&s)["metadata"]["resourceVersion"], d["metadata"]["resourceVersion"]);
}
