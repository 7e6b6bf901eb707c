//! `/metrics`: the API server's request metrics in the Prometheus text
//! exposition format (version 0.0.4), with upstream's names and labels.
//!
//! - `apiserver_request_total{verb,dry_run,group,version,resource,subresource,scope,component,code}`;
//! - `apiserver_request_duration_seconds` (histogram, upstream's buckets)
//!   with the same labels but `code`;
//! - `apiserver_current_inflight_requests{request_kind}` (`readOnly`,
//!   `mutating`), read from the [`crate::filters::InflightLimiter`];
//! - `apiserver_storage_objects{resource}`: objects per resource, read from
//!   the watch caches that have completed their initial list;
//! - `process_start_time_seconds`.
//!
//! Hand-written: a counter map and a histogram map behind mutexes, rendered
//! on each scrape with labels in alphabetical order as the Go client does.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The `Content-Type` of the text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Upstream's buckets of `apiserver_request_duration_seconds`.
pub const DURATION_BUCKETS: [f64; 23] = [
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0,
    45.0, 60.0,
];

/// The `component` label of requests this API server serves.
pub const APISERVER_COMPONENT: &str = "apiserver";

/// The labels of one request series (all but `code`).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestLabels {
    /// Upstream's reported verb: `GET`, `LIST`, `WATCH`, `POST`, `PUT`,
    /// `PATCH`, `APPLY`, `DELETE`, `DELETECOLLECTION`, `CONNECT`.
    pub verb: String,
    /// The sorted, comma-joined `dryRun` values (`""` or `All`).
    pub dry_run: String,
    /// API group (`""` for core and non-resource requests).
    pub group: String,
    /// API version (`""` for non-resource requests).
    pub version: String,
    /// Plural resource name (`""` for non-resource requests).
    pub resource: String,
    /// Subresource; for non-resource requests the path, as upstream.
    pub subresource: String,
    /// `resource`, `namespace`, `cluster`, or `""` for non-resource requests.
    pub scope: String,
    /// `apiserver`.
    pub component: String,
}

impl RequestLabels {
    /// `(name, value)` pairs in alphabetical order of name.
    fn pairs(&self) -> [(&'static str, &str); 8] {
        [
            ("component", &self.component),
            ("dry_run", &self.dry_run),
            ("group", &self.group),
            ("resource", &self.resource),
            ("scope", &self.scope),
            ("subresource", &self.subresource),
            ("verb", &self.verb),
            ("version", &self.version),
        ]
    }
}

#[derive(Clone, Default)]
struct Histogram {
    /// Non-cumulative count per bucket of [`DURATION_BUCKETS`].
    buckets: [u64; DURATION_BUCKETS.len()],
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, v: f64) {
        if let Some(i) = DURATION_BUCKETS.iter().position(|b| v <= *b) {
            self.buckets[i] += 1;
        }
        self.sum += v;
        self.count += 1;
    }
}

/// A point-in-time reading of the gauges the metrics do not own.
#[derive(Clone, Debug, Default)]
pub struct Gauges {
    /// In-flight read-only requests (long-running ones excluded).
    pub inflight_read_only: usize,
    /// In-flight mutating requests (long-running ones excluded).
    pub inflight_mutating: usize,
    /// `(resource, count)`: `pods`, `deployments.apps`, …
    pub storage_objects: Vec<(String, usize)>,
}

/// The request metrics of one API server.
pub struct Metrics {
    start_time: f64,
    requests: Mutex<BTreeMap<(RequestLabels, u16), u64>>,
    durations: Mutex<BTreeMap<RequestLabels, Histogram>>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").field("start_time", &self.start_time).finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// Empty metrics; the process start time is taken now.
    pub fn new() -> Metrics {
        let start_time = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
        Metrics { start_time, requests: Mutex::default(), durations: Mutex::default() }
    }

    /// Records a served request: its response code and latency.
    pub fn observe(&self, labels: &RequestLabels, code: u16, elapsed: Duration) {
        self.count(labels, code);
        let mut durations = self.durations.lock().expect("metrics lock");
        durations.entry(labels.clone()).or_default().observe(elapsed.as_secs_f64());
    }

    /// Records a request answered without being served (e.g. 429 from the
    /// in-flight limit): counted, but no latency, as upstream's
    /// `RecordDroppedRequest`.
    pub fn count(&self, labels: &RequestLabels, code: u16) {
        *self.requests.lock().expect("metrics lock").entry((labels.clone(), code)).or_default() += 1;
    }

    /// The current value of `apiserver_request_total` for `labels` and `code`.
    pub fn request_count(&self, labels: &RequestLabels, code: u16) -> u64 {
        self.requests.lock().expect("metrics lock").get(&(labels.clone(), code)).copied().unwrap_or(0)
    }

