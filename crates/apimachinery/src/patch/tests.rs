//! Patch tests. Expected values follow upstream behaviour: RFC 6902 / 7386
//! examples, the Kubernetes docs task "Update API Objects in Place Using
//! kubectl patch", the wire captures in kubectl-wire.md §6–§7, and the
//! semantics of apimachinery's strategicpatch and evanphx/json-patch v4.

use serde_json::{json, Value};

use super::*;
use crate::registry::GroupVersionKind;

const DEPLOYMENT: GroupVersionKind = GroupVersionKind { group: "apps", version: "v1", kind: "Deployment" };
const POD: GroupVersionKind = GroupVersionKind { group: "", version: "v1", kind: "Pod" };
const SERVICE: GroupVersionKind = GroupVersionKind { group: "", version: "v1", kind: "Service" };
const NODE: GroupVersionKind = GroupVersionKind { group: "", version: "v1", kind: "Node" };
const CONFIGMAP: GroupVersionKind = GroupVersionKind { group: "", version: "v1", kind: "ConfigMap" };
const PDB: GroupVersionKind = GroupVersionKind { group: "policy", version: "v1", kind: "PodDisruptionBudget" };

fn smp(gvk: &GroupVersionKind, original: Value, patch: Value) -> Value {
    apply_patch(PatchType::StrategicMerge, &original, patch.to_string().as_bytes(), Some(gvk)).unwrap()
}

fn smp_err(gvk: &GroupVersionKind, original: Value, patch: &str) -> ApiError {
    apply_patch(PatchType::StrategicMerge, &original, patch.as_bytes(), Some(gvk)).unwrap_err()
}

fn merge(original: Value, patch: Value) -> Value {
    apply_patch(PatchType::Merge, &original, patch.to_string().as_bytes(), None).unwrap()
}

fn jsonp(original: Value, patch: Value) -> Result<Value, ApiError> {
    apply_patch(PatchType::Json, &original, patch.to_string().as_bytes(), None)
}

/// The SMP mechanics on a synthetic type with one field per strategy.
fn smp_item(original: Value, patch: Value) -> Result<Value, strategic::SmpError> {
    let Value::Object(p) = patch else { panic!("patch must be an object") };
    strategic::apply(&original, p, metadata::type_info(metadata::test_types::ITEM))
}

// ---------------------------------------------------------------------------
// content types and 415

mod content_type {
    use super::*;

    #[test]
    fn parses_the_four_patch_media_types() {
        assert_eq!(PatchType::from_content_type("application/json-patch+json"), Some(PatchType::Json));
        assert_eq!(PatchType::from_content_type("application/merge-patch+json"), Some(PatchType::Merge));
        assert_eq!(
            PatchType::from_content_type("application/strategic-merge-patch+json"),
            Some(PatchType::StrategicMerge)
        );
        assert_eq!(PatchType::from_content_type("application/apply-patch+yaml"), Some(PatchType::Apply));
        assert_eq!(PatchType::from_content_type("application/merge-patch+json; charset=utf-8"), Some(PatchType::Merge));
        assert_eq!(PatchType::from_content_type("application/json"), None);
        assert_eq!(PatchType::from_content_type("application/apply-patch+cbor"), None);
        assert_eq!(PatchType::from_content_type(""), None);
        for t in [PatchType::Json, PatchType::Merge, PatchType::StrategicMerge, PatchType::Apply] {
            assert_eq!(PatchType::from_content_type(t.media_type()), Some(t));
        }
    }

    #[test]
    fn strategic_merge_patch_on_a_custom_resource_is_415() {
        let e = patch_type_for_request("application/strategic-merge-patch+json", false).unwrap_err();
        assert_eq!(e.code(), 415);
        assert_eq!(e.reason(), "UnsupportedMediaType");
        assert_eq!(
            e.to_string(),
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        );
        // apply_patch refuses it too when no built-in kind is given.
        let e = apply_patch(PatchType::StrategicMerge, &json!({}), b"{}", None).unwrap_err();
        assert_eq!(e.code(), 415);
        assert!(patch_type_for_request("application/merge-patch+json", false).is_ok());
    }

    #[test]
    fn unknown_media_type_lists_what_built_ins_accept() {
        let e = patch_type_for_request("text/plain", true).unwrap_err();
        assert_eq!(e.code(), 415);
        assert_eq!(
            e.to_string(),
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
        );
        assert_eq!(
            patch_type_for_request("application/strategic-merge-patch+json", true).unwrap(),
            PatchType::StrategicMerge
        );
    }

    #[test]
    fn apply_patches_are_not_handled_here() {
        let e = apply_patch(PatchType::Apply, &json!({}), b"{}", Some(&POD)).unwrap_err();
        assert_eq!(e.code(), 500);
        assert!(e.to_string().contains("server-side apply"));
    }
}

// ---------------------------------------------------------------------------
// JSON patch

mod json_patch_tests {
    use super::*;

    fn ok(doc: Value, patch: Value) -> Value {
        jsonp(doc, patch).unwrap()
    }

    fn fails(doc: Value, patch: Value) {
        let e = jsonp(doc, patch).unwrap_err();
        assert_eq!(e.code(), 422, "{}", e);
        assert_eq!(e.to_string(), GENERIC_INVALID_MESSAGE);
    }

    // RFC 6902 appendix A (object documents).
    #[test]
    fn rfc6902_examples() {
        assert_eq!(
            ok(json!({"foo":"bar"}), json!([{"op":"add","path":"/baz","value":"qux"}])),
            json!({"baz":"qux","foo":"bar"})
        );
        assert_eq!(
            ok(json!({"foo":["bar","baz"]}), json!([{"op":"add","path":"/foo/1","value":"qux"}])),
            json!({"foo":["bar","qux","baz"]})
        );
        assert_eq!(ok(json!({"baz":"qux","foo":"bar"}), json!([{"op":"remove","path":"/baz"}])), json!({"foo":"bar"}));
        assert_eq!(
            ok(json!({"foo":["bar","qux","baz"]}), json!([{"op":"remove","path":"/foo/1"}])),
            json!({"foo":["bar","baz"]})
        );
        assert_eq!(
            ok(json!({"baz":"qux","foo":"bar"}), json!([{"op":"replace","path":"/baz","value":"boo"}])),
            json!({"baz":"boo","foo":"bar"})
        );
        assert_eq!(
            ok(
                json!({"foo":{"bar":"baz","waldo":"fred"},"qux":{"corge":"grault"}}),
                json!([{"op":"move","from":"/foo/waldo","path":"/qux/thud"}])
            ),
            json!({"foo":{"bar":"baz"},"qux":{"corge":"grault","thud":"fred"}})
        );
        assert_eq!(
            ok(json!({"foo":["all","grass","cows","eat"]}), json!([{"op":"move","from":"/foo/1","path":"/foo/3"}])),
            json!({"foo":["all","cows","eat","grass"]})
        );
        assert_eq!(
            ok(
                json!({"baz":"qux","foo":["a",2,"c"]}),
                json!([{"op":"test","path":"/baz","value":"qux"},{"op":"test","path":"/foo/1","value":2}])
            ),
            json!({"baz":"qux","foo":["a",2,"c"]})
        );
        fails(json!({"baz":"qux"}), json!([{"op":"test","path":"/baz","value":"bar"}]));
        assert_eq!(
            ok(json!({"foo":"bar"}), json!([{"op":"add","path":"/child","value":{"grandchild":{}}}])),
            json!({"foo":"bar","child":{"grandchild":{}}})
        );
        // A.11: unrecognized members are ignored.
        assert_eq!(
            ok(json!({"foo":"bar"}), json!([{"op":"add","path":"/baz","value":"qux","xyz":123}])),
            json!({"foo":"bar","baz":"qux"})
        );
        // A.12: adding to a nonexistent target.
        fails(json!({"foo":"bar"}), json!([{"op":"add","path":"/baz/bat","value":"qux"}]));
        // A.14: ~ escapes.
        assert_eq!(ok(json!({"/":9,"~1":10}), json!([{"op":"test","path":"/~01","value":10}])), json!({"/":9,"~1":10}));
        assert_eq!(ok(json!({"a/b":1}), json!([{"op":"remove","path":"/a~1b"}])), json!({}));
        // A.15: a string is not a number.
        fails(json!({"/":9,"~1":10}), json!([{"op":"test","path":"/~01","value":"10"}]));
        // A.16: adding an array value.
        assert_eq!(
            ok(json!({"foo":["bar"]}), json!([{"op":"add","path":"/foo/-","value":["abc","def"]}])),
            json!({"foo":["bar",["abc","def"]]})
        );
    }

