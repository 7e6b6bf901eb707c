//! API discovery end to end: the real kubectl (1.33 through the dispatcher,
//! 1.31 and 1.29 directly) and raw HTTPS requests against `rkube server`.
//!
//! Expected values are Kubernetes 1.33's, written out here independently of
//! the registry: what `kubectl api-resources` and `kubectl api-versions`
//! print against a 1.33 kube-apiserver with default flags and
//! metrics-server installed (rkube serves `metrics.k8s.io/v1beta1` itself,
//! as k3s bundles metrics-server).

mod support;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use support::TestServer;

const AGGREGATED_V2: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
const AGGREGATED_V2BETA1: &str = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
/// What kubectl 1.30+ sends for `/api` and `/apis`.
const KUBECTL_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

/// `kubectl api-resources` of a 1.33 cluster: NAME, SHORTNAMES, APIVERSION,
/// NAMESPACED, KIND, in kubectl's order (by group, then name).
const API_RESOURCES_1_33: &[(&str, &str, &str, &str, &str)] = &[
    ("bindings", "", "v1", "true", "Binding"),
    ("componentstatuses", "cs", "v1", "false", "ComponentStatus"),
    ("configmaps", "cm", "v1", "true", "ConfigMap"),
    ("endpoints", "ep", "v1", "true", "Endpoints"),
    ("events", "ev", "v1", "true", "Event"),
    ("limitranges", "limits", "v1", "true", "LimitRange"),
    ("namespaces", "ns", "v1", "false", "Namespace"),
    ("nodes", "no", "v1", "false", "Node"),
    ("persistentvolumeclaims", "pvc", "v1", "true", "PersistentVolumeClaim"),
    ("persistentvolumes", "pv", "v1", "false", "PersistentVolume"),
    ("pods", "po", "v1", "true", "Pod"),
    ("podtemplates", "", "v1", "true", "PodTemplate"),
    ("replicationcontrollers", "rc", "v1", "true", "ReplicationController"),
    ("resourcequotas", "quota", "v1", "true", "ResourceQuota"),
    ("secrets", "", "v1", "true", "Secret"),
    ("serviceaccounts", "sa", "v1", "true", "ServiceAccount"),
    ("services", "svc", "v1", "true", "Service"),
    ("mutatingwebhookconfigurations", "", "admissionregistration.k8s.io/v1", "false", "MutatingWebhookConfiguration"),
    ("validatingadmissionpolicies", "", "admissionregistration.k8s.io/v1", "false", "ValidatingAdmissionPolicy"),
    (
        "validatingadmissionpolicybindings",
        "",
        "admissionregistration.k8s.io/v1",
        "false",
        "ValidatingAdmissionPolicyBinding",
    ),
    (
        "validatingwebhookconfigurations",
        "",
        "admissionregistration.k8s.io/v1",
        "false",
        "ValidatingWebhookConfiguration",
    ),
    ("customresourcedefinitions", "crd,crds", "apiextensions.k8s.io/v1", "false", "CustomResourceDefinition"),
    ("apiservices", "", "apiregistration.k8s.io/v1", "false", "APIService"),
    ("controllerrevisions", "", "apps/v1", "true", "ControllerRevision"),
    ("daemonsets", "ds", "apps/v1", "true", "DaemonSet"),
    ("deployments", "deploy", "apps/v1", "true", "Deployment"),
    ("replicasets", "rs", "apps/v1", "true", "ReplicaSet"),
    ("statefulsets", "sts", "apps/v1", "true", "StatefulSet"),
    ("selfsubjectreviews", "", "authentication.k8s.io/v1", "false", "SelfSubjectReview"),
    ("tokenreviews", "", "authentication.k8s.io/v1", "false", "TokenReview"),
    ("localsubjectaccessreviews", "", "authorization.k8s.io/v1", "true", "LocalSubjectAccessReview"),
    ("selfsubjectaccessreviews", "", "authorization.k8s.io/v1", "false", "SelfSubjectAccessReview"),
    ("selfsubjectrulesreviews", "", "authorization.k8s.io/v1", "false", "SelfSubjectRulesReview"),
    ("subjectaccessreviews", "", "authorization.k8s.io/v1", "false", "SubjectAccessReview"),
    ("horizontalpodautoscalers", "hpa", "autoscaling/v2", "true", "HorizontalPodAutoscaler"),
    ("cronjobs", "cj", "batch/v1", "true", "CronJob"),
    ("jobs", "", "batch/v1", "true", "Job"),
    ("certificatesigningrequests", "csr", "certificates.k8s.io/v1", "false", "CertificateSigningRequest"),
    ("leases", "", "coordination.k8s.io/v1", "true", "Lease"),
    ("endpointslices", "", "discovery.k8s.io/v1", "true", "EndpointSlice"),
    ("events", "ev", "events.k8s.io/v1", "true", "Event"),
    ("flowschemas", "", "flowcontrol.apiserver.k8s.io/v1", "false", "FlowSchema"),
    ("prioritylevelconfigurations", "", "flowcontrol.apiserver.k8s.io/v1", "false", "PriorityLevelConfiguration"),
    // Served by rkube's built-in metrics-server (upstream: metrics-server's APIService).
    ("nodes", "", "metrics.k8s.io/v1beta1", "false", "NodeMetrics"),
    ("pods", "", "metrics.k8s.io/v1beta1", "true", "PodMetrics"),
    ("ingressclasses", "", "networking.k8s.io/v1", "false", "IngressClass"),
    ("ingresses", "ing", "networking.k8s.io/v1", "true", "Ingress"),
    ("ipaddresses", "ip", "networking.k8s.io/v1", "false", "IPAddress"),
    ("networkpolicies", "netpol", "networking.k8s.io/v1", "true", "NetworkPolicy"),
    ("servicecidrs", "", "networking.k8s.io/v1", "false", "ServiceCIDR"),
    ("runtimeclasses", "", "node.k8s.io/v1", "false", "RuntimeClass"),
    ("poddisruptionbudgets", "pdb", "policy/v1", "true", "PodDisruptionBudget"),
    ("clusterrolebindings", "", "rbac.authorization.k8s.io/v1", "false", "ClusterRoleBinding"),
    ("clusterroles", "", "rbac.authorization.k8s.io/v1", "false", "ClusterRole"),
    ("rolebindings", "", "rbac.authorization.k8s.io/v1", "true", "RoleBinding"),
    ("roles", "", "rbac.authorization.k8s.io/v1", "true", "Role"),
    ("priorityclasses", "pc", "scheduling.k8s.io/v1", "false", "PriorityClass"),
    ("csidrivers", "", "storage.k8s.io/v1", "false", "CSIDriver"),
    ("csinodes", "", "storage.k8s.io/v1", "false", "CSINode"),
    ("csistoragecapacities", "", "storage.k8s.io/v1", "true", "CSIStorageCapacity"),
    ("storageclasses", "sc", "storage.k8s.io/v1", "false", "StorageClass"),
    ("volumeattachments", "", "storage.k8s.io/v1", "false", "VolumeAttachment"),
];

