//! The PodSecurity admission plugin (k8s.io/pod-security-admission, 1.33):
//! pods are checked against the Pod Security Standards level their
//! namespace's `pod-security.kubernetes.io/{enforce,audit,warn}[-version]`
//! labels select.
//!
//! - `enforce`: a violating pod is refused, 403 `pods "x" is forbidden:
//!   violates PodSecurity "restricted:latest": <reason (detail)>, …`;
//! - `warn`: the response carries `Warning: would violate PodSecurity
//!   "<level>:<version>": …` (only when the pod is allowed);
//! - `audit`: the audit annotation `pod-security.kubernetes.io/audit-violations`.
//!
//! Pods are checked on create and on updates that change what the checks
//! see (container images, the seccomp annotations, new ephemeral
//! containers); the `ephemeralcontainers` and `resize` subresources too.
//! The pod templates of workload resources (Deployments, Jobs, CronJobs, …)
//! get `warn` and `audit` only, as upstream: their pods meet `enforce` when
//! created.
//!
//! Namespaces: invalid policy labels are refused (422), and tightening a
//! namespace's `enforce` level warns about its existing pods that would be
//! refused.
//!
//! Not here yet: exemptions (upstream's default configuration has none).

mod baseline;
mod namespace;
pub mod policy;
mod restricted;

use std::sync::Arc;

use async_trait::async_trait;
use rkube_apimachinery::{meta, ApiError};
use serde_json::Value;

use self::policy::{describe, evaluate, LevelVersion, Policy, Violation};
use super::builtin::{forbidden, list, lookup};
use super::{Attributes, Operation, Plugin};
use crate::storage::ResourceStore;

/// Audit annotation keys (upstream prefixes them with the plugin's
/// `pod-security.kubernetes.io/`).
const ENFORCE_POLICY: &str = "pod-security.kubernetes.io/enforce-policy";
const AUDIT_VIOLATIONS: &str = "pod-security.kubernetes.io/audit-violations";
const ERROR: &str = "pod-security.kubernetes.io/error";

/// Pod subresources that cannot change what the checks see.
const IGNORED_POD_SUBRESOURCES: [&str; 8] =
    ["exec", "attach", "binding", "eviction", "log", "portforward", "proxy", "status"];

/// The PodSecurity plugin over the namespaces store.
pub struct PodSecurity {
    namespaces: Option<Arc<ResourceStore>>,
    pods: Option<Arc<ResourceStore>>,
}

impl PodSecurity {
    /// The plugin, reading namespace labels from `namespaces` and, when a
    /// namespace's enforce level tightens, its pods from `pods`.
    pub fn new(namespaces: Option<Arc<ResourceStore>>, pods: Option<Arc<ResourceStore>>) -> PodSecurity {
        PodSecurity { namespaces, pods }
    }

    /// Namespace create and update: valid labels, warnings for existing
    /// pods a stricter enforce level would refuse.
    async fn validate_namespace(&self, attrs: &Attributes<'_>, ns: &Value) -> Result<(), ApiError> {
        let (new_policy, new_errors) = namespace::policy_of(ns);
        let old = attrs.old_object.map(namespace::policy_of);
        if namespace::refuse_labels(&new_errors, old.as_ref().map(|(_, e)| e.as_slice())) {
            return Err(namespace::invalid(meta::name(ns), &new_errors));
        }
        let Some((old_policy, _)) = old else { return Ok(()) };
        if !namespace::needs_pod_check(new_policy.enforce, old_policy.enforce) {
            return Ok(());
        }
        let Some(pods) = &self.pods else { return Ok(()) };
        let warnings = match list(pods, meta::name(ns)).await {
            Ok(items) => namespace::pod_warnings(meta::name(ns), new_policy.enforce, &items),
            Err(_) => vec!["failed to list pods while checking new PodSecurity enforce level".to_string()],
        };
        for w in warnings {
            attrs.request.warn(w);
        }
        Ok(())
    }

    /// The namespace's policy and its label errors; `Ok(None)` without a
    /// namespaces store, `Err(None)` when the namespace is not there.
    async fn policy(&self, namespace: &str) -> Result<Option<(Policy, Vec<String>)>, Option<ApiError>> {
        let Some(store) = &self.namespaces else { return Ok(None) };
        match lookup(store, "", namespace).await {
            Ok(Some(ns)) => Ok(Some(Policy::from_labels(&meta::labels(&ns)))),
            Ok(None) => Err(None),
            Err(e) => Err(Some(e)),
        }
    }
}

/// Where a workload resource keeps its pod template, by (group, plural).
fn template_path(group: &str, plural: &str) -> Option<&'static str> {
    match (group, plural) {
        ("", "podtemplates") => Some("/template"),
        ("", "replicationcontrollers")
        | ("apps", "deployments" | "replicasets" | "statefulsets" | "daemonsets")
        | ("batch", "jobs") => Some("/spec/template"),
        ("batch", "cronjobs") => Some("/spec/jobTemplate/spec/template"),
        _ => None,
    }
}

