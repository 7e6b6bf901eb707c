use serde_json::json;

use super::*;

fn check(schema: Value, status: bool) -> Vec<String> {
    let errs = validate_custom_resource_validation(
        &json!({"openAPIV3Schema": schema}),
        status,
        &Path::new("spec").child("validation"),
    );
    errs.iter().map(|e| e.to_string()).collect()
}

const P: &str = "spec.validation.openAPIV3Schema";

#[test]
fn a_structural_schema_is_valid() {
    let schema = json!({"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}}},
        "spec": {"type": "object", "required": ["port"], "properties": {
            "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}},
            "raw": {"x-kubernetes-preserve-unknown-fields": true},
            "mode": {"type": "string", "default": "a", "oneOf": [{"pattern": "^a"}, {"pattern": "^b"}]}}},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}});
    assert_eq!(check(schema, true), Vec::<String>::new());
}

#[test]
fn types_are_required_everywhere_but_int_or_string_and_preserved_fields() {
    let schema = json!({"properties": {"spec": {"properties": {"a": {}}}, "list": {"type": "array"}}});
    assert_eq!(
        check(schema, false),
        vec![
            format!("{P}.properties[list].items: Required value: must be specified"),
            format!("{P}.properties[spec].properties[a].type: Required value: must not be empty for specified object fields"),
            format!("{P}.properties[spec].type: Required value: must not be empty for specified object fields"),
            format!("{P}.type: Required value: must not be empty at the root"),
        ]
    );
}

#[test]
fn the_root_must_be_an_object() {
    assert_eq!(
        check(json!({"type": "string"}), false),
        vec![format!(r#"{P}.type: Invalid value: "string": must be object at the root"#)]
    );
}

#[test]
fn unsupported_openapi_features_are_forbidden() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "string", "$ref": "#/x", "uniqueItems": true},
        "b": {"type": "null"}, "c": {"type": "array", "items": [{"type": "string"}]}}});
    assert_eq!(
        check(schema, false),
        vec![
            format!("{P}.properties[a].$ref: Forbidden: $ref is not supported"),
            format!("{P}.properties[a].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"),
            format!(r#"{P}.properties[b].type: Unsupported value: "null": supported values: "array", "boolean", "integer", "number", "object", "string""#),
            format!("{P}.properties[b].type: Forbidden: type cannot be set to null, use nullable as an alternative"),
            format!("{P}.properties[c].items: Forbidden: items must be a schema object and not an array"),
        ]
    );
}

#[test]
fn additional_properties_and_properties_are_mutually_exclusive() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"a": {"type": "string"}}, "additionalProperties": false}}});
    assert_eq!(
        check(schema, false),
        vec![format!(
            "{P}.properties[spec].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
        )]
    );
    let root = json!({"type": "object", "additionalProperties": {"type": "string"}});
    assert_eq!(check(root, false), vec![format!("{P}.additionalProperties: Forbidden: must not be used at the root")]);
}

#[test]
fn root_metadata_may_only_restrict_name_and_generate_name() {
    let schema = json!({"type": "object", "properties": {"metadata": {"type": "object",
        "properties": {"labels": {"type": "object"}}}}});
    assert_eq!(
        check(schema, false),
        vec![format!(
            "{P}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but \
             metadata is implicitly specified"
        )]
    );
    let defaulted = json!({"type": "object", "properties": {"metadata": {"type": "object", "default": {}},
        "kind": {"type": "integer"}}});
    assert_eq!(
        check(defaulted, false),
        vec![
            format!(r#"{P}.properties[kind].type: Invalid value: "integer": must be string"#),
            format!("{P}.properties[metadata].default: Forbidden: must not be set in top-level metadata"),
        ]
    );
}

#[test]
fn value_validations_may_not_carry_types_or_unknown_fields() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "string",
        "anyOf": [{"type": "string", "description": "d"}, {"properties": {"b": {"minLength": 1}}}]}}});
    assert_eq!(
        check(schema, false),
        vec![
            format!("{P}.properties[a].anyOf[0].description: Forbidden: must be empty to be structural"),
            format!("{P}.properties[a].anyOf[0].type: Forbidden: must be empty to be structural"),
        ]
    );
    // Completeness is checked from the root's value validations.
    let root = json!({"type": "object", "properties": {"a": {"type": "string"}},
        "anyOf": [{"required": ["a"]}, {"properties": {"b": {"minLength": 1}}}]});
    assert_eq!(
        check(root, false),
        vec![format!("{P}.properties[b]: Required value: because it is defined in {P}.anyOf[1].properties[b]")]
    );
}

