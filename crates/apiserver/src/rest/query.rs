//! Query parameters and the options they carry, validated as upstream
//! validates `ListOptions`, `CreateOptions`, `UpdateOptions`,
//! `PatchOptions` and `DeleteOptions` (422 Invalid on the options kind in
//! group `meta.k8s.io`, 400 for values that do not parse).

use rkube_apimachinery::validation::{ErrorList, FieldError, Path};
use rkube_apimachinery::ApiError;

use crate::storage::watch::WatchOptions;
use crate::storage::{ListOptions, Predicate};

/// The decoded query string, in order, repeated keys kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Query(Vec<(String, String)>);

impl Query {
    /// Parses a raw (percent-encoded) query string.
    pub fn parse(raw: Option<&str>) -> Query {
        Query(form_urlencoded::parse(raw.unwrap_or("").as_bytes()).into_owned().collect())
    }

    /// The first value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Every value of `key`.
    pub fn all(&self, key: &str) -> Vec<&str> {
        self.0.iter().filter(|(k, _)| k == key).map(|(_, v)| v.as_str()).collect()
    }

    /// Whether `key` is set to a true value (Go's `strconv.ParseBool`);
    /// malformed values count as false here (see [`Query::bool`]).
    pub fn flag(&self, key: &str) -> bool {
        self.bool(key).ok().flatten().unwrap_or(false)
    }

    /// `key` as a boolean, `None` when absent; 400 when malformed.
    pub fn bool(&self, key: &str) -> Result<Option<bool>, ApiError> {
        self.get(key)
            .map(|v| match v {
                "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
                "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
                _ => Err(ApiError::BadRequest(format!("strconv.ParseBool: parsing {v:?}: invalid syntax"))),
            })
            .transpose()
    }

    /// `key` as an integer, `None` when absent; 400 when malformed.
    pub fn int(&self, key: &str) -> Result<Option<i64>, ApiError> {
        self.get(key)
            .map(|v| {
                v.parse::<i64>()
                    .map_err(|_| ApiError::BadRequest(format!("strconv.ParseInt: parsing {v:?}: invalid syntax")))
            })
            .transpose()
    }
}

/// `fieldValidation`: what to do with unknown and duplicate fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValidation {
    /// Drop them silently.
    Ignore,
    /// Drop them and send a `Warning` header per field (the default).
    Warn,
    /// Refuse the request (400).
    Strict,
}

/// The options of a write (`CreateOptions`, `UpdateOptions`, `PatchOptions`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteParams {
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `fieldValidation`.
    pub field_validation: FieldValidation,
}

fn invalid_options(kind: &str, errs: ErrorList) -> ApiError {
    errs.into_invalid("meta.k8s.io", kind, "")
}

/// `dryRun` must be `All` (or absent).
fn dry_run(q: &Query, errs: &mut ErrorList) -> bool {
    let values = q.all("dryRun");
    for v in &values {
        if *v != "All" {
            errs.push(FieldError::not_supported(&Path::new("dryRun"), *v, &["All"]));
        }
    }
    !values.is_empty()
}

/// Parses the options of a create, update or patch; `kind` is the options
/// kind named in errors (`CreateOptions`, …).
pub fn write_params(q: &Query, kind: &str) -> Result<WriteParams, ApiError> {
    let mut errs = ErrorList::new();
    let dry_run = dry_run(q, &mut errs);
    let field_validation = match q.get("fieldValidation").unwrap_or("") {
        "" | "Warn" => FieldValidation::Warn,
        "Ignore" => FieldValidation::Ignore,
        "Strict" => FieldValidation::Strict,
        other => {
            errs.push(FieldError::not_supported(&Path::new("fieldValidation"), other, &["Ignore", "Strict", "Warn"]));
            FieldValidation::Warn
        }
    };
    if !errs.is_empty() {
        return Err(invalid_options(kind, errs));
    }
    Ok(WriteParams { dry_run, field_validation })
}

/// `dryRun` of a delete (validated like the others, kind `DeleteOptions`).
pub fn delete_dry_run(q: &Query) -> Result<bool, ApiError> {
    let mut errs = ErrorList::new();
    let dry = dry_run(q, &mut errs);
    if !errs.is_empty() {
        return Err(invalid_options("DeleteOptions", errs));
    }
    Ok(dry)
}

/// The selector predicate of a list, watch or deletecollection.
pub fn predicate(q: &Query, kind: &'static str, group: &'static str) -> Result<Predicate, ApiError> {
    Predicate::parse(q.get("labelSelector"), q.get("fieldSelector"), kind, group)
}

