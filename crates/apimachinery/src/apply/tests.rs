use serde_json::{json, Value};

use super::fieldset::{field_set, path_string, FieldSet, PathElement, Schema};
use super::managed::{self, ManagerId, Operation};
use super::*;

fn deploy_schema() -> TrackOptions {
    TrackOptions { schema: Schema::for_kind("apps", "v1", "Deployment"), ignore_status: true }
}

fn cm_schema() -> TrackOptions {
    TrackOptions { schema: Schema::for_kind("", "v1", "ConfigMap"), ignore_status: false }
}

/// The fieldsV1 of the sample managedFields on the upstream "Server-Side
/// Apply" documentation page (a ConfigMap applied by `kubectl`).
#[test]
fn fields_v1_round_trips_the_documented_configmap_example() {
    let doc = json!({"f:metadata": {"f:labels": {"f:test-label": {}}}, "f:data": {"f:key": {}}});
    let set = FieldSet::from_fields_v1(&doc).unwrap();
    assert_eq!(set.len(), 2);
    assert!(set.contains(&[PathElement::Field("data".into()), PathElement::Field("key".into())]));
    assert_eq!(set.to_fields_v1(), doc);

    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "test-cm", "namespace": "default", "labels": {"test-label": "test"}},
        "data": {"key": "some value"}});
    assert_eq!(field_set(&cm, cm_schema().schema, false).to_fields_v1(), doc);
}

/// Associative list items are members with children, written with `.`;
/// keys are compact JSON with sorted names (shape of upstream's Deployment
/// managedFields: `k:{"name":"nginx"}`, `k:{"containerPort":80,"protocol":"TCP"}`).
#[test]
fn deployment_containers_are_keyed_by_name_and_ports_by_port_and_protocol() {
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": 2, "template": {"spec": {"containers": [
            {"name": "nginx", "image": "nginx:1.25", "ports": [{"containerPort": 80}], "args": ["a", "b"]}
        ]}}},
        "status": {"replicas": 2}});
    let fs = field_set(&d, deploy_schema().schema, true).to_fields_v1();
    assert_eq!(
        fs,
        json!({
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"nginx\"}": {
                    ".": {}, "f:args": {}, "f:image": {}, "f:name": {},
                    "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}
                }
            }}}}
        })
    );
    let back = FieldSet::from_fields_v1(&fs).unwrap();
    assert_eq!(back.to_fields_v1(), fs);
}

#[test]
fn finalizers_are_a_set_and_paths_print_as_upstream() {
    let cm = json!({"metadata": {"name": "x", "finalizers": ["a/b"]}});
    let fs = field_set(&cm, cm_schema().schema, false);
    assert_eq!(fs.to_fields_v1(), json!({"f:metadata": {"f:finalizers": {"v:\"a/b\"": {}}}}));
    let p = fs.iter().next().unwrap();
    assert_eq!(path_string(p), ".metadata.finalizers[=\"a/b\"]");
    let key = PathElement::decode("k:{\"protocol\":\"TCP\",\"containerPort\":80}").unwrap();
    assert_eq!(path_string(&[PathElement::Field("ports".into()), key]), ".ports[containerPort=80,protocol=\"TCP\"]");
    assert_eq!(PathElement::decode("i:3").unwrap(), PathElement::Index(3));
    assert!(PathElement::decode("x:1").is_err());
}

#[test]
fn set_operations() {
    let a = FieldSet::from_fields_v1(&json!({"f:a": {}, "f:b": {"f:c": {}}})).unwrap();
    let b = FieldSet::from_fields_v1(&json!({"f:b": {"f:c": {}, "f:d": {}}})).unwrap();
    assert_eq!(a.union(&b).to_fields_v1(), json!({"f:a": {}, "f:b": {"f:c": {}, "f:d": {}}}));
    assert_eq!(a.difference(&b).to_fields_v1(), json!({"f:a": {}}));
    assert_eq!(a.intersection(&b).to_fields_v1(), json!({"f:b": {"f:c": {}}}));
    let prefix = FieldSet::from_fields_v1(&json!({"f:b": {}})).unwrap();
    assert_eq!(b.recursive_difference(&prefix), FieldSet::new());
    assert_eq!(a.recursive_difference(&prefix).to_fields_v1(), json!({"f:a": {}}));
}

#[test]
fn manager_from_user_agent_prefix() {
    assert_eq!(manager_or_user_agent(None, Some("kubectl/v1.33.0 (linux/amd64) kubernetes/abc")), "kubectl");
    assert_eq!(manager_or_user_agent(Some("kubectl-edit"), Some("kubectl/v1.33.0")), "kubectl-edit");
    assert_eq!(manager_or_user_agent(Some(""), None), "");
}

fn deployment(replicas: i64, image: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "nginx", "image": image}]}}}})
}

