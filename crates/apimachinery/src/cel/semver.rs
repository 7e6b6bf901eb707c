//! Kubernetes' CEL semver library (upstream `library/semverlib.go`,
//! version 1 as the 1.33 environment has it): `semver(string[, normalize])`,
//! `isSemver(string[, normalize])` and the members `major`, `minor`,
//! `patch`, `isGreaterThan`, `isLessThan`, `compareTo`.
//!
//! Parsing and ordering follow `github.com/blang/semver/v4` (with its
//! error messages); normalizing drops a `v` prefix and leading zeros and
//! fills a missing minor or patch with `0`.

use std::cmp::Ordering;

use cel::common::types::{BOOL_TYPE, STRING_TYPE};
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError, Value};

use super::values::{err, opaque, opaque_arg, opaque_type, overload, str_arg};

/// The semver type's name (upstream `apiservercel.SemverType`).
pub const TYPE_NAME: &str = "kubernetes.Semver";

/// One pre-release identifier.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Pre {
    Number(u64),
    Text(String),
}

/// A semantic version (build metadata is kept out of comparisons, as
/// blang's `Compare` does, but not out of equality).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Semver {
    major: u64,
    minor: u64,
    patch: u64,
    pre: Vec<Pre>,
    build: Vec<String>,
}

impl Opaque for Semver {
    fn runtime_type_name(&self) -> &str {
        TYPE_NAME
    }
}

fn alnum_dash(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

fn number(s: &str, what: &str, capitalized: &str) -> Result<u64, String> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("Invalid character(s) found in {what} number {s:?}"));
    }
    if s.len() > 1 && s.starts_with('0') {
        return Err(format!("{capitalized} number must not contain leading zeroes {s:?}"));
    }
    s.parse().map_err(|e| format!("{e}"))
}

/// blang's `semver.Parse`.
pub fn parse(s: &str) -> Result<Semver, String> {
    if s.is_empty() {
        return Err("Version string empty".into());
    }
    let parts: Vec<&str> = s.splitn(3, '.').collect();
    if parts.len() != 3 {
        return Err("No Major.Minor.Patch elements found".into());
    }
    let major = number(parts[0], "major", "Major")?;
    let minor = number(parts[1], "minor", "Minor")?;
    let mut patch = parts[2];
    let mut build = Vec::new();
    if let Some((p, b)) = patch.split_once('+') {
        for id in b.split('.') {
            if id.is_empty() {
                return Err("Build meta data is empty".into());
            }
            if !alnum_dash(id) {
                return Err(format!("Invalid character(s) found in build meta data {id:?}"));
            }
            build.push(id.to_string());
        }
        patch = p;
    }
    let mut pre = Vec::new();
    if let Some((p, r)) = patch.split_once('-') {
        for id in r.split('.') {
            if id.is_empty() {
                return Err("Prerelease is empty".into());
            }
            if id.bytes().all(|b| b.is_ascii_digit()) {
                if id.len() > 1 && id.starts_with('0') {
                    return Err(format!("Numeric PreRelease version must not contain leading zeroes {id:?}"));
                }
                pre.push(Pre::Number(id.parse().map_err(|e| format!("{e}"))?));
            } else if alnum_dash(id) {
                pre.push(Pre::Text(id.to_string()));
            } else {
                return Err(format!("Invalid character(s) found in prerelease {id:?}"));
            }
        }
        patch = p;
    }
    let patch = number(patch, "patch", "Patch")?;
    Ok(Semver { major, minor, patch, pre, build })
}

/// Upstream's `normalizeAndParse`.
pub fn normalize_and_parse(s: &str) -> Result<Semver, String> {
    let s = s.strip_prefix('v').unwrap_or(s);
    let mut parts: Vec<String> = s
        .splitn(3, '.')
        .map(|p| {
            if p.len() > 1 {
                let t = p.trim_start_matches('0');
                if t.is_empty() || !t.starts_with(|c: char| c.is_ascii_digit()) {
                    return format!("0{t}");
                }
                return t.to_string();
            }
            p.to_string()
        })
        .collect();
    if parts.len() < 3 {
        if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
            return Err("short version cannot contain PreRelease/Build meta data".into());
        }
        parts.resize(3, "0".into());
    }
    parse(&parts.join("."))
}

