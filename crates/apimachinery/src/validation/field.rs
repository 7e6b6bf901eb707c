//! Field paths and field-level validation errors, following upstream's
//! `k8s.io/apimachinery/pkg/util/validation/field` (v0.33) word for word:
//! [`Path`] renders like `field.Path.String()` (`spec.containers[0].image`,
//! `metadata.annotations[foo]`), [`FieldError`] renders like
//! `field.Error.ErrorBody()` / `Error()`, and [`ErrorList`] converts into the
//! `StatusCause`s of a 422 `Invalid` error exactly as `errors.NewInvalid` does
//! (`reason` = the error type, `message` = the body, `field` = the path).

use std::fmt;

use crate::errors::{ApiError, StatusCause};

/// A path from the root of an object to one field, as upstream's
/// `field.Path`.
///
/// * `Path::new("spec").child("containers").index(0).child("image")` renders
///   `spec.containers[0].image`;
/// * `.key("foo")` renders a map subscript: `metadata.annotations[foo]`;
/// * [`Path::nil`] is upstream's nil `*field.Path`: it renders `<nil>`, and a
///   child of it is a root (`Path::nil().child("values")` is `values`) — the
///   label-selector parser reports errors against it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Path(Option<String>);

impl Path {
    /// A root path with one element (`field.NewPath(name)`).
    pub fn new(name: &str) -> Path {
        Path(Some(name.to_string()))
    }

    /// The nil path (renders `<nil>`).
    pub fn nil() -> Path {
        Path(None)
    }

    /// A child field: `a` + `b` → `a.b` (`Path.Child`).
    pub fn child(&self, name: &str) -> Path {
        match &self.0 {
            None => Path(Some(name.to_string())),
            Some(s) if name.is_empty() => Path(Some(format!("{s}[]"))),
            Some(s) => Path(Some(format!("{s}.{name}"))),
        }
    }

    /// A list subscript: `a[3]` (`Path.Index`).
    pub fn index(&self, i: usize) -> Path {
        self.key(&i.to_string())
    }

    /// A map subscript: `a[key]`, the key written raw (`Path.Key`).
    pub fn key(&self, key: &str) -> Path {
        match &self.0 {
            None => Path(Some(format!("[{key}]"))),
            Some(s) => Path(Some(format!("{s}[{key}]"))),
        }
    }

    /// Whether this is the nil path.
    pub fn is_nil(&self) -> bool {
        self.0.is_none()
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            None => f.write_str("<nil>"),
            Some(s) => f.write_str(s),
        }
    }
}

/// The machine-readable type of a field error; [`ErrorType::as_str`] is the
/// `StatusCause.reason` (upstream's `field.ErrorType` = `metav1.CauseType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorType {
    /// `FieldValueNotFound` — "Not found".
    NotFound,
    /// `FieldValueRequired` — "Required value".
    Required,
    /// `FieldValueDuplicate` — "Duplicate value".
    Duplicate,
    /// `FieldValueInvalid` — "Invalid value".
    Invalid,
    /// `FieldValueNotSupported` — "Unsupported value".
    NotSupported,
    /// `FieldValueForbidden` — "Forbidden".
    Forbidden,
    /// `FieldValueTooLong` — "Too long".
    TooLong,
    /// `FieldValueTooMany` — "Too many".
    TooMany,
    /// `InternalError` — "Internal error".
    Internal,
    /// `FieldValueTypeInvalid` — "Invalid value".
    TypeInvalid,
}

impl ErrorType {
    /// The cause type string (`FieldValueRequired`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorType::NotFound => "FieldValueNotFound",
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Duplicate => "FieldValueDuplicate",
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::NotSupported => "FieldValueNotSupported",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::TooLong => "FieldValueTooLong",
            ErrorType::TooMany => "FieldValueTooMany",
            ErrorType::Internal => "InternalError",
            ErrorType::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// The human text that starts the message (`ErrorType.String()`).
    pub fn text(self) -> &'static str {
        match self {
            ErrorType::NotFound => "Not found",
            ErrorType::Required => "Required value",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::Invalid | ErrorType::TypeInvalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::TooLong => "Too long",
            ErrorType::TooMany => "Too many",
            ErrorType::Internal => "Internal error",
        }
    }
}

