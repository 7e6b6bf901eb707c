//! Validation of `apiextensions.k8s.io/v1` CustomResourceDefinitions,
//! following upstream's `ValidateCustomResourceDefinition` and
//! `ValidateCustomResourceDefinitionUpdate`
//! (`apiextensions-apiserver/pkg/apis/apiextensions/validation`) with their
//! messages and field paths.
//!
//! Upstream validates the *internal* form of the object, and the paths in
//! its errors are internal paths. The v1 → internal conversion matters in
//! two ways, both reproduced here ([`InternalSpec`]):
//!
//! * per-version `schema`, `subresources`, `additionalPrinterColumns` and
//!   `selectableFields` that are the same in every version move to the top
//!   level, so a single-version CRD's schema errors are reported at
//!   `spec.validation.openAPIV3Schema…` and its scale paths at
//!   `spec.subresources.scale…`;
//! * `spec.conversion.webhook.{clientConfig,conversionReviewVersions}` are
//!   `spec.conversion.{webhookClientConfig,conversionReviewVersions}`, and a
//!   printer column's `jsonPath` is `JSONPath`.
//!
//! Schema rules are in [`super::crd_schema`]. Values upstream prints with Go's
//! `%#v` (the `versions` list) are rendered the same way, except that
//! non-nil pointers, whose addresses upstream prints, show `0xc000000000`.

use serde_json::Value;

use super::crd_schema::validate_custom_resource_validation;
use super::field::{go_quote, go_string_slice, BadValue, ErrorList, FieldError, Path};
use super::meta::validate_immutable_field;
use super::names::{is_dns1035_label, is_dns1123_subdomain};

/// The annotation protected groups need (`api-approved.kubernetes.io`).
pub const API_APPROVED_ANNOTATION: &str = "api-approved.kubernetes.io";

/// Printer column types (sorted, as upstream lists them).
const COLUMN_TYPES: [&str; 5] = ["boolean", "date", "integer", "number", "string"];
/// Printer column formats (sorted).
const COLUMN_FORMATS: [&str; 8] = ["byte", "date", "date-time", "double", "float", "int32", "int64", "password"];
/// ConversionReview versions the API server understands.
const CONVERSION_REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];
/// The most selectable fields one version may declare.
const MAX_SELECTABLE_FIELDS: i64 = 8;
/// Placeholder for a pointer address in a `%#v` rendering.
const POINTER: &str = "0xc000000000";

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn opt<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

fn list(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

fn strings(v: Option<&Value>) -> Vec<String> {
    list(v).iter().filter_map(Value::as_str).map(str::to_string).collect()
}

/// One version in upstream's internal form.
#[derive(Clone, Debug)]
pub struct InternalVersion<'a> {
    /// The v1 object of the version.
    pub raw: &'a Value,
    /// `schema`, unless it moved to the top level.
    pub schema: Option<&'a Value>,
    /// `subresources`, unless they moved to the top level.
    pub subresources: Option<&'a Value>,
    /// `additionalPrinterColumns`, unless they moved to the top level.
    pub columns: Option<&'a Value>,
    /// `selectableFields`, unless they moved to the top level.
    pub selectable_fields: Option<&'a Value>,
}

/// A v1 `spec` seen as upstream's internal `CustomResourceDefinitionSpec`
/// (see the module docs).
#[derive(Clone, Debug)]
pub struct InternalSpec<'a> {
    /// The v1 spec.
    pub raw: &'a Value,
    /// `spec.version`: the first version's name.
    pub version: Option<&'a str>,
    /// `spec.validation`: the schema every version shares.
    pub validation: Option<&'a Value>,
    /// `spec.subresources`: the subresources every version shares.
    pub subresources: Option<&'a Value>,
    /// `spec.additionalPrinterColumns`: the columns every version shares.
    pub columns: Option<&'a Value>,
    /// `spec.selectableFields`: the selectable fields every version shares.
    pub selectable_fields: Option<&'a Value>,
    /// The versions.
    pub versions: Vec<InternalVersion<'a>>,
}

