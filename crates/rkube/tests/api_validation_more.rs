//! Validation and defaulting of more built-in kinds through the real
//! kubectl 1.33: CSIStorageCapacity (storage class name, node topology
//! selector, non-negative capacity, canonical quantities, immutable
//! inputs), IPAddress (canonical IP names, the parent reference) and
//! ServiceCIDR (one or two canonical CIDRs of different families, immutable
//! list). Invalid objects are refused with upstream's 422 text
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
    let err = apply_fails(&s, &cidr("[\"10.200.0.0/24\", \"2001:db8::/112\"]"));
    assert!(
        err.contains("The ServiceCIDR \"extra\" is invalid: spec.cidrs: Invalid value: []string{\"10.200.0.0/24\", \"2001:db8::/112\"}: field is immutable"),
        "{err}"
    );
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
