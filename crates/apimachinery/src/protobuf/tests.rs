//! Bodies are built with a tiny hand encoder below (independent of the
//! table), one is upstream's own bytes as captured from kubectl.

use serde_json::{json, Value};

use super::*;

fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    out
}

/// A length-delimited field.
fn ld(num: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = varint(u64::from(num) << 3 | 2);
    out.extend(varint(payload.len() as u64));
    out.extend_from_slice(payload);
    out
}

fn s(num: u32, text: &str) -> Vec<u8> {
    ld(num, text.as_bytes())
}

/// A varint field (negative numbers sign-extended to 64 bits, as Go does).
fn v(num: u32, value: i64) -> Vec<u8> {
    let mut out = varint(u64::from(num) << 3);
    out.extend(varint(value as u64));
    out
}

/// A nested message field.
fn m(num: u32, parts: &[Vec<u8>]) -> Vec<u8> {
    ld(num, &parts.concat())
}

/// A `map<string, string>` entry.
fn entry(num: u32, key: &str, value: &str) -> Vec<u8> {
    m(num, &[s(1, key), s(2, value)])
}

/// The ObjectMeta Go writes for a new object: every non-pointer field,
/// empty (as in the capture in kubectl-wire.md §5.2), then `extra`.
fn meta(extra: &[Vec<u8>]) -> Vec<u8> {
    let mut parts = vec![s(1, ""), s(2, ""), s(3, ""), s(4, ""), s(5, ""), s(6, ""), v(7, 0), m(8, &[])];
    parts.extend_from_slice(extra);
    m(1, &parts)
}

fn body(api_version: &str, kind: &str, raw: &[Vec<u8>]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend(m(1, &[s(1, api_version), s(2, kind)]));
    out.extend(ld(2, &raw.concat()));
    out.extend(s(3, ""));
    out.extend(s(4, ""));
    out
}

fn decode(bytes: &[u8]) -> Value {
    let env = envelope(bytes).expect("envelope");
    decode_object(&env.api_version, &env.kind, env.raw).expect("supported kind").expect("decodes")
}

fn hex(text: &str) -> Vec<u8> {
    let text: String = text.split_whitespace().collect();
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap()).collect()
}

#[test]
fn kubectl_auth_can_i_capture_decodes() {
    // kubectl auth can-i list deployments.apps -n kube-system --subresource=scale
    let mut bytes = hex("6b387300 0a32 0a17");
    bytes.extend(b"authorization.k8s.io/v1");
    bytes.extend(hex("1217"));
    bytes.extend(b"SelfSubjectAccessReview");
    bytes.extend(hex("1251 0a10 0a00 1200 1a00 2200 2a00 3200 3800 4200 1233 0a31 0a0b"));
    bytes.extend(b"kube-system");
    bytes.extend(hex("1204"));
    bytes.extend(b"list");
    bytes.extend(hex("1a04"));
    bytes.extend(b"apps");
    bytes.extend(hex("2200 2a0b"));
    bytes.extend(b"deployments");
    bytes.extend(hex("3205"));
    bytes.extend(b"scale");
    bytes.extend(hex("3a00 1a08 0800 1200 1a00 2000 1a00 2200"));
    let env = envelope(&bytes).unwrap();
    assert_eq!((env.api_version.as_str(), env.kind.as_str()), ("authorization.k8s.io/v1", "SelfSubjectAccessReview"));
    assert_eq!(
        decode(&bytes),
        json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "metadata": {"creationTimestamp": null},
            "spec": {"resourceAttributes": {
                "namespace": "kube-system", "verb": "list", "group": "apps",
                "resource": "deployments", "subresource": "scale"
            }},
            "status": {"allowed": false}
        })
    );
}

#[test]
fn configmap_maps_bytes_and_pointer_bools() {
    let bytes = body(
        "v1",
        "ConfigMap",
        &[
            meta(&[m(11, &[s(1, "app"), s(2, "web")])]),
            entry(2, "a", "b"),
            entry(2, "empty", ""),
            m(3, &[s(1, "bin"), ld(2, &[0, 1, 2, 255])]),
            v(4, 0),
        ],
    );
    // an unknown field number (a newer server's field) is skipped
    let unknown = s(99, "ignored");
    let expected = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"creationTimestamp": null, "labels": {"app": "web"}},
        "data": {"a": "b", "empty": ""},
        "binaryData": {"bin": "AAEC/w=="},
        "immutable": false
    });
    assert_eq!(decode(&bytes), expected);
    let with_unknown = body("v1", "ConfigMap", &[meta(&[m(11, &[s(1, "app"), s(2, "web")])]), unknown]);
    assert_eq!(decode(&with_unknown)["metadata"]["labels"], json!({"app": "web"}));
}

