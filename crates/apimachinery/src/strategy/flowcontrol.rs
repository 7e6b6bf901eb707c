//! API Priority and Fairness objects (`flowcontrol.apiserver.k8s.io/v1`):
//! upstream's v1 defaults (`pkg/apis/flowcontrol/v1/defaults.go`) and
//! `ValidateFlowSchema` / `ValidatePriorityLevelConfiguration`
//! (`pkg/apis/flowcontrol/validation`). Both kinds have a `/status`
//! subresource; updates re-run the create rules, as upstream does.
//!
//! Not done: the "spec of the mandatory objects must equal the fixed value"
//! rule (needs upstream's bootstrap configuration) and the FlowSchema
//! `status.controllerSemVer` downgrade check.

use serde_json::{json, Value};

use super::{generic, Generic, Strategy};
use crate::errors::StatusCause;
use crate::validation::{
    go_string_slice, is_dns1123_label, is_dns1123_subdomain, BadValue, ErrorList, FieldError, Path,
};

/// `FlowSchemaMaxMatchingPrecedence`.
pub const MAX_MATCHING_PRECEDENCE: i64 = 10_000;
/// The v1 default `matchingPrecedence`.
pub const DEFAULT_MATCHING_PRECEDENCE: i64 = 1000;
/// Upper bound of `queuing.queues` (10^7).
pub const MAX_QUEUES: i64 = 10_000_000;
/// Shuffle sharding's `MaxHashBits`.
const MAX_HASH_BITS: i64 = 60;
/// Verbs a rule may list besides `*` (sorted, as upstream lists them).
const VERBS: [&str; 9] = ["create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"];
const NS_ERR_INTRO: &str = "each member of this list must be '*' or a DNS-1123 label; ";

/// The strategy of FlowSchemas and PriorityLevelConfigurations.
#[derive(Clone, Debug)]
pub struct FlowControl {
    kind: Kind,
    flags: Generic,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    FlowSchema,
    PriorityLevel,
}

impl FlowControl {
    /// The strategy of `kind` (`FlowSchema` or `PriorityLevelConfiguration`).
    pub fn new(kind: &str) -> FlowControl {
        let k = if kind == "FlowSchema" { Kind::FlowSchema } else { Kind::PriorityLevel };
        FlowControl { kind: k, flags: generic::for_builtin("flowcontrol.apiserver.k8s.io", kind, true) }
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().map(|s| s.as_str().unwrap_or("").to_string()).collect())
        .unwrap_or_default()
}

fn int(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(Value::as_i64)
}

fn present(v: &Value, key: &str) -> bool {
    v.get(key).is_some_and(|x| !x.is_null())
}

fn slice_value(v: &[String]) -> BadValue {
    BadValue::Raw(go_string_slice(v, false))
}

/// `SetDefaults_FlowSchemaSpec` and the defaulting of the
/// PriorityLevelConfiguration tree (nominal shares 30 for Limited, 0 for
/// Exempt, lendablePercent 0, queuing 64 queues / hand 8 / length 50).
fn set_defaults(kind: Kind, obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) else { return };
    match kind {
        Kind::FlowSchema => {
            if int(spec, "matchingPrecedence").unwrap_or(0) == 0 {
                spec["matchingPrecedence"] = json!(DEFAULT_MATCHING_PRECEDENCE);
            }
        }
        Kind::PriorityLevel => {
            if let Some(ex) = spec.get_mut("exempt").filter(|e| e.is_object()) {
                for k in ["nominalConcurrencyShares", "lendablePercent"] {
                    if !present(ex, k) {
                        ex[k] = json!(0);
                    }
                }
            }
            if let Some(l) = spec.get_mut("limited").filter(|e| e.is_object()) {
                if !present(l, "nominalConcurrencyShares") {
                    l["nominalConcurrencyShares"] = json!(30);
                }
                if !present(l, "lendablePercent") {
                    l["lendablePercent"] = json!(0);
                }
                if let Some(q) = l.pointer_mut("/limitResponse/queuing").filter(|q| q.is_object()) {
                    for (k, d) in [("handSize", 8), ("queues", 64), ("queueLengthLimit", 50)] {
                        if int(q, k).unwrap_or(0) == 0 {
                            q[k] = json!(d);
                        }
                    }
                }
            }
        }
    }
}

