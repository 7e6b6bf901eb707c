//! The last two scrapes and the usage computed from them, as
//! metrics-server's `nodeStorage` and `podStorage` keep them.
//!
//! [`Storage::store`] replaces the kept points with a new batch: the new
//! point becomes `last`, and the previous `last` becomes `prev` when the
//! new point is newer (otherwise an older `prev` is kept). Only what the
//! latest scrape saw is kept, so memory is bounded by the cluster's size.
//!
//! Usage ([`resource_usage`]) is CPU as the rate between `prev` and `last`
//! (nanocores = Δcumulative CPU ns / Δt s) and memory as the working set
//! of `last`; the window is Δt and the timestamp `last`'s. A node or pod
//! therefore appears only from its second scrape on. A container whose
//! cumulative CPU went down restarted: its `prev` is dropped (upstream
//! detects this from `container_start_time_seconds`, which rkube's kubelet
//! does not serve), and a pod is only reported when every container it has
//! in `last` also has a `prev`.

use std::collections::{BTreeMap, HashMap};

use super::decode::{Batch, MetricsPoint, PodRef};

/// CPU and memory usage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// CPU, nanocores (10⁻⁹ cores).
    pub cpu_nanocores: u64,
    /// Memory working set, bytes.
    pub memory_bytes: u64,
}

impl Usage {
    /// `{"cpu": "<n>n", "memory": "<n>Ki"}` with canonical quantities.
    pub fn to_json(self) -> serde_json::Value {
        serde_json::json!({"cpu": cpu_quantity(self.cpu_nanocores), "memory": memory_quantity(self.memory_bytes)})
    }
}

/// When a usage was measured: the end of its window and the window's length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeInfo {
    /// The later sample's time, nanoseconds since the epoch.
    pub timestamp_ns: i64,
    /// The time between the two samples, nanoseconds.
    pub window_ns: i64,
}

/// metrics-server's `resourceUsage`: the CPU rate between `prev` and
/// `last` and `last`'s memory. Errors (the point is skipped) when CPU went
/// down or the window is not positive.
pub fn resource_usage(last: &MetricsPoint, prev: &MetricsPoint) -> Result<(Usage, TimeInfo), &'static str> {
    if last.cumulative_cpu_ns < prev.cumulative_cpu_ns {
        return Err("unexpected decrease in cumulative CPU usage value");
    }
    let window_ns = last.timestamp_ns - prev.timestamp_ns;
    if window_ns <= 0 {
        return Err("the two samples have no time between them");
    }
    let rate = (last.cumulative_cpu_ns - prev.cumulative_cpu_ns) as f64 / (window_ns as f64 / 1e9);
    Ok((
        Usage { cpu_nanocores: rate as u64, memory_bytes: last.memory_bytes },
        TimeInfo { timestamp_ns: last.timestamp_ns, window_ns },
    ))
}

/// A pod's usage: per container (sorted by name) and the earliest
/// container time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodUsage {
    /// `(container name, usage)`.
    pub containers: Vec<(String, Usage)>,
    /// The earliest of the containers' times.
    pub time: TimeInfo,
}

/// The kept points.
#[derive(Debug, Default)]
pub struct Storage {
    nodes_last: HashMap<String, MetricsPoint>,
    nodes_prev: HashMap<String, MetricsPoint>,
    pods_last: HashMap<PodRef, BTreeMap<String, MetricsPoint>>,
    pods_prev: HashMap<PodRef, BTreeMap<String, MetricsPoint>>,
}

