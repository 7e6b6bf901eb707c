//! `authorization.k8s.io/v1`: the access reviews (`kubectl auth can-i`).
//!
//! - `SelfSubjectAccessReview`: may the requesting user do this?
//! - `SubjectAccessReview` / `LocalSubjectAccessReview`: may `spec.user` /
//!   `spec.groups` do this (the local one in the URL's namespace)?
//! - `SelfSubjectRulesReview`: every rule the requesting user holds in
//!   `spec.namespace` (`kubectl auth can-i --list`).
//!
//! Validation follows upstream's `pkg/apis/authorization/validation`
//! (exactly one of `resourceAttributes` / `nonResourceAttributes`, a
//! subject for the non-self reviews, empty metadata, the selector
//! attributes' raw-or-requirements rule) with its field paths and
//! messages; failures are 422 `<Kind>.authorization.k8s.io "" is invalid`.
//! Per-requirement selector checks are not done yet. Decisions come from
//! the server's authorizer chain ([`crate::rest::Api::authorizer`]).

use rkube_apimachinery::validation::{go_quote, BadValue, ErrorList, FieldError, Path};
use rkube_apimachinery::{meta, ApiError};
use serde_json::{json, Value};

use super::Review;
use crate::authn::UserInfo;
use crate::authz::{Attributes, Authorizer, Decision};
use crate::rest::create::NAMESPACE_MISMATCH;

const GROUP: &str = "authorization.k8s.io";

/// `create` of a SelfSubjectAccessReview, SubjectAccessReview or
/// LocalSubjectAccessReview (`kind`): the request with `status`
/// (`allowed`, `denied`, `reason`, `evaluationError`) filled.
pub fn access_review(review: &Review<'_>, kind: &str) -> Result<Value, ApiError> {
    let mut object = review.object.clone();
    let local = kind == "LocalSubjectAccessReview";
    if local {
        let url_ns = review.request.namespace.as_str();
        match meta::namespace(&object) {
            "" => meta::set(&mut object, "namespace", json!(url_ns)),
            ns if ns != url_ns => return Err(ApiError::BadRequest(NAMESPACE_MISMATCH.into())),
            _ => {}
        }
    }
    let errs = validate(&object, kind);
    if !errs.is_empty() {
        return Err(errs.into_invalid(GROUP, kind, ""));
    }
    let spec = object.get("spec").cloned().unwrap_or(json!({}));
    let user = if kind == "SelfSubjectAccessReview" { review.user()?.clone() } else { subject(&spec) };
    let attrs = attributes(&spec, user);
    let (decision, reason) = review.api.authorizer().authorize(&attrs);
    let mut status = serde_json::Map::new();
    status.insert("allowed".into(), json!(decision == Decision::Allow));
    if decision == Decision::Deny {
        status.insert("denied".into(), json!(true));
    }
    if !reason.is_empty() {
        status.insert("reason".into(), json!(reason));
    }
    tracing::debug!(
        component = crate::COMPONENT,
        kind,
        user = %attrs.user.name,
        verb = %attrs.verb,
        resource = %attrs.resource,
        path = %attrs.path,
        ?decision,
        "access review"
    );
    super::null_creation_timestamp(&mut object);
    object["status"] = Value::Object(status);
    Ok(object)
}