impl Semver {
    /// blang's `Compare`.
    fn compare(&self, other: &Semver) -> Ordering {
        let core = (self.major, self.minor, self.patch).cmp(&(other.major, other.minor, other.patch));
        if core != Ordering::Equal {
            return core;
        }
        match (self.pre.is_empty(), other.pre.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Greater,
            (false, true) => return Ordering::Less,
            _ => {}
        }
        for (a, b) in self.pre.iter().zip(&other.pre) {
            let o = match (a, b) {
                (Pre::Number(x), Pre::Number(y)) => x.cmp(y),
                (Pre::Number(_), Pre::Text(_)) => Ordering::Less,
                (Pre::Text(_), Pre::Number(_)) => Ordering::Greater,
                (Pre::Text(x), Pre::Text(y)) => x.cmp(y),
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        self.pre.len().cmp(&other.pre.len())
    }
}

fn parse_args(a: &[Value]) -> Result<Result<Semver, String>, ExecutionError> {
    let s = str_arg(a, 0)?;
    Ok(match a.get(1) {
        Some(Value::Bool(true)) => normalize_and_parse(s),
        _ => parse(s),
    })
}

fn v(a: &[Value], i: usize) -> Result<&Semver, ExecutionError> {
    opaque_arg::<Semver>(a, i)
}

overload!(to_semver, |a| parse_args(a)?.map(opaque).map_err(err));
overload!(is_semver, |a| Ok(Value::Bool(parse_args(a)?.is_ok())));
overload!(major, |a| Ok(Value::Int(v(a, 0)?.major as i64)));
overload!(minor, |a| Ok(Value::Int(v(a, 0)?.minor as i64)));
overload!(patch, |a| Ok(Value::Int(v(a, 0)?.patch as i64)));
overload!(is_greater_than, |a| Ok(Value::Bool(v(a, 0)?.compare(v(a, 1)?) == Ordering::Greater)));
overload!(is_less_than, |a| Ok(Value::Bool(v(a, 0)?.compare(v(a, 1)?) == Ordering::Less)));
overload!(compare_to, |a| Ok(Value::Int(v(a, 0)?.compare(v(a, 1)?) as i64)));

/// Registers the library on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let t = || opaque_type(TYPE_NAME);
    env.add_overload("semver", "string_to_semver", vec![STRING_TYPE], to_semver)?;
    env.add_overload("semver", "string_bool_to_semver", vec![STRING_TYPE, BOOL_TYPE], to_semver)?;
    env.add_overload("isSemver", "is_semver_string", vec![STRING_TYPE], is_semver)?;
    env.add_overload("isSemver", "is_semver_string_bool", vec![STRING_TYPE, BOOL_TYPE], is_semver)?;
    env.add_member_overload("major", "semver_major", t(), vec![], major)?;
    env.add_member_overload("minor", "semver_minor", t(), vec![], minor)?;
    env.add_member_overload("patch", "semver_patch", t(), vec![], patch)?;
    env.add_member_overload("isGreaterThan", "semver_is_greater_than", t(), vec![t()], is_greater_than)?;
    env.add_member_overload("isLessThan", "semver_is_less_than", t(), vec![t()], is_less_than)?;
    env.add_member_overload("compareTo", "semver_compare_to", t(), vec![t()], compare_to)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::eval_str;
    use serde_json::json;

    #[test]
    fn semver_follows_upstream_examples() {
        // Examples from upstream's library/semverlib.go documentation.
        let cases = [
            ("isSemver('1.0.0')", json!(true)),
            ("isSemver('0.1.0-alpha.1')", json!(true)),
            ("isSemver('hello')", json!(false)),
            ("isSemver('v1.0')", json!(false)),
            ("isSemver('200K')", json!(false)),
            ("isSemver('v1.0', true)", json!(true)),
            ("isSemver('1.0', true)", json!(true)),
            ("isSemver('01.01.01', true)", json!(true)),
            ("semver('v1.0.0', true) == semver('1.0.0')", json!(true)),
            ("semver('1.0', true) == semver('1.0.0')", json!(true)),
            ("semver('01.01.01', true) == semver('1.1.1')", json!(true)),
            ("semver('1.2.3').major()", json!(1)),
            ("semver('1.2.3').minor()", json!(2)),
            ("semver('1.2.3').patch()", json!(3)),
            ("semver('1.2.3').compareTo(semver('1.2.3'))", json!(0)),
            ("semver('1.2.3').compareTo(semver('2.0.0'))", json!(-1)),
            ("semver('1.2.3').compareTo(semver('0.1.2'))", json!(1)),
            ("semver('1.0.0-alpha').isLessThan(semver('1.0.0'))", json!(true)),
            ("semver('1.0.0-alpha.1').isLessThan(semver('1.0.0-alpha.beta'))", json!(true)),
            ("semver('1.0.0-rc.1').isGreaterThan(semver('1.0.0-beta.11'))", json!(true)),
            // Quantities keep their own comparisons.
            ("quantity('1').isLessThan(quantity('2'))", json!(true)),
        ];
        for (src, want) in cases {
            assert_eq!(eval_str(src), Ok(want), "{src}");
        }
        assert_eq!(eval_str("semver('Three')"), Err("No Major.Minor.Patch elements found".into()));
        assert_eq!(eval_str("semver('01.1.1')"), Err("Major number must not contain leading zeroes \"01\"".into()));
    }
}