impl Storage {
    /// Keeps `batch` as the latest scrape (see the module docs).
    pub fn store(&mut self, batch: Batch) {
        let mut nodes_prev = HashMap::new();
        for (name, new) in &batch.nodes {
            let Some(last) = self.nodes_last.get(name) else { continue };
            if new.timestamp_ns > last.timestamp_ns {
                nodes_prev.insert(name.clone(), *last);
            } else if let Some(prev) = self.nodes_prev.get(name).filter(|p| p.timestamp_ns < new.timestamp_ns) {
                nodes_prev.insert(name.clone(), *prev);
            }
        }
        let mut pods_prev = HashMap::new();
        for (pod, containers) in &batch.pods {
            let mut prev_containers = BTreeMap::new();
            for (name, new) in containers {
                let Some(last) = self.pods_last.get(pod).and_then(|c| c.get(name)) else { continue };
                if new.cumulative_cpu_ns < last.cumulative_cpu_ns {
                    // Restarted since the last scrape: no rate across a restart.
                    continue;
                }
                if new.timestamp_ns > last.timestamp_ns {
                    prev_containers.insert(name.clone(), *last);
                } else if let Some(prev) =
                    self.pods_prev.get(pod).and_then(|c| c.get(name)).filter(|p| p.timestamp_ns < new.timestamp_ns)
                {
                    prev_containers.insert(name.clone(), *prev);
                }
            }
            if !prev_containers.is_empty() {
                pods_prev.insert(pod.clone(), prev_containers);
            }
        }
        self.nodes_last = batch.nodes;
        self.nodes_prev = nodes_prev;
        self.pods_last = batch.pods;
        self.pods_prev = pods_prev;
    }

    /// The node's usage, when the last two scrapes both saw it.
    pub fn node(&self, name: &str) -> Option<(Usage, TimeInfo)> {
        let (last, prev) = (self.nodes_last.get(name)?, self.nodes_prev.get(name)?);
        match resource_usage(last, prev) {
            Ok(usage) => Some(usage),
            Err(e) => {
                tracing::warn!(component = super::COMPONENT, node = name, error = e, "skipping node usage metric");
                None
            }
        }
    }

    /// The pod's usage, when every container of its last point has a
    /// previous one (metrics-server's `allContainersPresent`); containers
    /// whose usage cannot be computed are left out.
    pub fn pod(&self, pod: &PodRef) -> Option<PodUsage> {
        let (last, prev) = (self.pods_last.get(pod)?, self.pods_prev.get(pod)?);
        let mut usage = PodUsage::default();
        for (name, point) in last {
            let before = prev.get(name)?;
            match resource_usage(point, before) {
                Ok((u, time)) => {
                    usage.containers.push((name.clone(), u));
                    if usage.time.timestamp_ns == 0 || time.timestamp_ns < usage.time.timestamp_ns {
                        usage.time = time;
                    }
                }
                Err(e) => tracing::warn!(component = super::COMPONENT, namespace = %pod.namespace, pod = %pod.name,
                    container = %name, error = e, "skipping container usage metric"),
            }
        }
        Some(usage)
    }

    /// How many nodes and containers have usage to report (both scrapes).
    pub fn counts(&self) -> (usize, usize) {
        (self.nodes_prev.len(), self.pods_prev.values().map(BTreeMap::len).sum())
    }
}

/// A CPU quantity as metrics-server writes it: `DecimalSI` at scale −9,
/// canonical (`156273462n`, `5m`, `2`, `0`): trailing zeros move into the
/// exponent, which is then lowered to a multiple of 3 and named by its
/// suffix.
pub fn cpu_quantity(nanocores: u64) -> String {
    if nanocores == 0 {
        return "0".into();
    }
    let (mut mantissa, mut exponent) = (nanocores, -9i32);
    while mantissa % 10 == 0 {
        mantissa /= 10;
        exponent += 1;
    }
    let rem = exponent.rem_euclid(3);
    mantissa *= 10u64.pow(rem as u32);
    exponent -= rem;
    let suffix = match exponent {
        -9 => "n",
        -6 => "u",
        -3 => "m",
        0 => "",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        _ => "E",
    };
    format!("{mantissa}{suffix}")
}

