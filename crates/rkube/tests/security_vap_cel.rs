//! ValidatingAdmissionPolicy with Kubernetes' CEL libraries, through the
//! real kubectl and non-admin users (client certificates): `quantity(…)`,
//! `isURL(…)` and `authorizer…check('create').allowed()` decide as
//! upstream's (k8s.io/apiserver `pkg/cel/library` quantity.go, urls.go,
//! authz.go), the authorizer answering from RBAC for the requesting user
//! (and for a service account named with `authorizer.serviceAccount`); a
//! policy calling an unknown function, or using `params` without a
//! `paramKind` (a webhook matchCondition using `params`), is refused at
//! creation with cel-go's `undeclared reference` compile error.

mod api_common;
mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use api_common::{apply, apply_fails, assert_lines};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use support::TestServer;

const RBAC: &str = "apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: cm-writer, namespace: default}
rules:
- apiGroups: ['']
  resources: [configmaps]
  verbs: [create, get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: deploy-creator, namespace: default}
rules:
- apiGroups: [apps]
  resources: [deployments]
  verbs: [create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: cm-writers, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: cm-writer}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: dev}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: intern}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: deploy-creators, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: deploy-creator}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: dev}
- {kind: ServiceAccount, name: robot, namespace: default}
";

const POLICY: &str = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: cel-libraries
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ['']
      apiVersions: [v1]
      operations: [CREATE]
      resources: [configmaps]
  validations:
  - expression: \"!has(object.data) || !('memory' in object.data) || quantity(object.data.memory).isLessThan(quantity('1Gi'))\"
    message: memory must be below 1Gi
  - expression: \"!has(object.data) || !('docs' in object.data) || isURL(object.data.docs)\"
    message: docs must be a URL
  - expression: authorizer.group('apps').resource('deployments').namespace(request.namespace).check('create').allowed()
    message: only deployment creators may write configmaps
  - expression: \"!has(object.data) || !('robot' in object.data) || authorizer.serviceAccount('default', 'robot').group('apps').resource('deployments').namespace('default').check(object.data.robot).allowed()\"
    messageExpression: \"'robot may not ' + object.data.robot + ' deployments'\"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: cel-libraries-binding
spec:
  policyName: cel-libraries
  validationActions: [Deny]
";

/// A policy whose matchCondition asks the authorizer: it applies only to
/// users who may not create deployments, and refuses their secrets.
const CONDITIONAL: &str = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: no-secrets-for-non-deployers
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  matchConditions:
  - name: non-deployers
    expression: \"!authorizer.group('apps').resource('deployments').namespace(request.namespace).check('create').allowed()\"
  validations:
  - expression: \"!has(object.data) || !('password' in object.data)\"
    message: no passwords in configmaps
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: no-secrets-binding
spec:
  policyName: no-secrets-for-non-deployers
  validationActions: [Deny]
";

/// A kubeconfig for the user `cn` (a client certificate from the cluster
/// CA, no groups).
fn user_kubeconfig(s: &TestServer, dir: &Path, cn: &str) -> PathBuf {
    let tls = s.tls_dir();
    let read = |f: &str| std::fs::read_to_string(tls.join(f)).unwrap();
    let ca = read("ca.crt");
    let ca_pair = rkube_pki::CertAndKey { cert_pem: ca.clone(), key_pem: read("ca.key") };
    let pair = rkube_pki::issue_client_certificate(&ca_pair, cn, None).unwrap();
    let config = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: 'https://127.0.0.1:{}', certificate-authority-data: {}}}\n\
         users:\n- name: u\n  user: {{client-certificate-data: {}, client-key-data: {}}}\n\
         contexts:\n- name: x\n  context: {{cluster: c, user: u, namespace: default}}\ncurrent-context: x\n",
        s.port(),
        STANDARD.encode(ca),
        STANDARD.encode(&pair.cert_pem),
        STANDARD.encode(&pair.key_pem)
    );
    let path = dir.join(format!("{cn}.kubeconfig"));
    std::fs::write(&path, config).unwrap();
    path
}

/// `kubectl create configmap <name> --from-literal=…` as the user of
/// `config`: success, or the error text.
fn create_configmap(s: &TestServer, config: &Path, name: &str, literals: &[&str]) -> Result<(), String> {
    let mut args = vec!["create", "configmap", name];
    let literals: Vec<String> = literals.iter().map(|l| format!("--from-literal={l}")).collect();
    args.extend(literals.iter().map(String::as_str));
    let out = s.kubectl_with(config, &args);
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Retries `f` until it gives `Some` (policies and RBAC are read through
/// watches, a moment behind the writes).
fn eventually<T>(what: &str, f: impl Fn() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(150));
    }
}

fn denied(name: &str, message: &str) -> String {
    format!(
        "configmaps \"{name}\" is forbidden: ValidatingAdmissionPolicy 'cel-libraries' with binding \
         'cel-libraries-binding' denied request: {message}"
    )
}

