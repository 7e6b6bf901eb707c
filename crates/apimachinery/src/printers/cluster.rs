//! Printers for cluster-level kinds: rbac bindings, certificates,
//! coordination, scheduling, node, admissionregistration, flowcontrol
//! (upstream `printRoleBinding`, `printCertificateSigningRequest`,
//! `printLease`, `printFlowSchema`, …) and the aggregator's APIService
//! table.

use jiff::Timestamp;
use serde_json::{json, Value};

use super::{age, arr, cell, col, human_duration, int, name, s, wide, Column, AGE, NAME, NAME_DOC};

/// RoleBinding columns: Name, Role, Age | Users, Groups, ServiceAccounts.
pub const ROLE_BINDING_COLUMNS: &[Column] = &[
    NAME,
    col("Role", "string", "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error. This field is immutable."),
    AGE,
    wide("Users", "string", "Users in the roleBinding"),
    wide("Groups", "string", "Groups in the roleBinding"),
    wide("ServiceAccounts", "string", "ServiceAccounts in the roleBinding"),
];

/// ClusterRoleBinding columns: Name, Role, Age | Users, Groups, ServiceAccounts.
pub const CLUSTER_ROLE_BINDING_COLUMNS: &[Column] = &[
    NAME,
    col("Role", "string", "RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error. This field is immutable."),
    AGE,
    wide("Users", "string", "Users in the clusterRoleBinding"),
    wide("Groups", "string", "Groups in the clusterRoleBinding"),
    wide("ServiceAccounts", "string", "ServiceAccounts in the clusterRoleBinding"),
];

/// `printRoleBinding` / `printClusterRoleBinding`: ROLE is `Kind/name`;
/// subjects split by `rbac.SubjectsStrings` and joined with `", "`.
pub fn role_binding_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    let (mut users, mut groups, mut sas) = (Vec::new(), Vec::new(), Vec::new());
    for sub in arr(&obj["subjects"]) {
        match s(&sub["kind"]) {
            "ServiceAccount" => sas.push(format!("{}/{}", s(&sub["namespace"]), s(&sub["name"]))),
            "User" => users.push(s(&sub["name"]).to_string()),
            "Group" => groups.push(s(&sub["name"]).to_string()),
            _ => {}
        }
    }
    let role = format!("{}/{}", s(&obj["roleRef"]["kind"]), s(&obj["roleRef"]["name"]));
    vec![name(obj), cell(role), age(obj, now), cell(users.join(", ")), cell(groups.join(", ")), cell(sas.join(", "))]
}

/// CertificateSigningRequest columns: Name, Age, SignerName, Requestor, RequestedDuration, Condition.
pub const CSR_COLUMNS: &[Column] = &[
    NAME,
    AGE,
    col(
        "SignerName",
        "string",
        "signerName indicates the requested signer, and is a qualified name.\n\nList/watch requests for CertificateSigningRequests can filter on this field using a \"spec.signerName=NAME\" fieldSelector.\n\nWell-known Kubernetes signers are:  1. \"kubernetes.io/kube-apiserver-client\": issues client certificates that can be used to authenticate to kube-apiserver.   Requests for this signer are never auto-approved by kube-controller-manager, can be issued by the \"csrsigning\" controller in kube-controller-manager.  2. \"kubernetes.io/kube-apiserver-client-kubelet\": issues client certificates that kubelets use to authenticate to kube-apiserver.   Requests for this signer can be auto-approved by the \"csrapproving\" controller in kube-controller-manager, and can be issued by the \"csrsigning\" controller in kube-controller-manager.  3. \"kubernetes.io/kubelet-serving\" issues serving certificates that kubelets use to serve TLS endpoints, which kube-apiserver can connect to securely.   Requests for this signer are never auto-approved by kube-controller-manager, and can be issued by the \"csrsigning\" controller in kube-controller-manager.\n\nMore details are available at https://k8s.io/docs/reference/access-authn-authz/certificate-signing-requests/#kubernetes-signers\n\nCustom signerNames can also be specified. The signer defines:  1. Trust distribution: how trust (CA bundles) are distributed.  2. Permitted subjects: and behavior when a disallowed subject is requested.  3. Required, permitted, or forbidden x509 extensions in the request (including whether subjectAltNames are allowed, which types, restrictions on allowed values) and behavior when a disallowed extension is requested.  4. Required, permitted, or forbidden key usages / extended key usages.  5. Expiration/certificate lifetime: whether it is fixed by the signer, configurable by the admin.  6. Whether or not requests for CA certificates are allowed.",
    ),
    col("Requestor", "string", "request contains an x509 certificate signing request encoded in a \"CERTIFICATE REQUEST\" PEM block. When serialized as JSON or YAML, the data is additionally base64-encoded."),
    col(
        "RequestedDuration",
        "string",
        "expirationSeconds is the requested duration of validity of the issued certificate. The certificate signer may issue a certificate with a different validity duration so a client must check the delta between the notBefore and and notAfter fields in the issued certificate to determine the actual duration.\n\nThe v1.22+ in-tree implementations of the well-known Kubernetes signers will honor this field as long as the requested duration is not greater than the maximum duration they will honor per the --cluster-signing-duration CLI flag to the Kubernetes controller manager.\n\nCertificate signers may not honor this field for various reasons:\n\n  1. Old signer that is unaware of the field (such as the in-tree      implementations prior to v1.22)   2. Signer whose configured maximum is shorter than the requested duration   3. Signer whose configured minimum is longer than the requested duration\n\nThe minimum valid value for expirationSeconds is 600, i.e. 10 minutes.",
    ),
    col("Condition", "string", "conditions applied to the request. Known conditions are \"Approved\", \"Denied\", and \"Failed\"."),
];

