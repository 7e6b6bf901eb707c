//! Admission webhooks (`admissionregistration.k8s.io/v1`
//! MutatingWebhookConfiguration and ValidatingWebhookConfiguration),
//! upstream's MutatingAdmissionWebhook and ValidatingAdmissionWebhook
//! plugins (`k8s.io/apiserver/pkg/admission/plugin/webhook`).
//!
//! Each plugin reads its configurations from the store ([`source`]: the
//! parsed webhooks are kept until the stored set changes), picks the
//! webhooks a request matches ([`should_call`]: namespace and object
//! selectors, rules with `matchPolicy`, then `matchConditions`), calls them
//! with an AdmissionReview v1 over HTTPS ([`client`], [`review`]) and turns
//! their answers into upstream's outcomes ([`denied`], [`call_failed`]).
//!
//! Under `matchPolicy: Equivalent` a rule may match another version of
//! the resource ([`matcher::equivalents`]); the webhook then gets the
//! object in that version where a conversion exists (HorizontalPodAutoscaler
//! v1/v2, events.k8s.io/core Events), and its patch is converted back.
//!
//! Not modelled: admissionReviewVersions `v1beta1` (v1 is always sent),
//! the `authorizer` CEL variable, the audit `patch.webhook…` annotation,
//! and webhook metrics.

pub mod client;
pub mod matcher;
pub mod mutating;
pub mod review;
pub mod source;
pub mod validating;

use std::sync::Arc;
use std::time::Duration;

use rkube_apimachinery::cel::{Expression, Outcome};
use rkube_apimachinery::selector::labels::LabelSelector;
use rkube_apimachinery::ApiError;
use serde_json::{json, Value};

use super::plugins::Stores;
use super::Attributes;
use matcher::Matched;

/// Upstream's default `timeoutSeconds`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// One webhook of a configuration, parsed once per stored version.
pub struct Hook {
    /// `<configuration>/<webhook>/<index>`: identity across reinvocation.
    pub uid: String,
    /// The configuration's name.
    pub configuration: String,
    /// The webhook's name.
    pub name: String,
    /// `rules` as stored.
    pub rules: Vec<Value>,
    /// `matchPolicy: Equivalent` (the v1 default).
    pub equivalent: bool,
    /// `namespaceSelector` (or why it does not parse).
    pub namespace_selector: Result<LabelSelector, String>,
    /// `objectSelector` (or why it does not parse).
    pub object_selector: Result<LabelSelector, String>,
    /// `matchConditions`: name and compiled expression (or the compile error).
    pub conditions: Vec<(String, Result<Arc<Expression>, String>)>,
    /// `failurePolicy: Ignore` (v1 default `Fail`).
    pub ignore_failures: bool,
    /// `sideEffects` (`None`, `NoneOnDryRun`, `Some`, `Unknown`; empty if unset).
    pub side_effects: String,
    /// `timeoutSeconds` (default 10 s).
    pub timeout: Duration,
    /// `clientConfig` as stored.
    pub client_config: Value,
    /// `reinvocationPolicy: IfNeeded` (mutating webhooks).
    pub reinvoke_if_needed: bool,
}

impl Hook {
    /// Parses `webhooks[index]` of the configuration `configuration`.
    pub fn parse(configuration: &str, index: usize, w: &Value) -> Hook {
        let name = w.get("name").and_then(Value::as_str).unwrap_or("").to_string();
        let conditions = w
            .get("matchConditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| {
                let n = c.get("name").and_then(Value::as_str).unwrap_or("").to_string();
                let e = c.get("expression").and_then(Value::as_str).unwrap_or("");
                (n, Expression::compile(e).map(Arc::new))
            })
            .collect();
        Hook {
            uid: format!("{configuration}/{name}/{index}"),
            configuration: configuration.to_string(),
            rules: w.get("rules").and_then(Value::as_array).cloned().unwrap_or_default(),
            equivalent: w.get("matchPolicy").and_then(Value::as_str).unwrap_or("Equivalent") == "Equivalent",
            namespace_selector: matcher::parse_selector(w.get("namespaceSelector")),
            object_selector: matcher::parse_selector(w.get("objectSelector")),
            conditions,
            ignore_failures: w.get("failurePolicy").and_then(Value::as_str) == Some("Ignore"),
            side_effects: w.get("sideEffects").and_then(Value::as_str).unwrap_or("").to_string(),
            timeout: w
                .get("timeoutSeconds")
                .and_then(Value::as_u64)
                .map(Duration::from_secs)
                .unwrap_or(DEFAULT_TIMEOUT),
            client_config: w.get("clientConfig").cloned().unwrap_or(Value::Null),
            reinvoke_if_needed: w.get("reinvocationPolicy").and_then(Value::as_str) == Some("IfNeeded"),
            name,
        }
    }
}

