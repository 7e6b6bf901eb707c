//! Admission webhooks end to end: the test serves a webhook itself on
//! loopback HTTPS (a throwaway CA and serving certificate made with
//! rcgen), registers it by URL with that CA as `caBundle`, and drives the
//! real rkube with the real kubectl. The webhook mutates (a JSONPatch
//! adding a label) and rejects (a name in a guarded namespace) as
//! configured; failurePolicy decides what an unreachable or slow webhook
//! does; dry runs reach webhooks with `dryRun: true`.
//!
//! Expected texts are upstream's (k8s.io/apiserver
//! `pkg/admission/plugin/webhook/errors.ToStatusErr`,
//! `pkg/util/webhook.ErrCallingWebhook`, kubectl's `Error from server
//! (<Reason>): error when creating "STDIN": …`).

mod api_common;
mod support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use api_common::{apply, apply_fails, assert_lines, kubectl_stdin, ok};
use base64::Engine;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{json, Value};
use support::TestServer;

/// A webhook served by the test: answers every AdmissionReview with
/// `handler(path, review)` and keeps the reviews it received.
struct Webhook {
    port: u16,
    ca_pem: String,
    received: Arc<Mutex<Vec<(String, Value)>>>,
}

type Handler = dyn Fn(&str, &Value) -> Value + Send + Sync;

impl Webhook {
    fn serve(handler: Arc<Handler>) -> Webhook {
        let (ca_pem, tls) = serving_tls();
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind webhook");
        let port = listener.local_addr().unwrap().port();
        let received: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
        let seen = received.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut sock) = conn else { continue };
                let (tls, handler, seen) = (tls.clone(), handler.clone(), seen.clone());
                std::thread::spawn(move || {
                    let mut conn = rustls::ServerConnection::new(tls).unwrap();
                    let mut stream = rustls::Stream::new(&mut conn, &mut sock);
                    let Some((path, body)) = read_request(&mut stream) else { return };
                    let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    seen.lock().unwrap().push((path.clone(), review.clone()));
                    let answer = handler(&path, &review).to_string();
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        answer.len()
                    );
                    let _ = stream.write_all(head.as_bytes());
                    let _ = stream.write_all(answer.as_bytes());
                    let _ = stream.flush();
                    stream.conn.send_close_notify();
                    let _ = stream.flush();
                });
            }
        });
        Webhook { port, ca_pem, received }
    }

    fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    fn ca_bundle(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.ca_pem)
    }

    /// The reviews received on `path` so far.
    fn reviews(&self, path: &str) -> Vec<Value> {
        self.received.lock().unwrap().iter().filter(|(p, _)| p.starts_with(path)).map(|(_, r)| r.clone()).collect()
    }
}

/// A CA and a serving certificate for 127.0.0.1 it signed.
fn serving_tls() -> (String, Arc<rustls::ServerConfig>) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, SanType};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, "webhook-test-ca");
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::from_ca_cert_pem(&ca_cert.pem(), &ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.subject_alt_names = vec![SanType::IpAddress("127.0.0.1".parse().unwrap())];
    let cert = params.signed_by(&key, &issuer).unwrap();
    let chain = vec![CertificateDer::from_pem_slice(cert.pem().as_bytes()).unwrap()];
    let key = PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    (ca_cert.pem(), Arc::new(config))
}

/// Reads one HTTP/1.1 request: its path and body.
fn read_request(stream: &mut impl Read) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).ok()? == 0 {
            return None;
        }
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let path = head.split_whitespace().nth(1)?.to_string();
    let len = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>()))?
        .ok()?;
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body).ok()?;
    Some((path, body))
}

/// An AdmissionReview answer for `review`.
fn answer(review: &Value, response: Value) -> Value {
    let mut r = response;
    r["uid"] = review["request"]["uid"].clone();
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": r})
}

