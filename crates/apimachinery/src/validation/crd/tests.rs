use serde_json::json;

use super::*;

/// A valid v1 CRD after defaulting and `PrepareForCreate`.
fn good() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList",
                "shortNames": ["wd"]},
            "conversion": {"strategy": "None"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                    "statusReplicasPath": ".status.replicas"}},
                "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]
            }]
        },
        "status": {"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"]}
    })
}

/// `field: body` of every error.
fn texts(errs: &ErrorList) -> Vec<String> {
    errs.iter().map(|e| e.to_string()).collect()
}

#[test]
fn a_good_crd_is_valid() {
    assert_eq!(texts(&validate_crd(&good())), Vec::<String>::new());
}

#[test]
fn name_must_be_plural_dot_group() {
    let mut crd = good();
    crd["metadata"]["name"] = json!("widget.example.com");
    assert_eq!(
        texts(&validate_crd(&crd)),
        vec![r#"metadata.name: Invalid value: "widget.example.com": must be spec.names.plural+"."+spec.group"#]
    );
}

#[test]
fn group_needs_a_dot_and_scope_a_known_value() {
    let mut crd = good();
    crd["metadata"]["name"] = json!("widgets.example");
    crd["spec"]["group"] = json!("example");
    crd["spec"]["scope"] = json!("Global");
    assert_eq!(
        texts(&validate_crd(&crd)),
        vec![
            r#"spec.group: Invalid value: "example": should be a domain with at least one dot"#,
            r#"spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced""#,
        ]
    );
}

#[test]
fn names_follow_the_dns_1035_rules() {
    let mut crd = good();
    crd["metadata"]["name"] = json!("Widgets.example.com");
    crd["spec"]["names"] = json!({"plural": "Widgets", "singular": "widget", "kind": "Widget", "listKind": "Widget",
        "shortNames": ["w_d"], "categories": ["all"]});
    let label = is_dns1035_label("Widgets").join(",");
    let short = is_dns1035_label("w_d").join(",");
    assert_eq!(
        texts(&validate_crd(&crd)),
        vec![
            format!(r#"spec.names.plural: Invalid value: "Widgets": {label}"#),
            format!(r#"spec.names.shortNames[0]: Invalid value: "w_d": {short}"#),
            r#"spec.names.listKind: Invalid value: "Widget": kind and listKind may not be the same"#.to_string(),
        ]
    );
}

#[test]
fn kind_may_have_mixed_case_but_no_other_characters() {
    let mut crd = good();
    crd["spec"]["names"]["kind"] = json!("Wid.get");
    let msg = is_dns1035_label("wid.get").join(",");
    assert_eq!(
        texts(&validate_crd(&crd)),
        vec![format!(
            r#"spec.names.kind: Invalid value: "Wid.get": may have mixed case, but should otherwise match: {msg}"#
        )]
    );
}

#[test]
fn exactly_one_storage_version_with_unique_names() {
    let mut crd = good();
    let v = crd["spec"]["versions"][0].clone();
    crd["spec"]["versions"] = json!([v.clone(), v]);
    let errs = texts(&validate_crd(&crd));
    // Identical per-version fields move to the top level, so the versions
    // print without their schema, subresources and columns.
    let one = "apiextensions.CustomResourceDefinitionVersion{Name:\"v1\", Served:true, Storage:true, \
               Deprecated:false, DeprecationWarning:(*string)(nil), \
               Schema:(*apiextensions.CustomResourceValidation)(nil), \
               Subresources:(*apiextensions.CustomResourceSubresources)(nil), \
               AdditionalPrinterColumns:[]apiextensions.CustomResourceColumnDefinition(nil), \
               SelectableFields:[]apiextensions.SelectableField(nil)}";
    let list = format!("[]apiextensions.CustomResourceDefinitionVersion{{{one}, {one}}}");
    assert_eq!(
        errs,
        vec![
            format!("spec.versions: Invalid value: {list}: must contain unique version names"),
            format!("spec.versions: Invalid value: {list}: must have exactly one version marked as storage version"),
            // Upstream's map of stored versions loses `v1` at the first match.
            r#"status.storedVersions: Invalid value: []string{"v1"}: must have the storage version v1"#.to_string(),
        ]
    );
}

#[test]
fn version_names_are_dns_1035_labels_and_need_schemas() {
    let mut crd = good();
    crd["spec"]["versions"] = json!([{"name": "V1", "served": true, "storage": true}]);
    crd["status"]["storedVersions"] = json!(["V1"]);
    let msg = is_dns1035_label("V1").join(",");
    assert_eq!(
        texts(&validate_crd(&crd)),
        vec![
            "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required".to_string(),
            format!(r#"spec.versions[0].name: Invalid value: "V1": {msg}"#),
            format!(r#"spec.version: Invalid value: "V1": {msg}"#),
        ]
    );
}

#[test]
fn single_version_schema_errors_are_reported_at_spec_validation() {
    let mut crd = good();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"] = json!({});
    assert_eq!(
        texts(&validate_crd(&crd)),
        vec![
            "spec.validation.openAPIV3Schema.properties[spec].properties[size].type: Required value: must not be \
             empty for specified object fields"
        ]
    );
}

#[test]
fn differing_schemas_are_reported_per_version() {
    let mut crd = good();
    let mut v2 = crd["spec"]["versions"][0].clone();
    v2["name"] = json!("v2");
    v2["storage"] = json!(false);
    v2["schema"]["openAPIV3Schema"]["type"] = json!("array");
    v2["schema"]["openAPIV3Schema"]["items"] = json!({"type": "string"});
    crd["spec"]["versions"].as_array_mut().unwrap().push(v2);
    let errs = texts(&validate_crd(&crd));
    assert!(
        errs.contains(
            &r#"spec.versions[1].schema.openAPIV3Schema.type: Invalid value: "array": must be object at the root"#
                .to_string()
        ),
        "{errs:?}"
    );
    assert!(errs.iter().all(|e| !e.starts_with("spec.validation")), "{errs:?}");
}

#[test]
fn scale_paths_and_printer_columns() {
    let mut crd = good();
    let v = &mut crd["spec"]["versions"][0];
    v["subresources"]["scale"] = json!({"specReplicasPath": "spec.replicas", "statusReplicasPath": ".spec.replicas",
        "labelSelectorPath": ".metadata.labels"});
    v["additionalPrinterColumns"] = json!([{"name": "", "type": "float", "format": "uint", "jsonPath": "spec.size"}]);
    assert_eq!(
        texts(&validate_crd(&crd)),
        vec![
            r#"spec.subresources.scale.specReplicasPath: Invalid value: "spec.replicas": must be a simple json path starting with ."#,
            r#"spec.subresources.scale.statusReplicasPath: Invalid value: ".spec.replicas": should be a json path under .status"#,
            r#"spec.subresources.scale.labelSelectorPath: Invalid value: ".metadata.labels": should be a json path under either .spec or .status"#,
            "spec.additionalPrinterColumns[0].name: Required value",
            r#"spec.additionalPrinterColumns[0].type: Invalid value: "float": must be one of boolean,date,integer,number,string"#,
            r#"spec.additionalPrinterColumns[0].format: Invalid value: "uint": must be one of byte,date,date-time,double,float,int32,int64,password"#,
            r#"spec.additionalPrinterColumns[0].JSONPath: Invalid value: "spec.size": must be a simple json path starting with ."#,
        ]
    );
}

#[test]
fn webhook_conversion_needs_a_client_config_and_review_versions() {
    let mut crd = good();
    crd["spec"]["conversion"] = json!({"strategy": "Webhook"});
    assert_eq!(
        texts(&validate_crd(&crd)),
        vec![
            "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
            "spec.conversion.conversionReviewVersions: Required value",
        ]
    );
    crd["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
        "clientConfig": {"url": "http://user@host/x?y#z"}, "conversionReviewVersions": ["v2"]}});
    assert_eq!(
        texts(&validate_crd(&crd)),
        vec![
            r#"spec.conversion.webhookClientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]"#,
            r#"spec.conversion.webhookClientConfig.url: Invalid value: "user": user information is not permitted in the URL"#,
            r#"spec.conversion.webhookClientConfig.url: Invalid value: "z": fragments are not permitted in the URL"#,
            r#"spec.conversion.webhookClientConfig.url: Invalid value: "y": query parameters are not permitted in the URL"#,
            r#"spec.conversion.conversionReviewVersions: Invalid value: []string{"v2"}: must include at least one of v1, v1beta1"#,
        ]
    );
    crd["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
        "clientConfig": {"service": {"name": "", "namespace": "ns", "port": 0, "path": "/a//b"}},
        "conversionReviewVersions": ["v1"]}});
    assert_eq!(
        texts(&validate_crd(&crd)),
        vec![
            "spec.conversion.webhookClientConfig.service.name: Required value: service name is required",
            "spec.conversion.webhookClientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive",
            r#"spec.conversion.webhookClientConfig.service.path: Invalid value: "/a//b": segment[1] may not be empty"#,
        ]
    );
    crd["spec"]["conversion"] = json!({"strategy": "None", "webhook": {"conversionReviewVersions": ["v1"]}});
    assert_eq!(
        texts(&validate_crd(&crd)),
        vec![
            "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook"
        ]
    );
}

#[test]
fn stored_versions_must_include_the_storage_version() {
    let mut crd = good();
    crd["status"]["storedVersions"] = json!(["v0"]);
    assert_eq!(
        texts(&validate_crd(&crd)),
        vec![
            r#"status.storedVersions: Invalid value: []string{"v0"}: must have the storage version v1"#.to_string(),
            r#"status.storedVersions[0]: Invalid value: "v0": missing from spec.versions; v0 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v0 and removes v0 from status.storedVersions"#.to_string(),
        ]
    );
    crd["status"] = json!({});
    assert_eq!(
        texts(&validate_crd(&crd)),
        vec!["status.storedVersions: Invalid value: []string(nil): must have at least one stored version"]
    );
}

#[test]
fn protected_groups_need_the_approval_annotation() {
    let mut crd = good();
    crd["metadata"]["name"] = json!("widgets.x.k8s.io");
    crd["spec"]["group"] = json!("x.k8s.io");
    assert_eq!(
        texts(&validate_crd(&crd)),
        vec![
            r#"metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111"#
        ]
    );
    crd["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": "unapproved, experimental"});
    assert!(validate_crd(&crd).is_empty());
    crd["metadata"]["annotations"] =
        json!({"api-approved.kubernetes.io": "https://github.com/kubernetes/kubernetes/pull/1"});
    assert!(validate_crd(&crd).is_empty());
}

