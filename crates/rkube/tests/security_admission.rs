//! The built-in admission plugins through the real kubectl, with upstream's
//! defaults and messages: ServiceAccount (token volume, image pull
//! secrets, missing accounts), LimitRanger, Priority,
//! DefaultTolerationSeconds, TaintNodesByCondition, DefaultStorageClass,
//! StorageObjectInUseProtection, RuntimeClass and
//! PersistentVolumeClaimResize.

mod api_common;
mod support;

use api_common::{apply, kubectl_stdin, ok};
use serde_json::{json, Value};
use support::TestServer;

fn get_json(s: &TestServer, args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    serde_json::from_str(&ok(s, &all)).expect("JSON")
}

/// `kubectl apply -f -` that must fail; its stderr.
fn refused(s: &TestServer, yaml: &str) -> String {
    let out = kubectl_stdin(s, &["apply", "-f", "-"], yaml);
    assert!(!out.status.success(), "should be refused: {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8_lossy(&out.stderr).trim_end().to_string()
}

fn pod(name: &str, ns: &str, spec_extra: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n{spec_extra}  containers:\n  - name: c\n    image: nginx\n"
    )
}

/// The account `name` in `ns` with extra top-level YAML (created with
/// apply, so an account the ServiceAccount controller made is kept).
fn account(s: &TestServer, ns: &str, name: &str, extra: &str) {
    apply(s, &format!("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {name}\n  namespace: {ns}\n{extra}"));
}

