//! Events: upstream's `legacyValidateEvent` (`pkg/apis/core/validation/events.go`),
//! which every create and update of an Event passes whatever API version
//! it came through: without `eventTime` the involved object's namespace
//! must be the event's (or empty for events in `default`); with it (the
//! new-style events) `reportingController` (a qualified name),
//! `reportingInstance`, `action` and `reason` are required and bounded,
//! and the involved object may only lack a namespace for events in
//! `default` or `kube-system`; the namespace is a DNS-1123 subdomain.
//!
//! Objects are in the core/v1 shape (events.k8s.io bodies are converted
//! before they get here), so `reportingController` is `reportingComponent`.

use serde_json::Value;

use super::{generic, Generic, Strategy};
use crate::errors::StatusCause;
use crate::validation::{is_dns1123_subdomain, is_qualified_name, ErrorList, FieldError, Path};

/// The API version whose writes get the strict checks of
/// [`validate_events_v1`] (upstream: events.k8s.io/v1 and newer; core/v1
/// and events.k8s.io/v1beta1 keep the legacy rules only).
pub const EVENTS_V1: &str = "events.k8s.io/v1";

/// Most characters of `reportingInstance`, `action` and `reason`.
pub const SHORT_FIELD_LIMIT: usize = 128;
/// Most characters of `message` (`note`).
pub const NOTE_LENGTH_LIMIT: usize = 1024;

/// The strategy of core/v1 Events (also serving events.k8s.io).
#[derive(Clone, Debug)]
pub struct Event {
    flags: Generic,
}

impl Event {
    /// The strategy with upstream's flags.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Event {
        Event { flags: generic::for_builtin("", "Event", false) }
    }
}

fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// `legacyValidateEvent`.
pub fn validate_event(ev: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let namespace = text(ev, "/metadata/namespace");
    let involved_ns = text(ev, "/involvedObject/namespace");
    let ns_path = Path::new("involvedObject").child("namespace");
    let mismatch = || FieldError::invalid(&ns_path, involved_ns, "does not match event.namespace");
    let event_time = ev.get("eventTime").is_some_and(|t| t.as_str().is_some_and(|s| !s.is_empty()));
    if !event_time {
        let ok = if involved_ns.is_empty() {
            namespace.is_empty() || namespace == "default"
        } else {
            namespace == involved_ns
        };
        if !ok {
            errs.push(mismatch());
        }
    } else {
        if involved_ns.is_empty() && namespace != "default" && namespace != "kube-system" {
            errs.push(mismatch());
        }
        let controller = text(ev, "/reportingComponent");
        let path = Path::new("reportingController");
        if controller.is_empty() {
            errs.push(FieldError::required(&path, ""));
        }
        for msg in is_qualified_name(controller) {
            errs.push(FieldError::invalid(&path, controller, &msg));
        }
        for (field, json_field, limit) in [
            ("reportingInstance", "/reportingInstance", SHORT_FIELD_LIMIT),
            ("action", "/action", SHORT_FIELD_LIMIT),
            ("reason", "/reason", SHORT_FIELD_LIMIT),
        ] {
            let value = text(ev, json_field);
            if value.is_empty() {
                errs.push(FieldError::required(&Path::new(field), ""));
            }
            if value.len() > limit {
                errs.push(FieldError::invalid(&Path::new(field), "", &format!("can have at most {limit} characters")));
            }
        }
        if text(ev, "/message").len() > NOTE_LENGTH_LIMIT {
            let detail = format!("can have at most {NOTE_LENGTH_LIMIT} characters");
            errs.push(FieldError::invalid(&Path::new("message"), "", &detail));
        }
    }
    for msg in is_dns1123_subdomain(namespace) {
        errs.push(FieldError::invalid(&Path::new("namespace"), namespace, &msg));
    }
    errs
}

/// Whether a core/v1 field holds its Go zero value (absent, null, `""`,
/// `0`, or an object of zero values).
fn is_zero(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Number(n)) => n.as_f64() == Some(0.0),
        Some(Value::Bool(b)) => !b,
        Some(Value::Object(m)) => m.values().all(|v| is_zero(Some(v))),
        Some(Value::Array(a)) => a.is_empty(),
    }
}

/// `validateV1EventSeries`.
fn validate_series(ev: &Value, errs: &mut ErrorList) {
    let Some(series) = ev.get("series").filter(|s| !s.is_null()) else { return };
    if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
        errs.push(FieldError::invalid(&Path::new("series.count"), "", "should be at least 2"));
    }
    if is_zero(series.get("lastObservedTime")) {
        errs.push(FieldError::required(&Path::new("series.lastObservedTime"), ""));
    }
}