#[test]
fn preserve_unknown_fields_may_not_be_turned_on() {
    let mut crd = good();
    crd["spec"]["preserveUnknownFields"] = json!(true);
    assert_eq!(
        texts(&validate_crd(&crd)),
        vec![
            "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"
        ]
    );
}

#[test]
fn deprecation_warning_only_for_deprecated_versions() {
    let mut crd = good();
    crd["spec"]["versions"][0]["deprecationWarning"] = json!("old");
    assert_eq!(
        texts(&validate_crd(&crd)),
        vec![r#"spec.versions[0].deprecationWarning: Invalid value: "old": can only be set for deprecated versions"#]
    );
}

#[test]
fn group_and_plural_are_immutable() {
    let old = good();
    let mut new = good();
    new["spec"]["group"] = json!("example.org");
    new["spec"]["names"]["plural"] = json!("gadgets");
    new["metadata"]["name"] = json!("gadgets.example.org");
    assert_eq!(
        texts(&validate_crd_update(&new, &old)),
        vec![
            r#"spec.group: Invalid value: "example.org": field is immutable"#,
            r#"spec.names.plural: Invalid value: "gadgets": field is immutable"#,
        ]
    );
}

#[test]
fn scope_and_kind_are_immutable_once_established() {
    let mut old = good();
    let mut new = good();
    new["spec"]["scope"] = json!("Cluster");
    new["spec"]["names"]["kind"] = json!("Gadget");
    new["spec"]["names"]["listKind"] = json!("GadgetList");
    assert!(validate_crd_update(&new, &old).is_empty());
    old["status"]["conditions"] = json!([{"type": "Established", "status": "True"}]);
    assert_eq!(
        texts(&validate_crd_update(&new, &old)),
        vec![
            r#"spec.scope: Invalid value: "Cluster": field is immutable"#,
            r#"spec.names.kind: Invalid value: "Gadget": field is immutable"#,
        ]
    );
}

#[test]
fn internal_spec_lifts_identical_per_version_fields() {
    let crd = good();
    let spec = InternalSpec::new(&crd["spec"]);
    assert_eq!(spec.version, Some("v1"));
    assert!(spec.validation.is_some() && spec.subresources.is_some() && spec.columns.is_some());
    assert!(spec.versions[0].schema.is_none());
}