/// The webhook logic of these tests: `/mutate` labels the object
/// `webhook: mutated` and warns; `/break` adds an invalid label key;
/// `/stamp` labels `stamp: after-labeler`
/// what `/mutate` already labelled; `/validate` denies the name
/// `forbidden-cm`; `/slow` answers after 3 s.
fn handler() -> Arc<Handler> {
    Arc::new(|path: &str, review: &Value| {
        let object = &review["request"]["object"];
        let name = object["metadata"]["name"].as_str().unwrap_or("");
        if path.starts_with("/break") {
            // A mutation the kind's validation refuses.
            let op = if object["metadata"]["labels"].is_object() {
                json!([{"op": "add", "path": "/metadata/labels/bad key!", "value": "x"}])
            } else {
                json!([{"op": "add", "path": "/metadata/labels", "value": {"bad key!": "x"}}])
            };
            let patch = base64::engine::general_purpose::STANDARD.encode(op.to_string());
            answer(review, json!({"allowed": true, "patchType": "JSONPatch", "patch": patch}))
        } else if path.starts_with("/stamp") {
            // Stamps objects another webhook already labelled.
            if object["metadata"]["labels"]["webhook"].is_string() {
                let op = json!([{"op": "add", "path": "/metadata/labels/stamp", "value": "after-labeler"}]);
                let patch = base64::engine::general_purpose::STANDARD.encode(op.to_string());
                answer(review, json!({"allowed": true, "patchType": "JSONPatch", "patch": patch}))
            } else {
                answer(review, json!({"allowed": true}))
            }
        } else if path.starts_with("/mutate") {
            let op = if object["metadata"]["labels"].is_object() {
                json!({"op": "add", "path": "/metadata/labels/webhook", "value": "mutated"})
            } else {
                json!({"op": "add", "path": "/metadata/labels", "value": {"webhook": "mutated"}})
            };
            let patch = base64::engine::general_purpose::STANDARD.encode(json!([op]).to_string());
            answer(
                review,
                json!({"allowed": true, "patchType": "JSONPatch", "patch": patch,
                       "warnings": [format!("mutating webhook saw {name}")],
                       "auditAnnotations": {"seen": name}}),
            )
        } else if path.starts_with("/validate") {
            if name == "forbidden-cm" {
                answer(
                    review,
                    json!({"allowed": false, "status": {"code": 403, "reason": "Forbidden",
                           "message": "name forbidden-cm is not allowed"}}),
                )
            } else {
                answer(review, json!({"allowed": true}))
            }
        } else {
            std::thread::sleep(Duration::from_secs(3));
            answer(review, json!({"allowed": true}))
        }
    })
}

fn mutating_config(w: &Webhook, side_effects: &str) -> String {
    format!(
        "apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: labeler
webhooks:
- name: labeler.rkube.test
  clientConfig:
    url: {url}
    caBundle: {ca}
  rules:
  - operations: [CREATE]
    apiGroups: ['']
    apiVersions: [v1]
    resources: [configmaps]
  objectSelector:
    matchExpressions:
    - key: skip-mutation
      operator: DoesNotExist
  matchConditions:
  - name: not-skip-me
    expression: object.metadata.name != 'skip-me'
  sideEffects: {side_effects}
  admissionReviewVersions: [v1]
",
        url = w.url("/mutate"),
        ca = w.ca_bundle()
    )
}

fn validating_config(name: &str, url: &str, ca: &str, failure_policy: &str, timeout: u32) -> String {
    format!(
        "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: {name}
webhooks:
- name: {name}.rkube.test
  clientConfig:
    url: {url}
    caBundle: {ca}
  rules:
  - operations: [CREATE]
    apiGroups: ['']
    apiVersions: [v1]
    resources: [configmaps]
  namespaceSelector:
    matchLabels:
      webhook: enabled
  failurePolicy: {failure_policy}
  timeoutSeconds: {timeout}
  sideEffects: None
  admissionReviewVersions: [v1]
"
    )
}

fn configmap(namespace: &str, name: &str, labels: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\n  labels: {{{labels}}}\ndata:\n  a: b\n"
    )
}