/// `printCertificateSigningRequest`: CONDITION is Denied/Approved/Pending
/// plus `,Failed` and `,Issued`.
pub fn csr_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    let conds: Vec<&str> = arr(&obj["status"]["conditions"]).iter().map(|c| s(&c["type"])).collect();
    let mut status = if conds.contains(&"Denied") {
        "Denied".to_string()
    } else if conds.contains(&"Approved") {
        "Approved".to_string()
    } else {
        "Pending".to_string()
    };
    if conds.contains(&"Failed") {
        status.push_str(",Failed");
    }
    if !s(&obj["status"]["certificate"]).is_empty() {
        status.push_str(",Issued");
    }
    let spec = &obj["spec"];
    let signer = if s(&spec["signerName"]).is_empty() { "<none>" } else { s(&spec["signerName"]) };
    let duration = spec["expirationSeconds"].as_i64().map_or("<none>".to_string(), human_duration);
    vec![name(obj), age(obj, now), cell(signer), cell(s(&spec["username"])), cell(duration), cell(status)]
}

/// Lease columns: Name, Holder, Age.
pub const LEASE_COLUMNS: &[Column] = &[
    NAME,
    col("Holder", "string", "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field."),
    AGE,
];

/// `printLease`: the holder identity.
pub fn lease_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![name(obj), cell(s(&obj["spec"]["holderIdentity"])), age(obj, now)]
}

/// PriorityClass columns: Name, Value, Global-Default, Age, PreemptionPolicy.
pub const PRIORITY_CLASS_COLUMNS: &[Column] = &[
    NAME,
    col("Value", "integer", "value represents the integer value of this priority class. This is the actual priority that pods receive when they have the name of this class in their pod spec."),
    col("Global-Default", "boolean", "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class. Only one PriorityClass can be marked as `globalDefault`. However, if more than one PriorityClasses exists with their `globalDefault` field set to true, the smallest value of such global default PriorityClasses will be used as the default priority."),
    AGE,
    col("PreemptionPolicy", "string", "preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if unset."),
];

/// `printPriorityClass`.
pub fn priority_class_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(obj),
        json!(int(&obj["value"])),
        json!(obj["globalDefault"].as_bool().unwrap_or(false)),
        age(obj, now),
        cell(s(&obj["preemptionPolicy"])),
    ]
}

/// RuntimeClass columns: Name, Handler, Age.
pub const RUNTIME_CLASS_COLUMNS: &[Column] = &[NAME, col("Handler", "string", ""), AGE];

/// `printRuntimeClass`: the handler.
pub fn runtime_class_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![name(obj), cell(s(&obj["handler"])), age(obj, now)]
}

/// Mutating/ValidatingWebhookConfiguration columns: Name, Webhooks, Age.
pub const WEBHOOK_COLUMNS: &[Column] = &[
    NAME,
    col("Webhooks", "integer", "Webhooks indicates the number of webhooks registered in this configuration"),
    AGE,
];

/// `printMutatingWebhook` / `printValidatingWebhook`: the webhook count.
pub fn webhook_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![name(obj), json!(arr(&obj["webhooks"]).len()), age(obj, now)]
}