/// The offending value of a field error, rendered as upstream's
/// `ErrorBody` renders Go values.
#[derive(Clone, Debug, PartialEq)]
pub enum BadValue {
    /// A string, printed Go-quoted (`%q`): `"x"`.
    Str(String),
    /// An integer, printed plainly: `-1`.
    Int(i64),
    /// A boolean, printed plainly: `true`.
    Bool(bool),
    /// A nil value or nil pointer, printed `null`.
    Null,
    /// Upstream's omitted value: nothing is printed.
    Omitted,
    /// A value printed verbatim: a Go `String()` (timestamps) or a `%#v`
    /// rendering (`[]string{"a"}`) built with [`go_string_slice`].
    Raw(String),
}

impl From<&str> for BadValue {
    fn from(s: &str) -> Self {
        BadValue::Str(s.to_string())
    }
}
impl From<String> for BadValue {
    fn from(s: String) -> Self {
        BadValue::Str(s)
    }
}
impl From<i64> for BadValue {
    fn from(v: i64) -> Self {
        BadValue::Int(v)
    }
}
impl From<bool> for BadValue {
    fn from(v: bool) -> Self {
        BadValue::Bool(v)
    }
}

/// One field-level validation error (upstream `field.Error`).
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    /// The error type (the cause `reason`).
    pub error_type: ErrorType,
    /// The rendered field path (the cause `field`), e.g. `metadata.name`.
    pub field: String,
    /// The offending value.
    pub bad_value: BadValue,
    /// Extra detail appended after `: `.
    pub detail: String,
}

impl FieldError {
    fn make(error_type: ErrorType, path: &Path, bad_value: BadValue, detail: impl Into<String>) -> FieldError {
        FieldError { error_type, field: path.to_string(), bad_value, detail: detail.into() }
    }

    /// `field.Required`: `Required value[: detail]`.
    pub fn required(path: &Path, detail: &str) -> FieldError {
        Self::make(ErrorType::Required, path, BadValue::Str(String::new()), detail)
    }

    /// `field.Invalid`: `Invalid value: <value>[: detail]`.
    pub fn invalid(path: &Path, value: impl Into<BadValue>, detail: &str) -> FieldError {
        Self::make(ErrorType::Invalid, path, value.into(), detail)
    }

    /// `field.TypeInvalid`: `Invalid value: <value>[: detail]` with cause
    /// type `FieldValueTypeInvalid`.
    pub fn type_invalid(path: &Path, value: impl Into<BadValue>, detail: &str) -> FieldError {
        Self::make(ErrorType::TypeInvalid, path, value.into(), detail)
    }

    /// `field.NotFound`: `Not found: <value>`.
    pub fn not_found(path: &Path, value: impl Into<BadValue>) -> FieldError {
        Self::make(ErrorType::NotFound, path, value.into(), "")
    }

    /// `field.Duplicate`: `Duplicate value: <value>`.
    pub fn duplicate(path: &Path, value: impl Into<BadValue>) -> FieldError {
        Self::make(ErrorType::Duplicate, path, value.into(), "")
    }