/// `ValidateFlowSchemaSpec` (with `spec` at `spec`).
pub fn validate_flow_schema(fs: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let name = fs.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    let spec = fs.get("spec").cloned().unwrap_or(Value::Null);
    let p = Path::new("spec");
    let mp = int(&spec, "matchingPrecedence").unwrap_or(0);
    let mpp = p.child("matchingPrecedence");
    if mp <= 0 {
        errs.push(FieldError::invalid(&mpp, mp, "must be a positive value"));
    }
    if mp > MAX_MATCHING_PRECEDENCE {
        errs.push(FieldError::invalid(&mpp, mp, &format!("must not be greater than {MAX_MATCHING_PRECEDENCE}")));
    }
    if mp == 1 && name != "exempt" {
        errs.push(FieldError::invalid(&mpp, mp, "only the schema named 'exempt' may have matchingPrecedence 1"));
    }
    if let Some(dm) = spec.get("distinguisherMethod").filter(|d| !d.is_null()) {
        let t = dm.get("type").and_then(Value::as_str).unwrap_or("");
        if t != "ByNamespace" && t != "ByUser" {
            let raw = format!("flowcontrol.FlowDistinguisherMethod{{Type:{}}}", crate::validation::go_quote(t));
            errs.push(FieldError::not_supported(
                &p.child("distinguisherMethod").child("type"),
                BadValue::Raw(raw),
                &["ByNamespace", "ByUser"],
            ));
        }
    }
    let plp = p.child("priorityLevelConfiguration").child("name");
    match spec.pointer("/priorityLevelConfiguration/name").and_then(Value::as_str).unwrap_or("") {
        "" => errs.push(FieldError::required(&plp, "must reference a priority level")),
        pl => {
            for msg in is_dns1123_subdomain(pl) {
                errs.push(FieldError::invalid(&plp, pl, &msg));
            }
        }
    }
    if let Some(rules) = spec.get("rules").and_then(Value::as_array) {
        for (i, r) in rules.iter().enumerate() {
            validate_rule(r, &p.child("rules").index(i), &mut errs);
        }
    }
    errs
}

/// `ValidateFlowSchemaPolicyRulesWithSubjects`.
fn validate_rule(r: &Value, p: &Path, errs: &mut ErrorList) {
    match r.get("subjects").and_then(Value::as_array).filter(|s| !s.is_empty()) {
        Some(subjects) => {
            for (i, s) in subjects.iter().enumerate() {
                validate_subject(s, &p.child("subjects").index(i), errs);
            }
        }
        None => errs.push(FieldError::required(&p.child("subjects"), "subjects must contain at least one value")),
    }
    let rr = r.get("resourceRules").and_then(Value::as_array).cloned().unwrap_or_default();
    let nr = r.get("nonResourceRules").and_then(Value::as_array).cloned().unwrap_or_default();
    if rr.is_empty() && nr.is_empty() {
        errs.push(FieldError::required(p, "at least one of resourceRules and nonResourceRules has to be non-empty"));
    }
    for (i, rule) in rr.iter().enumerate() {
        validate_resource_rule(rule, &p.child("resourceRules").index(i), errs);
    }
    for (i, rule) in nr.iter().enumerate() {
        validate_non_resource_rule(rule, &p.child("nonResourceRules").index(i), errs);
    }
}

