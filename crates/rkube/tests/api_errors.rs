//! Bad input gets upstream's Status, stores nothing, and the server stays
//! up: malformed JSON and YAML, a kind or name that does not match the
//! URL, unknown and duplicate fields under Strict (warnings under Warn),
//! stale resourceVersions, unknown resources and verbs, invalid selectors
//! and options, oversized and deeply nested bodies, protobuf bodies.

mod api_common;
mod support;

use api_common::{create, fails, manifest, ok, request};
use support::TestServer;

const CM_URL: &str = "/api/v1/namespaces/default/configmaps";

fn post(s: &TestServer, path: &str, content_type: &str, body: &[u8]) -> api_common::Reply {
    request(s, "POST", path, &[("Content-Type", content_type)], body)
}

fn assert_status(reply: &api_common::Reply, code: u16, reason: &str, message: &str) {
    assert_eq!(reply.status, code, "{}", reply.body);
    let status = reply.json();
    assert_eq!(status["kind"], "Status", "{status}");
    assert_eq!(status["status"], "Failure");
    assert_eq!(status["code"], code);
    assert_eq!(status["reason"], reason, "{status}");
    assert_eq!(status["message"], message, "{status}");
    assert!(status["details"].is_object(), "details must always be present: {status}");
}

fn configmap_names(s: &TestServer) -> String {
    ok(s, &["get", "cm", "-o", "name"])
}