    /// `field.NotSupported`: `Unsupported value: "x": supported values: "a", "b"`
    /// (no detail when `valid` is empty).
    pub fn not_supported(path: &Path, value: impl Into<BadValue>, valid: &[&str]) -> FieldError {
        let detail = if valid.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = valid.iter().map(|v| go_quote(v)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::make(ErrorType::NotSupported, path, value.into(), detail)
    }

    /// `field.Forbidden`: `Forbidden: detail`.
    pub fn forbidden(path: &Path, detail: &str) -> FieldError {
        Self::make(ErrorType::Forbidden, path, BadValue::Str(String::new()), detail)
    }

    /// `field.TooLong`: `Too long: may not be more than <max> bytes`, or
    /// `Too long: value is too long` when `max_bytes` is negative (1.33 text).
    pub fn too_long(path: &Path, max_bytes: i64) -> FieldError {
        let detail = if max_bytes >= 0 {
            format!("may not be more than {max_bytes} bytes")
        } else {
            "value is too long".to_string()
        };
        Self::make(ErrorType::TooLong, path, BadValue::Str("<value omitted>".into()), detail)
    }

    /// `field.TooMany`: `Too many: <actual>: must have at most <max> items`;
    /// a negative `actual` omits it, a negative `max` says `has too many items`.
    pub fn too_many(path: &Path, actual: i64, max: i64) -> FieldError {
        let detail = if max >= 0 { format!("must have at most {max} items") } else { "has too many items".to_string() };
        let value = if actual >= 0 { BadValue::Int(actual) } else { BadValue::Omitted };
        Self::make(ErrorType::TooMany, path, value, detail)
    }

    /// `field.InternalError`: `Internal error: detail`.
    pub fn internal(path: &Path, detail: &str) -> FieldError {
        Self::make(ErrorType::Internal, path, BadValue::Null, detail)
    }

    /// The message without the field (`ErrorBody()`), which is the
    /// `StatusCause.message`.
    pub fn body(&self) -> String {
        let mut s = match self.error_type {
            ErrorType::Required | ErrorType::Forbidden | ErrorType::TooLong | ErrorType::Internal => {
                self.error_type.text().to_string()
            }
            _ => match &self.bad_value {
                BadValue::Omitted => self.error_type.text().to_string(),
                BadValue::Str(v) => format!("{}: {}", self.error_type.text(), go_quote(v)),
                BadValue::Int(v) => format!("{}: {}", self.error_type.text(), v),
                BadValue::Bool(v) => format!("{}: {}", self.error_type.text(), v),
                BadValue::Null => format!("{}: null", self.error_type.text()),
                BadValue::Raw(v) => format!("{}: {}", self.error_type.text(), v),
            },
        };
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }

    /// The `StatusCause` of this error.
    pub fn to_cause(&self) -> StatusCause {
        StatusCause { reason: self.error_type.as_str().to_string(), message: self.body(), field: self.field.clone() }
    }
}

impl fmt::Display for FieldError {
    /// `<field>: <body>` (`field.Error.Error()`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

impl std::error::Error for FieldError {}

/// A list of field errors (upstream `field.ErrorList`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ErrorList(pub Vec<FieldError>);

impl ErrorList {
    /// An empty list.
    pub fn new() -> ErrorList {
        ErrorList(Vec::new())
    }

    /// Appends one error.
    pub fn push(&mut self, e: FieldError) {
        self.0.push(e);
    }

    /// Appends all errors of another list.
    pub fn extend(&mut self, other: ErrorList) {
        self.0.extend(other.0);
    }

    /// Whether there are no errors.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The number of errors.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The errors.
    pub fn iter(&self) -> std::slice::Iter<'_, FieldError> {
        self.0.iter()
    }

    /// The causes of a 422, one per error, in order (as `NewInvalid`).
    pub fn to_causes(&self) -> Vec<StatusCause> {
        self.0.iter().map(FieldError::to_cause).collect()
    }

    /// `ToAggregate().Error()`: `None` when empty; the single message for
    /// one error; otherwise `[m1, m2]` with exact-duplicate messages dropped.
    pub fn aggregate_message(&self) -> Option<String> {
        let mut seen: Vec<String> = Vec::new();
        for e in &self.0 {
            let m = e.to_string();
            if !seen.contains(&m) {
                seen.push(m);
            }
        }
        match seen.len() {
            0 => None,
            1 => seen.pop(),
            _ => Some(format!("[{}]", seen.join(", "))),
        }
    }

