//! Validation and defaulting of more built-in kinds through the real
//! kubectl 1.33: CSIStorageCapacity (storage class name, node topology
//! selector, non-negative capacity, canonical quantities, immutable
//! inputs), IPAddress (canonical IP names, the parent reference) and
//! ServiceCIDR (one or two canonical CIDRs of different families; 1.33's
//! update rules: single- to dual-stack only), CRD `pattern`s (Go regular
//! expressions). Invalid objects are refused with upstream's 422 text
//! (`The <Kind> "<name>" is invalid: …`) and nothing is stored.

mod api_common;
mod support;

use api_common::{apply, apply_fails, assert_lines, assert_nothing_stored, fails, ok};
use support::TestServer;

#[test]
fn csi_storage_capacity_is_validated_and_canonicalized() {
    let s = TestServer::start();
    let bad = "apiVersion: storage.k8s.io/v1\nkind: CSIStorageCapacity\nmetadata:\n  name: c\nstorageClassName: Fast_Class\ncapacity: -1Gi\nnodeTopology:\n  matchExpressions:\n  - key: zone\n    operator: In\n";
    let err = apply_fails(&s, bad);
    assert_lines(
        &err,
        &[
            "The CSIStorageCapacity \"c\" is invalid: \n",
            "* nodeTopology.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
            "* storageClassName: Invalid value: \"Fast_Class\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters",
            "* capacity: Invalid value: \"-1Gi\": must be greater than or equal to 0",
        ],
    );
    assert_nothing_stored(&s, "csistoragecapacities");

    let good = "apiVersion: storage.k8s.io/v1\nkind: CSIStorageCapacity\nmetadata:\n  name: c\nstorageClassName: fast\ncapacity: 1024Mi\nmaximumVolumeSize: \"0.5\"\nnodeTopology:\n  matchLabels:\n    zone: a\n";
    apply(&s, good);
    let got = ok(&s, &["get", "csistoragecapacity", "c", "-o", "jsonpath={.capacity} {.maximumVolumeSize}"]);
    assert_eq!(got, "1Gi 500m");
    let err = apply_fails(&s, &good.replace("storageClassName: fast", "storageClassName: slow"));
    assert!(
        err.contains(
            "The CSIStorageCapacity \"c\" is invalid: storageClassName: Invalid value: \"slow\": field is immutable"
        ),
        "{err}"
    );
}

#[test]
fn ip_addresses_need_canonical_names_and_a_parent() {
    let s = TestServer::start();
    let err = apply_fails(
        &s,
        "apiVersion: networking.k8s.io/v1\nkind: IPAddress\nmetadata:\n  name: \"2001:db8:0::7\"\nspec: {}\n",
    );
    assert_lines(
        &err,
        &[
            "The IPAddress \"2001:db8:0::7\" is invalid: \n",
            "* metadata.name: Invalid value: \"2001:db8:0::7\": must be in canonical form (\"2001:db8::7\")",
            "* spec.parentRef: Required value",
        ],
    );
    let err = fails(&s, &["get", "ipaddress", "2001:db8:0::7"]);
    assert!(err.contains("not found"), "{err}");

    let good = "apiVersion: networking.k8s.io/v1\nkind: IPAddress\nmetadata:\n  name: 10.96.200.7\nspec:\n  parentRef:\n    group: \"\"\n    resource: services\n    namespace: default\n    name: a\n";
    apply(&s, good);
    assert_eq!(ok(&s, &["get", "ipaddress", "10.96.200.7", "-o", "jsonpath={.spec.parentRef.name}"]), "a");
    let err = apply_fails(&s, &good.replace("name: a", "name: b"));
    assert!(
        err.contains("The IPAddress \"10.96.200.7\" is invalid: spec.parentRef: Invalid value: networking.ParentReference{Group:\"\", Resource:\"services\", Namespace:\"default\", Name:\"b\"}: field is immutable"),
        "{err}"
    );
}