/// ValidatingAdmissionPolicy columns: Name, Validations, ParamKind, Age.
pub const VAP_COLUMNS: &[Column] = &[
    NAME,
    col("Validations", "integer", "Validations indicates the number of validation rules defined in this configuration"),
    col("ParamKind", "string", "ParamKind specifies the kind of resources used to parameterize this policy"),
    AGE,
];

/// `printValidatingAdmissionPolicy`: ParamKind as `apiVersion/kind`.
pub fn vap_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    let pk = &obj["spec"]["paramKind"];
    let param_kind =
        if pk.is_object() { format!("{}/{}", s(&pk["apiVersion"]), s(&pk["kind"])) } else { "<unset>".into() };
    vec![name(obj), json!(arr(&obj["spec"]["validations"]).len()), cell(param_kind), age(obj, now)]
}

/// ValidatingAdmissionPolicyBinding columns: Name, PolicyName, ParamRef, Age.
pub const VAP_BINDING_COLUMNS: &[Column] = &[
    NAME,
    col("PolicyName", "string", "PolicyName indicates the policy definition which the policy binding binded to"),
    col("ParamRef", "string", "ParamRef indicates the param resource which sets the configration param"),
    AGE,
];

/// Go's generated `LabelSelector.String()` (used by upstream for a
/// ParamRef selector).
fn go_label_selector_string(sel: &Value) -> String {
    let mut labels: Vec<(&String, &str)> =
        sel["matchLabels"].as_object().map(|m| m.iter().map(|(k, v)| (k, s(v))).collect()).unwrap_or_default();
    labels.sort();
    let labels: String = labels.iter().map(|(k, v)| format!("{k}: {v},")).collect();
    let exprs: String = arr(&sel["matchExpressions"])
        .iter()
        .map(|e| {
            let values: Vec<&str> = arr(&e["values"]).iter().map(s).collect();
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                s(&e["key"]),
                s(&e["operator"]),
                values.join(" ")
            )
        })
        .collect();
    format!("&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}")
}

/// `printValidatingAdmissionPolicyBinding`: ParamRef as `ns/name`,
/// `*/name` without namespace, or the selector.
pub fn vap_binding_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    let pr = &obj["spec"]["paramRef"];
    let param = if !pr.is_object() {
        "<unset>".to_string()
    } else if !s(&pr["name"]).is_empty() {
        let ns = if s(&pr["namespace"]).is_empty() { "*" } else { s(&pr["namespace"]) };
        format!("{ns}/{}", s(&pr["name"]))
    } else if pr["selector"].is_object() {
        go_label_selector_string(&pr["selector"])
    } else {
        "<unset>".to_string()
    };
    vec![name(obj), cell(s(&obj["spec"]["policyName"])), cell(param), age(obj, now)]
}

/// FlowSchema columns: Name, PriorityLevel, MatchingPrecedence, DistinguisherMethod, Age, MissingPL.
pub const FLOW_SCHEMA_COLUMNS: &[Column] = &[
    NAME,
    col("PriorityLevel", "string", "`name` is the name of the priority level configuration being referenced Required."),
    col("MatchingPrecedence", "string", "`matchingPrecedence` is used to choose among the FlowSchemas that match a given request. The chosen FlowSchema is among those with the numerically lowest (which we take to be logically highest) MatchingPrecedence.  Each MatchingPrecedence value must be ranged in [1,10000]. Note that if the precedence is not specified, it will be set to 1000 as default."),
    col("DistinguisherMethod", "string", "`distinguisherMethod` defines how to compute the flow distinguisher for requests that match this schema. `nil` specifies that the distinguisher is disabled and thus will always be the empty string."),
    AGE,
    col("MissingPL", "string", "references a broken or non-existent PriorityLevelConfiguration"),
];

/// `printFlowSchema`: MissingPL is the Dangling condition's status or `?`.
pub fn flow_schema_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &obj["spec"];
    let dm = if spec["distinguisherMethod"].is_object() { s(&spec["distinguisherMethod"]["type"]) } else { "<none>" };
    let missing =
        arr(&obj["status"]["conditions"]).iter().find(|c| s(&c["type"]) == "Dangling").map_or("?", |c| s(&c["status"]));
    vec![
        name(obj),
        cell(s(&spec["priorityLevelConfiguration"]["name"])),
        json!(int(&spec["matchingPrecedence"])),
        cell(dm),
        age(obj, now),
        cell(missing),
    ]
}

