//! Decoding a kubelet's `/metrics/resource` (Prometheus text format
//! 0.0.4) into one scrape's [`Batch`], as metrics-server's `decodeBatch`
//! does:
//!
//! - series read: `node_cpu_usage_seconds_total`,
//!   `node_memory_working_set_bytes` (the node), and
//!   `container_cpu_usage_seconds_total`,
//!   `container_memory_working_set_bytes` with the labels `container`,
//!   `pod` and `namespace` (each container); every other family is
//!   skipped;
//! - values: CPU in core-seconds, kept as cumulative nanoseconds
//!   (`value × 10⁹`, truncated); memory in bytes (truncated);
//! - timestamps: the sample's own (milliseconds since the epoch), else the
//!   time the request was sent;
//! - completeness: the node point is dropped unless its timestamp, CPU and
//!   memory are all non-zero; a pod is dropped as a whole when any of its
//!   containers has zero CPU or zero memory (metrics-server's
//!   `checkContainerMetrics`), so a pod is never reported with part of
//!   its containers.
//!
//! A line that is not valid exposition text fails the whole batch
//! (`failed parsing metrics: line N: …`), as upstream's parser does.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};

/// The node's cumulative CPU time, in core-seconds.
pub const NODE_CPU: &str = "node_cpu_usage_seconds_total";
/// The node's memory working set, in bytes.
pub const NODE_MEMORY: &str = "node_memory_working_set_bytes";
/// A container's cumulative CPU time, in core-seconds.
pub const CONTAINER_CPU: &str = "container_cpu_usage_seconds_total";
/// A container's memory working set, in bytes.
pub const CONTAINER_MEMORY: &str = "container_memory_working_set_bytes";

/// One sample of a node or container (metrics-server's `MetricsPoint`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MetricsPoint {
    /// When it was taken, nanoseconds since the epoch.
    pub timestamp_ns: i64,
    /// Cumulative CPU time, nanoseconds (core-nanoseconds).
    pub cumulative_cpu_ns: u64,
    /// Memory working set, bytes.
    pub memory_bytes: u64,
}

/// A pod's namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PodRef {
    /// The namespace.
    pub namespace: String,
    /// The pod's name.
    pub name: String,
}

impl PodRef {
    /// A reference to `namespace/name`.
    pub fn new(namespace: &str, name: &str) -> PodRef {
        PodRef { namespace: namespace.to_string(), name: name.to_string() }
    }
}

/// The points of one scrape: per node, and per pod per container.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Batch {
    /// Node name → its point.
    pub nodes: HashMap<String, MetricsPoint>,
    /// Pod → container name → its point.
    pub pods: HashMap<PodRef, BTreeMap<String, MetricsPoint>>,
}

impl Batch {
    /// Adds `other` (another node's batch); points already present are
    /// kept and the duplicates counted in the result, as upstream logs
    /// and skips them.
    pub fn merge(&mut self, other: Batch) -> usize {
        let mut duplicates = 0;
        for (node, point) in other.nodes {
            match self.nodes.entry(node) {
                Entry::Occupied(_) => duplicates += 1,
                Entry::Vacant(e) => {
                    e.insert(point);
                }
            }
        }
        for (pod, containers) in other.pods {
            match self.pods.entry(pod) {
                Entry::Occupied(_) => duplicates += 1,
                Entry::Vacant(e) => {
                    e.insert(containers);
                }
            }
        }
        duplicates
    }
}

/// One series line: the metric name, its labels and the sample.
#[derive(Debug, PartialEq)]
struct Sample {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
    timestamp_ms: Option<i64>,
}

impl Sample {
    fn label(&self, key: &str) -> &str {
        self.labels.iter().find(|(k, _)| k == key).map_or("", |(_, v)| v.as_str())
    }
}

