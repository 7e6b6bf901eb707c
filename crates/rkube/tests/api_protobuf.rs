//! Protobuf request bodies: the `kubectl create <kind>` commands whose
//! typed clientset sends `application/vnd.kubernetes.protobuf` (see
//! kubectl-wire.md §5), run with the real kubectl, then read back as JSON;
//! and the raw error paths (malformed body, unsupported kind).

mod api_common;
mod support;

use api_common::{manifest, ok, request};
use serde_json::{json, Value};
use support::TestServer;

fn get(s: &TestServer, args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    let text = ok(s, &all);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The object without what differs between two creations of the same
/// manifest (namespace, uid, resourceVersion, times, allocated IPs).
fn comparable(mut object: Value) -> Value {
    // A Job's generated selector and template labels carry its uid.
    if let Some(uid) = object.pointer("/metadata/uid").and_then(Value::as_str).map(str::to_string) {
        object = serde_json::from_str(&object.to_string().replace(&uid, "<uid>")).expect("JSON");
    }
    let meta = object["metadata"].as_object_mut().expect("metadata");
    for key in ["namespace", "uid", "resourceVersion", "creationTimestamp"] {
        meta.remove(key);
    }
    for entry in meta.get_mut("managedFields").and_then(Value::as_array_mut).into_iter().flatten() {
        entry.as_object_mut().expect("managedFields entry").remove("time");
    }
    if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("clusterIP");
        spec.remove("clusterIPs");
    }
    object
}

/// Runs `kubectl create <args>` in namespace `pb` (kubectl sends
/// protobuf) and the same command's `--dry-run=client -o json` output
/// through `kubectl create -f` in namespace `js` (JSON); both stored
/// objects must be the same. Returns the protobuf-created one.
fn create_both_ways(s: &TestServer, resource: &str, name: &str, args: &[&str]) -> Value {
    let mut protobuf = vec!["create", "-n", "pb"];
    protobuf.extend_from_slice(args);
    ok(s, &protobuf);
    let mut dry = vec!["create", "-n", "js", "--dry-run=client", "-o", "json"];
    dry.extend_from_slice(args);
    let path = manifest(s, &format!("{resource}-{name}.json"), &ok(s, &dry));
    ok(s, &["create", "-n", "js", "-f", &path]);
    let from_protobuf = get(s, &[resource, name, "-n", "pb"]);
    let from_json = get(s, &[resource, name, "-n", "js"]);
    assert_eq!(comparable(from_protobuf.clone()), comparable(from_json), "{resource}/{name}");
    from_protobuf
}