impl<'a> InternalSpec<'a> {
    /// Converts a v1 spec (upstream's
    /// `Convert_v1_CustomResourceDefinitionSpec_To_apiextensions_…`).
    pub fn new(spec: &'a Value) -> InternalSpec<'a> {
        let raw_versions = list(spec.get("versions"));
        let mut out = InternalSpec {
            raw: spec,
            version: raw_versions.first().map(|v| str_of(v, "name")),
            validation: None,
            subresources: None,
            columns: None,
            selectable_fields: None,
            versions: raw_versions
                .iter()
                .map(|v| InternalVersion {
                    raw: v,
                    schema: opt(v, "schema"),
                    subresources: opt(v, "subresources"),
                    columns: opt(v, "additionalPrinterColumns").filter(|c| !list(Some(c)).is_empty()),
                    selectable_fields: opt(v, "selectableFields").filter(|c| !list(Some(c)).is_empty()),
                })
                .collect(),
        };
        if out.versions.is_empty() {
            return out;
        }
        fn lift<'b>(
            versions: &mut [InternalVersion<'b>],
            get: for<'r> fn(&'r mut InternalVersion<'b>) -> &'r mut Option<&'b Value>,
        ) -> Option<&'b Value> {
            let first = *get(&mut versions[0]);
            if versions.iter_mut().all(|v| *get(v) == first) {
                for v in versions.iter_mut() {
                    *get(v) = None;
                }
                first
            } else {
                None
            }
        }
        out.validation = lift(&mut out.versions, |v| &mut v.schema);
        out.subresources = lift(&mut out.versions, |v| &mut v.subresources);
        out.columns = lift(&mut out.versions, |v| &mut v.columns);
        out.selectable_fields = lift(&mut out.versions, |v| &mut v.selectable_fields);
        out
    }

    /// The subresources that apply to a version (`getSubresourcesForVersion`).
    fn subresources_for(&self, i: usize) -> Option<&'a Value> {
        if self.versions.iter().any(|v| v.subresources.is_some()) {
            self.versions[i].subresources
        } else {
            self.subresources
        }
    }

    /// Whether any version has the status subresource (`hasAnyStatusEnabled`).
    fn any_status_enabled(&self) -> bool {
        has_status(self.subresources) || self.versions.iter().any(|v| has_status(v.subresources))
    }

    /// Whether every version has an OpenAPI schema
    /// (`allVersionsSpecifyOpenAPISchema`).
    fn all_versions_have_schema(&self) -> bool {
        if self.validation.and_then(|v| opt(v, "openAPIV3Schema")).is_some() {
            return true;
        }
        self.versions.iter().all(|v| v.schema.and_then(|s| opt(s, "openAPIV3Schema")).is_some())
    }

    /// `spec.conversion` as `(strategy, webhookClientConfig, conversionReviewVersions)`.
    fn conversion(&self) -> Option<(&'a str, Option<&'a Value>, Vec<String>)> {
        let c = opt(self.raw, "conversion")?;
        let webhook = opt(c, "webhook");
        Some((
            str_of(c, "strategy"),
            webhook.and_then(|w| opt(w, "clientConfig")),
            strings(webhook.and_then(|w| w.get("conversionReviewVersions"))),
        ))
    }
}

fn has_status(subresources: Option<&Value>) -> bool {
    subresources.and_then(|s| opt(s, "status")).is_some()
}

fn preserve_unknown_fields(crd: &Value) -> bool {
    crd.pointer("/spec/preserveUnknownFields") == Some(&Value::Bool(true))
}

/// What differs between create and update validation (upstream's
/// `validationOptions` that can differ for objects rkube can store).
#[derive(Clone, Copy, Debug)]
struct Options {
    require_recognized_conversion_review_version: bool,
    require_immutable_names: bool,
    require_openapi_schema: bool,
}

/// `ValidateCustomResourceDefinition` minus the generic `ObjectMeta` rules
/// (the store checks those): the name must be `<plural>.<group>`, then the
/// spec, status, stored versions, API approval of protected groups and the
/// `preserveUnknownFields` ban.
pub fn validate_crd(crd: &Value) -> ErrorList {
    let mut errs = validate_crd_name(crd);
    let opts = Options {
        require_recognized_conversion_review_version: true,
        require_immutable_names: false,
        require_openapi_schema: true,
    };
    errs.extend(validate_spec(crd, opts));
    errs.extend(validate_status(crd));
    errs.extend(validate_api_approval(crd, None));
    errs.extend(validate_preserve_unknown_fields(crd, None));
    errs
}

