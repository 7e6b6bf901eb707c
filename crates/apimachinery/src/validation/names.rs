//! String-format validators with upstream's exact messages
//! (`k8s.io/apimachinery/pkg/util/validation/validation.go`,
//! `pkg/api/validation/generic.go`, `pkg/api/validation/path/name.go`, v0.33),
//! object-name rules per kind ([`NameValidation`]) and `generateName`
//! ([`generate_name`], after `k8s.io/apiserver/pkg/storage/names`).
//!
//! Every `is_*` function returns the list of problems (empty = valid), each
//! one a detail string that callers wrap in a `FieldError::invalid`.
//! The regular expressions upstream uses are matched by hand; the regex text
//! only appears inside the messages.

/// Max length of a DNS-1123 label (and a DNS-1035 label).
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// Max length of a DNS-1123 subdomain.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// Max length of the name part of a qualified name.
pub const QUALIFIED_NAME_MAX_LENGTH: usize = 63;
/// Max length of a label value.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR: &str =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";

/// `MaxLenError`: `must be no more than <n> characters`.
pub fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// `RegexError`: `<msg> (e.g. 'a',  or 'b', regex used for validation is '<fmt>')`
/// — upstream's double space after each comma included.
pub fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut s = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            s.push_str(" or ");
        }
        s.push('\'');
        s.push_str(e);
        s.push_str("', ");
    }
    s.push_str("regex used for validation is '");
    s.push_str(fmt);
    s.push_str("')");
    s
}

/// `EmptyError`: `must be non-empty`.
pub fn empty_error() -> &'static str {
    "must be non-empty"
}

fn is_alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn matches_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && is_alnum(b[0])
        && is_alnum(b[b.len() - 1])
        && b.iter().all(|&c| is_alnum(c) || c == b'-' || c == b'_' || c == b'.')
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn matches_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    let ok_end = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty() && ok_end(b[0]) && ok_end(b[b.len() - 1]) && b.iter().all(|&c| ok_end(c) || c == b'-')
}

/// The DNS-1123 subdomain regex (no length check).
fn matches_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty() && s.split('.').all(matches_dns1123_label)
}

/// `[a-z]([-a-z0-9]*[a-z0-9])?`
fn matches_dns1035_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_lowercase()
        && (b[b.len() - 1].is_ascii_lowercase() || b[b.len() - 1].is_ascii_digit())
        && b.iter().all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
}

/// `IsQualifiedName`: label keys, annotation keys (lower-cased first),
/// finalizer names. An optional DNS-1123-subdomain prefix and `/`, then a
/// name of at most 63 characters.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.len() {
        1 => parts[0],
        2 => {
            let prefix = parts[0];
            if prefix.is_empty() {
                errs.push(format!("prefix part {}", empty_error()));
            } else {
                for m in is_dns1123_subdomain(prefix) {
                    errs.push(format!("prefix part {m}"));
                }
            }
            parts[1]
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push(format!("name part {}", empty_error()));
    } else if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errs.push(format!("name part {}", max_len_error(QUALIFIED_NAME_MAX_LENGTH)));
    }
    if !matches_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
        ));
    }
    errs
}

/// `IsValidLabelValue`: empty, or at most 63 characters of `[-A-Za-z0-9_.]`
/// starting and ending alphanumeric.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !value.is_empty() && !matches_qualified_name_part(value) {
        errs.push(regex_error(LABEL_VALUE_ERR, LABEL_VALUE_FMT, &["MyValue", "my_value", "12345"]));
    }
    errs
}

/// `IsDNS1123Label`: at most 63 characters of `[-a-z0-9]`, alphanumeric at
/// both ends (`must not contain dots` when it is a valid subdomain).
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1123_label(value) {
        if matches_dns1123_subdomain(value) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(DNS1123_LABEL_ERR, DNS1123_LABEL_FMT, &["my-name", "123-abc"]));
        }
    }
    errs
}