#[test]
fn service_cidrs_hold_one_canonical_cidr_per_family() {
    let s = TestServer::start();
    let cidr = |list: &str| {
        format!(
            "apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata:\n  name: extra\nspec:\n  cidrs: {list}\n"
        )
    };
    let err = apply_fails(&s, &cidr("[\"10.200.0.0/24\", \"10.201.0.0/24\"]"));
    assert!(
        err.contains("The ServiceCIDR \"extra\" is invalid: spec.cidrs: Invalid value: networking.ServiceCIDRSpec{CIDRs:[]string{\"10.200.0.0/24\", \"10.201.0.0/24\"}}: may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"),
        "{err}"
    );
    let err = apply_fails(&s, &cidr("[\"10.200.0.1/24\"]"));
    assert!(
        err.contains("The ServiceCIDR \"extra\" is invalid: spec.cidrs[0]: Invalid value: \"10.200.0.1/24\": must not have bits set beyond the prefix length"),
        "{err}"
    );
    let err = fails(&s, &["get", "servicecidr", "extra"]);
    assert!(err.contains("not found"), "{err}");

    apply(&s, &cidr("[\"10.200.0.0/24\"]"));
    // 1.33 lets a single-stack ServiceCIDR become dual-stack while its
    // first CIDR stays (ValidateServiceCIDRUpdate, kubernetes#131263)...
    let err = apply_fails(&s, &cidr("[\"10.202.0.0/24\", \"2001:db8::/112\"]"));
    assert!(
        err.contains(
            "The ServiceCIDR \"extra\" is invalid: spec.cidrs[0]: Invalid value: \"10.202.0.0/24\": field is immutable"
        ),
        "{err}"
    );
    apply(&s, &cidr("[\"10.200.0.0/24\", \"2001:db8::/112\"]"));
    let got = ok(&s, &["get", "servicecidr", "extra", "-o", "jsonpath={.spec.cidrs}"]);
    assert_eq!(got, r#"["10.200.0.0/24","2001:db8::/112"]"#);
    // ...but never back, nor reordered.
    let err = apply_fails(&s, &cidr("[\"10.200.0.0/24\"]"));
    assert!(
        err.contains("The ServiceCIDR \"extra\" is invalid: spec.cidrs: Invalid value: []string{\"10.200.0.0/24\"}: field is immutable"),
        "{err}"
    );
    let err = apply_fails(&s, &cidr("[\"2001:db8::/112\", \"10.200.0.0/24\"]"));
    assert!(err.contains("spec.cidrs[0]: Invalid value: \"2001:db8::/112\": field is immutable"), "{err}");
}

#[test]
fn validating_admission_policy_bindings_need_a_policy_and_actions() {
    let s = TestServer::start();
    let head = "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata:\n  name: b\nspec:\n";
    let err = apply_fails(
        &s,
        &format!(
            "{head}  validationActions: [Deny, Warn]\n  paramRef:\n    name: a\n    parameterNotFoundAction: Skip\n"
        ),
    );
    assert_lines(
        &err,
        &[
            "The ValidatingAdmissionPolicyBinding \"b\" is invalid: \n",
            "* spec.policyName: Required value",
            "* spec.paramRef.parameterNotFoundAction: Unsupported value: \"Skip\": supported values: \"Deny\", \"Allow\"",
            "* spec.validationActions: Invalid value: []admissionregistration.ValidationAction{\"Deny\", \"Warn\"}: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ],
    );
    assert_nothing_stored(&s, "validatingadmissionpolicybindings");

    apply(&s, &format!("{head}  policyName: p\n  validationActions: [Audit]\n  matchResources: {{}}\n"));
    let got = ok(&s, &["get", "validatingadmissionpolicybinding", "b", "-o", "jsonpath={.spec.matchResources}"]);
    let got: serde_json::Value = serde_json::from_str(&got).expect("json");
    assert_eq!(got, serde_json::json!({"matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {}}));
}

/// A CRD schema's `pattern` must compile as a Go regular expression
/// (upstream's `validateValueValidation` runs `regexp.Compile` and quotes
/// Go's error); an RE2 pattern is accepted.
#[test]
fn crd_patterns_must_be_go_regular_expressions() {
    let s = TestServer::start();
    let crd = |pattern: &str| {
        format!(
            "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {{plural: gadgets, singular: gadget, kind: Gadget}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              code: {{type: string, pattern: '{pattern}'}}
"
        )
    };
    let err = apply_fails(&s, &crd("+"));
    assert_lines(
        &err,
        &["The CustomResourceDefinition \"gadgets.example.com\" is invalid: spec.validation.openAPIV3Schema.properties[spec].properties[code].pattern: Invalid value: \"+\": must be a valid regular expression, but isn't: error parsing regexp: missing argument to repetition operator: `+`"],
    );
    let err = apply_fails(&s, &crd("^(?!x)"));
    assert_lines(&err, &["pattern: Invalid value: \"^(?!x)\": must be a valid regular expression, but isn't: error parsing regexp: invalid or unsupported Perl syntax: `(?!`"]);
    assert_nothing_stored(&s, "crd");
    apply(&s, &crd("^[a-z]([-a-z0-9]*[a-z0-9])?$"));
}

/// A CRD schema's `default`s must validate against their own sub-schema
/// and hold no field pruning would drop (upstream's `ValidateDefaults`):
/// a wrongly typed default is refused with kube-openapi's message (its
/// location is empty, hence ` in body` after two spaces), a default with an
/// unknown field too; nothing is stored. Valid defaults are accepted.
#[test]
fn crd_defaults_must_validate_against_their_schema() {
    let s = TestServer::start();
    let crd = |replicas: &str, spec_default: &str| {
        format!(
            "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {{plural: widgets, singular: widget, kind: Widget}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            default: {spec_default}
            properties:
              replicas: {{type: integer, minimum: 1, default: {replicas}}}
              mode: {{type: string, enum: [fast, slow], default: fast}}
"
        )
    };
    let err = apply_fails(&s, &crd("'three'", "{}"));
    assert_lines(
        &err,
        &["The CustomResourceDefinition \"widgets.example.com\" is invalid: spec.validation.openAPIV3Schema.properties[spec].properties[replicas].default: Invalid value: \"string\":  in body must be of type integer: \"string\""],
    );
    let err = apply_fails(&s, &crd("0", "{}"));
    assert_lines(
        &err,
        &["properties[replicas].default: Invalid value: 0:  in body should be greater than or equal to 1"],
    );
    let err = apply_fails(&s, &crd("2", "{mode: fast, color: red}"));
    assert_lines(
        &err,
        &["spec.validation.openAPIV3Schema.properties[spec].default: Invalid value: map[string]interface {}{\"color\":\"red\", \"mode\":\"fast\"}: must not have unknown fields"],
    );
    assert_nothing_stored(&s, "crd");
    apply(&s, &crd("2", "{mode: slow}"));
    ok(&s, &["get", "crd", "widgets.example.com"]);
}
