//! Field selectors, following upstream's `k8s.io/apimachinery/pkg/fields`
//! (`selector.go`, v0.33), the per-kind field-label conversions the API
//! server applies (`pkg/apis/*/v*/conversion.go`, `runtime.Scheme
//! .ConvertFieldLabel`) and the per-kind selectable field sets
//! (`pkg/registry/*/*/strategy.go` `ToSelectableFields`/`GetAttrs`).
//!
//! Grammar: terms separated by unescaped `,` (AND), each `field=value`,
//! `field==value` or `field!=value` (the first operator in the term wins);
//! in values `\,` `\=` `\\` escape, any other backslash sequence or a bare
//! `=` is an error. Fields and values are taken verbatim (no whitespace
//! trimming). Terms are sorted as strings before parsing, and a term that is
//! exactly `=` vanishes, as upstream.
//!
//! Matching: a missing field reads as `""`, so `f=` matches objects without
//! the field and `f!=x` matches them too.
//!
//! The API server path is: [`FieldSelector::parse`] (400 on syntax), then
//! [`FieldSelector::convert_for`]`(kind, group)` (400 `field label not
//! supported: <key>` or the kind-specific variant; renames legacy labels
//! such as `spec.host`), then match objects against [`field_set`].

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::{BuildHasher, Hash};

use serde_json::Value;

use crate::errors::ApiError;
use crate::validation::field::go_quote;

/// The operator of a field requirement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldOperator {
    /// `=` or `==`.
    Equals,
    /// `!=`.
    NotEquals,
}

/// One `field=value` / `field!=value` term.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldRequirement {
    /// The field label, e.g. `status.phase`.
    pub field: String,
    /// The operator.
    pub operator: FieldOperator,
    /// The unescaped value.
    pub value: String,
}

impl fmt::Display for FieldRequirement {
    /// `field=value` or `field!=value` with the value escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.operator {
            FieldOperator::Equals => "=",
            FieldOperator::NotEquals => "!=",
        };
        write!(f, "{}{}{}", self.field, op, escape_value(&self.value))
    }
}

/// The selectable fields of one object: field label → value
/// (what [`field_set`] returns).
pub type FieldSet = BTreeMap<&'static str, String>;

/// Anything field values can be looked up in: a `BTreeMap`/`HashMap` of
/// strings such as a [`FieldSet`]. Closures go through
/// [`FieldSelector::matches_with`].
pub trait FieldSource {
    /// The value of field `key`, if the object has it.
    fn field(&self, key: &str) -> Option<&str>;
}

impl<K: Borrow<str> + Ord, V: AsRef<str>> FieldSource for BTreeMap<K, V> {
    fn field(&self, key: &str) -> Option<&str> {
        self.get(key).map(AsRef::as_ref)
    }
}

impl<K: Borrow<str> + Hash + Eq, V: AsRef<str>, S: BuildHasher> FieldSource for HashMap<K, V, S> {
    fn field(&self, key: &str) -> Option<&str> {
        self.get(key).map(AsRef::as_ref)
    }
}

/// A field selector: the AND of its requirements.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

/// `EscapeValue`: `\` → `\\`, `,` → `\,`, `=` → `\=`.
pub fn escape_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            ',' => out.push_str("\\,"),
            '=' => out.push_str("\\="),
            c => out.push(c),
        }
    }
    out
}

/// `UnescapeValue`, with upstream's error texts
/// (`invalid field selector: invalid escape sequence: \a`,
/// `invalid field selector: unescaped character in value: 61` — the rune
/// printed as a number, as Go's `%v` does).
pub fn unescape_value(s: &str) -> Result<String, String> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            match c {
                '\\' | ',' | '=' => out.push(c),
                _ => return Err(format!("invalid field selector: invalid escape sequence: \\{c}")),
            }
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            ',' | '=' => return Err(format!("invalid field selector: unescaped character in value: {}", c as u32)),
            c => out.push(c),
        }
    }
    if in_slash {
        return Err("invalid field selector: invalid escape sequence: \\".to_string());
    }
    Ok(out)
}

/// `splitTerms`: split on commas not preceded by an escaping backslash.
fn split_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in s.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

/// `splitTerm`: the first position where `!=`, `==` or `=` starts.
fn split_term(term: &str) -> Option<(&str, &'static str, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for op in ["!=", "==", "="] {
            if rest.starts_with(op) {
                return Some((&term[..i], op, &term[i + op.len()..]));
            }
        }
    }
    None
}

