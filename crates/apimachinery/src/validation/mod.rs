//! Validation building blocks with upstream Kubernetes' exact messages:
//!
//! * [`field`] — [`Path`] (`spec.containers[0].image`), [`FieldError`] and
//!   [`ErrorList`], which become the `StatusCause`s of a 422 `Invalid`
//!   (upstream `k8s.io/apimachinery/pkg/util/validation/field`);
//! * [`names`] — DNS-1123 subdomain/label, DNS-1035 label, qualified names,
//!   label values, path-segment names, [`NameValidation`] per kind and
//!   `generateName` ([`generate_name`]) (upstream `pkg/util/validation`,
//!   `pkg/api/validation/generic.go`, `path/name.go`,
//!   `apiserver/pkg/storage/names`);
//! * [`meta`] — `ObjectMeta` on create ([`validate_object_meta`]) and update
//!   ([`validate_object_meta_update`]), label selectors in specs
//!   ([`validate_label_selector`]) (upstream `pkg/api/validation/objectmeta.go`,
//!   `pkg/apis/meta/v1/validation`).
//!
//! A kind's strategy typically does:
//!
//! ```
//! use rkube_apimachinery::validation::{validate_object_meta, NameValidation, Path};
//! let meta = serde_json::json!({"name": "web", "namespace": "default"});
//! let mut errs = validate_object_meta(&meta, true, &NameValidation::Dns1123Subdomain, &Path::new("metadata"));
//! // ... errs.extend(spec checks) ...
//! assert!(errs.is_empty());
//! ```
//!
//! and turns a non-empty list into the error with
//! [`ErrorList::into_invalid`]`(group, kind, name)`.

pub mod crd;
pub mod crd_schema;
pub mod go_regexp;
pub mod field;
pub mod meta;
pub mod names;
pub mod netaddr;
pub mod podspec;

pub use field::{go_quote, go_string_slice, BadValue, ErrorList, ErrorType, FieldError, Path};
pub use meta::{
    validate_annotations, validate_finalizers, validate_immutable_field, validate_label_name, validate_label_selector,
    validate_labels, validate_managed_fields, validate_object_meta, validate_object_meta_update,
    validate_owner_references, LabelSelectorValidationOptions, FIELD_IMMUTABLE_ERROR_MSG,
    TOTAL_ANNOTATION_SIZE_LIMIT_BYTES,
};
pub use names::{
    generate_name, generate_name_with, is_dns1035_label, is_dns1123_label, is_dns1123_subdomain, is_qualified_name,
    is_valid_label_value, is_valid_path_segment_name, is_valid_path_segment_prefix, NameValidation, ValidateName,
};