/// `IsDNS1123Subdomain`: at most 253 characters, dot-separated DNS-1123
/// labels.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(regex_error(DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, &["example.com"]));
    }
    errs
}

/// `IsDNS1035Label`: at most 63 characters of `[-a-z0-9]`, starting with a
/// letter and ending alphanumeric (Service names).
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1035_label(value) {
        errs.push(regex_error(DNS1035_LABEL_ERR, DNS1035_LABEL_FMT, &["my-name", "abc-123"]));
    }
    errs
}

/// `path.IsValidPathSegmentName`: not `.` or `..` (that alone is reported),
/// and no `/` or `%`.
pub fn is_valid_path_segment_name(name: &str) -> Vec<String> {
    for bad in [".", ".."] {
        if name == bad {
            return vec![format!("may not be '{bad}'")];
        }
    }
    is_valid_path_segment_prefix(name)
}

/// `path.IsValidPathSegmentPrefix`: no `/` or `%` (for `generateName`).
pub fn is_valid_path_segment_prefix(name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    for bad in ["/", "%"] {
        if name.contains(bad) {
            errs.push(format!("may not contain '{bad}'"));
        }
    }
    errs
}

/// `maskTrailingDash`, applied to a `generateName` prefix before checking it:
/// when the prefix is longer than one character and ends in `-`, upstream
/// replaces the *last two* characters with `a` (its own quirk, kept).
pub fn mask_trailing_dash(name: &str) -> String {
    if name.len() > 1 && name.ends_with('-') {
        let cut = name.len() - 2;
        if name.is_char_boundary(cut) {
            return format!("{}a", &name[..cut]);
        }
        // A multi-byte character before the dash: drop it whole.
        let mut s: String = name[..name.len() - 1].to_string();
        s.pop();
        s.push('a');
        return s;
    }
    name.to_string()
}

/// Which rule object names of a kind follow (upstream's `ValidateNameFunc`
/// per strategy): most kinds [`Dns1123Subdomain`](Self::Dns1123Subdomain);
/// namespaces (and pods' hostname warning) [`Dns1123Label`](Self::Dns1123Label);
/// services [`Dns1035Label`](Self::Dns1035Label); RBAC roles/bindings and
/// other path-only names [`PathSegment`](Self::PathSegment).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NameValidation {
    /// `NameIsDNSSubdomain`.
    Dns1123Subdomain,
    /// `NameIsDNSLabel` (`ValidateNamespaceName`).
    Dns1123Label,
    /// `NameIsDNS1035Label`.
    Dns1035Label,
    /// `path.ValidatePathSegmentName`.
    PathSegment,
}

impl NameValidation {
    /// Checks a name (`prefix == false`) or a `generateName` prefix
    /// (`prefix == true`: a trailing dash is masked, path segments only
    /// check for `/` and `%`).
    pub fn validate(self, name: &str, prefix: bool) -> Vec<String> {
        match self {
            NameValidation::Dns1123Subdomain => {
                is_dns1123_subdomain(&if prefix { mask_trailing_dash(name) } else { name.to_string() })
            }
            NameValidation::Dns1123Label => {
                is_dns1123_label(&if prefix { mask_trailing_dash(name) } else { name.to_string() })
            }
            NameValidation::Dns1035Label => {
                is_dns1035_label(&if prefix { mask_trailing_dash(name) } else { name.to_string() })
            }
            NameValidation::PathSegment => {
                if prefix {
                    is_valid_path_segment_prefix(name)
                } else {
                    is_valid_path_segment_name(name)
                }
            }
        }
    }
}

/// A name rule, as upstream's `ValidateNameFunc(name, prefix) []string`:
/// implemented by [`NameValidation`] and by any
/// `Fn(&str, bool) -> Vec<String>` for kinds with special rules.
pub trait ValidateName {
    /// The problems with `name` (empty = valid); `prefix` is true for a
    /// `generateName` value.
    fn validate_name(&self, name: &str, prefix: bool) -> Vec<String>;
}