/// The last plugins of the chain, in upstream's order:
/// MutatingAdmissionWebhook, ValidatingAdmissionPolicy,
/// ValidatingAdmissionWebhook (each only when its kinds are served).
pub fn tail_plugins(stores: &Stores) -> Vec<Arc<dyn super::Plugin>> {
    let mut out: Vec<Arc<dyn super::Plugin>> = Vec::new();
    if let Some(p) = mutating::MutatingWebhook::new(stores) {
        out.push(Arc::new(p));
    }
    if let Some(p) = super::vap::ValidatingAdmissionPolicy::new(stores) {
        out.push(Arc::new(p));
    }
    if let Some(p) = validating::ValidatingWebhook::new(stores) {
        out.push(Arc::new(p));
    }
    out
}

/// Upstream `ShouldCallHook`: selectors first (their errors only count
/// once a rule matches), then the rules, then the match conditions
/// (a failing condition with `failurePolicy: Fail` is a 403).
pub async fn should_call(
    hook: &Hook,
    stores: &Stores,
    attrs: &Attributes<'_>,
    object: Option<&Value>,
) -> Result<Option<Matched>, ApiError> {
    let ns_match = match &hook.namespace_selector {
        Ok(sel) => matcher::match_namespace(sel, stores, attrs, object).await,
        Err(e) => Err(ApiError::Internal(e.clone())),
    };
    if matches!(ns_match, Ok(false)) {
        return Ok(None);
    }
    let obj_match = match &hook.object_selector {
        Ok(sel) => Ok(matcher::match_object(sel, attrs, object)),
        Err(e) => Err(ApiError::Internal(e.clone())),
    };
    if matches!(obj_match, Ok(false)) {
        return Ok(None);
    }
    let Some(matched) = matcher::match_rules(&hook.rules, hook.equivalent, attrs, object) else {
        return Ok(None);
    };
    ns_match?;
    obj_match?;
    if hook.conditions.is_empty() {
        return Ok(Some(matched));
    }
    let v = matcher::views(attrs, &matched, object);
    let request = review::admission_request("", attrs, &matched, object, v.object.as_ref(), v.old.as_ref());
    let authz = super::vap::authorizer::binding(attrs);
    let (new_view, old_view) = (v.object.as_ref(), v.old.as_ref());
    match eval_conditions_with(&hook.conditions, &request, new_view, old_view, &Value::Null, Some(&authz)) {
        Ok(true) => Ok(Some(matched)),
        Ok(false) => Ok(None),
        Err(_) if hook.ignore_failures => Ok(None),
        Err(e) => Err(super::builtin::forbidden(attrs, object, e)),
    }
}

/// Upstream's match-condition evaluation: any `false` means no match
/// (even if others failed); otherwise errors fail; else a match. The
/// error joins the failures as Go's aggregate does.
pub fn eval_conditions(
    conditions: &[(String, Result<Arc<Expression>, String>)],
    request: &Value,
    object: Option<&Value>,
    old: Option<&Value>,
    params: &Value,
) -> Result<bool, String> {
    eval_conditions_with(conditions, request, object, old, params, None)
}