#[test]
fn malformed_json_and_yaml_are_bad_requests_and_store_nothing() {
    let s = TestServer::start();
    let reply = post(&s, CM_URL, "application/json", br#"{"kind": "ConfigMap", "#);
    assert_eq!(reply.status, 400, "{}", reply.body);
    let message = reply.json()["message"].as_str().unwrap().to_string();
    // Go's JSON scanner wording, as upstream's decoder reports it.
    assert!(message.starts_with("the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input ("), "{message}");

    let reply = post(&s, CM_URL, "application/yaml", b"metadata:\n  name: [unclosed\n");
    assert_eq!(reply.status, 400, "{}", reply.body);
    assert!(reply.json()["message"].as_str().unwrap().contains("error converting YAML to JSON"), "{}", reply.body);

    // A well-formed YAML body works.
    let reply =
        post(&s, CM_URL, "application/yaml", b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\n");
    assert_eq!(reply.status, 201, "{}", reply.body);
    assert_eq!(configmap_names(&s).trim(), "configmap/from-yaml");
}

/// A body of another kind, or a name other than the URL's, is refused.
#[test]
fn kind_and_name_must_match_the_url() {
    let s = TestServer::start();
    let path = manifest(&s, "cm.json", r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}"#);
    let err = fails(&s, &["create", "--raw", "/api/v1/namespaces/default/pods", "-f", &path]);
    assert!(err.contains(r#"Error from server (BadRequest): ConfigMap in version "v1" cannot be handled as a Pod: converting (v1.ConfigMap) to (core.Pod): unknown conversion"#), "{err}");
    assert!(ok(&s, &["get", "pods", "-o", "name"]).trim().is_empty());

    create(&s, "b.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n");
    let err = fails(&s, &["replace", "--raw", "/api/v1/namespaces/default/configmaps/b", "-f", &path]);
    assert!(err.contains("the name of the object (a) does not match the name on the URL (b)"), "{err}");

    let other_ns = manifest(
        &s,
        "ns.json",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"kube-system"}}"#,
    );
    let err = fails(&s, &["create", "--raw", CM_URL, "-f", &other_ns]);
    assert!(
        err.contains("the namespace of the provided object does not match the namespace sent on the request"),
        "{err}"
    );
    assert_eq!(configmap_names(&s).trim(), "configmap/b");
}

/// Conformance "Server side field validation, typed object": unknown and
/// duplicate fields are a 400 under Strict, warnings under Warn, silently
/// dropped under Ignore.
#[test]
fn server_side_field_validation_typed_object() {
    let s = TestServer::start();
    let body = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"},"data":{"k":"w"},"spec":{"foo":1}}"#;
    let reply = post(&s, &format!("{CM_URL}?fieldValidation=Strict"), "application/json", body);
    assert_status(
        &reply,
        400,
        "BadRequest",
        r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field "data", unknown field "spec""#,
    );
    assert!(configmap_names(&s).trim().is_empty());

    let reply = post(&s, &format!("{CM_URL}?fieldValidation=Warn"), "application/json", body);
    assert_eq!(reply.status, 201, "{}", reply.body);
    assert_eq!(
        reply.header("warning"),
        vec![r#"299 - "duplicate field \"data\"""#, r#"299 - "unknown field \"spec\"""#]
    );
    assert!(reply.json().get("spec").is_none());

    let pod = br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labelz":{}},"spec":{"containers":[{"name":"c","image":"x","imagePolicy":"Never"}]}}"#;
    let reply = post(&s, "/api/v1/namespaces/default/pods?fieldValidation=Strict", "application/json", pod);
    assert_eq!(reply.status, 400, "{}", reply.body);
    let message = reply.json()["message"].as_str().unwrap().to_string();
    assert!(
        message.contains(r#"unknown field "metadata.labelz""#)
            && message.contains(r#"unknown field "spec.containers[0].imagePolicy""#),
        "{message}"
    );
    let reply = post(&s, "/api/v1/namespaces/default/pods?fieldValidation=Ignore", "application/json", pod);
    assert_eq!(reply.status, 201, "{}", reply.body);
    assert!(reply.header("warning").is_empty());
}

#[test]
fn stale_resource_version_is_a_conflict() {
    let s = TestServer::start();
    create(&s, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n");
    let stale = ok(&s, &["get", "cm", "a", "-o", "json"]);
    ok(&s, &["label", "cm", "a", "x=1"]);
    let path = manifest(&s, "stale.json", &stale);
    let reply = request(&s, "PUT", &format!("{CM_URL}/a"), &[("Content-Type", "application/json")], stale.as_bytes());
    assert_status(
        &reply,
        409,
        "Conflict",
        r#"Operation cannot be fulfilled on configmaps "a": the object has been modified; please apply your changes to the latest version and try again"#,
    );
    assert!(fails(&s, &["replace", "--validate=false", "-f", &path]).contains("Error from server (Conflict)"));
    assert_eq!(ok(&s, &["get", "cm", "a", "-o", "jsonpath={.metadata.labels.x}"]), "1");

    let dup =
        post(&s, CM_URL, "application/json", br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}"#);
    assert_status(&dup, 409, "AlreadyExists", r#"configmaps "a" already exists"#);
}

#[test]
fn unknown_paths_and_verbs() {
    let s = TestServer::start();
    assert_status(
        &request(&s, "GET", "/api/v1/foos", &[], b""),
        404,
        "NotFound",
        "the server could not find the requested resource",
    );
    assert_status(
        &request(&s, "GET", "/apis/apps/v1/namespaces/default/configmaps", &[], b""),
        404,
        "NotFound",
        "the server could not find the requested resource",
    );
    assert_status(
        &request(&s, "GET", "/api/v1/namespaces/default/nodes", &[], b""),
        404,
        "NotFound",
        "the server could not find the requested resource",
    );
    assert_status(
        &request(&s, "GET", "/api/v1/namespaces/default/configmaps/missing", &[], b""),
        404,
        "NotFound",
        r#"configmaps "missing" not found"#,
    );
    assert_status(
        &request(&s, "POST", "/api/v1/configmaps", &[("Content-Type", "application/json")], b"{}"),
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
    );
    // An object's own URL takes no POST; nothing is created.
    let cm = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"posted"}}"#;
    assert_status(
        &request(
            &s,
            "POST",
            "/api/v1/namespaces/default/configmaps/posted",
            &[("Content-Type", "application/json")],
            cm,
        ),
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
    );
    assert!(!configmap_names(&s).contains("posted"));
    let err = fails(&s, &["get", "--raw", "/api/v1/namespaces/default/bogus"]);
    assert!(err.contains("Error from server (NotFound)"), "{err}");
}

#[test]
fn invalid_selectors_and_list_options_are_refused() {
    let s = TestServer::start();
    let err = fails(&s, &["get", "cm", "-l", "a in ("]);
    assert!(err.contains("Error from server (BadRequest)") && err.contains("unable to parse requirement"), "{err}");
    let err = fails(&s, &["get", "cm", "--field-selector", "spec.nodeName=x"]);
    assert!(err.contains("Error from server (BadRequest)") && err.contains("spec.nodeName"), "{err}");
    let reply = request(&s, "GET", &format!("{CM_URL}?resourceVersionMatch=Exact"), &[], b"");
    assert_status(
        &reply,
        422,
        "Invalid",
        r#"ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"#,
    );
    let reply = request(&s, "GET", &format!("{CM_URL}?limit=1&continue=not-a-token"), &[], b"");
    assert_eq!(reply.status, 400, "{}", reply.body);
    assert!(reply.json()["message"].as_str().unwrap().starts_with("invalid continue token"), "{}", reply.body);
}

#[test]
fn oversized_deeply_nested_and_protobuf_bodies() {
    let s = TestServer::start();
    let big = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"big"}},"data":{{"k":"{}"}}}}"#,
        "x".repeat(3 * 1024 * 1024 + 10)
    );
    let reply = post(&s, CM_URL, "application/json", big.as_bytes());
    assert_status(&reply, 413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728");

    // Under the request limit, a ConfigMap over 1 MiB of data fails
    // validation first (upstream's ValidateConfigMap)...
    let large = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"large"}},"data":{{"k":"{}"}}}}"#,
        "x".repeat(2 * 1024 * 1024)
    );
    let reply = post(&s, CM_URL, "application/json", large.as_bytes());
    assert_status(
        &reply,
        422,
        "Invalid",
        r#"ConfigMap "large" is invalid: []: Too long: may not be more than 1048576 bytes"#,
    );
    // ...while a kind without such a limit (an old-style Event's message)
    // meets the store's value limit.
    let event = format!(
        r#"{{"apiVersion":"v1","kind":"Event","metadata":{{"name":"large"}},"involvedObject":{{"kind":"Pod","name":"p","namespace":"default"}},"message":"{}"}}"#,
        "x".repeat(2 * 1024 * 1024)
    );
    let reply = post(&s, "/api/v1/namespaces/default/events", "application/json", event.as_bytes());
    assert_eq!(reply.status, 413, "{}", reply.body);

    let nested = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"deep"}},"x":{}1{}}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let reply = post(&s, CM_URL, "application/json", nested.as_bytes());
    // The object plus 10,000 arrays is 10,001 levels, one past Go's
    // encoding/json maxNestingDepth (10,000): its scanner refuses the
    // 10,000th '[' with "exceeded max depth", and upstream's decoder
    // reports that with the first 30 bytes of the body.
    assert_status(
        &reply,
        400,
        "BadRequest",
        &format!(
            "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: invalid character '[' exceeded max depth ({} ...)",
            &nested[..30]
        ),
    );

    // A protobuf envelope with an empty TypeMeta and no body decodes, as
    // upstream, to an empty object of the URL's kind, which has no name.
    let reply = post(&s, CM_URL, "application/vnd.kubernetes.protobuf", b"k8s\x00\x0a\x00");
    assert_eq!(reply.status, 422, "{}", reply.body);
    assert_eq!(reply.json()["reason"], "Invalid", "{}", reply.body);
    assert_eq!(reply.json()["details"]["causes"][0]["field"], "metadata.name", "{}", reply.body);
    // A media type the server does not decode at all (CBOR is off by default in 1.33).
    let reply = post(&s, CM_URL, "application/cbor", b"\xa0");
    assert_eq!(reply.status, 415, "{}", reply.body);
    assert_eq!(reply.json()["reason"], "UnsupportedMediaType", "{}", reply.body);
    assert!(
        reply.json()["message"]
            .as_str()
            .unwrap()
            .starts_with("the body of the request was in an unknown format - accepted media types include: "),
        "{}",
        reply.body
    );
    let reply = request(&s, "GET", CM_URL, &[("Accept", "text/html")], b"");
    assert_status(
        &reply,
        406,
        "NotAcceptable",
        "only the following media types are accepted: application/json, application/yaml",
    );

    assert!(configmap_names(&s).trim().is_empty());
    assert_eq!(s.get("/readyz"), (200, "ok".to_string()), "the server stays up");
}
