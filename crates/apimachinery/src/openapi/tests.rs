use serde_json::{json, Value};

use super::*;

fn test_resources() -> Vec<ResourceInfo> {
    crate::registry::Registry::builtin()
        .resources()
        .iter()
        .filter(|r| matches!((r.group, r.plural), ("", "pods" | "nodes") | ("apps", "deployments")))
        .cloned()
        .collect()
}

fn spec() -> Spec {
    Spec::build(&test_resources())
}

/// Every `$ref` of `doc` resolves to a definition of `doc` under `prefix`.
fn assert_refs_resolve(doc: &Value, prefix: &str, defs: &Value) {
    let mut missing = Vec::new();
    fn walk(v: &Value, prefix: &str, defs: &Value, missing: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    if k == "$ref" {
                        if let Some(r) = v.as_str() {
                            match r.strip_prefix(prefix) {
                                Some(name) if defs.get(name).is_some() => {}
                                _ => missing.push(r.to_string()),
                            }
                        }
                    } else {
                        walk(v, prefix, defs, missing);
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|v| walk(v, prefix, defs, missing)),
            _ => {}
        }
    }
    walk(doc, prefix, defs, &mut missing);
    assert!(missing.is_empty(), "unresolved references: {missing:?}");
}

#[test]
fn v3_keys_cover_group_versions_and_discovery() {
    let s = spec();
    let keys: Vec<&str> = s.v3_keys().collect();
    assert_eq!(keys, vec!["api", "api/v1", "apis", "apis/apps", "apis/apps/v1", "version"]);
}

#[test]
fn patch_operation_carries_what_kubectl_looks_for() {
    let s = spec();
    let doc = s.v3_document("apis/apps/v1").unwrap();
    let item = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"];
    let patch = &item["patch"];
    assert_eq!(patch["operationId"], json!("patchAppsV1NamespacedDeployment"));
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "apps", "version": "v1", "kind": "Deployment"})
    );
    assert_eq!(patch["x-kubernetes-action"], json!("patch"));
    let params = patch["parameters"].as_array().unwrap();
    assert!(params.iter().any(|p| p["name"] == "fieldValidation" && p["in"] == "query"));
    let content = patch["requestBody"]["content"].as_object().unwrap();
    assert!(content.contains_key("application/merge-patch+json"));
    assert!(content.contains_key("application/apply-patch+yaml"));
    assert_eq!(content.contains_key("application/strategic-merge-patch+json"), extensions::strategic_merge_supported());
    assert_eq!(item["get"]["operationId"], json!("readAppsV1NamespacedDeployment"));
    assert_eq!(item["put"]["operationId"], json!("replaceAppsV1NamespacedDeployment"));
    assert_eq!(item["delete"]["operationId"], json!("deleteAppsV1NamespacedDeployment"));
    let collection = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments"];
    assert_eq!(collection["get"]["operationId"], json!("listAppsV1NamespacedDeployment"));
    assert_eq!(collection["post"]["operationId"], json!("createAppsV1NamespacedDeployment"));
    assert_eq!(collection["delete"]["operationId"], json!("deleteAppsV1CollectionNamespacedDeployment"));
    assert_eq!(collection["delete"]["x-kubernetes-action"], json!("deletecollection"));
    assert_eq!(
        doc["paths"]["/apis/apps/v1/deployments"]["get"]["operationId"],
        json!("listAppsV1DeploymentForAllNamespaces")
    );
    assert_eq!(
        doc["paths"]["/apis/apps/v1/watch/namespaces/{namespace}/deployments"]["get"]["operationId"],
        json!("watchAppsV1NamespacedDeploymentList")
    );
    let scale = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"];
    assert_eq!(scale["patch"]["operationId"], json!("patchAppsV1NamespacedDeploymentScale"));
    assert_eq!(scale["get"]["x-kubernetes-group-version-kind"]["kind"], json!("Scale"));
    assert!(doc["components"]["schemas"]["io.k8s.api.autoscaling.v1.Scale"].is_object());
}

