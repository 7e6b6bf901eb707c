//! The label/field selector predicate of lists, watches and
//! deletecollection (upstream's `storage.SelectionPredicate`).

use rkube_apimachinery::selector::{FieldSelector, LabelSelector};
use rkube_apimachinery::ApiError;
use serde_json::Value;

/// Which objects a request selects. The default selects everything.
#[derive(Clone, Debug, Default)]
pub struct Predicate {
    labels: Option<LabelSelector>,
    fields: Option<FieldSelector>,
    kind: &'static str,
    group: &'static str,
}

impl Predicate {
    /// Parses the `labelSelector` and `fieldSelector` parameters for a kind.
    /// Syntax errors and field labels the kind does not support are 400s
    /// in upstream's words (from `rkube_apimachinery::selector`).
    pub fn parse(
        label_selector: Option<&str>,
        field_selector: Option<&str>,
        kind: &'static str,
        group: &'static str,
    ) -> Result<Predicate, ApiError> {
        let labels = label_selector.filter(|s| !s.is_empty()).map(LabelSelector::parse).transpose()?;
        let fields = field_selector
            .filter(|s| !s.is_empty())
            .map(|s| FieldSelector::parse(s).and_then(|f| f.convert_for(kind, group)))
            .transpose()?;
        Ok(Predicate {
            labels: labels.filter(|l| !l.is_empty()),
            fields: fields.filter(|f| !f.is_empty()),
            kind,
            group,
        })
    }

    /// Whether `obj` is selected.
    pub fn matches(&self, obj: &Value) -> bool {
        self.labels.as_ref().is_none_or(|l| l.matches_object(obj))
            && self.fields.as_ref().is_none_or(|f| f.matches_object(self.kind, self.group, obj))
    }

    /// Whether the predicate selects every object.
    pub fn is_everything(&self) -> bool {
        self.labels.is_none() && self.fields.is_none()
    }

    /// The single name a `metadata.name=<name>` field selector pins, if any.
    pub fn single_name(&self) -> Option<&str> {
        self.fields.as_ref().and_then(|f| f.requires_exact_match("metadata.name"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors_filter_objects() {
        let p = Predicate::parse(Some("app=web"), Some("metadata.name=a"), "ConfigMap", "").unwrap();
        let a = json!({"metadata": {"name": "a", "namespace": "default", "labels": {"app": "web"}}});
        let b = json!({"metadata": {"name": "b", "namespace": "default", "labels": {"app": "web"}}});
        assert!(p.matches(&a));
        assert!(!p.matches(&b));
        assert_eq!(p.single_name(), Some("a"));
        assert!(Predicate::default().is_everything());
    }

    #[test]
    fn unsupported_field_labels_are_bad_requests() {
        let e = Predicate::parse(None, Some("spec.nodeName=x"), "ConfigMap", "").unwrap_err();
        assert_eq!(e.code(), 400);
        assert!(e.to_string().contains("spec.nodeName"), "{e}");
    }
}