/// The three libraries deny and admit per user; the authorizer answers from the
/// RBAC bindings of the cluster.
#[test]
fn quantity_url_and_authorizer_decide_for_the_requesting_user() {
    let s = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let dev = user_kubeconfig(&s, dir.path(), "dev");
    let intern = user_kubeconfig(&s, dir.path(), "intern");
    apply(&s, RBAC);
    apply(&s, POLICY);

    // The policy is in force once a bad quantity from `dev` is refused.
    let err = eventually("the policy to deny", || {
        create_configmap(&s, &dev, "big", &["memory=2Gi"]).err().filter(|e| e.contains("ValidatingAdmissionPolicy"))
    });
    assert_lines(&err, &[&denied("big", "memory must be below 1Gi")]);

    // dev may create deployments, so everything valid passes.
    eventually("RBAC to allow dev", || {
        create_configmap(&s, &dev, "small", &["memory=512Mi", "docs=https://example.com/docs?x=1"]).ok()
    });
    // 1024Mi is 1Gi: not below it.
    let err = create_configmap(&s, &dev, "one-gi", &["memory=1024Mi"]).unwrap_err();
    assert_lines(&err, &[&denied("one-gi", "memory must be below 1Gi")]);
    let err = create_configmap(&s, &dev, "docs", &["docs=../relative-path"]).unwrap_err();
    assert_lines(&err, &[&denied("docs", "docs must be a URL")]);
    create_configmap(&s, &dev, "abs-path", &["docs=/absolute-path"]).unwrap();

    // intern may write configmaps but not create deployments.
    let err = create_configmap(&s, &intern, "valid", &["memory=1Mi"]).unwrap_err();
    assert_lines(&err, &[&denied("valid", "only deployment creators may write configmaps")]);
    assert!(!s.kubectl(&["get", "configmap", "valid"]).status.success(), "nothing stored");

    // The service account's own permissions decide, not the requester's.
    create_configmap(&s, &dev, "robot-ok", &["robot=create"]).unwrap();
    let err = create_configmap(&s, &dev, "robot-no", &["robot=delete"]).unwrap_err();
    assert_lines(&err, &[&denied("robot-no", "robot may not delete deployments")]);

    // A matchCondition asking the authorizer: the policy applies to intern
    // (who may not create deployments) and not to dev. The first policy
    // goes, so only this one decides.
    assert!(s.kubectl(&["delete", "validatingadmissionpolicybinding", "cel-libraries-binding"]).status.success());
    apply(&s, CONDITIONAL);
    let no_passwords = "configmaps \"pw\" is forbidden: ValidatingAdmissionPolicy 'no-secrets-for-non-deployers' \
                        with binding 'no-secrets-binding' denied request: no passwords in configmaps";
    let err = eventually("the conditional policy", || {
        create_configmap(&s, &intern, "pw", &["password=x"]).err().filter(|e| e.contains("no passwords"))
    });
    assert_lines(&err, &[no_passwords]);
    create_configmap(&s, &dev, "pw", &["password=x"]).unwrap();
    eventually("the first binding to go", || create_configmap(&s, &intern, "plain", &["user=x"]).ok());

    // system:masters is allowed by the authorizer chain.
    let out = s.kubectl(&["create", "configmap", "admin", "--from-literal=memory=10Mi"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn unknown_functions_and_variables_fail_compilation_and_library_functions_compile() {
    let s = TestServer::start();
    let bad = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: bad
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  validations:
  - expression: quantityx('1') == 1
";
    let err = apply_fails(&s, bad);
    assert_lines(
        &err,
        &[
            "The ValidatingAdmissionPolicy \"bad\" is invalid: spec.validations[0].expression: Invalid value: \"quantityx('1') == 1\": compilation failed: ERROR: <input>:1:10: undeclared reference to 'quantityx' (in container '')",
        ],
    );
    // `params` is declared only with a paramKind.
    let err = apply_fails(&s, &bad.replace("quantityx('1') == 1", "params.max > 1"));
    assert_lines(
        &err,
        &["spec.validations[0].expression: Invalid value: \"params.max > 1\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'params' (in container '')"],
    );
    let good = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: good
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  matchConditions:
  - name: not-admins
    expression: \"!authorizer.path('/readyz').check('get').allowed() || true\"
  validations:
  - expression: \"cidr('10.0.0.0/8').containsIP('10.1.2.3') && ip('::1').isLoopback() && url('/x').getEscapedPath() == '/x'\"
  - expression: \"['a', 'b'].isSorted() && 'abc 123'.find('[0-9]+') == '123' && !format.dns1123Label().validate('ok').hasValue()\"
";
    apply(&s, good);

    // Webhook matchConditions: `authorizer` is declared, `params` is not.
    let webhook = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: w
webhooks:
- name: w.rkube.test
  clientConfig:
    url: https://127.0.0.1:9443/validate
  rules:
  - {operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [configmaps]}
  matchConditions:
  - name: only-non-deployers
    expression: \"!authorizer.group('apps').resource('deployments').check('create').allowed()\"
  sideEffects: None
  failurePolicy: Ignore
  admissionReviewVersions: [v1]
";
    let err = apply_fails(&s, &webhook.replace("!authorizer.group", "params.x || !authorizer.group"));
    assert_lines(
        &err,
        &["webhooks[0].matchConditions[0].expression: Invalid value: \"params.x || !authorizer.group('apps').resource('deployments').check('create').allowed()\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'params' (in container '')"],
    );
    apply(&s, webhook);
}
