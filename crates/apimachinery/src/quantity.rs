//! The canonical text of resource quantities (`resource.Quantity`), as
//! upstream writes every quantity it has decoded: `0.5` reads back as
//! `500m`, `1000m` as `1`, `1024Mi` as `1Gi`, `1.5Gi` as `1536Mi`.
//!
//! Upstream keeps the format the client used — binary suffixes (`Ki` …
//! `Ei`), decimal suffixes (`n` … `E`, or none), or a decimal exponent
//! (`1e3`) — and writes the value with the largest unit that leaves an
//! integer (decimal exponents in steps of 3). A binary quantity below 1024
//! or with a fraction is written in decimal units instead. Precision
//! finer than nano units is rounded up (away from zero), as
//! `ParseQuantity` does.

use serde_json::Value;

/// The quantity `text` canonicalized, or `None` when it is not a quantity
/// (upstream would refuse it; validation reports that).
pub fn canonical(text: &str) -> Option<String> {
    format(parse(text)?)
}

/// `text` in milli-units, rounded up (away from zero) as
/// `resource.Quantity.MilliValue()` does: `"500m"` → 500, `"1"` → 1000,
/// `"1Ki"` → 1,024,000. `None` when it is not a quantity or does not fit.
pub fn milli_value(text: &str) -> Option<i128> {
    scaled(parse(text)?, 3)
}

/// `text` in whole units, rounded up (away from zero) as
/// `resource.Quantity.Value()` does: `"1Gi"` → 1,073,741,824, `"100m"` → 1.
/// `None` when it is not a quantity or does not fit.
pub fn value(text: &str) -> Option<i128> {
    scaled(parse(text)?, 0)
}

/// `text` exactly, as `(negative, mantissa, exponent)`: the value is
/// `±mantissa × 10^exponent`, rounded up (away from zero) to nano units as
/// `ParseQuantity` does, so `exponent ≥ -9`. `None` when it is not a
/// quantity. CEL's quantity library computes with it.
pub fn decimal(text: &str) -> Option<(bool, u128, i32)> {
    parse(text).map(|q| (q.negative, q.mantissa, q.exponent))
}

/// `q × 10^shift` as an integer, rounded away from zero.
fn scaled(q: Quantity, shift: i32) -> Option<i128> {
    let e = q.exponent + shift;
    let magnitude = if e >= 0 {
        q.mantissa.checked_mul(10u128.checked_pow(e as u32)?)?
    } else {
        q.mantissa.div_ceil(10u128.checked_pow((-e) as u32)?)
    };
    let magnitude = i128::try_from(magnitude).ok()?;
    Some(if q.negative { -magnitude } else { magnitude })
}

/// Upstream's message for a string that is not a quantity.
pub const SYNTAX_ERROR: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/// The pod spec's quantity fields, relative to a pod spec.
const POD_SPEC: [&str; 8] = [
    "containers.*.resources.limits.*",
    "containers.*.resources.requests.*",
    "initContainers.*.resources.limits.*",
    "initContainers.*.resources.requests.*",
    "ephemeralContainers.*.resources.limits.*",
    "ephemeralContainers.*.resources.requests.*",
    "overhead.*",
    "volumes.*.emptyDir.sizeLimit",
];
/// A claim spec's quantity fields, relative to the spec.
const CLAIM_SPEC: [&str; 2] = ["resources.requests.*", "resources.limits.*"];