impl ValidateName for NameValidation {
    fn validate_name(&self, name: &str, prefix: bool) -> Vec<String> {
        self.validate(name, prefix)
    }
}

impl<F: Fn(&str, bool) -> Vec<String>> ValidateName for F {
    fn validate_name(&self, name: &str, prefix: bool) -> Vec<String> {
        self(name, prefix)
    }
}

/// The alphabet of generated suffixes (upstream `utilrand.String`: no vowels,
/// no confusable characters).
pub const GENERATE_NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
/// Length of the random suffix `generateName` appends.
pub const GENERATE_NAME_RANDOM_LENGTH: usize = 5;
/// Longest base kept from `generateName` (63 − 5 = 58).
pub const MAX_GENERATED_NAME_BASE_LENGTH: usize = 63 - GENERATE_NAME_RANDOM_LENGTH;

/// `SimpleNameGenerator.GenerateName`: `base` cut to 58 bytes, plus five
/// random characters from [`GENERATE_NAME_ALPHABET`]. The randomness comes
/// from std's per-process random hash keys; see [`generate_name_with`] for a
/// deterministic source.
pub fn generate_name(base: &str) -> String {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    let mut seed = h.finish();
    generate_name_with(base, || {
        // xorshift64*: cheap, well-spread bits for index extraction.
        seed ^= seed >> 12;
        seed ^= seed << 25;
        seed ^= seed >> 27;
        seed.wrapping_mul(0x2545_f491_4f6c_dd1d)
    })
}

