//! Defaulting and validation of cluster-level built-in kinds through the
//! real kubectl: webhook configurations, APIServices,
//! CertificateSigningRequests, RuntimeClasses, CSI kinds, PodTemplates and
//! ControllerRevisions. Invalid objects are refused with upstream's 422
//! (kubectl prints `The <Kind> "<name>" is invalid: …` and exits 1) and
//! nothing is stored; defaults show in `kubectl get -o json`.

mod api_common;
mod support;

use api_common::{apply, apply_fails, assert_lines, assert_nothing_stored, kubectl_stdin, ok};
use base64::Engine;
use serde_json::{json, Value};
use support::TestServer;

fn get_json(s: &TestServer, args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    serde_json::from_str(&ok(s, &all)).expect("json")
}

const WEBHOOK: &str = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: check
webhooks:
- name: check.example.com
  sideEffects: None
  admissionReviewVersions: [v1]
  clientConfig:
    service:
      namespace: default
      name: hooks
  rules:
  - operations: [CREATE]
    apiGroups: [\"\"]
    apiVersions: [v1]
    resources: [pods]
";

#[test]
fn invalid_webhook_configurations_are_refused_with_upstreams_messages() {
    let s = TestServer::start();
    let bad = WEBHOOK
        .replace("- name: check.example.com", "- name: check.example")
        .replace("  sideEffects: None\n", "")
        .replace(
            "    service:\n      namespace: default\n      name: hooks\n",
            "    url: http://hooks.example.com/x?a=1\n",
        )
        .replace("timeoutSeconds", "");
    let err = apply_fails(&s, &bad);
    assert_lines(
        &err,
        &[
            "The ValidatingWebhookConfiguration \"check\" is invalid: \n",
            "* webhooks[0].name: Invalid value: \"check.example\": should be a domain with at least three segments separated by dots",
            "* webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
            "* webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
            "* webhooks[0].clientConfig.url: Invalid value: \"a=1\": query parameters are not permitted in the URL",
        ],
    );
    let err = apply_fails(&s, &WEBHOOK.replace("admissionReviewVersions: [v1]", "admissionReviewVersions: [v2]"));
    assert_lines(
        &err,
        &["The ValidatingWebhookConfiguration \"check\" is invalid: webhooks[0].admissionReviewVersions: Invalid value: []string{\"v2\"}: must include at least one of v1, v1beta1"],
    );
    let two = format!("{WEBHOOK}{}", &WEBHOOK[WEBHOOK.find("- name:").unwrap()..]);
    let err = apply_fails(&s, &two);
    assert_lines(
        &err,
        &["The ValidatingWebhookConfiguration \"check\" is invalid: webhooks[1].name: Duplicate value: \"check.example.com\""],
    );
    assert_nothing_stored(&s, "validatingwebhookconfigurations");
}

#[test]
fn valid_webhook_configurations_are_stored_with_v1_defaults() {
    let s = TestServer::start();
    apply(&s, WEBHOOK);
    let got = get_json(&s, &["validatingwebhookconfiguration", "check"]);
    let hook = &got["webhooks"][0];
    assert_eq!(hook["failurePolicy"], "Fail");
    assert_eq!(hook["matchPolicy"], "Equivalent");
    assert_eq!(hook["timeoutSeconds"], 10);
    assert_eq!(hook["namespaceSelector"], json!({}));
    assert_eq!(hook["objectSelector"], json!({}));
    assert_eq!(hook["rules"][0]["scope"], "*");
    assert_eq!(hook["clientConfig"]["service"]["port"], 443);
    assert!(hook.get("reinvocationPolicy").is_none());
    // Upstream's strategy starts webhook configurations at generation 1.
    assert_eq!(got["metadata"]["generation"], 1);

    let mutating = WEBHOOK.replace("kind: ValidatingWebhookConfiguration", "kind: MutatingWebhookConfiguration");
    apply(&s, &mutating);
    let got = get_json(&s, &["mutatingwebhookconfiguration", "check"]);
    assert_eq!(got["webhooks"][0]["reinvocationPolicy"], "Never");
    let err = apply_fails(
        &s,
        &mutating.replace("  sideEffects: None\n", "  sideEffects: None\n  reinvocationPolicy: Always\n"),
    );
    assert_lines(
        &err,
        &["The MutatingWebhookConfiguration \"check\" is invalid: webhooks[0].reinvocationPolicy: Unsupported value: \"Always\": supported values: \"IfNeeded\", \"Never\""],
    );
}

const API_SERVICE: &str = "apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1beta1.metrics.example.com
spec:
  group: metrics.example.com
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 10
  service:
    namespace: kube-system
    name: metrics
";

#[test]
fn api_services_follow_kube_aggregator_rules() {
    let s = TestServer::start();
    let err = apply_fails(
        &s,
        &API_SERVICE
            .replace("name: v1beta1.metrics.example.com", "name: v1.metrics.example.com")
            .replace("versionPriority: 10", "versionPriority: 0"),
    );
    assert_lines(
        &err,
        &[
            "The APIService \"v1.metrics.example.com\" is invalid: \n",
            "* metadata.name: Invalid value: \"v1.metrics.example.com\": must be `spec.version+\".\"+spec.group`: \"v1beta1.metrics.example.com\"",
            "* spec.versionPriority: Invalid value: 0: must be positive and less than 1000",
        ],
    );
    apply(&s, API_SERVICE);
    let got = get_json(&s, &["apiservice", "v1beta1.metrics.example.com"]);
    assert_eq!(got["spec"]["service"]["port"], 443);
}

/// A PEM certificate request made by openssl.
fn openssl_csr(dir: &std::path::Path) -> Vec<u8> {
    let key = dir.join("csr.key");
    let out = std::process::Command::new("openssl")
        .args([
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-subj",
            "/CN=alice",
        ])
        .arg("-keyout")
        .arg(&key)
        .output()
        .expect("run openssl");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

#[test]
fn certificate_signing_requests_need_a_parsable_request() {
    let s = TestServer::start();
    let csr = |request: &[u8], extra: &str| {
        format!(
            "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata:\n  name: alice\nspec:\n  request: {}\n  signerName: example.com/signer\n  usages: [client auth]\n{extra}",
            base64::engine::general_purpose::STANDARD.encode(request)
        )
    };
    let err = apply_fails(&s, &csr(b"ab", "  expirationSeconds: 60\n"));
    assert_lines(
        &err,
        &[
            "The CertificateSigningRequest \"alice\" is invalid: \n",
            "* spec.request: Invalid value: []byte{0x61, 0x62}: PEM block type must be CERTIFICATE REQUEST",
            "* spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 600 seconds (10 minutes)",
        ],
    );
    let pem = openssl_csr(s.data_dir());
    let err = apply_fails(&s, &csr(&pem, "").replace("signerName: example.com/signer", "signerName: example/signer"));
    assert_lines(
        &err,
        &["The CertificateSigningRequest \"alice\" is invalid: spec.signerName: Invalid value: \"example\": should be a domain with at least two segments separated by dots"],
    );
    assert_nothing_stored(&s, "csr");
    apply(&s, &csr(&pem, ""));
    assert_eq!(ok(&s, &["get", "csr", "alice", "-o", "jsonpath={.spec.signerName}"]), "example.com/signer");
}

#[test]
fn runtime_classes_csi_drivers_and_templates_follow_upstream() {
    let s = TestServer::start();
    let rc = "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: gvisor\nhandler: runsc\n";
    let err = apply_fails(&s, &rc.replace("handler: runsc", "handler: Run_SC"));
    assert_lines(&err, &["The RuntimeClass \"gvisor\" is invalid: handler: Invalid value: \"Run_SC\": a lowercase RFC 1123 label must consist of"]);
    assert_nothing_stored(&s, "runtimeclasses");
    apply(&s, rc);
    let err = apply_fails(&s, &rc.replace("handler: runsc", "handler: kata"));
    assert_lines(
        &err,
        &["The RuntimeClass \"gvisor\" is invalid: handler: Invalid value: \"kata\": field is immutable"],
    );

    let driver = "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata:\n  name: csi.example.com\nspec: {}\n";
    apply(&s, driver);
    let got = get_json(&s, &["csidriver", "csi.example.com"]);
    assert_eq!(got["spec"]["attachRequired"], true);
    assert_eq!(got["spec"]["podInfoOnMount"], false);
    assert_eq!(got["spec"]["fsGroupPolicy"], "ReadWriteOnceWithFSType");
    assert_eq!(got["spec"]["volumeLifecycleModes"], json!(["Persistent"]));
    assert_eq!(got["spec"]["requiresRepublish"], false);
    assert_eq!(got["spec"]["storageCapacity"], false);
    assert_eq!(got["spec"]["seLinuxMount"], false);
    let err = apply_fails(&s, &driver.replace("spec: {}", "spec:\n  attachRequired: false"));
    assert_lines(&err, &["The CSIDriver \"csi.example.com\" is invalid: spec.attachedRequired: Invalid value: false: field is immutable"]);

    let va = "apiVersion: storage.k8s.io/v1\nkind: VolumeAttachment\nmetadata:\n  name: va\nspec:\n  attacher: csi.example.com\n  nodeName: node-1\n  source: {}\n";
    let err = apply_fails(&s, va);
    assert_lines(
        &err,
        &["The VolumeAttachment \"va\" is invalid: spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName"],
    );
    assert_nothing_stored(&s, "volumeattachments");

    let pt = "apiVersion: v1\nkind: PodTemplate\nmetadata:\n  name: web\n  namespace: default\ntemplate:\n  metadata:\n    labels:\n      app: web\n  spec:\n    containers:\n    - name: c\n      image: nginx\n";
    let err = apply_fails(
        &s,
        &pt.replace("      image: nginx\n", "      image: nginx\n      ports:\n      - containerPort: 70000\n"),
    );
    assert_lines(
        &err,
        &["The PodTemplate \"web\" is invalid: template.spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive"],
    );
    apply(&s, pt);
    let got = get_json(&s, &["podtemplate", "web", "-n", "default"]);
    assert_eq!(got["template"]["spec"]["restartPolicy"], "Always");
    assert_eq!(got["template"]["spec"]["containers"][0]["imagePullPolicy"], "Always");

    let cr =
        "apiVersion: apps/v1\nkind: ControllerRevision\nmetadata:\n  name: web-1\n  namespace: default\nrevision: -1\n";
    let err = apply_fails(&s, cr);
    assert_lines(
        &err,
        &[
            "The ControllerRevision \"web-1\" is invalid: \n",
            "* data: Required value: data is mandatory",
            "* revision: Invalid value: -1: must be greater than or equal to 0",
        ],
    );
    assert_nothing_stored(&s, "controllerrevisions");
}

/// Conformance "Validating Admission webhook, create and update validating
/// webhook configuration with matchConditions" (the storage half; CEL
/// expressions are not compiled here) and "Mutating Admission webhook,
/// create and update mutating webhook configuration with matchConditions".
#[test]
fn webhook_match_conditions_are_stored_updated_and_checked() {
    let s = TestServer::start();
    for kind in ["ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"] {
        let with = |conditions: &str| {
            format!("{}  matchConditions:\n{conditions}", WEBHOOK.replace("ValidatingWebhookConfiguration", kind))
        };
        let first =
            "  - name: exclude-leases\n    expression: '!(request.resource.group == \"coordination.k8s.io\")'\n";
        apply(&s, &with(first));
        let resource = kind.to_lowercase();
        let got = get_json(&s, &[&resource, "check"]);
        assert_eq!(
            got["webhooks"][0]["matchConditions"],
            json!([{"name": "exclude-leases", "expression": "!(request.resource.group == \"coordination.k8s.io\")"}])
        );
        let second = "  - name: exclude-kubelet\n    expression: '!(\"system:nodes\" in request.userInfo.groups)'\n";
        apply(&s, &with(second));
        let got = get_json(&s, &[&resource, "check"]);
        assert_eq!(got["webhooks"][0]["matchConditions"][0]["name"], "exclude-kubelet");
        assert_eq!(got["metadata"]["generation"], 2);

        // `replace` sends the list as is (apply's merge would fold the duplicate).
        let out = kubectl_stdin(
            &s,
            &["replace", "-f", "-"],
            &with(&format!("{second}{second}  - name: Bad Name\n    expression: ' '\n")),
        );
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_lines(
            &err,
            &[
                &format!("The {kind} \"check\" is invalid: \n"),
                "* webhooks[0].matchConditions[1].name: Duplicate value: \"exclude-kubelet\"",
                "* webhooks[0].matchConditions[2].expression: Required value",
                "* webhooks[0].matchConditions[2].name: Invalid value: \"Bad Name\": name part must consist of alphanumeric characters",
            ],
        );
        let got = get_json(&s, &[&resource, "check"]);
        assert_eq!(got["webhooks"][0]["matchConditions"].as_array().map(Vec::len), Some(1));
    }
}