/// Where the quantities of a built-in kind are (`*`: every key or item),
/// with the prefix the pod spec or claim spec tables apply under.
fn fields(api_version: &str, kind: &str) -> Vec<String> {
    let under =
        |prefix: &str, table: &[&str]| -> Vec<String> { table.iter().map(|f| format!("{prefix}{f}")).collect() };
    match (api_version, kind) {
        ("v1", "Pod") => under("spec.", &POD_SPEC),
        ("v1", "PodTemplate") => under("template.spec.", &POD_SPEC),
        ("apps/v1", "StatefulSet") => {
            let mut f = under("spec.template.spec.", &POD_SPEC);
            f.extend(under("spec.volumeClaimTemplates.*.spec.", &CLAIM_SPEC));
            f
        }
        ("apps/v1", "Deployment" | "ReplicaSet" | "DaemonSet")
        | ("v1", "ReplicationController")
        | ("batch/v1", "Job") => under("spec.template.spec.", &POD_SPEC),
        ("batch/v1", "CronJob") => under("spec.jobTemplate.spec.template.spec.", &POD_SPEC),
        ("v1", "PersistentVolumeClaim") => {
            let mut f = under("spec.", &CLAIM_SPEC);
            f.extend(["status.capacity.*".to_string(), "status.allocatedResources.*".to_string()]);
            f
        }
        ("v1", "PersistentVolume") => vec!["spec.capacity.*".into()],
        ("v1", "LimitRange") => ["max", "min", "default", "defaultRequest", "maxLimitRequestRatio"]
            .iter()
            .map(|k| format!("spec.limits.*.{k}.*"))
            .collect(),
        ("v1", "ResourceQuota") => vec!["spec.hard.*".into(), "status.hard.*".into(), "status.used.*".into()],
        ("v1", "Node") => vec!["status.capacity.*".into(), "status.allocatable.*".into()],
        ("node.k8s.io/v1", "RuntimeClass") => vec!["overhead.podFixed.*".into()],
        ("storage.k8s.io/v1", "CSIStorageCapacity") => vec!["capacity".into(), "maximumVolumeSize".into()],
        // MetricTarget and MetricValueStatus: `value` and `averageValue`.
        ("autoscaling/v2", "HorizontalPodAutoscaler") => {
            let sources = ["resource", "pods", "object", "external", "containerResource"];
            let mut f = Vec::new();
            for source in sources {
                for value in ["value", "averageValue"] {
                    f.push(format!("spec.metrics.*.{source}.target.{value}"));
                    f.push(format!("status.currentMetrics.*.{source}.current.{value}"));
                }
            }
            f
        }
        _ => Vec::new(),
    }
}

/// The kinds [`fields`] knows, so their paths are split once.
const KINDS_WITH_QUANTITIES: [(&str, &str); 16] = [
    ("v1", "Pod"),
    ("v1", "PodTemplate"),
    ("v1", "ReplicationController"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "DaemonSet"),
    ("apps/v1", "StatefulSet"),
    ("batch/v1", "Job"),
    ("batch/v1", "CronJob"),
    ("v1", "PersistentVolumeClaim"),
    ("v1", "PersistentVolume"),
    ("v1", "LimitRange"),
    ("v1", "ResourceQuota"),
    ("v1", "Node"),
    ("node.k8s.io/v1", "RuntimeClass"),
    ("autoscaling/v2", "HorizontalPodAutoscaler"),
];

/// [`fields`] split into path segments, built once: decoding runs on every
/// write.
fn field_paths(api_version: &str, kind: &str) -> &'static [Vec<String>] {
    type Table = Vec<((&'static str, &'static str), Vec<Vec<String>>)>;
    static TABLE: std::sync::OnceLock<Table> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        KINDS_WITH_QUANTITIES
            .iter()
            .chain(&[("storage.k8s.io/v1", "CSIStorageCapacity")])
            .map(|&(v, k)| ((v, k), fields(v, k).iter().map(|f| f.split('.').map(str::to_string).collect()).collect()))
            .collect()
    });
    table.iter().find(|((v, k), _)| *v == api_version && *k == kind).map(|(_, paths)| paths.as_slice()).unwrap_or(&[])
}

/// Canonicalizes every quantity of a built-in object (see [`fields`]), as
/// upstream's decoding and encoding does. Errors with [`SYNTAX_ERROR`] on a
/// string that is not a quantity (upstream refuses the body with 400).
pub fn canonicalize_object(api_version: &str, kind: &str, obj: &mut Value) -> Result<(), String> {
    for segments in field_paths(api_version, kind) {
        let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
        visit(obj, &segments, &mut |v: &mut Value| match v {
            Value::String(text) => match canonical(text) {
                Some(c) => {
                    *text = c;
                    Ok(())
                }
                None => Err(SYNTAX_ERROR.to_string()),
            },
            // A JSON number is a quantity too (Go reads `cpu: 1`); upstream
            // writes it back as a string.
            Value::Number(n) => {
                let c = canonical(&n.to_string()).ok_or_else(|| SYNTAX_ERROR.to_string())?;
                *v = Value::String(c);
                Ok(())
            }
            _ => Ok(()),
        })?;
    }
    Ok(())
}

