//! RBAC with the real kubectl: a matrix of users (client certificates, with
//! and without groups), a service account (its token) and the anonymous
//! user × verbs × resources × namespaces — every allowed request succeeds,
//! every other is a 403 with upstream's message, and `kubectl auth can-i`
//! agrees with each outcome; escalation prevention on role and binding
//! writes; the bootstrap roles and bindings as upstream 1.33 ships them.

mod api_common;
mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::Value;
use support::TestServer;

/// A kubeconfig for `user` (client certificate with CN `user`, O `group`)
/// or, with `token`, for that bearer token; `None` for neither (anonymous).
fn kubeconfig(
    s: &TestServer,
    dir: &Path,
    name: &str,
    cert: Option<(&str, Option<&str>)>,
    token: Option<&str>,
) -> PathBuf {
    let tls = s.tls_dir();
    let read = |f: &str| std::fs::read_to_string(tls.join(f)).unwrap();
    let ca = read("ca.crt");
    let mut user = String::from("{}");
    if let Some((cn, group)) = cert {
        let ca_pair = rkube_pki::CertAndKey { cert_pem: ca.clone(), key_pem: read("ca.key") };
        let pair = rkube_pki::issue_client_certificate(&ca_pair, cn, group).unwrap();
        user = format!(
            "{{client-certificate-data: {}, client-key-data: {}}}",
            STANDARD.encode(&pair.cert_pem),
            STANDARD.encode(&pair.key_pem)
        );
    }
    if let Some(t) = token {
        user = format!("{{token: {t}}}");
    }
    let config = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: 'https://127.0.0.1:{}', certificate-authority-data: {}}}\n\
         users:\n- name: u\n  user: {user}\ncontexts:\n- name: x\n  context: {{cluster: c, user: u}}\ncurrent-context: x\n",
        s.port(),
        STANDARD.encode(ca)
    );
    let path = dir.join(format!("{name}.kubeconfig"));
    std::fs::write(&path, config).unwrap();
    path
}

