//! Label and field selectors as the API server parses and applies them:
//!
//! * [`labels`] — [`LabelSelector`]: the `labelSelector` string grammar
//!   (`labels.Parse`), `metav1.LabelSelector` objects
//!   (`LabelSelectorAsSelector`), matching against label maps or JSON
//!   objects without copying, canonical rendering;
//! * [`fields`] — [`FieldSelector`]: the `fieldSelector` grammar
//!   (`fields.ParseSelector`), per-kind supported labels and their 400
//!   messages ([`convert_field_label`]), and per-kind selectable field
//!   values ([`field_set`]).
//!
//! ```
//! use rkube_apimachinery::selector::{FieldSelector, LabelSelector};
//! let pod = serde_json::json!({
//!     "metadata": {"name": "web-1", "namespace": "default", "labels": {"app": "web"}},
//!     "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}});
//! let labels = LabelSelector::parse("app in (web,api),!canary").unwrap();
//! let fields = FieldSelector::parse("spec.nodeName=n1").unwrap().convert_for("Pod", "").unwrap();
//! assert!(labels.matches_object(&pod) && fields.matches_object("Pod", "", &pod));
//! ```

pub mod fields;
pub mod labels;

pub use fields::{
    convert_field_label, escape_value, field_set, selectable_fields, unescape_value, FieldOperator, FieldRequirement,
    FieldSelector, FieldSet, FieldSource,
};
pub use labels::{LabelSelector, LabelSource, ObjectLabels, Operator, Requirement};