impl FieldSelector {
    /// Parses the `fieldSelector` query parameter as `fields.ParseSelector`.
    /// Errors are `400 BadRequest`: `invalid selector: '<s>'; can't
    /// understand '<term>'` or an escaping error from [`unescape_value`].
    pub fn parse(s: &str) -> Result<FieldSelector, ApiError> {
        let mut parts = split_terms(s);
        parts.sort_unstable();
        let mut requirements = Vec::new();
        for part in parts {
            if part.is_empty() {
                continue;
            }
            let Some((lhs, op, rhs)) = split_term(part) else {
                return Err(ApiError::BadRequest(format!("invalid selector: '{s}'; can't understand '{part}'")));
            };
            let value = unescape_value(rhs).map_err(ApiError::BadRequest)?;
            if lhs.is_empty() && value.is_empty() {
                // Transform with the identity function turns `=` into Everything.
                continue;
            }
            let operator = if op == "!=" { FieldOperator::NotEquals } else { FieldOperator::Equals };
            requirements.push(FieldRequirement { field: lhs.to_string(), operator, value });
        }
        Ok(FieldSelector { requirements })
    }

    /// The selector that matches everything.
    pub fn everything() -> FieldSelector {
        FieldSelector::default()
    }

    /// A selector of `field=value` terms (`OneTermEqualSelector`,
    /// `SelectorFromSet`), e.g. `metadata.name=<n>` for a single-object watch.
    pub fn from_set<'a, I>(set: I) -> FieldSelector
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        let requirements = set
            .into_iter()
            .map(|(f, v)| FieldRequirement {
                field: f.to_string(),
                operator: FieldOperator::Equals,
                value: v.to_string(),
            })
            .collect();
        FieldSelector { requirements }
    }

    /// Whether the selector restricts nothing.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The requirements, in parse order (terms sorted as strings).
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// `RequiresExactMatch`: the value of the first `field=value` term on
    /// `field` (e.g. `metadata.name` for single-object lists and watches).
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.operator == FieldOperator::Equals && r.field == field)
            .map(|r| r.value.as_str())
    }

    /// Whether the fields satisfy every term (a missing field is `""`).
    pub fn matches<F: FieldSource + ?Sized>(&self, fields: &F) -> bool {
        self.requirements.iter().all(|r| {
            let have = fields.field(&r.field).unwrap_or("");
            match r.operator {
                FieldOperator::Equals => have == r.value,
                FieldOperator::NotEquals => have != r.value,
            }
        })
    }

    /// [`matches`](Self::matches) with fields looked up by a closure.
    pub fn matches_with<F: Fn(&str) -> Option<String>>(&self, get: F) -> bool {
        self.requirements.iter().all(|r| {
            let have = get(&r.field).unwrap_or_default();
            match r.operator {
                FieldOperator::Equals => have == r.value,
                FieldOperator::NotEquals => have != r.value,
            }
        })
    }

    /// Whether a JSON object of `kind` in `group` matches, using
    /// [`field_set`].
    pub fn matches_object(&self, kind: &str, group: &str, obj: &Value) -> bool {
        self.is_empty() || self.matches(&field_set(kind, group, obj))
    }

    /// Rejects the first term whose field is not in `supported` with
    /// `400 field label not supported: <key>` (for kinds whose allowed keys
    /// are known by list, e.g. custom resources' selectable fields).
    pub fn check_supported(&self, supported: &[&str]) -> Result<(), ApiError> {
        for r in &self.requirements {
            if !supported.contains(&r.field.as_str()) {
                return Err(ApiError::BadRequest(format!("field label not supported: {}", r.field)));
            }
        }
        Ok(())
    }

    /// The API server's per-kind `Transform(ConvertFieldLabel)`: every term's
    /// label goes through [`convert_field_label`] (first error is a 400 with
    /// upstream's per-kind text), legacy labels are renamed, and terms that
    /// end up with an empty label and value are dropped.
    pub fn convert_for(&self, kind: &str, group: &str) -> Result<FieldSelector, ApiError> {
        let mut out = Vec::with_capacity(self.requirements.len());
        for r in &self.requirements {
            let field = convert_field_label(kind, group, &r.field).map_err(ApiError::BadRequest)?;
            if field.is_empty() && r.value.is_empty() {
                continue;
            }
            out.push(FieldRequirement { field, operator: r.operator, value: r.value.clone() });
        }
        Ok(FieldSelector { requirements: out })
    }
}

impl fmt::Display for FieldSelector {
    /// Terms joined by `,`, values escaped (`String()`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for FieldSelector {
    type Err = ApiError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FieldSelector::parse(s)
    }
}