/// [`generate_name`] with the random bits supplied by `next_u64` (tests and
/// reproducible tools). Each `u64` yields up to twelve 5-bit indexes;
/// indexes beyond the alphabet are skipped, as upstream does.
pub fn generate_name_with(base: &str, mut next_u64: impl FnMut() -> u64) -> String {
    let mut cut = base.len().min(MAX_GENERATED_NAME_BASE_LENGTH);
    while !base.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut out = String::with_capacity(cut + GENERATE_NAME_RANDOM_LENGTH);
    out.push_str(&base[..cut]);
    let mut produced = 0;
    while produced < GENERATE_NAME_RANDOM_LENGTH {
        let mut bits = next_u64();
        for _ in 0..12 {
            let idx = (bits & 0x1f) as usize;
            bits >>= 5;
            if idx < GENERATE_NAME_ALPHABET.len() {
                out.push(GENERATE_NAME_ALPHABET[idx] as char);
                produced += 1;
                if produced == GENERATE_NAME_RANDOM_LENGTH {
                    break;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
    const QNAME_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    #[test]
    fn dns1123_subdomain_good_and_bad() {
        // Upstream validation_test.go TestIsDNS1123Subdomain.
        let good = [
            "a",
            "ab",
            "abc",
            "a1",
            "a-1",
            "a--1--2--b",
            "0",
            "01",
            "012",
            "1a",
            "1-a",
            "1--a--b--2",
            "a.a",
            "ab.a",
            "abc.a",
            "a1.a",
            "a-1.a",
            "a--1--2--b.a",
            "a.1",
            "ab.1",
            "abc.1",
            "a1.1",
            "a-1.1",
            "a--1--2--b.1",
            "0.a",
            "01.a",
            "012.a",
            "1a.a",
            "1-a.a",
            "1--a--b--2",
            "0.1",
            "01.1",
            "012.1",
            "1a.1",
            "1-a.1",
            "1--a--b--2.1",
            "a.b.c.d.e",
            "aa.bb.cc.dd.ee",
            "1.2.3.4.5",
            "11.22.33.44.55",
        ];
        for v in good {
            assert!(is_dns1123_subdomain(v).is_empty(), "{v} should be valid");
        }
        let long = "a".repeat(254);
        let bad = [
            "",
            "A",
            "ABC",
            "aBc",
            "A1",
            "A-1",
            "1-A",
            "-",
            "a-",
            "-a",
            "1-",
            "-1",
            "_",
            "a_",
            "_a",
            "a_b",
            "1_",
            "_1",
            "1_2",
            ".",
            "a.",
            ".a",
            "a..b",
            "1.",
            ".1",
            "1..2",
            " ",
            "a ",
            " a",
            "a b",
            "1 ",
            " 1",
            "1 2",
            "A.a",
            "aB.a",
            "ab.A",
            "A1.a",
            "a1.A",
            "A.1",
            "aB.1",
            "A1.1",
            "1A.1",
            "0.A",
            "01.A",
            "012.A",
            "1A.a",
            "1a.A",
            "A.B.C.D.E",
            "AA.BB.CC.DD.EE",
            "a.B.c.d.e",
            "aa.bB.cc.dd.ee",
            "a@b",
            "a,b",
            "a_b",
            "a;b",
            "a:b",
            "a%b",
            "a?b",
            "a$b",
            &long,
        ];
        for v in bad {
            assert!(!is_dns1123_subdomain(v).is_empty(), "{v:?} should be invalid");
        }
        assert_eq!(is_dns1123_subdomain("Foo"), vec![SUBDOMAIN_MSG.to_string()]);
        assert_eq!(is_dns1123_subdomain(&"a".repeat(253)), Vec::<String>::new());
        assert_eq!(is_dns1123_subdomain(&long), vec![max_len_error(253)]);
        assert_eq!(is_dns1123_subdomain(&format!("-{long}")), vec![max_len_error(253), SUBDOMAIN_MSG.to_string()]);
        let long_valid = format!("{}.{}.{}.{}", "a".repeat(63), "b".repeat(63), "c".repeat(63), "d".repeat(64));
        assert_eq!(is_dns1123_subdomain(&long_valid), vec!["must be no more than 253 characters".to_string()]);
    }

    #[test]
    fn dns1123_label_good_and_bad() {
        let good =
            ["a", "ab", "abc", "a1", "a-1", "a--1--2--b", "0", "01", "012", "1a", "1-a", "1--a--b--2", &"a".repeat(63)];
        for v in good {
            assert!(is_dns1123_label(v).is_empty(), "{v} should be valid");
        }
        let bad = [
            "",
            "A",
            "ABC",
            "aBc",
            "A1",
            "A-1",
            "1-A",
            "-",
            "a-",
            "-a",
            "1-",
            "-1",
            "_",
            "a_",
            "_a",
            "a_b",
            "1_",
            "_1",
            "1_2",
            ".",
            "a.",
            ".a",
            "a.b",
            "1.",
            ".1",
            "1.2",
            " ",
            "a ",
            " a",
            "a b",
            "1 ",
            " 1",
            "1 2",
            &"a".repeat(64),
        ];
        for v in bad {
            assert!(!is_dns1123_label(v).is_empty(), "{v:?} should be invalid");
        }
        assert_eq!(is_dns1123_label("a.b"), vec!["must not contain dots".to_string()]);
        assert_eq!(is_dns1123_label("My-Ns"), vec![LABEL_MSG.to_string()]);
        assert_eq!(is_dns1123_label(&"a".repeat(64)), vec![max_len_error(63)]);
        assert_eq!(is_dns1123_label(""), vec![LABEL_MSG.to_string()]);
    }

    #[test]
    fn dns1035_label_good_and_bad() {
        let good = ["a", "ab", "abc", "a1", "a-1", "a--1--2--b", &"a".repeat(63)];
        for v in good {
            assert!(is_dns1035_label(v).is_empty(), "{v} should be valid");
        }
        let bad = [
            "0",
            "01",
            "012",
            "1a",
            "1-a",
            "1--a--b--2",
            "",
            "A",
            "ABC",
            "aBc",
            "A1",
            "A-1",
            "1-A",
            "-",
            "a-",
            "-a",
            "1-",
            "-1",
            "_",
            "a_",
            "_a",
            "a_b",
            "1_",
            "_1",
            "1_2",
            ".",
            "a.",
            ".a",
            "a.b",
            "1.",
            ".1",
            "1.2",
            " ",
            "a ",
            " a",
            "a b",
            "1 ",
            " 1",
            "1 2",
            &"a".repeat(64),
        ];
        for v in bad {
            assert!(!is_dns1035_label(v).is_empty(), "{v:?} should be invalid");
        }
        assert_eq!(is_dns1035_label("1abc"), vec![DNS1035_MSG.to_string()]);
        assert_eq!(is_dns1035_label(&"a".repeat(64)), vec![max_len_error(63)]);
    }

    #[test]
    fn qualified_names_good_and_bad() {
        // Upstream TestIsQualifiedName.
        let good = [
            "simple",
            "now-with-dashes",
            "1-starts-with-num",
            "1234",
            "simple/simple",
            "now-with-dashes/simple",
            "now-with-dashes/now-with-dashes",
            "now.with.dots/simple",
            "now-with.dashes-and.dots/simple",
            "1-num.2-num/3-num",
            "1234/5678",
            "1.2.3.4/5678",
            "Uppercase_Is_OK_123",
            "example.com/Uppercase_Is_OK_123",
            "requests.storage-foo",
            &"a".repeat(63),
            &format!("{}/{}", "a".repeat(253), "b".repeat(63)),
        ];
        for v in good {
            assert!(is_qualified_name(v).is_empty(), "{v} should be valid: {:?}", is_qualified_name(v));
        }
        let bad = [
            "nospecialchars%^=@",
            "cantendwithadash-",
            "-cantstartwithadash-",
            "only/one/slash",
            "Example.com/abc",
            "example_com/abc",
            "example.com/",
            "/simple",
            &"a".repeat(64),
            &format!("{}/b", "a".repeat(254)),
        ];
        for v in bad {
            assert!(!is_qualified_name(v).is_empty(), "{v:?} should be invalid");
        }
        assert_eq!(is_qualified_name("a b"), vec![QNAME_MSG.to_string()]);
        assert_eq!(is_qualified_name(""), vec!["name part must be non-empty".to_string(), QNAME_MSG.to_string()]);
        assert_eq!(
            is_qualified_name("example.com/"),
            vec!["name part must be non-empty".to_string(), QNAME_MSG.to_string()]
        );
        assert_eq!(is_qualified_name("/simple"), vec!["prefix part must be non-empty".to_string()]);
        assert_eq!(
            is_qualified_name(&"a".repeat(64)),
            vec!["name part must be no more than 63 characters".to_string()]
        );
        assert_eq!(is_qualified_name("Example.com/abc"), vec![format!("prefix part {SUBDOMAIN_MSG}")]);
        assert_eq!(
            is_qualified_name("only/one/slash"),
            vec!["a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".to_string()]
        );
        assert_eq!(is_qualified_name("{'matchLabels':"), vec![QNAME_MSG.to_string()]);
    }

    #[test]
    fn label_values_good_and_bad() {
        // Upstream TestIsValidLabelValue.
        let good = [
            "simple",
            "now-with-dashes",
            "1-starts-with-num",
            "end-with-num-1",
            "1234",
            "A.B.C",
            "_starts.with_underscore",
            "",
        ];
        let good_tail = ["A", "1", "a_b", &"a".repeat(63)];
        for v in good.iter().chain(good_tail.iter()) {
            let v: &str = v;
            if v.starts_with('_') {
                assert!(!is_valid_label_value(v).is_empty());
            } else {
                assert!(is_valid_label_value(v).is_empty(), "{v} should be valid");
            }
        }
        let bad = [
            "nospecialchars%^=@",
            "Tama-nui-te-rā.is_Māori.",
            "spaces are bad",
            "-dash-start",
            "dash-end-",
            ".dot-start",
            &"a".repeat(64),
        ];
        for v in bad {
            assert!(!is_valid_label_value(v).is_empty(), "{v:?} should be invalid");
        }
        assert_eq!(is_valid_label_value("a b"), vec![VALUE_MSG.to_string()]);
        assert_eq!(is_valid_label_value(&"a".repeat(64)), vec![max_len_error(63)]);
        assert_eq!(
            is_valid_label_value(&format!("-{}", "a".repeat(63))),
            vec![max_len_error(63), VALUE_MSG.to_string()]
        );
    }

    #[test]
    fn path_segment_names() {
        assert_eq!(is_valid_path_segment_name("."), vec!["may not be '.'".to_string()]);
        assert_eq!(is_valid_path_segment_name(".."), vec!["may not be '..'".to_string()]);
        assert_eq!(is_valid_path_segment_name("a/b"), vec!["may not contain '/'".to_string()]);
        assert_eq!(
            is_valid_path_segment_name("a%b/c"),
            vec!["may not contain '/'".to_string(), "may not contain '%'".to_string()]
        );
        assert!(is_valid_path_segment_name("system:controller:x").is_empty());
        assert!(is_valid_path_segment_name("...").is_empty());
        assert!(is_valid_path_segment_prefix(".").is_empty());
        assert_eq!(is_valid_path_segment_prefix("a%"), vec!["may not contain '%'".to_string()]);
    }

    #[test]
    fn mask_trailing_dash_drops_two_characters_like_upstream() {
        assert_eq!(mask_trailing_dash("abc-"), "aba");
        assert_eq!(mask_trailing_dash("a-"), "a");
        assert_eq!(mask_trailing_dash("-"), "-");
        assert_eq!(mask_trailing_dash("abc"), "abc");
        assert_eq!(mask_trailing_dash("a.-"), "aa");
    }

    #[test]
    fn name_validations_per_kind() {
        use NameValidation::*;
        let cases: Vec<(NameValidation, &str, bool, bool)> = vec![
            (Dns1123Subdomain, "my.app", false, true),
            (Dns1123Subdomain, "My.app", false, false),
            (Dns1123Subdomain, "web-", true, true),
            (Dns1123Subdomain, "web-", false, false),
            (Dns1123Subdomain, "web.-", true, true), // masked to "weba"
            (Dns1123Label, "kube-system", false, true),
            (Dns1123Label, "a.b", false, false),
            (Dns1123Label, "ns-", true, true),
            (Dns1035Label, "svc-1", false, true),
            (Dns1035Label, "1svc", false, false),
            (Dns1035Label, "svc-", true, true),
            (PathSegment, "system:node:n1", false, true),
            (PathSegment, "..", false, false),
            (PathSegment, "..", true, true),
            (PathSegment, "a/b", true, false),
        ];
        for (nv, name, prefix, ok) in cases {
            assert_eq!(nv.validate(name, prefix).is_empty(), ok, "{nv:?} {name:?} prefix={prefix}");
            assert_eq!(nv.validate_name(name, prefix).is_empty(), ok);
        }
        let custom = |n: &str, _p: bool| if n == "x" { vec!["no x".to_string()] } else { vec![] };
        assert_eq!(custom.validate_name("x", false), vec!["no x".to_string()]);
    }

    #[test]
    fn generated_names_keep_58_bytes_and_add_five_safe_characters() {
        let n = generate_name("web-");
        assert_eq!(n.len(), 9);
        assert!(n.starts_with("web-"));
        assert!(n[4..].bytes().all(|b| GENERATE_NAME_ALPHABET.contains(&b)));
        let long = "a".repeat(100);
        let n = generate_name(&long);
        assert_eq!(n.len(), 63);
        assert!(n.starts_with(&"a".repeat(58)));
        assert!(is_dns1123_label(&n).is_empty());
        // Deterministic source: index 0 → 'b', 1 → 'c'; 31 (out of range) is skipped.
        let n = generate_name_with("x-", || 0);
        assert_eq!(n, "x-bbbbb");
        let n = generate_name_with("x-", || 31 | (1 << 5));
        assert_eq!(n, "x-cbbbb");
        assert_ne!(generate_name("a-"), generate_name("a-"));
    }
}