/// `create` of a SelfSubjectRulesReview: the requesting user's rules in
/// `spec.namespace` (required: upstream's 400 `no namespace on request`).
pub fn self_subject_rules_review(review: &Review<'_>) -> Result<Value, ApiError> {
    let user = review.user()?;
    let namespace = review.object.pointer("/spec/namespace").and_then(Value::as_str).unwrap_or("");
    if namespace.is_empty() {
        return Err(ApiError::BadRequest("no namespace on request".into()));
    }
    let rules = review.api.authorizer().rules_for(user, namespace);
    let resource_rules: Vec<Value> = rules
        .resource_rules
        .iter()
        .map(|r| {
            let mut m = serde_json::Map::new();
            m.insert("verbs".into(), json!(r.verbs));
            for (key, list) in
                [("apiGroups", &r.api_groups), ("resources", &r.resources), ("resourceNames", &r.resource_names)]
            {
                if !list.is_empty() {
                    m.insert(key.into(), json!(list));
                }
            }
            Value::Object(m)
        })
        .collect();
    let non_resource_rules: Vec<Value> = rules
        .non_resource_rules
        .iter()
        .map(|r| {
            let mut m = serde_json::Map::new();
            m.insert("verbs".into(), json!(r.verbs));
            if !r.non_resource_urls.is_empty() {
                m.insert("nonResourceURLs".into(), json!(r.non_resource_urls));
            }
            Value::Object(m)
        })
        .collect();
    // Upstream answers a new object: no spec, zero metadata.
    Ok(json!({
        "kind": "SelfSubjectRulesReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {"creationTimestamp": null},
        "spec": {},
        "status": {
            "resourceRules": resource_rules,
            "nonResourceRules": non_resource_rules,
            "incomplete": rules.incomplete,
        },
    }))
}

/// The subject a (Local)SubjectAccessReview names.
fn subject(spec: &Value) -> UserInfo {
    let s = |k: &str| spec.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let strings = |v: &Value| -> Vec<String> {
        v.as_array().map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect()).unwrap_or_default()
    };
    let extra = spec
        .get("extra")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), strings(v))).collect())
        .unwrap_or_default();
    UserInfo { name: s("user"), uid: s("uid"), groups: spec.get("groups").map(strings).unwrap_or_default(), extra }
}

/// Upstream's `ResourceAttributesFrom` / `NonResourceAttributesFrom`.
fn attributes(spec: &Value, user: UserInfo) -> Attributes {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    match spec.get("resourceAttributes").filter(|v| v.is_object()) {
        Some(ra) => Attributes {
            user,
            verb: s(ra, "verb"),
            resource_request: true,
            namespace: s(ra, "namespace"),
            api_group: s(ra, "group"),
            resource: s(ra, "resource"),
            subresource: s(ra, "subresource"),
            name: s(ra, "name"),
            path: String::new(),
            field_selector: ra.pointer("/fieldSelector/rawSelector").and_then(Value::as_str).unwrap_or("").to_string(),
        },
        None => {
            let nra = spec.get("nonResourceAttributes").cloned().unwrap_or(json!({}));
            Attributes { user, verb: s(&nra, "verb"), path: s(&nra, "path"), ..Default::default() }
        }
    }
}