/// [`eval_conditions`] with the CEL `authorizer` bound when `authz` is given.
pub fn eval_conditions_with(
    conditions: &[(String, Result<Arc<Expression>, String>)],
    request: &Value,
    object: Option<&Value>,
    old: Option<&Value>,
    params: &Value,
    authz: Option<&rkube_apimachinery::cel::authz::Binding>,
) -> Result<bool, String> {
    let null = Value::Null;
    let vars = [
        ("object", object.unwrap_or(&null)),
        ("oldObject", old.unwrap_or(&null)),
        ("request", request),
        ("params", params),
    ];
    let mut errors = Vec::new();
    for (name, expr) in conditions {
        match expr {
            Err(e) => errors.push(e.clone()),
            Ok(expr) => match expr.eval_with(&vars, authz) {
                Ok(Outcome::Bool(false)) => return Ok(false),
                Ok(Outcome::Bool(true)) => {}
                Ok(_) => errors.push(format!("matchCondition '{name}' must evaluate to bool")),
                Err(e) => errors.push(format!("expression '{}' resulted in error: {e}", expr.source())),
            },
        }
    }
    match errors.len() {
        0 => Ok(true),
        1 => Err(errors.remove(0)),
        _ => Err(format!("[{}]", errors.join(", "))),
    }
}

/// Upstream's `ToStatusErr`: a webhook's denial answered with the Status
/// it gave (a code below 400 becomes 400; reason and details kept) and
/// the message `admission webhook "<name>" denied the request: <message>`
/// (the reason when there is no message, else `… without explanation`).
pub fn denied(name: &str, result: Option<&Value>) -> ApiError {
    let result = result.cloned().unwrap_or_else(|| json!({}));
    let denied_by = format!("admission webhook {name:?} denied the request");
    let code = result.get("code").and_then(Value::as_u64).unwrap_or(0);
    let code = if code < 400 { 400 } else { code.min(599) as u16 };
    let message = result.get("message").and_then(Value::as_str).unwrap_or("");
    let reason = result.get("reason").and_then(Value::as_str).unwrap_or("");
    let message = if !message.is_empty() {
        format!("{denied_by}: {message}")
    } else if !reason.is_empty() {
        format!("{denied_by}: {reason}")
    } else {
        format!("{denied_by} without explanation")
    };
    ApiError::Status {
        code,
        reason: intern_reason(reason),
        message,
        details: result.get("details").cloned().unwrap_or(Value::Null),
    }
}

/// A call failure under `failurePolicy: Fail`: upstream's 500
/// `Internal error occurred: failed calling webhook "<name>": <why>`.
pub fn call_failed(name: &str, why: &str) -> ApiError {
    ApiError::Internal(format!("failed calling webhook {name:?}: {why}"))
}

/// Upstream's `NewDryRunUnsupportedErr`: a 400 for a dry run reaching a
/// webhook whose `sideEffects` are neither `None` nor `NoneOnDryRun`.
pub fn dry_run_unsupported(name: &str) -> ApiError {
    ApiError::BadRequest(format!("admission webhook {name:?} does not support dry run"))
}

/// Whether a dry run may call a webhook with these side effects; `Err`
/// is the refusal (a missing `sideEffects` fails the call).
pub fn check_dry_run(hook: &Hook, dry_run: bool) -> Result<(), Failure> {
    if !dry_run {
        return Ok(());
    }
    match hook.side_effects.as_str() {
        "None" | "NoneOnDryRun" => Ok(()),
        "" => Err(Failure::Call("Webhook SideEffects is nil".into())),
        _ => Err(Failure::Refused(dry_run_unsupported(&hook.name))),
    }
}

/// How one webhook call went wrong.
pub enum Failure {
    /// The call failed (transport, timeout, bad answer): subject to
    /// `failurePolicy`; the text follows `failed calling webhook "<name>": `.
    Call(String),
    /// A refusal that no failure policy lifts (a denial, a dry run the
    /// webhook cannot take).
    Refused(ApiError),
}

/// Calls `hook` with `request` and verifies the answer.
pub async fn call(hook: &Hook, stores: &Stores, request: Value, mutating: bool) -> Result<review::Response, Failure> {
    let uid = request.get("uid").and_then(Value::as_str).unwrap_or("").to_string();
    let endpoint = client::resolve(&hook.client_config, stores)
        .map_err(|e| Failure::Call(format!("could not get REST client: {e}")))?;
    let tls = client::tls_config(&hook.client_config)
        .map_err(|e| Failure::Call(format!("could not get REST client: {e}")))?;
    let answer = client::post(&endpoint, tls, &review::review(request), hook.timeout)
        .await
        .map_err(|e| Failure::Call(format!("failed to call webhook: {e}")))?;
    review::verify(&uid, mutating, &answer)
        .map_err(|e| Failure::Call(format!("received invalid webhook response: {e}")))
}