    /// The 422 `Invalid` error for these causes (`errors.NewInvalid`):
    /// `kind` is the Kind (`Pod`), `group` its API group.
    pub fn into_invalid(self, group: &str, kind: &str, name: &str) -> ApiError {
        ApiError::Invalid {
            group: group.to_string(),
            kind: kind.to_string(),
            name: name.to_string(),
            causes: self.to_causes(),
        }
    }
}

impl From<ErrorList> for Vec<StatusCause> {
    fn from(l: ErrorList) -> Self {
        l.to_causes()
    }
}

impl From<Vec<FieldError>> for ErrorList {
    fn from(v: Vec<FieldError>) -> Self {
        ErrorList(v)
    }
}

impl IntoIterator for ErrorList {
    type Item = FieldError;
    type IntoIter = std::vec::IntoIter<FieldError>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a ErrorList {
    type Item = &'a FieldError;
    type IntoIter = std::slice::Iter<'a, FieldError>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// Go's `strconv.Quote` (the `%q` verb): double quotes, `\"` and `\\`,
/// `\n`-style escapes, `\xNN` for other ASCII controls, `\uNNNN` /
/// `\UNNNNNNNN` for non-printable non-ASCII characters.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_ascii() => out.push(c),
            c if go_is_print(c) => out.push(c),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// An approximation of Go's `unicode.IsPrint` for non-ASCII characters:
/// controls, non-ASCII spaces and the common format characters are not
/// printable.
fn go_is_print(c: char) -> bool {
    let u = c as u32;
    !(c.is_control()
        || c.is_whitespace()
        || u == 0xad
        || (0x200b..=0x200f).contains(&u)
        || (0x2028..=0x202e).contains(&u)
        || (0x2060..=0x206f).contains(&u)
        || u == 0xfeff
        || (0xfff9..=0xfffb).contains(&u)
        || (0xe000..=0xf8ff).contains(&u))
}

/// Go's `%#v` of a `[]string`: `[]string{"a", "b"}`, `[]string{}` for an
/// empty slice, `[]string(nil)` when `nil` is set and the slice is empty.
pub fn go_string_slice<S: AsRef<str>>(values: &[S], nil: bool) -> String {
    if values.is_empty() {
        return if nil { "[]string(nil)".to_string() } else { "[]string{}".to_string() };
    }
    let quoted: Vec<String> = values.iter().map(|v| go_quote(v.as_ref())).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// A JSON timestamp as Go's `time.Time.String()` prints it (what upstream
/// shows for an immutable `creationTimestamp`): `2024-01-02T03:04:05Z` →
/// `2024-01-02 03:04:05 +0000 UTC`. Other shapes are returned unchanged.
pub fn go_time_string(rfc3339: &str) -> String {
    let b = rfc3339.as_bytes();
    if b.len() >= 20 && b[10] == b'T' && rfc3339.ends_with('Z') {
        let date = &rfc3339[..10];
        let time = &rfc3339[11..rfc3339.len() - 1];
        return format!("{date} {time} +0000 UTC");
    }
    rfc3339.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_render_like_field_path_string() {
        let cases: Vec<(Path, &str)> = vec![
            (Path::new("metadata").child("name"), "metadata.name"),
            (Path::new("spec").child("containers").index(0).child("image"), "spec.containers[0].image"),
            (Path::new("metadata").child("annotations").key("foo"), "metadata.annotations[foo]"),
            (Path::new("metadata").child("labels").key("a/b"), "metadata.labels[a/b]"),
            (Path::new("spec").index(1).index(2), "spec[1][2]"),
            (Path::nil(), "<nil>"),
            (Path::nil().child("values"), "values"),
            (Path::nil().child("values").index(0).key("app"), "values[0][app]"),
            (Path::nil().index(3), "[3]"),
            (Path::nil().child("key"), "key"),
        ];
        for (p, want) in cases {
            assert_eq!(p.to_string(), want);
        }
        assert!(Path::nil().is_nil());
        assert!(!Path::new("a").is_nil());
    }

    #[test]
    fn error_bodies_match_upstream_error_body() {
        let p = Path::new("metadata").child("name");
        let cases: Vec<(FieldError, &str)> = vec![
            (FieldError::required(&p, ""), "Required value"),
            (
                FieldError::required(&p, "name or generateName is required"),
                "Required value: name or generateName is required",
            ),
            (
                FieldError::invalid(&p, "x", "must be no more than 63 characters"),
                "Invalid value: \"x\": must be no more than 63 characters",
            ),
            (FieldError::invalid(&p, "x", ""), "Invalid value: \"x\""),
            (
                FieldError::invalid(&p, -1i64, "must be greater than or equal to 0"),
                "Invalid value: -1: must be greater than or equal to 0",
            ),
            (FieldError::invalid(&p, true, "d"), "Invalid value: true: d"),
            (FieldError::invalid(&p, BadValue::Null, "d"), "Invalid value: null: d"),
            (
                FieldError::invalid(&p, BadValue::Raw("[]string{\"a\"}".into()), "d"),
                "Invalid value: []string{\"a\"}: d",
            ),
            (
                FieldError::not_supported(&p, "Foo", &["Always", "Never"]),
                "Unsupported value: \"Foo\": supported values: \"Always\", \"Never\"",
            ),
            (FieldError::not_supported(&p, "Foo", &[]), "Unsupported value: \"Foo\""),
            (FieldError::duplicate(&p, "x"), "Duplicate value: \"x\""),
            (FieldError::not_found(&p, "x"), "Not found: \"x\""),
            (FieldError::forbidden(&p, "not allowed on this type"), "Forbidden: not allowed on this type"),
            (FieldError::too_long(&p, 262144), "Too long: may not be more than 262144 bytes"),
            (FieldError::too_long(&p, -1), "Too long: value is too long"),
            (FieldError::too_many(&p, 5, 3), "Too many: 5: must have at most 3 items"),
            (FieldError::too_many(&p, -1, 3), "Too many: must have at most 3 items"),
            (FieldError::too_many(&p, 5, -1), "Too many: 5: has too many items"),
            (FieldError::internal(&p, "boom"), "Internal error: boom"),
            (FieldError::type_invalid(&p, "x", "expected integer"), "Invalid value: \"x\": expected integer"),
        ];
        for (e, want) in cases {
            assert_eq!(e.body(), want);
            assert_eq!(e.to_string(), format!("metadata.name: {want}"));
        }
    }

    #[test]
    fn causes_carry_type_body_and_field() {
        let mut l = ErrorList::new();
        l.push(FieldError::required(&Path::new("spec").child("containers").index(0).child("image"), ""));
        l.push(FieldError::too_long(&Path::new("metadata").child("annotations"), 262144));
        let c = l.to_causes();
        assert_eq!(c[0].reason, "FieldValueRequired");
        assert_eq!(c[0].message, "Required value");
        assert_eq!(c[0].field, "spec.containers[0].image");
        assert_eq!(c[1].reason, "FieldValueTooLong");
        let err = l.into_invalid("", "Pod", "x");
        assert_eq!(err.code(), 422);
        assert_eq!(
            err.to_string(),
            "Pod \"x\" is invalid: [spec.containers[0].image: Required value, metadata.annotations: Too long: may not be more than 262144 bytes]"
        );
    }

    #[test]
    fn error_types_have_upstream_cause_names() {
        let all = [
            (ErrorType::NotFound, "FieldValueNotFound"),
            (ErrorType::Required, "FieldValueRequired"),
            (ErrorType::Duplicate, "FieldValueDuplicate"),
            (ErrorType::Invalid, "FieldValueInvalid"),
            (ErrorType::NotSupported, "FieldValueNotSupported"),
            (ErrorType::Forbidden, "FieldValueForbidden"),
            (ErrorType::TooLong, "FieldValueTooLong"),
            (ErrorType::TooMany, "FieldValueTooMany"),
            (ErrorType::Internal, "InternalError"),
            (ErrorType::TypeInvalid, "FieldValueTypeInvalid"),
        ];
        for (t, s) in all {
            assert_eq!(t.as_str(), s);
        }
    }

    #[test]
    fn aggregate_dedups_and_brackets() {
        let p = Path::new("a");
        let mut l = ErrorList::new();
        assert_eq!(l.aggregate_message(), None);
        l.push(FieldError::required(&p, ""));
        assert_eq!(l.aggregate_message().unwrap(), "a: Required value");
        l.push(FieldError::required(&p, ""));
        assert_eq!(l.aggregate_message().unwrap(), "a: Required value");
        l.push(FieldError::forbidden(&p, "no"));
        assert_eq!(l.aggregate_message().unwrap(), "[a: Required value, a: Forbidden: no]");
    }

    #[test]
    fn go_quote_matches_strconv_quote() {
        let cases = [
            ("", "\"\""),
            ("abc", "\"abc\""),
            ("a b", "\"a b\""),
            ("a\"b", "\"a\\\"b\""),
            ("a\\b", "\"a\\\\b\""),
            ("a\nb\tc", "\"a\\nb\\tc\""),
            ("\u{0}", "\"\\x00\""),
            ("\u{7f}", "\"\\x7f\""),
            ("\u{1b}", "\"\\x1b\""),
            ("함", "\"함\""),
            ("é", "\"é\""),
            ("\u{a0}", "\"\\u00a0\""),
            ("\u{85}", "\"\\u0085\""),
            ("\u{feff}", "\"\\ufeff\""),
        ];
        for (i, o) in cases {
            assert_eq!(go_quote(i), o, "quoting {i:?}");
        }
    }

    #[test]
    fn go_slices_and_times() {
        assert_eq!(go_string_slice::<&str>(&[], true), "[]string(nil)");
        assert_eq!(go_string_slice::<&str>(&[], false), "[]string{}");
        assert_eq!(go_string_slice(&["a", "b"], true), "[]string{\"a\", \"b\"}");
        assert_eq!(go_time_string("2024-01-02T03:04:05Z"), "2024-01-02 03:04:05 +0000 UTC");
        assert_eq!(go_time_string("2024-01-02T03:04:05.5Z"), "2024-01-02 03:04:05.5 +0000 UTC");
        assert_eq!(go_time_string("garbage"), "garbage");
    }
}