fn req<'a>(manager: &'a str, force: bool) -> ApplyRequest<'a> {
    ApplyRequest {
        manager,
        api_version: "apps/v1",
        subresource: "",
        force,
        opts: deploy_schema(),
        now: "2026-01-01T00:00:00Z",
    }
}

#[test]
fn create_records_every_field_for_the_creator() {
    let mut d = deployment(1, "nginx");
    let id = ManagerId::update("kubectl-create", "apps/v1", "");
    track_update(None, &mut d, &id, deploy_schema(), "2026-01-01T00:00:00Z");
    let mf = &d["metadata"]["managedFields"];
    assert_eq!(mf.as_array().unwrap().len(), 1);
    assert_eq!(mf[0]["manager"], "kubectl-create");
    assert_eq!(mf[0]["operation"], "Update");
    assert_eq!(mf[0]["apiVersion"], "apps/v1");
    assert_eq!(mf[0]["fieldsType"], "FieldsV1");
    assert_eq!(mf[0]["time"], "2026-01-01T00:00:00Z");
    assert!(mf[0].get("subresource").is_none());
    assert_eq!(mf[0]["fieldsV1"]["f:spec"]["f:replicas"], json!({}));
    // Shape of upstream's kubectl-create entries: new maps carry ".",
    // non-pointer structs (spec, template) do not, selectors are atomic.
    let mut with_labels = deployment(1, "nginx");
    with_labels["metadata"]["labels"] = json!({"app": "web"});
    with_labels["spec"]["selector"] = json!({"matchLabels": {"app": "web"}});
    track_update(None, &mut with_labels, &id, deploy_schema(), "t");
    let f = &with_labels["metadata"]["managedFields"][0]["fieldsV1"];
    assert_eq!(f["f:metadata"], json!({"f:labels": {".": {}, "f:app": {}}}));
    assert_eq!(f["f:spec"]["f:selector"], json!({}));
    assert!(f["f:spec"].get(".").is_none() && f["f:spec"]["f:template"].get(".").is_none(), "{f}");
    assert!(mf[0]["fieldsV1"]["f:metadata"].is_null(), "name and namespace are not tracked: {mf}");
}

#[test]
fn update_moves_changed_fields_and_keeps_untouched_objects_identical() {
    let mut d = deployment(1, "nginx");
    track_update(None, &mut d, &ManagerId::update("a", "apps/v1", ""), deploy_schema(), "t1");
    let mut same = d.clone();
    track_update(Some(&d), &mut same, &ManagerId::update("b", "apps/v1", ""), deploy_schema(), "t2");
    assert_eq!(same, d, "a no-op update changes no entry");

    let mut scaled = d.clone();
    scaled["spec"]["replicas"] = json!(3);
    track_update(Some(&d), &mut scaled, &ManagerId::update("b", "apps/v1", ""), deploy_schema(), "t2");
    let entries = managed::decode(&scaled);
    assert_eq!(entries.len(), 2);
    let b = entries.iter().find(|e| e.manager == "b").unwrap();
    assert_eq!(b.fields.to_fields_v1(), json!({"f:spec": {"f:replicas": {}}}));
    let a = entries.iter().find(|e| e.manager == "a").unwrap();
    assert!(a.fields.to_fields_v1()["f:spec"].get("f:replicas").is_none());

    // Removing every label drops the map's own member as well.
    let mut labeled = d.clone();
    labeled["metadata"]["labels"] = json!({"x": "1"});
    track_update(Some(&d), &mut labeled, &ManagerId::update("l", "apps/v1", ""), deploy_schema(), "t3");
    let mut unlabeled = labeled.clone();
    unlabeled["metadata"].as_object_mut().unwrap().remove("labels");
    track_update(Some(&labeled), &mut unlabeled, &ManagerId::update("l", "apps/v1", ""), deploy_schema(), "t4");
    assert!(managed::decode(&unlabeled).iter().all(|e| e.manager != "l"), "{unlabeled}");
}

#[test]
fn managed_fields_in_request_replace_and_placeholder_clears() {
    let mut d = deployment(1, "nginx");
    track_update(None, &mut d, &ManagerId::update("a", "apps/v1", ""), deploy_schema(), "t1");
    let mut cleared = d.clone();
    cleared["metadata"]["managedFields"] = json!([{}]);
    track_update(Some(&d), &mut cleared, &ManagerId::update("a", "apps/v1", ""), deploy_schema(), "t2");
    assert!(cleared["metadata"].get("managedFields").is_none());

    let mut kept = d.clone();
    kept["metadata"]["managedFields"] = json!([]);
    track_update(Some(&d), &mut kept, &ManagerId::update("a", "apps/v1", ""), deploy_schema(), "t2");
    assert_eq!(kept["metadata"]["managedFields"], d["metadata"]["managedFields"]);
}

