//! Probe kinds, results and the outcome of one probe run (upstream's
//! `pkg/probe` Result and `pkg/kubelet/prober/results`), plus the Go-style
//! formatting the upstream messages are made of.

use std::time::Duration;

/// Which probe of a container (upstream's `probeType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProbeKind {
    /// `livenessProbe`: failing past the threshold restarts the container.
    Liveness,
    /// `readinessProbe`: gates the container's (and the pod's) Ready condition.
    Readiness,
    /// `startupProbe`: gates liveness and readiness until it succeeds once.
    Startup,
}

impl ProbeKind {
    /// The capitalised name event messages start with (`Liveness probe failed: …`).
    pub fn title(self) -> &'static str {
        match self {
            ProbeKind::Liveness => "Liveness",
            ProbeKind::Readiness => "Readiness",
            ProbeKind::Startup => "Startup",
        }
    }

    /// The lower-case name `take_failed` reports (`liveness` | `startup` | `readiness`).
    pub fn name(self) -> &'static str {
        match self {
            ProbeKind::Liveness => "liveness",
            ProbeKind::Readiness => "readiness",
            ProbeKind::Startup => "startup",
        }
    }

    /// The cached value a new container starts with: readiness starts as a
    /// failure (not ready), liveness as a success, startup as unknown.
    pub fn initial(self) -> ProbeResult {
        match self {
            ProbeKind::Liveness => ProbeResult::Success,
            ProbeKind::Readiness => ProbeResult::Failure,
            ProbeKind::Startup => ProbeResult::Unknown,
        }
    }
}

/// The cached result of a probe for one container instance (upstream's `results.Result`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeResult {
    /// Not probed yet (startup probe of a new container).
    Unknown,
    /// The probe passed (successThreshold times in a row).
    Success,
    /// The probe failed (failureThreshold times in a row).
    Failure,
}

/// What one run of a handler found (upstream's `probe.Result` with its
/// output and error). The strings are the output upstream puts in events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Passed; the output (exec stdout+stderr, HTTP body) is only logged.
    Success(String),
    /// Passed with a warning (an HTTP redirect to another host was not followed):
    /// a `ProbeWarning` event `<Kind> probe warning: <output>`.
    Warning(String),
    /// Failed: an `Unhealthy` event `<Kind> probe failed: <output>`.
    Failure(String),
    /// The probe could not be run (bad port, runtime error): an `Unhealthy`
    /// event `<Kind> probe errored and resulted in unknown state: <error>`, and
    /// the result is thrown away.
    Error(String),
}

/// Upstream caps exec output and HTTP bodies at 10 KiB.
pub const MAX_OUTPUT: usize = 10 * 1024;

/// The `User-Agent` of HTTP and gRPC probes (upstream: `kube-probe/<major>.<minor>`).
pub const USER_AGENT: &str = "kube-probe/1.33";

/// `s` quoted as Go's `%q` does (for the `command "…" timed out` message).
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A whole-second duration as Go's `time.Duration.String` prints it (`1s`, `1m30s`, `1h0m0s`).
pub fn go_duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{}s", s / 60, s % 60),
        _ => format!("{}h{}m{}s", s / 3600, (s % 3600) / 60, s % 60),
    }
}

/// An OS error as Go's `syscall.Errno` prints it (`connection refused`),
/// other errors as they are.
pub fn go_io_error(e: &std::io::Error) -> String {
    if e.raw_os_error().is_some() {
        let s = e.to_string();
        let s = s.split(" (os error").next().unwrap_or(&s).to_string();
        let mut c = s.chars();
        return match c.next() {
            Some(f) => f.to_lowercase().chain(c).collect(),
            None => s,
        };
    }
    e.to_string()
}

/// `host:port`, with IPv6 literals bracketed (Go's `net.JoinHostPort`).
pub fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_formatting_matches_upstream() {
        assert_eq!(go_quote("sh -c \"exit 1\""), r#""sh -c \"exit 1\"""#);
        assert_eq!(go_duration(Duration::from_secs(1)), "1s");
        assert_eq!(go_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(go_duration(Duration::from_secs(3600)), "1h0m0s");
        let refused = std::io::Error::from_raw_os_error(libc::ECONNREFUSED);
        assert_eq!(go_io_error(&refused), "connection refused");
        assert_eq!(join_host_port("::1", 80), "[::1]:80");
        assert_eq!(join_host_port("10.0.0.5", 80), "10.0.0.5:80");
    }

    #[test]
    fn initial_results_follow_upstream() {
        assert_eq!(ProbeKind::Readiness.initial(), ProbeResult::Failure);
        assert_eq!(ProbeKind::Liveness.initial(), ProbeResult::Success);
        assert_eq!(ProbeKind::Startup.initial(), ProbeResult::Unknown);
    }
}