#[test]
fn status_subresource_restricts_the_root() {
    let errs = validate_custom_resource_validation(
        &json!({"openAPIV3Schema": {"type": "object", "nullable": true}}),
        true,
        &Path::new("spec").child("validation"),
    );
    // Field and detail only: upstream prints the whole schema struct as the value.
    let got: Vec<(String, String)> = errs.iter().map(|e| (e.field.clone(), e.detail.clone())).collect();
    assert_eq!(
        got,
        vec![
            (
                P.to_string(),
                "only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength \
                 MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs \
                 Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the \
                 status subresource is enabled"
                    .to_string()
            ),
            (format!("{P}.nullable"), "nullable cannot be true at the root".to_string()),
        ]
    );
    assert_eq!(
        check(json!({"type": "array", "items": {"type": "string"}}), true)[0],
        format!(
            r#"{P}.type: Invalid value: "array": only "object" is allowed as the type at the root of the schema if the status subresource is enabled"#
        )
    );
}

#[test]
fn list_and_map_extensions() {
    let schema = json!({"type": "object", "properties": {
        "a": {"type": "object", "x-kubernetes-list-type": "set"},
        "b": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}},
            "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k", "missing"]},
        "c": {"type": "string", "x-kubernetes-map-type": "granular", "x-kubernetes-preserve-unknown-fields": false}}});
    assert_eq!(
        check(schema, false),
        vec![
            format!(r#"{P}.properties[a].type: Invalid value: "object": must be array if x-kubernetes-list-type is specified"#),
            format!(r#"{P}.properties[b].x-kubernetes-list-map-keys: Invalid value: []string{{"k", "missing"}}: entries must all be names of item properties"#),
            format!("{P}.properties[b].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"),
            format!("{P}.properties[c].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"),
            format!(r#"{P}.properties[c].type: Invalid value: "string": must be object if x-kubernetes-map-type is specified"#),
        ]
    );
}

#[test]
fn construction_errors_only_show_alone() {
    assert_eq!(
        check(json!({"type": "object", "$schema": "http://json-schema.org/draft-04/schema#"}), false),
        vec![format!(r#"{P}: Invalid value: "": OpenAPIV3Schema 'schema' is not supported"#)]
    );
}

#[test]
fn validation_rules_need_a_rule() {
    let schema =
        json!({"type": "object", "x-kubernetes-validations": [{"rule": " "}, {"rule": "self.a", "reason": "Bad"}]});
    assert_eq!(
        check(schema, false),
        vec![
            format!("{P}.x-kubernetes-validations[0].rule: Required value: rule is not specified"),
            format!(
                r#"{P}.x-kubernetes-validations[1].reason: Unsupported value: "Bad": supported values: "FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired""#
            ),
        ]
    );
}

#[test]
fn validation_rules_and_message_expressions_must_compile() {
    let schema = json!({"type": "object", "x-kubernetes-validations": [
        {"rule": "self.replicas <= ", "message": "m"},
        {"rule": "self.a == 1", "messageExpression": "'a is ' +"},
        {"rule": "has(self.a) && self.a.size() < 3", "messageExpression": "'too long: ' + string(self.a)"}]});
    let causes = check(schema, false);
    assert_eq!(causes.len(), 2, "{causes:?}");
    let rule = format!(
        r#"{P}.x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{{Rule:"self.replicas <= ", Message:"m", MessageExpression:"", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}}: compilation failed: ERROR: <input>:1:18: Syntax error: mismatched input '<EOF>' expecting"#
    );
    assert!(causes[0].starts_with(&rule), "{}", causes[0]);
    let expr = format!(
        r#"{P}.x-kubernetes-validations[1].messageExpression: Invalid value: apiextensions.ValidationRule{{Rule:"self.a == 1", Message:"", MessageExpression:"'a is ' +", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}}: messageExpression compilation failed: ERROR: <input>:1:"#
    );
    assert!(causes[1].starts_with(&expr), "{}", causes[1]);
}
