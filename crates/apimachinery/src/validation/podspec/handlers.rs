//! Probes and lifecycle hooks of a container, as upstream's `validateProbe`,
//! `validateLivenessProbe`, `validateStartupProbe`, `validateLifecycle` and
//! `validateHandler`: exactly one handler (`exec`, `httpGet`, `tcpSocket`,
//! `grpc` for probes, `sleep` for hooks), each handler's own rules, the
//! non-negative timings, `successThreshold` 1 for liveness and startup
//! probes.

use serde_json::Value;

use super::{is_valid_port_name, list, str_of};
use crate::validation::field::{ErrorList, FieldError, Path};
use crate::validation::meta::validate_nonnegative;
use crate::validation::names::regex_error;

/// Which probe of a container (the liveness and startup probes must have a
/// `successThreshold` of 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeKind {
    /// `livenessProbe`.
    Liveness,
    /// `readinessProbe`.
    Readiness,
    /// `startupProbe`.
    Startup,
}

/// The handler kinds of a probe, in upstream's checking order.
const PROBE_HANDLERS: &[&str] = &["exec", "httpGet", "tcpSocket", "grpc"];
/// The handler kinds of a lifecycle hook, in upstream's checking order.
const HOOK_HANDLERS: &[&str] = &["exec", "httpGet", "tcpSocket", "sleep"];

fn int_of(v: &Value, key: &str) -> i64 {
    v.get(key).and_then(Value::as_i64).unwrap_or(0)
}

/// `validateProbe` plus the liveness/startup `successThreshold` rule, for the
/// probe at `path` (e.g. `spec.containers[0].livenessProbe`).
pub fn validate_probe(probe: &Value, kind: ProbeKind, grace: Option<i64>, path: &Path) -> ErrorList {
    let mut errs = validate_handler(probe, PROBE_HANDLERS, grace, path);
    for f in ["initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"] {
        errs.extend(validate_nonnegative(int_of(probe, f), &path.child(f)));
    }
    if let Some(g) = probe.get("terminationGracePeriodSeconds").and_then(Value::as_i64) {
        if g <= 0 {
            errs.push(FieldError::invalid(&path.child("terminationGracePeriodSeconds"), g, "must be greater than 0"));
        }
    }
    if kind == ProbeKind::Readiness {
        if let Some(g) = probe.get("terminationGracePeriodSeconds").and_then(Value::as_i64) {
            errs.push(FieldError::invalid(
                &path.child("terminationGracePeriodSeconds"),
                g,
                "must not be set for readinessProbes",
            ));
        }
    }
    let threshold = int_of(probe, "successThreshold");
    if kind != ProbeKind::Readiness && threshold != 1 {
        errs.push(FieldError::invalid(&path.child("successThreshold"), threshold, "must be 1"));
    }
    errs
}

/// `validateLifecycle`: `postStart` and `preStop` hooks at `path`
/// (`…lifecycle`).
pub fn validate_lifecycle(lifecycle: &Value, grace: Option<i64>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for hook in ["postStart", "preStop"] {
        if let Some(h) = lifecycle.get(hook).filter(|h| !h.is_null()) {
            errs.extend(validate_handler(h, HOOK_HANDLERS, grace, &path.child(hook)));
        }
    }
    errs
}

/// `validateHandler`: the first handler present is validated, every further
/// one is `Forbidden: may not specify more than 1 handler type`; none at all
/// is `Required value: must specify a handler type`.
fn validate_handler(handler: &Value, kinds: &[&str], grace: Option<i64>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut found = 0;
    for kind in kinds {
        let Some(h) = handler.get(*kind).filter(|h| !h.is_null()) else { continue };
        let hp = path.child(kind);
        if found > 0 {
            errs.push(FieldError::forbidden(&hp, "may not specify more than 1 handler type"));
            continue;
        }
        found += 1;
        match *kind {
            "exec" if list(h, "command").is_empty() => errs.push(FieldError::required(&hp.child("command"), "")),
            "httpGet" => errs.extend(validate_http_get(h, &hp)),
            "tcpSocket" => errs.extend(validate_port_num_or_name(h.get("port"), &hp.child("port"))),
            "grpc" => errs.extend(validate_port_num_or_name(h.get("port"), &hp.child("port"))),
            "sleep" => errs.extend(validate_sleep(h, grace, &hp)),
            _ => {}
        }
    }
    if found == 0 {
        errs.push(FieldError::required(path, "must specify a handler type"));
    }
    errs
}