#[test]
fn secret_data_is_base64_and_times_are_rfc3339() {
    let bytes = body(
        "v1",
        "Secret",
        &[
            meta(&[s(1, "s"), m(8, &[v(1, 1_714_557_600)]), v(10, -1)]),
            m(2, &[s(1, "k"), ld(2, b"v")]),
            s(3, "Opaque"),
            entry(4, "plain", "text"),
        ],
    );
    let got = decode(&bytes);
    // the later creationTimestamp (field 8 again) wins, as in protobuf
    assert_eq!(got["metadata"]["creationTimestamp"], "2024-05-01T10:00:00Z");
    assert_eq!(got["metadata"]["name"], "s");
    assert_eq!(got["metadata"]["deletionGracePeriodSeconds"], -1);
    assert_eq!(got["data"], json!({"k": "dg=="}));
    assert_eq!(got["type"], "Opaque");
    assert_eq!(got["stringData"], json!({"plain": "text"}));
    assert!(got.get("immutable").is_none());
}

/// What `kubectl create deployment d --image=busybox -- sleep 1` sends.
#[test]
fn deployment_from_kubectl_create_matches_its_json_form() {
    let labels = || m(11, &[s(1, "app"), s(2, "d")]);
    let container = m(
        2,
        &[
            s(1, "busybox"),
            s(2, "busybox"),
            s(3, "sleep"),
            s(3, "1"),
            s(5, ""),
            m(8, &[]),
            s(13, ""),
            s(14, ""),
            v(16, 0),
            v(17, 0),
            v(18, 0),
            s(20, ""),
        ],
    );
    let pod_spec = m(2, &[container, s(3, ""), s(6, ""), s(8, ""), s(9, ""), s(10, ""), v(11, 0)]);
    let spec = m(
        2,
        &[
            v(1, 1),
            m(2, &[m(1, &[s(1, "app"), s(2, "d")])]),
            m(3, &[meta(&[labels()]), pod_spec]),
            m(4, &[s(1, "")]),
            v(5, 0),
            v(7, 0),
        ],
    );
    let bytes = body("apps/v1", "Deployment", &[meta(&[s(1, "d"), labels()]), spec, m(3, &[])]);
    let got = decode(&bytes);
    let expected = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "creationTimestamp": null, "labels": {"app": "d"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"creationTimestamp": null, "labels": {"app": "d"}},
                "spec": {"containers": [{
                    "name": "busybox", "image": "busybox", "command": ["sleep", "1"], "resources": {}
                }]}
            },
            "strategy": {}
        },
        "status": {}
    });
    assert_eq!(got, expected);
    // the JSON names are the struct's: nothing is pruned as unknown
    let typed = crate::typed::decode("apps/v1", "Deployment", &got).unwrap().unwrap();
    assert!(typed.unknown_fields.is_empty(), "{:?}", typed.unknown_fields);
}

#[test]
fn service_ports_int_or_string_and_packed_ints() {
    let port = |name: &str, target: Vec<Vec<u8>>| m(1, &[s(1, name), s(2, "TCP"), v(3, 80), m(4, &target), v(5, 0)]);
    let bytes = body(
        "v1",
        "Service",
        &[
            meta(&[s(1, "svc")]),
            m(
                2,
                &[
                    port("a", vec![v(1, 0), v(2, 8080), s(3, "")]),
                    port("b", vec![v(1, 1), v(2, 0), s(3, "http")]),
                    entry(2, "app", "svc"),
                    s(3, ""),
                    s(4, "ClusterIP"),
                ],
            ),
            m(3, &[m(1, &[])]),
        ],
    );
    let got = decode(&bytes);
    assert_eq!(
        got["spec"],
        json!({
            "ports": [
                {"name": "a", "protocol": "TCP", "port": 80, "targetPort": 8080},
                {"name": "b", "protocol": "TCP", "port": 80, "targetPort": "http"}
            ],
            "selector": {"app": "svc"},
            "type": "ClusterIP"
        })
    );
    assert_eq!(got["status"], json!({"loadBalancer": {}}));

    // a packed repeated varint (Job's podFailurePolicy onExitCodes values)
    let rule = m(1, &[s(1, "FailJob"), m(2, &[s(2, "In"), ld(3, &[1, 2, 0x7f])])]);
    let job = body("batch/v1", "Job", &[meta(&[]), m(2, &[m(11, &[rule])])]);
    assert_eq!(
        decode(&job)["spec"]["podFailurePolicy"]["rules"][0]["onExitCodes"],
        json!({"operator": "In", "values": [1, 2, 127]})
    );
}