#[test]
fn apply_creates_then_reapply_is_a_noop() {
    let cfg = deployment(2, "nginx");
    let created = apply(None, &cfg, &req("kubectl", false)).unwrap();
    let mf = &created["metadata"]["managedFields"][0];
    assert_eq!(mf["manager"], "kubectl");
    assert_eq!(mf["operation"], "Apply");
    assert_eq!(created["spec"]["replicas"], 2);
    let again = apply(Some(&created), &cfg, &ApplyRequest { now: "later", ..req("kubectl", false) }).unwrap();
    assert_eq!(again, created);
}

#[test]
fn apply_conflicts_with_another_manager_unless_forced() {
    let cfg = deployment(2, "nginx");
    let live = apply(None, &cfg, &req("kubectl", false)).unwrap();
    let mut scaled = live.clone();
    scaled["spec"]["replicas"] = json!(5);
    track_update(Some(&live), &mut scaled, &ManagerId::update("other", "apps/v1", ""), deploy_schema(), "t2");

    let err = apply(Some(&scaled), &cfg, &req("kubectl", false)).unwrap_err();
    assert_eq!(err.code(), 409);
    assert_eq!(err.to_string(), "Apply failed with 1 conflict: conflict with \"other\" using apps/v1: .spec.replicas");
    let st = err.to_status();
    assert_eq!(st["reason"], "Conflict");
    assert_eq!(
        st["details"]["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"other\" using apps/v1", "field": ".spec.replicas"}])
    );

    // Same value: shared ownership, no conflict.
    let shared = apply(Some(&scaled), &deployment(5, "nginx"), &req("kubectl", false)).unwrap();
    assert_eq!(shared["spec"]["replicas"], 5);

    let forced = apply(Some(&scaled), &cfg, &req("kubectl", true)).unwrap();
    assert_eq!(forced["spec"]["replicas"], 2);
    let entries = managed::decode(&forced);
    assert!(entries.iter().all(|e| e.manager != "other"), "other lost its only field: {entries:?}");
}

#[test]
fn apply_removes_fields_dropped_from_the_config() {
    let mut cfg = deployment(2, "nginx");
    cfg["metadata"]["labels"] = json!({"a": "1", "b": "2"});
    let live = apply(None, &cfg, &req("kubectl", false)).unwrap();
    let mut cfg2 = deployment(2, "nginx");
    cfg2["metadata"]["labels"] = json!({"a": "1"});
    cfg2["spec"].as_object_mut().unwrap().remove("replicas");
    let out = apply(Some(&live), &cfg2, &req("kubectl", false)).unwrap();
    assert_eq!(out["metadata"]["labels"], json!({"a": "1"}));
    assert!(out["spec"].get("replicas").is_none());
    let e = &managed::decode(&out)[0];
    assert_eq!(e.operation, Operation::Apply);
    assert!(!e.fields.to_fields_v1()["f:spec"].as_object().unwrap().contains_key("f:replicas"));
}