/// `ValidateCustomResourceDefinitionUpdate` minus the generic `ObjectMeta`
/// rules: the spec rules with options taken from `old`, plus `group` and
/// `names.plural` immutable (and `scope` and `names.kind` once the old
/// object is `Established`).
pub fn validate_crd_update(new: &Value, old: &Value) -> ErrorList {
    let old_spec = InternalSpec::new(old.get("spec").unwrap_or(&Value::Null));
    let recognized = match old_spec.conversion() {
        None => true,
        Some((_, _, versions)) => {
            versions.is_empty() || versions.iter().any(|v| CONVERSION_REVIEW_VERSIONS.contains(&v.as_str()))
        }
    };
    let opts = Options {
        require_recognized_conversion_review_version: recognized,
        require_immutable_names: condition_true(old, "Established"),
        require_openapi_schema: old_spec.all_versions_have_schema(),
    };
    let mut errs = validate_spec(new, opts);
    let spec = Path::new("spec");
    let (n, o) = (new.get("spec"), old.get("spec"));
    let field =
        |v: Option<&Value>, p: &str| v.and_then(|s| s.pointer(p)).cloned().unwrap_or(Value::String(String::new()));
    if opts.require_immutable_names {
        errs.extend(validate_immutable_field(
            Some(&field(n, "/scope")),
            Some(&field(o, "/scope")),
            &spec.child("scope"),
        ));
        errs.extend(validate_immutable_field(
            Some(&field(n, "/names/kind")),
            Some(&field(o, "/names/kind")),
            &spec.child("names").child("kind"),
        ));
    }
    errs.extend(validate_immutable_field(Some(&field(n, "/group")), Some(&field(o, "/group")), &spec.child("group")));
    errs.extend(validate_immutable_field(
        Some(&field(n, "/names/plural")),
        Some(&field(o, "/names/plural")),
        &spec.child("names").child("plural"),
    ));
    errs.extend(validate_status(new));
    errs.extend(validate_api_approval(new, Some(old)));
    errs.extend(validate_preserve_unknown_fields(new, Some(old)));
    errs
}

/// Whether `status.conditions` has `type` with status `True`.
pub fn condition_true(crd: &Value, ty: &str) -> bool {
    list(crd.pointer("/status/conditions")).iter().any(|c| str_of(c, "type") == ty && str_of(c, "status") == "True")
}

fn validate_crd_name(crd: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let required = format!(
        "{}.{}",
        crd.pointer("/spec/names/plural").and_then(Value::as_str).unwrap_or(""),
        crd.pointer("/spec/group").and_then(Value::as_str).unwrap_or("")
    );
    let msg = r#"must be spec.names.plural+"."+spec.group"#;
    let meta = Path::new("metadata");
    let generate_name = crd.pointer("/metadata/generateName").and_then(Value::as_str).unwrap_or("");
    if !generate_name.is_empty() && generate_name != required {
        errs.push(FieldError::invalid(&meta.child("generateName"), generate_name, msg));
    }
    let name = crd.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    if !name.is_empty() && name != required {
        errs.push(FieldError::invalid(&meta.child("name"), name, msg));
    }
    errs
}

/// `validateEnumStrings`.
fn validate_enum(path: &Path, value: &str, accepted: &[&str]) -> ErrorList {
    if value.is_empty() {
        return ErrorList(vec![FieldError::required(path, "")]);
    }
    if accepted.contains(&value) {
        return ErrorList::new();
    }
    ErrorList(vec![FieldError::not_supported(path, value, accepted)])
}

