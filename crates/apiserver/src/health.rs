//! `/healthz`, `/livez`, `/readyz` and their per-check pages, in the format
//! of upstream's `k8s.io/apiserver/pkg/server/healthz`:
//!
//! - healthy, plain: `200 ok`;
//! - healthy, `?verbose`: one `[+]<check> ok` line per check, then
//!   `<endpoint> check passed`;
//! - unhealthy (always verbose): `[-]<check> failed: reason withheld` for the
//!   failing checks (the reason only goes to the log), then
//!   `<endpoint> check failed`, status 500;
//! - `?exclude=<check>` (repeatable) skips a check: `[+]<check> excluded: ok`;
//!   unknown names add `warn: some health checks cannot be excluded: no
//!   matches for "<name>"`;
//! - `/<endpoint>/<check>`: `ok`, or 500 `internal server error: <reason>`.
//!
//! Checks per endpoint, as kube-apiserver registers them (minus the ones for
//! machinery rkube does not have yet): `/healthz` and `/livez` run `ping`,
//! `log`, `etcd`; `/readyz` adds `etcd-readiness` and `shutdown` (which
//! fails once graceful shutdown has begun, so load balancers stop sending
//! traffic).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use rkube_store::SharedStore;

use crate::COMPONENT;

/// Upstream's default `--etcd-healthcheck-timeout` and `--etcd-readycheck-timeout`.
pub const STORE_CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// One health endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// `/healthz` (deprecated upstream, still served).
    Healthz,
    /// `/livez`: should the process be restarted?
    Livez,
    /// `/readyz`: should traffic be sent here?
    Readyz,
}

impl Endpoint {
    /// The path segment and the word used in `<name> check passed`.
    pub fn name(self) -> &'static str {
        match self {
            Endpoint::Healthz => "healthz",
            Endpoint::Livez => "livez",
            Endpoint::Readyz => "readyz",
        }
    }

    /// The checks this endpoint runs, in output order.
    pub fn checks(self) -> &'static [Check] {
        match self {
            Endpoint::Healthz | Endpoint::Livez => &[Check::Ping, Check::Log, Check::Etcd],
            Endpoint::Readyz => &[Check::Ping, Check::Log, Check::Etcd, Check::EtcdReadiness, Check::Shutdown],
        }
    }

    /// The check of this endpoint called `name`, if any.
    pub fn check(self, name: &str) -> Option<Check> {
        self.checks().iter().copied().find(|c| c.name() == name)
    }
}

/// One named health check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// Always passes: the server answers HTTP.
    Ping,
    /// Logging is not blocked (always passes: tracing never blocks callers).
    Log,
    /// The store answers a read (`current_revision`) within [`STORE_CHECK_TIMEOUT`].
    /// Named `etcd` as upstream, whichever backend is configured.
    Etcd,
    /// Same read, for readiness (upstream's `etcd-readiness`).
    EtcdReadiness,
    /// Fails once graceful shutdown has started.
    Shutdown,
}

impl Check {
    /// The name shown in output and used in `/<endpoint>/<name>`.
    pub fn name(self) -> &'static str {
        match self {
            Check::Ping => "ping",
            Check::Log => "log",
            Check::Etcd => "etcd",
            Check::EtcdReadiness => "etcd-readiness",
            Check::Shutdown => "shutdown",
        }
    }
}

/// The server's health state; cheap to clone and shared by handlers and
/// the process that waits for readiness.
#[derive(Clone)]
pub struct Health {
    inner: Arc<Inner>,
}

struct Inner {
    store: SharedStore,
    shutting_down: AtomicBool,
    store_timeout: Duration,
}

/// The outcome of running an endpoint's checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// Which endpoint ran.
    pub endpoint: Endpoint,
    /// The `[+]…`/`[-]…` lines (and any `warn:` line), each ending in `\n`.
    pub lines: String,
    /// Names of the failed checks with their (log-only) reasons.
    pub failures: Vec<(&'static str, String)>,
}

impl Report {
    /// True when no check failed.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }

    /// The failed checks with their reasons, e.g. `[-]etcd failed: <reason>; …`
    /// (for logs only: responses withhold reasons).
    pub fn failure_summary(&self) -> String {
        let detail: Vec<String> = self.failures.iter().map(|(n, r)| format!("[-]{n} failed: {r}")).collect();
        detail.join("; ")
    }

    /// The HTTP response upstream gives for this report (see module docs).
    pub fn into_response(self, verbose: bool) -> Response {
        let name = self.endpoint.name();
        if !self.passed() {
            return text(StatusCode::INTERNAL_SERVER_ERROR, format!("{}{name} check failed\n", self.lines));
        }
        if verbose {
            text(StatusCode::OK, format!("{}{name} check passed\n", self.lines))
        } else {
            text(StatusCode::OK, "ok".to_string())
        }
    }
}

impl Health {
    /// Health over `store`, with the default store check timeout.
    pub fn new(store: SharedStore) -> Self {
        Self::with_store_timeout(store, STORE_CHECK_TIMEOUT)
    }