/// Upstream's `isSignificantPodUpdate`: whether an update changes what the
/// checks see.
fn significant_pod_update(pod: &Value, old: &Value) -> bool {
    let annotation = |p: &Value, key: &str| -> Option<Value> { p.pointer("/metadata/annotations")?.get(key).cloned() };
    let list = |p: &Value, k: &str| -> Vec<Value> {
        p.pointer(&format!("/spec/{k}")).and_then(Value::as_array).cloned().unwrap_or_default()
    };
    let container_changed = |c: &Value, oc: &Value| {
        let key = format!("container.seccomp.security.alpha.kubernetes.io/{}", policy::name(c));
        c.get("image") != oc.get("image") || annotation(pod, &key) != annotation(old, &key)
    };
    for k in ["containers", "initContainers"] {
        let (new, prev) = (list(pod, k), list(old, k));
        if new.len() != prev.len() || new.iter().zip(&prev).any(|(c, oc)| container_changed(c, oc)) {
            return true;
        }
    }
    let prev = list(old, "ephemeralContainers");
    list(pod, "ephemeralContainers").iter().any(|c| match prev.iter().find(|oc| policy::name(oc) == policy::name(c)) {
        None => true,
        Some(oc) => container_changed(c, oc),
    })
}

fn message(prefix: &str, lv: LevelVersion, violations: &[Violation]) -> String {
    format!("{prefix} PodSecurity \"{lv}\": {}", describe(violations))
}

/// Records `audit` and `warn` results (and refuses under `enforce` when
/// `enforce` is set) for one pod's metadata and spec.
fn apply(
    attrs: &Attributes<'_>,
    object: &Value,
    policy: &Policy,
    errors: &[String],
    metadata: &Value,
    spec: &Value,
    enforce: bool,
) -> Result<(), ApiError> {
    if !errors.is_empty() {
        let aggregate = if errors.len() == 1 { errors[0].clone() } else { format!("[{}]", errors.join(", ")) };
        attrs.request.annotate(ERROR, format!("Failed to parse policy: {aggregate}"));
    }
    let mut allowed = true;
    let mut enforced: Option<(LevelVersion, Vec<Violation>)> = None;
    if enforce {
        attrs.request.annotate(ENFORCE_POLICY, policy.enforce.to_string());
        let violations = evaluate(policy.enforce, metadata, spec);
        if !violations.is_empty() {
            allowed = false;
        }
        enforced = Some((policy.enforce, violations));
    }
    let reuse = |lv: LevelVersion| -> Vec<Violation> {
        match &enforced {
            Some((e, v)) if *e == lv => v.clone(),
            _ => evaluate(lv, metadata, spec),
        }
    };
    let audit = reuse(policy.audit);
    if !audit.is_empty() {
        attrs.request.annotate(AUDIT_VIOLATIONS, message("would violate", policy.audit, &audit));
    }
    if !allowed {
        let (lv, violations) = enforced.expect("evaluated");
        return Err(forbidden(attrs, Some(object), message("violates", lv, &violations)));
    }
    // No warning on a request that is refused anyway.
    let warn = if policy.warn == policy.audit { audit } else { reuse(policy.warn) };
    if !warn.is_empty() {
        attrs.request.warn(message("would violate", policy.warn, &warn));
    }
    Ok(())
}