/// `kubectl api-versions` of a 1.33 cluster (sorted, as kubectl prints it).
const API_VERSIONS_1_33: &[&str] = &[
    "admissionregistration.k8s.io/v1",
    "apiextensions.k8s.io/v1",
    "apiregistration.k8s.io/v1",
    "apps/v1",
    "authentication.k8s.io/v1",
    "authorization.k8s.io/v1",
    "autoscaling/v1",
    "autoscaling/v2",
    "batch/v1",
    "certificates.k8s.io/v1",
    "coordination.k8s.io/v1",
    "discovery.k8s.io/v1",
    "events.k8s.io/v1",
    "flowcontrol.apiserver.k8s.io/v1",
    "metrics.k8s.io/v1beta1",
    "networking.k8s.io/v1",
    "node.k8s.io/v1",
    "policy/v1",
    "rbac.authorization.k8s.io/v1",
    "scheduling.k8s.io/v1",
    "storage.k8s.io/v1",
    "v1",
];

/// The groups of `/apis` in a 1.33 kube-apiserver's order (APIService
/// group priority), each with its versions, preferred first.
const APIS_1_33: &[(&str, &[&str])] = &[
    ("apiregistration.k8s.io", &["v1"]),
    ("apps", &["v1"]),
    ("events.k8s.io", &["v1"]),
    ("authentication.k8s.io", &["v1"]),
    ("authorization.k8s.io", &["v1"]),
    ("autoscaling", &["v2", "v1"]),
    ("batch", &["v1"]),
    ("certificates.k8s.io", &["v1"]),
    ("networking.k8s.io", &["v1"]),
    ("policy", &["v1"]),
    ("rbac.authorization.k8s.io", &["v1"]),
    ("storage.k8s.io", &["v1"]),
    ("admissionregistration.k8s.io", &["v1"]),
    ("apiextensions.k8s.io", &["v1"]),
    ("scheduling.k8s.io", &["v1"]),
    ("coordination.k8s.io", &["v1"]),
    ("node.k8s.io", &["v1"]),
    ("discovery.k8s.io", &["v1"]),
    ("flowcontrol.apiserver.k8s.io", &["v1"]),
    // rkube's built-in metrics-server, at its APIService's priority (100).
    ("metrics.k8s.io", &["v1beta1"]),
];

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn kubectl_ok(server: &TestServer, args: &[&str]) -> String {
    let out = server.kubectl(args);
    assert!(out.status.success(), "kubectl {args:?} failed: {}\n--- rkube ---\n{}", stderr(&out), server.logs());
    stdout(&out)
}

