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

/// Upstream's `validateValueValidation` compiles `pattern` with Go's
/// `regexp.Compile`; its test "invalid regex pattern" expects, for
/// `pattern: "+"`, `must be a valid regular expression, but isn't: error
/// parsing regexp: missing argument to repetition operator: ` + "`+`".
/// Nested value validations are checked too.
#[test]
fn patterns_must_be_go_regular_expressions() {
    let schema = json!({"type": "object", "properties": {
        "foo": {"type": "string", "pattern": "+"},
        "bar": {"type": "string", "pattern": "(?=x)"},
        "ok": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
        "baz": {"type": "string", "anyOf": [{"pattern": "[z-a]"}]}}});
    assert_eq!(
        check(schema, false),
        vec![
            format!("{P}.properties[bar].pattern: Invalid value: \"(?=x)\": must be a valid regular expression, but isn't: error parsing regexp: invalid or unsupported Perl syntax: `(?=`"),
            format!("{P}.properties[baz].anyOf[0].pattern: Invalid value: \"[z-a]\": must be a valid regular expression, but isn't: error parsing regexp: invalid character class range: `z-a`"),
            format!("{P}.properties[foo].pattern: Invalid value: \"+\": must be a valid regular expression, but isn't: error parsing regexp: missing argument to repetition operator: `+`"),
        ]
    );
}

/// Upstream's validation_test.go case "invalid defaults with enabled
/// feature gate, structural schema": unknown fields in defaults (also
/// under a parent's x-kubernetes-preserve-unknown-fields), a wrongly typed
/// field and a field not matching its pattern are refused; embedded
/// resources keep apiVersion, kind and metadata, and preserve unknown
/// fields when told to.
#[test]
fn defaults_must_be_pruned_and_valid() {
    let schema = json!({"type": "object", "properties": {
        "a": {"type": "object", "properties": {"foo": {"type": "string"}}, "default": {"foo": "abc", "bar": 42}},
        "b": {"type": "object", "properties": {"foo": {"type": "string"}}, "default": {"foo": "abc"}},
        "c": {"type": "object", "properties": {"foo": {"type": "string"}}, "default": {"foo": 42}},
        "d": {"type": "object", "properties": {
            "good": {"type": "string", "pattern": "a"}, "bad": {"type": "string", "pattern": "b"}},
            "default": {"good": "a", "bad": "a"}},
        "e": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {
            "preserveUnknownFields": {"type": "object", "default": {"foo": "abc", "bar": 42}},
            "nestedProperties": {"type": "object", "properties": {"foo": {"type": "string"}},
                "default": {"foo": "abc", "bar": 42}}}},
        "embedded-fine": {"type": "object", "x-kubernetes-embedded-resource": true,
            "properties": {"foo": {"type": "string"}},
            "default": {"foo": "abc", "apiVersion": "foo/v1", "kind": "v1", "metadata": {"name": "foo"}}},
        "embedded-preserve": {"type": "object", "x-kubernetes-embedded-resource": true,
            "x-kubernetes-preserve-unknown-fields": true, "properties": {"foo": {"type": "string"}},
            "default": {"foo": "abc", "apiVersion": "foo/v1", "kind": "v1", "metadata": {"name": "foo"}, "bar": 42}}}});
    let unknown = r#"Invalid value: map[string]interface {}{"bar":42, "foo":"abc"}: must not have unknown fields"#;
    assert_eq!(
        check(schema, false),
        vec![
            format!("{P}.properties[a].default: {unknown}"),
            format!(
                r#"{P}.properties[c].default.foo: Invalid value: "integer": foo in body must be of type string: "integer""#
            ),
            format!(r#"{P}.properties[d].default.bad: Invalid value: "a": bad in body should match 'b'"#),
            format!("{P}.properties[e].properties[nestedProperties].default: {unknown}"),
            format!("{P}.properties[e].properties[preserveUnknownFields].default: {unknown}"),
        ]
    );
}

