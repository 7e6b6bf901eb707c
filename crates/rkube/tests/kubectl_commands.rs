//! kubectl commands beyond plain CRUD, through the real kubectl — 1.33 via
//! the `/usr/bin/kubectl` dispatcher and 1.31 called directly (it skips
//! the dispatcher, so it gets `--kubeconfig` and its own `--cache-dir`):
//! `edit` with `EDITOR` set to a script, `diff -f` (exit code 1 with a diff,
//! 0 without), `set image`, `wait --for=condition|delete|jsonpath`,
//! `cluster-info`, `get --sort-by|-o custom-columns|--show-labels`,
//! `delete --cascade=foreground|orphan`, `describe`, `rollout
//! history|pause|resume`, and `api-resources`/`explain`/`create`/`get`/
//! `delete` with 1.31, and the rest of issue 3's Check list with 1.31
//! (`label`, `annotate`, `scale`, `replace`, `apply`, `get -w|-A`, the
//! `create` generators). Assertions are on upstream's output. Tests named
//! after a conformance behaviour carry its testname.

mod api_common;
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use api_common::{manifest, ok, Background};
use serde_json::Value;
use support::{TestServer, KUBECTL};

/// kubectl 1.31, called without the dispatcher.
const KUBECTL_131: &str = "/usr/lib/google-cloud-sdk/bin/kubectl.1.31";

/// Both kubectl versions under test.
const KUBECTLS: [&str; 2] = [KUBECTL, KUBECTL_131];

fn json(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
}

/// `s` without ANSI colour escapes (`ESC [ ... m`).
fn strip_colours(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('\u{1b}') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        rest = rest.find('m').map_or("", |m| &rest[m + 1..]);
    }
    out.push_str(rest);
    out
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `<bin> --kubeconfig <admin> --cache-dir <per-binary cache> <args>` with
/// extra environment variables.
fn run_env(s: &TestServer, bin: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let version = Path::new(bin).file_name().unwrap().to_string_lossy().into_owned();
    let cache = s.data_dir().join(format!("cache-{version}"));
    Command::new(bin)
        .arg("--kubeconfig")
        .arg(s.kubeconfig())
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .env_remove("KUBECONFIG")
        .env_remove("KUBECTL_EXTERNAL_DIFF")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("run kubectl")
}

/// Runs `bin args`; returns stdout, panics with stderr on failure.
fn okv(s: &TestServer, bin: &str, args: &[&str]) -> String {
    ok_env(s, bin, args, &[])
}

fn ok_env(s: &TestServer, bin: &str, args: &[&str], env: &[(&str, &str)]) -> String {
    let out = run_env(s, bin, args, env);
    assert!(
        out.status.success(),
        "{bin} {args:?} failed ({}): {}\nstdout: {}\n--- rkube stderr ---\n{}",
        out.status,
        text(&out.stderr),
        text(&out.stdout),
        s.logs()
    );
    text(&out.stdout)
}

/// Runs `bin args` that must fail; returns (exit code, stdout, stderr).
fn failsv(s: &TestServer, bin: &str, args: &[&str]) -> (i32, String, String) {
    let out = run_env(s, bin, args, &[]);
    assert!(!out.status.success(), "{bin} {args:?} should have failed; stdout: {}", text(&out.stdout));
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

/// Runs `kubectl args` (1.33) after `delay` on another thread; join the
/// handle for its output.
fn later(s: &TestServer, delay: Duration, args: &[&str]) -> std::thread::JoinHandle<Output> {
    let kubeconfig = s.kubeconfig();
    let cache = s.data_dir().join("cache-later");
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    std::thread::spawn(move || {
        std::thread::sleep(delay);
        Command::new(KUBECTL)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--cache-dir")
            .arg(cache)
            .args(&args)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .output()
            .expect("run kubectl")
    })
}

fn joined_ok(h: std::thread::JoinHandle<Output>) -> String {
    let out = h.join().expect("kubectl thread");
    assert!(out.status.success(), "background kubectl failed: {}", text(&out.stderr));
    text(&out.stdout)
}

/// An executable script in the data dir (for `EDITOR`).
fn script(s: &TestServer, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = PathBuf::from(manifest(s, name, &format!("#!/bin/sh\n{body}\n")));
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod script");
    path
}

fn deployment(name: &str, image: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  labels: {{app: {name}}}
spec:
  replicas: 1
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
      - name: web
        image: {image}
"
    )
}

const POD: &str = "apiVersion: v1
kind: Pod
metadata:
  name: p
  labels: {app: p}
spec:
  containers:
  - name: c
    image: nginx
";

