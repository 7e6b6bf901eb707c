//! Defaulting and validation of built-in kinds outside pods and workloads,
//! through the real kubectl: CustomResourceDefinitions, RBAC, policy,
//! storage. Invalid objects are refused with upstream's 422 (kubectl prints
//! `The <Kind> "<name>" is invalid: …` and exits 1) and nothing is stored;
//! defaults show in `kubectl get -o yaml`.

mod api_common;
mod support;

use api_common::{apply, apply_fails, assert_lines, assert_nothing_stored, ok};
use support::TestServer;

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: widgets
    kind: Widget
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
              size:
                type: integer
";

#[test]
fn invalid_crds_are_refused_with_upstreams_messages() {
    let s = TestServer::start();
    let bad = CRD
        .replace("name: widgets.example.com", "name: widget.example.com")
        .replace("              size:\n                type: integer\n", "              size: {}\n");
    let err = apply_fails(&s, &bad);
    assert_lines(
        &err,
        &[
            "The CustomResourceDefinition \"widget.example.com\" is invalid: \n",
            "* metadata.name: Invalid value: \"widget.example.com\": must be spec.names.plural+\".\"+spec.group",
            "* spec.validation.openAPIV3Schema.properties[spec].properties[size].type: Required value: must not be empty for specified object fields",
        ],
    );
    let err = apply_fails(&s, &CRD.replace("group: example.com", "group: example").replace(".example.com", ".example"));
    assert_lines(
        &err,
        &["The CustomResourceDefinition \"widgets.example\" is invalid: spec.group: Invalid value: \"example\": should be a domain with at least one dot"],
    );
    let two_storage = CRD.replace(
        "  versions:\n",
        "  versions:\n  - name: v2\n    served: false\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n",
    );
    let err = apply_fails(&s, &two_storage);
    assert_lines(&err, &["spec.versions: Invalid value: ", "must have exactly one version marked as storage version"]);
    let no_schema = CRD.split("    schema:\n").next().unwrap().to_string();
    let err = apply_fails(&s, &no_schema);
    assert_lines(
        &err,
        &["The CustomResourceDefinition \"widgets.example.com\" is invalid: spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"],
    );
    assert_nothing_stored(&s, "crd");
}

/// Conformance "Custom Resource Definition, create" (the create half) and
/// "Custom Resource Definition, status sub-resource".
#[test]
fn a_valid_crd_is_stored_with_upstreams_defaults() {
    let s = TestServer::start();
    apply(&s, CRD);
    let got: serde_json::Value =
        serde_json::from_str(&ok(&s, &["get", "crd", "widgets.example.com", "-o", "json"])).expect("json");
    assert_eq!(got["spec"]["names"]["singular"], "widget");
    assert_eq!(got["spec"]["names"]["listKind"], "WidgetList");
    assert_eq!(got["spec"]["conversion"]["strategy"], "None");
    assert_eq!(got["status"]["storedVersions"], serde_json::json!(["v1"]));
    assert_eq!(got["metadata"]["generation"], 1);

    // The group (and the plural) never change; the name rule is a create rule.
    let err = apply_fails(&s, &CRD.replace("group: example.com", "group: example.org"));
    assert_lines(
        &err,
        &["The CustomResourceDefinition \"widgets.example.com\" is invalid: spec.group: Invalid value: \"example.org\": field is immutable"],
    );
    assert_eq!(ok(&s, &["get", "crd", "widgets.example.com", "-o", "jsonpath={.spec.group}"]), "example.com");

    // The status sub-resource takes status changes only.
    let condition = r#"{"status":{"conditions":[{"type":"StatusUpdated","status":"True","reason":"E2E","message":"set"}]},"spec":{"scope":"Cluster"}}"#;
    ok(&s, &["patch", "crd", "widgets.example.com", "--subresource=status", "--type=merge", "-p", condition]);
    assert_eq!(
        ok(
            &s,
            &[
                "get",
                "crd",
                "widgets.example.com",
                "-o",
                "jsonpath={.status.conditions[0].type}|{.spec.scope}|{.status.storedVersions}"
            ]
        ),
        "StatusUpdated|Namespaced|[\"v1\"]"
    );
}