    #[test]
    fn copy_and_whole_document_replace() {
        assert_eq!(
            ok(json!({"foo":{"bar":"baz"}}), json!([{"op":"copy","from":"/foo","path":"/qux"}])),
            json!({"foo":{"bar":"baz"},"qux":{"bar":"baz"}})
        );
        assert_eq!(ok(json!({"a":1}), json!([{"op":"replace","path":"","value":{"b":2}}])), json!({"b":2}));
        assert_eq!(ok(json!({"a":1}), json!([{"op":"test","path":"","value":{"a":1}}])), json!({"a":1}));
        fails(json!({"a":1}), json!([{"op":"replace","path":"","value":"x"}]));
        fails(json!({"a":1}), json!([{"op":"add","path":"","value":{"b":2}}]));
    }

    // Where evanphx/json-patch v4 (used by the API server) departs from RFC 6902.
    #[test]
    fn upstream_library_quirks() {
        // Negative indices count from the end.
        assert_eq!(ok(json!({"a":[1,2,3]}), json!([{"op":"remove","path":"/a/-1"}])), json!({"a":[1,2]}));
        assert_eq!(ok(json!({"a":[1,2,3]}), json!([{"op":"replace","path":"/a/-3","value":0}])), json!({"a":[0,2,3]}));
        // add at -1 appends (the index is taken against the grown array).
        assert_eq!(
            ok(json!({"foo":["bar","baz"]}), json!([{"op":"add","path":"/foo/-1","value":"qux"}])),
            json!({"foo":["bar","baz","qux"]})
        );
        fails(json!({"foo":["bar","baz"]}), json!([{"op":"add","path":"/foo/-4","value":"bum"}]));
        fails(json!({"foo":["bar"]}), json!([{"op":"remove","path":"/foo/-2"}]));
        fails(json!({"foo":[]}), json!([{"op":"remove","path":"/foo/-"}]));
        // replace of a missing object member adds it; of a missing index fails.
        assert_eq!(ok(json!({"a":1}), json!([{"op":"replace","path":"/b","value":2}])), json!({"a":1,"b":2}));
        fails(json!({"foo":["bar","baz"]}), json!([{"op":"replace","path":"/foo/2","value":"bum"}]));
        // copy from a missing member copies null.
        assert_eq!(ok(json!({"a":1}), json!([{"op":"copy","from":"/nope","path":"/b"}])), json!({"a":1,"b":null}));
        // test of a missing member against null passes; against {} or [] fails.
        assert_eq!(ok(json!({"baz":"qux"}), json!([{"op":"test","path":"/foo","value":null}])), json!({"baz":"qux"}));
        assert_eq!(ok(json!({"foo":null}), json!([{"op":"test","path":"/foo","value":null}])), json!({"foo":null}));
        fails(json!({"foo":{}}), json!([{"op":"test","path":"/foo","value":null}]));
        fails(json!({"foo":[]}), json!([{"op":"test","path":"/foo"}]));
        // An absent value is null.
        assert_eq!(ok(json!({}), json!([{"op":"add","path":"/a"}])), json!({"a":null}));
        // A path without a leading slash ignores its first segment.
        assert_eq!(ok(json!({"a":{"b":1}}), json!([{"op":"add","path":"x/c","value":2}])), json!({"a":{"b":1},"c":2}));
        // Leading zeros and '+' parse as indices.
        assert_eq!(ok(json!({"a":[1,2]}), json!([{"op":"remove","path":"/a/01"}])), json!({"a":[1]}));
        // Missing path, unknown or missing op.
        fails(json!({"foo":"bar"}), json!([{"op":"add","pathz":"/baz","value":"qux"}]));
        fails(json!({}), json!([{"op":null,"path":""}]));
        fails(json!({}), json!([{"op":"frobnicate","path":"/a"}]));
        fails(json!({}), json!([null]));
        // Moves and copies past the end of an array.
        fails(json!({"foo":["all","grass","cows","eat"]}), json!([{"op":"move","from":"/foo/1","path":"/foo/4"}]));
        fails(json!({"foo":["bar"]}), json!([{"op":"copy","path":"/foo/2","from":"/foo/0"}]));
        fails(json!({"a":{"b":{"d":1}}}), json!([{"op":"move","from":"/a/b/c","path":"/a/b/e"}]));
        // Through a scalar or null.
        fails(json!({"a":1}), json!([{"op":"add","path":"/a/b","value":1}]));
        fails(json!({"a":null}), json!([{"op":"add","path":"/a/b","value":1}]));
    }

    #[test]
    fn operations_apply_in_order_and_atomically() {
        let doc = json!({"spec":{"replicas":1}});
        // The second op fails: nothing of the first is kept (the caller gets an error).
        fails(
            doc.clone(),
            json!([{"op":"replace","path":"/spec/replicas","value":3},{"op":"test","path":"/spec/replicas","value":1}]),
        );
        assert_eq!(
            ok(
                doc,
                json!([{"op":"replace","path":"/spec/replicas","value":3},{"op":"test","path":"/spec/replicas","value":3}])
            ),
            json!({"spec":{"replicas":3}})
        );
    }

