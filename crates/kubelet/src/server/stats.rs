//! `/stats/summary` (upstream's `statsapi.Summary` JSON) and
//! `/metrics/resource` (upstream's resource metrics in Prometheus text,
//! what metrics-server scrapes for `kubectl top`). Node figures come from
//! `/proc/stat`, `/proc/meminfo` and `statvfs("/")`; container figures from
//! the runtime (CRI `ListContainerStats`), pods' as the sums of their
//! containers'.

use std::collections::BTreeMap;
use std::sync::Mutex;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::{text, AppState};
use crate::cri::{v1, CriClient};
use crate::pods::labels;

/// Cumulative node CPU time and when it was read, to derive a rate.
#[derive(Default)]
pub struct CpuSampler(Mutex<Option<(std::time::Instant, u64)>>);

impl CpuSampler {
    /// Records `total_ns` now; the usage rate (nanocores) since the
    /// previous sample, if there was one at least 100 ms ago.
    fn rate(&self, total_ns: u64) -> Option<u64> {
        let now = std::time::Instant::now();
        let mut last = self.0.lock().unwrap();
        let rate = last.and_then(|(at, prev)| {
            let dt = now.duration_since(at).as_nanos() as u64;
            (dt >= 100_000_000).then(|| total_ns.saturating_sub(prev) * 1_000_000_000 / dt)
        });
        if rate.is_some() || last.is_none() {
            *last = Some((now, total_ns));
        }
        rate
    }
}

/// Node CPU time in nanoseconds (all CPUs, busy time) and boot time.
pub fn node_cpu() -> Option<(u64, i64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = line.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal
    let busy: u64 = f.iter().enumerate().filter(|(i, _)| *i != 3 && *i != 4 && *i < 8).map(|(_, v)| v).sum();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    let boot = stat.lines().find_map(|l| l.strip_prefix("btime ")).and_then(|v| v.trim().parse().ok()).unwrap_or(0);
    Some((busy * (1_000_000_000 / hz), boot))
}

/// Node memory from `/proc/meminfo` in bytes: (capacity, usage, working set, rss, available).
pub fn node_memory() -> Option<(u64, u64, u64, u64, u64)> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb = |key: &str| -> u64 {
        info.lines()
            .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix(':')))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0)
            * 1024
    };
    let total = kb("MemTotal");
    let usage = total.saturating_sub(kb("MemFree"));
    let working_set = usage.saturating_sub(kb("Inactive(file)"));
    Some((total, usage, working_set, kb("AnonPages"), total.saturating_sub(working_set)))
}

/// `statvfs` of `path`: (capacity, available, used, inodes, inodes free).
fn filesystem(path: &str) -> Option<(u64, u64, u64, u64, u64)> {
    let c = std::ffi::CString::new(path).ok()?;
    // SAFETY: a valid C string and a zeroed out-struct.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return None;
    }
    let bs = s.f_frsize as u64;
    let cap = s.f_blocks as u64 * bs;
    let avail = s.f_bavail as u64 * bs;
    let used = cap.saturating_sub(s.f_bfree as u64 * bs);
    Some((cap, avail, used, s.f_files as u64, s.f_ffree as u64))
}

fn rfc3339(ns: i64) -> String {
    jiff::Timestamp::from_nanosecond(ns as i128).map(|t| t.to_string()).unwrap_or_default()
}

/// One container's figures.
#[derive(Debug, Clone, Default)]
pub struct ContainerUsage {
    /// Namespace of its pod.
    pub namespace: String,
    /// Its pod's name.
    pub pod: String,
    /// Its pod's UID.
    pub pod_uid: String,
    /// The container name.
    pub name: String,
    /// When the stats were taken (ns since the epoch).
    pub timestamp: i64,
    /// Cumulative CPU time (ns).
    pub cpu_ns: Option<u64>,
    /// CPU rate (nanocores).
    pub nano_cores: Option<u64>,
    /// Memory working set (bytes).
    pub working_set: Option<u64>,
    /// Memory usage (bytes).
    pub memory_usage: Option<u64>,
    /// Writable layer usage (bytes).
    pub rootfs_used: Option<u64>,
}