/// `ValidateFlowSchemaSubject` and the per-kind subject checks.
fn validate_subject(s: &Value, p: &Path, errs: &mut ErrorList) {
    const USER: &str = "user is forbidden when subject kind is not 'User'";
    const GROUP: &str = "group is forbidden when subject kind is not 'Group'";
    const SA: &str = "serviceAccount is forbidden when subject kind is not 'ServiceAccount'";
    let kind = s.get("kind").and_then(Value::as_str).unwrap_or("");
    let (own, others): (&str, [(&str, &str); 2]) = match kind {
        "ServiceAccount" => ("serviceAccount", [("user", USER), ("group", GROUP)]),
        "User" => ("user", [("serviceAccount", SA), ("group", GROUP)]),
        "Group" => ("group", [("serviceAccount", SA), ("user", USER)]),
        _ => {
            errs.push(FieldError::not_supported(&p.child("kind"), kind, &["Group", "ServiceAccount", "User"]));
            return;
        }
    };
    let op = p.child(own);
    match s.get(own).filter(|v| !v.is_null()) {
        None => errs.push(FieldError::required(&op, &format!("{own} is required when subject kind is '{kind}'"))),
        Some(v) => {
            let name = v.get("name").and_then(Value::as_str).unwrap_or("");
            if name.is_empty() {
                errs.push(FieldError::required(&op.child("name"), ""));
            } else if kind == "ServiceAccount" && name != "*" {
                for msg in is_dns1123_subdomain(name) {
                    errs.push(FieldError::invalid(&op.child("name"), name, &msg));
                }
            }
            if kind == "ServiceAccount" {
                match v.get("namespace").and_then(Value::as_str).unwrap_or("") {
                    "" => errs.push(FieldError::required(
                        &op.child("namespace"),
                        "must specify namespace for service account",
                    )),
                    ns => {
                        for msg in is_dns1123_label(ns) {
                            errs.push(FieldError::invalid(&op.child("namespace"), ns, &msg));
                        }
                    }
                }
            }
        }
    }
    for (field, msg) in others {
        if present(s, field) {
            errs.push(FieldError::forbidden(&p.child(field), msg));
        }
    }
}

/// The verbs check shared by resource and non-resource rules.
fn validate_verbs(verbs: &[String], p: &Path, errs: &mut ErrorList) {
    if verbs.is_empty() {
        errs.push(FieldError::required(p, "verbs must contain at least one value"));
    } else if verbs.iter().any(|v| v == "*") {
        if verbs.len() > 1 {
            errs.push(FieldError::invalid(p, slice_value(verbs), "if '*' is present, must not specify other verbs"));
        }
    } else if !verbs.iter().all(|v| VERBS.contains(&v.as_str())) {
        errs.push(FieldError::not_supported(p, slice_value(verbs), &VERBS));
    }
}

/// A list that must be non-empty and may hold `*` only alone.
fn validate_list(items: &[String], p: &Path, required: &str, what: &str, errs: &mut ErrorList) {
    if items.is_empty() {
        errs.push(FieldError::required(p, required));
    } else if items.len() > 1 && items.iter().any(|v| v == "*") {
        errs.push(FieldError::invalid(
            p,
            slice_value(items),
            &format!("if '*' is present, must not specify other {what}"),
        ));
    }
}

/// `ValidateFlowSchemaResourcePolicyRule`.
fn validate_resource_rule(r: &Value, p: &Path, errs: &mut ErrorList) {
    validate_verbs(&strings(r.get("verbs")), &p.child("verbs"), errs);
    let groups = strings(r.get("apiGroups"));
    validate_list(
        &groups,
        &p.child("apiGroups"),
        "resource rules must supply at least one api group",
        "api groups",
        errs,
    );
    let res = strings(r.get("resources"));
    validate_list(&res, &p.child("resources"), "resource rules must supply at least one resource", "resources", errs);
    let ns = strings(r.get("namespaces"));
    let np = p.child("namespaces");
    let cluster = r.get("clusterScope") == Some(&Value::Bool(true));
    if ns.is_empty() && !cluster {
        errs.push(FieldError::required(
            &np,
            "resource rules that are not cluster scoped must supply at least one namespace",
        ));
    } else if ns.iter().any(|n| n == "*") {
        if ns.len() > 1 {
            errs.push(FieldError::invalid(
                &np,
                slice_value(&ns),
                "if '*' is present, must not specify other namespaces",
            ));
        }
    } else {
        for (i, n) in ns.iter().enumerate() {
            for msg in is_dns1123_label(n) {
                errs.push(FieldError::invalid(&np.index(i), n.as_str(), &format!("{NS_ERR_INTRO}{msg}")));
            }
        }
    }
}