    /// The exposition text of every metric, with `gauges` read by the caller.
    pub fn render(&self, gauges: &Gauges) -> String {
        let mut out = String::new();
        header(
            &mut out,
            "apiserver_current_inflight_requests",
            "gauge",
            "[STABLE] Maximal number of currently used inflight request limit of this apiserver per request kind in last second.",
        );
        let _ = writeln!(
            out,
            "apiserver_current_inflight_requests{{request_kind=\"mutating\"}} {}",
            gauges.inflight_mutating
        );
        let _ = writeln!(
            out,
            "apiserver_current_inflight_requests{{request_kind=\"readOnly\"}} {}",
            gauges.inflight_read_only
        );

        header(
            &mut out,
            "apiserver_request_duration_seconds",
            "histogram",
            "[STABLE] Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
        );
        for (labels, h) in self.durations.lock().expect("metrics lock").iter() {
            let base = label_set(&labels.pairs());
            let mut cumulative = 0;
            for (bound, n) in DURATION_BUCKETS.iter().zip(h.buckets) {
                cumulative += n;
                let _ =
                    writeln!(out, "apiserver_request_duration_seconds_bucket{{{base},le=\"{bound}\"}} {cumulative}");
            }
            let _ = writeln!(out, "apiserver_request_duration_seconds_bucket{{{base},le=\"+Inf\"}} {}", h.count);
            let _ = writeln!(out, "apiserver_request_duration_seconds_sum{{{base}}} {}", h.sum);
            let _ = writeln!(out, "apiserver_request_duration_seconds_count{{{base}}} {}", h.count);
        }

        header(
            &mut out,
            "apiserver_request_total",
            "counter",
            "[STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
        );
        for ((labels, code), n) in self.requests.lock().expect("metrics lock").iter() {
            let code = code.to_string();
            let mut pairs = vec![("code", code.as_str())];
            pairs.extend(labels.pairs());
            let _ = writeln!(out, "apiserver_request_total{{{}}} {n}", label_set(&pairs));
        }

        header(
            &mut out,
            "apiserver_storage_objects",
            "gauge",
            "[STABLE] Number of stored objects at the time of last check split by kind.",
        );
        let mut objects = gauges.storage_objects.clone();
        objects.sort();
        for (resource, n) in objects {
            let _ = writeln!(out, "apiserver_storage_objects{{{}}} {n}", label_set(&[("resource", &resource)]));
        }

        header(
            &mut out,
            "process_start_time_seconds",
            "gauge",
            "[ALPHA] Start time of the process since unix epoch in seconds.",
        );
        let _ = writeln!(out, "process_start_time_seconds {}", self.start_time);
        out
    }
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// `a="x",b="y"` with values escaped as the exposition format requires.
fn label_set(pairs: &[(&str, &str)]) -> String {
    let mut s = String::new();
    for (i, (name, value)) in pairs.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(s, "{name}=\"");
        for c in value.chars() {
            match c {
                '\\' => s.push_str("\\\\"),
                '"' => s.push_str("\\\""),
                '\n' => s.push_str("\\n"),
                c => s.push(c),
            }
        }
        s.push('"');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list_pods() -> RequestLabels {
        RequestLabels {
            verb: "LIST".into(),
            resource: "pods".into(),
            version: "v1".into(),
            scope: "namespace".into(),
            component: APISERVER_COMPONENT.into(),
            ..Default::default()
        }
    }

    #[test]
    fn counters_and_histograms_render_in_the_exposition_format() {
        let m = Metrics::new();
        m.observe(&list_pods(), 200, Duration::from_millis(30));
        m.observe(&list_pods(), 200, Duration::from_secs(2));
        m.count(&list_pods(), 429);
        let text = m.render(&Gauges {
            inflight_read_only: 3,
            inflight_mutating: 1,
            storage_objects: vec![("pods".into(), 7), ("deployments.apps".into(), 2)],
        });
        let labels = r#"component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1""#;
        for line in [
            "# TYPE apiserver_request_total counter".to_string(),
            format!(r#"apiserver_request_total{{code="200",{labels}}} 2"#),
            format!(r#"apiserver_request_total{{code="429",{labels}}} 1"#),
            "# TYPE apiserver_request_duration_seconds histogram".to_string(),
            format!(r#"apiserver_request_duration_seconds_bucket{{{labels},le="0.025"}} 0"#),
            format!(r#"apiserver_request_duration_seconds_bucket{{{labels},le="0.05"}} 1"#),
            format!(r#"apiserver_request_duration_seconds_bucket{{{labels},le="2"}} 2"#),
            format!(r#"apiserver_request_duration_seconds_bucket{{{labels},le="60"}} 2"#),
            format!(r#"apiserver_request_duration_seconds_bucket{{{labels},le="+Inf"}} 2"#),
            format!(r#"apiserver_request_duration_seconds_count{{{labels}}} 2"#),
            r#"apiserver_current_inflight_requests{request_kind="mutating"} 1"#.to_string(),
            r#"apiserver_current_inflight_requests{request_kind="readOnly"} 3"#.to_string(),
            r#"apiserver_storage_objects{resource="pods"} 7"#.to_string(),
            r#"apiserver_storage_objects{resource="deployments.apps"} 2"#.to_string(),
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
        }
        let sum = text.lines().find(|l| l.starts_with("apiserver_request_duration_seconds_sum")).unwrap();
        let sum: f64 = sum.rsplit(' ').next().unwrap().parse().unwrap();
        assert!((sum - 2.03).abs() < 1e-9);
        let start = text.lines().find(|l| l.starts_with("process_start_time_seconds ")).unwrap();
        assert!(start["process_start_time_seconds ".len()..].parse::<f64>().unwrap() > 1.0e9);
        // Every sample line is `name{labels} value` or `name value`.
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            let (_, value) = l.rsplit_once(' ').unwrap();
            assert!(value.parse::<f64>().is_ok(), "bad sample {l:?}");
        }
        assert_eq!(m.request_count(&list_pods(), 200), 2);
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(label_set(&[("a", "x\"y\\z\nw")]), r#"a="x\"y\\z\nw""#);
    }
}