#[test]
fn explain_finds_the_kind_schema() {
    let s = spec();
    let doc = s.v3_document("api/v1").unwrap();
    let schemas = &doc["components"]["schemas"];
    let pod = &schemas["io.k8s.api.core.v1.Pod"];
    assert_eq!(pod["x-kubernetes-group-version-kind"], json!([{"group": "", "version": "v1", "kind": "Pod"}]));
    assert_eq!(pod["type"], json!("object"));
    assert!(pod["properties"]["spec"]["description"].is_string());
    // Nodes are cluster-scoped.
    assert_eq!(doc["paths"]["/api/v1/nodes/{name}"]["patch"]["operationId"], json!("patchCoreV1Node"));
    assert!(doc["paths"]["/api/v1/nodes/{name}"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["name"] != "namespace"));
    // Subresources.
    let paths = &doc["paths"];
    assert_eq!(
        paths["/api/v1/namespaces/{namespace}/pods/{name}/eviction"]["post"]["operationId"],
        json!("createCoreV1NamespacedPodEviction")
    );
    assert_eq!(
        paths["/api/v1/namespaces/{namespace}/pods/{name}/exec"]["get"]["operationId"],
        json!("connectCoreV1GetNamespacedPodExec")
    );
    assert_eq!(
        paths["/api/v1/namespaces/{namespace}/pods/{name}/proxy/{path}"]["head"]["operationId"],
        json!("connectCoreV1HeadNamespacedPodProxyWithPath")
    );
    assert_eq!(
        paths["/api/v1/namespaces/{namespace}/pods/{name}/log"]["get"]["operationId"],
        json!("readCoreV1NamespacedPodLog")
    );
    assert_eq!(
        paths["/api/v1/namespaces/{namespace}/pods/{name}/status"]["put"]["operationId"],
        json!("replaceCoreV1NamespacedPodStatus")
    );
    assert!(schemas["io.k8s.api.policy.v1.Eviction"].is_object());
    assert!(schemas.get("io.k8s.api.apps.v1.Deployment").is_none(), "other group-versions' kinds stay out");
}

#[test]
fn every_v3_reference_resolves_within_its_document() {
    let s = spec();
    for (key, doc) in s.v3_documents() {
        assert_eq!(doc["openapi"], json!("3.0.0"), "{key}");
        assert!(!doc["paths"].as_object().unwrap().is_empty(), "{key}");
        assert_refs_resolve(&doc, schemas::REF_PREFIX, &doc["components"]["schemas"]);
    }
}