/// `ValidateFlowSchemaNonResourcePolicyRule`.
fn validate_non_resource_rule(r: &Value, p: &Path, errs: &mut ErrorList) {
    validate_verbs(&strings(r.get("verbs")), &p.child("verbs"), errs);
    let urls = strings(r.get("nonResourceURLs"));
    let up = p.child("nonResourceURLs");
    if urls.is_empty() {
        errs.push(FieldError::required(&up, "nonResourceURLs must contain at least one value"));
    } else if urls.iter().any(|u| u == "*") {
        if urls.len() > 1 {
            errs.push(FieldError::invalid(
                &up,
                slice_value(&urls),
                "if '*' is present, must not specify other non-resource URLs",
            ));
        }
    } else {
        for (i, u) in urls.iter().enumerate() {
            if let Some(msg) = non_resource_url_problem(u) {
                errs.push(FieldError::invalid(&up.index(i), u.as_str(), msg));
            }
        }
    }
}

/// `ValidateNonResourceURLPath`: leading slash, no blanks, no `//`, `*`
/// only as a `/*` suffix.
fn non_resource_url_problem(u: &str) -> Option<&'static str> {
    if u.is_empty() {
        return Some("must not be empty");
    }
    if u == "/" {
        return None;
    }
    if !u.starts_with('/') {
        return Some("must start with slash");
    }
    if u.contains(' ') {
        return Some("must not contain white-space");
    }
    if u.contains("//") {
        return Some("must not contain double slash");
    }
    let stars = u.matches('*').count();
    if stars > 1 || (stars == 1 && !u.ends_with("/*")) {
        return Some("wildcard can only do suffix matching");
    }
    None
}

/// `ValidatePriorityLevelConfigurationSpec` (v1 request rules: zero
/// nominal shares are allowed).
pub fn validate_priority_level(pl: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let name = pl.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    let spec = pl.get("spec").cloned().unwrap_or(Value::Null);
    let p = Path::new("spec");
    let t = spec.get("type").and_then(Value::as_str).unwrap_or("");
    if (name == "exempt") != (t == "Exempt") {
        errs.push(FieldError::invalid(&p.child("type"), t, "type must be 'Exempt' if and only if name is 'exempt'"));
    }
    match t {
        "Exempt" => {
            if present(&spec, "limited") {
                errs.push(FieldError::forbidden(&p.child("limited"), "must be nil if the type is not Limited"));
            }
            if let Some(ex) = spec.get("exempt").filter(|e| !e.is_null()) {
                let ep = p.child("exempt");
                if let Some(n) = int(ex, "nominalConcurrencyShares").filter(|n| *n < 0) {
                    errs.push(FieldError::invalid(
                        &ep.child("nominalConcurrencyShares"),
                        n,
                        "must be a non-negative number",
                    ));
                }
                if let Some(n) = int(ex, "lendablePercent").filter(|n| !(0..=100).contains(n)) {
                    errs.push(FieldError::invalid(
                        &ep.child("lendablePercent"),
                        n,
                        "must be between 0 and 100, inclusive",
                    ));
                }
            }
        }
        "Limited" => {
            if present(&spec, "exempt") {
                errs.push(FieldError::forbidden(&p.child("exempt"), "must be nil if the type is Limited"));
            }
            match spec.get("limited").filter(|l| !l.is_null()) {
                None => errs.push(FieldError::required(&p.child("limited"), "must not be empty when type is Limited")),
                Some(l) => validate_limited(l, &p.child("limited"), &mut errs),
            }
        }
        _ => errs.push(FieldError::not_supported(&p.child("type"), t, &["Exempt", "Limited"])),
    }
    errs
}