    /// Health over `store`, giving each store check `store_timeout`.
    pub fn with_store_timeout(store: SharedStore, store_timeout: Duration) -> Self {
        Health { inner: Arc::new(Inner { store, shutting_down: AtomicBool::new(false), store_timeout }) }
    }

    /// Marks the server as shutting down: `/readyz` fails from now on.
    pub fn start_shutdown(&self) {
        self.inner.shutting_down.store(true, Ordering::SeqCst);
    }

    /// Runs one check; `Err` carries the reason (for logs and the
    /// single-check page).
    pub async fn run(&self, check: Check) -> Result<(), String> {
        match check {
            Check::Ping | Check::Log => Ok(()),
            Check::Etcd | Check::EtcdReadiness => {
                match tokio::time::timeout(self.inner.store_timeout, self.inner.store.current_revision()).await {
                    Ok(Ok(_)) => Ok(()),
                    Ok(Err(e)) => Err(format!("error reading from the store: {e}")),
                    Err(_) => Err(format!("the store did not answer within {:?}", self.inner.store_timeout)),
                }
            }
            Check::Shutdown => {
                if self.inner.shutting_down.load(Ordering::SeqCst) {
                    Err("process is shutting down".into())
                } else {
                    Ok(())
                }
            }
        }
    }

    /// Runs every check of `endpoint` except the `excluded` ones, in order.
    pub async fn evaluate(&self, endpoint: Endpoint, excluded: &[String]) -> Report {
        let mut excluded: BTreeSet<&str> = excluded.iter().map(String::as_str).collect();
        let mut lines = String::new();
        let mut failures = Vec::new();
        for check in endpoint.checks() {
            let name = check.name();
            if excluded.remove(name) {
                lines.push_str(&format!("[+]{name} excluded: ok\n"));
                continue;
            }
            match self.run(*check).await {
                Ok(()) => lines.push_str(&format!("[+]{name} ok\n")),
                Err(reason) => {
                    lines.push_str(&format!("[-]{name} failed: reason withheld\n"));
                    failures.push((name, reason));
                }
            }
        }
        if !excluded.is_empty() {
            let quoted: Vec<String> = excluded.iter().map(|n| format!("{n:?}")).collect();
            lines.push_str(&format!(
                "warn: some health checks cannot be excluded: no matches for {}\n",
                quoted.join(",")
            ));
        }
        Report { endpoint, lines, failures }
    }
}

/// `GET /<endpoint>[?verbose][&exclude=<check>…]`.
pub(crate) async fn root(health: &Health, endpoint: Endpoint, query: Option<&str>) -> Response {
    let params = parse_query(query.unwrap_or(""));
    let verbose = params.iter().any(|(k, _)| k == "verbose");
    let excluded: Vec<String> = params.into_iter().filter(|(k, _)| k == "exclude").map(|(_, v)| v).collect();
    let report = health.evaluate(endpoint, &excluded).await;
    if !report.passed() {
        // The reasons are withheld from the (unauthenticated) response but
        // logged, as upstream does at -v=2.
        tracing::debug!(component = COMPONENT, endpoint = endpoint.name(), failed = %report.failure_summary(), "{} check failed", endpoint.name());
    }
    report.into_response(verbose)
}

/// `GET /<endpoint>/<check>`; `None` when the endpoint has no such check.
pub(crate) async fn single(health: &Health, endpoint: Endpoint, name: &str) -> Option<Response> {
    let check = endpoint.check(name)?;
    Some(match health.run(check).await {
        Ok(()) => text(StatusCode::OK, "ok".into()),
        Err(reason) => text(StatusCode::INTERNAL_SERVER_ERROR, format!("internal server error: {reason}\n")),
    })
}

/// A plain-text response with the headers Go's `http.Error` and upstream's
/// healthz handler set.
fn text(code: StatusCode, body: String) -> Response {
    let mut resp = (code, body).into_response();
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    headers.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    resp
}

/// Splits a query string into decoded `(key, value)` pairs (`+` is a space,
/// `%XX` escapes are decoded; a key without `=` has an empty value).
pub(crate) fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = if bytes[i] == b'%' && i + 2 < bytes.len() {
            std::str::from_utf8(&bytes[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok())
        } else {
            None
        };
        match (bytes[i], escaped) {
            (_, Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b'+', None) => {
                out.push(b' ');
                i += 1;
            }
            (b, None) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_parameters_are_split_and_decoded() {
        assert_eq!(
            parse_query("verbose&exclude=etcd&exclude=poststarthook%2Ffoo&x=a+b"),
            vec![
                ("verbose".to_string(), String::new()),
                ("exclude".to_string(), "etcd".to_string()),
                ("exclude".to_string(), "poststarthook/foo".to_string()),
                ("x".to_string(), "a b".to_string()),
            ]
        );
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
        assert_eq!(percent_decode("a%2"), "a%2");
    }

    #[test]
    fn readyz_has_the_shutdown_check_and_livez_does_not() {
        assert_eq!(Endpoint::Readyz.check("shutdown"), Some(Check::Shutdown));
        assert_eq!(Endpoint::Livez.check("shutdown"), None);
        assert_eq!(Endpoint::Livez.check("etcd"), Some(Check::Etcd));
        assert_eq!(Endpoint::Healthz.check("nope"), None);
    }
}