fn validate_spec(crd: &Value, opts: Options) -> ErrorList {
    let raw = crd.get("spec").unwrap_or(&Value::Null);
    let spec = InternalSpec::new(raw);
    let path = Path::new("spec");
    let mut errs = ErrorList::new();

    let group = str_of(raw, "group");
    if group.is_empty() {
        errs.push(FieldError::required(&path.child("group"), ""));
    } else if let msgs @ [_, ..] = is_dns1123_subdomain(group).as_slice() {
        errs.push(FieldError::invalid(&path.child("group"), group, &msgs.join(",")));
    } else if !group.contains('.') {
        errs.push(FieldError::invalid(&path.child("group"), group, "should be a domain with at least one dot"));
    }
    errs.extend(validate_enum(&path.child("scope"), str_of(raw, "scope"), &["Cluster", "Namespaced"]));

    let preserve = preserve_unknown_fields(crd);
    let has_top_schema = spec.validation.and_then(|v| opt(v, "openAPIV3Schema")).is_some();
    if !has_top_schema {
        for (i, v) in spec.versions.iter().enumerate() {
            let has = v.schema.and_then(|s| opt(s, "openAPIV3Schema")).is_some();
            let schema_path = path.child("versions").index(i).child("schema").child("openAPIV3Schema");
            if opts.require_openapi_schema && !has {
                errs.push(FieldError::required(&schema_path, "schemas are required"));
            } else if !opts.require_openapi_schema
                && !preserve
                && !has
                && v.raw.get("served") == Some(&Value::Bool(true))
            {
                errs.push(FieldError::required(&schema_path, "because otherwise all fields are pruned"));
            }
        }
    }
    if preserve && spec_has_defaults(&spec) {
        errs.push(FieldError::invalid(
            &path.child("preserveUnknownFields"),
            true,
            "must be false in order to use defaults in the schema",
        ));
    }

    let mut storage_count = 0;
    let mut seen = std::collections::HashSet::new();
    let mut unique = true;
    for (i, v) in spec.versions.iter().enumerate() {
        let vpath = path.child("versions").index(i);
        let name = str_of(v.raw, "name");
        if v.raw.get("storage") == Some(&Value::Bool(true)) {
            storage_count += 1;
        }
        if !seen.insert(name) {
            unique = false;
        }
        if let msgs @ [_, ..] = is_dns1035_label(name).as_slice() {
            errs.push(FieldError::invalid(&vpath.child("name"), name, &msgs.join(",")));
        }
        errs.extend(validate_version(v, &vpath, has_status(spec.subresources_for(i))));
    }
    if !unique {
        errs.push(FieldError::invalid(
            &path.child("versions"),
            go_versions(&spec),
            "must contain unique version names",
        ));
    }
    if storage_count != 1 {
        errs.push(FieldError::invalid(
            &path.child("versions"),
            go_versions(&spec),
            "must have exactly one version marked as storage version",
        ));
    }
    if let Some(version) = spec.version.filter(|v| !v.is_empty()) {
        if let msgs @ [_, ..] = is_dns1035_label(version).as_slice() {
            errs.push(FieldError::invalid(&path.child("version"), version, &msgs.join(",")));
        }
    }

    let names = raw.get("names").unwrap_or(&Value::Null);
    let names_path = path.child("names");
    for field in ["plural", "singular", "kind", "listKind"] {
        if str_of(names, field).is_empty() {
            errs.push(FieldError::required(&names_path.child(field), ""));
        }
    }
    errs.extend(validate_names(names, &names_path));
    if let Some(validation) = spec.validation {
        errs.extend(validate_custom_resource_validation(
            validation,
            spec.any_status_enabled(),
            &path.child("validation"),
        ));
    }
    errs.extend(validate_subresources(spec.subresources, &path.child("subresources")));
    for (i, c) in list(spec.columns).iter().enumerate() {
        errs.extend(validate_column(c, &path.child("additionalPrinterColumns").index(i)));
    }
    if let Some(fields) = spec.selectable_fields {
        if spec.validation.is_none() {
            errs.push(FieldError::invalid(
                &path.child("selectableFields"),
                "",
                "selectableFields may only be set when validations.schema is included",
            ));
        } else {
            errs.extend(validate_selectable_fields(fields, &path.child("selectableFields")));
        }
    }

    let conversion = spec.conversion();
    if let Some((strategy, _, _)) = &conversion {
        if *strategy != "None" && preserve {
            errs.push(FieldError::invalid(
                &path.child("conversion").child("strategy"),
                *strategy,
                "must be None if spec.preserveUnknownFields is true",
            ));
        }
    }
    if let Some((strategy, client, review)) = conversion {
        errs.extend(validate_conversion(
            strategy,
            client,
            &review,
            opts.require_recognized_conversion_review_version,
            &path.child("conversion"),
        ));
    }
    errs
}

fn spec_has_defaults(spec: &InternalSpec) -> bool {
    fn has_default(s: &Value) -> bool {
        match s {
            Value::Object(m) => m.get("default").is_some_and(|d| !d.is_null()) || m.values().any(has_default),
            Value::Array(a) => a.iter().any(has_default),
            _ => false,
        }
    }
    spec.validation.is_some_and(has_default) || spec.versions.iter().any(|v| v.schema.is_some_and(has_default))
}

/// `validateCustomResourceDefinitionVersion`.
fn validate_version(v: &InternalVersion, path: &Path, status_enabled: bool) -> ErrorList {
    let mut errs = ErrorList::new();
    let deprecated = v.raw.get("deprecated") == Some(&Value::Bool(true));
    if let Some(warning) = v.raw.get("deprecationWarning").and_then(Value::as_str) {
        for msg in deprecation_warning_errors(deprecated, warning) {
            errs.push(FieldError::invalid(&path.child("deprecationWarning"), warning, &msg));
        }
    }
    if let Some(schema) = v.schema {
        errs.extend(validate_custom_resource_validation(schema, status_enabled, &path.child("schema")));
    }
    errs.extend(validate_subresources(v.subresources, &path.child("subresources")));
    for (i, c) in list(v.columns).iter().enumerate() {
        errs.extend(validate_column(c, &path.child("additionalPrinterColumns").index(i)));
    }
    if let Some(fields) = v.selectable_fields {
        if v.schema.and_then(|s| opt(s, "openAPIV3Schema")).is_none() {
            errs.push(FieldError::invalid(
                &path.child("selectableFields"),
                "",
                "selectableFields may only be set when version.schema.openAPIV3Schema is not included",
            ));
        } else {
            errs.extend(validate_selectable_fields(fields, &path.child("selectableFields")));
        }
    }
    errs
}