/// Conformance: "Service Account Tokens Must AutoMount" and "Service
/// account tokens auto mount optionally" (the admission half: which pods
/// get the token volume).
#[test]
fn service_account_admission_mounts_the_token_volume() {
    let s = TestServer::start();
    ok(&s, &["create", "namespace", "sa"]);
    account(&s, "sa", "default", "imagePullSecrets:\n- name: regcred\n");
    apply(&s, &pod("p", "sa", "  initContainers:\n  - name: init\n    image: busybox\n"));

    let p = get_json(&s, &["pod", "p", "-n", "sa"]);
    assert_eq!(p["spec"]["serviceAccountName"], "default");
    assert_eq!(p["spec"]["serviceAccount"], "default");
    assert_eq!(p["spec"]["imagePullSecrets"], json!([{"name": "regcred"}]));
    let volumes = p["spec"]["volumes"].as_array().expect("volumes");
    assert_eq!(volumes.len(), 1);
    let name = volumes[0]["name"].as_str().unwrap();
    let suffix = name.strip_prefix("kube-api-access-").expect("kube-api-access-<random>");
    assert_eq!(suffix.len(), 5);
    assert!(suffix.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)), "{suffix}");
    assert_eq!(
        volumes[0]["projected"],
        json!({"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
        ]})
    );
    let mount = json!([{"name": name, "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]);
    assert_eq!(p["spec"]["containers"][0]["volumeMounts"], mount);
    assert_eq!(p["spec"]["initContainers"][0]["volumeMounts"], mount);
    // kubectl's YAML shows the same.
    let yaml = ok(&s, &["get", "pod", "p", "-n", "sa", "-o", "yaml"]);
    assert!(yaml.contains("- mountPath: /var/run/secrets/kubernetes.io/serviceaccount"), "{yaml}");
    assert!(yaml.contains("expirationSeconds: 3607"), "{yaml}");

    // automountServiceAccountToken: the pod's setting wins over the account's.
    account(&s, "sa", "quiet", "automountServiceAccountToken: false\n");
    apply(&s, &pod("q1", "sa", "  serviceAccountName: quiet\n"));
    assert!(get_json(&s, &["pod", "q1", "-n", "sa"])["spec"]["volumes"].is_null());
    apply(&s, &pod("q2", "sa", "  serviceAccountName: quiet\n  automountServiceAccountToken: true\n"));
    assert_eq!(get_json(&s, &["pod", "q2", "-n", "sa"])["spec"]["volumes"].as_array().unwrap().len(), 1);
    apply(&s, &pod("q3", "sa", "  automountServiceAccountToken: false\n"));
    assert!(get_json(&s, &["pod", "q3", "-n", "sa"])["spec"]["volumes"].is_null());

    // A missing account refuses the pod with upstream's message.
    assert_eq!(
        refused(&s, &pod("x", "sa", "  serviceAccountName: nope\n")),
        "Error from server (Forbidden): error when creating \"STDIN\": pods \"x\" is forbidden: \
         error looking up service account sa/nope: serviceaccount \"nope\" not found"
    );
    assert!(!s.kubectl(&["get", "pod", "x", "-n", "sa"]).status.success());

    // Mirror pods may not reference service accounts.
    let mirror = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: m\n  namespace: sa\n  annotations:\n    kubernetes.io/config.mirror: abc\nspec:\n  serviceAccountName: default\n  containers:\n  - name: c\n    image: nginx\n";
    assert!(refused(&s, mirror).ends_with("pods \"m\" is forbidden: a mirror pod may not reference service accounts"));
}

/// Conformance: "LimitRange, resources" (defaults applied to a pod; a pod
/// beyond the maximum is refused).
/// Upstream's ServiceAccount admission looks the `default` account up
/// live up to 10 times, 100–200 ms apart, while the ServiceAccount
/// controller creates it: a pod sent together with its new namespace is
/// admitted, with the token volume.
#[test]
fn a_pod_in_a_brand_new_namespace_waits_for_its_default_account() {
    let s = TestServer::start();
    let both = format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: fresh\n---\n{}", pod("p", "fresh", ""));
    let out = kubectl_stdin(&s, &["create", "-f", "-"], &both);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let p = get_json(&s, &["pod", "p", "-n", "fresh"]);
    assert_eq!(p["spec"]["serviceAccountName"], "default");
    let volume = p["spec"]["volumes"][0]["name"].as_str().unwrap_or("");
    assert!(volume.starts_with("kube-api-access-"), "{p}");
}

/// Without the controller no `default` account ever appears: after its
/// retries, admission refuses the pod with upstream's message.
#[test]
fn a_pod_without_its_default_account_is_refused() {
    let s = TestServer::start_with(support::TestServerOptions {
        extra_args: vec!["--disable-controller-manager".into()],
        ..Default::default()
    });
    let started = std::time::Instant::now();
    assert_eq!(
        refused(&s, &pod("p", "default", "")),
        "Error from server (Forbidden): error when creating \"STDIN\": pods \"p\" is forbidden: \
         error looking up service account default/default: serviceaccount \"default\" not found"
    );
    assert!(started.elapsed() >= std::time::Duration::from_millis(900), "nine pauses of 100–200 ms");
    assert!(!s.kubectl(&["get", "pod", "p"]).status.success());
}

#[test]
fn limit_ranges_default_and_bound_resources() {
    let s = TestServer::start();
    ok(&s, &["create", "namespace", "lr"]);
    account(&s, "lr", "default", "");
    apply(
        &s,
        "apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: limits\n  namespace: lr\nspec:\n  limits:\n  - type: Container\n    default: {cpu: 500m, memory: 200Mi}\n    defaultRequest: {cpu: 100m, memory: 100Mi}\n    max: {cpu: '1'}\n  - type: PersistentVolumeClaim\n    max: {storage: 2Gi}\n",
    );
    apply(&s, &pod("defaults", "lr", ""));
    let p = get_json(&s, &["pod", "defaults", "-n", "lr"]);
    assert_eq!(
        p["spec"]["containers"][0]["resources"],
        json!({"limits": {"cpu": "500m", "memory": "200Mi"}, "requests": {"cpu": "100m", "memory": "100Mi"}})
    );
    assert_eq!(
        p["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: cpu, memory request for container c; cpu, memory limit for container c"
    );

    let big = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: big\n  namespace: lr\nspec:\n  containers:\n  - name: c\n    image: nginx\n    resources:\n      limits: {cpu: '2'}\n";
    assert_eq!(
        refused(&s, big),
        "Error from server (Forbidden): error when creating \"STDIN\": pods \"big\" is forbidden: \
         maximum cpu usage per Container is 1, but limit is 2"
    );
    let claim = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: huge\n  namespace: lr\nspec:\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests: {storage: 5Gi}\n";
    assert_eq!(
        refused(&s, claim),
        "Error from server (Forbidden): error when creating \"STDIN\": persistentvolumeclaims \"huge\" is forbidden: \
         maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 5Gi"
    );
}

/// Priority resolution, the global default, default toleration seconds.
#[test]
fn priority_classes_and_default_tolerations() {
    let s = TestServer::start();
    ok(&s, &["create", "namespace", "prio"]);
    account(&s, "prio", "default", "");

    apply(&s, &pod("plain", "prio", ""));
    let p = get_json(&s, &["pod", "plain", "-n", "prio"]);
    assert_eq!(p["spec"]["priority"], 0);
    assert_eq!(p["spec"]["preemptionPolicy"], "PreemptLowerPriority");
    assert!(p["spec"].get("priorityClassName").is_none());
    assert_eq!(
        p["spec"]["tolerations"],
        json!([
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        ])
    );

    apply(&s, "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: high\nvalue: 1000\npreemptionPolicy: Never\n");
    apply(&s, &pod("important", "prio", "  priorityClassName: high\n"));
    let p = get_json(&s, &["pod", "important", "-n", "prio"]);
    assert_eq!(p["spec"]["priority"], 1000);
    assert_eq!(p["spec"]["preemptionPolicy"], "Never");
    apply(&s, &pod("critical", "prio", "  priorityClassName: system-node-critical\n"));
    assert_eq!(get_json(&s, &["pod", "critical", "-n", "prio"])["spec"]["priority"], 2000001000);

    assert_eq!(
        refused(&s, &pod("lost", "prio", "  priorityClassName: nope\n")),
        "Error from server (Forbidden): error when creating \"STDIN\": pods \"lost\" is forbidden: \
         no PriorityClass with name nope was found"
    );
    assert_eq!(
        refused(&s, &pod("forged", "prio", "  priorityClassName: high\n  priority: 7\n")),
        "Error from server (Forbidden): error when creating \"STDIN\": pods \"forged\" is forbidden: \
         the integer value of priority (7) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name"
    );

    apply(&s, "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: usual\nvalue: 50\nglobalDefault: true\n");
    apply(&s, &pod("defaulted", "prio", ""));
    let p = get_json(&s, &["pod", "defaulted", "-n", "prio"]);
    assert_eq!(p["spec"]["priorityClassName"], "usual");
    assert_eq!(p["spec"]["priority"], 50);
    assert_eq!(
        refused(&s, "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: second\nvalue: 60\nglobalDefault: true\n"),
        "Error from server (Forbidden): error when creating \"STDIN\": priorityclasses.scheduling.k8s.io \"second\" is forbidden: \
         PriorityClass usual is already marked as default. Only one default can exist"
    );
}

/// Conformance: "Pod with the non-existing RuntimeClass is rejected." and
/// "RuntimeClass Overhead field must be respected." (the admission half).
#[test]
fn runtime_classes_set_overhead_and_scheduling() {
    let s = TestServer::start();
    ok(&s, &["create", "namespace", "rc"]);
    account(&s, "rc", "default", "");
    apply(
        &s,
        "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: kata\nhandler: kata\noverhead:\n  podFixed: {cpu: 250m, memory: 120Mi}\nscheduling:\n  nodeSelector: {runtime: kata}\n  tolerations:\n  - {key: kata, operator: Exists, effect: NoSchedule}\n",
    );
    apply(&s, &pod("vm", "rc", "  runtimeClassName: kata\n"));
    let p = get_json(&s, &["pod", "vm", "-n", "rc"]);
    assert_eq!(p["spec"]["overhead"], json!({"cpu": "250m", "memory": "120Mi"}));
    assert_eq!(p["spec"]["nodeSelector"], json!({"runtime": "kata"}));
    // DefaultTolerationSeconds ran before: the class's toleration follows.
    let tolerations = p["spec"]["tolerations"].as_array().unwrap();
    assert_eq!(tolerations.len(), 3);
    assert_eq!(tolerations[2], json!({"key": "kata", "operator": "Exists", "effect": "NoSchedule"}));

    assert_eq!(
        refused(&s, &pod("none", "rc", "  runtimeClassName: nope\n")),
        "Error from server (Forbidden): error when creating \"STDIN\": pods \"none\" is forbidden: \
         pod rejected: RuntimeClass \"nope\" not found"
    );
    assert_eq!(
        refused(&s, &pod("own", "rc", "  runtimeClassName: kata\n  overhead: {cpu: 1}\n")),
        "Error from server (Forbidden): error when creating \"STDIN\": pods \"own\" is forbidden: \
         pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"
    );
    assert!(refused(&s, &pod("clash", "rc", "  runtimeClassName: kata\n  nodeSelector: {runtime: runc}\n")).ends_with(
        "pods \"clash\" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[runtime] = kata; pod.spec.nodeSelector[runtime] = runc"
    ));
}

/// Claims get the default class and the protection finalizer; volumes
/// theirs; new nodes the not-ready taint; claims grow only as upstream
/// allows.
#[test]
fn storage_defaults_protection_taints_and_resize() {
    let s = TestServer::start();
    apply(
        &s,
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: fast\n  annotations:\n    storageclass.kubernetes.io/is-default-class: \"true\"\nprovisioner: example.com/fast\nallowVolumeExpansion: true\n",
    );
    apply(
        &s,
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: fixed\nprovisioner: example.com/fixed\n",
    );
    let claim = |name: &str, extra: &str, size: &str| {
        format!("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n{extra}  accessModes: [ReadWriteOnce]\n  resources:\n    requests: {{storage: {size}}}\n")
    };
    apply(&s, &claim("data", "", "1Gi"));
    let c = get_json(&s, &["pvc", "data"]);
    assert_eq!(c["spec"]["storageClassName"], "fast");
    assert_eq!(c["metadata"]["finalizers"], json!(["kubernetes.io/pvc-protection"]));
    // An explicit empty class stays empty.
    apply(&s, &claim("static", "  storageClassName: \"\"\n", "1Gi"));
    assert_eq!(get_json(&s, &["pvc", "static"])["spec"]["storageClassName"], "");

    apply(&s, "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: pv1\nspec:\n  capacity: {storage: 1Gi}\n  accessModes: [ReadWriteOnce]\n  hostPath: {path: /tmp/pv1}\n");
    assert_eq!(get_json(&s, &["pv", "pv1"])["metadata"]["finalizers"], json!(["kubernetes.io/pv-protection"]));

    apply(&s, "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n");
    assert_eq!(
        get_json(&s, &["node", "n1"])["spec"]["taints"],
        json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}])
    );

    // Growing an unbound claim: the kind's validation (which runs before
    // the validating admission phase, as upstream) refuses it already.
    let err = refused(&s, &claim("data", "", "2Gi"));
    assert!(err.contains("The PersistentVolumeClaim \"data\" is invalid: spec: Forbidden: spec is immutable"), "{err}");
    // A bound claim of a class without expansion may not grow.
    apply(&s, &claim("stiff", "  storageClassName: fixed\n", "1Gi"));
    for name in ["data", "stiff"] {
        ok(
            &s,
            &["patch", "pvc", name, "--subresource=status", "--type=merge", "-p", r#"{"status":{"phase":"Bound"}}"#],
        );
    }
    assert!(refused(&s, &claim("stiff", "  storageClassName: fixed\n", "2Gi")).ends_with(
        "persistentvolumeclaims \"stiff\" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"
    ));
    apply(&s, &claim("data", "", "2Gi"));
    assert_eq!(get_json(&s, &["pvc", "data"])["spec"]["resources"]["requests"]["storage"], "2Gi");
}