/// `ListOptions` of a list (validated as upstream's `ValidateListOptions`).
pub fn list_options(q: &Query, kind: &'static str, group: &'static str) -> Result<ListOptions, ApiError> {
    let rv = q.get("resourceVersion").unwrap_or("").to_string();
    let rv_match = q.get("resourceVersionMatch").unwrap_or("").to_string();
    let cont = q.get("continue").unwrap_or("").to_string();
    let path = Path::new("resourceVersionMatch");
    let mut errs = ErrorList::new();
    if !rv_match.is_empty() {
        if rv.is_empty() {
            errs.push(FieldError::forbidden(
                &path,
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if !cont.is_empty() {
            errs.push(FieldError::forbidden(&path, "resourceVersionMatch is forbidden when continue is provided"));
        }
        if rv_match != "Exact" && rv_match != "NotOlderThan" {
            errs.push(FieldError::not_supported(&path, rv_match.as_str(), &["Exact", "NotOlderThan", ""]));
        }
        if rv_match == "Exact" && rv == "0" {
            errs.push(FieldError::forbidden(
                &path,
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
    }
    if q.get("sendInitialEvents").is_some() {
        errs.push(FieldError::forbidden(&Path::new("sendInitialEvents"), "sendInitialEvents is forbidden for list"));
    }
    if !errs.is_empty() {
        return Err(invalid_options("ListOptions", errs));
    }
    Ok(ListOptions {
        predicate: predicate(q, kind, group)?,
        limit: q.int("limit")?,
        continue_token: (!cont.is_empty()).then_some(cont),
        resource_version: rv,
        resource_version_match: rv_match,
    })
}

/// `ListOptions` of a watch (upstream's `validateWatchOptions`) and its
/// `timeoutSeconds`.
pub fn watch_options(
    q: &Query,
    kind: &'static str,
    group: &'static str,
) -> Result<(WatchOptions, Option<u64>), ApiError> {
    let rv_match = q.get("resourceVersionMatch").unwrap_or("");
    let send_initial_events = q.bool("sendInitialEvents")?;
    let allow_bookmarks = q.bool("allowWatchBookmarks")?.unwrap_or(false);
    let path = Path::new("resourceVersionMatch");
    let mut errs = ErrorList::new();
    if send_initial_events.is_some() {
        if rv_match != "NotOlderThan" {
            errs.push(FieldError::forbidden(
                &path,
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if !allow_bookmarks {
            errs.push(FieldError::forbidden(
                &Path::new("allowWatchBookmarks"),
                "sendInitialEvents requires setting allowWatchBookmarks to true",
            ));
        }
    }
    if !rv_match.is_empty() {
        if send_initial_events.is_none() {
            errs.push(FieldError::forbidden(
                &path,
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
        if rv_match != "NotOlderThan" {
            errs.push(FieldError::not_supported(&path, rv_match, &["NotOlderThan"]));
        }
        if q.get("continue").is_some_and(|c| !c.is_empty()) {
            errs.push(FieldError::forbidden(&path, "resourceVersionMatch is forbidden when continue is provided"));
        }
    }
    if !errs.is_empty() {
        return Err(invalid_options("ListOptions", errs));
    }
    let timeout = q.int("timeoutSeconds")?.filter(|t| *t > 0).map(|t| t as u64);
    let opts = WatchOptions {
        predicate: predicate(q, kind, group)?,
        resource_version: q.get("resourceVersion").unwrap_or("").to_string(),
        allow_bookmarks,
        send_initial_events,
    };
    Ok((opts, timeout))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_version_match_needs_a_resource_version() {
        let q = Query::parse(Some("resourceVersionMatch=Exact"));
        let e = list_options(&q, "ConfigMap", "").unwrap_err();
        assert_eq!(e.code(), 422);
        assert_eq!(
            e.to_string(),
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
        );
    }

    #[test]
    fn write_params_validate_dry_run_and_field_validation() {
        let ok = write_params(&Query::parse(Some("dryRun=All&fieldValidation=Strict")), "CreateOptions").unwrap();
        assert!(ok.dry_run);
        assert_eq!(ok.field_validation, FieldValidation::Strict);
        let e = write_params(&Query::parse(Some("fieldValidation=Loud")), "CreateOptions").unwrap_err();
        assert_eq!(e.code(), 422);
        assert!(e.to_string().contains("fieldValidation: Unsupported value: \"Loud\""), "{e}");
    }

    #[test]
    fn query_values_are_percent_decoded() {
        let q = Query::parse(Some("labelSelector=app%3Dweb%2Cenv+in+(a%2Cb)&watch=1"));
        assert_eq!(q.get("labelSelector"), Some("app=web,env in (a,b)"));
        assert!(q.flag("watch"));
    }
}