#[test]
fn token_request_and_self_subject_review() {
    let bytes = body(
        "authentication.k8s.io/v1",
        "TokenRequest",
        &[meta(&[]), m(2, &[s(1, "api"), s(1, "vault"), v(4, 3600)]), m(3, &[s(1, ""), m(2, &[])])],
    );
    let got = decode(&bytes);
    assert_eq!(got["spec"], json!({"audiences": ["api", "vault"], "expirationSeconds": 3600}));
    assert_eq!(got["status"], json!({"token": "", "expirationTimestamp": null}));

    let extra = m(4, &[s(1, "scopes"), m(2, &[s(1, "a"), s(1, "b")])]);
    let review = body(
        "authentication.k8s.io/v1",
        "SelfSubjectReview",
        &[meta(&[]), m(2, &[m(1, &[s(1, "alice"), s(3, "dev"), extra])])],
    );
    assert_eq!(
        decode(&review)["status"],
        json!({"userInfo": {"username": "alice", "groups": ["dev"], "extra": {"scopes": ["a", "b"]}}})
    );
}

/// What client-go's delegated authentication and authorization send.
#[test]
fn token_review_and_subject_access_reviews() {
    let bytes = body(
        "authentication.k8s.io/v1",
        "TokenReview",
        &[meta(&[]), m(2, &[s(1, "tok"), s(2, "api")]), m(3, &[m(2, &[])])],
    );
    let got = decode(&bytes);
    assert_eq!(got["spec"], json!({"token": "tok", "audiences": ["api"]}));
    assert_eq!(got["status"], json!({"user": {}}));

    let extra = m(5, &[s(1, "scopes"), m(2, &[s(1, "a")])]);
    let spec = m(2, &[m(1, &[s(1, "ns"), s(2, "get"), s(5, "pods")]), s(3, "bob"), s(4, "dev"), extra, s(6, "u1")]);
    for kind in ["SubjectAccessReview", "LocalSubjectAccessReview"] {
        let got = decode(&body("authorization.k8s.io/v1", kind, &[meta(&[]), spec.clone()]));
        assert_eq!(
            got["spec"],
            json!({"resourceAttributes": {"namespace": "ns", "verb": "get", "resource": "pods"},
                "user": "bob", "groups": ["dev"], "extra": {"scopes": ["a"]}, "uid": "u1"}),
            "{kind}"
        );
    }
    let nra = body(
        "authorization.k8s.io/v1",
        "SubjectAccessReview",
        &[meta(&[]), m(2, &[m(2, &[s(1, "/healthz"), s(2, "get")])])],
    );
    assert_eq!(decode(&nra)["spec"], json!({"nonResourceAttributes": {"path": "/healthz", "verb": "get"}}));
}

/// What `kubectl auth can-i --list -n default` sends.
#[test]
fn self_subject_rules_review() {
    let bytes = body(
        "authorization.k8s.io/v1",
        "SelfSubjectRulesReview",
        &[meta(&[]), m(2, &[s(1, "default")]), m(3, &[v(3, 0), s(4, "")])],
    );
    let got = decode(&bytes);
    assert_eq!(got["spec"], json!({"namespace": "default"}));
    assert_eq!(got["status"], json!({"incomplete": false}));
}

#[test]
fn role_and_pod_disruption_budget() {
    let rule = m(2, &[s(1, "get"), s(2, ""), s(3, "pods")]);
    let role = body("rbac.authorization.k8s.io/v1", "Role", &[meta(&[s(1, "r")]), rule]);
    assert_eq!(decode(&role)["rules"], json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]));

    let spec = m(2, &[m(1, &[v(1, 0), v(2, 1), s(3, "")]), m(2, &[m(1, &[s(1, "app"), s(2, "x")])])]);
    let pdb = body("policy/v1", "PodDisruptionBudget", &[meta(&[s(1, "p")]), spec]);
    assert_eq!(decode(&pdb)["spec"], json!({"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}}));
}

#[test]
fn malformed_bodies_are_errors() {
    assert_eq!(
        envelope(b"{}").unwrap_err().0,
        "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
    );
    let mut truncated = body("v1", "ConfigMap", &[meta(&[s(1, "x")])]);
    truncated.truncate(truncated.len() - 8);
    assert!(envelope(&truncated).is_err());
    // a string where a varint belongs
    let wrong = body("v1", "ConfigMap", &[ld(4, b"yes")]);
    let e = decode_object("v1", "ConfigMap", envelope(&wrong).unwrap().raw).unwrap().unwrap_err();
    assert_eq!(e.0, "core.ConfigMap.immutable: wrong wire type 2");
    assert!(!supports("example.com/v1", "Widget"));
    assert!(decode_object("example.com/v1", "Widget", &[]).is_none());
}