/// Upstream's `Validate{,Self,Local}SubjectAccessReview`.
pub fn validate(object: &Value, kind: &str) -> ErrorList {
    let mut errs = ErrorList::new();
    let spec = object.get("spec").cloned().unwrap_or(json!({}));
    let spec_path = Path::new("spec");
    let present = |k: &str| spec.get(k).is_some_and(|v| !v.is_null());
    let (has_ra, has_nra) = (present("resourceAttributes"), present("nonResourceAttributes"));
    if has_ra && has_nra {
        errs.push(FieldError::invalid(
            &spec_path.child("nonResourceAttributes"),
            go_non_resource_attributes(&spec["nonResourceAttributes"]),
            "cannot be specified in combination with resourceAttributes",
        ));
    }
    if !has_ra && !has_nra {
        errs.push(FieldError::invalid(
            &spec_path.child("resourceAttributes"),
            BadValue::Null,
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        ));
    }
    if kind != "SelfSubjectAccessReview" {
        let user = spec.get("user").and_then(Value::as_str).unwrap_or("");
        let no_groups = spec.get("groups").and_then(Value::as_array).is_none_or(|g| g.is_empty());
        if user.is_empty() && no_groups {
            errs.push(FieldError::invalid(
                &spec_path.child("user"),
                user,
                "at least one of user or group must be specified",
            ));
        }
    }
    if has_ra {
        let ra_path = Path::new("spec.resourceAttributes");
        for (key, name) in [("fieldSelector", "fieldSelector"), ("labelSelector", "labelSelector")] {
            if let Some(sel) = spec["resourceAttributes"].get(key).filter(|v| v.is_object()) {
                errs.extend(validate_selector_attributes(sel, &ra_path.child(name)));
            }
        }
    }
    let local = kind == "LocalSubjectAccessReview";
    let rest = super::metadata_rest(object, local);
    if !rest.is_empty() {
        let detail = if local { "must be empty except for namespace" } else { "must be empty" };
        errs.push(FieldError::invalid(&Path::new("metadata"), go_object_meta(object), detail));
    }
    if local {
        let ns = meta::namespace(object);
        if has_ra {
            let ra_ns = spec["resourceAttributes"].get("namespace").and_then(Value::as_str).unwrap_or("");
            if ra_ns != ns {
                errs.push(FieldError::invalid(
                    &Path::new("spec.resourceAttributes.namespace"),
                    ra_ns,
                    "must match metadata.namespace",
                ));
            }
        }
        if has_nra {
            errs.push(FieldError::invalid(
                &Path::new("spec.nonResourceAttributes"),
                go_non_resource_attributes(&spec["nonResourceAttributes"]),
                "disallowed on this kind of request",
            ));
        }
    }
    errs
}

/// `fieldSelector` / `labelSelector`: exactly one of `rawSelector` and
/// `requirements`.
fn validate_selector_attributes(sel: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let raw = sel.get("rawSelector").and_then(Value::as_str).unwrap_or("");
    let has_requirements = sel.get("requirements").and_then(Value::as_array).is_some_and(|r| !r.is_empty());
    if !raw.is_empty() && has_requirements {
        errs.push(FieldError::invalid(
            &path.child("rawSelector"),
            raw,
            "may not specified at the same time as requirements",
        ));
    }
    if raw.is_empty() && !has_requirements {
        errs.push(FieldError::required(
            &path.child("requirements"),
            &format!("when {path} is specified, requirements or rawSelector is required"),
        ));
    }
    errs
}

/// Go's `%#v` of the internal `NonResourceAttributes` upstream prints as
/// the bad value.
fn go_non_resource_attributes(v: &Value) -> BadValue {
    let s = |k: &str| go_quote(v.get(k).and_then(Value::as_str).unwrap_or(""));
    BadValue::Raw(format!("authorization.NonResourceAttributes{{Path:{}, Verb:{}}}", s("path"), s("verb")))
}