/// Applies `f` to every value at `path` under `v` (`*` walks every key of an
/// object or item of an array).
fn visit(v: &mut Value, path: &[&str], f: &mut dyn FnMut(&mut Value) -> Result<(), String>) -> Result<(), String> {
    let Some((first, rest)) = path.split_first() else { return f(v) };
    match (*first, v) {
        ("*", Value::Object(m)) => m.values_mut().try_for_each(|c| visit(c, rest, f)),
        ("*", Value::Array(items)) => items.iter_mut().try_for_each(|c| visit(c, rest, f)),
        (key, Value::Object(m)) => match m.get_mut(key) {
            Some(c) => visit(c, rest, f),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    BinarySi,
    DecimalSi,
    DecimalExponent,
}

/// A parsed quantity: `negative`, `mantissa × 10^exponent`, in `format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Quantity {
    negative: bool,
    mantissa: u128,
    exponent: i32,
    format: Format,
}

const BINARY: [(&str, u32); 6] = [("Ki", 1), ("Mi", 2), ("Gi", 3), ("Ti", 4), ("Pi", 5), ("Ei", 6)];
const DECIMAL: [(&str, i32); 10] =
    [("n", -9), ("u", -6), ("m", -3), ("", 0), ("k", 3), ("M", 6), ("G", 9), ("T", 12), ("P", 15), ("E", 18)];

fn parse(text: &str) -> Option<Quantity> {
    let (negative, rest) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let digits_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(digits_end);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
        return None;
    }
    let digits = format!("{whole}{fraction}");
    let digits = digits.trim_start_matches('0');
    // More digits than fit are not quantities anyone writes; leave them.
    if digits.len() > 30 {
        return None;
    }
    let mut mantissa: u128 = if digits.is_empty() { 0 } else { digits.parse().ok()? };
    let mut exponent = -(fraction.len() as i32);
    let format = if let Some((_, power)) = BINARY.iter().find(|(s, _)| *s == suffix) {
        mantissa = mantissa.checked_mul(1024u128.checked_pow(*power)?)?;
        Format::BinarySi
    } else if let Some((_, e)) = DECIMAL.iter().find(|(s, _)| *s == suffix) {
        exponent += e;
        Format::DecimalSi
    } else if let Some(e) = suffix.strip_prefix(['e', 'E']) {
        if e.is_empty() || !e.trim_start_matches(['+', '-']).bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        exponent += e.parse::<i32>().ok()?;
        Format::DecimalExponent
    } else {
        return None;
    };
    // Round up (away from zero) to nano precision.
    if exponent < -9 {
        let drop = (-9 - exponent) as u32;
        let divisor = 10u128.checked_pow(drop)?;
        mantissa = mantissa.div_ceil(divisor);
        exponent = -9;
    }
    while mantissa != 0 && mantissa % 10 == 0 {
        mantissa /= 10;
        exponent += 1;
    }
    Some(Quantity { negative: negative && mantissa != 0, mantissa, exponent, format })
}