/// The running containers' usage from the runtime.
pub async fn container_usage(cri: &CriClient) -> Result<Vec<ContainerUsage>, crate::cri::CriError> {
    let stats = cri.list_container_stats(None).await?;
    let val = |v: &Option<v1::UInt64Value>| v.as_ref().map(|v| v.value);
    Ok(stats
        .into_iter()
        .filter_map(|s| {
            let attrs = s.attributes?;
            let l = |k: &str| attrs.labels.get(k).cloned().unwrap_or_default();
            let cpu = s.cpu.unwrap_or_default();
            let mem = s.memory.unwrap_or_default();
            Some(ContainerUsage {
                namespace: l(labels::POD_NAMESPACE),
                pod: l(labels::POD_NAME),
                pod_uid: l(labels::POD_UID),
                name: attrs.metadata.map(|m| m.name).unwrap_or_else(|| l(labels::CONTAINER_NAME)),
                timestamp: cpu.timestamp.max(mem.timestamp),
                cpu_ns: val(&cpu.usage_core_nano_seconds),
                nano_cores: val(&cpu.usage_nano_cores),
                working_set: val(&mem.working_set_bytes),
                memory_usage: val(&mem.usage_bytes),
                rootfs_used: s.writable_layer.as_ref().and_then(|w| val(&w.used_bytes)),
            })
        })
        .filter(|c| !c.pod.is_empty())
        .collect())
}

/// `GET /stats/summary`.
pub(crate) async fn summary(State(state): State<AppState>) -> Response {
    let now = jiff::Timestamp::now();
    let now_ns = now.as_nanosecond() as i64;
    let mut node = json!({ "nodeName": state.node_name });
    if let Some((cpu_ns, boot)) = node_cpu() {
        node["startTime"] = json!(rfc3339(boot * 1_000_000_000));
        let mut cpu = json!({ "time": now.to_string(), "usageCoreNanoSeconds": cpu_ns });
        if let Some(rate) = state.cpu.rate(cpu_ns) {
            cpu["usageNanoCores"] = json!(rate);
        }
        node["cpu"] = cpu;
    }
    if let Some((_, usage, ws, rss, avail)) = node_memory() {
        node["memory"] = json!({ "time": now.to_string(), "availableBytes": avail, "usageBytes": usage,
            "workingSetBytes": ws, "rssBytes": rss });
    }
    if let Some((cap, avail, used, inodes, free)) = filesystem("/") {
        node["fs"] = json!({ "time": now.to_string(), "availableBytes": avail, "capacityBytes": cap,
            "usedBytes": used, "inodesFree": free, "inodes": inodes, "inodesUsed": inodes.saturating_sub(free) });
    }
    let usage = match container_usage(&state.cri).await {
        Ok(u) => u,
        Err(e) => return text(StatusCode::INTERNAL_SERVER_ERROR, format!("failed to get container stats: {e}")),
    };
    let mut pods: BTreeMap<(String, String, String), Vec<ContainerUsage>> = BTreeMap::new();
    for c in usage {
        pods.entry((c.namespace.clone(), c.pod.clone(), c.pod_uid.clone())).or_default().push(c);
    }
    let pods: Vec<Value> = pods
        .into_iter()
        .map(|((namespace, name, uid), containers)| {
            let time = |c: &ContainerUsage| rfc3339(if c.timestamp > 0 { c.timestamp } else { now_ns });
            let items: Vec<Value> = containers
                .iter()
                .map(|c| {
                    json!({
                        "name": c.name,
                        "cpu": { "time": time(c), "usageNanoCores": c.nano_cores, "usageCoreNanoSeconds": c.cpu_ns },
                        "memory": { "time": time(c), "usageBytes": c.memory_usage, "workingSetBytes": c.working_set },
                        "rootfs": { "time": time(c), "usedBytes": c.rootfs_used },
                    })
                })
                .collect();
            let sum = |f: fn(&ContainerUsage) -> Option<u64>| containers.iter().filter_map(f).sum::<u64>();
            json!({
                "podRef": { "name": name, "namespace": namespace, "uid": uid },
                "containers": items,
                "cpu": { "time": now.to_string(), "usageNanoCores": sum(|c| c.nano_cores),
                         "usageCoreNanoSeconds": sum(|c| c.cpu_ns) },
                "memory": { "time": now.to_string(), "usageBytes": sum(|c| c.memory_usage),
                            "workingSetBytes": sum(|c| c.working_set) },
            })
        })
        .collect();
    ([("content-type", "application/json")], json!({ "node": node, "pods": pods }).to_string()).into_response()
}