/// `ValidateLimitedPriorityLevelConfiguration`.
fn validate_limited(l: &Value, p: &Path, errs: &mut ErrorList) {
    let n = int(l, "nominalConcurrencyShares").unwrap_or(0);
    if n < 0 {
        errs.push(FieldError::invalid(&p.child("nominalConcurrencyShares"), n, "must be a non-negative integer"));
    }
    let lr = l.get("limitResponse").cloned().unwrap_or(Value::Null);
    let lp = p.child("limitResponse");
    match lr.get("type").and_then(Value::as_str).unwrap_or("") {
        "Reject" => {
            if present(&lr, "queuing") {
                errs.push(FieldError::forbidden(
                    &lp.child("queuing"),
                    "must be nil if limited.limitResponse.type is not Limited",
                ));
            }
        }
        "Queue" => match lr.get("queuing").filter(|q| !q.is_null()) {
            None => errs.push(FieldError::required(
                &lp.child("queuing"),
                "must not be empty if limited.limitResponse.type is Limited",
            )),
            Some(q) => validate_queuing(q, &lp.child("queuing"), errs),
        },
        other => errs.push(FieldError::not_supported(&lp.child("type"), other, &["Queue", "Reject"])),
    }
    if let Some(v) = int(l, "lendablePercent").filter(|v| !(0..=100).contains(v)) {
        errs.push(FieldError::invalid(&p.child("lendablePercent"), v, "must be between 0 and 100, inclusive"));
    }
    if let Some(v) = int(l, "borrowingLimitPercent").filter(|v| *v < 0) {
        errs.push(FieldError::invalid(
            &p.child("borrowingLimitPercent"),
            v,
            "if specified, must be a non-negative integer",
        ));
    }
}

/// The `status.conditions` rules both kinds share: each needs a `type`,
/// and no type appears twice.
fn validate_conditions(obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let p = Path::new("status").child("conditions");
    let mut seen = Vec::new();
    for (i, c) in obj.pointer("/status/conditions").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let t = c.get("type").and_then(Value::as_str).unwrap_or("");
        if seen.contains(&t) {
            errs.push(FieldError::duplicate(&p.index(i).child("type"), t));
        }
        seen.push(t);
        if t.is_empty() {
            errs.push(FieldError::required(&p.index(i).child("type"), "must not be empty"));
        }
    }
    errs
}

/// `ValidatePriorityLevelQueuingConfiguration`: shuffle-sharding limits.
fn validate_queuing(q: &Value, p: &Path, errs: &mut ErrorList) {
    let qll = int(q, "queueLengthLimit").unwrap_or(0);
    if qll <= 0 {
        errs.push(FieldError::invalid(&p.child("queueLengthLimit"), qll, "must be positive"));
    }
    let queues = int(q, "queues").unwrap_or(0);
    if queues <= 0 {
        errs.push(FieldError::invalid(&p.child("queues"), queues, "must be positive"));
    } else if queues > MAX_QUEUES {
        errs.push(FieldError::invalid(&p.child("queues"), queues, &format!("must not be greater than {MAX_QUEUES}")));
    }
    let hand = int(q, "handSize").unwrap_or(0);
    let hp = p.child("handSize");
    if hand <= 0 {
        errs.push(FieldError::invalid(&hp, hand, "must be positive"));
    } else if hand > queues {
        errs.push(FieldError::invalid(&hp, hand, &format!("should not be greater than queues ({queues})")));
    } else if required_entropy_bits(queues, hand) > MAX_HASH_BITS {
        errs.push(FieldError::invalid(
            &hp,
            hand,
            &format!(
                "required entropy bits of deckSize {queues} and handSize {hand} should not be greater than {MAX_HASH_BITS}"
            ),
        ));
    }
}

/// Shuffle sharding's `RequiredEntropyBits`: ceil(log2(deck) * hand).
fn required_entropy_bits(deck: i64, hand: i64) -> i64 {
    ((deck as f64).log2() * hand as f64).ceil() as i64
}

impl Strategy for FlowControl {
    fn default(&self, obj: &mut Value) {
        set_defaults(self.kind, obj);
    }

    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        let mut errs = match self.kind {
            Kind::FlowSchema => validate_flow_schema(obj),
            Kind::PriorityLevel => validate_priority_level(obj),
        };
        errs.extend(validate_conditions(obj));
        errs.to_causes()
    }

    /// Upstream's update validation is the create validation.
    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<StatusCause> {
        self.validate_create(new)
    }

    fn has_status_subresource(&self) -> bool {
        true
    }
    fn tracks_generation(&self) -> bool {
        self.flags.tracks_generation
    }
}

#[cfg(test)]
#[path = "flowcontrol_tests.rs"]
mod tests;