/// A `&'static` reason for a Status: upstream's `StatusReason` values map
/// to themselves; others are kept once each, up to a bound.
pub fn intern_reason(reason: &str) -> &'static str {
    const KNOWN: [&str; 20] = [
        "",
        "Unauthorized",
        "Forbidden",
        "NotFound",
        "AlreadyExists",
        "Conflict",
        "Gone",
        "Invalid",
        "ServerTimeout",
        "StoreReadError",
        "Timeout",
        "TooManyRequests",
        "BadRequest",
        "MethodNotAllowed",
        "NotAcceptable",
        "RequestEntityTooLarge",
        "UnsupportedMediaType",
        "InternalError",
        "Expired",
        "ServiceUnavailable",
    ];
    if let Some(k) = KNOWN.iter().find(|k| **k == reason) {
        return k;
    }
    static OTHERS: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    let mut others = OTHERS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(k) = others.iter().find(|k| **k == reason) {
        return k;
    }
    if others.len() >= 256 {
        return "";
    }
    let leaked: &'static str = Box::leak(reason.to_string().into_boxed_str());
    others.push(leaked);
    leaked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denials_read_as_upstream() {
        let e = denied("deny.example.com", Some(&json!({"code": 403, "reason": "Forbidden", "message": "no"})));
        assert_eq!(e.to_string(), "admission webhook \"deny.example.com\" denied the request: no");
        assert_eq!((e.code(), e.reason()), (403, "Forbidden"));
        let e = denied("d.example.com", None);
        assert_eq!(e.to_string(), "admission webhook \"d.example.com\" denied the request without explanation");
        assert_eq!(e.code(), 400);
        let e = denied("d.example.com", Some(&json!({"code": 200, "reason": "Sideways"})));
        assert_eq!(e.to_string(), "admission webhook \"d.example.com\" denied the request: Sideways");
        assert_eq!((e.code(), e.reason()), (400, "Sideways"));
    }

    #[test]
    fn hooks_parse_with_v1_defaults() {
        let h = Hook::parse("cfg", 0, &json!({"name": "a.b.c", "clientConfig": {"url": "https://x"}}));
        assert_eq!(h.uid, "cfg/a.b.c/0");
        assert!(h.equivalent && !h.ignore_failures && !h.reinvoke_if_needed);
        assert_eq!(h.timeout, DEFAULT_TIMEOUT);
    }

    #[test]
    fn conditions_false_wins_over_errors() {
        let c = |e: &str| ("c".to_string(), Expression::compile(e).map(Arc::new));
        let obj = json!({"metadata": {"name": "x"}});
        let req = json!({"operation": "CREATE"});
        assert_eq!(
            eval_conditions(&[c("request.operation == 'CREATE'")], &req, Some(&obj), None, &Value::Null),
            Ok(true)
        );
        assert_eq!(eval_conditions(&[c("object.nope"), c("false")], &req, Some(&obj), None, &Value::Null), Ok(false));
        assert!(eval_conditions(&[c("object.nope == 1")], &req, Some(&obj), None, &Value::Null).is_err());
    }

    #[test]
    fn dry_runs_reach_only_side_effect_free_webhooks() {
        let hook =
            |side_effects: &str| Hook::parse("cfg", 0, &json!({"name": "s.example.com", "sideEffects": side_effects}));
        assert!(check_dry_run(&hook("Some"), false).is_ok());
        assert!(check_dry_run(&hook("None"), true).is_ok());
        assert!(check_dry_run(&hook("NoneOnDryRun"), true).is_ok());
        match check_dry_run(&hook("Unknown"), true) {
            Err(Failure::Refused(e)) => {
                assert_eq!(
                    (e.code(), e.to_string().as_str()),
                    (400, "admission webhook \"s.example.com\" does not support dry run")
                )
            }
            _ => panic!("a dry run must not reach a webhook with side effects"),
        }
        assert!(matches!(check_dry_run(&hook(""), true), Err(Failure::Call(m)) if m == "Webhook SideEffects is nil"));
    }
}
