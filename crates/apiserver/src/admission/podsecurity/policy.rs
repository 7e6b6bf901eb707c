//! Pod Security Standards levels and versions, the namespace labels that
//! select them, and the evaluation of a pod against one level and version
//! (k8s.io/pod-security-admission `api` and `policy` packages).

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use super::{baseline, restricted};

/// The newest policy version this server knows (Kubernetes 1.33); `latest`
/// and newer versions evaluate as this one.
pub const MAX_MINOR: u32 = 33;

/// The label prefix of the namespace policy labels.
const LABEL_PREFIX: &str = "pod-security.kubernetes.io/";

/// A Pod Security Standards level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Unrestricted.
    Privileged,
    /// Prevents known privilege escalations.
    Baseline,
    /// Hardened best practice.
    Restricted,
}

impl Level {
    /// `privileged`, `baseline` or `restricted`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }

    /// Upstream's `ParseLevel`: an unknown value is an error and evaluates
    /// as `restricted` (fail closed).
    pub fn parse(s: &str) -> Result<Level, Level> {
        match s {
            "privileged" => Ok(Level::Privileged),
            "baseline" => Ok(Level::Baseline),
            "restricted" => Ok(Level::Restricted),
            _ => Err(Level::Restricted),
        }
    }
}

/// A policy version: `latest` or `v1.<minor>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// The newest checks.
    Latest,
    /// The checks as of Kubernetes 1.`minor`.
    Minor(u32),
}

impl Version {
    /// Upstream's `ParseVersion` (`latest` or `v1.N` without leading
    /// zeros): an invalid value is an error and evaluates as `latest`.
    pub fn parse(s: &str) -> Result<Version, Version> {
        if s == "latest" {
            return Ok(Version::Latest);
        }
        let minor = s.strip_prefix("v1.").filter(|m| !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit()));
        match minor {
            Some(m) if m == "0" || !m.starts_with('0') => m.parse().map(Version::Minor).map_err(|_| Version::Latest),
            _ => Err(Version::Latest),
        }
    }

    /// The minor version whose checks apply (newer than known: the newest).
    pub fn effective_minor(self) -> u32 {
        match self {
            Version::Latest => MAX_MINOR,
            Version::Minor(m) => m.min(MAX_MINOR),
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Version::Latest => f.write_str("latest"),
            Version::Minor(m) => write!(f, "v1.{m}"),
        }
    }
}

/// A level at a version, printed `restricted:latest` as in upstream's
/// messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelVersion {
    /// The level.
    pub level: Level,
    /// The version.
    pub version: Version,
}

impl fmt::Display for LevelVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.level.as_str(), self.version)
    }
}

/// A namespace's policy for each mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Violations refuse the pod.
    pub enforce: LevelVersion,
    /// Violations are recorded in the audit annotations.
    pub audit: LevelVersion,
    /// Violations are returned as warnings.
    pub warn: LevelVersion,
}

impl Policy {
    /// The default when a namespace sets no label: `privileged:latest` for
    /// every mode (upstream's default PodSecurityConfiguration).
    pub fn default_policy() -> Policy {
        let lv = LevelVersion { level: Level::Privileged, version: Version::Latest };
        Policy { enforce: lv, audit: lv, warn: lv }
    }

    /// Whether nothing is checked in any mode.
    pub fn fully_privileged(&self) -> bool {
        [self.enforce, self.audit, self.warn].iter().all(|lv| lv.level == Level::Privileged)
    }

    /// Upstream's `PolicyToEvaluate`: the policy the namespace labels
    /// select over the defaults, and one message per invalid label
    /// (`metadata.labels[pod-security.kubernetes.io/enforce]: Invalid
    /// value: …`). An invalid enforce level evaluates as `restricted`
    /// (fail closed), an invalid audit or warn level as `privileged` (fail
    /// open), an invalid version as `latest`.
    pub fn from_labels(labels: &BTreeMap<String, String>) -> (Policy, Vec<String>) {
        let mut p = Policy::default_policy();
        let mut errors = Vec::new();
        let invalid =
            |label: &str, value: &str, why: &str| format!("metadata.labels[{label}]: Invalid value: {value:?}: {why}");
        for (mode, lv) in [("enforce", &mut p.enforce), ("audit", &mut p.audit), ("warn", &mut p.warn)] {
            let label = format!("{LABEL_PREFIX}{mode}");
            if let Some(value) = labels.get(&label) {
                lv.level = Level::parse(value).unwrap_or_else(|closed| {
                    errors.push(invalid(&label, value, "must be one of privileged, baseline, restricted"));
                    if mode == "enforce" {
                        closed
                    } else {
                        Level::Privileged
                    }
                });
            }
            let label = format!("{LABEL_PREFIX}{mode}-version");
            if let Some(value) = labels.get(&label) {
                lv.version = Version::parse(value).unwrap_or_else(|fallback| {
                    errors.push(invalid(&label, value, r#"must be "latest" or "v1.x""#));
                    fallback
                });
            }
        }
        (p, errors)
    }
}

/// One violation: the reason and its detail (upstream's `CheckResult` of a
/// check that does not allow the pod).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Short reason, e.g. `privileged`.
    pub reason: String,
    /// Detail, e.g. `container "c" must not set securityContext.privileged=true`.
    pub detail: String,
}

impl Violation {
    /// A violation with `reason` and `detail`.
    pub fn new(reason: impl Into<String>, detail: impl Into<String>) -> Violation {
        Violation { reason: reason.into(), detail: detail.into() }
    }
}

/// A check over a pod's metadata and spec: `None` when allowed.
pub type CheckFn = fn(&Value, &Value) -> Option<Violation>;

/// One check with its versions (upstream's `policy.Check`).
pub struct Check {
    /// The check ID (`privileged`, `runAsNonRoot`, …); checks run in ID
    /// order, baseline before restricted, as upstream's registry orders them.
    pub id: &'static str,
    /// Baseline or Restricted.
    pub level: Level,
    /// `(minimum minor version, check)`, increasing.
    pub versions: &'static [(u32, CheckFn)],
    /// Baseline checks this restricted check replaces at its versions.
    pub overrides: &'static [&'static str],
}