/// PriorityLevelConfiguration columns: Name, Type, NominalConcurrencyShares, Queues, HandSize, QueueLengthLimit, Age.
pub const PRIORITY_LEVEL_COLUMNS: &[Column] = &[
    NAME,
    col("Type", "string", "`type` indicates whether this priority level is subject to limitation on request execution.  A value of `\"Exempt\"` means that requests of this priority level are not subject to a limit (and thus are never queued) and do not detract from the capacity made available to other priority levels.  A value of `\"Limited\"` means that (a) requests of this priority level _are_ subject to limits and (b) some of the server's limited capacity is made available exclusively to this priority level. Required."),
    col("NominalConcurrencyShares", "string", "`nominalConcurrencyShares` (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) of this level. This is the number of execution seats available at this priority level. This is used both for requests dispatched from this priority level as well as requests dispatched from other priority levels borrowing seats from this level. The server's concurrency limit (ServerCL) is divided among the Limited priority levels in proportion to their NCS values:\n\nNominalCL(i)  = ceil( ServerCL * NCS(i) / sum_ncs ) sum_ncs = sum[priority level k] NCS(k)\n\nBigger numbers mean a larger nominal concurrency limit, at the expense of every other priority level.\n\nIf not specified, this field defaults to a value of 30.\n\nSetting this field to zero supports the construction of a \"jail\" for this priority level that is used to hold some request(s)"),
    col("Queues", "string", "`queues` is the number of queues for this priority level. The queues exist independently at each apiserver. The value must be positive.  Setting it to 1 effectively precludes shufflesharding and thus makes the distinguisher method of associated flow schemas irrelevant.  This field has a default value of 64."),
    col("HandSize", "string", "`handSize` is a small positive number that configures the shuffle sharding of requests into queues.  When enqueuing a request at this priority level the request's flow identifier (a string pair) is hashed and the hash value is used to shuffle the list of queues and deal a hand of the size specified here.  The request is put into one of the shortest queues in that hand. `handSize` must be no larger than `queues`, and should be significantly smaller (so that a few heavy flows do not saturate most of the queues).  See the user-facing documentation for more extensive guidance on setting this field.  This field has a default value of 8."),
    col("QueueLengthLimit", "string", "`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given queue of this priority level at a time; excess requests are rejected.  This value must be positive.  If not specified, it will be defaulted to 50."),
    AGE,
];

/// `printPriorityLevelConfiguration`: `<none>` for Exempt levels.
pub fn priority_level_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    let limited = &obj["spec"]["limited"];
    let none = || cell("<none>");
    let (mut ncs, mut queues, mut hand, mut qll) = (none(), none(), none(), none());
    if limited.is_object() {
        ncs = json!(int(&limited["nominalConcurrencyShares"]));
        let q = &limited["limitResponse"]["queuing"];
        if q.is_object() {
            queues = json!(int(&q["queues"]));
            hand = json!(int(&q["handSize"]));
            qll = json!(int(&q["queueLengthLimit"]));
        }
    }
    vec![name(obj), cell(s(&obj["spec"]["type"])), ncs, queues, hand, qll, age(obj, now)]
}

/// APIService columns (kube-aggregator's table): Name, Service, Available, Age.
pub const API_SERVICE_COLUMNS: &[Column] = &[
    super::col_fmt("Name", "string", "name", NAME_DOC, 0),
    col("Service", "string", "The reference to the service that hosts this API endpoint."),
    col("Available", "string", "Whether this service is available."),
    col("Age", "string", "The time since this service was created."),
];

/// The aggregator's APIService row: SERVICE `ns/name` or `Local`;
/// AVAILABLE the Available condition, with its reason when not True.
pub fn api_service_row(obj: &Value, now: Timestamp) -> Vec<Value> {
    let svc = &obj["spec"]["service"];
    let service =
        if svc.is_object() { format!("{}/{}", s(&svc["namespace"]), s(&svc["name"])) } else { "Local".into() };
    let available = match arr(&obj["status"]["conditions"]).iter().find(|c| s(&c["type"]) == "Available") {
        None => "Unknown".to_string(),
        Some(c) if s(&c["status"]) != "True" && !s(&c["reason"]).is_empty() => {
            format!("{} ({})", s(&c["status"]), s(&c["reason"]))
        }
        Some(c) => s(&c["status"]).to_string(),
    };
    vec![name(obj), cell(service), cell(available), age(obj, now)]
}

#[cfg(test)]
mod tests {
    use super::super::test_util::now;
    use super::*;