/// Go's `%#v` of the review's `ObjectMeta` (the string fields; upstream
/// prints every field — maps, lists and times are shown zero here).
fn go_object_meta(object: &Value) -> BadValue {
    let m = object.get("metadata").cloned().unwrap_or(json!({}));
    let s = |k: &str| go_quote(m.get(k).and_then(Value::as_str).unwrap_or(""));
    let generation = m.get("generation").and_then(Value::as_i64).unwrap_or(0);
    BadValue::Raw(format!(
        concat!(
            "v1.ObjectMeta{{Name:{}, GenerateName:{}, Namespace:{}, SelfLink:{}, UID:{}, ResourceVersion:{}, ",
            "Generation:{}, CreationTimestamp:v1.Time{{Time:time.Date(1, time.January, 1, 0, 0, 0, 0, time.UTC)}}, ",
            "DeletionTimestamp:(*v1.Time)(nil), DeletionGracePeriodSeconds:(*int64)(nil), ",
            "Labels:map[string]string(nil), Annotations:map[string]string(nil), ",
            "OwnerReferences:[]v1.OwnerReference(nil), Finalizers:[]string(nil), ",
            "ManagedFields:[]v1.ManagedFieldsEntry(nil)}}"
        ),
        s("name"),
        s("generateName"),
        s("namespace"),
        s("selfLink"),
        s("uid"),
        s("resourceVersion"),
        generation,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(object: Value, kind: &str) -> Vec<String> {
        validate(&object, kind).iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn exactly_one_kind_of_attributes() {
        assert_eq!(
            messages(json!({"spec": {}}), "SelfSubjectAccessReview"),
            ["spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified"]
        );
        assert_eq!(
            messages(
                json!({"spec": {"resourceAttributes": {"verb": "get"}, "nonResourceAttributes": {"path": "/x", "verb": "get"}}}),
                "SelfSubjectAccessReview"
            ),
            [
                r#"spec.nonResourceAttributes: Invalid value: authorization.NonResourceAttributes{Path:"/x", Verb:"get"}: cannot be specified in combination with resourceAttributes"#
            ]
        );
        assert!(
            messages(json!({"spec": {"resourceAttributes": {"verb": "get"}}}), "SelfSubjectAccessReview").is_empty()
        );
    }

    #[test]
    fn subject_reviews_need_a_subject_and_local_ones_a_matching_namespace() {
        let msgs = messages(json!({"spec": {"resourceAttributes": {"verb": "get"}}}), "SubjectAccessReview");
        assert_eq!(msgs, [r#"spec.user: Invalid value: "": at least one of user or group must be specified"#]);
        let msgs = messages(
            json!({"metadata": {"namespace": "a"}, "spec": {"user": "u", "resourceAttributes": {"namespace": "b"}}}),
            "LocalSubjectAccessReview",
        );
        assert_eq!(msgs, [r#"spec.resourceAttributes.namespace: Invalid value: "b": must match metadata.namespace"#]);
        let msgs = messages(
            json!({"metadata": {"namespace": "a"}, "spec": {"user": "u", "nonResourceAttributes": {"path": "/"}}}),
            "LocalSubjectAccessReview",
        );
        assert_eq!(
            msgs,
            [
                r#"spec.nonResourceAttributes: Invalid value: authorization.NonResourceAttributes{Path:"/", Verb:""}: disallowed on this kind of request"#
            ]
        );
    }

    #[test]
    fn metadata_must_be_empty_and_selectors_need_one_form() {
        let msgs = messages(
            json!({"metadata": {"name": "x", "creationTimestamp": null}, "spec": {"resourceAttributes": {}}}),
            "SelfSubjectAccessReview",
        );
        assert_eq!(msgs.len(), 1);
        assert!(msgs[0].starts_with(r#"metadata: Invalid value: v1.ObjectMeta{Name:"x", "#), "{}", msgs[0]);
        assert!(msgs[0].ends_with(": must be empty"), "{}", msgs[0]);
        let msgs = messages(
            json!({"spec": {"resourceAttributes": {"fieldSelector": {}, "labelSelector": {"rawSelector": "a=b", "requirements": [{"key": "a", "operator": "In"}]}}}}),
            "SelfSubjectAccessReview",
        );
        assert_eq!(
            msgs,
            [
                "spec.resourceAttributes.fieldSelector.requirements: Required value: when spec.resourceAttributes.fieldSelector is specified, requirements or rawSelector is required",
                r#"spec.resourceAttributes.labelSelector.rawSelector: Invalid value: "a=b": may not specified at the same time as requirements"#,
            ]
        );
    }

    #[test]
    fn attributes_follow_the_spec() {
        let spec = json!({"user": "bob", "groups": ["g"], "resourceAttributes": {"verb": "create", "resource": "pods", "namespace": "ns"}});
        let a = attributes(&spec, subject(&spec));
        assert_eq!((a.user.name.as_str(), a.verb.as_str(), a.resource.as_str()), ("bob", "create", "pods"));
        assert!(a.resource_request);
        let spec = json!({"nonResourceAttributes": {"verb": "get", "path": "/healthz"}});
        let a = attributes(&spec, UserInfo::default());
        assert_eq!((a.path.as_str(), a.resource_request), ("/healthz", false));
    }
}