const META: [&str; 2] = ["metadata.name", "metadata.namespace"];
const POD_FIELDS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.podIPs",
    "status.nominatedNodeName",
];
const NODE_FIELDS: &[&str] = &["metadata.name", "spec.unschedulable"];
const RC_FIELDS: &[&str] = &["metadata.name", "metadata.namespace", "status.replicas"];
const EVENT_FIELDS: &[&str] = &[
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
    "metadata.namespace",
    "metadata.name",
];
const NAMESPACE_FIELDS: &[&str] = &["status.phase", "metadata.name"];
const SECRET_FIELDS: &[&str] = &["type", "metadata.namespace", "metadata.name"];
const SERVICE_FIELDS: &[&str] = &["metadata.namespace", "metadata.name", "spec.clusterIP", "spec.type"];
const CSR_FIELDS: &[&str] = &["metadata.name", "spec.signerName"];
const JOB_FIELDS: &[&str] = &["metadata.name", "metadata.namespace", "status.successful"];
/// events.k8s.io/v1 Event labels → the core field-set names they select.
const EVENTS_V1_MAPPING: &[(&str, &str)] = &[
    ("reason", "reason"),
    ("regarding.kind", "involvedObject.kind"),
    ("regarding.namespace", "involvedObject.namespace"),
    ("regarding.name", "involvedObject.name"),
    ("regarding.uid", "involvedObject.uid"),
    ("regarding.apiVersion", "involvedObject.apiVersion"),
    ("regarding.resourceVersion", "involvedObject.resourceVersion"),
    ("regarding.fieldPath", "involvedObject.fieldPath"),
    ("reportingController", "reportingComponent"),
    ("source", "source"),
    ("type", "type"),
    ("metadata.namespace", "metadata.namespace"),
    ("metadata.name", "metadata.name"),
];

/// The field labels a kind accepts in `fieldSelector`, as registered by
/// upstream's field-label conversion functions (kinds without one accept
/// `metadata.name` and `metadata.namespace`). For `events.k8s.io` Events
/// these are the `regarding.*`/`reportingController` spellings.
pub fn selectable_fields(kind: &str, group: &str) -> Vec<&'static str> {
    match (group, kind) {
        ("events.k8s.io", "Event") => EVENTS_V1_MAPPING.iter().map(|(k, _)| *k).collect(),
        _ => registered_fields(kind, group).map(<[&str]>::to_vec).unwrap_or_else(|| META.to_vec()),
    }
}

fn registered_fields(kind: &str, group: &str) -> Option<&'static [&'static str]> {
    Some(match (group, kind) {
        ("", "Pod") => POD_FIELDS,
        ("", "Node") => NODE_FIELDS,
        ("", "ReplicationController") => RC_FIELDS,
        ("", "Event") => EVENT_FIELDS,
        ("", "Namespace") => NAMESPACE_FIELDS,
        ("", "Secret") => SECRET_FIELDS,
        ("", "Service") => SERVICE_FIELDS,
        ("certificates.k8s.io", "CertificateSigningRequest") => CSR_FIELDS,
        ("batch", "Job") => JOB_FIELDS,
        _ => return None,
    })
}

/// Upstream's `ConvertFieldLabel` for `kind` in `group`: the (possibly
/// renamed) label, or the 400 message:
///
/// * kinds with a registered conversion: `field label not supported: <key>`
///   (batch Jobs: `field label "<key>" not supported for batchv1.Job`);
/// * all other kinds: `"<key>" is not a known field selector: only
///   "metadata.name", "metadata.namespace"` — this includes apps/v1
///   ReplicaSets, whose `status.replicas` is in the field set but not
///   selectable through apps/v1.
///
/// Renames: pods' legacy `spec.host` → `spec.nodeName`; events.k8s.io
/// `regarding.*` → `involvedObject.*`, `reportingController` →
/// `reportingComponent`.
pub fn convert_field_label(kind: &str, group: &str, label: &str) -> Result<String, String> {
    if group == "events.k8s.io" && kind == "Event" {
        return EVENTS_V1_MAPPING
            .iter()
            .find(|(k, _)| *k == label)
            .map(|(_, v)| v.to_string())
            .ok_or_else(|| format!("field label not supported: {label}"));
    }
    if group.is_empty() && kind == "Pod" && label == "spec.host" {
        return Ok("spec.nodeName".to_string());
    }
    match registered_fields(kind, group) {
        Some(list) if list.contains(&label) => Ok(label.to_string()),
        Some(_) if group == "batch" && kind == "Job" => {
            Err(format!("field label {} not supported for batchv1.Job", go_quote(label)))
        }
        Some(_) => Err(format!("field label not supported: {label}")),
        None if META.contains(&label) => Ok(label.to_string()),
        None => Err(format!(
            "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
            go_quote(label)
        )),
    }
}

fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    Some(cur)
}

fn s(v: &Value, path: &[&str]) -> String {
    at(v, path).and_then(Value::as_str).unwrap_or("").to_string()
}

fn int(v: &Value, path: &[&str]) -> String {
    at(v, path).and_then(Value::as_i64).unwrap_or(0).to_string()
}

fn boolean(v: &Value, path: &[&str]) -> String {
    at(v, path).and_then(Value::as_bool).unwrap_or(false).to_string()
}

fn is_cluster_scoped_with_fields(kind: &str, group: &str) -> bool {
    matches!((group, kind), ("", "Node") | ("", "Namespace") | ("certificates.k8s.io", "CertificateSigningRequest"))
}