/// A memory quantity as metrics-server writes it: `BinarySI`, canonical
/// (`34848Ki`, `6Mi`); values under 1024 are written as decimal
/// quantities (`512`, `1k`), as `resource.Quantity` does.
pub fn memory_quantity(bytes: u64) -> String {
    if bytes < 1024 {
        // DecimalSI at scale 0.
        let (mut mantissa, mut exponent) = (bytes, 0);
        while mantissa != 0 && mantissa % 1000 == 0 {
            mantissa /= 1000;
            exponent += 1;
        }
        return format!("{mantissa}{}", if exponent == 1 { "k" } else { "" });
    }
    let (mut mantissa, mut exponent) = (bytes, 0usize);
    while mantissa % 1024 == 0 && exponent < 6 {
        mantissa /= 1024;
        exponent += 1;
    }
    format!("{mantissa}{}", ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][exponent])
}

/// Go's `time.Duration.String()`: `15.002s`, `1m0.5s`, `1h2m3s`, `1.5ms`,
/// `0s`; what `metav1.Duration` (the `window` field) writes.
pub fn go_duration(ns: i64) -> String {
    if ns == 0 {
        return "0s".into();
    }
    let sign = if ns < 0 { "-" } else { "" };
    let u = ns.unsigned_abs();
    let fraction = |value: u64, digits: u32| -> String {
        let unit = 10u64.pow(digits);
        let frac = format!("{:0width$}", value % unit, width = digits as usize);
        let frac = frac.trim_end_matches('0');
        if frac.is_empty() {
            format!("{}", value / unit)
        } else {
            format!("{}.{frac}", value / unit)
        }
    };
    if u < 1_000_000_000 {
        let (digits, unit) = match u {
            0..1_000 => (0, "ns"),
            1_000..1_000_000 => (3, "µs"),
            _ => (6, "ms"),
        };
        return format!("{sign}{}{unit}", fraction(u, digits));
    }
    let seconds = u / 1_000_000_000;
    let (h, m) = (seconds / 3600, (seconds / 60) % 60);
    let s = fraction(u % 60_000_000_000, 9);
    if h > 0 {
        format!("{sign}{h}h{m}m{s}s")
    } else if m > 0 {
        format!("{sign}{m}m{s}s")
    } else {
        format!("{sign}{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(ts_s: f64, cpu_s: f64, mem: u64) -> MetricsPoint {
        MetricsPoint { timestamp_ns: (ts_s * 1e9) as i64, cumulative_cpu_ns: (cpu_s * 1e9) as u64, memory_bytes: mem }
    }

    fn batch(node: Option<MetricsPoint>, pods: &[(&str, &[(&str, MetricsPoint)])]) -> Batch {
        let mut b = Batch::default();
        if let Some(n) = node {
            b.nodes.insert("n1".into(), n);
        }
        for (pod, containers) in pods {
            b.pods.insert(PodRef::new("default", pod), containers.iter().map(|(c, p)| (c.to_string(), *p)).collect());
        }
        b
    }

    /// The rate is ΔCPU/Δt: 1.5 core-seconds over 15 s is 100m; memory is
    /// the later working set; the window and timestamp come from the samples.
    #[test]
    fn cpu_is_the_rate_between_two_samples() {
        let (usage, time) = resource_usage(&point(115.0, 11.5, 2048), &point(100.0, 10.0, 1024)).unwrap();
        assert_eq!(usage, Usage { cpu_nanocores: 100_000_000, memory_bytes: 2048 });
        assert_eq!(time, TimeInfo { timestamp_ns: 115_000_000_000, window_ns: 15_000_000_000 });
        assert_eq!(usage.to_json(), serde_json::json!({"cpu": "100m", "memory": "2Ki"}));
        assert!(resource_usage(&point(115.0, 9.0, 1), &point(100.0, 10.0, 1)).is_err(), "CPU went down");
        assert!(resource_usage(&point(100.0, 10.0, 1), &point(100.0, 10.0, 1)).is_err(), "no window");
    }

    /// Nodes and pods appear from their second scrape; a pod whose
    /// container restarted (CPU went down) or gained a container waits for
    /// the next one; what the last scrape did not see is forgotten.
    #[test]
    fn usage_needs_two_scrapes_and_follows_restarts() {
        let mut s = Storage::default();
        s.store(batch(Some(point(0.0, 100.0, 4096)), &[("web", &[("c", point(0.0, 1.0, 1024))])]));
        assert_eq!(s.node("n1"), None);
        assert_eq!(s.pod(&PodRef::new("default", "web")), None);

        s.store(batch(Some(point(10.0, 105.0, 8192)), &[("web", &[("c", point(10.0, 3.0, 2048))])]));
        let (node, time) = s.node("n1").unwrap();
        assert_eq!(node, Usage { cpu_nanocores: 500_000_000, memory_bytes: 8192 });
        assert_eq!(time.window_ns, 10_000_000_000);
        let web = s.pod(&PodRef::new("default", "web")).unwrap();
        assert_eq!(web.containers, [("c".to_string(), Usage { cpu_nanocores: 200_000_000, memory_bytes: 2048 })]);
        assert_eq!(s.counts(), (1, 1));

        // The same samples again (the kubelet had nothing newer): prev is kept.
        s.store(batch(Some(point(10.0, 105.0, 8192)), &[("web", &[("c", point(10.0, 3.0, 2048))])]));
        assert_eq!(s.node("n1").unwrap().0.cpu_nanocores, 500_000_000);

        // Restarted container, and a new sidecar: not reported this time.
        s.store(batch(
            Some(point(20.0, 110.0, 8192)),
            &[("web", &[("c", point(20.0, 0.5, 2048)), ("side", point(20.0, 0.1, 1024))])],
        ));
        assert_eq!(s.pod(&PodRef::new("default", "web")), None);
        s.store(batch(
            Some(point(30.0, 111.0, 8192)),
            &[("web", &[("c", point(30.0, 1.5, 2048)), ("side", point(30.0, 0.2, 1024))])],
        ));
        let web = s.pod(&PodRef::new("default", "web")).unwrap();
        assert_eq!(web.containers.iter().map(|(c, _)| c.as_str()).collect::<Vec<_>>(), ["c", "side"]);
        assert_eq!(web.containers[1].1.cpu_nanocores, 10_000_000);

        // Gone from the last scrape: gone.
        s.store(batch(None, &[]));
        assert_eq!(s.node("n1"), None);
        assert_eq!(s.counts(), (0, 0));
    }

    /// `resource.Quantity` canonical forms of metrics-server's quantities.
    #[test]
    fn quantities_are_canonical() {
        assert_eq!(cpu_quantity(0), "0");
        assert_eq!(cpu_quantity(156_273_462), "156273462n");
        assert_eq!(cpu_quantity(5_000_000), "5m");
        assert_eq!(cpu_quantity(5_100_000), "5100u");
        assert_eq!(cpu_quantity(1_000_000_000), "1");
        assert_eq!(cpu_quantity(1_230_000_000), "1230m");
        assert_eq!(cpu_quantity(20_000_000_000_000), "20k");
        assert_eq!(memory_quantity(0), "0");
        assert_eq!(memory_quantity(512), "512");
        assert_eq!(memory_quantity(1000), "1k");
        assert_eq!(memory_quantity(1024), "1Ki");
        assert_eq!(memory_quantity(35_684_352), "34848Ki");
        assert_eq!(memory_quantity(6 * 1024 * 1024), "6Mi");
        assert_eq!(memory_quantity(12_345), "12345");
    }

    #[test]
    fn windows_print_as_go_durations() {
        assert_eq!(go_duration(0), "0s");
        assert_eq!(go_duration(15_002_000_000), "15.002s");
        assert_eq!(go_duration(15_000_000_000), "15s");
        assert_eq!(go_duration(60_500_000_000), "1m0.5s");
        assert_eq!(go_duration(3_723_000_000_000), "1h2m3s");
        assert_eq!(go_duration(1_500_000), "1.5ms");
        assert_eq!(go_duration(999), "999ns");
        assert_eq!(go_duration(2_000), "2µs");
    }
}