fn deprecation_warning_errors(deprecated: bool, warning: &str) -> Vec<String> {
    if !deprecated {
        return vec!["can only be set for deprecated versions".into()];
    }
    let mut out = Vec::new();
    if warning.len() > 256 {
        out.push("must be <= 256 characters long".into());
    }
    if warning.is_empty() {
        out.push("must not be an empty string".into());
    }
    // Go's unicode.IsPrint: graphic characters and the ASCII space only.
    if let Some((i, _)) = warning.char_indices().find(|(_, c)| c.is_control() || (c.is_whitespace() && *c != ' ')) {
        out.push(format!("must only contain printable UTF-8 characters; non-printable character found at index {i}"));
    }
    out
}

/// `ValidateCustomResourceDefinitionNames` (for `spec.names` and
/// `status.acceptedNames`).
pub fn validate_names(names: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for field in ["plural", "singular"] {
        let v = str_of(names, field);
        if let msgs @ [_, ..] = is_dns1035_label(v).as_slice() {
            if !v.is_empty() {
                errs.push(FieldError::invalid(&path.child(field), v, &msgs.join(",")));
            }
        }
    }
    for field in ["kind", "listKind"] {
        let v = str_of(names, field);
        if let msgs @ [_, ..] = is_dns1035_label(&v.to_lowercase()).as_slice() {
            if !v.is_empty() {
                let detail = format!("may have mixed case, but should otherwise match: {}", msgs.join(","));
                errs.push(FieldError::invalid(&path.child(field), v, &detail));
            }
        }
    }
    for (i, short) in strings(names.get("shortNames")).iter().enumerate() {
        if let msgs @ [_, ..] = is_dns1035_label(short).as_slice() {
            errs.push(FieldError::invalid(&path.child("shortNames").index(i), short.as_str(), &msgs.join(",")));
        }
    }
    let (kind, list_kind) = (str_of(names, "kind"), str_of(names, "listKind"));
    if !kind.is_empty() && kind == list_kind {
        errs.push(FieldError::invalid(&path.child("listKind"), list_kind, "kind and listKind may not be the same"));
    }
    for (i, category) in strings(names.get("categories")).iter().enumerate() {
        if let msgs @ [_, ..] = is_dns1035_label(category).as_slice() {
            errs.push(FieldError::invalid(&path.child("categories").index(i), category.as_str(), &msgs.join(",")));
        }
    }
    errs
}

/// `ValidateCustomResourceColumnDefinition`.
fn validate_column(c: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if str_of(c, "name").is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    }
    let types = format!("must be one of {}", COLUMN_TYPES.join(","));
    match str_of(c, "type") {
        "" => errs.push(FieldError::required(&path.child("type"), &types)),
        t if !COLUMN_TYPES.contains(&t) => errs.push(FieldError::invalid(&path.child("type"), t, &types)),
        _ => {}
    }
    let format = str_of(c, "format");
    if !format.is_empty() && !COLUMN_FORMATS.contains(&format) {
        let detail = format!("must be one of {}", COLUMN_FORMATS.join(","));
        errs.push(FieldError::invalid(&path.child("format"), format, &detail));
    }
    let json_path = str_of(c, "jsonPath");
    if json_path.is_empty() {
        errs.push(FieldError::required(&path.child("JSONPath"), ""));
    } else {
        errs.extend(validate_simple_json_path(json_path, &path.child("JSONPath")));
    }
    errs
}

/// `validateSimpleJSONPath`: a path in dot notation starting with `.`.
fn validate_simple_json_path(s: &str, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if s.is_empty() {
        errs.push(FieldError::invalid(path, s, "must not be empty"));
    } else if !s.starts_with('.') {
        errs.push(FieldError::invalid(path, s, "must be a simple json path starting with ."));
    }
    errs
}

/// The parts of `ValidateCustomResourceSelectableFields` that do not need
/// the structural schema's path resolution: `jsonPath` required, unique, at
/// most eight.
fn validate_selectable_fields(fields: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut seen = std::collections::HashSet::new();
    for (i, f) in list(Some(fields)).iter().enumerate() {
        let p = str_of(f, "jsonPath");
        if p.is_empty() {
            errs.push(FieldError::required(&path.index(i).child("jsonPath"), ""));
            continue;
        }
        if !seen.insert(p) {
            errs.push(FieldError::duplicate(&path.index(i).child("jsonPath"), p));
        }
    }
    if seen.len() as i64 > MAX_SELECTABLE_FIELDS {
        errs.push(FieldError::too_many(path, seen.len() as i64, MAX_SELECTABLE_FIELDS));
    }
    errs
}