/// Decodes the `/metrics/resource` text of node `node_name`, read from a
/// request sent at `request_time_ms` (the timestamp of samples without
/// one). See the module docs for the rules.
pub fn decode_batch(text: &str, request_time_ms: i64, node_name: &str) -> Result<Batch, String> {
    let mut node = MetricsPoint::default();
    let mut pods: HashMap<PodRef, BTreeMap<String, MetricsPoint>> = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let sample = parse_line(line).map_err(|e| format!("failed parsing metrics: line {}: {e}", i + 1))?;
        let timestamp_ns = sample.timestamp_ms.unwrap_or(request_time_ms).saturating_mul(1_000_000);
        let cpu_ns = || (sample.value * 1e9) as u64;
        match sample.name.as_str() {
            NODE_CPU => {
                node.cumulative_cpu_ns = cpu_ns();
                node.timestamp_ns = timestamp_ns;
            }
            NODE_MEMORY => {
                node.memory_bytes = sample.value as u64;
                node.timestamp_ns = timestamp_ns;
            }
            CONTAINER_CPU | CONTAINER_MEMORY => {
                let pod = PodRef::new(sample.label("namespace"), sample.label("pod"));
                let point = pods.entry(pod).or_default().entry(sample.label("container").to_string()).or_default();
                if sample.name == CONTAINER_CPU {
                    point.cumulative_cpu_ns = cpu_ns();
                } else {
                    point.memory_bytes = sample.value as u64;
                }
                point.timestamp_ns = timestamp_ns;
            }
            _ => {}
        }
    }
    let mut batch = Batch::default();
    if node.timestamp_ns != 0 && node.cumulative_cpu_ns != 0 && node.memory_bytes != 0 {
        batch.nodes.insert(node_name.to_string(), node);
    } else {
        tracing::debug!(component = super::COMPONENT, node = node_name, ?node, "incomplete node metrics; skipped");
    }
    for (pod, containers) in pods {
        let complete = containers.values().all(|c| c.cumulative_cpu_ns != 0 && c.memory_bytes != 0);
        if complete && !containers.is_empty() {
            batch.pods.insert(pod, containers);
        } else {
            tracing::debug!(component = super::COMPONENT, namespace = %pod.namespace, pod = %pod.name, "incomplete pod metrics; skipped");
        }
    }
    Ok(batch)
}

/// Parses `name{label="value",…} value [timestamp]`.
fn parse_line(line: &str) -> Result<Sample, String> {
    let name_end = line.find(|c: char| c == '{' || c.is_whitespace()).unwrap_or(line.len());
    let name = &line[..name_end];
    if name.is_empty()
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        || name.starts_with(|c: char| c.is_ascii_digit())
    {
        return Err(format!("invalid metric name {name:?}"));
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(after) = rest.strip_prefix('{') {
        let (parsed, tail) = parse_labels(after)?;
        labels = parsed;
        rest = tail;
    }
    let mut fields = rest.split_whitespace();
    let value = fields.next().ok_or("expected a value")?;
    let value = parse_value(value)?;
    let timestamp_ms = match fields.next() {
        Some(ts) => Some(ts.parse::<i64>().map_err(|_| format!("invalid timestamp {ts:?}"))?),
        None => None,
    };
    if let Some(extra) = fields.next() {
        return Err(format!("unexpected {extra:?} after the timestamp"));
    }
    Ok(Sample { name: name.to_string(), labels, value, timestamp_ms })
}

/// A series' labels, in order.
type Labels = Vec<(String, String)>;

/// Parses the labels after `{` up to the closing `}`; returns them and the
/// text after the brace.
fn parse_labels(mut s: &str) -> Result<(Labels, &str), String> {
    let mut labels = Vec::new();
    loop {
        s = s.trim_start();
        if let Some(tail) = s.strip_prefix('}') {
            return Ok((labels, tail));
        }
        let eq = s.find('=').ok_or("expected = in a label")?;
        let key = s[..eq].trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("invalid label name {key:?}"));
        }
        s = s[eq + 1..].trim_start().strip_prefix('"').ok_or("expected a quoted label value")?;
        let mut value = String::new();
        let mut chars = s.char_indices();
        let end = loop {
            match chars.next() {
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, c)) => value.push(c),
                    None => return Err("unterminated label value".into()),
                },
                Some((_, c)) => value.push(c),
                None => return Err("unterminated label value".into()),
            }
        };
        labels.push((key.to_string(), value));
        s = s[end + 1..].trim_start();
        if let Some(tail) = s.strip_prefix(',') {
            s = tail;
        } else if !s.starts_with('}') {
            return Err("expected , or } after a label".into());
        }
    }
}