/// `validateHTTPGetAction`: path required, port, scheme `HTTP`/`HTTPS`,
/// header names.
fn validate_http_get(h: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if str_of(h, "path").is_empty() {
        errs.push(FieldError::required(&path.child("path"), ""));
    }
    errs.extend(validate_port_num_or_name(h.get("port"), &path.child("port")));
    let scheme = str_of(h, "scheme");
    if scheme != "HTTP" && scheme != "HTTPS" {
        errs.push(FieldError::not_supported(&path.child("scheme"), scheme, &["HTTP", "HTTPS"]));
    }
    for header in list(h, "httpHeaders") {
        let name = str_of(header, "name");
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            let msg = regex_error(
                "a valid HTTP header must consist of alphanumeric characters or '-'",
                "[-A-Za-z0-9]+",
                &["X-Header-Name"],
            );
            // Upstream reports it against the list, not the header.
            errs.push(FieldError::invalid(&path.child("httpHeaders"), name, &msg));
        }
    }
    errs
}

/// `validateSleepAction` (1.33, `PodLifecycleSleepActionAllowZero` on):
/// the seconds lie within the pod's grace period. Upstream reports it
/// against the `sleep` handler itself, not its `seconds`.
fn validate_sleep(h: &Value, grace: Option<i64>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let seconds = int_of(h, "seconds");
    if let Some(g) = grace {
        if seconds < 0 || seconds > g {
            errs.push(FieldError::invalid(
                path,
                seconds,
                &format!("must be non-negative and less than terminationGracePeriodSeconds ({g})"),
            ));
        }
    }
    errs
}

/// `ValidatePortNumOrName` for an `IntOrString` port (absent is the number 0).
pub fn validate_port_num_or_name(port: Option<&Value>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    match port {
        Some(Value::String(name)) => {
            for m in is_valid_port_name(name) {
                errs.push(FieldError::invalid(path, name.as_str(), &m));
            }
        }
        other => {
            let n = other.and_then(Value::as_i64).unwrap_or(0);
            if !(1..=65535).contains(&n) {
                errs.push(FieldError::invalid(path, n, super::PORT_RANGE_MSG));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msgs(errs: ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn probe(extra: Value) -> Value {
        let mut p = json!({"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3});
        p.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        p
    }

    #[test]
    fn exactly_one_handler() {
        let p = Path::new("spec").child("containers").index(0).child("livenessProbe");
        let two = probe(json!({"exec": {"command": ["true"]}, "httpGet": {"path": "/", "port": 80, "scheme": "HTTP"}}));
        assert_eq!(
            msgs(validate_probe(&two, ProbeKind::Liveness, Some(30), &p)),
            ["spec.containers[0].livenessProbe.httpGet: Forbidden: may not specify more than 1 handler type"]
        );
        assert_eq!(
            msgs(validate_probe(&probe(json!({})), ProbeKind::Readiness, Some(30), &p)),
            ["spec.containers[0].livenessProbe: Required value: must specify a handler type"]
        );
    }

    #[test]
    fn timings_thresholds_and_ports() {
        let p = Path::new("p");
        let bad = probe(json!({"tcpSocket": {"port": "Web--"}, "successThreshold": 2, "periodSeconds": -1}));
        assert_eq!(
            msgs(validate_probe(&bad, ProbeKind::Startup, Some(30), &p)),
            [
                "p.tcpSocket.port: Invalid value: \"Web--\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                "p.tcpSocket.port: Invalid value: \"Web--\": must not contain consecutive hyphens",
                "p.tcpSocket.port: Invalid value: \"Web--\": must not begin or end with a hyphen",
                "p.periodSeconds: Invalid value: -1: must be greater than or equal to 0",
                "p.successThreshold: Invalid value: 2: must be 1",
            ]
        );
        let ok = probe(json!({"httpGet": {"path": "/", "port": 0, "scheme": "FTP"}, "successThreshold": 2}));
        assert_eq!(
            msgs(validate_probe(&ok, ProbeKind::Readiness, None, &p)),
            [
                "p.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive",
                "p.httpGet.scheme: Unsupported value: \"FTP\": supported values: \"HTTP\", \"HTTPS\"",
            ]
        );
    }

    #[test]
    fn lifecycle_hooks() {
        let l = json!({"postStart": {"exec": {}}, "preStop": {"sleep": {"seconds": 40}}});
        assert_eq!(
            msgs(validate_lifecycle(&l, Some(30), &Path::new("l"))),
            [
                "l.postStart.exec.command: Required value",
                "l.preStop.sleep: Invalid value: 40: must be non-negative and less than terminationGracePeriodSeconds (30)",
            ]
        );
    }
}