#[test]
fn apply_merges_keyed_lists_and_rejects_managed_fields() {
    let live = apply(None, &deployment(1, "nginx"), &req("a", false)).unwrap();
    let mut side = deployment(1, "nginx");
    side["spec"]["template"]["spec"]["containers"] = json!([{"name": "sidecar", "image": "busybox"}]);
    side["spec"].as_object_mut().unwrap().remove("replicas");
    let out = apply(Some(&live), &side, &req("b", false)).unwrap();
    let names: Vec<&str> = out["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["nginx", "sidecar"]);

    let mut bad = deployment(1, "nginx");
    bad["metadata"]["managedFields"] = json!([]);
    assert_eq!(apply(None, &bad, &req("a", false)).unwrap_err().code(), 400);
}

#[test]
fn first_apply_to_an_untracked_object_credits_before_first_apply() {
    let live = deployment(3, "nginx");
    let err = apply(Some(&live), &deployment(2, "nginx"), &req("kubectl", false)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"before-first-apply\" using apps/v1: .spec.replicas"
    );
    let out = apply(Some(&live), &deployment(3, "nginx"), &req("kubectl", false)).unwrap();
    let entries = managed::decode(&out);
    let bfa = entries.iter().find(|e| e.manager == "before-first-apply").unwrap();
    assert_eq!(bfa.operation, Operation::Update);
    assert!(bfa.fields.to_fields_v1()["f:spec"]["f:replicas"].is_object());
}

#[test]
fn several_conflicts_are_grouped_by_manager() {
    let live = apply(None, &deployment(2, "nginx"), &req("kubectl", false)).unwrap();
    let mut changed = live.clone();
    changed["spec"]["replicas"] = json!(4);
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = json!("httpd");
    track_update(Some(&live), &mut changed, &ManagerId::update("ops", "apps/v1", ""), deploy_schema(), "t2");
    let err = apply(Some(&changed), &deployment(2, "nginx"), &req("kubectl", false)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 2 conflicts: conflicts with \"ops\" using apps/v1:\n- .spec.replicas\n- .spec.template.spec.containers[name=\"nginx\"].image"
    );
    let causes = &err.to_status()["details"]["causes"];
    assert_eq!(causes[1]["field"], ".spec.template.spec.containers[name=\"nginx\"].image");
}

#[test]
fn more_than_ten_updaters_merge_the_oldest_into_ancient_changes() {
    let mut obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}});
    for i in 0..12 {
        let mut next = obj.clone();
        next["data"][format!("k{i}")] = json!("v");
        let id = ManagerId::update(&format!("m{i:02}"), "v1", "");
        track_update(Some(&obj).filter(|_| i > 0), &mut next, &id, cm_schema(), &format!("2026-01-01T00:00:{i:02}Z"));
        obj = next;
    }
    let entries = managed::decode(&obj);
    assert_eq!(entries.len(), MAX_UPDATE_MANAGERS);
    let ancient = entries.iter().find(|e| e.manager == ANCIENT_CHANGES).unwrap();
    // m00 (the creator: `data` itself and k0) became the bucket, m01 and m02
    // were merged into it.
    assert_eq!(ancient.time.as_deref(), Some("2026-01-01T00:00:02Z"));
    assert_eq!(ancient.fields.to_fields_v1(), json!({"f:data": {".": {}, "f:k0": {}, "f:k1": {}, "f:k2": {}}}));
    assert!(entries.iter().all(|e| e.manager != "m00" && e.manager != "m02"));
    assert!(entries.iter().any(|e| e.manager == "m03"));
}

#[test]
fn kubectl_takes_over_fields_still_at_their_client_side_applied_value() {
    let mut live = deployment(2, "nginx");
    let last = serde_json::to_string(&deployment(2, "nginx")).unwrap() + "\n";
    live["metadata"]["annotations"] = json!({ (LAST_APPLIED_ANNOTATION): last });
    track_update(
        None,
        &mut live,
        &ManagerId::update("kubectl-client-side-apply", "apps/v1", ""),
        deploy_schema(),
        "t1",
    );

    // Another manager name gets the conflict.
    let err = apply(Some(&live), &deployment(3, "nginx"), &req("tool", false)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using apps/v1: .spec.replicas"
    );
    // kubectl itself migrates: forced, and the annotation follows the applied config.
    let out = apply(Some(&live), &deployment(3, "nginx"), &req("kubectl", false)).unwrap();
    assert_eq!(out["spec"]["replicas"], 3);
    let annotation = out["metadata"]["annotations"][LAST_APPLIED_ANNOTATION].as_str().unwrap();
    assert!(annotation.ends_with('\n'));
    assert_eq!(serde_json::from_str::<Value>(annotation).unwrap(), deployment(3, "nginx"));

    // A field changed since the last client-side apply still conflicts.
    let mut drifted = live.clone();
    drifted["spec"]["replicas"] = json!(5);
    track_update(
        Some(&live),
        &mut drifted,
        &ManagerId::update("kubectl-client-side-apply", "apps/v1", ""),
        deploy_schema(),
        "t2",
    );
    let err = apply(Some(&drifted), &deployment(3, "nginx"), &req("kubectl", false)).unwrap_err();
    assert_eq!(err.code(), 409);
}

#[test]
fn pruning_keeps_maps_whose_keys_are_still_applied() {
    // After kubectl's client-side → server-side migration the applier owns
    // the labels map itself (".") as well as its keys.
    let live = apply(None, &deployment(2, "nginx"), &req("kubectl", false)).unwrap();
    let mut live = live;
    live["metadata"]["labels"] = json!({"app": "web", "extra": "x"});
    let mut entries = managed::decode(&live);
    let extra: FieldSet =
        FieldSet::from_fields_v1(&json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}, "f:extra": {}}}})).unwrap();
    entries[0].fields = entries[0].fields.union(&extra);
    managed::encode_into(&mut live, entries);

    let mut cfg = deployment(2, "nginx");
    cfg["metadata"]["labels"] = json!({"app": "web"});
    let out = apply(Some(&live), &cfg, &req("kubectl", false)).unwrap();
    assert_eq!(out["metadata"]["labels"], json!({"app": "web"}));
    let set = FieldSet::from_fields_v1(&json!({"f:a": {".": {}, "f:b": {}}, "f:ab": {}})).unwrap();
    assert!(set.has_descendant(&[PathElement::Field("a".into())]));
    assert!(!set.has_descendant(&[PathElement::Field("ab".into())]));
}