/// Runs a specific kubectl binary (no dispatcher) with its own cache dir.
fn kubectl_version(server: &TestServer, binary: &str, cache: &Path, args: &[&str]) -> Output {
    Command::new(binary)
        .arg("--kubeconfig")
        .arg(server.kubeconfig())
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run {binary}: {e}"))
}

/// Splits a kubectl table at the header's column starts; cells trimmed.
fn table(text: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut lines = text.lines();
    let header = lines.next().expect("a header line");
    let mut starts = vec![0];
    let bytes = header.as_bytes();
    for i in 1..bytes.len() {
        if bytes[i] != b' ' && bytes[i - 1] == b' ' {
            starts.push(i);
        }
    }
    let cut = |line: &str| -> Vec<String> {
        starts
            .iter()
            .enumerate()
            .map(|(n, &s)| {
                let e = starts.get(n + 1).copied().unwrap_or(line.len()).min(line.len());
                line.get(s.min(line.len())..e).unwrap_or("").trim().to_string()
            })
            .collect()
    };
    let columns = cut(header);
    (columns, lines.filter(|l| !l.trim().is_empty()).map(cut).collect())
}

fn expected_rows(filter: impl Fn(&(&str, &str, &str, &str, &str)) -> bool) -> Vec<Vec<String>> {
    API_RESOURCES_1_33
        .iter()
        .filter(|r| filter(r))
        .map(|&(a, b, c, d, e)| [a, b, c, d, e].iter().map(|s| s.to_string()).collect())
        .collect()
}

fn get_json(server: &TestServer, path: &str, accept: &str) -> (support::HttpResponse, Value) {
    let resp = server.get_with_headers(path, &[("Accept", accept)]);
    assert_eq!(resp.status, 200, "GET {path}: {}", resp.body);
    let value = serde_json::from_str(&resp.body).unwrap_or_else(|e| panic!("GET {path}: {e}: {}", resp.body));
    (resp, value)
}

#[test]
fn kubectl_api_resources_lists_every_resource_as_a_1_33_cluster_does() {
    let server = TestServer::start();
    let (columns, rows) = table(&kubectl_ok(&server, &["api-resources"]));
    assert_eq!(columns, ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]);
    assert_eq!(rows, expected_rows(|_| true));

    // Only cluster-scoped ones, and only namespaced ones.
    let (_, rows) = table(&kubectl_ok(&server, &["api-resources", "--namespaced=false"]));
    assert_eq!(rows, expected_rows(|r| r.3 == "false"));
    let (_, rows) = table(&kubectl_ok(&server, &["api-resources", "--namespaced=true"]));
    assert_eq!(rows, expected_rows(|r| r.3 == "true"));

    // One group.
    let (_, rows) = table(&kubectl_ok(&server, &["api-resources", "--api-group=apps"]));
    assert_eq!(rows, expected_rows(|r| r.2 == "apps/v1"));
}