impl Check {
    fn at(&self, minor: u32) -> Option<CheckFn> {
        self.versions.iter().rev().find(|(min, _)| *min <= minor).map(|(_, f)| *f)
    }
}

/// Every check, baseline then restricted, each level sorted by ID.
fn registry() -> &'static [Check] {
    static CHECKS: std::sync::OnceLock<Vec<Check>> = std::sync::OnceLock::new();
    CHECKS.get_or_init(|| {
        let mut base: Vec<Check> = baseline::checks();
        let mut restr: Vec<Check> = restricted::checks();
        base.sort_by_key(|c| c.id);
        restr.sort_by_key(|c| c.id);
        base.into_iter().chain(restr).collect()
    })
}

/// The violations of a pod (`metadata`, `spec`) against `lv`, in upstream's
/// order; empty when allowed.
pub fn evaluate(lv: LevelVersion, metadata: &Value, spec: &Value) -> Vec<Violation> {
    if lv.level == Level::Privileged {
        return Vec::new();
    }
    let minor = lv.version.effective_minor();
    let checks = registry();
    let overridden: Vec<&str> = if lv.level == Level::Restricted {
        checks
            .iter()
            .filter(|c| c.level == Level::Restricted && c.at(minor).is_some())
            .flat_map(|c| c.overrides.iter().copied())
            .collect()
    } else {
        Vec::new()
    };
    checks
        .iter()
        .filter(|c| c.level <= lv.level && !overridden.contains(&c.id))
        .filter_map(|c| c.at(minor))
        .filter_map(|f| f(metadata, spec))
        .collect()
}

/// Upstream's `ForbiddenDetail`: `reason (detail), reason (detail)`.
pub fn describe(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(|v| if v.detail.is_empty() { v.reason.clone() } else { format!("{} ({})", v.reason, v.detail) })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Each name quoted, joined by `, ` (upstream's `joinQuote`).
pub fn join_quote<S: AsRef<str>>(items: &[S]) -> String {
    items.iter().map(|s| format!("{:?}", s.as_ref())).collect::<Vec<_>>().join(", ")
}

/// `singular` for one, `plural` otherwise.
pub fn pluralize<'a>(singular: &'a str, plural: &'a str, n: usize) -> &'a str {
    if n == 1 {
        singular
    } else {
        plural
    }
}

/// Init containers, containers and ephemeral containers, in that order
/// (upstream's `visitContainers`).
pub fn containers(spec: &Value) -> impl Iterator<Item = &Value> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .flat_map(move |k| spec.get(k).and_then(Value::as_array).into_iter().flatten())
}

/// A container's name.
pub fn name(c: &Value) -> &str {
    c.get("name").and_then(Value::as_str).unwrap_or("")
}

/// `obj.securityContext.<field>` of a pod spec or container.
pub fn sc<'a>(obj: &'a Value, field: &str) -> Option<&'a Value> {
    obj.get("securityContext")?.get(field).filter(|v| !v.is_null())
}

/// Sorted, deduplicated.
pub fn sorted_set(mut items: Vec<String>) -> Vec<String> {
    items.sort();
    items.dedup();
    items
}

/// Whether `spec.os.name` is `windows`.
pub fn is_windows(spec: &Value) -> bool {
    spec.pointer("/os/name").and_then(Value::as_str) == Some("windows")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn labels_select_levels_and_versions() {
        let (p, errs) = Policy::from_labels(&labels(&[
            ("pod-security.kubernetes.io/enforce", "baseline"),
            ("pod-security.kubernetes.io/enforce-version", "v1.24"),
            ("pod-security.kubernetes.io/warn", "restricted"),
        ]));
        assert!(errs.is_empty());
        assert_eq!(p.enforce.to_string(), "baseline:v1.24");
        assert_eq!(p.warn.to_string(), "restricted:latest");
        assert_eq!(p.audit.to_string(), "privileged:latest");
    }

    #[test]
    fn invalid_labels_fail_closed() {
        let (p, errs) = Policy::from_labels(&labels(&[
            ("pod-security.kubernetes.io/enforce", "strict"),
            ("pod-security.kubernetes.io/enforce-version", "v1.024"),
        ]));
        assert_eq!(p.enforce.to_string(), "restricted:latest");
        assert_eq!(
            errs,
            [
                r#"metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted"#,
                r#"metadata.labels[pod-security.kubernetes.io/enforce-version]: Invalid value: "v1.024": must be "latest" or "v1.x""#,
            ]
        );
        let (p, _) = Policy::from_labels(&labels(&[("pod-security.kubernetes.io/warn", "strict")]));
        assert_eq!(p.warn.to_string(), "privileged:latest", "warn fails open");
        assert_eq!(Version::parse("v1.0"), Ok(Version::Minor(0)));
        assert!(Version::parse("1.25").is_err());
        assert!(Version::parse("v2.1").is_err());
    }

    #[test]
    fn helpers_format_as_upstream() {
        assert_eq!(join_quote(&["a", "b"]), r#""a", "b""#);
        assert_eq!(pluralize("container", "containers", 2), "containers");
        let v = [Violation::new("a", "x"), Violation::new("b", "")];
        assert_eq!(describe(&v), "a (x), b");
    }
}
