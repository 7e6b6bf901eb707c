//! Upstream's validation of core and discovery kinds through the real
//! kubectl 1.33: EndpointSlices (`ValidateEndpointSliceCreate`/`Update`),
//! Endpoints (`ValidateEndpoints`) and Secrets (`ValidateSecret`) are
//! refused with 422 Invalid, upstream's message and field paths, and
//! nothing is stored; valid objects are stored with upstream's defaults.

mod api_common;
mod support;

use api_common::{apply, apply_fails, fails, ok};
use support::TestServer;

fn slice(name: &str, address_type: &str, address: &str, port_extra: &str) -> String {
    format!(
        "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: {name}\naddressType: {address_type}\n\
         endpoints:\n- addresses: [\"{address}\"]\nports:\n- port: 80\n{port_extra}"
    )
}

#[test]
fn endpoint_slices_are_validated_as_upstream() {
    let s = TestServer::start();
    let err = apply_fails(&s, &slice("lo", "IPv4", "127.0.0.1", ""));
    assert!(
        err.contains(r#"The EndpointSlice "lo" is invalid: endpoints[0].addresses[0]: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)"#),
        "{err}"
    );
    let err = fails(&s, &["get", "endpointslice", "lo"]);
    assert!(err.contains(r#""lo" not found"#), "{err}");

    let err = apply_fails(&s, &slice("mixed", "IPv6", "10.0.0.1", "  protocol: HTTP\n  name: Web\n"));
    assert!(
        err.contains("The EndpointSlice \"mixed\" is invalid: \n* endpoints[0].addresses[0]: Invalid value: \"10.0.0.1\": must be an IPv6 address\n* ports[0].name: Invalid value: \"Web\": a lowercase RFC 1123 label must consist of"),
        "{err}"
    );
    assert!(
        err.contains(
            "\n* ports[0].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"\n"
        ),
        "{err}"
    );

    let err = apply_fails(&s, &slice("old", "IP", "10.0.0.1", ""));
    assert!(err.contains(r#"addressType: Unsupported value: "IP": supported values: "FQDN", "IPv4", "IPv6""#), "{err}");

    // A good one is stored (generation 1, its port defaulted to TCP); its address type never changes.
    apply(&s, &slice("good", "IPv4", "10.1.2.3", ""));
    let proto = ok(&s, &["get", "endpointslice", "good", "-o", "jsonpath={.ports[0].protocol} {.metadata.generation}"]);
    assert_eq!(proto, "TCP 1");
    let err = apply_fails(&s, &slice("good", "FQDN", "example.com", ""));
    assert!(err.contains(r#"addressType: Invalid value: "FQDN": field is immutable"#), "{err}");
}

#[test]
fn endpoints_are_validated_as_upstream() {
    let s = TestServer::start();
    let ep = |name: &str, ip: &str| {
        format!(
            "apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: {name}\nsubsets:\n- addresses:\n  - ip: \"{ip}\"\n  \
             ports:\n  - port: 80\n  - port: 81\n    name: b\n"
        )
    };
    let err = apply_fails(&s, &ep("bad", "169.254.1.1"));
    assert!(
        err.contains("The Endpoints \"bad\" is invalid: \n* subsets[0].addresses[0].ip: Invalid value: \"169.254.1.1\": may not be in the link-local range (169.254.0.0/16, fe80::/10)\n* subsets[0].ports[0].name: Required value\n"),
        "{err}"
    );
    assert!(fails(&s, &["get", "endpoints", "bad"]).contains("not found"));
    let good = "apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: good\nsubsets:\n- addresses:\n  - ip: 10.1.2.3\n  \
                ports:\n  - port: 80\n";
    apply(&s, good);
    let proto = ok(&s, &["get", "endpoints", "good", "-o", "jsonpath={.subsets[0].ports[0].protocol}"]);
    assert_eq!(proto, "TCP");
}

#[test]
fn secrets_are_validated_by_type() {
    let s = TestServer::start();
    let tls =
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: tls\ntype: kubernetes.io/tls\nstringData:\n  tls.crt: c\n";
    let err = apply_fails(&s, tls);
    assert!(err.contains(r#"Secret "tls" is invalid: data[tls.key]: Required value"#), "{err}");
    assert!(fails(&s, &["get", "secret", "tls"]).contains("not found"));

    let err = fails(&s, &["create", "secret", "generic", "sa-token", "--type=kubernetes.io/service-account-token"]);
    assert!(
        err.contains(
            r#"Secret "sa-token" is invalid: metadata.annotations[kubernetes.io/service-account.name]: Required value"#
        ),
        "{err}"
    );
    let err = fails(
        &s,
        &[
            "create",
            "secret",
            "generic",
            "cfg",
            "--type=kubernetes.io/dockerconfigjson",
            "--from-literal=.dockerconfigjson=x",
        ],
    );
    assert!(
        err.contains(r#"data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": invalid character 'x' looking for beginning of value"#),
        "{err}"
    );

    // stringData is merged into data; the type never changes.
    let good = tls.to_string() + "  tls.key: k\n";
    apply(&s, &good);
    let data = ok(&s, &["get", "secret", "tls", "-o", "jsonpath={.data.tls\\.key}"]);
    assert_eq!(data, "aw==");
    let retyped = good.replace("kubernetes.io/tls", "Opaque");
    let err = apply_fails(&s, &retyped);
    assert!(err.contains(r#"type: Invalid value: "Opaque": field is immutable"#), "{err}");
}

#[test]
fn nodes_are_validated_as_upstream() {
    let s = TestServer::start();
    let node = |taints: &str, cidr: &str| {
        format!("apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\nspec:\n  podCIDR: {cidr}\n  taints:\n{taints}")
    };
    let twice = "  - {key: a, effect: NoSchedule}\n  - {key: a, value: v, effect: NoSchedule}\n";
    let err = apply_fails(&s, &node(twice, "10.244.0.0/24"));
    assert!(
        err.contains(r#"The Node "n1" is invalid: metadata.taints[1]: Duplicate value: {"key":"a","value":"v","effect":"NoSchedule"}: taints must be unique by key and effect pair"#),
        "{err}"
    );
    assert!(fails(&s, &["get", "node", "n1"]).contains("not found"));
    apply(&s, &node("  - {key: a, effect: NoSchedule}\n", "10.244.0.0/24"));
    let err = apply_fails(&s, &node("  - {key: a, effect: NoSchedule}\n", "10.244.1.0/24"));
    assert!(
        err.contains(r#"spec.podCIDRs[0]: Forbidden: node updates may not change podCIDR except from "" to valid"#),
        "{err}"
    );
    let cidr = ok(&s, &["get", "node", "n1", "-o", "jsonpath={.spec.podCIDR}"]);
    assert_eq!(cidr, "10.244.0.0/24");
}

#[test]
fn events_are_validated_as_upstream() {
    let s = TestServer::start();
    ok(&s, &["create", "namespace", "other"]);
    let core =
        "apiVersion: v1\nkind: Event\nmetadata:\n  name: e1\ninvolvedObject: {kind: Pod, name: p, namespace: other}\n\
                reason: Test\nmessage: m\n";
    let err = apply_fails(&s, core);
    assert!(
        err.contains(r#"The Event "e1" is invalid: involvedObject.namespace: Invalid value: "other": does not match event.namespace"#),
        "{err}"
    );
    let new_style = "apiVersion: events.k8s.io/v1\nkind: Event\nmetadata:\n  name: e2\n\
                     eventTime: \"2026-01-01T00:00:00.000000Z\"\nregarding: {kind: Pod, name: p, namespace: default}\n\
                     reason: Pulled\ntype: Normal\naction: Pull\nreportingController: kubelet\n";
    let err = apply_fails(&s, new_style);
    assert!(err.contains(r#"The Event "e2" is invalid: reportingInstance: Required value"#), "{err}");
    apply(&s, &(new_style.to_string() + "reportingInstance: node-1\n"));
    ok(&s, &["get", "events.events.k8s.io", "e2"]);

    // Creates through events.k8s.io/v1 get its strict rules (upstream's
    // `ValidateEventCreate` with that request version)...
    let strict = "apiVersion: events.k8s.io/v1\nkind: Event\nmetadata:\n  name: e3\n\
                  regarding: {kind: Pod, name: p, namespace: default}\nreason: Pulled\ntype: Info\n\
                  action: Pull\nreportingController: kubelet\nreportingInstance: node-a\ndeprecatedCount: 3\n";
    let err = apply_fails(&s, strict);
    for cause in [
        "eventTime: Required value",
        r#"type: Invalid value: "": has invalid value: Info"#,
        r#"count: Invalid value: "": needs to be unset"#,
    ] {
        assert!(err.contains(cause), "{cause}: {err}");
    }
    // Its note may still change (conformance: "New Event resource lifecycle,
    // testing a single event" patches it through events.k8s.io/v1).
    apply(&s, &(new_style.to_string() + "reportingInstance: node-1\nnote: changed\n"));
    // ...while core/v1 writes keep the legacy ones only.
    let legacy = "apiVersion: v1\nkind: Event\nmetadata:\n  name: e4\n\
                  involvedObject: {kind: Pod, name: p, namespace: default}\nreason: Test\ntype: Info\ncount: 3\n";
    apply(&s, legacy);
    assert_eq!(ok(&s, &["get", "event", "e4", "-o", "jsonpath={.type} {.count}"]), "Info 3");
}

#[test]
fn config_maps_are_validated_as_upstream() {
    let s = TestServer::start();
    let err = apply_fails(&s, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: k\ndata:\n  \"bad key!\": x\n");
    assert!(
        err.contains(r#"The ConfigMap "k" is invalid: data[bad key!]: Invalid value: "bad key!": a valid config key must consist of alphanumeric characters"#),
        "{err}"
    );
    let err = apply_fails(
        &s,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: k\ndata:\n  a: x\nbinaryData:\n  a: eA==\n",
    );
    assert!(err.contains(r#"data[a]: Invalid value: "a": duplicate of key present in binaryData"#), "{err}");
    let err = fails(&s, &["get", "configmap", "k"]);
    assert!(err.contains(r#""k" not found"#), "{err}");
    // A patch is validated too, and changes nothing.
    ok(&s, &["create", "configmap", "good", "--from-literal=a=1"]);
    let err = fails(&s, &["patch", "configmap", "good", "--type=merge", "-p", r#"{"data":{"..":"x"}}"#]);
    assert!(err.contains(r#"data[..]: Invalid value: "..": must not be '..'"#), "{err}");
    assert_eq!(ok(&s, &["get", "configmap", "good", "-o", "jsonpath={.data}"]), r#"{"a":"1"}"#);
}