/// `ValidateCustomResourceDefinitionSubresources`: the scale paths.
fn validate_subresources(sub: Option<&Value>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(scale) = sub.and_then(|s| opt(s, "scale")) else { return errs };
    for (field, prefix, msg) in [
        ("specReplicasPath", ".spec.", "should be a json path under .spec"),
        ("statusReplicasPath", ".status.", "should be a json path under .status"),
    ] {
        let p = path.child(&format!("scale.{field}"));
        let v = str_of(scale, field);
        if v.is_empty() {
            errs.push(FieldError::required(&p, ""));
        } else {
            let e = validate_simple_json_path(v, &p);
            if !e.is_empty() {
                errs.extend(e);
            } else if !v.starts_with(prefix) {
                errs.push(FieldError::invalid(&p, v, msg));
            }
        }
    }
    let selector = str_of(scale, "labelSelectorPath");
    if !selector.is_empty() {
        let p = path.child("scale.labelSelectorPath");
        let e = validate_simple_json_path(selector, &p);
        if !e.is_empty() {
            errs.extend(e);
        } else if !selector.starts_with(".spec.") && !selector.starts_with(".status.") {
            errs.push(FieldError::invalid(&p, selector, "should be a json path under either .spec or .status"));
        }
    }
    errs
}

/// `validateCustomResourceConversion` (internal field names).
fn validate_conversion(
    strategy: &str,
    client: Option<&Value>,
    review_versions: &[String],
    require_recognized: bool,
    path: &Path,
) -> ErrorList {
    let mut errs = validate_enum(&path.child("strategy"), strategy, &["None", "Webhook"]);
    let cc_path = path.child("webhookClientConfig");
    if strategy == "Webhook" {
        match client {
            None => errs.push(FieldError::required(&cc_path, "required when strategy is set to Webhook")),
            Some(cc) => match (opt(cc, "url").and_then(Value::as_str), opt(cc, "service")) {
                (Some(url), None) => errs.extend(validate_webhook_url(&cc_path.child("url"), url)),
                (None, Some(svc)) => errs.extend(validate_webhook_service(&cc_path.child("service"), svc)),
                _ => errs.push(FieldError::required(&cc_path, "exactly one of url or service is required")),
            },
        }
        errs.extend(validate_conversion_review_versions(
            review_versions,
            require_recognized,
            &path.child("conversionReviewVersions"),
        ));
    } else {
        if client.is_some() {
            errs.push(FieldError::forbidden(&cc_path, "should not be set when strategy is not set to Webhook"));
        }
        if !review_versions.is_empty() {
            errs.push(FieldError::forbidden(
                &path.child("conversionReviewVersions"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
    }
    errs
}

fn validate_conversion_review_versions(versions: &[String], require_recognized: bool, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if versions.is_empty() {
        errs.push(FieldError::required(path, ""));
        return errs;
    }
    let mut seen = std::collections::HashSet::new();
    let mut accepted = false;
    for (i, v) in versions.iter().enumerate() {
        if !seen.insert(v.as_str()) {
            errs.push(FieldError::invalid(&path.index(i), v.as_str(), "duplicate version"));
            continue;
        }
        for msg in is_dns1035_label(v) {
            errs.push(FieldError::invalid(&path.index(i), v.as_str(), &msg));
        }
        accepted |= CONVERSION_REVIEW_VERSIONS.contains(&v.as_str());
    }
    if require_recognized && !accepted {
        errs.push(FieldError::invalid(
            path,
            BadValue::Raw(go_string_slice(versions, false)),
            &format!("must include at least one of {}", CONVERSION_REVIEW_VERSIONS.join(", ")),
        ));
    }
    errs
}

/// The parts of a URL upstream's checks look at (Go's `url.Parse`).
struct UrlParts<'a> {
    scheme: String,
    user: Option<&'a str>,
    host: &'a str,
    query: &'a str,
    fragment: &'a str,
}

fn parse_url(url: &str) -> UrlParts<'_> {
    let (rest, fragment) = url.split_once('#').unwrap_or((url, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (scheme, rest) = match rest.find(':') {
        Some(i) if i > 0 && !rest[..i].contains('/') && rest[..1].chars().all(|c| c.is_ascii_alphabetic()) => {
            (rest[..i].to_ascii_lowercase(), &rest[i + 1..])
        }
        _ => (String::new(), rest),
    };
    let (mut user, mut host) = (None, "");
    if let Some(after) = rest.strip_prefix("//") {
        let authority = &after[..after.find('/').unwrap_or(after.len())];
        match authority.rsplit_once('@') {
            Some((u, h)) => {
                user = Some(u);
                host = h;
            }
            None => host = authority,
        }
    }
    UrlParts { scheme, user, host, query, fragment }
}

/// `webhook.ValidateWebhookURL` with `https` forced.
pub(crate) fn validate_webhook_url(path: &Path, url: &str) -> ErrorList {
    const FORM: &str = "; desired format: https://host[/path]";
    let mut errs = ErrorList::new();
    let u = parse_url(url);
    if u.scheme != "https" {
        errs.push(FieldError::invalid(
            path,
            u.scheme.as_str(),
            &format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    if u.host.is_empty() {
        errs.push(FieldError::invalid(path, u.host, &format!("host must be provided{FORM}")));
    }
    if let Some(user) = u.user {
        errs.push(FieldError::invalid(path, user, "user information is not permitted in the URL"));
    }
    if !u.fragment.is_empty() {
        errs.push(FieldError::invalid(path, u.fragment, "fragments are not permitted in the URL"));
    }
    if !u.query.is_empty() {
        errs.push(FieldError::invalid(path, u.query, "query parameters are not permitted in the URL"));
    }
    errs
}

/// `webhook.ValidateWebhookService`.
pub(crate) fn validate_webhook_service(path: &Path, svc: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    if str_of(svc, "name").is_empty() {
        errs.push(FieldError::required(&path.child("name"), "service name is required"));
    }
    if str_of(svc, "namespace").is_empty() {
        errs.push(FieldError::required(&path.child("namespace"), "service namespace is required"));
    }
    let port = svc.get("port").and_then(Value::as_i64).unwrap_or(0);
    if !(1..=65535).contains(&port) {
        errs.push(FieldError::invalid(
            &path.child("port"),
            port,
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let Some(url_path) = svc.get("path").and_then(Value::as_str) else { return errs };
    if url_path == "/" || url_path.is_empty() {
        return errs;
    }
    if url_path == "//" {
        errs.push(FieldError::invalid(&path.child("path"), url_path, "segment[0] may not be empty"));
        return errs;
    }
    if !url_path.starts_with('/') {
        errs.push(FieldError::invalid(&path.child("path"), url_path, "must start with a '/'"));
    }
    let mut check = url_path.get(1..).unwrap_or("");
    check = check.strip_suffix('/').unwrap_or(check);
    for (i, step) in check.split('/').enumerate() {
        if step.is_empty() {
            errs.push(FieldError::invalid(&path.child("path"), url_path, &format!("segment[{i}] may not be empty")));
            continue;
        }
        for failure in is_dns1123_subdomain(step) {
            errs.push(FieldError::invalid(&path.child("path"), url_path, &format!("segment[{i}]: {failure}")));
        }
    }
    errs
}

/// `ValidateCustomResourceDefinitionStatus` plus
/// `ValidateCustomResourceDefinitionStoredVersions`.
fn validate_status(crd: &Value) -> ErrorList {
    let status = Path::new("status");
    let mut errs =
        validate_names(crd.pointer("/status/acceptedNames").unwrap_or(&Value::Null), &status.child("acceptedNames"));
    let path = status.child("storedVersions");
    let stored_value = crd.pointer("/status/storedVersions");
    let stored = strings(stored_value);
    if stored.is_empty() {
        let nil = stored_value.is_none_or(Value::is_null);
        errs.push(FieldError::invalid(
            &path,
            BadValue::Raw(go_string_slice(&stored, nil)),
            "must have at least one stored version",
        ));
        return errs;
    }
    let mut remaining: Vec<(usize, &str)> = Vec::new();
    for (i, v) in stored.iter().enumerate() {
        // Later duplicates win, as in upstream's map of index by name.
        remaining.retain(|(_, n)| *n != v.as_str());
        remaining.push((i, v.as_str()));
    }
    for v in list(crd.pointer("/spec/versions")) {
        let name = str_of(v, "name");
        let found = remaining.iter().any(|(_, n)| *n == name);
        if v.get("storage") == Some(&Value::Bool(true)) && !found {
            errs.push(FieldError::invalid(
                &path,
                BadValue::Raw(go_string_slice(&stored, false)),
                &format!("must have the storage version {name}"),
            ));
        }
        remaining.retain(|(_, n)| *n != name);
    }
    for (i, v) in remaining {
        errs.push(FieldError::invalid(
            &path.index(i),
            v,
            &format!(
                "missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions \
                 until a storage migration ensures no data remains persisted in {v} and removes {v} from \
                 status.storedVersions"
            ),
        ));
    }
    errs
}

/// Whether a group is reserved for the Kubernetes project
/// (`IsProtectedCommunityGroup`).
pub fn is_protected_community_group(group: &str) -> bool {
    group == "k8s.io" || group.ends_with(".k8s.io") || group == "kubernetes.io" || group.ends_with(".kubernetes.io")
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Approval {
    Invalid,
    Approved,
    Bypassed,
    Missing,
}

fn approval_state(crd: &Value) -> (Approval, &str, String) {
    let value = crd
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(API_APPROVED_ANNOTATION))
        .and_then(Value::as_str)
        .unwrap_or("");
    let quoted = go_quote(API_APPROVED_ANNOTATION);
    if value.is_empty() {
        let reason =
            format!("protected groups must have approval annotation {quoted}, see https://github.com/kubernetes/enhancements/pull/1111");
        return (Approval::Missing, value, reason);
    }
    if value.starts_with("unapproved") {
        return (Approval::Bypassed, value, String::new());
    }
    let u = parse_url(value);
    if !u.scheme.is_empty() && !u.host.is_empty() {
        return (Approval::Approved, value, String::new());
    }
    let reason = format!(
        "protected groups must have approval annotation {quoted} with either a URL or a reason starting with \
         \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"
    );
    (Approval::Invalid, value, reason)
}

/// `validateAPIApproval`: CRDs in protected groups carry the approval
/// annotation (checked when it changes).
fn validate_api_approval(new: &Value, old: Option<&Value>) -> ErrorList {
    let mut errs = ErrorList::new();
    if !is_protected_community_group(new.pointer("/spec/group").and_then(Value::as_str).unwrap_or("")) {
        return errs;
    }
    let (state, value, reason) = approval_state(new);
    if old.is_some_and(|o| approval_state(o).0 == state) {
        return errs;
    }
    let path = Path::new("metadata").child("annotations").key(API_APPROVED_ANNOTATION);
    match state {
        Approval::Missing => errs.push(FieldError::required(&path, &reason)),
        Approval::Invalid => errs.push(FieldError::invalid(&path, value, &reason)),
        Approval::Approved | Approval::Bypassed => {}
    }
    errs
}

/// `validatePreserveUnknownFields`: v1 CRDs may not turn pruning off.
fn validate_preserve_unknown_fields(new: &Value, old: Option<&Value>) -> ErrorList {
    let mut errs = ErrorList::new();
    if old.is_some_and(preserve_unknown_fields) || !preserve_unknown_fields(new) {
        return errs;
    }
    errs.push(FieldError::invalid(
        &Path::new("spec").child("preserveUnknownFields"),
        true,
        "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
    ));
    errs
}

/// Go's `%#v` of the internal `[]CustomResourceDefinitionVersion`.
fn go_versions(spec: &InternalSpec) -> BadValue {
    if spec.raw.get("versions").is_none_or(Value::is_null) {
        return BadValue::Raw("[]apiextensions.CustomResourceDefinitionVersion(nil)".into());
    }
    let ptr = |ty: &str, set: bool| format!("(*{ty})({})", if set { POINTER } else { "nil" });
    let items: Vec<String> = spec
        .versions
        .iter()
        .map(|v| {
            let columns = match v.columns {
                None => "[]apiextensions.CustomResourceColumnDefinition(nil)".to_string(),
                Some(c) => {
                    let cols: Vec<String> = list(Some(c))
                        .iter()
                        .map(|c| {
                            format!(
                                "apiextensions.CustomResourceColumnDefinition{{Name:{}, Type:{}, Format:{}, \
                                 Description:{}, Priority:{}, JSONPath:{}}}",
                                go_quote(str_of(c, "name")),
                                go_quote(str_of(c, "type")),
                                go_quote(str_of(c, "format")),
                                go_quote(str_of(c, "description")),
                                c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                                go_quote(str_of(c, "jsonPath")),
                            )
                        })
                        .collect();
                    format!("[]apiextensions.CustomResourceColumnDefinition{{{}}}", cols.join(", "))
                }
            };
            let fields = match v.selectable_fields {
                None => "[]apiextensions.SelectableField(nil)".to_string(),
                Some(f) => {
                    let fs: Vec<String> = list(Some(f))
                        .iter()
                        .map(|f| {
                            format!("apiextensions.SelectableField{{JSONPath:{}}}", go_quote(str_of(f, "jsonPath")))
                        })
                        .collect();
                    format!("[]apiextensions.SelectableField{{{}}}", fs.join(", "))
                }
            };
            let flag = |k: &str| v.raw.get(k) == Some(&Value::Bool(true));
            format!(
                "apiextensions.CustomResourceDefinitionVersion{{Name:{}, Served:{}, Storage:{}, Deprecated:{}, \
                 DeprecationWarning:{}, Schema:{}, Subresources:{}, AdditionalPrinterColumns:{}, SelectableFields:{}}}",
                go_quote(str_of(v.raw, "name")),
                flag("served"),
                flag("storage"),
                flag("deprecated"),
                ptr("string", opt(v.raw, "deprecationWarning").is_some()),
                ptr("apiextensions.CustomResourceValidation", v.schema.is_some()),
                ptr("apiextensions.CustomResourceSubresources", v.subresources.is_some()),
                columns,
                fields,
            )
        })
        .collect();
    BadValue::Raw(format!("[]apiextensions.CustomResourceDefinitionVersion{{{}}}", items.join(", ")))
}

#[cfg(test)]
mod tests;