    #[test]
    fn kubectl_rollout_undo_patch() {
        let live = json!({
            "metadata":{"name":"web","annotations":{"deployment.kubernetes.io/revision":"2"}},
            "spec":{"replicas":2,"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"nginx","image":"nginx:1.26"}]}}}
        });
        let patch = json!([
            {"op":"replace","path":"/spec/template","value":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"nginx","image":"nginx:1.25"}]}}},
            {"op":"replace","path":"/metadata/annotations","value":{"deployment.kubernetes.io/revision":"2"}}
        ]);
        let out = ok(live, patch);
        assert_eq!(out["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.25");
        assert_eq!(out["spec"]["replicas"], 2);
    }

    #[test]
    fn failed_test_op_is_upstreams_generic_422() {
        let e = jsonp(
            json!({"metadata":{"resourceVersion":"5"}}),
            json!([{"op":"test","path":"/metadata/resourceVersion","value":"4"}]),
        )
        .unwrap_err();
        assert_eq!(
            e.to_status(),
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                   "message":"the server rejected our request due to an error in our request",
                   "reason":"Invalid","details":{},"code":422})
        );
    }

    #[test]
    fn the_library_message_is_kept_for_logs() {
        let ops = json_patch::decode(br#"[{"op":"test","path":"/baz","value":"bar"}]"#).unwrap();
        let e = json_patch::apply(&json!({"baz":"qux"}), &ops).unwrap_err();
        assert_eq!(e.to_string(), "testing value /baz failed: test failed");
        let ops = json_patch::decode(br#"[{"op":"remove","path":"/nope"}]"#).unwrap();
        let e = json_patch::apply(&json!({}), &ops).unwrap_err();
        assert_eq!(
            e.to_string(),
            "error in remove for path: '/nope': Unable to remove nonexistent key: nope: missing value"
        );
        let e = json_patch::apply_value(&json!({"a":[1]}), &json!([{"op":"add","path":"/a/5","value":1}])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "error in add for path: '/a/5': Unable to access invalid index: 5: invalid index referenced"
        );
    }

    #[test]
    fn malformed_bodies_are_400() {
        let bad = |body: &str| apply_patch(PatchType::Json, &json!({}), body.as_bytes(), None).unwrap_err();
        let e = bad(r#"{"op":"add"}"#);
        assert_eq!(e.code(), 400);
        assert_eq!(
            e.to_string(),
            "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp"
        );
        assert_eq!(
            bad(r#"["x"]"#).to_string(),
            "error decoding patch: json: cannot unmarshal string into Go value of type handlers.jsonPatchOp"
        );
        assert_eq!(
            bad(r#"[{"op":"add","path":1}]"#).to_string(),
            "error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.path of type string"
        );
        assert_eq!(bad("[").to_string(), "error decoding patch: unexpected end of JSON input");
        assert_eq!(
            bad("[x]").to_string(),
            "error decoding patch: invalid character 'x' looking for beginning of value"
        );
        assert_eq!(bad("[]x").to_string(), "error decoding patch: invalid character 'x' after top-level value");
        assert_eq!(bad("[1 2]").to_string(), "error decoding patch: invalid character '2' after array element");
        assert_eq!(
            bad("[{1:2}]").to_string(),
            "error decoding patch: invalid character '1' looking for beginning of object key string"
        );
        assert_eq!(bad("").code(), 400);
        // null is an empty patch.
        assert_eq!(apply_patch(PatchType::Json, &json!({"a":1}), b"null", None).unwrap(), json!({"a":1}));
    }

    #[test]
    fn operation_count_is_capped_at_10000() {
        let ops: Vec<Value> = (0..10_001).map(|_| json!({"op":"test","path":"/a","value":1})).collect();
        let e = jsonp(json!({"a":1}), Value::Array(ops)).unwrap_err();
        assert_eq!(e.code(), 413);
        assert_eq!(
            e.to_string(),
            "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
        );
        let ops: Vec<Value> = (0..10_000).map(|_| json!({"op":"test","path":"/a","value":1})).collect();
        assert!(jsonp(json!({"a":1}), Value::Array(ops)).is_ok());
    }

    #[test]
    fn copies_are_capped_in_total_size() {
        let big = "A".repeat(49);
        let ops = json_patch::decode(
            br#"[{"op":"copy","path":"/foo/-","from":"/foo/1"},{"op":"copy","path":"/foo/-","from":"/foo/1"}]"#,
        )
        .unwrap();
        let doc = json!({"foo":["A", big]});
        // Each copy adds 51 bytes (quotes included): two exceed a 100-byte limit.
        assert!(json_patch::apply_with_copy_limit(&doc, &ops[..1], Some(100)).is_ok());
        let e = json_patch::apply_with_copy_limit(&doc, &ops, Some(100)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Unable to complete the copy, the accumulated size increase of copy is 102, exceeding the limit 100"
        );
        assert_eq!(json_patch::ACCUMULATED_COPY_SIZE_LIMIT, 3 * 1024 * 1024);
    }

    #[test]
    fn a_non_object_result_is_invalid() {
        let e = jsonp(json!({"a":1}), json!([{"op":"replace","path":"","value":[1]}])).unwrap_err();
        assert_eq!(e.code(), 422);
        assert_eq!(e.reason(), "Invalid");
        let s = e.to_status();
        assert_eq!(s["details"]["causes"][0]["field"], "patch");
        assert_eq!(s["details"]["causes"][0]["reason"], "FieldValueInvalid");
    }
}

// ---------------------------------------------------------------------------
// JSON merge patch

mod merge_patch_tests {
    use super::*;

    // RFC 7386 appendix A, object targets.
    #[test]
    fn rfc7386_examples() {
        let cases = [
            (json!({"a":"b"}), json!({"a":"c"}), json!({"a":"c"})),
            (json!({"a":"b"}), json!({"b":"c"}), json!({"a":"b","b":"c"})),
            (json!({"a":"b"}), json!({"a":null}), json!({})),
            (json!({"a":"b","b":"c"}), json!({"a":null}), json!({"b":"c"})),
            (json!({"a":["b"]}), json!({"a":"c"}), json!({"a":"c"})),
            (json!({"a":"c"}), json!({"a":["b"]}), json!({"a":["b"]})),
            (json!({"a":{"b":"c"}}), json!({"a":{"b":"d","c":null}}), json!({"a":{"b":"d"}})),
            (json!({"a":[{"b":"c"}]}), json!({"a":[1]}), json!({"a":[1]})),
            (json!({"e":null}), json!({"a":1}), json!({"a":1,"e":null})),
            (json!({}), json!({"a":{"bb":{"ccc":null}}}), json!({"a":{"bb":{}}})),
        ];
        for (target, patch, want) in cases {
            assert_eq!(merge(target.clone(), patch.clone()), want, "{} + {}", target, patch);
        }
        // Non-object targets and patches (the generic function).
        assert_eq!(merge_patch::merge_patch(&json!(["a", "b"]), &json!(["c", "d"])), json!(["c", "d"]));
        assert_eq!(merge_patch::merge_patch(&json!({"a":"b"}), &json!(["c"])), json!(["c"]));
        assert_eq!(merge_patch::merge_patch(&json!([1, 2]), &json!({"a":"b","c":null})), json!({"a":"b"}));
    }

    #[test]
    fn nulls_in_arrays_are_kept_and_nulls_in_new_objects_pruned() {
        assert_eq!(merge(json!({"a":[{"b":"c"}]}), json!({"a":[null,1]})), json!({"a":[null,1]}));
        assert_eq!(merge(json!({"a":[]}), json!({"a":["b",null,null,"a"]})), json!({"a":["b",null,null,"a"]}));
        assert_eq!(merge(json!({"a":"x"}), json!({"a":{"b":null,"c":1}})), json!({"a":{"c":1}}));
        assert_eq!(merge(json!({"a":{"x":1}}), json!({"a":[{"b":null}]})), json!({"a":[{"b":null}]}));
        assert_eq!(merge(json!({"a":1}), json!({"n":[{"b":null,"c":2}]})), json!({"a":1,"n":[{"c":2}]}));
        assert_eq!(merge(json!({"title":null}), json!({"title":{"foo":"bar"}})), json!({"title":{"foo":"bar"}}));
        assert_eq!(merge(json!({"array":["one","two"]}), json!({"array":[]})), json!({"array":[]}));
    }

    #[test]
    fn kubectl_label_annotate_and_scale_patches() {
        let live = json!({"metadata":{"name":"p","labels":{"app":"web","k":"old"}},"spec":{"replicas":1}});
        let out = merge(live.clone(), json!({"metadata":{"labels":{"k":"v"}}}));
        assert_eq!(out["metadata"]["labels"], json!({"app":"web","k":"v"}));
        let out = merge(live.clone(), json!({"metadata":{"labels":{"k":null}}}));
        assert_eq!(out["metadata"]["labels"], json!({"app":"web"}));
        let out = merge(live.clone(), json!({"metadata":{"annotations":{"note":"x"}}}));
        assert_eq!(out["metadata"]["annotations"], json!({"note":"x"}));
        // Removing a label from an object without labels leaves nothing behind.
        let out = merge(json!({"metadata":{"name":"p"}}), json!({"metadata":{"labels":{"k":null}}}));
        assert_eq!(out, json!({"metadata":{"name":"p","labels":{}}}));
        let out = merge(live, json!({"spec":{"replicas":3}}));
        assert_eq!(out["spec"]["replicas"], 3);
    }

    // docs: "Use a JSON merge patch to update a Deployment": the list is replaced.
    #[test]
    fn lists_are_replaced_whole() {
        let live = patch_demo_deployment();
        let out = merge(
            live,
            json!({"spec":{"template":{"spec":{"containers":[{"name":"patch-demo-ctr-3","image":"gcr.io/google-samples/hello-app:2.0"}]}}}}),
        );
        assert_eq!(
            out["spec"]["template"]["spec"]["containers"],
            json!([{"name":"patch-demo-ctr-3","image":"gcr.io/google-samples/hello-app:2.0"}])
        );
        assert_eq!(out["spec"]["template"]["spec"]["tolerations"][0]["key"], "dedicated");
    }

    #[test]
    fn malformed_bodies_are_400() {
        let bad = |body: &str| apply_patch(PatchType::Merge, &json!({}), body.as_bytes(), None).unwrap_err();
        assert_eq!(bad("null").to_string(), "Invalid JSON Patch");
        assert_eq!(bad("null").code(), 400);
        assert_eq!(
            bad("[1]").to_string(),
            "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}"
        );
        assert_eq!(
            bad("\"bar\"").to_string(),
            "error decoding patch: json: cannot unmarshal string into Go value of type map[string]interface {}"
        );
        assert_eq!(bad("{").to_string(), "error decoding patch: unexpected end of JSON input");
    }
}

// ---------------------------------------------------------------------------
// strategic merge patch on built-in kinds

fn patch_demo_deployment() -> Value {
    json!({
        "apiVersion":"apps/v1","kind":"Deployment",
        "metadata":{"name":"patch-demo","namespace":"default"},
        "spec":{
            "replicas":2,
            "selector":{"matchLabels":{"app":"nginx"}},
            "template":{
                "metadata":{"labels":{"app":"nginx"}},
                "spec":{
                    "containers":[{"name":"patch-demo-ctr","image":"nginx","imagePullPolicy":"Always"}],
                    "tolerations":[{"effect":"NoSchedule","key":"dedicated","value":"test-team"}]
                }
            }
        }
    })
}

mod smp_docs {
    use super::*;

    // docs: "Use a strategic merge patch to update a Deployment".
    #[test]
    fn containers_merge_by_name_new_first() {
        let out = smp(
            &DEPLOYMENT,
            patch_demo_deployment(),
            json!({"spec":{"template":{"spec":{"containers":[{"name":"patch-demo-ctr-2","image":"redis"}]}}}}),
        );
        assert_eq!(
            out["spec"]["template"]["spec"]["containers"],
            json!([
                {"name":"patch-demo-ctr-2","image":"redis"},
                {"name":"patch-demo-ctr","image":"nginx","imagePullPolicy":"Always"}
            ])
        );
    }

    // docs: tolerations have no patch strategy, so the list is replaced.
    #[test]
    fn tolerations_are_replaced() {
        let out = smp(
            &DEPLOYMENT,
            patch_demo_deployment(),
            json!({"spec":{"template":{"spec":{"tolerations":[{"effect":"NoSchedule","key":"disktype","value":"ssd"}]}}}}),
        );
        assert_eq!(
            out["spec"]["template"]["spec"]["tolerations"],
            json!([{"effect":"NoSchedule","key":"disktype","value":"ssd"}])
        );
        assert_eq!(out["spec"]["template"]["spec"]["containers"].as_array().unwrap().len(), 1);
    }

    // docs: "Use strategic merge patch to update a Deployment using the retainKeys strategy".
    #[test]
    fn retain_keys_clears_the_rolling_update() {
        let live = json!({
            "metadata":{"name":"retainkeys-demo"},
            "spec":{"selector":{"matchLabels":{"app":"nginx"}},
                    "strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":"30%","maxUnavailable":"25%"}}}
        });
        // Without $retainKeys the old rollingUpdate stays (and validation then refuses it).
        let out = smp(&DEPLOYMENT, live.clone(), json!({"spec":{"strategy":{"type":"Recreate"}}}));
        assert_eq!(
            out["spec"]["strategy"],
            json!({"type":"Recreate","rollingUpdate":{"maxSurge":"30%","maxUnavailable":"25%"}})
        );
        let out = smp(&DEPLOYMENT, live, json!({"spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate"}}}));
        assert_eq!(out["spec"]["strategy"], json!({"type":"Recreate"}));
    }
}