fn run(s: &TestServer, config: &Path, args: &[&str]) -> (bool, String, String) {
    let out = s.kubectl_with(config, args);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn admin(s: &TestServer, args: &[&str]) -> String {
    api_common::ok(s, args)
}

/// Applies `yaml` as the admin.
fn apply(s: &TestServer, yaml: &str) {
    api_common::apply(s, yaml);
}

/// One matrix entry: who runs `args`, what `auth can-i` asks, and the
/// upstream 403 message when it is refused (`None`: allowed).
struct Case {
    who: &'static str,
    args: Vec<&'static str>,
    can_i: Vec<&'static str>,
    forbidden: Option<&'static str>,
}

fn case(who: &'static str, args: &[&'static str], can_i: &[&'static str], forbidden: Option<&'static str>) -> Case {
    Case { who, args: args.to_vec(), can_i: can_i.to_vec(), forbidden }
}

/// Runs `args` until its outcome matches `allowed` or 10 s pass (a new
/// binding reaches the authorizer through a watch within milliseconds).
fn settle(s: &TestServer, config: &Path, args: &[&str], allowed: bool) -> (bool, String, String) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = run(s, config, args);
        if r.0 == allowed || Instant::now() > deadline {
            return r;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The RBAC matrix: users, a group, a service account and the anonymous
/// user against verbs, resources, names and namespaces.
#[test]
fn rbac_matrix_allows_exactly_what_bindings_grant() {
    let s = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    for ns in ["team-a", "team-b"] {
        admin(&s, &["create", "namespace", ns]);
        admin(&s, &["create", "configmap", "cfg", "-n", ns, "--from-literal=a=b"]);
        admin(&s, &["create", "configmap", "other", "-n", ns, "--from-literal=a=b"]);
    }
    admin(&s, &["create", "serviceaccount", "robot", "-n", "team-a"]);
    apply(
        &s,
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-edit, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: viewers}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: viewers}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: pod-reader, namespace: team-b}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get, list]}
- {apiGroups: [""], resources: [configmaps], resourceNames: [cfg], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: carol-reads, namespace: team-b}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pod-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: robot-view, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{kind: ServiceAccount, name: robot}]
"#,
    );
    let token = admin(&s, &["create", "token", "robot", "-n", "team-a"]);
    let configs = [
        ("alice", kubeconfig(&s, dir.path(), "alice", Some(("alice", None)), None)),
        ("bob", kubeconfig(&s, dir.path(), "bob", Some(("bob", Some("viewers"))), None)),
        ("carol", kubeconfig(&s, dir.path(), "carol", Some(("carol", None)), None)),
        ("dave", kubeconfig(&s, dir.path(), "dave", Some(("dave", None)), None)),
        ("robot", kubeconfig(&s, dir.path(), "robot", None, Some(token.trim()))),
    ];
    let config = |who: &str| configs.iter().find(|(w, _)| *w == who).unwrap().1.clone();

    let cases = [
        // alice: edit in team-a only.
        case("alice", &["get", "pods", "-n", "team-a"], &["list", "pods", "-n", "team-a"], None),
        case("alice", &["get", "secrets", "-n", "team-a"], &["list", "secrets", "-n", "team-a"], None),
        case(
            "alice",
            &["create", "configmap", "new", "-n", "team-a", "--dry-run=server"],
            &["create", "configmaps", "-n", "team-a"],
            None,
        ),
        case(
            "alice",
            &["delete", "configmap", "other", "-n", "team-a", "--dry-run=server"],
            &["delete", "configmaps/other", "-n", "team-a"],
            None,
        ),
        case(
            "alice",
            &["get", "pods", "-n", "team-b"],
            &["list", "pods", "-n", "team-b"],
            Some(
                r#"pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "team-b""#,
            ),
        ),
        case(
            "alice",
            &["get", "rolebindings", "-n", "team-a"],
            &["list", "rolebindings.rbac.authorization.k8s.io", "-n", "team-a"],
            Some(
                r#"rolebindings.rbac.authorization.k8s.io is forbidden: User "alice" cannot list resource "rolebindings" in API group "rbac.authorization.k8s.io" in the namespace "team-a""#,
            ),
        ),
        case(
            "alice",
            &["get", "nodes"],
            &["list", "nodes"],
            Some(
                r#"nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope"#,
            ),
        ),
        // bob: view everywhere through the group viewers.
        case("bob", &["get", "pods", "-n", "team-b"], &["list", "pods", "-n", "team-b"], None),
        case("bob", &["get", "deployments.apps", "-n", "team-a"], &["list", "deployments.apps", "-n", "team-a"], None),
        case("bob", &["get", "namespaces"], &["list", "namespaces"], None),
        case(
            "bob",
            &["get", "secrets", "-n", "team-a"],
            &["list", "secrets", "-n", "team-a"],
            Some(
                r#"secrets is forbidden: User "bob" cannot list resource "secrets" in API group "" in the namespace "team-a""#,
            ),
        ),
        case(
            "bob",
            &["create", "configmap", "new", "-n", "team-b", "--dry-run=server"],
            &["create", "configmaps", "-n", "team-b"],
            Some(
                r#"configmaps is forbidden: User "bob" cannot create resource "configmaps" in API group "" in the namespace "team-b""#,
            ),
        ),
        // carol: a Role in team-b, one configmap by name.
        case("carol", &["get", "pods", "-n", "team-b"], &["list", "pods", "-n", "team-b"], None),
        case("carol", &["get", "configmap", "cfg", "-n", "team-b"], &["get", "configmaps/cfg", "-n", "team-b"], None),
        case(
            "carol",
            &["get", "configmap", "other", "-n", "team-b"],
            &["get", "configmaps/other", "-n", "team-b"],
            Some(
                r#"configmaps "other" is forbidden: User "carol" cannot get resource "configmaps" in API group "" in the namespace "team-b""#,
            ),
        ),
        case(
            "carol",
            &["get", "configmaps", "-n", "team-b"],
            &["list", "configmaps", "-n", "team-b"],
            Some(
                r#"configmaps is forbidden: User "carol" cannot list resource "configmaps" in API group "" in the namespace "team-b""#,
            ),
        ),
        case(
            "carol",
            &["delete", "configmap", "cfg", "-n", "team-b", "--dry-run=server"],
            &["delete", "configmaps/cfg", "-n", "team-b"],
            Some(
                r#"configmaps "cfg" is forbidden: User "carol" cannot delete resource "configmaps" in API group "" in the namespace "team-b""#,
            ),
        ),
        // dave: no bindings, only the defaults of system:authenticated.
        case(
            "dave",
            &["get", "pods", "-n", "default"],
            &["list", "pods", "-n", "default"],
            Some(
                r#"pods is forbidden: User "dave" cannot list resource "pods" in API group "" in the namespace "default""#,
            ),
        ),
        case("dave", &["get", "--raw", "/api"], &["get", "/api"], None),
        case(
            "dave",
            &["get", "--raw", "/metrics"],
            &["get", "/metrics"],
            Some(r#"forbidden: User "dave" cannot get path "/metrics""#),
        ),
        // The service account: view in team-a through a subject without namespace.
        case("robot", &["get", "configmaps", "-n", "team-a"], &["list", "configmaps", "-n", "team-a"], None),
        case(
            "robot",
            &["get", "configmaps", "-n", "team-b"],
            &["list", "configmaps", "-n", "team-b"],
            Some(
                r#"configmaps is forbidden: User "system:serviceaccount:team-a:robot" cannot list resource "configmaps" in API group "" in the namespace "team-b""#,
            ),
        ),
    ];
    for c in &cases {
        let cfg = config(c.who);
        let (ok, stdout, stderr) = settle(&s, &cfg, &c.args, c.forbidden.is_none());
        match c.forbidden {
            None => assert!(ok, "{} {:?} should be allowed: {stdout}{stderr}", c.who, c.args),
            Some(msg) => {
                assert!(!ok, "{} {:?} should be forbidden: {stdout}", c.who, c.args);
                // kubectl words a refused create its own way.
                let prefix = match c.args.as_slice() {
                    ["create", what, ..] => format!("error: failed to create {what}: "),
                    _ => "Error from server (Forbidden): ".to_string(),
                };
                assert!(
                    stderr.contains(&format!("{prefix}{msg}")),
                    "{} {:?}: want {prefix}{msg}\ngot {stderr}",
                    c.who,
                    c.args
                );
            }
        }
        let mut can_i = vec!["auth", "can-i"];
        can_i.extend(&c.can_i);
        let (yes, answer, err) = run(&s, &cfg, &can_i);
        let want = if c.forbidden.is_none() { "yes" } else { "no" };
        assert_eq!(answer.trim(), want, "{} can-i {:?}: {err}", c.who, c.can_i);
        assert_eq!(yes, c.forbidden.is_none(), "{} can-i {:?} exit code", c.who, c.can_i);
    }

    // Deleting the binding revokes the grant.
    admin(&s, &["delete", "rolebinding", "alice-edit", "-n", "team-a"]);
    let (ok, _, stderr) = settle(&s, &config("alice"), &["get", "pods", "-n", "team-a"], false);
    assert!(!ok);
    assert!(stderr.contains(r#"User "alice" cannot list resource "pods""#), "{stderr}");

    // The anonymous user (no credentials at all): the public information
    // only, through system:public-info-viewer.
    for path in ["/healthz", "/livez", "/readyz", "/version"] {
        let (code, body) = anonymous_get(&s, path);
        assert_eq!(code, 200, "{path}: {body}");
    }
    for (path, message) in [
        ("/api", r#"forbidden: User "system:anonymous" cannot get path "/api""#),
        ("/metrics", r#"forbidden: User "system:anonymous" cannot get path "/metrics""#),
        (
            "/api/v1/namespaces/default/pods",
            r#"pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group "" in the namespace "default""#,
        ),
    ] {
        let (code, body) = anonymous_get(&s, path);
        assert_eq!(code, 403, "{path}: {body}");
        let status: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(status["reason"], "Forbidden");
        assert_eq!(status["message"], message);
    }
}

/// `(status, body)` of a GET without any credentials.
fn anonymous_get(s: &TestServer, path: &str) -> (u16, String) {
    let out = std::process::Command::new("curl")
        .args(["-sS", "--cacert"])
        .arg(s.tls_dir().join("ca.crt"))
        .args(["-w", "\n%{http_code}", &format!("https://127.0.0.1:{}{path}", s.port())])
        .output()
        .expect("run curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap();
    (code.trim().parse().unwrap(), body.to_string())
}

/// The raw 403 Status: code, reason and details as upstream's.
#[test]
fn forbidden_status_carries_upstream_details() {
    let s = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let dave = kubeconfig(&s, dir.path(), "dave", Some(("dave", None)), None);
    let (ok, _, stderr) = run(&s, &dave, &["get", "--raw", "/apis/apps/v1/namespaces/default/deployments/web"]);
    assert!(!ok);
    assert!(
        stderr.contains(r#"deployments.apps "web" is forbidden: User "dave" cannot get resource "deployments" in API group "apps" in the namespace "default""#),
        "{stderr}"
    );
    // The SubjectAccessReview of the admin reports the chain's answer.
    let sar = r#"{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"dave","groups":["system:authenticated"],"resourceAttributes":{"verb":"create","resource":"selfsubjectaccessreviews","group":"authorization.k8s.io"}}}"#;
    let out = api_common::kubectl_stdin(&s, &["create", "-f", "-", "-o", "json"], sar);
    let review: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(review["status"]["allowed"], true, "{review}");
    assert_eq!(
        review["status"]["reason"],
        r#"RBAC: allowed by ClusterRoleBinding "system:basic-user" of ClusterRole "system:basic-user" to Group "system:authenticated""#
    );
}

/// Escalation prevention: a namespace admin may grant only what it holds,
/// unless it has `bind` (or `escalate`) on the role.
#[test]
fn role_and_binding_writes_cannot_escalate() {
    let s = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    admin(&s, &["create", "namespace", "team"]);
    admin(&s, &["create", "rolebinding", "erin-admin", "-n", "team", "--clusterrole=admin", "--user=erin"]);
    let erin = kubeconfig(&s, dir.path(), "erin", Some(("erin", None)), None);
    // Wait until the grant is visible.
    let (ok, _, err) = settle(&s, &erin, &["get", "roles", "-n", "team"], true);
    assert!(ok, "{err}");

    // A role with rules erin holds is fine; one with more is refused.
    let (ok, _, err) = run(&s, &erin, &["create", "role", "pods", "-n", "team", "--verb=get", "--resource=pods"]);
    assert!(ok, "{err}");
    let (ok, _, err) = run(&s, &erin, &["create", "role", "nodes", "-n", "team", "--verb=list", "--resource=nodes"]);
    assert!(!ok);
    assert!(
        err.contains(
            "roles.rbac.authorization.k8s.io \"nodes\" is forbidden: user \"erin\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"nodes\"], Verbs:[\"list\"]}"
        ),
        "{err}"
    );
    // Binding view (covered by admin) is fine; binding cluster-admin is not.
    let (ok, _, err) =
        run(&s, &erin, &["create", "rolebinding", "v", "-n", "team", "--clusterrole=view", "--user=frank"]);
    assert!(ok, "{err}");
    let (ok, _, err) =
        run(&s, &erin, &["create", "rolebinding", "root", "-n", "team", "--clusterrole=cluster-admin", "--user=frank"]);
    assert!(!ok);
    assert!(
        err.contains("rolebindings.rbac.authorization.k8s.io \"root\" is forbidden: user \"erin\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"*\"], Resources:[\"*\"], Verbs:[\"*\"]}\n{NonResourceURLs:[\"*\"], Verbs:[\"*\"]}"),
        "{err}"
    );
    let (ok, out, _) = run(&s, &s.kubeconfig(), &["get", "rolebinding", "root", "-n", "team"]);
    assert!(!ok, "nothing stored: {out}");
    // The bind verb on that role lifts the check.
    apply(
        &s,
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: bind-cluster-admin, namespace: team}
rules: [{apiGroups: [rbac.authorization.k8s.io], resources: [clusterroles], verbs: [bind], resourceNames: [cluster-admin]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: erin-binds, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: bind-cluster-admin}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: erin}]
"#,
    );
    let args = ["create", "rolebinding", "root", "-n", "team", "--clusterrole=cluster-admin", "--user=frank"];
    let (ok, _, err) = settle(&s, &erin, &args, true);
    assert!(ok, "{err}");
    // escalate on roles lifts the role check the same way.
    apply(
        &s,
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: role-escalator}
rules: [{apiGroups: [rbac.authorization.k8s.io], resources: [roles], verbs: [escalate]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: erin-escalates, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: role-escalator}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: erin}]
"#,
    );
    let args = ["create", "role", "nodes", "-n", "team", "--verb=list", "--resource=nodes"];
    let (ok, _, err) = settle(&s, &erin, &args, true);
    assert!(ok, "{err}");
}

/// The bootstrap policy: upstream's roles, labels, aggregation and bindings.
#[test]
fn bootstrap_roles_and_bindings_are_upstreams() {
    let s = TestServer::start();
    let role: Value = serde_json::from_str(&admin(&s, &["get", "clusterrole", "admin", "-o", "json"])).unwrap();
    assert_eq!(role["metadata"]["labels"]["kubernetes.io/bootstrapping"], "rbac-defaults");
    assert_eq!(role["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"], "true");
    assert_eq!(
        role["aggregationRule"]["clusterRoleSelectors"][0]["matchLabels"]
            ["rbac.authorization.k8s.io/aggregate-to-admin"],
        "true"
    );
    assert!(role["rules"].as_array().is_some_and(|r| !r.is_empty()), "{role}");
    let edit: Value = serde_json::from_str(&admin(&s, &["get", "clusterrole", "edit", "-o", "json"])).unwrap();
    assert_eq!(edit["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-admin"], "true");
    let public: Value =
        serde_json::from_str(&admin(&s, &["get", "clusterrole", "system:public-info-viewer", "-o", "json"])).unwrap();
    assert_eq!(
        public["rules"],
        serde_json::json!([{"nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"], "verbs": ["get"]}])
    );
    let binding: Value =
        serde_json::from_str(&admin(&s, &["get", "clusterrolebinding", "system:public-info-viewer", "-o", "json"]))
            .unwrap();
    let subjects: Vec<&str> =
        binding["subjects"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(subjects, ["system:authenticated", "system:unauthenticated"]);
    let crb: Value =
        serde_json::from_str(&admin(&s, &["get", "clusterrolebinding", "cluster-admin", "-o", "json"])).unwrap();
    assert_eq!(crb["subjects"][0]["name"], "system:masters");
    let names = admin(&s, &["get", "clusterroles", "-o", "name"]);
    for want in [
        "clusterrole.rbac.authorization.k8s.io/system:node",
        "clusterrole.rbac.authorization.k8s.io/system:kube-scheduler",
        "clusterrole.rbac.authorization.k8s.io/system:kube-controller-manager",
        "clusterrole.rbac.authorization.k8s.io/system:controller:deployment-controller",
        "clusterrole.rbac.authorization.k8s.io/system:controller:namespace-controller",
    ] {
        assert!(names.lines().any(|l| l == want), "{want} missing:\n{names}");
    }
    let leader =
        admin(&s, &["get", "rolebinding", "system::leader-locking-kube-scheduler", "-n", "kube-system", "-o", "json"]);
    assert!(leader.contains("\"name\": \"system:kube-scheduler\""), "{leader}");
    // A role annotated autoupdate=false is left alone at the next start.
    admin(
        &s,
        &[
            "annotate",
            "clusterrole",
            "system:heapster",
            "rbac.authorization.kubernetes.io/autoupdate=false",
            "--overwrite",
        ],
    );
    admin(
        &s,
        &[
            "patch",
            "clusterrole",
            "system:heapster",
            "--type=json",
            "-p",
            r#"[{"op":"replace","path":"/rules","value":[]}]"#,
        ],
    );
    admin(
        &s,
        &[
            "patch",
            "clusterrole",
            "system:kube-dns",
            "--type=json",
            "-p",
            r#"[{"op":"replace","path":"/rules","value":[]}]"#,
        ],
    );
    let data = s.data_dir().to_path_buf();
    let port = s.port();
    let mut s = s;
    s.stop();
    let s2 = TestServer::start_with(support::TestServerOptions {
        data_dir: Some(data),
        port: Some(port),
        ..Default::default()
    });
    let heapster = admin(&s2, &["get", "clusterrole", "system:heapster", "-o", "jsonpath={.rules}"]);
    assert_eq!(heapster.trim(), "[]");
    // Missing rules come back one verb and resource each (upstream's
    // reconciliation adds the broken-down missing rules).
    let dns = admin(
        &s2,
        &["get", "clusterrole", "system:kube-dns", "-o", "jsonpath={range .rules[*]}{.resources[0]}/{.verbs[0]} {end}"],
    );
    assert_eq!(dns.trim(), "endpoints/list endpoints/watch services/list services/watch");
}