/// The strict rules upstream adds to `legacyValidateEvent` for creates
/// through events.k8s.io/v1 (`ValidateEventCreate` with that request
/// version), on the core/v1 shape: a series of at least 2 with
/// lastObservedTime, `eventTime` required, `type` Normal or Warning, and the
/// deprecated fields (`firstTimestamp`, `lastTimestamp`, `count`, `source`)
/// unset.
///
/// Updates keep the legacy rules only: upstream's source also lists
/// immutable fields for events.k8s.io/v1 updates, but its conformance test
/// "New Event resource lifecycle, testing a single event" patches `note`
/// through that API and requires success, and a conformant server must pass
/// it.
pub fn validate_events_v1_create(ev: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    validate_series(ev, &mut errs);
    if is_zero(ev.get("eventTime")) {
        errs.push(FieldError::required(&Path::new("eventTime"), ""));
    }
    let kind = text(ev, "/type");
    if kind != "Normal" && kind != "Warning" {
        errs.push(FieldError::invalid(&Path::new("type"), "", &format!("has invalid value: {kind}")));
    }
    for field in ["firstTimestamp", "lastTimestamp", "count", "source"] {
        if !is_zero(ev.get(field)) {
            errs.push(FieldError::invalid(&Path::new(field), "", "needs to be unset"));
        }
    }
    errs
}

impl Strategy for Event {
    fn validate_for_request_version(&self, obj: &Value, old: Option<&Value>, version: &str) -> Vec<StatusCause> {
        if version == EVENTS_V1 && old.is_none() {
            validate_events_v1_create(obj).to_causes()
        } else {
            Vec::new()
        }
    }
    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        validate_event(obj).to_causes()
    }
    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<StatusCause> {
        validate_event(new).to_causes()
    }
    fn has_status_subresource(&self) -> bool {
        false
    }
    fn tracks_generation(&self) -> bool {
        self.flags.tracks_generation
    }
    fn allow_create_on_update(&self) -> bool {
        self.flags.allow_create_on_update
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::strategy::cause_texts;

    fn create(ev: Value) -> Vec<String> {
        cause_texts(Event::new().validate_create(&ev))
    }

    #[test]
    fn old_style_events_match_their_involved_object() {
        let ev = json!({"metadata": {"namespace": "a"}, "involvedObject": {"kind": "Pod", "namespace": "b"}});
        assert_eq!(create(ev), vec![r#"involvedObject.namespace: Invalid value: "b": does not match event.namespace"#]);
        let node_event = json!({"metadata": {"namespace": "default"}, "involvedObject": {"kind": "Node"}});
        assert!(create(node_event).is_empty());
        let elsewhere = json!({"metadata": {"namespace": "x"}, "involvedObject": {"kind": "Node"}});
        assert_eq!(
            create(elsewhere),
            vec![r#"involvedObject.namespace: Invalid value: "": does not match event.namespace"#]
        );
    }

    #[test]
    fn new_style_events_need_their_reporting_fields() {
        let ev = json!({"metadata": {"namespace": "x"}, "eventTime": "2026-01-01T00:00:00.000000Z",
            "involvedObject": {"kind": "Node"}, "reportingComponent": "a/b/c", "reason": "r".repeat(129)});
        assert_eq!(
            create(ev),
            vec![
                r#"involvedObject.namespace: Invalid value: "": does not match event.namespace"#,
                r#"reportingController: Invalid value: "a/b/c": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"#,
                "reportingInstance: Required value",
                "action: Required value",
                r#"reason: Invalid value: "": can have at most 128 characters"#,
            ]
        );
        let good = json!({"metadata": {"namespace": "kube-system"}, "eventTime": "2026-01-01T00:00:00.000000Z",
            "involvedObject": {"kind": "Node", "name": "n"}, "reportingComponent": "kubelet",
            "reportingInstance": "n", "action": "Start", "reason": "Started"});
        assert!(create(good).is_empty());
        let missing = json!({"metadata": {"namespace": "default"}, "eventTime": "2026-01-01T00:00:00Z",
            "involvedObject": {}, "reportingInstance": "i", "action": "a", "reason": "r"});
        assert_eq!(create(missing)[0], "reportingController: Required value");
    }

    fn strict(ev: &Value, old: Option<&Value>) -> Vec<String> {
        cause_texts(Event::new().validate_for_request_version(ev, old, EVENTS_V1))
    }

    #[test]
    fn events_v1_writes_get_the_strict_rules_and_core_writes_do_not() {
        let ev = json!({"metadata": {"namespace": "default"}, "type": "Info", "count": 3,
            "firstTimestamp": "2026-01-01T00:00:00Z", "source": {"component": "k"}, "series": {"count": 1}});
        assert_eq!(
            strict(&ev, None),
            vec![
                r#"series.count: Invalid value: "": should be at least 2"#,
                "series.lastObservedTime: Required value",
                "eventTime: Required value",
                r#"type: Invalid value: "": has invalid value: Info"#,
                r#"firstTimestamp: Invalid value: "": needs to be unset"#,
                r#"count: Invalid value: "": needs to be unset"#,
                r#"source: Invalid value: "": needs to be unset"#,
            ]
        );
        assert!(Event::new().validate_for_request_version(&ev, None, "v1").is_empty());
        let good = json!({"eventTime": "2026-01-01T00:00:00.000000Z", "type": "Normal", "source": {}, "count": 0});
        assert!(strict(&good, None).is_empty());
        // Updates keep the legacy rules (see validate_events_v1_create).
        let mut changed = good.clone();
        changed["message"] = json!("patched");
        assert!(strict(&changed, Some(&good)).is_empty());
    }
}