/// The selectable fields of a JSON object of `kind` in `group`, as upstream's
/// per-kind `GetAttrs`/`ToSelectableFields` compute them from the stored
/// object (missing strings are `""`, missing integers `"0"`, booleans
/// `"true"`/`"false"`):
///
/// * every kind: `metadata.name`, and `metadata.namespace` (except the
///   cluster-scoped Node, Namespace and CertificateSigningRequest);
/// * Pod: `spec.nodeName`, `spec.restartPolicy`, `spec.schedulerName`,
///   `spec.serviceAccountName` (falling back to the deprecated
///   `spec.serviceAccount`), `spec.hostNetwork`, `status.phase`,
///   `status.podIP` (`status.podIP`, else `status.podIPs[0].ip`),
///   `status.nominatedNodeName` (`status.podIPs` is accepted by the
///   conversion but has no value upstream, so it always reads `""`);
/// * Node: `spec.unschedulable`; Namespace: `status.phase` (and the
///   legacy, unselectable `name`); Secret: `type`; Service:
///   `spec.clusterIP`, `spec.type`;
/// * Event (core/v1 shape, or events.k8s.io/v1 shape when `group` is
///   `events.k8s.io`): `involvedObject.{kind,namespace,name,uid,apiVersion,
///   resourceVersion,fieldPath}`, `reason`, `reportingComponent`, `source`
///   (`source.component`, else the reporting controller), `type`;
/// * ReplicationController and apps ReplicaSet: `status.replicas`;
///   batch Job: `status.successful` (= `status.succeeded`);
///   CertificateSigningRequest: `spec.signerName`.
pub fn field_set(kind: &str, group: &str, obj: &Value) -> FieldSet {
    let mut f = FieldSet::new();
    f.insert("metadata.name", s(obj, &["metadata", "name"]));
    if !is_cluster_scoped_with_fields(kind, group) {
        f.insert("metadata.namespace", s(obj, &["metadata", "namespace"]));
    }
    match (group, kind) {
        ("", "Pod") => {
            f.insert("spec.nodeName", s(obj, &["spec", "nodeName"]));
            f.insert("spec.restartPolicy", s(obj, &["spec", "restartPolicy"]));
            f.insert("spec.schedulerName", s(obj, &["spec", "schedulerName"]));
            let mut sa = s(obj, &["spec", "serviceAccountName"]);
            if sa.is_empty() {
                sa = s(obj, &["spec", "serviceAccount"]);
            }
            f.insert("spec.serviceAccountName", sa);
            f.insert("spec.hostNetwork", boolean(obj, &["spec", "hostNetwork"]));
            f.insert("status.phase", s(obj, &["status", "phase"]));
            let mut ip = s(obj, &["status", "podIP"]);
            if ip.is_empty() {
                ip = at(obj, &["status", "podIPs"])
                    .and_then(|a| a.get(0))
                    .and_then(|e| e.get("ip"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
            }
            f.insert("status.podIP", ip);
            f.insert("status.nominatedNodeName", s(obj, &["status", "nominatedNodeName"]));
        }
        ("", "Node") => {
            f.insert("spec.unschedulable", boolean(obj, &["spec", "unschedulable"]));
        }
        ("", "Namespace") => {
            f.insert("status.phase", s(obj, &["status", "phase"]));
            f.insert("name", s(obj, &["metadata", "name"]));
        }
        ("", "Secret") => {
            f.insert("type", s(obj, &["type"]));
        }
        ("", "Service") => {
            f.insert("spec.clusterIP", s(obj, &["spec", "clusterIP"]));
            f.insert("spec.type", s(obj, &["spec", "type"]));
        }
        ("", "Event") | ("events.k8s.io", "Event") => {
            // events.k8s.io names the same fields differently; both views
            // answer to the core field labels.
            let (regarding, reporting, source) = if group.is_empty() {
                ("involvedObject", "reportingComponent", "source")
            } else {
                ("regarding", "reportingController", "deprecatedSource")
            };
            for (k, j) in [
                ("involvedObject.kind", "kind"),
                ("involvedObject.namespace", "namespace"),
                ("involvedObject.name", "name"),
                ("involvedObject.uid", "uid"),
                ("involvedObject.apiVersion", "apiVersion"),
                ("involvedObject.resourceVersion", "resourceVersion"),
                ("involvedObject.fieldPath", "fieldPath"),
            ] {
                f.insert(k, s(obj, &[regarding, j]));
            }
            f.insert("reason", s(obj, &["reason"]));
            let reporting = s(obj, &[reporting]);
            let mut source = s(obj, &[source, "component"]);
            if source.is_empty() {
                source = reporting.clone();
            }
            f.insert("reportingComponent", reporting);
            f.insert("source", source);
            f.insert("type", s(obj, &["type"]));
        }
        ("", "ReplicationController") | ("apps", "ReplicaSet") => {
            f.insert("status.replicas", int(obj, &["status", "replicas"]));
        }
        ("batch", "Job") => {
            f.insert("status.successful", int(obj, &["status", "succeeded"]));
        }
        ("certificates.k8s.io", "CertificateSigningRequest") => {
            f.insert("spec.signerName", s(obj, &["spec", "signerName"]));
        }
        _ => {}
    }
    f
}

#[cfg(test)]
#[allow(clippy::type_complexity)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn bad(s: &str) -> String {
        match FieldSelector::parse(s) {
            Err(ApiError::BadRequest(m)) => m,
            other => panic!("{s:?}: expected BadRequest, got {other:?}"),
        }
    }

    #[test]
    fn split_terms_like_upstream() {
        let cases: Vec<(&str, Vec<&str>)> = vec![
            ("a", vec!["a"]),
            ("a=avalue", vec!["a=avalue"]),
            ("a=avalue,b=bvalue", vec!["a=avalue", "b=bvalue"]),
            ("a=avalue,b==bvalue,c!=cvalue", vec!["a=avalue", "b==bvalue", "c!=cvalue"]),
            ("", vec![]),
            ("a=a,", vec!["a=a", ""]),
            (",a=a", vec!["", "a=a"]),
            (r"k=\,,k2=v2", vec![r"k=\,", "k2=v2"]),
            (r"k=\\,k2=v2", vec![r"k=\\", "k2=v2"]),
            (r"k=\\\,,k2=v2", vec![r"k=\\\,", "k2=v2"]),
            (r"k=\a\b\", vec![r"k=\a\b\"]),
            (r"k=\", vec![r"k=\"]),
            ("함=수,목=록", vec!["함=수", "목=록"]),
        ];
        for (input, want) in cases {
            assert_eq!(split_terms(input), want, "{input:?}");
        }
    }

    #[test]
    fn split_term_like_upstream() {
        let cases: Vec<(&str, Option<(&str, &str, &str)>)> = vec![
            ("a=value", Some(("a", "=", "value"))),
            ("b==value", Some(("b", "==", "value"))),
            ("c!=value", Some(("c", "!=", "value"))),
            ("", None),
            ("a", None),
            (r"k=\,", Some(("k", "=", r"\,"))),
            (r"k=\=", Some(("k", "=", r"\="))),
            (r"k=\\\a\b\=\,\", Some(("k", "=", r"\\\a\b\=\,\"))),
            ("함=수", Some(("함", "=", "수"))),
            ("a!b=c", Some(("a!b", "=", "c"))),
            ("a=!=b", Some(("a", "=", "!=b"))),
        ];
        for (input, want) in cases {
            assert_eq!(split_term(input), want, "{input:?}");
        }
    }

    #[test]
    fn escaping_round_trips() {
        let cases = [("", ""), ("a", "a"), ("=", r"\="), (",", r"\,"), ("\\", r"\\"), (r"\=\,\", r"\\\=\\\,\\")];
        for (raw, escaped) in cases {
            assert_eq!(escape_value(raw), escaped);
            assert_eq!(unescape_value(escaped).unwrap(), raw);
        }
        assert_eq!(unescape_value(r"\").unwrap_err(), r"invalid field selector: invalid escape sequence: \");
        assert_eq!(unescape_value(r"\\\").unwrap_err(), r"invalid field selector: invalid escape sequence: \");
        assert_eq!(unescape_value(r"\a").unwrap_err(), r"invalid field selector: invalid escape sequence: \a");
        assert_eq!(unescape_value("a=b").unwrap_err(), "invalid field selector: unescaped character in value: 61");
        assert_eq!(unescape_value("a,b").unwrap_err(), "invalid field selector: unescaped character in value: 44");
    }

    #[test]
    fn good_strings_render_back() {
        for s in ["x=a,y=b,z=c", "", "x!=a,y=b", r"x=a||y\=b", r"x=a\=\=b"] {
            let sel = FieldSelector::parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"));
            assert_eq!(sel.to_string(), s);
        }
        let cases = [
            ("x=a,a=x", "a=x,x=a"),
            ("a=x,x=a", "a=x,x=a"),
            ("x==a", "x=a"),
            ("x=a,", "x=a"),
            (",x=a", "x=a"),
            ("=", ""),
            ("=,a=b", "a=b"),
            ("status.phase!=Running,spec.nodeName=n1", "spec.nodeName=n1,status.phase!=Running"),
            ("a = b", "a = b"),
            (r"k=\,,k2=v2", r"k2=v2,k=\,"),
        ];
        for (input, want) in cases {
            assert_eq!(FieldSelector::parse(input).unwrap().to_string(), want, "{input:?}");
        }
    }

    #[test]
    fn bad_strings_give_upstream_messages() {
        let cases = [
            ("x=a||y=b", "invalid field selector: unescaped character in value: 61"),
            ("x==a==b", "invalid field selector: unescaped character in value: 61"),
            ("x=a,b", "invalid selector: 'x=a,b'; can't understand 'b'"),
            ("x in (a)", "invalid selector: 'x in (a)'; can't understand 'x in (a)'"),
            ("x in (a,b,c)", "invalid selector: 'x in (a,b,c)'; can't understand 'b'"),
            ("x", "invalid selector: 'x'; can't understand 'x'"),
            (r"x=a\b", r"invalid field selector: invalid escape sequence: \b"),
            (r"x=a\", r"invalid field selector: invalid escape sequence: \"),
        ];
        for (input, want) in cases {
            assert_eq!(bad(input), want, "{input:?}");
        }
        assert_eq!(FieldSelector::parse("x").unwrap_err().code(), 400);
    }

    #[test]
    fn matching_follows_upstream() {
        let cases: Vec<(&str, Vec<(&str, &str)>, bool)> = vec![
            ("", vec![("x", "y")], true),
            ("x=y", vec![("x", "y")], true),
            ("x=y,z=w", vec![("x", "y"), ("z", "w")], true),
            ("x!=y,z!=w", vec![("x", "z"), ("z", "a")], true),
            ("notin=in", vec![("notin", "in")], true),
            ("x=y", vec![("x", "z")], false),
            ("x=y,z=w", vec![("x", "w"), ("z", "w")], false),
            ("x!=y,z!=w", vec![("x", "z"), ("z", "w")], false),
            ("foo=bar", vec![("foo", "bar"), ("baz", "blah"), ("complex", r"=value\,\")], true),
            (
                r"foo=bar,baz=blah,complex=\=value\\\,\\",
                vec![("foo", "bar"), ("baz", "blah"), ("complex", r"=value\,\")],
                true,
            ),
            ("foo=bar,foobar=bar,baz=blah", vec![("foo", "bar"), ("baz", "blah")], false),
            ("missing=", vec![], true),
            ("missing!=x", vec![], true),
            ("missing=x", vec![], false),
            ("x==y", vec![("x", "y")], true),
        ];
        for (sel, fields, want) in cases {
            let s = FieldSelector::parse(sel).unwrap();
            assert_eq!(s.matches(&fs(&fields)), want, "{sel:?} against {fields:?}");
            let m = fs(&fields);
            assert_eq!(s.matches_with(|k| m.get(k).cloned()), want);
        }
    }

    #[test]
    fn requires_exact_match_and_from_set() {
        let s = FieldSelector::parse("metadata.name=web,status.phase!=Failed").unwrap();
        assert_eq!(s.requires_exact_match("metadata.name"), Some("web"));
        assert_eq!(s.requires_exact_match("status.phase"), None);
        assert_eq!(s.requires_exact_match("x"), None);
        assert_eq!(FieldSelector::parse("a=").unwrap().requires_exact_match("a"), Some(""));
        let one = FieldSelector::from_set([("metadata.name", "a,b")]);
        assert_eq!(one.to_string(), r"metadata.name=a\,b");
        assert!(FieldSelector::everything().is_empty());
        assert!(FieldSelector::parse("").unwrap().is_empty());
        assert_eq!(FieldSelector::parse("a!=b").unwrap().requirements()[0].operator, FieldOperator::NotEquals);
    }

    #[test]
    fn check_supported_reports_the_first_unknown_key() {
        let s = FieldSelector::parse("status.phase=Running,spec.foo=x,spec.bar=y").unwrap();
        let e = s.check_supported(&["status.phase", "metadata.name"]).unwrap_err();
        assert_eq!(e, ApiError::BadRequest("field label not supported: spec.bar".into()));
        assert!(FieldSelector::parse("status.phase=Running").unwrap().check_supported(&["status.phase"]).is_ok());
    }

    #[test]
    fn per_kind_conversions() {
        let ok: Vec<(&str, &str, &str, &str)> = vec![
            ("Pod", "", "spec.nodeName", "spec.nodeName"),
            ("Pod", "", "spec.host", "spec.nodeName"),
            ("Pod", "", "status.podIPs", "status.podIPs"),
            ("Pod", "", "spec.hostNetwork", "spec.hostNetwork"),
            ("Pod", "", "metadata.namespace", "metadata.namespace"),
            ("Node", "", "spec.unschedulable", "spec.unschedulable"),
            ("Namespace", "", "status.phase", "status.phase"),
            ("Secret", "", "type", "type"),
            ("Service", "", "spec.clusterIP", "spec.clusterIP"),
            ("Service", "", "spec.type", "spec.type"),
            ("Event", "", "involvedObject.uid", "involvedObject.uid"),
            ("Event", "", "reportingComponent", "reportingComponent"),
            ("Event", "events.k8s.io", "regarding.name", "involvedObject.name"),
            ("Event", "events.k8s.io", "reportingController", "reportingComponent"),
            ("Event", "events.k8s.io", "source", "source"),
            ("ReplicationController", "", "status.replicas", "status.replicas"),
            ("Job", "batch", "status.successful", "status.successful"),
            ("CertificateSigningRequest", "certificates.k8s.io", "spec.signerName", "spec.signerName"),
            ("ConfigMap", "", "metadata.name", "metadata.name"),
            ("ClusterRole", "rbac.authorization.k8s.io", "metadata.namespace", "metadata.namespace"),
            ("Deployment", "apps", "metadata.namespace", "metadata.namespace"),
        ];
        for (kind, group, label, want) in ok {
            assert_eq!(convert_field_label(kind, group, label).as_deref(), Ok(want), "{group}/{kind} {label}");
        }
        let err: Vec<(&str, &str, &str, &str)> = vec![
            ("Pod", "", "spec.containers", "field label not supported: spec.containers"),
            ("Node", "", "metadata.namespace", "field label not supported: metadata.namespace"),
            ("Namespace", "", "metadata.namespace", "field label not supported: metadata.namespace"),
            ("Namespace", "", "name", "field label not supported: name"),
            ("Event", "", "involvedObject.foo", "field label not supported: involvedObject.foo"),
            ("Event", "events.k8s.io", "involvedObject.name", "field label not supported: involvedObject.name"),
            (
                "CertificateSigningRequest",
                "certificates.k8s.io",
                "metadata.namespace",
                "field label not supported: metadata.namespace",
            ),
            ("Job", "batch", "status.succeeded", "field label \"status.succeeded\" not supported for batchv1.Job"),
            (
                "ReplicaSet",
                "apps",
                "status.replicas",
                "\"status.replicas\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
            ),
            (
                "ConfigMap",
                "",
                "data.x",
                "\"data.x\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
            ),
        ];
        for (kind, group, label, want) in err {
            assert_eq!(convert_field_label(kind, group, label), Err(want.to_string()), "{group}/{kind} {label}");
        }
        assert_eq!(selectable_fields("ConfigMap", ""), vec!["metadata.name", "metadata.namespace"]);
        assert!(selectable_fields("Event", "events.k8s.io").contains(&"regarding.kind"));
        assert!(selectable_fields("Pod", "").contains(&"status.nominatedNodeName"));
    }

    #[test]
    fn convert_for_renames_and_rejects() {
        let s = FieldSelector::parse("spec.host=n1,status.phase=Running").unwrap();
        let c = s.convert_for("Pod", "").unwrap();
        assert_eq!(c.to_string(), "spec.nodeName=n1,status.phase=Running");
        let e = FieldSelector::parse("spec.foo=1,status.phase=Running").unwrap().convert_for("Pod", "").unwrap_err();
        assert_eq!(e, ApiError::BadRequest("field label not supported: spec.foo".into()));
        let e = FieldSelector::parse("status.replicas=1").unwrap().convert_for("ReplicaSet", "apps").unwrap_err();
        assert_eq!(
            e.to_string(),
            "\"status.replicas\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
        let c = FieldSelector::parse("regarding.name=p").unwrap().convert_for("Event", "events.k8s.io").unwrap();
        assert_eq!(c.to_string(), "involvedObject.name=p");
    }

    #[test]
    fn pod_field_set() {
        let pod = json!({
            "metadata": {"name": "web-1", "namespace": "default"},
            "spec": {"nodeName": "n1", "restartPolicy": "Always", "schedulerName": "default-scheduler",
                     "serviceAccountName": "sa", "hostNetwork": true},
            "status": {"phase": "Running", "podIP": "10.42.0.5", "podIPs": [{"ip": "10.42.0.5"}, {"ip": "fd00::5"}],
                       "nominatedNodeName": "n2"}
        });
        let f = field_set("Pod", "", &pod);
        let want: Vec<(&str, &str)> = vec![
            ("metadata.name", "web-1"),
            ("metadata.namespace", "default"),
            ("spec.hostNetwork", "true"),
            ("spec.nodeName", "n1"),
            ("spec.restartPolicy", "Always"),
            ("spec.schedulerName", "default-scheduler"),
            ("spec.serviceAccountName", "sa"),
            ("status.nominatedNodeName", "n2"),
            ("status.phase", "Running"),
            ("status.podIP", "10.42.0.5"),
        ];
        let got: Vec<(&str, &str)> = f.iter().map(|(k, v)| (*k, v.as_str())).collect();
        assert_eq!(got, want);

        let bare = json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"serviceAccount": "legacy"},
                          "status": {"podIPs": [{"ip": "10.0.0.9"}]}});
        let f = field_set("Pod", "", &bare);
        assert_eq!(f["spec.hostNetwork"], "false");
        assert_eq!(f["spec.nodeName"], "");
        assert_eq!(f["spec.serviceAccountName"], "legacy");
        assert_eq!(f["status.podIP"], "10.0.0.9");
        assert_eq!(f["status.phase"], "");

        let on_node = FieldSelector::parse("spec.nodeName=n1").unwrap();
        assert!(on_node.matches_object("Pod", "", &pod));
        assert!(!on_node.matches_object("Pod", "", &bare));
        let unscheduled = FieldSelector::parse("spec.nodeName=").unwrap();
        assert!(unscheduled.matches_object("Pod", "", &bare));
        let not_running = FieldSelector::parse("status.phase!=Running").unwrap();
        assert!(!not_running.matches_object("Pod", "", &pod));
        assert!(FieldSelector::parse("status.podIPs=").unwrap().matches_object("Pod", "", &pod));
        assert!(!FieldSelector::parse("status.podIPs=10.42.0.5").unwrap().matches_object("Pod", "", &pod));
        assert!(FieldSelector::parse("spec.hostNetwork=true,metadata.name=web-1")
            .unwrap()
            .matches_object("Pod", "", &pod));
    }

    #[test]
    fn other_kinds_field_sets() {
        let node = json!({"metadata": {"name": "n1"}, "spec": {"unschedulable": true}});
        let f = field_set("Node", "", &node);
        assert_eq!(f.len(), 2);
        assert_eq!(f["spec.unschedulable"], "true");
        assert_eq!(field_set("Node", "", &json!({"metadata": {"name": "n2"}}))["spec.unschedulable"], "false");

        let ns = json!({"metadata": {"name": "kube-system"}, "status": {"phase": "Active"}});
        let f = field_set("Namespace", "", &ns);
        assert_eq!(f["status.phase"], "Active");
        assert_eq!(f["name"], "kube-system");
        assert!(!f.contains_key("metadata.namespace"));

        let secret = json!({"metadata": {"name": "s", "namespace": "d"}, "type": "kubernetes.io/tls"});
        assert_eq!(field_set("Secret", "", &secret)["type"], "kubernetes.io/tls");

        let svc = json!({"metadata": {"name": "k", "namespace": "default"}, "spec": {"clusterIP": "10.43.0.1", "type": "ClusterIP"}});
        let f = field_set("Service", "", &svc);
        assert_eq!((f["spec.clusterIP"].as_str(), f["spec.type"].as_str()), ("10.43.0.1", "ClusterIP"));

        let rc = json!({"metadata": {"name": "r", "namespace": "d"}, "status": {"replicas": 3}});
        assert_eq!(field_set("ReplicationController", "", &rc)["status.replicas"], "3");
        assert_eq!(field_set("ReplicaSet", "apps", &json!({"metadata": {}}))["status.replicas"], "0");

        let job = json!({"metadata": {"name": "j", "namespace": "d"}, "status": {"succeeded": 2}});
        assert_eq!(field_set("Job", "batch", &job)["status.successful"], "2");
        assert_eq!(field_set("Job", "batch", &json!({}))["status.successful"], "0");

        let csr = json!({"metadata": {"name": "c"}, "spec": {"signerName": "kubernetes.io/kube-apiserver-client"}});
        let f = field_set("CertificateSigningRequest", "certificates.k8s.io", &csr);
        assert_eq!(f["spec.signerName"], "kubernetes.io/kube-apiserver-client");
        assert!(!f.contains_key("metadata.namespace"));

        let cm = json!({"metadata": {"name": "c", "namespace": "d"}, "data": {"a": "b"}});
        let f = field_set("ConfigMap", "", &cm);
        assert_eq!(f.len(), 2);
        assert_eq!(f["metadata.namespace"], "d");
    }

    #[test]
    fn event_field_sets_in_both_shapes() {
        let core = json!({
            "metadata": {"name": "web.17", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web", "uid": "u1", "apiVersion": "v1",
                               "resourceVersion": "42", "fieldPath": "spec.containers{web}"},
            "reason": "Pulled", "type": "Normal", "source": {"component": "kubelet", "host": "n1"},
            "reportingComponent": "kubelet"
        });
        let f = field_set("Event", "", &core);
        assert_eq!(f["involvedObject.kind"], "Pod");
        assert_eq!(f["involvedObject.fieldPath"], "spec.containers{web}");
        assert_eq!(f["involvedObject.resourceVersion"], "42");
        assert_eq!(f["source"], "kubelet");
        assert_eq!(f["reportingComponent"], "kubelet");
        assert_eq!(f.len(), 13);

        let no_source = json!({"metadata": {"name": "e", "namespace": "d"}, "reportingComponent": "default-scheduler"});
        assert_eq!(field_set("Event", "", &no_source)["source"], "default-scheduler");

        let v1 = json!({
            "metadata": {"name": "web.17", "namespace": "default"},
            "regarding": {"kind": "Pod", "namespace": "default", "name": "web", "uid": "u1"},
            "reason": "Scheduled", "type": "Normal", "reportingController": "default-scheduler"
        });
        let f = field_set("Event", "events.k8s.io", &v1);
        assert_eq!(f["involvedObject.name"], "web");
        assert_eq!(f["reportingComponent"], "default-scheduler");
        assert_eq!(f["source"], "default-scheduler");
        let sel = FieldSelector::parse("regarding.name=web,reportingController=default-scheduler")
            .unwrap()
            .convert_for("Event", "events.k8s.io")
            .unwrap();
        assert!(sel.matches_object("Event", "events.k8s.io", &v1));
        let sel = FieldSelector::parse("involvedObject.name=web,involvedObject.kind=Pod,type=Normal").unwrap();
        assert!(sel.matches_object("Event", "", &core));
        assert!(!FieldSelector::parse("involvedObject.uid=u2").unwrap().matches_object("Event", "", &core));
    }
}