/// `None` when the value does not fit the arithmetic (absurd exponents).
fn format(q: Quantity) -> Option<String> {
    if q.mantissa == 0 {
        return Some("0".into());
    }
    let sign = if q.negative { "-" } else { "" };
    if q.format == Format::BinarySi && q.exponent >= 0 {
        if let Some(value) = 10u128.checked_pow(q.exponent as u32).and_then(|p| q.mantissa.checked_mul(p)) {
            if value >= 1024 {
                let mut unit = "";
                let mut v = value;
                for (suffix, _) in BINARY {
                    if v % 1024 != 0 {
                        break;
                    }
                    v /= 1024;
                    unit = suffix;
                }
                return Some(format!("{sign}{v}{unit}"));
            }
        }
    }
    // Decimal units: the exponent rounded down to a multiple of 3 (at most
    // 18, at least -9), the rest moved into the mantissa.
    let exp3 = q.exponent.div_euclid(3) * 3;
    let exp3 = exp3.clamp(-9, 18);
    let mantissa = q.mantissa.checked_mul(10u128.checked_pow((q.exponent - exp3) as u32)?)?;
    Some(match q.format {
        Format::DecimalExponent if exp3 != 0 => format!("{sign}{mantissa}e{exp3}"),
        Format::DecimalExponent => format!("{sign}{mantissa}"),
        _ => {
            let unit = DECIMAL.iter().find(|(_, e)| *e == exp3).map(|(s, _)| *s).unwrap_or("");
            format!("{sign}{mantissa}{unit}")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milli_and_whole_values_round_up_as_upstream() {
        assert_eq!(milli_value("500m"), Some(500));
        assert_eq!(milli_value("1"), Some(1000));
        assert_eq!(milli_value("0.5"), Some(500));
        assert_eq!(milli_value("1Ki"), Some(1_024_000));
        assert_eq!(milli_value("1n"), Some(1));
        assert_eq!(milli_value("-1n"), Some(-1));
        assert_eq!(value("1Gi"), Some(1 << 30));
        assert_eq!(value("100m"), Some(1));
        assert_eq!(value("2e3"), Some(2000));
        assert_eq!(value("1.5k"), Some(1500));
        assert_eq!(value("x"), None);
    }

    #[test]
    fn canonical_forms_as_upstream_writes_them() {
        for (input, want) in [
            ("0.5", "500m"),
            ("1000m", "1"),
            ("1500m", "1500m"),
            ("1.5", "1500m"),
            ("2000", "2k"),
            ("1500", "1500"),
            ("100m", "100m"),
            ("0", "0"),
            ("0.0", "0"),
            ("1024Mi", "1Gi"),
            ("1.5Gi", "1536Mi"),
            ("1Gi", "1Gi"),
            ("512Ki", "512Ki"),
            ("1000Ki", "1000Ki"),
            ("0.5Ki", "512"),
            ("100", "100"),
            ("1e3", "1e3"),
            ("12e2", "1200"),
            ("1.5e3", "1500"),
            ("-1Gi", "-1Gi"),
            ("-0.5", "-500m"),
            ("+1", "1"),
            ("1n", "1n"),
            ("0.0000000001", "1n"),
            ("1M", "1M"),
            ("1000k", "1M"),
            ("250M", "250M"),
        ] {
            assert_eq!(canonical(input).as_deref(), Some(want), "{input}");
        }
    }

    #[test]
    fn objects_are_canonicalized_where_their_kind_holds_quantities() {
        let mut pod = serde_json::json!({"spec": {
            "containers": [{"name": "c", "resources": {"limits": {"cpu": "0.5", "memory": "1024Mi"}, "requests": {"cpu": 1}}}],
            "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "1.5Gi"}}]}});
        canonicalize_object("v1", "Pod", &mut pod).unwrap();
        assert_eq!(
            pod["spec"]["containers"][0]["resources"]["limits"],
            serde_json::json!({"cpu": "500m", "memory": "1Gi"})
        );
        assert_eq!(pod["spec"]["containers"][0]["resources"]["requests"]["cpu"], "1");
        assert_eq!(pod["spec"]["volumes"][0]["emptyDir"]["sizeLimit"], "1536Mi");
        let mut bad = serde_json::json!({"spec": {"template": {"spec": {"containers": [{"resources": {"limits": {"cpu": "abc"}}}]}}}});
        assert_eq!(canonicalize_object("apps/v1", "Deployment", &mut bad), Err(SYNTAX_ERROR.to_string()));
        // HorizontalPodAutoscaler metric targets (autoscaling/v2 MetricTarget).
        let mut hpa = serde_json::json!({"spec": {"metrics": [
            {"type": "Pods", "pods": {"target": {"type": "AverageValue", "averageValue": "1000m"}}},
            {"type": "External", "external": {"target": {"type": "Value", "value": "2048Ki"}}}]}});
        canonicalize_object("autoscaling/v2", "HorizontalPodAutoscaler", &mut hpa).unwrap();
        assert_eq!(hpa["spec"]["metrics"][0]["pods"]["target"]["averageValue"], "1");
        assert_eq!(hpa["spec"]["metrics"][1]["external"]["target"]["value"], "2Mi");
        // Kinds without quantities are untouched.
        let mut cm = serde_json::json!({"data": {"cpu": "0.5"}});
        canonicalize_object("v1", "ConfigMap", &mut cm).unwrap();
        assert_eq!(cm["data"]["cpu"], "0.5");
    }

    #[test]
    fn the_split_table_covers_every_kind_with_quantities() {
        for (v, k) in KINDS_WITH_QUANTITIES.iter().chain(&[("storage.k8s.io/v1", "CSIStorageCapacity")]) {
            assert!(!fields(v, k).is_empty(), "{v} {k}");
            assert_eq!(field_paths(v, k).len(), fields(v, k).len(), "{v} {k}");
        }
        assert!(field_paths("v1", "ConfigMap").is_empty());
    }

    #[test]
    fn non_quantities_are_left_alone() {
        for bad in ["", "abc", "1x", "1..5", ".", "1e", "Gi", "1 Gi", "1e99"] {
            assert_eq!(canonical(bad), None, "{bad:?}");
        }
    }
}