/// A scalar default of the wrong type: the location in kube-openapi's
/// message is empty, so it starts with ` in body` (as a real API server
/// answers: `Invalid value: "boolean":  in body must be of type string:
/// "boolean"`). The cause is `FieldValueTypeInvalid`.
#[test]
fn a_wrongly_typed_default_names_the_json_type() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "replicas": {"type": "integer", "default": "three"},
        "mode": {"type": "string", "default": true},
        "ratio": {"type": "number", "default": 1},
        "count": {"type": "integer", "default": 2.0},
        "port": {"x-kubernetes-int-or-string": true, "default": 1.5},
        "opt": {"type": "object", "nullable": true, "default": {"x": null},
            "properties": {"x": {"type": "string", "nullable": true}}},
        "nn": {"type": "object", "default": {"x": null}, "properties": {"x": {"type": "string"}}}}}}});
    let errs = validate_custom_resource_validation(
        &json!({"openAPIV3Schema": schema}),
        false,
        &Path::new("spec").child("validation"),
    );
    let got: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
    let s = format!("{P}.properties[spec].properties");
    assert_eq!(
        got,
        vec![
            format!(r#"{s}[mode].default: Invalid value: "boolean":  in body must be of type string: "boolean""#),
            format!(r#"{s}[nn].default.x: Invalid value: "null": x in body must be of type string: "null""#),
            format!(r#"{s}[port].default: Invalid value: "number":  in body must be of type integer,string: "number""#),
            format!(r#"{s}[replicas].default: Invalid value: "string":  in body must be of type integer: "string""#),
        ]
    );
    assert!(errs.iter().all(|e| e.to_cause().reason == "FieldValueTypeInvalid"));
}

/// The value validations of kube-openapi, with its messages and the
/// field error types apiextensions maps them to.
#[test]
fn defaults_are_checked_against_value_validations() {
    let schema = json!({"type": "object", "properties": {
        "e": {"type": "string", "enum": ["a", "b"], "default": "c"},
        "max": {"type": "integer", "maximum": 10, "default": 11},
        "xmax": {"type": "integer", "maximum": 10, "exclusiveMaximum": true, "default": 10},
        "min": {"type": "number", "minimum": 0.5, "default": 0.25},
        "mult": {"type": "integer", "multipleOf": 3, "default": 4},
        "tenths": {"type": "number", "multipleOf": 0.1, "default": 0.3},
        "long": {"type": "string", "maxLength": 3, "default": "abcd"},
        "short": {"type": "string", "minLength": 2, "default": "a"},
        "few": {"type": "array", "items": {"type": "string"}, "minItems": 2, "default": ["x"]},
        "many": {"type": "array", "items": {"type": "string"}, "maxItems": 1, "default": ["x", "y"]},
        "items": {"type": "array", "items": {"type": "integer", "minimum": 1}, "default": [1, 0]},
        "req": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}, "default": {}},
        "props": {"type": "object", "minProperties": 1, "additionalProperties": {"type": "string"}, "default": {}},
        "map": {"type": "object", "additionalProperties": {"type": "string"}, "default": {"k": 1}},
        "ip": {"type": "string", "format": "ipv4", "default": "1.2.3"},
        "fine": {"type": "string", "format": "date", "enum": ["2024-02-29"], "default": "2024-02-29"},
        "unchecked": {"type": "object", "additionalProperties": {"type": "string", "default": 7}}}});
    let p = format!("{P}.properties");
    assert_eq!(
        check(schema, false),
        vec![
            format!(r#"{p}[e].default: Unsupported value: "c": supported values: "a", "b""#),
            format!("{p}[few].default: Invalid value: 1:  in body should have at least 2 items"),
            format!(r#"{p}[ip].default: Invalid value: "1.2.3":  in body must be of type ipv4: "1.2.3""#),
            // Go's field.Path renders the child `[1]` as `.[1]`.
            format!("{p}[items].default.[1]: Invalid value: 0: [1] in body should be greater than or equal to 1"),
            format!("{p}[long].default: Too long: may not be more than 3 bytes"),
            format!("{p}[many].default: Too many: 2: must have at most 1 items"),
            format!(r#"{p}[map].default.k: Invalid value: "integer": .k in body must be of type string: "integer""#),
            format!("{p}[max].default: Invalid value: 11:  in body should be less than or equal to 10"),
            format!("{p}[min].default: Invalid value: 0.25:  in body should be greater than or equal to 0.5"),
            format!("{p}[mult].default: Invalid value: 4:  in body should be a multiple of 3"),
            format!("{p}[props].default: Invalid value: 0:  in body should have at least 1 properties"),
            format!("{p}[req].default.name: Required value"),
            format!(r#"{p}[short].default: Invalid value: "a":  in body should be at least 2 chars long"#),
            format!("{p}[xmax].default: Invalid value: 10:  in body should be less than 10"),
        ]
    );
}

/// Defaults are only checked when the schema is structural (upstream
/// builds the structural schema first).
#[test]
fn defaults_are_not_checked_in_non_structural_schemas() {
    let schema = json!({"type": "object", "properties": {
        "a": {"type": "integer", "default": "x"}, "b": {"properties": {}}}});
    assert_eq!(
        check(schema, false),
        vec![format!("{P}.properties[b].type: Required value: must not be empty for specified object fields")]
    );
}

/// The general validator, as custom resources will use it: locations are
/// dotted paths from the object root.
#[test]
fn validate_value_reports_paths_from_the_root() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "required": ["image"],
        "properties": {"replicas": {"type": "integer"}, "image": {"type": "string"}}}}});
    let errs = validate_value(&schema, &json!({"spec": {"replicas": "2"}}), &Path::nil());
    let got: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
    assert_eq!(
        got,
        vec![
            r#"spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string""#,
            "spec.image: Required value",
        ]
    );
    assert_eq!(defaults::go_float(1e21), "1e+21");
    assert_eq!(defaults::go_float(0.00001), "1e-05");
    assert_eq!(defaults::go_float(2.5), "2.5");
}