/// Prometheus label value escaping.
fn esc(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Renders the resource metrics (upstream's names and help texts).
pub fn render_metrics(
    node: Option<(u64, u64)>,
    containers: &[ContainerUsage],
    scrape_error: bool,
    now_ms: i64,
) -> String {
    let mut out = String::new();
    let mut family = |name: &str, kind: &str, help: &str, rows: Vec<(String, f64, i64)>| {
        if rows.is_empty() {
            return;
        }
        out.push_str(&format!("# HELP {name} [STABLE] {help}\n# TYPE {name} {kind}\n"));
        for (labels, v, ts) in rows {
            out.push_str(&format!("{name}{labels} {v} {ts}\n"));
        }
    };
    let cl = |c: &ContainerUsage| {
        format!("{{container=\"{}\",namespace=\"{}\",pod=\"{}\"}}", esc(&c.name), esc(&c.namespace), esc(&c.pod))
    };
    let ts = |c: &ContainerUsage| if c.timestamp > 0 { c.timestamp / 1_000_000 } else { now_ms };
    family(
        "container_cpu_usage_seconds_total",
        "counter",
        "Cumulative cpu time consumed by the container in core-seconds",
        containers.iter().filter_map(|c| c.cpu_ns.map(|v| (cl(c), v as f64 / 1e9, ts(c)))).collect(),
    );
    family(
        "container_memory_working_set_bytes",
        "gauge",
        "Current working set of the container in bytes",
        containers.iter().filter_map(|c| c.working_set.map(|v| (cl(c), v as f64, ts(c)))).collect(),
    );
    if let Some((cpu_ns, ws)) = node {
        family(
            "node_cpu_usage_seconds_total",
            "counter",
            "Cumulative cpu time consumed by the node in core-seconds",
            vec![(String::new(), cpu_ns as f64 / 1e9, now_ms)],
        );
        family(
            "node_memory_working_set_bytes",
            "gauge",
            "Current working set of the node in bytes",
            vec![(String::new(), ws as f64, now_ms)],
        );
    }
    let mut pods: BTreeMap<(String, String), (u64, u64, i64)> = BTreeMap::new();
    for c in containers {
        let e = pods.entry((c.namespace.clone(), c.pod.clone())).or_default();
        e.0 += c.cpu_ns.unwrap_or(0);
        e.1 += c.working_set.unwrap_or(0);
        e.2 = e.2.max(ts(c));
    }
    let pl = |(ns, p): &(String, String)| format!("{{namespace=\"{}\",pod=\"{}\"}}", esc(ns), esc(p));
    family(
        "pod_cpu_usage_seconds_total",
        "counter",
        "Cumulative cpu time consumed by the pod in core-seconds",
        pods.iter().map(|(k, v)| (pl(k), v.0 as f64 / 1e9, v.2)).collect(),
    );
    family(
        "pod_memory_working_set_bytes",
        "gauge",
        "Current working set of the pod in bytes",
        pods.iter().map(|(k, v)| (pl(k), v.1 as f64, v.2)).collect(),
    );
    out.push_str(
        "# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise\n",
    );
    out.push_str("# TYPE resource_scrape_error gauge\n");
    out.push_str(&format!("resource_scrape_error {}\n", u8::from(scrape_error)));
    out
}

/// `GET /metrics/resource`.
pub(crate) async fn metrics_resource(State(state): State<AppState>) -> Response {
    let now_ms = jiff::Timestamp::now().as_millisecond();
    let node = node_cpu().zip(node_memory()).map(|((cpu, _), (_, _, ws, _, _))| (cpu, ws));
    let (containers, error) = match container_usage(&state.cri).await {
        Ok(c) => (c, false),
        Err(e) => {
            tracing::warn!(component = "kubelet", error = %e, "resource metrics: container stats failed");
            (Vec::new(), true)
        }
    };
    let body = render_metrics(node, &containers, error, now_ms);
    ([("content-type", "text/plain; version=0.0.4; charset=utf-8")], body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Upstream's resource metric names, labels and millisecond timestamps.
    #[test]
    fn metrics_text() {
        let c = ContainerUsage {
            namespace: "default".into(),
            pod: "web".into(),
            pod_uid: "u".into(),
            name: "c".into(),
            timestamp: 1_700_000_000_123_000_000,
            cpu_ns: Some(1_500_000_000),
            working_set: Some(4096),
            ..Default::default()
        };
        let text = render_metrics(Some((2_000_000_000, 1024)), &[c], false, 1_700_000_000_999);
        assert!(text.contains(
            "container_cpu_usage_seconds_total{container=\"c\",namespace=\"default\",pod=\"web\"} 1.5 1700000000123\n"
        ));
        assert!(text
            .contains("container_memory_working_set_bytes{container=\"c\",namespace=\"default\",pod=\"web\"} 4096 1700000000123\n"));
        assert!(text.contains("node_cpu_usage_seconds_total 2 1700000000999\n"));
        assert!(text.contains("node_memory_working_set_bytes 1024 1700000000999\n"));
        assert!(text.contains("pod_cpu_usage_seconds_total{namespace=\"default\",pod=\"web\"} 1.5 1700000000123\n"));
        assert!(text.contains("pod_memory_working_set_bytes{namespace=\"default\",pod=\"web\"} 4096 1700000000123\n"));
        assert!(text.ends_with("resource_scrape_error 0\n"));
        assert!(node_cpu().is_some() && node_memory().is_some() && filesystem("/").is_some());
    }
}