#[test]
fn rbac_rules_and_bindings_follow_upstream() {
    let s = TestServer::start();
    let err = apply_fails(
        &s,
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: r\n  namespace: default\nrules:\n- nonResourceURLs: [\"/healthz\"]\n  verbs: [get]\n- apiGroups: [\"\"]\n  resources: [pods]\n",
    );
    assert_lines(
        &err,
        &[
            "The Role \"r\" is invalid: \n",
            "* rules[0].nonResourceURLs: Invalid value: []string{\"/healthz\"}: namespaced rules cannot apply to non-resource URLs",
            "* rules[1].verbs: Required value: verbs must contain at least one value",
        ],
    );
    // The bootstrap policy keeps its own Roles; the refused one is not stored.
    let err = api_common::fails(&s, &["get", "role", "r", "-n", "default"]);
    assert!(err.contains(r#"roles.rbac.authorization.k8s.io "r" not found"#), "{err}");

    let rb = "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: rb\n  namespace: default\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: view\nsubjects:\n- kind: User\n  name: alice\n- kind: ServiceAccount\n  name: default\n";
    apply(&s, rb);
    // v1 defaulting fills in the apiGroup of user subjects.
    assert_eq!(
        ok(&s, &["get", "rolebinding", "rb", "-o", "jsonpath={.subjects[0].apiGroup}|{.subjects[1].apiGroup}"]),
        "rbac.authorization.k8s.io|"
    );
    let err = apply_fails(&s, &rb.replace("name: view", "name: edit"));
    assert_lines(
        &err,
        &["The RoleBinding \"rb\" is invalid: roleRef: Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"ClusterRole\", Name:\"edit\"}: cannot change roleRef"],
    );
    assert_eq!(ok(&s, &["get", "rolebinding", "rb", "-o", "jsonpath={.roleRef.name}"]), "view");

    let err = apply_fails(
        &s,
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: crb\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: r\nsubjects:\n- kind: ServiceAccount\n  name: default\n",
    );
    assert_lines(
        &err,
        &[
            "* roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\"",
            "* subjects[0].namespace: Required value",
        ],
    );
    let err = api_common::fails(&s, &["get", "clusterrolebinding", "crb"]);
    assert!(err.contains(r#"clusterrolebindings.rbac.authorization.k8s.io "crb" not found"#), "{err}");
}

#[test]
fn pod_disruption_budgets_take_min_available_or_max_unavailable() {
    let s = TestServer::start();
    let pdb = "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: p\n  namespace: default\nspec:\n  minAvailable: 1\n  maxUnavailable: 1\n  selector:\n    matchLabels:\n      app: web\n";
    let err = apply_fails(&s, pdb);
    // Upstream prints the spec struct with pointer addresses, which vary.
    assert_lines(
        &err,
        &[
            "The PodDisruptionBudget \"p\" is invalid: spec: Invalid value: policy.PodDisruptionBudgetSpec{MinAvailable:(*intstr.IntOrString)(0x",
            "UnhealthyPodEvictionPolicy:(*policy.UnhealthyPodEvictionPolicyType)(nil)}: minAvailable and maxUnavailable cannot be both set",
        ],
    );
    assert_nothing_stored(&s, "pdb");
    let err =
        apply_fails(&s, &pdb.replace("  maxUnavailable: 1\n", "").replace("minAvailable: 1", "minAvailable: 120%"));
    assert_lines(
        &err,
        &["The PodDisruptionBudget \"p\" is invalid: spec.minAvailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"120%\"}: must not be greater than 100%"],
    );
    apply(&s, &pdb.replace("  maxUnavailable: 1\n", ""));
    assert_eq!(ok(&s, &["get", "pdb", "p", "-o", "jsonpath={.status.disruptionsAllowed}"]), "0");
}

#[test]
fn storage_classes_get_upstreams_defaults_and_keep_their_provisioner() {
    let s = TestServer::start();
    let sc = "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: fast\nprovisioner: example.com/disk\nparameters:\n  type: ssd\n";
    apply(&s, sc);
    let yaml = ok(&s, &["get", "storageclass", "fast", "-o", "yaml"]);
    assert_lines(&yaml, &["reclaimPolicy: Delete\n", "volumeBindingMode: Immediate\n"]);
    let err = apply_fails(&s, &sc.replace("example.com/disk", "example.com/other").replace("ssd", "hdd"));
    assert_lines(
        &err,
        &[
            "The StorageClass \"fast\" is invalid: \n",
            "* parameters: Forbidden: updates to parameters are forbidden.",
            "* provisioner: Forbidden: updates to provisioner are forbidden.",
        ],
    );
    let err = apply_fails(
        &s,
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: slow\nprovisioner: example.com/disk\nreclaimPolicy: Recycle\n",
    );
    assert_lines(
        &err,
        &["The StorageClass \"slow\" is invalid: reclaimPolicy: Unsupported value: \"Recycle\": supported values: \"Delete\", \"Retain\""],
    );
}

#[test]
fn priority_classes_and_leases_follow_upstream() {
    let s = TestServer::start();
    let err = apply_fails(
        &s,
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: huge\nvalue: 2000000000\n",
    );
    assert_lines(
        &err,
        &["The PriorityClass \"huge\" is invalid: value: Forbidden: maximum allowed value of a user defined priority is 1000000000"],
    );
    apply(&s, "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: high\nvalue: 1000\n");
    assert_eq!(ok(&s, &["get", "priorityclass", "high", "-o", "jsonpath={.preemptionPolicy}"]), "PreemptLowerPriority");

    let err = apply_fails(
        &s,
        "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: l\n  namespace: default\nspec:\n  leaseDurationSeconds: 0\n",
    );
    assert_lines(
        &err,
        &["The Lease \"l\" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"],
    );
}

#[test]
fn ingresses_and_network_policies_follow_upstream() {
    let s = TestServer::start();
    let ing = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: web\n  namespace: default\nspec:\n  rules:\n  - host: example.com\n    http:\n      paths:\n      - path: /\n        backend:\n          service:\n            name: web\n            port:\n              number: 80\n";
    let err = apply_fails(&s, ing);
    assert_lines(
        &err,
        &["The Ingress \"web\" is invalid: spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"],
    );
    assert_nothing_stored(&s, "ingress");
    apply(&s, &ing.replace("      - path: /\n", "      - path: /\n        pathType: Prefix\n"));
    assert_eq!(ok(&s, &["get", "ingress", "web", "-o", "jsonpath={.spec.rules[0].http.paths[0].pathType}"]), "Prefix");

    let np = "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: np\n  namespace: default\nspec:\n  podSelector: {}\n  egress:\n  - ports:\n    - port: 53\n";
    apply(&s, np);
    assert_eq!(
        ok(
            &s,
            &["get", "networkpolicy", "np", "-o", "jsonpath={.spec.policyTypes}|{.spec.egress[0].ports[0].protocol}"]
        ),
        "[\"Ingress\",\"Egress\"]|TCP"
    );
    let err = apply_fails(
        &s,
        &np.replace(
            "    - port: 53\n",
            "    to:\n    - ipBlock:\n        cidr: 10.0.0.0/8\n        except:\n        - 192.168.0.0/16\n",
        ),
    );
    assert_lines(
        &err,
        &["The NetworkPolicy \"np\" is invalid: spec.egress[0].to[0].ipBlock.except[0]: Invalid value: \"192.168.0.0/16\": must be a strict subset of `cidr`"],
    );
}

#[test]
fn persistent_volumes_and_claims_follow_upstream() {
    let s = TestServer::start();
    let err = apply_fails(
        &s,
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\n  namespace: default\nspec:\n  storageClassName: fast\n",
    );
    assert_lines(
        &err,
        &[
            "The PersistentVolumeClaim \"data\" is invalid: \n",
            "* spec.accessModes: Required value: at least 1 access mode is required",
            "* spec.resources[storage]: Required value",
        ],
    );
    assert_nothing_stored(&s, "pvc");
    let pvc = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\n  namespace: default\nspec:\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: 1Gi\n";
    apply(&s, pvc);
    assert_eq!(ok(&s, &["get", "pvc", "data", "-o", "jsonpath={.spec.volumeMode}"]), "Filesystem");
    let err = apply_fails(&s, &pvc.replace("ReadWriteOnce", "ReadWriteMany"));
    assert_lines(
        &err,
        &["The PersistentVolumeClaim \"data\" is invalid: spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"],
    );

    let err = apply_fails(
        &s,
        "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: pv1\nspec:\n  accessModes: [ReadWriteOnce]\n  capacity:\n    storage: 1Gi\n",
    );
    assert_lines(&err, &["The PersistentVolume \"pv1\" is invalid: spec: Required value: must specify a volume type"]);
    apply(
        &s,
        "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: pv1\nspec:\n  accessModes: [ReadWriteOnce]\n  capacity:\n    storage: 1Gi\n  hostPath:\n    path: /data\n",
    );
    let yaml = ok(&s, &["get", "pv", "pv1", "-o", "yaml"]);
    assert_lines(
        &yaml,
        &[
            "persistentVolumeReclaimPolicy: Retain\n",
            "volumeMode: Filesystem\n",
            "phase: Pending\n",
            "lastPhaseTransitionTime: ",
        ],
    );
}

/// Conformance "LimitRange, resources" (the defaulting half: a container
/// item's default limit and request fall back to max and min).
#[test]
fn limit_ranges_default_container_items() {
    let s = TestServer::start();
    let lr = "apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: lr\n  namespace: default\nspec:\n  limits:\n  - type: Container\n    max:\n      cpu: 500m\n    min:\n      memory: 50Mi\n";
    apply(&s, lr);
    assert_eq!(
        ok(
            &s,
            &[
                "get",
                "limitrange",
                "lr",
                "-o",
                "jsonpath={.spec.limits[0].default.cpu}|{.spec.limits[0].defaultRequest}"
            ]
        ),
        "500m|{\"cpu\":\"500m\",\"memory\":\"50Mi\"}"
    );
    let err = apply_fails(&s, &lr.replace("memory: 50Mi", "cpu: \"1\"").replace("type: Container", "type: Pod"));
    // Upstream prints the offending value as Go's %#v of a Quantity struct;
    // only the field and the detail are compared.
    assert_lines(
        &err,
        &[
            "The LimitRange \"lr\" is invalid: spec.limits[0].min[cpu]: Invalid value: ",
            ": min value 1 is greater than max value 500m",
        ],
    );
}

#[test]
fn resource_quotas_follow_upstream() {
    let s = TestServer::start();
    let quota = "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: q\n  namespace: default\nspec:\n  hard:\n    pods: \"10\"\n    storage: 1Gi\n  scopes: [BestEffort, NotBestEffort]\n";
    let err = apply_fails(&s, quota);
    assert_lines(
        &err,
        &[
            "The ResourceQuota \"q\" is invalid: \n",
            "* spec.hard[storage]: Invalid value: \"storage\": must be a standard resource for quota",
            "* spec.scopes: Invalid value: []core.ResourceQuotaScope{\"BestEffort\", \"NotBestEffort\"}: conflicting scopes",
        ],
    );
    assert_nothing_stored(&s, "resourcequota");
    apply(&s, &quota.replace("    storage: 1Gi\n", "").replace(", NotBestEffort", ""));
    let err = apply_fails(
        &s,
        &quota.replace("    storage: 1Gi\n", "").replace("  scopes: [BestEffort, NotBestEffort]\n", ""),
    );
    assert_lines(
        &err,
        &["The ResourceQuota \"q\" is invalid: spec.scopes: Invalid value: []core.ResourceQuotaScope(nil): field is immutable"],
    );
}
