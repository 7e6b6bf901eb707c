//! Overload protection and observability: `--max-requests-inflight` and
//! `--max-mutating-requests-inflight` are accepted and enforced (429 with
//! `Retry-After` beyond them), and `/metrics` serves upstream's request
//! metrics in the Prometheus text format, counting kubectl's calls.
//!
//! The limiter itself (mutating limit, watch exemption) is unit-tested in
//! `rkube_apiserver::filters`; here a naturally slow read — a list asking
//! for a resourceVersion the store has not reached, which waits for the
//! watch cache before answering 504 — holds the only read-only seat.
//! The limits apply to ordinary users; `system:masters` (the admin) is
//! exempt, as upstream.

mod api_common;
mod support;

use std::time::{Duration, Instant};

use api_common::{ok, request, request_with};
use support::{TestServer, TestServerOptions};

/// The value of the first sample of `text` whose line starts with `prefix`.
fn sample(text: &str, prefix: &str) -> Option<f64> {
    text.lines().filter(|l| !l.starts_with('#')).find(|l| l.starts_with(prefix))?.rsplit(' ').next()?.parse().ok()
}

const LIST_CONFIGMAPS: &str = r#"apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",subresource="",verb="LIST",version="v1"}"#;

#[test]
fn read_only_requests_beyond_the_limit_get_429_with_retry_after() {
    let s = TestServer::start_with(TestServerOptions {
        extra_args: ["--max-requests-inflight", "1", "--max-mutating-requests-inflight", "1"]
            .map(String::from)
            .to_vec(),
        ..Default::default()
    });
    // jane reads through the bootstrap view role (RBAC is on).
    ok(&s, &["create", "clusterrolebinding", "jane-view", "--clusterrole=view", "--user=jane"]);
    let jane = support::user_tls_config(&s.tls_dir(), "jane", Some("dev")).unwrap();
    let as_jane = |path: &str| request_with(&s, jane.clone(), "GET", path, &[], b"");
    // Warm the configmaps watch cache so the slow list waits on it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while as_jane("/api/v1/configmaps").status != 200 {
        assert!(Instant::now() < deadline, "jane-view never took effect");
        std::thread::sleep(Duration::from_millis(100));
    }
    let slow = "/api/v1/configmaps?resourceVersion=999999999&resourceVersionMatch=NotOlderThan";
    let mut refused = None;
    for _ in 0..5 {
        let (slow_reply, elapsed, other, admin) = std::thread::scope(|scope| {
            let held = scope.spawn(|| {
                let start = Instant::now();
                (as_jane(slow), start.elapsed())
            });
            std::thread::sleep(Duration::from_millis(800));
            let other = as_jane("/api/v1/namespaces");
            // The admin is in system:masters, which takes no seat.
            let admin = request(&s, "GET", "/api/v1/namespaces", &[], b"");
            let (reply, elapsed) = held.join().unwrap();
            (reply, elapsed, other, admin)
        });
        // The slow list may itself have met a busy seat (the server's own
        // requests); then try again.
        if slow_reply.status == 504 && elapsed > Duration::from_millis(1500) {
            assert_eq!(admin.status, 200, "system:masters is exempt: {}", admin.body);
            refused = Some(other);
            break;
        }
    }
    let other = refused.expect("the slow list held the read-only seat");
    assert_eq!(other.status, 429, "{}", other.body);
    assert_eq!(other.header("retry-after"), ["1"]);
    let status = other.json();
    assert_eq!(status["reason"], "TooManyRequests");
    assert_eq!(status["message"], "Too many requests, please try again later.");
    assert_eq!(status["details"]["retryAfterSeconds"], 1);

    // With the seat free again the same request is served, and the refusal
    // was counted.
    assert_eq!(as_jane("/api/v1/namespaces").status, 200);
    let metrics = request(&s, "GET", "/metrics", &[], b"").body;
    let refused = r#"apiserver_request_total{code="429",component="apiserver",dry_run="",group="",resource="namespaces",scope="cluster",subresource="",verb="LIST",version="v1"}"#;
    assert!(sample(&metrics, refused).is_some_and(|n| n >= 1.0), "{metrics}");
}

#[test]
fn metrics_count_kubectl_requests_in_prometheus_format() {
    let s = TestServer::start_with(TestServerOptions {
        extra_args: ["--max-requests-inflight", "50", "--max-mutating-requests-inflight", "20"]
            .map(String::from)
            .to_vec(),
        ..Default::default()
    });
    let create = r#"apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1"}"#;
    // The server's controller manager creates kube-public/cluster-info at
    // start (before the test server is ready): count from here.
    let creates = sample(&ok(&s, &["get", "--raw", "/metrics"]), create).unwrap_or(0.0);
    ok(&s, &["create", "configmap", "m1", "--from-literal=a=b"]);
    ok(&s, &["get", "configmaps"]);
    let before = ok(&s, &["get", "--raw", "/metrics"]);
    let lists = sample(&before, LIST_CONFIGMAPS).unwrap_or_else(|| panic!("no LIST configmaps counter:\n{before}"));
    assert!(lists >= 1.0);
    ok(&s, &["get", "configmaps"]);
    ok(&s, &["get", "configmaps"]);
    let after = ok(&s, &["get", "--raw", "/metrics"]);
    assert_eq!(sample(&after, LIST_CONFIGMAPS), Some(lists + 2.0), "{after}");

    assert_eq!(sample(&after, create), Some(creates + 1.0), "{after}");
    for line in [
        "# TYPE apiserver_request_total counter",
        "# TYPE apiserver_request_duration_seconds histogram",
        "# TYPE apiserver_current_inflight_requests gauge",
        "# TYPE apiserver_storage_objects gauge",
        "# TYPE process_start_time_seconds gauge",
    ] {
        assert!(after.lines().any(|l| l == line), "missing {line:?}:\n{after}");
    }
    let histogram = r#"apiserver_request_duration_seconds_count{component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",subresource="",verb="LIST",version="v1"}"#;
    assert_eq!(sample(&after, histogram), Some(lists + 2.0), "{after}");
    // A scrape by an ordinary user is itself an in-flight read-only request
    // (the admin's, in system:masters, takes no seat).
    // system:monitoring may scrape /metrics (upstream's bootstrap binding).
    let jane = support::user_tls_config(&s.tls_dir(), "jane", Some("system:monitoring")).unwrap();
    let scraped = request_with(&s, jane, "GET", "/metrics", &[], b"").body;
    let inflight = sample(&scraped, r#"apiserver_current_inflight_requests{request_kind="readOnly"}"#);
    assert!(inflight.is_some_and(|n| n >= 1.0), "{scraped}");
    assert!(sample(&after, "process_start_time_seconds ").is_some_and(|t| t > 1.0e9), "{after}");
    // Object counts come from the watch cache once its first list is done.
    // Upstream reports every resource the server stores, read or not: a
    // resource nobody has listed or created (CSIDrivers) counts 0.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = ok(&s, &["get", "--raw", "/metrics"]);
        let configmaps = sample(&text, r#"apiserver_storage_objects{resource="configmaps"}"#);
        let csidrivers = sample(&text, r#"apiserver_storage_objects{resource="csidrivers.storage.k8s.io"}"#);
        match (configmaps, csidrivers) {
            // m1 plus kube-root-ca.crt configmaps, if any.
            (Some(n), Some(c)) if n >= 1.0 => {
                assert_eq!(c, 0.0, "{text}");
                break;
            }
            _ if Instant::now() > deadline => panic!("no configmaps or csidrivers object count:\n{text}"),
            _ => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}