#[async_trait]
impl Plugin for PodSecurity {
    fn name(&self) -> &'static str {
        "PodSecurity"
    }

    async fn validate(&self, attrs: &Attributes<'_>, object: Option<&Value>) -> Result<(), ApiError> {
        let Some(obj) = object else { return Ok(()) };
        if !matches!(attrs.operation, Operation::Create | Operation::Update) {
            return Ok(());
        }
        let group = attrs.resource.group;
        let plural = attrs.resource.plural;
        if group.is_empty() && plural == "namespaces" {
            return if attrs.subresource.is_empty() { self.validate_namespace(attrs, obj).await } else { Ok(()) };
        }
        if group.is_empty() && plural == "pods" {
            if IGNORED_POD_SUBRESOURCES.contains(&attrs.subresource) {
                return Ok(());
            }
            let (policy, errors) = match self.policy(attrs.namespace).await {
                Ok(Some(found)) => found,
                Ok(None) => return Ok(()),
                Err(_) => {
                    let msg = format!("failed to lookup namespace \"{}\"", attrs.namespace);
                    return Err(ApiError::Internal(msg));
                }
            };
            if errors.is_empty() && policy.fully_privileged() {
                return Ok(());
            }
            if let (Operation::Update, Some(old)) = (attrs.operation, attrs.old_object) {
                if !significant_pod_update(obj, old) {
                    return Ok(());
                }
            }
            let null = Value::Null;
            let metadata = obj.get("metadata").unwrap_or(&null);
            let spec = obj.get("spec").unwrap_or(&null);
            return apply(attrs, obj, &policy, &errors, metadata, spec, true);
        }
        let Some(path) = template_path(group, plural) else { return Ok(()) };
        if !attrs.subresource.is_empty() {
            return Ok(());
        }
        let (policy, errors) = match self.policy(attrs.namespace).await {
            Ok(Some(found)) => found,
            Ok(None) => return Ok(()),
            Err(e) => {
                let why = e.map(|e| e.to_string()).unwrap_or_else(|| "not found".into());
                attrs.request.annotate(ERROR, format!("failed to lookup namespace {:?}: {why}", attrs.namespace));
                return Ok(());
            }
        };
        if errors.is_empty()
            && policy.audit.level == policy::Level::Privileged
            && policy.warn.level == policy::Level::Privileged
        {
            return Ok(());
        }
        let Some(template) = obj.pointer(path) else { return Ok(()) };
        let null = Value::Null;
        let metadata = template.get("metadata").unwrap_or(&null);
        let spec = template.get("spec").unwrap_or(&null);
        apply(attrs, obj, &policy, &errors, metadata, spec, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn updates_that_change_no_checked_field_are_not_significant() {
        let pod =
            json!({"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        let mut relabelled = pod.clone();
        relabelled["metadata"]["labels"]["a"] = json!("c");
        assert!(!significant_pod_update(&relabelled, &pod));
        let mut new_image = pod.clone();
        new_image["spec"]["containers"][0]["image"] = json!("nginx:2");
        assert!(significant_pod_update(&new_image, &pod));
        let mut debug = pod.clone();
        debug["spec"]["ephemeralContainers"] = json!([{"name": "dbg", "image": "busybox"}]);
        assert!(significant_pod_update(&debug, &pod));
    }

    fn request() -> super::super::RequestAdmission {
        use rkube_apimachinery::registry::Registry;
        let info = Registry::builtin().lookup("", "v1", "pods").unwrap().clone();
        let chain = Arc::new(super::super::Chain::default());
        super::super::RequestAdmission::new(chain, Default::default(), info, "", "ns", false)
    }

    fn attrs<'a>(req: &'a super::super::RequestAdmission) -> Attributes<'a> {
        Attributes {
            operation: Operation::Create,
            user: &req.user,
            resource: &req.resource,
            subresource: "",
            namespace: "ns",
            name: "p",
            old_object: None,
            dry_run: false,
            request: req,
        }
    }

    /// Upstream's audit annotations and warning for each mode.
    #[test]
    fn modes_annotate_warn_and_refuse() {
        let labels = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let pod = json!({"metadata": {"name": "p"}, "spec": {"hostIPC": true, "containers": [{"name": "c"}]}});
        let (meta, spec) = (&pod["metadata"], &pod["spec"]);

        let req = request();
        let (policy, _) = Policy::from_labels(&labels(&[
            ("pod-security.kubernetes.io/audit", "baseline"),
            ("pod-security.kubernetes.io/warn", "baseline"),
        ]));
        apply(&attrs(&req), &pod, &policy, &[], meta, spec, true).unwrap();
        let annotations = req.audit_annotations();
        assert_eq!(annotations["pod-security.kubernetes.io/enforce-policy"], "privileged:latest");
        assert_eq!(
            annotations["pod-security.kubernetes.io/audit-violations"],
            "would violate PodSecurity \"baseline:latest\": host namespaces (hostIPC=true)"
        );
        assert_eq!(req.warnings(), ["would violate PodSecurity \"baseline:latest\": host namespaces (hostIPC=true)"]);

        // Refused under enforce: no warning, the audit annotation stays.
        let req = request();
        let (policy, _) = Policy::from_labels(&labels(&[
            ("pod-security.kubernetes.io/enforce", "baseline"),
            ("pod-security.kubernetes.io/warn", "baseline"),
        ]));
        let err = apply(&attrs(&req), &pod, &policy, &[], meta, spec, true).unwrap_err();
        assert_eq!(err.code(), 403);
        assert!(req.warnings().is_empty());
        assert_eq!(req.audit_annotations()["pod-security.kubernetes.io/enforce-policy"], "baseline:latest");
    }

    #[test]
    fn workload_templates_are_found() {
        assert_eq!(template_path("apps", "deployments"), Some("/spec/template"));
        assert_eq!(template_path("batch", "cronjobs"), Some("/spec/jobTemplate/spec/template"));
        assert_eq!(template_path("", "configmaps"), None);
    }
}