    #[test]
    fn bindings_split_subjects() {
        let rb = json!({"metadata": {"name": "rb"}, "roleRef": {"kind": "ClusterRole", "name": "view"}, "subjects": [
            {"kind": "User", "name": "alice"}, {"kind": "User", "name": "bob"}, {"kind": "Group", "name": "devs"},
            {"kind": "ServiceAccount", "namespace": "ci", "name": "runner"}]});
        let cells = role_binding_row(&rb, now());
        assert_eq!(cells[1], json!("ClusterRole/view"));
        assert_eq!(&cells[3..], &[json!("alice, bob"), json!("devs"), json!("ci/runner")]);
    }

    #[test]
    fn csr_conditions() {
        let csr = json!({"metadata": {"name": "c"}, "spec": {"signerName": "kubernetes.io/kube-apiserver-client",
            "username": "alice", "expirationSeconds": 86400},
            "status": {"conditions": [{"type": "Approved"}], "certificate": "LS0t"}});
        assert_eq!(
            &csr_row(&csr, now())[2..],
            &[json!("kubernetes.io/kube-apiserver-client"), json!("alice"), json!("24h"), json!("Approved,Issued")]
        );
        let pending = json!({"metadata": {"name": "c"}, "spec": {}});
        assert_eq!(&csr_row(&pending, now())[2..], &[json!("<none>"), json!(""), json!("<none>"), json!("Pending")]);
    }

    #[test]
    fn scheduling_and_admission() {
        let pc = json!({"metadata": {"name": "system-cluster-critical"}, "value": 2000000000, "preemptionPolicy": "PreemptLowerPriority"});
        let cells = priority_class_row(&pc, now());
        assert_eq!(&cells[1..3], &[json!(2000000000), json!(false)]);
        assert_eq!(cells[4], json!("PreemptLowerPriority"));
        let vap = json!({"metadata": {"name": "p"}, "spec": {"validations": [{}, {}], "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}});
        assert_eq!(&vap_row(&vap, now())[1..3], &[json!(2), json!("v1/ConfigMap")]);
        let b = json!({"metadata": {"name": "b"}, "spec": {"policyName": "p", "paramRef": {"name": "cfg"}}});
        assert_eq!(&vap_binding_row(&b, now())[1..3], &[json!("p"), json!("*/cfg")]);
        let sel = json!({"metadata": {"name": "b"}, "spec": {"policyName": "p", "paramRef": {"selector": {"matchLabels": {"a": "b"}}}}});
        assert_eq!(
            vap_binding_row(&sel, now())[2],
            json!(
                "&LabelSelector{MatchLabels:map[string]string{a: b,},MatchExpressions:[]LabelSelectorRequirement{},}"
            )
        );
        let wh = json!({"metadata": {"name": "w"}, "webhooks": [{}]});
        assert_eq!(webhook_row(&wh, now())[1], json!(1));
    }

    #[test]
    fn flow_control_and_api_services() {
        let fs = json!({"metadata": {"name": "exempt"}, "spec": {"priorityLevelConfiguration": {"name": "exempt"},
            "matchingPrecedence": 1}, "status": {"conditions": [{"type": "Dangling", "status": "False"}]}});
        let cells = flow_schema_row(&fs, now());
        assert_eq!(&cells[1..4], &[json!("exempt"), json!(1), json!("<none>")]);
        assert_eq!(cells[5], json!("False"));
        let plc = json!({"metadata": {"name": "workload-low"}, "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 100,
            "limitResponse": {"type": "Queue", "queuing": {"queues": 128, "handSize": 6, "queueLengthLimit": 50}}}}});
        assert_eq!(
            &priority_level_row(&plc, now())[1..6],
            &[json!("Limited"), json!(100), json!(128), json!(6), json!(50)]
        );
        let exempt = json!({"metadata": {"name": "exempt"}, "spec": {"type": "Exempt"}});
        assert_eq!(priority_level_row(&exempt, now())[2], json!("<none>"));
        let local = json!({"metadata": {"name": "v1.apps"}, "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Local"}]}});
        assert_eq!(&api_service_row(&local, now())[1..3], &[json!("Local"), json!("True")]);
        let broken = json!({"metadata": {"name": "v1beta1.metrics.k8s.io"}, "spec": {"service": {"namespace": "kube-system", "name": "metrics-server"}},
            "status": {"conditions": [{"type": "Available", "status": "False", "reason": "MissingEndpoints"}]}});
        assert_eq!(
            &api_service_row(&broken, now())[1..3],
            &[json!("kube-system/metrics-server"), json!("False (MissingEndpoints)")]
        );
        let lease = json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "n1"}});
        assert_eq!(lease_row(&lease, now())[1], json!("n1"));
    }
}
