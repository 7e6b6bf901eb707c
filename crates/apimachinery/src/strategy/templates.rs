//! Stored templates and revisions:
//!
//! * PodTemplate (core v1) — the pod spec defaults of its `template` and
//!   `ValidatePodTemplate{,Update}` (`pkg/apis/core/validation`): template
//!   labels, annotations and the pod spec as upstream checks templates.
//! * ControllerRevision (`apps/v1`) — `ValidateControllerRevision{Create,Update}`
//!   (`pkg/apis/apps/validation`): `data` is required and never changes,
//!   `revision` is not negative.

use serde_json::Value;

use super::workload::default_template;
use super::{generic, Generic, Strategy};
use crate::errors::StatusCause;
use crate::validation::meta::validate_nonnegative;
use crate::validation::podspec::{validate_pod_spec, SpecOf};
use crate::validation::{validate_annotations, validate_immutable_field, validate_labels, ErrorList, FieldError, Path};

/// The strategy of PodTemplates.
#[derive(Clone, Debug)]
pub struct PodTemplate {
    flags: Generic,
}

impl PodTemplate {
    /// The strategy with upstream's flags.
    #[allow(clippy::new_without_default)]
    pub fn new() -> PodTemplate {
        PodTemplate { flags: generic::for_builtin("", "PodTemplate", false) }
    }
}

/// `ValidatePodTemplateSpec` at `template`: its labels and its pod spec.
pub fn validate_pod_template(obj: &Value) -> ErrorList {
    let template = obj.get("template").unwrap_or(&Value::Null);
    let path = Path::new("template");
    let meta = path.child("metadata");
    let mut errs = validate_labels(template.pointer("/metadata/labels"), &meta.child("labels"));
    errs.extend(validate_annotations(template.pointer("/metadata/annotations"), &meta.child("annotations")));
    errs.extend(validate_pod_spec(template.get("spec").unwrap_or(&Value::Null), SpecOf::Template, &path.child("spec")));
    errs
}

impl Strategy for PodTemplate {
    /// `SetDefaults_PodSpec` and friends on `template.spec`.
    fn default(&self, obj: &mut Value) {
        if let Some(t) = obj.get_mut("template").filter(|t| t.is_object()) {
            super::null_template_creation_timestamp(t);
            default_template(t);
        }
    }
    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        validate_pod_template(obj).to_causes()
    }
    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<StatusCause> {
        validate_pod_template(new).to_causes()
    }
    fn has_status_subresource(&self) -> bool {
        false
    }
    fn tracks_generation(&self) -> bool {
        self.flags.tracks_generation
    }
}

/// The strategy of ControllerRevisions.
#[derive(Clone, Debug)]
pub struct ControllerRevision {
    flags: Generic,
}

impl ControllerRevision {
    /// The strategy with upstream's flags.
    #[allow(clippy::new_without_default)]
    pub fn new() -> ControllerRevision {
        ControllerRevision { flags: generic::for_builtin("apps", "ControllerRevision", false) }
    }
}

/// `ValidateControllerRevisionCreate` minus `ObjectMeta`.
pub fn validate_controller_revision(obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    if obj.get("data").is_none_or(Value::is_null) {
        errs.push(FieldError::required(&Path::new("data"), "data is mandatory"));
    }
    errs.extend(validate_nonnegative(obj.get("revision").and_then(Value::as_i64).unwrap_or(0), &Path::new("revision")));
    errs
}

impl Strategy for ControllerRevision {
    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        validate_controller_revision(obj).to_causes()
    }
    /// The create rules, then `data` never changes (the value is shown as
    /// JSON; upstream prints its internal Go object).
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        let mut errs = validate_controller_revision(new);
        errs.extend(validate_immutable_field(new.get("data"), old.get("data"), &Path::new("data")));
        errs.to_causes()
    }
    fn has_status_subresource(&self) -> bool {
        false
    }
    fn tracks_generation(&self) -> bool {
        self.flags.tracks_generation
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::strategy::cause_texts as texts;

    #[test]
    fn pod_templates_get_pod_defaults_and_template_rules() {
        let s = PodTemplate::new();
        let mut pt = json!({"template": {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}});
        s.default(&mut pt);
        assert_eq!(pt["template"]["spec"]["restartPolicy"], "Always");
        assert_eq!(pt["template"]["spec"]["containers"][0]["terminationMessagePath"], "/dev/termination-log");
        assert!(s.validate_create(&pt).is_empty(), "{:?}", texts(s.validate_create(&pt)));
        let mut bad = pt.clone();
        bad["template"]["spec"]["containers"] = json!([]);
        assert_eq!(texts(s.validate_create(&bad)), vec!["template.spec.containers: Required value"]);
    }

    #[test]
    fn controller_revision_rules() {
        let s = ControllerRevision::new();
        assert_eq!(
            texts(s.validate_create(&json!({"revision": -1}))),
            vec![
                "data: Required value: data is mandatory",
                "revision: Invalid value: -1: must be greater than or equal to 0",
            ]
        );
        let old = json!({"revision": 1, "data": {"spec": {"replicas": 1}}});
        assert!(s.validate_update(&old, &old).is_empty());
        let new = json!({"revision": 1, "data": {"spec": {"replicas": 2}}});
        assert_eq!(
            texts(s.validate_update(&new, &old)),
            vec![r#"data: Invalid value: {"spec":{"replicas":2}}: field is immutable"#]
        );
    }
}