mod smp_kubectl {
    use super::*;

    fn live_web() -> Value {
        json!({
            "apiVersion":"apps/v1","kind":"Deployment",
            "metadata":{"name":"web","namespace":"default","labels":{"app":"web","tier":"fe"},"resourceVersion":"7"},
            "spec":{
                "replicas":1,
                "selector":{"matchLabels":{"app":"web"}},
                "strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":"25%","maxUnavailable":"25%"}},
                "template":{
                    "metadata":{"labels":{"app":"web"}},
                    "spec":{
                        "containers":[
                            {"name":"a","image":"a:1","terminationMessagePolicy":"File",
                             "env":[{"name":"E1","value":"1"},{"name":"E2","value":"2"}],
                             "volumeMounts":[{"name":"v1","mountPath":"/v"}]},
                            {"name":"b","image":"b:1"}
                        ],
                        "volumes":[{"name":"v1","emptyDir":{}}],
                        "restartPolicy":"Always"
                    }
                }
            }
        })
    }

    // kubectl-wire.md §7: the real client-side-apply patch removing a
    // container, an env var, a label, a rollingUpdate block and a volume source.
    #[test]
    fn client_side_apply_removal_patch_from_the_wire() {
        let patch: Value = serde_json::from_str(r#"{"metadata":{"labels":{"tier":null}},"spec":{"strategy":{"$retainKeys":["type"],"rollingUpdate":null,"type":"Recreate"},"template":{"spec":{"$setElementOrder/containers":[{"name":"a"}],"$setElementOrder/volumes":[{"name":"v1"}],"containers":[{"$setElementOrder/env":[{"name":"E2"}],"args":["x"],"env":[{"$patch":"delete","name":"E1"}],"image":"a:2","name":"a","volumeMounts":null},{"$patch":"delete","name":"b"}],"volumes":[{"$retainKeys":["configMap","name"],"configMap":{"name":"cm"},"emptyDir":null,"name":"v1"}]}}}}"#).unwrap();
        let out = apply_patch_detailed(
            PatchType::StrategicMerge,
            &live_web(),
            patch.to_string().as_bytes(),
            Some(&DEPLOYMENT),
        )
        .unwrap();
        assert!(out.unknown_fields.is_empty(), "{:?}", out.unknown_fields);
        let out = out.object;
        assert_eq!(out["metadata"]["labels"], json!({"app":"web"}));
        assert_eq!(out["spec"]["strategy"], json!({"type":"Recreate"}));
        assert_eq!(
            out["spec"]["template"]["spec"]["containers"],
            json!([{"name":"a","image":"a:2","args":["x"],"terminationMessagePolicy":"File","env":[{"name":"E2","value":"2"}]}])
        );
        assert_eq!(out["spec"]["template"]["spec"]["volumes"], json!([{"name":"v1","configMap":{"name":"cm"}}]));
        assert_eq!(out["spec"]["template"]["spec"]["restartPolicy"], "Always");
        assert_eq!(out["spec"]["replicas"], 1);
    }

    // kubectl-wire.md §6: apply -f on an existing object.
    #[test]
    fn client_side_apply_update_patch() {
        let last = "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\"}\n";
        let patch = json!({
            "metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":last}},
            "spec":{"replicas":3,"template":{"spec":{"$setElementOrder/containers":[{"name":"a"},{"name":"b"}],"containers":[{"image":"a:9","name":"a"}]}}}
        });
        let once = smp(&DEPLOYMENT, live_web(), patch.clone());
        assert_eq!(once["spec"]["replicas"], 3);
        assert_eq!(once["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"], last);
        let c = &once["spec"]["template"]["spec"]["containers"];
        assert_eq!(c[0]["name"], "a");
        assert_eq!(c[0]["image"], "a:9");
        assert_eq!(c[0]["env"].as_array().unwrap().len(), 2);
        assert_eq!(c[1], json!({"name":"b","image":"b:1"}));
        // Applying the same patch again changes nothing.
        assert_eq!(smp(&DEPLOYMENT, once.clone(), patch), once);
        // The second `kubectl apply` of an unchanged manifest computes `{}`.
        assert_eq!(smp(&DEPLOYMENT, once.clone(), json!({})), once);
    }

    // Removing a field from the manifest: kubectl's three-way patch sends null
    // (and a delete directive for a removed list item) with the new annotation.
    #[test]
    fn client_side_apply_removes_fields_dropped_from_the_manifest() {
        let mut live = live_web();
        live["metadata"]["annotations"] = json!({"kubectl.kubernetes.io/last-applied-configuration":"old","keep":"me"});
        live["spec"]["template"]["spec"]["containers"][0]["ports"] =
            json!([{"containerPort":80,"protocol":"TCP"},{"containerPort":443,"protocol":"TCP"}]);
        let patch = json!({
            "metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"new"}},
            "spec":{
                "replicas":null,
                "template":{"spec":{
                    "$setElementOrder/containers":[{"name":"a"},{"name":"b"}],
                    "containers":[{"$setElementOrder/ports":[{"containerPort":80}],"name":"a","ports":[{"$patch":"delete","containerPort":443}]}]
                }}
            }
        });
        let out = smp(&DEPLOYMENT, live, patch);
        assert!(out["spec"].get("replicas").is_none());
        assert_eq!(
            out["spec"]["template"]["spec"]["containers"][0]["ports"],
            json!([{"containerPort":80,"protocol":"TCP"}])
        );
        assert_eq!(
            out["metadata"]["annotations"],
            json!({"kubectl.kubernetes.io/last-applied-configuration":"new","keep":"me"})
        );
        assert_eq!(out["spec"]["template"]["spec"]["containers"][1], json!({"name":"b","image":"b:1"}));
    }

    #[test]
    fn set_image_rollout_and_cordon_patches() {
        let out = smp(
            &DEPLOYMENT,
            live_web(),
            json!({"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"b"}],"containers":[{"image":"b:2","name":"b"}]}}}}),
        );
        let c = &out["spec"]["template"]["spec"]["containers"];
        assert_eq!(c.as_array().unwrap().len(), 2);
        assert_eq!(c[1], json!({"name":"b","image":"b:2"}));
        assert_eq!(c[0]["image"], "a:1");

        let out = smp(
            &DEPLOYMENT,
            live_web(),
            json!({"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"2025-01-01T00:00:00Z"}}}}}),
        );
        assert_eq!(
            out["spec"]["template"]["metadata"],
            json!({"labels":{"app":"web"},"annotations":{"kubectl.kubernetes.io/restartedAt":"2025-01-01T00:00:00Z"}})
        );

        let paused = smp(&DEPLOYMENT, live_web(), json!({"spec":{"paused":true}}));
        assert_eq!(paused["spec"]["paused"], true);
        let resumed = smp(&DEPLOYMENT, paused, json!({"spec":{"paused":null}}));
        assert!(resumed["spec"].get("paused").is_none());

        let node = json!({"metadata":{"name":"n1"},"spec":{"podCIDR":"10.0.0.0/24"}});
        let cordoned = smp(&NODE, node, json!({"spec":{"unschedulable":true}}));
        assert_eq!(cordoned["spec"], json!({"podCIDR":"10.0.0.0/24","unschedulable":true}));
        let uncordoned = smp(&NODE, cordoned, json!({"spec":{"unschedulable":null}}));
        assert_eq!(uncordoned["spec"], json!({"podCIDR":"10.0.0.0/24"}));
    }

    #[test]
    fn kubectl_debug_adds_an_ephemeral_container() {
        let pod = json!({"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}],
                         "ephemeralContainers":[{"name":"debugger-1","image":"busybox"}]}});
        let out = smp(
            &POD,
            pod,
            json!({"spec":{"ephemeralContainers":[{"name":"debugger-2","image":"busybox","stdin":true,"tty":true}]}}),
        );
        let names: Vec<&str> = out["spec"]["ephemeralContainers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["debugger-2", "debugger-1"]);
    }
}

mod smp_merge_keys {
    use super::*;

    fn pod() -> Value {
        json!({
            "metadata":{"name":"p","finalizers":["a/x","b/y"],"ownerReferences":[{"uid":"u1","name":"rs1","kind":"ReplicaSet","apiVersion":"apps/v1"}]},
            "spec":{
                "containers":[{"name":"c","image":"i",
                    "ports":[{"containerPort":80,"protocol":"TCP"},{"containerPort":53,"protocol":"UDP","name":"dns"}],
                    "env":[{"name":"A","value":"1"}],
                    "volumeMounts":[{"name":"v","mountPath":"/a"}],
                    "args":["one","two"]}],
                "imagePullSecrets":[{"name":"s1"}],
                "hostAliases":[{"ip":"10.0.0.1","hostnames":["a"]}],
                "tolerations":[{"key":"k1","operator":"Exists"}],
                "nodeSelector":{"disk":"ssd","zone":"a"}
            },
            "status":{"conditions":[{"type":"Ready","status":"False"},{"type":"PodScheduled","status":"True"}],
                      "podIPs":[{"ip":"10.1.0.5"}]}
        })
    }

    #[test]
    fn container_ports_merge_by_container_port() {
        let out = smp(
            &POD,
            pod(),
            json!({"spec":{"containers":[{"name":"c","ports":[{"containerPort":53,"protocol":"TCP"},{"containerPort":8080}]}]}}),
        );
        assert_eq!(
            out["spec"]["containers"][0]["ports"],
            // 80 precedes 53 on the server, so it stays ahead of the patch items.
            json!([{"containerPort":80,"protocol":"TCP"},{"containerPort":53,"protocol":"TCP","name":"dns"},{"containerPort":8080}])
        );
    }

    #[test]
    fn env_volume_mounts_and_args() {
        let out = smp(
            &POD,
            pod(),
            json!({"spec":{"containers":[{"name":"c",
            "env":[{"name":"A","value":"2"},{"name":"B","value":"3"}],
            "volumeMounts":[{"mountPath":"/b","name":"w"}],
            "args":["three"]}]}}),
        );
        let c = &out["spec"]["containers"][0];
        assert_eq!(c["env"], json!([{"name":"A","value":"2"},{"name":"B","value":"3"}]));
        assert_eq!(c["volumeMounts"], json!([{"mountPath":"/b","name":"w"},{"name":"v","mountPath":"/a"}]));
        assert_eq!(c["args"], json!(["three"]));
    }

    #[test]
    fn status_conditions_merge_by_type() {
        let out = smp(
            &POD,
            pod(),
            json!({"status":{"conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2025-01-01T00:00:00Z"}]}}),
        );
        assert_eq!(
            out["status"]["conditions"],
            json!([{"type":"Ready","status":"True","lastTransitionTime":"2025-01-01T00:00:00Z"},{"type":"PodScheduled","status":"True"}])
        );
        let out = smp(&POD, pod(), json!({"status":{"podIPs":[{"ip":"fd00::5"}]}}));
        assert_eq!(out["status"]["podIPs"], json!([{"ip":"fd00::5"},{"ip":"10.1.0.5"}]));
    }

    #[test]
    fn finalizers_are_a_set_and_delete_from_primitive_list() {
        let out = smp(&POD, pod(), json!({"metadata":{"finalizers":["c/z","a/x"]}}));
        assert_eq!(out["metadata"]["finalizers"], json!(["c/z", "a/x", "b/y"]));
        let out = smp(&POD, pod(), json!({"metadata":{"$deleteFromPrimitiveList/finalizers":["a/x"]}}));
        assert_eq!(out["metadata"]["finalizers"], json!(["b/y"]));
        // With an order: kubectl apply's form.
        let out = smp(
            &POD,
            pod(),
            json!({"metadata":{"$setElementOrder/finalizers":["b/y","c/z"],"$deleteFromPrimitiveList/finalizers":["a/x"],"finalizers":["c/z"]}}),
        );
        assert_eq!(out["metadata"]["finalizers"], json!(["b/y", "c/z"]));
        // A delete list for a list the object lacks adds nothing.
        let out = smp(
            &CONFIGMAP,
            json!({"metadata":{"name":"c"}}),
            json!({"metadata":{"$deleteFromPrimitiveList/finalizers":["a/x"]}}),
        );
        assert_eq!(out, json!({"metadata":{"name":"c"}}));
    }

    #[test]
    fn owner_references_merge_by_uid() {
        let out = smp(
            &POD,
            pod(),
            json!({"metadata":{"ownerReferences":[{"uid":"u2","name":"rs2","kind":"ReplicaSet","apiVersion":"apps/v1"},{"uid":"u1","controller":true}]}}),
        );
        assert_eq!(
            out["metadata"]["ownerReferences"],
            json!([{"uid":"u2","name":"rs2","kind":"ReplicaSet","apiVersion":"apps/v1"},{"uid":"u1","name":"rs1","kind":"ReplicaSet","apiVersion":"apps/v1","controller":true}])
        );
    }

    #[test]
    fn pod_spec_lists_and_maps() {
        let out = smp(
            &POD,
            pod(),
            json!({"spec":{
                "imagePullSecrets":[{"name":"s2"}],
                "hostAliases":[{"ip":"10.0.0.1","hostnames":["b"]}],
                "tolerations":[{"key":"k2","operator":"Exists"}],
                "nodeSelector":{"zone":"b","disk":null}
            }}),
        );
        assert_eq!(out["spec"]["imagePullSecrets"], json!([{"name":"s2"},{"name":"s1"}]));
        // hostnames has no strategy: replaced inside the merged alias.
        assert_eq!(out["spec"]["hostAliases"], json!([{"ip":"10.0.0.1","hostnames":["b"]}]));
        assert_eq!(out["spec"]["tolerations"], json!([{"key":"k2","operator":"Exists"}]));
        assert_eq!(out["spec"]["nodeSelector"], json!({"zone":"b"}));
    }

    #[test]
    fn service_ports_merge_by_port() {
        let svc = json!({"spec":{"ports":[{"name":"http","port":80,"targetPort":8080,"protocol":"TCP"}],"selector":{"app":"web"}}});
        let out = smp(
            &SERVICE,
            svc.clone(),
            json!({"spec":{"ports":[{"port":80,"targetPort":9090},{"port":443,"name":"https"}]}}),
        );
        assert_eq!(
            out["spec"]["ports"],
            json!([{"name":"http","port":80,"targetPort":9090,"protocol":"TCP"},{"port":443,"name":"https"}])
        );
        let out = smp(&SERVICE, svc, json!({"spec":{"ports":[{"$patch":"delete","port":80}]}}));
        assert_eq!(out["spec"]["ports"], json!([]));
    }

    #[test]
    fn node_addresses_merge_by_type_and_pod_cidrs_union() {
        let node = json!({"spec":{"podCIDRs":["10.0.0.0/24"]},"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.5"},{"type":"Hostname","address":"n1"}]}});
        let out = smp(
            &NODE,
            node,
            json!({"spec":{"podCIDRs":["fd00::/64"]},"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.6"}]}}),
        );
        assert_eq!(out["spec"]["podCIDRs"], json!(["fd00::/64", "10.0.0.0/24"]));
        assert_eq!(
            out["status"]["addresses"],
            json!([{"type":"InternalIP","address":"10.0.0.6"},{"type":"Hostname","address":"n1"}])
        );
    }

    #[test]
    fn replace_strategy_field_is_replaced_whole() {
        let pdb = json!({"spec":{"minAvailable":1,"selector":{"matchLabels":{"a":"1"}}}});
        let out = smp(&PDB, pdb, json!({"spec":{"selector":{"matchLabels":{"b":"2"}}}}));
        assert_eq!(out["spec"], json!({"minAvailable":1,"selector":{"matchLabels":{"b":"2"}}}));
    }

    #[test]
    fn a_kind_without_metadata_uses_default_rules() {
        let lease = GroupVersionKind { group: "coordination.k8s.io", version: "v1", kind: "Lease" };
        let out = smp(
            &lease,
            json!({"spec":{"holderIdentity":"a","leaseDurationSeconds":15}}),
            json!({"spec":{"holderIdentity":"b"}}),
        );
        assert_eq!(out["spec"], json!({"holderIdentity":"b","leaseDurationSeconds":15}));
        let unknown = GroupVersionKind { group: "example.com", version: "v1", kind: "Unlisted" };
        let out = smp(&unknown, json!({"spec":{"l":[1,2],"m":{"a":1}}}), json!({"spec":{"l":[3],"m":{"b":2}}}));
        assert_eq!(out["spec"], json!({"l":[3],"m":{"a":1,"b":2}}));
    }
}

