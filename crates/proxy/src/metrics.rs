//! Prometheus text metrics with upstream kube-proxy's names
//! (`kubeproxy_sync_proxy_rules_duration_seconds` and friends), served on
//! `GET /metrics` by a minimal HTTP/1.1 responder.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::rules::SyncKind;
use crate::ProxyError;

/// Upstream's buckets: exponential from 1 ms, factor 2, 15 buckets.
const BUCKETS: usize = 15;

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS],
    count: u64,
    sum: f64,
}

impl Histogram {
    fn observe(&mut self, secs: f64) {
        for (i, c) in self.counts.iter_mut().enumerate() {
            if secs <= 0.001 * f64::powi(2.0, i as i32) {
                *c += 1;
            }
        }
        self.count += 1;
        self.sum += secs;
    }
    fn render(&self, name: &str, help: &str, out: &mut String) {
        use std::fmt::Write;
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        for (i, c) in self.counts.iter().enumerate() {
            let _ = writeln!(out, "{name}_bucket{{le=\"{}\"}} {c}", 0.001 * f64::powi(2.0, i as i32));
        }
        let _ = writeln!(
            out,
            "{name}_bucket{{le=\"+Inf\"}} {}\n{name}_sum {}\n{name}_count {}",
            self.count, self.sum, self.count
        );
    }
}

/// The proxy's metrics.
#[derive(Default)]
pub(crate) struct Metrics {
    all: Mutex<Histogram>,
    full: Mutex<Histogram>,
    partial: Mutex<Histogram>,
    last: AtomicU64,
    failures: AtomicU64,
}

impl Metrics {
    pub(crate) fn observe(&self, kind: SyncKind, d: Duration) {
        let s = d.as_secs_f64();
        self.all.lock().unwrap().observe(s);
        match kind {
            SyncKind::Partial => self.partial.lock().unwrap().observe(s),
            _ => self.full.lock().unwrap().observe(s),
        }
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        self.last.store(now, Ordering::Relaxed);
    }

    pub(crate) fn failure(&self) {
        self.failures.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        self.all.lock().unwrap().render(
            "kubeproxy_sync_proxy_rules_duration_seconds",
            "SyncProxyRules latency in seconds",
            &mut out,
        );
        self.full.lock().unwrap().render(
            "kubeproxy_sync_full_proxy_rules_duration_seconds",
            "SyncProxyRules latency in seconds for full resyncs",
            &mut out,
        );
        self.partial.lock().unwrap().render(
            "kubeproxy_sync_partial_proxy_rules_duration_seconds",
            "SyncProxyRules latency in seconds for partial resyncs",
            &mut out,
        );
        out.push_str(&format!(
            "# HELP kubeproxy_sync_proxy_rules_last_timestamp_seconds The last time proxy rules were successfully synced\n# TYPE kubeproxy_sync_proxy_rules_last_timestamp_seconds gauge\nkubeproxy_sync_proxy_rules_last_timestamp_seconds {}\n",
            self.last.load(Ordering::Relaxed)
        ));
        out.push_str(&format!(
            "# HELP kubeproxy_sync_proxy_rules_nftables_sync_failures_total Cumulative proxy nftables sync failures\n# TYPE kubeproxy_sync_proxy_rules_nftables_sync_failures_total counter\nkubeproxy_sync_proxy_rules_nftables_sync_failures_total {}\n",
            self.failures.load(Ordering::Relaxed)
        ));
        out
    }
}

/// Binds `addr` and returns the serving future.
pub(crate) async fn serve(
    addr: SocketAddr,
    metrics: Arc<Metrics>,
) -> Result<impl std::future::Future<Output = ()> + Send, ProxyError> {
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        ProxyError::Other(format!("cannot listen for metrics on {addr}: {e} (pick a free address or disable metrics)"))
    })?;
    Ok(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else { continue };
            let metrics = metrics.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 2048];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                let req = String::from_utf8_lossy(&buf[..n]);
                let path = req.split_whitespace().nth(1).unwrap_or("");
                let (status, body) = if path == "/metrics" {
                    ("200 OK", metrics.render())
                } else if path == "/healthz" {
                    ("200 OK", "ok".to_string())
                } else {
                    ("404 Not Found", "not found\n".to_string())
                };
                let resp = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_is_cumulative() {
        let m = Metrics::default();
        m.observe(SyncKind::Partial, Duration::from_millis(3));
        let text = m.render();
        assert!(text.contains("kubeproxy_sync_proxy_rules_duration_seconds_bucket{le=\"0.002\"} 0"));
        assert!(text.contains("kubeproxy_sync_proxy_rules_duration_seconds_bucket{le=\"0.004\"} 1"));
        assert!(text.contains("kubeproxy_sync_partial_proxy_rules_duration_seconds_count 1"));
        assert!(text.contains("kubeproxy_sync_full_proxy_rules_duration_seconds_count 0"));
    }
}
