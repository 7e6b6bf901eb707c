//! PodSecurity admission through the real kubectl: namespaces labelled
//! `pod-security.kubernetes.io/{enforce,warn}[-version]` refuse or warn
//! about pods as upstream's k8s.io/pod-security-admission does, with its
//! exact messages (the check: a `restricted` namespace refuses a
//! privileged pod with the upstream message and warns under `warn`).

mod api_common;
mod support;

use api_common::{apply, kubectl_stdin, ok};
use support::TestServer;

/// A namespace with `labels` (`key=value` pairs).
fn namespace(s: &TestServer, name: &str, labels: &[&str]) {
    ok(s, &["create", "namespace", name]);
    if !labels.is_empty() {
        let mut args = vec!["label", "namespace", name];
        args.extend_from_slice(labels);
        ok(s, &args);
    }
}

/// A one-container pod `name` in `ns` with `spec_extra` (YAML lines under
/// `spec:`, indented two spaces) and `sc` (the container's securityContext
/// as flow YAML).
fn pod(name: &str, ns: &str, spec_extra: &str, sc: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n{spec_extra}  containers:\n  - name: c\n    image: nginx\n    securityContext: {sc}\n"
    )
}

/// A pod that meets `restricted`.
const RESTRICTED_SC: &str = "{allowPrivilegeEscalation: false, runAsNonRoot: true, capabilities: {drop: [ALL]}, seccompProfile: {type: RuntimeDefault}}";

/// `kubectl apply -f -`: (success, stdout, stderr).
fn try_apply(s: &TestServer, yaml: &str) -> (bool, String, String) {
    let out = kubectl_stdin(s, &["apply", "-f", "-"], yaml);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn pod_exists(s: &TestServer, ns: &str, name: &str) -> bool {
    s.kubectl(&["get", "pod", name, "-n", ns]).status.success()
}

/// The restricted:latest message for a privileged container "c", as
/// upstream prints it.
const PRIVILEGED_UNDER_RESTRICTED: &str = "privileged (container \"c\" must not set securityContext.privileged=true), \
allowPrivilegeEscalation != false (container \"c\" must set securityContext.allowPrivilegeEscalation=false), \
unrestricted capabilities (container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]), \
runAsNonRoot != true (pod or container \"c\" must set securityContext.runAsNonRoot=true), \
seccompProfile (pod or container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")";