#[test]
fn kubectl_create_commands_send_protobuf_that_decodes() {
    let s = TestServer::start();
    ok(&s, &["create", "namespace", "pb"]);
    ok(&s, &["create", "namespace", "js"]);
    let ns = get(&s, &["namespace", "pb"]);
    assert_eq!(ns["status"]["phase"], "Active");

    let cm = create_both_ways(&s, "configmap", "x", &["configmap", "x", "--from-literal=a=b", "--from-literal=c="]);
    assert_eq!(cm["data"], json!({"a": "b", "c": ""}));
    assert!(cm.get("binaryData").is_none() && cm.get("immutable").is_none(), "{cm}");

    let secret = create_both_ways(&s, "secret", "s", &["secret", "generic", "s", "--from-literal=k=v"]);
    assert_eq!(secret["data"], json!({"k": "dg=="}));
    assert_eq!(secret["type"], "Opaque");
    let registry = create_both_ways(
        &s,
        "secret",
        "reg",
        &["secret", "docker-registry", "reg", "--docker-username=u", "--docker-password=p"],
    );
    assert_eq!(registry["type"], "kubernetes.io/dockerconfigjson");

    let sa = create_both_ways(&s, "serviceaccount", "sa", &["serviceaccount", "sa"]);
    assert_eq!(sa["metadata"]["name"], "sa");

    let d = create_both_ways(
        &s,
        "deployment",
        "d",
        &["deployment", "d", "--image=busybox", "--port=80", "--replicas=0", "--", "sleep", "1"],
    );
    assert_eq!(d["spec"]["replicas"], 0, "a pointer field keeps its zero value");
    assert_eq!(d["spec"]["selector"], json!({"matchLabels": {"app": "d"}}));
    assert_eq!(d["spec"]["template"]["metadata"]["labels"], json!({"app": "d"}));
    let c = &d["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        (&c["name"], &c["image"], &c["command"]),
        (&json!("busybox"), &json!("busybox"), &json!(["sleep", "1"]))
    );
    assert_eq!(c["ports"][0]["containerPort"], 80);

    let j = create_both_ways(&s, "job", "j", &["job", "j", "--image=busybox", "--", "true"]);
    assert_eq!(j["spec"]["template"]["spec"]["restartPolicy"], "Never");
    assert_eq!(j["spec"]["template"]["spec"]["containers"][0]["command"], json!(["true"]));
    let cj = create_both_ways(&s, "cronjob", "cj", &["cronjob", "cj", "--image=busybox", "--schedule=*/5 * * * *"]);
    assert_eq!(cj["spec"]["schedule"], "*/5 * * * *");

    let r = create_both_ways(&s, "role", "r", &["role", "r", "--verb=get", "--verb=list", "--resource=pods"]);
    assert_eq!(r["rules"], json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]));
    let rb = create_both_ways(&s, "rolebinding", "rb", &["rolebinding", "rb", "--role=r", "--user=alice"]);
    assert_eq!(rb["roleRef"], json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}));

    let p = create_both_ways(&s, "pdb", "p", &["pdb", "p", "--selector=app=x", "--min-available=1"]);
    assert_eq!(p["spec"]["minAvailable"], 1);
    assert_eq!(p["spec"]["selector"], json!({"matchLabels": {"app": "x"}}));
    let q = create_both_ways(&s, "pdb", "q", &["pdb", "q", "--selector=app=y", "--max-unavailable=50%"]);
    assert_eq!(q["spec"]["maxUnavailable"], "50%");

    let quota = create_both_ways(&s, "quota", "q", &["quota", "q", "--hard=cpu=1,pods=2"]);
    assert_eq!(quota["spec"]["hard"], json!({"cpu": "1", "pods": "2"}));

    let ing = create_both_ways(&s, "ingress", "ing", &["ingress", "ing", "--rule=foo.com/bar=svc:80"]);
    assert_eq!(ing["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["port"], json!({"number": 80}));

    let svc = create_both_ways(&s, "service", "svc", &["service", "clusterip", "svc", "--tcp=80:8080"]);
    assert_eq!(svc["spec"]["ports"], json!([{"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080}]));
    assert_eq!(svc["spec"]["selector"], json!({"app": "svc"}));

    let hpa_cmd = ["autoscale", "deployment", "d", "-n", "pb", "--min=2", "--max=3", "--cpu-percent=50"];
    ok(&s, &hpa_cmd);
    let hpa = get(&s, &["hpa", "d", "-n", "pb"]);
    assert_eq!(hpa["spec"]["scaleTargetRef"], json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}));
    assert_eq!((&hpa["spec"]["minReplicas"], &hpa["spec"]["maxReplicas"]), (&json!(2), &json!(3)));

    // cluster-scoped, so only the protobuf way
    ok(&s, &["create", "clusterrole", "cr", "--verb=get", "--non-resource-url=/healthz"]);
    assert_eq!(get(&s, &["clusterrole", "cr"])["rules"], json!([{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]));
    ok(&s, &["create", "priorityclass", "high", "--value=1000", "--description=important"]);
    let pc = get(&s, &["priorityclass", "high"]);
    assert_eq!((&pc["value"], &pc["description"]), (&json!(1000), &json!("important")));
}

#[test]
fn malformed_and_unsupported_protobuf_bodies() {
    let s = TestServer::start();
    let proto = [("Content-Type", "application/vnd.kubernetes.protobuf"), ("Accept", "application/json")];

    let reply = request(&s, "POST", "/api/v1/namespaces/default/configmaps", &proto, b"{\"kind\":\"ConfigMap\"}");
    assert_eq!(reply.status, 400, "{}", reply.body);
    let status = reply.json();
    assert_eq!(status["reason"], "BadRequest");
    assert!(status["message"].as_str().unwrap().contains("does not appear to be a protobuf message"), "{status}");

    // k8s\0 + Unknown{typeMeta{v1, Node}, raw{}} posted to configmaps
    let mut body = b"k8s\0".to_vec();
    body.extend([0x0a, 0x0a, 0x0a, 0x02, b'v', b'1', 0x12, 0x04]);
    body.extend(b"Node");
    body.extend([0x12, 0x00]);
    let reply = request(&s, "POST", "/api/v1/namespaces/default/configmaps", &proto, &body);
    assert_eq!(reply.status, 400, "{}", reply.body);
    assert!(reply.json()["message"]
        .as_str()
        .unwrap()
        .starts_with("Node in version \"v1\" cannot be handled as a ConfigMap"));

    // a kind without a protobuf table keeps upstream's 415
    let reply = request(&s, "POST", "/apis/apps/v1/namespaces/default/controllerrevisions", &proto, &body);
    assert_eq!(reply.status, 415, "{}", reply.body);
    assert_eq!(reply.json()["reason"], "UnsupportedMediaType");
}