mod smp_directives {
    use super::*;

    #[test]
    fn patch_replace_and_delete_on_maps() {
        let pod = json!({"spec":{"nodeSelector":{"a":"1","b":"2"},"containers":[{"name":"c","image":"i"}]}});
        let out = smp(&POD, pod.clone(), json!({"spec":{"nodeSelector":{"$patch":"replace","c":"3"}}}));
        assert_eq!(out["spec"]["nodeSelector"], json!({"c":"3"}));
        // `$patch: delete` on a map empties it; `null` removes it.
        let out = smp(&POD, pod.clone(), json!({"spec":{"nodeSelector":{"$patch":"delete"}}}));
        assert_eq!(out["spec"]["nodeSelector"], json!({}));
        let out = smp(&POD, pod, json!({"spec":{"nodeSelector":null}}));
        assert!(out["spec"].get("nodeSelector").is_none());
    }

    #[test]
    fn patch_replace_and_delete_in_lists() {
        let pod = json!({"spec":{"containers":[{"name":"a","image":"1"},{"name":"b","image":"2"}]}});
        let out =
            smp(&POD, pod.clone(), json!({"spec":{"containers":[{"name":"x","image":"9"},{"$patch":"replace"}]}}));
        assert_eq!(out["spec"]["containers"], json!([{"name":"x","image":"9"}]));
        let out = smp(&POD, pod.clone(), json!({"spec":{"containers":[{"$patch":"delete","name":"a"}]}}));
        assert_eq!(out["spec"]["containers"], json!([{"name":"b","image":"2"}]));
        // Deleting something absent is fine.
        let out = smp(&POD, pod, json!({"spec":{"containers":[{"$patch":"delete","name":"zzz"}]}}));
        assert_eq!(out["spec"]["containers"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn set_element_order_interleaves_server_only_items() {
        let pod = json!({"spec":{"containers":[{"name":"a"},{"name":"b"},{"name":"c"}]}});
        let out = smp(
            &POD,
            pod.clone(),
            json!({"spec":{"$setElementOrder/containers":[{"name":"c"},{"name":"a"}],"containers":[{"name":"c","image":"x"}]}}),
        );
        assert_eq!(out["spec"]["containers"], json!([{"name":"b"},{"name":"c","image":"x"},{"name":"a"}]));
        // Order only, no content change.
        let out =
            smp(&POD, pod, json!({"spec":{"$setElementOrder/containers":[{"name":"c"},{"name":"b"},{"name":"a"}]}}));
        assert_eq!(out["spec"]["containers"], json!([{"name":"c"},{"name":"b"},{"name":"a"}]));
    }

    #[test]
    fn new_values_lose_nulls_and_directive_maps() {
        // Removing a label from an object with no labels adds nothing (upstream #105689, fixed in 1.24).
        let out = smp(
            &CONFIGMAP,
            json!({"metadata":{"name":"c"}}),
            json!({"metadata":{"labels":{"k":null},"annotations":{"a":"1","b":null}}}),
        );
        assert_eq!(out["metadata"], json!({"name":"c","labels":{},"annotations":{"a":"1"}}));
        // A list the object lacks is taken without its `$patch` items.
        let out = smp(
            &POD,
            json!({"spec":{}}),
            json!({"spec":{"$setElementOrder/containers":[{"name":"a"}],"containers":[{"name":"a"},{"$patch":"delete","name":"b"}]}}),
        );
        assert_eq!(out["spec"]["containers"], json!([{"name":"a"}]));
    }

    #[test]
    fn leftover_directives_are_dropped_and_reported() {
        // A container the object lacks is appended as sent: its nested
        // directive keys are unknown fields to upstream's typed decoding.
        let pod = json!({"spec":{"containers":[{"name":"a"}]}});
        let body = json!({"spec":{"containers":[{"name":"b","$setElementOrder/env":[{"name":"X"}],"env":[{"name":"X","value":"1"}]}]}});
        let out =
            apply_patch_detailed(PatchType::StrategicMerge, &pod, body.to_string().as_bytes(), Some(&POD)).unwrap();
        assert_eq!(out.unknown_fields, vec!["spec.containers[0].$setElementOrder/env".to_string()]);
        assert_eq!(
            out.object["spec"]["containers"],
            json!([{"name":"b","env":[{"name":"X","value":"1"}]},{"name":"a"}])
        );
    }

    #[test]
    fn directive_format_errors_are_400() {
        let pod = json!({"metadata":{"finalizers":["a"]},"spec":{"containers":[{"name":"a"}],"volumes":[{"name":"v","emptyDir":{}}]}});
        let e = smp_err(&POD, pod.clone(), r#"{"spec":{"volumes":[{"name":"v","$retainKeys":"configMap"}]}}"#);
        assert_eq!((e.code(), e.to_string()), (400, "invalid patch format of retainKeys".to_string()));
        let e = smp_err(
            &POD,
            pod.clone(),
            r#"{"spec":{"volumes":[{"name":"v","$retainKeys":["name"],"configMap":{"name":"c"}}]}}"#,
        );
        assert_eq!((e.code(), e.to_string()), (400, "invalid patch format of retainKeys".to_string()));
        let e = smp_err(&POD, pod.clone(), r#"{"metadata":{"$deleteFromPrimitiveListX/finalizers":["a"]}}"#);
        assert_eq!((e.code(), e.to_string()), (400, "invalid patch format of primitive list".to_string()));
        let e = smp_err(&POD, pod, r#"{"spec":{"$setElementOrderX/containers":[{"name":"a"}]}}"#);
        assert_eq!((e.code(), e.to_string()), (400, "invalid patch format of setElementOrder list".to_string()));
    }

    #[test]
    fn other_failures_are_plain_500s_with_upstreams_text() {
        let pod = json!({"spec":{"containers":[{"name":"a","image":"i"}],"nodeSelector":{"a":"1"}}});
        let e = smp_err(&POD, pod.clone(), r#"{"spec":{"containers":[{"image":"x"}]}}"#);
        assert_eq!(e.code(), 500);
        assert_eq!(e.to_string(), "map: map[image:x] does not contain declared merge key: name");
        let s = e.to_status();
        assert!(s.get("reason").is_none(), "{}", s);
        assert_eq!(s["details"], json!({}));

        let e = smp_err(&POD, pod.clone(), r#"{"spec":{"containers":[{"$patch":"merge"}]}}"#);
        assert_eq!((e.code(), e.to_string()), (500, "merging lists cannot yet be specified in the patch".to_string()));
        let e = smp_err(&POD, pod.clone(), r#"{"spec":{"nodeSelector":{"$patch":"foo","a":"b"}}}"#);
        assert_eq!(e.to_string(), "unknown patch type: foo in map: map[$patch:foo a:b]");
        let e = smp_err(&POD, pod.clone(), r#"{"spec":{"containers":[{"$patch":"frob","name":"a"}]}}"#);
        assert_eq!(e.to_string(), "unknown patch type: frob in map: map[$patch:frob name:a]");
        let e = smp_err(&POD, pod.clone(), r#"{"spec":{"containers":["a"]}}"#);
        assert_eq!(e.to_string(), "list element types are not identical: [[map[image:i name:a]] [a]]");
        let e = smp_err(
            &POD,
            pod.clone(),
            r#"{"spec":{"$setElementOrder/containers":[{"name":"a"}],"containers":[{"name":"a"},{"name":"b"}]}}"#,
        );
        assert_eq!(e.code(), 500);
        assert_eq!(
            e.to_string(),
            "The order in patch list:\n[map[name:a] map[name:b]]\n doesn't match $setElementOrder list:\n[map[name:a]]\n"
        );
        let e = smp_err(&POD, pod, r#"{"spec":{"$setElementOrder/containers":"a"}}"#);
        assert_eq!(e.to_string(), "expected a []interface {}, but received a string");
    }

    #[test]
    fn lists_of_lists_are_a_generic_422() {
        let e = smp_err(&POD, json!({"metadata":{"finalizers":[["a"]]}}), r#"{"metadata":{"finalizers":[["b"]]}}"#);
        assert_eq!(e.code(), 422);
        assert_eq!(e.reason(), "Invalid");
        assert_eq!(e.to_string(), GENERIC_INVALID_MESSAGE);
    }

    #[test]
    fn bodies_must_be_json_objects() {
        let e = smp_err(&POD, json!({}), "[1]");
        assert_eq!(
            (e.code(), e.to_string()),
            (400, "json: cannot unmarshal array into Go value of type map[string]interface {}".to_string())
        );
        let e = smp_err(&POD, json!({}), "{\"a\":");
        assert_eq!((e.code(), e.to_string()), (400, "unexpected end of JSON input".to_string()));
        assert_eq!(
            apply_patch(PatchType::StrategicMerge, &json!({"a":1}), b"null", Some(&POD)).unwrap(),
            json!({"a":1})
        );
        // `$patch: replace` at the root replaces the whole object.
        assert_eq!(smp(&POD, json!({"a":1,"b":2}), json!({"$patch":"replace","c":3})), json!({"c":3}));
    }

    #[test]
    fn strategic_merge_patch_by_kind_names() {
        let out = strategic::strategic_merge_patch(
            &json!({"spec":{"containers":[{"name":"a"}]}}),
            &json!({"spec":{"containers":[{"name":"b"}]}}),
            "",
            "v1",
            "Pod",
        )
        .unwrap();
        assert_eq!(out["spec"]["containers"], json!([{"name":"b"},{"name":"a"}]));
        assert_eq!(
            strategic::strategic_merge_patch(&json!({}), &json!([1]), "", "v1", "Pod")
                .unwrap_err()
                .into_api_error()
                .code(),
            400
        );
    }
}

// ---------------------------------------------------------------------------
// SMP mechanics on the synthetic type (one field per strategy)

mod smp_mechanics {
    use super::*;

    #[test]
    fn merging_lists_keep_patch_order_then_server_order() {
        let out = smp_item(
            json!({"mergingList":[{"name":"1","value":"a"},{"name":"2","value":"b"}]}),
            json!({"mergingList":[{"name":"3","value":"c"},{"name":"1","value":"x"}]}),
        )
        .unwrap();
        assert_eq!(
            out["mergingList"],
            json!([{"name":"3","value":"c"},{"name":"1","value":"x"},{"name":"2","value":"b"}])
        );
    }

    #[test]
    fn primitive_merge_lists_are_deduplicated() {
        let out = smp_item(json!({"mergingIntList":[1,2]}), json!({"mergingIntList":[2,3]})).unwrap();
        assert_eq!(out["mergingIntList"], json!([1, 2, 3]));
        let out = smp_item(json!({"mergingIntList":[1,2]}), json!({"mergingIntList":[3,1]})).unwrap();
        assert_eq!(out["mergingIntList"], json!([3, 1, 2]));
        let out = smp_item(json!({"mergingIntList":[1,2,3]}), json!({"$deleteFromPrimitiveList/mergingIntList":[1,3]}))
            .unwrap();
        assert_eq!(out["mergingIntList"], json!([2]));
        let out = smp_item(json!({"nonMergingIntList":[1,2]}), json!({"nonMergingIntList":[3]})).unwrap();
        assert_eq!(out["nonMergingIntList"], json!([3]));
    }

    #[test]
    fn deletion_and_addition_in_one_patch_follow_upstreams_order() {
        // Upstream deletes in place and appends into the freed slot; the
        // order below is upstream's result for this input.
        let out = smp_item(
            json!({"mergingList":[{"name":1},{"name":2,"other":"b"},{"name":4,"other":"c"}]}),
            json!({"$setElementOrder/mergingList":[{"name":2},{"name":3}],"mergingList":[{"name":3},{"$patch":"delete","name":1}]}),
        )
        .unwrap();
        assert_eq!(out["mergingList"], json!([{"name":2,"other":"b"},{"name":4,"other":"c"},{"name":3}]));
    }

    #[test]
    fn retain_keys_on_a_map_and_on_merged_items() {
        let out = smp_item(
            json!({"retainKeysMap":{"name":"foo","value":"bar","other":"baz"}}),
            json!({"retainKeysMap":{"$retainKeys":["name","value"],"value":"new"}}),
        )
        .unwrap();
        assert_eq!(out["retainKeysMap"], json!({"name":"foo","value":"new"}));
        let out = smp_item(
            json!({"retainKeysMergingList":[{"name":"a","value":"1","other":"x"},{"name":"b"}]}),
            json!({"retainKeysMergingList":[{"$retainKeys":["name","other"],"name":"a","other":"y"}]}),
        )
        .unwrap();
        assert_eq!(out["retainKeysMergingList"], json!([{"name":"a","other":"y"},{"name":"b"}]));
    }

    #[test]
    fn replace_strategy_and_nested_merges() {
        let out = smp_item(json!({"replacingItem":{"a":1,"b":2}}), json!({"replacingItem":{"c":3}})).unwrap();
        assert_eq!(out["replacingItem"], json!({"c":3}));
        let out = smp_item(
            json!({"mergingList":[{"name":"a","mergingList":[{"name":"x","value":"1"}],"nonMergingList":[{"name":"p"}]}]}),
            json!({"mergingList":[{"name":"a","mergingList":[{"name":"y"}],"nonMergingList":[{"name":"q"}]}]}),
        )
        .unwrap();
        assert_eq!(
            out["mergingList"],
            json!([{"name":"a","mergingList":[{"name":"y"},{"name":"x","value":"1"}],"nonMergingList":[{"name":"q"}]}])
        );
    }

    #[test]
    fn type_changes_replace_and_scalars_replace() {
        let out = smp_item(
            json!({"value":"a","mergingList":[{"name":"1"}]}),
            json!({"value":"b","mergingList":{"name":"x"}}),
        )
        .unwrap();
        assert_eq!(out, json!({"value":"b","mergingList":{"name":"x"}}));
        let out = smp_item(json!({"simpleMap":{"a":"1"}}), json!({"simpleMap":{"b":"2","a":null}})).unwrap();
        assert_eq!(out["simpleMap"], json!({"b":"2"}));
    }

    #[test]
    fn missing_merge_key_in_a_delete_directive() {
        let e =
            smp_item(json!({"mergingList":[{"name":"1"}]}), json!({"mergingList":[{"$patch":"delete","value":"x"}]}))
                .unwrap_err();
        assert_eq!(
            e,
            strategic::SmpError::Internal(
                "map: map[$patch:delete value:x] does not contain declared merge key: name".into()
            )
        );
    }
}

// ---------------------------------------------------------------------------
// status forms and helpers

#[test]
fn generic_errors_render_as_upstream_status() {
    let e = ApiError::Generic { code: 500, reason: "", message: "boom".into() };
    assert_eq!(
        e.to_status(),
        json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"boom","details":{},"code":500})
    );
    assert_eq!(generic_invalid().code(), 422);
}

#[test]
fn go_value_formatting() {
    assert_eq!(go_v(&json!({"b":[1,"x"],"a":null,"c":{"d":true}})), "map[a:<nil> b:[1 x] c:map[d:true]]");
    assert_eq!(go_v(&json!(1.5)), "1.5");
    assert_eq!(go_v(&json!(100.0)), "100");
    assert_eq!(go_v(&json!(1234567.0)), "1.234567e+06");
    assert_eq!(go_v(&json!(0.00001)), "1e-05");
    assert_eq!(go_v(&json!(-3)), "-3");
    assert_eq!(go_type_name(&json!(null)), "%!s(<nil>)");
    assert_eq!(go_type_name(&json!(1)), "int64");
    assert_eq!(go_type_name(&json!(1.0)), "float64");
}