#[test]
fn restricted_enforce_refuses_a_privileged_pod_with_the_upstream_message() {
    let s = TestServer::start();
    namespace(&s, "strict", &["pod-security.kubernetes.io/enforce=restricted"]);

    let (created, _, stderr) = try_apply(&s, &pod("priv", "strict", "", "{privileged: true}"));
    assert!(!created);
    assert_eq!(
        stderr.trim_end(),
        format!(
            "Error from server (Forbidden): error when creating \"STDIN\": pods \"priv\" is forbidden: \
             violates PodSecurity \"restricted:latest\": {PRIVILEGED_UNDER_RESTRICTED}"
        )
    );
    assert!(!pod_exists(&s, "strict", "priv"), "nothing stored");

    // A pod that meets the level is created, without a warning.
    let (created, stdout, stderr) = try_apply(&s, &pod("good", "strict", "", RESTRICTED_SC));
    assert!(created, "{stderr}");
    assert_eq!(stdout.trim(), "pod/good created");
    assert!(!stderr.contains("Warning"), "{stderr}");

    // The raw Status: 403 Forbidden, details naming the pod.
    let status = api_common::request(
        &s,
        "POST",
        "/api/v1/namespaces/strict/pods",
        &[("Content-Type", "application/json")],
        serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "raw"},
            "spec": {"hostPID": true, "containers": [{"name": "c", "image": "nginx",
                "securityContext": {"allowPrivilegeEscalation": false, "runAsNonRoot": true,
                    "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}}]}})
        .to_string()
        .as_bytes(),
    );
    assert_eq!(status.status, 403);
    let body = status.json();
    assert_eq!(body["reason"], "Forbidden");
    assert_eq!(body["details"]["name"], "raw");
    assert_eq!(body["details"]["kind"], "pods");
    assert_eq!(
        body["message"],
        "pods \"raw\" is forbidden: violates PodSecurity \"restricted:latest\": host namespaces (hostPID=true)"
    );
}

#[test]
fn warn_mode_prints_the_warning_and_creates_the_pod() {
    let s = TestServer::start();
    namespace(&s, "warned", &["pod-security.kubernetes.io/warn=restricted"]);
    let (created, stdout, stderr) = try_apply(&s, &pod("priv", "warned", "", "{privileged: true}"));
    assert!(created, "{stderr}");
    assert_eq!(stdout.trim(), "pod/priv created");
    assert_eq!(
        stderr.trim_end(),
        format!("Warning: would violate PodSecurity \"restricted:latest\": {PRIVILEGED_UNDER_RESTRICTED}")
    );
    assert!(pod_exists(&s, "warned", "priv"));

    // Enforce baseline, warn restricted: a pod that meets baseline only is
    // created with the restricted warning; with a version label, the
    // warning names that version.
    namespace(
        &s,
        "mixed",
        &[
            "pod-security.kubernetes.io/enforce=baseline",
            "pod-security.kubernetes.io/warn=restricted",
            "pod-security.kubernetes.io/warn-version=v1.24",
        ],
    );
    let (created, _, stderr) = try_apply(&s, &pod("plain", "mixed", "", "{runAsUser: 0}"));
    assert!(created, "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        "Warning: would violate PodSecurity \"restricted:v1.24\": \
         allowPrivilegeEscalation != false (container \"c\" must set securityContext.allowPrivilegeEscalation=false), \
         unrestricted capabilities (container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]), \
         runAsNonRoot != true (pod or container \"c\" must set securityContext.runAsNonRoot=true), \
         runAsUser=0 (container \"c\" must not set runAsUser=0), \
         seccompProfile (pod or container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
    );

    // Workload templates get the warning (never the refusal) as upstream.
    let deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: warned\nspec:\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      hostNetwork: true\n      containers:\n      - name: c\n        image: nginx\n        securityContext: {allowPrivilegeEscalation: false, runAsNonRoot: true, capabilities: {drop: [ALL]}, seccompProfile: {type: RuntimeDefault}}\n";
    let (created, _, stderr) = try_apply(&s, deployment);
    assert!(created, "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        "Warning: would violate PodSecurity \"restricted:latest\": host namespaces (hostNetwork=true)"
    );
    namespace(&s, "enforced-only", &["pod-security.kubernetes.io/enforce=restricted"]);
    let (created, _, stderr) = try_apply(&s, &deployment.replace("namespace: warned", "namespace: enforced-only"));
    assert!(created, "enforce does not apply to templates: {stderr}");
    assert!(!stderr.contains("Warning"), "no warn label, no warning: {stderr}");
}

#[test]
fn baseline_privileged_and_versions() {
    let s = TestServer::start();
    namespace(&s, "base", &["pod-security.kubernetes.io/enforce=baseline"]);
    let host = "  hostNetwork: true\n  volumes:\n  - name: h\n    hostPath: {path: /etc}\n";
    let (created, _, stderr) = try_apply(&s, &pod("hostnet", "base", host, "{capabilities: {add: [NET_ADMIN]}}"));
    assert!(!created);
    assert!(
        stderr.contains(
            "pods \"hostnet\" is forbidden: violates PodSecurity \"baseline:latest\": \
             non-default capabilities (container \"c\" must not include \"NET_ADMIN\" in securityContext.capabilities.add), \
             host namespaces (hostNetwork=true), hostPath volumes (volume \"h\")"
        ),
        "{stderr}"
    );
    // Running as root meets baseline.
    apply(&s, &pod("root", "base", "", "{runAsUser: 0}"));

    // privileged allows everything, as does a namespace without labels.
    namespace(&s, "open", &["pod-security.kubernetes.io/enforce=privileged"]);
    apply(&s, &pod("anything", "open", host, "{privileged: true}"));
    namespace(&s, "unlabelled", &[]);
    apply(&s, &pod("anything", "unlabelled", host, "{privileged: true}"));

    // runAsUser=0 is a restricted violation from v1.23 on.
    namespace(
        &s,
        "old",
        &["pod-security.kubernetes.io/enforce=restricted", "pod-security.kubernetes.io/enforce-version=v1.22"],
    );
    let root = "{allowPrivilegeEscalation: false, runAsNonRoot: true, runAsUser: 0, capabilities: {drop: [ALL]}, seccompProfile: {type: RuntimeDefault}}";
    apply(&s, &pod("root", "old", "", root));
    ok(&s, &["label", "namespace", "old", "--overwrite", "pod-security.kubernetes.io/enforce-version=latest"]);
    let (created, _, stderr) = try_apply(&s, &pod("root2", "old", "", root));
    assert!(!created);
    assert!(
        stderr.contains(
            "pods \"root2\" is forbidden: violates PodSecurity \"restricted:latest\": runAsUser=0 (container \"c\" must not set runAsUser=0)"
        ),
        "{stderr}"
    );

    // Invalid policy labels are refused (422) as upstream's ValidateNamespace does.
    namespace(&s, "typo", &[]);
    let out = s.kubectl(&["label", "namespace", "typo", "pod-security.kubernetes.io/enforce=strict"]);
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        "The Namespace \"typo\" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: \
         Invalid value: \"strict\": must be one of privileged, baseline, restricted"
    );
}

#[test]
fn a_stricter_enforce_level_warns_about_existing_pods() {
    let s = TestServer::start();
    namespace(&s, "grow", &[]);
    apply(&s, &pod("priv", "grow", "", "{privileged: true}"));
    apply(&s, &pod("hostpid", "grow", "  hostPID: true\n", "{}"));
    apply(&s, &pod("hostpid2", "grow", "  hostPID: true\n", "{}"));
    let out = s.kubectl(&["label", "namespace", "grow", "pod-security.kubernetes.io/enforce=baseline"]);
    assert!(out.status.success(), "the label is applied: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "namespace/grow labeled");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        "Warning: existing pods in namespace \"grow\" violate the new PodSecurity enforce level \"baseline:latest\"\n\
         Warning: hostpid (and 1 other pod): host namespaces\n\
         Warning: priv: privileged"
    );
    // Relaxing the level checks nothing.
    let out =
        s.kubectl(&["label", "namespace", "grow", "--overwrite", "pod-security.kubernetes.io/enforce=privileged"]);
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("Warning"));
}