#[test]
fn v2_document_is_swagger_with_resolving_definitions() {
    let s = spec();
    let doc = s.v2_document();
    assert_eq!(doc["swagger"], json!("2.0"));
    let defs = &doc["definitions"];
    assert_refs_resolve(&doc, v2::V2_REF_PREFIX, defs);
    let text = doc.to_string();
    assert!(!text.contains("#/components/"));
    assert!(!text.contains("\"allOf\""));
    assert_eq!(defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"], json!("int-or-string"));
    let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
    assert_eq!(patch["operationId"], json!("patchCoreV1NamespacedPod"));
    assert!(patch["parameters"].as_array().unwrap().iter().any(|p| p["in"] == "body"));
    assert!(patch["consumes"].as_array().unwrap().contains(&json!("application/json-patch+json")));
}

#[test]
fn v2_protobuf_round_trips_the_definitions() {
    let s = spec();
    let doc = s.v2_document();
    let pb = protobuf::encode_document(&doc);
    let top = protobuf::tests::fields(&pb);
    let defs = top.iter().find(|(f, _, _)| *f == 9).expect("definitions");
    let count = protobuf::tests::fields(&defs.2).len();
    assert_eq!(count, doc["definitions"].as_object().unwrap().len());
    let paths = top.iter().find(|(f, _, _)| *f == 8).expect("paths");
    assert_eq!(protobuf::tests::fields(&paths.2).len(), doc["paths"].as_object().unwrap().len());
}

#[test]
fn patch_extensions_are_on_the_fields() {
    let s = spec();
    let core = s.v3_document("api/v1").unwrap();
    let spec = &core["components"]["schemas"]["io.k8s.api.core.v1.PodSpec"]["properties"];
    assert_eq!(spec["containers"]["x-kubernetes-patch-merge-key"], json!("name"));
    assert_eq!(spec["containers"]["x-kubernetes-patch-strategy"], json!("merge"));
    assert_eq!(spec["volumes"]["x-kubernetes-patch-strategy"], json!("merge,retainKeys"));
    let apps = s.v3_document("apis/apps/v1").unwrap();
    let strategy = &apps["components"]["schemas"]["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["strategy"];
    assert_eq!(strategy["x-kubernetes-patch-strategy"], json!("retainKeys"));
    assert!(strategy["allOf"].is_array(), "the extension sits next to the wrapped reference");
    let v2 = s.v2_document();
    let containers = &v2["definitions"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
    assert_eq!(containers["x-kubernetes-patch-merge-key"], json!("name"));
}

/// The whole built-in registry: every document renders, every reference
/// resolves, and every resource with a schema has its patch operation.
/// Prints the generation time and sizes (`--nocapture`).
#[test]
fn builtin_registry_documents() {
    let registry = crate::registry::Registry::builtin();
    let t = std::time::Instant::now();
    let s = Spec::build(registry.resources());
    let built = t.elapsed();
    let v3_bytes: usize = s.v3_keys().map(|k| s.v3_json(k).unwrap().len()).sum();
    let v3_done = t.elapsed();
    let docs = s.v3_documents();
    let v2_start = t.elapsed();
    let v2 = s.v2_document();
    let v2_json = serde_json::to_vec(&v2).unwrap();
    let pb = protobuf::encode_document(&v2);
    let all_done = t.elapsed();
    println!(
        "openapi: spec {built:?}, +v3 {:?} ({} docs, {} bytes), +v2 {:?} ({} bytes JSON, {} bytes protobuf); {} definitions",
        v3_done - built,
        docs.len(),
        v3_bytes,
        all_done - v2_start,
        v2_json.len(),
        pb.len(),
        v2["definitions"].as_object().unwrap().len()
    );
    for (key, doc) in &docs {
        assert_refs_resolve(doc, schemas::REF_PREFIX, &doc["components"]["schemas"]);
        let text = doc.to_string();
        assert!(!text.contains("\"$defs\"") && !text.contains("#/$defs"), "{key}");
    }
    assert_refs_resolve(&v2, v2::V2_REF_PREFIX, &v2["definitions"]);
    let mut missing = Vec::new();
    for r in registry.resources() {
        let key = gv_key(r.group, r.version);
        let doc = docs.iter().find(|(k, _)| *k == key).map(|(_, d)| d).unwrap();
        let has_kind_schema =
            doc["components"]["schemas"].as_object().unwrap().values().any(|s| {
                s["x-kubernetes-group-version-kind"].as_array().is_some_and(|g| g.contains(&gvk_json(&r.gvk())))
            });
        if !has_kind_schema {
            missing.push(format!("{}/{} {}", r.group, r.version, r.kind));
            continue;
        }
        if r.allows("patch") {
            let found = doc["paths"].as_object().unwrap().values().any(|item| {
                item["patch"]["x-kubernetes-group-version-kind"] == gvk_json(&r.gvk())
                    && item["patch"]["parameters"].as_array().unwrap().iter().any(|p| p["name"] == "fieldValidation")
            });
            assert!(found, "no patch operation for {}/{} {}", r.group, r.version, r.kind);
        }
    }
    assert!(missing.is_empty(), "kinds without a schema: {missing:?}");
}