/// `kubectl edit` with `EDITOR` set to a `sed -i` script: the object is
/// updated (`configmap/c edited`); an editor that changes nothing cancels
/// the edit; an edit that breaks validation is refused and the object
/// stays as it was.
#[test]
fn kubectl_edit_with_an_editor_script() {
    let s = TestServer::start();
    for (i, bin) in KUBECTLS.into_iter().enumerate() {
        let name = format!("c{i}");
        okv(&s, bin, &["create", "configmap", &name, "--from-literal=greeting=hello"]);
        let sed = script(&s, "edit.sh", r#"sed -i 's/greeting: hello/greeting: edited/' "$1""#);
        let out = ok_env(&s, bin, &["edit", &format!("configmap/{name}")], &[("EDITOR", sed.to_str().unwrap())]);
        assert_eq!(out.trim(), format!("configmap/{name} edited"), "{bin}");
        assert_eq!(okv(&s, bin, &["get", "cm", &name, "-o", "jsonpath={.data.greeting}"]), "edited");

        // A second script adds a label.
        let label =
            script(&s, "label.sh", r#"sed -i 's/^  name: \(c[0-9]\)$/  name: \1\n  labels:\n    edited: "yes"/' "$1""#);
        let out = ok_env(&s, bin, &["edit", "cm", &name], &[("EDITOR", label.to_str().unwrap())]);
        assert_eq!(out.trim(), format!("configmap/{name} edited"), "{bin}");
        assert_eq!(okv(&s, bin, &["get", "cm", &name, "-o", "jsonpath={.metadata.labels.edited}"]), "yes");

        // An editor that changes nothing.
        let out = run_env(&s, bin, &["edit", "cm", &name], &[("EDITOR", "true")]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(text(&out.stderr).contains("Edit cancelled, no changes made."), "{}", text(&out.stderr));

        // An invalid edit (a bad label value): refused, nothing stored.
        let rv = okv(&s, bin, &["get", "cm", &name, "-o", "jsonpath={.metadata.resourceVersion}"]);
        let bad = script(&s, "bad.sh", r#"sed -i 's/edited: "yes"/edited: "not valid!"/' "$1""#);
        let out = run_env(&s, bin, &["edit", "cm", &name], &[("EDITOR", bad.to_str().unwrap())]);
        assert!(!out.status.success(), "{bin}: {}", text(&out.stdout));
        let err = text(&out.stderr);
        assert!(err.contains("configmaps \"") && err.contains("is invalid"), "{bin}: {err}");
        assert_eq!(okv(&s, bin, &["get", "cm", &name, "-o", "jsonpath={.metadata.resourceVersion}"]), rv);
    }
}

/// Testname: Kubectl, diff Deployment. `kubectl diff -f` answers exit
/// code 1 and a unified diff of live and merged (server-side dry-run
/// patch) when the declared object differs, and exit code 0 with no output
/// when it does not — also with `--server-side`; the dry runs store
/// nothing.
#[test]
fn kubectl_diff_deployment() {
    let s = TestServer::start();
    for (i, bin) in KUBECTLS.into_iter().enumerate() {
        let name = format!("web{i}");
        let v1 = manifest(&s, &format!("{name}-v1.yaml"), &deployment(&name, "httpd"));
        let v2 = manifest(&s, &format!("{name}-v2.yaml"), &deployment(&name, "busybox"));
        okv(&s, bin, &["apply", "-f", &v1]);

        let out = okv(&s, bin, &["diff", "-f", &v1]);
        assert_eq!(out, "", "{bin}: no difference expected");

        let (code, out, err) = failsv(&s, bin, &["diff", "-f", &v2]);
        assert_eq!(code, 1, "{bin}: {err}");
        assert!(out.contains(&format!("apps.v1.Deployment.default.{name}")), "{out}");
        assert!(out.contains("-      - image: httpd") && out.contains("+      - image: busybox"), "{out}");
        assert!(out.contains("-  generation: 1") && out.contains("+  generation: 2"), "{out}");

        // Server-side apply dry run.
        okv(&s, bin, &["apply", "--server-side", "--force-conflicts", "-f", &v1]);
        let out = okv(&s, bin, &["diff", "--server-side", "--force-conflicts", "-f", &v1]);
        assert_eq!(out, "", "{bin}: no server-side difference expected");
        let (code, out, _) = failsv(&s, bin, &["diff", "--server-side", "--force-conflicts", "-f", &v2]);
        assert_eq!(code, 1);
        assert!(out.contains("+      - image: busybox"), "{out}");

        // A diff of an object that does not exist yet shows all of it as new.
        let new = manifest(&s, "new.yaml", &deployment(&format!("new{i}"), "nginx"));
        let (code, out, _) = failsv(&s, bin, &["diff", "-f", &new]);
        assert_eq!(code, 1);
        assert!(out.contains(&format!("+  name: new{i}")), "{out}");
        failsv(&s, bin, &["get", "deploy", &format!("new{i}")]);

        let image = okv(&s, bin, &["get", "deploy", &name, "-o", "jsonpath={.spec.template.spec.containers[0].image}"]);
        assert_eq!(image, "httpd", "dry runs must not change the object");
        assert_eq!(okv(&s, bin, &["get", "deploy", &name, "-o", "jsonpath={.metadata.generation}"]), "1");
    }
}

/// `kubectl set image deployment/x c=img:2` (a strategic merge patch of the
/// pod template): `deployment.apps/x image updated`, the generation bumps;
/// an unknown container is an error.
#[test]
fn kubectl_set_image_patches_the_pod_template() {
    let s = TestServer::start();
    for (i, bin) in KUBECTLS.into_iter().enumerate() {
        let name = format!("web{i}");
        let path = manifest(&s, &format!("{name}.yaml"), &deployment(&name, "nginx:1"));
        okv(&s, bin, &["create", "-f", &path]);
        let out = okv(&s, bin, &["set", "image", &format!("deployment/{name}"), "web=nginx:2"]);
        assert_eq!(out.trim(), format!("deployment.apps/{name} image updated"));
        let d = json(&okv(&s, bin, &["get", "deploy", &name, "-o", "json"]));
        assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:2");
        assert_eq!(d["spec"]["template"]["spec"]["containers"].as_array().unwrap().len(), 1);
        assert_eq!(d["metadata"]["generation"], 2);

        // All containers at once.
        let out = okv(&s, bin, &["set", "image", &format!("deploy/{name}"), "*=nginx:3"]);
        assert_eq!(out.trim(), format!("deployment.apps/{name} image updated"));
        assert_eq!(
            okv(&s, bin, &["get", "deploy", &name, "-o", "jsonpath={.spec.template.spec.containers[0].image}"]),
            "nginx:3"
        );

        let (_, _, err) = failsv(&s, bin, &["set", "image", &format!("deployment/{name}"), "nope=nginx:2"]);
        assert!(err.contains("unable to find container named \"nope\""), "{err}");
    }
}

/// `kubectl wait --for=condition=...` returns `condition met` once the
/// condition is set through the status subresource (a Deployment's
/// `Available`, a pod's `Ready`), returns at once when it already holds,
/// and times out (exit code 1) when it does not.
#[test]
fn kubectl_wait_for_condition() {
    let s = TestServer::start();
    let path = manifest(&s, "web.yaml", &deployment("web", "nginx"));
    ok(&s, &["create", "-f", &path]);
    let status = r#"{"status":{"conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable","message":"ok","lastUpdateTime":"2024-01-01T00:00:00Z","lastTransitionTime":"2024-01-01T00:00:00Z"}]}}"#;
    let patch = later(
        &s,
        Duration::from_millis(1500),
        &["patch", "deploy", "web", "--subresource=status", "--type=merge", "-p", status],
    );
    let started = Instant::now();
    let out = ok(&s, &["wait", "--for=condition=Available", "deployment/web", "--timeout=30s"]);
    assert_eq!(out.trim(), "deployment.apps/web condition met");
    assert!(started.elapsed() >= Duration::from_secs(1), "wait returned before the condition was set");
    assert_eq!(joined_ok(patch).trim(), "deployment.apps/web patched");

    for bin in KUBECTLS {
        let out = okv(&s, bin, &["wait", "--for=condition=Available=True", "deploy/web", "--timeout=10s"]);
        assert_eq!(out.trim(), "deployment.apps/web condition met", "{bin}");
        let (code, _, err) = failsv(&s, bin, &["wait", "--for=condition=Progressing", "deploy/web", "--timeout=1s"]);
        assert_eq!(code, 1);
        assert!(err.contains("timed out waiting for the condition on deployments/web"), "{bin}: {err}");
    }

    // A pod's Ready condition through a merge patch of pods/status.
    let pod = manifest(&s, "pod.yaml", POD);
    ok(&s, &["create", "-f", &pod]);
    let ready =
        r#"{"status":{"conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2024-01-01T00:00:00Z"}]}}"#;
    let patch = later(
        &s,
        Duration::from_millis(1000),
        &["patch", "pod", "p", "--subresource=status", "--type=merge", "-p", ready],
    );
    let out = okv(&s, KUBECTL_131, &["wait", "--for=condition=Ready", "pod/p", "--timeout=30s"]);
    assert_eq!(out.trim(), "pod/p condition met");
    joined_ok(patch);
    assert_eq!(ok(&s, &["get", "pod", "p", "-o", "jsonpath={.status.conditions[0].type}"]), "Ready");
    // Many objects at once, by label.
    let out = ok(&s, &["wait", "--for=condition=Ready", "pods", "-l", "app=p", "--timeout=10s"]);
    assert_eq!(out.trim(), "pod/p condition met");
}

/// `kubectl wait --for=delete` returns once a finalizer that held the
/// object is removed, and at once for an object that is already gone.
#[test]
fn kubectl_wait_for_delete() {
    let s = TestServer::start();
    for (i, bin) in KUBECTLS.into_iter().enumerate() {
        let name = format!("held{i}");
        okv(&s, bin, &["create", "configmap", &name]);
        okv(
            &s,
            bin,
            &["patch", "cm", &name, "--type=merge", "-p", r#"{"metadata":{"finalizers":["example.com/hold"]}}"#],
        );
        let out = okv(&s, bin, &["delete", "cm", &name, "--wait=false"]);
        assert_eq!(out.trim(), format!("configmap \"{name}\" deleted"));
        let cm = json(&okv(&s, bin, &["get", "cm", &name, "-o", "json"]));
        assert!(cm["metadata"]["deletionTimestamp"].is_string(), "{cm}");

        let release = later(
            &s,
            Duration::from_millis(1500),
            &["patch", "cm", &name, "--type=json", "-p", r#"[{"op":"remove","path":"/metadata/finalizers"}]"#],
        );
        let started = Instant::now();
        let out = okv(&s, bin, &["wait", "--for=delete", &format!("configmap/{name}"), "--timeout=30s"]);
        assert_eq!(out.trim(), format!("configmap/{name} condition met"));
        assert!(started.elapsed() >= Duration::from_secs(1), "wait returned before the finalizer was removed");
        joined_ok(release);
        failsv(&s, bin, &["get", "cm", &name]);

        // Already gone: nothing to wait for.
        let out = run_env(&s, bin, &["wait", "--for=delete", &format!("configmap/{name}"), "--timeout=5s"], &[]);
        assert!(out.status.success(), "{bin}: {}", text(&out.stderr));
    }

    // Timing out while the finalizer stays.
    ok(&s, &["create", "configmap", "stuck"]);
    ok(&s, &["patch", "cm", "stuck", "--type=merge", "-p", r#"{"metadata":{"finalizers":["example.com/hold"]}}"#]);
    ok(&s, &["delete", "cm", "stuck", "--wait=false"]);
    let (code, _, err) = failsv(&s, KUBECTL, &["wait", "--for=delete", "cm/stuck", "--timeout=1s"]);
    assert_eq!(code, 1);
    assert!(err.contains("timed out waiting for the condition on configmaps/stuck"), "{err}");
}

/// `kubectl wait --for=jsonpath=...`: an equality on a spec field changed
/// later (`kubectl scale`), a status field, and a bare existence check.
#[test]
fn kubectl_wait_for_jsonpath() {
    let s = TestServer::start();
    let path = manifest(&s, "web.yaml", &deployment("web", "nginx"));
    ok(&s, &["create", "-f", &path]);
    let scale = later(&s, Duration::from_millis(1500), &["scale", "deploy/web", "--replicas=3"]);
    let out = ok(&s, &["wait", "--for=jsonpath={.spec.replicas}=3", "deploy/web", "--timeout=30s"]);
    assert_eq!(out.trim(), "deployment.apps/web condition met");
    assert_eq!(joined_ok(scale).trim(), "deployment.apps/web scaled");

    for bin in KUBECTLS {
        let out = okv(&s, bin, &["wait", "--for=jsonpath={.metadata.labels.app}=web", "deploy/web", "--timeout=10s"]);
        assert_eq!(out.trim(), "deployment.apps/web condition met", "{bin}");
        let (code, _, err) =
            failsv(&s, bin, &["wait", "--for=jsonpath={.spec.replicas}=9", "deploy/web", "--timeout=1s"]);
        assert_eq!(code, 1);
        assert!(err.contains("timed out waiting for the condition on deployments/web"), "{bin}: {err}");
    }

    let status = r#"{"status":{"observedGeneration":2,"replicas":3}}"#;
    let patch = later(
        &s,
        Duration::from_millis(1000),
        &["patch", "deploy", "web", "--subresource=status", "--type=merge", "-p", status],
    );
    let out = ok(&s, &["wait", "--for=jsonpath={.status.observedGeneration}=2", "deploy/web", "--timeout=30s"]);
    assert_eq!(out.trim(), "deployment.apps/web condition met");
    joined_ok(patch);
    // kubectl 1.31 knows the existence form too.
    let out = okv(&s, KUBECTL_131, &["wait", "--for=jsonpath={.status.replicas}", "deploy/web", "--timeout=10s"]);
    assert_eq!(out.trim(), "deployment.apps/web condition met");
}

/// Testname: Kubectl, cluster info. `kubectl cluster-info` names the
/// control plane at the server's URL.
#[test]
fn kubectl_cluster_info() {
    let s = TestServer::start();
    for bin in KUBECTLS {
        // kubectl 1.31 colours its output even when it is not a terminal.
        let out = strip_colours(&okv(&s, bin, &["cluster-info"]));
        assert!(
            out.contains(&format!("Kubernetes control plane is running at https://127.0.0.1:{}", s.port())),
            "{bin}: {out}"
        );
        assert!(out.contains("kubectl cluster-info dump"), "{out}");
    }
}

/// `kubectl get --sort-by`, `-o custom-columns` and `--show-labels`.
#[test]
fn kubectl_get_sort_by_custom_columns_and_show_labels() {
    let s = TestServer::start();
    for (name, size) in [("bravo", "2"), ("charlie", "10"), ("alpha", "3")] {
        ok(&s, &["create", "configmap", name, &format!("--from-literal=size={size}")]);
        ok(&s, &["label", "cm", name, &format!("tier={name}"), "team=core"]);
    }
    for bin in KUBECTLS {
        let out = okv(&s, bin, &["get", "cm", "-l", "team=core", "--sort-by=.metadata.name", "-o", "name"]);
        assert_eq!(out, "configmap/alpha\nconfigmap/bravo\nconfigmap/charlie\n", "{bin}");
        let out = okv(&s, bin, &["get", "cm", "-l", "team=core", "--sort-by=.metadata.name"]);
        let names: Vec<&str> = out.lines().skip(1).map(|l| l.split_whitespace().next().unwrap()).collect();
        assert_eq!(names, ["alpha", "bravo", "charlie"], "{bin}: {out}");
        assert!(out.starts_with("NAME"), "{out}");
        // Strings sort in natural order: "2" < "3" < "10".
        let out = okv(&s, bin, &["get", "cm", "-l", "team=core", "--sort-by={.data.size}", "-o", "name"]);
        assert_eq!(out, "configmap/bravo\nconfigmap/alpha\nconfigmap/charlie\n", "{bin}");

        let out = okv(
            &s,
            bin,
            &[
                "get",
                "cm",
                "-l",
                "team=core",
                "--sort-by=.metadata.name",
                "-o",
                "custom-columns=NAME:.metadata.name,SIZE:.data.size,TIER:.metadata.labels.tier,NONE:.metadata.nothing",
            ],
        );
        let rows: Vec<Vec<&str>> = out.lines().map(|l| l.split_whitespace().collect()).collect();
        assert_eq!(
            rows,
            vec![
                vec!["NAME", "SIZE", "TIER", "NONE"],
                vec!["alpha", "3", "alpha", "<none>"],
                vec!["bravo", "2", "bravo", "<none>"],
                vec!["charlie", "10", "charlie", "<none>"],
            ],
            "{bin}: {out}"
        );
        let out = okv(&s, bin, &["get", "cm", "alpha", "-o", "custom-columns=:.metadata.name", "--no-headers"]);
        assert_eq!(out.trim(), "alpha");

        let out = okv(&s, bin, &["get", "cm", "-l", "team=core", "--show-labels", "--sort-by=.metadata.name"]);
        let mut lines = out.lines();
        let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
        assert_eq!(header, ["NAME", "DATA", "AGE", "LABELS"], "{bin}: {out}");
        let first: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
        assert_eq!(first[0], "alpha");
        assert_eq!(first[1], "1");
        assert_eq!(first[3], "team=core,tier=alpha", "{bin}: {out}");
    }
    // --show-labels on a wide table and a table without labels.
    let path = manifest(&s, "web.yaml", &deployment("web", "nginx"));
    ok(&s, &["create", "-f", &path]);
    let out = ok(&s, &["get", "deploy", "web", "-o", "wide", "--show-labels"]);
    let header: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR", "LABELS"]
    );
    assert!(out.lines().nth(1).unwrap().trim_end().ends_with("app=web"), "{out}");
    let out = ok(&s, &["get", "ns", "kube-public", "--show-labels"]);
    assert!(out.contains("kubernetes.io/metadata.name=kube-public"), "{out}");
}

/// `kubectl delete --cascade=foreground|orphan --wait=false`: with no
/// garbage collector running yet, the object stays, marked for deletion,
/// with the finalizer upstream sets (`foregroundDeletion`, `orphan`); the
/// default (background) deletes at once.
#[test]
fn kubectl_delete_cascade_sets_the_gc_finalizers() {
    let s = TestServer::start();
    for (i, bin) in KUBECTLS.into_iter().enumerate() {
        for (cascade, finalizer) in [("foreground", "foregroundDeletion"), ("orphan", "orphan")] {
            let name = format!("{cascade}{i}");
            let path = manifest(&s, &format!("{name}.yaml"), &deployment(&name, "nginx"));
            okv(&s, bin, &["create", "-f", &path]);
            let out = okv(&s, bin, &["delete", "deploy", &name, &format!("--cascade={cascade}"), "--wait=false"]);
            assert_eq!(out.trim(), format!("deployment.apps \"{name}\" deleted"));
            let d = json(&okv(&s, bin, &["get", "deploy", &name, "-o", "json"]));
            assert_eq!(d["metadata"]["finalizers"], serde_json::json!([finalizer]), "{bin} {cascade}: {d}");
            assert!(d["metadata"]["deletionTimestamp"].is_string(), "{d}");
            assert_eq!(d["metadata"]["deletionGracePeriodSeconds"], 0, "{d}");
            // Deleting again keeps it as it is.
            okv(&s, bin, &["delete", "deploy", &name, &format!("--cascade={cascade}"), "--wait=false"]);
            let again = json(&okv(&s, bin, &["get", "deploy", &name, "-o", "json"]));
            assert_eq!(again["metadata"]["finalizers"], d["metadata"]["finalizers"]);
            // Removing the finalizer (what the collector will do) lets it go.
            okv(
                &s,
                bin,
                &["patch", "deploy", &name, "--type=json", "-p", r#"[{"op":"remove","path":"/metadata/finalizers"}]"#],
            );
            failsv(&s, bin, &["get", "deploy", &name]);
        }
        let name = format!("background{i}");
        let path = manifest(&s, &format!("{name}.yaml"), &deployment(&name, "nginx"));
        okv(&s, bin, &["create", "-f", &path]);
        okv(&s, bin, &["delete", "deploy", &name, "--cascade=background", "--wait=false"]);
        failsv(&s, bin, &["get", "deploy", &name]);
    }
}

/// Testname: Kubectl, describe pod or rc (for what exists without
/// controllers): `kubectl describe` of a configmap, a pod, a deployment
/// and a namespace prints upstream's sections, and the events of the
/// object (found with field selectors) show under `Events:`.
#[test]
fn kubectl_describe_prints_upstream_sections() {
    let s = TestServer::start();
    ok(&s, &["create", "configmap", "settings", "--from-literal=mode=fast"]);
    let uid = ok(&s, &["get", "cm", "settings", "-o", "jsonpath={.metadata.uid}"]);
    let event = format!(
        "apiVersion: v1
kind: Event
metadata: {{name: settings.1, namespace: default}}
involvedObject: {{apiVersion: v1, kind: ConfigMap, name: settings, namespace: default, uid: {uid}}}
reason: Checked
message: looked at by the test
type: Normal
source: {{component: tester}}
count: 1
firstTimestamp: \"2024-01-01T00:00:00Z\"
lastTimestamp: \"2024-01-01T00:00:00Z\"
"
    );
    let path = manifest(&s, "event.yaml", &event);
    ok(&s, &["create", "-f", &path]);
    let path = manifest(&s, "web.yaml", &deployment("web", "nginx:1"));
    ok(&s, &["create", "-f", &path]);
    ok(&s, &["create", "deployment", "made", "--image=nginx:2"]);
    let path = manifest(&s, "pod.yaml", POD);
    ok(&s, &["create", "-f", &path]);

    for bin in KUBECTLS {
        let out = okv(&s, bin, &["describe", "configmap", "settings"]);
        for want in [
            "Name:         settings",
            "Namespace:    default",
            "Labels:       <none>",
            "Data\n====\nmode:\n----\nfast",
            "BinaryData\n====",
            "Events:",
        ] {
            assert!(out.contains(want), "{bin}: no {want:?} in\n{out}");
        }
        let events = out.split("Events:").nth(1).unwrap();
        assert!(events.contains("Type") && events.contains("Reason") && events.contains("From"), "{events}");
        assert!(events.contains("Normal") && events.contains("Checked") && events.contains("tester"), "{events}");
        assert!(events.contains("looked at by the test"), "{events}");

        let out = okv(&s, bin, &["describe", "pod", "p"]);
        for want in [
            // ServiceAccount admission sets the account, so upstream's
            // describe has the wider "Service Account:" column.
            "Name:             p",
            "Namespace:        default",
            "Service Account:  default",
            "Labels:           app=p",
            "Status:           Pending",
            "Containers:\n  c:\n    Image:",
            "QoS Class:",
            "BestEffort",
            "Tolerations:",
            // The service-account token volume admission mounts widens
            // the volume section's columns, as on a real cluster.
            "/var/run/secrets/kubernetes.io/serviceaccount from kube-api-access-",
            "TokenExpirationSeconds:  3607",
            "ConfigMapName:           kube-root-ca.crt",
            "Events:                      <none>",
        ] {
            assert!(out.contains(want), "{bin}: no {want:?} in\n{out}");
        }

        for name in ["web", "made"] {
            let out = okv(&s, bin, &["describe", "deployment", name]);
            for want in [
                &format!("Name:                   {name}") as &str,
                "Replicas:               1 desired | 0 updated | 0 total | 0 available | 0 unavailable",
                "StrategyType:           RollingUpdate",
                "RollingUpdateStrategy:  25% max unavailable, 25% max surge",
                "Pod Template:",
                "Containers:",
            ] {
                assert!(out.contains(want), "{bin}: no {want:?} in\n{out}");
            }
            assert!(out.lines().any(|l| l.starts_with("Events:") && l.ends_with(" <none>")), "{bin}: {out}");
        }

        let out = okv(&s, bin, &["describe", "namespace", "default"]);
        for want in [
            "Name:         default",
            "Labels:       kubernetes.io/metadata.name=default",
            "Status:       Active",
            "No resource quota.",
            "No LimitRange resource.",
        ] {
            assert!(out.contains(want), "{bin}: no {want:?} in\n{out}");
        }
    }
}

/// `kubectl rollout pause|resume|history` on a Deployment without a
/// controller: pause sets `spec.paused` (and refuses a second pause),
/// resume clears it, history finds no ReplicaSets.
#[test]
fn kubectl_rollout_pause_resume_and_history() {
    let s = TestServer::start();
    for (i, bin) in KUBECTLS.into_iter().enumerate() {
        let name = format!("web{i}");
        let path = manifest(&s, &format!("{name}.yaml"), &deployment(&name, "nginx"));
        okv(&s, bin, &["create", "-f", &path]);
        let target = format!("deployment/{name}");

        let out = okv(&s, bin, &["rollout", "pause", &target]);
        assert_eq!(out.trim(), format!("deployment.apps/{name} paused"));
        assert_eq!(okv(&s, bin, &["get", "deploy", &name, "-o", "jsonpath={.spec.paused}"]), "true");
        let (_, _, err) = failsv(&s, bin, &["rollout", "pause", &target]);
        assert!(err.contains(&format!("deployments.apps \"{name}\" is already paused")), "{err}");

        let out = okv(&s, bin, &["rollout", "resume", &target]);
        assert_eq!(out.trim(), format!("deployment.apps/{name} resumed"));
        assert_eq!(okv(&s, bin, &["get", "deploy", &name, "-o", "jsonpath={.spec.paused}"]), "");
        let (_, _, err) = failsv(&s, bin, &["rollout", "resume", &target]);
        assert!(err.contains(&format!("deployments.apps \"{name}\" is not paused")), "{err}");

        let out = okv(&s, bin, &["rollout", "history", &target]);
        assert_eq!(out, format!("deployment.apps/{name} \nNo rollout history found.\n"), "{bin}");
    }
}

/// kubectl 1.31 called directly: `api-resources`, `explain`, `create -f`,
/// `get` (table, yaml, json) and `delete`.
#[test]
fn kubectl_1_31_directly() {
    let s = TestServer::start();
    let k = KUBECTL_131;
    let version = okv(&s, k, &["version", "-o", "json"]);
    assert_eq!(json(&version)["clientVersion"]["minor"], "31", "{version}");

    let out = okv(&s, k, &["api-resources"]);
    let header: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]);
    let row = |name: &str| -> Vec<String> {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} in\n{out}"))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    assert_eq!(row("deployments"), ["deployments", "deploy", "apps/v1", "true", "Deployment"]);
    assert_eq!(row("namespaces"), ["namespaces", "ns", "v1", "false", "Namespace"]);
    assert_eq!(row("configmaps"), ["configmaps", "cm", "v1", "true", "ConfigMap"]);
    let out = okv(&s, k, &["api-resources", "--namespaced=false", "-o", "name"]);
    assert!(out.lines().any(|l| l == "namespaces") && !out.lines().any(|l| l == "pods"), "{out}");

    let out = okv(&s, k, &["explain", "deployment.spec.replicas"]);
    assert!(out.contains("KIND:       Deployment") && out.contains("FIELD: replicas <integer>"), "{out}");
    let out = okv(&s, k, &["explain", "pods"]);
    assert!(out.contains("KIND:       Pod") && out.contains("spec\t<PodSpec>"), "{out}");

    let path = manifest(&s, "web.yaml", &deployment("web", "nginx"));
    assert_eq!(okv(&s, k, &["create", "-f", &path]).trim(), "deployment.apps/web created");
    let (_, _, err) = failsv(&s, k, &["create", "-f", &path]);
    assert!(err.contains("deployments.apps \"web\" already exists"), "{err}");
    let pod = manifest(&s, "pod.yaml", POD);
    assert_eq!(okv(&s, k, &["create", "-f", &pod]).trim(), "pod/p created");

    let out = okv(&s, k, &["get", "deploy"]);
    let header: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]);
    assert!(out.lines().nth(1).unwrap().starts_with("web "), "{out}");
    let out = okv(&s, k, &["get", "pods", "-o", "wide"]);
    assert!(out.lines().next().unwrap().contains("NOMINATED NODE"), "{out}");
    let d = json(&okv(&s, k, &["get", "deploy", "web", "-o", "json"]));
    assert_eq!(d["spec"]["strategy"]["type"], "RollingUpdate");
    let y = okv(&s, k, &["get", "deploy", "web", "-o", "yaml"]);
    assert!(y.contains("kind: Deployment") && y.contains("  name: web"), "{y}");
    let out = okv(&s, k, &["get", "all", "-o", "name"]);
    assert!(
        out.contains("deployment.apps/web") && out.contains("pod/p") && out.contains("service/kubernetes"),
        "{out}"
    );

    assert_eq!(okv(&s, k, &["delete", "-f", &path]).trim(), "deployment.apps \"web\" deleted");
    assert_eq!(okv(&s, k, &["delete", "pod", "p", "--grace-period=0", "--force"]).trim(), "pod \"p\" force deleted");
    let (_, _, err) = failsv(&s, k, &["get", "deploy", "web"]);
    assert!(err.contains("deployments.apps \"web\" not found"), "{err}");
    let out = okv(&s, k, &["get", "deploy,pods"]);
    assert_eq!(out, "");
}

/// kubectl 1.31 called directly through the rest of issue 3's Check list:
/// `label`, `annotate`, `scale`, `replace`, client-side `apply` twice
/// (`unchanged` the second time) and then with a field removed (the field
/// goes), `get -w`, `get -A`, and the typed `create` generators (secret
/// generic, namespace, deployment, service clusterip, job,
/// serviceaccount). Messages are kubectl's (`<kind>/<name> labeled|
/// annotated|scaled|replaced|created|unchanged|configured`).
#[test]
fn kubectl_1_31_runs_the_rest_of_the_check_list() {
    let s = TestServer::start();
    let k = KUBECTL_131;
    let path = manifest(&s, "web.yaml", &deployment("web", "nginx"));
    assert_eq!(okv(&s, k, &["create", "-f", &path]).trim(), "deployment.apps/web created");

    assert_eq!(okv(&s, k, &["label", "deploy", "web", "tier=front"]).trim(), "deployment.apps/web labeled");
    assert_eq!(okv(&s, k, &["annotate", "deploy", "web", "note=hello"]).trim(), "deployment.apps/web annotated");
    let d = json(&okv(&s, k, &["get", "deploy", "web", "-o", "json"]));
    assert_eq!(d["metadata"]["labels"]["tier"], "front", "{d}");
    assert_eq!(d["metadata"]["annotations"]["note"], "hello", "{d}");
    // `label key-` removes the label.
    assert_eq!(okv(&s, k, &["label", "deploy", "web", "tier-"]).trim(), "deployment.apps/web unlabeled");
    assert_eq!(okv(&s, k, &["get", "deploy", "web", "-o", "jsonpath={.metadata.labels.tier}"]), "");

    assert_eq!(okv(&s, k, &["scale", "deploy", "web", "--replicas=3"]).trim(), "deployment.apps/web scaled");
    assert_eq!(okv(&s, k, &["get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"]), "3");

    let replaced = manifest(&s, "web2.yaml", &deployment("web", "nginx:1.27"));
    assert_eq!(okv(&s, k, &["replace", "-f", &replaced]).trim(), "deployment.apps/web replaced");
    let d = json(&okv(&s, k, &["get", "deploy", "web", "-o", "json"]));
    assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.27", "{d}");
    // replace sends the whole object: the manifest's replicas (1), no annotation.
    assert_eq!(d["spec"]["replicas"], 1, "{d}");
    assert!(d["metadata"]["annotations"].get("note").is_none(), "{d}");

    let cm = |data: &str| format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ap\ndata:\n{data}");
    let first = manifest(&s, "ap1.yaml", &cm("  a: \"1\"\n  b: \"2\"\n"));
    assert_eq!(okv(&s, k, &["apply", "-f", &first]).trim(), "configmap/ap created");
    let rv = okv(&s, k, &["get", "cm", "ap", "-o", "jsonpath={.metadata.resourceVersion}"]);
    assert_eq!(okv(&s, k, &["apply", "-f", &first]).trim(), "configmap/ap unchanged");
    assert_eq!(
        okv(&s, k, &["get", "cm", "ap", "-o", "jsonpath={.metadata.resourceVersion}"]),
        rv,
        "the second apply writes nothing"
    );
    let second = manifest(&s, "ap2.yaml", &cm("  a: \"1\"\n"));
    assert_eq!(okv(&s, k, &["apply", "-f", &second]).trim(), "configmap/ap configured");
    let c = json(&okv(&s, k, &["get", "cm", "ap", "-o", "json"]));
    assert_eq!(c["data"], serde_json::json!({"a": "1"}), "the field removed from the manifest is gone: {c}");

    // get -w prints the current rows, then each change.
    let watch = Background::kubectl_bin(&s, k, &["get", "configmaps", "-w"]);
    watch.wait_for("the initial list", Duration::from_secs(60), |o| o.lines().any(|l| l.starts_with("ap ")));
    assert_eq!(
        okv(&s, k, &["create", "configmap", "watched", "--from-literal=x=y"]).trim(),
        "configmap/watched created"
    );
    let out = watch
        .wait_for("the watched configmap", Duration::from_secs(60), |o| o.lines().any(|l| l.starts_with("watched ")));
    assert!(out.lines().next().unwrap().starts_with("NAME "), "{out}");

    assert_eq!(okv(&s, k, &["create", "namespace", "team"]).trim(), "namespace/team created");
    assert_eq!(
        okv(&s, k, &["create", "secret", "generic", "s1", "-n", "team", "--from-literal=a=b"]).trim(),
        "secret/s1 created"
    );
    let secret = json(&okv(&s, k, &["get", "secret", "s1", "-n", "team", "-o", "json"]));
    assert_eq!(secret["type"], "Opaque", "{secret}");
    assert_eq!(secret["data"]["a"], "Yg==", "{secret}");
    assert_eq!(
        okv(&s, k, &["create", "deployment", "d1", "--image=nginx", "-n", "team"]).trim(),
        "deployment.apps/d1 created"
    );
    let d1 = json(&okv(&s, k, &["get", "deploy", "d1", "-n", "team", "-o", "json"]));
    assert_eq!(d1["spec"]["selector"]["matchLabels"]["app"], "d1", "{d1}");
    assert_eq!(
        okv(&s, k, &["create", "service", "clusterip", "svc1", "--tcp=80:8080", "-n", "team"]).trim(),
        "service/svc1 created"
    );
    let svc = json(&okv(&s, k, &["get", "svc", "svc1", "-n", "team", "-o", "json"]));
    assert_eq!(svc["spec"]["type"], "ClusterIP", "{svc}");
    assert_eq!(svc["spec"]["ports"][0]["name"], "80-8080", "{svc}");
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 8080, "{svc}");
    assert!(svc["spec"]["clusterIP"].as_str().is_some_and(|ip| ip.starts_with("10.43.")), "{svc}");
    assert_eq!(okv(&s, k, &["create", "job", "j1", "--image=busybox", "-n", "team"]).trim(), "job.batch/j1 created");
    let job = json(&okv(&s, k, &["get", "job", "j1", "-n", "team", "-o", "json"]));
    assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Never", "{job}");
    assert_eq!(okv(&s, k, &["create", "serviceaccount", "sa1", "-n", "team"]).trim(), "serviceaccount/sa1 created");

    // get -A: a NAMESPACE column and rows from every namespace.
    let out = okv(&s, k, &["get", "svc", "-A"]);
    let header: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAMESPACE", "NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"], "{out}");
    let rows: Vec<Vec<&str>> = out.lines().skip(1).map(|l| l.split_whitespace().take(2).collect()).collect();
    assert!(rows.contains(&vec!["default", "kubernetes"]), "{out}");
    assert!(rows.contains(&vec!["team", "svc1"]), "{out}");
    let out = okv(&s, k, &["get", "serviceaccounts", "-A", "-o", "name"]);
    assert!(out.lines().any(|l| l == "serviceaccount/sa1"), "{out}");
}