/// A sample value: a float, or `NaN`, `+Inf`, `-Inf`.
fn parse_value(v: &str) -> Result<f64, String> {
    match v {
        "NaN" => Ok(f64::NAN),
        "+Inf" | "Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        _ => v.parse::<f64>().map_err(|_| format!("invalid value {v:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What rkube's kubelet serves (crates/kubelet/src/server/stats.rs).
    const KUBELET_TEXT: &str = r#"# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="c",namespace="default",pod="web"} 1.5 1700000000123
container_cpu_usage_seconds_total{container="sidecar",namespace="default",pod="web"} 0.25 1700000000123
container_cpu_usage_seconds_total{container="x",namespace="kube-system",pod="half"} 3 1700000000123
# HELP container_memory_working_set_bytes [STABLE] Current working set of the container in bytes
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{container="c",namespace="default",pod="web"} 4096 1700000000123
container_memory_working_set_bytes{container="sidecar",namespace="default",pod="web"} 8192 1700000000123
container_memory_working_set_bytes{container="x",namespace="kube-system",pod="half"} 0 1700000000123
# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds
# TYPE node_cpu_usage_seconds_total counter
node_cpu_usage_seconds_total 2 1700000000999
# HELP node_memory_working_set_bytes [STABLE] Current working set of the node in bytes
# TYPE node_memory_working_set_bytes gauge
node_memory_working_set_bytes 1.048576e+06 1700000000999
# HELP pod_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the pod in core-seconds
# TYPE pod_cpu_usage_seconds_total counter
pod_cpu_usage_seconds_total{namespace="default",pod="web"} 1.75 1700000000123
# TYPE resource_scrape_error gauge
resource_scrape_error 0
"#;

    /// Node and container points in nanoseconds and bytes with the
    /// samples' millisecond timestamps; a pod with a zero-memory container
    /// is dropped whole; pod-level and other families are ignored.
    #[test]
    fn decodes_the_kubelets_resource_metrics() {
        let batch = decode_batch(KUBELET_TEXT, 1, "n1").unwrap();
        assert_eq!(
            batch.nodes["n1"],
            MetricsPoint {
                timestamp_ns: 1_700_000_000_999_000_000,
                cumulative_cpu_ns: 2_000_000_000,
                memory_bytes: 1_048_576
            }
        );
        let web = &batch.pods[&PodRef::new("default", "web")];
        assert_eq!(web.keys().collect::<Vec<_>>(), ["c", "sidecar"]);
        assert_eq!(
            web["c"],
            MetricsPoint {
                timestamp_ns: 1_700_000_000_123_000_000,
                cumulative_cpu_ns: 1_500_000_000,
                memory_bytes: 4096
            }
        );
        assert_eq!(web["sidecar"].cumulative_cpu_ns, 250_000_000);
        assert!(!batch.pods.contains_key(&PodRef::new("kube-system", "half")), "incomplete pods are dropped");
        assert_eq!(batch.pods.len(), 1);
    }

    /// Samples without a timestamp take the request's; a node without
    /// memory is not reported; escaped label values are unescaped.
    #[test]
    fn defaults_and_incomplete_nodes() {
        let text = "node_cpu_usage_seconds_total 5\ncontainer_cpu_usage_seconds_total{namespace=\"a\\\"b\",pod=\"p\",container=\"c\"} 1\ncontainer_memory_working_set_bytes{namespace=\"a\\\"b\",pod=\"p\",container=\"c\"} 10\n";
        let batch = decode_batch(text, 42, "n").unwrap();
        assert!(batch.nodes.is_empty());
        let p = &batch.pods[&PodRef::new("a\"b", "p")]["c"];
        assert_eq!(p.timestamp_ns, 42_000_000);
        assert_eq!((p.cumulative_cpu_ns, p.memory_bytes), (1_000_000_000, 10));
    }

    #[test]
    fn malformed_text_fails_the_batch() {
        let e = decode_batch("ok 1\nnode_cpu_usage_seconds_total{a=\"b\" 1\n", 0, "n").unwrap_err();
        assert!(e.starts_with("failed parsing metrics: line 2:"), "{e}");
        assert!(decode_batch("node_cpu_usage_seconds_total one\n", 0, "n").is_err());
        assert!(decode_batch("node_cpu_usage_seconds_total 1 2 3\n", 0, "n").is_err());
    }

    #[test]
    fn merging_keeps_the_first_point_and_counts_duplicates() {
        let mut a = decode_batch(KUBELET_TEXT, 0, "n1").unwrap();
        let b = decode_batch(KUBELET_TEXT, 0, "n2").unwrap();
        assert_eq!(a.merge(b), 1, "the pod default/web came from both");
        assert_eq!(a.nodes.len(), 2);
    }
}