/// kube-openapi's composite errors for `anyOf`/`oneOf`/`allOf`/`not` are
/// reported at the default itself with an empty value, followed by the
/// failing alternative's own errors.
#[test]
fn defaults_are_checked_against_value_combinators() {
    let schema = json!({"type": "object", "properties": {
        "one": {"type": "string", "oneOf": [{"pattern": "^a"}, {"pattern": "^b"}], "default": "c"},
        "both": {"type": "string", "oneOf": [{"pattern": "^a"}, {"pattern": "b$"}], "default": "ab"},
        "any": {"type": "string", "anyOf": [{"maxLength": 1}, {"pattern": "^x"}], "default": "ab"},
        "all": {"type": "integer", "allOf": [{"minimum": 5}, {"maximum": 9}], "default": 3},
        "not": {"type": "string", "not": {"enum": ["no"]}, "default": "no"},
        "fine": {"type": "string", "anyOf": [{"maxLength": 1}, {"pattern": "^x"}], "default": "xy"}}});
    let p = format!("{P}.properties");
    assert_eq!(
        check(schema, false),
        vec![
            format!("{p}[all].default: Invalid value: 3:  in body should be greater than or equal to 5"),
            format!(r#"{p}[all].default: Invalid value: "": "" must validate all the schemas (allOf)"#),
            format!(r#"{p}[any].default: Invalid value: "": "" must validate at least one schema (anyOf)"#),
            format!("{p}[any].default: Too long: may not be more than 1 bytes"),
            format!(
                r#"{p}[both].default: Invalid value: "": "" must validate one and only one schema (oneOf). Found 2 valid alternatives"#
            ),
            format!(r#"{p}[not].default: Invalid value: "": "" must not validate the schema (not)"#),
            format!(
                r#"{p}[one].default: Invalid value: "": "" must validate one and only one schema (oneOf). Found none valid"#
            ),
            format!(r#"{p}[one].default: Invalid value: "c":  in body should match '^a'"#),
        ]
    );
}

/// Upstream's validation_test.go case "v1.15 era tests for metadata
/// defaults" (versions v3 and v2): defaults inside an embedded resource's
/// `kind` and `metadata` are validated within a surrounding object and
/// refused with `must result in valid metadata`; valid ones pass. A
/// default of a whole embedded resource needs apiVersion and kind.
#[test]
fn defaults_inside_embedded_metadata_must_be_valid_metadata() {
    let schema = json!({"type": "object", "properties": {
        "embedded": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {
            "apiVersion": {"type": "string", "default": "v1"},
            "kind": {"type": "string", "default": "%"},
            "metadata": {"type": "object", "default": {"labels": {"bar": "x y"}}}}},
        "fine": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {
            "apiVersion": {"type": "string", "default": "v1"},
            "kind": {"type": "string", "default": "Pod"},
            "metadata": {"type": "object", "properties": {"name": {"type": "string", "default": "foo"}}}}},
        "whole": {"type": "object", "x-kubernetes-embedded-resource": true,
            "x-kubernetes-preserve-unknown-fields": true, "default": {"metadata": {"name": ".."}}}}});
    let p = format!("{P}.properties");
    let got = check(schema, false);
    assert_eq!(
        got,
        vec![
            format!(
                r#"{p}[embedded].properties[kind].default: Invalid value: "%": must result in valid metadata: kind: Invalid value: "%": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"#
            ),
            format!(
                r#"{p}[embedded].properties[metadata].default: Invalid value: map[string]interface {{}}{{"labels":map[string]interface {{}}{{"bar":"x y"}}}}: must result in valid metadata: metadata.labels: Invalid value: "x y": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"#
            ),
            format!("{p}[whole].default.apiVersion: Required value"),
            format!("{p}[whole].default.kind: Required value"),
            format!(r#"{p}[whole].default.metadata.name: Invalid value: "..": may not be '..'"#),
        ]
    );
}
