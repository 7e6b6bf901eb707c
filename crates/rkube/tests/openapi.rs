//! OpenAPI end to end: `/openapi/v3` and `/openapi/v2` on the real binary,
//! read raw and through kubectl (explain, server-side validation on
//! create, openapi-driven client-side apply).

mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use support::TestServer;

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs kubectl and insists on success; returns stdout.
fn kubectl_ok(server: &TestServer, args: &[&str]) -> String {
    let out = server.kubectl(args);
    assert!(
        out.status.success(),
        "kubectl {args:?} failed:\n{}\n--- rkube stderr ---\n{}",
        stderr(&out),
        server.logs()
    );
    stdout(&out)
}

/// kubectl 1.31 (no dispatcher), with its own cache dir.
const KUBECTL_1_31: &str = "/usr/lib/google-cloud-sdk/bin/kubectl.1.31";

fn kubectl_1_31(server: &TestServer, cache: &Path, args: &[&str]) -> Output {
    Command::new(KUBECTL_1_31)
        .arg("--kubeconfig")
        .arg(server.kubeconfig())
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run {KUBECTL_1_31}: {e}"))
}

fn get_json(server: &TestServer, path: &str) -> Value {
    let (code, body) = server.get(path);
    assert_eq!(code, 200, "GET {path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path}: not JSON ({e})"))
}

/// Every `$ref` under `root` that does not resolve to a key of `defs`.
fn unresolved(root: &Value, prefix: &str, defs: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![root];
    while let Some(v) = todo.pop() {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    match (k.as_str(), v.as_str()) {
                        ("$ref", Some(r)) => {
                            if !r.strip_prefix(prefix).is_some_and(|name| defs.get(name).is_some()) {
                                out.push(r.to_string());
                            }
                        }
                        _ => todo.push(v),
                    }
                }
            }
            Value::Array(a) => todo.extend(a),
            _ => {}
        }
    }
    out
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn openapi_documents_cover_every_served_group_version_and_resolve() {
    let server = TestServer::start();

    // Every group-version that discovery serves has a v3 document.
    let mut served = BTreeSet::new();
    for v in get_json(&server, "/api")["versions"].as_array().unwrap() {
        served.insert(format!("api/{}", v.as_str().unwrap()));
    }
    for g in get_json(&server, "/apis")["groups"].as_array().unwrap() {
        for v in g["versions"].as_array().unwrap() {
            served.insert(format!("apis/{}", v["groupVersion"].as_str().unwrap()));
        }
    }
    assert!(served.contains("api/v1") && served.contains("apis/apps/v1"), "{served:?}");
    let root = server.get_with_headers("/openapi/v3", &[("Accept", "application/json, */*")]);
    assert_eq!(root.status, 200, "{}", root.body);
    assert_eq!(root.header("content-type"), Some("application/json"));
    assert!(root.header("etag").is_some());
    let root: Value = serde_json::from_str(&root.body).unwrap();
    let paths = root["paths"].as_object().unwrap();
    for gv in &served {
        assert!(paths.contains_key(gv), "/openapi/v3 lacks {gv}: {:?}", paths.keys().collect::<Vec<_>>());
    }

    // Each document: OpenAPI 3.0 JSON, every reference resolves inside it,
    // cacheable under its hashed URL.
    for (key, entry) in paths {
        let url = entry["serverRelativeURL"].as_str().unwrap();
        assert!(url.starts_with(&format!("/openapi/v3/{key}?hash=")), "{url}");
        let resp = server.get_with_headers(url, &[("Accept", "application/json")]);
        assert_eq!(resp.status, 200, "{url}");
        assert_eq!(resp.header("cache-control"), Some("public, immutable"), "{url}");
        assert_eq!(resp.header("vary"), Some("Accept"), "{url}");
        let hash = url.split("hash=").nth(1).unwrap();
        assert_eq!(resp.header("etag"), Some(format!("\"{hash}\"").as_str()), "{url}");
        let doc: Value = serde_json::from_str(&resp.body).unwrap_or_else(|e| panic!("{url}: {e}"));
        assert_eq!(doc["openapi"], "3.0.0", "{url}");
        let missing = unresolved(&doc, "#/components/schemas/", &doc["components"]["schemas"]);
        assert!(missing.is_empty(), "{key}: unresolved {missing:?}");
    }

    // The apps/v1 patch operation that makes kubectl validate on the server.
    let apps = get_json(&server, paths["apis/apps/v1"]["serverRelativeURL"].as_str().unwrap());
    let patch = &apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
    assert_eq!(patch["operationId"], "patchAppsV1NamespacedDeployment");
    assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "Deployment");
    assert!(patch["parameters"].as_array().unwrap().iter().any(|p| p["name"] == "fieldValidation"));
    assert!(patch["requestBody"]["content"].get("application/strategic-merge-patch+json").is_some());

    // A stale hash redirects to the current one.
    let stale = server.get_with_headers("/openapi/v3/apis/apps/v1?hash=0", &[]);
    assert_eq!(stale.status, 301);
    assert_eq!(stale.header("location"), paths["apis/apps/v1"]["serverRelativeURL"].as_str());

    // Swagger 2.0 as JSON (kubectl's protobuf form is exercised by explain).
    let v2 = server.get_with_headers("/openapi/v2", &[("Accept", "application/json")]);
    assert_eq!(v2.status, 200);
    let v2: Value = serde_json::from_str(&v2.body).unwrap();
    assert_eq!(v2["swagger"], "2.0");
    let missing = unresolved(&v2, "#/definitions/", &v2["definitions"]);
    assert!(missing.is_empty(), "v2: unresolved {missing:?}");
    assert_eq!(server.get_with_headers("/openapi/v2", &[("Accept", "text/html")]).status, 406);
}