/// Retries `f` until it holds (the plugins read configurations through
/// the watch cache, as upstream's informers: a moment behind the write).
fn eventually(what: &str, f: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Conformance: "Admission webhook, deny create" and "Mutating Admission
/// webhook, mutating webhook excluding object with specific name".
#[test]
fn webhooks_mutate_and_reject_as_configured() {
    let s = TestServer::start();
    let w = Webhook::serve(handler());
    apply(&s, &mutating_config(&w, "None"));
    apply(&s, &validating_config("guard", &w.url("/validate"), &w.ca_bundle(), "Fail", 10));
    ok(&s, &["create", "namespace", "guarded"]);
    ok(&s, &["label", "namespace", "guarded", "webhook=enabled"]);

    // The mutating webhook labels new ConfigMaps and its warning reaches kubectl.
    let probes = std::sync::atomic::AtomicUsize::new(0);
    eventually("the mutating webhook", || {
        let name = format!("probe-{}", probes.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let out = kubectl_stdin(&s, &["apply", "-f", "-"], &configmap("default", &name, ""));
        let labels = s.kubectl(&["get", "configmap", &name, "-o", "jsonpath={.metadata.labels.webhook}"]);
        out.status.success() && labels.stdout == b"mutated"
    });
    let out = kubectl_stdin(&s, &["create", "-f", "-"], &configmap("default", "web", "app: web"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_lines(&String::from_utf8_lossy(&out.stderr), &["Warning: mutating webhook saw web"]);
    assert_eq!(
        ok(&s, &["get", "configmap", "web", "-o", "jsonpath={.metadata.labels}"]),
        r#"{"app":"web","webhook":"mutated"}"#
    );

    // What the webhook was sent: an AdmissionReview v1 for the create.
    let review = w.reviews("/mutate").into_iter().find(|r| r["request"]["name"] == "web").expect("a review for web");
    let req = &review["request"];
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
    assert!(!req["uid"].as_str().unwrap().is_empty());
    assert_eq!(req["kind"], json!({"group": "", "version": "v1", "kind": "ConfigMap"}));
    assert_eq!(req["resource"], json!({"group": "", "version": "v1", "resource": "configmaps"}));
    assert_eq!(req["requestKind"], req["kind"]);
    assert_eq!(req["operation"], "CREATE");
    assert_eq!(req["namespace"], "default");
    assert_eq!(req["dryRun"], false);
    assert_eq!(req["object"]["data"], json!({"a": "b"}));
    assert_eq!(req["oldObject"], Value::Null);
    assert_eq!(req["options"]["kind"], "CreateOptions");
    assert!(req["userInfo"]["username"].as_str().is_some_and(|u| !u.is_empty()), "{req}");

    // The objectSelector keeps the webhook away from labelled objects.
    apply(&s, &configmap("default", "plain", "skip-mutation: 'true'"));
    assert_eq!(ok(&s, &["get", "configmap", "plain", "-o", "jsonpath={.metadata.labels.webhook}"]), "");

    // So do match conditions that do not hold.
    apply(&s, &configmap("default", "skip-me", ""));
    assert_eq!(ok(&s, &["get", "configmap", "skip-me", "-o", "jsonpath={.metadata.labels.webhook}"]), "");

    // The validating webhook denies a name, only in namespaces its selector picks.
    let err = apply_fails(&s, &configmap("guarded", "forbidden-cm", ""));
    assert_lines(
        &err,
        &[
            r#"Error from server (Forbidden): error when creating "STDIN": admission webhook "guard.rkube.test" denied the request: name forbidden-cm is not allowed"#,
        ],
    );
    let out = s.kubectl(&["get", "configmap", "forbidden-cm", "-n", "guarded"]);
    assert!(!out.status.success(), "the denied object must not be stored");
    apply(&s, &configmap("default", "forbidden-cm", ""));
    apply(&s, &configmap("guarded", "allowed-cm", ""));

    // Dry runs reach webhooks whose sideEffects allow it, with dryRun set,
    // and the mutation shows in the answer; nothing is stored.
    let out = kubectl_stdin(
        &s,
        &["create", "--dry-run=server", "-o", "jsonpath={.metadata.labels.webhook}", "-f", "-"],
        &configmap("default", "dry", ""),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "mutated");
    let dry = w.reviews("/mutate").into_iter().find(|r| r["request"]["name"] == "dry").expect("a dry-run review");
    assert_eq!(dry["request"]["dryRun"], true);
    assert_eq!(dry["request"]["options"]["dryRun"], json!(["All"]));
    assert!(!s.kubectl(&["get", "configmap", "dry"]).status.success());

    // v1 accepts only side-effect-free webhooks (upstream's validation).
    let err = apply_fails(&s, &mutating_config(&w, "Some").replace("name: labeler\n", "name: labeler2\n"));
    assert_lines(
        &err,
        &[r#"webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun""#],
    );
}

/// Conformance: "Admission webhook, fail closed" and "Admission webhook,
/// honor timeout".
#[test]
fn failure_policy_decides_when_the_webhook_is_down_or_slow() {
    let s = TestServer::start();
    let closed = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let w = Webhook::serve(handler());
    let down_url = format!("https://127.0.0.1:{closed}/validate");
    apply(&s, &validating_config("down", &down_url, &w.ca_bundle(), "Fail", 10));
    ok(&s, &["create", "namespace", "guarded"]);
    ok(&s, &["label", "namespace", "guarded", "webhook=enabled"]);

    // failurePolicy Fail: the request fails with upstream's InternalError.
    let want = format!(
        r#"Error from server (InternalError): error when creating "STDIN": Internal error occurred: failed calling webhook "down.rkube.test": failed to call webhook: Post "https://127.0.0.1:{closed}/validate?timeout=10s": dial tcp 127.0.0.1:{closed}: connect: connection refused"#
    );
    eventually("the unreachable webhook to fail requests", || {
        let out = kubectl_stdin(&s, &["apply", "-f", "-"], &configmap("guarded", "c1", ""));
        String::from_utf8_lossy(&out.stderr).contains(&want)
    });
    assert!(!s.kubectl(&["get", "configmap", "c1", "-n", "guarded"]).status.success());

    // failurePolicy Ignore: the same failure lets the request through.
    apply(&s, &validating_config("down", &down_url, &w.ca_bundle(), "Ignore", 10));
    eventually("the unreachable webhook to be ignored", || {
        kubectl_stdin(&s, &["apply", "-f", "-"], &configmap("guarded", "c2", "")).status.success()
    });

    // A webhook slower than timeoutSeconds fails the call with a deadline.
    ok(&s, &["delete", "validatingwebhookconfiguration", "down"]);
    apply(&s, &validating_config("slow", &w.url("/slow"), &w.ca_bundle(), "Fail", 1));
    let want = format!(
        r#"Internal error occurred: failed calling webhook "slow.rkube.test": failed to call webhook: Post "https://127.0.0.1:{}/slow?timeout=1s": context deadline exceeded"#,
        w.port
    );
    eventually("the slow webhook to time out", || {
        let out = kubectl_stdin(&s, &["apply", "-f", "-"], &configmap("guarded", "c3", ""));
        String::from_utf8_lossy(&out.stderr).contains(&want)
    });
    // A CA that did not sign the webhook's certificate is a TLS failure.
    ok(&s, &["delete", "validatingwebhookconfiguration", "slow"]);
    let (other_ca, _) = serving_tls();
    let other = base64::engine::general_purpose::STANDARD.encode(other_ca);
    apply(&s, &validating_config("untrusted", &w.url("/validate"), &other, "Fail", 10));
    eventually("the untrusted webhook to fail", || {
        let out = kubectl_stdin(&s, &["apply", "-f", "-"], &configmap("guarded", "c4", ""));
        String::from_utf8_lossy(&out.stderr)
            .contains("tls: failed to verify certificate: x509: certificate signed by unknown authority")
    });
    // A webhook Service that does not exist fails at the call, as
    // upstream's service resolver runs when the client dials.
    ok(&s, &["delete", "validatingwebhookconfiguration", "untrusted"]);
    let by_service = validating_config("nosvc", "X", &w.ca_bundle(), "Fail", 10)
        .replace("    url: X\n", "    service: {namespace: default, name: missing-hook, path: /validate}\n");
    apply(&s, &by_service);
    let want = r#"Internal error occurred: failed calling webhook "nosvc.rkube.test": failed to call webhook: Post "https://missing-hook.default.svc:443/validate?timeout=10s": service "missing-hook" not found"#;
    eventually("the webhook without a Service to fail", || {
        let out = kubectl_stdin(&s, &["apply", "-f", "-"], &configmap("guarded", "c5", ""));
        String::from_utf8_lossy(&out.stderr).contains(want)
    });
}

/// Two mutating webhooks in one configuration: the stamper runs first and
/// finds nothing to do; the labeler then changes the object, so a stamper
/// with `reinvocationPolicy: IfNeeded` runs again and stamps, one with
/// `Never` does not.
fn ordered_config(w: &Webhook, name: &str, namespace: &str, policy: &str) -> String {
    let hook = |hook: &str, path: &str, extra: &str| {
        format!(
            "- name: {hook}.{name}.rkube.test
  clientConfig:
    url: {url}
    caBundle: {ca}
  rules:
  - operations: [CREATE]
    apiGroups: ['']
    apiVersions: [v1]
    resources: [configmaps]
  namespaceSelector:
    matchLabels:
      kubernetes.io/metadata.name: {namespace}
  sideEffects: None
  admissionReviewVersions: [v1]
{extra}",
            url = w.url(path),
            ca = w.ca_bundle()
        )
    };
    format!(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata:\n  name: {name}\nwebhooks:\n{}{}",
        hook("stamper", "/stamp", &format!("  reinvocationPolicy: {policy}\n")),
        hook("labeler", "/mutate", "")
    )
}

/// Conformance: "Admission webhook, ordered mutation".
#[test]
fn if_needed_webhooks_are_reinvoked_after_a_later_change() {
    let s = TestServer::start();
    let w = Webhook::serve(handler());
    for ns in ["again", "once"] {
        ok(&s, &["create", "namespace", ns]);
    }
    apply(&s, &ordered_config(&w, "again", "again", "IfNeeded"));
    apply(&s, &ordered_config(&w, "once", "once", "Never"));
    let probes = std::sync::atomic::AtomicUsize::new(0);
    eventually("both configurations", || {
        let n = probes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        ["again", "once"].iter().all(|ns| {
            let name = format!("probe-{n}");
            let out = kubectl_stdin(&s, &["apply", "-f", "-"], &configmap(ns, &name, ""));
            let got = s.kubectl(&["get", "configmap", &name, "-n", ns, "-o", "jsonpath={.metadata.labels.webhook}"]);
            out.status.success() && got.stdout == b"mutated"
        })
    });
    apply(&s, &configmap("again", "cm", ""));
    apply(&s, &configmap("once", "cm", ""));
    let labels = |ns: &str| ok(&s, &["get", "configmap", "cm", "-n", ns, "-o", "jsonpath={.metadata.labels}"]);
    assert_eq!(labels("again"), r#"{"stamp":"after-labeler","webhook":"mutated"}"#);
    assert_eq!(labels("once"), r#"{"webhook":"mutated"}"#);
    // The stamper saw the object twice in `again` (once, then reinvoked).
    let calls = |ns: &str| {
        w.reviews("/stamp").iter().filter(|r| r["request"]["namespace"] == ns && r["request"]["name"] == "cm").count()
    };
    assert_eq!((calls("again"), calls("once")), (2, 1));

    // What webhooks make of an object is validated like any write.
    ok(&s, &["create", "namespace", "broken"]);
    let breaker = ordered_config(&w, "breaker", "broken", "Never").replace("/stamp", "/break");
    apply(&s, &breaker);
    eventually("the breaking webhook", || {
        let out = kubectl_stdin(&s, &["apply", "-f", "-"], &configmap("broken", "cm", ""));
        String::from_utf8_lossy(&out.stderr)
            .contains(r#"The ConfigMap "cm" is invalid: metadata.labels: Invalid value: "bad key!""#)
    });
    assert!(!s.kubectl(&["get", "configmap", "cm", "-n", "broken"]).status.success());
}