#[test]
fn kubectl_api_resources_wide_shows_verbs_and_categories() {
    let server = TestServer::start();
    let (columns, rows) = table(&kubectl_ok(&server, &["api-resources", "-o", "wide"]));
    assert_eq!(columns, ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND", "VERBS", "CATEGORIES"]);
    let row = |name: &str, version: &str| {
        rows.iter()
            .find(|r| r[0] == name && r[2] == version)
            .unwrap_or_else(|| panic!("no {name} {version} in {rows:?}"))
            .clone()
    };
    let crud = "create,delete,deletecollection,get,list,patch,update,watch";
    assert_eq!(row("pods", "v1"), ["pods", "po", "v1", "true", "Pod", crud, "all"]);
    assert_eq!(row("deployments", "apps/v1"), ["deployments", "deploy", "apps/v1", "true", "Deployment", crud, "all"]);
    assert_eq!(
        row("namespaces", "v1"),
        ["namespaces", "ns", "v1", "false", "Namespace", "create,delete,get,list,patch,update,watch", ""]
    );
    assert_eq!(row("componentstatuses", "v1")[5], "get,list");
    assert_eq!(row("bindings", "v1")[5], "create");
    assert_eq!(row("tokenreviews", "authentication.k8s.io/v1")[5], "create");
    assert_eq!(row("customresourcedefinitions", "apiextensions.k8s.io/v1")[6], "api-extensions");
    assert_eq!(row("horizontalpodautoscalers", "autoscaling/v2")[6], "all");

    // --verbs filters on them; --categories (kubectl ≥ 1.31) too.
    let (_, rows) = table(&kubectl_ok(&server, &["api-resources", "--verbs=list", "--api-group=authorization.k8s.io"]));
    assert!(rows.is_empty(), "the review APIs only accept create: {rows:?}");
    let names = kubectl_ok(&server, &["api-resources", "--categories=all", "-o", "name"]);
    assert_eq!(
        names.lines().collect::<Vec<_>>(),
        [
            "pods",
            "replicationcontrollers",
            "services",
            "daemonsets.apps",
            "deployments.apps",
            "replicasets.apps",
            "statefulsets.apps",
            "horizontalpodautoscalers.autoscaling",
            "cronjobs.batch",
            "jobs.batch",
        ]
    );
}

#[test]
fn kubectl_api_versions_lists_every_group_version_including_both_autoscaling_versions() {
    let server = TestServer::start();
    let out = kubectl_ok(&server, &["api-versions"]);
    assert_eq!(out.lines().collect::<Vec<_>>(), API_VERSIONS_1_33);
}

#[test]
fn kubectl_1_31_reads_aggregated_v2_discovery() {
    let server = TestServer::start();
    let cache = tempfile::tempdir().unwrap();
    let kubectl = "/usr/lib/google-cloud-sdk/bin/kubectl.1.31";
    let out = kubectl_version(&server, kubectl, cache.path(), &["api-resources", "-v=6"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (_, rows) = table(&stdout(&out));
    assert_eq!(rows, expected_rows(|_| true));
    // Aggregated discovery means no per-group-version fetches.
    let log = stderr(&out);
    assert!(log.contains("GET https://127.0.0.1:") && log.contains("/apis?timeout=32s 200 OK"), "{log}");
    assert!(!log.contains("/apis/apps/v1?timeout"), "kubectl fell back to legacy discovery:\n{log}");

    let out = kubectl_version(&server, kubectl, cache.path(), &["api-versions"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).lines().collect::<Vec<_>>(), API_VERSIONS_1_33);
}

#[test]
fn kubectl_1_29_gets_v2beta1_aggregated_discovery() {
    let server = TestServer::start();
    let cache = tempfile::tempdir().unwrap();
    let kubectl = "/usr/lib/google-cloud-sdk/bin/kubectl.1.29";
    let out = kubectl_version(&server, kubectl, cache.path(), &["api-resources", "-v=8"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (_, rows) = table(&stdout(&out));
    assert_eq!(rows, expected_rows(|_| true));
    let log = stderr(&out);
    // -v=8 prints the response headers: the server answered v2beta1.
    assert!(log.contains(&format!("Content-Type: {AGGREGATED_V2BETA1}")), "{log}");
    assert!(!log.contains(&format!("Content-Type: {AGGREGATED_V2}")), "{log}");
    assert!(!log.contains("/apis/apps/v1?timeout"), "kubectl 1.29 fell back to legacy discovery:\n{log}");
}

#[test]
fn raw_discovery_negotiates_the_format_from_accept() {
    let server = TestServer::start();

    // kubectl's Accept: aggregated v2.
    for path in ["/api", "/apis"] {
        let (resp, doc) = get_json(&server, path, KUBECTL_ACCEPT);
        assert_eq!(resp.header("content-type"), Some(AGGREGATED_V2), "{path}");
        assert_eq!(resp.header("vary"), Some("Accept"));
        assert_eq!(doc["kind"], "APIGroupDiscoveryList");
        assert_eq!(doc["apiVersion"], "apidiscovery.k8s.io/v2");
    }
    // Only v2beta1 listed: v2beta1.
    let (resp, doc) = get_json(&server, "/apis", &format!("{AGGREGATED_V2BETA1},application/json"));
    assert_eq!(resp.header("content-type"), Some(AGGREGATED_V2BETA1));
    assert_eq!(doc["apiVersion"], "apidiscovery.k8s.io/v2beta1");
    // Plain JSON: the legacy documents.
    let (resp, doc) = get_json(&server, "/api", "application/json");
    assert_eq!(resp.header("content-type"), Some("application/json"));
    assert_eq!(doc["kind"], "APIVersions");
    assert_eq!(doc["versions"], serde_json::json!(["v1"]));
    let (_, doc) = get_json(&server, "/apis", "application/json, */*");
    assert_eq!(doc["kind"], "APIGroupList");

    // The ETag lets a client revalidate: 304 without a body.
    let resp = server.get_with_headers("/apis", &[("Accept", KUBECTL_ACCEPT)]);
    let etag = resp.header("etag").expect("an ETag").to_string();
    let again = server.get_with_headers("/apis", &[("Accept", KUBECTL_ACCEPT), ("If-None-Match", &etag)]);
    assert_eq!((again.status, again.body.as_str()), (304, ""));

    // Unknown groups and versions: the 404 Status of unknown paths.
    for path in ["/apis/nosuch.example.com", "/apis/apps/v2", "/api/v2", "/apis/nosuch.example.com/v1"] {
        let resp = server.get_with_headers(path, &[("Accept", "application/json")]);
        assert_eq!(resp.status, 404, "{path}");
        let status: Value = serde_json::from_str(&resp.body).unwrap();
        assert_eq!(status["reason"], "NotFound", "{path}");
        assert_eq!(status["message"], "the server could not find the requested resource");
    }
}

#[test]
fn legacy_group_version_lists_carry_subresources_with_cross_group_kinds() {
    let server = TestServer::start();
    let (_, core) = get_json(&server, "/api/v1", "application/json, */*");
    let entry = |name: &str| {
        core["resources"].as_array().unwrap().iter().find(|r| r["name"] == name).cloned().unwrap_or(Value::Null)
    };
    // kubectl drain evicts only if pods/eviction says policy/v1 Eviction.
    let eviction = entry("pods/eviction");
    assert_eq!(
        (&eviction["group"], &eviction["version"], &eviction["kind"]),
        (&"policy".into(), &"v1".into(), &"Eviction".into())
    );
    assert_eq!(entry("pods/log")["kind"], "Pod");
    assert_eq!(entry("pods/log").get("group"), None);
    assert_eq!(entry("serviceaccounts/token")["group"], "authentication.k8s.io");
    assert_eq!(entry("replicationcontrollers/scale")["group"], "autoscaling");
    assert_eq!(entry("pods")["storageVersionHash"], "xPOwRZ+Yhw8=");

    let (_, apps) = get_json(&server, "/apis/apps/v1", "application/json, */*");
    let scale = apps["resources"].as_array().unwrap().iter().find(|r| r["name"] == "deployments/scale").unwrap();
    assert_eq!(
        (&scale["group"], &scale["version"], &scale["kind"]),
        (&"autoscaling".into(), &"v1".into(), &"Scale".into())
    );

    // kubectl drain reads /api/v1 directly, even with aggregated discovery.
    let raw = kubectl_ok(&server, &["get", "--raw", "/api/v1"]);
    let doc: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(doc["groupVersion"], "v1");
}

/// Conformance: "Discovery, confirm the groupVersion and a resource from each apiGroup".
#[test]
fn discovery_confirm_the_group_version_and_a_resource_from_each_api_group() {
    let server = TestServer::start();
    let (_, list) = get_json(&server, "/apis", "application/json");
    let groups = list["groups"].as_array().unwrap();
    assert_eq!(groups.len(), APIS_1_33.len());
    for group in groups {
        for version in group["versions"].as_array().unwrap() {
            let gv = version["groupVersion"].as_str().unwrap();
            let (_, resources) = get_json(&server, &format!("/apis/{gv}"), "application/json");
            assert_eq!(resources["groupVersion"], gv);
            let valid = resources["resources"].as_array().unwrap().iter().find(|r| {
                !r["name"].as_str().unwrap().contains('/') && r["kind"].as_str().is_some_and(|k| !k.is_empty())
            });
            assert!(valid.is_some(), "{gv} has no resource: {resources}");
        }
    }
    let (_, core) = get_json(&server, "/api/v1", "application/json");
    assert_eq!(core["groupVersion"], "v1");
}

/// Conformance: "Discovery, confirm the PreferredVersion for each api group".
#[test]
fn discovery_confirm_the_preferred_version_for_each_api_group() {
    let server = TestServer::start();
    let (_, list) = get_json(&server, "/apis", "application/json");
    let got: Vec<(String, Vec<String>, String)> = list["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            let versions = g["versions"].as_array().unwrap().iter().map(|v| v["version"].as_str().unwrap().to_string());
            (
                g["name"].as_str().unwrap().to_string(),
                versions.collect(),
                g["preferredVersion"]["version"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want: Vec<(String, Vec<String>, String)> = APIS_1_33
        .iter()
        .map(|(g, vs)| (g.to_string(), vs.iter().map(|v| v.to_string()).collect(), vs[0].to_string()))
        .collect();
    assert_eq!(got, want);
    for group in list["groups"].as_array().unwrap() {
        let name = group["name"].as_str().unwrap();
        let (resp, single) = get_json(&server, &format!("/apis/{name}"), "application/json");
        assert_eq!(resp.header("content-type"), Some("application/json"));
        assert_eq!(single["kind"], "APIGroup");
        assert_eq!(single["preferredVersion"], group["preferredVersion"], "{name}");
        assert_eq!(
            single["preferredVersion"]["groupVersion"],
            format!("{name}/{}", group["preferredVersion"]["version"].as_str().unwrap())
        );
    }
}

fn aggregated_index(doc: &Value) -> Vec<(String, String, Vec<String>)> {
    let mut out = vec![];
    for group in doc["items"].as_array().unwrap() {
        let name = group["metadata"]["name"].as_str().unwrap_or("").to_string();
        for version in group["versions"].as_array().unwrap() {
            assert_eq!(version["freshness"], "Current");
            let resources = version["resources"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    assert!(r["responseKind"]["kind"].as_str().is_some_and(|k| !k.is_empty()), "{r}");
                    for s in r["subresources"].as_array().into_iter().flatten() {
                        assert!(s["responseKind"]["kind"].as_str().is_some_and(|k| !k.is_empty()), "{s}");
                    }
                    r["resource"].as_str().unwrap().to_string()
                })
                .collect();
            out.push((name.clone(), version["version"].as_str().unwrap().to_string(), resources));
        }
    }
    out
}

fn expected_aggregated() -> Vec<(String, String, Vec<String>)> {
    let mut want = vec![];
    for (group, versions) in std::iter::once(&("", &["v1"][..])).chain(APIS_1_33.iter()) {
        for v in *versions {
            let api_version = if group.is_empty() { v.to_string() } else { format!("{group}/{v}") };
            let mut names: Vec<String> = API_RESOURCES_1_33
                .iter()
                .filter(|r| r.2 == api_version || (api_version == "autoscaling/v1" && r.2 == "autoscaling/v2"))
                .map(|r| r.0.to_string())
                .collect();
            names.sort();
            want.push((group.to_string(), v.to_string(), names));
        }
    }
    want
}

/// Conformance: "Aggregated Discovery Interface".
#[test]
fn aggregated_discovery_interface() {
    let server = TestServer::start();
    // kubectl only uses the aggregated documents: no per-group-version fetch.
    let out = server.kubectl(&["api-resources", "-v=6"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("/apis/apps/v1?timeout"), "{}", stderr(&out));
    let (_, api) = get_json(&server, "/api", KUBECTL_ACCEPT);
    let (_, apis) = get_json(&server, "/apis", KUBECTL_ACCEPT);
    let mut got = aggregated_index(&api);
    got.extend(aggregated_index(&apis));
    assert_eq!(got, expected_aggregated(), "every built-in resource is present");
}

/// Conformance: "Aggregated Discovery Endpoint Accept Headers".
#[test]
fn aggregated_discovery_endpoint_accept_headers() {
    let server = TestServer::start();
    for (accept, content_type, api_version) in [
        (AGGREGATED_V2, AGGREGATED_V2, "apidiscovery.k8s.io/v2"),
        (AGGREGATED_V2BETA1, AGGREGATED_V2BETA1, "apidiscovery.k8s.io/v2beta1"),
        (KUBECTL_ACCEPT, AGGREGATED_V2, "apidiscovery.k8s.io/v2"),
    ] {
        let (resp_api, api) = get_json(&server, "/api", accept);
        let (resp_apis, apis) = get_json(&server, "/apis", accept);
        for (resp, doc) in [(&resp_api, &api), (&resp_apis, &apis)] {
            assert_eq!(resp.header("content-type"), Some(content_type), "{accept}");
            assert_eq!(doc["apiVersion"], api_version, "{accept}");
        }
        let mut got = aggregated_index(&api);
        got.extend(aggregated_index(&apis));
        assert_eq!(got, expected_aggregated(), "{accept}");
    }
}

/// Conformance: "Admission webhook, discovery document".
#[test]
fn admission_webhook_discovery_document() {
    let server = TestServer::start();
    let (_, list) = get_json(&server, "/apis", "application/json");
    let group = list["groups"].as_array().unwrap().iter().find(|g| g["name"] == "admissionregistration.k8s.io");
    let group = group.expect("admissionregistration.k8s.io in /apis");
    assert!(group["versions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|v| v["groupVersion"] == "admissionregistration.k8s.io/v1"));
    let (_, resources) = get_json(&server, "/apis/admissionregistration.k8s.io/v1", "application/json");
    let names: Vec<&str> =
        resources["resources"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"mutatingwebhookconfigurations"), "{names:?}");
    assert!(names.contains(&"validatingwebhookconfigurations"), "{names:?}");
}

/// Conformance: "Custom Resource Definition, discovery".
#[test]
fn custom_resource_definition_discovery() {
    let server = TestServer::start();
    let (_, list) = get_json(&server, "/apis", "application/json");
    assert!(list["groups"].as_array().unwrap().iter().any(|g| g["name"] == "apiextensions.k8s.io"));
    let (_, group) = get_json(&server, "/apis/apiextensions.k8s.io", "application/json");
    assert_eq!(group["preferredVersion"]["groupVersion"], "apiextensions.k8s.io/v1");
    let (_, resources) = get_json(&server, "/apis/apiextensions.k8s.io/v1", "application/json");
    let crd = resources["resources"].as_array().unwrap().iter().find(|r| r["name"] == "customresourcedefinitions");
    let crd = crd.expect("customresourcedefinitions in /apis/apiextensions.k8s.io/v1");
    assert_eq!(crd["kind"], "CustomResourceDefinition");
    assert_eq!(crd["namespaced"], false);
    assert_eq!(crd["shortNames"], serde_json::json!(["crd", "crds"]));
}

/// Upstream serves the discovery documents and /version with a trailing
/// slash too; the Python client asks for `/api/v1/` and `/apis/apps/`.
#[test]
fn discovery_paths_answer_with_a_trailing_slash() {
    let s = TestServer::start();
    for (path, kind) in [
        ("/api/", "APIVersions"),
        ("/apis/", "APIGroupList"),
        ("/api/v1/", "APIResourceList"),
        ("/apis/apps/", "APIGroup"),
        ("/apis/apps/v1/", "APIResourceList"),
    ] {
        let (status, body) = s.get(path);
        assert_eq!(status, 200, "{path}: {body}");
        let doc: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(doc["kind"], kind, "{path}");
    }
    let (status, body) = s.get("/version/");
    assert_eq!(status, 200, "{body}");
    assert_eq!(serde_json::from_str::<serde_json::Value>(&body).unwrap()["minor"], "33");
}