#[test]
fn kubectl_explain_prints_upstream_descriptions() {
    let server = TestServer::start();

    let pods = kubectl_ok(&server, &["explain", "pods"]);
    assert!(pods.contains("KIND:       Pod") && pods.contains("VERSION:    v1"), "{pods}");
    assert!(pods.contains("Pod is a collection of containers that can run on a host."), "{pods}");
    for field in ["apiVersion\t<string>", "metadata\t<ObjectMeta>", "spec\t<PodSpec>", "status\t<PodStatus>"] {
        assert!(pods.contains(field), "{field} missing:\n{pods}");
    }
    assert!(!pods.contains("-required-"), "no top-level field of Pod is required upstream:\n{pods}");

    let strategy = kubectl_ok(&server, &["explain", "deployment.spec.strategy"]);
    assert!(strategy.contains("GROUP:      apps") && strategy.contains("KIND:       Deployment"), "{strategy}");
    assert!(strategy.contains("FIELD: strategy <DeploymentStrategy>"), "{strategy}");
    assert!(strategy.contains("The deployment strategy to use to replace existing pods with new ones."), "{strategy}");
    assert!(strategy.contains("rollingUpdate\t<RollingUpdateDeployment>"), "{strategy}");
    assert!(strategy.contains("type\t<string>"), "{strategy}");

    let ports = kubectl_ok(&server, &["explain", "pod.spec.containers.ports", "--recursive"]);
    assert!(ports.contains("FIELD: ports <[]ContainerPort>"), "{ports}");
    assert!(ports.contains("List of ports to expose from the container."), "{ports}");
    for field in [
        "containerPort\t<integer> -required-",
        "hostIP\t<string>",
        "hostPort\t<integer>",
        "name\t<string>",
        "protocol\t<string>",
    ] {
        assert!(ports.contains(field), "{field} missing:\n{ports}");
    }

    // The v2 (protobuf) path of explain.
    let v2 = kubectl_ok(&server, &["explain", "deployment.spec.strategy", "--output=plaintext-openapiv2"]);
    assert!(v2.contains("KIND:     Deployment") && v2.contains("VERSION:  apps/v1"), "{v2}");
    assert!(v2.contains("RESOURCE: strategy <Object>"), "{v2}");
    assert!(v2.contains("rollingUpdate\t<Object>"), "{v2}");

    // kubectl 1.31 reads the same documents.
    let cache = tempfile::tempdir().unwrap();
    let out = kubectl_1_31(&server, cache.path(), &["explain", "deployment.spec.strategy.rollingUpdate"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("FIELD: rollingUpdate <RollingUpdateDeployment>"), "{}", stdout(&out));
    assert!(stdout(&out).contains("maxSurge\t<IntOrString>"), "{}", stdout(&out));

    let missing = server.kubectl(&["explain", "pods.spec.nosuchfield"]);
    assert!(!missing.status.success());
    assert!(stderr(&missing).contains("field \"nosuchfield\" does not exist"), "{}", stderr(&missing));
}

#[test]
fn kubectl_validates_on_the_server_and_applies_with_openapi_patch_metadata() {
    let server = TestServer::start();
    let dir = tempfile::tempdir().unwrap();

    // Default validation (strict): kubectl finds fieldValidation on the
    // patch operation in /openapi/v3 and leaves validation to the server.
    let good =
        write(dir.path(), "good.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: good\ndata:\n  a: b\n");
    let out = server.kubectl(&["create", "-f", &good, "-v=6"]);
    let log = stderr(&out);
    assert!(out.status.success(), "{log}");
    assert!(log.contains("fieldValidation=Strict"), "kubectl did not send fieldValidation=Strict:\n{log}");
    assert!(log.contains("/openapi/v3/api/v1?hash="), "{log}");
    assert!(!log.contains("/openapi/v2"), "no fallback to v2 expected:\n{log}");

    let bad = write(
        dir.path(),
        "bad.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\ndata:\n  a: b\nbogus: 1\n",
    );
    let out = server.kubectl(&["create", "-f", &bad]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("strict decoding error: unknown field \"bogus\""), "{}", stderr(&out));
    let cache = tempfile::tempdir().unwrap();
    let out = kubectl_1_31(&server, cache.path(), &["create", "-f", &bad]);
    assert!(stderr(&out).contains("strict decoding error: unknown field \"bogus\""), "kubectl 1.31: {}", stderr(&out));
    let out = server.kubectl(&["create", "-f", &bad, "--validate=warn"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("Warning: unknown field \"bogus\""), "{}", stderr(&out));

    // Client-side apply of an existing object: the patch is computed from
    // the v3 schemas' merge keys, so removed list entries go away.
    let v1 = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: a\n        image: nginx\n        env:\n        - {name: FOO, value: \"1\"}\n        - {name: BAR, value: \"2\"}\n      - name: b\n        image: busybox\n";
    let v2 = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: a\n        image: nginx:1.27\n        env:\n        - {name: FOO, value: \"1\"}\n";
    let f1 = write(dir.path(), "d1.yaml", v1);
    let f2 = write(dir.path(), "d2.yaml", v2);
    kubectl_ok(&server, &["apply", "-f", &f1]);
    let out = server.kubectl(&["apply", "-f", &f2, "-v=8"]);
    let log = stderr(&out);
    assert!(out.status.success(), "{log}");
    assert!(log.contains("$setElementOrder/containers"), "strategic merge patch from OpenAPI expected:\n{log}");
    assert!(!log.contains("/openapi/v2"), "no fallback to v2 expected:\n{log}");
    let containers = kubectl_ok(&server, &["get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers}"]);
    let containers: Value = serde_json::from_str(&containers).unwrap();
    let containers = containers.as_array().unwrap();
    assert_eq!(containers.len(), 1, "container b must be gone: {containers:?}");
    assert_eq!((&containers[0]["name"], &containers[0]["image"]), (&"a".into(), &"nginx:1.27".into()));
    assert_eq!(containers[0]["env"], serde_json::json!([{"name": "FOO", "value": "1"}]), "env BAR must be gone");
    let again = kubectl_ok(&server, &["apply", "-f", &f2]);
    assert!(again.contains("deployment.apps/web unchanged"), "{again}");
}
